/* fm_bench/eager_pool.c: Boost pool<>'s growth, for comparison. */
#include "eager_pool.h"

#include <stdlib.h>

#include "framemem/clock.h"

/* Block header first, then the slots; Boost keeps it at the block's end,
 * which changes nothing measured here. */
struct eager_block {
    struct eager_block *next;
    size_t items;
};

/* The segregate walk: link every slot of the new block, last to first, in
 * front of the current free list. */
static int add_block(eager_pool *pool) {
    size_t items = (size_t)pool->next_size;
    eager_block *b = malloc(pool->header + items * pool->stride);
    if (!b) return 0;
    b->next = pool->blocks;
    b->items = items;
    pool->blocks = b;
    char *first = (char *)b + pool->header;
    void *next = pool->free_list;
    for (size_t i = items; i-- > 0;) {
        void **slot = (void **)(first + i * pool->stride);
        *slot = next;
        next = slot;
    }
    pool->free_list = next;
    pool->next_size <<= 1;
    return 1;
}

eager_pool *eager_pool_create(size_t item_size, uint32_t initial) {
    eager_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    if (item_size < sizeof(void *)) item_size = sizeof(void *);
    pool->stride = (item_size + 15) & ~(size_t)15;
    pool->header = (sizeof(eager_block) + 15) & ~(size_t)15;
    pool->next_size = initial ? initial : 32;
    if (!add_block(pool)) {
        free(pool);
        return NULL;
    }
    return pool;
}

void eager_pool_destroy(eager_pool *pool) {
    if (!pool) return;
    for (eager_block *b = pool->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(pool);
}

/* Kept out of line so the inline fast path stays small, as in Boost
 * (pool<>::malloc_need_resize). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
int eager_pool_grow(eager_pool *pool) {
    uint64_t t0 = fm_clock_now();
    int ok = add_block(pool);
    uint64_t ticks = fm_clock_now() - t0;
    pool->grow_ticks += ticks;
    if (ticks > pool->grow_ticks_max) pool->grow_ticks_max = ticks;
    pool->grow_events += (uint64_t)ok;
    return ok;
}

uint64_t eager_pool_grow_ticks(const eager_pool *pool) { return pool->grow_ticks; }
uint64_t eager_pool_grow_ticks_max(const eager_pool *pool) { return pool->grow_ticks_max; }
uint64_t eager_pool_grow_events(const eager_pool *pool) { return pool->grow_events; }

size_t eager_pool_free_count(const eager_pool *pool) {
    size_t n = 0;
    for (void *p = pool->free_list; p; p = *(void **)p) n++;
    return n;
}
