/*
 * fm_bench/sync.c: the mutex experiment. What a pool's thread-safety policy
 * costs per 16-byte alloc+free pair (alloc, write a byte, free):
 * - 1 thread: FM_SYNC_NONE, MUTEX, THREAD_CACHE, LOCKFREE and glibc
 *   malloc/free (NONE and THREAD_CACHE through pool.h's inline fast paths in
 *   optimised builds, MUTEX and LOCKFREE through the library);
 * - 2 threads, each on its own pool (no sharing: the policy's bare cost when
 *   both cores work), and 2 threads on one shared pool (contention): MUTEX,
 *   THREAD_CACHE, LOCKFREE and glibc malloc/free (per-thread arenas, so its
 *   two rows differ only by noise).
 * Each thread first warms its pool (chunks mapped, caches filled), then waits
 * at a barrier; the figure is wall time from the barrier until the last
 * thread is done, divided by the pairs each thread did (ns per pair per
 * thread: equal to the 1-thread figure when two cores scale perfectly).
 * fm-bench pins itself to one CPU; the 2-thread runs widen the affinity to
 * every CPU and restore it after. Runs interleave the variants; figures are
 * medians. Ratio = variant / MUTEX in the same table.
 */
#define _GNU_SOURCE 1 /* sched_getaffinity / sched_setaffinity, CPU_SET */
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framemem/clock.h"
#include "framemem/pool.h"

typedef enum sync_kind { SYNC_POOL, SYNC_MALLOC } sync_kind;
typedef enum sync_share { SYNC_ONE_THREAD, SYNC_OWN_POOLS, SYNC_SHARED_POOL } sync_share;

typedef struct sync_variant {
    const char *name;
    sync_kind kind;
    fm_sync sync;
    sync_share share;
} sync_variant;

#define SYNC_GROUP(share)                                                          \
    {"fm_pool MUTEX", SYNC_POOL, FM_SYNC_MUTEX, share},                            \
        {"fm_pool THREAD_CACHE", SYNC_POOL, FM_SYNC_THREAD_CACHE, share},          \
        {"fm_pool LOCKFREE", SYNC_POOL, FM_SYNC_LOCKFREE, share},                  \
        {"glibc malloc/free", SYNC_MALLOC, FM_SYNC_NONE, share}

static const sync_variant sync_variants[] = {
    {"fm_pool NONE", SYNC_POOL, FM_SYNC_NONE, SYNC_ONE_THREAD},
    SYNC_GROUP(SYNC_ONE_THREAD),
    SYNC_GROUP(SYNC_OWN_POOLS),
    SYNC_GROUP(SYNC_SHARED_POOL),
};
enum { SYNC_VARIANTS = sizeof sync_variants / sizeof sync_variants[0] };

static const char *share_title(sync_share s) {
    switch (s) {
    case SYNC_ONE_THREAD: return "1 thread";
    case SYNC_OWN_POOLS: return "2 threads, each on its own pool";
    default: return "2 threads, one shared pool";
    }
}

/* ----------------------------------------------------------- timed loops */

static fm_pool *sync_pool_create(fm_sync sync) {
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){
        .name = "sync-16", .item_size = 16, .sync = sync});
    if (!pool)
        bench_die("fm_pool_create(%s): %s", fm_sync_name(sync), fm_last_error_message());
    return pool;
}

static BENCH_NOINLINE void pairs_pool(fm_pool *pool, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_pool_alloc(pool);
        if (!p) bench_die("fm_pool_alloc: %s", fm_last_error_message());
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        fm_pool_free(pool, p);
    }
}

static BENCH_NOINLINE void pairs_malloc(uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = malloc(16);
        if (!p) bench_die("malloc(16) returned NULL");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        free(p);
    }
}

typedef struct sync_worker {
    const sync_variant *v;
    fm_pool *pool;
    uint32_t pairs;
    pthread_barrier_t *start;
    uint64_t t0, t1;
    uint64_t cpu_ns; /* this thread's CPU time over the timed loop */
} sync_worker;

static uint64_t sync_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sync_pairs(const sync_worker *w, uint32_t n) {
    if (w->v->kind == SYNC_MALLOC) pairs_malloc(n);
    else pairs_pool(w->pool, n);
}

static void *sync_worker_main(void *arg) {
    sync_worker *w = arg;
    sync_pairs(w, w->pairs / 8 + 1); /* warm: chunks mapped, caches filled */
    if (w->start) pthread_barrier_wait(w->start);
    uint64_t c0 = sync_thread_cpu_ns();
    w->t0 = fm_clock_now();
    sync_pairs(w, w->pairs);
    w->t1 = fm_clock_now();
    w->cpu_ns = sync_thread_cpu_ns() - c0;
    /* THREAD_CACHE: this thread's slots go back when it exits. */
    return NULL;
}

/* Lets the threads this thread creates run on every CPU (they inherit its
 * mask); *saved receives the mask to restore. false when not possible. */
static bool sync_widen_affinity(cpu_set_t *saved) {
#if defined(__linux__)
    if (sched_getaffinity(0, sizeof *saved, saved) != 0) return false;
    cpu_set_t all;
    CPU_ZERO(&all);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < n && c < CPU_SETSIZE; c++) CPU_SET((int)c, &all);
    return sched_setaffinity(0, sizeof all, &all) == 0;
#else
    (void)saved;
    return false;
#endif
}

static void sync_restore_affinity(const cpu_set_t *saved) {
#if defined(__linux__)
    if (sched_setaffinity(0, sizeof *saved, saved) != 0)
        fprintf(stderr, "fm-bench: mutex: could not restore the CPU affinity\n");
#else
    (void)saved;
#endif
}

/* One run of a variant: wall ns per pair per thread; *cpu gets the threads'
 * CPU ns per pair (time a thread spent descheduled or asleep on a futex is
 * in the first figure only). */
static double sync_once(const sync_variant *v, uint32_t pairs, double *cpu) {
    fm_pool *pools[2] = {NULL, NULL};
    if (v->kind == SYNC_POOL) {
        pools[0] = sync_pool_create(v->sync);
        pools[1] = v->share == SYNC_OWN_POOLS ? sync_pool_create(v->sync) : pools[0];
    }
    sync_worker w[2];
    double ns;
    if (v->share == SYNC_ONE_THREAD) {
        w[0] = (sync_worker){.v = v, .pool = pools[0], .pairs = pairs};
        sync_worker_main(&w[0]);
        ns = (double)fm_clock_to_ns(w[0].t1 - w[0].t0) / pairs;
        *cpu = (double)w[0].cpu_ns / pairs;
    } else {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        pthread_t t[2];
        for (int i = 0; i < 2; i++) {
            w[i] = (sync_worker){.v = v, .pool = pools[i], .pairs = pairs, .start = &start};
            if (pthread_create(&t[i], NULL, sync_worker_main, &w[i]) != 0)
                bench_die("sync: pthread_create failed");
        }
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        pthread_barrier_destroy(&start);
        uint64_t t0 = w[0].t0 < w[1].t0 ? w[0].t0 : w[1].t0;
        uint64_t t1 = w[0].t1 > w[1].t1 ? w[0].t1 : w[1].t1;
        ns = (double)fm_clock_to_ns(t1 - t0) / pairs;
        *cpu = (double)(w[0].cpu_ns + w[1].cpu_ns) / (2.0 * pairs);
    }
    if (pools[0]) {
        fm_pool_stats s;
        fm_pool_get_stats(pools[0], &s);
        if (s.live != 0) bench_die("sync: %s left %llu items live", v->name, (unsigned long long)s.live);
        fm_pool_destroy(pools[0]);
        if (pools[1] != pools[0]) fm_pool_destroy(pools[1]);
    }
    return ns;
}

/* ------------------------------------------------------------- the table */

static int sync_mutex_twin(int v) {
    for (int w = 0; w < SYNC_VARIANTS; w++)
        if (sync_variants[w].share == sync_variants[v].share &&
            sync_variants[w].kind == SYNC_POOL && sync_variants[w].sync == FM_SYNC_MUTEX)
            return w;
    bench_die("sync: variant table has no MUTEX row for variant %d", v);
}

static int sync_find(sync_share share, sync_kind kind, fm_sync sync) {
    for (int w = 0; w < SYNC_VARIANTS; w++)
        if (sync_variants[w].share == share && sync_variants[w].kind == kind &&
            (kind == SYNC_MALLOC || sync_variants[w].sync == sync))
            return w;
    bench_die("sync: no such variant");
}

void sync_run(const bench_opts *opts) {
    uint32_t pairs = opts->quick ? 200000 : 2000000;
    int repeat = bench_repeat(opts);
    double *ns = bench_xmalloc((size_t)SYNC_VARIANTS * (size_t)repeat * sizeof *ns);
    double *cpu = bench_xmalloc((size_t)SYNC_VARIANTS * (size_t)repeat * sizeof *cpu);
    fm_file_writer *csv = NULL;
    if (opts->csv_dir) {
        csv = bench_csv_open(opts->csv_dir, "sync.csv");
        fm_file_printf(csv, "variant,threads,run,ns_per_pair,cpu_ns_per_pair\n");
    }

    cpu_set_t saved;
    bool widened = false;
    for (int r = 0; r < repeat; r++) {
        for (int v = 0; v < SYNC_VARIANTS; v++) {
            const sync_variant *sv = &sync_variants[v];
            if (sv->share != SYNC_ONE_THREAD && !widened) widened = sync_widen_affinity(&saved);
            if (sv->share == SYNC_ONE_THREAD && widened) {
                sync_restore_affinity(&saved);
                widened = false;
            }
            ns[v * repeat + r] = sync_once(sv, pairs, &cpu[v * repeat + r]);
            if (csv)
                fm_file_printf(csv, "%s,%s,%d,%.3f,%.3f\n", sv->name, share_title(sv->share), r,
                        ns[v * repeat + r], cpu[v * repeat + r]);
        }
    }
    if (widened) sync_restore_affinity(&saved);
    if (csv) bench_csv_close(csv);

    double med[SYNC_VARIANTS], cpu_med[SYNC_VARIANTS];
    for (int v = 0; v < SYNC_VARIANTS; v++) {
        med[v] = bench_median(&ns[v * repeat], (size_t)repeat);
        cpu_med[v] = bench_median(&cpu[v * repeat], (size_t)repeat);
    }

    printf("\n## sync\n\n");
    printf("16-byte items, %u alloc+free pairs per thread per run (one byte written into "
           "each item), median of %d runs, variants interleaved run by run. Each thread "
           "warms up first, then all start at a barrier; ns/pair = wall time until the last "
           "thread finishes / pairs per thread. 2-thread runs use every CPU (fm-bench's pin "
           "is widened, then restored); %ld CPUs online, shared with whatever else runs. "
           "fm_pool NONE and THREAD_CACHE use pool.h's inline fast paths (THREAD_CACHE's "
           "free sets the item's meta word without a CAS there); MUTEX and LOCKFREE always "
           "call the library. cpu ns/pair: the threads' own CPU time (CLOCK_THREAD_CPUTIME_ID) per "
           "pair, without the time they were descheduled or asleep in a futex: on a machine "
           "shared with other work, the 2-thread wall figures include time-slicing. Ratio = "
           "variant / fm_pool MUTEX in the same table, wall time (below 1 is faster).\n",
           pairs, repeat, sysconf(_SC_NPROCESSORS_ONLN));
    for (sync_share share = SYNC_ONE_THREAD; share <= SYNC_SHARED_POOL; share++) {
        printf("\n### sync: %s\n\n", share_title(share));
        printf("| variant | ns/pair | min | max | cpu ns/pair | ratio vs MUTEX |\n");
        printf("|---|---:|---:|---:|---:|---:|\n");
        for (int v = 0; v < SYNC_VARIANTS; v++) {
            if (sync_variants[v].share != share) continue;
            const double *runs = &ns[v * repeat]; /* sorted by bench_median */
            printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", sync_variants[v].name, med[v],
                   runs[0], runs[repeat - 1], cpu_med[v], med[v] / med[sync_mutex_twin(v)]);
        }
    }

    /* The targets, checked against the medians above: wall time,
     * then the threads' CPU time (steadier on a shared machine). */
    const double *fig[2] = {med, cpu_med};
    const char *what[2] = {"wall", "cpu"};
    for (int k = 0; k < 2; k++) {
        const double *m = fig[k];
        double none1 = m[sync_find(SYNC_ONE_THREAD, SYNC_POOL, FM_SYNC_NONE)];
        double tc1 = m[sync_find(SYNC_ONE_THREAD, SYNC_POOL, FM_SYNC_THREAD_CACHE)];
        double mx2 = m[sync_find(SYNC_SHARED_POOL, SYNC_POOL, FM_SYNC_MUTEX)];
        double tc2 = m[sync_find(SYNC_SHARED_POOL, SYNC_POOL, FM_SYNC_THREAD_CACHE)];
        double lf2 = m[sync_find(SYNC_SHARED_POOL, SYNC_POOL, FM_SYNC_LOCKFREE)];
        double ma2 = m[sync_find(SYNC_SHARED_POOL, SYNC_MALLOC, FM_SYNC_NONE)];
        printf("\nTargets (%s time): THREAD_CACHE 1 thread / NONE = %.2fx (target <= 1.5x: %s); "
               "shared pool, 2 threads: MUTEX / THREAD_CACHE = %.2fx (target >= 3x: %s), "
               "THREAD_CACHE / malloc = %.2fx (target < 1: %s), LOCKFREE / MUTEX = %.2fx "
               "(target < 1: %s).\n",
               what[k], tc1 / none1, tc1 / none1 <= 1.5 ? "met" : "MISSED", mx2 / tc2,
               mx2 / tc2 >= 3.0 ? "met" : "MISSED", tc2 / ma2, tc2 < ma2 ? "met" : "MISSED",
               lf2 / mx2, lf2 < mx2 ? "met" : "MISSED");
    }
    free(ns);
    free(cpu);
}
