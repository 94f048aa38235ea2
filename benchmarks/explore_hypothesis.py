"""Hypothesis as the exploration's search and shrinker, tried on real plays beside the
explorer's own: how many plays it takes to fail, how far it shrinks, and whether a failure
that depends on timing ends in ``Flaky`` instead of a finding.

The same service, families, workload and player as ``./dev bench explore``; Hypothesis draws
each schedule (its layout, then one to three faults, each a family's own draw from a Random
Hypothesis controls, so shrinking reaches inside a fault) and one real play of it is one
example. Past the budget nothing more is played: an example played before gives its result
again (so Hypothesis's last replay of the smallest failure is the play it remembers), any
other is rejected.

    ./dev bench explore-hypothesis [--budget-s 900] [SERVICE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, assume, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky, Unsatisfiable

from benchmarks.explore import SERVICES
from kafka_replay.exploring.exploration import player_for
from kafka_replay.exploring.explorer import Explorer
from kafka_replay.exploring.families import Family, Layout, choose_families
from kafka_replay.exploring.schedule import (
    EARLIEST,
    MAX_FAULTS,
    RECORDS,
    Fault,
    Schedule,
    composed,
    latest_ack,
)
from kafka_replay.servers.reaper import leased_temp_dir


def _faults(families: tuple[Family, ...], layout: Layout) -> st.SearchStrategy[Fault]:
    def one(family: Family, after: int, rng: object) -> Fault:
        return Fault(family.name, after, family.draw(rng, layout))  # type: ignore[arg-type]

    acks = st.integers(int(RECORDS * EARLIEST), latest_ack(RECORDS))
    return st.builds(one, st.sampled_from(families), acks, st.randoms(use_true_random=False))


@st.composite
def _schedules(draw: st.DrawFn, families: tuple[Family, ...], transactional: bool) -> Schedule:
    layout = Layout(draw(st.sampled_from((2, 3, 4))), draw(st.sampled_from((1, 2))), RECORDS,
                  transactional)  # fmt: skip
    faults = draw(st.lists(_faults(families, layout), min_size=1, max_size=MAX_FAULTS))
    return composed(0, 0, layout, faults)


def run(args: argparse.Namespace) -> None:
    name = args.incidents[0] if args.incidents else "buffering"
    app, guarantee, service_seed = SERVICES[name]
    families = choose_families(None)
    plays: list[tuple[float, int, list[str]]] = []  # when, faults, what broke
    seen: dict[str, list[str]] = {}  # what broke, by schedule
    started = time.monotonic()
    with leased_temp_dir("kafka-replay-explore-hypothesis-") as scratch:
        definitions = scratch / "schedules"
        player = player_for(1, None, definitions, scratch)
        explorer = Explorer(
            player, app=app, guarantee=guarantee, families=families, seed=service_seed,
            budget_s=args.budget_s, out_dir=Path(tempfile.mkdtemp()), work_dir=definitions,
            progress=lambda line: print(f"[{name}] {line}", flush=True),
        )  # fmt: skip

        @seed(service_seed)
        @settings(max_examples=10_000, deadline=None, database=None, print_blob=False,
                  phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(_schedules(families, guarantee == "exactly-once"))
        def holds(schedule: Schedule) -> None:
            if time.monotonic() - started > args.budget_s:  # only what was played: the last
                assume(repr(schedule) in seen)  # replay of the smallest failing one included
                assert not seen[repr(schedule)], seen[repr(schedule)]
                return
            broke = explorer.play(schedule, "vulnerable")
            seen[repr(schedule)] = sorted(broke)
            plays.append((time.monotonic() - started, len(schedule.faults), sorted(broke)))
            print(f"[{name}] play {len(plays)}: {len(schedule.faults)} fault(s): "
                  + "; ".join(schedule.timeline()) + f" -> {', '.join(broke) or 'held'}",
                  flush=True)  # fmt: skip
            assert not broke, broke

        try:
            holds()
            verdict = "none"
        except AssertionError as exc:
            verdict = f"found and shrunk ({exc})"
        except Flaky as exc:
            verdict = f"Flaky: {type(exc).__name__}"
        except Unsatisfiable:  # the budget was spent before an example played
            verdict = "none played"
        finally:
            player.close()
    failing = [p for p in plays if p[2]]
    first = f"{failing[0][0]:.0f} s, play {plays.index(failing[0]) + 1}" if failing else "-"
    smallest = min((p[1] for p in failing), default=None)
    print("| service | ended | first failure | plays | failing plays | fewest faults failing "
          "| time |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {name} | {verdict} | {first} | {len(plays)} | {len(failing)} | "
        f"{smallest if smallest is not None else '-'} | {time.monotonic() - started:.0f} s |"
    )
