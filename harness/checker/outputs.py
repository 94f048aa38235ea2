"""The places an app's results land, each as one kind of output: a topic, files, a database
table. Each says what of Kafka must be asked before it is read, reads itself, and does to the
check what only its kind needs (a table's state judged by each key's last input, its effects
counted, a user's ``event_id`` function that failed on a record), so that ``check_run`` composes
them rather than asking which kind it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_replay.apps.correlation import OutputRecord

from . import sources
from .anomaly_registry import Finding
from .final_state import judge_state
from .matching import CheckInputs

#: Where a topic's end is asked, and as whom: ``(bootstrap servers, topic, isolation)``.
TopicEnd = tuple[str, str, str]
#: How an output topic is read: as its readers see it, and with what aborted and open
#: transactions wrote.
ISOLATIONS = ("read_committed", "read_uncommitted")


class Read:
    """A place as read for one check: its records (``committed``: as readers see them;
    ``uncommitted`` beside, where transactions can hide some), and the steps of the check that
    only its kind of place takes."""

    def __init__(self, committed: DataFrame, uncommitted: DataFrame | None = None) -> None:
        self.committed = committed.cache()
        self.uncommitted = uncommitted

    def settle(self, inputs: CheckInputs) -> None:
        """Once the inputs that belong here are known."""

    def verify(self, inputs: CheckInputs) -> None:
        """Before the analysis: raise where the records cannot be judged."""

    def findings(self, inputs: CheckInputs, examples: int) -> dict[str, Finding]:
        """Findings only this kind of place has."""
        return {}

    def release(self) -> None:
        self.committed.unpersist()


@dataclass(frozen=True)
class KafkaOutput:
    """The app's output topic (read both read_committed and read_uncommitted)."""

    bootstrap_servers: str
    topic: str
    event_id: Callable[[OutputRecord], str | None] | None = None  # default: header or JSON
    #: payload fields (JSON paths) that carry the event_id where the output drops headers
    id_fields: tuple[str, ...] = ()
    #: As a ``source``: the inputs' copy on a mirror cluster, which the app was moved to. An
    #: acknowledged input absent there was ``not_mirrored`` (not a broker's ``lost_write``).
    mirrored: bool = False
    #: As a ``source``: a compacted topic. An acknowledged input absent from it that a later
    #: one of its key superseded was removed by its cleaner (``removed_by_compaction``).
    compacted: bool = False

    ordered: ClassVar[bool] = True

    def asks(self) -> list[TopicEnd]:
        return [(self.bootstrap_servers, self.topic, isolation) for isolation in ISOLATIONS]

    @property
    def held_in(self) -> tuple[str, str]:
        """The topic whose open transactions are asked for before it is read."""
        return self.bootstrap_servers, self.topic

    def read(
        self, spark: SparkSession, ends: dict[TopicEnd, str], expected: Expected | None
    ) -> Read:
        if self.event_id:
            event_id = sources.user_event_id(self.event_id)
        else:
            event_id = sources.default_event_id(self.id_fields)
        kind = sources.user_event_id(expected.kind_of) if expected and expected.kind_of else None
        committed, uncommitted = (
            of_kind(
                sources.kafka_topic(
                    spark,
                    *self.held_in,
                    isolation,
                    event_id,
                    kind,
                    ends[(*self.held_in, isolation)],
                ),
                expected,
            )
            for isolation in ISOLATIONS
        )
        return _TopicRead(self, expected, committed, uncommitted)


class _TopicRead(Read):
    def __init__(
        self,
        output: KafkaOutput,
        expected: Expected | None,
        committed: DataFrame,
        uncommitted: DataFrame,
    ) -> None:
        super().__init__(committed, uncommitted)
        self.output, self.expected = output, expected

    def verify(self, inputs: CheckInputs) -> None:
        """A user's function (``event_id``, ``kind_of``) that raised on a record."""
        topic, expected = self.output.topic, self.expected
        if self.output.event_id and self.uncommitted is not None:
            for frame in (inputs.committed, self.uncommitted):  # aborted ones only in the latter
                sources.raise_for_failed_ids(frame, topic, self.output.event_id)
        if expected is not None and expected.kind_of:
            sources.raise_for_failed_ids(inputs.committed, topic, expected.kind_of, "kind")


class _NoTopic:
    """A place that is no topic: no topic end to ask for, no open transaction to look for."""

    held_in: ClassVar[None] = None

    def asks(self) -> list[TopicEnd]:
        return []


@dataclass(frozen=True)
class FileOutput(_NoTopic):
    """Output the app wrote as files with an ``event_id`` column (JSON lines or Parquet)."""

    path: str
    file_format: str = "json"  # one of kafka_replay.checker.OUTPUT_FORMATS

    ordered: ClassVar[bool] = True

    def read(
        self, spark: SparkSession, ends: dict[TopicEnd, str], expected: Expected | None
    ) -> Read:
        return Read(sources.files(spark, self.path, self.file_format))


@dataclass(frozen=True)
class JdbcOutput(_NoTopic):
    """Output the app wrote to a database table: a row per delivery, naming its input in
    ``id_column``.

    The JDBC driver must be on the session's classpath (``spark_session(extra_jars=...)``);
    ``driver`` names its class (see :func:`kafka_replay.servers.maven.jdbc_driver_class`).
    ``table`` may be a query as a derived table (``(SELECT ...) AS rows``). With
    ``effect_column``, an input whose rows add up to more than ``effect_each`` (default: one
    of that input's own rows' value) had its effect applied again: ``effect_repeated``.
    """

    url: str
    table: str
    driver: str | None = None
    id_column: str = "event_id"
    effect_column: str | None = None
    effect_each: float | None = None
    time_column: str | None = None  # a timestamp column: each row's out_ts_ms (else null)
    #: The column holding each row's Kafka key: the table is the service's state, one row per
    #: key, judged by each key's last input (:mod:`~kafka_replay.checker.final_state`).
    key_column: str | None = None

    ordered: ClassVar[bool] = False  # rows keep no order of their writing

    def read(
        self, spark: SparkSession, ends: dict[TopicEnd, str], expected: Expected | None
    ) -> Read:
        rows = sources.jdbc_table(
            spark,
            self.url,
            self.table,
            self.driver,
            self.id_column,
            self.effect_column,
            self.time_column,
            self.key_column,
        )
        if self.effect_column is not None or self.key_column is not None:
            rows = rows.cache()  # read once for the effects or the state, and the outputs
        return _TableRead(self, rows)


class _TableRead(Read):
    def __init__(self, output: JdbcOutput, rows: DataFrame) -> None:
        super().__init__(sources.positionless(rows))
        self.output, self.rows = output, rows

    def settle(self, inputs: CheckInputs) -> None:
        """A table of state (``key_column``): each key's row judged by its last input."""
        if self.output.key_column is not None:
            inputs.acks, kept_rows, inputs.state = judge_state(inputs.acks, self.rows)
            inputs.committed = sources.positionless(kept_rows)

    def findings(self, inputs: CheckInputs, examples: int) -> dict[str, Finding]:
        if self.output.effect_column is None:
            return {}
        return {"effect_repeated": effects_repeated(self.rows, inputs.acks, self.output, examples)}

    def release(self) -> None:
        super().release()
        self.rows.unpersist()


def effects_repeated(
    rows: DataFrame, acks: DataFrame, output: JdbcOutput, examples: int
) -> Finding:
    """Acknowledged inputs whose rows add up to more than one application of their effect."""
    once = F.lit(output.effect_each) if output.effect_each is not None else F.first("effect")
    per_input = rows.groupBy("event_id").agg(
        F.sum("effect").alias("effect"), once.alias("effect_each"), F.count("*").alias("rows")
    )
    repeated = per_input.filter(F.col("effect") > F.col("effect_each")).join(
        acks.select("event_id", "key", "seq"), "event_id"
    )
    found = repeated.orderBy("event_id").cache()
    try:
        count = found.count()
        shown = [row.asDict() for row in found.limit(examples).collect()]
    finally:
        found.unpersist()
    return Finding(count, shown, {"column": output.effect_column})


#: A place results land in: what ``check_run`` reads its output from.
Output = KafkaOutput | FileOutput | JdbcOutput


@dataclass(frozen=True)
class Expected:
    """Which inputs belong in the output checked, where a service puts inputs in several places.

    ``marks``: the inputs whose ack carries one of these marks (``output`` for an unmarked
    input; see ``Payload(expect=...)``). An output record of an input marked for another
    place (but ``filtered``: expected nowhere, so ``unexpected``) is ``misrouted``, and an
    input of this output found only in ``elsewhere`` (the ``event_id`` of every other output
    checked) is misrouted there, not lost here. With ``kinds``, the output is one kind of a
    fan-out's topic: the records ``kind_of`` names ``kind``; a record of no kind listed is
    unexpected in the first kind's check.
    """

    marks: tuple[str, ...] = ("output",)
    elsewhere: DataFrame | None = None
    kind_of: Callable[[OutputRecord], str | None] | None = None
    kind: str | None = None
    kinds: tuple[str, ...] = ()
    #: One service of a pipeline checked on its own (a hop): the workload's topics it reads
    #: (their acknowledged inputs), and the topics between services it reads (their records
    #: are its inputs, each keeping the mark its acknowledgement has).
    acked_topics: tuple[str, ...] | None = None
    between: tuple[KafkaOutput, ...] = ()
    #: A pipeline's end-to-end check: no one group's commits speak for the chain, so an input
    #: not delivered is unseen here; each service's own check says where it was lost.
    without_commits: bool = False


def of_kind(frame: DataFrame, expected: Expected | None) -> DataFrame:
    """The records of the kind ``expected`` checks (see :class:`Expected`); all without one.
    Records of an unlisted kind stay in the first kind's check, with no event_id."""
    if expected is None or expected.kind_of is None:
        return frame
    kind = F.col("kind")
    known = kind.isin(list(expected.kinds)) & ~kind.startswith(sources.FAILED)
    if expected.kind == expected.kinds[0]:
        frame = frame.filter((kind == expected.kind) | ~known | kind.isNull())
        frame = frame.withColumn("event_id", F.when(kind == expected.kind, F.col("event_id")))
    else:
        frame = frame.filter(kind == expected.kind)
    return frame
