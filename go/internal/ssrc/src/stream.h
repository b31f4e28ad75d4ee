/* stream: the stream type — entries kept in blocks of packed entries, a sorted
 * array of blocks (append O(1) amortised, seek O(log n) by binary search over the
 * blocks and then inside one), consumer groups with their pending entries lists.
 *
 * Blocks follow Redis's node rules (at most 100 entries appended per block, or
 * about 4 KB of entry bytes; deleted entries stay in their block as tombstones and
 * a block goes when its last live entry is deleted), so approximate trimming
 * (`MAXLEN ~`) removes the same entries as Redis 7.0 does. The commands are in
 * t_stream.c. */
#ifndef SV_STREAM_H
#define SV_STREAM_H

#include <stdint.h>

#include "server.h"

typedef struct sv_sid {
    uint64_t ms, seq;
} sv_sid;

#define SV_SBLOCK_MAX 100    /* Redis's stream-node-max-entries default */
#define SV_SBLOCK_BYTES 4096 /* ... and stream-node-max-bytes */

/* A block: entries appended in ID order into data, each
 * [id: 16 bytes][flags: 1][nfields: u32] then nfields × ([len: u32][bytes]) twice
 * (field, value). off[i] is where entry i starts. */
typedef struct sv_sblock {
    uint32_t n;     /* entries appended (live and deleted) */
    uint32_t live;  /* not deleted */
    size_t bytes;   /* estimate of Redis's listpack size, for the node-split rule */
    sv_sid last;    /* ID of the last appended entry (deleted or not) */
    sv_buf data;
    uint32_t off[SV_SBLOCK_MAX];
} sv_sblock;

struct sv_consumer;

typedef struct sv_nack {
    sv_sid id;
    int64_t delivery_time;
    uint64_t delivery_count;
    struct sv_consumer *consumer;
} sv_nack;

/* A pending entries list: nacks sorted by ID in a[head .. head+len). Acks of the
 * oldest entry (the usual order) are O(1); an insertion at the end as well. */
typedef struct sv_pel {
    sv_nack **a;
    size_t head, len, cap;
} sv_pel;

typedef struct sv_consumer {
    char *name;
    size_t nlen;
    int64_t seen_time;
    sv_pel pel; /* shares the nacks of the group's PEL */
} sv_consumer;

typedef struct sv_cgroup {
    char *name;
    size_t nlen;
    sv_sid last_id;
    int64_t entries_read; /* -1: unknown */
    sv_pel pel;           /* owns the nacks */
    sv_consumer **cons;   /* sorted by name (memcmp, shorter first: Redis's rax order) */
    size_t ncons, capcons;
} sv_cgroup;

typedef struct sv_stream {
    sv_obj h;
    sv_sblock **blocks; /* blocks[head .. head+nblocks), sorted by ID */
    size_t head, nblocks, capblocks;
    uint64_t length;
    sv_sid last_id, first_id, max_deleted;
    uint64_t entries_added;
    sv_cgroup **groups; /* sorted by name */
    size_t ngroups, capgroups;
} sv_stream;

sv_stream *sv_stream_new(void);
void sv_stream_free(sv_stream *s);
/* A deep copy (COPY, and values that travel between shards). */
sv_stream *sv_stream_dup(const sv_stream *s);

/* The rewrite writes a stream as the commands that recreate it exactly (entries,
 * tombstones, counters, groups, consumers and their pending entries), through
 * these two callbacks, without allocating (it runs in the fork child). */
typedef struct sv_stream_emit {
    void *priv;
    void (*len)(void *priv, char type, size_t n);   /* "*3\r\n" */
    void (*bulk)(void *priv, const void *p, size_t n);
} sv_stream_emit;
void sv_stream_rewrite(const sv_stream *s, const char *key, size_t klen, const sv_stream_emit *em);

/* ID helpers (exposed for the unit test and the fuzz target). */
int sv_sid_cmp(const sv_sid *a, const sv_sid *b);
size_t sv_sid_fmt(char *dst, const sv_sid *id); /* "ms-seq", at least 42 bytes */
/* Redis's streamGenericParseIDOrReply: "-" "+" (unless strict), "ms", "ms-seq",
 * "ms-*" (only when seq_given is not NULL). Returns 1 when valid. */
int sv_sid_parse(sv_str a, sv_sid *id, uint64_t missing_seq, int strict, int *seq_given);

#endif
