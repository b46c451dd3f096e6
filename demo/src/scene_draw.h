/*
 * scene_draw.h: draws the engine's render list with a handful of draw calls.
 *
 * Particles are written as pixels into one streaming texture the size of the
 * output (SDL_LockTexture), which also carries the background, then copied
 * with one SDL_RenderCopy. Entities and effects are quads, one
 * SDL_RenderGeometry call per layer.
 */
#ifndef DEMO_SCENE_DRAW_H
#define DEMO_SCENE_DRAW_H

#include <SDL.h>
#include <stdbool.h>

#include "engine/engine.h"
#include "overlay/draw.h"

typedef struct demo_scene_draw {
    SDL_Texture *particles; /* streaming, ARGB8888, output size */
    ovl_batch *quads;
    int width, height;
    int draw_calls; /* of the newest demo_scene_draw_list */
} demo_scene_draw;

/// Creates the streaming texture and the quad batch for an output of w x h
/// pixels. false with a message in err.
bool demo_scene_draw_init(demo_scene_draw *s, SDL_Renderer *r, int w, int h, char *err, size_t n);
void demo_scene_draw_deinit(demo_scene_draw *s);
/// Draws the list; world units are scaled by (sx, sy) to pixels. Inside dim
/// (NULL: nowhere) background and sprites are darkened, so an overlay drawn
/// there without a backdrop stays readable at no blending cost.
void demo_scene_draw_list(demo_scene_draw *s, SDL_Renderer *r, const eng_render_list *list, float sx,
                          float sy, const SDL_Rect *dim);

#endif /* DEMO_SCENE_DRAW_H */
