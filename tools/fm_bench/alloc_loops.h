/*
 * fm_bench/alloc_loops.h: the timed loops of a malloc-shaped allocator.
 *
 * fm-bench times glibc malloc with these loops and every peer executable
 * (fm-bench-peer-*, see peers.h) times its allocator with the very same
 * code, compiled with its own BENCH_LOOP_ALLOC / BENCH_LOOP_FREE: the rows
 * differ only in the allocator. Define both before including this header
 * (default: malloc and free). Each loop writes one byte of every item and
 * keeps each call behind an asm barrier, as the pool loops do.
 */
#ifndef FM_BENCH_ALLOC_LOOPS_H
#define FM_BENCH_ALLOC_LOOPS_H

#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "framemem/clock.h"

#ifndef BENCH_LOOP_ALLOC
#define BENCH_LOOP_ALLOC(size) malloc(size)
#define BENCH_LOOP_FREE(p) free(p)
#define BENCH_LOOP_NAME "malloc"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define BENCH_LOOP_FN static BENCH_NOINLINE __attribute__((unused))
#else
#define BENCH_LOOP_FN static
#endif

enum {
    BENCH_CHURN_LIVE = 10000,   /* churn's random pattern: items live */
    BENCH_BULK_ITEMS = 5000000, /* bulk: items held at once */
    BENCH_BULK_QUICK = 200000,  /* bulk with --quick */
    BENCH_BULK_ITEM = 128,      /* bulk: item size */
};

static void bench_loop_failed(size_t size) {
    bench_die("%s(%zu) returned NULL", BENCH_LOOP_NAME, size);
}

/* n alloc, write, free pairs; ticks. */
BENCH_LOOP_FN uint64_t bench_loop_pairs(size_t size, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = BENCH_LOOP_ALLOC(size);
        if (!p) bench_loop_failed(size);
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        BENCH_LOOP_FREE(p);
    }
    return fm_clock_now() - t0;
}

/* n steps of: free live[idx[i]], allocate its replacement; ticks. */
BENCH_LOOP_FN uint64_t bench_loop_random(size_t size, void **live, const uint32_t *idx,
                                         uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = idx[i];
        BENCH_LOOP_FREE(live[j]);
        unsigned char *p = BENCH_LOOP_ALLOC(size);
        if (!p) bench_loop_failed(size);
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        live[j] = p;
    }
    return fm_clock_now() - t0;
}

/* One churn run as churn.c runs it for malloc: pre-fill BENCH_CHURN_LIVE
 * items (random pattern), warm up, time n operations, free everything.
 * Nanoseconds per pair or per free+alloc step. */
BENCH_LOOP_FN double bench_loop_churn(size_t size, bool random, uint32_t n, const uint32_t *idx,
                                      void **live) {
    uint32_t warm = n / 100 < 1000 ? 1000 : n / 100;
    if (warm > n) warm = n;
    uint64_t ticks;
    if (random) {
        for (uint32_t j = 0; j < BENCH_CHURN_LIVE; j++) {
            unsigned char *p = BENCH_LOOP_ALLOC(size);
            if (!p) bench_loop_failed(size);
            p[0] = (unsigned char)j;
            live[j] = p;
        }
        bench_loop_random(size, live, idx, warm);
        ticks = bench_loop_random(size, live, idx, n);
        for (uint32_t j = 0; j < BENCH_CHURN_LIVE; j++) BENCH_LOOP_FREE(live[j]);
    } else {
        bench_loop_pairs(size, warm);
        ticks = bench_loop_pairs(size, n);
    }
    return (double)fm_clock_to_ns(ticks) / (double)n;
}

/* Each allocation timed on its own, including a memset of the whole item
 * (page faults count where they fall); items kept in items[]. */
BENCH_LOOP_FN void bench_loop_latency(size_t size, uint32_t n, uint64_t *ticks, void **items) {
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t0 = fm_clock_now();
        void *p = BENCH_LOOP_ALLOC(size);
        if (p) memset(p, 0, size);
        BENCH_ESCAPE(p);
        uint64_t t1 = fm_clock_now();
        if (!p) bench_loop_failed(size);
        ticks[i] = t1 - t0;
        items[i] = p;
    }
}

/* n items allocated and held (first byte written); ticks. */
BENCH_LOOP_FN uint64_t bench_loop_bulk_alloc(size_t size, uint32_t n, void **items) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = BENCH_LOOP_ALLOC(size);
        if (!p) bench_loop_failed(size);
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        items[i] = p;
    }
    return fm_clock_now() - t0;
}

/* The n items freed in allocation order; ticks. */
BENCH_LOOP_FN uint64_t bench_loop_bulk_free(uint32_t n, void **items) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) BENCH_LOOP_FREE(items[i]);
    return fm_clock_now() - t0;
}

#endif /* FM_BENCH_ALLOC_LOOPS_H */
