#!/usr/bin/env bash
# The action's replay step: `kafka-replay run` built from the action's inputs. The inputs come in
# as REPLAY_* environment variables, never pasted into a script, and become one argument array
# (lists are split on blanks and newlines, with no glob expansion). The exit code goes to
# $GITHUB_OUTPUT and the script exits 0, so that the report is uploaded before the action's last
# step fails the job.
set -uo pipefail

report="${REPLAY_REPORT:-${RUNNER_TEMP:-/tmp}/kafka-replay-report}"
junit="${REPLAY_JUNIT:-$report/junit.xml}"
args=(run --report "$report" --junit "$junit")

# `read -a` splits on blanks and newlines and expands no glob
read -r -d '' -a names < <(printf '%s' "${REPLAY_INCIDENTS:-all}")
if [ "${names[*]}" = all ]; then
  args+=(--all)
else
  args+=("${names[@]}")
fi
read -r -d '' -a dirs < <(printf '%s' "${REPLAY_INCIDENT_DIRS:-}")
for dir in "${dirs[@]}"; do args+=(--incidents "$dir"); done
[ -n "${REPLAY_APP:-}" ] && args+=(--app "$REPLAY_APP")
[ -n "${REPLAY_GUARANTEE:-}" ] && args+=(--guarantee "$REPLAY_GUARANTEE")
[ -n "${REPLAY_PROFILE:-}" ] && args+=(--profile "$REPLAY_PROFILE")
[ -n "${REPLAY_KAFKA_VERSION:-}" ] && args+=(--kafka-version "$REPLAY_KAFKA_VERSION")
[ -n "${REPLAY_GROUP_PROTOCOL:-}" ] && args+=(--group-protocol "$REPLAY_GROUP_PROTOCOL")
[ -n "${REPLAY_OUTPUT_ID:-}" ] && args+=(--output-id "$REPLAY_OUTPUT_ID")
[ -n "${REPLAY_RESTART:-}" ] && args+=(--restart "$REPLAY_RESTART")
[ -n "${REPLAY_JOBS:-}" ] && args+=(--jobs "$REPLAY_JOBS")

printf 'kafka-replay'; printf ' %q' "${args[@]}"; printf '\n'
# the team's modules (an output-id hook, a module:function app) are imported from here
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" kafka-replay "${args[@]}"
status=$?
{
  echo "report-dir=$report"
  echo "junit=$junit"
  echo "exit-code=$status"
} >> "${GITHUB_OUTPUT:-/dev/null}"
exit 0
