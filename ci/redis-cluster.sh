#!/usr/bin/env bash
# redis-cluster.sh — a throwaway Redis Cluster (Debian's redis-server 7.0) for tests.
#
#   ci/redis-cluster.sh start   DIR BASEPORT [NPRIMARIES=3] [NREPLICAS=0]
#   ci/redis-cluster.sh stop    DIR
#   ci/redis-cluster.sh status  DIR
#   ci/redis-cluster.sh kill    DIR PORT            # SIGKILL one node (a crash), wait until gone
#   ci/redis-cluster.sh restart DIR PORT            # start it again with its nodes.conf, wait until it rejoined
#   ci/redis-cluster.sh migrate DIR SLOT FROMPORT TOPORT
#   ci/redis-cluster.sh failover DIR PORT           # CLUSTER FAILOVER on replica PORT, wait until it is primary
#
# Ports: with N = NPRIMARIES x (1 + NREPLICAS) nodes, node i (0-based) serves clients on
# BASEPORT+i and its cluster bus on BASEPORT+N+i (redis 7 `cluster-port`), so a cluster
# uses 2N consecutive ports [BASEPORT, BASEPORT+2N) — all on 127.0.0.1. Nodes
# 0..NPRIMARIES-1 are the primaries (the slots split evenly in port order); replica k
# (0-based) of primary i is node NPRIMARIES x (1 + k) + i. start returns when every replica's
# link to its primary is up and its initial sync is over. Without NREPLICAS (or 0) the
# cluster is what it always was: NPRIMARIES nodes on 2 x NPRIMARIES ports.
# Roles change with failovers (kill of a primary, failover): the port layout above is the
# one start made, not the current roles; ask CLUSTER NODES for those.
#
# Files in DIR: ports (one client port per line), pids (one pid per line, same order),
# nprimaries, nreplicas, baseport, and one folder per node, DIR/PORT/, holding redis.conf,
# nodes.conf, redis.log and pid.
#
# start is idempotent: when DIR already holds a healthy cluster on the same ports it only
# checks it; leftovers of a dead one are stopped and wiped first. stop is idempotent.
#
# migrate moves SLOT live, step by step, as redis-cli --cluster reshard does:
# SETSLOT IMPORTING on the target, SETSLOT MIGRATING on the source, MIGRATE of the
# slot's keys in batches of $SL_MIGRATE_COUNT keys (default 3) with $SL_MIGRATE_DELAY
# seconds between batches (default 0.02) so a client load sees ASK redirects, then
# SETSLOT NODE on the target, the source and every other node. It is safe to call in a
# loop from a background process while a load runs.
#
# cluster-node-timeout is $SL_CLUSTER_NODE_TIMEOUT ms (default 3000): how long a killed
# primary goes unnoticed before its replica is promoted.
# Timeouts: $SL_CLUSTER_TIMEOUT seconds for every wait (default 30). Every failure
# prints "redis-cluster.sh: ..." on stderr and exits non-zero.
set -euo pipefail

REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
TIMEOUT=${SL_CLUSTER_TIMEOUT:-30}
HOST=127.0.0.1
. "$(dirname "$0")/redis-tls.sh"   # SL_REDIS_TLS_*: TLS servers (tls_conf, CLI_TLS)

die() { echo "redis-cluster.sh: $*" >&2; exit 1; }
usage() { sed -n '2,10p' "$0" >&2; exit 2; }

cli() { local port=$1; shift; "$REDIS_CLI" "${CLI_TLS[@]}" -h "$HOST" -p "$port" --raw "$@" 2>&1; }

# alive PID: the process exists and is not a zombie (an orphaned server's exit status may
# be collected late, or never, by whatever reaps orphans here)
alive() {
  [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
  local st; st=$(cat "/proc/$1/stat" 2>/dev/null || true)
  st=${st##*) }; st=${st%% *}   # the state field follows "(comm) "
  [ -n "$st" ] && [ "$st" != Z ]
}

dead() { ! alive "$1"; }
ping_ok() { [ "$("$REDIS_CLI" "${CLI_TLS[@]}" -h "$HOST" -p "$1" ping 2>/dev/null)" = "PONG" ]; }

# wait_until SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.1 s.
wait_until() {
  local secs=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  while ! "$@"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      die "timed out after ${secs}s waiting for: $what"
    fi
    sleep 0.1
  done
}

check_port_num() {
  [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ] || die "bad port: $1"
}

port_in_use() {
  # true when something listens on 127.0.0.1:$1 (or any address)
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

node_pid() { cat "$DIR/$1/pid" 2>/dev/null || true; }

write_pids() {
  : > "$DIR/pids.tmp"
  local p
  while read -r p; do
    [ -n "$p" ] && echo "$(node_pid "$p")" >> "$DIR/pids.tmp"
  done < "$DIR/ports"
  mv "$DIR/pids.tmp" "$DIR/pids"
}

# Starts the node of client port $1 from its redis.conf (nodes.conf kept), waits for PONG.
launch_node() {
  local port=$1 nd="$DIR/$1"
  local old; old=$(node_pid "$port")
  if alive "$old" && ping_ok "$port"; then return 0; fi
  if port_in_use "$port"; then die "port $port is already in use by another process"; fi
  ( cd "$nd" && exec "$REDIS_SERVER" "$nd/redis.conf" </dev/null >/dev/null 2>&1 ) &
  local pid=$!
  # redis-server does not daemonize here (daemonize no): $! is the server itself.
  echo "$pid" > "$nd/pid"
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until ping_ok "$port"; do
    if ! alive "$pid"; then
      echo "--- $nd/redis.log (tail)" >&2; tail -n 20 "$nd/redis.log" >&2 || true
      die "redis-server on port $port exited during startup"
    fi
    [ "$(date +%s)" -ge "$deadline" ] && die "redis-server on port $port did not answer PING within ${TIMEOUT}s"
    sleep 0.05
  done
}

write_conf() {
  local port=$1 bus=$2 nd="$DIR/$1"
  mkdir -p "$nd"
  cat > "$nd/redis.conf" <<EOF
# written by ci/redis-cluster.sh
bind $HOST
$(tls_conf "$port")
$([ -n "$TLS_DIR" ] && printf 'tls-cluster yes\ntls-replication yes\n')
protected-mode no
daemonize no
dir $nd
logfile $nd/redis.log
cluster-enabled yes
cluster-config-file $nd/nodes.conf
cluster-port $bus
cluster-announce-ip $HOST
$([ "${SL_REDIS_TLS_HOSTNAMES:-}" = 1 ] && echo "cluster-announce-hostname node-$port.slotlane.test")
cluster-node-timeout ${SL_CLUSTER_NODE_TIMEOUT:-3000}
cluster-require-full-coverage no
save ""
appendonly no
databases 1
EOF
}

# All nodes answer cluster_state:ok, agree on CLUSTER SLOTS, and cover the 16384 slots.
cluster_ready() {
  local p first="" cur
  while read -r p; do
    [ -z "$p" ] && continue
    # (outputs are captured first: grep -q closing a pipe early would trip pipefail)
    local info nodes
    info=$(cli "$p" cluster info) || return 1
    grep -q '^cluster_state:ok' <<<"$info" || return 1
    grep -q '^cluster_slots_assigned:16384' <<<"$info" || return 1
    cur=$(cli "$p" cluster slots) || return 1
    cur=${cur//$'\r'/}
    # a node still in handshake shows up with a different id/ordering: require equality
    if [ -z "$first" ]; then first=$cur; elif [ "$cur" != "$first" ]; then return 1; fi
    # every node must know all the others as connected
    nodes=$(cli "$p" cluster nodes) || return 1
    [ "$(grep -c ' connected' <<<"$nodes")" -ge "$(grep -c . "$DIR/ports")" ] || return 1
  done < "$DIR/ports"
  [ -n "$first" ]
}

node_id() { cli "$1" cluster myid | tr -d '\r\n' || true; }

cmd_status() {
  [ -f "$DIR/ports" ] || die "no cluster in $DIR"
  local p
  while read -r p; do
    local pid; pid=$(node_pid "$p")
    if alive "$pid" && ping_ok "$p"; then
      local info; info=$(cli "$p" cluster info || true)
      echo "$p pid=$pid $(grep '^cluster_state' <<<"$info" | tr -d '\r' || true)"
    else
      echo "$p down"
    fi
  done < "$DIR/ports"
}

cmd_stop() {
  [ -d "$DIR" ] || return 0
  local pids=() p pid
  for f in "$DIR"/*/pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if alive "$pid"; then
      # only signal a redis-server: never an unrelated process that reused the pid
      if grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
      fi
    fi
    rm -f "$f"
  done
  local deadline=$(( $(date +%s) + 10 ))
  for pid in "${pids[@]}"; do
    while alive "$pid"; do
      if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
      sleep 0.05
    done
  done
  rm -f "$DIR/pids"
}

cmd_start() {
  local base=$1 n=${2:-3} nrep=${3:-0}
  check_port_num "$base"
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || die "bad NPRIMARIES: $n"
  [[ "$nrep" =~ ^[0-9]+$ ]] && [ "$nrep" -le 4 ] || die "bad NREPLICAS: $nrep"
  local total=$((n * (1 + nrep)))
  check_port_num $((base + 2 * total - 1))
  command -v "$REDIS_SERVER" >/dev/null || die "$REDIS_SERVER not found"
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)

  # Idempotence: same layout, every node alive and the cluster healthy -> nothing to do.
  if [ -f "$DIR/ports" ] && [ "$(cat "$DIR/baseport" 2>/dev/null)" = "$base" ] \
     && [ "$(cat "$DIR/nprimaries" 2>/dev/null)" = "$n" ] \
     && [ "$(cat "$DIR/nreplicas" 2>/dev/null || echo 0)" = "$nrep" ]; then
    local healthy=1 p
    while read -r p; do alive "$(node_pid "$p")" && ping_ok "$p" || healthy=0; done < "$DIR/ports"
    if [ $healthy = 1 ] && cluster_ready; then
      write_pids; echo "redis-cluster.sh: cluster already running in $DIR"; return 0
    fi
  fi
  cmd_stop
  # wipe the previous cluster's state (only our own files)
  rm -rf "$DIR"/[0-9]* "$DIR/ports" "$DIR/pids" "$DIR/baseport" "$DIR/nprimaries" "$DIR/nreplicas"

  local i port ports=() all=()
  for ((i = 0; i < total; i++)); do
    port=$((base + i))
    all+=("$port")
    [ "$i" -lt "$n" ] && ports+=("$port")
    write_conf "$port" $((base + total + i))
  done
  printf '%s\n' "${all[@]}" > "$DIR/ports"
  echo "$base" > "$DIR/baseport"; echo "$n" > "$DIR/nprimaries"; echo "$nrep" > "$DIR/nreplicas"
  for port in "${all[@]}"; do
    port_in_use "$port" && die "port $port is already in use"
    port_in_use $((port + total)) && die "cluster bus port $((port + total)) is already in use"
  done
  for port in "${all[@]}"; do launch_node "$port"; done
  write_pids

  if [ "$n" -ge 3 ]; then
    local addrs=()
    for port in "${ports[@]}"; do addrs+=("$HOST:$port"); done
    local out
    if ! out=$("$REDIS_CLI" "${CLI_TLS[@]}" --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes 2>&1); then
      echo "$out" >&2; die "redis-cli --cluster create failed"
    fi
  else
    # redis-cli refuses fewer than 3 primaries: assign the ranges and MEET by hand.
    local per=$((16384 / n)) lo hi
    for ((i = 0; i < n; i++)); do
      lo=$((i * per)); hi=$(( i == n - 1 ? 16383 : (i + 1) * per - 1 ))
      [ "$(cli "${ports[$i]}" cluster addslotsrange "$lo" "$hi")" = OK ] || die "ADDSLOTSRANGE on ${ports[$i]} failed"
    done
    for ((i = 1; i < n; i++)); do
      [ "$(cli "${ports[$i]}" cluster meet "$HOST" "${ports[0]}" $((base + total)))" = OK ] || die "MEET failed"
    done
  fi
  # The replicas: each meets the cluster, then replicates its primary once it knows it.
  local k rport pid_of
  for ((k = 0; k < nrep; k++)); do
    for ((i = 0; i < n; i++)); do
      rport=$((base + n * (1 + k) + i))
      [ "$(cli "$rport" cluster meet "$HOST" "${ports[0]}" $((base + total)))" = OK ] || die "MEET of replica $rport failed"
    done
  done
  for ((k = 0; k < nrep; k++)); do
    for ((i = 0; i < n; i++)); do
      rport=$((base + n * (1 + k) + i))
      pid_of=$(node_id "${ports[$i]}")
      wait_until "$TIMEOUT" "replica $rport to replicate ${ports[$i]}" replicate_ok "$rport" "$pid_of"
    done
  done
  wait_until "$TIMEOUT" "cluster_state:ok and one CLUSTER SLOTS view on every node" cluster_ready
  wait_until "$TIMEOUT" "every replica's link up and synced" replicas_synced
  wait_until "$TIMEOUT" "every node's CLUSTER SLOTS naming every node" slots_name_all
  echo "redis-cluster.sh: $n primaries x $nrep replicas ready on ports ${all[*]} (dir $DIR)"
}

# replicate_ok PORT PRIMARY_ID: CLUSTER REPLICATE answered OK (it fails until PORT knows the id).
replicate_ok() { [ "$(cli "$1" cluster replicate "$2")" = OK ]; }

# Every node that is a replica (by its own INFO) has its link up and no sync running, and
# every live node knows NPRIMARIES x NREPLICAS replicas (CLUSTER NODES), so every node's
# CLUSTER SLOTS names them all.
replicas_synced() {
  local p info nodes want
  want=$(( $(cat "$DIR/nprimaries") * $(cat "$DIR/nreplicas" 2>/dev/null || echo 0) ))
  while read -r p; do
    [ -z "$p" ] && continue
    alive "$(node_pid "$p")" || continue
    nodes=$(cli "$p" cluster nodes) || return 1
    [ "$(awk '$3 ~ /slave/ && $3 !~ /fail/' <<<"$nodes" | grep -c .)" -ge "$want" ] || return 1
    info=$(cli "$p" info replication) || return 1
    grep -q '^role:slave' <<<"$info" || continue
    grep -q '^master_link_status:up' <<<"$info" || return 1
    grep -q '^master_sync_in_progress:0' <<<"$info" || return 1
  done < "$DIR/ports"
}

# Every node's CLUSTER SLOTS names every node of DIR/ports (Redis 7.0 leaves a replica out
# until the cluster bus has told it the replica's replication offset).
slots_name_all() {
  local p q slots
  while read -r p; do
    [ -z "$p" ] && continue
    slots=$(cli "$p" cluster slots) || return 1
    slots=${slots//$'\r'/}
    while read -r q; do
      [ -z "$q" ] && continue
      grep -qx "$q" <<<"$slots" || return 1
    done < "$DIR/ports"
  done < "$DIR/ports"
}

# failover PORT: a graceful CLUSTER FAILOVER on replica PORT; returns when PORT is a primary
# by its own view, every node agrees on the slot map again, and the old primary follows it.
cmd_failover() {
  local port=$1; require_node "$port"
  local info; info=$(cli "$port" info replication)
  grep -q '^role:slave' <<<"$info" || die "node $port is not a replica"
  local r; r=$(cli "$port" cluster failover); [[ "$r" == *OK* ]] || die "CLUSTER FAILOVER on $port: $r"
  wait_until "$TIMEOUT" "node $port to become a primary" is_primary "$port"
  wait_until "$TIMEOUT" "cluster_state:ok and one CLUSTER SLOTS view on every node" cluster_ready
  wait_until "$TIMEOUT" "every replica's link up and synced" replicas_synced
  wait_until "$TIMEOUT" "every node's CLUSTER SLOTS naming every node" slots_name_all
  echo "redis-cluster.sh: node $port is a primary"
}

is_primary() { grep -q '^role:master' <<<"$(cli "$1" info replication)"; }

require_node() {
  [ -f "$DIR/ports" ] || die "no cluster in $DIR (run start first)"
  grep -qx "$1" "$DIR/ports" || die "port $1 is not a node of the cluster in $DIR"
}

cmd_kill() {
  local port=$1; require_node "$port"
  local pid; pid=$(node_pid "$port")
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    wait_until "$TIMEOUT" "node $port (pid $pid) to exit" dead "$pid"
  fi
  echo "redis-cluster.sh: node $port killed"
}

cmd_restart() {
  local port=$1; require_node "$port"
  [ -f "$DIR/$port/nodes.conf" ] || die "$DIR/$port/nodes.conf is missing: cannot rejoin"
  launch_node "$port"
  write_pids
  wait_until "$TIMEOUT" "node $port to rejoin (cluster_state:ok everywhere)" cluster_ready
  # a node that comes back as a replica (its primary was failed over) is synced and known
  if [ "$(cat "$DIR/nreplicas" 2>/dev/null || echo 0)" != 0 ]; then
    wait_until "$TIMEOUT" "every replica's link up and synced" replicas_synced
    wait_until "$TIMEOUT" "every node's CLUSTER SLOTS naming every node" slots_name_all
  fi
  echo "redis-cluster.sh: node $port rejoined"
}

cmd_migrate() {
  local slot=$1 from=$2 to=$3
  [[ "$slot" =~ ^[0-9]+$ ]] && [ "$slot" -lt 16384 ] || die "bad slot: $slot"
  require_node "$from"; require_node "$to"
  [ "$from" != "$to" ] || die "FROMPORT and TOPORT are the same"
  local count=${SL_MIGRATE_COUNT:-3} delay=${SL_MIGRATE_DELAY:-0.02}
  local from_id to_id
  from_id=$(node_id "$from"); to_id=$(node_id "$to")
  [[ "$from_id" =~ ^[0-9a-f]{40}$ ]] || die "cannot read the id of node $from: $from_id"
  [[ "$to_id" =~ ^[0-9a-f]{40}$ ]] || die "cannot read the id of node $to: $to_id"
  local owner
  owner=$(cli "$from" cluster nodes | tr -d '\r' | awk -v s="$slot" '
      { for (i = 9; i <= NF; i++) { r = $i; if (r ~ /^\[/) continue;
          n = split(r, b, "-"); lo = b[1]; hi = (n > 1 ? b[2] : b[1]);
          if (s + 0 >= lo + 0 && s + 0 <= hi + 0) { print $2; exit } } }' || true)
  owner=${owner%%@*}; owner=${owner##*:}
  [ "$owner" = "$from" ] || die "slot $slot is owned by port ${owner:-none} according to $from, not by $from"

  local r
  r=$(cli "$to" cluster setslot "$slot" importing "$from_id"); [[ "$r" == *OK* ]] || die "SETSLOT IMPORTING on $to: $r"
  r=$(cli "$from" cluster setslot "$slot" migrating "$to_id"); [[ "$r" == *OK* ]] || die "SETSLOT MIGRATING on $from: $r"
  local keys moved=0
  while :; do
    mapfile -t keys < <(cli "$from" cluster getkeysinslot "$slot" "$count" | tr -d '\r' | grep -v '^$' || true)
    [ "${#keys[@]}" -eq 0 ] && break
    r=$(cli "$from" migrate "$HOST" "$to" "" 0 5000 replace keys "${keys[@]}")
    [[ "$r" == *OK* || "$r" == *NOKEY* ]] || die "MIGRATE of slot $slot from $from to $to: $r"
    moved=$((moved + ${#keys[@]}))
    sleep "$delay"
  done
  # the target first (it then owns the slot), then the source, then everyone else
  r=$(cli "$to" cluster setslot "$slot" node "$to_id"); [[ "$r" == *OK* ]] || die "SETSLOT NODE on $to: $r"
  r=$(cli "$from" cluster setslot "$slot" node "$to_id"); [[ "$r" == *OK* ]] || die "SETSLOT NODE on $from: $r"
  local p
  while read -r p; do
    [ "$p" = "$from" ] || [ "$p" = "$to" ] && continue
    alive "$(node_pid "$p")" || continue
    cli "$p" cluster setslot "$slot" node "$to_id" >/dev/null || true
  done < "$DIR/ports"
  echo "redis-cluster.sh: slot $slot moved from $from to $to ($moved keys)"
}

[ $# -ge 2 ] || usage
CMD=$1; DIR=$2; shift 2
[ -n "$DIR" ] || die "empty DIR"
if [ -d "$DIR" ]; then DIR=$(cd "$DIR" && pwd); fi
case "$CMD" in
  start)   [ $# -ge 1 ] || usage; cmd_start "$@" ;;
  stop)    cmd_stop; echo "redis-cluster.sh: stopped ($DIR)" ;;
  status)  cmd_status ;;
  kill)    [ $# -eq 1 ] || usage; cmd_kill "$1" ;;
  restart) [ $# -eq 1 ] || usage; cmd_restart "$1" ;;
  failover) [ $# -eq 1 ] || usage; cmd_failover "$1" ;;
  migrate) [ $# -eq 3 ] || usage; cmd_migrate "$1" "$2" "$3" ;;
  *) usage ;;
esac
