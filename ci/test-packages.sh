#!/usr/bin/env bash
# ci/test-packages.sh [PACKAGE...] — every artifact slotlane ships, installed and run where
# no monorepo is (issue 15): each package is built from the checkout, then installed into a
# scratch folder under /tmp and used there by an example that talks to the bundled
# slotlane-server (build/server/slotlane-server, 3 shards, started here on free ports from
# 26000-26099, stopped by PID on exit). The examples run with a clean environment: PATH
# holds only the system folders and the toolchains' own (cargo, go), never the checkout.
#
#   PACKAGE: c python node rust java csharp (default: all of them; Go's module-cache build
#   is in ci/test-go.sh, which the Go suite runs anyway)
#
#   c       cmake --install of build/ into a prefix: include/, lib/libslotlane.{a,so},
#           lib/pkgconfig/slotlane.pc, lib/cmake/slotlane/; one example program built with
#           pkg-config (shared and --static) and with find_package(slotlane); and the
#           server library (lib/libslotlane_server.a, slotlane-server.pc): embed_cluster.c
#   python  python -m build: the sdist (its vendor/core and vendor/server written by setup.py's
#           sdist step) and the wheel, each pip-installed into a fresh venv that runs
#           ci/packages/example.py, then pytest on ci/packages/test_example_testing.py (the
#           plugin's fixtures start the embedded server: slotlane.testing)
#   node    npm pack (prepack writes vendor/core, postpack removes it), npm install of the
#           tarball into a scratch project (offline, node-gyp), ci/packages/example.js
#   rust    ci/package-rust.sh (cargo package of both crates, verified), a scratch project
#           depending on slotlane through [patch.crates-io] to the unpacked .crate folders;
#           its test (dev-dependency with the feature testing) starts the embedded server
#   java    mvn install: the jar (the JNI library for this platform inside) and the sources
#           jar; the sources jar rebuilds the jar offline in a scratch folder; a scratch Maven
#           project depends on io.slotlane:slotlane from the local repository (offline), runs
#           an example and a JUnit 5 test whose SlotlaneServerExtension starts the embedded server
#   csharp  csharp/pack.sh (.nupkg: lib/netstandard2.1, checked to reference only
#           netstandard; runtimes/linux-x64/native/libslotlane.so and libslotlane_server.so),
#           nuget install from a folder feed, a program compiled with mcs against it and run
#           under mono, one whose SlotlaneServer starts the embedded server (no URL given), and
#           an NUnit fixture on the package's SlotlaneServerFixture (content/) under nunit-console
# Every example checks its replies and prints "LANG ok"; the script fails otherwise.
# Measured (2026-12-01, commit 422e640, the shared 2-vCPU VM at load average 14-22):
# 8 min 36 s wall, 1 min 45 s CPU (user 1:35 + sys 0:09); by package, wall: c 12 s,
# python 155 s, node 73 s, rust 48 s, java 178 s, csharp 43 s.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${SL_BUILD_DIR:-$ROOT/build}
SERVER=$BUILD/server/slotlane-server
say() { echo "test-packages: $*" >&2; }
die() { say "$*"; exit 1; }
step() { printf '\n--- packages: %s (at %ss)\n' "$*" "$SECONDS"; }

ALL=(c python node rust java csharp)
[ $# -gt 0 ] && WANT=("$@") || WANT=("${ALL[@]}")

SCRATCH=$(mktemp -d /tmp/slotlane-packages.XXXXXX)
SERVER_PID=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  [ "${SL_KEEP_SCRATCH:-0}" = 1 ] && say "scratch kept: $SCRATCH" || rm -rf "$SCRATCH"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A clean environment for everything that runs in the scratch folders: the system's PATH
# plus the folders of the toolchains this machine keeps in the home directory, HOME (for
# their caches: ~/.cargo, ~/go, ~/.m2, ~/.npm), nothing of the checkout.
TOOL_PATH=/usr/local/bin:/usr/bin:/bin
for t in cargo go node mvn; do
  d=$(dirname "$(command -v "$t" 2>/dev/null || echo /usr/bin/x)")
  case ":$TOOL_PATH:" in *":$d:"*) ;; *) TOOL_PATH=$TOOL_PATH:$d ;; esac
done
case ":$TOOL_PATH:" in *":$ROOT"*) die "a toolchain lies inside the checkout: $TOOL_PATH" ;; esac
clean() { env -i PATH="$TOOL_PATH" HOME="$HOME" LANG=C.UTF-8 TMPDIR=/tmp "$@"; }

# ------------------------------------------------------------------ the server
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
start_server() {
  [ -x "$SERVER" ] || die "no $SERVER (make build)"
  local p
  for p in $(seq 26000 4 26096); do
    if port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)); then PORT=$p; break; fi
  done
  [ -n "${PORT:-}" ] || die "no 3 free ports in 26000-26099"
  "$SERVER" --shards 3 --port "$PORT" >"$SCRATCH/server.log" 2>&1 &
  SERVER_PID=$!
  for i in 0 1 2; do
    for _ in $(seq 200); do
      [ "$(redis-cli -p $((PORT + i)) ping 2>/dev/null)" = PONG ] && break
      kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SCRATCH/server.log" >&2; die "slotlane-server exited"; }
      sleep 0.05
    done
    [ "$(redis-cli -p $((PORT + i)) ping 2>/dev/null)" = PONG ] || die "slotlane-server port $((PORT + i)) does not answer"
  done
  URL=redis://127.0.0.1:$PORT
  say "slotlane-server (3 shards) at $URL"
}

expect_ok() {  # expect_ok NAME FILE: the example printed "NAME ok" (Maven's colour codes aside)
  sed -i 's/\x1b\[[0-9;]*m//g' "$2"
  grep -q "^$1 ok" "$2" || { cat "$2" >&2; die "the $1 example did not print '$1 ok'"; }
  grep "^$1 ok" "$2"
}

# ------------------------------------------------------------------ C
pkg_c() {
  step "C: cmake --install, then pkg-config and find_package(slotlane) from $SCRATCH/c"
  local P=$SCRATCH/c/prefix
  cmake --install "$BUILD" --prefix "$P" >/dev/null
  for f in include/slotlane.h include/slotlane_uv.h lib/libslotlane.a lib/libslotlane.so \
           lib/pkgconfig/slotlane.pc lib/cmake/slotlane/slotlaneConfig.cmake; do
    [ -e "$P/$f" ] || die "cmake --install did not install $f"
  done
  mkdir -p "$SCRATCH/c/pc" "$SCRATCH/c/cm"
  cp ci/packages/example.c "$SCRATCH/c/pc/example.c"
  cp ci/packages/example.c "$SCRATCH/c/cm/example.c"
  ( cd "$SCRATCH/c/pc" && clean PKG_CONFIG_PATH="$P/lib/pkgconfig" sh -c '
      cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags slotlane) example.c -o example-shared $(pkg-config --libs slotlane) &&
      cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags --static slotlane) example.c -o example-static \
         -Wl,-Bstatic -lslotlane -Wl,-Bdynamic $(pkg-config --libs-only-L --static slotlane) \
         $(pkg-config --libs --static slotlane | sed "s/-lslotlane//")' )
  local deps
  deps=$(clean LD_LIBRARY_PATH="$P/lib" ldd "$SCRATCH/c/pc/example-shared")
  grep -q "$P/lib/libslotlane.so" <<<"$deps" || die "example-shared does not link the installed libslotlane.so"
  deps=$(ldd "$SCRATCH/c/pc/example-static")
  if grep -q libslotlane <<<"$deps"; then die "example-static links libslotlane.so"; fi
  clean LD_LIBRARY_PATH="$P/lib" "$SCRATCH/c/pc/example-shared" "$URL" > "$SCRATCH/c/pc.out" 2>&1 || { cat "$SCRATCH/c/pc.out" >&2; die "the pkg-config example failed"; }
  expect_ok c "$SCRATCH/c/pc.out"
  clean "$SCRATCH/c/pc/example-static" "$URL" > "$SCRATCH/c/pc-static.out" 2>&1 || { cat "$SCRATCH/c/pc-static.out" >&2; die "the static pkg-config example failed"; }
  expect_ok c "$SCRATCH/c/pc-static.out"
  cat > "$SCRATCH/c/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(slotlane_example C)
find_package(slotlane 0.1 REQUIRED)
add_executable(example example.c)
target_link_libraries(example PRIVATE slotlane::slotlane)
CM
  ( cd "$SCRATCH/c/cm" && clean cmake -S . -B build -DCMAKE_PREFIX_PATH="$P" >/dev/null && clean cmake --build build >/dev/null ) \
    || die "the find_package(slotlane) example did not build"
  clean "$SCRATCH/c/cm/build/example" "$URL" > "$SCRATCH/c/cm.out" 2>&1 || { cat "$SCRATCH/c/cm.out" >&2; die "the find_package example failed"; }
  expect_ok c "$SCRATCH/c/cm.out"
  # the embeddable server for a C test suite: libslotlane_server.a + slotlane_server.h +
  # slotlane-server.pc, and server/examples/embed_cluster.c (a 4-shard server in-process)
  for f in include/slotlane_server.h lib/libslotlane_server.a lib/pkgconfig/slotlane-server.pc; do
    [ -e "$P/$f" ] || die "cmake --install did not install $f"
  done
  mkdir -p "$SCRATCH/c/srv" && cp server/examples/embed_cluster.c "$SCRATCH/c/srv/"
  ( cd "$SCRATCH/c/srv" && clean PKG_CONFIG_PATH="$P/lib/pkgconfig" sh -c '
      cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags slotlane slotlane-server) embed_cluster.c -o embed_cluster \
         $(pkg-config --libs slotlane-server) $(pkg-config --libs slotlane)' ) || die "embed_cluster.c did not build against the installed server library"
  clean LD_LIBRARY_PATH="$P/lib" "$SCRATCH/c/srv/embed_cluster" > "$SCRATCH/c/srv.out" 2>&1 \
    || { cat "$SCRATCH/c/srv.out" >&2; die "the embedded-server example failed"; }
  grep -q "^100 keys over 4 shards read back" "$SCRATCH/c/srv.out" || { cat "$SCRATCH/c/srv.out" >&2; die "the embedded-server example did not read its keys back"; }
  echo "c-testing ok: $(tail -n 1 "$SCRATCH/c/srv.out")"
}

# ------------------------------------------------------------------ Python
pkg_python() {
  step "Python: sdist and wheel, each installed into a fresh venv in $SCRATCH/python"
  local Y=$SCRATCH/python V=$BUILD/python-venv
  # the build tools (setuptools, cffi, build) live in the venv ci/test-python.sh uses
  if ! "$V/bin/python" -c 'import cffi, setuptools, build, wheel; assert int(setuptools.__version__.split(".")[0]) >= 70' 2>/dev/null; then
    python3 -m venv "$V"
    "$V/bin/pip" install -q cffi "setuptools>=70" wheel build
  fi
  mkdir -p "$Y"
  rm -rf python/build python/src/slotlane.egg-info
  "$V/bin/python" -m build --sdist --wheel --no-isolation -o "$Y/dist" python >"$Y/build.log" 2>&1 \
    || { tail -30 "$Y/build.log" >&2; die "python -m build failed"; }
  rm -rf python/build python/src/slotlane.egg-info
  local sdist wheel
  sdist=$(ls "$Y"/dist/slotlane-*.tar.gz)
  wheel=$(ls "$Y"/dist/slotlane-*.whl)
  tar tzf "$sdist" > "$Y/sdist.list"
  for f in vendor/core/build.cfg vendor/core/describe.py vendor/core/src/client.c vendor/core/include/slotlane.h \
           vendor/core/VERSION src/slotlane/py.typed vendor/server/build.cfg vendor/server/src/instance.c \
           vendor/server/include/slotlane_server.h; do
    grep -q "/$f\$" "$Y/sdist.list" || die "the sdist lacks $f"
  done
  [ ! -e python/vendor ] || die "the sdist step wrote into python/ (python/vendor exists)"
  # cffi (and, for the sdist, the build tools) from pip's cache or the index: the packages'
  # own dependencies, nothing of the checkout
  cp ci/packages/example.py "$Y/example.py"
  local kind art
  for kind in wheel sdist; do
    [ $kind = wheel ] && art=$wheel || art=$sdist
    clean python3 -m venv "$Y/venv-$kind"
    if [ $kind = sdist ]; then
      clean "$Y/venv-$kind/bin/pip" install -q cffi "setuptools>=70" wheel >/dev/null
      ( cd "$Y" && clean "$Y/venv-$kind/bin/pip" install -q --no-build-isolation "$art" ) >"$Y/$kind.log" 2>&1
    else
      ( cd "$Y" && clean "$Y/venv-$kind/bin/pip" install -q "$art" ) >"$Y/$kind.log" 2>&1
    fi || { cat "$Y/$kind.log" >&2; die "pip install of the $kind failed"; }
    ( cd "$Y" && clean "$Y/venv-$kind/bin/python" example.py "$URL" ) > "$Y/$kind.out" 2>&1 \
      || { cat "$Y/$kind.out" >&2; die "the Python example failed with the $kind"; }
    grep -q "venv-$kind/lib" "$Y/$kind.out" || { cat "$Y/$kind.out" >&2; die "the example did not import the $kind's install"; }
    expect_ok python "$Y/$kind.out"
    # a user's pytest test: the package's plugin (pytest11) starts the embedded server
    mkdir -p "$Y/tests-$kind"
    cp ci/packages/test_example_testing.py "$Y/tests-$kind/"
    clean "$Y/venv-$kind/bin/pip" install -q pytest >/dev/null
    ( cd "$Y/tests-$kind" && clean "$Y/venv-$kind/bin/python" -m pytest -q -s -p no:cacheprovider test_example_testing.py ) \
      > "$Y/$kind-testing.out" 2>&1 || { cat "$Y/$kind-testing.out" >&2; die "the pytest example failed with the $kind"; }
    expect_ok python-testing "$Y/$kind-testing.out"
  done
}

# ------------------------------------------------------------------ Node
pkg_node() {
  step "Node: npm pack, then npm install <tarball> in a scratch project ($SCRATCH/node)"
  local N=$SCRATCH/node
  mkdir -p "$N/app"
  ( cd node && npm pack --loglevel=error --pack-destination "$N" >/dev/null ) || die "npm pack failed"
  [ ! -e node/vendor ] || die "npm pack left node/vendor behind (postpack)"
  local tgz
  tgz=$(ls "$N"/slotlane-*.tgz)
  tar tzf "$tgz" > "$N/pack.list"
  for f in vendor/core/build.cfg vendor/core/describe.py vendor/core/src/batch.c vendor/core/src/uv/async.c \
           vendor/core/include/slotlane.h vendor/core/include/slotlane_uv.h vendor/core/VERSION \
           binding.gyp src/addon.c lib/index.js lib/index.d.ts \
           vendor/server/build.cfg vendor/server/include/slotlane_server.h src/server_addon.c testing.js testing.d.ts; do
    grep -qx "package/$f" "$N/pack.list" || die "the package lacks $f"
  done
  # offline: the package has no dependencies; node-gyp takes Node's headers from /usr
  ( cd "$N/app" && clean npm init -y >/dev/null && clean npm_config_nodedir=/usr npm install --offline \
      --no-audit --no-fund --loglevel=error "$tgz" ) >"$N/install.log" 2>&1 || { cat "$N/install.log" >&2; die "npm install of the tarball failed"; }
  grep -q 'vendor/core/src/batch.o' "$N"/app/node_modules/slotlane/build/slotlane.target.mk \
    || die "the packed install did not build from the core it carries"
  cp ci/packages/example.js "$N/app/example.js"
  ( cd "$N/app" && clean node example.js "$URL" ) > "$N/app.out" 2>&1 || { cat "$N/app.out" >&2; die "the Node example failed"; }
  grep -q "$N/app/node_modules/slotlane" "$N/app.out" || die "the example did not load the installed package"
  expect_ok node "$N/app.out"
  # the testing helper of the installed package: the embedded server in the process
  cp ci/packages/example_testing.js "$N/app/example_testing.js"
  ( cd "$N/app" && clean node example_testing.js ) > "$N/testing.out" 2>&1 || { cat "$N/testing.out" >&2; die "the Node testing example failed"; }
  expect_ok node-testing "$N/testing.out"
}

# ------------------------------------------------------------------ Rust
pkg_rust() {
  step "Rust: ci/package-rust.sh (cargo package of both crates), then a scratch project on the .crate files"
  local R=$SCRATCH/rust
  bash ci/package-rust.sh "$R/crates" 2>&1 | grep -E '^ *(Packaged|Verifying|Finished)|error' || true
  [ "${PIPESTATUS[0]}" = 0 ] || die "ci/package-rust.sh failed"
  mkdir -p "$R/unpacked" "$R/app/src"
  for c in "$R"/crates/*.crate; do tar xzf "$c" -C "$R/unpacked"; done
  local sys app
  sys=$(ls -d "$R"/unpacked/slotlane-sys-*)
  app=$(ls -d "$R"/unpacked/slotlane-[0-9]*)
  [ -f "$sys/core/build.cfg" ] && [ -f "$sys/core/src/client.c" ] || die "the packaged slotlane-sys lacks its copy of the core"
  # the crates as a registry would serve them: crates.io's names, patched to the unpacked crates
  cat > "$R/app/Cargo.toml" <<TOML
[package]
name = "scratch-app"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
slotlane = "$(basename "$app" | sed 's/^slotlane-//')"
[dev-dependencies]
slotlane = { version = "$(basename "$app" | sed 's/^slotlane-//')", features = ["testing"] }
[patch.crates-io]
slotlane = { path = "$app" }
slotlane-sys = { path = "$sys" }
TOML
  # a user's test: slotlane::testing starts the embedded server (compiled from the packaged
  # slotlane-sys's server/ copy) in the test process
  mkdir -p "$R/app/tests"
  cat > "$R/app/tests/helper.rs" <<'RS'
#[test]
fn a_cluster_from_the_helper() {
    let srv = slotlane::testing::Server::start(4).unwrap();
    let mut c = slotlane::Client::connect(srv.url()).unwrap();
    for i in 0..64 {
        c.set(format!("pkg:rs:{i}"), i, None).unwrap();
    }
    for i in 0..64 {
        assert_eq!(c.get(format!("pkg:rs:{i}")).unwrap(), Some(i.to_string().into_bytes()));
    }
    assert_eq!(c.nodes().unwrap().len(), 4);
    println!("rust-testing ok: 64 keys over 4 shards at {}", srv.url());
}
RS
  cat > "$R/app/src/main.rs" <<'RS'
use slotlane::{Client, Pipeline, Value};
fn main() -> Result<(), slotlane::Error> {
    let url = std::env::args().nth(1).expect("URL");
    let mut c = Client::connect(url.as_str())?;
    let mut p = Pipeline::new();
    for i in 0..32 {
        p.set(format!("pkg:rust:{i}"), i, None);
    }
    for i in 0..32 {
        p.get(format!("pkg:rust:{i}"));
    }
    let r = p.exec(&mut c);
    for i in 0..32 {
        assert_eq!(r[32 + i], Ok(Value::Bulk(i.to_string().into_bytes().into())));
    }
    let flavor = slotlane::core_version();
    println!("rust ok: 32 SET + 32 GET, {:?} mode, core {flavor}", c.mode());
    Ok(())
}
RS
  ( cd "$R/app" && clean CARGO_BUILD_JOBS=2 CARGO_TARGET_DIR="$R/target" cargo run -q --offline -- "$URL" ) > "$R/app.out" 2>&1 \
    || { cat "$R/app.out" >&2; die "the Rust scratch project failed"; }
  expect_ok rust "$R/app.out"
  [ -f "$sys/server/build.cfg" ] && [ -f "$sys/server/src/instance.c" ] || die "the packaged slotlane-sys lacks its copy of the server"
  ( cd "$R/app" && clean CARGO_BUILD_JOBS=2 CARGO_TARGET_DIR="$R/target" cargo test -q --offline --test helper -- --nocapture ) \
    > "$R/test.out" 2>&1 || { cat "$R/test.out" >&2; die "the Rust scratch project's test failed"; }
  expect_ok rust-testing "$R/test.out"
}

# ------------------------------------------------------------------ Java
pkg_java() {
  step "Java: mvn install (jar with the native library, sources jar), a rebuild from the sources jar, a scratch project"
  local J=$SCRATCH/java M2=${SL_M2_REPO:-$HOME/.m2/repository}
  local V
  V=$(cat VERSION)
  mkdir -p "$J"
  # the scratch project's JUnit and Surefire: the versions java/pom.xml uses (cached in ~/.m2 by its build)
  local JUNIT SUREFIRE
  JUNIT=$(sed -n 's:.*<junit.version>\(.*\)</junit.version>.*:\1:p' java/pom.xml)
  SUREFIRE=$(grep -A1 '<artifactId>maven-surefire-plugin</artifactId>' java/pom.xml | sed -n 's:.*<version>\(.*\)</version>.*:\1:p' | head -n1)
  [ -n "$JUNIT" ] && [ -n "$SUREFIRE" ] || die "could not read the JUnit and Surefire versions from java/pom.xml"
  # the jar and its sources jar into the local repository (the tests are ci/test-java.sh's)
  ( cd java && mvn -q -B -Dstyle.color=never install -Dmaven.test.skip=true ) >"$J/install.log" 2>&1 \
    || { tail -40 "$J/install.log" >&2; die "mvn install failed"; }
  local D=$M2/io/slotlane/slotlane/$V
  local jar=$D/slotlane-$V.jar src=$D/slotlane-$V-sources.jar
  [ -f "$jar" ] && [ -f "$src" ] || die "mvn install did not put slotlane-$V.jar and -sources.jar into $D"
  cmp -s "$jar" "java/target/slotlane-$V.jar" || die "the installed jar is not the one just built (another build installed one?)"
  local arch
  case "$(uname -m)" in x86_64|amd64) arch=x86_64 ;; aarch64|arm64) arch=aarch64 ;; *) arch=$(uname -m) ;; esac
  unzip -l "$jar" > "$J/jar.list"
  grep -q "io/slotlane/native/linux-$arch/libslotlane_jni.so" "$J/jar.list" || die "the jar lacks the native library for linux-$arch"
  unzip -l "$src" | awk '{print $4}' > "$J/sources.list"
  for f in pom.xml build-native.sh native/slotlane.i native/core/build.cfg native/core/src/client.c \
           native/core/include/slotlane.h src/main/java/io/slotlane/SlotlaneClient.java; do
    grep -qx "$f" "$J/sources.list" || die "the sources jar lacks $f"
  done
  if grep -q 'slotlaneJNI.java\|slotlane_wrap.c' "$J/sources.list"; then die "the sources jar carries SWIG output"; fi
  # the sources jar rebuilds the jar where no monorepo is (offline: the plugins are cached)
  mkdir -p "$J/rebuild" && (cd "$J/rebuild" && unzip -q "$src")
  ( cd "$J/rebuild" && clean JAVA_HOME="${JAVA_HOME:-}" mvn -o -q -B -Dstyle.color=never package -Dmaven.test.skip=true ) >"$J/rebuild.log" 2>&1 \
    || { tail -40 "$J/rebuild.log" >&2; die "the sources jar did not rebuild the jar"; }
  unzip -l "$J/rebuild/target/slotlane-$V.jar" > "$J/rebuilt.list"
  grep -q "io/slotlane/native/linux-$arch/libslotlane_jni.so" "$J/rebuilt.list" || die "the rebuilt jar lacks the native library"
  # a scratch project that depends on the installed artifact, offline
  mkdir -p "$J/app/src/main/java" "$J/app/src/test/java"
  cp ci/packages/Example.java "$J/app/src/main/java/Example.java"
  cp ci/packages/ExampleTest.java "$J/app/src/test/java/ExampleTest.java"
  cat > "$J/app/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>app</artifactId>
  <version>0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>io.slotlane</groupId><artifactId>slotlane</artifactId><version>$V</version></dependency>
    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId><version>$JUNIT</version><scope>test</scope></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
      <plugin><groupId>org.codehaus.mojo</groupId><artifactId>exec-maven-plugin</artifactId><version>3.5.1</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>$SUREFIRE</version></plugin>
    </plugins>
  </build>
</project>
POM
  ( cd "$J/app" && clean JAVA_HOME="${JAVA_HOME:-}" mvn -o -q -B -Dstyle.color=never compile exec:exec \
      -Dexec.executable=java "-Dexec.args=-cp %classpath Example $URL" ) > "$J/app.out" 2>&1 \
    || { tail -40 "$J/app.out" >&2; die "the Java scratch project failed"; }
  grep -q "$D/slotlane-$V.jar" "$J/app.out" || { cat "$J/app.out" >&2; die "the example did not load the jar from the local repository"; }
  expect_ok java "$J/app.out"
  # the user's JUnit 5 test: the jar's SlotlaneServerExtension starts the embedded server
  ( cd "$J/app" && clean JAVA_HOME="${JAVA_HOME:-}" mvn -o -B -Dstyle.color=never test ) > "$J/test.out" 2>&1 \
    || { tail -60 "$J/test.out" >&2; die "the Java scratch project's JUnit test failed"; }
  grep -q "Tests run: 1, Failures: 0, Errors: 0, Skipped: 0" "$J/test.out" || { cat "$J/test.out" >&2; die "the scratch JUnit test did not run"; }
  expect_ok java-testing "$J/test.out"
}

# ------------------------------------------------------------------ C#
pkg_csharp() {
  step "C#: csharp/pack.sh (.nupkg), nuget install from a folder feed, a scratch program under mono"
  local C=$SCRATCH/csharp V FAC=/usr/lib/mono/4.5/Facades/netstandard.dll
  V=$(cat VERSION)
  mkdir -p "$C/feed" "$C/app"
  bash csharp/pack.sh "$C/feed" >"$C/pack.log" 2>&1 || { tail -30 "$C/pack.log" >&2; die "csharp/pack.sh failed"; }
  grep 'references only netstandard' "$C/pack.log"
  local pkg=$C/feed/Slotlane.Client.$V.nupkg
  unzip -l "$pkg" | awk '{print $4}' > "$C/nupkg.list"
  for f in lib/netstandard2.1/Slotlane.Client.dll runtimes/linux-x64/native/libslotlane.so \
      runtimes/linux-x64/native/libslotlane_server.so build/Slotlane.Client.targets; do
    grep -qx "$f" "$C/nupkg.list" || die "the .nupkg lacks $f"
  done
  ( cd "$C/app" && clean nuget install Slotlane.Client -Version "$V" -Source "$C/feed" -OutputDirectory packages \
      -NonInteractive ) >"$C/install.log" 2>&1 || { cat "$C/install.log" >&2; die "nuget install failed"; }
  local P=$C/app/packages/Slotlane.Client.$V
  [ -f "$P/lib/netstandard2.1/Slotlane.Client.dll" ] || die "nuget install did not unpack lib/netstandard2.1"
  cp ci/packages/Example.cs ci/packages/ExampleTesting.cs "$C/app/"
  # what build/Slotlane.Client.targets does for a Mono consumer: the native libraries beside the program
  cp "$P/runtimes/linux-x64/native/libslotlane.so" "$P/runtimes/linux-x64/native/libslotlane_server.so" "$C/app/"
  cp "$P/lib/netstandard2.1/Slotlane.Client.dll" "$C/app/"
  ( cd "$C/app" && clean mcs -nologo -r:"$P/lib/netstandard2.1/Slotlane.Client.dll" -r:"$FAC" -out:Example.exe Example.cs \
      && clean mono Example.exe "$URL" ) > "$C/app.out" 2>&1 || { cat "$C/app.out" >&2; die "the C# scratch program failed"; }
  expect_ok csharp "$C/app.out"
  # the testing helper from the package alone: an embedded 4-shard server, no URL given
  ( cd "$C/app" && clean mcs -nologo -r:"$P/lib/netstandard2.1/Slotlane.Client.dll" -r:"$FAC" -out:ExampleTesting.exe \
      ExampleTesting.cs && clean mono ExampleTesting.exe ) > "$C/testing.out" 2>&1 \
    || { cat "$C/testing.out" >&2; die "the C# testing example failed"; }
  expect_ok csharp-testing "$C/testing.out"
  # the user's NUnit fixture on the package's fixture base (its source, from content/)
  local FIX=$P/content/Slotlane.Testing/SlotlaneServerFixture.cs NUNIT_FW=/usr/lib/cli/nunit.framework-2.6.3/nunit.framework.dll
  [ -f "$FIX" ] || die "nuget install did not unpack content/Slotlane.Testing/SlotlaneServerFixture.cs"
  cp ci/packages/ExampleFixtureTest.cs "$C/app/"
  ( cd "$C/app" && clean mcs -nologo -target:library -define:NUNIT2 -r:"$NUNIT_FW" -r:"$P/lib/netstandard2.1/Slotlane.Client.dll" \
      -r:"$FAC" -out:ExampleFixtureTest.dll ExampleFixtureTest.cs "$FIX" \
      && cp "$NUNIT_FW" . && clean nunit-console -nologo -noshadow -labels ExampleFixtureTest.dll ) > "$C/nunit.out" 2>&1 \
    || { cat "$C/nunit.out" >&2; die "the C# scratch NUnit fixture failed"; }
  grep -q "Tests run: 1, Errors: 0, Failures: 0" "$C/nunit.out" || { cat "$C/nunit.out" >&2; die "the scratch NUnit fixture did not run"; }
  expect_ok csharp-nunit "$C/nunit.out"
}

start_server
for p in "${WANT[@]}"; do
  case " ${ALL[*]} " in *" $p "*) ;; *) die "no package '$p' (one of: ${ALL[*]})" ;; esac
  declare -F "pkg_$p" >/dev/null || die "pkg_$p is not written yet"
  "pkg_$p"
done
echo
echo "packages: ${WANT[*]}: all installed and ran outside the checkout (${SECONDS}s)"
