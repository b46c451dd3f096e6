/* pool/lockfree.c: FM_SYNC_LOCKFREE, one shared lock-free stack of free
 * slots.
 *
 * The head is one 64-bit word: a tag that every successful push and pop
 * bumps, and the global index (record << slot_bits | slot) of the top slot.
 * A pop reads the top slot's link and swaps the head for (tag + 1, link) in
 * one CAS; if the slot was popped and pushed again meanwhile (ABA), the tag
 * differs and the CAS fails. Links live in per-record arrays that outlive
 * their chunks, so a stale read is harmless. An empty stack is refilled from
 * the depot under the lock (which is where growth happens); trim drains the
 * stack into the depot under the lock first.
 */
#ifndef FM__POOL_UNIT
#error "pool/lockfree.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

enum { FM__LF_BATCH = 32 };

/* LOCKFREE's user counters live in the same per-thread entries as
 * THREAD_CACHE's magazines (with no slots in them): a plain store per
 * operation instead of an atomic add on a shared line. */
FM__NOINLINE static void fm__count_uncached(fm_pool *p, bool alloc) {
    fm__mutex_lock(&p->lock);
    if (alloc) p->tc_gone_allocs++;
    else p->tc_gone_frees++;
    fm__mutex_unlock(&p->lock);
}

static inline void fm__count_op(fm_pool *p, bool alloc) {
    bool uncached = false;
    fm__tc_entry *e = fm__tc_entry_of(p, &uncached);
    if (FM__LIKELY(e != NULL)) fm__count(alloc ? &e->allocs : &e->frees);
    else fm__count_uncached(p, alloc);
}

static inline uint32_t *fm__lf_link(const fm_pool *p, uint32_t g) {
    uint32_t *arr = FM__ATOMIC_LOAD(fm__links_slot(p, g >> p->hot.slot_bits), ACQUIRE);
    return &arr[g & p->hot.slot_mask];
}

static inline uint8_t *fm__lf_slot(const fm_pool *p, uint32_t g) {
    uint8_t *base = fm__base_get(p, g >> p->hot.slot_bits);
    return fm__slot(p, base, g & p->hot.slot_mask);
}

static inline uint32_t fm__lf_index(const fm_pool *p, uint32_t chunk, uint32_t slot) {
    return chunk << p->hot.slot_bits | slot;
}

/* Pushes the chain first..last (linked already) onto the stack. */
static void fm__lf_push(fm_pool *p, uint32_t first, uint32_t last) {
    uint32_t *last_link = fm__lf_link(p, last);
    uint64_t old = FM__ATOMIC_LOAD(&p->lf.head, RELAXED);
    for (;;) {
        FM__ATOMIC_STORE(last_link, (uint32_t)old, RELAXED);
        uint64_t next = ((old >> 32) + 1) << 32 | first;
        if (FM__ATOMIC_CAS_WEAK(&p->lf.head, &old, next, RELEASE, RELAXED))
            return;
    }
}

/* Lock held: the whole stack becomes private (one CAS) and goes back to the
 * depot. */
static void fm__lf_drain(fm_pool *p) {
    uint64_t old = FM__ATOMIC_LOAD(&p->lf.head, ACQUIRE);
    uint64_t empty;
    do {
        empty = ((old >> 32) + 1) << 32 | FM__NONE;
    } while (!FM__ATOMIC_CAS_WEAK(&p->lf.head, &old, empty, ACQ_REL, ACQUIRE));
    for (uint32_t g = (uint32_t)old; g != FM__NONE;) {
        uint32_t next = FM__ATOMIC_LOAD(fm__lf_link(p, g), RELAXED);
        fm__depot_put(p, fm__lf_slot(p, g));
        g = next;
    }
}

FM__NOINLINE static void *fm__lf_refill(fm_pool *p) {
    fm__mutex_lock(&p->lock);
    void *mine = fm__depot_take(p, true);
    if (!mine) {
        fm__mutex_unlock(&p->lock);
        return NULL;
    }
    uint32_t first = FM__NONE, last = FM__NONE;
    for (uint32_t n = 1; n < FM__LF_BATCH; n++) {
        void *slot = fm__depot_take(p, false);
        if (!slot) break;
        fm__loc loc = {0};
        (void)fm__locate(p, slot, &loc);
        uint32_t g = fm__lf_index(p, loc.chunk, loc.slot);
        FM__ATOMIC_STORE(fm__lf_link(p, g), first, RELAXED);
        if (first == FM__NONE) last = g;
        first = g;
    }
    fm__mutex_unlock(&p->lock);
    if (first != FM__NONE) fm__lf_push(p, first, last);
    return mine;
}

FM__NOINLINE static void *fm__lf_alloc(fm_pool *p) {
    uint64_t old = FM__ATOMIC_LOAD(&p->lf.head, ACQUIRE);
    void *slot;
    for (;;) {
        uint32_t g = (uint32_t)old;
        if (g == FM__NONE) {
            slot = fm__lf_refill(p);
            if (!slot) return NULL;
            break;
        }
        uint32_t next = FM__ATOMIC_LOAD(fm__lf_link(p, g), RELAXED);
        uint64_t desired = ((old >> 32) + 1) << 32 | next;
        if (FM__ATOMIC_CAS_WEAK(&p->lf.head, &old, desired, ACQUIRE, ACQUIRE)) {
            slot = fm__lf_slot(p, g);
            break;
        }
    }
    fm__count_op(p, true);
    return fm__cached_to_live(p, slot);
}

FM__NOINLINE static void fm__lf_free(fm_pool *p, void *item, const char *op) {
    fm__loc loc;
    fm_error err = fm__locate_fast(p, item, &loc);
    if (FM__UNLIKELY(err != FM_OK)) {
        fm__misuse(p, fm__shared_problem(p, err, item), item, op);
        return;
    }
    int done = fm__live_to_cached(p, item, &loc, op);
    if (done != FM__NOT_FREED) fm__count_op(p, false);
    if (done != FM__FREED_TO_CACHE) return;
    uint32_t g = fm__lf_index(p, loc.chunk, loc.slot);
    fm__lf_push(p, g, g);
}
