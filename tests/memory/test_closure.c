/* tests/memory/test_closure.c: pooled and frame closures against the contract
 * in framemem/closure.h (events and deferred calls: test_event.c). */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* =================================================================== helpers */

static fm_closure_pool_stats cstats(const fm_closure_pool *cp) {
    fm_closure_pool_stats s;
    memset(&s, 0, sizeof s);
    fm_closure_pool_get_stats(cp, &s);
    return s;
}

static fm_closure_pool *cp_create_counted(fm_test_env *env, fm_closure_pool_desc desc) {
    desc.allocator = fm_test_allocator_get(&env->alloc);
    fm_closure_pool *cp = fm_closure_pool_create(&desc);
    if (!cp) {
        print_error("fm_closure_pool_create failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    }
    assert_non_null(cp);
    return cp;
}

/* Destroys a closure pool whose closures were all released: nothing
 * reported, every byte back in the counting allocator. */
static void cp_destroy_clean(fm_test_env *env, fm_closure_pool *cp) {
    int errors_before = env->errors.count;
    assert_int_equal(cstats(cp).live, 0);
    fm_closure_pool_destroy(cp);
    assert_int_equal(env->errors.count, errors_before);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* Checks that the last call failed with code, reported once. */
static void expect_error(fm_test_env *env, int errors_before, fm_error code) {
    if (fm_last_error() != code) {
        print_error("expected %s, got %s (%s)\n", fm_error_name(code),
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_int_equal(fm_last_error(), code);
    assert_int_equal(env->errors.count, errors_before + 1);
    assert_int_equal(env->errors.last, code);
    assert_int_equal(env->errors.bad_messages, 0);
}

/* The size class a capture of n bytes lands in: 16, 32, 64, ... */
static uint32_t class_of(size_t n) {
    uint32_t cls = 0;
    while (((size_t)16 << cls) < n) cls++;
    return cls;
}

/* ------------------------------------------------------------ call recording */

typedef struct call_log {
    int calls;
    void *last_arg;
    void *last_capture;
    int order[64]; /* tags of the calls, in order */
} call_log;

/* fn for raw captures: the arg is the log. */
static void log_raw(void *capture, void *arg) {
    call_log *log = arg;
    log->last_capture = capture;
    log->calls++;
}

/* fn whose capture names its log and a tag. */
typedef struct tagged {
    call_log *log;
    int tag;
} tagged;

static void log_tagged(void *capture, void *arg) {
    tagged *t = capture;
    if (t->log->calls < 64) t->log->order[t->log->calls] = t->tag;
    t->log->calls++;
    t->log->last_arg = arg;
    t->log->last_capture = capture;
}

static fm_closure *make_tagged(fm_closure_pool *cp, call_log *log, int tag) {
    fm_closure *c = FM_CLOSURE(cp, log_tagged, tagged, .log = log, .tag = tag);
    assert_non_null(c);
    return c;
}

static void nop_fn(void *capture, void *arg) {
    (void)capture;
    (void)arg;
}

/* ====================================================== create and defaults */

static void test_closure_pool_create_with_defaults_has_classes_16_to_256(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){0});
    assert_non_null(cp);
    fm_closure_pool_stats s = cstats(cp);
    assert_string_equal(s.name, "closures");
    assert_int_equal(s.classes, 5);
    for (uint32_t i = 0; i < s.classes; i++) {
        assert_int_equal(s.class_capture[i], (size_t)16 << i);
        assert_int_equal(s.class_live[i], 0);
    }
    assert_int_equal(s.live, 0);
    assert_int_equal(s.total_made, 0);
    assert_int_equal(s.refused, 0);
    /* Default max_capture is 256. */
    unsigned char bytes[257] = {0};
    fm_closure *c = fm_closure_make(cp, nop_fn, bytes, 256);
    assert_non_null(c);
    assert_true(fm_closure_release(c));
    assert_null(fm_closure_make(cp, nop_fn, bytes, 257));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    fm_test_errors_reset(&env->errors);
    fm_closure_pool_destroy(cp);
    assert_int_equal(env->errors.count, 0);
}

static void test_closure_pool_keeps_its_name_and_max_capture_rounds_up_to_a_class(
    void **state) {
    fm_test_env *env = *state;
    char name[32] = "mine";
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = name,
                                                                         .max_capture = 100});
    memset(name, 'x', sizeof name - 1); /* the pool keeps its own copy */
    fm_closure_pool_stats s = cstats(cp);
    assert_string_equal(s.name, "mine");
    assert_int_equal(s.classes, 4); /* 16, 32, 64, 128 */
    assert_int_equal(s.class_capture[3], 128);
    unsigned char bytes[128] = {0};
    fm_closure *ok = fm_closure_make(cp, nop_fn, bytes, 100);
    assert_non_null(ok);
    int errors = env->errors.count;
    assert_null(fm_closure_make(cp, nop_fn, bytes, 101));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    assert_true(fm_test_contains(env->errors.message, "mine"));
    assert_true(fm_closure_release(ok));
    cp_destroy_clean(env, cp);
}

static void test_closure_pool_create_accepts_max_capture_65536(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.max_capture = 65536});
    fm_closure_pool_stats s = cstats(cp);
    assert_int_equal(s.classes, FM_CLOSURE_MAX_CLASSES);
    assert_int_equal(s.class_capture[FM_CLOSURE_MAX_CLASSES - 1], 65536);
    unsigned char *big = malloc(65537);
    assert_non_null(big);
    fm_test_fill(big, 65536, 7);
    fm_closure *c = fm_closure_make(cp, nop_fn, big, 65536);
    assert_non_null(c);
    assert_int_equal(fm_closure_capture_size(c), 65536);
    assert_true(fm_test_check_fill(fm_closure_capture(c), 65536, 7));
    assert_int_equal(cstats(cp).class_live[FM_CLOSURE_MAX_CLASSES - 1], 1);
    int errors = env->errors.count;
    assert_null(fm_closure_make(cp, nop_fn, big, 65537));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    assert_true(fm_closure_release(c));
    free(big);
    cp_destroy_clean(env, cp);
}

static void test_closure_pool_create_rejects_bad_descs_with_invalid_arg(void **state) {
    fm_test_env *env = *state;
    fm_allocator counting = fm_test_allocator_get(&env->alloc);
    const fm_closure_pool_desc bad[] = {
        {.name = "too_big", .max_capture = 65537, .allocator = counting},
        {.name = "huge", .max_capture = SIZE_MAX, .allocator = counting},
        {.name = "unknown_sync", .sync = FM_SYNC_COUNT, .allocator = counting},
        {.name = "negative_sync", .sync = (fm_sync)-1, .allocator = counting},
        {.name = "half_allocator", .allocator = {.alloc = counting.alloc, .user = &env->alloc}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int errors = env->errors.count;
        fm_clear_error();
        fm_closure_pool *cp = fm_closure_pool_create(&bad[i]);
        if (cp) print_error("desc '%s' was accepted\n", bad[i].name);
        assert_null(cp);
        expect_error(env, errors, FM_ERR_INVALID_ARG);
        assert_true(fm_test_contains(env->errors.message, bad[i].name));
    }
    int errors = env->errors.count;
    assert_null(fm_closure_pool_create(NULL));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    assert_int_equal(env->alloc.alloc_calls, 0);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_closure_pool_initial_capacity_is_per_class_and_needs_no_growth(
    void **state) {
    fm_test_env *env = *state;
    enum { N = 1000 };
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.initial_capacity = N});
    uint64_t calls = env->alloc.alloc_calls;
    fm_closure **cs = malloc(2 * N * sizeof *cs);
    assert_non_null(cs);
    unsigned char bytes[256] = {0};
    for (int i = 0; i < N; i++) {
        cs[2 * i] = fm_closure_make(cp, nop_fn, bytes, 16);
        cs[2 * i + 1] = fm_closure_make(cp, nop_fn, bytes, 256);
        assert_non_null(cs[2 * i]);
        assert_non_null(cs[2 * i + 1]);
    }
    assert_int_equal(env->alloc.alloc_calls, calls);
    fm_closure_pool_stats s = cstats(cp);
    assert_int_equal(s.class_live[0], N);
    assert_int_equal(s.class_live[4], N);
    assert_int_equal(s.live, 2 * N);
    for (int i = 0; i < 2 * N; i++) assert_true(fm_closure_release(cs[i]));
    free(cs);
    cp_destroy_clean(env, cp);
}

/* ================================================================ make, call */

static void test_closure_make_and_call_passes_the_capture_copy_and_the_arg(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "calls"});
    call_log log = {0};
    tagged t = {.log = &log, .tag = 42};
    fm_closure *c = fm_closure_make(cp, log_tagged, &t, sizeof t);
    assert_non_null(c);
    int arg_target;
    fm_closure_call(c, &arg_target);
    assert_int_equal(log.calls, 1);
    assert_int_equal(log.order[0], 42);
    assert_ptr_equal(log.last_arg, &arg_target);
    /* fn gets the closure's copy, not the caller's struct. */
    assert_ptr_equal(log.last_capture, fm_closure_capture(c));
    assert_ptr_not_equal(log.last_capture, &t);
    fm_closure_call(c, NULL);
    assert_int_equal(log.calls, 2);
    assert_null(log.last_arg);
    assert_int_equal(fm_closure_capture_size(c), sizeof t);
    assert_int_equal(env->errors.count, 0);
    assert_true(fm_closure_release(c));
    cp_destroy_clean(env, cp);
}

static void test_closure_capture_is_a_copy_taken_at_make(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){0});
    call_log log = {0};
    tagged t = {.log = &log, .tag = 1};
    fm_closure *c = fm_closure_make(cp, log_tagged, &t, sizeof t);
    assert_non_null(c);
    t.tag = 2; /* after make: no effect on the closure */
    fm_closure_call(c, NULL);
    assert_int_equal(log.order[0], 1);
    /* The closure's own copy can be changed through fm_closure_capture. */
    ((tagged *)fm_closure_capture(c))->tag = 3;
    fm_closure_call(c, NULL);
    assert_int_equal(log.order[1], 3);
    assert_int_equal(t.tag, 2);
    assert_true(fm_closure_release(c));
    cp_destroy_clean(env, cp);
}

static void test_closure_capture_sizes_up_to_max_are_kept_and_above_refused(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "sizes"});
    const size_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 64, 65, 128, 129, 255, 256};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    fm_closure *cs[NS];
    unsigned char src[256];
    uint64_t class_count[FM_CLOSURE_MAX_CLASSES] = {0};
    for (size_t i = 0; i < NS; i++) {
        fm_test_fill(src, sizeof src, (uint32_t)i + 100);
        cs[i] = fm_closure_make(cp, log_raw, sizes[i] ? src : NULL, sizes[i]);
        if (!cs[i]) print_error("capture of %zu bytes refused\n", sizes[i]);
        assert_non_null(cs[i]);
        memset(src, 0, sizeof src);
        class_count[class_of(sizes[i])]++;
        fm_closure_pool_stats s = cstats(cp);
        for (uint32_t k = 0; k < s.classes; k++) assert_int_equal(s.class_live[k], class_count[k]);
    }
    for (size_t i = 0; i < NS; i++) {
        assert_int_equal(fm_closure_capture_size(cs[i]), sizes[i]);
        void *cap = fm_closure_capture(cs[i]);
        assert_true(fm_is_aligned(cap, 16));
        assert_true(fm_test_check_fill(cap, sizes[i], (uint32_t)i + 100));
        call_log log = {0};
        fm_closure_call(cs[i], &log);
        assert_int_equal(log.calls, 1);
        assert_ptr_equal(log.last_capture, cap);
    }
    /* Above max_capture: refused, and no memory was taken for it. */
    const size_t too_big[] = {257, 300, 4096, 65536, SIZE_MAX};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        fm_closure_pool_stats before = cstats(cp);
        uint64_t calls = env->alloc.alloc_calls;
        size_t blocks = env->alloc.live_blocks;
        int errors = env->errors.count;
        static unsigned char big[65536];
        assert_null(fm_closure_make(cp, log_raw, big, too_big[i]));
        expect_error(env, errors, FM_ERR_INVALID_ARG);
        assert_true(fm_test_contains(env->errors.message, "sizes"));
        assert_int_equal(env->alloc.alloc_calls, calls);
        assert_int_equal(env->alloc.live_blocks, blocks);
        fm_closure_pool_stats after = cstats(cp);
        assert_int_equal(after.live, before.live);
        assert_int_equal(after.total_made, before.total_made);
        assert_int_equal(after.refused, before.refused + 1);
    }
    for (size_t i = 0; i < NS; i++) assert_true(fm_closure_release(cs[i]));
    cp_destroy_clean(env, cp);
}

static void test_closure_make_with_null_fn_or_missing_capture_is_invalid_arg(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "nullfn"});
    int x = 5;
    int errors = env->errors.count;
    assert_null(fm_closure_make(cp, NULL, &x, sizeof x));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    errors = env->errors.count;
    assert_null(fm_closure_make(cp, NULL, NULL, 0));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    errors = env->errors.count;
    assert_null(fm_closure_make(cp, nop_fn, NULL, 4));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    fm_closure_pool_stats s = cstats(cp);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.total_made, 0);
    assert_int_equal(s.refused, 3);
    /* capture may be NULL when the size is 0. */
    fm_closure *c = fm_closure_make(cp, nop_fn, NULL, 0);
    assert_non_null(c);
    assert_int_equal(fm_closure_capture_size(c), 0);
    assert_true(fm_is_aligned(fm_closure_capture(c), 16));
    assert_true(fm_closure_release(c));
    cp_destroy_clean(env, cp);
}

static void test_closure_capture_is_16_byte_aligned_in_every_class(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.max_capture = 4096});
    enum { PER = 50 };
    const size_t sizes[] = {0, 8, 24, 40, 100, 200, 300, 1000, 2000, 4096};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    fm_closure **cs = malloc(NS * PER * sizeof *cs);
    assert_non_null(cs);
    static unsigned char src[4096];
    for (size_t i = 0; i < NS * PER; i++) {
        size_t n = sizes[i % NS];
        fm_test_fill(src, n, (uint32_t)i);
        cs[i] = fm_closure_make(cp, nop_fn, src, n);
        assert_non_null(cs[i]);
        assert_true(fm_is_aligned(fm_closure_capture(cs[i]), 16));
    }
    for (size_t i = 0; i < NS * PER; i++) {
        size_t n = sizes[i % NS];
        assert_int_equal(fm_closure_capture_size(cs[i]), n);
        if (!fm_test_check_fill(fm_closure_capture(cs[i]), n, (uint32_t)i)) {
            print_error("closure %zu (%zu capture bytes) was overwritten\n", i, n);
            fail();
        }
    }
    for (size_t i = 0; i < NS * PER; i++) assert_true(fm_closure_release(cs[i]));
    free(cs);
    cp_destroy_clean(env, cp);
}

struct hit {
    call_log *log;
    int target;
    int damage;
    double scale;
};

static void apply_hit(void *capture, void *arg) {
    struct hit *h = capture;
    int *health = arg;
    health[h->target] -= (int)(h->damage * h->scale);
    h->log->calls++;
}

static void test_closure_macro_captures_a_struct_literal(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){0});
    call_log log = {0};
    fm_closure *c =
        FM_CLOSURE(cp, apply_hit, struct hit, .log = &log, .target = 2, .damage = 3, .scale = 2.0);
    assert_non_null(c);
    assert_int_equal(fm_closure_capture_size(c), sizeof(struct hit));
    int health[4] = {100, 100, 100, 100};
    fm_closure_call(c, health);
    fm_closure_call(c, health);
    assert_int_equal(health[2], 88);
    assert_int_equal(health[0], 100);
    assert_int_equal(log.calls, 2);
    struct hit *h = fm_closure_capture(c);
    assert_int_equal(h->target, 2);
    assert_int_equal(h->damage, 3);
    assert_true(fm_closure_release(c));
    cp_destroy_clean(env, cp);
}

/* ======================================================== reference counts */

static void test_closure_retain_and_release_count_references(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){0});
    call_log log = {0};
    fm_closure *c = make_tagged(cp, &log, 1);
    fm_closure *other = make_tagged(cp, &log, 2);
    assert_int_equal(cstats(cp).live, 2);
    fm_closure_retain(c);
    fm_closure_retain(c);
    assert_false(fm_closure_release(c));
    assert_false(fm_closure_release(c));
    assert_int_equal(cstats(cp).live, 2);
    fm_closure_call(c, NULL); /* still alive with one reference */
    assert_int_equal(log.calls, 1);
    assert_true(fm_closure_release(c));
    fm_closure_pool_stats s = cstats(cp);
    assert_int_equal(s.live, 1);
    assert_int_equal(s.class_live[class_of(sizeof(tagged))], 1);
    assert_int_equal(s.total_made, 2);
    assert_int_equal(env->errors.count, 0);
    assert_true(fm_closure_release(other));
    assert_int_equal(cstats(cp).live, 0);
    cp_destroy_clean(env, cp);
}

static void test_closure_release_of_a_released_closure_is_reported_and_ignored(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){0});
    call_log log = {0};
    fm_closure *keep = make_tagged(cp, &log, 1);
    fm_closure *gone = make_tagged(cp, &log, 2);
    assert_true(fm_closure_release(gone));
    fm_closure_pool_stats before = cstats(cp);
    uint64_t calls = env->alloc.alloc_calls;

    int errors = env->errors.count;
    fm_clear_error();
    assert_false(fm_closure_release(gone));
    expect_error(env, errors, FM_ERR_REFCOUNT);
    errors = env->errors.count;
    fm_clear_error();
    fm_closure_retain(gone);
    expect_error(env, errors, FM_ERR_REFCOUNT);

    fm_closure_pool_stats after = cstats(cp);
    assert_int_equal(after.live, before.live);
    assert_int_equal(after.total_made, before.total_made);
    assert_int_equal(after.refused, before.refused);
    for (uint32_t k = 0; k < after.classes; k++)
        assert_int_equal(after.class_live[k], before.class_live[k]);
    assert_int_equal(env->alloc.alloc_calls, calls);
    assert_int_equal(log.calls, 0);
    /* The live one is untouched. */
    fm_closure_call(keep, NULL);
    assert_int_equal(log.calls, 1);
    assert_int_equal(log.order[0], 1);
    assert_true(fm_closure_release(keep));
    cp_destroy_clean(env, cp);
}

/* Pooled closures count their references in their own header: retain and
 * release never go to the backing allocator, even when it refuses all. */
static void test_closure_retain_and_release_never_call_the_allocator(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "refs"});
    call_log log = {0};
    fm_closure *c = make_tagged(cp, &log, 1);
    int errors = env->errors.count;
    uint64_t calls = env->alloc.alloc_calls;
    fm_test_allocator_fail_from(&env->alloc, 1);
    for (int i = 0; i < 1000; i++) fm_closure_retain(c);
    for (int i = 0; i < 1000; i++) assert_false(fm_closure_release(c));
    fm_test_allocator_recover(&env->alloc);
    assert_int_equal(env->alloc.alloc_calls, calls);
    assert_int_equal(env->errors.count, errors);
    /* Still count 1: one release frees it. */
    assert_true(fm_closure_release(c));
    assert_int_equal(cstats(cp).live, 0);
    cp_destroy_clean(env, cp);
}

/* ========================================================== frame closures */

static fm_frame_arena *frame_arena_counted(fm_test_allocator *a) {
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){
        .name = "closure_frames",
        .arena = {.allocator = fm_test_allocator_get(a)},
    });
    assert_non_null(fa);
    return fa;
}

/* fm_closure_alloc / fm_closure_alloc_frame leave the capture to be written
 * in place; FM_CLOSURE_FRAME builds a struct literal there. */
static void test_closure_alloc_takes_a_capture_written_in_place(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "in_place"});
    fm_frame_arena *fa = frame_arena_counted(&env->alloc);
    call_log log = {0};
    fm_closure *c = fm_closure_alloc(cp, log_tagged, NULL, sizeof(tagged));
    assert_non_null(c);
    assert_int_equal(fm_closure_capture_size(c), sizeof(tagged));
    *(tagged *)fm_closure_capture(c) = (tagged){.log = &log, .tag = 7};
    fm_closure *f = FM_CLOSURE_FRAME(fa, log_tagged, tagged, .log = &log, .tag = 8);
    assert_non_null(f);
    fm_closure_call(c, NULL);
    fm_closure_call(f, NULL);
    assert_int_equal(log.calls, 2);
    assert_int_equal(log.order[0], 7);
    assert_int_equal(log.order[1], 8);
    /* Too big a capture, or no function: refused as by make. */
    int errors = env->errors.count;
    assert_null(fm_closure_alloc(cp, log_tagged, NULL, 257));
    assert_null(fm_closure_alloc_frame(fa, NULL, NULL, 8));
    assert_int_equal(env->errors.count, errors + 2);
    assert_true(fm_closure_release(c));
    fm_frame_arena_destroy(fa);
    cp_destroy_clean(env, cp);
}

static void test_frame_closure_is_callable_and_ignores_retain_and_release(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = frame_arena_counted(&env->alloc);
    call_log log = {0};
    tagged t = {.log = &log, .tag = 9};
    fm_closure *c = fm_closure_make_frame(fa, log_tagged, &t, sizeof t);
    assert_non_null(c);
    t.tag = 10; /* copied at make */
    int arg;
    fm_closure_call(c, &arg);
    assert_int_equal(log.calls, 1);
    assert_int_equal(log.order[0], 9);
    assert_ptr_equal(log.last_arg, &arg);
    assert_ptr_equal(log.last_capture, fm_closure_capture(c));
    assert_true(fm_is_aligned(fm_closure_capture(c), 16));
    assert_int_equal(fm_closure_capture_size(c), sizeof t);
    /* No-ops: any number of them, the closure stays callable. */
    for (int i = 0; i < 3; i++) {
        fm_closure_retain(c);
        assert_false(fm_closure_release(c));
        assert_false(fm_closure_release(c));
    }
    fm_closure_call(c, NULL);
    assert_int_equal(log.calls, 2);
    assert_int_equal(env->errors.count, 0);
    /* Captures of any size, no pool limit. */
    static unsigned char big[1000];
    fm_test_fill(big, sizeof big, 3);
    fm_closure *b = fm_closure_make_frame(fa, log_raw, big, sizeof big);
    assert_non_null(b);
    assert_true(fm_test_check_fill(fm_closure_capture(b), sizeof big, 3));
    fm_closure *empty = fm_closure_make_frame(fa, log_raw, NULL, 0);
    assert_non_null(empty);
    fm_closure_call(empty, &log);
    assert_int_equal(log.calls, 3);
    int errors = env->errors.count;
    assert_null(fm_closure_make_frame(fa, NULL, &t, sizeof t));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    fm_frame_arena_destroy(fa);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_frame_closure_memory_is_released_when_its_frame_comes_round(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = frame_arena_counted(&env->alloc);
    fm_arena *arena = fm_frame_arena_current(fa);
    fm_arena_stats st;
    fm_arena_get_stats(arena, &st);
    uint64_t used0 = st.used;
    call_log log = {0};
    fm_closure *cs[10];
    for (int i = 0; i < 10; i++) {
        cs[i] = fm_closure_make_frame(fa, log_tagged, &(tagged){.log = &log, .tag = i},
                                      sizeof(tagged));
        assert_non_null(cs[i]);
        assert_true(fm_arena_owns(arena, cs[i], 1));
    }
    fm_arena_get_stats(arena, &st);
    assert_true(st.used >= used0 + 10 * sizeof(tagged));
    uint64_t used_full = st.used;

    /* Frame 1: still valid. */
    fm_frame_arena_advance(fa);
    assert_ptr_not_equal(fm_frame_arena_current(fa), arena);
    fm_arena_get_stats(arena, &st);
    assert_int_equal(st.used, used_full);
    for (int i = 0; i < 10; i++) fm_closure_call(cs[i], NULL);
    assert_int_equal(log.calls, 10);
    for (int i = 0; i < 10; i++) assert_int_equal(log.order[i], i);

    /* Frame 2 (frames = 2): the arena comes round and drops them. */
    fm_frame_arena_advance(fa);
    assert_ptr_equal(fm_frame_arena_current(fa), arena);
    fm_arena_get_stats(arena, &st);
    assert_int_equal(st.used, 0);
    assert_false(fm_arena_owns(arena, cs[0], 1));
    assert_int_equal(env->errors.count, 0);
    fm_frame_arena_destroy(fa);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ========================================================= fault injection */

static void test_closure_pool_create_fails_cleanly_at_every_backing_call(void **state) {
    fm_test_env *env = *state;
    const fm_closure_pool_desc descs[] = {
        {.name = "faulty"},
        {.name = "faulty_big", .max_capture = 4096, .initial_capacity = 200},
    };
    for (size_t d = 0; d < sizeof descs / sizeof descs[0]; d++) {
        for (int mode = 0; mode < 2; mode++) {
            bool created = false;
            for (uint64_t n = 1; n <= 1000 && !created; n++) {
                fm_test_allocator_init(&env->alloc);
                fm_test_errors_reset(&env->errors);
                fm_clear_error();
                fm_closure_pool_desc desc = descs[d];
                desc.allocator = fm_test_allocator_get(&env->alloc);
                if (mode) fm_test_allocator_fail_from(&env->alloc, n);
                else fm_test_allocator_fail_nth(&env->alloc, n);
                fm_closure_pool *cp = fm_closure_pool_create(&desc);
                fm_test_allocator_recover(&env->alloc);
                if (cp) {
                    created = true;
                    assert_true(n > 1);
                    assert_int_equal(env->errors.count, 0);
                    fm_closure *c = fm_closure_make(cp, nop_fn, NULL, 0);
                    assert_non_null(c);
                    assert_true(fm_closure_release(c));
                    fm_closure_pool_destroy(cp);
                } else {
                    assert_true(env->alloc.failed_calls > 0);
                    assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
                    assert_true(env->errors.count >= 1);
                    assert_int_equal(env->errors.last, FM_ERR_OUT_OF_MEMORY);
                }
                fm_test_allocator_assert_clean(&env->alloc);
                fm_test_allocator_release(&env->alloc);
            }
            assert_true(created);
        }
    }
}

static void test_closure_make_fails_with_the_pools_error_when_growth_is_refused(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "grow"});
    enum { MAX = 100000 };
    fm_closure **cs = malloc(MAX * sizeof *cs);
    assert_non_null(cs);
    size_t n = 0;
    fm_test_allocator_fail_from(&env->alloc, 1);
    for (;;) {
        assert_true(n < MAX);
        int errors = env->errors.count;
        fm_closure_pool_stats before = cstats(cp);
        fm_closure *c = fm_closure_make(cp, nop_fn, &n, sizeof n);
        if (!c) {
            expect_error(env, errors, FM_ERR_OUT_OF_MEMORY);
            fm_closure_pool_stats after = cstats(cp);
            assert_int_equal(after.live, before.live);
            assert_int_equal(after.total_made, before.total_made);
            assert_int_equal(after.refused, before.refused + 1);
            break;
        }
        cs[n++] = c;
    }
    assert_true(n > 0); /* the first chunk served until it was full */
    /* Other classes still have room of their own. */
    unsigned char bytes[64] = {0};
    fm_closure *other = fm_closure_make(cp, nop_fn, bytes, sizeof bytes);
    assert_non_null(other);
    fm_test_allocator_recover(&env->alloc);
    for (int i = 0; i < 10; i++) {
        fm_closure *c = fm_closure_make(cp, nop_fn, &n, sizeof n);
        assert_non_null(c);
        cs[n++] = c;
    }
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(fm_closure_capture_size(cs[i]), sizeof n);
        assert_true(fm_closure_release(cs[i]));
    }
    assert_true(fm_closure_release(other));
    free(cs);
    cp_destroy_clean(env, cp);
}

/* ============================================================ stats, destroy */

static void test_closure_pool_stats_count_made_refused_and_live_per_class(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "stats"});
    unsigned char bytes[300] = {0};
    fm_closure *a = fm_closure_make(cp, nop_fn, bytes, 8);   /* class 16 */
    fm_closure *b = fm_closure_make(cp, nop_fn, bytes, 20);  /* class 32 */
    fm_closure *c = fm_closure_make(cp, nop_fn, bytes, 200); /* class 256 */
    fm_closure *d = fm_closure_make(cp, nop_fn, bytes, 16);  /* class 16 */
    assert_null(fm_closure_make(cp, nop_fn, bytes, 300));
    assert_null(fm_closure_make(cp, NULL, bytes, 8));
    fm_closure_pool_stats s = cstats(cp);
    assert_string_equal(s.name, "stats");
    assert_int_equal(s.live, 4);
    assert_int_equal(s.total_made, 4);
    assert_int_equal(s.refused, 2);
    assert_int_equal(s.class_live[0], 2);
    assert_int_equal(s.class_live[1], 1);
    assert_int_equal(s.class_live[2], 0);
    assert_int_equal(s.class_live[3], 0);
    assert_int_equal(s.class_live[4], 1);
    fm_closure_retain(a);
    assert_false(fm_closure_release(a));
    assert_true(fm_closure_release(a));
    assert_true(fm_closure_release(c));
    s = cstats(cp);
    assert_int_equal(s.live, 2);
    assert_int_equal(s.total_made, 4); /* made, not retained */
    assert_int_equal(s.class_live[0], 1);
    assert_int_equal(s.class_live[4], 0);
    assert_true(fm_closure_release(b));
    assert_true(fm_closure_release(d));
    fm_closure_pool_get_stats(cp, NULL); /* no out: ignored */
    cp_destroy_clean(env, cp);
}

/* ====================================== inline fast paths (closure.h) */

/* closure.h inlines its fast paths exactly when pool.h does; the calls in
 * parentheses below are always the library's functions, the others are the
 * inline ones in optimised builds (and the library's elsewhere). */
#if defined(FM__POOL_INLINE) != defined(FM__CLOSURE_INLINE)
#error "closure.h's inline fast paths must follow pool.h's"
#endif

/* A size the compiler cannot see, as the library's functions get it. */
static size_t opaque_size(size_t n) {
    volatile size_t v = n;
    return v;
}

/* Inline makes (a constant size is copied at compile time) and the
 * library's (the size known at run time: other copy code) give the same
 * closures, and either path's retain and release work on either's. */
static void test_closure_inline_and_library_makes_agree_for_every_capture_size(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.max_capture = 64});
    fm_frame_arena *fa = frame_arena_counted(&env->alloc);
    unsigned char src[64];
    fm_test_fill(src, sizeof src, 77);
    call_log log = {0};
    int calls = 0;
    for (size_t n = 0; n <= sizeof src; n++) {
        size_t size = opaque_size(n);
        fm_closure *cs[5] = {
            fm_closure_make(cp, log_raw, src, size),
            (fm_closure_make)(cp, log_raw, src, size),
            fm_closure_make_frame(fa, log_raw, src, size),
            (fm_closure_make_frame)(fa, log_raw, src, size),
            n == 32 ? fm_closure_make(cp, log_raw, src, 32) : (fm_closure_make)(cp, log_raw, src, n),
        };
        for (int k = 0; k < 5; k++) {
            assert_non_null(cs[k]);
            assert_int_equal(fm_closure_capture_size(cs[k]), n);
            assert_ptr_equal(fm_closure_capture(cs[k]), (fm_closure_capture)(cs[k]));
            assert_true(fm_is_aligned(fm_closure_capture(cs[k]), 16));
            assert_memory_equal(fm_closure_capture(cs[k]), src, n);
            fm_closure_call(cs[k], &log);
            assert_ptr_equal(log.last_capture, fm_closure_capture(cs[k]));
            (fm_closure_call)(cs[k], &log);
            assert_ptr_equal(log.last_capture, fm_closure_capture(cs[k]));
            calls += 2;
        }
        /* Retained by one path, released by the other. */
        fm_closure_retain(cs[1]);
        (fm_closure_retain)(cs[0]);
        assert_false((fm_closure_release)(cs[1]));
        assert_false(fm_closure_release(cs[0]));
        assert_true((fm_closure_release)(cs[0]));
        assert_true(fm_closure_release(cs[1]));
        assert_true(fm_closure_release(cs[4]));
        /* Frame closures: no-ops either way. */
        fm_closure_retain(cs[2]);
        assert_false(fm_closure_release(cs[2]));
        assert_false((fm_closure_release)(cs[3]));
    }
    assert_int_equal(log.calls, calls);
    assert_int_equal(env->errors.count, 0);
    fm_closure_pool_stats s = cstats(cp);
    assert_int_equal(s.total_made, 3 * (sizeof src + 1));
    assert_int_equal(s.refused, 0);
    assert_int_equal(s.live, 0);
    fm_frame_arena_destroy(fa);
    cp_destroy_clean(env, cp);
}

/* Runs one misuse through the inline call and then through the library's
 * function: both fail with code and the same message. */
#define EXPECT_TWIN_REPORTS(env, code, inline_call, library_call)               \
    do {                                                                        \
        char first_[512];                                                       \
        int errors_ = (env)->errors.count;                                      \
        fm_clear_error();                                                       \
        inline_call;                                                            \
        expect_error((env), errors_, (code));                                   \
        snprintf(first_, sizeof first_, "%s", fm_last_error_message());         \
        errors_ = (env)->errors.count;                                          \
        fm_clear_error();                                                       \
        library_call;                                                           \
        expect_error((env), errors_, (code));                                   \
        assert_string_equal(fm_last_error_message(), first_);                   \
    } while (0)

/* What the inline paths do not finish themselves they hand to the library,
 * which reports it as it always has: the same error and message both ways,
 * nothing changed, the refusals counted. */
static void test_closure_misuse_through_inline_and_library_calls_is_reported_alike(
    void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp =
        cp_create_counted(env, (fm_closure_pool_desc){.name = "twins", .max_capture = 32});
    fm_frame_arena *fa = frame_arena_counted(&env->alloc);
    unsigned char bytes[40] = {0};
    fm_closure *c = NULL;
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, c = fm_closure_make(cp, NULL, bytes, 8),
                        c = (fm_closure_make)(cp, NULL, bytes, 8));
    assert_null(c);
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, c = fm_closure_make(cp, nop_fn, NULL, 8),
                        c = (fm_closure_make)(cp, nop_fn, NULL, 8));
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, c = fm_closure_make(cp, nop_fn, bytes, 33),
                        c = (fm_closure_make)(cp, nop_fn, bytes, opaque_size(33)));
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, c = fm_closure_alloc(cp, NULL, NULL, 8),
                        c = (fm_closure_alloc)(cp, NULL, NULL, 8));
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, c = fm_closure_make_frame(fa, nop_fn, NULL, 8),
                        c = (fm_closure_make_frame)(fa, nop_fn, NULL, 8));
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, c = fm_closure_alloc_frame(fa, NULL, NULL, 8),
                        c = (fm_closure_alloc_frame)(fa, NULL, NULL, 8));
    assert_null(c);
    fm_closure_pool_stats s = cstats(cp);
    assert_int_equal(s.refused, 8);
    assert_int_equal(s.total_made, 0);

    bool freed = true;
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, freed = fm_closure_release(NULL),
                        freed = (fm_closure_release)(NULL));
    assert_false(freed);
    EXPECT_TWIN_REPORTS(env, FM_ERR_INVALID_ARG, fm_closure_retain(NULL),
                        (fm_closure_retain)(NULL));

    /* Released: its tag is gone, both paths refuse it. */
    fm_closure *keep = fm_closure_make(cp, nop_fn, bytes, 16);
    fm_closure *gone = fm_closure_make(cp, nop_fn, bytes, 16);
    assert_true(fm_closure_release(gone));
    freed = true;
    EXPECT_TWIN_REPORTS(env, FM_ERR_REFCOUNT, freed = fm_closure_release(gone),
                        freed = (fm_closure_release)(gone));
    assert_false(freed);
    EXPECT_TWIN_REPORTS(env, FM_ERR_REFCOUNT, fm_closure_retain(gone),
                        (fm_closure_retain)(gone));

    /* Bytes that never were a closure. */
    _Alignas(16) unsigned char junk[64] = {0};
    fm_closure *fake = (fm_closure *)(void *)junk;
    EXPECT_TWIN_REPORTS(env, FM_ERR_REFCOUNT, freed = fm_closure_release(fake),
                        freed = (fm_closure_release)(fake));
    assert_false(freed);
    for (size_t i = 0; i < sizeof junk; i++) assert_int_equal(junk[i], 0);

    /* A count at its maximum: the inline retain stops where the library
     * does (the count set through the header closure.h exposes). */
    fm__closure_hdr *h = (fm__closure_hdr *)(void *)keep;
    h->refs = UINT32_MAX - 1;
    int errors = env->errors.count;
    fm_closure_retain(keep);
    assert_int_equal(h->refs, UINT32_MAX);
    assert_int_equal(env->errors.count, errors);
    EXPECT_TWIN_REPORTS(env, FM_ERR_REFCOUNT, fm_closure_retain(keep),
                        (fm_closure_retain)(keep));
    assert_int_equal(h->refs, UINT32_MAX);
    h->refs = 1;

    s = cstats(cp);
    assert_int_equal(s.live, 1);
    assert_int_equal(s.total_made, 2);
    assert_int_equal(s.refused, 8);
    assert_true(fm_closure_release(keep));
    fm_frame_arena_destroy(fa);
    cp_destroy_clean(env, cp);
}

/* Closures of shared pools are made inline (their class pools' inline
 * paths serve every policy they can) but counted by the library with
 * atomics: the inline retain and release hand them over. */
static void test_closure_inline_calls_on_shared_pools_use_the_librarys_counting(void **state) {
    fm_test_env *env = *state;
    for (fm_sync sync = FM_SYNC_MUTEX; sync < FM_SYNC_COUNT; sync++) {
        fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.sync = sync});
        call_log log = {0};
        fm_closure *c = make_tagged(cp, &log, 4);
        fm__closure_hdr *h = (fm__closure_hdr *)(void *)c;
        assert_int_equal(h->tag, FM__CLOSURE_TAG_SHARED);
        fm_closure_retain(c);
        (fm_closure_retain)(c);
        assert_int_equal(h->refs, 3);
        assert_false(fm_closure_release(c));
        assert_false((fm_closure_release)(c));
        fm_closure_call(c, NULL);
        assert_int_equal(log.order[0], 4);
        assert_true(fm_closure_release(c));
        int errors = env->errors.count;
        assert_false(fm_closure_release(c));
        expect_error(env, errors, FM_ERR_REFCOUNT);
        fm_closure_pool_stats s = cstats(cp);
        assert_int_equal(s.total_made, 1);
        assert_int_equal(s.live, 0);
        cp_destroy_clean(env, cp);
    }
}

static void test_closure_pool_destroy_with_live_closures_reports_a_leak(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "leaky"});
    unsigned char bytes[100] = {0};
    for (int i = 0; i < 3; i++) assert_non_null(fm_closure_make(cp, nop_fn, bytes, 8));
    fm_closure *r = fm_closure_make(cp, nop_fn, bytes, 100);
    fm_closure_retain(r); /* count storage is given back too */
    fm_test_errors_reset(&env->errors);
    fm_clear_error();
    fm_closure_pool_destroy(cp);
    assert_true(env->errors.by_code[FM_ERR_LEAK] >= 1);
    assert_int_equal(env->errors.count, env->errors.by_code[FM_ERR_LEAK]);
    assert_int_equal(fm_last_error(), FM_ERR_LEAK);
    assert_true(fm_test_contains(env->errors.log, "leaky"));
    fm_test_allocator_assert_clean(&env->alloc);

    /* No live closures: nothing reported. NULL: a no-op. */
    cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "tidy"});
    fm_closure *c = fm_closure_make(cp, nop_fn, bytes, 8);
    assert_true(fm_closure_release(c));
    cp_destroy_clean(env, cp);
    int errors = env->errors.count;
    fm_closure_pool_destroy(NULL);
    assert_int_equal(env->errors.count, errors);
}

/* ============================================================ many closures */

static void test_closures_across_many_chunks_keep_their_captures(void **state) {
    fm_test_env *env = *state;
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){0});
    enum { N = 20000 };
    fm_closure **cs = malloc(N * sizeof *cs);
    assert_non_null(cs);
    static unsigned char src[256];
    uint64_t rng = 12345;
    for (size_t i = 0; i < N; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(rng >> 33) % 257;
        fm_test_fill(src, n, (uint32_t)i);
        cs[i] = fm_closure_make(cp, log_raw, src, n);
        assert_non_null(cs[i]);
        if (i % 3 == 0) fm_closure_retain(cs[i]);
    }
    assert_int_equal(cstats(cp).live, N);
    for (size_t i = 0; i < N; i++) {
        size_t n = fm_closure_capture_size(cs[i]);
        if (!fm_test_check_fill(fm_closure_capture(cs[i]), n, (uint32_t)i)) {
            print_error("closure %zu (%zu bytes) was overwritten\n", i, n);
            fail();
        }
        call_log log = {0};
        fm_closure_call(cs[i], &log);
        assert_int_equal(log.calls, 1);
    }
    /* Release in a scattered order: the retained third needs two. */
    for (size_t k = 0; k < N; k++) {
        size_t i = (k * 7919) % N;
        if (i % 3 == 0) assert_false(fm_closure_release(cs[i]));
        assert_true(fm_closure_release(cs[i]));
    }
    assert_int_equal(cstats(cp).live, 0);
    assert_int_equal(env->errors.count, 0);
    free(cs);
    cp_destroy_clean(env, cp);
}

/* ======================================================= zero allocation */

typedef struct steady {
    uint64_t calls;
    uint64_t sum;
} steady;

typedef struct steady_capture {
    steady *s;
    uint64_t value;
    unsigned char pad[40];
} steady_capture;

static void steady_fn(void *capture, void *arg) {
    steady_capture *c = capture;
    c->s->calls++;
    c->s->sum += c->value + (arg ? *(const uint64_t *)arg : 0);
}

static void test_closure_steady_frames_make_no_backing_allocations(void **state) {
    fm_test_env *env = *state;
    fm_test_allocator frame_alloc;
    fm_test_allocator_init(&frame_alloc);
    fm_allocator counting = fm_test_allocator_get(&env->alloc);
    fm_closure_pool *cp = cp_create_counted(env, (fm_closure_pool_desc){.name = "steady"});
    fm_event *ev = fm_event_create(&(fm_event_desc){.name = "tick", .allocator = counting});
    fm_defer_queue *q =
        fm_defer_queue_create(&(fm_defer_queue_desc){.name = "later", .allocator = counting});
    fm_frame_arena *fa = frame_arena_counted(&frame_alloc);
    assert_non_null(ev);
    assert_non_null(q);
    steady s = {0};
    fm_closure *persistent = FM_CLOSURE(cp, steady_fn, steady_capture, .s = &s, .value = 1000);
    assert_non_null(persistent);
    fm_handle keep_sub = fm_event_subscribe(ev, persistent);
    assert_false(fm_handle_is_null(keep_sub));

    enum { FRAMES = 1001 };
    uint64_t calls_after_warmup = 0, frame_calls_after_warmup = 0;
    for (int f = 0; f < FRAMES; f++) {
        if (f == 1) {
            calls_after_warmup = env->alloc.alloc_calls;
            frame_calls_after_warmup = frame_alloc.alloc_calls;
        }
        uint64_t arg = (uint64_t)f;
        fm_closure *a = FM_CLOSURE(cp, steady_fn, steady_capture, .s = &s, .value = 1);
        fm_closure *b = fm_closure_make(cp, steady_fn, &(steady_capture){.s = &s, .value = 2},
                                        sizeof(steady_capture));
        fm_closure *small = fm_closure_make(cp, steady_fn, &(steady_capture){.s = &s}, 16);
        fm_closure *fr = fm_closure_make_frame(
            fa, steady_fn, &(steady_capture){.s = &s, .value = 3}, sizeof(steady_capture));
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(small);
        assert_non_null(fr);
        fm_closure_call(a, &arg);
        fm_closure_call(fr, &arg);
        fm_handle sub = fm_event_subscribe(ev, a);
        fm_handle sub_fr = fm_event_subscribe(ev, fr);
        assert_false(fm_handle_is_null(sub));
        assert_false(fm_handle_is_null(sub_fr));
        fm_event_emit(ev, &arg);
        assert_true(fm_event_unsubscribe(ev, sub));
        assert_true(fm_event_unsubscribe(ev, sub_fr));
        assert_true(fm_defer(q, b, 0));
        assert_true(fm_defer(q, a, 1));
        fm_closure_retain(b);
        assert_false(fm_closure_release(b));
        assert_false(fm_closure_release(b)); /* the queue holds it */
        assert_false(fm_closure_release(a));
        assert_true(fm_closure_release(small));
        fm_defer_run(q);
        fm_frame_arena_advance(fa);
    }
    assert_int_equal(env->alloc.alloc_calls, calls_after_warmup);
    assert_int_equal(frame_alloc.alloc_calls, frame_calls_after_warmup);
    assert_int_equal(env->errors.count, 0);
    assert_true(s.calls > 5 * (FRAMES - 1));

    /* Drain: the last a is still waiting a frame. */
    fm_defer_run(q);
    assert_int_equal(fm_defer_pending(q), 0);
    fm_event_destroy(ev);
    assert_true(fm_closure_release(persistent));
    fm_defer_queue_destroy(q);
    fm_frame_arena_destroy(fa);
    fm_test_allocator_assert_clean(&frame_alloc);
    fm_test_allocator_release(&frame_alloc);
    cp_destroy_clean(env, cp);
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_closure_pool_create_with_defaults_has_classes_16_to_256),
        T(test_closure_pool_keeps_its_name_and_max_capture_rounds_up_to_a_class),
        T(test_closure_pool_create_accepts_max_capture_65536),
        T(test_closure_pool_create_rejects_bad_descs_with_invalid_arg),
        T(test_closure_pool_initial_capacity_is_per_class_and_needs_no_growth),
        T(test_closure_make_and_call_passes_the_capture_copy_and_the_arg),
        T(test_closure_capture_is_a_copy_taken_at_make),
        T(test_closure_capture_sizes_up_to_max_are_kept_and_above_refused),
        T(test_closure_make_with_null_fn_or_missing_capture_is_invalid_arg),
        T(test_closure_capture_is_16_byte_aligned_in_every_class),
        T(test_closure_macro_captures_a_struct_literal),
        T(test_closure_retain_and_release_count_references),
        T(test_closure_release_of_a_released_closure_is_reported_and_ignored),
        T(test_closure_retain_and_release_never_call_the_allocator),
        T(test_closure_alloc_takes_a_capture_written_in_place),
        T(test_frame_closure_is_callable_and_ignores_retain_and_release),
        T(test_frame_closure_memory_is_released_when_its_frame_comes_round),
        T(test_closure_pool_create_fails_cleanly_at_every_backing_call),
        T(test_closure_make_fails_with_the_pools_error_when_growth_is_refused),
        T(test_closure_pool_stats_count_made_refused_and_live_per_class),
        T(test_closure_inline_and_library_makes_agree_for_every_capture_size),
        T(test_closure_misuse_through_inline_and_library_calls_is_reported_alike),
        T(test_closure_inline_calls_on_shared_pools_use_the_librarys_counting),
        T(test_closure_pool_destroy_with_live_closures_reports_a_leak),
        T(test_closures_across_many_chunks_keep_their_captures),
        T(test_closure_steady_frames_make_no_backing_allocations),
#undef T
    };
    return cmocka_run_group_tests_name("closure", tests, NULL, NULL);
}
