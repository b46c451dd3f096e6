/* pool/tcache.c: FM_SYNC_THREAD_CACHE's per-thread magazines (and the
 * per-thread counters LOCKFREE keeps in the same entries).
 */
#ifndef FM__POOL_UNIT
#error "pool/tcache.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* ---- FM_SYNC_THREAD_CACHE: per-thread magazines
 *
 * Each thread keeps, per pool it used, an entry with up to FM__TC_SLOTS free
 * slots of that pool: alloc pops, free pushes, and only a full or empty
 * magazine exchanges FM__TC_BATCH slots with the depot under the lock. A
 * slot freed on another thread joins that thread's entry for the same pool
 * (entries are keyed by the pool's unique id, never by its address, so a
 * pool re-created at the same address never sees an old entry). Entries are
 * the thread's (C heap); the pool lists them under its lock so stats can sum
 * their counters and destroy can detach them. A thread's exit (its exit hook
 * destructor) returns its slots and counters to the pools still alive; the
 * registry lock orders that against destroy. LOCKFREE pools keep their
 * counters in the same entries (with no slots). The entry a thread used last
 * is fm__tc_last, which detail/pool.h's inline alloc and free use as fm__tc_alloc
 * and fm__tc_free below do, except that the free sets the meta word without
 * a CAS (see pool.h's Threads): with the CAS a warm alloc+free pair took
 * 1.85x NONE's time, without it 1.4x. */

enum { FM__TC_BATCH = FM__TC_SLOTS / 2 };

/* hint_slots of an entry with no hint: slot starts counted from it lie at
 * 2^63 and above, where no user-space pointer is, so no item matches. */
#define FM__TC_NO_HINT ((uintptr_t)1 << 63)

typedef struct fm__tcache {
    fm__tc_entry **entries; /* the thread's entries (fm__tc_entry: detail/pool.h) */
    uint32_t n, cap;
} fm__tcache;

/* What fm__tc_last names when the thread has no entry: id 0 matches no pool,
 * so every path goes on to fm__tc_find; nothing ever writes to it. */
static fm__tc_entry fm__tc_none = {.hint_slots = FM__TC_NO_HINT};
__thread fm__tc_entry *fm__tc_last __attribute__((tls_model("initial-exec"))) = &fm__tc_none;
static FM__THREAD_LOCAL fm__tcache *fm__tc;
static fm__exit_hook fm__tc_exit;
static fm__once fm__tc_once = FM__ONCE_INIT;
static bool fm__tc_key_ok;
/* Orders thread exit against pool destroy (taken before any pool lock). */
static fm__mutex fm__tc_registry = FM__MUTEX_INIT;

/* A cached slot found live is in another thread's cache too: two frees of
 * its item raced on two threads and both succeeded (the inline free of
 * optimised builds uses no CAS), and the other copy was served. This copy
 * leaves the magazine unserved; that also takes back the free counted twice
 * (frees are derived from count). */
FM__COLD static void fm__tc_report_duplicate(fm_pool *p, const void *slot) {
    FM__ATOMIC_FETCH_ADD(&p->misuse_count, 1, RELAXED);
    fm__report(FM_ERR_DOUBLE_FREE,
               "pool '%s': slot %p is in use but was also in this thread's cache (two frees "
               "of its item raced on two threads); that copy is dropped",
               p->name, slot);
}

/* An entry's share of the pool's user frees. LOCKFREE counts them.
 * THREAD_CACHE counts only allocs, which saves the fast free a counter: over
 * all entries, the slots taken from the depot are those in magazines, the
 * live items and those a thread with no entry freed straight to the depot
 * (tc_gone_frees counts these), so allocs + count - taken, summed over the
 * entries (mod 2^64) plus tc_gone_frees, is exactly the frees. */
static uint64_t fm__entry_frees(const fm_pool *p, const fm__tc_entry *e) {
    if (p->sync != FM_SYNC_THREAD_CACHE) return FM__ATOMIC_LOAD(&e->frees, ACQUIRE);
    return FM__ATOMIC_LOAD(&e->allocs, ACQUIRE) +
           FM__ATOMIC_LOAD(&e->count, ACQUIRE) +
           (FM__ATOMIC_LOAD(&e->next_slot, ACQUIRE) != NULL) -
           FM__ATOMIC_LOAD(&e->taken, ACQUIRE);
}

/* The owning thread: the inline free's last slot joins slots[] (detail/pool.h's
 * free leaves room for it), before the library uses the magazine. The
 * library keeps count below FM__TC_SLOTS between calls (see
 * fm__tc_entry_of), so only this can fill the last place. */
static inline void fm__tc_settle(fm__tc_entry *e) {
    void *slot = FM__ATOMIC_LOAD(&e->next_slot, RELAXED);
    if (FM__LIKELY(!slot)) return;
    e->slots[e->count] = slot;
    e->slot_idx[e->count] = fm__tc_next_idx(e, e->pool->base_mask);
    FM__ATOMIC_STORE(&e->count, e->count + 1, RELAXED);
    FM__ATOMIC_STORE(&e->next_slot, NULL, RELAXED);
}

/* Lock held: count slots from the bottom of the magazine (the coldest) go
 * back to the depot. */
static void fm__tc_flush_locked(fm_pool *p, fm__tc_entry *e, uint32_t count) {
    if (count > e->count) count = e->count;
    uint32_t returned = 0;
    for (uint32_t i = 0; i < count; i++) {
        uintptr_t base = (uintptr_t)e->slots[i] & p->base_mask;
        if (FM__UNLIKELY(fm__meta_get(base, e->slot_idx[i]) & FM__LIVE)) {
            fm__tc_report_duplicate(p, e->slots[i]); /* in use: not the depot's */
            continue;
        }
        fm__depot_put(p, e->slots[i]);
        returned++;
    }
    uint32_t rest = e->count - count;
    memmove(e->slots, e->slots + count, (size_t)rest * sizeof e->slots[0]);
    memmove(e->slot_idx, e->slot_idx + count, (size_t)rest * sizeof e->slot_idx[0]);
    FM__ATOMIC_STORE(&e->count, rest, RELAXED);
    FM__ATOMIC_STORE(&e->taken, e->taken - returned, RELAXED);
}

static void fm__tc_thread_exit(void *arg) {
    fm__tcache *tc = arg;
    fm__tc = NULL;
    fm__tc_last = &fm__tc_none;
    fm__mutex_lock(&fm__tc_registry);
    for (uint32_t i = 0; i < tc->n; i++) {
        fm__tc_entry *e = tc->entries[i];
        if (FM__ATOMIC_LOAD(&e->id, ACQUIRE) != 0) {
            fm_pool *p = e->pool;
            fm__mutex_lock(&p->lock);
            fm__tc_settle(e);
            fm__tc_flush_locked(p, e, e->count);
            p->tc_gone_allocs += e->allocs;
            p->tc_gone_frees += fm__entry_frees(p, e);
            if (e->prev) e->prev->next = e->next;
            else p->tc_entries = e->next;
            if (e->next) e->next->prev = e->prev;
            fm__mutex_unlock(&p->lock);
        }
        free(e);
    }
    fm__mutex_unlock(&fm__tc_registry);
    free(tc->entries);
    free(tc);
}

static void fm__tc_key_create(void) {
    fm__tc_key_ok = fm__exit_hook_create(&fm__tc_exit, fm__tc_thread_exit);
}

/* Destroy: every entry forgets the pool (its thread frees it later). */
static void fm__tc_detach_all(fm_pool *p) {
    fm__mutex_lock(&fm__tc_registry);
    fm__mutex_lock(&p->lock);
    for (fm__tc_entry *e = p->tc_entries, *next; e; e = next) {
        next = e->next;
        p->tc_gone_allocs += FM__ATOMIC_LOAD(&e->allocs, RELAXED);
        p->tc_gone_frees += fm__entry_frees(p, e);
        FM__ATOMIC_STORE(&e->id, 0, RELEASE); /* last write to e */
    }
    p->tc_entries = NULL;
    fm__mutex_unlock(&p->lock);
    fm__mutex_unlock(&fm__tc_registry);
}

/* The calling thread's entry for p, made on first use; NULL (reported) when
 * there is no memory for it. */
FM__NOINLINE static fm__tc_entry *fm__tc_find(fm_pool *p) {
    fm__call_once(&fm__tc_once, fm__tc_key_create);
    if (!fm__tc_key_ok) {
        fm__report(FM_ERR_UNSUPPORTED, "pool '%s': no thread-specific key for thread caches",
                   p->name);
        return NULL;
    }
    fm__tcache *tc = fm__tc;
    if (!tc) {
        tc = calloc(1, sizeof *tc);
        if (!tc || !fm__exit_hook_arm(&fm__tc_exit, tc)) {
            free(tc);
            fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for this thread's cache",
                       p->name);
            return NULL;
        }
        fm__tc = tc;
    }
    /* Find p's entry; entries of destroyed pools are freed on the way. */
    fm__tc_entry *found = NULL;
    for (uint32_t i = 0; i < tc->n;) {
        fm__tc_entry *e = tc->entries[i];
        uint64_t id = FM__ATOMIC_LOAD(&e->id, ACQUIRE);
        if (id == 0) {
            if (fm__tc_last == e) fm__tc_last = &fm__tc_none;
            free(e);
            tc->entries[i] = tc->entries[--tc->n];
            continue;
        }
        if (id == p->id) found = e;
        i++;
    }
    if (!found) {
        if (tc->n == tc->cap) {
            uint32_t cap = tc->cap ? tc->cap * 2 : 8;
            fm__tc_entry **entries = realloc(tc->entries, cap * sizeof *entries);
            if (!entries) goto oom;
            tc->entries = entries;
            tc->cap = cap;
        }
        if (posix_memalign((void **)&found, 64, sizeof *found) != 0) goto oom;
        memset(found, 0, sizeof *found);
        found->id = p->id;
        found->hint_slots = FM__TC_NO_HINT;
        found->pool = p;
        fm__mutex_lock(&p->lock);
        found->next = p->tc_entries;
        if (found->next) found->next->prev = found;
        p->tc_entries = found;
        fm__mutex_unlock(&p->lock);
        tc->entries[tc->n++] = found;
    }
    fm__tc_last = found;
    return found;
oom:
    fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for this thread's cache", p->name);
    return NULL;
}

static inline fm__tc_entry *fm__tc_entry_of(fm_pool *p) {
    fm__tc_entry *e = fm__tc_last;
    if (FM__UNLIKELY(FM__ATOMIC_LOAD(&e->id, RELAXED) != p->id)) e = fm__tc_find(p);
    if (FM__UNLIKELY(e == NULL)) return NULL;
    fm__tc_settle(e);
    /* Between calls count stays below FM__TC_SLOTS, the last place being
     * next_slot's (see detail/pool.h's free). */
    if (FM__UNLIKELY(e->count == FM__TC_SLOTS)) {
        fm__mutex_lock(&p->lock);
        fm__tc_flush_locked(p, e, FM__TC_BATCH);
        fm__mutex_unlock(&p->lock);
    }
    return e;
}

static inline void fm__count(uint64_t *c) {
    FM__ATOMIC_STORE(c, FM__ATOMIC_LOAD(c, RELAXED) + 1, RELAXED);
}

/* The owning thread's pop: the top slot becomes a live item; NULL when it
 * is live already (see fm__tc_drop_top), and then nothing changed. */
static inline void *fm__tc_pop(const fm_pool *p, fm__tc_entry *e) {
    uint32_t n = e->count - 1;
    void *slot = e->slots[n];
    uintptr_t base = (uintptr_t)slot & p->base_mask;
    uint32_t m = fm__meta_get(base, e->slot_idx[n]);
    if (FM__UNLIKELY(m & FM__LIVE)) return NULL;
    FM__ATOMIC_STORE(&e->count, n, RELAXED);
    fm__meta_set(base, e->slot_idx[n], m | FM__LIVE);
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    fm__count(&e->allocs);
    return slot;
}

/* The owning thread's push of a free slot; the magazine has room. */
static inline void fm__tc_push(fm__tc_entry *e, void *slot, uint32_t idx) {
    e->slots[e->count] = slot;
    e->slot_idx[e->count] = idx;
    FM__ATOMIC_STORE(&e->count, e->count + 1, RELAXED);
}

FM__COLD static void fm__tc_drop_top(fm_pool *p, fm__tc_entry *e) {
    fm__tc_report_duplicate(p, e->slots[e->count - 1]);
    FM__ATOMIC_STORE(&e->count, e->count - 1, RELAXED);
}

FM__NOINLINE static bool fm__tc_refill(fm_pool *p, fm__tc_entry *e) {
    fm__mutex_lock(&p->lock);
    uint32_t n = 0;
    void *slot = fm__depot_take(p, true);
    while (slot) {
        uintptr_t base = (uintptr_t)slot & p->base_mask;
        e->slots[n] = slot;
        e->slot_idx[n++] = fm__slot_of(p, base, slot);
        slot = n < FM__TC_BATCH ? fm__depot_take(p, false) : NULL;
    }
    FM__ATOMIC_STORE(&e->count, n, RELAXED);
    FM__ATOMIC_STORE(&e->taken, e->taken + n, RELAXED);
    fm__mutex_unlock(&p->lock);
    return n > 0;
}

FM__NOINLINE static void *fm__tc_alloc_slow(fm_pool *p) {
    fm__tc_entry *e = fm__tc_entry_of(p);
    if (FM__UNLIKELY(!e)) {
        fm__mutex_lock(&p->lock);
        p->failed_allocs++;
        fm__mutex_unlock(&p->lock);
        return NULL;
    }
    for (;;) {
        if (FM__UNLIKELY(e->count == 0) && !fm__tc_refill(p, e)) return NULL;
        void *item = fm__tc_pop(p, e);
        if (FM__LIKELY(item != NULL)) return item;
        fm__tc_drop_top(p, e);
    }
}

/* The common alloc: the thread's last entry is this pool's and has a slot;
 * nothing here needs a register saved, the rest is tail-called. */
static inline void *fm__tc_alloc(fm_pool *p) {
    fm__tc_entry *e = fm__tc_last;
    if (FM__LIKELY(FM__ATOMIC_LOAD(&e->id, RELAXED) == p->id && e->count != 0 &&
                   !FM__ATOMIC_LOAD(&e->next_slot, RELAXED))) {
        void *item = fm__tc_pop(p, e);
        if (FM__LIKELY(item != NULL)) return item;
    }
    return fm__tc_alloc_slow(p);
}

FM__NOINLINE static void fm__tc_free_slow(fm_pool *p, void *item, const char *op) {
    fm__loc loc;
    fm_error err = fm__locate_fast(p, item, &loc);
    if (FM__UNLIKELY(err != FM_OK)) {
        fm__misuse(p, fm__shared_problem(p, err, item), item, op);
        return;
    }
    fm__tc_entry *e = fm__tc_entry_of(p);
    if (FM__UNLIKELY(!e)) {
        /* No cache for this thread: straight back to the depot. */
        fm__mutex_lock(&p->lock);
        fm__loc core;
        err = fm__locate(p, item, &core);
        if (err == FM_OK) {
            fm__free_located(p, item, &core);
            p->tc_gone_frees++;
        }
        fm__mutex_unlock(&p->lock);
        if (err != FM_OK) fm__misuse(p, err, item, op);
        return;
    }
    int done = fm__live_to_cached(p, item, &loc, op);
    if (done != FM__FREED_TO_CACHE) {
        if (done == FM__FREED_RETIRED) FM__ATOMIC_STORE(&e->taken, e->taken - 1, RELAXED); /* back in the depot */
        return;
    }
    e->hint_meta = fm__meta((uintptr_t)item & p->base_mask);
    FM__ATOMIC_STORE(&e->hint_slots, ((uintptr_t)item & p->base_mask) + p->hot.slots_off, RELAXED);
    if (FM__UNLIKELY(e->count >= FM__TC_SLOTS - 1)) {
        fm__mutex_lock(&p->lock);
        fm__tc_flush_locked(p, e, FM__TC_BATCH);
        fm__mutex_unlock(&p->lock);
    }
    fm__tc_push(e, item, loc.slot);
}

/* The common free: an item of the chunk this thread's entry freed into last
 * (trim clears every entry's hint before it releases a chunk, so the hint
 * never names memory that is not this pool's), live, into a magazine with
 * room. Everything else takes the full path above. */
static inline void fm__tc_free(fm_pool *p, void *item, const char *op) {
    fm__tc_entry *e = fm__tc_last;
    uintptr_t hs = FM__ATOMIC_LOAD(&e->hint_slots, RELAXED);
    uint64_t slot = fm__exact_index((uintptr_t)item - hs, p->hot.inv, p->hot.inv_shift);
    if (FM__LIKELY(FM__ATOMIC_LOAD(&e->id, RELAXED) == p->id &&
                   slot < p->hot.per_chunk && e->count < FM__TC_SLOTS - 1 &&
                   !FM__ATOMIC_LOAD(&e->next_slot, RELAXED))) {
        uint32_t *mw = &fm__meta(hs - p->hot.slots_off)[slot];
        uint32_t m = FM__ATOMIC_LOAD(mw, ACQUIRE);
        /* Live with a generation below the maximum: negative, below -1. */
        if (FM__LIKELY((int32_t)m < -1 &&
                       FM__ATOMIC_CAS_STRONG(mw, &m, (m & FM__GEN_MAX) + 1, ACQ_REL, RELAXED))) {
            fm__slot_to_free(p, item);
            fm__tc_push(e, item, (uint32_t)slot);
            return;
        }
    }
    fm__tc_free_slow(p, item, op);
}

/* Trim, lock held: no entry's hint may outlive the chunks it releases. */
static void fm__tc_forget_hints(fm_pool *p) {
    for (fm__tc_entry *e = p->tc_entries; e; e = e->next)
        FM__ATOMIC_STORE(&e->hint_slots, FM__TC_NO_HINT, RELAXED);
}

void fm_pool_flush_thread_cache(fm_pool *pool) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_flush_thread_cache(NULL)");
        return;
    }
    if (pool->sync != FM_SYNC_THREAD_CACHE) return;
    fm__tcache *tc = fm__tc;
    if (!tc) return;
    for (uint32_t i = 0; i < tc->n; i++) {
        fm__tc_entry *e = tc->entries[i];
        if (FM__ATOMIC_LOAD(&e->id, RELAXED) != pool->id) continue;
        fm__mutex_lock(&pool->lock);
        fm__tc_settle(e);
        fm__tc_flush_locked(pool, e, e->count);
        fm__mutex_unlock(&pool->lock);
    }
}
