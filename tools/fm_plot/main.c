/*
 * fm_plot/main.c: fm-plot, a telemetry CSV as a PNG.
 *
 *   fm-plot --out FILE.png [--width W] [--height H] [--frames A:B] RUN.csv
 *
 * Draws the demo's overlay (framemem_overlay: allocation time per frame
 * stacked by pool, in-allocation growth in the growth colour with the
 * pool's name, grow-ahead, frame split, pool table) for the frames of the
 * CSV, or those numbered A to B inclusive (either side may be left out),
 * with SDL's software renderer over a surface, and writes it as PNG
 * (overlay/png.h: whole or not at all, mode 0644 less the umask). No display
 * needed.
 *
 * Exit codes: 0 written; 2 bad arguments, an unreadable or malformed CSV
 * ("file:line: problem"; a FIFO, device or directory is "file: not a
 * regular file"), an --out that is not a regular file or is the CSV, or no
 * frame in A:B: nothing written; 1 drawing or writing failed ("FILE:
 * REASON"; an existing FILE stays as it was).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <SDL.h>

#include "framemem/telemetry.h"
#include "framemem/file.h"
#include "overlay/overlay.h"
#include "overlay/png.h"

enum { PLOT_MIN_SIDE = 64, PLOT_MAX_SIDE = 8192 };

static void usage(FILE *f) {
    fprintf(f, "usage: fm-plot --out FILE.png [--width W] [--height H] [--frames A:B] RUN.csv\n"
               "  --out FILE.png  the picture to write\n"
               "  --width W       pixels, %d to %d (default 1280)\n"
               "  --height H      pixels, %d to %d (default 720)\n"
               "  --frames A:B    frame numbers A to B inclusive (A: or :B leave a side open;\n"
               "                  default: every frame of the file)\n"
               "exit codes: 0 written; 1 drawing or writing failed (an existing FILE.png is\n"
               "kept as it was); 2 bad arguments, an unreadable or malformed CSV, no frame\n"
               "in A:B, or an --out that is not a regular file or is the CSV (nothing\n"
               "written)\n",
            PLOT_MIN_SIDE, PLOT_MAX_SIDE, PLOT_MIN_SIDE, PLOT_MAX_SIDE);
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || *s < '0' || *s > '9') return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

static bool parse_side(const char *s, int *out) {
    uint64_t v;
    if (!parse_u64(s, &v) || v < PLOT_MIN_SIDE || v > PLOT_MAX_SIDE) return false;
    *out = (int)v;
    return true;
}

/* "A:B", "A:", ":B" into [lo, hi]; false when malformed or A > B. */
static bool parse_range(const char *s, uint64_t *lo, uint64_t *hi) {
    const char *colon = strchr(s, ':');
    if (!colon) return false;
    char a[32], b[32];
    size_t la = (size_t)(colon - s), lb = strlen(colon + 1);
    if (la >= sizeof a || lb >= sizeof b || (la == 0 && lb == 0)) return false;
    memcpy(a, s, la);
    a[la] = '\0';
    memcpy(b, colon + 1, lb + 1);
    *lo = 0;
    *hi = UINT64_MAX;
    if (la && !parse_u64(a, lo)) return false;
    if (lb && !parse_u64(b, hi)) return false;
    return *lo <= *hi;
}

/* A telemetry object holding only the frames of t numbered lo..hi, with t's
 * sources; NULL (message printed) when none is in range or out of memory. */
static fm_telemetry *select_frames(const fm_telemetry *t, uint64_t lo, uint64_t hi,
                                    const char *path) {
    uint32_t n = fm_telemetry_frame_count(t), first = UINT32_MAX, count = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t f = fm_telemetry_get_frame(t, i)->frame;
        if (f < lo || f > hi) continue;
        if (first == UINT32_MAX) first = i;
        count++;
    }
    if (!count) {
        fprintf(stderr, "fm-plot: %s: no frame in %" PRIu64 ":%" PRIu64 " (the file holds frames %" PRIu64 " to %" PRIu64 ")\n",
                path, lo, hi, fm_telemetry_get_frame(t, 0)->frame,
                fm_telemetry_get_frame(t, n - 1)->frame);
        return NULL;
    }
    uint32_t sources = fm_telemetry_source_count(t);
    fm_telemetry *sub = fm_telemetry_create(&(fm_telemetry_desc){
        .frames = count, .max_sources = sources ? sources : 1});
    fm_telemetry_sample *row = calloc(sources ? sources : 1, sizeof *row);
    if (!sub || !row) {
        fprintf(stderr, "fm-plot: out of memory\n");
        fm_telemetry_destroy(sub);
        free(row);
        return NULL;
    }
    for (uint32_t s = 0; s < sources; s++) {
        const fm_telemetry_source *info = fm_telemetry_get_source(t, s);
        fm_telemetry_add_source(sub, info->name, info->kind, info->item_size, info->chunk_items);
        fm_telemetry_set_source_shape(sub, s, info->backend, info->item_size, info->chunk_items);
        fm_telemetry_set_source_limits(sub, s, info->soft_limit, info->hard_limit);
    }
    /* Frames in the file are in order, so the range is contiguous. */
    for (uint32_t i = first; i < first + count; i++) {
        for (uint32_t s = 0; s < sources; s++) row[s] = *fm_telemetry_get_sample(t, i, s);
        fm_telemetry_push(sub, fm_telemetry_get_frame(t, i), row);
    }
    free(row);
    return sub;
}

/* Draws t onto a w x h RGBA surface and writes it to out as PNG. */
static int render_png(const fm_telemetry *t, int w, int h, const char *out, const char *title) {
    int rc = 1;
    SDL_Surface *surface = SDL_CreateRGBSurfaceWithFormat(0, w, h, 32, SDL_PIXELFORMAT_RGBA32);
    SDL_Renderer *r = surface ? SDL_CreateSoftwareRenderer(surface) : NULL;
    ovl_batch *b = ovl_batch_create(OVL_BATCH_QUADS);
    if (!surface || !r || !b) {
        fprintf(stderr, "fm-plot: cannot set up drawing: %s\n",
                !b ? "out of memory" : SDL_GetError());
        goto done;
    }
    SDL_SetRenderDrawColor(r, 16, 16, 20, 255);
    SDL_RenderClear(r);
    SDL_FRect area = {0, 0, (float)w, (float)h};
    ovl_desc desc = {.frames = fm_telemetry_frame_count(t), .title = title,
                     .background_alpha = 255};
    if (!ovl_draw(b, r, &area, t, &desc)) {
        fprintf(stderr, "fm-plot: drawing failed: %s\n", SDL_GetError());
        goto done;
    }
    SDL_RenderPresent(r);

    /* Opaque output: the picture is what the overlay drew over the backdrop. */
    unsigned char *px = surface->pixels;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) px[(size_t)y * (size_t)surface->pitch + (size_t)x * 4 + 3] = 255;

    char err[FM_FILE_PATH_MAX + 256];
    if (!ovl_png_write(out, px, w, h, surface->pitch, err, sizeof err)) {
        fprintf(stderr, "fm-plot: --out %s\n", err);
        goto done;
    }
    rc = 0;
done:
    ovl_batch_destroy(b);
    if (r) SDL_DestroyRenderer(r);
    if (surface) SDL_FreeSurface(surface);
    return rc;
}

int main(int argc, char **argv) {
    const char *out = NULL, *csv = NULL;
    int width = 1280, height = 720;
    uint64_t lo = 0, hi = UINT64_MAX;
    bool ranged = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(a, "--out") || !strcmp(a, "-o")) && next) {
            out = next;
            i++;
        } else if (!strcmp(a, "--width") || !strcmp(a, "--height")) {
            if (!parse_side(next, a[2] == 'w' ? &width : &height)) {
                fprintf(stderr, "fm-plot: %s needs a whole number from %d to %d\n", a,
                        PLOT_MIN_SIDE, PLOT_MAX_SIDE);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--frames")) {
            if (!next || !parse_range(next, &lo, &hi)) {
                fprintf(stderr, "fm-plot: --frames needs A:B, A: or :B with whole numbers "
                                "A <= B, got '%s'\n",
                        next ? next : "");
                return 2;
            }
            ranged = true;
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "fm-plot: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (csv) {
            fprintf(stderr, "fm-plot: one CSV at a time ('%s' and '%s')\n", csv, a);
            return 2;
        } else {
            csv = a;
        }
    }
    if (!out || !csv) {
        fprintf(stderr, "fm-plot: %s\n", !out ? "--out FILE.png is required" : "no CSV given");
        usage(stderr);
        return 2;
    }

    char err[FM_FILE_PATH_MAX + 256] = "";
    if (!fm_file_check_outputs(&out, 1, &csv, 1, err, sizeof err)) {
        fprintf(stderr, "fm-plot: --out %s; nothing written\n", err);
        return 2;
    }
    fm_telemetry *t = fm_telemetry_read_csv(csv, err, sizeof err);
    if (!t) {
        fprintf(stderr, "fm-plot: %s\n", err[0] ? err : csv);
        return 2;
    }
    fm_telemetry *sub = select_frames(t, lo, hi, csv);
    if (!sub) {
        fm_telemetry_destroy(t);
        return 2;
    }
    char title[256];
    uint32_t n = fm_telemetry_frame_count(sub);
    snprintf(title, sizeof title, "fm-plot %s: frames %" PRIu64 " to %" PRIu64 "%s", csv,
             fm_telemetry_get_frame(sub, 0)->frame, fm_telemetry_get_frame(sub, n - 1)->frame,
             ranged ? " (--frames)" : "");
    int rc = render_png(sub, width, height, out, title);
    fm_telemetry_destroy(sub);
    fm_telemetry_destroy(t);
    if (rc == 0) printf("wrote %s (%dx%d, %u frames)\n", out, width, height, n);
    SDL_Quit();
    if (!fm_file_stdout_ok(err, sizeof err)) {
        fprintf(stderr, "fm-plot: %s\n", err);
        if (!rc) rc = 1;
    }
    return rc;
}
