"""What held the app back in a run's last stretch, as its history shows it.

Said beside acknowledged inputs that were not in the output when the run ended (the guarantee
could not be judged), so that a reader learns why the app did not get to them without opening
the run's streams: the group rebalancing, or partitions without a live owner, while the
coordinator waited out a member that died without leaving (a killed client sends no LeaveGroup;
the coordinator keeps it until its session timeout), and instances down or crash-looping.

Pure functions of a run's :class:`~.symptoms.Evidence`: its steps (the run ended when the last
one did; its last stretch is the last drain), the supervisor's lifecycle events and the
coordinators' group events. Each cause is one clause, and only causes the history shows are
named; times are seconds since the run started, as in the report's timeline.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .evidence import Evidence

Event = dict[str, Any]
#: Less than this many seconds of a cause in the last stretch held nothing back worth naming.
NOTABLE_S = 1.0
#: Kafka's session timeout when the app was given none (``session.timeout.ms``, and the
#: ``consumer`` protocol's ``group.consumer.session.timeout.ms``): 45 s.
DEFAULT_SESSION_S = 45.0
#: The longest a coordinator waits for a member (``group.max.session.timeout.ms``: 30 min).
LONGEST_SESSION_S = 1800.0
#: A member that leaves does so just before its process exits: a leave this close is its own.
LEAVE_BEFORE_EXIT_S = 5.0
#: How a coordinator's removal reason reads when it waited out a member's heartbeats.
SESSION_WORDS = ("session",)
#: The client settings that say how often a client refreshes its metadata, and so how soon it
#: learns of partitions added to a topic it reads: Apache Kafka's name, then librdkafka's.
METADATA_REFRESH = ("metadata.max.age.ms", "topic.metadata.refresh.interval.ms")


@dataclass(frozen=True)
class _Death:
    """An instance that stopped heartbeating without leaving: killed, crashed or frozen."""

    ts: float
    what: str  # "killed", "frozen (SIGSTOP)", "ended by SIGTERM", "exited with code 1"


def held_back(evidence: Evidence) -> list[str]:
    """One clause per cause that held the app back in the run's last stretch (the last drain,
    else the whole run), in the order a reader looks: the group, then the app's instances."""
    steps = [step for step in evidence.steps if "started" in step and "ended" in step]
    if not steps:
        return []
    end = max(step["ended"] for step in steps)
    drains = [step["started"] for step in steps if step.get("do") == "drain"]
    since = drains[-1] if drains else min(step["started"] for step in steps)
    deaths = _deaths(evidence)
    clauses = []
    for name, events in _groups(evidence).items():
        clauses += _group_clauses(evidence, events, deaths, since, end, name)
    return clauses + _unread_added_partitions(evidence, end) + _app_clauses(evidence, since, end)


def _groups(evidence: Evidence) -> dict[str | None, list[Event]]:
    """The group events by group (a pipeline's are tagged with theirs; None: the one group)."""
    groups: dict[str | None, list[Event]] = defaultdict(list)
    for event in sorted(evidence.group or [], key=lambda e: e["ts"]):
        groups[event.get("group")].append(event)
    return dict(groups)


def _at(evidence: Evidence, ts: float) -> str:
    return f"{ts - evidence.start:.1f} s"


def _deaths(evidence: Evidence) -> list[_Death]:
    """Instances that stopped without leaving their group: each unexpected exit with no leave
    just before it, and each freeze (SIGSTOP)."""
    leaves = [e["ts"] for e in evidence.group or [] if e["kind"] == "leave"]
    deaths = []
    for event in evidence.lifecycle:
        ts = event["ts"]
        if event["kind"] == "signal" and event.get("signal") == "SIGSTOP":
            deaths.append(_Death(ts, "frozen (SIGSTOP)"))
        elif event["kind"] == "exit" and not event.get("expected"):
            if any(ts - LEAVE_BEFORE_EXIT_S <= left <= ts for left in leaves):
                continue  # it left the group on its way out: nobody waited for it
            signal, code = event.get("signal"), event.get("code")
            what = "killed" if signal == "SIGKILL" else f"ended by {signal}" if signal else None
            deaths.append(_Death(ts, what or f"exited with code {code}"))
    return sorted(deaths, key=lambda death: death.ts)


def _waited_out(
    events: Sequence[Event], deaths: Sequence[_Death], session_s: float
) -> list[tuple[_Death | None, Event]]:
    """Each removal of a member whose session expired, with the death it followed: of the
    deaths before it not yet taken, the one whose distance is nearest ``session_s`` (the session
    timeout the app was given); None when no instance died (a client that hung)."""
    taken: set[float] = set()
    found = []
    for removal in events:
        if removal["kind"] != "removed" or not _session_expired(removal):
            continue
        before = [
            d
            for d in deaths
            if d.ts not in taken and 0.5 <= removal["ts"] - d.ts <= LONGEST_SESSION_S
        ]
        death = min(before, key=lambda d: abs(removal["ts"] - d.ts - session_s), default=None)
        if death is not None:
            taken.add(death.ts)
        found.append((death, removal))
    return found


def _session_s(evidence: Evidence) -> float:
    """The session timeout the app was given (``session.timeout.ms``), else 0: unknown."""
    given = evidence.client_config.get("session.timeout.ms")
    if isinstance(given, bool) or not isinstance(given, (int, float, str)):
        return 0.0
    try:
        return float(given) / 1000
    except ValueError:
        return 0.0


def _session_expired(removal: Event) -> bool:
    return any(word in str(removal.get("reason", "")).lower() for word in SESSION_WORDS)


def _member(evidence: Evidence, death: _Death | None) -> str:
    if death is None:
        return "a member that stopped heartbeating"
    return f"a member {death.what} at {_at(evidence, death.ts)}"


def _rebalancing(events: Sequence[Event], end: float) -> list[tuple[float, float, bool]]:
    """(start, stop, still at the end) of each stretch the group spent rebalancing: from a
    rebalance begun to the group stabilized (or empty). The ``consumer`` protocol computes a
    new assignment at once: its epochs hold nobody up."""
    spans, opened = [], None
    for event in events:
        if event["kind"] == "rebalance" and event.get("reason") != "new assignment":
            opened = event["ts"] if opened is None else opened
        elif event["kind"] in ("stabilized", "empty") and opened is not None:
            spans.append((opened, min(event["ts"], end), event["ts"] > end))
            opened = None
    if opened is not None:
        spans.append((opened, end, True))
    return [(start, stop, last) for start, stop, last in spans if start < end]


def _for(seconds: float, since: float, end: float, at_end: bool, start: float) -> str:
    """``for the last 44 s`` (up to the end), else ``for 12 s of the last 40 s``."""
    if at_end:
        return f"for the last {end - start:.0f} s"
    return f"for {seconds:.0f} s of the last {end - since:.0f} s"


def _group_clauses(
    evidence: Evidence,
    events: Sequence[Event],
    deaths: Sequence[_Death],
    since: float,
    end: float,
    name: str | None,
) -> list[str]:
    """The group rebalancing in the last stretch, and why where its log says; else partitions
    without a live owner while a dead member was waited out to its session timeout."""
    group = f"the group {name}" if name else "the group"
    session_s = _session_s(evidence) or DEFAULT_SESSION_S
    waited = _waited_out(events, deaths, session_s)
    spans = _rebalancing(events, end)
    held = sum(max(0.0, stop - max(start, since)) for start, stop, _ in spans)
    if held >= NOTABLE_S:
        longest = max(spans, key=lambda span: span[1] - max(span[0], since))
        start, stop, at_end = spans[-1] if spans[-1][2] else longest
        why = _why_rebalancing(evidence, events, waited, deaths, (start, stop, at_end), session_s)
        return [f"{_for(held, since, end, at_end, start)} {group} was rebalancing{why}"]
    clauses = []
    for death, removal in waited:
        unowned = min(removal["ts"], end) - max(death.ts if death else end, since)
        if death is not None and unowned >= NOTABLE_S:
            clauses.append(
                f"{_for(unowned, since, end, removal['ts'] > end, death.ts)} the partitions of "
                f"{_member(evidence, death)} had no live owner in {group} (it was waited out "
                "to its session timeout)"
            )
    return clauses[-1:]


def _why_rebalancing(
    evidence: Evidence,
    events: Sequence[Event],
    waited: Sequence[tuple[_Death | None, Event]],
    deaths: Sequence[_Death],
    span: tuple[float, float, bool],
    session_s: float,
) -> str:
    """Why a rebalance lasted, in parentheses: the members it waited out to their session
    timeout; else, still under way at the end, the dead members it was waiting for (the
    coordinator had not removed them when its log was read); else the members joining."""
    start, stop, at_end = span
    whys = [
        f"{_member(evidence, death)} was waited out to its session timeout"
        for death, removal in waited
        if removal["ts"] >= start and (at_end or removal["ts"] <= stop)
    ]
    if not whys and at_end:
        gone = [death for death in deaths if start - session_s <= death.ts <= stop]
        whys = [f"{_member(evidence, death)} never left the group" for death in gone[-1:]]
    if not whys:
        joining = sum(
            1
            for event in events
            if event["kind"] == "rebalance"
            and start <= event["ts"] <= stop
            and "adding new member" in str(event.get("reason", "")).lower()
        )
        whys = [f"{joining} member{'s' if joining > 1 else ''} joining"] if joining else []
    return f" ({'; '.join(whys)})" if whys else ""


def _unread_added_partitions(evidence: Evidence, end: float) -> list[str]:
    """Input partitions a step added that held acknowledged inputs and were never read: the
    group had not taken them up by the end (a client learns of new partitions only at its next
    metadata refresh), with the refresh interval the run gave its app."""
    read = {span["partition"] for _, span in evidence.consumed_spans()}
    topic = evidence.input_topic
    acks = [ack for ack in evidence.acks if ack.get("topic", topic) == topic]
    clauses = []
    for step in evidence.steps:
        if step.get("do") != "add_partitions" or step.get("topic") != topic:
            continue
        added = set(range(step["before"], step["partitions"])) - read
        waiting = [a["ts"] for a in acks if a["partition"] in added]
        unread = sorted({a["partition"] for a in acks if a["partition"] in added})
        if not unread or end - min(waiting) < NOTABLE_S:
            continue
        which = ", ".join(map(str, unread))
        clause = (
            f"input partition{'s' if len(unread) > 1 else ''} {which}, added at "
            f"{_at(evidence, step['ended'])}, held acknowledged inputs from "
            f"{_at(evidence, min(waiting))} and {'were' if len(unread) > 1 else 'was'} never "
            f"read ({end - min(waiting):.0f} s to the end of the run): the group had not taken "
            "them up (a client learns of new partitions at its next metadata refresh"
        )
        config = evidence.client_config
        given = next((key for key in METADATA_REFRESH if config.get(key) is not None), None)
        if given is not None:
            clause += f": the run gave its app `{given}` = {config[given]}; a client that does "
            clause += "not take it refreshes every 5 minutes by default"
        clauses.append(clause + ")")
    return clauses


def _app_clauses(evidence: Evidence, since: float, end: float) -> list[str]:
    """The app's instances down in the last stretch: each with how long, and whether it was
    crash-looping (kept dying young, restarted with a back-off)."""
    down: dict[tuple[str | None, int], list[tuple[float, float]]] = defaultdict(list)
    exits: dict[tuple[str | None, int], int] = defaultdict(int)
    loops: set[tuple[str | None, int]] = set()
    exited: dict[tuple[str | None, int], float] = {}
    for event in sorted(evidence.lifecycle, key=lambda e: e["ts"]):
        instance = (event.get("app"), event.get("instance", 0))
        if event["kind"] == "exit" and not event.get("expected"):
            exited[instance] = event["ts"]
            exits[instance] += since <= event["ts"] <= end
        elif event["kind"] == "start" and instance in exited:
            down[instance].append((exited.pop(instance), event["ts"]))
        elif event["kind"] == "crash_loop" and since <= event["ts"] <= end:
            loops.add(instance)
    for instance, ts in exited.items():  # never started again
        down[instance].append((ts, float("inf")))
    parts = []
    for instance, spans in sorted(down.items(), key=lambda item: (str(item[0][0]), item[0][1])):
        seconds = sum(max(0.0, min(b, end) - max(a, since)) for a, b in spans)
        if seconds < NOTABLE_S:
            continue
        last = spans[-1]
        at_end = last[1] > end and last[0] < end
        app, index = instance
        label = f"{app} instance {index}" if app else f"instance {index}"
        said = f"{label} {_for(seconds, since, end, at_end, last[0])}"
        if instance in loops:
            said += f" (crash-looping, {exits[instance]} exits)"
        parts.append(said)
    return [f"the app was down: {', '.join(parts)}"] if parts else []
