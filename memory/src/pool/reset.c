/* pool/reset.c: fm_pool_reset, every live item freed at once, the chunks
 * kept (a level's objects gone, the next level's allocations taking no page
 * fault).
 *
 * Without a dtor, under NONE and MUTEX, a reset costs O(chunks) whatever the
 * number of items: each chunk's bump index goes back to 0, its free stack is
 * emptied and its live count zeroed; no meta word is touched. That is sound
 * because:
 * - every path that takes an item pointer reads the bump index before the
 *   meta word (fm__locate, the frees of core.c, the inline free of the
 *   current chunk), so an item the reset freed, whose word still says live,
 *   is dead to them (a free of it is a double free, fm__locate);
 * - allocations walk the bump index again over the slots handed out before
 *   (fm__bump_reused), giving each its next generation (a word still saying
 *   live) or its own (a free slot's, above every handle to its items), and
 *   passing over retired ones;
 * - a handle asks resolve for its generation bits plus the pool's gen_key
 *   (detail/pool.h). A reset lowers gen_key by one, so a handle made before
 *   asks for a generation one below the one its slot had (or had reached)
 *   when the handle was made; a slot's generation never goes down, so no
 *   word matches. For that arithmetic never to wrap, every slot handed out
 *   has a generation of at least gen_budget (fm__make_current), and each
 *   reset lowers gen_budget with gen_key. When it is used up, a reset
 *   renumbers instead (fm__renumber): every used meta word and every
 *   record's floor goes up by FM__GEN_BUDGET (a slot whose generations run
 *   out retires, as at any other wrap), gen_key by FM__GEN_BUDGET - 1, and
 *   gen_budget starts again: O(slots), once per FM__GEN_BUDGET resets.
 *
 * THREAD_CACHE and LOCKFREE locate and free without the lock and trust the
 * meta word alone (a thread's inline free checks nothing else), so there a
 * reset also turns every live word into a free one of the next generation:
 * O(slots used), one pass over 4-byte words. Their cached slots are dropped:
 * the free slots in every thread's magazine and on the shared stack belong
 * to chunks the reset starts over (the counters of each thread's entry are
 * folded into the pool's). The rule for threads still using the pool: as
 * for destroy, no other call on the pool may overlap the reset (calls before
 * it happen before it, e.g. at a frame barrier); after it every thread
 * allocates afresh from the pool, its magazine refilled on its next call.
 *
 * With a dtor, it runs on every live item first (a walk, as fm_pool_foreach:
 * it may free items; items it allocates are freed by the reset too, dtor or
 * not). A reset called from inside a walk is refused.
 */
#ifndef FM__POOL_UNIT
#error "pool/reset.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* The debug tools' view of a chunk's used slots once their items are gone:
 * filled (debug builds), poisoned for ASan, inaccessible for Valgrind (whose
 * mempool the reset has emptied). */
static void fm__reset_annotate(const fm_pool *p, const fm__chunk *c, uint32_t used) {
    uint8_t *slots0 = c->base + p->hot.slots_off;
    size_t bytes = (size_t)used * p->hot.stride;
#ifndef NDEBUG
    FM__UNPOISON(slots0, bytes);
    FM__VG_UNDEFINED(slots0, bytes);
    memset(slots0, FM__FILL_FREED, bytes);
#endif
    FM__POISON(slots0, bytes);
    FM__VG_NOACCESS(slots0, bytes);
}

/* Raises a generation by FM__GEN_BUDGET; false when it would pass the
 * maximum (the slot retires). */
static bool fm__gen_raise(uint32_t *gen) {
    if (*gen > FM__GEN_MAX - FM__GEN_BUDGET) return false;
    *gen += FM__GEN_BUDGET;
    return true;
}

/* A slot of chunk c retires at a reset. */
static void fm__reset_retire(fm_pool *p, fm__chunk *c, uint32_t slot) {
    fm__meta_set((uintptr_t)c->base, slot, FM__RETIRED);
    c->retired++;
    p->retired++;
    p->capacity--;
}

/* gen_budget used up: every used meta word and every record's floor goes up
 * by FM__GEN_BUDGET, so that with gen_key up by FM__GEN_BUDGET - 1 every
 * handle asks for a generation below its slot's, and gen_budget starts
 * again. */
static void fm__renumber(fm_pool *p) {
    for (uint32_t i = 0; i < p->chunk_top; i++) {
        fm__chunk *c = fm__chunk_at(p, i);
        if (c->gen_floor < FM__GEN_MAX - 1 && !fm__gen_raise(&c->gen_floor))
            c->gen_floor = FM__GEN_MAX; /* never reused: see fm__drop_record */
        if (c->state == FM__CHUNK_UNUSED || c->state == FM__CHUNK_FRESH) continue;
        uint32_t used = fm__chunk_used(p, i);
        for (uint32_t s = 0; s < used; s++) {
            uint32_t m = fm__meta_get((uintptr_t)c->base, s);
            if (m == FM__RETIRED) continue;
            uint32_t gen = m & FM__GEN_MAX;
            if (fm__gen_raise(&gen)) fm__meta_set((uintptr_t)c->base, s, (m & FM__LIVE) | gen);
            else fm__reset_retire(p, c, s);
        }
    }
    p->gen_budget = FM__GEN_BUDGET - 1;
    FM__ATOMIC_STORE(&p->hot.gen_key, p->hot.gen_key + (FM__GEN_BUDGET - 1), RELEASE);
}

/* THREAD_CACHE and LOCKFREE: every live word of chunk c becomes free with
 * the next generation (see the top of this file). */
static void fm__reset_kill_words(fm_pool *p, fm__chunk *c, uint32_t used) {
    uint32_t *meta = fm__meta((uintptr_t)c->base);
    for (uint32_t s = 0; s < used; s++) {
        uint32_t m = FM__ATOMIC_LOAD(&meta[s], RELAXED);
        if (!(m & FM__LIVE)) continue;
        if ((m & FM__GEN_MAX) == FM__GEN_MAX) fm__reset_retire(p, c, s);
        else FM__ATOMIC_STORE(&meta[s], (m & FM__GEN_MAX) + 1, RELAXED);
    }
}

/* Under the lock or as the owner, no walk under way: every chunk starts over
 * (see the top of this file); the first becomes current. */
static void fm__reset_core(fm_pool *p) {
    fm__settle_next(p); /* a parked slot, even with no current chunk */
    fm__park_current(p);
    if (p->gen_budget == 0) {
        fm__renumber(p);
    } else {
        p->gen_budget--;
        /* MUTEX: resolves read it without the lock. */
        FM__ATOMIC_STORE(&p->hot.gen_key, p->hot.gen_key - 1, RELEASE);
    }
    /* Valgrind forgets every item at once; the slots become inaccessible
     * below. */
    FM__VG_DESTROY_POOL(p);
    FM__VG_CREATE_POOL(p);
    bool cached = fm__cached_policy(p);
    fm__list_init(&p->partial);
    fm__list_init(&p->empty);
    for (uint32_t i = 0; i < p->chunk_top; i++) {
        fm__chunk *c = fm__chunk_at(p, i);
        if (c->state == FM__CHUNK_UNUSED || c->state == FM__CHUNK_FRESH) continue;
        uint32_t used = fm__chunk_used(p, i);
        if (cached) fm__reset_kill_words(p, c, used);
        fm__reset_annotate(p, c, used);
        c->hw = used;
        c->bump = 0;
        c->free_top = 0;
        c->live = 0;
        c->state = FM__CHUNK_EMPTY;
        fm__dm_refresh(p, c); /* its key says whether words a reset left remain */
        fm__list_push(p, &p->empty, i);
    }
    p->live_other = 0;
    p->cs->headroom = (int64_t)p->cs->peak_live; /* nothing live */
    p->resets++;
    /* The chunk the next allocation takes, now rather than in that call. */
    if (p->empty.head != FM__NONE || p->spans) (void)fm__next_chunk(p);
}

void fm_pool_reset(fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", );
    if (!fm__enter(pool, "reset")) return;
    if (pool->walking) {
        FM__ATOMIC_FETCH_ADD(&pool->misuse_count, 1, RELAXED);
        fm__report(FM_ERR_INVALID_ARG,
                   "pool '%s': fm_pool_reset inside fm_pool_foreach (or inside a dtor a reset "
                   "runs): refused, nothing freed",
                   pool->name);
        fm__leave(pool);
        return;
    }
    if (pool->desc.dtor && fm__user_live(pool))
        fm__foreach_core(pool, pool->desc.dtor, pool->desc.user);
    if (pool->sync == FM_SYNC_THREAD_CACHE || pool->sync == FM_SYNC_LOCKFREE) fm__tc_drop_all(pool);
    fm__reset_core(pool);
    /* hooks.h: under the lock (MUTEX), so before any later allocation's
     * event; after the dtor's frees. */
    fm__hook_reset(pool->name);
    fm__leave(pool);
}

void fm__pool_set_gen_budget(fm_pool *pool, uint32_t budget) {
    if (budget < pool->gen_budget) pool->gen_budget = budget;
}
