/*
 * engine/classic_pool.h: the classic eager pool. The engine's "classic"
 * backend (ENG_BACKEND_CLASSIC) and fm-bench's eager baseline both use it:
 * one implementation of the regrowth hitch framemem exists to remove.
 *
 * Boost's pool<> / object_pool algorithm (boost/pool/pool.hpp,
 * simple_segregated_storage): blocks come from malloc, each twice the size of
 * the previous one (Boost starts at 32 items); when the free list is empty a
 * new block is allocated and EVERY slot of it is linked into a singly linked
 * free list at once (the O(n) "segregate" walk, from the block's last slot to
 * its first). That walk writes to every page of the block, so growth pays for
 * all page faults and for n link writes inside the allocation that triggered
 * it: the hitch framemem's lazily bumped chunks avoid.
 *
 * alloc and free check nothing about items (no double-free, foreign-pointer or live
 * tracking, no counters): alloc pops the head, free pushes it. Like Boost,
 * which is header-only, their fast paths are inline so a caller's loop
 * compiles them in, the same footing as fm_pool's inline fast path; only
 * growth is out of line.
 *
 * Differences from Boost: eng_classic_pool_create allocates the first block
 * (like fm_pool_create with initial_capacity; the engine passes its pool
 * desc's initial_capacity as Boost's next_size argument); Boost defers it to
 * the first malloc, where the same walk would land inside an allocation.
 * Boost's object_pool::free keeps the free list ordered (ordered_free, O(n));
 * this is pool<>::free, the O(1) push.
 *
 * NULL: every function reports a NULL pool as the engine does (framemem's
 * FM_ERR_INVALID_ARG naming the function) and returns 0 / NULL / nothing;
 * eng_classic_pool_destroy(NULL) does nothing. On the fast paths that is
 * one predictable compare before the pop or push.
 *
 * Threads: one thread at a time per pool.
 */
#ifndef ENGINE_CLASSIC_POOL_H
#define ENGINE_CLASSIC_POOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ENG_CLASSIC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define ENG_CLASSIC_UNLIKELY(x) (x)
#endif

typedef struct eng_classic_block eng_classic_block;

/* Public so the fast paths below can be inlined; use the functions. */
typedef struct eng_classic_pool {
    void *free_list;
    eng_classic_block *blocks;
    size_t stride;      /* item size rounded up to 16, like malloc's alignment */
    size_t header;      /* bytes before the first slot, keeps slots 16-aligned */
    uint64_t next_size; /* items in the next block: doubles at every growth */
    uint64_t capacity;  /* items in every block together */
    uint64_t grow_ticks;
    uint64_t grow_ticks_max;
    uint64_t grow_events;
} eng_classic_pool;

/// A pool of item_size-byte items whose first block holds initial items
/// (0 = 32, Boost's default). NULL when malloc fails.
eng_classic_pool *eng_classic_pool_create(size_t item_size, uint32_t initial);
/// Frees every block; live items die with them.
void eng_classic_pool_destroy(eng_classic_pool *pool);
/// Adds a block twice the previous one, linking every slot (out of line,
/// timed). 0 when malloc fails.
int eng_classic_pool_grow(eng_classic_pool *pool);
/* Counts since create. */
typedef struct eng_classic_pool_stats {
    uint64_t capacity;       /* items in every block together (live and free) */
    uint64_t grow_events;    /* blocks added after the first */
    uint64_t grow_ticks;     /* fm_clock ticks spent adding them */
    uint64_t grow_ticks_max; /* the slowest one */
} eng_classic_pool_stats;

/// The pool's counts into *out (zeroed for a NULL pool, reported).
void eng_classic_pool_get_stats(const eng_classic_pool *pool, eng_classic_pool_stats *out);
/// Free slots on the list right now (walks it; for checks, not timed code).
size_t eng_classic_pool_free_count(const eng_classic_pool *pool);

/* Internal: reports a NULL pool for the inline paths below. */
void eng__classic_pool_null(const char *fn);

/// An item; grows by a block twice the previous one when empty. NULL on OOM
/// or for a NULL pool (reported).
static inline void *eng_classic_pool_alloc(eng_classic_pool *pool) {
    if (ENG_CLASSIC_UNLIKELY(pool == NULL)) {
        eng__classic_pool_null("eng_classic_pool_alloc");
        return NULL;
    }
    if (ENG_CLASSIC_UNLIKELY(pool->free_list == NULL) && !eng_classic_pool_grow(pool)) return NULL;
    void **slot = (void **)pool->free_list;
    pool->free_list = *slot;
    return slot;
}

/// Pushes item on the free list (checks nothing about item, as Boost; a
/// NULL pool is reported).
static inline void eng_classic_pool_free(eng_classic_pool *pool, void *item) {
    if (ENG_CLASSIC_UNLIKELY(pool == NULL)) {
        eng__classic_pool_null("eng_classic_pool_free");
        return;
    }
    *(void **)item = pool->free_list;
    pool->free_list = item;
}

#ifdef __cplusplus
}
#endif
#endif /* ENGINE_CLASSIC_POOL_H */
