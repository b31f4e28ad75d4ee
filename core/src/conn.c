/* conn: non-blocking TCP connections to nodes (TCP_NODELAY, connect deadline), the
 * connection handshake (HELLO 3, AUTH, SELECT) and reconnect backoff with jitter.
 * The batch engine drives the sockets; this module only opens, checks and closes them. */
#include "client.h"
#include "conn.h"
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
    n->connect_deadline_ms = sl__now_ms() + (uint64_t)(c->opts.connect_timeout_ms > 0 ? c->opts.connect_timeout_ms : 2000);
    n->rbuf.len = n->rpos = 0;
    sl__resp_parser_init(&n->parser, &(sl__resp_limits){c->opts.max_bulk_len, c->opts.max_aggregate_len, c->opts.max_depth});
    return 0;
fail:
    sl__node_close(c, n, 1);
    return rc;
}

int sl__node_connect_check(sl_client *c, sl__node *n)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(n->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err) {
        /* The caller fails the node (sl__engine_node_failed), which closes the socket once:
         * closing it here as well counted the failure twice in the reconnect backoff. */
        sl__set_err(c, "connect to %s: %s", n->addr, strerror(err));
        return SL_EIO;
    }
    n->state = SL__CONNECTED;
    n->failures = 0;
    c->stats.connects++;
    if (n->ever_connected) c->stats.reconnects++;
    n->ever_connected = 1;
    return 0;
}

/* The only place a node's socket is closed. An event-loop driver polling the fd hears of
 * it first, so it stops polling before the fd is closed: libuv requires the poll handle
 * stopped before close(fd), and the fd number may be reused by the very next socket (a
 * reconnect in the same loop turn), which a still-active poll would then watch. */
void sl__node_close(sl_client *c, sl__node *n, int failed)
{
    int was_connected = n->state == SL__CONNECTED;
    if (n->async && c->async_hooks) c->async_hooks->closing(c, n);
    if (n->fd >= 0) close(n->fd);
    n->fd = -1;
    n->state = SL__DISCONNECTED;
    n->handshake_replies = 0;
    n->rbuf.len = n->rpos = 0;
    if (failed == 1 && was_connected) {
        /* A working connection that broke: the next batch reconnects at once (backoff is
         * for connects that fail), and the map may have changed. */
        n->failures = 0;
        if (c->mode == SL_MODE_CLUSTER) c->topo.refresh_wanted = 1;
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
        if (c->mode == SL_MODE_CLUSTER) c->topo.refresh_wanted = 1;
    }
}

static int append_argv(sl_client *c, sl__bytes *w, int argc, const char *const *argv)
{
    return sl__resp_encode_argv(&c->alloc, w, argc, argv, NULL);
}

int sl__node_handshake(sl_client *c, sl__node *n, sl__bytes *w)
{
    (void)n;
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
    if (c->mode == SL_MODE_PLAIN && c->opts.db > 0) {
        char db[24];
        db[sl__fmt_i64(db, c->opts.db)] = '\0';
        const char *argv[] = {"SELECT", db};
        if (append_argv(c, w, 2, argv)) return SL_ENOMEM;
        replies++;
    }
    return replies;
}
