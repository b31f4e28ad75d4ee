#!/usr/bin/env bash
# ci/suite-servers.sh SUITE DIR WHAT... — the servers a test process needs, for suites run
# by their ecosystem's own command (`cargo test`, `go test`, `npm test`, ...) with nothing
# started by hand. WHAT is any of:
#   plain            Debian's redis-server, standalone (ci/redis-plain.sh)
#   cluster[:N]      a Redis Cluster of N primaries (default 3; ci/redis-cluster.sh)
#   bundled[:N]      slotlane-server, N shards (default 4), per-shard ports (built with
#                    cmake when build/server/slotlane-server is missing)
# Ports come from SUITE's range in ci/lib.sh's port map (a free block, chosen under a lock
# so that parallel test processes of one suite never pick the same ports).
# It prints one line NAME=redis://127.0.0.1:PORT per server, then "ready", then waits for
# its stdin to close and stops every server it started (by PID) — so a test process that
# holds the write end of a pipe to it gets its servers stopped when it exits, however it
# exits. SIGTERM/SIGINT stop them too. DIR holds the servers' files and is removed.
SL_SUITE=suite-servers
. "$(dirname "$0")/lib.sh"
[ $# -ge 3 ] || die "usage: $0 SUITE DIR plain|cluster[:N]|bundled[:N]..."
suite=$1 dir=$2
shift 2
mkdir -p "$dir"
sl_on_exit "rm -rf '$dir'"

need=0
for w in "$@"; do
  case $w in
    plain) need=$((need + 1)) ;;
    cluster) need=$((need + 6)) ;;
    cluster:*) need=$((need + 2 * ${w#cluster:})) ;;
    bundled) need=$((need + 4)) ;;
    bundled:*) need=$((need + ${w#bundled:})) ;;
    *) die "unknown server kind '$w'" ;;
  esac
done
bin=""
case " $* " in *" bundled"*) bin=$(sl_server_bin) ;; esac

# From SL_SUITE_SERVERS_FROM within the range (a suite's fixed-port tests keep the lower part).
exec 9>"/tmp/slotlane-ports-$suite.lock"
flock 9
base=$(sl_free_block "$suite" "$need" "${SL_SUITE_SERVERS_FROM:-$(sl_ports "$suite" | cut -d' ' -f1)}")
p=$base
urls=()
for w in "$@"; do
  case $w in
    plain)
      sl_on_exit "bash '$SL_ROOT/ci/redis-plain.sh' stop '$dir/plain'"
      bash "$SL_ROOT/ci/redis-plain.sh" start "$dir/plain" "$p" >/dev/null
      urls+=("plain=redis://127.0.0.1:$p"); p=$((p + 1)) ;;
    cluster*)
      n=3; [ "$w" = cluster ] || n=${w#cluster:}
      sl_on_exit "bash '$SL_ROOT/ci/redis-cluster.sh' stop '$dir/cluster'"
      bash "$SL_ROOT/ci/redis-cluster.sh" start "$dir/cluster" "$p" "$n" >/dev/null
      urls+=("cluster=redis://127.0.0.1:$p"); p=$((p + 2 * n)) ;;
    bundled*)
      n=4; [ "$w" = bundled ] || n=${w#bundled:}
      SL_SERVER_BIN=$bin sl_start_server pid "$dir/slotlane-server.log" \
        --shards "$n" --port "$p" --port-mode per-shard --bind 127.0.0.1
      urls+=("bundled=redis://127.0.0.1:$p"); p=$((p + n)) ;;
  esac
done
flock -u 9
exec 9>&-
printf '%s\n' "${urls[@]}" ready
exec 1>&-
cat >/dev/null || true  # until the test process closes its end (it exited)
