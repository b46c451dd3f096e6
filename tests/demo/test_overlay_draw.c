/*
 * test_overlay_draw.c: the overlay's batched drawing (demo/overlay/src/draw.c)
 * on a software renderer over a surface.
 */
#include "fm_test.h"

#include <SDL.h>

#include "overlay/draw.h"
#include "sw_target.h"


static void test_draw_rects_land_where_asked_in_one_draw_call(void **state) {
    (void)state;
    sw_target t = sw_target_open(200, 100);
    ovl_batch *b = ovl_batch_create(0);
    assert_non_null(b);
    ovl_rect(b, 10, 10, 20, 20, (SDL_Color){255, 0, 0, 255});
    ovl_rect(b, 50, 10, 20, 20, (SDL_Color){0, 255, 0, 255});
    ovl_rect(b, 90, 10, 0, 20, (SDL_Color){0, 0, 255, 255}); /* empty: nothing */
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(ovl_batch_draw_calls(b), 1);
    assert_int_equal(sw_pixel(&t, 20, 20), 0xFF0000);
    assert_int_equal(sw_pixel(&t, 60, 20), 0x00FF00);
    assert_int_equal(sw_pixel(&t, 40, 20), 0x000000);
    assert_int_equal(sw_pixel(&t, 90, 20), 0x000000);
    /* An empty batch makes no call. */
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(ovl_batch_draw_calls(b), 1);
    ovl_batch_destroy(b);
    sw_target_close(&t);
}

static void test_draw_ten_thousand_rects_cost_one_call(void **state) {
    (void)state;
    sw_target t = sw_target_open(200, 100);
    ovl_batch *b = ovl_batch_create(10000);
    for (int i = 0; i < 10000; i++)
        ovl_rect(b, (float)(i % 200), (float)(i / 200), 1, 1, (SDL_Color){255, 255, 255, 255});
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(ovl_batch_draw_calls(b), 1);
    assert_int_equal(ovl_batch_dropped(b), 0);
    assert_int_equal(sw_pixel(&t, 199, 49), 0xFFFFFF);
    assert_int_equal(sw_pixel(&t, 0, 50), 0x000000);
    ovl_batch_destroy(b);
    sw_target_close(&t);
}

static void test_draw_software_fills_colour_runs_in_queue_order(void **state) {
    (void)state;
    sw_target t = sw_target_open(200, 100);
    ovl_batch *b = ovl_batch_create(0);
    /* 64 red, then 64 green over the right half of them: two runs, two calls. */
    for (int i = 0; i < 64; i++) ovl_rect(b, (float)i * 2, 10, 2, 10, (SDL_Color){255, 0, 0, 255});
    for (int i = 0; i < 64; i++) ovl_rect(b, 64 + (float)i, 15, 1, 10, (SDL_Color){0, 255, 0, 255});
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(ovl_batch_draw_calls(b), 2);
    assert_int_equal(sw_pixel(&t, 10, 12), 0xFF0000);
    assert_int_equal(sw_pixel(&t, 70, 17), 0x00FF00); /* queue order: green on top */
    assert_int_equal(sw_pixel(&t, 70, 12), 0xFF0000);
    assert_int_equal(sw_pixel(&t, 127, 12), 0xFF0000);
    assert_int_equal(sw_pixel(&t, 128, 12), 0x000000);
    /* A translucent quad or a slanted line sends the batch through geometry. */
    for (int i = 0; i < 64; i++) ovl_rect(b, (float)i, 40, 1, 5, (SDL_Color){0, 0, 255, 255});
    ovl_line(b, 0, 60, 100, 70, 2, (SDL_Color){0, 0, 255, 255});
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(ovl_batch_draw_calls(b), 3);
    assert_int_equal(sw_pixel(&t, 30, 42), 0x0000FF);
    int on_line = 0;
    for (int y = 62; y < 69; y++) on_line += sw_pixel(&t, 50, y) == 0x0000FF;
    assert_true(on_line >= 1); /* the slanted line, rasterised */
    ovl_batch_destroy(b);
    sw_target_close(&t);
}

static void test_draw_full_batch_flushes_into_its_target_or_counts_drops(void **state) {
    (void)state;
    sw_target t = sw_target_open(64, 64);
    ovl_batch *b = ovl_batch_create(4);
    for (int i = 0; i < 6; i++) ovl_rect(b, (float)i * 8, 0, 4, 4, (SDL_Color){255, 255, 255, 255});
    assert_int_equal(ovl_batch_dropped(b), 2); /* no target: the 5th and 6th are dropped */
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(ovl_batch_draw_calls(b), 1);
    ovl_batch_set_target(b, t.r);
    for (int i = 0; i < 6; i++) ovl_rect(b, (float)i * 8, 10, 4, 4, (SDL_Color){255, 255, 255, 255});
    assert_int_equal(ovl_batch_draw_calls(b), 2); /* the full batch flushed itself */
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(ovl_batch_draw_calls(b), 3);
    assert_int_equal(ovl_batch_dropped(b), 2);
    for (int i = 0; i < 6; i++) assert_int_equal(sw_pixel(&t, i * 8 + 1, 11), 0xFFFFFF);
    assert_int_equal(sw_pixel(&t, 3 * 8 + 1, 1), 0xFFFFFF); /* 1st batch: first four drawn */
    assert_int_equal(sw_pixel(&t, 4 * 8 + 1, 1), 0x000000); /* the dropped ones */
    assert_int_equal(sw_pixel(&t, 5 * 8 + 1, 1), 0x000000);
    ovl_batch_destroy(b);
    sw_target_close(&t);
}

static int count_colour(const sw_target *t, int x0, int y0, int x1, int y1, Uint32 rgb) {
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) n += sw_pixel(t, x, y) == rgb;
    return n;
}

static void test_draw_text_has_width_and_pixels_in_its_box(void **state) {
    (void)state;
    sw_target t = sw_target_open(200, 60);
    ovl_batch *b = ovl_batch_create(0);
    assert_true(ovl_text_width("", 1) == 0);
    float w1 = ovl_text_width("Hello", 1), w2 = ovl_text_width("Hello", 2);
    assert_true(w1 > 20 && w1 < 40);
    assert_true(w2 == 2 * w1);
    assert_true(ovl_text_width("Hi\nHello", 1) == w1); /* widest line */
    float drawn = ovl_text(b, 10, 10, 2, (SDL_Color){255, 255, 0, 255}, "Hello\nHi");
    assert_true(drawn == w2);
    assert_true(ovl_batch_flush(b, t.r));
    int inside = count_colour(&t, 10, 10, 10 + (int)w2 + 1, 10 + 4 * OVL_TEXT_LINE_HEIGHT, 0xFFFF00);
    int all = count_colour(&t, 0, 0, 200, 60, 0xFFFF00);
    assert_true(inside > 50);
    assert_int_equal(inside, all);
    /* A long line (beyond one stb_easy_font chunk) is drawn across its full width. */
    char longline[301];
    memset(longline, 'W', 300);
    longline[300] = 0;
    sw_target wide = sw_target_open(3000, 20);
    float lw = ovl_text(b, 0, 0, 1, (SDL_Color){255, 255, 0, 255}, longline);
    assert_true(lw == ovl_text_width(longline, 1));
    assert_true(ovl_batch_flush(b, wide.r));
    assert_true(count_colour(&wide, (int)lw - 8, 0, (int)lw, 20, 0xFFFF00) > 0);
    ovl_batch_destroy(b);
    sw_target_close(&wide);
    sw_target_close(&t);
}

static void test_draw_lines_and_outlines(void **state) {
    (void)state;
    sw_target t = sw_target_open(100, 100);
    ovl_batch *b = ovl_batch_create(0);
    ovl_line(b, 0, 50, 100, 50, 2, (SDL_Color){0, 255, 255, 255});
    ovl_line(b, 5, 5, 5, 5, 2, (SDL_Color){0, 255, 255, 255}); /* a point */
    ovl_rect_outline(b, 10, 10, 30, 30, 1, (SDL_Color){255, 0, 255, 255});
    assert_true(ovl_batch_flush(b, t.r));
    assert_int_equal(sw_pixel(&t, 50, 50), 0x00FFFF);
    assert_int_equal(sw_pixel(&t, 50, 45), 0x000000);
    assert_int_equal(sw_pixel(&t, 5, 5), 0x00FFFF);
    assert_int_equal(sw_pixel(&t, 10, 20), 0xFF00FF);
    assert_int_equal(sw_pixel(&t, 39, 20), 0xFF00FF);
    assert_int_equal(sw_pixel(&t, 25, 25), 0x000000);
    ovl_batch_destroy(b);
    sw_target_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draw_rects_land_where_asked_in_one_draw_call),
        cmocka_unit_test(test_draw_ten_thousand_rects_cost_one_call),
        cmocka_unit_test(test_draw_software_fills_colour_runs_in_queue_order),
        cmocka_unit_test(test_draw_full_batch_flushes_into_its_target_or_counts_drops),
        cmocka_unit_test(test_draw_text_has_width_and_pixels_in_its_box),
        cmocka_unit_test(test_draw_lines_and_outlines),
    };
    return cmocka_run_group_tests_name("overlay_draw", tests, NULL, NULL);
}
