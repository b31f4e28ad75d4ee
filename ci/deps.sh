#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for building and testing slotlane.
# Idempotent and quick when everything is present: apt-get update runs at most once,
# and only when a package is missing.
set -euo pipefail

APT_PKGS=(build-essential cmake pkg-config libuv1-dev libssl-dev openssl libcmocka-dev swig
          redis-server redis-tools libhiredis-dev clang valgrind python3-venv
          mono-complete nunit-console libnunit-cil-dev nuget unzip
          liblua5.1-0-dev lua-cjson-dev lua-bitop-dev)

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci/deps.sh: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The Debian redis-server package starts a system service on 6379; our tests never use it,
# they start their own servers on their own ports.

# Python packages used by tests and scripts (redis-py records conformance replies and
# drives the server's cluster tests; pytest runs the Python tests).
PY=${PYTHON:-python3}
need_py=()
for m in pytest redis hiredis cffi; do
  $PY -c "import $m" 2>/dev/null || need_py+=("$m")
done
if [ ${#need_py[@]} -gt 0 ]; then
  echo "ci/deps.sh: pip installing ${need_py[*]}"
  $PY -m pip install -q "${need_py[@]}" 2>/dev/null || $PY -m pip install -q --break-system-packages "${need_py[@]}"
fi
