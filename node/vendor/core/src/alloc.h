/* alloc: the client's allocator hooks and the growable vectors every module uses.
 * Vectors only grow (doubling), so a steady state allocates nothing. */
#ifndef SL_ALLOC_H
#define SL_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "slotlane.h"

typedef struct sl__alloc {
    void *(*malloc_fn)(size_t, void *);
    void *(*realloc_fn)(void *, size_t, void *);
    void (*free_fn)(void *, void *);
    void *ctx;
} sl__alloc;

/* The default allocator (malloc/realloc/free); const, so not mutable global state. */
extern const sl__alloc sl__default_alloc;

static inline void *sl__malloc(const sl__alloc *a, size_t n) { return a->malloc_fn(n, a->ctx); }
static inline void *sl__realloc(const sl__alloc *a, void *p, size_t n) { return a->realloc_fn(p, n, a->ctx); }
static inline void sl__free(const sl__alloc *a, void *p) { if (p) a->free_fn(p, a->ctx); }

/* A byte vector. */
typedef struct sl__bytes {
    uint8_t *ptr;
    size_t len, cap;
} sl__bytes;

/* Makes room for `more` bytes after len; 0 or SL_ENOMEM. */
int sl__bytes_reserve_slow(const sl__alloc *a, sl__bytes *b, size_t more);
static inline int sl__bytes_reserve(const sl__alloc *a, sl__bytes *b, size_t more)
{
    return (b->cap - b->len >= more) ? 0 : sl__bytes_reserve_slow(a, b, more);
}
static inline int sl__bytes_append(const sl__alloc *a, sl__bytes *b, const void *p, size_t n)
{
    if (sl__bytes_reserve(a, b, n)) return SL_ENOMEM;
    if (n) memcpy(b->ptr + b->len, p, n);
    b->len += n;
    return 0;
}
void sl__bytes_free(const sl__alloc *a, sl__bytes *b);

/* A vector of reply records. */
typedef struct sl__records {
    sl_reply *ptr;
    size_t len, cap;
} sl__records;

int sl__records_reserve_slow(const sl__alloc *a, sl__records *r, size_t more);
static inline int sl__records_reserve(const sl__alloc *a, sl__records *r, size_t more)
{
    return (r->cap - r->len >= more) ? 0 : sl__records_reserve_slow(a, r, more);
}
void sl__records_free(const sl__alloc *a, sl__records *r);

/* Generic vector growth for arrays of fixed-size elements: grows *ptr (of *cap elements
 * of elem bytes) to hold at least need elements. 0 or SL_ENOMEM. */
int sl__grow(const sl__alloc *a, void **ptr, size_t *cap, size_t need, size_t elem);

#endif
