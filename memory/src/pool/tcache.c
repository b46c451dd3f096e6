/* pool/tcache.c: FM_SYNC_THREAD_CACHE, per-thread magazines of free slots
 * (and the per-thread counters LOCKFREE keeps in the same entries).
 *
 * Each thread keeps, per pool it uses, an entry with up to FM__TC_SLOTS free
 * slots of that pool: alloc pops, free pushes, and only a full or empty
 * magazine exchanges FM__TC_BATCH slots with the depot under the lock. A
 * slot freed on another thread joins that thread's entry for the same pool.
 * LOCKFREE pools keep their counters in the same entries (with no slots).
 *
 * An entry is the pool's: it comes from the pool's allocator under the
 * pool's lock (bytes_reserved counts it) and sits on the pool's list, where
 * stats sum its counters and destroy finds it. Its thread finds it through
 * a table of (pool id, entry) slots in thread-local storage (so a thread
 * allocates nothing of its own), keyed by the pool's unique id, never its
 * address: a pool re-created at the same address never sees an old entry.
 * The entry used last is fm__tc_cur, which the inline paths read; they and
 * everything here test its id, a thread-local word, before they touch the
 * entry.
 *
 * An entry goes with its thread or with its pool, whichever goes first. Its
 * table slot's id leaves the pool's id by one CAS: to 0 by the pool's
 * destroy, which then frees the entry; or to FM__TC_CLAIMED by the exiting
 * thread, which then hands the slots and counters back to the pool and
 * frees the entry under the pool's lock while destroy, seeing the claim,
 * waits. Destroy writes into a thread's table only while the entry is on
 * the pool's list, that is before the thread's exit has passed that slot.
 *
 * A thread holds at most FM__TC_POOLS entries at once; a pool beyond them is
 * served without a cache (each alloc and free under the pool's lock) until a
 * slot comes free when one of the others is destroyed.
 *
 * The inline alloc and free (detail/pool.h) pop and push as fm__tc_alloc and
 * fm__tc_free below do, except that the free sets the meta word without a
 * CAS (see docs/POOLS.md, Threads): with the CAS a warm alloc+free pair took
 * 1.85x NONE's time, without it 1.4x.
 */
#ifndef FM__POOL_UNIT
#error "pool/tcache.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

enum { FM__TC_BATCH = FM__TC_SLOTS / 2 };

/* hint_slots of an entry with no hint: slot starts counted from it lie at
 * 2^63 and above, where no user-space pointer is, so no item matches (a
 * 64-bit word on every target: 2^31 is an address on 32-bit ones). */
#define FM__TC_NO_HINT ((uint64_t)1 << 63)
/* A table slot whose thread is handing the entry back (no pool id is this). */
#define FM__TC_CLAIMED UINT64_MAX

typedef struct fm__tc_thread {
    fm__tc_slot table[FM__TC_POOLS]; /* [0, used): id 0 marks a free slot */
    uint32_t used;
    bool armed; /* the exit hook runs at this thread's exit */
} fm__tc_thread;

#ifdef FM__TC_INLINE
__thread fm__tc_slot fm__tc_cur FM__TC_TLS_MODEL; /* (detail/pool.h) */
#else
/* Where no inline path reads it (detail/pool.h), the library's own. */
static FM__THREAD_LOCAL fm__tc_slot fm__tc_cur_tls;
#define fm__tc_cur FM__TLS(fm__tc_cur_tls)
#endif
static FM__THREAD_LOCAL fm__tc_thread fm__tc_self_tls;
#define fm__tc_self FM__TLS(fm__tc_self_tls)
static fm__exit_hook fm__tc_exit;
static fm__once fm__tc_once = FM__ONCE_INIT;
static bool fm__tc_hook_ok;

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

/* p's lock held: e leaves p's list, its counters stay with p, and its
 * memory goes back to p's allocator. */
static void fm__tc_entry_free(fm_pool *p, fm__tc_entry *e) {
    p->tc_gone_allocs += FM__ATOMIC_LOAD(&e->allocs, RELAXED);
    p->tc_gone_frees += fm__entry_frees(p, e);
    if (e->prev) e->prev->next = e->next;
    else p->tc_entries = e->next;
    if (e->next) e->next->prev = e->prev;
    p->bytes_reserved -= sizeof *e;
    fm_allocator_free(&p->desc.allocator, e, sizeof *e);
}

/* The exit hook: each entry of the thread goes back to its pool, its slots
 * to the depot, unless the pool's destroy took it first. */
static void fm__tc_thread_exit(void *arg) {
    fm__tc_thread *t = arg;
    fm__tc_cur = (fm__tc_slot){0, NULL};
    for (uint32_t i = 0; i < t->used; i++) {
        fm__tc_slot *s = &t->table[i];
        uint64_t id = FM__ATOMIC_LOAD(&s->id, ACQUIRE);
        if (id == 0 || !FM__ATOMIC_CAS_STRONG(&s->id, &id, FM__TC_CLAIMED, ACQ_REL, ACQUIRE))
            continue;
        /* Claimed: the pool's destroy waits for this slot, so p stays. */
        fm__tc_entry *e = s->entry;
        fm_pool *p = e->pool;
        fm__mutex_lock(&p->lock);
        fm__tc_settle(e);
        fm__tc_flush_locked(p, e, e->count);
        fm__tc_entry_free(p, e);
        fm__mutex_unlock(&p->lock);
        FM__ATOMIC_STORE(&s->id, 0, RELEASE);
    }
    t->used = 0;
    t->armed = false; /* a later use (another exit hook's) arms it again */
}

static void fm__tc_hook_create(void) {
    fm__tc_hook_ok = fm__exit_hook_create(&fm__tc_exit, fm__tc_thread_exit);
}

/* Destroy: every thread's entry for p is freed. An entry its exiting thread
 * is handing back (claimed) is waited for: that thread needs p's lock. */
static void fm__tc_free_entries(fm_pool *p) {
    fm__mutex_lock(&p->lock);
    fm__tc_entry *e = p->tc_entries;
    while (e) {
        uint64_t id = p->id;
        if (FM__ATOMIC_CAS_STRONG(&e->home->id, &id, 0, ACQ_REL, ACQUIRE)) {
            fm__tc_entry *next = e->next;
            fm__tc_entry_free(p, e);
            e = next;
            continue;
        }
        fm__mutex_unlock(&p->lock);
        fm__thread_yield();
        fm__mutex_lock(&p->lock);
        e = p->tc_entries;
    }
    fm__mutex_unlock(&p->lock);
    if (fm__tc_cur.id == p->id) fm__tc_cur = (fm__tc_slot){0, NULL};
}

/* The calling thread's entry for p, from its table or made in a free slot of
 * it. NULL when there is none: with *uncached set when the table is full
 * (nothing reported: the call goes on without a cache), else reported (no
 * exit hook, no memory). */
FM__NOINLINE static fm__tc_entry *fm__tc_find(fm_pool *p, bool *uncached) {
    fm__tc_thread *t = &fm__tc_self;
    fm__tc_slot *slot = NULL;
    for (uint32_t i = 0; i < t->used; i++) {
        uint64_t id = FM__ATOMIC_LOAD(&t->table[i].id, ACQUIRE);
        if (id == p->id) {
            fm__tc_cur = (fm__tc_slot){id, t->table[i].entry};
            return fm__tc_cur.entry;
        }
        if (id == 0 && !slot) slot = &t->table[i];
    }
    if (!t->armed) {
        fm__call_once(&fm__tc_once, fm__tc_hook_create);
        if (!fm__tc_hook_ok) {
            fm__report(FM_ERR_UNSUPPORTED, "pool '%s': no thread-specific key for thread caches",
                       p->name);
            return NULL;
        }
        if (!fm__exit_hook_arm(&fm__tc_exit, t)) {
            fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for this thread's cache",
                       p->name);
            return NULL;
        }
        t->armed = true;
    }
    if (!slot) {
        if (t->used == FM__TC_POOLS) {
            *uncached = true;
            return NULL;
        }
        slot = &t->table[t->used++];
    }
    /* Under the lock, as every call of the pool's allocator is. */
    fm__mutex_lock(&p->lock);
    fm__tc_entry *e = fm_allocator_alloc(&p->desc.allocator, sizeof *e, 64);
    if (e) {
        memset(e, 0, sizeof *e);
        e->hint_slots = FM__TC_NO_HINT;
        e->pool = p;
        e->home = slot;
        e->next = p->tc_entries;
        if (e->next) e->next->prev = e;
        p->tc_entries = e;
        p->bytes_reserved += sizeof *e;
    }
    fm__mutex_unlock(&p->lock);
    if (!e) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for this thread's cache", p->name);
        return NULL;
    }
    slot->entry = e;
    FM__ATOMIC_STORE(&slot->id, p->id, RELEASE);
    fm__tc_cur = (fm__tc_slot){p->id, e};
    return e;
}

/* The calling thread's entry for p, settled (see fm__tc_settle) and with
 * room; NULL as fm__tc_find. */
static inline fm__tc_entry *fm__tc_entry_of(fm_pool *p, bool *uncached) {
    fm__tc_entry *e =
        FM__LIKELY(fm__tc_cur.id == p->id) ? fm__tc_cur.entry : fm__tc_find(p, uncached);
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

/* A thread whose table is full: an item straight from the depot (a failed
 * growth is reported and counted there). */
FM__NOINLINE static void *fm__tc_alloc_uncached(fm_pool *p) {
    fm__mutex_lock(&p->lock);
    void *slot = fm__depot_take(p, true);
    if (slot) {
        fm__cached_to_live(p, slot);
        p->tc_gone_allocs++;
    }
    fm__mutex_unlock(&p->lock);
    return slot;
}

FM__NOINLINE static void *fm__tc_alloc_slow(fm_pool *p) {
    bool uncached = false;
    fm__tc_entry *e = fm__tc_entry_of(p, &uncached);
    if (FM__UNLIKELY(!e)) {
        if (uncached) return fm__tc_alloc_uncached(p);
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
    if (FM__LIKELY(fm__tc_cur.id == p->id)) {
        fm__tc_entry *e = fm__tc_cur.entry;
        if (FM__LIKELY(e->count != 0 && !FM__ATOMIC_LOAD(&e->next_slot, RELAXED))) {
            void *item = fm__tc_pop(p, e);
            if (FM__LIKELY(item != NULL)) return item;
        }
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
    bool uncached = false;
    fm__tc_entry *e = fm__tc_entry_of(p, &uncached);
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
        /* Retired: the slot went back to the depot. */
        if (done == FM__FREED_RETIRED) FM__ATOMIC_STORE(&e->taken, e->taken - 1, RELAXED);
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
    if (FM__LIKELY(fm__tc_cur.id == p->id)) {
        fm__tc_entry *e = fm__tc_cur.entry;
        uint64_t hs = FM__ATOMIC_LOAD(&e->hint_slots, RELAXED);
        uint64_t slot = fm__exact_index((uintptr_t)item - hs, p->hot.inv, p->hot.inv_shift);
        if (FM__LIKELY(slot < p->hot.per_chunk && e->count < FM__TC_SLOTS - 1 &&
                       !FM__ATOMIC_LOAD(&e->next_slot, RELAXED))) {
            uint32_t *mw = &fm__meta(hs - p->hot.slots_off)[slot];
            uint32_t m = FM__ATOMIC_LOAD(mw, ACQUIRE);
            /* Live with a generation below the maximum: negative, below -1. */
            if (FM__LIKELY((int32_t)m < -1 && FM__ATOMIC_CAS_STRONG(mw, &m, (m & FM__GEN_MAX) + 1,
                                                                   ACQ_REL, RELAXED))) {
                fm__slot_to_free(p, item);
                fm__tc_push(e, item, (uint32_t)slot);
                return;
            }
        }
    }
    fm__tc_free_slow(p, item, op);
}

/* Reset (THREAD_CACHE and LOCKFREE), lock held, no other call on the pool
 * under way: the free slots every thread holds (magazines, the inline free's
 * last slot, the shared stack) are dropped, their chunks starting over, and
 * every entry's counters are folded into the pool's, where the user's frees
 * now equal the allocations (see fm__user_counts). Each entry stays with its
 * thread, empty; hints go too. */
static void fm__tc_drop_all(fm_pool *p) {
    if (p->sync == FM_SYNC_LOCKFREE) {
        uint64_t old = FM__ATOMIC_LOAD(&p->lf.head, ACQUIRE);
        FM__ATOMIC_STORE(&p->lf.head, ((old >> 32) + 1) << 32 | FM__NONE, RELEASE);
    }
    uint64_t allocs = p->tc_gone_allocs;
    for (fm__tc_entry *e = p->tc_entries; e; e = e->next) {
        allocs += FM__ATOMIC_LOAD(&e->allocs, RELAXED);
        FM__ATOMIC_STORE(&e->allocs, 0, RELAXED);
        FM__ATOMIC_STORE(&e->frees, 0, RELAXED);
        FM__ATOMIC_STORE(&e->taken, 0, RELAXED);
        FM__ATOMIC_STORE(&e->count, 0, RELAXED);
        FM__ATOMIC_STORE(&e->next_slot, NULL, RELAXED);
        FM__ATOMIC_STORE(&e->hint_slots, FM__TC_NO_HINT, RELAXED);
    }
    p->tc_gone_allocs = allocs;
    p->tc_gone_frees = allocs;
}

/* Trim, lock held: no entry's hint may outlive the chunks it releases. */
static void fm__tc_forget_hints(fm_pool *p) {
    for (fm__tc_entry *e = p->tc_entries; e; e = e->next)
        FM__ATOMIC_STORE(&e->hint_slots, FM__TC_NO_HINT, RELAXED);
}

void fm_pool_flush_thread_cache(fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", );
    if (pool->sync != FM_SYNC_THREAD_CACHE) return;
    fm__tc_thread *t = &fm__tc_self;
    for (uint32_t i = 0; i < t->used; i++) {
        if (FM__ATOMIC_LOAD(&t->table[i].id, RELAXED) != pool->id) continue;
        fm__tc_entry *e = t->table[i].entry;
        fm__mutex_lock(&pool->lock);
        fm__tc_settle(e);
        fm__tc_flush_locked(pool, e, e->count);
        fm__mutex_unlock(&pool->lock);
        return;
    }
}
