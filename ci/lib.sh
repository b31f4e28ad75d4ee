# ci/lib.sh — sourced by every ci/test-*.sh (and ci/test.sh, ci/suite-servers.sh):
#   step/say/die        messages prefixed with the suite's name ($SL_SUITE)
#   sl_ports SUITE      the suite's loopback port range "LO HI", from the one port map below
#   sl_free_block SUITE COUNT [FROM]   the first base in the suite's range with COUNT free ports
#   sl_on_exit CMD...   runs CMD at exit (last registered first), also on failure or a signal
#   sl_stop_pid PID [NAME]             SIGTERM, then SIGKILL after 5 s; only a live process
#                                      whose command line contains NAME (a PID may be reused)
#   sl_server_bin       build/server/slotlane-server ($SL_SERVER_BIN), built with cmake if missing
#   sl_start_server VAR LOG ARGS...    starts slotlane-server ARGS (--port P --shards N read
#                                      from ARGS), waits until every shard answers PING, sets
#                                      VAR to its PID and stops it at exit
#   sl_wait_ping PORT PID              until PORT answers PING (fails when PID exits first)
# Sourcing it sets -euo pipefail, SL_ROOT (the checkout) and the exit trap.
set -euo pipefail
SL_ROOT=${SL_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export SL_ROOT
SL_SUITE=${SL_SUITE:-$(basename "$0" .sh)}

step() { printf '\n--- %s: %s\n' "$SL_SUITE" "$*"; }
say() { printf '%s: %s\n' "$SL_SUITE" "$*" >&2; }
die() { say "$*"; exit 1; }

# The port map: every suite's own loopback range. Two suites whose ranges differ may run at
# the same time (ci/test.sh runs them in parallel); a suite uses only its range, and a test
# helper that starts servers for a bare `cargo test`/`pytest`/`go test` run uses its
# language's range too. Keep this table the only place that assigns ranges.
sl_ports() {
  case $1 in
    conformance)      echo "20300 20399" ;;  # ci/test-conformance.sh
    core-integration) echo "20400 20499" ;;  # ci/test-core-integration.sh (core/itests)
    server)           echo "21000 21999" ;;  # ci/test-server.sh, server/tests/integration
    python)           echo "22000 22499" ;;  # python/tests (conftest.py: blocks of 100, ports.py)
    rust)             echo "22500 22999" ;;  # ci/test-rust.sh, rust/ tests (slotlane-testing)
    go)               echo "23000 23499" ;;  # go/ tests (servers_test.go), ci/test-go.sh smoke
    java)             echo "23500 23799" ;;  # java/ tests (TestServers: blocks of 100, PortBlocks)
    csharp)           echo "24500 24599" ;;  # csharp/ tests (Servers.cs: blocks of 50, PortBlocks.cs)
    bench)            echo "24700 24799" ;;  # bench/run.py; bench/test_run.py uses 24760-24799
    node)             echo "25000 25299" ;;  # node/ tests
    packages)         echo "26000 26099" ;;  # ci/test-packages.sh
    load)             echo "26300 26399" ;;  # bench/load/test_load.sh
    bench-scan)       echo "26500 26599" ;;  # bench/scan/run.py (its Redis Cluster)
    bench-pubsub)     echo "26800 26899" ;;  # bench/pubsub/run.py (its redis-server)
    embed)            echo "27000 27099" ;;  # reserved: the embedded server and the testing helpers use port 0 (ephemeral)
    bench-failover)   echo "26700 26799" ;;  # bench/failover/run.py (its 3 x 1 Redis Cluster)
    *) die "sl_ports: no port range for '$1' (add it to ci/lib.sh)" ;;
  esac
}

sl_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

sl_free_block() {  # sl_free_block SUITE COUNT [FROM]
  local range lo hi n=$2 b i ok
  range=$(sl_ports "$1")
  lo=${range% *} hi=${range#* }
  b=${3:-$lo}
  while [ $((b + n - 1)) -le "$hi" ]; do
    ok=1
    for ((i = 0; i < n; i++)); do
      if ! sl_port_free $((b + i)); then ok=0; break; fi
    done
    [ $ok = 1 ] && { echo "$b"; return 0; }
    b=$((b + n))
  done
  die "no block of $n free ports in $1's range $lo-$hi"
}

SL_AT_EXIT=()
sl_on_exit() { SL_AT_EXIT+=("$*"); }
sl__exit() {
  local rc=$? i
  trap - EXIT INT TERM
  for ((i = ${#SL_AT_EXIT[@]} - 1; i >= 0; i--)); do
    eval "${SL_AT_EXIT[i]}" >/dev/null 2>&1 || true
  done
  exit "$rc"
}
trap sl__exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sl_stop_pid() {  # sl_stop_pid PID [NAME]
  local pid=$1 name=${2:-}
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  if [ -n "$name" ] && ! grep -qa -- "$name" "/proc/$pid/cmdline" 2>/dev/null; then return 0; fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null || true
}

sl_server_bin() {
  local bin=${SL_SERVER_BIN:-${SL_BUILD_DIR:-$SL_ROOT/build}/server/slotlane-server}
  if [ ! -x "$bin" ]; then
    [ -z "${SL_SERVER_BIN:-}" ] || die "SL_SERVER_BIN=$bin is not an executable"
    local dir lock
    dir=$(dirname "$(dirname "$bin")")
    # one build at a time per checkout (parallel test processes may all find it missing)
    lock=/tmp/slotlane-server-build.$(printf '%s' "$SL_ROOT" | md5sum | cut -c1-12).lock
    (
      flock 8
      if [ ! -x "$bin" ]; then
        say "building slotlane-server (cmake, $bin is missing)"
        cmake -S "$SL_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
        cmake --build "$dir" -j2 --target slotlane-server >/dev/null
      fi
    ) 8>"$lock"
  fi
  echo "$bin"
}

sl_wait_ping() {  # sl_wait_ping PORT PID
  local port=$1 pid=$2
  # Bounded only so that a server that never listens fails the run instead of hanging it.
  for _ in $(seq 400); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

sl_start_server() {  # sl_start_server VAR LOG ARGS...
  local var=$1 log=$2 bin port=7000 shards=1 a prev="" pid i
  shift 2
  bin=$(sl_server_bin)
  for a in "$@"; do
    case $prev in --port) port=$a ;; --shards) shards=$a ;; esac
    prev=$a
  done
  "$bin" "$@" >"$log" 2>&1 &
  pid=$!
  sl_on_exit "sl_stop_pid $pid slotlane-server"
  printf -v "$var" '%s' "$pid"
  local wait_shards=$shards
  case " $* " in *" one-port "*) wait_shards=1 ;; esac
  for ((i = 0; i < wait_shards; i++)); do
    sl_wait_ping $((port + i)) "$pid" || { cat "$log" >&2; die "slotlane-server $* does not answer on $((port + i))"; }
  done
}
