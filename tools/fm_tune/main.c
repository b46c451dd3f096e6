/*
 * fm_tune/main.c: fm-tune, pool capacities from recorded runs.
 *
 *   fm-tune [--headroom H] --out FILE.ini RUN.csv [RUN.csv ...]
 *
 * Reads telemetry CSVs (the engine's or the demo's, eng_telemetry_read_csv)
 * and writes a pool config in the engine's INI format (engine/config.h):
 * per pool, initial_capacity = the highest live count of any frame of any
 * run (the larger of the frame's end-of-frame live and its peak_live) times
 * the headroom, rounded up to whole chunks of the pool's chunk_items: the
 * capacity at which none of those runs would have grown inside an
 * allocation call. Prints a before/after table: the capacity the runs
 * started with and reached, the in-allocation growths that capacity would
 * have avoided, and what it costs in memory.
 *
 * Exit codes: 0 written; 2 bad arguments or an unreadable or malformed CSV
 * (message "file:line: problem"), nothing written; 1 the output could not be
 * written. The file is written to a temporary name beside it and renamed,
 * so it is never half-written.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/telemetry.h"

enum { TUNE_MAX_RUNS = 64, TUNE_MAX_POOLS = 64 };
#define TUNE_CAPACITY_LIMIT (1u << 28) /* engine/config.h: initial_capacity range */

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
} tune_pool;

static void usage(FILE *f) {
    fprintf(f, "usage: fm-tune [--headroom H] --out FILE.ini RUN.csv [RUN.csv ...]\n"
               "  --headroom H  capacity = highest live x H, whole chunks (default 1.25,\n"
               "                1 to 16)\n"
               "  --out FILE    the pool config to write (engine/config.h format)\n");
}

static tune_pool *find_pool(tune_pool *pools, uint32_t *n, const char *name) {
    for (uint32_t i = 0; i < *n; i++)
        if (!strcmp(pools[i].name, name)) return &pools[i];
    if (*n == TUNE_MAX_POOLS) return NULL;
    tune_pool *p = &pools[(*n)++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    return p;
}

/* Folds one run into the pools; false when there are too many pools. */
static bool add_run(const eng_telemetry *t, tune_pool *pools, uint32_t *npools) {
    uint32_t frames = eng_telemetry_frame_count(t);
    for (uint32_t s = 0; s < eng_telemetry_source_count(t); s++) {
        const eng_source_info *info = eng_telemetry_source(t, s);
        if (info->kind != ENG_SOURCE_POOL) continue;
        tune_pool *p = find_pool(pools, npools, info->name);
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
            p->grow_events += x->grow_events;
            p->grow_ns += x->grow_ns;
        }
        p->runs++;
    }
    return true;
}

static uint64_t tuned_capacity(const tune_pool *p, double headroom) {
    return eng_suggest_capacity(p->peak_live, headroom, p->chunk_known ? p->chunk_items : 1);
}

/* Writes the INI to a temporary file beside path, then renames it. */
static bool write_config(const char *path, const tune_pool *pools, uint32_t n, double headroom,
                         char **inputs, int ninputs) {
    size_t len = strlen(path) + 16;
    char *tmp = malloc(len);
    if (!tmp) {
        fprintf(stderr, "fm-tune: out of memory\n");
        return false;
    }
    snprintf(tmp, len, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "fm-tune: cannot write %s: %s\n", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return false;
    }
    fprintf(f, "; Pool capacities written by fm-tune (headroom %.2f) from:\n", headroom);
    for (int i = 0; i < ninputs; i++) fprintf(f, ";   %s\n", inputs[i]);
    fprintf(f, "; initial_capacity = highest live of any frame x headroom, in whole chunks:\n"
               "; none of those runs would have grown inside an allocation call.\n");
    for (uint32_t i = 0; i < n; i++) {
        const tune_pool *p = &pools[i];
        fprintf(f, "\n[pool.%s]\n", p->name);
        if (p->chunk_known)
            fprintf(f, "; peak live %llu x %.2f, chunks of %llu items; %llu in-allocation "
                       "growths in the runs\n",
                    (unsigned long long)p->peak_live, headroom,
                    (unsigned long long)p->chunk_items, (unsigned long long)p->grow_events);
        else
            fprintf(f, "; peak live %llu x %.2f; malloc backend in every run, so the chunk "
                       "size is unknown and the capacity is not rounded to chunks\n",
                    (unsigned long long)p->peak_live, headroom);
        fprintf(f, "initial_capacity = %llu\n", (unsigned long long)tuned_capacity(p, headroom));
    }
    bool ok = !ferror(f);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) ok = false;
    if (fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        fprintf(stderr, "fm-tune: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok;
}

static void print_table(const tune_pool *pools, uint32_t n, double headroom, int runs) {
    printf("fm-tune: %d run%s, headroom %.2f\n\n", runs, runs == 1 ? "" : "s", headroom);
    printf("| pool | item B | chunk items | capacity at first frame | largest capacity | peak "
           "live | tuned capacity | in-allocation growths avoided | their time µs | memory "
           "tuned KiB | vs largest KiB |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (uint32_t i = 0; i < n; i++) {
        const tune_pool *p = &pools[i];
        uint64_t cap = tuned_capacity(p, headroom);
        double kib = (double)(cap * p->item_size) / 1024.0;
        double delta = ((double)cap - (double)p->largest_capacity) * (double)p->item_size / 1024.0;
        char chunk[32];
        if (p->chunk_known)
            snprintf(chunk, sizeof chunk, "%llu", (unsigned long long)p->chunk_items);
        else
            snprintf(chunk, sizeof chunk, "? (malloc)");
        printf("| %s | %llu | %s | %llu | %llu | %llu | %llu | %llu | %.1f | %.1f | %+.1f |\n",
               p->name, (unsigned long long)p->item_size, chunk,
               (unsigned long long)p->first_capacity, (unsigned long long)p->largest_capacity,
               (unsigned long long)p->peak_live, (unsigned long long)cap,
               (unsigned long long)p->grow_events, (double)p->grow_ns / 1000.0, kib, delta);
    }
}

int main(int argc, char **argv) {
    const char *out = NULL;
    double headroom = 1.25;
    char *inputs[TUNE_MAX_RUNS];
    int ninputs = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(a, "--out") || !strcmp(a, "-o")) && next) {
            out = next;
            i++;
        } else if (!strcmp(a, "--headroom") && next) {
            char *end = NULL;
            headroom = strtod(next, &end);
            if (end == next || *end || !isfinite(headroom) || headroom < 1.0 || headroom > 16.0) {
                fprintf(stderr, "fm-tune: --headroom needs a number from 1 to 16, got '%s'\n",
                        next);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "fm-tune: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            if (ninputs == TUNE_MAX_RUNS) {
                fprintf(stderr, "fm-tune: at most %d CSV files\n", TUNE_MAX_RUNS);
                return 2;
            }
            inputs[ninputs++] = argv[i];
        }
    }
    if (!out || ninputs == 0) {
        fprintf(stderr, "fm-tune: %s\n", !out ? "--out FILE.ini is required"
                                              : "no telemetry CSV given");
        usage(stderr);
        return 2;
    }

    /* Every input is read and checked before anything is written. */
    tune_pool pools[TUNE_MAX_POOLS];
    uint32_t npools = 0;
    for (int i = 0; i < ninputs; i++) {
        char err[512] = "";
        eng_telemetry *t = eng_telemetry_read_csv(inputs[i], err, sizeof err);
        if (!t) {
            fprintf(stderr, "fm-tune: %s\n", err[0] ? err : inputs[i]);
            return 2;
        }
        bool ok = add_run(t, pools, &npools);
        eng_telemetry_destroy(t);
        if (!ok) {
            fprintf(stderr, "fm-tune: %s: more than %d pools over the runs\n", inputs[i],
                    TUNE_MAX_POOLS);
            return 2;
        }
    }
    if (npools == 0) {
        fprintf(stderr, "fm-tune: no pool in %s%s (arenas are not tuned)\n", inputs[0],
                ninputs > 1 ? " or the other runs" : "");
        return 2;
    }
    for (uint32_t i = 0; i < npools; i++) {
        uint64_t cap = tuned_capacity(&pools[i], headroom);
        if (cap > TUNE_CAPACITY_LIMIT) {
            fprintf(stderr, "fm-tune: pool %s: tuned capacity %llu is above the config's limit "
                            "of %u items\n",
                    pools[i].name, (unsigned long long)cap, TUNE_CAPACITY_LIMIT);
            return 2;
        }
    }

    print_table(pools, npools, headroom, ninputs);
    if (!write_config(out, pools, npools, headroom, inputs, ninputs)) return 1;
    printf("\nwrote %s\n", out);
    return 0;
}
