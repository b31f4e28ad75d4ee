/* aof_int: what the three parts of the log share — aof.c (logging, group commit,
 * fsync), aof_rewrite.c (the rewrite in a child process, the rewritten log's
 * encoder), aof_load.c (startup: lock, manifest, replay, re-split). Not for other
 * modules: they use aof.h. */
#ifndef SV_AOF_INT_H
#define SV_AOF_INT_H

#include <sys/types.h>

#include "aof.h"

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
    /* a transaction's unit (sv_aof_unit_begin/end): where its MULTI record starts in
     * buf and diff, how long that record is, the records logged in it */
    int in_unit;
    size_t unit_buf, unit_diff, unit_multi_len;
    int unit_records;
    long units; /* framed units logged (the test-only fault point counts them) */
    /* read by INFO from any shard */
    _Atomic int64_t a_size, a_base, a_rewrites, a_fork_us, a_switch_us, a_max_stall_us;
    atomic_int a_in_progress, a_status; /* status: 0 ok, 1 err */
} sv_aof;

#define sv_aof_lock_fd (sv_cur->aof_lock_fd) /* the flock of --dir (aof_load.c) */

/* A RESP header such as "*3\r\n" or "$5\r\n" into tmp (32 bytes); returns its length. */
size_t sv_aof_fmt_len(char *tmp, char t, size_t n);
int sv_aof_write_all(int fd, const char *p, size_t n);
int64_t sv_aof_file_size(int fd);
int sv_aof_fsync_dir(const char *dir);

/* A writer that allocates nothing after it is made (the rewrite child uses it):
 * small pieces collect in buf, large ones go straight to the file. */
typedef struct sv_aof_writer {
    int fd;
    char *buf;
    size_t len, cap;
    int err;
} sv_aof_writer;
void sv_aofw_flush(sv_aof_writer *w);
void sv_aofw_header(sv_aof_writer *w, int index, int shards); /* SLOTLANE.AOF 1 <i> <N> */
void sv_aofw_key(sv_aof_writer *w, sv_entry *e);
void sv_aofw_functions(sv_aof_writer *w, sv_shard *sh); /* FUNCTION LOAD REPLACE per library */             /* commands that recreate the key */

/* aof_rewrite.c */
int sv_aof_rewrite_start(sv_shard *sh);   /* 0 when the child was started */
void sv_aof_rewrite_cron(sv_shard *sh);   /* reaps the child, starts requested/automatic rewrites */
/* aof.c: the end-of-turn write of the log, then the queued connections' flush */
void sv_aof_group_commit_start(sv_shard *sh);

#endif
