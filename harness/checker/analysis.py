"""What happened to every record: every registered anomaly run on Spark over the check's views.

Each anomaly (``checker.anomalies``) returns its query, most as one SQL text over the views
(:meth:`~kafka_replay.checker.views.AnalysisViews.sql`), and the same text is both counted
(every anomaly in one job, with the totals) and, where it found something, read for examples.
:func:`analyse` runs them all, and reports list them in :data:`ANOMALIES` order.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame

from . import anomalies  # noqa: F401 (each anomaly registers itself as it is imported)
from .anomaly_registry import REGISTRY, Detailed, Finding, example_rows
from .matching import CheckInputs
from .views import AnalysisViews

#: The places a correct service puts an input in (the mark on its ack): once on the output,
#: in the dead-letter topic, or nowhere.
PLACES = ("output", "dead_letter", "filtered")

#: The anomalies' names, in report order.
ANOMALIES = tuple(REGISTRY)


class Analysis(AnalysisViews):
    """Every registered anomaly counted over the check's views, in one Spark job, and the
    examples and details of those found (:meth:`findings`), with the check's totals."""

    def __init__(
        self, inputs: CheckInputs, examples: int, ordered: bool = True, small: bool = False
    ) -> None:
        super().__init__(inputs, examples, ordered, small)
        self._totals: dict[str, int] | None = None  # counted by :meth:`findings`

    def findings(self) -> dict[str, Finding]:
        """Every registered anomaly.

        The anomalies are counted together, in one Spark job: each job has a fixed cost that,
        on an incident's few thousand records, was most of the check. Only those found get
        more jobs, for their examples and details (:class:`Detailed`).
        """
        if self.moved is None and any(start > 0 for *_, start in self.starts_now or ()):
            self.moved = True
        results = {name: found.query(self) for name, found in REGISTRY.items()}
        queries = {
            name: result.frame if isinstance(result, Detailed) else result
            for name, result in results.items()
            if not isinstance(result, Finding)
        }
        # a query made as a frame is counted beside the SQL texts, as a view of its own
        frames = {f"q_{name}": q for name, q in queries.items() if isinstance(q, DataFrame)}
        texts = {
            name: f"SELECT * FROM {{q_{name}}}" if isinstance(query, DataFrame) else query
            for name, query in queries.items()
        }
        if self.moved is None:  # counted beside the anomalies, which assume it did not
            texts[_MOVED_NAME] = _LOG_START_MOVED
        texts |= {f"({name})": query for name, query in _TOTALS.items()}  # not an anomaly's
        counted = self.sql(_union_counts(texts, self.small), **frames).collect()
        counts = {row["name"]: row["count"] for row in counted}
        self._totals = {name: counts.get(f"({name})", 0) for name in _TOTALS}
        if self.moved is None and counts.get(_MOVED_NAME):
            self.found_movements()  # rare: count again, with the movements
            return self.findings()
        self.moved = bool(self.moved)
        findings = {}
        for name, result in results.items():
            found, kind = counts.get(name, 0), REGISTRY[name]
            if isinstance(result, Finding):
                findings[name] = result
            elif isinstance(result, Detailed):
                if found:
                    findings[name] = result.detail(self.frame(result.frame), found)
                else:
                    findings[name] = result.none
            else:
                limit = found if kind.every else self.examples
                rows = example_rows(self.frame(result).orderBy(*kind.order), limit) if found else []
                every = {"every": [dict(row) for row in rows]} if kind.every else None
                findings[name] = Finding(found, rows[: self.examples], every)
        return findings

    def totals(self) -> dict[str, int]:
        """Acknowledged inputs, output records, inputs delivered at least once, and, when the
        input log was read, its records (``log_records``: its presence says it was read).
        Counted with the anomalies (:data:`_TOTALS`): :meth:`findings` comes first."""
        if self._totals is None:
            self.findings()
        assert self._totals is not None
        totals = dict(self._totals)
        if not self.source_read:
            del totals["log_records"]
        return totals


def analyse(inputs: CheckInputs, examples: int = 5, small: bool = False) -> dict[str, Finding]:
    """Every registered anomaly, computed on Spark (``small``: as for an incident's records,
    every input read as one partition).

    The inputs are read once (into :func:`~kafka_replay.checker.matching.match`); a Kafka
    output is read a second time only for ``aborted_read``, so cache ``committed`` when it is
    costly to read, as :func:`~kafka_replay.checker.check.check_run` does.
    """
    analysis = Analysis(inputs, examples, small=small)
    try:
        return analysis.findings()
    finally:
        analysis.close()


def _union_counts(queries: Mapping[str, str], small: bool) -> str:
    """One SQL text that counts the rows of every query, by name: a union of their names,
    grouped, so every anomaly is counted by one Spark job. Anomalies that split one view's
    rows between them (:data:`_COUNTED_TOGETHER`) are counted from it in one branch.

    On a ``small`` run the union is read as one partition (``COALESCE(1)``), as its inputs
    are (:func:`~kafka_replay.checker.views.in_one_partition`): each branch is a task
    otherwise, and on an incident's records scheduling them cost more than running them
    (zombie-commit's counting job: 140 to 250 ms instead of 330 to 390, side by side), and one
    partition needs no shuffle before the grouping. Millions of records keep their
    partitions."""
    branches, queries = [], dict(queries)
    for names, named in _COUNTED_TOGETHER.items():
        if all(name in queries for name in names):
            branches.append(named)
            for name in names:
                del queries[name]
    branches += (f"SELECT '{n}' AS name FROM ({q})" for n, q in queries.items())
    union = " UNION ALL ".join(branches)
    if small:
        union = f"SELECT /*+ COALESCE(1) */ * FROM ({union})"
    return f"SELECT name, count(*) AS count FROM ({union}) GROUP BY name"


#: Whether an input partition's log start moved (any of
#: :func:`~kafka_replay.checker.log_starts.log_start_movements`' movements, as a
#: count): a lag sample, or the input log as read, shows it above offset 0.
_LOG_START_MOVED = """
    SELECT 1 FROM {lag} WHERE start > 0
    UNION ALL
    SELECT 1 FROM {matched} WHERE side = 2
    GROUP BY in_topic, in_partition HAVING min(in_offset) > 0"""
_MOVED_NAME = "(log start moved)"

#: What :meth:`Analysis.totals` says, counted with the anomalies, by name.
_TOTALS = {
    "acknowledged": "SELECT 1 FROM {matched} WHERE side = 0 OR (side = 1 AND acked AND first)",
    "output_records": "SELECT 1 FROM {matched} WHERE side = 1",
    "delivered": "SELECT 1 FROM {matched} WHERE side = 1 AND acked AND first",
    "log_records": "SELECT 1 FROM {matched} WHERE side = 2",
}

#: Anomalies that split the rows of one view between them, and the SQL text that names each
#: row's anomaly: one branch of the counting union for them all (one join of the view, not
#: one each), where each one's own text is kept for its examples.
_COUNTED_TOGETHER = {
    ("lost", "unseen_at_deadline"): """
        SELECT IF(passed, 'lost', 'unseen_at_deadline') AS name FROM {missing}
        WHERE passed IS NOT NULL""",
}
