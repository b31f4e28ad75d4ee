#!/usr/bin/env bash
# csharp/mono-build.sh [test|bench-build|build] — the Mono path of the C# binding (this machine has
# no .NET SDK): builds libslotlane.so from core/src (build-native.sh), compiles the library, the
# tests (against NUnit 2.6, -define:NUNIT2) and the benchmark with mcs -langversion:7.2 from the
# same sources the .csproj files use, and with `test` runs the tests with nunit-console.
#
# Output: csharp/out/bin/ (Slotlane.Client.dll + libslotlane.so side by side, as NuGet's
# runtimes/linux-x64/native/ layout or the build/ targets file puts them for a consumer).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=$HERE/out/bin
NUNIT_FW=${NUNIT_FRAMEWORK:-/usr/lib/cli/nunit.framework-2.6.3/nunit.framework.dll}
what=${1:-build}
say() { echo "csharp: $*" >&2; }

mkdir -p "$OUT"
bash "$HERE/build-native.sh" "$HERE/out/native"
cp -p "$HERE/out/native/libslotlane.so" "$OUT/libslotlane.so"
cp -p "$HERE/out/native/libslotlane_server.so" "$OUT/libslotlane_server.so"

MCS=(mcs -langversion:7.2 -unsafe -optimize+ -debug:portable -warnaserror+ -nologo)
say "mcs Slotlane.Client.dll"
"${MCS[@]}" -target:library -doc:"$OUT/Slotlane.Client.xml" -r:System.Numerics \
  -out:"$OUT/Slotlane.Client.dll" "$HERE"/Slotlane.Client/*.cs

if [ "$what" = test ] || [ "$what" = build ]; then
  say "mcs Slotlane.Client.Tests.dll (NUnit 2.6)"
  "${MCS[@]}" -target:library -define:NUNIT2 -nowarn:1591 -r:"$NUNIT_FW" -r:System.Numerics -r:System.Xml -r:System.Xml.Linq \
    -r:"$OUT/Slotlane.Client.dll" -out:"$OUT/Slotlane.Client.Tests.dll" "$HERE"/Slotlane.Client.Tests/*.cs \
    "$HERE"/Slotlane.Testing.NUnit/*.cs
  cp -p "$NUNIT_FW" "$OUT/"
fi
if [ "$what" = bench-build ] || [ "$what" = build ] || [ "$what" = test ]; then
  say "mcs Slotlane.Client.Benchmarks.exe"
  "${MCS[@]}" -target:exe -unsafe -r:"$OUT/Slotlane.Client.dll" -out:"$OUT/Slotlane.Client.Benchmarks.exe" \
    "$HERE"/Slotlane.Client.Benchmarks/*.cs
fi

if [ "$what" = test ]; then
  say "nunit-console"
  shift || true
  cd "$OUT"
  # -nothread keeps the tests on the runner's main thread; -noshadow: load from out/bin, next to libslotlane.so
  nunit-console -nologo -noshadow -labels -xml="$HERE/out/TestResult.xml" "$@" Slotlane.Client.Tests.dll
fi
