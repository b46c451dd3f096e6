/*
 * tests/tools/test_fm_plot.c: fm-plot as a user runs it (a child process):
 * the PNG decodes (stb_image) to the requested size, frames with an
 * in-allocation growth show the overlay's growth colour and frames without
 * do not; bad arguments and inputs exit 2 and write nothing; an unwritable
 * output exits 1; the PNG has the usual mode (0644 less the umask); on a
 * full disk (RLIMIT_FSIZE) it exits 1 and the old PNG stays; a FIFO or folder
 * as input or output, or an --out equal to the CSV, exits 2 at once; a CSV
 * with a UTF-8 byte-order mark draws as without it.
 *
 * tests/tools/data/run1.csv: frames 0..3, pool "particles" grows inside an
 * allocation in frames 1 (twice) and 3, frames 0 and 2 have no growth.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <stb_image.h>

#include "fm_test.h"

#include "framemem/telemetry.h"
#include "overlay/overlay.h"

static char dir[64];
static char out_png[128];
static char msg_path[128];

/* Runs fm-plot with args (a shell-quoted string); its exit code. */
static int run(const char *fmt, ...) {
    char args[1024], cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    /* timeout: a run that blocks fails (124) instead of hanging the suite. */
    snprintf(cmd, sizeof cmd, "timeout 60 '%s' %s >/dev/null 2>'%s'", FM_PLOT, args, msg_path);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool message_has(const char *needle) {
    char buf[2048] = "";
    FILE *f = fopen(msg_path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    if (!strstr(buf, needle)) fprintf(stderr, "message was: %s", buf);
    return strstr(buf, needle) != NULL;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Pixels of the picture exactly in the growth colour. */
static long growth_pixels(const char *path, int want_w, int want_h) {
    int w = 0, h = 0, comp = 0;
    unsigned char *px = stbi_load(path, &w, &h, &comp, 4);
    assert_non_null(px);
    assert_int_equal(w, want_w);
    assert_int_equal(h, want_h);
    long n = 0;
    for (long i = 0; i < (long)w * h; i++) {
        const unsigned char *p = px + i * 4;
        if (p[0] == OVL_GROWTH_R && p[1] == OVL_GROWTH_G && p[2] == OVL_GROWTH_B && p[3] == 255) n++;
    }
    stbi_image_free(px);
    return n;
}

static int setup(void **state) {
    (void)state;
    if (!fm_test_make_dir(dir, sizeof dir, "fm_plot_test")) return -1;
    umask(022);
    snprintf(out_png, sizeof out_png, "%s/out.png", dir);
    snprintf(msg_path, sizeof msg_path, "%s/msg.txt", dir);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return fm_test_remove_dir(dir);
}

static void test_whole_run_has_growth(void **state) {
    (void)state;
    assert_int_equal(run("--out '%s' --width 640 --height 400 '%s/run1.csv'", out_png, FM_DATA), 0);
    assert_true(growth_pixels(out_png, 640, 400) > 100);
    unlink(out_png);
}

static void test_default_size(void **state) {
    (void)state;
    assert_int_equal(run("--out '%s' '%s/run1.csv'", out_png, FM_DATA), 0);
    assert_true(growth_pixels(out_png, 1280, 720) > 100);
    unlink(out_png);
}

static void test_frames_without_growth(void **state) {
    (void)state;
    assert_int_equal(run("--out '%s' --width 320 --height 240 --frames 2:2 '%s/run1.csv'",
                         out_png, FM_DATA), 0);
    assert_int_equal(growth_pixels(out_png, 320, 240), 0);
    unlink(out_png);
    /* Open-ended ranges: 3: holds the growth of frame 3, :0 none. */
    assert_int_equal(run("--out '%s' --width 320 --height 240 --frames 3: '%s/run1.csv'", out_png,
                         FM_DATA), 0);
    assert_true(growth_pixels(out_png, 320, 240) > 0);
    assert_int_equal(run("--out '%s' --width 320 --height 240 --frames :0 '%s/run1.csv'", out_png,
                         FM_DATA), 0);
    assert_int_equal(growth_pixels(out_png, 320, 240), 0);
    unlink(out_png);
}

static void test_bad_arguments(void **state) {
    (void)state;
    static const char *const bad[] = {
        "--width 10", "--width abc", "--height 99999", "--frames 5:2", "--frames x",
        "--frames :", "--frames 1-2", "--frobnicate", "--width",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run("--out '%s' %s '%s/run1.csv'", out_png, bad[i], FM_DATA), 2);
        assert_false(exists(out_png));
    }
    assert_int_equal(run("'%s/run1.csv'", FM_DATA), 2); /* no --out */
    assert_true(message_has("--out FILE.png is required"));
    assert_int_equal(run("--out '%s'", out_png), 2); /* no CSV */
    assert_int_equal(run("--out '%s' '%s/run1.csv' '%s/run2.csv'", out_png, FM_DATA, FM_DATA), 2);
    assert_false(exists(out_png));
}

static void test_bad_inputs(void **state) {
    (void)state;
    assert_int_equal(run("--out '%s' --frames 100:200 '%s/run1.csv'", out_png, FM_DATA), 2);
    assert_true(message_has("no frame in 100:200 (the file holds frames 0 to 3)"));
    assert_int_equal(run("--out '%s' '%s/nosuch.csv'", out_png, dir), 2);
    assert_true(message_has("nosuch.csv:"));
    assert_int_equal(run("--out '%s' '%s'", out_png, FM_PLOT), 2); /* a binary file */
    assert_true(message_has(":1: binary content"));
    assert_false(exists(out_png));
}

/* Every number at 2^64 - 1 (a CSV may hold anything): drawn, no overflow
 * (UBSan builds trap a float-to-integer overflow), exit 0. */
static void test_extreme_values_are_drawn(void **state) {
    (void)state;
    char csv[160];
    snprintf(csv, sizeof csv, "%s/extreme.csv", dir);
    FILE *f = fopen(csv, "wb");
    assert_non_null(f);
    const char *m = "18446744073709551615";
    fprintf(f, "frame,pool,kind,backend,allocs,frees,live,capacity,peak_live,item_size,chunk_items,"
               "alloc_ns,grow_events,grow_ns,ahead_grow_events,ahead_grow_ns,bytes_used,high_water,"
               "commit_events,frame_ns,sim_ns,alloc_total_ns,maint_ns,render_ns\n");
    for (int fr = 0; fr < 3; fr++) {
        fprintf(f, "%d,particles,pool,pool", fr);
        for (int c = 0; c < 20; c++) fprintf(f, ",%s", m);
        fprintf(f, "\n%d,frame,arena,pool", fr);
        for (int c = 0; c < 20; c++) fprintf(f, ",%s", c == 6 ? "1" : m); /* chunk_items */
        fprintf(f, "\n");
    }
    fclose(f);
    assert_int_equal(run("--out '%s' '%s'", out_png, csv), 0);
    assert_true(growth_pixels(out_png, 1280, 720) > 0);
    unlink(out_png);
    /* A frame whose parts add up past 2^64 (simulation 2^64 - 1, allocation
     * 1): its bar must stay inside the frame-time graph; a wrapped sum (0)
     * scaled it to the budget and drew it over the panels above. */
    f = fopen(csv, "wb");
    assert_non_null(f);
    fprintf(f, "frame,pool,kind,backend,allocs,frees,live,capacity,peak_live,item_size,chunk_items,"
               "alloc_ns,grow_events,grow_ns,ahead_grow_events,ahead_grow_ns,bytes_used,high_water,"
               "commit_events,frame_ns,sim_ns,alloc_total_ns,maint_ns,render_ns\n");
    for (int fr = 0; fr < 3; fr++)
        fprintf(f, "%d,particles,pool,pool,1,1,1,64,1,32,64,1,0,0,0,0,0,0,0,%s,%s,1,0,0\n", fr, m, m);
    fclose(f);
    assert_int_equal(run("--out '%s' '%s'", out_png, csv), 0);
    char err[256];
    fm_telemetry *t = fm_telemetry_read_csv(csv, err, sizeof err);
    assert_non_null(t);
    ovl_layout lo;
    ovl_layout_compute(&(SDL_FRect){0, 0, 1280, 720}, t, &(ovl_desc){.frames = 3, .title = "t"}, &lo);
    fm_telemetry_destroy(t);
    int w = 0, h = 0, comp = 0;
    unsigned char *px = stbi_load(out_png, &w, &h, &comp, 4);
    assert_non_null(px);
    long sim_above = 0, sim_inside = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const unsigned char *p = px + ((size_t)y * (size_t)w + (size_t)x) * 4;
            if (p[0] != (OVL_SIM_RGB >> 16 & 0xff) || p[1] != (OVL_SIM_RGB >> 8 & 0xff) ||
                p[2] != (OVL_SIM_RGB & 0xff))
                continue;
            if (y >= lo.maint_graph.y && y < lo.maint_graph.y + lo.maint_graph.h) sim_above++;
            if (y >= lo.frame_graph.y && y < lo.frame_graph.y + lo.frame_graph.h) sim_inside++;
        }
    stbi_image_free(px);
    assert_int_equal(sim_above, 0);
    assert_true(sim_inside > 0);
    unlink(out_png);
    unlink(csv);
}

static void test_unwritable_output(void **state) {
    (void)state;
    assert_int_equal(run("--out '%s/nodir/out.png' '%s/run1.csv'", dir, FM_DATA), 1);
    assert_true(message_has("cannot write"));
}

/* "wrote ..." lost to a full disk: the PNG is there, but the run says it
 * failed to report it (exit 1). */
static void test_full_stdout_exits_1(void **state) {
    (void)state;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 60 '%s' --out '%s' --width 320 --height 240 '%s/run1.csv' "
             ">/dev/full 2>'%s'", FM_PLOT, out_png, FM_DATA, msg_path);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_true(message_has("fm-plot: standard output: write failed: No space left on device"));
    unlink(out_png);
}

static void test_png_has_the_usual_file_mode(void **state) {
    (void)state;
    assert_int_equal(run("--out '%s' --width 320 --height 240 '%s/run1.csv'", out_png, FM_DATA), 0);
    struct stat st;
    assert_int_equal(stat(out_png, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644); /* umask 022 */
    unlink(out_png);
}

static int plot_on_full_disk(void *arg) {
    (void)arg;
    return run("--out '%s' '%s/run1.csv'", out_png, FM_DATA);
}

static void test_full_disk_exits_1_and_keeps_the_old_png(void **state) {
    (void)state;
    fm_test_write_text(out_png, "the old picture");
    /* 16 KiB: the 1280x720 plot is bigger. */
    assert_int_equal(fm_test_run_full_disk(16 << 10, plot_on_full_disk, NULL), 1);
    char want[256];
    snprintf(want, sizeof want, "fm-plot: --out %s: write failed: File too large", out_png);
    assert_true(message_has(want));
    assert_true(fm_test_file_is(out_png, "the old picture"));
    unlink(msg_path); /* the only other file in dir */
    assert_int_equal(fm_test_count_temp_files(dir), 0);
    unlink(out_png);
}

static void test_fifos_folders_and_the_input_as_output_exit_2_at_once(void **state) {
    (void)state;
    char fifo[128], folder[128], csv[128];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    snprintf(folder, sizeof folder, "%s/folder", dir);
    snprintf(csv, sizeof csv, "%s/in.csv", dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(mkdir(folder, 0755), 0);
    assert_int_equal(run("--out '%s' '%s'", out_png, fifo), 2);
    assert_true(message_has("/pipe: not a regular file"));
    assert_int_equal(run("--out '%s' '%s'", out_png, folder), 2);
    assert_true(message_has("/folder: not a regular file"));
    assert_false(exists(out_png));
    assert_int_equal(run("--out '%s' '%s/run1.csv'", fifo, FM_DATA), 2);
    assert_true(message_has("/pipe: not a regular file (refusing to replace it); nothing written"));
    assert_int_equal(run("--out '%s' '%s/run1.csv'", folder, FM_DATA), 2);
    assert_true(message_has("/folder: not a regular file (refusing to replace it)"));
    struct stat st;
    assert_int_equal(stat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(stat(folder, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* The CSV as its own output. */
    fm_test_write_text(csv, "frame,pool\n");
    assert_int_equal(run("--out '%s' '%s'", csv, csv), 2);
    assert_true(message_has("in.csv: the same file as the input "));
    assert_true(fm_test_file_is(csv, "frame,pool\n"));
    unlink(fifo);
    rmdir(folder);
    unlink(csv);
    /* The usage text says so. */
    assert_int_equal(run("'%s/run1.csv'", FM_DATA), 2);
    assert_true(message_has("or an --out that is not a regular file or is the CSV"));
}

static void test_csv_with_a_byte_order_mark_draws_as_without(void **state) {
    (void)state;
    char csv[128], cmd[512];
    snprintf(csv, sizeof csv, "%s/bom.csv", dir);
    snprintf(cmd, sizeof cmd, "{ printf '\\357\\273\\277'; cat '%s/run1.csv'; } >'%s'", FM_DATA, csv);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(run("--out '%s' --width 640 --height 400 '%s'", out_png, csv), 0);
    assert_true(growth_pixels(out_png, 640, 400) > 100);
    unlink(out_png);
    unlink(csv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_run_has_growth), cmocka_unit_test(test_default_size),
        cmocka_unit_test(test_frames_without_growth), cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_bad_inputs), cmocka_unit_test(test_unwritable_output),
        cmocka_unit_test(test_png_has_the_usual_file_mode),
        cmocka_unit_test(test_full_stdout_exits_1),
        cmocka_unit_test(test_full_disk_exits_1_and_keeps_the_old_png),
        cmocka_unit_test(test_fifos_folders_and_the_input_as_output_exit_2_at_once),
        cmocka_unit_test(test_csv_with_a_byte_order_mark_draws_as_without),
        cmocka_unit_test(test_extreme_values_are_drawn),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
