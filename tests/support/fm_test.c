/* tests/support/fm_test.c: the allocator's cmocka check, error capture, fill patterns. */
#define _DEFAULT_SOURCE 1 /* mkdtemp */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/clock.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define FM_TEST_HAVE_VALGRIND 1
#endif
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <fcntl.h>
#include <io.h>
#include <process.h>
#include <psapi.h>
#else
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#endif

/* -------------------------------------------------------- counting allocator */

void fm_test_allocator_assert_clean(const fm_test_allocator *a) {
    if (a->errors) print_error("fm_test_allocator: last problem: %s\n", a->last_problem);
    assert_int_equal(a->errors, 0);
    assert_int_equal(a->live_bytes, 0);
    assert_int_equal(a->live_blocks, 0);
}

/* ------------------------------------------------------------ error capture */

void fm_test_errors_handler(fm_error err, const char *message, void *user) {
    fm_test_errors *e = user;
    e->count++;
    e->last = err;
    if ((unsigned)err < FM_ERROR_COUNT) e->by_code[err]++;
    if (!message || !message[0]) {
        e->bad_messages++;
        e->message[0] = '\0';
        return;
    }
    snprintf(e->message, sizeof e->message, "%s", message);
    if (e->log_len + 1 < sizeof e->log) {
        int n = snprintf(e->log + e->log_len, sizeof e->log - e->log_len, "%s\n", message);
        if (n > 0) {
            e->log_len += (size_t)n;
            if (e->log_len >= sizeof e->log) e->log_len = sizeof e->log - 1;
        }
    }
}

void fm_test_errors_reset(fm_test_errors *e) {
    memset(e, 0, sizeof *e);
    e->last = FM_OK;
}

void fm_test_errors_install(fm_test_errors *e) {
    fm_test_errors_reset(e);
    fm_set_error_handler(fm_test_errors_handler, e);
}

void fm_test_errors_restore(void) {
    fm_set_error_handler(NULL, NULL);
}

/* ----------------------------------------------------------------- fixture */

/* Set by fm_test_filter_from_env: a suite that ctest runs with
 * FM_TEST_FILTER set and that never reads it would run every case where
 * only its thread cases were meant to repeat. */
static bool fm_test_filter_read;

int fm_test_setup(void **state) {
    const char *pattern = getenv("FM_TEST_FILTER");
    if (pattern && pattern[0] && !fm_test_filter_read) {
        print_error("FM_TEST_FILTER is set, but this suite's main does not call "
                    "fm_test_filter_from_env() before cmocka_run_group_tests\n");
        return -1;
    }
    fm_test_env *env = calloc(1, sizeof *env);
    if (!env) return -1;
    fm_test_allocator_init(&env->alloc);
    fm_test_errors_install(&env->errors);
    fm_clear_error();
    *state = env;
    return 0;
}

int fm_test_teardown(void **state) {
    fm_test_env *env = *state;
    fm_test_errors_restore();
    fm_clear_error();
    if (env) {
        fm_test_allocator_release(&env->alloc);
        free(env);
    }
    *state = NULL;
    return 0;
}

/* ---------------------------------------------------------- item contents */

void fm_test_fill(void *p, size_t n, uint32_t seed) {
    unsigned char *b = p;
    uint32_t x = seed * 2654435761u + 0x9E3779B9u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        b[i] = (unsigned char)(x >> 24);
    }
}

bool fm_test_check_fill(const void *p, size_t n, uint32_t seed) {
    const unsigned char *b = p;
    uint32_t x = seed * 2654435761u + 0x9E3779B9u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        if (b[i] != (unsigned char)(x >> 24)) return false;
    }
    return true;
}

int fm_test_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int fm_test_cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)(*(void *const *)a);
    uintptr_t y = (uintptr_t)(*(void *const *)b);
    return (x > y) - (x < y);
}

void fm_test_assert_no_overlap(void *const *items, size_t count, size_t size) {
    if (count < 2) return;
    void **sorted = malloc(count * sizeof *sorted);
    assert_non_null(sorted);
    memcpy(sorted, items, count * sizeof *sorted);
    qsort(sorted, count, sizeof *sorted, fm_test_cmp_ptr);
    size_t bad = count;
    for (size_t i = 0; i + 1 < count; i++) {
        if ((uintptr_t)sorted[i] + size > (uintptr_t)sorted[i + 1]) {
            bad = i;
            break;
        }
    }
    if (bad != count) {
        print_error("items %p and %p overlap (item size %zu)\n", sorted[bad],
                    sorted[bad + 1], size);
    }
    free(sorted);
    assert_int_equal(bad, count);
}

bool fm_test_contains(const char *haystack, const char *needle) {
    return haystack && needle && strstr(haystack, needle) != NULL;
}

#ifdef _WIN32
void fm_test_limit_file_size(size_t max_bytes) {
    (void)max_bytes;
    _exit(125);
}

int fm_test_run_full_disk(size_t max_bytes, int (*fn)(void *arg), void *arg) {
    (void)max_bytes, (void)fn, (void)arg;
    print_message("[ did not apply ] a full disk: Windows has no per-process file-size limit "
                  "(RLIMIT_FSIZE) and no fork to set one in\n");
    skip();
    return -1;
}

bool fm_test_make_dir(char *dir, size_t dir_size, const char *prefix) {
    char tmp[MAX_PATH + 1];
    DWORD n = GetTempPathA(sizeof tmp, tmp);
    if (n == 0 || n > MAX_PATH) return false;
    static unsigned seq;
    for (int attempt = 0; attempt < 100; attempt++) {
        int k = snprintf(dir, dir_size, "%s%s_%lu_%u", tmp, prefix,
                         (unsigned long)GetCurrentProcessId(), seq++);
        if (k <= 0 || (size_t)k >= dir_size) return false;
        if (CreateDirectoryA(dir, NULL)) return true;
        if (GetLastError() != ERROR_ALREADY_EXISTS) return false;
    }
    return false;
}

/* Depth first; read-only files are made writable before they go. */
int fm_test_remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        DWORD attrs = GetFileAttributesA(path);
        if (attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY) &&
            !(attrs & FILE_ATTRIBUTE_REPARSE_POINT)) {
            rc |= fm_test_remove_dir(path);
        } else if (attrs != INVALID_FILE_ATTRIBUTES && (attrs & FILE_ATTRIBUTE_DIRECTORY)) {
            rc |= RemoveDirectoryA(path) ? 0 : -1; /* a link to a folder */
        } else {
            SetFileAttributesA(path, FILE_ATTRIBUTE_NORMAL);
            rc |= DeleteFileA(path) ? 0 : -1;
        }
    }
    closedir(d);
    return RemoveDirectoryA(dir) ? rc : -1;
}
#else
void fm_test_limit_file_size(size_t max_bytes) {
    struct rlimit rl = {.rlim_cur = (rlim_t)max_bytes, .rlim_max = (rlim_t)max_bytes};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(125);
    signal(SIGXFSZ, SIG_IGN);
}

int fm_test_run_full_disk(size_t max_bytes, int (*fn)(void *arg), void *arg) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fm_test_limit_file_size(max_bytes);
        int rc = fn(arg);
        fflush(NULL);
        _exit(rc);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool fm_test_make_dir(char *dir, size_t dir_size, const char *prefix) {
    int n = snprintf(dir, dir_size, "/tmp/%s_XXXXXX", prefix);
    return n > 0 && (size_t)n < dir_size && mkdtemp(dir) != NULL;
}

int fm_test_remove_dir(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}
#endif

const char *fm_test_path(const char *dir, const char *name) {
    static char bufs[8][600];
    static unsigned next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

void fm_test_expect_contains(const char *text, const char *want) {
    if (!fm_test_contains(text, want)) fail_msg("'%s' lacks '%s'", text ? text : "(null)", want);
}

int fm_test_count_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp") != NULL;
    closedir(d);
    return n;
}

void fm_test_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

bool fm_test_file_is(const char *path, const char *text) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = strlen(text);
    char *buf = malloc(n + 2);
    size_t got = buf ? fread(buf, 1, n + 1, f) : 0;
    fclose(f);
    bool same = buf && got == n && memcmp(buf, text, n) == 0;
    free(buf);
    return same;
}

const char *fm_test_sync_from_args(int argc, char **argv, fm_sync *out) {
    static const struct {
        const char *name;
        fm_sync sync;
    } known[] = {{"none", FM_SYNC_NONE}, {"mutex", FM_SYNC_MUTEX}, {"lockfree", FM_SYNC_LOCKFREE}};
    const char *want = argc > 1 ? argv[1] : "none";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(want, known[i].name) == 0) {
            *out = known[i].sync;
            return known[i].name;
        }
    }
    fprintf(stderr, "usage: %s [none|mutex|lockfree]\n", argv[0]);
    return NULL;
}

void fm_test_allow_read(const void *p, size_t n) {
#ifdef FM_TEST_HAVE_VALGRIND
    (void)VALGRIND_MAKE_MEM_DEFINED(p, n);
#else
    (void)p, (void)n;
#endif
}

bool fm_test_under_valgrind(void) {
#ifdef FM_TEST_HAVE_VALGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
}

uint64_t fm_test_clock_step_ticks(void) {
    static uint64_t step; /* tests call it from one thread */
    if (step) return step;
    uint64_t best = UINT64_MAX;
    /* 200 steps, or 100,000 reads when the clock is slow to move. */
    for (int steps = 0, reads = 0; steps < 200 && reads < 100000; reads++) {
        uint64_t a = fm_clock_now(), b;
        while ((b = fm_clock_now()) == a && ++reads < 100000) {
        }
        if (b != a) {
            steps++;
            if (b - a < best) best = b - a;
        }
    }
    assert_true(best != UINT64_MAX); /* a clock that never moves is broken */
    return step = best;
}

uint64_t fm_test_minor_faults(void) {
#ifdef _WIN32
    /* Every page fault, soft ones included: what a first touch takes. */
    PROCESS_MEMORY_COUNTERS pmc;
    if (!K32GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc)) return 0;
    return (uint64_t)pmc.PageFaultCount;
#else
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (uint64_t)ru.ru_minflt;
#endif
}

uint64_t fm_test_faults_of_an_untouched_mapping(size_t bytes) {
    uint64_t before = fm_test_minor_faults();
#ifdef _WIN32
    void *p = VirtualAlloc(NULL, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!p) fail_msg("VirtualAlloc of %zu bytes failed", bytes);
    VirtualFree(p, 0, MEM_RELEASE);
#else
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) fail_msg("mmap of %zu bytes failed", bytes);
    munmap(p, bytes);
#endif
    return fm_test_minor_faults() - before;
}

fm_test_os_state fm_test_os_state_of(const void *p) {
#ifdef _WIN32
    MEMORY_BASIC_INFORMATION mbi;
    if (VirtualQuery(p, &mbi, sizeof mbi) != sizeof mbi || mbi.State == MEM_FREE)
        return FM_TEST_OS_FREE;
    return mbi.State == MEM_COMMIT ? FM_TEST_OS_COMMITTED : FM_TEST_OS_RESERVED;
#else
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec = 0;
    void *start = (void *)((uintptr_t)p & ~(uintptr_t)(page - 1));
    if (mincore(start, page, (void *)&vec) == 0) return FM_TEST_OS_COMMITTED;
    return errno == ENOMEM ? FM_TEST_OS_FREE : FM_TEST_OS_COMMITTED;
#endif
}

bool fm_test_os_states_known(const char *what) {
    static int known = -1;
    static fm_test_os_state mapped, released;
    if (known < 0) {
#ifdef _WIN32
        uint8_t *p = VirtualAlloc(NULL, 65536, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
        if (!p) fail_msg("VirtualAlloc of the OS-state probe failed");
        mapped = fm_test_os_state_of(p);
        VirtualFree(p, 0, MEM_RELEASE);
#else
        size_t bytes = (size_t)sysconf(_SC_PAGESIZE);
        uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) fail_msg("mmap of the OS-state probe failed");
        mapped = fm_test_os_state_of(p);
        munmap(p, bytes);
#endif
        released = fm_test_os_state_of(p);
        known = mapped == FM_TEST_OS_COMMITTED && released == FM_TEST_OS_FREE;
    }
    if (known) return true;
    char why[160];
    snprintf(why, sizeof why, "a mapped page read as state %d and a released one as %d",
             (int)mapped, (int)released);
    fm_test_feature_missing(what, why);
    return false;
}

void fm_test_filter_from_env(void) {
    fm_test_filter_read = true;
    const char *pattern = getenv("FM_TEST_FILTER");
    if (pattern && pattern[0]) cmocka_set_test_filter(pattern);
}

const char *fm_test_emulator(void) {
    const char *emulator = getenv("FM_TEST_EMULATOR");
    return emulator && emulator[0] ? emulator : NULL;
}

bool fm_test_feature_missing(const char *what, const char *why) {
    const char *emulator = fm_test_emulator();
    if (!emulator) {
        print_error("%s: %s (a native run must have it)\n", what, why);
        fail();
    }
    print_message("[ did not apply ] %s: %s (under %s)\n", what, why, emulator);
    return true;
}

uint64_t fm_test_emulator_fault_slack(void) { return fm_test_emulator() ? 8 : 0; }

bool fm_test_populate_makes_pages_resident(const char *what) {
#ifdef __linux__
    /* A kernel that refuses the advice (before 5.14) has the library touch
     * the pages itself: resident as well. */
    enum { PAGES = 16 };
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = PAGES * page;
    uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail_msg("mmap of the populate probe failed");
    bool advised = madvise(p, bytes, MADV_POPULATE_WRITE) == 0;
    uint64_t before = fm_test_minor_faults();
    for (size_t i = 0; i < PAGES; i++) ((volatile uint8_t *)p)[i * page] = 1;
    uint64_t faults = fm_test_minor_faults() - before;
    munmap(p, bytes);
    if (!advised || faults < PAGES) return true;
    char why[160];
    snprintf(why, sizeof why,
             "madvise(MADV_POPULATE_WRITE) returned 0, yet %llu of %d pages faulted in when "
             "first touched",
             (unsigned long long)faults, PAGES);
    fm_test_feature_missing(what, why);
    return false;
#else
    (void)what;
    return true;
#endif
}

bool fm_test_page_faults_counted(const char *what) {
    /* A fresh mapping of PAGES pages, each touched once: a counter that
     * sees first touches rises by at least PAGES. Too small for a huge page
     * (THP "always" would fault it in as one). */
    enum { PAGES = 64 };
    static int known = -1;
    static uint64_t seen;
    if (known < 0) {
#ifdef _WIN32
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        size_t page = si.dwPageSize, bytes = PAGES * page;
        uint8_t *p = VirtualAlloc(NULL, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
        if (!p) fail_msg("VirtualAlloc of the page-fault probe failed");
#else
        size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = PAGES * page;
        uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) fail_msg("mmap of the page-fault probe failed");
#endif
        uint64_t before = fm_test_minor_faults();
        for (size_t i = 0; i < PAGES; i++) ((volatile uint8_t *)p)[i * page] = 1;
        seen = fm_test_minor_faults() - before;
#ifdef _WIN32
        VirtualFree(p, 0, MEM_RELEASE);
#else
        munmap(p, bytes);
#endif
        known = seen >= PAGES;
    }
    if (known) return true;
    char why[160];
    snprintf(why, sizeof why,
             "the process's page-fault count rose by %llu while %d fresh pages were touched",
             (unsigned long long)seen, PAGES);
    fm_test_feature_missing(what, why);
    return false;
}

#ifndef _WIN32
static unsigned fm_test__valgrind_errors(void) {
#ifdef FM_TEST_HAVE_VALGRIND
    return (unsigned)VALGRIND_COUNT_ERRORS;
#else
    return 0;
#endif
}
#endif

#ifdef _WIN32
fm_test_child fm_test_run_child(void (*fn)(void)) {
    fm_test_child r;
    memset(&r, 0, sizeof r);
    int fds[2];
    assert_int_equal(_pipe(fds, sizeof r.output, _O_BINARY), 0);
    fflush(NULL);
    int saved = _dup(2);
    assert_true(saved >= 0);
    assert_int_equal(_dup2(fds[1], 2), 0);
    fn();
    fflush(stderr);
    _dup2(saved, 2);
    _close(saved);
    _close(fds[1]);
    int got = 0, n;
    while ((n = _read(fds[0], r.output + got, (unsigned)(sizeof r.output - 1 - (size_t)got))) > 0)
        got += n;
    r.output[got] = '\0';
    _close(fds[0]);
    return r;
}
#else
fm_test_child fm_test_run_child(void (*fn)(void)) {
    fm_test_child r;
    memset(&r, 0, sizeof r);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        unsigned before = fm_test__valgrind_errors();
        fn();
        if (fm_test_under_valgrind())
            fprintf(stderr, "\nvalgrind errors: %u\n", fm_test__valgrind_errors() - before);
        fflush(stderr);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    while ((n = read(fds[0], r.output + got, sizeof r.output - 1 - got)) > 0) got += (size_t)n;
    r.output[got] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &r.status, 0), pid);
    return r;
}
#endif

bool fm_test_child_caught(const fm_test_child *r) {
    if (strstr(r->output, "use-after-poison")) return true;
    const char *v = strstr(r->output, "valgrind errors: ");
    return v && strtoul(v + strlen("valgrind errors: "), NULL, 10) > 0;
}

fm_pool_stats fm_test_pool_stats(const fm_pool *pool) {
    fm_pool_stats s;
    memset(&s, 0, sizeof s);
    fm_pool_get_stats(pool, &s);
    return s;
}

void fm_test_assert_pool_stats_same(const fm_pool_stats *before, const fm_pool_stats *after,
                                    uint64_t misuse_delta) {
#define FM_TEST_CHECK_FIELD(field, desc)                                          \
    if (strcmp(#field, "misuse_count") != 0 && before->field != after->field) {   \
        print_error("stat %s changed: %llu -> %llu\n", #field,                     \
                    (unsigned long long)before->field,                             \
                    (unsigned long long)after->field);                             \
        fail();                                                                    \
    }
    FM_POOL_STATS_FIELDS(FM_TEST_CHECK_FIELD)
#undef FM_TEST_CHECK_FIELD
    assert_int_equal(after->misuse_count, before->misuse_count + misuse_delta);
}

fm_pool *fm_test_pool_create_counted(fm_test_env *env, fm_pool_desc desc) {
    desc.allocator = fm_test_allocator_get(&env->alloc);
    fm_pool *pool = fm_pool_create(&desc);
    if (!pool)
        print_error("fm_pool_create failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    assert_non_null(pool);
    return pool;
}

void fm_test_pool_destroy_quiet(fm_test_env *env, fm_pool *pool) {
    int errors_before = env->errors.count;
    assert_int_equal(fm_test_pool_stats(pool).live, 0);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    fm_pool_destroy(pool);
    assert_int_equal(env->errors.count, errors_before);
}

void fm_test_pool_destroy_clean(fm_test_env *env, fm_pool *pool) {
    fm_test_pool_destroy_quiet(env, pool);
    fm_test_allocator_assert_clean(&env->alloc);
}

void fm_test_shuffle(void **a, size_t n, uint32_t seed) {
    uint32_t x = seed | 1u;
    for (size_t i = n; i > 1; i--) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        size_t j = x % i;
        void *t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* ----------------------------------------------------------- special files */

#ifdef _WIN32
bool fm_test_make_fifo(const char *path, const char *what) {
    (void)path;
    print_message("[ did not apply ] %s: Windows has no FIFOs in the file system\n", what);
    return false;
}

bool fm_test_make_symlink(const char *target, const char *at, const char *what) {
    /* 0x2: SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE (developer mode). */
    if (CreateSymbolicLinkA(at, target, 0x2)) {
        if (fm_test_is_symlink(at)) return true;
        /* Wine's CreateSymbolicLink is a stub that makes nothing. */
        print_message("[ did not apply ] %s: CreateSymbolicLink reported success but no "
                      "link exists (Wine's is a stub)\n",
                      what);
        return false;
    }
    DWORD e = GetLastError();
    assert_true(e == ERROR_PRIVILEGE_NOT_HELD || e == ERROR_INVALID_PARAMETER ||
                e == ERROR_NOT_SUPPORTED || e == ERROR_CALL_NOT_IMPLEMENTED);
    print_message("[ did not apply ] %s: CreateSymbolicLink refused (error %lu: no privilege "
                  "for symbolic links here)\n",
                  what, (unsigned long)e);
    return false;
}

void fm_test_make_hardlink(const char *target, const char *at) {
    assert_true(CreateHardLinkA(at, target, NULL));
}

bool fm_test_is_symlink(const char *path) {
    DWORD a = GetFileAttributesA(path);
    return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_REPARSE_POINT);
}

bool fm_test_is_fifo(const char *path) {
    (void)path;
    return false;
}

int fm_test_mkdir(const char *path) { return CreateDirectoryA(path, NULL) ? 0 : -1; }

bool fm_test_mode_bits(const char *what) {
    print_message("[ did not apply ] %s: Windows files have no permission bits\n", what);
    return false;
}

void fm_test_alarm(unsigned seconds) { (void)seconds; }
#else
bool fm_test_make_fifo(const char *path, const char *what) {
    (void)what;
    if (mkfifo(path, 0644) != 0 && errno != EEXIST) fail_msg("mkfifo %s: %s", path, strerror(errno));
    return true;
}

bool fm_test_make_symlink(const char *target, const char *at, const char *what) {
    (void)what;
    assert_int_equal(symlink(target, at), 0);
    return true;
}

void fm_test_make_hardlink(const char *target, const char *at) {
    assert_int_equal(link(target, at), 0);
}

bool fm_test_is_symlink(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

bool fm_test_is_fifo(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

int fm_test_mkdir(const char *path) { return mkdir(path, 0755); }

bool fm_test_mode_bits(const char *what) {
    (void)what;
    return true;
}

void fm_test_alarm(unsigned seconds) { alarm(seconds); }
#endif

bool fm_test_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
