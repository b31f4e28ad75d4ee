#!/usr/bin/env bash
# ci/test-go.sh — the Go binding (go/): the vendored core matches core/, gofmt, go vet
# (the module and the bench module), a build of the module copied outside the monorepo
# (as `go get` sees it from the module cache), `go test -race ./...` against the bundled
# slotlane-server, Debian's redis-server and Redis Clusters (ports 23000-23499), and a
# short smoke run of the cluster-cost tool (go/bench) with both clients.
# Servers are stopped by PID at the end, also when the tests fail or die.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export SL_ROOT=$ROOT
step() { printf -- '--- go: %s\n' "$*"; }

WORK=$(mktemp -d /tmp/slotlane-go-ci.XXXXXX)
export SL_GO_TEST_DIR=$WORK/test
mkdir -p "$SL_GO_TEST_DIR"
SMOKE_PID=""
stop_pidfile() {  # stop_pidfile FILE NAME: SIGTERM, then SIGKILL, a process of that name
  local f=$1 name=$2 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q "$name" "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pidfile "$SL_GO_TEST_DIR/slotlane-server.pid" slotlane-server
  if [ -n "$SMOKE_PID" ]; then echo "$SMOKE_PID" > "$WORK/smoke.pid"; stop_pidfile "$WORK/smoke.pid" slotlane-server; fi
  for d in "$SL_GO_TEST_DIR"/plain "$WORK"/smoke-plain; do
    [ -d "$d" ] && bash ci/redis-plain.sh stop "$d" >/dev/null 2>&1 || true
  done
  for d in "$SL_GO_TEST_DIR"/cluster "$SL_GO_TEST_DIR"/failure-cluster "$SL_GO_TEST_DIR"/cluster-instead-of-bundled; do
    [ -d "$d" ] && bash ci/redis-cluster.sh stop "$d" >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v go >/dev/null || { echo "test-go.sh: go is not installed" >&2; exit 1; }

step "vendored core (ci/vendor-core.sh --go --check: go/internal/csrc, go/core_*.c, go/core_build.go)"
bash ci/vendor-core.sh --go --check

step "gofmt, go vet"
bad=$(cd go && gofmt -l .)
[ -z "$bad" ] || { echo "gofmt: these files need formatting: $bad" >&2; exit 1; }
(cd go && go vet ./...)
(cd go/bench && go vet ./...)

step "the module outside the monorepo (as from the module cache)"
mkdir -p "$WORK/outside/app"
tar -C go --exclude=./bench -cf - . | (mkdir -p "$WORK/outside/slotlane-go" && tar -C "$WORK/outside/slotlane-go" -xf -)
cat > "$WORK/outside/app/go.mod" <<EOM
module example.com/app

go 1.22

require github.com/slotlane/slotlane/go v0.0.0

replace github.com/slotlane/slotlane/go => ../slotlane-go
EOM
cat > "$WORK/outside/app/main.go" <<'EOM'
package main

import (
	"fmt"

	slotlane "github.com/slotlane/slotlane/go"
)

func main() { fmt.Println(slotlane.Version(), slotlane.KeySlot("foo")) }
EOM
got=$(cd "$WORK/outside/app" && GOFLAGS=-mod=mod go run .)
want="$(cat VERSION) 12182"
[ "$got" = "$want" ] || { echo "outside build printed '$got', want '$want'" >&2; exit 1; }
echo "built and ran outside the monorepo: $got"

step "go test -race ./..."
(cd go && go test -race -count=1 -timeout 280s ./...)

step "cluster-cost tool smoke run (both clients, tiny)"
SMOKE_PLAIN=23480
SMOKE_CLUSTER=23484
bash ci/redis-plain.sh start "$WORK/smoke-plain" "$SMOKE_PLAIN" >/dev/null
SLSERVER=${SL_SERVER_BIN:-$ROOT/build/server/slotlane-server}
"$SLSERVER" --shards 4 --port-mode per-shard --bind 127.0.0.1 --port "$SMOKE_CLUSTER" >"$WORK/smoke-server.log" 2>&1 &
SMOKE_PID=$!
for i in 0 1 2 3; do
  for _ in $(seq 200); do [ "$(redis-cli -p $((SMOKE_CLUSTER + i)) ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
done
(cd go/bench && go run ./cmd/cluster-cost --plain redis://127.0.0.1:$SMOKE_PLAIN --cluster redis://127.0.0.1:$SMOKE_CLUSTER \
  --seconds 0.2 --warmup 0.05 --rounds 1 --depths 16 --workers 2 >"$WORK/smoke.out" 2>&1) \
  || { cat "$WORK/smoke.out" >&2; echo "test-go.sh: the cluster-cost smoke run failed" >&2; exit 1; }
rows=$(grep -c '^| slotlane-go\|^| go-redis' "$WORK/smoke.out" || true)
[ "$rows" = 12 ] || { cat "$WORK/smoke.out" >&2; echo "test-go.sh: expected 12 rows from the smoke run, got $rows" >&2; exit 1; }
echo "cluster-cost smoke: $rows rows, every reply checked"
echo "go: all passed"
