"""JUnit XML for CI systems: one test case per incident and profile.

CI servers (GitHub, GitLab, Jenkins) already know how to show JUnit files, so a replay's
items appear beside the team's other tests: a failed item carries its reasons and key
symptoms, an item whose run broke (app would not start, checker failed) is an error, and an
item that does not apply to the cluster (another vendor's broker without a setting the incident
needs) is skipped with the reason.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

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
