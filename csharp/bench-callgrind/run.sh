#!/usr/bin/env bash
# csharp/bench-callgrind/run.sh DLL [N] — instructions (callgrind Ir) per queued pipeline GET and SET of
# a Slotlane.Client.dll, without a server: QueueCost.exe run with 0 and N commands, the difference / N.
# Compare two builds' DLLs (bindings/spec/README.md, "Measured"). Prints "GET <Ir/command> <Ir(0)> <Ir(N)> <N>"
# and "SET ..." (record.py writes them into a callgrind-queue record).
set -euo pipefail
DLL=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-200000}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp "$DLL" "$W/"
cp "$(dirname "$DLL")/libslotlane.so" "$W/" 2>/dev/null || true
mcs -langversion:7.2 -optimize+ -nologo -r:"$W/Slotlane.Client.dll" -out:"$W/QueueCost.exe" "$(dirname "$0")/QueueCost.cs"
cd "$W"
for op in GET SET; do
  a=$(valgrind --tool=callgrind --callgrind-out-file="$W/a.out" mono QueueCost.exe 0 $op 2>&1 | grep -o 'Collected : [0-9]*' | awk '{print $3}')
  b=$(valgrind --tool=callgrind --callgrind-out-file="$W/b.out" mono QueueCost.exe "$N" $op 2>&1 | grep -o 'Collected : [0-9]*' | awk '{print $3}')
  echo "$op $(( (b - a) / N )) $a $b $N"
done
