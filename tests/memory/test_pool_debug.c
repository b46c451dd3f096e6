/* test_pool_debug.c: the debug aids of pool.c — freed-slot fill, ASan
 * poisoning of free slots and never-used chunk tails, Valgrind mempool
 * annotations. A use-after-free runs in a child process (fork) so the
 * sanitizer's report can be checked without ending the suite.
 *
 * Run as `test_pool_debug uaf` (or `reset_uaf`: a read of an item
 * fm_pool_reset freed) it performs one use-after-free and exits 0: CTest
 * runs that under valgrind and expects memcheck to flag it. */
#include "fm_test.h"

#include "framemem/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FM_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif


typedef fm_test_child child_result;

#define run_child fm_test_run_child

static fm_pool *make_pool(void) {
    return fm_pool_create(&(fm_pool_desc){.name = "debug", .item_size = 64});
}

/* Reads a byte of a freed item. */
static void use_after_free(void) {
    fm_pool *p = make_pool();
    volatile unsigned char *item = fm_pool_alloc(p);
    item[10] = 1;
    fm_pool_free(p, (void *)item);
    unsigned char v = item[10];
    fprintf(stderr, "read %u\n", v);
}

/* Reads a byte of an item fm_pool_reset freed. */
static void use_after_reset(void) {
    fm_pool *p = make_pool();
    volatile unsigned char *item = fm_pool_alloc(p);
    item[10] = 1;
    fm_pool_reset(p);
    unsigned char v = item[10];
    fprintf(stderr, "read %u\n", v);
}

/* Reads a slot the pool never handed out. */
static void read_unused_tail(void) {
    fm_pool *p = make_pool();
    fm_pool_stats st;
    unsigned char *item = fm_pool_alloc(p);
    fm_pool_get_stats(p, &st);
    volatile unsigned char *next = item + st.stride;
    unsigned char v = next[0];
    fprintf(stderr, "read %u\n", v);
}

static void test_pool_freed_slot_is_reported_or_filled(void **state) {
    (void)state;
#if defined(FM_TEST_ASAN)
    child_result r = run_child(use_after_free);
    assert_false(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.output, "use-after-poison"));
#elif !defined(NDEBUG)
    if (fm_test_under_valgrind()) {
        /* Memcheck run: the freed item is no-access to Valgrind. */
        child_result r = run_child(use_after_free);
        assert_true(fm_test_child_caught(&r));
        return;
    }
    /* Debug build without ASan: everything past the 4-byte free-list link is 0xDF. */
    fm_pool *p = make_pool();
    unsigned char *item = fm_pool_alloc(p);
    memset(item, 0x11, 64);
    fm_pool_free(p, item);
    for (int i = 4; i < 64; i++) assert_int_equal(item[i], 0xDF);
    fm_pool_destroy(p);
#else
    /* Release: no fill; the free-list link occupies only the first 4 bytes. */
    fm_pool *p = make_pool();
    unsigned char *item = fm_pool_alloc(p);
    memset(item, 0x11, 64);
    fm_pool_free(p, item);
    for (int i = 4; i < 64; i++) assert_int_equal(item[i], 0x11);
    fm_pool_destroy(p);
#endif
}

/* A reset frees its items for the tools too: ASan's poison, Valgrind's
 * mempool (emptied, the slots no-access), the debug fill. */
static void test_pool_item_freed_by_reset_is_reported_or_filled(void **state) {
    (void)state;
#if defined(FM_TEST_ASAN)
    child_result r = run_child(use_after_reset);
    assert_false(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.output, "use-after-poison"));
#elif !defined(NDEBUG)
    if (fm_test_under_valgrind()) {
        child_result r = run_child(use_after_reset);
        assert_true(fm_test_child_caught(&r));
        return;
    }
    fm_pool *p = make_pool();
    unsigned char *item = fm_pool_alloc(p);
    memset(item, 0x11, 64);
    fm_pool_reset(p);
    for (int i = 0; i < 64; i++) assert_int_equal(item[i], 0xDF);
    /* Handed out again, it is an item like any other. */
    unsigned char *again = fm_pool_alloc(p);
    memset(again, 0x22, 64);
    fm_pool_free(p, again);
    fm_pool_destroy(p);
#else
    fm_pool *p = make_pool();
    unsigned char *item = fm_pool_alloc(p);
    memset(item, 0x11, 64);
    fm_pool_reset(p);
    assert_false(fm_pool_owns(p, item));
    fm_pool_destroy(p);
#endif
}

static void test_pool_never_used_slots_are_poisoned_under_asan(void **state) {
    (void)state;
#if defined(FM_TEST_ASAN)
    child_result r = run_child(read_unused_tail);
    assert_false(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.output, "use-after-poison"));
#else
    child_result r = run_child(read_unused_tail);
    if (fm_test_under_valgrind()) {
        /* Debug builds describe never-used slots to Valgrind as no-access. */
        assert_true(fm_test_child_caught(&r));
    } else {
        /* Otherwise the read is harmless: the memory is the pool's own. */
        assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    }
#endif
}

static void test_pool_reused_slot_is_usable_after_poisoning(void **state) {
    (void)state;
    fm_pool *p = make_pool();
    unsigned char *a = fm_pool_alloc(p);
    fm_pool_free(p, a);
    unsigned char *b = fm_pool_alloc(p);
    assert_ptr_equal(a, b); /* LIFO reuse */
    memset(b, 0x5A, 64);    /* must not trip ASan: the slot is live again */
    for (int i = 0; i < 64; i++) assert_int_equal(b[i], 0x5A);
    fm_pool_free(p, b);
    assert_int_equal(fm_pool_check(p), FM_OK);
    fm_pool_destroy(p);
}

/* 12-byte items with 4-byte alignment: stride 12 would put two items in one
 * 8-byte shadow granule, where ASan cannot poison one and not the other. */
typedef struct item12 {
    int32_t a, b, c;
} item12;

static void test_pool_freed_12_byte_item_is_poisoned_at_every_offset(void **state) {
    (void)state;
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(item12, .name = "twelve"));
    assert_non_null(p);
    fm_pool_stats st;
    fm_pool_get_stats(p, &st);
    assert_int_equal(st.item_size, 12);
    enum { N = 32 };
    unsigned char *items[N];
    for (int i = 0; i < N; i++) {
        items[i] = fm_pool_alloc(p);
        assert_non_null(items[i]);
        memset(items[i], 0x11, 12);
    }
    /* Every other item freed: freed items sit between live ones, at every
     * phase of their addresses mod 8. */
    for (int i = 0; i < N; i += 2) fm_pool_free(p, items[i]);
#ifdef FM_TEST_ASAN
    assert_int_equal(st.stride % 8, 0);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 12; k++) {
            bool poisoned = __asan_address_is_poisoned(items[i] + k) != 0;
            if (poisoned != (i % 2 == 0))
                print_error("item %d (%s), byte %d: %spoisoned\n", i, i % 2 ? "live" : "freed", k,
                            poisoned ? "" : "not ");
            assert_true(poisoned == (i % 2 == 0));
        }
    }
#else
    /* Without ASan the slots stay tight. */
    assert_int_equal(st.stride, 12);
    for (int i = 1; i < N; i += 2)
        for (int k = 0; k < 12; k++) assert_int_equal(items[i][k], 0x11);
#endif
    for (int i = 1; i < N; i += 2) fm_pool_free(p, items[i]);
    assert_int_equal(fm_pool_check(p), FM_OK);
    fm_pool_destroy(p);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "uaf") == 0) {
        use_after_free();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "reset_uaf") == 0) {
        use_after_reset();
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_freed_slot_is_reported_or_filled),
        cmocka_unit_test(test_pool_item_freed_by_reset_is_reported_or_filled),
        cmocka_unit_test(test_pool_never_used_slots_are_poisoned_under_asan),
        cmocka_unit_test(test_pool_reused_slot_is_usable_after_poisoning),
        cmocka_unit_test(test_pool_freed_12_byte_item_is_poisoned_at_every_offset),
    };
    return cmocka_run_group_tests_name("pool_debug", tests, NULL, NULL);
}
