/*
 * fm_bench/main.c: fm-bench, every framemem benchmark in one program.
 *
 *   fm-bench [--list] [--only NAME[,NAME...]] [--quick] [--repeat N] [--csv DIR] [--no-pin]
 *            [--no-peers]
 *
 * Prints a header (machine, compiler, build, clock) and one markdown section
 * per experiment. Hidden: --callgrind-churn N, --callgrind-arena N,
 * --callgrind-callbacks N and --callgrind-scene-BACKEND N (pool, malloc,
 * classic), the modes tools/fm-callgrind runs under valgrind.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "framemem/clock.h"
#include "peers.h"

static const bench_experiment experiments[] = {
    {"churn",
     "alloc+free fast path and random churn with 10,000 live, fm_pool vs malloc, an "
     "unchecked pool and the bare free list",
     churn_run},
    {"regrowth", "per-allocation latency while pools grow, fm_pool vs eager pool vs malloc",
     regrowth_run},
    {"bulk",
     "5,000,000 128-byte items held then freed: ns per alloc and free, RSS and bytes per "
     "item, fm_pool vs malloc and peers",
     bulk_run},
    {"batch",
     "particles without the engine: 20,000 live 32-byte items dying in scattered batches, "
     "fm_pool_alloc_n / fm_pool_free_n vs one call per item vs malloc, NONE and MUTEX",
     batch_run},
    {"frame",
     "1,000,000 mixed 16..256-byte temporaries per frame then reset, fm_arena and "
     "fm_frame_arena vs malloc/free; reset cost vs allocation count",
     frame_run},
    {"callbacks",
     "5,000 callbacks made, called and released per frame: malloc'd closures vs "
     "fm_closure_make and fm_closure_make_frame; event emit; retain/release pairs; "
     "handle resolves vs a pointer chase",
     callbacks_run},
    {"scene",
     "the engine's standard scene, 1,000 frames: allocation time per frame with the "
     "pool backend vs the malloc backend and the classic one (Boost pool<>'s "
     "algorithm); telemetry timing overhead",
     scene_run},
    {"sync",
     "16-byte alloc+free pairs under each sync policy (NONE, MUTEX, THREAD_CACHE, LOCKFREE) "
     "vs glibc malloc: 1 thread, 2 threads on their own pools, 2 threads on one shared pool",
     sync_run},
    {"telemetry",
     "fm_telemetry_frame_end with 16 sources (pools; every kind) and fm_telemetry_grow_ahead "
     "vs 16 fm_pool_get_stats calls, ns per frame",
     telemetry_run},
    {"sparse",
     "a game's pattern: 9 small pools, 0..10 allocations per frame each, frees by base "
     "pointer (fm_free), a level reset (fm_pool_reset), vs glibc and a first-fit zone "
     "with free-by-tag; first allocations of fresh pools; fm_pool_of",
     sparse_run},
    {"timing",
     "a pool's timing of its own calls (desc.timing SAMPLED, EVERY_CALL) vs calls clocked by "
     "hand and the engine's batch timing: overhead per alloc+free and timed vs wall time",
     timing_run},
};
enum { EXPERIMENTS = sizeof experiments / sizeof experiments[0] };

/* name is one of the comma-separated names in list. */
static bool only_names(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, name, n) == 0) return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: fm-bench [options]\n"
            "  --list        print the experiment names and exit\n"
            "  --only NAMES  run these experiments (comma-separated; see --list)\n"
            "  --quick       CI smoke run: small counts, a few seconds\n"
            "  --repeat N    runs per variant, interleaved A B C A B C; figures are\n"
            "                medians (default 5, or 1 with --quick)\n"
            "  --csv DIR     write CSV files (regrowth: one per variant, every run,\n"
            "                run,index,ns,position; frame, callbacks and bulk: one row\n"
            "                per variant and run; churn: one row per variant)\n"
            "  --no-pin      do not pin fm-bench to the CPU it starts on\n"
            "  --no-peers    run no peer executable (fm-bench-peer-*, fm-bench-boost)\n"
            "  --help        this text\n"
            "exit codes: 0 done; 1 a run failed or a --csv file could not be written\n"
            "(named, with the reason; an existing file is kept as it was); 2 bad\n"
            "arguments, or a --csv file that exists and is not a regular file\n");
}

/* A positive integer option value, or exit with a message. */
static unsigned long parse_count(const char *opt, const char *s, unsigned long max) {
    char *end = NULL;
    errno = 0;
    unsigned long v = s ? strtoul(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v == 0 || v > max || s[0] == '-') {
        fprintf(stderr, "fm-bench: %s needs a whole number from 1 to %lu\n", opt, max);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    bench_opts opts = {.pinned_cpu = -1};
    const char *only = NULL;
    unsigned long callgrind_pairs = 0, callgrind_allocs = 0, callgrind_callbacks = 0;
    unsigned long callgrind_frames = 0;
    const char *callgrind_scene = NULL; /* the backend of --callgrind-scene-BACKEND */

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--list")) {
            for (int e = 0; e < EXPERIMENTS; e++)
                printf("%-10s %s\n", experiments[e].name, experiments[e].what);
            return 0;
        } else if (!strcmp(a, "--only") && next) {
            only = next;
            i++;
        } else if (!strcmp(a, "--quick")) {
            opts.quick = true;
        } else if (!strcmp(a, "--repeat")) {
            opts.repeat = (int)parse_count(a, next, 1000);
            i++;
        } else if (!strcmp(a, "--no-pin")) {
            opts.no_pin = true;
        } else if (!strcmp(a, "--no-peers")) {
            opts.no_peers = true;
        } else if (!strcmp(a, "--csv") && next) {
            opts.csv_dir = next;
            i++;
        } else if (!strcmp(a, "--callgrind-churn")) {
            callgrind_pairs = parse_count(a, next, 1000000000ul);
            i++;
        } else if (!strcmp(a, "--callgrind-arena")) {
            callgrind_allocs = parse_count(a, next, 1000000000ul);
            i++;
        } else if (!strcmp(a, "--callgrind-callbacks")) {
            callgrind_callbacks = parse_count(a, next, 1000000000ul);
            i++;
        } else if (!strncmp(a, "--callgrind-scene-", strlen("--callgrind-scene-"))) {
            callgrind_scene = a + strlen("--callgrind-scene-");
            callgrind_frames = parse_count(a, next, 1000000ul);
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "fm-bench: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    if (opts.csv_dir) bench_csv_check_dir(opts.csv_dir);

    /* Calibrate (about 2 ms) before anything is timed. */
    fm_clock_init();

    if (callgrind_pairs) return churn_callgrind((uint32_t)callgrind_pairs);
    if (callgrind_allocs) return frame_callgrind((uint32_t)callgrind_allocs);
    if (callgrind_callbacks) return callbacks_callgrind((uint32_t)callgrind_callbacks);
    if (callgrind_scene) return scene_callgrind(callgrind_scene, (uint32_t)callgrind_frames);

    /* Every name of a comma-separated --only is an experiment's. */
    for (const char *p = only; p && *p;) {
        size_t n = strcspn(p, ",");
        int e = 0;
        while (e < EXPERIMENTS &&
               !(strlen(experiments[e].name) == n && strncmp(experiments[e].name, p, n) == 0))
            e++;
        if (e == EXPERIMENTS) {
            fprintf(stderr, "fm-bench: no experiment named '%.*s' (--list shows them)\n", (int)n, p);
            return 2;
        }
        p += n + (p[n] == ',');
    }

    /* Best effort: a migration between CPUs inside a timed sample would cost
     * that sample the move and a cold cache. */
    if (!opts.no_pin) opts.pinned_cpu = bench_pin_cpu();
    bench_print_header(&opts);
    bench_peers_print_info(&opts);
    for (int e = 0; e < EXPERIMENTS; e++) {
        if (only && !only_names(only, experiments[e].name)) continue;
        experiments[e].run(&opts);
        /* Tables nobody can read: stop at once. */
        char err[256];
        if (!fm_file_stdout_ok(err, sizeof err)) {
            fprintf(stderr, "fm-bench: %s\n", err);
            return 1;
        }
    }
    /* Issue 20's targets, from the telemetry and timing experiments of this
     * run (--only telemetry,timing runs just those). */
    if (bench_i20.telemetry || bench_i20.timing) {
        bench_issue20_targets();
        char err[256];
        if (!fm_file_stdout_ok(err, sizeof err)) {
            fprintf(stderr, "fm-bench: %s\n", err);
            return 1;
        }
    }
    return 0;
}
