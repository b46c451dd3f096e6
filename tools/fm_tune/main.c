/*
 * fm_tune/main.c: fm-tune, pool capacities from recorded runs.
 *
 *   fm-tune [--headroom H] [--config CURRENT.ini] --out FILE.ini RUN.csv...
 *
 * Reads telemetry CSVs (the engine's or the demo's, eng_telemetry_read_csv)
 * and writes the engine's pool config (engine/config.h) with
 * eng_config_write_tuned: per pool, initial_capacity = the highest live
 * count of any frame of any run (the larger of end-of-frame live and the
 * frame's peak_live) times the headroom, rounded up to whole chunks of the
 * pool's chunk_items (capped at max_capacity): the capacity at which none of
 * those runs would have grown inside an allocation call. Every other setting
 * comes from the current config: the engine's defaults, with --config the
 * file the runs used on top. Prints a before/after table: the configured
 * capacity, the capacity the runs started with and reached, the
 * in-allocation growths the tuned capacity would have avoided, and what it
 * costs in memory. Pools of the runs that the config does not know are
 * reported and not written (the engine would refuse them). Numbers in the
 * CSVs may be anything up to 2^64 - 1: sums saturate, and a capacity past
 * what a config takes (2^28) is capped with a warning, never wrapped.
 *
 * Exit codes: 0 written; 2 bad arguments, an unreadable or malformed CSV or
 * --config (messages "file:line: problem"; a FIFO, device or directory is
 * "file: not a regular file"), an --out that is not a regular file or is the
 * same file as an input: nothing written; 1 the output could not be written
 * ("FILE: REASON"; an existing FILE stays as it was) or memory ran out
 * ("out of memory", nothing written). The file is written whole or not at
 * all (framemem/file.h). Runs and pools are engine/ds.h arrays and maps: any
 * number of each.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/config.h"
#include "engine/ds.h"
#include "engine/telemetry.h"
#include "framemem/file.h"

/* One pool over every run. */
typedef struct tune_pool {
    char name[ENG_NAME_MAX];
    uint64_t item_size;
    uint64_t chunk_items;     /* from a run where the pool backend served it */
    bool chunk_known;
    uint64_t first_capacity;  /* capacity at the end of the first frame recorded */
    uint64_t largest_capacity;
    uint64_t peak_live;
    uint64_t grow_events, grow_ns; /* in-allocation growths over every run */
    uint32_t runs;
    const eng_pool_config *config; /* NULL: the config has no such pool */
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
               "  --config F    the config the runs used, on top of the engine's defaults\n"
               "                (default: the defaults); its other settings are kept\n"
               "  --out FILE    the pool config to write (engine/config.h format); it may\n"
               "                not be an input\n"
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
static bool add_run(const eng_telemetry *t, tune_entry **pools) {
    uint32_t frames = eng_telemetry_frame_count(t);
    for (uint32_t s = 0; s < eng_telemetry_source_count(t); s++) {
        const eng_source_info *info = eng_telemetry_source(t, s);
        if (info->kind != ENG_SOURCE_POOL) continue;
        tune_pool *p = find_pool(pools, info->name);
        if (!p) return false;
        if (info->item_size > p->item_size) p->item_size = info->item_size;
        /* A malloc-backed source reports chunk_items 1: not the pool's. */
        if (info->backend == ENG_BACKEND_POOL && info->chunk_items > p->chunk_items) {
            p->chunk_items = info->chunk_items;
            p->chunk_known = true;
        }
        for (uint32_t f = 0; f < frames; f++) {
            const eng_sample *x = eng_telemetry_sample(t, f, s);
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
        /* What eng_config_write_tuned writes for the pool. */
        eng_tuned_cap why;
        uint64_t cap = eng_config_tuned_capacity(p->config, p->peak_live, headroom,
                                                 p->chunk_known ? p->chunk_items : 1, &why);
        double kib = (double)cap * (double)p->item_size / 1024.0;
        if (why == ENG_TUNED_CONFIG_LIMIT)
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
        if (p->config)
            snprintf(configured, sizeof configured, "%u", p->config->initial_capacity);
        else
            snprintf(configured, sizeof configured, "- (not in the config: not written)");
        printf("| %s | %llu | %s | %s | %llu | %llu | %llu | %llu%s | %llu | %.1f | %.1f | %+.1f |\n",
               p->name, (unsigned long long)p->item_size, chunk, configured,
               (unsigned long long)p->first_capacity, (unsigned long long)p->largest_capacity,
               (unsigned long long)p->peak_live, (unsigned long long)cap,
               why == ENG_TUNED_MAX_CAPACITY ? " (max_capacity)"
               : why == ENG_TUNED_CONFIG_LIMIT ? " (the config's limit)"
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
    static eng_config cfg;
    eng_config_defaults(&cfg);
    if (config_path) {
        static eng_config_diag diag;
        if (eng_config_load(&cfg, config_path, &diag) != 0) {
            fprintf(stderr, "fm-tune: --config %s:\n%s\n", config_path, diag.text);
            return 2;
        }
    }
    tune_entry *pools = NULL;
    eng_telemetry **runs = NULL;
    int rc = 0;
    if (!ENG_ARR_RESERVE(runs, ninputs, NULL)) {
        fprintf(stderr, "fm-tune: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < ninputs; i++) {
        err[0] = '\0';
        eng_telemetry *t = eng_telemetry_read_csv(inputs[i], err, sizeof err);
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
    size_t known = 0;
    for (ptrdiff_t i = 0; i < shlen(pools); i++) {
        tune_pool *p = &pools[i].value;
        p->config = eng_config_pool(&cfg, p->name);
        if (p->config) known++;
        else
            fprintf(stderr, "fm-tune: warning: pool '%s' of the runs is not in the %s: not "
                            "written (the engine would refuse it)\n",
                    p->name, config_path ? "config" : "engine's config");
    }
    if (known == 0) {
        fprintf(stderr, "fm-tune: no pool of the runs is in the %s; nothing to tune\n",
                config_path ? "config" : "engine's config");
        rc = 2;
        goto done;
    }

    print_table(pools, headroom, ninputs);
    err[0] = '\0';
    if (!eng_config_write_tuned(&cfg, (const eng_telemetry *const *)runs, (uint32_t)arrlenu(runs),
                                headroom, out, err, sizeof err)) {
        fprintf(stderr, "fm-tune: --out %s\n", err);
        rc = 1;
        goto done;
    }
    printf("\nwrote %s\n", out);
done:
    for (size_t i = 0; i < arrlenu(runs); i++) eng_telemetry_destroy(runs[i]);
    arrfree(runs);
    shfree(pools);
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
