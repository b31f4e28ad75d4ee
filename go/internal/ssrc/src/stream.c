/* stream: see stream.h. The data structure only; the commands are in t_stream.c. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>

#include "stream.h"
#include "stream_int.h"

/* ---- IDs ---- */

int sv_sid_cmp(const sv_sid *a, const sv_sid *b)
{
    if (a->ms != b->ms) return a->ms > b->ms ? 1 : -1;
    if (a->seq != b->seq) return a->seq > b->seq ? 1 : -1;
    return 0;
}

size_t sv_sid_fmt(char *dst, const sv_sid *id)
{
    size_t n = sv_ull2str(dst, id->ms);
    dst[n++] = '-';
    n += sv_ull2str(dst + n, id->seq);
    return n;
}

int sid_incr(sv_sid *id)
{
    if (id->seq == UINT64_MAX) {
        if (id->ms == UINT64_MAX) {
            id->ms = id->seq = 0;
            return -1;
        }
        id->ms++;
        id->seq = 0;
        return 0;
    }
    id->seq++;
    return 0;
}

int sid_decr(sv_sid *id)
{
    if (id->seq == 0) {
        if (id->ms == 0) {
            id->ms = id->seq = UINT64_MAX;
            return -1;
        }
        id->ms--;
        id->seq = UINT64_MAX;
        return 0;
    }
    id->seq--;
    return 0;
}

/* Redis's string2ull: string2ll when it fits (negative: invalid), else strtoull's
 * rules (leading spaces, a sign, no trailing bytes). s is NUL-terminated. */
static int parse_ull(const char *s, uint64_t *out)
{
    long long ll;
    size_t n = strlen(s);
    if (sv_str2ll(s, n, &ll)) {
        if (ll < 0) return 0;
        *out = (uint64_t)ll;
        return 1;
    }
    if (*s == '\0') return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == EINVAL || errno == ERANGE || end == s || *end != '\0') return 0;
    *out = v;
    return 1;
}

int sv_sid_parse(sv_str a, sv_sid *id, uint64_t missing_seq, int strict, int *seq_given)
{
    char buf[128];
    if (a.len > sizeof(buf) - 1) return 0;
    memcpy(buf, a.p, a.len);
    buf[a.len] = 0; /* like Redis's sds as a C string: an embedded NUL ends it */
    if (strict && (buf[0] == '-' || buf[0] == '+') && buf[1] == 0) return 0;
    if (seq_given) *seq_given = 1;
    if (buf[0] == '-' && buf[1] == 0) {
        id->ms = id->seq = 0;
        return 1;
    }
    if (buf[0] == '+' && buf[1] == 0) {
        id->ms = id->seq = UINT64_MAX;
        return 1;
    }
    uint64_t ms, seq;
    char *dash = strchr(buf, '-');
    if (dash) *dash = 0;
    if (!parse_ull(buf, &ms)) return 0;
    if (dash) {
        if (seq_given && dash[1] == '*' && dash[2] == 0) {
            seq = 0;
            *seq_given = 0;
        } else if (!parse_ull(dash + 1, &seq)) {
            return 0;
        }
    } else {
        seq = missing_seq;
    }
    id->ms = ms;
    id->seq = seq;
    return 1;
}

/* ---- entries in a block ---- */

sv_sid ent_id(const char *e)
{
    sv_sid id;
    memcpy(&id.ms, e, 8);
    memcpy(&id.seq, e + 8, 8);
    return id;
}

uint32_t ent_nfields(const char *e)
{
    uint32_t n;
    memcpy(&n, e + 17, 4);
    return n;
}

/* The next length-prefixed string at *p. */
sv_str ent_next_str(const char **p)
{
    uint32_t n;
    memcpy(&n, *p, 4);
    sv_str s = {*p + 4, n};
    *p += 4 + n;
    return s;
}

static sv_sid block_first(const sv_sblock *b) { return ent_id(b->data.data + b->off[0]); }

/* Bytes of one listpack element, as Redis's listpack encodes it (integers that a
 * string spells are stored as integers). Used only for the node-split rule. */
static size_t lp_backlen(size_t l) { return l < 128 ? 1 : l < 16384 ? 2 : l < 2097152 ? 3 : l < 268435456 ? 4 : 5; }

static size_t lp_int_size(int64_t v)
{
    size_t l;
    if (v >= 0 && v <= 127) l = 1;
    else if (v >= -4096 && v <= 4095) l = 2;
    else if (v >= -32768 && v <= 32767) l = 3;
    else if (v >= -8388608 && v <= 8388607) l = 4;
    else if (v >= -2147483648LL && v <= 2147483647LL) l = 5;
    else l = 9;
    return l + lp_backlen(l);
}

static size_t lp_str_size(const char *p, size_t n)
{
    long long v;
    if (n <= 20 && sv_str2ll(p, n, &v)) return lp_int_size(v);
    size_t l = n < 64 ? 1 + n : n < 4096 ? 2 + n : 5 + n;
    return l + lp_backlen(l);
}

/* ---- the stream ---- */

sv_stream *sv_stream_new(void)
{
    sv_stream *s = sv_calloc(1, sizeof(*s));
    s->h.type = SV_T_STREAM;
    return s;
}

static void block_free(sv_sblock *b)
{
    sv_buf_free(&b->data);
    free(b);
}

static void pel_free(sv_pel *p, int nacks)
{
    if (nacks)
        for (size_t i = 0; i < p->len; i++) free(p->a[p->head + i]);
    free(p->a);
}

static void consumer_free(sv_consumer *c)
{
    pel_free(&c->pel, 0);
    free(c->name);
    free(c);
}

void cgroup_free(sv_cgroup *g)
{
    pel_free(&g->pel, 1);
    for (size_t i = 0; i < g->ncons; i++) consumer_free(g->cons[i]);
    free(g->cons);
    free(g->name);
    free(g);
}

void sv_stream_free(sv_stream *s)
{
    for (size_t i = 0; i < s->nblocks; i++) block_free(s->blocks[s->head + i]);
    free(s->blocks);
    for (size_t i = 0; i < s->ngroups; i++) cgroup_free(s->groups[i]);
    free(s->groups);
    free(s);
}

sv_sblock *blk(const sv_stream *s, size_t i) { return s->blocks[s->head + i]; }

static void blocks_push(sv_stream *s, sv_sblock *b)
{
    if (s->head + s->nblocks == s->capblocks) {
        if (s->head > s->nblocks) { /* mostly trimmed from the front: compact */
            memmove(s->blocks, s->blocks + s->head, s->nblocks * sizeof(*s->blocks));
            s->head = 0;
        } else {
            s->capblocks = s->capblocks ? s->capblocks * 2 : 4;
            s->blocks = sv_realloc(s->blocks, s->capblocks * sizeof(*s->blocks));
        }
    }
    s->blocks[s->head + s->nblocks++] = b;
}

static void blocks_remove(sv_stream *s, size_t i)
{
    block_free(blk(s, i));
    if (i == 0) {
        s->head++;
    } else {
        memmove(s->blocks + s->head + i, s->blocks + s->head + i + 1, (s->nblocks - i - 1) * sizeof(*s->blocks));
    }
    if (--s->nblocks == 0) s->head = 0;
}

int stream_append(sv_stream *s, sv_sid id, int nf, const sv_str *fv)
{
    size_t tot = 0;
    for (int i = 0; i < 2 * nf; i++) tot += fv[i].len;
    if (tot > (1u << 30)) return -1; /* Redis's STREAM_LISTPACK_MAX_SIZE */
    /* XSETID checks the new last ID against the last live entry only (as Redis), so
     * deleted entries at the end may have larger IDs than the next XADD: they go, so
     * that the entries stay in ID order (Redis appends out of order after them) */
    while (s->nblocks) {
        sv_sblock *t = blk(s, s->nblocks - 1);
        if (sv_sid_cmp(&t->last, &id) < 0) break;
        while (t->n) {
            sv_sid x = ent_id(t->data.data + t->off[t->n - 1]);
            if (sv_sid_cmp(&x, &id) < 0) break;
            t->n--; /* a tombstone: every live entry is <= last_id < id */
            t->data.len = t->off[t->n];
        }
        if (t->n == 0) {
            blocks_remove(s, s->nblocks - 1);
            continue;
        }
        t->last = ent_id(t->data.data + t->off[t->n - 1]);
        break;
    }
    sv_sblock *b = s->nblocks ? blk(s, s->nblocks - 1) : NULL;
    if (b && (b->bytes + tot >= SV_SBLOCK_BYTES || b->n >= SV_SBLOCK_MAX)) b = NULL;
    int same = 0;
    if (!b) {
        b = sv_calloc(1, sizeof(*b));
        /* listpack header + master entry: count, deleted, nfields, fields, 0 */
        b->bytes = 6 + 1 + 2 + 2 + lp_int_size(nf) + 2;
        for (int i = 0; i < nf; i++) b->bytes += lp_str_size(fv[2 * i].p, fv[2 * i].len);
        blocks_push(s, b);
        same = 1;
    } else {
        /* same fields as the block's first entry: Redis stores only the values */
        const char *m = b->data.data + b->off[0];
        if (ent_nfields(m) == (uint32_t)nf) {
            const char *p = m + 21;
            same = 1;
            for (int i = 0; i < nf && same; i++) {
                sv_str f = ent_next_str(&p);
                ent_next_str(&p);
                same = f.len == fv[2 * i].len && memcmp(f.p, fv[2 * i].p, f.len) == 0;
            }
        }
    }
    sv_sid first = b->n ? block_first(b) : id;
    size_t est = lp_int_size(0) + lp_int_size((int64_t)(id.ms - first.ms)) + lp_int_size((int64_t)(id.seq - first.seq));
    size_t lpcount = 3 + (size_t)nf;
    if (!same) {
        est += lp_int_size(nf);
        lpcount += (size_t)nf + 1;
    }
    for (int i = 0; i < nf; i++) {
        if (!same) est += lp_str_size(fv[2 * i].p, fv[2 * i].len);
        est += lp_str_size(fv[2 * i + 1].p, fv[2 * i + 1].len);
    }
    est += lp_int_size((int64_t)lpcount);
    b->bytes += est;

    size_t need = 21 + 8 * (size_t)nf + tot;
    sv_buf_reserve(&b->data, need);
    char *e = b->data.data + b->data.len;
    b->off[b->n++] = (uint32_t)b->data.len;
    memcpy(e, &id.ms, 8);
    memcpy(e + 8, &id.seq, 8);
    e[16] = 0;
    uint32_t n32 = (uint32_t)nf;
    memcpy(e + 17, &n32, 4);
    char *p = e + 21;
    for (int i = 0; i < 2 * nf; i++) {
        uint32_t l = (uint32_t)fv[i].len;
        memcpy(p, &l, 4);
        if (l) memcpy(p + 4, fv[i].p, l);
        p += 4 + l;
    }
    b->data.len += need;
    b->live++;
    b->last = id;
    s->length++;
    s->entries_added++;
    s->last_id = id;
    if (s->length == 1) s->first_id = id;
    return 0;
}

/* First block whose last ID >= id (nblocks if none). */
static size_t block_lower(const sv_stream *s, const sv_sid *id)
{
    size_t lo = 0, hi = s->nblocks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sv_sid_cmp(&blk(s, mid)->last, id) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* First entry of b with ID >= id (b->n if none). */
static uint32_t entry_lower(const sv_sblock *b, const sv_sid *id)
{
    uint32_t lo = 0, hi = b->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        sv_sid m = ent_id(b->data.data + b->off[mid]);
        if (sv_sid_cmp(&m, id) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void siter_start(siter *it, const sv_stream *s, const sv_sid *start, const sv_sid *end, int rev)
{
    static const sv_sid zero = {0, 0}, max = {UINT64_MAX, UINT64_MAX};
    it->s = s;
    it->start = start ? *start : zero;
    it->end = end ? *end : max;
    it->rev = rev;
    it->done = sv_sid_cmp(&it->start, &it->end) > 0 || s->nblocks == 0;
    if (it->done) return;
    if (!rev) {
        it->b = block_lower(s, &it->start);
        if (it->b == s->nblocks) {
            it->done = 1;
            return;
        }
        it->e = entry_lower(blk(s, it->b), &it->start);
    } else {
        /* the last entry <= end: in the first block whose last >= end, or the one before */
        size_t b = block_lower(s, &it->end);
        if (b == s->nblocks) b--;
        const sv_sblock *bb = blk(s, b);
        uint32_t e = entry_lower(bb, &it->end);
        if (e < bb->n) {
            sv_sid x = ent_id(bb->data.data + bb->off[e]);
            if (sv_sid_cmp(&x, &it->end) == 0) e++;
        }
        /* e is one past the last candidate */
        while (e == 0) {
            if (b == 0) {
                it->done = 1;
                return;
            }
            b--;
            e = blk(s, b)->n;
        }
        it->b = b;
        it->e = e - 1;
    }
}

const char *siter_next(siter *it)
{
    while (!it->done) {
        const sv_sblock *b = blk(it->s, it->b);
        const char *e = b->data.data + b->off[it->e];
        sv_sid id = ent_id(e);
        if (!it->rev) {
            if (sv_sid_cmp(&id, &it->end) > 0) {
                it->done = 1;
                return NULL;
            }
            if (++it->e == b->n) {
                it->e = 0;
                if (++it->b == it->s->nblocks) it->done = 1;
            }
        } else {
            if (sv_sid_cmp(&id, &it->start) < 0) {
                it->done = 1;
                return NULL;
            }
            if (it->e == 0) {
                if (it->b == 0) it->done = 1;
                else {
                    it->b--;
                    it->e = blk(it->s, it->b)->n - 1;
                }
            } else {
                it->e--;
            }
        }
        if (!(e[16] & ENT_DELETED)) return e;
    }
    return NULL;
}

/* The live entry with this ID, or NULL; *bi and *ei tell where. */
const char *stream_find(const sv_stream *s, const sv_sid *id, size_t *bi, uint32_t *ei)
{
    size_t b = block_lower(s, id);
    if (b == s->nblocks) return NULL;
    const sv_sblock *bb = blk(s, b);
    uint32_t e = entry_lower(bb, id);
    if (e == bb->n) return NULL;
    const char *p = bb->data.data + bb->off[e];
    sv_sid x = ent_id(p);
    if (sv_sid_cmp(&x, id) != 0 || (p[16] & ENT_DELETED)) return NULL;
    if (bi) *bi = b;
    if (ei) *ei = e;
    return p;
}

/* The first live ID (first) or the last live one; the max ID resp. 0-0 when none
 * (Redis's streamGetEdgeID with skip_tombstones). With tombs, the first/last entry
 * even when it is deleted. */
sv_sid stream_edge(const sv_stream *s, int first, int tombs)
{
    sv_sid none = first ? (sv_sid){UINT64_MAX, UINT64_MAX} : (sv_sid){0, 0};
    if (!s->nblocks) return none;
    if (tombs) {
        const sv_sblock *b = blk(s, first ? 0 : s->nblocks - 1);
        return first ? block_first(b) : b->last;
    }
    siter it;
    siter_start(&it, s, NULL, NULL, !first);
    const char *e = siter_next(&it);
    return e ? ent_id(e) : none;
}

int stream_delete(sv_stream *s, const sv_sid *id)
{
    size_t b;
    uint32_t e;
    const char *p = stream_find(s, id, &b, &e);
    if (!p) return 0;
    sv_sblock *bb = blk(s, b);
    bb->data.data[bb->off[e] + 16] |= ENT_DELETED;
    s->length--;
    if (--bb->live == 0) blocks_remove(s, b);
    return 1;
}

/* Marks an entry deleted without the block-removal rule (the rewrite's tombstones). */
int stream_tombstone(sv_stream *s, const sv_sid *id)
{
    size_t b;
    uint32_t e;
    if (!stream_find(s, id, &b, &e)) return 0;
    sv_sblock *bb = blk(s, b);
    bb->data.data[bb->off[e] + 16] |= ENT_DELETED;
    bb->live--;
    s->length--;
    return 1;
}

void stream_fix_first(sv_stream *s)
{
    if (s->length == 0) s->first_id = (sv_sid){0, 0};
    else s->first_id = stream_edge(s, 1, 0);
}

/* Redis 7.0's streamTrim: whole blocks from the head while they fit the rule, then
 * (exact only) entries of the next block. Returns the entries removed. */
int64_t stream_trim(sv_stream *s, const trim_args *t)
{
    if (t->strategy == TRIM_NONE) return 0;
    int64_t deleted = 0;
    while (s->nblocks) {
        if (t->strategy == TRIM_MAXLEN && s->length <= (uint64_t)t->maxlen) break;
        sv_sblock *b = blk(s, 0);
        int64_t entries = b->live;
        if (t->limit && deleted + entries > t->limit) break;
        int remove;
        if (t->strategy == TRIM_MAXLEN) remove = s->length - (uint64_t)entries >= (uint64_t)t->maxlen;
        else remove = sv_sid_cmp(&b->last, &t->minid) < 0;
        if (remove) {
            s->length -= (uint64_t)entries;
            deleted += entries;
            blocks_remove(s, 0);
            continue;
        }
        if (t->approx) break;
        for (uint32_t i = 0; i < b->n; i++) {
            char *e = b->data.data + b->off[i];
            if (t->strategy == TRIM_MAXLEN) {
                if (s->length <= (uint64_t)t->maxlen) break;
            } else {
                sv_sid id = ent_id(e);
                if (sv_sid_cmp(&id, &t->minid) >= 0) break;
            }
            if (!(e[16] & ENT_DELETED)) {
                e[16] |= ENT_DELETED;
                b->live--;
                s->length--;
                deleted++;
            }
        }
        break;
    }
    if (s->length == 0) s->first_id = (sv_sid){0, 0};
    else if (deleted) s->first_id = stream_edge(s, 1, 0);
    return deleted;
}

/* ---- pending entries lists ---- */

/* Index of the first nack with ID >= id. */
size_t pel_lower(const sv_pel *p, const sv_sid *id)
{
    size_t lo = 0, hi = p->len;
    if (hi && sv_sid_cmp(&p->a[p->head + hi - 1]->id, id) < 0) return hi; /* appends */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sv_sid_cmp(&p->a[p->head + mid]->id, id) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

sv_nack *pel_find(const sv_pel *p, const sv_sid *id, size_t *at)
{
    size_t i = pel_lower(p, id);
    if (i < p->len && sv_sid_cmp(&p->a[p->head + i]->id, id) == 0) {
        if (at) *at = i;
        return p->a[p->head + i];
    }
    return NULL;
}

void pel_insert(sv_pel *p, sv_nack *n)
{
    size_t i = pel_lower(p, &n->id);
    if (p->head + p->len == p->cap) {
        if (p->head > p->len / 2 && p->head) {
            memmove(p->a, p->a + p->head, p->len * sizeof(*p->a));
            p->head = 0;
        } else {
            p->cap = p->cap ? p->cap * 2 : 8;
            p->a = sv_realloc(p->a, p->cap * sizeof(*p->a));
        }
    }
    sv_nack **base = p->a + p->head;
    if (i < p->len) memmove(base + i + 1, base + i, (p->len - i) * sizeof(*base));
    base[i] = n;
    p->len++;
}

void pel_remove_at(sv_pel *p, size_t i)
{
    if (i == 0) {
        p->head++;
    } else {
        sv_nack **base = p->a + p->head;
        memmove(base + i, base + i + 1, (p->len - i - 1) * sizeof(*base));
    }
    if (--p->len == 0) p->head = 0;
}

void pel_remove(sv_pel *p, const sv_sid *id)
{
    size_t at;
    if (pel_find(p, id, &at)) pel_remove_at(p, at);
}

/* ---- groups and consumers ---- */

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    if (r) return r;
    return al < bl ? -1 : al > bl;
}

/* Binary search in an array of objects whose first two fields are name and nlen. */
#define NAMED_LOWER(arr, n, key, klen, out)                                      \
    do {                                                                         \
        size_t lo_ = 0, hi_ = (n);                                               \
        while (lo_ < hi_) {                                                      \
            size_t mid_ = (lo_ + hi_) / 2;                                       \
            if (name_cmp((arr)[mid_]->name, (arr)[mid_]->nlen, key, klen) < 0)   \
                lo_ = mid_ + 1;                                                  \
            else                                                                 \
                hi_ = mid_;                                                      \
        }                                                                        \
        (out) = lo_;                                                             \
    } while (0)

sv_cgroup *group_find(const sv_stream *s, sv_str name, size_t *at)
{
    size_t i;
    NAMED_LOWER(s->groups, s->ngroups, name.p, name.len, i);
    if (at) *at = i;
    if (i < s->ngroups && name_cmp(s->groups[i]->name, s->groups[i]->nlen, name.p, name.len) == 0) return s->groups[i];
    return NULL;
}

sv_cgroup *group_create(sv_stream *s, sv_str name, sv_sid last, int64_t entries_read)
{
    size_t at;
    if (group_find(s, name, &at)) return NULL;
    sv_cgroup *g = sv_calloc(1, sizeof(*g));
    g->name = sv_memdup(name.p, name.len);
    g->nlen = name.len;
    g->last_id = last;
    g->entries_read = entries_read;
    if (s->ngroups == s->capgroups) {
        s->capgroups = s->capgroups ? s->capgroups * 2 : 4;
        s->groups = sv_realloc(s->groups, s->capgroups * sizeof(*s->groups));
    }
    memmove(s->groups + at + 1, s->groups + at, (s->ngroups - at) * sizeof(*s->groups));
    s->groups[at] = g;
    s->ngroups++;
    return g;
}

void group_destroy(sv_stream *s, size_t at)
{
    cgroup_free(s->groups[at]);
    memmove(s->groups + at, s->groups + at + 1, (s->ngroups - at - 1) * sizeof(*s->groups));
    s->ngroups--;
}

sv_consumer *consumer_find(const sv_cgroup *g, sv_str name, size_t *at)
{
    size_t i;
    NAMED_LOWER(g->cons, g->ncons, name.p, name.len, i);
    if (at) *at = i;
    if (i < g->ncons && name_cmp(g->cons[i]->name, g->cons[i]->nlen, name.p, name.len) == 0) return g->cons[i];
    return NULL;
}

sv_consumer *consumer_create(sv_cgroup *g, sv_str name, int64_t now)
{
    size_t at;
    if (consumer_find(g, name, &at)) return NULL;
    sv_consumer *c = sv_calloc(1, sizeof(*c));
    c->name = sv_memdup(name.p, name.len);
    c->nlen = name.len;
    c->seen_time = now;
    if (g->ncons == g->capcons) {
        g->capcons = g->capcons ? g->capcons * 2 : 4;
        g->cons = sv_realloc(g->cons, g->capcons * sizeof(*g->cons));
    }
    memmove(g->cons + at + 1, g->cons + at, (g->ncons - at) * sizeof(*g->cons));
    g->cons[at] = c;
    g->ncons++;
    return c;
}

/* Deletes the consumer and its pending entries from the group's PEL. */
void consumer_delete(sv_cgroup *g, size_t at)
{
    sv_consumer *c = g->cons[at];
    for (size_t i = 0; i < c->pel.len; i++) {
        sv_nack *n = c->pel.a[c->pel.head + i];
        pel_remove(&g->pel, &n->id);
        free(n);
    }
    consumer_free(c);
    memmove(g->cons + at, g->cons + at + 1, (g->ncons - at - 1) * sizeof(*g->cons));
    g->ncons--;
}

/* ---- copy ---- */

static void pel_copy_into(sv_pel *dst, const sv_pel *src)
{
    dst->len = dst->cap = src->len;
    dst->head = 0;
    dst->a = src->len ? sv_malloc(src->len * sizeof(*dst->a)) : NULL;
}

sv_stream *sv_stream_dup(const sv_stream *s)
{
    sv_stream *d = sv_stream_new();
    d->length = s->length;
    d->last_id = s->last_id;
    d->first_id = s->first_id;
    d->max_deleted = s->max_deleted;
    d->entries_added = s->entries_added;
    d->capblocks = d->nblocks = s->nblocks;
    d->blocks = s->nblocks ? sv_malloc(s->nblocks * sizeof(*d->blocks)) : NULL;
    for (size_t i = 0; i < s->nblocks; i++) {
        const sv_sblock *b = blk(s, i);
        sv_sblock *c = sv_malloc(sizeof(*c));
        *c = *b;
        c->data.data = sv_memdup(b->data.data, b->data.len);
        c->data.cap = b->data.len;
        d->blocks[i] = c;
    }
    d->ngroups = d->capgroups = s->ngroups;
    d->groups = s->ngroups ? sv_malloc(s->ngroups * sizeof(*d->groups)) : NULL;
    for (size_t gi = 0; gi < s->ngroups; gi++) {
        const sv_cgroup *g = s->groups[gi];
        sv_cgroup *h = sv_calloc(1, sizeof(*h));
        h->name = sv_memdup(g->name, g->nlen);
        h->nlen = g->nlen;
        h->last_id = g->last_id;
        h->entries_read = g->entries_read;
        h->ncons = h->capcons = g->ncons;
        h->cons = g->ncons ? sv_malloc(g->ncons * sizeof(*h->cons)) : NULL;
        for (size_t ci = 0; ci < g->ncons; ci++) {
            sv_consumer *c = sv_calloc(1, sizeof(*c));
            c->name = sv_memdup(g->cons[ci]->name, g->cons[ci]->nlen);
            c->nlen = g->cons[ci]->nlen;
            c->seen_time = g->cons[ci]->seen_time;
            pel_copy_into(&c->pel, &g->cons[ci]->pel);
            c->pel.len = 0; /* refilled below, in ID order */
            h->cons[ci] = c;
        }
        pel_copy_into(&h->pel, &g->pel);
        for (size_t i = 0; i < g->pel.len; i++) {
            const sv_nack *n = g->pel.a[g->pel.head + i];
            sv_nack *m = sv_malloc(sizeof(*m));
            *m = *n;
            size_t ci;
            m->consumer = consumer_find(h, (sv_str){n->consumer->name, n->consumer->nlen}, &ci);
            m->consumer->pel.a[m->consumer->pel.len++] = m;
            h->pel.a[i] = m;
        }
        d->groups[gi] = h;
    }
    return d;
}
