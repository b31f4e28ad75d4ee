#!/usr/bin/env bash
# Runs every test that exists: the C tests in the release and the ASan+UBSan builds, then
# each component's own test script. Called by `make test` after both builds.
set -euo pipefail
cd "$(dirname "$0")/.."
export SL_ROOT=$PWD

step() { printf '\n=== %s ===\n' "$*"; }

step "C tests (release build)"
ctest --test-dir build --output-on-failure -j2
step "C tests (ASan + UBSan build)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2

# Each component with its own test runner has ci/test-<name>.sh; run them in a fixed order.
for name in server core-integration spec conformance python rust go node java csharp; do
  script=ci/test-$name.sh
  if [ -f "$script" ]; then
    step "$name"
    bash "$script"
  fi
done
step "slotlane-load (release and ASan builds)"
bash bench/load/test_load.sh
SL_BUILD_DIR=build-asan bash bench/load/test_load.sh
step "make bench's orchestrator and charts (bench/run.py, bench/report.py)"
python3 bench/test_run.py
echo
echo "all tests passed"
