/*
 * fm_bench/regrowth.c: what growth costs the allocation that triggers it.
 *
 * N allocations of a 1 KiB item, each zeroed right after allocation (a
 * memset of 1 KiB, as Boost object_pool's construct does) so page faults
 * count where they fall; each alloc+memset is timed on its own with
 * fm_clock. Variants: fm_pool with several initial capacities and growth
 * policies, the classic eager pool (eager_pool.h) and malloc itself. Pools
 * are created before the clock starts (creation is its own column) and
 * destroyed between variants.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif

#include "eager_pool.h"
#include "framemem/clock.h"
#include "framemem/pool.h"

enum {
    REGROW_ITEM = 1024,
    REGROW_BIG = 100000,       /* "initial capacity 100,000" and reserve(100,000) */
    REGROW_LINEAR_STEP = 1024, /* items added per LINEAR growth */
};

typedef enum regrow_kind { REGROW_FM_POOL, REGROW_EAGER, REGROW_MALLOC } regrow_kind;

typedef struct regrow_variant {
    const char *name;
    const char *slug; /* CSV file name */
    regrow_kind kind;
    uint32_t initial;
    fm_growth growth;
    uint32_t grow_step;
    bool reserve_prefault; /* desc.prefault, then fm_pool_reserve(REGROW_BIG) */
} regrow_variant;

static const regrow_variant regrow_variants[] = {
    {"fm_pool geometric, initial 1", "fm_pool_geometric_1", REGROW_FM_POOL, 1,
     FM_GROWTH_GEOMETRIC, 0, false},
    {"fm_pool geometric, initial 32", "fm_pool_geometric_32", REGROW_FM_POOL, 32,
     FM_GROWTH_GEOMETRIC, 0, false},
    {"fm_pool geometric, initial 100000", "fm_pool_geometric_100000", REGROW_FM_POOL,
     REGROW_BIG, FM_GROWTH_GEOMETRIC, 0, false},
    {"fm_pool linear +1024, initial 32", "fm_pool_linear_32", REGROW_FM_POOL, 32,
     FM_GROWTH_LINEAR, REGROW_LINEAR_STEP, false},
    {"fm_pool prefault, initial 32, reserve(100000)", "fm_pool_reserve_prefault", REGROW_FM_POOL, 32,
     FM_GROWTH_GEOMETRIC, 0, true},
    {"eager pool, initial 1", "eager_1", REGROW_EAGER, 1, FM_GROWTH_GEOMETRIC, 0, false},
    {"eager pool, initial 32", "eager_32", REGROW_EAGER, 32, FM_GROWTH_GEOMETRIC, 0, false},
    {"eager pool, initial 100000", "eager_100000", REGROW_EAGER, REGROW_BIG,
     FM_GROWTH_GEOMETRIC, 0, false},
    {"malloc(1024)", "malloc", REGROW_MALLOC, 0, FM_GROWTH_GEOMETRIC, 0, false},
};
enum { REGROW_VARIANTS = sizeof regrow_variants / sizeof regrow_variants[0] };
enum { V_FM_POOL_1 = 0, V_FM_POOL_32 = 1, V_FM_POOL_BIG = 2, V_EAGER_1 = 5, V_EAGER_32 = 6 };

/* Everything one run of one variant reports; all times in ns. */
typedef struct regrow_result {
    uint64_t create_ns;  /* fm_pool_create / eager_pool_create */
    uint64_t reserve_ns; /* fm_pool_reserve before the run (reserve variant) */
    bench_latency lat;
    uint64_t grow_ns;     /* growth during the timed allocations */
    uint64_t grow_ns_max; /* the slowest of those growths; UINT64_MAX: unknown */
    uint64_t grow_events; /* growths during the timed allocations */
    uint64_t minor_faults;
} regrow_result;

#define REGROW_FIELDS(X)                                                       \
    X(create_ns) X(reserve_ns) X(lat.median) X(lat.p99) X(lat.p999) X(lat.max) \
        X(lat.over_20x_median) X(grow_ns) X(grow_ns_max) X(grow_events) X(minor_faults)

/* ------------------------------------------------------------ one run */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, cold))
#endif
static void regrow_failed(const char *variant, const char *what) {
    bench_die("regrowth, %s: %s failed (%s: %s)", variant, what,
              fm_error_name(fm_last_error()), fm_last_error_message());
}

/* The timed loops: one per allocator so each is compiled on its own. */
static BENCH_NOINLINE void timed_pool(fm_pool *pool, uint32_t n, uint64_t *ticks, void **items,
                                      const char *variant) {
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t0 = fm_clock_now();
        void *p = fm_pool_alloc(pool);
        if (p) memset(p, 0, REGROW_ITEM);
        BENCH_ESCAPE(p);
        uint64_t t1 = fm_clock_now();
        if (!p) regrow_failed(variant, "fm_pool_alloc");
        ticks[i] = t1 - t0;
        items[i] = p;
    }
}

static BENCH_NOINLINE void timed_eager(eager_pool *pool, uint32_t n, uint64_t *ticks,
                                       void **items, const char *variant) {
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t0 = fm_clock_now();
        void *p = eager_pool_alloc(pool);
        if (p) memset(p, 0, REGROW_ITEM);
        BENCH_ESCAPE(p);
        uint64_t t1 = fm_clock_now();
        if (!p) regrow_failed(variant, "eager_pool_alloc");
        ticks[i] = t1 - t0;
        items[i] = p;
    }
}

static BENCH_NOINLINE void timed_malloc(uint32_t n, uint64_t *ticks, void **items,
                                        const char *variant) {
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t0 = fm_clock_now();
        void *p = malloc(REGROW_ITEM);
        if (p) memset(p, 0, REGROW_ITEM);
        BENCH_ESCAPE(p);
        uint64_t t1 = fm_clock_now();
        if (!p) regrow_failed(variant, "malloc");
        ticks[i] = t1 - t0;
        items[i] = p;
    }
}

static void run_fm_pool(const regrow_variant *v, uint32_t n, uint64_t *ticks, void **items,
                        regrow_result *out, fm_pool_stats *shape) {
    fm_pool_desc desc = {
        .name = v->slug,
        .item_size = REGROW_ITEM,
        .initial_capacity = v->initial,
        .growth = v->growth,
        .grow_step = v->grow_step,
        .prefault = v->reserve_prefault,
        .sync = FM_SYNC_NONE,
    };
    uint64_t t0 = fm_clock_now();
    fm_pool *pool = fm_pool_create(&desc);
    out->create_ns = fm_clock_to_ns(fm_clock_now() - t0);
    if (!pool) regrow_failed(v->name, "fm_pool_create");
    if (v->reserve_prefault) {
        t0 = fm_clock_now();
        bool ok = fm_pool_reserve(pool, REGROW_BIG);
        out->reserve_ns = fm_clock_to_ns(fm_clock_now() - t0);
        if (!ok) regrow_failed(v->name, "fm_pool_reserve");
    }

    fm_pool_stats before, after;
    fm_pool_get_stats(pool, &before);
    uint64_t faults = bench_minor_faults();
    timed_pool(pool, n, ticks, items, v->name);
    out->minor_faults = bench_minor_faults() - faults;
    fm_pool_get_stats(pool, &after);
    out->grow_ns = after.grow_ns_total - before.grow_ns_total;
    out->grow_events = after.grow_events - before.grow_events;
    /* grow_ns_max covers the pool's whole life: it is the run's only when
     * nothing grew before the run or the run beat the earlier maximum. */
    if (out->grow_events == 0)
        out->grow_ns_max = 0;
    else if (before.grow_events == 0 || after.grow_ns_max > before.grow_ns_max)
        out->grow_ns_max = after.grow_ns_max;
    else
        out->grow_ns_max = UINT64_MAX;
    if (after.live != n || after.total_allocs - before.total_allocs != n)
        bench_die("regrowth, %s: stats say live %llu, allocs %llu after %u allocations", v->name,
                  (unsigned long long)after.live,
                  (unsigned long long)(after.total_allocs - before.total_allocs), n);
    if (shape) *shape = after;

    for (uint32_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    fm_pool_destroy(pool);
}

static void run_eager(const regrow_variant *v, uint32_t n, uint64_t *ticks, void **items,
                      regrow_result *out) {
    uint64_t t0 = fm_clock_now();
    eager_pool *pool = eager_pool_create(REGROW_ITEM, v->initial);
    out->create_ns = fm_clock_to_ns(fm_clock_now() - t0);
    if (!pool) regrow_failed(v->name, "eager_pool_create");
    uint64_t faults = bench_minor_faults();
    timed_eager(pool, n, ticks, items, v->name);
    out->minor_faults = bench_minor_faults() - faults;
    out->grow_ns = fm_clock_to_ns(eager_pool_grow_ticks(pool));
    out->grow_ns_max = fm_clock_to_ns(eager_pool_grow_ticks_max(pool));
    out->grow_events = eager_pool_grow_events(pool);
    for (uint32_t i = 0; i < n; i++) eager_pool_free(pool, items[i]);
    eager_pool_destroy(pool);
}

static void run_malloc(const regrow_variant *v, uint32_t n, uint64_t *ticks, void **items,
                       regrow_result *out) {
    uint64_t faults = bench_minor_faults();
    timed_malloc(n, ticks, items, v->name);
    out->minor_faults = bench_minor_faults() - faults;
    for (uint32_t i = 0; i < n; i++) free(items[i]);
}

static void write_csv(const char *dir, const regrow_variant *v, const uint64_t *ns, uint32_t n) {
    char name[128];
    snprintf(name, sizeof name, "regrowth_%s.csv", v->slug);
    FILE *f = bench_csv_open(dir, name);
    fprintf(f, "index,ns\n");
    for (uint32_t i = 0; i < n; i++) fprintf(f, "%u,%llu\n", i, (unsigned long long)ns[i]);
    fclose(f);
}

/* Hands the heap's free pages back to the system so every variant starts
 * from fresh pages: without it malloc(1024) and the eager pool would reuse
 * pages an earlier variant faulted in, and the order of variants would
 * decide who pays the page faults. */
static void release_heap(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* ------------------------------------------------------------- report */

static void print_us(uint64_t ns) {
    printf(" %.1f |", (double)ns / 1000.0);
}

static void print_table(const regrow_result *res, uint32_t n, int repeat) {
    printf("\n## regrowth\n\n");
    printf("%u allocations of a %d-byte item, each zeroed (memset) right after allocation; "
           "alloc+memset timed one by one with fm_clock. %s"
           "fm_pool linear: initial 32, grow_step %d items. eager pool: Boost object_pool's "
           "algorithm (malloc'd blocks doubling from the initial size, every new slot linked "
           "into the free list at growth). Create and reserve run before the timed "
           "allocations; growth = time spent growing during them (fm_pool: stats.grow_ns_total; "
           "eager: fm_clock around each growth); faults = minor page faults during them. "
           "malloc_trim(0) runs before each variant so none inherits pages another faulted "
           "in.\n\n",
           n, REGROW_ITEM,
           repeat > 1 ? "Each figure is the median of that figure over the runs. " : "",
           REGROW_LINEAR_STEP);
    printf("| variant | create µs | reserve µs | median ns | p99 ns | p99.9 ns | max ns | "
           ">20x median | growth µs | grow events | slowest growth µs | faults |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < REGROW_VARIANTS; v++) {
        const regrow_variant *rv = &regrow_variants[v];
        const regrow_result *r = &res[v];
        printf("| %s |", rv->name);
        if (rv->kind == REGROW_MALLOC)
            printf(" - |");
        else
            print_us(r->create_ns);
        if (rv->reserve_prefault)
            print_us(r->reserve_ns);
        else
            printf(" - |");
        printf(" %llu | %llu | %llu | %llu | %llu |", (unsigned long long)r->lat.median,
               (unsigned long long)r->lat.p99, (unsigned long long)r->lat.p999,
               (unsigned long long)r->lat.max, (unsigned long long)r->lat.over_20x_median);
        if (rv->kind == REGROW_MALLOC) {
            printf(" - | - | - |");
        } else {
            print_us(r->grow_ns);
            printf(" %llu |", (unsigned long long)r->grow_events);
            if (r->grow_ns_max == UINT64_MAX)
                printf(" ? |");
            else
                print_us(r->grow_ns_max);
        }
        printf(" %llu |\n", (unsigned long long)r->minor_faults);
    }

    const regrow_result *p1 = &res[V_FM_POOL_1], *e1 = &res[V_EAGER_1];
    const regrow_result *p32 = &res[V_FM_POOL_32], *e32 = &res[V_EAGER_32];
    printf("\nslowest single allocation, eager pool / fm_pool: initial 1: %llu / %llu ns = "
           "%.1fx; initial 32: %llu / %llu ns = %.1fx\n",
           (unsigned long long)e1->lat.max, (unsigned long long)p1->lat.max,
           p1->lat.max ? (double)e1->lat.max / (double)p1->lat.max : 0.0,
           (unsigned long long)e32->lat.max, (unsigned long long)p32->lat.max,
           p32->lat.max ? (double)e32->lat.max / (double)p32->lat.max : 0.0);
    /* Growth alone, free of the scheduler noise that can set any max. */
    if (p1->grow_ns_max && p1->grow_ns_max != UINT64_MAX)
        printf("slowest single growth, eager pool / fm_pool, initial 1: %.1f / %.1f µs = %.1fx\n",
               (double)e1->grow_ns_max / 1000.0, (double)p1->grow_ns_max / 1000.0,
               (double)e1->grow_ns_max / (double)p1->grow_ns_max);
    uint64_t c = res[V_FM_POOL_BIG].create_ns;
    printf("fm_pool_create(initial_capacity %d, no prefault): %.1f µs; target < 1000 µs: %s\n",
           REGROW_BIG, (double)c / 1000.0, c < 1000000 ? "met" : "NOT met");
}

void regrowth_run(const bench_opts *opts) {
    uint32_t n = opts->quick ? 20000 : 100000;
    int repeat = opts->repeat ? opts->repeat : 1;
    uint64_t *ticks = bench_xmalloc((size_t)n * sizeof *ticks);
    uint64_t *ns = bench_xmalloc((size_t)n * sizeof *ns);
    void **items = bench_xmalloc((size_t)n * sizeof *items);
    regrow_result *runs = bench_xmalloc((size_t)REGROW_VARIANTS * (size_t)repeat * sizeof *runs);
    fm_pool_stats shape = {0};

    /* Fault the benchmark's own arrays in before anything is timed. */
    memset(ticks, 0, (size_t)n * sizeof *ticks);
    memset(ns, 0, (size_t)n * sizeof *ns);
    memset(items, 0, (size_t)n * sizeof *items);

    for (int r = 0; r < repeat; r++) {
        for (int v = 0; v < REGROW_VARIANTS; v++) {
            const regrow_variant *rv = &regrow_variants[v];
            regrow_result *out = &runs[v * repeat + r];
            memset(out, 0, sizeof *out);
            release_heap();
            switch (rv->kind) {
            case REGROW_FM_POOL:
                run_fm_pool(rv, n, ticks, items, out, v == V_FM_POOL_1 ? &shape : NULL);
                break;
            case REGROW_EAGER: run_eager(rv, n, ticks, items, out); break;
            case REGROW_MALLOC: run_malloc(rv, n, ticks, items, out); break;
            }
            for (uint32_t i = 0; i < n; i++) ns[i] = fm_clock_to_ns(ticks[i]);
            out->lat = bench_latency_of(ns, n);
            if (opts->csv_dir && r == 0) write_csv(opts->csv_dir, rv, ns, n);
        }
    }

    /* The median of each figure over the runs, figure by figure. */
    regrow_result med[REGROW_VARIANTS];
    uint64_t *col = bench_xmalloc((size_t)repeat * sizeof *col);
    for (int v = 0; v < REGROW_VARIANTS; v++) {
#define REGROW_MEDIAN(f)                                                    \
    for (int r = 0; r < repeat; r++) col[r] = runs[v * repeat + r].f;       \
    med[v].f = bench_median_u64(col, (size_t)repeat);
        REGROW_FIELDS(REGROW_MEDIAN)
#undef REGROW_MEDIAN
    }
    free(col);

    print_table(med, n, repeat);
    printf("fm_pool %d-byte items: stride %llu, chunk_bytes %llu, %llu items per chunk "
           "(initial 1, after the run: %llu chunks, capacity %llu)\n",
           REGROW_ITEM, (unsigned long long)shape.stride, (unsigned long long)shape.chunk_bytes,
           (unsigned long long)shape.items_per_chunk, (unsigned long long)shape.chunk_count,
           (unsigned long long)shape.capacity);
    if (opts->csv_dir)
        printf("wrote %d CSV files regrowth_*.csv (index,ns: one row per allocation%s) to %s\n",
               REGROW_VARIANTS, repeat > 1 ? ", first run" : "", opts->csv_dir);

    free(runs);
    free(items);
    free(ns);
    free(ticks);
}
