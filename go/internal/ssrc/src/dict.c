/* dict: see dict.h. */
#include "dict.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static uint64_t hash_seed = 0x243F6A8885A308D3ull;

void sv_hash_seed(uint64_t seed) { hash_seed = seed | 1; }

static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* A seeded 8-bytes-at-a-time multiply-rotate hash: fast on short keys, and the seed
 * (random per process) keeps crafted keys from all landing in one bucket. */
uint64_t sv_hash(const void *p, size_t len)
{
    const unsigned char *s = p;
    uint64_t h = hash_seed ^ ((uint64_t)len * 0x9E3779B97F4A7C15ull);
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        v *= 0x87c37b91114253d5ull;
        v = (v << 31) | (v >> 33);
        h ^= v * 0x4cf5ad432745937full;
        h = ((h << 27) | (h >> 37)) * 5 + 0x52dce729;
        s += 8;
        len -= 8;
    }
    uint64_t t = 0;
    switch (len) {
    case 7: t ^= (uint64_t)s[6] << 48; /* fall through */
    case 6: t ^= (uint64_t)s[5] << 40; /* fall through */
    case 5: t ^= (uint64_t)s[4] << 32; /* fall through */
    case 4: t ^= (uint64_t)s[3] << 24; /* fall through */
    case 3: t ^= (uint64_t)s[2] << 16; /* fall through */
    case 2: t ^= (uint64_t)s[1] << 8; /* fall through */
    case 1: t ^= (uint64_t)s[0]; h ^= t * 0x87c37b91114253d5ull;
    }
    return mix64(h);
}

void sv_dict_init(sv_dict *d)
{
    memset(d, 0, sizeof(*d));
    d->rehashidx = -1;
}

static inline int is_rehashing(const sv_dict *d) { return d->rehashidx != -1; }
static inline uint64_t ht_size(const sv_ht *h) { return h->table ? h->mask + 1 : 0; }

void sv_dict_clear(sv_dict *d, void (*free_entry)(sv_entry *, void *), void *priv)
{
    for (int t = 0; t < 2; t++) {
        sv_ht *h = &d->ht[t];
        for (uint64_t i = 0; i < ht_size(h); i++) {
            sv_entry *e = h->table[i];
            while (e) {
                sv_entry *n = e->next;
                if (free_entry) free_entry(e, priv);
                free(e);
                e = n;
            }
        }
        free(h->table);
    }
    sv_dict_init(d);
}

/* Moves up to n buckets from ht[0] to ht[1]; visits at most 10*n empty buckets. */
static void rehash_step(sv_dict *d, int n)
{
    int empty_visits = n * 10;
    if (d->iterators) return;
    while (n-- && d->ht[0].used) {
        while (d->ht[0].table[d->rehashidx] == NULL) {
            d->rehashidx++;
            if (--empty_visits == 0) return;
        }
        sv_entry *e = d->ht[0].table[d->rehashidx];
        while (e) {
            sv_entry *next = e->next;
            uint64_t idx = sv_hash(e->key, e->klen) & d->ht[1].mask;
            e->next = d->ht[1].table[idx];
            d->ht[1].table[idx] = e;
            d->ht[0].used--;
            d->ht[1].used++;
            e = next;
        }
        d->ht[0].table[d->rehashidx] = NULL;
        d->rehashidx++;
    }
    if (d->ht[0].used == 0) {
        free(d->ht[0].table);
        d->ht[0] = d->ht[1];
        memset(&d->ht[1], 0, sizeof(d->ht[1]));
        d->rehashidx = -1;
    }
}

static void resize_to(sv_dict *d, uint64_t size)
{
    uint64_t real = 4;
    while (real < size) real *= 2;
    if (is_rehashing(d) || real == ht_size(&d->ht[0])) return;
    sv_ht n = {sv_calloc(real, sizeof(sv_entry *)), real - 1, 0};
    if (d->ht[0].table == NULL) {
        d->ht[0] = n;
        return;
    }
    d->ht[1] = n;
    d->rehashidx = 0;
}

void sv_dict_maybe_shrink(sv_dict *d)
{
    uint64_t size = ht_size(&d->ht[0]);
    if (!is_rehashing(d) && size > 4 && d->ht[0].used * 8 < size)
        resize_to(d, d->ht[0].used < 4 ? 4 : d->ht[0].used * 2);
}

sv_entry *sv_dict_find(sv_dict *d, const void *key, size_t klen)
{
    /* no rehash step here: lookups must not move entries under a running iteration */
    if (sv_dict_size(d) == 0) return NULL;
    uint64_t h = sv_hash(key, klen);
    for (int t = 0; t < 2; t++) {
        sv_ht *ht = &d->ht[t];
        if (!ht->table) break;
        for (sv_entry *e = ht->table[h & ht->mask]; e; e = e->next)
            if (e->klen == klen && memcmp(e->key, key, klen) == 0) return e;
        if (!is_rehashing(d)) break;
    }
    return NULL;
}

void sv_dict_prefetch(const sv_dict *d, const sv_str *keys, int n)
{
    const sv_ht *ht = &d->ht[0];
    if (!ht->table || is_rehashing(d) || n > 64) return;
    sv_entry **slot[64];
    for (int i = 0; i < n; i++) {
        slot[i] = &ht->table[sv_hash(keys[i].p, keys[i].len) & ht->mask];
        __builtin_prefetch(slot[i]);
    }
    for (int i = 0; i < n; i++)
        if (*slot[i]) __builtin_prefetch(*slot[i]);
    for (int i = 0; i < n; i++)
        if (*slot[i]) __builtin_prefetch((*slot[i])->val);
}

sv_entry *sv_dict_add(sv_dict *d, const void *key, size_t klen, sv_entry **existing)
{
    if (is_rehashing(d)) rehash_step(d, 1);
    if (d->ht[0].table == NULL) resize_to(d, 4);
    else if (!is_rehashing(d) && d->ht[0].used >= ht_size(&d->ht[0])) resize_to(d, d->ht[0].used * 2);
    uint64_t h = sv_hash(key, klen);
    for (int t = 0; t < 2; t++) {
        sv_ht *ht = &d->ht[t];
        if (!ht->table) break;
        for (sv_entry *e = ht->table[h & ht->mask]; e; e = e->next)
            if (e->klen == klen && memcmp(e->key, key, klen) == 0) {
                if (existing) *existing = e;
                return NULL;
            }
        if (!is_rehashing(d)) break;
    }
    sv_ht *ht = is_rehashing(d) ? &d->ht[1] : &d->ht[0];
    sv_entry *e = sv_malloc(sizeof(sv_entry) + klen + 1);
    e->val = NULL;
    e->u.i = 0;
    e->aux = 0;
    e->klen = (uint32_t)klen;
    memcpy(e->key, key, klen);
    e->key[klen] = 0;
    uint64_t idx = h & ht->mask;
    e->next = ht->table[idx];
    ht->table[idx] = e;
    ht->used++;
    return e;
}

sv_entry *sv_dict_unlink(sv_dict *d, const void *key, size_t klen)
{
    if (sv_dict_size(d) == 0) return NULL;
    if (is_rehashing(d)) rehash_step(d, 1);
    uint64_t h = sv_hash(key, klen);
    for (int t = 0; t < 2; t++) {
        sv_ht *ht = &d->ht[t];
        if (!ht->table) break;
        sv_entry **pp = &ht->table[h & ht->mask];
        for (sv_entry *e = *pp; e; pp = &e->next, e = e->next)
            if (e->klen == klen && memcmp(e->key, key, klen) == 0) {
                *pp = e->next;
                ht->used--;
                return e;
            }
        if (!is_rehashing(d)) break;
    }
    return NULL;
}

sv_entry *sv_dict_random(sv_dict *d)
{
    if (sv_dict_size(d) == 0) return NULL;
    sv_entry *e = NULL;
    if (is_rehashing(d)) {
        uint64_t s0 = ht_size(&d->ht[0]), s1 = ht_size(&d->ht[1]);
        do {
            uint64_t h = (uint64_t)d->rehashidx + (sv_rand64() % (s0 + s1 - (uint64_t)d->rehashidx));
            e = h >= s0 ? d->ht[1].table[h - s0] : d->ht[0].table[h];
        } while (!e);
    } else {
        do {
            e = d->ht[0].table[sv_rand64() & d->ht[0].mask];
        } while (!e);
    }
    unsigned n = 0;
    for (sv_entry *x = e; x; x = x->next) n++;
    unsigned pick = (unsigned)(sv_rand64() % n);
    while (pick--) e = e->next;
    return e;
}

static inline uint64_t rev64(uint64_t v)
{
    uint64_t s = 64, mask = ~0ull;
    while ((s >>= 1) > 0) {
        mask ^= (mask << s);
        v = ((v >> s) & mask) | ((v << s) & ~mask);
    }
    return v;
}

uint64_t sv_dict_scan(sv_dict *d, uint64_t v, sv_scan_fn *fn, void *priv)
{
    if (sv_dict_size(d) == 0) return 0;
    d->iterators++; /* no rehash step while callbacks run */
    if (!is_rehashing(d)) {
        sv_ht *t0 = &d->ht[0];
        uint64_t m0 = t0->mask;
        for (sv_entry *e = t0->table[v & m0], *n; e; e = n) { n = e->next; fn(e, priv); }
        v |= ~m0;
        v = rev64(v);
        v++;
        v = rev64(v);
    } else {
        sv_ht *t0 = &d->ht[0], *t1 = &d->ht[1];
        if (ht_size(t0) > ht_size(t1)) { sv_ht *t = t0; t0 = t1; t1 = t; }
        uint64_t m0 = t0->mask, m1 = t1->mask;
        for (sv_entry *e = t0->table[v & m0], *n; e; e = n) { n = e->next; fn(e, priv); }
        do {
            for (sv_entry *e = t1->table[v & m1], *n; e; e = n) { n = e->next; fn(e, priv); }
            v |= ~m1;
            v = rev64(v);
            v++;
            v = rev64(v);
        } while (v & (m0 ^ m1));
    }
    d->iterators--;
    return v;
}

void sv_dict_iter_init(sv_dict_iter *it, sv_dict *d)
{
    it->d = d;
    it->table = 0;
    it->index = 0;
    it->next = NULL;
}

sv_entry *sv_dict_iter_next(sv_dict_iter *it)
{
    if (it->next) {
        sv_entry *e = it->next;
        it->next = e->next;
        return e;
    }
    while (it->table < 2) {
        sv_ht *ht = &it->d->ht[it->table];
        while (it->index < ht_size(ht)) {
            sv_entry *e = ht->table[it->index++];
            if (e) {
                it->next = e->next;
                return e;
            }
        }
        it->table++;
        it->index = 0;
    }
    return NULL;
}
