/*
 * test_hud.c: the demo's overlay (demo/src/hud.c on overlay/overlay.c) at
 * every window size from 800x450 to 2560x1440 and in every mode: no two
 * texts overlap, every text lies inside the window, and none of the fixed
 * texts (title, settings, captions, legend, table, help) is left out.
 */
#include "fm_test.h"

#include <SDL.h>
#include <stdio.h>
#include <string.h>

#include "hud.h"
#include "sw_target.h"

enum { MODE_DEFAULT, MODE_TUNED, MODE_MALLOC, MODE_CLASSIC, MODE_PAUSED, MODE_STATUS, MODE_MAP,
       MODE_MAP_CLASSIC, MODES };
static const char *const mode_names[MODES] = {"default", "tuned", "malloc", "classic", "paused",
                                              "status shown", "memory map", "memory map (classic)"};

static const int sizes[][2] = {{800, 450}, {1024, 576}, {1280, 720}, {1600, 900}, {1920, 1080},
                               {2560, 1440}};

/* An engine of the mode, 150 frames in (a paused mode: 30 of them paused). */
static eng *make_mode(int mode) {
    char err[256];
    eng_desc d = {.seed = 1, .scale = 0.2}; /* small: the suite also runs under Valgrind */
    if (mode == MODE_MALLOC) d.backend = ENG_BACKEND_MALLOC;
    if (mode == MODE_CLASSIC || mode == MODE_MAP_CLASSIC) d.backend = ENG_BACKEND_CLASSIC;
    if (mode == MODE_TUNED) {
        eng *first = eng_create(&d, err, sizeof err);
        if (!first) fail_msg("%s", err);
        for (int f = 0; f < 150; f++) eng_tick(first, 1.0 / 60.0);
        if (!eng_write_tuned_config(first, "hud_tuned.ini", 0, err, sizeof err)) fail_msg("%s", err);
        eng_destroy(first);
        d.config_path = "hud_tuned.ini";
    }
    eng *e = eng_create(&d, err, sizeof err);
    if (!e) fail_msg("%s", err);
    for (int f = 0; f < 150; f++) {
        eng_frame_begin(e);
        if (mode != MODE_PAUSED || f < 120) eng_update(e, 1.0 / 60.0);
        eng_frame_end(e);
        eng_set_render_ns(e, 2000000 + 1000u * (uint64_t)(f % 13));
    }
    return e;
}

static bool has_text(const ovl_text_rects *tr, const char *needle) {
    for (uint32_t i = 0; i < tr->count; i++)
        if (strstr(tr->text[i], needle)) return true;
    return false;
}

static void check_texts(const ovl_text_rects *tr, int w, int h, const char *what) {
    for (uint32_t i = 0; i < tr->count; i++) {
        const SDL_FRect *a = &tr->rects[i];
        if (a->x < 0 || a->y < 0 || a->x + a->w > (float)w || a->y + a->h > (float)h)
            fail_msg("%s: '%s' (%.1f,%.1f %.1fx%.1f) leaves the %dx%d window", what, tr->text[i], a->x, a->y,
                     a->w, a->h, w, h);
        for (uint32_t j = i + 1; j < tr->count; j++) {
            const SDL_FRect *b = &tr->rects[j];
            if (a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h)
                fail_msg("%s: '%s' (%.1f,%.1f %.1fx%.1f) overlaps '%s' (%.1f,%.1f %.1fx%.1f)", what,
                         tr->text[i], a->x, a->y, a->w, a->h, tr->text[j], b->x, b->y, b->w, b->h);
        }
    }
}

static void test_hud_texts_never_overlap_nor_leave_the_window_at_any_size_in_any_mode(void **state) {
    (void)state;
    static ovl_text_rects tr;
    uint64_t ring[600] = {0};
    for (uint64_t f = 0; f < 150; f += 7) ring[f] = f + 1; /* some frames preempted */
    for (int m = 0; m < MODES; m++) {
        eng *e = make_mode(m);
        eng_info in;
        eng_get_info(e, &in);
        const fm_telemetry *t = eng_get_telemetry(e);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int w = sizes[s][0], h = sizes[s][1];
            sw_target tg = sw_target_open(w, h);
            ovl_batch *b = ovl_batch_create(OVL_BATCH_QUADS);
            assert_non_null(b);
            demo_hud hud = {.e = e, .info = &in, .fps = 59.7, .renderer = "software (headless)",
                            .paused = m == MODE_PAUSED, .software = (s % 2) == 1,
                            .preempted = ring, .preempted_len = 600,
                            .memory_map = m == MODE_MAP || m == MODE_MAP_CLASSIC};
            if (m == MODE_STATUS) hud.status = "saved a tuned config to framemem-tuned.ini (L reloads it)";
            memset(&tr, 0, sizeof tr);
            assert_true(demo_hud_draw(b, tg.r, w, h, &hud, &tr));
            assert_int_equal(ovl_batch_dropped(b), 0);
            ovl_batch_destroy(b);
            char what[96];
            snprintf(what, sizeof what, "%s at %dx%d", mode_names[m], w, h);
            check_texts(&tr, w, h, what);
            if (tr.refused) fail_msg("%s: %u texts of the layout did not fit", what, tr.refused);
            /* the fixed texts are all there */
            bool map = m == MODE_MAP || m == MODE_MAP_CLASSIC;
            const char *const fixed[] = {"framemem: allocation per frame", "backend ", "F1 overlay",
                                         "grow events", map ? "memory map: " : "allocation time per frame",
                                         map ? "chunks" : "maintenance at the frame", map ? "pool" : "frame time:"};
            for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++)
                if (!has_text(&tr, fixed[k])) fail_msg("%s: '%s' is missing", what, fixed[k]);
            for (uint32_t src = 0; src < fm_telemetry_source_count(t); src++) {
                /* legend and table (tags: their budget bar), or the map's line */
                const fm_telemetry_source *si = fm_telemetry_get_source(t, src);
                int n = 0;
                for (uint32_t i = 0; i < tr.count; i++) n += strcmp(tr.text[i], si->name) == 0;
                int want = si->kind == FM_TELEMETRY_TAG || map ? 1 : 2;
                if (n < want) fail_msg("%s: '%s' shown %d times, wanted %d", what, si->name, n, want);
            }
            if (m == MODE_MAP) {
                char line[64];
                snprintf(line, sizeof line, "particles: ");
                if (!has_text(&tr, line)) fail_msg("%s: no map of the particles pool", what);
            }
            if (m == MODE_MAP_CLASSIC && !has_text(&tr, "the classic backend has no framemem pools to map"))
                fail_msg("%s: no note", what);
            if (m == MODE_PAUSED && !has_text(&tr, "PAUSED")) fail_msg("%s: no PAUSED", what);
            if (m == MODE_STATUS && !has_text(&tr, "saved a tuned config")) fail_msg("%s: no status", what);
            if (m == MODE_CLASSIC && !has_text(&tr, "backend classic")) fail_msg("%s: not classic", what);
            sw_target_close(&tg);
        }
        eng_destroy(e);
    }
    remove("hud_tuned.ini");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hud_texts_never_overlap_nor_leave_the_window_at_any_size_in_any_mode),
    };
    return cmocka_run_group_tests_name("hud", tests, NULL, NULL);
}
