/*
 * main.c: framemem-demo — a busy scene on framemem's pools with the
 * allocation-per-frame overlay; keys change the pools while it runs.
 *
 * The simulation advances a fixed 1/60 s per frame, so a run is the same for a
 * given seed whatever the frame rate; the wall time of each frame (input,
 * engine, render, present) is what the summary's frame-time figures measure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <SDL.h>

#include "compare.h"
#include "engine/engine.h"
#include "framemem/clock.h"
#include "framemem/file.h"
#include "hud.h"
#include "options.h"
#include "overlay/overlay.h"
#include "platform.h"
#include "run_stats.h"
#include "scene_draw.h"

#define DEFAULT_TUNED_PATH "framemem-tuned.ini"
#define DEMO_PREEMPT_RING 600 /* the overlay's 600 frames */

typedef struct demo {
    demo_options opt;
    demo_platform plat;
    demo_scene_draw scene;
    ovl_batch *overlay_batch;
    eng *e;
    demo_run_stats stats;
    fm_file_writer *csv;         /* --csv, committed at exit when the run succeeded */
    ovl_png shot;                /* --screenshot, taken at the last frame, written at exit */
    bool outputs_done;           /* write_outputs ran (else they are dropped at exit) */
    bool overlay, paused, step, quit;
    bool memory_map;             /* V: the memory map in place of the graphs */
    bool software;               /* software renderer: the scene dims the overlay's
                                    area instead of a blended backdrop (blending
                                    a window-sized quad costs ~4 ms there) */
    int growth_cycle;            /* 0 = the config's policies, 1.. = FM_GROWTH_* + 1 */
    char config_path[1024];      /* what L reloads ("" = nothing yet) */
    char status[1024];           /* a message shown in the overlay for a while */
    uint64_t status_until_frame;
    uint64_t loop_frames;        /* loop iterations, paused ones included */
    uint64_t ticks;              /* frames simulated (--compare runs as many) */
    uint64_t preempted[DEMO_PREEMPT_RING]; /* frame f + 1 at f % len when the OS
                                              preempted frame f (the overlay's marks) */
    int rc;                      /* exit status of what went wrong so far (exit_status) */
    eng_info info;               /* eng_get_info, refreshed by refresh_info */
    uint64_t info_frame;         /* loop_frames when info was taken */
    unsigned screenshots;
} demo;

/* eng_get_info hashes the whole world (its checksum) on every call: 17% of
 * the CPU at --scale 5 when called every frame. The overlay's text refreshes
 * it four times a second, and every key that changes a setting at once. */
static const eng_info *refresh_info(demo *d, bool force) {
    if (force || d->loop_frames == 0 || d->loop_frames - d->info_frame >= 15) {
        eng_get_info(d->e, &d->info);
        d->info_frame = d->loop_frames;
    }
    return &d->info;
}

static void set_status(demo *d, const char *fmt, const char *arg) {
    snprintf(d->status, sizeof d->status, fmt, arg);
    d->status_until_frame = d->loop_frames + 240;
    printf("framemem-demo: %s\n", d->status);
}

/* Records that something asked was not (fully) done: the exit status is the
 * smallest non-zero code met (options.h). */
static void exit_status(demo *d, int code) {
    if (code && (!d->rc || code < d->rc)) d->rc = code;
}

/* A file a key asked for could not be written: shown, on stderr, and the
 * exit status says so. */
static void write_failed(demo *d, const char *fmt, const char *arg) {
    snprintf(d->status, sizeof d->status, fmt, arg);
    d->status_until_frame = d->loop_frames + 240;
    fprintf(stderr, "framemem-demo: %s\n", d->status);
    exit_status(d, DEMO_EXIT_FAILURE);
}

/* ------------------------------------------------------------ keys */

static void save_tuned(demo *d) {
    const char *path = d->opt.save_config ? d->opt.save_config : DEFAULT_TUNED_PATH;
    char err[512];
    if (eng_write_tuned_config(d->e, path, 0, err, sizeof err)) {
        snprintf(d->config_path, sizeof d->config_path, "%s", path);
        set_status(d, "saved a tuned config to %s (L reloads it)", path);
    } else {
        write_failed(d, "saving the tuned config failed: %s", err);
    }
}

static void reload_config(demo *d) {
    if (!d->config_path[0]) {
        set_status(d, "%s", "no config to reload: save one with S or start with --config FILE");
        exit_status(d, DEMO_EXIT_FAILURE);
        return;
    }
    char err[512];
    if (!eng_reload_config(d->e, d->config_path, err, sizeof err)) {
        set_status(d, "reload failed: %s", err);
        exit_status(d, DEMO_EXIT_FAILURE);
        return;
    }
    const char *rep = eng_config_problems(d->e);
    if (rep[0]) fprintf(stderr, "framemem-demo: config problems (defaults kept for these entries):\n%s", rep);
    if (rep[0]) exit_status(d, DEMO_EXIT_USAGE);
    demo_run_stats_config_loaded(&d->stats, refresh_info(d, true)->frame);
    set_status(d, rep[0] ? "reloaded %s (with problems: see stderr)" : "reloaded %s", d->config_path);
}

static void screenshot(demo *d, const char *path) {
    char err[512];
    if (demo_platform_screenshot(&d->plat, path, err, sizeof err)) set_status(d, "screenshot %s", path);
    else write_failed(d, "%s", err);
}

static void on_key(demo *d, SDL_Keycode k) {
    const eng_info in = *refresh_info(d, true);
    switch (k) {
    case SDLK_F1: d->overlay = !d->overlay; break;
    case SDLK_p: d->paused = !d->paused; break;
    case SDLK_n: d->paused = true; d->step = true; break;
    case SDLK_b: eng_burst(d->e, 1.0); break;
    case SDLK_PLUS: case SDLK_EQUALS: case SDLK_KP_PLUS: eng_set_scale(d->e, in.scale * 1.5); break;
    case SDLK_MINUS: case SDLK_KP_MINUS: eng_set_scale(d->e, in.scale / 1.5); break;
    case SDLK_g:
        d->growth_cycle = (d->growth_cycle + 1) % (FM_GROWTH_COUNT + 1);
        if (d->growth_cycle == 0) eng_clear_growth_override(d->e);
        else eng_set_growth(d->e, (fm_growth)(d->growth_cycle - 1));
        break;
    case SDLK_a: eng_set_grow_ahead(d->e, !in.grow_ahead); break;
    case SDLK_f: eng_set_prefault(d->e, !in.prefault); break;
    case SDLK_m: { /* pool -> classic -> malloc -> pool */
        static const eng_backend next[ENG_BACKEND_COUNT] = {
            [ENG_BACKEND_POOL] = ENG_BACKEND_CLASSIC,
            [ENG_BACKEND_CLASSIC] = ENG_BACKEND_MALLOC,
            [ENG_BACKEND_MALLOC] = ENG_BACKEND_POOL,
        };
        eng_set_backend(d->e, next[in.backend]);
        break;
    }
    case SDLK_v: d->memory_map = !d->memory_map; break;
    case SDLK_s: save_tuned(d); break;
    case SDLK_l: reload_config(d); break;
    case SDLK_r:
        eng_reset_stats(d->e);
        demo_run_stats_reset(&d->stats);
        set_status(d, "%s", "stats reset");
        break;
    case SDLK_F12: {
        char path[64];
        snprintf(path, sizeof path, "framemem-demo-%03u.png", d->screenshots++);
        screenshot(d, path);
        break;
    }
    case SDLK_ESCAPE: case SDLK_q: d->quit = true; break;
    default: break;
    }
    refresh_info(d, true);
}

static void poll_events(demo *d) {
    SDL_Event ev;
    while (SDL_PollEvent(&ev)) {
        if (ev.type == SDL_QUIT) d->quit = true;
        else if (ev.type == SDL_KEYDOWN && !ev.key.repeat) on_key(d, ev.key.keysym.sym);
    }
}

/* ------------------------------------------------------------ drawing */

static void draw_overlay(demo *d, double fps) {
    const eng_info in = *refresh_info(d, false);
    bool status = d->status[0] && d->loop_frames < d->status_until_frame;
    demo_hud_draw(d->overlay_batch, d->plat.renderer, d->plat.width, d->plat.height,
                  &(demo_hud){.e = d->e, .info = &in, .fps = fps, .renderer = d->plat.renderer_name,
                              .paused = d->paused, .status = status ? d->status : NULL,
                              .software = d->software, .preempted = d->preempted,
                              .preempted_len = DEMO_PREEMPT_RING, .memory_map = d->memory_map},
                  NULL);
}

/* The scene, then the overlay; on a software renderer the scene darkens the
 * overlay's area itself instead of a blended backdrop. */
static void draw_frame(demo *d, double fps, float sx, float sy) {
    eng_render_list list = eng_get_render_list(d->e);
    const SDL_FRect a = demo_hud_area(d->plat.width, d->plat.height);
    const SDL_Rect dim = {(int)a.x, (int)a.y, (int)a.w, (int)a.h};
    demo_scene_draw_list(&d->scene, d->plat.renderer, &list, sx, sy, d->overlay && d->software ? &dim : NULL);
    if (d->overlay) draw_overlay(d, fps);
}

/* --screenshot: the last frame, kept in memory and written with the other
 * outputs when the run succeeded. */
static bool exit_screenshot(demo *d) {
    char err[512];
    ovl_png_free(&d->shot);
    if (!demo_platform_capture(&d->plat, &d->shot, err, sizeof err)) {
        fprintf(stderr, "framemem-demo: --screenshot %s: %s\n", d->opt.screenshot, err);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ setup */

static int fail_usage(const char *msg) {
    fprintf(stderr, "framemem-demo: %s\n(try: framemem-demo --help)\n", msg);
    return DEMO_EXIT_USAGE;
}

/* The outputs, written only when the run succeeded: each whole or not at
 * all (framemem/file.h); a failure names the file and the reason. */
static bool write_outputs(demo *d) {
    char err[FM_FILE_PATH_MAX + 256];
    bool ok = true;
    d->outputs_done = true;
    if (d->csv) {
        fm_telemetry_stream_end(eng_get_telemetry_mut(d->e));
        fm_file_writer *w = d->csv;
        d->csv = NULL;
        if (fm_file_commit(w, err, sizeof err)) {
            printf("framemem-demo: wrote %s (every frame, one row per pool)\n", d->opt.csv);
        } else {
            fprintf(stderr, "framemem-demo: --csv %s\n", err);
            ok = false;
        }
    }
    if (d->opt.trace) {
        if (fm_telemetry_write_trace(eng_get_telemetry(d->e), d->opt.trace, err, sizeof err)) {
            printf("framemem-demo: wrote %s (Chrome trace, the last %u frames)\n", d->opt.trace,
                   fm_telemetry_frame_count(eng_get_telemetry(d->e)));
        } else {
            fprintf(stderr, "framemem-demo: --trace %s\n", err);
            ok = false;
        }
    }
    if (d->opt.save_config) {
        if (eng_write_tuned_config(d->e, d->opt.save_config, 0, err, sizeof err)) {
            printf("framemem-demo: wrote the tuned config %s\n", d->opt.save_config);
        } else {
            fprintf(stderr, "framemem-demo: --save-config %s\n", err);
            ok = false;
        }
    }
    if (d->opt.screenshot && d->shot.data) {
        if (ovl_png_save(&d->shot, d->opt.screenshot, err, sizeof err)) {
            printf("framemem-demo: wrote %s (%dx%d)\n", d->opt.screenshot, d->plat.width, d->plat.height);
        } else {
            fprintf(stderr, "framemem-demo: --screenshot %s\n", err);
            ok = false;
        }
    }
    return ok;
}

/* A run that failed writes none of its outputs (an existing file stays as
 * it was); say so for each one asked for. */
static void drop_outputs(demo *d) {
    if (d->csv) {
        fm_telemetry_stream_end(eng_get_telemetry_mut(d->e));
        fm_file_abort(d->csv);
        d->csv = NULL;
    }
    const char *const outs[][2] = {{"--csv", d->opt.csv}, {"--trace", d->opt.trace},
                                   {"--save-config", d->opt.save_config},
                                   {"--screenshot", d->opt.screenshot}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i][1])
            fprintf(stderr, "framemem-demo: %s %s: not written (the run failed)\n", outs[i][0],
                    outs[i][1]);
}

int main(int argc, char **argv) {
    static demo d; /* zeroed; too big for some stacks with its path buffers */
    char err[1024];
    if (!demo_options_parse(argc, argv, &d.opt, err, sizeof err)) return fail_usage(err);
    if (d.opt.help) {
        fputs(demo_options_usage(), stdout);
        return DEMO_EXIT_OK;
    }
    /* Every run's classic blocks from fresh pages, as a game's first level
     * gets them (key M and --compare make several in one process). */
    demo_fresh_large_blocks();
    /* Inputs and outputs are checked before anything runs: a config that is
     * not a readable regular file, an output that is not a regular file, or
     * is the same file as an input or another output, is a usage error. */
    if (d.opt.config) {
        if (!fm_file_check_input(d.opt.config, FM_CONFIG_MAX_BYTES, err, sizeof err)) {
            fprintf(stderr, "framemem-demo: --config %s\n", err);
            return DEMO_EXIT_USAGE;
        }
        snprintf(d.config_path, sizeof d.config_path, "%s", d.opt.config);
    }
    const char *const outputs[] = {d.opt.csv, d.opt.trace, d.opt.save_config, d.opt.screenshot};
    const char *const inputs[] = {d.opt.config};
    if (!fm_file_check_outputs(outputs, 4, inputs, 1, err, sizeof err)) {
        fprintf(stderr, "framemem-demo: %s; nothing was run\n", err);
        return DEMO_EXIT_USAGE;
    }
    fm_clock_init();

    const eng_desc desc = {.seed = d.opt.seed, .scale = d.opt.scale, .backend = d.opt.backend,
                           .config_path = d.opt.config, .grow_ahead = d.opt.grow_ahead,
                           .prefault = d.opt.prefault, .world_w = (float)d.opt.width,
                           .world_h = (float)d.opt.height};
    d.e = eng_create(&desc, err, sizeof err);
    if (!d.e) {
        fprintf(stderr, "framemem-demo: cannot start the engine: %s\n", err);
        return DEMO_EXIT_FAILURE;
    }
    const char *rep = eng_config_problems(d.e);
    if (rep[0]) fprintf(stderr, "framemem-demo: config problems (defaults kept for these entries):\n%s", rep);
    if (rep[0]) exit_status(&d, DEMO_EXIT_USAGE);

    int rc = DEMO_EXIT_OK;
    if (d.opt.csv) {
        d.csv = fm_file_begin(d.opt.csv, err, sizeof err);
        if (!d.csv) {
            fprintf(stderr, "framemem-demo: --csv %s\n", err);
            eng_destroy(d.e);
            return DEMO_EXIT_FAILURE;
        }
        fm_telemetry_stream_csv(eng_get_telemetry_mut(d.e), d.csv);
    }
    if (!demo_platform_open(&d.plat,
                            &(demo_platform_desc){.width = d.opt.width, .height = d.opt.height,
                                                  .headless = d.opt.headless, .vsync = d.opt.vsync,
                                                  .software = d.opt.software, .title = "framemem-demo"},
                            err, sizeof err)) {
        fprintf(stderr, "framemem-demo: %s\n", err);
        drop_outputs(&d);
        eng_destroy(d.e);
        return DEMO_EXIT_FAILURE;
    }
    d.overlay_batch = ovl_batch_create(OVL_BATCH_QUADS);
    if (!d.overlay_batch || !demo_scene_draw_init(&d.scene, d.plat.renderer, d.plat.width, d.plat.height, err,
                                                  sizeof err)) {
        fprintf(stderr, "framemem-demo: %s\n", d.overlay_batch ? err : "out of memory");
        rc = DEMO_EXIT_FAILURE;
        goto out;
    }
    d.overlay = d.opt.overlay;
    d.software = strncmp(d.plat.renderer_name, "software", 8) == 0;
    printf("framemem-demo: %dx%d, renderer %s, video driver %s\n", d.plat.width, d.plat.height,
           d.plat.renderer_name, d.plat.video_driver);

    const float sx = (float)d.plat.width / (float)d.opt.width, sy = (float)d.plat.height / (float)d.opt.height;
    uint64_t prev = fm_clock_now();
    double fps = 0;
    int next_press = 0;
    /* Every loop iteration is a frame of the run, paused or not: --frames and
     * --press count them all, and each is an engine frame (a paused one has
     * no update: the world stands still, its telemetry row shows no work). */
    while (!d.quit) {
        uint64_t t0 = fm_clock_now();
        /* --press: the scripted keys go through the same event queue as real ones. */
        for (; next_press < d.opt.press_count && (uint64_t)d.opt.press[next_press].frame <= d.loop_frames;
             next_press++) {
            SDL_Event ev = {.type = SDL_KEYDOWN};
            ev.key.state = SDL_PRESSED;
            ev.key.keysym.sym = d.opt.press[next_press].key;
            SDL_PushEvent(&ev);
        }
        poll_events(&d);
        if (d.quit) { /* closed or Esc: --screenshot still gets the frame as it stands */
            if (d.opt.screenshot) {
                draw_frame(&d, fps, sx, sy);
                if (!exit_screenshot(&d)) rc = DEMO_EXIT_FAILURE;
            }
            break;
        }
        bool tick = !d.paused || d.step;
        d.step = false;
        /* Involuntary context switches between frame begin and end: the OS
         * took the CPU, and the frame's times hold that wait. */
        uint64_t sw = demo_involuntary_switches();
        eng_frame_begin(d.e);
        if (tick) eng_update(d.e, 1.0 / 60.0);
        eng_frame_end(d.e);
        {
            const fm_telemetry *t = eng_get_telemetry(d.e);
            uint32_t held = fm_telemetry_frame_count(t);
            if (held) {
                uint64_t f = fm_telemetry_get_frame(t, held - 1)->frame;
                d.preempted[f % DEMO_PREEMPT_RING] = demo_involuntary_switches() != sw ? f + 1 : 0;
            }
        }
        bool last = d.opt.frames && d.loop_frames + 1 >= (uint64_t)d.opt.frames;

        uint64_t r0 = fm_clock_now();
        draw_frame(&d, fps, sx, sy);
        if (last && d.opt.screenshot && !exit_screenshot(&d)) rc = DEMO_EXIT_FAILURE;
        uint64_t p0 = fm_clock_now();
        demo_platform_present(&d.plat);
        uint64_t r1 = fm_clock_now();
        eng_set_render_ns(d.e, fm_clock_to_ns(r1 - r0));
        if (tick) {
            d.ticks++;
            const fm_telemetry *t = eng_get_telemetry(d.e);
            uint32_t held = fm_telemetry_frame_count(t);
            if (held)
                demo_run_stats_add(&d.stats, fm_telemetry_get_frame(t, held - 1), fm_clock_to_ns(r1 - t0),
                                   fm_clock_to_ns(r1 - p0));
        } else {
            demo_run_stats_add_paused(&d.stats);
        }
        double dt = (double)fm_clock_to_ns(r1 - prev) / 1e9;
        prev = r1;
        if (dt > 0) fps = fps == 0 ? 1 / dt : fps * 0.95 + 0.05 / dt;
        d.loop_frames++;
        if (last) break;
        if (d.paused && !d.opt.vsync) SDL_Delay(10); /* nothing moves: do not spin */
    }

    if (rc == DEMO_EXIT_OK && !write_outputs(&d)) rc = DEMO_EXIT_FAILURE;
    eng_info end;
    eng_get_info(d.e, &end);
    if (end.failures) {
        fprintf(stderr, "framemem-demo: the engine met %llu failure(s) during the run (the newest: %s)\n",
                (unsigned long long)end.failures, eng_last_failure(d.e));
        exit_status(&d, DEMO_EXIT_ENGINE);
    }
    if (!d.opt.quiet) {
        demo_run_stats_print(&d.stats, d.e,
                             &(demo_summary_info){.renderer = d.plat.renderer_name,
                                                  .save_hint = d.opt.save_config ? d.opt.save_config
                                                                                 : DEFAULT_TUNED_PATH},
                             stdout);
    }
    if (d.opt.compare && rc == DEMO_EXIT_OK) {
        demo_compare cmp;
        uint64_t n = d.ticks ? d.ticks : 1;
        if (demo_compare_run(&desc, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n, &cmp, err, sizeof err)) {
            demo_compare_print(&cmp, stdout);
        } else {
            fprintf(stderr, "framemem-demo: --compare: %s\n", err);
            exit_status(&d, DEMO_EXIT_FAILURE);
        }
    }
out:
    if (!d.outputs_done) drop_outputs(&d);
    ovl_png_free(&d.shot);
    demo_scene_draw_deinit(&d.scene);
    ovl_batch_destroy(d.overlay_batch);
    demo_platform_close(&d.plat);
    demo_run_stats_free(&d.stats);
    eng_destroy(d.e);
    exit_status(&d, rc);
    char out_err[256];
    if (!fm_file_stdout_ok(out_err, sizeof out_err)) {
        fprintf(stderr, "framemem-demo: %s\n", out_err);
        exit_status(&d, DEMO_EXIT_FAILURE);
    }
    return d.rc;
}
