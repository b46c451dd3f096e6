/*
 * tests/memory/test_pool_backing.c: every byte a pool holds comes from its
 * desc's fm_allocator, thread-cache entries included, and destroy gives all
 * of it back, also while the threads that used the pool are still alive.
 *
 * The pools here run on the counting allocator of fm_test.h. Every call a
 * pool makes to its allocator happens under the pool's lock (or on the one
 * thread that creates or destroys it), so that single-threaded allocator
 * serves a pool used from several threads. On Linux the linker's --wrap
 * (tests/memory/thread_tests.cmake) also routes the library's own calls of
 * malloc, calloc, realloc, posix_memalign, aligned_alloc and free through
 * heap_calls below: a byte taken from the C heap behind the allocator's back
 * fails the tests too. On Windows (MinGW) the same holds for malloc, calloc,
 * realloc and free called from statically linked code, libgcc's emulated
 * TLS included (whose first use in a thread mallocs, inside the
 * thread-cache path if the library used it), and for the library's
 * _aligned_malloc heap (fm__os_heap_alloc and fm__os_heap_free wrapped).
 */
#define _POSIX_C_SOURCE 200809L
#include "fm_test.h"

#include "framemem/pool.h"

#include "fm_test_thread.h"
#include "platform/thread.h"
#include <stdatomic.h>
#include <stdlib.h>

/* ------------------------------------------------------ the C heap, counted */

/* Calls of the C heap made outside the counting allocator (which takes its
 * blocks from the heap itself, with in_backing set). */
static atomic_long heap_calls;
/* The library's spelling of a thread-local: on MinGW a _Thread_local would
 * be emulated, and its first use in each thread would call malloc itself. */
static FM__THREAD_LOCAL int in_backing_tls;
#define in_backing FM__TLS(in_backing_tls)

#if defined(FM_TEST_WRAP_HEAP) && defined(_WIN32)
/* Windows: the library's C heap is _aligned_malloc's, called through its
 * import pointer (dllimport), which --wrap cannot route: the library's own
 * functions around it are wrapped (thread_tests.cmake). */
void *__real_fm__os_heap_alloc(size_t bytes, size_t align);
void __real_fm__os_heap_free(void *p);
void *__wrap_fm__os_heap_alloc(size_t bytes, size_t align);
void __wrap_fm__os_heap_free(void *p);
void *__wrap_fm__os_heap_alloc(size_t bytes, size_t align) {
    if (!in_backing) atomic_fetch_add(&heap_calls, 1);
    return __real_fm__os_heap_alloc(bytes, align);
}
void __wrap_fm__os_heap_free(void *p) {
    if (p && !in_backing) atomic_fetch_add(&heap_calls, 1);
    __real_fm__os_heap_free(p);
}
#endif

#ifdef FM_TEST_WRAP_HEAP
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
#ifndef _WIN32
int __real_posix_memalign(void **out, size_t align, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
#endif
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
#ifndef _WIN32
int __wrap_posix_memalign(void **out, size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
#endif
void __wrap_free(void *p);

static void heap_call(void) {
    if (!in_backing) atomic_fetch_add(&heap_calls, 1);
}
void *__wrap_malloc(size_t size) {
    heap_call();
    return __real_malloc(size);
}
void *__wrap_calloc(size_t n, size_t size) {
    heap_call();
    return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t size) {
    heap_call();
    return __real_realloc(p, size);
}
#ifndef _WIN32
int __wrap_posix_memalign(void **out, size_t align, size_t size) {
    heap_call();
    return __real_posix_memalign(out, align, size);
}
void *__wrap_aligned_alloc(size_t align, size_t size) {
    heap_call();
    return __real_aligned_alloc(align, size);
}
#endif
void __wrap_free(void *p) {
    if (p) heap_call();
    __real_free(p);
}
#endif

/* The counting allocator, with in_backing set while it runs. */
static void *backing_alloc(size_t size, size_t align, void *user) {
    fm_allocator a = fm_test_allocator_get(user);
    in_backing++;
    void *p = a.alloc(size, align, a.user);
    in_backing--;
    return p;
}
static void backing_free(void *ptr, size_t size, void *user) {
    fm_allocator a = fm_test_allocator_get(user);
    in_backing++;
    a.free(ptr, size, a.user);
    in_backing--;
}
static fm_allocator backing(fm_test_allocator *a) {
    return (fm_allocator){.alloc = backing_alloc, .free = backing_free, .user = a};
}

/* ----------------------------------------------------------------- threads */

enum { THREADS = 4, ITEMS = 100 };

typedef struct worker {
    fm_pool *pool;
    fm_test_barrier *used; /* every worker has used the pool */
    fm_test_barrier *go;   /* the workers may exit */
    bool failed;
} worker;

/* Allocates and frees ITEMS items, so the thread's cache holds slots, then
 * waits (alive, its entry in place) until told to exit. */
static void *worker_main(void *arg) {
    worker *w = arg;
    void *items[ITEMS];
    for (int i = 0; i < ITEMS; i++) {
        items[i] = fm_pool_alloc(w->pool);
        if (!items[i]) w->failed = true;
    }
    for (int i = 0; i < ITEMS; i++) fm_pool_free(w->pool, items[i]);
    if (w->used) fm_test_barrier_wait(w->used);
    if (w->go) fm_test_barrier_wait(w->go);
    return NULL;
}

static fm_pool *pool_on(fm_test_allocator *a, fm_sync sync) {
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){
        .name = "backed",
        .item_size = 48,
        .initial_capacity = 4096, /* no growth while the threads run */
        .sync = sync,
        .allocator = backing(a),
    });
    assert_non_null(pool);
    return pool;
}

static const fm_sync cached_policies[] = {FM_SYNC_THREAD_CACHE, FM_SYNC_LOCKFREE};

/* ------------------------------------------------------------------- tests */

/* Each thread's entry (the magazine of THREAD_CACHE, the counters of
 * LOCKFREE) is one block of the pool's allocator, counted in bytes_reserved;
 * destroy, while the threads still live, returns every block, and their
 * exits afterwards touch nothing of the pool. */
static void test_thread_caches_are_the_pools_allocations_and_destroy_frees_them_while_threads_live(
    void **state) {
    fm_test_env *env = *state;
    for (int p = 0; p < 2; p++) {
        fm_pool *pool = pool_on(&env->alloc, cached_policies[p]);
        uint64_t calls = env->alloc.alloc_calls;
        size_t bytes = env->alloc.live_bytes;
        uint64_t reserved = fm_test_pool_stats(pool).bytes_reserved;
        long heap = atomic_load(&heap_calls);

        fm_test_barrier used, go;
        fm_test_barrier_init(&used, THREADS + 1);
        fm_test_barrier_init(&go, THREADS + 1);
        worker w[THREADS];
        fm_test_thread t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            w[i] = (worker){pool, &used, &go, false};
            assert_int_equal(fm_test_thread_create(&t[i], worker_main, &w[i]), 0);
        }
        fm_test_barrier_wait(&used);

        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_allocs, THREADS * ITEMS);
        /* One block per thread, the size of an entry, and nothing else. */
        assert_int_equal(env->alloc.alloc_calls - calls, THREADS);
        assert_int_equal(env->alloc.live_bytes - bytes, THREADS * sizeof(fm__tc_entry));
        assert_int_equal(s.bytes_reserved - reserved, THREADS * sizeof(fm__tc_entry));
        assert_int_equal(fm_pool_check(pool), FM_OK);

        fm_pool_destroy(pool); /* the workers are alive, their entries in place */
        fm_test_allocator_assert_clean(&env->alloc);

        fm_test_barrier_wait(&go);
        for (int i = 0; i < THREADS; i++) {
            assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
            assert_false(w[i].failed);
        }
        fm_test_allocator_assert_clean(&env->alloc);
        assert_int_equal(atomic_load(&heap_calls), heap);
        assert_int_equal(env->errors.count, 0);
        fm_test_barrier_destroy(&used);
        fm_test_barrier_destroy(&go);
    }
}

/* A thread that exits hands its slots back and frees its entry through the
 * pool's allocator: after the joins the pool holds what it held before. */
static void test_entries_of_exited_threads_go_back_to_the_pools_allocator(void **state) {
    fm_test_env *env = *state;
    for (int p = 0; p < 2; p++) {
        fm_pool *pool = pool_on(&env->alloc, cached_policies[p]);
        size_t bytes = env->alloc.live_bytes;
        uint64_t reserved = fm_test_pool_stats(pool).bytes_reserved;
        long heap = atomic_load(&heap_calls);
        worker w[THREADS];
        fm_test_thread t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            w[i] = (worker){pool, NULL, NULL, false};
            assert_int_equal(fm_test_thread_create(&t[i], worker_main, &w[i]), 0);
        }
        for (int i = 0; i < THREADS; i++) {
            assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
            assert_false(w[i].failed);
        }
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(env->alloc.live_bytes, bytes);
        assert_int_equal(s.bytes_reserved, reserved);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_allocs, THREADS * ITEMS);
        assert_int_equal(s.total_frees, THREADS * ITEMS);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_destroy(pool);
        fm_test_allocator_assert_clean(&env->alloc);
        assert_int_equal(atomic_load(&heap_calls), heap);
        assert_int_equal(env->errors.count, 0);
    }
}

/* The allocator refuses a thread's entry: reported as out of memory, and the
 * call goes on without it. A THREAD_CACHE alloc fails (nothing changes but
 * failed_allocs); a LOCKFREE alloc, which keeps only counters there, is
 * served and counted. Once the allocator gives again, so does the pool. */
static void *refused_main(void *arg) {
    worker *w = arg;
    bool tc = fm_pool_get_desc(w->pool).sync == FM_SYNC_THREAD_CACHE;
    fm_pool_stats before = fm_test_pool_stats(w->pool);
    void *item = fm_pool_alloc(w->pool);
    w->failed = (item == NULL) != tc || fm_last_error() != FM_ERR_OUT_OF_MEMORY ||
                !fm_test_contains(fm_last_error_message(), "this thread's cache");
    fm_pool_stats after = fm_test_pool_stats(w->pool);
    w->failed |= after.failed_allocs != before.failed_allocs + tc ||
                 after.total_allocs != before.total_allocs + !tc ||
                 after.bytes_reserved != before.bytes_reserved;
    fm_pool_free(w->pool, item);
    return NULL;
}

static void *recovered_main(void *arg) {
    worker *w = arg;
    void *item = fm_pool_alloc(w->pool);
    w->failed = item == NULL;
    fm_pool_free(w->pool, item);
    return NULL;
}

static void test_a_refused_thread_entry_is_reported_and_the_call_goes_on_without_it(void **state) {
    fm_test_env *env = *state;
    for (int p = 0; p < 2; p++) {
        bool tc = cached_policies[p] == FM_SYNC_THREAD_CACHE;
        fm_pool *pool = pool_on(&env->alloc, cached_policies[p]);
        fm_test_errors_reset(&env->errors);
        uint64_t refused = env->alloc.failed_calls;
        fm_test_allocator_fail_nth(&env->alloc, 1); /* the thread's entry */
        worker w = {pool, NULL, NULL, false};
        fm_test_thread t;
        assert_int_equal(fm_test_thread_create(&t, refused_main, &w), 0);
        assert_int_equal(fm_test_thread_join(t, NULL), 0);
        assert_false(w.failed);
        assert_int_equal(env->alloc.failed_calls - refused, 1);
        assert_int_equal(env->errors.by_code[FM_ERR_OUT_OF_MEMORY], 1);
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(fm_pool_check(pool), FM_OK);

        fm_test_allocator_recover(&env->alloc);
        assert_int_equal(fm_test_thread_create(&t, recovered_main, &w), 0);
        assert_int_equal(fm_test_thread_join(t, NULL), 0);
        assert_false(w.failed);
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_allocs, tc ? 1 : 2);
        assert_int_equal(s.total_frees, tc ? 1 : 2);
        assert_int_equal(s.failed_allocs, tc ? 1 : 0);
        assert_int_equal(env->errors.count, 1);
        fm_pool_destroy(pool);
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

/* A thread holds at most FM__TC_POOLS entries: it serves further pools
 * without a cache (their allocs and frees correct, no entry made), and a
 * pool's destroy frees a place that the next pool then takes. */
typedef struct many_pools {
    fm_test_allocator *alloc;
    fm_pool *pools[FM__TC_POOLS + 2];
    bool failed;
} many_pools;

static bool use_once(fm_pool *pool) {
    void *item = fm_pool_alloc(pool);
    if (!item) return false;
    fm_pool_free(pool, item);
    return true;
}

static void *many_main(void *arg) {
    many_pools *m = arg;
    for (int i = 0; i < FM__TC_POOLS + 2; i++) {
        uint64_t calls = m->alloc->alloc_calls;
        m->failed |= !use_once(m->pools[i]);
        /* An entry of its own for the first FM__TC_POOLS pools only. */
        m->failed |= m->alloc->alloc_calls - calls != (i < FM__TC_POOLS ? 1u : 0u);
        m->failed |= !use_once(m->pools[i]); /* and again, from the cache or not */
        fm_pool_stats s = fm_test_pool_stats(m->pools[i]);
        m->failed |= s.live != 0 || s.total_allocs != 2 || s.total_frees != 2;
        m->failed |= fm_pool_check(m->pools[i]) != FM_OK;
    }
    /* A place comes free: the next use of an uncached pool makes its entry. */
    fm_pool_destroy(m->pools[0]);
    m->pools[0] = NULL;
    uint64_t calls = m->alloc->alloc_calls;
    m->failed |= !use_once(m->pools[FM__TC_POOLS]);
    m->failed |= m->alloc->alloc_calls - calls != 1;
    return NULL;
}

static void test_a_thread_past_its_table_of_entries_serves_the_further_pools_uncached(
    void **state) {
    fm_test_env *env = *state;
    many_pools *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->alloc = &env->alloc;
    for (int i = 0; i < FM__TC_POOLS + 2; i++)
        m->pools[i] = fm_pool_create(&(fm_pool_desc){
            .item_size = 16,
            .sync = i % 2 ? FM_SYNC_LOCKFREE : FM_SYNC_THREAD_CACHE,
            .allocator = backing(&env->alloc),
        });
    long heap = atomic_load(&heap_calls);
    fm_test_thread t; /* a fresh thread: its table is empty */
    assert_int_equal(fm_test_thread_create(&t, many_main, m), 0);
    assert_int_equal(fm_test_thread_join(t, NULL), 0);
    assert_false(m->failed);
    assert_int_equal(atomic_load(&heap_calls), heap);
    for (int i = 0; i < FM__TC_POOLS + 2; i++) fm_pool_destroy(m->pools[i]);
    fm_test_allocator_assert_clean(&env->alloc);
    assert_int_equal(env->errors.count, 0);
    free(m);
}

/* Growth of a pool on the OS's memory (the default allocator) calls the C
 * heap for nothing but the span struct of a growth's chunks, and where the
 * OS releases part of a mapping a used-up span retires as its last chunk
 * opens, so the next growth reuses it: past a pool's first growths no
 * growth calls the heap (one that did, in fm-bench's regrowth, took 17-23
 * us there). On Windows a span stands for its reservation until every
 * chunk of it has gone back, so each growth takes one (and, with no window
 * there, growths take their small arrays from the heap too). Either way the
 * pool checks clean, and trim gives back every chunk but create's. */
static void test_growths_after_a_pools_first_call_the_c_heap_only_on_windows(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){
        .name = "spans", .item_size = 1024, .growth = FM_GROWTH_LINEAR, .grow_step = 1});
    assert_non_null(pool);
    enum { GROWTHS = 40, FIRST = 3 };
    size_t cap = 64 * (GROWTHS + 2);
    void **items = malloc(cap * sizeof *items);
    assert_non_null(items);
    size_t n = 0;
    long at_first = -1; /* the heap's calls once FIRST growths are done */
    fm_pool_stats s;
    fm_pool_get_stats(pool, &s);
    uint64_t g0 = s.grow_events;
    while (s.grow_events - g0 < GROWTHS) {
        assert_true(n < cap);
        items[n] = fm_pool_alloc(pool);
        assert_non_null(items[n++]);
        fm_pool_get_stats(pool, &s);
        if (s.grow_events - g0 == FIRST && at_first < 0) at_first = atomic_load(&heap_calls);
    }
    assert_true(at_first >= 0);
    long later = atomic_load(&heap_calls) - at_first;
    /* linear by one item: each growth one chunk */
    assert_int_equal(s.chunk_count, GROWTHS + 1);
#if defined(FM_TEST_WRAP_HEAP) && defined(_WIN32)
    /* each growth's span, and the small arrays (no window there) */
    assert_true(later >= GROWTHS - FIRST);
#elif defined(FM_TEST_WRAP_HEAP)
    assert_int_equal(later, 0);
#else
    (void)later; /* the heap's calls are not counted here (see thread_tests.cmake) */
#endif
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    fm_pool_trim(pool);
    fm_pool_get_stats(pool, &s);
    assert_int_equal(s.chunk_count, 1);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    fm_pool_destroy(pool);
    free(items);
    assert_int_equal(env->errors.count, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_thread_caches_are_the_pools_allocations_and_destroy_frees_them_while_threads_live),
        T(test_entries_of_exited_threads_go_back_to_the_pools_allocator),
        T(test_a_refused_thread_entry_is_reported_and_the_call_goes_on_without_it),
        T(test_a_thread_past_its_table_of_entries_serves_the_further_pools_uncached),
        T(test_growths_after_a_pools_first_call_the_c_heap_only_on_windows),
#undef T
    };
    return cmocka_run_group_tests_name("pool_backing", tests, NULL, NULL);
}
