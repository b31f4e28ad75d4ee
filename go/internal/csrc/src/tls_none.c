/* tls_none: TLS in a build without the tls part (no OpenSSL): the public calls answer
 * SL_EUNSUPPORTED and no connection ever gets here, since no client can hold a
 * configuration. A build with the tls part defines SL_WITH_TLS and src/tls/openssl.c. */
#include "tls.h"

#ifndef SL_WITH_TLS
#include <errno.h>
#include <stdio.h>

int sl_tls_supported(void) { return 0; }

int sl_tls_options_init(sl_tls_options *opts, unsigned int version)
{
    if (!opts || version == 0 || version > SL_TLS_OPTIONS_VERSION) return SL_EINVAL;
    sl_tls_options d = SL_TLS_OPTIONS_INIT;
    *opts = d;
    return 0;
}

int sl_tls_new(sl_tls **out, const sl_tls_options *opts, char *errmsg, size_t errmsg_cap)
{
    (void)opts;
    if (out) *out = NULL;
    if (errmsg && errmsg_cap) snprintf(errmsg, errmsg_cap, "TLS is not supported by this build of slotlane (built without OpenSSL)");
    return SL_EUNSUPPORTED;
}

void sl_tls_free(sl_tls *tls) { (void)tls; }
void sl__tls_ref(sl_tls *t) { (void)t; }
sl_tls_verify sl__tls_verify_mode(const sl_tls *t) { (void)t; return SL_TLS_VERIFY_FULL; }
const char *sl__tls_server_name(const sl_tls *t) { (void)t; return NULL; }
sl_tls_node_names sl__tls_node_names(const sl_tls *t) { (void)t; return SL_TLS_NODES_ADDRESS; }

int sl__tls_conn_new(sl_tls *t, int fd, const sl__tls_peer *peer, sl__tls_conn **out, char *err, size_t cap)
{
    (void)t, (void)fd, (void)peer;
    *out = NULL;
    if (err && cap) snprintf(err, cap, "TLS is not supported by this build of slotlane");
    return SL_EUNSUPPORTED;
}
int sl__tls_handshake(sl__tls_conn *tc, char *err, size_t cap) { (void)tc, (void)err, (void)cap; return SL_EUNSUPPORTED; }
ssize_t sl__tls_read(sl__tls_conn *tc, void *buf, size_t len) { (void)tc, (void)buf, (void)len; errno = ENOTSUP; return -1; }
ssize_t sl__tls_write(sl__tls_conn *tc, const void *buf, size_t len) { (void)tc, (void)buf, (void)len; errno = ENOTSUP; return -1; }
size_t sl__tls_pending(const sl__tls_conn *tc) { (void)tc; return 0; }
const char *sl__tls_errmsg(const sl__tls_conn *tc) { (void)tc; return "TLS is not supported by this build"; }
void sl__tls_conn_free(sl__tls_conn *tc) { (void)tc; }
#else
typedef int sl__tls_none_is_empty; /* ISO C wants a declaration in every file */
#endif
