/* closure.c: pooled and frame closures, multicast events, deferred calls.
 *
 * A closure is a 32-byte header (fm__closure_hdr, closure.h) and its
 * capture. Pooled closures count their references in the header (the
 * CountPool idea): retain and release touch nothing else, and the last
 * release is a plain pool free. The pool keeps nothing in a freed slot
 * (Debug builds fill it), so release builds would find a dead closure's
 * header intact: the last release clears its tag, which is what recognises
 * a live closure (with its owner and class). The tag also says which closures need no
 * atomics (those of FM_SYNC_NONE pools), so the common retain and release,
 * inline in callers (closure.h) and first here, test one word. Made and live
 * counts are the class pools' own: a make adds no counter of its own.
 *
 * Threads: a closure pool with sync != NONE builds its class pools with the
 * same policy and counts references with atomic read-modify-writes (NONE:
 * plain loads and stores). Events under MUTEX lock
 * around their arrays and unlock while a subscriber runs, so callbacks may
 * subscribe, unsubscribe and emit (the lock is never held across a call, so
 * no recursive lock is needed). Defer queues under MUTEX lock around their
 * array; under LOCKFREE fm_defer pushes into a bounded inbox (Vyukov's
 * sequence-numbered ring, multi-producer) that fm_defer_run drains under the
 * lock, and a push that finds the inbox full drains it itself, under the
 * lock, before appending: each thread's defers keep their order.
 */
#define FM__BUILDING_CLOSURE 1
#include "framemem/closure.h"

#include "framemem/clock.h"
#include "internal.h"
#include "platform/thread.h"

#include <stdio.h>
#include <string.h>

struct fm_closure {
    fm__closure_hdr h;
    _Alignas(16) unsigned char capture[];
};
_Static_assert(sizeof(fm__closure_hdr) == 32 && offsetof(struct fm_closure, capture) == 32,
               "closure.h finds the capture right after the header");

struct fm_closure_pool {
    fm__closure_pool_hot hot; /* first: closure.h's inline paths read it */
    fm_sync sync;
    uint64_t refused;
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

/* Sanitizers and Valgrind make a released closure's bytes unreadable: the
 * checked path asks them first, so the tag is not read before that. */
#if defined(FM__ASAN) || defined(FM_USE_VALGRIND)
#define FM__CLOSURE_TAG_FIRST 0
#else
#define FM__CLOSURE_TAG_FIRST 1
#endif

/* ============================================================ closures */

static size_t fm__class_capture(uint32_t cls) { return (size_t)16 << cls; }

/* Counters: an atomic add when threads share the object, a plain load and
 * store of the same field when they do not. */
static void fm__add64(uint64_t *v, bool shared) {
    if (shared) FM__ATOMIC_FETCH_ADD(v, 1, RELAXED);
    else FM__ATOMIC_STORE(v, FM__ATOMIC_LOAD(v, RELAXED) + 1, RELAXED);
}

static const char *fm__sync_problem(fm_sync sync, bool pool_policies, bool lockfree) {
    if ((unsigned)sync >= FM_SYNC_COUNT) return "unknown sync policy";
    if (pool_policies) return NULL;
    if (sync == FM_SYNC_THREAD_CACHE)
        return lockfree ? "FM_SYNC_THREAD_CACHE is a pool policy; take NONE, MUTEX or LOCKFREE"
                        : "FM_SYNC_THREAD_CACHE is a pool policy; take NONE or MUTEX";
    if (sync == FM_SYNC_LOCKFREE && !lockfree)
        return "FM_SYNC_LOCKFREE is not offered here; take NONE or MUTEX";
    return NULL;
}

static void fm__closure_pool_free_all(fm_closure_pool *cp) {
    for (uint32_t i = 0; i < cp->hot.n_classes; i++) fm_pool_destroy(cp->hot.classes[i]);
    fm_allocator a = cp->allocator;
    fm_allocator_free(&a, cp, cp->self_bytes);
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
    else if (!fm_allocator_valid(&desc->allocator))
        why = "allocator needs both alloc and free";
    else why = fm__sync_problem(desc->sync, true, true);
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
    cp->hot.max_capture = max_capture;
    cp->hot.tag = desc->sync == FM_SYNC_NONE ? FM__CLOSURE_TAG_LOCAL : FM__CLOSURE_TAG_SHARED;
    cp->sync = desc->sync;
    while (cp->hot.n_classes == 0 || fm__class_capture(cp->hot.n_classes - 1) < max_capture) {
        uint32_t cls = cp->hot.n_classes;
        char class_name[96];
        snprintf(class_name, sizeof class_name, "%s/%zu", name, fm__class_capture(cls));
        cp->hot.classes[cls] = fm_pool_create(&(fm_pool_desc){
            .name = class_name,
            .item_size = sizeof(fm_closure) + fm__class_capture(cls),
            .item_align = 16,
            .initial_capacity = desc->initial_capacity,
            .sync = desc->sync,
            .allocator = desc->allocator,
        });
        if (!cp->hot.classes[cls]) {
            fm__closure_pool_free_all(cp);
            return NULL;
        }
        cp->hot.n_classes++;
    }
    return cp;
}

void fm_closure_pool_destroy(fm_closure_pool *cp) {
    if (!cp) return;
    fm__closure_pool_free_all(cp);
}

/* Reports a bad fn or size; false when there is one. */
static bool fm__closure_args_ok(const char *kind, const char *name, fm_closure_fn fn,
                                size_t size, size_t max) {
    const char *why = NULL;
    if (!fn) why = "fn is NULL";
    else if (size > max) why = "capture larger than max_capture";
    if (why) fm__report(FM_ERR_INVALID_ARG, "%s '%s': make (%zu capture bytes): %s", kind, name,
                        size, why);
    return why == NULL;
}

/* The inline makes and the library's come here only to refuse: arguments
 * they refused (reported here), or a class pool that returned NULL (it
 * reported why). */
FM__COLD fm_closure *fm__closure_refuse(fm_closure_pool *cp, fm_closure_fn fn,
                                        const void *capture, size_t capture_size,
                                        bool copy_required) {
    if (copy_required && capture_size && !capture)
        fm__report(FM_ERR_INVALID_ARG, "closure pool '%s': make: capture is NULL", cp->name);
    else
        (void)fm__closure_args_ok("closure pool", cp->name, fn, capture_size, cp->hot.max_capture);
    fm__add64(&cp->refused, cp->sync != FM_SYNC_NONE);
    return NULL;
}

FM__COLD fm_closure *fm__closure_refuse_frame(fm_closure_fn fn, const void *capture,
                                              size_t capture_size, bool copy_required) {
    if (copy_required && capture_size && !capture)
        fm__report(FM_ERR_INVALID_ARG, "frame closure: make: capture is NULL");
    else (void)fm__closure_args_ok("frame closure", "frame", fn, capture_size, UINT32_MAX);
    return NULL;
}

fm_closure *(fm_closure_make)(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                              size_t capture_size) {
    return fm__closure_pooled(cp, fn, capture, capture_size, true);
}

fm_closure *(fm_closure_alloc)(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                               size_t capture_size) {
    return fm__closure_pooled(cp, fn, capture, capture_size, false);
}

fm_closure *(fm_closure_make_frame)(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                    size_t capture_size) {
    return fm__closure_framed(fa, fn, capture, capture_size, true);
}

fm_closure *(fm_closure_alloc_frame)(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                     size_t capture_size) {
    return fm__closure_framed(fa, fn, capture, capture_size, false);
}

void (fm_closure_call)(const fm_closure *c, void *arg) { c->h.fn((void *)c->capture, arg); }

void *(fm_closure_capture)(fm_closure *c) { return c->capture; }

size_t fm_closure_capture_size(const fm_closure *c) { return c->h.capture_size; }

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
    uint32_t tag = c->h.tag;
    const fm__closure_pool_hot *owner = c->h.owner;
    bool live = tag == FM__CLOSURE_TAG_FRAME ||
                ((tag == FM__CLOSURE_TAG_LOCAL || tag == FM__CLOSURE_TAG_SHARED) && owner &&
                 c->h.cls < owner->n_classes);
    FM__VG_QUIET_END();
    if (!live) {
        fm__report(FM_ERR_REFCOUNT, "closure %p: %s of something that is not a live closure",
                   (void *)c, op);
        return NULL;
    }
    *ok = true;
    return tag == FM__CLOSURE_TAG_FRAME ? NULL : owner->classes[c->h.cls];
}

/* Takes a reference; false (reported) when none could be taken. */
static bool fm__closure_take(fm_closure *c) {
#if FM__CLOSURE_TAG_FIRST
    if (FM__LIKELY(fm__closure_is_local(c) && c->h.refs != UINT32_MAX)) {
        c->h.refs++;
        return true;
    }
#endif
    bool ok;
    fm_pool *home = fm__closure_home(c, "retain", &ok);
    if (!home) return ok; /* frame closures: nothing to count */
    bool shared = c->h.tag == FM__CLOSURE_TAG_SHARED;
    uint32_t refs = FM__ATOMIC_LOAD(&c->h.refs, RELAXED);
    do {
        if (refs == UINT32_MAX) {
            fm__report(FM_ERR_REFCOUNT, "closure %p: retain: count at its maximum", (void *)c);
            return false;
        }
        if (!shared) {
            c->h.refs = refs + 1;
            return true;
        }
    } while (!FM__ATOMIC_CAS_WEAK(&c->h.refs, &refs, refs + 1, RELAXED, RELAXED));
    return true;
}

void (fm_closure_retain)(fm_closure *c) { (void)fm__closure_take(c); }

bool (fm_closure_release)(fm_closure *c) {
#if FM__CLOSURE_TAG_FIRST
    if (FM__LIKELY(fm__closure_is_local(c))) return fm__closure_release_local(c);
#endif
    bool ok;
    fm_pool *home = fm__closure_home(c, "release", &ok);
    if (!home) return false;
    if (c->h.tag == FM__CLOSURE_TAG_SHARED) {
        /* acq_rel: every write by the other holders is seen before the free. */
        if (FM__ATOMIC_FETCH_SUB(&c->h.refs, 1, ACQ_REL) > 1) return false;
        c->h.tag = 0;
        fm_pool_free(home, c);
        return true;
    }
    return fm__closure_release_local(c);
}

void fm_closure_pool_get_stats(const fm_closure_pool *cp, fm_closure_pool_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!cp) {
        fm__report(FM_ERR_INVALID_ARG, "closure pool: fm_closure_pool_get_stats(NULL)");
        return;
    }
    out->name = cp->name;
    out->classes = cp->hot.n_classes;
    out->refused = FM__ATOMIC_LOAD(&cp->refused, RELAXED);
    for (uint32_t i = 0; i < cp->hot.n_classes; i++) {
        fm_pool_stats st;
        fm_pool_get_stats(cp->hot.classes[i], &st);
        out->class_capture[i] = fm__class_capture(i);
        out->class_live[i] = st.live;
        out->live += st.live;
        /* Class pools serve makes only: their allocations are the makes. */
        out->total_made += st.total_allocs;
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
    void *mem = fm_allocator_alloc(a, (size_t)n * elem, alignof(max_align_t));
    if (!mem) return false;
    if (*arr) memcpy(mem, *arr, (size_t)*cap * elem);
    fm_allocator_free(a, *arr, (size_t)*cap * elem);
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
    uint32_t emitting; /* emits under way, on any thread */
    uint32_t salt; /* xored into handles: another event's handles do not match */
    bool dirty;
    fm_sync sync;
    fm__mutex lock; /* MUTEX: around everything but the callbacks */
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

static void fm__ev_lock(const fm_event *ev) {
    if (ev->sync != FM_SYNC_NONE) fm__mutex_lock((fm__mutex *)&ev->lock);
}
static void fm__ev_unlock(const fm_event *ev) {
    if (ev->sync != FM_SYNC_NONE) fm__mutex_unlock((fm__mutex *)&ev->lock);
}

static void fm__event_free(fm_event *ev) {
    fm_allocator a = ev->allocator;
    fm__mutex_destroy(&ev->lock);
    fm_allocator_free(&a, ev->subs, (size_t)ev->subs_cap * sizeof *ev->subs);
    fm_allocator_free(&a, ev->slots, (size_t)ev->slots_cap * sizeof *ev->slots);
    fm_allocator_free(&a, ev, ev->self_bytes);
}

fm_event *fm_event_create(const fm_event_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "event: fm_event_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "event");
    const char *why = fm__sync_problem(desc->sync, false, false);
    if (!why && !fm_allocator_valid(&desc->allocator))
        why = "allocator needs both alloc and free";
    if (why) {
        fm__report(FM_ERR_INVALID_ARG, "event '%s': %s", name, why);
        return NULL;
    }
    size_t self_bytes;
    fm_event *ev = FM__OBJECT_NEW(fm_event, &desc->allocator, "event", name, &self_bytes);
    if (!ev) return NULL;
    ev->self_bytes = self_bytes;
    ev->allocator = desc->allocator;
    ev->sync = desc->sync;
    fm__mutex_init(&ev->lock, false);
    ev->free_slot = UINT32_MAX;
    ev->salt = (uint32_t)((((uint64_t)(uintptr_t)ev ^ fm_clock_now()) * 0x9E3779B97F4A7C15ull) >> 32);
    uint32_t cap = fm__def(desc->initial_capacity, 8u);
    if (!fm__grow_array(&ev->allocator, (void **)&ev->subs, &ev->subs_cap, cap, sizeof *ev->subs) ||
        !fm__grow_array(&ev->allocator, (void **)&ev->slots, &ev->slots_cap, cap, sizeof *ev->slots)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "event '%s': no memory for %u subscribers", name, cap);
        fm__event_free(ev);
        return NULL;
    }
    return ev;
}

void fm_event_destroy(fm_event *ev) {
    if (!ev) return;
    fm__ev_lock(ev);
    if (ev->emitting) {
        fm__ev_unlock(ev);
        fm__report(FM_ERR_INVALID_ARG, "event '%s': destroyed during an emit", ev->name);
        return;
    }
    for (uint32_t i = 0; i < ev->n_subs; i++) fm_closure_release(ev->subs[i].c);
    fm__ev_unlock(ev);
    fm__event_free(ev);
}

static fm_handle fm__event_subscribe_locked(fm_event *ev, fm_closure *c) {
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

fm_handle fm_event_subscribe(fm_event *ev, fm_closure *c) {
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "event '%s': subscribe(NULL)", ev->name);
        return FM_HANDLE_NULL;
    }
    fm__ev_lock(ev);
    fm_handle h = fm__event_subscribe_locked(ev, c);
    fm__ev_unlock(ev);
    return h;
}

static bool fm__event_unsubscribe_locked(fm_event *ev, fm_handle sub) {
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

bool fm_event_unsubscribe(fm_event *ev, fm_handle sub) {
    fm__ev_lock(ev);
    bool ok = fm__event_unsubscribe_locked(ev, sub);
    fm__ev_unlock(ev);
    return ok;
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
    fm__ev_lock(ev);
    uint32_t n = ev->n_subs; /* subscribers added during the emit wait for the next */
    ev->emitting++;
    for (uint32_t i = 0; i < n; i++) {
        fm__sub e = ev->subs[i]; /* re-read: a subscribe may move the array */
        if (e.dead) continue;
        /* No lock across the call: the callback may use this event, and a
         * subscriber removed meanwhile stays alive until the emits end. */
        fm__ev_unlock(ev);
        fm_closure_call(e.c, arg);
        fm__ev_lock(ev);
    }
    if (--ev->emitting == 0 && ev->dirty) fm__event_compact(ev);
    fm__ev_unlock(ev);
}

uint32_t fm_event_count(const fm_event *ev) {
    fm__ev_lock(ev);
    uint32_t live = ev->live;
    fm__ev_unlock(ev);
    return live;
}

/* ========================================================= deferred calls */

typedef struct fm__deferred {
    fm_closure *c;
    uint64_t due;
} fm__deferred;

/* LOCKFREE inbox cell: seq == index when free for the push at that index,
 * index + 1 once that push has published its entry. */
typedef struct fm__inbox_cell {
    size_t seq;
    fm__deferred d;
} fm__inbox_cell;

struct fm_defer_queue {
    fm__deferred *items;
    uint32_t n, cap;
    uint64_t frame; /* read by pushes on any thread */
    bool running;
    fm_sync sync;
    fm__mutex lock; /* MUTEX, LOCKFREE: items, n, running, draining */
    /* LOCKFREE */
    fm__inbox_cell *inbox;
    size_t inbox_mask;
    size_t inbox_head; /* next push */
    size_t inbox_tail;         /* next drain (under the lock) */
    fm_allocator allocator;
    size_t self_bytes;
    char name[];
};

static void fm__q_lock(fm_defer_queue *q) {
    if (q->sync != FM_SYNC_NONE) fm__mutex_lock(&q->lock);
}
static void fm__q_unlock(fm_defer_queue *q) {
    if (q->sync != FM_SYNC_NONE) fm__mutex_unlock(&q->lock);
}

static void fm__defer_queue_free(fm_defer_queue *q) {
    fm_allocator a = q->allocator;
    fm__mutex_destroy(&q->lock);
    if (q->inbox) fm_allocator_free(&a, q->inbox, (q->inbox_mask + 1) * sizeof *q->inbox);
    fm_allocator_free(&a, q->items, (size_t)q->cap * sizeof *q->items);
    fm_allocator_free(&a, q, q->self_bytes);
}

fm_defer_queue *fm_defer_queue_create(const fm_defer_queue_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue: fm_defer_queue_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "defer");
    const char *why = fm__sync_problem(desc->sync, false, true);
    if (!why && !fm_allocator_valid(&desc->allocator))
        why = "allocator needs both alloc and free";
    if (why) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': %s", name, why);
        return NULL;
    }
    size_t self_bytes;
    fm_defer_queue *q =
        FM__OBJECT_NEW(fm_defer_queue, &desc->allocator, "defer queue", name, &self_bytes);
    if (!q) return NULL;
    q->self_bytes = self_bytes;
    q->allocator = desc->allocator;
    q->sync = desc->sync;
    fm__mutex_init(&q->lock, false);
    uint32_t cap = fm__def(desc->initial_capacity, 64u);
    bool ok = fm__grow_array(&q->allocator, (void **)&q->items, &q->cap, cap, sizeof *q->items);
    if (ok && q->sync == FM_SYNC_LOCKFREE) {
        size_t cells = 2;
        while (cells < cap && cells < ((size_t)1 << 30)) cells *= 2;
        q->inbox = fm_allocator_alloc(&q->allocator, cells * sizeof *q->inbox, alignof(fm__inbox_cell));
        if (q->inbox) {
            q->inbox_mask = cells - 1;
            for (size_t i = 0; i < cells; i++) FM__ATOMIC_STORE(&q->inbox[i].seq, i, RELAXED);
        }
        ok = q->inbox != NULL;
    }
    if (!ok) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "defer queue '%s': no memory for its entries", name);
        fm__defer_queue_free(q);
        return NULL;
    }
    return q;
}

/* LOCKFREE: moves inbox entries to items, oldest first, while items can
 * hold them. Under the lock (the inbox has one consumer at a time). A run
 * stops at an entry still being written; `all` waits for every push that
 * had reserved a cell when it started (a push publishes right after it
 * reserves, without blocking), so an entry appended to items next cannot
 * pass an earlier one of the same thread. */
static void fm__inbox_drain(fm_defer_queue *q, bool all) {
    if (!q->inbox) return;
    size_t head = FM__ATOMIC_LOAD(&q->inbox_head, ACQUIRE);
    for (;;) {
        fm__inbox_cell *cell = &q->inbox[q->inbox_tail & q->inbox_mask];
        if (FM__ATOMIC_LOAD(&cell->seq, ACQUIRE) != q->inbox_tail + 1) {
            /* Pushes may refill drained cells meanwhile: the tail can pass head. */
            if (!all || q->inbox_tail >= head) return;
            fm__thread_yield();
            continue;
        }
        if (!fm__grow_array(&q->allocator, (void **)&q->items, &q->cap, q->n + 1, sizeof *q->items))
            return; /* stays in the inbox until items can grow */
        q->items[q->n++] = cell->d;
        FM__ATOMIC_STORE(&cell->seq, q->inbox_tail + q->inbox_mask + 1, RELEASE);
        q->inbox_tail++;
    }
}

/* LOCKFREE: publishes d in the inbox; false when it is full. */
static bool fm__inbox_push(fm_defer_queue *q, fm__deferred d) {
    size_t pos = FM__ATOMIC_LOAD(&q->inbox_head, RELAXED);
    for (;;) {
        fm__inbox_cell *cell = &q->inbox[pos & q->inbox_mask];
        size_t seq = FM__ATOMIC_LOAD(&cell->seq, ACQUIRE);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (FM__ATOMIC_CAS_WEAK(&q->inbox_head, &pos, pos + 1, RELAXED, RELAXED)) {
                cell->d = d;
                FM__ATOMIC_STORE(&cell->seq, pos + 1, RELEASE);
                return true;
            }
        } else if (dif < 0) {
            return false; /* full: the cell still holds an entry from a lap ago */
        } else {
            pos = FM__ATOMIC_LOAD(&q->inbox_head, RELAXED);
        }
    }
}

void fm_defer_queue_destroy(fm_defer_queue *q) {
    if (!q) return;
    fm__q_lock(q);
    if (q->running) {
        fm__q_unlock(q);
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': destroyed during its run", q->name);
        return;
    }
    for (uint32_t i = 0; i < q->n; i++) fm_closure_release(q->items[i].c);
    if (q->inbox) {
        /* Entries items could not take (no memory) are still references. */
        for (; FM__ATOMIC_LOAD(&q->inbox[q->inbox_tail & q->inbox_mask].seq, ACQUIRE) == q->inbox_tail + 1;
             q->inbox_tail++)
            fm_closure_release(q->inbox[q->inbox_tail & q->inbox_mask].d.c);
    }
    fm__q_unlock(q);
    fm__defer_queue_free(q);
}

bool fm_defer(fm_defer_queue *q, fm_closure *c, uint32_t delay_frames) {
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "defer queue '%s': defer(NULL)", q->name);
        return false;
    }
    if (!fm__closure_take(c)) return false; /* reported */
    fm__deferred d = {c, FM__ATOMIC_LOAD(&q->frame, ACQUIRE) + 1 + delay_frames};
    if (q->inbox && fm__inbox_push(q, d)) return true;
    fm__q_lock(q);
    /* LOCKFREE with a full inbox: what it holds was deferred first. */
    fm__inbox_drain(q, true);
    bool ok = fm__grow_array(&q->allocator, (void **)&q->items, &q->cap, q->n + 1, sizeof *q->items);
    if (ok) q->items[q->n++] = d;
    fm__q_unlock(q);
    if (!ok) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "defer queue '%s': no memory for another entry", q->name);
        fm_closure_release(c);
    }
    return ok;
}

uint32_t fm_defer_run(fm_defer_queue *q) {
    fm__q_lock(q);
    if (q->running) {
        fm__q_unlock(q);
        fm__report(FM_ERR_INVALID_ARG,
                   "defer queue '%s': run while a run is under way (from inside it, or on another "
                   "thread)",
                   q->name);
        return 0;
    }
    fm__inbox_drain(q, false);
    uint64_t frame = FM__ATOMIC_LOAD(&q->frame, RELAXED) + 1;
    FM__ATOMIC_STORE(&q->frame, frame, RELEASE);
    uint32_t n = q->n, ran = 0; /* entries added while running wait */
    q->running = true;
    for (uint32_t i = 0; i < n; i++) {
        fm__deferred d = q->items[i]; /* re-read: a defer may move the array */
        if (d.due > frame) continue;
        q->items[i].c = NULL;
        fm__q_unlock(q);
        fm_closure_call(d.c, NULL);
        fm_closure_release(d.c);
        fm__q_lock(q);
        ran++;
    }
    q->running = false;
    uint32_t out = 0;
    for (uint32_t i = 0; i < q->n; i++) {
        if (q->items[i].c) q->items[out++] = q->items[i];
    }
    q->n = out;
    fm__q_unlock(q);
    return ran;
}

uint32_t fm_defer_pending(const fm_defer_queue *q) {
    fm_defer_queue *m = (fm_defer_queue *)q;
    fm__q_lock(m);
    uint32_t n = q->n;
    if (q->inbox) {
        size_t head = FM__ATOMIC_LOAD(&q->inbox_head, ACQUIRE);
        n += (uint32_t)(head - q->inbox_tail); /* reserved pushes count as waiting */
    }
    fm__q_unlock(m);
    return n;
}
