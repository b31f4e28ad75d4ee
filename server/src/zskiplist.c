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

/* Whether node x sorts before entry e (score s). */
static int node_before(const sv_zsl_node *x, double s, const sv_entry *e)
{
    if (x->score != s) return x->score < s;
    return sv_zsl_cmp(x->score, x->e->key, x->e->klen, s, e->key, e->klen) < 0;
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

sv_zsl_node *sv_zsl_insert(sv_zsl *l, sv_entry *e)
{
    sv_zsl_node *update[SV_ZSL_MAXLEVEL], *x = l->header;
    size_t rank[SV_ZSL_MAXLEVEL];
    for (int i = l->level - 1; i >= 0; i--) {
        rank[i] = i == l->level - 1 ? 0 : rank[i + 1];
        while (x->level[i].forward && node_before(x->level[i].forward, e->u.d, e)) {
            rank[i] += x->level[i].span;
            x = x->level[i].forward;
        }
        update[i] = x;
    }
    int level = random_level();
    if (level > l->level) {
        for (int i = l->level; i < level; i++) {
            rank[i] = 0;
            update[i] = l->header;
            update[i]->level[i].span = l->length;
        }
        l->level = level;
    }
    x = node_new(level, e);
    for (int i = 0; i < level; i++) {
        x->level[i].forward = update[i]->level[i].forward;
        update[i]->level[i].forward = x;
        x->level[i].span = update[i]->level[i].span - (rank[0] - rank[i]);
        update[i]->level[i].span = (rank[0] - rank[i]) + 1;
    }
    for (int i = level; i < l->level; i++) update[i]->level[i].span++;
    x->backward = update[0] == l->header ? NULL : update[0];
    if (x->level[0].forward) x->level[0].forward->backward = x;
    else l->tail = x;
    l->length++;
    return x;
}

int sv_zsl_delete(sv_zsl *l, sv_entry *e)
{
    sv_zsl_node *update[SV_ZSL_MAXLEVEL], *x = l->header;
    for (int i = l->level - 1; i >= 0; i--) {
        while (x->level[i].forward && node_before(x->level[i].forward, e->u.d, e)) x = x->level[i].forward;
        update[i] = x;
    }
    x = x->level[0].forward;
    if (!x || x->e != e) return 0;
    for (int i = 0; i < l->level; i++) {
        if (update[i]->level[i].forward == x) {
            update[i]->level[i].span += x->level[i].span - 1;
            update[i]->level[i].forward = x->level[i].forward;
        } else {
            update[i]->level[i].span--;
        }
    }
    if (x->level[0].forward) x->level[0].forward->backward = x->backward;
    else l->tail = x->backward;
    while (l->level > 1 && !l->header->level[l->level - 1].forward) l->level--;
    l->length--;
    free(x);
    return 1;
}

size_t sv_zsl_rank(const sv_zsl *l, const sv_entry *e)
{
    size_t rank = 0;
    sv_zsl_node *x = l->header;
    for (int i = l->level - 1; i >= 0; i--) {
        /* forward while the next node is <= e */
        while (x->level[i].forward && (x->level[i].forward->e == e || node_before(x->level[i].forward, e->u.d, e))) {
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
