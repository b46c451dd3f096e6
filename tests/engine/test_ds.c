/* tests/engine/test_ds.c: engine/ds.h, stb_ds whose growth can fail: every
 * block from the array's or map's allocator, a refused block changes
 * nothing, and the stb_ds calls after a reservation never allocate. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "engine/ds.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct pair {
    char *key;
    int value;
} pair;

/* ----------------------------------------------------------------- arrays */

static void test_ds_reserved_room_takes_puts_without_allocating(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    int *a = NULL;
    assert_true(ENG_ARR_RESERVE(a, 10, &al));
    assert_non_null(a);
    assert_int_equal(env->alloc.alloc_calls, 1);
    assert_true(arrcap(a) >= 10);
    for (int i = 0; i < 10; i++) arrput(a, i * 3);
    assert_int_equal(env->alloc.alloc_calls, 1); /* the room was there */
    /* Full: one new block from the array's own allocator (not the heap,
     * though NULL is passed), the old one given back. */
    assert_true(ENG_ARR_RESERVE(a, 1, NULL));
    assert_int_equal(env->alloc.alloc_calls, 2);
    assert_int_equal(env->alloc.free_calls, 1);
    assert_int_equal(env->alloc.live_blocks, 1);
    assert_true(arrcap(a) >= 11);
    assert_int_equal(arrlen(a), 10);
    for (int i = 0; i < 10; i++) assert_int_equal(a[i], i * 3);
    assert_true(ENG_ARR_RESERVE(a, 0, NULL));
    arrfree(a); /* to the counting allocator, which checks the size given back */
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_ds_refused_growth_leaves_the_array_as_it_was(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    int *a = NULL;
    for (int i = 0; i < 100; i++) {
        assert_true(ENG_ARR_RESERVE(a, 1, &al));
        arrput(a, i);
    }
    int *before = a;
    size_t len = arrlenu(a), cap = arrcap(a);
    size_t live = env->alloc.live_bytes;
    for (int mode = 0; mode < 2; mode++) {
        if (mode) fm_test_allocator_fail_from(&env->alloc, 1);
        else fm_test_allocator_fail_nth(&env->alloc, 1);
        uint64_t failed = env->alloc.failed_calls;
        assert_false(ENG_ARR_RESERVE(a, cap - len + 1, NULL));
        fm_test_allocator_recover(&env->alloc);
        assert_int_equal(env->alloc.failed_calls, failed + 1);
        assert_ptr_equal(a, before);
        assert_int_equal(arrlenu(a), len);
        assert_int_equal(arrcap(a), cap);
        assert_int_equal(env->alloc.live_bytes, live);
        for (int i = 0; i < 100; i++) assert_int_equal(a[i], i);
    }
    /* Within the capacity nothing is asked for, so nothing can be refused. */
    fm_test_allocator_fail_from(&env->alloc, 1);
    assert_true(ENG_ARR_RESERVE(a, cap - len, NULL));
    fm_test_allocator_recover(&env->alloc);
    assert_true(ENG_ARR_RESERVE(a, cap - len + 1, NULL));
    assert_true(arrcap(a) > cap);
    for (int i = 0; i < 100; i++) assert_int_equal(a[i], i);
    arrfree(a);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_ds_refused_new_array_stays_null(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    double *a = NULL;
    fm_test_allocator_fail_nth(&env->alloc, 1);
    assert_false(ENG_ARR_RESERVE(a, 3, &al));
    fm_test_allocator_recover(&env->alloc);
    assert_null(a);
    assert_int_equal(env->alloc.failed_calls, 1);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_ds_a_size_past_size_max_is_refused_without_asking(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    uint64_t *a = NULL;
    assert_false(ENG_ARR_RESERVE(a, SIZE_MAX / 4, &al));
    assert_false(ENG_ARR_RESERVE(a, SIZE_MAX, &al));
    assert_null(a);
    assert_int_equal(env->alloc.alloc_calls, 0);
    assert_true(ENG_ARR_RESERVE(a, 2, &al));
    arrput(a, 7);
    assert_false(ENG_ARR_RESERVE(a, SIZE_MAX - 1, NULL));
    assert_int_equal(arrlen(a), 1);
    assert_int_equal(a[0], 7);
    arrfree(a);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ------------------------------------------------------------------- maps */

static void key_of(char *buf, size_t len, int i) { snprintf(buf, len, "pool_%d", i); }

/* The map holds exactly keys 0 .. n-1, key i with value i * 7. */
static void check_map(pair *m, int n) {
    assert_int_equal(shlen(m), n);
    char key[32];
    for (int i = 0; i < n; i++) {
        key_of(key, sizeof key, i);
        ptrdiff_t at = ENG_SH_GETI(m, key);
        assert_true(at >= 0);
        assert_string_equal(m[at].key, key);
        assert_int_equal(m[at].value, i * 7);
    }
    key_of(key, sizeof key, n);
    assert_int_equal(ENG_SH_GETI(m, key), -1);
}

/* Every put of 300 new keys (the index doubles several times on the way)
 * is refused at each of its backing calls in turn, alone and with every
 * later call: the put says false and the map is as it was; then it is
 * done. An allocation the preparation did not foresee would meet the
 * refusing allocator inside stb_ds and abort the suite. */
static void test_ds_map_put_refused_at_each_call_changes_nothing(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    pair *m = NULL;
    char key[32];
    uint64_t refusals = 0;
    for (int i = 0; i < 300; i++) {
        key_of(key, sizeof key, i);
        for (int mode = 0; mode < 2; mode++) {
            for (uint64_t n = 1;; n++) {
                if (mode) fm_test_allocator_fail_from(&env->alloc, n);
                else fm_test_allocator_fail_nth(&env->alloc, n);
                uint64_t failed = env->alloc.failed_calls;
                size_t live = env->alloc.live_bytes;
                bool ok = ENG_SH_PUT(m, key, i * 7, &al);
                fm_test_allocator_recover(&env->alloc);
                if (env->alloc.failed_calls == failed) { /* nothing refused: done */
                    assert_true(ok);
                    break;
                }
                refusals++;
                assert_false(ok);
                /* A refused put gives back every block it took, except a
                 * grown entry array, which it keeps. */
                assert_true(env->alloc.live_bytes >= live);
                check_map(m, i);
                assert_true(n < 10);
            }
            if (mode == 0) { /* undo, so the refusals of fail_from meet the same map */
                assert_int_equal(shdel(m, key), 1);
                check_map(m, i);
            }
        }
        check_map(m, i + 1);
    }
    assert_true(refusals >= 300 * 2); /* at least the key copy of each */
    shfree(m);
    assert_null(m);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_ds_map_keys_are_copied_and_a_repeated_put_updates(void **state) {
    fm_test_env *env = *state;
    char key[16] = "entities";
    pair *m = NULL;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    assert_true(ENG_SH_PUT(m, key, 1, &al));
    size_t live = env->alloc.live_bytes;
    strcpy(key, "particles");
    assert_int_equal(ENG_SH_GETI(m, "entities"), 0);
    assert_int_equal(ENG_SH_GETI(m, "particles"), -1);
    assert_true(ENG_SH_PUT(m, "entities", 5, NULL)); /* the map's own allocator */
    assert_int_equal(shlen(m), 1);
    ptrdiff_t at = ENG_SH_GETI(m, "entities");
    assert_int_equal(at, 0);
    assert_int_equal(m[at].value, 5);
    /* The blocks obtained for a key that was already there went back. */
    assert_int_equal(env->alloc.live_bytes, live);
    shfree(m);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_ds_a_refused_new_map_stays_null(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    for (uint64_t n = 1; n <= 4; n++) {
        pair *m = NULL;
        fm_test_allocator_fail_nth(&env->alloc, n);
        uint64_t failed = env->alloc.failed_calls;
        bool ok = ENG_SH_PUT(m, "frame", 2, &al);
        fm_test_allocator_recover(&env->alloc);
        if (env->alloc.failed_calls == failed) {
            assert_true(ok);
            shfree(m);
            break;
        }
        assert_false(ok);
        assert_null(m);
        assert_int_equal(env->alloc.live_bytes, 0);
        assert_int_equal(ENG_SH_GETI(m, "frame"), -1);
    }
    fm_test_allocator_assert_clean(&env->alloc);
}

/* --------------------------------------------------- growth unchecked */

#ifndef _WIN32
static fm_test_allocator g_refusing;

static void grow_unchecked(void) {
    fm_allocator al = fm_test_allocator_get(&g_refusing);
    int *a = NULL;
    if (!ENG_ARR_RESERVE(a, 1, &al)) return;
    fm_test_allocator_fail_from(&g_refusing, 1);
    for (int i = 0; i < 100; i++) arrput(a, i); /* past the room: stb_ds grows alone */
}
#endif

/* stb_ds growing by itself cannot report a refusal: it aborts, saying why,
 * instead of writing through NULL. */
static void test_ds_refused_growth_outside_the_checked_calls_aborts_with_a_message(void **state) {
    (void)state;
#ifdef _WIN32
    print_message("[ did not apply ] a child that aborts: Windows has no fork, and "
                  "fm_test_run_child's in-process stand-in would abort the suite\n");
    skip();
#else
    fm_test_allocator_init(&g_refusing);
    fm_test_child r = fm_test_run_child(grow_unchecked);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGABRT);
    fm_test_expect_contains(r.output, "outside ENG_ARR_RESERVE and ENG_SH_PUT");
    fm_test_allocator_release(&g_refusing);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ds_reserved_room_takes_puts_without_allocating,
                                        fm_test_setup, fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_ds_refused_growth_leaves_the_array_as_it_was,
                                        fm_test_setup, fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_ds_refused_new_array_stays_null, fm_test_setup,
                                        fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_ds_a_size_past_size_max_is_refused_without_asking,
                                        fm_test_setup, fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_ds_map_put_refused_at_each_call_changes_nothing,
                                        fm_test_setup, fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_ds_map_keys_are_copied_and_a_repeated_put_updates,
                                        fm_test_setup, fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_ds_a_refused_new_map_stays_null, fm_test_setup,
                                        fm_test_teardown),
        cmocka_unit_test_setup_teardown(
            test_ds_refused_growth_outside_the_checked_calls_aborts_with_a_message,
            fm_test_setup, fm_test_teardown),
    };
    return cmocka_run_group_tests_name("engine_ds", tests, NULL, NULL);
}
