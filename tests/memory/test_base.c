/* tests/memory/test_base.c: error codes, per-thread last error, the error
 * handler, policy names. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include <ctype.h>
#include "fm_test_thread.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ helpers */

typedef struct expected_error {
    fm_error code;
    const char *name;
    const char *message;
} expected_error;

static const expected_error expected_errors[] = {
#define EXPECTED_ERROR(name, msg) {name, #name, msg},
    FM_ERROR_LIST(EXPECTED_ERROR)
#undef EXPECTED_ERROR
};

/* A pool misuse that fails for sure: free an item twice. The pool is named so
 * the message can be checked for the name. */
static void provoke_double_free(const char *pool_name) {
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.name = pool_name, .item_size = 32});
    assert_non_null(pool);
    void *item = fm_pool_alloc(pool);
    assert_non_null(item);
    fm_pool_free(pool, item);
    fm_pool_free(pool, item);
    fm_pool_destroy(pool);
}

static bool contains_ignoring_case(const char *haystack, const char *needle) {
    size_t n = strlen(needle);
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] &&
               tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) {
            i++;
        }
        if (i == n) return true;
    }
    return false;
}

/* Runs fn with fd 2 redirected to a temporary file; returns what was written
 * (caller frees). */
static char *capture_stderr(void (*fn)(void)) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    fn();
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    assert_int_equal(fseek(tmp, 0, SEEK_END), 0);
    long len = ftell(tmp);
    assert_true(len >= 0);
    rewind(tmp);
    char *text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    size_t got = fread(text, 1, (size_t)len, tmp);
    assert_int_equal(got, (size_t)len);
    fclose(tmp);
    return text;
}

static void double_free_on_stderr_probe(void) {
    provoke_double_free("stderr_probe_pool");
}

/* -------------------------------------------------------------- error codes */

static void test_error_list_has_one_entry_per_code_in_enum_order(void **state) {
    (void)state;
    assert_int_equal(sizeof expected_errors / sizeof expected_errors[0], FM_ERROR_COUNT);
    for (size_t i = 0; i < FM_ERROR_COUNT; i++) {
        assert_int_equal(expected_errors[i].code, i);
    }
    assert_int_equal(FM_OK, 0);
}

static void test_error_name_matches_the_list_for_every_code(void **state) {
    (void)state;
    for (size_t i = 0; i < FM_ERROR_COUNT; i++) {
        const char *name = fm_error_name(expected_errors[i].code);
        assert_non_null(name);
        assert_string_equal(name, expected_errors[i].name);
    }
}

static void test_error_str_matches_the_list_for_every_code(void **state) {
    (void)state;
    for (size_t i = 0; i < FM_ERROR_COUNT; i++) {
        const char *str = fm_error_str(expected_errors[i].code);
        assert_non_null(str);
        assert_string_equal(str, expected_errors[i].message);
    }
}

static void test_error_name_and_str_handle_out_of_range_codes(void **state) {
    (void)state;
    const fm_error bad[] = {FM_ERROR_COUNT, (fm_error)(FM_ERROR_COUNT + 1), (fm_error)1000,
                            (fm_error)-1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_string_equal(fm_error_name(bad[i]), "FM_ERR_?");
        const char *str = fm_error_str(bad[i]);
        assert_non_null(str);
        assert_true(str[0] != '\0');
    }
}

/* --------------------------------------------------------------- last error */

static void test_last_error_starts_ok_with_empty_message(void **state) {
    (void)state;
    fm_clear_error();
    assert_int_equal(fm_last_error(), FM_OK);
    assert_non_null(fm_last_error_message());
    assert_string_equal(fm_last_error_message(), "");
}

static void test_last_error_is_set_by_a_failing_call(void **state) {
    fm_test_env *env = *state;
    assert_null(fm_pool_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_true(fm_last_error_message()[0] != '\0');
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
}

static void test_last_error_is_untouched_by_successful_calls(void **state) {
    (void)state;
    assert_null(fm_pool_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    char message[1024];
    snprintf(message, sizeof message, "%s", fm_last_error_message());

    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.item_size = 8});
    assert_non_null(pool);
    void *item = fm_pool_alloc(pool);
    assert_non_null(item);
    assert_true(fm_pool_owns(pool, item));
    fm_pool_free(pool, item);
    assert_true(fm_pool_reserve(pool, 4));
    fm_pool_trim(pool);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    fm_pool_destroy(pool);
    (void)fm_error_name(FM_ERR_LEAK);
    (void)fm_error_str(FM_ERR_LEAK);

    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_string_equal(fm_last_error_message(), message);
}

static void test_last_error_is_replaced_by_the_next_failure(void **state) {
    (void)state;
    assert_null(fm_pool_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    provoke_double_free("second_failure");
    assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
    assert_true(fm_test_contains(fm_last_error_message(), "second_failure"));
}

static void test_clear_error_resets_code_and_message(void **state) {
    (void)state;
    assert_null(fm_pool_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    fm_clear_error();
    assert_int_equal(fm_last_error(), FM_OK);
    assert_string_equal(fm_last_error_message(), "");
}

typedef struct thread_probe {
    fm_error seen_at_start;
    char message_at_start[64];
    fm_error seen_after_own_failure;
} thread_probe;

static void *thread_probe_main(void *arg) {
    thread_probe *probe = arg;
    probe->seen_at_start = fm_last_error();
    snprintf(probe->message_at_start, sizeof probe->message_at_start, "%s",
             fm_last_error_message());
    provoke_double_free("thread_pool");
    probe->seen_after_own_failure = fm_last_error();
    return NULL;
}

static void test_last_error_is_per_thread(void **state) {
    fm_test_env *env = *state;
    assert_null(fm_pool_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);

    thread_probe probe = {.seen_at_start = FM_ERR_LEAK};
    fm_test_thread thread;
    assert_int_equal(fm_test_thread_create(&thread, thread_probe_main, &probe), 0);
    assert_int_equal(fm_test_thread_join(thread, NULL), 0);

    assert_int_equal(probe.seen_at_start, FM_OK);
    assert_string_equal(probe.message_at_start, "");
    assert_int_equal(probe.seen_after_own_failure, FM_ERR_DOUBLE_FREE);
    /* The other thread's failure went through the process-wide handler but
     * left this thread's last error alone. */
    assert_int_equal(env->errors.by_code[FM_ERR_DOUBLE_FREE], 1);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
}

/* ------------------------------------------------------------ error handler */

static void test_custom_handler_gets_code_user_and_message_naming_the_pool(void **state) {
    (void)state;
    fm_test_errors mine;
    fm_test_errors_reset(&mine);
    fm_set_error_handler(fm_test_errors_handler, &mine);
    provoke_double_free("named_for_the_handler");
    assert_int_equal(mine.count, 1);
    assert_int_equal(mine.last, FM_ERR_DOUBLE_FREE);
    assert_int_equal(mine.bad_messages, 0);
    assert_true(fm_test_contains(mine.message, "named_for_the_handler"));
    assert_true(fm_test_contains(fm_last_error_message(), "named_for_the_handler"));
}

static void test_default_handler_writes_the_message_to_stderr(void **state) {
    fm_test_env *env = *state;
    fm_set_error_handler(NULL, NULL);
    char *text = capture_stderr(double_free_on_stderr_probe);
    assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
    assert_true(fm_test_contains(text, "stderr_probe_pool"));
    free(text);
    assert_int_equal(env->errors.count, 0);
}

static void test_null_handler_restores_the_default_after_a_custom_one(void **state) {
    fm_test_env *env = *state;
    provoke_double_free("captured_first");
    assert_int_equal(env->errors.count, 1);

    fm_set_error_handler(NULL, NULL);
    char *text = capture_stderr(double_free_on_stderr_probe);
    assert_true(fm_test_contains(text, "stderr_probe_pool"));
    free(text);
    assert_int_equal(env->errors.count, 1);
}

static void test_custom_handler_silences_stderr(void **state) {
    fm_test_env *env = *state;
    char *text = capture_stderr(double_free_on_stderr_probe);
    assert_string_equal(text, "");
    free(text);
    assert_int_equal(env->errors.count, 1);
    assert_true(fm_test_contains(env->errors.message, "stderr_probe_pool"));
}

/* ------------------------------------------------------------ policy names */

static void test_sync_names_are_distinct_and_describe_the_policy(void **state) {
    (void)state;
    const char *words[FM_SYNC_COUNT] = {
        [FM_SYNC_NONE] = "none",
        [FM_SYNC_MUTEX] = "mutex",
        [FM_SYNC_THREAD_CACHE] = "cache",
        [FM_SYNC_LOCKFREE] = "lock",
    };
    for (int i = 0; i < FM_SYNC_COUNT; i++) {
        const char *name = fm_sync_name((fm_sync)i);
        assert_non_null(name);
        assert_true(name[0] != '\0');
        assert_true(contains_ignoring_case(name, words[i]));
        for (int j = 0; j < i; j++) assert_string_not_equal(name, fm_sync_name((fm_sync)j));
    }
    assert_non_null(fm_sync_name(FM_SYNC_COUNT));
    assert_non_null(fm_sync_name((fm_sync)1000));
}

static void test_growth_names_are_distinct_and_describe_the_policy(void **state) {
    (void)state;
    const char *words[FM_GROWTH_COUNT] = {
        [FM_GROWTH_GEOMETRIC] = "geometric",
        [FM_GROWTH_LINEAR] = "linear",
        [FM_GROWTH_FIXED] = "fixed",
    };
    for (int i = 0; i < FM_GROWTH_COUNT; i++) {
        const char *name = fm_growth_name((fm_growth)i);
        assert_non_null(name);
        assert_true(contains_ignoring_case(name, words[i]));
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(name, fm_growth_name((fm_growth)j));
        }
    }
    assert_non_null(fm_growth_name(FM_GROWTH_COUNT));
    assert_non_null(fm_growth_name((fm_growth)1000));
}

/* -------------------------------------------------------- alignment helpers */

static void test_alignment_helpers_round_up_and_check(void **state) {
    (void)state;
    assert_int_equal(fm_align_up(0, 16), 0);
    assert_int_equal(fm_align_up(1, 16), 16);
    assert_int_equal(fm_align_up(16, 16), 16);
    assert_int_equal(fm_align_up(17, 4096), 4096);
    assert_true(FM_IS_POW2(1u) && FM_IS_POW2(4096u));
    assert_false(FM_IS_POW2(0u) || FM_IS_POW2(3u) || FM_IS_POW2(4097u));
    assert_true(fm_is_aligned((void *)(uintptr_t)64, 64));
    assert_false(fm_is_aligned((void *)(uintptr_t)65, 2));
    assert_true(FM_DEFAULT_ALIGN >= alignof(double));
}

/* ---------------------------------------------------- backing allocator */

static void test_allocator_helpers_use_the_heap_or_the_given_allocator(void **state) {
    fm_test_env *env = *state;
    /* The zero allocator: the C heap, aligned as asked, size 0 included. */
    const fm_allocator heap = {0};
    assert_true(fm_allocator_valid(&heap));
    const size_t aligns[] = {1, 8, 16, 64, 4096};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        unsigned char *p = fm_allocator_alloc(&heap, 100, aligns[i]);
        assert_non_null(p);
        assert_true(fm_is_aligned(p, aligns[i]));
        memset(p, 0xAB, 100);
        fm_allocator_free(&heap, p, 100);
    }
    void *empty = fm_allocator_alloc(&heap, 0, 16);
    assert_non_null(empty);
    fm_allocator_free(&heap, empty, 0);
    fm_allocator_free(&heap, NULL, 10); /* no-op */

    /* A given allocator gets every call, with the size (and an alignment
     * of at least a pointer's); a refusal is NULL and reports nothing. */
    fm_allocator counted = fm_test_allocator_get(&env->alloc);
    assert_true(fm_allocator_valid(&counted));
    void *p = fm_allocator_alloc(&counted, 48, 64);
    assert_non_null(p);
    assert_true(fm_is_aligned(p, 64));
    void *q = fm_allocator_alloc(&counted, 8, 1);
    assert_true(fm_is_aligned(q, sizeof(void *)));
    assert_int_equal(env->alloc.live_bytes, 56);
    assert_int_equal(env->alloc.alloc_calls, 2);
    fm_test_allocator_fail_nth(&env->alloc, 1);
    assert_null(fm_allocator_alloc(&counted, 32, 16));
    assert_int_equal(env->errors.count, 0);
    fm_allocator_free(&counted, q, 8);
    fm_allocator_free(&counted, p, 48);
    fm_allocator_free(&counted, NULL, 48); /* no-op, not passed on */
    assert_int_equal(env->alloc.free_calls, 2);
    fm_test_allocator_assert_clean(&env->alloc);

    /* Half an allocator is not valid. */
    fm_allocator half = counted;
    half.free = NULL;
    assert_false(fm_allocator_valid(&half));
    half = counted;
    half.alloc = NULL;
    assert_false(fm_allocator_valid(&half));
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_error_list_has_one_entry_per_code_in_enum_order),
        T(test_error_name_matches_the_list_for_every_code),
        T(test_error_str_matches_the_list_for_every_code),
        T(test_error_name_and_str_handle_out_of_range_codes),
        T(test_last_error_starts_ok_with_empty_message),
        T(test_last_error_is_set_by_a_failing_call),
        T(test_last_error_is_untouched_by_successful_calls),
        T(test_last_error_is_replaced_by_the_next_failure),
        T(test_clear_error_resets_code_and_message),
        T(test_last_error_is_per_thread),
        T(test_custom_handler_gets_code_user_and_message_naming_the_pool),
        T(test_default_handler_writes_the_message_to_stderr),
        T(test_null_handler_restores_the_default_after_a_custom_one),
        T(test_custom_handler_silences_stderr),
        T(test_sync_names_are_distinct_and_describe_the_policy),
        T(test_growth_names_are_distinct_and_describe_the_policy),
        T(test_alignment_helpers_round_up_and_check),
        T(test_allocator_helpers_use_the_heap_or_the_given_allocator),
#undef T
    };
    return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}
