/*
 * overlay.c: the telemetry overlay (see overlay.h for what each panel shows).
 */
#include "overlay/overlay.h"

#include <stdio.h>
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

SDL_Color ovl_source_color(uint32_t source) {
    return rgb(palette[source % OVL_PALETTE_SIZE], 255);
}

/* ------------------------------------------------------------ desc, layout */

typedef struct resolved {
    uint32_t frames;
    double frame_budget_ns, alloc_budget_ns, headroom;
    float ts, lh; /* text scale, line height */
    uint8_t bg_alpha;
    bool backdrop;
    const char *title, *settings, *help;
} resolved;

static resolved resolve(const ovl_desc *d) {
    static const ovl_desc zero;
    if (!d) d = &zero;
    resolved r;
    r.frames = d->frames ? d->frames : 600;
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
    return r;
}

/* Legend entries per line: each gets a fixed slot wide enough for a name. */
static int legend_per_line(float w, float ts) {
    int n = (int)(w / (120.0f * ts));
    return n < 1 ? 1 : n;
}

static SDL_FRect frect(float x, float y, float w, float h) {
    return (SDL_FRect){x, y, w > 0 ? w : 0, h > 0 ? h : 0};
}

/* Sources by what the panels show: tags get a budget bar, the others a
 * table row. */
static uint32_t count_tags(const fm_telemetry *t) {
    uint32_t n = 0;
    for (uint32_t s = 0; s < fm_telemetry_source_count(t); s++)
        n += fm_telemetry_get_source(t, s)->kind == FM_TELEMETRY_TAG;
    return n;
}

static void layout(const SDL_FRect *area, const fm_telemetry *t, const resolved *r, ovl_layout *o) {
    const float pad = 6 * r->ts, lh = r->lh;
    float x = area->x + pad, w = area->w - 2 * pad;
    float top = area->y + pad, bottom = area->y + area->h - pad;
    uint32_t sources = fm_telemetry_source_count(t), tags = count_tags(t);

    float settings_lines = 0;
    if (r->settings) {
        settings_lines = 1;
        for (const char *c = r->settings; *c; c++) settings_lines += *c == '\n';
    }
    o->title = frect(x, top, w, lh * (1 + settings_lines));
    top += o->title.h + lh * 0.5f;
    o->help = frect(x, bottom - (r->help ? lh : 0), w, r->help ? lh : 0);
    bottom = o->help.y - (r->help ? lh * 0.5f : 0);
    /* header + one row per source but the tags */
    float rows = (float)(sources - tags + 1);
    o->table = frect(x, bottom - lh * rows, w, lh * rows);
    bottom = o->table.y - lh * 0.5f;
    /* a budget bar per tag, above the table */
    o->budgets = frect(x, bottom - lh * (float)tags, w, lh * (float)tags);
    float name_w = 20 * 6.0f * r->ts;
    o->bars = frect(x + name_w, o->budgets.y, (w - name_w) * 0.45f, o->budgets.h);
    if (tags) bottom = o->budgets.y - lh * 0.5f;
    int per = legend_per_line(w, r->ts);
    float legend_lines = (float)((sources + (uint32_t)per - 1) / (uint32_t)per);
    /* What is left goes to the three graphs, each with a caption line above. */
    float graphs = bottom - top - lh * legend_lines - 3 * lh - 2 * lh * 0.5f;
    if (graphs < 30) graphs = 30;
    float ga = graphs * 0.55f, gm = graphs * 0.12f, gf = graphs - ga - gm;
    o->alloc_graph = frect(x, top + lh, w, ga);
    top = o->alloc_graph.y + ga + 2;
    o->legend = frect(x, top, w, lh * legend_lines);
    top += o->legend.h + lh * 0.5f;
    o->maint_graph = frect(x, top + lh, w, gm);
    top = o->maint_graph.y + gm + lh * 0.5f;
    o->frame_graph = frect(x, top + lh, w, gf);
}

void ovl_layout_compute(const SDL_FRect *area, const fm_telemetry *t, const ovl_desc *desc,
                        ovl_layout *out) {
    resolved r = resolve(desc);
    layout(area, t, &r, out);
}

/* ------------------------------------------------------------ formatting */

/* Durations as text: ns below 10 us are shown with one decimal of us. */
static void fmt_ns(char *buf, size_t n, double ns) {
    if (ns >= 1e6) snprintf(buf, n, "%.2f ms", ns / 1e6);
    else snprintf(buf, n, "%.1f us", ns / 1e3);
}

static void fmt_bytes(char *buf, size_t n, double b) {
    if (b >= 1024.0 * 1024.0) snprintf(buf, n, "%.1f MiB", b / (1024.0 * 1024.0));
    else if (b >= 1024.0) snprintf(buf, n, "%.1f KiB", b / 1024.0);
    else snprintf(buf, n, "%.0f B", b);
}

/* ------------------------------------------------------------ panels */

typedef struct view {
    const fm_telemetry *t;
    uint32_t held, shown, first; /* frames in the ring, shown, index of oldest shown */
    uint32_t slots;              /* bar slots across the graph (r.frames) */
    uint32_t sources;
} view;

static float slot_x(const view *v, const SDL_FRect *g, uint32_t k) {
    /* Newest frame at the right edge; fewer frames than slots leave the left empty. */
    return g->x + g->w * (float)(v->slots - v->shown + k) / (float)v->slots;
}

/* Panel backdrop and graph background. Translucent ones are quads in the
 * batch; opaque ones (background_alpha 255) are filled up front with
 * SDL_RenderFillRect, which a software renderer does at memset speed where a
 * blended full-window quad costs several milliseconds. */
#define BACKDROP_RGB 0x0C0E14u
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
    SDL_RenderFillRectsF(rd, graphs, 3);
}

static void hline(ovl_batch *b, const SDL_FRect *g, double value, double ymax, SDL_Color c) {
    if (value > ymax) return;
    float y = g->y + g->h - (float)(value / ymax) * g->h;
    ovl_rect(b, g->x, y, g->w, 1, c);
}

/* A pool name beside frame x, on the first of `rows` label rows that is free
 * there, so neighbouring labels do not overwrite each other (else skipped). */
static void place_label(ovl_batch *b, float *row_end, int rows, float x, float y0, const resolved *r,
                        SDL_Color c, const char *name) {
    for (int row = 0; row < rows; row++) {
        if (x < row_end[row]) continue;
        row_end[row] = x + ovl_text(b, x + 2, y0 + (float)row * r->lh, r->ts, c, name) + 8;
        return;
    }
}

/* Height of one source's bar segment; a growth is never invisible. */
static float segment_height(const fm_telemetry_sample *sm, double ymax, float full) {
    float h = (float)((double)sm->alloc_ns / ymax) * full;
    if (sm->grow_events > 0 && h < 2) h = 2;
    return h > 0 ? h : 0;
}

static void alloc_panel(ovl_batch *b, const view *v, const SDL_FRect *g, const resolved *r) {
    double peak = 0;
    uint64_t grows = 0, resets = 0;
    for (uint32_t k = 0; k < v->shown; k++) {
        double sum = 0;
        for (uint32_t s = 0; s < v->sources; s++) {
            const fm_telemetry_sample *sm = fm_telemetry_get_sample(v->t, v->first + k, s);
            sum += (double)sm->alloc_ns;
            if (fm_telemetry_get_source(v->t, s)->kind == FM_TELEMETRY_POOL) resets += sm->resets;
        }
        if (sum > peak) peak = sum;
        grows += fm_telemetry_get_frame(v->t, v->first + k)->grow_events;
    }
    double ymax = (peak > r->alloc_budget_ns ? peak : r->alloc_budget_ns) * 1.1;
    if (ymax < 1000) ymax = 1000;

    char cap[256], a[32], bud[32];
    fmt_ns(a, sizeof a, peak);
    fmt_ns(bud, sizeof bud, r->alloc_budget_ns);
    snprintf(cap, sizeof cap,
             "allocation time per frame, stacked by pool (last %u frames): max %s; growth inside "
             "an allocation in magenta (%llu in view); pool resets white (%llu)",
             v->shown, a, (unsigned long long)grows, (unsigned long long)resets);
    ovl_text(b, g->x, g->y - r->lh, r->ts, rgb(TEXT_RGB, 255), cap);
    graph_frame(b, g, r);

    float bw = g->w / (float)v->slots;
    const SDL_Color grow = {OVL_GROWTH_R, OVL_GROWTH_G, OVL_GROWTH_B, 255};
    /* Pool resets (arenas reset every frame: not marked), behind the bars,
     * named on a fourth label row under the growths' three. */
    const SDL_Color reset_c = rgb(OVL_RESET_RGB, 255);
    float reset_end[1] = {-1e9f};
    for (uint32_t k = 0; resets && k < v->shown; k++)
        for (uint32_t s = 0; s < v->sources; s++) {
            if (fm_telemetry_get_source(v->t, s)->kind != FM_TELEMETRY_POOL ||
                !fm_telemetry_get_sample(v->t, v->first + k, s)->resets)
                continue;
            float x = slot_x(v, g, k);
            ovl_rect(b, x, g->y, 1, g->h - 1, reset_c);
            char lab[FM_TELEMETRY_NAME_MAX + 8];
            snprintf(lab, sizeof lab, "reset %s", fm_telemetry_get_source(v->t, s)->name);
            place_label(b, reset_end, 1, x, g->y + 5 * r->ts + 3 * r->lh, r, reset_c, lab);
            break;
        }
    /* Source by source (then frame by frame): long runs of one colour, which
     * a software renderer fills with one call each. A segment's base is the
     * sum of the segments below it in the same frame. */
    for (uint32_t s = 0; s < v->sources; s++)
        for (uint32_t k = 0; k < v->shown; k++) {
            float bottom = g->y + g->h - 1, h = 0;
            for (uint32_t below = 0; below <= s; below++) {
                const fm_telemetry_sample *sm = fm_telemetry_get_sample(v->t, v->first + k, below);
                h = segment_height(sm, ymax, g->h - 1);
                if (below < s) bottom -= h;
            }
            if (h <= 0) continue;
            bool grown = fm_telemetry_get_sample(v->t, v->first + k, s)->grow_events > 0;
            ovl_rect(b, slot_x(v, g, k), bottom - h, bw > 1 ? bw : 1, h, grown ? grow : ovl_source_color(s));
        }
    /* Growth labels go on three rows so neighbours do not overwrite each other. */
    float label_end[3] = {-1e9f, -1e9f, -1e9f};
    for (uint32_t k = 0; k < v->shown; k++) {
        float x = slot_x(v, g, k);
        const char *grew = NULL;
        for (uint32_t s = 0; s < v->sources && !grew; s++)
            if (fm_telemetry_get_sample(v->t, v->first + k, s)->grow_events)
                grew = fm_telemetry_get_source(v->t, s)->name;
        if (grew) {
            ovl_rect(b, x, g->y, bw > 2 ? bw : 2, 4 * r->ts, grow);
            place_label(b, label_end, 3, x, g->y + 5 * r->ts, r, grow, grew);
        }
    }
    hline(b, g, r->alloc_budget_ns, ymax, rgb(BUDGET_RGB, 255));
    char lab[96];
    snprintf(lab, sizeof lab, "budget %.1f%% of frame = %s", 100.0 * r->alloc_budget_ns / r->frame_budget_ns,
             bud);
    float lw = ovl_text_width(lab, r->ts);
    float by = g->y + g->h - (float)(r->alloc_budget_ns / ymax) * g->h;
    ovl_text(b, g->x + g->w - lw - 4, by - r->lh, r->ts, rgb(BUDGET_RGB, 255), lab);
}

static void legend_panel(ovl_batch *b, const view *v, const SDL_FRect *l, const resolved *r) {
    int per = legend_per_line(l->w, r->ts);
    for (uint32_t s = 0; s < v->sources; s++) {
        float x = l->x + (float)(s % (uint32_t)per) * 120.0f * r->ts;
        float y = l->y + (float)(s / (uint32_t)per) * r->lh;
        ovl_rect(b, x, y, 8 * r->ts, 7 * r->ts, ovl_source_color(s));
        ovl_text(b, x + 11 * r->ts, y, r->ts, rgb(TEXT_RGB, 255), fm_telemetry_get_source(v->t, s)->name);
    }
}

static void maint_panel(ovl_batch *b, const view *v, const SDL_FRect *g, const resolved *r) {
    double peak = 0;
    uint64_t ahead = 0;
    for (uint32_t k = 0; k < v->shown; k++) {
        const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
        if ((double)f->maint_ns > peak) peak = (double)f->maint_ns;
        ahead += f->ahead_grow_events;
    }
    double ymax = peak * 1.1 > 1000 ? peak * 1.1 : 1000;
    char cap[160], a[32];
    fmt_ns(a, sizeof a, peak);
    snprintf(cap, sizeof cap,
             "maintenance at the frame boundary (grow-ahead, own scale): max %s, %llu ahead growths in view",
             a, (unsigned long long)ahead);
    ovl_text(b, g->x, g->y - r->lh, r->ts, rgb(TEXT_RGB, 255), cap);
    graph_frame(b, g, r);
    float bw = g->w / (float)v->slots;
    float label_end[1] = {-1e9f};
    for (uint32_t k = 0; k < v->shown; k++) {
        const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
        float h = (float)((double)f->maint_ns / ymax) * (g->h - 1);
        if (f->ahead_grow_events && h < 2) h = 2;
        float x = slot_x(v, g, k);
        ovl_rect(b, x, g->y + g->h - 1 - h, bw > 1 ? bw : 1, h, rgb(OVL_MAINT_RGB, 255));
        if (!f->ahead_grow_events) continue;
        /* Name the pool that grew ahead (the first one, as in the allocation graph). */
        for (uint32_t s = 0; s < v->sources; s++)
            if (fm_telemetry_get_sample(v->t, v->first + k, s)->ahead_grow_events) {
                place_label(b, label_end, 1, x, g->y + 1, r, rgb(OVL_MAINT_RGB, 255),
                            fm_telemetry_get_source(v->t, s)->name);
                break;
            }
    }
}

static void frame_panel(ovl_batch *b, const view *v, const SDL_FRect *g, const resolved *r) {
    double peak = 0, last = 0;
    for (uint32_t k = 0; k < v->shown; k++) {
        const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
        /* in double: a record from a file may hold any uint64_t */
        double sum = (double)f->sim_ns + (double)f->alloc_total_ns + (double)f->maint_ns +
                     (double)f->render_ns;
        if (sum > peak) peak = sum;
        last = sum;
    }
    double ymax = (peak > r->frame_budget_ns ? peak : r->frame_budget_ns) * 1.1;
    char cap[200], a[32], l[32], bud[32];
    fmt_ns(a, sizeof a, peak);
    fmt_ns(l, sizeof l, last);
    fmt_ns(bud, sizeof bud, r->frame_budget_ns);
    snprintf(cap, sizeof cap, "frame time: last %s, max %s (budget %s) - ", l, a, bud);
    float x = g->x + ovl_text(b, g->x, g->y - r->lh, r->ts, rgb(TEXT_RGB, 255), cap);
    static const struct { const char *name; uint32_t rgb; } parts[] = {
        {"simulation ", OVL_SIM_RGB}, {"allocation ", OVL_ALLOC_RGB},
        {"maintenance ", OVL_MAINT_RGB}, {"render", OVL_RENDER_RGB}};
    for (size_t i = 0; i < 4; i++)
        x += ovl_text(b, x, g->y - r->lh, r->ts, rgb(parts[i].rgb, 255), parts[i].name);
    graph_frame(b, g, r);
    float bw = g->w / (float)v->slots;
    /* Part by part (then frame by frame): long runs of one colour, which a
     * software renderer fills with one call each. */
    for (size_t i = 0; i < 4; i++)
        for (uint32_t k = 0; k < v->shown; k++) {
            const fm_telemetry_frame *f = fm_telemetry_get_frame(v->t, v->first + k);
            const uint64_t part_ns[4] = {f->sim_ns, f->alloc_total_ns, f->maint_ns, f->render_ns};
            float bottom = g->y + g->h - 1;
            for (size_t j = 0; j < i; j++) bottom -= (float)((double)part_ns[j] / ymax) * (g->h - 1);
            float h = (float)((double)part_ns[i] / ymax) * (g->h - 1);
            if (h > 0) ovl_rect(b, slot_x(v, g, k), bottom - h, bw > 1 ? bw : 1, h, rgb(parts[i].rgb, 255));
        }
    hline(b, g, r->frame_budget_ns, ymax, rgb(BUDGET_RGB, 255));
}

/* A bar per tag: committed bytes of the newest frame against the larger of
 * the hard limit and the peak in view, ticks at the limits. */
static void budget_panel(ovl_batch *b, const view *v, const ovl_layout *lo, const resolved *r) {
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
        ovl_text(b, lo->budgets.x + 4 * r->ts, y, r->ts, ovl_source_color(s), si->name);
        char c[24], p[24], sl[24], hl[24], line[160];
        fmt_bytes(c, sizeof c, committed);
        fmt_bytes(p, sizeof p, peak);
        if (soft > 0) fmt_bytes(sl, sizeof sl, soft);
        else snprintf(sl, sizeof sl, "none");
        if (hard > 0) fmt_bytes(hl, sizeof hl, hard);
        else snprintf(hl, sizeof hl, "none");
        snprintf(line, sizeof line, "%s committed, peak %s | soft %s, hard %s%s", c, p, sl, hl,
                 refused ? " | growth refused" : "");
        ovl_text(b, bars->x + bars->w + 8 * r->ts, y, r->ts, refused ? hard_c : row == 1 ? text : dim,
                 line);
    }
}

static void table_panel(ovl_batch *b, const view *v, const SDL_FRect *tb, const resolved *r) {
    /* Column starts in character cells (stb_easy_font is about 6 px a cell). */
    static const int col[] = {0, 20, 31, 42, 53, 68, 92};
    const float cw = 6.0f * r->ts;
    const SDL_Color text = rgb(TEXT_RGB, 255), dim = rgb(DIM_RGB, 255);
    /* Sizes to suggest only where something is sized: not malloc's items. */
    bool sized = false;
    for (uint32_t s = 0; s < v->sources; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(v->t, s);
        sized |= si->kind == FM_TELEMETRY_POOL && si->backend != FM_TELEMETRY_BACKEND_MALLOC;
    }
    static const char *const head[] = {"pool", "live", "peak", "capacity", "grow events",
                                       "last grow (frame, time)", "suggested capacity"};
    for (int c = 0; c < (sized ? 7 : 6); c++)
        ovl_text(b, tb->x + (float)col[c] * cw, tb->y, r->ts, dim, head[c]);
    const fm_telemetry_sample *now = NULL;
    uint32_t row = 0;
    for (uint32_t s = 0; s < v->sources; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(v->t, s);
        if (si->kind == FM_TELEMETRY_TAG) continue; /* the budget panel's */
        now = v->held ? fm_telemetry_get_sample(v->t, v->held - 1, s) : NULL;
        float y = tb->y + (float)(++row) * r->lh;
        char cell[7][48];
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
        ovl_rect(b, tb->x - 1, y, 3 * r->ts, 7 * r->ts, ovl_source_color(s));
        bool grew_now = now && now->grow_events > 0;
        for (int c = 0; c < 7; c++) {
            SDL_Color cc = c == 0 ? ovl_source_color(s) : text;
            if (c == 5 && grew_now) cc = (SDL_Color){OVL_GROWTH_R, OVL_GROWTH_G, OVL_GROWTH_B, 255};
            ovl_text(b, tb->x + (float)col[c] * cw + (c == 0 ? 4 * r->ts : 0), y, r->ts, cc, cell[c]);
        }
    }
}

/* ------------------------------------------------------------ entry */

bool ovl_draw(ovl_batch *b, SDL_Renderer *rd, const SDL_FRect *area, const fm_telemetry *t,
              const ovl_desc *desc) {
    resolved r = resolve(desc);
    ovl_layout lo;
    layout(area, t, &r, &lo);
    view v;
    v.t = t;
    v.held = fm_telemetry_frame_count(t);
    v.slots = r.frames;
    v.shown = v.held < r.frames ? v.held : r.frames;
    v.first = v.held - v.shown;
    v.sources = fm_telemetry_source_count(t);
    ovl_batch_set_target(b, rd);
    /* Nothing leaves the area: long captions and table rows are clipped. */
    SDL_Rect old_clip, clip = {(int)area->x, (int)area->y, (int)area->w, (int)area->h};
    bool had_clip = SDL_RenderIsClipEnabled(rd);
    SDL_RenderGetClipRect(rd, &old_clip);
    SDL_RenderSetClipRect(rd, &clip);

    if (!r.backdrop) { /* the caller darkened the area */ }
    else if (r.bg_alpha == 255) opaque_backgrounds(rd, area, &lo);
    else ovl_rect(b, area->x, area->y, area->w, area->h, rgb(BACKDROP_RGB, r.bg_alpha));
    ovl_text(b, lo.title.x, lo.title.y, r.ts, rgb(0xFFFFFF, 255), r.title);
    if (r.settings) ovl_text(b, lo.title.x, lo.title.y + r.lh, r.ts, rgb(TEXT_RGB, 255), r.settings);
    alloc_panel(b, &v, &lo.alloc_graph, &r);
    legend_panel(b, &v, &lo.legend, &r);
    maint_panel(b, &v, &lo.maint_graph, &r);
    frame_panel(b, &v, &lo.frame_graph, &r);
    budget_panel(b, &v, &lo, &r);
    table_panel(b, &v, &lo.table, &r);
    if (r.help) ovl_text(b, lo.help.x, lo.help.y, r.ts, rgb(DIM_RGB, 255), r.help);
    bool ok = ovl_batch_flush(b, rd);
    SDL_RenderSetClipRect(rd, had_clip ? &old_clip : NULL);
    return ok;
}
