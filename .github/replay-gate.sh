#!/usr/bin/env bash
# The action's replay step: kafka-replay run from the action's inputs (REPLAY_* variables, so
# no input is ever pasted into a script), its exit code kept for the gate step that follows
# the upload of the report.
set -uo pipefail

report="${RUNNER_TEMP:-/tmp}/kafka-replay-report"
args=(run --report "$report" --junit "$report/junit.xml" --jobs "${REPLAY_JOBS:-2}")
if [ "${REPLAY_INCIDENTS:-all}" = all ]; then
  args+=(--all)
else
  read -r -a names <<< "$REPLAY_INCIDENTS"
  args+=("${names[@]}")
fi
for dir in ${REPLAY_INCIDENT_DIRS:-}; do args+=(--incidents "$dir"); done
[ -n "${REPLAY_APP:-}" ] && args+=(--app "$REPLAY_APP")
[ -n "${REPLAY_GUARANTEE:-}" ] && args+=(--guarantee "$REPLAY_GUARANTEE")
[ -n "${REPLAY_PROFILE:-}" ] && args+=(--profile "$REPLAY_PROFILE")
[ -n "${REPLAY_KAFKA_VERSION:-}" ] && args+=(--kafka-version "$REPLAY_KAFKA_VERSION")
[ -n "${REPLAY_GROUP_PROTOCOL:-}" ] && args+=(--group-protocol "$REPLAY_GROUP_PROTOCOL")
[ -n "${REPLAY_OUTPUT_ID:-}" ] && args+=(--output-id "$REPLAY_OUTPUT_ID")
[ -n "${REPLAY_RESTART:-}" ] && args+=(--restart "$REPLAY_RESTART")

echo "kafka-replay ${args[*]}"
# the team's modules (an output-id hook, a module:function app) are found from here
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" kafka-replay "${args[@]}"
status=$?
{
  echo "report-dir=$report"
  echo "junit=$report/junit.xml"
  echo "exit-code=$status"
} >> "${GITHUB_OUTPUT:-/dev/null}"
exit 0
