/*
 * scene_draw.c: particles as pixels in one streaming texture, the rest as
 * batched quads. Particles are the bulk of a frame's sprites (100,000 at
 * --scale 5): as pixels they cost one texture upload plus a few calls,
 * whatever their count, where a quad each would cost the renderer per
 * sprite.
 */
#include "scene_draw.h"

#include <stdio.h>
#include <string.h>

#define BACKGROUND_ARGB 0xFF0E1118u
#define DIM_BACKGROUND_ARGB 0xFF07080Cu

/* A colour at a quarter of its brightness (alpha kept): dense scenes at
 * --scale 5 stay behind the overlay's text. */
static Uint32 dim_argb(Uint32 argb) {
    return (argb & 0xFF000000u) | ((argb >> 2) & 0x003F3F3Fu);
}

static bool inside(const SDL_Rect *d, int x, int y) {
    return d && x >= d->x && y >= d->y && x < d->x + d->w && y < d->y + d->h;
}

bool demo_scene_draw_init(demo_scene_draw *s, SDL_Renderer *r, int w, int h, char *err, size_t n) {
    memset(s, 0, sizeof *s);
    s->width = w;
    s->height = h;
    s->particles = SDL_CreateTexture(r, SDL_PIXELFORMAT_ARGB8888, SDL_TEXTUREACCESS_STREAMING, w, h);
    if (!s->particles) {
        snprintf(err, n, "cannot create the %dx%d particle texture: %s", w, h, SDL_GetError());
        return false;
    }
    /* Opaque: the texture is the background too, so the copy needs no blending. */
    SDL_SetTextureBlendMode(s->particles, SDL_BLENDMODE_NONE);
    s->quads = ovl_batch_create(0);
    if (!s->quads) {
        snprintf(err, n, "out of memory for the scene's quad batch");
        demo_scene_draw_deinit(s);
        return false;
    }
    ovl_batch_set_target(s->quads, r);
    return true;
}

void demo_scene_draw_deinit(demo_scene_draw *s) {
    if (s->particles) SDL_DestroyTexture(s->particles);
    ovl_batch_destroy(s->quads);
    memset(s, 0, sizeof *s);
}

/* Two row patterns (with and without the dimmed span), copied row by row. */
static void fill_background(Uint8 *pixels, int pitch, int w, int h, const SDL_Rect *dim) {
    Uint32 *plain = (Uint32 *)pixels;
    for (int x = 0; x < w; x++) plain[x] = BACKGROUND_ARGB;
    int y0 = dim ? SDL_max(dim->y, 0) : h, y1 = dim ? SDL_min(dim->y + dim->h, h) : h;
    for (int y = 1; y < h; y++)
        if (y < y0 || y >= y1) memcpy(pixels + (size_t)y * (size_t)pitch, plain, (size_t)w * 4);
    if (y0 >= y1) return;
    Uint32 *first = (Uint32 *)(pixels + (size_t)y0 * (size_t)pitch);
    for (int x = 0; x < w; x++) first[x] = inside(dim, x, y0) ? DIM_BACKGROUND_ARGB : BACKGROUND_ARGB;
    for (int y = y0 + 1; y < y1; y++) memcpy(pixels + (size_t)y * (size_t)pitch, first, (size_t)w * 4);
}

static void plot_particles(Uint8 *pixels, int pitch, int w, int h, const eng_sprite *sp, uint32_t n,
                           float sx, float sy, const SDL_Rect *dim) {
    for (uint32_t i = 0; i < n; i++) {
        const eng_sprite *p = sp + i;
        int size = (int)(p->size * sx + 0.5f);
        if (size < 1) size = 1;
        if (size > 8) size = 8;
        int x0 = (int)(p->x * sx) - size / 2, y0 = (int)(p->y * sy) - size / 2;
        int x1 = x0 + size, y1 = y0 + size;
        if (x0 < 0) x0 = 0;
        if (y0 < 0) y0 = 0;
        if (x1 > w) x1 = w;
        if (y1 > h) y1 = h;
        Uint32 argb = 0xFF000000u | (p->rgba >> 8);
        if (inside(dim, x0, y0)) argb = dim_argb(argb);
        for (int y = y0; y < y1; y++) {
            Uint32 *row = (Uint32 *)(pixels + (size_t)y * (size_t)pitch);
            for (int x = x0; x < x1; x++) row[x] = argb;
        }
    }
}

static void queue_quads(ovl_batch *b, const eng_sprite *sp, uint32_t n, float sx, float sy,
                        const SDL_Rect *dim) {
    for (uint32_t i = 0; i < n; i++) {
        const eng_sprite *p = sp + i;
        float wx = p->size * sx, wy = p->size * sy;
        SDL_Color c = {(Uint8)(p->rgba >> 24), (Uint8)(p->rgba >> 16), (Uint8)(p->rgba >> 8),
                       (Uint8)p->rgba};
        if (inside(dim, (int)(p->x * sx), (int)(p->y * sy))) {
            c.r = (Uint8)(c.r / 4);
            c.g = (Uint8)(c.g / 4);
            c.b = (Uint8)(c.b / 4);
        }
        ovl_rect(b, p->x * sx - wx / 2, p->y * sy - wy / 2, wx, wy, c);
    }
}

void demo_scene_draw_list(demo_scene_draw *s, SDL_Renderer *r, const eng_render_list *list, float sx,
                          float sy, const SDL_Rect *dim) {
    int calls_before = ovl_batch_draw_calls(s->quads);
    void *pixels;
    int pitch;
    if (SDL_LockTexture(s->particles, NULL, &pixels, &pitch) == 0) {
        fill_background(pixels, pitch, s->width, s->height, dim);
        uint32_t a = list->layer_start[ENG_LAYER_PARTICLES], z = list->layer_start[ENG_LAYER_PARTICLES + 1];
        if (z > a) plot_particles(pixels, pitch, s->width, s->height, list->items + a, z - a, sx, sy, dim);
        SDL_UnlockTexture(s->particles);
        SDL_RenderCopy(r, s->particles, NULL, NULL);
    }
    for (int layer = ENG_LAYER_ENTITIES; layer < ENG_LAYER_COUNT; layer++) {
        uint32_t a = list->layer_start[layer], z = list->layer_start[layer + 1];
        if (z > a) queue_quads(s->quads, list->items + a, z - a, sx, sy, dim);
        ovl_batch_flush(s->quads, r);
    }
    s->draw_calls = 1 + ovl_batch_draw_calls(s->quads) - calls_before;
}
