"""One exploration from start to end, for the command line and for a team's own tests:
where its plays run, the explorer, and the report written whatever happens."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from kafka_replay.definitions.app_option import check_one_service
from kafka_replay.playing.parallel import WorkerFailed
from kafka_replay.playing.shards import Shard
from kafka_replay.replay.settings import OPTIONS, RunSettings
from kafka_replay.servers.reaper import leased_temp_dir

from .explorer import KINDS, WHOLE, Exploration, ExploreError, Explorer
from .families import choose_families
from .findings import last_line, write_report
from .players import InLanes, InTurn, Player
from .schedule import RECORDS, REFERENCE_APPS, definition_text, draw
from .shape import check_shape, read_shape


def explore(
    app: str | None,
    guarantee: str,
    *,
    image: str | None = None,
    budget_s: float = 900.0,
    seed: int | None = None,
    families: str | None = None,
    out: Path = Path("explored"),
    findings: int = 1,
    records: int = RECORDS,
    ordered: bool = False,
    jobs: int = 1,
    expect: Path | None = None,
    settings: RunSettings | None = None,
    search: str = "aimed",
    corpus: Path | None = None,
    shard: Shard = WHOLE,
    progress: Callable[[str], None] = print,
) -> Exploration:
    """Search for a schedule of faults under which ``app`` breaks ``guarantee``; ``image``:
    the service is that container image (``app`` its arguments, or None for its command).

    Findings are written to ``out`` as ``NAME.toml`` with ``explore.md`` and ``explore.html``;
    the report is written on Ctrl-C too, with what was found so far. ``families``: comma
    separated names (default: every family a correct service survives, all but retention).
    ``jobs``: plays side by side, each lane with brokers and Spark of its own. ``settings``:
    what runs share with ``kafka-replay run`` (the Kafka release and backend, client
    settings, a payload). ``expect``: an ``--expect`` file, what the service makes of each
    input where it is not once on the output (a dead-letter topic, inputs it drops).
    ``search``: ``aimed`` (a play without faults first, schedules aimed at its windows of
    exposure, then at random) or ``random``. ``corpus``: a directory of earlier findings,
    replayed first (one that reproduces is in ``regressions``); new findings are added to it.
    ``shard``: the part of the seed's schedules to play (``--shard K/N``; its corpus's share
    too), whose report ``kafka-replay report OUT --merge DIR...`` joins with the others'.
    """
    if guarantee not in REFERENCE_APPS:
        raise ValueError(f"guarantee is one of {', '.join(REFERENCE_APPS)}, got {guarantee!r}")
    for name, value, least in (("--findings", findings, 1), ("--records", records, 100)):
        if value < least:
            raise ValueError(f"{name} must be {least} or more, got {value}")
    check_jobs = OPTIONS["jobs"].check
    assert check_jobs is not None
    check_jobs(jobs)  # as kafka-replay run checks it
    if not (app or image):
        raise ValueError(
            "the service to explore is needed: a command or module:function, or an image"
        )
    if corpus is not None:
        if not corpus.is_dir():
            raise ValueError(f"--corpus {corpus}: no such directory (make it, empty, to begin one)")
        out = corpus  # new findings join the earlier ones
    drawn_from = choose_families(families)
    service = read_shape(expect) if expect is not None else None
    if service is not None:  # a pipeline's: the place its NAME= gives, then the command alone
        service, app, image = service.placed(app, image)
    check_one_service(app, image)
    settings = (settings or RunSettings()).replace(app=None, app_image=None, guarantee=None)
    seed = seed if seed is not None else secrets.randbelow(10**6)
    where = f" as service {service.place} of its pipeline" if service and service.place else ""
    part = f", shard {shard} of its schedules," if shard != WHOLE else ""
    progress(
        f"Exploring{where} with seed {seed}{part} for {budget_s:.0f} s, {jobs} play(s) at a time, "
        "families: " + ", ".join(f.name for f in drawn_from)
    )
    with leased_temp_dir("kafka-replay-explore-") as scratch:
        definitions = scratch / "schedules"
        definitions.mkdir()
        if service is not None:  # before any broker starts: a topic it names, a clash
            first = draw(seed, 0, drawn_from, records)
            text = definition_text(
                first,
                app or "",
                guarantee,
                dict([KINDS["lost"]]),
                name="expect-check",
                service=service,
            )
            check_shape(service, text, definitions)
        player = player_for(jobs, settings, definitions, scratch)
        explorer = Explorer(
            player,
            app=app or "",
            guarantee=guarantee,
            image=image,
            families=drawn_from,
            seed=seed,
            budget_s=budget_s,
            out_dir=out,
            work_dir=definitions,
            ordered=ordered,
            wanted=findings,
            records=records,
            service=service,
            search=search,
            corpus=corpus,
            shard=shard,
            progress=progress,
        )
        try:
            explorer.explore()
        except WorkerFailed as exc:
            raise ExploreError(f"a lane of the exploration stopped: {exc}") from exc
        finally:  # Ctrl-C too: what was found is kept
            player.close()
            result = explorer.result
            result.report = write_report(result, budget_s, out)
            progress(last_line(result))
    return result


def player_for(jobs: int, settings: RunSettings | None, definitions: Path, scratch: Path) -> Player:
    """Where plays run: in this process's session (one at a time), or in ``jobs`` lanes;
    ``settings`` None: the defaults of ``kafka-replay run``."""
    settings = settings or RunSettings()
    if jobs == 1:
        return InTurn(settings.session(scratch), settings.run_options())
    env = {**os.environ, **settings.child_environment()}  # this process's is left as it was
    return InLanes(jobs, settings.argv(), definitions, scratch, env)
