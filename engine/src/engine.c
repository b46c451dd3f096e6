/* engine.c: the eng object — frame lifecycle, telemetry sampling, controls, headless runner. */
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
    eng_config cfg;
    eng_config_diag report;
    eng_telemetry *tel;
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
    uint64_t t_begin, update_ticks;
    uint64_t overhead_ticks;
    uint64_t fa_allocs_seen, fa_commits_seen; /* frame arena counters at the last sample / begin */
    uint32_t last_batches;                    /* timed batches of the newest frame */
    eng_sample samples[ENG_TELEMETRY_MAX_SOURCES];
};

static const char *const eng__scenes[] = {"standard", "ramp", "bursts", NULL};

const char *const *eng_scene_names(void) { return eng__scenes; }

static double eng__clamp_scale(double s) {
    if (!(s > 0.0)) return 1.0;
    if (s < 0.05) return 0.05;
    if (s > 50.0) return 50.0;
    return s;
}

/* ------------------------------------------------------------ the world */

/* Commits of the arena serving the current frame: every allocation of a
 * frame lands in that one arena, so its count's change is the frame's. */
static uint64_t eng__current_commits(eng *e) {
    fm_arena_stats as;
    fm_arena_get_stats(fm_frame_arena_current(eng__world_frame_arena(e->world)), &as);
    return as.commit_events;
}

static void eng__register_shapes(eng *e) {
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        eng__store *s = eng__world_store(e->world, i);
        s->source = i;
        eng_telemetry_set_source_shape(e->tel, (uint32_t)i, e->backend, eng__store_item_stride(s),
                                       eng__store_chunk_items(s));
    }
    eng_telemetry_set_source_shape(e->tel, ENG__FRAME_SOURCE, e->backend, 0, 1);
    fm_frame_arena_stats fs;
    fm_frame_arena_get_stats(eng__world_frame_arena(e->world), &fs);
    e->fa_allocs_seen = fs.total_allocs;
    e->fa_commits_seen = eng__current_commits(e);
}

static eng__world *eng__make_world(eng *e, char *err, size_t err_len) {
    return eng__world_create(
        &(eng__world_desc){
            .seed = e->desc.seed,
            .w = e->desc.world_w,
            .h = e->desc.world_h,
            .backend = e->backend,
            .timing = !e->desc.no_timing,
            .cfg = &e->cfg,
            .prefault = e->prefault,
            .grow_ahead = e->grow_ahead,
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
    eng__register_shapes(e);
    return true;
}

static bool eng__load_config(eng *e, const char *path, char *err, size_t err_len) {
    eng_config cfg;
    eng_config_defaults(&cfg);
    eng_config_diag rep;
    if (eng__config_load(&cfg, path, &rep, &e->desc.allocator) < 0) {
        eng__set_err(err, err_len, "%s", rep.text);
        return false;
    }
    e->cfg = cfg;
    e->report = rep;
    return true;
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
    if (d.telemetry_frames > ENG__MAX_FRAMES) {
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
    eng_config_defaults(&e->cfg);
    if (d.config_path) {
        memcpy(e->config_path, d.config_path, strlen(d.config_path) + 1);
        e->has_config = true;
        if (!eng__load_config(e, e->config_path, err, err_len)) {
            eng__mem_free(&d.allocator, e, sizeof *e);
            return NULL;
        }
    }
    e->desc.config_path = e->has_config ? e->config_path : NULL;
    e->tel = eng__telemetry_create(&(eng_telemetry_desc){.frames = d.telemetry_frames},
                                   &d.allocator);
    if (!e->tel) {
        eng__set_err(err, err_len, "engine: out of memory for the telemetry ring of %u frames",
                     d.telemetry_frames ? d.telemetry_frames : 600);
        eng__mem_free(&d.allocator, e, sizeof *e);
        return NULL;
    }
    for (int i = 0; i < ENG__ST_COUNT; i++)
        eng_telemetry_add_source(e->tel, eng__store_names[i], ENG_SOURCE_POOL, 0, 1);
    eng_telemetry_add_source(e->tel, "frame", ENG_SOURCE_ARENA, 0, 1);
    uint64_t ov = eng_telemetry_clock_overhead_ns();
    e->overhead_ticks = (uint64_t)((double)ov * fm_clock_ticks_per_sec() / 1e9 + 0.5);
    e->world = eng__make_world(e, err, err_len);
    if (!e->world) {
        eng_telemetry_destroy(e->tel);
        eng__mem_free(&d.allocator, e, sizeof *e);
        return NULL;
    }
    eng__register_shapes(e);
    return e;
}

void eng_destroy(eng *e) {
    if (!e) return;
    eng__world_destroy(e->world);
    eng_telemetry_destroy(e->tel);
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
    e->t_begin = fm_clock_now();
    eng__world_begin(e->world);
    e->fa_commits_seen = eng__current_commits(e);
    e->update_ticks = fm_clock_now() - e->t_begin;
}

void eng_update(eng *e, double dt) {
    ENG__REFUSE_NULL(e, "engine", );
    if (!e->in_frame) eng_frame_begin(e);
    if (!(dt >= 0.0)) dt = 0.0;
    if (dt > 0.1) dt = 0.1;
    e->updated = true;
    /* The world runs due timers in the frame's first update: simulation time. */
    uint64_t t0 = fm_clock_now();
    eng__world_update(e->world, dt, eng__load(e), eng__particle_load(e));
    e->update_ticks += fm_clock_now() - t0;
    if (e->burst_left > 0.0) e->burst_left = e->burst_left > dt ? e->burst_left - dt : 0.0;
}

void eng_frame_end(eng *e) {
    ENG__REFUSE_NULL(e, "engine", );
    if (!e->in_frame) return;
    uint64_t t0 = fm_clock_now();
    for (int i = 0; i < ENG__ST_COUNT; i++) eng__store_grow_ahead(eng__world_store(e->world, i));
    eng_frame_record rec = {.frame = e->frame};
    uint64_t alloc_ns = 0;
    e->last_batches = 0;
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        e->last_batches += (uint32_t)eng__world_store(e->world, i)->f_batches;
        eng__store_sample(eng__world_store(e->world, i), &e->samples[i], e->overhead_ticks);
        alloc_ns += e->samples[i].alloc_ns;
    }
    fm_frame_arena_stats fs;
    fm_frame_arena_get_stats(eng__world_frame_arena(e->world), &fs);
    eng_sample *fa = &e->samples[ENG__FRAME_SOURCE];
    memset(fa, 0, sizeof *fa);
    fa->allocs = fs.total_allocs - e->fa_allocs_seen;
    fa->bytes_used = fs.used;
    fa->high_water = fs.high_water > fs.used ? fs.high_water : fs.used;
    fa->capacity = fs.committed;
    fa->commit_events = eng__current_commits(e) - e->fa_commits_seen;
    e->fa_allocs_seen = fs.total_allocs;
    uint64_t t1 = fm_clock_now();
    uint64_t frame_ns = fm_clock_to_ns(t1 - e->t_begin);
    uint64_t maint_ns = fm_clock_to_ns(t1 - t0);
    uint64_t update_ns = fm_clock_to_ns(e->update_ticks);
    rec.frame_ns = frame_ns;
    rec.alloc_total_ns = alloc_ns;
    rec.maint_ns = maint_ns;
    rec.sim_ns = update_ns > alloc_ns ? update_ns - alloc_ns : 0;
    eng_telemetry_push(e->tel, &rec, e->samples);
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
    eng_telemetry_set_render_ns(e->tel, ns);
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
    e->grow_ahead = on;
    eng__world_set_grow_ahead(e->world, on, &e->cfg);
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
    eng_config old_cfg = e->cfg;
    eng_config_diag old_rep = e->report;
    if (!eng__load_config(e, p, err, err_len)) return false;
    if (!eng__rebuild(e, err, err_len)) {
        e->cfg = old_cfg;
        e->report = old_rep;
        return false;
    }
    if (p != e->config_path) memmove(e->config_path, p, strlen(p) + 1);
    e->has_config = true;
    e->desc.config_path = e->config_path;
    return true;
}

bool eng_write_tuned_config(eng *e, const char *path, double headroom, char *err,
                            size_t err_len) {
    ENG__REFUSE_NULL_ERR(e, "engine", err, err_len, false);
    const eng_telemetry *runs[1] = {e->tel};
    return eng_config_write_tuned(&e->cfg, runs, 1, headroom > 0.0 ? headroom : 1.25, path, err,
                                  err_len);
}

void eng_reset_stats(eng *e) {
    ENG__REFUSE_NULL(e, "engine", );
    eng_telemetry_clear(e->tel);
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        eng__store *s = eng__world_store(e->world, i);
        s->peak_live = s->live;
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
    const eng_pool_config *pc = eng_config_pool((eng_config *)&e->cfg, "particles");
    out->growth = e->override_growth ? e->growth : pc ? pc->growth : FM_GROWTH_GEOMETRIC;
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
    out->clock_overhead_ns = eng_telemetry_clock_overhead_ns();
    out->timed_batches = e->last_batches;
    for (int i = 0; i < ENG__ST_COUNT; i++)
        out->refused_allocs += eng__world_store(e->world, i)->failed_allocs;
    out->failures = e->faults.count;
}

const char *eng_last_failure(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", "");
    return e->faults.last;
}

const eng_telemetry *eng_get_telemetry(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", NULL);
    return e->tel;
}
eng_telemetry *eng_get_telemetry_mut(eng *e) {
    ENG__REFUSE_NULL(e, "engine", NULL);
    return e->tel;
}
const eng_config *eng_get_config(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", NULL);
    return &e->cfg;
}
const char *eng_config_problems(const eng *e) {
    ENG__REFUSE_NULL(e, "engine", "");
    return e->report.text;
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

eng_telemetry *eng_run_headless(const eng_desc *desc, uint32_t frames, eng_run_result *out,
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
    eng_telemetry *t = e->tel;
    e->tel = NULL;
    eng_destroy(e);
    return t;
}
