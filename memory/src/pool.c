/* pool.c: fixed-size object pools with O(1), hitch-free growth.
 *
 * Layout of a chunk (chunk_bytes, a power of two, aligned to itself):
 *
 *     [ meta: uint32 per slot | (FM_TRACK_SITES: file:line per slot) |
 *       pad to item_align | slot 0 | slot 1 | ... ]
 *
 * meta bit 31 is the live bit, bits 0..30 the slot's generation; a free bumps
 * the generation. A free slot holds the index of the next free slot of its
 * chunk in its first four bytes. Chunk bookkeeping (free list head, bump
 * index, live count) lives in a record array beside the pool, so growing
 * writes nothing into the new chunks: their pages stay untouched until used.
 *
 * The current chunk's state is cached in the pool struct so that alloc and
 * free of the common case read one cache line of the pool plus the slot and
 * its meta word. A pointer's chunk is `ptr & base_mask`; whether that chunk is
 * ours is answered by the current-chunk compare or by a hash table of chunk
 * bases, so a foreign pointer is never dereferenced.
 */
#include "framemem/pool.h"

#include "framemem/clock.h"
#include "internal.h"
#include "platform/os.h"
#include "platform/thread.h"

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

/* Wrong-thread detection of FM_SYNC_NONE pools: debug and sanitized builds. */
#if !defined(NDEBUG) || defined(FM__SANITIZED)
#define FM__THREAD_CHECKS 1
#endif

/* Words that lock-free paths read while others write them (meta words,
 * chunk-table entries, chunk bases, the arrays holding them) are accessed
 * atomically under every policy; relaxed loads and stores are plain moves. */

enum {
    FM__CHUNK_UNUSED = 0, /* record slot free for reuse */
    FM__CHUNK_FRESH,      /* memory held, never handed out a slot */
    FM__CHUNK_CURRENT,    /* the chunk allocations come from; state in the pool */
    FM__CHUNK_PARTIAL,    /* in the partial list: live items and room for more */
    FM__CHUNK_EMPTY,      /* in the empty list: no live items */
    FM__CHUNK_FULL,       /* every usable slot is live or retired; in no list */
};

typedef struct fm__site {
    const char *file;
    int line;
} fm__site;

typedef struct fm__list {
    uint32_t head, tail;
} fm__list;

enum { FM__DM_SLOTS = 64 };

typedef struct fm__chunk {
    uint8_t *base;
    uint32_t free_top;  /* free slot indices on the chunk's stack (see fm__stack) */
    uint32_t bump;      /* slots [0, bump) have been handed out at least once */
    uint32_t limit;     /* usable slots: items_per_chunk, or fewer at max_capacity */
    uint32_t live;      /* stale while the chunk is current (see fm__park_current) */
    uint32_t retired;
    uint32_t prev, next; /* links in the pool's lists (partial, empty, fresh, unused) */
    uint32_t state;
    uint32_t gen_floor; /* first generation of this record's slots: above every
                           generation an earlier chunk of the record handed out */
    uint64_t *refs;     /* lazily: per slot, generation << 32 | (count - 1) */
} fm__chunk;

/* FM_SYNC_LOCKFREE: the shared stack of free slots, on a cache line of its
 * own with the counters every alloc and free bumps anyway. */
typedef struct fm__lf_state {
    _Alignas(64) uint64_t head; /* tag << 32 | global slot index, FM__NONE: empty */
} fm__lf_state;


/* Arrays replaced by growth that lock-free readers may still hold
 * (sync != NONE): kept until destroy. Sizes double, so a few dozen at most. */
enum { FM__MAX_RETIRED_ARRAYS = 96 };

struct fm_pool {
    _Alignas(64) fm__pool_hot hot; /* first, one cache line: the inline fast paths read it */
    /* The current-chunk state the core works on: &hot for FM_SYNC_NONE;
     * &shadow otherwise, with hot's current chunk kept empty so the inline
     * fast paths of pool.h always call the library. */
    fm__pool_hot *cs;
    uint32_t stack_off; /* a chunk's free stack: per_chunk 16-bit slot indices */
    uint32_t sites_off; /* FM_TRACK_SITES: per-slot allocation sites */
    uint32_t cur_idx;
    uint32_t cur_gen_floor;
    /* NONE and MUTEX: chunk bases by chunk number mod FM__DM_SLOTS, written
     * when a chunk gets its memory and cleared when it gives it back, so the
     * lookup of a free outside the current chunk is one load and a compare
     * that goes the same way every time while no two chunks share a slot
     * (a growth maps its chunks side by side, so the first 64 never do); a
     * miss goes to the table. Where the last free's chunk was remembered
     * instead, random frees over a few chunks mispredicted that compare
     * about as often as not. 1 marks an empty slot (no chunk base is odd;
     * 0 would match pointers below one chunk size). */
    uintptr_t dm_base[FM__DM_SLOTS];
    uint32_t dm_idx[FM__DM_SLOTS];
    /* NONE and MUTEX: a single free outside the current chunk parks its slot
     * in hot's next slot (cur_next UINT32_MAX) instead of pushing it onto its
     * chunk's stack, so an alloc right after takes that slot back, its cache
     * lines warm, as glibc's tcache does. Its chunk still counts it live
     * (c->live, live_other) until fm__settle_next files it, which every path
     * that moves the next slot or switches chunks does first. */
    uint32_t parked_chunk;
    uint32_t parked_slot;
    uint64_t live_other; /* live items outside the current chunk, parked one included */
    uintptr_t base_mask;

    /* ---- geometry and policy */
    fm_pool_desc desc; /* resolved; desc.name points at name[] below */
    uint32_t item_size;
    uint32_t item_align;
    uint32_t chunk_shift;
    size_t chunk_bytes;
    bool use_os; /* chunks come from fm__os_reserve */

    /* ---- chunks */
    fm__chunk *chunks;
    uint32_t chunk_cap;    /* records allocated */
    uint32_t chunk_top;    /* records ever used: [0, chunk_top) */
    uint32_t chunk_count;  /* records holding memory */
    uint32_t unused_head; /* stack of UNUSED records below chunk_top (via next) */
    fm__list partial;     /* FIFO: a chunk waits longest, gathers most frees */
    fm__list empty;       /* used last, so they stay empty for fm_pool_trim */
    fm__list fresh;       /* never handed out a slot */
    uint32_t *table; /* open addressing: chunk base -> record index; the
                        capacity is also stored in table[-1] for lock-free
                        readers, which must see the pair consistent */
    uint32_t table_cap;
    uint32_t table_used; /* entries that are not FM__NONE (tombstones too) */

    /* ---- threads */
    fm_sync sync;
    uintptr_t owner;  /* FM_SYNC_NONE, debug builds: the owning thread's token, 0 = none */
    uint64_t id;      /* unique among all pools ever created: thread caches key on it */
    fm__mutex lock; /* sync != NONE: recursive, so dtors and foreach callbacks
                             may call back into the pool */
    fm__pool_hot shadow;
    uint32_t **lf_links;  /* LOCKFREE: per record, see fm__links_of */
    uint32_t n_retired_arrays;
    void *retired_arrays[FM__MAX_RETIRED_ARRAYS];
    size_t retired_bytes[FM__MAX_RETIRED_ARRAYS];
    fm__lf_state lf;
    fm__tc_entry *tc_entries;     /* THREAD_CACHE: caches of threads using the pool */
    uint64_t tc_gone_allocs;      /* counters of caches whose thread exited */
    uint64_t tc_gone_frees;

    /* ---- counters */
    uint64_t capacity; /* sum of limits of held chunks, minus retired slots */
    uint64_t retired;
    uint64_t failed_allocs;
    uint64_t misuse_count;
    uint64_t grow_events;
    uint64_t grow_ticks_total;
    uint64_t grow_ticks_max;
    uint64_t trim_events;
    uint64_t bytes_trimmed;
    size_t bytes_reserved;
    size_t self_bytes;

    char name[];
};

/* ======================================================== geometry helpers */

/* Slots out of the core: live items, plus (THREAD_CACHE, LOCKFREE) free slots
 * held by the caches or the shared stack. */
static inline uint64_t fm__live(const fm_pool *p) { return p->cs->peak_live - p->cs->headroom; }

static uint32_t fm__ctz32(uint32_t v) {
    uint32_t n = 0;
    while (!(v & 1u)) {
        v >>= 1;
        n++;
    }
    return n;
}

static inline uint8_t *fm__slot(const fm_pool *p, const uint8_t *base, uint32_t idx) {
    return (uint8_t *)base + p->hot.slots_off + (size_t)idx * p->hot.stride;
}

/* The slot ptr starts in the chunk at base (pool.h's multiply and rotate),
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

static fm__chunk *fm__chunk_at(const fm_pool *p, uint32_t idx);
static void fm__refile_after_free(fm_pool *p, uint32_t idx);

/* 1 while hot's next slot is another chunk's, parked (see fm_pool). */
static inline uint32_t fm__parked(const fm_pool *p) {
    return p->cs->cur_next_slot && p->cs->cur_next == FM__NONE;
}

/* 1 when the parked slot is chunk idx's. */
static inline uint32_t fm__parked_in(const fm_pool *p, uint32_t idx) {
    return fm__parked(p) && p->parked_chunk == idx;
}

/* A dead slot of chunk idx, not the current one, goes onto its chunk's
 * stack, which counts one item fewer (the caller takes it off live_other). */
static inline void fm__file_free_slot(fm_pool *p, uint32_t idx, uint32_t slot) {
    fm__chunk *c = fm__chunk_at(p, idx);
    fm__stack(p, c->base)[c->free_top++] = (uint16_t)slot;
    c->live--;
    if (FM__UNLIKELY(c->state == FM__CHUNK_FULL || c->live == 0)) fm__refile_after_free(p, idx);
}

/* The next slot, if any, goes where it belongs: the current chunk's stack,
 * or a parked slot onto its own chunk's (which stops counting it live). */
static void fm__settle_next(fm_pool *p) {
    fm__pool_hot *h = p->cs;
    if (!h->cur_next_slot) return;
    if (h->cur_next != FM__NONE) {
        h->cur_stack[h->cur_top++] = (uint16_t)h->cur_next;
    } else if (p->parked_chunk == p->cur_idx) { /* its chunk became current */
        h->cur_stack[h->cur_top++] = (uint16_t)p->parked_slot;
    } else {
        fm__file_free_slot(p, p->parked_chunk, p->parked_slot);
        p->live_other--;
    }
    h->cur_next_slot = NULL;
}

/* A free slot of the current chunk becomes its next one (see pool.h). */
static inline void fm__push_current(fm_pool *p, uint32_t idx) {
    fm__pool_hot *h = p->cs;
    if (h->cur_next_slot) fm__settle_next(p);
    h->cur_next_slot = h->cur_slots + (size_t)idx * h->stride;
    h->cur_next_meta = fm__meta(h->cur_base) + idx;
    h->cur_next = idx;
}

/* ======================================================= the record lists */

static fm__chunk *fm__chunk_at(const fm_pool *p, uint32_t idx) { return &p->chunks[idx]; }

/* The record array and, behind it, the chunk base of each record that
 * handles resolve through (NULL until the chunk first becomes current). */
static size_t fm__records_bytes(uint32_t cap) {
    return (size_t)cap * (sizeof(fm__chunk) + sizeof(uint8_t *) + sizeof(uint32_t *));
}
static uint8_t **fm__bases_of(fm__chunk *recs, uint32_t cap) { return (uint8_t **)(void *)(recs + cap); }
/* LOCKFREE: per record, the links of the shared stack (one index per slot).
 * A record's link array lives as long as the pool, so a thread that read a
 * stale stack head may still read a link: its CAS then fails on the tag. */
static uint32_t **fm__links_of(fm__chunk *recs, uint32_t cap) {
    return (uint32_t **)(void *)(fm__bases_of(recs, cap) + cap);
}

static void fm__list_init(fm__list *l) { l->head = l->tail = FM__NONE; }

static void fm__list_push(fm_pool *p, fm__list *l, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    c->next = FM__NONE;
    c->prev = l->tail;
    if (l->tail != FM__NONE) p->chunks[l->tail].next = idx;
    else l->head = idx;
    l->tail = idx;
}

static void fm__list_unlink(fm_pool *p, fm__list *l, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    if (c->prev != FM__NONE) p->chunks[c->prev].next = c->next;
    else l->head = c->next;
    if (c->next != FM__NONE) p->chunks[c->next].prev = c->prev;
    else l->tail = c->prev;
    c->prev = c->next = FM__NONE;
}

static uint32_t fm__list_pop(fm_pool *p, fm__list *l) {
    uint32_t idx = l->head;
    if (idx != FM__NONE) fm__list_unlink(p, l, idx);
    return idx;
}

/* Slots a parked chunk can still hand out. */
static uint32_t fm__chunk_room(const fm__chunk *c) { return c->limit - c->live - c->retired; }

static bool fm__chunk_exhausted(const fm__chunk *c) {
    return c->free_top == 0 && c->bump >= c->limit;
}

/* Puts a chunk that is not current where its state says it belongs. Partly
 * used chunks queue FIFO: by the time one comes round again it has gathered
 * the frees of a while, so switching chunks stays rare under random frees. */
static void fm__file_chunk(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    if (fm__chunk_exhausted(c)) {
        c->state = FM__CHUNK_FULL;
        c->prev = c->next = FM__NONE;
    } else if (c->live == 0) {
        c->state = FM__CHUNK_EMPTY;
        fm__list_push(p, &p->empty, idx);
    } else {
        c->state = FM__CHUNK_PARTIAL;
        fm__list_push(p, &p->partial, idx);
    }
}

/* Writes the cached current-chunk state back to its record. */
static void fm__park_current(fm_pool *p) {
    if (p->cur_idx == FM__NONE) return;
    fm__settle_next(p);
    fm__chunk *c = fm__chunk_at(p, p->cur_idx);
    c->free_top = p->cs->cur_top;
    c->bump = (uint32_t)p->cs->cur_bump;
    c->live = (uint32_t)(fm__live(p) - p->live_other);
    p->live_other = fm__live(p);
    uint32_t idx = p->cur_idx;
    p->cur_idx = FM__NONE;
    fm__file_chunk(p, idx);
    p->cs->cur_base = 1;
    p->cs->cur_slots = NULL;
    p->cs->cur_next_slot = NULL;
    p->cs->cur_next = FM__NONE;
    p->cs->cur_top = 0;
    p->cs->cur_stack = NULL;
    p->cs->cur_bump = 0;
    p->cs->cur_limit = 0;
}

static void fm__make_current(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    if (c->state == FM__CHUNK_FRESH) {
        /* Handles read meta words without the bump index: make the never-used
         * slots read as dead. Fresh pages from the OS are zero already; memory
         * from an allocator gets 4 bytes per slot written, once per chunk. */
        if (!p->use_os) memset(c->base, 0, (size_t)p->hot.per_chunk * sizeof(uint32_t));
        FM__ATOMIC_STORE(&p->hot.bases[idx], c->base, RELEASE);
    }
    c->state = FM__CHUNK_CURRENT;
    c->prev = c->next = FM__NONE;
    p->cur_idx = idx;
    p->cs->cur_base = (uintptr_t)c->base;
    p->cs->cur_slots = c->base + p->hot.slots_off;
    p->cs->cur_top = c->free_top;
    p->cs->cur_stack = fm__stack(p, c->base);
    p->cs->cur_bump = c->bump;
    p->cs->cur_limit = c->limit;
    p->cur_gen_floor = c->gen_floor;
    p->live_other -= c->live;
}

/* Live items of a chunk, whether or not it is current. */
static uint32_t fm__chunk_live(const fm_pool *p, uint32_t idx) {
    if (idx == p->cur_idx) return (uint32_t)(fm__live(p) + fm__parked(p) - p->live_other);
    return p->chunks[idx].live - fm__parked_in(p, idx);
}

static uint32_t fm__chunk_bump(const fm_pool *p, uint32_t idx) {
    return idx == p->cur_idx ? (uint32_t)p->cs->cur_bump : p->chunks[idx].bump;
}

/* ========================================================== chunk table */

static uint32_t fm__hash(const fm_pool *p, uintptr_t base, uint32_t cap) {
    uint64_t key = (uint64_t)(base >> p->chunk_shift) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(key >> 32) & (cap - 1);
}

/* Inserts into the first empty or tombstone entry; true when that entry was
 * empty (the table holds one more non-empty entry). */
static bool fm__table_insert(uint32_t *table, uint32_t cap, const fm_pool *p, uint32_t idx) {
    uint32_t i = fm__hash(p, (uintptr_t)p->chunks[idx].base, cap);
    uint32_t e;
    while ((e = FM__ATOMIC_LOAD(&table[i], RELAXED)) != FM__NONE && e != FM__TOMB) i = (i + 1) & (cap - 1);
    FM__ATOMIC_STORE(&table[i], idx, RELEASE);
    return e == FM__NONE;
}

/* A table built privately (not yet visible to other threads). */
static uint32_t fm__table_fill(fm_pool *p, uint32_t *table, uint32_t cap) {
    memset(table, 0xFF, (size_t)cap * sizeof *table);
    uint32_t used = 0;
    for (uint32_t i = 0; i < p->chunk_top; i++) {
        if (p->chunks[i].state != FM__CHUNK_UNUSED) used += fm__table_insert(table, cap, p, i);
    }
    return used;
}

/* Trim: the entry becomes a tombstone, so concurrent probes for other chunks
 * still reach them (no rebuild in place). */
static void fm__table_remove(fm_pool *p, uint32_t idx) {
    uint32_t i = fm__hash(p, (uintptr_t)p->chunks[idx].base, p->table_cap);
    uint32_t e;
    while ((e = FM__ATOMIC_LOAD(&p->table[i], RELAXED)) != idx) {
        if (e == FM__NONE) return;
        i = (i + 1) & (p->table_cap - 1);
    }
    FM__ATOMIC_STORE(&p->table[i], FM__TOMB, RELEASE);
}

static uint32_t fm__table_find(const fm_pool *p, uintptr_t base) {
    if (!p->table) return FM__NONE;
    uint32_t i = fm__hash(p, base, p->table_cap);
    for (;;) {
        uint32_t idx = FM__ATOMIC_LOAD(&p->table[i], RELAXED);
        if (idx == FM__NONE) return idx;
        if (idx != FM__TOMB && (uintptr_t)p->chunks[idx].base == base) return idx;
        i = (i + 1) & (p->table_cap - 1);
    }
}

/* The same lookup without the pool's lock: the table (with its capacity in
 * table[-1]) and the chunk bases are read as published; a fresh chunk's base
 * is not published yet, and no item can point into it. */
static uint32_t fm__table_find_shared(const fm_pool *p, uintptr_t base) {
    const uint32_t *table = FM__ATOMIC_LOAD(&p->table, ACQUIRE);
    if (!table) return FM__NONE;
    uint32_t cap = table[-1];
    uint32_t i = fm__hash(p, base, cap);
    for (;;) {
        uint32_t idx = FM__ATOMIC_LOAD(&table[i], ACQUIRE);
        if (idx == FM__NONE) return idx;
        if (idx != FM__TOMB) {
            uint8_t **bases = FM__ATOMIC_LOAD(&p->hot.bases, ACQUIRE);
            if ((uintptr_t)FM__ATOMIC_LOAD(&bases[idx], RELAXED) == base) return idx;
        }
        i = (i + 1) & (cap - 1);
    }
}

/* ======================================================== locating items */

typedef struct fm__loc {
    uint32_t chunk;
    uint32_t slot;
    uint32_t meta;
} fm__loc;

/* The policies (section "threads" below), used before it. */
static bool fm__cached_policy(const fm_pool *p);
static fm_error fm__locate_for(const fm_pool *p, const void *ptr, fm__loc *out);
static fm_error fm__locate_shared(const fm_pool *p, const void *ptr, fm__loc *out);
static void fm__retain_shared(fm_pool *p, void *item, const fm__loc *loc);
static bool fm__release_shared(fm_pool *p, void *item, const fm__loc *loc);
static uint32_t fm__refcount_shared(const fm_pool *p, const fm__loc *loc);
static void *fm__sync_alloc(fm_pool *p);
static void fm__sync_free(fm_pool *p, void *item, const char *op);
static bool fm__owner_ok(const fm_pool *p, const char *op);
static bool fm__enter(const fm_pool *p, const char *op);
static void fm__leave(const fm_pool *p);

/* The dm_base slot of a chunk base. */
static inline uint32_t fm__dm_slot(const fm_pool *p, uintptr_t base) {
    return (uint32_t)(base >> p->chunk_shift) & (FM__DM_SLOTS - 1);
}

/* NONE and MUTEX: the record of the chunk at base when it is not the current
 * one: its dm_base slot, else the table; FM__NONE when base is not a chunk. */
static inline uint32_t fm__other_chunk(const fm_pool *p, uintptr_t base) {
    uint32_t k = fm__dm_slot(p, base);
    return p->dm_base[k] == base ? p->dm_idx[k] : fm__table_find(p, base);
}

/* Finds the chunk and slot of ptr and says what is wrong with it, without
 * reporting: FM_OK (a live item), FOREIGN, INTERIOR or DOUBLE_FREE (a slot
 * that was handed out before and is free now). Never reads foreign memory. */
static inline fm_error fm__locate(const fm_pool *p, const void *ptr, fm__loc *out) {
    uintptr_t a = (uintptr_t)ptr;
    uintptr_t base = a & p->base_mask;
    uint32_t idx = base == p->cs->cur_base ? p->cur_idx : fm__other_chunk(p, base);
    if (idx == FM__NONE) return FM_ERR_FOREIGN_POINTER;
    /* Valid items take the multiply-and-rotate path of pool.h; division
     * only runs to tell an interior pointer from a foreign one. */
    uint64_t slot = fm__exact_index(a - (base + p->hot.slots_off), p->hot.inv, p->hot.inv_shift);
    if (FM__UNLIKELY(slot >= fm__chunk_bump(p, idx))) {
        uint32_t off = (uint32_t)(a - base);
        uint64_t span = (uint64_t)p->hot.per_chunk * p->hot.stride;
        if (off < p->hot.slots_off || off - p->hot.slots_off >= span) return FM_ERR_FOREIGN_POINTER;
        if ((off - p->hot.slots_off) % p->hot.stride != 0) return FM_ERR_INTERIOR_POINTER;
        return FM_ERR_FOREIGN_POINTER; /* a slot never handed out */
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

FM__COLD static void fm__misuse(fm_pool *p, fm_error err, const void *ptr, const char *op) {
    FM__ATOMIC_FETCH_ADD(&p->misuse_count, 1, RELAXED);
    switch (err) {
    case FM_ERR_FOREIGN_POINTER:
        fm__report(err, "pool '%s': %s(%p): not an item of this pool", p->name, op, ptr);
        break;
    case FM_ERR_INTERIOR_POINTER:
        fm__report(err, "pool '%s': %s(%p): points inside an item, not at its start", p->name,
                   op, ptr);
        break;
    case FM_ERR_DOUBLE_FREE:
        fm__report(err, "pool '%s': %s(%p): item is already free (double free)", p->name, op,
                   ptr);
        break;
    default:
        fm__report(err, "pool '%s': %s(%p): %s", p->name, op, ptr, fm_error_str(err));
        break;
    }
}

static uint32_t fm__take_record(fm_pool *p) {
    uint32_t idx = p->unused_head, floor = 0; /* a record never used before: 0 */
    if (idx != FM__NONE) {
        p->unused_head = p->chunks[idx].next;
        floor = p->chunks[idx].gen_floor;
    } else {
        idx = p->chunk_top++;
    }
    memset(&p->chunks[idx], 0, sizeof p->chunks[idx]);
    p->chunks[idx].gen_floor = floor;
    p->chunks[idx].prev = p->chunks[idx].next = FM__NONE;
    FM__ATOMIC_STORE(&p->hot.bases[idx], NULL, RELAXED);
    FM__ATOMIC_STORE(&p->hot.n_bases, p->chunk_top, RELEASE);
    return idx;
}

static void fm__drop_record(fm_pool *p, uint32_t idx) {
    p->chunks[idx].state = FM__CHUNK_UNUSED;
    p->chunks[idx].base = NULL;
    FM__ATOMIC_STORE(&p->hot.bases[idx], NULL, RELAXED);
    /* A record whose generations are nearly used up is never reused, so no
     * handle to its old slots can ever resolve again. */
    if (p->chunks[idx].gen_floor >= FM__GEN_MAX - 1) return;
    p->chunks[idx].next = p->unused_head;
    p->unused_head = idx;
}

#ifdef FM_TRACK_SITES
/* Where each slot's current item was allocated: beside the meta words. */
static fm__site *fm__sites(const fm_pool *p, const uint8_t *base) {
    return (fm__site *)(void *)((uint8_t *)base + p->sites_off);
}
#endif

/* Returns a chunk's memory; the record is dropped. */
static void fm__release_chunk(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    /* Unpublish first: lock-free lookups stop finding the chunk. */
    fm__table_remove(p, idx);
    uint32_t k = fm__dm_slot(p, (uintptr_t)c->base);
    if (p->dm_base[k] == (uintptr_t)c->base) p->dm_base[k] = 1;
    FM__ATOMIC_STORE(&p->hot.bases[idx], NULL, RELEASE);
    /* The next chunk of this record starts above every generation this one
     * handed out: handles to its items stay stale (trim is not a hot path). */
    uint32_t bump = fm__chunk_bump(p, idx);
    for (uint32_t s = 0; s < bump; s++) {
        uint32_t m = fm__meta_get((uintptr_t)c->base, s);
        uint32_t gen = m & FM__GEN_MAX;
        if (m == FM__RETIRED) gen = FM__GEN_MAX;
        if (gen >= c->gen_floor) c->gen_floor = gen == FM__GEN_MAX ? FM__GEN_MAX : gen + 1;
    }
    if (c->refs) fm_allocator_free(&p->desc.allocator, c->refs, (size_t)p->hot.per_chunk * sizeof *c->refs);
    FM__UNPOISON(c->base, p->chunk_bytes);
    FM__VG_UNDEFINED(c->base, p->chunk_bytes);
    if (p->use_os) fm__os_release(c->base, p->chunk_bytes);
    else fm_allocator_free(&p->desc.allocator, c->base, p->chunk_bytes);
    p->bytes_reserved -= p->chunk_bytes;
    p->capacity -= c->limit - c->retired;
    p->retired -= c->retired;
    p->chunk_count--;
    fm__drop_record(p, idx);
}

/* =========================================================== growth */

/* What a growth needs before it may change anything: bigger record and table
 * arrays when the old ones are too small, and the chunks' memory. Gathered
 * first, installed only when all of it was had, so a failed growth leaves the
 * pool exactly as it was. */
typedef struct fm__growth_plan {
    fm__chunk *recs; /* NULL: the current array is big enough */
    uint32_t recs_cap;
    uint32_t *table; /* NULL: the current table is big enough */
    uint32_t table_cap;
    uint8_t *block;  /* use_os: all k chunks, contiguous */
    uint8_t *chain;  /* allocator: chunks linked through their first bytes */
    uint8_t *links;  /* LOCKFREE: link arrays for new records, chained likewise */
    uint32_t k;
} fm__growth_plan;

/* Before a user-allocator chunk is installed its first bytes (the meta words
 * of slots not handed out yet) hold the next chunk. */
typedef struct fm__pending {
    uint8_t *next;
} fm__pending;

/* Chunk tables carry their capacity in the word before entry 0. */
static size_t fm__table_bytes(uint32_t cap) { return ((size_t)cap + 1) * sizeof(uint32_t); }
static uint32_t *fm__table_new(const fm_allocator *a, uint32_t cap) {
    uint32_t *t = fm_allocator_alloc(a, fm__table_bytes(cap), alignof(uint32_t));
    if (!t) return NULL;
    t[0] = cap;
    return t + 1;
}
static void fm__table_delete(const fm_allocator *a, uint32_t *table, uint32_t cap) {
    if (table) fm_allocator_free(a, table - 1, fm__table_bytes(cap));
}

/* An array replaced by growth: freed now when no other thread can read it,
 * else kept until destroy (it stays in bytes_reserved). */
static void fm__retire_array(fm_pool *p, void *ptr, size_t bytes) {
    if (!ptr) return;
    if (p->sync == FM_SYNC_NONE || p->n_retired_arrays == FM__MAX_RETIRED_ARRAYS) {
        fm_allocator_free(&p->desc.allocator, ptr, bytes);
        p->bytes_reserved -= bytes;
        return;
    }
    p->retired_arrays[p->n_retired_arrays] = ptr;
    p->retired_bytes[p->n_retired_arrays++] = bytes;
}

static size_t fm__links_bytes(const fm_pool *p) {
    size_t n = (size_t)p->hot.per_chunk * sizeof(uint32_t);
    return n > sizeof(fm__pending) ? n : sizeof(fm__pending);
}

static uint32_t fm__unused_records(const fm_pool *p) {
    uint32_t n = 0;
    for (uint32_t i = p->unused_head; i != FM__NONE; i = p->chunks[i].next) n++;
    return n;
}

static void fm__plan_release(fm_pool *p, fm__growth_plan *g) {
    const fm_allocator *a = &p->desc.allocator;
    fm_allocator_free(a, g->recs, fm__records_bytes(g->recs_cap));
    fm__table_delete(a, g->table, g->table_cap);
    while (g->links) {
        fm__pending pend;
        memcpy(&pend, g->links, sizeof pend);
        fm_allocator_free(a, g->links, fm__links_bytes(p));
        g->links = pend.next;
    }
    fm__os_release(g->block, (size_t)g->k * p->chunk_bytes);
    while (g->chain) {
        fm__pending pend;
        memcpy(&pend, g->chain, sizeof pend);
        fm_allocator_free(a, g->chain, p->chunk_bytes);
        g->chain = pend.next;
    }
}

/* Allocates everything; false (nothing reported yet) when any piece fails. */
static bool fm__plan_gather(fm_pool *p, fm__growth_plan *g) {
    const fm_allocator *a = &p->desc.allocator;
    uint32_t unused = fm__unused_records(p);
    uint64_t need = (uint64_t)p->chunk_top + (g->k > unused ? g->k - unused : 0);
    if (need > p->chunk_cap) {
        uint64_t cap = p->chunk_cap ? p->chunk_cap : 8;
        while (cap < need) cap *= 2;
        g->recs = fm_allocator_alloc(a, fm__records_bytes((uint32_t)cap), alignof(fm__chunk));
        if (!g->recs) return false;
        g->recs_cap = (uint32_t)cap;
    }
    /* The table stays at most half full (tombstones included) so probes stay
     * short; a new table holds no tombstones. */
    if (((uint64_t)p->table_used + g->k) * 2 > p->table_cap) {
        uint64_t slots_needed = ((uint64_t)p->chunk_count + g->k) * 2;
        uint64_t cap = 16;
        while (cap < slots_needed) cap *= 2;
        g->table = fm__table_new(a, (uint32_t)cap);
        if (!g->table) return false;
        g->table_cap = (uint32_t)cap;
    }
    if (p->sync == FM_SYNC_LOCKFREE) {
        for (uint32_t i = unused; i < g->k; i++) {
            uint8_t *links = fm_allocator_alloc(a, fm__links_bytes(p), alignof(uint32_t *));
            if (!links) return false;
            fm__pending pend = {g->links};
            memcpy(links, &pend, sizeof pend);
            g->links = links;
        }
    }
    if (p->use_os) {
        /* One mapping for all k chunks, so growing by many chunks costs a
         * few system calls; each chunk is released on its own later. */
        if (g->k > SIZE_MAX / p->chunk_bytes) return false;
        g->block = fm__os_reserve((size_t)g->k * p->chunk_bytes, p->chunk_bytes, true);
        return g->block != NULL;
    }
    for (uint32_t i = 0; i < g->k; i++) {
        uint8_t *base = fm_allocator_alloc(a, p->chunk_bytes, p->chunk_bytes);
        if (!base) return false;
        fm__pending pend = {g->chain};
        if (!fm_is_aligned(base, p->chunk_bytes)) {
            fm_allocator_free(a, base, p->chunk_bytes);
            return false;
        }
        memcpy(base, &pend, sizeof pend);
        g->chain = base;
    }
    return true;
}

/* Adds chunks holding `slots` more usable slots (clipped at max_capacity).
 * All or nothing: on failure the pool is exactly as before and the error is
 * reported. */
static bool fm__grow(fm_pool *p, uint64_t slots, bool count_event) {
    uint64_t start = fm_clock_now();
    uint64_t max = p->desc.max_capacity;
    uint64_t held = p->capacity + p->retired; /* slots the chunks hold */
    if (max && held + slots > max) slots = held < max ? max - held : 0;
    if (slots == 0) {
        fm__report(FM_ERR_POOL_FULL, "pool '%s': at max_capacity %u", p->name,
                   p->desc.max_capacity);
        return false;
    }
    uint64_t k64 = (slots + p->hot.per_chunk - 1) / p->hot.per_chunk;
    /* Whole chunks, except where max_capacity cuts the last one short. */
    slots = k64 * p->hot.per_chunk;
    if (max && held + slots > max) slots = max - held;
    if (k64 > (UINT32_MAX >> 3) - p->chunk_top) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': growth by %llu items is too large",
                   p->name, (unsigned long long)slots);
        return false;
    }
    fm__growth_plan g = {.k = (uint32_t)k64};
    if (!fm__plan_gather(p, &g)) {
        fm__plan_release(p, &g);
        fm__report(FM_ERR_OUT_OF_MEMORY,
                   "pool '%s': backing allocator refused growth by %u chunk(s) of %zu bytes",
                   p->name, g.k, p->chunk_bytes);
        return false;
    }

    /* Install: nothing below can fail. */
    if (g.recs) {
        uint8_t **bases = fm__bases_of(g.recs, g.recs_cap);
        uint32_t **links = fm__links_of(g.recs, g.recs_cap);
        memset(links, 0, (size_t)g.recs_cap * sizeof *links);
        if (p->chunks) {
            memcpy(g.recs, p->chunks, (size_t)p->chunk_top * sizeof *g.recs);
            memcpy(bases, p->hot.bases, (size_t)p->chunk_top * sizeof *bases);
            memcpy(links, p->lf_links, (size_t)p->chunk_top * sizeof *links);
        }
        fm__retire_array(p, p->chunks, fm__records_bytes(p->chunk_cap));
        p->bytes_reserved += fm__records_bytes(g.recs_cap);
        FM__ATOMIC_STORE(&p->chunks, g.recs, RELEASE);
        FM__ATOMIC_STORE(&p->hot.bases, bases, RELEASE);
        FM__ATOMIC_STORE(&p->lf_links, links, RELEASE);
        p->chunk_cap = g.recs_cap;
    }
    if (g.block && p->desc.prefault) fm__os_prefault(g.block, (size_t)g.k * p->chunk_bytes);
    uint64_t left = slots;
    for (uint32_t i = 0; i < g.k; i++) {
        uint32_t idx = fm__take_record(p);
        fm__chunk *c = fm__chunk_at(p, idx);
        if (g.links && !p->lf_links[idx]) {
            fm__pending pend;
            memcpy(&pend, g.links, sizeof pend);
            FM__ATOMIC_STORE(&p->lf_links[idx], (uint32_t *)(void *)g.links, RELEASE);
            g.links = pend.next;
        }
        if (g.block) {
            c->base = g.block + (size_t)i * p->chunk_bytes;
        } else {
            fm__pending pend;
            memcpy(&pend, g.chain, sizeof pend);
            c->base = g.chain;
            g.chain = pend.next;
            if (p->desc.prefault) fm__os_prefault(c->base, p->chunk_bytes);
        }
        uint32_t k = fm__dm_slot(p, (uintptr_t)c->base);
        p->dm_base[k] = (uintptr_t)c->base;
        p->dm_idx[k] = idx;
        c->free_top = 0;
        c->limit = left < p->hot.per_chunk ? (uint32_t)left : p->hot.per_chunk;
        left -= c->limit;
        c->state = FM__CHUNK_FRESH;
        uint8_t *slots0 = c->base + p->hot.slots_off;
        FM__POISON(slots0, (size_t)p->hot.per_chunk * p->hot.stride);
        FM__VG_NOACCESS(slots0, (size_t)p->hot.per_chunk * p->hot.stride);
        fm__list_push(p, &p->fresh, idx);
        p->capacity += c->limit;
        p->chunk_count++;
        p->bytes_reserved += p->chunk_bytes;
        if (!g.table) p->table_used += fm__table_insert(p->table, p->table_cap, p, idx);
    }
    if (g.table) {
        p->table_used = fm__table_fill(p, g.table, g.table_cap);
        fm__retire_array(p, p->table ? p->table - 1 : NULL, fm__table_bytes(p->table_cap));
        p->bytes_reserved += fm__table_bytes(g.table_cap);
        p->table_cap = g.table_cap;
        FM__ATOMIC_STORE(&p->table, g.table, RELEASE);
    }
    if (count_event) {
        uint64_t ticks = fm_clock_now() - start;
        p->grow_events++;
        p->grow_ticks_total += ticks;
        if (ticks > p->grow_ticks_max) p->grow_ticks_max = ticks;
    }
    return true;
}

/* How many slots the growth policy adds when an allocation finds no room. */
static uint64_t fm__policy_slots(const fm_pool *p) {
    uint64_t held = p->capacity + p->retired;
    if (p->desc.growth == FM_GROWTH_LINEAR) return p->desc.grow_step;
    uint64_t add = (uint64_t)((double)held * ((double)p->desc.grow_factor - 1.0) + 0.999);
    return add > p->hot.per_chunk ? add : p->hot.per_chunk;
}

/* Parks the exhausted current chunk and makes another one current, growing
 * if the policy allows. false (reported) when no slot can be had. */
static bool fm__next_chunk(fm_pool *p) {
    fm__settle_next(p); /* a parked slot never outlives the chunk switch */
    if (p->partial.head == FM__NONE && p->empty.head == FM__NONE &&
        p->fresh.head == FM__NONE) {
        if (p->desc.growth == FM_GROWTH_FIXED) {
            fm__report(FM_ERR_POOL_FULL, "pool '%s': FIXED pool full at %llu items", p->name,
                       (unsigned long long)p->capacity);
            return false;
        }
        if (!fm__grow(p, fm__policy_slots(p), true)) return false;
    }
    fm__park_current(p);
    /* A partly used chunk with only a few free slots would be exhausted
     * again after a few allocations; while whole chunks are available, take
     * one of those and let the partial chunk gather more frees first. */
    uint32_t idx = p->partial.head;
    if (idx != FM__NONE && fm__chunk_room(&p->chunks[idx]) < p->hot.per_chunk / 8 &&
        (p->empty.head != FM__NONE || p->fresh.head != FM__NONE))
        idx = FM__NONE;
    if (idx != FM__NONE) fm__list_unlink(p, &p->partial, idx);
    if (idx == FM__NONE) idx = fm__list_pop(p, &p->empty);
    if (idx == FM__NONE) idx = fm__list_pop(p, &p->fresh);
    if (idx == FM__NONE) idx = fm__list_pop(p, &p->partial);
    fm__make_current(p, idx);
    return true;
}

/* ======================================================= alloc and free */

/* Takes a slot of the current chunk: its free stack first, then never-used
 * slots. NULL when the chunk is exhausted (or there is none). */
static inline void *fm__alloc_fast(fm_pool *p) {
    fm__pool_hot *h = p->cs;
    uint32_t idx;
    uint8_t *slot = h->cur_next_slot;
    if (FM__LIKELY(slot != NULL || h->cur_top != 0)) {
        uint32_t *meta;
        if (slot) { /* maybe another chunk's (parked): its meta word is at hand */
            h->cur_next_slot = NULL;
            meta = h->cur_next_meta;
        } else {
            idx = h->cur_stack[--h->cur_top];
            slot = h->cur_slots + (size_t)idx * h->stride;
            meta = fm__meta(h->cur_base) + idx;
        }
        FM__ATOMIC_STORE(meta, FM__ATOMIC_LOAD(meta, RELAXED) | FM__LIVE, RELAXED);
    } else if (FM__LIKELY(h->cur_bump < h->cur_limit)) {
        idx = (uint32_t)h->cur_bump++;
        slot = h->cur_slots + (size_t)idx * h->stride;
        fm__meta_set(h->cur_base, idx, FM__LIVE | p->cur_gen_floor); /* first use */
    } else {
        return NULL;
    }
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    h->total_allocs++;
    if (--h->headroom < 0) {
        h->headroom = 0;
        h->peak_live++;
    }
    return slot;
}

FM__NOINLINE static void *fm__alloc_next_chunk(fm_pool *p) {
    if (!fm__next_chunk(p)) {
        p->failed_allocs++;
        return NULL;
    }
    return fm__alloc_fast(p);
}

static void *fm__alloc_core(fm_pool *pool) {
    void *item = fm__alloc_fast(pool);
    if (FM__LIKELY(item != NULL)) return item;
    return fm__alloc_next_chunk(pool);
}

/* NONE and MUTEX (under the lock): up to n items into out, the current
 * chunk's free stack popped in one loop (each pop's meta word is the only
 * memory it depends on), anything else one by one. Stops at the first that
 * cannot be had (reported, counted once in failed_allocs). */
static size_t fm__alloc_batch(fm_pool *p, void **out, size_t n) {
    fm__pool_hot *h = p->cs;
    size_t got = 0;
    while (got < n) {
        uint32_t top = h->cur_top;
        if (h->cur_next_slot || top == 0) {
            void *item = fm__alloc_core(p);
            if (!item) break;
            out[got++] = item;
            continue;
        }
        size_t take = n - got < top ? n - got : top;
        const uint16_t *stack = h->cur_stack;
        uint8_t *slots = h->cur_slots;
        uint32_t *meta = fm__meta(h->cur_base);
        const size_t stride = h->stride;
        for (size_t j = 0; j < take; j++) {
            uint32_t idx = stack[top - 1 - j];
            uint8_t *slot = slots + idx * stride;
            FM__ATOMIC_STORE(&meta[idx], FM__ATOMIC_LOAD(&meta[idx], RELAXED) | FM__LIVE, RELAXED);
            FM__UNPOISON(slot, p->item_size);
            FM__VG_ALLOC(p, slot, p->item_size);
            out[got + j] = slot;
        }
        h->cur_top = top - (uint32_t)take;
        got += take;
        h->total_allocs += take;
        h->headroom -= (int64_t)take;
        if (h->headroom < 0) { /* past the peak: each item beyond it raises it */
            h->peak_live += (uint64_t)-h->headroom;
            h->headroom = 0;
        }
    }
    return got;
}

void *fm__pool_alloc_slow(fm_pool *pool) {
    if (FM__UNLIKELY(pool->hot.sync != FM_SYNC_NONE)) return fm__sync_alloc(pool);
#ifdef FM__THREAD_CHECKS
    if (!fm__owner_ok(pool, "alloc")) return NULL;
#endif
    return fm__alloc_core(pool);
}

#ifdef FM_TRACK_SITES
/* The allocating thread owns the new item's site entry: THREAD_CACHE and
 * LOCKFREE write it without the lock (destroy reads it, with no thread left
 * using the pool). */
static void fm__record_site(fm_pool *p, void *item, const char *file, int line) {
    if (!item) return;
    fm__loc loc;
    if (fm__locate_policy(p, item, &loc) != FM_OK) return;
    fm__site *s = &fm__sites(p, (const uint8_t *)((uintptr_t)item & p->base_mask))[loc.slot];
    s->file = file;
    s->line = line;
}
#endif

void *fm_pool_alloc_at(fm_pool *pool, const char *file, int line) {
    void *item = fm__pool_alloc_slow(pool);
#ifdef FM_TRACK_SITES
    bool lock = !fm__cached_policy(pool);
    if (item && (!lock || fm__enter(pool, "alloc"))) {
        fm__record_site(pool, item, file, line);
        if (lock) fm__leave(pool);
    }
#else
    (void)file, (void)line;
#endif
    return item;
}

void *fm_pool_alloc(fm_pool *pool) {
#ifdef FM_TRACK_SITES
    return fm_pool_alloc_at(pool, NULL, 0);
#else
    return fm__pool_alloc_slow(pool);
#endif
}

static size_t fm__alloc_n(fm_pool *pool, void **out, size_t n) {
    if (n && !out) {
        fm__report(FM_ERR_INVALID_ARG, "pool '%s': fm_pool_alloc_n of %zu items into NULL",
                   pool->name, n);
        return 0;
    }
    size_t got = 0;
    if (!fm__cached_policy(pool)) { /* NONE and MUTEX */
        if (!fm__enter(pool, "alloc")) return 0;
        got = fm__alloc_batch(pool, out, n);
        fm__leave(pool);
        return got;
    }
    for (; got < n; got++) {
        void *item = fm__sync_alloc(pool);
        if (!item) break; /* out[got] stays as it was, as under NONE and MUTEX */
        out[got] = item;
    }
    return got;
}

size_t fm_pool_alloc_n_at(fm_pool *pool, void **out, size_t n, const char *file, int line) {
    size_t got = fm__alloc_n(pool, out, n);
#ifdef FM_TRACK_SITES
    bool lock = !fm__cached_policy(pool);
    if (got && (!lock || fm__enter(pool, "alloc"))) {
        for (size_t i = 0; i < got; i++) fm__record_site(pool, out[i], file, line);
        if (lock) fm__leave(pool);
    }
#else
    (void)file, (void)line;
#endif
    return got;
}

size_t fm_pool_alloc_n(fm_pool *pool, void **out, size_t n) {
#ifdef FM_TRACK_SITES
    return fm_pool_alloc_n_at(pool, out, n, NULL, 0);
#else
    return fm__alloc_n(pool, out, n);
#endif
}

static inline void fm__scrub(const fm_pool *p, void *item) {
#ifndef NDEBUG
    memset(item, FM__FILL_FREED, p->item_size);
#else
    (void)p, (void)item;
#endif
}

/* Turns a live slot into a free one (in a chunk's stack, a cache or the
 * lock-free stack) or a retired one, for the debug tools: fill, Valgrind's
 * view (the item is gone), ASan poison over the whole slot. */
static void fm__slot_to_free(const fm_pool *p, void *item) {
    fm__scrub(p, item);
    FM__VG_FREE(p, item);
    FM__POISON(item, p->hot.stride);
}

/* A free into a chunk that is not current: a full chunk has room again, a
 * partial one may have become empty. */
static void fm__refile_after_free(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    if (c->state == FM__CHUNK_FULL) {
        fm__file_chunk(p, idx);
    } else if (c->state == FM__CHUNK_PARTIAL && c->live == 0) {
        fm__list_unlink(p, &p->partial, idx);
        fm__file_chunk(p, idx);
    }
}

/* Frees a located live item of any chunk. */
static inline FM__ALWAYS_INLINE void fm__free_located(fm_pool *p, void *item, const fm__loc *loc) {
    fm__chunk *c = fm__chunk_at(p, loc->chunk);
    uintptr_t base = (uintptr_t)c->base;
    bool current = loc->chunk == p->cur_idx;
    p->cs->headroom++;
    if (!current) {
        p->live_other--;
        c->live--;
    }
    if (loc->meta == (FM__LIVE | FM__GEN_MAX)) {
        /* Generation exhausted: retire the slot instead of reusing it. */
        fm__meta_set(base, loc->slot, FM__RETIRED);
        c->retired++;
        p->retired++;
        p->capacity--;
        fm__slot_to_free(p, item);
    } else {
        fm__meta_set(base, loc->slot, (loc->meta & FM__GEN_MAX) + 1);
        fm__slot_to_free(p, item);
        if (current) fm__push_current(p, loc->slot);
        else fm__stack(p, c->base)[c->free_top++] = (uint16_t)loc->slot;
    }
    if (current) return;
    fm__refile_after_free(p, loc->chunk);
}

enum { FM__NOT_HANDLED = 0, FM__FILED = 1, FM__PARKED = 2 };

/* The common free outside the current chunk, in a straight line: a live
 * item (below the chunk's bump index, generation below the maximum) of the
 * chunk fm__other_chunk finds. FM__FILED: onto its chunk's stack (the
 * caller takes it off live_other); FM__PARKED (when park): into hot's next
 * slot (see fm_pool), whatever was there settled first; FM__NOT_HANDLED, with
 * nothing changed, for anything else (the current chunk, misuse, a slot to
 * retire). The caller counts the free in headroom. */
static inline FM__ALWAYS_INLINE int fm__free_other(fm_pool *p, void *item, bool park) {
    uintptr_t base = (uintptr_t)item & p->base_mask;
    if (base == p->cs->cur_base) return FM__NOT_HANDLED;
    uint32_t idx = fm__other_chunk(p, base);
    if (FM__UNLIKELY(idx == FM__NONE)) return FM__NOT_HANDLED;
    fm__chunk *c = fm__chunk_at(p, idx);
    uint32_t slot = fm__slot_of(p, base, item);
    if (FM__UNLIKELY(slot >= c->bump || !fm__meta_kill(fm__meta(base) + slot, true)))
        return FM__NOT_HANDLED;
    fm__slot_to_free(p, item);
    if (park) {
        fm__pool_hot *h = p->cs;
        if (h->cur_next_slot) fm__settle_next(p);
        h->cur_next_slot = (uint8_t *)item;
        h->cur_next_meta = fm__meta(base) + slot;
        h->cur_next = FM__NONE;
        p->parked_chunk = idx;
        p->parked_slot = slot;
        return FM__PARKED;
    }
    fm__file_free_slot(p, idx, slot);
    return FM__FILED;
}

/* NONE and MUTEX (under the lock): frees or reports one item. */
static inline FM__ALWAYS_INLINE void fm__free_one(fm_pool *p, void *item, const char *op) {
    if (!item) return;
    int done = fm__free_other(p, item, true);
    if (FM__LIKELY(done != FM__NOT_HANDLED)) {
        if (done == FM__FILED) p->live_other--;
        p->cs->headroom++;
        return;
    }
    fm__loc loc;
    fm_error err = fm__locate(p, item, &loc);
    if (err != FM_OK) {
        fm__misuse(p, err, item, op);
        return;
    }
    fm__free_located(p, item, &loc);
}

FM__NOINLINE static void fm__free_checked(fm_pool *p, void *item, const char *op) {
    fm__free_one(p, item, op);
}

void fm__pool_free_slow(fm_pool *pool, void *item) {
    if (FM__UNLIKELY(pool->hot.sync != FM_SYNC_NONE)) {
        fm__sync_free(pool, item, "free");
        return;
    }
#ifdef FM__THREAD_CHECKS
    if (!fm__owner_ok(pool, "free")) return;
#endif
    fm__free_checked(pool, item, "free");
}

/* The out-of-line free: the same fast path as pool.h's inline one, plus the
 * debug fill and sanitizer annotations. Under sync != NONE hot's current
 * chunk is empty, so every free goes through fm__pool_free_slow. */
void fm_pool_free(fm_pool *pool, void *item) {
#ifdef FM__THREAD_CHECKS
    if (pool->hot.sync == FM_SYNC_NONE && !fm__owner_ok(pool, "free")) return;
#endif
    fm__pool_hot *h = &pool->hot;
    uint64_t idx = fm__pool_hot_index(h, item);
    if (FM__LIKELY(idx < h->cur_bump && fm__meta_kill(fm__meta(h->cur_base) + idx, true))) {
        fm__slot_to_free(pool, item);
        fm__push_current(pool, (uint32_t)idx);
        h->headroom++;
        return;
    }
    fm__pool_free_slow(pool, item);
}

/* NONE and MUTEX (under the lock): frees the run at the start of a batch,
 * the items that are live items of the first one's chunk (current or not),
 * up to the first of another chunk or one that needs more than filing.
 * Items born together tend to die together, so runs are long: the chunk's
 * stack top and count stay in registers and its record is written once per
 * run, where storing and reloading the stack top per item made a chain
 * through memory that cost more than the meta words' cache misses; and the
 * loop makes no call, so nothing it holds is spilled. Returns how many it
 * freed: 0 when items[0] is for the general path (NULL, misuse, a slot to
 * retire). */
static size_t fm__free_run(fm_pool *p, void *const *items, size_t n) {
    fm__pool_hot *h = p->cs;
    const uintptr_t mask = p->base_mask;
    const uint64_t inv = h->inv;
    const uint32_t k = h->inv_shift, off = h->slots_off;
    const uintptr_t run_base = (uintptr_t)items[0] & mask;
    bool current = run_base == h->cur_base;
    uint32_t idx = current ? p->cur_idx : fm__other_chunk(p, run_base);
    if (idx == FM__NONE) return 0;
    fm__chunk *c = fm__chunk_at(p, idx);
    const uint64_t bump = current ? h->cur_bump : c->bump;
    uint16_t *const stack = fm__stack(p, (uint8_t *)run_base);
    uint32_t top = current ? h->cur_top : c->free_top;
    size_t i = 0;
    for (; i < n; i++) {
        uintptr_t a = (uintptr_t)items[i];
        if ((a & mask) != run_base) break;
        uint64_t slot = fm__exact_index(a - run_base - off, inv, k);
        if (FM__UNLIKELY(slot >= bump || !fm__meta_kill(fm__meta(run_base) + slot, true))) break;
        fm__slot_to_free(p, (void *)a);
        stack[top++] = (uint16_t)slot;
    }
    h->headroom += (int64_t)i;
    if (current) {
        h->cur_top = top;
    } else if (i) {
        c->free_top = top;
        c->live -= (uint32_t)i;
        p->live_other -= i;
        if (c->state == FM__CHUNK_FULL || c->live == 0) fm__refile_after_free(p, idx);
    }
    return i;
}

/* NONE and MUTEX (under the lock): the whole batch, run by run, anything
 * else through the single free's general path. */
static void fm__free_batch(fm_pool *p, void *const *items, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t done = fm__free_run(p, items + i, n - i);
        i += done;
        if (!done) fm__free_one(p, items[i++], "free");
    }
}

void fm_pool_free_n(fm_pool *pool, void *const *items, size_t n) {
    if (n && !items) {
        fm__report(FM_ERR_INVALID_ARG, "pool '%s': fm_pool_free_n of %zu items from NULL",
                   pool->name, n);
        return;
    }
    if (!fm__cached_policy(pool)) { /* NONE and MUTEX */
        if (!fm__enter(pool, "free")) return;
        fm__free_batch(pool, items, n);
        fm__leave(pool);
        return;
    }
    for (size_t i = 0; i < n; i++) fm__sync_free(pool, items[i], "free");
}

void *fm_pool_new_at(fm_pool *pool, const char *file, int line) {
    void *item = fm_pool_alloc_at(pool, file, line);
    if (item && pool->desc.ctor) pool->desc.ctor(item, pool->desc.user);
    return item;
}

void *fm_pool_new(fm_pool *pool) {
    void *item = fm_pool_alloc(pool);
    if (item && pool->desc.ctor) pool->desc.ctor(item, pool->desc.user);
    return item;
}

static void fm__delete_core(fm_pool *pool, void *item) {
    if (!item) return;
    fm__loc loc;
    fm_error err = fm__locate_policy(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse(pool, err, item, "delete");
        return;
    }
    if (fm__cached_policy(pool)) {
        /* No lock held: the dtor runs, then the policy's free (which reports
         * the item if the dtor freed it). */
        if (pool->desc.dtor) pool->desc.dtor(item, pool->desc.user);
        fm__sync_free(pool, item, "delete");
        return;
    }
    if (pool->desc.dtor) {
        pool->desc.dtor(item, pool->desc.user);
        /* The dtor may have freed other items, even trimmed nothing (trim is
         * never called from here), so the chunk is still there; re-locate in
         * case it freed this very item. */
        if (fm__locate(pool, item, &loc) != FM_OK) {
            fm__misuse(pool, FM_ERR_DOUBLE_FREE, item, "delete (freed by its own dtor)");
            return;
        }
    }
    fm__free_located(pool, item, &loc);
}

/* ================================================================ threads
 *
 * FM_SYNC_NONE: nothing here but, in debug builds, the owner check.
 * MUTEX: every entry point takes p->lock around the single-threaded code.
 * THREAD_CACHE and LOCKFREE: slots leave the single-threaded core ("the
 * depot") in batches under p->lock and are then handed out and taken back
 * without it, from per-thread magazines or from one shared lock-free stack.
 * The core counts those slots as live; their meta words say free (live bit
 * clear, generation bumped), so double frees and stale handles are caught
 * exactly as in the core. The core's counters then describe slots out of the
 * depot; the user's counters are kept beside, per thread (see
 * THREAD_CACHE's entries), and summed when read. */

static uint64_t fm__pool_ids; /* source of fm_pool.id (atomic) */

static bool fm__cached_policy(const fm_pool *p) {
    return p->sync == FM_SYNC_THREAD_CACHE || p->sync == FM_SYNC_LOCKFREE;
}

static void fm__lock(const fm_pool *p) {
    if (p->sync != FM_SYNC_NONE) fm__mutex_lock(&((fm_pool *)p)->lock);
}
static void fm__unlock(const fm_pool *p) {
    if (p->sync != FM_SYNC_NONE) fm__mutex_unlock(&((fm_pool *)p)->lock);
}

/* ---- FM_SYNC_NONE owner (debug builds) */

#ifdef FM__THREAD_CHECKS
static FM__THREAD_LOCAL char fm__thread_token;
/* The address of a thread-local byte names the calling thread. */
static uintptr_t fm__self(void) { return (uintptr_t)&fm__thread_token; }
#endif

/* true when the calling thread may use p: it owns p, or p had no owner and
 * the calling thread claims it. Otherwise FM_ERR_WRONG_THREAD is reported and
 * nothing of p changes (no counter either: that write would race). */
static bool fm__owner_ok(const fm_pool *p, const char *op) {
#ifdef FM__THREAD_CHECKS
    if (!p || p->sync != FM_SYNC_NONE) return true;
    uintptr_t me = fm__self();
    uintptr_t owner = FM__ATOMIC_LOAD(&p->owner, ACQUIRE);
    if (FM__LIKELY(owner == me)) return true;
    if (owner == 0 && FM__ATOMIC_CAS_STRONG(&((fm_pool *)p)->owner, &owner, me, ACQ_REL, ACQUIRE))
        return true;
    fm__report(FM_ERR_WRONG_THREAD,
               "pool '%s': %s from a thread that does not own it (an FM_SYNC_NONE pool "
               "belongs to one thread at a time: hand it over with "
               "fm_pool_release_owner_thread / fm_pool_set_owner_thread)",
               p->name, op);
    return false;
#else
    (void)p, (void)op;
    return true;
#endif
}

/* Around the single-threaded code of an entry point: the owner check (NONE)
 * or the lock (every other policy). false: refused and reported. */
static bool fm__enter(const fm_pool *p, const char *op) {
    if (!p) return true; /* the core reports the NULL pool */
    if (p->sync == FM_SYNC_NONE) return fm__owner_ok(p, op);
    fm__lock(p);
    return true;
}
static void fm__leave(const fm_pool *p) {
    if (p) fm__unlock(p);
}

void fm_pool_set_owner_thread(fm_pool *pool) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_set_owner_thread(NULL)");
        return;
    }
#ifdef FM__THREAD_CHECKS
    FM__ATOMIC_STORE(&pool->owner, fm__self(), RELEASE);
#endif
}

void fm_pool_release_owner_thread(fm_pool *pool) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_release_owner_thread(NULL)");
        return;
    }
#ifdef FM__THREAD_CHECKS
    if (!fm__owner_ok(pool, "release_owner_thread")) return;
    FM__ATOMIC_STORE(&pool->owner, (uintptr_t)0, RELEASE);
#endif
}

/* ---- locating without the lock */

/* fm__locate for THREAD_CACHE and LOCKFREE, without the lock: the chunk
 * through the published table, the meta word read atomically. Every problem
 * is told apart precisely (under the lock) by fm__shared_problem. */
static fm_error fm__locate_shared(const fm_pool *p, const void *ptr, fm__loc *out) {
    uintptr_t base = (uintptr_t)ptr & p->base_mask;
    uint32_t idx = fm__table_find_shared(p, base);
    if (idx == FM__NONE) return FM_ERR_FOREIGN_POINTER;
    uint32_t slot = fm__slot_of(p, base, ptr);
    if (slot == FM__NONE) return FM_ERR_FOREIGN_POINTER;
    out->chunk = idx;
    out->slot = slot;
    out->meta = FM__ATOMIC_LOAD(&fm__meta(base)[slot], ACQUIRE);
    return (out->meta & FM__LIVE) ? FM_OK : FM_ERR_DOUBLE_FREE;
}

/* Which problem a bad pointer found without the lock has: the core, under
 * the lock, tells foreign, interior, never handed out and freed apart. */
FM__COLD static fm_error fm__shared_problem(const fm_pool *p, fm_error err, const void *ptr) {
    fm__lock(p);
    fm__loc loc;
    fm_error precise = fm__locate(p, ptr, &loc);
    fm__unlock(p);
    return precise != FM_OK ? precise : err;
}

/* The chunk a thread located last, per thread: frees of items of one chunk
 * skip the table. Checked against the published bases (a trimmed chunk's
 * base is cleared before its memory goes), keyed by the pool's unique id. */
typedef struct fm__chunk_hint {
    uint64_t pool_id;
    uintptr_t base;
    uint32_t chunk;
} fm__chunk_hint;
static FM__THREAD_LOCAL fm__chunk_hint fm__hint;

static inline fm_error fm__locate_fast(const fm_pool *p, const void *ptr, fm__loc *out) {
    uintptr_t base = (uintptr_t)ptr & p->base_mask;
    if (FM__LIKELY(fm__hint.pool_id == p->id && fm__hint.base == base)) {
        uint8_t **bases = FM__ATOMIC_LOAD(&p->hot.bases, ACQUIRE);
        uint32_t slot = fm__slot_of(p, base, ptr);
        if (FM__LIKELY((uintptr_t)FM__ATOMIC_LOAD(&bases[fm__hint.chunk], ACQUIRE) ==
                           base &&
                       slot != FM__NONE)) {
            out->chunk = fm__hint.chunk;
            out->slot = slot;
            out->meta = FM__ATOMIC_LOAD(&fm__meta(base)[slot], ACQUIRE);
            if (FM__LIKELY(out->meta & FM__LIVE)) return FM_OK;
        }
    }
    fm_error err = fm__locate_shared(p, ptr, out);
    if (err == FM_OK) fm__hint = (fm__chunk_hint){p->id, base, out->chunk};
    return err;
}

/* ---- the depot: the core, under p->lock */

/* Moves one slot out of the core for a cache or the stack: allocated from
 * the core, then freed into the cache (generation bumped, live bit clear).
 * may_grow false: only slots the core has without growing. NULL when none
 * (reported only when growth was allowed and failed). */
static void *fm__depot_take(fm_pool *p, bool may_grow) {
    for (;;) {
        void *slot = fm__alloc_fast(p);
        if (!slot) {
            if (!may_grow && p->partial.head == FM__NONE && p->empty.head == FM__NONE &&
                p->fresh.head == FM__NONE)
                return NULL;
            slot = fm__alloc_next_chunk(p);
            if (!slot) return NULL;
        }
        fm__loc loc = {0};
        (void)fm__locate(p, slot, &loc);
        if ((loc.meta & FM__GEN_MAX) == FM__GEN_MAX) {
            fm__free_located(p, slot, &loc); /* generations used up: retired */
            continue;
        }
        fm__meta_set((uintptr_t)p->chunks[loc.chunk].base, loc.slot, (loc.meta & FM__GEN_MAX) + 1);
        fm__slot_to_free(p, slot);
        return slot;
    }
}

/* Returns a free slot of a cache or the stack to the core. */
static void fm__depot_put(fm_pool *p, void *slot) {
    fm__loc loc = {0};
    (void)fm__locate(p, slot, &loc); /* reads as freed: FM_ERR_DOUBLE_FREE */
    loc.meta = FM__LIVE | (loc.meta & FM__GEN_MAX);
    fm__meta_set((uintptr_t)p->chunks[loc.chunk].base, loc.slot, loc.meta);
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    fm__free_located(p, slot, &loc);
}

/* A free slot of a cache or the stack becomes a live item. */
static inline void *fm__cached_to_live(const fm_pool *p, void *slot) {
    uintptr_t base = (uintptr_t)slot & p->base_mask;
    uint32_t s = fm__slot_of(p, base, slot);
    fm__meta_set(base, s, fm__meta_get(base, s) | FM__LIVE);
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    return slot;
}

/* What fm__live_to_cached did. */
enum { FM__NOT_FREED, FM__FREED_TO_CACHE, FM__FREED_RETIRED };

/* A live item found by fm__locate_shared becomes a free slot for a cache or
 * the stack: its meta word goes from live to the next generation with one
 * CAS, so of two racing frees exactly one wins (the other is reported).
 * A slot whose generations are used up is retired through the core. */
static int fm__live_to_cached(fm_pool *p, void *item, const fm__loc *loc, const char *op) {
    uintptr_t base = (uintptr_t)item & p->base_mask;
    uint32_t m = loc->meta;
    if (FM__UNLIKELY((m & FM__GEN_MAX) == FM__GEN_MAX)) {
        /* Generations used up: the core retires the slot. */
        fm__lock(p);
        fm__loc core;
        fm_error err = fm__locate(p, item, &core);
        if (err == FM_OK) fm__free_located(p, item, &core);
        fm__unlock(p);
        if (err != FM_OK) fm__misuse(p, err, item, op);
        return err == FM_OK ? FM__FREED_RETIRED : FM__NOT_FREED;
    }
    if (!FM__ATOMIC_CAS_STRONG(&fm__meta(base)[loc->slot], &m, (m & FM__GEN_MAX) + 1, ACQ_REL, RELAXED)) {
        fm__misuse(p, FM_ERR_DOUBLE_FREE, item, op);
        return FM__NOT_FREED;
    }
    fm__slot_to_free(p, item);
    return FM__FREED_TO_CACHE;
}

/* ---- FM_SYNC_THREAD_CACHE: per-thread magazines
 *
 * Each thread keeps, per pool it used, an entry with up to FM__TC_SLOTS free
 * slots of that pool: alloc pops, free pushes, and only a full or empty
 * magazine exchanges FM__TC_BATCH slots with the depot under the lock. A
 * slot freed on another thread joins that thread's entry for the same pool
 * (entries are keyed by the pool's unique id, never by its address, so a
 * pool re-created at the same address never sees an old entry). Entries are
 * the thread's (C heap); the pool lists them under its lock so stats can sum
 * their counters and destroy can detach them. A thread's exit (its exit hook
 * destructor) returns its slots and counters to the pools still alive; the
 * registry lock orders that against destroy. LOCKFREE pools keep their
 * counters in the same entries (with no slots). The entry a thread used last
 * is fm__tc_last, which pool.h's inline alloc and free use as fm__tc_alloc
 * and fm__tc_free below do, except that the free sets the meta word without
 * a CAS (see pool.h's Threads): with the CAS a warm alloc+free pair took
 * 1.85x NONE's time, without it 1.4x. */

enum { FM__TC_BATCH = FM__TC_SLOTS / 2 };

/* hint_slots of an entry with no hint: slot starts counted from it lie at
 * 2^63 and above, where no user-space pointer is, so no item matches. */
#define FM__TC_NO_HINT ((uintptr_t)1 << 63)

typedef struct fm__tcache {
    fm__tc_entry **entries; /* the thread's entries (fm__tc_entry is in pool.h) */
    uint32_t n, cap;
} fm__tcache;

/* What fm__tc_last names when the thread has no entry: id 0 matches no pool,
 * so every path goes on to fm__tc_find; nothing ever writes to it. */
static fm__tc_entry fm__tc_none = {.hint_slots = FM__TC_NO_HINT};
__thread fm__tc_entry *fm__tc_last __attribute__((tls_model("initial-exec"))) = &fm__tc_none;
static FM__THREAD_LOCAL fm__tcache *fm__tc;
static fm__exit_hook fm__tc_exit;
static fm__once fm__tc_once = FM__ONCE_INIT;
static bool fm__tc_key_ok;
/* Orders thread exit against pool destroy (taken before any pool lock). */
static fm__mutex fm__tc_registry = FM__MUTEX_INIT;

/* A cached slot found live is in another thread's cache too: two frees of
 * its item raced on two threads and both succeeded (the inline free of
 * optimised builds uses no CAS), and the other copy was served. This copy
 * leaves the magazine unserved; that also takes back the free counted twice
 * (frees are derived from count). */
FM__COLD static void fm__tc_report_duplicate(fm_pool *p, const void *slot) {
    FM__ATOMIC_FETCH_ADD(&p->misuse_count, 1, RELAXED);
    fm__report(FM_ERR_DOUBLE_FREE,
               "pool '%s': slot %p is in use but was also in this thread's cache (two frees "
               "of its item raced on two threads); that copy is dropped",
               p->name, slot);
}

/* An entry's share of the pool's user frees. LOCKFREE counts them.
 * THREAD_CACHE counts only allocs, which saves the fast free a counter: over
 * all entries, the slots taken from the depot are those in magazines, the
 * live items and those a thread with no entry freed straight to the depot
 * (tc_gone_frees counts these), so allocs + count - taken, summed over the
 * entries (mod 2^64) plus tc_gone_frees, is exactly the frees. */
static uint64_t fm__entry_frees(const fm_pool *p, const fm__tc_entry *e) {
    if (p->sync != FM_SYNC_THREAD_CACHE) return FM__ATOMIC_LOAD(&e->frees, ACQUIRE);
    return FM__ATOMIC_LOAD(&e->allocs, ACQUIRE) +
           FM__ATOMIC_LOAD(&e->count, ACQUIRE) +
           (FM__ATOMIC_LOAD(&e->next_slot, ACQUIRE) != NULL) -
           FM__ATOMIC_LOAD(&e->taken, ACQUIRE);
}

/* The owning thread: the inline free's last slot joins slots[] (pool.h's
 * free leaves room for it), before the library uses the magazine. The
 * library keeps count below FM__TC_SLOTS between calls (see
 * fm__tc_entry_of), so only this can fill the last place. */
static inline void fm__tc_settle(fm__tc_entry *e) {
    void *slot = FM__ATOMIC_LOAD(&e->next_slot, RELAXED);
    if (FM__LIKELY(!slot)) return;
    e->slots[e->count] = slot;
    e->slot_idx[e->count] = fm__tc_next_idx(e, e->pool->base_mask);
    FM__ATOMIC_STORE(&e->count, e->count + 1, RELAXED);
    FM__ATOMIC_STORE(&e->next_slot, NULL, RELAXED);
}

/* Lock held: count slots from the bottom of the magazine (the coldest) go
 * back to the depot. */
static void fm__tc_flush_locked(fm_pool *p, fm__tc_entry *e, uint32_t count) {
    if (count > e->count) count = e->count;
    uint32_t returned = 0;
    for (uint32_t i = 0; i < count; i++) {
        uintptr_t base = (uintptr_t)e->slots[i] & p->base_mask;
        if (FM__UNLIKELY(fm__meta_get(base, e->slot_idx[i]) & FM__LIVE)) {
            fm__tc_report_duplicate(p, e->slots[i]); /* in use: not the depot's */
            continue;
        }
        fm__depot_put(p, e->slots[i]);
        returned++;
    }
    uint32_t rest = e->count - count;
    memmove(e->slots, e->slots + count, (size_t)rest * sizeof e->slots[0]);
    memmove(e->slot_idx, e->slot_idx + count, (size_t)rest * sizeof e->slot_idx[0]);
    FM__ATOMIC_STORE(&e->count, rest, RELAXED);
    FM__ATOMIC_STORE(&e->taken, e->taken - returned, RELAXED);
}

static void fm__tc_thread_exit(void *arg) {
    fm__tcache *tc = arg;
    fm__tc = NULL;
    fm__tc_last = &fm__tc_none;
    fm__mutex_lock(&fm__tc_registry);
    for (uint32_t i = 0; i < tc->n; i++) {
        fm__tc_entry *e = tc->entries[i];
        if (FM__ATOMIC_LOAD(&e->id, ACQUIRE) != 0) {
            fm_pool *p = e->pool;
            fm__mutex_lock(&p->lock);
            fm__tc_settle(e);
            fm__tc_flush_locked(p, e, e->count);
            p->tc_gone_allocs += e->allocs;
            p->tc_gone_frees += fm__entry_frees(p, e);
            if (e->prev) e->prev->next = e->next;
            else p->tc_entries = e->next;
            if (e->next) e->next->prev = e->prev;
            fm__mutex_unlock(&p->lock);
        }
        free(e);
    }
    fm__mutex_unlock(&fm__tc_registry);
    free(tc->entries);
    free(tc);
}

static void fm__tc_key_create(void) {
    fm__tc_key_ok = fm__exit_hook_create(&fm__tc_exit, fm__tc_thread_exit);
}

/* Destroy: every entry forgets the pool (its thread frees it later). */
static void fm__tc_detach_all(fm_pool *p) {
    fm__mutex_lock(&fm__tc_registry);
    fm__mutex_lock(&p->lock);
    for (fm__tc_entry *e = p->tc_entries, *next; e; e = next) {
        next = e->next;
        p->tc_gone_allocs += FM__ATOMIC_LOAD(&e->allocs, RELAXED);
        p->tc_gone_frees += fm__entry_frees(p, e);
        FM__ATOMIC_STORE(&e->id, 0, RELEASE); /* last write to e */
    }
    p->tc_entries = NULL;
    fm__mutex_unlock(&p->lock);
    fm__mutex_unlock(&fm__tc_registry);
}

/* The calling thread's entry for p, made on first use; NULL (reported) when
 * there is no memory for it. */
FM__NOINLINE static fm__tc_entry *fm__tc_find(fm_pool *p) {
    fm__call_once(&fm__tc_once, fm__tc_key_create);
    if (!fm__tc_key_ok) {
        fm__report(FM_ERR_UNSUPPORTED, "pool '%s': no thread-specific key for thread caches",
                   p->name);
        return NULL;
    }
    fm__tcache *tc = fm__tc;
    if (!tc) {
        tc = calloc(1, sizeof *tc);
        if (!tc || !fm__exit_hook_arm(&fm__tc_exit, tc)) {
            free(tc);
            fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for this thread's cache",
                       p->name);
            return NULL;
        }
        fm__tc = tc;
    }
    /* Find p's entry; entries of destroyed pools are freed on the way. */
    fm__tc_entry *found = NULL;
    for (uint32_t i = 0; i < tc->n;) {
        fm__tc_entry *e = tc->entries[i];
        uint64_t id = FM__ATOMIC_LOAD(&e->id, ACQUIRE);
        if (id == 0) {
            if (fm__tc_last == e) fm__tc_last = &fm__tc_none;
            free(e);
            tc->entries[i] = tc->entries[--tc->n];
            continue;
        }
        if (id == p->id) found = e;
        i++;
    }
    if (!found) {
        if (tc->n == tc->cap) {
            uint32_t cap = tc->cap ? tc->cap * 2 : 8;
            fm__tc_entry **entries = realloc(tc->entries, cap * sizeof *entries);
            if (!entries) goto oom;
            tc->entries = entries;
            tc->cap = cap;
        }
        if (posix_memalign((void **)&found, 64, sizeof *found) != 0) goto oom;
        memset(found, 0, sizeof *found);
        found->id = p->id;
        found->hint_slots = FM__TC_NO_HINT;
        found->pool = p;
        fm__mutex_lock(&p->lock);
        found->next = p->tc_entries;
        if (found->next) found->next->prev = found;
        p->tc_entries = found;
        fm__mutex_unlock(&p->lock);
        tc->entries[tc->n++] = found;
    }
    fm__tc_last = found;
    return found;
oom:
    fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for this thread's cache", p->name);
    return NULL;
}

static inline fm__tc_entry *fm__tc_entry_of(fm_pool *p) {
    fm__tc_entry *e = fm__tc_last;
    if (FM__UNLIKELY(FM__ATOMIC_LOAD(&e->id, RELAXED) != p->id)) e = fm__tc_find(p);
    if (FM__UNLIKELY(e == NULL)) return NULL;
    fm__tc_settle(e);
    /* Between calls count stays below FM__TC_SLOTS, the last place being
     * next_slot's (see pool.h's free). */
    if (FM__UNLIKELY(e->count == FM__TC_SLOTS)) {
        fm__mutex_lock(&p->lock);
        fm__tc_flush_locked(p, e, FM__TC_BATCH);
        fm__mutex_unlock(&p->lock);
    }
    return e;
}

static inline void fm__count(uint64_t *c) {
    FM__ATOMIC_STORE(c, FM__ATOMIC_LOAD(c, RELAXED) + 1, RELAXED);
}

/* The owning thread's pop: the top slot becomes a live item; NULL when it
 * is live already (see fm__tc_drop_top), and then nothing changed. */
static inline void *fm__tc_pop(const fm_pool *p, fm__tc_entry *e) {
    uint32_t n = e->count - 1;
    void *slot = e->slots[n];
    uintptr_t base = (uintptr_t)slot & p->base_mask;
    uint32_t m = fm__meta_get(base, e->slot_idx[n]);
    if (FM__UNLIKELY(m & FM__LIVE)) return NULL;
    FM__ATOMIC_STORE(&e->count, n, RELAXED);
    fm__meta_set(base, e->slot_idx[n], m | FM__LIVE);
    FM__UNPOISON(slot, p->item_size);
    FM__VG_ALLOC(p, slot, p->item_size);
    fm__count(&e->allocs);
    return slot;
}

/* The owning thread's push of a free slot; the magazine has room. */
static inline void fm__tc_push(fm__tc_entry *e, void *slot, uint32_t idx) {
    e->slots[e->count] = slot;
    e->slot_idx[e->count] = idx;
    FM__ATOMIC_STORE(&e->count, e->count + 1, RELAXED);
}

FM__COLD static void fm__tc_drop_top(fm_pool *p, fm__tc_entry *e) {
    fm__tc_report_duplicate(p, e->slots[e->count - 1]);
    FM__ATOMIC_STORE(&e->count, e->count - 1, RELAXED);
}

FM__NOINLINE static bool fm__tc_refill(fm_pool *p, fm__tc_entry *e) {
    fm__mutex_lock(&p->lock);
    uint32_t n = 0;
    void *slot = fm__depot_take(p, true);
    while (slot) {
        uintptr_t base = (uintptr_t)slot & p->base_mask;
        e->slots[n] = slot;
        e->slot_idx[n++] = fm__slot_of(p, base, slot);
        slot = n < FM__TC_BATCH ? fm__depot_take(p, false) : NULL;
    }
    FM__ATOMIC_STORE(&e->count, n, RELAXED);
    FM__ATOMIC_STORE(&e->taken, e->taken + n, RELAXED);
    fm__mutex_unlock(&p->lock);
    return n > 0;
}

FM__NOINLINE static void *fm__tc_alloc_slow(fm_pool *p) {
    fm__tc_entry *e = fm__tc_entry_of(p);
    if (FM__UNLIKELY(!e)) {
        fm__mutex_lock(&p->lock);
        p->failed_allocs++;
        fm__mutex_unlock(&p->lock);
        return NULL;
    }
    for (;;) {
        if (FM__UNLIKELY(e->count == 0) && !fm__tc_refill(p, e)) return NULL;
        void *item = fm__tc_pop(p, e);
        if (FM__LIKELY(item != NULL)) return item;
        fm__tc_drop_top(p, e);
    }
}

/* The common alloc: the thread's last entry is this pool's and has a slot;
 * nothing here needs a register saved, the rest is tail-called. */
static inline void *fm__tc_alloc(fm_pool *p) {
    fm__tc_entry *e = fm__tc_last;
    if (FM__LIKELY(FM__ATOMIC_LOAD(&e->id, RELAXED) == p->id && e->count != 0 &&
                   !FM__ATOMIC_LOAD(&e->next_slot, RELAXED))) {
        void *item = fm__tc_pop(p, e);
        if (FM__LIKELY(item != NULL)) return item;
    }
    return fm__tc_alloc_slow(p);
}

FM__NOINLINE static void fm__tc_free_slow(fm_pool *p, void *item, const char *op) {
    fm__loc loc;
    fm_error err = fm__locate_fast(p, item, &loc);
    if (FM__UNLIKELY(err != FM_OK)) {
        fm__misuse(p, fm__shared_problem(p, err, item), item, op);
        return;
    }
    fm__tc_entry *e = fm__tc_entry_of(p);
    if (FM__UNLIKELY(!e)) {
        /* No cache for this thread: straight back to the depot. */
        fm__mutex_lock(&p->lock);
        fm__loc core;
        err = fm__locate(p, item, &core);
        if (err == FM_OK) {
            fm__free_located(p, item, &core);
            p->tc_gone_frees++;
        }
        fm__mutex_unlock(&p->lock);
        if (err != FM_OK) fm__misuse(p, err, item, op);
        return;
    }
    int done = fm__live_to_cached(p, item, &loc, op);
    if (done != FM__FREED_TO_CACHE) {
        if (done == FM__FREED_RETIRED) FM__ATOMIC_STORE(&e->taken, e->taken - 1, RELAXED); /* back in the depot */
        return;
    }
    e->hint_meta = fm__meta((uintptr_t)item & p->base_mask);
    FM__ATOMIC_STORE(&e->hint_slots, ((uintptr_t)item & p->base_mask) + p->hot.slots_off, RELAXED);
    if (FM__UNLIKELY(e->count >= FM__TC_SLOTS - 1)) {
        fm__mutex_lock(&p->lock);
        fm__tc_flush_locked(p, e, FM__TC_BATCH);
        fm__mutex_unlock(&p->lock);
    }
    fm__tc_push(e, item, loc.slot);
}

/* The common free: an item of the chunk this thread's entry freed into last
 * (trim clears every entry's hint before it releases a chunk, so the hint
 * never names memory that is not this pool's), live, into a magazine with
 * room. Everything else takes the full path above. */
static inline void fm__tc_free(fm_pool *p, void *item, const char *op) {
    fm__tc_entry *e = fm__tc_last;
    uintptr_t hs = FM__ATOMIC_LOAD(&e->hint_slots, RELAXED);
    uint64_t slot = fm__exact_index((uintptr_t)item - hs, p->hot.inv, p->hot.inv_shift);
    if (FM__LIKELY(FM__ATOMIC_LOAD(&e->id, RELAXED) == p->id &&
                   slot < p->hot.per_chunk && e->count < FM__TC_SLOTS - 1 &&
                   !FM__ATOMIC_LOAD(&e->next_slot, RELAXED))) {
        uint32_t *mw = &fm__meta(hs - p->hot.slots_off)[slot];
        uint32_t m = FM__ATOMIC_LOAD(mw, ACQUIRE);
        /* Live with a generation below the maximum: negative, below -1. */
        if (FM__LIKELY((int32_t)m < -1 &&
                       FM__ATOMIC_CAS_STRONG(mw, &m, (m & FM__GEN_MAX) + 1, ACQ_REL, RELAXED))) {
            fm__slot_to_free(p, item);
            fm__tc_push(e, item, (uint32_t)slot);
            return;
        }
    }
    fm__tc_free_slow(p, item, op);
}

/* Trim, lock held: no entry's hint may outlive the chunks it releases. */
static void fm__tc_forget_hints(fm_pool *p) {
    for (fm__tc_entry *e = p->tc_entries; e; e = e->next)
        FM__ATOMIC_STORE(&e->hint_slots, FM__TC_NO_HINT, RELAXED);
}

void fm_pool_flush_thread_cache(fm_pool *pool) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_flush_thread_cache(NULL)");
        return;
    }
    if (pool->sync != FM_SYNC_THREAD_CACHE) return;
    fm__tcache *tc = fm__tc;
    if (!tc) return;
    for (uint32_t i = 0; i < tc->n; i++) {
        fm__tc_entry *e = tc->entries[i];
        if (FM__ATOMIC_LOAD(&e->id, RELAXED) != pool->id) continue;
        fm__mutex_lock(&pool->lock);
        fm__tc_settle(e);
        fm__tc_flush_locked(pool, e, e->count);
        fm__mutex_unlock(&pool->lock);
    }
}

/* ---- FM_SYNC_LOCKFREE: one shared stack of free slots
 *
 * The head is one 64-bit word: a tag that every successful push and pop
 * bumps, and the global index (record << slot_bits | slot) of the top slot.
 * A pop reads the top slot's link and swaps the head for (tag + 1, link) in
 * one CAS; if the slot was popped and pushed again meanwhile (ABA), the tag
 * differs and the CAS fails. Links live in per-record arrays that outlive
 * their chunks, so a stale read is harmless. An empty stack is refilled from
 * the depot under the lock (which is where growth happens); trim drains the
 * stack into the depot under the lock first. */

enum { FM__LF_BATCH = 32 };

/* LOCKFREE's user counters live in the same per-thread entries as
 * THREAD_CACHE's magazines (with no slots in them): a plain store per
 * operation instead of an atomic add on a shared line. */
FM__NOINLINE static void fm__count_uncached(fm_pool *p, bool alloc) {
    fm__mutex_lock(&p->lock);
    if (alloc) p->tc_gone_allocs++;
    else p->tc_gone_frees++;
    fm__mutex_unlock(&p->lock);
}

static inline void fm__count_op(fm_pool *p, bool alloc) {
    fm__tc_entry *e = fm__tc_entry_of(p);
    if (FM__LIKELY(e != NULL)) fm__count(alloc ? &e->allocs : &e->frees);
    else fm__count_uncached(p, alloc);
}

static inline uint32_t *fm__lf_link(const fm_pool *p, uint32_t g) {
    uint32_t **links = FM__ATOMIC_LOAD(&p->lf_links, ACQUIRE);
    uint32_t *arr = FM__ATOMIC_LOAD(&links[g >> p->hot.slot_bits], ACQUIRE);
    return &arr[g & ((1u << p->hot.slot_bits) - 1u)];
}

static inline uint8_t *fm__lf_slot(const fm_pool *p, uint32_t g) {
    uint8_t **bases = FM__ATOMIC_LOAD(&p->hot.bases, ACQUIRE);
    uint8_t *base = FM__ATOMIC_LOAD(&bases[g >> p->hot.slot_bits], ACQUIRE);
    return fm__slot(p, base, g & ((1u << p->hot.slot_bits) - 1u));
}

static inline uint32_t fm__lf_index(const fm_pool *p, uint32_t chunk, uint32_t slot) {
    return chunk << p->hot.slot_bits | slot;
}

/* Pushes the chain first..last (linked already) onto the stack. */
static void fm__lf_push(fm_pool *p, uint32_t first, uint32_t last) {
    uint32_t *last_link = fm__lf_link(p, last);
    uint64_t old = FM__ATOMIC_LOAD(&p->lf.head, RELAXED);
    for (;;) {
        FM__ATOMIC_STORE(last_link, (uint32_t)old, RELAXED);
        uint64_t next = ((old >> 32) + 1) << 32 | first;
        if (FM__ATOMIC_CAS_WEAK(&p->lf.head, &old, next, RELEASE, RELAXED))
            return;
    }
}

/* Lock held: the whole stack becomes private (one CAS) and goes back to the
 * depot. */
static void fm__lf_drain(fm_pool *p) {
    uint64_t old = FM__ATOMIC_LOAD(&p->lf.head, ACQUIRE);
    uint64_t empty;
    do {
        empty = ((old >> 32) + 1) << 32 | FM__NONE;
    } while (!FM__ATOMIC_CAS_WEAK(&p->lf.head, &old, empty, ACQ_REL, ACQUIRE));
    for (uint32_t g = (uint32_t)old; g != FM__NONE;) {
        uint32_t next = FM__ATOMIC_LOAD(fm__lf_link(p, g), RELAXED);
        fm__depot_put(p, fm__lf_slot(p, g));
        g = next;
    }
}

FM__NOINLINE static void *fm__lf_refill(fm_pool *p) {
    fm__mutex_lock(&p->lock);
    void *mine = fm__depot_take(p, true);
    if (!mine) {
        fm__mutex_unlock(&p->lock);
        return NULL;
    }
    uint32_t first = FM__NONE, last = FM__NONE;
    for (uint32_t n = 1; n < FM__LF_BATCH; n++) {
        void *slot = fm__depot_take(p, false);
        if (!slot) break;
        fm__loc loc = {0};
        (void)fm__locate(p, slot, &loc);
        uint32_t g = fm__lf_index(p, loc.chunk, loc.slot);
        FM__ATOMIC_STORE(fm__lf_link(p, g), first, RELAXED);
        if (first == FM__NONE) last = g;
        first = g;
    }
    fm__mutex_unlock(&p->lock);
    if (first != FM__NONE) fm__lf_push(p, first, last);
    return mine;
}

FM__NOINLINE static void *fm__lf_alloc(fm_pool *p) {
    uint64_t old = FM__ATOMIC_LOAD(&p->lf.head, ACQUIRE);
    void *slot;
    for (;;) {
        uint32_t g = (uint32_t)old;
        if (g == FM__NONE) {
            slot = fm__lf_refill(p);
            if (!slot) return NULL;
            break;
        }
        uint32_t next = FM__ATOMIC_LOAD(fm__lf_link(p, g), RELAXED);
        uint64_t desired = ((old >> 32) + 1) << 32 | next;
        if (FM__ATOMIC_CAS_WEAK(&p->lf.head, &old, desired, ACQUIRE, ACQUIRE)) {
            slot = fm__lf_slot(p, g);
            break;
        }
    }
    fm__count_op(p, true);
    return fm__cached_to_live(p, slot);
}

FM__NOINLINE static void fm__lf_free(fm_pool *p, void *item, const char *op) {
    fm__loc loc;
    fm_error err = fm__locate_fast(p, item, &loc);
    if (FM__UNLIKELY(err != FM_OK)) {
        fm__misuse(p, fm__shared_problem(p, err, item), item, op);
        return;
    }
    int done = fm__live_to_cached(p, item, &loc, op);
    if (done != FM__NOT_FREED) fm__count_op(p, false);
    if (done != FM__FREED_TO_CACHE) return;
    uint32_t g = fm__lf_index(p, loc.chunk, loc.slot);
    fm__lf_push(p, g, g);
}

/* ---- dispatch */

/* Never inlined: the FM_SYNC_NONE paths that test for it stay as lean as
 * they were before policies existed (no registers saved for these). */
FM__NOINLINE static void *fm__mutex_alloc(fm_pool *p) {
    fm__mutex_lock(&p->lock);
    void *item = fm__alloc_core(p);
    fm__mutex_unlock(&p->lock);
    return item;
}

FM__NOINLINE static void fm__mutex_free(fm_pool *p, void *item, const char *op) {
    fm__mutex_lock(&p->lock);
    fm__free_checked(p, item, op);
    fm__mutex_unlock(&p->lock);
}

FM__NOINLINE static void *fm__sync_alloc(fm_pool *p) {
    if (FM__LIKELY(p->sync == FM_SYNC_THREAD_CACHE)) return fm__tc_alloc(p);
    if (p->sync == FM_SYNC_LOCKFREE) return fm__lf_alloc(p);
    return fm__mutex_alloc(p);
}

FM__NOINLINE static void fm__sync_free(fm_pool *p, void *item, const char *op) {
    if (!item) return;
    if (FM__LIKELY(p->sync == FM_SYNC_THREAD_CACHE)) fm__tc_free(p, item, op);
    else if (p->sync == FM_SYNC_LOCKFREE) fm__lf_free(p, item, op);
    else fm__mutex_free(p, item, op);
}

/* Items live for the user: the core's count, or under THREAD_CACHE and
 * LOCKFREE the user's allocs minus frees (caches' free slots excluded). */
static void fm__user_counts(const fm_pool *p, uint64_t *allocs, uint64_t *frees) {
    if (fm__cached_policy(p)) {
        uint64_t a = p->tc_gone_allocs, f = p->tc_gone_frees;
        for (const fm__tc_entry *e = p->tc_entries; e; e = e->next) {
            f += fm__entry_frees(p, e);
            a += FM__ATOMIC_LOAD(&e->allocs, ACQUIRE);
        }
        *allocs = a;
        *frees = f;
    } else {
        *allocs = p->cs->total_allocs;
        *frees = p->cs->total_allocs - fm__live(p);
    }
}

static uint64_t fm__user_live(const fm_pool *p) {
    uint64_t allocs, frees;
    fm__lock(p);
    fm__user_counts(p, &allocs, &frees);
    fm__unlock(p);
    return allocs > frees ? allocs - frees : 0;
}

/* THREAD_CACHE and LOCKFREE: the lookup needs no lock; only a problem takes
 * it (other policies call fm__locate with the lock held or as the owner). */
static fm_error fm__locate_for(const fm_pool *p, const void *ptr, fm__loc *out) {
    fm_error err = fm__locate_fast(p, ptr, out);
    return err == FM_OK ? err : fm__shared_problem(p, err, ptr);
}

/* ================================================================ create */

static bool fm__desc_valid(const fm_pool_desc *d, const char *name) {
    const char *why = NULL;
    if (d->item_size == 0) why = "item_size is 0";
    else if (d->item_size > FM_POOL_MAX_ITEM_SIZE) why = "item_size above FM_POOL_MAX_ITEM_SIZE";
    else if (d->item_align && !FM_IS_POW2(d->item_align)) why = "item_align is not a power of two";
    else if (d->item_align > FM_MAX_ALIGN) why = "item_align above 4096";
    else if ((unsigned)d->growth >= FM_GROWTH_COUNT) why = "unknown growth policy";
    else if (d->grow_factor != 0.0f && !(d->grow_factor > 1.0f && d->grow_factor <= 64.0f))
        why = "grow_factor must be in (1, 64]";
    else if ((unsigned)d->sync >= FM_SYNC_COUNT) why = "unknown sync policy";
    else if (!fm_allocator_valid(&d->allocator))
        why = "allocator needs both alloc and free";
    else if (d->max_capacity && d->initial_capacity > d->max_capacity)
        why = "initial_capacity above max_capacity";
    if (why) fm__report(FM_ERR_INVALID_ARG, "pool '%s': %s", name, why);
    return why == NULL;
}

/* Picks chunk_bytes (a power of two, >= 64 KiB) so a chunk holds at least a
 * few dozen items, then fits as many slots as the meta words and the free
 * stack leave room for. The smallest chunk that holds 32 slots holds fewer
 * than 65536 (a slot is 4 bytes or more), so 16-bit stack entries suffice. */
static void fm__geometry(fm_pool *p) {
    const size_t per_slot_head = sizeof(uint32_t) + sizeof(uint16_t);
#ifdef FM_TRACK_SITES
    const size_t per_slot_meta = per_slot_head + sizeof(fm__site);
#else
    const size_t per_slot_meta = per_slot_head;
#endif
    uint32_t stride = p->hot.stride;
    uint32_t min_slots = stride >= (1u << 20) ? 4 : stride >= (1u << 16) ? 16 : 32;
    size_t want = (stride + per_slot_meta) * min_slots + p->item_align;
    size_t cb = (size_t)64 << 10;
    while (cb < want) cb <<= 1;
    uint32_t per = (uint32_t)(cb / (stride + per_slot_meta));
    for (;;) {
        size_t stack = (size_t)per * sizeof(uint32_t);
        size_t sites = fm_align_up(stack + (size_t)per * sizeof(uint16_t), sizeof(void *));
        size_t meta_end = sites + (per_slot_meta - per_slot_head) * per;
        size_t off = fm_align_up(meta_end, p->item_align);
        if (off + (size_t)per * stride <= cb) {
            p->stack_off = (uint32_t)stack;
            p->sites_off = (uint32_t)sites;
            p->hot.slots_off = (uint32_t)off;
            break;
        }
        per--;
    }
    p->hot.per_chunk = per;
    p->chunk_bytes = cb;
    p->chunk_shift = fm__ctz32((uint32_t)(cb >> 1)) + 1;
    p->base_mask = ~(uintptr_t)(cb - 1);
    p->hot.base_mask = p->base_mask;
    p->hot.slot_bits = 1;
    while ((1u << p->hot.slot_bits) < per) p->hot.slot_bits++;
    p->hot.inv_shift = fm__ctz32(p->hot.stride);
    uint64_t odd = p->hot.stride >> p->hot.inv_shift, inv = odd;
    for (int i = 0; i < 6; i++) inv *= 2u - odd * inv; /* Newton: odd * inv == 1 mod 2^64 */
    p->hot.inv = inv;
}

fm_pool *fm_pool_create(const fm_pool_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, fm__def(desc->type_name, "pool"));
    if (!fm__desc_valid(desc, name)) return NULL;
    fm_clock_init();

    size_t self_bytes;
    fm_pool *p = FM__OBJECT_NEW(fm_pool, &desc->allocator, "pool", name, &self_bytes);
    if (!p) return NULL;
    p->desc = *desc;
    p->desc.name = p->name;
    p->desc.item_align = fm__def(desc->item_align, FM_DEFAULT_ALIGN);
    p->desc.grow_factor = desc->grow_factor != 0.0f ? desc->grow_factor : 2.0f;
    p->self_bytes = self_bytes;
    p->bytes_reserved = self_bytes;
    p->item_size = (uint32_t)desc->item_size;
    p->item_align = (uint32_t)p->desc.item_align;
    /* Slots of 4 bytes or more keep a chunk under 65536 slots (fm__geometry). */
    size_t min_slot = sizeof(uint32_t);
    p->hot.stride = (uint32_t)fm_align_up(p->item_size > min_slot ? p->item_size : min_slot,
                                          p->item_align);
    fm__geometry(p);
    p->desc.grow_step = fm__def(desc->grow_step, p->hot.per_chunk);
    p->desc.initial_capacity = fm__def(desc->initial_capacity, p->hot.per_chunk);
    if (p->desc.max_capacity && p->desc.initial_capacity > p->desc.max_capacity)
        p->desc.initial_capacity = p->desc.max_capacity;
    p->use_os = fm__allocator_is_system(&desc->allocator) && fm__os_get_caps()->has_virtual_reserve;
    p->sync = desc->sync;
    p->hot.sync = (uint32_t)desc->sync;
    p->id = (FM__ATOMIC_FETCH_ADD(&fm__pool_ids, 1, RELAXED) + 1);
    p->hot.tc_id = p->sync == FM_SYNC_THREAD_CACHE ? p->id : UINT64_MAX;
#ifdef FM__THREAD_CHECKS
    p->owner = fm__self();
#endif
    p->hot.cur_base = 1;
    p->hot.cur_next_slot = NULL;
    p->hot.cur_next = FM__NONE;
    p->hot.cur_top = 0;
    /* The core works on hot (NONE) or on the shadow; hot's current chunk
     * stays empty (cur_next_slot NULL, cur_top 0, cur_bump 0) for every other
     * policy. */
    p->shadow = p->hot;
    p->cs = p->sync == FM_SYNC_NONE ? &p->hot : &p->shadow;
    p->cur_idx = FM__NONE;
    p->lf.head = FM__NONE;
    for (uint32_t k = 0; k < FM__DM_SLOTS; k++) p->dm_base[k] = 1;
    if (p->sync != FM_SYNC_NONE && !fm__mutex_init(&p->lock, true)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': cannot create its lock", name);
        fm_allocator_free(&desc->allocator, p, self_bytes);
        return NULL;
    }
    p->unused_head = FM__NONE;
    fm__list_init(&p->partial);
    fm__list_init(&p->empty);
    fm__list_init(&p->fresh);
    /* Handles of this pool carry its salt in their generation bits, so those
     * of another pool, or of an earlier pool at this address, do not match. */
    uint64_t seed = ((uint64_t)(uintptr_t)p ^ fm_clock_now()) * 0x9E3779B97F4A7C15ull;
    p->hot.salt = (uint32_t)(seed >> 33);
    FM__VG_CREATE_POOL(p);

    if (!fm__grow(p, p->desc.initial_capacity, false)) {
        /* The growth reported the failure; destroy of an empty pool reports
         * nothing, so that report stays the thread's last error. */
        fm_pool_destroy(p);
        return NULL;
    }
    return p;
}

/* ================================================================ destroy */

#ifdef FM_TRACK_SITES
enum { FM__LEAK_SITES = 16 };
typedef struct fm__leak_site {
    const char *file;
    int line;
    uint64_t count;
} fm__leak_site;
#endif

static void fm__report_leaks(fm_pool *p, uint64_t live) {
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "pool '%s': destroyed with %llu live item(s)", p->name,
                     (unsigned long long)live);
#ifdef FM_TRACK_SITES
    fm__leak_site sites[FM__LEAK_SITES];
    uint32_t n_sites = 0;
    uint64_t other = 0;
    for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
        fm__chunk *c = &p->chunks[ci];
        if (c->state == FM__CHUNK_UNUSED || c->state == FM__CHUNK_FRESH) continue;
        uint32_t bump = fm__chunk_bump(p, ci);
        for (uint32_t s = 0; s < bump; s++) {
            if (!(fm__meta_get((uintptr_t)c->base, s) & FM__LIVE)) continue;
            const fm__site *site = &fm__sites(p, c->base)[s];
            uint32_t j = 0;
            while (j < n_sites && !(sites[j].file == site->file && sites[j].line == site->line))
                j++;
            if (j == n_sites && n_sites < FM__LEAK_SITES)
                sites[n_sites++] = (fm__leak_site){site->file, site->line, 0};
            if (j < n_sites) sites[j].count++;
            else other++;
        }
    }
    for (uint32_t j = 0; j < n_sites && n > 0 && (size_t)n < sizeof msg; j++) {
        n += snprintf(msg + n, sizeof msg - (size_t)n, "%s %llu from %s:%d", j ? "," : ":",
                      (unsigned long long)sites[j].count,
                      sites[j].file ? sites[j].file : "(unknown site)", sites[j].line);
    }
    if (other && n > 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n, ", %llu from other sites",
                 (unsigned long long)other);
#endif
    (void)n;
    fm__report(FM_ERR_LEAK, "%s", msg);
}

void fm_pool_destroy(fm_pool *pool) {
    if (!pool) return;
    fm_pool *p = pool;
    /* Caches of other threads forget the pool; what they hold is returned
     * with the chunks. */
    if (fm__cached_policy(p)) fm__tc_detach_all(p);
    uint64_t live = fm__user_live(p);
    if (live && !p->desc.silent_destroy) fm__report_leaks(p, live);
    if (live && p->desc.dtor) {
        for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
            fm__chunk *c = &p->chunks[ci];
            if (c->state == FM__CHUNK_UNUSED || c->state == FM__CHUNK_FRESH) continue;
            uint32_t bump = fm__chunk_bump(p, ci);
            for (uint32_t s = 0; s < bump; s++) {
                if (fm__meta_get((uintptr_t)c->base, s) & FM__LIVE)
                    p->desc.dtor(fm__slot(p, c->base, s), p->desc.user);
            }
        }
    }
    for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
        if (p->chunks[ci].state != FM__CHUNK_UNUSED) fm__release_chunk(p, ci);
    }
    fm_allocator a = p->desc.allocator;
    for (uint32_t i = 0; p->lf_links && i < p->chunk_top; i++)
        if (p->lf_links[i]) fm_allocator_free(&a, p->lf_links[i], fm__links_bytes(p));
    fm_allocator_free(&a, p->chunks, fm__records_bytes(p->chunk_cap));
    fm__table_delete(&a, p->table, p->table_cap);
    for (uint32_t i = 0; i < p->n_retired_arrays; i++)
        fm_allocator_free(&a, p->retired_arrays[i], p->retired_bytes[i]);
    if (p->sync != FM_SYNC_NONE) fm__mutex_destroy(&p->lock);
    FM__VG_DESTROY_POOL(p);
    fm_allocator_free(&a, p, p->self_bytes);
}

/* ====================================================== reserve and trim */

static bool fm__reserve_core(fm_pool *pool, uint32_t capacity) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_reserve(NULL)");
        return false;
    }
    if (capacity <= pool->capacity) return true;
    if (pool->desc.growth == FM_GROWTH_FIXED) {
        fm__report(FM_ERR_POOL_FULL, "pool '%s': FIXED pool cannot grow to %u items (capacity %llu)",
                   pool->name, capacity, (unsigned long long)pool->capacity);
        return false;
    }
    if (pool->desc.max_capacity && capacity > pool->desc.max_capacity) {
        fm__report(FM_ERR_POOL_FULL, "pool '%s': reserve(%u) above max_capacity %u", pool->name,
                   capacity, pool->desc.max_capacity);
        return false;
    }
    return fm__grow(pool, capacity - pool->capacity, true);
}

static bool fm__trimmable(const fm_pool *p, uint32_t idx) {
    const fm__chunk *c = &p->chunks[idx];
    uint64_t usable = c->limit - c->retired;
    return p->capacity - usable >= p->desc.initial_capacity;
}

static size_t fm__trim_core(fm_pool *pool) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_trim(NULL)");
        return 0;
    }
    fm_pool *p = pool;
    fm__settle_next(p); /* a parked slot's chunk may be empty now */
    size_t before = p->bytes_reserved;
    /* Never-used chunks first (cheapest to get back), then empty ones, then
     * the current chunk if it is empty. */
    fm__list *lists[] = {&p->fresh, &p->empty};
    for (int i = 0; i < 2; i++) {
        while (lists[i]->tail != FM__NONE && fm__trimmable(p, lists[i]->tail)) {
            uint32_t idx = lists[i]->tail;
            fm__list_unlink(p, lists[i], idx);
            fm__release_chunk(p, idx);
        }
    }
    if (p->cur_idx != FM__NONE && fm__chunk_live(p, p->cur_idx) == 0 &&
        fm__trimmable(p, p->cur_idx)) {
        uint32_t idx = p->cur_idx;
        fm__park_current(p);
        if (p->chunks[idx].state == FM__CHUNK_EMPTY) fm__list_unlink(p, &p->empty, idx);
        fm__release_chunk(p, idx);
    }
    size_t released = before - p->bytes_reserved;
    if (released) {
        p->trim_events++;
        p->bytes_trimmed += released;
    }
    return released;
}

/* ================================================================ queries */

static bool fm__owns_core(const fm_pool *pool, const void *item) {
    if (!pool || !item) return false;
    fm__loc loc;
    if (fm__cached_policy(pool)) return fm__locate_shared(pool, item, &loc) == FM_OK;
    return fm__locate(pool, item, &loc) == FM_OK;
}

static void fm__foreach_core(fm_pool *pool, fm_item_fn fn, void *user) {
    if (!pool || !fn) {
        fm__report(FM_ERR_INVALID_ARG, "pool '%s': fm_pool_foreach needs a pool and a function",
                   pool ? pool->name : "?");
        return;
    }
    /* Indices, not pointers: fn may allocate, and growth moves the records. */
    uint32_t top = pool->chunk_top;
    for (uint32_t ci = 0; ci < top; ci++) {
        uint32_t state = pool->chunks[ci].state;
        if (state == FM__CHUNK_UNUSED || state == FM__CHUNK_FRESH) continue;
        uint8_t *base = pool->chunks[ci].base;
        uint32_t bump = fm__chunk_bump(pool, ci);
        for (uint32_t s = 0; s < bump; s++) {
            if (pool->chunks[ci].base != base) break; /* trimmed by fn */
            if (fm__meta_get((uintptr_t)base, s) & FM__LIVE) fn(fm__slot(pool, base, s), user);
        }
    }
}

static void fm__stats_core(const fm_pool *pool, fm_pool_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_get_stats(NULL)");
        return;
    }
    const fm_pool *p = pool;
    out->name = p->name;
    out->item_size = p->item_size;
    out->item_align = p->item_align;
    out->stride = p->hot.stride;
    out->chunk_bytes = p->chunk_bytes;
    out->items_per_chunk = p->hot.per_chunk;
    out->chunk_count = p->chunk_count;
    out->capacity = p->capacity;
    out->live = fm__live(p);
    out->peak_live = p->cs->peak_live;
    out->total_allocs = p->cs->total_allocs;
    out->total_frees = p->cs->total_allocs - fm__live(p);
    out->failed_allocs = p->failed_allocs;
    out->misuse_count = FM__ATOMIC_LOAD(&p->misuse_count, RELAXED);
    out->grow_events = p->grow_events;
    out->grow_ns_total = fm_clock_to_ns(p->grow_ticks_total);
    out->grow_ns_max = fm_clock_to_ns(p->grow_ticks_max);
    out->trim_events = p->trim_events;
    out->bytes_trimmed = p->bytes_trimmed;
    out->bytes_reserved = p->bytes_reserved;
    out->bytes_overhead = p->bytes_reserved - p->capacity * p->item_size;
}

fm_pool_desc fm_pool_get_desc(const fm_pool *pool) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_get_desc(NULL)");
        return (fm_pool_desc){0};
    }
    return pool->desc;
}

const char *fm_pool_name(const fm_pool *pool) { return pool ? pool->name : "(null)"; }

/* ============================================================ handles */

static fm_handle fm__handle_core(const fm_pool *pool, const void *item) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_handle(NULL, ...)");
        return FM_HANDLE_NULL;
    }
    fm__loc loc;
    fm_error err = item ? fm__locate_policy(pool, item, &loc) : FM_ERR_FOREIGN_POINTER;
    if (err != FM_OK) {
        /* A freed slot is "not a live item", like any foreign pointer. */
        fm__misuse((fm_pool *)pool, err == FM_ERR_DOUBLE_FREE ? FM_ERR_FOREIGN_POINTER : err,
                   item, "handle");
        return FM_HANDLE_NULL;
    }
    uint64_t gen = (loc.meta & FM__GEN_MAX) ^ pool->hot.salt;
    uint64_t where = ((uint64_t)loc.chunk + 1) << pool->hot.slot_bits | loc.slot;
    return (fm_handle){gen << 32 | where};
}


/* ======================================================= reference counts */

/* The count word of a live located item, allocating the chunk's count array
 * on first use. NULL (reported) when it cannot be had. */
static uint64_t *fm__ref_word(fm_pool *p, const fm__loc *loc) {
    fm__chunk *c = fm__chunk_at(p, loc->chunk);
    if (!c->refs) {
        size_t bytes = (size_t)p->hot.per_chunk * sizeof *c->refs;
        uint64_t *refs = fm_allocator_alloc(&p->desc.allocator, bytes, alignof(uint64_t));
        if (!refs) {
            fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': no memory for reference counts",
                       p->name);
            return NULL;
        }
        memset(refs, 0, bytes);
        FM__ATOMIC_STORE(&c->refs, refs, RELEASE); /* lock-free readers: see fm__refs_shared */
    }
    return &c->refs[loc->slot];
}

/* A count word belongs to the item whose generation it carries; any other
 * word is left over from an earlier item of the slot: that item has count 1. */
static uint32_t fm__ref_count(const fm_pool *p, const fm__loc *loc) {
    const uint64_t *refs = p->chunks[loc->chunk].refs;
    if (!refs) return 1;
    uint64_t w = refs[loc->slot];
    return (uint32_t)(w >> 32) == (loc->meta & FM__GEN_MAX) ? (uint32_t)w + 1 : 1;
}

static fm_error fm__ref_locate(const fm_pool *p, const void *item, fm__loc *loc) {
    fm_error err = item ? fm__locate_policy(p, item, loc) : FM_ERR_FOREIGN_POINTER;
    return err == FM_ERR_DOUBLE_FREE ? FM_ERR_REFCOUNT : err;
}

static void fm__retain_core(fm_pool *pool, void *item) {
    fm__loc loc;
    fm_error err = fm__ref_locate(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse(pool, err, item, "retain");
        return;
    }
    if (FM__UNLIKELY(fm__cached_policy(pool))) {
        fm__retain_shared(pool, item, &loc);
        return;
    }
    uint32_t count = fm__ref_count(pool, &loc);
    if (count == UINT32_MAX) {
        fm__misuse(pool, FM_ERR_REFCOUNT, item, "retain (count at its maximum)");
        return;
    }
    uint64_t *w = fm__ref_word(pool, &loc);
    if (w) *w = (uint64_t)(loc.meta & FM__GEN_MAX) << 32 | count;
}

static bool fm__release_core(fm_pool *pool, void *item) {
    fm__loc loc;
    fm_error err = fm__ref_locate(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse(pool, err, item, "release");
        return false;
    }
    if (FM__UNLIKELY(fm__cached_policy(pool))) return fm__release_shared(pool, item, &loc);
    uint32_t count = fm__ref_count(pool, &loc);
    if (count > 1) {
        pool->chunks[loc.chunk].refs[loc.slot] =
            (uint64_t)(loc.meta & FM__GEN_MAX) << 32 | (count - 2);
        return false;
    }
    if (pool->desc.dtor) {
        pool->desc.dtor(item, pool->desc.user);
        if (fm__locate(pool, item, &loc) != FM_OK) {
            fm__misuse(pool, FM_ERR_DOUBLE_FREE, item, "release (freed by its own dtor)");
            return true;
        }
    }
    fm__free_located(pool, item, &loc);
    return true;
}

static uint32_t fm__refcount_core(const fm_pool *pool, const void *item) {
    fm__loc loc;
    fm_error err = fm__ref_locate(pool, item, &loc);
    if (err != FM_OK) {
        fm__misuse((fm_pool *)pool, err, item, "refcount");
        return 0;
    }
    if (FM__UNLIKELY(fm__cached_policy(pool))) return fm__refcount_shared(pool, &loc);
    return fm__ref_count(pool, &loc);
}

/* ================================================================= check */

#define FM__CHECK(cond, ...)                                                                   \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fm__report(FM_ERR_CORRUPT, __VA_ARGS__);                                           \
            return FM_ERR_CORRUPT;                                                             \
        }                                                                                      \
    } while (0)

static fm_error fm__check_core(const fm_pool *pool) {
    if (!pool) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_check(NULL)");
        return FM_ERR_INVALID_ARG;
    }
    const fm_pool *p = pool;
    uint64_t live = 0, capacity = 0, retired = 0, held = 0;
    uint64_t in_state[FM__CHUNK_FULL + 1] = {0};
    uint64_t seen[65536 / 64]; /* slots met on a chunk's free stack */
    for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
        const fm__chunk *c = &p->chunks[ci];
        if (c->state == FM__CHUNK_UNUSED) continue;
        held++;
        FM__CHECK(fm__table_find(p, (uintptr_t)c->base) == ci,
                  "pool '%s': chunk %u missing from the chunk table", p->name, ci);
        FM__CHECK(fm_is_aligned(c->base, p->chunk_bytes), "pool '%s': chunk %u misaligned",
                  p->name, ci);
        uint32_t bump = fm__chunk_bump(p, ci);
        uint32_t top = ci == p->cur_idx ? p->cs->cur_top : c->free_top;
        uint32_t next = ci == p->cur_idx && p->cs->cur_next_slot ? p->cs->cur_next : FM__NONE;
        /* The parked slot (see fm_pool) counts as a free slot of its chunk. */
        if (fm__parked_in(p, ci)) next = p->parked_slot;
        FM__CHECK(bump <= c->limit && c->limit <= p->hot.per_chunk,
                  "pool '%s': chunk %u bump %u / limit %u out of range", p->name, ci, bump,
                  c->limit);
        FM__CHECK(c->state != FM__CHUNK_FRESH || (bump == 0 && top == 0),
                  "pool '%s': fresh chunk %u has been used", p->name, ci);
        FM__CHECK((c->state == FM__CHUNK_CURRENT) == (ci == p->cur_idx),
                  "pool '%s': chunk %u current state disagrees", p->name, ci);
        uintptr_t base = (uintptr_t)c->base;
        uint32_t n_live = 0, n_retired = 0, n_free = 0;
        for (uint32_t s = 0; s < bump; s++) {
            uint32_t m = fm__meta_get(base, s);
            if (m & FM__LIVE) n_live++;
            else if (m == FM__RETIRED) n_retired++;
        }
        FM__CHECK(next == FM__NONE ||
                      (p->cs->cur_next_slot == fm__slot(p, c->base, next) &&
                       p->cs->cur_next_meta == fm__meta(base) + next),
                  "pool '%s': chunk %u next free slot's pointer and index disagree", p->name, ci);
        uint32_t n_stacked = top + (next != FM__NONE);
        FM__CHECK(n_stacked <= bump, "pool '%s': chunk %u free stack holds %u of %u used slots",
                  p->name, ci, n_stacked, bump);
        memset(seen, 0, ((size_t)bump + 63) / 64 * sizeof seen[0]);
        const uint16_t *stack = fm__stack(p, c->base);
        for (uint32_t i = 0; i < n_stacked; i++, n_free++) {
            uint32_t s = i < top ? stack[i] : next;
            FM__CHECK(s < bump, "pool '%s': chunk %u free stack holds slot %u past the bump index",
                      p->name, ci, s);
            FM__CHECK(!(fm__meta_get(base, s) & FM__LIVE) && fm__meta_get(base, s) != FM__RETIRED,
                      "pool '%s': chunk %u free stack holds a live or retired slot %u", p->name,
                      ci, s);
            FM__CHECK(!(seen[s / 64] >> (s % 64) & 1u),
                      "pool '%s': chunk %u free stack holds slot %u twice", p->name, ci, s);
            seen[s / 64] |= (uint64_t)1 << (s % 64);
        }
        /* Under THREAD_CACHE and LOCKFREE the slots out of the core are
         * live items or free slots held by caches or the shared stack. */
        bool cached = fm__cached_policy(p);
        FM__CHECK(n_retired + n_free <= bump &&
                      (cached ? n_live <= bump - n_retired - n_free
                              : n_live + n_retired + n_free == bump),
                  "pool '%s': chunk %u: %u live + %u retired + %u free != %u used slots", p->name,
                  ci, n_live, n_retired, n_free, bump);
        uint32_t n_out = bump - n_retired - n_free;
        FM__CHECK(n_out == fm__chunk_live(p, ci) && n_retired == c->retired,
                  "pool '%s': chunk %u live count %u, live bits %u", p->name, ci,
                  fm__chunk_live(p, ci), n_live);
        FM__CHECK(c->state != FM__CHUNK_FULL || (top == 0 && bump == c->limit),
                  "pool '%s': chunk %u marked full but has room", p->name, ci);
        /* Lists follow the record's count, in which a parked slot is live. */
        uint32_t n_rec = n_out + fm__parked_in(p, ci);
        FM__CHECK(c->state != FM__CHUNK_PARTIAL || (n_rec > 0 && !fm__chunk_exhausted(c)),
                  "pool '%s': chunk %u in the partial list is empty or full", p->name, ci);
        FM__CHECK(c->state != FM__CHUNK_EMPTY || (n_rec == 0 && !fm__chunk_exhausted(c)),
                  "pool '%s': chunk %u in the empty list has live items", p->name, ci);
        in_state[c->state]++;
        live += n_out;
        retired += n_retired;
        capacity += c->limit - n_retired;
    }
    const struct {
        const fm__list *list;
        uint32_t state;
        const char *name;
    } lists[] = {{&p->partial, FM__CHUNK_PARTIAL, "partial"},
                 {&p->empty, FM__CHUNK_EMPTY, "empty"},
                 {&p->fresh, FM__CHUNK_FRESH, "fresh"}};
    for (int l = 0; l < 3; l++) {
        uint64_t walked = 0;
        uint32_t prev = FM__NONE;
        for (uint32_t i = lists[l].list->head; i != FM__NONE; prev = i, i = p->chunks[i].next) {
            FM__CHECK(i < p->chunk_top && p->chunks[i].state == lists[l].state &&
                          p->chunks[i].prev == prev,
                      "pool '%s': %s list broken at chunk %u", p->name, lists[l].name, i);
            FM__CHECK(++walked <= in_state[lists[l].state], "pool '%s': %s list too long",
                      p->name, lists[l].name);
        }
        FM__CHECK(walked == in_state[lists[l].state] && lists[l].list->tail == prev,
                  "pool '%s': %llu %s chunks, %llu listed", p->name,
                  (unsigned long long)in_state[lists[l].state], lists[l].name,
                  (unsigned long long)walked);
    }
    FM__CHECK(held == p->chunk_count, "pool '%s': chunk count %u, held %llu", p->name,
              p->chunk_count, (unsigned long long)held);
    FM__CHECK(live == fm__live(p), "pool '%s': live %llu, counted %llu", p->name,
              (unsigned long long)fm__live(p), (unsigned long long)live);
    FM__CHECK(capacity == p->capacity && retired == p->retired,
              "pool '%s': capacity %llu, counted %llu", p->name,
              (unsigned long long)p->capacity, (unsigned long long)capacity);
    FM__CHECK(p->cs->headroom >= 0 && (uint64_t)p->cs->headroom <= p->cs->peak_live,
              "pool '%s': live count out of range", p->name);
    return FM_OK;
}

/* ===================================================== atomic reference counts
 *
 * THREAD_CACHE and LOCKFREE: the count words change by CAS, without the lock;
 * only the first retain of a chunk takes it, to allocate the chunk's words. A
 * reader with a records array older than the one holding a new refs pointer
 * can only be one whose item has count 1 (anyone holding a second reference
 * got it after that retain), which is what a missing array says. */

static uint64_t *fm__refs_shared(fm_pool *p, const fm__loc *loc, bool create) {
    fm__chunk *chunks = FM__ATOMIC_LOAD(&p->chunks, ACQUIRE);
    uint64_t *refs = FM__ATOMIC_LOAD(&chunks[loc->chunk].refs, ACQUIRE);
    if (refs) return &refs[loc->slot];
    if (!create) return NULL;
    fm__mutex_lock(&p->lock);
    uint64_t *w = fm__ref_word(p, loc);
    fm__mutex_unlock(&p->lock);
    return w;
}

static uint32_t fm__count_of(uint64_t w, uint32_t gen) {
    return (uint32_t)(w >> 32) == gen ? (uint32_t)w + 1 : 1;
}

FM__NOINLINE static void fm__retain_shared(fm_pool *p, void *item, const fm__loc *loc) {
    uint64_t *w = fm__refs_shared(p, loc, true);
    if (!w) return;
    uint32_t gen = loc->meta & FM__GEN_MAX;
    uint64_t old = FM__ATOMIC_LOAD(w, RELAXED);
    for (;;) {
        uint32_t count = fm__count_of(old, gen);
        if (count == UINT32_MAX) {
            fm__misuse(p, FM_ERR_REFCOUNT, item, "retain (count at its maximum)");
            return;
        }
        if (FM__ATOMIC_CAS_WEAK(w, &old, (uint64_t)gen << 32 | count, RELAXED, RELAXED))
            return;
    }
}

FM__NOINLINE static bool fm__release_shared(fm_pool *p, void *item, const fm__loc *loc) {
    uint64_t *w = fm__refs_shared(p, loc, false);
    uint32_t gen = loc->meta & FM__GEN_MAX;
    if (w) {
        uint64_t old = FM__ATOMIC_LOAD(w, ACQUIRE);
        for (;;) {
            uint32_t count = fm__count_of(old, gen);
            if (count <= 1) break;
            /* Release: this holder's writes to the item happen before the
             * last holder's dtor and free. */
            if (FM__ATOMIC_CAS_WEAK(w, &old, (uint64_t)gen << 32 | (count - 2), ACQ_REL, ACQUIRE))
                return false;
        }
    }
    if (p->desc.dtor) p->desc.dtor(item, p->desc.user);
    fm__sync_free(p, item, "release");
    return true;
}

FM__NOINLINE static uint32_t fm__refcount_shared(const fm_pool *p, const fm__loc *loc) {
    const uint64_t *w = fm__refs_shared((fm_pool *)p, loc, false);
    return w ? fm__count_of(FM__ATOMIC_LOAD(w, ACQUIRE), loc->meta & FM__GEN_MAX) : 1;
}

/* ============================================================ entry points
 *
 * The single-threaded code above behind fm__enter / fm__leave (the owner
 * check for NONE, the lock otherwise), except where THREAD_CACHE and
 * LOCKFREE need no lock. */

/* Entry points whose THREAD_CACHE and LOCKFREE paths take no lock: one call
 * site of the core function each, so it is inlined. */
static inline bool fm__enter_unlocked(const fm_pool *p, const char *op) {
    return (p && fm__cached_policy(p)) || fm__enter(p, op);
}
static inline void fm__leave_unlocked(const fm_pool *p) {
    if (p && !fm__cached_policy(p)) fm__leave(p);
}

void fm_pool_delete(fm_pool *pool, void *item) {
    if (!item || !fm__enter_unlocked(pool, "delete")) return;
    fm__delete_core(pool, item);
    fm__leave_unlocked(pool);
}

bool fm_pool_reserve(fm_pool *pool, uint32_t capacity) {
    if (!fm__enter(pool, "reserve")) return false;
    bool ok = fm__reserve_core(pool, capacity);
    fm__leave(pool);
    return ok;
}

size_t fm_pool_trim(fm_pool *pool) {
    if (!fm__enter(pool, "trim")) return 0;
    /* Free slots held outside the core go back first: the caller's own
     * magazine, or the whole shared stack. */
    if (pool && pool->sync == FM_SYNC_THREAD_CACHE) {
        fm_pool_flush_thread_cache(pool);
        fm__tc_forget_hints(pool);
    }
    if (pool && pool->sync == FM_SYNC_LOCKFREE) fm__lf_drain(pool);
    size_t released = fm__trim_core(pool);
    fm__leave(pool);
    return released;
}

bool fm_pool_owns(const fm_pool *pool, const void *item) {
    if (!pool || !item || !fm__enter_unlocked(pool, "owns")) return false;
    bool owns = fm__owns_core(pool, item);
    fm__leave_unlocked(pool);
    return owns;
}

void fm_pool_foreach(fm_pool *pool, fm_item_fn fn, void *user) {
    if (!fm__enter(pool, "foreach")) return;
    fm__foreach_core(pool, fn, user);
    fm__leave(pool);
}

void fm_pool_get_stats(const fm_pool *pool, fm_pool_stats *out) {
    if (!fm__enter(pool, "get_stats")) {
        if (out) memset(out, 0, sizeof *out);
        return;
    }
    fm__stats_core(pool, out);
    if (pool && out && fm__cached_policy(pool)) {
        /* The user's view; capacity and peak_live count slots out of the
         * depot (live items plus free slots held by caches or the stack). */
        uint64_t allocs, frees;
        fm__user_counts(pool, &allocs, &frees);
        out->total_allocs = allocs;
        out->total_frees = frees;
        out->live = allocs > frees ? allocs - frees : 0;
        if (out->peak_live < out->live) out->peak_live = out->live;
    }
    fm__leave(pool);
}

fm_handle fm_pool_handle(const fm_pool *pool, const void *item) {
    if (!fm__enter_unlocked(pool, "handle")) return FM_HANDLE_NULL;
    fm_handle h = fm__handle_core(pool, item);
    fm__leave_unlocked(pool);
    return h;
}

void *fm_pool_resolve(const fm_pool *pool, fm_handle h) {
    if (pool->sync != FM_SYNC_NONE) return fm__pool_resolve_at(pool, h, true);
    if (!fm__owner_ok(pool, "resolve")) return NULL;
    return fm__pool_resolve_at(pool, h, false);
}

void fm_pool_retain(fm_pool *pool, void *item) {
    if (!fm__enter_unlocked(pool, "retain")) return;
    fm__retain_core(pool, item);
    fm__leave_unlocked(pool);
}

bool fm_pool_release(fm_pool *pool, void *item) {
    if (!fm__enter_unlocked(pool, "release")) return false;
    bool freed = fm__release_core(pool, item);
    fm__leave_unlocked(pool);
    return freed;
}

uint32_t fm_pool_refcount(const fm_pool *pool, const void *item) {
    if (!fm__enter_unlocked(pool, "refcount")) return 0;
    uint32_t count = fm__refcount_core(pool, item);
    fm__leave_unlocked(pool);
    return count;
}

fm_error fm_pool_check(const fm_pool *pool) {
    if (!fm__enter(pool, "check")) return FM_ERR_WRONG_THREAD;
    fm_error err = fm__check_core(pool);
    fm__leave(pool);
    return err;
}
