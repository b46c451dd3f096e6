/* tests/memory/test_tag.c: memory tags with budgets (framemem/tag.h): what
 * pools, arenas, frame arenas and closure pools charge, hard limits that
 * refuse growth and change nothing, soft limits warned once per crossing,
 * parent chains, destroy order, fault injection during tag-limited growth,
 * and one tag shared by pools of every policy on several threads. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"
#include "sync_test_support.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

static fm_tag_stats tag_stats(const fm_tag *tag) {
    fm_tag_stats s;
    memset(&s, 0x5A, sizeof s);
    fm_tag_get_stats(tag, &s);
    return s;
}

static fm_pool_stats pool_stats(const fm_pool *pool) { return fm_test_pool_stats(pool); }

static fm_arena_stats arena_stats(const fm_arena *arena) {
    fm_arena_stats s;
    fm_arena_get_stats(arena, &s);
    return s;
}

/* Bytes a pool charges its tag: its chunks. */
static uint64_t chunk_bytes_held(const fm_pool *pool) {
    fm_pool_stats s = pool_stats(pool);
    return s.chunk_count * s.chunk_bytes;
}

/* cmocka-asserts every counter of a and b equal but growths_refused, which
 * went up by refused_delta, and live. */
static void assert_tag_same(fm_tag_stats a, fm_tag_stats b, uint64_t refused_delta) {
    assert_int_equal(b.reserved, a.reserved);
    assert_int_equal(b.committed, a.committed);
    assert_int_equal(b.peak, a.peak);
    assert_int_equal(b.soft_crossings, a.soft_crossings);
    assert_int_equal(b.objects, a.objects);
    assert_int_equal(b.children, a.children);
    assert_int_equal(b.growths_refused, a.growths_refused + refused_delta);
}

/* cmocka-asserts the pool's stats are still `before` (failed_allocs aside,
 * which went up by failed_delta). */
static void assert_pool_same(const fm_pool *pool, fm_pool_stats before, uint64_t failed_delta) {
    fm_pool_stats after = pool_stats(pool);
    before.failed_allocs += failed_delta;
    fm_test_assert_pool_stats_same(&before, &after, 0);
}

/* The chunk size and items per chunk of this test's pools (64-byte items). */
static void pool_geometry(uint64_t *chunk, uint32_t *per) {
    fm_pool *probe = fm_pool_create(&(fm_pool_desc){.name = "probe", .item_size = 64});
    assert_non_null(probe);
    fm_pool_stats s = pool_stats(probe);
    *chunk = s.chunk_bytes;
    if (per) *per = (uint32_t)s.items_per_chunk;
    fm_pool_destroy(probe);
}

static void noop_closure(void *capture, void *arg) { (void)capture, (void)arg; }

/* Allocates items from pool until its capacity is used up (no growth yet):
 * returns how many, stored in items. */
static size_t fill_capacity(fm_pool *pool, void **items, size_t max) {
    fm_pool_stats s = pool_stats(pool);
    size_t n = 0;
    while (n < max && s.live + n < s.capacity) {
        items[n] = fm_pool_alloc(pool);
        assert_non_null(items[n]);
        n++;
    }
    return n;
}

static fm_pool_desc pool_desc(const char *name, fm_tag *tag, fm_allocator a) {
    return (fm_pool_desc){.name = name, .item_size = 64, .growth = FM_GROWTH_LINEAR,
                          .tag = tag, .allocator = a};
}

static fm_pool *create_pool(fm_pool_desc d) { return fm_pool_create(&d); }

enum { MANY = 16384 };
static void *items_a[MANY], *items_b[MANY];

/* ------------------------------------------------------------------ create */

static void test_tag_create_copies_the_name_and_starts_at_zero(void **state) {
    fm_test_env *env = *state;
    char name[16] = "audio";
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = name, .soft_limit_bytes = 100,
                                               .hard_limit_bytes = 200,
                                               .allocator = fm_test_allocator_get(&env->alloc)});
    assert_non_null(tag);
    strcpy(name, "other");
    assert_string_equal(fm_tag_name(tag), "audio");
    fm_tag_stats s = tag_stats(tag);
    assert_string_equal(s.name, "audio");
    assert_int_equal(s.reserved + s.committed + s.live + s.peak + s.growths_refused, 0);
    assert_int_equal(s.soft_crossings + s.objects + s.children, 0);
    assert_int_equal(s.soft_limit_bytes, 100);
    assert_int_equal(s.hard_limit_bytes, 200);
    fm_tag_desc d = fm_tag_get_desc(tag);
    assert_string_equal(d.name, "audio");
    assert_int_equal(d.hard_limit_bytes, 200);
    assert_null(d.parent);
    fm_tag_destroy(tag);
    fm_tag *dflt = fm_tag_create(&(fm_tag_desc){0});
    assert_non_null(dflt);
    assert_string_equal(fm_tag_name(dflt), "tag");
    fm_tag_destroy(dflt);
    assert_int_equal(env->errors.count, 0);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void expect_desc_refused(fm_test_env *env, const fm_tag_desc *d, const char *why) {
    char msg[160] = "";
    assert_int_equal(fm_tag_desc_check(d, msg, sizeof msg), FM_ERR_INVALID_ARG);
    fm_test_expect_contains(msg, why);
    int before = env->errors.count;
    assert_null(fm_tag_create(d));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, before + 1);
    fm_test_expect_contains(env->errors.message, why);
}

static void test_tag_desc_check_refuses_soft_above_hard_half_allocators_and_deep_chains(
    void **state) {
    fm_test_env *env = *state;
    fm_allocator a = fm_test_allocator_get(&env->alloc);
    expect_desc_refused(env, &(fm_tag_desc){.name = "x", .soft_limit_bytes = 300,
                                            .hard_limit_bytes = 200, .allocator = a},
                        "soft_limit_bytes above hard_limit_bytes");
    expect_desc_refused(env, &(fm_tag_desc){.name = "x", .allocator = {.alloc = a.alloc}},
                        "allocator needs both");
    /* A soft limit alone, a hard limit alone, and equal limits are fine. */
    assert_int_equal(fm_tag_desc_check(&(fm_tag_desc){.soft_limit_bytes = 5}, NULL, 0), FM_OK);
    assert_int_equal(fm_tag_desc_check(&(fm_tag_desc){.hard_limit_bytes = 5}, NULL, 0), FM_OK);
    assert_int_equal(
        fm_tag_desc_check(&(fm_tag_desc){.soft_limit_bytes = 5, .hard_limit_bytes = 5}, NULL, 0),
        FM_OK);
    fm_tag *chain[FM_TAG_MAX_DEPTH];
    for (int i = 0; i < FM_TAG_MAX_DEPTH; i++) {
        chain[i] = fm_tag_create(
            &(fm_tag_desc){.name = "level", .parent = i ? chain[i - 1] : NULL, .allocator = a});
        assert_non_null(chain[i]);
    }
    expect_desc_refused(env,
                        &(fm_tag_desc){.name = "deep", .parent = chain[FM_TAG_MAX_DEPTH - 1],
                                       .allocator = a},
                        "FM_TAG_MAX_DEPTH");
    assert_int_equal(tag_stats(chain[FM_TAG_MAX_DEPTH - 1]).children, 0);
    for (int i = FM_TAG_MAX_DEPTH - 1; i >= 0; i--) fm_tag_destroy(chain[i]);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* --------------------------------------------------------------- pools */

static void test_pool_chunks_are_charged_to_the_tag_and_given_back_by_trim_and_destroy(
    void **state) {
    fm_test_env *env = *state;
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "particles"});
    fm_pool *pool = fm_test_pool_create_counted(env, pool_desc("sparks", tag, (fm_allocator){0}));
    fm_pool_stats ps = pool_stats(pool);
    fm_tag_stats s = tag_stats(tag);
    assert_int_equal(s.committed, ps.chunk_bytes);
    assert_int_equal(s.reserved, ps.chunk_bytes);
    assert_int_equal(s.peak, ps.chunk_bytes);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.live, 0);
    /* Three chunks' worth of items: two growths, each charged. */
    size_t n = (size_t)ps.items_per_chunk * 3;
    for (size_t i = 0; i < n; i++) assert_non_null(items_a[i] = fm_pool_alloc(pool));
    s = tag_stats(tag);
    assert_int_equal(s.committed, chunk_bytes_held(pool));
    assert_int_equal(s.committed, 3 * ps.chunk_bytes);
    assert_int_equal(s.reserved, s.committed);
    assert_int_equal(s.peak, s.committed);
    assert_int_equal(s.live, n * 64);
    /* Frees change nothing the tag counts but live; trim gives chunks back. */
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items_a[i]);
    assert_int_equal(tag_stats(tag).committed, 3 * ps.chunk_bytes);
    assert_int_equal(tag_stats(tag).live, 0);
    size_t released = fm_pool_trim(pool);
    s = tag_stats(tag);
    assert_int_equal(released, 2 * ps.chunk_bytes);
    assert_int_equal(s.committed, ps.chunk_bytes);
    assert_int_equal(s.committed, chunk_bytes_held(pool));
    assert_int_equal(s.peak, 3 * ps.chunk_bytes);
    fm_pool_destroy(pool);
    s = tag_stats(tag);
    assert_int_equal(s.committed + s.reserved + s.objects, 0);
    assert_int_equal(s.peak, 3 * ps.chunk_bytes);
    fm_tag_destroy(tag);
    assert_int_equal(env->errors.count, 0);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_growth_past_the_hard_limit_fails_with_budget_and_changes_nothing(
    void **state) {
    fm_test_env *env = *state;
    uint64_t chunk;
    pool_geometry(&chunk, NULL);
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "audio", .hard_limit_bytes = 2 * chunk});
    fm_pool *pool = fm_test_pool_create_counted(env, pool_desc("voices", tag, (fm_allocator){0}));
    size_t n = fill_capacity(pool, items_a, MANY);
    assert_non_null(items_a[n] = fm_pool_alloc(pool)); /* the second chunk fits */
    n++;
    n += fill_capacity(pool, items_a + n, MANY - n);
    fm_pool_stats before = pool_stats(pool);
    fm_tag_stats tbefore = tag_stats(tag);
    assert_int_equal(tbefore.committed, 2 * chunk);
    uint64_t calls = env->alloc.alloc_calls;
    for (int attempt = 1; attempt <= 3; attempt++) {
        int reports = env->errors.count;
        fm_clear_error();
        assert_null(fm_pool_alloc(pool));
        assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
        assert_int_equal(env->errors.count, reports + 1);
        fm_test_expect_contains(env->errors.message, "pool 'voices'");
        fm_test_expect_contains(env->errors.message, "tag 'audio'");
        assert_pool_same(pool, before, (uint64_t)attempt);
        fm_tag_stats tafter = tag_stats(tag);
        assert_tag_same(tbefore, tafter, (uint64_t)attempt);
    }
    /* Nothing was asked of the allocator: the budget refused first. */
    assert_int_equal(env->alloc.alloc_calls, calls);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    /* A freed slot is reused without growth. */
    fm_pool_free(pool, items_a[--n]);
    assert_non_null(items_a[n++] = fm_pool_alloc(pool));
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items_a[i]);
    fm_pool_destroy(pool);
    assert_int_equal(tag_stats(tag).committed, 0);
    assert_int_equal(tag_stats(tag).growths_refused, 3);
    fm_tag_destroy(tag);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_pool_policy_growth_near_the_hard_limit_takes_the_chunks_that_fit(void **state) {
    fm_test_env *env = *state;
    uint64_t chunk;
    pool_geometry(&chunk, NULL);
    /* Geometric growth from 2 chunks asks for 2 more; 3 fit in all. */
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "npcs", .hard_limit_bytes = 3 * chunk});
    fm_pool_desc d = pool_desc("npc", tag, (fm_allocator){0});
    d.growth = FM_GROWTH_GEOMETRIC;
    fm_pool *pool = fm_test_pool_create_counted(env, d);
    uint32_t per = (uint32_t)pool_stats(pool).items_per_chunk;
    assert_true(fm_pool_reserve(pool, 2 * per));
    size_t n = fill_capacity(pool, items_a, MANY);
    assert_non_null(items_a[n++] = fm_pool_alloc(pool));
    assert_int_equal(pool_stats(pool).chunk_count, 3);
    assert_int_equal(tag_stats(tag).committed, 3 * chunk);
    assert_int_equal(env->errors.count, 0);
    n += fill_capacity(pool, items_a + n, MANY - n);
    assert_null(fm_pool_alloc(pool));
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items_a[i]);
    fm_pool_destroy(pool);
    fm_tag_destroy(tag);
}

static void test_pool_reserve_and_create_past_the_hard_limit_are_refused_and_leak_nothing(
    void **state) {
    fm_test_env *env = *state;
    fm_allocator a = fm_test_allocator_get(&env->alloc);
    uint64_t chunk;
    uint32_t per;
    pool_geometry(&chunk, &per);
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "level", .hard_limit_bytes = 2 * chunk});
    fm_pool *pool = create_pool(pool_desc("doors", tag, a));
    assert_non_null(pool);
    fm_pool_stats before = pool_stats(pool);
    fm_tag_stats tbefore = tag_stats(tag);
    int reports = env->errors.count;
    assert_false(fm_pool_reserve(pool, 3 * per)); /* two more chunks: one too many */
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    assert_int_equal(env->errors.count, reports + 1);
    assert_pool_same(pool, before, 0);
    assert_tag_same(tbefore, tag_stats(tag), 1);
    assert_true(fm_pool_reserve(pool, 2 * per)); /* exactly the limit */
    assert_int_equal(tag_stats(tag).committed, 2 * chunk);

    /* A create whose first chunks do not fit: NULL, every byte back, the tag
     * as it was (the refused pool never stays on its list). */
    size_t live_bytes = env->alloc.live_bytes;
    tbefore = tag_stats(tag);
    reports = env->errors.count;
    fm_pool_desc d = pool_desc("crates", tag, a);
    d.initial_capacity = 1;
    assert_null(fm_pool_create(&d));
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    assert_int_equal(env->errors.count, reports + 1);
    fm_test_expect_contains(env->errors.message, "pool 'crates'");
    assert_int_equal(env->alloc.live_bytes, live_bytes);
    assert_tag_same(tbefore, tag_stats(tag), 1);
    fm_pool_destroy(pool);
    fm_tag_destroy(tag);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ------------------------------------------------------------ soft limit */

static void test_soft_limit_crossing_is_warned_once_per_crossing_and_leaves_the_last_error(
    void **state) {
    fm_test_env *env = *state;
    uint64_t chunk;
    pool_geometry(&chunk, NULL);
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "fx", .soft_limit_bytes = chunk + chunk / 2});
    fm_pool *pool = fm_test_pool_create_counted(env, pool_desc("smoke", tag, (fm_allocator){0}));
    /* A failed call's error, which the warning must leave in place. */
    long long not_an_item;
    fm_pool_free(pool, &not_an_item);
    assert_int_equal(fm_last_error(), FM_ERR_FOREIGN_POINTER);
    char last_message[512];
    snprintf(last_message, sizeof last_message, "%s", fm_last_error_message());
    int reports = env->errors.count;

    for (int crossing = 1; crossing <= 2; crossing++) {
        size_t n = fill_capacity(pool, items_a, MANY);
        assert_non_null(items_a[n] = fm_pool_alloc(pool)); /* second chunk: above the limit */
        n++;
        assert_int_equal(env->errors.count, reports + crossing);
        assert_int_equal(env->errors.last, FM_WARN_BUDGET);
        assert_int_equal(env->errors.by_code[FM_WARN_BUDGET], crossing);
        fm_test_expect_contains(env->errors.message, "tag 'fx'");
        fm_test_expect_contains(env->errors.message, "pool 'smoke'");
        assert_int_equal(fm_last_error(), FM_ERR_FOREIGN_POINTER);
        assert_string_equal(fm_last_error_message(), last_message);
        /* Further growth above the limit: no second warning. */
        n += fill_capacity(pool, items_a + n, MANY - n);
        assert_non_null(items_a[n++] = fm_pool_alloc(pool));
        assert_int_equal(env->errors.count, reports + crossing);
        assert_int_equal(tag_stats(tag).soft_crossings, (uint64_t)crossing);
        /* Back to one chunk, at or below the limit: the next rise is a crossing. */
        for (size_t i = 0; i < n; i++) fm_pool_free(pool, items_a[i]);
        assert_true(fm_pool_trim(pool) > 0);
        assert_int_equal(tag_stats(tag).committed, chunk);
    }
    assert_true(fm_error_is_warning(FM_WARN_BUDGET));
    assert_true(fm_error_is_warning(FM_WARN_NO_SITES));
    assert_false(fm_error_is_warning(FM_ERR_BUDGET));
    assert_false(fm_error_is_warning(FM_OK));
    fm_pool_destroy(pool);
    fm_tag_destroy(tag);
}

static void test_warning_codes_reach_the_handler_but_not_the_last_error(void **state) {
    fm_test_env *env = *state;
    fm_report_error(FM_ERR_LEAK, "an error first");
    fm_report_error(FM_WARN_BUDGET, "a warning %d", 7);
    assert_int_equal(env->errors.count, 2);
    assert_int_equal(env->errors.last, FM_WARN_BUDGET);
    assert_string_equal(env->errors.message, "a warning 7");
    assert_int_equal(fm_last_error(), FM_ERR_LEAK);
    assert_string_equal(fm_last_error_message(), "an error first");
}

/* ----------------------------------------------------------- parent chains */

static void test_parent_limits_apply_to_child_tags_and_counts_roll_up(void **state) {
    fm_test_env *env = *state;
    uint64_t chunk;
    pool_geometry(&chunk, NULL);
    fm_tag *level = fm_tag_create(&(fm_tag_desc){.name = "level", .hard_limit_bytes = 3 * chunk});
    fm_tag *props = fm_tag_create(&(fm_tag_desc){.name = "props", .parent = level});
    fm_tag *npcs = fm_tag_create(&(fm_tag_desc){.name = "npcs", .parent = level});
    assert_int_equal(tag_stats(level).children, 2);
    assert_ptr_equal(fm_tag_get_desc(props).parent, level);
    fm_pool *a = fm_test_pool_create_counted(env, pool_desc("barrels", props, (fm_allocator){0}));
    fm_pool *b = fm_test_pool_create_counted(env, pool_desc("guards", npcs, (fm_allocator){0}));
    size_t na = fill_capacity(a, items_a, MANY);
    assert_non_null(items_a[na++] = fm_pool_alloc(a)); /* props: 2 chunks, level: 3 */
    na += fill_capacity(a, items_a + na, MANY - na);
    size_t nb = 5;
    for (size_t i = 0; i < nb; i++) assert_non_null(items_b[i] = fm_pool_alloc(b));

    fm_tag_stats sl = tag_stats(level), sp = tag_stats(props), sn = tag_stats(npcs);
    assert_int_equal(sp.committed, 2 * chunk);
    assert_int_equal(sn.committed, chunk);
    assert_int_equal(sl.committed, 3 * chunk);
    assert_int_equal(sl.reserved, 3 * chunk);
    assert_int_equal(sl.live, (na + nb) * 64);
    assert_int_equal(sp.live, na * 64);
    assert_int_equal(sl.objects, 0);
    assert_int_equal(sp.objects, 1);

    /* props has no limit of its own; level's refuses. */
    int reports = env->errors.count;
    assert_null(fm_pool_alloc(a));
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    assert_int_equal(env->errors.count, reports + 1);
    fm_test_expect_contains(env->errors.message, "tag 'level'");
    fm_test_expect_contains(env->errors.message, "tag 'props'");
    assert_tag_same(sp, tag_stats(props), 1);
    assert_tag_same(sl, tag_stats(level), 1);
    assert_tag_same(sn, tag_stats(npcs), 0);

    for (size_t i = 0; i < na; i++) fm_pool_free(a, items_a[i]);
    for (size_t i = 0; i < nb; i++) fm_pool_free(b, items_b[i]);
    fm_pool_destroy(a);
    fm_pool_destroy(b);
    assert_int_equal(tag_stats(level).committed, 0);
    fm_tag_destroy(props);
    fm_tag_destroy(npcs);
    assert_int_equal(tag_stats(level).children, 0);
    fm_tag_destroy(level);
    assert_int_equal(env->errors.count, reports + 1);
}

/* A refusal high on the chain gives back what the tags below took: a later
 * growth up to the lower tag's own limit succeeds. */
static void test_refusal_by_an_ancestor_leaves_every_tag_on_the_chain_as_it_was(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    uint64_t chunk;
    uint32_t per;
    pool_geometry(&chunk, &per);
    fm_tag *world = fm_tag_create(&(fm_tag_desc){.name = "world"});
    fm_tag *zone = fm_tag_create(
        &(fm_tag_desc){.name = "zone", .hard_limit_bytes = 2 * chunk, .parent = world});
    fm_tag *room = fm_tag_create(
        &(fm_tag_desc){.name = "room", .hard_limit_bytes = 2 * chunk, .parent = zone});
    fm_pool_desc big = pool_desc("big", zone, al);
    fm_pool *x = fm_pool_create(&big);
    assert_non_null(x);
    assert_true(fm_pool_reserve(x, 2 * per));
    fm_tag_stats sw = tag_stats(world), sz = tag_stats(zone), sr = tag_stats(room);
    /* room takes the chunk, zone refuses: room gives it back. */
    assert_null(create_pool(pool_desc("small", room, al)));
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    fm_test_expect_contains(env->errors.message, "tag 'zone'");
    assert_tag_same(sr, tag_stats(room), 1);
    assert_tag_same(sz, tag_stats(zone), 1);
    assert_tag_same(sw, tag_stats(world), 0);
    fm_pool_destroy(x);
    /* room's own limit, 2 chunks, is reachable again: nothing stayed taken. */
    fm_pool_desc two = pool_desc("two", room, al);
    two.initial_capacity = 2 * per;
    fm_pool *y = fm_pool_create(&two);
    assert_non_null(y);
    assert_int_equal(tag_stats(room).committed, 2 * chunk);
    assert_int_equal(tag_stats(world).committed, 2 * chunk);
    fm_pool_destroy(y);
    fm_tag_destroy(room);
    fm_tag_destroy(zone);
    fm_tag_destroy(world);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* --------------------------------------------------------------- arenas */

static void test_arena_commits_are_charged_and_refused_at_the_hard_limit(void **state) {
    fm_test_env *env = *state;
    const uint64_t step = 64 << 10;
    fm_tag *tag = fm_tag_create(
        &(fm_tag_desc){.name = "scratch", .soft_limit_bytes = 2 * step, .hard_limit_bytes = 4 * step});
    fm_arena *arena = fm_arena_create(
        &(fm_arena_desc){.name = "temp", .reserve_bytes = 16 * step, .commit_step = step, .tag = tag});
    assert_non_null(arena);
    fm_arena_stats as = arena_stats(arena);
    fm_tag_stats s = tag_stats(tag);
    assert_int_equal(s.reserved, as.reserved);
    assert_int_equal(s.committed, as.committed);
    assert_int_equal(s.objects, 1);
    assert_non_null(fm_arena_alloc(arena, 100 << 10, 16)); /* 2 steps: at the soft limit */
    assert_int_equal(tag_stats(tag).committed, 2 * step);
    assert_int_equal(env->errors.count, 0);
    assert_non_null(fm_arena_alloc(arena, 40 << 10, 16)); /* 3 steps: above it */
    assert_int_equal(env->errors.by_code[FM_WARN_BUDGET], 1);
    s = tag_stats(tag);
    as = arena_stats(arena);
    assert_int_equal(s.committed, as.committed);
    assert_int_equal(s.committed, 3 * step);
    assert_int_equal(s.live, as.used);
    /* 140 KiB more needs 5 steps: refused, the arena unchanged. */
    int reports = env->errors.count;
    assert_null(fm_arena_alloc(arena, 140 << 10, 16));
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    assert_int_equal(env->errors.count, reports + 1);
    fm_test_expect_contains(env->errors.message, "arena 'temp'");
    fm_arena_stats after = arena_stats(arena);
    assert_int_equal(after.used, as.used);
    assert_int_equal(after.committed, as.committed);
    assert_int_equal(after.failed_allocs, as.failed_allocs + 1);
    assert_tag_same(s, tag_stats(tag), 1);
    /* Up to the limit is fine. */
    assert_non_null(fm_arena_alloc(arena, 4 * step - as.used, 1));
    assert_int_equal(tag_stats(tag).committed, 4 * step);
    /* Decommit gives back, destroy gives back the rest and the reservation. */
    fm_arena_reset(arena);
    size_t released = fm_arena_decommit(arena, step);
    assert_int_equal(released, 3 * step);
    assert_int_equal(tag_stats(tag).committed, step);
    fm_arena_destroy(arena);
    s = tag_stats(tag);
    assert_int_equal(s.reserved + s.committed + s.objects, 0);
    assert_int_equal(s.peak, 4 * step);
    fm_tag_destroy(tag);
}

static void test_chained_arena_blocks_are_charged_and_a_refused_block_is_never_asked_for(
    void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    const uint64_t step = 64 << 10;
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "blocks", .hard_limit_bytes = 2 * step});
    fm_arena *arena = fm_arena_create(
        &(fm_arena_desc){.name = "chain", .commit_step = step, .allocator = al, .tag = tag});
    assert_non_null(arena);
    assert_int_equal(tag_stats(tag).committed, arena_stats(arena).committed);
    assert_int_equal(tag_stats(tag).reserved, step);
    /* 30 KiB pieces, two to a 64 KiB block: the third takes a second block. */
    for (int i = 0; i < 4; i++) assert_non_null(fm_arena_alloc(arena, 30 << 10, 16));
    assert_int_equal(tag_stats(tag).committed, 2 * step);
    assert_int_equal(arena_stats(arena).committed, 2 * step);
    uint64_t calls = env->alloc.alloc_calls;
    fm_arena_stats as = arena_stats(arena);
    assert_null(fm_arena_alloc(arena, 30 << 10, 16));
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    assert_int_equal(env->alloc.alloc_calls, calls);
    assert_int_equal(arena_stats(arena).committed, as.committed);
    /* A reset keeps the blocks as spares: reusing them costs no budget. */
    fm_arena_reset(arena);
    for (int i = 0; i < 4; i++) assert_non_null(fm_arena_alloc(arena, 30 << 10, 16));
    assert_int_equal(tag_stats(tag).committed, 2 * step);
    fm_arena_reset(arena);
    fm_arena_decommit(arena, 0);
    assert_int_equal(tag_stats(tag).committed, arena_stats(arena).committed);
    fm_arena_destroy(arena);
    assert_int_equal(tag_stats(tag).committed, 0);
    assert_int_equal(tag_stats(tag).reserved, 0);

    /* A chained arena whose first block passes the limit is not created. */
    fm_tag *tiny = fm_tag_create(&(fm_tag_desc){.name = "tiny", .hard_limit_bytes = step / 2});
    assert_null(fm_arena_create(
        &(fm_arena_desc){.name = "chain", .commit_step = step, .allocator = al, .tag = tiny}));
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    assert_int_equal(tag_stats(tiny).objects, 0);
    assert_int_equal(tag_stats(tiny).growths_refused, 1);
    fm_tag_destroy(tiny);
    fm_tag_destroy(tag);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_frame_arenas_and_closure_pools_charge_their_parts_to_the_tag(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "frame", .allocator = al});
    fm_frame_arena *fa = fm_frame_arena_create(
        &(fm_frame_arena_desc){.frames = 3, .arena.commit_step = 4096, .tag = tag});
    assert_non_null(fa);
    assert_int_equal(tag_stats(tag).objects, 3);
    assert_non_null(fm_frame_alloc(fa, 10000, 16));
    fm_frame_arena_stats fs;
    fm_frame_arena_get_stats(fa, &fs);
    assert_int_equal(tag_stats(tag).committed, fs.committed);
    assert_int_equal(tag_stats(tag).live, fs.used);
    /* The same tag twice is fine; two different ones are refused. */
    fm_tag *other = fm_tag_create(&(fm_tag_desc){.name = "other"});
    fm_frame_arena_desc both = {.tag = tag, .arena.tag = other};
    char msg[128];
    assert_int_equal(fm_frame_arena_desc_check(&both, msg, sizeof msg), FM_ERR_INVALID_ARG);
    fm_test_expect_contains(msg, "tag and arena.tag");
    assert_null(fm_frame_arena_create(&both));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    both.arena.tag = tag;
    assert_int_equal(fm_frame_arena_desc_check(&both, NULL, 0), FM_OK);
    fm_frame_arena *via_arena = fm_frame_arena_create(&(fm_frame_arena_desc){.arena.tag = other});
    assert_non_null(via_arena);
    assert_int_equal(tag_stats(other).objects, 2);
    fm_frame_arena_destroy(via_arena);

    fm_closure_pool *cp = fm_closure_pool_create(
        &(fm_closure_pool_desc){.max_capture = 64, .allocator = al, .tag = tag});
    assert_non_null(cp);
    fm_closure_pool_stats cs;
    fm_closure_pool_get_stats(cp, &cs);
    assert_int_equal(tag_stats(tag).objects, 3 + cs.classes);
    fm_closure *c = fm_closure_make(cp, noop_closure, NULL, 0);
    assert_non_null(c);
    uint64_t frame_live = fs.used;
    /* 32-byte header, 16-byte class: 48 bytes live in the closure pool. */
    assert_int_equal(tag_stats(tag).live, frame_live + 48);
    fm_closure_release(c);
    fm_closure_pool_destroy(cp);
    fm_frame_arena_destroy(fa);
    fm_tag_stats s = tag_stats(tag);
    assert_int_equal(s.committed + s.reserved + s.objects, 0);
    fm_tag_destroy(other);
    fm_tag_destroy(tag);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ----------------------------------------------------------- destroy order */

static void test_tag_destroy_is_refused_while_objects_or_children_name_it(void **state) {
    fm_test_env *env = *state;
    fm_tag *parent = fm_tag_create(&(fm_tag_desc){.name = "parent"});
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "child", .parent = parent});
    fm_pool *pool = create_pool(pool_desc("user", tag, (fm_allocator){0}));
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "user", .tag = tag});
    assert_non_null(pool);
    assert_non_null(arena);
    fm_tag_stats before = tag_stats(tag);

    int reports = env->errors.count;
    fm_clear_error();
    fm_tag_destroy(tag);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, reports + 1);
    fm_test_expect_contains(env->errors.message, "tag 'child'");
    fm_test_expect_contains(env->errors.message, "2 object(s) and 0 child tag(s)");
    fm_tag_destroy(parent);
    assert_int_equal(env->errors.count, reports + 2);
    fm_test_expect_contains(env->errors.message, "0 object(s) and 1 child tag(s)");

    /* Both still work and count. */
    assert_tag_same(before, tag_stats(tag), 0);
    void *item = fm_pool_alloc(pool);
    assert_non_null(item);
    assert_int_equal(tag_stats(parent).live, tag_stats(tag).live);
    fm_pool_free(pool, item);
    fm_pool_destroy(pool);
    fm_tag_destroy(tag);
    assert_int_equal(env->errors.count, reports + 3); /* the arena still names it */
    fm_arena_destroy(arena);
    fm_tag_destroy(tag);
    fm_tag_destroy(parent);
    assert_int_equal(env->errors.count, reports + 3);
}

/* ------------------------------------------------------- fault injection */

/* Every backing call of a tag-limited growth fails in turn: each failure is
 * FM_ERR_OUT_OF_MEMORY with the pool and the tag as they were (what was
 * charged is given back), and the growth then reaches the limit exactly. */
static void test_backing_failures_during_tag_limited_growth_leave_pool_and_tag_unchanged(
    void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    uint64_t chunk;
    uint32_t per;
    pool_geometry(&chunk, &per);
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "limited", .hard_limit_bytes = 12 * chunk});
    for (fm_sync sync = FM_SYNC_NONE; sync < FM_SYNC_COUNT; sync++) {
        fm_pool_desc d = pool_desc("faulty", tag, al);
        d.sync = sync;
        fm_pool *pool = fm_pool_create(&d);
        assert_non_null(pool);
        fm_pool_stats before = pool_stats(pool);
        fm_tag_stats tbefore = tag_stats(tag);
        int failures = 0;
        for (uint64_t n = 1;; n++) {
            fm_test_allocator_fail_nth(&env->alloc, n);
            if (fm_pool_reserve(pool, 12 * per)) break; /* 11 more chunks, new arrays */
            failures++;
            assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
            assert_pool_same(pool, before, 0);
            assert_tag_same(tbefore, tag_stats(tag), 0);
            assert_int_equal(fm_pool_check(pool), FM_OK);
        }
        fm_test_allocator_recover(&env->alloc);
        assert_true(failures >= 2); /* the records and the chunks at least */
        assert_int_equal(tag_stats(tag).committed, 12 * chunk);
        /* Past the limit: refused before any backing call. */
        uint64_t calls = env->alloc.alloc_calls;
        assert_false(fm_pool_reserve(pool, 13 * per));
        assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
        assert_int_equal(env->alloc.alloc_calls, calls);
        fm_pool_destroy(pool);
        assert_int_equal(tag_stats(tag).committed, 0);
    }
    fm_tag_destroy(tag);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_backing_failures_of_tag_limited_arena_blocks_give_the_charge_back(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    const uint64_t step = 64 << 10;
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "blocks", .hard_limit_bytes = 2 * step});
    fm_arena *arena = fm_arena_create(
        &(fm_arena_desc){.name = "chain", .commit_step = step, .allocator = al, .tag = tag});
    assert_non_null(arena);
    for (int i = 0; i < 2; i++) assert_non_null(fm_arena_alloc(arena, 30 << 10, 16));
    fm_tag_stats before = tag_stats(tag);
    fm_test_allocator_fail_nth(&env->alloc, 1);
    assert_null(fm_arena_alloc(arena, 30 << 10, 16)); /* a second block, refused */
    assert_int_equal(fm_last_error(), FM_ERR_ARENA_FULL);
    assert_tag_same(before, tag_stats(tag), 0);
    fm_test_allocator_recover(&env->alloc);
    assert_non_null(fm_arena_alloc(arena, 30 << 10, 16)); /* the limit is reachable */
    assert_int_equal(tag_stats(tag).committed, 2 * step);
    fm_arena_destroy(arena);
    fm_tag_destroy(tag);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ---------------------------------------------------------------- threads */

enum { THREADS = 4, PER_POOL = 6000 };

typedef struct shared_budget {
    fm_tag *tag;
    fm_pool *shared[3]; /* MUTEX, THREAD_CACHE, LOCKFREE */
    fm_arena *arena;    /* LOCKFREE */
    fm_pool *own[THREADS];
} shared_budget;

typedef struct worker {
    shared_budget *b;
    int index;
    uint64_t got, refused;
    void *items[4][PER_POOL];
    size_t n[4];
} worker;

static worker workers[THREADS];

/* Allocates from its own NONE pool, the three shared pools and the shared
 * arena until each has been refused a few times (the budget is smaller
 * than what the threads ask for), then frees what it got. */
static void *budget_worker(void *arg) {
    worker *w = arg;
    shared_budget *b = w->b;
    fm_pool *own = b->own[w->index];
    fm_pool_set_owner_thread(own);
    fm_pool *pools[4] = {own, b->shared[0], b->shared[1], b->shared[2]};
    int refusals[4] = {0}, arena_refusals = 0;
    for (size_t round = 0; round < PER_POOL; round++) {
        for (int k = 0; k < 4; k++) {
            if (refusals[k] >= 3 || w->n[k] == PER_POOL) continue;
            void *item = fm_pool_alloc(pools[k]);
            if (item) {
                w->items[k][w->n[k]++] = item;
                w->got++;
            } else {
                refusals[k]++;
                w->refused++;
            }
        }
        if (arena_refusals < 3 && !fm_arena_alloc(b->arena, 512, 16)) arena_refusals++;
    }
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < w->n[k]; i++) fm_pool_free(pools[k], w->items[k][i]);
    fm_pool_release_owner_thread(own);
    return NULL;
}

static void test_one_budget_shared_by_pools_of_every_policy_across_threads_holds(void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    const uint64_t chunk = 64 << 10;
    shared_budget b;
    memset(&b, 0, sizeof b);
    b.tag = fm_tag_create(
        &(fm_tag_desc){.name = "jobs", .soft_limit_bytes = 10 * chunk, .hard_limit_bytes = 20 * chunk});
    const fm_sync policies[3] = {FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE, FM_SYNC_LOCKFREE};
    for (int i = 0; i < 3; i++) {
        b.shared[i] = fm_pool_create(&(fm_pool_desc){.name = fm_sync_name(policies[i]),
                                                     .item_size = 64, .sync = policies[i],
                                                     .tag = b.tag});
        assert_non_null(b.shared[i]);
        assert_int_equal(pool_stats(b.shared[i]).chunk_bytes, chunk);
    }
    for (int i = 0; i < THREADS; i++) {
        b.own[i] = fm_pool_create(&(fm_pool_desc){.name = "own", .item_size = 64, .tag = b.tag});
        assert_non_null(b.own[i]);
        fm_pool_release_owner_thread(b.own[i]);
    }
    b.arena = fm_arena_create(&(fm_arena_desc){.name = "jobs", .sync = FM_SYNC_LOCKFREE,
                                               .commit_step = chunk, .tag = b.tag});
    assert_non_null(b.arena);
    memset(workers, 0, sizeof workers);
    for (int i = 0; i < THREADS; i++) workers[i] = (worker){.b = &b, .index = i};
    sync_run(THREADS, budget_worker, workers, sizeof workers[0]);

    fm_tag_stats s = tag_stats(b.tag);
    uint64_t held = 0, refused = 0;
    for (int i = 0; i < 3; i++) held += chunk_bytes_held(b.shared[i]);
    for (int i = 0; i < THREADS; i++) {
        held += chunk_bytes_held(b.own[i]);
        refused += workers[i].refused;
    }
    held += arena_stats(b.arena).committed;
    print_message("tag 'jobs': committed %llu (peak %llu) of %llu, %llu growths refused, "
                  "%llu allocations refused\n",
                  (unsigned long long)s.committed, (unsigned long long)s.peak,
                  (unsigned long long)s.hard_limit_bytes, (unsigned long long)s.growths_refused,
                  (unsigned long long)refused);
    assert_true(s.peak <= 20 * chunk);
    assert_int_equal(s.committed, held);
    assert_true(s.committed > 16 * chunk); /* the budget was used, nearly all */
    assert_true(s.growths_refused > 0);
    assert_true(refused > 0);
    /* No memory went back during the run: one rise above the soft limit. */
    assert_int_equal(s.soft_crossings, 1);
    assert_int_equal(atomic_load(&errors.by_code[FM_WARN_BUDGET]), 1);
    assert_int_equal(atomic_load(&errors.by_code[FM_ERR_BUDGET]), (int)s.growths_refused);
    assert_int_equal(s.live, arena_stats(b.arena).used); /* the pools' items are freed */
    for (int i = 0; i < 3; i++) fm_pool_destroy(b.shared[i]);
    for (int i = 0; i < THREADS; i++) fm_pool_destroy(b.own[i]);
    fm_arena_destroy(b.arena);
    s = tag_stats(b.tag);
    assert_int_equal(s.committed + s.reserved + s.objects, 0);
    fm_tag_destroy(b.tag);
    sync_errors_remove(&errors);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_tag_create_copies_the_name_and_starts_at_zero),
        T(test_tag_desc_check_refuses_soft_above_hard_half_allocators_and_deep_chains),
        T(test_pool_chunks_are_charged_to_the_tag_and_given_back_by_trim_and_destroy),
        T(test_pool_growth_past_the_hard_limit_fails_with_budget_and_changes_nothing),
        T(test_pool_policy_growth_near_the_hard_limit_takes_the_chunks_that_fit),
        T(test_pool_reserve_and_create_past_the_hard_limit_are_refused_and_leak_nothing),
        T(test_soft_limit_crossing_is_warned_once_per_crossing_and_leaves_the_last_error),
        T(test_warning_codes_reach_the_handler_but_not_the_last_error),
        T(test_parent_limits_apply_to_child_tags_and_counts_roll_up),
        T(test_refusal_by_an_ancestor_leaves_every_tag_on_the_chain_as_it_was),
        T(test_arena_commits_are_charged_and_refused_at_the_hard_limit),
        T(test_chained_arena_blocks_are_charged_and_a_refused_block_is_never_asked_for),
        T(test_frame_arenas_and_closure_pools_charge_their_parts_to_the_tag),
        T(test_tag_destroy_is_refused_while_objects_or_children_name_it),
        T(test_backing_failures_during_tag_limited_growth_leave_pool_and_tag_unchanged),
        T(test_backing_failures_of_tag_limited_arena_blocks_give_the_charge_back),
        T(test_one_budget_shared_by_pools_of_every_policy_across_threads_holds),
#undef T
    };
    return cmocka_run_group_tests_name("tag", tests, NULL, NULL);
}
