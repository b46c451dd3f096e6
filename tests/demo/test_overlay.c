/*
 * test_overlay.c: the telemetry overlay (demo/overlay/src/overlay.c) drawn on
 * a software renderer over a surface, from live and CSV-loaded telemetry.
 */
#define _POSIX_C_SOURCE 200809L
#include "fm_test.h"

#include <SDL.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "framemem/telemetry.h"
#include "overlay/overlay.h"
#include "sw_target.h"

enum { W = 1280, H = 720, FRAMES = 300, GROW_FRAME = 120, AHEAD_FRAME = 200, RESET_FRAME = 160 };


static Uint32 colour_rgb(SDL_Color c) { return (Uint32)c.r << 16 | (Uint32)c.g << 8 | c.b; }

static int count_in(const sw_target *t, const SDL_FRect *r, Uint32 rgb) {
    int n = 0;
    for (int y = (int)r->y; y < (int)(r->y + r->h); y++)
        for (int x = (int)r->x; x < (int)(r->x + r->w); x++) n += sw_pixel(t, x, y) == rgb;
    return n;
}

/* Three pools and an arena; "bullets" grows inside an allocation at
 * GROW_FRAME, grow-ahead works at AHEAD_FRAME and "particles" is reset at
 * RESET_FRAME when `growth` is set; the arena resets every frame. */
static fm_telemetry *make_telemetry(bool growth) {
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){0});
    assert_non_null(t);
    assert_int_equal(fm_telemetry_add_source(t, "particles", FM_TELEMETRY_POOL, 32, 1024), 0);
    assert_int_equal(fm_telemetry_add_source(t, "bullets", FM_TELEMETRY_POOL, 64, 256), 1);
    assert_int_equal(fm_telemetry_add_source(t, "closures", FM_TELEMETRY_POOL, 48, 512), 2);
    assert_int_equal(fm_telemetry_add_source(t, "frame", FM_TELEMETRY_ARENA, 0, 1), 3);
    for (uint32_t f = 0; f < FRAMES; f++) {
        fm_telemetry_sample s[4];
        memset(s, 0, sizeof s);
        for (int i = 0; i < 3; i++) {
            s[i].allocs = 1000;
            s[i].frees = 1000;
            s[i].live = 5000 + 100u * (uint64_t)i;
            s[i].capacity = 8192;
            s[i].peak_live = s[i].live;
            s[i].alloc_ns = 20000 + 5000u * (uint64_t)i;
        }
        if (growth && f == GROW_FRAME) {
            s[1].grow_events = 1;
            s[1].grow_ns = 400000;
            s[1].alloc_ns += 400000;
        }
        if (growth && f == RESET_FRAME) s[0].resets = 1;
        if (growth && f == AHEAD_FRAME) {
            s[0].ahead_grow_events = 1;
            s[0].ahead_grow_ns = 90000;
        }
        s[3].resets = 1;
        s[3].bytes_used = 300000;
        s[3].high_water = 310000;
        s[3].capacity = 1u << 20;
        fm_telemetry_frame rec = {.frame = f, .sim_ns = 3000000, .render_ns = 2000000};
        for (int i = 0; i < 4; i++) {
            rec.alloc_total_ns += s[i].alloc_ns;
            rec.grow_events += (uint32_t)s[i].grow_events;
            rec.ahead_grow_events += (uint32_t)s[i].ahead_grow_events;
        }
        rec.maint_ns = 1000 + s[0].ahead_grow_ns;
        rec.frame_ns = rec.sim_ns + rec.alloc_total_ns + rec.maint_ns;
        fm_telemetry_push(t, &rec, s);
    }
    return t;
}

static const SDL_FRect area = {0, 0, W, H};
static const ovl_desc desc = {.settings = "backend pool", .help = "F1 overlay"};

static void draw_with(sw_target *tg, const fm_telemetry *t, int *calls, const ovl_desc *d) {
    ovl_batch *b = ovl_batch_create(OVL_BATCH_QUADS);
    assert_non_null(b);
    assert_true(ovl_draw(b, tg->r, &area, t, d));
    if (calls) *calls = ovl_batch_draw_calls(b);
    assert_int_equal(ovl_batch_dropped(b), 0);
    ovl_batch_destroy(b);
}

static void draw(sw_target *tg, const fm_telemetry *t, int *calls) { draw_with(tg, t, calls, &desc); }

static void test_overlay_layout_panels_are_inside_the_area_and_ordered(void **state) {
    (void)state;
    fm_telemetry *t = make_telemetry(false);
    ovl_layout lo;
    ovl_layout_compute(&area, t, &desc, &lo);
    const SDL_FRect *panels[] = {&lo.title, &lo.alloc_graph, &lo.legend, &lo.maint_graph,
                                 &lo.frame_graph, &lo.table, &lo.help};
    for (size_t i = 0; i < sizeof panels / sizeof *panels; i++) {
        assert_true(panels[i]->x >= 0 && panels[i]->y >= 0);
        assert_true(panels[i]->x + panels[i]->w <= W && panels[i]->y + panels[i]->h <= H);
        assert_true(panels[i]->h > 0);
        if (i) assert_true(panels[i]->y >= panels[i - 1]->y + panels[i - 1]->h); /* top to bottom */
    }
    assert_true(lo.alloc_graph.h > 150); /* the main graph gets most of the room */
    fm_telemetry_destroy(t);
}

static void test_overlay_bars_use_each_pool_colour_in_few_draw_calls(void **state) {
    (void)state;
    fm_telemetry *t = make_telemetry(false);
    sw_target tg = sw_target_open(W, H);
    int calls = 0;
    draw(&tg, t, &calls);
    assert_int_equal(calls, 1); /* a translucent backdrop: everything in one geometry call */
    /* Without a backdrop every quad is an opaque rectangle: on this software
     * renderer, one fill call per run of a colour. 900 bars, 1,200
     * frame-graph segments and the text take a few dozen, never one a bar. */
    sw_target opaque = sw_target_open(W, H);
    draw_with(&opaque, t, &calls, &(ovl_desc){.settings = "s", .help = "h", .no_backdrop = true});
    assert_true(calls > 1 && calls < 100);
    ovl_layout lo_opaque;
    ovl_layout_compute(&area, t, &desc, &lo_opaque);
    for (uint32_t s = 0; s < 3; s++)
        assert_true(count_in(&opaque, &lo_opaque.alloc_graph, colour_rgb(ovl_source_color(s))) >= 300);
    sw_target_close(&opaque);
    ovl_layout lo;
    ovl_layout_compute(&area, t, &desc, &lo);
    for (uint32_t s = 0; s < 3; s++)
        if (count_in(&tg, &lo.alloc_graph, colour_rgb(ovl_source_color(s))) < 300)
            fail_msg("pool %u colour missing from the allocation graph", s);
    assert_int_equal(count_in(&tg, &lo.alloc_graph, OVL_GROWTH_RGB), 0); /* no growth, no magenta */
    assert_int_equal(count_in(&tg, &lo.alloc_graph, OVL_RESET_RGB), 0); /* arena resets: no line */
    assert_true(count_in(&tg, &lo.frame_graph, OVL_SIM_RGB) > 300);
    assert_true(count_in(&tg, &lo.frame_graph, OVL_RENDER_RGB) > 300);
    assert_true(count_in(&tg, &lo.maint_graph, OVL_MAINT_RGB) > 0);
    /* 300 frames of 600 slots: the left half of the graph is empty. */
    SDL_FRect left = {lo.alloc_graph.x, lo.alloc_graph.y, lo.alloc_graph.w * 0.45f, lo.alloc_graph.h};
    assert_int_equal(count_in(&tg, &left, colour_rgb(ovl_source_color(0))), 0);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

/* The left edge of frame f's column in a graph of 600 slots whose last
 * FRAMES hold the frames (frame f of 300 sits in slot 600 - 300 + f). */
static float column_x(const SDL_FRect *graph, uint32_t f) {
    return graph->x + graph->w / 600.0f * (float)(600 - FRAMES + f);
}

/* make_telemetry(true) drawn on tg, its layout in lo. */
static fm_telemetry *draw_with_events(sw_target *tg, ovl_layout *lo) {
    fm_telemetry *t = make_telemetry(true);
    *tg = sw_target_open(W, H);
    draw(tg, t, NULL);
    ovl_layout_compute(&area, t, &desc, lo);
    return t;
}

static void test_overlay_growth_frame_is_magenta_at_its_column(void **state) {
    (void)state;
    sw_target tg;
    ovl_layout lo;
    fm_telemetry *t = draw_with_events(&tg, &lo);
    float slot_w = lo.alloc_graph.w / 600.0f;
    float x = column_x(&lo.alloc_graph, GROW_FRAME);
    SDL_FRect column = {x, lo.alloc_graph.y, slot_w + 1, lo.alloc_graph.h};
    assert_true(count_in(&tg, &column, OVL_GROWTH_RGB) > 50); /* the tall bar */
    SDL_FRect other = {x + 20 * slot_w, lo.alloc_graph.y + 30, slot_w, lo.alloc_graph.h - 30};
    assert_int_equal(count_in(&tg, &other, OVL_GROWTH_RGB), 0);
    /* The grow-ahead frame stands out in the maintenance strip. */
    float xa = column_x(&lo.maint_graph, AHEAD_FRAME);
    SDL_FRect top = {xa, lo.maint_graph.y, slot_w + 1, lo.maint_graph.h * 0.5f};
    assert_true(count_in(&tg, &top, OVL_MAINT_RGB) > 0);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

static void test_overlay_from_csv_draws_the_same_pixels(void **state) {
    (void)state;
    fm_telemetry *t = make_telemetry(true);
    char path[] = "/tmp/fm_overlay_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256] = "";
    assert_true(fm_telemetry_write_csv(t, path, err, sizeof err));
    fm_telemetry *back = fm_telemetry_read_csv(path, err, sizeof err);
    if (!back) fail_msg("read_csv: %s", err);
    unlink(path);
    sw_target a = sw_target_open(W, H), b = sw_target_open(W, H);
    draw(&a, t, NULL);
    draw(&b, back, NULL);
    size_t bytes = (size_t)a.surface->pitch * H;
    assert_memory_equal(a.surface->pixels, b.surface->pixels, bytes);
    sw_target_close(&a);
    sw_target_close(&b);
    fm_telemetry_destroy(back);
    fm_telemetry_destroy(t);
}

static void test_overlay_empty_telemetry_and_small_area_draw(void **state) {
    (void)state;
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){0});
    sw_target tg = sw_target_open(W, H);
    draw(&tg, t, NULL); /* no sources, no frames */
    fm_telemetry_add_source(t, "p", FM_TELEMETRY_POOL, 16, 64);
    draw(&tg, t, NULL); /* a source, no frames */
    fm_telemetry_destroy(t);
    t = make_telemetry(true);
    const SDL_FRect tiny = {10, 10, 200, 120};
    ovl_batch *bt = ovl_batch_create(OVL_BATCH_QUADS);
    assert_true(ovl_draw(bt, tg.r, &tiny, t, NULL));
    ovl_batch_destroy(bt);
    /* nothing lands outside the area (the surface was cleared to black
     * and the first draws above used the full area, so check a fresh one) */
    sw_target fresh = sw_target_open(W, H);
    bt = ovl_batch_create(OVL_BATCH_QUADS);
    const SDL_FRect half = {0, 0, W / 2, H};
    assert_true(ovl_draw(bt, fresh.r, &half, t, &desc));
    ovl_batch_destroy(bt);
    int outside = 0;
    for (int y = 0; y < H; y += 3)
        for (int x = W / 2 + 1; x < W; x += 3) outside += sw_pixel(&fresh, x, y) != 0;
    assert_int_equal(outside, 0);
    sw_target_close(&fresh);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

/* Tags get a budget bar each: committed bytes against the limits, in the
 * soft colour above the soft limit, in the hard colour when a growth was
 * refused, with ticks at both limits; the table lists only the others. */
static void test_overlay_tags_are_bars_against_their_budgets(void **state) {
    (void)state;
    /* A CSV's tags (their limits are per source, in the CSV's added columns):
     * level above its soft limit of 24 MiB, under its hard 32 MiB; audio at
     * its hard 8 MiB and refused once; ui without limits. */
    const uint64_t MiB = 1u << 20;
    size_t cap = 60 * 4 * 160 + 512, len = 0;
    char *csv = malloc(cap);
    assert_non_null(csv);
    len += (size_t)snprintf(csv + len, cap - len, "%s,%s\n", FM_TELEMETRY_CSV_COLUMNS,
                            FM_TELEMETRY_CSV_COLUMNS_ADDED);
    for (int f = 0; f < 60; f++) {
        const char *tail = ",1000,0,0,0,0";
        len += (size_t)snprintf(csv + len, cap - len,
                                "%d,particles,pool,pool,0,0,100,100,100,32,1024,0,0,0,0,0,0,0,0%s,0,0,0,0\n",
                                f, tail);
        static const struct { const char *name; uint64_t committed, soft, hard; } tags[] = {
            {"level", 28, 24, 32}, {"audio", 8, 0, 8}, {"ui", 1, 0, 0}};
        for (int k = 0; k < 3; k++)
            len += (size_t)snprintf(
                csv + len, cap - len,
                "%d,%s,tag,pool,0,0,0,%llu,%llu,1,1,0,0,0,0,0,0,0,0%s,0,%d,%llu,%llu\n", f,
                tags[k].name, (unsigned long long)(tags[k].committed * MiB),
                (unsigned long long)(tags[k].committed * MiB), tail, k == 1 && f == 40,
                (unsigned long long)(tags[k].soft * MiB), (unsigned long long)(tags[k].hard * MiB));
    }
    char err[256] = "";
    fm_telemetry *t = fm_telemetry_read_csv_mem(csv, len, "tags.csv", err, sizeof err);
    free(csv);
    if (!t) fail_msg("%s", err);
    int level = fm_telemetry_find_source(t, "level"), ui = fm_telemetry_find_source(t, "ui");
    assert_int_equal(level, 1);
    assert_int_equal(fm_telemetry_get_source(t, (uint32_t)level)->soft_limit, 24 * MiB);
    ovl_layout lo;
    ovl_layout_compute(&area, t, &desc, &lo);
    assert_true(lo.budgets.h > 0 && lo.bars.w > 0);
    assert_true(lo.budgets.y + lo.budgets.h <= lo.table.y);
    assert_true(lo.budgets.y >= lo.frame_graph.y + lo.frame_graph.h);
    assert_true(lo.table.h < 3 * (lo.budgets.h / 3) + 1); /* header + one pool row */
    sw_target tg = sw_target_open(W, H);
    draw(&tg, t, NULL);
    float row_h = lo.budgets.h / 3;
    /* level: its bar in the soft colour, 28/(32*1.05) of the way */
    SDL_FRect lrow = {lo.bars.x, lo.budgets.y + 0 * row_h, lo.bars.w, row_h};
    SDL_FRect lfill = {lo.bars.x, lrow.y, lo.bars.w * 0.5f, 4};
    assert_true(count_in(&tg, &lfill, OVL_SOFT_RGB) > 50);
    float soft_x = lo.bars.x + (float)(24.0 / (32 * 1.05)) * lo.bars.w;
    float hard_x = lo.bars.x + (float)(32.0 / (32 * 1.05)) * lo.bars.w;
    SDL_FRect soft_tick = {soft_x - 2, lrow.y, 4, row_h};
    SDL_FRect hard_tick = {hard_x - 2, lrow.y, 4, row_h};
    assert_true(count_in(&tg, &soft_tick, OVL_SOFT_RGB) > 5);
    assert_true(count_in(&tg, &hard_tick, OVL_HARD_RGB) > 5);
    SDL_FRect beyond = {hard_x + 3, lrow.y, lo.bars.x + lo.bars.w - hard_x - 4, 4};
    assert_int_equal(count_in(&tg, &beyond, OVL_SOFT_RGB), 0); /* unfilled past 28 MiB */
    /* audio: refused in view, in the hard colour */
    SDL_FRect afill = {lo.bars.x, lo.budgets.y + row_h, lo.bars.w * 0.5f, 4};
    assert_true(count_in(&tg, &afill, OVL_HARD_RGB) > 50);
    /* ui: no limits, its own colour, no ticks */
    SDL_FRect urow = {lo.bars.x, lo.budgets.y + 2 * row_h, lo.bars.w, 4};
    assert_true(count_in(&tg, &urow, colour_rgb(ovl_source_color((uint32_t)ui))) > 50);
    assert_int_equal(count_in(&tg, &urow, OVL_SOFT_RGB), 0);
    assert_int_equal(count_in(&tg, &urow, OVL_HARD_RGB), 0);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

static void test_overlay_pool_reset_is_a_white_line_at_its_column(void **state) {
    (void)state;
    sw_target tg;
    ovl_layout lo;
    fm_telemetry *t = draw_with_events(&tg, &lo);
    float slot_w = lo.alloc_graph.w / 600.0f;
    float x = column_x(&lo.alloc_graph, RESET_FRAME);
    /* above the frame's bars, the line runs up the graph */
    SDL_FRect column = {x - 1, lo.alloc_graph.y, slot_w + 2, lo.alloc_graph.h * 0.6f};
    assert_true(count_in(&tg, &column, OVL_RESET_RGB) > 100);
    /* nowhere else: 20 frames before, and the growth's column */
    SDL_FRect before = {x - 20 * slot_w, lo.alloc_graph.y, slot_w, lo.alloc_graph.h};
    assert_int_equal(count_in(&tg, &before, OVL_RESET_RGB), 0);
    float xg = column_x(&lo.alloc_graph, GROW_FRAME);
    SDL_FRect grown = {xg, lo.alloc_graph.y, slot_w, lo.alloc_graph.h};
    assert_int_equal(count_in(&tg, &grown, OVL_RESET_RGB), 0);
    /* the label names the pool: white text right of the line, under the
     * growth labels' rows */
    SDL_FRect label = {x + 2, lo.alloc_graph.y, 200, lo.alloc_graph.h * 0.5f};
    assert_true(count_in(&tg, &label, OVL_RESET_RGB) > 20);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

static void test_overlay_source_colours_are_distinct_from_growth(void **state) {
    (void)state;
    for (uint32_t s = 0; s < FM_TELEMETRY_MAX_SOURCES; s++) {
        SDL_Color c = ovl_source_color(s);
        assert_int_equal(c.a, 255);
        assert_true(colour_rgb(c) != OVL_GROWTH_RGB && colour_rgb(c) != OVL_MAINT_RGB &&
                    colour_rgb(c) != OVL_RESET_RGB);
        if (s > 0 && s < OVL_PALETTE_SIZE)
            assert_true(colour_rgb(c) != colour_rgb(ovl_source_color(s - 1)));
    }
}

/* ---------------------------------------------------------- the graph */

/* Two pools over `frames` frames at 60 + 20 us a frame; frames listed in
 * grow (-1 ends) grow "bullets"; frame `outlier` (if < frames) takes 10 ms. */
static fm_telemetry *make_series(uint32_t frames, const int *grow, uint32_t outlier) {
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){0});
    assert_non_null(t);
    fm_telemetry_add_source(t, "particles", FM_TELEMETRY_POOL, 32, 1024);
    fm_telemetry_add_source(t, "bullets", FM_TELEMETRY_POOL, 64, 256);
    for (uint32_t f = 0; f < frames; f++) {
        fm_telemetry_sample sm[2];
        memset(sm, 0, sizeof sm);
        sm[0].alloc_ns = 60000;
        sm[1].alloc_ns = 20000;
        for (const int *g = grow; *g >= 0; g++)
            if ((uint32_t)*g == f) {
                sm[1].grow_events = 1;
                sm[1].alloc_ns += 30000;
            }
        if (f == outlier) sm[0].alloc_ns = 10000000;
        fm_telemetry_frame rec = {.frame = f, .sim_ns = 3000000 + 1000u * (f % 7), .render_ns = 9000000,
                                  .maint_ns = 2000 + 100u * (f % 5)};
        rec.alloc_total_ns = sm[0].alloc_ns + sm[1].alloc_ns;
        rec.grow_events = (uint32_t)sm[1].grow_events;
        rec.frame_ns = rec.sim_ns + rec.alloc_total_ns + rec.maint_ns;
        fm_telemetry_push(t, &rec, sm);
    }
    return t;
}

static int find_exact(const ovl_text_rects *tr, const char *text) {
    int n = 0;
    for (uint32_t i = 0; i < tr->count; i++) n += strcmp(tr->text[i], text) == 0;
    return n;
}

static int find_text(const ovl_text_rects *tr, const char *needle) {
    int n = 0;
    for (uint32_t i = 0; i < tr->count; i++) n += strstr(tr->text[i], needle) != NULL;
    return n;
}

/* One 10 ms outlier does not flatten the others: the scale comes from the
 * p99, the outlier is clipped, capped and labelled with its value; the y
 * axis has ticks labelled in us. */
static void test_overlay_scale_from_the_p99_clips_and_labels_an_outlier(void **state) {
    (void)state;
    static const int none[] = {-1};
    fm_telemetry *t = make_series(FRAMES, none, 250);
    sw_target tg = sw_target_open(W, H);
    static ovl_text_rects tr;
    ovl_desc d = desc;
    d.text_rects = &tr;
    draw_with(&tg, t, NULL, &d);
    ovl_layout lo;
    ovl_layout_compute(&area, t, &desc, &lo);
    /* 80 us of a 150 us scale (1.5 x the p99, rounded): the ordinary bars
     * fill half the height, not 1% of it */
    float x = column_x(&lo.alloc_graph, 100);
    SDL_FRect upper = {x, lo.alloc_graph.y + lo.alloc_graph.h * 0.4f, 1, lo.alloc_graph.h * 0.2f};
    assert_true(count_in(&tg, &upper, colour_rgb(ovl_source_color(1))) > 0);
    float xo = column_x(&lo.alloc_graph, 250);
    SDL_FRect cap = {xo, lo.alloc_graph.y, 2, 3};
    assert_true(count_in(&tg, &cap, OVL_CLIP_RGB) > 0);
    assert_int_equal(find_text(&tr, "^ 10.02 ms"), 1);
    assert_int_equal(find_exact(&tr, "150 us"), 1); /* the top tick, then quarters */
    assert_int_equal(find_exact(&tr, "112.5 us"), 1);
    assert_int_equal(find_exact(&tr, "75 us"), 1);
    assert_int_equal(find_exact(&tr, "37.5 us"), 1);
    assert_int_equal(find_text(&tr, "by pool (last 300 frames): p99 80.0 us, max 10.02 ms"), 1);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

/* Growth frames close together are one spike: named once. */
static void test_overlay_growth_is_labelled_once_per_spike(void **state) {
    (void)state;
    static const int grow[] = {0, 1, 3, 6, 200, -1};
    fm_telemetry *t = make_series(FRAMES, grow, FRAMES);
    sw_target tg = sw_target_open(W, H);
    static ovl_text_rects tr;
    ovl_desc d = desc;
    d.text_rects = &tr;
    draw_with(&tg, t, NULL, &d);
    assert_int_equal(find_text(&tr, "bullets (4 frames)"), 1);
    assert_int_equal(find_text(&tr, "bullets"), 4); /* the spike, frame 200's, legend, table */
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

/* Frames the OS preempted get a mark under their bar; the others none. */
static void test_overlay_preempted_frames_are_marked_under_their_bars(void **state) {
    (void)state;
    static const int none[] = {-1};
    fm_telemetry *t = make_series(FRAMES, none, FRAMES);
    static uint64_t ring[600];
    ring[50] = 51;
    ring[60] = 7; /* another frame's entry: not frame 60 */
    sw_target tg = sw_target_open(W, H);
    ovl_desc d = desc;
    d.preempted_ring = ring;
    d.preempted_ring_len = 600;
    draw_with(&tg, t, NULL, &d);
    ovl_layout lo;
    ovl_layout_compute(&area, t, &d, &lo);
    const SDL_FRect *g = &lo.alloc_graph;
    SDL_FRect at50 = {column_x(g, 50), g->y + g->h, 2, 4};
    SDL_FRect at60 = {column_x(g, 60), g->y + g->h, 2, 4};
    assert_true(count_in(&tg, &at50, OVL_PREEMPT_RGB) > 0);
    assert_int_equal(count_in(&tg, &at60, OVL_PREEMPT_RGB), 0);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

/* The frame-time panel: four strips, each part in its own on its own scale,
 * so 3 ms of simulation and 2 us of maintenance show beside 9 ms of render. */
static void test_overlay_frame_time_parts_each_get_a_strip(void **state) {
    (void)state;
    static const int none[] = {-1};
    fm_telemetry *t = make_series(FRAMES, none, FRAMES);
    sw_target tg = sw_target_open(W, H);
    draw(&tg, t, NULL);
    ovl_layout lo;
    ovl_layout_compute(&area, t, &desc, &lo);
    const uint32_t colours[4] = {OVL_SIM_RGB, OVL_ALLOC_RGB, OVL_MAINT_RGB, OVL_RENDER_RGB};
    float sh = lo.frame_graph.h / 4;
    for (int q = 0; q < 4; q++) {
        SDL_FRect strip = {column_x(&lo.frame_graph, 0), lo.frame_graph.y + (float)q * sh,
                           lo.frame_graph.w * 0.45f, sh};
        int n = count_in(&tg, &strip, colours[q]);
        if (n < 300) fail_msg("part %d: %d pixels in its strip", q, n);
        for (int o = 0; o < 4; o++)
            if (o != q && colours[o] != OVL_MAINT_RGB && colours[q] != OVL_MAINT_RGB)
                assert_int_equal(count_in(&tg, &strip, colours[o]), 0);
    }
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

/* The memory map: a cell per chunk, empty ones dark, full ones in the
 * pool's colour, partly full ones between; the graphs give way to it. */
static void test_overlay_memory_map_shades_each_chunk_by_occupancy(void **state) {
    (void)state;
    fm_telemetry *t = make_telemetry(false);
    static const uint32_t live[4] = {0, 50, 100, 100};
    const ovl_map_pool pools[1] = {{.name = "bullets", .source = 1, .live = live, .chunks = 4,
                                    .items_per_chunk = 100, .chunk_bytes = 65536}};
    static ovl_text_rects tr;
    ovl_desc d = desc;
    d.memory_map = true;
    d.map_pools = pools;
    d.map_pool_count = 1;
    d.text_rects = &tr;
    sw_target tg = sw_target_open(W, H);
    draw_with(&tg, t, NULL, &d);
    ovl_layout lo;
    ovl_layout_compute(&area, t, &d, &lo);
    assert_true(lo.map.h > 100 && lo.alloc_graph.h == 0 && lo.frame_graph.h == 0);
    /* 16-pixel cells under the pool's line */
    float y = lo.map.y + OVL_TEXT_LINE_HEIGHT + 8;
    Uint32 bullets = colour_rgb(ovl_source_color(1));
    assert_int_equal(sw_pixel(&tg, (int)lo.map.x + 8, (int)y), 0x262A33u);
    Uint32 half = sw_pixel(&tg, (int)lo.map.x + 17 + 8, (int)y);
    assert_true(half != 0x262A33u && half != bullets);
    assert_int_equal(sw_pixel(&tg, (int)lo.map.x + 34 + 8, (int)y), bullets);
    assert_int_equal(sw_pixel(&tg, (int)lo.map.x + 51 + 8, (int)y), bullets);
    assert_int_equal(find_text(&tr, "bullets: 4 chunks of 100 items (64.0 KiB), 62% live"), 1);
    assert_int_equal(find_text(&tr, "allocation time per frame"), 0);
    sw_target_close(&tg);
    fm_telemetry_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlay_layout_panels_are_inside_the_area_and_ordered),
        cmocka_unit_test(test_overlay_bars_use_each_pool_colour_in_few_draw_calls),
        cmocka_unit_test(test_overlay_growth_frame_is_magenta_at_its_column),
        cmocka_unit_test(test_overlay_pool_reset_is_a_white_line_at_its_column),
        cmocka_unit_test(test_overlay_from_csv_draws_the_same_pixels),
        cmocka_unit_test(test_overlay_empty_telemetry_and_small_area_draw),
        cmocka_unit_test(test_overlay_tags_are_bars_against_their_budgets),
        cmocka_unit_test(test_overlay_source_colours_are_distinct_from_growth),
        cmocka_unit_test(test_overlay_scale_from_the_p99_clips_and_labels_an_outlier),
        cmocka_unit_test(test_overlay_growth_is_labelled_once_per_spike),
        cmocka_unit_test(test_overlay_preempted_frames_are_marked_under_their_bars),
        cmocka_unit_test(test_overlay_frame_time_parts_each_get_a_strip),
        cmocka_unit_test(test_overlay_memory_map_shades_each_chunk_by_occupancy),
    };
    return cmocka_run_group_tests_name("overlay", tests, NULL, NULL);
}
