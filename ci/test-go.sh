#!/usr/bin/env bash
# ci/test-go.sh — the Go binding (go/): the vendored core matches core/, gofmt, go vet
# (the module and the bench module), a build of the module copied outside the monorepo
# (as `go get` sees it from the module cache), `go test -race ./...` against the bundled
# slotlane-server, Debian's redis-server and Redis Clusters (ports 23000-23499), and a
# short smoke run of the cluster-cost tool (go/bench) with both clients.
# Servers are stopped by PID at the end, also when the tests fail or die (ci/lib.sh). A bare
# `go test ./...` in go/ works too: TestMain starts (and builds) what it needs.
SL_SUITE=go
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT

WORK=$(mktemp -d /tmp/slotlane-go-ci.XXXXXX)
sl_on_exit "rm -rf '$WORK'"
export SL_GO_TEST_DIR=$WORK/test
mkdir -p "$SL_GO_TEST_DIR"
# If the test binary dies, TestMain cannot stop its servers: stop them from their files.
sl_on_exit 'for d in "$SL_GO_TEST_DIR"/cluster "$SL_GO_TEST_DIR"/failure-cluster; do [ -d "$d" ] && bash ci/redis-cluster.sh stop "$d"; done'
sl_on_exit '[ -d "$SL_GO_TEST_DIR/plain" ] && bash ci/redis-plain.sh stop "$SL_GO_TEST_DIR/plain"'
sl_on_exit '[ -f "$SL_GO_TEST_DIR/slotlane-server.pid" ] && sl_stop_pid "$(cat "$SL_GO_TEST_DIR/slotlane-server.pid")" slotlane-server'

command -v go >/dev/null || die "go is not installed"

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
[ "$got" = "$want" ] || die "outside build printed '$got', want '$want'"
echo "built and ran outside the monorepo: $got"
# a user's test there: slotlanetest starts the embedded server (compiled from the module's
# internal/ssrc) in the test process
cat > "$WORK/outside/app/app_test.go" <<'EOM'
package main

import (
	"context"
	"fmt"
	"testing"

	slotlane "github.com/slotlane/slotlane/go"
	"github.com/slotlane/slotlane/go/slotlanetest"
)

func TestCluster(t *testing.T) {
	ctx := context.Background()
	srv := slotlanetest.NewServer(t, nil)
	c, err := slotlane.NewClient(ctx, &slotlane.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 64; i++ {
		if _, err := c.Set(ctx, fmt.Sprintf("pkg:go:%d", i), i, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 64; i++ {
		v, err := c.Get(ctx, fmt.Sprintf("pkg:go:%d", i))
		if err != nil || v == nil || *v != fmt.Sprint(i) {
			t.Fatal(i, v, err)
		}
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 4 {
		t.Fatal(nodes, err)
	}
	fmt.Printf("go-testing ok: 64 keys over %d shards at %s\n", len(srv.Ports), srv.URL)
}
EOM
out=$(cd "$WORK/outside/app" && GOFLAGS=-mod=mod go test -count=1 -v . 2>&1) || { echo "$out" >&2; die "the outside module's slotlanetest test failed"; }
grep -q '^go-testing ok' <<<"$out" || { echo "$out" >&2; die "the outside test did not print go-testing ok"; }
grep '^go-testing ok' <<<"$out"

step "go test -race ./..."
(cd go && go test -race -count=1 -timeout 600s ./...)

step "cluster-cost tool smoke run (both clients, tiny)"
SMOKE_PLAIN=$(sl_free_block go 5 23480)   # the tests' blocks stop at 23479
SMOKE_CLUSTER=$((SMOKE_PLAIN + 1))
sl_on_exit "bash ci/redis-plain.sh stop '$WORK/smoke-plain'"
bash ci/redis-plain.sh start "$WORK/smoke-plain" "$SMOKE_PLAIN" >/dev/null
sl_start_server SMOKE_PID "$WORK/smoke-server.log" --shards 4 --port-mode per-shard --bind 127.0.0.1 --port "$SMOKE_CLUSTER"
(cd go/bench && go run ./cmd/cluster-cost --plain redis://127.0.0.1:$SMOKE_PLAIN --cluster redis://127.0.0.1:$SMOKE_CLUSTER \
  --seconds 0.2 --warmup 0.05 --rounds 1 --depths 16 --workers 2 >"$WORK/smoke.out" 2>&1) \
  || { cat "$WORK/smoke.out" >&2; die "the cluster-cost smoke run failed"; }
rows=$(grep -c '^| slotlane-go\|^| go-redis' "$WORK/smoke.out" || true)
[ "$rows" = 12 ] || { cat "$WORK/smoke.out" >&2; die "expected 12 rows from the smoke run, got $rows"; }
echo "cluster-cost smoke: $rows rows, every reply checked"
echo "go: all passed"
