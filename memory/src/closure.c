/* closure.c: pooled and frame closures (events in event.c, deferred calls
 * in defer.c).
 *
 * A closure is a 32-byte header (fm__closure_hdr, closure.h) and its
 * capture. Pooled closures count their references in the header (the
 * CountPool idea): retain and release touch nothing else, and the last
 * release is a plain pool free. The pool keeps nothing in a freed slot
 * (Debug builds fill it), so release builds would find a dead closure's
 * header intact: the last release clears its tag, which is what recognises
 * a live closure (with its owner and class). The tag also says which
 * closures need no atomics (those of FM_SYNC_NONE pools), so the common
 * retain and release, inline in callers (closure.h) and first here, test one
 * word. Made and live counts are the class pools' own: a make adds no
 * counter of its own.
 *
 * Threads: a closure pool with sync != NONE builds its class pools with the
 * same policy and counts references with atomic read-modify-writes (NONE:
 * plain loads and stores).
 */
#include "framemem/closure.h"

#include "internal.h"

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
            .tag = desc->tag,
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

/* The library's makes check their owner (closure.h's inline ones take it as
 * a precondition). */
fm_closure *(fm_closure_make)(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                              size_t capture_size) {
    FM__REFUSE_NULL(cp, "closure pool", NULL);
    return fm__closure_pooled(cp, fn, capture, capture_size, true);
}

fm_closure *(fm_closure_alloc)(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                               size_t capture_size) {
    FM__REFUSE_NULL(cp, "closure pool", NULL);
    return fm__closure_pooled(cp, fn, capture, capture_size, false);
}

fm_closure *(fm_closure_make_frame)(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                    size_t capture_size) {
    FM__REFUSE_NULL(fa, "frame arena", NULL);
    return fm__closure_framed(fa, fn, capture, capture_size, true);
}

fm_closure *(fm_closure_alloc_frame)(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                     size_t capture_size) {
    FM__REFUSE_NULL(fa, "frame arena", NULL);
    return fm__closure_framed(fa, fn, capture, capture_size, false);
}

void (fm_closure_call)(const fm_closure *c, void *arg) {
    FM__REFUSE_NULL(c, "closure", );
    c->h.fn((void *)c->capture, arg);
}

void *(fm_closure_capture)(fm_closure *c) {
    FM__REFUSE_NULL(c, "closure", NULL);
    return c->capture;
}

size_t fm_closure_capture_size(const fm_closure *c) {
    FM__REFUSE_NULL(c, "closure", 0);
    return c->h.capture_size;
}

/* The class pool of a pooled closure; NULL for a frame closure, or with a
 * report for something that is not a live closure. */
static fm_pool *fm__closure_home(fm_closure *c, const char *op, bool *ok) {
    *ok = false;
    if (!c) {
        fm__report(FM_ERR_INVALID_ARG, "fm_closure_%s: the closure is NULL", op);
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

bool fm__closure_take(fm_closure *c) {
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

/* Every release but that of a live closure of an FM_SYNC_NONE pool: out of
 * line, so that the common one below stays a test and a decrement. */
FM__NOINLINE static bool fm__closure_release_checked(fm_closure *c) {
    bool ok;
    fm_pool *home = fm__closure_home(c, "release", &ok);
    if (!home) return false;
    if (c->h.tag == FM__CLOSURE_TAG_SHARED) {
        /* acq_rel: every write by the other holders is seen before the free. */
        if (FM__ATOMIC_FETCH_SUB(&c->h.refs, 1, ACQ_REL) > 1) return false;
        c->h.tag = 0;
        FM__POOL_FREE(home, c);
        return true;
    }
    return fm__closure_release_local(c);
}

bool (fm_closure_release)(fm_closure *c) {
#if FM__CLOSURE_TAG_FIRST
    if (FM__LIKELY(fm__closure_is_local(c))) return fm__closure_release_local(c);
#endif
    return fm__closure_release_checked(c);
}

void fm_closure_pool_get_stats(const fm_closure_pool *cp, fm_closure_pool_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    FM__REFUSE_NULL(cp, "closure pool", );
    if (!out) return;
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
        out->capacity += st.capacity;
        out->grow_events += st.alloc_grow_events;
        out->grow_ns += st.alloc_grow_ns;
    }
}
