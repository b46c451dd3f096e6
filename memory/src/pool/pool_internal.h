/* pool/pool_internal.h: what the files of pool/ share (one compile unit,
 * pool/unit.c; never installed).
 *
 * Layout of a chunk (chunk_bytes, a power of two, aligned to itself):
 *
 *     [ meta: uint32 per slot | free stack: uint16 per slot |
 *       (FM_TRACK_SITES: file:line per slot) | pad to item_align |
 *       slot 0 | slot 1 | ... ]
 *
 * Meta bit 31 is the live bit, bits 0..30 the slot's generation; a free
 * bumps the generation. The free stack holds the indices of the chunk's free
 * slots, so the pool keeps nothing in a free slot. Chunk bookkeeping (the
 * stack's top, the bump index over never-used slots, the live count) lives
 * in records beside the pool, so growing writes nothing into the new
 * chunks: their pages stay untouched until used. A chunk gets its record
 * when it first becomes current (fm__open_pending).
 *
 * The current chunk's state is cached in the pool's first cache line
 * (fm__pool_hot, detail/pool.h) so that alloc and free of the common case
 * read that line plus the slot and its meta word. A pointer's chunk is
 * `ptr & base_mask`; whether that chunk is ours is answered by the
 * current-chunk compare, a direct-mapped cache of chunk bases (chunk number
 * mod 64) or the hash table of chunk bases, so a foreign pointer is never
 * dereferenced.
 *
 * Words that lock-free paths read while others write them (meta words,
 * chunk-table entries, chunk bases, the arrays holding them) are accessed
 * atomically under every policy; relaxed loads and stores are plain moves.
 */
#ifndef FRAMEMEM_POOL_INTERNAL_H
#define FRAMEMEM_POOL_INTERNAL_H

#include "framemem/clock.h"
#include "framemem/pool.h"
#include "internal.h"
#include "platform/os.h"
#include "platform/thread.h"
#include "tag_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FM__NONE UINT32_MAX
#define FM__LIVE FM__META_LIVE
#define FM__GEN_MAX 0x7FFFFFFFu
/* Generation exhausted: the slot is retired for good, so no stale reference
 * to any of its earlier items can ever match a later one. A free slot's
 * generation is never 0 (freeing bumps it), so 0 marks retirement. */
#define FM__RETIRED 0u
/* A chunk-table entry whose chunk was trimmed: probes go on past it. */
#define FM__TOMB (UINT32_MAX - 1u)
/* Resets between two renumberings of a pool's generations (pool/reset.c);
 * every slot's first generation is at least the resets left. */
#define FM__GEN_BUDGET (1u << 16)
/* A pool's first chunk up to this size is made resident at create (see
 * fm__open_first_chunk). */
#define FM__PREFAULT_FIRST ((size_t)64 << 10)

/* Wrong-thread detection of FM_SYNC_NONE pools: debug and sanitized builds. */
#if !defined(NDEBUG) || defined(FM__SANITIZED)
#define FM__THREAD_CHECKS 1
#endif

enum {
    FM__CHUNK_UNUSED = 0, /* record slot free for reuse */
    FM__CHUNK_FRESH,      /* just opened (fm__open_pending), never handed out a slot */
    FM__CHUNK_CURRENT,    /* the chunk allocations come from; state in the pool */
    FM__CHUNK_PARTIAL,    /* in the partial list: live items and room for more */
    FM__CHUNK_EMPTY,      /* in the empty list: no live items */
    FM__CHUNK_FULL,       /* every usable slot is live or retired; in no list */
};

typedef struct fm__site {
    const char *file;
    int line;
} fm__site;

/* Where a chunk's parts begin (see the layout above). */
typedef struct fm__chunk_layout {
    uint32_t stack_off, sites_off, slots_off;
} fm__chunk_layout;

/* Slots a chunk holds at most: 16-bit stack entries below 2^15, so that no
 * word of the stack reads as a live meta word (fm__layout). */
#define FM__MAX_PER_CHUNK 32768u

typedef struct fm__list {
    uint32_t head, tail;
} fm__list;

enum { FM__DM_SLOTS = 64 };

/* NONE and MUTEX: an entry of a pool's direct-mapped cache of chunk records
 * (see fm_pool.dm). key: the chunk's base, plus FM__DM_CLEAN while the
 * chunk is clean (see fm__dm_key); 0, with rec NULL: empty. */
typedef struct fm__dm {
    uintptr_t key;
    struct fm__chunk *rec;
} fm__dm;
#define FM__DM_CLEAN ((uintptr_t)2)

/* Chunks of one growth still without a record (see fm_pool.spans): use_os,
 * the next `left` chunks of one mapping from `next` on; otherwise a chain of
 * chunks from the allocator, linked through their first bytes. LOCKFREE: link
 * arrays for them, chained likewise.
 * Where the OS has no has_partial_release (Windows), a use_os span also
 * stands for its mapping (`region`) until every chunk of it has gone back
 * (`held`: chunks not given back, with a record or not), because the OS
 * frees a reservation only whole: a chunk trimmed there is decommitted (its
 * memory goes back, its address space stays reserved) and the whole
 * mapping is released with its last chunk. A used-up span whose chunks are
 * still held is in no list; the records of its chunks point at it
 * (fm__rec_span). Elsewhere a chunk leaves its span when it gets a record
 * (`held` counts the chunks without one) and goes back to the OS on its
 * own, so a used-up span retires at once (see fm__open_pending). */
typedef struct fm__span {
    struct fm__span *next_span;
    uint8_t *next;
    uint8_t *chain;
    uint8_t *links;
    uint8_t *region; /* use_os: the growth's mapping of its chunks */
    size_t region_bytes;
    uint32_t left;
    uint32_t held;       /* use_os: chunks of region not given back */
    uint32_t last_limit; /* the span's last chunk's usable slots (max_capacity) */
} fm__span;

typedef struct fm__chunk {
    uint8_t *base;
    uint32_t free_top;  /* free slot indices on the chunk's stack (see fm__stack) */
    uint32_t bump;      /* slots [0, bump) have been handed out since the chunk's
                           memory came, or since the pool's last reset */
    uint32_t hw;        /* at a reset: slots [0, hw) were handed out before it
                           (their words are old, see fm__bump_reused); 0 before */
    uint32_t limit;     /* usable slots: items_per_chunk, or fewer at max_capacity */
    uint32_t live;      /* stale while the chunk is current (see fm__park_current) */
    uint32_t retired;
    uint32_t prev, next; /* links in the pool's lists (partial, empty, fresh, unused) */
    uint32_t state;
    uint32_t gen_floor; /* first generation of this record's slots: above every
                           generation an earlier chunk of the record handed out */
    uint32_t idx;       /* this record's index */
    uint64_t *refs;     /* lazily: per slot, generation << 32 | (count - 1) */
} fm__chunk;

/* FM_SYNC_LOCKFREE: the shared stack of free slots, on a cache line of its
 * own with the counters every alloc and free bumps anyway. */
typedef struct fm__lf_state {
    _Alignas(64) uint64_t head; /* tag << 32 | global slot index, FM__NONE: empty */
} fm__lf_state;

/* Chunk tables and base arrays replaced by growth that lock-free readers may
 * still hold (sync != NONE): kept until destroy. Sizes double, so a few
 * dozen at most. */
enum { FM__MAX_RETIRED_ARRAYS = 48 };
/* Chunk records live in segments that never move: segment s holds records
 * [2^s - FM__REC_FIRST, 2^(s+1) - FM__REC_FIRST). */
#define FM__REC_FIRST 8u
#define FM__REC_SEGS 32

struct fm_pool {
    _Alignas(64) fm__pool_hot hot; /* first, one cache line: the inline fast paths read it */
    /* The current-chunk state the core works on: &hot for FM_SYNC_NONE;
     * &shadow otherwise, with hot's current chunk kept empty so the inline
     * fast paths of detail/pool.h always call the library. */
    fm__pool_hot *cs;
    uint32_t stack_off; /* a chunk's free stack: per_chunk 16-bit slot indices */
    uint32_t sites_off; /* FM_TRACK_SITES: per-slot allocation sites */
    uint32_t cur_idx;
    /* NONE and MUTEX: the chunk cache, so that the lookup of a free
     * outside the current chunk is one load and a compare that goes the
     * same way every time while no two chunks share an entry (a growth maps
     * its chunks side by side). Where the last free's chunk was remembered
     * instead, random frees over a few chunks mispredicted that compare
     * about as often as not. Entries are written when a chunk first becomes
     * current and when the table finds one, and cleared when it gives its
     * memory back. These 64 first; past 64 chunks growth makes a cache of at
     * least twice as many entries as chunks (empty: it fills as chunks open
     * and as frees find them in the table), so random frees over hundreds of
     * chunks (1 KiB items, 10,000 live: 159) skip the table too. An entry
     * by chunk number (base >> chunk_shift, mod dm_mask + 1). dm_mask
     * first: it fills the 4 bytes after cur_idx. */
    uint32_t dm_mask;
    fm__dm *dm;
    fm__dm dm_first[FM__DM_SLOTS];
    uint32_t win_chunks; /* the size of the pool's next growth window (see win_next);
                            0: none */
    /* NONE and MUTEX: a single free outside the current chunk parks its slot
     * in hot's next slot (cur_next UINT32_MAX) instead of pushing it onto its
     * chunk's stack, so an alloc right after takes that slot back, its cache
     * lines warm, as glibc's tcache does. Its chunk still counts it live
     * (c->live, live_other) until fm__settle_next files it, which every path
     * that moves the next slot or switches chunks does first. */
    uint64_t live_other; /* live items outside the current chunk, parked one included */
    uintptr_t base_mask;

    /* ---- geometry and policy */
    fm_pool_desc desc; /* resolved; desc.name points at name[] below */
    fm__tag_link tag_link; /* in desc.tag's list of objects */
    uint32_t item_size;
    uint32_t item_align;
    size_t chunk_bytes;
    bool use_os; /* chunks come from fm__os_reserve */
    bool os_chunks_alone; /* use_os, and a chunk goes back to the OS on its own
                             (has_partial_release): see fm__span */
    uint32_t chunk_shift; /* after the two bools, in what would be padding */

    /* ---- chunks */
    /* Records live in segments that never move (see fm__chunk_at): segment
     * s holds records [2^s - FM__REC_FIRST, 2^(s+1) - FM__REC_FIRST), so a
     * growth adds a segment, made in one allocation and untouched, and never
     * copies the records before it. 0: the segment is not made yet. */
    uintptr_t seg[FM__REC_SEGS];
    uint32_t chunk_cap;    /* records the segments hold */
    /* hot.bases, the flat arrays handles resolve through, hold bases_cap
     * records after their entry 0 (the dead chunk, see fm__bases_bytes). The
     * next, bigger one is made by a growth before it is needed and filled a
     * few entries per chunk opening (every store goes to both), and
     * replaces it once complete (see fm__bases_step): no growth or opening
     * copies the whole array. */
    uint32_t bases_cap;
    uintptr_t *bases_next; /* NULL: none under way */
    uint32_t bases_next_cap;
    uint32_t bases_copied; /* entries [0, bases_copied) are in bases_next */
    uint32_t chunk_top;    /* records ever used: [0, chunk_top) */
    uint32_t chunk_count;  /* records holding memory */
    uint32_t max_chunks;   /* records a handle can name (see fm__geometry) */
    uint32_t unused_head; /* stack of UNUSED records below chunk_top (via next) */
    fm__list partial;     /* FIFO: a chunk waits longest, gathers most frees */
    fm__list empty;       /* used last, so they stay empty for fm_pool_trim */
    /* Chunks a growth mapped that have no record yet: one gets its record
     * when it first becomes current (fm__next_chunk), so a growth costs the
     * same whatever it adds. Oldest first. */
    struct fm__span *spans, *spans_tail;
    struct fm__span *spare_spans; /* used up, kept for the next growth */
    uint8_t *os_below; /* use_os: the last growth's mapping; the next asks for the
                          range just below it (fm__os_reserve_below) */
    /* use_os, where the OS has windows (fm__os_caps): address space mapped
     * ahead for later growths, [win_next, win_end): chunks are taken from
     * its top, arrays from its bottom (see fm__window_take). */
    uint8_t *win_next, *win_end;
    uint32_t *table; /* open addressing: chunk base -> record index + 1 */
    uintptr_t table_pub; /* table as lock-free readers see it (fm__table_tag) */
    uintptr_t old_pub;   /* old_table likewise */
    uint32_t table_cap;
    uint32_t table_used; /* entries that are not empty (tombstones too) */
    uint32_t *old_table; /* the table before the last growth's, while its entries
                            move to the new one (see pool/chunks.c); else NULL */
    uint32_t old_cap;
    uint32_t old_pos;    /* its entries [0, old_pos) have moved */
    uint32_t old_used;   /* its non-empty entries when it was replaced */

    /* ---- threads */
    fm_sync sync;
    uintptr_t owner;  /* FM_SYNC_NONE, debug builds: the owning thread's token, 0 = none */
    uint64_t id;      /* unique among all pools ever created: thread caches key on it */
    fm__mutex lock; /* sync != NONE: recursive, so dtors and foreach callbacks
                             may call back into the pool */
    fm__pool_hot shadow;
    uint32_t n_retired_arrays;
    void *retired_arrays[FM__MAX_RETIRED_ARRAYS];
    size_t retired_bytes[FM__MAX_RETIRED_ARRAYS];
    fm__lf_state lf;
    fm__tc_entry *tc_entries;     /* the entries of threads using the pool (tcache.c) */
    uint64_t tc_gone_allocs;      /* counters of freed entries and of calls without one */
    uint64_t tc_gone_frees;

    /* ---- resets (see pool/reset.c) */
    uint32_t gen_budget; /* resets left before the generations are renumbered;
                            every slot handed out has a generation >= it */
    uint32_t walking;    /* foreach walks (and dtor walks of reset) under way */

    /* ---- counters */
    uint64_t capacity; /* sum of limits of held chunks, minus retired slots */
    uint64_t retired;
    uint64_t failed_allocs;
    uint64_t misuse_count;
    uint64_t grow_events;
    uint64_t grow_ticks_total;
    uint64_t grow_ticks_max;
    uint64_t alloc_grow_events; /* of grow_events: inside an allocation call */
    uint64_t alloc_grow_ticks;
    uint64_t ahead_grow_events; /* of grow_events: fm_pool_grow_ahead's */
    uint64_t ahead_grow_ticks;
    uint64_t trim_events;
    uint64_t bytes_trimmed;
    uint64_t resets;
    size_t bytes_reserved;
    size_t self_bytes;

    /* ---- watched pools (pool/watch.c): timing, FM_HOOKS */
    uint32_t watch_scale; /* what a timed call counts for: 0 timing off, 1 every
                             call, FM_POOL_TIMING_SAMPLE when sampled */
    uint64_t alloc_ticks; /* inside alloc calls, timed ones times watch_scale */
    uint64_t free_ticks;
    uint64_t timed_calls;

    char name[];
};

/* Why fm__grow grows: the stats count each kind apart (telemetry tells a
 * growth inside an allocation, the hitch, from maintenance). */
typedef enum fm__grow_kind {
    FM__GROW_CREATE,  /* the initial chunks: not an event */
    FM__GROW_ALLOC,   /* an allocation found no room */
    FM__GROW_RESERVE, /* fm_pool_reserve */
    FM__GROW_AHEAD,   /* fm_pool_grow_ahead */
} fm__grow_kind;

/* Ticks the calling thread spent in growths inside alloc calls, for the
 * watch (pool/watch.c) to count them apart. */
static FM__THREAD_LOCAL uint64_t fm__watch_grown_tls;
#define fm__watch_grown FM__TLS(fm__watch_grown_tls)

/* hot.sync of a watched pool (pool/watch.c): its policy with this bit, so
 * that the library's one test for a policy's path (hot.sync != NONE) leads
 * there too; the inline paths never read hot.sync. */
#define FM__SYNC_WATCHED 0x100u

/* What fm__live_to_cached did. */
enum { FM__NOT_FREED, FM__FREED_TO_CACHE, FM__FREED_RETIRED };

typedef struct fm__loc {
    uint32_t chunk;
    uint32_t slot;
    uint32_t meta;
} fm__loc;

/* ====================================== functions the files share */

/* chunks.c: records, lists, the chunk table, lookups, growth, release, layout */
static uint32_t fm__chunk_bump(const fm_pool *p, uint32_t idx);
static bool fm__chunk_exhausted(const fm__chunk *c);
static uint32_t fm__chunk_used(const fm_pool *p, uint32_t idx);
static uint32_t fm__chunk_live(const fm_pool *p, uint32_t idx);
static void fm__file_chunk(fm_pool *p, uint32_t idx);
static void fm__geometry(fm_pool *p);
static uint32_t fm__layout(size_t cb, uint32_t stride, size_t item_align, fm__chunk_layout *out);
static bool fm__grow(fm_pool *p, uint64_t slots, fm__grow_kind kind);
static size_t fm__links_bytes(const fm_pool *p);
static void fm__list_init(fm__list *l);
static void fm__list_unlink(fm_pool *p, fm__list *l, uint32_t idx);
static fm_error fm__locate_fast(const fm_pool *p, const void *ptr, fm__loc *out);
static fm_error fm__locate_for(const fm_pool *p, const void *ptr, fm__loc *out);
static fm_error fm__locate_shared(const fm_pool *p, const void *ptr, fm__loc *out);
static bool fm__next_chunk(fm_pool *p);
static void fm__spans_release(fm_pool *p);
static void fm__release_chunk(fm_pool *p, uint32_t idx);
static bool fm__reserve_core(fm_pool *pool, uint32_t capacity);
static bool fm__grow_ahead_core(fm_pool *pool, uint32_t min_free);
static fm_error fm__shared_problem(const fm_pool *p, fm_error err, const void *ptr);
#ifdef FM_TRACK_SITES
static fm__site *fm__sites(const fm_pool *p, const uint8_t *base);
#endif
static void fm__table_delete(const fm_pool *p, uint32_t *table, uint32_t cap);
static void fm__array_delete(const fm_pool *p, void *mem, size_t bytes);
static void fm__base_store(fm_pool *p, uint32_t idx, uint8_t *base);
static size_t fm__bases_bytes(uint32_t cap);
static uintptr_t *fm__bases_block(uintptr_t *bases);
static void fm__bases_step(fm_pool *p, uint32_t n);
static uint32_t fm__table_find(const fm_pool *p, uintptr_t base);
static inline fm__chunk *fm__table_find_moving(fm_pool *p, uintptr_t base);
static size_t fm__trim_core(fm_pool *pool);

/* map.c: the process-wide chunk map */
static bool fm__map_prepare(uintptr_t base, size_t bytes, size_t chunk_bytes);
static void fm__map_set(uintptr_t base, size_t chunk_bytes, fm_pool *pool);

/* core.c: alloc and free, parking, batches, the depot */
static size_t fm__alloc_batch(fm_pool *p, void **out, size_t n);
static void *fm__alloc_core(fm_pool *pool);
static void *fm__cached_to_live(const fm_pool *p, void *slot);
static void fm__delete_core(fm_pool *pool, void *item);
static void fm__depot_put(fm_pool *p, void *slot);
static void *fm__depot_take(fm_pool *p, bool may_grow);
static void fm__free_batch(fm_pool *p, void *const *items, size_t n);
static void fm__free_checked(fm_pool *p, void *item, const char *op);
static void fm__free_located(fm_pool *p, void *item, const fm__loc *loc);
static int fm__live_to_cached(fm_pool *p, void *item, const fm__loc *loc, const char *op);
static void fm__misuse(fm_pool *p, fm_error err, const void *ptr, const char *op);
#ifdef FM_TRACK_SITES
static void fm__record_site(fm_pool *p, void *item, const char *file, int line);
#endif
static void fm__refile_after_free(fm_pool *p, uint32_t idx);
static void fm__settle_next(fm_pool *p);
static void fm__slot_to_free(const fm_pool *p, void *item);

/* tcache.c: THREAD_CACHE */
static void fm__count(uint64_t *c);
static uint64_t fm__entry_frees(const fm_pool *p, const fm__tc_entry *e);
static void *fm__tc_alloc(fm_pool *p);
static void fm__tc_free_entries(fm_pool *p);
static fm__tc_entry *fm__tc_entry_of(fm_pool *p, bool *uncached);
static void fm__tc_forget_hints(fm_pool *p);
static void fm__tc_drop_all(fm_pool *p);
static void fm__tc_free(fm_pool *p, void *item, const char *op);

/* lockfree.c: LOCKFREE */
static void *fm__lf_alloc(fm_pool *p);
static void fm__lf_drain(fm_pool *p);
static void fm__lf_free(fm_pool *p, void *item, const char *op);

/* refs.c: handles and reference counts */
static fm_handle fm__handle_core(const fm_pool *pool, const void *item);
static uint32_t fm__refcount_core(const fm_pool *pool, const void *item);
static bool fm__release_core(fm_pool *pool, void *item);
static void fm__retain_core(fm_pool *pool, void *item);

/* check.c */
static fm_error fm__check_core(const fm_pool *pool);

/* pool.c: policies around the core */
static size_t fm__alloc_n_cached(fm_pool *pool, void **out, size_t n);
static size_t fm__alloc_n_serial(fm_pool *pool, void **out, size_t n);
static bool fm__cached_policy(const fm_pool *p);
static void fm__free_n_cached(fm_pool *pool, void *const *items, size_t n);
static void fm__free_n_serial(fm_pool *pool, void *const *items, size_t n);
static void fm__lock(const fm_pool *p);
static bool fm__owner_ok(const fm_pool *p, const char *op);
static void *fm__policy_alloc(fm_pool *p);
static void fm__sync_free(fm_pool *p, void *item, const char *op);
static void fm__unlock(const fm_pool *p);

/* watch.c: timing and hooks */
static void *fm__watch_alloc(fm_pool *p);
static size_t fm__watch_alloc_n(fm_pool *p, void **out, size_t n);
static void fm__watch_free(fm_pool *p, void *item);
static void fm__watch_free_n(fm_pool *p, void *const *items, size_t n);
static void fm__hook_free_live(const fm_pool *p, const void *item);
/* ============================================ helpers of every file */

/* Slots out of the core: live items, plus (THREAD_CACHE, LOCKFREE) free slots
 * held by the caches or the shared stack. */
static inline uint64_t fm__live(const fm_pool *p) {
    return p->cs->peak_live - (uint64_t)p->cs->headroom - (p->cs->cur_next_slot != NULL);
}

static inline uint8_t *fm__slot(const fm_pool *p, const uint8_t *base, uint32_t idx) {
    return (uint8_t *)base + p->hot.slots_off + (size_t)idx * p->hot.stride;
}

/* The slot ptr starts in the chunk at base (fm__exact_index),
 * or FM__NONE for any other address. */
static inline uint32_t fm__slot_of(const fm_pool *p, uintptr_t base, const void *ptr) {
    uint64_t slot = fm__exact_index((uintptr_t)ptr - (base + p->hot.slots_off), p->hot.inv,
                                    p->hot.inv_shift);
    return slot < p->hot.per_chunk ? (uint32_t)slot : FM__NONE;
}

static inline uint32_t *fm__meta(uintptr_t base) { return (uint32_t *)base; }
static inline uint32_t fm__meta_get(uintptr_t base, uint32_t slot) {
    return FM__ATOMIC_LOAD(&fm__meta(base)[slot], RELAXED);
}
static inline void fm__meta_set(uintptr_t base, uint32_t slot, uint32_t v) {
    FM__ATOMIC_STORE(&fm__meta(base)[slot], v, RELAXED);
}

/* A chunk's stack of free slot indices, after its meta words. */
static inline uint16_t *fm__stack(const fm_pool *p, const uint8_t *base) {
    return (uint16_t *)(void *)((uint8_t *)base + p->stack_off);
}

/* Segment s of the records (see fm_pool.seg) is one allocation: n = 2^s
 * records, then their n LOCKFREE link arrays, then the n spans their chunks
 * came from (fm__rec_span); record idx is the segment's entry
 * idx + FM__REC_FIRST - n. */
static inline uint32_t fm__rec_seg_of(uint32_t idx) {
    return 31u - (uint32_t)__builtin_clz(idx + FM__REC_FIRST);
}
static inline fm__chunk *fm__chunk_at(const fm_pool *p, uint32_t idx) {
    uint32_t s = fm__rec_seg_of(idx);
    uintptr_t seg = FM__ATOMIC_LOAD(&p->seg[s], RELAXED);
    return (fm__chunk *)(void *)seg + (idx + FM__REC_FIRST - (1u << s));
}
/* LOCKFREE: record idx's link array (see pool/lockfree.c). */
static inline uint32_t **fm__links_slot(const fm_pool *p, uint32_t idx) {
    uint32_t s = fm__rec_seg_of(idx);
    uintptr_t seg = FM__ATOMIC_LOAD(&p->seg[s], ACQUIRE);
    return (uint32_t **)(void *)(seg + ((size_t)1 << s) * sizeof(fm__chunk)) +
           (idx + FM__REC_FIRST - (1u << s));
}
/* Record idx's chunk's span while that span stands for the chunk's
 * reservation (see fm__span: Windows), else NULL; read and written under
 * the pool's lock only. */
static inline struct fm__span **fm__rec_span(const fm_pool *p, uint32_t idx) {
    uint32_t s = fm__rec_seg_of(idx);
    uintptr_t seg = p->seg[s];
    return (struct fm__span **)(void *)(seg + ((size_t)1 << s) * (sizeof(fm__chunk) +
                                                                  sizeof(uint32_t *))) +
           (idx + FM__REC_FIRST - (1u << s));
}
/* Record idx's chunk base as handles and lock-free lookups read it: the
 * dead chunk (fm__dead_chunk) while it has none. Its meta origin plus 4
 * times the location field of its slot 0 (see fm__bases_put). */
static inline uint8_t *fm__base_get(const fm_pool *p, uint32_t idx) {
    const uintptr_t *bases = FM__ATOMIC_LOAD(&p->hot.bases, ACQUIRE);
    uintptr_t r = (uintptr_t)idx + 1; /* [0]: the dead chunk */
    return (uint8_t *)(FM__ATOMIC_LOAD(&bases[r], ACQUIRE) +
                       (r << p->hot.slot_bits) * sizeof(uint32_t));
}

/* 1 while hot's next slot is another chunk's, parked (see fm_pool). */
static inline uint32_t fm__parked(const fm_pool *p) {
    return p->cs->cur_next_slot && p->cs->cur_next == FM__NONE;
}

/* The chunk base of the parked slot: its meta word's (a park stores no
 * record, see fm__free_park_leaf). */
static inline uintptr_t fm__parked_base(const fm_pool *p) {
    return (uintptr_t)p->cs->cur_next_meta & p->base_mask;
}

/* The parked slot's index in its chunk: its meta word's place among the
 * chunk's. */
static inline uint32_t fm__parked_slot(const fm_pool *p) {
    return (uint32_t)(p->cs->cur_next_meta - fm__meta(fm__parked_base(p)));
}

/* 1 when the parked slot is chunk idx's. */
static inline uint32_t fm__parked_in(const fm_pool *p, uint32_t idx) {
    return fm__parked(p) && fm__parked_base(p) == (uintptr_t)fm__chunk_at(p, idx)->base;
}

/* A dead slot of chunk idx, not the current one, goes onto its chunk's
 * stack, which counts one item fewer (the caller takes it off live_other). */
static inline void fm__file_free_slot(fm_pool *p, fm__chunk *c, uint32_t slot) {
    uint32_t idx = c->idx;
    fm__stack(p, c->base)[c->free_top++] = (uint16_t)slot;
    c->live--;
    if (FM__UNLIKELY(c->state == FM__CHUNK_FULL || c->live == 0)) fm__refile_after_free(p, idx);
}

/* A free slot of the current chunk becomes its next one (see fm__pool_hot). */
static inline void fm__push_current(fm_pool *p, uint32_t idx) {
    fm__pool_hot *h = p->cs;
    if (h->cur_next_slot) fm__settle_next(p);
    h->cur_next_slot = h->cur_slots + (size_t)idx * h->stride;
    h->cur_next_meta = fm__meta(h->cur_base) + idx;
    h->cur_next = idx;
}

/* The common free, a live item of the current chunk in h (hot, for
 * fm_pool_free; cs, for a watched pool, whose hot is empty): true when it
 * was, and is freed; false, with nothing changed, for anything else. */
static inline bool fm__free_current(fm_pool *p, fm__pool_hot *h, void *item) {
    uint64_t idx = fm__pool_hot_index(h, item);
    if (!(idx < h->cur_bump && fm__meta_kill(fm__meta(h->cur_base) + idx, true))) return false;
    fm__slot_to_free(p, item);
    fm__push_current(p, (uint32_t)idx);
    return true;
}

/* The chunk cache's entry for a chunk base. */
static inline fm__dm *fm__dm_entry(const fm_pool *p, uintptr_t base) {
    return &p->dm[(base >> p->chunk_shift) & p->dm_mask];
}

/* A chunk's key in the cache: its base, plus FM__DM_CLEAN while no slot at
 * or past its bump index holds a word a reset left (hw <= bump): every word
 * there is then 0, so a live word is a slot handed out, and
 * fm__free_park_leaf needs neither the bump check nor the record, nor a test
 * for the current chunk. The current chunk's record has the bump index it
 * had when the chunk became current (hot's moves on, only up): a key clean
 * then stays right. A chunk a reset left words in is keyed by its base alone
 * until it is keyed again past them (as it stops or becomes current). */
static inline uintptr_t fm__dm_key(const fm__chunk *c) {
    bool clean = c->hw <= c->bump;
    return (uintptr_t)c->base | (clean ? FM__DM_CLEAN : 0);
}
/* true when key (a cache entry's) names the chunk at base. */
static inline bool fm__dm_is(uintptr_t key, uintptr_t base) {
    return (key & ~FM__DM_CLEAN) == base;
}

/* The record of the chunk at base in the cache, or NULL when it does not
 * hold it (an empty entry has none). */
static inline fm__chunk *fm__cached_rec(const fm_pool *p, uintptr_t base) {
    const fm__dm *e = fm__dm_entry(p, base);
    return fm__dm_is(e->key, base) ? e->rec : NULL;
}
/* Enters a chunk in the cache, in place of the one that shared its entry. */
static inline void fm__dm_set(fm_pool *p, fm__chunk *c) {
    fm__dm *e = fm__dm_entry(p, (uintptr_t)c->base);
    e->key = fm__dm_key(c);
    e->rec = c;
}
/* Rewrites a chunk's key where the cache holds it, after its bump index or
 * hw changed. */
static inline void fm__dm_refresh(fm_pool *p, const fm__chunk *c) {
    fm__dm *e = fm__dm_entry(p, (uintptr_t)c->base);
    if (e->rec == c) e->key = fm__dm_key(c);
}

/* NONE and MUTEX: the record of the chunk at base when it is not the current
 * one: the cache, else the table; NULL when base is not a chunk. */
static inline fm__chunk *fm__other_rec(const fm_pool *p, uintptr_t base) {
    fm__chunk *c = fm__cached_rec(p, base);
    if (FM__LIKELY(c != NULL)) return c;
    uint32_t idx = fm__table_find(p, base);
    return idx == FM__NONE ? NULL : fm__chunk_at(p, idx);
}
/* The same for a free: a chunk found in the table enters the cache, and one
 * found in the old table (see pool/chunks.c) moves to the new one on the
 * way, so that a pool that stops opening chunks does not look in both
 * tables for ever. */
static inline fm__chunk *fm__other_rec_moving(fm_pool *p, uintptr_t base) {
    fm__chunk *c = fm__cached_rec(p, base);
    if (FM__LIKELY(c != NULL)) return c;
    c = fm__table_find_moving(p, base);
    if (c) fm__dm_set(p, c);
    return c;
}
static inline uint32_t fm__other_chunk(const fm_pool *p, uintptr_t base) {
    const fm__chunk *c = fm__other_rec(p, base);
    return c ? c->idx : FM__NONE;
}

/* Finds the chunk and slot of ptr and says what is wrong with it, without
 * reporting: FM_OK (a live item), FOREIGN, INTERIOR or DOUBLE_FREE (a slot
 * that was handed out before and is free now, a reset's too). Never reads
 * foreign memory. */
static inline fm_error fm__locate(const fm_pool *p, const void *ptr, fm__loc *out) {
    uintptr_t a = (uintptr_t)ptr;
    uintptr_t base = a & p->base_mask;
    uint32_t idx = base == p->cs->cur_base ? p->cur_idx : fm__other_chunk(p, base);
    if (idx == FM__NONE) return FM_ERR_FOREIGN_POINTER;
    /* Valid items take the multiply-and-rotate path of detail/pool.h; division
     * only runs to tell an interior pointer from a foreign one. */
    uint64_t slot = fm__exact_index(a - (base + p->hot.slots_off), p->hot.inv, p->hot.inv_shift);
    if (FM__UNLIKELY(slot >= fm__chunk_bump(p, idx))) {
        uint32_t off = (uint32_t)(a - base);
        uint64_t span = (uint64_t)p->hot.per_chunk * p->hot.stride;
        if (off < p->hot.slots_off || off - p->hot.slots_off >= span) return FM_ERR_FOREIGN_POINTER;
        if ((off - p->hot.slots_off) % p->hot.stride != 0) return FM_ERR_INTERIOR_POINTER;
        /* A slot handed out before the last reset and not since: its item is
         * dead. Otherwise it was never handed out. */
        if (slot < fm__chunk_used(p, idx)) return FM_ERR_DOUBLE_FREE;
        return FM_ERR_FOREIGN_POINTER;
    }
    out->chunk = idx;
    out->slot = (uint32_t)slot;
    out->meta = fm__meta_get(base, (uint32_t)slot);
    return (out->meta & FM__LIVE) ? FM_OK : FM_ERR_DOUBLE_FREE;
}

/* fm__locate under the pool's lock or owner check; without the lock under
 * THREAD_CACHE and LOCKFREE. */
static inline fm_error fm__locate_policy(const fm_pool *p, const void *ptr, fm__loc *out) {
    return fm__cached_policy(p) ? fm__locate_for(p, ptr, out) : fm__locate(p, ptr, out);
}

#endif /* FRAMEMEM_POOL_INTERNAL_H */
