/* world.c: entities, components, particles, events and timers. */
#include "world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eng_internal.h"

const char *const eng__store_names[ENG__ST_COUNT] = {
    "entities", "transforms", "velocities", "lifetimes", "emitters", "particles",
};

const char *const eng__tag_names[ENG__TAG_COUNT] = {"world", "effects"};

/* ------------------------------------------------------------------ items */

/* A particle is a gameplay effect object, not a GPU sprite: beside the
 * motion the simulation moves, it carries the per-object state such objects
 * hold in a game (colour and size curves, sub-UV frame, collision record,
 * sound and light handles), 1 KiB in all, the object size of fm-bench's
 * regrowth experiment. The simulation here clears
 * that state at spawn, as a constructor would, and leaves it alone; its
 * bytes are what every backend must provide per particle, and what the
 * classic pool must link and fault in when it doubles (its 16,384-item
 * block is 16 MiB, a regrowth of milliseconds, as in a game). */
typedef struct eng__particle {
    float x, y, vx, vy;
    float life, inv_total;
    uint32_t rgba;
    uint32_t unused;
    unsigned char state[ENG__PARTICLE_BYTES - 32];
} eng__particle;
_Static_assert(sizeof(eng__particle) == ENG__PARTICLE_BYTES, "motion fields are 32 bytes");

typedef struct eng__transform {
    float x, y;
} eng__transform;

typedef struct eng__velocity {
    float vx, vy;
} eng__velocity;

typedef struct eng__lifetime {
    float left, total;
} eng__lifetime;

typedef struct eng__emitter {
    uint32_t rgba;
    uint32_t pending_burst; /* particles a timer asked for */
    uint32_t bursts;
    uint32_t unused;
} eng__emitter;

typedef struct eng__entity {
    eng_entity self;
    eng__transform *tr;
    eng__velocity *vel;
    eng__lifetime *life;
    eng__emitter *em; /* NULL: no emitter */
    float radius;
    uint32_t rgba;
    uint64_t id;      /* spawn order, for the checksum */
} eng__entity;

typedef struct eng__pair {
    eng__entity *a, *b;
} eng__pair;

typedef struct eng__timer_cap {
    eng__world *w;
    eng_entity ent;
} eng__timer_cap;

struct eng__world {
    fm_allocator alloc;
    eng__faults *faults;
    fm_tag *tags[ENG__TAG_COUNT];
    eng__store stores[ENG__ST_COUNT];
    bool store_ok[ENG__ST_COUNT];
    fm_frame_arena *fa;
    fm_closure_pool *closures;
    fm_event *ev_spawn, *ev_death, *ev_collision;
    fm_defer_queue *timers;
    uint64_t rng;
    float w, h;
    /* lists of the newest update, in the frame arena; they live until the
     * frame arena advances twice, and it advances only after an update
     * (eng__world_begin), so a paused frame keeps them */
    bool updated;     /* an update allocated in the current frame arena */
    bool timers_due;  /* the frame's first update runs the timers */
    eng__entity **ents;
    uint32_t n_ents;
    eng__particle **parts;
    uint32_t n_parts;
    uint32_t n_emitters;
    eng_render_list render;
    double spawn_accum;
    uint64_t next_id;
    eng__world_counts counts;
};

/* -------------------------------------------------------------- PRNG */

/* splitmix64: small, fast and identical everywhere. */
static uint64_t eng__next(eng__world *w) {
    uint64_t z = (w->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float eng__unit(eng__world *w) { return (float)(eng__next(w) >> 40) * (1.0f / 16777216.0f); }
static float eng__range(eng__world *w, float lo, float hi) { return lo + (hi - lo) * eng__unit(w); }

static const uint32_t eng__palette[] = {0xff5a36ff, 0xffc93cff, 0x3cd3ffff, 0x8aff5cff,
                                        0xd16bffff, 0xff7fb0ff, 0x5cffc8ff, 0xffffffff};

/* ------------------------------------------------------------ events */

static void eng__on_spawn(void *cap, void *arg) {
    (void)arg;
    eng__world *w = *(eng__world **)cap;
    w->counts.entity_births++;
}

static void eng__on_death(void *cap, void *arg) {
    (void)arg;
    eng__world *w = *(eng__world **)cap;
    w->counts.entity_deaths++;
}

/* Elastic response for equal masses: swap the velocities along the normal. */
static void eng__on_collision(void *cap, void *arg) {
    eng__world *w = *(eng__world **)cap;
    eng__pair *p = arg;
    eng__transform *ta = p->a->tr, *tb = p->b->tr;
    float dx = tb->x - ta->x, dy = tb->y - ta->y;
    float d2 = dx * dx + dy * dy;
    if (d2 < 1e-6f) dx = 1.0f, dy = 0.0f, d2 = 1.0f;
    float inv = 1.0f / sqrtf(d2);
    float nx = dx * inv, ny = dy * inv;
    eng__velocity *va = p->a->vel, *vb = p->b->vel;
    float ua = va->vx * nx + va->vy * ny, ub = vb->vx * nx + vb->vy * ny;
    if (ua - ub > 0.0f) { /* approaching */
        va->vx += (ub - ua) * nx, va->vy += (ub - ua) * ny;
        vb->vx += (ua - ub) * nx, vb->vy += (ua - ub) * ny;
    }
    w->counts.collisions++;
}

static void eng__timer_fire(void *cap, void *arg);
static void eng__drop_all(eng__world *w);

static void eng__timer_arm(eng__world *w, eng_entity ent) {
    uint32_t delay = 30 + (uint32_t)(eng__next(w) % 90);
    fm_closure *c = FM_CLOSURE(w->closures, eng__timer_fire, eng__timer_cap, .w = w, .ent = ent);
    bool ok = c && fm_defer(w->timers, c, delay);
    if (c) fm_closure_release(c); /* the queue holds it now (or it goes) */
    /* A refusal (reported by the closure pool or the queue): this emitter
     * stops bursting, the world goes on. */
    if (!ok) eng__fault(w->faults, "timer not armed: %s", fm_last_error_message());
}

/* A timer of an emitter entity: a burst if the entity still lives (the handle
 * goes stale when it dies), then the next timer. */
static void eng__timer_fire(void *cap, void *arg) {
    (void)arg;
    eng__timer_cap *c = cap;
    eng__world *w = c->w;
    eng__entity *e = eng__store_resolve(&w->stores[ENG__ST_ENTITIES], c->ent.h);
    if (!e || !e->em) return;
    e->em->pending_burst += ENG__TIMER_BURST;
    e->em->bursts++;
    w->counts.timers_fired++;
    eng__timer_arm(w, c->ent);
}

/* ---------------------------------------------------------- lifetime */

static size_t eng__store_item_size[ENG__ST_COUNT] = {
    sizeof(eng__entity),   sizeof(eng__transform), sizeof(eng__velocity),
    sizeof(eng__lifetime), sizeof(eng__emitter),   sizeof(eng__particle),
};
static size_t eng__store_item_align[ENG__ST_COUNT] = {
    alignof(eng__entity),   alignof(eng__transform), alignof(eng__velocity),
    alignof(eng__lifetime), alignof(eng__emitter),   alignof(eng__particle),
};
/* Deliberately small: one chunk each, so warm-up regrows (the hitches a
 * tuned config removes). */
static const uint32_t eng__store_initial[ENG__ST_COUNT] = {64, 64, 64, 64, 32, 1024};

fm_pool_desc eng__world_pool_desc(int i) {
    return (fm_pool_desc){
        .name = eng__store_names[i],
        .item_size = eng__store_item_size[i],
        .item_align = eng__store_item_align[i],
        .initial_capacity = eng__store_initial[i],
        .growth = FM_GROWTH_GEOMETRIC,
        .grow_factor = 2.0f,
        .prefault = true,
        .grow_ahead = true,
    };
}

fm_tag_desc eng__world_tag_desc(int i) {
    return (fm_tag_desc){
        .name = eng__tag_names[i],
        .soft_limit_bytes = i == ENG__TAG_WORLD ? (uint64_t)1 << 20 : (uint64_t)48 << 20,
    };
}

int eng__world_tag_of_store(int i) { return i == ENG__ST_PARTICLES ? ENG__TAG_EFFECTS : ENG__TAG_WORLD; }

fm_frame_arena_desc eng__world_frame_arena_desc(void) {
    return (fm_frame_arena_desc){
        .name = "frame",
        .frames = 2,
        .arena = {.reserve_bytes = (size_t)256 << 20, .commit_step = (size_t)64 << 10},
    };
}

/* Creation failed at `what` (framemem reported why): undo, say what and why. */
static eng__world *eng__world_fail(eng__world *w, char *err, size_t err_len, const char *what) {
    eng__set_err(err, err_len, "engine: cannot create %s: %s", what, fm_last_error_message());
    eng__world_destroy(w);
    return NULL;
}

eng__world *eng__world_create(const eng__world_desc *d, char *err, size_t err_len) {
    eng__world *w = eng__mem_calloc(&d->allocator, 1, sizeof *w);
    if (!w) {
        eng__set_err(err, err_len, "engine: out of memory for the world (%zu bytes)", sizeof *w);
        return NULL;
    }
    w->alloc = d->allocator;
    w->faults = d->faults;
    w->rng = d->seed;
    w->w = d->w;
    w->h = d->h;
    for (int i = 0; i < ENG__TAG_COUNT; i++) {
        fm_tag_desc td = d->tags[i];
        td.allocator = d->allocator;
        w->tags[i] = fm_tag_create(&td);
        if (!w->tags[i]) {
            char what[64];
            snprintf(what, sizeof what, "tag '%s'", eng__tag_names[i]);
            return eng__world_fail(w, err, err_len, what);
        }
    }
    for (int i = 0; i < ENG__ST_COUNT; i++) {
        fm_pool_desc pd = d->pools[i];
        pd.tag = w->tags[eng__world_tag_of_store(i)];
        eng__store_desc sd = {
            .pool = pd,
            .backend = d->backend,
            .timing = d->timing,
            .handles = i == ENG__ST_ENTITIES,
            .prefault_switch = d->prefault,
            .override_growth = d->override_growth,
            .growth = d->growth,
            .allocator = d->allocator,
            .faults = d->faults,
        };
        if (!eng__store_init(&w->stores[i], &sd)) {
            char what[64];
            snprintf(what, sizeof what, "pool '%s'", eng__store_names[i]);
            return eng__world_fail(w, err, err_len, what);
        }
        w->store_ok[i] = true;
    }
    /* With an allocator the frame arena chains blocks from it instead of
     * reserving address space (framemem's rule), committing the same steps. */
    const fm_allocator *al = &d->allocator;
    fm_frame_arena_desc fd = *d->frame;
    fd.arena.allocator = *al;
    w->fa = fm_frame_arena_create(&fd);
    if (!w->fa) return eng__world_fail(w, err, err_len, "the frame arena");
    w->closures = fm_closure_pool_create(
        &(fm_closure_pool_desc){.name = "closures", .max_capture = 64, .allocator = *al});
    if (!w->closures) return eng__world_fail(w, err, err_len, "the closure pool");
    w->ev_spawn = fm_event_create(&(fm_event_desc){.name = "spawn", .allocator = *al});
    w->ev_death = fm_event_create(&(fm_event_desc){.name = "death", .allocator = *al});
    w->ev_collision = fm_event_create(&(fm_event_desc){.name = "collision", .allocator = *al});
    if (!w->ev_spawn || !w->ev_death || !w->ev_collision)
        return eng__world_fail(w, err, err_len, "the events");
    w->timers = fm_defer_queue_create(
        &(fm_defer_queue_desc){.name = "timers", .initial_capacity = 1024, .allocator = *al});
    if (!w->timers) return eng__world_fail(w, err, err_len, "the timer queue");
    struct {
        fm_event *ev;
        fm_closure_fn fn;
    } subs[] = {{w->ev_spawn, eng__on_spawn},
                {w->ev_death, eng__on_death},
                {w->ev_collision, eng__on_collision}};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        fm_closure *c = fm_closure_make(w->closures, subs[i].fn, &w, sizeof w);
        bool ok = c && !fm_handle_is_null(fm_event_subscribe(subs[i].ev, c));
        if (c) fm_closure_release(c); /* the event holds its own reference */
        if (!ok) return eng__world_fail(w, err, err_len, "an event subscription");
    }
    return w;
}

void eng__world_destroy(eng__world *w) {
    if (!w) return;
    /* Timers and events first: their closures capture the world. */
    if (w->timers) fm_defer_queue_destroy(w->timers);
    if (w->ev_spawn) fm_event_destroy(w->ev_spawn);
    if (w->ev_death) fm_event_destroy(w->ev_death);
    if (w->ev_collision) fm_event_destroy(w->ev_collision);
    if (w->closures) fm_closure_pool_destroy(w->closures);
    /* The malloc backend frees item by item; pools go with their items. */
    if (w->store_ok[ENG__ST_COUNT - 1] && w->stores[0].backend == ENG_BACKEND_MALLOC)
        eng__drop_all(w);
    for (int i = 0; i < ENG__ST_COUNT; i++)
        if (w->store_ok[i]) eng__store_deinit(&w->stores[i]);
    if (w->fa) fm_frame_arena_destroy(w->fa);
    for (int i = 0; i < ENG__TAG_COUNT; i++)
        if (w->tags[i]) fm_tag_destroy(w->tags[i]); /* after the pools charged to them */
    fm_allocator a = w->alloc;
    eng__mem_free(&a, w, sizeof *w);
}

eng__store *eng__world_store(eng__world *w, int i) { return &w->stores[i]; }
fm_tag *eng__world_tag(eng__world *w, int i) { return w->tags[i]; }
fm_frame_arena *eng__world_frame_arena(eng__world *w) { return w->fa; }
eng_render_list eng__world_render_list(const eng__world *w) { return w->render; }

void eng__world_begin(eng__world *w) {
    /* A frame without an update (a paused game) allocated nothing: advancing
     * would release the arena holding the newest update's lists, which the
     * next update, the queries and the renderer still read. */
    if (w->updated) fm_frame_arena_advance(w->fa);
    w->updated = false;
    w->timers_due = true;
    w->counts.spawned = w->counts.died = w->counts.collisions = w->counts.timers_fired = 0;
}

/* --------------------------------------------------------------- update */

#define ENG__NEW(T, n) ((T *)fm_frame_alloc(w->fa, (size_t)(n) * sizeof(T), alignof(T)))

/* Frees every entity and particle: the frame arena could not hold this
 * frame's lists, and last frame's lists go away with the next advance. */
static void eng__drop_all(eng__world *w) {
    for (uint32_t i = 0; i < w->n_ents; i++) {
        eng__entity *e = w->ents[i];
        void *c[4] = {e->tr, e->vel, e->life, e->em};
        for (int k = 0; k < 4; k++)
            if (c[k]) eng__store_free_n(&w->stores[ENG__ST_TRANSFORMS + k], &c[k], 1);
        eng__store_free_n(&w->stores[ENG__ST_ENTITIES], (void **)&w->ents[i], 1);
    }
    eng__store_free_n(&w->stores[ENG__ST_PARTICLES], (void **)w->parts, w->n_parts);
    w->n_ents = w->n_parts = w->n_emitters = 0;
    w->ents = NULL;
    w->parts = NULL;
    w->render = (eng_render_list){0};
    w->counts.dropped++;
}

/* The frame arena refused this frame's lists (reported): without them the
 * items cannot be tracked, so they all go and the world refills. */
static void eng__drop_lists(eng__world *w) {
    eng__fault(w->faults, "frame arena: no room for this frame's lists, the world was emptied (%s)",
               fm_last_error_message());
    eng__drop_all(w);
}

/* Entities: move, bounce, age; the dead go (death event), new ones keep the
 * count at its target (spawn event, emitter timer). Returns the emitters. */
static eng__entity **eng__update_entities(eng__world *w, float dt, double load,
                                          uint32_t *n_emitters) {
    uint32_t target = (uint32_t)lround(ENG__ENTITIES_PER_SCALE * (load < 1e-9 ? 0 : load));
    uint32_t n_old = w->n_ents;
    uint32_t room = n_old + target;
    eng__entity **list = ENG__NEW(eng__entity *, room + 1);
    eng__entity **dead = ENG__NEW(eng__entity *, n_old + 1);
    void **comp = ENG__NEW(void *, (size_t)(n_old > target ? n_old : target) + 1);
    eng__entity **emitters = ENG__NEW(eng__entity *, room + 1);
    *n_emitters = 0;
    if (!list || !dead || !comp || !emitters) return NULL;
    uint32_t n = 0, n_dead = 0;
    for (uint32_t i = 0; i < n_old; i++) {
        eng__entity *e = w->ents[i];
        e->tr->x += e->vel->vx * dt;
        e->tr->y += e->vel->vy * dt;
        if (e->tr->x < e->radius) e->tr->x = e->radius, e->vel->vx = fabsf(e->vel->vx);
        if (e->tr->x > w->w - e->radius) e->tr->x = w->w - e->radius, e->vel->vx = -fabsf(e->vel->vx);
        if (e->tr->y < e->radius) e->tr->y = e->radius, e->vel->vy = fabsf(e->vel->vy);
        if (e->tr->y > w->h - e->radius) e->tr->y = w->h - e->radius, e->vel->vy = -fabsf(e->vel->vy);
        e->life->left -= dt;
        if (e->life->left <= 0.0f) dead[n_dead++] = e;
        else list[n++] = e;
    }
    /* Deaths: event, then the components and the entities, one batch per store. */
    for (uint32_t i = 0; i < n_dead; i++) fm_event_emit(w->ev_death, dead[i]);
    eng__entity *const *dl = dead;
    for (int k = 0; k < 4; k++) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < n_dead; i++) {
            void *c = k == 0 ? (void *)dl[i]->tr : k == 1 ? (void *)dl[i]->vel
                    : k == 2 ? (void *)dl[i]->life : (void *)dl[i]->em;
            if (c) comp[m++] = c;
        }
        eng__store_free_n(&w->stores[ENG__ST_TRANSFORMS + k], comp, m);
    }
    eng__store_free_n(&w->stores[ENG__ST_ENTITIES], (void *const *)dead, n_dead);

    /* Births up to the target: every store's batch first, then initialise. */
    uint32_t want = target > n ? target - n : 0;
    if (want) {
        void **ent = ENG__NEW(void *, want), **tr = ENG__NEW(void *, want);
        void **vel = ENG__NEW(void *, want), **life = ENG__NEW(void *, want);
        void **em = ENG__NEW(void *, want);
        bool *has_em = ENG__NEW(bool, want);
        if (!(ent && tr && vel && life && em && has_em)) {
            eng__fault(w->faults, "frame arena: no room for this frame's births (%s)",
                       fm_last_error_message());
        } else {
            uint32_t n_em = 0;
            for (uint32_t i = 0; i < want; i++) {
                has_em[i] = eng__next(w) % 3 == 0;
                n_em += has_em[i];
            }
            uint32_t got = eng__store_alloc_n(&w->stores[ENG__ST_ENTITIES], ent, want);
            uint32_t g1 = eng__store_alloc_n(&w->stores[ENG__ST_TRANSFORMS], tr, got);
            uint32_t g2 = eng__store_alloc_n(&w->stores[ENG__ST_VELOCITIES], vel, got);
            uint32_t g3 = eng__store_alloc_n(&w->stores[ENG__ST_LIFETIMES], life, got);
            uint32_t ge = eng__store_alloc_n(&w->stores[ENG__ST_EMITTERS], em, n_em);
            /* A refusal anywhere (max_capacity, out of memory) trims the
             * births to what every store could give; extras go back. */
            uint32_t ok = got;
            if (g1 < ok) ok = g1;
            if (g2 < ok) ok = g2;
            if (g3 < ok) ok = g3;
            uint32_t em_needed = 0, limit = ok;
            for (uint32_t i = 0; i < ok; i++) {
                if (has_em[i] && em_needed == ge) {
                    limit = i;
                    break;
                }
                em_needed += has_em[i];
            }
            ok = limit;
            eng__store_free_n(&w->stores[ENG__ST_ENTITIES], ent + ok, got - ok);
            eng__store_free_n(&w->stores[ENG__ST_TRANSFORMS], tr + ok, g1 - ok);
            eng__store_free_n(&w->stores[ENG__ST_VELOCITIES], vel + ok, g2 - ok);
            eng__store_free_n(&w->stores[ENG__ST_LIFETIMES], life + ok, g3 - ok);
            eng__store_free_n(&w->stores[ENG__ST_EMITTERS], em + em_needed, ge - em_needed);
            uint32_t ei = 0;
            for (uint32_t i = 0; i < ok; i++) {
                eng__entity *e = ent[i];
                e->tr = tr[i];
                e->vel = vel[i];
                e->life = life[i];
                e->em = has_em[i] ? em[ei++] : NULL;
                e->radius = eng__range(w, 3.0f, 8.0f);
                e->rgba = eng__palette[eng__next(w) % 8];
                e->id = w->next_id++;
                e->tr->x = eng__range(w, e->radius, w->w - e->radius);
                e->tr->y = eng__range(w, e->radius, w->h - e->radius);
                float ang = eng__range(w, 0.0f, 6.2831853f), sp = eng__range(w, 30.0f, 120.0f);
                e->vel->vx = cosf(ang) * sp;
                e->vel->vy = sinf(ang) * sp;
                e->life->total = e->life->left = eng__range(w, 3.0f, 10.0f);
                e->self = (eng_entity){eng__store_handle(&w->stores[ENG__ST_ENTITIES], e)};
                if (e->em) *e->em = (eng__emitter){.rgba = e->rgba};
                list[n++] = e;
                fm_event_emit(w->ev_spawn, e);
                if (e->em) eng__timer_arm(w, e->self);
            }
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (list[i]->em) emitters[(*n_emitters)++] = list[i];
    w->ents = list;
    w->n_ents = n;
    return emitters;
}

/* Collisions between entities: a uniform grid in the frame arena; each
 * overlapping pair is one collision event. Returns the pairs. */
static eng__pair *eng__collide(eng__world *w, uint32_t *n_pairs) {
    enum { CELL = 32 };
    *n_pairs = 0;
    uint32_t gw = (uint32_t)(w->w / CELL) + 1, gh = (uint32_t)(w->h / CELL) + 1;
    uint32_t n = w->n_ents;
    int32_t *head = ENG__NEW(int32_t, (size_t)gw * gh);
    int32_t *next = ENG__NEW(int32_t, n + 1);
    uint32_t *cell = ENG__NEW(uint32_t, n + 1);
    uint32_t cap = n * 4 + 16;
    eng__pair *pairs = ENG__NEW(eng__pair, cap);
    if (!head || !next || !cell || !pairs) return NULL;
    memset(head, 0xff, (size_t)gw * gh * sizeof *head);
    for (uint32_t i = 0; i < n; i++) {
        const eng__transform *t = w->ents[i]->tr;
        uint32_t cx = (uint32_t)(t->x / CELL), cy = (uint32_t)(t->y / CELL);
        if (cx >= gw) cx = gw - 1;
        if (cy >= gh) cy = gh - 1;
        cell[i] = cy * gw + cx;
        next[i] = head[cell[i]];
        head[cell[i]] = (int32_t)i;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && m < cap; i++) {
        const eng__entity *a = w->ents[i];
        int32_t cx = (int32_t)(cell[i] % gw), cy = (int32_t)(cell[i] / gw);
        for (int32_t dy = -1; dy <= 1; dy++) {
            for (int32_t dx = -1; dx <= 1; dx++) {
                int32_t x = cx + dx, y = cy + dy;
                if (x < 0 || y < 0 || x >= (int32_t)gw || y >= (int32_t)gh) continue;
                for (int32_t j = head[(uint32_t)y * gw + (uint32_t)x]; j >= 0; j = next[j]) {
                    if ((uint32_t)j <= i) continue; /* each pair once */
                    const eng__entity *b = w->ents[j];
                    float ddx = b->tr->x - a->tr->x, ddy = b->tr->y - a->tr->y;
                    float r = a->radius + b->radius;
                    if (ddx * ddx + ddy * ddy < r * r && m < cap)
                        pairs[m++] = (eng__pair){w->ents[i], w->ents[j]};
                }
            }
        }
    }
    for (uint32_t i = 0; i < m; i++) fm_event_emit(w->ev_collision, &pairs[i]);
    w->counts.total_collisions += m;
    *n_pairs = m;
    return pairs;
}

static eng_sprite eng__particle_sprite(const eng__particle *p) {
    float a = p->life * p->inv_total;
    uint32_t alpha = a >= 1.0f ? 255u : (uint32_t)(a * 255.0f);
    return (eng_sprite){p->x, p->y, 2.0f, (p->rgba & 0xffffff00u) | alpha, ENG_LAYER_PARTICLES};
}

static void eng__init_particle(eng__world *w, eng__particle *p, float x, float y, uint32_t rgba) {
    float ang = eng__range(w, 0.0f, 6.2831853f), sp = eng__range(w, 60.0f, 240.0f);
    p->x = x;
    p->y = y;
    p->vx = cosf(ang) * sp;
    p->vy = sinf(ang) * sp;
    float life = eng__range(w, 0.1f, 0.2333f);
    p->life = life;
    p->inv_total = 1.0f / life;
    p->rgba = rgba;
    memset(p->state, 0, sizeof p->state);
}

void eng__world_update(eng__world *w, double dt_in, double entity_load, double load) {
    float dt = (float)dt_in;
    w->updated = true;
    /* Timers count simulated frames: a paused frame (no update) runs none. */
    if (w->timers_due) {
        w->timers_due = false;
        fm_defer_run(w->timers);
        w->counts.total_timers += w->counts.timers_fired;
    }
    uint32_t n_em = 0;
    eng__entity **emitters = eng__update_entities(w, dt, entity_load, &n_em);
    uint32_t n_pairs = 0;
    eng__pair *pairs = emitters ? eng__collide(w, &n_pairs) : NULL;
    if (!pairs) {
        eng__drop_lists(w);
        return;
    }

    /* Particles: how many are born this frame (rate x load, plus timer bursts). */
    w->spawn_accum += ENG__PARTICLES_PER_FRAME * load * dt_in * 60.0;
    uint32_t n_new = (uint32_t)w->spawn_accum;
    w->spawn_accum -= n_new;
    uint32_t n_burst = 0;
    for (uint32_t i = 0; i < n_em; i++) n_burst += emitters[i]->em->pending_burst;
    uint32_t n_old = w->n_parts;
    eng__particle **list = ENG__NEW(eng__particle *, (size_t)n_old + n_new + n_burst + 1);
    eng__particle **dead = ENG__NEW(eng__particle *, (size_t)n_old + 1);
    /* The render list is written in the same pass as the update: one walk
     * over scattered particles instead of two. */
    size_t sp_cap = (size_t)n_old + n_new + n_burst + w->n_ents + n_pairs + 1;
    eng_sprite *sp = ENG__NEW(eng_sprite, sp_cap);
    if (!list || !dead) {
        eng__drop_lists(w);
        return;
    }
    uint32_t n = 0, n_dead = 0;
    const float g = 40.0f * dt;
    for (uint32_t i = 0; i < n_old; i++) {
        eng__particle *p = w->parts[i];
        p->life -= dt;
        if (p->life <= 0.0f) {
            dead[n_dead++] = p;
            continue;
        }
        p->x += p->vx * dt;
        p->y += p->vy * dt;
        p->vy += g;
        if (sp) sp[n] = eng__particle_sprite(p);
        list[n++] = p;
    }
    eng__store *ps = &w->stores[ENG__ST_PARTICLES];
    eng__store_free_n(ps, (void *const *)dead, n_dead);
    uint32_t want = n_new + n_burst;
    uint32_t got = eng__store_alloc_n(ps, (void **)(list + n), want);
    /* Rate spawns round-robin over the emitters, then the timer bursts. */
    uint32_t k = 0;
    for (; k < got && k < n_new; k++) {
        float x, y;
        uint32_t rgba;
        if (n_em) {
            const eng__entity *e = emitters[k % n_em];
            x = e->tr->x, y = e->tr->y, rgba = e->em->rgba;
        } else {
            x = eng__range(w, 0.0f, w->w), y = eng__range(w, 0.0f, w->h), rgba = 0xffffffffu;
        }
        eng__init_particle(w, list[n + k], x, y, rgba);
    }
    for (uint32_t i = 0; i < n_em; i++) {
        eng__entity *e = emitters[i];
        for (uint32_t b = 0; b < e->em->pending_burst && k < got; b++, k++)
            eng__init_particle(w, list[n + k], e->tr->x, e->tr->y, 0xffffffffu);
        e->em->pending_burst = 0;
    }
    n += got;
    w->parts = list;
    w->n_parts = n;
    w->counts.spawned = got;
    w->counts.died = n_dead;
    w->counts.total_spawned += got;
    w->counts.total_died += n_dead;
    w->n_emitters = n_em;

    /* Render list: particles (survivors written above), entities, collision flashes. */
    if (!sp) {
        w->render = (eng_render_list){0}; /* lists are made; only the picture is lost */
        eng__fault(w->faults, "frame arena: no room for the render list (%s)",
                   fm_last_error_message());
        return;
    }
    for (uint32_t i = n - got; i < n; i++) sp[i] = eng__particle_sprite(list[i]);
    uint32_t m = n;
    uint32_t l1 = m;
    for (uint32_t i = 0; i < w->n_ents; i++) {
        const eng__entity *e = w->ents[i];
        sp[m++] = (eng_sprite){e->tr->x, e->tr->y, e->radius * 2.0f, e->rgba, ENG_LAYER_ENTITIES};
    }
    uint32_t l2 = m;
    for (uint32_t i = 0; i < n_pairs; i++) {
        const eng__transform *a = pairs[i].a->tr, *b = pairs[i].b->tr;
        sp[m++] = (eng_sprite){(a->x + b->x) * 0.5f, (a->y + b->y) * 0.5f, 12.0f, 0xffffffc0u,
                               ENG_LAYER_EFFECTS};
    }
    w->render = (eng_render_list){.items = sp, .count = m, .layer_start = {0, l1, l2, m}};
}

/* ------------------------------------------------------------- queries */

void eng__world_counts_get(const eng__world *w, eng__world_counts *out) {
    *out = w->counts;
    out->entities = w->n_ents;
    out->particles = w->n_parts;
    out->emitters = w->n_emitters;
}

static uint64_t eng__mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t eng__fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

uint64_t eng__world_checksum(const eng__world *w) {
    uint64_t h = eng__mix(0, w->n_ents);
    h = eng__mix(h, w->n_parts);
    for (uint32_t i = 0; i < w->n_ents; i++) {
        const eng__entity *e = w->ents[i];
        h = eng__mix(h, e->id);
        h = eng__mix(h, eng__fbits(e->tr->x) << 32 | eng__fbits(e->tr->y));
        h = eng__mix(h, eng__fbits(e->life->left));
    }
    for (uint32_t i = 0; i < w->n_parts; i++) {
        const eng__particle *p = w->parts[i];
        h = eng__mix(h, eng__fbits(p->x) << 32 | eng__fbits(p->y));
    }
    return h;
}
