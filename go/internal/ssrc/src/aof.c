/* aof: see aof.h. This part logs: each write's record into the shard's buffer, the
 * buffer written once per loop turn before the replies leave (group commit), the
 * fsync policy; the rewrite is in aof_rewrite.c, startup and replay in aof_load.c. */
#define _GNU_SOURCE
#include "aof_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- encoding ---- */

/* A RESP header such as "*3\r\n" or "$5\r\n" into tmp (32 bytes); returns its length. */
size_t sv_aof_fmt_len(char *tmp, char t, size_t n)
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
    sv_buf_append(b, tmp, sv_aof_fmt_len(tmp, t, n));
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

int sv_aof_write_all(int fd, const char *p, size_t n)
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

int64_t sv_aof_file_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (int64_t)st.st_size : -1;
}

int sv_aof_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

/* ---- logging ---- */

static void log_argv(sv_shard *sh, int argc, const sv_str *argv)
{
    sv_aof *a = sh->aof;
    size_t start = a->buf.len;
    sv_aof_append_command(&a->buf, argc, argv);
    if (a->child > 0) sv_buf_append(&a->diff, a->buf.data + start, a->buf.len - start);
    a->unit_records++;
}

/* ---- transactions: one unit ----
 * The records of an EXEC are framed by MULTI and EXEC records when there are two or
 * more (one record is atomic by itself; none: nothing). Replay applies a unit only
 * when its EXEC record is there (aof_load.c). The unit is never split by a write of
 * the buffer: nothing writes the log while a command runs, and BGREWRITEAOF inside
 * a transaction is scheduled, not started (aof_rewrite.c). */

static sv_str S(const char *s);

/* Test-only fault point: with SLOTLANE_TEST_TORN_EXEC=N in the environment, the
 * N-th unit of a shard is written only up to its middle, then the process exits
 * (as a crash would leave it). */
static long torn_exec_at(void)
{
    static long at = -1;
    if (at < 0) {
        const char *e = getenv("SLOTLANE_TEST_TORN_EXEC");
        at = e ? atol(e) : 0;
    }
    return at;
}

void sv_aof_unit_begin(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (!a || sh->loading) return;
    a->in_unit = 1;
    a->unit_buf = a->buf.len;
    a->unit_diff = a->diff.len;
    sv_str multi = S("MULTI");
    log_argv(sh, 1, &multi);
    a->unit_multi_len = a->buf.len - a->unit_buf;
    a->unit_records = 0;
}

static void cut(sv_buf *b, size_t at, size_t n)
{
    memmove(b->data + at, b->data + at + n, b->len - at - n);
    b->len -= n;
}

void sv_aof_unit_end(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (!a || !a->in_unit) return;
    a->in_unit = 0;
    if (a->unit_records < 2) { /* no frame needed: drop the MULTI record */
        cut(&a->buf, a->unit_buf, a->unit_multi_len);
        if (a->child > 0) cut(&a->diff, a->unit_diff, a->unit_multi_len);
        return;
    }
    sv_str exec = S("EXEC");
    log_argv(sh, 1, &exec);
    if (torn_exec_at() > 0 && ++a->units == torn_exec_at()) {
        size_t upto = a->unit_buf + (a->buf.len - a->unit_buf) / 2;
        sv_log(SV_LOG_WARNING, "shard %d: SLOTLANE_TEST_TORN_EXEC: writing %zu of the unit's %zu bytes, then exiting",
               sh->index, upto - a->unit_buf, a->buf.len - a->unit_buf);
        if (sv_aof_write_all(a->fd, a->buf.data, upto) != 0 || fdatasync(a->fd) != 0) _exit(71);
        _exit(70);
    }
}

int sv_aof_in_unit(sv_shard *sh) { return sh->aof && sh->aof->in_unit; }

static sv_str S(const char *s) { return (sv_str){s, strlen(s)}; }

void sv_aof_log(sv_shard *sh, int argc, const sv_str *argv)
{
    if (!sh->aof || sh->loading) return;
    log_argv(sh, argc, argv);
}

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
    switch (cmd->aof) {
    case SV_AOF_TTL:
        if (rlen >= 2 && r[0] == ':' && r[1] == '0') return; /* not applied */
        log_ttl_state(sh, argv[1]);
        break;
    case SV_AOF_GETEX:
        if (argc == 2) return; /* no option: a read */
        if (rlen && (r[0] == '_' || (r[0] == '$' && r[1] == '-'))) return; /* no such key */
        log_ttl_state(sh, argv[1]);
        break;
    case SV_AOF_STRING:
        log_string_state(sh, argv[1]);
        break;
    case SV_AOF_SET: {
        int relative = 0;
        for (int i = 3; i < argc; i++)
            if (sv_eq(argv[i], "ex") || sv_eq(argv[i], "px")) relative = 1;
        if (relative) log_string_state(sh, argv[1]);
        else log_argv(sh, argc, argv);
        break;
    }
    case SV_AOF_SREM_REPLY:
        log_spop(sh, argv[1], r, rlen);
        break;
    case SV_AOF_NONE:
        break;
    case SV_AOF_FUNCTION:
        if (argc >= 2 && (sv_eq(argv[1], "load") || sv_eq(argv[1], "delete") || sv_eq(argv[1], "flush") ||
                          sv_eq(argv[1], "restore")))
            log_argv(sh, argc, argv);
        break;
    default:
        log_argv(sh, argc, argv);
        break;
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
        if (sv_aof_write_all(a->fd, a->buf.data, a->buf.len) != 0) fatal_io(sh, "cannot write");
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

static void on_check(uv_check_t *h)
{
    sv_shard *sh = h->data;
    sv_aof_before_reply(sh); /* one write (and fsync) for the whole turn */
    sv_conn_flush_queued(sh); /* then the replies it acknowledges */
}

void sv_aof_group_commit_start(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    uv_check_init(&sh->loop, &a->check);
    a->check.data = sh;
    uv_check_start(&a->check, on_check);
    a->check_on = 1;
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

void sv_aof_cron(sv_shard *sh)
{
    sv_aof *a = sh->aof;
    if (!a) return;
    sv_aof_before_reply(sh); /* DELs of the active expiry */
    sv_aof_rewrite_cron(sh);
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
    if (sh->index == 0 && sv_aof_lock_fd >= 0) {
        close(sv_aof_lock_fd);
        sv_aof_lock_fd = -1;
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
