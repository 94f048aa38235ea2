"""``kafka-replay explore``: search for the incident a service has not had yet.

Options the runs share with ``kafka-replay run`` are parsed and checked by the run settings;
the exploration's own (budget, seed, families, how many findings) are here.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from rich.markup import escape

from kafka_replay.console import make_console
from kafka_replay.exploring.explorer import SEARCHES
from kafka_replay.exploring.schedule import RECORDS
from kafka_replay.replay.settings import OPTIONS, RUN, RunSettings, add_path_option, add_to_parser

#: The run options an exploration takes: the service, its guarantee and its messages, and the
#: cluster and Spark it runs on.
SHARED = (
    "app",
    "app_image",
    "guarantee",
    "payload",
    "output_id",
    "client_config",
    "broker_config",
    "group_protocol",
    "client_library",
    "kafka_version",
    "kafka_backend",
    "kafka_image",
    "spark_master",
)
EXPLORE_HELP = {
    "app": "your service (this or --app-image): a command line (the contract's placeholders "
    "allowed) or module:function, NAME=COMMAND in service NAME's place of the pipeline an "
    "--expect file gives; with --app-image, the container's arguments",
    "app_image": "your service as a container image (IMAGE): each instance a container on the "
    "host's network, the contract as its environment; needs Docker",
    "guarantee": "what your service promises (required): a schedule that breaks it is a finding",
}
#: The run's options explore takes for itself, never passing them on to the plays' lanes (the
#: plays are its own lanes; the file's expectations are written into each drawn definition).
OWN_HELP = {
    "jobs": "play N schedules side by side, each lane with brokers and Spark of its own "
    "(default 1)",
    "expect": "what your app makes of each input where it is not once on the output: a TOML "
    "file with [topics.NAME] and an [expect] table (a dead-letter topic, inputs it drops), "
    "as for kafka-replay run (docs/explore.md)",
    "shard": "play only shard K of N of the seed's schedules (and of the corpus), on one of N "
    "machines given the same --seed; `kafka-replay report OUT --merge DIR...` joins their "
    "--out directories",
}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h)?$")


def parse_budget(text: str) -> float:
    """``90s``, ``15m``, ``1h`` or plain seconds -> seconds."""
    match = _DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"a duration like 15m, 90s or 1h, got {text!r}")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]


def add_explore_command(commands: Any) -> None:
    explore = commands.add_parser(
        "explore",
        help="draw fault schedules against your app until one breaks its guarantee, shrink it "
        "and write it as an incident definition",
    )
    add_to_parser(explore, RUN, only=SHARED)
    for action in explore._actions:  # the same options, said of the service explored
        action.help = EXPLORE_HELP.get(action.dest, action.help)
    explore.add_argument(
        "--budget",
        type=parse_budget,
        default=900.0,
        metavar="DURATION",
        help="how long to search, e.g. 15m, 90s, 1h (default 15m)",
    )
    explore.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="the same seed draws the same schedules (default: a new one, printed)",
    )
    explore.add_argument(
        "--families",
        default=None,
        metavar="NAMES",
        help="fault families to draw from, comma separated (default: every one a correct "
        "service survives, all but retention; see docs/explore.md)",
    )
    explore.add_argument(
        "--findings", type=int, default=1, metavar="N", help="stop after N findings (default 1)"
    )
    explore.add_argument(
        "--search",
        choices=SEARCHES,
        default="aimed",
        help="aimed (default): a play without faults first, then schedules aimed at the moments "
        "its history shows your app exposed, then drawn at random; random: drawn from the start",
    )
    explore.add_argument(
        "--records",
        type=int,
        default=RECORDS,
        metavar="N",
        help=f"records each schedule's workload writes, 80 a second (default {RECORDS}: 7.5 s)",
    )
    explore.add_argument(
        "--ordered",
        action="store_true",
        help="your app promises each key's order: results out of order break it",
    )
    for name, said in OWN_HELP.items():  # declared as the run declares them, kept to explore
        declared = OPTIONS[name]
        explore.add_argument(declared.flag, **{**declared.argparse_kwargs(), "help": said})
    add_path_option(
        explore,
        "--out",
        "DIR",
        "where findings (DIR/NAME.toml) and the report go (default: ./explored)",
        default=Path("explored"),
    )
    add_path_option(
        explore,
        "--corpus",
        "DIR",
        "earlier findings (DIR/NAME.toml): each replayed first, one that still reproduces "
        "makes the exit 1; new findings and the report are written there (instead of --out)",
    )
    explore.set_defaults(run=cmd_explore)


def cmd_explore(args: argparse.Namespace) -> int:
    from kafka_replay.exploring.exploration import explore
    from kafka_replay.exploring.explorer import WHOLE
    from kafka_replay.interrupts import stop_on_signals

    settings = RunSettings.from_args(args, only=SHARED)
    if not (settings.app or settings.app_image):
        raise ValueError(
            "--app or --app-image is required: the service to explore (a command, "
            "module:function or a container image)"
        )
    if not settings.guarantee:
        raise ValueError("--guarantee is required: exactly-once or at-least-once")
    out = make_console(highlight=False, soft_wrap=True)
    stop_on_signals()  # SIGTERM (a CI job cancelled) stops it as Ctrl-C does: lanes, brokers
    result = explore(
        settings.app,
        settings.guarantee,
        image=settings.app_image,
        budget_s=args.budget,
        seed=args.seed,
        families=args.families,
        out=args.out,
        findings=args.findings,
        search=args.search,
        corpus=args.corpus,
        records=args.records,
        ordered=args.ordered,
        jobs=args.jobs,
        expect=args.expect,
        shard=args.shard or WHOLE,
        settings=settings,
        progress=lambda line: out.print(escape(line)),
    )
    return 1 if result.findings or result.regressions else 0
