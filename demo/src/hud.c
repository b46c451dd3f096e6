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
    "M backend  V memory map  S save tuned config  L reload config  R reset stats  F12 screenshot  "
    "Esc quit";

SDL_FRect demo_hud_area(int w, int h) { return (SDL_FRect){8, 8, (float)w - 16, (float)h - 16}; }

/* Chunks a pool's map shows at most (more are counted, not drawn). */
#define HUD_MAP_CHUNKS 4096
#define HUD_MAP_POOLS 8

/* The engine's pools and their chunks' occupancy; 0 on the classic and
 * malloc backends (no framemem pools). */
static uint32_t gather_map(const eng *e, ovl_map_pool *out) {
    static uint32_t live[HUD_MAP_POOLS][HUD_MAP_CHUNKS];
    const fm_telemetry *t = eng_get_telemetry(e);
    uint32_t n = 0;
    for (uint32_t s = 0; s < fm_telemetry_source_count(t) && n < HUD_MAP_POOLS; s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(t, s);
        const fm_pool *pool = si->kind == FM_TELEMETRY_POOL ? eng_get_pool(e, si->name) : NULL;
        if (!pool) continue;
        fm_pool_stats st;
        fm_pool_get_stats(pool, &st);
        uint32_t chunks = fm_pool_chunk_occupancy(pool, live[n], HUD_MAP_CHUNKS);
        out[n] = (ovl_map_pool){.name = si->name, .source = s, .live = live[n],
                                .chunks = chunks < HUD_MAP_CHUNKS ? chunks : HUD_MAP_CHUNKS,
                                .items_per_chunk = (uint32_t)st.items_per_chunk,
                                .chunk_bytes = st.chunk_bytes};
        n++;
    }
    return n;
}

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
    ovl_map_pool pools[HUD_MAP_POOLS];
    uint32_t npools = hud->memory_map ? gather_map(hud->e, pools) : 0;
    char note[160];
    snprintf(note, sizeof note, "the %s backend has no framemem pools to map (M switches back to pool)",
             eng_backend_name(in->backend));
    return ovl_draw(b, r, &area, eng_get_telemetry(hud->e),
                    &(ovl_desc){.settings = settings, .help = demo_help_line, .background_alpha = 150,
                                .no_backdrop = hud->software, .preempted_ring = hud->preempted,
                                .preempted_ring_len = hud->preempted_len, .text_rects = rects,
                                .memory_map = hud->memory_map, .map_pools = pools,
                                .map_pool_count = npools, .map_note = note});
}
