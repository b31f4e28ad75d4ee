/* aof_load: startup of the logs (see aof.h) — the directory lock, the manifest, the
 * re-split of logs written with another shard count, the replay of each shard's log
 * (a torn last record dropped, damage in the middle refused). */
#define _GNU_SOURCE
#include "aof_int.h"
#include "script.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


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
    size_t off = 0, unit = 0;
    int header = 1, rc = 0, in_unit = 0;
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
        } else {
            /* a transaction's unit: MULTI, its records, EXEC (aof.c) */
            int multi = p.argc == 1 && arg_is(argv[0], "MULTI"), exec = p.argc == 1 && arg_is(argv[0], "EXEC");
            if ((multi && in_unit) || (exec && !in_unit)) {
                snprintf(err, errcap, multi ? "a MULTI record inside a transaction" : "an EXEC record without MULTI");
                rc = -1;
                break;
            }
            if (multi) {
                in_unit = 1;
                unit = off;
            } else if (exec) {
                in_unit = 0;
            }
            if (fn(priv, p.argc, argv, err, errcap) != 0) {
                rc = -1;
                break;
            }
        }
        off += p.pos;
    }
    /* a log that ends inside a unit: the whole unit is the torn tail */
    if (rc == 0 && in_unit) off = unit;
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
    sv_ctx ctx = {.sh = rc->sh, .sess = &rc->sess, .r = {&rc->reply, 2}, .noroute = 1};
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
    int64_t sz = sv_aof_file_size(fd);
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
    sv_tx_free(sh, &rc.sess); /* a torn unit's queue, never run */
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
    if (sv_aof_write_all(fd, data, n) != 0 || fsync(fd) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) return -1;
    return sv_aof_fsync_dir(sv_cfg.dir);
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
    sv_aof_writer w = {-1, b, 0, sizeof(b), 0};
    sv_aofw_header(&w, index, shards);
    return write_file_atomic(path, b, w.len);
}

/* Reads the logs of `from` shards and writes them as logs of sv_cfg.shards, each key
 * in the file of its owner by slot; the manifest switch is the commit point. */
static int resplit(int from)
{
    int to = sv_cfg.shards;
    sv_log(SV_LOG_NOTICE, "the logs in %s were written by %d shards, this server has %d: re-splitting the keys",
           sv_cfg.dir, from, to);
    sv_aof_writer *w = sv_calloc((size_t)to, sizeof(sv_aof_writer));
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
        sv_aofw_header(&w[j], j, to);
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
            for (int j = 0; j < to; j++) sv_aofw_functions(&w[j], s);
            sv_dict_iter it;
            sv_dict_iter_init(&it, &s->keys);
            for (sv_entry *e; (e = sv_dict_iter_next(&it));) {
                sv_aofw_key(&w[sv_slot_owner(sl__key_slot(e->key, e->klen))], e);
                keys++;
            }
        }
        sv_db_free(s);
        sv_script_free_shard(s);
        free(s);
        if (r != 0) goto out;
    }
    for (int j = 0; j < to; j++) {
        sv_aofw_flush(&w[j]);
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
    if (sv_aof_fsync_dir(sv_cfg.dir) != 0 || write_manifest(to) != 0) {
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

int sv_aof_startup(char *err, size_t cap)
{
    if (sv_cfg.durability == 0) return 0;
    /* what the replay and re-split steps below report when they fail (they log the details) */
    snprintf(err, cap, "the logs in %s cannot be replayed (the reason is in the log)", sv_cfg.dir);
    int n = sv_cfg.shards;
    struct stat st;
    if (stat(sv_cfg.dir, &st) != 0 && mkdir(sv_cfg.dir, 0755) != 0) {
        snprintf(err, cap, "cannot create --dir %s: %s", sv_cfg.dir, strerror(errno));
        return 1;
    }
    char path[1100];
    snprintf(path, sizeof(path), "%s/slotlane.lock", sv_cfg.dir);
    sv_aof_lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (sv_aof_lock_fd < 0) {
        snprintf(err, cap, "cannot use --dir %s: %s", sv_cfg.dir, strerror(errno));
        return 1;
    }
    if (flock(sv_aof_lock_fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, cap, "--dir %s is in use by another slotlane-server", sv_cfg.dir);
        close(sv_aof_lock_fd);
        sv_aof_lock_fd = -1;
        return 1;
    }
    int have = read_manifest();
    if (have < 0) {
        snprintf(err, cap, "%s/" MANIFEST " is unreadable or damaged", sv_cfg.dir);
        return 1;
    }
    if (have == 0) {
        if (list_logs(0, 0)) {
            snprintf(err, cap, "%s holds shard logs but no " MANIFEST "; not starting (move them away or restore the manifest)",
                    sv_cfg.dir);
            return 1;
        }
        for (int i = 0; i < n; i++)
            if (create_empty(i, n) != 0) {
                snprintf(err, cap, "cannot create the logs in %s: %s", sv_cfg.dir, strerror(errno));
                return 1;
            }
        if (write_manifest(n) != 0) {
            snprintf(err, cap, "cannot write the manifest in %s: %s", sv_cfg.dir, strerror(errno));
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
            snprintf(err, cap, "cannot open %s for appending: %s", a->path, strerror(errno));
            return 1;
        }
        if (good < size) {
            sv_log(SV_LOG_WARNING, "%s: dropped a torn last record (%zu bytes at offset %zu); truncated", a->path,
                   size - good, good);
            if (ftruncate(a->fd, (off_t)good) != 0 || fdatasync(a->fd) != 0) {
                snprintf(err, cap, "cannot truncate %s: %s", a->path, strerror(errno));
                return 1;
            }
        }
        if (good == 0) { /* even the header was torn (or the file is empty): a new one */
            char b[128];
            sv_aof_writer w = {a->fd, b, 0, sizeof(b), 0};
            sv_aofw_header(&w, i, n);
            sv_aofw_flush(&w);
            if (w.err || fdatasync(a->fd) != 0) {
                snprintf(err, cap, "cannot write %s: %s", a->path, strerror(w.err ? w.err : errno));
                return 1;
            }
        }
        a->size = sv_aof_file_size(a->fd);
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
        sv_aof_group_commit_start(sh);
    }
    return 0;
}
