#!/usr/bin/env bash
# ci/test-spec.sh — the client surface spec (bindings/spec/): it is current and every
# binding's generated code is what the renderer writes.
#
# 1. gen_spec.py --check: commands.json is what redis-server 7.0's COMMAND DOCS and
#    surface.json give (starts a throwaway redis-server on a free port in 20900-20999).
# 2. test_spec.py: the spec's reference semantics (type grammar, encoding, normalisation).
# 3. render.py --check: every generated file is a fresh render (Python, Node, Go; gofmt).
# The spec's conformance cases (bindings/conformance/commands/) are re-recorded and their
# reply types checked by ci/test-conformance.sh (record.py --check).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "test-spec: gen_spec.py --check"
python3 bindings/spec/gen_spec.py --check
echo "test-spec: unit tests (bindings/spec/test_spec.py)"
python3 -m unittest bindings/spec/test_spec.py
echo "test-spec: render.py --check"
python3 bindings/spec/render.py --check
echo "test-spec: OK"
