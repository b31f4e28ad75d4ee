#!/usr/bin/env bash
# ci/test-rust.sh — the Rust binding's tests (rust/: slotlane-sys and slotlane), as
# `make test` runs them:
#   1. the vendored core copy matches core/ (ci/vendor-core.sh --check)
#   2. cargo fmt --check, cargo clippy -D warnings (library, tests, examples, the bench)
#   3. cargo test: unit tests, the ABI check against slotlane.h, integration tests, the
#      conformance cases, the Redis Cluster failure cases, the rustdoc examples — against
#      a standalone redis-server, a 3-primary Redis Cluster and, when it is built,
#      slotlane-server (4 shards, per-shard ports)
#   4. packaging: `cargo package -p slotlane-sys` (its verify step builds the packaged
#      crate, which carries only its vendored core, outside the monorepo), then two
#      scratch projects that build and run: one with a path dependency on rust/slotlane,
#      one on the unpacked packaged slotlane-sys
# Servers are started here and stopped by PID on exit, also on failure.
# Ports: 22500-22999 (SLOTLANE_RUST_PORT: the base, default the first free block from
# 22500): plain BASE, cluster BASE+10..+15, slotlane-server BASE+20..+23, the failure
# tests' own clusters BASE+100..+115.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
export CARGO_TERM_COLOR=never
step() { printf '\n--- rust: %s\n' "$*"; }
die() { echo "test-rust.sh: $*" >&2; exit 1; }

command -v cargo >/dev/null || die "cargo is not installed"
command -v redis-server >/dev/null || die "redis-server is not installed (ci/deps.sh)"

free_block() {  # free_block FROM COUNT: the first base >= FROM with COUNT free ports (<= 22999)
  local b=$1 n=$2 i ok
  while [ $((b + n)) -le 22999 ]; do
    ok=1
    for ((i = 0; i < n; i++)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$((b + i))") 2>/dev/null; then ok=0; break; fi
    done
    [ $ok = 1 ] && { echo "$b"; return 0; }
    b=$((b + n))
  done
  die "no free block of $n ports in 22500-22999"
}
BASE=${SLOTLANE_RUST_PORT:-$(free_block 22500 120)}
[ "$BASE" -ge 22500 ] && [ $((BASE + 119)) -le 22999 ] || die "SLOTLANE_RUST_PORT=$BASE: the run needs BASE..BASE+119 within 22500-22999"

WORK=$(mktemp -d /tmp/sl-rust.XXXXXX)
SLSERVER_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SLSERVER_PID" ] && kill -0 "$SLSERVER_PID" 2>/dev/null; then
    kill -TERM "$SLSERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SLSERVER_PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$SLSERVER_PID" 2>/dev/null || true
  fi
  bash "$ROOT/ci/redis-cluster.sh" stop "$WORK/cluster" >/dev/null 2>&1 || true
  bash "$ROOT/ci/redis-plain.sh" stop "$WORK/plain" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "vendored core (ci/vendor-core.sh --check rust/slotlane-sys/core)"
bash "$ROOT/ci/vendor-core.sh" --check rust/slotlane-sys/core

cd rust
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings"
cargo clippy --all-targets -- -D warnings
# The bench crate (redis-rs included) only when asked: it is not a default member and
# building redis-rs takes most of a minute on two cores.
if [ "${SLOTLANE_RUST_CLIPPY_BENCH:-0}" = 1 ]; then
  cargo clippy -p slotlane-bench --all-targets -- -D warnings
fi
cd "$ROOT"

step "servers (ports from $BASE)"
bash "$ROOT/ci/redis-plain.sh" start "$WORK/plain" "$BASE" >/dev/null
bash "$ROOT/ci/redis-cluster.sh" start "$WORK/cluster" $((BASE + 10)) 3 >/dev/null
export SLOTLANE_TEST_PLAIN_URL=redis://127.0.0.1:$BASE
export SLOTLANE_TEST_CLUSTER_URL=redis://127.0.0.1:$((BASE + 10))
export SLOTLANE_TEST_PORT_BASE=$((BASE + 100))
export SL_ROOT=$ROOT
SLSERVER=${SL_BUILD_DIR:-$ROOT/build}/server/slotlane-server
if [ -x "$SLSERVER" ]; then
  SPORT=$((BASE + 20))
  "$SLSERVER" --shards 4 --port "$SPORT" >"$WORK/slotlane-server.log" 2>&1 &
  SLSERVER_PID=$!
  for i in 0 1 2 3; do
    for _ in $(seq 100); do
      [ "$(redis-cli -p $((SPORT + i)) ping 2>/dev/null)" = PONG ] && break
      kill -0 "$SLSERVER_PID" 2>/dev/null || { cat "$WORK/slotlane-server.log" >&2; die "slotlane-server exited"; }
      sleep 0.05
    done
    [ "$(redis-cli -p $((SPORT + i)) ping 2>/dev/null)" = PONG ] || die "slotlane-server port $((SPORT + i)) does not answer"
  done
  export SLOTLANE_TEST_SERVER_URL=redis://127.0.0.1:$SPORT
  echo "plain $SLOTLANE_TEST_PLAIN_URL, cluster $SLOTLANE_TEST_CLUSTER_URL, slotlane-server $SLOTLANE_TEST_SERVER_URL"
else
  echo "plain $SLOTLANE_TEST_PLAIN_URL, cluster $SLOTLANE_TEST_CLUSTER_URL; slotlane-server is NOT built ($SLSERVER): its runs are NOT done"
fi
# The rustdoc examples connect to SLOTLANE_URL: run them against the cluster.
export SLOTLANE_URL=$SLOTLANE_TEST_CLUSTER_URL

cd rust
step "cargo test (unit, ABI, integration, conformance, cluster failures, doc examples)"
cargo test --no-fail-fast -- --nocapture 2>&1 | tee "$WORK/cargo-test.log" | grep -E '^(running |test result|conformance:|reshard:)|FAILED' || true
[ "${PIPESTATUS[0]}" = 0 ] || { tail -n 80 "$WORK/cargo-test.log" >&2; die "cargo test failed"; }
if [ -n "$SLSERVER_PID" ]; then
  step "doc examples against slotlane-server"
  SLOTLANE_URL=$SLOTLANE_TEST_SERVER_URL cargo test -q --doc -p slotlane
fi

step "cargo package -p slotlane-sys (the packaged crate builds outside the monorepo)"
cargo package -p slotlane-sys --allow-dirty --list > "$WORK/package-list"
for f in core/include/slotlane.h core/src/client.c core/src/batch.c core/VERSION build.rs src/lib.rs; do
  grep -qx "$f" "$WORK/package-list" || die "the packaged slotlane-sys lacks $f"
done
cargo package -p slotlane-sys --allow-dirty 2>&1 | tail -n 3
TARGET=${CARGO_TARGET_DIR:-$ROOT/rust/target}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/rust/Cargo.toml" | head -n1)
PKG=$TARGET/package/slotlane-sys-$VERSION
[ -d "$PKG" ] && [ ! -e "$PKG/../../core" ] || die "the unpacked crate is not where expected: $PKG"

step "scratch projects (path dependencies from outside the workspace)"
SCRATCH=$WORK/scratch
mkdir -p "$SCRATCH/app/src" "$SCRATCH/sys/src"
cat > "$SCRATCH/app/Cargo.toml" <<EOF
[package]
name = "scratch-app"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
slotlane = { path = "$ROOT/rust/slotlane" }
EOF
cat > "$SCRATCH/app/src/main.rs" <<'EOF'
use slotlane::{Client, Pipeline, Value};
fn main() -> Result<(), slotlane::Error> {
    let url = std::env::var("SLOTLANE_URL").expect("SLOTLANE_URL");
    let mut c = Client::connect(url.as_str())?;
    let mut p = Pipeline::new();
    for i in 0..32 {
        p.set(format!("scratch:{i}"), i, None); // the typed set of bindings/spec (options: None)
    }
    for i in 0..32 {
        p.get(format!("scratch:{i}"));
    }
    let r = p.exec(&mut c);
    for i in 0..32 {
        assert_eq!(r[32 + i], Ok(Value::Bulk(i.to_string().into_bytes().into())));
    }
    println!("scratch-app ok: {:?} mode, core {}", c.mode(), slotlane::core_version());
    Ok(())
}
EOF
cat > "$SCRATCH/sys/Cargo.toml" <<EOF
[package]
name = "scratch-sys"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
slotlane-sys = { path = "$PKG" }
EOF
cat > "$SCRATCH/sys/src/main.rs" <<'EOF'
fn main() {
    let v = unsafe { std::ffi::CStr::from_ptr(slotlane_sys::sl_version()) };
    let slot = unsafe { slotlane_sys::sl_key_slot(b"foo".as_ptr().cast(), 3) };
    assert_eq!(slot, 12182);
    println!("scratch-sys ok: packaged core {}", v.to_str().unwrap());
}
EOF
export CARGO_TARGET_DIR=$TARGET/scratch
(cd "$SCRATCH/app" && cargo run -q) | tee "$WORK/app.out"
grep -q '^scratch-app ok' "$WORK/app.out" || die "the scratch app did not run"
(cd "$SCRATCH/sys" && cargo run -q) | tee "$WORK/sys.out"
grep -q '^scratch-sys ok' "$WORK/sys.out" || die "the scratch sys project did not run"
unset CARGO_TARGET_DIR

echo
echo "rust: all tests passed"
