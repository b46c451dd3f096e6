/*
 * compare.h: framemem-demo's --compare: the run's frames again, headless, on
 * each backend, for the summary's side-by-side table.
 *
 * Four engine runs of the same seed, scale, scene and frame count, one after
 * the other in this process: framemem with the run's config, framemem tuned
 * (a config written from that run's peaks, eng_write_tuned_config, to a
 * temporary file removed afterwards), the classic eager pool
 * (engine/classic_pool.h) and malloc. Each row holds the growths inside
 * allocation calls and the slowest frame's allocation time: the demo's story
 * in one table. Each row runs DEMO_CMP_RUNS times; the runs simulate the
 * same frames (same seed), so noise only ever adds to a frame: each frame
 * keeps its fastest run among those the OS did not preempt (involuntary
 * context switches, demo_involuntary_switches), so another process's time
 * is never taken for the allocator's, nor is a long hitch dropped because
 * the OS happened to preempt it once. Frames preempted in every run are
 * counted. The target line compares classic's worst allocation frame with
 * framemem tuned's (>= 100x).
 */
#ifndef DEMO_COMPARE_H
#define DEMO_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"

enum { DEMO_CMP_CONFIG, DEMO_CMP_TUNED, DEMO_CMP_CLASSIC, DEMO_CMP_MALLOC, DEMO_CMP_ROWS };

/* Runs per row: each frame keeps its fastest clean one. */
#define DEMO_CMP_RUNS 3

/* The target: classic's worst allocation frame over framemem tuned's. */
#define DEMO_CMP_TARGET_RATIO 100.0

typedef struct demo_compare_row {
    const char *label;       /* "framemem (config)", "framemem (tuned)", "classic", "malloc" */
    eng_backend backend;
    uint64_t grow_events;    /* growths inside allocation calls, every pool */
    uint64_t grow_ns;        /* their time (the fastest run's) */
    uint64_t worst_alloc_ns; /* the slowest frame's allocation time, each frame
                                its fastest clean run (none clean: of all runs) */
    uint64_t worst_frame;    /* its frame number (from 0, as the overlay numbers frames) */
    uint64_t preempted;      /* frames preempted in every run */
    uint64_t median_alloc_ns, p99_alloc_ns;
} demo_compare_row;

typedef struct demo_compare {
    uint32_t frames;
    demo_compare_row rows[DEMO_CMP_ROWS];
} demo_compare;

/// Runs `frames` frames (>= 1) of desc (its backend and config_path are
/// replaced per row) DEMO_CMP_RUNS times on each row's backend. false with a message in err when
/// an engine cannot be made or the tuned config cannot be written.
bool demo_compare_run(const eng_desc *desc, uint32_t frames, demo_compare *out, char *err,
                      size_t err_len);
/* glibc's default mmap threshold, which demo_fresh_large_blocks keeps. */
#define DEMO_MMAP_THRESHOLD (128 * 1024)

/// Keeps malloc serving every block of DEMO_MMAP_THRESHOLD bytes or more
/// from fresh pages of the OS for the rest of the process. glibc raises its
/// mmap threshold (up to 32 MiB) whenever such a block is freed, so a
/// classic pool made after another was destroyed (key M, --compare's runs)
/// would get its blocks from heap pages already touched and its regrowth
/// would cost a fraction of what a game's first level pays. true when it
/// applies (glibc's malloc; false elsewhere, where nothing changes).
bool demo_fresh_large_blocks(void);

/* A frame no run has measured yet (demo_compare_keep_fastest). */
#define DEMO_CMP_UNSET UINT64_MAX

/// Folds one run's allocation time ns of a frame into the frame's kept time
/// *best (DEMO_CMP_UNSET before the first run) and *clean (whether the kept
/// run was not preempted): a clean run replaces a preempted one; between
/// runs alike the faster stays.
void demo_compare_keep_fastest(uint64_t *best, bool *clean, uint64_t ns, bool preempted);
/// The table and the target line ("target: classic worst allocation frame
/// ... (>= 100x): met" or "not met").
void demo_compare_print(const demo_compare *c, FILE *out);

#endif /* DEMO_COMPARE_H */
