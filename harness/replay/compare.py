"""Two Kafka setups, the same incidents: what changed between them, and whether it matters.

A setup is a list of ``key=value`` items (``kafka=3.9.2 protocol=consumer``,
``client.max.poll.records=500``) that becomes options of ``kafka-replay run``; each side is
replayed on its own and its ``report.json`` read back. Each incident and profile is then
classified from what the two runs showed: a **regression** (an item that passed fails, the
delivered guarantee weakens, the declared one breaks, the incident's signature appears), an
**improvement** (the reverse), or **drift** (a symptom moved further than its definition's
``[drift]`` tolerance). Pure logic: no broker, no Spark.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka_replay.definitions.model import PROFILES
from kafka_replay.replay.settings import RunSettings

#: ``key=value`` of a setup and the ``kafka-replay run`` option it becomes.
SETUP_OPTIONS = {
    "kafka": "--kafka-version",
    "protocol": "--group-protocol",
    "backend": "--kafka-backend",
    "bootstrap": "--kafka-bootstrap",
    "client": "--client-library",
}
#: The :class:`Setup` field of each key.
SETUP_FIELDS = {
    "kafka": "kafka",
    "protocol": "protocol",
    "backend": "backend",
    "bootstrap": "bootstrap",
    "client": "client_library",
}
SETTING_PREFIXES = {"client.": "--client-config", "broker.": "--broker-config"}
#: A symptom's relative move that is still noise, unless its definition says otherwise.
DEFAULT_DRIFT = 0.5
#: Delivered guarantees, weakest first; "unknown" (records still unseen) is weakest of all.
VERDICT_STRENGTH = ("unknown", "lossy", "at-most-once", "at-least-once", "exactly-once")
KINDS = ("regression", "improvement", "drift", "not applicable")
DEFAULTS = "(defaults)"


@dataclass(frozen=True)
class Setup:
    """One side of a comparison: what the user wrote, and what it sets."""

    text: str
    kafka: str | None = None
    protocol: str | None = None
    backend: str | None = None
    bootstrap: str | None = None
    client_library: str | None = None  # confluent-kafka==V (Python apps) or kafka-clients==V
    client_config: Mapping[str, Any] = field(default_factory=dict)
    broker_config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def options(self) -> tuple[str, ...]:
        """The same as options of ``kafka-replay run``."""
        options: list[str] = []
        for key, flag in SETUP_OPTIONS.items():
            value = getattr(self, SETUP_FIELDS[key])
            if value is not None:
                options += [flag, value]
        for prefix, settings in (("client.", self.client_config), ("broker.", self.broker_config)):
            for name, value in settings.items():
                options += [SETTING_PREFIXES[prefix], f"{name}={_setting_text(value)}"]
        return tuple(options)

    @property
    def label(self) -> str:
        """The setup in one word, for a pytest id: ``kafka=3.9.2,protocol=consumer``."""
        return "defaults" if self.text == DEFAULTS else ",".join(self.text.split())


def parse_setup(text: str) -> Setup:
    """``"kafka=3.9.2, client.max.poll.records=500"`` as a :class:`Setup`.

    Items are separated by spaces or commas; an unknown key or a bad value is refused here,
    before anything starts, by the run option the item becomes (its own check and message).
    """
    items = [item for item in text.replace(",", " ").split() if item]
    fields: dict[str, Any] = {}
    settings = RunSettings()
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not value:
            raise ValueError(f"setup item {item!r} is not KEY=VALUE ({_known()})")
        prefix = next((p for p in SETTING_PREFIXES if key.startswith(p)), None)
        if prefix is not None:
            option = [SETTING_PREFIXES[prefix], f"{key.removeprefix(prefix)}={value}"]
        elif key in SETUP_OPTIONS:
            option = [SETUP_OPTIONS[key], value]
            fields[SETUP_FIELDS[key]] = value
        else:
            raise ValueError(f"setup item {item!r}: unknown key {key!r} ({_known()})")
        try:
            settings = settings.with_argv(option)
        except ValueError as exc:
            raise ValueError(f"setup item {item}: {exc}") from None
    run = settings.run_options()  # the settings typed as a run types them
    return Setup(
        " ".join(items) or DEFAULTS, **fields, client_config=run.client, broker_config=run.broker
    )


def _setting_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _known() -> str:
    keys = [f"{key}=" for key in SETUP_OPTIONS] + [f"{p}KEY=" for p in SETTING_PREFIXES]
    return "known: " + ", ".join(keys)


@dataclass
class Change:
    kind: str  # regression, improvement or drift
    what: str


@dataclass
class ItemComparison:
    """One incident and profile on both sides, and what changed between them."""

    incident: str
    profile: str
    baseline: dict[str, Any] | None
    candidate: dict[str, Any] | None
    changes: list[Change] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """The gravest change: regression, improvement, drift, or ``same``."""
        found = {change.kind for change in self.changes}
        return next((kind for kind in KINDS if kind in found), "same")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind}


def compare_reports(
    baseline: Mapping[str, Any],
    candidate: Mapping[str, Any],
    drift: Mapping[str, Mapping[str, float]] | None = None,
) -> list[ItemComparison]:
    """Every incident and profile of either ``report.json``, in the baseline's order.

    ``drift`` gives each incident's tolerances (its definition's ``[drift]`` table).
    """
    drift = drift or {}
    before = {(r["incident"], r["profile"]): r for r in baseline["runs"]}
    after = {(r["incident"], r["profile"]): r for r in candidate["runs"]}
    options = baseline.get("options") or {}
    reference_app = not (options.get("app") or options.get("app_image"))
    items = []
    for key in dict.fromkeys([*before, *after]):
        item = ItemComparison(*key, before.get(key), after.get(key))
        if item.baseline is None or item.candidate is None:
            side = "candidate" if item.candidate is None else "baseline"
            item.changes.append(Change("regression", f"not replayed in the {side}"))
        elif not_applicable(item.baseline, item.candidate):
            item.changes = not_applicable(item.baseline, item.candidate)
        else:
            item.changes = changes(
                item.baseline, item.candidate, drift.get(item.incident, {}), reference_app
            )
        items.append(item)
    return items


def not_applicable(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """A side the item does not apply to: nothing to compare, its reason said (not a regression:
    another vendor's broker without a setting the incident needs is a finding, not a break)."""
    return [
        Change("not applicable", f"does not apply to the {side}: {'; '.join(run['reasons'])}")
        for side, run in (("baseline", before), ("candidate", after))
        if run.get("applicable") is False
    ]


def changes(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    tolerances: Mapping[str, float],
    reference_app: bool = True,
) -> list[Change]:
    """What changed for one item, gravest kind first."""
    found: list[Change] = []
    signature_explains = before["profile"] == "vulnerable" and reference_app
    if before.get("reproduced") is False and after.get("reproduced") is True:
        found.append(Change("regression", "the incident's signature now appears"))
    elif before.get("reproduced") is True and after.get("reproduced") is False:
        found.append(Change("improvement", "the incident's signature no longer appears"))
    elif not signature_explains and before["passed"] != after["passed"]:
        kind = "improvement" if after["passed"] else "regression"
        found.append(Change(kind, f"{_status(before)} became {_status(after)}"))
    if signature_explains and after.get("error") and not before.get("error"):
        found.append(Change("regression", f"could not be judged: {after['error']}"))
    strength_before, strength_after = _strength(before["verdict"]), _strength(after["verdict"])
    if strength_before != strength_after:
        kind = "improvement" if strength_after > strength_before else "regression"
        found.append(Change(kind, f"delivered {after['verdict']}, was {before['verdict']}"))
    refused = after.get("refused_versions") or {}
    if refused and not before.get("refused_versions"):  # why the candidate could not judge
        said = ", ".join(f"{what} ({count} times)" for what, count in refused.items())
        found.append(Change("regression", f"the brokers refused the app's client: {said}"))
    if before.get("check") == "pass" and after.get("check") == "fail":
        found.append(Change("regression", f"the declared {after['guarantee']} broke"))
    elif before.get("check") == "fail" and after.get("check") == "pass":
        found.append(Change("improvement", f"the declared {after['guarantee']} holds now"))
    for symptom in dict.fromkeys([*before.get("symptoms", {}), *after.get("symptoms", {})]):
        moved = _moved(
            before.get("symptoms", {}).get(symptom),
            after.get("symptoms", {}).get(symptom),
            tolerances.get(symptom, DEFAULT_DRIFT),
        )
        if moved:
            found.append(Change("drift", f"{symptom} {moved}"))
    return sorted(found, key=lambda change: KINDS.index(change.kind))


def _status(run: Mapping[str, Any]) -> str:
    if run.get("applicable") is False:
        return "not applicable"
    return f"{'passed' if run['passed'] else 'failed'} ({run.get('result', 'not judged')})"


def _strength(verdict: str) -> int:
    return VERDICT_STRENGTH.index(verdict) if verdict in VERDICT_STRENGTH else 0


def _moved(before: Any, after: Any, tolerance: float) -> str | None:
    """How a symptom moved, when it moved beyond ``tolerance`` (relative); else None."""
    if before == after:
        return None
    if before is None or after is None or isinstance(before, bool) or isinstance(after, bool):
        return f"{_shown(before)} -> {_shown(after)}"
    scale = max(abs(before), abs(after), 1.0)
    if abs(after - before) <= tolerance * scale:
        return None
    return f"{_shown(before)} -> {_shown(after)} (beyond {tolerance:.0%})"


def _shown(value: Any) -> str:
    if value is None:
        return "not measured"
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass
class Comparison:
    """One candidate setup against the baseline: where its runs are, and every item."""

    setup: Setup
    report_dir: str
    items: list[ItemComparison]

    @property
    def regressions(self) -> int:
        return sum(item.kind == "regression" for item in self.items)


def comparison_json(
    baseline: Setup, baseline_dir: str, comparisons: Sequence[Comparison]
) -> dict[str, Any]:
    return {
        "baseline": {
            "setup": baseline.text,
            "options": list(baseline.options),
            "report_dir": baseline_dir,
        },
        "candidates": [
            {
                "setup": c.setup.text,
                "options": list(c.setup.options),
                "report_dir": c.report_dir,
                "regressions": c.regressions,
                "items": [item.to_json() for item in c.items],
            }
            for c in comparisons
        ],
        "regressions": sum(c.regressions for c in comparisons),
    }


def comparison_markdown(baseline: Setup, comparisons: Sequence[Comparison]) -> str:
    """The table a person reads in a minute, then every change of every item."""
    if len(comparisons) == 1:
        (only,) = comparisons
        lines = [
            f"# {baseline.text} (baseline) against {only.setup.text} (candidate)",
            "",
            "| incident | profile | baseline | candidate | change |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {i.incident} | {i.profile} | {_cell(i.baseline)} | {_cell(i.candidate)} "
            f"| {i.kind} |"
            for i in only.items
        ]
    else:
        lines = [
            f"# {len(comparisons)} setups against {baseline.text} (baseline)",
            "",
            "| incident | profile | baseline | "
            + " | ".join(c.setup.text for c in comparisons)
            + " |",
            "|---|---|---|" + "---|" * len(comparisons),
        ]
        for row, item in enumerate(comparisons[0].items):
            kinds = [c.items[row].kind if row < len(c.items) else "?" for c in comparisons]
            lines.append(
                f"| {item.incident} | {item.profile} | {_cell(item.baseline)} | "
                + " | ".join(kinds)
                + " |"
            )
    for comparison in comparisons:
        for item in comparison.items:
            if not item.changes:
                continue
            lines += ["", f"## {comparison.setup.text}: {item.incident} [{item.profile}]", ""]
            lines += [f"- {change.kind}: {change.what}" for change in item.changes]
            for side, run in (("baseline", item.baseline), ("candidate", item.candidate)):
                if run is not None:
                    lines.append(f"- {side} run: `{run['run_dir']}`")
    return "\n".join(lines) + "\n"


def _cell(run: Mapping[str, Any] | None) -> str:
    if run is None:
        return "not run"
    return f"{_status(run)}, delivered {run['verdict']}"


def write_comparison(directory: Path, payload: Mapping[str, Any], markdown: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(json.dumps(payload, indent=2, default=str))
    (directory / "report.md").write_text(markdown)


@dataclass(frozen=True)
class Matrix:
    """``compare --matrix FILE``: a baseline, and every combination of the axes as candidates."""

    baseline: Setup
    candidates: tuple[Setup, ...]
    incidents: tuple[str, ...] = ()  # empty: every incident
    profile: str | None = None


def load_matrix(path: Path) -> Matrix:
    """Read a matrix file; a mistake names the file and the key."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    unknown = set(data) - {"baseline", "axes", "incidents", "profile"}
    if unknown:
        raise ValueError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; a matrix has baseline, "
            "axes, incidents and profile"
        )
    axes = data.get("axes")
    if not isinstance(axes, dict) or not axes:
        raise ValueError(f'{path}: [axes] needs at least one axis, e.g. kafka = ["3.9.2", "4.4.0"]')
    for key, values in axes.items():
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str) for v in values)
        ):
            raise ValueError(f"{path}: axes.{key} must be a list of strings")
    incidents = data.get("incidents", [])
    if not isinstance(incidents, list) or not all(isinstance(i, str) for i in incidents):
        raise ValueError(f"{path}: incidents must be a list of names (leave it out for all)")
    try:
        baseline = parse_setup(str(data.get("baseline", "")))
        candidates = tuple(
            parse_setup(
                " ".join(f"{key}={value}" for key, value in zip(axes, combination, strict=True))
            )
            for combination in itertools.product(*axes.values())
        )
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    profile = data.get("profile")
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"{path}: profile must be one of {', '.join(PROFILES)}")
    return Matrix(baseline, candidates, tuple(incidents), profile)
