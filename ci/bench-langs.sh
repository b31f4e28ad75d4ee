#!/usr/bin/env bash
# ci/bench-langs.sh — every binding's cluster-cost runner, one after another, alone.
#
#   ci/bench-langs.sh [--full] [--langs python,rust,go,node,java,csharp]
#
# Each binding's runner standalone (`make bench` is bench/run.py, which runs the same runners
# against one slotlane-server it starts and writes one combined record). Each runner starts and stops its own
# servers (clients pinned to CPU 0, servers to CPU 1), checks every reply, prints its table
# and writes its JSON record to bench/records/ (its binding's README documents it). By
# default each runs its --quick form (one short round) so that `make bench` stays under
# 15 minutes; --full runs their default rounds (about 40 minutes in all). A runner that
# fails is reported and the others still run; the exit code is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
langs=python,rust,go,node,java,csharp
quick=(--quick)
while [ $# -gt 0 ]; do
  case "$1" in
    --full) quick=() ;;
    --langs) langs=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-langs.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
marker=$(mktemp /tmp/sl-bench-langs.XXXXXX)
trap 'rm -f "$marker"' EXIT
failed=()

python_bench() {
  local venv=$ROOT/build/python-venv
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import slotlane, redis' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install -q "$ROOT/python" redis hiredis || return 1
  fi
  "$venv/bin/python" "$ROOT/python/bench/cluster_cost.py" --cluster-cost --start-servers --server-cpu 1 --client-cpu 0 \
      --c-tool "$ROOT/build/bench/sl-cluster-cost" --json "$ROOT/bench/records/" "${quick[@]}"
}
rust_bench() { (cd "$ROOT/rust/bench" && cargo run -q --release --example cluster_cost -- "${quick[@]}"); }
go_bench() { bash "$ROOT/go/bench/run.sh" "${quick[@]}"; }
node_bench() {
  (cd "$ROOT/node" && { [ -f build/Release/slotlane.node ] || npm_config_nodedir=/usr npm install --no-audit --no-fund --loglevel=error; } &&
   npm run -s bench:cluster-cost -- "${quick[@]}")
}
java_bench() { bash "$ROOT/java/run-bench.sh" "${quick[@]}"; }
csharp_bench() { bash "$ROOT/csharp/bench.sh" "${quick[@]}"; }

IFS=, read -r -a list <<<"$langs"
for lang in "${list[@]}"; do
  [ -d "$ROOT/$lang" ] || { echo "bench-langs.sh: no $lang/ here; skipped"; continue; }
  printf '\n=== %s cluster-cost (%s) ===\n' "$lang" "${quick[*]:-full}"
  if ! "${lang}_bench"; then
    echo "bench-langs.sh: the $lang runner failed" >&2
    failed+=("$lang")
  fi
done
echo
echo "records written by this run:"
find "$ROOT/bench/records" -name '*.json' -newer "$marker" -printf '  bench/records/%f\n' | sort
[ ${#failed[@]} -eq 0 ] || { echo "bench-langs.sh: failed: ${failed[*]}" >&2; exit 1; }
