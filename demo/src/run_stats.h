/*
 * run_stats.h: the demo's whole-run figures for the exit summary.
 *
 * The engine's telemetry ring holds the last 600 frames; the summary covers
 * every frame since start (or the last stats reset), so the demo keeps its own
 * per-frame series: allocation time, wall frame time, render time and
 * in-allocation growth events. The series are stb_ds arrays (engine/ds.h) on
 * the C heap; when one cannot grow, later frames are left out and the
 * summary says so (the engine's instrumentation is untouched).
 */
#ifndef DEMO_RUN_STATS_H
#define DEMO_RUN_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"

typedef struct demo_run_stats {
    uint64_t *alloc_ns, *frame_ns, *render_ns, *present_ns; /* stb_ds arrays */
    size_t count; /* frames in each series */
    uint64_t first_frame; /* telemetry number of the first frame counted (the
                             overlay's numbering; paused frames have numbers too) */
    uint64_t grow_events, grow_events_after_first, ahead_grow_events;
    bool config_mid_run;          /* a config was (re)loaded during the run */
    uint64_t config_frame;        /* the first frame run with it */
    uint64_t grow_events_since_config;
    uint64_t paused; /* frames run while paused: counted, not in the series */
    bool oom; /* a series could not grow: later frames are not counted */
} demo_run_stats;

/// Records one simulated frame: the engine's newest record (render_ns set),
/// the wall time of the whole loop iteration (input, engine, render, present)
/// and the part of render_ns spent in the present call.
void demo_run_stats_add(demo_run_stats *s, const fm_telemetry_frame *rec, uint64_t wall_ns,
                        uint64_t present_ns);
/// A config was (re)loaded; frame is the number of the first frame that runs
/// with it (eng_info.frame at the load): growths from then on are its own.
void demo_run_stats_config_loaded(demo_run_stats *s, uint64_t frame);
/// Counts one frame run while paused (no simulation: nothing to measure).
void demo_run_stats_add_paused(demo_run_stats *s);
void demo_run_stats_reset(demo_run_stats *s);
void demo_run_stats_free(demo_run_stats *s);
/// The p-th percentile (0..100, nearest rank) of a series of n values
/// (sorted into scratch, which holds n). 0 when n is 0.
uint64_t demo_percentile(const uint64_t *values, size_t n, double p, uint64_t *scratch);

/// Involuntary context switches of the calling thread so far (getrusage
/// RUSAGE_THREAD's ru_nivcsw; 0 where the OS has no per-thread count): a
/// frame whose count changed between its begin and end lost the CPU to
/// another process, and its times hold that wait, not the allocator's work.
uint64_t demo_involuntary_switches(void);

typedef struct demo_summary_info {
    const char *renderer;   /* "software (headless)", ... */
    const char *save_hint;  /* where S / --save-config writes */
} demo_summary_info;

/// What shapes the run as one line, for the overlay's header and the
/// summary: backend, the config loaded (in->config_path), and on the pool
/// backend the growth policy and, per pool, grow-ahead and prefault as the
/// config asks and the switches allow; on the classic and malloc backends
/// what they do instead.
void demo_settings_text(const eng_info *in, char *buf, size_t n);

/// Prints the one-screen exit summary to out.
void demo_run_stats_print(const demo_run_stats *s, const eng *e, const demo_summary_info *info,
                          FILE *out);

#endif /* DEMO_RUN_STATS_H */
