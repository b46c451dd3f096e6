/* tests/memory/test_pool_reset.c: fm_pool_reset, every live item freed at
 * once with the chunks kept, under every sync policy: counters, capacity,
 * handles made stale, dtors, the refusal inside a walk, frees of items the
 * reset freed, generations renumbered and retired, thread caches dropped,
 * no page fault when the chunks fill again, and the meta words left alone
 * (the O(chunks) reset of NONE and MUTEX). */
#define _POSIX_C_SOURCE 200809L
#include "fm_test.h"

#include "framemem/pool.h"
#include "internal.h" /* fm__pool_set_gen_budget: a renumbering a test can reach */

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

static const fm_sync policies[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                   FM_SYNC_LOCKFREE};
enum { POLICIES = sizeof policies / sizeof policies[0] };

#define create_counted fm_test_pool_create_counted
#define destroy_clean fm_test_pool_destroy_clean
#define stats_of fm_test_pool_stats

/* n items, item i filled with pattern i + 1 (fm_test_fill). */
static void **alloc_many(fm_pool *pool, size_t n) {
    size_t size = (size_t)fm_test_pool_stats(pool).item_size;
    void **items = malloc(n * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < n; i++) {
        items[i] = fm_pool_alloc(pool);
        assert_non_null(items[i]);
        fm_test_fill(items[i], size, (uint32_t)i + 1);
    }
    return items;
}

/* ============================================================ the basics */

/* Three chunks and a bit of items, some freed before: the reset frees the
 * rest, counts them as frees, keeps every chunk, and the next level gets
 * the same slots back without growing. */
static void test_pool_reset_frees_every_item_keeps_the_chunks_and_counts_the_frees(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "level", .item_size = 40,
                                                           .sync = policies[pi]});
        size_t n = (size_t)stats_of(pool).items_per_chunk * 3 + 11;
        void **items = alloc_many(pool, n);
        for (size_t i = 0; i < n; i += 5) fm_pool_free(pool, items[i]);
        size_t freed = (n + 4) / 5;
        fm_pool_stats before = stats_of(pool);
        assert_int_equal(before.live, n - freed);

        fm_pool_reset(pool);
        assert_int_equal(env->errors.count, 0);
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.live, 0);
        assert_int_equal(after.total_frees, n);
        assert_int_equal(after.total_allocs, n);
        assert_int_equal(after.resets, 1);
        assert_int_equal(after.capacity, before.capacity);
        assert_int_equal(after.chunk_count, before.chunk_count);
        assert_int_equal(after.bytes_reserved, before.bytes_reserved);
        assert_int_equal(after.peak_live, before.peak_live);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t i = 0; i < n; i++) assert_false(fm_pool_owns(pool, items[i]));

        /* The next level: the same chunks again, nothing grown. */
        uintptr_t mask = ~(uintptr_t)(before.chunk_bytes - 1);
        for (size_t i = 0; i < n; i++) items[i] = (void *)((uintptr_t)items[i] & mask);
        qsort(items, n, sizeof *items, fm_test_cmp_ptr);
        void **again = alloc_many(pool, n);
        for (size_t i = 0; i < n; i++) {
            void *chunk = (void *)((uintptr_t)again[i] & mask);
            assert_non_null(bsearch(&chunk, items, n, sizeof *items, fm_test_cmp_ptr));
        }
        fm_test_assert_no_overlap(again, n, 40);
        fm_pool_stats refilled = stats_of(pool);
        assert_int_equal(refilled.grow_events, before.grow_events);
        assert_int_equal(refilled.capacity, before.capacity);
        assert_int_equal(refilled.live, n);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t i = 0; i < n; i++) fm_pool_free(pool, again[i]);
        free(items);
        free(again);
        destroy_clean(env, pool);
    }
}

static void test_pool_reset_of_an_empty_pool_changes_nothing_but_its_count(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "empty", .item_size = 16,
                                                           .sync = policies[pi]});
        fm_pool_stats before = stats_of(pool);
        fm_pool_reset(pool);
        fm_pool_reset(pool);
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.resets, 2);
        after.resets = 0;
        fm_test_assert_pool_stats_same(&before, &after, 0);
        assert_int_equal(env->errors.count, 0);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        destroy_clean(env, pool);
    }
}

/* Every handle made before a reset resolves to NULL after it, also once
 * the slots are handed out again; the new items' handles resolve and none
 * equals an old one. Twice, so handles of two levels are checked. */
static void test_pool_reset_makes_every_outstanding_handle_stale(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "handles", .item_size = 32,
                                                           .sync = policies[pi]});
        size_t n = (size_t)stats_of(pool).items_per_chunk * 2 + 3;
        fm_handle *old = malloc(2 * n * sizeof *old);
        assert_non_null(old);
        for (int level = 0; level < 2; level++) {
            void **items = alloc_many(pool, n);
            for (size_t i = 0; i < n; i++) old[level * n + i] = fm_pool_handle(pool, items[i]);
            /* Some handles of dead items too. */
            for (size_t i = 0; i < n; i += 7) fm_pool_free(pool, items[i]);
            fm_pool_reset(pool);
            for (size_t i = 0; i < (level + 1) * n; i++) assert_null(fm_pool_resolve(pool, old[i]));
            free(items);
        }
        void **items = alloc_many(pool, n);
        for (size_t i = 0; i < n; i++) {
            fm_handle h = fm_pool_handle(pool, items[i]);
            assert_ptr_equal(fm_pool_resolve(pool, h), items[i]);
            for (size_t k = 0; k < 2 * n; k++) assert_false(fm_handle_equal(h, old[k]));
        }
        for (size_t i = 0; i < 2 * n; i++) assert_null(fm_pool_resolve(pool, old[i]));
        assert_int_equal(env->errors.count, 0);
        for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
        free(items);
        free(old);
        destroy_clean(env, pool);
    }
}

/* An item the reset freed is a dead item to every call: free and delete
 * report a double free, handle a foreign pointer, counts a dead item, and
 * nothing changes. */
static void test_pool_calls_on_an_item_the_reset_freed_are_reported_and_change_nothing(
    void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "dead", .item_size = 24,
                                                           .sync = policies[pi]});
        void **items = alloc_many(pool, 40);
        for (size_t i = 0; i < 40; i++) fm_pool_retain(pool, items[i]); /* counts of 2 */
        fm_pool_reset(pool);
        void *keep = fm_pool_alloc(pool); /* a slot handed out again */
        assert_non_null(keep);
        fm_pool_stats before = stats_of(pool);
        int reports = env->errors.count;
        for (size_t i = 0; i < 40; i++) {
            if (items[i] == keep) continue;
            fm_pool_free(pool, items[i]);
            assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
        }
        fm_pool_delete(pool, items[5] == keep ? items[6] : items[5]);
        assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
        assert_true(
            fm_handle_is_null(fm_pool_handle(pool, items[7] == keep ? items[8] : items[7])));
        assert_int_equal(fm_last_error(), FM_ERR_FOREIGN_POINTER);
        assert_int_equal(fm_pool_refcount(pool, items[3] == keep ? items[4] : items[3]), 0);
        assert_int_equal(fm_last_error(), FM_ERR_REFCOUNT);
        int bad = env->errors.count - reports;
        assert_int_equal(bad, 39 + 3);
        fm_pool_stats after = stats_of(pool);
        fm_test_assert_pool_stats_same(&before, &after, (uint64_t)bad);
        /* The slot handed out again is a new item with its own count. */
        assert_int_equal(fm_pool_refcount(pool, keep), 1);
        assert_true(fm_pool_owns(pool, keep));
        fm_pool_free(pool, keep);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        free(items);
        destroy_clean(env, pool);
    }
}

/* The item the last alloc took (under NONE, the slot a free just before
 * left waiting), freed by a reset: a free of it is reported and changes
 * nothing, and the slots handed out after it are all distinct (the inline
 * free's shortcut for that item is dropped by the reset, see
 * detail/pool.h). */
static void test_pool_free_of_the_last_allocs_item_after_a_reset_is_reported(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "last", .item_size = 24, .sync = policies[pi]});
        void *a = fm_pool_alloc(pool), *b = fm_pool_alloc(pool);
        assert_non_null(a);
        assert_non_null(b);
        fm_pool_free(pool, a);
        void *y = fm_pool_alloc(pool);
        if (policies[pi] == FM_SYNC_NONE) assert_ptr_equal(y, a);
        fm_pool_reset(pool);
        fm_pool_stats before = stats_of(pool);
        int reports = env->errors.count;
        fm_pool_free(pool, y);
        assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
        assert_int_equal(env->errors.count, reports + 1);
        fm_pool_stats after = stats_of(pool);
        fm_test_assert_pool_stats_same(&before, &after, 1);
        enum { AGAIN = 3 };
        void *again[AGAIN];
        for (size_t i = 0; i < AGAIN; i++) {
            assert_non_null(again[i] = fm_pool_alloc(pool));
            for (size_t k = 0; k < i; k++) assert_ptr_not_equal(again[i], again[k]);
        }
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t i = 0; i < AGAIN; i++) fm_pool_free(pool, again[i]);
        destroy_clean(env, pool);
    }
}

/* Four chunks full, a reset, then the first chunk's slots and three more
 * handed out again: the first chunk is full and no longer current, the
 * second current, the last two untouched, their meta words still as the
 * reset found them (live: see the top of this file). A free of any item the
 * reset freed, in the current chunk or one that is not, is reported and
 * changes nothing; the items handed out again then free as usual, back and
 * forth between two chunks. */
static void test_pool_frees_of_reset_items_in_chunks_not_current_are_reported(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "stale", .item_size = 64,
                                                           .chunk_bytes = 4096,
                                                           .sync = policies[pi]});
        size_t per = (size_t)stats_of(pool).items_per_chunk;
        size_t n = per * 4;
        void **items = alloc_many(pool, n);
        fm_pool_reset(pool);
        size_t m = per + 3;
        void **again = alloc_many(pool, m);
        fm_pool_stats before = stats_of(pool);
        assert_int_equal(before.chunk_count, 4);
        int reports = env->errors.count;
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            bool handed = false;
            for (size_t j = 0; j < m && !handed; j++) handed = again[j] == items[i];
            if (handed) continue;
            fm_pool_free(pool, items[i]);
            assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
            bad++;
        }
        assert_int_equal(bad, n - m);
        assert_int_equal(env->errors.count - reports, (int)bad);
        fm_pool_stats after = stats_of(pool);
        fm_test_assert_pool_stats_same(&before, &after, (uint64_t)bad);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t j = 0; j < m; j += 2) fm_pool_free(pool, again[j]);
        for (size_t j = 1; j < m; j += 2) fm_pool_free(pool, again[j]);
        assert_int_equal(env->errors.count - reports, (int)bad);
        assert_int_equal(stats_of(pool).live, 0);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        free(items);
        free(again);
        destroy_clean(env, pool);
    }
}

/* =================================================================== dtors */

typedef struct dtor_log {
    fm_pool *pool;
    size_t calls;
    size_t not_live; /* calls on something that was not a live item */
    void *victim;    /* freed by the first dtor call, when set */
} dtor_log;

static void dtor_count(void *item, void *user) {
    dtor_log *log = user;
    if (!fm_pool_owns(log->pool, item)) log->not_live++;
    log->calls++;
    if (log->victim && item != log->victim) {
        fm_pool_free(log->pool, log->victim); /* a dtor may free other items */
        log->victim = NULL;
    }
}

static void test_pool_reset_runs_the_dtor_once_on_each_live_item_first(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        dtor_log log = {0};
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "dtors", .item_size = 48,
                                                           .sync = policies[pi],
                                                           .dtor = dtor_count, .user = &log});
        log.pool = pool;
        size_t n = (size_t)stats_of(pool).items_per_chunk + 50;
        void **items = alloc_many(pool, n);
        for (size_t i = 0; i < n; i += 3) fm_pool_free(pool, items[i]); /* no dtor for these */
        size_t live = n - (n + 2) / 3;
        log.victim = items[n - 1]; /* live (n - 1 is not a multiple of 3 here) */
        assert_true((n - 1) % 3 != 0);
        fm_pool_reset(pool);
        /* The victim died in the first call, before its own turn. */
        assert_int_equal(log.calls, live - 1);
        assert_int_equal(log.not_live, 0);
        assert_int_equal(env->errors.count, 0);
        fm_pool_stats s = stats_of(pool);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_frees, n);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        free(items);
        destroy_clean(env, pool);
    }
}

/* ============================================================== refusals */

typedef struct walk_reset {
    fm_pool *pool;
    size_t visits;
    int refused;
} walk_reset;

static void reset_from_inside(void *item, void *user) {
    walk_reset *w = user;
    (void)item;
    w->visits++;
    fm_clear_error();
    fm_pool_reset(w->pool);
    if (fm_last_error() == FM_ERR_INVALID_ARG) w->refused++;
}

/* A reset from a foreach callback is reported and frees nothing: the walk
 * goes on over every item. */
static void test_pool_reset_inside_foreach_is_reported_and_changes_nothing(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "walking", .item_size = 16,
                                                           .sync = policies[pi]});
        void **items = alloc_many(pool, 100);
        fm_pool_stats before = stats_of(pool);
        walk_reset w = {.pool = pool};
        int reports = env->errors.count;
        fm_pool_foreach(pool, reset_from_inside, &w);
        assert_int_equal(w.visits, 100);
        assert_int_equal(w.refused, 100);
        assert_int_equal(env->errors.count - reports, 100);
        assert_true(fm_test_contains(env->errors.message, "fm_pool_reset inside fm_pool_foreach"));
        assert_true(fm_test_contains(env->errors.message, "'walking'"));
        fm_pool_stats after = stats_of(pool);
        fm_test_assert_pool_stats_same(&before, &after, 100);
        for (size_t i = 0; i < 100; i++) assert_true(fm_pool_owns(pool, items[i]));
        for (size_t i = 0; i < 100; i++)
            assert_true(fm_test_check_fill(items[i], 16, (uint32_t)i + 1));
        /* Outside the walk it works. */
        fm_pool_reset(pool);
        assert_int_equal(stats_of(pool).live, 0);
        free(items);
        destroy_clean(env, pool);
    }
}

static fm_pool *g_self_reset_pool;
static int g_self_reset_refused;

static void dtor_resets(void *item, void *user) {
    (void)item, (void)user;
    fm_clear_error();
    fm_pool_reset(g_self_reset_pool);
    if (fm_last_error() == FM_ERR_INVALID_ARG) g_self_reset_refused++;
}

/* The dtor a reset runs may not start another reset. */
static void test_pool_reset_from_the_dtor_of_a_reset_is_refused(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "nested", .item_size = 16,
                                                       .dtor = dtor_resets});
    g_self_reset_pool = pool;
    g_self_reset_refused = 0;
    void **items = alloc_many(pool, 10);
    fm_pool_reset(pool);
    assert_int_equal(g_self_reset_refused, 10);
    assert_int_equal(env->errors.count, 10);
    fm_pool_stats s = stats_of(pool);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.resets, 1);
    assert_int_equal(s.misuse_count, 10);
    free(items);
    destroy_clean(env, pool);
}

/* ============================================================= generations */

/* With the generation budget kept at 1 or less, every other reset
 * renumbers the generations: handles of every level stay stale, new ones
 * resolve, and the pool stays consistent. */
static void test_pool_reset_renumbering_keeps_every_old_handle_stale(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "renumber", .item_size = 32,
                                                           .sync = policies[pi]});
        enum { N = 300, LEVELS = 7 };
        fm_handle old[LEVELS * N];
        for (int level = 0; level < LEVELS; level++) {
            /* Budget 1: every other reset renumbers. */
            fm__pool_set_gen_budget(pool, 1);
            void **items = alloc_many(pool, N);
            for (size_t i = 0; i < N; i++) {
                old[level * N + i] = fm_pool_handle(pool, items[i]);
                assert_ptr_equal(fm_pool_resolve(pool, old[level * N + i]), items[i]);
            }
            /* Some items die and come back within the level. */
            for (size_t i = 0; i < N; i += 4) fm_pool_free(pool, items[i]);
            for (size_t i = 0; i < N; i += 4) assert_non_null(items[i] = fm_pool_alloc(pool));
            fm_pool_reset(pool);
            for (size_t i = 0; i < (size_t)(level + 1) * N; i++)
                assert_null(fm_pool_resolve(pool, old[i]));
            assert_int_equal(fm_pool_check(pool), FM_OK);
            free(items);
        }
        assert_int_equal(env->errors.count, 0);
        destroy_clean(env, pool);
    }
}

/* A live item whose slot has no generation left: the reset frees it and the
 * slot retires (capacity one lower), never handed out again. */
static void test_pool_reset_retires_a_slot_whose_generations_are_used_up(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "spent", .item_size = 32,
                                                           .growth = FM_GROWTH_FIXED,
                                                           .sync = policies[pi]});
        fm_pool_stats s = stats_of(pool);
        /* The whole chunk live; its lowest item is slot 0, whose meta word
         * (live bit | generation) opens the chunk. */
        void **all = alloc_many(pool, (size_t)s.capacity);
        qsort(all, (size_t)s.capacity, sizeof *all, fm_test_cmp_ptr);
        uint8_t *first = all[0];
        free(all);
        uint32_t *meta0 = (uint32_t *)((uintptr_t)first & ~(uintptr_t)(s.chunk_bytes - 1));
        assert_true(*meta0 & 0x80000000u);
        *meta0 = 0xFFFFFFFFu; /* live, generation at its maximum */
        fm_handle last = fm_pool_handle(pool, first);
        assert_ptr_equal(fm_pool_resolve(pool, last), first);
        fm_pool_reset(pool);
        assert_null(fm_pool_resolve(pool, last));
        size_t n = (size_t)s.capacity - 1;
        void **items = malloc(n * sizeof *items);
        assert_non_null(items);
        for (size_t i = 0; i < n; i++) {
            items[i] = fm_pool_alloc(pool);
            assert_non_null(items[i]);
            assert_ptr_not_equal(items[i], first);
        }
        assert_null(fm_pool_alloc(pool));
        assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.capacity, s.capacity - 1);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
        assert_null(fm_pool_resolve(pool, last));
        free(items);
        fm_test_errors_reset(&env->errors);
        destroy_clean(env, pool);
    }
}

/* ============================================================ O(chunks) */

/* NONE and MUTEX without a dtor: the reset writes no item's meta word (it
 * costs O(chunks)); the items are dead all the same. THREAD_CACHE and
 * LOCKFREE, whose lock-free paths trust the word alone, clear each. */
static void test_pool_reset_leaves_meta_words_alone_except_under_cached_policies(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "words", .item_size = 64,
                                                           .sync = policies[pi]});
        fm_pool_stats s = stats_of(pool);
        size_t n = s.items_per_chunk; /* the whole first chunk */
        void **items = alloc_many(pool, n);
        qsort(items, n, sizeof *items, fm_test_cmp_ptr); /* slot i = item i */
        uint32_t *meta = (uint32_t *)((uintptr_t)items[0] & ~(uintptr_t)(s.chunk_bytes - 1));
        for (size_t i = 0; i < n; i++)
            assert_ptr_equal((uint8_t *)items[0] + i * s.stride, items[i]);
        uint32_t *copy = malloc(n * sizeof *copy);
        assert_non_null(copy);
        memcpy(copy, meta, n * sizeof *copy);
        fm_pool_reset(pool);
        bool cached = policies[pi] == FM_SYNC_THREAD_CACHE || policies[pi] == FM_SYNC_LOCKFREE;
        for (size_t i = 0; i < n; i++) {
            if (cached) assert_int_equal(meta[i], (copy[i] & 0x7FFFFFFFu) + 1);
            else assert_int_equal(meta[i], copy[i]);
            assert_false(fm_pool_owns(pool, items[i]));
        }
        free(copy);
        free(items);
        destroy_clean(env, pool);
    }
}

/* The next level fills the chunks again without a page fault. */
static void test_pool_refill_after_reset_takes_no_page_fault(void **state) {
    fm_test_env *env = *state;
    if (fm_test_under_valgrind()) {
        print_message("[ did not apply ] page faults refilling a pool after its reset: "
                      "Valgrind's own memory faults in\n");
        skip();
    }
    if (!fm_test_page_faults_counted("page faults refilling a pool after its reset")) return;
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.name = "faults", .item_size = 200,
                                                   .initial_capacity = 4000});
    assert_non_null(pool);
    void **items = malloc(4000 * sizeof *items);
    assert_non_null(items);
    for (int level = 0; level < 3; level++) {
        uint64_t before = fm_test_minor_faults();
        for (size_t i = 0; i < 4000; i++) {
            items[i] = fm_pool_alloc(pool);
            assert_non_null(items[i]);
            memset(items[i], level, 200);
        }
        uint64_t faults = fm_test_minor_faults() - before;
        print_message("level %d: %llu minor faults filling 4000 x 200 bytes\n", level,
                      (unsigned long long)faults);
        /* A refill that faulted the pool's pages in again would take about
         * 200 (800 KB); an emulator's own faults, translating the code a
         * reset leads into, are a few. */
        if (level == 0) assert_true(faults > 50); /* the pages came in as used */
        else assert_true(faults <= fm_test_emulator_fault_slack());
        fm_pool_reset(pool);
    }
    free(items);
    assert_int_equal(env->errors.count, 0);
    fm_pool_destroy(pool);
}

/* ======================================================== thread caches */

enum { THREADS = 4, PHASE1 = 500, PHASE2 = 300, MAIN2 = 1000 };

typedef struct worker {
    fm_pool *pool;
    fm_test_barrier *barrier;
    void **after; /* PHASE2 items allocated after the reset */
} worker;

/* Before the reset: PHASE1 items, every other one freed (the magazine holds
 * free slots); after it: PHASE2 more, kept until main has looked. */
static void *worker_run(void *arg) {
    worker *w = arg;
    void **items = malloc(PHASE1 * sizeof *items);
    if (!items) abort();
    for (size_t i = 0; i < PHASE1; i++) items[i] = fm_pool_alloc(w->pool);
    for (size_t i = 0; i < PHASE1; i += 2)
        if (items[i]) fm_pool_free(w->pool, items[i]);
    free(items);
    fm_test_barrier_wait(w->barrier); /* main resets */
    fm_test_barrier_wait(w->barrier);
    for (size_t i = 0; i < PHASE2; i++) w->after[i] = fm_pool_alloc(w->pool);
    fm_test_barrier_wait(w->barrier); /* main looks */
    fm_test_barrier_wait(w->barrier);
    for (size_t i = 0; i < PHASE2; i++) fm_pool_free(w->pool, w->after[i]);
    return NULL;
}

/* THREAD_CACHE and LOCKFREE: threads hold cached slots and live items and
 * wait while the reset runs (no call overlaps it): the reset drops every
 * thread's cached slots, and afterwards the threads and the resetting one
 * allocate afresh, no slot handed out twice. */
static void test_pool_reset_drops_every_threads_cached_slots(void **state) {
    fm_test_env *env = *state;
    const fm_sync cached[] = {FM_SYNC_THREAD_CACHE, FM_SYNC_LOCKFREE};
    for (int ci = 0; ci < 2; ci++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "threads", .item_size = 24,
                                                           .initial_capacity = 4096,
                                                           .sync = cached[ci]});
        fm_test_barrier barrier;
        fm_test_barrier_init(&barrier, THREADS + 1);
        fm_test_thread t[THREADS];
        worker w[THREADS];
        void **all = malloc((THREADS * PHASE2 + MAIN2) * sizeof *all);
        assert_non_null(all);
        for (int i = 0; i < THREADS; i++) {
            w[i] = (worker){.pool = pool, .barrier = &barrier, .after = all + i * PHASE2};
            assert_int_equal(fm_test_thread_create(&t[i], worker_run, &w[i]), 0);
        }
        void **mine = alloc_many(pool, 100);
        for (size_t i = 0; i < 100; i += 2) fm_pool_free(pool, mine[i]);
        fm_test_barrier_wait(&barrier);
        fm_pool_stats before = stats_of(pool);
        assert_int_equal(before.live, THREADS * PHASE1 / 2 + 50);
        fm_pool_reset(pool);
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.live, 0);
        assert_int_equal(after.total_frees, after.total_allocs);
        assert_int_equal(after.capacity, before.capacity);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_test_barrier_wait(&barrier);
        for (size_t i = 0; i < MAIN2; i++)
            assert_non_null(all[THREADS * PHASE2 + i] = fm_pool_alloc(pool));
        fm_test_barrier_wait(&barrier);
        size_t n = THREADS * PHASE2 + MAIN2;
        assert_int_equal(stats_of(pool).live, n);
        void **sorted = malloc(n * sizeof *sorted);
        assert_non_null(sorted);
        memcpy(sorted, all, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, fm_test_cmp_ptr);
        for (size_t i = 0; i < n; i++) assert_non_null(sorted[i]);
        for (size_t i = 0; i + 1 < n; i++) assert_ptr_not_equal(sorted[i], sorted[i + 1]);
        assert_int_equal(stats_of(pool).grow_events, before.grow_events);
        fm_test_barrier_wait(&barrier);
        for (int i = 0; i < THREADS; i++) fm_test_thread_join(t[i], NULL);
        for (size_t i = 0; i < MAIN2; i++) fm_pool_free(pool, all[THREADS * PHASE2 + i]);
        assert_int_equal(stats_of(pool).live, 0);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        assert_int_equal(env->errors.count, 0);
        fm_test_barrier_destroy(&barrier);
        free(sorted);
        free(mine);
        free(all);
        destroy_clean(env, pool);
    }
}

typedef struct resolver {
    fm_pool *pool;
    const fm_handle *handles;
    size_t n;
    atomic_bool stop;
    atomic_size_t found, gone;
} resolver;

static void *resolve_run(void *arg) {
    resolver *r = arg;
    while (!atomic_load(&r->stop)) {
        for (size_t i = 0; i < r->n; i++) {
            if (fm_pool_resolve(r->pool, r->handles[i])) atomic_fetch_add(&r->found, 1);
            else atomic_fetch_add(&r->gone, 1);
        }
    }
    return NULL;
}

/* MUTEX: a reset may run while other threads resolve (without the lock):
 * each resolve gives the item or NULL, and once the reset has returned,
 * NULL for good. */
static void test_pool_reset_under_mutex_runs_while_other_threads_resolve(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "shared", .item_size = 32,
                                                       .sync = FM_SYNC_MUTEX});
    enum { N = 500, LEVELS = 20 };
    fm_handle *hs = malloc(N * sizeof *hs);
    assert_non_null(hs);
    for (int level = 0; level < LEVELS; level++) {
        void **items = alloc_many(pool, N);
        for (size_t i = 0; i < N; i++) hs[i] = fm_pool_handle(pool, items[i]);
        resolver r = {.pool = pool, .handles = hs, .n = N};
        fm_test_thread t;
        assert_int_equal(fm_test_thread_create(&t, resolve_run, &r), 0);
        while (atomic_load(&r.found) + atomic_load(&r.gone) < N) fm_test_thread_yield();
        fm_pool_reset(pool);
        for (size_t i = 0; i < N; i++) assert_null(fm_pool_resolve(pool, hs[i]));
        atomic_store(&r.stop, true);
        fm_test_thread_join(t, NULL);
        free(items);
    }
    assert_int_equal(stats_of(pool).resets, LEVELS);
    assert_int_equal(env->errors.count, 0);
    free(hs);
    destroy_clean(env, pool);
}

/* ============================================================= debug aids */

/* A freed item reads as freed to the debug tools: ASan poison, or the debug
 * fill (Valgrind's view is tested in test_pool_debug). */
static void test_pool_items_freed_by_reset_are_poisoned_or_filled(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "marked", .item_size = 40});
    void **items = alloc_many(pool, 64);
    fm_pool_reset(pool);
#if defined(FM_TEST_ASAN)
    for (size_t i = 0; i < 64; i++) {
        assert_true(__asan_address_is_poisoned(items[i]));
        assert_true(__asan_address_is_poisoned((char *)items[i] + 39));
    }
#elif !defined(NDEBUG)
    for (size_t i = 0; i < 64; i++) {
        fm_test_allow_read(items[i], 40);
        for (size_t k = 0; k < 40; k++) assert_int_equal(((unsigned char *)items[i])[k], 0xDF);
    }
#endif
    /* Allocated again, each item is writable. */
    void **again = alloc_many(pool, 64);
    for (size_t i = 0; i < 64; i++) memset(again[i], 0x5A, 40);
    for (size_t i = 0; i < 64; i++) fm_pool_free(pool, again[i]);
    free(items);
    free(again);
    destroy_clean(env, pool);
}

/* Reset, then trim: the emptied chunks go back down to initial_capacity. */
static void test_pool_trim_after_reset_releases_the_emptied_chunks(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "trimmed", .item_size = 64,
                                                           .sync = policies[pi]});
        fm_pool_stats s0 = stats_of(pool);
        void **items = alloc_many(pool, (size_t)s0.items_per_chunk * 4);
        assert_true(stats_of(pool).chunk_count >= 4);
        fm_pool_reset(pool);
        assert_true(fm_pool_trim(pool) > 0);
        fm_pool_stats s = stats_of(pool);
        assert_int_equal(s.chunk_count, s0.chunk_count);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        free(items);
        items = alloc_many(pool, (size_t)s0.items_per_chunk * 2);
        for (size_t i = 0; i < (size_t)s0.items_per_chunk * 2; i++) fm_pool_free(pool, items[i]);
        free(items);
        destroy_clean(env, pool);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_pool_reset_frees_every_item_keeps_the_chunks_and_counts_the_frees),
        T(test_pool_reset_of_an_empty_pool_changes_nothing_but_its_count),
        T(test_pool_reset_makes_every_outstanding_handle_stale),
        T(test_pool_calls_on_an_item_the_reset_freed_are_reported_and_change_nothing),
        T(test_pool_free_of_the_last_allocs_item_after_a_reset_is_reported),
        T(test_pool_frees_of_reset_items_in_chunks_not_current_are_reported),
        T(test_pool_reset_runs_the_dtor_once_on_each_live_item_first),
        T(test_pool_reset_inside_foreach_is_reported_and_changes_nothing),
        T(test_pool_reset_from_the_dtor_of_a_reset_is_refused),
        T(test_pool_reset_renumbering_keeps_every_old_handle_stale),
        T(test_pool_reset_retires_a_slot_whose_generations_are_used_up),
        T(test_pool_reset_leaves_meta_words_alone_except_under_cached_policies),
        T(test_pool_refill_after_reset_takes_no_page_fault),
        T(test_pool_reset_drops_every_threads_cached_slots),
        T(test_pool_reset_under_mutex_runs_while_other_threads_resolve),
        T(test_pool_items_freed_by_reset_are_poisoned_or_filled),
        T(test_pool_trim_after_reset_releases_the_emptied_chunks),
#undef T
    };
    fm_test_filter_from_env();
    return cmocka_run_group_tests_name("pool_reset", tests, NULL, NULL);
}
