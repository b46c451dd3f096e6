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
 * in one table. Frames in which the OS took the CPU away (involuntary
 * context switches, demo_involuntary_switches) are counted apart and left
 * out of the worst frame, so another process's time is never taken for the
 * allocator's. The target line compares classic's worst allocation frame
 * with framemem tuned's (>= 100x).
 */
#ifndef DEMO_COMPARE_H
#define DEMO_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"

enum { DEMO_CMP_CONFIG, DEMO_CMP_TUNED, DEMO_CMP_CLASSIC, DEMO_CMP_MALLOC, DEMO_CMP_ROWS };

/* The target: classic's worst allocation frame over framemem tuned's. */
#define DEMO_CMP_TARGET_RATIO 100.0

typedef struct demo_compare_row {
    const char *label;       /* "framemem (config)", "framemem (tuned)", "classic", "malloc" */
    eng_backend backend;
    uint64_t grow_events;    /* growths inside allocation calls, every pool */
    uint64_t grow_ns;        /* their time */
    uint64_t worst_alloc_ns; /* the slowest frame's allocation time, of the
                                frames not preempted (all preempted: of all) */
    uint64_t worst_frame;    /* its frame number (as the overlay numbers frames) */
    uint64_t preempted;      /* frames with an involuntary context switch */
    uint64_t median_alloc_ns, p99_alloc_ns;
} demo_compare_row;

typedef struct demo_compare {
    uint32_t frames;
    demo_compare_row rows[DEMO_CMP_ROWS];
} demo_compare;

/// Runs `frames` frames (>= 1) of desc (its backend and config_path are
/// replaced per row) on each row's backend. false with a message in err when
/// an engine cannot be made or the tuned config cannot be written.
bool demo_compare_run(const eng_desc *desc, uint32_t frames, demo_compare *out, char *err,
                      size_t err_len);
/// The table and the target line ("target: classic worst allocation frame
/// ... (>= 100x): met" or "not met").
void demo_compare_print(const demo_compare *c, FILE *out);

#endif /* DEMO_COMPARE_H */
