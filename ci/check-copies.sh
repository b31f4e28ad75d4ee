#!/usr/bin/env bash
# ci/check-copies.sh — issue 15's two rules on copies of the core, as a check `make test` runs:
#   1. no tracked file outside core/ is a copy of a core file, except in Go's one committed
#      copy (go/internal/csrc, written by ci/vendor-core.sh --go and checked by it);
#   2. no build recipe names a core source file: every recipe reads core/build.cfg. A recipe
#      is a build file (CMakeLists.txt, build.rs, setup.py, binding.gyp, pom.xml, a .nuspec,
#      build-native.sh, a ci/ script...) outside core/ and go/internal/csrc; tests
#      (ci/test-*.sh, which check what a package carries) and the generated Go shims
#      (go/core_*.c, one per source by necessity, written by ci/vendor-core.sh) are not.
#      One known exception, listed below: server/CMakeLists.txt compiles core/src/slot.c
#      until the server uses only what the core exports (issue 15, branch house-tests).
# (`duplicates` over the tree is the reading tool behind this; this script decides by blob
# hashes and file names so that its verdict does not depend on a heuristic or on time.)
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# 1. blobs: the core's files by content hash, then any other tracked path with one of them
core_blobs=$(git ls-files -s -- core | awk '{print $2}' | sort -u)
copies=$(git ls-files -s | awk '{print $2, $4}' | grep -v -E ' (core/|go/internal/csrc/)' \
         | awk 'NR==FNR {c[$1]=1; next} ($1 in c) {print $2}' <(echo "$core_blobs") - || true)
# files of one line or less (an empty file, "0.1.0") are not copies of code
real=""
for f in $copies; do
  [ "$(wc -l < "$f")" -gt 1 ] && real="$real $f"
done
if [ -n "$real" ]; then
  echo "check-copies: copies of core files outside core/ and go/internal/csrc:$real" >&2
  status=1
fi
# 2. names: every .c of the core (any part), as src/... or as a bare file name in a recipe
mapfile -t names < <(python3 core/describe.py --relative-to core files $(python3 core/describe.py parts | awk '{print $1}') \
                     | grep '\.c$' | xargs -n1 basename | sort -u)
[ ${#names[@]} -gt 5 ] || { echo "check-copies: found only ${#names[@]} core sources: the check is broken" >&2; exit 1; }
pattern=$(printf '%s\n' "${names[@]}" | sed 's/\./\\./; s/^/(^|[^A-Za-z0-9_])/; s/$/([^A-Za-z0-9_]|$)/' | paste -sd'|')
recipes=$(git ls-files | grep -v -E '^(core/|go/internal/csrc/|go/core_[a-z_]*\.c$|ci/test-[^/]*\.sh$)' \
          | grep -E '(CMakeLists\.txt|\.cmake(\.in)?|build\.rs|Cargo\.toml|setup\.py|build_ffi\.py|pyproject\.toml|MANIFEST\.in|binding\.gyp|package\.json|pom\.xml|\.nuspec|\.csproj|\.targets|build-native\.sh|pack\.sh|Makefile|ci/[^/]*\.sh)$' || true)
# a recipe's own sources may share a core file's name (server/src/conn.c): only a name
# with the core's path, or a bare name in a binding's recipe, counts
binding='^(python|rust|node|go|java|csharp)/'
known='^server/CMakeLists.txt:[0-9]+:set\(SV_CORE_SLOT .*/core/src/slot\.c\)$'
for f in $recipes; do
  if [[ $f =~ $binding ]]; then
    hits=$(grep -n -E "$pattern" "$f" || true)
  else
    hits=$(grep -n -E 'core/src/[A-Za-z0-9_/]*\.c' "$f" || true)
  fi
  hits=$(echo "$hits" | grep -v -E '^[0-9]+:\s*(#|//|<!--)' | sed "s#^#$f:#" | grep -v -E "$known" | sed "s#^$f:##" || true)
  if [ -n "$hits" ]; then
    echo "check-copies: $f names core source files (read core/build.cfg instead):" >&2
    echo "$hits" | head -5 >&2
    status=1
  fi
done
[ $status = 0 ] && echo "check-copies: no copy of the core outside core/ and go/internal/csrc; $(echo "$recipes" | wc -w) recipes name no core source"
exit $status
