"""What the checker reads, as DataFrames with one shape whatever the source.

- inputs: the producer's acknowledgements from the run history (what should arrive);
- outputs: a Kafka topic through Spark's Kafka source (``read_committed`` or
  ``read_uncommitted``) or files, each record reduced to its ``event_id`` and position;
- the history streams: committed offsets, instrumented app reports, lag samples.

Output columns: ``event_id``, ``out_partition``, ``out_offset``, ``out_ts_ms``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from harness.apps.correlation import OutputRecord

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
    """``event_id``, ``key``, ``seq``, ``in_topic``, ``in_partition``, ``in_offset``, ``ack_ts``."""
    return (
        read_stream(spark, run_dir, "produce", "produce")
        .filter(F.col("kind") == "ack")
        .select(
            "event_id",
            "key",
            "seq",
            F.col("topic").alias("in_topic"),
            F.col("partition").alias("in_partition"),
            F.col("offset").alias("in_offset"),
            F.col("ts").alias("ack_ts"),
        )
        .dropDuplicates(["event_id"])
    )


def default_event_id() -> Column:
    """The ``event_id`` header, else the ``event_id`` field of a JSON value."""
    header = F.expr("filter(coalesce(headers, array()), h -> h.key = 'event_id')[0].value")
    return F.coalesce(
        header.cast("string"), F.get_json_object(F.col("value").cast("string"), "$.event_id")
    )


def user_event_id(extract: Callable[[OutputRecord], str | None]) -> Column:
    """The user's ``module:function(record) -> event_id``, applied to every output record."""

    def apply(topic, partition, offset, key, value, headers, timestamp):  # type: ignore[no-untyped-def]
        names = {h["key"]: bytes(h["value"] or b"") for h in headers or []}
        record = OutputRecord(topic, partition, offset, key, value, names, timestamp)
        result = extract(record)
        return None if result is None else str(result)

    udf = F.udf(apply, T.StringType())
    return udf(
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        "headers",
        F.col("timestamp").cast("long") * 1000,
    )


def kafka_topic(
    spark: SparkSession,
    bootstrap_servers: str,
    topic: str,
    isolation: str = "read_committed",
    event_id: Column | None = None,
) -> DataFrame:
    """A whole topic, as it stands now, through Spark's Kafka source."""
    raw = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", isolation)
        .load()
    )
    return raw.select(
        (event_id if event_id is not None else default_event_id()).alias("event_id"),
        F.col("partition").alias("out_partition"),
        F.col("offset").alias("out_offset"),
        (F.col("timestamp").cast("double") * 1000).cast("long").alias("out_ts_ms"),
    )


def jdbc_table(spark: SparkSession, url: str, table: str, driver: str | None = None) -> DataFrame:
    """Output written to a database table with an ``event_id`` column.

    Rows carry no Kafka position or time; their order is the table's order, in one partition.
    """
    reader = spark.read.format("jdbc").option("url", url).option("dbtable", table)
    if driver:
        reader = reader.option("driver", driver)
    return _positionless(reader.load())


def files(spark: SparkSession, path: str, file_format: str = "json") -> DataFrame:
    """Output written as files (JSON lines or Parquet) holding an ``event_id`` column.

    Files carry no Kafka position: a row's position is its order in the input, in one
    partition, and its time is unknown.
    """
    return _positionless(spark.read.format(file_format).load(path))


def _positionless(frame: DataFrame) -> DataFrame:
    return frame.select(
        F.col("event_id").cast("string"),
        F.lit(0).alias("out_partition"),
        F.monotonically_increasing_id().alias("out_offset"),
        F.lit(None).cast("long").alias("out_ts_ms"),
    )
