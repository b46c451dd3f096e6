/*
 * tests/memory/test_file.c: framemem_file (memory/src/file.c). Writing: a
 * file appears only whole, with the usual mode; every failing step (a full
 * disk for real, through RLIMIT_FSIZE in a child, and each step injected)
 * removes the temporary file and leaves the old destination byte for byte;
 * devices, FIFOs and folders are never replaced. Reading: FIFOs, folders and
 * devices are refused at once (a FIFO never blocks), the cap holds, the
 * allocator is used and cleaned, a BOM is skipped. The checks before a run:
 * inputs, outputs equal to an input or to each other, special files.
 */
#define _GNU_SOURCE 1 /* makedev */

#include "fm_test.h"

#include "framemem/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifndef _WIN32
#include <sys/sysmacros.h>
#endif
#include <sys/types.h>
#include <unistd.h>

#include "file_internal.h"

static char dir[64];

static const char *in_dir(const char *name) { return fm_test_path(dir, name); }
#define expect_err fm_test_expect_contains

static mode_t mode_of(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode;
}

static int setup(void **state) {
    (void)state;
#ifndef _WIN32
    umask(022);
#endif
    return fm_test_make_dir(dir, sizeof dir, "fm_file_test") ? 0 : -1;
}

/* Every test ends with no writer's leftovers in the folder. */
static int no_temp_left(void **state) {
    (void)state;
    int n = fm_test_count_temp_files(dir);
    if (n != 0) fprintf(stderr, "%d temporary file(s) left in %s\n", n, dir);
    return n == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------- writing */

static void test_file_write_whole_creates_a_file_with_the_usual_mode(void **state) {
    (void)state;
    char err[512];
    const char *p = in_dir("new.txt");
    assert_true(fm_file_write_whole(p, "hello\n", 6, err, sizeof err));
    assert_true(fm_test_file_is(p, "hello\n"));
#ifndef _WIN32
    assert_int_equal(mode_of(p) & 0777, 0644); /* umask 022 */
    /* The umask applies, as to any created file. */
    umask(077);
    const char *q = in_dir("private.txt");
    assert_true(fm_file_write_whole(q, "x", 1, err, sizeof err));
    umask(022);
    assert_int_equal(mode_of(q) & 0777, 0600);
#else
    fm_test_mode_bits("a new file's mode under the umask");
#endif
    /* Nothing at all is a file too. */
    const char *e = in_dir("empty.txt");
    assert_true(fm_file_write_whole(e, NULL, 0, err, sizeof err));
    assert_true(fm_test_file_is(e, ""));
}

static void test_file_commit_replaces_the_old_file_only_at_the_end_and_keeps_its_mode(void **state) {
    (void)state;
    char err[512];
    const char *p = in_dir("old.csv");
    fm_test_write_text(p, "old contents\n");
    bool modes = fm_test_mode_bits("the replaced file's mode");
    if (modes) assert_int_equal(chmod(p, 0640), 0);
    fm_file_writer *w = fm_file_begin(p, err, sizeof err);
    assert_non_null(w);
    assert_true(fm_file_write(w, "a,b\n", 4));
    assert_true(fm_file_printf(w, "%d,%s\n", 1, "two"));
    assert_true(fm_file_write(w, NULL, 0));
    assert_true(fm_file_ok(w));
    /* Until the commit the old file is all there is, plus one temporary file. */
    assert_true(fm_test_file_is(p, "old contents\n"));
    assert_int_equal(fm_test_count_temp_files(dir), 1);
    assert_true(fm_file_commit(w, err, sizeof err));
    assert_true(fm_test_file_is(p, "a,b\n1,two\n"));
    if (modes) assert_int_equal(mode_of(p) & 0777, 0640);
}

static void test_file_abort_keeps_the_old_file_and_removes_the_temporary_one(void **state) {
    (void)state;
    char err[512];
    const char *p = in_dir("kept.ini");
    fm_test_write_text(p, "[pool.x]\n");
    fm_file_writer *w = fm_file_begin(p, err, sizeof err);
    assert_non_null(w);
    assert_true(fm_file_printf(w, "half a file"));
    fm_file_abort(w);
    fm_file_abort(NULL);
    assert_true(fm_test_file_is(p, "[pool.x]\n"));
    /* A new destination aborted: nothing appears. */
    const char *q = in_dir("never.ini");
    w = fm_file_begin(q, err, sizeof err);
    assert_non_null(w);
    fm_file_abort(w);
    assert_int_not_equal(access(q, F_OK), 0);
}

static void test_file_begin_fails_naming_the_path_and_the_reason(void **state) {
    (void)state;
    char err[512];
    assert_null(fm_file_begin(in_dir("nodir/x.csv"), err, sizeof err));
    expect_err(err, "/nodir/x.csv: cannot write: No such file or directory");
    fm_test_write_text(in_dir("plain"), "");
    assert_null(fm_file_begin(in_dir("plain/x.csv"), err, sizeof err));
#ifdef _WIN32
    expect_err(err, "/plain/x.csv: cannot write: No such file or directory"); /* ENOENT there */
#else
    expect_err(err, "/plain/x.csv: cannot write: Not a directory");
#endif
    assert_null(fm_file_begin("", err, sizeof err));
    expect_err(err, "no output path given");
    assert_null(fm_file_begin(NULL, err, sizeof err));
    expect_err(err, "no output path given");
    static char longp[FM_FILE_PATH_MAX + 10];
    memset(longp, 'a', sizeof longp - 1);
    assert_null(fm_file_begin(longp, err, sizeof err));
    expect_err(err, "path too long");
    assert_false(fm_file_write_whole(in_dir("nodir/y"), "x", 1, err, sizeof err));
    expect_err(err, "cannot write: No such file or directory");
    /* err may be NULL. */
    assert_null(fm_file_begin(in_dir("nodir/x.csv"), NULL, 0));
}

static void test_file_refuses_to_replace_a_device_fifo_or_folder(void **state) {
    (void)state;
    char err[512];
    const char *fifo = in_dir("out.fifo");
    if (fm_test_make_fifo(fifo, "a FIFO as the destination")) {
        assert_null(fm_file_begin(fifo, err, sizeof err));
        expect_err(err, "out.fifo: not a regular file (refusing to replace it)");
        assert_false(fm_file_write_whole(fifo, "x", 1, err, sizeof err));
        assert_true(fm_test_is_fifo(fifo));
    }

    const char *folder = in_dir("out.d");
    assert_int_equal(fm_test_mkdir(folder), 0);
    assert_null(fm_file_begin(folder, err, sizeof err));
    expect_err(err, "out.d: not a regular file (refusing to replace it)");
    assert_true(S_ISDIR(mode_of(folder)));

    /* A device node (as /dev/null is): made here when allowed (root), so a
     * broken helper could never replace the system's. Through a link too. */
#ifndef _WIN32
    const char *dev = in_dir("null");
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        assert_null(fm_file_begin(dev, err, sizeof err));
        expect_err(err, "null: not a regular file (refusing to replace it)");
        assert_true(S_ISCHR(mode_of(dev)));
        const char *link = in_dir("null.link");
        assert_int_equal(symlink(dev, link), 0);
        assert_null(fm_file_begin(link, err, sizeof err));
        expect_err(err, "null.link: not a regular file");
        assert_true(S_ISCHR(mode_of(dev)));
    } else {
        print_message("mknod refused (%s): the device case runs as root only\n", strerror(errno));
    }
#else
    /* Windows' devices have no node in a folder: the system's NUL. */
    assert_null(fm_file_begin(FM_TEST_DEVICE, err, sizeof err));
    expect_err(err, FM_TEST_DEVICE ": not a regular file (refusing to replace it)");
#endif
}

static void test_file_through_a_symlink_replaces_its_target_and_keeps_the_link(void **state) {
    (void)state;
    char err[512];
    const char *target = in_dir("real.ini"), *link = in_dir("alias.ini");
    fm_test_write_text(target, "old\n");
    if (!fm_test_make_symlink("real.ini", link, "writing through a symbolic link")) skip();
    assert_true(fm_file_write_whole(link, "new\n", 4, err, sizeof err));
    assert_true(fm_test_is_symlink(link));
    assert_true(fm_test_file_is(target, "new\n"));
}

/* In a child whose files may not pass 2 KiB: every way a write meets the
 * full disk fails with EFBIG, names the file, and leaves the old one. */
enum { DISK = 2048 }; /* below stdio's 4 KiB buffer: some writes fail only at the flush */

static int full_disk_writes(void *arg) {
    (void)arg;
    char err[512];
    static char big[64 << 10];
    memset(big, 'x', sizeof big);
    /* A big write: fwrite itself fails. */
    fm_file_writer *w = fm_file_begin(in_dir("disk1.csv"), err, sizeof err);
    if (!w) return 10;
    if (fm_file_write(w, big, sizeof big)) return 11;
    if (fm_file_ok(w) || fm_file_write(w, "y", 1)) return 12; /* skipped after a failure */
    if (fm_file_commit(w, err, sizeof err)) return 13;
    if (!strstr(err, "disk1.csv: write failed: File too large")) return 14;
    /* Small writes that fit the stdio buffer: the commit's flush fails. */
    w = fm_file_begin(in_dir("disk2.csv"), err, sizeof err);
    if (!w) return 20;
    if (!fm_file_write(w, big, 3000)) return 21; /* still in the buffer */
    if (fm_file_commit(w, err, sizeof err)) return 22;
    if (!strstr(err, "disk2.csv: write failed: File too large")) return 23;
    /* printf line by line. */
    w = fm_file_begin(in_dir("disk3.csv"), err, sizeof err);
    if (!w) return 30;
    bool failed = false;
    for (int i = 0; i < 10000 && !failed; i++) failed = !fm_file_printf(w, "%d,row,%s\n", i, "abcdefgh");
    if (!failed && fm_file_commit(w, err, sizeof err)) return 31;
    if (failed && fm_file_commit(w, err, sizeof err)) return 32;
    if (!strstr(err, "disk3.csv: write failed: File too large")) return 33;
    /* The whole-buffer form. */
    if (fm_file_write_whole(in_dir("disk4.png"), big, sizeof big, err, sizeof err)) return 40;
    if (!strstr(err, "disk4.png: write failed: File too large")) return 41;
    return 0;
}

static void test_file_full_disk_fails_every_write_and_keeps_the_old_files(void **state) {
    (void)state;
    static const char *const names[] = {"disk1.csv", "disk2.csv", "disk3.csv", "disk4.png"};
    for (int i = 0; i < 4; i++) fm_test_write_text(in_dir(names[i]), "the old file\n");
    int rc = fm_test_run_full_disk(DISK, full_disk_writes, NULL);
    if (rc != 0) fail_msg("the full-disk child failed check %d", rc);
    for (int i = 0; i < 4; i++) assert_true(fm_test_file_is(in_dir(names[i]), "the old file\n"));
}

static void test_file_each_failing_step_removes_the_temporary_file_and_keeps_the_old_one(void **state) {
    (void)state;
#ifndef EDQUOT
#define EDQUOT ENOSPC /* Windows' C runtime has no quota error */
#endif
    /* The C library's own words for each errno (Windows' differ). */
    static const struct {
        fm__file_step step;
        int err;
        const char *want;
    } cases[] = {
        {FM__FILE_STEP_CREATE, EACCES, "step.ini: cannot write: "},
        {FM__FILE_STEP_WRITE, EIO, "step.ini: write failed: "},
        {FM__FILE_STEP_FLUSH, ENOSPC, "step.ini: write failed: "},
        {FM__FILE_STEP_FSYNC, EIO, "step.ini: fsync failed: "},
        {FM__FILE_STEP_CLOSE, EDQUOT, "step.ini: close failed: "},
        {FM__FILE_STEP_RENAME, EXDEV, "step.ini: rename failed: "},
    };
    const char *p = in_dir("step.ini");
    fm_test_write_text(p, "old\n");
    char err[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = 0;
        fm__file_fail_next(cases[i].step, cases[i].err);
        fm_file_writer *w = fm_file_begin(p, err, sizeof err);
        if (w) {
            fm_file_printf(w, "new contents %zu\n", i);
            assert_false(fm_file_commit(w, err, sizeof err));
        }
        char want[256];
        snprintf(want, sizeof want, "%s%s", cases[i].want, strerror(cases[i].err));
        expect_err(err, want);
        assert_true(fm_test_file_is(p, "old\n"));
        assert_int_equal(fm_test_count_temp_files(dir), 0);
    }
    fm__file_fail_next(FM__FILE_STEP_NONE, 0);
    /* A write that fails leaves the writer failed: the rest is skipped and
     * the commit reports that first failure. */
    fm_file_writer *w = fm_file_begin(p, err, sizeof err);
    assert_non_null(w);
    fm__file_fail_next(FM__FILE_STEP_WRITE, ENOSPC);
    assert_false(fm_file_write(w, "a", 1));
    assert_false(fm_file_ok(w));
    assert_false(fm_file_printf(w, "b"));
    fm__file_fail_next(FM__FILE_STEP_FSYNC, EIO); /* never reached */
    assert_false(fm_file_commit(w, err, sizeof err));
    fm__file_fail_next(FM__FILE_STEP_NONE, 0);
    char want[256];
    snprintf(want, sizeof want, "step.ini: write failed: %s", strerror(ENOSPC));
    expect_err(err, want);
    assert_true(fm_test_file_is(p, "old\n"));
    /* NULL writers. */
    assert_false(fm_file_write(NULL, "a", 1));
    assert_false(fm_file_printf(NULL, "a"));
    assert_false(fm_file_ok(NULL));
    assert_false(fm_file_commit(NULL, err, sizeof err));
    expect_err(err, "no file being written");
}

static void test_file_rename_onto_a_folder_made_meanwhile_fails_and_leaves_it(void **state) {
    (void)state;
    char err[512];
    const char *p = in_dir("raced");
    fm_file_writer *w = fm_file_begin(p, err, sizeof err);
    assert_non_null(w);
    assert_true(fm_file_printf(w, "data\n"));
    /* Someone makes a folder with files at the destination before the commit. */
    assert_int_equal(fm_test_mkdir(p), 0);
    fm_test_write_text(in_dir("raced/inside"), "theirs\n");
    assert_false(fm_file_commit(w, err, sizeof err));
    /* MoveFileEx is refused access where rename(2) says EISDIR. */
    char want[128];
#ifdef _WIN32
    snprintf(want, sizeof want, "raced: rename failed: %s", strerror(EACCES));
#else
    snprintf(want, sizeof want, "raced: rename failed: %s", strerror(EISDIR));
#endif
    expect_err(err, want);
    assert_true(fm_test_is_dir(p));
    assert_true(fm_test_file_is(in_dir("raced/inside"), "theirs\n"));
}

/* ---------------------------------------------------------------- reading */

static void test_file_read_gives_the_bytes_and_a_terminating_nul(void **state) {
    (void)state;
    char err[512];
    const char *p = in_dir("in.txt");
    fm_test_write_text(p, "abc\ndef\n");
    fm_file_data d;
    assert_true(fm_file_read(p, 1 << 20, NULL, &d, err, sizeof err));
    assert_int_equal(d.size, 8);
    assert_memory_equal(d.data, "abc\ndef\n", 8);
    assert_int_equal(d.data[8], 0);
    fm_file_data_release(&d);
    assert_null(d.data);
    fm_file_data_release(&d); /* released twice: no-op */
    fm_file_data_release(NULL);
    fm_test_write_text(p, "");
    assert_true(fm_file_read(p, 16, NULL, &d, err, sizeof err));
    assert_int_equal(d.size, 0);
    assert_string_equal(d.data, "");
    fm_file_data_release(&d);
}

/* A test that blocks fails by SIGALRM instead of hanging the suite. */
enum { HANG_SECONDS = 20 };

static void test_file_read_refuses_a_fifo_at_once_without_blocking(void **state) {
    (void)state;
    char err[512];
    const char *fifo = in_dir("in.fifo");
    if (!fm_test_make_fifo(fifo, "reading a FIFO")) skip();
    fm_test_alarm(HANG_SECONDS);
    fm_file_data d;
    assert_false(fm_file_read(fifo, 1 << 20, NULL, &d, err, sizeof err));
    expect_err(err, "in.fifo: not a regular file");
    assert_null(d.data);
    assert_false(fm_file_check_input(fifo, 1 << 20, err, sizeof err));
    expect_err(err, "in.fifo: not a regular file");
    fm_test_alarm(0);
}

static void test_file_read_refuses_folders_devices_and_missing_files(void **state) {
    (void)state;
    char err[512];
    fm_file_data d;
    assert_false(fm_file_read(dir, 1 << 20, NULL, &d, err, sizeof err));
    expect_err(err, ": not a regular file");
    assert_false(fm_file_read(FM_TEST_DEVICE, 1 << 20, NULL, &d, err, sizeof err));
    assert_string_equal(err, FM_TEST_DEVICE ": not a regular file");
    assert_false(fm_file_read(in_dir("missing.csv"), 1 << 20, NULL, &d, err, sizeof err));
    expect_err(err, "missing.csv: cannot open: No such file or directory");
    assert_false(fm_file_read(NULL, 1, NULL, &d, err, sizeof err));
    expect_err(err, "no input file given");
    assert_false(fm_file_read("", 1, NULL, &d, err, sizeof err));
    assert_null(d.data);
}

static void test_file_read_refuses_a_file_above_its_cap_before_reading_it(void **state) {
    fm_test_env *env = *state;
    char err[512];
    const char *p = in_dir("capped.txt");
    fm_test_write_text(p, "0123456789");
    fm_file_data d;
    assert_true(fm_file_read(p, 10, NULL, &d, err, sizeof err));
    assert_int_equal(d.size, 10);
    fm_file_data_release(&d);
    assert_false(fm_file_read(p, 9, NULL, &d, err, sizeof err));
    expect_err(err, "capped.txt: too large (cap 9 bytes)");
    /* A huge (sparse) file: refused without a byte allocated or read. */
    const char *huge = in_dir("huge.bin");
    int fd = open(huge, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)1 << 30), 0);
    close(fd);
    fm_allocator a = fm_test_allocator_get(&env->alloc);
    assert_false(fm_file_read(huge, 1 << 20, &a, &d, err, sizeof err));
    expect_err(err, "huge.bin: too large (cap 1048576 bytes)");
    assert_int_equal(env->alloc.alloc_calls, 0);
    unlink(huge);
}

static void test_file_read_memory_comes_from_the_allocator_and_failures_are_reported(void **state) {
    fm_test_env *env = *state;
    char err[512];
    const char *p = in_dir("alloc.txt");
    fm_test_write_text(p, "some text\n");
    fm_allocator a = fm_test_allocator_get(&env->alloc);
    fm_file_data d;
    assert_true(fm_file_read(p, 1 << 20, &a, &d, err, sizeof err));
    assert_true(env->alloc.live_bytes > 10);
    assert_string_equal(d.data, "some text\n");
    fm_file_data_release(&d);
    fm_test_allocator_assert_clean(&env->alloc);
    fm_test_allocator_fail_nth(&env->alloc, 1);
    assert_false(fm_file_read(p, 1 << 20, &a, &d, err, sizeof err));
    expect_err(err, "alloc.txt: out of memory");
    fm_test_allocator_recover(&env->alloc);
    fm_test_allocator_assert_clean(&env->alloc);
    /* A read error: the buffer goes back too. */
    fm__file_fail_next(FM__FILE_STEP_READ, EIO);
    assert_false(fm_file_read(p, 1 << 20, &a, &d, err, sizeof err));
    char want[128];
    snprintf(want, sizeof want, "alloc.txt: read failed: %s", strerror(EIO));
    expect_err(err, want);
    fm_test_allocator_assert_clean(&env->alloc);
    /* Half an allocator is refused. */
    fm_allocator half = {.alloc = a.alloc};
    assert_false(fm_file_read(p, 1 << 20, &half, &d, err, sizeof err));
    expect_err(err, "invalid allocator");
}

static void test_file_skip_bom_skips_exactly_one_utf8_mark(void **state) {
    (void)state;
    const char *s = "\xEF\xBB\xBF" "abc";
    size_t n = 6;
    assert_true(fm_file_skip_bom(&s, &n));
    assert_int_equal(n, 3);
    assert_memory_equal(s, "abc", 3);
    assert_false(fm_file_skip_bom(&s, &n));
    const char *partial = "\xEF\xBB";
    n = 2;
    assert_false(fm_file_skip_bom(&partial, &n));
    assert_int_equal(n, 2);
    const char *only = "\xEF\xBB\xBF";
    n = 3;
    assert_true(fm_file_skip_bom(&only, &n));
    assert_int_equal(n, 0);
    const char *none = NULL;
    n = 0;
    assert_false(fm_file_skip_bom(&none, &n));
    assert_false(fm_file_skip_bom(NULL, NULL));
}

/* ------------------------------------------------------- checks before a run */

static void test_file_check_input_accepts_regular_files_only(void **state) {
    (void)state;
    char err[512];
    const char *p = in_dir("cfg.ini");
    fm_test_write_text(p, "xy");
    assert_true(fm_file_check_input(p, 2, err, sizeof err));
    assert_false(fm_file_check_input(p, 1, err, sizeof err));
    expect_err(err, "cfg.ini: too large (cap 1 bytes)");
    assert_false(fm_file_check_input(dir, 1 << 20, err, sizeof err));
    expect_err(err, "not a regular file");
    assert_false(fm_file_check_input(in_dir("none.ini"), 1 << 20, err, sizeof err));
    expect_err(err, "none.ini: cannot open: No such file or directory");
}

static void test_file_check_outputs_refuses_inputs_twins_and_special_files(void **state) {
    (void)state;
    char err[512];
    const char *in = in_dir("run.csv");
    fm_test_write_text(in, "data\n");
    const char *ins[] = {NULL, in};
    const char *ok[] = {in_dir("out.csv"), NULL, in_dir("out.ini")};
    assert_true(fm_file_check_outputs(ok, 3, ins, 2, err, sizeof err));
    assert_true(fm_file_check_outputs(NULL, 0, NULL, 0, err, sizeof err));
    /* The input itself, under other names: the same inode. */
    const char *hard = in_dir("hard.csv"), *soft = in_dir("soft.csv");
    fm_test_make_hardlink(in, hard);
    bool linked = fm_test_make_symlink("run.csv", soft, "an output that is a link to the input");
    const char *const same[] = {in, hard, in_dir("./run.csv"), soft};
    for (int i = 0; i < (linked ? 4 : 3); i++) {
        assert_false(fm_file_check_outputs(&same[i], 1, ins, 2, err, sizeof err));
        expect_err(err, ": the same file as the input ");
        expect_err(err, "/run.csv");
    }
    /* Two outputs naming one file, created or not yet. */
    const char *twins[] = {in_dir("new.csv"), in_dir("./new.csv")};
    assert_false(fm_file_check_outputs(twins, 2, NULL, 0, err, sizeof err));
    expect_err(err, "/./new.csv: given for two outputs (also as ");
    const char *twins2[] = {hard, in_dir("other"), in};
    assert_false(fm_file_check_outputs(twins2, 3, NULL, 0, err, sizeof err));
    expect_err(err, "given for two outputs");
    /* A special file as output. */
    const char *fifo = in_dir("o.fifo");
    if (fm_test_make_fifo(fifo, "a FIFO as an output")) {
        const char *special[] = {in_dir("fine.csv"), fifo};
        assert_false(fm_file_check_outputs(special, 2, NULL, 0, err, sizeof err));
        expect_err(err, "o.fifo: not a regular file (refusing to replace it)");
    }
    const char *folder[] = {in_dir("fine.csv"), dir};
    assert_false(fm_file_check_outputs(folder, 2, NULL, 0, err, sizeof err));
    expect_err(err, ": not a regular file (refusing to replace it)");
    /* An output in a missing folder is not this check's business (writing
     * it fails later with the reason). */
    const char *missing[] = {in_dir("nodir/x.csv")};
    assert_true(fm_file_check_outputs(missing, 1, ins, 2, err, sizeof err));
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fm_test_setup, fm_test_teardown)
        T(test_file_write_whole_creates_a_file_with_the_usual_mode),
        T(test_file_commit_replaces_the_old_file_only_at_the_end_and_keeps_its_mode),
        T(test_file_abort_keeps_the_old_file_and_removes_the_temporary_one),
        T(test_file_begin_fails_naming_the_path_and_the_reason),
        T(test_file_refuses_to_replace_a_device_fifo_or_folder),
        T(test_file_through_a_symlink_replaces_its_target_and_keeps_the_link),
        T(test_file_full_disk_fails_every_write_and_keeps_the_old_files),
        T(test_file_each_failing_step_removes_the_temporary_file_and_keeps_the_old_one),
        T(test_file_rename_onto_a_folder_made_meanwhile_fails_and_leaves_it),
        T(test_file_read_gives_the_bytes_and_a_terminating_nul),
        T(test_file_read_refuses_a_fifo_at_once_without_blocking),
        T(test_file_read_refuses_folders_devices_and_missing_files),
        T(test_file_read_refuses_a_file_above_its_cap_before_reading_it),
        T(test_file_read_memory_comes_from_the_allocator_and_failures_are_reported),
        T(test_file_skip_bom_skips_exactly_one_utf8_mark),
        T(test_file_check_input_accepts_regular_files_only),
        T(test_file_check_outputs_refuses_inputs_twins_and_special_files),
#undef T
    };
    int failed = cmocka_run_group_tests_name("file", tests, setup, NULL);
    if (no_temp_left(NULL) != 0) failed++;
    fm_test_remove_dir(dir);
    return failed;
}
