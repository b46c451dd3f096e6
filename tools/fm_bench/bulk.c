/*
 * fm_bench/bulk.c: 5,000,000 items of 128 bytes allocated, held, then all
 * freed (the allocate_shared experiment: many small objects alive at once).
 *
 * Per variant: ns per allocation and per free (each loop timed as a whole,
 * one byte written per item so its page is touched), the growth of the
 * resident set while every item is held (/proc/self/statm before the first
 * allocation and after the last) and, from it, the bytes each item costs
 * beyond its 128. malloc_trim(0) runs before each variant so glibc starts
 * from a trimmed heap. Peers (mimalloc, jemalloc, tcmalloc, Boost.Pool and
 * std::allocate_shared) run the same loops in their own processes.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif

#include "alloc_loops.h"
#include "engine/classic_pool.h"
#include "framemem/clock.h"
#include "framemem/pool.h"
#include "peers.h"

typedef enum bulk_kind { BULK_FM_POOL, BULK_FM_POOL_SIZED, BULK_UNCHECKED, BULK_MALLOC } bulk_kind;

static const struct {
    const char *name;
    bulk_kind kind;
} bulk_variants[] = {
    {"fm_pool geometric, default initial", BULK_FM_POOL},
    {"fm_pool initial_capacity = items", BULK_FM_POOL_SIZED},
    {"unchecked pool (Boost pool<> style)", BULK_UNCHECKED},
    {"glibc malloc/free", BULK_MALLOC},
};
enum { BULK_VARIANTS = sizeof bulk_variants / sizeof bulk_variants[0] };

enum { BULK_ALLOC_NS, BULK_FREE_NS, BULK_RSS, BULK_FIELDS };

static BENCH_NOINLINE uint64_t bulk_pool_alloc(fm_pool *pool, uint32_t n, void **items) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_pool_alloc(pool);
        if (!p)
            bench_die("bulk: fm_pool_alloc returned NULL (%s: %s)", fm_error_name(fm_last_error()),
                      fm_last_error_message());
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        items[i] = p;
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t bulk_pool_free(fm_pool *pool, uint32_t n, void **items) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t bulk_unchecked_alloc(eng_classic_pool *pool, uint32_t n, void **items) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = eng_classic_pool_alloc(pool);
        if (!p) bench_die("bulk: eng_classic_pool_alloc returned NULL");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        items[i] = p;
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t bulk_unchecked_free(eng_classic_pool *pool, uint32_t n, void **items) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) eng_classic_pool_free(pool, items[i]);
    return fm_clock_now() - t0;
}

/* One run of one variant: out[BULK_FIELDS]; fm_pool's stats at the peak. */
static void bulk_once(bulk_kind kind, uint32_t n, void **items, double *out, fm_pool_stats *peak) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
    uint64_t ta = 0, tf = 0, rss0 = 0, rss1 = 0;
    if (kind == BULK_FM_POOL || kind == BULK_FM_POOL_SIZED) {
        fm_pool *pool = fm_pool_create(&(fm_pool_desc){
            .name = "bulk-128",
            .item_size = BENCH_BULK_ITEM,
            .initial_capacity = kind == BULK_FM_POOL_SIZED ? n : 0,
            .sync = FM_SYNC_NONE,
        });
        if (!pool) bench_die("bulk: fm_pool_create failed (%s)", fm_last_error_message());
        rss0 = bench_rss_bytes();
        ta = bulk_pool_alloc(pool, n, items);
        rss1 = bench_rss_bytes();
        if (peak) fm_pool_get_stats(pool, peak);
        tf = bulk_pool_free(pool, n, items);
        fm_pool_stats st;
        fm_pool_get_stats(pool, &st);
        if (st.live != 0 || st.misuse_count != 0)
            bench_die("bulk: fm_pool holds %llu live items after freeing all",
                      (unsigned long long)st.live);
        fm_pool_destroy(pool);
    } else if (kind == BULK_UNCHECKED) {
        rss0 = bench_rss_bytes();
        eng_classic_pool *pool = eng_classic_pool_create(BENCH_BULK_ITEM, 0);
        if (!pool) bench_die("bulk: eng_classic_pool_create failed");
        ta = bulk_unchecked_alloc(pool, n, items);
        rss1 = bench_rss_bytes();
        tf = bulk_unchecked_free(pool, n, items);
        eng_classic_pool_destroy(pool);
    } else {
        rss0 = bench_rss_bytes();
        ta = bench_loop_bulk_alloc(BENCH_BULK_ITEM, n, items);
        rss1 = bench_rss_bytes();
        tf = bench_loop_bulk_free(n, items);
    }
    out[BULK_ALLOC_NS] = (double)fm_clock_to_ns(ta) / n;
    out[BULK_FREE_NS] = (double)fm_clock_to_ns(tf) / n;
    out[BULK_RSS] = (double)(rss1 > rss0 ? rss1 - rss0 : 0);
}

static void bulk_row(const char *name, const double *med, double base_pair, uint32_t n) {
    printf("| %s | %.2f | %.2f | %.2f | %.1f | %.1f |\n", name, med[BULK_ALLOC_NS],
           med[BULK_FREE_NS], (med[BULK_ALLOC_NS] + med[BULK_FREE_NS]) / base_pair,
           med[BULK_RSS] / (1024.0 * 1024.0), med[BULK_RSS] / n - BENCH_BULK_ITEM);
}

void bulk_run(const bench_opts *opts) {
    uint32_t n = opts->quick ? BENCH_BULK_QUICK : BENCH_BULK_ITEMS;
    int repeat = bench_repeat(opts);
    void **items = bench_xmalloc((size_t)n * sizeof *items);
    memset(items, 0, (size_t)n * sizeof *items); /* faulted in before any clock */
    double *runs = bench_xmalloc((size_t)BULK_VARIANTS * (size_t)repeat * BULK_FIELDS *
                                 sizeof *runs);
    bench_peer_set peers = {0};
    fm_pool_stats peak = {0};

    for (int r = 0; r < repeat; r++) {
        for (int v = 0; v < BULK_VARIANTS; v++)
            bulk_once(bulk_variants[v].kind, n, items, &runs[(v * repeat + r) * BULK_FIELDS],
                      r == 0 && v == 0 ? &peak : NULL);
        bench_peers_round(opts, "bulk", &peers);
    }

    double med[BULK_VARIANTS][BULK_FIELDS];
    double *col = bench_xmalloc((size_t)repeat * sizeof *col);
    for (int v = 0; v < BULK_VARIANTS; v++)
        for (int f = 0; f < BULK_FIELDS; f++) {
            for (int r = 0; r < repeat; r++) col[r] = runs[(v * repeat + r) * BULK_FIELDS + f];
            med[v][f] = bench_median(col, (size_t)repeat);
        }
    free(col);
    const double *base = med[BULK_VARIANTS - 1];
    double base_pair = base[BULK_ALLOC_NS] + base[BULK_FREE_NS];

    printf("\n## bulk\n\n");
    printf("%u items of %d bytes allocated and held (one byte written each), then all freed "
           "in allocation order; each loop timed as a whole; median of %d runs, variants "
           "interleaved run by run (peers in their own processes, one run per round). RSS = "
           "growth of the resident set from before the first allocation to after the last "
           "(/proc/self/statm); overhead = RSS / items - %d. malloc_trim(0) before each "
           "fm-bench variant. Ratio = (alloc + free) / glibc's.\n\n",
           n, BENCH_BULK_ITEM, repeat, BENCH_BULK_ITEM);
    printf("| variant | alloc ns/item | free ns/item | ratio vs glibc | RSS MiB | overhead "
           "B/item |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < BULK_VARIANTS; v++) bulk_row(bulk_variants[v].name, med[v], base_pair, n);
    for (size_t p = 0; p < peers.n; p++) {
        double pm[BULK_FIELDS], lo, hi;
        if (peers.s[p].nv != BULK_FIELDS)
            bench_die("bulk: peer row '%s' has %d values, %d expected", peers.s[p].variant,
                      peers.s[p].nv, BULK_FIELDS);
        for (int f = 0; f < BULK_FIELDS; f++) bench_series_stats(&peers.s[p], f, &pm[f], &lo, &hi);
        bulk_row(peers.s[p].variant, pm, base_pair, n);
    }
    if (peak.capacity)
        printf("\nfm_pool at the peak (first run): capacity %llu, %llu chunks of %llu bytes, "
               "bytes_overhead / capacity = %.2f bytes/item, %llu growths\n",
               (unsigned long long)peak.capacity, (unsigned long long)peak.chunk_count,
               (unsigned long long)peak.chunk_bytes,
               (double)peak.bytes_overhead / (double)peak.capacity,
               (unsigned long long)peak.grow_events);

    if (opts->csv_dir) {
        fm_file_writer *f = bench_csv_open(opts->csv_dir, "bulk.csv");
        fm_file_printf(f, "variant,run,alloc_ns_per_item,free_ns_per_item,rss_bytes\n");
        for (int v = 0; v < BULK_VARIANTS; v++)
            for (int r = 0; r < repeat; r++) {
                const double *x = &runs[(v * repeat + r) * BULK_FIELDS];
                fm_file_printf(f, "%s,%d,%.3f,%.3f,%.0f\n", bulk_variants[v].name, r + 1, x[0], x[1],
                        x[2]);
            }
        for (size_t p = 0; p < peers.n; p++)
            for (int r = 0; r < peers.s[p].rounds; r++) {
                const double *x = &peers.s[p].v[r * BENCH_SERIES_VALUES];
                fm_file_printf(f, "%s,%d,%.3f,%.3f,%.0f\n", peers.s[p].variant, r + 1, x[0], x[1],
                        x[2]);
            }
        bench_csv_close(f);
        printf("\nwrote %s/bulk.csv\n", opts->csv_dir);
    }
    bench_peer_set_free(&peers);
    free(runs);
    free(items);
}
