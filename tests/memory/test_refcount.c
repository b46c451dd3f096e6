/* tests/memory/test_refcount.c: intrusive reference counts of pool items
 * (fm_pool_retain, fm_pool_release, fm_pool_refcount) against the contract
 * in framemem/pool.h. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* =================================================================== helpers */

#define stats_of fm_test_pool_stats
#define assert_stats_same fm_test_assert_pool_stats_same

#define create_counted fm_test_pool_create_counted
#define destroy_clean fm_test_pool_destroy_clean

static void *alloc_ok(fm_pool *pool) {
    void *item = fm_pool_alloc(pool);
    if (!item) {
        print_error("fm_pool_alloc failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    }
    assert_non_null(item);
    return item;
}

static uint32_t count_ok(fm_test_env *env, const fm_pool *pool, const void *item) {
    int errors = env->errors.count;
    uint32_t n = fm_pool_refcount(pool, item);
    assert_int_equal(env->errors.count, errors);
    return n;
}

/* ------------------------------------------------------------ dtor recording */

enum { DTOR_LOG = 64 };

typedef struct dtor_log {
    int calls;
    void *user_seen;
    void *items[DTOR_LOG];
    fm_pool *pool;       /* for dtors that release other items */
} dtor_log;

static void log_dtor(void *item, void *user) {
    dtor_log *d = user;
    if (d->calls < DTOR_LOG) d->items[d->calls] = item;
    d->calls++;
    d->user_seen = user;
}

/* ----------------------------------------------------------- misuse checking */

typedef enum ref_op { OP_RETAIN, OP_RELEASE, OP_REFCOUNT } ref_op;

static const char *op_name(ref_op op) {
    return op == OP_RETAIN ? "retain" : op == OP_RELEASE ? "release" : "refcount";
}

/* A count operation on something that is not a live item: reported with
 * code (naming the pool), the failure value returned, nothing changed but
 * misuse_count, no dtor, no backing allocation. */
static void expect_bad_ref(fm_test_env *env, fm_pool *pool, void *bad, ref_op op, fm_error code,
                           const dtor_log *dtors) {
    fm_pool_stats before = stats_of(pool);
    int errors = env->errors.count;
    int dtor_calls = dtors ? dtors->calls : 0;
    uint64_t calls = env->alloc.alloc_calls;
    fm_clear_error();
    switch (op) {
    case OP_RETAIN: fm_pool_retain(pool, bad); break;
    case OP_RELEASE: assert_false(fm_pool_release(pool, bad)); break;
    case OP_REFCOUNT: assert_int_equal(fm_pool_refcount(pool, bad), 0); break;
    }
    if (fm_last_error() != code) {
        print_error("%s(%p): expected %s, got %s (%s)\n", op_name(op), bad, fm_error_name(code),
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_int_equal(fm_last_error(), code);
    assert_int_equal(env->errors.count, errors + 1);
    assert_int_equal(env->errors.last, code);
    assert_true(fm_test_contains(env->errors.message, fm_pool_name(pool)));
    fm_pool_stats after = stats_of(pool);
    assert_stats_same(&before, &after, 1);
    if (dtors) assert_int_equal(dtors->calls, dtor_calls);
    assert_int_equal(env->alloc.alloc_calls, calls);
}

static void expect_bad_ref_all_ops(fm_test_env *env, fm_pool *pool, void *bad, fm_error code,
                                   const dtor_log *dtors) {
    expect_bad_ref(env, pool, bad, OP_RETAIN, code, dtors);
    expect_bad_ref(env, pool, bad, OP_RELEASE, code, dtors);
    expect_bad_ref(env, pool, bad, OP_REFCOUNT, code, dtors);
}

/* ==================================================================== counts */

static void test_refcount_of_a_new_item_is_one(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "fresh", .item_size = 32});
    void *items[10];
    for (int i = 0; i < 10; i++) {
        items[i] = alloc_ok(pool);
        assert_int_equal(count_ok(env, pool, items[i]), 1);
    }
    void *made = fm_pool_new(pool);
    assert_non_null(made);
    assert_int_equal(count_ok(env, pool, made), 1);
    fm_pool_free(pool, made);
    for (int i = 0; i < 10; i++) fm_pool_free(pool, items[i]);
    destroy_clean(env, pool);
}

static void test_retain_and_release_count_and_the_last_release_runs_the_dtor(void **state) {
    fm_test_env *env = *state;
    dtor_log dtors = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "counted", .item_size = 48,
                                                       .dtor = log_dtor, .user = &dtors});
    void *item = alloc_ok(pool);
    void *other = alloc_ok(pool);
    fm_test_fill(item, 48, 1);
    for (uint32_t n = 2; n <= 10; n++) {
        fm_pool_retain(pool, item);
        assert_int_equal(count_ok(env, pool, item), n);
    }
    assert_int_equal(count_ok(env, pool, other), 1);
    for (uint32_t n = 9; n >= 1; n--) {
        assert_false(fm_pool_release(pool, item));
        assert_int_equal(count_ok(env, pool, item), n);
        assert_true(fm_test_check_fill(item, 48, 1)); /* the count is not in the item */
    }
    assert_int_equal(dtors.calls, 0);
    assert_int_equal(stats_of(pool).live, 2);
    assert_true(fm_pool_release(pool, item));
    assert_int_equal(dtors.calls, 1);
    assert_ptr_equal(dtors.items[0], item);
    assert_ptr_equal(dtors.user_seen, &dtors);
    fm_pool_stats s = stats_of(pool);
    assert_int_equal(s.live, 1);
    assert_int_equal(s.total_frees, 1);
    assert_false(fm_pool_owns(pool, item));
    assert_int_equal(env->errors.count, 0);
    /* An item never retained: one release frees it. */
    assert_true(fm_pool_release(pool, other));
    assert_int_equal(dtors.calls, 2);
    destroy_clean(env, pool);
}

static void test_release_without_a_dtor_frees_the_item(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "no_dtor", .item_size = 16});
    void *item = alloc_ok(pool);
    fm_pool_retain(pool, item);
    assert_false(fm_pool_release(pool, item));
    assert_true(fm_pool_release(pool, item));
    assert_int_equal(stats_of(pool).live, 0);
    assert_false(fm_pool_owns(pool, item));
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, pool);
}

static void test_refcount_ops_on_a_freed_item_are_reported_and_change_nothing(void **state) {
    fm_test_env *env = *state;
    dtor_log dtors = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "dead_refs", .item_size = 32,
                                                       .dtor = log_dtor, .user = &dtors});
    void *keep = alloc_ok(pool);
    fm_pool_retain(pool, keep); /* count storage exists for this chunk */
    void *freed = alloc_ok(pool);
    void *released = alloc_ok(pool);
    void *retained_then_freed = alloc_ok(pool);
    fm_pool_retain(pool, retained_then_freed);
    fm_pool_free(pool, freed);
    assert_true(fm_pool_release(pool, released));
    fm_pool_free(pool, retained_then_freed); /* freed while its count was 2 */
    dtors.calls = 0;

    expect_bad_ref_all_ops(env, pool, freed, FM_ERR_REFCOUNT, &dtors);
    expect_bad_ref_all_ops(env, pool, released, FM_ERR_REFCOUNT, &dtors);
    expect_bad_ref_all_ops(env, pool, retained_then_freed, FM_ERR_REFCOUNT, &dtors);
    assert_int_equal(count_ok(env, pool, keep), 2);
    assert_false(fm_pool_release(pool, keep));
    assert_true(fm_pool_release(pool, keep));
    destroy_clean(env, pool);
}

static void test_refcount_ops_on_foreign_pointers_are_reported_as_foreign(void **state) {
    fm_test_env *env = *state;
    dtor_log dtors = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "ref_owner", .item_size = 32,
                                                       .dtor = log_dtor, .user = &dtors});
    fm_pool *other = create_counted(env, (fm_pool_desc){.name = "ref_other", .item_size = 32});
    void *mine = alloc_ok(pool);
    void *theirs = alloc_ok(other);
    fm_pool_retain(other, theirs);
    char on_stack[64];
    void *heap = malloc(64);
    assert_non_null(heap);

    expect_bad_ref_all_ops(env, pool, on_stack, FM_ERR_FOREIGN_POINTER, &dtors);
    expect_bad_ref_all_ops(env, pool, heap, FM_ERR_FOREIGN_POINTER, &dtors);
    expect_bad_ref_all_ops(env, pool, theirs, FM_ERR_FOREIGN_POINTER, &dtors);
    expect_bad_ref_all_ops(env, pool, NULL, FM_ERR_FOREIGN_POINTER, &dtors);

    /* The other pool's count is untouched. */
    assert_int_equal(count_ok(env, other, theirs), 2);
    assert_int_equal(count_ok(env, pool, mine), 1);
    free(heap);
    assert_false(fm_pool_release(other, theirs));
    assert_true(fm_pool_release(other, theirs));
    assert_true(fm_pool_release(pool, mine));
    assert_int_equal(dtors.calls, 1);
    fm_pool_destroy(other);
    destroy_clean(env, pool);
}

static void test_refcount_ops_on_an_interior_pointer_are_reported_and_change_nothing(
    void **state) {
    fm_test_env *env = *state;
    dtor_log dtors = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "interior", .item_size = 64,
                                                       .dtor = log_dtor, .user = &dtors});
    uint8_t *item = alloc_ok(pool);
    fm_pool_retain(pool, item);
    void *inside = (void *)((uintptr_t)item + 8);
    for (int op = OP_RETAIN; op <= OP_REFCOUNT; op++) {
        fm_pool_stats before = stats_of(pool);
        int errors = env->errors.count;
        switch ((ref_op)op) {
        case OP_RETAIN: fm_pool_retain(pool, inside); break;
        case OP_RELEASE: assert_false(fm_pool_release(pool, inside)); break;
        case OP_REFCOUNT: assert_int_equal(fm_pool_refcount(pool, inside), 0); break;
        }
        assert_int_equal(env->errors.count, errors + 1);
        assert_true(env->errors.last == FM_ERR_INTERIOR_POINTER ||
                    env->errors.last == FM_ERR_FOREIGN_POINTER);
        fm_pool_stats after = stats_of(pool);
        assert_stats_same(&before, &after, 1);
    }
    assert_int_equal(dtors.calls, 0);
    assert_int_equal(count_ok(env, pool, item), 2);
    assert_false(fm_pool_release(pool, item));
    assert_true(fm_pool_release(pool, item));
    destroy_clean(env, pool);
}

static void test_reused_slot_starts_at_one_even_after_a_free_at_a_higher_count(void **state) {
    fm_test_env *env = *state;
    dtor_log dtors = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "reuse_refs", .item_size = 32,
                                                       .dtor = log_dtor, .user = &dtors});
    void *item = alloc_ok(pool);
    for (int i = 0; i < 4; i++) fm_pool_retain(pool, item);
    assert_int_equal(count_ok(env, pool, item), 5);
    fm_pool_free(pool, item); /* count ignored: freed outright */
    assert_int_equal(dtors.calls, 0);
    void *again = alloc_ok(pool);
    assert_ptr_equal(again, item);
    assert_int_equal(count_ok(env, pool, again), 1);
    assert_true(fm_pool_release(pool, again));
    assert_int_equal(dtors.calls, 1);

    /* The same through fm_pool_delete, and many rounds of one slot. */
    for (int round = 0; round < 100; round++) {
        void *x = alloc_ok(pool);
        assert_ptr_equal(x, item);
        assert_int_equal(count_ok(env, pool, x), 1);
        for (int i = 0; i < round % 7; i++) fm_pool_retain(pool, x);
        assert_int_equal(count_ok(env, pool, x), 1 + (uint32_t)(round % 7));
        if (round % 2) fm_pool_delete(pool, x);
        else fm_pool_free(pool, x);
    }
    assert_int_equal(dtors.calls, 1 + 50);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, pool);
}

static void test_counts_are_kept_per_item_across_chunks_growth_and_trim(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "chunks", .item_size = 64});
    fm_pool_stats s0 = stats_of(pool);
    size_t n = (size_t)s0.items_per_chunk * 5 + 3;
    void **items = malloc(n * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        /* Retain as we go, so counts exist in chunks that later stop being
         * current and in record arrays that later move. */
        for (size_t k = 0; k < i % 5; k++) fm_pool_retain(pool, items[i]);
    }
    assert_true(stats_of(pool).chunk_count >= 5);
    for (size_t i = 0; i < n; i++) {
        if (fm_pool_refcount(pool, items[i]) != 1 + i % 5) {
            print_error("item %zu: count %u, expected %zu\n", i, fm_pool_refcount(pool, items[i]),
                        1 + i % 5);
            fail();
        }
    }
    /* Retain every item in reverse order: each count goes up by one. */
    for (size_t i = n; i-- > 0;) fm_pool_retain(pool, items[i]);
    for (size_t i = 0; i < n; i++) assert_int_equal(fm_pool_refcount(pool, items[i]), 2 + i % 5);
    /* Back to one reference each; then free the first chunk's items
     * entirely, so trim gives that chunk (and its counts) back. */
    size_t per = (size_t)s0.items_per_chunk;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < 1 + i % 5; k++) assert_false(fm_pool_release(pool, items[i]));
        assert_int_equal(fm_pool_refcount(pool, items[i]), 1);
    }
    for (size_t i = per; i < n; i++) fm_pool_retain(pool, items[i]);
    for (size_t i = 0; i < per; i++) assert_true(fm_pool_release(pool, items[i]));
    assert_true(fm_pool_trim(pool) > 0);
    for (size_t i = per; i < n; i++) assert_int_equal(fm_pool_refcount(pool, items[i]), 2);
    for (size_t i = per; i < n; i++) {
        assert_false(fm_pool_release(pool, items[i]));
        assert_true(fm_pool_release(pool, items[i]));
    }
    assert_int_equal(env->errors.count, 0);
    free(items);
    destroy_clean(env, pool);
}

static void test_items_in_a_trimmed_and_regrown_chunk_start_at_one(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "regrown", .item_size = 32});
    fm_pool_stats s0 = stats_of(pool);
    size_t n = (size_t)s0.items_per_chunk * 3;
    void **items = malloc(n * sizeof *items);
    assert_non_null(items);
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < n; i++) {
            items[i] = alloc_ok(pool);
            if (fm_pool_refcount(pool, items[i]) != 1) {
                print_error("round %d item %zu starts at %u\n", round, i,
                            fm_pool_refcount(pool, items[i]));
                fail();
            }
            fm_pool_retain(pool, items[i]);
            fm_pool_retain(pool, items[i]);
        }
        for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]); /* at count 3 */
        assert_true(fm_pool_trim(pool) > 0);
    }
    assert_int_equal(env->errors.count, 0);
    free(items);
    destroy_clean(env, pool);
}

/* A dtor that releases the item's child (stored in the item). */
typedef struct node {
    struct node *child;
    int id;
} node;

static void node_dtor(void *item, void *user) {
    dtor_log *d = user;
    node *n = item;
    if (d->calls < DTOR_LOG) d->items[d->calls] = item;
    d->calls++;
    if (n->child) fm_pool_release(d->pool, n->child);
}

static void test_a_dtor_may_release_other_items_of_the_pool(void **state) {
    fm_test_env *env = *state;
    dtor_log dtors = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "tree", .item_size = sizeof(node),
                                                       .dtor = node_dtor, .user = &dtors});
    dtors.pool = pool;
    node *shared = alloc_ok(pool);
    *shared = (node){NULL, 0};
    node *a = alloc_ok(pool);
    node *b = alloc_ok(pool);
    *a = (node){shared, 1};
    *b = (node){shared, 2};
    fm_pool_retain(pool, shared); /* one reference each for a and b */
    assert_true(fm_pool_release(pool, a));
    assert_int_equal(dtors.calls, 1);
    assert_int_equal(count_ok(env, pool, shared), 1);
    assert_true(fm_pool_release(pool, b));
    assert_int_equal(dtors.calls, 3); /* b, then shared through b's dtor */
    assert_ptr_equal(dtors.items[2], shared);
    assert_int_equal(stats_of(pool).live, 0);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, pool);
}

/* ========================================================= fault injection */

static void test_first_retain_in_a_chunk_fails_cleanly_when_count_storage_is_refused(
    void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "refs_oom", .item_size = 32});
    fm_pool_stats s0 = stats_of(pool);
    size_t n = (size_t)s0.items_per_chunk * 2; /* two chunks */
    void **items = malloc(n * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < n; i++) items[i] = alloc_ok(pool);

    for (size_t chunk = 0; chunk < 2; chunk++) {
        void *item = items[chunk * s0.items_per_chunk];
        fm_pool_stats before = stats_of(pool);
        int errors = env->errors.count;
        uint64_t calls = env->alloc.alloc_calls;
        fm_clear_error();
        fm_test_allocator_fail_nth(&env->alloc, 1);
        fm_pool_retain(pool, item);
        fm_test_allocator_recover(&env->alloc);
        assert_int_equal(env->alloc.alloc_calls, calls + 1); /* it did ask */
        assert_int_equal(env->alloc.failed_calls, chunk + 1);
        assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
        assert_int_equal(env->errors.count, errors + 1);
        assert_true(fm_test_contains(env->errors.message, "refs_oom"));
        assert_int_equal(count_ok(env, pool, item), 1);
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.live, before.live);
        assert_int_equal(after.total_frees, before.total_frees);
        assert_int_equal(after.capacity, before.capacity);

        /* The next retain gets the storage; the rest of the chunk needs no more. */
        fm_pool_retain(pool, item);
        assert_int_equal(env->alloc.alloc_calls, calls + 2);
        assert_int_equal(count_ok(env, pool, item), 2);
        calls = env->alloc.alloc_calls;
        for (size_t i = 1; i < s0.items_per_chunk; i++) {
            fm_pool_retain(pool, items[chunk * s0.items_per_chunk + i]);
        }
        assert_int_equal(env->alloc.alloc_calls, calls);
    }
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(fm_pool_refcount(pool, items[i]), 2);
        assert_false(fm_pool_release(pool, items[i]));
        assert_true(fm_pool_release(pool, items[i]));
    }
    /* Releases never allocate, and every byte (counts included) goes back. */
    free(items);
    destroy_clean(env, pool);
}

static void test_destroy_and_trim_give_count_storage_back(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "refs_bytes", .item_size = 32});
    fm_pool_stats s0 = stats_of(pool);
    size_t n = (size_t)s0.items_per_chunk * 4;
    void **items = malloc(n * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        fm_pool_retain(pool, items[i]);
    }
    size_t peak_blocks = env->alloc.live_blocks;
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    assert_true(fm_pool_trim(pool) > 0);
    assert_true(env->alloc.live_blocks < peak_blocks);
    /* Live items with counts at destroy: dtor-less, reported as a leak,
     * and still every byte back. */
    for (size_t i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        fm_pool_retain(pool, items[i]);
    }
    fm_test_errors_reset(&env->errors);
    fm_pool_destroy(pool);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.last, FM_ERR_LEAK);
    fm_test_allocator_assert_clean(&env->alloc);
    free(items);
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_refcount_of_a_new_item_is_one),
        T(test_retain_and_release_count_and_the_last_release_runs_the_dtor),
        T(test_release_without_a_dtor_frees_the_item),
        T(test_refcount_ops_on_a_freed_item_are_reported_and_change_nothing),
        T(test_refcount_ops_on_foreign_pointers_are_reported_as_foreign),
        T(test_refcount_ops_on_an_interior_pointer_are_reported_and_change_nothing),
        T(test_reused_slot_starts_at_one_even_after_a_free_at_a_higher_count),
        T(test_counts_are_kept_per_item_across_chunks_growth_and_trim),
        T(test_items_in_a_trimmed_and_regrown_chunk_start_at_one),
        T(test_a_dtor_may_release_other_items_of_the_pool),
        T(test_first_retain_in_a_chunk_fails_cleanly_when_count_storage_is_refused),
        T(test_destroy_and_trim_give_count_storage_back),
#undef T
    };
    return cmocka_run_group_tests_name("refcount", tests, NULL, NULL);
}
