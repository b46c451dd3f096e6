/*
 * tests/support/fm_test.h: helpers shared by the framemem test suites.
 *
 * - fm_test_allocator (fm_test_alloc.h): the counting, fault-injecting
 *   fm_allocator, and here its cmocka assertion.
 * - fm_test_errors: an error handler that records how often it ran, the last
 *   code and message, a per-code count and a log of every message.
 * - fm_test_env + fm_test_setup/fm_test_teardown: a per-test fixture holding
 *   one of each; setup installs the capture handler and clears the last error,
 *   teardown restores the default handler and frees whatever a failed test
 *   left behind.
 * - Fill patterns and an overlap check for item contents.
 *
 * This header includes cmocka (and the headers cmocka needs first), so a
 * test file needs only this header and framemem's.
 * The error capture is single-threaded (the thread suites have their own in
 * tests/memory/sync_test_support.h); the allocator is thread-safe.
 */
#ifndef FM_TEST_H
#define FM_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "framemem/base.h"
#include "framemem/pool.h"

#include "fm_test_alloc.h"

/* -------------------------------------------------------- counting allocator */

/// cmocka-asserts: no live bytes or blocks, no contract violations.
void fm_test_allocator_assert_clean(const fm_test_allocator *a);

/// true when the test runs under Valgrind (the Debug build's memcheck run).
bool fm_test_under_valgrind(void);
/// The smallest non-zero step of fm_clock_now between two reads, in ticks,
/// measured once (rdtsc: a few ticks; qemu-user's CNTVCT: about 1 us). A
/// timed interval shorter than one step can read 0, so tests that want time
/// to show repeat their timed work until it spans many steps.
uint64_t fm_test_clock_step_ticks(void);
/// FM_TEST_TSAN: 1 in a ThreadSanitizer build (gcc or clang), else 0.
#if defined(__SANITIZE_THREAD__)
#define FM_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FM_TEST_TSAN 1
#endif
#endif
#ifndef FM_TEST_TSAN
#define FM_TEST_TSAN 0
#endif
/// Minor page faults of this process so far (getrusage; Windows: every page
/// fault, from GetProcessMemoryInfo): a page touched for the first time.
uint64_t fm_test_minor_faults(void);
/// Whether fm_test_minor_faults sees this process's first touches of fresh
/// pages one by one (probed once, on a fresh mapping). Where it does not,
/// fm_test_feature_missing says so for what, and the result is false.
bool fm_test_page_faults_counted(const char *what);
/// Page faults a count may hold that are not the code under test's: 0 on a
/// kernel; 8 under an emulator (FM_TEST_EMULATOR), whose translation of code
/// run for the first time touches its own pages (qemu-aarch64: 1 seen).
uint64_t fm_test_emulator_fault_slack(void);
/// Whether memory the library asks the OS to make resident (Linux:
/// madvise(MADV_POPULATE_WRITE)) then takes no fault when touched; where the
/// OS accepts the advice and ignores it (qemu-user may: a hint),
/// fm_test_feature_missing says so for what, and the result is false.
bool fm_test_populate_makes_pages_resident(const char *what);
/// The emulator the cross build runs the tests under (FM_TEST_EMULATOR, e.g.
/// "qemu-aarch64"), or NULL on a native run.
const char *fm_test_emulator(void);
/// Page faults this process takes to map `bytes` of fresh, readable and
/// writable memory and release it, none of it touched: 0 on a kernel; an
/// emulator's own bookkeeping of a guest mapping (qemu-user) shows here.
uint64_t fm_test_faults_of_an_untouched_mapping(size_t bytes);
/// What the OS holds at the page of p: nothing (FM_TEST_OS_FREE), address
/// space only (FM_TEST_OS_RESERVED: Windows' reserved, not committed), or
/// memory (FM_TEST_OS_COMMITTED; on POSIX every mapped page, mincore).
typedef enum fm_test_os_state {
    FM_TEST_OS_FREE,
    FM_TEST_OS_RESERVED,
    FM_TEST_OS_COMMITTED,
} fm_test_os_state;
fm_test_os_state fm_test_os_state_of(const void *p);
/// Whether fm_test_os_state_of tells a mapped page from a released one here
/// (probed once); where it does not, fm_test_feature_missing says so for
/// what, and the result is false.
bool fm_test_os_states_known(const char *what);
/// Runs only the cases whose names match the environment's FM_TEST_FILTER
/// (cmocka's wildcards * and ?), when it is set: ctest's repeats of a
/// suite's thread cases (tests/memory/thread_tests.cmake). Call before
/// cmocka_run_group_tests.
void fm_test_filter_from_env(void);
/// A kernel feature a check needs is missing: under an emulator
/// (FM_TEST_EMULATOR, set by cross builds) prints "[ did not apply ] WHAT:
/// why (under EMULATOR)" and returns true; on a native run, where the
/// feature must be there, cmocka-fails.
bool fm_test_feature_missing(const char *what, const char *why);
/// Tells Valgrind that the test reads [p, p + n) on purpose (released memory
/// whose fill pattern it checks); nothing without Valgrind.
void fm_test_allow_read(const void *p, size_t n);

/* A child process for tests whose subject is a sanitizer report. */
typedef struct fm_test_child {
    int status;        /* from waitpid */
    char output[8192]; /* the child's stderr; under Valgrind it ends with a
                          "valgrind errors: N" line (Valgrind writes its own
                          reports to the original stderr, not the pipe) */
} fm_test_child;

/// Runs fn in a forked child with stderr captured; the child exits 0 after fn.
/// Windows has no fork: fn runs in this process with stderr captured, which
/// only builds without sanitizers or Valgrind reach (there fn's reads are
/// harmless and it reports what it read).
fm_test_child fm_test_run_child(void (*fn)(void));
#ifdef _WIN32
#define WIFEXITED(status) ((void)(status), 1)
#define WEXITSTATUS(status) (status)
#else
#include <sys/wait.h>
#endif
/// true when the child's memory error was caught: an ASan "use-after-poison"
/// report, or a Valgrind error counted while fn ran.
bool fm_test_child_caught(const fm_test_child *r);

/* Tests built with AddressSanitizer expect its reports where others check
 * fill patterns or Valgrind's count. */
#if defined(__SANITIZE_ADDRESS__)
#define FM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FM_TEST_ASAN 1
#endif
#endif

/* ------------------------------------------------------------- pool stats */

/// The pool's stats by value.
fm_pool_stats fm_test_pool_stats(const fm_pool *pool);
/// cmocka-asserts every counter equal, except misuse_count, which went up by
/// misuse_delta (a reported misuse changes nothing else).
void fm_test_assert_pool_stats_same(const fm_pool_stats *before, const fm_pool_stats *after,
                                    uint64_t misuse_delta);

/* ------------------------------------------------------------ error capture */

typedef struct fm_test_errors {
    int count;                    /* handler calls */
    fm_error last;                /* code of the last call (FM_OK if none) */
    char message[1024];           /* message of the last call */
    int by_code[FM_ERROR_COUNT];  /* handler calls per code */
    int bad_messages;             /* calls with a NULL or empty message */
    char log[16384];              /* every message, one per line (truncated) */
    size_t log_len;
} fm_test_errors;

/// Zeroes e and installs the capture handler with e as its user pointer.
void fm_test_errors_install(fm_test_errors *e);
/// Zeroes e without touching the installed handler.
void fm_test_errors_reset(fm_test_errors *e);
/// Restores the default handler (stderr).
void fm_test_errors_restore(void);
/// The capture handler itself, for tests that install it by hand.
void fm_test_errors_handler(fm_error err, const char *message, void *user);

/* ----------------------------------------------------------------- fixture */

typedef struct fm_test_env {
    fm_test_allocator alloc;
    fm_test_errors errors;
} fm_test_env;

/* ------------------------------------------------------- pools in tests */

/// Creates a pool backed by env's counting allocator (desc.allocator is
/// replaced); a failure prints the library's error and fails the test.
fm_pool *fm_test_pool_create_counted(fm_test_env *env, fm_pool_desc desc);
/// Destroys a pool whose items were all freed: asserts nothing live,
/// fm_pool_check OK and nothing reported.
void fm_test_pool_destroy_quiet(fm_test_env *env, fm_pool *pool);
/// fm_test_pool_destroy_quiet, then every byte back in env's allocator.
void fm_test_pool_destroy_clean(fm_test_env *env, fm_pool *pool);

/// cmocka per-test setup: *state = a fresh fm_test_env, capture installed,
/// last error cleared.
int fm_test_setup(void **state);
/// cmocka per-test teardown: default handler restored, leftovers freed.
int fm_test_teardown(void **state);

/* ---------------------------------------------------------- item contents */

/// Fills n bytes at p with a pattern derived from seed (distinct seeds give
/// distinct byte streams).
void fm_test_fill(void *p, size_t n, uint32_t seed);
/// true when the n bytes at p still hold fm_test_fill(p, n, seed)'s pattern.
bool fm_test_check_fill(const void *p, size_t n, uint32_t seed);
/// Shuffles a[0, n) in place, the same way for the same seed (xorshift32).
void fm_test_shuffle(void **a, size_t n, uint32_t seed);
/// qsort comparators: ascending uint64_t values; ascending pointers (by
/// address) in an array of void *.
int fm_test_cmp_u64(const void *a, const void *b);
int fm_test_cmp_ptr(const void *a, const void *b);
/// cmocka-asserts that no two of the count items (each size bytes) overlap.
void fm_test_assert_no_overlap(void *const *items, size_t count, size_t size);
/// true when haystack contains needle (both may be NULL: false).
bool fm_test_contains(const char *haystack, const char *needle);

/* ----------------------------------------------------------- files in tests */

/// For a child process (after fork): its files may grow to max_bytes at most
/// (RLIMIT_FSIZE) and SIGXFSZ is ignored, so a write past that fails with
/// EFBIG: a full disk without root. Both survive exec.
void fm_test_limit_file_size(size_t max_bytes);
/// Runs fn(arg) in a forked child under fm_test_limit_file_size(max_bytes)
/// and returns its result (the child's exit code; 128 + signal if killed).
/// fn must not use cmocka's asserts (it reports through its return value).
/// Windows has neither fork nor a file-size limit: the calling test is
/// skipped there, saying so.
int fm_test_run_full_disk(size_t max_bytes, int (*fn)(void *arg), void *arg);
/// Makes a fresh folder "/tmp/PREFIX_XXXXXX" (Windows: in %TEMP%) and puts its path in dir
/// (dir_size bytes); false when it cannot.
bool fm_test_make_dir(char *dir, size_t dir_size, const char *prefix);
/// Removes dir and everything in it; 0 when done.
int fm_test_remove_dir(const char *dir);
/// "dir/name", in one of 8 static buffers used in turn (valid for 7 more calls).
const char *fm_test_path(const char *dir, const char *name);
/// cmocka-fails, showing both, unless text contains want.
void fm_test_expect_contains(const char *text, const char *want);
/// Files in dir whose names contain ".tmp" (a writer's leftovers); -1 when
/// dir cannot be read.
int fm_test_count_temp_files(const char *dir);
/* Special files where the OS has them. Where it has not (Windows: no FIFOs
 * in the file system, no permission bits, symbolic links only with a
 * privilege), the maker prints "[ did not apply ] WHAT: why" and returns
 * false, and the test goes on without that case. */

/// A FIFO at path (cmocka-asserts mkfifo); false on Windows.
bool fm_test_make_fifo(const char *path, const char *what);
/// A symbolic link at `at` naming target (cmocka-asserts); false where the OS
/// refused for want of a privilege.
bool fm_test_make_symlink(const char *target, const char *at, const char *what);
/// A hard link at `at` to the file target; cmocka-asserts.
void fm_test_make_hardlink(const char *target, const char *at);
/// true when path itself (not what it names) is a symbolic link.
bool fm_test_is_symlink(const char *path);
/// true when path is a FIFO.
bool fm_test_is_fifo(const char *path);
/// true when path is a folder.
bool fm_test_is_dir(const char *path);
/// Makes a folder (mode 0755 where modes exist); 0 on success.
int fm_test_mkdir(const char *path);
/// true where files carry POSIX permission bits; otherwise says WHAT did
/// not apply and returns false.
bool fm_test_mode_bits(const char *what);
/// A SIGALRM in seconds (0: cancel) so a blocking test fails instead of
/// hanging; nothing on Windows, where ctest's timeout is the guard.
void fm_test_alarm(unsigned seconds);
/// A character device every system has ("/dev/zero"; Windows: "NUL").
#ifdef _WIN32
#define FM_TEST_DEVICE "NUL"
#else
#define FM_TEST_DEVICE "/dev/zero"
#endif

/// Writes text to path (replacing it); cmocka-asserts success.
void fm_test_write_text(const char *path, const char *text);
/// true when the file at path holds exactly text.
bool fm_test_file_is(const char *path, const char *text);

/* ------------------------------------------------------------- sync suites */

/// The sync policy named by argv[1] ("none", the default, "mutex",
/// "lockfree") for suites that run once per policy; its name, or NULL (after
/// a usage line on stderr) for anything else.
const char *fm_test_sync_from_args(int argc, char **argv, fm_sync *out);

#endif /* FM_TEST_H */
