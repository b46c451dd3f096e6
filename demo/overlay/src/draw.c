/*
 * draw.c: quads in, one SDL_RenderGeometry call out.
 */
#include "overlay/draw.h"

#include <stdlib.h>
#include <string.h>

/* stb_easy_font is a header of static functions; we use only some of them. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb_easy_font.h>
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* stb_easy_font's vertex: position (z unused) and RGBA bytes. */
typedef struct easy_vertex {
    float x, y, z;
    unsigned char rgba[4];
} easy_vertex;

enum {
    DEFAULT_QUADS = 16384,
    /* One chunk of text handed to stb_easy_font at a time: a glyph is at most
     * about 20 quads, so 96 characters fit the scratch buffer. */
    TEXT_CHUNK = 96,
    TEXT_SCRATCH_QUADS = TEXT_CHUNK * 24,
};

struct ovl_batch {
    SDL_Vertex *vertices;
    int *indices;
    int max_quads, quads;
    int dropped, draw_calls;
    bool translucent; /* a queued quad has alpha < 255 */
    bool not_rect;    /* a queued quad is not an axis-aligned rectangle */
    SDL_FRect *rects; /* max_quads: the fill-rectangle path's scratch */
    SDL_Renderer *target;
    easy_vertex *scratch; /* stb_easy_font output, TEXT_SCRATCH_QUADS quads */
};

/* ------------------------------------------------------------ the batch */

ovl_batch *ovl_batch_create(int max_quads) {
    if (max_quads <= 0) max_quads = DEFAULT_QUADS;
    ovl_batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->max_quads = max_quads;
    b->vertices = malloc(sizeof *b->vertices * 4 * (size_t)max_quads);
    b->indices = malloc(sizeof *b->indices * 6 * (size_t)max_quads);
    b->scratch = malloc(sizeof *b->scratch * 4 * TEXT_SCRATCH_QUADS);
    b->rects = malloc(sizeof *b->rects * (size_t)max_quads);
    if (!b->vertices || !b->indices || !b->scratch || !b->rects) {
        ovl_batch_destroy(b);
        return NULL;
    }
    /* The index pattern never changes: two triangles per quad. */
    for (int q = 0; q < max_quads; q++) {
        int *ix = b->indices + 6 * q, v = 4 * q;
        ix[0] = v; ix[1] = v + 1; ix[2] = v + 2;
        ix[3] = v; ix[4] = v + 2; ix[5] = v + 3;
    }
    return b;
}

void ovl_batch_destroy(ovl_batch *b) {
    if (!b) return;
    free(b->vertices);
    free(b->indices);
    free(b->scratch);
    free(b->rects);
    free(b);
}

static bool same_colour(SDL_Color a, SDL_Color c) {
    return a.r == c.r && a.g == c.g && a.b == c.b && a.a == c.a;
}

/* Runs of one colour in queue order (quads 0..n-1). */
static int colour_runs(const ovl_batch *b, int n) {
    int runs = 0;
    for (int q = 0; q < n; q++)
        runs += q == 0 || !same_colour(b->vertices[4 * q].color, b->vertices[4 * (q - 1)].color);
    return runs;
}

/* SDL's software renderer rasterises triangles at several ns a pixel but
 * fills opaque rectangles at memset speed. When every quad is an opaque
 * rectangle, each run of one colour becomes one SDL_RenderFillRectsF call:
 * queue order is kept, so the picture is the same. */
static bool flush_as_rects(ovl_batch *b, SDL_Renderer *r, int n, int runs) {
    bool ok = true;
    SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_NONE);
    for (int q = 0; q < n; q++) {
        const SDL_Vertex *v = b->vertices + 4 * q;
        b->rects[q] = (SDL_FRect){v[0].position.x, v[0].position.y, v[2].position.x - v[0].position.x,
                                  v[2].position.y - v[0].position.y};
    }
    for (int start = 0; start < n;) {
        int end = start + 1;
        SDL_Color c = b->vertices[4 * start].color;
        while (end < n && same_colour(b->vertices[4 * end].color, c)) end++;
        SDL_SetRenderDrawColor(r, c.r, c.g, c.b, 255);
        ok &= SDL_RenderFillRectsF(r, b->rects + start, end - start) == 0;
        start = end;
    }
    b->draw_calls += runs;
    return ok;
}

bool ovl_batch_flush(ovl_batch *b, SDL_Renderer *r) {
    if (b->quads == 0) return true;
    int n = b->quads;
    bool translucent = b->translucent, not_rect = b->not_rect;
    b->quads = 0;
    b->translucent = b->not_rect = false;
    SDL_RendererInfo info;
    bool software = SDL_GetRendererInfo(r, &info) == 0 && (info.flags & SDL_RENDERER_SOFTWARE);
    if (software && !translucent && !not_rect) {
        /* Worth it only for long runs (overlay bars and text, not a scene of
         * individually coloured sprites). */
        int runs = colour_runs(b, n);
        if (runs * 8 <= n) return flush_as_rects(b, r, n, runs);
    }
    /* All opaque: no blending, which a software renderer does much faster. */
    SDL_SetRenderDrawBlendMode(r, translucent ? SDL_BLENDMODE_BLEND : SDL_BLENDMODE_NONE);
    b->draw_calls++;
    return SDL_RenderGeometry(r, NULL, b->vertices, 4 * n, b->indices, 6 * n) == 0;
}

void ovl_batch_set_target(ovl_batch *b, SDL_Renderer *r) { b->target = r; }
int ovl_batch_dropped(const ovl_batch *b) { return b->dropped; }
int ovl_batch_draw_calls(const ovl_batch *b) { return b->draw_calls; }

/* Room for one more quad: flushes into the target when full. */
static SDL_Vertex *quad_slot(ovl_batch *b) {
    if (b->quads == b->max_quads) {
        if (!b->target) {
            b->dropped++;
            return NULL;
        }
        ovl_batch_flush(b, b->target);
    }
    return b->vertices + 4 * b->quads++;
}

static void put_quad(ovl_batch *b, const float xy[8], SDL_Color c) {
    SDL_Vertex *v = quad_slot(b);
    if (!v) return;
    b->translucent |= c.a != 255;
    /* (x0,y0) (x1,y0) (x1,y1) (x0,y1) with x0 <= x1, y0 <= y1: a rectangle. */
    b->not_rect |= !(xy[1] == xy[3] && xy[2] == xy[4] && xy[5] == xy[7] && xy[6] == xy[0] &&
                     xy[0] <= xy[2] && xy[1] <= xy[5]);
    for (int i = 0; i < 4; i++) {
        v[i].position.x = xy[2 * i];
        v[i].position.y = xy[2 * i + 1];
        v[i].color = c;
        v[i].tex_coord.x = 0;
        v[i].tex_coord.y = 0;
    }
}

/* ------------------------------------------------------------ shapes */

void ovl_rect(ovl_batch *b, float x, float y, float w, float h, SDL_Color c) {
    if (w <= 0 || h <= 0) return;
    const float xy[8] = {x, y, x + w, y, x + w, y + h, x, y + h};
    put_quad(b, xy, c);
}

void ovl_rect_outline(ovl_batch *b, float x, float y, float w, float h, float t, SDL_Color c) {
    ovl_rect(b, x, y, w, t, c);
    ovl_rect(b, x, y + h - t, w, t, c);
    ovl_rect(b, x, y + t, t, h - 2 * t, c);
    ovl_rect(b, x + w - t, y + t, t, h - 2 * t, c);
}

void ovl_line(ovl_batch *b, float x0, float y0, float x1, float y1, float t, SDL_Color c) {
    float dx = x1 - x0, dy = y1 - y0;
    float len = SDL_sqrtf(dx * dx + dy * dy);
    if (len <= 0) {
        ovl_rect(b, x0 - t / 2, y0 - t / 2, t, t, c);
        return;
    }
    /* Half-thickness normal. */
    float nx = -dy / len * t / 2, ny = dx / len * t / 2;
    const float xy[8] = {x0 + nx, y0 + ny, x1 + nx, y1 + ny, x1 - nx, y1 - ny, x0 - nx, y0 - ny};
    put_quad(b, xy, c);
}

/* ------------------------------------------------------------ text */

/* Width of n characters of one line at scale 1 (stb_easy_font advances). */
static float run_width(const char *s, int n) {
    char buf[TEXT_CHUNK + 1];
    float w = 0;
    while (n > 0) {
        int k = n < TEXT_CHUNK ? n : TEXT_CHUNK;
        memcpy(buf, s, (size_t)k);
        buf[k] = 0;
        w += (float)stb_easy_font_width(buf);
        s += k;
        n -= k;
    }
    return w;
}

float ovl_text_width(const char *text, float scale) {
    float widest = 0;
    while (*text) {
        const char *nl = strchr(text, '\n');
        int n = nl ? (int)(nl - text) : (int)strlen(text);
        float w = run_width(text, n);
        if (w > widest) widest = w;
        text += n + (nl ? 1 : 0);
    }
    return widest * scale;
}

float ovl_text(ovl_batch *b, float x, float y, float scale, SDL_Color c, const char *text) {
    char buf[TEXT_CHUNK + 1];
    unsigned char rgba[4] = {c.r, c.g, c.b, c.a};
    float widest = 0, line_y = 0;
    while (*text) {
        const char *nl = strchr(text, '\n');
        int n = nl ? (int)(nl - text) : (int)strlen(text);
        float pen = 0;
        for (int done = 0; done < n;) {
            int k = n - done < TEXT_CHUNK ? n - done : TEXT_CHUNK;
            memcpy(buf, text + done, (size_t)k);
            buf[k] = 0;
            int quads = stb_easy_font_print(pen, line_y, buf, rgba, b->scratch,
                                            (int)(sizeof *b->scratch * 4 * TEXT_SCRATCH_QUADS));
            for (int q = 0; q < quads; q++) {
                const easy_vertex *ev = b->scratch + 4 * q;
                float xy[8];
                for (int i = 0; i < 4; i++) {
                    xy[2 * i] = x + ev[i].x * scale;
                    xy[2 * i + 1] = y + ev[i].y * scale;
                }
                put_quad(b, xy, c);
            }
            pen += (float)stb_easy_font_width(buf);
            done += k;
        }
        if (pen > widest) widest = pen;
        line_y += OVL_TEXT_LINE_HEIGHT;
        text += n + (nl ? 1 : 0);
    }
    return widest * scale;
}
