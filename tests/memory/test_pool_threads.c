/*
 * tests/memory/test_pool_threads.c: fm_pool under its sync policies.
 *
 * For MUTEX, THREAD_CACHE and LOCKFREE, with 4 and 8 threads (on a 2-core
 * machine, so they interleave at every point): random alloc/free with
 * cross-thread frees through queues, growth races from capacity 1, thread
 * exit with cached slots, handle resolves racing frees, reference counts
 * shared across threads, trim and stats while others work. Each item holds
 * its owner tag and a checksum written after alloc and checked before free;
 * a per-slot flag (indexed by the slot part of the item's handle) proves no
 * slot is ever served twice. At the end: live == 0, stats exact,
 * fm_pool_check clean. Then the single-threaded contracts: misuse reported
 * with nothing changed under each policy, invalid sync values, and for
 * FM_SYNC_NONE the owner rule (wrong-thread reports in debug builds only).
 */
#define _POSIX_C_SOURCE 200809L
#include "sync_test_support.h"

#include "framemem/pool.h"


#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif
/* Debug builds of the library annotate slots for memcheck (pool.c). */
#if !defined(NDEBUG) && defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define TEST_VALGRIND_POOLS 1
#endif
#endif

/* As the library decides (pool.c): debug and sanitizer builds check owners. */
#if !defined(NDEBUG) || defined(FM__SANITIZED)
#define THREAD_CHECKS 1
#endif

static const fm_sync shared_policies[] = {FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE, FM_SYNC_LOCKFREE};
enum { POLICIES = 3 };

/* Fewer operations under Valgrind, which runs one thread at a time. */
static int scaled(int n) { return fm_test_under_valgrind() ? n / 10 : n; }

/* ------------------------------------------------------------------- items */

typedef struct item {
    uint32_t owner;  /* thread that allocated it */
    uint32_t serial; /* per-thread allocation number */
    uint64_t check;  /* checksum of owner and serial */
} item;

static uint64_t item_sum(uint32_t owner, uint32_t serial) {
    return ((uint64_t)owner << 32 | serial) * 0x9E3779B97F4A7C15ull ^ 0xA5A5A5A5u;
}

/* Per-slot "served" flags, indexed by the location bits of the handle. */
enum { SLOT_FLAGS = 1 << 22 };
static atomic_uchar slot_served[SLOT_FLAGS];
static atomic_int served_twice;
static atomic_int bad_checksums;

static uint32_t slot_key(fm_pool *pool, const void *it) {
    fm_handle h = fm_pool_handle(pool, it);
    uint32_t key = (uint32_t)h.bits;
    return key < SLOT_FLAGS ? key : 0;
}

static void item_taken(fm_pool *pool, item *it, uint32_t owner, uint32_t serial) {
    uint32_t key = slot_key(pool, it);
    if (key == 0 || atomic_exchange(&slot_served[key], 1) != 0) atomic_fetch_add(&served_twice, 1);
    it->owner = owner;
    it->serial = serial;
    it->check = item_sum(owner, serial);
}

static void item_give_back(fm_pool *pool, item *it) {
    if (it->check != item_sum(it->owner, it->serial)) atomic_fetch_add(&bad_checksums, 1);
    uint32_t key = slot_key(pool, it);
    if (key == 0 || atomic_exchange(&slot_served[key], 0) != 1) atomic_fetch_add(&served_twice, 1);
    fm_pool_free(pool, it);
}

static void reset_flags(void) {
    for (size_t i = 0; i < SLOT_FLAGS; i++) atomic_store_explicit(&slot_served[i], 0, memory_order_relaxed);
    atomic_store(&served_twice, 0);
    atomic_store(&bad_checksums, 0);
}

static fm_pool *make_pool(fm_sync sync, fm_pool_desc d) {
    d.sync = sync;
    if (!d.item_size) d.item_size = sizeof(item);
    fm_pool *pool = fm_pool_create(&d);
    assert_non_null(pool);
    return pool;
}

static void assert_quiet_pool(fm_pool *pool, uint64_t allocs) {
    fm_pool_stats s = fm_test_pool_stats(pool);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.total_allocs, allocs);
    assert_int_equal(s.total_frees, allocs);
    assert_true(s.peak_live >= 1); /* (trim may have taken capacity below it since) */
    assert_int_equal(fm_pool_check(pool), FM_OK);
    assert_int_equal(atomic_load(&served_twice), 0);
    assert_int_equal(atomic_load(&bad_checksums), 0);
}

/* ------------------------------------------------ queues between threads */

enum { QUEUE_CAP = 256 };
typedef struct queue {
    fm_test_mutex lock;
    item *items[QUEUE_CAP];
    int head, count;
} queue;

static bool queue_push(queue *q, item *it) {
    fm_test_mutex_lock(&q->lock);
    bool ok = q->count < QUEUE_CAP;
    if (ok) q->items[(q->head + q->count++) % QUEUE_CAP] = it;
    fm_test_mutex_unlock(&q->lock);
    return ok;
}

static item *queue_pop(queue *q) {
    fm_test_mutex_lock(&q->lock);
    item *it = NULL;
    if (q->count) {
        it = q->items[q->head];
        q->head = (q->head + 1) % QUEUE_CAP;
        q->count--;
    }
    fm_test_mutex_unlock(&q->lock);
    return it;
}

/* ------------------------------------------------------ random stress */

enum { MAX_THREADS = 8, LOCAL_ITEMS = 64 };

typedef struct stress {
    fm_pool *pool;
    int threads;
    int ops;
    queue queues[MAX_THREADS];
    atomic_ullong allocs;
    atomic_int failed;
} stress;

typedef struct stress_arg {
    stress *s;
    int index;
} stress_arg;

static void *stress_main(void *p) {
    stress_arg *a = p;
    stress *s = a->s;
    uint64_t rng = 0x1234567ull * (uint64_t)(a->index + 1);
    item *mine[LOCAL_ITEMS];
    int n = 0;
    uint32_t serial = 0;
    uint64_t allocs = 0;
    queue *next = &s->queues[(a->index + 1) % s->threads];
    for (int op = 0; op < s->ops; op++) {
        uint64_t r = sync_rand(&rng) % 100;
        if (r < 45 && n < LOCAL_ITEMS) {
            item *it = fm_pool_alloc(s->pool);
            if (!it) {
                atomic_fetch_add(&s->failed, 1);
                continue;
            }
            item_taken(s->pool, it, (uint32_t)a->index, serial++);
            mine[n++] = it;
            allocs++;
        } else if (r < 70 && n) {
            int k = (int)(sync_rand(&rng) % (uint64_t)n);
            item_give_back(s->pool, mine[k]);
            mine[k] = mine[--n];
        } else if (r < 85 && n) {
            /* Cross-thread free: the next thread frees it. */
            if (queue_push(next, mine[n - 1])) n--;
        } else if (r < 99) {
            item *it = queue_pop(&s->queues[a->index]);
            if (it) item_give_back(s->pool, it);
        } else if (sync_rand(&rng) % 8 == 0) {
            /* Now and then: trim and stats while the others work. */
            (void)fm_pool_trim(s->pool);
            fm_pool_stats st = fm_test_pool_stats(s->pool);
            if (st.capacity < st.chunk_count) atomic_fetch_add(&s->failed, 1);
        }
    }
    while (n) item_give_back(s->pool, mine[--n]);
    atomic_fetch_add(&s->allocs, allocs);
    return NULL; /* THREAD_CACHE: the exit returns this thread's cache */
}

static void run_stress(fm_sync sync, int threads, int ops) {
    reset_flags();
    stress *s = calloc(1, sizeof *s);
    assert_non_null(s);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    s->pool = make_pool(sync, (fm_pool_desc){.name = "stress", .initial_capacity = 1,
                                             .allocator = fm_test_allocator_get(&backing)});
    s->threads = threads;
    s->ops = ops;
    for (int i = 0; i < threads; i++) fm_test_mutex_init(&s->queues[i].lock);
    stress_arg args[MAX_THREADS];
    for (int i = 0; i < threads; i++) args[i] = (stress_arg){s, i};
    sync_run(threads, stress_main, args, sizeof args[0]);
    /* Items still queued: freed here, by yet another thread. */
    for (int i = 0; i < threads; i++) {
        item *it;
        while ((it = queue_pop(&s->queues[i])) != NULL) item_give_back(s->pool, it);
        fm_test_mutex_destroy(&s->queues[i].lock);
    }
    fm_pool_flush_thread_cache(s->pool);
    assert_int_equal(atomic_load(&s->failed), 0);
    assert_true(atomic_load(&s->allocs) > 0);
    assert_quiet_pool(s->pool, atomic_load(&s->allocs));
    fm_pool_destroy(s->pool);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    free(s);
}

static void test_pool_threads_random_alloc_free_with_4_threads(void **state) {
    (void)state;
    for (int p = 0; p < POLICIES; p++) run_stress(shared_policies[p], 4, scaled(20000));
}

static void test_pool_threads_random_alloc_free_with_8_threads(void **state) {
    (void)state;
    for (int p = 0; p < POLICIES; p++) run_stress(shared_policies[p], 8, scaled(10000));
}

/* ------------------------------------------------------------ growth races */

enum { GROW_ITEMS = 600 };

typedef struct grow_arg {
    fm_pool *pool;
    int index;
    item *items[GROW_ITEMS];
    int got;
} grow_arg;

static void *grow_main(void *p) {
    grow_arg *a = p;
    for (int i = 0; i < GROW_ITEMS; i++) {
        item *it = fm_pool_alloc(a->pool);
        if (!it) break;
        item_taken(a->pool, it, (uint32_t)a->index, (uint32_t)i);
        a->items[a->got++] = it;
    }
    return NULL;
}

static void test_pool_threads_growth_races_from_capacity_1_serve_each_slot_once(void **state) {
    (void)state;
    for (int p = 0; p < POLICIES; p++) {
        for (int threads = 4; threads <= 8; threads += 4) {
            reset_flags();
            /* 1 KiB items: few slots per chunk, so many growths race. */
            fm_pool *pool = make_pool(shared_policies[p],
                                      (fm_pool_desc){.item_size = 1024, .initial_capacity = 1,
                                                     .growth = FM_GROWTH_LINEAR});
            grow_arg *args = calloc((size_t)threads, sizeof *args);
            assert_non_null(args);
            for (int i = 0; i < threads; i++) args[i] = (grow_arg){.pool = pool, .index = i};
            sync_run(threads, grow_main, args, sizeof *args);
            fm_pool_stats s = fm_test_pool_stats(pool);
            assert_int_equal(s.live, (uint64_t)threads * GROW_ITEMS);
            assert_true(s.grow_events > 0);
            assert_int_equal(fm_pool_check(pool), FM_OK);
            for (int i = 0; i < threads; i++) {
                assert_int_equal(args[i].got, GROW_ITEMS);
                for (int k = 0; k < args[i].got; k++) item_give_back(pool, args[i].items[k]);
            }
            fm_pool_flush_thread_cache(pool);
            assert_quiet_pool(pool, (uint64_t)threads * GROW_ITEMS);
            free(args);
            fm_pool_destroy(pool);
        }
    }
}

/* ------------------------------------------------- thread exit with a cache */

typedef struct exit_arg {
    fm_pool *pool;
    int keep; /* items still live when the thread exits */
    item *kept[8];
} exit_arg;

static void *exit_main(void *p) {
    exit_arg *a = p;
    item *tmp[40];
    for (int i = 0; i < 40; i++) tmp[i] = fm_pool_alloc(a->pool);
    for (int i = 0; i < 40; i++) {
        if (i < a->keep) a->kept[i] = tmp[i];
        else fm_pool_free(a->pool, tmp[i]);
    }
    return NULL; /* free slots stay in this thread's cache until exit */
}

static void test_pool_threads_exit_returns_cached_slots_to_the_pool(void **state) {
    (void)state;
    for (int p = 0; p < POLICIES; p++) {
        fm_pool *pool = make_pool(shared_policies[p], (fm_pool_desc){.growth = FM_GROWTH_FIXED});
        uint64_t cap = fm_test_pool_stats(pool).capacity;
        exit_arg args[4];
        for (int i = 0; i < 4; i++) args[i] = (exit_arg){.pool = pool, .keep = i};
        sync_run(4, exit_main, args, sizeof args[0]);
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0 + 1 + 2 + 3);
        assert_int_equal(s.total_allocs, 160);
        assert_int_equal(s.total_frees, 160 - 6);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        /* Every slot is reachable again from this thread: the FIXED pool
         * serves exactly its capacity, then reports it is full. */
        item **all = calloc(cap, sizeof *all);
        assert_non_null(all);
        for (uint64_t i = 0; i < cap - 6; i++) {
            all[i] = fm_pool_alloc(pool);
            assert_non_null(all[i]);
        }
        fm_clear_error();
        sync_errors errs;
        sync_errors_install(&errs);
        assert_null(fm_pool_alloc(pool));
        sync_expect_errors(&errs, 0, FM_ERR_POOL_FULL, 1);
        sync_errors_remove(&errs);
        for (uint64_t i = 0; i < cap - 6; i++) fm_pool_free(pool, all[i]);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < args[i].keep; k++) fm_pool_free(pool, args[i].kept[k]);
        fm_pool_flush_thread_cache(pool);
        s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_allocs, s.total_frees);
        assert_int_equal(s.failed_allocs, 1);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        free(all);
        fm_pool_destroy(pool);
    }
}

/* A pool destroyed while idle threads' caches hold its slots, then another
 * pool made (likely at the same address): the old entries are never used. */
typedef struct idle_arg {
    fm_pool **pool;
    fm_test_barrier *step;
    int rounds;
} idle_arg;

static void *idle_main(void *p) {
    idle_arg *a = p;
    for (int r = 0; r < a->rounds; r++) {
        fm_test_barrier_wait(a->step); /* pool r exists */
        item *it = fm_pool_alloc(*a->pool);
        if (it) {
            it->check = 7;
            fm_pool_free(*a->pool, it);
        }
        fm_test_barrier_wait(a->step); /* main destroys pool r */
    }
    return NULL;
}

static void test_pool_threads_destroy_with_idle_caches_and_recreate_at_same_address(void **state) {
    (void)state;
    enum { ROUNDS = 6, WORKERS = 3 };
    for (int p = 0; p < POLICIES; p++) {
        fm_pool *pool = NULL;
        fm_test_barrier step;
        fm_test_barrier_init(&step, WORKERS + 1);
        idle_arg arg = {&pool, &step, ROUNDS};
        fm_test_thread t[WORKERS];
        for (int i = 0; i < WORKERS; i++) assert_int_equal(fm_test_thread_create(&t[i], idle_main, &arg), 0);
        for (int r = 0; r < ROUNDS; r++) {
            fm_test_allocator backing;
            fm_test_allocator_init(&backing);
            pool = make_pool(shared_policies[p],
                             (fm_pool_desc){.allocator = fm_test_allocator_get(&backing)});
            fm_test_barrier_wait(&step);
            fm_test_barrier_wait(&step);
            fm_pool_stats s = fm_test_pool_stats(pool);
            assert_int_equal(s.live, 0);
            assert_int_equal(s.total_allocs, WORKERS);
            assert_int_equal(s.total_frees, WORKERS);
            fm_pool_destroy(pool);
            fm_test_allocator_assert_clean(&backing);
            fm_test_allocator_release(&backing);
        }
        for (int i = 0; i < WORKERS; i++) assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
        fm_test_barrier_destroy(&step);
    }
}

/* -------------------------------------------------- handles racing frees */

enum { ENTRIES = 64 };

typedef struct resolve_shared {
    fm_pool *pool;
    int producers;
    atomic_int stop;
    atomic_int resolvers_ready; /* producers start once both resolvers run */
    atomic_uint seq[ENTRIES];
    atomic_ullong handle[ENTRIES];
    atomic_uintptr_t ptr[ENTRIES];
    atomic_ullong dead[ENTRIES]; /* handles whose item is freed already */
    atomic_int wrong;
    atomic_ullong hits, misses;
} resolve_shared;

typedef struct resolve_arg {
    resolve_shared *s;
    int index;
} resolve_arg;

static void *producer_main(void *p) {
    resolve_arg *a = p;
    resolve_shared *s = a->s;
    uint64_t rng = 77u + (uint64_t)a->index;
    int ops = scaled(6000);
    while (atomic_load(&s->resolvers_ready) < 2) fm_test_thread_yield();
    for (int op = 0; op < ops; op++) {
        int e = a->index + s->producers * (int)(sync_rand(&rng) % (ENTRIES / s->producers));
        /* Free the entry's item, then publish its handle as dead. */
        atomic_fetch_add(&s->seq[e], 1); /* odd: changing */
        item *old = (item *)atomic_load(&s->ptr[e]);
        uint64_t old_h = atomic_load(&s->handle[e]);
        if (old) fm_pool_free(s->pool, old);
        atomic_store(&s->dead[e], old_h);
        item *it = fm_pool_alloc(s->pool);
        fm_handle h = it ? fm_pool_handle(s->pool, it) : FM_HANDLE_NULL;
        atomic_store(&s->ptr[e], (uintptr_t)it);
        atomic_store(&s->handle[e], h.bits);
        atomic_fetch_add(&s->seq[e], 1); /* even: stable */
    }
    return NULL;
}

static void *resolver_main(void *p) {
    resolve_arg *a = p;
    resolve_shared *s = a->s;
    uint64_t rng = 991u + (uint64_t)a->index;
    atomic_fetch_add(&s->resolvers_ready, 1);
    /* Until the producers stop, and at least 1000 checked resolves. */
    for (int checked = 0; checked < 1000 || !atomic_load(&s->stop);) {
        int e = (int)(sync_rand(&rng) % ENTRIES);
        unsigned v1 = atomic_load(&s->seq[e]);
        uint64_t h = atomic_load(&s->handle[e]);
        uintptr_t want = atomic_load(&s->ptr[e]);
        uint64_t dead = atomic_load(&s->dead[e]);
        unsigned v2 = atomic_load(&s->seq[e]);
        /* A dead handle never resolves, whatever the slot holds now. */
        if (dead && fm_pool_resolve(s->pool, (fm_handle){dead}) != NULL)
            atomic_fetch_add(&s->wrong, 1);
        if (v1 != v2 || (v1 & 1u) || !h) continue;
        void *got = fm_pool_resolve(s->pool, (fm_handle){h});
        if (got && (uintptr_t)got != want) atomic_fetch_add(&s->wrong, 1);
        atomic_fetch_add(got ? &s->hits : &s->misses, 1);
        checked++;
    }
    return NULL;
}

static void test_pool_threads_resolve_racing_free_gives_the_item_or_null(void **state) {
    (void)state;
    for (int p = 0; p < POLICIES; p++) {
        resolve_shared *s = calloc(1, sizeof *s);
        assert_non_null(s);
        s->pool = make_pool(shared_policies[p], (fm_pool_desc){.initial_capacity = 1});
        s->producers = 2;
        resolve_arg args[4];
        fm_test_thread t[4];
        for (int i = 0; i < 4; i++) {
            args[i] = (resolve_arg){s, i};
            assert_int_equal(fm_test_thread_create(&t[i], i < 2 ? producer_main : resolver_main,
                                            &args[i]),
                             0);
        }
        for (int i = 0; i < 2; i++) assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
        atomic_store(&s->stop, 1);
        for (int i = 2; i < 4; i++) assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
        assert_int_equal(atomic_load(&s->wrong), 0);
        assert_true(atomic_load(&s->hits) + atomic_load(&s->misses) > 0);
        for (int e = 0; e < ENTRIES; e++) {
            item *it = (item *)atomic_load(&s->ptr[e]);
            if (!it) continue;
            assert_ptr_equal(fm_pool_resolve(s->pool, (fm_handle){atomic_load(&s->handle[e])}), it);
            fm_pool_free(s->pool, it);
            assert_null(fm_pool_resolve(s->pool, (fm_handle){atomic_load(&s->handle[e])}));
        }
        assert_int_equal(fm_test_pool_stats(s->pool).live, 0);
        assert_int_equal(fm_pool_check(s->pool), FM_OK);
        fm_pool_destroy(s->pool);
        free(s);
    }
}

/* ------------------------------------------------ shared reference counts */

typedef struct refs_arg {
    fm_pool *pool;
    item **items;
    int count;
    atomic_int *freed;
} refs_arg;

static void *refs_main(void *p) {
    refs_arg *a = p;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < a->count; i++) fm_pool_retain(a->pool, a->items[i]);
        for (int i = 0; i < a->count; i++)
            if (fm_pool_release(a->pool, a->items[i])) atomic_fetch_add(a->freed, 1);
    }
    return NULL;
}

static void count_dtor(void *it, void *user) {
    (void)it;
    atomic_fetch_add((atomic_int *)user, 1);
}

static void test_pool_threads_refcounts_are_atomic_and_the_last_release_frees(void **state) {
    (void)state;
    enum { N = 32, T = 4 };
    for (int p = 0; p < POLICIES; p++) {
        atomic_int dtors = 0, freed = 0;
        fm_pool *pool = make_pool(shared_policies[p], (fm_pool_desc){.dtor = count_dtor, .user = &dtors});
        item *items[N];
        for (int i = 0; i < N; i++) items[i] = fm_pool_alloc(pool);
        refs_arg args[T];
        for (int i = 0; i < T; i++) args[i] = (refs_arg){pool, items, N, &freed};
        sync_run(T, refs_main, args, sizeof args[0]);
        assert_int_equal(atomic_load(&freed), 0); /* the creator's reference holds */
        for (int i = 0; i < N; i++) {
            assert_int_equal(fm_pool_refcount(pool, items[i]), 1);
            assert_true(fm_pool_release(pool, items[i]));
        }
        assert_int_equal(atomic_load(&dtors), N);
        assert_int_equal(fm_test_pool_stats(pool).live, 0);
        fm_pool_destroy(pool);
    }
}

/* ---------------------------------------- single-threaded contracts per policy */

static void test_pool_threads_every_policy_is_accepted_and_invalid_values_rejected(void **state) {
    fm_test_env *env = *state;
    for (int sync = FM_SYNC_NONE; sync < FM_SYNC_COUNT; sync++) {
        fm_pool *pool = fm_pool_create(&(fm_pool_desc){.item_size = 16, .sync = (fm_sync)sync});
        assert_non_null(pool);
        assert_int_equal(fm_pool_get_desc(pool).sync, sync);
        void *it = fm_pool_alloc(pool);
        assert_non_null(it);
        fm_pool_free(pool, it);
        fm_pool_destroy(pool);
    }
    const fm_sync bad[] = {FM_SYNC_COUNT, (fm_sync)99, (fm_sync)-1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fm_clear_error();
        assert_null(fm_pool_create(&(fm_pool_desc){.name = "bad-sync", .item_size = 16, .sync = bad[i]}));
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        assert_true(fm_test_contains(env->errors.message, "sync"));
        assert_true(fm_test_contains(env->errors.message, "bad-sync"));
    }
}

static void test_pool_threads_misuse_is_reported_and_changes_nothing_under_each_policy(void **state) {
    fm_test_env *env = *state;
    for (int p = 0; p < POLICIES; p++) {
        fm_pool *pool = make_pool(shared_policies[p], (fm_pool_desc){.item_size = 24});
        fm_pool *other = make_pool(shared_policies[p], (fm_pool_desc){.item_size = 24});
        char *a = fm_pool_alloc(pool), *b = fm_pool_alloc(pool);
        char *foreign = fm_pool_alloc(other);
        fm_pool_free(pool, b);
        long on_stack = 0;
        char *heap = malloc(64);
        const struct {
            void *ptr;
            fm_error want;
        } cases[] = {
            {b, FM_ERR_DOUBLE_FREE},          {foreign, FM_ERR_FOREIGN_POINTER},
            {&on_stack, FM_ERR_FOREIGN_POINTER}, {heap, FM_ERR_FOREIGN_POINTER},
            {a + 8, FM_ERR_INTERIOR_POINTER},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            fm_pool_stats before = fm_test_pool_stats(pool);
            int calls = env->errors.count;
            fm_pool_free(pool, cases[i].ptr);
            assert_int_equal(env->errors.count, calls + 1);
            assert_int_equal(env->errors.last, cases[i].want);
            fm_pool_stats after = fm_test_pool_stats(pool);
            fm_test_assert_pool_stats_same(&before, &after, 1);
            assert_int_equal(fm_pool_check(pool), FM_OK);
            assert_true(fm_pool_owns(pool, a));
        }
        /* The double-freed slot is still served once only. */
        void *c = fm_pool_alloc(pool), *d = fm_pool_alloc(pool);
        assert_ptr_not_equal(c, d);
        assert_ptr_not_equal(c, a);
        fm_pool_free(pool, c);
        fm_pool_free(pool, d);
        fm_pool_free(pool, a);
        fm_pool_free(other, foreign);
        free(heap);
        assert_int_equal(fm_test_pool_stats(pool).live, 0);
        fm_pool_destroy(pool);
        fm_pool_destroy(other);
    }
}

/* A double free on another thread after a cross-thread free is caught too. */
typedef struct twice_arg {
    fm_pool *pool;
    void *it;
} twice_arg;

static void *free_twice_main(void *p) {
    twice_arg *a = p;
    fm_pool_free(a->pool, a->it);
    fm_pool_free(a->pool, a->it);
    return NULL;
}

static void test_pool_threads_double_free_on_another_thread_is_reported(void **state) {
    (void)state;
    for (int p = 0; p < POLICIES; p++) {
        fm_pool *pool = make_pool(shared_policies[p], (fm_pool_desc){0});
        sync_errors errs;
        sync_errors_install(&errs);
        twice_arg arg = {pool, fm_pool_alloc(pool)};
        sync_run(1, free_twice_main, &arg, sizeof arg);
        sync_expect_errors(&errs, 0, FM_ERR_DOUBLE_FREE, 1);
        sync_errors_remove(&errs);
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_frees, 1);
        assert_int_equal(s.misuse_count, 1);
        fm_pool_destroy(pool);
    }
}

static void test_pool_threads_trim_and_flush_give_chunks_back_under_each_policy(void **state) {
    (void)state;
    for (int p = 0; p < POLICIES; p++) {
        fm_test_allocator backing;
        fm_test_allocator_init(&backing);
        fm_pool *pool = make_pool(shared_policies[p],
                                  (fm_pool_desc){.initial_capacity = 1,
                                                 .allocator = fm_test_allocator_get(&backing)});
        uint64_t per = fm_test_pool_stats(pool).items_per_chunk;
        item **all = calloc(per * 4, sizeof *all);
        assert_non_null(all);
        for (uint64_t i = 0; i < per * 4; i++) all[i] = fm_pool_alloc(pool);
        assert_true(fm_test_pool_stats(pool).chunk_count >= 4);
        for (uint64_t i = 0; i < per * 4; i++) fm_pool_free(pool, all[i]);
        assert_true(fm_pool_trim(pool) > 0);
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.chunk_count, 1);
        assert_int_equal(s.live, 0);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        /* Still usable after trim. */
        for (uint64_t i = 0; i < per * 2; i++) assert_non_null(all[i] = fm_pool_alloc(pool));
        for (uint64_t i = 0; i < per * 2; i++) fm_pool_free(pool, all[i]);
        free(all);
        fm_pool_destroy(pool);
        fm_test_allocator_assert_clean(&backing);
        fm_test_allocator_release(&backing);
    }
}

static void test_pool_threads_flush_and_owner_calls_reject_null(void **state) {
    fm_test_env *env = *state;
    fm_pool_flush_thread_cache(NULL);
    assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
    fm_clear_error();
    fm_pool_set_owner_thread(NULL);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    fm_clear_error();
    fm_pool_release_owner_thread(NULL);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
}

/* The meta word of a live item (live bit 31 | generation) sits at the start
 * of its chunk, one per slot; the slot is the low bits of its handle. */
static uint32_t *meta_of(fm_pool *pool, void *it) {
    fm_pool_stats s = fm_test_pool_stats(pool);
    uint32_t bits = 1;
    while ((1u << bits) < s.items_per_chunk) bits++;
    uint32_t slot = (uint32_t)fm_pool_handle(pool, it).bits & ((1u << bits) - 1u);
    return (uint32_t *)((uintptr_t)it & ~(uintptr_t)(s.chunk_bytes - 1)) + slot;
}

static void test_pool_threads_slot_at_generation_wrap_retires_under_each_policy(void **state) {
    fm_test_env *env = *state;
    for (int p = 0; p < POLICIES; p++) {
        fm_pool *pool = make_pool(shared_policies[p], (fm_pool_desc){.growth = FM_GROWTH_FIXED});
        uint64_t cap = fm_test_pool_stats(pool).capacity;
        item *first = fm_pool_alloc(pool);
        uint32_t *meta = meta_of(pool, first);
        assert_true(*meta & 0x80000000u);
        *meta = 0xFFFFFFFFu; /* live, generation at its maximum */
        fm_test_errors_reset(&env->errors);
        fm_pool_free(pool, first);
        assert_int_equal(env->errors.count, 0);
        assert_int_equal(*meta, 0u); /* retired */
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.capacity, cap - 1);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_frees, 1);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_free(pool, first);
        assert_int_equal(env->errors.last, FM_ERR_DOUBLE_FREE);
        /* Every other slot is served, the retired one never. */
        item **all = calloc(cap, sizeof *all);
        assert_non_null(all);
        for (uint64_t i = 0; i < cap - 1; i++) {
            all[i] = fm_pool_alloc(pool);
            assert_non_null(all[i]);
            assert_ptr_not_equal(all[i], first);
        }
        assert_null(fm_pool_alloc(pool));
        assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
        for (uint64_t i = 0; i < cap - 1; i++) fm_pool_free(pool, all[i]);
        free(all);
        fm_pool_flush_thread_cache(pool);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_destroy(pool);
    }
}

static void test_pool_threads_refused_growth_changes_nothing_under_each_policy(void **state) {
    fm_test_env *env = *state;
    for (int p = 0; p < POLICIES; p++) {
        fm_test_allocator backing;
        fm_test_allocator_init(&backing);
        fm_pool *pool = make_pool(shared_policies[p],
                                  (fm_pool_desc){.name = "refused", .initial_capacity = 1,
                                                 .allocator = fm_test_allocator_get(&backing)});
        uint64_t cap = fm_test_pool_stats(pool).capacity;
        item **all = calloc(cap + 1, sizeof *all);
        assert_non_null(all);
        for (uint64_t i = 0; i < cap; i++) assert_non_null(all[i] = fm_pool_alloc(pool));
        fm_pool_stats before = fm_test_pool_stats(pool);
        fm_test_allocator_fail_from(&backing, 1);
        int calls = env->errors.count;
        assert_null(fm_pool_alloc(pool));
        assert_int_equal(env->errors.count, calls + 1);
        assert_int_equal(env->errors.last, FM_ERR_OUT_OF_MEMORY);
        assert_true(fm_test_contains(env->errors.message, "refused"));
        fm_pool_stats after = fm_test_pool_stats(pool);
        assert_int_equal(after.failed_allocs, before.failed_allocs + 1);
        assert_int_equal(after.capacity, before.capacity);
        assert_int_equal(after.live, before.live);
        assert_int_equal(after.total_allocs, before.total_allocs);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        /* Recovered: growth works again. */
        fm_test_allocator_recover(&backing);
        assert_non_null(all[cap] = fm_pool_alloc(pool));
        for (uint64_t i = 0; i <= cap; i++) fm_pool_free(pool, all[i]);
        free(all);
        assert_int_equal(fm_test_pool_stats(pool).live, 0);
        fm_pool_destroy(pool);
        fm_test_allocator_assert_clean(&backing);
        fm_test_allocator_release(&backing);
    }
}

static void visit(void *it, void *user) {
    ((item *)it)->check = 1;
    (*(int *)user)++;
}

static void count_and_free(void *it, void *user) {
    fm_pool *pool = user;
    fm_pool_free(pool, it); /* a foreach callback may free the item it is given */
}

static void test_pool_threads_handles_refs_foreach_and_delete_under_each_policy(void **state) {
    fm_test_env *env = *state;
    for (int p = 0; p < POLICIES; p++) {
        atomic_int dtors = 0;
        fm_pool *pool = make_pool(shared_policies[p], (fm_pool_desc){.dtor = count_dtor, .user = &dtors});
        item *a = fm_pool_alloc(pool), *b = fm_pool_alloc(pool), *c = fm_pool_alloc(pool);
        fm_handle hb = fm_pool_handle(pool, b);
        assert_ptr_equal(fm_pool_resolve(pool, hb), b);
        fm_pool_free(pool, b);
        assert_null(fm_pool_resolve(pool, hb));
        /* A freed item has no handle and no count. */
        assert_true(fm_handle_is_null(fm_pool_handle(pool, b)));
        assert_int_equal(env->errors.last, FM_ERR_FOREIGN_POINTER);
        fm_pool_retain(pool, b);
        assert_int_equal(env->errors.last, FM_ERR_REFCOUNT);
        assert_int_equal(fm_pool_refcount(pool, b), 0);
        assert_int_equal(env->errors.last, FM_ERR_REFCOUNT);
        assert_false(fm_pool_owns(pool, b));
        assert_true(fm_pool_owns(pool, a));
        /* Counts: retain twice, release twice, then the last release frees. */
        fm_pool_retain(pool, a);
        fm_pool_retain(pool, a);
        assert_int_equal(fm_pool_refcount(pool, a), 3);
        assert_false(fm_pool_release(pool, a));
        assert_false(fm_pool_release(pool, a));
        assert_true(fm_pool_release(pool, a));
        assert_int_equal(atomic_load(&dtors), 1);
        /* foreach sees exactly the live items (none of the cached free slots). */
        int seen = 0;
        fm_pool_foreach(pool, visit, &seen);
        assert_int_equal(seen, 1);
        assert_int_equal(c->check, 1);
        fm_pool_delete(pool, c);
        assert_int_equal(atomic_load(&dtors), 2);
        int calls = env->errors.count;
        fm_pool_delete(pool, c); /* reported before the dtor runs */
        assert_int_equal(env->errors.count, calls + 1);
        assert_int_equal(env->errors.last, FM_ERR_DOUBLE_FREE);
        assert_int_equal(atomic_load(&dtors), 2);
        /* A callback that frees what it visits. */
        for (int i = 0; i < 10; i++) assert_non_null(fm_pool_alloc(pool));
        fm_pool_foreach(pool, count_and_free, pool);
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_allocs, 13);
        assert_int_equal(s.total_frees, 13);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_destroy(pool);
    }
}

/* ------------------------------------------------ FM_SYNC_NONE: the owner */

typedef struct none_arg {
    fm_pool *pool;
    void *item;  /* an item of the pool, allocated by the owner */
    void *batch; /* another one, for fm_pool_free_n */
    void *got;   /* what alloc returned on the thread */
    fm_error alloc_err, free_err, free_n_err, trim_err;
} none_arg;

static void *none_main(void *p) {
    none_arg *a = p;
    fm_clear_error();
    a->got = fm_pool_alloc(a->pool);
    a->alloc_err = fm_last_error();
    fm_clear_error();
    fm_pool_free(a->pool, a->item);
    a->free_err = fm_last_error();
    fm_clear_error();
    fm_pool_free_n(a->pool, &a->batch, 1);
    a->free_n_err = fm_last_error();
    fm_clear_error();
    (void)fm_pool_trim(a->pool);
    a->trim_err = fm_last_error();
    return NULL;
}

static void test_pool_threads_none_pool_used_from_a_second_thread(void **state) {
    (void)state;
    sync_errors errs;
    sync_errors_install(&errs);
    fm_pool *pool = make_pool(FM_SYNC_NONE, (fm_pool_desc){.name = "single"});
    none_arg arg = {.pool = pool, .item = fm_pool_alloc(pool), .batch = fm_pool_alloc(pool)};
    fm_pool_stats before = fm_test_pool_stats(pool);
    sync_run(1, none_main, &arg, sizeof arg);
#ifdef THREAD_CHECKS
    /* Debug builds: refused, reported, nothing changed. */
    assert_null(arg.got);
    assert_int_equal(arg.alloc_err, FM_ERR_WRONG_THREAD);
    assert_int_equal(arg.free_err, FM_ERR_WRONG_THREAD);
    assert_int_equal(arg.free_n_err, FM_ERR_WRONG_THREAD);
    assert_int_equal(arg.trim_err, FM_ERR_WRONG_THREAD);
    sync_expect_errors(&errs, 0, FM_ERR_WRONG_THREAD, 4);
    assert_true(fm_test_contains(errs.last_message, "single"));
    fm_pool_stats after = fm_test_pool_stats(pool);
    fm_test_assert_pool_stats_same(&before, &after, 0);
    assert_true(fm_pool_owns(pool, arg.item));
    assert_true(fm_pool_owns(pool, arg.batch));
    fm_pool_free(pool, arg.item);
    fm_pool_free(pool, arg.batch);
#else
    /* Release builds do not check: the calls went through. */
    assert_non_null(arg.got);
    assert_int_equal(arg.alloc_err, FM_OK);
    assert_int_equal(arg.free_err, FM_OK);
    assert_int_equal(arg.free_n_err, FM_OK);
    assert_int_equal(atomic_load(&errs.count), 0);
    fm_pool_free(pool, arg.got);
    (void)before;
#endif
    assert_int_equal(fm_test_pool_stats(pool).live, 0);
    sync_errors_remove(&errs);
    fm_pool_destroy(pool);
}

typedef struct handover_arg {
    fm_pool *pool;
    int ok;
} handover_arg;

static void *handover_main(void *p) {
    handover_arg *a = p;
    /* The pool has no owner: this thread claims it by using it. */
    void *x = fm_pool_alloc(a->pool);
    fm_pool_free(a->pool, x);
    a->ok = x != NULL && fm_last_error() == FM_OK;
    fm_pool_release_owner_thread(a->pool);
    return NULL;
}

static void test_pool_threads_none_pool_ownership_is_handed_over(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = make_pool(FM_SYNC_NONE, (fm_pool_desc){0});
    fm_pool_release_owner_thread(pool);
    handover_arg arg = {pool, 0};
    sync_run(1, handover_main, &arg, sizeof arg);
    assert_true(arg.ok);
    /* Released again by the thread: the main thread claims it back. */
    void *x = fm_pool_alloc(pool);
    assert_non_null(x);
    fm_pool_free(pool, x);
    /* set_owner_thread takes it without a release (after a join). */
    fm_pool_set_owner_thread(pool);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_test_pool_stats(pool).total_allocs, 2);
    fm_pool_destroy(pool);
}

/* ----------------------------------------- THREAD_CACHE's inline paths
 *
 * Optimised builds inline THREAD_CACHE's common alloc and free (pool.h): a
 * pop or push on the calling thread's last entry when it carries the pool's
 * id. These tests run in every build; in Release they drive that path. */

/* Two threads allocate from one pool and free each other's items, round
 * after round: magazines fill with the other thread's slots and spill. */
enum { PINGPONG_ITEMS = 100, PINGPONG_ROUNDS = 60 };

typedef struct pingpong {
    fm_pool *pool;
    queue queues[2];
    fm_test_barrier step;
} pingpong;

typedef struct pingpong_arg {
    pingpong *pp;
    int index;
} pingpong_arg;

static void *pingpong_main(void *p) {
    pingpong_arg *a = p;
    pingpong *pp = a->pp;
    uint32_t serial = 0;
    int rounds = fm_test_under_valgrind() ? PINGPONG_ROUNDS / 6 : PINGPONG_ROUNDS;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < PINGPONG_ITEMS; i++) {
            item *it = fm_pool_alloc(pp->pool);
            if (!it) {
                atomic_fetch_add(&bad_checksums, 1);
                continue;
            }
            item_taken(pp->pool, it, (uint32_t)a->index, serial++);
            if (!queue_push(&pp->queues[1 - a->index], it)) atomic_fetch_add(&bad_checksums, 1);
        }
        fm_test_barrier_wait(&pp->step);
        item *it;
        while ((it = queue_pop(&pp->queues[a->index])) != NULL) {
            if (it->owner != (uint32_t)(1 - a->index)) atomic_fetch_add(&bad_checksums, 1);
            item_give_back(pp->pool, it);
        }
        fm_test_barrier_wait(&pp->step);
    }
    return NULL; /* the exit returns this thread's cache */
}

static void test_pool_threads_thread_cache_cross_thread_frees_between_two_threads(void **state) {
    (void)state;
    reset_flags();
    pingpong *pp = calloc(1, sizeof *pp);
    assert_non_null(pp);
    pp->pool = make_pool(FM_SYNC_THREAD_CACHE, (fm_pool_desc){.name = "pingpong"});
    for (int i = 0; i < 2; i++) fm_test_mutex_init(&pp->queues[i].lock);
    fm_test_barrier_init(&pp->step, 2);
    pingpong_arg args[2] = {{pp, 0}, {pp, 1}};
    sync_run(2, pingpong_main, args, sizeof args[0]);
    int rounds = fm_test_under_valgrind() ? PINGPONG_ROUNDS / 6 : PINGPONG_ROUNDS;
    assert_quiet_pool(pp->pool, 2u * PINGPONG_ITEMS * (uint64_t)rounds);
    /* Slots circulate: both threads' caches went back at exit, so this
     * thread is served again from what they used. */
    fm_pool_stats s = fm_test_pool_stats(pp->pool);
    assert_true(s.capacity <= 2 * s.items_per_chunk);
    fm_test_barrier_destroy(&pp->step);
    for (int i = 0; i < 2; i++) fm_test_mutex_destroy(&pp->queues[i].lock);
    fm_pool_destroy(pp->pool);
    free(pp);
}

/* An allocator that serves its first block (the pool object) from one
 * static buffer, so every pool made with it sits at the same address. */
typedef struct same_addr {
    _Alignas(64) unsigned char buf[16384];
    bool used;
    size_t live_blocks;
} same_addr;

static void *same_addr_alloc(size_t size, size_t align, void *user) {
    same_addr *sa = user;
    sa->live_blocks++;
    if (!sa->used && size <= sizeof sa->buf && align <= 64) {
        sa->used = true;
        return sa->buf;
    }
    size_t al = align < sizeof(void *) ? sizeof(void *) : align;
    return fm_test_aligned_alloc(al, (size + al - 1) / al * al);
}

static void same_addr_free(void *ptr, size_t size, void *user) {
    (void)size;
    same_addr *sa = user;
    sa->live_blocks--;
    if (ptr == sa->buf) sa->used = false;
    else fm_test_aligned_free(ptr);
}

static same_addr same_addr_state;

/* The thread's last entry belongs to a destroyed pool whose successor has
 * the same address and geometry: the successor never serves the old
 * entry's slots (they were in chunks given back), and counts only its own. */
static void test_pool_threads_thread_cache_pool_recreated_at_same_address_skips_old_entry(void **state) {
    fm_test_env *env = *state;
    same_addr *sa = &same_addr_state;
    memset(sa, 0, sizeof *sa);
    fm_allocator al = {.alloc = same_addr_alloc, .free = same_addr_free, .user = sa};
    enum { N = 100 };
    void *items[N];
    fm_pool *first = NULL;
    for (int round = 0; round < 4; round++) {
        fm_pool *pool = make_pool(FM_SYNC_THREAD_CACHE, (fm_pool_desc){.item_size = 16, .allocator = al});
        if (round == 0) first = pool;
        assert_ptr_equal(pool, first);
        for (int i = 0; i < N; i++) {
            items[i] = fm_pool_alloc(pool);
            assert_non_null(items[i]);
            assert_true(fm_pool_owns(pool, items[i]));
            memset(items[i], 0x5A, 16);
        }
        for (int i = 0; i < N; i++) fm_pool_free(pool, items[i]);
        /* Freed slots are served again (from this thread's cache). */
        void *again = fm_pool_alloc(pool);
        assert_true(fm_pool_owns(pool, again));
        fm_pool_free(pool, again);
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.total_allocs, N + 1);
        assert_int_equal(s.total_frees, N + 1);
        assert_int_equal(s.live, 0);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_destroy(pool); /* this thread's entry keeps slots of it */
    }
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(sa->live_blocks, 0);
}

/* A free after a free of the same item is reported in every build, also
 * when the item sits in the calling thread's cache under other slots, and
 * the slot is still served once only. */
static void test_pool_threads_thread_cache_double_free_is_reported_in_every_build(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = make_pool(FM_SYNC_THREAD_CACHE, (fm_pool_desc){.item_size = 16});
    void *warm = fm_pool_alloc(pool);
    fm_pool_free(pool, warm); /* the thread's entry and its chunk hint are set */
    void *a = fm_pool_alloc(pool), *b = fm_pool_alloc(pool);
    assert_ptr_not_equal(a, b);
    fm_pool_free(pool, a);
    for (int k = 0; k < 3; k++) {
        if (k == 1) fm_pool_free(pool, b); /* a is now below b in the cache */
        if (k == 2) {
            void *again = fm_pool_alloc(pool);
            assert_ptr_equal(again, b); /* b again; a stays cached */
        }
        fm_pool_stats before = fm_test_pool_stats(pool);
        int calls = env->errors.count;
        fm_pool_free(pool, a);
        assert_int_equal(env->errors.count, calls + 1);
        assert_int_equal(env->errors.last, FM_ERR_DOUBLE_FREE);
        fm_pool_stats after = fm_test_pool_stats(pool);
        fm_test_assert_pool_stats_same(&before, &after, 1);
        assert_false(fm_pool_owns(pool, a));
    }
    void *c = fm_pool_alloc(pool), *d = fm_pool_alloc(pool);
    assert_ptr_equal(c, a); /* the top of the cache */
    assert_ptr_not_equal(d, a);
    assert_ptr_not_equal(d, b);
    fm_pool_free(pool, b);
    fm_pool_free(pool, c);
    fm_pool_free(pool, d);
    fm_pool_stats s = fm_test_pool_stats(pool);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.total_allocs, 6);
    assert_int_equal(s.total_frees, 6);
    assert_int_equal(s.misuse_count, 3);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    fm_pool_destroy(pool);
}

/* Two frees of one item racing on two threads, which the inline free of
 * optimised builds may let both succeed, leave the slot in both threads'
 * caches. Made here on purpose in every build: the item's live bit is put
 * back after the first free, so the second thread's free succeeds too. The
 * copy found in use when its thread serves it again (mode 0) or flushes its
 * cache at exit (mode 1) is dropped and reported: the item is never given
 * out twice at once, and the stats stay exact. */
typedef struct dup_arg {
    fm_pool *pool;
    void *item;
    fm_test_barrier *step;
    int mode;
    void *got;
} dup_arg;

static void *dup_main(void *p) {
    dup_arg *a = p;
    fm_pool_free(a->pool, a->item); /* the second free: succeeds */
    fm_test_barrier_wait(a->step);  /* the main thread takes the item again */
    fm_test_barrier_wait(a->step);
    if (a->mode == 0) {
        a->got = fm_pool_alloc(a->pool); /* its copy is in use: another slot */
        fm_pool_free(a->pool, a->got);
    }
    return NULL; /* mode 1: the exit's flush meets the copy */
}

static void test_pool_threads_thread_cache_slot_in_two_caches_is_never_served_twice(void **state) {
    (void)state;
    for (int mode = 0; mode < 2; mode++) {
        fm_pool *pool = make_pool(FM_SYNC_THREAD_CACHE, (fm_pool_desc){.item_size = 16});
        void *x = fm_pool_alloc(pool);
        uint32_t *meta = meta_of(pool, x);
        uint32_t live = *meta;
        fm_pool_free(pool, x);
        *meta = live; /* as if the other thread read it before this free wrote it */
        /* ...and live for the debug tools too, as the library would leave it. */
#ifdef TEST_ASAN
        __asan_unpoison_memory_region(x, 16);
#endif
#ifdef TEST_VALGRIND_POOLS
        VALGRIND_MEMPOOL_ALLOC(pool, x, 16);
#endif
        sync_errors errs;
        sync_errors_install(&errs);
        fm_test_barrier step;
        fm_test_barrier_init(&step, 2);
        dup_arg arg = {pool, x, &step, mode, NULL};
        fm_test_thread t;
        assert_int_equal(fm_test_thread_create(&t, dup_main, &arg), 0);
        fm_test_barrier_wait(&step);
        void *again = fm_pool_alloc(pool); /* the top of this thread's cache */
        assert_ptr_equal(again, x);
        fm_test_barrier_wait(&step);
        assert_int_equal(fm_test_thread_join(t, NULL), 0);
        sync_expect_errors(&errs, 0, FM_ERR_DOUBLE_FREE, 1);
        assert_true(fm_test_contains(errs.last_message, "two frees"));
        sync_errors_remove(&errs);
        if (mode == 0) {
            assert_non_null(arg.got);
            assert_ptr_not_equal(arg.got, x);
        }
        assert_true(fm_pool_owns(pool, x));
        fm_pool_free(pool, x);
        fm_pool_flush_thread_cache(pool);
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_allocs, mode == 0 ? 3 : 2);
        assert_int_equal(s.total_frees, s.total_allocs);
        assert_int_equal(s.misuse_count, 1);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        /* Every slot once: the whole capacity, each a different item. */
        uint64_t cap = s.capacity;
        void **all = calloc(cap, sizeof *all);
        assert_non_null(all);
        for (uint64_t i = 0; i < cap; i++) assert_non_null(all[i] = fm_pool_alloc(pool));
        for (uint64_t i = 0; i < cap; i++) memset(all[i], 0, 16);
        reset_flags();
        for (uint64_t i = 0; i < cap; i++) {
            uint32_t key = slot_key(pool, all[i]);
            assert_int_equal(atomic_exchange(&slot_served[key], 1), 0);
        }
        for (uint64_t i = 0; i < cap; i++) fm_pool_free(pool, all[i]);
        free(all);
        fm_test_barrier_destroy(&step);
        fm_pool_destroy(pool);
    }
}

/* A thread alternating between two pools of one geometry: each item comes
 * from and goes back to its own pool; an item given to the other pool while
 * the thread's last entry (and chunk hint) is its own pool's is reported as
 * foreign and changes neither pool. */
static void test_pool_threads_thread_cache_alternating_pools_keep_their_items(void **state) {
    fm_test_env *env = *state;
    fm_pool *pa = make_pool(FM_SYNC_THREAD_CACHE, (fm_pool_desc){.item_size = 16});
    fm_pool *pb = make_pool(FM_SYNC_THREAD_CACHE, (fm_pool_desc){.item_size = 16});
    enum { N = 300 }; /* several magazines' worth: refills and spills */
    void **ia = calloc(N, sizeof *ia), **ib = calloc(N, sizeof *ib);
    assert_non_null(ia);
    assert_non_null(ib);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            ia[i] = fm_pool_alloc(pa);
            ib[i] = fm_pool_alloc(pb);
            assert_true(fm_pool_owns(pa, ia[i]));
            assert_true(fm_pool_owns(pb, ib[i]));
        }
        for (int i = 0; i < N; i++) {
            fm_pool_free(pa, ia[i]);
            fm_pool_free(pb, ib[i]);
        }
    }
    assert_int_equal(env->errors.count, 0);
    void *x = fm_pool_alloc(pa), *y = fm_pool_alloc(pa);
    fm_pool_free(pa, y); /* pa's entry is the thread's last, hinting x's chunk */
    fm_pool_stats before_a = fm_test_pool_stats(pa), before_b = fm_test_pool_stats(pb);
    fm_pool_free(pb, x);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.last, FM_ERR_FOREIGN_POINTER);
    fm_pool_stats after_a = fm_test_pool_stats(pa), after_b = fm_test_pool_stats(pb);
    fm_test_assert_pool_stats_same(&before_a, &after_a, 0);
    fm_test_assert_pool_stats_same(&before_b, &after_b, 1);
    assert_true(fm_pool_owns(pa, x));
    fm_pool_free(pa, x);
    fm_pool_stats s = fm_test_pool_stats(pa);
    assert_int_equal(s.total_allocs, 3 * N + 2);
    assert_int_equal(s.total_frees, 3 * N + 2);
    assert_int_equal(s.live, 0);
    s = fm_test_pool_stats(pb);
    assert_int_equal(s.total_allocs, 3 * N);
    assert_int_equal(s.live, 0);
    assert_int_equal(fm_pool_check(pa), FM_OK);
    assert_int_equal(fm_pool_check(pb), FM_OK);
    free(ia);
    free(ib);
    fm_pool_destroy(pa);
    fm_pool_destroy(pb);
}

/* The inline free keeps the thread's last freed slot beside the magazine
 * (next_slot) and the library moves it in before using the magazine. Mixing
 * the inline calls with the library's own functions, and filling the
 * magazine to its limit one free at a time, loses no slot and counts
 * exactly; the last freed item is the next one served either way. */
static void test_pool_threads_thread_cache_inline_and_library_calls_mix(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = make_pool(FM_SYNC_THREAD_CACHE, (fm_pool_desc){.item_size = 16});
    enum { N = 3 * FM__TC_SLOTS + 5 }; /* past the magazine's limit: it spills */
    void *items[N];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            items[i] = (round & 1) ? (fm_pool_alloc)(pool) : fm_pool_alloc(pool);
            assert_non_null(items[i]);
            for (int j = 0; j < i; j++) assert_ptr_not_equal(items[i], items[j]);
        }
        for (int i = 0; i < N; i++) {
            if ((i + round) % 3 == 0) (fm_pool_free)(pool, items[i]);
            else fm_pool_free(pool, items[i]);
            /* LIFO through either path: the item just freed comes back. */
            void *again = (i % 2) ? (fm_pool_alloc)(pool) : fm_pool_alloc(pool);
            assert_ptr_equal(again, items[i]);
            if (i % 2) fm_pool_free(pool, again);
            else (fm_pool_free)(pool, again);
        }
        fm_pool_stats s = fm_test_pool_stats(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_allocs, s.total_frees);
        assert_int_equal(fm_pool_check(pool), FM_OK);
    }
    fm_pool_stats s = fm_test_pool_stats(pool);
    assert_int_equal(s.total_allocs, 4 * 2 * N);
    /* The last slot freed inline is still beside the magazine: a flush
     * returns it too, so trim can give every chunk but the first back. */
    void *a = fm_pool_alloc(pool);
    fm_pool_free(pool, a);
    fm_pool_flush_thread_cache(pool);
    fm_pool_trim(pool);
    s = fm_test_pool_stats(pool);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.chunk_count, 1);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    fm_pool_destroy(pool);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, fm_test_setup, fm_test_teardown)
    const struct CMUnitTest tests[] = {
        T(test_pool_threads_every_policy_is_accepted_and_invalid_values_rejected),
        T(test_pool_threads_misuse_is_reported_and_changes_nothing_under_each_policy),
        T(test_pool_threads_flush_and_owner_calls_reject_null),
        T(test_pool_threads_trim_and_flush_give_chunks_back_under_each_policy),
        T(test_pool_threads_slot_at_generation_wrap_retires_under_each_policy),
        T(test_pool_threads_refused_growth_changes_nothing_under_each_policy),
        T(test_pool_threads_handles_refs_foreach_and_delete_under_each_policy),
        T(test_pool_threads_none_pool_ownership_is_handed_over),
        T(test_pool_threads_thread_cache_pool_recreated_at_same_address_skips_old_entry),
        T(test_pool_threads_thread_cache_double_free_is_reported_in_every_build),
        T(test_pool_threads_thread_cache_alternating_pools_keep_their_items),
        T(test_pool_threads_thread_cache_inline_and_library_calls_mix),
        cmocka_unit_test(test_pool_threads_thread_cache_cross_thread_frees_between_two_threads),
        cmocka_unit_test(test_pool_threads_thread_cache_slot_in_two_caches_is_never_served_twice),
        cmocka_unit_test(test_pool_threads_none_pool_used_from_a_second_thread),
        cmocka_unit_test(test_pool_threads_double_free_on_another_thread_is_reported),
        cmocka_unit_test(test_pool_threads_random_alloc_free_with_4_threads),
        cmocka_unit_test(test_pool_threads_random_alloc_free_with_8_threads),
        cmocka_unit_test(test_pool_threads_growth_races_from_capacity_1_serve_each_slot_once),
        cmocka_unit_test(test_pool_threads_exit_returns_cached_slots_to_the_pool),
        cmocka_unit_test(test_pool_threads_destroy_with_idle_caches_and_recreate_at_same_address),
        cmocka_unit_test(test_pool_threads_resolve_racing_free_gives_the_item_or_null),
        cmocka_unit_test(test_pool_threads_refcounts_are_atomic_and_the_last_release_frees),
    };
#undef T
    return cmocka_run_group_tests_name("pool_threads", tests, NULL, NULL);
}
