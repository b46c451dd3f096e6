/*
 * framemem/closure.h: callbacks without allocation — pooled closures,
 * multicast events and deferred calls (a C DelegatePool).
 *
 * Step by step:
 *
 *     // 1. A closure is a function and a copy of what it captured.
 *     fm_closure_pool *closures = fm_closure_pool_create(&(fm_closure_pool_desc){0});
 *     fm_closure *c = FM_CLOSURE(closures, on_hit, struct hit, .target = e, .damage = 3);
 *
 *     // 2. An event calls every subscriber; the handle unsubscribes.
 *     fm_event *hit_event = fm_event_create(&(fm_event_desc){0});
 *     fm_handle sub = fm_event_subscribe(hit_event, c);  // the event holds a reference
 *     fm_closure_release(c);
 *     fm_event_emit(hit_event, &contact);                // on_hit(&capture, &contact)
 *
 *     // 3. A defer queue runs closures frames later.
 *     fm_defer_queue *later = fm_defer_queue_create(&(fm_defer_queue_desc){0});
 *     fm_closure *respawn = FM_CLOSURE(closures, on_respawn, struct spawn, .at = pos);
 *     fm_defer(later, respawn, 30);                      // the queue holds a reference
 *     fm_closure_release(respawn);
 *     fm_defer_run(later);                               // once per frame
 *
 * A closure is a function pointer plus captured bytes copied into pooled
 * memory. Closure pools keep one fm_pool per size class (16, 32, 64, ... up
 * to max_capture); a capture above max_capture is refused, never malloc'd.
 * Pooled closures are reference counted (they start at 1); frame closures
 * live in a frame arena until it releases them, and retain/release are
 * no-ops on them.
 *
 * Events call their subscribers in subscription order. During an emit,
 * subscribing, unsubscribing (self or others) and releasing closures are
 * safe: a removal takes effect at once, an addition from the next emit.
 * Defer queues run closures a number of frames later, in the order deferred.
 *
 * After warm-up none of these calls the backing allocator: pools and arrays
 * keep their memory.
 *
 * Threads (each desc's sync; FM_SYNC_NONE, the default, is one thread at a
 * time with no atomics and no locks):
 * - Closure pools take any pool policy (MUTEX, THREAD_CACHE, LOCKFREE): their
 *   class pools use it and reference counts become atomic, so closures are
 *   made, called, retained and released on any thread, the last release
 *   returning the slot to its own pool. Frame closures follow their frame
 *   arena's rules.
 * - Events take NONE or MUTEX. Under MUTEX subscribe, unsubscribe, emit and
 *   count are safe from any thread at once; the lock is not held while a
 *   subscriber runs, so callbacks may subscribe, unsubscribe or emit. An emit
 *   calls those subscribed when it started and still subscribed when it
 *   reaches them; an unsubscribe from another thread may overlap that
 *   subscriber's call already under way (its closure stays alive until every
 *   emit has ended). Emits on several threads run subscribers concurrently.
 * - Defer queues take NONE, MUTEX or LOCKFREE. Under either, fm_defer is safe
 *   from any thread, also during a run (LOCKFREE: a lock-free push into a
 *   bounded inbox of initial_capacity entries; a push that finds it full
 *   takes the lock). One fm_defer_run at a time; a defer racing a run counts
 *   its delay from the frame before or after that run.
 * - Closures shared by threads should come from a closure pool with a
 *   matching policy: events and queues release their references on whatever
 *   thread removes or runs them.
 * Other values are rejected with FM_ERR_INVALID_ARG naming the object.
 *
 * NULL (base.h): every function reports a NULL closure pool, frame arena,
 * closure, event or defer queue (FM_ERR_INVALID_ARG) and returns its failure
 * value; destroy(NULL) does nothing. The inline make, alloc, make_frame,
 * alloc_frame, call and capture of optimised builds (detail/closure.h) take
 * a non-NULL owner or closure as a precondition (retain and release test it
 * anyway).
 */
#ifndef FRAMEMEM_CLOSURE_H
#define FRAMEMEM_CLOSURE_H

#include "framemem/arena.h"
#include "framemem/base.h"
#include "framemem/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*fm_closure_fn)(void *capture, void *arg);
typedef struct fm_closure fm_closure;
typedef struct fm_closure_pool fm_closure_pool;

typedef struct fm_closure_pool_desc {
    const char *name;          /* 0 = "closures" */
    size_t max_capture;        /* 0 = 256; at most 65536 */
    uint32_t initial_capacity; /* per size class; 0 = one chunk each */
    fm_sync sync;              /* any pool policy: see Threads above */
    fm_allocator allocator;
    fm_tag *tag;               /* memory tag of its class pools (tag.h); NULL: none */
} fm_closure_pool_desc;

#define FM_CLOSURE_MAX_CLASSES 13

typedef struct fm_closure_pool_stats {
    const char *name;
    uint32_t classes;
    /* live and total_made are the class pools' counts: under a shared
     * policy, exact once the threads are quiet (see pool.h) */
    uint64_t live;        /* closures made and not yet released */
    uint64_t total_made;
    uint64_t refused;     /* makes that returned NULL */
    uint64_t capacity;    /* closures the class pools hold without growing */
    uint64_t grow_events; /* class pools' growths inside a make (alloc_grow_events) */
    uint64_t grow_ns;     /* their nanoseconds */
    size_t class_capture[FM_CLOSURE_MAX_CLASSES]; /* capture bytes of each class */
    uint64_t class_live[FM_CLOSURE_MAX_CLASSES];
} fm_closure_pool_stats;

/// NULL with FM_ERR_INVALID_ARG (max_capture, unknown sync, half an
/// allocator; a class pool's refusal) / FM_ERR_OUT_OF_MEMORY.
FM_API fm_closure_pool *fm_closure_pool_create(const fm_closure_pool_desc *desc);
/// Destroys the pools; live closures are reported (FM_ERR_LEAK) and dropped.
FM_API void fm_closure_pool_destroy(fm_closure_pool *cp);
FM_API void fm_closure_pool_get_stats(const fm_closure_pool *cp, fm_closure_pool_stats *out);

/// A closure calling fn with a copy of capture_size bytes at capture (capture
/// may be NULL when capture_size is 0). Count 1. NULL with
/// FM_ERR_INVALID_ARG (fn NULL, capture above max_capture) or the size
/// class pool's error (full, out of memory).
FM_API fm_closure *fm_closure_make(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                                   size_t capture_size);
/// The same in a frame arena: valid until the arena releases the frame.
FM_API fm_closure *fm_closure_make_frame(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                         size_t capture_size);
/// fm_closure_make / fm_closure_make_frame that leave the capture for the
/// caller to write in place (fm_closure_capture), or copy it when capture is
/// not NULL: a capture built straight into the closure skips the copy.
FM_API fm_closure *fm_closure_alloc(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                                    size_t capture_size);
FM_API fm_closure *fm_closure_alloc_frame(fm_frame_arena *fa, fm_closure_fn fn, const void *capture,
                                          size_t capture_size);
/// Calls the closure: fn(capture, arg).
FM_API void fm_closure_call(const fm_closure *c, void *arg);
/// The closure's copy of the captured bytes (16-byte aligned).
FM_API void *fm_closure_capture(fm_closure *c);
FM_API size_t fm_closure_capture_size(const fm_closure *c);
/// Reference counting of pooled closures; no-ops on frame closures.
/// A release of a dead closure is reported (FM_ERR_REFCOUNT) and ignored.
FM_API void fm_closure_retain(fm_closure *c);
/// true when this release freed the closure.
FM_API bool fm_closure_release(fm_closure *c);

/// FM_CLOSURE(pool, fn, struct hit, .target = e, .damage = 3): captures a
/// struct literal by value (built in place where the compiler allows);
/// FM_CLOSURE_FRAME(frame_arena, fn, T, ...) the same in a frame arena. At
/// least one field; in C++ as FM_DESC (base.h) takes them, and T must be
/// trivially copyable (the capture is copied as bytes).
#ifdef __cplusplus
#define FM__CLOSURE_CPP(make, owner, fn, T, ...)                                                  \
    ([&]() -> fm_closure * {                                                                      \
        static_assert(__is_trivially_copyable(T), "a closure copies its capture's bytes"); \
        T fm__v{};                                                                                \
        FM__SET(fm__v, __VA_ARGS__)                                                               \
        return make((owner), (fn), &fm__v, sizeof(T));                                            \
    }())
#define FM_CLOSURE(cp, fn, T, ...) FM__CLOSURE_CPP(fm_closure_make, cp, fn, T, __VA_ARGS__)
#define FM_CLOSURE_FRAME(fa, fn, T, ...)                                                          \
    FM__CLOSURE_CPP(fm_closure_make_frame, fa, fn, T, __VA_ARGS__)
#elif defined(FM__GNU)
#define FM__CLOSURE_IN_PLACE(make, owner, fn, T, ...)                            \
    __extension__({                                                             \
        fm_closure *fm__c = make((owner), (fn), NULL, sizeof(T));               \
        if (fm__c) *(T *)fm_closure_capture(fm__c) = (T){__VA_ARGS__};          \
        fm__c;                                                                  \
    })
#define FM_CLOSURE(cp, fn, T, ...) FM__CLOSURE_IN_PLACE(fm_closure_alloc, cp, fn, T, __VA_ARGS__)
#define FM_CLOSURE_FRAME(fa, fn, T, ...)                                        \
    FM__CLOSURE_IN_PLACE(fm_closure_alloc_frame, fa, fn, T, __VA_ARGS__)
#else
#define FM_CLOSURE(cp, fn, T, ...) fm_closure_make((cp), (fn), &(T){__VA_ARGS__}, sizeof(T))
#define FM_CLOSURE_FRAME(fa, fn, T, ...)                                        \
    fm_closure_make_frame((fa), (fn), &(T){__VA_ARGS__}, sizeof(T))
#endif

/* ---------------------------------------------------------------- events */

typedef struct fm_event fm_event;

typedef struct fm_event_desc {
    const char *name;          /* 0 = "event" */
    uint32_t initial_capacity; /* subscribers; 0 = 8 */
    fm_sync sync;              /* NONE or MUTEX: see Threads above */
    fm_allocator allocator;
} fm_event_desc;

FM_API fm_event *fm_event_create(const fm_event_desc *desc);
/// Releases every subscriber's closure. Not during an emit (reported,
/// FM_ERR_INVALID_ARG, nothing destroyed).
FM_API void fm_event_destroy(fm_event *ev);
/// Subscribes c (the event retains it); the handle unsubscribes. Null handle
/// with FM_ERR_INVALID_ARG (NULL closure), FM_ERR_OUT_OF_MEMORY or
/// FM_ERR_POOL_FULL (every subscription slot in use or retired, see below;
/// no reference taken).
FM_API fm_handle fm_event_subscribe(fm_event *ev, fm_closure *c);
/// false + FM_ERR_STALE_HANDLE for an unknown or already removed
/// subscription. Releases the event's reference (during an emit, when the
/// outermost emit of this event ends: the closure may be the one running).
/// A handle never matches a later subscription: each subscription slot
/// counts its uses in a 32-bit generation, and a slot whose generation is
/// spent (2^31 subscriptions) is retired for good instead of wrapping; new
/// subscriptions then take new slots, and once 2^32 - 2 slots are in use or
/// retired subscribe reports FM_ERR_POOL_FULL.
FM_API bool fm_event_unsubscribe(fm_event *ev, fm_handle sub);
/// Calls every subscriber with arg, in subscription order.
FM_API void fm_event_emit(fm_event *ev, void *arg);
FM_API uint32_t fm_event_count(const fm_event *ev);

/* --------------------------------------------------------- deferred calls */

typedef struct fm_defer_queue fm_defer_queue;

typedef struct fm_defer_queue_desc {
    const char *name;          /* 0 = "defer" */
    uint32_t initial_capacity; /* 0 = 64 (LOCKFREE: also the inbox size) */
    fm_sync sync;              /* NONE, MUTEX or LOCKFREE: see Threads above */
    fm_allocator allocator;
} fm_defer_queue_desc;

FM_API fm_defer_queue *fm_defer_queue_create(const fm_defer_queue_desc *desc);
/// Releases the closures still waiting (they are not called).
FM_API void fm_defer_queue_destroy(fm_defer_queue *q);
/// Runs c (with arg NULL) after delay_frames more frames: delay 0 runs at the
/// next fm_defer_run. The queue retains c. false with FM_ERR_INVALID_ARG (c
/// NULL), FM_ERR_REFCOUNT (c released already) or FM_ERR_OUT_OF_MEMORY.
FM_API bool fm_defer(fm_defer_queue *q, fm_closure *c, uint32_t delay_frames);
/// Advances one frame and runs what is due, in the order deferred; closures
/// deferred while it runs wait for a later run. Returns how many ran. From
/// inside its own run (or beside another run): FM_ERR_INVALID_ARG, 0,
/// nothing runs.
FM_API uint32_t fm_defer_run(fm_defer_queue *q);
/// Closures waiting.
FM_API uint32_t fm_defer_pending(const fm_defer_queue *q);

#ifdef __cplusplus
}
/* C++: descs by reference (C++ has no compound literal to take the address
 * of); C++ linkage also when a caller includes this header inside extern "C". */
extern "C++" {
inline fm_closure_pool *fm_closure_pool_create(const fm_closure_pool_desc &desc) {
    return fm_closure_pool_create(&desc);
}
inline fm_event *fm_event_create(const fm_event_desc &desc) { return fm_event_create(&desc); }
inline fm_defer_queue *fm_defer_queue_create(const fm_defer_queue_desc &desc) {
    return fm_defer_queue_create(&desc);
}
}
#endif

#include "framemem/detail/closure.h"

#endif /* FRAMEMEM_CLOSURE_H */
