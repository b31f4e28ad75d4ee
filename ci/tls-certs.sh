#!/usr/bin/env bash
# tls-certs.sh — certificates for the TLS tests, made with `openssl` at test time (no key
# is ever committed). Every suite that tests TLS calls it: core/tests (test_tls),
# core/itests (ci/test-core-integration.sh) and the bindings' harnesses.
#
#   ci/tls-certs.sh DIR [HOSTNAME...]
#
# Writes into DIR (created; EC P-256 keys, unencrypted PEM):
#   ca.crt ca.key             the test CA
#   server.crt server.key     a server certificate of the CA for IP:127.0.0.1, IP:::1 and
#                             DNS:localhost (valid 2 days; serverAuth and clientAuth: the
#                             nodes of a tls-cluster also present it to each other)
#   client.crt client.key     a client certificate of the CA (mutual TLS)
#   other-ca.crt              an unrelated CA (a "wrong CA" for the client)
#   expired.crt expired.key   a server certificate of the CA that expired yesterday
#   wrong-name.crt wrong-name.key  a server certificate of the CA for DNS:wrong.example only
#   cadir/                    ca.crt under its subject hash (a CA directory, c_rehash form)
#   host-NAME.crt host-NAME.key  for each HOSTNAME given: a server certificate of the CA for
#                             DNS:NAME only (no IP): a node that announces NAME (ci/redis-cluster.sh
#                             with SL_REDIS_TLS_HOSTNAMES=1) verifies only by that name
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,21p' "$0" >&2; exit 2; }
DIR=$1
shift
mkdir -p "$DIR"
cd "$DIR"
OSSL="openssl"
key() { $OSSL genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { # ca NAME CN
  key "$1.key"
  $OSSL req -x509 -new -key "$1.key" -out "$1.crt" -subj "/CN=$2" -days 2 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
leaf() { # leaf NAME CN DAYS EXT
  key "$1.key"
  $OSSL req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf '%s\n' "$4" > "$1.ext"
  $OSSL x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -set_serial "0x$($OSSL rand -hex 8)" \
    -out "$1.crt" -days "$3" -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
ca ca slotlane-test-ca
ca other-ca slotlane-other-ca
rm -f other-ca.key
leaf server slotlane-test-server 2 "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
leaf client slotlane-test-client 2 "extendedKeyUsage=clientAuth"
leaf expired slotlane-test-expired -1 "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
leaf wrong-name wrong.example 2 "subjectAltName=DNS:wrong.example
extendedKeyUsage=serverAuth,clientAuth"
mkdir -p cadir
cp ca.crt "cadir/$($OSSL x509 -in ca.crt -noout -subject_hash).0"
for h in "$@"; do
  leaf "host-$h" "$h" 2 "subjectAltName=DNS:$h
extendedKeyUsage=serverAuth,clientAuth"
done
