/*
 * engine/engine.h: a small game-engine core on framemem.
 *
 * An eng object owns a world (entities with typed handles, components in
 * their own pools, particles from pooled emitters (1 KiB each: effect
 * objects with their state, see the README), events and timers), a
 * frame arena for per-frame temporaries and an fm_telemetry
 * (framemem/telemetry.h) of every pool and the frame arena, sized from an
 * fm_config (framemem/config.h): it uses framemem's telemetry, grow-ahead
 * and config as any game does. It has no platform dependency: the caller
 * supplies the time step, renders the render list and reports its render
 * time.
 *
 * Frame: eng_frame_begin (advance the frame arena), eng_update (run due
 * timers, simulate, build the render list), eng_frame_end (grow ahead,
 * sample telemetry: fm_telemetry_grow_ahead, fm_telemetry_frame_end).
 * eng_tick does all three. A frame with no eng_update is a
 * paused frame: it is recorded in the telemetry like any other, and the world
 * stands still (no timer runs, the scenes' clocks stop, nothing of the
 * newest update is released), so a pause never changes the simulation.
 *
 * Determinism: the world uses its own PRNG seeded from desc.seed; the same
 * seed, scale, scene and sequence of dt and controls give the same world,
 * whatever the backend, growth policy or timing switches.
 *
 * Backends: ENG_BACKEND_POOL serves every item from an fm_pool;
 * ENG_BACKEND_MALLOC from malloc/free; ENG_BACKEND_CLASSIC from classic
 * eager pools (engine/classic_pool.h: Boost object_pool's algorithm, each
 * pool's first block its config's initial_capacity, then doubling, every new
 * slot linked at growth: the regrowth hitch). All three are counted and timed
 * the same way; growth policy, prefault, grow-ahead and max_capacity are
 * framemem's and do not apply to the other two.
 *
 * Memory: every byte the engine takes (its pools, arenas, closures, tables)
 * comes from desc.allocator; with one set, the frame arena chains blocks from
 * it instead of reserving address space (framemem's arena rule). Out of
 * memory during a frame costs that frame something (fewer spawns, or the
 * world emptied when its lists do not fit) and is counted
 * (eng_info.failures); the engine keeps running.
 *
 * Controls that change how pools are built (backend, growth policy, prefault,
 * config reload) rebuild the world: it restarts from the seed at the current
 * frame number (telemetry keeps its frames). Scale, burst and grow-ahead act
 * on the running world.
 *
 * NULL: every function reports a NULL engine as framemem does (base.h:
 * FM_ERR_INVALID_ARG through fm_last_error and the error handler, naming the
 * function; also in err where the function has one) and returns its failure
 * value (false, NULL, "", a zeroed result; nothing changes). eng_destroy(NULL)
 * does nothing. A NULL desc is not a NULL object: it means every default.
 *
 * Threads: one thread at a time.
 */
#ifndef ENGINE_ENGINE_H
#define ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "framemem/base.h"
#include "framemem/config.h"
#include "framemem/pool.h"
#include "framemem/telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eng eng;

/* What serves the world's items: its pools, or for comparison malloc/free
 * (telemetry: counters sources, backend "malloc") or classic eager pools
 * (counters sources with their growths, backend "classic"). */
typedef enum eng_backend {
    ENG_BACKEND_POOL = 0,
    ENG_BACKEND_MALLOC,
    ENG_BACKEND_CLASSIC,
    ENG_BACKEND_COUNT
} eng_backend;

/// "pool" / "malloc" / "classic"; "?" out of range.
const char *eng_backend_name(eng_backend b);

/* An entity: handle into the entity pool (pool + generation); zero is null. */
FM_HANDLE_TYPE(eng_entity);

/* Render layers, drawn in this order. */
typedef enum eng_layer {
    ENG_LAYER_PARTICLES = 0, /* sparks from emitters */
    ENG_LAYER_ENTITIES,      /* moving bodies */
    ENG_LAYER_EFFECTS,       /* collision flashes */
    ENG_LAYER_COUNT
} eng_layer;

/* One quad to draw, centred at (x, y), world units (desc.world_w x world_h,
 * y down), rgba = 0xRRGGBBAA. */
typedef struct eng_sprite {
    float x, y, size;
    uint32_t rgba;
    uint32_t layer; /* eng_layer */
} eng_sprite;

/* Sprites of a frame grouped by layer: layer l is
 * items[layer_start[l] .. layer_start[l + 1]). In the frame arena: valid
 * until the next eng_frame_begin (frames without eng_update keep it). */
typedef struct eng_render_list {
    const eng_sprite *items;
    uint32_t count;
    uint32_t layer_start[ENG_LAYER_COUNT + 1];
} eng_render_list;

typedef struct eng_desc {
    uint64_t seed;            /* 0 = 1 */
    double scale;             /* load multiplier; 0 = 1; clamped to [0.05, 50] */
    eng_backend backend;      /* POOL (default), MALLOC or CLASSIC */
    const char *config_path;  /* pool-size INI (framemem/config.h: [pool.particles],
                                 [arena.frame], ...); NULL = built-in defaults; copied */
    const char *scene;        /* "standard" (default), "ramp", "bursts"; see eng_scene_names */
    bool grow_ahead;          /* engine-wide switch (pools opt out in the config:
                                 grow_ahead = false) */
    bool prefault;            /* engine-wide switch (pools opt out in the config) */
    bool override_growth;     /* every pool uses `growth` instead of its config */
    fm_growth growth;
    bool no_timing;           /* telemetry without timing (counts only): the
                                 benchmark's "timing off" baseline */
    uint32_t telemetry_frames;/* ring size; 0 = 600 */
    float world_w, world_h;   /* 0 = 1280 x 720 */
    fm_allocator allocator;   /* every pool, arena, closure pool and the engine's own
                                 tables; zero = system (malloc backend items stay malloc) */
} eng_desc;

/// Creates the engine and its world (desc NULL: every default). NULL with a
/// message in err for: a desc out of range (unknown scene or backend, half
/// an allocator), a config file
/// that cannot be read, out of memory (the message names what could not be
/// made; nothing is left allocated). Problems inside a readable config do not
/// fail: they are kept (eng_config_problems) and defaults stay for the bad
/// entries. desc.allocator must outlive the engine and any telemetry taken
/// from eng_run_headless.
eng *eng_create(const eng_desc *desc, char *err, size_t err_len);
/// Destroys the world, its pools and the telemetry. NULL: no-op.
void eng_destroy(eng *e);

/* ---------------------------------------------------------------- frames */

/// Frame boundary: advances the frame arena (the render list of the update
/// before the newest goes). Ends an open frame first. A frame with no
/// eng_update (a paused game) allocates nothing, so the boundary after it
/// releases nothing: the world, its render list and eng_get_info stay those
/// of the newest update, and the next eng_update goes on from them.
void eng_frame_begin(eng *e);
/// Advances the world by dt seconds (clamped to [0, 0.1]) and builds the
/// render list; the frame's first update runs the timers due.
void eng_update(eng *e, double dt);
/// Grows ahead (maintenance), samples every pool and the frame arena and
/// pushes the frame's telemetry record. No-op without an open frame.
void eng_frame_end(eng *e);
/// eng_frame_begin + eng_update + eng_frame_end.
void eng_tick(eng *e, double dt);
/// The render list of the newest eng_update (empty before the first).
eng_render_list eng_get_render_list(const eng *e);
/// Render time of the newest finished frame, for its telemetry record.
void eng_set_render_ns(eng *e, uint64_t ns);

/* -------------------------------------------------------------- controls */

/// Particle spawning at 10x for `seconds` of simulated time (1.0 for the
/// demo key); entities are not affected.
void eng_burst(eng *e, double seconds);
/// New load multiplier (clamped as in the desc); the world follows over a few frames.
void eng_set_scale(eng *e, double scale);
/// Every pool's growth policy; rebuilds the world.
void eng_set_growth(eng *e, fm_growth growth);
/// Back to the config's per-pool policies; rebuilds the world.
void eng_clear_growth_override(eng *e);
void eng_set_grow_ahead(eng *e, bool on);
/// Rebuilds the world.
void eng_set_prefault(eng *e, bool on);
/// Rebuilds the world on the other backend.
void eng_set_backend(eng *e, eng_backend backend);
/// Re-reads the config file (desc.config_path or the last path given here;
/// path NULL = the current one) and rebuilds the world. false with a message
/// in err when the file cannot be read (the world is kept as it was); problems
/// inside the file are in eng_config_problems.
bool eng_reload_config(eng *e, const char *path, char *err, size_t err_len);
/// Writes a tuned config from the telemetry's peaks (fm_config_write_tuned_runs
/// over this engine's telemetry, keeping the keys of its config file;
/// headroom <= 0 means 1.25).
bool eng_write_tuned_config(eng *e, const char *path, double headroom, char *err,
                            size_t err_len);
/// Clears the telemetry ring and totals; peaks restart from the live counts.
void eng_reset_stats(eng *e);

/* --------------------------------------------------------------- queries */

typedef struct eng_info {
    uint64_t frame;             /* frames ended since create */
    uint64_t seed;
    double scale;
    eng_backend backend;
    bool grow_ahead, prefault;  /* the engine-wide switches */
    uint32_t pools;             /* the world's pools */
    uint32_t grow_ahead_pools;  /* of them, those whose desc (defaults + config)
                                   asks for grow-ahead (not FIXED): grown ahead
                                   while the switch is on, on the pool backend */
    uint32_t prefault_pools;    /* those whose desc asks for prefault: prefaulted
                                   while the switch is on, on the pool backend */
    bool override_growth;
    fm_growth growth;           /* the override when set, else the particles pool's */
    const char *scene;
    const char *config_path;    /* NULL when none */
    uint32_t entities;          /* live */
    uint32_t particles;         /* live */
    uint32_t emitters;          /* live */
    uint32_t spawned, died;     /* particles in the newest frame */
    uint32_t collisions;        /* collision events in the newest frame */
    uint32_t timers_fired;      /* timer events in the newest frame */
    uint64_t checksum;          /* hash of the world state (determinism tests) */
    double burst_left;          /* seconds of burst remaining */
    uint64_t clock_overhead_ns; /* subtracted per timed batch */
    uint32_t timed_batches;     /* alloc/free batches timed in the newest frame
                                   (each costs one fm_clock_now pair) */
    uint64_t refused_allocs;    /* items the world asked for and did not get
                                   since the world was built (a FIXED or
                                   max_capacity pool full: fewer spawns) */
    uint64_t failures;          /* memory refused since create: a pool that could
                                   not grow (fewer spawns), a frame's lists (the
                                   world emptied), a timer, a rebuild (old world
                                   kept); see eng_last_failure */
} eng_info;

void eng_get_info(const eng *e, eng_info *out);
/// What the newest of eng_info.failures was; "" when none.
const char *eng_last_failure(const eng *e);
/// The engine's telemetry: its six pools (or, on the malloc and classic
/// backends, their counts), the frame arena "frame" and the memory tags the
/// pools are charged to, "world" (entities and components) and "effects"
/// (particles), with their budgets (soft limits 1 MiB and 48 MiB; a config's
/// [tag.world] / [tag.effects] set them), in that order.
const fm_telemetry *eng_get_telemetry(const eng *e);
fm_telemetry *eng_get_telemetry_mut(eng *e);
/// The config file loaded (NULL: none; the built-in defaults).
const fm_config *eng_get_config(const eng *e);
/// The pool behind a telemetry source ("particles", ...) with the pool
/// backend; NULL with the malloc or classic backend or for an unknown name. Valid until
/// the world is rebuilt.
const fm_pool *eng_get_pool(const eng *e, const char *name);
/// Problems found in the newest config load (a section no pool or arena of
/// the engine matches among them), "file:line: message\n" each; "" when none.
const char *eng_config_problems(const eng *e);
/// NULL-terminated list of scene names.
const char *const *eng_scene_names(void);

/* ------------------------------------------------------- headless runner */

typedef struct eng_run_result {
    uint64_t frames;
    uint64_t checksum;        /* world hash at the end */
    uint32_t entities, particles;
    uint64_t total_spawned, total_died, total_collisions, total_timers;
} eng_run_result;

/// Creates an engine from desc, runs `frames` frames at dt = 1/60 and returns
/// its telemetry (caller destroys it; its sources detached); the engine is
/// gone. NULL with a message when eng_create fails. out may be NULL.
fm_telemetry *eng_run_headless(const eng_desc *desc, uint32_t frames, eng_run_result *out,
                                char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* ENGINE_ENGINE_H */
