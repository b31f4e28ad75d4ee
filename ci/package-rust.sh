#!/usr/bin/env bash
# ci/package-rust.sh [OUT] — the two crates as `cargo publish` would upload them: writes the
# pack-time copy of the core into rust/slotlane-sys/core and of the embeddable server into
# rust/slotlane-sys/server (ci/vendor-core.sh; never committed), runs `cargo package -p slotlane-sys -p slotlane` (its verify step
# builds each packaged crate from target/package/, slotlane against the packaged
# slotlane-sys, where ../../core does not exist) and removes the copy again. The .crate
# files are left in rust/target/package/ (copied to OUT when given).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
copy=$root/rust/slotlane-sys/core
server_copy=$root/rust/slotlane-sys/server  # the embeddable server (feature server)
trap 'rm -rf "$copy" "$server_copy"' EXIT
bash "$root/ci/vendor-core.sh" "$copy"
bash "$root/ci/vendor-core.sh" --server "$server_copy"
cd "$root/rust"
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
# cargo keeps what it unpacked from a path registry under CARGO_HOME, keyed by the registry's
# path and the crate's version, and never unpacks it again: a second checkout at the same
# path (a fresh clone in CI) would verify against the previous one's sources. Our own
# crates' copies from local (unnamed, "-<hash>") registries are dropped first.
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/slotlane-sys-"$version" \
         "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/slotlane-"$version" \
         "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/-*/slotlane-sys-"$version".crate \
         "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/-*/slotlane-"$version".crate; do
  [ -e "$d" ] && rm -rf "$d"
done
# --allow-dirty: the copy is untracked (and a developer's tree may be dirty)
cargo package --allow-dirty -p slotlane-sys -p slotlane
if [ $# -gt 0 ]; then
  mkdir -p "$1"
  cp "${CARGO_TARGET_DIR:-target}/package/slotlane-sys-$version.crate" \
     "${CARGO_TARGET_DIR:-target}/package/slotlane-$version.crate" "$1/"
fi
