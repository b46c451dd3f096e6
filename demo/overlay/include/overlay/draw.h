/*
 * overlay/draw.h: batched 2D drawing on any SDL_Renderer (window, or a
 * software renderer over a surface), for the overlay and the demo's scene.
 *
 * An ovl_batch collects coloured quads (rectangles, lines, stb_easy_font
 * text) into vertex and index arrays allocated once at create, and submits
 * them with one SDL_RenderGeometry call per flush, however many quads it
 * holds. A batch flushes itself when full.
 * Coordinates are in renderer pixels (floats). Not thread-safe: one batch per
 * thread that draws. Names use the ovl_ prefix (the overlay library).
 */
#ifndef OVERLAY_DRAW_H
#define OVERLAY_DRAW_H

#include <SDL.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ovl_batch ovl_batch;

/// Pixel height of one line of text at scale 1 (stb_easy_font glyph height
/// plus line gap).
#define OVL_TEXT_LINE_HEIGHT 11

/// Creates a batch that holds up to max_quads quads between flushes (0: 16384).
/// Returns NULL when out of memory. The caller destroys it.
ovl_batch *ovl_batch_create(int max_quads);
void ovl_batch_destroy(ovl_batch *b);

/// Submits everything queued with one SDL_RenderGeometry call (alpha blending
/// when a queued quad is translucent, none when all are opaque) and empties the
/// batch. On a software renderer, when every quad is an opaque rectangle and
/// the colours come in runs (8 quads a run or more on average), each run is one
/// SDL_RenderFillRectsF call instead, in queue order: the same picture, filled
/// at memset speed instead of rasterised. Returns false (the batch emptied
/// all the same) when SDL refuses (SDL_GetError() says why).
bool ovl_batch_flush(ovl_batch *b, SDL_Renderer *r);
/// The renderer a full batch flushes into: set before queueing (NULL: a full
/// batch drops further quads and counts them in ovl_batch_dropped).
void ovl_batch_set_target(ovl_batch *b, SDL_Renderer *r);
/// Quads dropped because the batch was full with no target set.
int ovl_batch_dropped(const ovl_batch *b);
/// Draw calls (SDL_RenderGeometry or SDL_RenderFillRectsF) made by this batch so far.
int ovl_batch_draw_calls(const ovl_batch *b);

/// Queues a filled axis-aligned rectangle.
void ovl_rect(ovl_batch *b, float x, float y, float w, float h, SDL_Color c);
/// Queues a rectangle outline of the given thickness.
void ovl_rect_outline(ovl_batch *b, float x, float y, float w, float h, float t, SDL_Color c);
/// Queues a line segment drawn as a quad of thickness t.
void ovl_line(ovl_batch *b, float x0, float y0, float x1, float y1, float t, SDL_Color c);
/// Queues text (stb_easy_font, ASCII 32..126, '\n' starts a new line) with its
/// top-left at (x, y), scaled by scale (1 = 7 px capitals). Returns the width
/// in pixels of the widest line.
float ovl_text(ovl_batch *b, float x, float y, float scale, SDL_Color c, const char *text);
/// Width in pixels of the widest line of text at the given scale.
float ovl_text_width(const char *text, float scale);

#ifdef __cplusplus
}
#endif
#endif /* OVERLAY_DRAW_H */
