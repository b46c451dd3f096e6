/*
 * fm_bench/churn.c: the alloc/free fast path, fm_pool against glibc malloc
 * and against two pools that check nothing.
 *
 * Two patterns, each with a 16-byte and a 1 KiB item:
 * - pairs: alloc, write a byte, free, N times (the pure fast path);
 * - random: 10,000 items live; N times free a randomly chosen live item and
 *   allocate its replacement (fixed-seed xorshift, indices drawn before the
 *   clock starts so every allocator pays nothing for the RNG).
 * Four allocators run each pattern:
 * - fm_pool (inline fast path, with its checks and counters);
 * - the bare free list: an intrusive singly linked list over one
 *   preallocated array, alloc = pop head, free = push head, inlined, no
 *   checks, no counters, no NULL test; what an engine programmer writes in
 *   ten lines, and the physical lower bound of any pool;
 * - the unchecked pool (engine/classic_pool.h, Boost pool<>'s algorithm): the same
 *   list, grown by malloc'd blocks linked in when added, inline fast path,
 *   no checks;
 * - glibc malloc/free;
 * - two checked free lists (issue 22's physical limits of a free that
 *   checks): the bare list plus a 4-byte meta word per slot outside the
 *   item, checked (inside the region, live) and updated on every free and
 *   alloc, as fm_pool's are; items in 64 KiB-aligned chunks, the meta words
 *   at each chunk's start as fm_pool places them, or coloured (chunk i's
 *   at (i mod 16) x 64 bytes past its start), so that the two rows' gap is
 *   what the placement of chunk metadata costs; and the first of them with
 *   fm_pool's two other checks instead of the region's bounds: the chunk
 *   found by a direct-mapped table of chunk bases (fm_pool's chunk cache, safe for
 *   any pointer: no read of memory at the pointer before the chunk is
 *   known), and the slot below its chunk record's bump index (a 64-byte
 *   record per chunk, as fm_pool's).
 * Runs alternate the variants (A B C D A B C D ...) so machine drift hits
 * all alike; each figure is the median of the runs.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "alloc_loops.h"
#include "engine/classic_pool.h"
#include "framemem/clock.h"
#include "framemem/pool.h"
#include "peers.h"

enum { CHURN_LIVE = BENCH_CHURN_LIVE };

typedef enum churn_pattern { CHURN_PAIRS, CHURN_RANDOM } churn_pattern;
typedef enum churn_kind {
    CHURN_FM_POOL,
    CHURN_BARE,
    CHURN_UNCHECKED,
    CHURN_MALLOC,
    CHURN_CHECKED,        /* meta words at each chunk's start (fm_pool's layout) */
    CHURN_CHECKED_COLOUR, /* meta words coloured */
    CHURN_CHECKED_LOOKUP, /* fm_pool's layout, its chunk lookup and bump bound */
} churn_kind;

typedef struct churn_variant {
    const char *name;
    size_t item_size;
    churn_pattern pattern;
    churn_kind kind;
} churn_variant;

#define CHURN_NAME_FM_POOL "fm_pool"
#define CHURN_NAME_BARE "bare free list"
#define CHURN_NAME_UNCHECKED "unchecked pool (Boost pool<> style)"
#define CHURN_NAME_MALLOC "malloc/free"
#define CHURN_NAME_CHECKED "checked free list, meta at each chunk's start (fm_pool's layout)"
#define CHURN_NAME_CHECKED_COLOUR "checked free list, meta coloured per chunk"
#define CHURN_NAME_CHECKED_LOOKUP \
    "checked free list, fm_pool's layout, chunk by direct-mapped table, slot below its bump"
#define CHURN_GROUP(size, pattern)                                          \
    {CHURN_NAME_FM_POOL, size, pattern, CHURN_FM_POOL},                     \
        {CHURN_NAME_UNCHECKED, size, pattern, CHURN_UNCHECKED},             \
        {CHURN_NAME_BARE, size, pattern, CHURN_BARE},                       \
        {CHURN_NAME_CHECKED, size, pattern, CHURN_CHECKED},                 \
        {CHURN_NAME_CHECKED_COLOUR, size, pattern, CHURN_CHECKED_COLOUR},   \
        {CHURN_NAME_CHECKED_LOOKUP, size, pattern, CHURN_CHECKED_LOOKUP},   \
        {CHURN_NAME_MALLOC, size, pattern, CHURN_MALLOC}

static const churn_variant churn_variants[] = {
    CHURN_GROUP(16, CHURN_PAIRS),
    CHURN_GROUP(1024, CHURN_PAIRS),
    CHURN_GROUP(16, CHURN_RANDOM),
    CHURN_GROUP(1024, CHURN_RANDOM),
};
enum { CHURN_VARIANTS = sizeof churn_variants / sizeof churn_variants[0] };

/* What the random pattern's pre-fill says about memory per item. */
typedef struct churn_overhead {
    fm_pool_stats pool;   /* fm_pool after the pre-fill */
    uint64_t malloc_step; /* median distance between neighbouring malloc'd items */
} churn_overhead;

/* ----------------------------------------------------------- timed loops */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, cold))
#endif
static void alloc_failed(const char *what) {
    bench_die("%s returned NULL (%s: %s)", what, fm_error_name(fm_last_error()),
              fm_last_error_message());
}

static fm_pool *churn_pool_create(size_t item_size) {
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){
        .name = item_size <= 16 ? "churn-16" : "churn-1k",
        .item_size = item_size,
        .sync = FM_SYNC_NONE,
        .growth = FM_GROWTH_GEOMETRIC,
    });
    if (!pool) alloc_failed("fm_pool_create");
    return pool;
}

static BENCH_NOINLINE uint64_t pairs_pool(fm_pool *pool, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_pool_alloc(pool);
        if (!p) alloc_failed("fm_pool_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        fm_pool_free(pool, p);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t random_pool(fm_pool *pool, void **live, const uint32_t *idx,
                                           uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = idx[i];
        fm_pool_free(pool, live[j]);
        unsigned char *p = fm_pool_alloc(pool);
        if (!p) alloc_failed("fm_pool_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        live[j] = p;
    }
    return fm_clock_now() - t0;
}

/* The bare free list: the head of an intrusive singly linked list threaded
 * through a preallocated array. No checks, no counters; popping an empty
 * list would crash, so callers size the array for their peak. */
typedef struct bare_list {
    void *head;
    void *slots; /* the array, for free() */
} bare_list;

static inline void *bare_alloc(bare_list *l) {
    void **slot = (void **)l->head;
    l->head = *slot;
    return slot;
}

static inline void bare_free(bare_list *l, void *item) {
    *(void **)item = l->head;
    l->head = item;
}

/* cap slots of item_size bytes (rounded up to 16, malloc's alignment),
 * linked first to last: touches every slot before any clock starts. */
static void bare_init(bare_list *l, size_t item_size, size_t cap) {
    size_t stride = item_size < sizeof(void *) ? sizeof(void *) : item_size;
    stride = (stride + 15) & ~(size_t)15;
    unsigned char *a = bench_xmalloc(cap * stride);
    l->slots = a;
    l->head = NULL;
    for (size_t i = cap; i-- > 0;) bare_free(l, a + i * stride);
}

static size_t bare_count(const bare_list *l) {
    size_t n = 0;
    for (void *p = l->head; p; p = *(void **)p) n++;
    return n;
}

/* pairs_NAME and random_NAME: the pairs and random loops over a list type
 * whose alloc and free are inline functions that cannot fail. */
#define CHURN_LIST_LOOPS(name, list_t, alloc_fn, free_fn)                                    \
    static BENCH_NOINLINE uint64_t pairs_##name(list_t *l, uint32_t n) {                   \
        uint64_t t0 = fm_clock_now();                                                      \
        for (uint32_t i = 0; i < n; i++) {                                                 \
            unsigned char *p = alloc_fn(l);                                                \
            p[0] = (unsigned char)i;                                                       \
            BENCH_ESCAPE(p);                                                               \
            free_fn(l, p);                                                                 \
        }                                                                                  \
        return fm_clock_now() - t0;                                                        \
    }                                                                                      \
    static BENCH_NOINLINE uint64_t random_##name(list_t *l, void **live, const uint32_t *idx, \
                                                 uint32_t n) {                             \
        uint64_t t0 = fm_clock_now();                                                      \
        for (uint32_t i = 0; i < n; i++) {                                                 \
            uint32_t j = idx[i];                                                           \
            free_fn(l, live[j]);                                                           \
            unsigned char *p = alloc_fn(l);                                                \
            p[0] = (unsigned char)i;                                                       \
            BENCH_ESCAPE(p);                                                               \
            live[j] = p;                                                                   \
        }                                                                                  \
        return fm_clock_now() - t0;                                                        \
    }

CHURN_LIST_LOOPS(bare, bare_list, bare_alloc, bare_free)

/* The checked free list: the bare list over items in 64 KiB-aligned chunks
 * of one region, with a meta word per slot outside the item (bit 31 live,
 * the rest a generation) that every free checks (the item inside the
 * region, its word live: else a foreign pointer or a double free, fatal
 * here) and clears, and every alloc sets. colour: chunk i's words start
 * (i mod 16) x 64 bytes past its base instead of at it. */
enum { CHECKED_CHUNK = 65536, CHECKED_COLOURS = 16 };
typedef struct checked_rec {
    uint32_t bump; /* slots [0, bump) handed out */
    uint8_t rest[60];
} checked_rec;
typedef struct checked_dm {
    uintptr_t base;
    checked_rec *rec;
} checked_dm;
typedef struct checked_list {
    bare_list list;
    uint8_t *region;
    size_t region_bytes;
    uint32_t shift; /* log2 of the stride */
    uint32_t slots_off;
    uint32_t colour_mask; /* CHECKED_COLOURS - 1, or 0 */
    checked_rec *recs;    /* per chunk */
    checked_dm *dm;       /* 4 entries or more per chunk */
    uint32_t dm_mask;
} checked_list;

static inline uint32_t *checked_meta(const checked_list *l, const void *item) {
    uintptr_t chunk = (uintptr_t)item & ~(uintptr_t)(CHECKED_CHUNK - 1);
    uintptr_t colour = ((chunk >> 16) & l->colour_mask) << 6;
    uint32_t slot = (uint32_t)(((uintptr_t)item - chunk - l->slots_off) >> l->shift);
    return (uint32_t *)(chunk + colour) + slot;
}

static BENCH_NOINLINE __attribute__((noreturn, cold)) void checked_misuse(const void *item) {
    bench_die("churn: checked free list: %p is foreign or not live", item);
}

static inline void *checked_alloc(checked_list *l) {
    void *item = bare_alloc(&l->list);
    *checked_meta(l, item) |= 0x80000000u;
    return item;
}

static inline void checked_free(checked_list *l, void *item) {
    if ((uintptr_t)item - (uintptr_t)l->region >= l->region_bytes) checked_misuse(item);
    uint32_t *w = checked_meta(l, item);
    uint32_t m = *w;
    if (!(m & 0x80000000u)) checked_misuse(item);
    *w = (m + 1) & 0x7FFFFFFFu;
    bare_free(&l->list, item);
}

/* checked_free with fm_pool's chunk lookup and bump bound instead of the
 * region's bounds. */
static inline void checked_free_lookup(checked_list *l, void *item) {
    uintptr_t chunk = (uintptr_t)item & ~(uintptr_t)(CHECKED_CHUNK - 1);
    const checked_dm *e = &l->dm[(chunk >> 16) & l->dm_mask];
    if (e->base != chunk) checked_misuse(item);
    uint32_t slot = (uint32_t)((uintptr_t)item - chunk - l->slots_off) >> l->shift;
    if (slot >= e->rec->bump) checked_misuse(item);
    uint32_t *w = (uint32_t *)chunk + slot;
    uint32_t m = *w;
    if (!(m & 0x80000000u)) checked_misuse(item);
    *w = (m + 1) & 0x7FFFFFFFu;
    bare_free(&l->list, item);
}

/* cap slots of item_size bytes (a power of two), linked first to last. */
static void checked_init(checked_list *l, size_t item_size, size_t cap, bool colour) {
    memset(l, 0, sizeof *l);
    size_t stride = item_size < sizeof(void *) ? sizeof(void *) : item_size;
    while (((size_t)1 << l->shift) < stride) l->shift++;
    stride = (size_t)1 << l->shift;
    /* The meta words of a full chunk and room for every colour before the
     * slots, whichever layout: both rows hold the same items per chunk. */
    size_t per = (CHECKED_CHUNK - CHECKED_COLOURS * 64) / (stride + 4);
    l->slots_off = (uint32_t)((CHECKED_COLOURS * 64 + per * 4 + stride - 1) & ~(stride - 1));
    per = (CHECKED_CHUNK - l->slots_off) / stride;
    l->colour_mask = colour ? CHECKED_COLOURS - 1 : 0;
    size_t chunks = (cap + per - 1) / per;
    l->region_bytes = chunks * CHECKED_CHUNK;
    l->region = aligned_alloc(CHECKED_CHUNK, l->region_bytes);
    if (!l->region) bench_die("churn: checked free list: no %zu bytes", l->region_bytes);
    memset(l->region, 0, l->region_bytes);
    l->recs = bench_xmalloc(chunks * sizeof *l->recs);
    memset(l->recs, 0, chunks * sizeof *l->recs);
    size_t dm_n = 64;
    while (dm_n < chunks * 4) dm_n *= 2;
    l->dm = bench_xmalloc(dm_n * sizeof *l->dm);
    memset(l->dm, 0, dm_n * sizeof *l->dm);
    l->dm_mask = (uint32_t)(dm_n - 1);
    for (size_t c = 0; c < chunks; c++) {
        uintptr_t base = (uintptr_t)(l->region + c * CHECKED_CHUNK);
        l->recs[c].bump = (uint32_t)(c + 1 < chunks ? per : cap - c * per);
        l->dm[(base >> 16) & l->dm_mask] = (checked_dm){base, &l->recs[c]};
    }
    for (size_t i = cap; i-- > 0;) {
        uint8_t *item = l->region + (i / per) * CHECKED_CHUNK + l->slots_off + (i % per) * stride;
        *checked_meta(l, item) = 0x80000000u; /* as if allocated, then freed below */
        checked_free(l, item);
    }
}

CHURN_LIST_LOOPS(checked, checked_list, checked_alloc, checked_free)
CHURN_LIST_LOOPS(checked_lookup, checked_list, checked_alloc, checked_free_lookup)

static void checked_close(checked_list *l) {
    size_t got = bare_count(&l->list);
    if (got != CHURN_LIVE)
        bench_die("churn: checked free list holds %zu slots after the run, expected %d", got,
                  CHURN_LIVE);
    free(l->region);
    free(l->recs);
    free(l->dm);
}

static BENCH_NOINLINE uint64_t pairs_unchecked(eng_classic_pool *pool, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = eng_classic_pool_alloc(pool);
        if (!p) alloc_failed("eng_classic_pool_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        eng_classic_pool_free(pool, p);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t random_unchecked(eng_classic_pool *pool, void **live,
                                                const uint32_t *idx, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = idx[i];
        eng_classic_pool_free(pool, live[j]);
        unsigned char *p = eng_classic_pool_alloc(pool);
        if (!p) alloc_failed("eng_classic_pool_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        live[j] = p;
    }
    return fm_clock_now() - t0;
}

/* ------------------------------------------------------------ one run */

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

/* Typical distance between neighbouring live malloc'd items: item size plus
 * glibc's per-chunk header and rounding. */
static uint64_t malloc_step(void **live, size_t n) {
    void **sorted = bench_xmalloc(n * sizeof *sorted);
    memcpy(sorted, live, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_ptr);
    uint64_t *steps = bench_xmalloc(n * sizeof *steps);
    for (size_t i = 1; i < n; i++)
        steps[i - 1] = (uint64_t)((uintptr_t)sorted[i] - (uintptr_t)sorted[i - 1]);
    uint64_t step = bench_median_u64(steps, n - 1);
    free(steps);
    free(sorted);
    return step;
}

/* One allocator of one run: whichever the variant names. */
typedef struct churn_alloc {
    churn_kind kind;
    size_t item_size;
    fm_pool *pool;
    eng_classic_pool *unchecked;
    bare_list bare;
    checked_list checked;
} churn_alloc;

static const char *kind_call(churn_kind k) {
    switch (k) {
    case CHURN_FM_POOL: return "fm_pool_alloc";
    case CHURN_UNCHECKED: return "eng_classic_pool_alloc";
    case CHURN_BARE: return "bare_alloc";
    case CHURN_CHECKED:
    case CHURN_CHECKED_COLOUR:
    case CHURN_CHECKED_LOOKUP: return "checked_alloc";
    case CHURN_MALLOC: break;
    }
    return "malloc";
}

static void churn_alloc_open(churn_alloc *a, const churn_variant *v) {
    memset(a, 0, sizeof *a);
    a->kind = v->kind;
    a->item_size = v->item_size;
    switch (v->kind) {
    case CHURN_FM_POOL: a->pool = churn_pool_create(v->item_size); break;
    case CHURN_UNCHECKED:
        a->unchecked = eng_classic_pool_create(v->item_size, 0);
        if (!a->unchecked) alloc_failed("eng_classic_pool_create");
        break;
    case CHURN_BARE: bare_init(&a->bare, v->item_size, CHURN_LIVE); break;
    case CHURN_CHECKED:
    case CHURN_CHECKED_COLOUR:
    case CHURN_CHECKED_LOOKUP:
        checked_init(&a->checked, v->item_size, CHURN_LIVE, v->kind == CHURN_CHECKED_COLOUR);
        break;
    case CHURN_MALLOC: break;
    }
}

/* Untimed alloc and free for the pre-fill and the teardown. */
static void *churn_alloc_one(churn_alloc *a) {
    void *p = NULL;
    switch (a->kind) {
    case CHURN_FM_POOL: p = fm_pool_alloc(a->pool); break;
    case CHURN_UNCHECKED: p = eng_classic_pool_alloc(a->unchecked); break;
    case CHURN_BARE: p = a->bare.head ? bare_alloc(&a->bare) : NULL; break;
    case CHURN_CHECKED:
    case CHURN_CHECKED_COLOUR:
    case CHURN_CHECKED_LOOKUP: p = a->checked.list.head ? checked_alloc(&a->checked) : NULL; break;
    case CHURN_MALLOC: p = malloc(a->item_size); break;
    }
    if (!p) alloc_failed(kind_call(a->kind));
    return p;
}

static void churn_free_one(churn_alloc *a, void *p) {
    switch (a->kind) {
    case CHURN_FM_POOL: fm_pool_free(a->pool, p); break;
    case CHURN_UNCHECKED: eng_classic_pool_free(a->unchecked, p); break;
    case CHURN_BARE: bare_free(&a->bare, p); break;
    case CHURN_CHECKED:
    case CHURN_CHECKED_COLOUR:
    case CHURN_CHECKED_LOOKUP: checked_free(&a->checked, p); break;
    case CHURN_MALLOC: free(p); break;
    }
}

static uint64_t churn_timed(churn_alloc *a, churn_pattern pattern, void **live,
                            const uint32_t *idx, uint32_t n) {
    if (pattern == CHURN_PAIRS) {
        switch (a->kind) {
        case CHURN_FM_POOL: return pairs_pool(a->pool, n);
        case CHURN_UNCHECKED: return pairs_unchecked(a->unchecked, n);
        case CHURN_BARE: return pairs_bare(&a->bare, n);
        case CHURN_CHECKED:
        case CHURN_CHECKED_COLOUR: return pairs_checked(&a->checked, n);
        case CHURN_CHECKED_LOOKUP: return pairs_checked_lookup(&a->checked, n);
        case CHURN_MALLOC: break;
        }
        return bench_loop_pairs(a->item_size, n);
    }
    switch (a->kind) {
    case CHURN_FM_POOL: return random_pool(a->pool, live, idx, n);
    case CHURN_UNCHECKED: return random_unchecked(a->unchecked, live, idx, n);
    case CHURN_BARE: return random_bare(&a->bare, live, idx, n);
    case CHURN_CHECKED:
    case CHURN_CHECKED_COLOUR: return random_checked(&a->checked, live, idx, n);
    case CHURN_CHECKED_LOOKUP: return random_checked_lookup(&a->checked, live, idx, n);
    case CHURN_MALLOC: break;
    }
    return bench_loop_random(a->item_size, live, idx, n);
}

/* Checks that every item came back, then releases the allocator. */
static void churn_alloc_close(churn_alloc *a, const churn_variant *v) {
    switch (a->kind) {
    case CHURN_FM_POOL: {
        fm_pool_stats st;
        fm_pool_get_stats(a->pool, &st);
        if (st.live != 0 || st.misuse_count != 0)
            bench_die("churn: pool stats wrong after the run: live %llu, misuse_count %llu",
                      (unsigned long long)st.live, (unsigned long long)st.misuse_count);
        fm_pool_destroy(a->pool);
        break;
    }
    case CHURN_UNCHECKED: {
        /* Pairs never grow past the first block of 32; random grows to
         * 32 + 64 + ... >= 10,000. Every slot must be back on the list. */
        size_t cap = 0;
        for (uint64_t s = 32; cap < (v->pattern == CHURN_PAIRS ? 1 : CHURN_LIVE); s <<= 1)
            cap += (size_t)s;
        size_t got = eng_classic_pool_free_count(a->unchecked);
        if (got != cap)
            bench_die("churn: unchecked pool holds %zu free slots after the run, expected %zu",
                      got, cap);
        eng_classic_pool_destroy(a->unchecked);
        break;
    }
    case CHURN_BARE: {
        size_t got = bare_count(&a->bare);
        if (got != CHURN_LIVE)
            bench_die("churn: bare free list holds %zu slots after the run, expected %d", got,
                      CHURN_LIVE);
        free(a->bare.slots);
        break;
    }
    case CHURN_CHECKED:
    case CHURN_CHECKED_COLOUR:
    case CHURN_CHECKED_LOOKUP: checked_close(&a->checked); break;
    case CHURN_MALLOC: break;
    }
}

/* Nanoseconds per pair (or per free+alloc step) of one run. */
static double churn_once(const churn_variant *v, uint32_t n, const uint32_t *idx, void **live,
                         churn_overhead *overhead) {
    uint32_t warm = n / 100 < 1000 ? 1000 : n / 100;
    if (warm > n) warm = n;
    churn_alloc a;
    churn_alloc_open(&a, v);

    if (v->pattern == CHURN_RANDOM) {
        for (uint32_t j = 0; j < CHURN_LIVE; j++) {
            unsigned char *p = churn_alloc_one(&a);
            p[0] = (unsigned char)j;
            live[j] = p;
        }
        if (overhead) {
            if (v->kind == CHURN_FM_POOL)
                fm_pool_get_stats(a.pool, &overhead->pool);
            else if (v->kind == CHURN_MALLOC)
                overhead->malloc_step = malloc_step(live, CHURN_LIVE);
        }
    }
    churn_timed(&a, v->pattern, live, idx, warm);
    uint64_t ticks = churn_timed(&a, v->pattern, live, idx, n);
    if (v->pattern == CHURN_RANDOM)
        for (uint32_t j = 0; j < CHURN_LIVE; j++) churn_free_one(&a, live[j]);
    churn_alloc_close(&a, v);
    return (double)fm_clock_to_ns(ticks) / (double)n;
}

/* ------------------------------------------------------------- report */

static const char *pattern_name(churn_pattern p) {
    return p == CHURN_PAIRS ? "alloc+free pairs" : "random free, 10,000 live";
}

static void print_overhead(const churn_overhead ov[2]) {
    static const size_t sizes[2] = {16, 1024};
    printf("\n### churn: memory per item (after pre-filling %d live items)\n\n", CHURN_LIVE);
    printf("| allocator | item | capacity | bytes_reserved | bytes_overhead | overhead bytes/item |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int s = 0; s < 2; s++) {
        const fm_pool_stats *st = &ov[s].pool;
        if (ov[s].pool.capacity)
            printf("| fm_pool | %zu B | %llu | %llu | %llu | %.2f |\n", sizes[s],
                   (unsigned long long)st->capacity, (unsigned long long)st->bytes_reserved,
                   (unsigned long long)st->bytes_overhead,
                   (double)st->bytes_overhead / (double)st->capacity);
        if (ov[s].malloc_step)
            printf("| glibc malloc | %zu B | - | - | - | %lld (address step %llu B) |\n",
                   sizes[s], (long long)ov[s].malloc_step - (long long)sizes[s],
                   (unsigned long long)ov[s].malloc_step);
    }
    const fm_pool_stats *st = &ov[0].pool;
    if (st->capacity)
        printf("\nfm_pool 16 B: bytes_overhead / capacity = %llu / %llu = %.2f bytes/item "
               "(stride %llu, chunk_bytes %llu, %llu items/chunk); target <= 8; "
               "glibc malloc(16) measured: %lld bytes/item\n",
               (unsigned long long)st->bytes_overhead, (unsigned long long)st->capacity,
               (double)st->bytes_overhead / (double)st->capacity,
               (unsigned long long)st->stride, (unsigned long long)st->chunk_bytes,
               (unsigned long long)st->items_per_chunk,
               (long long)ov[0].malloc_step - 16);
}

/* The variant of kind k in v's group (same item size, same pattern). */
static int churn_twin(int v, churn_kind k) {
    const churn_variant *cv = &churn_variants[v];
    for (int w = 0; w < CHURN_VARIANTS; w++) {
        const churn_variant *cw = &churn_variants[w];
        if (cw->kind == k && cw->item_size == cv->item_size && cw->pattern == cv->pattern)
            return w;
    }
    bench_die("churn: variant table has no %s twin for variant %d", kind_call(k), v);
}

/* Issue 22's random-free target, per item size, from this run: fm_pool
 * against the fastest general-purpose allocator (glibc, mimalloc, jemalloc,
 * tcmalloc; Boost's pools check nothing), beside the checked free lists
 * (the physical limit of a free that checks, in fm_pool's layout and
 * coloured) and the bare one. */
static void print_random_targets(const double *med, const bench_peer_set *peers) {
    static const char *const general[] = {"mimalloc", "jemalloc", "tcmalloc"};
    printf("\n### churn: issue 22 target, random free with 10,000 live (same run)\n\n");
    printf("| item | fm_pool ns | fastest general-purpose allocator | its ns | verdict | checked "
           "list, fm_pool's layout | checked list, coloured | checked list, fm_pool's lookup "
           "and bound | bare free list |\n");
    printf("|---:|---:|---|---:|---|---:|---:|---:|---:|\n");
    for (int v = 0; v < CHURN_VARIANTS; v++) {
        const churn_variant *cv = &churn_variants[v];
        if (cv->pattern != CHURN_RANDOM || cv->kind != CHURN_FM_POOL) continue;
        int m = churn_twin(v, CHURN_MALLOC);
        const char *best_name = CHURN_NAME_MALLOC;
        double best = med[m];
        char key[32];
        snprintf(key, sizeof key, "%zu random", cv->item_size);
        for (size_t p = 0; p < peers->n; p++) {
            if (strcmp(peers->s[p].key, key) != 0) continue;
            bool gp = false;
            for (size_t g = 0; g < sizeof general / sizeof general[0]; g++)
                gp |= strncmp(peers->s[p].variant, general[g], strlen(general[g])) == 0;
            if (!gp) continue;
            double pm, lo, hi;
            bench_series_stats(&peers->s[p], 0, &pm, &lo, &hi);
            if (pm < best) best = pm, best_name = peers->s[p].variant;
        }
        double chk = med[churn_twin(v, CHURN_CHECKED)];
        double col = med[churn_twin(v, CHURN_CHECKED_COLOUR)];
        double lkp = med[churn_twin(v, CHURN_CHECKED_LOOKUP)];
        printf("| %zu B | %.2f | %s | %.2f | %s | %.2f | %.2f | %.2f | %.2f |\n", cv->item_size,
               med[v], best_name, best, med[v] <= best ? "met" : "NOT MET", chk, col, lkp,
               med[churn_twin(v, CHURN_BARE)]);
    }
    printf("\nThe checked lists free and allocate as fm_pool does in this pattern (the item's "
           "line and its meta word's line, a region and a live check) and nothing more: "
           "their gap is what the placement of chunk metadata costs, fm_pool's gap to the "
           "one in its own layout what its other work costs. The third has fm_pool's "
           "chunk lookup (a direct-mapped table of chunk bases) and bump bound (a 64-byte "
           "record per chunk) instead of the region's bounds: the physical limit of a free "
           "with fm_pool's checks.\n");
}

void churn_run(const bench_opts *opts) {
    uint32_t n = opts->quick ? 100000 : 1000000;
    int repeat = bench_repeat(opts);
    bench_peer_set peers = {0};

    uint32_t *idx = bench_xmalloc((size_t)n * sizeof *idx);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < n; i++) idx[i] = (uint32_t)(bench_xorshift64(&rng) % CHURN_LIVE);
    void **live = bench_xmalloc(CHURN_LIVE * sizeof *live);
    double *ns = bench_xmalloc((size_t)CHURN_VARIANTS * (size_t)repeat * sizeof *ns);
    churn_overhead overhead[2];
    memset(overhead, 0, sizeof overhead);

    for (int r = 0; r < repeat; r++) {
        for (int v = 0; v < CHURN_VARIANTS; v++) {
            const churn_variant *cv = &churn_variants[v];
            churn_overhead *ov = r == 0 && cv->pattern == CHURN_RANDOM &&
                                         (cv->kind == CHURN_FM_POOL || cv->kind == CHURN_MALLOC)
                                     ? &overhead[cv->item_size > 16]
                                     : NULL;
            ns[v * repeat + r] = churn_once(cv, n, idx, live, ov);
        }
        bench_peers_round(opts, "churn", &peers);
    }

    double med[CHURN_VARIANTS];
    for (int v = 0; v < CHURN_VARIANTS; v++)
        med[v] = bench_median(&ns[v * repeat], (size_t)repeat); /* sorts the runs */

    printf("\n## churn\n\n");
    printf("%u operations per run, median of %d runs, variants interleaved run by run. "
           "fm_pool: FM_SYNC_NONE, geometric growth, default initial capacity, inline fast "
           "path with its checks and counters. Unchecked pool: engine/classic_pool.h, Boost pool<>'s "
           "algorithm (malloc'd blocks from 32 items, doubling, every slot linked in when "
           "the block is added), inline pop/push, no checks. Bare free list: an intrusive "
           "singly linked list over one preallocated array of %d slots, inline pop/push, "
           "no checks, no counters, no NULL test: the lower bound of any pool. "
           "Every item gets one byte written; an asm barrier keeps each alloc/free. "
           "Peers (mimalloc, jemalloc, tcmalloc, Boost.Pool) run the same loops in their "
           "own processes (fm-bench-peer-*, fm-bench-boost), one run per round between "
           "fm-bench's own runs. Ratio = variant time / malloc time (same item, same pattern, same run set; "
           "below 1 is faster).\n\n",
           n, repeat, CHURN_LIVE);
    printf("| variant | item | pattern | ns/pair | min | max | ratio vs malloc |\n");
    printf("|---|---:|---|---:|---:|---:|---:|\n");
    for (int v = 0; v < CHURN_VARIANTS; v++) {
        const churn_variant *cv = &churn_variants[v];
        const double *runs = &ns[v * repeat];
        double base = med[churn_twin(v, CHURN_MALLOC)];
        printf("| %s | %zu B | %s | %.2f | %.2f | %.2f | %.2f |\n", cv->name, cv->item_size,
               pattern_name(cv->pattern), med[v], runs[0], runs[repeat - 1], med[v] / base);
        if (cv->kind != CHURN_MALLOC) continue;
        /* The group's peer rows, right after its malloc row. */
        char key[32];
        snprintf(key, sizeof key, "%zu %s", cv->item_size,
                 cv->pattern == CHURN_PAIRS ? "pairs" : "random");
        for (size_t p = 0; p < peers.n; p++) {
            if (strcmp(peers.s[p].key, key) != 0) continue;
            double pm, lo, hi;
            bench_series_stats(&peers.s[p], 0, &pm, &lo, &hi);
            printf("| %s | %zu B | %s | %.2f | %.2f | %.2f | %.2f |\n", peers.s[p].variant,
                   cv->item_size, pattern_name(cv->pattern), pm, lo, hi, pm / base);
        }
    }

    /* The 16-byte pairs group: how far each pool is from the lower bound. */
    int m16 = churn_twin(0, CHURN_MALLOC), b16 = churn_twin(0, CHURN_BARE);
    int u16 = churn_twin(0, CHURN_UNCHECKED), f16 = churn_twin(0, CHURN_FM_POOL);
    printf("\n16 B alloc+free pairs, x faster than malloc (malloc ns/pair / variant ns/pair): "
           "%s %.2fx, %s %.2fx, %s %.2fx (lower bound)\n",
           CHURN_NAME_FM_POOL, med[m16] / med[f16], CHURN_NAME_UNCHECKED, med[m16] / med[u16],
           CHURN_NAME_BARE, med[m16] / med[b16]);
    printf("fm_pool vs the bare free list, 16 B pairs: %.2f / %.2f ns = %.2fx, +%.2f ns per "
           "pair for its checks and counters\n",
           med[f16], med[b16], med[f16] / med[b16], med[f16] - med[b16]);
    print_random_targets(med, &peers);
    print_overhead(overhead);

    if (opts->csv_dir) {
        fm_file_writer *f = bench_csv_open(opts->csv_dir, "churn.csv");
        fm_file_printf(f, "variant,item_size,pattern,runs,median_ns_per_pair\n");
        for (int v = 0; v < CHURN_VARIANTS; v++)
            fm_file_printf(f, "%s,%zu,%s,%d,%.3f\n", churn_variants[v].name,
                    churn_variants[v].item_size,
                    churn_variants[v].pattern == CHURN_PAIRS ? "pairs" : "random", repeat,
                    med[v]);
        for (size_t p = 0; p < peers.n; p++) {
            double pm, lo, hi;
            bench_series_stats(&peers.s[p], 0, &pm, &lo, &hi);
            size_t size = (size_t)strtoul(peers.s[p].key, NULL, 10);
            fm_file_printf(f, "%s,%zu,%s,%d,%.3f\n", peers.s[p].variant, size,
                    strchr(peers.s[p].key, ' ') ? strchr(peers.s[p].key, ' ') + 1 : "?",
                    peers.s[p].rounds, pm);
        }
        bench_csv_close(f);
        printf("\nwrote %s/churn.csv\n", opts->csv_dir);
    }
    bench_peer_set_free(&peers);
    free(ns);
    free(live);
    free(idx);
}

/* ------------------------------------------------------- callgrind mode */

/* The loops tools/fm-callgrind measures, each the body of pairs_pool /
 * bench_loop_pairs (alloc_loops.h) minus the clock:
 * - pool_pairs: fm_pool_alloc/fm_pool_free as a caller writes them (the
 *   header's inline fast path in optimised builds);
 * - pool_call_pairs: (fm_pool_alloc)(...), the library's out-of-line
 *   functions, whose calls callgrind can attribute;
 * - malloc_pairs: malloc/free;
 * - bare_pairs: the bare free list, inlined (the lower bound);
 * - unchecked_pairs: the unchecked pool (Boost pool<> style), inlined;
 * - empty_pairs: the loop's skeleton (counter, byte write) with no allocator,
 *   so the script can subtract it from a loop whose allocator was inlined;
 *   the null check of an allocator's result stays on the allocator's side. */
static unsigned char cg_buffer[16];

static BENCH_NOINLINE void fm_bench_cg_pool_pairs(fm_pool *pool, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_pool_alloc(pool);
        if (!p) alloc_failed("fm_pool_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        fm_pool_free(pool, p);
    }
}

static BENCH_NOINLINE void fm_bench_cg_pool_call_pairs(fm_pool *pool, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = (fm_pool_alloc)(pool);
        if (!p) alloc_failed("fm_pool_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        (fm_pool_free)(pool, p);
    }
}

/* Batches of CG_BATCH: fm_pool_alloc_n, a byte written into each item,
 * fm_pool_free_n in allocation order (one run of one chunk, the best case;
 * fm-bench's batch experiment times scattered batches). */
enum { CG_BATCH = 64 };
static BENCH_NOINLINE void fm_bench_cg_pool_batch_pairs(fm_pool *pool, uint32_t n) {
    void *items[CG_BATCH];
    for (uint32_t i = 0; i < n; i += CG_BATCH) {
        uint32_t k = n - i < CG_BATCH ? n - i : CG_BATCH;
        if (fm_pool_alloc_n(pool, items, k) != k) alloc_failed("fm_pool_alloc_n");
        for (uint32_t j = 0; j < k; j++) ((unsigned char *)items[j])[0] = (unsigned char)j;
        BENCH_ESCAPE(items);
        fm_pool_free_n(pool, items, k);
    }
}

static BENCH_NOINLINE void fm_bench_cg_malloc_pairs(uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = malloc(16);
        if (!p) alloc_failed("malloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        free(p);
    }
}

static BENCH_NOINLINE void fm_bench_cg_bare_pairs(bare_list *l, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = bare_alloc(l);
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        bare_free(l, p);
    }
}

static BENCH_NOINLINE void fm_bench_cg_unchecked_pairs(eng_classic_pool *pool, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = eng_classic_pool_alloc(pool);
        if (!p) alloc_failed("eng_classic_pool_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        eng_classic_pool_free(pool, p);
    }
}

static BENCH_NOINLINE void fm_bench_cg_empty_pairs(uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = cg_buffer;
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
}

int churn_callgrind(uint32_t pairs) {
    fm_pool *pool = churn_pool_create(16);
    bare_list bare;
    bare_init(&bare, 16, 64);
    eng_classic_pool *unchecked = eng_classic_pool_create(16, 0);
    if (!unchecked) alloc_failed("eng_classic_pool_create");
    /* Warm every allocator (first chunk, malloc's arena and tcache, lazy PLT
     * binding) outside the measured functions. */
    pairs_pool(pool, 1);
    void *p = (fm_pool_alloc)(pool);
    (fm_pool_free)(pool, p);
    p = malloc(16);
    BENCH_ESCAPE(p);
    free(p);
    pairs_bare(&bare, 1);
    pairs_unchecked(unchecked, 1);

    fm_bench_cg_empty_pairs(pairs);
    fm_bench_cg_pool_pairs(pool, pairs);
    fm_bench_cg_pool_call_pairs(pool, pairs);
    fm_bench_cg_pool_batch_pairs(pool, pairs);
    fm_bench_cg_malloc_pairs(pairs);
    fm_bench_cg_bare_pairs(&bare, pairs);
    fm_bench_cg_unchecked_pairs(unchecked, pairs);

    fm_pool_stats st;
    fm_pool_get_stats(pool, &st);
    fm_pool_destroy(pool);
    size_t bare_slots = bare_count(&bare), unchecked_slots = eng_classic_pool_free_count(unchecked);
    free(bare.slots);
    eng_classic_pool_destroy(unchecked);
    printf("callgrind-churn: %u pairs of 16-byte items through fm_pool as callers compile "
           "it, fm_pool's out-of-line functions, fm_pool_alloc_n/free_n in batches of 64, "
           "malloc/free, the bare free list, the "
           "unchecked pool and an empty loop; pool total_allocs %llu, bare list %zu of 64 "
           "slots back, unchecked pool %zu of 32\n",
           pairs, (unsigned long long)st.total_allocs, bare_slots, unchecked_slots);
    return st.total_allocs == 3 * (uint64_t)pairs + 2 && st.live == 0 && bare_slots == 64 &&
                   unchecked_slots == 32
               ? 0
               : 1;
}
