/* conn: see conn.h. A read callback parses every complete request in the buffer,
 * runs each, and then writes all their replies at once (pipelining: one write per
 * read batch). Replies the client does not read accumulate; past the output limit
 * the client is dropped, as Redis's client-output-buffer-limit does. */
#include <stdio.h>
#include <unistd.h>

#include "conn.h"
#include "aof.h"
#include "blocking.h"
#include "pause.h"
#include "tracking.h"
#include "fwd.h"
#include "fwd_multi.h"
#include "pubsub.h"

#define READ_CHUNK (16 * 1024)
#define BUF_KEEP (1024 * 1024) /* larger idle buffers are released */
#define FLUSH_EARLY SV_FLUSH_EARLY
#define ARGS_KEEP 4096 /* argument arrays larger than this are freed after their request */

/* What a request being received holds: its bytes and the parser's argument offsets
 * (16 bytes per argument: a multibulk of empty arguments costs more in offsets than
 * in bytes). Both count against the query buffer limit. */
static size_t query_bytes(sv_conn *c, size_t avail) { return avail + (size_t)c->parser.cap * 2 * sizeof(size_t); }

void sv_conn_free(sv_conn *c)
{
    sv_fwd_free_pending(c);
    sv_tx_free(c->sh, &c->sess); /* one a coordinated WATCH made after the close */
    sv_tracking_free_session(c->sh, &c->sess);
    free(c);
}

static void on_close(uv_handle_t *h)
{
    sv_conn *c = h->data;
    c->handle_closed = 1;
    sv_buf_free(&c->rbuf);
    sv_buf_free(&c->out);
    sv_buf_free(&c->inflight);
    sv_parser_free(&c->parser);
    free(c->argv);
    free(c->sess.name);
    free(c->sess.lib_name);
    free(c->sess.lib_ver);
    c->sess.name = c->sess.lib_name = c->sess.lib_ver = NULL;
    c->argv = NULL;
    if (c->fwd_outstanding == 0) sv_conn_free(c);
}

void sv_conn_close(sv_conn *c)
{
    if (c->closing) return;
    c->closing = 1;
    sv_shard *sh = c->sh;
    sv_fwd_unpause(c);
    sv_pause_forget(c);
    if (c->blk) { /* a parked command of a client that left is forgotten */
        sv_block_cancel(c->blk);
        c->blk = NULL;
    }
    /* parked at another shard: it sees the flag and drops the waiter */
    if (c->blk_remote) atomic_store_explicit(&c->dropped, 1, memory_order_relaxed);
    if (c->blk_coord) sv_fwdm_closing(c->blk_coord); /* its parts on every shard are released */
    if (c->prev) c->prev->next = c->next;
    else sh->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    sh->nclients--;
    sv_pubsub_conn_closed(c); /* no message is written to it any more */
    sv_tracking_conn_closed(sh, &c->sess);
    if (c->sess.tx) {
        if (sh->fwd_on) sv_fwd_release_watches(c, 1); /* those kept by other shards */
        sv_tx_free(sh, &c->sess);
    }
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

void sv_conn_drop_over_limit(sv_conn *c)
{
    sv_log(SV_LOG_WARNING, "closing client %llu (%s) for overcoming of output buffer limits",
           (unsigned long long)c->sess.id, c->sess.addr);
    atomic_store_explicit(&c->dropped, 1, memory_order_relaxed);
    sv_conn_close(c);
}

static void flush_ex(sv_conn *c, int log_first);
static void flush(sv_conn *c) { flush_ex(c, 1); }
void sv_conn_flush(sv_conn *c) { flush(c); }
void sv_conn_flush_unlogged(sv_conn *c) { flush_ex(c, 0); }
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void on_write(uv_write_t *req, int status)
{
    sv_conn *c = req->data;
    c->writing = 0;
    if (c->closing) return;
    if (status < 0) {
        sv_conn_close(c);
        return;
    }
    c->inflight.len = 0;
    if (c->inflight.cap > BUF_KEEP) sv_buf_free(&c->inflight);
    flush(c);
}

static void flush_ex(sv_conn *c, int log_first)
{
    if (c->closing) return;
    if (c->writing) return;
    if (c->out.len == 0) {
        if (c->close_when_flushed && !c->pend_head) sv_conn_close(c);
        return;
    }
    if (c->sh->aof && log_first) sv_aof_before_reply(c->sh); /* the log first: a reply acknowledges a write */
    uv_buf_t b;
    b.base = c->out.data;
    b.len = c->out.len; /* size_t on Unix: uv_buf_init would truncate to unsigned */
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n >= 0 && (size_t)n == c->out.len) {
        c->sh->stats.net_out += (uint64_t)n;
        c->out.len = 0;
        if (c->out.cap > BUF_KEEP) sv_buf_free(&c->out);
        if (c->close_when_flushed && !c->pend_head) sv_conn_close(c);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        sv_conn_close(c);
        return;
    }
    if (n < 0) n = 0;
    c->sh->stats.net_out += (uint64_t)c->out.len;
    /* the rest goes out asynchronously from its own buffer; new replies collect in out */
    sv_buf t = c->inflight;
    c->inflight = c->out;
    c->out = t;
    c->out.len = 0;
    b.base = c->inflight.data + n;
    b.len = c->inflight.len - (size_t)n;
    c->writing = 1;
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
        c->writing = 0;
        sv_conn_close(c);
    }
}

void sv_conn_queue_flush(sv_conn *c)
{
    if (c->flush_queued) return;
    c->flush_queued = 1;
    c->flush_next = c->sh->flush_list;
    c->sh->flush_list = c;
}

void sv_conn_flush_queued(sv_shard *sh)
{
    while (sh->flush_list) {
        sv_conn *c = sh->flush_list;
        sh->flush_list = c->flush_next;
        c->flush_queued = 0;
        if (c->closing) continue;
        /* a read batch still owed forwarded replies is written when they arrive (see on_read) */
        if (!c->hold || c->out.len >= FLUSH_EARLY) flush(c);
        if (!c->closing && (long long)sv_conn_unsent(c) > sv_cfg.output_limit) sv_conn_drop_over_limit(c);
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    sv_conn *c = h->data;
    size_t want = READ_CHUNK;
    /* A large bulk argument in progress: read bigger chunks, doubling with the data
     * that actually arrived (never the announced size at once, so a header that
     * claims 512 MB costs nothing until the bytes come). */
    if (c->parser.bulk > 0) {
        size_t need = c->parser.pos + (size_t)c->parser.bulk + 2;
        size_t have = c->rbuf.len - c->rstart;
        if (need > have) {
            size_t step = c->rbuf.len > READ_CHUNK ? c->rbuf.len : READ_CHUNK;
            want = need - have < step ? need - have : step;
            if (want < READ_CHUNK) want = READ_CHUNK;
        }
    }
    sv_buf_reserve(&c->rbuf, want);
    buf->base = c->rbuf.data + c->rbuf.len;
    buf->len = c->rbuf.cap - c->rbuf.len;
}

static void protocol_error(sv_conn *c, const char *msg)
{
    sv_reply r = {sv_fwd_reply_buf(c), c->sess.proto};
    sv_add_error(&r, msg);
    c->close_when_flushed = 1;
    uv_read_stop((uv_stream_t *)&c->tcp);
    sv_log(SV_LOG_VERBOSE, "protocol error from client %llu (%s): %s", (unsigned long long)c->sess.id, c->sess.addr, msg);
}

/* CLIENT REPLY: after a command, drop its reply while replies are off or it is the
 * skipped one (as Redis's resetClient, a SKIP applies to the command after it). */
static void reply_mode(sv_conn *c, struct sv_pend *tail0, size_t len0)
{
    sv_session *s = &c->sess;
    if (s->reply_off || s->reply_skip) {
        if (c->sh->fwd_on) sv_fwd_mute_since(c, tail0, len0);
        else if (c->out.len >= len0) c->out.len = len0;
    }
    s->reply_skip = s->reply_skip_next;
    s->reply_skip_next = 0;
}

#define PREFETCH_BATCH 16 /* requests looked ahead at once */

static void process(sv_conn *c)
{
    sv_shard *sh = c->sh;
    int ahead = 0; /* requests of the buffer whose keys are prefetched and not run yet */
    while (!c->close_when_flushed && !c->closing && !c->blk_wait && !c->cpause_wait) {
        const char *base = c->rbuf.data + c->rstart;
        size_t avail = c->rbuf.len - c->rstart;
        if (avail == 0) break;
        if (ahead == 0 && c->parser.pos == 0) {
            /* a pipelined batch: the keyspace lookups of its next requests start
             * together (their bucket and entry misses overlap; sv_dict_prefetch) */
            sv_str keys[PREFETCH_BATCH];
            ahead = sv_peek_keys(base, avail, keys, PREFETCH_BATCH);
            if (ahead > 1) sv_dict_prefetch(&sh->keys, keys, ahead);
        }
        if (ahead) ahead--;
        int r = sv_parse(&c->parser, base, avail);
        if (r == SV_PARSE_MORE) {
            if ((long long)query_bytes(c, avail) > SV_QUERYBUF_MAX) {
                sv_log(SV_LOG_WARNING, "closing client %llu that reached max query buffer length",
                       (unsigned long long)c->sess.id);
                sv_conn_close(c);
                return;
            }
            break;
        }
        if (r == SV_PARSE_ERR) {
            protocol_error(c, c->parser.error);
            break;
        }
        int argc = c->parser.argc;
        if (argc > 0) {
            if (argc > c->argv_cap) {
                c->argv_cap = argc < 16 ? 16 : argc;
                c->argv = sv_realloc(c->argv, sizeof(sv_str) * (size_t)c->argv_cap);
            }
            sv_parser_args(&c->parser, base, c->argv);
            if (atomic_load_explicit(&sv_pause_type, memory_order_relaxed) &&
                sv_pause_holds(&c->sess, argc, c->argv)) {
                /* CLIENT PAUSE: this request runs when the pause ends (parsed again) */
                sv_pause_hold(c);
                sv_parser_reset(&c->parser);
                break;
            }
            struct sv_pend *tail0 = c->pend_tail;
            size_t len0 = tail0 ? sv_fwd_later_out(tail0)->len : c->out.len;
            if (sh->fwd_on) {
                sv_tracking_before_command(sh, &c->sess);
                if (sv_fwd_process(c, argc, c->argv)) {
                    /* backpressure: the request stays in the buffer, parsed again
                     * when the connection is resumed */
                    sv_tracking_before_command(sh, NULL);
                    sv_parser_reset(&c->parser);
                    break;
                }
                sv_tracking_after_command(sh, &c->sess, argc, c->argv, NULL);
            } else {
                sv_ctx ctx = {.sh = sh, .sess = &c->sess, .r = {&c->out, c->sess.proto}, .noroute = 0};
                ctx.can_block = 1;
                sv_tracking_before_command(sh, &c->sess);
                sv_execute(&ctx, argc, c->argv);
                sv_tracking_after_command(sh, &c->sess, argc, c->argv, &c->out);
                if (ctx.close_after) c->close_when_flushed = 1;
                if (ctx.blocked) sv_conn_park(c, ctx.blocked, NULL, argc, c->argv);
            }
            if (c->sess.reply_off | c->sess.reply_skip | c->sess.reply_skip_next) reply_mode(c, tail0, len0);
            sv_block_serve(sh); /* what this command pushed serves parked clients now */
            /* a long batch hands its replies to the kernel as it goes, so only what
             * the client has not read counts against the output limit */
            if (c->out.len >= FLUSH_EARLY) flush(c);
            if (c->closing) return;
            if ((long long)sv_conn_unsent(c) > sv_cfg.output_limit) {
                sv_conn_drop_over_limit(c);
                return;
            }
        }
        c->rstart += c->parser.pos;
        sv_parser_reset(&c->parser);
        if (c->parser.cap > ARGS_KEEP) { /* the arrays of one huge request are not kept */
            sv_parser_free(&c->parser);
            free(c->argv);
            c->argv = NULL;
            c->argv_cap = 0;
        }
    }
    if (c->rstart == c->rbuf.len) {
        c->rbuf.len = c->rstart = 0;
        if (c->rbuf.cap > BUF_KEEP) sv_buf_free(&c->rbuf);
    } else if (c->rstart > 0) {
        memmove(c->rbuf.data, c->rbuf.data + c->rstart, c->rbuf.len - c->rstart);
        c->rbuf.len -= c->rstart;
        c->rstart = 0;
    }
}

void sv_conn_resume(sv_conn *c)
{
    if (c->closing) return;
    c->sh->now_ms = sv_mstime();
    process(c);
    if (c->closing) return;
    flush(c);
    if (!c->closing && !c->fwd_paused && !c->close_when_flushed)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    sv_conn *c = s->data;
    if (nread < 0) {
        sv_conn_close(c);
        return;
    }
    if (nread == 0) return;
    c->rbuf.len += (size_t)nread;
    c->sh->stats.net_in += (uint64_t)nread;
    if (c->close_when_flushed) {
        c->rbuf.len = c->rstart = 0;
        return;
    }
    if (c->blk_wait || c->cpause_wait) { /* parked or paused: requests wait in the buffer, within its limit */
        if ((long long)query_bytes(c, c->rbuf.len - c->rstart) > SV_QUERYBUF_MAX) {
            sv_log(SV_LOG_WARNING, "closing client %llu that reached max query buffer length",
                   (unsigned long long)c->sess.id);
            sv_conn_close(c);
        }
        return;
    }
    c->sh->now_ms = sv_mstime();
    c->last_interaction_ms = c->sh->now_ms;
    /* CLIENT TRACKING with forwarding: invalidations other shards sent this client
     * before its request was read are written before its replies, as Redis does */
    if (c->sess.trk && c->sh->fwd_on) sv_fwd_take_tracking(c->sh);
    process(c);
    if (c->closing) return;
    /* Replies still owed by other shards: the rest of the batch follows within a
     * loop turn or two, and writing the done prefix now (or as each shard's part
     * returns) would cost more writes and wake the client, which waits for the
     * whole pipeline, for nothing. The batch is written when its last slot drains
     * (fwd.c); only the earliest incomplete batch is waited for, so a client that
     * keeps sending still gets each batch's replies as soon as it is complete. */
    if (c->pend_head && !c->hold && !c->blk_wait) c->hold = c->pend_tail;
    /* (a parked command's slot is not held for: the replies before it leave now) */
    if (c->hold && c->out.len < FLUSH_EARLY) return;
    if (c->sh->aof) sv_conn_queue_flush(c); /* with a log: at the end of the turn, after it */
    else flush(c);
}

/* ---- a parked command's owner (blocking.c) ---- */

static sv_buf *park_reply_buf(void *owner)
{
    sv_conn *c = owner;
    return c->blk_slot ? sv_fwd_later_out(c->blk_slot) : &c->out;
}

static void park_done(void *owner, int how)
{
    sv_conn *c = owner;
    c->blk = NULL;
    c->blk_wait = 0;
    if (c->blk_slot) sv_fwd_later_done(c, c->blk_slot);
    c->blk_slot = NULL;
    /* its later requests run, and the reply leaves, after the serve pass */
    if (how == SV_BLOCK_SERVED) sv_block_resume_later(c->sh, c);
}

static const sv_block_owner park_ops = {park_reply_buf, park_done, NULL};

void sv_conn_park(sv_conn *c, sv_waiter *w, struct sv_pend *slot, int argc, sv_str *argv)
{
    sv_block_attach(w, &park_ops, c, argc, argv, &c->sess);
    c->blk = w;
    c->blk_slot = slot;
    c->blk_wait = 1;
}

static void describe_addr(uv_tcp_t *t, int peer, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    int r = peer ? uv_tcp_getpeername(t, (struct sockaddr *)&ss, &len) : uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len);
    out[0] = 0;
    if (r != 0) return;
    char ip[64] = "";
    int port = 0;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        uv_ip4_name(a, ip, sizeof(ip));
        port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        uv_ip6_name(a, ip, sizeof(ip));
        port = ntohs(a->sin6_port);
    }
    snprintf(out, cap, "%s:%d", ip, port);
}

/* fd < 0: accept from the listener (libuv); else adopt an accepted socket. */
static void conn_start(sv_shard *sh, int fd)
{
    sv_conn *c = sv_calloc(1, sizeof(*c));
    c->sh = sh;
    uv_tcp_init(&sh->loop, &c->tcp);
    c->tcp.data = c;
    int rc = fd < 0 ? uv_accept((uv_stream_t *)&sh->listener, (uv_stream_t *)&c->tcp) : uv_tcp_open(&c->tcp, fd);
    if (rc != 0) {
        if (fd >= 0) close(fd);
        c->closing = 1;
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return;
    }
    sv_parser_init(&c->parser);
    c->sess.id = atomic_fetch_add(&sv_next_client_id, 1);
    c->sess.proto = 2;
    c->sess.conn = c;
    c->sess.ctime_ms = sv_mstime();
    c->last_interaction_ms = c->sess.ctime_ms;
    describe_addr(&c->tcp, 1, c->sess.addr, sizeof(c->sess.addr));
    describe_addr(&c->tcp, 0, c->sess.laddr, sizeof(c->sess.laddr));
    c->next = sh->conns;
    if (sh->conns) sh->conns->prev = c;
    sh->conns = c;
    sv_tracking_conn_opened(sh, c->sess.id);
    sh->nclients++;
    sh->stats.connections++;
    if (sh->nclients > sv_cfg.maxclients) {
        sh->stats.rejected++;
        static const char msg[] = "-ERR max number of clients reached\r\n";
        uv_buf_t b = uv_buf_init((char *)msg, sizeof(msg) - 1);
        uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        sv_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

void sv_conn_accept(sv_shard *sh) { conn_start(sh, -1); }

void sv_conn_adopt(sv_shard *sh, int fd) { conn_start(sh, fd); }

static int conn_fd(sv_conn *c)
{
    uv_os_fd_t fd = -1;
    uv_fileno((uv_handle_t *)&c->tcp, &fd);
    return (int)fd;
}

void sv_conn_describe(sv_conn *c, sv_buf *out, int64_t now_ms)
{
    int sub, psub, ssub;
    sv_pubsub_counts(&c->sess, &sub, &psub, &ssub);
    char line[1024];
    int n = snprintf(line, sizeof(line),
                     "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=0 sub=%d psub=%d ssub=%d "
                     "multi=%d qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 obl=0 oll=0 omem=%zu tot-mem=%zu "
                     "events=r cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
                     (unsigned long long)c->sess.id, c->sess.addr, c->sess.laddr, conn_fd(c),
                     c->sess.name ? c->sess.name : "", (long long)(now_ms - c->sess.ctime_ms) / 1000,
                     (long long)(now_ms - c->last_interaction_ms) / 1000, c->blk_wait ? "b" : sub + psub + ssub ? "P" : "N", sub, psub, ssub,
                     c->sess.tx && c->sess.tx->in_multi ? c->sess.tx->nq : -1, c->rbuf.len, c->rbuf.cap - c->rbuf.len,
                     sv_conn_unsent(c), c->rbuf.cap + c->out.cap + c->inflight.cap,
                     c->sess.last_cmd ? c->sess.last_cmd : "NULL", c->sess.proto,
                     c->sess.lib_name ? c->sess.lib_name : "", c->sess.lib_ver ? c->sess.lib_ver : "");
    sv_buf_append(out, line, (size_t)n);
}
