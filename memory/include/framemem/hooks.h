/*
 * framemem/hooks.h: events for external profilers (Tracy, a memory tracker):
 * every allocation and free of every pool and arena, resets, growths and the
 * frame boundary, in the order they happened.
 *
 * Step by step:
 *
 *     // 0. Build framemem with the CMake option FM_HOOKS=ON: the library and
 *     //    every caller compiled against it (the CMake target and the .pc file
 *     //    pass -DFM_HOOKS) report their calls. Without it nothing changes
 *     //    and fm_set_hooks says so (FM_ERR_UNSUPPORTED).
 *
 *     // 1. One set of hooks for the process (docs/PROFILERS.md wires Tracy).
 *     static void on_alloc(const void *ptr, size_t size, const char *name, void *user) {
 *         TracyCAllocN(ptr, size, name);
 *     }
 *     fm_set_hooks(&(fm_hooks){.alloc = on_alloc, .free = on_free, .reset = on_reset});
 *
 *     // 2. Once per frame, after the frame's work. fm_telemetry_frame_end
 *     //    (framemem/telemetry.h) calls it as its last step: a program
 *     //    with a telemetry object does not call it again.
 *     fm_hooks_frame_end();
 *
 *     // 3. NULL removes them.
 *     fm_set_hooks(NULL);
 *
 * Events (any hook may be NULL; name is the object's name, the same pointer
 * for every event of one object while it lives, unique among live objects):
 * - alloc: an item or arena allocation was handed out: ptr, the size asked
 *   (a pool's item_size). Called after the memory was taken, before the call
 *   returns (MUTEX objects: before the lock is let go, so before any other
 *   thread's reset); fm_pool_alloc_n reports each item. An arena allocation
 *   of 0 bytes sends nothing (it takes no memory and shares its address with
 *   the next). Closure pools report their size-class pools ("name/32").
 * - free: a pool item is freed (fm_pool_free, _free_n, _delete, the last
 *   _release). Called before its slot can be handed out again, by any
 *   thread: the free of an item and the next alloc of its slot arrive in
 *   that order (under THREAD_CACHE and LOCKFREE too). A refused free (double,
 *   foreign, interior) sends nothing.
 * - reset: every item of the object is gone at once: fm_pool_reset (after
 *   its dtor, if any, ran on each live item; frees a dtor makes are sent as
 *   frees), fm_arena_reset, a frame arena's advance (its arena coming
 *   round), destroy of a pool or arena (live items included), and
 *   fm_arena_rewind. An arena keeps no list of its allocations, so a rewind
 *   is reported as a reset: a profiler drops the allocations below the mark
 *   as well (an arena's allocations are never freed one by one, so no event
 *   about them follows).
 * - grow: the object took bytes more from its backing memory (a pool's
 *   chunks, at create too; an arena's commit or block) in ns nanoseconds.
 * - frame_end: fm_hooks_frame_end was called (by fm_telemetry_frame_end too).
 *
 * Threads: hooks run on the thread that made the call, inside it, some with
 * the object's lock held: a hook must not call framemem on that object, and
 * should be quick (the call waits). fm_set_hooks may be called at any time
 * from any thread; each event goes to one set of hooks, whole (never one
 * set's function with another's user pointer), but events of calls running
 * on other threads meanwhile may still go to the previous set after
 * fm_set_hooks returns: keep the previous functions and their user data
 * valid until those threads have left framemem (for example for the life
 * of the program).
 *
 * Install hooks before creating the objects to profile: an object's items
 * allocated before would be freed with no alloc event before them (Tracy
 * stops at a free it has not seen allocated).
 *
 * Cost: with FM_HOOKS off (the default) none: the inline fast paths and the
 * library are as without this header. With it on, every pool, arena and
 * closure call takes the library path (no inline fast path, in any caller:
 * the library keeps the state those paths read empty, so a caller compiled
 * without FM_HOOKS is heard too), pool frees are located once more before
 * they free (to announce only real ones), fm_pool_free_n frees item by item,
 * each event is an indirect call, and a timed pool's times (pool.h) include
 * its hooks.
 */
#ifndef FRAMEMEM_HOOKS_H
#define FRAMEMEM_HOOKS_H

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fm_hooks {
    void (*alloc)(const void *ptr, size_t size, const char *name, void *user);
    void (*free)(const void *ptr, const char *name, void *user);
    void (*reset)(const char *name, void *user);
    void (*grow)(size_t bytes, uint64_t ns, const char *name, void *user);
    void (*frame_end)(void *user);
    void *user; /* passed to every hook */
} fm_hooks;

/// Installs hooks (copied; NULL or all-NULL functions: none). true on success;
/// false with FM_ERR_UNSUPPORTED when framemem was built without FM_HOOKS and
/// hooks has a function set (nothing installed).
FM_API bool fm_set_hooks(const fm_hooks *hooks);
/// Sends frame_end to the hooks: once per frame, at the frame boundary. A
/// no-op without hooks or without FM_HOOKS.
FM_API void fm_hooks_frame_end(void);

#ifdef __cplusplus
}
#endif

#endif /* FRAMEMEM_HOOKS_H */
