/* cq: the completion queue of slotlane_uv.h. A mutex-guarded ring of completions, pushed by
 * the loop thread (cq.h), taken by any thread; an eventfd that is written only when the
 * ring goes from empty to non-empty and read (cleared) only by the drain that empties it,
 * so an event loop watching it wakes once per burst; a condition variable for sl_cq_wait.
 * It needs no libuv: it lives with the libuv driver because only that part feeds it. */
#include "cq.h"

#include "alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/eventfd.h>

struct sl_cq {
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* sl_cq_wait's sleepers (CLOCK_MONOTONIC) */
    sl_completion *ring;
    size_t cap, head, len;
    int fd;                      /* eventfd */
    int signalled;               /* the eventfd holds a count */
    int sleepers;
    uint64_t signals;            /* eventfd writes (tests: one per empty -> non-empty) */
};

int sl_cq_new(sl_cq **out)
{
    if (!out) return SL_EINVAL;
    *out = NULL;
    sl_cq *q = sl__malloc(&sl__default_alloc, sizeof *q);
    if (!q) return SL_ENOMEM;
    memset(q, 0, sizeof *q);
    q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->fd < 0) {
        sl__free(&sl__default_alloc, q);
        return SL_EIO;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&q->mu, NULL);
    *out = q;
    return 0;
}

void sl_cq_free(sl_cq *q)
{
    if (!q) return;
    close(q->fd);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    sl__free(&sl__default_alloc, q->ring);
    sl__free(&sl__default_alloc, q);
}

int sl_cq_fd(const sl_cq *q)
{
    return q ? q->fd : SL_EINVAL;
}

/* Room for one more, growing the ring (unwrapped into the new storage) when full. */
static int reserve(sl_cq *q)
{
    if (q->len < q->cap) return 0;
    size_t cap = q->cap ? q->cap * 2 : 64;
    sl_completion *ring = sl__malloc(&sl__default_alloc, cap * sizeof *ring);
    if (!ring) return SL_ENOMEM;
    for (size_t i = 0; i < q->len; i++) ring[i] = q->ring[(q->head + i) % q->cap];
    sl__free(&sl__default_alloc, q->ring);
    q->ring = ring;
    q->cap = cap;
    q->head = 0;
    return 0;
}

/* Signals the descriptor (and a sleeper) when completions wait and it is not signalled yet.
 * Under the lock. */
static void signal_locked(sl_cq *q)
{
    if (q->len > 0 && !q->signalled) {
        uint64_t one = 1;
        ssize_t w = write(q->fd, &one, sizeof one); /* never full: it holds at most 1 */
        (void)w;
        q->signalled = 1;
        q->signals++;
    }
    if (q->len > 0 && q->sleepers) pthread_cond_signal(&q->cv);
}

static void push_locked(sl_cq *q, const sl_completion *c)
{
    /* An allocation failure must not lose a completion (every submit completes once):
     * retry; the ring grows at most to the number of batches in flight. */
    while (reserve(q) != 0) {
        pthread_mutex_unlock(&q->mu);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&q->mu);
    }
    q->ring[(q->head + q->len) % q->cap] = *c;
    q->len++;
}

void sl__cq_push(sl_cq *q, const sl_completion *c)
{
    pthread_mutex_lock(&q->mu);
    push_locked(q, c);
    signal_locked(q);
    pthread_mutex_unlock(&q->mu);
}

void sl__cq_push_quiet(sl_cq *q, const sl_completion *c)
{
    pthread_mutex_lock(&q->mu);
    push_locked(q, c);
    pthread_mutex_unlock(&q->mu);
}

void sl__cq_signal(sl_cq *q)
{
    pthread_mutex_lock(&q->mu);
    signal_locked(q);
    pthread_mutex_unlock(&q->mu);
}

/* Takes up to cap under the lock; clears the eventfd when the ring is left empty. */
static size_t take(sl_cq *q, sl_completion *out, size_t cap)
{
    size_t n = q->len < cap ? q->len : cap;
    for (size_t i = 0; i < n; i++) out[i] = q->ring[(q->head + i) % q->cap];
    q->len -= n;
    q->head = q->len ? (q->head + n) % q->cap : 0;
    if (q->len == 0 && q->signalled) {
        uint64_t v;
        ssize_t r = read(q->fd, &v, sizeof v);
        (void)r;
        q->signalled = 0;
    }
    return n;
}

size_t sl_cq_drain(sl_cq *q, sl_completion *out, size_t cap)
{
    if (!q || !out || cap == 0) return 0;
    pthread_mutex_lock(&q->mu);
    size_t n = take(q, out, cap);
    pthread_mutex_unlock(&q->mu);
    return n;
}

size_t sl_cq_wait(sl_cq *q, sl_completion *out, size_t cap, int timeout_ms)
{
    if (!q || !out || cap == 0) return 0;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&q->mu);
    q->sleepers++;
    while (q->len == 0 && timeout_ms != 0) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&q->cv, &q->mu);
        } else if (pthread_cond_timedwait(&q->cv, &q->mu, &until) == ETIMEDOUT) {
            break;
        }
    }
    q->sleepers--;
    size_t n = take(q, out, cap);
    pthread_mutex_unlock(&q->mu);
    return n;
}

uint64_t sl__cq_signals(sl_cq *q)
{
    pthread_mutex_lock(&q->mu);
    uint64_t n = q->signals;
    pthread_mutex_unlock(&q->mu);
    return n;
}
