#!/usr/bin/env bash
# ci/test-python.sh — the Python binding (python/): install and test.
#
#   ci/test-python.sh [pytest args...]
#
# 1. A venv at build/python-venv (created once; the system Python is never touched) with
#    pytest, cffi, setuptools, build, mypy, uvloop (test_asyncio runs on it too), and
#    redis + hiredis for the benchmark.
# 2. pip install ./python into the venv (compiles the core into the CFFI extension).
#    The sdist and the wheel are installed into fresh venvs and used outside the checkout
#    by ci/test-packages.sh python.
# 3. mypy --strict on the package; pytest python/tests: they start and stop their own servers (a free block of 100 ports in 22000-22499, tests/ports.py).
# Servers left by an interrupted run are stopped on exit.
SL_SUITE=python
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT
VENV=$ROOT/build/python-venv
PY=${PYTHON:-python3}

# Servers a killed pytest left behind (conftest.py stops its own otherwise).
for d in "$ROOT"/build/python-test/cluster "$ROOT"/build/python-test/chaos "$ROOT"/build/python-test/replicas; do
  sl_on_exit "[ -d '$d' ] && bash ci/redis-cluster.sh stop '$d'"
done
sl_on_exit "[ -d '$ROOT/build/python-test/plain' ] && bash ci/redis-plain.sh stop '$ROOT/build/python-test/plain'"

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import pytest, cffi, setuptools, build, redis, hiredis, wheel, mypy, uvloop; assert int(setuptools.__version__.split(".")[0]) >= 70' 2>/dev/null; then
  "$VENV/bin/pip" install -q pytest cffi "setuptools>=70" wheel build redis hiredis mypy uvloop
fi

say "pip install ./python"
rm -rf python/build python/src/slotlane.egg-info  # setuptools would reuse a stale extension
"$VENV/bin/pip" install -q --no-build-isolation --force-reinstall --no-deps ./python

say "mypy --strict (the type hints are complete)"
( cd python && "$VENV/bin/python" -m mypy --strict --no-error-summary src/slotlane )

say "pytest"
cd python
"$VENV/bin/python" -m pytest -p no:cacheprovider -q "$@" tests
