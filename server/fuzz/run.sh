#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets with clang in build-fuzz/ and runs each for
# FUZZ_SECONDS (default 60), starting from the checked-in corpus. New inputs are found
# in build-fuzz/fuzz-new/<target>/ and merged into server/fuzz/corpus/<target>/ only
# when they reach a new edge (-merge=1 -use_counters=0), so the corpus stays small. A crash stops
# the run with the input under build-fuzz/artifacts/<target>/: reproduce it with
# `build-fuzz/server/fuzz_<target> FILE`, fix it, and copy the file into
# server/fuzz/regressions/<target>/ (ctest replays it in every build).
#
#   FUZZ_SECONDS=600 FUZZ_TARGETS="command" bash server/fuzz/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"proto command stream eval"}
JOBS=${JOBS:-2}
command -v clang >/dev/null || { echo "fuzz: clang is required (apt-get install clang)" >&2; exit 1; }

CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSV_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$JOBS" --target $(for t in $TARGETS; do printf 'fuzz_%s ' "$t"; done)

for t in $TARGETS; do
  bin=build-fuzz/server/fuzz_$t
  corpus=server/fuzz/corpus/$t
  new=build-fuzz/fuzz-new/$t
  art=build-fuzz/artifacts/$t
  mkdir -p "$new" "$art" "$corpus"
  dict=()
  [ -f "server/fuzz/$t.dict" ] && dict=(-dict="server/fuzz/$t.dict")
  echo "--- fuzz_$t for ${SECONDS_EACH}s (corpus $(ls "$corpus" | wc -l) inputs)"
  # new inputs go to the first directory; the checked-in corpus and the regressions seed it
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$bin" "${dict[@]}" -max_total_time="$SECONDS_EACH" \
      -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -artifact_prefix="$art/" \
      "$new" "$corpus" "server/fuzz/regressions/$t" 2>"build-fuzz/fuzz-$t.log"; then
    tail -n 60 "build-fuzz/fuzz-$t.log" >&2
    echo "fuzz: fuzz_$t found a failure; input(s): $(ls "$art")" >&2
    exit 1
  fi
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+.*DONE' "build-fuzz/fuzz-$t.log" || true
  before=$(ls "$corpus" | wc -l)
  # kept only when it reaches a new edge (not a new hit count): the checked-in corpus
  # stays small, and each run regrows the counter features from it in seconds
  "$bin" -merge=1 -use_counters=0 "$corpus" "$new" >>"build-fuzz/fuzz-$t.log" 2>&1
  echo "fuzz_$t: no failure; corpus $before -> $(ls "$corpus" | wc -l) inputs ($(cat "$corpus"/* | wc -c) bytes)"
done
