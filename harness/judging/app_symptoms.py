"""Symptoms of the app's instances as the supervisor saw them: restarts, crash loops, the time
they spent down and the SIGKILLs sent to them, from the run's lifecycle stream (any app).
"""

from __future__ import annotations

from kafka_replay.definitions.vocabulary import symptom
from kafka_replay.report.outcome import Value

from .evidence import Evidence, instance_of


@symptom
def app_restarts(evidence: Evidence) -> Value:
    """Times the supervisor restarted an app instance after it died."""
    return sum(1 for e in evidence.lifecycle if e["kind"] == "start" and e.get("restart"))


@symptom
def crash_loops(evidence: Evidence) -> Value:
    """Times an instance entered a crash loop (kept dying young; restarted with back-off)."""
    return sum(1 for e in evidence.lifecycle if e["kind"] == "crash_loop")


@symptom
def app_down_s(evidence: Evidence) -> Value:
    """Seconds instances spent down between an unexpected exit and their next start."""
    down, exited = 0.0, {}
    for event in evidence.lifecycle:
        if event["kind"] == "exit" and not event.get("expected"):
            exited[instance_of(event)] = event["ts"]
        elif event["kind"] == "start" and instance_of(event) in exited:
            down += event["ts"] - exited.pop(instance_of(event))
    return round(down, 2)


@symptom
def kills(evidence: Evidence) -> Value:
    """SIGKILLs sent to app instances."""
    return sum(1 for e in evidence.lifecycle if e["kind"] == "signal" and e["signal"] == "SIGKILL")
