#!/usr/bin/env bash
# ci/test-spec.sh — the client surface spec (bindings/spec/): it is current and every
# binding's generated code is what the renderer writes.
#
# 1. gen_spec.py --check: commands.json is what redis-server 7.0's COMMAND DOCS and
#    surface.json give (starts a throwaway redis-server on a free port in 20900-20999).
# 2. render.py --check (once it exists): every generated file is a fresh render.
# The spec's conformance cases (bindings/conformance/commands/) are re-recorded and their
# reply types checked by ci/test-conformance.sh (record.py --check).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "test-spec: gen_spec.py --check"
python3 bindings/spec/gen_spec.py --check
if [ -f bindings/spec/render.py ]; then
  echo "test-spec: render.py --check"
  python3 bindings/spec/render.py --check
fi
echo "test-spec: OK"
