/*
 * overlay/overlay.h: draws an engine's per-frame allocation telemetry on any
 * SDL_Renderer, inside a rectangle.
 *
 * Input is only a `const fm_telemetry *` (and, from the caller, which frames
 * the OS preempted), so a live engine
 * (eng_get_telemetry) and a CSV file (eng_telemetry_read_csv) draw the same;
 * tools/fm-plot reuses this on a software renderer over a surface. Panels,
 * top to bottom (ovl_layout gives their rectangles):
 *   - allocation time per frame, last `frames` frames, bars stacked by source
 *     in each source's colour (ovl_source_color) with a legend; a y axis
 *     with ticks labelled in us/ms. The scale comes from the p99 of the
 *     frames in view, so one outlier cannot flatten the rest: a taller bar
 *     is clipped at the top, capped in OVL_CLIP_RGB and labelled with its
 *     value. A line at the allocation budget (a share of the frame budget)
 *     when it is on the scale; in a frame where a pool grew inside an
 *     allocation call that pool's part of the bar is drawn in
 *     OVL_GROWTH_RGB with a tick above it, and each spike (growth frames
 *     close together) is named once; a frame the OS preempted has an
 *     OVL_PREEMPT_RGB mark under its bar, so noise is not taken for the
 *     allocator; a frame where a pool was reset (fm_pool_reset: a level's
 *     items gone at once) has a full-height OVL_RESET_RGB line behind its
 *     bars, labelled "reset <pool>";
 *   - maintenance (grow-ahead) time per frame, on its own scale, apart, with
 *     the pool that grew ahead named;
 *   - frame time in four strips, simulation / allocation / maintenance /
 *     render, each on its own p99 scale (clipped and capped as above), so
 *     the small parts stay visible beside render;
 *   - with desc.memory_map, the memory map instead of those three graphs:
 *     each pool's chunks as a grid of cells, a cell's shade from dark (no
 *     live item) to the pool's colour (every slot live), cells as large as
 *     the room allows (a pool with more chunks than fit shows the first and
 *     says how many more);
 *   - memory budgets, when the telemetry has tags: a bar per tag, its
 *     committed bytes in the tag's colour (OVL_SOFT_RGB above the soft
 *     limit, OVL_HARD_RGB at the hard limit or when it refused a growth in
 *     view) against a scale of the larger of its hard limit and its peak,
 *     with ticks at the soft (OVL_SOFT_RGB) and hard (OVL_HARD_RGB) limits;
 *   - a table per pool and closure pool (live, peak, capacity, grow events,
 *     last grow, suggested capacity: none for a malloc-backed source, which
 *     has no capacity to size) and per arena (bytes used, high water,
 *     commits);
 *   - optional caller lines (key help, current settings).
 * Text: every text's rectangle is computed before it is drawn, on a
 * semi-opaque box of its own over the bars: the layout gives fixed texts
 * their own lines (title and settings, captions, legend, table, help;
 * settings and help wrapped to the width), and labels in the graphs
 * (ticks, values, growths, resets, the budget) take the first free place
 * and are left out where none is, so no two texts overlap and none leaves
 * the area (ovl_desc.text_rects lists them). Table columns are as wide as
 * their widest cell; columns that do not fit the width are left out.
 * Drawing allocates nothing: it queues quads into the caller's ovl_batch and
 * flushes once at the end: one SDL_RenderGeometry call when the batch holds
 * them all (OVL_BATCH_QUADS does for 32 sources and 600 frames), or on a
 * software renderer one SDL_RenderFillRectsF call per run of a colour, plus
 * two SDL_RenderFillRect calls for opaque backgrounds. The renderer's clip
 * rectangle is set to the area while drawing and restored after.
 */
#ifndef OVERLAY_OVERLAY_H
#define OVERLAY_OVERLAY_H

#include <SDL.h>
#include <stdbool.h>
#include <stdint.h>

#include "framemem/telemetry.h"
#include "overlay/draw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The colour of in-allocation growth (bars, ticks, labels): magenta, which
 * no source colour, panel or text uses. Tests and fm-plot look for it. */
#define OVL_GROWTH_R 255
#define OVL_GROWTH_G 0
#define OVL_GROWTH_B 255
#define OVL_GROWTH_RGB 0xFF00FFu
/* A pool reset (fm_pool_reset): a white line behind the frame's bars. */
#define OVL_RESET_RGB 0xFFFFFFu
/* Maintenance (grow-ahead) bars. */
#define OVL_MAINT_RGB 0xE6E6E6u
/* Memory budgets: above a tag's soft limit, and at its hard limit. */
#define OVL_SOFT_RGB 0xFFD23Cu
#define OVL_HARD_RGB 0xFF4040u
/* Frame time graph: simulation, allocation, maintenance, render. */
#define OVL_SIM_RGB 0x4A90E2u
#define OVL_ALLOC_RGB 0xF5A623u
#define OVL_RENDER_RGB 0x7ED321u
/* A frame the OS preempted (an involuntary context switch between its
 * begin and end, ovl_desc.preempted_ring): a mark under its bar. */
#define OVL_PREEMPT_RGB 0xB4B4B4u
/* A bar taller than the scale: clipped at the top, capped in this colour
 * and labelled with its value. */
#define OVL_CLIP_RGB 0xC0FFFFu
/* Texts an ovl_text_rects holds at most (the overlay draws fewer). */
#define OVL_MAX_TEXTS 256

/* Where every text of a draw went (its rectangle at the text's scale:
 * width of its widest line, lines x line height less the gap under the
 * last line). Filled by ovl_draw when ovl_desc.text_rects is set. */
typedef struct ovl_text_rects {
    SDL_FRect rects[OVL_MAX_TEXTS];
    char text[OVL_MAX_TEXTS][160]; /* each text (a line), its first 159 characters */
    uint32_t count;
    uint32_t refused; /* texts of the layout (title, settings, captions,
                         legend, table, help) left out because they met
                         another or the area's edge: 0 unless the area is
                         too small for them */
} ovl_text_rects;

/* One pool of the memory map: how full each of its chunks is. */
typedef struct ovl_map_pool {
    const char *name;
    uint32_t source;          /* its telemetry source (its colour); UINT32_MAX: none */
    const uint32_t *live;     /* live items of each chunk (fm_pool_chunk_occupancy) */
    uint32_t chunks;          /* entries in live */
    uint32_t items_per_chunk;
    uint64_t chunk_bytes;
} ovl_map_pool;

/* Size of a batch that draws the whole overlay in one flush. */
#define OVL_BATCH_QUADS 65536
/* Number of distinct source colours before they repeat. */
#define OVL_PALETTE_SIZE 12

typedef struct ovl_desc {
    uint32_t frames;          /* frames shown; 0 = 600 (fewer when fewer held) */
    double frame_budget_ns;   /* 0 = 16,666,667 (60 fps) */
    double alloc_budget_share;/* allocation budget line = share x frame budget; 0 = 0.01 */
    double headroom;          /* suggested capacity = peak x headroom; 0 = 1.25 */
    float text_scale;         /* 0 = 1 */
    uint8_t background_alpha; /* panel backdrop; 0 = 170; 255 = opaque, filled
                                 with two SDL_RenderFillRect calls instead of
                                 blended quads */
    bool no_backdrop;         /* no panel or graph background at all: the caller
                                 has darkened the area itself (the demo does, in
                                 its scene texture, on software renderers) */
    const char *title;        /* first line; NULL = "framemem: allocation per frame" */
    const char *settings;     /* lines under the title ('\n' between them: current
                                 settings, a status message); NULL = none */
    const char *help;         /* last line (keys), wrapped to the width; NULL = none */
    /* Frames the OS preempted: entry f % preempted_ring_len holds f + 1 when
     * frame f (fm_telemetry_frame.frame) was; NULL = none known. */
    const uint64_t *preempted_ring;
    uint32_t preempted_ring_len;
    ovl_text_rects *text_rects; /* when set, every text's rectangle (for tests) */
    /* The memory map in place of the three graphs: each pool's chunks as a
     * grid of cells shaded by occupancy (map_pools, map_pool_count; none:
     * map_note says why, e.g. no framemem pools on this backend). */
    bool memory_map;
    const ovl_map_pool *map_pools;
    uint32_t map_pool_count;
    const char *map_note;
} ovl_desc;

typedef struct ovl_layout {
    SDL_FRect title;       /* title and settings lines */
    SDL_FRect alloc_graph; /* the stacked allocation bars */
    SDL_FRect legend;      /* source colours */
    SDL_FRect maint_graph; /* grow-ahead time */
    SDL_FRect frame_graph; /* frame time split */
    SDL_FRect map;         /* the memory map (desc.memory_map; the graphs are then empty) */
    SDL_FRect budgets;     /* a bar per tag (height 0 without tags) */
    SDL_FRect bars;        /* inside budgets: where the bars are drawn (full scale) */
    SDL_FRect table;       /* per-pool and per-arena rows */
    SDL_FRect help;        /* key help line */
} ovl_layout;

/// The colour source i is drawn in (opaque; never OVL_GROWTH_RGB).
SDL_Color ovl_source_color(uint32_t source);
/// Where each panel goes inside area for this telemetry and desc (desc may be NULL).
void ovl_layout_compute(const SDL_FRect *area, const fm_telemetry *t, const ovl_desc *desc,
                        ovl_layout *out);
/// Draws the overlay for t into area (desc may be NULL for defaults): queues
/// into b, then flushes b into r. Returns false when SDL refused to draw
/// (SDL_GetError()).
bool ovl_draw(ovl_batch *b, SDL_Renderer *r, const SDL_FRect *area, const fm_telemetry *t,
              const ovl_desc *desc);

#ifdef __cplusplus
}
#endif
#endif /* OVERLAY_OVERLAY_H */
