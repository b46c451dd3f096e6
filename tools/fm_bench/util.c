/* fm_bench/util.c: statistics, the run header, CSV files, CPU pinning. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity, cpu_set_t */
#endif
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <dlfcn.h>
#include <sched.h>
#endif

#include "framemem/clock.h"

#ifndef FM_BENCH_BUILD_TYPE
#define FM_BENCH_BUILD_TYPE ""
#endif

void *volatile bench_sink;

/* ------------------------------------------------------------- statistics */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: the smallest sample with at least p of the samples <= it. */
static uint64_t percentile_sorted(const uint64_t *sorted, size_t n, double p) {
    size_t rank = (size_t)(p * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

bench_latency bench_latency_of(const uint64_t *ns, size_t n) {
    bench_latency out = {0};
    if (n == 0) return out;
    uint64_t *s = bench_xmalloc(n * sizeof *s);
    memcpy(s, ns, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_u64);
    out.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    out.p99 = percentile_sorted(s, n, 0.99);
    out.p999 = percentile_sorted(s, n, 0.999);
    out.max = s[n - 1];
    uint64_t limit = 20 * out.median;
    for (size_t i = n; i-- > 0 && s[i] > limit;) out.over_20x_median++;
    for (size_t i = n; i-- > 0 && s[i] > 1000;) out.over_1us++;
    free(s);
    return out;
}

double bench_median(double *v, size_t n) {
    if (n == 0) return 0.0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

uint64_t bench_median_u64(uint64_t *v, size_t n) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_u64);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------------ misc */

int bench_repeat(const bench_opts *opts) {
    return opts->repeat ? opts->repeat : opts->quick ? 1 : 5;
}

uint64_t bench_rss_bytes(void) {
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    int got = fscanf(f, "%lu %lu", &size, &resident);
    fclose(f);
    return got == 2 ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

const char *bench_malloc_library(void) {
#if defined(__linux__)
    /* RTLD_DEFAULT finds the definition every call of malloc binds to, so a
     * linked allocator that interposes malloc shows here. */
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        return slash ? slash + 1 : info.dli_fname;
    }
#endif
    return "?";
}

void *bench_xmalloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p) bench_die("out of memory (%zu bytes for the benchmark's own arrays)", size);
    return p;
}

void bench_die(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fputs("fm-bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

uint64_t bench_minor_faults(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (uint64_t)ru.ru_minflt;
}

int bench_pin_cpu(void) {
#if defined(__linux__)
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE) return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? cpu : -1;
#else
    return -1;
#endif
}

double bench_clock_step_ns(void) {
    enum { READS = 1001 };
    double step[READS];
    size_t n = 0;
    for (int i = 0; i < READS; i++) {
        uint64_t a = fm_clock_now(), b = fm_clock_now();
        if (b != a) step[n++] = (double)(b - a) * 1e9 / fm_clock_ticks_per_sec();
    }
    return bench_median(step, n);
}

void bench_csv_check_dir(const char *dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        bench_die("--csv %s: cannot create the directory: %s", dir, strerror(errno));
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fm-bench: --csv %s: not a usable directory: %s\n", dir, strerror(errno));
        exit(2);
    }
    /* Every file fm-bench writes there is NAME.csv: any such entry that is
     * not a regular file would be refused at the end of its experiment. */
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".csv") != 0) continue;
        size_t len = strlen(dir) + n + 2;
        char *path = bench_xmalloc(len);
        snprintf(path, len, "%s/%s", dir, e->d_name);
        char err[FM_FILE_PATH_MAX + 256];
        const char *const out = path;
        if (!fm_file_check_outputs(&out, 1, NULL, 0, err, sizeof err)) {
            fprintf(stderr, "fm-bench: --csv %s\n", err);
            exit(2);
        }
        free(path);
    }
    closedir(d);
}

fm_file_writer *bench_csv_open(const char *dir, const char *name) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        bench_die("--csv %s: cannot create the directory: %s", dir, strerror(errno));
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = bench_xmalloc(len);
    snprintf(path, len, "%s/%s", dir, name);
    char err[FM_FILE_PATH_MAX + 256];
    const char *const out = path;
    if (!fm_file_check_outputs(&out, 1, NULL, 0, err, sizeof err)) {
        /* A refused output is a usage error, as in the other programs. */
        fflush(stdout);
        fprintf(stderr, "fm-bench: --csv %s\n", err);
        exit(2);
    }
    fm_file_writer *f = fm_file_begin(path, err, sizeof err);
    if (!f) bench_die("--csv %s", err);
    free(path);
    return f;
}

void bench_csv_close(fm_file_writer *f) {
    char err[FM_FILE_PATH_MAX + 256];
    if (!fm_file_commit(f, err, sizeof err)) bench_die("--csv %s", err);
}

/* ----------------------------------------------------------------- header */

/* "model name" on x86; arm64 kernels name the part in other fields. */
static void cpu_model(char *out, size_t cap) {
    static const char *const keys[] = {"model name", "Hardware", "Processor", "cpu model"};
    snprintf(out, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t kl = strlen(keys[k]);
            if (strncmp(line, keys[k], kl) != 0) continue;
            char *colon = strchr(line, ':');
            if (!colon) continue;
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t') v++;
            v[strcspn(v, "\n")] = '\0';
            if (*v) {
                snprintf(out, cap, "%s", v);
                found = true;
            }
            break;
        }
    }
    fclose(f);
}

static const char *compiler_name(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#elif defined(__VERSION__)
    return __VERSION__;
#else
    return "unknown compiler";
#endif
}

void bench_print_header(const bench_opts *opts) {
    struct utsname u;
    char cpu[256], date[64] = "?";
    cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm)) strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %z", &tm);
    const char *build = FM_BENCH_BUILD_TYPE[0] ? FM_BENCH_BUILD_TYPE : "(no CMAKE_BUILD_TYPE)";

    printf("# fm-bench\n\n");
    if (uname(&u) == 0)
        printf("- machine: %s %s %s (%s), %ld CPUs online\n", u.sysname, u.release, u.machine,
               u.nodename, sysconf(_SC_NPROCESSORS_ONLN));
    printf("- cpu: %s\n", cpu);
    printf("- compiler: %s\n", compiler_name());
    printf("- date: %s\n", date);
#ifdef NDEBUG
    printf("- build: %s, NDEBUG (asserts off)\n", build);
#else
    printf("- build: %s, asserts ON (not NDEBUG): figures are not representative\n", build);
#endif
#ifdef FM_TRACK_SITES
    printf("- FM_TRACK_SITES on: every fm_pool_alloc records file:line (slower)\n");
#endif
    printf("- clock: %s, %.3f GHz; back-to-back reads %.1f ns apart (median): single-allocation "
           "times come in steps of about that\n",
           fm_clock_source(), fm_clock_ticks_per_sec() / 1e9, bench_clock_step_ns());
    if (opts->pinned_cpu >= 0)
        printf("- affinity: pinned to CPU %d (sched_setaffinity; --no-pin to leave it)\n",
               opts->pinned_cpu);
    else
        printf("- affinity: not pinned (%s)\n", opts->no_pin ? "--no-pin" : "not supported here");
    printf("- mode: %s", opts->quick ? "--quick (CI smoke, small counts)" : "full");
    if (opts->repeat) printf(", --repeat %d", opts->repeat);
    if (opts->no_pin) printf(", --no-pin");
    if (opts->csv_dir) printf(", --csv %s", opts->csv_dir);
    printf("\n");
}
