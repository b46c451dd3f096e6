/* tests/memory/test_arena_threads.c: shared arenas (FM_SYNC_LOCKFREE and
 * FM_SYNC_MUTEX) and LOCKFREE frame arenas under 4 and 8 threads.
 *
 * Every allocation is filled with a pattern seeded by its thread and index
 * (its owner tag and checksum) and recorded. After the threads are joined:
 * every pattern is intact, no two allocations overlap, each is aligned as
 * asked and owned by the arena, and the stats are exact (total_allocs and
 * failed_allocs equal what the threads counted; the top ends where the
 * highest allocation ends). Cases cover virtual memory with a one-page
 * commit_step (commit races), chained blocks from an allocator (block-swap
 * races), filling the reserve (ARENA_FULL races), a stats reader running
 * beside the allocators, reset and reuse after a join, frame advances
 * between parallel frames, and the debug check that refuses a reset which
 * overlaps an allocation. */
#define _POSIX_C_SOURCE 200809L

#include "sync_test_support.h"

#include "framemem/framemem.h"

#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

typedef struct rec {
    uint8_t *p;
    size_t size;
    uint32_t seed;
} rec;

typedef enum backing_mode { VM, CHAINED } backing_mode;

typedef struct worker {
    fm_arena *arena;     /* one of arena, fa */
    fm_frame_arena *fa;
    int tid;
    int n;               /* allocation attempts */
    size_t max_size;
    bool bad_calls;      /* also make calls that must fail (bad align, overflow) */
    uint64_t rng;
    /* results */
    rec *recs;
    int count;           /* successful allocations, in recs */
    int failed;          /* calls that returned NULL */
    int bad_failed_right; /* bad calls that failed with FM_ERR_INVALID_ARG */
    int full;            /* failures with FM_ERR_ARENA_FULL */
    int other_errors;    /* failures with anything else */
    int misaligned;
} worker;

/* Valgrind runs one thread at a time and every access slowly: half the
 * work still races the same paths and keeps the binary near 10 s there. */
static int valgrind_scale(void) { return fm_test_under_valgrind() ? 2 : 1; }

/* ------------------------------------------------------------------ workers */

static void *alloc_worker(void *arg) {
    worker *w = arg;
    for (int i = 0; i < w->n; i++) {
        uint64_t r = sync_rand(&w->rng);
        if (w->bad_calls && i % 50 == 7) {
            /* Bad align, then a size that overflows the address space. */
            fm_clear_error();
            void *bad = (i / 50) % 2 ? fm_arena_alloc(w->arena, 8, 24)
                                     : fm_arena_alloc(w->arena, SIZE_MAX - 16, 16);
            w->failed += bad == NULL;
            w->bad_failed_right += bad == NULL && fm_last_error() == FM_ERR_INVALID_ARG;
            continue;
        }
        size_t size = i % 23 == 0 ? 0 : 1 + (size_t)(r % w->max_size);
        size_t align = (size_t)1 << ((r >> 32) % 8); /* 1 .. 128 */
        fm_clear_error();
        uint8_t *p = w->fa ? fm_frame_alloc(w->fa, size, align) : fm_arena_alloc(w->arena, size, align);
        if (!p) {
            w->failed++;
            if (fm_last_error() == FM_ERR_ARENA_FULL) w->full++;
            else w->other_errors++;
            continue;
        }
        if (!fm_is_aligned(p, align)) w->misaligned++;
        uint32_t seed = (uint32_t)w->tid << 24 | (uint32_t)i;
        fm_test_fill(p, size, seed);
        w->recs[w->count++] = (rec){p, size, seed};
    }
    return NULL;
}

static atomic_bool g_stop;

/* Reads stats, marks and ownership while the allocators run: the counters
 * only rise and stay consistent with each other. */
typedef struct reader {
    fm_arena *arena;
    int reads;
    int problems;
} reader;

static void *stats_reader(void *arg) {
    reader *r = arg;
    uint64_t last_allocs = 0, last_used = 0;
    while (!atomic_load(&g_stop) || r->reads < 10) {
        fm_arena_stats s;
        fm_arena_get_stats(r->arena, &s);
        fm_arena_mark m = fm_arena_get_mark(r->arena);
        if (s.total_allocs < last_allocs || s.used < last_used || s.high_water < s.used ||
            s.committed < s.used || m.pos < s.used || m.arena != r->arena)
            r->problems++;
        last_allocs = s.total_allocs;
        last_used = s.used;
        r->reads++;
    }
    return NULL;
}

/* ------------------------------------------------------------------ checks */

static int rec_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const rec *)a)->p, y = (uintptr_t)((const rec *)b)->p;
    return x < y ? -1 : x > y;
}

typedef struct totals {
    uint64_t allocs, failed, full;
    uintptr_t max_end;
    size_t bytes;
} totals;

/* The checks every stress case shares; returns what the workers counted. */
static totals check_workers(worker *w, int n, const fm_arena *arena) {
    totals t = {0};
    size_t all = 0;
    for (int i = 0; i < n; i++) all += (size_t)w[i].count;
    rec *recs = malloc((all ? all : 1) * sizeof *recs);
    assert_non_null(recs);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(w[i].misaligned, 0);
        assert_int_equal(w[i].other_errors, 0);
        t.allocs += (uint64_t)w[i].count;
        t.failed += (uint64_t)w[i].failed;
        t.full += (uint64_t)w[i].full;
        for (int j = 0; j < w[i].count; j++) {
            rec r = w[i].recs[j];
            if (!fm_test_check_fill(r.p, r.size, r.seed)) {
                print_error("thread %d item %d (%zu bytes at %p) was overwritten\n", i, j, r.size,
                            (void *)r.p);
                fail();
            }
            if (arena && !fm_arena_owns(arena, r.p, r.size)) {
                print_error("thread %d item %d is not owned by the arena\n", i, j);
                fail();
            }
            if ((uintptr_t)r.p + r.size > t.max_end) t.max_end = (uintptr_t)r.p + r.size;
            t.bytes += r.size;
            if (r.size) recs[k++] = r;
        }
    }
    qsort(recs, k, sizeof *recs, rec_cmp);
    for (size_t i = 1; i < k; i++) {
        if (recs[i - 1].p + recs[i - 1].size > recs[i].p) {
            print_error("allocations overlap: %zu bytes at %p and %zu at %p\n", recs[i - 1].size,
                        (void *)recs[i - 1].p, recs[i].size, (void *)recs[i].p);
            fail();
        }
    }
    free(recs);
    return t;
}

static worker *make_workers(int n, int attempts, size_t max_size, void *target, bool frame) {
    worker *w = calloc((size_t)n, sizeof *w);
    assert_non_null(w);
    for (int i = 0; i < n; i++) {
        w[i] = (worker){.tid = i + 1, .n = attempts, .max_size = max_size,
                        .rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)};
        if (frame) w[i].fa = target;
        else w[i].arena = target;
        w[i].recs = calloc((size_t)attempts, sizeof *w[i].recs);
        assert_non_null(w[i].recs);
    }
    return w;
}

static void reset_results(worker *w, int n) {
    for (int i = 0; i < n; i++) {
        w[i].count = w[i].failed = w[i].full = w[i].other_errors = w[i].misaligned = 0;
        w[i].bad_failed_right = 0;
    }
}

static void free_workers(worker *w, int n) {
    for (int i = 0; i < n; i++) free(w[i].recs);
    free(w);
}

static fm_arena_stats stats_of(const fm_arena *a) {
    fm_arena_stats s;
    fm_arena_get_stats(a, &s);
    return s;
}

/* ============================================================ stress cases */

typedef struct stress_case {
    fm_sync sync;
    backing_mode mode;
    int threads;
} stress_case;

/* Threads allocate at once (with failing calls mixed in and a stats reader
 * beside them); then everything is checked, the arena reset, and the same
 * again on the reset arena. */
static void run_stress(const stress_case *c) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_arena_desc desc = {.name = "shared", .sync = c->sync, .reserve_bytes = 256 * MIB,
                          .commit_step = c->mode == VM ? 4 * KIB : 8 * KIB};
    if (c->mode == CHAINED) desc.allocator = fm_test_allocator_get(&backing);
    fm_arena *arena = fm_arena_create(&desc);
    assert_non_null(arena);
    const int attempts = 16000 / c->threads / valgrind_scale();
    worker *w = make_workers(c->threads, attempts, 400, arena, false);
    for (int i = 0; i < c->threads; i++) w[i].bad_calls = true;

    for (int round = 0; round < 2; round++) {
        reset_results(w, c->threads);
        fm_arena_stats before = stats_of(arena);
        int errors_before = atomic_load(&errors.count);
        atomic_store(&g_stop, false);
        reader r = {.arena = arena};
        fm_test_thread rt;
        assert_int_equal(fm_test_thread_create(&rt, stats_reader, &r), 0);
        sync_run(c->threads, alloc_worker, w, sizeof *w);
        atomic_store(&g_stop, true);
        assert_int_equal(fm_test_thread_join(rt, NULL), 0);
        assert_int_equal(r.problems, 0);

        totals t = check_workers(w, c->threads, arena);
        int bad = 0;
        for (int i = 0; i < c->threads; i++) bad += w[i].bad_failed_right;
        assert_int_equal((uint64_t)bad, t.failed); /* only the bad calls failed */
        sync_expect_errors(&errors, errors_before, FM_ERR_INVALID_ARG, bad);

        fm_arena_stats s = stats_of(arena);
        assert_int_equal(s.total_allocs - before.total_allocs, t.allocs);
        assert_int_equal(s.failed_allocs - before.failed_allocs, t.failed);
        assert_true(s.used >= t.bytes);
        assert_true(s.high_water >= s.used);
        assert_true(s.committed >= s.used);
        if (c->mode == VM) {
            /* One page at a time: every commit event added at least a page. */
            assert_true(s.commit_events * 4 * KIB <= s.committed);
            assert_true(s.used <= t.bytes + t.allocs * 127);
        } else {
            /* Every block came from the allocator (one more: the arena). */
            assert_int_equal(backing.live_blocks, s.commit_events + 1);
            assert_true(s.committed < backing.live_bytes);
        }
        /* The top is where the highest allocation ends (in virtual memory,
         * where positions follow addresses): a one-byte, unaligned
         * allocation lands exactly there. */
        uint8_t *next = fm_arena_alloc(arena, 1, 1);
        assert_non_null(next);
        if (c->mode == VM) {
            assert_ptr_equal(next, (uint8_t *)t.max_end);
            assert_int_equal(stats_of(arena).used, s.used + 1);
        }

        /* After the join the arena belongs to this thread: reset is allowed. */
        fm_arena_reset(arena);
        s = stats_of(arena);
        assert_int_equal(s.used, 0);
        assert_int_equal(s.resets, (uint64_t)round + 1);
        assert_true(s.high_water >= t.bytes);
    }
    assert_int_equal(atomic_load(&errors.by_code[FM_ERR_ARENA_FULL]), 0);
    free_workers(w, c->threads);
    fm_arena_destroy(arena);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

#define STRESS_TEST(name, sync_, mode_, threads_)                     \
    static void name(void **state) {                                   \
        (void)state;                                                   \
        run_stress(&(stress_case){sync_, mode_, threads_});            \
    }

STRESS_TEST(test_lockfree_vm_arena_4_threads_never_overlap_and_count_exactly, FM_SYNC_LOCKFREE, VM, 4)
STRESS_TEST(test_lockfree_vm_arena_8_threads_never_overlap_and_count_exactly, FM_SYNC_LOCKFREE, VM, 8)
STRESS_TEST(test_lockfree_chained_arena_4_threads_race_block_swaps_safely, FM_SYNC_LOCKFREE, CHAINED, 4)
STRESS_TEST(test_lockfree_chained_arena_8_threads_race_block_swaps_safely, FM_SYNC_LOCKFREE, CHAINED, 8)
STRESS_TEST(test_mutex_vm_arena_4_threads_never_overlap_and_count_exactly, FM_SYNC_MUTEX, VM, 4)
STRESS_TEST(test_mutex_chained_arena_8_threads_never_overlap_and_count_exactly, FM_SYNC_MUTEX, CHAINED, 8)

/* ======================================================= filling the reserve */

/* Threads allocate until the reserve runs out: the commit path races up to
 * the end, failures are ARENA_FULL only, nothing overlaps, nothing passes
 * the reserve, and the counts match. */
static void run_fill(fm_sync sync, backing_mode mode, int threads) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    const size_t reserve = 1 * MIB;
    fm_arena_desc desc = {.name = "filling", .sync = sync, .reserve_bytes = reserve,
                          .commit_step = mode == VM ? 4 * KIB : 8 * KIB};
    if (mode == CHAINED) desc.allocator = fm_test_allocator_get(&backing);
    fm_arena *arena = fm_arena_create(&desc);
    assert_non_null(arena);
    const int attempts = 2 * (int)(reserve / 256) / threads * 2; /* about twice what fits */
    worker *w = make_workers(threads, attempts, 512, arena, false);
    sync_run(threads, alloc_worker, w, sizeof *w);
    totals t = check_workers(w, threads, arena);
    fm_arena_stats s = stats_of(arena);
    assert_true(t.full > 0);
    assert_int_equal(t.full, t.failed);
    assert_int_equal(s.total_allocs, t.allocs);
    assert_int_equal(s.failed_allocs, t.failed);
    assert_int_equal(atomic_load(&errors.by_code[FM_ERR_ARENA_FULL]), (int)t.full);
    assert_int_equal(atomic_load(&errors.count), (int)t.full);
    assert_true(s.used <= reserve);
    assert_true(s.committed <= reserve);
    free_workers(w, threads);
    fm_arena_destroy(arena);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

static void test_lockfree_vm_arena_8_threads_fill_the_reserve_with_arena_full_only(void **state) {
    (void)state;
    run_fill(FM_SYNC_LOCKFREE, VM, 8);
}

static void test_lockfree_chained_arena_4_threads_fill_the_reserve_with_arena_full_only(void **state) {
    (void)state;
    run_fill(FM_SYNC_LOCKFREE, CHAINED, 4);
}

/* A block the allocator refuses fails that allocation (ARENA_FULL) and
 * unseals the arena: the others go on in the current block. */
static void test_lockfree_chained_arena_survives_a_refused_block_under_threads(void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_arena *arena =
        fm_arena_create(&(fm_arena_desc){.name = "refused", .sync = FM_SYNC_LOCKFREE,
                                         .commit_step = 8 * KIB,
                                         .allocator = fm_test_allocator_get(&backing)});
    assert_non_null(arena);
    fm_test_allocator_fail_from(&backing, 1); /* every block from now on */
    worker *w = make_workers(4, 400, 64, arena, false);
    sync_run(4, alloc_worker, w, sizeof *w);
    totals t = check_workers(w, 4, arena);
    assert_true(t.full > 0);
    assert_int_equal(t.full, t.failed);
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.total_allocs, t.allocs);
    assert_int_equal(s.failed_allocs, t.failed);
    assert_int_equal(s.commit_events, 1); /* the first block only */
    /* The block filled up to its end (less than one allocation short). */
    assert_true(s.used + 64 + 128 > 8 * KIB - 64);
    fm_test_allocator_recover(&backing);
    assert_non_null(fm_arena_alloc(arena, 100, 0));
    assert_int_equal(stats_of(arena).commit_events, 2);
    free_workers(w, 4);
    fm_arena_destroy(arena);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

/* ================================================== marks between phases */

/* A mark taken between two parallel phases: rewinding to it after the
 * second phase releases that phase and keeps the first, in both modes. */
static void run_phases(backing_mode mode) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_arena_desc desc = {.name = "phases", .sync = FM_SYNC_LOCKFREE, .commit_step = 8 * KIB};
    if (mode == CHAINED) desc.allocator = fm_test_allocator_get(&backing);
    fm_arena *arena = fm_arena_create(&desc);
    assert_non_null(arena);
    worker *first = make_workers(4, 1000, 200, arena, false);
    worker *second = make_workers(4, 1000, 200, arena, false);
    for (int i = 0; i < 4; i++) second[i].tid += 4;
    sync_run(4, alloc_worker, first, sizeof *first);
    fm_arena_mark mark = fm_arena_get_mark(arena);
    fm_arena_stats at_mark = stats_of(arena);
    assert_int_equal(mark.pos, at_mark.used);
    sync_run(4, alloc_worker, second, sizeof *second);
    (void)check_workers(second, 4, arena);
    fm_arena_rewind(arena, mark);
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.used, at_mark.used);
    assert_int_equal(s.rewinds, 1);
    assert_int_equal(s.total_allocs, 8000);
    (void)check_workers(first, 4, arena); /* intact and still owned */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < second[i].count; j++)
            if (second[i].recs[j].size)
                assert_false(fm_arena_owns(arena, second[i].recs[j].p, second[i].recs[j].size));
    assert_int_equal(atomic_load(&errors.count), 0);
    free_workers(first, 4);
    free_workers(second, 4);
    fm_arena_destroy(arena);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

static void test_lockfree_vm_rewind_between_parallel_phases_keeps_the_first(void **state) {
    (void)state;
    run_phases(VM);
}

static void test_lockfree_chained_rewind_between_parallel_phases_keeps_the_first(void **state) {
    (void)state;
    run_phases(CHAINED);
}

/* ============================================================ frame arenas */

typedef struct frame_run {
    fm_test_barrier start, end;
    int frames;
    worker *w;
} frame_run;

typedef struct frame_thread {
    frame_run *run;
    int index;
} frame_thread;

static void *frame_worker(void *arg) {
    frame_thread *ft = arg;
    for (int f = 0; f < ft->run->frames; f++) {
        fm_test_barrier_wait(&ft->run->start);
        worker *w = &ft->run->w[(f % 2) * SYNC_MAX_THREADS + ft->index];
        w->tid = (f << 4) | ft->index; /* tags differ per frame too */
        alloc_worker(w);
        fm_test_barrier_wait(&ft->run->end);
    }
    return NULL;
}

/* Job threads share one LOCKFREE frame arena through each frame; between
 * frames (threads parked at a barrier) this thread checks the frame and the
 * one before it, which double buffering keeps, then advances. */
static void run_frames(backing_mode mode, int threads) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_frame_arena_desc desc = {.name = "jobs",
                                .arena = {.sync = FM_SYNC_LOCKFREE,
                                          .reserve_bytes = 64 * MIB,
                                          .commit_step = mode == VM ? 4 * KIB : 8 * KIB}};
    if (mode == CHAINED) desc.arena.allocator = fm_test_allocator_get(&backing);
    fm_frame_arena *fa = fm_frame_arena_create(&desc);
    assert_non_null(fa);
    const int frames = 6, attempts = 8000 / threads / 2 / valgrind_scale();
    frame_run run = {.frames = frames};
    run.w = calloc(2 * SYNC_MAX_THREADS, sizeof *run.w);
    assert_non_null(run.w);
    for (int b = 0; b < 2; b++) {
        worker *set = make_workers(threads, attempts, 300, fa, true);
        memcpy(&run.w[b * SYNC_MAX_THREADS], set, (size_t)threads * sizeof *set);
        free(set);
    }
    fm_test_barrier_init(&run.start, (unsigned)threads + 1);
    fm_test_barrier_init(&run.end, (unsigned)threads + 1);
    frame_thread ft[SYNC_MAX_THREADS];
    fm_test_thread tid[SYNC_MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        ft[i] = (frame_thread){&run, i};
        assert_int_equal(fm_test_thread_create(&tid[i], frame_worker, &ft[i]), 0);
    }
    uint64_t expect_allocs = 0, prev_used = 0;
    for (int f = 0; f < frames; f++) {
        worker *cur = &run.w[(f % 2) * SYNC_MAX_THREADS];
        worker *prev = &run.w[((f + 1) % 2) * SYNC_MAX_THREADS];
        reset_results(cur, threads);
        fm_test_barrier_wait(&run.start);
        fm_test_barrier_wait(&run.end);
        totals t = check_workers(cur, threads, fm_frame_arena_current(fa));
        assert_int_equal(t.failed, 0);
        if (f > 0) (void)check_workers(prev, threads, NULL); /* last frame still intact */
        expect_allocs += t.allocs;
        fm_frame_arena_stats s;
        fm_frame_arena_get_stats(fa, &s);
        assert_int_equal(s.frame, (uint64_t)f);
        assert_int_equal(s.total_allocs, expect_allocs);
        assert_int_equal(s.failed_allocs, 0);
        assert_true(s.used >= t.bytes);
        if (f > 0) assert_int_equal(s.history[0], prev_used);
        prev_used = s.used;
        fm_frame_arena_advance(fa);
        fm_frame_arena_get_stats(fa, &s);
        assert_int_equal(s.frame, (uint64_t)f + 1);
        /* The arena coming round was reset (empty) once every arena served. */
        if (f >= 1) assert_int_equal(s.used, 0);
    }
    for (int i = 0; i < threads; i++) assert_int_equal(fm_test_thread_join(tid[i], NULL), 0);
    fm_test_barrier_destroy(&run.start);
    fm_test_barrier_destroy(&run.end);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < threads; i++) free(run.w[b * SYNC_MAX_THREADS + i].recs);
    free(run.w);
    assert_int_equal(atomic_load(&errors.count), 0);
    fm_frame_arena_destroy(fa);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

static void test_lockfree_frame_arena_4_threads_share_frames_across_advances(void **state) {
    (void)state;
    run_frames(VM, 4);
}

static void test_lockfree_frame_arena_8_threads_share_frames_across_advances(void **state) {
    (void)state;
    run_frames(VM, 8);
}

static void test_lockfree_chained_frame_arena_8_threads_share_frames_across_advances(void **state) {
    (void)state;
    run_frames(CHAINED, 8);
}

/* ====================================================== the LOCKFREE rule */

#ifndef NDEBUG /* the check exists in debug builds only */
typedef struct held {
    atomic_int inside;
    atomic_int release;
} held;

static held g_held;

static void hold_in_alloc(fm_test_allocator *a) {
    (void)a;
    atomic_store(&g_held.inside, 1);
    while (!atomic_load(&g_held.release)) fm_test_thread_yield();
}

static void *alloc_one_big(void *arg) {
    return fm_arena_alloc(arg, 64 * KIB, 0);
}

static void *frame_alloc_one_big(void *arg) {
    return fm_frame_alloc(arg, 64 * KIB, 0);
}

/* Runs fn(arg) on a new thread and returns once that thread is parked inside
 * its next block request from backing (so it is inside an allocation). */
static fm_test_thread park_in_alloc(fm_test_allocator *backing, void *(*fn)(void *), void *arg) {
    atomic_store(&g_held.inside, 0);
    atomic_store(&g_held.release, 0);
    backing->hook = hold_in_alloc;
    fm_test_thread t;
    assert_int_equal(fm_test_thread_create(&t, fn, arg), 0);
    while (!atomic_load(&g_held.inside)) fm_test_thread_yield();
    backing->hook = NULL;
    return t;
}

/* Lets the parked thread finish; its allocation must succeed. */
static void unpark(fm_test_thread t) {
    atomic_store(&g_held.release, 1);
    void *big;
    assert_int_equal(fm_test_thread_join(t, &big), 0);
    assert_non_null(big);
}

/* Debug builds: a reset, rewind or decommit while another thread is inside
 * fm_arena_alloc is refused (FM_ERR_INVALID_ARG naming the arena) and
 * changes nothing; the allocation then completes. */
static void test_lockfree_reset_during_an_allocation_is_refused_in_debug_builds(void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_arena *arena =
        fm_arena_create(&(fm_arena_desc){.name = "busy_arena", .sync = FM_SYNC_LOCKFREE,
                                         .allocator = fm_test_allocator_get(&backing)});
    assert_non_null(arena);
    void *first = fm_arena_alloc(arena, 100, 0);
    assert_non_null(first);
    fm_arena_mark mark = fm_arena_get_mark(arena);
    fm_arena_stats before = stats_of(arena);
    fm_test_thread t = park_in_alloc(&backing, alloc_one_big, arena);
    fm_clear_error();
    fm_arena_reset(arena);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    fm_arena_rewind(arena, mark);
    assert_int_equal(fm_arena_decommit(arena, 0), 0);
    sync_expect_errors(&errors, 0, FM_ERR_INVALID_ARG, 3);
    assert_true(fm_test_contains(errors.last_message, "busy_arena"));
    unpark(t);
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.resets, before.resets);
    assert_int_equal(s.rewinds, before.rewinds);
    assert_int_equal(s.decommit_events, 0);
    assert_int_equal(s.total_allocs, 2);
    assert_true(fm_arena_owns(arena, first, 100));
    /* Once the thread is joined the same calls work. */
    fm_arena_rewind(arena, mark);
    assert_int_equal(stats_of(arena).rewinds, 1);
    fm_arena_reset(arena);
    assert_int_equal(stats_of(arena).resets, 1);
    assert_int_equal(atomic_load(&errors.count), 3);
    fm_arena_destroy(arena);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

/* Debug builds: an advance while a job thread is inside fm_frame_alloc is
 * refused (the frame number and the frame's memory stay). */
static void test_lockfree_frame_advance_during_an_allocation_is_refused_in_debug_builds(
    void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){
        .name = "busy_frames",
        .arena = {.sync = FM_SYNC_LOCKFREE, .allocator = fm_test_allocator_get(&backing)}});
    assert_non_null(fa);
    uint8_t *first = fm_frame_alloc(fa, 100, 0);
    assert_non_null(first);
    memset(first, 0x5A, 100);
    fm_test_thread t = park_in_alloc(&backing, frame_alloc_one_big, fa);
    fm_frame_arena_advance(fa);
    sync_expect_errors(&errors, 0, FM_ERR_INVALID_ARG, 1);
    assert_true(fm_test_contains(errors.last_message, "busy_frames"));
    unpark(t);
    fm_frame_arena_stats s;
    fm_frame_arena_get_stats(fa, &s);
    assert_int_equal(s.frame, 0);
    assert_int_equal(s.total_allocs, 2);
    assert_true(fm_arena_owns(fm_frame_arena_current(fa), first, 100));
    fm_frame_arena_advance(fa); /* joined: fine */
    fm_frame_arena_get_stats(fa, &s);
    assert_int_equal(s.frame, 1);
    for (int i = 0; i < 100; i++) assert_int_equal(first[i], 0x5A); /* kept for one more frame */
    assert_int_equal(atomic_load(&errors.count), 1);
    fm_frame_arena_destroy(fa);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}
#endif /* !NDEBUG: release builds have no such check, so no such test */

/* ============================================================= bad descs */

static void test_shared_arena_create_rejects_pool_only_and_unknown_policies(void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    const fm_sync bad[] = {FM_SYNC_THREAD_CACHE, FM_SYNC_COUNT, (fm_sync)77, (fm_sync)-1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = atomic_load(&errors.count);
        fm_clear_error();
        assert_null(fm_arena_create(&(fm_arena_desc){.name = "policy_arena", .sync = bad[i]}));
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        sync_expect_errors(&errors, before, FM_ERR_INVALID_ARG, 1);
        assert_true(fm_test_contains(errors.last_message, "policy_arena"));
        before = atomic_load(&errors.count);
        assert_null(fm_frame_arena_create(
            &(fm_frame_arena_desc){.name = "policy_frames", .arena.sync = bad[i]}));
        sync_expect_errors(&errors, before, FM_ERR_INVALID_ARG, 1);
        assert_true(fm_test_contains(errors.last_message, "policy_frames"));
    }
    /* The accepted policies resolve and report themselves. */
    const fm_sync good[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_LOCKFREE};
    for (size_t i = 0; i < 3; i++) {
        fm_arena *a = fm_arena_create(&(fm_arena_desc){.sync = good[i]});
        assert_non_null(a);
        assert_int_equal(fm_arena_get_desc(a).sync, good[i]);
        fm_arena_destroy(a);
    }
    sync_errors_remove(&errors);
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_arena_create_rejects_pool_only_and_unknown_policies),
        cmocka_unit_test(test_lockfree_vm_arena_4_threads_never_overlap_and_count_exactly),
        cmocka_unit_test(test_lockfree_vm_arena_8_threads_never_overlap_and_count_exactly),
        cmocka_unit_test(test_lockfree_chained_arena_4_threads_race_block_swaps_safely),
        cmocka_unit_test(test_lockfree_chained_arena_8_threads_race_block_swaps_safely),
        cmocka_unit_test(test_mutex_vm_arena_4_threads_never_overlap_and_count_exactly),
        cmocka_unit_test(test_mutex_chained_arena_8_threads_never_overlap_and_count_exactly),
        cmocka_unit_test(test_lockfree_vm_arena_8_threads_fill_the_reserve_with_arena_full_only),
        cmocka_unit_test(test_lockfree_chained_arena_4_threads_fill_the_reserve_with_arena_full_only),
        cmocka_unit_test(test_lockfree_chained_arena_survives_a_refused_block_under_threads),
        cmocka_unit_test(test_lockfree_vm_rewind_between_parallel_phases_keeps_the_first),
        cmocka_unit_test(test_lockfree_chained_rewind_between_parallel_phases_keeps_the_first),
        cmocka_unit_test(test_lockfree_frame_arena_4_threads_share_frames_across_advances),
        cmocka_unit_test(test_lockfree_frame_arena_8_threads_share_frames_across_advances),
        cmocka_unit_test(test_lockfree_chained_frame_arena_8_threads_share_frames_across_advances),
#ifndef NDEBUG
        cmocka_unit_test(test_lockfree_reset_during_an_allocation_is_refused_in_debug_builds),
        cmocka_unit_test(test_lockfree_frame_advance_during_an_allocation_is_refused_in_debug_builds),
#endif
    };
    return cmocka_run_group_tests_name("arena_threads", tests, NULL, NULL);
}
