#!/usr/bin/env bash
# The action's replay and gate steps.
#
#   replay-gate.sh        `kafka-replay run`, or `kafka-replay compare` when a baseline, a
#                         candidate or a matrix is given, built from the action's inputs
#   replay-gate.sh gate   one annotation per failed item of the report, then the verdict
#
# The inputs come in as REPLAY_* environment variables, never pasted into a script, and become one
# argument array (lists are split on blanks and newlines, with no glob expansion). The replay's
# exit code goes to $GITHUB_OUTPUT and the replay exits 0, so that the report is uploaded before
# the gate step fails the job. REPLAY_DRY_RUN=1 prints the command, then its arguments one a
# line, and runs nothing.
set -uo pipefail
REPLAY_ALLOW_NOT_APPLICABLE="${REPLAY_ALLOW_NOT_APPLICABLE:-false}"

report="${REPLAY_REPORT:-${RUNNER_TEMP:-/tmp}/kafka-replay-report}"

# The gate: reads the report the replay wrote (report.json: a run's or a comparison's) and prints
# `::error title=kafka-replay: INCIDENT [PROFILE]::REASONS` per failed item and a summary line;
# fails the step unless the replay exited 0 (1: a run failed or a regression, 2: a run could not
# be judged or the input was refused).
gate() {
  local status="${STATUS:-none}" python
  python=$(command -v python || command -v python3)
  if [ -s "$report/report.json" ] && [ -n "$python" ]; then
    "$python" - "$report/report.json" <<'PY'
import json
import sys


def data(text):
    """A workflow command's message: GitHub reads %, CR and LF escaped."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def prop(text):
    """A workflow command's property (the title): a comma or colon would end it."""
    return data(text).replace(":", "%3A").replace(",", "%2C")


def annotate(incident, profile, reasons):
    title = "kafka-replay: " + prop(f"{incident} [{profile}]")
    print(f"::error title={title}::{data('; '.join(reasons))}")


with open(sys.argv[1], encoding="utf-8") as file:
    report = json.load(file)
if "candidates" in report:  # kafka-replay compare
    several = len(report["candidates"]) > 1
    items = 0
    for candidate in report["candidates"]:
        for item in candidate["items"]:
            items += 1
            if item["kind"] != "regression":
                continue
            reasons = [f"{c['kind']}: {c['what']}" for c in item["changes"]]
            if several:
                reasons.insert(0, f"candidate {candidate['setup']}")
            annotate(item["incident"], item["profile"], reasons)
    setups = len(report["candidates"])
    print(
        f"kafka-replay compare: {report['regressions']} regression(s) in {items} item(s) of "
        f"{setups} candidate setup(s) against {report['baseline']['setup']}"
    )
else:  # kafka-replay run
    runs = report.get("runs", [])
    failed = [run for run in runs if run.get("gate") == "FAIL" or run.get("error")]
    for run in failed:
        reasons = list(run.get("reasons") or [])
        if run.get("error"):
            first = next((line for line in str(run["error"]).splitlines() if line.strip()), "")
            reasons.append(f"error in {run.get('failed_stage') or 'the run'}: {first}")
        annotate(run["incident"], run["profile"], reasons or [run.get("result", "failed")])
    errors = sum(1 for run in failed if run.get("error"))
    print(
        f"kafka-replay run: {len(failed)} of {len(runs)} run(s) failed ({errors} could not be "
        "judged)"
    )
PY
  fi
  case "$status" in
    0) echo "kafka-replay: passed" ;;
    1) echo "::error title=kafka-replay::failed (a guarantee broke, the app is vulnerable, a fix did not cure the incident, or a comparison found a regression): see the job summary and the report artifact"
       return 1 ;;
    2) echo "::error title=kafka-replay::a run could not be judged, or the input was refused: see the log of the replay step and the report artifact"
       return 1 ;;
    none) echo "::error title=kafka-replay::the incidents were not replayed: a step before the replay failed"
       return 1 ;;
    *) echo "::error title=kafka-replay::kafka-replay exited with $status"
       return 1 ;;
  esac
}

if [ "${1:-}" = gate ]; then
  gate
  exit
fi

junit="${REPLAY_JUNIT:-$report/junit.xml}"
if [ -n "${REPLAY_BASELINE:-}${REPLAY_CANDIDATE:-}${REPLAY_MATRIX:-}" ]; then
  mode=compare
else
  mode=run
fi
args=("$mode" --report "$report" --junit "$junit")
if [ "$mode" = compare ]; then
  [ -n "${REPLAY_BASELINE:-}" ] && args+=(--baseline "$REPLAY_BASELINE")
  [ -n "${REPLAY_CANDIDATE:-}" ] && args+=(--candidate "$REPLAY_CANDIDATE")
  [ -n "${REPLAY_MATRIX:-}" ] && args+=(--matrix "$REPLAY_MATRIX")
fi

# `read -a` splits on blanks and newlines and expands no glob
read -r -d '' -a names < <(printf '%s' "${REPLAY_INCIDENTS:-all}")
if [ "${#names[@]}" = 0 ] || [ "${names[*]}" = all ]; then
  # a matrix names its incidents, or covers them all, by itself
  [ -n "${REPLAY_MATRIX:-}" ] || args+=(--all)
else
  args+=("${names[@]}")
fi
read -r -d '' -a dirs < <(printf '%s' "${REPLAY_INCIDENT_DIRS:-}")
for dir in "${dirs[@]}"; do args+=(--incidents "$dir"); done
# an image's arguments may start with a dash: given as --app=VALUE, never read as an option
case "${REPLAY_APP:-}" in "") ;; -*) args+=("--app=$REPLAY_APP") ;; *) args+=(--app "$REPLAY_APP") ;; esac
[ -n "${REPLAY_APP_IMAGE:-}" ] && args+=(--app-image "$REPLAY_APP_IMAGE")
[ -n "${REPLAY_GUARANTEE:-}" ] && args+=(--guarantee "$REPLAY_GUARANTEE")
[ -n "${REPLAY_PROFILE:-}" ] && args+=(--profile "$REPLAY_PROFILE")
[ -n "${REPLAY_KAFKA_VERSION:-}" ] && args+=(--kafka-version "$REPLAY_KAFKA_VERSION")
[ -n "${REPLAY_BACKEND:-}" ] && args+=(--kafka-backend "$REPLAY_BACKEND")
[ -n "${REPLAY_GROUP_PROTOCOL:-}" ] && args+=(--group-protocol "$REPLAY_GROUP_PROTOCOL")
[ -n "${REPLAY_OUTPUT_ID:-}" ] && args+=(--output-id "$REPLAY_OUTPUT_ID")
[ -n "${REPLAY_PAYLOAD:-}" ] && args+=(--payload "$REPLAY_PAYLOAD")
[ -n "${REPLAY_EXPECT:-}" ] && args+=(--expect "$REPLAY_EXPECT")
[ -n "${REPLAY_RESTART:-}" ] && args+=(--restart "$REPLAY_RESTART")
[ -n "${REPLAY_SCALE:-}" ] && args+=(--scale "$REPLAY_SCALE")
[ -n "${REPLAY_CLIENT_LIBRARY:-}" ] && args+=(--client-library "$REPLAY_CLIENT_LIBRARY")
read -r -d '' -a items < <(printf '%s' "${REPLAY_CLIENT_CONFIG:-}")
for item in "${items[@]}"; do args+=(--client-config "$item"); done
read -r -d '' -a items < <(printf '%s' "${REPLAY_BROKER_CONFIG:-}")
for item in "${items[@]}"; do args+=(--broker-config "$item"); done
[ -n "${REPLAY_JOBS:-}" ] && args+=(--jobs "$REPLAY_JOBS")
[ -n "${REPLAY_SHARD:-}" ] && args+=(--shard "$REPLAY_SHARD")
[ "${REPLAY_ALLOW_NOT_APPLICABLE,,}" = true ] && args+=(--allow-not-applicable)

printf 'kafka-replay'; printf ' %q' "${args[@]}"; printf '\n'
if [ -n "${REPLAY_DRY_RUN:-}" ]; then
  printf '%s\n' "${args[@]}"
  exit 0
fi
# the team's modules (an output-id hook, a module:function app) are imported from here
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" kafka-replay "${args[@]}"
status=$?
{
  echo "report-dir=$report"
  echo "junit=$junit"
  echo "exit-code=$status"
} >> "${GITHUB_OUTPUT:-/dev/null}"
exit 0
