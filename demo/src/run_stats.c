/*
 * run_stats.c: whole-run series and the exit summary.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "run_stats.h"

#include <sys/resource.h>

#include <stdlib.h>
#include <string.h>

#include "engine/ds.h"

/* Room for one more frame in every series; the first reservation holds a
 * minute at 60 fps, so a run's first frames regrow nothing. */
static bool reserve(demo_run_stats *s) {
    size_t n = s->count ? 1 : 4096;
    return ENG_ARR_RESERVE(s->alloc_ns, n, NULL) && ENG_ARR_RESERVE(s->frame_ns, n, NULL) &&
           ENG_ARR_RESERVE(s->render_ns, n, NULL) && ENG_ARR_RESERVE(s->present_ns, n, NULL);
}

void demo_run_stats_add(demo_run_stats *s, const fm_telemetry_frame *rec, uint64_t wall_ns,
                        uint64_t present_ns) {
    if (!reserve(s)) {
        s->oom = true;
        return;
    }
    /* Into the room reserved: these cannot fail. */
    arrput(s->alloc_ns, rec->alloc_total_ns);
    arrput(s->frame_ns, wall_ns);
    arrput(s->render_ns, rec->render_ns);
    arrput(s->present_ns, present_ns);
    if (s->count == 0) s->first_frame = rec->frame;
    s->grow_events += rec->grow_events;
    if (s->count > 0) s->grow_events_after_first += rec->grow_events;
    if (s->config_mid_run && rec->frame >= s->config_frame) s->grow_events_since_config += rec->grow_events;
    s->ahead_grow_events += rec->ahead_grow_events;
    s->count++;
}

void demo_run_stats_add_paused(demo_run_stats *s) { s->paused++; }

void demo_run_stats_config_loaded(demo_run_stats *s, uint64_t frame) {
    s->config_mid_run = true;
    s->config_frame = frame;
    s->grow_events_since_config = 0;
}

void demo_run_stats_reset(demo_run_stats *s) {
    s->count = 0;
    arrsetlen(s->alloc_ns, 0); /* the capacity stays: nothing allocated */
    arrsetlen(s->frame_ns, 0);
    arrsetlen(s->render_ns, 0);
    arrsetlen(s->present_ns, 0);
    s->paused = 0;
    s->first_frame = 0;
    s->grow_events = s->grow_events_after_first = s->ahead_grow_events = 0;
    s->grow_events_since_config = 0; /* a config loaded before the reset stays loaded */
    s->oom = false;
}

void demo_run_stats_free(demo_run_stats *s) {
    arrfree(s->alloc_ns);
    arrfree(s->frame_ns);
    arrfree(s->render_ns);
    arrfree(s->present_ns);
    memset(s, 0, sizeof *s);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

uint64_t demo_percentile(const uint64_t *values, size_t n, double p, uint64_t *scratch) {
    if (n == 0) return 0;
    memcpy(scratch, values, n * sizeof *values);
    qsort(scratch, n, sizeof *scratch, cmp_u64);
    /* nearest rank: the smallest value with at least p% of values at or below it */
    double rank = p / 100.0 * (double)n;
    size_t k = (size_t)rank;
    if ((double)k < rank) k++;
    if (k == 0) k = 1;
    if (k > n) k = n;
    return scratch[k - 1];
}

uint64_t demo_involuntary_switches(void) {
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) return (uint64_t)ru.ru_nivcsw;
#endif
    return 0;
}

void demo_settings_text(const eng_info *in, char *buf, size_t n) {
    const char *cfg = in->config_path ? in->config_path : "built-in defaults";
    switch (in->backend) {
    case ENG_BACKEND_CLASSIC:
        snprintf(buf, n,
                 "backend classic (Boost object_pool: blocks double, every new slot linked at growth) | "
                 "config %s: first block sizes | growth policy, grow-ahead, prefault: framemem's only",
                 cfg);
        return;
    case ENG_BACKEND_MALLOC:
        snprintf(buf, n, "backend malloc (no pools: every item from malloc) | config %s: unused", cfg);
        return;
    default: break;
    }
    char ga[96], pf[96];
    if (in->grow_ahead)
        snprintf(ga, sizeof ga, "grow-ahead on for %u/%u pools", in->grow_ahead_pools, in->pools);
    else
        snprintf(ga, sizeof ga, "grow-ahead off (config: %u/%u pools; A)", in->grow_ahead_pools, in->pools);
    if (in->prefault)
        snprintf(pf, sizeof pf, "prefault on for %u/%u pools", in->prefault_pools, in->pools);
    else
        snprintf(pf, sizeof pf, "prefault off (config: %u/%u pools; F)", in->prefault_pools, in->pools);
    snprintf(buf, n, "backend pool | config %s | growth %s%s | %s | %s", cfg, fm_growth_name(in->growth),
             in->override_growth ? " (all pools; G)" : " (config)", ga, pf);
}

/* What to do about the growths of this run, by backend and config state. */
static void print_advice(const demo_run_stats *s, const eng_info *in, const demo_summary_info *info,
                         FILE *out) {
    if (in->backend == ENG_BACKEND_MALLOC) {
        fprintf(out, "  malloc backend: no pools, so no growth to tune; its cost is in every allocation "
                     "(the allocation time above).\n");
        return;
    }
    if (in->backend == ENG_BACKEND_CLASSIC) {
        fprintf(out, "  classic backend: %llu block doubling(s) inside allocation calls, each linking every "
                     "new slot at once; framemem's pools (--backend pool, key M) carve chunks lazily, and a "
                     "tuned config removes their growth.\n", (unsigned long long)s->grow_events);
        return;
    }
    uint64_t since = s->config_mid_run ? s->grow_events_since_config : s->grow_events_after_first;
    char where[1200];
    if (s->config_mid_run)
        snprintf(where, sizeof where, "since %s was loaded (frame %llu)",
                 in->config_path ? in->config_path : "the config", (unsigned long long)s->config_frame);
    else
        snprintf(where, sizeof where, "after frame %llu", (unsigned long long)s->first_frame);
    if (!since) {
        fprintf(out, "  No growth inside an allocation call %s: the pool sizes fit this load.\n", where);
    } else if (in->config_path && !strcmp(in->config_path, info->save_hint)) {
        fprintf(out, "  Hitches from pool growth %s: %llu; the load outgrew %s: save a tuned config again "
                     "(key S) from this run's peaks and reload it (key L).\n", where,
                (unsigned long long)since, in->config_path);
    } else {
        fprintf(out, "  Hitches from pool growth %s: %llu; save a tuned config (key S, or --save-config %s) "
                     "and run again with --config %s.\n", where, (unsigned long long)since, info->save_hint,
                info->save_hint);
    }
}

static double us(uint64_t ns) { return (double)ns / 1e3; }
static double ms(uint64_t ns) { return (double)ns / 1e6; }

void demo_run_stats_print(const demo_run_stats *s, const eng *e, const demo_summary_info *info,
                          FILE *out) {
    eng_info in;
    eng_get_info(e, &in);
    const fm_telemetry *t = eng_get_telemetry(e);
    uint64_t *scratch = s->count ? malloc(s->count * sizeof *scratch) : NULL;
    size_t n = scratch ? s->count : 0;

    fprintf(out, "framemem-demo summary: %llu frames, scene %s, scale %.2f, backend %s, seed %llu, %s\n",
            (unsigned long long)(s->count + s->paused), in.scene, in.scale, eng_backend_name(in.backend),
            (unsigned long long)in.seed, info->renderer);
    if (s->paused)
        fprintf(out, "  %llu of them paused (no simulation): the figures below are of the other %zu\n",
                (unsigned long long)s->paused, s->count);
    char settings[1536];
    demo_settings_text(&in, settings, sizeof settings);
    fprintf(out, "  %s\n", settings);
    fprintf(out, "  live at exit: %u particles, %u entities, %u emitters\n", in.particles, in.entities,
            in.emitters);
    fprintf(out, "  allocation time per frame: median %.1f us, p99 %.1f us, max %.1f us\n",
            us(demo_percentile(s->alloc_ns, n, 50, scratch)), us(demo_percentile(s->alloc_ns, n, 99, scratch)),
            us(demo_percentile(s->alloc_ns, n, 100, scratch)));
    uint64_t f50 = demo_percentile(s->frame_ns, n, 50, scratch);
    fprintf(out, "  frame time: median %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%.0f fps at the median)\n",
            ms(f50), ms(demo_percentile(s->frame_ns, n, 90, scratch)),
            ms(demo_percentile(s->frame_ns, n, 99, scratch)), ms(demo_percentile(s->frame_ns, n, 100, scratch)),
            f50 ? 1e9 / (double)f50 : 0.0);
    fprintf(out, "  render time per frame: median %.2f ms, max %.2f ms (of which present: median %.2f ms)\n",
            ms(demo_percentile(s->render_ns, n, 50, scratch)), ms(demo_percentile(s->render_ns, n, 100, scratch)),
            ms(demo_percentile(s->present_ns, n, 50, scratch)));
    fprintf(out, "  growth events inside allocation calls: %llu (%llu after frame %llu); grow-ahead growths at frame boundaries: %llu\n",
            (unsigned long long)s->grow_events, (unsigned long long)s->grow_events_after_first,
            (unsigned long long)s->first_frame, (unsigned long long)s->ahead_grow_events);
    if (s->grow_events) {
        fprintf(out, "  pools that grew inside allocations:");
        for (uint32_t i = 0; i < fm_telemetry_source_count(t); i++) {
            const fm_telemetry_source *si = fm_telemetry_get_source(t, i);
            if (si->total_grow_events)
                fprintf(out, " %s %llu", si->name, (unsigned long long)si->total_grow_events);
        }
        fprintf(out, "\n");
    }
    print_advice(s, &in, info, out);
    fprintf(out, "  engine failures during the run: %llu%s%s%s\n", (unsigned long long)in.failures,
            in.failures ? " (memory refused; the newest: " : "", in.failures ? eng_last_failure(e) : "",
            in.failures ? ")" : "");
    if (s->oom) fprintf(out, "  (out of memory for the run series: later frames are not in these figures)\n");
    free(scratch);
}
