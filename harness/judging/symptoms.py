"""Symptoms: the measurable signs of each post's failure, read from a finished run.

Each symptom is a function of the run's :class:`Evidence` (its history streams, the brokers'
group events and the checker's result) returning a number or a boolean, or None when the run
holds nothing to measure it from. Symptoms the brokers, the output data or the supervisor can
show are measured from them for any app; an instrumented app's own reports (``Reporter``) are
used where it sends them, and must agree (the runner records both). Definitions name symptoms
in their ``signature`` and ``conditions``.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_replay.definitions.vocabulary import SYMPTOMS, symptom
from kafka_replay.history import derived
from kafka_replay.history.broker_log import POLL_TIMEOUT
from kafka_replay.history.recorded import RecordedRun
from kafka_replay.history.stable_offsets import lso_stalls
from kafka_replay.report.outcome import Value

if TYPE_CHECKING:
    from kafka_replay.checker import CheckResult
PRODUCER_ID_ERRORS = frozenset(
    {"INVALID_PRODUCER_ID_MAPPING", "UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_EPOCH"}
)
#: Lag above this on the hot partition at the end means it did not keep up.
HOT_LAG_BEHIND = 10
#: Median gaps between deliveries within this factor of the fetch wait are "a fetch wait apart".
FETCH_WAIT_BAND = (0.8, 1.5)


@dataclass
class Evidence:
    """Everything a symptom may look at, loaded once per run."""

    produce: list[dict[str, Any]]
    lifecycle: list[dict[str, Any]]
    app: list[dict[str, Any]]  # every instance's report, in time order
    offsets: list[dict[str, Any]]
    lag: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    check: CheckResult
    side_effects: CheckResult | None = None
    input_topic: str = ""
    client_config: dict[str, Any] = field(default_factory=dict)
    #: The coordinators' events for the run's group (None: no broker logs, e.g. external).
    group: list[dict[str, Any]] | None = None
    #: Every output record matched to its input, in output time order (from the checker).
    deliveries: list[dict[str, Any]] = field(default_factory=list)
    #: The output partitions' last stable offsets and high watermarks, sampled.
    stable: list[dict[str, Any]] = field(default_factory=list)
    #: What the run found of open transactions before the check (the ``settled`` event).
    transactions: list[dict[str, Any]] = field(default_factory=list)
    #: When the run started (Unix seconds): the clock a reader's times count from.
    start: float = 0.0
    #: The partition leaders' events for the run's output topics (None: no broker logs).
    replicas: list[dict[str, Any]] | None = None

    @classmethod
    def of(
        cls,
        recorded: RecordedRun,
        check: CheckResult,
        side_effects: CheckResult | None = None,
        group: list[dict[str, Any]] | None = None,
        replicas: list[dict[str, Any]] | None = None,
    ) -> Evidence:
        """The evidence of a run read by :class:`RecordedRun`, beside the checker's results
        (held in memory) and the group's events (None: no broker logs to read them from)."""

        def stream(name: str) -> list[dict[str, Any]]:
            return recorded.stream(name) or []

        return cls(
            produce=stream("produce"),
            lifecycle=stream("lifecycle"),
            app=recorded.app or [],
            offsets=stream("offsets"),
            lag=stream("lag"),
            steps=stream("steps"),
            check=check,
            side_effects=side_effects,
            input_topic=recorded.input_topic or "",
            client_config=recorded.meta.get("client_config", {}),
            group=group,
            deliveries=check.deliveries,
            stable=stream("stable"),
            transactions=stream("transactions"),
            start=recorded.start,
            replicas=replicas,
        )

    def without_reports(self) -> Evidence:
        """The same run as an app that reports nothing would leave it."""
        return dataclasses.replace(self, app=[])

    @property
    def acks(self) -> list[dict[str, Any]]:
        return [e for e in self.produce if e["kind"] == "ack"]

    def app_events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.app if e["kind"] == kind]

    def step_windows(self, do: str, label: str | None = None) -> list[tuple[float, float]]:
        return [
            (e["started"], e["ended"])
            for e in self.steps
            if e["do"] == do and (label is None or e.get("label") == label)
        ]

    def consumed_spans(self) -> list[tuple[float, dict[str, Any]]]:
        """(time, span) for each batch the app took from an input partition.

        From the app's ``consumed`` reports where it sends them; otherwise from the output
        (see :func:`kafka_replay.history.derived.consumed_spans`).
        """
        return derived.consumed_spans(self.app, self.deliveries, self.input_topic)


def measure(evidence: Evidence, names: tuple[str, ...]) -> dict[str, Value]:
    return {name: SYMPTOMS[name](evidence) for name in names}


def _reported(evidence: Evidence) -> bool:
    return bool(evidence.app)


def _unexplained_leaves(evidence: Evidence) -> list[dict[str, Any]]:
    """Members that left while their process ran on: not while the harness stopped, signalled
    or saw the instance exit (a Java consumer's poll-timeout leave is named as such)."""
    assert evidence.group is not None
    windows, opened = [], {}
    for event in evidence.lifecycle:
        if event["kind"] in ("stop", "signal"):
            opened.setdefault(_instance(event), event["ts"])
        elif event["kind"] == "exit":
            windows.append((opened.pop(_instance(event), event["ts"]) - 1.0, event["ts"] + 2.0))
    windows += [(start - 1.0, float("inf")) for start in opened.values()]
    return [
        e
        for e in evidence.group
        if e["kind"] == "leave"
        and (POLL_TIMEOUT in e["reason"] or not any(a <= e["ts"] <= b for a, b in windows))
    ]


# --- the group and its commits ---------------------------------------------------------------


@symptom
def max_poll_exceeded(evidence: Evidence) -> Value:
    """Times a consumer was dropped from the group for missing its poll interval."""
    if _reported(evidence):
        errors = evidence.app_events("client_error")
        return sum(1 for e in errors if e["code"] == "_MAX_POLL_EXCEEDED")
    return None if evidence.group is None else len(_unexplained_leaves(evidence))


@symptom
def members_removed(evidence: Evidence) -> Value:
    """Members the coordinator removed or fenced (session or rebalance timeout), from its log."""
    if evidence.group is None:
        return None
    return sum(1 for e in evidence.group if e["kind"] == "removed")


@symptom
def rebalances(evidence: Evidence) -> Value:
    """Rebalances the group went through, from the coordinator's log."""
    if evidence.group is None:
        return None
    return sum(1 for e in evidence.group if e["kind"] == "rebalance")


@symptom
def rejected_commits(evidence: Evidence) -> Value:
    """Offset commits the group coordinator refused."""
    if not _reported(evidence):
        return None
    return sum(1 for e in evidence.app_events("commit_result") if not e["ok"])


@symptom
def consumed_offset_jumps_back(evidence: Evidence) -> Value:
    """Times a partition was consumed again from before where consumption had reached."""
    jumps = _jumps_back(evidence)
    return None if jumps is None else len(jumps)


@symptom
def largest_jump_back(evidence: Evidence) -> Value:
    """The longest backward jump of the consumed offset, in records."""
    jumps = _jumps_back(evidence)
    return None if jumps is None else max(jumps, default=0)


def _jumps_back(evidence: Evidence) -> list[int] | None:
    if not _reported(evidence) and not evidence.deliveries:
        return None
    reached: dict[int, int] = {}
    jumps = []
    for _, span in evidence.consumed_spans():
        partition = span["partition"]
        if partition in reached and span["first"] < reached[partition]:
            jumps.append(reached[partition] - span["first"])
        reached[partition] = max(reached.get(partition, 0), span["last"] + 1)
    return jumps


@symptom
def reprocessed(evidence: Evidence) -> Value:
    """Inputs whose result reached the output more often than the input log holds them."""
    return evidence.check.counts["duplicate"]


@symptom
def committed_offset_regressions(evidence: Evidence) -> Value:
    """Accepted commits that moved a partition's committed offset backwards."""
    return evidence.check.counts["committed_offset_regression"]


@symptom
def stale_commits_accepted(evidence: Evidence) -> Value:
    """Accepted commits for a partition the committing member no longer owned."""
    return evidence.check.counts["commit_by_non_owner"] if _reported(evidence) else None


@symptom
def stale_commits_fenced(evidence: Evidence) -> Value:
    """Commits for partitions outside the member's assignment that the broker refused."""
    if not _reported(evidence):
        return None
    last_commit: dict[int, dict[str, Any]] = {}
    fenced = 0
    for event in evidence.app:
        if event["kind"] == "commit":
            last_commit[event["pid"]] = event
        elif event["kind"] == "commit_result" and not event["ok"]:
            commit = last_commit.get(event["pid"])
            if commit is not None and _outside_assignment(commit):
                fenced += 1
    return fenced


def _outside_assignment(commit: dict[str, Any]) -> bool:
    owned = {(p["topic"], p["partition"]) for p in commit["assignment"]}
    return any((p["topic"], p["partition"]) not in owned for p in commit["offsets"])


@symptom
def lag_while_idle(evidence: Evidence) -> Value:
    """Lag behind the log end left by commits made in the quiet period (what a monitor sees)."""
    windows = evidence.step_windows("idle", "quiet")
    if not windows:
        return None
    end: dict[int, int] = {}
    for ack in evidence.acks:
        end[ack["partition"]] = max(end.get(ack["partition"], 0), ack["offset"] + 1)
    lags = [
        end.get(commit["partition"], 0) - commit["offset"]
        for commit in evidence.offsets
        if commit["kind"] == "commit"
        and commit["topic"] == evidence.input_topic
        and any(start <= commit["commit_ts_ms"] / 1000 <= stop for start, stop in windows)
    ]
    return max(lags, default=0)


@symptom
def reprocessing_after_reset(evidence: Evidence) -> Value:
    """Redeliveries of inputs whose offsets had already been committed as done."""
    return evidence.check.counts["reprocessing_after_reset"]


@symptom
def backlog_drained(evidence: Evidence) -> Value:
    """Whether the group caught up with the input within the drain budget."""
    drains = [e for e in evidence.steps if e["do"] == "drain"]
    return bool(drains) and all(e["drained"] for e in drains)


@symptom
def drain_s(evidence: Evidence) -> Value:
    """Seconds the last drain took (its budget when the group never caught up)."""
    drains = [e for e in evidence.steps if e["do"] == "drain"]
    return round(drains[-1]["ended"] - drains[-1]["started"], 2) if drains else None


# --- offsets and producer ids that expire ---------------------------------------------------


@symptom
def offset_tombstones(evidence: Evidence) -> Value:
    """Committed offsets of the group deleted by the broker (expired)."""
    return sum(1 for e in evidence.offsets if e["kind"] == "tombstone")


@symptom
def restarted_from_log_start(evidence: Evidence) -> Value:
    """Whether the redeployed app began every partition at the start of the log."""
    windows = evidence.step_windows("start_apps", "redeploy") + evidence.step_windows(
        "start_instance", "redeploy"
    )
    if not windows or not (_reported(evidence) or evidence.deliveries):
        return None
    log_start: dict[int, int] = {}
    for ack in evidence.acks:
        log_start[ack["partition"]] = min(
            log_start.get(ack["partition"], ack["offset"]), ack["offset"]
        )
    first_after: dict[int, int] = {}
    for moment, span in evidence.consumed_spans():
        if moment >= max(start for start, _ in windows):
            first_after.setdefault(span["partition"], span["first"])
    if not first_after:
        return False
    return all(first_after.get(p) == start for p, start in log_start.items() if p in first_after)


@symptom
def producer_id_errors(evidence: Evidence) -> Value:
    """Transactions that failed because the broker no longer knew the app's producer id."""
    if not _reported(evidence):
        return None
    return sum(1 for e in evidence.app_events("app_error") if e["code"] in PRODUCER_ID_ERRORS)


@symptom
def producer_ids_expired(evidence: Evidence) -> Value:
    """Times an app's transactional id came back with a new producer id (the old one expired)."""
    if evidence.group is None:
        return None
    held: dict[str, int] = {}
    expired = 0
    for event in (e for e in evidence.group if e["kind"] == "producer_id"):
        previous = held.get(event["transactional_id"])
        expired += previous is not None and previous != event["id"]
        held[event["transactional_id"]] = event["id"]
    return expired


@symptom
def app_restarts(evidence: Evidence) -> Value:
    """Times the supervisor restarted an app instance after it died."""
    return sum(1 for e in evidence.lifecycle if e["kind"] == "start" and e.get("restart"))


@symptom
def crash_loops(evidence: Evidence) -> Value:
    """Times an instance entered a crash loop (kept dying young; restarted with back-off)."""
    return sum(1 for e in evidence.lifecycle if e["kind"] == "crash_loop")


@symptom
def app_down_s(evidence: Evidence) -> Value:
    """Seconds instances spent down between an unexpected exit and their next start."""
    down, exited = 0.0, {}
    for event in evidence.lifecycle:
        if event["kind"] == "exit" and not event.get("expected"):
            exited[_instance(event)] = event["ts"]
        elif event["kind"] == "start" and _instance(event) in exited:
            down += event["ts"] - exited.pop(_instance(event))
    return round(down, 2)


def _instance(event: dict[str, Any]) -> tuple[str | None, int]:
    """Which instance a lifecycle event is of: its number, and its service in a pipeline."""
    return event.get("app"), event["instance"]


@symptom
def output_send_duplicates(evidence: Evidence) -> Value:
    """Inputs whose output holds one send twice: two copies in one partition with one timestamp.

    A producer that retries a batch the broker had appended (its answer lost, idempotence off)
    writes it again with the timestamps it was sent with; an app that processes an input again
    sends it anew, with a later one. (An app that stamps its outputs with its inputs' times
    would show its reprocessing here too.)
    """
    copies: dict[tuple[str, int, int], int] = defaultdict(int)
    for row in evidence.deliveries:
        copies[(row["event_id"], row["out_partition"], row["out_ts_ms"])] += 1
    return len({event_id for (event_id, _, _), count in copies.items() if count > 1})


@symptom
def kills(evidence: Evidence) -> Value:
    """SIGKILLs sent to app instances."""
    return sum(1 for e in evidence.lifecycle if e["kind"] == "signal" and e["signal"] == "SIGKILL")


@symptom
def side_effect_duplicates(evidence: Evidence) -> Value:
    """Inputs whose side effect (written outside the transaction) happened more than once.

    Not measurable when the app wrote no side effects at all (an app without such a sink).
    """
    side = evidence.side_effects
    if side is None or not side.totals.get("output_records"):
        return None
    return side.counts["duplicate"]


# --- one hot partition ----------------------------------------------------------------------


def _partition_bytes(evidence: Evidence) -> dict[int, int]:
    sizes: dict[int, int] = defaultdict(int)
    for ack in evidence.acks:
        sizes[ack["partition"]] += ack.get("size", 0)
    return sizes


def _hot_partitions(evidence: Evidence) -> tuple[int | None, set[int]]:
    """The partition with the most bytes, and every partition with a tenth of the busiest's."""
    sizes = _partition_bytes(evidence)
    if not sizes:
        return None, set()
    hottest = max(sizes, key=lambda p: sizes[p])
    return hottest, {p for p, size in sizes.items() if size * 10 >= sizes[hottest]}


@symptom
def hot_partition(evidence: Evidence) -> Value:
    """The input partition that received the most bytes."""
    return _hot_partitions(evidence)[0]


def _final_lag(evidence: Evidence) -> dict[int, int]:
    latest: dict[int, dict[str, Any]] = {}
    for sample in evidence.lag:
        latest[sample["partition"]] = sample
    return {p: s["lag"] for p, s in latest.items()}


@symptom
def hot_partition_lag_at_end(evidence: Evidence) -> Value:
    """Lag of the busiest partitions when the drain budget ran out or the run ended."""
    _, hot = _hot_partitions(evidence)
    final = _final_lag(evidence)
    return max((final.get(p, 0) for p in hot), default=0)


@symptom
def other_partitions_max_lag(evidence: Evidence) -> Value:
    """The highest lag ever sampled on the partitions the flood did not land on."""
    _, hot = _hot_partitions(evidence)
    return max((s["lag"] for s in evidence.lag if s["partition"] not in hot), default=0)


@symptom
def lag_isolated_to_hot_partition(evidence: Evidence) -> Value:
    """Whether the busiest partitions were left behind while every other one caught up."""
    _, hot = _hot_partitions(evidence)
    final = _final_lag(evidence)
    hot_lag = max((final.get(p, 0) for p in hot), default=0)
    cold_lag = max((lag for p, lag in final.items() if p not in hot), default=0)
    return hot_lag > HOT_LAG_BEHIND and cold_lag == 0


def _flood_offsets(evidence: Evidence, partition: int | None) -> set[int]:
    """Offsets of the large records (a tenth of the largest or more) on ``partition``."""
    acks = [a for a in evidence.acks if a["partition"] == partition]
    largest = max((a.get("size", 0) for a in acks), default=0)
    return {a["offset"] for a in acks if a.get("size", 0) * 10 >= largest}


def _hot_batches(evidence: Evidence) -> list[tuple[float, dict[str, Any]]]:
    """Deliveries from the hot partition that held flood records, each with their count.

    The small records that share the partition do not count as arrivals of the flood.
    """
    hottest, _ = _hot_partitions(evidence)
    flood = sorted(_flood_offsets(evidence, hottest))
    batches = []
    for moment, span in evidence.consumed_spans():
        if span["partition"] == hottest:
            count = bisect_right(flood, span["last"]) - bisect_left(flood, span["first"])
            if count:
                batches.append((moment, {**span, "count": count}))
    return batches


@symptom
def hot_arrival_gap_s(evidence: Evidence) -> Value:
    """Median seconds between consecutive deliveries from the hot partition to the app."""
    times = [t for t, _ in _hot_batches(evidence)]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return round(statistics.median(gaps), 3) if gaps else None


@symptom
def hot_records_per_arrival(evidence: Evidence) -> Value:
    """Median records of the hot partition in one delivery to the app."""
    counts = [span["count"] for _, span in _hot_batches(evidence)]
    return statistics.median(counts) if counts else None


@symptom
def hot_arrivals_fetch_wait_apart(evidence: Evidence) -> Value:
    """Whether the hot partition arrived one record at a time, about one fetch wait apart."""
    gap, per_arrival = hot_arrival_gap_s(evidence), hot_records_per_arrival(evidence)
    wait_s = float(evidence.client_config.get("fetch.max.wait.ms", 500)) / 1000
    if per_arrival is None:
        return None
    if per_arrival > 1:  # it came in bulk: one delivery carrying the whole flood says so too
        return False
    if gap is None:
        return None
    low, high = FETCH_WAIT_BAND
    return per_arrival <= 1 and low * wait_s <= gap <= high * wait_s


@symptom
def hot_drain_rate(evidence: Evidence) -> Value:
    """Flood records per second the app took from the hot partition while it had a backlog."""
    hottest, _ = _hot_partitions(evidence)
    flood = _flood_offsets(evidence, hottest)
    marks = [(a["ts"], "end", a["offset"] + 1) for a in evidence.acks if a["partition"] == hottest]
    marks = [mark for mark in marks if mark[2] - 1 in flood]
    marks += [
        (t, "position", s["last"] + 1)
        for t, s in evidence.consumed_spans()
        if s["partition"] == hottest
    ]
    end = position = 0
    behind_s, previous = 0.0, None
    for moment, kind, offset in sorted(marks):
        if previous is not None and end > position:
            behind_s += moment - previous
        if kind == "end":
            end = max(end, offset)
        else:
            position = max(position, offset)
        previous = moment
    taken = sum(span["count"] for _, span in _hot_batches(evidence))
    return round(taken / behind_s, 2) if behind_s else None


@symptom
def keys_moved(evidence: Evidence) -> Value:
    """Keys whose records landed on more than one partition (the partition count changed)."""
    partitions: dict[str, set[int]] = defaultdict(set)
    for ack in evidence.acks:
        partitions[ack["key"]].add(ack["partition"])
    return sum(1 for seen in partitions.values() if len(seen) > 1)


@symptom
def reordered(evidence: Evidence) -> Value:
    """Results of one key that reached the output in a different order than their inputs."""
    return evidence.check.counts["reordered"]


@symptom
def inputs_lost(evidence: Evidence) -> Value:
    """Acknowledged inputs missing from the output although the group committed past them."""
    return evidence.check.counts["lost"]


@symptom
def smallest_lost_input_bytes(evidence: Evidence) -> Value:
    """The smallest acknowledged size among lost inputs (none reached the output, their offsets
    committed past); None when nothing was lost."""
    if not evidence.check.counts["lost"]:
        return None
    committed: dict[int, int] = {}
    for sample in evidence.lag:  # the group's last committed offset of each input partition
        if sample.get("topic") == evidence.input_topic and sample.get("committed") is not None:
            committed[sample["partition"]] = sample["committed"]
    delivered = {(d["in_partition"], d["in_offset"]) for d in evidence.deliveries}
    sizes = [
        ack["size"]
        for ack in evidence.acks
        if ack.get("topic", evidence.input_topic) == evidence.input_topic
        and (ack["partition"], ack["offset"]) not in delivered
        and ack["offset"] < committed.get(ack["partition"], -1)
    ]
    return min(sizes, default=None)


# --- what the steps did to the brokers and the network ----------------------------------------


@symptom
def brokers_killed(evidence: Evidence) -> Value:
    """Brokers the steps killed (``kill_broker``)."""
    return sum(1 for e in evidence.steps if e.get("kind") == "step" and e["do"] == "kill_broker")


@symptom
def brokers_paused(evidence: Evidence) -> Value:
    """Brokers the steps froze (``pause_broker``), counted when the pause began."""
    return sum(1 for e in evidence.steps if e.get("kind") == "step" and e["do"] == "pause_broker")


@symptom
def request_faults(evidence: Evidence) -> Value:
    """Requests a ``kafka_fault`` step acted on (an answer lost, an error answer, a request delayed
    or cut)."""
    return sum(e.get("acted", 0) for e in evidence.steps if e["do"] == "kafka_fault")


@symptom
def network_faults(evidence: Evidence) -> Value:
    """Times a network fault began (each time of each ``network_fault`` step)."""
    return sum(
        len(e.get("occurrences", []))
        for e in evidence.steps
        if e["do"] == "network_fault" and e.get("kind") in ("step", "ended")
    )


def _output_replica_events(evidence: Evidence, kind: str) -> Value:
    if evidence.replicas is None:
        return None
    return sum(1 for e in evidence.replicas if e["kind"] == kind)


@symptom
def isr_shrinks(evidence: Evidence) -> Value:
    """Times a leader of an output partition dropped followers from its in-sync replicas."""
    return _output_replica_events(evidence, "isr_shrink")


@symptom
def min_isr_refusals(evidence: Evidence) -> Value:
    """acks=all writes to output partitions refused for too few in-sync replicas."""
    return _output_replica_events(evidence, "not_enough_replicas")


# --- what the brokers kept of the input ------------------------------------------------------


def _in_log(evidence: Evidence, anomaly: str) -> Value:
    """The checker's count for ``anomaly`` of the input log; None when it read no log."""
    return evidence.check.counts[anomaly] if evidence.check.source_read else None


@symptom
def lost_writes(evidence: Evidence) -> Value:
    """Acknowledged input records the input log no longer holds (a broker lost them)."""
    return _in_log(evidence, "lost_write")


@symptom
def inputs_deleted_by_retention(evidence: Evidence) -> Value:
    """Acknowledged inputs retention deleted before the group passed them (not the app's loss)."""
    return evidence.check.counts.get("deleted_by_retention", 0)


@symptom
def log_duplicates(evidence: Evidence) -> Value:
    """Input records written to the input log more than once (a retry appended again)."""
    return _in_log(evidence, "log_duplicate")


@symptom
def log_reordered(evidence: Evidence) -> Value:
    """Input records of one key the input log holds after a later one of that key."""
    return _in_log(evidence, "log_reordered")


@symptom
def lso_stall_s(evidence: Evidence) -> Value:
    """Longest an output partition's last stable offset stood still as records came behind it."""
    if not evidence.stable:
        return None
    return max((stall["seconds"] for stall in lso_stalls(evidence.stable)), default=0.0)


@symptom
def lso_held_records(evidence: Evidence) -> Value:
    """Most output records held behind a stalled last stable offset: a read_committed lag."""
    if not evidence.stable:
        return None
    return max((stall["held"] for stall in lso_stalls(evidence.stable)), default=0)


@symptom
def transaction_timeouts(evidence: Evidence) -> Value:
    """Transactions of the app the coordinator rolled back because they outlived their timeout."""
    if evidence.group is None:
        return None
    return sum(1 for e in evidence.group if e["kind"] == "transaction_timeout")


@symptom
def open_transactions_at_end(evidence: Evidence) -> Value:
    """Output partitions an open transaction still held when the checker read the output."""
    settled = [e for e in evidence.transactions if e["kind"] == "settled"]
    return len(settled[-1]["held"]) if settled else None


# --- static membership ----------------------------------------------------------------------


def _group_events_of(evidence: Evidence, kind: str) -> list[dict[str, Any]] | None:
    if evidence.group is None:
        return None
    return [e for e in evidence.group if e["kind"] == kind]


def _members(evidence: Evidence, kind: str) -> Value:
    """Distinct members with a ``kind`` event: a fenced member is told so at each request."""
    events = _group_events_of(evidence, kind)
    return None if events is None else len({e["member"] for e in events})


@symptom
def static_members_fenced(evidence: Evidence) -> Value:
    """Static members fenced by a newer member with their group.instance.id (FENCED_INSTANCE_ID)."""
    return _members(evidence, "static_fenced")


@symptom
def static_joins_refused(evidence: Evidence) -> Value:
    """Static members refused because one that never left held their id (UNRELEASED_INSTANCE_ID)."""
    return _members(evidence, "static_refused")


@symptom
def partition_unread_s(evidence: Evidence) -> Value:
    """Longest an input partition held acknowledged records while nothing was consumed from it."""
    spans = evidence.consumed_spans()
    if not spans:
        return None
    marks = [(a["ts"], 0, a["offset"] + 1, a["partition"]) for a in evidence.acks]
    marks += [(t, 1, s["last"] + 1, s["partition"]) for t, s in spans]
    end: dict[int, int] = defaultdict(int)
    position: dict[int, int] = defaultdict(int)
    waiting_since: dict[int, float] = {}
    longest = 0.0
    for moment, consumed, offset, partition in sorted(marks):
        if consumed:
            position[partition] = max(position[partition], offset)
            since = waiting_since.pop(partition, None)
            if since is not None:
                longest = max(longest, moment - since)
        else:
            end[partition] = max(end[partition], offset)
        if end[partition] > position[partition]:
            waiting_since.setdefault(partition, moment)
    last = max(moment for moment, *_ in marks)
    longest = max([longest, *(last - since for since in waiting_since.values())])
    return round(longest, 1)


# --- rolling deploys --------------------------------------------------------------------------


@symptom
def whole_assignment_revocations(evidence: Evidence) -> Value:
    """Times a member that stayed in the group gave up every partition it held in a rebalance
    (the eager protocol's revocation: a cooperative member gives up only what moves), from the
    app's ``revoked`` and ``assigned`` reports; a member's revocation as it leaves is not one."""
    if not _reported(evidence):
        return None
    held: dict[str, set[tuple[str, int]]] = defaultdict(set)
    emptied: dict[str, int] = defaultdict(int)  # whole revocations not yet followed by an assign
    count = 0
    for event in evidence.app:
        if event["kind"] not in ("assigned", "revoked"):
            continue
        member = event.get("member") or ""
        partitions = {(p["topic"], p["partition"]) for p in event.get("partitions", [])}
        if event["kind"] == "assigned":
            count += emptied.pop(member, 0)  # the member went on: it did not leave
            held[member] |= partitions
        elif partitions:
            if held[member] and held[member] <= partitions:
                emptied[member] += 1
            held[member] -= partitions
    return count


# --- group protocol migration ---------------------------------------------------------------

#: The codes a ``consumer``-protocol coordinator refuses a commit with when the member's epoch
#: moved on or the member is gone (KIP-848): the commit is for an assignment that is over.
FENCED_COMMIT_CODES = frozenset({"STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"})


@symptom
def group_conversions(evidence: Evidence) -> Value:
    """Times the coordinator converted the group between the classic and consumer types."""
    converted = _group_events_of(evidence, "converted")
    return None if converted is None else len(converted)


@symptom
def consumer_protocol_joins(evidence: Evidence) -> Value:
    """Members that joined the group speaking KIP-848's consumer protocol, from its log."""
    joined = _group_events_of(evidence, "joined")
    if joined is None:
        return None
    return len({e["member"] for e in joined if e["protocol"] == "consumer"})


@symptom
def stale_epoch_commits(evidence: Evidence) -> Value:
    """Commits refused as STALE_MEMBER_EPOCH or UNKNOWN_MEMBER_ID (the app's reports)."""
    if not _reported(evidence):
        return None
    results = evidence.app_events("commit_result")
    return sum(1 for e in results if not e["ok"] and e.get("code") in FENCED_COMMIT_CODES)


# --- share groups ---------------------------------------------------------------------------
# A share group (KIP-932, ``[group] type = "share"``) has no committed offsets: the broker
# acquires records for a member, redelivers those whose acquisition lock expired, and archives a
# record at ``group.share.delivery.count.limit``. The run's drain records where the broker left
# each share-partition start offset (SPSO: everything before it acknowledged or archived).


def _share_start_offsets(evidence: Evidence) -> dict[int, int] | None:
    """Partition -> the offset below which the share group was done (acknowledged or archived)
    at the last drain (None: not a share group's run)."""
    drains = [e for e in evidence.steps if e.get("do") == "drain" and e.get("share_group")]
    if not drains:
        return None
    from kafka_replay.faults.share_groups import done_below  # the SPSO's reading, in one place

    rows = drains[-1]["share_group"]["partitions"]
    return {row["partition"]: done_below(row) or 0 for row in rows}


@symptom
def delivered_twice(evidence: Evidence) -> Value:
    """Inputs whose result reached the output more than once: a record worked on after its
    acquisition lock expired, while the broker had handed it to a consumer again."""
    return evidence.check.counts["duplicate"]


@symptom
def archived_at_limit(evidence: Evidence) -> Value:
    """Acknowledged inputs the share group moved past (below its start offset) with no result
    in the output: archived by the broker at the delivery-count limit (or rejected), lost to
    the app without an error; ``null`` unless the app's group is a share group."""
    starts = _share_start_offsets(evidence)
    if starts is None:
        return None
    delivered = {d["event_id"] for d in evidence.deliveries}
    return sum(
        1
        for ack in evidence.acks
        if ack["event_id"] not in delivered
        and ack["offset"] is not None
        and ack["offset"] < starts.get(ack["partition"], -1)
    )


# --- partitions added while the group reads ---------------------------------------------------


@symptom
def new_partitions_started_past_zero(evidence: Evidence) -> Value:
    """Input partitions added during the run that the group began past records it never
    delivered: its first commit there lies above acknowledged inputs of that partition that
    are missing from the output (a consumer with ``auto.offset.reset = latest`` that learned of
    the partition after producers had written to it); ``null`` without an ``add_partitions``
    step on the input topic."""
    added = [
        e
        for e in evidence.steps
        if e.get("kind") == "step"
        and e["do"] == "add_partitions"
        and e.get("topic") == evidence.input_topic
        and "before" in e
    ]
    if not added:
        return None
    new = {p for e in added for p in range(e["before"], e["partitions"])}
    first_commit: dict[int, int] = {}
    for commit in evidence.offsets:  # in the order the coordinator wrote them
        if (
            commit["kind"] == "commit"
            and commit["topic"] == evidence.input_topic
            and commit["partition"] in new
        ):
            first_commit.setdefault(commit["partition"], commit["offset"])
    delivered = {d["event_id"] for d in evidence.deliveries}
    return len(
        {
            ack["partition"]
            for ack in evidence.acks
            if ack["partition"] in first_commit
            and ack.get("offset") is not None
            and ack["offset"] < first_commit[ack["partition"]]
            and ack["event_id"] not in delivered
        }
    )
