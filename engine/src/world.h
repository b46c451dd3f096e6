/*
 * world.h (engine internal): entities, components, particles, events and
 * timers of one world, stored in eng__store objects, temporaries in a frame arena.
 */
#ifndef ENG__WORLD_H
#define ENG__WORLD_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_internal.h"
#include "engine/engine.h"
#include "framemem/arena.h"
#include "framemem/closure.h"
#include "framemem/tag.h"
#include "store.h"

enum {
    ENG__ST_ENTITIES,
    ENG__ST_TRANSFORMS,
    ENG__ST_VELOCITIES,
    ENG__ST_LIFETIMES,
    ENG__ST_EMITTERS,
    ENG__ST_PARTICLES,
    ENG__ST_COUNT
};

/* Per-unit-scale load: live particles = ENG__PARTICLES_PER_FRAME x mean life
 * (1/6 s) x 60 = 20,000; entities kept alive; particles in a timer burst. */
#define ENG__PARTICLES_PER_FRAME 2000.0
#define ENG__ENTITIES_PER_SCALE 300.0
#define ENG__TIMER_BURST 100u
/* Bytes per particle: 32 of motion, the rest the state an effect object
 * carries in a game (see eng__particle). */
#define ENG__PARTICLE_BYTES 1024

extern const char *const eng__store_names[ENG__ST_COUNT];

/* Memory tags the pools are charged to (framemem/tag.h): "world" for the
 * entities and their components, "effects" for the particles. */
enum { ENG__TAG_WORLD, ENG__TAG_EFFECTS, ENG__TAG_COUNT };
extern const char *const eng__tag_names[ENG__TAG_COUNT];

typedef struct eng__world eng__world;

typedef struct eng__world_desc {
    uint64_t seed;
    float w, h;
    eng_backend backend;
    bool timing;
    const fm_pool_desc *pools;       /* [ENG__ST_COUNT]: defaults with the config applied */
    const fm_frame_arena_desc *frame; /* the same for the frame arena */
    const fm_tag_desc *tags;          /* [ENG__TAG_COUNT]: the same for the tags */
    bool prefault, override_growth;
    fm_growth growth;
    fm_allocator allocator; /* every object of the world and the world itself */
    eng__faults *faults;    /* where refusals while running are counted */
} eng__world_desc;

/// The engine's default desc of store i (name, item size and alignment, a
/// deliberately small initial capacity, geometric growth, prefault and
/// grow-ahead on): the pools regrow during warm-up, which a tuned config
/// removes. A config is applied on top (fm_config_apply).
fm_pool_desc eng__world_pool_desc(int i);
/// The default desc of tag i: its name and budget (a soft limit only:
/// world 1 MiB, effects 48 MiB); a config's [tag.world] / [tag.effects]
/// apply on top.
fm_tag_desc eng__world_tag_desc(int i);
/// The tag store i's pool is charged to.
int eng__world_tag_of_store(int i);
/// The default frame arena desc ("frame": 2 frames, 256 MiB reserve, 64 KiB
/// commit steps).
fm_frame_arena_desc eng__world_frame_arena_desc(void);

/// NULL with a message in err when the world, a pool, the frame arena, the
/// closures, events or timers cannot be created (nothing is left allocated).
eng__world *eng__world_create(const eng__world_desc *d, char *err, size_t err_len);
void eng__world_destroy(eng__world *w);

/// Frame boundary: advance the frame arena when an update used it since the
/// last advance (a frame without one keeps the newest lists). Due timers run
/// at the frame's first update: a frame without one is paused.
void eng__world_begin(eng__world *w);
/// Simulates dt seconds: entities kept at entity_load x 300, particles born
/// at particle_load x 2,000 per 60 Hz frame (bursts raise only the latter).
void eng__world_update(eng__world *w, double dt, double entity_load, double particle_load);
eng_render_list eng__world_render_list(const eng__world *w);

eng__store *eng__world_store(eng__world *w, int i);
fm_tag *eng__world_tag(eng__world *w, int i);
fm_frame_arena *eng__world_frame_arena(eng__world *w);

typedef struct eng__world_counts {
    uint32_t entities, particles, emitters;
    uint32_t spawned, died, collisions, timers_fired; /* newest frame; particles */
    uint64_t total_spawned, total_died, total_collisions, total_timers; /* particles */
    uint64_t entity_births, entity_deaths; /* counted by the spawn/death event handlers */
    uint64_t dropped; /* frames whose lists did not fit the frame arena (world emptied) */
} eng__world_counts;
void eng__world_counts_get(const eng__world *w, eng__world_counts *out);
/// Hash of the simulation state (positions, lives, counts), backend-independent.
uint64_t eng__world_checksum(const eng__world *w);

#endif /* ENG__WORLD_H */
