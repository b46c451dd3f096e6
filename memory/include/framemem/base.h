/*
 * framemem/base.h: what every framemem object shares.
 *
 * Step by step:
 *
 *     // 1. Reports go to one handler (the default prints to stderr).
 *     static void on_error(fm_error err, const char *message, void *user) {
 *         fprintf(user, "%s: %s\n", fm_error_name(err), message);
 *     }
 *     fm_set_error_handler(on_error, log_file);
 *
 *     // 2. A failing call returns NULL, false or 0 and sets the thread's
 *     //    last error, which successes leave alone.
 *     if (!fm_pool_alloc(pool) && fm_last_error() == FM_ERR_POOL_FULL) ...
 *
 *     // 3. Every desc takes a backing allocator; zero is the system's.
 *     fm_allocator heap = {.alloc = heap_alloc, .free = heap_free, .user = &my_heap};
 *
 * - Errors: every failing call returns its failure value (NULL, false, 0),
 *   sets the calling thread's last error and passes a message naming the
 *   object and the problem to the error handler. Successful calls leave the
 *   last error alone. The handler is process-wide (the only global state
 *   besides the per-thread last error); the default writes to stderr.
 * - Backing allocator: every byte a framemem object takes from the system goes
 *   through an fm_allocator; the zero value means the system allocator.
 * - Policies shared by pools, arenas and closures: sync and growth.
 *
 * - Warnings (FM_WARN_* codes) report something worth knowing about a call
 *   that succeeded (a tag's soft limit passed, tag.h; allocation sites that
 *   cannot be recorded, pool.h). They go to the error handler like errors,
 *   but the call does not fail and the thread's last error and message stay
 *   as they were: fm_last_error() only ever names a failed call.
 *
 * - NULL objects: every function that takes a framemem object (a pool,
 *   arena, frame arena, closure pool, closure, event, defer queue or
 *   allocator) reports a NULL one as FM_ERR_INVALID_ARG, naming the
 *   function, and returns its failure value; destroy functions take NULL as
 *   a no-op, like free. The one exception is the inline fast paths of
 *   optimised builds (pool.h: alloc, free, resolve; arena.h: arena and frame
 *   alloc; closure.h: make, alloc, call, capture): there a non-NULL object
 *   is a precondition, as for memcpy. Debug and sanitizer builds, and the
 *   functions themselves when called as (fm_pool_alloc)(pool), check it.
 *
 * Thread safety: fm_last_error/fm_clear_error are per thread;
 * fm_set_error_handler may be called from any thread (it swaps atomically).
 */
#ifndef FRAMEMEM_BASE_H
#define FRAMEMEM_BASE_H

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#include <stdalign.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------- linkage, C and C++ */

/* FM_API marks every function the library exports (FM_FILE_API, file.h, those
 * of framemem_file). The library compiles with hidden visibility and gives
 * these, and only these, default visibility. A shared build (CMake FM_SHARED)
 * defines FM_DLL for its callers (the CMake target and the .pc file carry it):
 * on Windows the functions are then __declspec(dllexport) in the library's
 * build and __declspec(dllimport) in its callers'. Static builds need
 * nothing. */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(FM_DLL)
#define FM__EXPORT __declspec(dllexport)
#define FM__IMPORT __declspec(dllimport)
#else
#define FM__EXPORT
#define FM__IMPORT
#endif
#elif defined(__GNUC__)
#define FM__EXPORT __attribute__((visibility("default")))
#define FM__IMPORT
#else
#define FM__EXPORT
#define FM__IMPORT
#endif
#if defined(FM__BUILDING_LIBRARY)
#define FM_API FM__EXPORT
#else
#define FM_API FM__IMPORT
#endif

/* The headers are C99 and C++11 (and later) as well as C11. Where C++ has
 * no spelling of a C construct, these give both (as Box2D's B2_LITERAL and
 * B2_ZERO_INIT do):
 * - FM_LITERAL(T){...}: a compound literal in C, T{...} in C++.
 * - FM_ZERO_INIT: an all-zero initializer, {0} in C, {} in C++:
 *   `fm_event_desc d = FM_ZERO_INIT;`.
 * - FM_DESC(T, .field = value, ...): a T with those fields set and the rest
 *   zero: a compound literal in C; in C++ (no designated initializers before
 *   C++20, and those in declaration order only) a T value-initialised, then
 *   each field assigned, in any order. At least one field; in C++ every
 *   argument is `.field = value` (nested: `.arena.sync = ...`), and a value
 *   with a comma outside parentheses, a braced list, takes parentheses:
 *   `.allocator = (fm_allocator{a, f, u})`. In C++, inside functions only.
 *   C passes `&FM_DESC(...)` to a create function; C++ passes FM_DESC(...)
 *   itself (every function taking a desc has a reference overload in C++).
 * - FM_ALIGNOF(T): alignof in C11 and C++, the compiler's spelling in C99. */
#ifdef __cplusplus
#define FM_LITERAL(T) T
#define FM_ZERO_INIT {}
#define FM_DESC(T, ...) ([&]() -> T { T fm__d{}; FM__SET(fm__d, __VA_ARGS__) return fm__d; }())
#define FM_ALIGNOF(T) alignof(T)
#else
#define FM_LITERAL(T) (T)
#define FM_ZERO_INIT {0}
#define FM_DESC(T, ...) ((T){__VA_ARGS__})
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define FM_ALIGNOF(T) _Alignof(T)
#elif defined(__GNUC__)
#define FM_ALIGNOF(T) (__extension__ _Alignof(T))
#elif defined(_MSC_VER)
#define FM_ALIGNOF(T) __alignof(T)
#else
#define FM_ALIGNOF(T) offsetof(struct { char c; T t; }, t)
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/* X(name, message): one list for the enum, fm_error_str and the tests. */
#define FM_ERROR_LIST(X)                                                      \
    X(FM_OK, "no error")                                                      \
    X(FM_ERR_INVALID_ARG, "invalid argument")                                 \
    X(FM_ERR_OUT_OF_MEMORY, "backing allocator out of memory")                \
    X(FM_ERR_POOL_FULL, "pool is at its capacity limit")                      \
    X(FM_ERR_DOUBLE_FREE, "item freed twice")                                 \
    X(FM_ERR_FOREIGN_POINTER, "pointer not owned by this object")             \
    X(FM_ERR_INTERIOR_POINTER, "pointer inside an item, not at its start")    \
    X(FM_ERR_STALE_HANDLE, "handle refers to a freed or reused slot")         \
    X(FM_ERR_ARENA_FULL, "arena reservation exhausted")                       \
    X(FM_ERR_BAD_MARK, "mark does not belong to this arena's live range")     \
    X(FM_ERR_REFCOUNT, "reference count used on a dead item")                 \
    X(FM_ERR_UNSUPPORTED, "feature not supported by this build or platform")  \
    X(FM_ERR_LEAK, "object destroyed with live items")                        \
    X(FM_ERR_CORRUPT, "internal invariants violated (memory corruption?)")     \
    X(FM_ERR_WRONG_THREAD, "single-threaded object used from a thread that does not own it") \
    X(FM_ERR_BUDGET, "growth would pass a memory tag's hard limit")                \
    X(FM_WARN_BUDGET, "warning: a memory tag's committed bytes passed its soft limit") \
    X(FM_WARN_NO_SITES, "warning: allocation sites cannot be recorded for this caller")

typedef enum fm_error {
#define FM__ERROR_ENUM(name, msg) name,
    FM_ERROR_LIST(FM__ERROR_ENUM)
#undef FM__ERROR_ENUM
    FM_ERROR_COUNT
} fm_error;

typedef void (*fm_error_fn)(fm_error err, const char *message, void *user);

/// Name of the code ("FM_ERR_DOUBLE_FREE"); "FM_ERR_?" for values out of range.
FM_API const char *fm_error_name(fm_error err);
/// Short English description of the code; static storage, never NULL.
FM_API const char *fm_error_str(fm_error err);
/// The calling thread's last error: set by every failing call, left alone by successes.
FM_API fm_error fm_last_error(void);
/// Resets the calling thread's last error to FM_OK.
FM_API void fm_clear_error(void);
/// The message of the calling thread's last error ("" when none); valid until
/// the thread's next failing call.
FM_API const char *fm_last_error_message(void);
/// Installs the process-wide error handler; NULL restores the default (stderr).
/// The message passed to fn lives only for the duration of the call. fn also
/// receives warnings (FM_WARN_*), which leave the last error alone.
FM_API void fm_set_error_handler(fm_error_fn fn, void *user);
/* printf-style checking of framemem's formatting functions. MinGW: the
 * library formats with mingw-w64's C99 printf (__USE_MINGW_ANSI_STDIO), so
 * formats are checked as GNU's (%zu, %llu), not as msvcrt's. */
#if defined(__MINGW32__) && defined(__GNUC__) && !defined(__clang__)
#define FM__PRINTF_LIKE(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__)
#define FM__PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define FM__PRINTF_LIKE(f, a)
#endif

/// Reports err as framemem's own failing calls do: sets the calling thread's
/// last error and message (printf-style) and calls the error handler. For
/// layers built on framemem (the engine) whose errors belong in the same place.
/// A warning code (FM_WARN_*) goes to the handler only, as framemem's own do.
FM_API void fm_report_error(fm_error err, const char *fmt, ...) FM__PRINTF_LIKE(2, 3);

/// true for the warning codes (FM_WARN_*): reports of calls that succeeded.
FM_API bool fm_error_is_warning(fm_error err);

/* A memory tag (tag.h): the descs of pools, arenas, frame arenas and closure
 * pools name the one their memory is counted under. */
typedef struct fm_tag fm_tag;

/* -------------------------------------------------------- backing allocator */

/* alloc returns size bytes aligned to align (a power of two, possibly large:
 * pools ask for chunks aligned to their own size) or NULL. free receives the
 * size that was asked for. Zero-initialise to get the system allocator. */
typedef struct fm_allocator {
    void *(*alloc)(size_t size, size_t align, void *user);
    void (*free)(void *ptr, size_t size, void *user);
    void *user;
} fm_allocator;

/// true for the zero allocator (the system's) and for one that sets both
/// alloc and free; descs with only one of them are refused. a NULL: false,
/// FM_ERR_INVALID_ARG.
FM_API bool fm_allocator_valid(const fm_allocator *a);
/// size bytes aligned to align (a power of two; at least pointer alignment
/// is used) from a, or from the C heap when a is zero; NULL when refused.
/// A refusal is not reported (callers say what they were making); a NULL a
/// is (FM_ERR_INVALID_ARG).
FM_API void *fm_allocator_alloc(const fm_allocator *a, size_t size, size_t align);
/// Gives back ptr, size bytes from fm_allocator_alloc with the same a. ptr
/// NULL: no-op. a NULL: FM_ERR_INVALID_ARG, nothing freed.
FM_API void fm_allocator_free(const fm_allocator *a, void *ptr, size_t size);

/* --------------------------------------------------------------- policies */

typedef enum fm_sync {
    FM_SYNC_NONE = 0,      /* one thread at a time; nothing atomic on the fast path */
    FM_SYNC_MUTEX,         /* one lock around the object */
    FM_SYNC_THREAD_CACHE,  /* per-thread magazines with a shared depot */
    FM_SYNC_LOCKFREE,      /* ABA-safe lock-free free list */
    FM_SYNC_COUNT
} fm_sync;

typedef enum fm_growth {
    FM_GROWTH_GEOMETRIC = 0, /* capacity *= grow_factor (default 2.0) */
    FM_GROWTH_LINEAR,        /* capacity += grow_step (default: one chunk) */
    FM_GROWTH_FIXED,         /* never grows after create */
    FM_GROWTH_COUNT
} fm_growth;

FM_API const char *fm_sync_name(fm_sync sync);
FM_API const char *fm_growth_name(fm_growth growth);

/* -------------------------------------------------------- alignment helpers */

#define FM_MAX_ALIGN 4096u
/* What align 0 means (arenas, pools): 16 with every compiler and in C99,
 * so that it does not depend on the caller's max_align_t (8 for MSVC and
 * clang on i686, 16 for gcc there); at least alignof(max_align_t) on every
 * target framemem builds for (the library checks it). */
#define FM_DEFAULT_ALIGN ((size_t)16)
#define FM_IS_POW2(x) ((x) != 0 && (((x) & ((x)-1)) == 0))

/// v rounded up to a multiple of align (a power of two).
static inline size_t fm_align_up(size_t v, size_t align);
/// true when p is a multiple of align (a power of two).
static inline bool fm_is_aligned(const void *p, size_t align);

#ifdef __cplusplus
}
#endif

#include "framemem/detail/base.h"

#endif /* FRAMEMEM_BASE_H */
