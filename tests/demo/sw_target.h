/*
 * sw_target.h: a software renderer over a surface, for the overlay suites
 * (the way tools/fm-plot and the demo's --headless draw).
 */
#ifndef TESTS_DEMO_SW_TARGET_H
#define TESTS_DEMO_SW_TARGET_H

#include <SDL.h>

typedef struct sw_target {
    SDL_Surface *surface;
    SDL_Renderer *r;
} sw_target;

/* A w x h ARGB8888 surface cleared to black, with its renderer. */
static inline sw_target sw_target_open(int w, int h) {
    sw_target t;
    t.surface = SDL_CreateRGBSurfaceWithFormat(0, w, h, 32, SDL_PIXELFORMAT_ARGB8888);
    assert_non_null(t.surface);
    t.r = SDL_CreateSoftwareRenderer(t.surface);
    assert_non_null(t.r);
    SDL_SetRenderDrawColor(t.r, 0, 0, 0, 255);
    SDL_RenderClear(t.r);
    return t;
}

static inline void sw_target_close(sw_target *t) {
    SDL_DestroyRenderer(t->r);
    SDL_FreeSurface(t->surface);
}

/* 0xRRGGBB at (x, y). */
static inline Uint32 sw_pixel(const sw_target *t, int x, int y) {
    const Uint32 *row = (const Uint32 *)((const Uint8 *)t->surface->pixels + y * t->surface->pitch);
    return row[x] & 0xFFFFFFu;
}

#endif /* TESTS_DEMO_SW_TARGET_H */
