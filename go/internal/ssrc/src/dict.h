/* dict: a chained hash table with incremental rehashing (as Redis's dict), keyed by
 * byte strings stored inline in the entry. One entry type serves every use: the
 * keyspace (val = object, u.i = expire time, aux = slot in the expiring array), hash
 * fields (val = value blob), set members (val unused) and sorted-set members
 * (u.d = score). Growing and shrinking move a few buckets per insertion or
 * deletion (never per lookup, so reads may run under an iteration), so no request
 * pays for a whole rehash. */
#ifndef SV_DICT_H
#define SV_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct sv_entry {
    struct sv_entry *next;
    void *val;
    union {
        int64_t i;
        double d;
    } u;
    uint32_t aux;
    uint32_t klen;
    char key[];
} sv_entry;

typedef struct sv_ht {
    sv_entry **table;
    uint64_t mask; /* size - 1; size 0 when table is NULL */
    uint64_t used;
} sv_ht;

typedef struct sv_dict {
    sv_ht ht[2];
    int64_t rehashidx; /* -1 when not rehashing */
    unsigned iterators; /* unsafe iterators pause rehashing */
} sv_dict;

void sv_hash_seed(uint64_t seed);
uint64_t sv_hash(const void *p, size_t len);

void sv_dict_init(sv_dict *d);
/* Frees every entry (calling free_entry on each first, if given) and the tables. */
void sv_dict_clear(sv_dict *d, void (*free_entry)(sv_entry *, void *), void *priv);
static inline uint64_t sv_dict_size(const sv_dict *d) { return d->ht[0].used + d->ht[1].used; }

sv_entry *sv_dict_find(sv_dict *d, const void *key, size_t klen);
/* Prefetches what finding each of the keys will read — its bucket, then the entry the
 * bucket leads to and that entry's value — in three passes over all of them, so the
 * dependent cache misses of n lookups overlap instead of following each other (a
 * pipelined batch of reads in a large keyspace). Changes nothing; not while rehashing. */
void sv_dict_prefetch(const sv_dict *d, const sv_str *keys, int n);
/* Inserts a new zeroed entry for key; if the key exists returns NULL and sets *existing. */
sv_entry *sv_dict_add(sv_dict *d, const void *key, size_t klen, sv_entry **existing);
/* Unlinks the entry for key and returns it (caller frees with free()), or NULL. */
sv_entry *sv_dict_unlink(sv_dict *d, const void *key, size_t klen);
/* A uniformly-ish random entry (random bucket, random chain position), NULL if empty. */
sv_entry *sv_dict_random(sv_dict *d);

/* Redis's reverse-binary cursor scan: every entry present for the whole scan is
 * returned at least once, across resizes. Returns the next cursor (0 when done). */
typedef void sv_scan_fn(sv_entry *e, void *priv);
uint64_t sv_dict_scan(sv_dict *d, uint64_t cursor, sv_scan_fn *fn, void *priv);

/* Plain iteration; the dict must not change while iterating. */
typedef struct sv_dict_iter {
    sv_dict *d;
    int table;
    uint64_t index;
    sv_entry *next;
} sv_dict_iter;
void sv_dict_iter_init(sv_dict_iter *it, sv_dict *d);
sv_entry *sv_dict_iter_next(sv_dict_iter *it);

/* Shrinks the table when it is mostly empty (called after deletions). */
void sv_dict_maybe_shrink(sv_dict *d);

#endif
