/*
 * test_run_stats.c: the demo's whole-run figures and exit summary
 * (demo/src/run_stats.c).
 */
#include "fm_test.h"

#include <stdio.h>
#include <string.h>

#include "run_stats.h"

static void test_percentile_is_nearest_rank(void **state) {
    (void)state;
    const uint64_t v[] = {50, 10, 40, 20, 30};
    uint64_t scratch[5];
    assert_int_equal(demo_percentile(v, 5, 50, scratch), 30);
    assert_int_equal(demo_percentile(v, 5, 0, scratch), 10);
    assert_int_equal(demo_percentile(v, 5, 20, scratch), 10);
    assert_int_equal(demo_percentile(v, 5, 21, scratch), 20);
    assert_int_equal(demo_percentile(v, 5, 99, scratch), 50);
    assert_int_equal(demo_percentile(v, 5, 100, scratch), 50);
    assert_int_equal(demo_percentile(v, 0, 50, scratch), 0);
    assert_int_equal(v[0], 50); /* the input is not sorted in place */
}

static void test_growth_after_the_first_frame_is_counted_apart(void **state) {
    (void)state;
    demo_run_stats s = {0};
    for (uint32_t f = 0; f < 10000; f++) { /* past the first capacity: the series grow */
        fm_telemetry_frame rec = {.frame = f, .alloc_total_ns = f, .render_ns = 2 * f,
                                .grow_events = f == 0 ? 3 : f == 7 ? 2 : 0,
                                .ahead_grow_events = f == 9 ? 1 : 0};
        demo_run_stats_add(&s, &rec, 10 * (uint64_t)f, f);
    }
    assert_int_equal(s.count, 10000);
    assert_int_equal(s.grow_events, 5);
    assert_int_equal(s.grow_events_after_first, 2);
    assert_int_equal(s.ahead_grow_events, 1);
    assert_int_equal(s.alloc_ns[9999], 9999);
    assert_int_equal(s.frame_ns[9999], 99990);
    assert_int_equal(s.render_ns[9999], 19998);
    assert_int_equal(s.present_ns[9999], 9999);
    demo_run_stats_reset(&s);
    assert_int_equal(s.count, 0);
    assert_int_equal(s.grow_events + s.grow_events_after_first + s.ahead_grow_events, 0);
    demo_run_stats_free(&s);
    assert_null(s.alloc_ns);
}

static char *summary_of(const demo_run_stats *s, eng *e) {
    static char text[8192];
    FILE *f = tmpfile();
    assert_non_null(f);
    demo_run_stats_print(s, e, &(demo_summary_info){.renderer = "software", .save_hint = "t.ini"}, f);
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

static void test_summary_suggests_a_tuned_config_only_after_hitches(void **state) {
    (void)state;
    char err[256];
    eng *e = eng_create(&(eng_desc){.seed = 3}, err, sizeof err);
    if (!e) fail_msg("%s", err);
    demo_run_stats s = {0};
    for (uint32_t f = 0; f < 4; f++) {
        fm_telemetry_frame rec = {.frame = f, .alloc_total_ns = 1000 * (f + 1), .grow_events = f == 0};
        demo_run_stats_add(&s, &rec, 2000000, 0);
    }
    const char *t = summary_of(&s, e);
    assert_non_null(strstr(t, "framemem-demo summary: 4 frames, scene standard, scale 1.00, backend pool, seed 3, software"));
    assert_non_null(strstr(t, "allocation time per frame: median 2.0 us, p99 4.0 us, max 4.0 us"));
    assert_non_null(strstr(t, "frame time: median 2.00 ms"));
    assert_non_null(strstr(t, "growth events inside allocation calls: 1 (0 after frame 0)"));
    assert_non_null(strstr(t, "No growth inside an allocation call after frame 0"));
    assert_null(strstr(t, "save a tuned config"));

    fm_telemetry_frame late = {.frame = 4, .grow_events = 2};
    demo_run_stats_add(&s, &late, 0, 0);
    t = summary_of(&s, e);
    assert_non_null(strstr(t, "growth events inside allocation calls: 3 (2 after frame 0)"));
    assert_non_null(strstr(t, "Hitches from pool growth after frame 0: 2; save a tuned config (key S, or "
                              "--save-config t.ini) and run again with --config t.ini"));

    demo_run_stats empty = {0};
    t = summary_of(&empty, e);
    assert_non_null(strstr(t, "summary: 0 frames"));
    demo_run_stats_free(&s);
    eng_destroy(e);
}

/* Paused frames are frames of the run: counted in the header, kept out of
 * the per-frame figures; engine failures are counted with the newest one. */
static void test_summary_counts_paused_frames_and_engine_failures(void **state) {
    (void)state;
    char err[256];
    eng *e = eng_create(&(eng_desc){.seed = 3}, err, sizeof err);
    if (!e) fail_msg("%s", err);
    demo_run_stats s = {0};
    fm_telemetry_frame rec = {.alloc_total_ns = 3000};
    demo_run_stats_add(&s, &rec, 2000000, 0);
    demo_run_stats_add_paused(&s);
    demo_run_stats_add_paused(&s);
    const char *t = summary_of(&s, e);
    assert_non_null(strstr(t, "framemem-demo summary: 3 frames,"));
    assert_non_null(strstr(t, "2 of them paused (no simulation): the figures below are of the other 1"));
    assert_non_null(strstr(t, "allocation time per frame: median 3.0 us"));
    assert_non_null(strstr(t, "engine failures during the run: 0\n"));
    demo_run_stats_reset(&s);
    t = summary_of(&s, e);
    assert_non_null(strstr(t, "summary: 0 frames"));
    assert_null(strstr(t, "paused"));
    eng_destroy(e);
    /* a frame arena too small for the world's lists: the world is emptied */
    FILE *f = fopen("run_stats_small.ini", "wb");
    assert_non_null(f);
    fputs("[arena.frame]\nreserve = 1048576\n", f);
    fclose(f);
    e = eng_create(&(eng_desc){.seed = 3, .scale = 5, .config_path = "run_stats_small.ini"}, err,
                   sizeof err);
    remove("run_stats_small.ini");
    if (!e) fail_msg("%s", err);
    for (int i = 0; i < 5; i++) eng_tick(e, 1.0 / 60.0);
    eng_info in;
    eng_get_info(e, &in);
    assert_true(in.failures > 0);
    t = summary_of(&s, e);
    char want[96];
    snprintf(want, sizeof want, "engine failures during the run: %llu (memory refused; the newest: frame arena:",
             (unsigned long long)in.failures);
    assert_non_null(strstr(t, want));
    demo_run_stats_free(&s);
    eng_destroy(e);
}

/* Frames first..first+n-1, a growth in those listed in grow (-1 ends it). */
static void add_frames(demo_run_stats *s, uint64_t first, int n, const int *grow) {
    for (int f = 0; f < n; f++) {
        uint32_t g = 0;
        for (const int *p = grow; *p >= 0; p++) g += (uint64_t)*p == first + (uint64_t)f;
        fm_telemetry_frame rec = {.frame = first + (uint64_t)f, .alloc_total_ns = 1000, .grow_events = g};
        demo_run_stats_add(s, &rec, 1000000, 0);
    }
}

/* The settings line and the advice say what ran: the backend, its config,
 * per-pool grow-ahead and prefault; no pool sizes for malloc or classic. */
static void test_summary_text_says_what_each_backend_ran(void **state) {
    (void)state;
    char err[256];
    static const int grow[] = {10, 12, 15, -1};
    const char *const settings[ENG_BACKEND_COUNT] = {
        [ENG_BACKEND_POOL] = "  backend pool | config built-in defaults | growth geometric (config) | "
                             "grow-ahead off (config: 6/6 pools; A) | prefault off (config: 6/6 pools; F)\n",
        [ENG_BACKEND_CLASSIC] = "  backend classic (Boost object_pool: blocks double, every new slot linked at "
                                "growth) | config built-in defaults: first block sizes | growth policy, "
                                "grow-ahead, prefault: framemem's only\n",
        [ENG_BACKEND_MALLOC] = "  backend malloc (no pools: every item from malloc) | config built-in defaults: "
                               "unused\n",
    };
    for (int b = 0; b < ENG_BACKEND_COUNT; b++) {
        eng *e = eng_create(&(eng_desc){.seed = 3, .backend = (eng_backend)b}, err, sizeof err);
        if (!e) fail_msg("%s", err);
        demo_run_stats s = {0};
        add_frames(&s, 10, 8, grow);
        const char *t = summary_of(&s, e);
        if (!strstr(t, settings[b])) fail_msg("backend %d, no settings line in:\n%s", b, t);
        assert_non_null(strstr(t, "growth events inside allocation calls: 3 (2 after frame 10)"));
        assert_null(strstr(t, "\n  config: ")); /* the old line that named no backend */
        if (b == ENG_BACKEND_POOL) {
            assert_non_null(strstr(t, "save a tuned config"));
        } else {
            assert_null(strstr(t, "pool sizes fit"));
            assert_null(strstr(t, "save a tuned config"));
            assert_null(strstr(t, "suggested"));
        }
        if (b == ENG_BACKEND_MALLOC)
            assert_non_null(strstr(t, "malloc backend: no pools, so no growth to tune"));
        if (b == ENG_BACKEND_CLASSIC)
            assert_non_null(strstr(t, "classic backend: 3 block doubling(s) inside allocation calls"));
        demo_run_stats_free(&s);
        eng_destroy(e);
    }
}

/* Switches on, and a config that opts one pool out: counted per pool. */
static void test_summary_counts_grow_ahead_and_prefault_per_pool(void **state) {
    (void)state;
    char err[256];
    fm_test_write_text("run_stats_opt.ini", "[pool.particles]\ngrow_ahead = false\n");
    eng *e = eng_create(&(eng_desc){.seed = 3, .grow_ahead = true, .prefault = true,
                                    .config_path = "run_stats_opt.ini"}, err, sizeof err);
    if (!e) fail_msg("%s", err);
    demo_run_stats s = {0};
    const char *t = summary_of(&s, e);
    assert_non_null(strstr(t, "  backend pool | config run_stats_opt.ini | growth geometric (config) | "
                              "grow-ahead on for 5/6 pools | prefault on for 6/6 pools\n"));
    eng_destroy(e);
    remove("run_stats_opt.ini");
}

/* A config loaded mid-run (S then L): its own growths are judged, and the
 * advice never says to rerun with the file just loaded. */
static void test_summary_after_a_config_loaded_mid_run_judges_its_growths(void **state) {
    (void)state;
    char err[256];
    fm_test_write_text("t.ini", "[pool.particles]\ninitial_capacity = 4096\n");
    eng *e = eng_create(&(eng_desc){.seed = 3, .config_path = "t.ini"}, err, sizeof err);
    if (!e) fail_msg("%s", err);
    demo_run_stats s = {0};
    static const int early[] = {0, 2, -1}, late[] = {7, -1};
    add_frames(&s, 0, 3, early);
    demo_run_stats_config_loaded(&s, 3);
    add_frames(&s, 3, 3, early);
    const char *t = summary_of(&s, e);
    assert_non_null(strstr(t, "(1 after frame 0)"));
    assert_non_null(strstr(t, "No growth inside an allocation call since t.ini was loaded (frame 3): the pool "
                              "sizes fit this load."));
    assert_null(strstr(t, "run again with"));
    add_frames(&s, 6, 2, late);
    t = summary_of(&s, e);
    assert_non_null(strstr(t, "Hitches from pool growth since t.ini was loaded (frame 3): 1; the load outgrew "
                              "t.ini: save a tuned config again (key S) from this run's peaks and reload it "
                              "(key L)."));
    assert_null(strstr(t, "run again with"));
    demo_run_stats_free(&s);
    eng_destroy(e);
    remove("t.ini");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_is_nearest_rank),
        cmocka_unit_test(test_growth_after_the_first_frame_is_counted_apart),
        cmocka_unit_test(test_summary_suggests_a_tuned_config_only_after_hitches),
        cmocka_unit_test(test_summary_counts_paused_frames_and_engine_failures),
        cmocka_unit_test(test_summary_text_says_what_each_backend_ran),
        cmocka_unit_test(test_summary_counts_grow_ahead_and_prefault_per_pool),
        cmocka_unit_test(test_summary_after_a_config_loaded_mid_run_judges_its_growths),
    };
    return cmocka_run_group_tests_name("run_stats", tests, NULL, NULL);
}
