/*
 * fm_bench/telemetry.c: the cost of fm_telemetry_frame_end, the once-a-frame
 * call of framemem_telemetry, with 16 sources (issue 20's target: under 2 µs
 * per frame), and of fm_telemetry_grow_ahead over the same pools.
 *
 * Each frame allocates and frees items in every pool (untimed), then times
 * one call. Variants, interleaved run by run:
 * - fm_telemetry_frame_end, 16 pools;
 * - fm_telemetry_frame_end, 16 sources of every kind: 10 pools, an arena, a
 *   frame arena, a closure pool (13 class pools summed), 2 tags and a
 *   counters source;
 * - fm_telemetry_grow_ahead over the 16 pools (opted in; at steady state
 *   nothing grows: the cost of deciding);
 * - the baseline: 16 fm_pool_get_stats calls into an array, the least any
 *   sampling of 16 pools reads;
 * - an empty timed region (the clock pair alone, in every figure above).
 * Figures: median and p99 ns per call over the counted frames (the first 100
 * warm up), medians over the runs; ratio to the baseline.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "framemem/clock.h"
#include "framemem/framemem.h"
#include "framemem/telemetry.h"

enum { TEL_SOURCES = 16, TEL_WARMUP = 100, TEL_ITEMS = 64 };

typedef enum tel_kind { TEL_POOLS, TEL_MIXED, TEL_GROW_AHEAD, TEL_BASELINE, TEL_EMPTY } tel_kind;
static const char *const tel_names[] = {
    "fm_telemetry_frame_end, 16 pools",
    "fm_telemetry_frame_end, 16 sources of every kind",
    "fm_telemetry_grow_ahead, 16 pools opted in",
    "16 fm_pool_get_stats calls (baseline)",
    "empty timed region (clock pair)",
};
enum { TEL_VARIANTS = sizeof tel_names / sizeof tel_names[0] };

typedef struct tel_item {
    uint64_t a, b, c, d;
} tel_item;

static void tel_nop(void *capture, void *arg) { (void)capture, (void)arg; }

/* One run of a variant: frames x (untimed churn, one timed call). */
static void tel_once(tel_kind kind, uint32_t frames, uint64_t *med, uint64_t *p99) {
    char name[32];
    fm_pool *pools[TEL_SOURCES];
    fm_tag *tags[2] = {fm_tag_create(&(fm_tag_desc){.name = "level"}),
                       fm_tag_create(&(fm_tag_desc){.name = "fx", .hard_limit_bytes = 1u << 30})};
    for (int i = 0; i < TEL_SOURCES; i++) {
        snprintf(name, sizeof name, "pool%02d", i);
        pools[i] = fm_pool_create(&(fm_pool_desc){.name = name, .item_size = sizeof(tel_item),
                                                  .initial_capacity = 4096, .grow_ahead = true,
                                                  .tag = tags[i & 1]});
        if (!pools[i]) bench_die("telemetry: pool: %s", fm_last_error_message());
    }
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "scratch", .tag = tags[0]});
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.tag = tags[1]});
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){.name = "calls"});
    fm_telemetry_counters heap = {.item_size = 48};
    fm_telemetry *tel = fm_telemetry_create(&(fm_telemetry_desc){.frames = 600});
    if (!arena || !fa || !cp || !tel || !tags[0] || !tags[1])
        bench_die("telemetry: setup: %s", fm_last_error_message());
    int npools = kind == TEL_MIXED ? 10 : TEL_SOURCES;
    for (int i = 0; i < npools; i++) fm_telemetry_add_pool(tel, pools[i]);
    if (kind == TEL_MIXED) {
        fm_telemetry_add_arena(tel, arena);
        fm_telemetry_add_frame_arena(tel, fa);
        fm_telemetry_add_closure_pool(tel, cp);
        fm_telemetry_add_tag(tel, tags[0]);
        fm_telemetry_add_tag(tel, tags[1]);
        fm_telemetry_add_counters(tel, "heap", &heap);
    }
    if (fm_telemetry_source_count(tel) != TEL_SOURCES) bench_die("telemetry: sources not added");
    uint64_t *ns = bench_xmalloc(frames * sizeof *ns);
    static void *items[TEL_SOURCES][TEL_ITEMS];
    static fm_pool_stats stats[TEL_SOURCES];
    for (uint32_t f = 0; f < TEL_WARMUP + frames; f++) {
        /* the frame's work, untimed: every pool churns, the arenas fill */
        for (int i = 0; i < TEL_SOURCES; i++) {
            uint32_t n = 16 + (f * 7 + (uint32_t)i) % (TEL_ITEMS - 16);
            if (fm_pool_alloc_n(pools[i], items[i], n) != n) bench_die("telemetry: alloc_n");
            fm_pool_free_n(pools[i], items[i], n - 8);
        }
        fm_frame_arena_advance(fa);
        BENCH_ESCAPE(fm_frame_alloc(fa, 4096, 16));
        BENCH_ESCAPE(fm_arena_alloc(arena, 256, 16));
        if (f % 64 == 63) fm_arena_reset(arena);
        fm_closure *c = fm_closure_make(cp, tel_nop, NULL, 0);
        if (c) fm_closure_release(c);
        heap.total_allocs += 3;
        heap.total_frees += 3;
        /* the timed call */
        uint64_t t0 = fm_clock_now();
        switch (kind) {
        case TEL_POOLS:
        case TEL_MIXED: fm_telemetry_frame_end(tel); break;
        case TEL_GROW_AHEAD: fm_telemetry_grow_ahead(tel); break;
        case TEL_BASELINE:
            for (int i = 0; i < TEL_SOURCES; i++) fm_pool_get_stats(pools[i], &stats[i]);
            BENCH_ESCAPE(stats);
            break;
        case TEL_EMPTY: break;
        }
        uint64_t t1 = fm_clock_now();
        if (kind == TEL_GROW_AHEAD) fm_telemetry_frame_end(tel); /* untimed: the history */
        if (f >= TEL_WARMUP) ns[f - TEL_WARMUP] = fm_clock_to_ns(t1 - t0);
        for (int i = 0; i < TEL_SOURCES; i++) { /* the 8 kept over the call */
            uint32_t n = 16 + (f * 7 + (uint32_t)i) % (TEL_ITEMS - 16);
            fm_pool_free_n(pools[i], items[i] + n - 8, 8);
        }
    }
    bench_latency l = bench_latency_of(ns, frames);
    *med = l.median;
    *p99 = l.p99;
    free(ns);
    fm_telemetry_destroy(tel);
    fm_closure_pool_destroy(cp);
    fm_frame_arena_destroy(fa);
    fm_arena_destroy(arena);
    for (int i = 0; i < TEL_SOURCES; i++) fm_pool_destroy(pools[i]);
    fm_tag_destroy(tags[1]);
    fm_tag_destroy(tags[0]);
}

void telemetry_run(const bench_opts *opts) {
    int runs = bench_repeat(opts);
    uint32_t frames = opts->quick ? 1000 : 20000;
    uint64_t med[TEL_VARIANTS][32], p99[TEL_VARIANTS][32];
    if (runs > 32) runs = 32;
    for (int r = 0; r < runs; r++)
        for (int v = 0; v < TEL_VARIANTS; v++) tel_once((tel_kind)v, frames, &med[v][r], &p99[v][r]);
    printf("\n## telemetry: fm_telemetry_frame_end with 16 sources, grow-ahead\n\n");
    printf("%u frames (after %d of warm-up), each churning 16 pools untimed, then one timed "
           "call; median and p99 per call, medians of %d run(s); the clock pair is in every "
           "figure (the last row).\n\n",
           frames, TEL_WARMUP, runs);
    printf("| variant | median ns | p99 ns | x baseline (median) |\n|---|---:|---:|---:|\n");
    uint64_t m[TEL_VARIANTS], p[TEL_VARIANTS];
    for (int v = 0; v < TEL_VARIANTS; v++) {
        m[v] = bench_median_u64(med[v], (size_t)runs);
        p[v] = bench_median_u64(p99[v], (size_t)runs);
    }
    for (int v = 0; v < TEL_VARIANTS; v++)
        printf("| %s | %llu | %llu | %.2fx |\n", tel_names[v], (unsigned long long)m[v],
               (unsigned long long)p[v], m[TEL_BASELINE] ? (double)m[v] / (double)m[TEL_BASELINE] : 0.0);
    for (int v = TEL_POOLS; v <= TEL_MIXED; v++)
        printf("\n%s: %llu ns per frame (p99 %llu); target < 2000 ns: %s", tel_names[v],
               (unsigned long long)m[v], (unsigned long long)p[v], m[v] < 2000 ? "met" : "NOT met");
    printf("\n");
    bench_i20.telemetry = true;
    bench_i20.frame_end_pools_ns = m[TEL_POOLS];
    bench_i20.frame_end_mixed_ns = m[TEL_MIXED];
}
