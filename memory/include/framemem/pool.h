/*
 * framemem/pool.h: fixed-size object pools that grow without hitches.
 *
 * Step by step:
 *
 *     // 1. A pool per kind of object; zero fields take the defaults.
 *     fm_pool *bullets = fm_pool_create(&FM_POOL_DESC(bullet, .initial_capacity = 4096));
 *
 *     // 2. Items in O(1); NULL (and a report) when the pool cannot grow.
 *     bullet *b = fm_pool_alloc(bullets);
 *
 *     // 3. A handle is a weak reference: NULL once the item is freed.
 *     fm_handle h = fm_pool_handle(bullets, b);
 *     fm_pool_free(bullets, b);               // fm_pool_resolve(bullets, h): NULL
 *     fm_pool_destroy(bullets);               // reports leaks, returns every byte
 *
 * A pool is a set of equal power-of-two chunks, each aligned to its size:
 * alloc, free, owns and resolve are O(1) whatever the capacity, free tells
 * double frees, foreign and interior pointers without searching, and growing
 * touches no new slot; growth is O(1). Per-slot metadata lives beside slots.
 *
 * Threads (desc.sync), Timing (time inside alloc and free), Memory (chunks,
 * a pool's fixed cost), Reset, Owners (fm_pool_of's map), Allocation sites,
 * NULL, Limit: sections of docs/POOLS.md (share/doc/framemem/POOLS.md).
 */
#ifndef FRAMEMEM_POOL_H
#define FRAMEMEM_POOL_H

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fm_pool fm_pool;
typedef void (*fm_item_fn)(void *item, void *user);

/* A weak reference to a pool item (zero: null): NULL for good once the item
 * is freed, its chunk trimmed or its pool destroyed; in another pool NULL but
 * with probability 2^-31. */
typedef struct fm_handle {
    uint64_t bits;
} fm_handle;

#define FM_HANDLE_NULL (FM_LITERAL(fm_handle) FM_ZERO_INIT)
static inline bool fm_handle_is_null(fm_handle h);
static inline bool fm_handle_equal(fm_handle a, fm_handle b);
/* FM_HANDLE_TYPE(entity_handle); a struct per kind: mixing kinds won't compile. */
#define FM_HANDLE_TYPE(name) FM__HANDLE_TYPE(name)

/* Time spent inside a pool's alloc and free calls (see Timing). */
typedef enum fm_pool_timing {
    FM_POOL_TIMING_OFF = 0,    /* nothing measured; the inline fast paths */
    FM_POOL_TIMING_SAMPLED,    /* one call in FM_POOL_TIMING_SAMPLE, scaled; batches all */
    FM_POOL_TIMING_EVERY_CALL, /* every call */
    FM_POOL_TIMING_COUNT
} fm_pool_timing;
#define FM_POOL_TIMING_SAMPLE 16 /* SAMPLED: one call in this many, at random */

typedef struct fm_pool_desc {
    const char *name;          /* shown in errors, stats and the overlay; copied */
    const char *type_name;     /* set by FM_POOL_DESC; the name when name is NULL */
    size_t item_size;          /* required, 1 .. FM_POOL_MAX_ITEM_SIZE */
    size_t item_align;         /* 0 = FM_DEFAULT_ALIGN (16); power of two <= 4096 */
    uint32_t initial_capacity; /* items usable after create; 0 = one chunk */
    uint32_t max_capacity;     /* 0 = unbounded, else >= initial; live never exceeds it */
    fm_growth growth;          /* GEOMETRIC (default), LINEAR or FIXED */
    uint32_t grow_step;        /* LINEAR: items per growth (whole chunks); 0 = one chunk */
    float grow_factor;         /* GEOMETRIC: 0 = 2.0; otherwise in (1, 64] */
    bool prefault;             /* touch new pages at growth, not at first use */
    bool silent_destroy;       /* destroy with live items is not reported */
    fm_sync sync;              /* NONE (default) or another policy: see Threads */
    fm_item_fn ctor;           /* run by fm_pool_new */
    fm_item_fn dtor;           /* run by fm_pool_delete and on live items at destroy */
    void *user;                /* passed to ctor and dtor */
    fm_allocator allocator;    /* zero = system (virtual memory); else alloc and free */
    fm_tag *tag;               /* memory tag its chunks are charged to (tag.h); NULL: none */
    bool grow_ahead;           /* opts in to fm_telemetry_grow_ahead (telemetry.h) */
    size_t chunk_bytes;        /* 0 = default; else a power of two, 4 KiB .. 1 GiB: see Memory */
    fm_pool_timing timing;     /* OFF (default), SAMPLED or EVERY_CALL: see Timing */
} fm_pool_desc;

#define FM_POOL_MAX_ITEM_SIZE ((size_t)1 << 24)
#define FM_POOL_MIN_CHUNK_BYTES ((size_t)4096)
#define FM_POOL_MAX_CHUNK_BYTES ((size_t)1 << 30)

/* X(field, description): one list for the struct, CSV writers and tests. */
#define FM_POOL_STATS_FIELDS(X)                                                  \
    X(item_size, "bytes per item as asked")                                      \
    X(item_align, "alignment of every item")                                     \
    X(stride, "bytes between neighbouring items")                                \
    X(chunk_bytes, "bytes per chunk (a power of two; chunks are aligned to it)") \
    X(items_per_chunk, "slots per chunk")                                        \
    X(chunk_count, "chunks held")                                                \
    X(capacity, "items that can be live before the pool must grow")             \
    X(live, "items allocated and not yet freed")                                 \
    X(peak_live, "highest live count since create")                              \
    X(total_allocs, "successful allocations since create")                       \
    X(total_frees, "successful frees since create")                              \
    X(failed_allocs, "allocations that returned NULL")                           \
    X(misuse_count, "bad calls reported (double free, foreign pointer...)")      \
    X(grow_events, "growths (create's initial chunks excluded)")                 \
    X(grow_ns_total, "nanoseconds spent growing")                                \
    X(grow_ns_max, "nanoseconds of the slowest growth")                          \
    X(alloc_grow_events, "of grow_events: inside an allocation call (the hitches)") \
    X(alloc_grow_ns, "nanoseconds of those")                                     \
    X(ahead_grow_events, "of grow_events: by fm_pool_grow_ahead (maintenance)")  \
    X(ahead_grow_ns, "nanoseconds of those")                                     \
    X(trim_events, "trim calls that released memory")                            \
    X(bytes_trimmed, "bytes given back by trim since create")                    \
    X(resets, "fm_pool_reset calls (their frees are in total_frees)")            \
    X(bytes_reserved, "bytes taken from the backing allocator, held now")        \
    X(bytes_overhead, "bytes_reserved minus capacity * item_size")               \
    X(alloc_ns_total, "nanoseconds inside alloc calls (desc.timing; SAMPLED: estimated)") \
    X(free_ns_total, "nanoseconds inside free calls (desc.timing; SAMPLED: estimated)") \
    X(timed_calls, "alloc and free calls timed by the clock (desc.timing)")

typedef struct fm_pool_stats {
    const char *name;
#define FM__POOL_STAT_FIELD(field, desc) uint64_t field;
    FM_POOL_STATS_FIELDS(FM__POOL_STAT_FIELD)
#undef FM__POOL_STAT_FIELD
} fm_pool_stats;

/// Creates a pool. NULL on failure, nothing leaked: FM_ERR_INVALID_ARG (a desc
/// fm_pool_desc_check refuses), FM_ERR_BUDGET (the first chunks would pass
/// desc.tag's hard limit) or FM_ERR_OUT_OF_MEMORY (backing allocator refused).
FM_API fm_pool *fm_pool_create(const fm_pool_desc *desc);
/// fm_pool_create's check (the fields' rules), creating and reporting nothing:
/// FM_OK, or FM_ERR_INVALID_ARG with the rule in msg (may be NULL). NULL desc: reported.
FM_API fm_error fm_pool_desc_check(const fm_pool_desc *desc, char *msg, size_t msg_len);
/// Runs the dtor on every live item, reports leaks (FM_ERR_LEAK, unless
/// silent_destroy), returns every byte to the backing allocator. NULL: no-op.
FM_API void fm_pool_destroy(fm_pool *pool);

/// An uninitialised item in O(1), or NULL with FM_ERR_POOL_FULL (FIXED and full,
/// max_capacity, the chunk limit), FM_ERR_BUDGET (growth past the hard limit
/// of desc.tag or an ancestor, tag.h) or FM_ERR_OUT_OF_MEMORY (growth refused).
FM_API void *fm_pool_alloc(fm_pool *pool);
/// Returns item to the pool; NULL is a no-op. A double free, foreign or
/// interior pointer is reported and changes nothing. O(1), no search.
FM_API void fm_pool_free(fm_pool *pool, void *item);
/// Up to n items into out[0, n), faster than n calls; how many: fewer when one
/// could not be had (reported once). out == NULL, n > 0: FM_ERR_INVALID_ARG.
FM_API size_t fm_pool_alloc_n(fm_pool *pool, void **out, size_t n);
/// Frees items[0, n) as n fm_pool_free calls in order would, faster. items ==
/// NULL, n > 0: FM_ERR_INVALID_ARG. A non-owner thread's call (NONE, debug):
/// FM_ERR_WRONG_THREAD once, nothing freed.
FM_API void fm_pool_free_n(fm_pool *pool, void *const *items, size_t n);
/// fm_pool_alloc, then the ctor (if any).
FM_API void *fm_pool_new(fm_pool *pool);
/// The dtor (if any), then fm_pool_free; a bad pointer is reported before it.
FM_API void fm_pool_delete(fm_pool *pool, void *item);
/// These record file:line for leak reports when sites are tracked (the plain
/// names call them so with FM_TRACK_SITES): fm_pool_alloc_at(pool, FM_SITE).
FM_API void *fm_pool_alloc_at(fm_pool *pool, const char *file, int line);
FM_API size_t fm_pool_alloc_n_at(fm_pool *pool, void **out, size_t n, const char *file, int line);
FM_API void *fm_pool_new_at(fm_pool *pool, const char *file, int line);

/// Grows now until capacity >= the argument (prefaulting if the desc says so).
/// false, the pool unchanged: FM_ERR_POOL_FULL (FIXED, above max_capacity or
/// past the chunk limit), FM_ERR_BUDGET (tag.h) or FM_ERR_OUT_OF_MEMORY.
FM_API bool fm_pool_reserve(fm_pool *pool, uint32_t capacity);
/// At the frame boundary: with fewer than min_free items free, grows now to
/// live + 2 x min_free (max_capacity allowing; ahead_grow_events). true: room
/// or grown; false, unchanged: errors as fm_pool_reserve (FIXED short of room).
FM_API bool fm_pool_grow_ahead(fm_pool *pool, uint32_t min_free);
/// Returns empty chunks down to initial_capacity; the bytes released (first
/// flushing THREAD_CACHE's caller cache, LOCKFREE's shared stack).
FM_API size_t fm_pool_trim(fm_pool *pool);
/// Frees every live item (dtor first, if any), keeping the chunks and their
/// pages; every older handle goes stale; O(chunks) without a dtor (see Reset).
/// Refused (FM_ERR_INVALID_ARG, nothing freed) inside foreach or its own dtor.
FM_API void fm_pool_reset(fm_pool *pool);
/// true when item is a live item of this pool (no error is reported). O(1).
FM_API bool fm_pool_owns(const fm_pool *pool, const void *item);
/// Calls fn on every live item; fn may free it (new items may not be visited).
FM_API void fm_pool_foreach(fm_pool *pool, fm_item_fn fn, void *user);
/// Fills out with the pool's counters (FM_POOL_STATS_FIELDS); zeros for NULL.
FM_API void fm_pool_get_stats(const fm_pool *pool, fm_pool_stats *out);
/// Each chunk's live items (of items_per_chunk; thread-cached slots count)
/// into live[0, max), in chunk-table order; returns the chunk count (may pass
/// max; live NULL with max 0). O(chunks); 0 for a NULL pool (reported).
FM_API uint32_t fm_pool_chunk_occupancy(const fm_pool *pool, uint32_t *live, uint32_t max);
/// The desc, every default resolved (name points into the pool); zero for NULL.
FM_API fm_pool_desc fm_pool_get_desc(const fm_pool *pool);
/// The pool's name; "(null)" for a NULL pool (reported).
FM_API const char *fm_pool_name(const fm_pool *pool);

/// The pool whose chunk (once it handed out an item) holds ptr, dead or alive,
/// or NULL, not reported. O(1); reads the chunk map, never ptr's memory (Owners).
FM_API fm_pool *fm_pool_of(const void *ptr);
/// fm_pool_free into the pool fm_pool_of finds (its reports and thread rules);
/// NULL: a no-op; a pointer in no pool's chunk: FM_ERR_FOREIGN_POINTER.
FM_API void fm_free(void *ptr);
/// Bytes fm_pool_of's chunk map took from the OS (not its static first level).
FM_API size_t fm_pool_map_bytes(void);

/// The handle of a live item in O(1); FM_HANDLE_NULL and FM_ERR_FOREIGN_POINTER
/// for anything else, a freed item too (FM_ERR_INTERIOR_POINTER inside one).
FM_API fm_handle fm_pool_handle(const fm_pool *pool, const void *item);
/// The item h refers to in O(1), or NULL (not reported: a weak reference's
/// answer) when it is gone (freed, reused, trimmed) or h null or another's.
FM_API void *fm_pool_resolve(const fm_pool *pool, fm_handle h);

/// Adds a reference (items start with 1). Unchanged on FM_ERR_REFCOUNT (freed),
/// FM_ERR_FOREIGN_POINTER, FM_ERR_OUT_OF_MEMORY.
FM_API void fm_pool_retain(fm_pool *pool, void *item);
/// Drops a reference; at zero runs the dtor and frees the item, returning
/// true. Errors as fm_pool_retain (returns false, nothing freed).
FM_API bool fm_pool_release(fm_pool *pool, void *item);
/// The item's count; 0 with FM_ERR_REFCOUNT / FM_ERR_FOREIGN_POINTER if not live.
FM_API uint32_t fm_pool_refcount(const fm_pool *pool, const void *item);

/// FM_SYNC_NONE, debug builds: the calling thread becomes the owner (Threads).
FM_API void fm_pool_set_owner_thread(fm_pool *pool);
/// FM_SYNC_NONE, called by the owner: the pool has no owner until a thread
/// next uses it. FM_ERR_WRONG_THREAD (debug builds) from a non-owner.
FM_API void fm_pool_release_owner_thread(fm_pool *pool);
/// FM_SYNC_THREAD_CACHE: the calling thread's cached slots back to the pool
/// (so trim can release their chunks). Other policies: nothing to do.
FM_API void fm_pool_flush_thread_cache(fm_pool *pool);

/// Checks every invariant in O(capacity): FM_OK, or the first problem, reported.
FM_API fm_error fm_pool_check(const fm_pool *pool);

/* FM_POOL_DESC(particle, .initial_capacity = 4096): size, align, name from T, any
 * other fields as FM_DESC (base.h). C: &FM_POOL_DESC(...); C++: FM_POOL_DESC(...). */
#define FM_POOL_DESC(...) FM__EXPAND(FM__POOL_DESC(__VA_ARGS__, ))

/* The caller's file and line, as the _at functions take them. */
#define FM_SITE __FILE__, __LINE__

/* FM_POOL_DECLARE_TYPED(particle, particle_pool) declares typed particle_pool_
 * alloc, _free, _new, _delete, and _alloc_at, _new_at taking the site (the
 * caller's file:line: docs/POOLS.md, Allocation sites). */
#define FM_POOL_DECLARE_TYPED(T, prefix) FM__POOL_DECLARE_TYPED(T, prefix)

/* FM_POOL_DECLARE_HANDLE(particle, particle_pool, particle_ref), with
 * FM_HANDLE_TYPE(particle_ref) before it, declares particle_pool_handle and
 * particle_pool_resolve (as fm_pool_handle and fm_pool_resolve) over
 * particle_ref: a handle of another kind, or a bare fm_handle, won't compile. */
#define FM_POOL_DECLARE_HANDLE(T, prefix, handle_type)                          \
    FM__POOL_DECLARE_HANDLE(T, prefix, handle_type)

#ifdef __cplusplus
}
#endif

#include "framemem/detail/pool.h"

#endif /* FRAMEMEM_POOL_H */
