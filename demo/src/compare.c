/*
 * compare.c: --compare's headless runs on each backend and their table.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "compare.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_stats.h"

static const char *const row_labels[DEMO_CMP_ROWS] = {"framemem (config)", "framemem (tuned)",
                                                      "classic", "malloc"};

/* One row: `frames` ticks, each frame's allocation time kept for the
 * percentiles. With tuned_path, the tuned config is written there from
 * this run's peaks before the engine goes. */
static bool run_row(const eng_desc *desc, uint32_t frames, demo_compare_row *row,
                    const char *tuned_path, char *err, size_t err_len) {
    eng *e = eng_create(desc, err, err_len);
    if (!e) return false;
    uint64_t *alloc_ns = malloc((size_t)frames * 2 * sizeof *alloc_ns);
    if (!alloc_ns) {
        snprintf(err, err_len, "compare: out of memory for %u frames", frames);
        eng_destroy(e);
        return false;
    }
    const fm_telemetry *t = eng_get_telemetry(e);
    row->backend = desc->backend;
    bool clean_seen = false;
    for (uint32_t f = 0; f < frames; f++) {
        uint64_t sw = demo_involuntary_switches();
        eng_tick(e, 1.0 / 60.0);
        bool preempted = demo_involuntary_switches() != sw;
        const fm_telemetry_frame *rec = fm_telemetry_get_frame(t, fm_telemetry_frame_count(t) - 1);
        alloc_ns[f] = rec->alloc_total_ns;
        row->grow_events += rec->grow_events;
        row->preempted += preempted;
        /* The worst of the clean frames; of all only while none was clean. */
        bool first_clean = !preempted && !clean_seen;
        if (f == 0 || first_clean || ((!preempted || !clean_seen) && rec->alloc_total_ns > row->worst_alloc_ns)) {
            row->worst_alloc_ns = rec->alloc_total_ns;
            row->worst_frame = rec->frame;
        }
        clean_seen |= !preempted;
    }
    for (uint32_t i = 0; i < fm_telemetry_source_count(t); i++)
        row->grow_ns += fm_telemetry_get_source(t, i)->total_grow_ns;
    row->median_alloc_ns = demo_percentile(alloc_ns, frames, 50, alloc_ns + frames);
    row->p99_alloc_ns = demo_percentile(alloc_ns, frames, 99, alloc_ns + frames);
    free(alloc_ns);
    bool ok = !tuned_path || eng_write_tuned_config(e, tuned_path, 0, err, err_len);
    eng_destroy(e);
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
    d.config_path = tuned;
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
    fprintf(out, "  compare: the same %u frames again, headless, on each backend (allocation time "
                 "per frame; worst: of the frames the OS did not preempt):\n", c->frames);
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
