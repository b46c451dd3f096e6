/* hooks.c: the profiler hooks of framemem/hooks.h.
 *
 * The installed set is read by every event, on any thread, while
 * fm_set_hooks may replace it: a sequence lock. A writer (one at a time,
 * under a mutex) makes the sequence odd, stores the fields, makes it even
 * again; a reader copies the fields between two reads of an even, unchanged
 * sequence, else tries again, so an event never pairs one set's function
 * with another's user pointer. Every field is an atomic word (relaxed or
 * acquire/release loads and stores are plain moves where they run), so
 * readers and the writer never race. `installed` lets the events of a
 * process without hooks skip the copy.
 */
#include "framemem/clock.h"
#include "framemem/hooks.h"

#include "internal.h"
#include "platform/thread.h"

#include <string.h>

#ifdef FM_HOOKS

static fm__mutex fm__hooks_lock = FM__MUTEX_INIT;
static uint32_t fm__hooks_seq;
static uint32_t fm__hooks_installed;
static fm_hooks fm__hooks_set;

/* The installed set, whole. */
static fm_hooks fm__hooks_read(void) {
    fm_hooks h;
    for (;;) {
        uint32_t seq = FM__ATOMIC_LOAD(&fm__hooks_seq, ACQUIRE);
        if (seq & 1u) {
            fm__thread_yield(); /* a writer is between its two stores */
            continue;
        }
        /* Acquire loads: the second read of seq below stays after them. */
        h.alloc = FM__ATOMIC_LOAD(&fm__hooks_set.alloc, ACQUIRE);
        h.free = FM__ATOMIC_LOAD(&fm__hooks_set.free, ACQUIRE);
        h.reset = FM__ATOMIC_LOAD(&fm__hooks_set.reset, ACQUIRE);
        h.grow = FM__ATOMIC_LOAD(&fm__hooks_set.grow, ACQUIRE);
        h.frame_end = FM__ATOMIC_LOAD(&fm__hooks_set.frame_end, ACQUIRE);
        h.user = FM__ATOMIC_LOAD(&fm__hooks_set.user, ACQUIRE);
        if (FM__ATOMIC_LOAD(&fm__hooks_seq, RELAXED) == seq) return h;
    }
}

static bool fm__hooks_any(void) { return FM__ATOMIC_LOAD(&fm__hooks_installed, RELAXED) != 0; }

void fm__hook_alloc(const char *name, const void *ptr, size_t size) {
    if (!fm__hooks_any()) return;
    fm_hooks h = fm__hooks_read();
    if (h.alloc) h.alloc(ptr, size, name, h.user);
}

void fm__hook_free(const char *name, const void *ptr) {
    if (!fm__hooks_any()) return;
    fm_hooks h = fm__hooks_read();
    if (h.free) h.free(ptr, name, h.user);
}

void fm__hook_reset(const char *name) {
    if (!fm__hooks_any()) return;
    fm_hooks h = fm__hooks_read();
    if (h.reset) h.reset(name, h.user);
}

uint64_t fm__hook_clock(void) { return fm_clock_now(); }

void fm__hook_grow(const char *name, size_t bytes, uint64_t start) {
    if (!fm__hooks_any()) return;
    uint64_t ns = fm_clock_to_ns(fm_clock_now() - start);
    fm_hooks h = fm__hooks_read();
    if (h.grow) h.grow(bytes, ns, name, h.user);
}

void fm_hooks_frame_end(void) {
    if (!fm__hooks_any()) return;
    fm_hooks h = fm__hooks_read();
    if (h.frame_end) h.frame_end(h.user);
}

#else

void fm_hooks_frame_end(void) {}

#endif /* FM_HOOKS */

bool fm_set_hooks(const fm_hooks *hooks) {
    fm_hooks h;
    memset(&h, 0, sizeof h);
    if (hooks) h = *hooks;
    bool any = h.alloc || h.free || h.reset || h.grow || h.frame_end;
    if (!any) h.user = NULL;
#ifdef FM_HOOKS
    fm_clock_init(); /* grow's ns: calibrated here, not inside a timed growth */
    fm__mutex_lock(&fm__hooks_lock);
    uint32_t seq = FM__ATOMIC_LOAD(&fm__hooks_seq, RELAXED);
    FM__ATOMIC_STORE(&fm__hooks_seq, seq + 1, RELAXED);
    /* Release stores: none moves above the odd sequence. */
    FM__ATOMIC_STORE(&fm__hooks_set.alloc, h.alloc, RELEASE);
    FM__ATOMIC_STORE(&fm__hooks_set.free, h.free, RELEASE);
    FM__ATOMIC_STORE(&fm__hooks_set.reset, h.reset, RELEASE);
    FM__ATOMIC_STORE(&fm__hooks_set.grow, h.grow, RELEASE);
    FM__ATOMIC_STORE(&fm__hooks_set.frame_end, h.frame_end, RELEASE);
    FM__ATOMIC_STORE(&fm__hooks_set.user, h.user, RELEASE);
    FM__ATOMIC_STORE(&fm__hooks_seq, seq + 2, RELEASE);
    FM__ATOMIC_STORE(&fm__hooks_installed, any ? 1u : 0u, RELAXED);
    fm__mutex_unlock(&fm__hooks_lock);
    return true;
#else
    if (!any) return true;
    fm__report(FM_ERR_UNSUPPORTED,
               "fm_set_hooks: this framemem was built without FM_HOOKS, so it sends no events "
               "(configure it with -DFM_HOOKS=ON); no hooks installed");
    return false;
#endif
}
