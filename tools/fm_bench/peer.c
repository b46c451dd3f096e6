/*
 * fm_bench/peer.c: one peer allocator in a process of its own (see peers.h).
 *
 * Built once per peer with one of
 *   BENCH_PEER_MIMALLOC       mi_malloc / mi_free
 *   BENCH_PEER_MIMALLOC_HEAP  mi_heap_malloc on a mi_heap made per workload,
 *                             mi_free, mi_heap_delete at the workload's end
 *   BENCH_PEER_JEMALLOC       malloc / free of the linked libjemalloc
 *   BENCH_PEER_TCMALLOC       malloc / free of the linked libtcmalloc
 * and the loops of alloc_loops.h, which time glibc in fm-bench itself.
 *
 *   fm-bench-peer-NAME --peer churn|bulk|regrowth|info [--quick]
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "framemem/clock.h"

#if defined(BENCH_PEER_MIMALLOC) || defined(BENCH_PEER_MIMALLOC_HEAP)
#include <mimalloc.h>
#endif

#if defined(BENCH_PEER_MIMALLOC_HEAP)
static mi_heap_t *peer_heap;
#define BENCH_LOOP_ALLOC(size) mi_heap_malloc(peer_heap, size)
#define BENCH_LOOP_FREE(p) mi_free(p)
#define BENCH_LOOP_NAME "mi_heap_malloc"
#define PEER_VARIANT "mimalloc mi_heap per workload"
#define PEER_DESC "mimalloc " FM_BENCH_STR(MI_MALLOC_VERSION) ", mi_heap_malloc on a mi_heap_new() per workload, mi_free"
#elif defined(BENCH_PEER_MIMALLOC)
#define BENCH_LOOP_ALLOC(size) mi_malloc(size)
#define BENCH_LOOP_FREE(p) mi_free(p)
#define BENCH_LOOP_NAME "mi_malloc"
#define PEER_VARIANT "mimalloc mi_malloc/mi_free"
#define PEER_DESC "mimalloc " FM_BENCH_STR(MI_MALLOC_VERSION) ", mi_malloc/mi_free"
#elif defined(BENCH_PEER_JEMALLOC)
#define PEER_VARIANT "jemalloc malloc/free"
#define PEER_DESC "jemalloc (linked libjemalloc replaces malloc/free)"
#elif defined(BENCH_PEER_TCMALLOC)
#define PEER_VARIANT "tcmalloc malloc/free"
#define PEER_DESC "tcmalloc (linked libtcmalloc_minimal replaces malloc/free)"
#else
#error "build peer.c with one BENCH_PEER_* definition"
#endif
#define FM_BENCH_STR2(x) #x
#define FM_BENCH_STR(x) FM_BENCH_STR2(x)

#include "alloc_loops.h"

/* A workload starts and ends; only the mi_heap peer does anything. */
static void workload_begin(void) {
#if defined(BENCH_PEER_MIMALLOC_HEAP)
    peer_heap = mi_heap_new();
    if (!peer_heap) bench_die("mi_heap_new failed");
#endif
}

static void workload_end(void) {
#if defined(BENCH_PEER_MIMALLOC_HEAP)
    mi_heap_delete(peer_heap);
    peer_heap = NULL;
#endif
}

static void emit(const char *key, int nv, const double *v) {
    printf("row\t%s\t%s", PEER_VARIANT, key);
    for (int i = 0; i < nv; i++) printf("\t%.6g", v[i]);
    printf("\n");
}

/* churn: the four groups of churn.c, one run each; value: ns per op. */
static void peer_churn(bool quick) {
    uint32_t n = quick ? 100000 : 1000000;
    uint32_t *idx = bench_xmalloc((size_t)n * sizeof *idx);
    uint64_t rng = 0x9E3779B97F4A7C15ull; /* churn.c's seed: the same indices */
    for (uint32_t i = 0; i < n; i++)
        idx[i] = (uint32_t)(bench_xorshift64(&rng) % BENCH_CHURN_LIVE);
    void **live = bench_xmalloc(BENCH_CHURN_LIVE * sizeof *live);
    static const size_t sizes[2] = {16, 1024};
    for (int random = 0; random < 2; random++)
        for (int s = 0; s < 2; s++) {
            char key[32];
            snprintf(key, sizeof key, "%zu %s", sizes[s], random ? "random" : "pairs");
            workload_begin();
            double ns = bench_loop_churn(sizes[s], random, n, idx, live);
            workload_end();
            emit(key, 1, &ns);
        }
    free(live);
    free(idx);
}

/* bulk: ns per alloc, ns per free, RSS growth while all are held. */
static void peer_bulk(bool quick) {
    uint32_t n = quick ? BENCH_BULK_QUICK : BENCH_BULK_ITEMS;
    void **items = bench_xmalloc((size_t)n * sizeof *items);
    memset(items, 0, (size_t)n * sizeof *items);
    workload_begin();
    uint64_t rss0 = bench_rss_bytes();
    uint64_t ta = bench_loop_bulk_alloc(BENCH_BULK_ITEM, n, items);
    uint64_t rss1 = bench_rss_bytes();
    uint64_t tf = bench_loop_bulk_free(n, items);
    workload_end();
    double v[3] = {(double)fm_clock_to_ns(ta) / n, (double)fm_clock_to_ns(tf) / n,
                   (double)(rss1 > rss0 ? rss1 - rss0 : 0)};
    emit("128", 3, v);
    free(items);
}

/* regrowth: latency of n 1 KiB allocations with a memset each. */
static void peer_regrowth(bool quick) {
    uint32_t n = quick ? 20000 : 100000;
    uint64_t *ticks = bench_xmalloc((size_t)n * sizeof *ticks);
    void **items = bench_xmalloc((size_t)n * sizeof *items);
    memset(ticks, 0, (size_t)n * sizeof *ticks);
    memset(items, 0, (size_t)n * sizeof *items);
    workload_begin();
    uint64_t faults = bench_minor_faults();
    bench_loop_latency(1024, n, ticks, items);
    faults = bench_minor_faults() - faults;
    for (uint32_t i = 0; i < n; i++) BENCH_LOOP_FREE(items[i]);
    workload_end();
    for (uint32_t i = 0; i < n; i++) ticks[i] = fm_clock_to_ns(ticks[i]);
    bench_latency lat = bench_latency_of(ticks, n);
    double v[7] = {(double)lat.median, (double)lat.p99,
                   (double)lat.p999,   (double)lat.max,
                   (double)lat.over_20x_median, (double)lat.over_1us,
                   (double)faults};
    emit("1024", 7, v);
    free(items);
    free(ticks);
}

int main(int argc, char **argv) {
    const char *what = NULL;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--peer") && i + 1 < argc)
            what = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else {
            fprintf(stderr, "%s: unknown option '%s'\nusage: %s --peer "
                            "churn|bulk|regrowth|info [--quick] (run by fm-bench)\n",
                    argv[0], argv[i], argv[0]);
            return 2;
        }
    }
    if (!what) {
        fprintf(stderr, "usage: %s --peer churn|bulk|regrowth|info [--quick] (run by fm-bench)\n",
                argv[0]);
        return 2;
    }
    fm_clock_init();
    if (!strcmp(what, "info"))
        printf("info\t%s\t%s\n", PEER_DESC, bench_malloc_library());
    else if (!strcmp(what, "churn"))
        peer_churn(quick);
    else if (!strcmp(what, "bulk"))
        peer_bulk(quick);
    else if (!strcmp(what, "regrowth"))
        peer_regrowth(quick);
    else {
        fprintf(stderr, "%s: no experiment '%s' (churn, bulk, regrowth, info)\n", argv[0], what);
        return 2;
    }
    return 0;
}
