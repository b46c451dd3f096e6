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
 * touches no new slot. A growth costs the same whatever it adds (two
 * mappings, a few records): a chunk gets its record, its entries in the
 * chunk map and the pool's tables when it first becomes current. Per-slot
 * metadata lives beside the slots, never in them.
 *
 * Lifetime: fm_pool_create / fm_pool_destroy. Destroy runs the dtor on every
 * live item and reports (FM_ERR_LEAK) how many there were unless the desc says
 * silent_destroy; with FM_TRACK_SITES each leak is listed with its file:line.
 *
 * Allocation sites: a build of framemem with FM_TRACK_SITES (Debug builds, or
 * -DFM_TRACK_SITES=ON) keeps file:line per item, which callers pass: their
 * fm_pool_alloc, fm_pool_alloc_n and fm_pool_new are macros over the _at
 * functions when they are compiled with FM_TRACK_SITES too, which CMake's
 * framemem::framemem and `pkg-config --cflags framemem` define exactly when
 * the library tracks sites. A caller compiled otherwise (its own flags) gets
 * FM_WARN_NO_SITES once, at its first fm_pool_create, saying why, and its
 * leaks are listed as "site not recorded". Typed wrappers: see
 * FM_POOL_DECLARE_TYPED.
 *
 * Threads (desc.sync, chosen per pool):
 * - FM_SYNC_NONE: one thread at a time, no atomics, no lock. The creating
 *   thread owns it; fm_pool_release_owner_thread / fm_pool_set_owner_thread
 *   hand it over (with a happens-before). Debug and sanitizer builds report
 *   other threads' calls (FM_ERR_WRONG_THREAD, nothing changed).
 * - FM_SYNC_MUTEX: every call takes the pool's lock (recursive: a dtor or a
 *   foreach callback, run with it held, may call back into the pool).
 * - FM_SYNC_THREAD_CACHE: each thread caches up to 64 free slots per pool
 *   (a block of the pool's allocator; in up to 256 pools at once, further
 *   ones lock per call), traded 32 at a time under the pool's lock; a slot
 *   freed on another thread joins that thread's cache. They go back at thread
 *   exit or fm_pool_flush_thread_cache (meanwhile a thread may see
 *   FM_ERR_POOL_FULL at max_capacity). A dead item's free is always reported,
 *   but of two frees racing at the same instant the inline free of optimised
 *   builds (no CAS) may let both pass: who finds the slot in use reports it.
 * - FM_SYNC_LOCKFREE: one shared lock-free stack of free slots (ABA-safe,
 *   tagged 64-bit CAS), refilled in batches under the lock, where growth is.
 * Other policies take any call from any thread at any time but destroy (no
 * other call may run or follow) and a resolve racing a trim of its chunk.
 * Stats are exact once threads are quiet; peak_live counts cached slots.
 *
 * Defaults (zero fields): name "pool", item_align FM_DEFAULT_ALIGN (16),
 * initial_capacity one chunk, unbounded, geometric growth by 2.0, the
 * default chunk size (below).
 *
 * Memory: chunks of desc.chunk_bytes, a power of two from 4 KiB to 1 GiB
 * that holds at least one item and its 6 bytes of metadata (22 with
 * FM_TRACK_SITES); 0 picks the smallest power of two from 64 KiB that holds
 * 32 items (16 from 64 KiB items, 4 from 1 MiB), which get_desc and stats
 * report. A chunk holds at most 65536 items. Chunks whose size is a multiple
 * of the page come from the OS (the system allocator), smaller ones from
 * the C heap. Besides its chunks a pool holds about 3.8 KiB on 64-bit
 * targets (the pool object, 8 chunk records and a 16-entry chunk table,
 * growing with the chunk count; stats.bytes_reserved counts them all, and
 * arrays a growth replaced, kept until destroy), so 24 door thinkers of 80
 * bytes need a 4 KiB chunk and 3.8 KiB. A pool's
 * first chunk becomes current at create and, when it is mapped for the pool
 * and at most 64 KiB, resident (its pages touched), so that the first
 * allocations of a fresh pool cost what later ones do; bigger chunks are
 * touched as used, or at growth with desc.prefault.
 *
 * Reset: fm_pool_reset frees every live item at once and keeps the chunks,
 * for a level's objects. Without a dtor it costs O(chunks), whatever the
 * number of items (NONE, MUTEX; THREAD_CACHE and LOCKFREE clear 4 bytes of
 * metadata per slot used); with one, the dtor runs on each live item first.
 * Every handle made before it goes stale (generations advance; a slot whose
 * generations run out retires, as at any wrap; once every 65536 resets a
 * reset renumbers them in O(slots)); frees of the items it freed are double
 * frees; total_frees counts them and stats.resets the call. Like destroy it
 * must not overlap another call on the pool from another thread (MUTEX:
 * any time); THREAD_CACHE and LOCKFREE drop every thread's cached slots,
 * and threads allocate afresh after it. Refused inside fm_pool_foreach.
 *
 * Owners: fm_pool_of(ptr) finds the pool whose chunk holds ptr from a
 * process-wide map of chunk addresses (two levels over the address's 64 KiB
 * granule, a third for chunks under 64 KiB), updated when a chunk first
 * becomes current and at release, read without a lock and never through
 * ptr: O(1), a few loads; NULL for memory no pool holds (the map covers
 * addresses below 2^48), chunks a growth mapped that never handed out an
 * item included. fm_free(ptr)
 * frees into that pool. The map's memory comes from the OS (its first level
 * is 512 KiB of zero-filled static storage; then 512 KiB of address space
 * per 4 GiB region that held a chunk, pages touched where entries are, and
 * 128 bytes per 64 KiB granule that held a chunk under 64 KiB), is never
 * freed and never allocated on a free path; fm_pool_map_bytes counts it.
 *
 * NULL (base.h): every function but destroy (a no-op) reports a NULL pool as
 * FM_ERR_INVALID_ARG; the inline alloc, free and resolve of optimised builds
 * take a non-NULL pool as a precondition ((fm_pool_alloc)(p) checks it).
 *
 * Limit: a handle names chunk and slot in 32 bits (ceil(log2(items_per_chunk))
 * for the slot), so a pool holds at most 2^(32 - slot bits) - 1 chunks, never
 * above 2^29 - 1: 2^31 to 2^32 items. Growth past it fails (FM_ERR_POOL_FULL,
 * nothing changed); growth by policy near it adds the chunks that are left.
 *
 * AddressSanitizer builds poison every free slot, the stride rounded up to
 * whole 8-byte granules (a 12-byte item takes 16; stats.stride says so).
 */
#ifndef FRAMEMEM_POOL_H
#define FRAMEMEM_POOL_H

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fm_pool fm_pool;
typedef void (*fm_item_fn)(void *item, void *user);

/* A weak reference to a pool item (zero: null). It resolves to NULL for good
 * once the item is freed, its chunk trimmed or its pool destroyed, and to NULL
 * in another pool but with probability 2^-31. */
typedef struct fm_handle {
    uint64_t bits;
} fm_handle;

#define FM_HANDLE_NULL (FM_LITERAL(fm_handle) FM_ZERO_INIT)
static inline bool fm_handle_is_null(fm_handle h);
static inline bool fm_handle_equal(fm_handle a, fm_handle b);
/* FM_HANDLE_TYPE(entity_handle); a struct per kind: mixing kinds won't compile. */
#define FM_HANDLE_TYPE(name)                                                    \
    typedef struct name {                                                       \
        fm_handle h;                                                            \
    } name

typedef struct fm_pool_desc {
    const char *name;          /* shown in errors, stats and the overlay; copied */
    const char *type_name;     /* set by FM_POOL_DESC; the name when name is NULL */
    size_t item_size;          /* required, 1 .. FM_POOL_MAX_ITEM_SIZE */
    size_t item_align;         /* 0 = FM_DEFAULT_ALIGN (16); power of two <= 4096 */
    uint32_t initial_capacity; /* items usable after create; 0 = one chunk */
    uint32_t max_capacity;     /* 0 = unbounded; live items never exceed it */
    fm_growth growth;          /* GEOMETRIC (default), LINEAR or FIXED */
    uint32_t grow_step;        /* LINEAR: items per growth (whole chunks); 0 = one chunk */
    float grow_factor;         /* GEOMETRIC: 0 = 2.0; otherwise in (1, 64] */
    bool prefault;             /* touch new pages at growth, not at first use */
    bool silent_destroy;       /* destroy with live items is not reported */
    fm_sync sync;              /* NONE (default) or another policy: see Threads */
    fm_item_fn ctor;           /* run by fm_pool_new */
    fm_item_fn dtor;           /* run by fm_pool_delete and on live items at destroy */
    void *user;                /* passed to ctor and dtor */
    fm_allocator allocator;    /* zero = system (virtual memory where available) */
    fm_tag *tag;               /* memory tag its chunks are charged to (tag.h); NULL: none */
    size_t chunk_bytes;        /* 0 = default; else a power of two, 4 KiB .. 1 GiB: see Memory */
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
    X(trim_events, "trim calls that released memory")                            \
    X(bytes_trimmed, "bytes given back by trim since create")                    \
    X(resets, "fm_pool_reset calls (their frees are in total_frees)")            \
    X(bytes_reserved, "bytes taken from the backing allocator, held now")        \
    X(bytes_overhead, "bytes_reserved minus capacity * item_size")

typedef struct fm_pool_stats {
    const char *name;
#define FM__POOL_STAT_FIELD(field, desc) uint64_t field;
    FM_POOL_STATS_FIELDS(FM__POOL_STAT_FIELD)
#undef FM__POOL_STAT_FIELD
} fm_pool_stats;

/// Creates a pool. NULL on failure, nothing leaked: FM_ERR_INVALID_ARG (item_size
/// 0 or too big, bad item_align, grow_factor outside (1, 64], unknown growth or
/// sync, initial_capacity above max_capacity, an allocator with only one of
/// alloc/free), FM_ERR_BUDGET (the first chunks would pass desc.tag's hard limit)
/// or FM_ERR_OUT_OF_MEMORY (backing allocator refused).
FM_API fm_pool *fm_pool_create(const fm_pool_desc *desc);
/// The check fm_pool_create applies, without creating or reporting anything:
/// FM_OK, or FM_ERR_INVALID_ARG with the rule broken in msg (may be NULL), so
/// a desc from a file can be checked where the file is read. A NULL desc is
/// reported (FM_ERR_INVALID_ARG).
FM_API fm_error fm_pool_desc_check(const fm_pool_desc *desc, char *msg, size_t msg_len);
/// Runs the dtor on every live item, reports leaks (see above), returns every
/// byte to the backing allocator. NULL is a no-op.
FM_API void fm_pool_destroy(fm_pool *pool);

/// An uninitialised item in O(1), or NULL with FM_ERR_POOL_FULL (FIXED and full,
/// max_capacity, the chunk limit), FM_ERR_BUDGET (growth past the hard limit
/// of desc.tag or an ancestor, tag.h) or FM_ERR_OUT_OF_MEMORY (growth refused).
FM_API void *fm_pool_alloc(fm_pool *pool);
/// Returns item to the pool; NULL is a no-op. A double free, foreign or
/// interior pointer is reported and changes nothing. O(1), no search.
FM_API void fm_pool_free(fm_pool *pool, void *item);
/// Up to n items into out[0, n), faster than n calls (NONE, MUTEX: one loop and
/// lock); returns how many: fewer when one could not be had (reported once,
/// out[got, n) untouched). out == NULL with n > 0: FM_ERR_INVALID_ARG.
FM_API size_t fm_pool_alloc_n(fm_pool *pool, void **out, size_t n);
/// Frees items[0, n) as n fm_pool_free calls in order would, faster. items ==
/// NULL with n > 0: FM_ERR_INVALID_ARG. (NONE, debug builds: a call from a
/// non-owner thread is reported once, FM_ERR_WRONG_THREAD, and frees nothing.)
FM_API void fm_pool_free_n(fm_pool *pool, void *const *items, size_t n);
/// fm_pool_alloc, then the ctor (if any).
FM_API void *fm_pool_new(fm_pool *pool);
/// The dtor (if any), then fm_pool_free. A bad pointer is reported before the
/// dtor runs, so the dtor never sees a foreign or dead item.
FM_API void fm_pool_delete(fm_pool *pool, void *item);
/// These record file:line for leak reports when sites are tracked (with
/// FM_TRACK_SITES the plain names call them with __FILE__ and __LINE__;
/// FM_SITE spells the pair: fm_pool_alloc_at(pool, FM_SITE)).
FM_API void *fm_pool_alloc_at(fm_pool *pool, const char *file, int line);
FM_API size_t fm_pool_alloc_n_at(fm_pool *pool, void **out, size_t n, const char *file, int line);
FM_API void *fm_pool_new_at(fm_pool *pool, const char *file, int line);

/// Grows now until capacity >= the argument (prefaulting if the desc says so).
/// false, the pool unchanged: FM_ERR_POOL_FULL (FIXED, above max_capacity or
/// past the chunk limit), FM_ERR_BUDGET (tag.h) or FM_ERR_OUT_OF_MEMORY.
FM_API bool fm_pool_reserve(fm_pool *pool, uint32_t capacity);
/// Returns empty chunks down to initial_capacity; the bytes released. First
/// THREAD_CACHE flushes the caller's cache, LOCKFREE the shared stack.
FM_API size_t fm_pool_trim(fm_pool *pool);
/// Frees every live item at once (the dtor, if any, runs on each first) and
/// keeps the chunks: capacity unchanged, no page faults when they fill again.
/// Every handle made before goes stale. O(chunks) without a dtor (see Reset).
/// Refused (FM_ERR_INVALID_ARG, nothing freed) inside fm_pool_foreach or a
/// dtor the reset runs.
FM_API void fm_pool_reset(fm_pool *pool);
/// true when item is a live item of this pool (no error is reported). O(1).
FM_API bool fm_pool_owns(const fm_pool *pool, const void *item);
/// Calls fn on every live item; fn may free it (items allocated meanwhile may
/// or may not be visited).
FM_API void fm_pool_foreach(fm_pool *pool, fm_item_fn fn, void *user);
/// Fills out with the pool's counters (FM_POOL_STATS_FIELDS); zeros for NULL.
FM_API void fm_pool_get_stats(const fm_pool *pool, fm_pool_stats *out);
/// The desc, every default resolved (name points into the pool); zero for NULL.
FM_API fm_pool_desc fm_pool_get_desc(const fm_pool *pool);
/// The pool's name; "(null)" for a NULL pool (reported).
FM_API const char *fm_pool_name(const fm_pool *pool);

/// The pool holding the chunk ptr points into (any address inside it, the
/// item dead or alive; a chunk enters when it first hands out an item), or
/// NULL, reported to no one. O(1); reads only the
/// process-wide chunk map, never the memory at ptr (see Owners).
FM_API fm_pool *fm_pool_of(const void *ptr);
/// Frees ptr into the pool fm_pool_of finds, as fm_pool_free would (its
/// reports: a dead item is a double free, a pointer inside one interior);
/// NULL is a no-op; a pointer in no pool's chunk is FM_ERR_FOREIGN_POINTER.
/// Thread rules: the owning pool's.
FM_API void fm_free(void *ptr);
/// Bytes the chunk map behind fm_pool_of has taken from the OS so far (its
/// 512 KiB first level, zero-filled static storage, not included).
FM_API size_t fm_pool_map_bytes(void);

/// The handle of a live item in O(1); FM_HANDLE_NULL and FM_ERR_FOREIGN_POINTER
/// for anything else, a freed item too (FM_ERR_INTERIOR_POINTER inside one).
FM_API fm_handle fm_pool_handle(const fm_pool *pool, const void *item);
/// The item h refers to in O(1), or NULL (not reported: a weak reference's
/// answer) when it is gone (freed, reused, trimmed) or h null or another's.
FM_API void *fm_pool_resolve(const fm_pool *pool, fm_handle h);

/// Adds a reference (items start with 1, counted beside the slot). Unchanged on
/// FM_ERR_REFCOUNT (freed), FM_ERR_FOREIGN_POINTER, FM_ERR_OUT_OF_MEMORY.
FM_API void fm_pool_retain(fm_pool *pool, void *item);
/// Drops a reference; at zero runs the dtor and frees the item, returning
/// true. Errors as fm_pool_retain (returns false, nothing freed).
FM_API bool fm_pool_release(fm_pool *pool, void *item);
/// The item's count; 0 with FM_ERR_REFCOUNT / FM_ERR_FOREIGN_POINTER if not live.
FM_API uint32_t fm_pool_refcount(const fm_pool *pool, const void *item);

/// FM_SYNC_NONE: the calling thread becomes the owner (see Threads); a no-op
/// under other policies or in release builds.
FM_API void fm_pool_set_owner_thread(fm_pool *pool);
/// FM_SYNC_NONE, called by the owner: the pool has no owner until a thread
/// next uses it. FM_ERR_WRONG_THREAD (debug builds) from a non-owner.
FM_API void fm_pool_release_owner_thread(fm_pool *pool);
/// FM_SYNC_THREAD_CACHE: returns the calling thread's cached free slots to the
/// pool (so trim can release their chunks). Other policies: nothing to do.
FM_API void fm_pool_flush_thread_cache(fm_pool *pool);

/// Checks every invariant (counts, free stacks, live bits) in O(capacity):
/// FM_OK, or the first problem found, reported.
FM_API fm_error fm_pool_check(const fm_pool *pool);

/* FM_POOL_DESC(particle, .initial_capacity = 4096): size, align and name from
 * T, and any other fields (or none) as FM_DESC (base.h) takes them, in C and
 * C++. C: fm_pool_create(&FM_POOL_DESC(...)); C++: fm_pool_create(FM_POOL_DESC(...)). */
#define FM_POOL_DESC(...) FM__EXPAND(FM__POOL_DESC(__VA_ARGS__, ))
#ifdef __cplusplus
#define FM__POOL_DESC(T, ...)                                                                 \
    ([&]() -> fm_pool_desc {                                                                  \
        fm_pool_desc fm__d{};                                                                 \
        fm__d.type_name = #T;                                                                 \
        fm__d.item_size = sizeof(T);                                                          \
        fm__d.item_align = FM_ALIGNOF(T);                                                     \
        FM__SET(fm__d, __VA_ARGS__)                                                           \
        return fm__d;                                                                         \
    }())
#else
#define FM__POOL_DESC(T, ...)                                                                 \
    ((fm_pool_desc){                                                                          \
        .type_name = #T, .item_size = sizeof(T), .item_align = FM_ALIGNOF(T), __VA_ARGS__})
#endif

/* The caller's file and line, as the _at functions take them. */
#define FM_SITE __FILE__, __LINE__

/* FM_POOL_DECLARE_TYPED(particle, particle_pool) declares particle_pool_alloc,
 * particle_pool_free, particle_pool_new and particle_pool_delete, typed, and
 * particle_pool_alloc_at and particle_pool_new_at, which take the site.
 *
 * Sites: a macro cannot define macros, so the typed alloc and new are
 * functions, and in a site-tracking build (FM_TRACK_SITES) they record their
 * own line: the FM_POOL_DECLARE_TYPED line. For the caller's file:line, name
 * them through macros over the _at functions, once per type, after it:
 *
 *     FM_POOL_DECLARE_TYPED(particle, particle_pool)
 *     #define particle_pool_alloc(pool) particle_pool_alloc_at((pool), FM_SITE)
 *     #define particle_pool_new(pool) particle_pool_new_at((pool), FM_SITE)
 *
 * ((particle_pool_alloc)(pool) still calls the function.) */
#define FM_POOL_DECLARE_TYPED(T, prefix)                                        \
    FM__MAYBE_UNUSED static inline T *prefix##_alloc_at(fm_pool *pool, const char *file, \
                                                       int line) {              \
        return (T *)fm__pool_alloc_site(pool, file, line);                      \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_new_at(fm_pool *pool, const char *file, \
                                                     int line) {                \
        return (T *)fm__pool_new_site(pool, file, line);                        \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_alloc(fm_pool *pool) {           \
        return (T *)fm_pool_alloc(pool);                                        \
    }                                                                           \
    FM__MAYBE_UNUSED static inline void prefix##_free(fm_pool *pool, T *item) { \
        fm_pool_free(pool, item);                                               \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_new(fm_pool *pool) {             \
        return (T *)fm_pool_new(pool);                                          \
    }                                                                           \
    FM__MAYBE_UNUSED static inline void prefix##_delete(fm_pool *pool, T *item) { \
        fm_pool_delete(pool, item);                                             \
    }

/* FM_POOL_DECLARE_HANDLE(particle, particle_pool, particle_ref), with
 * FM_HANDLE_TYPE(particle_ref) before it, declares
 *     particle_ref particle_pool_handle(const fm_pool *, const particle *);
 *     particle *particle_pool_resolve(const fm_pool *, particle_ref);
 * so a handle of another kind (or a bare fm_handle) does not compile where a
 * particle_ref is wanted. Same answers and errors as fm_pool_handle and
 * fm_pool_resolve. */
#define FM_POOL_DECLARE_HANDLE(T, prefix, handle_type)                          \
    FM__MAYBE_UNUSED static inline handle_type prefix##_handle(const fm_pool *pool, \
                                                               const T *item) { \
        handle_type ref;                                                        \
        ref.h = fm_pool_handle(pool, item);                                     \
        return ref;                                                             \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_resolve(const fm_pool *pool,     \
                                                      handle_type ref) {        \
        return (T *)fm_pool_resolve(pool, ref.h);                               \
    }

#ifdef __cplusplus
}
/* C++: the desc by reference, so that FM_POOL_DESC(...) passes as it is (C++
 * has no compound literal to take the address of); C++ linkage also when a
 * caller includes this header inside extern "C". */
extern "C++" {
inline fm_pool *fm_pool_create(const fm_pool_desc &desc) { return fm_pool_create(&desc); }
inline fm_error fm_pool_desc_check(const fm_pool_desc &desc, char *msg, size_t msg_len) {
    return fm_pool_desc_check(&desc, msg, msg_len);
}
}
#endif

#include "framemem/detail/pool.h"

#endif /* FRAMEMEM_POOL_H */
