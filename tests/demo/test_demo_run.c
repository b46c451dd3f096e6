/*
 * test_demo_run.c: framemem-demo as a user runs it (demo/src/main.c): a
 * headless run with every output, the save-config / reload loop, bad
 * arguments and files, no display, its files on a full disk (RLIMIT_FSIZE),
 * FIFOs and folders where files belong, outputs equal to inputs, and
 * (argument "xvfb") a real window under xvfb-run. The demo runs as a child
 * process; paths come from CMake.
 */
#define _POSIX_C_SOURCE 200809L
#include "fm_test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stb_image.h>

#include "framemem/config.h"
#include "framemem/telemetry.h"
#include "overlay/overlay.h"

#ifndef DEMO_EXE
#error "DEMO_EXE (path of framemem-demo) comes from tests/demo/tests.cmake"
#endif

enum { W = 1280, H = 720 };

typedef struct run {
    int code;     /* exit code, or 128 + signal */
    char out[16384], err[16384];
} run;

static char dir[512]; /* per-process scratch directory */

static void slurp(const char *path, char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = 0;
    fclose(f);
}

enum { ENV_KEEP = 0, ENV_NO_DISPLAY = 1, ENV_WINDOW = 2 };

/* Runs argv[0..] with stdout/stderr captured. ENV_NO_DISPLAY: no DISPLAY,
 * WAYLAND_DISPLAY or SDL_VIDEODRIVER in the child's environment. ENV_WINDOW:
 * a real window, where libdbus and the X11/Mesa modules SDL loads and unloads
 * keep allocations LeakSanitizer cannot attribute to a module to suppress; so
 * leak checking is off there (the headless runs check the demo's own leaks). */
/* A child's limits: its files may not pass fsize bytes (0: no limit; a
 * full disk), and it is killed, failing the test, after timeout_s seconds
 * (a run that blocks). */
typedef struct run_limits {
    size_t fsize;
    int timeout_s;
    const char *stdout_to; /* a path for the program's stdout instead of stdout.txt */
} run_limits;

static void run_argv_limited(run *r, char *const argv[], int env, run_limits lim) {
    char out_path[600], err_path[600];
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(lim.stdout_to ? lim.stdout_to : out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0) _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        if (chdir(dir) != 0) _exit(126);
        alarm(240); /* survives exec: a run that hangs fails (SIGALRM) instead of blocking ctest */
        if (env == ENV_NO_DISPLAY) {
            unsetenv("DISPLAY");
            unsetenv("WAYLAND_DISPLAY");
            unsetenv("SDL_VIDEODRIVER");
        }
        if (env == ENV_WINDOW) {
            static char opts[1024];
            const char *old = getenv("ASAN_OPTIONS");
            snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", old ? old : "", old && *old ? ":" : "");
            setenv("ASAN_OPTIONS", opts, 1);
        }
        if (lim.fsize) fm_test_limit_file_size(lim.fsize);
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    int timeout_ms = (lim.timeout_s ? lim.timeout_s : 600) * 1000;
    pid_t done = 0;
    for (int waited = 0; (done = waitpid(pid, &status, WNOHANG)) == 0 && waited < timeout_ms; waited += 10)
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("%s did not end within %d s (blocked?)", argv[0], timeout_ms / 1000);
    }
    assert_int_equal(done, pid);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    slurp(out_path, r->out, sizeof r->out);
    slurp(err_path, r->err, sizeof r->err);
}

static void run_argv(run *r, char *const argv[], int env) { run_argv_limited(r, argv, env, (run_limits){0}); }

#define DEMO(r, env, ...) run_argv(r, (char *const[]){DEMO_EXE, __VA_ARGS__, NULL}, env)
/* The demo with limits (run_limits) on its files and time. */
#define DEMO_LIMITED(r, lim, ...) \
    run_argv_limited(r, (char *const[]){DEMO_EXE, __VA_ARGS__, NULL}, ENV_KEEP, lim)

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* A file of the run's directory with that text. */
static void write_in(const char *name, const char *text) {
    char path[600];
    path_in(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void expect_text(const char *haystack, const char *needle, const char *where) {
    if (!strstr(haystack, needle)) fail_msg("%s lacks '%s':\n%s", where, needle, haystack);
}

/* The PNG at path decodes to the window size; returns its RGB pixels
 * (stbi_image_free them). */
static unsigned char *expect_png(const char *path) {
    int w, h, comp;
    unsigned char *px = stbi_load(path, &w, &h, &comp, 3);
    if (!px) fail_msg("%s does not decode: %s", path, stbi_failure_reason());
    assert_int_equal(w, W);
    assert_int_equal(h, H);
    return px;
}

/* ------------------------------------------------------------ bad input */

static void test_demo_help_lists_the_options_and_exits_0(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--help");
    assert_int_equal(r.code, 0);
    expect_text(r.out, "--headless", "stdout");
    expect_text(r.out, "--save-config", "stdout");
    expect_text(r.out, "F1 overlay", "stdout");
}

static void expect_usage_error(const char *a, const char *b, const char *want) {
    static run r;
    if (b) DEMO(&r, ENV_KEEP, (char *)a, (char *)b);
    else DEMO(&r, ENV_KEEP, (char *)a);
    if (r.code != 2) fail_msg("'%s %s': exit %d, wanted 2; stderr: %s", a, b ? b : "", r.code, r.err);
    expect_text(r.err, want, "stderr");
    expect_text(r.err, "framemem-demo --help", "stderr");
    assert_string_equal(r.out, ""); /* nothing ran */
}

static void test_demo_bad_arguments_exit_2_with_a_clear_message(void **state) {
    (void)state;
    expect_usage_error("--bogus", NULL, "framemem-demo: unknown option '--bogus'");
    expect_usage_error("--frames", "abc", "--frames: 'abc' is not a whole number");
    expect_usage_error("--frames", NULL, "--frames needs a value");
    expect_usage_error("--scale", "0", "--scale: 0 is out of range 0.05..50");
    expect_usage_error("--backend", "tcmalloc", "--backend: 'tcmalloc' is not 'pool', 'classic' or 'malloc'");
    expect_usage_error("--size", "huge", "--size: 'huge' is not WIDTHxHEIGHT");
}

static void test_demo_missing_config_file_exits_2_naming_it(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "5", "--config", "no-such-dir/pools.ini");
    assert_int_equal(r.code, 2);
    expect_text(r.err, "--config no-such-dir/pools.ini: cannot open: No such file or directory",
                "stderr");
}

static void test_demo_without_a_display_suggests_headless(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_NO_DISPLAY, "--frames", "5");
    assert_int_equal(r.code, 1);
    expect_text(r.err, "cannot open a window", "stderr");
    expect_text(r.err, "--headless", "stderr");
}

static void test_demo_unwritable_outputs_fail_with_exit_1(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "3", "--csv", "no-such-dir/t.csv");
    assert_int_equal(r.code, 1);
    expect_text(r.err, "--csv no-such-dir/t.csv: cannot write", "stderr");
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "3", "--screenshot", "no-such-dir/s.png", "--quiet");
    assert_int_equal(r.code, 1);
    expect_text(r.err, "--screenshot no-such-dir/s.png: cannot write: No such file or directory", "stderr");
}

/* ------------------------------------------------------------ outputs */

/* Lines after the header, and how many rows each frame number has. */
static size_t csv_rows(const char *path, uint64_t *frames_seen) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048];
    size_t rows = 0;
    uint64_t last = UINT64_MAX, frames = 0;
    assert_non_null(fgets(line, sizeof line, f)); /* header */
    assert_true(strncmp(line, "frame,pool,", 11) == 0);
    while (fgets(line, sizeof line, f)) {
        uint64_t fr = strtoull(line, NULL, 10);
        if (fr != last) frames++;
        last = fr;
        rows++;
    }
    fclose(f);
    *frames_seen = frames;
    return rows;
}

/* Sum of grow_events over every frame but the first in a CSV. */
static uint64_t csv_growth_after_first_frame(const char *path, uint64_t *in_first) {
    char err[256];
    fm_telemetry *t = fm_telemetry_read_csv(path, err, sizeof err);
    if (!t) fail_msg("%s", err);
    uint64_t after = 0;
    *in_first = 0;
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++) {
        uint32_t g = fm_telemetry_get_frame(t, i)->grow_events;
        if (i == 0) *in_first = g;
        else after += g;
    }
    fm_telemetry_destroy(t);
    return after;
}

static void test_demo_headless_run_writes_screenshot_csv_and_trace(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "300", "--screenshot", "shot.png", "--csv", "run.csv",
         "--trace", "run.json", "--seed", "7");
    if (r.code != 0) fail_msg("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "framemem-demo summary: 300 frames", "summary");
    expect_text(r.out, "allocation time per frame: median", "summary");
    expect_text(r.out, "growth events inside allocation calls:", "summary");

    char png[600], csv[600], trace[600];
    path_in(png, sizeof png, "shot.png");
    path_in(csv, sizeof csv, "run.csv");
    path_in(trace, sizeof trace, "run.json");

    /* The CSV: one row per frame per source. */
    char err[256];
    fm_telemetry *t = fm_telemetry_read_csv(csv, err, sizeof err);
    if (!t) fail_msg("%s", err);
    uint32_t sources = fm_telemetry_source_count(t);
    assert_true(sources >= 3);
    uint64_t frames = 0;
    assert_int_equal(csv_rows(csv, &frames), 300 * (size_t)sources);
    assert_int_equal(frames, 300);

    /* The PNG: window size, and the overlay's allocation graph holds bars in
     * the colours of the pools that allocated the most. */
    unsigned char *px = expect_png(png);
    ovl_layout lo;
    const SDL_FRect area = {8, 8, W - 16, H - 16};
    ovl_layout_compute(&area, t, &(ovl_desc){.settings = "s", .help = "h"}, &lo);
    uint64_t total = 0, by_source[FM_TELEMETRY_MAX_SOURCES] = {0};
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++)
        for (uint32_t s = 0; s < sources; s++) {
            by_source[s] += fm_telemetry_get_sample(t, i, s)->alloc_ns;
            total += fm_telemetry_get_sample(t, i, s)->alloc_ns;
        }
    assert_true(total > 0);
    int checked = 0;
    for (uint32_t s = 0; s < sources; s++) {
        if (by_source[s] * 10 < total) continue; /* too thin to be sure of a pixel */
        SDL_Color c = ovl_source_color(s);
        int found = 0;
        for (int y = (int)lo.alloc_graph.y; y < (int)(lo.alloc_graph.y + lo.alloc_graph.h); y++)
            for (int x = (int)lo.alloc_graph.x; x < (int)(lo.alloc_graph.x + lo.alloc_graph.w); x++) {
                const unsigned char *p = px + 3 * ((size_t)y * W + (size_t)x);
                found += p[0] == c.r && p[1] == c.g && p[2] == c.b;
            }
        if (found < 20)
            fail_msg("pool %s (colour %02x%02x%02x) has %d pixels in the graph", fm_telemetry_get_source(t, s)->name,
                     c.r, c.g, c.b, found);
        checked++;
    }
    assert_true(checked >= 1);
    stbi_image_free(px);
    fm_telemetry_destroy(t);

    /* The trace: JSON with a traceEvents array (python3's json module). */
    if (!PYTHON3[0]) fail_msg("python3 was not found when CMake ran: cannot check %s (tools/dev installs it)", trace);
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "%s -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "ev=d[\"traceEvents\"] if isinstance(d, dict) else d; sys.exit(0 if len(ev) >= 300 else 3)' %s",
             PYTHON3, trace);
    assert_int_equal(system(cmd), 0);
}

static void test_demo_saved_config_removes_growth_after_frame_0(void **state) {
    (void)state;
    static run r;
    /* First run: default (small) pools regrow; save the tuned config. */
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "300", "--save-config", "tuned.ini", "--csv", "first.csv",
         "--no-overlay");
    if (r.code != 0) fail_msg("exit %d\nstderr: %s", r.code, r.err);
    expect_text(r.out, "wrote the tuned config tuned.ini", "stdout");
    expect_text(r.out, "save a tuned config", "summary"); /* it had hitches to remove */
    char csv[600];
    path_in(csv, sizeof csv, "first.csv");
    uint64_t first_frame;
    assert_true(csv_growth_after_first_frame(csv, &first_frame) > 0);

    /* Second run with it: no growth inside an allocation after frame 0. */
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "300", "--config", "tuned.ini", "--csv", "second.csv",
         "--no-overlay");
    if (r.code != 0) fail_msg("exit %d\nstderr: %s", r.code, r.err);
    expect_text(r.out, "(0 after frame 0)", "summary");
    expect_text(r.out, "No growth inside an allocation call after frame 0", "summary");
    expect_text(r.out, "backend pool | config tuned.ini | growth ", "summary");
    assert_string_equal(r.err, ""); /* the saved config loads without a problem */
    path_in(csv, sizeof csv, "second.csv");
    assert_int_equal(csv_growth_after_first_frame(csv, &first_frame), 0);
}

/* Every key through --press (the same event queue as a keyboard): save and
 * reload in one run removes growth after the reload, the rest runs. */
static void test_demo_keys_save_reload_switch_and_reset(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "260", "--csv", "keys.csv", "--press",
         "120:S,121:L,160:F1,161:F1,170:B,175:=,176:-,180:G,181:A,182:F,183:P,183:N,184:P,"
         "200:M,203:M,205:M,207:V,210:F12,212:V,240:R");
    if (r.code != 0) fail_msg("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "saved a tuned config to framemem-tuned.ini (L reloads it)", "stdout");
    expect_text(r.out, "reloaded framemem-tuned.ini", "stdout");
    expect_text(r.out, "screenshot framemem-demo-000.png", "stdout");
    expect_text(r.out, "stats reset", "stdout");
    expect_text(r.out, "framemem-demo summary: 20 frames", "summary"); /* since the reset at 240 */
    char png[600];
    path_in(png, sizeof png, "framemem-demo-000.png");
    struct stat st;
    assert_int_equal(stat(png, &st), 0);
    /* After the reload (frame 121) and until B bursts past the tuned peaks
     * (frame 170), no pool grows inside an allocation. */
    char csv[600], err[256];
    path_in(csv, sizeof csv, "keys.csv");
    fm_telemetry *t = fm_telemetry_read_csv(csv, err, sizeof err);
    if (!t) fail_msg("%s", err);
    uint64_t before = 0, after = 0;
    for (uint32_t i = 0; i < fm_telemetry_frame_count(t); i++) {
        const fm_telemetry_frame *f = fm_telemetry_get_frame(t, i);
        if (f->frame < 121) before += f->grow_events;
        else if (f->frame > 122 && f->frame < 170) after += f->grow_events;
    }
    fm_telemetry_destroy(t);
    assert_true(before > 0);
    assert_int_equal(after, 0);
}

static void test_demo_escape_quits_early_with_the_screenshot(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "100000", "--press", "30:Escape", "--screenshot", "esc.png");
    if (r.code != 0) fail_msg("exit %d\nstderr: %s", r.code, r.err);
    expect_text(r.out, "framemem-demo summary: 30 frames", "summary");
    char png[600];
    path_in(png, sizeof png, "esc.png");
    stbi_image_free(expect_png(png));
}

/* Paused frames are frames of the run: --frames ends a paused run, --press
 * counts them, and each is in the CSV with no allocation (P at 10 pauses,
 * P at 25 resumes). */
/* What it prints is part of what it was asked to do: a summary lost to a
 * full disk is a failure (exit 1, said on stderr). */
static void test_demo_summary_lost_on_a_full_stdout_exits_1(void **state) {
    (void)state;
    static run r;
    DEMO_LIMITED(&r, ((run_limits){.stdout_to = "/dev/full"}), "--headless", "--frames", "20");
    assert_int_equal(r.code, 1);
    expect_text(r.err, "framemem-demo: standard output: write failed: No space left on device",
                "stderr");
}

static void test_demo_frames_counts_paused_frames_so_a_paused_run_ends(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "40", "--press", "10:P", "--csv", "paused.csv", "--no-overlay");
    if (r.code != 0) fail_msg("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "framemem-demo summary: 40 frames", "summary");
    expect_text(r.out, "30 of them paused (no simulation): the figures below are of the other 10", "summary");
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "40", "--press", "10:P,25:P", "--csv", "paused.csv", "--no-overlay");
    if (r.code != 0) fail_msg("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "15 of them paused", "summary");
    char csv[600], err[256];
    path_in(csv, sizeof csv, "paused.csv");
    fm_telemetry *t = fm_telemetry_read_csv(csv, err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_int_equal(fm_telemetry_frame_count(t), 40);
    int s = fm_telemetry_find_source(t, "particles");
    assert_true(s >= 0);
    for (uint32_t i = 0; i < 40; i++) {
        uint64_t allocs = fm_telemetry_get_sample(t, i, (uint32_t)s)->allocs;
        if (i >= 10 && i < 25) assert_int_equal(allocs, 0);
        else assert_true(allocs > 0);
    }
    fm_telemetry_destroy(t);
}

/* A frame arena too small for the world's lists empties the world each
 * frame: the run finishes, the summary counts the failures, exit 3. */
static void test_demo_engine_failures_are_counted_and_exit_3(void **state) {
    (void)state;
    static run r;
    write_in("small_arena.ini", "[arena.frame]\nreserve = 1048576\n");
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "20", "--scale", "5", "--config", "small_arena.ini",
         "--no-overlay");
    if (r.code != 3) fail_msg("exit %d, wanted 3\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "engine failures during the run: ", "summary");
    expect_text(r.out, "the world was emptied", "summary");
    expect_text(r.err, "framemem-demo: the engine met ", "stderr");
    /* --quiet: no summary, the same status and message */
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "20", "--scale", "5", "--config", "small_arena.ini", "--quiet");
    assert_int_equal(r.code, 3);
    expect_text(r.err, "failure(s) during the run", "stderr");
    DEMO(&r, ENV_KEEP, "--help");
    expect_text(r.out, "3 the engine met failures during the run", "--help");
}

/* A readable config with problems runs on the defaults for the bad entries
 * and exits 2; a key whose action fails (L with no config) exits 1. */
static void test_demo_config_problems_and_failed_keys_give_a_non_zero_exit(void **state) {
    (void)state;
    static run r;
    write_in("problems.ini", "[pool.particles]\ninitial_capacity = lots\n");
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "5", "--config", "problems.ini", "--no-overlay");
    if (r.code != 2) fail_msg("exit %d, wanted 2\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.err, "problems.ini:2:", "stderr");
    expect_text(r.out, "framemem-demo summary: 5 frames", "summary"); /* it ran */
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "5", "--press", "2:L", "--no-overlay");
    if (r.code != 1) fail_msg("exit %d, wanted 1\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "no config to reload", "stdout");
}

static void test_demo_malloc_backend_runs_the_same_world(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "60", "--backend", "malloc", "--no-overlay");
    if (r.code != 0) fail_msg("exit %d\nstderr: %s", r.code, r.err);
    expect_text(r.out, "backend malloc", "summary");
}

static void test_demo_classic_backend_grows_inside_allocations(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "60", "--backend", "classic", "--no-overlay");
    if (r.code != 0) fail_msg("exit %d\nstderr: %s", r.code, r.err);
    expect_text(r.out, "backend classic", "summary");
    expect_text(r.out, "pools that grew inside allocations: ", "summary");
}

/* M cycles the backend pool -> classic -> malloc -> pool. */
static void test_demo_key_m_cycles_pool_classic_malloc(void **state) {
    (void)state;
    static run r;
    static const struct {
        const char *presses, *backend;
    } steps[] = {{"0:M", "backend classic"}, {"0:M,1:M", "backend malloc"}, {"0:M,1:M,2:M", "backend pool"}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        DEMO(&r, ENV_KEEP, "--headless", "--frames", "5", "--no-overlay", "--press", (char *)steps[i].presses);
        if (r.code != 0) fail_msg("%s: exit %d\nstderr: %s", steps[i].presses, r.code, r.err);
        expect_text(r.out, steps[i].backend, "summary");
    }
}

/* The growths of one --compare row (its label at a line's start). */
static long compare_growths(const char *out, const char *label) {
    char key[64];
    snprintf(key, sizeof key, "\n    %s ", label);
    const char *p = strstr(out, key);
    if (!p) fail_msg("no compare row '%s' in:\n%s", label, out);
    long n = -1;
    if (sscanf(p + strlen(key), "%ld", &n) != 1) fail_msg("row '%s' has no growth count:\n%s", label, out);
    return n;
}

/* --compare: the run's frames again on every backend, side by side; the
 * growth counts are the seeded world's (timing decides nothing here). */
static void test_demo_compare_prints_the_backends_and_their_growth_counts(void **state) {
    (void)state;
    static run r;
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "120", "--compare", "--no-overlay");
    if (r.code != 0) fail_msg("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "compare: the same 120 frames again, headless, on each backend", "summary");
    assert_true(compare_growths(r.out, "framemem (config)") > 0);
    assert_int_equal(compare_growths(r.out, "framemem (tuned)"), 0);
    assert_true(compare_growths(r.out, "classic") > 0);
    assert_int_equal(compare_growths(r.out, "malloc"), 0);
    expect_text(r.out, "target: classic worst allocation frame ", "summary");
    expect_text(r.out, "(>= 100x): ", "summary");
}

/* ------------------------------------------------------------ files */

static void write_text_in(const char *name, const char *text) {
    char p[600];
    path_in(p, sizeof p, name);
    fm_test_write_text(p, text);
}

static void expect_file_is(const char *name, const char *text) {
    char p[600];
    path_in(p, sizeof p, name);
    if (!fm_test_file_is(p, text)) fail_msg("%s no longer holds '%s'", name, text);
}

static void expect_no_temp_files(void) {
    int n = fm_test_count_temp_files(dir);
    if (n != 0) fail_msg("%d temporary file(s) left in %s", n, dir);
}

static void test_demo_full_disk_fails_each_output_and_keeps_the_old_files(void **state) {
    (void)state;
    static run r;
    static const char *const outs[] = {"full.csv", "full.json", "full.png", "full.ini"};
    for (int i = 0; i < 4; i++) write_text_in(outs[i], "the old file\n");
    /* 16 KiB: the CSV, the trace and the PNG of 60 frames are bigger. */
    DEMO_LIMITED(&r, ((run_limits){.fsize = 16 << 10}), "--headless", "--frames", "60", "--quiet",
                 "--csv", "full.csv", "--trace", "full.json", "--screenshot", "full.png");
    if (r.code != 1) fail_msg("exit %d, wanted 1\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.err, "framemem-demo: --csv full.csv: write failed: File too large", "stderr");
    expect_text(r.err, "framemem-demo: --trace full.json: write failed: File too large", "stderr");
    expect_text(r.err, "framemem-demo: --screenshot full.png: write failed: File too large", "stderr");
    if (strstr(r.out, "wrote")) fail_msg("a failed output was reported written:\n%s", r.out);
    /* 1 KiB: the tuned config (about 2 KiB) too. */
    DEMO_LIMITED(&r, ((run_limits){.fsize = 1 << 10}), "--headless", "--frames", "10", "--quiet",
                 "--no-overlay", "--save-config", "full.ini");
    if (r.code != 1) fail_msg("exit %d, wanted 1\nstderr: %s", r.code, r.err);
    expect_text(r.err, "framemem-demo: --save-config full.ini: write failed: File too large", "stderr");
    for (int i = 0; i < 4; i++) expect_file_is(outs[i], "the old file\n");
    expect_no_temp_files();
}

static void test_demo_failed_run_leaves_its_outputs_as_they_were(void **state) {
    (void)state;
    static run r;
    write_text_in("kept.csv", "kept csv\n");
    write_text_in("kept.json", "kept trace\n");
    DEMO(&r, ENV_NO_DISPLAY, "--frames", "5", "--csv", "kept.csv", "--trace", "kept.json");
    assert_int_equal(r.code, 1);
    expect_text(r.err, "cannot open a window", "stderr");
    expect_text(r.err, "--csv kept.csv: not written (the run failed)", "stderr");
    expect_text(r.err, "--trace kept.json: not written (the run failed)", "stderr");
    expect_file_is("kept.csv", "kept csv\n");
    expect_file_is("kept.json", "kept trace\n");
    expect_no_temp_files();
}

static void test_demo_output_equal_to_an_input_is_refused_before_the_run(void **state) {
    (void)state;
    static run r;
    static const char cfg[] = "[pool.particles]\ninitial_capacity = 2048\n";
    write_text_in("in.ini", cfg);
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "5", "--csv", "in.ini", "--config", "in.ini");
    if (r.code != 2) fail_msg("exit %d, wanted 2\nstderr: %s", r.code, r.err);
    expect_text(r.err, "in.ini: the same file as the input in.ini; nothing was run", "stderr");
    assert_string_equal(r.out, "");
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "5", "--save-config", "./in.ini", "--config", "in.ini");
    assert_int_equal(r.code, 2);
    expect_text(r.err, "./in.ini: the same file as the input in.ini", "stderr");
    expect_file_is("in.ini", cfg);
    /* One file for two outputs. */
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "5", "--csv", "twice.out", "--trace", "twice.out");
    assert_int_equal(r.code, 2);
    expect_text(r.err, "twice.out: given for two outputs", "stderr");
    char p[600];
    path_in(p, sizeof p, "twice.out");
    assert_int_not_equal(access(p, F_OK), 0);
}

static void test_demo_fifos_and_folders_are_refused_at_once_with_exit_2(void **state) {
    (void)state;
    static run r;
    char fifo[600], folder[600];
    path_in(fifo, sizeof fifo, "pipe");
    path_in(folder, sizeof folder, "folder");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(mkdir(folder, 0755), 0);
    char big[600];
    path_in(big, sizeof big, "big.ini"); /* over the loader's cap (sparse) */
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)FM_CONFIG_MAX_BYTES + 1), 0);
    close(fd);
    static const struct {
        const char *option, *file, *want;
    } cases[] = {
        {"--config", "pipe", "framemem-demo: --config pipe: not a regular file"},
        {"--config", "folder", "framemem-demo: --config folder: not a regular file"},
        {"--config", "big.ini", "framemem-demo: --config big.ini: too large (cap 1048576 bytes)"},
        {"--csv", "pipe", "framemem-demo: pipe: not a regular file (refusing to replace it)"},
        {"--trace", "folder", "framemem-demo: folder: not a regular file (refusing to replace it)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        DEMO_LIMITED(&r, ((run_limits){.timeout_s = 60}), "--headless", "--frames", "5",
                     (char *)cases[i].option, (char *)cases[i].file);
        if (r.code != 2) fail_msg("%s %s: exit %d, wanted 2", cases[i].option, cases[i].file, r.code);
        expect_text(r.err, cases[i].want, "stderr");
    }
    struct stat st;
    assert_int_equal(stat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(stat(folder, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* --help says what these exit with. */
    DEMO(&r, ENV_KEEP, "--help");
    expect_text(r.out, "2 bad arguments, a config\nthat is not a readable regular file of at most 1 MiB (nothing runs)",
                "--help");
    expect_text(r.out, "output that is not a regular file or is the same file as an input or another\noutput "
                       "(nothing runs)",
                "--help");
}

/* ------------------------------------------------------------ xvfb */

static void test_demo_window_under_xvfb_takes_a_screenshot(void **state) {
    (void)state;
    static run r;
    char shot[600];
    path_in(shot, sizeof shot, "xvfb.png");
    run_argv(&r,
             (char *const[]){XVFB_RUN, "-a", "-s", "-screen 0 1280x720x24", DEMO_EXE, "--frames", "120",
                             "--screenshot", shot, NULL},
             ENV_WINDOW);
    if (r.code != 0) fail_msg("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
    expect_text(r.out, "framemem-demo summary: 120 frames", "summary");
    stbi_image_free(expect_png(shot));
}

/* Pixels of the growth colour (OVL_GROWTH_RGB: bars, ticks and labels of
 * growth inside an allocation; no scene sprite is magenta). */
static long growth_pixels(const char *png) {
    unsigned char *px = expect_png(png);
    long n = 0;
    for (long i = 0; i < (long)W * H; i++)
        n += px[3 * i] == OVL_GROWTH_R && px[3 * i + 1] == OVL_GROWTH_G && px[3 * i + 2] == OVL_GROWTH_B;
    stbi_image_free(px);
    return n;
}

/* A window under Xvfb per backend: the default pools and the classic pool
 * show growth markers, the pools of a tuned config none. */
static void test_demo_window_shows_growth_markers_for_default_and_classic_not_tuned(void **state) {
    (void)state;
    static run r;
    char tuned[600], shot[600];
    path_in(tuned, sizeof tuned, "xvfb-tuned.ini");
    DEMO(&r, ENV_KEEP, "--headless", "--frames", "200", "--save-config", tuned, "--no-overlay", "--quiet");
    if (r.code != 0) fail_msg("exit %d\nstderr: %s", r.code, r.err);
    static const struct {
        const char *name, *opt, *val;
        bool growth;
    } cases[] = {{"default", "--seed", "1", true}, {"classic", "--backend", "classic", true},
                 {"tuned", "--config", NULL, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "xvfb-%s.png", cases[i].name);
        path_in(shot, sizeof shot, name);
        run_argv(&r,
                 (char *const[]){XVFB_RUN, "-a", "-s", "-screen 0 1280x720x24", DEMO_EXE, "--frames", "200",
                                 (char *)cases[i].opt, cases[i].val ? (char *)cases[i].val : tuned,
                                 "--screenshot", shot, "--quiet", NULL},
                 ENV_WINDOW);
        if (r.code != 0) fail_msg("%s: exit %d\nstdout: %s\nstderr: %s", cases[i].name, r.code, r.out, r.err);
        long n = growth_pixels(shot);
        if (cases[i].growth ? n < 20 : n != 0)
            fail_msg("%s: %ld growth-coloured pixels, wanted %s", cases[i].name, n,
                     cases[i].growth ? "a marker (20 or more)" : "none");
    }
}

/* ------------------------------------------------------------ main */

static int make_dir(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/demo-run-%ld", TEST_OUT_DIR, (long)getpid());
    mkdir(TEST_OUT_DIR, 0755);
    return mkdir(dir, 0755);
}

static int remove_dir(void **state) {
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "xvfb")) {
        const struct CMUnitTest xvfb[] = {
            cmocka_unit_test(test_demo_window_under_xvfb_takes_a_screenshot),
            cmocka_unit_test(test_demo_window_shows_growth_markers_for_default_and_classic_not_tuned),
        };
        return cmocka_run_group_tests_name("demo_xvfb", xvfb, make_dir, remove_dir);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_help_lists_the_options_and_exits_0),
        cmocka_unit_test(test_demo_bad_arguments_exit_2_with_a_clear_message),
        cmocka_unit_test(test_demo_missing_config_file_exits_2_naming_it),
        cmocka_unit_test(test_demo_without_a_display_suggests_headless),
        cmocka_unit_test(test_demo_unwritable_outputs_fail_with_exit_1),
        cmocka_unit_test(test_demo_headless_run_writes_screenshot_csv_and_trace),
        cmocka_unit_test(test_demo_saved_config_removes_growth_after_frame_0),
        cmocka_unit_test(test_demo_keys_save_reload_switch_and_reset),
        cmocka_unit_test(test_demo_escape_quits_early_with_the_screenshot),
        cmocka_unit_test(test_demo_malloc_backend_runs_the_same_world),
        cmocka_unit_test(test_demo_classic_backend_grows_inside_allocations),
        cmocka_unit_test(test_demo_key_m_cycles_pool_classic_malloc),
        cmocka_unit_test(test_demo_compare_prints_the_backends_and_their_growth_counts),
        cmocka_unit_test(test_demo_full_disk_fails_each_output_and_keeps_the_old_files),
        cmocka_unit_test(test_demo_failed_run_leaves_its_outputs_as_they_were),
        cmocka_unit_test(test_demo_output_equal_to_an_input_is_refused_before_the_run),
        cmocka_unit_test(test_demo_fifos_and_folders_are_refused_at_once_with_exit_2),
        cmocka_unit_test(test_demo_frames_counts_paused_frames_so_a_paused_run_ends),
        cmocka_unit_test(test_demo_summary_lost_on_a_full_stdout_exits_1),
        cmocka_unit_test(test_demo_engine_failures_are_counted_and_exit_3),
        cmocka_unit_test(test_demo_config_problems_and_failed_keys_give_a_non_zero_exit),
    };
    return cmocka_run_group_tests_name("demo_run", tests, make_dir, remove_dir);
}
