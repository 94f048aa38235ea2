"""What the checker reads, as DataFrames with one shape whatever the source.

- inputs: the producer's acknowledgements from the run history (what should arrive);
- outputs: a Kafka topic through Spark's Kafka source (``read_committed`` or
  ``read_uncommitted``) or files, each record reduced to its ``event_id`` and position;
- the source: the input topic's log as the brokers kept it (:func:`kafka_log`);
- the history streams: committed offsets, instrumented app reports, lag samples.

Output columns: ``event_id``, ``out_partition``, ``out_offset``, ``out_ts_ms``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafka_replay.apps.correlation import EVENT_ID, OutputRecord

from .spark import is_remote
from .topic_ends import FETCH_WAIT_MS, ending_offsets

_POSITION = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
    ]
)
SCHEMAS = {
    "produce": T.StructType(
        [
            T.StructField(name, kind)
            for name, kind in (
                ("ts", T.DoubleType()),
                ("kind", T.StringType()),
                ("event_id", T.StringType()),
                ("key", T.StringType()),
                ("seq", T.LongType()),
                ("topic", T.StringType()),
                ("partition", T.IntegerType()),
                ("offset", T.LongType()),
                ("size", T.LongType()),
                ("expect", T.StringType()),
                ("delete", T.BooleanType()),
            )
        ]
    ),
    "offsets": T.StructType(
        [
            T.StructField(name, kind)
            for name, kind in (
                ("ts", T.DoubleType()),
                ("kind", T.StringType()),
                ("group", T.StringType()),
                ("topic", T.StringType()),
                ("partition", T.IntegerType()),
                ("offset", T.LongType()),
                ("commit_ts_ms", T.LongType()),
                ("log_partition", T.IntegerType()),
                ("log_offset", T.LongType()),
                ("log_ts_ms", T.LongType()),
            )
        ]
    ),
    "app": T.StructType(
        [
            T.StructField(name, kind)
            for name, kind in (
                ("ts", T.DoubleType()),
                ("kind", T.StringType()),
                ("instance", T.IntegerType()),
                ("pid", T.IntegerType()),
                ("member", T.StringType()),
                ("partitions", T.ArrayType(_POSITION)),
                ("offsets", T.ArrayType(_POSITION)),
                ("assignment", T.ArrayType(_POSITION)),
                ("ok", T.BooleanType()),
                ("code", T.StringType()),
            )
        ]
    ),
    "lag": T.StructType(
        [
            T.StructField(name, kind)
            for name, kind in (
                ("ts", T.DoubleType()),
                ("group", T.StringType()),
                ("topic", T.StringType()),
                ("partition", T.IntegerType()),
                ("committed", T.LongType()),
                ("start", T.LongType()),
                ("end", T.LongType()),
                ("lag", T.LongType()),
            )
        ]
    ),
}
OUTPUT_SCHEMA = T.StructType(
    [
        T.StructField("event_id", T.StringType()),
        T.StructField("out_partition", T.IntegerType()),
        T.StructField("out_offset", T.LongType()),
        T.StructField("out_ts_ms", T.LongType()),
    ]
)


def read_stream(spark: SparkSession, run_dir: Path, pattern: str, schema: str) -> DataFrame:
    """Events of ``events/<pattern>.jsonl`` (a glob); empty, with the schema, if there are none.

    A line cut short by a crash parses to nulls and is dropped with the ``kind``-less rows.
    """
    files = sorted(str(p) for p in (Path(run_dir) / "events").glob(f"{pattern}.jsonl"))
    if not files:
        return spark.createDataFrame([], SCHEMAS[schema])
    frame = spark.read.schema(SCHEMAS[schema]).json(files)
    return frame.filter(F.col("ts").isNotNull())


def acknowledged_inputs(spark: SparkSession, run_dir: Path) -> DataFrame:
    """``event_id``, ``key``, ``seq``, ``in_topic``, ``in_partition``, ``in_offset``, ``ack_ts``,
    ``expect``: where a correct service puts it (``output`` unless the workload marked it),
    and ``delete``: whether it is a tombstone, its key's delete.

    One row per ack: an ``event_id`` acknowledged twice appears twice, and the analysis
    keeps one of them (:func:`kafka_replay.checker.matching.match`) in the shuffle it makes
    anyway, so no shuffle of its own is spent here.
    """
    acks = read_stream(spark, run_dir, "produce", "produce").filter(F.col("kind") == "ack")
    return _as_inputs(acks, F.col("ts"), F.col("expect"), F.col("delete"))


def logged_inputs(
    spark: SparkSession, bootstrap_servers: str, topic: str, acks: DataFrame
) -> DataFrame:
    """Every record of a topic between two services (``read_committed``, as the service after
    it reads it) as that service's inputs, in :func:`acknowledged_inputs`' columns: no
    ``ack_ts``, and each with the mark its acknowledgement in ``acks`` has."""
    marks = acks.select("event_id", "expect").dropDuplicates(["event_id"])
    log = kafka_log(spark, bootstrap_servers, topic, "read_committed").join(
        marks, "event_id", "left"
    )
    return _as_inputs(log, F.lit(None).cast("double"), F.col("expect"))


def _as_inputs(
    rows: DataFrame, ack_ts: Column, expect: Column, delete: Column | None = None
) -> DataFrame:
    """Acks, or a topic's records, in the columns the checker takes its inputs in."""
    return rows.select(
        "event_id",
        "key",
        "seq",
        F.col("topic").alias("in_topic"),
        F.col("partition").alias("in_partition"),
        F.col("offset").alias("in_offset"),
        ack_ts.alias("ack_ts"),
        F.coalesce(expect, F.lit("output")).alias("expect"),
        F.coalesce(delete, F.lit(False)).alias("delete")
        if delete is not None
        else F.lit(False).alias("delete"),
        F.lit(False).alias("superseded"),  # see final_state.superseded_in (a compacted topic)
    )


def default_event_id(id_fields: Sequence[str] = ()) -> Column:
    """The ``event_id`` header, else the ``event_id`` field of a JSON object value (or one of
    ``id_fields``: the paths a team's payload carries it in), else null.

    The same rule as :func:`kafka_replay.apps.correlation.default_event_id`: an empty header
    counts as none and, of several ``event_id`` headers, the last wins. Only null-safe forms
    (``try_element_at``, ``get_json_object``): a record without headers, or whose value is
    null or not JSON, gets a null ``event_id`` under ANSI mode too.
    """
    named = F.filter(F.col("headers"), lambda h: h["key"] == F.lit(EVENT_ID))
    header = F.try_element_at(named, F.lit(-1))["value"].cast("string")
    value = F.col("value").cast("string")
    paths = [EVENT_ID, *(f.removeprefix("$").removeprefix(".") for f in id_fields)]
    fields = [F.get_json_object(value, f"$.{path}") for path in paths]
    return F.coalesce(F.nullif(header, F.lit("")), *fields)


class OutputIdError(ValueError):
    """The user's output id function raised on an output record."""


#: What :func:`user_event_id` yields instead of an event_id when the user's function raises,
#: followed by the exception; never a plausible event_id.
FAILED = "\x00kafka-replay: output id function failed\x00"


def extractor_name(extract: Callable[..., object]) -> str:
    """``module:function`` when the function can be imported by that name, else its name."""
    module = getattr(extract, "__module__", None)
    name = getattr(extract, "__qualname__", None) or getattr(extract, "__name__", None)
    if name is None:
        return repr(extract)
    return f"{module}:{name}" if module and "<" not in name else name


def user_event_id(extract: Callable[[OutputRecord], str | None]) -> Column:
    """The user's ``module:function(record) -> event_id``, applied to every output record.

    When the function raises, the record's event_id is :data:`FAILED` and the traceback:
    :func:`raise_for_failed_ids` turns that into an :class:`OutputIdError` on the driver.
    """

    def apply(topic, partition, offset, key, value, headers, timestamp):  # type: ignore[no-untyped-def]
        names = {h["key"]: bytes(h["value"] or b"") for h in headers or []}
        record = OutputRecord(
            topic,
            partition,
            offset,
            None if key is None else bytes(key),
            None if value is None else bytes(value),
            names,
            timestamp,
        )
        try:
            result = extract(record)
            if isinstance(result, bytes | bytearray):
                result = bytes(result).decode()
            return None if result is None else str(result)
        except Exception as exc:
            lines = traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next)
            return FAILED + "".join(lines).rstrip()

    udf = F.udf(apply, T.StringType())
    return udf(
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        "headers",
        F.unix_millis("timestamp"),
    )


def raise_for_failed_ids(
    output: DataFrame,
    topic: str,
    extract: Callable[[OutputRecord], str | None],
    column: str = "event_id",
) -> None:
    """Raise :class:`OutputIdError` for the first record (by position) the function failed on.

    ``output`` is :func:`kafka_topic` read with ``event_id=user_event_id(extract)`` (or with
    ``column`` made so: a fan-out's kinds).
    """
    failed = output.filter(F.col(column).startswith(FAILED))
    first = F.min(F.struct("out_partition", "out_offset", column))
    row = failed.agg(F.count(F.lit(1)).alias("n"), first.alias("first")).collect()[0]
    if not row["n"]:
        return
    partition, offset, failure = row["first"]
    error = failure[len(FAILED) :]
    others = f" (and {row['n'] - 1} more)" if row["n"] > 1 else ""
    summary = error.strip().splitlines()[-1]
    raise OutputIdError(
        f"the output id function {extractor_name(extract)} raised {summary} on the record of "
        f"topic {topic!r}, partition {partition}, offset {offset}{others}:\n{error}"
    )


def _raw_topic(
    spark: SparkSession,
    bootstrap_servers: str,
    topic: str,
    isolation: str,
    ending: str | None = None,
) -> DataFrame:
    """A whole topic, as it stands now, through Spark's Kafka source: its columns unparsed.

    To its real end, also on a broker that lists a wrong one (see :mod:`.topic_ends`):
    ``ending`` is that end as :func:`.topic_ends.ending_offsets` gives it, asked here if not given.
    """
    if ending is None:
        ending = ending_offsets(bootstrap_servers, topic, isolation)
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        # retention may delete records while they are read: skip them, as the log no longer
        # holds them, rather than fail the read
        .option("failOnDataLoss", "false")
        .option("endingOffsets", ending)
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", isolation)
        # a fetch that finds no record (the end, a transaction's marker) returns at once, not
        # after the broker's 500 ms wait for more: zombie-commit's warm check 4.9 s, not 7.3 s
        .option("kafka.fetch.max.wait.ms", str(FETCH_WAIT_MS))
        .load()
    )


def kafka_topic(
    spark: SparkSession,
    bootstrap_servers: str,
    topic: str,
    isolation: str = "read_committed",
    event_id: Column | None = None,
    kind: Column | None = None,
    ending: str | None = None,
) -> DataFrame:
    """A whole topic, as it stands now, through Spark's Kafka source; with ``kind``, each
    record's kind (a fan-out's) in a column of that name. ``ending``: as :func:`_raw_topic`."""
    raw = _raw_topic(spark, bootstrap_servers, topic, isolation, ending)
    return raw.select(
        (event_id if event_id is not None else default_event_id()).alias("event_id"),
        F.col("partition").alias("out_partition"),
        F.col("offset").alias("out_offset"),
        (F.col("timestamp").cast("double") * 1000).cast("long").alias("out_ts_ms"),
        *([kind.alias("kind")] if kind is not None else []),
    )


#: Bytes of a value searched for its ``seq``: the workload writes it third, after
#: ``event_id`` and ``key`` (harness/workload/records.py), far before any padding.
IDENTITY_PREFIX = 1024
#: The identity fields at the start of a workload value; ``seq`` is group 1.
_STAMPED = r'^\{"event_id":"[^"]*","key":"(?:[^"\\]|\\.)*","seq":(-?\d+)[,}]'
LOG_SCHEMA = T.StructType(
    [
        T.StructField("event_id", T.StringType()),
        T.StructField("key", T.StringType()),
        T.StructField("seq", T.LongType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("topic", T.StringType()),
    ]
)


def stamped_seq() -> Column:
    """A workload value's ``seq``, read from its first bytes; else the JSON field, else null.

    Input values can be ~800KB of padding after their identity: matching the stamped prefix
    reads a kilobyte of each, and only a value written some other way is parsed whole.
    """
    prefix = F.substring(F.col("value"), 1, IDENTITY_PREFIX).cast("string")
    stamped = F.nullif(F.regexp_extract(prefix, _STAMPED, 1), F.lit(""))
    field = F.get_json_object(F.col("value").cast("string"), "$.seq")
    return F.coalesce(stamped, field).cast("long")


def kafka_log(
    spark: SparkSession,
    bootstrap_servers: str,
    topic: str,
    isolation: str = "read_uncommitted",
    ending: str | None = None,
) -> DataFrame:
    """The input topic's log as the brokers kept it: what the acks are compared with.

    Columns as :data:`LOG_SCHEMA`: ``event_id`` (:func:`default_event_id`: the header, which
    every workload record has, so the value is parsed for it only when that is missing), the
    record's Kafka key (the entity key) as text, ``seq`` (:func:`stamped_seq`), ``partition``
    and ``offset``. Read ``read_uncommitted``: every record the brokers hold counts (a topic
    between two services is read ``read_committed``, as the service after it reads it).
    ``ending``: as :func:`_raw_topic`.
    """
    raw = _raw_topic(spark, bootstrap_servers, topic, isolation, ending)
    return raw.select(
        default_event_id().alias("event_id"),
        F.col("key").cast("string").alias("key"),
        stamped_seq().alias("seq"),
        "partition",
        "offset",
        "topic",
    )


def jdbc_table(
    spark: SparkSession,
    url: str,
    table: str,
    driver: str | None = None,
    id_column: str = "event_id",
    effect_column: str | None = None,
    time_column: str | None = None,
    key_column: str | None = None,
) -> DataFrame:
    """The rows of a database table (or query): ``event_id`` from its id column, ``effect``
    from its effect column, and ``out_ts_ms`` (epoch milliseconds) from its time column, a
    timestamp; each null without its column; with ``key_column``, ``key`` from it too.

    A PostgreSQL table is read in as many parallel parts as Spark has cores, split by a hash
    of the id; other databases in one read.
    """
    parts = _parallelism(spark)
    if url.startswith("jdbc:postgresql:") and parts > 1:
        key = f"abs(hashtext({id_column}::text)) % {parts}"
        predicates = [f"{key} = {n}" for n in range(parts)]
        properties = {"driver": driver} if driver else {}
        frame = spark.read.jdbc(url, table, predicates=predicates, properties=properties)
    else:
        reader = spark.read.format("jdbc").option("url", url).option("dbtable", table)
        frame = (reader.option("driver", driver) if driver else reader).load()
    effect = F.col(effect_column) if effect_column else F.lit(None)
    written = F.unix_millis(F.col(time_column).cast("timestamp")) if time_column else F.lit(None)
    return frame.select(
        F.col(id_column).cast("string").alias("event_id"),
        effect.cast("double").alias("effect"),
        written.cast("long").alias("out_ts_ms"),
        *([F.col(key_column).cast("string").alias("key")] if key_column else []),
    )


def _parallelism(spark: SparkSession) -> int:
    """The cores a session's tasks run on; on a Spark Connect session (no SparkContext here),
    the server's ``spark.default.parallelism``, else two (this machine's ``local[2]``)."""
    if not is_remote(spark):
        return spark.sparkContext.defaultParallelism
    return int(spark.conf.get("spark.default.parallelism", None) or 2)


def files(spark: SparkSession, path: str, file_format: str = "json") -> DataFrame:
    """Output written as files (JSON lines or Parquet) holding an ``event_id`` column.

    Files carry no Kafka position: a row's position is its order in the input, in one
    partition, and its time is unknown.
    """
    return positionless(spark.read.format(file_format).load(path).select("event_id"))


def positionless(frame: DataFrame) -> DataFrame:
    """Rows with an ``event_id`` as outputs: their order for a position; their time from an
    ``out_ts_ms`` column where they have one (:func:`jdbc_table`'s), else none."""
    written = F.col("out_ts_ms") if "out_ts_ms" in frame.columns else F.lit(None)
    return frame.select(
        F.col("event_id").cast("string"),
        F.lit(0).alias("out_partition"),
        F.monotonically_increasing_id().alias("out_offset"),
        written.cast("long").alias("out_ts_ms"),
    )
