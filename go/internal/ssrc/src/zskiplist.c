/* zskiplist: see zskiplist.h. The level of a new node is geometric with p = 1/4,
 * as in Redis (1.33 links per node on average). */
#include "zskiplist.h"

#include <string.h>

#include "util.h"

static sv_zsl_node *node_new(int level, sv_entry *e)
{
    sv_zsl_node *n = sv_malloc(sizeof(*n) + (size_t)level * sizeof(struct sv_zsl_level));
    n->e = e;
    n->score = e ? e->u.d : 0;
    n->backward = NULL;
    return n;
}

void sv_zsl_init(sv_zsl *l)
{
    l->level = 1;
    l->length = 0;
    l->header = node_new(SV_ZSL_MAXLEVEL, NULL);
    for (int i = 0; i < SV_ZSL_MAXLEVEL; i++) {
        l->header->level[i].forward = NULL;
        l->header->level[i].fscore = 0;
        l->header->level[i].span = 0;
    }
    l->tail = NULL;
}

void sv_zsl_free(sv_zsl *l)
{
    sv_zsl_node *n = l->header;
    while (n) {
        sv_zsl_node *next = n->level[0].forward;
        free(n);
        n = next;
    }
    l->header = l->tail = NULL;
    l->length = 0;
}

int sv_zsl_cmp(double s1, const char *m1, size_t l1, double s2, const char *m2, size_t l2)
{
    if (s1 < s2) return -1;
    if (s1 > s2) return 1;
    size_t n = l1 < l2 ? l1 : l2;
    int r = n ? memcmp(m1, m2, n) : 0;
    if (r) return r;
    return l1 < l2 ? -1 : l1 > l2;
}

/* Equal scores: the members decide (reads the node's entry: the rare, slow path). */
__attribute__((noinline)) static int member_before(const sv_zsl_node *x, const sv_entry *e)
{
    return sv_zsl_cmp(x->score, x->e->key, x->e->klen, x->score, e->key, e->klen) < 0;
}

/* Whether node x sorts before entry e (score s). Inlined into every search loop: the
 * score compare is the whole step in the common case. */
__attribute__((always_inline)) static inline int node_before(const sv_zsl_node *x, double s, const sv_entry *e)
{
    if (x->score != s) return x->score < s;
    return member_before(x, e);
}

/* The same for the node link k leads to, from the link's copy of its score: the node
 * itself is read only for equal scores. */
__attribute__((always_inline)) static inline int link_before(const struct sv_zsl_level *k, double s, const sv_entry *e)
{
    if (k->fscore != s) return k->fscore < s;
    return member_before(k->forward, e);
}

/* Whether link k leads to a node other than e's that sorts before e (score s). */
__attribute__((always_inline)) static inline int link_before_other(const struct sv_zsl_level *k, double s,
                                                                  const sv_entry *e)
{
    if (k->fscore != s) return k->fscore < s;
    return k->forward->e != e && member_before(k->forward, e);
}

/* Points link k at node x. */
static inline void set_link(struct sv_zsl_level *k, sv_zsl_node *x)
{
    k->forward = x;
    if (x) k->fscore = x->score;
}

static int random_level(void)
{
    int level = 1;
    uint64_t r = sv_rand64();
    /* two random bits per level: a quarter of the nodes go one level up */
    while ((r & 3) == 0 && level < SV_ZSL_MAXLEVEL) {
        level++;
        r >>= 2;
    }
    return level;
}

/* Links node x (of `level` levels) in after update[i] at each level, the ranks of
 * update[] in rank[] (as the search leaves them). */
static void link_node(sv_zsl *l, sv_zsl_node *x, int level, sv_zsl_node **update, size_t *rank)
{
    if (level > l->level) {
        for (int i = l->level; i < level; i++) {
            rank[i] = 0;
            update[i] = l->header;
            update[i]->level[i].span = l->length;
        }
        l->level = level;
    }
    for (int i = 0; i < level; i++) {
        x->level[i] = update[i]->level[i]; /* (the span is set below) */
        set_link(&update[i]->level[i], x);
        x->level[i].span = update[i]->level[i].span - (rank[0] - rank[i]);
        update[i]->level[i].span = (rank[0] - rank[i]) + 1;
    }
    for (int i = level; i < l->level; i++) update[i]->level[i].span++;
    x->backward = update[0] == l->header ? NULL : update[0];
    if (x->level[0].forward) x->level[0].forward->backward = x;
    else l->tail = x;
    l->length++;
}

/* Unlinks x, update[i] being its predecessor at each level (or the node whose link
 * at level i passes over it). */
static void unlink_node(sv_zsl *l, sv_zsl_node *x, sv_zsl_node **update)
{
    for (int i = 0; i < l->level; i++) {
        if (update[i]->level[i].forward == x) {
            update[i]->level[i].span += x->level[i].span - 1;
            update[i]->level[i].forward = x->level[i].forward;
            update[i]->level[i].fscore = x->level[i].fscore;
        } else {
            update[i]->level[i].span--;
        }
    }
    if (x->level[0].forward) x->level[0].forward->backward = x->backward;
    else l->tail = x->backward;
    while (l->level > 1 && !l->header->level[l->level - 1].forward) l->level--;
    l->length--;
}

/* While the search looks at the next node on this level, the node it would look at
 * one level down is already known: fetching it at the same time turns two
 * dependent cache misses into overlapping ones (the list of a 1 M-member set is
 * far larger than the caches). */
static inline void prefetch_down(const sv_zsl_node *x, int i)
{
    if (i > 0) __builtin_prefetch(x->level[i - 1].forward);
}

sv_zsl_node *sv_zsl_insert(sv_zsl *l, sv_entry *e)
{
    sv_zsl_node *update[SV_ZSL_MAXLEVEL], *x = l->header;
    size_t rank[SV_ZSL_MAXLEVEL];
    for (int i = l->level - 1; i >= 0; i--) {
        rank[i] = i == l->level - 1 ? 0 : rank[i + 1];
        for (sv_zsl_node *f; prefetch_down(x, i), (f = x->level[i].forward) && link_before(&x->level[i], e->u.d, e);) {
            rank[i] += x->level[i].span;
            x = f;
        }
        update[i] = x;
    }
    int level = random_level();
    x = node_new(level, e);
    link_node(l, x, level, update, rank);
    return x;
}

int sv_zsl_update_score(sv_zsl *l, sv_entry *e, double score)
{
    /* One descent with two cursors: a to e's node (its old place, ranks ra), b to
     * the place of (score, e's member) (ranks rb) — two independent chains of
     * loads the CPU overlaps, where a delete and an insert would be two searches
     * one after the other. */
    sv_zsl_node *ua[SV_ZSL_MAXLEVEL], *ub[SV_ZSL_MAXLEVEL], *a = l->header, *b = l->header;
    size_t ra[SV_ZSL_MAXLEVEL], rb[SV_ZSL_MAXLEVEL];
    double old = e->u.d;
    for (int i = l->level - 1; i >= 0; i--) {
        ra[i] = i == l->level - 1 ? 0 : ra[i + 1];
        rb[i] = i == l->level - 1 ? 0 : rb[i + 1];
        int ga = 1, gb = 1;
        while (ga | gb) {
            if (ga) {
                sv_zsl_node *f = a->level[i].forward;
                prefetch_down(a, i);
                if (f && link_before_other(&a->level[i], old, e)) {
                    ra[i] += a->level[i].span;
                    a = f;
                } else {
                    ga = 0;
                }
            }
            if (gb) {
                sv_zsl_node *f = b->level[i].forward;
                prefetch_down(b, i);
                if (f && link_before(&b->level[i], score, e)) {
                    rb[i] += b->level[i].span;
                    b = f;
                } else {
                    gb = 0;
                }
            }
        }
        ua[i] = a;
        ub[i] = b;
    }
    sv_zsl_node *x = a->level[0].forward;
    if (!x || x->e != e) return 0;
    /* the same rank (as Redis's zslUpdateScore): the neighbours still enclose it */
    sv_zsl_node *next = x->level[0].forward;
    if ((a == l->header || node_before(a, score, e)) && (!next || !node_before(next, score, e))) {
        x->score = score;
        for (int i = 0; i < l->level && ua[i]->level[i].forward == x; i++) ua[i]->level[i].fscore = score;
        return 1;
    }
    int level = 0;
    while (level < l->level && ua[level]->level[level].forward == x) level++;
    size_t xrank = ra[0] + 1;
    int levels = l->level; /* of the paths, before the unlink may lower it */
    unlink_node(l, x, ua);
    /* b's path was taken with x in the list: where it ends on x, x's predecessor
     * takes its place, and the ranks of the nodes after x drop by one */
    for (int i = 0; i < levels; i++) {
        if (ub[i] == x) {
            ub[i] = ua[i];
            rb[i] = ra[i];
        } else if (rb[i] > xrank) {
            rb[i]--;
        }
    }
    x->score = score;
    link_node(l, x, level, ub, rb);
    return 1;
}

int sv_zsl_delete(sv_zsl *l, sv_entry *e)
{
    sv_zsl_node *update[SV_ZSL_MAXLEVEL], *x = l->header;
    for (int i = l->level - 1; i >= 0; i--) {
        for (sv_zsl_node *f; prefetch_down(x, i), (f = x->level[i].forward) && link_before(&x->level[i], e->u.d, e);)
            x = f;
        update[i] = x;
    }
    x = x->level[0].forward;
    if (!x || x->e != e) return 0;
    unlink_node(l, x, update);
    free(x);
    return 1;
}

size_t sv_zsl_rank(const sv_zsl *l, const sv_entry *e)
{
    size_t rank = 0;
    sv_zsl_node *x = l->header;
    for (int i = l->level - 1; i >= 0; i--) {
        /* forward while the next node is <= e */
        while (x->level[i].forward &&
               (x->level[i].fscore != e->u.d ? x->level[i].fscore < e->u.d
                                             : x->level[i].forward->e == e || member_before(x->level[i].forward, e))) {
            rank += x->level[i].span;
            x = x->level[i].forward;
        }
        if (x->e == e) return rank;
    }
    return 0;
}

sv_zsl_node *sv_zsl_at(const sv_zsl *l, size_t rank)
{
    if (rank == 0 || rank > l->length) return NULL;
    size_t traversed = 0;
    sv_zsl_node *x = l->header;
    for (int i = l->level - 1; i >= 0; i--) {
        while (x->level[i].forward && traversed + x->level[i].span <= rank) {
            traversed += x->level[i].span;
            x = x->level[i].forward;
        }
        if (traversed == rank) return x;
    }
    return NULL;
}

size_t sv_zsl_count_below(const sv_zsl *l, int (*below)(const sv_zsl_node *, const void *), const void *arg)
{
    size_t rank = 0;
    sv_zsl_node *x = l->header;
    for (int i = l->level - 1; i >= 0; i--)
        while (x->level[i].forward && below(x->level[i].forward, arg)) {
            rank += x->level[i].span;
            x = x->level[i].forward;
        }
    return rank;
}
