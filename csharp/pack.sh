#!/usr/bin/env bash
# csharp/pack.sh [OUTDIR] — Slotlane.Client-VERSION.nupkg into OUTDIR (default csharp/out/nupkg),
# with Mono only (no .NET SDK here) and Debian's nuget 2.8:
#   lib/netstandard2.1/Slotlane.Client.dll   mcs against Mono's Facades/netstandard.dll (plus the
#       assemblies that facade forwards to, which mcs needs to see the types), then every type
#       reference pointed at netstandard by pack/NetStandardRef.cs (Mono.Cecil), which fails if
#       a type is not in netstandard 2.1 and checks that netstandard is the only reference left
#   runtimes/linux-x64/native/libslotlane.so  build-native.sh (the core's build description;
#       libuv from the system)
#   runtimes/linux-x64/native/libslotlane_server.so  build-native.sh (server/build.cfg): the
#       embedded slotlane-server behind Slotlane.Testing.SlotlaneServer, for the user's tests (libuv and
#       Lua 5.1 with cjson and bit from the system)
#   content/Slotlane.Testing/SlotlaneServerFixture.cs  the NUnit fixture base, as source (the
#       package references no NUnit: the user's test project compiles it against its own)
#   build/Slotlane.Client.targets             copies the native library next to a Mono/.NET
#       Framework consumer's assemblies
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=${1:-$HERE/out/nupkg}
MONO_LIB=${MONO_LIB:-/usr/lib/mono/4.5}
FACADE=$MONO_LIB/Facades/netstandard.dll
CECIL=${CECIL:-$(ls /usr/lib/mono/gac/Mono.Cecil/0.11*/Mono.Cecil.dll 2>/dev/null | head -n1)}
say() { echo "csharp/pack: $*" >&2; }
for t in mcs mono nuget; do command -v $t >/dev/null || { say "$t is missing (ci/deps.sh: mono-complete nuget)"; exit 1; }; done
[ -f "$FACADE" ] || { say "no $FACADE (mono-complete)"; exit 1; }
[ -f "$CECIL" ] || { say "no Mono.Cecil 0.11 in Mono's GAC (mono-complete)"; exit 1; }
VERSION=$(python3 "$ROOT/core/describe.py" version)

STAGE=$HERE/out/pack
rm -rf "$STAGE" && mkdir -p "$STAGE/lib/netstandard2.1" "$STAGE/runtimes/linux-x64/native" "$STAGE/build" "$STAGE/obj" "$OUT" \
  "$STAGE/content/Slotlane.Testing"
cp "$HERE/Slotlane.Testing.NUnit/SlotlaneServerFixture.cs" "$STAGE/content/Slotlane.Testing/"
bash "$HERE/build-native.sh" "$HERE/out/native"
cp "$HERE/out/native/libslotlane.so" "$HERE/out/native/libslotlane_server.so" "$STAGE/runtimes/linux-x64/native/"
cp "$HERE/Slotlane.Client/build/Slotlane.Client.targets" "$STAGE/build/"

say "mcs Slotlane.Client.dll against $FACADE"
mcs -nologo -langversion:7.2 -unsafe -optimize+ -warnaserror+ -target:library -nostdlib -noconfig \
  -r:"$FACADE" -r:"$MONO_LIB/mscorlib.dll" -r:"$MONO_LIB/System.dll" -r:"$MONO_LIB/System.Core.dll" \
  -r:"$MONO_LIB/System.Numerics.dll" -doc:"$STAGE/lib/netstandard2.1/Slotlane.Client.xml" \
  -out:"$STAGE/obj/Slotlane.Client.dll" "$HERE"/Slotlane.Client/*.cs
mcs -nologo -r:"$CECIL" -r:System.Core -out:"$STAGE/obj/NetStandardRef.exe" "$HERE/pack/NetStandardRef.cs"
MONO_PATH=$(dirname "$CECIL") mono "$STAGE/obj/NetStandardRef.exe" "$STAGE/obj/Slotlane.Client.dll" \
  "$STAGE/lib/netstandard2.1/Slotlane.Client.dll" "$FACADE"

cp "$HERE/pack/Slotlane.Client.nuspec" "$STAGE/"
( cd "$STAGE" && nuget pack Slotlane.Client.nuspec -Version "$VERSION" -Properties version="$VERSION" \
    -BasePath "$STAGE" -OutputDirectory "$OUT" -NonInteractive -NoPackageAnalysis ) >&2
ls "$OUT/Slotlane.Client.$VERSION.nupkg"
