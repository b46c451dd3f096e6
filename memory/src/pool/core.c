/* pool/core.c: the single-threaded core: alloc and free in the current
 * chunk and in others, the parked slot, batches, and the depot through which
 * THREAD_CACHE and LOCKFREE move slots in and out of the core. NONE runs it
 * directly, every other policy under the pool's lock.
 */
#ifndef FM__POOL_UNIT
#error "pool/core.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* ======================================================= the next slot */

/* The next slot, if any, goes where it belongs: the current chunk's stack,
 * or a parked slot onto its own chunk's (which stops counting it live). */
static void fm__settle_next(fm_pool *p) {
    fm__pool_hot *h = p->cs;
    h->cur_last = NULL; /* its words may change from here on (see fm__pool_hot) */
    if (!h->cur_next_slot) return;
    h->headroom++; /* no longer counted live (see fm__live) */
    if (h->cur_next != FM__NONE) {
        h->cur_stack[h->cur_top++] = (uint16_t)h->cur_next;
    } else if (fm__parked_base(p) == h->cur_base) { /* its chunk became current */
        h->cur_stack[h->cur_top++] = (uint16_t)fm__parked_slot(p);
    } else {
        /* A chunk with a live item is not released: its record is there. */
        fm__file_free_slot(p, fm__other_rec_moving(p, fm__parked_base(p)), fm__parked_slot(p));
        p->live_other--;
    }
    h->cur_next_slot = NULL;
}

/* ============================================================ reports */

FM__COLD static void fm__misuse(fm_pool *p, fm_error err, const void *ptr, const char *op) {
    FM__ATOMIC_FETCH_ADD(&p->misuse_count, 1, RELAXED);
    switch (err) {
    case FM_ERR_FOREIGN_POINTER:
        fm__report(err, "pool '%s': %s(%p): not an item of this pool", p->name, op, ptr);
        break;
    case FM_ERR_INTERIOR_POINTER:
        fm__report(err, "pool '%s': %s(%p): points inside an item, not at its start", p->name,
                   op, ptr);
        break;
    case FM_ERR_DOUBLE_FREE:
        fm__report(err, "pool '%s': %s(%p): item is already free (double free)", p->name, op,
                   ptr);
        break;
    default:
        fm__report(err, "pool '%s': %s(%p): %s", p->name, op, ptr, fm_error_str(err));
        break;
    }
}

/* ======================================================= alloc and free */

/* The bump index over slots that a reset found handed out (below cur_hw,
 * see pool/reset.c): their meta words are left as the reset found them. A
 * retired slot is passed over; a word still saying live (an item the reset
 * freed) goes on to the next generation, so no reference count of that item
 * applies to the new one (a slot with no generation left retires now); a
 * free slot's word keeps its generation, already above every handle to its
 * items. The slot becomes live; FM__NONE (bump at the limit) when none is
 * left. detail/pool.h's inline alloc does the same for every slot but a
 * retired or spent one. */
FM__NOINLINE static uint32_t fm__bump_reused(fm_pool *p) {
    fm__pool_hot *h = p->cs;
    uint32_t found = FM__NONE;
    while (found == FM__NONE && h->cur_bump < h->cur_limit) {
        uint32_t idx = (uint32_t)h->cur_bump++;
        uint32_t m = idx < h->cur_hw ? fm__meta_get(h->cur_base, idx) : h->cur_fresh_word;
        if (m == FM__RETIRED) continue;
        if (idx < h->cur_hw && (m & FM__LIVE)) {
            if ((m & FM__GEN_MAX) == FM__GEN_MAX) {
                fm__meta_set(h->cur_base, idx, FM__RETIRED);
                fm__chunk_at(p, p->cur_idx)->retired++;
                p->retired++;
                p->capacity--;
                continue;
            }
            m = (m & FM__GEN_MAX) + 1;
        }
        fm__meta_set(h->cur_base, idx, FM__LIVE | m);
        found = idx;
    }
    return found;
}

/* Takes a slot of the current chunk: its free stack first, then never-used
 * slots. NULL when the chunk is exhausted (or there is none). */
static inline void *fm__alloc_fast(fm_pool *p) {
    fm__pool_hot *h = p->cs;
    uint32_t idx;
    uint8_t *slot = h->cur_next_slot;
    if (slot) { /* maybe another chunk's (parked): its meta word is at hand */
        h->cur_next_slot = NULL;
        h->cur_last = slot; /* as the inline alloc (detail/pool.h) */
        uint32_t *meta = h->cur_next_meta;
        FM__ATOMIC_STORE(meta, FM__ATOMIC_LOAD(meta, RELAXED) | FM__LIVE, RELAXED);
        FM__UNPOISON(slot, p->item_size);
        FM__VG_ALLOC(p, slot, p->item_size);
        h->total_allocs++; /* counted live while it waited (see fm__live) */
        return slot;
    }
    if (FM__LIKELY(h->cur_top != 0)) {
        idx = h->cur_stack[--h->cur_top];
        slot = h->cur_slots + (size_t)idx * h->stride;
        uint32_t *meta = fm__meta(h->cur_base) + idx;
        FM__ATOMIC_STORE(meta, FM__ATOMIC_LOAD(meta, RELAXED) | FM__LIVE, RELAXED);
    } else if (FM__LIKELY(h->cur_bump < h->cur_limit && h->cur_bump >= h->cur_hw)) {
        idx = (uint32_t)h->cur_bump++;
        fm__meta_set(h->cur_base, idx, h->cur_fresh_word); /* first use */
        slot = h->cur_slots + (size_t)idx * h->stride;
    } else if (h->cur_bump < h->cur_limit) {
        idx = fm__bump_reused(p);
        if (idx == FM__NONE) return NULL;
        slot = h->cur_slots + (size_t)idx * h->stride;
    } else {
        return NULL;
    }
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    h->total_allocs++;
    if (--h->headroom < 0) {
        h->headroom = 0;
        h->peak_live++;
    }
    return slot;
}

FM__NOINLINE static void *fm__alloc_next_chunk(fm_pool *p) {
    if (!fm__next_chunk(p)) {
        p->failed_allocs++;
        return NULL;
    }
    return fm__alloc_fast(p);
}

static void *fm__alloc_core(fm_pool *pool) {
    void *item = fm__alloc_fast(pool);
    if (FM__LIKELY(item != NULL)) return item;
    return fm__alloc_next_chunk(pool);
}

/* NONE and MUTEX (under the lock): up to n items into out, the current
 * chunk's free stack popped in one loop (each pop's meta word is the only
 * memory it depends on), anything else one by one. Stops at the first that
 * cannot be had (reported, counted once in failed_allocs). */
static inline FM__ALWAYS_INLINE size_t fm__alloc_batch(fm_pool *p, void **out, size_t n) {
    fm__pool_hot *h = p->cs;
    size_t got = 0;
    while (got < n) {
        uint32_t top = h->cur_top;
        if (h->cur_next_slot || top == 0) {
            void *item = fm__alloc_core(p);
            if (!item) break;
            out[got++] = item;
            continue;
        }
        size_t take = n - got < top ? n - got : top;
        const uint16_t *stack = h->cur_stack;
        uint8_t *slots = h->cur_slots;
        uint32_t *meta = fm__meta(h->cur_base);
        const size_t stride = h->stride;
        for (size_t j = 0; j < take; j++) {
            uint32_t idx = stack[top - 1 - j];
            uint8_t *slot = slots + idx * stride;
            FM__ATOMIC_STORE(&meta[idx], FM__ATOMIC_LOAD(&meta[idx], RELAXED) | FM__LIVE, RELAXED);
            FM__UNPOISON(slot, p->item_size);
            FM__VG_ALLOC(p, slot, p->item_size);
            out[got + j] = slot;
        }
        h->cur_top = top - (uint32_t)take;
        got += take;
        h->total_allocs += take;
        h->headroom -= (int64_t)take;
        if (h->headroom < 0) { /* past the peak: each item beyond it raises it */
            h->peak_live += (uint64_t)-h->headroom;
            h->headroom = 0;
        }
    }
    return got;
}

#ifdef FM_TRACK_SITES
/* The allocating thread owns the new item's site entry: THREAD_CACHE and
 * LOCKFREE write it without the lock (destroy reads it, with no thread left
 * using the pool). */
static void fm__record_site(fm_pool *p, void *item, const char *file, int line) {
    if (!item) return;
    fm__loc loc;
    if (fm__locate_policy(p, item, &loc) != FM_OK) return;
    fm__site *s = &fm__sites(p, (const uint8_t *)((uintptr_t)item & p->base_mask))[loc.slot];
    s->file = file;
    s->line = line;
}
#endif

static inline void fm__scrub(const fm_pool *p, void *item) {
#ifndef NDEBUG
    memset(item, FM__FILL_FREED, p->item_size);
#else
    (void)p, (void)item;
#endif
}

/* Turns a live slot into a free one (in a chunk's stack, a cache or the
 * lock-free stack) or a retired one, for the debug tools: fill, Valgrind's
 * view (the item is gone), ASan poison over the whole slot. */
static void fm__slot_to_free(const fm_pool *p, void *item) {
    fm__scrub(p, item);
    FM__VG_FREE(p, item);
    FM__POISON(item, p->hot.stride);
}

/* A free into a chunk that is not current: a full chunk has room again, a
 * partial one may have become empty. */
static void fm__refile_after_free(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    if (c->state == FM__CHUNK_FULL) {
        fm__file_chunk(p, idx);
    } else if (c->state == FM__CHUNK_PARTIAL && c->live == 0) {
        fm__list_unlink(p, &p->partial, idx);
        fm__file_chunk(p, idx);
    }
}

/* Frees a located live item of any chunk. */
static inline FM__ALWAYS_INLINE void fm__free_located(fm_pool *p, void *item, const fm__loc *loc) {
    fm__chunk *c = fm__chunk_at(p, loc->chunk);
    uintptr_t base = (uintptr_t)c->base;
    bool current = loc->chunk == p->cur_idx;
    if (!current) {
        p->live_other--;
        c->live--;
    }
    if (loc->meta == (FM__LIVE | FM__GEN_MAX)) {
        /* Generation exhausted: retire the slot instead of reusing it. */
        fm__meta_set(base, loc->slot, FM__RETIRED);
        c->retired++;
        p->retired++;
        p->capacity--;
        p->cs->headroom++;
        fm__slot_to_free(p, item);
    } else {
        fm__meta_set(base, loc->slot, (loc->meta & FM__GEN_MAX) + 1);
        fm__slot_to_free(p, item);
        /* The current chunk's becomes the next slot, counted live until it
         * is settled (see fm__live); another chunk's is free now. */
        if (current) fm__push_current(p, loc->slot);
        else fm__stack(p, c->base)[c->free_top++] = (uint16_t)loc->slot, p->cs->headroom++;
    }
    if (current) return;
    fm__refile_after_free(p, loc->chunk);
}

enum { FM__NOT_HANDLED = 0, FM__FILED = 1, FM__PARKED = 2 };

/* The common free outside the current chunk, in a straight line: a live
 * item (below the chunk's bump index, generation below the maximum) of the
 * chunk fm__other_chunk finds. FM__FILED: onto its chunk's stack (the
 * caller takes it off live_other); FM__PARKED (when park): into hot's next
 * slot (see fm_pool), whatever was there settled first; FM__NOT_HANDLED, with
 * nothing changed, for anything else (the current chunk, misuse, a slot to
 * retire). The caller counts a filed free in headroom (a parked slot counts
 * live until it is settled, see fm__live). */
static inline FM__ALWAYS_INLINE int fm__free_other(fm_pool *p, void *item, bool park) {
    uintptr_t base = (uintptr_t)item & p->base_mask;
    if (base == p->cs->cur_base) return FM__NOT_HANDLED;
    fm__chunk *c = fm__other_rec_moving(p, base);
    if (FM__UNLIKELY(!c)) return FM__NOT_HANDLED;
    uint32_t slot = fm__slot_of(p, base, item);
    if (FM__UNLIKELY(slot >= c->bump || !fm__meta_kill(fm__meta(base) + slot, true)))
        return FM__NOT_HANDLED;
    fm__slot_to_free(p, item);
    if (park) {
        fm__pool_hot *h = p->cs;
        if (h->cur_next_slot) fm__settle_next(p);
        h->cur_next_slot = (uint8_t *)item;
        h->cur_next_meta = fm__meta(base) + slot;
        h->cur_next = FM__NONE;
        return FM__PARKED;
    }
    fm__file_free_slot(p, c, slot);
    return FM__FILED;
}

/* NONE, where the core works on hot (every other pool's hot has no current
 * chunk): the common single free, which the inline path leaves here (see
 * detail/pool.h), with no call and no record read (a random free over
 * hundreds of chunks would miss the record's line). With nothing waiting
 * in hot's next slot, a live slot start of a chunk the cache keys as clean
 * (see fm__dm_key: no word a reset left, so a live word is an item handed
 * out), current or not, waits there as fm__free_other parks it; the
 * current chunk is tested only when its key is not clean (after a reset),
 * so random frees over the current chunk and others take one path and
 * mispredict nothing (a branch on the current chunk, taken as often as it
 * held the item, cost fm-bench's random free of 16-byte items about a
 * fifth of its time: 4.75-4.85 ns against 3.83-3.89 without it). With a
 * slot of the current chunk waiting, an item of that chunk takes its place
 * and the slot goes onto the chunk's stack (a loop freeing the current
 * chunk's items). A leaf (no call, so no register is saved and the general
 * path's frame is not built): false, with nothing changed, for anything
 * else, which the policy's path then does. */
static inline FM__ALWAYS_INLINE bool fm__free_park_leaf(fm_pool *p, void *item) {
    fm__pool_hot *h = &p->hot; /* p->cs, wherever hot has a current chunk */
    /* Before any word a locked pool's growth writes (the cache, its mask). */
    if (h->cur_base == 1) return false;
    uintptr_t base = (uintptr_t)item & p->base_mask;
    uint64_t slot = fm__exact_index((uintptr_t)item - base - h->slots_off, h->inv, h->inv_shift);
    uint8_t *waiting = h->cur_next_slot;
    uint64_t bound;
    if (FM__LIKELY(!waiting)) {
        if (FM__LIKELY(fm__dm_entry(p, base)->key == (base | FM__DM_CLEAN))) bound = h->per_chunk;
        else if (base == h->cur_base) bound = h->cur_bump;
        else return false;
    } else {
        if (base != h->cur_base || h->cur_next == FM__NONE) return false;
        bound = h->cur_bump;
    }
    if (slot >= bound) return false;
    uint32_t *w = fm__meta(base) + slot;
    if (!fm__meta_kill(w, false)) return false;
    fm__slot_to_free(p, item);
    if (waiting) {
        h->cur_stack[h->cur_top++] = (uint16_t)h->cur_next;
        h->headroom++; /* the slot that waited is free now (see fm__live) */
    }
    h->cur_next_slot = (uint8_t *)item;
    h->cur_next_meta = w;
    /* Its index in the current chunk, or FM__NONE: another chunk's, parked
     * (see fm_pool.live_other). A select, not a branch. */
    h->cur_next = base == h->cur_base ? (uint32_t)slot : FM__NONE;
    return true;
}

/* NONE and MUTEX (under the lock): frees or reports one item. */
static inline FM__ALWAYS_INLINE void fm__free_one(fm_pool *p, void *item, const char *op) {
    if (!item) return;
    int done = fm__free_other(p, item, true);
    if (FM__LIKELY(done != FM__NOT_HANDLED)) {
        /* A parked slot counts live until it is settled (see fm__live). */
        if (done == FM__FILED) p->live_other--, p->cs->headroom++;
        return;
    }
    fm__loc loc;
    fm_error err = fm__locate(p, item, &loc);
    if (err != FM_OK) {
        fm__misuse(p, err, item, op);
        return;
    }
    fm__free_located(p, item, &loc);
}

FM__NOINLINE static void fm__free_checked(fm_pool *p, void *item, const char *op) {
    fm__free_one(p, item, op);
}

/* NONE and MUTEX (under the lock): frees the run at the start of a batch,
 * the items that are live items of the first one's chunk (current or not),
 * up to the first of another chunk or one that needs more than filing.
 * Items born together tend to die together, so runs are long: the chunk's
 * stack top and count stay in registers and its record is written once per
 * run, where storing and reloading the stack top per item made a chain
 * through memory that cost more than the meta words' cache misses; and the
 * loop makes no call, so nothing it holds is spilled. Returns how many it
 * freed: 0 when items[0] is for the general path (NULL, misuse, a slot to
 * retire). */
static inline FM__ALWAYS_INLINE size_t fm__free_run(fm_pool *p, void *const *items, size_t n) {
    fm__pool_hot *h = p->cs;
    const uintptr_t mask = p->base_mask;
    const uint64_t inv = h->inv;
    const uint32_t k = h->inv_shift, off = h->slots_off;
    const uintptr_t run_base = (uintptr_t)items[0] & mask;
    bool current = run_base == h->cur_base;
    fm__chunk *c = NULL; /* the record, for another chunk: the current one's state is in h */
    if (!current && !(c = fm__other_rec_moving(p, run_base))) return 0;
    const uint64_t bump = current ? h->cur_bump : c->bump;
    uint16_t *const stack = fm__stack(p, (uint8_t *)run_base);
    uint32_t top = current ? h->cur_top : c->free_top;
    size_t i = 0;
    for (; i < n; i++) {
        uintptr_t a = (uintptr_t)items[i];
        if ((a & mask) != run_base) break;
        uint64_t slot = fm__exact_index(a - run_base - off, inv, k);
        if (FM__UNLIKELY(slot >= bump || !fm__meta_kill(fm__meta(run_base) + slot, true))) break;
        fm__slot_to_free(p, (void *)a);
        stack[top++] = (uint16_t)slot;
    }
    h->headroom += (int64_t)i;
    if (current) {
        h->cur_top = top;
    } else if (i) {
        c->free_top = top;
        c->live -= (uint32_t)i;
        p->live_other -= i;
        if (c->state == FM__CHUNK_FULL || c->live == 0) fm__refile_after_free(p, c->idx);
    }
    return i;
}

/* NONE and MUTEX (under the lock): the whole batch, run by run, anything
 * else through the single free's general path. */
static inline FM__ALWAYS_INLINE void fm__free_batch(fm_pool *p, void *const *items, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t done = fm__free_run(p, items + i, n - i);
        i += done;
        if (!done) fm__free_one(p, items[i++], "free");
    }
}

static void fm__delete_core(fm_pool *pool, void *item) {
    if (!item) return;
    fm__loc loc;
    fm_error err = fm__locate_policy(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse(pool, err, item, "delete");
        return;
    }
    if (fm__cached_policy(pool)) {
        /* No lock held: the dtor runs, then the policy's free (which reports
         * the item if the dtor freed it). */
        if (pool->desc.dtor) pool->desc.dtor(item, pool->desc.user);
        fm__hook_free_live(pool, item);
        fm__sync_free(pool, item, "delete");
        return;
    }
    if (pool->desc.dtor) {
        pool->desc.dtor(item, pool->desc.user);
        /* The dtor may have freed other items, even trimmed nothing (trim is
         * never called from here), so the chunk is still there; re-locate in
         * case it freed this very item. */
        if (fm__locate(pool, item, &loc) != FM_OK) {
            fm__misuse(pool, FM_ERR_DOUBLE_FREE, item, "delete (freed by its own dtor)");
            return;
        }
    }
    fm__hook_free_live(pool, item);
    fm__free_located(pool, item, &loc);
}

/* ===================================== the depot: the core, under p->lock */

/* Moves one slot out of the core for a cache or the stack: allocated from
 * the core, then freed into the cache (generation bumped, live bit clear).
 * may_grow false: only slots the core has without growing. NULL when none
 * (reported only when growth was allowed and failed). */
static void *fm__depot_take(fm_pool *p, bool may_grow) {
    for (;;) {
        void *slot = fm__alloc_fast(p);
        if (!slot) {
            if (!may_grow && p->partial.head == FM__NONE && p->empty.head == FM__NONE &&
                !p->spans)
                return NULL;
            slot = fm__alloc_next_chunk(p);
            if (!slot) return NULL;
        }
        fm__loc loc = {0};
        (void)fm__locate(p, slot, &loc);
        if ((loc.meta & FM__GEN_MAX) == FM__GEN_MAX) {
            fm__free_located(p, slot, &loc); /* generations used up: retired */
            continue;
        }
        fm__meta_set((uintptr_t)fm__chunk_at(p, loc.chunk)->base, loc.slot, (loc.meta & FM__GEN_MAX) + 1);
        fm__slot_to_free(p, slot);
        return slot;
    }
}

/* Returns a free slot of a cache or the stack to the core. */
static void fm__depot_put(fm_pool *p, void *slot) {
    fm__loc loc = {0};
    (void)fm__locate(p, slot, &loc); /* reads as freed: FM_ERR_DOUBLE_FREE */
    loc.meta = FM__LIVE | (loc.meta & FM__GEN_MAX);
    fm__meta_set((uintptr_t)fm__chunk_at(p, loc.chunk)->base, loc.slot, loc.meta);
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    fm__free_located(p, slot, &loc);
}

/* A free slot of a cache or the stack becomes a live item. */
static inline void *fm__cached_to_live(const fm_pool *p, void *slot) {
    uintptr_t base = (uintptr_t)slot & p->base_mask;
    uint32_t s = fm__slot_of(p, base, slot);
    fm__meta_set(base, s, fm__meta_get(base, s) | FM__LIVE);
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    return slot;
}

/* A live item found by fm__locate_shared becomes a free slot for a cache or
 * the stack: its meta word goes from live to the next generation with one
 * CAS, so of two racing frees exactly one wins (the other is reported).
 * A slot whose generations are used up is retired through the core. */
static int fm__live_to_cached(fm_pool *p, void *item, const fm__loc *loc, const char *op) {
    uintptr_t base = (uintptr_t)item & p->base_mask;
    uint32_t m = loc->meta;
    if (FM__UNLIKELY((m & FM__GEN_MAX) == FM__GEN_MAX)) {
        /* Generations used up: the core retires the slot. */
        fm__lock(p);
        fm__loc core;
        fm_error err = fm__locate(p, item, &core);
        if (err == FM_OK) fm__free_located(p, item, &core);
        fm__unlock(p);
        if (err != FM_OK) fm__misuse(p, err, item, op);
        return err == FM_OK ? FM__FREED_RETIRED : FM__NOT_FREED;
    }
    if (!FM__ATOMIC_CAS_STRONG(&fm__meta(base)[loc->slot], &m, (m & FM__GEN_MAX) + 1, ACQ_REL,
                               RELAXED)) {
        fm__misuse(p, FM_ERR_DOUBLE_FREE, item, op);
        return FM__NOT_FREED;
    }
    fm__slot_to_free(p, item);
    return FM__FREED_TO_CACHE;
}
