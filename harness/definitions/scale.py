"""An incident at N times its records: the same conditions, more data for the checker.

Scaling works on the definition's own tables before they are checked: every workload's record
counts and rate (so the stream lasts as long as before), and the steps that wait for records
(``count``, ``timeout_s``, ``budget_s``, also where ``[your_app.steps]`` sets them anew), are
multiplied; faults, idle periods and the broker and client settings stay as they are.
"""

from __future__ import annotations

from typing import Any

#: Workload parameters that count records, or records per second.
WORKLOAD_KEYS = ("count", "before", "after", "runs", "rate")
#: Step fields that wait for records.
STEP_KEYS = ("count", "timeout_s", "budget_s")


def scale_definition(data: dict[str, Any], factor: int) -> dict[str, Any]:
    """The raw definition (its TOML tables) with ``factor`` times the records."""
    if factor == 1:
        return data
    scaled = dict(data)
    scaled["workloads"] = _scaled_workloads(data.get("workloads"), factor)
    scaled["steps"] = [_scaled_step(step, factor) for step in data.get("steps", [])]
    mine = data.get("your_app")
    if isinstance(mine, dict) and isinstance(mine.get("steps"), dict):
        steps = {do: _scaled_step(fields, factor) for do, fields in mine["steps"].items()}
        scaled["your_app"] = {**mine, "steps": steps}
    profiles = data.get("profiles")
    if isinstance(profiles, dict):
        scaled["profiles"] = {
            name: {**table, "workloads": _scaled_workloads(table.get("workloads"), factor)}
            if isinstance(table, dict) and "workloads" in table
            else table
            for name, table in profiles.items()
        }
    if scaled["workloads"] is None:
        del scaled["workloads"]
    return scaled


def _scaled_step(step: Any, factor: int) -> Any:
    """A step's table (or ``[your_app.steps]``' fields for one) with its waits for records
    multiplied."""
    if not isinstance(step, dict):
        return step
    return {k: _times(v, factor) if k in STEP_KEYS else v for k, v in step.items()}


def _scaled_workloads(workloads: Any, factor: int) -> Any:
    if not isinstance(workloads, dict):
        return workloads
    return {
        name: {k: _times(v, factor) if k in WORKLOAD_KEYS else v for k, v in table.items()}
        if isinstance(table, dict)
        else table
        for name, table in workloads.items()
    }


def _times(value: Any, factor: int) -> Any:
    """Numbers multiplied; anything else (a mistake the reader will name) left alone."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return value * factor
