/* aof_rewrite: the log rewrite (see aof.h). The shard thread forks; the child writes
 * the keyspace as it was at the fork with the allocation-free writer below while the
 * shard keeps running and keeps what it logs meanwhile in a diff buffer; when the
 * child is done the diff is appended and the new file renamed over the log. */
#define _GNU_SOURCE
#include "aof_int.h"
#include "stream.h"
#include "script.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the writer ---- */

void sv_aofw_flush(sv_aof_writer *w)
{
    if (w->len && !w->err && sv_aof_write_all(w->fd, w->buf, w->len) != 0) w->err = errno ? errno : EIO;
    w->len = 0;
}

static void w_put(sv_aof_writer *w, const void *p, size_t n)
{
    if (n > w->cap - w->len) sv_aofw_flush(w);
    if (n >= w->cap) {
        if (!w->err && sv_aof_write_all(w->fd, p, n) != 0) w->err = errno ? errno : EIO;
        return;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void w_len(sv_aof_writer *w, char t, size_t n)
{
    char tmp[32];
    w_put(w, tmp, sv_aof_fmt_len(tmp, t, n));
}

static void w_bulk(sv_aof_writer *w, const void *p, size_t n)
{
    w_len(w, '$', n);
    w_put(w, p, n);
    w_put(w, "\r\n", 2);
}

static void w_cstr(sv_aof_writer *w, const char *s) { w_bulk(w, s, strlen(s)); }

/* the stream module writes its records through these (stream.h) */
static void w_len_cb(void *w, char t, size_t n) { w_len(w, t, n); }
static void w_bulk_cb(void *w, const void *p, size_t n) { w_bulk(w, p, n); }

void sv_aofw_header(sv_aof_writer *w, int index, int shards)
{
    char a[16], b[16];
    w_len(w, '*', 4);
    w_cstr(w, "SLOTLANE.AOF");
    w_cstr(w, "1");
    w_bulk(w, a, sv_ull2str(a, (unsigned)index));
    w_bulk(w, b, sv_ull2str(b, (unsigned)shards));
}

/* The shard's function libraries, as FUNCTION LOAD REPLACE (script.c). */
void sv_aofw_functions(sv_aof_writer *w, sv_shard *sh)
{
    const char *code;
    size_t len;
    for (int i = 0; sv_script_library(sh, i, &code, &len); i++) {
        w_len(w, '*', 4);
        w_cstr(w, "FUNCTION");
        w_cstr(w, "LOAD");
        w_cstr(w, "REPLACE");
        w_bulk(w, code, len);
    }
}

/* Commands that recreate one key (its value, then its TTL). */
void sv_aofw_key(sv_aof_writer *w, sv_entry *e)
{
    sv_obj *o = e->val;
    switch (o->type) {
    case SV_T_STRING: {
        sv_string *s = (sv_string *)o;
        w_len(w, '*', 3);
        w_cstr(w, "SET");
        w_bulk(w, e->key, e->klen);
        w_bulk(w, s->data, s->len);
        break;
    }
    case SV_T_LIST: {
        sv_list *l = (sv_list *)o;
        for (size_t i = 0; i < l->len; i += CHUNK) {
            size_t n = l->len - i < CHUNK ? l->len - i : CHUNK;
            w_len(w, '*', 2 + n);
            w_cstr(w, "RPUSH");
            w_bulk(w, e->key, e->klen);
            for (size_t j = 0; j < n; j++) {
                sv_blob *b = l->a[(l->head + i + j) % l->cap];
                w_bulk(w, b->data, b->len);
            }
        }
        break;
    }
    case SV_T_HASH:
    case SV_T_SET: {
        int hash = o->type == SV_T_HASH;
        sv_dict *d = hash ? &((sv_hashobj *)o)->d : &((sv_set *)o)->d;
        size_t total = sv_dict_size(d), done = 0, left = 0;
        sv_dict_iter it;
        sv_dict_iter_init(&it, d);
        for (sv_entry *m; (m = sv_dict_iter_next(&it));) {
            if (left == 0) {
                left = total - done < CHUNK ? total - done : CHUNK;
                w_len(w, '*', 2 + left * (hash ? 2 : 1));
                w_cstr(w, hash ? "HSET" : "SADD");
                w_bulk(w, e->key, e->klen);
            }
            w_bulk(w, m->key, m->klen);
            if (hash) w_bulk(w, ((sv_blob *)m->val)->data, ((sv_blob *)m->val)->len);
            left--;
            done++;
        }
        break;
    }
    case SV_T_ZSET: {
        sv_zset *z = (sv_zset *)o;
        sv_zsl_node *x = sv_zsl_first(&z->zsl);
        for (size_t i = 0; i < z->zsl.length; i += CHUNK) {
            size_t n = z->zsl.length - i < CHUNK ? z->zsl.length - i : CHUNK;
            w_len(w, '*', 2 + 2 * n);
            w_cstr(w, "ZADD");
            w_bulk(w, e->key, e->klen);
            for (size_t j = 0; j < n; j++) {
                sv_entry *m = x->e;
                x = x->level[0].forward;
                char sc[64];
                w_bulk(w, sc, sv_d2str(sc, sizeof(sc), m->u.d)); /* %.17g: exact round trip */
                w_bulk(w, m->key, m->klen);
            }
        }
        break;
    }
    case SV_T_STREAM: {
        sv_stream_emit em = {w, w_len_cb, w_bulk_cb};
        sv_stream_rewrite((sv_stream *)o, e->key, e->klen, &em);
        break;
    }
    }
    if (e->u.i) {
        char t[24];
        w_len(w, '*', 3);
        w_cstr(w, "PEXPIREAT");
        w_bulk(w, e->key, e->klen);
        w_bulk(w, t, sv_ll2str(t, e->u.i));
    }
}

/* ---- rewrite ---- */

static void note_stall(sv_aof *a, int64_t us)
{
    if (us > atomic_load(&a->a_max_stall_us)) atomic_store(&a->a_max_stall_us, us);
}

/* Starts a rewrite of this shard's log in a child process; 0 when started. */
int sv_aof_rewrite_start(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (a->child > 0) return -1;
    sv_aof_before_reply(sh); /* from here on everything logged is also in the diff */
    snprintf(a->tmp, sizeof(a->tmp), "%s/temp-rewrite-shard-%d-of-%d.aof", sv_cfg.dir, sh->index, sv_cfg.shards);
    int fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        sv_log(SV_LOG_WARNING, "shard %d: cannot create %s: %s", sh->index, a->tmp, strerror(errno));
        atomic_store(&a->a_status, 1);
        a->auto_after_ms = sv_mstime() + 10000;
        return -1;
    }
    if (!a->wbuf) a->wbuf = sv_malloc(WBUF_SIZE);
    int64_t t0 = sv_ustime();
    pid_t pid = fork();
    if (pid == 0) {
        /* The child: a copy of memory as it was at the fork. Only this shard's
         * keyspace is read (this thread was between commands, so it is
         * consistent); nothing is allocated, no lock is taken, no stdio. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd > 3) close_range(3, (unsigned)fd - 1, 0);
        close_range((unsigned)fd + 1, ~0U, 0);
        sv_aof_writer w = {fd, a->wbuf, 0, WBUF_SIZE, 0};
        sv_aofw_header(&w, sh->index, sv_cfg.shards);
        sv_aofw_functions(&w, sh);
        sv_dict_iter it;
        sv_dict_iter_init(&it, &sh->keys);
        for (sv_entry *e; (e = sv_dict_iter_next(&it));) sv_aofw_key(&w, e);
        sv_aofw_flush(&w);
        _exit(w.err || fdatasync(fd) != 0 ? 1 : 0);
    }
    int64_t fork_us = sv_ustime() - t0;
    close(fd);
    if (pid < 0) {
        sv_log(SV_LOG_WARNING, "shard %d: cannot fork for the log rewrite: %s", sh->index, strerror(errno));
        unlink(a->tmp);
        atomic_store(&a->a_status, 1);
        a->auto_after_ms = sv_mstime() + 10000;
        return -1;
    }
    a->child = pid;
    a->diff.len = 0;
    atomic_store(&a->a_fork_us, fork_us);
    note_stall(a, fork_us);
    atomic_store(&a->a_in_progress, 1);
    sv_log(SV_LOG_NOTICE, "shard %d: log rewrite started (child %d, fork took %lld us)", sh->index, (int)pid,
           (long long)fork_us);
    return 0;
}

/* Closing the replaced log frees its blocks (it is unlinked): that can take
 * milliseconds for a large file, so it happens on the libuv pool, as Redis's bio. */
typedef struct close_job {
    uv_work_t req;
    int fd;
} close_job;

static void work_close(uv_work_t *req) { close(((close_job *)req->data)->fd); }

static void after_close(uv_work_t *req, int status)
{
    (void)status;
    free(req->data);
}

static void close_in_background(sv_shard *sh, int fd)
{
    close_job *j = sv_malloc(sizeof(*j));
    j->fd = fd;
    j->req.data = j;
    if (uv_queue_work(&sh->loop, &j->req, work_close, after_close) != 0) {
        close(fd);
        free(j);
    }
}

static void rewrite_failed(sv_shard *sh, const char *why)
{
    sv_aof *a = sh->aof;
    sv_log(SV_LOG_WARNING, "shard %d: log rewrite failed: %s", sh->index, why);
    unlink(a->tmp);
    atomic_store(&a->a_status, 1);
    a->auto_after_ms = sv_mstime() + 10000; /* a full disk: do not fork every 100 ms */
}

/* The child finished: append what was logged meanwhile, swap the files. */
static void rewrite_done(sv_shard *sh, int ok)
{
    sv_aof *a = sh->aof;
    a->child = 0;
    atomic_store(&a->a_in_progress, 0);
    if (!ok) {
        rewrite_failed(sh, "the child failed");
        a->diff.len = 0;
        return;
    }
    int64_t t0 = sv_ustime();
    int fd = open(a->tmp, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 || sv_aof_write_all(fd, a->diff.data, a->diff.len) != 0 ||
        (sv_cfg.durability == 2 && fdatasync(fd) != 0) || rename(a->tmp, a->path) != 0) {
        char why[1400];
        snprintf(why, sizeof(why), "cannot finish %s: %s", a->tmp, strerror(errno));
        if (fd >= 0) close(fd);
        rewrite_failed(sh, why);
        a->diff.len = 0;
        return;
    }
    /* with always the directory entry must be durable before anything more is
     * acknowledged (the old file, which held those writes, is gone) */
    if (sv_cfg.durability == 2) sv_aof_fsync_dir(sv_cfg.dir);
    close_in_background(sh, a->fd);
    a->fd = fd;
    a->buf.len = 0; /* all of it is in the diff, now in the new file */
    a->size = sv_aof_file_size(fd);
    a->need_sync = sv_cfg.durability != 2;
    a->synced_size = 0;
    size_t difflen = a->diff.len;
    a->diff.len = 0;
    if (a->diff.cap > WBUF_SIZE) sv_buf_free(&a->diff);
    int64_t us = sv_ustime() - t0;
    atomic_store(&a->a_switch_us, us);
    note_stall(a, us);
    atomic_store(&a->a_size, a->size);
    atomic_store(&a->a_base, a->size);
    atomic_store(&a->a_status, 0);
    atomic_fetch_add(&a->a_rewrites, 1);
    sv_log(SV_LOG_NOTICE, "shard %d: log rewritten: %lld bytes (%zu bytes logged during the rewrite; switch took %lld us)",
           sh->index, (long long)a->size, difflen, (long long)us);
}

void sv_aof_rewrite_cron(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (a->child > 0) {
        int st;
        pid_t p = waitpid(a->child, &st, WNOHANG);
        if (p == a->child) rewrite_done(sh, WIFEXITED(st) && WEXITSTATUS(st) == 0);
        else if (p < 0 && errno == ECHILD) rewrite_done(sh, 0);
    }
    if (a->child == 0) {
        int64_t base = atomic_load(&a->a_base);
        int auto_rw = sv_cfg.aof_rewrite_pct > 0 && a->size >= sv_cfg.aof_rewrite_min &&
                      a->size > base + base / 100 * sv_cfg.aof_rewrite_pct && sv_mstime() >= a->auto_after_ms;
        if (atomic_exchange(&a->requested, 0) || auto_rw) sv_aof_rewrite_start(sh);
    }
}

void sv_cmd_bgrewriteaof(sv_ctx *c, int argc, sv_str *argv)
{
    (void)argc;
    (void)argv;
    if (!c->sh->aof) {
        sv_add_error(&c->r, "durability is off (--durability memory): there is no log to rewrite");
        return;
    }
    /* every shard rewrites its own log: the others at their next cron tick */
    int busy = 0;
    for (int i = 0; i < sv_cfg.shards; i++) {
        sv_aof *a = sv_shards[i].aof;
        if (atomic_load(&a->a_in_progress)) busy = 1;
        if (&sv_shards[i] != c->sh) atomic_store(&a->requested, 1);
    }
    if (c->sh->aof->child > 0 || sv_aof_in_unit(c->sh)) {
        /* inside EXEC the fork waits for the cron: the unit must not be split */
        if (sv_aof_in_unit(c->sh)) busy = 1;
        atomic_store(&c->sh->aof->requested, 1);
    } else if (sv_aof_rewrite_start(c->sh) != 0) {
        sv_add_error(&c->r, "Background append only file rewriting failed to start (see the server log)");
        return;
    }
    sv_add_status(&c->r, busy ? "Background append only file rewriting scheduled"
                              : "Background append only file rewriting started");
}
