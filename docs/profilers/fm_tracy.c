/* fm_tracy.c: framemem's profiler hooks (framemem/hooks.h) sent to Tracy's
 * C API (tracy/TracyC.h): each pool or arena is a named memory pool in
 * Tracy's memory view, its resets discard it, growths are messages on the
 * timeline and fm_hooks_frame_end marks the frame. docs/PROFILERS.md says
 * how to build it; tests/memory/test_tracy_adapter.c runs it against a
 * Tracy stand-in that checks the event order. */
#include "fm_tracy.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <tracy/TracyC.h>

#include "framemem/hooks.h"

/* Tracy tells named pools apart by the name's pointer and may read the
 * string at any later time, while a framemem object's name goes with the
 * object: each name gets a copy here that lives as long as the program.
 * Objects with the same name share one Tracy pool (and one reset discards
 * both): give the objects you profile names of their own. */
enum { FM_TRACY_NAMES = 256, FM_TRACY_NAME_BYTES = 64 };
static char fm_tracy_names[FM_TRACY_NAMES][FM_TRACY_NAME_BYTES];
static unsigned fm_tracy_count; /* names in use, under the lock */
static atomic_flag fm_tracy_lock = ATOMIC_FLAG_INIT;
static const char fm_tracy_other[] = "framemem (names past 256)";

/* Per thread: the name pointer seen last and its copy (checked by contents,
 * since a destroyed object's name pointer may come back with another). */
static _Thread_local const char *fm_tracy_last;
static _Thread_local const char *fm_tracy_last_copy;

static const char *fm_tracy_name(const char *name) {
    if (name == fm_tracy_last && strcmp(name, fm_tracy_last_copy) == 0) return fm_tracy_last_copy;
    while (atomic_flag_test_and_set_explicit(&fm_tracy_lock, memory_order_acquire)) {
    }
    const char *copy = fm_tracy_other;
    unsigned i = 0;
    while (i < fm_tracy_count && strncmp(fm_tracy_names[i], name, FM_TRACY_NAME_BYTES - 1) != 0)
        i++;
    if (i < fm_tracy_count) {
        copy = fm_tracy_names[i];
    } else if (fm_tracy_count < FM_TRACY_NAMES) {
        snprintf(fm_tracy_names[fm_tracy_count], FM_TRACY_NAME_BYTES, "%s", name);
        copy = fm_tracy_names[fm_tracy_count++];
    }
    atomic_flag_clear_explicit(&fm_tracy_lock, memory_order_release);
    fm_tracy_last = name;
    fm_tracy_last_copy = copy;
    return copy;
}

static void fm_tracy_alloc(const void *ptr, size_t size, const char *name, void *user) {
    (void)user;
    TracyCAllocN(ptr, size, fm_tracy_name(name));
}

static void fm_tracy_free(const void *ptr, const char *name, void *user) {
    (void)user;
    TracyCFreeN(ptr, fm_tracy_name(name));
}

static void fm_tracy_reset(const char *name, void *user) {
    (void)user;
    TracyCMemoryDiscard(fm_tracy_name(name));
}

static void fm_tracy_grow(size_t bytes, uint64_t ns, const char *name, void *user) {
    (void)user;
    char text[128];
    int n = snprintf(text, sizeof text, "%s grew by %zu bytes in %llu ns", name, bytes,
                     (unsigned long long)ns);
    TracyCMessage(text, n > 0 && (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

static void fm_tracy_frame_end(void *user) {
    (void)user;
    TracyCFrameMark;
}

bool fm_tracy_install(void) {
    return fm_set_hooks(&(fm_hooks){.alloc = fm_tracy_alloc,
                                    .free = fm_tracy_free,
                                    .reset = fm_tracy_reset,
                                    .grow = fm_tracy_grow,
                                    .frame_end = fm_tracy_frame_end});
}

void fm_tracy_uninstall(void) { fm_set_hooks(NULL); }
