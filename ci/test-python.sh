#!/usr/bin/env bash
# ci/test-python.sh — the Python binding (python/): install and test.
#
#   ci/test-python.sh [pytest args...]
#
# 1. A venv at build/python-venv (created once; the system Python is never touched) with
#    pytest, cffi, setuptools, build, mypy, and redis + hiredis for the benchmark.
# 2. ci/vendor-core.sh --check python/vendor/core: the sdist's copy of the core is current.
# 3. pip install ./python into the venv (compiles the core into the CFFI extension).
# 4. An sdist of python/, and a wheel built from that sdist outside the repository (so it
#    can only use the sdist's vendored core), installed into a second venv and imported.
# 5. mypy --strict on the package; pytest python/tests: they start and stop their own servers (ports 22000-22099).
# Servers left by an interrupted run are stopped on exit.
SL_SUITE=python
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT
VENV=$ROOT/build/python-venv
PY=${PYTHON:-python3}

# Servers a killed pytest left behind (conftest.py stops its own otherwise).
for d in "$ROOT"/build/python-test/cluster "$ROOT"/build/python-test/chaos; do
  sl_on_exit "[ -d '$d' ] && bash ci/redis-cluster.sh stop '$d'"
done
sl_on_exit "[ -d '$ROOT/build/python-test/plain' ] && bash ci/redis-plain.sh stop '$ROOT/build/python-test/plain'"

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import pytest, cffi, setuptools, build, redis, hiredis, wheel, mypy; assert int(setuptools.__version__.split(".")[0]) >= 70' 2>/dev/null; then
  "$VENV/bin/pip" install -q pytest cffi "setuptools>=70" wheel build redis hiredis mypy
fi

say "checking python/vendor/core against core/"
bash ci/vendor-core.sh --check python/vendor/core

say "pip install ./python"
rm -rf python/build python/src/slotlane.egg-info  # setuptools would reuse a stale extension
"$VENV/bin/pip" install -q --no-build-isolation --force-reinstall --no-deps ./python

say "sdist, then a wheel from the sdist outside the repository"
WORK=$(mktemp -d /tmp/slotlane-py.XXXXXX)
sl_on_exit "rm -rf '$WORK'"
"$VENV/bin/python" -m build --sdist --no-isolation -o "$WORK/dist" python >/dev/null
SDIST=$(ls "$WORK"/dist/slotlane-*.tar.gz)
tar tzf "$SDIST" > "$WORK/sdist.list"
grep -q 'vendor/core/src/batch.c$' "$WORK/sdist.list" || die "the sdist lacks the vendored core"
grep -q 'slotlane/py.typed$' "$WORK/sdist.list" || die "the sdist lacks py.typed"
mkdir -p "$WORK/unpack" && tar xzf "$SDIST" -C "$WORK/unpack"
( cd "$WORK/unpack"/slotlane-* && env -u SLOTLANE_CORE_DIR "$VENV/bin/pip" wheel -q --no-build-isolation --no-deps -w "$WORK/wheel" . )
"$PY" -m venv "$WORK/venv2"
"$WORK/venv2/bin/pip" install -q --no-index --find-links "$(dirname "$("$VENV/bin/python" -c 'import cffi,os;print(cffi.__file__)')")" cffi 2>/dev/null \
  || "$WORK/venv2/bin/pip" install -q cffi
"$WORK/venv2/bin/pip" install -q --no-deps "$WORK"/wheel/slotlane-*.whl
( cd "$WORK" && "$WORK/venv2/bin/python" -c '
import slotlane, os
assert slotlane.key_slot("foo") == 12182, "key_slot"
assert os.path.isfile(os.path.join(os.path.dirname(slotlane.__file__), "py.typed"))
print("test-python: wheel from sdist OK, slotlane", slotlane.__version__)' )

say "mypy --strict (the type hints are complete)"
( cd python && "$VENV/bin/python" -m mypy --strict --no-error-summary src/slotlane )

say "pytest"
cd python
"$VENV/bin/python" -m pytest -p no:cacheprovider -q "$@" tests
