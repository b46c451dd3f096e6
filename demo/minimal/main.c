/* framemem-minimal: framemem in a game loop of its own, the integration guide in
 * code (README: "Integrating framemem"). Its pools, tag and frame arena are
 * its own; a config sizes them; telemetry, grow-ahead and the overlay watch.
 *   framemem-minimal [--frames N] [--config pools.ini] [--csv run.csv]
 * Exit status: 0 done; 1 SDL or the CSV failed; 2 bad arguments or a config
 * that cannot be read. SDL_VIDEODRIVER=dummy runs it without a display. */
#include <SDL.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framemem/clock.h"
#include "framemem/config.h"
#include "framemem/framemem.h"
#include "framemem/telemetry.h"
#include "overlay/overlay.h"

typedef struct spark { float x, y, vx, vy; int life; } spark;
typedef struct ship { float x, y, vx; } ship;
enum { W = 960, H = 540, MAX_SPARKS = 1 << 15, MAX_SHIPS = 256 };

static uint32_t rng = 12345; /* the same run every time: tune, then rerun */
static float rnd(void) { return (float)((rng = rng * 1664525u + 1013904223u) >> 8) / 16777216.0f; }

int main(int argc, char **argv) {
    long frames = 0;
    const char *config_path = NULL, *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--frames")) frames = strtol(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--config")) config_path = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--csv")) csv_path = argv[++i];
        else return fprintf(stderr, "usage: %s [--frames N] [--config F] [--csv F]\n", argv[0]), 2;
    }
    char err[512];
    /* 1. A config (optional): its values go onto the game's own descs by name. */
    fm_config *cfg = NULL;
    if (config_path && !(cfg = fm_config_load(config_path, NULL, err, sizeof err)))
        return fprintf(stderr, "framemem-minimal: %s\n", err), 2;
    fm_tag_desc game_tag = {.name = "game", .soft_limit_bytes = 1 << 20, .hard_limit_bytes = 2 << 20};
    fm_pool_desc spark_desc = FM_POOL_DESC(spark, .name = "sparks", .initial_capacity = 64,
                                           .grow_ahead = true, /* grown at frame ends */
                                           .timing = FM_POOL_TIMING_SAMPLED); /* its time per frame */
    fm_pool_desc ship_desc = FM_POOL_DESC(ship, .name = "ships", .initial_capacity = 8);
    fm_frame_arena_desc frame_desc = {.name = "frame", .arena.commit_step = 16 << 10};
    if (cfg) {
        fm_config_apply(cfg, &game_tag);
        fm_config_apply(cfg, &spark_desc);
        fm_config_apply(cfg, &ship_desc);
        fm_config_apply(cfg, &frame_desc);
        fm_config_report_unused(cfg);
        fputs(fm_config_problems(cfg), stderr); /* "file:line: ..." each; "" when none */
    }
    /* 2. The game's objects: pools under a budget, a frame arena. */
    fm_tag *game = fm_tag_create(&game_tag);
    spark_desc.tag = ship_desc.tag = frame_desc.tag = game;
    fm_pool *sparks = fm_pool_create(&spark_desc), *ships = fm_pool_create(&ship_desc);
    fm_frame_arena *frame = fm_frame_arena_create(&frame_desc);
    /* 3. Telemetry of each, a ring of the whole run (or the last 600 frames). */
    fm_telemetry *tel = fm_telemetry_create(
        &(fm_telemetry_desc){.frames = frames > 0 && frames <= 1 << 20 ? (uint32_t)frames : 600});
    if (!game || !sparks || !ships || !frame || !tel) return fprintf(stderr, "framemem-minimal: %s\n", fm_last_error_message()), 1;
    fm_telemetry_add_pool(tel, sparks);
    fm_telemetry_add_pool(tel, ships);
    fm_telemetry_add_frame_arena(tel, frame);
    fm_telemetry_add_tag(tel, game);
    /* 4. A window of its own; the overlay draws on its renderer. */
    SDL_Window *win = NULL;
    SDL_Renderer *r = NULL;
    ovl_batch *batch = ovl_batch_create(OVL_BATCH_QUADS);
    if (SDL_Init(SDL_INIT_VIDEO) != 0 ||
        !(win = SDL_CreateWindow("framemem-minimal", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, W, H, 0)) ||
        !(r = SDL_CreateRenderer(win, -1, 0)) || !batch)
        return fprintf(stderr, "framemem-minimal: SDL: %s\n", SDL_GetError()), 1;
    static spark *live[MAX_SPARKS];
    static ship *fleet[MAX_SHIPS];
    int n_live = 0, n_ships = 0;
    uint64_t late_growths = 0;
    bool quit = false;
    for (long f = 0; !quit && (frames <= 0 || f < frames); f++) {
        for (SDL_Event ev; SDL_PollEvent(&ev);)
            quit |= ev.type == SDL_QUIT || (ev.type == SDL_KEYDOWN && ev.key.keysym.sym == SDLK_ESCAPE);
        /* 5. The frame: the game allocates and frees as it likes. */
        fm_telemetry_frame_begin(tel);
        fm_frame_arena_advance(frame);
        if (n_ships < MAX_SHIPS && f % 4 == 0 && (fleet[n_ships] = fm_pool_alloc(ships)))
            *fleet[n_ships++] = (ship){rnd() * W, 40 + rnd() * (H - 80), 1 + rnd() * 2};
        int born = 40 + (f % 240 == 200 ? 3000 : 0); /* a burst every 4 s */
        for (int i = 0; i < born && n_live < MAX_SPARKS && n_ships; i++) {
            spark *s = fm_pool_alloc(sparks);
            if (!s) break; /* FM_ERR_BUDGET past "game"'s hard limit: fewer sparks */
            const ship *from = fleet[i % n_ships];
            *s = (spark){from->x, from->y, rnd() * 6 - 3, rnd() * 6 - 3, 20 + (int)(rnd() * 60)};
            live[n_live++] = s;
        }
        for (int i = 0; i < n_ships; i++) fleet[i]->x = fleet[i]->x > W ? 0 : fleet[i]->x + fleet[i]->vx;
        SDL_FRect *dots = FM_ARENA_NEW_ARRAY(fm_frame_arena_current(frame), SDL_FRect, (size_t)n_live + 1);
        int n_dots = 0;
        for (int i = 0; i < n_live;) {
            spark *s = live[i];
            s->x += s->vx, s->y += s->vy;
            if (--s->life > 0) {
                if (dots) dots[n_dots++] = (SDL_FRect){s->x, s->y, 2, 2};
                i++;
            } else {
                fm_pool_free(sparks, s);
                live[i] = live[--n_live];
            }
        }
        /* 6. The frame boundary: grow ahead, then sample. */
        fm_telemetry_grow_ahead(tel);
        fm_telemetry_frame_end(tel);
        const fm_telemetry_frame *rec = fm_telemetry_get_frame(tel, fm_telemetry_frame_count(tel) - 1);
        if (f > 0) late_growths += rec->grow_events;
        /* 7. Render, the overlay on top; the render time goes to the frame. */
        uint64_t t0 = fm_clock_now();
        SDL_SetRenderDrawColor(r, 10, 12, 20, 255);
        SDL_RenderClear(r);
        SDL_SetRenderDrawColor(r, 255, 200, 80, 255);
        SDL_RenderFillRectsF(r, dots, n_dots);
        ovl_draw(batch, r, &(SDL_FRect){0, 0, W, H}, tel, &(ovl_desc){.title = "framemem-minimal"});
        SDL_RenderPresent(r);
        fm_telemetry_set_render_ns(tel, fm_clock_to_ns(fm_clock_now() - t0));
    }
    printf("framemem-minimal: %llu frames, %llu growth(s) inside allocation calls after the first\n",
           (unsigned long long)fm_telemetry_frames_pushed(tel), (unsigned long long)late_growths);
    /* 8. At exit: the CSV for fm-tune / fm-plot (whole or not at all). */
    int rc = 0;
    if (csv_path && !fm_telemetry_write_csv(tel, csv_path, err, sizeof err))
        rc = 1, fprintf(stderr, "framemem-minimal: %s\n", err);
    ovl_batch_destroy(batch);
    SDL_DestroyRenderer(r);
    SDL_DestroyWindow(win);
    SDL_Quit();
    fm_telemetry_destroy(tel);
    while (n_live) fm_pool_free(sparks, live[--n_live]);
    while (n_ships) fm_pool_free(ships, fleet[--n_ships]);
    fm_frame_arena_destroy(frame);
    fm_pool_destroy(sparks);
    fm_pool_destroy(ships);
    fm_tag_destroy(game);
    fm_config_destroy(cfg);
    return rc;
}
