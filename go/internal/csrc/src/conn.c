/* conn: non-blocking TCP connections to nodes (TCP_NODELAY, connect deadline), TLS on
 * them (the handshake is part of connecting: a node is CONNECTED only once the server's
 * certificate is verified, so nothing is written before), the connection handshake
 * (HELLO 3, AUTH, SELECT) and reconnect backoff with jitter. The batch engine drives the
 * sockets; this module only opens, checks, reads, writes and closes them. */
#include "client.h"
#include "conn.h"
#include "engine.h"
#include "failover.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int resolve(sl_client *c, sl__node *n)
{
    if (n->resolved) return 0;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    char port[16];
    snprintf(port, sizeof port, "%d", n->port);
    int rc = getaddrinfo(n->host, port, &hints, &res);
    if (rc != 0 || !res) {
        sl__set_err(c, "cannot resolve %s: %s", n->host, gai_strerror(rc));
        return SL_EIO;
    }
    memcpy(&n->sa, res->ai_addr, res->ai_addrlen);
    n->salen = (socklen_t)res->ai_addrlen;
    n->resolved = 1;
    freeaddrinfo(res);
    return 0;
}

int sl__node_may_connect(const sl_client *c, const sl__node *n, uint64_t now)
{
    (void)c;
    return n->failures == 0 || now >= n->retry_at_ms;
}

int sl__node_connect_start(sl_client *c, sl__node *n)
{
    int rc = resolve(c, n);
    if (rc) goto fail;
    int fd = socket(n->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        sl__set_err(c, "socket: %s", strerror(errno));
        rc = SL_EIO;
        goto fail;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&n->sa, n->salen) != 0 && errno != EINPROGRESS) {
        sl__set_err(c, "connect to %s: %s", n->addr, strerror(errno));
        close(fd);
        rc = SL_EIO;
        goto fail;
    }
    n->fd = fd;
    n->state = SL__CONNECTING;
    n->tcp_up = 0;
    n->tls_want = 0;
    n->connect_deadline_ms = sl__now_ms() + (uint64_t)(c->opts.connect_timeout_ms > 0 ? c->opts.connect_timeout_ms : 2000);
    n->rbuf.len = n->rpos = 0;
    sl__resp_parser_init(&n->parser, &(sl__resp_limits){c->opts.max_bulk_len, c->opts.max_aggregate_len, c->opts.max_depth});
    return 0;
fail:
    sl__node_close(c, n, 1);
    return rc;
}

/* The name node n's certificate is verified against, and its SNI (tls.h). */
static void tls_peer(const sl_client *c, const sl__node *n, sl__tls_peer *p)
{
    const char *server_name = sl__tls_server_name(c->tls);
    p->name = n->host;
    if (n->seed) {
        if (server_name) p->name = server_name;
    } else {
        switch (sl__tls_node_names(c->tls)) {
        case SL_TLS_NODES_HOSTNAME:
            if (n->announced[0]) p->name = n->announced;
            break;
        case SL_TLS_NODES_SERVER_NAME:
            if (server_name) p->name = server_name;
            break;
        case SL_TLS_NODES_CHAIN_ONLY:
            p->name = NULL;
            break;
        default:
            break;
        }
    }
    p->sni = p->name ? p->name : (n->announced[0] ? n->announced : n->host);
}

int sl__node_connect_check(sl_client *c, sl__node *n)
{
    if (!n->tcp_up) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(n->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err) {
            /* The caller fails the node (sl__engine_node_failed), which closes the socket once:
             * closing it here as well counted the failure twice in the reconnect backoff. */
            sl__set_err(c, "connect to %s: %s", n->addr, strerror(err));
            return SL_EIO;
        }
        n->tcp_up = 1;
        if (c->tls) {
            char why[256];
            sl__tls_peer peer;
            tls_peer(c, n, &peer);
            int rc = sl__tls_conn_new(c->tls, n->fd, &peer, &n->tls, why, sizeof why);
            if (rc) {
                sl__set_err(c, "TLS to %s: %s", n->addr, why);
                c->tls_failed = 1;
                return rc;
            }
        }
    }
    if (n->tls) {
        char why[400];
        int rc = sl__tls_handshake(n->tls, why, sizeof why);
        if (rc > 0) {
            n->tls_want = rc;
            return 1;
        }
        if (rc < 0) {
            sl__set_err(c, "TLS to %s: %s", n->addr, why);
            c->tls_failed = 1;
            return rc;
        }
    }
    n->state = SL__CONNECTED;
    n->failures = 0;
    c->stats.connects++;
    if (n->ever_connected) c->stats.reconnects++;
    n->ever_connected = 1;
    sl__failover_node_up(c, n);
    return 0;
}

int sl__node_connect_events(const sl__node *n)
{
    if (!n->tcp_up) return POLLOUT;
    return n->tls_want == SL__TLS_WANT_WRITE ? POLLOUT : POLLIN;
}

void sl__node_connect_timed_out(sl_client *c, sl__node *n)
{
    if (n->tcp_up && n->tls) {
        sl__set_err(c, "TLS to %s: the handshake timed out (the server does not answer in TLS: a plaintext port?)", n->addr);
        c->tls_failed = 1;
    } else
        sl__set_err(c, "connect to %s timed out", n->addr);
}

ssize_t sl__node_recv(sl__node *n, void *buf, size_t len)
{
    if (n->tls) return sl__tls_read(n->tls, buf, len);
    return recv(n->fd, buf, len, 0);
}

ssize_t sl__node_send(sl__node *n, const void *buf, size_t len)
{
    if (!n->tls) return send(n->fd, buf, len, MSG_NOSIGNAL);
    ssize_t w = sl__tls_write(n->tls, buf, len);
    if (w < 0 && errno != EAGAIN) {
        /* A server that refused the connection (TLS 1.3: our certificate, checked after our
         * handshake ended) sent an alert and closed: the alert, still in the socket, says why
         * better than the reset the write met. */
        int saved = errno;
        char tmp[512];
        if (sl__tls_read(n->tls, tmp, sizeof tmp) < 0 && errno == EPROTO) return -1;
        errno = saved;
    }
    return w;
}

size_t sl__node_pending(const sl__node *n)
{
    return n->tls ? sl__tls_pending(n->tls) : 0;
}

const char *sl__node_io_error(const sl__node *n, int err)
{
    if (n->tls && sl__tls_errmsg(n->tls)[0]) return sl__tls_errmsg(n->tls);
    return strerror(err);
}

/* The only place a node's socket is closed. An event-loop driver polling the fd hears of
 * it first, so it stops polling before the fd is closed: libuv requires the poll handle
 * stopped before close(fd), and the fd number may be reused by the very next socket (a
 * reconnect in the same loop turn), which a still-active poll would then watch. */
void sl__node_close(sl_client *c, sl__node *n, int failed)
{
    int was_connected = n->state == SL__CONNECTED;
    if (n->async && c->async_hooks) c->async_hooks->closing(c, n);
    sl__tls_conn_free(n->tls);
    n->tls = NULL;
    n->tcp_up = 0;
    n->tls_want = 0;
    if (n->fd >= 0) close(n->fd);
    n->fd = -1;
    n->state = SL__DISCONNECTED;
    n->handshake_replies = 0;
    n->rbuf.len = n->rpos = 0;
    if (failed == 1 && was_connected) {
        /* A working connection that broke: the next batch reconnects at once (backoff is
         * for connects that fail), and the map may have changed. */
        n->failures = 0;
        sl__failover_node_lost(c, n);
    } else if (failed) {
        /* Exponential backoff with full jitter between min and the doubled delay. */
        int lo = c->opts.reconnect_min_ms > 0 ? c->opts.reconnect_min_ms : 1;
        int hi = c->opts.reconnect_max_ms > lo ? c->opts.reconnect_max_ms : lo;
        uint64_t d = (uint64_t)lo << (n->failures < 20 ? n->failures : 20);
        if (d > (uint64_t)hi) d = (uint64_t)hi;
        uint64_t wait = (uint64_t)lo + (d > (uint64_t)lo ? sl__rand(c) % (d - (uint64_t)lo + 1) : 0);
        n->failures++;
        n->retry_at_ms = sl__now_ms() + wait;
        /* A node that failed may have been failed over: look at the map again. */
        sl__failover_node_lost(c, n);
    }
}

static int append_argv(sl_client *c, sl__bytes *w, int argc, const char *const *argv)
{
    return sl__resp_encode_argv(&c->alloc, w, argc, argv, NULL);
}

int sl__node_handshake(sl_client *c, sl__node *n, sl__bytes *w)
{
    int replies = 0;
    const char *user = c->opts.username;
    const char *pass = c->opts.password;
    if (c->opts.resp_version == 3) {
        if (pass) {
            const char *argv[] = {"HELLO", "3", "AUTH", user ? user : "default", pass};
            if (append_argv(c, w, 5, argv)) return SL_ENOMEM;
        } else {
            const char *argv[] = {"HELLO", "3"};
            if (append_argv(c, w, 2, argv)) return SL_ENOMEM;
        }
        replies++;
    } else if (pass) {
        if (user) {
            const char *argv[] = {"AUTH", user, pass};
            if (append_argv(c, w, 3, argv)) return SL_ENOMEM;
        } else {
            const char *argv[] = {"AUTH", pass};
            if (append_argv(c, w, 2, argv)) return SL_ENOMEM;
        }
        replies++;
    }
    /* A replica serves reads of its primary's slots only after READONLY (read_from). */
    n->readonly = c->mode == SL_MODE_CLUSTER && c->opts.read_from != SL_READ_PRIMARY && n->replica;
    if (n->readonly) {
        const char *argv[] = {"READONLY"};
        if (append_argv(c, w, 1, argv)) return SL_ENOMEM;
        replies++;
    }
    if (c->mode == SL_MODE_PLAIN && c->opts.db > 0) {
        char db[24];
        db[sl__fmt_i64(db, c->opts.db)] = '\0';
        const char *argv[] = {"SELECT", db};
        if (append_argv(c, w, 2, argv)) return SL_ENOMEM;
        replies++;
    }
    return replies;
}
