/* zskiplist: the ordered index of a sorted set — a skiplist over (score, member)
 * with spans (as Redis's zskiplist), so insert, delete, rank and the element at a
 * rank are O(log n). A node points to the member's dict entry (key = member, u.d =
 * score): the member's bytes are stored once, in the dict. The caller keeps the
 * entry's score unchanged while the entry is in the list, except through
 * sv_zsl_update_score. */
#ifndef SV_ZSKIPLIST_H
#define SV_ZSKIPLIST_H

#include <stddef.h>

#include "dict.h"

#define SV_ZSL_MAXLEVEL 32

typedef struct sv_zsl_node {
    sv_entry *e;
    double score; /* a copy of e->u.d: the search compares scores without touching e */
    struct sv_zsl_node *backward;
    struct sv_zsl_level {
        struct sv_zsl_node *forward;
        /* forward's score: a search step decides from the link alone and loads the
         * next node only to move onto it (in a large set each node is a cache miss) */
        double fscore;
        size_t span; /* elements skipped by this link (rank distance) */
    } level[];
} sv_zsl_node;

typedef struct sv_zsl {
    sv_zsl_node *header, *tail;
    size_t length;
    int level;
} sv_zsl;

void sv_zsl_init(sv_zsl *l);
void sv_zsl_free(sv_zsl *l); /* the nodes, not the entries */
/* (score, member) order; memcmp on members for equal scores. */
int sv_zsl_cmp(double s1, const char *m1, size_t l1, double s2, const char *m2, size_t l2);
sv_zsl_node *sv_zsl_insert(sv_zsl *l, sv_entry *e);
/* Moves e's node to its place for a new score (e->u.d still the old one; the caller
 * sets it after): in place when its rank does not change (as Redis's
 * zslUpdateScore), else unlinked and linked again, the node reused; one descent
 * finds both places. 1 if e was in the list, 0 (nothing changed) if not. */
int sv_zsl_update_score(sv_zsl *l, sv_entry *e, double score);
/* Removes the node of e (found by e's score and member); 1 if it was there. */
int sv_zsl_delete(sv_zsl *l, sv_entry *e);
/* 1-based rank of e, 0 when absent. */
size_t sv_zsl_rank(const sv_zsl *l, const sv_entry *e);
/* The node at a 1-based rank, NULL out of range. */
sv_zsl_node *sv_zsl_at(const sv_zsl *l, size_t rank);
static inline sv_zsl_node *sv_zsl_first(const sv_zsl *l) { return l->header->level[0].forward; }
/* Rank (0-based) of the first node for which below(node) is false, given that
 * below is true for a prefix of the list (binary search along the levels). */
size_t sv_zsl_count_below(const sv_zsl *l, int (*below)(const sv_zsl_node *, const void *), const void *arg);

#endif
