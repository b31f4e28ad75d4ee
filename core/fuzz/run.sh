#!/usr/bin/env bash
# make fuzz (after the server's targets): builds the core's libFuzzer targets with clang in
# build-fuzz/ and runs each for FUZZ_SECONDS (default 60), starting from the checked-in
# corpus, with the RESP dictionary. New inputs are written to build-fuzz/fuzz-new/core-<target>/
# and merged into core/fuzz/corpus/<target>/ only when they reach a new edge (-merge=1
# -use_counters=0), so the corpus stays small. A crash stops the run with the input under
# build-fuzz/artifacts/core-<target>/: reproduce it with `build-fuzz/core/fuzz_core_<target> FILE`,
# fix it, and copy the file into core/fuzz/regressions/<target>/ (ctest replays it in every build).
#
#   FUZZ_SECONDS=300 FUZZ_CORE_TARGETS="reply scan" bash core/fuzz/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_CORE_TARGETS:-"reply topology url scan"}   # not FUZZ_TARGETS: that one is the server's
JOBS=${JOBS:-2}
command -v clang >/dev/null || { echo "fuzz: clang is required (apt-get install clang)" >&2; exit 1; }

CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSL_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$JOBS" --target $(for t in $TARGETS; do printf 'fuzz_core_%s ' "$t"; done)

for t in $TARGETS; do
  bin=build-fuzz/core/fuzz_core_$t
  corpus=core/fuzz/corpus/$t
  new=build-fuzz/fuzz-new/core-$t
  art=build-fuzz/artifacts/core-$t
  log=build-fuzz/fuzz-core-$t.log
  mkdir -p "$new" "$art" "$corpus"
  echo "--- fuzz_core_$t for ${SECONDS_EACH}s (corpus $(ls "$corpus" | wc -l) inputs)"
  # new inputs go to the first directory; the checked-in corpus and the regressions seed it
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 nice -n 10 "$bin" -dict=core/fuzz/resp.dict \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
      -artifact_prefix="$art/" "$new" "$corpus" "core/fuzz/regressions/$t" 2>"$log"; then
    tail -n 60 "$log" >&2
    echo "fuzz: fuzz_core_$t found a failure; input(s): $(ls "$art")" >&2
    exit 1
  fi
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+.*DONE' "$log" || true
  before=$(ls "$corpus" | wc -l)
  # kept only when it reaches a new edge (not a new hit count): the corpus stays small
  "$bin" -merge=1 -use_counters=0 "$corpus" "$new" >>"$log" 2>&1
  echo "fuzz_core_$t: no failure; corpus $before -> $(ls "$corpus" | wc -l) inputs ($(cat "$corpus"/* | wc -c) bytes)"
done
