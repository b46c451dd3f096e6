/* pool/watch.c: watched pools: the time spent inside alloc and free calls
 * (desc.timing) and, in FM_HOOKS builds, the profiler events of every pool
 * (framemem/hooks.h), around the policies' own alloc and free.
 *
 * A watched pool keeps hot's current chunk and magazine id empty, as pools
 * under Valgrind do, so every call, inline ones included, reaches the
 * library; and its hot.sync carries FM__SYNC_WATCHED, so the library's one
 * test for a policy's path (hot.sync != NONE) leads here. Other pools pay
 * nothing: the inline paths and NONE's library path are unchanged, the other
 * policies' library paths test one bit more.
 *
 * Timing reads the clock (fm_clock_now, rdtsc: tens of cycles) before and
 * after a timed call. EVERY_CALL times each; SAMPLED one call in
 * FM_POOL_TIMING_SAMPLE (N) of the calling thread's calls of sampled pools,
 * counting that time N times. The gap to the next timed call is drawn at
 * random in [1, 2N - 1] (mean N), so a thread that alternates between two
 * pools does not time one of them only, and nothing shared is written
 * between samples. A growth inside an alloc counts as long as it took
 * (fm__grow adds its ticks to fm__watch_grown, of the thread), sampled or
 * not: only the rest of a sampled call is scaled, so a rare slow growth is
 * neither missed nor counted N times. Batches (alloc_n, free_n) are always
 * timed: one clock pair for the whole batch. The sums are atomic adds under
 * the shared policies, plain ones under NONE (its owner thread only).
 *
 * Hooks: an alloc event follows the take; a free event goes out once the
 * item is found live and before the policy frees it, so no thread can be
 * handed the slot before the event is sent (MUTEX holds the lock from the
 * lookup to the free; NONE has one thread; under THREAD_CACHE and LOCKFREE
 * the slot stays live, out of every cache, until the free). A batch free
 * announces and frees item by item, so a batch naming an item twice
 * announces it once.
 */
#ifndef FM__POOL_UNIT
#error "pool/watch.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* ================================================================ timing */

/* This thread's calls of sampled pools left before the next timed one, and
 * its random state for the gaps. */
static FM__THREAD_LOCAL uint32_t fm__watch_gap_tls;
static FM__THREAD_LOCAL uint32_t fm__watch_seed_tls;
#define fm__watch_gap FM__TLS(fm__watch_gap_tls)
#define fm__watch_seed FM__TLS(fm__watch_seed_tls)

/* true when this call is to be timed. */
static inline bool fm__watch_timed(const fm_pool *p) {
    if (p->watch_scale <= 1) return p->watch_scale == 1;
    uint32_t gap = fm__watch_gap;
    if (FM__LIKELY(gap > 1)) {
        fm__watch_gap = gap - 1;
        return false;
    }
    uint32_t x = fm__watch_seed;
    if (!x) x = (uint32_t)(uintptr_t)&fm__watch_seed | 1u; /* per thread, never 0 */
    x ^= x << 13; /* xorshift32 */
    x ^= x >> 17;
    x ^= x << 5;
    fm__watch_seed = x;
    /* 1 + floor(x * (2N - 1) / 2^32): uniform enough, no division */
    fm__watch_gap = 1u + (uint32_t)(((uint64_t)x * (2u * FM_POOL_TIMING_SAMPLE - 1u)) >> 32);
    return true;
}

/* Adds ticks to sum, and one to timed_calls when the call was timed. */
static void fm__watch_add(fm_pool *p, uint64_t *sum, uint64_t ticks, bool timed) {
    if (p->sync == FM_SYNC_NONE) {
        *sum += ticks;
        p->timed_calls += timed;
    } else {
        FM__ATOMIC_FETCH_ADD(sum, ticks, RELAXED);
        if (timed) FM__ATOMIC_FETCH_ADD(&p->timed_calls, 1, RELAXED);
    }
}

/* ================================================================= hooks */

/* FM_HOOKS: the free event of item when it is a live item of p (nothing for
 * a free the policy will refuse). The caller frees it next, holding what
 * keeps the slot from being handed out meanwhile (see the top). */
static void fm__hook_free_live(const fm_pool *p, const void *item) {
    if (!FM__HOOKS || !item) return;
    fm__loc loc;
    fm_error err = fm__cached_policy(p) ? fm__locate_fast(p, item, &loc) : fm__locate(p, item, &loc);
    if (err == FM_OK) fm__hook_free(p->name, item);
}

/* ======================================================== alloc and free */

/* FM_HOOKS, MUTEX: the lock is held from before the policy's call (which
 * takes it again: it is recursive) until its events are sent, so no other
 * thread's call on the pool comes between the two. */
static inline bool fm__watch_hold(fm_pool *p) {
    if (!FM__HOOKS || p->sync != FM_SYNC_MUTEX) return false;
    fm__mutex_lock(&p->lock);
    return true;
}

FM__NOINLINE static void *fm__watch_alloc(fm_pool *p) {
    if (p->sync == FM_SYNC_NONE && !fm__owner_ok(p, "alloc")) return NULL;
    bool timed = fm__watch_timed(p);
    bool held = fm__watch_hold(p);
    uint64_t grown = fm__watch_grown;
    uint64_t t0 = timed ? fm_clock_now() : 0;
    void *item = p->sync == FM_SYNC_NONE ? fm__alloc_core(p) : fm__policy_alloc(p);
    /* A growth inside the call counts as it took, timed or not; the rest
     * of a timed call counts scale times. */
    uint64_t grew = fm__watch_grown - grown;
    if (timed) {
        uint64_t dt = fm_clock_now() - t0;
        fm__watch_add(p, &p->alloc_ticks, grew + (dt > grew ? dt - grew : 0) * p->watch_scale,
                      true);
    } else if (grew && p->watch_scale) {
        fm__watch_add(p, &p->alloc_ticks, grew, false);
    }
    if (item) fm__hook_alloc(p->name, item, p->item_size);
    if (held) fm__mutex_unlock(&p->lock);
    return item;
}

/* One free as the policy does it, announced first in FM_HOOKS builds. */
static void fm__watch_free_one(fm_pool *p, void *item) {
    bool held = fm__watch_hold(p);
    fm__hook_free_live(p, item);
    if (p->sync != FM_SYNC_NONE) fm__sync_free(p, item, "free");
    else if (!fm__free_current(p, p->cs, item)) fm__free_checked(p, item, "free");
    if (held) fm__mutex_unlock(&p->lock);
}

FM__NOINLINE static void fm__watch_free(fm_pool *p, void *item) {
    if (p->sync == FM_SYNC_NONE && !fm__owner_ok(p, "free")) return;
    if (!item) return;
    bool timed = fm__watch_timed(p);
    uint64_t t0 = timed ? fm_clock_now() : 0;
    fm__watch_free_one(p, item);
    if (timed) fm__watch_add(p, &p->free_ticks, (fm_clock_now() - t0) * p->watch_scale, true);
}

/* ================================================================ batches */

static size_t fm__watch_alloc_n(fm_pool *p, void **out, size_t n) {
    if (p->sync == FM_SYNC_NONE && !fm__owner_ok(p, "alloc")) return 0;
    bool timed = p->watch_scale != 0;
    bool held = fm__watch_hold(p);
    uint64_t t0 = timed ? fm_clock_now() : 0;
    size_t got = fm__cached_policy(p) ? fm__alloc_n_cached(p, out, n) : fm__alloc_n_serial(p, out, n);
    if (timed && n) fm__watch_add(p, &p->alloc_ticks, fm_clock_now() - t0, true);
    for (size_t i = 0; FM__HOOKS && i < got; i++) fm__hook_alloc(p->name, out[i], p->item_size);
    if (held) fm__mutex_unlock(&p->lock);
    return got;
}

static void fm__watch_free_n(fm_pool *p, void *const *items, size_t n) {
    if (p->sync == FM_SYNC_NONE && !fm__owner_ok(p, "free")) return;
    bool timed = p->watch_scale != 0;
    uint64_t t0 = timed ? fm_clock_now() : 0;
    if (FM__HOOKS) {
        for (size_t i = 0; i < n; i++) fm__watch_free_one(p, items[i]);
    } else {
        if (fm__cached_policy(p)) fm__free_n_cached(p, items, n);
        else fm__free_n_serial(p, items, n);
    }
    if (timed && n) fm__watch_add(p, &p->free_ticks, fm_clock_now() - t0, true);
}
