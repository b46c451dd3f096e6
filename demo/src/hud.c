/*
 * hud.c: the demo's overlay (settings, status, key help) on the telemetry
 * overlay.
 */
#include "hud.h"

#include <stdio.h>
#include <string.h>

#include "run_stats.h"

const char demo_help_line[] =
    "F1 overlay  P pause  N step  B burst  +/- scale  G growth policy  A grow-ahead  F prefault  "
    "M backend  S save tuned config  L reload config  R reset stats  F12 screenshot  Esc quit";

SDL_FRect demo_hud_area(int w, int h) { return (SDL_FRect){8, 8, (float)w - 16, (float)h - 16}; }

bool demo_hud_draw(ovl_batch *b, SDL_Renderer *r, int w, int h, const demo_hud *hud,
                   ovl_text_rects *rects) {
    const eng_info *in = hud->info;
    char settings[2048];
    demo_settings_text(in, settings, sizeof settings);
    size_t used = strlen(settings);
    int n = snprintf(settings + used, sizeof settings - used,
                     "\nscale %.2f | %u particles, %u entities, %u spawned, %u died | frame %llu | %.0f fps | %s%s",
                     in->scale, in->particles, in->entities, in->spawned, in->died,
                     (unsigned long long)(in->frame ? in->frame - 1 : 0), hud->fps, hud->renderer,
                     hud->paused ? " | PAUSED" : "");
    if (n > 0) used += (size_t)n;
    if (hud->status && hud->status[0] && used < sizeof settings)
        snprintf(settings + used, sizeof settings - used, "\n%s", hud->status);
    const SDL_FRect area = demo_hud_area(w, h);
    return ovl_draw(b, r, &area, eng_get_telemetry(hud->e),
                    &(ovl_desc){.settings = settings, .help = demo_help_line, .background_alpha = 150,
                                .no_backdrop = hud->software, .preempted_ring = hud->preempted,
                                .preempted_ring_len = hud->preempted_len, .text_rects = rects});
}
