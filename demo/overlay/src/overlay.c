/*
 * overlay.c: the telemetry overlay (see overlay.h for what each panel shows).
 *
 * A draw is planned first (plan_make: the frames in view, their scales and
 * captions, the wrapped settings and help, the panels' rectangles), then
 * the panels queue their quads and their texts. Texts are kept aside with
 * their rectangles (ctx.texts) and drawn last, each on a box, grouped by
 * colour: a label is placed only where it meets no other text.
 */
#include "overlay/overlay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ colours */

static SDL_Color rgb(uint32_t v, uint8_t a) {
    return (SDL_Color){(uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v, a};
}

/* Distinct hues, none of them magenta (growth), the budget red or grey text. */
static const uint32_t palette[OVL_PALETTE_SIZE] = {
    0x3C8CF0, 0x50C878, 0xF0A028, 0x00C8C8, 0xE6DC3C, 0x9A6EE6,
    0xC87846, 0x78DCFF, 0xB4E664, 0x2E8B57, 0xDAA520, 0x6495ED,
};

#define TEXT_RGB 0xDCDCDCu
#define DIM_RGB 0x9A9A9Au
#define BUDGET_RGB OVL_HARD_RGB
#define AXIS_RGB 0x505050u
#define TICK_RGB 0x2A2D36u

SDL_Color ovl_source_color(uint32_t source) {
    return rgb(palette[source % OVL_PALETTE_SIZE], 255);
}

/* ------------------------------------------------------------ desc */

/* Frames a view holds at most (its scales sort a copy on the stack). */
#define MAX_VIEW 4096

typedef struct resolved {
    uint32_t frames;
    double frame_budget_ns, alloc_budget_ns, headroom;
    float ts, lh; /* text scale, line height */
    uint8_t bg_alpha;
    bool backdrop;
    const char *title, *settings, *help;
    const uint64_t *preempted;
    uint32_t preempted_len;
    bool map;
    const ovl_map_pool *map_pools;
    uint32_t map_count;
    const char *map_note;
} resolved;

static resolved resolve(const ovl_desc *d) {
    static const ovl_desc zero;
    if (!d) d = &zero;
    resolved r;
    r.frames = d->frames ? d->frames : 600;
    if (r.frames > MAX_VIEW) r.frames = MAX_VIEW;
    r.frame_budget_ns = d->frame_budget_ns > 0 ? d->frame_budget_ns : 1e9 / 60.0;
    r.alloc_budget_ns = r.frame_budget_ns * (d->alloc_budget_share > 0 ? d->alloc_budget_share : 0.01);
    r.headroom = d->headroom > 0 ? d->headroom : 1.25;
    r.ts = d->text_scale > 0 ? d->text_scale : 1.0f;
    r.lh = (float)OVL_TEXT_LINE_HEIGHT * r.ts;
    r.bg_alpha = d->background_alpha ? d->background_alpha : 170;
    r.backdrop = !d->no_backdrop;
    r.title = d->title ? d->title : "framemem: allocation per frame";
    r.settings = d->settings;
    r.help = d->help;
    r.preempted = d->preempted_ring_len ? d->preempted_ring : NULL;
    r.preempted_len = d->preempted_ring_len;
    r.map = d->memory_map;
    r.map_pools = d->map_pools;
    r.map_count = d->map_pools ? d->map_pool_count : 0;
    r.map_note = d->map_note;
    return r;
}

static SDL_FRect frect(float x, float y, float w, float h) {
    return (SDL_FRect){x, y, w > 0 ? w : 0, h > 0 ? h : 0};
}

/* ------------------------------------------------------------ formatting */

/* Durations as text: us below a millisecond, ms above. */
static void fmt_ns(char *buf, size_t n, double ns) {
    if (ns >= 1e6) snprintf(buf, n, "%.2f ms", ns / 1e6);
    else snprintf(buf, n, "%.1f us", ns / 1e3);
}

/* A tick's value: the shortest form of a round number. */
static void fmt_tick(char *buf, size_t n, double ns) {
    if (ns >= 1e6) snprintf(buf, n, "%g ms", ns / 1e6);
    else if (ns >= 1e3) snprintf(buf, n, "%g us", ns / 1e3);
    else snprintf(buf, n, "%g ns", ns);
}

static void fmt_bytes(char *buf, size_t n, double b) {
    if (b >= 1024.0 * 1024.0) snprintf(buf, n, "%.1f MiB", b / (1024.0 * 1024.0));
    else if (b >= 1024.0) snprintf(buf, n, "%.1f KiB", b / 1024.0);
    else snprintf(buf, n, "%.0f B", b);
}

/* Wraps text (lines split at '\n') at spaces so that no line is wider than
 * width; a word wider than the line is cut. Returns the lines written into
 * out (0 for empty text). */
static int wrap(const char *in, float width, float ts, char *out, size_t n) {
    size_t o = 0;
    int lines = 0;
    char cur[1024];
    if (!in || !*in || n == 0) {
        if (n) out[0] = 0;
        return 0;
    }
    while (*in) {
        size_t len = 0;
        cur[0] = 0;
        /* one output line: words while they fit */
        while (*in && *in != '\n') {
            const char *w = in;
            while (*w == ' ') w++;
            const char *e = w;
            while (*e && *e != ' ' && *e != '\n') e++;
            size_t wl = (size_t)(e - in); /* the spaces before the word too */
            if (len + wl >= sizeof cur) wl = sizeof cur - 1 - len;
            char trial[1024];
            memcpy(trial, cur, len);
            memcpy(trial + len, in, wl);
            trial[len + wl] = 0;
            if (ovl_text_width(len ? trial : trial + (w - in), ts) <= width || (!len && e == w)) {
                if (!len) {
                    memcpy(cur, w, (size_t)(e - w));
                    len = (size_t)(e - w);
                } else {
                    memcpy(cur + len, in, wl);
                    len += wl;
                }
                cur[len] = 0;
                in = e;
                continue;
            }
            if (len) break;
            /* a single word wider than the line: as many characters as fit */
            size_t k = 0;
            while (w + k < e) {
                char one[1024];
                memcpy(one, w, k + 1);
                one[k + 1] = 0;
                if (ovl_text_width(one, ts) > width && k) break;
                k++;
            }
            memcpy(cur, w, k);
            len = k;
            cur[len] = 0;
            in = w + k;
            break;
        }
        if (*in == '\n') in++;
        else while (*in == ' ') in++;
        if (o + len + 2 > n) break;
        if (lines) out[o++] = '\n';
        memcpy(out + o, cur, len);
        o += len;
        lines++;
    }
    out[o] = 0;
    return lines;
}

/* ------------------------------------------------------------ scales */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The smallest round number (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k)
 * at or above x: a scale near the data whose quarters read well. */
static double nice_ceil(double x) {
    if (x <= 0) return 1;
    double e = pow(10.0, floor(log10(x)));
    static const double m[] = {1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (m[i] * e >= x * (1 - 1e-9)) return m[i] * e;
    return 10 * e;
}

typedef struct scale {
    double p99, max, top; /* top: the graph's full height */
} scale;

/* A robust scale for n values: from their p99 (nearest rank), so that one
 * outlier does not flatten the others; the max itself when it is within 2x
 * of the p99. At least floor_ns. */
static scale scale_of(const double *v, uint32_t n, double floor_ns) {
    scale s = {0, 0, 0};
    double sorted[MAX_VIEW];
    if (n > MAX_VIEW) n = MAX_VIEW;
    memcpy(sorted, v, n * sizeof *v);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    if (n) {
        size_t k = (size_t)ceil(0.99 * (double)n);
        if (k < 1) k = 1;
        s.p99 = sorted[k - 1];
        s.max = sorted[n - 1];
    }
    double top = s.max <= 2 * s.p99 ? s.max : 1.5 * s.p99;
    if (top < floor_ns) top = floor_ns;
    s.top = nice_ceil(top * 1.1);
    return s;
}

/* ------------------------------------------------------------ texts */

#define TEXT_LEN 448
#define MAX_TEXTS 224

typedef struct otext {
    SDL_FRect rect;
    SDL_Color c;
    char s[TEXT_LEN];
} otext;

typedef struct ctx {
    ovl_batch *b;
    const resolved *r;
    SDL_FRect area;
    otext texts[MAX_TEXTS];
    uint32_t count;
    uint32_t refused; /* texts of the layout (not labels) that did not fit: a layout bug */
} ctx;

static float text_h(const char *s, const resolved *r) {
    float lines = 1;
    for (; *s; s++) lines += *s == '\n';
    return (lines - 1) * r->lh + (float)(OVL_TEXT_LINE_HEIGHT - 1) * r->ts;
}

static bool overlaps(const SDL_FRect *a, const SDL_FRect *b) {
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

static bool inside(const SDL_FRect *a, const SDL_FRect *in) {
    return a->x >= in->x && a->y >= in->y && a->x + a->w <= in->x + in->w + 0.01f &&
           a->y + a->h <= in->y + in->h + 0.01f;
}

/* A text at (x, y) when it lies inside `within` and meets no text already
 * placed; false (nothing kept) otherwise. within NULL: a text the layout
 * placed, inside the area by construction; one refused is counted. */
static bool text_at(ctx *c, float x, float y, SDL_Color col, const char *s, const SDL_FRect *within) {
    if (!s || !*s) return false;
    SDL_FRect rect = {x, y, ovl_text_width(s, c->r->ts), text_h(s, c->r)};
    bool ok = c->count < MAX_TEXTS && inside(&rect, within ? within : &c->area);
    for (uint32_t i = 0; ok && i < c->count; i++)
        if (overlaps(&rect, &c->texts[i].rect)) ok = false;
    if (!ok) {
        c->refused += within == NULL;
        return false;
    }
    otext *t = &c->texts[c->count++];
    t->rect = rect;
    t->c = col;
    snprintf(t->s, sizeof t->s, "%s", s);
    return true;
}

/* Each line of s (lines split at '\n') as a text of its own, from (x, y)
 * down a line height each. */
static void lines_at(ctx *c, float x, float y, SDL_Color col, const char *s) {
    char line[TEXT_LEN];
    for (int i = 0; s && *s; i++) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        snprintf(line, sizeof line, "%.*s", (int)n, s);
        text_at(c, x, y + (float)i * c->r->lh, col, line, NULL);
        s += n + (nl ? 1 : 0);
    }
}

/* A panel's caption, wrapped to its width, in the lines above it. */
static void caption(ctx *c, const SDL_FRect *panel, const char *text) {
    char cap[1024];
    wrap(text, panel->w, c->r->ts, cap, sizeof cap);
    lines_at(c, panel->x, panel->y - text_h(cap, c->r) - 2 * c->r->ts, rgb(TEXT_RGB, 255), cap);
}

/* s cut (with "~") to at most width pixels. */
static const char *fit(const char *s, float width, float ts, char *buf, size_t n) {
    if (ovl_text_width(s, ts) <= width) return s;
    size_t len = strlen(s);
    if (len >= n) len = n - 1;
    while (len > 0) {
        snprintf(buf, n, "%.*s~", (int)len - 1, s);
        if (ovl_text_width(buf, ts) <= width) return buf;
        len--;
    }
    return "";
}

/* Every text on a box of the backdrop's colour (opaque over an opaque or
 * caller-darkened backdrop, so a software renderer keeps its fill path),
 * then the texts grouped by colour: few colour runs. */
#define BACKDROP_RGB 0x0C0E14u
static void flush_texts(ctx *c, ovl_text_rects *out) {
    const resolved *r = c->r;
    uint8_t a = r->backdrop && r->bg_alpha != 255 ? 200 : 255;
    float pad = r->ts;
    for (uint32_t i = 0; i < c->count; i++) {
        const SDL_FRect *q = &c->texts[i].rect;
        ovl_rect(c->b, q->x - pad, q->y - pad, q->w + 2 * pad, q->h + 2 * pad, rgb(BACKDROP_RGB, a));
    }
    bool done[MAX_TEXTS] = {false};
    for (uint32_t i = 0; i < c->count; i++) {
        if (done[i]) continue;
        for (uint32_t j = i; j < c->count; j++) {
            const otext *t = &c->texts[j];
            if (done[j] || memcmp(&t->c, &c->texts[i].c, sizeof t->c) != 0) continue;
            ovl_text(c->b, t->rect.x, t->rect.y, r->ts, t->c, t->s);
            done[j] = true;
        }
    }
    if (out) {
        out->count = c->count;
        out->refused = c->refused;
        for (uint32_t i = 0; i < c->count; i++) {
            out->rects[i] = c->texts[i].rect;
            snprintf(out->text[i], sizeof out->text[i], "%.159s", c->texts[i].s);
        }
    }
}

/* ------------------------------------------------------------ the plan */

typedef struct view {
    const fm_telemetry *t;
    uint32_t held, shown, first; /* frames in the ring, shown, index of oldest shown */
    uint32_t slots;              /* bar slots across the graph (r.frames) */
    uint32_t sources;
} view;

enum { PART_SIM, PART_ALLOC, PART_MAINT, PART_RENDER, PARTS };

static const struct {
    const char *name;
    uint32_t rgb;
} parts[PARTS] = {{"simulation", OVL_SIM_RGB},
                  {"allocation", OVL_ALLOC_RGB},
                  {"maintenance", OVL_MAINT_RGB},
                  {"render", OVL_RENDER_RGB}};

typedef struct plan {
    resolved r;
    view v;
    ovl_layout lo;
    scale alloc, maint, part[PARTS], frame;
    uint64_t grows, resets, ahead, preempted;
    float legend_slot;
    char settings[4096], help[2048], cap_alloc[512], cap_maint[256], cap_frame[512], cap_map[512];
    float cell;     /* the map's cell size */
    uint32_t cells_per_row;
} plan;

static bool preempted(const resolved *r, uint64_t frame) {
    return r->preempted && r->preempted[frame % r->preempted_len] == frame + 1;
}

static uint64_t part_ns(const fm_telemetry_frame *f, int p) {
    switch (p) {
    case PART_SIM: return f->sim_ns;
    case PART_ALLOC: return f->alloc_total_ns;
    case PART_MAINT: return f->maint_ns;
    default: return f->render_ns;
    }
}

/* Tags get a budget bar, the others a table row. */
static uint32_t count_tags(const fm_telemetry *t) {
    uint32_t n = 0;
    for (uint32_t s = 0; s < fm_telemetry_source_count(t); s++)
        n += fm_telemetry_get_source(t, s)->kind == FM_TELEMETRY_TAG;
    return n;
}

static void plan_stats(plan *p) {
    const view *v = &p->v;
    const resolved *r = &p->r;
    double vals[MAX_VIEW];
    p->grows = p->resets = p->ahead = p->preempted = 0;
    for (uint32_t k = 0; k < v->shown; k++) {
        double sum = 0;
        for (uint32_t s = 0; s < v->sources; s++) {
            const fm_telemetry_sample *sm = fm_telemetry_get_sample(v->t, v->first + k, s);
            sum += (double)sm->alloc_ns;
            if (fm_telemetry_get_source(v->t, s)->kind == FM_TELEMETRY_POOL) p->resets += sm->resets;
        }
        vals[k] = sum;
        const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
        p->grows += f->grow_events;
        p->ahead += f->ahead_grow_events;
        p->preempted += preempted(r, f->frame);
    }
    p->alloc = scale_of(vals, v->shown, 1000);
    for (int q = 0; q < PARTS; q++) {
        for (uint32_t k = 0; k < v->shown; k++)
            vals[k] = (double)part_ns(fm_telemetry_get_frame(v->t, v->first + k), q);
        p->part[q] = scale_of(vals, v->shown, 1000);
    }
    p->maint = p->part[PART_MAINT];
    for (uint32_t k = 0; k < v->shown; k++) {
        const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
        vals[k] = (double)f->sim_ns + (double)f->alloc_total_ns + (double)f->maint_ns + (double)f->render_ns;
    }
    p->frame = scale_of(vals, v->shown, 1000);
}

static void plan_captions(plan *p) {
    char a99[32], amax[32], m[32], f99[32], fmax[32], bud[32];
    fmt_ns(a99, sizeof a99, p->alloc.p99);
    fmt_ns(amax, sizeof amax, p->alloc.max);
    fmt_ns(m, sizeof m, p->maint.max);
    fmt_ns(f99, sizeof f99, p->frame.p99);
    fmt_ns(fmax, sizeof fmax, p->frame.max);
    fmt_ns(bud, sizeof bud, p->r.frame_budget_ns);
    snprintf(p->cap_alloc, sizeof p->cap_alloc,
             "allocation time per frame by pool (last %u frames): p99 %s, max %s | growth inside an "
             "allocation: magenta (%llu) | preempted by the OS: grey mark below (%llu) | resets: white "
             "(%llu) | scale from the p99: taller bars clipped, capped, labelled",
             p->v.shown, a99, amax, (unsigned long long)p->grows, (unsigned long long)p->preempted,
             (unsigned long long)p->resets);
    snprintf(p->cap_maint, sizeof p->cap_maint,
             "maintenance at the frame boundary (grow-ahead, own scale): max %s, %llu ahead growths", m,
             (unsigned long long)p->ahead);
    snprintf(p->cap_frame, sizeof p->cap_frame,
             "frame time: p99 %s, max %s (budget %s); strips top to bottom: simulation, allocation, "
             "maintenance, render, each on its own scale",
             f99, fmax, bud);
}

static void plan_map_caption(plan *p) {
    uint64_t chunks = 0, live = 0, slots = 0;
    for (uint32_t i = 0; i < p->r.map_count; i++) {
        const ovl_map_pool *m = &p->r.map_pools[i];
        chunks += m->chunks;
        slots += (uint64_t)m->chunks * m->items_per_chunk;
        for (uint32_t c = 0; c < m->chunks; c++) live += m->live[c];
    }
    snprintf(p->cap_map, sizeof p->cap_map,
             "memory map: each pool's chunks, a cell per chunk shaded by occupancy (dark: empty, the pool's "
             "colour: full) | %llu chunks, %.0f%% of their slots live",
             (unsigned long long)chunks, slots ? 100.0 * (double)live / (double)slots : 0.0);
}

/* The largest cell (16 px down to 3) at which every pool's rows and its
 * name line fit h; the cells a row holds in *per. */
static float map_cell(const resolved *r, float w, float h, uint32_t *per) {
    for (float cell = 16; cell >= 3; cell -= 1) {
        uint32_t n = (uint32_t)(w / (cell + 1));
        if (n < 1) n = 1;
        float need = 0;
        for (uint32_t i = 0; i < r->map_count; i++)
            need += r->lh + (float)((r->map_pools[i].chunks + n - 1) / n) * (cell + 1) + 2;
        *per = n;
        if (need <= h) return cell;
    }
    return 3;
}

static void plan_layout(plan *p, const SDL_FRect *area) {
    const resolved *r = &p->r;
    const float pad = 6 * r->ts, lh = r->lh, gap = lh * 0.5f;
    float x = area->x + pad, w = area->w - 2 * pad;
    float top = area->y + pad, bottom = area->y + area->h - pad;
    const fm_telemetry *t = p->v.t;
    uint32_t sources = fm_telemetry_source_count(t), tags = count_tags(t);
    ovl_layout *o = &p->lo;

    int settings_lines = wrap(r->settings, w, r->ts, p->settings, sizeof p->settings);
    o->title = frect(x, top, w, lh * (float)(1 + settings_lines));
    top += o->title.h + gap;
    int help_lines = wrap(r->help, w, r->ts, p->help, sizeof p->help);
    o->help = frect(x, bottom - lh * (float)help_lines, w, lh * (float)help_lines);
    bottom = o->help.y - (help_lines ? gap : 0);
    /* header + one row per source but the tags */
    float rows = (float)(sources - tags + 1);
    o->table = frect(x, bottom - lh * rows, w, lh * rows);
    bottom = o->table.y - gap;
    /* a budget bar per tag, above the table */
    o->budgets = frect(x, bottom - lh * (float)tags, w, lh * (float)tags);
    float name_w = 20 * 6.0f * r->ts;
    o->bars = frect(x + name_w, o->budgets.y, (w - name_w) * 0.45f, o->budgets.h);
    if (tags) bottom = o->budgets.y - gap;
    /* legend: slots as wide as the widest name */
    float widest = 0;
    for (uint32_t s = 0; s < sources; s++) {
        float nw = ovl_text_width(fm_telemetry_get_source(t, s)->name, r->ts);
        if (nw > widest) widest = nw;
    }
    p->legend_slot = widest + 11 * r->ts + 12 * r->ts;
    if (p->legend_slot > w) p->legend_slot = w;
    uint32_t per = (uint32_t)(w / p->legend_slot);
    if (per < 1) per = 1;
    float legend_lines = (float)((sources + per - 1) / per);
    /* captions, wrapped */
    char scratch[1024];
    float ca = (float)wrap(p->cap_alloc, w, r->ts, scratch, sizeof scratch);
    float cm = (float)wrap(p->cap_maint, w, r->ts, scratch, sizeof scratch);
    float cf = (float)wrap(p->cap_frame, w, r->ts, scratch, sizeof scratch);
    /* What is left goes to the three graphs; 4 px under each for the
     * preemption marks. */
    float graphs = bottom - top - lh * (legend_lines + ca + cm + cf) - 3 * gap - 12;
    if (graphs < 30) graphs = 30;
    float ga = graphs * 0.5f, gm = graphs * 0.12f, gf = graphs - ga - gm;
    o->alloc_graph = frect(x, top + lh * ca, w, ga);
    top = o->alloc_graph.y + ga + 4;
    o->legend = frect(x, top, w, lh * legend_lines);
    top += o->legend.h + gap;
    o->maint_graph = frect(x, top + lh * cm, w, gm);
    top = o->maint_graph.y + gm + 4 + gap;
    o->frame_graph = frect(x, top + lh * cf, w, gf);
    o->map = frect(x, 0, 0, 0);
    if (r->map) {
        /* The map takes the graphs' room (their captions' lines included). */
        float first = o->alloc_graph.y - lh * ca, last = o->frame_graph.y + o->frame_graph.h;
        float cm2 = (float)wrap(p->cap_map, w, r->ts, scratch, sizeof scratch);
        o->map = frect(x, first + lh * cm2, w, last - first - lh * cm2);
        o->alloc_graph = o->legend = o->maint_graph = o->frame_graph = frect(x, first, w, 0);
        p->cell = map_cell(r, w, o->map.h, &p->cells_per_row);
    }
}

static void plan_make(plan *p, const SDL_FRect *area, const fm_telemetry *t, const ovl_desc *desc) {
    p->r = resolve(desc);
    view *v = &p->v;
    v->t = t;
    v->held = fm_telemetry_frame_count(t);
    v->slots = p->r.frames;
    v->shown = v->held < p->r.frames ? v->held : p->r.frames;
    v->first = v->held - v->shown;
    v->sources = fm_telemetry_source_count(t);
    plan_stats(p);
    plan_captions(p);
    plan_map_caption(p);
    plan_layout(p, area);
}

void ovl_layout_compute(const SDL_FRect *area, const fm_telemetry *t, const ovl_desc *desc,
                        ovl_layout *out) {
    static plan p; /* large; the layout query is not the drawing path */
    plan_make(&p, area, t, desc);
    *out = p.lo;
}

/* ------------------------------------------------------------ panels */

static float slot_x(const view *v, const SDL_FRect *g, uint32_t k) {
    /* Newest frame at the right edge; fewer frames than slots leave the left empty. */
    return g->x + g->w * (float)(v->slots - v->shown + k) / (float)v->slots;
}

/* Panel backdrop and graph background. Translucent ones are quads in the
 * batch; opaque ones (background_alpha 255) are filled up front with
 * SDL_RenderFillRect, which a software renderer does at memset speed where a
 * blended full-window quad costs several milliseconds. */
#define GRAPH_BG_RGB 0x050609u /* black at 110/255 over the backdrop */

static void graph_frame(ovl_batch *b, const SDL_FRect *g, const resolved *r) {
    if (r->backdrop && r->bg_alpha != 255) ovl_rect(b, g->x, g->y, g->w, g->h, (SDL_Color){0, 0, 0, 110});
    ovl_rect(b, g->x, g->y + g->h - 1, g->w, 1, rgb(AXIS_RGB, 255));
}

static void opaque_backgrounds(SDL_Renderer *rd, const SDL_FRect *area, const ovl_layout *lo) {
    SDL_SetRenderDrawBlendMode(rd, SDL_BLENDMODE_NONE);
    SDL_SetRenderDrawColor(rd, BACKDROP_RGB >> 16, (BACKDROP_RGB >> 8) & 0xFF, BACKDROP_RGB & 0xFF, 255);
    SDL_RenderFillRectF(rd, area);
    const SDL_FRect graphs[3] = {lo->alloc_graph, lo->maint_graph, lo->frame_graph};
    SDL_SetRenderDrawColor(rd, GRAPH_BG_RGB >> 16, (GRAPH_BG_RGB >> 8) & 0xFF, GRAPH_BG_RGB & 0xFF, 255);
    if (lo->alloc_graph.h > 0) SDL_RenderFillRectsF(rd, graphs, 3);
}

/* y of value in graph g scaled to top (clamped to the graph). */
static float y_of(const SDL_FRect *g, double value, double top) {
    double f = value / top;
    if (f > 1) f = 1;
    return g->y + g->h - 1 - (float)f * (g->h - 1);
}

/* Ticks at quarters (or halves, or the top alone) of the scale, labelled at
 * the left edge, as many as the graph's height keeps apart. */
static void ticks(ctx *c, const SDL_FRect *g, double top) {
    const resolved *r = c->r;
    int n = g->h >= 8 * r->lh ? 4 : g->h >= 4 * r->lh ? 2 : 1;
    for (int i = n; i >= 1; i--) {
        double value = top * (double)i / (double)n;
        float y = y_of(g, value, top);
        if (i < n) ovl_rect(c->b, g->x, y, g->w, 1, rgb(TICK_RGB, 255));
        char lab[32];
        fmt_tick(lab, sizeof lab, value);
        float ty = y - r->lh * 0.5f;
        if (ty < g->y + 1) ty = g->y + 1;
        text_at(c, g->x + 2 * r->ts, ty, rgb(DIM_RGB, 255), lab, g);
    }
}

/* A label near x in graph g: the first of `rows` rows from y0 where it is
 * free (centred on x, kept inside the graph); false when none is. */
static bool label_near(ctx *c, const SDL_FRect *g, float x, float y0, int rows, SDL_Color col,
                       const char *s) {
    float w = ovl_text_width(s, c->r->ts);
    float lx = x - w * 0.5f;
    if (lx < g->x + 1) lx = g->x + 1;
    if (lx + w > g->x + g->w - 1) lx = g->x + g->w - 1 - w;
    for (int row = 0; row < rows; row++)
        if (text_at(c, lx, y0 + (float)row * c->r->lh, col, s, g)) return true;
    return false;
}

static void preempt_mark(ctx *c, const view *v, const SDL_FRect *g, uint32_t k, float bw) {
    const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
    if (preempted(c->r, f->frame))
        ovl_rect(c->b, slot_x(v, g, k), g->y + g->h + 1, bw > 1 ? bw : 1, 3, rgb(OVL_PREEMPT_RGB, 255));
}

/* Frames closer than this many pixels form one spike (labelled once). */
static float spike_px(const resolved *r) { return 60 * r->ts; }

static void alloc_panel(ctx *c, const plan *p) {
    const view *v = &p->v;
    const SDL_FRect *g = &p->lo.alloc_graph;
    const resolved *r = c->r;
    ovl_batch *b = c->b;
    double top = p->alloc.top;
    graph_frame(b, g, r);
    float bw = g->w / (float)v->slots;
    const SDL_Color grow = {OVL_GROWTH_R, OVL_GROWTH_G, OVL_GROWTH_B, 255};
    const SDL_Color clip_c = rgb(OVL_CLIP_RGB, 255);
    const SDL_Color reset_c = rgb(OVL_RESET_RGB, 255);
    /* Pool resets (arenas reset every frame: not marked), behind the bars. */
    for (uint32_t k = 0; p->resets && k < v->shown; k++)
        for (uint32_t s = 0; s < v->sources; s++)
            if (fm_telemetry_get_source(v->t, s)->kind == FM_TELEMETRY_POOL &&
                fm_telemetry_get_sample(v->t, v->first + k, s)->resets) {
                ovl_rect(b, slot_x(v, g, k), g->y, 1, g->h - 1, reset_c);
                break;
            }
    /* Source by source (then frame by frame): long runs of one colour, which
     * a software renderer fills with one call each. A segment's base is the
     * sum of the segments below it in the same frame; the bar stops at the
     * top of the graph. */
    for (uint32_t s = 0; s < v->sources; s++)
        for (uint32_t k = 0; k < v->shown; k++) {
            double below = 0;
            for (uint32_t j = 0; j < s; j++)
                below += (double)fm_telemetry_get_sample(v->t, v->first + k, j)->alloc_ns;
            const fm_telemetry_sample *sm = fm_telemetry_get_sample(v->t, v->first + k, s);
            if (below >= top) continue;
            float y0 = y_of(g, below, top), y1 = y_of(g, below + (double)sm->alloc_ns, top);
            float h = y0 - y1;
            if (sm->grow_events > 0 && h < 2) h = 2; /* a growth is never invisible */
            if (h <= 0) continue;
            if (y0 - h < g->y) h = y0 - g->y;
            ovl_rect(b, slot_x(v, g, k), y0 - h, bw > 1 ? bw : 1, h,
                     sm->grow_events > 0 ? grow : ovl_source_color(s));
        }
    /* Clipped bars: capped; growth ticks above growth frames; preemption
     * marks under the axis. */
    double vals[MAX_VIEW];
    for (uint32_t k = 0; k < v->shown; k++) {
        double sum = 0;
        for (uint32_t s = 0; s < v->sources; s++)
            sum += (double)fm_telemetry_get_sample(v->t, v->first + k, s)->alloc_ns;
        vals[k] = sum;
        float x = slot_x(v, g, k);
        if (sum > top) ovl_rect(b, x, g->y, bw > 2 ? bw : 2, 3 * r->ts, clip_c);
        if (fm_telemetry_get_frame(v->t, v->first + k)->grow_events)
            ovl_rect(b, x, g->y + 3 * r->ts, bw > 2 ? bw : 2, 3 * r->ts, grow);
        preempt_mark(c, v, g, k, bw);
    }
    ticks(c, g, top);
    /* Labels, most telling first: growth spikes (named once per spike),
     * clipped values (the tallest of a run), resets, the budget. */
    const float y_labels = g->y + 7 * r->ts;
    for (uint32_t k = 0; k < v->shown;) {
        if (!fm_telemetry_get_frame(v->t, v->first + k)->grow_events) {
            k++;
            continue;
        }
        /* The spike: growth frames that follow within spike_px of each other. */
        uint32_t end = k, frames = 0;
        char names[160] = "";
        int named = 0, more = 0;
        bool seen[FM_TELEMETRY_MAX_SOURCES] = {false};
        for (uint32_t j = k; j < v->shown && slot_x(v, g, j) - slot_x(v, g, end) <= spike_px(r); j++) {
            if (!fm_telemetry_get_frame(v->t, v->first + j)->grow_events) continue;
            end = j;
            frames++;
            for (uint32_t s = 0; s < v->sources && s < FM_TELEMETRY_MAX_SOURCES; s++) {
                if (seen[s] || !fm_telemetry_get_sample(v->t, v->first + j, s)->grow_events) continue;
                seen[s] = true;
                if (named < 2) {
                    size_t used = strlen(names);
                    snprintf(names + used, sizeof names - used, "%s%s", named ? ", " : "",
                             fm_telemetry_get_source(v->t, s)->name);
                    named++;
                } else {
                    more++;
                }
            }
        }
        char lab[224];
        int len = snprintf(lab, sizeof lab, "%s", names);
        if (more > 0 && len > 0) len += snprintf(lab + len, sizeof lab - (size_t)len, " +%d", more);
        if (frames > 1 && len > 0) snprintf(lab + len, sizeof lab - (size_t)len, " (%u frames)", frames);
        float x = (slot_x(v, g, k) + slot_x(v, g, end)) * 0.5f;
        label_near(c, g, x, y_labels, 3, grow, lab);
        k = end + 1;
    }
    for (uint32_t k = 0; k < v->shown;) {
        if (vals[k] <= top) {
            k++;
            continue;
        }
        uint32_t end = k, tallest = k;
        for (uint32_t j = k; j < v->shown && slot_x(v, g, j) - slot_x(v, g, end) <= spike_px(r); j++) {
            if (vals[j] <= top) continue;
            end = j;
            if (vals[j] > vals[tallest]) tallest = j;
        }
        char val[32], lab[48];
        fmt_ns(val, sizeof val, vals[tallest]);
        snprintf(lab, sizeof lab, "^ %s", val);
        label_near(c, g, slot_x(v, g, tallest), y_labels, 4, clip_c, lab);
        k = end + 1;
    }
    for (uint32_t k = 0; p->resets && k < v->shown; k++)
        for (uint32_t s = 0; s < v->sources; s++) {
            if (fm_telemetry_get_source(v->t, s)->kind != FM_TELEMETRY_POOL ||
                !fm_telemetry_get_sample(v->t, v->first + k, s)->resets)
                continue;
            char lab[FM_TELEMETRY_NAME_MAX + 8];
            snprintf(lab, sizeof lab, "reset %s", fm_telemetry_get_source(v->t, s)->name);
            float x = slot_x(v, g, k) + 2 + ovl_text_width(lab, r->ts) * 0.5f;
            label_near(c, g, x, y_labels + 3 * r->lh, 3, reset_c, lab);
            break;
        }
    if (r->alloc_budget_ns <= top) {
        float by = y_of(g, r->alloc_budget_ns, top);
        ovl_rect(b, g->x, by, g->w, 1, rgb(BUDGET_RGB, 255));
        char bud[32], lab[96];
        fmt_ns(bud, sizeof bud, r->alloc_budget_ns);
        snprintf(lab, sizeof lab, "budget %.1f%% of frame = %s", 100.0 * r->alloc_budget_ns / r->frame_budget_ns,
                 bud);
        float lw = ovl_text_width(lab, r->ts);
        if (!text_at(c, g->x + g->w - lw - 4, by - r->lh - r->ts, rgb(BUDGET_RGB, 255), lab, g))
            text_at(c, g->x + g->w - lw - 4, by + 2 * r->ts, rgb(BUDGET_RGB, 255), lab, g);
    }
}

static void legend_panel(ctx *c, const plan *p) {
    const view *v = &p->v;
    const SDL_FRect *l = &p->lo.legend;
    const resolved *r = c->r;
    uint32_t per = (uint32_t)(l->w / p->legend_slot);
    if (per < 1) per = 1;
    for (uint32_t s = 0; s < v->sources; s++) {
        float x = l->x + (float)(s % per) * p->legend_slot;
        float y = l->y + (float)(s / per) * r->lh;
        ovl_rect(c->b, x, y, 8 * r->ts, 7 * r->ts, ovl_source_color(s));
        char buf[64];
        const char *nm = fit(fm_telemetry_get_source(v->t, s)->name, l->x + l->w - x - 11 * r->ts, r->ts,
                             buf, sizeof buf);
        text_at(c, x + 11 * r->ts, y, rgb(TEXT_RGB, 255), nm, NULL);
    }
}

static void maint_panel(ctx *c, const plan *p) {
    const view *v = &p->v;
    const SDL_FRect *g = &p->lo.maint_graph;
    const resolved *r = c->r;
    double top = p->maint.top;
    graph_frame(c->b, g, r);
    float bw = g->w / (float)v->slots;
    for (uint32_t k = 0; k < v->shown; k++) {
        const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
        float y = y_of(g, (double)f->maint_ns, top), h = g->y + g->h - 1 - y;
        if (f->ahead_grow_events && h < 2) h = 2;
        float x = slot_x(v, g, k);
        ovl_rect(c->b, x, g->y + g->h - 1 - h, bw > 1 ? bw : 1, h, rgb(OVL_MAINT_RGB, 255));
        if ((double)f->maint_ns > top) ovl_rect(c->b, x, g->y, bw > 2 ? bw : 2, 2 * r->ts, rgb(OVL_CLIP_RGB, 255));
        preempt_mark(c, v, g, k, bw);
    }
    ticks(c, g, top);
    /* Name the pool that grew ahead (the first one), once per spike. */
    float last = -1e9f;
    for (uint32_t k = 0; k < v->shown; k++) {
        if (!fm_telemetry_get_frame(v->t, v->first + k)->ahead_grow_events) continue;
        float x = slot_x(v, g, k);
        if (x - last < spike_px(r)) continue;
        for (uint32_t s = 0; s < v->sources; s++)
            if (fm_telemetry_get_sample(v->t, v->first + k, s)->ahead_grow_events) {
                if (label_near(c, g, x, g->y + 1, 1, rgb(OVL_MAINT_RGB, 255), fm_telemetry_get_source(v->t, s)->name))
                    last = x;
                break;
            }
    }
}

static void frame_panel(ctx *c, const plan *p) {
    const view *v = &p->v;
    const SDL_FRect *g = &p->lo.frame_graph;
    const resolved *r = c->r;
    float gap = 2, sh = (g->h - 3 * gap) / PARTS;
    float bw = g->w / (float)v->slots;
    for (int q = 0; q < PARTS; q++) {
        SDL_FRect s = {g->x, g->y + (float)q * (sh + gap), g->w, sh};
        graph_frame(c->b, &s, r);
        double top = p->part[q].top;
        SDL_Color col = rgb(parts[q].rgb, 255);
        /* Part by part, frame by frame: one colour run per strip. */
        for (uint32_t k = 0; k < v->shown; k++) {
            const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
            double ns = (double)part_ns(f, q);
            float y = y_of(&s, ns, top), h = s.y + s.h - 1 - y;
            if (h > 0) ovl_rect(c->b, slot_x(v, &s, k), y, bw > 1 ? bw : 1, h, col);
        }
        for (uint32_t k = 0; k < v->shown; k++)
            if ((double)part_ns(fm_telemetry_get_frame(v->t, v->first + k), q) > top)
                ovl_rect(c->b, slot_x(v, &s, k), s.y, bw > 2 ? bw : 2, 2 * r->ts, rgb(OVL_CLIP_RGB, 255));
        char p99[32], mx[32], sc[32], lab[160];
        fmt_ns(p99, sizeof p99, p->part[q].p99);
        fmt_ns(mx, sizeof mx, p->part[q].max);
        fmt_tick(sc, sizeof sc, top);
        snprintf(lab, sizeof lab, "%s: p99 %s, max %s (scale %s)", parts[q].name, p99, mx, sc);
        if (!text_at(c, s.x + 2 * r->ts, s.y + r->ts, col, lab, &s)) {
            snprintf(lab, sizeof lab, "%s %s", parts[q].name, sc);
            text_at(c, s.x + 2 * r->ts, s.y + r->ts, col, lab, &s);
        }
    }
    for (uint32_t k = 0; k < v->shown; k++) preempt_mark(c, v, g, k, bw);
}

static SDL_Color mix(SDL_Color a, SDL_Color b, double f) {
    if (f < 0) f = 0;
    if (f > 1) f = 1;
    return (SDL_Color){(uint8_t)(a.r + (b.r - a.r) * f), (uint8_t)(a.g + (b.g - a.g) * f),
                       (uint8_t)(a.b + (b.b - a.b) * f), 255};
}

static void map_panel(ctx *c, const plan *p) {
    const SDL_FRect *m = &p->lo.map;
    const resolved *r = c->r;
    if (!r->map_count) {
        text_at(c, m->x, m->y + r->lh, rgb(TEXT_RGB, 255), r->map_note ? r->map_note : "no pools to map", NULL);
        return;
    }
    const SDL_Color empty = rgb(0x262A33, 255);
    float cell = p->cell, y = m->y;
    uint32_t per = p->cells_per_row;
    for (uint32_t i = 0; i < r->map_count; i++) {
        const ovl_map_pool *mp = &r->map_pools[i];
        SDL_Color col = mp->source == UINT32_MAX ? rgb(TEXT_RGB, 255) : ovl_source_color(mp->source);
        uint64_t live = 0;
        for (uint32_t k = 0; k < mp->chunks; k++) live += mp->live[k];
        double slots = (double)mp->chunks * (double)mp->items_per_chunk;
        /* rows that fit what is left of the map */
        float room = m->y + m->h - y - r->lh - 2;
        uint32_t rows_fit = room > 0 ? (uint32_t)(room / (cell + 1)) : 0;
        uint32_t shown = mp->chunks;
        if ((uint64_t)rows_fit * per < shown) shown = rows_fit * per;
        char bytes[24], lab[224];
        fmt_bytes(bytes, sizeof bytes, (double)mp->chunk_bytes);
        int n = snprintf(lab, sizeof lab, "%s: %u chunks of %u items (%s), %.0f%% live", mp->name, mp->chunks,
                         mp->items_per_chunk, bytes, slots > 0 ? 100.0 * (double)live / slots : 0.0);
        if (shown < mp->chunks && n > 0)
            snprintf(lab + n, sizeof lab - (size_t)n, " (%u more not shown)", mp->chunks - shown);
        char cut[224];
        if (y + r->lh > m->y + m->h) break;
        text_at(c, m->x, y, col, fit(lab, m->w, r->ts, cut, sizeof cut), NULL);
        y += r->lh;
        for (uint32_t k = 0; k < shown; k++) {
            float cx = m->x + (float)(k % per) * (cell + 1), cy = y + (float)(k / per) * (cell + 1);
            double f = mp->items_per_chunk ? (double)mp->live[k] / (double)mp->items_per_chunk : 0;
            ovl_rect(c->b, cx, cy, cell, cell, f > 0 ? mix(empty, col, 0.2 + 0.8 * f) : empty);
        }
        y += (float)((shown + per - 1) / per) * (cell + 1) + 2;
    }
}

/* A bar per tag: committed bytes of the newest frame against the larger of
 * the hard limit and the peak in view, ticks at the limits. */
static void budget_panel(ctx *c, const plan *p) {
    const view *v = &p->v;
    const ovl_layout *lo = &p->lo;
    const resolved *r = c->r;
    ovl_batch *b = c->b;
    const SDL_Color text = rgb(TEXT_RGB, 255), dim = rgb(DIM_RGB, 255);
    const SDL_Color soft_c = rgb(OVL_SOFT_RGB, 255), hard_c = rgb(OVL_HARD_RGB, 255);
    const SDL_FRect *bars = &lo->bars;
    uint32_t row = 0;
    for (uint32_t s = 0; s < v->sources; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(v->t, s);
        if (si->kind != FM_TELEMETRY_TAG) continue;
        float y = lo->budgets.y + (float)row++ * r->lh;
        double committed = 0, peak = 0;
        uint64_t refused = 0;
        for (uint32_t k = 0; k < v->shown; k++) {
            const fm_telemetry_sample *x = fm_telemetry_get_sample(v->t, v->first + k, s);
            if ((double)x->peak_live > peak) peak = (double)x->peak_live;
            refused += x->failed;
            if (k + 1 == v->shown) committed = (double)x->capacity;
        }
        double soft = (double)si->soft_limit, hard = (double)si->hard_limit;
        double full = hard > peak ? hard : peak;
        if (soft * 1.25 > full) full = soft * 1.25;
        if (committed > full) full = committed;
        full = full > 0 ? full * 1.05 : 1;
        float h = 7 * r->ts;
        ovl_rect(b, bars->x, y, bars->w, h, rgb(AXIS_RGB, 255));
        SDL_Color fill = ovl_source_color(s);
        if (refused || (hard > 0 && committed >= hard)) fill = hard_c;
        else if (soft > 0 && committed > soft) fill = soft_c;
        float fw = (float)(committed / full) * bars->w;
        if (fw > 0) ovl_rect(b, bars->x, y, fw, h, fill);
        if (peak > committed)
            ovl_rect(b, bars->x + (float)(peak / full) * bars->w - 1, y, 2, h, text);
        if (soft > 0) ovl_rect(b, bars->x + (float)(soft / full) * bars->w - 1, y - 1, 2, h + 2, soft_c);
        if (hard > 0) ovl_rect(b, bars->x + (float)(hard / full) * bars->w - 1, y - 1, 2, h + 2, hard_c);
        char buf[64];
        text_at(c, lo->budgets.x + 4 * r->ts, y, ovl_source_color(s),
                fit(si->name, bars->x - lo->budgets.x - 8 * r->ts, r->ts, buf, sizeof buf), NULL);
        char cm[24], pk[24], sl[24], hl[24], line[160], cut[160];
        fmt_bytes(cm, sizeof cm, committed);
        fmt_bytes(pk, sizeof pk, peak);
        if (soft > 0) fmt_bytes(sl, sizeof sl, soft);
        else snprintf(sl, sizeof sl, "none");
        if (hard > 0) fmt_bytes(hl, sizeof hl, hard);
        else snprintf(hl, sizeof hl, "none");
        snprintf(line, sizeof line, "%s committed, peak %s | soft %s, hard %s%s", cm, pk, sl, hl,
                 refused ? " | growth refused" : "");
        float lx = bars->x + bars->w + 8 * r->ts;
        text_at(c, lx, y, refused ? hard_c : row == 1 ? text : dim,
                fit(line, lo->budgets.x + lo->budgets.w - lx, r->ts, cut, sizeof cut), NULL);
    }
}

enum { COLS = 7 };

static void table_panel(ctx *c, const plan *p) {
    const view *v = &p->v;
    const SDL_FRect *tb = &p->lo.table;
    const resolved *r = c->r;
    const SDL_Color text = rgb(TEXT_RGB, 255), dim = rgb(DIM_RGB, 255);
    /* Sizes to suggest only where something is sized: not malloc's items. */
    bool sized = false;
    for (uint32_t s = 0; s < v->sources; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(v->t, s);
        sized |= si->kind == FM_TELEMETRY_POOL && si->backend != FM_TELEMETRY_BACKEND_MALLOC;
    }
    static const char *const head[COLS] = {"pool", "live", "peak", "capacity", "grow events",
                                           "last grow (frame, time)", "suggested capacity"};
    static char cells[FM_TELEMETRY_MAX_SOURCES][COLS][48];
    uint32_t rows = 0;
    for (uint32_t s = 0; s < v->sources && rows < FM_TELEMETRY_MAX_SOURCES; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(v->t, s);
        if (si->kind == FM_TELEMETRY_TAG) continue; /* the budget panel's */
        const fm_telemetry_sample *now = v->held ? fm_telemetry_get_sample(v->t, v->held - 1, s) : NULL;
        char (*cell)[48] = cells[rows++];
        snprintf(cell[0], sizeof cell[0], "%s", si->name);
        if (si->kind == FM_TELEMETRY_POOL || si->kind == FM_TELEMETRY_CLOSURES) {
            snprintf(cell[1], sizeof cell[1], "%llu", (unsigned long long)(now ? now->live : 0));
            snprintf(cell[2], sizeof cell[2], "%llu", (unsigned long long)si->peak_live);
            snprintf(cell[3], sizeof cell[3], "%llu", (unsigned long long)(now ? now->capacity : 0));
            snprintf(cell[4], sizeof cell[4], "%llu +%llu ahead", (unsigned long long)si->total_grow_events,
                     (unsigned long long)si->total_ahead_grow_events);
            if (si->last_grow_ns) {
                char d[24];
                fmt_ns(d, sizeof d, (double)si->last_grow_ns);
                snprintf(cell[5], sizeof cell[5], "f%llu, %s", (unsigned long long)si->last_grow_frame, d);
            } else {
                snprintf(cell[5], sizeof cell[5], "-");
            }
            if (si->kind == FM_TELEMETRY_POOL && si->backend == FM_TELEMETRY_BACKEND_MALLOC)
                snprintf(cell[6], sizeof cell[6], "%s", sized ? "- (malloc)" : "");
            else if (si->kind == FM_TELEMETRY_POOL)
                snprintf(cell[6], sizeof cell[6], "%llu",
                         (unsigned long long)fm_telemetry_suggest_capacity(si->peak_live, r->headroom,
                                                                           si->chunk_items));
            else snprintf(cell[6], sizeof cell[6], "- (closures)");
        } else {
            /* Arena: bytes this frame, high water, committed, commits this frame. */
            char used[24], hw[24], com[24];
            fmt_bytes(used, sizeof used, now ? (double)now->bytes_used : 0);
            fmt_bytes(hw, sizeof hw, now ? (double)now->high_water : 0);
            fmt_bytes(com, sizeof com, now ? (double)now->capacity : 0);
            snprintf(cell[1], sizeof cell[1], "arena");
            snprintf(cell[2], sizeof cell[2], "used %s", used);
            snprintf(cell[3], sizeof cell[3], "%s", "");
            snprintf(cell[4], sizeof cell[4], "high water %s", hw);
            snprintf(cell[5], sizeof cell[5], "committed %s, %llu commits", com,
                     (unsigned long long)(now ? now->commit_events : 0));
            snprintf(cell[6], sizeof cell[6], "%s", "");
        }
    }
    /* Columns as wide as their widest cell, two cells apart; those past the
     * width are left out. */
    int ncols = sized ? COLS : COLS - 1;
    float colx[COLS], x = tb->x + 4 * r->ts, sep = 12 * r->ts;
    int shown = 0;
    for (int k = 0; k < ncols; k++) {
        float w = ovl_text_width(head[k], r->ts);
        for (uint32_t i = 0; i < rows; i++) {
            float cw = ovl_text_width(cells[i][k], r->ts);
            if (cw > w) w = cw;
        }
        if (x + w > tb->x + tb->w) break;
        colx[k] = x;
        x += w + sep;
        shown++;
    }
    for (int k = 0; k < shown; k++) text_at(c, colx[k], tb->y, dim, head[k], NULL);
    uint32_t row = 0;
    for (uint32_t s = 0; s < v->sources && row < rows; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(v->t, s);
        if (si->kind == FM_TELEMETRY_TAG) continue;
        const fm_telemetry_sample *now = v->held ? fm_telemetry_get_sample(v->t, v->held - 1, s) : NULL;
        float y = tb->y + (float)(row + 1) * r->lh;
        ovl_rect(c->b, tb->x - 1, y, 3 * r->ts, 7 * r->ts, ovl_source_color(s));
        bool grew_now = now && now->grow_events > 0;
        for (int k = 0; k < shown; k++) {
            SDL_Color cc = k == 0 ? ovl_source_color(s) : text;
            if (k == 5 && grew_now) cc = (SDL_Color){OVL_GROWTH_R, OVL_GROWTH_G, OVL_GROWTH_B, 255};
            text_at(c, colx[k], y, cc, cells[row][k], NULL);
        }
        row++;
    }
}

/* ------------------------------------------------------------ entry */

bool ovl_draw(ovl_batch *b, SDL_Renderer *rd, const SDL_FRect *area, const fm_telemetry *t,
              const ovl_desc *desc) {
    static plan p; /* one draw at a time (the batch is not thread-safe either) */
    static ctx c;
    plan_make(&p, area, t, desc);
    const resolved *r = &p.r;
    c.b = b;
    c.r = r;
    c.area = *area;
    c.count = c.refused = 0;
    ovl_batch_set_target(b, rd);
    /* Nothing leaves the area. */
    SDL_Rect old_clip, clip = {(int)area->x, (int)area->y, (int)area->w, (int)area->h};
    bool had_clip = SDL_RenderIsClipEnabled(rd);
    SDL_RenderGetClipRect(rd, &old_clip);
    SDL_RenderSetClipRect(rd, &clip);

    const ovl_layout *lo = &p.lo;
    if (!r->backdrop) { /* the caller darkened the area */ }
    else if (r->bg_alpha == 255) opaque_backgrounds(rd, area, lo);
    else ovl_rect(b, area->x, area->y, area->w, area->h, rgb(BACKDROP_RGB, r->bg_alpha));
    text_at(&c, lo->title.x, lo->title.y, rgb(0xFFFFFF, 255), r->title, NULL);
    lines_at(&c, lo->title.x, lo->title.y + r->lh, rgb(TEXT_RGB, 255), p.settings);
    if (r->map) {
        caption(&c, &lo->map, p.cap_map);
    } else {
        caption(&c, &lo->alloc_graph, p.cap_alloc);
        caption(&c, &lo->maint_graph, p.cap_maint);
        caption(&c, &lo->frame_graph, p.cap_frame);
    }
    lines_at(&c, lo->help.x, lo->help.y, rgb(DIM_RGB, 255), p.help);
    table_panel(&c, &p);
    budget_panel(&c, &p);
    if (r->map) {
        map_panel(&c, &p);
    } else {
        legend_panel(&c, &p);
        alloc_panel(&c, &p);
        maint_panel(&c, &p);
        frame_panel(&c, &p);
    }
    flush_texts(&c, desc ? desc->text_rects : NULL);
    bool ok = ovl_batch_flush(b, rd);
    SDL_RenderSetClipRect(rd, had_clip ? &old_clip : NULL);
    return ok;
}
