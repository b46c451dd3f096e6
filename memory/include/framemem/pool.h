/*
 * framemem/pool.h: fixed-size object pools that grow without hitches.
 *
 * A pool hands out items of one size and alignment. It is a set of chunks of
 * equal power-of-two size, each aligned to that size; a chunk keeps its own
 * stack of free slot indices plus a bump index over never-used slots, so a
 * new chunk is usable at once and growing never touches the new slots.
 * alloc, free and owns are O(1) whatever the capacity; free recognises double
 * frees, foreign and interior pointers without searching. Per-slot metadata
 * (live bit, generation, free stack) lives beside the slots, never inside the
 * user's item: the pool keeps nothing in a free slot's bytes.
 *
 * Lifetime: fm_pool_create / fm_pool_destroy. Destroy runs the dtor on every
 * live item and reports (FM_ERR_LEAK) how many there were unless the desc says
 * silent_destroy; with FM_TRACK_SITES each leak is listed with its file:line.
 *
 * Threads (desc.sync, chosen per pool):
 * - FM_SYNC_NONE: one thread at a time, nothing atomic and no lock. The
 *   owner is the creating thread; fm_pool_release_owner_thread on the owner
 *   leaves the pool unowned and the next thread to use it becomes the owner;
 *   fm_pool_set_owner_thread makes the caller the owner at once. A handover
 *   needs the usual happens-before (join, a mutex, a queue) between the last
 *   use and the first. Debug and sanitizer builds report any other use as
 *   FM_ERR_WRONG_THREAD and change nothing; release builds do not check.
 * - FM_SYNC_MUTEX: every call takes the pool's lock (recursive: a dtor or a
 *   foreach callback, which run with it held, may call back into the pool).
 * - FM_SYNC_THREAD_CACHE: each thread keeps up to 64 free slots per pool and
 *   trades 32 at a time with the pool under its lock; alloc and free of a
 *   warm thread touch only that thread's cache (and the item's meta word).
 *   A slot freed on another thread joins that thread's cache for the same
 *   pool. A thread's slots go back when it exits or calls
 *   fm_pool_flush_thread_cache. A thread may see FM_ERR_POOL_FULL at
 *   max_capacity while other threads' caches hold free slots. Double frees:
 *   a free of an item that is not live is always reported (also when the
 *   first free was on another thread, ordered before it). Of two frees of
 *   one item racing on two threads at the same instant, one compare-and-swap
 *   of the meta word lets exactly one succeed in debug and sanitizer builds
 *   and in the library's own functions. The inline free of optimised builds
 *   (below) clears the live bit with a plain load and store instead (with
 *   the CAS a warm alloc+free pair took 1.85x NONE's time, without it 1.4x):
 *   there both racing frees may succeed, unreported, leaving the slot in two
 *   threads' caches. It is still never handed out twice at once: a thread
 *   that finds its copy in use when serving it or when flushing its cache
 *   drops that copy and reports FM_ERR_DOUBLE_FREE then. Only two allocs of
 *   such a slot racing at the same instant again would both get it.
 * - FM_SYNC_LOCKFREE: one shared lock-free stack of free slots (ABA-safe,
 *   tagged 64-bit CAS), refilled in batches under the lock, where growth is.
 * Under every policy but NONE, any call may come from any thread at any
 * time, except: destroy (no other call may run or follow; idle or exited
 * threads' caches are no obstacle), and resolve of a handle or a bad pointer
 * racing an fm_pool_trim that releases that item's chunk (it would read
 * released memory). Handles, reference counts (atomic), stats (live = allocs
 * - frees summed over threads, exact once the threads are quiet; peak_live
 * counts free slots held by caches as used) and trim work under every
 * policy. The inline fast paths below serve FM_SYNC_NONE and THREAD_CACHE
 * pools; MUTEX and LOCKFREE pools always call into the library.
 *
 * Defaults (zero fields): name "pool", item_align alignof(max_align_t),
 * initial_capacity one chunk, unbounded, geometric growth by 2.0.
 */
#ifndef FRAMEMEM_POOL_H
#define FRAMEMEM_POOL_H

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fm_pool fm_pool;
typedef void (*fm_item_fn)(void *item, void *user);

/* A weak reference to a pool item: slot, chunk and generation. Zero is the
 * null handle. Resolving gives the item while it lives and NULL forever after
 * it is freed, its slot reused, its chunk trimmed or its pool destroyed; a
 * handle of another pool resolves to NULL except with probability 2^-31. */
typedef struct fm_handle {
    uint64_t bits;
} fm_handle;

#define FM_HANDLE_NULL ((fm_handle){0})
static inline bool fm_handle_is_null(fm_handle h) { return h.bits == 0; }
static inline bool fm_handle_equal(fm_handle a, fm_handle b) { return a.bits == b.bits; }
/* FM_HANDLE_TYPE(entity_handle); gives each kind of handle its own struct,
 * so the compiler rejects passing one kind for another. */
#define FM_HANDLE_TYPE(name)                                                    \
    typedef struct name {                                                       \
        fm_handle h;                                                            \
    } name

typedef struct fm_pool_desc {
    const char *name;          /* shown in errors, stats and the overlay; copied */
    const char *type_name;     /* set by FM_POOL_DESC; the name when name is NULL */
    size_t item_size;          /* required, 1 .. FM_POOL_MAX_ITEM_SIZE */
    size_t item_align;         /* 0 = alignof(max_align_t); power of two <= 4096 */
    uint32_t initial_capacity; /* items usable after create; 0 = one chunk */
    uint32_t max_capacity;     /* 0 = unbounded; live items never exceed it */
    fm_growth growth;          /* GEOMETRIC (default), LINEAR or FIXED */
    uint32_t grow_step;        /* LINEAR: items added per growth, rounded up to
                                  whole chunks; 0 = one chunk */
    float grow_factor;         /* GEOMETRIC: 0 = 2.0; otherwise in (1, 64] */
    bool prefault;             /* touch new pages at growth, not at first use */
    bool silent_destroy;       /* destroy with live items is not reported */
    fm_sync sync;              /* NONE (default), MUTEX, THREAD_CACHE or LOCKFREE:
                                  see "Threads" above */
    fm_item_fn ctor;           /* run by fm_pool_new */
    fm_item_fn dtor;           /* run by fm_pool_delete and on live items at destroy */
    void *user;                /* passed to ctor and dtor */
    fm_allocator allocator;    /* zero = system (mmap where available) */
} fm_pool_desc;

#define FM_POOL_MAX_ITEM_SIZE ((size_t)1 << 24)

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
    X(bytes_reserved, "bytes taken from the backing allocator, held now")        \
    X(bytes_overhead, "bytes_reserved minus capacity * item_size")

typedef struct fm_pool_stats {
    const char *name;
#define FM__POOL_STAT_FIELD(field, desc) uint64_t field;
    FM_POOL_STATS_FIELDS(FM__POOL_STAT_FIELD)
#undef FM__POOL_STAT_FIELD
} fm_pool_stats;

/// Creates a pool. NULL on failure: FM_ERR_INVALID_ARG (item_size 0 or too
/// big, bad item_align, grow_factor outside (1, 64], unknown growth or sync,
/// initial_capacity above max_capacity, an allocator with only one of
/// alloc/free) or FM_ERR_OUT_OF_MEMORY (backing allocator refused); nothing
/// is leaked.
fm_pool *fm_pool_create(const fm_pool_desc *desc);
/// Runs the dtor on every live item, reports leaks (see above), returns every
/// byte to the backing allocator. NULL is a no-op.
void fm_pool_destroy(fm_pool *pool);

/// An uninitialised item, or NULL with FM_ERR_POOL_FULL (FIXED and full, or at
/// max_capacity) or FM_ERR_OUT_OF_MEMORY (growth refused). O(1). pool != NULL.
void *fm_pool_alloc(fm_pool *pool);
/// Returns item to the pool; NULL is a no-op. A double free, foreign or
/// interior pointer is reported and changes nothing. O(1), no search.
void fm_pool_free(fm_pool *pool, void *item);
/// Frees items[0, n) exactly as n fm_pool_free calls in order would (NULLs
/// skipped; each bad pointer reported and skipped; the rest still freed), but
/// faster for a batch of scattered items (NONE and MUTEX: one loop in the
/// library, the lock taken once, each chunk's record written once per run of
/// its items). The array is only read; items == NULL with n > 0:
/// FM_ERR_INVALID_ARG. (NONE, debug builds: a call from a thread other than
/// the owner is reported once, FM_ERR_WRONG_THREAD, and frees nothing.)
void fm_pool_free_n(fm_pool *pool, void *const *items, size_t n);
/// Allocates up to n items into out[0, n) and returns how many: n, or fewer
/// when one could not be had (FM_ERR_POOL_FULL or FM_ERR_OUT_OF_MEMORY, as
/// fm_pool_alloc; reported and counted once, and the batch stops there;
/// out[got, n) is left as it was).
/// Faster than n fm_pool_alloc calls (NONE and MUTEX: one loop in the
/// library, the lock taken once). out == NULL with n > 0: FM_ERR_INVALID_ARG.
size_t fm_pool_alloc_n(fm_pool *pool, void **out, size_t n);
/// fm_pool_alloc, then the ctor (if any).
void *fm_pool_new(fm_pool *pool);
/// The dtor (if any), then fm_pool_free. A bad pointer is reported before the
/// dtor runs, so the dtor never sees a foreign or dead item.
void fm_pool_delete(fm_pool *pool, void *item);

/// Same as fm_pool_alloc / fm_pool_alloc_n / fm_pool_new, recording file:line for leak reports
/// when the library tracks sites (FM_TRACK_SITES); the macros below use them.
void *fm_pool_alloc_at(fm_pool *pool, const char *file, int line);
size_t fm_pool_alloc_n_at(fm_pool *pool, void **out, size_t n, const char *file, int line);
void *fm_pool_new_at(fm_pool *pool, const char *file, int line);

/* ---------------------------------------------------- inline fast paths
 *
 * Private. Optimised builds (NDEBUG, no sanitizer, no FM_TRACK_SITES, no
 * FM_NO_INLINE) inline the common case of fm_pool_alloc/fm_pool_free: a pop
 * from or push onto the current chunk's stack of free slot indices, with the
 * live bit, double-free and foreign-pointer checks and the counters, all
 * exactly as the out-of-line functions do them. Everything else calls into
 * the library. The functions themselves stay callable as (fm_pool_alloc)(pool).
 * Pools with sync != NONE keep cur_next_slot NULL and cur_top and cur_bump
 * 0 here, so NONE's part falls through; a THREAD_CACHE pool (tc_id set)
 * goes to its own part right after an alloc's first test and before a
 * free's index arithmetic. It pops from or pushes onto the calling thread's
 * magazine when its last entry (fm__tc_last) carries the pool's id: an
 * alloc checks the slot is not live and sets the live bit,
 * a free checks the item is a slot start of the chunk the thread freed into
 * last and live, and bumps the generation (no CAS: see Threads); the
 * thread's other pools, an empty or full magazine, a first use and every
 * misuse go into the library. The inline resolve reads words
 * the library only ever replaces whole (old arrays of such pools are kept
 * until destroy). */
#define FM__META_LIVE 0x80000000u /* meta word: live bit | 31-bit generation */

typedef struct fm__pool_hot {
    /* A chunk keeps the indices of its free slots in a stack of 16-bit
     * entries beside its meta words, never inside the slots: an alloc reads
     * a cached stack entry instead of a link in a cold item (a dependent
     * cache miss per alloc once frees come in random order), and a free
     * does not write into the item. The last freed slot waits here, as a
     * pointer and an index: an alloc right after a free returns the pointer
     * the free stored (which the CPU forwards at once) without turning an
     * index into an address, so a free's index arithmetic and an alloc's
     * meta word update stay off the chain from one pair to the next. */
    uint8_t *cur_next_slot; /* the next free slot, NULL: none */
    uint32_t *cur_next_meta; /* its meta word */
    uint32_t cur_next;  /* its index in the current chunk; UINT32_MAX: it is
                           another chunk's, parked by the library's free (see
                           pool.c), and a free here goes to the library */
    uint32_t cur_top;   /* free indices on its stack below cur_next */
    uint16_t *cur_stack; /* the current chunk's stack: [0, cur_top) */
    uint32_t cur_limit;
    uintptr_t cur_base; /* current chunk, or 1 when there is none */
    uint8_t *cur_slots; /* its first slot */
    uint64_t cur_bump;  /* slots [0, cur_bump) have been handed out */
    uint32_t stride;
    uint32_t inv_shift; /* stride's trailing zero bits */
    uint64_t inv;       /* inverse of stride's odd factor mod 2^64 */
    int64_t headroom;   /* peak_live - live; never negative outside alloc */
    uint64_t peak_live;
    uint64_t total_allocs;
    /* handle resolution */
    uint8_t **bases;    /* chunk base per record, NULL while not usable */
    uint32_t n_bases;   /* records in use: [0, n_bases) */
    uint32_t slot_bits; /* handle bits 0..slot_bits-1: slot; above: record + 1 */
    uint32_t per_chunk;
    uint32_t slots_off;
    uint32_t salt;      /* xored into the generation bits of this pool's handles */
    uint32_t sync;      /* the fm_sync policy: the library dispatches on it */
    /* THREAD_CACHE's inline paths */
    uint64_t tc_id;      /* the pool's unique id; UINT64_MAX (no entry's) under other policies */
    uintptr_t base_mask; /* ptr & base_mask: the chunk (its meta words) of an item */
} fm__pool_hot;

/* FM_SYNC_THREAD_CACHE: a thread's magazine of free slots of one pool. The
 * library makes, lists and frees these; the inline paths below only pop and
 * push on the one fm__tc_last names. */
#define FM__TC_SLOTS 64
typedef struct fm__tc_entry fm__tc_entry;
struct fm__tc_entry {
    /* Written by the owning thread only (but id, hint_slots), read by stats
     * and destroy: accessed atomically. */
    uint64_t id;         /* the pool's id; 0 once the pool is destroyed */
    uint32_t count;      /* slots[0, count) are free slots of the pool */
    uintptr_t hint_slots; /* first slot of a chunk of the pool this thread freed
                             into; trim resets it */
    uint32_t *hint_meta;  /* that chunk's meta words (valid while hint_slots is) */
    /* The inline free's last slot, not yet on slots[] (NULL: none), and its
     * meta word (whose index in its chunk's words is its slot_idx): as with
     * NONE's cur_next_slot, an alloc right after a free takes it back without
     * reading count or slots[]. Only pool.h's inline free sets it, and only
     * while slots[] has room for it; the library moves it onto slots[]
     * before it uses the magazine. */
    void *next_slot;
    uint32_t *next_meta;
    uint64_t allocs;     /* items handed out */
    uint64_t taken;      /* THREAD_CACHE: slots taken from the pool's depot minus
                            those given back (mod 2^64); frees are not counted
                            but derived (see pool.c) */
    uint64_t frees;      /* LOCKFREE: items freed */
    fm_pool *pool;
    fm__tc_entry *prev, *next; /* the pool's list, under its lock */
    void *slots[FM__TC_SLOTS];
    uint32_t slot_idx[FM__TC_SLOTS]; /* slots[i]'s index in its chunk: its meta word */
};
/* next_slot's index in its chunk: its meta word's place among the chunk's
 * (base_mask: the pool's). */
static inline uint32_t fm__tc_next_idx(const fm__tc_entry *e, uintptr_t base_mask) {
    return (uint32_t)(e->next_meta - (uint32_t *)((uintptr_t)e->next_slot & base_mask));
}

#if defined(__GNUC__) || defined(__clang__)
#include "framemem/detail/atomic.h"
/* The calling thread's entry used last (never NULL: an entry with id 0 when
 * there is none). initial-exec: one %fs-relative load, also if the library is
 * built as a shared object (which then needs static TLS space, as glibc's own
 * variables do). */
extern __thread fm__tc_entry *fm__tc_last __attribute__((tls_model("initial-exec")));
#endif

/* Handle bits: 0..31 location ((record + 1) << slot_bits | slot), 32..62 the
 * slot's generation xor the pool's salt. */
static inline void *fm__pool_resolve_inline(const fm_pool *pool, fm_handle h) {
    const fm__pool_hot *hot = (const fm__pool_hot *)(const void *)pool;
    uint32_t loc = (uint32_t)h.bits;
    uint32_t rec = (loc >> hot->slot_bits) - 1u; /* null: wraps, fails below */
    uint32_t slot = loc & ((1u << hot->slot_bits) - 1u);
    if (rec >= hot->n_bases || slot >= hot->per_chunk) return NULL;
    uint8_t *base = hot->bases[rec];
    if (!base) return NULL;
    /* xor, not or: a handle with bit 63 set (never made) cannot match. */
    uint32_t want = FM__META_LIVE ^ ((uint32_t)(h.bits >> 32) ^ hot->salt);
    if (((const uint32_t *)(const void *)base)[slot] != want) return NULL;
    return base + hot->slots_off + (size_t)slot * hot->stride;
}

/* The slot index of the address off bytes past a chunk's first slot, by
 * exact division by the stride with a multiply and a rotate (Granlund &
 * Montgomery; inv and shift are the pool's): a slot start at index j gives
 * j; any other address, inside an item, before the slots or in another
 * chunk, gives a value far above every slot index. */
static inline uint64_t fm__exact_index(uintptr_t off, uint64_t inv, uint32_t shift) {
    uint64_t x = off * inv;
    return (x >> shift) | (x << ((64u - shift) & 63u));
}

/* The slot index of ptr in the current chunk (see fm__exact_index). */
static inline uint64_t fm__pool_hot_index(const fm__pool_hot *h, const void *ptr) {
    return fm__exact_index((uintptr_t)ptr - (uintptr_t)h->cur_slots, h->inv, h->inv_shift);
}


void *fm__pool_alloc_slow(fm_pool *pool);
#if defined(__GNUC__) || defined(__clang__)
/* cold: a NONE free outside the current chunk calls it, and the inline free
 * stays laid out for the common case (gcc otherwise keeps a register copy
 * of the counter it decrements in the alloc, two instructions per pair). */
__attribute__((cold))
#endif
void fm__pool_free_slow(fm_pool *pool, void *item);

#if defined(FM_TRACK_SITES) && !defined(FM__BUILDING_POOL)
#define fm_pool_alloc(pool) fm_pool_alloc_at((pool), __FILE__, __LINE__)
#define fm_pool_alloc_n(pool, out, n) fm_pool_alloc_n_at((pool), (out), (n), __FILE__, __LINE__)
#define fm_pool_new(pool) fm_pool_new_at((pool), __FILE__, __LINE__)
#elif defined(NDEBUG) && !defined(FM__SANITIZED) && !defined(FM_NO_INLINE) &&     \
    !defined(FM__BUILDING_POOL) && (defined(__GNUC__) || defined(__clang__))
#define FM__INLINE_FAST_PATH 1

/* THREAD_CACHE's alloc of a cached slot: sets live (bit 31) in its meta
 * word; false, with the word unchanged, when it was set already. A relaxed
 * load and store, no CAS (see Threads). */
static inline bool fm__meta_set_live(uint32_t *w) {
    uint32_t m = FM__ATOMIC_LOAD(w, RELAXED);
    if (__builtin_expect((int32_t)m < 0, 0)) return false;
    FM__ATOMIC_STORE(w, m | FM__META_LIVE, RELAXED);
    return true;
}

/* The owning thread's count of its allocations, read by other threads for
 * stats. On x86-64 one add to memory: an aligned 8-byte store is never seen
 * torn, as the relaxed load and store elsewhere (three instructions; no
 * compiler turns them into one). */
static inline void fm__tc_count_alloc(uint64_t *allocs) {
#if defined(__x86_64__)
    __asm__("addq $1, %0" : "+m"(*allocs) : : "cc");
#else
    FM__ATOMIC_STORE(allocs, *allocs + 1, RELAXED);
#endif
}

/* THREAD_CACHE: a pop from this thread's magazine for the pool (its
 * next_slot first). */
static inline void *fm__pool_alloc_tc(fm_pool *pool) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    fm__tc_entry *e = fm__tc_last;
    /* A slot found live already was served from another thread's cache too
     * (see Threads): the library drops this copy and reports. */
    if (__builtin_expect(FM__ATOMIC_LOAD(&e->id, RELAXED) == h->tc_id, 1)) {
        uint8_t *slot = (uint8_t *)FM__ATOMIC_LOAD(&e->next_slot, RELAXED);
        if (__builtin_expect(slot != NULL, 1)) {
            if (__builtin_expect(fm__meta_set_live(e->next_meta), 1)) {
                FM__ATOMIC_STORE(&e->next_slot, NULL, RELAXED);
                fm__tc_count_alloc(&e->allocs);
                return slot;
            }
        } else {
            uint32_t n = e->count;
            if (__builtin_expect(n != 0, 1)) {
                slot = (uint8_t *)e->slots[n - 1];
                if (!slot) __builtin_unreachable(); /* callers' NULL tests fold away */
                uint32_t *meta = (uint32_t *)((uintptr_t)slot & h->base_mask) + e->slot_idx[n - 1];
                if (__builtin_expect(fm__meta_set_live(meta), 1)) {
                    FM__ATOMIC_STORE(&e->count, n - 1, RELAXED);
                    fm__tc_count_alloc(&e->allocs);
                    return slot;
                }
            }
        }
    }
    return fm__pool_alloc_slow(pool);
}

/* --*headroom < 0, as one decrement of memory and a branch on its sign. gcc
 * otherwise loads, decrements, stores and tests the word in four
 * instructions when the caller's code around it keeps a register busy
 * (which depends on the caller), and the pair's count moves with it. */
static inline bool fm__headroom_taken(int64_t *headroom) {
#if defined(__x86_64__)
    __asm__ goto("subq $1, %0\n\tjs %l[below]" : "+m"(*headroom) : : "cc" : below);
    return false;
below:
    return true;
#else
    return --*headroom < 0;
#endif
}

static inline void *fm__pool_alloc_inline(fm_pool *pool) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    uint8_t *slot = h->cur_next_slot;
    uint32_t *meta;
    if (__builtin_expect(slot != NULL, 1)) {
        h->cur_next_slot = NULL;
        meta = h->cur_next_meta;
    } else if (h->tc_id != UINT64_MAX) {
        return fm__pool_alloc_tc(pool);
    } else if (__builtin_expect(h->cur_top != 0, 1)) {
        size_t idx = h->cur_stack[--h->cur_top];
        slot = h->cur_slots + idx * h->stride;
        meta = (uint32_t *)h->cur_base + idx;
    } else {
        return fm__pool_alloc_slow(pool);
    }
    if (!slot) __builtin_unreachable(); /* callers' NULL tests fold away */
    *meta |= FM__META_LIVE;
    h->total_allocs++;
    if (__builtin_expect(fm__headroom_taken(&h->headroom), 0)) {
        h->headroom = 0;
        h->peak_live++;
    }
    return slot;
}

/* A free's meta word update: clears live (bit 31) and bumps the generation by
 * adding INT32_MIN + 1. As a signed add it overflows exactly when the word
 * was live with a generation below the maximum (every other word stays in
 * range), so the overflow flag is the whole check. true when it was; false
 * with the word unchanged otherwise (not live, or a slot to retire). */
static inline bool fm__meta_free_in_place(uint32_t *w) {
#if defined(__x86_64__)
    /* The add goes to memory and its flag decides: two instructions. From C
     * (load, compare, branch, add, store) it is five, and compilers expand
     * __builtin_add_overflow with overflow taken as the rare case, which
     * here is the common one. The undo runs only for a bad free. */
    __asm__ goto("addl %1, %0\n\tjno %l[bad]" : "+m"(*w) : "i"(INT32_MIN + 1) : "cc" : bad);
    return true;
bad:
    *w -= (uint32_t)INT32_MIN + 1u;
    return false;
#else
    int32_t m = (int32_t)*w;
    if (m >= -1) return false;
    *w = (uint32_t)m + ((uint32_t)INT32_MIN + 1u);
    return true;
#endif
}

/* THREAD_CACHE: a slot start of the chunk this thread freed into last, live,
 * becomes the magazine's next_slot (the one before it moves onto slots[],
 * which must have room). The live bit goes with a relaxed load and store,
 * not a CAS (see Threads above). */
static inline void fm__pool_free_tc(fm_pool *pool, void *item) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    fm__tc_entry *e = fm__tc_last;
    uintptr_t hs = FM__ATOMIC_LOAD(&e->hint_slots, RELAXED);
    uint64_t si = fm__exact_index((uintptr_t)item - hs, h->inv, h->inv_shift);
    if (__builtin_expect(FM__ATOMIC_LOAD(&e->id, RELAXED) == h->tc_id &&
                             si < h->per_chunk,
                         1)) {
        uint32_t *meta = e->hint_meta + si;
        uint32_t m = FM__ATOMIC_LOAD(meta, RELAXED);
        if (__builtin_expect((int32_t)m < -1, 1)) {
            void *prev = FM__ATOMIC_LOAD(&e->next_slot, RELAXED);
            if (prev) {
                /* n < FM__TC_SLOTS - 1: slots[] keeps room for next_slot. */
                uint32_t n = e->count;
                if (__builtin_expect(n >= FM__TC_SLOTS - 1, 0)) goto slow;
                e->slots[n] = prev;
                e->slot_idx[n] = fm__tc_next_idx(e, h->base_mask);
                FM__ATOMIC_STORE(&e->count, n + 1, RELAXED);
            }
            FM__ATOMIC_STORE(meta, m + (FM__META_LIVE + 1u), RELAXED);
            e->next_meta = meta;
            FM__ATOMIC_STORE(&e->next_slot, item, RELAXED);
            return;
        }
    }
slow:
    fm__pool_free_slow(pool, item);
}

static inline void fm__pool_free_inline(fm_pool *pool, void *item) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    /* A THREAD_CACHE pool skips the index arithmetic. */
    if (h->tc_id == UINT64_MAX) {
        uint64_t idx = fm__pool_hot_index(h, item);
        uint8_t *prev = h->cur_next_slot;
        if (__builtin_expect(idx < h->cur_bump, 1) &&
            __builtin_expect(!prev || h->cur_next != UINT32_MAX, 1)) {
            uint32_t *meta = (uint32_t *)h->cur_base + idx;
            if (__builtin_expect(fm__meta_free_in_place(meta), 1)) {
                if (prev) h->cur_stack[h->cur_top++] = (uint16_t)h->cur_next;
                h->cur_next_slot = (uint8_t *)item;
                h->cur_next_meta = meta;
                h->cur_next = (uint32_t)idx;
                h->headroom++;
                return;
            }
        }
        fm__pool_free_slow(pool, item); /* another chunk, or misuse */
        return;
    }
    fm__pool_free_tc(pool, item);
}

#define fm_pool_alloc(pool) fm__pool_alloc_inline(pool)
#define fm_pool_free(pool, item) fm__pool_free_inline((pool), (item))
#define fm_pool_resolve(pool, h) fm__pool_resolve_inline((pool), (h))
#endif

/// Grows now until capacity >= the argument (prefaulting if the desc says so).
/// false with FM_ERR_POOL_FULL (FIXED, or above max_capacity) or
/// FM_ERR_OUT_OF_MEMORY; the pool is unchanged on failure.
bool fm_pool_reserve(fm_pool *pool, uint32_t capacity);
/// Gives fully empty chunks back to the backing allocator, never going below
/// initial_capacity; returns the bytes released. THREAD_CACHE flushes the
/// caller's cache first, LOCKFREE drains the shared stack first (other
/// threads' caches keep their chunks).
size_t fm_pool_trim(fm_pool *pool);
/// true when item is a live item of this pool (no error is reported). O(1).
bool fm_pool_owns(const fm_pool *pool, const void *item);
/// Calls fn on every live item. fn may free the item it is given; items
/// allocated during the walk may or may not be visited.
void fm_pool_foreach(fm_pool *pool, fm_item_fn fn, void *user);

/// Fills out with the pool's counters (see FM_POOL_STATS_FIELDS).
void fm_pool_get_stats(const fm_pool *pool, fm_pool_stats *out);
/// The desc with every default resolved (name points into the pool).
fm_pool_desc fm_pool_get_desc(const fm_pool *pool);
const char *fm_pool_name(const fm_pool *pool);
/* ------------------------------------------------------- handles and refs */

/// The handle of a live item; FM_HANDLE_NULL and FM_ERR_FOREIGN_POINTER for
/// anything else (a freed item included; FM_ERR_INTERIOR_POINTER for a
/// pointer inside an item). O(1).
fm_handle fm_pool_handle(const fm_pool *pool, const void *item);
/// The item h refers to, or NULL when it is gone (freed, reused, trimmed) or
/// h is null or of another pool. NULL is the expected answer of a weak
/// reference, so nothing is reported. O(1), no search.
void *(fm_pool_resolve)(const fm_pool *pool, fm_handle h);

/* Items start with a count of 1; the count lives beside the slot (allocated
 * for a chunk on its first retain), never in the item. */
/// Adds a reference. FM_ERR_REFCOUNT for a freed item, FM_ERR_FOREIGN_POINTER
/// for one not of this pool, FM_ERR_OUT_OF_MEMORY when the count storage
/// cannot be had; nothing changes then.
void fm_pool_retain(fm_pool *pool, void *item);
/// Drops a reference; at zero runs the dtor and frees the item, returning
/// true. Errors as fm_pool_retain (returns false, nothing freed).
bool fm_pool_release(fm_pool *pool, void *item);
/// The item's count; 0 with FM_ERR_REFCOUNT / FM_ERR_FOREIGN_POINTER for an
/// item that is not live.
uint32_t fm_pool_refcount(const fm_pool *pool, const void *item);

/* ----------------------------------------------------------------- threads */

/// FM_SYNC_NONE: the calling thread becomes the pool's owner (see Threads).
/// No effect under other policies or in release builds.
void fm_pool_set_owner_thread(fm_pool *pool);
/// FM_SYNC_NONE, called by the owner: the pool has no owner until a thread
/// next uses it. FM_ERR_WRONG_THREAD (debug builds) from a non-owner.
void fm_pool_release_owner_thread(fm_pool *pool);
/// FM_SYNC_THREAD_CACHE: returns the calling thread's cached free slots of
/// this pool to the pool (so trim can release their chunks). Other policies:
/// nothing to do.
void fm_pool_flush_thread_cache(fm_pool *pool);

/// Walks every chunk and checks the pool's invariants (counts, free stacks,
/// live bits); FM_OK or the first problem found, reported. O(capacity).
fm_error fm_pool_check(const fm_pool *pool);

/* ------------------------------------------------------------ typed sugar */

/* FM_POOL_DESC(particle, .initial_capacity = 4096): a desc value whose size
 * and align come from the type, named after it unless .name is given. */
#define FM_POOL_DESC(T, ...)                                                    \
    (fm_pool_desc) {                                                            \
        .type_name = #T, .item_size = sizeof(T), .item_align = alignof(T), __VA_ARGS__ \
    }

/* FM_POOL_DECLARE_TYPED(particle, particle_pool) declares
 * particle *particle_pool_alloc(fm_pool *), particle_pool_free,
 * particle_pool_new and particle_pool_delete. */
#if defined(__GNUC__) || defined(__clang__)
#define FM__MAYBE_UNUSED __attribute__((unused))
#else
#define FM__MAYBE_UNUSED
#endif
#define FM_POOL_DECLARE_TYPED(T, prefix)                                        \
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

#ifdef __cplusplus
}
#endif
#endif /* FRAMEMEM_POOL_H */
