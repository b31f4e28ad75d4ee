#!/usr/bin/env bash
# ci/test-rust.sh — the Rust binding's tests (rust/: slotlane-sys and slotlane), as
# `make test` runs them:
#   1. cargo fmt --check, cargo clippy -D warnings (library, tests, examples, the bench)
#   2. cargo test (with slotlane's `testing` feature: the embedded server's own tests,
#      tests/testing.rs): unit tests, the ABI check against slotlane.h, integration tests, the
#      conformance cases, the Redis Cluster failure cases, the rustdoc examples — against
#      a standalone redis-server, a 3-primary Redis Cluster and slotlane-server (4 shards,
#      per-shard ports), the last embedded in each test process by slotlane-testing
#      (slotlane::testing::Server): no executable is started or built
# The packaged crates (ci/package-rust.sh) are built and used from a scratch project by
# ci/test-packages.sh rust.
# Servers are started here and stopped by PID on exit, also on failure (ci/lib.sh). A bare
# `cargo test` in rust/ works too: slotlane-testing starts what the environment lacks.
# Ports: 22500-22999 (SLOTLANE_RUST_PORT: the base, default the first free block from
# 22500): plain BASE, cluster BASE+10..+15, slotlane-server BASE+20..+23 (each test
# binary's embedded one in turn: cargo runs them one at a time; the doc examples, run in
# parallel, each start theirs on ephemeral ports), the failure
# tests' own clusters BASE+100..+115, 3 primaries x 1 replica (tests/replicas.rs)
# BASE+120..+131 and tests/pubsub.rs's BASE+132..+137.
SL_SUITE=rust
. "$(dirname "$0")/lib.sh"
cd "$SL_ROOT"
ROOT=$SL_ROOT
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
export CARGO_TERM_COLOR=never

command -v cargo >/dev/null || die "cargo is not installed"
command -v redis-server >/dev/null || die "redis-server is not installed (ci/deps.sh)"

BASE=${SLOTLANE_RUST_PORT:-$(sl_free_block rust 140)}
[ "$BASE" -ge 22500 ] && [ $((BASE + 139)) -le 22999 ] || die "SLOTLANE_RUST_PORT=$BASE: the run needs BASE..BASE+139 within 22500-22999"

WORK=$(mktemp -d /tmp/sl-rust.XXXXXX)
sl_on_exit "rm -rf '$WORK'"

cd rust
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings"
cargo clippy --all-targets --features slotlane/testing -- -D warnings
# The bench crate (redis-rs included) only when asked: it is not a default member and
# building redis-rs takes most of a minute on two cores.
if [ "${SLOTLANE_RUST_CLIPPY_BENCH:-0}" = 1 ]; then
  cargo clippy -p slotlane-bench --all-targets -- -D warnings
fi
cd "$ROOT"

# The Redis servers once for every test binary (a bare `cargo test` starts its own per
# binary through slotlane-testing; the environment below tells it these are running).
# slotlane-server is not started here: slotlane-testing embeds it in each test process.
step "servers (ports from $BASE)"
sl_on_exit "bash '$ROOT/ci/redis-plain.sh' stop '$WORK/plain'"
bash "$ROOT/ci/redis-plain.sh" start "$WORK/plain" "$BASE" >/dev/null
sl_on_exit "bash '$ROOT/ci/redis-cluster.sh' stop '$WORK/cluster'"
bash "$ROOT/ci/redis-cluster.sh" start "$WORK/cluster" $((BASE + 10)) 3 >/dev/null
export SLOTLANE_TEST_PLAIN_URL=redis://127.0.0.1:$BASE
export SLOTLANE_TEST_CLUSTER_URL=redis://127.0.0.1:$((BASE + 10))
export SLOTLANE_TEST_PORT_BASE=$((BASE + 100))
export SLOTLANE_TEST_SERVER_PORT=$((BASE + 20))
echo "plain $SLOTLANE_TEST_PLAIN_URL, cluster $SLOTLANE_TEST_CLUSTER_URL, slotlane-server (embedded) from port $SLOTLANE_TEST_SERVER_PORT"
# The rustdoc examples connect to SLOTLANE_URL: run them against the cluster.
export SLOTLANE_URL=$SLOTLANE_TEST_CLUSTER_URL

cd rust
step "cargo test (unit, ABI, integration, conformance, cluster failures, doc examples)"
# cargo's status is read from PIPESTATUS right after the pipeline (under pipefail a
# "|| true" would run and reset PIPESTATUS to true's, hiding a failed test).
set +e
cargo test --no-fail-fast --features slotlane/testing -- --nocapture 2>&1 | tee "$WORK/cargo-test.log" | grep -E '^(running |test result|conformance:|reshard:)|FAILED'
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { tail -n 80 "$WORK/cargo-test.log" >&2; die "cargo test failed"; }
step "doc examples against slotlane-server (each example's embedded one, ephemeral ports)"
env -u SLOTLANE_URL -u SLOTLANE_TEST_SERVER_PORT cargo test -q --doc -p slotlane

echo
echo "rust: all tests passed"
