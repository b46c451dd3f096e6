/*
 * tests/engine/test_files.c: the engine's files (its config and telemetry,
 * framemem_telemetry's readers and writers) as a user's disk holds them. Readers: a FIFO, a folder or a
 * device is refused at once ("not a regular file"; a FIFO never blocks), a
 * file above the cap is refused before it is read, a UTF-8 BOM is accepted.
 * Writers (CSV, streamed CSV, Chrome trace, tuned config): a full disk
 * (RLIMIT_FSIZE in a child) fails with the path and the reason and leaves the
 * old file byte for byte with no temporary file; a FIFO or folder at the
 * destination is refused and left as it was.
 */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/config.h"
#include "engine/engine.h"
#include "framemem/telemetry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A test that blocks fails by SIGALRM instead of hanging the suite. */
enum { HANG_SECONDS = 30 };

static char dir[64];

static const char *in_dir(const char *name) { return fm_test_path(dir, name); }
#define expect_err fm_test_expect_contains

static int setup(void **state) {
    (void)state;
    return fm_test_make_dir(dir, sizeof dir, "eng_files_test") ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return fm_test_remove_dir(dir);
}

/* A small run: two sources, growth in frame 2. */
static fm_telemetry *small_run(void) {
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 64});
    assert_non_null(t);
    fm_telemetry_add_source(t, "particles", FM_TELEMETRY_POOL, 32, 64);
    fm_telemetry_add_source(t, "frame", FM_TELEMETRY_ARENA, 0, 1);
    for (uint64_t f = 1; f <= 40; f++) {
        fm_telemetry_sample s[2] = {{.allocs = f, .live = 10 * f, .capacity = 1024, .peak_live = 10 * f,
                            .grow_events = f == 2, .grow_ns = f == 2 ? 500 : 0},
                           {.bytes_used = 100 * f, .high_water = 100 * f}};
        fm_telemetry_push(t, &(fm_telemetry_frame){.frame = f, .frame_ns = 1000 + f}, s);
    }
    return t;
}

/* ---------------------------------------------------------------- readers */

static void test_files_config_fifo_folder_and_device_are_refused_at_once(void **state) {
    (void)state;
    const char *fifo = in_dir("cfg.fifo");
    bool have_fifo = fm_test_make_fifo(fifo, "a FIFO as the config");
    char err[512];
    fm_test_alarm(HANG_SECONDS);
    if (have_fifo) {
        assert_null(fm_config_load(fifo, NULL, err, sizeof err));
        expect_err(err, "config ");
        expect_err(err, "cfg.fifo: not a regular file");
    }
    assert_null(fm_config_load(dir, NULL, err, sizeof err));
    expect_err(err, ": not a regular file");
    assert_null(fm_config_load(FM_TEST_DEVICE, NULL, err, sizeof err));
    expect_err(err, FM_TEST_DEVICE ": not a regular file");
    /* The engine and a reload say the same (of a folder where no FIFO is). */
    const char *special = have_fifo ? fifo : dir;
    assert_null(eng_create(&(eng_desc){.config_path = special}, err, sizeof err));
    expect_err(err, ": not a regular file");
    eng *e = eng_create(&(eng_desc){.scale = 0.1}, err, sizeof err);
    assert_non_null(e);
    assert_false(eng_reload_config(e, special, err, sizeof err));
    expect_err(err, ": not a regular file");
    eng_destroy(e);
    fm_test_alarm(0);
}

static void test_files_config_above_its_cap_is_refused(void **state) {
    (void)state;
    const char *big = in_dir("big.ini");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)FM_CONFIG_MAX_BYTES + 1), 0);
    close(fd);
    char err[512];
    assert_null(fm_config_load(big, NULL, err, sizeof err));
    expect_err(err, "big.ini: too large (cap 1048576 bytes)");
    assert_null(eng_create(&(eng_desc){.config_path = big}, err, sizeof err));
    expect_err(err, "big.ini: too large (cap 1048576 bytes)");
}

static void test_files_config_with_a_utf8_bom_loads(void **state) {
    (void)state;
    /* A BOM before the first section, also with the section indented after
     * it, and before a comment. */
    static const char *const texts[] = {
        "\xEF\xBB\xBF[pool.particles]\ninitial_capacity = 4096\n",
        "\xEF\xBB\xBF  [pool.particles]\ninitial_capacity = 4096\n",
        "\xEF\xBB\xBF; tuned\n[pool.particles]\ninitial_capacity = 4096\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const char *p = in_dir("bom.ini");
        fm_test_write_text(p, texts[i]);
        char err[512];
        eng *e = eng_create(&(eng_desc){.scale = 0.1, .config_path = p}, err, sizeof err);
        if (!e) fail_msg("text %zu: %s", i, err);
        if (eng_config_problems(e)[0]) fail_msg("text %zu: problems:\n%s", i, eng_config_problems(e));
        assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).initial_capacity, 4096);
        eng_destroy(e);
        fm_config *c = fm_config_load_mem(texts[i], strlen(texts[i]), "bom.ini", NULL, err, sizeof err);
        assert_int_equal(fm_config_problem_count(c), 0);
        fm_pool_desc d = {.name = "particles", .item_size = 8};
        assert_int_equal(fm_config_apply(c, &d), 1);
        assert_int_equal(d.initial_capacity, 4096);
        fm_config_destroy(c);
    }
}

static void test_files_csv_fifo_device_folder_and_huge_files_are_refused_at_once(void **state) {
    (void)state;
    char err[512];
    const char *fifo = in_dir("run.fifo");
    fm_test_alarm(HANG_SECONDS);
    if (fm_test_make_fifo(fifo, "a FIFO as the CSV")) {
        assert_null(fm_telemetry_read_csv(fifo, err, sizeof err));
        expect_err(err, "run.fifo: not a regular file");
    }
    assert_null(fm_telemetry_read_csv(FM_TEST_DEVICE, err, sizeof err));
    assert_string_equal(err, FM_TEST_DEVICE ": not a regular file");
    assert_null(fm_telemetry_read_csv(dir, err, sizeof err));
    expect_err(err, ": not a regular file");
    /* A file over the cap (sparse: no disk used) is refused unread. */
    const char *huge = in_dir("huge.csv");
    int fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)FM_TELEMETRY_CSV_MAX_BYTES + 1), 0);
    close(fd);
    assert_null(fm_telemetry_read_csv(huge, err, sizeof err));
    expect_err(err, "huge.csv: too large (cap 268435456 bytes)");
    unlink(huge);
    fm_test_alarm(0);
}

static void test_files_csv_with_a_utf8_bom_loads(void **state) {
    (void)state;
    char err[512];
    fm_telemetry *t = small_run();
    const char *plain = in_dir("plain.csv");
    assert_true(fm_telemetry_write_csv(t, plain, err, sizeof err));
    FILE *in = fopen(plain, "rb"), *out = fopen(in_dir("bom.csv"), "wb");
    assert_non_null(in);
    assert_non_null(out);
    fputs("\xEF\xBB\xBF", out);
    for (int ch; (ch = fgetc(in)) != EOF;) fputc(ch, out);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    fm_telemetry *u = fm_telemetry_read_csv(in_dir("bom.csv"), err, sizeof err);
    if (!u) fail_msg("%s", err);
    assert_int_equal(fm_telemetry_frame_count(u), 40);
    assert_int_equal(fm_telemetry_source_count(u), 2);
    assert_int_equal(fm_telemetry_get_sample(u, 39, 0)->live, 400);
    fm_telemetry_destroy(u);
    fm_telemetry_destroy(t);
}

/* ---------------------------------------------------------------- writers */

/* The writers, each to its own file, in a child whose files may not pass
 * 1 KiB (every output here is bigger). Returns the first failed check. */
static int full_disk_writers(void *arg) {
    (void)arg;
    char err[512];
    fm_telemetry *t = small_run();
    if (fm_telemetry_write_csv(t, in_dir("disk.csv"), err, sizeof err)) return 10;
    if (!strstr(err, "disk.csv: write failed: File too large")) return 11;
    if (fm_telemetry_write_trace(t, in_dir("disk.json"), err, sizeof err)) return 20;
    if (!strstr(err, "disk.json: write failed: File too large")) return 21;
    /* Streaming: the failure waits in the writer for its commit. */
    fm_file_writer *w = fm_file_begin(in_dir("stream.csv"), err, sizeof err);
    if (!w) return 30;
    fm_telemetry *s = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    fm_telemetry_add_source(s, "particles", FM_TELEMETRY_POOL, 32, 64);
    fm_telemetry_stream_csv(s, w);
    for (uint64_t f = 1; f <= 200; f++)
        fm_telemetry_push(s, &(fm_telemetry_frame){.frame = f}, &(fm_telemetry_sample){.live = f});
    fm_telemetry_stream_end(s);
    fm_telemetry_destroy(s);
    if (fm_file_ok(w)) return 31;
    if (fm_file_commit(w, err, sizeof err)) return 32;
    if (!strstr(err, "stream.csv: write failed: File too large")) return 33;
    /* The tuned config (a pool and an arena, with their comments: above 1 KiB). */
    for (int k = 0; k < 8; k++) {
        char name[16];
        snprintf(name, sizeof name, "pool%d", k);
        fm_telemetry_add_source(t, name, FM_TELEMETRY_POOL, 32, 64);
    }
    if (fm_config_write_tuned(t, in_dir("disk.ini"), 1.25, err, sizeof err)) return 40;
    if (!strstr(err, "disk.ini: write failed: File too large")) return 41;
    fm_telemetry_destroy(t);
    /* And the engine's own entry point. */
    eng *e = eng_create(&(eng_desc){.scale = 0.1}, err, sizeof err);
    if (!e) return 50;
    for (int i = 0; i < 5; i++) eng_tick(e, 1.0 / 60.0);
    bool wrote = eng_write_tuned_config(e, in_dir("engine.ini"), 0, err, sizeof err);
    eng_destroy(e);
    if (wrote) return 51;
    if (!strstr(err, "engine.ini: write failed: File too large")) return 52;
    return 0;
}

static void test_files_writers_on_a_full_disk_fail_and_keep_the_old_files(void **state) {
    (void)state;
    static const char *const names[] = {"disk.csv", "disk.json", "stream.csv", "disk.ini",
                                        "engine.ini"};
    enum { N = sizeof names / sizeof names[0] };
    for (int i = 0; i < N; i++) fm_test_write_text(in_dir(names[i]), "the old file\n");
    int rc = fm_test_run_full_disk(1024, full_disk_writers, NULL);
    if (rc != 0) fail_msg("the full-disk child failed check %d", rc);
    for (int i = 0; i < N; i++)
        if (!fm_test_file_is(in_dir(names[i]), "the old file\n")) fail_msg("%s was changed", names[i]);
    assert_int_equal(fm_test_count_temp_files(dir), 0);
}

static void test_files_writers_refuse_a_fifo_or_folder_destination(void **state) {
    (void)state;
    char err[512];
    const char *fifo = in_dir("out.fifo"), *folder = in_dir("out.d");
    bool have_fifo = fm_test_make_fifo(fifo, "a FIFO as the destination");
    assert_int_equal(fm_test_mkdir(folder), 0);
    fm_telemetry *t = small_run();
    const char *const dests[] = {folder, fifo};
    for (int i = 0; i < (have_fifo ? 2 : 1); i++) {
        assert_false(fm_telemetry_write_csv(t, dests[i], err, sizeof err));
        expect_err(err, ": not a regular file (refusing to replace it)");
        assert_false(fm_telemetry_write_trace(t, dests[i], err, sizeof err));
        expect_err(err, ": not a regular file (refusing to replace it)");
        assert_false(fm_config_write_tuned(t, dests[i], 1.25, err, sizeof err));
        expect_err(err, ": not a regular file (refusing to replace it)");
    }
    if (have_fifo) assert_true(fm_test_is_fifo(fifo));
    assert_true(fm_test_is_dir(folder));
    assert_int_equal(fm_test_count_temp_files(dir), 0);
    fm_telemetry_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_config_fifo_folder_and_device_are_refused_at_once),
        cmocka_unit_test(test_files_config_above_its_cap_is_refused),
        cmocka_unit_test(test_files_config_with_a_utf8_bom_loads),
        cmocka_unit_test(test_files_csv_fifo_device_folder_and_huge_files_are_refused_at_once),
        cmocka_unit_test(test_files_csv_with_a_utf8_bom_loads),
        cmocka_unit_test(test_files_writers_on_a_full_disk_fail_and_keep_the_old_files),
        cmocka_unit_test(test_files_writers_refuse_a_fifo_or_folder_destination),
    };
    return cmocka_run_group_tests_name("engine_files", tests, setup, teardown);
}
