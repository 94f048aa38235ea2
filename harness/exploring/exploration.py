"""One exploration from start to end, for the command line and for a team's own tests:
brokers and Spark for its plays, the explorer, and the report written whatever happens."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from kafka_replay.playing.run_options import RunOptions
from kafka_replay.playing.session import CatalogSession
from kafka_replay.servers.reaper import leased_temp_dir

from .explorer import Exploration, Explorer
from .families import choose_families
from .findings import write_report
from .schedule import RECORDS, REFERENCE_APPS


def explore(
    app: str,
    guarantee: str,
    *,
    budget_s: float = 900.0,
    seed: int | None = None,
    families: str | None = None,
    out: Path = Path("explored"),
    findings: int = 1,
    records: int = RECORDS,
    ordered: bool = False,
    options: RunOptions | None = None,
    kafka_version: str | None = None,
    kafka_backend: str | None = None,
    kafka_image: str | None = None,
    spark_master: str | None = None,
    progress: Callable[[str], None] = print,
) -> Exploration:
    """Search for a schedule of faults under which ``app`` breaks ``guarantee``.

    Findings are written to ``out`` as ``NAME.toml`` with ``explore.md`` and ``explore.html``;
    the report is written on Ctrl-C too, with what was found so far. ``families``: comma
    separated names (default: every family that needs no extra component).
    """
    if guarantee not in REFERENCE_APPS:
        raise ValueError(f"guarantee is one of {', '.join(REFERENCE_APPS)}, got {guarantee!r}")
    if findings < 1:
        raise ValueError(f"--findings must be 1 or more, got {findings}")
    if records < 100:
        raise ValueError(f"--records must be 100 or more, got {records}")
    drawn_from = choose_families(families)
    seed = seed if seed is not None else secrets.randbelow(10**6)
    progress(
        f"Exploring with seed {seed} for {budget_s:.0f} s, families: "
        + ", ".join(f.name for f in drawn_from)
    )
    with leased_temp_dir("kafka-replay-explore-") as scratch:
        session = CatalogSession(
            scratch, kafka_version, kafka_backend, image=kafka_image, spark_master=spark_master
        )
        explorer = Explorer(
            session, options or RunOptions(), app=app, guarantee=guarantee, families=drawn_from,
            seed=seed, budget_s=budget_s, out_dir=out, work_dir=scratch / "schedules",
            ordered=ordered, wanted=findings, records=records, progress=progress,
        )  # fmt: skip
        try:
            with session:
                explorer.explore()
        finally:  # Ctrl-C too: what was found is kept
            result = explorer.result
            result.report = write_report(result, budget_s, out)
            progress(
                f"{result.schedules} schedule(s), {len(result.tried)} play(s), "
                f"{len(result.findings)} finding(s); report: {result.report}"
            )
    return result
