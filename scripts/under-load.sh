#!/usr/bin/env bash
# Times a command beside K busy processes: how the tools themselves behave on
# a shared machine (docs/benchmarks.md, "Under CPU contention").
#   scripts/under-load.sh K COMMAND [ARGS...]
# The K busy loops start before COMMAND (so its start-up look sees them) and
# are stopped by their ids afterwards. Prints COMMAND's wall seconds on stdout;
# COMMAND's own stdout goes to stderr. Exits with COMMAND's status.
set -euo pipefail
if [ $# -lt 2 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/under-load.sh K COMMAND [ARGS...]  (K busy processes beside COMMAND)" >&2
  exit 2
fi
k="$1"
shift
pids=()
stop_load() {
  [ ${#pids[@]} -eq 0 ] && return
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true   # gone, not just signalled, when the script ends
}
trap stop_load EXIT
for ((i = 0; i < k; i++)); do
  ( trap - EXIT; while :; do :; done ) &
  pids+=($!)
done
[ "$k" -eq 0 ] || sleep 0.5   # let the scheduler see them running
start=$(date +%s.%N)
status=0
"$@" >&2 || status=$?
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
exit "$status"
