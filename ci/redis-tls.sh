# ci/redis-tls.sh — sourced by ci/redis-plain.sh and ci/redis-cluster.sh: the TLS side of
# their servers, from the environment.
# TLS: SL_REDIS_TLS_DIR (certificates of ci/tls-certs.sh) serves TLS only (port 0,
# tls-port PORT) with $SL_REDIS_TLS_CERT.crt/.key (default server), client certificates
# SL_REDIS_TLS_AUTH_CLIENTS (no, optional (default) or yes); redis-cli then speaks TLS.
# SL_REDIS_TLS_HOSTNAMES=1 (ci/redis-cluster.sh): node PORT announces the host name
# node-PORT.slotlane.test (cluster-announce-hostname) and serves host-node-PORT.slotlane.test.crt
# of ci/tls-certs.sh, a certificate naming only that host.
# SL_REDIS_TLS_PLAIN_OFFSET=N: plaintext too, on PORT+N (the same server both ways, for
# benchmarks that compare TLS with plaintext).
TLS_DIR=${SL_REDIS_TLS_DIR:-}
CLI_TLS=()
[ -n "$TLS_DIR" ] && CLI_TLS=(--tls --cacert "$TLS_DIR/ca.crt" --cert "$TLS_DIR/client.crt" --key "$TLS_DIR/client.key")
# a server that serves another certificate (an expired one, for tests) is still checked for PONG
[ -n "$TLS_DIR" ] && { [ "${SL_REDIS_TLS_CERT:-server}" != server ] || [ "${SL_REDIS_TLS_HOSTNAMES:-}" = 1 ]; } && CLI_TLS+=(--insecure)
tls_conf() { # tls_conf PORT: the config lines of the client port
  if [ -z "$TLS_DIR" ]; then echo "port $1"; return; fi
  local crt=${SL_REDIS_TLS_CERT:-server}
  [ "${SL_REDIS_TLS_HOSTNAMES:-}" = 1 ] && crt=host-node-$1.slotlane.test
  printf 'port %s\ntls-port %s\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\ntls-auth-clients %s\n' \
    "$([ -n "${SL_REDIS_TLS_PLAIN_OFFSET:-}" ] && echo $(($1 + SL_REDIS_TLS_PLAIN_OFFSET)) || echo 0)" \
    "$1" "$TLS_DIR/$crt.crt" "$TLS_DIR/$crt.key" "$TLS_DIR/ca.crt" "${SL_REDIS_TLS_AUTH_CLIENTS:-optional}"
}
