/* tests/memory/test_mixed_callers.c: a caller built unlike the library.
 *
 * CMake builds this file twice, both with NDEBUG (so the inline fast paths of
 * pool.h, arena.h and closure.h compile into it) against whatever library
 * the configuration builds, Debug included:
 * - test_mixed_ndebug keeps FM_TRACK_SITES as framemem::framemem gives it
 *   (defined exactly when the library tracks sites);
 * - test_mixed_nosites drops it (-UFM_TRACK_SITES), as a caller with its own
 *   flags would: its pool calls are the inline ones.
 * FM_TEST_LIBRARY_SITES says whether the library tracks sites.
 *
 * The Debug configuration's memcheck pass runs both under Valgrind, where a
 * caller's inline paths, which carry none of the library's annotations,
 * must not make it report errors (tools/dev's run_memcheck: any report
 * fails); the suites below check that every operation still does what it
 * should, and what each caller learns about allocation sites. */
#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <string.h>

#ifndef NDEBUG
#error "test_mixed_callers.c is built with NDEBUG (tests/CMakeLists.txt)"
#endif
#ifndef FM_TEST_LIBRARY_SITES
#error "FM_TEST_LIBRARY_SITES: 1 when the library tracks allocation sites"
#endif

typedef struct thing {
    uint32_t id;
    unsigned char bytes[44];
} thing;

FM_POOL_DECLARE_TYPED(thing, thing_pool)
#define thing_pool_alloc(pool) thing_pool_alloc_at((pool), FM_SITE)
#define thing_pool_new(pool) thing_pool_new_at((pool), FM_SITE)

enum { N = 3000 };
static thing *items[N];

static void fill_thing(thing *t, uint32_t id) {
    t->id = id;
    memset(t->bytes, (int)(id & 0xFF), sizeof t->bytes);
}

static bool thing_intact(const thing *t, uint32_t id) {
    if (t->id != id) return false;
    for (size_t i = 0; i < sizeof t->bytes; i++)
        if (t->bytes[i] != (unsigned char)(id & 0xFF)) return false;
    return true;
}

/* Alloc, write, free in orders that take every inline path of the pool:
 * fresh slots, the next slot, the current chunk's stack, other chunks. */
static void churn_pool(fm_pool *pool) {
    for (uint32_t i = 0; i < N; i++) {
        items[i] = fm_pool_alloc(pool);
        assert_non_null(items[i]);
        fill_thing(items[i], i);
    }
    for (uint32_t i = 0; i < N; i += 2) fm_pool_free(pool, items[i]);
    for (uint32_t i = 0; i < N; i += 2) {
        items[i] = fm_pool_alloc(pool);
        assert_non_null(items[i]);
        fill_thing(items[i], i);
    }
    fm_handle h = fm_pool_handle(pool, items[7]);
    assert_ptr_equal(fm_pool_resolve(pool, h), items[7]);
    for (uint32_t i = 0; i < N; i++) assert_true(thing_intact(items[i], i));
    for (uint32_t r = 0; r < 1000; r++) { /* alloc right after free: the next slot */
        fm_pool_free(pool, items[r]);
        items[r] = fm_pool_alloc(pool);
        assert_non_null(items[r]);
        fill_thing(items[r], r);
    }
    void *batch[64];
    assert_int_equal(fm_pool_alloc_n(pool, batch, 64), 64);
    for (int i = 0; i < 64; i++) memset(batch[i], 0xB7, sizeof(thing));
    fm_pool_free_n(pool, batch, 64);
    for (uint32_t i = N; i-- > 0;) fm_pool_free(pool, items[i]);
    assert_null(fm_pool_resolve(pool, h));
    fm_pool_stats s = fm_test_pool_stats(pool);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.total_allocs, N + N / 2 + 1000 + 64);
    assert_int_equal(fm_pool_check(pool), FM_OK);
}

static void test_inline_pool_paths_of_an_ndebug_caller_work_under_every_policy(void **state) {
    fm_test_env *env = *state;
    for (fm_sync sync = FM_SYNC_NONE; sync < FM_SYNC_COUNT; sync++) {
        fm_pool *pool = fm_pool_create(&FM_POOL_DESC(thing, .name = fm_sync_name(sync),
                                                     .sync = sync, .initial_capacity = 64));
        assert_non_null(pool);
        churn_pool(pool);
        fm_pool_flush_thread_cache(pool);
        fm_pool_trim(pool);
        fm_pool_destroy(pool);
    }
    assert_int_equal(env->errors.count - env->errors.by_code[FM_WARN_NO_SITES], 0);
}

static void count_call(void *capture, void *arg) {
    (*(int *)arg) += *(int *)capture;
}

static void test_inline_arena_and_closure_paths_of_an_ndebug_caller_work(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "mixed", .commit_step = 4096});
    assert_non_null(arena);
    for (int round = 0; round < 3; round++) {
        unsigned char *last = NULL;
        for (int i = 0; i < 2000; i++) {
            unsigned char *p = fm_arena_alloc(arena, 40, 8);
            assert_non_null(p);
            memset(p, i & 0xFF, 40);
            if (last) assert_int_equal(last[39], (unsigned char)((i - 1) & 0xFF));
            last = p;
        }
        fm_arena_reset(arena);
    }
    fm_arena_destroy(arena);

    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.arena.commit_step = 4096});
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){0});
    assert_non_null(fa);
    assert_non_null(cp);
    int total = 0;
    for (int frame = 0; frame < 4; frame++) {
        for (int i = 1; i <= 500; i++) {
            fm_closure *c = fm_closure_make(cp, count_call, &i, sizeof i);
            fm_closure *f = fm_closure_make_frame(fa, count_call, &i, sizeof i);
            assert_non_null(c);
            assert_non_null(f);
            fm_closure_call(c, &total);
            fm_closure_call(f, &total);
            fm_closure_retain(c);
            assert_false(fm_closure_release(c));
            assert_true(fm_closure_release(c));
        }
        fm_frame_arena_advance(fa);
    }
    assert_int_equal(total, 4 * 2 * (500 * 501 / 2));
    fm_closure_pool_stats cs;
    fm_closure_pool_get_stats(cp, &cs);
    assert_int_equal(cs.live, 0);
    fm_closure_pool_destroy(cp);
    fm_frame_arena_destroy(fa);
    assert_int_equal(env->errors.count - env->errors.by_code[FM_WARN_NO_SITES], 0);
}

/* What this caller learns about allocation sites, and what a leak report
 * says about its items. */
static void test_allocation_sites_of_this_caller_are_recorded_or_it_is_told_why_not(
    void **state) {
    fm_test_env *env = *state;
    fm_report_error(FM_ERR_LEAK, "an earlier failure");
    fm_pool *pool = fm_pool_create(&FM_POOL_DESC(thing, .name = "sites"));
    fm_pool *second = fm_pool_create(&FM_POOL_DESC(thing, .name = "second"));
    assert_non_null(pool);
    assert_non_null(second);
    fm_pool_destroy(second);
    int warnings = env->errors.by_code[FM_WARN_NO_SITES];
    /* A warning, if any, left the last error as it was. */
    assert_int_equal(fm_last_error(), FM_ERR_LEAK);
    assert_string_equal(fm_last_error_message(), "an earlier failure");
    int plain_line = __LINE__ + 1;
    void *a = fm_pool_alloc(pool);
    int typed_line = __LINE__ + 1;
    thing *b = thing_pool_alloc(pool);
    int new_line = __LINE__ + 1;
    thing *c = thing_pool_new(pool);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    fm_test_errors_reset(&env->errors);
    fm_pool_destroy(pool);
    assert_int_equal(env->errors.by_code[FM_ERR_LEAK], 1);
    const char *report = env->errors.message;
    char want[3][64];
    snprintf(want[0], sizeof want[0], "test_mixed_callers.c:%d", plain_line);
    snprintf(want[1], sizeof want[1], "test_mixed_callers.c:%d", typed_line);
    snprintf(want[2], sizeof want[2], "test_mixed_callers.c:%d", new_line);
#if FM_TEST_LIBRARY_SITES && defined(FM_TRACK_SITES)
    /* Library and caller agree: every site is this file's line, said nowhere else. */
    assert_int_equal(warnings, 0);
    for (int i = 0; i < 3; i++) fm_test_expect_contains(report, want[i]);
#elif FM_TEST_LIBRARY_SITES
    /* The library keeps sites, this caller passes none: told once, at its
     * first create (a warning: the last error stayed), and the leak report
     * says the sites were not recorded instead of naming a wrong place. */
    assert_int_equal(warnings, 1);
    fm_test_expect_contains(report, "3 whose site was not recorded");
    fm_test_expect_contains(report, "without FM_TRACK_SITES");
    for (int i = 0; i < 3; i++) assert_false(fm_test_contains(report, want[i]));
#elif defined(FM_TRACK_SITES)
    /* This caller passes sites the library does not keep: told once. */
    assert_int_equal(warnings, 1);
    assert_false(fm_test_contains(report, want[0]));
#else
    /* Neither keeps sites: nothing to say but the count. */
    assert_int_equal(warnings, 0);
    fm_test_expect_contains(report, "3 live item(s)");
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_allocation_sites_of_this_caller_are_recorded_or_it_is_told_why_not),
        T(test_inline_pool_paths_of_an_ndebug_caller_work_under_every_policy),
        T(test_inline_arena_and_closure_paths_of_an_ndebug_caller_work),
#undef T
    };
    return cmocka_run_group_tests_name("mixed_callers", tests, NULL, NULL);
}
