#!/usr/bin/env bash
# Runs every test that exists: the C tests in the release and the ASan+UBSan builds, then
# every component's suite (ci/test-<name>.sh — among them ci/test-packages.sh, every artifact
# installed and run outside the checkout —, the load generator's test, make bench's
# orchestrator test). Called by `make test` after both builds.
#
# The component suites use disjoint port ranges (ci/lib.sh's port map), so they run in
# parallel: SL_TEST_JOBS at a time (default: the cores plus one — two suites left the 2 cores
# idle about a quarter of the time, waiting on their servers and on events; a third fills
# it), in the order below. Each suite's output goes to its own log, printed whole when the
# suite ends; a failed suite does not stop the others, and the run fails at the end naming
# every failed suite.
#   ci/test.sh                 everything
#   ci/test.sh --suite NAME    one suite with its log (what the parallel runner calls)
SL_SUITE=test
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"

# name -> command; the order is the start order. packages builds and installs the python,
# node, java and csharp packages from their folders (python/build, java/target,
# node/vendor/core, the venv), so it starts only after those four suites ended; it is the
# longest suite (~230 s) and so the critical path: those four go first, packages starts the
# moment they are done, and the other suites (longest first) fill the other slots meanwhile.
# With the suites' times of a fresh-clone run (packages 230, rust 142, python 140, go 129,
# server 114, core-integration 107, java 98, node 87, csharp 65, ...) this list scheduler
# ends at ~585 s on two slots where the old longest-first order that started packages late
# ended at ~597 s (and at ~392 s against ~457 s on three, had three not slowed each other).
suites=(python java node csharp packages rust go server core-integration conformance spec load load-asan bench)
after_packages=(python node java csharp)
suite_cmd() {
  case $1 in
    load) echo "bash bench/load/test_load.sh" ;;
    load-asan) echo "env SL_BUILD_DIR=build-asan SL_LOAD_PORT_BASE=26350 bash bench/load/test_load.sh" ;;
    bench) echo "python3 bench/test_run.py" ;;
    *) echo "bash ci/test-$1.sh" ;;
  esac
}

if [ "${1:-}" = --suite ]; then
  name=$2 log=$3/$2.log
  t0=$(date +%s)
  if $(suite_cmd "$name") >"$log" 2>&1; then result=passed; else result=FAILED; touch "$3/$name.failed"; fi
  secs=$(( $(date +%s) - t0 ))
  echo "$name $secs" >> "$3/times"
  { flock 9
    printf '\n=== %s (%s in %d s) ===\n' "$name" "$result" "$secs"
    cat "$log"
  } 9>"$3/print.lock"
  exit 0
fi

T0=$(date +%s)
step "C tests (release build)"
ctest --test-dir build --output-on-failure -j2
step "C tests (ASan + UBSan build)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2
step "C tests (ThreadSanitizer build: test_cq, test_scan, test_pubsub, test_lease, test_lease_async — the loop thread, completion queues, scans paged on it, the subscriber's thread, leased connections cancelled from other threads; test_async's wall-clock deadlines are too tight for TSan's slowdown on a busy machine)"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure -j2 -R '^core_test_(cq|scan|pubsub|lease|lease_async)$'

LOGS=$(mktemp -d /tmp/slotlane-test.XXXXXX)
sl_on_exit "rm -rf '$LOGS'"
jobs=${SL_TEST_JOBS:-$(( $(nproc) + 1 ))}
present=()
for name in "${suites[@]}"; do
  case $name in load*|bench) present+=("$name") ;; *) [ -f "ci/test-$name.sh" ] && present+=("$name") ;; esac
done
step "component suites, $jobs at a time: ${present[*]}"
declare -A pid_of=()
ready() {  # ready NAME: may start now
  local d
  [ "$1" = packages ] || return 0
  for d in "${after_packages[@]}"; do
    [ -z "${pid_of[$d]:-}" ] && [[ " ${present[*]} " == *" $d "* ]] && return 1
    [ -n "${pid_of[$d]:-}" ] && kill -0 "${pid_of[$d]}" 2>/dev/null && return 1
  done
  return 0
}
waiting=("${present[@]}")
while [ ${#waiting[@]} -gt 0 ]; do
  if [ "$(jobs -rp | wc -l)" -lt "$jobs" ]; then
    started=""
    for i in "${!waiting[@]}"; do
      name=${waiting[$i]}
      if ready "$name"; then
        bash "$0" --suite "$name" "$LOGS" &
        pid_of[$name]=$!
        unset 'waiting[$i]'
        waiting=("${waiting[@]}")
        started=1
        break
      fi
    done
    [ -n "$started" ] && continue
  fi
  wait -n || true  # a suite ended (its result is in $LOGS): a slot is free
done
wait

echo
echo "suite times (s): $(sort -k2 -n -r "$LOGS/times" | tr '\n' ' ')"
echo "make test's tests took $(( $(date +%s) - T0 )) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
failed=""
for f in "$LOGS"/*.failed; do [ -e "$f" ] && failed+="$(basename "$f" .failed) "; done
[ -z "$failed" ] || die "FAILED: $failed(their logs are above)"
echo "all tests passed"
