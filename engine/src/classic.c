/* classic.c: Boost pool<>'s growth (engine/classic_pool.h), for comparison. */
#include "engine/classic_pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eng_internal.h"
#include "framemem/clock.h"

/* Block header first, then the slots; Boost keeps it at the block's end,
 * which changes nothing measured here. */
struct eng_classic_block {
    struct eng_classic_block *next;
    size_t items;
};

/* The segregate walk: link every slot of the new block, last to first, in
 * front of the current free list. */
static int add_block(eng_classic_pool *pool) {
    size_t items = (size_t)pool->next_size;
    if (items > (SIZE_MAX - pool->header) / pool->stride) return 0; /* doubled past size_t */
    eng_classic_block *b = malloc(pool->header + items * pool->stride);
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
    pool->capacity += items;
    pool->next_size <<= 1;
    return 1;
}

void eng__classic_pool_null(const char *fn) { eng__report_null(fn, "classic pool", NULL, 0); }

eng_classic_pool *eng_classic_pool_create(size_t item_size, uint32_t initial) {
    if (item_size > SIZE_MAX / 2) return NULL; /* no stride fits */
    eng_classic_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    if (item_size < sizeof(void *)) item_size = sizeof(void *);
    pool->stride = (item_size + 15) & ~(size_t)15;
    pool->header = (sizeof(eng_classic_block) + 15) & ~(size_t)15;
    pool->next_size = initial ? initial : 32;
    if (!add_block(pool)) {
        free(pool);
        return NULL;
    }
    return pool;
}

void eng_classic_pool_destroy(eng_classic_pool *pool) {
    if (!pool) return;
    for (eng_classic_block *b = pool->blocks, *next; b; b = next) {
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
int eng_classic_pool_grow(eng_classic_pool *pool) {
    ENG__REFUSE_NULL(pool, "classic pool", 0);
    uint64_t t0 = fm_clock_now();
    int ok = add_block(pool);
    uint64_t ticks = fm_clock_now() - t0;
    pool->grow_ticks += ticks;
    if (ticks > pool->grow_ticks_max) pool->grow_ticks_max = ticks;
    pool->grow_events += (uint64_t)ok;
    return ok;
}

void eng_classic_pool_get_stats(const eng_classic_pool *pool, eng_classic_pool_stats *out) {
    if (!pool && out) memset(out, 0, sizeof *out);
    ENG__REFUSE_NULL(pool, "classic pool", );
    if (!out) return;
    *out = (eng_classic_pool_stats){.capacity = pool->capacity,
                                    .grow_events = pool->grow_events,
                                    .grow_ticks = pool->grow_ticks,
                                    .grow_ticks_max = pool->grow_ticks_max};
}

size_t eng_classic_pool_free_count(const eng_classic_pool *pool) {
    ENG__REFUSE_NULL(pool, "classic pool", 0);
    size_t n = 0;
    for (void *p = pool->free_list; p; p = *(void **)p) n++;
    return n;
}
