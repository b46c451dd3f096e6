/* engine.c: the eng object — frame lifecycle, telemetry and config on
 * framemem_telemetry, controls, headless runner. */
#include "engine/engine.h"

#include "framemem/clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_internal.h"
#include "world.h"

#define ENG__FRAME_SOURCE ENG__ST_COUNT /* telemetry index of the frame arena */

struct eng {
    eng_desc desc;
    char scene[16];
    char config_path[4096];
    bool has_config;
    fm_config *cfg;               /* the loaded file (NULL: none) */
    fm_pool_desc pools[ENG__ST_COUNT]; /* the engine's defaults, the config applied */
    fm_frame_arena_desc frame_arena;
    fm_tag_desc tags[ENG__TAG_COUNT];  /* the same for the tags */
    fm_telemetry *tel;
    eng__world *world;
    eng__faults faults; /* failures met while running, for eng_info / eng_last_failure */
    /* settings */
    double scale;
    double burst_left;
    eng_backend backend;
    bool grow_ahead, prefault, override_growth;
    fm_growth growth;
    /* frame state */
    uint64_t frame;      /* frames ended */
    uint64_t scene_frame;/* frames since the scene (world) started */
    bool in_frame;
    bool updated;        /* the open frame had an eng_update (else it is paused) */
    uint64_t overhead_ticks;
    uint32_t last_batches; /* timed batches of the newest frame */
};

const char *eng_backend_name(eng_backend b) {
    switch (b) {
    case ENG_BACKEND_POOL: return "pool";
    case ENG_BACKEND_MALLOC: return "malloc";
    case ENG_BACKEND_CLASSIC: return "classic";
    default: return "?";
    }
}

static const char *const eng__scenes[] = {"standard", "ramp", "bursts", NULL};

const char *const *eng_scene_names(void) { return eng__scenes; }

static double eng__clamp_scale(double s) {
    if (!(s > 0.0)) return 1.0;
    if (s < 0.05) return 0.05;
    if (s > 50.0) return 50.0;
    return s;
}

/* ------------------------------------------------------------ the world */

/* The world's objects as telemetry sources, in a fixed order (stores, then
 * the frame arena): those of a world before are detached first, so the
 * sources keep their history across rebuilds. */
static void eng__register_sources(eng *e) {
    for (uint32_t i = 0; i < fm_telemetry_source_count(e->tel); i++) fm_telemetry_detach(e->tel, i);
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        eng__store *s = eng__world_store(e->world, i);
        s->source = s->pool ? fm_telemetry_add_pool(e->tel, s->pool)
                            : fm_telemetry_add_counters(e->tel, s->name, &s->counts);
        if (s->classic && s->source >= 0)
            fm_telemetry_set_source_shape(e->tel, (uint32_t)s->source, FM_TELEMETRY_BACKEND_CLASSIC,
                                          s->counts.item_size, 1);
    }
    fm_telemetry_add_frame_arena(e->tel, eng__world_frame_arena(e->world));
    for (int i = 0; i < ENG__TAG_COUNT; i++) fm_telemetry_add_tag(e->tel, eng__world_tag(e->world, i));
}

static eng__world *eng__make_world(eng *e, char *err, size_t err_len) {
    return eng__world_create(
        &(eng__world_desc){
            .seed = e->desc.seed,
            .w = e->desc.world_w,
            .h = e->desc.world_h,
            .backend = e->backend,
            .timing = !e->desc.no_timing,
            .pools = e->pools,
            .frame = &e->frame_arena,
            .tags = e->tags,
            .prefault = e->prefault,
            .override_growth = e->override_growth,
            .growth = e->growth,
            .allocator = e->desc.allocator,
            .faults = &e->faults,
        },
        err, err_len);
}

/* Restarts the world with the current settings; on failure the old one stays
 * (a control's caller gets no message: the failure is counted and kept). */
static bool eng__rebuild(eng *e, char *err, size_t err_len) {
    if (e->in_frame) eng_frame_end(e);
    char why[512] = "";
    eng__world *nw = eng__make_world(e, why, sizeof why);
    if (!nw) {
        eng__fault(&e->faults, "rebuild refused, the old world stays: %s", why);
        eng__set_err(err, err_len, "%s", why);
        return false;
    }
    eng__world_destroy(e->world);
    e->world = nw;
    e->scene_frame = 0;
    eng__register_sources(e);
    return true;
}

/* The engine's descs: its defaults with cfg applied (NULL: the defaults);
 * sections that match none of them are reported in cfg's problems. */
static void eng__resolve_descs(eng *e, fm_config *cfg) {
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        e->pools[i] = eng__world_pool_desc(i);
        if (cfg) fm_config_apply(cfg, &e->pools[i]);
    }
    for (int i = 0; i < ENG__TAG_COUNT; i++) {
        e->tags[i] = eng__world_tag_desc(i);
        if (cfg) fm_config_apply(cfg, &e->tags[i]);
    }
    e->frame_arena = eng__world_frame_arena_desc();
    if (cfg) {
        /* The frame arena chains blocks from eng_desc.allocator when there
         * is one: the file's values must suit that too. */
        fm_frame_arena_desc fd = e->frame_arena;
        fd.arena.allocator = e->desc.allocator;
        if (fm_config_apply(cfg, &fd) > 0) {
            fd.arena.allocator = (fm_allocator){0};
            e->frame_arena = fd;
        }
        fm_config_report_unused(cfg);
    }
}

/* The config at path, read into the engine's memory; NULL with the reason
 * when it cannot be read. */
static fm_config *eng__load_config(eng *e, const char *path, char *err, size_t err_len) {
    return fm_config_load(path, &e->desc.allocator, err, err_len);
}

/* ------------------------------------------------------------- lifetime */

eng *eng_create(const eng_desc *desc, char *err, size_t err_len) {
    eng_desc d = desc ? *desc : (eng_desc){0};
    if (!d.seed) d.seed = 1;
    if (!(d.world_w > 0.0f)) d.world_w = 1280.0f;
    if (!(d.world_h > 0.0f)) d.world_h = 720.0f;
    const char *scene = d.scene ? d.scene : "standard";
    bool known = false;
    for (int i = 0; eng__scenes[i]; i++) known |= strcmp(eng__scenes[i], scene) == 0;
    if (!known) {
        eng__set_err(err, err_len, "engine: unknown scene '%s' (standard, ramp, bursts)", scene);
        return NULL;
    }
    if ((unsigned)d.backend >= ENG_BACKEND_COUNT) {
        eng__set_err(err, err_len, "engine: unknown backend %d", (int)d.backend);
        return NULL;
    }
    if (d.override_growth && (unsigned)d.growth >= FM_GROWTH_COUNT) {
        eng__set_err(err, err_len, "engine: unknown growth policy %d", (int)d.growth);
        return NULL;
    }
    if (d.config_path && strlen(d.config_path) >= sizeof(((eng *)0)->config_path)) {
        eng__set_err(err, err_len, "engine: config path too long");
        return NULL;
    }
    if (d.telemetry_frames > FM_TELEMETRY_MAX_FRAMES) {
        eng__set_err(err, err_len, "engine: telemetry_frames %u above 2^24", d.telemetry_frames);
        return NULL;
    }
    if (!fm_allocator_valid(&d.allocator)) {
        eng__set_err(err, err_len, "engine: the allocator needs both alloc and free (or neither)");
        return NULL;
    }
    eng *e = eng__mem_calloc(&d.allocator, 1, sizeof *e);
    if (!e) {
        eng__set_err(err, err_len, "engine: out of memory for the engine itself (%zu bytes)",
                     sizeof *e);
        return NULL;
    }
    e->desc = d;
    memcpy(e->scene, scene, strlen(scene) + 1);
    e->desc.scene = e->scene;
    e->scale = eng__clamp_scale(d.scale);
    e->backend = d.backend;
    e->grow_ahead = d.grow_ahead;
    e->prefault = d.prefault;
    e->override_growth = d.override_growth;
    e->growth = d.growth;
    if (d.config_path) {
        memcpy(e->config_path, d.config_path, strlen(d.config_path) + 1);
        e->has_config = true;
        e->cfg = eng__load_config(e, e->config_path, err, err_len);
        if (!e->cfg) {
            eng__mem_free(&d.allocator, e, sizeof *e);
            return NULL;
        }
    }
    eng__resolve_descs(e, e->cfg);
    e->desc.config_path = e->has_config ? e->config_path : NULL;
    /* the stores and the frame arena */
    e->tel = fm_telemetry_create(&(fm_telemetry_desc){.frames = d.telemetry_frames,
                                                      .max_sources = ENG__ST_COUNT + 1 + ENG__TAG_COUNT,
                                                      .allocator = d.allocator});
    if (!e->tel) {
        eng__set_err(err, err_len, "engine: out of memory for the telemetry ring of %u frames",
                     d.telemetry_frames ? d.telemetry_frames : 600);
        fm_config_destroy(e->cfg);
        eng__mem_free(&d.allocator, e, sizeof *e);
        return NULL;
    }
    uint64_t ov = fm_telemetry_clock_overhead_ns();
    e->overhead_ticks = (uint64_t)((double)ov * fm_clock_ticks_per_sec() / 1e9 + 0.5);
    e->world = eng__make_world(e, err, err_len);
    if (!e->world) {
        fm_telemetry_destroy(e->tel);
        fm_config_destroy(e->cfg);
        eng__mem_free(&d.allocator, e, sizeof *e);
        return NULL;
    }
    eng__register_sources(e);
    return e;
}

void eng_destroy(eng *e) {
    if (!e) return;
    fm_telemetry_destroy(e->tel); /* it owns none of the world's objects */
    eng__world_destroy(e->world);
    fm_config_destroy(e->cfg);
    fm_allocator a = e->desc.allocator;
    eng__mem_free(&a, e, sizeof *e);
}

/* --------------------------------------------------------------- frames */

/* The scene's load multiplier for the coming update (entities). */
static double eng__load(const eng *e) {
    double load = e->scale;
    if (strcmp(e->scene, "ramp") == 0) {
        /* 10 % to 100 % over the first 600 frames (10 s at 60 Hz). */
        double f = (double)e->scene_frame / 600.0;
        load *= f >= 1.0 ? 1.0 : 0.1 + 0.9 * f;
    }
    return load;
}

/* Particles: the same, times the bursts. */
static double eng__particle_load(const eng *e) {
    double load = eng__load(e);
    /* "bursts": half a second of 10x every five seconds. */
    if (strcmp(e->scene, "bursts") == 0 && e->scene_frame % 300 >= 270) load *= 10.0;
    if (e->burst_left > 0.0) load *= 10.0;
    return load;
}

void eng_frame_begin(eng *e) {
    ENG__REFUSE_NULL(e, "engine", );
    if (e->in_frame) eng_frame_end(e);
    e->in_frame = true;
    e->updated = false;
    fm_telemetry_frame_begin(e->tel);
    eng__world_begin(e->world);
}

void eng_update(eng *e, double dt) {
    ENG__REFUSE_NULL(e, "engine", );
    if (!e->in_frame) eng_frame_begin(e);
    if (!(dt >= 0.0)) dt = 0.0;
    if (dt > 0.1) dt = 0.1;
    e->updated = true;
    /* The world runs due timers in the frame's first update: simulation time. */
    eng__world_update(e->world, dt, eng__load(e), eng__particle_load(e));
    if (e->burst_left > 0.0) e->burst_left = e->burst_left > dt ? e->burst_left - dt : 0.0;
}

void eng_frame_end(eng *e) {
    ENG__REFUSE_NULL(e, "engine", );
    if (!e->in_frame) return;
    /* The stores' timed batches (the telemetry cannot see inside them),
     * grow-ahead at the boundary, then the telemetry samples every source. */
    e->last_batches = 0;
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        eng__store *s = eng__world_store(e->world, i);
        uint64_t batches;
        uint64_t ns = eng__store_take_ns(s, e->overhead_ticks, &batches);
        e->last_batches += (uint32_t)batches;
        fm_telemetry_add_alloc_ns(e->tel, (uint32_t)s->source, ns);
    }
    /* A refusal (reported by the pool) leaves it as it was: the next frame's
     * allocations grow in place, which the telemetry shows. */
    if (e->grow_ahead && fm_telemetry_grow_ahead(e->tel))
        eng__fault(&e->faults, "grow-ahead refused: %s", fm_last_error_message());
    fm_telemetry_frame_end(e->tel);
    e->frame++;
    if (e->updated) e->scene_frame++; /* the scenes' clocks stop while paused */
    e->in_frame = false;
}

void eng_tick(eng *e, double dt) {
    ENG__REFUSE_NULL(e, "engine", );
    eng_frame_begin(e);
    eng_update(e, dt);
    eng_frame_end(e);
}

eng_render_list eng_get_render_list(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", (eng_render_list){0});
    return eng__world_render_list(e->world);
}

void eng_set_render_ns(eng *e, uint64_t ns) {
    ENG__REFUSE_NULL(e, "engine", );
    fm_telemetry_set_render_ns(e->tel, ns);
}

/* ------------------------------------------------------------- controls */

void eng_burst(eng *e, double seconds) {
    ENG__REFUSE_NULL(e, "engine", );
    if (seconds > 0.0 && seconds < 3600.0) e->burst_left = seconds;
}

void eng_set_scale(eng *e, double scale) {
    ENG__REFUSE_NULL(e, "engine", );
    e->scale = eng__clamp_scale(scale);
}

void eng_set_growth(eng *e, fm_growth growth) {
    ENG__REFUSE_NULL(e, "engine", );
    if ((unsigned)growth >= FM_GROWTH_COUNT) return;
    bool was = e->override_growth;
    fm_growth old = e->growth;
    e->override_growth = true;
    e->growth = growth;
    if (!eng__rebuild(e, NULL, 0)) e->override_growth = was, e->growth = old;
}

void eng_clear_growth_override(eng *e) {
    ENG__REFUSE_NULL(e, "engine", );
    if (!e->override_growth) return;
    e->override_growth = false;
    if (!eng__rebuild(e, NULL, 0)) e->override_growth = true;
}

void eng_set_grow_ahead(eng *e, bool on) {
    ENG__REFUSE_NULL(e, "engine", );
    e->grow_ahead = on; /* eng_frame_end grows ahead the pools whose desc says so */
}

void eng_set_prefault(eng *e, bool on) {
    ENG__REFUSE_NULL(e, "engine", );
    if (e->prefault == on) return;
    e->prefault = on;
    if (!eng__rebuild(e, NULL, 0)) e->prefault = !on;
}

void eng_set_backend(eng *e, eng_backend backend) {
    ENG__REFUSE_NULL(e, "engine", );
    if ((unsigned)backend >= ENG_BACKEND_COUNT || backend == e->backend) return;
    eng_backend old = e->backend;
    e->backend = backend;
    if (!eng__rebuild(e, NULL, 0)) e->backend = old;
}

bool eng_reload_config(eng *e, const char *path, char *err, size_t err_len) {
    ENG__REFUSE_NULL_ERR(e, "engine", err, err_len, false);
    const char *p = path ? path : (e->has_config ? e->config_path : NULL);
    if (!p) {
        eng__set_err(err, err_len, "engine: no config file to reload (none was given)");
        return false;
    }
    if (strlen(p) >= sizeof e->config_path) {
        eng__set_err(err, err_len, "engine: config path too long");
        return false;
    }
    fm_config *cfg = eng__load_config(e, p, err, err_len);
    if (!cfg) return false;
    fm_config *old_cfg = e->cfg;
    fm_pool_desc old_pools[ENG__ST_COUNT];
    memcpy(old_pools, e->pools, sizeof old_pools);
    fm_frame_arena_desc old_frame = e->frame_arena;
    e->cfg = cfg;
    eng__resolve_descs(e, cfg);
    if (!eng__rebuild(e, err, err_len)) {
        e->cfg = old_cfg;
        memcpy(e->pools, old_pools, sizeof old_pools);
        e->frame_arena = old_frame;
        fm_config_destroy(cfg);
        return false;
    }
    fm_config_destroy(old_cfg);
    if (p != e->config_path) memmove(e->config_path, p, strlen(p) + 1);
    e->has_config = true;
    e->desc.config_path = e->config_path;
    return true;
}

bool eng_write_tuned_config(eng *e, const char *path, double headroom, char *err,
                            size_t err_len) {
    ENG__REFUSE_NULL_ERR(e, "engine", err, err_len, false);
    const fm_telemetry *runs[1] = {e->tel};
    return fm_config_write_tuned_runs(e->cfg, runs, 1, headroom > 0.0 ? headroom : 1.25, path,
                                      err, err_len);
}

void eng_reset_stats(eng *e) {
    ENG__REFUSE_NULL(e, "engine", );
    fm_telemetry_clear(e->tel); /* peaks restart from the live counts */
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        eng__store *s = eng__world_store(e->world, i);
        s->counts.peak_live = s->counts.live;
    }
}

/* -------------------------------------------------------------- queries */

void eng_get_info(const eng *e, eng_info *out) {
    if (!e && out) memset(out, 0, sizeof *out);
    ENG__REFUSE_NULL(e, "engine", );
    if (!out) return;
    eng__world_counts c;
    eng__world_counts_get(e->world, &c);
    memset(out, 0, sizeof *out);
    out->frame = e->frame;
    out->seed = e->desc.seed;
    out->scale = e->scale;
    out->backend = e->backend;
    out->grow_ahead = e->grow_ahead;
    out->prefault = e->prefault;
    out->override_growth = e->override_growth;
    out->growth = e->override_growth ? e->growth : e->pools[ENG__ST_PARTICLES].growth;
    out->scene = e->scene;
    out->config_path = e->has_config ? e->config_path : NULL;
    out->entities = c.entities;
    out->particles = c.particles;
    out->emitters = c.emitters;
    out->spawned = c.spawned;
    out->died = c.died;
    out->collisions = c.collisions;
    out->timers_fired = c.timers_fired;
    out->checksum = eng__world_checksum(e->world);
    out->burst_left = e->burst_left;
    out->clock_overhead_ns = fm_telemetry_clock_overhead_ns();
    out->timed_batches = e->last_batches;
    out->pools = ENG__ST_COUNT;
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        out->refused_allocs += eng__world_store(e->world, i)->counts.failed;
        fm_growth g = e->override_growth ? e->growth : e->pools[i].growth;
        out->grow_ahead_pools += e->pools[i].grow_ahead && g != FM_GROWTH_FIXED;
        out->prefault_pools += e->pools[i].prefault;
    }
    out->failures = e->faults.count;
}

const char *eng_last_failure(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", "");
    return e->faults.last;
}

const fm_telemetry *eng_get_telemetry(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", NULL);
    return e->tel;
}
fm_telemetry *eng_get_telemetry_mut(eng *e) {
    ENG__REFUSE_NULL(e, "engine", NULL);
    return e->tel;
}
const fm_config *eng_get_config(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", NULL);
    return e->cfg;
}
const char *eng_config_problems(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", "");
    return e->cfg ? fm_config_problems(e->cfg) : "";
}

const fm_pool *eng_get_pool(const eng *e, const char *name) {
    ENG__REFUSE_NULL(e, "engine", NULL);
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        if (name && strcmp(eng__store_names[i], name) == 0)
            return eng__world_store(e->world, i)->pool;
    }
    return NULL;
}

/* -------------------------------------------------------- headless runner */

fm_telemetry *eng_run_headless(const eng_desc *desc, uint32_t frames, eng_run_result *out,
                                char *err, size_t err_len) {
    eng *e = eng_create(desc, err, err_len);
    if (!e) return NULL;
    for (uint32_t i = 0; i < frames; i++) eng_tick(e, 1.0 / 60.0);
    if (out) {
        eng__world_counts c;
        eng__world_counts_get(e->world, &c);
        *out = (eng_run_result){
            .frames = e->frame,
            .checksum = eng__world_checksum(e->world),
            .entities = c.entities,
            .particles = c.particles,
            .total_spawned = c.total_spawned,
            .total_died = c.total_died,
            .total_collisions = c.total_collisions,
            .total_timers = c.total_timers,
        };
    }
    fm_telemetry *t = e->tel;
    /* The objects go with the engine; their history stays. */
    for (uint32_t i = 0; i < fm_telemetry_source_count(t); i++) fm_telemetry_detach(t, i);
    e->tel = NULL;
    eng_destroy(e);
    return t;
}
