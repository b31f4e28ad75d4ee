#!/usr/bin/env bash
# redis-plain.sh — a throwaway standalone redis-server (Debian's 7.0) for tests.
#
#   ci/redis-plain.sh start DIR PORT    # idempotent: a healthy server already there is kept
#   ci/redis-plain.sh stop  DIR         # idempotent: kills by PID, waits until gone
#
# 127.0.0.1 only, no persistence (save "" appendonly no). DIR holds redis.conf, redis.log,
# pid and port. Waits are bounded by $SL_CLUSTER_TIMEOUT seconds (default 30).
set -euo pipefail
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
TIMEOUT=${SL_CLUSTER_TIMEOUT:-30}
HOST=127.0.0.1
. "$(dirname "$0")/redis-tls.sh"   # SL_REDIS_TLS_*: TLS servers (tls_conf, CLI_TLS)

die() { echo "redis-plain.sh: $*" >&2; exit 1; }
usage() { sed -n '2,5p' "$0" >&2; exit 2; }
# alive PID: the process exists and is not a zombie (an orphaned server's exit status may
# be collected late, or never, by whatever reaps orphans here)
alive() {
  [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
  local st; st=$(cat "/proc/$1/stat" 2>/dev/null || true)
  st=${st##*) }; st=${st%% *}   # the state field follows "(comm) "
  [ -n "$st" ] && [ "$st" != Z ]
}
ping_ok() { [ "$("$REDIS_CLI" "${CLI_TLS[@]}" -h "$HOST" -p "$1" ping 2>/dev/null)" = "PONG" ]; }
port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

cmd_stop() {
  [ -f "$DIR/pid" ] || return 0
  local pid; pid=$(cat "$DIR/pid")
  if alive "$pid" && grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$(( $(date +%s) + 10 ))
    while alive "$pid"; do
      [ "$(date +%s)" -ge "$deadline" ] && kill -KILL "$pid" 2>/dev/null || true
      sleep 0.05
    done
  fi
  rm -f "$DIR/pid"
}

cmd_start() {
  local port=$1
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "bad port: $port"
  mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
  if [ -f "$DIR/pid" ] && [ "$(cat "$DIR/port" 2>/dev/null)" = "$port" ] && alive "$(cat "$DIR/pid")" && ping_ok "$port"; then
    echo "redis-plain.sh: already running on $port ($DIR)"; return 0
  fi
  cmd_stop
  port_in_use "$port" && die "port $port is already in use"
  cat > "$DIR/redis.conf" <<EOC
# written by ci/redis-plain.sh
bind $HOST
$(tls_conf "$port")
protected-mode no
daemonize no
dir $DIR
logfile $DIR/redis.log
save ""
appendonly no
EOC
  echo "$port" > "$DIR/port"
  ( cd "$DIR" && exec "$REDIS_SERVER" "$DIR/redis.conf" </dev/null >/dev/null 2>&1 ) &
  local pid=$!
  echo "$pid" > "$DIR/pid"
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until ping_ok "$port"; do
    if ! alive "$pid"; then tail -n 20 "$DIR/redis.log" >&2 || true; die "redis-server on $port exited during startup"; fi
    [ "$(date +%s)" -ge "$deadline" ] && die "redis-server on $port did not answer PING within ${TIMEOUT}s"
    sleep 0.05
  done
  echo "redis-plain.sh: ready on $port (pid $pid, dir $DIR)"
}

[ $# -ge 2 ] || usage
CMD=$1; DIR=$2; shift 2
[ -n "$DIR" ] || die "empty DIR"
if [ -d "$DIR" ]; then DIR=$(cd "$DIR" && pwd); fi
case "$CMD" in
  start) [ $# -eq 1 ] || usage; cmd_start "$1" ;;
  stop) cmd_stop; echo "redis-plain.sh: stopped ($DIR)" ;;
  *) usage ;;
esac
