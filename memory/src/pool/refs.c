/* pool/refs.c: handles of live items and reference counts (plain under NONE
 * and MUTEX, by CAS under THREAD_CACHE and LOCKFREE).
 */
#ifndef FM__POOL_UNIT
#error "pool/refs.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* ============================================================ handles */

static fm_handle fm__handle_core(const fm_pool *pool, const void *item) {
    fm__loc loc;
    fm_error err = item ? fm__locate_policy(pool, item, &loc) : FM_ERR_FOREIGN_POINTER;
    if (err != FM_OK) {
        /* A freed slot is "not a live item", like any foreign pointer. */
        fm__misuse((fm_pool *)pool, err == FM_ERR_DOUBLE_FREE ? FM_ERR_FOREIGN_POINTER : err,
                   item, "handle");
        return FM_HANDLE_NULL;
    }
    uint64_t gen = ((loc.meta & FM__GEN_MAX) - pool->hot.gen_key) & FM__GEN_MAX;
    uint64_t where = ((uint64_t)loc.chunk + 1) << pool->hot.slot_bits | loc.slot;
    return (fm_handle){gen << 32 | where};
}

/* ======================================================= reference counts */

/* The count word of a live located item, allocating the chunk's count array
 * on first use. NULL (reported) when it cannot be had. */
static uint64_t *fm__ref_word(fm_pool *p, const fm__loc *loc) {
    fm__chunk *c = fm__chunk_at(p, loc->chunk);
    if (!c->refs) {
        size_t bytes = (size_t)p->hot.per_chunk * sizeof *c->refs;
        uint64_t *refs = fm_allocator_alloc(&p->desc.allocator, bytes, alignof(uint64_t));
        if (!refs) {
            fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for reference counts",
                       p->name);
            return NULL;
        }
        memset(refs, 0, bytes);
        FM__ATOMIC_STORE(&c->refs, refs, RELEASE); /* lock-free readers: see fm__refs_shared */
    }
    return &c->refs[loc->slot];
}

/* A count word belongs to the item whose generation it carries; any other
 * word is left over from an earlier item of the slot: that item has count 1. */
static uint32_t fm__ref_count(const fm_pool *p, const fm__loc *loc) {
    const uint64_t *refs = fm__chunk_at(p, loc->chunk)->refs;
    if (!refs) return 1;
    uint64_t w = refs[loc->slot];
    return (uint32_t)(w >> 32) == (loc->meta & FM__GEN_MAX) ? (uint32_t)w + 1 : 1;
}

static fm_error fm__ref_locate(const fm_pool *p, const void *item, fm__loc *loc) {
    fm_error err = item ? fm__locate_policy(p, item, loc) : FM_ERR_FOREIGN_POINTER;
    return err == FM_ERR_DOUBLE_FREE ? FM_ERR_REFCOUNT : err;
}

/* ===================================================== atomic reference counts
 *
 * THREAD_CACHE and LOCKFREE: the count words change by CAS, without the lock;
 * only the first retain of a chunk takes it, to allocate the chunk's words. A
 * reader with a records array older than the one holding a new refs pointer
 * can only be one whose item has count 1 (anyone holding a second reference
 * got it after that retain), which is what a missing array says. */

static uint64_t *fm__refs_shared(fm_pool *p, const fm__loc *loc, bool create) {
    uint64_t *refs = FM__ATOMIC_LOAD(&fm__chunk_at(p, loc->chunk)->refs, ACQUIRE);
    if (refs) return &refs[loc->slot];
    if (!create) return NULL;
    fm__mutex_lock(&p->lock);
    uint64_t *w = fm__ref_word(p, loc);
    fm__mutex_unlock(&p->lock);
    return w;
}

static uint32_t fm__count_of(uint64_t w, uint32_t gen) {
    return (uint32_t)(w >> 32) == gen ? (uint32_t)w + 1 : 1;
}

FM__NOINLINE static void fm__retain_shared(fm_pool *p, void *item, const fm__loc *loc) {
    uint64_t *w = fm__refs_shared(p, loc, true);
    if (!w) return;
    uint32_t gen = loc->meta & FM__GEN_MAX;
    uint64_t old = FM__ATOMIC_LOAD(w, RELAXED);
    for (;;) {
        uint32_t count = fm__count_of(old, gen);
        if (count == UINT32_MAX) {
            fm__misuse(p, FM_ERR_REFCOUNT, item, "retain (count at its maximum)");
            return;
        }
        if (FM__ATOMIC_CAS_WEAK(w, &old, (uint64_t)gen << 32 | count, RELAXED, RELAXED))
            return;
    }
}

FM__NOINLINE static bool fm__release_shared(fm_pool *p, void *item, const fm__loc *loc) {
    uint64_t *w = fm__refs_shared(p, loc, false);
    uint32_t gen = loc->meta & FM__GEN_MAX;
    if (w) {
        uint64_t old = FM__ATOMIC_LOAD(w, ACQUIRE);
        for (;;) {
            uint32_t count = fm__count_of(old, gen);
            if (count <= 1) break;
            /* Release: this holder's writes to the item happen before the
             * last holder's dtor and free. */
            if (FM__ATOMIC_CAS_WEAK(w, &old, (uint64_t)gen << 32 | (count - 2), ACQ_REL, ACQUIRE))
                return false;
        }
    }
    if (p->desc.dtor) p->desc.dtor(item, p->desc.user);
    fm__hook_free_live(p, item);
    fm__sync_free(p, item, "release");
    return true;
}

FM__NOINLINE static uint32_t fm__refcount_shared(const fm_pool *p, const fm__loc *loc) {
    const uint64_t *w = fm__refs_shared((fm_pool *)p, loc, false);
    return w ? fm__count_of(FM__ATOMIC_LOAD(w, ACQUIRE), loc->meta & FM__GEN_MAX) : 1;
}

static void fm__retain_core(fm_pool *pool, void *item) {
    fm__loc loc;
    fm_error err = fm__ref_locate(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse(pool, err, item, "retain");
        return;
    }
    if (FM__UNLIKELY(fm__cached_policy(pool))) {
        fm__retain_shared(pool, item, &loc);
        return;
    }
    uint32_t count = fm__ref_count(pool, &loc);
    if (count == UINT32_MAX) {
        fm__misuse(pool, FM_ERR_REFCOUNT, item, "retain (count at its maximum)");
        return;
    }
    uint64_t *w = fm__ref_word(pool, &loc);
    if (w) *w = (uint64_t)(loc.meta & FM__GEN_MAX) << 32 | count;
}

static bool fm__release_core(fm_pool *pool, void *item) {
    fm__loc loc;
    fm_error err = fm__ref_locate(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse(pool, err, item, "release");
        return false;
    }
    if (FM__UNLIKELY(fm__cached_policy(pool))) return fm__release_shared(pool, item, &loc);
    uint32_t count = fm__ref_count(pool, &loc);
    if (count > 1) {
        fm__chunk_at(pool, loc.chunk)->refs[loc.slot] =
            (uint64_t)(loc.meta & FM__GEN_MAX) << 32 | (count - 2);
        return false;
    }
    if (pool->desc.dtor) {
        pool->desc.dtor(item, pool->desc.user);
        if (fm__locate(pool, item, &loc) != FM_OK) {
            fm__misuse(pool, FM_ERR_DOUBLE_FREE, item, "release (freed by its own dtor)");
            return true;
        }
    }
    fm__hook_free_live(pool, item);
    fm__free_located(pool, item, &loc);
    return true;
}

static uint32_t fm__refcount_core(const fm_pool *pool, const void *item) {
    fm__loc loc;
    fm_error err = fm__ref_locate(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse((fm_pool *)pool, err, item, "refcount");
        return 0;
    }
    if (FM__UNLIKELY(fm__cached_policy(pool))) return fm__refcount_shared(pool, &loc);
    return fm__ref_count(pool, &loc);
}
