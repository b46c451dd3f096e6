/*
 * test_compare.c: --compare's rules (demo/src/compare.c): which run of a
 * frame it keeps, the target line, and the fresh pages every classic pool
 * gets in one process.
 */
#define _DEFAULT_SOURCE /* mincore */
#include "fm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compare.h"

#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#if defined(FM_TEST_ASAN) || defined(TEST_TSAN)
#define TEST_SANITIZER_MALLOC 1
#else
#define TEST_SANITIZER_MALLOC 0
#endif

/* A frame keeps its fastest run the OS did not preempt; a preempted run only
 * while no clean one came. */
static void test_compare_frame_keeps_its_fastest_run_the_os_did_not_preempt(void **state) {
    (void)state;
    uint64_t best = DEMO_CMP_UNSET;
    bool clean = false;
    demo_compare_keep_fastest(&best, &clean, 900, true); /* the first run, preempted */
    assert_int_equal(best, 900);
    assert_false(clean);
    demo_compare_keep_fastest(&best, &clean, 700, true); /* faster, preempted too */
    assert_int_equal(best, 700);
    assert_false(clean);
    demo_compare_keep_fastest(&best, &clean, 5000, false); /* clean, however slow, replaces it */
    assert_int_equal(best, 5000);
    assert_true(clean);
    demo_compare_keep_fastest(&best, &clean, 10, true); /* a preempted run never replaces a clean one */
    assert_int_equal(best, 5000);
    assert_true(clean);
    demo_compare_keep_fastest(&best, &clean, 6000, false); /* slower clean: kept out */
    assert_int_equal(best, 5000);
    demo_compare_keep_fastest(&best, &clean, 4000, false); /* faster clean: kept */
    assert_int_equal(best, 4000);
    assert_true(clean);
}

static void print_to(const demo_compare *c, char *buf, size_t n) {
    FILE *f = tmpfile();
    assert_non_null(f);
    demo_compare_print(c, f);
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

static demo_compare table(uint64_t classic_worst, uint64_t tuned_worst) {
    static const char *const labels[DEMO_CMP_ROWS] = {"framemem (config)", "framemem (tuned)", "classic",
                                                      "malloc"};
    demo_compare c = {.frames = 600};
    for (int r = 0; r < DEMO_CMP_ROWS; r++) c.rows[r].label = labels[r];
    c.rows[DEMO_CMP_CLASSIC].worst_alloc_ns = classic_worst;
    c.rows[DEMO_CMP_CLASSIC].worst_frame = 7;
    c.rows[DEMO_CMP_TUNED].worst_alloc_ns = tuned_worst;
    return c;
}

/* The header says how the table was measured; the verdict is met from 100x on. */
static void test_compare_target_is_met_from_100x_and_the_header_says_how_it_was_measured(void **state) {
    (void)state;
    static char out[8192];
    demo_compare c = table(3000000, 30000); /* 3 ms over 30 us: 100x */
    print_to(&c, out, sizeof out);
    assert_non_null(strstr(out, "compare: the same 600 frames again, headless, on each backend, 3 runs each"));
    assert_non_null(strstr(out, "each frame's fastest run the OS did not preempt"));
    assert_non_null(strstr(out, "loaded with prefault and grow-ahead on"));
    assert_non_null(strstr(out, "3.00 ms (7)"));
    assert_non_null(strstr(out, "target: classic worst allocation frame 3.00 ms = 100x framemem tuned "
                                "worst 30.0 us (>= 100x): met\n"));
    c = table(2999000, 30000);
    print_to(&c, out, sizeof out);
    assert_non_null(strstr(out, "= 100x framemem tuned worst 30.0 us (>= 100x): not met\n"));
    c = table(2000000, 0); /* timing off: any classic hitch is infinitely larger */
    print_to(&c, out, sizeof out);
    assert_non_null(strstr(out, "framemem tuned worst 0 us (>= 100x): met\n"));
}

static size_t resident_pages(const void *p, size_t n) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + n) & ~(page - 1);
    size_t pages = (size_t)(e - a) / page, resident = 0;
    unsigned char *v = malloc(pages);
    assert_non_null(v);
    assert_int_equal(mincore((void *)a, (size_t)(e - a), v), 0);
    for (size_t i = 0; i < pages; i++) resident += v[i] & 1;
    free(v);
    return resident;
}

/* A classic pool's block freed, then one of the same size: without the pin,
 * glibc serves the third from heap pages the second touched, and its
 * regrowth would fault nothing in. */
static void test_large_blocks_come_from_fresh_pages_after_earlier_ones_were_freed(void **state) {
    (void)state;
    if (TEST_SANITIZER_MALLOC) {
        print_message("[ did not apply ] fresh pages for large blocks: the sanitizer's malloc "
                      "replaces glibc's and has no mmap threshold\n");
        skip();
    }
    if (fm_test_under_valgrind()) {
        print_message("[ did not apply ] fresh pages for large blocks: Valgrind's malloc "
                      "replaces glibc's and has no mmap threshold\n");
        skip();
    }
    assert_true(demo_fresh_large_blocks());
    const size_t n = (size_t)16 << 20; /* the particles' largest classic block */
    for (int round = 0; round < 3; round++) {
        unsigned char *p = malloc(n);
        assert_non_null(p);
        assert_int_equal(resident_pages(p, n), 0);
        memset(p, 1, n);
        assert_true(resident_pages(p, n) > 0);
        free(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_frame_keeps_its_fastest_run_the_os_did_not_preempt),
        cmocka_unit_test(test_compare_target_is_met_from_100x_and_the_header_says_how_it_was_measured),
        cmocka_unit_test(test_large_blocks_come_from_fresh_pages_after_earlier_ones_were_freed),
    };
    return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
