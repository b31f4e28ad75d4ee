/* pause: see pause.h. The pause is two words of the instance (type, end time) that
 * every shard reads before running a client's command; setting them takes a mutex
 * (two shards may PAUSE at once: the most restrictive type and the latest end win,
 * as Redis's pauseClients). A shard keeps its held connections in arrival order and
 * resumes them when its timer reaches the end time or UNPAUSE wakes it. */
#include "pause.h"

#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "script.h"

/* the instance's (sv_server): the end in unix ms (the pause holds while now <=
 * pause_end), the lock made with the instance */
#define pause_end (sv_cur->pause_end)
#define pause_lock (sv_cur->pause_lock)

typedef struct sv_pause_shard {
    uv_async_t wake; /* UNPAUSE on any shard */
    uv_timer_t timer;
    sv_conn *head, *tail; /* held connections, oldest first */
    atomic_int nheld;
    int open_handles; /* freed when both handles' close callbacks have run */
} sv_pause_shard;

int sv_pause_held(sv_shard *sh) { return sh->pause ? atomic_load_explicit(&sh->pause->nheld, memory_order_relaxed) : 0; }

int sv_pause_now(void)
{
    int t = atomic_load_explicit(&sv_pause_type, memory_order_relaxed);
    if (t == SV_PAUSE_OFF) return t;
    return sv_mstime() > atomic_load(&pause_end) ? SV_PAUSE_OFF : t;
}

/* Redis 7.0's "may replicate": a write, or one of the commands it flags so */
static int may_replicate(const sv_cmd *cmd)
{
    return (cmd->flags & SV_CMD_WRITE) || cmd->fn == sv_cmd_eval || cmd->fn == sv_cmd_evalsha ||
           cmd->fn == sv_cmd_fcall || cmd->fn == sv_cmd_pfcount || cmd->fn == sv_cmd_publish ||
           cmd->fn == sv_cmd_spublish;
}

/* An EVAL body whose shebang declares no-writes (`#!lua flags=no-writes,...`) does
 * not replicate, as 7.0 decides from the script's flags */
static int eval_no_writes(sv_str body)
{
    if (body.len < 5 || memcmp(body.p, "#!lua", 5) != 0) return 0;
    const char *end = memchr(body.p, '\n', body.len);
    size_t n = end ? (size_t)(end - body.p) : body.len;
    for (size_t i = 5; i + 6 <= n; i++) {
        if (memcmp(body.p + i, "flags=", 6) != 0 || body.p[i - 1] != ' ') continue;
        for (size_t j = i + 6; j < n;) {
            size_t k = j;
            while (k < n && body.p[k] != ',' && body.p[k] != ' ') k++;
            if (k - j == 9 && memcmp(body.p + j, "no-writes", 9) == 0) return 1;
            if (k >= n || body.p[k] == ' ') break;
            j = k + 1;
        }
    }
    return 0;
}

int sv_pause_holds(sv_session *s, int argc, sv_str *argv)
{
    int t = sv_pause_now();
    if (t == SV_PAUSE_OFF) return 0;
    if (t == SV_PAUSE_ALL) return 1;
    const sv_cmd *cmd = sv_cmd_lookup(argv[0].p, argv[0].len);
    if (!cmd) return 0;
    if (cmd->fn == sv_cmd_eval && argc >= 2 && eval_no_writes(argv[1])) return 0;
    if (may_replicate(cmd)) return 1;
    if (cmd->fn == sv_cmd_exec && s->tx && s->tx->in_multi)
        for (int i = 0; i < s->tx->nq; i++)
            if (may_replicate(s->tx->q[i].cmd)) return 1;
    return 0;
}

static void resume_held(sv_shard *sh)
{
    sv_pause_shard *p = sh->pause;
    sv_conn *c = p->head;
    p->head = p->tail = NULL;
    atomic_store(&p->nheld, 0);
    while (c) {
        /* a connection held again (a new pause) joins the new list */
        sv_conn *next = c->cpause_next;
        c->cpause_next = NULL;
        c->cpause_wait = 0;
        sv_conn_resume(c);
        c = next;
    }
}

static void on_timer(uv_timer_t *t);

/* the timer at the end time (+1 ms: the pause holds through its last millisecond) */
static void arm(sv_shard *sh)
{
    long long wait = atomic_load(&pause_end) - sv_mstime() + 1;
    uv_timer_start(&sh->pause->timer, on_timer, wait > 0 ? (uint64_t)wait : 0, 0);
}

static void on_timer(uv_timer_t *t)
{
    sv_shard *sh = t->data;
    if (!sh->pause->head) return;
    if (sv_pause_now() == SV_PAUSE_OFF) resume_held(sh);
    else arm(sh); /* extended meanwhile */
}

static void on_wake(uv_async_t *a)
{
    sv_shard *sh = a->data;
    if (sh->pause->head && sv_pause_now() == SV_PAUSE_OFF) resume_held(sh);
}

void sv_pause_hold(sv_conn *c)
{
    sv_pause_shard *p = c->sh->pause;
    c->cpause_wait = 1;
    c->cpause_next = NULL;
    if (p->tail) p->tail->cpause_next = c;
    else p->head = c;
    p->tail = c;
    atomic_fetch_add(&p->nheld, 1);
    arm(c->sh);
}

void sv_pause_forget(sv_conn *c)
{
    if (!c->cpause_wait) return;
    sv_pause_shard *p = c->sh->pause;
    sv_conn *prev = NULL;
    for (sv_conn *k = p->head; k; prev = k, k = k->cpause_next)
        if (k == c) {
            if (prev) prev->cpause_next = c->cpause_next;
            else p->head = c->cpause_next;
            if (p->tail == c) p->tail = prev;
            atomic_fetch_sub(&p->nheld, 1);
            break;
        }
    c->cpause_wait = 0;
    c->cpause_next = NULL;
}

void sv_pause_init_shard(sv_shard *sh)
{
    sh->pause = sv_calloc(1, sizeof(*sh->pause));
    uv_async_init(&sh->loop, &sh->pause->wake, on_wake);
    sh->pause->wake.data = sh;
    uv_timer_init(&sh->loop, &sh->pause->timer);
    sh->pause->timer.data = sh;
}

/* libuv runs close callbacks in no order we may rely on and reads a handle after
 * its callback: the block holding both is freed by the last one */
static void free_on_close(uv_handle_t *h)
{
    sv_shard *sh = h->data;
    if (--sh->pause->open_handles) return;
    free(sh->pause);
    sh->pause = NULL;
}

void sv_pause_close_shard(sv_shard *sh)
{
    if (!sh->pause) return;
    sh->pause->head = sh->pause->tail = NULL; /* its connections are closed first */
    atomic_store(&sh->pause->nheld, 0);
    uv_timer_stop(&sh->pause->timer);
    sh->pause->open_handles = 2;
    uv_close((uv_handle_t *)&sh->pause->wake, free_on_close);
    uv_close((uv_handle_t *)&sh->pause->timer, free_on_close);
}

void sv_client_pause(sv_ctx *c, int argc, sv_str *argv)
{
    int type = SV_PAUSE_ALL;
    if (argc == 4) {
        if (sv_eq(argv[3], "write")) type = SV_PAUSE_WRITE;
        else if (!sv_eq(argv[3], "all")) {
            sv_add_error(&c->r, "CLIENT PAUSE mode must be WRITE or ALL");
            return;
        }
    }
    long long ms;
    if (!sv_get_ms_timeout(c, argv[2], &ms)) return;
    /* 0: an end time already passed, so no pause (Redis stores 0 and drops it at once) */
    long long end = ms > 0 ? sv_mstime() + ms : 0;
    uv_mutex_lock(&pause_lock);
    if (sv_pause_now() != SV_PAUSE_OFF) {
        int cur = atomic_load(&sv_pause_type);
        if (cur > type) type = cur;
        long long e = atomic_load(&pause_end);
        if (e > end) end = e;
    }
    if (end > 0) {
        atomic_store(&pause_end, end);
        atomic_store(&sv_pause_type, type);
    }
    uv_mutex_unlock(&pause_lock);
    sv_add_ok(&c->r);
}

void sv_client_unpause(sv_ctx *c)
{
    uv_mutex_lock(&pause_lock);
    atomic_store(&sv_pause_type, SV_PAUSE_OFF);
    atomic_store(&pause_end, 0);
    uv_mutex_unlock(&pause_lock);
    /* every shard resumes its held clients in its next loop turn (this one too: not
     * from inside the command that is running) */
    for (int i = 0; i < sv_cfg.shards; i++)
        if (sv_shards[i].pause) uv_async_send(&sv_shards[i].pause->wake);
    sv_add_ok(&c->r);
}
