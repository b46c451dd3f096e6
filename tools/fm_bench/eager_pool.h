/*
 * fm_bench/eager_pool.h: the classic eager pool, as a baseline.
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
 * alloc and free check nothing (no double-free, foreign-pointer or live
 * tracking, no counters): alloc pops the head, free pushes it. Like Boost,
 * which is header-only, their fast paths are inline so a caller's loop
 * compiles them in, the same footing as fm_pool's inline fast path; only
 * growth is out of line.
 *
 * Differences from Boost: eager_pool_create allocates the first block (like
 * fm_pool_create with initial_capacity); Boost defers it to the first
 * malloc, where the same walk would land inside an allocation. Boost's
 * object_pool::free keeps the free list ordered (ordered_free, O(n)); this is
 * pool<>::free, the O(1) push.
 */
#ifndef FM_BENCH_EAGER_POOL_H
#define FM_BENCH_EAGER_POOL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define EAGER_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define EAGER_UNLIKELY(x) (x)
#endif

typedef struct eager_block eager_block;

/* Public so the fast paths below can be inlined; use the functions. */
typedef struct eager_pool {
    void *free_list;
    eager_block *blocks;
    size_t stride;      /* item size rounded up to 16, like malloc's alignment */
    size_t header;      /* bytes before the first slot, keeps slots 16-aligned */
    uint64_t next_size; /* items in the next block: doubles at every growth */
    uint64_t grow_ticks;
    uint64_t grow_ticks_max;
    uint64_t grow_events;
} eager_pool;

/// A pool of item_size-byte items whose first block holds initial items
/// (0 = 32, Boost's default). NULL when malloc fails.
eager_pool *eager_pool_create(size_t item_size, uint32_t initial);
/// Frees every block; live items die with them.
void eager_pool_destroy(eager_pool *pool);
/// Adds a block twice the previous one, linking every slot (out of line,
/// timed). 0 when malloc fails.
int eager_pool_grow(eager_pool *pool);
/// fm_clock ticks spent growing after create, the slowest growth, and how
/// many growths.
uint64_t eager_pool_grow_ticks(const eager_pool *pool);
uint64_t eager_pool_grow_ticks_max(const eager_pool *pool);
uint64_t eager_pool_grow_events(const eager_pool *pool);
/// Free slots on the list right now (walks it; for checks, not timed code).
size_t eager_pool_free_count(const eager_pool *pool);

/// An item; grows by a block twice the previous one when empty. NULL on OOM.
static inline void *eager_pool_alloc(eager_pool *pool) {
    if (EAGER_UNLIKELY(pool->free_list == NULL) && !eager_pool_grow(pool)) return NULL;
    void **slot = (void **)pool->free_list;
    pool->free_list = *slot;
    return slot;
}

/// Pushes item on the free list.
static inline void eager_pool_free(eager_pool *pool, void *item) {
    *(void **)item = pool->free_list;
    pool->free_list = item;
}

#endif /* FM_BENCH_EAGER_POOL_H */
