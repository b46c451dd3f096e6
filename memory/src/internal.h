/* Internals shared by framemem's modules; never installed.
 *
 * Names (docs/CONTRIBUTING.md, "Style"): fm__ for internal functions, types
 * and variables, FM__ for macros (fm__def excepted). A name used beyond its
 * own module carries the module's name (fm__pool_alloc_slow, fm__arena_busy,
 * fm__closure_take, fm__os_reserve, fm__mutex_lock); helpers within one
 * module need not. */
#ifndef FRAMEMEM_INTERNAL_H
#define FRAMEMEM_INTERNAL_H

#include "framemem/base.h"
#include "framemem/detail/atomic.h"

#include <stdarg.h>

#if defined(__GNUC__) || defined(__clang__)
#define FM__LIKELY(x) __builtin_expect(!!(x), 1)
#define FM__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FM__NOINLINE __attribute__((noinline))
#define FM__ALWAYS_INLINE __attribute__((always_inline))
#define FM__COLD __attribute__((cold, noinline))
#define FM__PRINTF(f, a) FM__PRINTF_LIKE(f, a)
#else
#define FM__LIKELY(x) (x)
#define FM__UNLIKELY(x) (x)
#define FM__NOINLINE
#define FM__ALWAYS_INLINE
#define FM__COLD
#define FM__PRINTF(f, a)
#endif

/* Zero means "default" in every desc: resolve it in one place. */
#define fm__def(v, def) ((v) ? (v) : (def))

/* ------------------------------------------------------------- reporting */

/* Sets the thread's last error, formats the message and calls the handler. */
void fm__report(fm_error err, const char *fmt, ...) FM__PRINTF(2, 3);

/* NULL object arguments (base.h): FM_ERR_INVALID_ARG naming the function
 * and what was NULL ("fm_pool_free: the pool is NULL"), then the caller
 * returns its failure value: FM__REFUSE_NULL(pool, "pool", NULL), or with
 * nothing after the last comma in a function returning void. */
FM__COLD void fm__report_null(const char *fn, const char *what);
#define FM__REFUSE_NULL(obj, what, ...)                                         \
    do {                                                                        \
        if (FM__UNLIKELY(!(obj))) {                                             \
            fm__report_null(__func__, (what));                                  \
            return __VA_ARGS__;                                                 \
        }                                                                       \
    } while (0)

/* Desc checks (fm_pool_desc_check, fm_arena_desc_check, ...) end here: why
 * (NULL: none) goes to msg (may be NULL) and FM_ERR_INVALID_ARG comes back
 * when there is one. null_call set means the desc was NULL: reported as
 * every NULL object is (fm__report_null). Nothing else is reported. */
fm_error fm__desc_verdict(const char *null_call, const char *why, char *msg, size_t msg_len);
/* A create's use of its check: reports "<kind> '<name>': <why>" unless check
 * is FM_OK; true when it is. */
bool fm__desc_accepted(fm_error check, const char *kind, const char *name, const char *why);

/* ---------------------------------------------------------- descs */

/* Why an object offering NONE, MUTEX and (lockfree) LOCKFREE refuses sync,
 * or NULL; pool_policies: every pool policy is fine. */
const char *fm__sync_problem(fm_sync sync, bool pool_policies, bool lockfree);

/* ------------------------------------------------------- backing memory */

/* Bookkeeping memory (pool structs, tables) comes from the desc's allocator
 * through fm_allocator_alloc / fm_allocator_free (base.h). */
/* A zeroed object of `size` bytes from a, ending in a flexible char array at
 * name_offset that gets a copy of name; *self_bytes is what to free later.
 * NULL, reported as FM_ERR_OUT_OF_MEMORY naming kind and name. */
void *fm__object_new(const fm_allocator *a, size_t size, size_t align, size_t name_offset,
                     const char *kind, const char *name, size_t *self_bytes);
#define FM__OBJECT_NEW(T, a, kind, name, self_bytes)                                 \
    ((T *)fm__object_new((a), sizeof(T), alignof(T), offsetof(T, name), (kind), (name), \
                         (self_bytes)))

static inline bool fm__allocator_is_system(const fm_allocator *a) {
    return a->alloc == NULL;
}

/* Grows *arr (of elem bytes each, from a) to hold at least need elements:
 * capacity doubles from 8, the contents are copied. false, with *arr
 * unchanged, when a refuses or the count would pass UINT32_MAX. */
bool fm__grow_array(const fm_allocator *a, void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* ------------------------------------------------------------ closures */

struct fm_closure;
/* Takes a reference to c for an event or a defer queue; false (reported)
 * when none could be taken: NULL, not a live closure, count at its maximum. */
bool fm__closure_take(struct fm_closure *c);

/* Virtual memory comes from the OS through platform/os.h. */

/* -------------------------------------------------------- sanitizers */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FM__ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FM__ASAN 1
#endif

#ifdef FM__ASAN
#include <sanitizer/asan_interface.h>
#define FM__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define FM__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FM__POISON(p, n) ((void)(p), (void)(n))
#define FM__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#ifdef FM_USE_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define FM__VG_CREATE_POOL(pool) VALGRIND_CREATE_MEMPOOL((pool), 0, 0)
#define FM__VG_DESTROY_POOL(pool) VALGRIND_DESTROY_MEMPOOL(pool)
#define FM__VG_ALLOC(pool, p, n) VALGRIND_MEMPOOL_ALLOC((pool), (p), (n))
#define FM__VG_FREE(pool, p) VALGRIND_MEMPOOL_FREE((pool), (p))
#define FM__VG_NOACCESS(p, n) VALGRIND_MAKE_MEM_NOACCESS((p), (n))
#define FM__VG_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#define FM__VG_UNDEFINED(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define FM__VG_TRIM(pool, p, n) VALGRIND_MEMPOOL_TRIM((pool), (p), (n))
#define FM__VG_QUIET_BEGIN() VALGRIND_DISABLE_ERROR_REPORTING
#define FM__VG_QUIET_END() VALGRIND_ENABLE_ERROR_REPORTING
#else
#define FM__VG_CREATE_POOL(pool) ((void)(pool))
#define FM__VG_DESTROY_POOL(pool) ((void)(pool))
#define FM__VG_ALLOC(pool, p, n) ((void)(pool), (void)(p), (void)(n))
#define FM__VG_FREE(pool, p) ((void)(pool), (void)(p))
#define FM__VG_NOACCESS(p, n) ((void)(p), (void)(n))
#define FM__VG_DEFINED(p, n) ((void)(p), (void)(n))
#define FM__VG_UNDEFINED(p, n) ((void)(p), (void)(n))
#define FM__VG_TRIM(pool, p, n) ((void)(pool), (void)(p), (void)(n))
#define FM__VG_QUIET_BEGIN() ((void)0)
#define FM__VG_QUIET_END() ((void)0)
#endif

/* true when every pool and arena call must reach the library: its build
 * annotates memory for Valgrind and the process runs under it. Objects then
 * keep the state the inline fast paths read empty (a pool's current chunk,
 * an arena's inline limit), so a caller built with NDEBUG, whose inline
 * paths carry no annotations, calls in for every alloc and free instead of
 * handing out memory Valgrind was told is free. Outside Valgrind the
 * annotations do nothing and the inline paths stay on. */
bool fm__calls_annotated(void);

/* ---------------------------------------------------------- arenas */

/* The library's own arena allocations (fm_arena_alloc, fm_frame_alloc) bump
 * inline too (detail/arena.h), except where every allocation must reach
 * fm__arena_alloc_slow for its sanitizer and Valgrind annotations. */
#if defined(FM__GNU) && !defined(FM__ASAN) && !defined(FM_USE_VALGRIND)
#define FM__ARENA_ALLOC fm__arena_alloc_inline
#else
#define FM__ARENA_ALLOC fm__arena_alloc_slow
#endif

/* ------------------------------------------------------- profiler hooks */

/* Events for framemem/hooks.h, sent by the objects where their calls take,
 * release or reset memory (hooks.c). FM_HOOKS builds only: elsewhere
 * FM__HOOKS is 0 and these do nothing, so the code around them compiles as
 * without them. name is the object's own (stable while it lives). */
#ifdef FM_HOOKS
#define FM__HOOKS 1
void fm__hook_alloc(const char *name, const void *ptr, size_t size);
void fm__hook_free(const char *name, const void *ptr);
void fm__hook_reset(const char *name);
/* A growth of bytes that began at start (fm__hook_clock). */
void fm__hook_grow(const char *name, size_t bytes, uint64_t start);
uint64_t fm__hook_clock(void);
#else
#define FM__HOOKS 0
static inline void fm__hook_alloc(const char *name, const void *ptr, size_t size) {
    (void)name, (void)ptr, (void)size;
}
static inline void fm__hook_free(const char *name, const void *ptr) { (void)name, (void)ptr; }
static inline void fm__hook_reset(const char *name) { (void)name; }
static inline void fm__hook_grow(const char *name, size_t bytes, uint64_t start) {
    (void)name, (void)bytes, (void)start;
}
static inline uint64_t fm__hook_clock(void) { return 0; }
#endif

/* ------------------------------------------------------------ test hooks */

/* Limits too large for a test to reach, lowered for one object (tests only;
 * the library never calls these). An event's slots retire after
 * 2^gen_bits / 2 subscriptions each (2..32; default 32) and at most
 * slots_max slots ever exist (0: unchanged). A pool holds at most max_chunks
 * chunks (lowered only: the encodable limit, pool.h, stays the ceiling). A
 * pool renumbers its generations after `budget` more resets (lowered only;
 * pool/reset.c). */
struct fm_event;
struct fm_pool;
void fm__event_set_limits(struct fm_event *ev, uint32_t gen_bits, uint32_t slots_max);
void fm__pool_set_max_chunks(struct fm_pool *pool, uint32_t max_chunks);
void fm__pool_set_gen_budget(struct fm_pool *pool, uint32_t budget);
/* The size of a pool's next growth window, in chunks (pool/chunks.c): the
 * untouched rest of its window goes back, and the next growth maps one of
 * this size just below the lowest chunk taken. A pool with no window, and
 * chunks 0, change nothing (whether a pool has windows is fixed at
 * create). */
void fm__pool_set_window_chunks(struct fm_pool *pool, uint32_t chunks);

/* Debug fill bytes (docs/CONTRIBUTING.md, "Debug aids"): freed pool slots. */
#define FM__FILL_FREED 0xDF

#endif /* FRAMEMEM_INTERNAL_H */
