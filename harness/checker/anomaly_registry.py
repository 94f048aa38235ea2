"""What an anomaly is: a query registered with ``@anomaly``, and what it finds.

Each anomaly's function (``checker.anomalies``) registers itself in :data:`REGISTRY` as it is
imported, under its name, with how its examples are ordered and its docstring's first line
as its description; :class:`~kafka_replay.checker.analysis.Analysis` runs every one registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from .views import AnalysisViews


@dataclass
class Finding:
    count: int
    examples: list[dict[str, Any]]
    detail: dict[str, Any] | None = None


@dataclass(frozen=True)
class Detailed:
    """An anomaly whose finding says more than its count and examples: its rows are counted
    with the others (:meth:`~kafka_replay.checker.analysis.Analysis.findings`), and only when
    it has some does ``detail`` make its finding from them and their count."""

    frame: DataFrame | str  # a SQL text over the analysis' views (:meth:`AnalysisViews.sql`)
    detail: Callable[[DataFrame, int], Finding]
    none: Finding  # what it says when it found nothing


def example_rows(frame: DataFrame, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` rows of ``frame``, as a finding's examples."""
    return [row.asDict(recursive=True) for row in frame.limit(limit).collect()]


#: An anomaly's query: a SQL text over :attr:`AnalysisViews.views`, a frame, or its finding at
#: once.
Query = Callable[[AnalysisViews], "str | DataFrame | Detailed | Finding"]


@dataclass(frozen=True)
class Anomaly:
    name: str
    query: Query
    order: tuple[str, ...]  # how its examples are ordered
    description: str
    #: Whether the result carries every row found (``every``), not only examples: for what a
    #: report marks one by one (each commit that went back), so no reader computes it again.
    every: bool = False


#: Every anomaly the checker looks for, by name, in the order reports list them.
REGISTRY: dict[str, Anomaly] = {}


def anomaly(*order: str, every: bool = False) -> Callable[[Query], Query]:
    """Register a query under its function's name; its docstring's first line describes it."""

    def register(query: Query) -> Query:
        description = (query.__doc__ or "").strip().splitlines()[0]
        REGISTRY[query.__name__] = Anomaly(query.__name__, query, order, description, every)
        return query

    return register
