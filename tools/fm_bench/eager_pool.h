/*
 * fm_bench/eager_pool.h: the classic eager pool, as a baseline.
 *
 * Boost's object_pool algorithm (boost/pool/pool.hpp, simple_segregated_storage):
 * blocks come from malloc, each twice the size of the previous one (Boost
 * starts at 32 items); when the free list is empty a new block is allocated
 * and EVERY slot of it is linked into a singly linked free list at once (the
 * O(n) "segregate" walk, from the block's last slot to its first). That walk
 * writes to every page of the block, so growth pays for all page faults and
 * for n link writes inside the allocation that triggered it: the hitch
 * framemem's lazily bumped chunks avoid.
 *
 * One difference from Boost: eager_pool_create allocates the first block
 * (like fm_pool_create with initial_capacity); Boost defers it to the first
 * malloc, where the same walk would land inside an allocation.
 */
#ifndef FM_BENCH_EAGER_POOL_H
#define FM_BENCH_EAGER_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct eager_pool eager_pool;

/// A pool of item_size-byte items whose first block holds initial items
/// (0 = 32, Boost's default). NULL when malloc fails.
eager_pool *eager_pool_create(size_t item_size, uint32_t initial);
/// Frees every block; live items die with them.
void eager_pool_destroy(eager_pool *pool);
/// An item; grows by a block twice the previous one when empty. NULL on OOM.
void *eager_pool_alloc(eager_pool *pool);
/// Pushes item on the free list.
void eager_pool_free(eager_pool *pool, void *item);
/// fm_clock ticks spent growing after create, the slowest growth, and how
/// many growths.
uint64_t eager_pool_grow_ticks(const eager_pool *pool);
uint64_t eager_pool_grow_ticks_max(const eager_pool *pool);
uint64_t eager_pool_grow_events(const eager_pool *pool);

#endif /* FM_BENCH_EAGER_POOL_H */
