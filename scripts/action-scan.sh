#!/usr/bin/env bash
# The scan step of action.yml, in a file so that the tests run it as the action does. Inputs come
# as environment variables: DUALTRACK_PATH (folder), DUALTRACK_ARGS (more scan options, split on
# spaces), DUALTRACK_FAIL_ON (severity), DUALTRACK_SARIF (file to write). GitHub provides
# GITHUB_STEP_SUMMARY (Markdown appended to the job's page). Exit status: dualtrack's own
# (0 clean, 1 findings at or above DUALTRACK_FAIL_ON, 2 bad input).
set -uo pipefail
path=${DUALTRACK_PATH:-.}
fail_on=${DUALTRACK_FAIL_ON:-fixable}
read -r -a extra <<< "${DUALTRACK_ARGS:-}"

# SARIF for code scanning and the Markdown summary never fail the step; bad input (exit 2) does.
dualtrack scan "$path" "${extra[@]}" --format sarif -o "${DUALTRACK_SARIF:-dualtrack.sarif}" --fail-on never || exit $?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  dualtrack scan "$path" "${extra[@]}" --format markdown --fail-on never >> "$GITHUB_STEP_SUMMARY" || exit $?
fi
# Annotations on the lines, and the verdict of the step.
dualtrack scan "$path" "${extra[@]}" --format github --fail-on "$fail_on"
status=$?
if [ "$status" -eq 1 ]; then
  echo "dualtrack: findings at or above '$fail_on' (see the annotations and the job summary)" >&2
fi
exit "$status"
