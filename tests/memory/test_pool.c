/* tests/memory/test_pool.c: fm_pool against the contract in framemem/pool.h. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"
#include "internal.h"    /* fm__pool_set_window_chunks */
#include "platform/os.h" /* fm__os_reserve_below */

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* =================================================================== helpers */

#define stats_of fm_test_pool_stats
#define assert_stats_same fm_test_assert_pool_stats_same

static fm_pool_desc counted(fm_test_env *env, fm_pool_desc desc) {
    desc.allocator = fm_test_allocator_get(&env->alloc);
    return desc;
}

#define create_counted fm_test_pool_create_counted
#define destroy_clean fm_test_pool_destroy_clean

static uintptr_t far_bit(void) {
    return UINTPTR_MAX > 0xFFFFFFFFu ? (uintptr_t)1 << 40 : (uintptr_t)1 << 30;
}

/* A pointer far from p, computed without pointer arithmetic. */
static void *far_from(const void *p) {
    return (void *)((uintptr_t)p ^ far_bit());
}

static void *byte_offset(const void *p, size_t off) {
    return (void *)((uintptr_t)p + off);
}

/* true when number appears in text as a whole decimal token. */
static bool contains_number(const char *text, unsigned long number) {
    char digits[32];
    snprintf(digits, sizeof digits, "%lu", number);
    size_t n = strlen(digits);
    for (const char *p = text; p && (p = strstr(p, digits)) != NULL; p++) {
        bool left_ok = p == text || !isalnum((unsigned char)p[-1]);
        bool right_ok = !isalnum((unsigned char)p[n]);
        if (left_ok && right_ok) return true;
    }
    return false;
}

/* ------------------------------------------------ items with fill patterns */

typedef struct live_set {
    void **items;
    uint32_t *seeds;
    size_t count;
    size_t cap;
    size_t item_size;
    uint32_t next_seed;
} live_set;

static void live_init(live_set *s, size_t item_size) {
    memset(s, 0, sizeof *s);
    s->item_size = item_size;
    s->next_seed = 1;
}

static void live_deinit(live_set *s) {
    free(s->items);
    free(s->seeds);
    memset(s, 0, sizeof *s);
}

static void live_add(live_set *s, void *item) {
    assert_non_null(item);
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->items = realloc(s->items, s->cap * sizeof *s->items);
        s->seeds = realloc(s->seeds, s->cap * sizeof *s->seeds);
        assert_non_null(s->items);
        assert_non_null(s->seeds);
    }
    uint32_t seed = s->next_seed++;
    fm_test_fill(item, s->item_size, seed);
    s->items[s->count] = item;
    s->seeds[s->count] = seed;
    s->count++;
}

static void *live_alloc(live_set *s, fm_pool *pool) {
    void *item = fm_pool_alloc(pool);
    if (!item) {
        print_error("fm_pool_alloc failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    }
    assert_non_null(item);
    live_add(s, item);
    return item;
}

static void live_verify_one(const live_set *s, size_t i) {
    if (!fm_test_check_fill(s->items[i], s->item_size, s->seeds[i])) {
        print_error("item %p (seed %u) was overwritten\n", s->items[i], (unsigned)s->seeds[i]);
        fail();
    }
}

static void live_verify_all(const live_set *s) {
    for (size_t i = 0; i < s->count; i++) live_verify_one(s, i);
    fm_test_assert_no_overlap(s->items, s->count, s->item_size);
}

/* Removes entry i (after checking its contents) without freeing it. */
static void *live_take(live_set *s, size_t i) {
    assert_true(i < s->count);
    live_verify_one(s, i);
    void *item = s->items[i];
    s->count--;
    s->items[i] = s->items[s->count];
    s->seeds[i] = s->seeds[s->count];
    return item;
}

static void live_release(live_set *s, fm_pool *pool, size_t i) {
    fm_pool_free(pool, live_take(s, i));
}

static void live_release_all(live_set *s, fm_pool *pool) {
    while (s->count) live_release(s, pool, s->count - 1);
}

static bool live_contains(const live_set *s, const void *p) {
    for (size_t i = 0; i < s->count; i++) {
        if (s->items[i] == p) return true;
    }
    return false;
}

/* After misuse the pool still works: fill it to its capacity without growing,
 * check every item (old and new) holds its own pattern and none overlap, run
 * the invariant check, then give the new items back. */
static void assert_pool_usable(fm_pool *pool, live_set *kept) {
    fm_pool_stats before = stats_of(pool);
    assert_int_equal(before.live, kept->count);
    size_t first_new = kept->count;
    while (stats_of(pool).live < before.capacity) live_alloc(kept, pool);
    fm_pool_stats full = stats_of(pool);
    assert_int_equal(full.grow_events, before.grow_events);
    assert_int_equal(full.live, full.capacity);
    live_verify_all(kept);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (size_t i = 0; i < kept->count; i++) assert_true(fm_pool_owns(pool, kept->items[i]));
    while (kept->count > first_new) live_release(kept, pool, kept->count - 1);
    assert_int_equal(stats_of(pool).live, first_new);
    assert_int_equal(fm_pool_check(pool), FM_OK);
}

/* ------------------------------------------------------------ ctor / dtor */

enum { HOOK_MAX_ITEMS = 256 };

typedef struct hook_log {
    int ctor_calls;
    int dtor_calls;
    void *last_ctor_item;
    void *last_dtor_item;
    void *ctor_user;
    void *dtor_user;
    void *dtor_items[HOOK_MAX_ITEMS];
} hook_log;

static void hook_ctor(void *item, void *user) {
    hook_log *h = user;
    h->ctor_calls++;
    h->last_ctor_item = item;
    h->ctor_user = user;
    memset(item, 0xC7, sizeof(uint32_t));
}

static void hook_dtor(void *item, void *user) {
    hook_log *h = user;
    if (h->dtor_calls < HOOK_MAX_ITEMS) h->dtor_items[h->dtor_calls] = item;
    h->dtor_calls++;
    h->last_dtor_item = item;
    h->dtor_user = user;
}

/* -------------------------------------------------------- misuse checking */

/* Frees (or deletes) a bad pointer and checks it was reported with code,
 * naming the pool, and changed nothing but misuse_count (and no dtor ran). */
static void expect_bad_release(fm_test_env *env, fm_pool *pool, void *bad, fm_error code,
                               bool use_delete, const hook_log *hooks) {
    fm_pool_stats before = stats_of(pool);
    int errors_before = env->errors.count;
    int dtors_before = hooks ? hooks->dtor_calls : 0;
    fm_clear_error();
    if (use_delete) {
        fm_pool_delete(pool, bad);
    } else {
        fm_pool_free(pool, bad);
    }
    if (fm_last_error() != code) {
        print_error("freeing %p: expected %s, got %s (%s)\n", bad, fm_error_name(code),
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_int_equal(fm_last_error(), code);
    assert_int_equal(env->errors.count, errors_before + 1);
    assert_int_equal(env->errors.last, code);
    assert_true(fm_test_contains(env->errors.message, fm_pool_name(pool)));
    fm_pool_stats after = stats_of(pool);
    assert_stats_same(&before, &after, 1);
    if (hooks) assert_int_equal(hooks->dtor_calls, dtors_before);
}

static void expect_bad_free(fm_test_env *env, fm_pool *pool, void *bad, fm_error code) {
    expect_bad_release(env, pool, bad, code, false, NULL);
}

/* A pool with a few live items (patterned) and a few freed ones, used by the
 * misuse tests. */
typedef struct misuse_case {
    fm_pool *pool;
    live_set live;
    void *freed[4];
    hook_log hooks;
} misuse_case;

static void misuse_begin(fm_test_env *env, misuse_case *m, size_t item_size) {
    memset(m, 0, sizeof *m);
    m->pool = create_counted(env, (fm_pool_desc){
                                      .name = "misuse_pool",
                                      .item_size = item_size,
                                      .initial_capacity = 64,
                                      .ctor = hook_ctor,
                                      .dtor = hook_dtor,
                                      .user = &m->hooks,
                                  });
    live_init(&m->live, item_size);
    for (int i = 0; i < 12; i++) live_alloc(&m->live, m->pool);
    for (int i = 0; i < 4; i++) {
        m->freed[i] = live_take(&m->live, (size_t)i * 2);
        fm_pool_free(m->pool, m->freed[i]);
    }
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(stats_of(m->pool).live, 8);
}

static void misuse_end(fm_test_env *env, misuse_case *m) {
    assert_pool_usable(m->pool, &m->live);
    live_release_all(&m->live, m->pool);
    live_deinit(&m->live);
    int errors = env->errors.count;
    destroy_clean(env, m->pool);
    assert_int_equal(env->errors.count, errors);
}

/* ====================================================== create and defaults */

static void test_pool_create_with_defaults_gives_one_usable_chunk(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.item_size = 40});
    assert_non_null(pool);
    fm_pool_stats s = stats_of(pool);
    assert_string_equal(fm_pool_name(pool), "pool");
    assert_string_equal(s.name, "pool");
    assert_int_equal(s.item_size, 40);
    assert_int_equal(s.item_align, FM_DEFAULT_ALIGN);
    assert_true(s.stride >= 40 && s.stride % FM_DEFAULT_ALIGN == 0);
    assert_true(FM_IS_POW2(s.chunk_bytes));
    assert_int_equal(s.chunk_count, 1);
    assert_true(s.items_per_chunk >= 1);
    assert_int_equal(s.capacity, s.items_per_chunk);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.peak_live, 0);
    assert_int_equal(s.total_allocs, 0);
    assert_int_equal(s.total_frees, 0);
    assert_int_equal(s.failed_allocs, 0);
    assert_int_equal(s.misuse_count, 0);
    assert_int_equal(s.grow_events, 0);
    assert_int_equal(s.trim_events, 0);
    assert_int_equal(s.bytes_trimmed, 0);
    assert_true(s.bytes_reserved >= s.capacity * s.item_size);
    assert_int_equal(s.bytes_overhead, s.bytes_reserved - s.capacity * s.item_size);

    live_set live;
    live_init(&live, 40);
    for (uint64_t i = 0; i < s.capacity + 1; i++) live_alloc(&live, pool);
    live_verify_all(&live);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_release_all(&live, pool);
    live_deinit(&live);
    fm_pool_destroy(pool);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
}

static void test_pool_create_with_null_desc_fails_with_invalid_arg(void **state) {
    fm_test_env *env = *state;
    assert_null(fm_pool_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.bad_messages, 0);
}

typedef struct desc_case {
    const char *label;
    fm_pool_desc desc;
} desc_case;

static void test_pool_create_rejects_invalid_descs_with_invalid_arg(void **state) {
    fm_test_env *env = *state;
    const desc_case cases[] = {
        {"item_size 0", {.item_size = 0}},
        {"item_size max+1", {.item_size = FM_POOL_MAX_ITEM_SIZE + 1}},
        {"item_size SIZE_MAX", {.item_size = SIZE_MAX}},
        {"align 3", {.item_size = 16, .item_align = 3}},
        {"align 6", {.item_size = 16, .item_align = 6}},
        {"align 24", {.item_size = 16, .item_align = 24}},
        {"align 8192", {.item_size = 16, .item_align = 8192}},
        {"align 1 MiB", {.item_size = 16, .item_align = (size_t)1 << 20}},
        {"align SIZE_MAX", {.item_size = 16, .item_align = SIZE_MAX}},
        {"grow_factor 1.0", {.item_size = 16, .grow_factor = 1.0f}},
        {"grow_factor 0.5", {.item_size = 16, .grow_factor = 0.5f}},
        {"grow_factor -2", {.item_size = 16, .grow_factor = -2.0f}},
        {"grow_factor NaN", {.item_size = 16, .grow_factor = NAN}},
        {"sync count", {.item_size = 16, .sync = FM_SYNC_COUNT}},
        {"sync 99", {.item_size = 16, .sync = (fm_sync)99}},
        {"growth count", {.item_size = 16, .growth = FM_GROWTH_COUNT}},
        {"growth 99", {.item_size = 16, .growth = (fm_growth)99}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fm_pool_desc desc = counted(env, cases[i].desc);
        desc.name = "bad_desc_pool";
        fm_test_errors_reset(&env->errors);
        fm_clear_error();
        /* the public check refuses it by the same rule, reporting nothing */
        char why[128];
        assert_int_equal(fm_pool_desc_check(&desc, why, sizeof why), FM_ERR_INVALID_ARG);
        assert_true(why[0] != 0);
        assert_int_equal(env->errors.count, 0);
        assert_int_equal(fm_last_error(), FM_OK);
        fm_pool *pool = fm_pool_create(&desc);
        if (pool || fm_last_error() != FM_ERR_INVALID_ARG || env->errors.count != 1) {
            print_error("case '%s': pool %p, last error %s, handler calls %d\n",
                        cases[i].label, (void *)pool, fm_error_name(fm_last_error()),
                        env->errors.count);
        }
        assert_null(pool);
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
        assert_int_equal(env->errors.bad_messages, 0);
        if (!fm_test_contains(env->errors.message, "bad_desc_pool") ||
            !fm_test_contains(env->errors.message, why)) {
            print_error("case '%s': message does not name the pool and '%s': %s\n",
                        cases[i].label, why, env->errors.message);
            fail();
        }
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

static void test_pool_create_accepts_boundary_descs(void **state) {
    fm_test_env *env = *state;
    const desc_case cases[] = {
        {"item_size 1", {.item_size = 1}},
        {"align 1", {.item_size = 5, .item_align = 1}},
        {"align 4096", {.item_size = 16, .item_align = FM_MAX_ALIGN}},
        {"grow_factor 0 means default", {.item_size = 16, .grow_factor = 0.0f}},
        {"grow_factor 1.01", {.item_size = 16, .grow_factor = 1.01f}},
        {"explicit sync none", {.item_size = 16, .sync = FM_SYNC_NONE}},
        {"linear", {.item_size = 16, .growth = FM_GROWTH_LINEAR}},
        {"fixed", {.item_size = 16, .growth = FM_GROWTH_FIXED}},
        {"max equals initial", {.item_size = 16, .initial_capacity = 100, .max_capacity = 100}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fm_pool_desc desc = counted(env, cases[i].desc);
        char why[128] = "x";
        assert_int_equal(fm_pool_desc_check(&desc, why, sizeof why), FM_OK);
        assert_string_equal(why, "");
        fm_pool *pool = fm_pool_create(&desc);
        if (!pool) print_error("case '%s' was rejected\n", cases[i].label);
        assert_non_null(pool);
        void *item = fm_pool_alloc(pool);
        assert_non_null(item);
        memset(item, 0x5A, desc.item_size);
        fm_pool_free(pool, item);
        destroy_clean(env, pool);
    }
    assert_int_equal(env->errors.count, 0);
}

/* fm_pool_desc_check: a NULL desc is reported like any NULL object; msg may
 * be NULL or short (cut, still terminated). */
static void test_pool_desc_check_reports_null_and_takes_any_message_buffer(void **state) {
    fm_test_env *env = *state;
    char why[8];
    assert_int_equal(fm_pool_desc_check(NULL, why, sizeof why), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
    fm_test_errors_reset(&env->errors);
    fm_pool_desc bad = {.item_size = 16, .grow_factor = 1.0f};
    assert_int_equal(fm_pool_desc_check(&bad, NULL, 0), FM_ERR_INVALID_ARG);
    assert_int_equal(fm_pool_desc_check(&bad, why, sizeof why), FM_ERR_INVALID_ARG);
    assert_int_equal(strlen(why), sizeof why - 1);
    assert_int_equal(fm_pool_desc_check(&bad, why, 0), FM_ERR_INVALID_ARG);
    assert_int_equal(fm_pool_desc_check(&(fm_pool_desc){.item_size = 16}, NULL, 0), FM_OK);
    assert_int_equal(env->errors.count, 0);
}

static void test_pool_create_accepts_the_largest_item_size(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = FM_POOL_MAX_ITEM_SIZE});
    unsigned char *a = fm_pool_alloc(pool);
    unsigned char *b = fm_pool_alloc(pool);
    assert_non_null(a);
    assert_non_null(b);
    memset(a, 0x11, FM_POOL_MAX_ITEM_SIZE);
    memset(b, 0x22, FM_POOL_MAX_ITEM_SIZE);
    for (size_t i = 0; i < FM_POOL_MAX_ITEM_SIZE; i += 4093) {
        assert_int_equal(a[i], 0x11);
        assert_int_equal(b[i], 0x22);
    }
    assert_int_equal(a[FM_POOL_MAX_ITEM_SIZE - 1], 0x11);
    assert_int_equal(b[FM_POOL_MAX_ITEM_SIZE - 1], 0x22);
    fm_pool_free(pool, a);
    fm_pool_free(pool, b);
    destroy_clean(env, pool);
}

static void test_pool_get_desc_resolves_defaults(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 24});
    fm_pool_desc d = fm_pool_get_desc(pool);
    assert_non_null(d.name);
    assert_string_equal(d.name, "pool");
    assert_int_equal(d.item_size, 24);
    assert_int_equal(d.item_align, FM_DEFAULT_ALIGN);
    assert_int_equal(d.item_align, 16);
    assert_true(d.grow_factor == 2.0f);
    assert_int_equal(d.growth, FM_GROWTH_GEOMETRIC);
    assert_int_equal(d.sync, FM_SYNC_NONE);
    assert_true(d.initial_capacity > 0);
    assert_true(d.initial_capacity <= stats_of(pool).capacity);
    fm_pool_destroy(pool);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_get_desc_keeps_given_values(void **state) {
    fm_test_env *env = *state;
    hook_log hooks = {0};
    fm_pool_desc given = counted(env, (fm_pool_desc){
                                          .name = "given",
                                          .item_size = 72,
                                          .item_align = 64,
                                          .initial_capacity = 100,
                                          .max_capacity = 5000,
                                          .growth = FM_GROWTH_LINEAR,
                                          .grow_step = 33,
                                          .prefault = true,
                                          .silent_destroy = true,
                                          .ctor = hook_ctor,
                                          .dtor = hook_dtor,
                                          .user = &hooks,
                                      });
    fm_pool *pool = fm_pool_create(&given);
    assert_non_null(pool);
    fm_pool_desc d = fm_pool_get_desc(pool);
    assert_string_equal(d.name, "given");
    assert_int_equal(d.item_size, 72);
    assert_int_equal(d.item_align, 64);
    assert_int_equal(d.initial_capacity, 100);
    assert_int_equal(d.max_capacity, 5000);
    assert_int_equal(d.growth, FM_GROWTH_LINEAR);
    assert_int_equal(d.grow_step, 33);
    assert_true(d.prefault);
    assert_true(d.silent_destroy);
    assert_ptr_equal(d.ctor, hook_ctor);
    assert_ptr_equal(d.dtor, hook_dtor);
    assert_ptr_equal(d.user, &hooks);
    assert_ptr_equal(d.allocator.alloc, given.allocator.alloc);
    assert_ptr_equal(d.allocator.free, given.allocator.free);
    assert_ptr_equal(d.allocator.user, given.allocator.user);

    fm_pool_desc geo = counted(env, (fm_pool_desc){.item_size = 8, .grow_factor = 1.5f});
    fm_pool *pool2 = fm_pool_create(&geo);
    assert_non_null(pool2);
    assert_true(fm_pool_get_desc(pool2).grow_factor == 1.5f);
    fm_pool_destroy(pool2);
    fm_pool_destroy(pool);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_keeps_its_own_copy_of_the_name(void **state) {
    fm_test_env *env = *state;
    char name[128];
    snprintf(name, sizeof name, "copied_name");
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = name, .item_size = 8});
    char long_name[101];
    memset(long_name, 'n', 100);
    long_name[100] = '\0';
    fm_pool *pool_long = create_counted(env, (fm_pool_desc){.name = long_name, .item_size = 8});

    memset(name, 'X', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    memset(long_name, 'Y', 100);

    assert_string_equal(fm_pool_name(pool), "copied_name");
    assert_string_equal(fm_pool_get_desc(pool).name, "copied_name");
    assert_string_equal(stats_of(pool).name, "copied_name");
    assert_ptr_not_equal(fm_pool_get_desc(pool).name, name);
    assert_int_equal(strlen(fm_pool_name(pool_long)), 100);
    assert_int_equal(strspn(fm_pool_name(pool_long), "n"), 100);

    fm_pool_destroy(pool_long);
    fm_pool_destroy(pool);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_name_is_the_desc_name_or_pool(void **state) {
    fm_test_env *env = *state;
    fm_pool *named = create_counted(env, (fm_pool_desc){.name = "particles", .item_size = 8});
    fm_pool *unnamed = create_counted(env, (fm_pool_desc){.item_size = 8});
    assert_string_equal(fm_pool_name(named), "particles");
    assert_string_equal(fm_pool_name(unnamed), "pool");
    fm_pool_destroy(named);
    fm_pool_destroy(unnamed);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ===================================================== alloc / free / hooks */

static void test_pool_alloc_and_free_round_trip_updates_counters(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 32});
    live_set live;
    live_init(&live, 32);
    for (int i = 0; i < 10; i++) live_alloc(&live, pool);
    fm_pool_stats s = stats_of(pool);
    assert_int_equal(s.live, 10);
    assert_int_equal(s.total_allocs, 10);
    assert_int_equal(s.peak_live, 10);
    for (int i = 0; i < 10; i++) assert_true(fm_pool_owns(pool, live.items[i]));
    live_verify_all(&live);
    for (int i = 0; i < 4; i++) live_release(&live, pool, 0);
    s = stats_of(pool);
    assert_int_equal(s.live, 6);
    assert_int_equal(s.total_frees, 4);
    assert_int_equal(s.peak_live, 10);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

/* The freed item that waits for the next alloc (the current chunk's, or
 * another chunk's parked there, see pool/core.c) counts as free in every
 * figure, and the alloc that takes it back does not raise the peak: live,
 * total_frees and peak_live after each step, over three chunks, under every
 * policy (peak_live exactly under NONE and MUTEX). */
static void test_pool_counters_see_the_waiting_freed_item_as_free(void **state) {
    fm_test_env *env = *state;
    const fm_sync policies[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                FM_SYNC_LOCKFREE};
    for (size_t pi = 0; pi < sizeof policies / sizeof policies[0]; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "waiting", .item_size = 64,
                                                           .chunk_bytes = 4096,
                                                           .sync = policies[pi]});
        size_t per = (size_t)stats_of(pool).items_per_chunk;
        size_t n = 2 * per + 5; /* two chunks full, the third current */
        void **items = malloc((n + 1) * sizeof *items);
        assert_non_null(items);
        for (size_t i = 0; i < n; i++) assert_non_null(items[i] = fm_pool_alloc(pool));
        uintptr_t mask = ~(uintptr_t)(stats_of(pool).chunk_bytes - 1);
        assert_true(((uintptr_t)items[0] & mask) != ((uintptr_t)items[per] & mask));
        uint64_t allocs = n, frees = 0;
        /* The cached policies' peak counts the slots their caches hold too
         * (fm_pool_stats). */
        bool exact_peak = policies[pi] == FM_SYNC_NONE || policies[pi] == FM_SYNC_MUTEX;
#define EXPECT(live_, peak_)                                                     \
    do {                                                                         \
        fm_pool_stats s_ = stats_of(pool);                                       \
        assert_int_equal(s_.live, (live_));                                      \
        if (exact_peak) assert_int_equal(s_.peak_live, (peak_));                 \
        else assert_true(s_.peak_live >= s_.live);                               \
        assert_int_equal(s_.total_allocs, allocs);                               \
        assert_int_equal(s_.total_frees, frees);                                 \
        assert_int_equal(fm_pool_check(pool), FM_OK);                            \
    } while (0)
        EXPECT(n, n);
        /* A first chunk's item waits, then goes back out. */
        fm_pool_free(pool, items[3]), frees++;
        EXPECT(n - 1, n);
        assert_non_null(items[3] = fm_pool_alloc(pool)), allocs++;
        EXPECT(n, n);
        /* The current chunk's. */
        fm_pool_free(pool, items[n - 1]), frees++;
        EXPECT(n - 1, n);
        assert_non_null(items[n - 1] = fm_pool_alloc(pool)), allocs++;
        EXPECT(n, n);
        /* Two waiting in turn (the first settles onto its chunk), then three
         * allocations: one past the peak. */
        fm_pool_free(pool, items[per + 1]), frees++;
        fm_pool_free(pool, items[2]), frees++;
        EXPECT(n - 2, n);
        fm_pool_free(pool, items[n - 2]), frees++;
        EXPECT(n - 3, n);
        for (size_t k = 0; k < 4; k++) assert_non_null(fm_pool_alloc(pool)), allocs++;
        EXPECT(n + 1, n + 1);
#undef EXPECT
        free(items);
        fm_pool_reset(pool); /* every item at once */
        fm_test_pool_destroy_quiet(env, pool);
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

static void test_pool_alloc_function_and_site_forms_all_work(void **state) {
    fm_test_env *env = *state;
    hook_log hooks = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){
                                            .item_size = 16,
                                            .ctor = hook_ctor,
                                            .dtor = hook_dtor,
                                            .user = &hooks,
                                        });
    void *(*alloc_fn)(fm_pool *) = (fm_pool_alloc);
    void *(*new_fn)(fm_pool *) = (fm_pool_new);
    void *a = alloc_fn(pool);
    void *b = (fm_pool_alloc)(pool);
    void *c = fm_pool_alloc_at(pool, "site.c", 10);
    assert_int_equal(hooks.ctor_calls, 0);
    void *d = new_fn(pool);
    void *e = fm_pool_new_at(pool, "site.c", 20);
    assert_int_equal(hooks.ctor_calls, 2);
    assert_ptr_equal(hooks.last_ctor_item, e);
    void *items[] = {a, b, c, d, e};
    for (int i = 0; i < 5; i++) {
        assert_non_null(items[i]);
        assert_true(fm_pool_owns(pool, items[i]));
    }
    fm_test_assert_no_overlap(items, 5, 16);
    assert_int_equal(stats_of(pool).live, 5);
    for (int i = 0; i < 5; i++) fm_pool_free(pool, items[i]);
    assert_int_equal(hooks.dtor_calls, 0);
    destroy_clean(env, pool);
}

static void test_pool_new_runs_ctor_and_delete_runs_dtor_with_user(void **state) {
    fm_test_env *env = *state;
    hook_log hooks = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){
                                            .item_size = 24,
                                            .ctor = hook_ctor,
                                            .dtor = hook_dtor,
                                            .user = &hooks,
                                        });
    uint32_t *a = fm_pool_new(pool);
    assert_non_null(a);
    assert_int_equal(hooks.ctor_calls, 1);
    assert_ptr_equal(hooks.last_ctor_item, a);
    assert_ptr_equal(hooks.ctor_user, &hooks);
    assert_int_equal(*a, 0xC7C7C7C7u);

    uint32_t *b = fm_pool_alloc(pool);
    assert_non_null(b);
    assert_int_equal(hooks.ctor_calls, 1);

    fm_pool_delete(pool, a);
    assert_int_equal(hooks.dtor_calls, 1);
    assert_ptr_equal(hooks.last_dtor_item, a);
    assert_ptr_equal(hooks.dtor_user, &hooks);
    assert_false(fm_pool_owns(pool, a));

    fm_pool_free(pool, b);
    assert_int_equal(hooks.dtor_calls, 1);
    fm_pool_stats s = stats_of(pool);
    assert_int_equal(s.total_allocs, 2);
    assert_int_equal(s.total_frees, 2);
    assert_int_equal(s.live, 0);
    destroy_clean(env, pool);
    assert_int_equal(hooks.dtor_calls, 1);
}

static void test_pool_new_and_delete_without_hooks_work(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 24});
    void *a = fm_pool_new(pool);
    assert_non_null(a);
    assert_true(fm_pool_owns(pool, a));
    fm_pool_delete(pool, a);
    assert_false(fm_pool_owns(pool, a));
    destroy_clean(env, pool);
}

static void test_pool_free_of_null_is_a_silent_no_op(void **state) {
    fm_test_env *env = *state;
    hook_log hooks = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){
                                            .item_size = 24,
                                            .dtor = hook_dtor,
                                            .user = &hooks,
                                        });
    void *keep = fm_pool_alloc(pool);
    fm_pool_stats before = stats_of(pool);
    fm_pool_free(pool, NULL);
    fm_pool_delete(pool, NULL);
    fm_pool_stats after = stats_of(pool);
    assert_stats_same(&before, &after, 0);
    assert_int_equal(hooks.dtor_calls, 0);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
    fm_pool_free(pool, keep);
    destroy_clean(env, pool);
}

/* ================================================================== misuse */

static void test_pool_double_free_is_reported_and_state_kept(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    for (int i = 0; i < 4; i++) expect_bad_free(env, m.pool, m.freed[i], FM_ERR_DOUBLE_FREE);
    /* The same pointer again and again: still reported, still nothing changes. */
    expect_bad_free(env, m.pool, m.freed[0], FM_ERR_DOUBLE_FREE);
    expect_bad_free(env, m.pool, m.freed[0], FM_ERR_DOUBLE_FREE);
    for (int i = 0; i < 4; i++) assert_false(fm_pool_owns(m.pool, m.freed[i]));
    live_verify_all(&m.live);
    misuse_end(env, &m);
}

static void test_pool_double_free_right_after_free_is_reported(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "twice", .item_size = 16});
    void *a = fm_pool_alloc(pool);
    void *b = fm_pool_alloc(pool);
    fm_pool_free(pool, a);
    expect_bad_free(env, pool, a, FM_ERR_DOUBLE_FREE);
    /* The free list still hands out distinct items. */
    void *c = fm_pool_alloc(pool);
    void *d = fm_pool_alloc(pool);
    assert_ptr_not_equal(c, d);
    assert_ptr_not_equal(c, b);
    assert_ptr_not_equal(d, b);
    fm_pool_free(pool, b);
    fm_pool_free(pool, c);
    fm_pool_free(pool, d);
    destroy_clean(env, pool);
}

/* fm_pool_free_n over items of several chunks in shuffled order, with NULLs
 * and bad entries mixed in, under every policy: the same outcome as single
 * frees (each bad entry reported with its code, the rest freed), the array
 * untouched, the pool consistent and serving every slot again. */
static void test_pool_free_n_frees_a_batch_and_reports_each_bad_entry(void **state) {
    fm_test_env *env = *state;
    const fm_sync policies[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                FM_SYNC_LOCKFREE};
    for (size_t pi = 0; pi < sizeof policies / sizeof policies[0]; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "batch", .item_size = 48, .sync = policies[pi]});
        uint32_t n = (uint32_t)stats_of(pool).items_per_chunk * 3 + 7;
        void **items = calloc(n + 5, sizeof *items);
        assert_non_null(items);
        for (uint32_t i = 0; i < n; i++) {
            items[i] = fm_pool_alloc(pool);
            assert_non_null(items[i]);
        }
        fm_test_shuffle(items, n, 12345);
        long long on_stack[4] = {0};
        items[n] = NULL;
        items[n + 1] = on_stack;                 /* foreign */
        items[n + 2] = items[5];                 /* freed earlier in the batch */
        items[n + 3] = byte_offset(items[9], 8); /* interior: reported, item 9 freed */
        items[n + 4] = NULL;
        void *spared = items[n / 2];
        items[n / 2] = NULL;
        void **copy = malloc((n + 5) * sizeof *copy);
        assert_non_null(copy);
        memcpy(copy, items, (n + 5) * sizeof *copy);
        fm_pool_stats before = stats_of(pool);
        int errors_before = env->errors.count;

        fm_pool_free_n(pool, items, n + 5);

        assert_memory_equal(copy, items, (n + 5) * sizeof *copy);
        assert_int_equal(env->errors.count - errors_before, 3);
        assert_int_equal(env->errors.last, FM_ERR_INTERIOR_POINTER);
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.live, 1);
        assert_int_equal(after.total_frees - before.total_frees, n - 1);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        assert_true(fm_pool_owns(pool, spared));
        for (uint32_t i = 0; i < n; i++) assert_false(items[i] && fm_pool_owns(pool, items[i]));
        /* Every freed slot is served again, each once. */
        for (uint32_t i = 0; i < n - 1; i++) {
            copy[i] = fm_pool_alloc(pool);
            assert_non_null(copy[i]);
        }
        assert_int_equal(stats_of(pool).capacity, before.capacity);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_free_n(pool, copy, n - 1);
        assert_int_equal(env->errors.count - errors_before, 3);
        assert_int_equal(stats_of(pool).live, 1);
        fm_pool_trim(pool);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_free_n(pool, &spared, 1);
        free(copy);
        free(items);
        destroy_clean(env, pool);
    }
}

static void test_pool_free_of_stack_pointer_is_reported_as_foreign(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    long long on_stack[8] = {0};
    expect_bad_free(env, m.pool, on_stack, FM_ERR_FOREIGN_POINTER);
    expect_bad_free(env, m.pool, &on_stack[3], FM_ERR_FOREIGN_POINTER);
    misuse_end(env, &m);
}

static void test_pool_free_of_malloc_block_is_reported_as_foreign(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    void *block = malloc(48);
    assert_non_null(block);
    void *big = malloc(1 << 20);
    assert_non_null(big);
    expect_bad_free(env, m.pool, block, FM_ERR_FOREIGN_POINTER);
    expect_bad_free(env, m.pool, big, FM_ERR_FOREIGN_POINTER);
    expect_bad_free(env, m.pool, byte_offset(big, 1 << 19), FM_ERR_FOREIGN_POINTER);
    free(big);
    free(block);
    misuse_end(env, &m);
}

static void test_pool_free_of_another_pools_item_is_reported_as_foreign(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    fm_pool *other = create_counted(env, (fm_pool_desc){.name = "other", .item_size = 48,
                                                        .initial_capacity = 64});
    void *theirs = fm_pool_alloc(other);
    assert_non_null(theirs);
    fm_test_fill(theirs, 48, 777);
    fm_pool_stats other_before = stats_of(other);

    expect_bad_free(env, m.pool, theirs, FM_ERR_FOREIGN_POINTER);

    assert_true(fm_pool_owns(other, theirs));
    assert_false(fm_pool_owns(m.pool, theirs));
    assert_true(fm_test_check_fill(theirs, 48, 777));
    fm_pool_stats other_after = stats_of(other);
    assert_stats_same(&other_before, &other_after, 0);
    fm_pool_free(other, theirs);
    assert_int_equal(fm_pool_check(other), FM_OK);
    fm_pool_destroy(other);
    misuse_end(env, &m);
}

static void test_pool_free_of_far_away_pointer_is_reported_as_foreign(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    expect_bad_free(env, m.pool, far_from(m.live.items[0]), FM_ERR_FOREIGN_POINTER);
    expect_bad_free(env, m.pool, (void *)(uintptr_t)0x1000, FM_ERR_FOREIGN_POINTER);
    expect_bad_free(env, m.pool, (void *)(UINTPTR_MAX & ~(uintptr_t)0xFFF),
                    FM_ERR_FOREIGN_POINTER);
    misuse_end(env, &m);
}

/* The memory map: each chunk's live items, summing to the pool's live
 * count, the parked slot and the current chunk included; max truncates. */
static void test_pool_chunk_occupancy_counts_each_chunks_live_items(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "map", .item_size = 40});
    uint32_t per = (uint32_t)stats_of(pool).items_per_chunk;
    uint32_t n = per * 2 + per / 2; /* chunks 0 and 1 full, 2 half */
    void **items = calloc(n, sizeof *items);
    assert_non_null(items);
    for (uint32_t i = 0; i < n; i++) assert_non_null(items[i] = fm_pool_alloc(pool));
    for (uint32_t i = 0; i < per / 4; i++) (fm_pool_free)(pool, items[per + i]); /* chunk 1 */
    (fm_pool_free)(pool, items[3]); /* chunk 0: parked */
    uint32_t chunks = (uint32_t)stats_of(pool).chunk_count; /* geometric growth: some empty */
    assert_true(chunks >= 3 && chunks <= 8);
    uint32_t live[8] = {0};
    assert_int_equal(fm_pool_chunk_occupancy(pool, live, 8), chunks);
    assert_int_equal(fm_pool_chunk_occupancy(pool, NULL, 0), chunks);
    uint64_t sum = 0;
    for (uint32_t c = 0; c < chunks; c++) {
        assert_true(live[c] <= per);
        sum += live[c];
    }
    assert_int_equal(sum, stats_of(pool).live);
    /* which chunk is which follows the chunk table: the counts, sorted */
    uint32_t want[8] = {per - 1, per - per / 4, per / 2}, got[8];
    memcpy(got, live, sizeof got);
    for (uint32_t i = 0; i < chunks; i++)
        for (uint32_t j = i + 1; j < chunks; j++) {
            if (got[j] < got[i]) { uint32_t x = got[i]; got[i] = got[j]; got[j] = x; }
            if (want[j] < want[i]) { uint32_t x = want[i]; want[i] = want[j]; want[j] = x; }
        }
    assert_memory_equal(got, want, chunks * sizeof *got);
    uint32_t one[2] = {0, 12345};
    assert_int_equal(fm_pool_chunk_occupancy(pool, one, 1), chunks);
    assert_int_equal(one[0], live[0]);
    assert_int_equal(one[1], 12345); /* not written past max */
    for (uint32_t i = 0; i < n; i++)
        if (i != 3 && (i < per || i >= per + per / 4)) (fm_pool_free)(pool, items[i]);
    assert_int_equal(fm_pool_chunk_occupancy(pool, live, 8), chunks);
    for (uint32_t c = 0; c < chunks; c++) assert_int_equal(live[c], 0);
    free(items);
    fm_pool_destroy(pool);
}

/* Random frees with 10,000 16-byte items live, over several chunks: each
 * free, of an item of the current chunk or of another one, waits as the next
 * slot, and the alloc after it returns that item (the library's leaf free
 * takes both kinds the same way, see pool/core.c). Both kinds occur; the
 * counts stay exact and the pool consistent. */
static void test_pool_random_frees_over_the_current_chunk_and_others_are_served_next(void **state) {
    fm_test_env *env = *state;
    enum { LIVE = 10000, ROUNDS = 20000 };
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "random", .item_size = 16});
    void **items = malloc(LIVE * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < LIVE; i++) assert_non_null(items[i] = fm_pool_alloc(pool));
    fm_pool_stats s = stats_of(pool);
    assert_true(s.chunk_count >= 3);
    uintptr_t mask = ~(uintptr_t)(s.chunk_bytes - 1);
    uintptr_t current = (uintptr_t)items[LIVE - 1] & mask;
    uint64_t x = 88172645463325252ull;
    size_t in_current = 0;
    for (size_t r = 0; r < ROUNDS; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = (size_t)(x % LIVE);
        void *freed = items[j];
        in_current += ((uintptr_t)freed & mask) == current;
        fm_pool_free(pool, freed);
        items[j] = fm_pool_alloc(pool);
        assert_ptr_equal(items[j], freed);
    }
    assert_true(in_current > 0 && in_current < ROUNDS);
    s = stats_of(pool);
    assert_int_equal(s.live, LIVE);
    assert_int_equal(s.total_frees, ROUNDS);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    assert_int_equal(env->errors.count, 0);
    for (size_t i = 0; i < LIVE; i++) fm_pool_free(pool, items[i]);
    free(items);
    destroy_clean(env, pool);
}

/* Frees in a row of the current chunk's items: each waits as the next slot
 * and the one before it goes onto the chunk's stack, so the allocs after
 * them return them last first. A double free among them is reported. */
static void test_pool_frees_in_a_row_in_the_current_chunk_come_back_last_first(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "row", .item_size = 32});
    enum { N = 50, FIRST = 10, LAST = 40 };
    void *items[N];
    for (size_t i = 0; i < N; i++) assert_non_null(items[i] = fm_pool_alloc(pool));
    for (size_t i = FIRST; i < LAST; i++) fm_pool_free(pool, items[i]);
    expect_bad_free(env, pool, items[LAST - 1], FM_ERR_DOUBLE_FREE);
    expect_bad_free(env, pool, items[FIRST], FM_ERR_DOUBLE_FREE);
    assert_int_equal(stats_of(pool).live, N - (LAST - FIRST));
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (size_t i = LAST; i-- > FIRST;) assert_ptr_equal(fm_pool_alloc(pool), items[i]);
    assert_int_equal(stats_of(pool).live, N);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (size_t i = 0; i < N; i++) fm_pool_free(pool, items[i]);
    destroy_clean(env, pool);
}

/* The item the last alloc took back (a slot parked outside the current
 * chunk), then freed by a batch, its chunk emptied and trimmed: a free of it
 * is reported as foreign and reads nothing of the released chunk (the
 * trim's settle drops the inline free's shortcut for the item the last alloc
 * took, see detail/pool.h). */
static void
test_pool_free_of_the_last_allocs_item_after_a_batch_and_a_trim_is_reported(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "gone", .item_size = 64});
    size_t per = (size_t)stats_of(pool).items_per_chunk, n = per * 2 + 1;
    void **items = malloc(n * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < n; i++) assert_non_null(items[i] = fm_pool_alloc(pool));
    /* The first chunk keeps items[0] only; it waits as the next slot, and
     * the alloc takes it back. */
    fm_pool_free_n(pool, items + 1, per - 1);
    fm_pool_free(pool, items[0]);
    void *y = fm_pool_alloc(pool);
    assert_ptr_equal(y, items[0]);
    fm_pool_free_n(pool, &y, 1);
    assert_true(fm_pool_trim(pool) > 0);
    assert_false(fm_pool_owns(pool, y));
    expect_bad_free(env, pool, y, FM_ERR_FOREIGN_POINTER);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (size_t i = per; i < n; i++) fm_pool_free(pool, items[i]);
    free(items);
    destroy_clean(env, pool);
}

/* A single free outside the current chunk parks the slot (see pool.c) so
 * the next alloc takes it back: LIFO across chunks. Misuse of a parked
 * item is reported, its handle is stale, the counts stay exact and the pool
 * consistent whichever call comes next: an alloc, a free in the current
 * chunk, another free outside it, a batch free, a trim, a chunk switch. */
static void test_pool_free_outside_the_current_chunk_is_served_next(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "park", .item_size = 40});
    uint32_t per = (uint32_t)stats_of(pool).items_per_chunk;
    uint32_t n = per * 3 + per / 2; /* current chunk: the fourth */
    void **items = calloc(n, sizeof *items);
    assert_non_null(items);
    for (uint32_t i = 0; i < n; i++) assert_non_null(items[i] = fm_pool_alloc(pool));
    void *old = items[5]; /* in the first chunk */
    fm_handle h = fm_pool_handle(pool, old);

    (fm_pool_free)(pool, old); /* the library's free: parked */
    assert_int_equal(fm_pool_check(pool), FM_OK);
    assert_int_equal(stats_of(pool).live, n - 1);
    assert_false(fm_pool_owns(pool, old));
    assert_null((fm_pool_resolve)(pool, h));
    expect_bad_free(env, pool, old, FM_ERR_DOUBLE_FREE);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    void *again = fm_pool_alloc(pool); /* inline in optimised builds */
    assert_ptr_equal(again, old);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    items[5] = again;

    /* Parked, then each kind of next call (then an alloc). */
    for (int next = 0; next < 5; next++) {
        uint32_t j = 7 + (uint32_t)next * 3 + per * (uint32_t)(next % 3); /* chunks 0..2 */
        (fm_pool_free)(pool, items[j]);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        switch (next) {
        case 0: /* a free in the current chunk files the parked slot */
            fm_pool_free(pool, items[n - 1]);
            items[n - 1] = fm_pool_alloc(pool);
            break;
        case 1: /* another free outside: the first goes to its chunk */
            (fm_pool_free)(pool, items[j + 1]);
            assert_ptr_equal(fm_pool_alloc(pool), items[j + 1]);
            break;
        case 2: /* a batch */
            fm_pool_free_n(pool, &items[j + 1], 2);
            items[j + 1] = fm_pool_alloc(pool);
            items[j + 2] = fm_pool_alloc(pool);
            assert_non_null(items[j + 1]);
            assert_non_null(items[j + 2]);
            break;
        case 3: /* trim settles it (the chunk is not empty: nothing released) */
            fm_pool_trim(pool);
            break;
        default: /* nothing: the next alloc takes it (an alloc never switches
                    chunks while a slot is parked) */
            break;
        }
        assert_int_equal(fm_pool_check(pool), FM_OK);
        void *was = items[j];
        items[j] = fm_pool_alloc(pool);
        assert_non_null(items[j]);
        if (next == 4) assert_ptr_equal(items[j], was);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        assert_int_equal(stats_of(pool).live, n);
    }
    /* Every item is still distinct and owned. */
    for (uint32_t i = 0; i < n; i++) {
        assert_true(fm_pool_owns(pool, items[i]));
        for (uint32_t k = i + 1; k < n && k < i + 64; k++) assert_ptr_not_equal(items[i], items[k]);
    }
    /* Emptying a whole chunk through single frees: the last one parked, then
     * trim gives the chunk back. */
    uint64_t chunks = stats_of(pool).chunk_count;
    for (uint32_t i = 0; i < per; i++) (fm_pool_free)(pool, items[per + i]);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    assert_true(fm_pool_trim(pool) > 0);
    assert_int_equal(stats_of(pool).chunk_count, chunks - 1);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (uint32_t i = 0; i < n; i++)
        if (i < per || i >= 2 * per) fm_pool_free(pool, items[i]);
    free(items);
    assert_int_equal(env->errors.count, 1); /* the double free above */
    destroy_clean(env, pool);
}

/* A bogus pointer below one chunk size (a small integer or an offset read
 * from uninitialised memory) that sits where a live item would in a chunk at
 * address 0: nothing may take address 0 for a chunk the pool knows. */
static void test_pool_free_of_pointer_near_null_is_reported_as_foreign(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    fm_pool_stats s = stats_of(m.pool);
    for (int i = 0; i < 3; i++) {
        uintptr_t off = (uintptr_t)m.live.items[i] & (uintptr_t)(s.chunk_bytes - 1);
        void *bogus = (void *)off;
        expect_bad_free(env, m.pool, bogus, FM_ERR_FOREIGN_POINTER);
        assert_false(fm_pool_owns(m.pool, bogus));
        assert_true(fm_handle_is_null(fm_pool_handle(m.pool, bogus)));
    }
    misuse_end(env, &m);
}

/* Frees outside the current chunk find their chunk by chunk number mod 64,
 * then the table: with well over 64 chunks, slots are shared; after a trim,
 * pointers into the released chunks are foreign (their slots were cleared),
 * and chunks grown again, at the same addresses or not, are found. */
static void test_pool_chunk_lookup_with_many_chunks_trim_and_regrowth(void **state) {
    fm_test_env *env = *state;
    const fm_sync policies[] = {FM_SYNC_NONE, FM_SYNC_MUTEX};
    for (size_t pi = 0; pi < 2; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "many_chunks", .item_size = 1024, .sync = policies[pi]});
        uint32_t per = (uint32_t)stats_of(pool).items_per_chunk;
        uint32_t n = per * 100;
        void **items = malloc(n * sizeof *items);
        assert_non_null(items);
        for (int round = 0; round < 2; round++) {
            for (uint32_t i = 0; i < n; i++) {
                items[i] = fm_pool_alloc(pool);
                assert_non_null(items[i]);
                *(uint32_t *)items[i] = i;
            }
            assert_true(stats_of(pool).chunk_count >= 100);
            fm_test_shuffle(items, n, 777u + 2u * (uint32_t)round);
            /* Half one by one (each chunk found anew), half in one batch. */
            for (uint32_t i = 0; i < n / 2; i++) fm_pool_free(pool, items[i]);
            assert_int_equal(stats_of(pool).live, n - n / 2);
            assert_int_equal(fm_pool_check(pool), FM_OK);
            fm_pool_free_n(pool, items + n / 2, n - n / 2);
            assert_int_equal(env->errors.count, 0);
            assert_int_equal(stats_of(pool).live, 0);
            assert_int_equal(fm_pool_check(pool), FM_OK);
            assert_true(fm_pool_trim(pool) > 0);
            assert_true(stats_of(pool).chunk_count < 100);
            /* Items of released chunks are foreign now: one by one and in a batch. */
            uint32_t foreign = 0;
            for (uint32_t i = 0; i < n && foreign < 8; i++) {
                if (fm_pool_owns(pool, items[i])) continue;
                expect_bad_free(env, pool, items[i], FM_ERR_FOREIGN_POINTER);
                fm_pool_free_n(pool, &items[i], 1);
                assert_int_equal(env->errors.last, FM_ERR_FOREIGN_POINTER);
                foreign++;
            }
            assert_int_equal(foreign, 8);
            /* Records of released chunks serve new ones, maybe elsewhere:
             * the old addresses that are not chunks again stay foreign. */
            assert_true(fm_pool_reserve(pool, (uint32_t)stats_of(pool).capacity + 20 * per));
            foreign = 0;
            for (uint32_t i = 0; i < n && foreign < 8; i++) {
                if (fm_pool_owns(pool, items[i])) continue;
                expect_bad_free(env, pool, items[i], FM_ERR_FOREIGN_POINTER);
                foreign++;
            }
            assert_int_equal(foreign, 8);
            assert_int_equal(fm_pool_check(pool), FM_OK);
            env->errors.count = 0;
        }
        free(items);
        destroy_clean(env, pool);
    }
}

static void test_pool_free_of_interior_pointer_is_reported(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    uint64_t stride = stats_of(m.pool).stride;
    void *item = m.live.items[3];
    expect_bad_free(env, m.pool, byte_offset(item, 1), FM_ERR_INTERIOR_POINTER);
    expect_bad_free(env, m.pool, byte_offset(item, stride / 2), FM_ERR_INTERIOR_POINTER);
    expect_bad_free(env, m.pool, byte_offset(item, 47), FM_ERR_INTERIOR_POINTER);
    assert_true(fm_pool_owns(m.pool, item));
    live_verify_all(&m.live);
    misuse_end(env, &m);
}

static void test_pool_delete_of_bad_pointers_never_runs_the_dtor(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    long long on_stack[8] = {0};
    void *item = m.live.items[1];
    expect_bad_release(env, m.pool, m.freed[1], FM_ERR_DOUBLE_FREE, true, &m.hooks);
    expect_bad_release(env, m.pool, on_stack, FM_ERR_FOREIGN_POINTER, true, &m.hooks);
    expect_bad_release(env, m.pool, far_from(item), FM_ERR_FOREIGN_POINTER, true, &m.hooks);
    expect_bad_release(env, m.pool, byte_offset(item, 1), FM_ERR_INTERIOR_POINTER, true,
                       &m.hooks);
    assert_int_equal(m.hooks.dtor_calls, 0);
    misuse_end(env, &m);
}

static void test_pool_free_of_any_non_item_address_in_a_chunk_is_reported(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 24);
    fm_pool_stats s = stats_of(m.pool);
    uintptr_t chunk = (uintptr_t)m.live.items[0] & ~(uintptr_t)(s.chunk_bytes - 1);
    size_t middle_step = s.chunk_bytes / 16384 > 1 ? s.chunk_bytes / 16384 : 1;
    uint64_t probes = 0;
    for (size_t off = 0; off < s.chunk_bytes;
         off += (off < 8192 || off + 8192 >= s.chunk_bytes) ? 1 : middle_step) {
        void *p = (void *)(chunk + off);
        if (live_contains(&m.live, p)) continue;
        assert_false(fm_pool_owns(m.pool, p));
        int errors_before = env->errors.count;
        fm_clear_error();
        fm_pool_free(m.pool, p);
        fm_error err = fm_last_error();
        if (err != FM_ERR_DOUBLE_FREE && err != FM_ERR_FOREIGN_POINTER &&
            err != FM_ERR_INTERIOR_POINTER) {
            print_error("free of chunk offset %zu gave %s\n", off, fm_error_name(err));
            fail();
        }
        /* Exact codes where the answer is known. */
        for (size_t i = 0; i < m.live.count; i++) {
            uintptr_t start = (uintptr_t)m.live.items[i];
            if ((uintptr_t)p > start && (uintptr_t)p < start + 24) {
                assert_int_equal(err, FM_ERR_INTERIOR_POINTER);
            }
        }
        for (int i = 0; i < 4; i++) {
            if (p == m.freed[i]) assert_int_equal(err, FM_ERR_DOUBLE_FREE);
        }
        assert_int_equal(env->errors.count, errors_before + 1);
        probes++;
    }
    fm_pool_stats after = stats_of(m.pool);
    assert_int_equal(after.misuse_count, probes);
    assert_int_equal(after.live, 8);
    assert_int_equal(after.total_frees, s.total_frees);
    live_verify_all(&m.live);
    assert_int_equal(fm_pool_check(m.pool), FM_OK);
    misuse_end(env, &m);
}

/* ================================================================== owns */

static void test_pool_owns_only_live_items_and_reports_nothing(void **state) {
    fm_test_env *env = *state;
    misuse_case m;
    misuse_begin(env, &m, 48);
    fm_pool *other = create_counted(env, (fm_pool_desc){.item_size = 48});
    void *theirs = fm_pool_alloc(other);
    void *block = malloc(48);
    long long on_stack[4] = {0};
    uint64_t stride = stats_of(m.pool).stride;
    fm_pool_stats before = stats_of(m.pool);
    fm_clear_error();

    for (size_t i = 0; i < m.live.count; i++) {
        assert_true(fm_pool_owns(m.pool, m.live.items[i]));
        assert_false(fm_pool_owns(m.pool, byte_offset(m.live.items[i], 1)));
        assert_false(fm_pool_owns(m.pool, byte_offset(m.live.items[i], stride / 2)));
    }
    for (int i = 0; i < 4; i++) assert_false(fm_pool_owns(m.pool, m.freed[i]));
    assert_false(fm_pool_owns(m.pool, NULL));
    assert_false(fm_pool_owns(m.pool, theirs));
    assert_false(fm_pool_owns(m.pool, block));
    assert_false(fm_pool_owns(m.pool, on_stack));
    assert_false(fm_pool_owns(m.pool, far_from(m.live.items[0])));
    assert_false(fm_pool_owns(m.pool, (void *)(uintptr_t)0x1000));
    assert_true(fm_pool_owns(other, theirs));

    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
    fm_pool_stats after = stats_of(m.pool);
    assert_stats_same(&before, &after, 0);

    free(block);
    fm_pool_free(other, theirs);
    fm_pool_destroy(other);
    misuse_end(env, &m);
}

/* ================================================================= foreach */

typedef struct visit_log {
    fm_pool *pool;
    void **seen;
    size_t count;
    size_t cap;
    bool free_each;
    bool free_odd;
    void *user_check;
} visit_log;

static void visit_record(void *item, void *user) {
    visit_log *v = user;
    if (v->count < v->cap) v->seen[v->count] = item;
    v->count++;
    if (v->free_each || (v->free_odd && (v->count & 1))) fm_pool_free(v->pool, item);
}

/* Every live item seen exactly once, nothing else. */
static void assert_visited_exactly(visit_log *v, const live_set *live) {
    assert_int_equal(v->count, live->count);
    if (live->count == 0) return;
    void **expected = malloc((live->count + 1) * sizeof *expected);
    assert_non_null(expected);
    memcpy(expected, live->items, live->count * sizeof *expected);
    qsort(expected, live->count, sizeof *expected, fm_test_cmp_ptr);
    qsort(v->seen, v->count, sizeof *v->seen, fm_test_cmp_ptr);
    for (size_t i = 0; i < live->count; i++) assert_ptr_equal(v->seen[i], expected[i]);
    free(expected);
}

static void test_pool_foreach_visits_every_live_item_exactly_once(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 40});
    live_set live;
    live_init(&live, 40);
    uint64_t cap = stats_of(pool).capacity;
    for (uint64_t i = 0; i < cap * 3 + 5; i++) live_alloc(&live, pool);
    for (size_t i = 0; i < live.count; i += 3) live_release(&live, pool, i);

    visit_log v = {.pool = pool, .cap = live.count + 16};
    v.seen = calloc(v.cap, sizeof *v.seen);
    fm_pool_foreach(pool, visit_record, &v);
    assert_visited_exactly(&v, &live);
    live_verify_all(&live);
    free(v.seen);

    /* Empty pool: no visit. */
    live_release_all(&live, pool);
    visit_log none = {.pool = pool};
    fm_pool_foreach(pool, visit_record, &none);
    assert_int_equal(none.count, 0);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_foreach_callback_may_free_the_item_it_is_given(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 40});
    live_set live;
    live_init(&live, 40);
    uint64_t cap = stats_of(pool).capacity;
    for (uint64_t i = 0; i < cap * 2 + 7; i++) live_alloc(&live, pool);
    size_t total = live.count;

    visit_log v = {.pool = pool, .cap = total, .free_odd = true};
    v.seen = calloc(v.cap, sizeof *v.seen);
    fm_pool_foreach(pool, visit_record, &v);
    assert_visited_exactly(&v, &live);
    assert_int_equal(stats_of(pool).live, total / 2);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    /* The freed ones are gone, the rest are intact. */
    size_t still = 0;
    for (size_t i = live.count; i-- > 0;) {
        if (fm_pool_owns(pool, live.items[i])) {
            live_verify_one(&live, i);
            still++;
        } else {
            live.count--;
            live.items[i] = live.items[live.count];
            live.seeds[i] = live.seeds[live.count];
        }
    }
    assert_int_equal(still, total / 2);
    free(v.seen);

    visit_log all = {.pool = pool, .cap = live.count, .free_each = true};
    all.seen = calloc(all.cap + 1, sizeof *all.seen);
    fm_pool_foreach(pool, visit_record, &all);
    assert_int_equal(all.count, still);
    assert_int_equal(stats_of(pool).live, 0);
    free(all.seen);
    live_deinit(&live);
    destroy_clean(env, pool);
}

/* ================================================================= growth */

/* Allocates until the pool has just grown once more; returns the capacity
 * before that growth. */
static uint64_t fill_until_growth(fm_pool *pool, live_set *live) {
    fm_pool_stats s = stats_of(pool);
    while (stats_of(pool).live < s.capacity) live_alloc(live, pool);
    assert_int_equal(stats_of(pool).grow_events, s.grow_events);
    live_alloc(live, pool);
    assert_int_equal(stats_of(pool).grow_events, s.grow_events + 1);
    return s.capacity;
}

static void check_geometric_growth(fm_test_env *env, float factor_given, double factor) {
    fm_pool *pool = create_counted(env, (fm_pool_desc){
                                            .item_size = 32,
                                            .grow_factor = factor_given,
                                        });
    live_set live;
    live_init(&live, 32);
    uint64_t ipc = stats_of(pool).items_per_chunk;
    for (int g = 1; g <= 5; g++) {
        uint64_t old_cap = fill_until_growth(pool, &live);
        fm_pool_stats s = stats_of(pool);
        if ((double)s.capacity < (double)old_cap * factor ||
            (double)s.capacity > (double)old_cap * factor + (double)ipc) {
            print_error("factor %.2f: capacity %llu -> %llu (items per chunk %llu)\n", factor,
                        (unsigned long long)old_cap, (unsigned long long)s.capacity,
                        (unsigned long long)ipc);
            fail();
        }
        assert_int_equal(s.grow_events, (uint64_t)g);
        assert_true(s.grow_ns_total >= s.grow_ns_max);
        assert_int_equal(s.bytes_overhead, s.bytes_reserved - s.capacity * s.item_size);
    }
    live_verify_all(&live);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_geometric_growth_multiplies_capacity_by_the_factor(void **state) {
    fm_test_env *env = *state;
    check_geometric_growth(env, 0.0f, 2.0);
    check_geometric_growth(env, 1.5f, 1.5);
    check_geometric_growth(env, 3.0f, 3.0);
    check_geometric_growth(env, 1.1f, 1.1);
}

static void check_linear_growth(fm_test_env *env, uint32_t step) {
    fm_pool *pool = create_counted(env, (fm_pool_desc){
                                            .item_size = 32,
                                            .growth = FM_GROWTH_LINEAR,
                                            .grow_step = step,
                                        });
    live_set live;
    live_init(&live, 32);
    uint64_t ipc = stats_of(pool).items_per_chunk;
    uint64_t want = step ? step : ipc;
    for (int g = 1; g <= 5; g++) {
        uint64_t old_cap = fill_until_growth(pool, &live);
        fm_pool_stats s = stats_of(pool);
        uint64_t added = s.capacity - old_cap;
        if (added < want || added >= want + ipc) {
            print_error("step %u: capacity %llu -> %llu (items per chunk %llu)\n", step,
                        (unsigned long long)old_cap, (unsigned long long)s.capacity,
                        (unsigned long long)ipc);
            fail();
        }
        assert_int_equal(s.grow_events, (uint64_t)g);
        assert_true(s.grow_ns_total >= s.grow_ns_max);
    }
    live_verify_all(&live);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_linear_growth_adds_grow_step_rounded_to_chunks(void **state) {
    fm_test_env *env = *state;
    fm_pool *probe = create_counted(env, (fm_pool_desc){.item_size = 32});
    uint32_t ipc = (uint32_t)stats_of(probe).items_per_chunk;
    fm_pool_destroy(probe);
    check_linear_growth(env, 0);
    check_linear_growth(env, 3);
    check_linear_growth(env, ipc);
    check_linear_growth(env, ipc * 2 + 1);
}

/* Without max_capacity nothing limits a chunk: every slot of every chunk the
 * pool holds is usable, so memory taken for a growth is never dead weight. */
static void check_every_slot_usable(fm_test_env *env, fm_pool_desc desc) {
    fm_pool *pool = create_counted(env, desc);
    live_set live;
    live_init(&live, desc.item_size);
    for (int g = 0; g <= 3; g++) {
        if (g) fill_until_growth(pool, &live);
        fm_pool_stats s = stats_of(pool);
        if (s.capacity != s.chunk_count * s.items_per_chunk) {
            print_error("%s after %d growth(s): capacity %llu but %llu chunks of %llu slots\n",
                        fm_pool_name(pool), g, (unsigned long long)s.capacity,
                        (unsigned long long)s.chunk_count,
                        (unsigned long long)s.items_per_chunk);
            fail();
        }
    }
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_unbounded_growth_uses_every_slot_of_every_chunk(void **state) {
    fm_test_env *env = *state;
    check_every_slot_usable(env, (fm_pool_desc){.name = "geo_default", .item_size = 32});
    check_every_slot_usable(env, (fm_pool_desc){.name = "geo_initial_100", .item_size = 32,
                                                .initial_capacity = 100});
    check_every_slot_usable(env, (fm_pool_desc){.name = "geo_factor_1.5", .item_size = 32,
                                                .grow_factor = 1.5f});
    check_every_slot_usable(env, (fm_pool_desc){.name = "linear_step_3", .item_size = 32,
                                                .growth = FM_GROWTH_LINEAR, .grow_step = 3});
}

static void test_pool_fixed_serves_exactly_its_capacity_then_reports_full(void **state) {
    fm_test_env *env = *state;
    const uint32_t initials[] = {0, 1, 100, 3000};
    for (size_t k = 0; k < sizeof initials / sizeof initials[0]; k++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){
                                                .name = "fixed_pool",
                                                .item_size = 24,
                                                .growth = FM_GROWTH_FIXED,
                                                .initial_capacity = initials[k],
                                            });
        fm_pool_stats s = stats_of(pool);
        assert_true(s.capacity >= initials[k]);
        assert_true(s.capacity >= 1);
        live_set live;
        live_init(&live, 24);
        for (uint64_t i = 0; i < s.capacity; i++) live_alloc(&live, pool);
        fm_test_errors_reset(&env->errors);
        for (int attempt = 1; attempt <= 3; attempt++) {
            fm_clear_error();
            assert_null(fm_pool_alloc(pool));
            assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
            assert_int_equal(env->errors.count, attempt);
            assert_int_equal(env->errors.last, FM_ERR_POOL_FULL);
            assert_true(fm_test_contains(env->errors.message, "fixed_pool"));
            assert_int_equal(stats_of(pool).failed_allocs, (uint64_t)attempt);
        }
        assert_null(fm_pool_new(pool));
        fm_pool_stats full = stats_of(pool);
        assert_int_equal(full.failed_allocs, 4);
        assert_int_equal(full.grow_events, 0);
        assert_int_equal(full.capacity, s.capacity);
        assert_int_equal(full.live, s.capacity);
        assert_int_equal(full.total_allocs, s.capacity);

        live_release(&live, pool, live.count / 2);
        live_alloc(&live, pool);
        assert_null(fm_pool_alloc(pool));
        assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
        live_verify_all(&live);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        live_release_all(&live, pool);
        live_deinit(&live);
        destroy_clean(env, pool);
    }
}

static void check_max_capacity(fm_test_env *env, fm_growth growth, uint32_t step,
                               uint32_t max) {
    fm_pool *pool = create_counted(env, (fm_pool_desc){
                                            .name = "bounded",
                                            .item_size = 16,
                                            .growth = growth,
                                            .grow_step = step,
                                            .max_capacity = max,
                                        });
    live_set live;
    live_init(&live, 16);
    fm_test_errors_reset(&env->errors);
    for (;;) {
        fm_pool_stats s = stats_of(pool);
        assert_true(s.capacity <= max);
        assert_true(s.live <= max);
        void *item = fm_pool_alloc(pool);
        if (!item) break;
        live_add(&live, item);
        assert_true(live.count <= max);
    }
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    assert_int_equal(env->errors.count, 1);
    assert_true(fm_test_contains(env->errors.message, "bounded"));
    fm_pool_stats s = stats_of(pool);
    if (live.count != max) {
        print_error("%s max %u: served %zu items (capacity %llu)\n", fm_growth_name(growth), max,
                    live.count, (unsigned long long)s.capacity);
    }
    assert_int_equal(live.count, max);
    assert_int_equal(s.live, max);
    assert_true(s.capacity <= max);
    assert_int_equal(s.failed_allocs, 1);
    assert_null(fm_pool_alloc(pool));
    assert_int_equal(stats_of(pool).failed_allocs, 2);

    live_release(&live, pool, 0);
    live_alloc(&live, pool);
    live_verify_all(&live);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_max_capacity_bounds_live_items_for_every_growth(void **state) {
    fm_test_env *env = *state;
    check_max_capacity(env, FM_GROWTH_GEOMETRIC, 0, 1000);
    check_max_capacity(env, FM_GROWTH_GEOMETRIC, 0, 10);
    check_max_capacity(env, FM_GROWTH_LINEAR, 7, 1000);
    check_max_capacity(env, FM_GROWTH_LINEAR, 0, 5000);
    check_max_capacity(env, FM_GROWTH_FIXED, 0, 1);
}

/* ============================================================ alignment */

static void test_pool_every_item_honours_alignments_up_to_4096(void **state) {
    fm_test_env *env = *state;
    const size_t sizes[] = {1, 3, 16, 24, 100, 4096};
    for (size_t align = 1; align <= FM_MAX_ALIGN; align *= 2) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t size = sizes[k];
            fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = size,
                                                                .item_align = align});
            fm_pool_stats s = stats_of(pool);
            assert_true(s.item_align >= align);
            assert_true(FM_IS_POW2(s.item_align));
            assert_true(s.stride >= size);
            assert_int_equal(s.stride % s.item_align, 0);
            assert_int_equal(fm_pool_get_desc(pool).item_align, align);
            uint64_t n = s.capacity + 1 < 5000 ? s.capacity + 1 : 5000;
            live_set live;
            live_init(&live, size);
            for (uint64_t i = 0; i < n; i++) {
                void *item = live_alloc(&live, pool);
                if (!fm_is_aligned(item, align) || !fm_is_aligned(item, s.item_align)) {
                    print_error("size %zu align %zu: item %p misaligned\n", size, align, item);
                    fail();
                }
            }
            live_verify_all(&live);
            live_release_all(&live, pool);
            live_deinit(&live);
            destroy_clean(env, pool);
        }
    }
}

/* ============================================================ item sizes */

static void test_pool_items_of_every_size_hold_their_whole_contents(void **state) {
    fm_test_env *env = *state;
    const size_t sizes[] = {1, 3, 16, 24, 1000, 1024, 4096, 65536};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t size = sizes[k];
        fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = size});
        fm_pool_stats s = stats_of(pool);
        assert_int_equal(s.item_size, size);
        assert_true(s.stride >= size);
        uint64_t n = s.capacity + 1 < 5000 ? s.capacity + 1 : 5000;
        if (n < 3) n = 3;
        live_set live;
        live_init(&live, size);
        for (uint64_t i = 0; i < n; i++) live_alloc(&live, pool);
        live_verify_all(&live);
        s = stats_of(pool);
        assert_int_equal(s.bytes_overhead, s.bytes_reserved - s.capacity * s.item_size);
        assert_true(s.bytes_reserved >= s.capacity * s.item_size);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        /* Free half, refill: reused slots do not clobber neighbours. */
        for (size_t i = 0; i < live.count; i += 2) live_release(&live, pool, i);
        while (live.count < n) live_alloc(&live, pool);
        live_verify_all(&live);
        live_release_all(&live, pool);
        live_deinit(&live);
        destroy_clean(env, pool);
    }
}

/* ================================================================ reserve */

static void test_pool_reserve_grows_capacity_at_least_to_the_request(void **state) {
    fm_test_env *env = *state;
    const fm_growth policies[] = {FM_GROWTH_GEOMETRIC, FM_GROWTH_LINEAR};
    for (size_t k = 0; k < 2; k++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 48,
                                                            .growth = policies[k]});
        live_set live;
        live_init(&live, 48);
        for (int i = 0; i < 5; i++) live_alloc(&live, pool);
        fm_pool_stats before = stats_of(pool);

        assert_true(fm_pool_reserve(pool, 5000));
        fm_pool_stats after = stats_of(pool);
        assert_true(after.capacity >= 5000);
        assert_int_equal(after.live, 5);
        assert_true(after.grow_events > before.grow_events);
        live_verify_all(&live);

        /* Already satisfied: true and nothing changes. */
        assert_true(fm_pool_reserve(pool, 10));
        assert_true(fm_pool_reserve(pool, 0));
        assert_true(fm_pool_reserve(pool, (uint32_t)after.capacity));
        fm_pool_stats again = stats_of(pool);
        assert_stats_same(&after, &again, 0);

        /* The reserved capacity is served without further growth. */
        while (stats_of(pool).live < again.capacity) live_alloc(&live, pool);
        assert_int_equal(stats_of(pool).grow_events, again.grow_events);
        live_verify_all(&live);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        live_release_all(&live, pool);
        live_deinit(&live);
        destroy_clean(env, pool);
    }
    assert_int_equal(env->errors.count, 0);
}

static void test_pool_reserve_on_fixed_pool_above_capacity_fails_and_changes_nothing(
    void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "fixed_reserve",
                                                        .item_size = 48,
                                                        .growth = FM_GROWTH_FIXED,
                                                        .initial_capacity = 100});
    fm_pool_stats before = stats_of(pool);
    size_t bytes = env->alloc.live_bytes;
    assert_true(fm_pool_reserve(pool, (uint32_t)before.capacity));
    assert_true(fm_pool_reserve(pool, 50));
    assert_int_equal(env->errors.count, 0);

    assert_false(fm_pool_reserve(pool, (uint32_t)before.capacity + 1));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.last, FM_ERR_POOL_FULL);
    assert_true(fm_test_contains(env->errors.message, "fixed_reserve"));
    assert_false(fm_pool_reserve(pool, UINT32_MAX));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    fm_pool_stats after = stats_of(pool);
    assert_int_equal(after.capacity, before.capacity);
    assert_int_equal(after.chunk_count, before.chunk_count);
    assert_int_equal(after.bytes_reserved, before.bytes_reserved);
    assert_int_equal(after.grow_events, 0);
    assert_int_equal(after.live, 0);
    assert_int_equal(env->alloc.live_bytes, bytes);
    destroy_clean(env, pool);
}

/* ============================================================= grow-ahead */

/* fm_pool_grow_ahead grows only when fewer than min_free items are free, to
 * live + 2 x min_free; its growths are counted apart from the growths inside
 * allocations and from reserve's (all three are in grow_events). */
static void test_pool_grow_ahead_grows_short_pools_and_counts_it_apart(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "ahead", .item_size = 48});
    live_set live;
    live_init(&live, 48);
    fm_pool_stats s0 = stats_of(pool);
    while (stats_of(pool).live < s0.capacity + 1) live_alloc(&live, pool); /* one in-alloc growth */
    fm_pool_stats s1 = stats_of(pool);
    assert_int_equal(s1.grow_events, 1);
    assert_int_equal(s1.alloc_grow_events, 1);
    assert_true(s1.alloc_grow_ns > 0 || s1.grow_ns_total == 0);
    assert_int_equal(s1.alloc_grow_ns, s1.grow_ns_total);
    assert_int_equal(s1.ahead_grow_events, 0);
    /* enough room: nothing */
    uint64_t free_now = s1.capacity - s1.live;
    assert_true(fm_pool_grow_ahead(pool, (uint32_t)free_now));
    assert_true(fm_pool_grow_ahead(pool, 0));
    fm_pool_stats s2 = stats_of(pool);
    assert_stats_same(&s1, &s2, 0);
    /* short of room: grows to live + 2 x min_free */
    uint32_t want = (uint32_t)free_now + 1;
    assert_true(fm_pool_grow_ahead(pool, want));
    fm_pool_stats s3 = stats_of(pool);
    assert_true(s3.capacity >= s3.live + 2 * (uint64_t)want);
    assert_int_equal(s3.ahead_grow_events, 1);
    assert_int_equal(s3.alloc_grow_events, 1);
    assert_int_equal(s3.grow_events, 2);
    /* each count converted from ticks on its own: within a ns of rounding each */
    uint64_t parts = s3.ahead_grow_ns + s3.alloc_grow_ns;
    assert_true(parts + 2 >= s3.grow_ns_total && parts <= s3.grow_ns_total + 2);
    /* reserve's growth is neither */
    assert_true(fm_pool_reserve(pool, (uint32_t)s3.capacity + 1));
    fm_pool_stats s4 = stats_of(pool);
    assert_int_equal(s4.grow_events, 3);
    assert_int_equal(s4.ahead_grow_events, 1);
    assert_int_equal(s4.alloc_grow_events, 1);
    /* the room is served without growth inside an allocation */
    while (stats_of(pool).live < s4.capacity) live_alloc(&live, pool);
    assert_int_equal(stats_of(pool).alloc_grow_events, 1);
    live_verify_all(&live);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    assert_int_equal(env->errors.count, 0);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

/* Limits: a FIXED pool short of room refuses (FM_ERR_POOL_FULL, nothing
 * changed); max_capacity caps the growth (at the cap: nothing to do); a
 * refusing allocator leaves the pool as it was. */
static void test_pool_grow_ahead_respects_fixed_max_capacity_and_refusals(void **state) {
    fm_test_env *env = *state;
    fm_pool *fixed = create_counted(env, (fm_pool_desc){.name = "fixed_ahead", .item_size = 48,
                                                         .growth = FM_GROWTH_FIXED,
                                                         .initial_capacity = 100});
    fm_pool_stats f0 = stats_of(fixed);
    assert_true(fm_pool_grow_ahead(fixed, (uint32_t)f0.capacity)); /* room enough */
    assert_int_equal(env->errors.count, 0);
    assert_false(fm_pool_grow_ahead(fixed, (uint32_t)f0.capacity + 1));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    assert_int_equal(env->errors.count, 1);
    assert_true(fm_test_contains(env->errors.message, "fixed_ahead"));
    fm_pool_stats f1 = stats_of(fixed);
    assert_stats_same(&f0, &f1, 0);
    destroy_clean(env, fixed);

    fm_pool *capped = create_counted(env, (fm_pool_desc){.name = "capped_ahead", .item_size = 48,
                                                          .max_capacity = 3000});
    fm_pool_stats c0 = stats_of(capped);
    assert_true(fm_pool_grow_ahead(capped, 2000));
    fm_pool_stats c1 = stats_of(capped);
    assert_int_equal(c1.capacity, 3000); /* live + 4000, capped */
    assert_int_equal(c1.ahead_grow_events, 1);
    assert_true(fm_pool_grow_ahead(capped, 4000)); /* at the cap: nothing more to do */
    fm_pool_stats c2 = stats_of(capped);
    assert_stats_same(&c1, &c2, 0);
    assert_true(c0.capacity < 3000);
    destroy_clean(env, capped);

    fm_pool *refused = create_counted(env, (fm_pool_desc){.name = "refused_ahead", .item_size = 48});
    fm_pool_stats r0 = stats_of(refused);
    int errors = env->errors.count;
    fm_test_allocator_fail_nth(&env->alloc, 1);
    assert_false(fm_pool_grow_ahead(refused, 100000));
    assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
    assert_int_equal(env->errors.count, errors + 1);
    fm_pool_stats r1 = stats_of(refused);
    assert_stats_same(&r0, &r1, 0);
    assert_int_equal(fm_pool_check(refused), FM_OK);
    destroy_clean(env, refused);
}

static void test_pool_reserve_above_max_capacity_fails(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "max_reserve",
                                                        .item_size = 16,
                                                        .max_capacity = 3000});
    fm_pool_stats before = stats_of(pool);
    assert_false(fm_pool_reserve(pool, 3001));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    assert_int_equal(env->errors.count, 1);
    fm_pool_stats after = stats_of(pool);
    assert_int_equal(after.capacity, before.capacity);
    assert_int_equal(after.chunk_count, before.chunk_count);
    assert_int_equal(after.bytes_reserved, before.bytes_reserved);

    assert_true(fm_pool_reserve(pool, 3000));
    after = stats_of(pool);
    assert_true(after.capacity >= 3000 && after.capacity <= 3000);
    live_set live;
    live_init(&live, 16);
    for (int i = 0; i < 3000; i++) live_alloc(&live, pool);
    assert_null(fm_pool_alloc(pool));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_reserve_with_prefault_works(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 200, .prefault = true});
    assert_true(fm_pool_reserve(pool, 4000));
    fm_pool_stats s = stats_of(pool);
    assert_true(s.capacity >= 4000);
    live_set live;
    live_init(&live, 200);
    for (uint64_t i = 0; i < s.capacity; i++) live_alloc(&live, pool);
    assert_int_equal(stats_of(pool).grow_events, s.grow_events);
    live_verify_all(&live);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);

    /* Prefault with the system allocator too. */
    fm_pool *sys = fm_pool_create(&(fm_pool_desc){.item_size = 200, .prefault = true,
                                                  .initial_capacity = 1000});
    assert_non_null(sys);
    assert_true(fm_pool_reserve(sys, 10000));
    assert_true(stats_of(sys).capacity >= 10000);
    fm_pool_destroy(sys);
    assert_int_equal(env->errors.count, 0);
}

/* Growth maps the chunks and records them as one span: a record, the chunk
 * map's entries and a table entry are made when a chunk first becomes
 * current, so growing by thousands of chunks touches a few pages, not a
 * few per chunk (issue 22: the slowest growth was 122 us at 1,588 chunks,
 * mostly first touches of a copied record array and a rebuilt table). Run
 * in a forked child (on Windows, in this process), where a write to any
 * page of the heap (resident or not in the parent) is a page fault, so the
 * count does not depend on what the tests before left resident. */
static void reserve_thousands_of_chunks_in_child(void) {
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.item_size = 1024, .initial_capacity = 1});
    if (!pool) {
        fprintf(stderr, "FAILED: create\n");
        return;
    }
    uint64_t faults = fm_test_minor_faults();
    bool ok = fm_pool_reserve(pool, 200000);
    faults = fm_test_minor_faults() - faults;
    fm_pool_stats s;
    fm_pool_get_stats(pool, &s);
    fprintf(stderr, "reserve of %llu chunks: %llu page faults\n",
            (unsigned long long)s.chunk_count, (unsigned long long)faults);
    if (!ok || s.capacity < 200000 || s.chunk_count < 3000) fprintf(stderr, "FAILED: reserve\n");
    if (faults > 24) fprintf(stderr, "FAILED: more than 24 page faults\n");
    fm_pool_destroy(pool);
}

static void test_pool_growth_by_thousands_of_chunks_touches_only_a_few_pages(void **state) {
    fm_test_env *env = *state;
    /* Valgrind's own faults count as the process's, and TSan's shadow
     * memory for a new mapping is faulted in on the pool's behalf. */
    const char *what = "page faults of a growth by thousands of chunks";
    uint64_t bare = 0;
    if (fm_test_under_valgrind() || FM_TEST_TSAN) {
        /* not counted (see above) */
    } else if ((bare = fm_test_faults_of_an_untouched_mapping((size_t)256 << 20)) > 8) {
        char why[128];
        snprintf(why, sizeof why, "mapping 256 MiB without touching it takes %llu page faults",
                 (unsigned long long)bare);
        fm_test_feature_missing(what, why);
    } else if (fm_test_page_faults_counted(what)) {
        fm_test_child r = fm_test_run_child(reserve_thousands_of_chunks_in_child);
        if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 ||
            fm_test_contains(r.output, "FAILED")) {
            print_error("child: %s\n", r.output);
            fail();
        }
    }
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.item_size = 1024, .initial_capacity = 1});
    assert_non_null(pool);
    assert_true(fm_pool_reserve(pool, 200000));
    fm_pool_stats s = stats_of(pool);
    assert_true(s.capacity >= 200000);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    /* Chunks open one by one as allocations reach them; every item is one
     * of this pool's. */
    void *items[300];
    for (int i = 0; i < 300; i++) {
        assert_non_null(items[i] = fm_pool_alloc(pool));
        memset(items[i], i, 1024);
        assert_ptr_equal(fm_pool_of(items[i]), pool);
    }
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (int i = 0; i < 300; i++) fm_pool_free(pool, items[i]);
    assert_int_equal(stats_of(pool).grow_events, s.grow_events);
    fm_pool_destroy(pool);
    assert_int_equal(env->errors.count, 0);
}

/* desc.prefault: a growth makes resident what the chunks it adds will use,
 * the chunks and the arrays their openings write (records, base arrays,
 * chunk cache, table, the chunk map's entries), so that filling them takes
 * no page fault. In a forked child, as above: the parent's pages the child
 * writes first are faults there, so the counter is read only around the
 * allocations. */
static void fill_a_prefaulted_reserve_in_child(void) {
    enum { N = 50000 };
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){
        .name = "prefaulted", .item_size = 1024, .initial_capacity = 1, .prefault = true});
    void **items = malloc(N * sizeof *items);
    if (!pool || !items) {
        fprintf(stderr, "FAILED: create\n");
        return;
    }
    memset(items, 0, N * sizeof *items);
    if (!fm_pool_reserve(pool, N)) fprintf(stderr, "FAILED: reserve\n");
    fm_pool_stats s;
    fm_pool_get_stats(pool, &s);
    size_t n = 0;
    uint64_t faults = fm_test_minor_faults();
    for (; n < N && (items[n] = fm_pool_alloc(pool)) != NULL; n++) memset(items[n], 0x5A, 1024);
    faults = fm_test_minor_faults() - faults;
    fprintf(stderr, "%zu allocations into %llu prefaulted chunks: %llu page faults\n", n,
            (unsigned long long)s.chunk_count, (unsigned long long)faults);
    if (n < N) fprintf(stderr, "FAILED: allocation %zu\n", n);
    if (faults > 0) fprintf(stderr, "FAILED: page faults after a prefaulted reserve\n");
    fm_pool_stats after;
    fm_pool_get_stats(pool, &after);
    if (after.grow_events != s.grow_events) fprintf(stderr, "FAILED: grew in the allocations\n");
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    free(items);
    fm_pool_destroy(pool);
}

static void test_pool_allocations_after_a_prefaulted_reserve_take_no_page_fault(void **state) {
    fm_test_env *env = *state;
    const char *what = "page faults of allocations after a prefaulted reserve";
#ifdef FM_TEST_ASAN
    const bool asan = true;
#else
    const bool asan = false;
#endif
    if (fm_test_under_valgrind() || FM_TEST_TSAN || asan) {
        /* A sanitizer's shadow of a chunk (ASan: two pages of a 64 KiB
         * chunk) faults in when the chunk opens and its slots are poisoned. */
        print_message("[ did not apply ] %s: %s\n", what,
                      fm_test_under_valgrind() ? "Valgrind's own memory faults in"
                                               : "the sanitizer's shadow of the chunks faults in");
        skip();
    }
    if (!fm_test_page_faults_counted(what)) return;
    if (!fm_test_populate_makes_pages_resident(what)) return;
    fm_test_child r = fm_test_run_child(fill_a_prefaulted_reserve_in_child);
    print_message("%s", r.output);
    if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 || fm_test_contains(r.output, "FAILED"))
        fail_msg("child: %s", r.output);
    assert_int_equal(env->errors.count, 0);
}

/* Who places this process's mappings when it is not the kernel alone:
 * Valgrind and qemu-user choose the addresses of a guest's mmap calls
 * themselves, hints included. NULL: the kernel. */
static const char *mapping_placer(void) {
    if (fm_test_under_valgrind()) return "Valgrind";
    return fm_test_emulator();
}

/* Linux: the first mapping /proc/self/maps lists (adjacent ones of the
 * same kind merged) that overlaps [lo, hi): its line (newline dropped) into
 * line and, unless start is NULL, its bounds into *start and *end; false
 * when none does (or elsewhere). A sanitizer's allocator maps its own
 * regions at any time, top-down as the pool's, and may take a range the
 * pool was to map next. */
static bool range_mapped(uintptr_t lo, uintptr_t hi, char *line, size_t line_len, uintptr_t *start,
                         uintptr_t *end) {
#if defined(__linux__)
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return false;
    bool found = false;
    while (!found && fgets(line, (int)line_len, f)) {
        unsigned long a = 0, b = 0;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo) {
            if (start) *start = a, *end = b;
            found = true;
        }
    }
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    return found;
#else
    (void)lo, (void)hi, (void)line, (void)line_len, (void)start, (void)end;
    return false;
#endif
}

/* The bounds of the mapping that holds addr (see range_mapped). */
static bool mapping_around(uintptr_t addr, uintptr_t *lo, uintptr_t *hi) {
    char line[512] = "";
    return range_mapped(addr, addr + 1, line, sizeof line, lo, hi);
}

/* fm__os_reserve_below, which a growth maps its chunks with: the range
 * ending at the address given where it is free (POSIX: one mmap there;
 * Windows takes no hint), an aligned range elsewhere that overlaps nothing
 * mapped where it is not, fm__os_reserve's for NULL; every result aligned,
 * readable and writable. The free range is a hole of exactly its size
 * between two held ones, where fm__os_reserve, which over-reserves to
 * align, never puts it. */
static void test_os_reserve_below_takes_the_free_range_below_else_one_elsewhere(void **state) {
    (void)state;
    const size_t align = 64 << 10, b = 4 * align;
    uint8_t *r = fm__os_reserve(4 * b, align, true);
    assert_non_null(r);
    fm__os_release(r + b, b); /* held: [r, r + b) and [r + 2b, r + 4b) */
    uint8_t *below = fm__os_reserve_below(r + 2 * b + align / 2, b, align, true);
    assert_non_null(below);
    assert_true(fm_is_aligned(below, align));
#if !defined(_WIN32)
    if (!mapping_placer()) assert_ptr_equal(below, r + b);
    else
        print_message("[ did not apply ] the range asked for: %s places mappings itself\n",
                      mapping_placer());
#endif
    memset(below, 0xAB, b);
    /* The range below r + 4b is held: another one, clear of all three. */
    uint8_t *other = fm__os_reserve_below(r + 4 * b, b, align, true);
    assert_non_null(other);
    assert_true(fm_is_aligned(other, align));
    assert_true(other + b <= r || other >= r + 4 * b || other == r + b);
    if (other != below) assert_true(other + b <= below || other >= below + b);
    memset(other, 0xCD, b);
    assert_int_equal(below[0], 0xAB);
    assert_int_equal(r[0], 0);
    assert_int_equal(r[2 * b], 0);
    uint8_t *plain = fm__os_reserve_below(NULL, b, align, true);
    assert_non_null(plain);
    assert_true(fm_is_aligned(plain, align));
    plain[b - 1] = 1;
    fm__os_release(plain, b);
    fm__os_release(other, b);
    fm__os_release(below, b);
    fm__os_release(r, b);
    fm__os_release(r + 2 * b, 2 * b);
}

/* Chunk bases of the first item after each growth of a LINEAR pool of 1 KiB
 * items growing by `step` chunks (the first chunk of each growth: nothing
 * is freed, so a growth's chunks open in order), growths (at most 16) into
 * bases; every item is the pool's. */
static uint32_t growth_bases(fm_pool *pool, uint32_t growths, uintptr_t *bases, void **items,
                             size_t cap, size_t *n) {
    fm_pool_stats s = stats_of(pool);
    uintptr_t mask = ~(uintptr_t)(s.chunk_bytes - 1);
    uint64_t events = s.grow_events;
    uint32_t got = 0;
    while (got < growths && *n < cap) {
        void *item = fm_pool_alloc(pool);
        assert_non_null(item);
        assert_ptr_equal(fm_pool_of(item), pool);
        items[(*n)++] = item;
        uint64_t now = stats_of(pool).grow_events;
        if (now != events) bases[got++] = (uintptr_t)item & mask, events = now;
    }
    return got;
}

/* A heap whose chunk-sized blocks (4 KiB, 4 KiB-aligned) lie 64 chunks
 * apart in one region: every chunk of a pool on it falls on the same entry
 * of the pool's chunk cache (by chunk number: 64 entries, more past 64
 * chunks). Everything else comes from the counting allocator. */
enum { SPREAD_CHUNK = 4096, SPREAD_STEP = 64, SPREAD_MAX = 16 };
typedef struct spread_heap {
    fm_allocator inner;
    uint8_t *region; /* SPREAD_MAX blocks, SPREAD_STEP chunks apart */
    size_t used;     /* blocks handed out */
    size_t held;     /* blocks not given back */
} spread_heap;

static bool spread_owns(const spread_heap *h, const void *p) {
    uintptr_t a = (uintptr_t)p, r = (uintptr_t)h->region;
    return a >= r && a - r < (size_t)SPREAD_MAX * SPREAD_STEP * SPREAD_CHUNK;
}

static void *spread_alloc(size_t size, size_t align, void *user) {
    spread_heap *h = user;
    if (size != SPREAD_CHUNK || align != SPREAD_CHUNK)
        return h->inner.alloc(size, align, h->inner.user);
    if (h->used == SPREAD_MAX) return NULL;
    h->held++;
    return h->region + h->used++ * SPREAD_STEP * SPREAD_CHUNK;
}

static void spread_free(void *p, size_t size, void *user) {
    spread_heap *h = user;
    if (spread_owns(h, p)) h->held--;
    else h->inner.free(p, size, h->inner.user);
}

/* Frees into chunks that share one entry of the chunk cache: each finds its
 * chunk in the table and takes the entry from the one before, whose parked
 * slot (NONE, MUTEX) is then settled into the right chunk. Round-robin
 * frees over six such chunks count right and check clean; a double free, an
 * interior pointer and a pointer into the region where no chunk is are
 * reported with nothing changed; every item then goes back. Every policy. */
static void test_pool_frees_into_chunks_that_share_a_cache_entry(void **state) {
    fm_test_env *env = *state;
    static const fm_sync syncs[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                    FM_SYNC_LOCKFREE};
    for (size_t pi = 0; pi < sizeof syncs / sizeof syncs[0]; pi++) {
        spread_heap heap = {.inner = fm_test_allocator_get(&env->alloc)};
        const size_t region_bytes = (size_t)SPREAD_MAX * SPREAD_STEP * SPREAD_CHUNK;
        heap.region = fm__os_reserve(region_bytes, SPREAD_CHUNK, true);
        assert_non_null(heap.region);
        fm_pool *pool =
            fm_pool_create(&(fm_pool_desc){.name = "spread",
                                           .item_size = 64,
                                           .chunk_bytes = SPREAD_CHUNK,
                                           .sync = syncs[pi],
                                           .allocator = {spread_alloc, spread_free, &heap}});
        assert_non_null(pool);
        size_t per = (size_t)stats_of(pool).items_per_chunk;
        enum { CHUNKS = 6 };
        size_t n = per * CHUNKS;
        /* by[k * per + j]: the j-th item handed out in the heap's block k */
        void **by = calloc((size_t)SPREAD_MAX * per, sizeof *by);
        size_t in[SPREAD_MAX] = {0};
        assert_non_null(by);
        for (size_t i = 0; i < n; i++) {
            void *item = fm_pool_alloc(pool);
            assert_non_null(item);
            assert_true(spread_owns(&heap, item));
            size_t k = ((uintptr_t)item - (uintptr_t)heap.region) / (SPREAD_STEP * SPREAD_CHUNK);
            assert_true(in[k] < per);
            fm_test_fill(item, 64, (uint32_t)(k * per + in[k]) + 1);
            by[k * per + in[k]++] = item;
        }
        size_t used = 0; /* blocks that hold items */
        for (size_t k = 0; k < SPREAD_MAX; k++) used += in[k] != 0;
        assert_true(used >= 2 && heap.used < SPREAD_MAX);
        int reports = env->errors.count;
        size_t freed = 0;
        /* Round robin: the even items of every block in turn. */
        for (size_t j = 0; j < per; j += 2) {
            for (size_t k = 0; k < SPREAD_MAX; k++) {
                if (j >= in[k]) continue;
                fm_pool_free(pool, by[k * per + j]);
                assert_int_equal(stats_of(pool).live, n - ++freed);
            }
        }
        assert_int_equal(env->errors.count, reports);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_stats before = stats_of(pool);
        int bad = 0;
        for (size_t k = 0; k < SPREAD_MAX; k++) {
            if (!in[k]) continue;
            fm_pool_free(pool, by[k * per]);
            assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
            bad++;
            if (in[k] < 2) continue;
            fm_pool_free(pool, byte_offset(by[k * per + 1], 8));
            assert_int_equal(fm_last_error(), FM_ERR_INTERIOR_POINTER);
            bad++;
        }
        /* Where the heap's next block would go: the same cache entry, no chunk. */
        fm_pool_free(pool, byte_offset(heap.region, heap.used * SPREAD_STEP * SPREAD_CHUNK +
                                                        ((uintptr_t)by[0] % SPREAD_CHUNK)));
        assert_int_equal(fm_last_error(), FM_ERR_FOREIGN_POINTER);
        bad++;
        assert_int_equal(env->errors.count - reports, bad);
        fm_pool_stats after = stats_of(pool);
        assert_stats_same(&before, &after, (uint64_t)bad);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        /* The odd items, the blocks in reverse, their contents intact. */
        for (size_t j = 1; j < per; j += 2) {
            for (size_t k = SPREAD_MAX; k-- > 0;) {
                if (j >= in[k]) continue;
                assert_true(fm_test_check_fill(by[k * per + j], 64, (uint32_t)(k * per + j) + 1));
                fm_pool_free(pool, by[k * per + j]);
            }
        }
        assert_int_equal(env->errors.count - reports, bad);
        assert_int_equal(stats_of(pool).live, 0);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        free(by);
        fm_test_pool_destroy_quiet(env, pool);
        assert_int_equal(heap.held, 0);
        fm__os_release(heap.region, region_bytes);
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

/* The OS's growth window size (0: none, which the test says it skips). */
static size_t growth_window_bytes(void) {
    size_t win = fm__os_get_caps()->window_bytes;
    if (!win)
        print_message("[ did not apply ] growth windows: this OS has none (window_bytes 0); "
                      "growths checked without\n");
    return win;
}

/* Where the OS has growth windows, create of a pool that may grow maps its
 * window and takes its chunk from the top: the first growths take theirs
 * just below it, side by side, with no mapping of their own (so wherever
 * the window went, Valgrind and qemu-user included), and the mapping that
 * holds create's chunk spans the window. A FIXED pool maps no window. */
static void test_pool_create_maps_the_window_its_first_growths_take_from(void **state) {
    fm_test_env *env = *state;
    size_t win = growth_window_bytes();
    enum { CAP = 2000 };
    void **items = malloc(CAP * sizeof *items);
    assert_non_null(items);
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){
        .name = "window", .item_size = 1024, .growth = FM_GROWTH_GEOMETRIC, .initial_capacity = 1});
    assert_non_null(pool);
    fm_pool_stats s = stats_of(pool);
    size_t cb = (size_t)s.chunk_bytes;
    void *first_item = fm_pool_alloc(pool);
    assert_non_null(first_item);
    uintptr_t first = (uintptr_t)first_item & ~(uintptr_t)(cb - 1);
    uintptr_t lo = 0, hi = 0;
    if (win) {
        assert_true(mapping_around(first, &lo, &hi));
        assert_true(hi - lo >= win);
    }
    uintptr_t bases[4];
    size_t n = 0;
    assert_int_equal(growth_bases(pool, 4, bases, items, CAP, &n), 4);
    if (win) {
        /* geometric from one chunk: growths of 1, 2, 4 and 8 chunks, each
         * just below the one before */
        assert_true(bases[0] + cb == first);
        assert_true(bases[1] + 2 * cb == bases[0]);
        assert_true(bases[2] + 4 * cb == bases[1]);
        assert_true(bases[3] + 8 * cb == bases[2]);
        for (int i = 0; i < 4; i++) assert_true(bases[i] >= lo && bases[i] < hi);
    }
    assert_int_equal(fm_pool_check(pool), FM_OK);
    fm_pool_free(pool, first_item);
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    assert_int_equal(stats_of(pool).live, 0);
    fm_pool_destroy(pool);
    fm_pool *fixed = fm_pool_create(&(fm_pool_desc){
        .name = "fixed", .item_size = 1024, .growth = FM_GROWTH_FIXED, .initial_capacity = 1});
    assert_non_null(fixed);
    void *item = fm_pool_alloc(fixed);
    assert_non_null(item);
    if (win) {
        assert_true(mapping_around((uintptr_t)item, &lo, &hi));
        assert_true(hi - lo < win);
    }
    fm_pool_free(fixed, item);
    fm_pool_destroy(fixed);
    free(items);
    assert_int_equal(env->errors.count, 0);
}

/* Growth windows (pool/chunks.c, fm__window_take), where the OS has them:
 * a window of 36 chunks takes eight growths of 4 chunks side by side, from
 * its top down (their arrays, a few pages, from its bottom up), with no
 * mapping of their own; the ninth maps a new window, clear of the first; a
 * growth above a quarter of a window (here: with windows of 12 chunks) maps
 * its own chunks and its arrays just below them, and the next growth's
 * chunks go below those. The first window ends where create's chunk
 * begins. Every item is the pool's and frees; the pool checks clean.
 * Elsewhere growths map their own chunks, and the hook that sizes windows
 * changes nothing. */
static void test_pool_growths_take_their_chunks_from_a_window(void **state) {
    fm_test_env *env = *state;
    bool windows = growth_window_bytes() != 0;
    /* TSan's interceptor does not always honour a hint either: in CI a 1
     * GiB window did not land below create's chunk under it, nor, in another
     * run, a growth's chunks below the last's (the OS test's hole did). */
    const char *placer = mapping_placer();
    if (!placer && FM_TEST_TSAN) placer = "ThreadSanitizer";
    enum { CAP = 6000 };
    void **items = malloc(CAP * sizeof *items);
    assert_non_null(items);
    for (int round = 0; round < 2; round++) {
        fm_pool *pool = fm_pool_create(&(fm_pool_desc){.name = "window", .item_size = 1024,
                                                       .growth = FM_GROWTH_LINEAR,
                                                       .grow_step = 1,
                                                       .initial_capacity = 1});
        assert_non_null(pool);
        fm_pool_stats s = stats_of(pool);
        size_t cb = (size_t)s.chunk_bytes, per = (size_t)s.items_per_chunk;
        fm_pool_destroy(pool);
        const uint32_t step = 4; /* chunks per growth */
        pool = fm_pool_create(&(fm_pool_desc){.name = "window", .item_size = 1024,
                                              .growth = FM_GROWTH_LINEAR,
                                              .grow_step = (uint32_t)(step * per),
                                              .initial_capacity = 1});
        assert_non_null(pool);
        fm__pool_set_window_chunks(pool, round == 0 ? 36 : 12);
        uintptr_t bases[16];
        size_t n = 0;
        uint32_t got = growth_bases(pool, round == 0 ? 9 : 3, bases, items, CAP, &n);
        assert_int_equal(got, round == 0 ? 9 : 3);
        if (windows && round == 0) {
            for (uint32_t i = 1; i < 8; i++) assert_true(bases[i] + step * cb == bases[i - 1]);
            assert_true(bases[8] + step * cb <= bases[7] || bases[8] >= bases[0] + step * cb);
            /* The window ends where create's chunk begins: the growths' chunks
             * continue it, each in a slot of its own in the pool's chunk
             * cache (chunk number mod 64; 1 GiB away they would share one,
             * and a random free into either would miss it). */
            uintptr_t first = (uintptr_t)items[0] & ~(uintptr_t)(cb - 1);
            char other[256] = "";
            if (placer) {
                print_message("[ did not apply ] the window below create's chunk: %s places "
                              "mappings itself\n",
                              placer);
            } else if ((bases[0] < first - 36 * cb || bases[0] >= first) &&
                       range_mapped(first - 36 * cb, first, other, sizeof other, NULL, NULL)) {
                /* The window went elsewhere, and not the pool's mapping is in
                 * the range: what took it between create and the first
                 * growth. */
                print_message("[ did not apply ] the window below create's chunk: another "
                              "mapping took that range first (%s)\n",
                              other);
            } else {
                assert_true(bases[0] + step * cb == first);
            }
        } else if (windows && !placer) {
            /* 4 chunks > 12 / 4: each growth its own mapping, the next just
             * below the last one's arrays (fm__os_reserve_below): at most a
             * chunk (aligned down) below its chunks. */
            for (uint32_t i = 1; i < 3; i++) {
                assert_true(bases[i] + step * cb <= bases[i - 1]);
                assert_true(bases[i - 1] - (bases[i] + step * cb) <= 2 * cb);
            }
        } else if (windows) {
            print_message("[ did not apply ] growths mapped below each other: %s places "
                          "mappings itself\n",
                          placer);
        }
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
        assert_int_equal(stats_of(pool).live, 0);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_destroy(pool);
    }
    free(items);
    assert_int_equal(env->errors.count, 0);
}

/* Chunks a growth mapped that never became current go back first on trim,
 * newest first, down to the initial capacity; the pool works on. */
static void test_pool_trim_returns_chunks_a_growth_never_opened(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 64});
    fm_pool_stats initial = stats_of(pool);
    assert_true(fm_pool_reserve(pool, (uint32_t)initial.capacity * 8));
    fm_pool_stats grown = stats_of(pool);
    assert_int_equal(grown.bytes_reserved, env->alloc.live_bytes);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_set live;
    live_init(&live, 64);
    for (uint64_t i = 0; i < initial.capacity + 1; i++) live_alloc(&live, pool); /* opens one */
    size_t released = fm_pool_trim(pool);
    fm_pool_stats after = stats_of(pool);
    assert_true(released >= (grown.chunk_count - initial.chunk_count - 1) * grown.chunk_bytes);
    assert_int_equal(after.bytes_reserved, grown.bytes_reserved - released);
    assert_int_equal(after.bytes_reserved, env->alloc.live_bytes);
    assert_int_equal(after.chunk_count, initial.chunk_count + 1);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_verify_all(&live);
    /* It grows again as before. */
    for (uint64_t i = 0; i < initial.capacity * 4; i++) live_alloc(&live, pool);
    live_verify_all(&live);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

/* ------------------------------------ a growth's chunks and the OS (issue 22) */

/* What a trimmed chunk of a growth whose other chunks are still held leaves
 * with the OS: nothing on POSIX (unmapped alone); on Windows, whose
 * VirtualFree releases only whole reservations, its address space, its
 * memory decommitted. */
#ifdef _WIN32
#define OS_TRIMMED_IN_A_HELD_GROWTH FM_TEST_OS_RESERVED
#else
#define OS_TRIMMED_IN_A_HELD_GROWTH FM_TEST_OS_FREE
#endif

enum { GROWTH_CHUNKS = 7 };

typedef struct grown_pool {
    fm_pool *pool;
    size_t per, cb;
    uintptr_t first;                /* the first chunk, made at create */
    uintptr_t chunk[GROWTH_CHUNKS]; /* one growth's chunks, in its mapping's order */
    live_set live;
} grown_pool;

/* A pool of the OS's chunks (the default allocator) with one chunk from
 * create and GROWTH_CHUNKS more from one growth, of which the first three
 * hand out items (kept in g->live): one live item stays in the first chunk,
 * so trim may take every chunk of the growth. */
static void grown_pool_make(grown_pool *g, fm_sync sync) {
    memset(g, 0, sizeof *g);
    g->pool = fm_pool_create(&(fm_pool_desc){.name = "grown", .item_size = 1024,
                                             .initial_capacity = 1, .sync = sync});
    assert_non_null(g->pool);
    fm_pool_stats s = stats_of(g->pool);
    g->per = (size_t)s.items_per_chunk;
    g->cb = (size_t)s.chunk_bytes;
    assert_int_equal(s.chunk_count, 1);
    live_init(&g->live, 1024);
    uintptr_t mask = ~(uintptr_t)(g->cb - 1);
    g->first = (uintptr_t)live_alloc(&g->live, g->pool) & mask; /* the current chunk */
    assert_true(fm_pool_reserve(g->pool, (uint32_t)(g->per * (GROWTH_CHUNKS + 1))));
    assert_int_equal(stats_of(g->pool).chunk_count, GROWTH_CHUNKS + 1);
    assert_int_equal(stats_of(g->pool).grow_events, s.grow_events + 1);
    while (g->live.count < g->per * 4) live_alloc(&g->live, g->pool);
    /* One mapping, opened from its start on: the lowest of the growth's
     * chunks holding an item is its first, and the others follow it. */
    g->chunk[0] = UINTPTR_MAX;
    for (size_t i = 0; i < g->live.count; i++) {
        uintptr_t base = (uintptr_t)g->live.items[i] & mask;
        if (base != g->first && base < g->chunk[0]) g->chunk[0] = base;
    }
    for (size_t c = 0; c < GROWTH_CHUNKS; c++) g->chunk[c] = g->chunk[0] + c * g->cb;
    for (size_t i = 0; i < g->live.count; i++) {
        uintptr_t base = (uintptr_t)g->live.items[i] & mask;
        assert_true(base == g->first || (base - g->chunk[0]) / g->cb < GROWTH_CHUNKS);
    }
    for (size_t c = 0; c < GROWTH_CHUNKS; c++)
        assert_int_equal(fm_test_os_state_of((void *)g->chunk[c]), FM_TEST_OS_COMMITTED);
}

/* Frees every item of g->live that lies in chunk base (base 0: all). */
static void grown_pool_free_in(grown_pool *g, uintptr_t base) {
    for (size_t i = g->live.count; i-- > 0;) {
        if (base && ((uintptr_t)g->live.items[i] & ~(uintptr_t)(g->cb - 1)) != base) continue;
        fm_pool_free(g->pool, live_take(&g->live, i));
    }
}

static void assert_os_state(uintptr_t chunk, fm_test_os_state want) {
    fm_test_os_state got = fm_test_os_state_of((void *)chunk);
    if (got != want) fail_msg("chunk %p: OS state %d, expected %d", (void *)chunk, (int)got, (int)want);
}

/* Whether an item of g->live lies in chunk base. */
static bool grown_pool_holds(const grown_pool *g, uintptr_t base) {
    for (size_t i = 0; i < g->live.count; i++)
        if (((uintptr_t)g->live.items[i] & ~(uintptr_t)(g->cb - 1)) == base) return true;
    return false;
}

/* After a trim that took every empty chunk: the growth's chunks that hold
 * an item are the OS's still, the others gone (their memory; on Windows
 * their address space too once none of the growth's is held). */
static void assert_growth_trimmed(const grown_pool *g) {
    bool held = false;
    for (size_t c = 0; c < GROWTH_CHUNKS; c++) held |= grown_pool_holds(g, g->chunk[c]);
    for (size_t c = 0; c < GROWTH_CHUNKS; c++)
        assert_os_state(g->chunk[c], grown_pool_holds(g, g->chunk[c]) ? FM_TEST_OS_COMMITTED
                                     : held ? OS_TRIMMED_IN_A_HELD_GROWTH
                                            : FM_TEST_OS_FREE);
}

/* Trim after a growth: every chunk it takes goes back to the OS at once,
 * opened or never opened; the growth's mapping, which Windows releases only
 * whole, goes with its last chunk. Under every policy (LOCKFREE's chunks
 * carry link arrays). */
static void test_pool_trim_gives_a_growths_chunks_back_to_the_os_and_its_mapping_with_the_last(
    void **state) {
    fm_test_env *env = *state;
    if (!fm_test_os_states_known("the OS state of trimmed chunks")) return;
    const fm_sync syncs[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE, FM_SYNC_LOCKFREE};
    for (size_t k = 0; k < sizeof syncs / sizeof syncs[0]; k++) {
        grown_pool g;
        grown_pool_make(&g, syncs[k]);
        /* Chunk 1 keeps an item; the rest of the growth empties. */
        grown_pool_free_in(&g, g.chunk[0]);
        for (size_t c = 2; c < GROWTH_CHUNKS; c++) grown_pool_free_in(&g, g.chunk[c]);
        assert_true(grown_pool_holds(&g, g.chunk[1]));
        fm_pool_flush_thread_cache(g.pool);
        fm_pool_stats before = stats_of(g.pool);
        size_t released = fm_pool_trim(g.pool);
        assert_int_equal(released, (GROWTH_CHUNKS - 1) * g.cb);
        assert_int_equal(stats_of(g.pool).bytes_reserved, before.bytes_reserved - released);
        assert_int_equal(stats_of(g.pool).chunk_count, 2);
        assert_growth_trimmed(&g);
        assert_os_state(g.chunk[0], OS_TRIMMED_IN_A_HELD_GROWTH);
        assert_os_state(g.first, FM_TEST_OS_COMMITTED);
        assert_null(fm_pool_of((void *)g.chunk[0]));
        assert_int_equal(fm_pool_check(g.pool), FM_OK);
        live_verify_all(&g.live);
        /* The growth's last chunk goes: so does all of its mapping. */
        grown_pool_free_in(&g, g.chunk[1]);
        fm_pool_flush_thread_cache(g.pool);
        assert_int_equal(fm_pool_trim(g.pool), g.cb);
        assert_growth_trimmed(&g);
        assert_os_state(g.chunk[1], FM_TEST_OS_FREE);
        assert_os_state(g.first, FM_TEST_OS_COMMITTED);
        /* It grows and trims again as before. */
        for (size_t i = 0; i < g.per * 3; i++) live_alloc(&g.live, g.pool);
        live_verify_all(&g.live);
        assert_int_equal(fm_pool_check(g.pool), FM_OK);
        grown_pool_free_in(&g, 0);
        fm_pool_flush_thread_cache(g.pool);
        fm_pool_trim(g.pool);
        assert_int_equal(stats_of(g.pool).chunk_count, 1);
        live_deinit(&g.live);
        fm_pool_destroy(g.pool);
        assert_os_state(g.first, FM_TEST_OS_FREE);
    }
    assert_int_equal(env->errors.count, 0);
}

/* Reset keeps a growth's chunks (opened or not) with the OS; trim after it
 * gives back the empty ones; destroy gives back every chunk and mapping
 * whatever state it is in: a growth part trimmed (on Windows: part
 * decommitted), part holding items, and a growth never opened. */
static void test_pool_reset_trim_and_destroy_after_a_growth_give_every_chunk_back(void **state) {
    fm_test_env *env = *state;
    if (!fm_test_os_states_known("the OS state of a pool's chunks")) return;
    grown_pool g;
    grown_pool_make(&g, FM_SYNC_NONE);
    fm_pool_reset(g.pool);
    live_deinit(&g.live);
    live_init(&g.live, 1024);
    assert_int_equal(stats_of(g.pool).live, 0);
    assert_int_equal(stats_of(g.pool).chunk_count, GROWTH_CHUNKS + 1);
    for (size_t c = 0; c < GROWTH_CHUNKS; c++) assert_os_state(g.chunk[c], FM_TEST_OS_COMMITTED);
    /* Items again, in two or three chunks; trim takes the other ones. */
    for (size_t i = 0; i < g.per * 2; i++) live_alloc(&g.live, g.pool);
    size_t holding = 0;
    for (size_t c = 0; c < GROWTH_CHUNKS; c++) holding += grown_pool_holds(&g, g.chunk[c]);
    holding += grown_pool_holds(&g, g.first);
    assert_true(holding >= 2);
    assert_int_equal(fm_pool_trim(g.pool), (GROWTH_CHUNKS + 1 - holding) * g.cb);
    assert_growth_trimmed(&g);
    live_verify_all(&g.live);
    /* A second growth, never opened. */
    assert_true(fm_pool_reserve(g.pool, (uint32_t)(stats_of(g.pool).capacity + g.per * 4)));
    live_verify_all(&g.live);
    assert_int_equal(fm_pool_check(g.pool), FM_OK);
    live_deinit(&g.live);
    fm_test_errors_reset(&env->errors);
    fm_pool_destroy(g.pool); /* the items go as leaks */
    assert_int_equal(env->errors.last, FM_ERR_LEAK);
    for (size_t c = 0; c < GROWTH_CHUNKS; c++) assert_os_state(g.chunk[c], FM_TEST_OS_FREE);
    assert_os_state(g.first, FM_TEST_OS_FREE);
}

/* ================================================================== trim */

static void test_pool_trim_after_freeing_everything_releases_grown_chunks(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 64});
    fm_pool_stats initial = stats_of(pool);
    uint32_t resolved_initial = fm_pool_get_desc(pool).initial_capacity;
    live_set live;
    live_init(&live, 64);
    for (uint64_t i = 0; i < initial.capacity * 6; i++) live_alloc(&live, pool);
    live_release_all(&live, pool);
    fm_pool_stats before = stats_of(pool);
    assert_true(before.chunk_count > 1);
    size_t backing_before = env->alloc.live_bytes;

    size_t released = fm_pool_trim(pool);
    fm_pool_stats after = stats_of(pool);
    assert_true(released > 0);
    assert_int_equal(after.bytes_reserved, before.bytes_reserved - released);
    assert_int_equal(env->alloc.live_bytes, backing_before - released);
    assert_true(after.chunk_count < before.chunk_count);
    assert_true(after.capacity >= resolved_initial);
    assert_true(after.capacity >= initial.capacity);
    assert_int_equal(after.trim_events, 1);
    assert_int_equal(after.bytes_trimmed, released);
    assert_int_equal(after.bytes_overhead, after.bytes_reserved - after.capacity * 64);
    assert_int_equal(fm_pool_check(pool), FM_OK);

    /* Nothing left to give back. */
    assert_int_equal(fm_pool_trim(pool), 0);
    fm_pool_stats again = stats_of(pool);
    assert_stats_same(&after, &again, 0);

    /* The pool grows again as needed. */
    for (uint64_t i = 0; i < initial.capacity * 3; i++) live_alloc(&live, pool);
    live_verify_all(&live);
    live_release_all(&live, pool);
    assert_true(fm_pool_trim(pool) > 0);
    assert_int_equal(stats_of(pool).trim_events, 2);
    live_deinit(&live);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, pool);
}

static void test_pool_trim_never_goes_below_initial_capacity(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 64,
                                                        .initial_capacity = 3000});
    fm_pool_stats initial = stats_of(pool);
    assert_true(initial.capacity >= 3000);
    /* Fresh pool: nothing above the initial capacity to release. */
    assert_int_equal(fm_pool_trim(pool), 0);
    assert_int_equal(stats_of(pool).trim_events, 0);

    live_set live;
    live_init(&live, 64);
    for (uint64_t i = 0; i < initial.capacity * 3; i++) live_alloc(&live, pool);
    live_release_all(&live, pool);
    fm_pool_trim(pool);
    fm_pool_stats after = stats_of(pool);
    assert_true(after.capacity >= 3000);
    assert_true(after.capacity >= initial.capacity);
    /* The initial capacity is still served without growth. */
    for (int i = 0; i < 3000; i++) live_alloc(&live, pool);
    assert_int_equal(stats_of(pool).grow_events, after.grow_events);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_trim_keeps_chunks_with_live_items(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 100});
    uint64_t cap = stats_of(pool).capacity;
    live_set all, kept;
    live_init(&all, 100);
    live_init(&kept, 100);
    for (uint64_t i = 0; i < cap * 8; i++) live_alloc(&all, pool);
    /* Keep every 97th item, wherever it lives; free the rest. */
    size_t n = all.count;
    for (size_t i = n; i-- > 0;) {
        if (i % 97 == 0) {
            void *item = live_take(&all, i);
            live_add(&kept, item);
        } else {
            live_release(&all, pool, i);
        }
    }
    assert_int_equal(all.count, 0);
    fm_pool_stats before = stats_of(pool);
    assert_int_equal(before.live, kept.count);
    size_t released = fm_pool_trim(pool);
    fm_pool_stats after = stats_of(pool);
    assert_int_equal(after.bytes_reserved, before.bytes_reserved - released);
    assert_int_equal(after.live, kept.count);
    assert_true(after.capacity >= kept.count);
    live_verify_all(&kept);
    for (size_t i = 0; i < kept.count; i++) assert_true(fm_pool_owns(pool, kept.items[i]));
    visit_log v = {.pool = pool, .cap = kept.count};
    v.seen = calloc(v.cap + 1, sizeof *v.seen);
    fm_pool_foreach(pool, visit_record, &v);
    assert_visited_exactly(&v, &kept);
    free(v.seen);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_release_all(&kept, pool);
    live_deinit(&kept);
    live_deinit(&all);
    destroy_clean(env, pool);
}

static bool inside_a_backing_block(const fm_test_allocator *a, const void *p) {
    for (size_t b = 0; b < a->block_count; b++) {
        uintptr_t lo = (uintptr_t)a->blocks[b].ptr;
        if ((uintptr_t)p >= lo && (uintptr_t)p < lo + a->blocks[b].size) return true;
    }
    return false;
}

static void test_pool_pointer_into_a_trimmed_chunk_is_foreign(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "trimmed", .item_size = 64});
    uint64_t cap = stats_of(pool).capacity;
    live_set live;
    live_init(&live, 64);
    for (uint64_t i = 0; i < cap * 4; i++) live_alloc(&live, pool);
    void **former = malloc(live.count * sizeof *former);
    assert_non_null(former);
    size_t n = live.count;
    memcpy(former, live.items, n * sizeof *former);
    live_release_all(&live, pool);
    assert_true(fm_pool_trim(pool) > 0);
    /* Items whose memory went back to the allocator are foreign now; the
     * pool must say so without touching that memory. */
    size_t checked = 0;
    for (size_t i = 0; i < n && checked < 8; i += 7) {
        if (inside_a_backing_block(&env->alloc, former[i])) continue;
        assert_false(fm_pool_owns(pool, former[i]));
        expect_bad_free(env, pool, former[i], FM_ERR_FOREIGN_POINTER);
        checked++;
    }
    assert_true(checked > 0);
    free(former);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_trim_with_the_system_allocator_works(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.item_size = 256});
    assert_non_null(pool);
    fm_pool_stats s = stats_of(pool);
    live_set live;
    live_init(&live, 256);
    for (uint64_t i = 0; i < s.capacity * 4; i++) live_alloc(&live, pool);
    live_verify_all(&live);
    live_release_all(&live, pool);
    uint64_t reserved_before = stats_of(pool).bytes_reserved;
    size_t released = fm_pool_trim(pool);
    assert_true(released > 0);
    assert_int_equal(stats_of(pool).bytes_reserved, reserved_before - released);
    assert_true(stats_of(pool).capacity >= s.capacity);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_deinit(&live);
    fm_pool_destroy(pool);
    assert_int_equal(env->errors.count, 0);
}

/* ================================================================= stats */

static void test_pool_stats_counters_stay_consistent(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 16,
                                                        .growth = FM_GROWTH_FIXED,
                                                        .initial_capacity = 16});
    uint64_t cap = stats_of(pool).capacity;
    live_set live;
    live_init(&live, 16);
    for (uint64_t i = 0; i < cap; i++) live_alloc(&live, pool);
    assert_null(fm_pool_alloc(pool));
    assert_null(fm_pool_alloc(pool));
    void *freed[5];
    for (int i = 0; i < 5; i++) {
        freed[i] = live_take(&live, 0);
        fm_pool_free(pool, freed[i]);
    }
    fm_pool_free(pool, freed[0]);
    long long on_stack = 0;
    fm_pool_free(pool, &on_stack);
    fm_pool_free(pool, byte_offset(live.items[0], 1));
    for (int i = 0; i < 3; i++) live_alloc(&live, pool);

    fm_pool_stats s = stats_of(pool);
    assert_int_equal(s.total_allocs, cap + 3);
    assert_int_equal(s.total_frees, 5);
    assert_int_equal(s.live, cap - 2);
    assert_int_equal(s.live, s.total_allocs - s.total_frees);
    assert_int_equal(s.peak_live, cap);
    assert_int_equal(s.failed_allocs, 2);
    assert_int_equal(s.misuse_count, 3);
    assert_int_equal(s.grow_events, 0);
    assert_int_equal(s.bytes_overhead, s.bytes_reserved - s.capacity * s.item_size);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

/* Site tracking (FM_TRACK_SITES, Debug builds) adds a file pointer and a line
 * per slot on top of the pool's own metadata. */
#ifdef FM_TRACK_SITES
#define OVERHEAD_PER_ITEM_LIMIT (8 + 2 * sizeof(void *))
#else
#define OVERHEAD_PER_ITEM_LIMIT 8
#endif

static void test_pool_overhead_for_16_byte_items_is_at_most_8_bytes_per_item(void **state) {
    fm_test_env *env = *state;
    const uint32_t capacities[] = {4096, 65536};
    for (size_t k = 0; k < 2; k++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 16,
                                                            .initial_capacity = capacities[k]});
        fm_pool_stats s = stats_of(pool);
        assert_int_equal(s.bytes_overhead, s.bytes_reserved - s.capacity * 16);
        if (s.bytes_overhead > OVERHEAD_PER_ITEM_LIMIT * s.capacity) {
            print_error("capacity %llu (%llu chunks of %llu slots): overhead %llu bytes\n",
                        (unsigned long long)s.capacity, (unsigned long long)s.chunk_count,
                        (unsigned long long)s.items_per_chunk,
                        (unsigned long long)s.bytes_overhead);
            fail();
        }
        destroy_clean(env, pool);
    }
}

static void test_pool_bytes_reserved_matches_the_backing_allocator(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 72});
    live_set live;
    live_init(&live, 72);
    assert_int_equal(stats_of(pool).bytes_reserved, env->alloc.live_bytes);
    for (int g = 0; g < 4; g++) {
        fill_until_growth(pool, &live);
        assert_int_equal(stats_of(pool).bytes_reserved, env->alloc.live_bytes);
    }
    assert_true(fm_pool_reserve(pool, (uint32_t)stats_of(pool).capacity * 2));
    assert_int_equal(stats_of(pool).bytes_reserved, env->alloc.live_bytes);
    live_release_all(&live, pool);
    fm_pool_trim(pool);
    assert_int_equal(stats_of(pool).bytes_reserved, env->alloc.live_bytes);
    live_deinit(&live);
    destroy_clean(env, pool);
}

static void test_pool_chunks_are_power_of_two_sized_and_hold_their_items(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 56});
    live_set live;
    live_init(&live, 56);
    for (int g = 0; g < 3; g++) fill_until_growth(pool, &live);
    fm_pool_stats s = stats_of(pool);
    assert_true(FM_IS_POW2(s.chunk_bytes));
    assert_true(s.items_per_chunk * s.stride <= s.chunk_bytes);
    assert_true(s.chunk_count * s.chunk_bytes <= s.bytes_reserved);
    /* Every item lies in a chunk-aligned window inside some backing block. */
    for (size_t i = 0; i < live.count; i++) {
        uintptr_t base = (uintptr_t)live.items[i] & ~(uintptr_t)(s.chunk_bytes - 1);
        bool inside = false;
        for (size_t b = 0; b < env->alloc.block_count; b++) {
            uintptr_t lo = (uintptr_t)env->alloc.blocks[b].ptr;
            uintptr_t hi = lo + env->alloc.blocks[b].size;
            if (base >= lo && base + s.chunk_bytes <= hi) inside = true;
        }
        assert_true(inside);
    }
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

/* ================================================================ destroy */

static void test_pool_destroy_runs_dtor_on_live_items_and_reports_the_leak_count(
    void **state) {
    fm_test_env *env = *state;
    hook_log hooks = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "leaky",
                                                        .item_size = 32,
                                                        .dtor = hook_dtor,
                                                        .user = &hooks});
    live_set live;
    live_init(&live, 32);
    for (int i = 0; i < 40; i++) live_add(&live, fm_pool_new(pool));
    for (int i = 0; i < 3; i++) fm_pool_delete(pool, live_take(&live, 0));
    assert_int_equal(hooks.dtor_calls, 3);
    assert_int_equal(live.count, 37);
    fm_clear_error();
    fm_test_errors_reset(&env->errors);

    fm_pool_destroy(pool);
    assert_int_equal(hooks.dtor_calls, 40);
    assert_ptr_equal(hooks.dtor_user, &hooks);
    /* Each live item got the dtor once. */
    void **seen = &hooks.dtor_items[3];
    qsort(seen, 37, sizeof *seen, fm_test_cmp_ptr);
    for (size_t i = 0; i < 37; i++) {
        assert_true(live_contains(&live, seen[i]));
        if (i) assert_ptr_not_equal(seen[i], seen[i - 1]);
    }
    assert_int_equal(fm_last_error(), FM_ERR_LEAK);
    assert_true(env->errors.by_code[FM_ERR_LEAK] >= 1);
    assert_true(fm_test_contains(env->errors.log, "leaky"));
    if (!contains_number(env->errors.log, 37)) {
        print_error("leak report does not give the count 37:\n%s", env->errors.log);
        fail();
    }
    live_deinit(&live);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_destroy_lists_allocation_sites_when_tracking(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "sites", .item_size = 32});
    int line = __LINE__ + 1;
    void *a = fm_pool_alloc(pool);
    void *b = fm_pool_alloc_at(pool, "custom_site.c", 4242);
    assert_non_null(a);
    assert_non_null(b);
    fm_pool_destroy(pool);
    assert_int_equal(fm_last_error(), FM_ERR_LEAK);
#ifdef FM_TRACK_SITES
    char site[64];
    snprintf(site, sizeof site, "test_pool.c:%d", line);
    if (!fm_test_contains(env->errors.log, site) ||
        !fm_test_contains(env->errors.log, "custom_site.c:4242")) {
        print_error("leak report lacks %s or custom_site.c:4242:\n%s", site, env->errors.log);
        fail();
    }
#else
    (void)line;
#endif
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_silent_destroy_runs_dtors_without_reporting(void **state) {
    fm_test_env *env = *state;
    hook_log hooks = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 32,
                                                        .silent_destroy = true,
                                                        .dtor = hook_dtor,
                                                        .user = &hooks});
    for (int i = 0; i < 7; i++) assert_non_null(fm_pool_alloc(pool));
    fm_clear_error();
    fm_pool_destroy(pool);
    assert_int_equal(hooks.dtor_calls, 7);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_destroy_without_live_items_reports_nothing(void **state) {
    fm_test_env *env = *state;
    hook_log hooks = {0};
    fm_pool *pool = create_counted(env, (fm_pool_desc){.item_size = 32,
                                                        .dtor = hook_dtor,
                                                        .user = &hooks});
    void *a = fm_pool_alloc(pool);
    fm_pool_free(pool, a);
    fm_pool_destroy(pool);
    assert_int_equal(hooks.dtor_calls, 0);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_destroy_of_null_is_a_no_op(void **state) {
    fm_test_env *env = *state;
    fm_pool_destroy(NULL);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
}

/* ============================================================ typed sugar */

typedef struct particle {
    float pos[3];
    float vel[3];
    uint32_t color;
} particle;

typedef struct wide_particle {
    alignas(64) unsigned char bytes[72];
} wide_particle;

FM_POOL_DECLARE_TYPED(particle, particle_pool)
/* The caller's line through the typed names (pool.h). */
#define particle_pool_alloc(pool) particle_pool_alloc_at((pool), FM_SITE)
#define particle_pool_new(pool) particle_pool_new_at((pool), FM_SITE)
enum { particle_pool_declared_at = __LINE__ - 4 };

static void test_pool_desc_macro_takes_size_align_and_name_from_the_type(void **state) {
    fm_test_env *env = *state;
    fm_pool_desc d = FM_POOL_DESC(particle, .initial_capacity = 8);
    assert_int_equal(d.item_size, sizeof(particle));
    assert_int_equal(d.item_align, alignof(particle));
    assert_int_equal(d.initial_capacity, 8);
    d.allocator = fm_test_allocator_get(&env->alloc);
    fm_pool *pool = fm_pool_create(&d);
    assert_non_null(pool);
    assert_string_equal(fm_pool_name(pool), "particle");
    assert_string_equal(fm_pool_get_desc(pool).name, "particle");
    assert_string_equal(stats_of(pool).name, "particle");
    assert_int_equal(stats_of(pool).item_size, sizeof(particle));
    assert_true(stats_of(pool).capacity >= 8);
    fm_pool_destroy(pool);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_desc_macro_name_override_wins_without_warnings(void **state) {
    fm_test_env *env = *state;
    /* This file builds with -Werror: an override that warned would not build. */
    fm_pool_desc w = FM_POOL_DESC(wide_particle, .name = "sparks", .max_capacity = 64);
    assert_string_equal(w.name, "sparks");
    assert_int_equal(w.item_size, sizeof(wide_particle));
    assert_int_equal(w.item_align, 64);
    assert_int_equal(w.max_capacity, 64);
    w.allocator = fm_test_allocator_get(&env->alloc);
    fm_pool *pool = fm_pool_create(&w);
    assert_non_null(pool);
    assert_string_equal(fm_pool_name(pool), "sparks");
    fm_pool_destroy(pool);

    fm_pool *direct = fm_pool_create(&FM_POOL_DESC(wide_particle, .name = "direct",
                                                    .allocator = w.allocator));
    assert_non_null(direct);
    assert_string_equal(fm_pool_name(direct), "direct");
    void *item = fm_pool_alloc(direct);
    assert_non_null(item);
    assert_true(fm_is_aligned(item, 64));
    memset(item, 0x3C, sizeof(wide_particle));
    fm_pool_free(direct, item);
    fm_pool_destroy(direct);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void particle_ctor(void *item, void *user) {
    particle *p = item;
    p->color = 0xFFAA00FFu;
    (*(int *)user)++;
}

static void particle_dtor(void *item, void *user) {
    particle *p = item;
    assert_int_equal(p->color, 0xFFAA00FFu);
    (*(int *)user) += 100;
}

static void test_pool_typed_wrappers_alloc_free_new_and_delete(void **state) {
    fm_test_env *env = *state;
    int calls = 0;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "particle",
                                                        .item_size = sizeof(particle),
                                                        .item_align = alignof(particle),
                                                        .ctor = particle_ctor,
                                                        .dtor = particle_dtor,
                                                        .user = &calls});
    particle *a = particle_pool_alloc(pool);
    assert_non_null(a);
    assert_int_equal(calls, 0);
    a->pos[0] = 1.0f;
    particle *b = particle_pool_new(pool);
    assert_non_null(b);
    assert_int_equal(calls, 1);
    assert_int_equal(b->color, 0xFFAA00FFu);
    assert_true(fm_pool_owns(pool, a) && fm_pool_owns(pool, b));
    particle_pool_delete(pool, b);
    assert_int_equal(calls, 101);
    particle_pool_free(pool, a);
    assert_int_equal(calls, 101);
    destroy_clean(env, pool);
}

/* Leaks made through the typed wrappers name the caller's lines (the site
 * macros above); the typed function itself, (particle_pool_alloc)(pool),
 * can only name its FM_POOL_DECLARE_TYPED line. */
static void test_pool_typed_wrappers_record_the_callers_file_and_line(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, FM_POOL_DESC(particle, .name = "typed_sites"));
    int alloc_line = __LINE__ + 1;
    particle *a = particle_pool_alloc(pool);
    int new_line = __LINE__ + 1;
    particle *b = particle_pool_new(pool);
    particle *c = (particle_pool_alloc)(pool);
    particle *d = particle_pool_alloc_at(pool, "level.c", 77);
    assert_true(a && b && c && d);
    fm_pool_destroy(pool);
    assert_int_equal(env->errors.by_code[FM_ERR_LEAK], 1);
#ifdef FM_TRACK_SITES
    char want[3][64];
    snprintf(want[0], sizeof want[0], "test_pool.c:%d", alloc_line);
    snprintf(want[1], sizeof want[1], "test_pool.c:%d", new_line);
    snprintf(want[2], sizeof want[2], "test_pool.c:%d", particle_pool_declared_at);
    for (int i = 0; i < 3; i++) fm_test_expect_contains(env->errors.message, want[i]);
    fm_test_expect_contains(env->errors.message, "1 from level.c:77");
#else
    (void)alloc_line, (void)new_line;
    fm_test_expect_contains(env->errors.message, "4 live item(s)");
#endif
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ======================================================= fault injection */

static void check_create_under_faults(fm_test_env *env, fm_pool_desc desc, bool fail_after) {
    bool created = false;
    uint64_t n;
    for (n = 1; n <= 64 && !created; n++) {
        fm_test_errors_reset(&env->errors);
        fm_clear_error();
        if (fail_after) {
            fm_test_allocator_fail_from(&env->alloc, n);
        } else {
            fm_test_allocator_fail_nth(&env->alloc, n);
        }
        fm_pool_desc d = counted(env, desc);
        fm_pool *pool = fm_pool_create(&d);
        bool injected = env->alloc.failed_calls > 0;
        fm_test_allocator_recover(&env->alloc);
        if (pool) {
            /* Succeeds once the fault lands beyond create's calls (or, with a
             * single fault, if create found another way). */
            if (fail_after) assert_false(injected);
            if (!injected) assert_true(n > 1);
            live_set live;
            live_init(&live, desc.item_size);
            for (int i = 0; i < 3; i++) live_alloc(&live, pool);
            live_verify_all(&live);
            live_release_all(&live, pool);
            live_deinit(&live);
            destroy_clean(env, pool);
            created = true;
        } else {
            if (fm_last_error() != FM_ERR_OUT_OF_MEMORY) {
                print_error("fault at call %llu: create gave %s\n", (unsigned long long)n,
                            fm_error_name(fm_last_error()));
            }
            assert_true(injected);
            assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
            assert_int_equal(env->errors.by_code[FM_ERR_OUT_OF_MEMORY], 1);
            fm_test_allocator_assert_clean(&env->alloc);
        }
        env->alloc.failed_calls = 0;
    }
    assert_true(created);
}

static void test_pool_create_fails_cleanly_at_every_backing_call(void **state) {
    fm_test_env *env = *state;
    const fm_pool_desc descs[] = {
        {.item_size = 64},
        {.name = "several_chunks", .item_size = 64, .initial_capacity = 5000},
        {.name = "prefaulted", .item_size = 64, .initial_capacity = 5000, .prefault = true},
        {.name = "big_fixed", .item_size = 100000, .growth = FM_GROWTH_FIXED,
         .initial_capacity = 3},
    };
    for (size_t k = 0; k < sizeof descs / sizeof descs[0]; k++) {
        check_create_under_faults(env, descs[k], false);
        check_create_under_faults(env, descs[k], true);
    }
}

/* The pool is full; every alloc needs growth. Sweep the fault over every
 * backing call that growth makes. */
static void sweep_growth_faults(fm_test_env *env, fm_pool *pool, live_set *live) {
    bool grown = false;
    for (uint64_t n = 1; n <= 256 && !grown; n++) {
        fm_pool_stats before = stats_of(pool);
        assert_int_equal(before.live, before.capacity);
        fm_test_errors_reset(&env->errors);
        fm_clear_error();
        fm_test_allocator_fail_nth(&env->alloc, n);
        env->alloc.failed_calls = 0;
        void *item = fm_pool_alloc(pool);
        bool injected = env->alloc.failed_calls > 0;
        fm_test_allocator_recover(&env->alloc);
        if (item) {
            /* Growth got past the fault (or around it). */
            if (!injected) assert_true(n > 1);
            live_add(live, item);
            grown = true;
        } else {
            assert_true(injected);
            assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
            assert_int_equal(env->errors.by_code[FM_ERR_OUT_OF_MEMORY], 1);
            assert_true(fm_test_contains(env->errors.message, fm_pool_name(pool)));
            fm_pool_stats after = stats_of(pool);
            assert_int_equal(after.capacity, before.capacity);
            assert_int_equal(after.chunk_count, before.chunk_count);
            assert_int_equal(after.live, before.live);
            assert_int_equal(after.grow_events, before.grow_events);
            assert_int_equal(after.failed_allocs, before.failed_allocs + 1);
            assert_int_equal(after.total_allocs, before.total_allocs);
            live_verify_all(live);
            for (size_t i = 0; i < live->count; i += 17) {
                assert_true(fm_pool_owns(pool, live->items[i]));
            }
            assert_int_equal(fm_pool_check(pool), FM_OK);
        }
    }
    assert_true(grown);
    env->alloc.failed_calls = 0;
}

static void test_pool_growth_failure_keeps_items_and_recovers(void **state) {
    fm_test_env *env = *state;
    const fm_pool_desc descs[] = {
        {.name = "geo_faults", .item_size = 48},
        {.name = "lin_faults", .item_size = 48, .growth = FM_GROWTH_LINEAR, .grow_step = 5},
        {.name = "pre_faults", .item_size = 48, .prefault = true, .grow_factor = 1.5f},
    };
    for (size_t k = 0; k < sizeof descs / sizeof descs[0]; k++) {
        fm_pool *pool = create_counted(env, descs[k]);
        live_set live;
        live_init(&live, 48);
        for (int g = 0; g < 4; g++) {
            while (stats_of(pool).live < stats_of(pool).capacity) live_alloc(&live, pool);
            /* Every backing call fails: alloc keeps failing until recovery. */
            fm_test_allocator_fail_from(&env->alloc, 1);
            assert_null(fm_pool_alloc(pool));
            assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
            assert_null(fm_pool_new(pool));
            assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
            fm_test_allocator_recover(&env->alloc);
            /* Then one fault at each call growth makes, then success. */
            sweep_growth_faults(env, pool, &live);
            live_verify_all(&live);
        }
        assert_int_equal(env->alloc.errors, 0);
        live_release_all(&live, pool);
        live_deinit(&live);
        destroy_clean(env, pool);
    }
}

static void test_pool_reserve_under_fault_returns_false_and_keeps_capacity(void **state) {
    fm_test_env *env = *state;
    const fm_pool_desc descs[] = {
        {.name = "reserve_faults", .item_size = 48},
        {.name = "reserve_prefault", .item_size = 48, .prefault = true},
        {.name = "reserve_linear", .item_size = 48, .growth = FM_GROWTH_LINEAR},
    };
    for (size_t k = 0; k < sizeof descs / sizeof descs[0]; k++) {
        fm_pool *pool = create_counted(env, descs[k]);
        live_set live;
        live_init(&live, 48);
        for (int i = 0; i < 10; i++) live_alloc(&live, pool);
        uint32_t target = (uint32_t)stats_of(pool).capacity * 8 + 3;
        bool reserved = false;
        for (uint64_t n = 1; n <= 128 && !reserved; n++) {
            fm_pool_stats before = stats_of(pool);
            fm_test_errors_reset(&env->errors);
            fm_clear_error();
            env->alloc.failed_calls = 0;
            fm_test_allocator_fail_nth(&env->alloc, n);
            bool ok = fm_pool_reserve(pool, target);
            bool injected = env->alloc.failed_calls > 0;
            fm_test_allocator_recover(&env->alloc);
            fm_pool_stats after = stats_of(pool);
            if (ok) {
                if (!injected) assert_true(n > 1);
                assert_true(after.capacity >= target);
                reserved = true;
            } else {
                assert_true(injected);
                assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
                assert_int_equal(env->errors.by_code[FM_ERR_OUT_OF_MEMORY], 1);
                assert_int_equal(after.capacity, before.capacity);
                assert_int_equal(after.chunk_count, before.chunk_count);
                assert_int_equal(after.bytes_reserved, before.bytes_reserved);
                assert_int_equal(after.bytes_reserved, env->alloc.live_bytes);
                assert_int_equal(after.live, before.live);
                live_verify_all(&live);
                assert_int_equal(fm_pool_check(pool), FM_OK);
            }
        }
        assert_true(reserved);
        /* Fail-from mode: nothing can be had, still unchanged. */
        fm_pool_stats before = stats_of(pool);
        fm_test_allocator_fail_from(&env->alloc, 1);
        assert_false(fm_pool_reserve(pool, target * 2));
        fm_test_allocator_recover(&env->alloc);
        assert_int_equal(stats_of(pool).capacity, before.capacity);
        assert_int_equal(stats_of(pool).chunk_count, before.chunk_count);
        assert_int_equal(stats_of(pool).bytes_reserved, before.bytes_reserved);
        while (stats_of(pool).live < stats_of(pool).capacity) live_alloc(&live, pool);
        live_verify_all(&live);
        live_release_all(&live, pool);
        live_deinit(&live);
        env->alloc.failed_calls = 0;
        destroy_clean(env, pool);
    }
}

/* ============================================================ generations */

/* A slot whose generation would wrap is retired for good: never handed out
 * again, capacity one lower, the pool consistent. The chunk layout puts slot
 * 0's meta word (live bit 31 | generation) at the very start of the chunk. */
static void test_pool_slot_whose_generation_would_wrap_is_retired(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "wrap", .item_size = 32,
                                                       .growth = FM_GROWTH_FIXED});
    fm_pool_stats s = stats_of(pool);
    uint8_t *first = fm_pool_alloc(pool);
    assert_non_null(first);
    uint32_t *meta0 = (uint32_t *)((uintptr_t)first & ~(uintptr_t)(s.chunk_bytes - 1));
    assert_true(*meta0 & 0x80000000u); /* live, in its first generation */

    /* One free short of the wrap: the slot is reused, its generation maxed. */
    *meta0 = 0xFFFFFFFEu;
    fm_pool_free(pool, first);
    assert_int_equal(*meta0, 0x7FFFFFFFu);
    assert_ptr_equal(fm_pool_alloc(pool), first);
    assert_int_equal(*meta0, 0xFFFFFFFFu);

    /* This free would wrap the generation: the slot retires. */
    fm_pool_free(pool, first);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(*meta0, 0u);
    fm_pool_stats after = stats_of(pool);
    assert_int_equal(after.capacity, s.capacity - 1);
    assert_int_equal(after.live, 0);
    assert_int_equal(after.total_frees, 2);
    assert_int_equal(fm_pool_check(pool), FM_OK);

    /* A second free of the retired slot is a double free; it is never reused. */
    expect_bad_free(env, pool, first, FM_ERR_DOUBLE_FREE);
    assert_false(fm_pool_owns(pool, first));
    live_set live;
    live_init(&live, 32);
    for (uint64_t i = 0; i < after.capacity; i++) {
        void *item = live_alloc(&live, pool);
        assert_ptr_not_equal(item, first);
    }
    assert_null(fm_pool_alloc(pool));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    live_verify_all(&live);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    live_release_all(&live, pool);
    live_deinit(&live);
    destroy_clean(env, pool);
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_pool_create_with_defaults_gives_one_usable_chunk),
        T(test_pool_slot_whose_generation_would_wrap_is_retired),
        T(test_pool_create_with_null_desc_fails_with_invalid_arg),
        T(test_pool_create_rejects_invalid_descs_with_invalid_arg),
        T(test_pool_desc_check_reports_null_and_takes_any_message_buffer),
        T(test_pool_create_accepts_boundary_descs),
        T(test_pool_create_accepts_the_largest_item_size),
        T(test_pool_get_desc_resolves_defaults),
        T(test_pool_get_desc_keeps_given_values),
        T(test_pool_keeps_its_own_copy_of_the_name),
        T(test_pool_name_is_the_desc_name_or_pool),
        T(test_pool_alloc_and_free_round_trip_updates_counters),
        T(test_pool_counters_see_the_waiting_freed_item_as_free),
        T(test_pool_alloc_function_and_site_forms_all_work),
        T(test_pool_new_runs_ctor_and_delete_runs_dtor_with_user),
        T(test_pool_new_and_delete_without_hooks_work),
        T(test_pool_free_of_null_is_a_silent_no_op),
        T(test_pool_double_free_is_reported_and_state_kept),
        T(test_pool_double_free_right_after_free_is_reported),
        T(test_pool_free_n_frees_a_batch_and_reports_each_bad_entry),
        T(test_pool_free_of_stack_pointer_is_reported_as_foreign),
        T(test_pool_free_of_malloc_block_is_reported_as_foreign),
        T(test_pool_free_of_another_pools_item_is_reported_as_foreign),
        T(test_pool_free_of_far_away_pointer_is_reported_as_foreign),
        T(test_pool_free_of_pointer_near_null_is_reported_as_foreign),
        T(test_pool_chunk_lookup_with_many_chunks_trim_and_regrowth),
        T(test_pool_chunk_occupancy_counts_each_chunks_live_items),
        T(test_pool_free_outside_the_current_chunk_is_served_next),
        T(test_pool_random_frees_over_the_current_chunk_and_others_are_served_next),
        T(test_pool_frees_in_a_row_in_the_current_chunk_come_back_last_first),
        T(test_pool_free_of_the_last_allocs_item_after_a_batch_and_a_trim_is_reported),
        T(test_pool_free_of_interior_pointer_is_reported),
        T(test_pool_delete_of_bad_pointers_never_runs_the_dtor),
        T(test_pool_free_of_any_non_item_address_in_a_chunk_is_reported),
        T(test_pool_owns_only_live_items_and_reports_nothing),
        T(test_pool_foreach_visits_every_live_item_exactly_once),
        T(test_pool_foreach_callback_may_free_the_item_it_is_given),
        T(test_pool_geometric_growth_multiplies_capacity_by_the_factor),
        T(test_pool_linear_growth_adds_grow_step_rounded_to_chunks),
        T(test_pool_unbounded_growth_uses_every_slot_of_every_chunk),
        T(test_pool_fixed_serves_exactly_its_capacity_then_reports_full),
        T(test_pool_max_capacity_bounds_live_items_for_every_growth),
        T(test_pool_every_item_honours_alignments_up_to_4096),
        T(test_pool_items_of_every_size_hold_their_whole_contents),
        T(test_pool_reserve_grows_capacity_at_least_to_the_request),
        T(test_pool_grow_ahead_grows_short_pools_and_counts_it_apart),
        T(test_pool_grow_ahead_respects_fixed_max_capacity_and_refusals),
        T(test_pool_reserve_on_fixed_pool_above_capacity_fails_and_changes_nothing),
        T(test_pool_reserve_above_max_capacity_fails),
        T(test_pool_reserve_with_prefault_works),
        T(test_pool_growth_by_thousands_of_chunks_touches_only_a_few_pages),
        T(test_pool_allocations_after_a_prefaulted_reserve_take_no_page_fault),
        T(test_os_reserve_below_takes_the_free_range_below_else_one_elsewhere),
        T(test_pool_create_maps_the_window_its_first_growths_take_from),
        T(test_pool_growths_take_their_chunks_from_a_window),
        T(test_pool_frees_into_chunks_that_share_a_cache_entry),
        T(test_pool_trim_returns_chunks_a_growth_never_opened),
        T(test_pool_trim_gives_a_growths_chunks_back_to_the_os_and_its_mapping_with_the_last),
        T(test_pool_reset_trim_and_destroy_after_a_growth_give_every_chunk_back),
        T(test_pool_trim_after_freeing_everything_releases_grown_chunks),
        T(test_pool_trim_never_goes_below_initial_capacity),
        T(test_pool_trim_keeps_chunks_with_live_items),
        T(test_pool_pointer_into_a_trimmed_chunk_is_foreign),
        T(test_pool_trim_with_the_system_allocator_works),
        T(test_pool_stats_counters_stay_consistent),
        T(test_pool_overhead_for_16_byte_items_is_at_most_8_bytes_per_item),
        T(test_pool_bytes_reserved_matches_the_backing_allocator),
        T(test_pool_chunks_are_power_of_two_sized_and_hold_their_items),
        T(test_pool_destroy_runs_dtor_on_live_items_and_reports_the_leak_count),
        T(test_pool_destroy_lists_allocation_sites_when_tracking),
        T(test_pool_silent_destroy_runs_dtors_without_reporting),
        T(test_pool_destroy_without_live_items_reports_nothing),
        T(test_pool_destroy_of_null_is_a_no_op),
        T(test_pool_desc_macro_takes_size_align_and_name_from_the_type),
        T(test_pool_desc_macro_name_override_wins_without_warnings),
        T(test_pool_typed_wrappers_alloc_free_new_and_delete),
        T(test_pool_typed_wrappers_record_the_callers_file_and_line),
        T(test_pool_create_fails_cleanly_at_every_backing_call),
        T(test_pool_growth_failure_keeps_items_and_recovers),
        T(test_pool_reserve_under_fault_returns_false_and_keeps_capacity),
#undef T
    };
    return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
