/* tls.h: the small interface the connection code and both drivers use for TLS, whatever
 * implements it: src/tls/openssl.c in a build with the tls part (SL_WITH_TLS defined, see
 * build.cfg), tls_none.c otherwise (every call answers SL_EUNSUPPORTED). One sl__tls_conn
 * per TLS connection, owned by its node; the configuration (sl_tls) is shared and
 * refcounted. Nothing here is part of the ABI. */
#ifndef SL_TLS_H
#define SL_TLS_H

#include <stddef.h>
#include <sys/types.h>
#include "slotlane.h"

typedef struct sl__tls_conn sl__tls_conn;

/* What a handshake step waits for. */
#define SL__TLS_WANT_READ 1
#define SL__TLS_WANT_WRITE 2

/* What name a connection's certificate is verified against (conn.c decides, per node). */
typedef struct sl__tls_peer {
    const char *name;            /* host name or IP literal to verify; NULL: chain only */
    const char *sni;             /* host name sent as SNI; NULL: none (never an IP) */
} sl__tls_peer;

/* A new reference to a configuration (the client's own). */
void sl__tls_ref(sl_tls *t);
/* How t wants names chosen: its verify mode, server name and node names. */
sl_tls_verify sl__tls_verify_mode(const sl_tls *t);
const char *sl__tls_server_name(const sl_tls *t);
sl_tls_node_names sl__tls_node_names(const sl_tls *t);

/* Starts TLS on a connected socket: 0 and *out, or SL_ETLS/SL_ENOMEM with err. */
int sl__tls_conn_new(sl_tls *t, int fd, const sl__tls_peer *peer, sl__tls_conn **out, char *err, size_t cap);
/* One non-blocking handshake step: 0 done (and verified), SL__TLS_WANT_READ/WRITE, or
 * SL_ETLS with err saying what failed. */
int sl__tls_handshake(sl__tls_conn *tc, char *err, size_t cap);
/* As recv()/send() on a non-blocking socket: bytes, 0 closed (read), or -1 with errno
 * EAGAIN (try again after the socket is ready) or another errno, sl__tls_errmsg saying
 * what failed. Writes never raise SIGPIPE. */
ssize_t sl__tls_read(sl__tls_conn *tc, void *buf, size_t len);
ssize_t sl__tls_write(sl__tls_conn *tc, const void *buf, size_t len);
/* Decrypted bytes OpenSSL holds that the socket will not report again. */
size_t sl__tls_pending(const sl__tls_conn *tc);
/* The last failure of read or write on tc. */
const char *sl__tls_errmsg(const sl__tls_conn *tc);
void sl__tls_conn_free(sl__tls_conn *tc);

#endif
