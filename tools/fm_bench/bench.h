/*
 * fm_bench/bench.h: what the experiments of fm-bench share.
 *
 * fm-bench is a program, never a test: each experiment prints its figures as
 * markdown tables, every figure beside a baseline (glibc malloc, a classic
 * eager pool, a bare free list) measured in the same run, so a reader
 * compares ratios, not absolute numbers from different machines or days.
 *
 * Timing uses fm_clock (rdtsc / cntvct, calibrated to ns). Everything the
 * timed loops need (random indices, pointer arrays) is prepared before the
 * clock starts, so baselines and pools pay the same for it. main pins the
 * process to the CPU it starts on (best effort, --no-pin to skip) so no
 * timed sample includes a migration.
 */
#ifndef FM_BENCH_BENCH_H
#define FM_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "framemem/file.h"
#include "framemem/pool.h"

/* --------------------------------------------------------------- options */

typedef struct bench_opts {
    bool quick;          /* CI smoke: small counts, runs in seconds */
    int repeat;          /* --repeat N; 0 = default (bench_repeat) */
    const char *csv_dir; /* NULL = no CSV */
    bool no_pin;         /* --no-pin: leave the CPU affinity alone */
    int pinned_cpu;      /* the CPU fm-bench runs on, -1 when not pinned */
    bool no_peers;       /* --no-peers: run no peer executable */
} bench_opts;

/// Runs per variant: --repeat N, else 5 (1 with --quick). Every experiment
/// runs its variants interleaved (A B C A B C ...) and reports medians.
int bench_repeat(const bench_opts *opts);

typedef struct bench_experiment {
    const char *name;
    const char *what;
    void (*run)(const bench_opts *opts);
} bench_experiment;

void churn_run(const bench_opts *opts);
void regrowth_run(const bench_opts *opts);
void frame_run(const bench_opts *opts);
void callbacks_run(const bench_opts *opts);
void bulk_run(const bench_opts *opts);
void batch_run(const bench_opts *opts);
void scene_run(const bench_opts *opts);
void sync_run(const bench_opts *opts);
void telemetry_run(const bench_opts *opts);
void sparse_run(const bench_opts *opts);
void timing_run(const bench_opts *opts);

/* ------------------------------------------------ issue 20's targets */

/* What the telemetry and timing experiments measured in this run; main.c
 * prints the targets with their verdicts after the experiments. */
typedef struct bench_issue20 {
    bool telemetry;                       /* telemetry_run ran */
    uint64_t frame_end_pools_ns;          /* fm_telemetry_frame_end, 16 pools, median */
    uint64_t frame_end_mixed_ns;          /* 16 sources of every kind */
    bool timing;                          /* timing_run ran */
    double sampled_over, sampled_pct;     /* per item: overhead ns per alloc+free, % */
    double every_over, every_pct;
    double sampled_ratio, every_ratio;    /* timed / wall of the same loops */
    double batch_pool_over, batch_pool_ratio;     /* batched, desc.timing */
    double batch_engine_over, batch_engine_ratio; /* batched, the engine's batch timing */
} bench_issue20;
extern bench_issue20 bench_i20;
/// Prints "Targets (issue 20), this run:" and a verdict per target.
void bench_issue20_targets(void);

/* ------------------------------------------- particles (batch, timing) */

/* The calls the particle frames of batch.c make. */
typedef enum bench_calls {
    BENCH_CALLS_SINGLE,          /* fm_pool_alloc / fm_pool_free per item, as callers write
                                    them (inline in optimised builds) */
    BENCH_CALLS_SINGLE_LIBRARY,  /* (fm_pool_alloc) / (fm_pool_free): the library's functions */
    BENCH_CALLS_SINGLE_CLOCKED,  /* per item, each call between two fm_clock_now of the caller */
    BENCH_CALLS_BATCHED,         /* fm_pool_alloc_n / fm_pool_free_n */
    BENCH_CALLS_BATCHED_CLOCKED, /* each batch between two fm_clock_now, as engine/src/store.c */
    BENCH_CALLS_MALLOC,          /* glibc malloc / free per item */
} bench_calls;

typedef struct bench_particles {
    double alloc_ns, free_ns; /* per item: the clock around the frames' alloc and free loops */
    uint64_t items;           /* allocations in the counted frames */
    double timed_ns;          /* per item, counted frames: the pool's alloc_ns_total +
                                 free_ns_total (desc.timing), or the caller's clock (CLOCKED) */
    uint64_t timed_calls;     /* the pool's timed_calls in the counted frames */
} bench_particles;

/// The batch experiment's particles (batch.c): live 32-byte items dying in
/// scattered batches, 300 frames, the first 100 not counted, with these
/// calls on a pool of this sync and timing (prefaulted, never growing).
bench_particles bench_particles_run(bench_calls calls, fm_sync sync, fm_pool_timing timing,
                                    uint32_t live);

/* ----------------------------------------------- keeping work observable */

/* Tells the compiler that p escapes and memory may have been read, so a
 * write to *p, a memset or a malloc/free pair cannot be removed. */
#if defined(__GNUC__) || defined(__clang__)
#define BENCH_ESCAPE(p) __asm__ __volatile__("" : : "r"(p) : "memory")
#else
extern void *volatile bench_sink;
#define BENCH_ESCAPE(p) (bench_sink = (p))
#endif

/* Functions that callgrind must see under their own name: never inlined,
 * never cloned into a .constprop/.isra copy. */
#if defined(__clang__)
#define BENCH_NOINLINE __attribute__((noinline))
#elif defined(__GNUC__)
#define BENCH_NOINLINE __attribute__((noinline, noclone))
#else
#define BENCH_NOINLINE
#endif

/* The hidden --callgrind-churn N mode (see tools/fm-callgrind): N 16-byte
 * alloc+free pairs through fm_pool (inline fast path, then the out-of-line
 * functions), through malloc/free, the bare free list, the unchecked pool,
 * and an empty loop, each loop in its own function so callgrind can
 * attribute the calls. 0 when every allocator got all its items back. */
int churn_callgrind(uint32_t pairs);

/* The hidden --callgrind-arena N mode (see tools/fm-callgrind): N
 * allocations of mixed 16..256-byte sizes, align 0, in frames of 4096,
 * through fm_arena_alloc (inline fast path, then the out-of-line function),
 * fm_frame_alloc, the bare bump pointer, malloc/free and an empty loop, each
 * frame in its own function with its frame end (reset, advance, free all).
 * 0 when the arenas counted every allocation and none failed. */
int frame_callgrind(uint32_t allocs);

/* The hidden --callgrind-callbacks N mode (see tools/fm-callgrind): N
 * resolves of handles of 10,000 live pool items in random order (inline as
 * callers compile fm_pool_resolve, the out-of-line function, a pointer chase
 * plus compare, a raw pointer, an empty loop); N retain+release pairs
 * (fm_pool, fm_closure, an intrusive count, an empty loop); N callbacks with
 * a 32-byte capture made, called and released one at a time, in frames of
 * 4096 (fm_closure_make, fm_closure_make_frame, a malloc'd closure, a closure
 * on the stack), each loop in its own function. 0 when every lookup found
 * its item, every callback ran and nothing is left live. */
int callbacks_callgrind(uint32_t count);

/* The hidden --callgrind-scene-BACKEND N modes (see tools/fm-callgrind): the
 * engine's standard scene, N frames, on one backend ("pool": the tuned
 * config, as fm-bench's scene times it; "malloc"; "classic": the tuned
 * config's first blocks); prints the allocs and frees it made. 0 when it
 * ran, 2 for another backend name. */
int scene_callgrind(const char *backend, uint32_t frames);

/* ----------------------------------------------------------------- random */

/* xorshift64: fixed seed, same sequence on every run and machine. */
static inline uint64_t bench_xorshift64(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

/* ------------------------------------------------------------- statistics */

typedef struct bench_latency {
    uint64_t median, p99, p999, max;
    uint64_t over_20x_median; /* samples > 20 * median */
    uint64_t over_1us;        /* samples > 1000 ns, whatever the median */
} bench_latency;

/// Latency summary of n samples in ns; sorts a private copy.
bench_latency bench_latency_of(const uint64_t *ns, size_t n);
/// Median of n values; reorders v.
double bench_median(double *v, size_t n);
/// Median of n values; reorders v.
uint64_t bench_median_u64(uint64_t *v, size_t n);

/* ------------------------------------------------------------------ misc */

/// malloc that ends the program with a message when it fails.
void *bench_xmalloc(size_t size);
/// Ends the program: a library call misbehaved (message says which).
void bench_die(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((noreturn, format(printf, 1, 2)))
#endif
    ;
/// Prints the run header: machine, CPU, compiler, date, build, clock.
void bench_print_header(const bench_opts *opts);
/// Starts writing DIR/NAME (fm_file_begin: a temporary file until
/// bench_csv_close), creating DIR (one level) when missing; exits 1 naming
/// the file and the reason when it cannot.
fm_file_writer *bench_csv_open(const char *dir, const char *name);
/// Before anything runs: creates DIR when missing and refuses (exit 2) a DIR
/// that is not a directory or holds a NAME.csv that is not a regular file.
void bench_csv_check_dir(const char *dir);
/// Commits a --csv file (written whole or not at all); exits 1 naming it and
/// the reason when it cannot be written.
void bench_csv_close(fm_file_writer *f);
/// Minor page faults of this process so far (getrusage).
uint64_t bench_minor_faults(void);
/// Resident set size of this process now, in bytes (/proc/self/statm).
uint64_t bench_rss_bytes(void);
/// The file that defines the malloc this process calls (dladdr of the
/// symbol the dynamic linker resolved), e.g. "libc.so.6"; "?" when unknown.
const char *bench_malloc_library(void);
/// Pins the process to the CPU it is running on (Linux sched_setaffinity,
/// best effort) so the scheduler cannot migrate it between timed samples;
/// returns that CPU, or -1 when it could not.
int bench_pin_cpu(void);
/// The clock's step as seen by a timed sample: the median distance, in ns,
/// between two back-to-back fm_clock_now() reads that differ.
double bench_clock_step_ns(void);

#endif /* FM_BENCH_BENCH_H */
