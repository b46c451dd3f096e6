/*
 * world.h (engine internal): entities, components, particles, events and
 * timers of one world, stored in eng_stores, temporaries in a frame arena.
 */
#ifndef ENG_WORLD_H
#define ENG_WORLD_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_internal.h"
#include "engine/engine.h"
#include "framemem/arena.h"
#include "framemem/closure.h"
#include "store.h"

enum {
    ENG_ST_ENTITIES,
    ENG_ST_TRANSFORMS,
    ENG_ST_VELOCITIES,
    ENG_ST_LIFETIMES,
    ENG_ST_EMITTERS,
    ENG_ST_PARTICLES,
    ENG_ST_COUNT
};

/* Per-unit-scale load: live particles = ENG_PARTICLES_PER_FRAME x mean life
 * (1/6 s) x 60 = 20,000; entities kept alive; particles in a timer burst. */
#define ENG_PARTICLES_PER_FRAME 2000.0
#define ENG_ENTITIES_PER_SCALE 300.0
#define ENG_TIMER_BURST 100u

extern const char *const eng_store_names[ENG_ST_COUNT];

typedef struct eng_world eng_world;

typedef struct eng_world_desc {
    uint64_t seed;
    float w, h;
    eng_backend backend;
    bool timing;
    const eng_config *cfg;
    bool prefault, grow_ahead, override_growth;
    fm_growth growth;
    fm_allocator allocator; /* every object of the world and the world itself */
    eng__faults *faults;    /* where refusals while running are counted */
} eng_world_desc;

/// NULL with a message in err when the world, a pool, the frame arena, the
/// closures, events or timers cannot be created (nothing is left allocated).
eng_world *eng_world_create(const eng_world_desc *d, char *err, size_t err_len);
void eng_world_destroy(eng_world *w);

/// Frame boundary: advance the frame arena when an update used it since the
/// last advance (a frame without one keeps the newest lists). Due timers run
/// at the frame's first update: a frame without one is paused.
void eng_world_begin(eng_world *w);
/// Simulates dt seconds: entities kept at entity_load x 300, particles born
/// at particle_load x 2,000 per 60 Hz frame (bursts raise only the latter).
void eng_world_update(eng_world *w, double dt, double entity_load, double particle_load);
eng_render_list eng_world_render_list(const eng_world *w);

eng_store *eng_world_store(eng_world *w, int i);
fm_frame_arena *eng_world_frame_arena(eng_world *w);
void eng_world_set_grow_ahead(eng_world *w, bool on, const eng_config *cfg);

typedef struct eng_world_counts {
    uint32_t entities, particles, emitters;
    uint32_t spawned, died, collisions, timers_fired; /* newest frame; particles */
    uint64_t total_spawned, total_died, total_collisions, total_timers; /* particles */
    uint64_t entity_births, entity_deaths; /* counted by the spawn/death event handlers */
    uint64_t dropped; /* frames whose lists did not fit the frame arena (world emptied) */
} eng_world_counts;
void eng_world_counts_get(const eng_world *w, eng_world_counts *out);
/// Hash of the simulation state (positions, lives, counts), backend-independent.
uint64_t eng_world_checksum(const eng_world *w);

#endif /* ENG_WORLD_H */
