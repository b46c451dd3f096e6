/*
 * test_demo_options.c: framemem-demo's command line parser (demo/src/options.c).
 */
#include "fm_test.h"

#include <string.h>

#include <SDL.h>

#include "options.h"

static bool parse(demo_options *o, char *err, size_t n, int argc, const char **argv) {
    return demo_options_parse(argc, (char **)argv, o, err, n);
}

#define PARSE(o, err, ...)                                                      \
    parse(o, err, sizeof err, (int)(sizeof((const char *[]){"demo", __VA_ARGS__}) / sizeof(char *)), \
          (const char *[]){"demo", __VA_ARGS__})

static void test_options_defaults_without_arguments(void **state) {
    (void)state;
    demo_options o;
    char err[256] = "";
    const char *argv[] = {"demo"};
    assert_true(parse(&o, err, sizeof err, 1, argv));
    assert_true(o.scale == 1.0);
    assert_int_equal(o.width, 1280);
    assert_int_equal(o.height, 720);
    assert_int_equal(o.frames, 0);
    assert_int_equal(o.seed, 1);
    assert_int_equal(o.backend, ENG_BACKEND_POOL);
    assert_true(o.overlay);
    assert_false(o.headless);
    assert_null(o.config);
}

static void test_options_every_option_is_parsed(void **state) {
    (void)state;
    demo_options o;
    char err[256] = "";
    assert_true(PARSE(&o, err, "--config", "a.ini", "--frames", "300", "--headless", "--screenshot",
                      "s.png", "--csv", "t.csv", "--trace", "t.json", "--seed", "42", "--scale", "5",
                      "--backend", "malloc", "--save-config", "b.ini", "--size", "640x480",
                      "--vsync", "--software", "--no-overlay", "--quiet", "--help", "--grow-ahead",
                      "--prefault", "--compare"));
    assert_string_equal(o.config, "a.ini");
    assert_int_equal(o.frames, 300);
    assert_true(o.headless);
    assert_string_equal(o.screenshot, "s.png");
    assert_string_equal(o.csv, "t.csv");
    assert_string_equal(o.trace, "t.json");
    assert_int_equal(o.seed, 42);
    assert_true(o.scale == 5.0);
    assert_int_equal(o.backend, ENG_BACKEND_MALLOC);
    assert_string_equal(o.save_config, "b.ini");
    assert_int_equal(o.width, 640);
    assert_int_equal(o.height, 480);
    assert_true(o.vsync && o.software && o.quiet && o.help && o.grow_ahead && o.prefault && o.compare);
    assert_false(o.overlay);
}

static void test_options_backend_classic_is_parsed(void **state) {
    (void)state;
    demo_options o;
    char err[256] = "";
    assert_true(PARSE(&o, err, "--backend", "classic"));
    assert_int_equal(o.backend, ENG_BACKEND_CLASSIC);
    assert_false(o.compare);
    assert_true(PARSE(&o, err, "--backend", "pool"));
    assert_int_equal(o.backend, ENG_BACKEND_POOL);
}

/* Each bad command line fails with a message naming the option. */
static void expect_error(const char *want, int argc, const char **argv) {
    demo_options o;
    char err[256] = "";
    assert_false(parse(&o, err, sizeof err, argc, argv));
    if (!strstr(err, want)) fail_msg("error '%s' does not mention '%s'", err, want);
}

#define EXPECT_ERROR(want, ...)                                                 \
    expect_error(want, (int)(sizeof((const char *[]){"demo", __VA_ARGS__}) / sizeof(char *)), \
                 (const char *[]){"demo", __VA_ARGS__})

static void test_options_bad_arguments_are_reported(void **state) {
    (void)state;
    EXPECT_ERROR("unknown option '--bogus'", "--bogus");
    EXPECT_ERROR("unknown option 'stray'", "stray");
    EXPECT_ERROR("--frames needs a value", "--frames");
    EXPECT_ERROR("--frames: 'abc' is not a whole number", "--frames", "abc");
    EXPECT_ERROR("--frames: '12x' is not a whole number", "--frames", "12x");
    EXPECT_ERROR("--frames: '-3' is not a whole number", "--frames", "-3");
    EXPECT_ERROR("--frames: 0 is out of range", "--frames", "0");
    EXPECT_ERROR("--scale: 65 is out of range 0.05..50", "--scale", "65");
    EXPECT_ERROR("--scale: 0 is out of range", "--scale", "0");
    EXPECT_ERROR("--scale: 'five' is not a number", "--scale", "five");
    EXPECT_ERROR("--scale: 'nan' is not a number", "--scale", "nan");
    EXPECT_ERROR("--seed: 99999999999999999999999 is out of range", "--seed", "99999999999999999999999");
    EXPECT_ERROR("--backend: 'jemalloc' is not 'pool', 'classic' or 'malloc'", "--backend", "jemalloc");
    EXPECT_ERROR("--size: '640' is not WIDTHxHEIGHT", "--size", "640");
    EXPECT_ERROR("--size: 10x10 is out of range", "--size", "10x10");
    EXPECT_ERROR("--config: the value is empty", "--config", "");
}

static void test_options_press_list_is_parsed_in_frame_order(void **state) {
    (void)state;
    demo_options o;
    char err[256] = "";
    assert_true(PARSE(&o, err, "--press", "100:S,100:L,150:F1,151:="));
    assert_int_equal(o.press_count, 4);
    assert_int_equal(o.press[0].frame, 100);
    assert_int_equal(o.press[0].key, SDLK_s);
    assert_int_equal(o.press[1].key, SDLK_l);
    assert_int_equal(o.press[2].frame, 150);
    assert_int_equal(o.press[2].key, SDLK_F1);
    assert_int_equal(o.press[3].key, SDLK_EQUALS);
    EXPECT_ERROR("--press: 'abc' is not FRAME:KEY", "--press", "abc");
    EXPECT_ERROR("--press: '5' is not FRAME:KEY", "--press", "5");
    EXPECT_ERROR("--press: '-1:S' is not FRAME:KEY", "--press", "-1:S");
    EXPECT_ERROR("--press: 'NoSuchKey' is not an SDL key name", "--press", "5:NoSuchKey");
    EXPECT_ERROR("--press: frame 5 comes after frame 10", "--press", "10:S,5:L");
    EXPECT_ERROR("--press: '1:S,' ends with a comma", "--press", "1:S,");
    char many[1024] = "";
    for (int i = 0; i <= DEMO_MAX_PRESSES; i++) strcat(many, i ? ",1:S" : "1:S");
    EXPECT_ERROR("--press: more than 64 presses", "--press", many);
}

static void test_options_usage_lists_every_option(void **state) {
    (void)state;
    const char *u = demo_options_usage();
    static const char *const opts[] = {"--config", "--frames", "--headless", "--screenshot", "--csv",
                                       "--trace", "--seed", "--scale", "--backend", "--save-config",
                                       "--size", "--vsync", "--software", "--grow-ahead", "--prefault", "--press", "--no-overlay", "--quiet",
                                       "--help"};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (!strstr(u, opts[i])) fail_msg("usage does not list %s", opts[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_defaults_without_arguments),
        cmocka_unit_test(test_options_every_option_is_parsed),
        cmocka_unit_test(test_options_backend_classic_is_parsed),
        cmocka_unit_test(test_options_bad_arguments_are_reported),
        cmocka_unit_test(test_options_press_list_is_parsed_in_frame_order),
        cmocka_unit_test(test_options_usage_lists_every_option),
    };
    return cmocka_run_group_tests_name("demo_options", tests, NULL, NULL);
}
