/* conn.h: one node and its connection (conn.c), the
 * reply segments queued on it (engine.c) and the hooks an event-loop driver sets (uv/async.c). Nothing here is part of the ABI. */
#ifndef SL_CONN_H
#define SL_CONN_H

#include <stdint.h>
#include <sys/socket.h>
#include "alloc.h"
#include "resp.h"
#include "slotlane.h"
#include "tls.h"
#include "url.h"

#define SL__ERRMSG_MAX 512

struct sl_batch;

typedef enum sl__conn_state {
    SL__DISCONNECTED = 0,
    SL__CONNECTING = 1,          /* non-blocking connect (and TLS handshake) in progress */
    SL__CONNECTED = 2
} sl__conn_state;

/* One server node and its connection. Owned by the topology; its index never changes. */
typedef struct sl__node {
    char host[SL__HOST_MAX];
    int port;
    char addr[SL__HOST_MAX + 8]; /* "host:port", as MOVED names it */
    struct sockaddr_storage sa;  /* resolved once */
    socklen_t salen;
    int resolved;

    int fd;                      /* -1 when disconnected */
    sl__conn_state state;
    int ever_connected;
    int primary;                 /* serves at least one slot in the current map */
    int replica;                 /* a replica in the current map (failover.c: replica reads) */
    int readonly;                /* this connection's handshake sent READONLY */
    int down;                    /* reported down (SL_EVENT_NODE_DOWN) and not up again */
    int promoted;                /* its promotion was reported (SL_EVENT_FAILOVER) */
    uint64_t connect_deadline_ms;
    uint64_t retry_at_ms;        /* backoff: no connect attempt before this */
    int failures;                /* consecutive failed connects */
    int handshake_replies;       /* handshake replies still to come on this connection */
    int seed;                    /* a seed of the URL (TLS: verified against server_name) */
    char announced[SL__HOST_MAX];/* the host name the cluster announces for it, or "" */
    int tcp_up;                  /* the TCP connect completed (CONNECTING: the TLS handshake runs) */
    int tls_want;                /* the handshake waits for SL__TLS_WANT_READ or _WRITE */
    sl__tls_conn *tls;           /* the connection's TLS, NULL for plaintext */
    uint64_t conn_read;          /* bytes read on this connection (0: the server never answered) */

    sl__bytes rbuf;              /* bytes read, not yet parsed: rbuf.ptr[rpos, len) */
    size_t rpos;
    sl__resp_parser parser;

    /* What is queued on the connection, shared by the batches in flight (engine.c). */
    sl__bytes obuf;              /* bytes to write: obuf.ptr[opos, len), then oext */
    size_t opos;
    const uint8_t *oext;         /* zero copy: a blocking execution's caller bytes */
    size_t oext_len;
    struct sl_batch *oext_owner;
    struct sl__seg *segs;        /* whose the next replies are, in write order: segs[shead, +slen) */
    size_t shead, slen, scap;
    sl__records skip_recs;       /* replies parsed for nobody (handshakes, abandoned batches) */
    sl__bytes skip_data;
    void *async;                 /* async.c's per-node state */
} sl__node;

/* A run of replies on one connection: the next `left` replies belong to `batch`. */
#define SL__SEG_BATCH 0
#define SL__SEG_HANDSHAKE 1      /* HELLO/AUTH/SELECT of a new connection: an error fails it */
#define SL__SEG_DISCARD 2        /* a batch that gave up: the replies are dropped */
typedef struct sl__seg {
    struct sl_batch *batch;
    uint32_t left;
    uint8_t kind;
} sl__seg;

/* Notifications from the engine to an event-loop driver (async.c). */
typedef struct sl__async_hooks {
    void (*opened)(sl_client *c, size_t k);   /* node k has a new socket (connecting) */
    void (*queued)(sl_client *c, size_t k);   /* node k has bytes to write / replies to wait for */
    void (*closing)(sl_client *c, sl__node *n); /* n's socket is about to be closed (sl__node_close) */
    void (*release)(sl_client *c);            /* sl_client_free: complete and detach (may be NULL) */
} sl__async_hooks;

/* conn.c */
int sl__node_connect_start(sl_client *c, sl__node *n);    /* 0, or <0 with errmsg */
/* After the socket was ready (any event while CONNECTING): 0 connected (TLS verified),
 * 1 still connecting (the TLS handshake waits: poll for sl__node_connect_events), <0 failed
 * (the caller fails the node). */
int sl__node_connect_check(sl_client *c, sl__node *n);
int sl__node_connect_events(const sl__node *n);           /* CONNECTING: POLLIN and/or POLLOUT */
void sl__node_connect_timed_out(sl_client *c, sl__node *n); /* sets the message of a connect past its deadline */
/* I/O on a connected node, plaintext or TLS, as recv()/send() (never SIGPIPE). */
ssize_t sl__node_recv(sl__node *n, void *buf, size_t len);
ssize_t sl__node_send(sl__node *n, const void *buf, size_t len);
size_t sl__node_pending(const sl__node *n);               /* bytes TLS holds that poll() will not report */
const char *sl__node_io_error(const sl__node *n, int err); /* what a failed recv/send means */
/* failed: 0 a clean close; 1 a failure (backoff unless the connection had been working);
 * 2 a failure that always backs off (the handshake was refused). */
void sl__node_close(sl_client *c, sl__node *n, int failed);
int sl__node_handshake(sl_client *c, sl__node *n, sl__bytes *wbuf); /* appends HELLO/AUTH/SELECT, returns replies to skip */
int sl__node_may_connect(const sl_client *c, const sl__node *n, uint64_t now);

#endif
