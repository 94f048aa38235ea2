"""JUnit XML for CI systems: one test case per incident and profile.

CI servers (GitHub, GitLab, Jenkins) already know how to show JUnit files, so a replay's
items appear beside the team's other tests: a failed item carries its reasons and key
symptoms, an item whose run broke (app would not start, checker failed) is an error, and an
item that does not apply to the cluster (another vendor's broker without a setting the incident
needs) is skipped with the reason. ``kafka-replay compare`` writes one test case per incident,
profile and candidate setup: a regression is a failure whose message is its changes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .outcome import Outcome

SUITE = "kafka-replay"


def _case(outcome: Outcome) -> ET.Element:
    case = ET.Element(
        "testcase",
        classname=f"{SUITE}.{outcome.incident}",
        name=outcome.profile,
        time=f"{outcome.duration_s:.3f}",
    )
    details = outcome.explain()
    if not outcome.applicable:
        ET.SubElement(case, "skipped", message="; ".join(outcome.reasons))
    elif outcome.error:
        error = ET.SubElement(
            case, "error", message=f"error in {outcome.failed_stage}: {outcome.error}"
        )
        error.text = details
    elif not outcome.passed:
        failure = ET.SubElement(
            case, "failure", message=f"{outcome.result}: " + "; ".join(outcome.reasons)
        )
        failure.text = details
    ET.SubElement(case, "system-out").text = details
    return case


def junit_xml(outcomes: Sequence[Outcome]) -> ET.ElementTree:
    """The replay as one ``<testsuite>`` inside ``<testsuites>``."""
    counts = {
        "tests": str(len(outcomes)),
        "failures": str(sum(1 for o in outcomes if o.gate == "FAIL" and not o.error)),
        "errors": str(sum(1 for o in outcomes if o.error)),
        "skipped": str(sum(1 for o in outcomes if not o.applicable)),
        "time": f"{sum(o.duration_s for o in outcomes):.3f}",
    }
    root = ET.Element("testsuites", name=SUITE, **counts)
    suite = ET.SubElement(root, "testsuite", name=SUITE, **counts)
    suite.extend(_case(o) for o in outcomes)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: Path, outcomes: Sequence[Outcome]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_xml(outcomes).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _candidate_s(item: Mapping[str, Any]) -> float:
    """How long the candidate's run took (0 when it was not run)."""
    return float((item.get("candidate") or {}).get("duration_s") or 0)


def _comparison_case(item: Mapping[str, Any], setup: str) -> ET.Element:
    """One incident and profile of one candidate: a regression fails, with its changes."""
    case = ET.Element(
        "testcase",
        classname=f"{SUITE}.{item['incident']}",
        name=f"{item['profile']} [{setup}]",
        time=f"{_candidate_s(item):.3f}",
    )
    changes = [f"{change['kind']}: {change['what']}" for change in item["changes"]]
    details = "\n".join(changes) or "the same on both setups"
    if item["kind"] == "regression":
        failure = ET.SubElement(case, "failure", message="; ".join(changes), type="regression")
        failure.text = details
    elif item["kind"] == "not applicable":
        ET.SubElement(case, "skipped", message="; ".join(changes))
    ET.SubElement(case, "system-out").text = details
    return case


def comparison_junit_xml(payload: Mapping[str, Any]) -> ET.ElementTree:
    """``kafka-replay compare``'s report (its ``report.json``) as JUnit: a ``<testsuite>`` per
    candidate setup, a test case per incident and profile in it."""

    def counts(cases: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        return {
            "tests": str(len(cases)),
            "failures": str(sum(item["kind"] == "regression" for item in cases)),
            "errors": "0",
            "skipped": str(sum(item["kind"] == "not applicable" for item in cases)),
            "time": f"{sum(_candidate_s(item) for item in cases):.3f}",
        }

    candidates = payload["candidates"]
    every = [item for candidate in candidates for item in candidate["items"]]
    root = ET.Element("testsuites", name=f"{SUITE} compare", **counts(every))
    for candidate in candidates:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{SUITE}: {payload['baseline']['setup']} against {candidate['setup']}",
            **counts(candidate["items"]),
        )
        suite.extend(_comparison_case(item, candidate["setup"]) for item in candidate["items"])
    ET.indent(root)
    return ET.ElementTree(root)


def write_comparison_junit(path: Path, payload: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    comparison_junit_xml(payload).write(path, encoding="utf-8", xml_declaration=True)
    return path
