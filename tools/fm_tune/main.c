/*
 * fm_tune/main.c: fm-tune, pool capacities from recorded runs of any program.
 *
 *   fm-tune [--headroom H] [--config CURRENT.ini] --out FILE.ini RUN.csv...
 *
 * Reads telemetry CSVs (fm_telemetry_write_csv / stream_csv of any program,
 * the demo's --csv, or files the engine wrote before issue 20) and writes a
 * pool config (framemem/config.h) with fm_config_write_tuned_runs: per pool,
 * initial_capacity = the highest live count of any frame of any run (the
 * larger of end-of-frame live and the frame's peak_live) times the headroom,
 * rounded up to whole chunks of the pool's chunk_items (capped at
 * max_capacity): the capacity at which none of those runs would have grown
 * inside an allocation call; per arena, a reserve of at least 4x its largest
 * frame. With --config, the file the runs used: every other key of it is
 * kept, its max_capacity caps, and its sections no run recorded are written
 * as they are. Prints a before/after table: the configured capacity, the
 * capacity the runs started with and reached, the in-allocation growths the
 * tuned capacity would have avoided, and what it costs in memory. Numbers in
 * the CSVs may be anything up to 2^64 - 1: sums saturate, and a capacity past
 * what a config takes (2^28) is capped with a warning, never wrapped.
 *
 * Exit codes: 0 written; 2 bad arguments, an unreadable or malformed CSV or
 * --config (messages "file:line: problem"; a FIFO, device or directory is
 * "file: not a regular file"), runs without a pool, an --out that is not a
 * regular file or is the same file as an input: nothing written; 1 the
 * output could not be written ("FILE: REASON"; an existing FILE stays as it
 * was) or memory ran out ("out of memory", nothing written). The file is
 * written whole or not at all (framemem/file.h). Runs and pools are
 * engine/ds.h arrays and maps: any number of each.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ds.h"
#include "framemem/config.h"
#include "framemem/file.h"
#include "framemem/telemetry.h"

/* One pool over every run. */
typedef struct tune_pool {
    char name[FM_TELEMETRY_NAME_MAX];
    uint64_t item_size;
    uint64_t chunk_items;     /* from a run where framemem's pool served it */
    bool chunk_known;
    uint64_t first_capacity;  /* capacity at the end of the first frame recorded */
    uint64_t largest_capacity;
    uint64_t peak_live;
    uint64_t grow_events, grow_ns; /* in-allocation growths over every run */
    uint32_t runs;
    uint32_t configured;      /* --config's initial_capacity (0: not set) */
    uint32_t max_capacity;    /* --config's max_capacity (0: none) */
} tune_pool;

/* Pools by name, in the order the runs first name them. */
typedef struct tune_entry {
    char *key;
    tune_pool value;
} tune_entry;

static void usage(FILE *f) {
    fprintf(f, "usage: fm-tune [--headroom H] [--config CURRENT.ini] --out FILE.ini RUN.csv...\n"
               "  --headroom H  capacity = highest live x H, whole chunks (default 1.25,\n"
               "                1 to 16)\n"
               "  --config F    the config the runs used (default: none); its other\n"
               "                settings are kept\n"
               "  --out FILE    the pool config to write (framemem/config.h format); it\n"
               "                may not be an input\n"
               "exit codes: 0 written; 1 FILE could not be written (an existing one is\n"
               "kept as it was) or memory ran out; 2 bad arguments, an unreadable or\n"
               "malformed input, or an --out that is not a regular file or is an input\n"
               "(nothing written)\n");
}

/* Sums over every frame of every run: the numbers come from files. */
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* The pool of that name, added (zeroed) when new; NULL when out of memory. */
static tune_pool *find_pool(tune_entry **pools, const char *name) {
    ptrdiff_t at = ENG_SH_GETI(*pools, name);
    if (at < 0) {
        tune_pool p = {0};
        snprintf(p.name, sizeof p.name, "%s", name);
        if (!ENG_SH_PUT(*pools, name, p, NULL)) return NULL;
        at = ENG_SH_GETI(*pools, name);
    }
    return &(*pools)[at].value;
}

/* Folds one run into the pools; false when out of memory. */
static bool add_run(const fm_telemetry *t, tune_entry **pools) {
    uint32_t frames = fm_telemetry_frame_count(t);
    for (uint32_t s = 0; s < fm_telemetry_source_count(t); s++) {
        const fm_telemetry_source *info = fm_telemetry_get_source(t, s);
        if (info->kind != FM_TELEMETRY_POOL) continue;
        tune_pool *p = find_pool(pools, info->name);
        if (!p) return false;
        if (info->item_size > p->item_size) p->item_size = info->item_size;
        /* A malloc-backed source reports chunk_items 1: not the pool's. */
        if (info->backend == FM_TELEMETRY_BACKEND_POOL && info->chunk_items > p->chunk_items) {
            p->chunk_items = info->chunk_items;
            p->chunk_known = true;
        }
        for (uint32_t f = 0; f < frames; f++) {
            const fm_telemetry_sample *x = fm_telemetry_get_sample(t, f, s);
            if (f == 0 && p->runs == 0) p->first_capacity = x->capacity;
            if (x->capacity > p->largest_capacity) p->largest_capacity = x->capacity;
            if (x->live > p->peak_live) p->peak_live = x->live;
            if (x->peak_live > p->peak_live) p->peak_live = x->peak_live;
            p->grow_events = sat_add(p->grow_events, x->grow_events);
            p->grow_ns = sat_add(p->grow_ns, x->grow_ns);
        }
        p->runs++;
    }
    return true;
}


static void print_table(const tune_entry *pools, double headroom, size_t runs) {
    printf("fm-tune: %zu run%s, headroom %.2f\n\n", runs, runs == 1 ? "" : "s", headroom);
    printf("| pool | item B | chunk items | configured capacity | capacity at first frame | "
           "largest capacity | peak live | tuned capacity | in-allocation growths avoided | "
           "their time µs | memory tuned KiB | vs largest KiB |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (ptrdiff_t i = 0; i < shlen(pools); i++) {
        const tune_pool *p = &pools[i].value;
        /* What fm_config_write_tuned_runs writes for the pool. */
        fm_config_tuned why;
        uint64_t cap = fm_config_tuned_capacity(p->peak_live, headroom,
                                                p->chunk_known ? p->chunk_items : 1,
                                                p->max_capacity, &why);
        double kib = (double)cap * (double)p->item_size / 1024.0;
        if (why == FM_CONFIG_TUNED_LIMIT)
            fprintf(stderr, "fm-tune: warning: pool '%s': peak live %llu x %.2f is more than "
                            "initial_capacity takes: capped at %llu\n",
                    p->name, (unsigned long long)p->peak_live, headroom, (unsigned long long)cap);
        double delta = ((double)cap - (double)p->largest_capacity) * (double)p->item_size / 1024.0;
        char chunk[32];
        if (p->chunk_known)
            snprintf(chunk, sizeof chunk, "%llu", (unsigned long long)p->chunk_items);
        else
            snprintf(chunk, sizeof chunk, "? (malloc)");
        char configured[48];
        if (p->configured)
            snprintf(configured, sizeof configured, "%u", p->configured);
        else
            snprintf(configured, sizeof configured, "- (the program's)");
        printf("| %s | %llu | %s | %s | %llu | %llu | %llu | %llu%s | %llu | %.1f | %.1f | %+.1f |\n",
               p->name, (unsigned long long)p->item_size, chunk, configured,
               (unsigned long long)p->first_capacity, (unsigned long long)p->largest_capacity,
               (unsigned long long)p->peak_live, (unsigned long long)cap,
               why == FM_CONFIG_TUNED_MAX_CAPACITY ? " (max_capacity)"
               : why == FM_CONFIG_TUNED_LIMIT      ? " (the config's limit)"
                                                   : "",
               (unsigned long long)p->grow_events, (double)p->grow_ns / 1000.0, kib, delta);
    }
}

/* Reads every run, tunes and writes; the exit code. inputs: the CSV paths. */
static int tune(const char **inputs, const char *config_path, const char *out, double headroom) {
    size_t ninputs = arrlenu(inputs);
    /* The output is checked against the inputs, and every input is read and
     * checked, before anything is written. */
    const char **ins = NULL;
    if (!ENG_ARR_RESERVE(ins, ninputs + 1, NULL)) {
        fprintf(stderr, "fm-tune: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < ninputs; i++) arrput(ins, inputs[i]);
    arrput(ins, config_path);
    char err[FM_FILE_PATH_MAX + 256] = "";
    bool outputs_ok = fm_file_check_outputs(&out, 1, ins, arrlenu(ins), err, sizeof err);
    arrfree(ins);
    if (!outputs_ok) {
        fprintf(stderr, "fm-tune: --out %s; nothing written\n", err);
        return 2;
    }
    fm_config *cfg = NULL;
    if (config_path) {
        cfg = fm_config_load(config_path, NULL, err, sizeof err);
        if (!cfg || fm_config_problem_count(cfg)) {
            fprintf(stderr, "fm-tune: --config %s:\n%s\n", config_path,
                    cfg ? fm_config_problems(cfg) : err);
            fm_config_destroy(cfg);
            return 2;
        }
    }
    tune_entry *pools = NULL;
    fm_telemetry **runs = NULL;
    int rc = 0;
    if (!ENG_ARR_RESERVE(runs, ninputs, NULL)) {
        fprintf(stderr, "fm-tune: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < ninputs; i++) {
        err[0] = '\0';
        fm_telemetry *t = fm_telemetry_read_csv(inputs[i], err, sizeof err);
        if (!t) {
            fprintf(stderr, "fm-tune: %s\n", err[0] ? err : inputs[i]);
            rc = 2;
            goto done;
        }
        arrput(runs, t); /* into the room reserved: cannot fail */
        if (!add_run(t, &pools)) {
            fprintf(stderr, "fm-tune: %s: out of memory\n", inputs[i]);
            rc = 1;
            goto done;
        }
    }
    if (shlen(pools) == 0) {
        fprintf(stderr, "fm-tune: no pool in the runs; nothing to tune\n");
        rc = 2;
        goto done;
    }
    /* The --config's values: the "before" column and the cap. */
    for (ptrdiff_t i = 0; cfg && i < shlen(pools); i++) {
        tune_pool *p = &pools[i].value;
        fm_pool_desc d = {.name = p->name, .item_size = 1};
        if (fm_config_apply_pool(cfg, &d) > 0) {
            p->configured = d.initial_capacity;
            p->max_capacity = d.max_capacity;
        }
    }

    print_table(pools, headroom, ninputs);
    err[0] = '\0';
    if (!fm_config_write_tuned_runs(cfg, (const fm_telemetry *const *)runs,
                                    (uint32_t)arrlenu(runs), headroom, out, err, sizeof err)) {
        fprintf(stderr, "fm-tune: --out %s\n", err);
        rc = 1;
        goto done;
    }
    printf("\nwrote %s\n", out);
done:
    for (size_t i = 0; i < arrlenu(runs); i++) fm_telemetry_destroy(runs[i]);
    arrfree(runs);
    shfree(pools);
    fm_config_destroy(cfg);
    return rc;
}

int main(int argc, char **argv) {
    const char *out = NULL, *config_path = NULL;
    double headroom = 1.25;
    const char **inputs = NULL;
    int rc = -1;

    for (int i = 1; i < argc && rc < 0; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(a, "--out") || !strcmp(a, "-o")) && next) {
            out = next;
            i++;
        } else if (!strcmp(a, "--config") && next) {
            config_path = next;
            i++;
        } else if (!strcmp(a, "--headroom") && next) {
            char *end = NULL;
            headroom = strtod(next, &end);
            if (end == next || *end || !isfinite(headroom) || headroom < 1.0 || headroom > 16.0) {
                fprintf(stderr, "fm-tune: --headroom needs a number from 1 to 16, got '%s'\n",
                        next);
                rc = 2;
            }
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            rc = 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "fm-tune: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            rc = 2;
        } else if (!ENG_ARR_RESERVE(inputs, 1, NULL)) {
            fprintf(stderr, "fm-tune: out of memory\n");
            rc = 1;
        } else {
            arrput(inputs, argv[i]);
        }
    }
    if (rc < 0 && (!out || !arrlenu(inputs))) {
        fprintf(stderr, "fm-tune: %s\n", !out ? "--out FILE.ini is required"
                                              : "no telemetry CSV given");
        usage(stderr);
        rc = 2;
    }
    if (rc >= 0) { /* the command line alone decided */
        arrfree(inputs);
        return rc;
    }
    rc = tune(inputs, config_path, out, headroom);
    arrfree(inputs);
    char out_err[256];
    if (!fm_file_stdout_ok(out_err, sizeof out_err)) {
        fprintf(stderr, "fm-tune: %s\n", out_err);
        if (!rc) rc = 1;
    }
    return rc;
}
