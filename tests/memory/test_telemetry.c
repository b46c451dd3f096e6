/* tests/memory/test_telemetry.c: framemem_telemetry's sources, sampling at the
 * frame end, grow-ahead, the ring, CSV out and in (old files too), trace JSON. */
#define _POSIX_C_SOURCE 200809L
#include "fm_test.h"
#include "fm_test_thread.h"

#include "framemem/framemem.h"
#include "framemem/telemetry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

static fm_telemetry *make_two_sources(uint32_t frames) {
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = frames});
    assert_non_null(t);
    assert_int_equal(fm_telemetry_add_source(t, "particles", FM_TELEMETRY_POOL, 32, 1024), 0);
    assert_int_equal(fm_telemetry_add_source(t, "frame", FM_TELEMETRY_ARENA, 0, 1), 1);
    return t;
}

/* Frame f: particles allocs f, live 10 f, a growth on frames divisible by 3;
 * a third source (a tag, when there is one) at 1 MiB committed. */
static void push_frames(fm_telemetry *t, uint64_t first, uint32_t n) {
    for (uint64_t f = first; f < first + n; f++) {
        fm_telemetry_sample s[3] = {
            {.allocs = f, .frees = f / 2, .live = 10 * f, .capacity = 1024, .peak_live = 10 * f,
             .alloc_ns = 100 + f, .grow_events = f % 3 == 0, .grow_ns = f % 3 == 0 ? 5000 : 0,
             .ahead_grow_events = f % 5 == 0, .ahead_grow_ns = f % 5 == 0 ? 700 : 0,
             .resets = f % 7 == 0, .failed = f % 11 == 0},
            {.allocs = 3, .bytes_used = 4096 + f, .high_water = 9000, .capacity = 65536,
             .commit_events = f == first},
            {.live = 1000 + f, .capacity = 1u << 20, .peak_live = 1u << 20, .failed = f == 7},
        };
        fm_telemetry_push(t, &(fm_telemetry_frame){.frame = f, .frame_ns = 16000000 + f,
                                                   .sim_ns = 1000, .alloc_total_ns = 100 + f,
                                                   .maint_ns = 50},
                          s);
    }
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int source_of(const fm_telemetry *t, const char *name) {
    int s = fm_telemetry_find_source(t, name);
    if (s < 0) fail_msg("no source '%s'", name);
    return s;
}

/* Sum of a sample field (at off) of source s over every frame held. */
static uint64_t sum_at(const fm_telemetry *t, int s, size_t off) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++)
        sum += *(const uint64_t *)(const void *)((const char *)fm_telemetry_get_sample(t, i, (uint32_t)s) + off);
    return sum;
}
#define SUM(t, s, field) sum_at((t), (s), offsetof(fm_telemetry_sample, field))
#define LAST(t, s) fm_telemetry_get_sample((t), fm_telemetry_frame_count(t) - 1, (uint32_t)(s))

static void nop_call(void *capture, void *arg) { (void)capture, (void)arg; }

/* ================================================================ create */

static void test_telemetry_create_checks_its_desc_and_frees_every_byte(void **state) {
    fm_test_env *env = *state;
    fm_allocator a = fm_test_allocator_get(&env->alloc);
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 16, .allocator = a});
    assert_non_null(t);
    assert_int_equal(fm_telemetry_capacity(t), 16);
    assert_int_equal(env->alloc.alloc_calls, 1); /* one block: everything it will use */
    fm_telemetry_destroy(t);
    fm_test_allocator_assert_clean(&env->alloc);
    fm_telemetry_destroy(NULL);
    /* defaults */
    t = fm_telemetry_create(NULL);
    assert_non_null(t);
    assert_int_equal(fm_telemetry_capacity(t), 600);
    fm_telemetry_destroy(t);
    /* out of range: refused and reported */
    static const fm_telemetry_desc bad[] = {
        {.frames = FM_TELEMETRY_MAX_FRAMES + 1},
        {.max_sources = FM_TELEMETRY_MAX_SOURCES + 1},
        {.grow_ahead_window = FM_TELEMETRY_MAX_WINDOW + 1},
        {.grow_ahead_margin = 0.5f},
        {.grow_ahead_margin = 65.0f},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = env->errors.count;
        assert_null(fm_telemetry_create(&bad[i]));
        assert_int_equal(env->errors.count, before + 1);
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    }
    fm_telemetry_desc half = {.allocator = {.alloc = a.alloc}};
    assert_null(fm_telemetry_create(&half));
    assert_true(fm_test_contains(env->errors.message, "allocator"));
    /* the allocator refuses: reported, nothing held */
    fm_test_allocator_fail_nth(&env->alloc, 1);
    assert_null(fm_telemetry_create(&(fm_telemetry_desc){.allocator = a}));
    assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ================================================================ sources */

static void test_telemetry_add_source_finds_names_and_refuses_bad_ones(void **state) {
    (void)state;
    fm_telemetry *t = make_two_sources(8);
    assert_int_equal(fm_telemetry_add_source(t, "particles", FM_TELEMETRY_POOL, 32, 1024), 0);
    assert_int_equal(fm_telemetry_add_source(t, "particles", FM_TELEMETRY_TAG, 1, 1), -1);
    assert_int_equal(fm_telemetry_find_source(t, "frame"), 1);
    assert_int_equal(fm_telemetry_find_source(t, "nope"), -1);
    assert_int_equal(fm_telemetry_find_source(t, NULL), -1);
    assert_int_equal(fm_telemetry_add_source(t, "", FM_TELEMETRY_POOL, 1, 1), -1);
    assert_int_equal(fm_telemetry_add_source(t, NULL, FM_TELEMETRY_POOL, 1, 1), -1);
    assert_int_equal(fm_telemetry_add_source(t, "has space", FM_TELEMETRY_POOL, 1, 1), -1);
    assert_int_equal(fm_telemetry_add_source(t, "a,comma", FM_TELEMETRY_POOL, 1, 1), -1);
    assert_int_equal(fm_telemetry_add_source(t, "x23456789012345678901234567890123",
                                             FM_TELEMETRY_POOL, 1, 1), -1);
    assert_int_equal(fm_telemetry_add_source(t, "k", FM_TELEMETRY_KIND_COUNT, 1, 1), -1);
    assert_int_equal(fm_telemetry_source_count(t), 2);
    assert_string_equal(fm_telemetry_get_source(t, 0)->name, "particles");
    assert_null(fm_telemetry_get_source(t, 2));
    /* Sources may come after the first frame: earlier frames hold zeros. */
    push_frames(t, 0, 2);
    assert_int_equal(fm_telemetry_add_source(t, "late", FM_TELEMETRY_POOL, 1, 1), 2);
    fm_telemetry_sample three[3] = {{.allocs = 1}, {.allocs = 2}, {.allocs = 3}};
    fm_telemetry_push(t, &(fm_telemetry_frame){.frame = 2}, three);
    assert_int_equal(fm_telemetry_get_sample(t, 0, 2)->allocs, 0);
    assert_int_equal(fm_telemetry_get_sample(t, 2, 2)->allocs, 3);
    fm_telemetry_set_source_shape(t, 2, FM_TELEMETRY_BACKEND_MALLOC, 48, 0);
    assert_int_equal(fm_telemetry_get_source(t, 2)->backend, FM_TELEMETRY_BACKEND_MALLOC);
    assert_int_equal(fm_telemetry_get_source(t, 2)->item_size, 48);
    assert_int_equal(fm_telemetry_get_source(t, 2)->chunk_items, 1);
    fm_telemetry_set_source_shape(t, 9, FM_TELEMETRY_BACKEND_MALLOC, 1, 1); /* out of range */
    fm_telemetry_set_source_limits(t, 2, 100, 200);
    assert_int_equal(fm_telemetry_get_source(t, 2)->soft_limit, 100);
    assert_int_equal(fm_telemetry_get_source(t, 2)->hard_limit, 200);
    fm_telemetry_set_source_limits(t, 9, 1, 2); /* out of range */
    fm_telemetry_destroy(t);

    fm_telemetry *full = fm_telemetry_create(&(fm_telemetry_desc){.frames = 2, .max_sources = 2});
    assert_int_equal(fm_telemetry_add_source(full, "a", FM_TELEMETRY_POOL, 1, 1), 0);
    assert_int_equal(fm_telemetry_add_source(full, "b", FM_TELEMETRY_POOL, 1, 1), 1);
    assert_int_equal(fm_telemetry_add_source(full, "c", FM_TELEMETRY_POOL, 1, 1), -1);
    fm_telemetry_destroy(full);
}

typedef struct thing {
    uint64_t a, b, c;
} thing;

/* Big enough that a few hundred fill more than a chunk. */
typedef struct big_thing {
    char bytes[500];
} big_thing;

/* Objects of every kind, registered under their names (made source names),
 * each bound once, rebound after a detach, refused while another object of
 * the name is attached or for another kind, and a full registry refuses. */
static void test_telemetry_objects_of_every_kind_are_registered_by_name(void **state) {
    fm_test_env *env = *state;
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8, .max_sources = 7});
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(thing, .name = "enemy bullets"));
    fm_arena *a = fm_arena_create(&(fm_arena_desc){.name = "scratch"});
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){0});
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){0});
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "level", .soft_limit_bytes = 1 << 20,
                                               .hard_limit_bytes = 2 << 20});
    fm_telemetry_counters heap = {.item_size = 24};
    assert_int_equal(fm_telemetry_add_pool(t, p), 0);
    assert_int_equal(fm_telemetry_add_arena(t, a), 1);
    assert_int_equal(fm_telemetry_add_frame_arena(t, fa), 2);
    assert_int_equal(fm_telemetry_add_closure_pool(t, cp), 3);
    assert_int_equal(fm_telemetry_add_tag(t, tag), 4);
    assert_int_equal(fm_telemetry_add_counters(t, "heap things", &heap), 5);
    static const char *const names[] = {"enemy_bullets", "scratch", "frame",
                                        "closures",      "level",   "heap_things"};
    static const fm_telemetry_kind kinds[] = {FM_TELEMETRY_POOL,     FM_TELEMETRY_ARENA,
                                              FM_TELEMETRY_ARENA,    FM_TELEMETRY_CLOSURES,
                                              FM_TELEMETRY_TAG,      FM_TELEMETRY_POOL};
    for (uint32_t i = 0; i < 6; i++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(t, i);
        assert_string_equal(si->name, names[i]);
        assert_int_equal(si->kind, kinds[i]);
        assert_true(si->attached);
        assert_int_equal(si->backend, i == 5 ? FM_TELEMETRY_BACKEND_MALLOC : FM_TELEMETRY_BACKEND_POOL);
    }
    assert_int_equal(fm_telemetry_get_source(t, 0)->item_size, fm_test_pool_stats(p).stride);
    assert_int_equal(fm_telemetry_get_source(t, 4)->soft_limit, 1 << 20);
    assert_int_equal(fm_telemetry_get_source(t, 4)->hard_limit, 2 << 20);
    assert_int_equal(fm_telemetry_get_source(t, 5)->item_size, 24);
    /* the same object again: its index, nothing reported */
    int errors = env->errors.count;
    assert_int_equal(fm_telemetry_add_pool(t, p), 0);
    assert_int_equal(fm_telemetry_add_tag(t, tag), 4);
    assert_int_equal(env->errors.count, errors);
    /* another pool of that name while the first is attached: refused */
    fm_pool *p2 = fm_pool_create(&FM_POOL_DESC(thing, .name = "enemy bullets"));
    assert_int_equal(fm_telemetry_add_pool(t, p2), -1);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_true(fm_test_contains(env->errors.message, "'enemy_bullets'"));
    assert_true(fm_test_contains(env->errors.message, "attached"));
    /* a pool named like the tag: another kind, refused */
    fm_pool *p3 = fm_pool_create(&FM_POOL_DESC(thing, .name = "level"));
    assert_int_equal(fm_telemetry_add_pool(t, p3), -1);
    assert_true(fm_test_contains(env->errors.message, "another kind"));
    /* detached, the source takes the new pool (a rebuilt world) */
    fm_telemetry_detach(t, 0);
    assert_false(fm_telemetry_get_source(t, 0)->attached);
    assert_int_equal(fm_telemetry_add_pool(t, p2), 0);
    assert_true(fm_telemetry_get_source(t, 0)->attached);
    fm_telemetry_detach(t, 99); /* out of range: nothing */
    /* a full registry */
    fm_pool *p4 = fm_pool_create(&FM_POOL_DESC(thing, .name = "seventh"));
    fm_pool *p5 = fm_pool_create(&FM_POOL_DESC(thing, .name = "eighth"));
    assert_int_equal(fm_telemetry_add_pool(t, p4), 6);
    assert_int_equal(fm_telemetry_add_pool(t, p5), -1);
    assert_true(fm_test_contains(env->errors.message, "max_sources"));
    /* NULL objects */
    assert_int_equal(fm_telemetry_add_pool(t, NULL), -1);
    assert_int_equal(fm_telemetry_add_arena(t, NULL), -1);
    assert_int_equal(fm_telemetry_add_frame_arena(t, NULL), -1);
    assert_int_equal(fm_telemetry_add_closure_pool(t, NULL), -1);
    assert_int_equal(fm_telemetry_add_tag(t, NULL), -1);
    assert_int_equal(fm_telemetry_add_counters(t, "x", NULL), -1);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_int_equal(fm_telemetry_source_count(t), 7);
    fm_telemetry_destroy(t);
    fm_pool_destroy(p5);
    fm_pool_destroy(p4);
    fm_pool_destroy(p3);
    fm_pool_destroy(p2);
    fm_pool_destroy(p);
    fm_closure_pool_destroy(cp);
    fm_frame_arena_destroy(fa);
    fm_arena_destroy(a);
    fm_tag_destroy(tag);
}

/* ================================================================ sampling */

/* Every frame's deltas add up to each object's own counters, and the levels
 * of the newest frame are the object's. */
/* A counters source of an eager pool (the classic backend): its growths and
 * their time are the frame's in-allocation growths, and its backend
 * "classic" survives a CSV round trip. */
static void test_telemetry_counters_growths_are_sampled_and_classic_round_trips(void **state) {
    (void)state;
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    fm_telemetry_counters c = {.item_size = 48, .capacity = 32};
    int s = fm_telemetry_add_counters(t, "eager", &c);
    assert_int_equal(s, 0);
    fm_telemetry_set_source_shape(t, 0, FM_TELEMETRY_BACKEND_CLASSIC, 48, 1);
    c.total_allocs = c.live = 40;
    c.capacity = 96;
    c.grow_events = 1;
    c.grow_ns = 7000;
    fm_telemetry_frame_end(t);
    fm_telemetry_frame_end(t);
    const fm_telemetry_sample *x = fm_telemetry_get_sample(t, 0, 0);
    assert_int_equal(x->grow_events, 1);
    assert_int_equal(x->grow_ns, 7000);
    assert_int_equal(x->capacity, 96);
    assert_int_equal(fm_telemetry_get_frame(t, 0)->grow_events, 1);
    assert_int_equal(fm_telemetry_get_sample(t, 1, 0)->grow_events, 0);
    assert_int_equal(fm_telemetry_get_source(t, 0)->total_grow_ns, 7000);
    assert_string_equal(fm_telemetry_backend_name(FM_TELEMETRY_BACKEND_CLASSIC), "classic");
    char err[256];
    assert_true(fm_telemetry_write_csv(t, "tel_classic.csv", err, sizeof err));
    fm_telemetry *back = fm_telemetry_read_csv("tel_classic.csv", err, sizeof err);
    if (!back) fail_msg("%s", err);
    assert_int_equal(fm_telemetry_get_source(back, 0)->backend, FM_TELEMETRY_BACKEND_CLASSIC);
    assert_int_equal(fm_telemetry_get_sample(back, 0, 0)->grow_events, 1);
    fm_telemetry_destroy(back);
    fm_telemetry_destroy(t);
    remove("tel_classic.csv");
}

static void test_telemetry_frame_end_samples_each_objects_own_counters(void **state) {
    fm_test_env *env = *state;
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "budget", .soft_limit_bytes = 4 << 20,
                                               .hard_limit_bytes = 8 << 20});
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(big_thing, .name = "things", .initial_capacity = 64,
                                              .tag = tag));
    fm_arena *a = fm_arena_create(&(fm_arena_desc){.name = "scratch", .commit_step = 4096});
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.arena.commit_step = 4096});
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){.name = "calls"});
    fm_telemetry_counters heap = {.item_size = 40};
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 64});
    int sp = fm_telemetry_add_pool(t, p), sa = fm_telemetry_add_arena(t, a);
    int sf = fm_telemetry_add_frame_arena(t, fa), sc = fm_telemetry_add_closure_pool(t, cp);
    int st = fm_telemetry_add_tag(t, tag), sh = fm_telemetry_add_counters(t, "heap", &heap);
    void *items[600];
    size_t n = 0;
    fm_closure *cls[16];
    for (int f = 0; f < 20; f++) {
        /* pool: 30 more each frame, 10 freed; a level reset every 7 frames */
        for (int k = 0; k < 30; k++) items[n++] = fm_pool_alloc(p);
        for (int k = 0; k < 10; k++) fm_pool_free(p, items[--n]);
        if (f % 7 == 6) {
            fm_pool_reset(p);
            n = 0;
        }
        /* arena: a scratch that grows, reset every 5 frames */
        for (int k = 0; k < f + 1; k++) assert_non_null(fm_arena_alloc(a, 1000, 16));
        if (f % 5 == 4) fm_arena_reset(a);
        /* frame arena: advanced each frame */
        fm_frame_arena_advance(fa);
        for (int k = 0; k < 3; k++) assert_non_null(fm_frame_alloc(fa, 2000, 16));
        /* closures: made and released, and one refused (no function) */
        for (int k = 0; k < 16; k++) cls[k] = fm_closure_make(cp, nop_call, NULL, 0);
        for (int k = 0; k < 16; k++) fm_closure_release(cls[k]);
        assert_null(fm_closure_make(cp, NULL, NULL, 0));
        /* counters: the caller's own */
        heap.total_allocs += 5;
        heap.total_frees += 2;
        heap.live += 3;
        if (heap.live > heap.peak_live) heap.peak_live = heap.live;
        fm_telemetry_frame_end(t);
    }
    assert_int_equal(fm_telemetry_frame_count(t), 20);
    fm_pool_stats ps;
    fm_pool_get_stats(p, &ps);
    assert_int_equal(SUM(t, sp, allocs), ps.total_allocs);
    assert_int_equal(SUM(t, sp, frees), ps.total_frees); /* a reset's frees included */
    assert_int_equal(SUM(t, sp, resets), ps.resets);
    assert_int_equal(ps.resets, 2);
    for (uint32_t i = 0; i < 20; i++) /* in the frames they happened */
        assert_int_equal(fm_telemetry_get_sample(t, i, (uint32_t)sp)->resets, i % 7 == 6);
    assert_int_equal(SUM(t, sp, alloc_ns), 0); /* no timing: counts and growth times only */
    assert_int_equal(SUM(t, sp, grow_events), ps.alloc_grow_events);
    assert_true(ps.alloc_grow_events > 0);
    assert_int_equal(SUM(t, sp, grow_ns), ps.alloc_grow_ns);
    assert_int_equal(SUM(t, sp, ahead_grow_events), 0);
    assert_int_equal(LAST(t, sp)->live, ps.live);
    assert_int_equal(LAST(t, sp)->capacity, ps.capacity);
    assert_int_equal(LAST(t, sp)->peak_live, ps.peak_live);
    assert_int_equal(fm_telemetry_get_source(t, sp)->chunk_items, ps.items_per_chunk);
    assert_int_equal(fm_telemetry_get_source(t, sp)->item_size, ps.stride);
    fm_arena_stats as;
    fm_arena_get_stats(a, &as);
    assert_int_equal(SUM(t, sa, allocs), as.total_allocs);
    assert_int_equal(SUM(t, sa, resets), 4);
    assert_int_equal(SUM(t, sa, commit_events), as.commit_events);
    assert_int_equal(LAST(t, sa)->bytes_used, as.used);
    assert_int_equal(LAST(t, sa)->high_water, as.high_water);
    assert_int_equal(LAST(t, sa)->capacity, as.committed);
    fm_frame_arena_stats fs;
    fm_frame_arena_get_stats(fa, &fs);
    assert_int_equal(SUM(t, sf, allocs), 60);
    assert_int_equal(SUM(t, sf, resets), 20); /* one advance per frame */
    assert_int_equal(SUM(t, sf, commit_events), fs.commit_events);
    assert_true(fs.commit_events > 0);
    assert_int_equal(LAST(t, sf)->bytes_used, 6000);
    assert_int_equal(LAST(t, sf)->capacity, fs.committed);
    fm_closure_pool_stats cs;
    fm_closure_pool_get_stats(cp, &cs);
    assert_int_equal(SUM(t, sc, failed), cs.refused);
    assert_int_equal(cs.refused, 20);
    assert_int_equal(SUM(t, sc, allocs), 20 * 16);
    assert_int_equal(SUM(t, sc, frees), 20 * 16);
    assert_int_equal(LAST(t, sc)->capacity, cs.capacity);
    fm_tag_stats ts;
    fm_tag_get_stats(tag, &ts);
    assert_int_equal(LAST(t, st)->capacity, ts.committed);
    assert_int_equal(LAST(t, st)->live, ts.live);
    assert_int_equal(LAST(t, st)->peak_live, ts.peak);
    assert_int_equal(fm_telemetry_get_source(t, st)->hard_limit, 8 << 20);
    assert_int_equal(SUM(t, sh, allocs), 100);
    assert_int_equal(SUM(t, sh, frees), 40);
    assert_int_equal(LAST(t, sh)->live, 60);
    assert_int_equal(LAST(t, sh)->capacity, 60); /* capacity 0: live */
    assert_int_equal(LAST(t, sh)->peak_live, 60);
    /* a frame's record sums its sources */
    for (uint32_t i = 0; i < 20; i++) {
        const fm_telemetry_frame *r = fm_telemetry_get_frame(t, i);
        assert_int_equal(r->frame, i);
        uint32_t grows = 0;
        for (uint32_t s = 0; s < fm_telemetry_source_count(t); s++)
            grows += (uint32_t)fm_telemetry_get_sample(t, i, s)->grow_events;
        assert_int_equal(r->grow_events, grows);
        assert_true(r->frame_ns >= r->sim_ns);
    }
    assert_int_equal(env->errors.by_code[FM_ERR_INVALID_ARG], 20); /* the refused makes */
    while (n) fm_pool_free(p, items[--n]);
    fm_telemetry_destroy(t);
    fm_closure_pool_destroy(cp);
    fm_frame_arena_destroy(fa);
    fm_arena_destroy(a);
    fm_pool_destroy(p);
    fm_tag_destroy(tag);
}

/* Closure pools: makes are allocations, releases frees; class pools' growth
 * inside a make is growth inside an allocation. */
static void test_telemetry_closure_pools_count_makes_releases_and_growth(void **state) {
    (void)state;
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){.name = "calls"});
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    int s = fm_telemetry_add_closure_pool(t, cp);
    fm_closure *c[3000];
    for (int i = 0; i < 3000; i++) c[i] = fm_closure_make(cp, nop_call, &i, sizeof i);
    fm_telemetry_frame_end(t);
    for (int i = 0; i < 1000; i++) fm_closure_release(c[i]);
    fm_telemetry_frame_end(t);
    assert_int_equal(fm_telemetry_get_sample(t, 0, (uint32_t)s)->allocs, 3000);
    assert_int_equal(fm_telemetry_get_sample(t, 0, (uint32_t)s)->live, 3000);
    assert_true(fm_telemetry_get_sample(t, 0, (uint32_t)s)->grow_events > 0);
    assert_int_equal(fm_telemetry_get_sample(t, 1, (uint32_t)s)->frees, 1000);
    assert_int_equal(fm_telemetry_get_sample(t, 1, (uint32_t)s)->live, 2000);
    assert_int_equal(fm_telemetry_get_sample(t, 1, (uint32_t)s)->peak_live, 3000);
    for (int i = 1000; i < 3000; i++) fm_closure_release(c[i]);
    fm_telemetry_destroy(t);
    fm_closure_pool_destroy(cp);
}

/* A tag's bytes against its budget, and the growths its hard limit refused. */
static void test_telemetry_tags_show_bytes_against_their_budget(void **state) {
    fm_test_env *env = *state;
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "level", .soft_limit_bytes = 192 << 10,
                                               .hard_limit_bytes = 256 << 10});
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(thing, .name = "props",
                                              .tag = tag, .initial_capacity = 1));
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    int s = fm_telemetry_add_tag(t, tag);
    void *items[20000];
    size_t n = 0;
    while (n < 20000 && (items[n] = fm_pool_alloc(p))) n++;
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    assert_true(env->errors.by_code[FM_WARN_BUDGET] >= 1);
    fm_telemetry_frame_end(t);
    const fm_telemetry_sample *x = fm_telemetry_get_sample(t, 0, (uint32_t)s);
    fm_tag_stats ts;
    fm_tag_get_stats(tag, &ts);
    assert_int_equal(x->capacity, ts.committed);
    assert_true(x->capacity <= 256 << 10);
    assert_true(x->capacity > 192 << 10);
    assert_int_equal(x->live, n * sizeof(thing));
    assert_int_equal(x->failed, 1);
    while (n) fm_pool_free(p, items[--n]);
    fm_telemetry_destroy(t);
    fm_pool_destroy(p);
    fm_tag_destroy(tag);
}

/* Time: frame_ns from frame_begin when called, else from the last frame end;
 * caller-measured allocation time lands in its source and the frame's sum. */
static void test_telemetry_frame_times_split_allocation_maintenance_and_the_rest(void **state) {
    (void)state;
    fm_telemetry *t = make_two_sources(8);
    fm_telemetry_add_alloc_ns(t, 0, 4000);
    fm_telemetry_add_alloc_ns(t, 0, 1000);
    fm_telemetry_add_alloc_ns(t, 1, 500);
    fm_telemetry_add_alloc_ns(t, 7, 500); /* out of range: nothing */
    fm_telemetry_frame_end(t);
    const fm_telemetry_frame *r = fm_telemetry_get_frame(t, 0);
    assert_int_equal(fm_telemetry_get_sample(t, 0, 0)->alloc_ns, 5000);
    assert_int_equal(fm_telemetry_get_sample(t, 0, 1)->alloc_ns, 500);
    assert_int_equal(r->alloc_total_ns, 5500);
    assert_true(r->frame_ns >= r->maint_ns);
    assert_int_equal(r->sim_ns, r->frame_ns > 5500 + r->maint_ns ? r->frame_ns - 5500 - r->maint_ns : 0);
    /* A wait before frame_begin is not part of the next frame. */
    fm_test_sleep_ms(20);
    /* The frame lies inside [t0, t1], which the sleep is not part of (a
     * fixed bound failed under load: a preempted frame_begin/end pair). */
    uint64_t t0 = fm_clock_now();
    fm_telemetry_frame_begin(t);
    fm_telemetry_frame_end(t);
    uint64_t t1 = fm_clock_now();
    assert_true(fm_telemetry_get_frame(t, 1)->frame_ns <= fm_clock_to_ns(t1 - t0));
    assert_int_equal(fm_telemetry_get_frame(t, 1)->alloc_total_ns, 0); /* taken by frame 0 */
    /* Without it, the frame runs from the last frame end. */
    fm_test_sleep_ms(20);
    fm_telemetry_frame_end(t);
    assert_true(fm_telemetry_get_frame(t, 2)->frame_ns >= 19 * 1000 * 1000);
    /* render time lands in the newest frame */
    fm_telemetry_set_render_ns(t, 1234);
    assert_int_equal(fm_telemetry_get_frame(t, 2)->render_ns, 1234);
    assert_int_equal(fm_telemetry_get_frame(t, 1)->render_ns, 0);
    fm_telemetry_destroy(t);
}

/* A pool with desc.timing reports its own time inside alloc and free calls
 * as the source's alloc_ns, frame by frame, beside what the caller adds;
 * untimed pools still give counts and growth times. */
static void test_telemetry_timed_pools_give_their_time_inside_calls_per_frame(void **state) {
    (void)state;
    static const fm_pool_timing modes[] = {FM_POOL_TIMING_EVERY_CALL, FM_POOL_TIMING_SAMPLED};
    for (size_t m = 0; m < 2; m++) {
        /* 4 KiB chunks: the first frame's 400 items grow both pools. */
        fm_pool *timed = fm_pool_create(
            &FM_POOL_DESC(thing, .name = "timed", .chunk_bytes = 4096, .timing = modes[m]));
        fm_pool *plain = fm_pool_create(&FM_POOL_DESC(thing, .name = "plain", .chunk_bytes = 4096));
        fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
        int st = fm_telemetry_add_pool(t, timed), sp = fm_telemetry_add_pool(t, plain);
        void *a[400], *b[400];
        uint64_t before = 0;
        for (int f = 0; f < 6; f++) {
            for (int i = 0; i < 400; i++) a[i] = fm_pool_alloc(timed), b[i] = fm_pool_alloc(plain);
            for (int i = 0; i < 400; i++) fm_pool_free(timed, a[i]), fm_pool_free(plain, b[i]);
            if (f == 5) fm_telemetry_add_alloc_ns(t, (uint32_t)st, 1000000); /* the caller's too */
            fm_telemetry_frame_end(t);
            fm_pool_stats ps;
            fm_pool_get_stats(timed, &ps);
            uint64_t now = ps.alloc_ns_total + ps.free_ns_total;
            const fm_telemetry_sample *x = fm_telemetry_get_sample(t, (uint32_t)f, (uint32_t)st);
            assert_int_equal(x->alloc_ns, now - before + (f == 5 ? 1000000 : 0));
            assert_int_equal(x->allocs, 400);
            assert_int_equal(x->frees, 400);
            before = now;
            const fm_telemetry_sample *y = fm_telemetry_get_sample(t, (uint32_t)f, (uint32_t)sp);
            assert_int_equal(y->alloc_ns, 0);
            assert_int_equal(y->allocs, 400);
            assert_int_equal(fm_telemetry_get_frame(t, (uint32_t)f)->alloc_total_ns,
                             x->alloc_ns + y->alloc_ns);
        }
        fm_pool_stats ps;
        fm_pool_get_stats(timed, &ps);
        assert_true(ps.timed_calls > 0);
        assert_true(SUM(t, st, alloc_ns) > 1000000); /* 4,800 calls took some time */
        /* The growth of the first frame: timed in both pools, in grow_ns. */
        assert_true(SUM(t, sp, grow_events) > 0 && SUM(t, sp, grow_ns) > 0);
        assert_true(SUM(t, st, grow_events) > 0 && SUM(t, st, grow_ns) > 0);
        fm_telemetry_destroy(t);
        fm_pool_destroy(plain);
        fm_pool_destroy(timed);
    }
}

/* A detached source records zeros; its history and totals stay. */
static void test_telemetry_detached_sources_keep_their_history(void **state) {
    (void)state;
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(thing, .name = "things"));
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    int s = fm_telemetry_add_pool(t, p);
    void *x = fm_pool_alloc(p);
    fm_telemetry_frame_end(t);
    fm_telemetry_detach(t, (uint32_t)s);
    fm_pool_free(p, x);
    fm_pool_destroy(p); /* the telemetry no longer reads it */
    fm_telemetry_frame_end(t);
    assert_int_equal(fm_telemetry_get_sample(t, 0, (uint32_t)s)->allocs, 1);
    assert_int_equal(fm_telemetry_get_sample(t, 1, (uint32_t)s)->allocs, 0);
    assert_int_equal(fm_telemetry_get_sample(t, 1, (uint32_t)s)->live, 0);
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)s)->total_allocs, 1);
    /* a new pool of the name continues the source, counted from its own start */
    fm_pool *q = fm_pool_create(&FM_POOL_DESC(thing, .name = "things"));
    void *y = fm_pool_alloc(q);
    assert_int_equal(fm_telemetry_add_pool(t, q), s);
    void *z = fm_pool_alloc(q);
    fm_telemetry_frame_end(t);
    assert_int_equal(fm_telemetry_get_sample(t, 2, (uint32_t)s)->allocs, 1);
    assert_int_equal(fm_telemetry_get_sample(t, 2, (uint32_t)s)->live, 2);
    fm_pool_free(q, y);
    fm_pool_free(q, z);
    fm_pool_destroy(q);
    fm_telemetry_destroy(t);
}

/* clear: frames and totals go, peaks restart from the live counts. */
static void test_telemetry_clear_restarts_totals_and_peaks(void **state) {
    (void)state;
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(thing, .name = "things"));
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    fm_telemetry_add_pool(t, p);
    void *items[100];
    for (int i = 0; i < 100; i++) items[i] = fm_pool_alloc(p);
    for (int i = 10; i < 100; i++) fm_pool_free(p, items[i]);
    fm_telemetry_frame_end(t);
    assert_int_equal(fm_telemetry_get_sample(t, 0, 0)->peak_live, 100);
    fm_telemetry_clear(t);
    assert_int_equal(fm_telemetry_frame_count(t), 0);
    assert_int_equal(fm_telemetry_frames_pushed(t), 0);
    assert_int_equal(fm_telemetry_get_source(t, 0)->total_allocs, 0);
    assert_int_equal(fm_telemetry_get_source(t, 0)->peak_live, 0);
    fm_telemetry_set_render_ns(t, 1); /* empty: no-op */
    items[10] = fm_pool_alloc(p);
    fm_telemetry_frame_end(t);
    assert_int_equal(fm_telemetry_get_sample(t, 0, 0)->peak_live, 11); /* not the old 100 */
    assert_int_equal(fm_telemetry_get_source(t, 0)->peak_live, 11);
    assert_int_equal(fm_telemetry_get_frame(t, 0)->frame, 1); /* frame numbers go on */
    for (int i = 0; i < 11; i++) fm_pool_free(p, items[i]);
    fm_telemetry_destroy(t);
    fm_pool_destroy(p);
}

/* The ring, the sources, the streaming and the sampling allocate nothing
 * after create: the only block is create's. */
static void test_telemetry_allocates_nothing_after_create(void **state) {
    fm_test_env *env = *state;
    fm_test_allocator mine;
    fm_test_allocator_init(&mine);
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(thing, .name = "things", .initial_capacity = 4096,
                                              .grow_ahead = true));
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){0});
    fm_telemetry *t = fm_telemetry_create(
        &(fm_telemetry_desc){.frames = 4, .allocator = fm_test_allocator_get(&mine)});
    uint64_t calls = mine.alloc_calls;
    fm_telemetry_counters c = {0};
    fm_telemetry_add_pool(t, p);
    fm_telemetry_add_frame_arena(t, fa);
    fm_telemetry_add_counters(t, "c", &c);
    char err[256];
    fm_file_writer *w = fm_file_begin("tel_noalloc.csv", err, sizeof err);
    assert_non_null(w);
    fm_telemetry_stream_csv(t, w);
    void *items[64];
    for (int f = 0; f < 50; f++) {
        fm_telemetry_frame_begin(t);
        for (int i = 0; i < 64; i++) items[i] = fm_pool_alloc(p);
        for (int i = 0; i < 64; i++) fm_pool_free(p, items[i]);
        fm_frame_arena_advance(fa);
        fm_telemetry_add_alloc_ns(t, 0, 10);
        fm_telemetry_grow_ahead(t);
        fm_telemetry_frame_end(t);
        fm_telemetry_set_render_ns(t, 5);
    }
    fm_telemetry_clear(t);
    fm_telemetry_stream_end(t);
    assert_int_equal(mine.alloc_calls, calls);
    assert_true(fm_file_commit(w, err, sizeof err));
    fm_telemetry_destroy(t);
    fm_test_allocator_assert_clean(&mine);
    fm_test_allocator_release(&mine);
    fm_frame_arena_destroy(fa);
    fm_pool_destroy(p);
    (void)env;
}

/* ============================================================ grow-ahead */

/* Pools that opt in grow at the boundary, sized from the largest net
 * allocation of a frame in the window: the next frame's allocations find
 * room, and the growth is counted as grow-ahead, not in an allocation. */
static void test_telemetry_grow_ahead_moves_growth_to_the_frame_boundary(void **state) {
    (void)state;
    /* 4 KiB chunks (about 150 items): growth every frame or two without
     * grow-ahead, whatever the default chunk size and the build's metadata */
    fm_pool *ahead = fm_pool_create(&FM_POOL_DESC(thing, .name = "ahead", .initial_capacity = 64,
                                                  .chunk_bytes = 4096, .grow_ahead = true));
    fm_pool *plain = fm_pool_create(
        &FM_POOL_DESC(thing, .name = "plain", .initial_capacity = 64, .chunk_bytes = 4096));
    fm_pool *fixed = fm_pool_create(&FM_POOL_DESC(thing, .name = "fixed", .initial_capacity = 4096,
                                                  .growth = FM_GROWTH_FIXED, .grow_ahead = true));
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 64, .grow_ahead_window = 8});
    int sa = fm_telemetry_add_pool(t, ahead), sp = fm_telemetry_add_pool(t, plain);
    int sf = fm_telemetry_add_pool(t, fixed);
    static void *live[3][8000];
    size_t n = 0;
    /* 40 frames gaining 150 items each */
    for (int f = 0; f < 40; f++) {
        fm_pool *pools[3] = {ahead, plain, fixed};
        for (int k = 0; k < 150; k++, n++)
            for (int q = 0; q < 3; q++) live[q][n] = fm_pool_alloc(pools[q]);
        assert_int_equal(fm_telemetry_grow_ahead(t), 0);
        fm_telemetry_frame_end(t);
    }
    fm_pool_stats a, p, x;
    fm_pool_get_stats(ahead, &a);
    fm_pool_get_stats(plain, &p);
    fm_pool_get_stats(fixed, &x);
    /* after the first frames, grow-ahead kept ahead of the demand */
    uint64_t late_in_alloc = 0;
    for (uint32_t i = 2; i < 40; i++) late_in_alloc += fm_telemetry_get_sample(t, i, (uint32_t)sa)->grow_events;
    assert_int_equal(late_in_alloc, 0);
    assert_true(SUM(t, sa, ahead_grow_events) > 0);
    assert_int_equal(SUM(t, sa, ahead_grow_events), a.ahead_grow_events);
    assert_int_equal(SUM(t, sa, ahead_grow_ns), a.ahead_grow_ns);
    assert_int_equal(SUM(t, sa, grow_events), a.alloc_grow_events);
    assert_int_equal(a.grow_events, a.alloc_grow_events + a.ahead_grow_events);
    /* headroom: at least margin (2) x the largest net (150) free */
    assert_true(a.capacity - a.live >= 2 * 150);
    /* the others grew only in allocations (or not at all) */
    assert_true(SUM(t, sp, grow_events) > 2);
    assert_int_equal(SUM(t, sp, ahead_grow_events), 0);
    assert_int_equal(p.ahead_grow_events, 0);
    assert_int_equal(x.grow_events, 0);
    assert_int_equal(SUM(t, sf, ahead_grow_events), 0);
    /* grow-ahead's time is maintenance */
    bool maint = false;
    for (uint32_t i = 0; i < 40; i++) maint |= fm_telemetry_get_frame(t, i)->maint_ns > 0;
    assert_true(maint);
    /* quiet frames: once the window forgets the growth, no more growth */
    for (int f = 0; f < 20; f++) {
        fm_telemetry_grow_ahead(t);
        fm_telemetry_frame_end(t);
    }
    fm_pool_stats a2;
    fm_pool_get_stats(ahead, &a2);
    assert_int_equal(a2.ahead_grow_events, a.ahead_grow_events);
    for (size_t i = 0; i < n; i++) {
        fm_pool_free(ahead, live[0][i]);
        fm_pool_free(plain, live[1][i]);
        fm_pool_free(fixed, live[2][i]);
    }
    fm_telemetry_destroy(t);
    fm_pool_destroy(fixed);
    fm_pool_destroy(plain);
    fm_pool_destroy(ahead);
}

/* A refused grow-ahead (a tag's hard limit) is counted and reported by the
 * pool, which stays as it was; the frame's allocations then grow in place. */
static void test_telemetry_grow_ahead_refused_by_a_budget_leaves_the_pool_as_it_was(void **state) {
    fm_test_env *env = *state;
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "small", .hard_limit_bytes = 256 << 10});
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(thing, .name = "things", .tag = tag,
                                              .initial_capacity = 64, .grow_ahead = true));
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    fm_telemetry_add_pool(t, p);
    void *items[8000];
    size_t n = 0;
    for (int k = 0; k < 3000; k++) items[n++] = fm_pool_alloc(p);
    fm_pool_stats before;
    fm_pool_get_stats(p, &before);
    int errors = env->errors.count;
    assert_int_equal(fm_telemetry_grow_ahead(t), 1);
    assert_int_equal(env->errors.count, errors + 1);
    assert_int_equal(fm_last_error(), FM_ERR_BUDGET);
    fm_pool_stats after;
    fm_pool_get_stats(p, &after);
    assert_int_equal(after.capacity, before.capacity);
    assert_int_equal(after.ahead_grow_events, 0);
    while (n) fm_pool_free(p, items[--n]);
    fm_telemetry_destroy(t);
    fm_pool_destroy(p);
    fm_tag_destroy(tag);
}

/* ================================================================== ring */

static void test_telemetry_ring_wraps_keeping_the_newest_frames(void **state) {
    (void)state;
    fm_telemetry *t = make_two_sources(10);
    assert_int_equal(fm_telemetry_capacity(t), 10);
    push_frames(t, 0, 4);
    assert_int_equal(fm_telemetry_frame_count(t), 4);
    assert_int_equal(fm_telemetry_get_frame(t, 0)->frame, 0);
    push_frames(t, 4, 21); /* 25 frames pushed, the ring holds 15..24 */
    assert_int_equal(fm_telemetry_frame_count(t), 10);
    assert_int_equal(fm_telemetry_frames_pushed(t), 25);
    for (uint32_t i = 0; i < 10; i++) {
        assert_int_equal(fm_telemetry_get_frame(t, i)->frame, 15 + i);
        assert_int_equal(fm_telemetry_get_sample(t, i, 0)->live, 10 * (15 + i));
        assert_int_equal(fm_telemetry_get_sample(t, i, 1)->bytes_used, 4096 + 15 + i);
    }
    assert_null(fm_telemetry_get_frame(t, 10));
    assert_null(fm_telemetry_get_sample(t, 0, 2));
    assert_null(fm_telemetry_get_sample(t, 10, 0));
    /* Totals cover every frame pushed, not only those held. */
    const fm_telemetry_source *si = fm_telemetry_get_source(t, 0);
    assert_int_equal(si->total_allocs, 24 * 25 / 2);
    assert_int_equal(si->total_grow_events, 9); /* 0, 3, ..., 24 */
    assert_int_equal(si->total_ahead_grow_events, 5);
    assert_int_equal(si->peak_live, 240);
    assert_int_equal(si->last_grow_frame, 24);
    /* Frame records sum their sources' growth. */
    assert_int_equal(fm_telemetry_get_frame(t, 9)->grow_events, 1);
    /* frame_end after pushes numbers its frame after them */
    fm_telemetry_frame_end(t);
    assert_int_equal(fm_telemetry_get_frame(t, 9)->frame, 25);
    assert_int_equal(fm_telemetry_get_frame(t, 0)->frame, 16);
    fm_telemetry_push(t, NULL, NULL); /* no record: nothing */
    assert_int_equal(fm_telemetry_frames_pushed(t), 26);
    fm_telemetry_destroy(t);
}

static void test_telemetry_suggest_capacity_rounds_to_whole_chunks(void **state) {
    (void)state;
    assert_int_equal(fm_telemetry_suggest_capacity(1000, 1.25, 512), 1536);
    assert_int_equal(fm_telemetry_suggest_capacity(1024, 1.0, 512), 1024);
    assert_int_equal(fm_telemetry_suggest_capacity(1025, 1.0, 512), 1536);
    assert_int_equal(fm_telemetry_suggest_capacity(0, 2.0, 100), 100); /* at least a chunk */
    assert_int_equal(fm_telemetry_suggest_capacity(10, 0.5, 0), 10);   /* headroom < 1 is 1 */
    assert_int_equal(fm_telemetry_suggest_capacity(10, NAN, 0), 10);
    assert_true(fm_telemetry_clock_overhead_ns() < 10000);
    assert_string_equal(fm_telemetry_kind_name(FM_TELEMETRY_CLOSURES), "closures");
    assert_string_equal(fm_telemetry_kind_name(FM_TELEMETRY_KIND_COUNT), "?");
    assert_string_equal(fm_telemetry_backend_name(FM_TELEMETRY_BACKEND_MALLOC), "malloc");
    assert_string_equal(fm_telemetry_backend_name(FM_TELEMETRY_BACKEND_COUNT), "?");
}

/* Numbers from files may be anything: the suggestion saturates at the most
 * whole chunks a uint64_t holds, never wraps. */
static void test_telemetry_suggest_capacity_saturates_at_extreme_values(void **state) {
    (void)state;
    const uint64_t max = UINT64_MAX;
    assert_true(fm_telemetry_suggest_capacity(max, 1.25, 64) == max / 64 * 64);
    assert_true(fm_telemetry_suggest_capacity(max, 1.0, 1) == max);
    assert_true(fm_telemetry_suggest_capacity(max, 1000.0, 100) == max / 100 * 100);
    assert_true(fm_telemetry_suggest_capacity(max - 1, 1.0, 3) == max / 3 * 3);
    assert_true(fm_telemetry_suggest_capacity(max / 2, 2.0, 1) == max);
    assert_true(fm_telemetry_suggest_capacity(1ull << 62, 1.25, 1) == 5ull << 60);
    assert_true(fm_telemetry_suggest_capacity(1, 1.0, max) == max);
    assert_true(fm_telemetry_suggest_capacity(max, 1.0, max) == max);
    assert_true(fm_telemetry_suggest_capacity(max, 1.0, max - 1) == max - 1);
    assert_true(fm_telemetry_suggest_capacity(2, 1.0, max - 1) == max - 1);
}

/* Totals over frames (from a file: any value) saturate instead of wrapping,
 * and a frame's growth count saturates at UINT32_MAX. */
static void test_telemetry_totals_saturate_instead_of_wrapping(void **state) {
    (void)state;
    fm_telemetry *t = make_two_sources(4);
    for (uint64_t f = 0; f < 3; f++) {
        fm_telemetry_sample s[2] = {{.allocs = UINT64_MAX, .frees = UINT64_MAX - 1,
                                     .alloc_ns = UINT64_MAX, .grow_events = UINT64_MAX,
                                     .grow_ns = UINT64_MAX, .ahead_grow_events = (1ull << 32) + 5,
                                     .ahead_grow_ns = UINT64_MAX, .peak_live = UINT64_MAX},
                                    {.grow_events = UINT32_MAX, .ahead_grow_events = 7}};
        fm_telemetry_push(t, &(fm_telemetry_frame){.frame = f}, s);
    }
    const fm_telemetry_source *si = fm_telemetry_get_source(t, 0);
    assert_true(si->total_allocs == UINT64_MAX);
    assert_true(si->total_frees == UINT64_MAX);
    assert_true(si->total_alloc_ns == UINT64_MAX);
    assert_true(si->total_grow_events == UINT64_MAX);
    assert_true(si->total_grow_ns == UINT64_MAX);
    assert_true(si->total_ahead_grow_events == 3 * ((1ull << 32) + 5));
    assert_true(si->total_ahead_grow_ns == UINT64_MAX);
    assert_true(si->peak_live == UINT64_MAX);
    const fm_telemetry_frame *r = fm_telemetry_get_frame(t, 2);
    assert_int_equal(r->grow_events, UINT32_MAX);
    assert_int_equal(r->ahead_grow_events, UINT32_MAX);
    fm_telemetry_destroy(t);
}

/* ================================================================ CSV out */

static void test_telemetry_csv_has_header_and_a_row_per_frame_and_source(void **state) {
    (void)state;
    /* the header: every column of the sample and frame lists, in the table */
    const char *header = FM_TELEMETRY_CSV_COLUMNS "," FM_TELEMETRY_CSV_COLUMNS_ADDED;
    int listed = 0;
#define COLUMN(f, d) listed += strstr(header, #f) != NULL && d[0] != 0;
    FM_TELEMETRY_SAMPLE_FIELDS(COLUMN)
    FM_TELEMETRY_FRAME_FIELDS(COLUMN)
#undef COLUMN
    assert_int_equal(listed, 15 + 5);
    fm_telemetry *t = make_two_sources(16);
    push_frames(t, 100, 5);
    char err[256];
    assert_true(fm_telemetry_write_csv(t, "tel_rows.csv", err, sizeof err));
    char *csv = slurp("tel_rows.csv");
    assert_true(strncmp(csv, FM_TELEMETRY_CSV_COLUMNS ",resets,failed,soft_limit,hard_limit\n",
                        strlen(FM_TELEMETRY_CSV_COLUMNS) + 36) == 0);
    int lines = 0;
    for (char *p = csv; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 1 + 5 * 2);
    /* the engine's columns as before issue 20, then the added ones */
    assert_non_null(strstr(csv, "\n100,particles,pool,pool,100,50,1000,1024,1000,32,1024,200,0,0,1,700,"
                                "0,0,0,16000100,1000,200,50,0,0,0,0,0\n"));
    assert_non_null(strstr(csv, "\n102,frame,arena,pool,3,0,0,65536,0,0,1,0,0,0,0,0,4198,9000,0,"));
    free(csv);
    /* the same rows to a stream */
    FILE *f = fopen("tel_rows2.csv", "wb");
    assert_true(fm_telemetry_write_csv_file(t, f));
    fclose(f);
    char *a = slurp("tel_rows.csv"), *b = slurp("tel_rows2.csv");
    assert_string_equal(a, b);
    free(a);
    free(b);
    /* An unwritable path fails with a message and leaves nothing behind. */
    assert_false(fm_telemetry_write_csv(t, "no_such_dir/x.csv", err, sizeof err));
    assert_true(fm_test_contains(err, "no_such_dir/x.csv"));
    assert_false(fm_telemetry_write_csv(t, NULL, err, sizeof err));
    fm_telemetry_destroy(t);
}

static void test_telemetry_csv_round_trips_through_the_reader(void **state) {
    (void)state;
    fm_telemetry *t = make_two_sources(600);
    fm_telemetry_add_source(t, "budget", FM_TELEMETRY_TAG, 1, 1);
    push_frames(t, 0, 50);
    char err[256] = "";
    assert_true(fm_telemetry_write_csv(t, "tel_rt.csv", err, sizeof err));
    fm_telemetry *u = fm_telemetry_read_csv("tel_rt.csv", err, sizeof err);
    if (!u) fail_msg("%s", err);
    assert_int_equal(fm_telemetry_frame_count(u), 50);
    assert_int_equal(fm_telemetry_source_count(u), 3);
    const fm_telemetry_source *a = fm_telemetry_get_source(t, 0), *b = fm_telemetry_get_source(u, 0);
    assert_string_equal(b->name, "particles");
    assert_int_equal(b->kind, FM_TELEMETRY_POOL);
    assert_int_equal(fm_telemetry_get_source(u, 1)->kind, FM_TELEMETRY_ARENA);
    assert_int_equal(fm_telemetry_get_source(u, 2)->kind, FM_TELEMETRY_TAG);
    assert_int_equal(b->item_size, 32);
    assert_int_equal(b->chunk_items, 1024);
    assert_int_equal(b->total_allocs, a->total_allocs);
    assert_int_equal(b->total_grow_events, a->total_grow_events);
    assert_int_equal(b->peak_live, a->peak_live);
    for (uint32_t i = 0; i < 50; i++) {
        assert_memory_equal(fm_telemetry_get_frame(u, i), fm_telemetry_get_frame(t, i),
                            sizeof(fm_telemetry_frame));
        for (uint32_t s = 0; s < 3; s++)
            assert_memory_equal(fm_telemetry_get_sample(u, i, s), fm_telemetry_get_sample(t, i, s),
                                sizeof(fm_telemetry_sample));
    }
    /* Writing the loaded copy gives the same bytes. */
    assert_true(fm_telemetry_write_csv(u, "tel_rt2.csv", err, sizeof err));
    char *x = slurp("tel_rt.csv"), *y = slurp("tel_rt2.csv");
    assert_string_equal(x, y);
    free(x);
    free(y);
    fm_telemetry_destroy(u);
    fm_telemetry_destroy(t);
}

/* A live telemetry of real objects (a tag's limits included) comes back from
 * its CSV as it was. */
static void test_telemetry_csv_of_live_objects_round_trips(void **state) {
    (void)state;
    fm_tag *tag = fm_tag_create(&(fm_tag_desc){.name = "level", .soft_limit_bytes = 1 << 20,
                                               .hard_limit_bytes = 3 << 20});
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(thing, .name = "things", .tag = tag));
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 16});
    fm_telemetry_add_pool(t, p);
    fm_telemetry_add_tag(t, tag);
    void *items[3000];
    for (int f = 0; f < 10; f++) {
        for (int i = 0; i < 300; i++) items[f * 300 + i] = fm_pool_alloc(p);
        if (f == 4) fm_pool_reset(p); /* its items gone; the row says so */
        fm_telemetry_frame_end(t);
    }
    assert_int_equal(fm_telemetry_get_sample(t, 4, 0)->resets, 1);
    assert_int_equal(fm_telemetry_get_sample(t, 4, 0)->frees, 1500);
    assert_int_equal(fm_telemetry_get_sample(t, 4, 0)->live, 0);
    char err[256];
    assert_true(fm_telemetry_write_csv(t, "tel_live.csv", err, sizeof err));
    fm_telemetry *u = fm_telemetry_read_csv("tel_live.csv", err, sizeof err);
    assert_non_null(u);
    assert_int_equal(fm_telemetry_get_source(u, 1)->soft_limit, 1 << 20);
    assert_int_equal(fm_telemetry_get_source(u, 1)->hard_limit, 3 << 20);
    assert_int_equal(fm_telemetry_get_source(u, 0)->chunk_items, fm_telemetry_get_source(t, 0)->chunk_items);
    for (uint32_t i = 0; i < 10; i++)
        for (uint32_t s = 0; s < 2; s++)
            assert_memory_equal(fm_telemetry_get_sample(u, i, s), fm_telemetry_get_sample(t, i, s),
                                sizeof(fm_telemetry_sample));
    for (int i = 1500; i < 3000; i++) fm_pool_free(p, items[i]);
    fm_telemetry_destroy(u);
    fm_telemetry_destroy(t);
    fm_pool_destroy(p);
    fm_tag_destroy(tag);
}

static void test_telemetry_stream_writes_each_frame_once_with_final_render_time(void **state) {
    (void)state;
    fm_telemetry *t = make_two_sources(4); /* smaller than the run: streaming keeps all */
    char err[256];
    fm_file_writer *w = fm_file_begin("tel_stream.csv", err, sizeof err);
    assert_non_null(w);
    fm_telemetry_stream_csv(t, w);
    for (uint64_t k = 0; k < 9; k++) {
        push_frames(t, k, 1);
        fm_telemetry_set_render_ns(t, 1000 + k);
    }
    fm_telemetry_clear(t); /* writes the pending frame first */
    push_frames(t, 9, 1);
    fm_telemetry_stream_end(t);
    fm_telemetry_stream_end(t); /* again: nothing */
    push_frames(t, 10, 1);       /* not streamed */
    assert_true(fm_file_commit(w, err, sizeof err));
    fm_telemetry *u = fm_telemetry_read_csv("tel_stream.csv", err, sizeof err);
    assert_non_null(u);
    assert_int_equal(fm_telemetry_frame_count(u), 10);
    for (uint32_t i = 0; i < 9; i++)
        assert_int_equal(fm_telemetry_get_frame(u, i)->render_ns, 1000 + i);
    fm_telemetry_destroy(u);
    /* destroy ends a stream: the pending frame is written */
    w = fm_file_begin("tel_stream2.csv", err, sizeof err);
    fm_telemetry_stream_csv(t, w);
    push_frames(t, 20, 2);
    fm_telemetry_destroy(t);
    assert_true(fm_file_commit(w, err, sizeof err));
    u = fm_telemetry_read_csv("tel_stream2.csv", err, sizeof err);
    assert_non_null(u);
    assert_int_equal(fm_telemetry_frame_count(u), 2);
    fm_telemetry_destroy(u);
}

/* ================================================================= CSV in */

#define HDR FM_TELEMETRY_CSV_COLUMNS "\n"
#define ROW_P(f) #f ",particles,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n"
#define ROW_A(f) #f ",frame,arena,pool,1,0,0,65536,0,0,1,0,0,0,0,0,64,64,0,100,50,5,1,0\n"

static void expect_csv_error(const char *text, size_t len, const char *want) {
    char err[512] = "";
    fm_telemetry *t = fm_telemetry_read_csv_mem(text, len, "in.csv", err, sizeof err);
    if (t || !fm_test_contains(err, want)) {
        print_error("input:\n%.*s\nexpected error containing '%s', got '%s'\n", (int)len, text ? text : "",
                    want, t ? "(success)" : err);
        fm_telemetry_destroy(t);
        fail();
    }
}
#define EXPECT_CSV_ERROR(text, want) expect_csv_error((text), sizeof(text) - 1, (want))

static void test_telemetry_reader_names_file_and_line_of_every_problem(void **state) {
    (void)state;
    /* the valid base reads */
    char err[256];
    const char ok[] = HDR ROW_P(1) ROW_A(1) ROW_P(2) ROW_A(2);
    fm_telemetry *t = fm_telemetry_read_csv_mem(ok, sizeof ok - 1, "in.csv", err, sizeof err);
    assert_non_null(t);
    assert_int_equal(fm_telemetry_frame_count(t), 2);
    fm_telemetry_destroy(t);
    /* columns in another order and extra columns are fine */
    const char reordered[] =
        "extra,pool,frame,kind,backend,allocs,frees,live,capacity,peak_live,item_size,chunk_items,"
        "alloc_ns,grow_events,grow_ns,ahead_grow_events,ahead_grow_ns,bytes_used,high_water,"
        "commit_events,frame_ns,sim_ns,alloc_total_ns,maint_ns,render_ns,failed\n"
        "zz,p,7,pool,malloc,1,0,1,1,1,32,1,5,0,0,0,0,0,0,0,100,50,5,1,0,3\n";
    t = fm_telemetry_read_csv_mem(reordered, sizeof reordered - 1, "in.csv", err, sizeof err);
    assert_non_null(t);
    assert_int_equal(fm_telemetry_get_frame(t, 0)->frame, 7);
    assert_int_equal(fm_telemetry_get_source(t, 0)->backend, FM_TELEMETRY_BACKEND_MALLOC);
    assert_int_equal(fm_telemetry_get_sample(t, 0, 0)->failed, 3);
    fm_telemetry_destroy(t);
    /* a source first seen in a later frame: zeros before it */
    const char later[] = HDR ROW_P(1) ROW_P(2) ROW_A(2) ROW_P(3) ROW_A(3);
    t = fm_telemetry_read_csv_mem(later, sizeof later - 1, "in.csv", err, sizeof err);
    assert_non_null(t);
    assert_int_equal(fm_telemetry_source_count(t), 2);
    assert_int_equal(fm_telemetry_get_sample(t, 0, 1)->bytes_used, 0);
    assert_int_equal(fm_telemetry_get_sample(t, 1, 1)->bytes_used, 64);
    fm_telemetry_destroy(t);

    expect_csv_error("", 0, "in.csv:1: empty file");
    expect_csv_error(NULL, 0, "in.csv:1: empty file");
    EXPECT_CSV_ERROR(HDR, "in.csv:1: no data rows");
    EXPECT_CSV_ERROR("frame,pool,kind\n1,a,pool\n", "in.csv:1: missing column 'backend'");
    EXPECT_CSV_ERROR(HDR ROW_P(1) "1,frame,arena,pool,1,0\n", "in.csv:3: truncated line (6 of 24 fields)");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0",
                     "in.csv:2: truncated line (the file ends without a newline)");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0,9\n",
                     "in.csv:2: too many fields");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,5x,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad number '5x' in column 'alloc_ns'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,-1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad number '-1' in column 'allocs'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,99999999999999999999,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "bad number '99999999999999999999'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad number '' in column 'alloc_ns'");
    EXPECT_CSV_ERROR(HDR "1,particles,heap,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad kind 'heap'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,slab,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad backend 'slab'");
    EXPECT_CSV_ERROR(HDR "1,,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad pool name");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,0,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: chunk_items must be at least 1");
    EXPECT_CSV_ERROR(HDR ROW_P(2) ROW_A(2) ROW_P(1) ROW_A(1), "in.csv:4: frame 1 after frame 2");
    EXPECT_CSV_ERROR(HDR ROW_P(1) ROW_A(1) ROW_P(2), "in.csv:4: frame 2 has no row for pool 'frame'");
    EXPECT_CSV_ERROR(HDR ROW_P(1) ROW_P(1), "in.csv:3: pool 'particles' appears twice in frame 1");
    EXPECT_CSV_ERROR(HDR ROW_P(1) "2,particles,arena,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:3: pool 'particles' changes kind");
    /* the added columns: numbers too, when present */
    EXPECT_CSV_ERROR(FM_TELEMETRY_CSV_COLUMNS ",soft_limit\n"
                     "1,particles,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0,x\n",
                     "in.csv:2: bad number 'x' in column 'soft_limit'");
    /* more sources than a telemetry takes */
    {
        size_t cap = 300 * 128 + 512, len = 0;
        char *many = malloc(cap);
        len += (size_t)snprintf(many + len, cap - len, "%s", HDR);
        for (int s = 0; s <= FM_TELEMETRY_MAX_SOURCES; s++)
            len += (size_t)snprintf(many + len, cap - len,
                                    "1,p%d,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n", s);
        expect_csv_error(many, len, "in.csv:258: more than 256 pools");
        free(many);
    }
    /* binary input: a PNG header, and a NUL in the middle of a row */
    EXPECT_CSV_ERROR("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "in.csv:2: binary content (byte 0x1a)");
    const char nul[] = HDR "1,particles,pool\0,pool\n";
    expect_csv_error(nul, sizeof nul - 1, "in.csv:2: binary content (byte 0x00)");
    /* files */
    assert_null(fm_telemetry_read_csv("no_such_file.csv", err, sizeof err));
    assert_true(fm_test_contains(err, "no_such_file.csv: cannot open: No such file or directory"));
    fm_test_write_text("tel_bad.csv", HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,zz,0,0,0,0,0,0,0,100,50,5,1,0\n");
    assert_null(fm_telemetry_read_csv("tel_bad.csv", err, sizeof err));
    assert_true(fm_test_contains(err, "tel_bad.csv:2: bad number 'zz'"));
    assert_null(fm_telemetry_read_csv(NULL, err, sizeof err));
    /* err may be NULL */
    assert_null(fm_telemetry_read_csv_mem("x", 1, NULL, NULL, 0));
}

/* Files the engine wrote before issue 20 (tests/tools/data: the 24 columns
 * of FM_TELEMETRY_CSV_COLUMNS, nothing else) still load: the added fields are
 * zero, the rest as written. */
static void test_telemetry_reader_loads_files_written_before_issue_20(void **state) {
    (void)state;
    char err[512] = "";
    fm_telemetry *t = fm_telemetry_read_csv(FM_DATA "/run1.csv", err, sizeof err);
    if (!t) fail_msg("%s", err);
    char *text = slurp(FM_DATA "/run1.csv");
    assert_true(strncmp(text, FM_TELEMETRY_CSV_COLUMNS "\n", strlen(FM_TELEMETRY_CSV_COLUMNS) + 1) == 0);
    free(text);
    int s = source_of(t, "particles");
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)s)->kind, FM_TELEMETRY_POOL);
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)s)->chunk_items, 64);
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)source_of(t, "frame"))->kind,
                     FM_TELEMETRY_ARENA);
    assert_true(fm_telemetry_frame_count(t) > 0);
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++) {
        assert_int_equal(fm_telemetry_get_sample(t, i, (uint32_t)s)->resets, 0);
        assert_int_equal(fm_telemetry_get_sample(t, i, (uint32_t)s)->failed, 0);
    }
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)s)->soft_limit, 0);
    /* written again, it has the added columns and reads back the same */
    assert_true(fm_telemetry_write_csv(t, "tel_old_again.csv", err, sizeof err));
    fm_telemetry *u = fm_telemetry_read_csv("tel_old_again.csv", err, sizeof err);
    assert_non_null(u);
    assert_int_equal(fm_telemetry_frame_count(u), fm_telemetry_frame_count(t));
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++)
        for (uint32_t k = 0; k < fm_telemetry_source_count(t); k++)
            assert_memory_equal(fm_telemetry_get_sample(u, i, k), fm_telemetry_get_sample(t, i, k),
                                sizeof(fm_telemetry_sample));
    fm_telemetry_destroy(u);
    fm_telemetry_destroy(t);
    t = fm_telemetry_read_csv(FM_DATA "/run2.csv", err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)source_of(t, "entities"))->backend,
                     FM_TELEMETRY_BACKEND_MALLOC);
    fm_telemetry_destroy(t);
}

/* ================================================================== trace */

#ifdef FM_JSON_CHECKED_ON_HOST
/* A cross build run under an emulator (wine) cannot start the host's
 * python3: ctest's memory_telemetry_json runs the same check on the files
 * this suite leaves, after it. */
static int json_check(const char *path) {
    print_message("[ did not apply ] checking %s here: python3 runs on the host (ctest's "
                  "memory_telemetry_json checks it after this suite)\n",
                  path);
    return -1;
}
#define JSON_CHECK_EQ(path, rc) (void)json_check(path)
#define JSON_CHECK_NE(path, rc) (void)json_check(path)
#else
#define JSON_CHECK_EQ(path, rc) assert_int_equal(json_check(path), rc)
#define JSON_CHECK_NE(path, rc) assert_int_not_equal(json_check(path), rc)
static int json_check(const char *path) {
#ifdef FM_PYTHON3
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "e=d[\"traceEvents\"]; "
             "assert any(x[\"ph\"]==\"X\" for x in e); "
             "assert all(\"ph\" in x and \"name\" in x for x in e)' %s",
             FM_PYTHON3, path);
    return system(cmd);
#else
    /* tools/dev installs python3; a build without it must not pass this. */
    (void)path;
    fail_msg("python3 was not found when configuring: the trace JSON cannot be checked");
    return 1;
#endif
}
#endif

static void test_telemetry_trace_is_json_with_frames_and_growth_events(void **state) {
    (void)state;
    fm_telemetry *t = make_two_sources(32);
    push_frames(t, 1, 7);
    char err[256];
    assert_true(fm_telemetry_write_trace(t, "tel_trace.json", err, sizeof err));
    JSON_CHECK_EQ("tel_trace.json", 0);
    char *j = slurp("tel_trace.json");
    int frames = 0, grows = 0, aheads = 0;
    for (const char *p = j; (p = strstr(p, "\"ph\":\"X\",\"pid\":1,\"tid\":1")); p++) frames++;
    for (const char *p = j; (p = strstr(p, "\"name\":\"grow particles\",\"ph\":\"i\"")); p++) grows++;
    for (const char *p = j; (p = strstr(p, "\"name\":\"grow-ahead particles\",\"ph\":\"i\"")); p++) aheads++;
    assert_int_equal(frames, 7);
    assert_int_equal(grows, 2);  /* frames 3 and 6 */
    assert_int_equal(aheads, 1); /* frame 5 */
    free(j);
    /* The check itself fails on broken JSON. */
    fm_test_write_text("tel_broken.json", "{\"traceEvents\":[{\"ph\":\"X\",}]");
    JSON_CHECK_NE("tel_broken.json", 0);
    assert_false(fm_telemetry_write_trace(t, "no_such_dir/t.json", err, sizeof err));
    assert_true(fm_test_contains(err, "no_such_dir/t.json"));
    struct stat st;
    assert_int_not_equal(stat("no_such_dir", &st), 0);
    fm_telemetry_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_telemetry_create_checks_its_desc_and_frees_every_byte),
        T(test_telemetry_add_source_finds_names_and_refuses_bad_ones),
        T(test_telemetry_objects_of_every_kind_are_registered_by_name),
        T(test_telemetry_counters_growths_are_sampled_and_classic_round_trips),
        T(test_telemetry_frame_end_samples_each_objects_own_counters),
        T(test_telemetry_closure_pools_count_makes_releases_and_growth),
        T(test_telemetry_tags_show_bytes_against_their_budget),
        T(test_telemetry_frame_times_split_allocation_maintenance_and_the_rest),
        T(test_telemetry_timed_pools_give_their_time_inside_calls_per_frame),
        T(test_telemetry_detached_sources_keep_their_history),
        T(test_telemetry_clear_restarts_totals_and_peaks),
        T(test_telemetry_allocates_nothing_after_create),
        T(test_telemetry_grow_ahead_moves_growth_to_the_frame_boundary),
        T(test_telemetry_grow_ahead_refused_by_a_budget_leaves_the_pool_as_it_was),
        T(test_telemetry_ring_wraps_keeping_the_newest_frames),
        T(test_telemetry_suggest_capacity_rounds_to_whole_chunks),
        T(test_telemetry_suggest_capacity_saturates_at_extreme_values),
        T(test_telemetry_totals_saturate_instead_of_wrapping),
        T(test_telemetry_csv_has_header_and_a_row_per_frame_and_source),
        T(test_telemetry_csv_round_trips_through_the_reader),
        T(test_telemetry_csv_of_live_objects_round_trips),
        T(test_telemetry_stream_writes_each_frame_once_with_final_render_time),
        T(test_telemetry_reader_names_file_and_line_of_every_problem),
        T(test_telemetry_reader_loads_files_written_before_issue_20),
        T(test_telemetry_trace_is_json_with_frames_and_growth_events),
#undef T
    };
    return cmocka_run_group_tests_name("telemetry", tests, NULL, NULL);
}
