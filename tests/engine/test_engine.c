/* tests/engine/test_engine.c: frame lifecycle, determinism, telemetry vs pool stats,
 * grow-ahead, backends, controls, headless runner. */
#include "fm_test.h"

#include "eng_test.h"
#include "engine/classic_pool.h"
#include "engine/engine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DT ENG_TEST_DT
/* Most suites run a fifth of the default load: the same code paths, fast
 * enough for Valgrind; the load target itself is checked at scale 1. */
#define SMALL 0.2

static int source(const eng *e, const char *name) {
    int s = fm_telemetry_find_source(eng_get_telemetry(e), name);
    assert_true(s >= 0);
    return s;
}

/* ---------------------------------------------------------------- lifecycle */

static void test_engine_frame_lifecycle_records_one_frame_per_begin_end(void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.seed = 1});
    const fm_telemetry *t = eng_get_telemetry(e);
    assert_int_equal(fm_telemetry_source_count(t), 9); /* six pools, the frame arena, two tags */
    assert_int_equal(eng_get_render_list(e).count, 0);
    eng_frame_begin(e);
    eng_update(e, DT);
    eng_render_list rl = eng_get_render_list(e);
    assert_true(rl.count > 0);
    assert_int_equal(fm_telemetry_frame_count(t), 0); /* not sampled before the end */
    eng_frame_end(e);
    assert_int_equal(fm_telemetry_frame_count(t), 1);
    eng_frame_end(e); /* no open frame: nothing */
    assert_int_equal(fm_telemetry_frame_count(t), 1);
    /* the render list: layers in order, each sprite in its layer and in the world */
    rl = eng_get_render_list(e);
    assert_int_equal(rl.layer_start[0], 0);
    assert_int_equal(rl.layer_start[ENG_LAYER_COUNT], rl.count);
    for (uint32_t l = 0; l < ENG_LAYER_COUNT; l++) {
        assert_true(rl.layer_start[l] <= rl.layer_start[l + 1]);
        for (uint32_t i = rl.layer_start[l]; i < rl.layer_start[l + 1]; i++)
            assert_int_equal(rl.items[i].layer, l);
    }
    eng_info in;
    eng_get_info(e, &in);
    assert_int_equal(in.frame, 1);
    assert_int_equal(rl.layer_start[1], in.particles);
    assert_int_equal(rl.layer_start[2] - rl.layer_start[1], in.entities);
    /* update without begin opens the frame; begin twice closes the first */
    eng_update(e, DT);
    eng_frame_begin(e);
    eng_frame_end(e);
    assert_int_equal(fm_telemetry_frame_count(t), 3);
    const fm_telemetry_frame *r = fm_telemetry_get_frame(t, 0);
    assert_int_equal(r->frame, 0);
    assert_true(r->frame_ns >= r->sim_ns);
    assert_true(r->frame_ns > 0);
    /* render time from the platform lands in the newest frame */
    eng_set_render_ns(e, 1234);
    assert_int_equal(fm_telemetry_get_frame(t, 2)->render_ns, 1234);
    eng_destroy(e);
    eng_destroy(NULL);
}

/* A paused game: frames begin and end with no update between. The lists of
 * the newest update (entities, particles, render list) live in the frame
 * arena; a paused frame must keep them for the next update, the info query
 * and the renderer, on both backends (the malloc one walks them at destroy). */
static void test_engine_paused_frames_keep_the_newest_update_readable(void **state) {
    (void)state;
    static const int pauses[] = {1, 2, 10};
    for (int backend = 0; backend < ENG_BACKEND_COUNT; backend++) {
        for (size_t k = 0; k < sizeof pauses / sizeof pauses[0]; k++) {
            eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 8, .backend = (eng_backend)backend});
            eng_test_run(e, 20);
            eng_info before, paused, after;
            eng_get_info(e, &before);
            assert_true(before.particles > 0 && before.entities > 0);
            eng_render_list rl = eng_get_render_list(e);
            assert_true(rl.count > 0);
            eng_sprite first = rl.items[0], last = rl.items[rl.count - 1];
            for (int f = 0; f < pauses[k]; f++) {
                eng_frame_begin(e);
                eng_frame_end(e);
            }
            /* the paused world is the world of the newest update */
            eng_get_info(e, &paused);
            assert_int_equal(paused.frame, before.frame + (uint64_t)pauses[k]);
            assert_int_equal(paused.checksum, before.checksum);
            assert_int_equal(paused.particles, before.particles);
            assert_int_equal(paused.entities, before.entities);
            rl = eng_get_render_list(e);
            assert_int_equal(rl.count, before.particles + before.entities + rl.layer_start[3] - rl.layer_start[2]);
            assert_memory_equal(&rl.items[0], &first, sizeof first);
            assert_memory_equal(&rl.items[rl.count - 1], &last, sizeof last);
            /* and the next update goes on from it */
            eng_frame_begin(e);
            eng_update(e, DT);
            eng_frame_end(e);
            eng_get_info(e, &after);
            assert_int_equal(after.entities, before.entities);
            assert_true(after.particles > 0);
            assert_true(after.checksum != before.checksum);
            assert_int_equal(after.failures, 0);
            eng_test_run(e, 3);
            eng_destroy(e);
        }
    }
}

/* The same world whether or not the game paused on the way: a paused frame
 * runs no timer and stops the scene's clock ("ramp" raises the load every
 * frame; emitter timers fire 30 to 120 frames after they are armed). */
static void test_engine_a_pause_does_not_change_the_simulation(void **state) {
    (void)state;
    eng *a = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 6, .scene = "ramp"});
    eng *b = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 6, .scene = "ramp"});
    eng_test_run(a, 40);
    for (int f = 0; f < 100; f++) {
        eng_frame_begin(a);
        eng_frame_end(a);
    }
    eng_test_run(a, 120);
    eng_test_run(b, 160);
    eng_info ia, ib;
    eng_get_info(a, &ia);
    eng_get_info(b, &ib);
    assert_int_equal(ia.frame, 260);
    assert_int_equal(ib.frame, 160);
    assert_int_equal(ia.checksum, ib.checksum);
    assert_int_equal(ia.particles, ib.particles);
    const fm_telemetry *ta = eng_get_telemetry(a), *tb = eng_get_telemetry(b);
    int s = source(a, "particles");
    assert_int_equal(fm_telemetry_get_source(ta, (uint32_t)s)->total_allocs,
                     fm_telemetry_get_source(tb, (uint32_t)s)->total_allocs);
    /* the paused frames are recorded, with nothing allocated */
    for (uint32_t i = 40; i < 140; i++)
        assert_int_equal(fm_telemetry_get_sample(ta, i, (uint32_t)s)->allocs, 0);
    eng_destroy(a);
    eng_destroy(b);
}

static void test_engine_default_scale_meets_the_load_target(void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.seed = 5});
    eng_test_run(e, 120);
    eng_info in;
    eng_get_info(e, &in);
    assert_true(in.particles >= 20000);
    assert_true(in.spawned >= 2000);
    assert_true(in.died >= 1500);
    assert_int_equal(in.entities, 300);
    assert_true(in.emitters > 50);
    eng_set_scale(e, 5.0);
    eng_test_run(e, 20);
    eng_get_info(e, &in);
    assert_true(in.particles >= 100000);
    assert_true(in.spawned >= 10000);
    assert_int_equal(in.entities, 1500);
    eng_destroy(e);
}

/* The default scene's particles are effect objects of 1 KiB: on the
 * classic backend the block its warm-up ends with holds 16,384 of them,
 * 16 MiB linked at once (the regrowth of milliseconds the demo shows). */
static void test_engine_default_particles_are_1_kib_and_the_classic_pool_ends_on_a_16_mib_block(
    void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.seed = 5});
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).item_size, 1024);
    eng_destroy(e);
    e = eng_test_make(&(eng_desc){.seed = 5, .backend = ENG_BACKEND_CLASSIC});
    eng_test_run(e, 30);
    const fm_telemetry *t = eng_get_telemetry(e);
    bool seen = false;
    for (uint32_t s = 0; s < fm_telemetry_source_count(t); s++) {
        const fm_telemetry_source *src = fm_telemetry_get_source(t, s);
        if (strcmp(src->name, "particles") != 0 || src->kind != FM_TELEMETRY_POOL) continue;
        seen = true;
        assert_int_equal(src->item_size, 1024);
        /* first block 1,024 (the default initial capacity), then four doublings */
        assert_int_equal(src->total_grow_events, 4);
        const fm_telemetry_sample *last = fm_telemetry_get_sample(t, fm_telemetry_frame_count(t) - 1, s);
        assert_non_null(last);
        assert_int_equal(last->capacity, 1024 + 2048 + 4096 + 8192 + 16384);
        assert_int_equal(16384 * src->item_size, 16u << 20);
    }
    assert_true(seen);
    eng_destroy(e);
}

static void test_engine_same_seed_same_world_other_seed_differs(void **state) {
    (void)state;
    eng_run_result a, b, c;
    char err[256];
    fm_telemetry *ta = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 9, .scene = "bursts"}, 400, &a, err, sizeof err);
    fm_telemetry *tb = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 9, .scene = "bursts"}, 400, &b, err, sizeof err);
    fm_telemetry *tc = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 10, .scene = "bursts"}, 400, &c, err, sizeof err);
    assert_non_null(ta);
    assert_non_null(tb);
    assert_non_null(tc);
    assert_int_equal(a.frames, 400);
    assert_int_equal(a.checksum, b.checksum);
    assert_int_equal(a.particles, b.particles);
    assert_int_equal(a.total_spawned, b.total_spawned);
    assert_int_equal(a.total_collisions, b.total_collisions);
    assert_int_equal(a.total_timers, b.total_timers);
    assert_true(a.total_collisions > 0);
    assert_true(a.total_timers > 0);
    assert_true(a.checksum != c.checksum);
    /* same counts frame by frame */
    for (uint32_t i = 0; i < fm_telemetry_frame_count(ta); i++) {
        for (uint32_t s = 0; s < fm_telemetry_source_count(ta); s++) {
            assert_int_equal(fm_telemetry_get_sample(ta, i, s)->allocs, fm_telemetry_get_sample(tb, i, s)->allocs);
            assert_int_equal(fm_telemetry_get_sample(ta, i, s)->live, fm_telemetry_get_sample(tb, i, s)->live);
        }
    }
    fm_telemetry_destroy(ta);
    fm_telemetry_destroy(tb);
    fm_telemetry_destroy(tc);
}

static void test_engine_malloc_backend_simulates_the_same_world(void **state) {
    (void)state;
    enum { MAX_SOURCES = 64 };
    uint64_t pool_ns[MAX_SOURCES] = {0}, malloc_ns[MAX_SOURCES] = {0};
    bool untimed = true;
    /* A pool with a few short batches can read 0 ns on a coarse clock
     * (qemu's CNTVCT moves by about 1 us): the pair of runs repeats, its
     * times summed, until every pool shows time, at most 8 times. */
    for (int run = 0; run < 8 && untimed; run++) {
        eng_run_result p, m;
        char err[256];
        fm_telemetry *tp = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 4, .scene = "ramp"}, 300, &p, err, sizeof err);
        fm_telemetry *tm = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 4, .scene = "ramp", .backend = ENG_BACKEND_MALLOC},
                                             300, &m, err, sizeof err);
        assert_non_null(tp);
        assert_non_null(tm);
        assert_int_equal(p.checksum, m.checksum);
        assert_int_equal(p.total_spawned, m.total_spawned);
        assert_int_equal(p.total_timers, m.total_timers);
        /* counted and timed the same way: same counts, time measured on both */
        assert_true(fm_telemetry_source_count(tp) <= MAX_SOURCES);
        untimed = false;
        for (uint32_t s = 0; s < fm_telemetry_source_count(tp); s++) {
            const fm_telemetry_source *a = fm_telemetry_get_source(tp, s), *b = fm_telemetry_get_source(tm, s);
            assert_string_equal(a->name, b->name);
            if (a->kind == FM_TELEMETRY_TAG) continue; /* malloc's items are charged to no tag */
            assert_int_equal(a->total_allocs, b->total_allocs);
            assert_int_equal(a->total_frees, b->total_frees);
            assert_int_equal(a->peak_live, b->peak_live);
            if (a->kind == FM_TELEMETRY_POOL) {
                assert_int_equal(a->backend, FM_TELEMETRY_BACKEND_POOL);
                assert_int_equal(b->backend, FM_TELEMETRY_BACKEND_MALLOC);
                pool_ns[s] += a->total_alloc_ns;
                malloc_ns[s] += b->total_alloc_ns;
                untimed |= pool_ns[s] == 0 || malloc_ns[s] == 0;
                assert_int_equal(b->total_grow_events, 0);
                assert_int_equal(b->chunk_items, 1);
            }
        }
        fm_telemetry_destroy(tp);
        fm_telemetry_destroy(tm);
    }
    assert_false(untimed);
}

/* The classic backend (Boost object_pool's doubling eager pool) runs the
 * same world; its growths, none of framemem's, are in its telemetry: every
 * block after the first (the config's initial_capacity) doubles the last. */
static void test_engine_classic_backend_simulates_the_same_world_and_counts_its_growths(void **state) {
    (void)state;
    eng_run_result p, c;
    char err[256];
    fm_telemetry *tp = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 4, .scene = "ramp"}, 300, &p, err, sizeof err);
    fm_telemetry *tc = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 4, .scene = "ramp", .backend = ENG_BACKEND_CLASSIC},
                                         300, &c, err, sizeof err);
    assert_non_null(tp);
    assert_non_null(tc);
    assert_int_equal(p.checksum, c.checksum);
    assert_int_equal(p.total_spawned, c.total_spawned);
    uint64_t classic_growths = 0, classic_grow_ns = 0, classic_ns = 0;
    for (uint32_t s = 0; s < fm_telemetry_source_count(tp); s++) {
        const fm_telemetry_source *a = fm_telemetry_get_source(tp, s), *b = fm_telemetry_get_source(tc, s);
        assert_string_equal(a->name, b->name);
        if (a->kind == FM_TELEMETRY_TAG) continue; /* classic blocks are charged to no tag */
        assert_int_equal(a->total_allocs, b->total_allocs);
        assert_int_equal(a->peak_live, b->peak_live);
        if (a->kind != FM_TELEMETRY_POOL) continue;
        assert_int_equal(b->backend, FM_TELEMETRY_BACKEND_CLASSIC);
        assert_string_equal(fm_telemetry_backend_name(b->backend), "classic");
        /* timed: a small pool's pops can all fall under the clock pair's
         * overhead (subtracted per batch), the pools together cannot */
        classic_ns += b->total_alloc_ns;
        /* each block doubles the last: after g growths the blocks hold
         * initial * (2^(g+1) - 1) items, the peak among them */
        const fm_telemetry_sample *last = fm_telemetry_get_sample(tc, fm_telemetry_frame_count(tc) - 1, s);
        assert_non_null(last);
        assert_true(b->total_grow_events < 20);
        assert_true(last->capacity >= b->peak_live);
        assert_int_equal(last->capacity % ((2ull << b->total_grow_events) - 1), 0);
        classic_grow_ns += b->total_grow_ns;
        classic_growths += b->total_grow_events;
    }
    assert_true(classic_growths > 0);
    assert_true(classic_grow_ns > 0);
    assert_true(classic_ns > 0);
    fm_telemetry_destroy(tp);
    fm_telemetry_destroy(tc);
}

/* The eager pool itself: blocks double and every new slot is linked at
 * once; sizes that cannot be made are refused. */
static void test_classic_pool_doubles_its_blocks_and_links_every_slot(void **state) {
    (void)state;
    eng_classic_pool *p = eng_classic_pool_create(40, 4);
    assert_non_null(p);
    assert_int_equal(eng_classic_pool_free_count(p), 4);
    void *items[28];
    for (int i = 0; i < 28; i++) {
        items[i] = eng_classic_pool_alloc(p);
        assert_non_null(items[i]);
        assert_int_equal((uintptr_t)items[i] % 16, 0);
    }
    eng_classic_pool_stats st;
    eng_classic_pool_get_stats(p, &st);
    assert_int_equal(st.grow_events, 2); /* 4 + 8 + 16 */
    assert_int_equal(st.capacity, 28);
    assert_int_equal(eng_classic_pool_free_count(p), 0);
    assert_non_null(eng_classic_pool_alloc(p)); /* a block of 32, linked whole */
    eng_classic_pool_get_stats(p, &st);
    assert_int_equal(st.grow_events, 3);
    assert_int_equal(eng_classic_pool_free_count(p), 31);
    assert_true(st.grow_ticks >= st.grow_ticks_max);
    eng_classic_pool_free(p, items[5]);
    assert_ptr_equal(eng_classic_pool_alloc(p), items[5]);
    eng_classic_pool_destroy(p);
    assert_null(eng_classic_pool_create(SIZE_MAX - 3, 0));
}

/* eng_info counts the pools whose desc (defaults + config) asks for
 * grow-ahead and prefault, whatever the switches: what the demo's header and
 * summary report per pool. */
static void test_engine_info_counts_the_pools_the_config_sets_grow_ahead_and_prefault_for(void **state) {
    (void)state;
    fm_test_write_text("eng_info_pools.ini", "[pool.particles]\ngrow_ahead = false\n"
                                             "[pool.entities]\nprefault = false\ngrowth = fixed\n");
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 1, .config_path = "eng_info_pools.ini"});
    eng_info in;
    eng_get_info(e, &in);
    assert_int_equal(in.pools, 6);
    assert_int_equal(in.grow_ahead_pools, 4); /* particles opt out, entities are FIXED */
    assert_int_equal(in.prefault_pools, 5);
    assert_false(in.grow_ahead);
    assert_false(in.prefault);
    eng_destroy(e);
    e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 1});
    eng_get_info(e, &in);
    assert_int_equal(in.grow_ahead_pools, 6);
    assert_int_equal(in.prefault_pools, 6);
    eng_destroy(e);
    remove("eng_info_pools.ini");
}

static void test_engine_backend_names_cover_every_backend(void **state) {
    (void)state;
    assert_string_equal(eng_backend_name(ENG_BACKEND_POOL), "pool");
    assert_string_equal(eng_backend_name(ENG_BACKEND_MALLOC), "malloc");
    assert_string_equal(eng_backend_name(ENG_BACKEND_CLASSIC), "classic");
    assert_string_equal(eng_backend_name(ENG_BACKEND_COUNT), "?");
}

/* ------------------------------------------------------------- telemetry */

static void test_engine_telemetry_sums_equal_the_pools_own_stats(void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 2, .scene = "ramp", .grow_ahead = true, .telemetry_frames = 1000});
    eng_test_run(e, 500);
    const fm_telemetry *t = eng_get_telemetry(e);
    assert_int_equal(fm_telemetry_frame_count(t), 500);
    assert_true(eng_test_assert_telemetry_matches_pools(e) > 0);
    /* the frame arena's source */
    int fa = source(e, "frame");
    const fm_telemetry_sample *x = fm_telemetry_get_sample(t, 499, (uint32_t)fa);
    assert_true(x->bytes_used > 4000 * sizeof(void *));
    assert_true(x->high_water >= x->bytes_used);
    assert_true(x->allocs > 5);
    uint64_t commits = 0;
    for (uint32_t i = 0; i < 500; i++) commits += fm_telemetry_get_sample(t, i, (uint32_t)fa)->commit_events;
    assert_true(commits > 0);
    eng_destroy(e);
}

static void test_engine_ring_wraps_and_totals_cover_every_frame(void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 2, .telemetry_frames = 50});
    eng_test_run(e, 130);
    const fm_telemetry *t = eng_get_telemetry(e);
    assert_int_equal(fm_telemetry_frame_count(t), 50);
    assert_int_equal(fm_telemetry_frames_pushed(t), 130);
    assert_int_equal(fm_telemetry_get_frame(t, 0)->frame, 80);
    assert_int_equal(fm_telemetry_get_frame(t, 49)->frame, 129);
    /* The totals still cover all 130 frames. */
    int s = source(e, "particles");
    fm_pool_stats st;
    fm_pool_get_stats(eng_get_pool(e, "particles"), &st);
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)s)->total_allocs, st.total_allocs);
    eng_reset_stats(e);
    assert_int_equal(fm_telemetry_frame_count(t), 0);
    eng_test_run(e, 3);
    assert_int_equal(fm_telemetry_frame_count(t), 3);
    assert_int_equal(fm_telemetry_get_frame(t, 0)->frame, 130);
    eng_destroy(e);
}

static void test_engine_csv_and_trace_of_a_run_are_well_formed(void **state) {
    (void)state;
    char err[256];
    fm_telemetry *t = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 8}, 120, NULL, err, sizeof err);
    assert_non_null(t);
    assert_true(fm_telemetry_write_csv(t, "eng_run.csv", err, sizeof err));
    assert_true(fm_telemetry_write_trace(t, "eng_run.json", err, sizeof err));
    fm_telemetry *u = fm_telemetry_read_csv("eng_run.csv", err, sizeof err);
    assert_non_null(u);
    assert_int_equal(fm_telemetry_frame_count(u), 120);
    assert_int_equal(fm_telemetry_source_count(u), 9);
    for (uint32_t s = 0; s < 9; s++)
        assert_int_equal(fm_telemetry_get_source(u, s)->total_allocs, fm_telemetry_get_source(t, s)->total_allocs);
    fm_telemetry_destroy(u);
    fm_telemetry_destroy(t);
}

/* ------------------------------------------------------------- grow-ahead */

static uint64_t in_alloc_growth_after(const fm_telemetry *t, uint64_t frame) {
    uint64_t g = 0;
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++)
        if (fm_telemetry_get_frame(t, i)->frame > frame) g += fm_telemetry_get_frame(t, i)->grow_events;
    return g;
}

static uint64_t ahead_growth(const fm_telemetry *t) {
    uint64_t g = 0;
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++) g += fm_telemetry_get_frame(t, i)->ahead_grow_events;
    return g;
}

static void test_engine_grow_ahead_moves_growth_out_of_allocations(void **state) {
    (void)state;
    char err[256];
    /* Without grow-ahead the ramping scene regrows inside allocations after warm-up. */
    fm_telemetry *off = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 6, .scene = "ramp"}, 700, NULL, err, sizeof err);
    fm_telemetry *on = eng_run_headless(&(eng_desc){.scale = SMALL, .seed = 6, .scene = "ramp", .grow_ahead = true}, 700,
                                         NULL, err, sizeof err);
    assert_non_null(off);
    assert_non_null(on);
    assert_true(in_alloc_growth_after(off, 10) > 0);
    assert_int_equal(ahead_growth(off), 0);
    /* With it, after warm-up every growth happens at the frame boundary... */
    assert_int_equal(in_alloc_growth_after(on, 10), 0);
    assert_true(ahead_growth(on) > 0);
    /* ...and its time shows as maintenance. */
    uint64_t maint = 0;
    for (uint32_t i = 0; i < fm_telemetry_frame_count(on); i++) {
        const fm_telemetry_frame *r = fm_telemetry_get_frame(on, i);
        if (r->ahead_grow_events) {
            assert_true(r->maint_ns > 0);
            maint += r->maint_ns;
        }
    }
    assert_true(maint > 0);
    fm_telemetry_destroy(off);
    fm_telemetry_destroy(on);
}

static void test_engine_grow_ahead_switch_acts_on_the_running_world(void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 6, .scene = "ramp"});
    eng_set_grow_ahead(e, true);
    eng_test_run(e, 600);
    assert_int_equal(in_alloc_growth_after(eng_get_telemetry(e), 10), 0);
    eng_info in;
    eng_get_info(e, &in);
    assert_true(in.grow_ahead);
    eng_set_grow_ahead(e, false);
    eng_get_info(e, &in);
    assert_false(in.grow_ahead);
    eng_destroy(e);
}

/* ---------------------------------------------------------------- controls */

static void test_engine_burst_and_scale_change_the_load(void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 12});
    eng_test_run(e, 60);
    eng_info base;
    eng_get_info(e, &base);
    eng_burst(e, 1.0);
    eng_test_run(e, 30);
    eng_info burst;
    eng_get_info(e, &burst);
    assert_true(burst.spawned > 8 * base.spawned);
    assert_true(burst.particles > 5 * base.particles);
    assert_true(burst.burst_left > 0.0);
    eng_test_run(e, 60); /* the second is over */
    eng_get_info(e, &burst);
    assert_true(burst.burst_left == 0.0);
    eng_test_run(e, 60);
    eng_get_info(e, &burst);
    assert_true(burst.particles < 2 * base.particles);
    eng_set_scale(e, 2 * SMALL);
    eng_test_run(e, 60);
    eng_info two;
    eng_get_info(e, &two);
    assert_true(two.scale == (double)(2 * SMALL)); /* cast: x87 (i686) evaluates wider */
    assert_true(two.particles > 1.6 * base.particles);
    assert_int_equal(two.entities, 2 * base.entities);
    eng_set_scale(e, 1e9); /* clamped */
    eng_get_info(e, &two);
    assert_true(two.scale == 50.0);
    eng_set_scale(e, -1);
    eng_get_info(e, &two);
    assert_true(two.scale == 1.0);
    eng_burst(e, -5); /* ignored */
    eng_get_info(e, &two);
    assert_true(two.burst_left == 0.0);
    eng_destroy(e);
}

static void test_engine_backend_growth_and_prefault_switches_rebuild_the_world(void **state) {
    (void)state;
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 3});
    eng_test_run(e, 30);
    eng_set_backend(e, ENG_BACKEND_MALLOC);
    eng_info in;
    eng_get_info(e, &in);
    assert_int_equal(in.backend, ENG_BACKEND_MALLOC);
    assert_null(eng_get_pool(e, "particles"));
    assert_int_equal(in.particles, 0); /* restarted */
    eng_test_run(e, 30);
    const fm_telemetry *t = eng_get_telemetry(e);
    assert_int_equal(fm_telemetry_frame_count(t), 60); /* telemetry kept its frames */
    assert_int_equal(fm_telemetry_get_source(t, 0)->backend, FM_TELEMETRY_BACKEND_MALLOC);
    eng_set_backend(e, ENG_BACKEND_POOL);
    eng_test_run(e, 5);
    eng_set_growth(e, FM_GROWTH_LINEAR);
    eng_get_info(e, &in);
    assert_true(in.override_growth);
    assert_int_equal(in.growth, FM_GROWTH_LINEAR);
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).growth, FM_GROWTH_LINEAR);
    eng_test_run(e, 60);
    eng_clear_growth_override(e);
    eng_get_info(e, &in);
    assert_false(in.override_growth);
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).growth, FM_GROWTH_GEOMETRIC);
    eng_set_prefault(e, true);
    eng_get_info(e, &in);
    assert_true(in.prefault);
    assert_true(fm_pool_get_desc(eng_get_pool(e, "particles")).prefault);
    eng_test_run(e, 10);
    eng_set_growth(e, (fm_growth)99); /* ignored */
    eng_set_backend(e, (eng_backend)7);
    eng_get_info(e, &in);
    assert_int_equal(in.backend, ENG_BACKEND_POOL);
    eng_destroy(e);
}

static void test_engine_full_pools_spawn_less_without_error_reports(void **state) {
    fm_test_env *env = *state;
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 3, .override_growth = true, .growth = FM_GROWTH_FIXED});
    eng_test_run(e, 60);
    eng_info in;
    eng_get_info(e, &in);
    fm_pool_stats st;
    fm_pool_get_stats(eng_get_pool(e, "particles"), &st);
    assert_int_equal(in.particles, st.live);
    assert_int_equal(st.live, st.capacity); /* full */
    assert_int_equal(st.grow_events, 0);
    assert_int_equal(st.failed_allocs, 0); /* the engine asked only for what fits */
    assert_true(in.refused_allocs > 0);
    assert_int_equal(env->errors.count, 0);
    eng_destroy(e);
    /* max_capacity the same way, with growth up to it */
    FILE *f = fopen("eng_max.ini", "wb");
    fputs("[pool.particles]\nmax_capacity = 3000\n", f);
    fclose(f);
    e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 3, .config_path = "eng_max.ini"});
    eng_test_run(e, 60);
    eng_get_info(e, &in);
    assert_int_equal(in.particles, 3000);
    assert_true(in.refused_allocs > 0);
    fm_pool_get_stats(eng_get_pool(e, "particles"), &st);
    assert_true(st.grow_events > 0);
    assert_int_equal(env->errors.count, 0);
    eng_destroy(e);
}

static void test_engine_reload_config_applies_or_keeps_the_world(void **state) {
    (void)state;
    FILE *f = fopen("eng_reload.ini", "wb");
    fputs("[pool.particles]\ninitial_capacity = 40000\n", f);
    fclose(f);
    eng *e = eng_test_make(&(eng_desc){.scale = SMALL, .seed = 3});
    eng_test_run(e, 5);
    char err[512];
    assert_false(eng_reload_config(e, NULL, err, sizeof err)); /* none given at create */
    assert_true(fm_test_contains(err, "no config"));
    assert_false(eng_reload_config(e, "no_such_reload.ini", err, sizeof err));
    assert_true(fm_test_contains(err, "no_such_reload.ini"));
    eng_info in;
    eng_get_info(e, &in);
    assert_null(in.config_path);
    assert_true(in.particles > 0); /* not rebuilt */
    assert_true(eng_reload_config(e, "eng_reload.ini", err, sizeof err));
    fm_pool_stats st;
    fm_pool_get_stats(eng_get_pool(e, "particles"), &st);
    assert_true(st.capacity >= 40000);
    eng_get_info(e, &in);
    assert_string_equal(in.config_path, "eng_reload.ini");
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).initial_capacity, 40000);
    assert_non_null(eng_get_config(e));
    assert_true(eng_reload_config(e, NULL, err, sizeof err)); /* the same file again */
    eng_destroy(e);
}

/* --------------------------------------------------------------- config */

/* The engine applies a config file to its pools and frame arena as any game
 * does (fm_config_apply): problems inside the file, a section matching none
 * of its objects and values its own descs cannot take are reported at their
 * file:line, and the engine still builds with its defaults for those. */
static void test_engine_config_problems_are_reported_and_create_still_succeeds(void **state) {
    (void)state;
    FILE *f = fopen("eng_problems.ini", "wb");
    fputs("[pool.particles]\n"
          "max_capacity = 100\n" /* the engine's particles start at 1024 */
          "[pool.emitters]\n"
          "initial_capacity = 77\n"
          "size = 3\n"
          "\n"
          "[pool.zzz]\n"
          "initial_capacity = 5\n"
          "[pool.entities]\n"
          "initial_capacity = 300\n"
          "grow_ahead = off\n"
          "[arena.frame]\n"
          "commit_step = 131072\n",
          f);
    fclose(f);
    char err[512];
    eng *e = eng_create(&(eng_desc){.scale = SMALL, .seed = 3, .config_path = "eng_problems.ini"},
                        err, sizeof err);
    assert_non_null(e);
    const char *rep = eng_config_problems(e);
    fm_test_expect_contains(rep, "eng_problems.ini:1: [pool.particles] not applied to the program's "
                                 "desc: initial_capacity above max_capacity");
    fm_test_expect_contains(rep, "eng_problems.ini:5: [pool.emitters] unknown key 'size'");
    fm_test_expect_contains(rep, "eng_problems.ini:7: [pool.zzz] matches no pool of the program");
    assert_int_equal(fm_config_problem_count(eng_get_config(e)), 3);
    /* the good sections applied, the bad ones left the defaults */
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).initial_capacity, 1024);
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).max_capacity, 0);
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "emitters")).initial_capacity, 32);
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "entities")).initial_capacity, 300);
    assert_false(fm_pool_get_desc(eng_get_pool(e, "entities")).grow_ahead);
    assert_true(fm_pool_get_desc(eng_get_pool(e, "particles")).grow_ahead);
    eng_test_run(e, 10);
    eng_destroy(e);
    remove("eng_problems.ini");
    /* no config: no problems, no config object */
    e = eng_test_make(&(eng_desc){.scale = SMALL});
    assert_null(eng_get_config(e));
    assert_string_equal(eng_config_problems(e), "");
    eng_destroy(e);
}

static uint64_t in_alloc_growth(const fm_telemetry *t) { return in_alloc_growth_after(t, 0); }

/* S in the demo: a tuned config from the run's peaks, with the keys of the
 * config the engine loaded kept; the same scene on it grows in no
 * allocation after the first frame. */
static void test_engine_tuned_config_round_trip_removes_growth(void **state) {
    (void)state;
    FILE *f = fopen("eng_base.ini", "wb");
    fputs("[pool.velocities]\ngrowth = linear\ngrow_step = 4096\n", f);
    fclose(f);
    char err[512];
    eng *e = eng_test_make(&(eng_desc){.seed = 3, .scale = 0.3, .config_path = "eng_base.ini"});
    eng_test_run(e, 240);
    assert_true(in_alloc_growth(eng_get_telemetry(e)) > 0); /* the defaults regrow */
    assert_true(eng_write_tuned_config(e, "eng_tuned.ini", 1.25, err, sizeof err));
    const fm_telemetry *t = eng_get_telemetry(e);
    const fm_telemetry_source *ps = fm_telemetry_get_source(t, (uint32_t)source(e, "particles"));
    uint64_t want = fm_telemetry_suggest_capacity(ps->peak_live, 1.25, ps->chunk_items);
    eng_destroy(e);
    e = eng_test_make(&(eng_desc){.seed = 3, .scale = 0.3, .config_path = "eng_tuned.ini"});
    assert_string_equal(eng_config_problems(e), "");
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).initial_capacity, want);
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "velocities")).growth, FM_GROWTH_LINEAR);
    assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "velocities")).grow_step, 4096);
    eng_test_run(e, 240);
    assert_int_equal(in_alloc_growth(eng_get_telemetry(e)), 0);
    eng_destroy(e);
    remove("eng_base.ini");
    remove("eng_tuned.ini");
}

static void test_engine_create_rejects_bad_descs_with_a_message(void **state) {
    (void)state;
    char err[256];
    assert_null(eng_create(&(eng_desc){.scene = "chaos"}, err, sizeof err));
    assert_true(fm_test_contains(err, "unknown scene 'chaos'"));
    assert_null(eng_create(&(eng_desc){.backend = (eng_backend)5}, err, sizeof err));
    assert_true(fm_test_contains(err, "unknown backend"));
    assert_null(eng_create(&(eng_desc){.override_growth = true, .growth = (fm_growth)9}, err, sizeof err));
    assert_true(fm_test_contains(err, "unknown growth"));
    assert_null(eng_create(&(eng_desc){.telemetry_frames = (1u << 24) + 1}, err, sizeof err));
    assert_true(fm_test_contains(err, "telemetry_frames"));
    assert_null(eng_run_headless(&(eng_desc){.scene = "chaos"}, 10, NULL, err, sizeof err));
    eng *e = eng_create(NULL, NULL, 0); /* all defaults */
    assert_non_null(e);
    eng_info in;
    eng_get_info(e, &in);
    assert_int_equal(in.seed, 1);
    assert_string_equal(in.scene, "standard");
    assert_true(in.scale == 1.0);
    eng_destroy(e);
    e = eng_create(&(eng_desc){.scale = 0.001}, err, sizeof err); /* clamped */
    eng_get_info(e, &in);
    assert_true(in.scale == (double)0.05);
    eng_destroy(e);
    const char *const *names = eng_scene_names();
    assert_string_equal(names[0], "standard");
    assert_string_equal(names[1], "ramp");
    assert_string_equal(names[2], "bursts");
    assert_null(names[3]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_frame_lifecycle_records_one_frame_per_begin_end),
        cmocka_unit_test(test_engine_classic_backend_simulates_the_same_world_and_counts_its_growths),
        cmocka_unit_test(test_engine_backend_names_cover_every_backend),
        cmocka_unit_test(test_engine_info_counts_the_pools_the_config_sets_grow_ahead_and_prefault_for),
        cmocka_unit_test(test_classic_pool_doubles_its_blocks_and_links_every_slot),
        cmocka_unit_test(test_engine_paused_frames_keep_the_newest_update_readable),
        cmocka_unit_test(test_engine_a_pause_does_not_change_the_simulation),
        cmocka_unit_test(test_engine_default_scale_meets_the_load_target),
        cmocka_unit_test(test_engine_default_particles_are_1_kib_and_the_classic_pool_ends_on_a_16_mib_block),
        cmocka_unit_test(test_engine_same_seed_same_world_other_seed_differs),
        cmocka_unit_test(test_engine_malloc_backend_simulates_the_same_world),
        cmocka_unit_test(test_engine_telemetry_sums_equal_the_pools_own_stats),
        cmocka_unit_test(test_engine_ring_wraps_and_totals_cover_every_frame),
        cmocka_unit_test(test_engine_csv_and_trace_of_a_run_are_well_formed),
        cmocka_unit_test(test_engine_grow_ahead_moves_growth_out_of_allocations),
        cmocka_unit_test(test_engine_grow_ahead_switch_acts_on_the_running_world),
        cmocka_unit_test(test_engine_burst_and_scale_change_the_load),
        cmocka_unit_test(test_engine_backend_growth_and_prefault_switches_rebuild_the_world),
        cmocka_unit_test_setup_teardown(test_engine_full_pools_spawn_less_without_error_reports,
                                        fm_test_setup, fm_test_teardown),
        cmocka_unit_test(test_engine_reload_config_applies_or_keeps_the_world),
        cmocka_unit_test(test_engine_config_problems_are_reported_and_create_still_succeeds),
        cmocka_unit_test(test_engine_tuned_config_round_trip_removes_growth),
        cmocka_unit_test(test_engine_create_rejects_bad_descs_with_a_message),
    };
    return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
