/* slotlane-load --mode blpop|publish: the server benchmark's message rows (issue 17).
 *
 * These loads measure a server's work per message, not a client's batching, and the
 * core has no subscriber connections yet, so they run on plain non-blocking sockets
 * and one epoll loop (one thread), written for this purpose:
 *
 *   --mode blpop    --pairs N: N queues, each with a waiter connection that keeps one
 *                   `BLPOP q<i> 0` parked and a pusher connection that sends
 *                   `LPUSH q<i> <seq>` once the waiter has its previous element: a
 *                   ping-pong; one op = one element pushed and popped by a parked
 *                   client. Every BLPOP reply must be [q<i>, <seq>] in sequence.
 *   --mode publish  --subscribers S connections SUBSCRIBEd to one channel, --publishers
 *                   P connections each keeping --pipeline PUBLISHes in flight; one op =
 *                   one PUBLISH (S deliveries). Every PUBLISH reply must be S, and at the
 *                   end every subscriber must have received every message, in each
 *                   publisher's order.
 *
 * A wrong reply is an error: the run exits 1 naming it. --json FILE writes the figures
 * (fields in bench/records/README.md, "slotlane-load message modes"). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "msg_modes.h"

enum { R_WAITER, R_PUSHER, R_SUB, R_PUB };

typedef struct mconn {
    int fd, role, idx;
    char *in;
    size_t inlen, incap;
    char *out;
    size_t outlen, outcap, outoff;
    long long sent, answered; /* pusher: elements pushed / popped; publisher: sent / answered */
    long long *next;          /* subscriber: next sequence expected per publisher */
    long long got;            /* subscriber: messages */
    int ready;                /* subscriber: SUBSCRIBE confirmed; waiter: BLPOP in flight */
} mconn;

static const char *g_host = "127.0.0.1";
static int g_port = 6379, g_epfd, g_failed, g_subs, g_pubs;
static char g_error[512];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fail(const char *fmt, ...)
{
    if (g_failed++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
}

static void out_add(mconn *c, const char *p, size_t n)
{
    if (c->outlen + n > c->outcap) {
        c->outcap = (c->outlen + n) * 2 + 1024;
        c->out = realloc(c->out, c->outcap);
    }
    memcpy(c->out + c->outlen, p, n);
    c->outlen += n;
}

static void out_cmd(mconn *c, int argc, const char **argv)
{
    char hdr[32];
    int n = snprintf(hdr, sizeof hdr, "*%d\r\n", argc);
    out_add(c, hdr, (size_t)n);
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(argv[i]);
        n = snprintf(hdr, sizeof hdr, "$%zu\r\n", l);
        out_add(c, hdr, (size_t)n);
        out_add(c, argv[i], l);
        out_add(c, "\r\n", 2);
    }
}

static void flush_out(mconn *c)
{
    while (c->outoff < c->outlen) {
        ssize_t w = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);
        if (w < 0) {
            if (errno == EAGAIN) break;
            fail("write: %s", strerror(errno));
            return;
        }
        c->outoff += (size_t)w;
    }
    if (c->outoff == c->outlen) c->outoff = c->outlen = 0;
    struct epoll_event ev = {.events = EPOLLIN | (c->outlen ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(g_epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static mconn *g_all[4096];
static int g_nall;

static void free_all(void)
{
    for (int i = 0; i < g_nall; i++) {
        close(g_all[i]->fd);
        free(g_all[i]->in);
        free(g_all[i]->out);
        free(g_all[i]->next);
        free(g_all[i]);
    }
    g_nall = 0;
}

static mconn *open_conn(int role, int idx)
{
    if (g_nall == (int)(sizeof g_all / sizeof g_all[0])) {
        fprintf(stderr, "slotlane-load: too many connections\n");
        exit(2);
    }
    mconn *c = calloc(1, sizeof *c);
    g_all[g_nall++] = c;
    c->role = role;
    c->idx = idx;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    inet_pton(AF_INET, g_host, &a.sin_addr);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "slotlane-load: cannot connect to %s:%d: %s\n", g_host, g_port, strerror(errno));
        exit(1);
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(g_epfd, EPOLL_CTL_ADD, c->fd, &ev);
    return c;
}

/* ---- replies: the few shapes these modes get ---- */

typedef struct elem {
    char type; /* ':' '$' '+' '-' */
    const char *p;
    size_t len;
    long long v;
} elem;

/* Parses one simple element at p; returns its length or 0 when incomplete. */
static size_t parse_elem(const char *p, size_t n, elem *e)
{
    const char *nl = memchr(p, '\n', n);
    if (!nl) return 0;
    size_t line = (size_t)(nl - p) + 1;
    e->type = p[0];
    e->p = p + 1;
    e->len = line - 3;
    e->v = strtoll(p + 1, NULL, 10);
    if (p[0] != '$') return line;
    if (e->v < 0) {
        e->len = 0;
        return line;
    }
    if (n < line + (size_t)e->v + 2) return 0;
    e->p = p + line;
    e->len = (size_t)e->v;
    return line + (size_t)e->v + 2;
}

/* One reply: a simple element, or an array / push of up to 4 simple elements. Returns
 * its length (0: incomplete); *n is the element count (0 for a simple reply). */
static size_t parse_reply(const char *p, size_t len, elem *el, int *n)
{
    if (len < 3) return 0;
    if (p[0] != '*' && p[0] != '>') {
        *n = 0;
        return parse_elem(p, len, &el[0]);
    }
    const char *nl = memchr(p, '\n', len);
    if (!nl) return 0;
    long long cnt = strtoll(p + 1, NULL, 10);
    size_t off = (size_t)(nl - p) + 1;
    if (cnt < 0 || cnt > 4) {
        fail("unexpected reply %.20s", p);
        return len;
    }
    for (long long i = 0; i < cnt; i++) {
        size_t k = parse_elem(p + off, len - off, &el[i]);
        if (!k) return 0;
        off += k;
    }
    *n = (int)cnt;
    return off;
}

/* ---- the modes ---- */

static long long g_ops;
static int g_stopping;
static mconn **g_waiters, **g_pushers, **g_publishers;
static int g_pipeline = 16;

static void push_next(mconn *pu)
{
    char q[32], v[32];
    snprintf(q, sizeof q, "q%d", pu->idx);
    snprintf(v, sizeof v, "%lld", pu->sent);
    const char *argv[] = {"LPUSH", q, v};
    out_cmd(pu, 3, argv);
    pu->sent++;
    flush_out(pu);
}

static void park(mconn *w)
{
    char q[32];
    snprintf(q, sizeof q, "q%d", w->idx);
    const char *argv[] = {"BLPOP", q, "0"};
    out_cmd(w, 3, argv);
    flush_out(w);
}

static void publish_more(mconn *p)
{
    char msg[48];
    while (!g_stopping && p->sent - p->answered < g_pipeline) {
        snprintf(msg, sizeof msg, "p%d:%lld", p->idx, p->sent);
        const char *argv[] = {"PUBLISH", "bench-channel", msg};
        out_cmd(p, 3, argv);
        p->sent++;
    }
    flush_out(p);
}

static void on_reply(mconn *c, elem *el, int n)
{
    if (n == 0 && el[0].type == '-') {
        fail("error reply: %.*s", (int)el[0].len, el[0].p);
        return;
    }
    switch (c->role) {
    case R_WAITER: { /* [q<i>, <seq>] */
        mconn *pu = g_pushers[c->idx];
        if (n != 2 || el[1].type != '$' || strtoll(el[1].p, NULL, 10) != pu->answered) {
            fail("BLPOP on q%d: expected element %lld", c->idx, pu->answered);
            return;
        }
        pu->answered++;
        g_ops++;
        if (!g_stopping) {
            park(c);
            push_next(pu);
        }
        break;
    }
    case R_PUSHER:
        if (el[0].type != ':') fail("LPUSH reply of type %c", el[0].type);
        break;
    case R_SUB:
        if (n == 3 && el[0].len == 9 && !memcmp(el[0].p, "subscribe", 9)) {
            c->ready = 1;
        } else if (n == 3 && el[0].len == 7 && !memcmp(el[0].p, "message", 7)) {
            int pi = 0;
            long long seq = 0;
            if (sscanf(el[2].p, "p%d:%lld", &pi, &seq) != 2 || pi < 0 || pi >= g_pubs || seq != c->next[pi]) {
                fail("subscriber %d: message %.*s out of order", c->idx, (int)el[2].len, el[2].p);
                return;
            }
            c->next[pi]++;
            c->got++;
        } else {
            fail("subscriber %d: unexpected push", c->idx);
        }
        break;
    case R_PUB:
        if (el[0].type != ':' || el[0].v != g_subs) {
            fail("PUBLISH answered %lld receivers, expected %d", el[0].v, g_subs);
            return;
        }
        c->answered++;
        g_ops++;
        publish_more(c);
        break;
    }
}

static void on_readable(mconn *c)
{
    for (;;) {
        if (c->incap - c->inlen < 65536) {
            c->incap = c->incap * 2 + 65536;
            c->in = realloc(c->in, c->incap);
        }
        ssize_t r = read(c->fd, c->in + c->inlen, c->incap - c->inlen);
        if (r == 0) {
            fail("the server closed a connection");
            return;
        }
        if (r < 0) {
            if (errno != EAGAIN) fail("read: %s", strerror(errno));
            break;
        }
        c->inlen += (size_t)r;
    }
    size_t off = 0;
    while (off < c->inlen && !g_failed) {
        elem el[4] = {{0}};
        int n = 0;
        size_t k = parse_reply(c->in + off, c->inlen - off, el, &n);
        if (!k) break;
        on_reply(c, el, n);
        off += k;
    }
    memmove(c->in, c->in + off, c->inlen - off);
    c->inlen -= off;
}

static void loop_until(double deadline, int (*done)(void))
{
    struct epoll_event evs[256];
    while (!g_failed && (deadline == 0 || now_s() < deadline) && !(done && done())) {
        int n = epoll_wait(g_epfd, evs, 256, 100);
        for (int i = 0; i < n && !g_failed; i++) {
            mconn *c = evs[i].data.ptr;
            if (evs[i].events & EPOLLOUT) flush_out(c);
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
        }
    }
}

static mconn **g_subscribers;
static int subs_ready(void)
{
    for (int i = 0; i < g_subs; i++)
        if (!g_subscribers[i]->ready) return 0;
    return 1;
}
static int pubs_drained(void)
{
    for (int i = 0; i < g_pubs; i++)
        if (g_publishers[i]->answered != g_publishers[i]->sent) return 0;
    long long total = 0;
    for (int i = 0; i < g_pubs; i++) total += g_publishers[i]->sent;
    for (int i = 0; i < g_subs; i++)
        if (g_subscribers[i]->got != total) return 0;
    return 1;
}
static int g_pairs;
static int pairs_drained(void)
{
    for (int i = 0; i < g_pairs; i++)
        if (g_pushers[i]->answered != g_pushers[i]->sent) return 0;
    return 1;
}

static void usage(const char *msg)
{
    fprintf(stderr, "slotlane-load --mode: %s\n"
                    "usage: slotlane-load --mode blpop|publish [--host H] [--port P] [--test-time SECS]\n"
                    "       [--pairs N] (blpop) [--subscribers S] [--publishers P] [--pipeline D] (publish)\n"
                    "       [--json FILE]\n", msg);
    exit(2);
}

int sl_load_msg_mode(int argc, char **argv)
{
    const char *mode = NULL, *json = NULL;
    double secs = 5;
    g_pairs = 1;
    g_subs = 1;
    g_pubs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--mode") && v) mode = argv[++i];
        else if (!strcmp(a, "--host") && v) g_host = argv[++i];
        else if (!strcmp(a, "--port") && v) g_port = atoi(argv[++i]);
        else if (!strcmp(a, "--test-time") && v) secs = atof(argv[++i]);
        else if (!strcmp(a, "--pairs") && v) g_pairs = atoi(argv[++i]);
        else if (!strcmp(a, "--subscribers") && v) g_subs = atoi(argv[++i]);
        else if (!strcmp(a, "--publishers") && v) g_pubs = atoi(argv[++i]);
        else if (!strcmp(a, "--pipeline") && v) g_pipeline = atoi(argv[++i]);
        else if (!strcmp(a, "--json") && v) json = argv[++i];
        else usage("unknown or incomplete argument");
    }
    if (!mode || (strcmp(mode, "blpop") && strcmp(mode, "publish"))) usage("--mode blpop or publish");
    if (g_port <= 0 || g_pairs < 1 || g_subs < 0 || g_pubs < 1 || g_pipeline < 1 || secs <= 0 ||
        2 * g_pairs + g_subs + g_pubs > 4000)
        usage("bad value");
    g_epfd = epoll_create1(0);
    double t0, t1;
    long long deliveries = 0;
    if (!strcmp(mode, "blpop")) {
        g_waiters = calloc((size_t)g_pairs, sizeof(mconn *));
        g_pushers = calloc((size_t)g_pairs, sizeof(mconn *));
        for (int i = 0; i < g_pairs; i++) {
            g_waiters[i] = open_conn(R_WAITER, i);
            g_pushers[i] = open_conn(R_PUSHER, i);
            const char *del[] = {"DEL", NULL};
            char q[32];
            snprintf(q, sizeof q, "q%d", i);
            del[1] = q;
            out_cmd(g_pushers[i], 2, del);
            g_pushers[i]->sent = 0;
        }
        t0 = now_s();
        for (int i = 0; i < g_pairs; i++) {
            park(g_waiters[i]);
            push_next(g_pushers[i]);
        }
        loop_until(t0 + secs, NULL);
        t1 = now_s();
        g_stopping = 1;
        loop_until(now_s() + 10, pairs_drained);
    } else {
        g_subscribers = calloc((size_t)(g_subs ? g_subs : 1), sizeof(mconn *));
        g_publishers = calloc((size_t)g_pubs, sizeof(mconn *));
        for (int i = 0; i < g_subs; i++) {
            mconn *s = g_subscribers[i] = open_conn(R_SUB, i);
            s->next = calloc((size_t)g_pubs, sizeof(long long));
            const char *sub[] = {"SUBSCRIBE", "bench-channel"};
            out_cmd(s, 2, sub);
            flush_out(s);
        }
        loop_until(now_s() + 10, subs_ready);
        for (int i = 0; i < g_pubs; i++) g_publishers[i] = open_conn(R_PUB, i);
        t0 = now_s();
        for (int i = 0; i < g_pubs; i++) publish_more(g_publishers[i]);
        loop_until(t0 + secs, NULL);
        t1 = now_s();
        g_stopping = 1;
        loop_until(now_s() + 10, pubs_drained);
        if (!g_failed && !pubs_drained()) fail("the subscribers did not receive every message");
        for (int i = 0; i < g_subs; i++) deliveries += g_subscribers[i]->got;
    }
    double el = t1 - t0;
    printf("mode %s: %lld ops in %.2f s, %.0f ops/s%s%s\n", mode, g_ops, el, (double)g_ops / el,
           g_failed ? ", FAILED: " : "", g_failed ? g_error : "");
    free_all();
    free(g_waiters);
    free(g_pushers);
    free(g_subscribers);
    free(g_publishers);
    close(g_epfd);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "slotlane-load: cannot write %s\n", json);
            return 1;
        }
        fprintf(f,
                "{\"mode\": \"%s\", \"pairs\": %d, \"subscribers\": %d, \"publishers\": %d, \"pipeline\": %d, "
                "\"ops\": %lld, \"seconds\": %.4f, \"ops_per_sec\": %.1f, \"deliveries\": %lld, \"errors\": %d, "
                "\"first_error\": \"%s\"}\n",
                mode, g_pairs, g_subs, g_pubs, g_pipeline, g_ops, el, (double)g_ops / el, deliveries, g_failed,
                g_failed ? g_error : "");
        fclose(f);
    }
    return g_failed ? 1 : 0;
}
