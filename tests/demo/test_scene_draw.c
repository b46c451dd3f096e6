/*
 * test_scene_draw.c: the demo's scene renderer (demo/src/scene_draw.c) on a
 * software renderer over a surface.
 */
#include "fm_test.h"

#include <SDL.h>

#include "scene_draw.h"
#include "sw_target.h"

enum { W = 320, H = 200 };

/* Two particles, one entity, one effect; a particle and the entity sit in
 * the dimmed rectangle when one is given. */
static const eng_sprite sprites[] = {
    {.x = 10, .y = 10, .size = 1, .rgba = 0xFF0000FFu, .layer = ENG_LAYER_PARTICLES},
    {.x = 250, .y = 150, .size = 3, .rgba = 0x00FF00FFu, .layer = ENG_LAYER_PARTICLES},
    {.x = 100, .y = 100, .size = 10, .rgba = 0x0000FFFFu, .layer = ENG_LAYER_ENTITIES},
    {.x = 200, .y = 40, .size = 6, .rgba = 0xFFFFFFFFu, .layer = ENG_LAYER_EFFECTS},
};

static eng_render_list list_of_sprites(void) {
    return (eng_render_list){.items = sprites, .count = 4, .layer_start = {0, 2, 3, 4}};
}

/* Per test: a W x H software target and a scene renderer drawing into it. */
typedef struct fixture {
    sw_target t;
    demo_scene_draw s;
} fixture;

static int setup(void **state) {
    static fixture f;
    char err[256];
    f.t = sw_target_open(W, H);
    if (!demo_scene_draw_init(&f.s, f.t.r, W, H, err, sizeof err)) return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    demo_scene_draw_deinit(&f->s);
    sw_target_close(&f->t);
    return 0;
}

static void test_scene_draws_every_layer_in_three_calls(void **state) {
    fixture *f = *state;
    eng_render_list l = list_of_sprites();
    demo_scene_draw_list(&f->s, f->t.r, &l, 1, 1, NULL);
    SDL_RenderFlush(f->t.r);
    assert_int_equal(f->s.draw_calls, 3); /* particle texture + one call per quad layer */
    assert_int_equal(sw_pixel(&f->t, 10, 10), 0xFF0000);
    assert_int_equal(sw_pixel(&f->t, 250, 150), 0x00FF00);
    assert_int_equal(sw_pixel(&f->t, 251, 151), 0x00FF00); /* size 3: a 3x3 block */
    assert_int_equal(sw_pixel(&f->t, 100, 100), 0x0000FF);
    assert_int_equal(sw_pixel(&f->t, 96, 96), 0x0000FF);
    assert_int_equal(sw_pixel(&f->t, 200, 40), 0xFFFFFF);
    assert_int_equal(sw_pixel(&f->t, 300, 10), 0x0E1118); /* background */
    /* Scaled to a larger output: positions follow. */
    demo_scene_draw_list(&f->s, f->t.r, &l, 0.5f, 0.5f, NULL);
    SDL_RenderFlush(f->t.r);
    assert_int_equal(sw_pixel(&f->t, 50, 50), 0x0000FF);
    assert_int_equal(sw_pixel(&f->t, 5, 5), 0xFF0000);
}

static void test_scene_dims_sprites_and_background_inside_the_rect(void **state) {
    fixture *f = *state;
    eng_render_list l = list_of_sprites();
    const SDL_Rect dim = {0, 0, 160, 200};
    demo_scene_draw_list(&f->s, f->t.r, &l, 1, 1, &dim);
    SDL_RenderFlush(f->t.r);
    Uint32 red = sw_pixel(&f->t, 10, 10), blue = sw_pixel(&f->t, 100, 100);
    assert_int_equal(red, 0x3F0000); /* a quarter of 0xFF */
    assert_int_equal(blue, 0x00003F);
    assert_int_equal(sw_pixel(&f->t, 250, 150), 0x00FF00); /* outside: untouched */
    assert_int_equal(sw_pixel(&f->t, 200, 40), 0xFFFFFF);
    assert_true(sw_pixel(&f->t, 150, 190) != 0x0E1118); /* dimmed background */
    assert_int_equal(sw_pixel(&f->t, 170, 190), 0x0E1118);
}

static void test_scene_empty_list_draws_background_only(void **state) {
    fixture *f = *state;
    eng_render_list empty = {0};
    demo_scene_draw_list(&f->s, f->t.r, &empty, 1, 1, NULL);
    SDL_RenderFlush(f->t.r);
    assert_int_equal(f->s.draw_calls, 1);
    assert_int_equal(sw_pixel(&f->t, 100, 100), 0x0E1118);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scene_draws_every_layer_in_three_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scene_dims_sprites_and_background_inside_the_rect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scene_empty_list_draws_background_only, setup, teardown),
    };
    return cmocka_run_group_tests_name("scene_draw", tests, NULL, NULL);
}
