/* client: the public handle, its options (versioned and sized), creation with mode
 * detection, counters, the last error message, cancellation and the one-command helper. */
#include "batch.h"
#include "client.h"
#include "conn.h"
#include "topology.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef SL_VERSION_STRING
#define SL_VERSION_STRING "0.0.0"
#endif

const char *sl_version(void)
{
    return SL_VERSION_STRING;
}

const char *sl_strerror(int code)
{
    switch (code) {
    case SL_OK: return "success";
    case SL_EINVAL: return "invalid argument";
    case SL_ENOMEM: return "out of memory";
    case SL_EIO: return "I/O error";
    case SL_ETIMEOUT: return "timed out";
    case SL_EPROTO: return "protocol error";
    case SL_ESERVER: return "server error reply";
    case SL_EREDIRECT: return "too many redirects";
    case SL_ECANCELLED: return "cancelled";
    case SL_ECLUSTER: return "cluster error";
    case SL_ETOOSMALL: return "buffer too small";
    case SL_EUNSUPPORTED: return "not supported";
    case SL_ESTATE: return "invalid state";
    case SL_EBUSY: return "the client's in-flight limit is reached";
    case SL_EFORK: return "used in a child after fork()";
    case SL_ETLS: return "TLS error";
    case SL_EBLOCKING: return "a blocking command in a pipeline";
    case SL_EWATCHMOVED: return "the slot moved while watched";
    case SL_EABORTED: return "the transaction was aborted";
    default: return "unknown error";
    }
}

/* The one process-wide state of the library: a count of fork()s, bumped in each child, so a
 * handle can tell it was made in the parent (its sockets and loop thread are the parent's). */
static atomic_uint fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void forked_child(void)
{
    atomic_fetch_add(&fork_gen, 1);
}

static void fork_register(void)
{
    (void)pthread_atfork(NULL, NULL, forked_child);
}

unsigned sl__fork_generation(void)
{
    pthread_once(&fork_once, fork_register);
    return atomic_load_explicit(&fork_gen, memory_order_relaxed);
}

int sl__check_fork(sl_client *c)
{
    if (c->fork_gen == atomic_load_explicit(&fork_gen, memory_order_relaxed)) return 0;
    sl__set_err(c, "the client was made before fork(), in the parent process, and cannot be used in this "
                   "child (pid %ld): make a new client after forking",
                (long)getpid());
    return SL_EFORK;
}

uint64_t sl__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void sl__set_err(sl_client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
}

uint64_t sl__rand(sl_client *c)
{
    /* xorshift64*: per client, so no shared state between threads. */
    uint64_t x = c->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static void set_errbuf(char *buf, size_t cap, const char *msg)
{
    if (buf && cap) snprintf(buf, cap, "%s", msg);
}

/* The bytes of an options struct of each version: a caller that asks for an older version
 * has a struct of that size (a binding's own declaration), so nothing past it is written. */
static size_t options_size(unsigned int version)
{
    switch (version) {
    case 1: return offsetof(sl_client_options, max_inflight_batches);
    case 2: return offsetof(sl_client_options, tls);
    case 3: return offsetof(sl_client_options, blocking_grace_ms);
    default: return sizeof(sl_client_options);
    }
}

int sl_client_options_init(sl_client_options *opts, unsigned int version)
{
    if (!opts || version == 0 || version > SL_CLIENT_OPTIONS_VERSION) return SL_EINVAL;
    sl_client_options d = SL_CLIENT_OPTIONS_INIT;
    size_t n = options_size(version);
    d.version = version;
    d.size = (unsigned int)n;
    memcpy(opts, &d, n);
    return 0;
}

static int check_options(const sl_client_options *o, char *why, size_t cap)
{
#define BAD(...) do { snprintf(why, cap, __VA_ARGS__); return SL_EINVAL; } while (0)
    if (o->mode != SL_MODE_AUTO && o->mode != SL_MODE_PLAIN && o->mode != SL_MODE_CLUSTER)
        BAD("mode must be SL_MODE_AUTO, SL_MODE_PLAIN or SL_MODE_CLUSTER (got %d)", (int)o->mode);
    if (o->resp_version != 2 && o->resp_version != 3) BAD("resp_version must be 2 or 3 (got %d)", o->resp_version);
    if (o->connect_timeout_ms < 0) BAD("connect_timeout_ms must not be negative");
    if (o->command_timeout_ms < 0) BAD("command_timeout_ms must not be negative");
    if (o->max_redirects < 0 || o->max_redirects > 100) BAD("max_redirects must be 0..100");
    if (o->refresh_interval_ms < 0) BAD("refresh_interval_ms must not be negative");
    if (o->reconnect_min_ms < 0 || o->reconnect_max_ms < 0) BAD("reconnect backoff must not be negative");
    if (o->db < -1 || o->db > 1000000) BAD("db out of range");
    if (o->blocking_grace_ms < 0) BAD("blocking_grace_ms must not be negative");
    if (o->lease_idle_max < -1) BAD("lease_idle_max must be -1, 0 or positive");
    if (o->read_from != SL_READ_PRIMARY && o->read_from != SL_READ_PREFER_REPLICA &&
        o->read_from != SL_READ_REPLICAS_ROUND_ROBIN)
        BAD("read_from must be SL_READ_PRIMARY, SL_READ_PREFER_REPLICA or SL_READ_REPLICAS_ROUND_ROBIN (got %d)",
            (int)o->read_from);
    if (o->retry_writes != 0 && o->retry_writes != 1) BAD("retry_writes must be 0 or 1");
    if (o->max_depth < 1 || o->max_depth > SL__RESP_MAX_DEPTH) BAD("max_depth must be 1..%d", SL__RESP_MAX_DEPTH);
    if (o->max_bulk_len == 0 || o->max_aggregate_len == 0) BAD("reply limits must be positive");
    if (o->allocator && (o->allocator->version == 0 || o->allocator->version > SL_ALLOCATOR_VERSION ||
                         o->allocator->size < offsetof(sl_allocator, ctx) + sizeof o->allocator->ctx))
        BAD("allocator version %u size %u not supported (this library: version %u, size %zu);"
            " initialise it with SL_ALLOCATOR_INIT", o->allocator->version, o->allocator->size,
            SL_ALLOCATOR_VERSION, sizeof(sl_allocator));
    if (o->allocator && (!o->allocator->malloc_fn || !o->allocator->realloc_fn || !o->allocator->free_fn))
        BAD("the allocator needs malloc_fn, realloc_fn and free_fn");
    return 0;
#undef BAD
}

/* Connects to the default node with a PING, so plain clients fail at creation when the
 * server is unreachable or refuses the credentials. */
static int ping_default(sl_client *c)
{
    sl_batch *b = c->disco;
    static const char *const argv[] = {"PING"};
    sl_batch_reset(b);
    int rc = sl_batch_append_argv(b, NULL, 1, argv, NULL);
    if (rc) return rc;
    b->cmds[0].route = SL_ROUTE_NODE;
    b->cmds[0].node = c->topo.default_node;
    rc = sl__batch_exec(b, c->opts.connect_timeout_ms > 0 ? c->opts.connect_timeout_ms + 1000 : 3000);
    size_t n;
    const uint8_t *data;
    const sl_reply *r = sl_batch_replies(b, &n, &data, NULL);
    if (n && r[0].type == SL_REPLY_ERROR) {
        /* A server that wants AUTH first answers NOAUTH: still a reachable server. */
        if (r[0].flags == SL_ERR_SERVER && !(r[0].len >= 6 && memcmp(data + r[0].offset, "NOAUTH", 6) == 0))
            return 0;
        sl__set_err(c, "%.*s", (int)r[0].len, (const char *)data + r[0].offset);
        return r[0].flags == SL_ERR_SERVER ? SL_ESERVER : (rc ? rc : SL_EIO);
    }
    return rc;
}

int sl_client_new(sl_client **out, const sl_client_options *opts, char *errmsg, size_t errmsg_cap)
{
    return sl__client_make(out, opts, 1, errmsg, errmsg_cap);
}

int sl__client_make(sl_client **out, const sl_client_options *opts, int probe, char *errmsg, size_t errmsg_cap)
{
    char why[256];
    if (!out) {
        set_errbuf(errmsg, errmsg_cap, "out is NULL");
        return SL_EINVAL;
    }
    *out = NULL;
    sl_client_options o = SL_CLIENT_OPTIONS_INIT;
    if (opts) {
        if (opts->version == 0 || opts->version > SL_CLIENT_OPTIONS_VERSION ||
            opts->size < offsetof(sl_client_options, max_depth) + sizeof(int)) {
            snprintf(why, sizeof why, "options version %u size %u not supported (this library: version %u, size %zu)",
                     opts->version, opts->size, SL_CLIENT_OPTIONS_VERSION, sizeof(sl_client_options));
            set_errbuf(errmsg, errmsg_cap, why);
            return SL_EINVAL;
        }
        /* Copy only what the caller's struct holds: the size is checked first. */
        size_t n = opts->size < sizeof o ? opts->size : sizeof o;
        memcpy(&o, opts, n);
        o.size = (unsigned)sizeof o;
        if (opts->version < 2) { /* a version-1 struct's tail padding is not these fields */
            sl_client_options d = SL_CLIENT_OPTIONS_INIT;
            o.max_inflight_batches = d.max_inflight_batches;
            o.max_inflight_bytes = d.max_inflight_bytes;
        }
        if (opts->version < 3) o.tls = NULL; /* likewise: not a field of versions 1 and 2 */
        if (opts->version < 4) { /* nor these of versions 1 to 3 */
            sl_client_options d = SL_CLIENT_OPTIONS_INIT;
            o.blocking_grace_ms = d.blocking_grace_ms;
            o.lease_idle_max = d.lease_idle_max;
            o.read_from = SL_READ_PRIMARY;
            o.retry_writes = 0;
            o.on_event = NULL;
            o.on_event_ctx = NULL;
        }
    }
    if (check_options(&o, why, sizeof why)) {
        set_errbuf(errmsg, errmsg_cap, why);
        return SL_EINVAL;
    }
    const sl__alloc *a = &sl__default_alloc;
    sl__alloc custom;
    if (o.allocator) {
        custom.malloc_fn = o.allocator->malloc_fn;
        custom.realloc_fn = o.allocator->realloc_fn;
        custom.free_fn = o.allocator->free_fn;
        custom.ctx = o.allocator->ctx;
        a = &custom;
    }
    sl_client *c = sl__malloc(a, sizeof *c);
    if (!c) {
        set_errbuf(errmsg, errmsg_cap, "out of memory");
        return SL_ENOMEM;
    }
    memset(c, 0, sizeof *c);
    c->alloc = *a;
    c->cancel_pipe[0] = c->cancel_pipe[1] = -1;
    atomic_init(&c->cancel, 0);
    atomic_init(&c->running, 0);
    sl__topo_init(&c->topo);
    c->opts = o;
    c->opts.allocator = NULL;
    if (c->opts.max_inflight_batches == 0) c->opts.max_inflight_batches = 4096;
    if (c->opts.max_inflight_bytes == 0) c->opts.max_inflight_bytes = (uint64_t)64 << 20;
    if (c->opts.blocking_grace_ms == 0) c->opts.blocking_grace_ms = 1000;
    if (c->opts.lease_idle_max == 0) c->opts.lease_idle_max = 4;
    atomic_init(&c->lease_active, NULL);
    c->fork_gen = sl__fork_generation();
    atomic_init(&c->q_batches, 0);
    atomic_init(&c->q_bytes, 0);
    c->rng = (uint64_t)sl__now_ms() ^ ((uint64_t)(uintptr_t)c << 16) ^ 0x9E3779B97F4A7C15ULL;
    int rc = sl__url_parse(o.url ? o.url : "127.0.0.1:6379", &c->url, why);
    if (rc) {
        set_errbuf(errmsg, errmsg_cap, why);
        goto fail;
    }
    /* Explicit fields win over the URL's; the client keeps its own copies. */
    if (o.username) snprintf(c->url.username, sizeof c->url.username, "%s", o.username);
    if (o.password) {
        snprintf(c->url.password, sizeof c->url.password, "%s", o.password);
        c->url.has_password = 1;
    }
    c->opts.url = NULL;
    c->opts.username = c->url.username[0] ? c->url.username : NULL;
    c->opts.password = c->url.has_password ? c->url.password : NULL;
    if (o.db < 0) c->opts.db = c->url.db >= 0 ? c->url.db : 0;
    c->opts.tls = NULL;
    if (o.tls || c->url.tls) {
        if (!sl_tls_supported()) {
            set_errbuf(errmsg, errmsg_cap, "TLS (rediss://) is not supported by this build of slotlane (built without OpenSSL)");
            rc = SL_EUNSUPPORTED;
            goto fail;
        }
        if (o.tls) {
            sl__tls_ref(o.tls);
            c->tls = o.tls;
        } else if ((rc = sl_tls_new(&c->tls, NULL, why, sizeof why)) != 0) {
            set_errbuf(errmsg, errmsg_cap, why);
            goto fail;
        }
    }
    if (pipe(c->cancel_pipe) != 0 || fcntl(c->cancel_pipe[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(c->cancel_pipe[1], F_SETFL, O_NONBLOCK) != 0 || fcntl(c->cancel_pipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(c->cancel_pipe[1], F_SETFD, FD_CLOEXEC) != 0) {
        snprintf(why, sizeof why, "pipe: %s", strerror(errno));
        set_errbuf(errmsg, errmsg_cap, why);
        rc = SL_EIO;
        goto fail;
    }
    for (int i = 0; i < c->url.nseeds; i++) {
        uint16_t idx;
        rc = sl__topo_node(c, c->url.seeds[i].host, c->url.seeds[i].port, &idx);
        if (rc) {
            set_errbuf(errmsg, errmsg_cap, c->errmsg);
            goto fail;
        }
        c->topo.nodes[idx]->seed = 1;
    }
    if ((rc = sl_batch_new(c, &c->internal)) != 0 || (rc = sl_batch_new(c, &c->disco)) != 0) {
        set_errbuf(errmsg, errmsg_cap, "out of memory");
        goto fail;
    }
    c->topo.default_node = 0;
    if (o.mode == SL_MODE_PLAIN) {
        c->mode = SL_MODE_PLAIN;
        rc = probe ? ping_default(c) : 0;
    } else {
        /* Discovery runs in plain mode: no routing, no redirects, no SELECT. */
        c->mode = SL_MODE_PLAIN;
        int is_cluster = 0;
        int db = c->opts.db;
        c->opts.db = 0;
        rc = sl__topo_discover(c, &is_cluster);
        c->opts.db = db;
        if (rc == 0) {
            c->mode = SL_MODE_CLUSTER;
        } else if (rc == SL__NOT_CLUSTER && o.mode == SL_MODE_AUTO) {
            c->mode = SL_MODE_PLAIN;
            c->topo.default_node = c->topo.default_node == SL__NO_NODE ? 0 : c->topo.default_node;
            rc = 0;
            /* Connections made without SELECT must be made again with it. */
            if (c->opts.db > 0)
                for (size_t i = 0; i < c->topo.nnodes; i++) sl__node_close(c, c->topo.nodes[i], 0);
        } else if (rc == SL__NOT_CLUSTER) {
            sl__set_err(c, "the server is not a cluster (CLUSTER SLOTS refused); use SL_MODE_PLAIN or SL_MODE_AUTO");
            rc = SL_ECLUSTER;
        } else if (c->errmsg[0] == '\0') {
            sl__set_err(c, "cluster discovery failed: no seed answered with a slot map");
        }
    }
    if (rc) {
        /* A seed that failed TLS (handshake, verification, an alert) says so by its code. */
        if (c->tls_failed && rc != SL_ENOMEM && rc != SL_EINVAL) rc = SL_ETLS;
        set_errbuf(errmsg, errmsg_cap, c->errmsg[0] ? c->errmsg : sl_strerror(rc));
        goto fail;
    }
    c->errmsg[0] = '\0';
    *out = c;
    return 0;
fail:
    sl_client_free(c);
    return rc;
}

void sl_client_free(sl_client *c)
{
    if (!c) return;
    /* Attached to a loop thread: its executions complete (SL_ECANCELLED) and it lets go
     * first. In a fork()ed child there is no loop thread: only this process's memory and
     * descriptors are released. */
    if (c->async_hooks && c->async_hooks->release && c->fork_gen == sl__fork_generation())
        c->async_hooks->release(c);
    sl__leases_free(c);
    if (c->internal) sl_batch_free(c->internal);
    if (c->disco) sl_batch_free(c->disco);
    sl__topo_free(c);
    sl_tls_free(c->tls);
    if (c->cancel_pipe[0] >= 0) close(c->cancel_pipe[0]);
    if (c->cancel_pipe[1] >= 0) close(c->cancel_pipe[1]);
    sl__alloc a = c->alloc;
    sl__free(&a, c);
}

const char *sl_client_errmsg(const sl_client *c)
{
    return c ? c->errmsg : "client is NULL";
}

int sl_client_mode(const sl_client *c)
{
    return c ? c->mode : SL_EINVAL;
}

void sl_client_cancel(sl_client *c)
{
    if (!c) return;
    /* Only an execution running now is cancelled: a cancel while idle would otherwise
     * reach whatever runs next. (One that races with an execution's start is lost.) */
    if (atomic_load(&c->running) == 0) return;
    atomic_store(&c->cancel, 1);
    if (c->cancel_pipe[1] >= 0) {
        char x = 1;
        ssize_t w = write(c->cancel_pipe[1], &x, 1); /* a full pipe already wakes poll */
        (void)w;
    }
    /* A blocking command or session runs on a leased connection's own client (lease.c). */
    sl_client *lease = atomic_load(&c->lease_active);
    if (lease) sl_client_cancel(lease);
}

int sl_client_set_push_handler(sl_client *c, sl_push_fn fn, void *ctx)
{
    if (!c) return SL_EINVAL;
    c->push_fn = fn;
    c->push_ctx = ctx;
    return 0;
}

int sl_client_refresh(sl_client *c)
{
    if (!c) return SL_EINVAL;
    if (c->mode != SL_MODE_CLUSTER) return 0;
    int rc = sl__topo_discover(c, NULL);
    return rc == SL__NOT_CLUSTER ? SL_ECLUSTER : rc;
}

int sl_client_stats(const sl_client *c, sl_stats *stats)
{
    if (!c || !stats || stats->version == 0 || stats->size < offsetof(sl_stats, commands)) return SL_EINVAL;
    sl_stats s = c->stats;
    s.version = stats->version;
    s.nodes = c->topo.nnodes;
    size_t n = stats->size < sizeof s ? stats->size : sizeof s;
    s.size = (unsigned)n;
    memcpy(stats, &s, n);
    return 0;
}

static int code_of_kind(int kind)
{
    switch (kind) {
    case SL_ERR_SERVER: return SL_ESERVER;
    case SL_ERR_IO: return SL_EIO;
    case SL_ERR_TIMEOUT: return SL_ETIMEOUT;
    case SL_ERR_REDIRECTS: return SL_EREDIRECT;
    case SL_ERR_PROTOCOL: return SL_EPROTO;
    case SL_ERR_CANCELLED: return SL_ECANCELLED;
    case SL_ERR_CLUSTER: return SL_ECLUSTER;
    default: return SL_EINVAL;
    }
}

int sl_client_command(sl_client *c, const sl_route *route, int argc, const char *const *argv, const size_t *argvlen,
                      const sl_reply **reply, const uint8_t **data)
{
    if (reply) *reply = NULL;
    if (data) *data = NULL;
    if (!c || !reply || !data) return SL_EINVAL;
    c->errmsg[0] = '\0';
    sl_batch *b = c->internal;
    sl_batch_reset(b);
    int rc = sl_batch_append_argv(b, route, argc, argv, argvlen);
    if (rc) return rc;
    rc = sl_batch_exec(b, 0, NULL);
    size_t n;
    const sl_reply *r = sl_batch_replies(b, &n, data, NULL);
    if (n == 0) return rc ? rc : SL_EIO;
    *reply = r;
    if (r[0].type == SL_REPLY_ERROR) {
        sl__set_err(c, "%.*s", (int)r[0].len, (const char *)*data + r[0].offset);
        return code_of_kind(r[0].flags);
    }
    return 0;
}

int sl_key_slot(const void *key, size_t len)
{
    if (!key && len) return SL_EINVAL;
    return (int)sl__key_slot(key ? key : "", len);
}
