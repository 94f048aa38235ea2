"""A check's inputs kept on disk, so the same analysis runs again without the cluster.

With ``KAFKA_REPLAY_RECORD_CHECKS=DIR`` every check writes what its analysis read (the
acknowledged inputs, the output as read both ways, the input log, the history's streams,
where each log started, the partitions an open transaction held) and what it found, under
``DIR/<run>/<n>``. :func:`analyse_recorded` runs the analysis again on such a directory: the
checker's tests hold recorded catalog runs and assert that a changed checker finds the same.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .analysis import Analysis
from .anomaly_registry import Finding
from .matching import CheckInputs
from .spark import fit_to_history

#: Where checks are recorded, when set.
RECORD_ENV = "KAFKA_REPLAY_RECORD_CHECKS"

LogStarts = Callable[[], list[tuple[str, int, int]]]


class Recorder:
    """Records one check: the log starts its analysis asked for, then everything else."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._starts: list[tuple[str, int, int]] | None = None

    def remembering(self, log_starts: LogStarts | None) -> LogStarts | None:
        """``log_starts``, its answer kept: the log start moves on after the analysis asked."""
        if log_starts is None:
            return None

        def asked() -> list[tuple[str, int, int]]:
            self._starts = log_starts()
            return self._starts

        return asked

    def write(self, analysis: Analysis, history_bytes: int, findings: dict[str, Finding]) -> None:
        self.directory.mkdir(parents=True)
        inputs, schemas = analysis.inputs, {}
        for name in _FRAMES:
            frame = getattr(inputs, name)
            if frame is not None:
                schemas[name] = frame.schema.jsonValue()
                _write_rows(self.directory / f"{name}.jsonl.gz", frame)
        recorded = {
            "frames": schemas,
            "held": {str(p): lso for p, lso in (inputs.held or {}).items()},
            "log_starts": self._starts,
            "source_mirrored": inputs.source_mirrored,
            "examples": analysis.examples,
            "ordered": analysis.ordered,
            "small": analysis.small,
            "history_bytes": history_bytes,
            "findings": findings_json(findings),
        }
        (self.directory / "check.json").write_text(json.dumps(recorded, indent=1) + "\n")


#: The frames of :class:`CheckInputs`, written one file each.
_FRAMES = tuple(
    f.name for f in fields(CheckInputs) if f.name not in ("held", "log_starts", "source_mirrored")
)


def recorder(run_dir: Path) -> Recorder | None:
    """A recorder for the next check of ``run_dir``, when checks are recorded."""
    root = os.environ.get(RECORD_ENV)
    if not root:
        return None
    base = Path(root) / re.sub(r"[^\w.-]", "_", Path(run_dir).name)
    base.mkdir(parents=True, exist_ok=True)
    return Recorder(base / str(sum(1 for _ in base.iterdir())))


def _write_rows(path: Path, frame: DataFrame) -> None:
    with gzip.open(path, "wt") as out:
        for row in frame.collect():
            out.write(json.dumps(row.asDict(recursive=True), separators=(",", ":")) + "\n")


def findings_json(findings: dict[str, Finding]) -> dict[str, Any]:
    """Findings as JSON would hold them: what a recorded check's are compared with."""
    shown = {
        name: {"count": f.count, "examples": f.examples, "detail": f.detail}
        for name, f in findings.items()
    }
    return json.loads(json.dumps(shown, default=str))


def recorded_findings(directory: Path) -> dict[str, Any]:
    """What a recorded check found when it was recorded (:func:`findings_json`)."""
    return json.loads((directory / "check.json").read_text())["findings"]


def analyse_recorded(spark: SparkSession, directory: Path) -> dict[str, Any]:
    """The findings of the analysis of a recorded check, run again (:func:`findings_json`)."""
    recorded = json.loads((directory / "check.json").read_text())
    fit_to_history(spark, recorded["history_bytes"])
    frames: dict[str, Any] = {
        name: spark.read.schema(T.StructType.fromJson(schema)).json(
            str(directory / f"{name}.jsonl.gz")
        )
        for name, schema in recorded["frames"].items()
    }
    for column in ("delete", "superseded"):  # recorded before tombstones and compacted inputs
        if column not in frames["acks"].columns:
            frames["acks"] = frames["acks"].withColumn(column, F.lit(False))
    starts = recorded["log_starts"]
    inputs = CheckInputs(
        **frames,
        held={int(p): lso for p, lso in recorded["held"].items()} or None,
        log_starts=None if starts is None else lambda: [tuple(s) for s in starts],
        source_mirrored=recorded.get("source_mirrored", False),  # absent: recorded before mirrors
    )
    analysis = Analysis(inputs, recorded["examples"], recorded["ordered"], recorded["small"])
    try:
        return findings_json(analysis.findings())
    finally:
        analysis.close()
