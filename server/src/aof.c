/* aof: see aof.h. */
#define _GNU_SOURCE
#include "aof.h"
#include "script.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MANIFEST "slotlane.manifest"
#define WBUF_SIZE (1024 * 1024)
#define CHUNK 64 /* elements per RPUSH/HSET/SADD/ZADD in a rewritten log */

typedef struct sv_aof {
    int fd;
    char path[1100];
    sv_buf buf;           /* logged, not yet written */
    int64_t size;         /* bytes in the file */
    int need_sync;        /* written since the last fdatasync */
    /* everysec: one fdatasync at a time on the libuv pool, on a dup of fd */
    uv_work_t fsync_req;
    int fsync_busy, fsync_fd, fsync_err;
    int64_t fsync_size, synced_size, last_fsync_ms;
    /* rewrite */
    pid_t child;
    char tmp[1100];
    sv_buf diff;          /* logged while the child runs */
    char *wbuf;           /* the child's write buffer (allocated before fork) */
    atomic_int requested;
    int64_t auto_after_ms; /* after a failed rewrite, no automatic one before this */
    uv_check_t check;     /* group commit at the end of the loop turn */
    int check_on;
    /* read by INFO from any shard */
    _Atomic int64_t a_size, a_base, a_rewrites, a_fork_us, a_switch_us, a_max_stall_us;
    atomic_int a_in_progress, a_status; /* status: 0 ok, 1 err */
} sv_aof;

static int lock_fd = -1;

/* ---- encoding ---- */

/* A RESP header such as "*3\r\n" or "$5\r\n" into tmp (32 bytes); returns its length. */
static size_t fmt_len(char *tmp, char t, size_t n)
{
    tmp[0] = t;
    size_t l = 1 + sv_ull2str(tmp + 1, n);
    tmp[l++] = '\r';
    tmp[l++] = '\n';
    return l;
}

static void put_len(sv_buf *b, char t, size_t n)
{
    char tmp[32];
    sv_buf_append(b, tmp, fmt_len(tmp, t, n));
}

void sv_aof_append_command(sv_buf *b, int argc, const sv_str *argv)
{
    put_len(b, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        put_len(b, '$', argv[i].len);
        sv_buf_append(b, argv[i].p, argv[i].len);
        sv_buf_append(b, "\r\n", 2);
    }
}

/* A writer that allocates nothing after it is made (the rewrite child uses it):
 * small pieces collect in buf, large ones go straight to the file. */
typedef struct writer {
    int fd;
    char *buf;
    size_t len, cap;
    int err;
} writer;

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void w_flush(writer *w)
{
    if (w->len && !w->err && write_all(w->fd, w->buf, w->len) != 0) w->err = errno ? errno : EIO;
    w->len = 0;
}

static void w_put(writer *w, const void *p, size_t n)
{
    if (n > w->cap - w->len) w_flush(w);
    if (n >= w->cap) {
        if (!w->err && write_all(w->fd, p, n) != 0) w->err = errno ? errno : EIO;
        return;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void w_len(writer *w, char t, size_t n)
{
    char tmp[32];
    w_put(w, tmp, fmt_len(tmp, t, n));
}

static void w_bulk(writer *w, const void *p, size_t n)
{
    w_len(w, '$', n);
    w_put(w, p, n);
    w_put(w, "\r\n", 2);
}

static void w_cstr(writer *w, const char *s) { w_bulk(w, s, strlen(s)); }

static void w_header(writer *w, int index, int shards)
{
    char a[16], b[16];
    w_len(w, '*', 4);
    w_cstr(w, "SLOTLANE.AOF");
    w_cstr(w, "1");
    w_bulk(w, a, sv_ull2str(a, (unsigned)index));
    w_bulk(w, b, sv_ull2str(b, (unsigned)shards));
}

/* Commands that recreate one key (its value, then its TTL). */
/* The shard's function libraries, as FUNCTION LOAD REPLACE (script.c). */
static void w_functions(writer *w, sv_shard *sh)
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

static void w_key(writer *w, sv_entry *e)
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
        for (size_t i = 0; i < z->len; i += CHUNK) {
            size_t n = z->len - i < CHUNK ? z->len - i : CHUNK;
            w_len(w, '*', 2 + 2 * n);
            w_cstr(w, "ZADD");
            w_bulk(w, e->key, e->klen);
            for (size_t j = 0; j < n; j++) {
                sv_entry *m = z->a[i + j];
                char sc[64];
                w_bulk(w, sc, sv_d2str(sc, sizeof(sc), m->u.d)); /* %.17g: exact round trip */
                w_bulk(w, m->key, m->klen);
            }
        }
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

/* ---- logging ---- */

static void log_argv(sv_shard *sh, int argc, const sv_str *argv)
{
    sv_aof *a = sh->aof;
    size_t start = a->buf.len;
    sv_aof_append_command(&a->buf, argc, argv);
    if (a->child > 0) sv_buf_append(&a->diff, a->buf.data + start, a->buf.len - start);
}

static sv_str S(const char *s) { return (sv_str){s, strlen(s)}; }

void sv_aof_log_del(sv_shard *sh, const char *key, size_t klen)
{
    if (!sh->aof || sh->loading) return;
    sv_str argv[2] = {S("DEL"), {key, klen}};
    log_argv(sh, 2, argv);
}

/* The key's TTL as it is now: PEXPIREAT, PERSIST, or DEL when it is gone. */
static void log_ttl_state(sv_shard *sh, sv_str key)
{
    sv_entry *e = sv_dict_find(&sh->keys, key.p, key.len);
    char t[24];
    if (!e) {
        sv_str argv[2] = {S("DEL"), key};
        log_argv(sh, 2, argv);
    } else if (e->u.i) {
        sv_str argv[3] = {S("PEXPIREAT"), key, {t, sv_ll2str(t, e->u.i)}};
        log_argv(sh, 3, argv);
    } else {
        sv_str argv[2] = {S("PERSIST"), key};
        log_argv(sh, 2, argv);
    }
}

/* SET/SETEX/PSETEX with a relative TTL: the string and its absolute expiry as they
 * are now (when NX/XX kept the old value this rewrites it unchanged: harmless). */
static void log_string_state(sv_shard *sh, sv_str key)
{
    sv_entry *e = sv_dict_find(&sh->keys, key.p, key.len);
    if (!e || ((sv_obj *)e->val)->type != SV_T_STRING) return;
    sv_string *s = e->val;
    char t[24];
    sv_str argv[5] = {S("SET"), key, {s->data, s->len}, S("PXAT"), {t, 0}};
    if (e->u.i) {
        argv[4].len = sv_ll2str(t, e->u.i);
        log_argv(sh, 5, argv);
    } else {
        log_argv(sh, 3, argv);
    }
}

/* Reads one RESP bulk at *p (end e); returns 1 and the string, 0 if not a bulk. */
static int read_bulk(const char **p, const char *e, sv_str *out)
{
    const char *q = *p;
    if (q >= e || *q != '$') return 0;
    const char *nl = memchr(q, '\r', (size_t)(e - q));
    long long n;
    if (!nl || !sv_str2ll(q + 1, (size_t)(nl - q - 1), &n) || n < 0 || nl + 2 + n + 2 > e) return 0;
    out->p = nl + 2;
    out->len = (size_t)n;
    *p = nl + 2 + n + 2;
    return 1;
}

/* SPOP: the members it popped, from its reply, as SREM. */
static void log_spop(sv_shard *sh, sv_str key, const char *r, size_t rlen)
{
    const char *p = r, *e = r + rlen;
    if (rlen == 0) return;
    long long n = 1;
    if (*p == '*' || *p == '~') {
        const char *nl = memchr(p, '\r', rlen);
        if (!nl || !sv_str2ll(p + 1, (size_t)(nl - p - 1), &n) || n <= 0) return;
        p = nl + 2;
    } else if (*p != '$') {
        return; /* null: nothing popped */
    }
    sv_str *argv = sv_malloc(sizeof(sv_str) * (size_t)(n + 2));
    argv[0] = S("SREM");
    argv[1] = key;
    int argc = 2;
    for (long long i = 0; i < n; i++)
        if (read_bulk(&p, e, &argv[argc])) argc++;
    if (argc > 2) log_argv(sh, argc, argv);
    free(argv);
}

void sv_aof_feed(sv_ctx *c, const sv_cmd *cmd, int argc, sv_str *argv, size_t reply_off)
{
    sv_shard *sh = c->sh;
    if (!sh->aof || sh->loading) return;
    const char *r = c->r.out->data + reply_off;
    size_t rlen = c->r.out->len - reply_off;
    if (rlen && (r[0] == '-' || r[0] == '!')) return; /* an error changed nothing */
    sv_cmd_fn *fn = cmd->fn;
    if (fn == sv_cmd_expire || fn == sv_cmd_pexpire || fn == sv_cmd_expireat || fn == sv_cmd_pexpireat) {
        if (rlen >= 2 && r[0] == ':' && r[1] == '0') return; /* not applied */
        log_ttl_state(sh, argv[1]);
    } else if (fn == sv_cmd_getex) {
        if (argc == 2) return; /* no option: a read */
        if (rlen && (r[0] == '_' || (r[0] == '$' && r[1] == '-'))) return; /* no such key */
        log_ttl_state(sh, argv[1]);
    } else if (fn == sv_cmd_setex || fn == sv_cmd_psetex) {
        log_string_state(sh, argv[1]);
    } else if (fn == sv_cmd_set && argc > 3) {
        int relative = 0;
        for (int i = 3; i < argc; i++)
            if (sv_eq(argv[i], "ex") || sv_eq(argv[i], "px")) relative = 1;
        if (relative) log_string_state(sh, argv[1]);
        else log_argv(sh, argc, argv);
    } else if (fn == sv_cmd_spop) {
        log_spop(sh, argv[1], r, rlen);
    } else {
        log_argv(sh, argc, argv);
    }
}

/* ---- writing and syncing ---- */

static void fatal_io(sv_shard *sh, const char *what)
{
    /* a durable server that cannot write its log must not acknowledge writes */
    sv_log(SV_LOG_WARNING, "shard %d: %s %s: %s; exiting", sh->index, what, sh->aof->path, strerror(errno));
    _exit(1);
}

void sv_aof_before_reply(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (!a) return;
    if (a->buf.len) {
        if (write_all(a->fd, a->buf.data, a->buf.len) != 0) fatal_io(sh, "cannot write");
        a->size += (int64_t)a->buf.len;
        atomic_store_explicit(&a->a_size, a->size, memory_order_relaxed);
        a->buf.len = 0;
        if (a->buf.cap > WBUF_SIZE) sv_buf_free(&a->buf);
        a->need_sync = 1;
    }
    if (a->need_sync && sv_cfg.durability == 2) {
        if (fdatasync(a->fd) != 0) fatal_io(sh, "cannot fsync");
        a->need_sync = 0;
    }
}

int sv_aof_defer_flush(sv_conn *c)
{
    sv_shard *sh = c->sh;
    if (!sh->aof) return 0;
    if (!c->flush_queued) {
        c->flush_queued = 1;
        c->flush_next = sh->flush_list;
        sh->flush_list = c;
    }
    return 1;
}

static void on_check(uv_check_t *h)
{
    sv_shard *sh = h->data;
    sv_aof_before_reply(sh); /* one write (and fsync) for the whole turn */
    while (sh->flush_list) {
        sv_conn *c = sh->flush_list;
        sh->flush_list = c->flush_next;
        c->flush_queued = 0;
        /* a read batch still owed forwarded replies is written when they arrive (fwd.c) */
        if (!c->closing && (!c->hold || c->out.len >= SV_FLUSH_EARLY)) sv_conn_flush(c);
    }
}

static void work_fsync(uv_work_t *req)
{
    sv_aof *a = req->data;
    a->fsync_err = fdatasync(a->fsync_fd) != 0 ? errno : 0;
}

static void after_fsync(uv_work_t *req, int status)
{
    (void)status;
    sv_aof *a = req->data;
    close(a->fsync_fd);
    a->fsync_busy = 0;
    if (a->fsync_err) {
        sv_log(SV_LOG_WARNING, "background fsync of %s failed: %s", a->path, strerror(a->fsync_err));
    } else if (a->fsync_size > a->synced_size) {
        a->synced_size = a->fsync_size;
    }
}

/* ---- rewrite ---- */

static int64_t file_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (int64_t)st.st_size : -1;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

static void note_stall(sv_aof *a, int64_t us)
{
    if (us > atomic_load(&a->a_max_stall_us)) atomic_store(&a->a_max_stall_us, us);
}

/* Starts a rewrite of this shard's log in a child process; 0 when started. */
static int rewrite_start(sv_shard *sh)
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
        writer w = {fd, a->wbuf, 0, WBUF_SIZE, 0};
        w_header(&w, sh->index, sv_cfg.shards);
        w_functions(&w, sh);
        sv_dict_iter it;
        sv_dict_iter_init(&it, &sh->keys);
        for (sv_entry *e; (e = sv_dict_iter_next(&it));) w_key(&w, e);
        w_flush(&w);
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
    if (fd < 0 || write_all(fd, a->diff.data, a->diff.len) != 0 ||
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
    if (sv_cfg.durability == 2) fsync_dir(sv_cfg.dir);
    close_in_background(sh, a->fd);
    a->fd = fd;
    a->buf.len = 0; /* all of it is in the diff, now in the new file */
    a->size = file_size(fd);
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

void sv_aof_cron(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (!a) return;
    sv_aof_before_reply(sh); /* DELs of the active expiry */
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
        if (atomic_exchange(&a->requested, 0) || auto_rw) rewrite_start(sh);
    }
    int64_t now = sv_mstime();
    if (sv_cfg.durability == 1 && !a->fsync_busy && a->size > a->synced_size && now - a->last_fsync_ms >= 1000) {
        a->fsync_fd = dup(a->fd); /* the rewrite may replace fd while this runs */
        if (a->fsync_fd >= 0) {
            a->fsync_busy = 1;
            a->fsync_size = a->size;
            a->last_fsync_ms = now;
            a->fsync_req.data = a;
            if (uv_queue_work(&sh->loop, &a->fsync_req, work_fsync, after_fsync) != 0) {
                close(a->fsync_fd);
                a->fsync_busy = 0;
            }
        }
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
    if (c->sh->aof->child > 0) {
        atomic_store(&c->sh->aof->requested, 1);
    } else if (rewrite_start(c->sh) != 0) {
        sv_add_error(&c->r, "Background append only file rewriting failed to start (see the server log)");
        return;
    }
    sv_add_status(&c->r, busy ? "Background append only file rewriting scheduled"
                              : "Background append only file rewriting started");
}

void sv_aof_close_shard(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (!a) return;
    sv_aof_before_reply(sh);
    if (a->fd >= 0 && a->need_sync && fdatasync(a->fd) != 0)
        sv_log(SV_LOG_WARNING, "shard %d: fsync of %s at shutdown failed: %s", sh->index, a->path, strerror(errno));
    if (a->child > 0) {
        kill(a->child, SIGKILL);
        waitpid(a->child, NULL, 0);
        unlink(a->tmp);
        a->child = 0;
    }
    if (a->check_on) {
        uv_check_stop(&a->check);
        uv_close((uv_handle_t *)&a->check, NULL);
        a->check_on = 0;
    }
}

void sv_aof_free(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (!a) return;
    if (a->fd >= 0) close(a->fd);
    sv_buf_free(&a->buf);
    sv_buf_free(&a->diff);
    free(a->wbuf);
    free(a);
    sh->aof = NULL;
    if (sh->index == 0 && lock_fd >= 0) {
        close(lock_fd);
        lock_fd = -1;
    }
}

void sv_aof_info(sv_buf *out)
{
    char tmp[1024];
    int64_t size = 0, base = 0, rewrites = 0, fork_us = 0, switch_us = 0, stall = 0;
    int inprog = 0, status = 0, sched = 0;
    for (int i = 0; sv_cfg.durability && i < sv_cfg.shards; i++) {
        sv_aof *a = sv_shards[i].aof;
        if (!a) continue;
        size += atomic_load(&a->a_size);
        base += atomic_load(&a->a_base);
        rewrites += atomic_load(&a->a_rewrites);
        if (atomic_load(&a->a_fork_us) > fork_us) fork_us = atomic_load(&a->a_fork_us);
        if (atomic_load(&a->a_switch_us) > switch_us) switch_us = atomic_load(&a->a_switch_us);
        if (atomic_load(&a->a_max_stall_us) > stall) stall = atomic_load(&a->a_max_stall_us);
        inprog |= atomic_load(&a->a_in_progress);
        status |= atomic_load(&a->a_status);
        sched |= atomic_load(&a->requested);
    }
    int n = snprintf(tmp, sizeof(tmp),
                     "# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\naof_enabled:%d\r\n"
                     "aof_fsync:%s\r\naof_rewrite_in_progress:%d\r\naof_rewrite_scheduled:%d\r\n"
                     "aof_last_bgrewrite_status:%s\r\naof_rewrites:%lld\r\naof_current_size:%lld\r\n"
                     "aof_base_size:%lld\r\naof_last_fork_usec:%lld\r\naof_last_switch_usec:%lld\r\n"
                     "aof_max_stall_usec:%lld\r\n\r\n",
                     sv_cfg.durability ? 1 : 0, sv_cfg.durability == 2 ? "always" : sv_cfg.durability ? "everysec" : "no",
                     inprog, sched, status ? "err" : "ok", (long long)rewrites, (long long)size, (long long)base,
                     (long long)fork_us, (long long)switch_us, (long long)stall);
    sv_buf_append(out, tmp, (size_t)n);
}

/* ---- loading ---- */

static int arg_is(sv_str a, const char *s) { return a.len == strlen(s) && memcmp(a.p, s, a.len) == 0; }

static int arg_int(sv_str a, long long *v) { return sv_str2ll(a.p, a.len, v); }

/* Does a complete record start somewhere in data[from..len)? Then a record that
 * "needs more bytes" is not the torn last one: its length field was damaged. */
static int record_follows(const char *data, size_t from, size_t len)
{
    sv_parser p;
    sv_parser_init(&p);
    int found = 0;
    for (size_t i = from; i + 3 < len && !found; i++) {
        const char *q = memchr(data + i, '\n', len - i);
        if (!q) break;
        i = (size_t)(q - data);
        if (i + 1 < len && data[i + 1] == '*') {
            sv_parser_reset(&p);
            if (sv_parse(&p, data + i + 1, len - i - 1) == SV_PARSE_OK && p.argc > 0) found = 1;
        }
    }
    sv_parser_free(&p);
    return found;
}

int sv_aof_scan(const char *data, size_t len, int index, int shards, sv_aof_record_fn *fn, void *priv, size_t *end,
                char *err, size_t errcap)
{
    sv_parser p;
    sv_parser_init(&p);
    sv_str *argv = NULL;
    int cap = 0;
    size_t off = 0;
    int header = 1, rc = 0;
    while (off < len) {
        if (data[off] != '*') {
            snprintf(err, errcap, "expected '*', found byte 0x%02x", (unsigned char)data[off]);
            rc = -1;
            break;
        }
        sv_parser_reset(&p);
        int r = sv_parse(&p, data + off, len - off);
        if (r == SV_PARSE_MORE) {
            if (record_follows(data, off + 1, len)) {
                snprintf(err, errcap, "a record that runs past the end of the file is followed by more records");
                rc = -1;
            }
            break;
        }
        if (r == SV_PARSE_ERR || p.argc == 0) {
            snprintf(err, errcap, "%s", r == SV_PARSE_ERR ? p.error : "empty record");
            rc = -1;
            break;
        }
        if (p.argc > cap) {
            cap = p.argc;
            argv = sv_realloc(argv, sizeof(sv_str) * (size_t)cap);
        }
        sv_parser_args(&p, data + off, argv);
        if (header) {
            long long v, i, n;
            if (p.argc != 4 || !arg_is(argv[0], "SLOTLANE.AOF") || !arg_int(argv[1], &v) || !arg_int(argv[2], &i) ||
                !arg_int(argv[3], &n)) {
                snprintf(err, errcap, "no SLOTLANE.AOF header");
                rc = -1;
                break;
            }
            if (v != 1) {
                snprintf(err, errcap, "log format version %lld, this server reads version 1", v);
                rc = -1;
                break;
            }
            if (i != index || n != shards) {
                snprintf(err, errcap, "the header says shard %lld of %lld, the file name and manifest shard %d of %d", i,
                         n, index, shards);
                rc = -1;
                break;
            }
            header = 0;
        } else if (fn(priv, p.argc, argv, err, errcap) != 0) {
            rc = -1;
            break;
        }
        off += p.pos;
    }
    *end = off;
    free(argv);
    sv_parser_free(&p);
    return rc;
}

typedef struct replay_ctx {
    sv_shard *sh;
    sv_session sess;
    sv_buf reply;
    uint64_t records;
} replay_ctx;

static int replay_record(void *priv, int argc, sv_str *argv, char *err, size_t errcap)
{
    replay_ctx *rc = priv;
    rc->reply.len = 0;
    sv_ctx ctx = {rc->sh, &rc->sess, {&rc->reply, 2}, 0, 1, 0};
    sv_execute(&ctx, argc, argv);
    rc->records++;
    if (rc->reply.len && rc->reply.data[0] == '-') {
        /* only commands that succeeded are logged: an error here means damage */
        size_t n = rc->reply.len > 2 ? rc->reply.len - 2 : rc->reply.len;
        snprintf(err, errcap, "the record (%.*s) fails: %.*s", (int)(argv[0].len > 32 ? 32 : argv[0].len), argv[0].p,
                 (int)(n > 200 ? 200 : n), rc->reply.data + 1);
        return -1;
    }
    return 0;
}

static void path_of(char *out, size_t cap, int i, int n) { snprintf(out, cap, "%s/shard-%d-of-%d.aof", sv_cfg.dir, i, n); }

/* Replays the log at path into sh (loading mode). Returns 0 and the offset after the
 * last complete record (*good; < *size when a torn record was dropped), or -1 after
 * printing the error. */
static int replay_file(sv_shard *sh, const char *path, int index, int shards, size_t *good, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "slotlane-server: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    int64_t sz = file_size(fd);
    const char *data = NULL;
    if (sz > 0) {
        data = mmap(NULL, (size_t)sz, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            fprintf(stderr, "slotlane-server: cannot read %s: %s\n", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    close(fd);
    replay_ctx rc = {sh, {0}, {0}, 0};
    rc.sess.proto = 2;
    char err[512] = "";
    int64_t t0 = sv_mstime();
    sh->loading = 1;
    sh->now_ms = t0;
    int r = sv_aof_scan(data ? data : "", (size_t)(sz > 0 ? sz : 0), index, shards, replay_record, &rc, good, err, sizeof(err));
    sh->loading = 0;
    sv_buf_free(&rc.reply);
    if (data) munmap((void *)data, (size_t)sz);
    *size = (size_t)(sz > 0 ? sz : 0);
    if (r != 0) {
        fprintf(stderr, "slotlane-server: file %s: corrupt record at offset %zu: %s\n", path, *good, err);
        return -1;
    }
    sv_log(SV_LOG_NOTICE, "shard %d: replayed %llu records (%zu bytes) from %s in %lld ms", sh->index,
           (unsigned long long)rc.records, *good, path, (long long)(sv_mstime() - t0));
    return 0;
}

static int write_file_atomic(const char *path, const char *data, size_t n)
{
    char tmp[1200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    if (write_all(fd, data, n) != 0 || fsync(fd) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) return -1;
    return fsync_dir(sv_cfg.dir);
}

static int write_manifest(int shards)
{
    char path[1100], body[64];
    snprintf(path, sizeof(path), "%s/" MANIFEST, sv_cfg.dir);
    int n = snprintf(body, sizeof(body), "slotlane-aof 1\nshards %d\n", shards);
    return write_file_atomic(path, body, (size_t)n);
}

/* The shard count in the manifest; 0 when there is none, -1 when it is unreadable. */
static int read_manifest(void)
{
    char path[1100];
    snprintf(path, sizeof(path), "%s/" MANIFEST, sv_cfg.dir);
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : -1;
    int v = 0, n = 0;
    int ok = fscanf(f, "slotlane-aof %d shards %d", &v, &n) == 2 && v == 1 && n >= 1 && n <= SV_MAX_SHARDS;
    fclose(f);
    return ok ? n : -1;
}

/* Is there any shard-*-of-*.aof with a shard count other than keep (0: any)? */
static int list_logs(int keep, int remove)
{
    DIR *d = opendir(sv_cfg.dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int i, n, len = 0;
        if (sscanf(de->d_name, "shard-%d-of-%d.aof%n", &i, &n, &len) == 2 && de->d_name[len] == 0 && n != keep) {
            found++;
            if (remove) {
                char p[1400];
                snprintf(p, sizeof(p), "%s/%s", sv_cfg.dir, de->d_name);
                unlink(p);
            }
        } else if (!strncmp(de->d_name, "temp-rewrite-shard-", 19) ||
                   (strlen(de->d_name) > 8 && !strcmp(de->d_name + strlen(de->d_name) - 8, ".aof.tmp"))) {
            char p[1400]; /* leftovers of a rewrite or a re-split that did not finish */
            snprintf(p, sizeof(p), "%s/%s", sv_cfg.dir, de->d_name);
            if (remove) unlink(p);
        }
    }
    closedir(d);
    return found;
}

static int create_empty(int index, int shards)
{
    char path[1100], b[128];
    path_of(path, sizeof(path), index, shards);
    writer w = {-1, b, 0, sizeof(b), 0};
    w_header(&w, index, shards);
    return write_file_atomic(path, b, w.len);
}

/* Reads the logs of `from` shards and writes them as logs of sv_cfg.shards, each key
 * in the file of its owner by slot; the manifest switch is the commit point. */
static int resplit(int from)
{
    int to = sv_cfg.shards;
    sv_log(SV_LOG_NOTICE, "the logs in %s were written by %d shards, this server has %d: re-splitting the keys",
           sv_cfg.dir, from, to);
    writer *w = sv_calloc((size_t)to, sizeof(writer));
    char path[1100], tmp[1200];
    int rc = -1;
    unsigned long long keys = 0;
    for (int j = 0; j < to; j++) {
        path_of(path, sizeof(path), j, to);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        w[j].fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (w[j].fd < 0) {
            fprintf(stderr, "slotlane-server: cannot create %s: %s\n", tmp, strerror(errno));
            goto out;
        }
        w[j].buf = sv_malloc(WBUF_SIZE);
        w[j].cap = WBUF_SIZE;
        w_header(&w[j], j, to);
    }
    for (int i = 0; i < from; i++) {
        sv_shard *s = sv_calloc(1, sizeof(sv_shard));
        s->index = i;
        sv_dict_init(&s->keys);
        s->slot_keys = sv_calloc(SL_SLOTS, sizeof(uint32_t));
        size_t good, size;
        path_of(path, sizeof(path), i, from);
        int r = replay_file(s, path, i, from, &good, &size);
        if (r == 0 && good < size)
            sv_log(SV_LOG_WARNING, "%s: dropped a torn last record (%zu bytes at offset %zu)", path, size - good, good);
        if (r == 0) {
            /* libraries are per shard: every new shard gets each old shard's */
            for (int j = 0; j < to; j++) w_functions(&w[j], s);
            sv_dict_iter it;
            sv_dict_iter_init(&it, &s->keys);
            for (sv_entry *e; (e = sv_dict_iter_next(&it));) {
                w_key(&w[sv_slot_owner(sl__key_slot(e->key, e->klen))], e);
                keys++;
            }
        }
        sv_db_free(s);
        sv_script_free_shard(s);
        free(s);
        if (r != 0) goto out;
    }
    for (int j = 0; j < to; j++) {
        w_flush(&w[j]);
        if (w[j].err || fsync(w[j].fd) != 0) {
            fprintf(stderr, "slotlane-server: cannot write the re-split log of shard %d: %s\n", j,
                    strerror(w[j].err ? w[j].err : errno));
            goto out;
        }
    }
    for (int j = 0; j < to; j++) {
        path_of(path, sizeof(path), j, to);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        if (rename(tmp, path) != 0) {
            fprintf(stderr, "slotlane-server: cannot rename %s: %s\n", tmp, strerror(errno));
            goto out;
        }
    }
    if (fsync_dir(sv_cfg.dir) != 0 || write_manifest(to) != 0) {
        fprintf(stderr, "slotlane-server: cannot write the manifest in %s: %s\n", sv_cfg.dir, strerror(errno));
        goto out;
    }
    list_logs(to, 1); /* committed: the old logs go */
    sv_log(SV_LOG_NOTICE, "re-split %llu keys from %d shard logs into %d", keys, from, to);
    rc = 0;
out:
    for (int j = 0; j < to; j++) {
        if (w[j].fd > 0) close(w[j].fd);
        free(w[j].buf);
        if (rc != 0) {
            path_of(path, sizeof(path), j, to);
            snprintf(tmp, sizeof(tmp), "%s.tmp", path);
            unlink(tmp);
        }
    }
    free(w);
    return rc;
}

int sv_aof_startup(void)
{
    if (sv_cfg.durability == 0) return 0;
    int n = sv_cfg.shards;
    struct stat st;
    if (stat(sv_cfg.dir, &st) != 0 && mkdir(sv_cfg.dir, 0755) != 0) {
        fprintf(stderr, "slotlane-server: cannot create --dir %s: %s\n", sv_cfg.dir, strerror(errno));
        return 1;
    }
    char path[1100];
    snprintf(path, sizeof(path), "%s/slotlane.lock", sv_cfg.dir);
    lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0) {
        fprintf(stderr, "slotlane-server: cannot use --dir %s: %s\n", sv_cfg.dir, strerror(errno));
        return 1;
    }
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "slotlane-server: --dir %s is in use by another slotlane-server\n", sv_cfg.dir);
        close(lock_fd);
        lock_fd = -1;
        return 1;
    }
    int have = read_manifest();
    if (have < 0) {
        fprintf(stderr, "slotlane-server: %s/" MANIFEST " is unreadable or damaged\n", sv_cfg.dir);
        return 1;
    }
    if (have == 0) {
        if (list_logs(0, 0)) {
            fprintf(stderr, "slotlane-server: %s holds shard logs but no " MANIFEST "; not starting (move them away or restore the manifest)\n",
                    sv_cfg.dir);
            return 1;
        }
        for (int i = 0; i < n; i++)
            if (create_empty(i, n) != 0) {
                fprintf(stderr, "slotlane-server: cannot create the logs in %s: %s\n", sv_cfg.dir, strerror(errno));
                return 1;
            }
        if (write_manifest(n) != 0) {
            fprintf(stderr, "slotlane-server: cannot write the manifest in %s: %s\n", sv_cfg.dir, strerror(errno));
            return 1;
        }
    } else if (have != n && resplit(have) != 0) {
        return 1;
    }
    list_logs(n, 1); /* leftovers of an interrupted rewrite or re-split */
    for (int i = 0; i < n; i++) {
        sv_shard *sh = &sv_shards[i];
        sv_aof *a = sv_calloc(1, sizeof(sv_aof));
        a->fd = -1;
        sh->aof = a;
        path_of(a->path, sizeof(a->path), i, n);
        size_t good, size;
        if (replay_file(sh, a->path, i, n, &good, &size) != 0) return 1;
        a->fd = open(a->path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (a->fd < 0) {
            fprintf(stderr, "slotlane-server: cannot open %s for appending: %s\n", a->path, strerror(errno));
            return 1;
        }
        if (good < size) {
            sv_log(SV_LOG_WARNING, "%s: dropped a torn last record (%zu bytes at offset %zu); truncated", a->path,
                   size - good, good);
            if (ftruncate(a->fd, (off_t)good) != 0 || fdatasync(a->fd) != 0) {
                fprintf(stderr, "slotlane-server: cannot truncate %s: %s\n", a->path, strerror(errno));
                return 1;
            }
        }
        if (good == 0) { /* even the header was torn (or the file is empty): a new one */
            char b[128];
            writer w = {a->fd, b, 0, sizeof(b), 0};
            w_header(&w, i, n);
            w_flush(&w);
            if (w.err || fdatasync(a->fd) != 0) {
                fprintf(stderr, "slotlane-server: cannot write %s: %s\n", a->path, strerror(w.err ? w.err : errno));
                return 1;
            }
        }
        a->size = file_size(a->fd);
        a->synced_size = a->size;
        atomic_store(&a->a_size, a->size);
        atomic_store(&a->a_base, a->size);
        /* keys whose time passed while the server was down go now, logged as DEL so
         * that the log stays a faithful history */
        sh->now_ms = sv_mstime();
        for (size_t k = 0; k < sh->nexpiring;) {
            sv_entry *e = sh->expiring[k];
            if (e->u.i <= sh->now_ms) sv_db_expire_entry(sh, e); /* moves the last one to k */
            else k++;
        }
        sv_aof_before_reply(sh);
        uv_check_init(&sh->loop, &a->check);
        a->check.data = sh;
        uv_check_start(&a->check, on_check);
        a->check_on = 1;
    }
    return 0;
}
