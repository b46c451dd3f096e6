/*
 * compare.c: --compare's headless runs on each backend and their table.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "compare.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "run_stats.h"

static const char *const row_labels[DEMO_CMP_ROWS] = {"framemem (config)", "framemem (tuned)",
                                                      "classic", "malloc"};

bool demo_fresh_large_blocks(void) {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
    /* Pinning the threshold turns glibc's adjustment off (mallopt(3)). */
    return mallopt(M_MMAP_THRESHOLD, DEMO_MMAP_THRESHOLD) == 1;
#else
    return false;
#endif
}

void demo_compare_keep_fastest(uint64_t *best, bool *clean, uint64_t ns, bool preempted) {
    if (*best == DEMO_CMP_UNSET || (!preempted && !*clean) || (!preempted == *clean && ns < *best))
        *best = ns;
    *clean |= !preempted;
}

/* One run of a row: `frames` ticks. Each frame keeps the fastest allocation
 * time of the runs the OS did not preempt in it (best[f]; clean[f] marks
 * that one was clean), or while none was, of all runs. With tuned_path, the
 * tuned config is written there from this run's peaks before the engine
 * goes. */
static bool run_once(const eng_desc *desc, uint32_t frames, demo_compare_row *row, uint64_t *best,
                     bool *clean, const char *tuned_path, char *err, size_t err_len) {
    eng *e = eng_create(desc, err, err_len);
    if (!e) return false;
    const fm_telemetry *t = eng_get_telemetry(e);
    uint64_t grows = 0, grow_ns = 0;
    for (uint32_t f = 0; f < frames; f++) {
        uint64_t sw = demo_involuntary_switches();
        eng_tick(e, 1.0 / 60.0);
        bool preempted = demo_involuntary_switches() != sw;
        const fm_telemetry_frame *rec = fm_telemetry_get_frame(t, fm_telemetry_frame_count(t) - 1);
        grows += rec->grow_events;
        demo_compare_keep_fastest(&best[f], &clean[f], rec->alloc_total_ns, preempted);
    }
    for (uint32_t i = 0; i < fm_telemetry_source_count(t); i++)
        grow_ns += fm_telemetry_get_source(t, i)->total_grow_ns;
    /* Every run of a row simulates the same frames (same seed): the same
     * growths; their time, like the frames', is the fastest run's. */
    row->grow_events = grows;
    if (row->grow_ns == 0 || grow_ns < row->grow_ns) row->grow_ns = grow_ns;
    bool ok = !tuned_path || eng_write_tuned_config(e, tuned_path, 0, err, err_len);
    eng_destroy(e);
    return ok;
}

/* A row: DEMO_CMP_RUNS runs, then each frame's best and their statistics. */
static bool run_row(const eng_desc *desc, uint32_t frames, demo_compare_row *row,
                    const char *tuned_path, char *err, size_t err_len) {
    uint64_t *best = malloc((size_t)frames * 2 * sizeof *best);
    bool *clean = calloc(frames, sizeof *clean);
    if (!best || !clean) {
        snprintf(err, err_len, "compare: out of memory for %u frames", frames);
        free(best);
        free(clean);
        return false;
    }
    for (uint32_t f = 0; f < frames; f++) best[f] = DEMO_CMP_UNSET;
    row->backend = desc->backend;
    bool ok = true;
    for (int r = 0; ok && r < DEMO_CMP_RUNS; r++)
        ok = run_once(desc, frames, row, best, clean, r == 0 ? tuned_path : NULL, err, err_len);
    if (ok) {
        for (uint32_t f = 0; f < frames; f++) {
            row->preempted += !clean[f];
            if (f == 0 || best[f] > row->worst_alloc_ns) {
                row->worst_alloc_ns = best[f];
                row->worst_frame = f;
            }
        }
        /* Frames are numbered from 0 in every engine, as the overlay does. */
        row->median_alloc_ns = demo_percentile(best, frames, 50, best + frames);
        row->p99_alloc_ns = demo_percentile(best, frames, 99, best + frames);
    }
    free(best);
    free(clean);
    return ok;
}

bool demo_compare_run(const eng_desc *desc, uint32_t frames, demo_compare *out, char *err,
                      size_t err_len) {
    memset(out, 0, sizeof *out);
    out->frames = frames ? frames : 1;
    for (int r = 0; r < DEMO_CMP_ROWS; r++) out->rows[r].label = row_labels[r];
    const char *dir = getenv("TMPDIR");
    char tuned[1024];
    snprintf(tuned, sizeof tuned, "%s/framemem-demo-compare-XXXXXX", dir && dir[0] ? dir : "/tmp");
    int fd = mkstemp(tuned);
    if (fd < 0) {
        snprintf(err, err_len, "compare: cannot make a temporary file in %s for the tuned config",
                 dir && dir[0] ? dir : "/tmp");
        return false;
    }
    close(fd);
    eng_desc d = *desc;
    d.backend = ENG_BACKEND_POOL;
    bool ok = run_row(&d, out->frames, &out->rows[DEMO_CMP_CONFIG], tuned, err, err_len);
    /* Tuned as fm-bench's scene runs it, the workflow the engine is for:
     * pools sized from the peaks, their pages touched at creation
     * (prefault) and grown at frame boundaries if a peak is ever passed
     * (grow-ahead), so no allocation call pays for fresh pages. */
    d.config_path = tuned;
    d.prefault = true;
    d.grow_ahead = true;
    ok = ok && run_row(&d, out->frames, &out->rows[DEMO_CMP_TUNED], NULL, err, err_len);
    d = *desc;
    d.backend = ENG_BACKEND_CLASSIC;
    ok = ok && run_row(&d, out->frames, &out->rows[DEMO_CMP_CLASSIC], NULL, err, err_len);
    d.backend = ENG_BACKEND_MALLOC;
    ok = ok && run_row(&d, out->frames, &out->rows[DEMO_CMP_MALLOC], NULL, err, err_len);
    remove(tuned);
    return ok;
}

/* µs below a millisecond, ms above. */
static void fmt_ns(char *buf, size_t n, uint64_t ns) {
    if (ns >= 1000000) snprintf(buf, n, "%.2f ms", (double)ns / 1e6);
    else snprintf(buf, n, "%.1f us", (double)ns / 1e3);
}

void demo_compare_print(const demo_compare *c, FILE *out) {
    fprintf(out, "  compare: the same %u frames again, headless, on each backend, %d runs each "
                 "(allocation time per frame: each frame's fastest run the OS did not preempt; "
                 "preempted: frames it preempted in every run; tuned: the config written from the "
                 "first row's peaks, loaded with prefault and grow-ahead on):\n",
            c->frames, DEMO_CMP_RUNS);
    fprintf(out, "    %-18s %8s %12s %12s %12s %18s %10s\n", "backend", "growths", "growth time",
            "median", "p99", "worst (frame)", "preempted");
    for (int r = 0; r < DEMO_CMP_ROWS; r++) {
        const demo_compare_row *w = &c->rows[r];
        char g[32], m[32], p[32], x[32], xf[48];
        fmt_ns(g, sizeof g, w->grow_ns);
        fmt_ns(m, sizeof m, w->median_alloc_ns);
        fmt_ns(p, sizeof p, w->p99_alloc_ns);
        fmt_ns(x, sizeof x, w->worst_alloc_ns);
        snprintf(xf, sizeof xf, "%s (%llu)", x, (unsigned long long)w->worst_frame);
        fprintf(out, "    %-18s %8llu %12s %12s %12s %18s %10llu\n", w->label,
                (unsigned long long)w->grow_events, g, m, p, xf, (unsigned long long)w->preempted);
    }
    const demo_compare_row *cl = &c->rows[DEMO_CMP_CLASSIC], *tu = &c->rows[DEMO_CMP_TUNED];
    char a[32], b[32];
    fmt_ns(a, sizeof a, cl->worst_alloc_ns);
    fmt_ns(b, sizeof b, tu->worst_alloc_ns);
    /* A tuned worst frame of 0 ns (timing off) makes any classic hitch infinitely larger. */
    double ratio = tu->worst_alloc_ns ? (double)cl->worst_alloc_ns / (double)tu->worst_alloc_ns : 0;
    bool met = tu->worst_alloc_ns ? ratio >= DEMO_CMP_TARGET_RATIO : cl->worst_alloc_ns > 0;
    if (tu->worst_alloc_ns)
        fprintf(out, "  target: classic worst allocation frame %s = %.0fx framemem tuned worst %s "
                     "(>= %.0fx): %s\n", a, ratio, b, DEMO_CMP_TARGET_RATIO, met ? "met" : "not met");
    else
        fprintf(out, "  target: classic worst allocation frame %s, framemem tuned worst 0 us "
                     "(>= %.0fx): %s\n", a, DEMO_CMP_TARGET_RATIO, met ? "met" : "not met");
}
