/*
 * fm_bench/batch.c: particles without the engine: fm_pool_alloc_n and
 * fm_pool_free_n against one call per item, and against malloc/free.
 *
 * 20,000 live 32-byte items (2,000 with --quick), kept in a list in birth
 * order; each lives 6 to 14 frames (fixed random sequence). Each frame walks
 * the list, gathers the dead in list order and keeps the rest, frees the dead
 * (one timed loop), then allocates as many new items as died (one timed
 * loop) and writes each one, appended to the list: the frees are scattered
 * over the pool the way a particle system's are, and the births come in a
 * batch. 300 frames; the first 100 warm up (the list reaches its steady age
 * mix) and are not counted. Pools are created with room for every item
 * (initial_capacity 25,000, prefault), so no growth is timed.
 *
 * Variants: fm_pool FM_SYNC_NONE one call per item (pool.h's inline paths)
 * and batched; FM_SYNC_MUTEX one call per item (a lock each) and batched (a
 * lock per batch); glibc malloc/free. Figures: ns per allocation and per
 * free, medians over the runs of each run's totals; ratio = malloc's
 * alloc+free ns / the variant's.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "framemem/clock.h"
#include "framemem/pool.h"

static const struct {
    const char *name;
    bench_calls calls;
    fm_sync sync;
} batch_variants[] = {
    {"fm_pool NONE, fm_pool_alloc / fm_pool_free per item", BENCH_CALLS_SINGLE, FM_SYNC_NONE},
    {"fm_pool NONE, fm_pool_alloc_n / fm_pool_free_n", BENCH_CALLS_BATCHED, FM_SYNC_NONE},
    {"fm_pool MUTEX, fm_pool_alloc / fm_pool_free per item", BENCH_CALLS_SINGLE, FM_SYNC_MUTEX},
    {"fm_pool MUTEX, fm_pool_alloc_n / fm_pool_free_n", BENCH_CALLS_BATCHED, FM_SYNC_MUTEX},
    {"glibc malloc / free per item", BENCH_CALLS_MALLOC, FM_SYNC_NONE},
};
enum { BATCH_VARIANTS = sizeof batch_variants / sizeof batch_variants[0] };
enum { BATCH_ITEM = 32, BATCH_FRAMES = 300, BATCH_WARMUP = 100 };

typedef struct batch_item {
    uint32_t dies; /* frame of death */
    uint8_t pad[BATCH_ITEM - sizeof(uint32_t)];
} batch_item;

/* The frames' calls. The CLOCKED ones add the caller's own clock readings
 * around each call or batch to *clocked. */
static BENCH_NOINLINE void batch_free(bench_calls calls, fm_pool *pool, void **dead, uint32_t n,
                                      uint64_t *clocked) {
    switch (calls) {
    case BENCH_CALLS_BATCHED:
        fm_pool_free_n(pool, dead, n);
        break;
    case BENCH_CALLS_BATCHED_CLOCKED: {
        uint64_t t0 = fm_clock_now();
        fm_pool_free_n(pool, dead, n);
        *clocked += fm_clock_now() - t0;
        break;
    }
    case BENCH_CALLS_SINGLE:
        for (uint32_t i = 0; i < n; i++) fm_pool_free(pool, dead[i]);
        break;
    case BENCH_CALLS_SINGLE_LIBRARY:
        for (uint32_t i = 0; i < n; i++) (fm_pool_free)(pool, dead[i]);
        break;
    case BENCH_CALLS_SINGLE_CLOCKED:
        for (uint32_t i = 0; i < n; i++) {
            uint64_t t0 = fm_clock_now();
            fm_pool_free(pool, dead[i]);
            *clocked += fm_clock_now() - t0;
        }
        break;
    case BENCH_CALLS_MALLOC:
        for (uint32_t i = 0; i < n; i++) free(dead[i]);
        break;
    }
}

static BENCH_NOINLINE void batch_alloc(bench_calls calls, fm_pool *pool, void **out, uint32_t n,
                                       uint64_t *clocked) {
    uint64_t t0;
    switch (calls) {
    case BENCH_CALLS_BATCHED:
    case BENCH_CALLS_BATCHED_CLOCKED:
        t0 = fm_clock_now();
        if (fm_pool_alloc_n(pool, out, n) != n)
            bench_die("batch: fm_pool_alloc_n gave fewer than %u items (%s)", n,
                      fm_last_error_message());
        if (calls == BENCH_CALLS_BATCHED_CLOCKED) *clocked += fm_clock_now() - t0;
        break;
    case BENCH_CALLS_SINGLE:
        for (uint32_t i = 0; i < n; i++)
            if (!(out[i] = fm_pool_alloc(pool)))
                bench_die("batch: fm_pool_alloc returned NULL (%s)", fm_last_error_message());
        break;
    case BENCH_CALLS_SINGLE_LIBRARY:
        for (uint32_t i = 0; i < n; i++)
            if (!(out[i] = (fm_pool_alloc)(pool)))
                bench_die("batch: fm_pool_alloc returned NULL (%s)", fm_last_error_message());
        break;
    case BENCH_CALLS_SINGLE_CLOCKED:
        for (uint32_t i = 0; i < n; i++) {
            t0 = fm_clock_now();
            out[i] = fm_pool_alloc(pool);
            *clocked += fm_clock_now() - t0;
            if (!out[i]) bench_die("batch: fm_pool_alloc returned NULL (%s)", fm_last_error_message());
        }
        break;
    case BENCH_CALLS_MALLOC:
        for (uint32_t i = 0; i < n; i++)
            if (!(out[i] = malloc(BATCH_ITEM))) bench_die("batch: malloc returned NULL");
        break;
    }
}

/* What the pool timed so far: ns inside its calls, and the calls timed. */
static void batch_pool_timed(const fm_pool *pool, uint64_t *ns, uint64_t *calls) {
    fm_pool_stats st;
    fm_pool_get_stats(pool, &st);
    *ns = st.alloc_ns_total + st.free_ns_total;
    *calls = st.timed_calls;
}

bench_particles bench_particles_run(bench_calls calls, fm_sync sync, fm_pool_timing timing,
                                    uint32_t live) {
    fm_pool *pool = NULL;
    if (calls != BENCH_CALLS_MALLOC) {
        pool = fm_pool_create(&(fm_pool_desc){.name = "batch",
                                              .item_size = sizeof(batch_item),
                                              .initial_capacity = live + live / 4,
                                              .prefault = true,
                                              .sync = sync,
                                              .timing = timing});
        if (!pool) bench_die("batch: fm_pool_create: %s", fm_last_error_message());
    }
    void **list = bench_xmalloc(2 * (size_t)live * sizeof *list);
    void **next = bench_xmalloc(2 * (size_t)live * sizeof *next);
    void **dead = bench_xmalloc(2 * (size_t)live * sizeof *dead);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    uint64_t clocked = 0, clocked_warmup = 0, timed_warmup = 0, calls_warmup = 0;
    /* The first generation, born at once with lives spread over 1..14
     * frames so deaths start at a steady rate. */
    batch_alloc(calls, pool, list, live, &clocked);
    for (uint32_t i = 0; i < live; i++)
        ((batch_item *)list[i])->dies = 1 + (uint32_t)(bench_xorshift64(&rng) % 14);
    uint32_t n = live;
    uint64_t alloc_ticks = 0, free_ticks = 0, counted = 0;
    for (uint32_t f = 1; f <= BATCH_FRAMES; f++) {
        if (f == BATCH_WARMUP + 1) { /* what the counted frames' timing starts from */
            clocked_warmup = clocked;
            if (pool) batch_pool_timed(pool, &timed_warmup, &calls_warmup);
        }
        uint32_t n_dead = 0, kept = 0;
        for (uint32_t i = 0; i < n; i++) {
            batch_item *it = list[i];
            if (it->dies <= f) dead[n_dead++] = it;
            else next[kept++] = it;
        }
        uint64_t t0 = fm_clock_now();
        batch_free(calls, pool, dead, n_dead, &clocked);
        uint64_t t1 = fm_clock_now();
        batch_alloc(calls, pool, next + kept, n_dead, &clocked);
        uint64_t t2 = fm_clock_now();
        for (uint32_t i = kept; i < kept + n_dead; i++)
            ((batch_item *)next[i])->dies = f + 6 + (uint32_t)(bench_xorshift64(&rng) % 9);
        if (f > BATCH_WARMUP) {
            free_ticks += t1 - t0;
            alloc_ticks += t2 - t1;
            counted += n_dead;
        }
        n = kept + n_dead;
        void **t = list;
        list = next;
        next = t;
    }
    bench_particles r = {0};
    if (!counted) bench_die("batch: no item died in the counted frames");
    if (pool) {
        uint64_t ns, timed_calls;
        batch_pool_timed(pool, &ns, &timed_calls);
        r.timed_ns = (double)(ns - timed_warmup) / (double)counted;
        r.timed_calls = timed_calls - calls_warmup;
    }
    if (calls == BENCH_CALLS_SINGLE_CLOCKED || calls == BENCH_CALLS_BATCHED_CLOCKED)
        r.timed_ns = (double)fm_clock_to_ns(clocked - clocked_warmup) / (double)counted;
    batch_free(calls, pool, list, n, &clocked);
    if (pool) {
        fm_pool_stats st;
        fm_pool_get_stats(pool, &st);
        if (st.live != 0 || st.grow_events != 0)
            bench_die("batch: pool left %llu live and grew %llu times", (unsigned long long)st.live,
                      (unsigned long long)st.grow_events);
        fm_pool_destroy(pool);
    }
    free(list);
    free(next);
    free(dead);
    r.alloc_ns = (double)fm_clock_to_ns(alloc_ticks) / (double)counted;
    r.free_ns = (double)fm_clock_to_ns(free_ticks) / (double)counted;
    r.items = counted;
    return r;
}

void batch_run(const bench_opts *opts) {
    uint32_t live = opts->quick ? 2000 : 20000;
    int runs = bench_repeat(opts);
    printf("\n## batch: particles without the engine, batched vs one call per item\n\n");
    printf("%u live %d-byte items in a list in birth order, each living 6 to 14 frames; per "
           "frame the dead are gathered in list order and freed (one timed loop), then as many "
           "are allocated (one timed loop). %d frames, the first %d not counted; pools created "
           "with room for all (prefault). %d run(s) per variant, interleaved; medians.\n\n",
           live, BATCH_ITEM, BATCH_FRAMES, BATCH_WARMUP, runs);
    bench_particles *res = bench_xmalloc((size_t)runs * BATCH_VARIANTS * sizeof *res);
    for (int r = 0; r < runs; r++)
        for (int v = 0; v < BATCH_VARIANTS; v++)
            res[r * BATCH_VARIANTS + v] = bench_particles_run(
                batch_variants[v].calls, batch_variants[v].sync, FM_POOL_TIMING_OFF, live);
    double *a = bench_xmalloc((size_t)runs * sizeof *a), *fr = bench_xmalloc((size_t)runs * sizeof *fr);
    double med_alloc[BATCH_VARIANTS], med_free[BATCH_VARIANTS];
    for (int v = 0; v < BATCH_VARIANTS; v++) {
        for (int r = 0; r < runs; r++) {
            a[r] = res[r * BATCH_VARIANTS + v].alloc_ns;
            fr[r] = res[r * BATCH_VARIANTS + v].free_ns;
        }
        med_alloc[v] = bench_median(a, (size_t)runs);
        med_free[v] = bench_median(fr, (size_t)runs);
    }
    const int base = BATCH_VARIANTS - 1; /* malloc */
    double base_pair = med_alloc[base] + med_free[base];
    printf("| variant | ns/alloc | ns/free | ns/(alloc+free) | x faster than malloc |\n");
    printf("|---|---:|---:|---:|---:|\n");
    for (int v = 0; v < BATCH_VARIANTS; v++) {
        double pair = med_alloc[v] + med_free[v];
        printf("| %s | %.2f | %.2f | %.2f | %.2fx |\n", batch_variants[v].name, med_alloc[v],
               med_free[v], pair, base_pair / pair);
    }
    printf("\nBatching, NONE: one call per item / batched = %.2fx (alloc %.2fx, free %.2fx); "
           "MUTEX: %.2fx.\n",
           (med_alloc[0] + med_free[0]) / (med_alloc[1] + med_free[1]), med_alloc[0] / med_alloc[1],
           med_free[0] / med_free[1],
           (med_alloc[2] + med_free[2]) / (med_alloc[3] + med_free[3]));
    free(a);
    free(fr);
    free(res);
}
