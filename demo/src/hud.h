/*
 * hud.h: the demo's overlay as it is drawn in the window: the telemetry
 * overlay (overlay/overlay.h) with the demo's settings lines, status message
 * and key help, inside the window less an 8-pixel margin. The window test
 * (tests/demo/test_hud.c) draws it at several sizes in every mode and checks
 * that no two texts overlap and none leaves the window.
 */
#ifndef DEMO_HUD_H
#define DEMO_HUD_H

#include <SDL.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "overlay/overlay.h"

/// The key help line.
extern const char demo_help_line[];

typedef struct demo_hud {
    const eng *e;
    const eng_info *info;      /* eng_get_info of e (the caller refreshes it) */
    double fps;
    const char *renderer;      /* "software (headless)", ... */
    bool paused;
    const char *status;        /* a message shown for a while; NULL = none */
    bool software;             /* the scene darkened the area: no backdrop */
    const uint64_t *preempted; /* ovl_desc.preempted_ring */
    uint32_t preempted_len;
    bool memory_map;           /* key V: the memory map in place of the graphs */
} demo_hud;

/// The overlay area of a w x h window.
SDL_FRect demo_hud_area(int w, int h);
/// Draws the overlay for h into the window's area (the memory map reads
/// each pool's chunks with fm_pool_chunk_occupancy); rects (may be NULL)
/// receives every text's rectangle. false when SDL refused to draw.
bool demo_hud_draw(ovl_batch *b, SDL_Renderer *r, int w, int h, const demo_hud *hud,
                   ovl_text_rects *rects);

#endif /* DEMO_HUD_H */
