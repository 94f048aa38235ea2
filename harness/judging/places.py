"""Where a correct service puts each input, and every such place checked on its own.

A run's results may land in several places: a ``[sink]`` table, each output topic (each kind
of a fan-out's topic), the dead-letter topic. Each is checked against the inputs that belong
in it (``[expect]``), and an input found only in a place it does not belong is ``misrouted``
there rather than lost where it belongs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_replay.apps import load_callable
from kafka_replay.checker import CheckResult, JdbcOutput, KafkaOutput, check_run
from kafka_replay.checker.outputs import Expected
from kafka_replay.definitions.model import AppDefinition, Incident

#: The roles of the topics a service's results are checked in: the pipeline's outputs, and the
#: topics between its services.
RESULTS = ("output", "internal")

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Place:
    """One output checked: how reports name it, what is read, which inputs belong there."""

    name: str
    output: KafkaOutput | JdbcOutput
    expected: Expected
    #: the place of the inputs a workload marks ``dead_letter``
    dead_letter: bool = False


def places(
    incident: Incident,
    topics: Mapping[str, str],
    topic_output: Callable[[str], KafkaOutput],
    table: tuple[str, JdbcOutput] | None = None,
    hop: AppDefinition | None = None,
    pipeline: bool = False,
) -> list[Place]:
    """Every place the app's results land in, the table first, then each output topic in the
    definition's order (each kind of a fan-out's), then the dead-letter topic; with ``hop``,
    the places one service of a pipeline writes (the topics between services among them),
    each checked against what that service reads; of a ``pipeline`` without ``hop``, its
    places end to end (see ``Expected.without_commits``).

    Without a dead-letter topic, an input a workload marks for one belongs on the output.
    """
    expect = incident.expect
    outputs = ("output",) if expect.dead_letter else ("output", "dead_letter")
    found = [Place(table[0], table[1], Expected(outputs))] if table else []
    written = incident.named("output")
    if hop is not None:
        written = [n for n in incident.topics if n in hop.writes and incident.role(n) in RESULTS]
    for name in written:
        output = topic_output(topics[name])
        fan = expect.fan_out
        if fan is None or fan.topic != name:
            found.append(Place(f"topic {topics[name]}", output, Expected(outputs)))
            continue
        kind_of = load_callable(fan.kind_of)
        found += [
            Place(
                f"topic {topics[name]} kind {kind}",
                output,
                Expected(outputs, kind_of=kind_of, kind=kind, kinds=fan.kinds),
            )
            for kind in fan.kinds
        ]
    if expect.dead_letter and (hop is None or expect.dead_letter in hop.writes):
        output = topic_output(topics[expect.dead_letter])
        found.append(
            Place(f"topic {topics[expect.dead_letter]}", output, Expected(("dead_letter",)), True)
        )
    if pipeline and hop is None:  # the whole of a pipeline, end to end
        return [replace(p, expected=replace(p.expected, without_commits=True)) for p in found]
    if hop is None:
        return found
    reads = [topics[name] for name in hop.reads if incident.role(name) == "input"]
    between = tuple(topic_output(topics[n]) for n in hop.reads if incident.role(n) == "internal")
    return [
        replace(place, expected=replace(place.expected, acked_topics=tuple(reads), between=between))
        for place in found
    ]


def check_places(
    spark: SparkSession,
    run_dir: Path,
    chosen: list[Place],
    guarantee: str,
    source: list[KafkaOutput],
) -> dict[str, CheckResult]:
    """Each place checked on its own, by name; the first one's deliveries are kept (for the
    HTML report). Where the places expect different inputs, each is told the ``event_id`` of
    the others' records, so an input in the wrong one is misrouted, not lost."""
    apart = len({place.expected.marks for place in chosen}) > 1
    ids = {place.name: _ids(spark, place) for place in chosen} if apart else {}
    try:
        results = {}
        for index, place in enumerate(chosen):
            expected = place.expected
            others = [ids[other.name] for other in chosen if other.expected.marks != expected.marks]
            if others:
                expected = replace(expected, elsewhere=_union(others))
            results[place.name] = check_run(
                spark,
                run_dir,
                place.output,
                guarantee,
                source=source,
                deliveries=index == 0,
                expected=expected,
            )
        return results
    finally:
        for frame in ids.values():
            frame.unpersist()


def _ids(spark: SparkSession, place: Place) -> DataFrame:
    """The ``event_id`` of every record a place holds (read_committed), read once."""
    from kafka_replay.checker import sources

    output = place.output
    if isinstance(output, JdbcOutput):
        rows = sources.jdbc_table(spark, output.url, output.table, output.driver, output.id_column)
        return rows.select("event_id").distinct().cache()
    event_id = (
        sources.user_event_id(output.event_id)
        if output.event_id
        else sources.default_event_id(output.id_fields)
    )
    topic = sources.kafka_topic(spark, output.bootstrap_servers, output.topic, event_id=event_id)
    return topic.select("event_id").filter("event_id IS NOT NULL").distinct().cache()


def _union(frames: list[DataFrame]) -> DataFrame:
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union.distinct()


def worst(checks: Mapping[str, CheckResult]) -> CheckResult:
    """The check the gate takes where results land in several places: a failure, else one
    that could not be judged, else a pass (the first, on a tie)."""
    rank = {"fail": 0, "unknown": 1, "pass": 2}
    return min(checks.values(), key=lambda check: rank.get(check.result, 1))
