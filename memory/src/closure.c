/* closure.c: pooled and frame closures, multicast events, deferred calls.
 *
 * A closure is a 32-byte header and its capture. Pooled closures count their
 * references in the header (the CountPool idea): retain and release touch
 * nothing else, and the last release is a plain pool free. A freed pool
 * slot starts with the pool's free-list link (and Debug builds fill the rest),
 * so what recognises a dead closure (owner, class, magic) sits past the first
 * 16 bytes and the magic is cleared by the last release.
 */
#include "framemem/closure.h"

#include "framemem/clock.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

#define FM__CLOSURE_MAGIC 0xC105u
#define FM__CLOSURE_FRAME 1u
#define FM__MIN_CLASS 16u

struct fm_closure {
    fm_closure_fn fn;
    uint32_t capture_size;
    uint32_t refs;          /* pooled: references held; frame: 0 */
    fm_closure_pool *owner; /* NULL for frame closures */
    uint16_t magic;
    uint16_t cls;
    uint16_t flags;
    uint16_t unused2;
    _Alignas(16) unsigned char capture[];
};

struct fm_closure_pool {
    fm_pool *classes[FM_CLOSURE_MAX_CLASSES];
    uint32_t n_classes;
    size_t max_capture;
    uint64_t total_made;
    uint64_t refused;
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

/* ============================================================ closures */

static size_t fm__class_capture(uint32_t cls) { return (size_t)FM__MIN_CLASS << cls; }

static void fm__closure_pool_free_all(fm_closure_pool *cp) {
    for (uint32_t i = 0; i < cp->n_classes; i++) fm_pool_destroy(cp->classes[i]);
    fm_allocator a = cp->allocator;
    fm__mem_free(&a, cp, cp->self_bytes);
}

fm_closure_pool *fm_closure_pool_create(const fm_closure_pool_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "closure pool: fm_closure_pool_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "closures");
    size_t max_capture = fm__def(desc->max_capture, (size_t)256);
    const char *why = NULL;
    if (max_capture > fm__class_capture(FM_CLOSURE_MAX_CLASSES - 1)) why = "max_capture above 65536";
    else if (desc->sync != FM_SYNC_NONE) why = "sync policies other than FM_SYNC_NONE are not available yet";
    else if ((desc->allocator.alloc == NULL) != (desc->allocator.free == NULL))
        why = "allocator needs both alloc and free";
    if (why) {
        fm__report(FM_ERR_INVALID_ARG, "closure pool '%s': %s", name, why);
        return NULL;
    }
    size_t self_bytes;
    fm_closure_pool *cp =
        FM__OBJECT_NEW(fm_closure_pool, &desc->allocator, "closure pool", name, &self_bytes);
    if (!cp) return NULL;
    cp->self_bytes = self_bytes;
    cp->allocator = desc->allocator;
    cp->max_capture = max_capture;
    while (cp->n_classes == 0 || fm__class_capture(cp->n_classes - 1) < max_capture) {
        uint32_t cls = cp->n_classes;
        char class_name[96];
        snprintf(class_name, sizeof class_name, "%s/%zu", name, fm__class_capture(cls));
        cp->classes[cls] = fm_pool_create(&(fm_pool_desc){
            .name = class_name,
            .item_size = sizeof(fm_closure) + fm__class_capture(cls),
            .item_align = 16,
            .initial_capacity = desc->initial_capacity,
            .allocator = desc->allocator,
        });
        if (!cp->classes[cls]) {
            fm__closure_pool_free_all(cp);
            return NULL;
        }
        cp->n_classes++;
    }
    return cp;
}

void fm_closure_pool_destroy(fm_closure_pool *cp) {
    if (!cp) return;
    fm__closure_pool_free_all(cp);
}

static void fm__closure_init(fm_closure *c, fm_closure_fn fn, const void *capture, size_t size) {
    c->fn = fn;
    c->capture_size = (uint32_t)size;
    c->magic = FM__CLOSURE_MAGIC;
    if (capture && size) memcpy(c->capture, capture, size);
}

static bool fm__closure_args_ok(const char *kind, const char *name, fm_closure_fn fn,
                                size_t size, size_t max) {
    const char *why = NULL;
    if (!fn) why = "fn is NULL";
    else if (size > max) why = "capture larger than max_capture";
    if (why) fm__report(FM_ERR_INVALID_ARG, "%s '%s': make (%zu capture bytes): %s", kind, name,
                        size, why);
    return why == NULL;
}

fm_closure *fm_closure_make(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                            size_t capture_size) {
    if (capture_size && !capture) {
        cp->refused++;
        fm__report(FM_ERR_INVALID_ARG, "closure pool '%s': make: capture is NULL", cp->name);
        return NULL;
    }
    return fm_closure_alloc(cp, fn, capture, capture_size);
}

fm_closure *fm_closure_alloc(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                             size_t capture_size) {
    if (!fm__closure_args_ok("closure pool", cp->name, fn, capture_size, cp->max_capture)) {
        cp->refused++;
        return NULL;
    }
    uint32_t cls = 0;
    while (fm__class_capture(cls) < capture_size) cls++;
    fm_closure *c = fm_pool_alloc(cp->classes[cls]);
    if (!c) {
        cp->refused++; /* the class pool reported why */
        return NULL;
    }
    c->owner = cp;
    c->cls = (uint16_t)cls;
    c->flags = 0;
    c->refs = 1;
    fm__closure_init(c, fn, capture, capture_size);
    cp->total_made++;
    return c;
}

fm_closure *fm_closure_make_frame(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                  size_t capture_size) {
    if (capture_size && !capture) {
        fm__report(FM_ERR_INVALID_ARG, "frame closure: make: capture is NULL");
        return NULL;
    }
    return fm_closure_alloc_frame(fa, fn, capture, capture_size);
}

fm_closure *fm_closure_alloc_frame(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                   size_t capture_size) {
    if (!fm__closure_args_ok("frame closure", "frame", fn, capture_size, UINT32_MAX))
        return NULL;
    fm_closure *c = fm_frame_alloc(fa, sizeof(fm_closure) + capture_size, 16);
    if (!c) return NULL; /* the arena reported why */
    c->owner = NULL;
    c->cls = 0;
    c->flags = FM__CLOSURE_FRAME;
    c->refs = 0;
    fm__closure_init(c, fn, capture, capture_size);
    return c;
}

void fm_closure_call(const fm_closure *c, void *arg) { c->fn((void *)c->capture, arg); }

void *fm_closure_capture(fm_closure *c) { return c->capture; }

size_t fm_closure_capture_size(const fm_closure *c) { return c->capture_size; }

/* The class pool of a pooled closure; NULL for a frame closure, or with a
 * report for something that is not a live closure. */
static fm_pool *fm__closure_home(fm_closure *c, const char *op, bool *ok) {
    *ok = false;
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "closure: %s(NULL)", op);
        return NULL;
    }
#ifdef FM__ASAN
    /* A released closure's slot is poisoned: say so instead of reading it. */
    if (__asan_region_is_poisoned((void *)c, sizeof *c)) {
        fm__report(FM_ERR_REFCOUNT, "closure %p: %s of a released closure", (void *)c, op);
        return NULL;
    }
#endif
    /* Under Valgrind a released closure's bytes are no-access: reading them
     * is exactly the check being made, so it is not reported as an error. */
    FM__VG_QUIET_BEGIN();
    bool live = c->magic == FM__CLOSURE_MAGIC && (!c->owner || c->cls < c->owner->n_classes);
    FM__VG_QUIET_END();
    if (!live) {
        fm__report(FM_ERR_REFCOUNT, "closure %p: %s of something that is not a live closure",
                   (void *)c, op);
        return NULL;
    }
    *ok = true;
    return c->owner ? c->owner->classes[c->cls] : NULL;
}

/* Takes a reference; false (reported) when none could be taken. */
static bool fm__closure_take(fm_closure *c) {
    bool ok;
    fm_pool *home = fm__closure_home(c, "retain", &ok);
    if (!home) return ok; /* frame closures: nothing to count */
    if (c->refs == UINT32_MAX) {
        fm__report(FM_ERR_REFCOUNT, "closure %p: retain: count at its maximum", (void *)c);
        return false;
    }
    c->refs++;
    return true;
}

void fm_closure_retain(fm_closure *c) { (void)fm__closure_take(c); }

bool fm_closure_release(fm_closure *c) {
    bool ok;
    fm_pool *home = fm__closure_home(c, "release", &ok);
    if (!home) return false;
    if (--c->refs > 0) return false;
    /* The magic goes with the last reference, so a later release of this
     * pointer is recognised even where the slot's bytes survive. */
    c->magic = 0;
    fm_pool_free(home, c);
    return true;
}

void fm_closure_pool_get_stats(const fm_closure_pool *cp, fm_closure_pool_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!cp) {
        fm__report(FM_ERR_INVALID_ARG, "closure pool: fm_closure_pool_get_stats(NULL)");
        return;
    }
    out->name = cp->name;
    out->classes = cp->n_classes;
    out->total_made = cp->total_made;
    out->refused = cp->refused;
    for (uint32_t i = 0; i < cp->n_classes; i++) {
        fm_pool_stats st;
        fm_pool_get_stats(cp->classes[i], &st);
        out->class_capture[i] = fm__class_capture(i);
        out->class_live[i] = st.live;
        out->live += st.live;
    }
}

/* ================================================ growable arrays (events) */

/* Grows *arr (of elem bytes each) to hold at least need elements. */
static bool fm__grow_array(const fm_allocator *a, void **arr, uint32_t *cap, uint32_t need,
                           size_t elem) {
    if (need <= *cap) return true;
    uint64_t n = *cap ? *cap : 8;
    while (n < need) n *= 2;
    if (n > UINT32_MAX) return false;
    void *mem = fm__mem_alloc(a, (size_t)n * elem, alignof(max_align_t));
    if (!mem) return false;
    if (*arr) memcpy(mem, *arr, (size_t)*cap * elem);
    fm__mem_free(a, *arr, (size_t)*cap * elem);
    *arr = mem;
    *cap = (uint32_t)n;
    return true;
}

/* ================================================================ events */

typedef struct fm__sub {
    fm_closure *c;
    uint32_t slot; /* in fm_event.slots */
    bool dead;     /* unsubscribed during an emit; removed when it ends */
} fm__sub;

typedef struct fm__sub_slot {
    uint32_t gen;  /* odd while in use */
    uint32_t pos;  /* index in subs while in use; next free slot otherwise */
} fm__sub_slot;

struct fm_event {
    fm__sub *subs;
    uint32_t n_subs, subs_cap;
    fm__sub_slot *slots;
    uint32_t n_slots, slots_cap, free_slot;
    uint32_t live;
    uint32_t emitting;
    uint32_t salt; /* xored into handles: another event's handles do not match */
    bool dirty;
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

fm_event *fm_event_create(const fm_event_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "event: fm_event_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "event");
    if (desc->sync != FM_SYNC_NONE || (desc->allocator.alloc == NULL) != (desc->allocator.free == NULL)) {
        fm__report(FM_ERR_INVALID_ARG, "event '%s': %s", name,
                   desc->sync != FM_SYNC_NONE ? "sync policies other than FM_SYNC_NONE are not available yet"
                                              : "allocator needs both alloc and free");
        return NULL;
    }
    size_t self_bytes;
    fm_event *ev = FM__OBJECT_NEW(fm_event, &desc->allocator, "event", name, &self_bytes);
    if (!ev) return NULL;
    ev->self_bytes = self_bytes;
    ev->allocator = desc->allocator;
    ev->free_slot = UINT32_MAX;
    ev->salt = (uint32_t)((((uint64_t)(uintptr_t)ev ^ fm_clock_now()) * 0x9E3779B97F4A7C15ull) >> 32);
    uint32_t cap = fm__def(desc->initial_capacity, 8u);
    if (!fm__grow_array(&ev->allocator, (void **)&ev->subs, &ev->subs_cap, cap, sizeof *ev->subs) ||
        !fm__grow_array(&ev->allocator, (void **)&ev->slots, &ev->slots_cap, cap, sizeof *ev->slots)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "event '%s': no memory for %u subscribers", name, cap);
        fm_event_destroy(ev);
        return NULL;
    }
    return ev;
}

void fm_event_destroy(fm_event *ev) {
    if (!ev) return;
    if (ev->emitting) {
        fm__report(FM_ERR_INVALID_ARG, "event '%s': destroyed from inside its own emit", ev->name);
        return;
    }
    for (uint32_t i = 0; i < ev->n_subs; i++) fm_closure_release(ev->subs[i].c);
    fm_allocator a = ev->allocator;
    fm__mem_free(&a, ev->subs, (size_t)ev->subs_cap * sizeof *ev->subs);
    fm__mem_free(&a, ev->slots, (size_t)ev->slots_cap * sizeof *ev->slots);
    fm__mem_free(&a, ev, ev->self_bytes);
}

fm_handle fm_event_subscribe(fm_event *ev, fm_closure *c) {
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "event '%s': subscribe(NULL)", ev->name);
        return FM_HANDLE_NULL;
    }
    uint32_t slot = ev->free_slot;
    if (!fm__closure_take(c)) return FM_HANDLE_NULL; /* reported */
    if (!fm__grow_array(&ev->allocator, (void **)&ev->subs, &ev->subs_cap, ev->n_subs + 1,
                        sizeof *ev->subs) ||
        (slot == UINT32_MAX &&
         !fm__grow_array(&ev->allocator, (void **)&ev->slots, &ev->slots_cap, ev->n_slots + 1,
                         sizeof *ev->slots))) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "event '%s': no memory for another subscriber", ev->name);
        fm_closure_release(c);
        return FM_HANDLE_NULL;
    }
    if (slot == UINT32_MAX) {
        slot = ev->n_slots++;
        ev->slots[slot].gen = 0;
    } else {
        ev->free_slot = ev->slots[slot].pos;
    }
    fm__sub_slot *s = &ev->slots[slot];
    s->gen++; /* odd: in use */
    s->pos = ev->n_subs;
    ev->subs[ev->n_subs++] = (fm__sub){c, slot, false};
    ev->live++;
    return (fm_handle){(uint64_t)(s->gen ^ ev->salt) << 32 | (slot + 1u)};
}

bool fm_event_unsubscribe(fm_event *ev, fm_handle sub) {
    uint32_t slot = (uint32_t)sub.bits - 1u, gen = (uint32_t)(sub.bits >> 32) ^ ev->salt;
    if (slot >= ev->n_slots || ev->slots[slot].gen != gen || !(gen & 1u)) {
        fm__report(FM_ERR_STALE_HANDLE, "event '%s': unsubscribe of an unknown or removed subscription",
                   ev->name);
        return false;
    }
    fm__sub_slot *s = &ev->slots[slot];
    fm__sub *e = &ev->subs[s->pos];
    s->gen++; /* even: free; the handle is stale from now on */
    s->pos = ev->free_slot;
    ev->free_slot = slot;
    ev->live--;
    if (ev->emitting) {
        /* Not called again in this emit; its closure may be running now, so
         * it is released when the outermost emit ends. */
        e->dead = true;
        ev->dirty = true;
        return true;
    }
    fm_closure *c = e->c;
    uint32_t pos = (uint32_t)(e - ev->subs);
    memmove(e, e + 1, (size_t)(ev->n_subs - pos - 1) * sizeof *e);
    ev->n_subs--;
    for (uint32_t i = pos; i < ev->n_subs; i++) ev->slots[ev->subs[i].slot].pos = i;
    fm_closure_release(c);
    return true;
}

static void fm__event_compact(fm_event *ev) {
    uint32_t out = 0;
    for (uint32_t i = 0; i < ev->n_subs; i++) {
        fm__sub e = ev->subs[i];
        if (e.dead) {
            fm_closure_release(e.c);
            continue;
        }
        ev->slots[e.slot].pos = out;
        ev->subs[out++] = e;
    }
    ev->n_subs = out;
    ev->dirty = false;
}

void fm_event_emit(fm_event *ev, void *arg) {
    uint32_t n = ev->n_subs; /* subscribers added during the emit wait for the next */
    ev->emitting++;
    for (uint32_t i = 0; i < n; i++) {
        fm__sub e = ev->subs[i]; /* re-read: a subscribe may move the array */
        if (!e.dead) fm_closure_call(e.c, arg);
    }
    if (--ev->emitting == 0 && ev->dirty) fm__event_compact(ev);
}

uint32_t fm_event_count(const fm_event *ev) { return ev->live; }

/* ========================================================= deferred calls */

typedef struct fm__deferred {
    fm_closure *c;
    uint64_t due;
} fm__deferred;

struct fm_defer_queue {
    fm__deferred *items;
    uint32_t n, cap;
    uint64_t frame;
    bool running;
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

fm_defer_queue *fm_defer_queue_create(const fm_defer_queue_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue: fm_defer_queue_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "defer");
    if ((desc->allocator.alloc == NULL) != (desc->allocator.free == NULL)) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': allocator needs both alloc and free",
                   name);
        return NULL;
    }
    size_t self_bytes;
    fm_defer_queue *q =
        FM__OBJECT_NEW(fm_defer_queue, &desc->allocator, "defer queue", name, &self_bytes);
    if (!q) return NULL;
    q->self_bytes = self_bytes;
    q->allocator = desc->allocator;
    if (!fm__grow_array(&q->allocator, (void **)&q->items, &q->cap,
                        fm__def(desc->initial_capacity, 64u), sizeof *q->items)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "defer queue '%s': no memory for its entries", name);
        fm_defer_queue_destroy(q);
        return NULL;
    }
    return q;
}

void fm_defer_queue_destroy(fm_defer_queue *q) {
    if (!q) return;
    if (q->running) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': destroyed from inside its own run",
                   q->name);
        return;
    }
    for (uint32_t i = 0; i < q->n; i++) fm_closure_release(q->items[i].c);
    fm_allocator a = q->allocator;
    fm__mem_free(&a, q->items, (size_t)q->cap * sizeof *q->items);
    fm__mem_free(&a, q, q->self_bytes);
}

bool fm_defer(fm_defer_queue *q, fm_closure *c, uint32_t delay_frames) {
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': defer(NULL)", q->name);
        return false;
    }
    if (!fm__grow_array(&q->allocator, (void **)&q->items, &q->cap, q->n + 1, sizeof *q->items)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "defer queue '%s': no memory for another entry", q->name);
        return false;
    }
    if (!fm__closure_take(c)) return false; /* reported */
    q->items[q->n++] = (fm__deferred){c, q->frame + 1 + delay_frames};
    return true;
}

uint32_t fm_defer_run(fm_defer_queue *q) {
    if (q->running) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': run from inside its own run", q->name);
        return 0;
    }
    uint64_t frame = ++q->frame;
    uint32_t n = q->n, ran = 0; /* entries added while running wait */
    q->running = true;
    for (uint32_t i = 0; i < n; i++) {
        fm__deferred d = q->items[i]; /* re-read: a defer may move the array */
        if (d.due > frame) continue;
        fm_closure_call(d.c, NULL);
        q->items[i].c = NULL;
        fm_closure_release(d.c);
        ran++;
    }
    q->running = false;
    uint32_t out = 0;
    for (uint32_t i = 0; i < q->n; i++) {
        if (q->items[i].c) q->items[out++] = q->items[i];
    }
    q->n = out;
    return ran;
}

uint32_t fm_defer_pending(const fm_defer_queue *q) { return q->n; }
