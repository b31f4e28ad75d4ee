#!/usr/bin/env bash
# ci/under-load.sh RUNS COMMAND...: runs COMMAND RUNS times in a row while two busy loops
# (`yes > /dev/null`, one per core of this 2-core machine) load the CPUs, and stops at
# the first failure. It proves that a suite's verdicts come from events, not from timing:
# a test that passes only on a quiet machine fails here. The loaders are started here and
# stopped by their PIDs at the end, also on failure or interrupt.
#   bash ci/under-load.sh 20 go test -race -count=1 ./...     (from go/)
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 RUNS COMMAND..." >&2; exit 2; }
runs=$1; shift
loaders=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${loaders[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${loaders[@]}"; do wait "$pid" 2>/dev/null || true; done
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in 1 2; do
  yes > /dev/null &
  loaders+=($!)
done
echo "under-load: loaders ${loaders[*]} started; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  start=$(date +%s)
  if ! "$@" > /tmp/under-load.$$.out 2>&1; then
    cat /tmp/under-load.$$.out
    echo "under-load: run $i of $runs FAILED (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    rm -f /tmp/under-load.$$.out
    exit 1
  fi
  echo "under-load: run $i of $runs passed in $(( $(date +%s) - start )) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
rm -f /tmp/under-load.$$.out
echo "under-load: $runs of $runs runs passed"
