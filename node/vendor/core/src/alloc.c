/* alloc: see alloc.h. */
#include "alloc.h"

#include <stdlib.h>

static void *default_malloc(size_t n, void *ctx) { (void)ctx; return malloc(n); }
static void *default_realloc(void *p, size_t n, void *ctx) { (void)ctx; return realloc(p, n); }
static void default_free(void *p, void *ctx) { (void)ctx; free(p); }

const sl__alloc sl__default_alloc = { default_malloc, default_realloc, default_free, NULL };

int sl__grow(const sl__alloc *a, void **ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) return SL_ENOMEM;
        n *= 2;
    }
    void *p = sl__realloc(a, *ptr, n * elem);
    if (!p) return SL_ENOMEM;
    *ptr = p;
    *cap = n;
    return 0;
}

int sl__bytes_reserve_slow(const sl__alloc *a, sl__bytes *b, size_t more)
{
    if (more > SIZE_MAX - b->len) return SL_ENOMEM;
    void *p = b->ptr;
    int rc = sl__grow(a, &p, &b->cap, b->len + more, 1);
    b->ptr = p;
    return rc;
}

void sl__bytes_free(const sl__alloc *a, sl__bytes *b)
{
    sl__free(a, b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

int sl__records_reserve_slow(const sl__alloc *a, sl__records *r, size_t more)
{
    void *p = r->ptr;
    int rc = sl__grow(a, &p, &r->cap, r->len + more, sizeof(sl_reply));
    r->ptr = p;
    return rc;
}

void sl__records_free(const sl__alloc *a, sl__records *r)
{
    sl__free(a, r->ptr);
    r->ptr = NULL;
    r->len = r->cap = 0;
}
