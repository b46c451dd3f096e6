/* pool/chunks.c: a pool's chunks: the records that describe them and the
 * lists they wait in, the table that finds a chunk by its base, lookups
 * without the lock, growth (all or nothing) and release, and the chunk
 * layout chosen at create.
 */
#ifndef FM__POOL_UNIT
#error "pool/chunks.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* ======================================================= the record lists */

/* Entries of the next base array filled per record taken. */
enum { FM__BASES_STEP = 4 };

/* Segment s of the records (see fm__chunk_at). */
static size_t fm__seg_bytes(uint32_t s) {
    return ((size_t)1 << s) * (sizeof(fm__chunk) + sizeof(uint32_t *) + sizeof(fm__span *));
}
static uint8_t *fm__seg_mem(const fm_pool *p, uint32_t s) { return (uint8_t *)p->seg[s]; }
/* Records the segments up to and including s hold. */
static uint32_t fm__segs_cap(uint32_t s) { return (uint32_t)((2ull << s) - FM__REC_FIRST); }
/* Makes segment s of mem (fm__seg_bytes(s), untouched) the pool's. Its
 * entries are written as records are taken; readers look at none before. */
static void fm__seg_install(fm_pool *p, uint32_t s, uint8_t *mem) {
    FM__ATOMIC_STORE(&p->seg[s], (uintptr_t)mem, RELEASE);
    p->chunk_cap = fm__segs_cap(s);
    p->bytes_reserved += fm__seg_bytes(s);
}

static void fm__list_init(fm__list *l) { l->head = l->tail = FM__NONE; }

static void fm__list_push(fm_pool *p, fm__list *l, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    c->next = FM__NONE;
    c->prev = l->tail;
    if (l->tail != FM__NONE) fm__chunk_at(p, l->tail)->next = idx;
    else l->head = idx;
    l->tail = idx;
}

static void fm__list_unlink(fm_pool *p, fm__list *l, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    if (c->prev != FM__NONE) fm__chunk_at(p, c->prev)->next = c->next;
    else l->head = c->next;
    if (c->next != FM__NONE) fm__chunk_at(p, c->next)->prev = c->prev;
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

/* Nothing left to hand out: counted, not read off the bump index, as after a
 * reset retired slots may lie above it. */
static bool fm__chunk_exhausted(const fm__chunk *c) { return fm__chunk_room(c) == 0; }

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
    fm__dm_refresh(p, c); /* its bump index written back (or released: no entry left) */
    p->cs->cur_base = 1;
    p->cs->cur_slots = NULL;
    p->cs->cur_next_slot = NULL;
    p->cs->cur_next = FM__NONE;
    p->cs->cur_last = NULL;
    p->cs->cur_top = 0;
    p->cs->cur_stack = NULL;
    p->cs->cur_bump = 0;
    p->cs->cur_limit = 0;
    p->cs->cur_hw = 0;
}

static void fm__make_current(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    if (c->state == FM__CHUNK_FRESH) {
        /* Handles read meta words without the bump index, and the words
         * past the last slot's up to 2^slot_bits (fm__layout): make them
         * read as dead. Fresh pages from the OS are zero already; memory
         * from an allocator gets those bytes written, once per chunk. */
        if (!p->use_os) memset(c->base, 0, sizeof(uint32_t) << p->hot.slot_bits);
        fm__base_store(p, idx, c->base);
    }
    c->state = FM__CHUNK_CURRENT;
    fm__dm_set(p, c); /* in the cache, whatever shared its entry: frees find it there */
    c->prev = c->next = FM__NONE;
    p->cur_idx = idx;
    p->cs->cur_base = (uintptr_t)c->base;
    p->cs->cur_slots = c->base + p->hot.slots_off;
    p->cs->cur_top = c->free_top;
    p->cs->cur_stack = fm__stack(p, c->base);
    p->cs->cur_bump = c->bump;
    p->cs->cur_limit = c->limit;
    /* Every slot handed out has a generation of at least gen_budget (see
     * pool/reset.c). */
    p->cs->cur_fresh_word =
        FM__LIVE | (c->gen_floor > p->gen_budget ? c->gen_floor : p->gen_budget);
    p->cs->cur_hw = c->hw;
    p->live_other -= c->live;
}

/* Live items of a chunk, whether or not it is current. */
static uint32_t fm__chunk_live(const fm_pool *p, uint32_t idx) {
    if (idx == p->cur_idx) return (uint32_t)(fm__live(p) + fm__parked(p) - p->live_other);
    return fm__chunk_at(p, idx)->live - fm__parked_in(p, idx);
}

static uint32_t fm__chunk_bump(const fm_pool *p, uint32_t idx) {
    return idx == p->cur_idx ? (uint32_t)p->cs->cur_bump : fm__chunk_at(p, idx)->bump;
}

/* Slots [0, returned) of a chunk have been handed out at some time: their
 * meta words are the chunk's, never the zero of a page not yet touched. */
static uint32_t fm__chunk_used(const fm_pool *p, uint32_t idx) {
    uint32_t bump = fm__chunk_bump(p, idx), hw = fm__chunk_at(p, idx)->hw;
    return bump > hw ? bump : hw;
}

static uint32_t fm__ctz32(uint32_t v) {
    uint32_t n = 0;
    while (!(v & 1u)) {
        v >>= 1;
        n++;
    }
    return n;
}

/* ========================================================== chunk table */

/* Open addressing from chunk base to record: an entry is the record + 1, 0
 * an empty entry (so a table from the OS needs no initialisation), FM__TOMB
 * a trimmed chunk's. Only chunks that have a record are entered. A table
 * that a growth outgrows is not rebuilt there: the growth installs a new,
 * empty one, and its entries move over a few at a time as chunks open
 * (fm__table_migrate); until the last has moved, lookups that miss the new
 * table try the old one, which still holds every entry it had. */

static uint32_t fm__hash(const fm_pool *p, uintptr_t base, uint32_t cap) {
    uint64_t key = (uint64_t)(base >> p->chunk_shift) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(key >> 32) & (cap - 1);
}

/* Inserts into the first empty or tombstone entry; true when that entry was
 * empty (the table holds one more non-empty entry). */
static bool fm__table_insert(uint32_t *table, uint32_t cap, const fm_pool *p, uint32_t idx) {
    uint32_t i = fm__hash(p, (uintptr_t)fm__chunk_at(p, idx)->base, cap);
    uint32_t e;
    while ((e = FM__ATOMIC_LOAD(&table[i], RELAXED)) != 0 && e != FM__TOMB)
        i = (i + 1) & (cap - 1);
    FM__ATOMIC_STORE(&table[i], idx + 1, RELEASE);
    return e == 0;
}

/* The record of the chunk at base in one table, or FM__NONE. shared: read
 * as published (no lock held): bases through the published segments. */
static uint32_t fm__table_probe(const fm_pool *p, const uint32_t *table, uint32_t cap,
                                uintptr_t base, bool shared) {
    uint32_t i = fm__hash(p, base, cap);
    for (;;) {
        uint32_t e = FM__ATOMIC_LOAD(&table[i], ACQUIRE);
        if (e == 0) return FM__NONE;
        if (e != FM__TOMB) {
            uintptr_t b = shared ? (uintptr_t)fm__base_get(p, e - 1)
                                 : (uintptr_t)fm__chunk_at(p, e - 1)->base;
            if (b == base) return e - 1;
        }
        i = (i + 1) & (cap - 1);
    }
}

/* Trim: the entry becomes a tombstone (in both tables while one is being
 * emptied), so concurrent probes for other chunks still reach them. */
static void fm__table_forget(fm_pool *p, uint32_t *table, uint32_t cap, uint32_t idx) {
    if (!table) return;
    uint32_t i = fm__hash(p, (uintptr_t)fm__chunk_at(p, idx)->base, cap);
    uint32_t e;
    while ((e = FM__ATOMIC_LOAD(&table[i], RELAXED)) != idx + 1) {
        if (e == 0) return;
        i = (i + 1) & (cap - 1);
    }
    FM__ATOMIC_STORE(&table[i], FM__TOMB, RELEASE);
}
static void fm__table_remove(fm_pool *p, uint32_t idx) {
    fm__table_forget(p, p->table, p->table_cap, idx);
    fm__table_forget(p, p->old_table, p->old_cap, idx);
}

static uint32_t fm__table_find(const fm_pool *p, uintptr_t base) {
    if (!p->table) return FM__NONE;
    uint32_t idx = fm__table_probe(p, p->table, p->table_cap, base, false);
    if (idx == FM__NONE && p->old_table)
        idx = fm__table_probe(p, p->old_table, p->old_cap, base, false);
    return idx;
}

/* The record of the chunk at base in the owner's table, or NULL. */
static inline FM__ALWAYS_INLINE fm__chunk *fm__table_probe_rec(const fm_pool *p,
                                                               const uint32_t *table,
                                                               uint32_t cap, uintptr_t base) {
    uint32_t i = fm__hash(p, base, cap);
    for (;;) {
        uint32_t e = table[i];
        if (e == 0) return NULL;
        if (e != FM__TOMB) {
            fm__chunk *c = fm__chunk_at(p, e - 1);
            if ((uintptr_t)c->base == base) return c;
        }
        i = (i + 1) & (cap - 1);
    }
}

/* fm__table_find for a free, as the owner or under the lock, giving the
 * record: an entry found in the old table is entered in the new one (it
 * stays in the old one, read as it was until it goes), so a pool that stops
 * opening chunks does not look in both tables for ever. */
static inline fm__chunk *fm__table_find_moving(fm_pool *p, uintptr_t base) {
    if (!p->table) return NULL;
    fm__chunk *c = fm__table_probe_rec(p, p->table, p->table_cap, base);
    if (c || !p->old_table) return c;
    c = fm__table_probe_rec(p, p->old_table, p->old_cap, base);
    if (c) p->table_used += fm__table_insert(p->table, p->table_cap, p, c->idx);
    return c;
}

/* A table as published to lock-free readers: its address (64-byte aligned)
 * with log2 of its capacity in the low bits, so that a reader sees the pair
 * consistent from one load; 0 for none. */
static uintptr_t fm__table_tag(const uint32_t *table, uint32_t cap) {
    return table ? (uintptr_t)table | (uintptr_t)fm__ctz32(cap) : 0;
}
static uint32_t fm__table_probe_pub(const fm_pool *p, uintptr_t pub, uintptr_t base) {
    const uint32_t *table = (const uint32_t *)(pub & ~(uintptr_t)63);
    return fm__table_probe(p, table, 1u << (pub & 63), base, true);
}

/* The same lookup without the pool's lock: tables and chunk bases as
 * published; a chunk without a published base has no item. The new table
 * first, then the old one read after it (it is set before a new table is
 * published and cleared only once every entry has moved); a miss while a
 * growth replaced the table looks again. */
static uint32_t fm__table_find_shared(const fm_pool *p, uintptr_t base) {
    for (;;) {
        uintptr_t table = FM__ATOMIC_LOAD(&p->table_pub, ACQUIRE);
        if (!table) return FM__NONE;
        uintptr_t old = FM__ATOMIC_LOAD(&p->old_pub, ACQUIRE);
        uint32_t idx = fm__table_probe_pub(p, table, base);
        if (idx == FM__NONE && old) idx = fm__table_probe_pub(p, old, base);
        if (idx != FM__NONE || FM__ATOMIC_LOAD(&p->table_pub, ACQUIRE) == table) return idx;
    }
}

/* ============================================= records: taken and dropped */

static uint32_t fm__take_record(fm_pool *p) {
    uint32_t idx = p->unused_head, floor = 0; /* a record never used before: 0 */
    if (idx != FM__NONE) {
        p->unused_head = fm__chunk_at(p, idx)->next;
        floor = fm__chunk_at(p, idx)->gen_floor;
    } else {
        fm__bases_step(p, FM__BASES_STEP);
        if (p->chunk_top >= p->bases_cap) fm__bases_step(p, UINT32_MAX); /* see fm__grow */
        idx = p->chunk_top++;
        FM__ATOMIC_STORE(fm__links_slot(p, idx), NULL, RELAXED);
    }
    fm__chunk *c = fm__chunk_at(p, idx);
    memset(c, 0, sizeof *c);
    c->idx = idx;
    c->gen_floor = floor;
    c->prev = c->next = FM__NONE;
    fm__base_store(p, idx, NULL);
    FM__ATOMIC_STORE(&p->hot.n_bases, p->chunk_top, RELEASE);
    return idx;
}

static void fm__drop_record(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    c->state = FM__CHUNK_UNUSED;
    c->base = NULL;
    fm__base_store(p, idx, NULL);
    /* A record whose generations are nearly used up is never reused, so no
     * handle to its old slots can ever resolve again. */
    if (c->gen_floor >= FM__GEN_MAX - 1) return;
    c->next = p->unused_head;
    p->unused_head = idx;
}

#ifdef FM_TRACK_SITES
/* Where each slot's current item was allocated: beside the meta words. */
static fm__site *fm__sites(const fm_pool *p, const uint8_t *base) {
    return (fm__site *)(void *)((uint8_t *)base + p->sites_off);
}
#endif

static void fm__span_give_back(fm_pool *p, fm__span *sp, uint8_t *mem, uint32_t n);

/* Returns a chunk's memory; the record is dropped. */
static void fm__release_chunk(fm_pool *p, uint32_t idx) {
    fm__chunk *c = fm__chunk_at(p, idx);
    /* Unpublish first: lock-free lookups stop finding the chunk. */
    fm__table_remove(p, idx);
    fm__map_set((uintptr_t)c->base, p->chunk_bytes, NULL);
    fm__dm *e = fm__dm_entry(p, (uintptr_t)c->base);
    if (e->rec == c) e->key = 0, e->rec = NULL;
    fm__base_store(p, idx, NULL);
    /* The next chunk of this record starts above every generation this one
     * handed out: handles to its items stay stale (trim is not a hot path). */
    uint32_t used = fm__chunk_used(p, idx);
    for (uint32_t s = 0; s < used; s++) {
        uint32_t m = fm__meta_get((uintptr_t)c->base, s);
        uint32_t gen = m & FM__GEN_MAX;
        if (m == FM__RETIRED) gen = FM__GEN_MAX;
        if (gen >= c->gen_floor) c->gen_floor = gen == FM__GEN_MAX ? FM__GEN_MAX : gen + 1;
    }
    if (c->refs) fm_allocator_free(&p->desc.allocator, c->refs, (size_t)p->hot.per_chunk * sizeof *c->refs);
    FM__UNPOISON(c->base, p->chunk_bytes);
    FM__VG_UNDEFINED(c->base, p->chunk_bytes);
    fm__span *sp = *fm__rec_span(p, idx);
    if (sp) fm__span_give_back(p, sp, c->base, 1);
    else if (p->os_chunks_alone) fm__os_release(c->base, p->chunk_bytes); /* fm__open_pending */
    else fm_allocator_free(&p->desc.allocator, c->base, p->chunk_bytes);
    fm__tag_uncharge(p->desc.tag, p->chunk_bytes, true);
    p->bytes_reserved -= p->chunk_bytes;
    p->capacity -= c->limit - c->retired;
    p->retired -= c->retired;
    p->chunk_count--;
    fm__drop_record(p, idx);
}

/* =========================================================== growth */

/* What a growth needs before it may change anything: record segments and a
 * bigger table when the old ones are too small, the chunks' memory and the
 * span that holds it until each chunk first becomes current. Gathered first,
 * installed only when all of it was had, so a failed growth leaves the pool
 * exactly as it was. None of it is touched at growth (the record segments
 * and the mapping are written as chunks open), so a growth costs a few
 * allocations and system calls whatever it adds: see fm__open_pending. */
/* A growth's mapping for its arrays of OS size, handed out in pages. */
typedef struct fm__carve {
    uint8_t *next;
    size_t left;
} fm__carve;

typedef struct fm__growth_plan {
    uint8_t *segs[FM__REC_SEGS]; /* new record segments; NULL: not needed */
    uint32_t *table; /* NULL: the current table is big enough */
    uint32_t table_cap;
    fm__carve carve; /* the arrays' mapping, what is not handed out yet */
    uintptr_t *bases; /* NULL: the base arrays are big enough (see fm__bases_bytes) */
    uint32_t bases_cap;
    fm__dm *dm; /* a larger chunk cache; NULL: the pool's is large enough */
    uint32_t dm_cap;
    fm__span *span;  /* the new chunks */
    bool span_spare; /* span is one of spare_spans (already counted) */
    uint8_t *block;  /* use_os: the chunks' mapping, until span holds it */
    size_t block_bytes;
    uint8_t *below;  /* the lowest of this growth's mappings (see os_below) */
    uint32_t k;
    bool map_failed; /* the chunk map (pool/map.c) could not take the chunks */
} fm__growth_plan;

/* Before a user-allocator chunk gets its record its first bytes (the meta
 * words of slots not handed out yet) hold the next chunk. */
typedef struct fm__pending {
    uint8_t *next;
} fm__pending;

/* Record segments, base arrays, chunk caches and chunk tables of FM__OS_ARRAY_BYTES
 * or more of a pool whose chunks come from the OS come from the OS too,
 * zero-filled and not touched until used: all those a growth needs from one
 * mapping (fm__carve), each released on its own later. A growth then costs
 * two system calls (its chunks, its arrays) whatever its size; each costs 2
 * to 15 us in a VM, as does the first touch of a fresh page (fm-bench
 * regrowth). Where the OS releases only whole reservations (Windows) each
 * array is a reservation of its own: at most a few per growth, still none
 * per chunk. A pool with a growth window takes every array from it, however
 * small, with no system call: one from the allocator would be zeroed, or
 * at least have its header written, on fresh heap pages, and those first
 * touches were most of what a growth from a window cost (11.2 us of 12.2 for
 * a growth by 64 chunks of 64 KiB, in the VM measured; see
 * bench/RESULTS.md). Whether an array is the OS's follows from its size and
 * the pool alone (win_chunks is 0 or not for the pool's life), so that
 * fm__array_delete needs no record of where it came from. Smaller ones of
 * other pools, and all of a pool on an allocator, come from the allocator
 * (tables and caches zeroed here). */
enum { FM__OS_ARRAY_BYTES = 16 << 10 };
static bool fm__array_os(const fm_pool *p, size_t bytes) {
    return p->use_os && (p->win_chunks != 0 || bytes >= FM__OS_ARRAY_BYTES);
}
static size_t fm__page_round(size_t bytes) {
    size_t page = fm__os_get_caps()->page_size;
    return (bytes + page - 1) & ~(page - 1);
}
/* Adds an array of bytes to what a growth needs from the OS. */
static void fm__carve_need(const fm_pool *p, size_t *total, size_t bytes) {
    if (fm__array_os(p, bytes) && fm__os_get_caps()->has_partial_release)
        *total += fm__page_round(bytes);
}
/* An array from the carve (sized by fm__carve_need first, zero-filled) or
 * the allocator (zeroed when zero asks). NULL when the allocator refused. */
static void *fm__array_take(const fm_pool *p, fm__carve *cv, size_t bytes, bool zero) {
    if (!fm__array_os(p, bytes)) {
        void *mem = fm_allocator_alloc(&p->desc.allocator, bytes, 64);
        if (mem && zero) memset(mem, 0, bytes);
        return mem;
    }
    size_t r = fm__page_round(bytes);
    if (!fm__os_get_caps()->has_partial_release)
        return fm__os_reserve(r, fm__os_get_caps()->page_size, true);
    if (r > cv->left) return NULL; /* not sized for it: cannot happen */
    void *mem = cv->next;
    cv->next += r;
    cv->left -= r;
    return mem;
}
static void fm__array_delete(const fm_pool *p, void *mem, size_t bytes) {
    if (!mem) return;
    if (fm__array_os(p, bytes)) fm__os_release(mem, fm__page_round(bytes));
    else fm_allocator_free(&p->desc.allocator, mem, bytes);
}
static size_t fm__table_bytes(uint32_t cap) { return (size_t)cap * sizeof(uint32_t); }
static void fm__table_delete(const fm_pool *p, uint32_t *table, uint32_t cap) {
    fm__array_delete(p, table, fm__table_bytes(cap));
}

/* An array replaced by growth (or an opening, for a table or base array
 * whose successor is complete) is kept until destroy (it stays in
 * bytes_reserved): lock-free readers may still hold it, and giving pages
 * back costs a system call in the allocation that opens a chunk. Sizes
 * double, so kept arrays add up to about the current ones; past
 * FM__MAX_RETIRED_ARRAYS (a NONE pool only) one is deleted at once. */
static void fm__retire_array(fm_pool *p, void *mem, size_t bytes) {
    if (!mem) return;
    if (p->n_retired_arrays == FM__MAX_RETIRED_ARRAYS && p->sync == FM_SYNC_NONE) {
        fm__array_delete(p, mem, bytes);
        p->bytes_reserved -= bytes;
        return;
    }
    if (p->n_retired_arrays == FM__MAX_RETIRED_ARRAYS) return; /* kept for good */
    p->retired_arrays[p->n_retired_arrays] = mem;
    p->retired_bytes[p->n_retired_arrays++] = bytes;
}

/* ========================================= the chunk bases, for handles */

/* What resolve reads for a record with no chunk and for the null handle: a
 * chunk's meta words with none live (zero, untouched: the pages of a
 * zero-filled array cost nothing until read, and then the zero page). Its
 * words cover every slot field a handle can have (fm__layout). */
static uint32_t fm__dead_meta[FM__MAX_PER_CHUNK];
#define fm__dead_chunk ((uint8_t *)(void *)fm__dead_meta)

/* A base array for cap records is one block of words: [0] the address of
 * its item origins, then cap + 1 meta origins, then cap + 1 item origins.
 * The pool holds it by its meta origins (hot.bases, bases_next, a plan's
 * bases: the block's word 1), so that a handle's record field indexes both
 * halves and [-1] finds the second (fm__pool_resolve_at). Entry r is record
 * r - 1's (fm__bases_put); entry 0, the null handle's, the dead chunk's. */
static size_t fm__bases_bytes(uint32_t cap) {
    return (2 * ((size_t)cap + 1) + 1) * sizeof(uintptr_t);
}
static uintptr_t *fm__bases_block(uintptr_t *bases) { return bases - 1; }
static uintptr_t *fm__bases_items(uintptr_t *bases, uint32_t cap) { return bases + cap + 1; }

/* hot.bases before a pool's first array: the dead chunk's entry 0 alone (a
 * block for 0 records). Never written (a base is stored only for a record,
 * and records come with an array). */
static uintptr_t fm__no_bases[3] = {(uintptr_t)&fm__no_bases[2], (uintptr_t)fm__dead_meta,
                                    (uintptr_t)fm__dead_meta};

/* Entry r of the arrays bases (cap records): the origins of the chunk at
 * base (NULL: the dead chunk). The location field of its slot s is
 * r << slot_bits | s, so its meta word is at the meta origin plus 4 times
 * that field and its item at the item origin plus stride times it (mod
 * 2^N: the origins themselves may lie anywhere). The meta origin goes
 * last: a resolve that reads it reads this item origin. */
static void fm__bases_put(const fm_pool *p, uintptr_t *bases, uint32_t cap, uint32_t r,
                          const uint8_t *base) {
    uintptr_t at = (uintptr_t)r << p->hot.slot_bits;
    uintptr_t b = (uintptr_t)(base ? base : fm__dead_chunk);
    FM__ATOMIC_STORE(&fm__bases_items(bases, cap)[r], b + p->hot.slots_off - at * p->hot.stride,
                     RELAXED);
    FM__ATOMIC_STORE(&bases[r], b - at * sizeof(uint32_t), RELEASE);
}

/* Makes bases (cap records) ready to publish: its link to its item origins
 * and entry 0. Written only then: at growth it would be the growth's one
 * page fault (the array's first page). */
static void fm__bases_open(const fm_pool *p, uintptr_t *bases, uint32_t cap) {
    bases[-1] = (uintptr_t)fm__bases_items(bases, cap);
    fm__bases_put(p, bases, cap, 0, NULL);
}

/* Record idx's base (NULL: none, stored as the dead chunk), in the array
 * handles read and in the next one. */
static void fm__base_store(fm_pool *p, uint32_t idx, uint8_t *base) {
    fm__bases_put(p, p->hot.bases, p->bases_cap, idx + 1, base);
    if (p->bases_next) /* published with the array */
        fm__bases_put(p, p->bases_next, p->bases_next_cap, idx + 1, base);
}

/* Fills up to n more entries of the next base array (see fm_pool.bases_cap);
 * once it holds every record's, it becomes the one handles read. */
static void fm__bases_step(fm_pool *p, uint32_t n) {
    if (!p->bases_next) return;
    uintptr_t *cur = p->hot.bases, *next = p->bases_next;
    uintptr_t *cur_items = fm__bases_items(cur, p->bases_cap);
    uintptr_t *next_items = fm__bases_items(next, p->bases_next_cap);
    for (; n && p->bases_copied < p->chunk_top; n--, p->bases_copied++) {
        uint32_t r = p->bases_copied + 1;
        next[r] = FM__ATOMIC_LOAD(&cur[r], RELAXED);
        next_items[r] = FM__ATOMIC_LOAD(&cur_items[r], RELAXED);
    }
    if (p->bases_copied < p->chunk_top) return;
    fm__bases_open(p, next, p->bases_next_cap);
    FM__ATOMIC_STORE(&p->hot.bases, next, RELEASE);
    fm__retire_array(p, fm__bases_block(cur), fm__bases_bytes(p->bases_cap));
    p->bases_cap = p->bases_next_cap;
    p->bases_next = NULL;
    p->bases_next_cap = p->bases_copied = 0;
}

/* Entries of the old table looked at per chunk opening. */
enum { FM__TABLE_MIGRATE = 16 };

/* Moves entries of the old table (see the chunk table above) to the current
 * one, n entries looked at; the old table goes once every entry has moved. */
static void fm__table_migrate(fm_pool *p, uint32_t n) {
    for (; p->old_table && n; n--) {
        if (p->old_pos == p->old_cap) {
            uint32_t *old = p->old_table;
            p->old_table = NULL;
            FM__ATOMIC_STORE(&p->old_pub, 0, RELEASE);
            fm__retire_array(p, old, fm__table_bytes(p->old_cap));
            p->old_cap = p->old_pos = p->old_used = 0;
            return;
        }
        uint32_t e = p->old_table[p->old_pos++];
        if (e == 0 || e == FM__TOMB) continue;
        uintptr_t base = (uintptr_t)fm__chunk_at(p, e - 1)->base; /* moved already? */
        if (fm__table_probe(p, p->table, p->table_cap, base, false) == FM__NONE)
            p->table_used += fm__table_insert(p->table, p->table_cap, p, e - 1);
    }
}

static size_t fm__links_bytes(const fm_pool *p) {
    size_t n = (size_t)p->hot.per_chunk * sizeof(uint32_t);
    return n > sizeof(fm__pending) ? n : sizeof(fm__pending);
}

/* The first of a chain linked through first bytes (fm__pending). */
static uint8_t *fm__chain_pop(uint8_t **chain) {
    uint8_t *first = *chain;
    fm__pending pend;
    memcpy(&pend, first, sizeof pend);
    *chain = pend.next;
    return first;
}

/* A span of the pool's whose chunks have all gone back (or, from the
 * allocator, all got records) is kept for the next growth: its struct stays
 * in bytes_reserved, so trim gives back whole chunks only and growth takes
 * no allocation for it. */
static void fm__span_retire(fm_pool *p, fm__span *sp) {
    sp->next_span = p->spare_spans;
    p->spare_spans = sp;
}

/* n chunks of span sp's mapping, from mem on, go back to the OS: released
 * where part of a reservation can be, else decommitted, the whole mapping
 * released with its last chunk (see fm__span). A span in no list retires
 * then; one in the pool's list is the caller's. */
static void fm__span_give_back(fm_pool *p, fm__span *sp, uint8_t *mem, uint32_t n) {
    size_t bytes = (size_t)n * p->chunk_bytes;
    sp->held -= n;
    if (fm__os_get_caps()->has_partial_release) fm__os_release(mem, bytes);
    else if (sp->held) fm__os_decommit(mem, bytes);
    else fm__os_release(sp->region, sp->region_bytes);
    if (!sp->held) sp->region = NULL;
    if (!sp->held && !sp->left) fm__span_retire(p, sp);
}

/* Gives back what a span still holds (chunks without a record, unused link
 * arrays); the caller has unlinked it and settled the counters. It retires
 * unless chunks of its mapping that got records are still held. */
static void fm__span_empty(fm_pool *p, fm__span *sp) {
    const fm_allocator *a = &p->desc.allocator;
    while (sp->links) fm_allocator_free(a, fm__chain_pop(&sp->links), fm__links_bytes(p));
    while (sp->chain) fm_allocator_free(a, fm__chain_pop(&sp->chain), p->chunk_bytes);
    uint32_t left = sp->left;
    uint8_t *next = sp->next;
    sp->left = 0;
    sp->next = NULL;
    if (!p->use_os || (!left && !sp->held)) fm__span_retire(p, sp);
    else if (left) fm__span_give_back(p, sp, next, left);
}

static void fm__plan_release(fm_pool *p, fm__growth_plan *g) {
    for (uint32_t s = 0; s < FM__REC_SEGS; s++)
        fm__array_delete(p, g->segs[s], fm__seg_bytes(s));
    fm__table_delete(p, g->table, g->table_cap);
    if (g->bases) fm__array_delete(p, fm__bases_block(g->bases), fm__bases_bytes(g->bases_cap));
    if (g->dm) fm__array_delete(p, g->dm, (size_t)g->dm_cap * sizeof *g->dm);
    if (g->carve.left) fm__os_release(g->carve.next, g->carve.left);
    if (g->block) fm__os_release(g->block, g->block_bytes);
    if (g->span) {
        /* Its chunks go back and it retires (to the head of spare_spans):
         * none of them got a record. */
        fm__span_empty(p, g->span);
        if (!g->span_spare) {
            p->spare_spans = g->span->next_span;
            fm_allocator_free(&p->desc.allocator, g->span, sizeof *g->span);
        }
    }
}

/* Growth windows. Any system call right after many first-touch page faults
 * costs 15-20 us in a VM, an mmap of any size included (whatever the kernel
 * or the hypervisor leaves for the next entry: getppid takes 4 us there;
 * fm-bench regrowth, bench/RESULTS.md). So where the OS has windows, create
 * of a pool that may grow maps address space ahead, readable and writable
 * and untouched (no memory, no commit charge), and takes its own chunks
 * from it as growths do: those that fit take their chunks from its top and
 * their arrays from its bottom with no system call (a first growth that
 * mapped it would do so right after the page faults of the allocations
 * before it, and be the pool's slowest). One that does not fit maps a new window
 * (the old one's rest goes back) or, above a quarter of a window, its own
 * mappings. Everything taken is released part by part as before: the
 * window is only where mappings come from. true when g's chunks (block)
 * and arrays (carve) are the window's. */
static bool fm__window_take(fm_pool *p, fm__growth_plan *g, size_t arrays) {
    size_t need = g->block_bytes + arrays;
    size_t win_bytes = (size_t)p->win_chunks * p->chunk_bytes;
    if (need < g->block_bytes || !win_bytes) return false;
    if ((size_t)(p->win_end - p->win_next) < need) {
        if (need > win_bytes / 4) return false;
        uint8_t *win = fm__os_reserve_below(p->os_below, win_bytes, p->chunk_bytes, true);
        if (!win) return false;
        if (p->win_next != p->win_end) fm__os_release(p->win_next, (size_t)(p->win_end - p->win_next));
        p->win_next = win;
        p->win_end = win + win_bytes;
        g->below = win;
    }
    /* Chunks from the top down: a new window ends where the pool's last
     * mapping begins, so its chunks continue the ones before it, each in its
     * own entry of the chunk cache (by chunk number: chunks 1 GiB apart
     * would share one, and every free into one of them would miss it). */
    p->win_end -= g->block_bytes;
    g->block = p->win_end;
    if (arrays) {
        g->carve.next = p->win_next;
        g->carve.left = arrays;
        p->win_next += arrays;
    }
    return true;
}

void fm__pool_set_window_chunks(fm_pool *pool, uint32_t chunks) {
    if (!pool->win_chunks || !chunks) return; /* 0 or not for life: see fm__array_os */
    pool->win_chunks = chunks;
    /* The next growth maps a window of the new size just below the lowest
     * chunk taken from this one. */
    if (pool->win_next != pool->win_end)
        fm__os_release(pool->win_next, (size_t)(pool->win_end - pool->win_next));
    if (pool->win_end) pool->os_below = pool->win_end;
    pool->win_next = pool->win_end = NULL;
}

/* The mappings of a growth: use_os, its chunks (g->block) and its arrays of
 * OS size (g->carve, `arrays` bytes) from the pool's window where that
 * serves them, else the chunks' mapping and then the arrays' just below it,
 * each where the OS has the range free below the pool's last mapping (one
 * system call each): the next growth asks for the range below both, so no
 * mapping of this one takes the place the next one's chunks would go.
 * Otherwise the arrays' alone (the allocator gives the chunks). false when
 * the OS refuses. */
static bool fm__growth_map(fm_pool *p, fm__growth_plan *g, size_t arrays) {
    if (p->use_os) {
        if (g->k > SIZE_MAX / p->chunk_bytes) return false;
        g->block_bytes = (size_t)g->k * p->chunk_bytes;
        if (fm__window_take(p, g, arrays)) return true;
        /* One mapping for all k chunks, so growing by many chunks costs a
         * few system calls; each chunk goes back on its own later, by
         * itself or, where the OS releases only whole reservations, as a
         * decommit until the mapping's last one goes (see fm__span). */
        g->block = fm__os_reserve_below(g->below, g->block_bytes, p->chunk_bytes, true);
        if (!g->block) return false;
        g->below = g->block;
    }
    if (arrays) {
        g->carve.next = fm__os_reserve_below(g->below, arrays, fm__os_get_caps()->page_size, true);
        if (!g->carve.next) return false;
        g->carve.left = arrays;
        g->below = g->carve.next;
    }
    return true;
}

/* desc.prefault: the arrays of a growth that its chunks' openings write
 * made resident before any is published (fm__os_prefault's writes are not
 * atomic), so that no opening inside an allocation takes their first-touch
 * faults; fm__grow does the chunks and their chunk-map entries. Arrays from
 * the allocator stay as it keeps them. */
static void fm__array_prefault(const fm_pool *p, void *mem, size_t bytes) {
    if (mem && fm__array_os(p, bytes)) fm__os_prefault(mem, fm__page_round(bytes));
}
static void fm__plan_prefault(const fm_pool *p, const fm__growth_plan *g) {
    for (uint32_t s = 0; s < FM__REC_SEGS; s++) fm__array_prefault(p, g->segs[s], fm__seg_bytes(s));
    if (g->bases) fm__array_prefault(p, fm__bases_block(g->bases), fm__bases_bytes(g->bases_cap));
    fm__array_prefault(p, g->dm, (size_t)g->dm_cap * sizeof *g->dm);
    fm__array_prefault(p, g->table, fm__table_bytes(g->table_cap));
}

/* Allocates everything; false (nothing reported yet) when any piece fails. */
static bool fm__plan_gather(fm_pool *p, fm__growth_plan *g) {
    const fm_allocator *a = &p->desc.allocator;
    /* Any chunk held may get a record (unused ones are taken first). */
    uint64_t need = (uint64_t)p->chunk_count + g->k;
    if (need < p->chunk_top) need = p->chunk_top;
    /* What is needed, then one mapping for the parts of OS size. */
    uint32_t s0 = 3, s1;
    while (s0 < FM__REC_SEGS && p->seg[s0]) s0++;
    s1 = s0;
    for (uint64_t cap = p->chunk_cap; cap < need && s1 < FM__REC_SEGS; s1++) cap = fm__segs_cap(s1);
    /* A base array for twice what may be needed, made while the one handles
     * read still has room for as many records again as it holds: filled a
     * few entries per record taken, it is complete before that room runs
     * out (fm__bases_step). */
    uint32_t bases_have = p->bases_next ? p->bases_next_cap : p->bases_cap;
    if (need * 2 > bases_have) {
        uint64_t cap = 8;
        while (cap < need * 2) cap *= 2;
        g->bases_cap = (uint32_t)cap;
    }
    /* Past the chunk cache's first 64 entries, one with at least twice as
     * many entries as chunks (made empty: it fills as chunks open and as
     * frees find them in the table). */
    uint64_t chunks = (uint64_t)p->chunk_count + g->k;
    if (chunks > FM__DM_SLOTS && chunks * 2 > (uint64_t)p->dm_mask + 1) {
        uint64_t cap = 256;
        while (cap < chunks * 4) cap *= 2;
        g->dm_cap = (uint32_t)cap;
    }
    /* The table stays at most half full (tombstones and entries still to
     * move included) so probes stay short. A new one is twice what that
     * needs, so that the entries of the one before have moved before it
     * fills (a few move at each chunk opening). */
    if (((uint64_t)p->table_used + p->old_used + g->k) * 2 > p->table_cap) {
        uint64_t slots_needed = ((uint64_t)p->chunk_count + g->k) * 4;
        uint64_t cap = 16;
        while (cap < slots_needed) cap *= 2;
        g->table_cap = (uint32_t)cap;
    }
    size_t total = 0;
    for (uint32_t s = s0; s < s1; s++) fm__carve_need(p, &total, fm__seg_bytes(s));
    fm__carve_need(p, &total, fm__bases_bytes(g->bases_cap));
    fm__carve_need(p, &total, (size_t)g->dm_cap * sizeof(fm__dm));
    fm__carve_need(p, &total, fm__table_bytes(g->table_cap));
    g->below = p->os_below;
    if (!fm__growth_map(p, g, total)) return false;
    for (uint32_t s = s0; s < s1; s++)
        if (!(g->segs[s] = fm__array_take(p, &g->carve, fm__seg_bytes(s), false))) return false;
    if (g->bases_cap) {
        uintptr_t *block = fm__array_take(p, &g->carve, fm__bases_bytes(g->bases_cap), false);
        if (!block) return false;
        g->bases = block + 1;
    }
    if (g->dm_cap &&
        !(g->dm = fm__array_take(p, &g->carve, (size_t)g->dm_cap * sizeof *g->dm, true)))
        return false;
    if (g->table_cap &&
        !(g->table = fm__array_take(p, &g->carve, fm__table_bytes(g->table_cap), true)))
        return false;
    g->span = p->spare_spans;
    g->span_spare = g->span != NULL;
    if (g->span) p->spare_spans = g->span->next_span;
    else g->span = fm_allocator_alloc(a, sizeof *g->span, alignof(fm__span));
    if (!g->span) return false;
    memset(g->span, 0, sizeof *g->span);
    if (p->sync == FM_SYNC_LOCKFREE) {
        /* One per chunk, for records that have none yet; what is left when
         * the span is used up goes then. */
        for (uint32_t i = 0; i < g->k; i++) {
            uint8_t *links = fm_allocator_alloc(a, fm__links_bytes(p), alignof(uint32_t *));
            if (!links) return false;
            fm__pending pend = {g->span->links};
            memcpy(links, &pend, sizeof pend);
            g->span->links = links;
        }
    }
    if (p->use_os) {
        uint8_t *block = g->block;
        size_t bytes = g->block_bytes;
        g->block = NULL; /* the span's now: fm__span_empty gives it back */
        g->span->next = g->span->region = block;
        g->span->region_bytes = bytes;
        g->span->left = g->span->held = g->k;
        g->map_failed = !fm__map_prepare((uintptr_t)block, bytes, p->chunk_bytes);
        return !g->map_failed;
    }
    for (uint32_t i = 0; i < g->k; i++) {
        uint8_t *base = fm_allocator_alloc(a, p->chunk_bytes, p->chunk_bytes);
        if (!base) return false;
        fm__pending pend = {g->span->chain};
        if (!fm_is_aligned(base, p->chunk_bytes)) {
            fm_allocator_free(a, base, p->chunk_bytes);
            return false;
        }
        memcpy(base, &pend, sizeof pend);
        g->span->chain = base;
        g->map_failed = !fm__map_prepare((uintptr_t)base, p->chunk_bytes, p->chunk_bytes);
        if (g->map_failed) return false;
    }
    return true;
}

/* Adds chunks holding `slots` more usable slots (clipped at max_capacity).
 * All or nothing: on failure the pool is exactly as before and the error is
 * reported. */
static bool fm__grow(fm_pool *p, uint64_t slots, fm__grow_kind kind) {
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
    /* Every record below chunk_top holds a chunk or is reused before a new
     * one is taken, so at most max_chunks records exist while at most
     * max_chunks chunks are held. */
    if (k64 > p->max_chunks - p->chunk_count) {
        fm__report(FM_ERR_POOL_FULL,
                   "pool '%s': growth by %llu chunk(s) would pass the %u chunks (%llu items) "
                   "that its handles can address",
                   p->name, (unsigned long long)k64, p->max_chunks,
                   (unsigned long long)p->max_chunks * p->hot.per_chunk);
        return false;
    }
    fm__growth_plan g = {.k = (uint32_t)k64};
    /* The chunks' bytes are charged to the tag before they are taken. */
    uint64_t charged = k64 * p->chunk_bytes;
    if (!fm__tag_charge(p->desc.tag, charged, "pool", p->name)) return false;
    if (!fm__plan_gather(p, &g)) {
        fm__plan_release(p, &g);
        fm__tag_refund(p->desc.tag, charged);
        if (g.map_failed)
            fm__report(FM_ERR_OUT_OF_MEMORY,
                       "pool '%s': growth by %u chunk(s) of %zu bytes: the chunk map (fm_pool_of) "
                       "cannot take them (no memory from the OS, or above the 2^48 it covers)",
                       p->name, g.k, p->chunk_bytes);
        else
            fm__report(FM_ERR_OUT_OF_MEMORY,
                       "pool '%s': backing allocator refused growth by %u chunk(s) of %zu bytes",
                       p->name, g.k, p->chunk_bytes);
        return false;
    }

    fm__tag_charged(p->desc.tag, charged, true, "pool", p->name);
    if (p->desc.prefault) fm__plan_prefault(p, &g);

    /* Install: nothing below can fail, and nothing is done per chunk. */
    for (uint32_t s = 0; s < FM__REC_SEGS; s++)
        if (g.segs[s]) fm__seg_install(p, s, g.segs[s]);
    if (g.bases) {
        p->bytes_reserved += fm__bases_bytes(g.bases_cap);
        if (p->hot.bases == fm__no_bases + 1) {
            fm__bases_open(p, g.bases, g.bases_cap);
            FM__ATOMIC_STORE(&p->hot.bases, g.bases, RELEASE);
            p->bases_cap = g.bases_cap;
        } else {
            /* A next array under way that is too small: never published. */
            if (p->bases_next) {
                fm__array_delete(p, fm__bases_block(p->bases_next),
                                 fm__bases_bytes(p->bases_next_cap));
                p->bytes_reserved -= fm__bases_bytes(p->bases_next_cap);
            }
            p->bases_next = g.bases;
            p->bases_next_cap = g.bases_cap;
            p->bases_copied = 0;
        }
    }
    if (g.dm) {
        if (p->dm != p->dm_first)
            fm__retire_array(p, p->dm, ((size_t)p->dm_mask + 1) * sizeof *p->dm);
        p->dm = g.dm;
        p->dm_mask = g.dm_cap - 1;
        p->bytes_reserved += (size_t)g.dm_cap * sizeof *g.dm;
    }
    fm__span *sp = g.span;
    if (g.below) p->os_below = g.below;
    if (p->desc.prefault) { /* the chunks, and the map entries their openings write */
        if (sp->next) {
            fm__os_prefault(sp->next, (size_t)g.k * p->chunk_bytes);
            fm__map_prefault((uintptr_t)sp->next, (size_t)g.k * p->chunk_bytes);
        }
        for (uint8_t *c = sp->chain; c;) {
            fm__pending pend;
            memcpy(&pend, c, sizeof pend);
            fm__os_prefault(c, p->chunk_bytes);
            memcpy(c, &pend, sizeof pend); /* kept whatever the prefault wrote */
            fm__map_prefault((uintptr_t)c, p->chunk_bytes);
            c = pend.next;
        }
    }
    sp->left = g.k;
    sp->last_limit = (uint32_t)(slots - (uint64_t)(g.k - 1) * p->hot.per_chunk);
    if (p->spans_tail) p->spans_tail->next_span = sp;
    else p->spans = sp;
    p->spans_tail = sp;
    p->capacity += slots;
    p->chunk_count += g.k;
    p->bytes_reserved += (size_t)g.k * p->chunk_bytes + (g.span_spare ? 0 : sizeof *sp);
    if (g.table) {
        /* The table before becomes the old one (entries move later), set
         * before the new one is published (see fm__table_find_shared). */
        fm__table_migrate(p, UINT32_MAX);
        if (p->table) {
            p->old_cap = p->table_cap;
            p->old_used = p->table_used;
            p->old_pos = 0;
            p->old_table = p->table;
            FM__ATOMIC_STORE(&p->old_pub, fm__table_tag(p->table, p->table_cap), RELEASE);
        }
        p->bytes_reserved += fm__table_bytes(g.table_cap);
        p->table_cap = g.table_cap;
        p->table_used = 0;
        p->table = g.table;
        FM__ATOMIC_STORE(&p->table_pub, fm__table_tag(g.table, g.table_cap), RELEASE);
    }
    if (kind != FM__GROW_CREATE) {
        uint64_t ticks = fm_clock_now() - start;
        p->grow_events++;
        p->grow_ticks_total += ticks;
        if (ticks > p->grow_ticks_max) p->grow_ticks_max = ticks;
        if (kind == FM__GROW_ALLOC) p->alloc_grow_events++, p->alloc_grow_ticks += ticks;
        if (kind == FM__GROW_AHEAD) p->ahead_grow_events++, p->ahead_grow_ticks += ticks;
        fm__watch_grown += ticks;
    }
    fm__hook_grow(p->name, (size_t)k64 * p->chunk_bytes, start);
    return true;
}

/* The oldest span's next chunk gets a record and becomes a fresh chunk: it
 * enters the chunk map, the direct-mapped cache and the table, and its slots
 * become inaccessible to the debug tools. O(1). */
static uint32_t fm__open_pending(fm_pool *p) {
    fm__span *sp = p->spans;
    uint32_t idx = fm__take_record(p);
    fm__chunk *c = fm__chunk_at(p, idx);
    if (sp->next) {
        c->base = sp->next;
        sp->next += p->chunk_bytes;
        /* Where the OS releases part of a mapping, a chunk with a record
         * goes back on its own (fm__release_chunk), so the span lets go of
         * it and retires with its last chunk's opening: the next growth
         * reuses it, and growths after a pool's first few allocate nothing
         * (an allocation there was a growth's slowest part, 17-23 us in
         * fm-bench's linear row). Elsewhere the span stands for the whole
         * reservation until every chunk of it has gone back. */
        if (p->os_chunks_alone) {
            sp->held--;
            *fm__rec_span(p, idx) = NULL;
        } else {
            *fm__rec_span(p, idx) = sp;
        }
    } else {
        c->base = fm__chain_pop(&sp->chain);
        *fm__rec_span(p, idx) = NULL;
    }
    if (sp->links && !FM__ATOMIC_LOAD(fm__links_slot(p, idx), RELAXED))
        FM__ATOMIC_STORE(fm__links_slot(p, idx), (uint32_t *)(void *)fm__chain_pop(&sp->links),
                         RELEASE);
    c->limit = --sp->left ? p->hot.per_chunk : sp->last_limit;
    if (!sp->left) {
        p->spans = sp->next_span;
        if (!p->spans) p->spans_tail = NULL;
        fm__span_empty(p, sp); /* retires it, or waits for its chunks */
    }
    fm__dm_set(p, c);
    fm__map_set((uintptr_t)c->base, p->chunk_bytes, p);
    c->state = FM__CHUNK_FRESH;
    uint8_t *slots0 = c->base + p->hot.slots_off;
    FM__POISON(slots0, (size_t)p->hot.per_chunk * p->hot.stride);
    FM__VG_NOACCESS(slots0, (size_t)p->hot.per_chunk * p->hot.stride);
    p->table_used += fm__table_insert(p->table, p->table_cap, p, idx);
    fm__table_migrate(p, FM__TABLE_MIGRATE);
    return idx;
}

/* Chunks that never got a record go back, newest first, while the pool
 * keeps its initial capacity (trim). */
static void fm__trim_pending(fm_pool *p) {
    fm__span *sp;
    while ((sp = p->spans_tail) != NULL) {
        uint32_t limit = sp->last_limit;
        if (p->capacity - limit < p->desc.initial_capacity) return;
        if (sp->next)
            fm__span_give_back(p, sp, sp->next + (size_t)(sp->left - 1) * p->chunk_bytes, 1);
        else
            fm_allocator_free(&p->desc.allocator, fm__chain_pop(&sp->chain), p->chunk_bytes);
        sp->last_limit = p->hot.per_chunk;
        fm__tag_uncharge(p->desc.tag, p->chunk_bytes, true);
        p->bytes_reserved -= p->chunk_bytes;
        p->capacity -= limit;
        p->chunk_count--;
        if (--sp->left) continue;
        fm__span **link = &p->spans;
        p->spans_tail = NULL;
        while (*link != sp) {
            p->spans_tail = *link;
            link = &(*link)->next_span;
        }
        *link = NULL;
        fm__span_empty(p, sp); /* retires it, or waits for its chunks */
    }
}

/* Destroy: every chunk that never got a record goes back, and the spans. */
static void fm__spans_release(fm_pool *p) {
    while (p->spans) {
        fm__span *sp = p->spans;
        p->spans = sp->next_span;
        fm__tag_uncharge(p->desc.tag, (size_t)sp->left * p->chunk_bytes, true);
        p->bytes_reserved -= (size_t)sp->left * p->chunk_bytes;
        fm__span_empty(p, sp); /* every chunk with a record has gone: retires it */
    }
    p->spans_tail = NULL;
    while (p->spare_spans) {
        fm__span *sp = p->spare_spans;
        p->spare_spans = sp->next_span;
        p->bytes_reserved -= sizeof *sp;
        fm_allocator_free(&p->desc.allocator, sp, sizeof *sp);
    }
}

/* How many slots the growth policy adds when an allocation finds no room. */
static uint64_t fm__policy_slots(const fm_pool *p) {
    uint64_t held = p->capacity + p->retired;
    uint64_t add = p->desc.grow_step;
    if (p->desc.growth != FM_GROWTH_LINEAR) {
        add = (uint64_t)((double)held * ((double)p->desc.grow_factor - 1.0) + 0.999);
        if (add < p->hot.per_chunk) add = p->hot.per_chunk;
    }
    /* Near the chunk limit, or its tag's hard limit, a growth takes what is
     * left (none left: one chunk, which fm__grow refuses and reports). */
    uint64_t room = (uint64_t)(p->max_chunks - p->chunk_count);
    uint64_t budget = fm__tag_room(p->desc.tag) / p->chunk_bytes;
    if (budget < room) room = budget;
    room *= p->hot.per_chunk;
    return add <= room || room == 0 ? add : room;
}

/* Parks the exhausted current chunk and makes another one current, growing
 * if the policy allows. false (reported) when no slot can be had. */
static bool fm__next_chunk(fm_pool *p) {
    fm__settle_next(p); /* a parked slot never outlives the chunk switch */
    if (p->partial.head == FM__NONE && p->empty.head == FM__NONE &&
        !p->spans) {
        if (p->desc.growth == FM_GROWTH_FIXED) {
            fm__report(FM_ERR_POOL_FULL, "pool '%s': FIXED pool full at %llu items", p->name,
                       (unsigned long long)p->capacity);
            return false;
        }
        if (!fm__grow(p, fm__policy_slots(p), FM__GROW_ALLOC)) return false;
    }
    fm__park_current(p);
    /* A partly used chunk with only a few free slots would be exhausted
     * again after a few allocations; while whole chunks are available, take
     * one of those and let the partial chunk gather more frees first. */
    uint32_t idx = p->partial.head;
    if (idx != FM__NONE && fm__chunk_room(fm__chunk_at(p, idx)) < p->hot.per_chunk / 8 &&
        (p->empty.head != FM__NONE || p->spans))
        idx = FM__NONE;
    if (idx != FM__NONE) fm__list_unlink(p, &p->partial, idx);
    if (idx == FM__NONE) idx = fm__list_pop(p, &p->empty);
    if (idx == FM__NONE && p->spans) idx = fm__open_pending(p);
    if (idx == FM__NONE) idx = fm__list_pop(p, &p->partial);
    fm__make_current(p, idx);
    return true;
}

/* ================================================ lookups without the lock */

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
static FM__THREAD_LOCAL fm__chunk_hint fm__hint_tls;
#define fm__hint FM__TLS(fm__hint_tls)

static inline fm_error fm__locate_fast(const fm_pool *p, const void *ptr, fm__loc *out) {
    uintptr_t base = (uintptr_t)ptr & p->base_mask;
    if (FM__LIKELY(fm__hint.pool_id == p->id && fm__hint.base == base)) {
        uint32_t slot = fm__slot_of(p, base, ptr);
        if (FM__LIKELY((uintptr_t)fm__base_get(p, fm__hint.chunk) ==
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

/* THREAD_CACHE and LOCKFREE: the lookup needs no lock; only a problem takes
 * it (other policies call fm__locate with the lock held or as the owner). */
static fm_error fm__locate_for(const fm_pool *p, const void *ptr, fm__loc *out) {
    fm_error err = fm__locate_fast(p, ptr, out);
    return err == FM_OK ? err : fm__shared_problem(p, err, ptr);
}

/* ================================================================ layout */

/* The bits of a handle's slot field for chunks of per slots (at least 1). */
static uint32_t fm__slot_bits_for(uint32_t per) {
    uint32_t bits = 1;
    while ((1u << bits) < per) bits++;
    return bits;
}

/* Where a chunk of cb bytes puts its parts for slots of stride bytes
 * aligned to item_align: the stack, the sites and the first slot, and how
 * many slots fit (at most FM__MAX_PER_CHUNK); 0 when not even one does.
 *
 * fm_pool_resolve reads the meta word of any slot its handle's slot field
 * can name, [0, 2^slot_bits), without testing the slot against per (see
 * detail/pool.h): words [per, 2^slot_bits) are the free stack's 16-bit
 * entries (below 32768: bit 31 of a word is never set), then zero padding
 * up to 4 << slot_bits bytes, so none of them reads as live. The padding is
 * needed only where per is under two thirds of 2^slot_bits. */
static uint32_t fm__layout(size_t cb, uint32_t stride, size_t item_align, fm__chunk_layout *out) {
    const size_t per_slot_head = sizeof(uint32_t) + sizeof(uint16_t);
#ifdef FM_TRACK_SITES
    const size_t per_slot_meta = per_slot_head + sizeof(fm__site);
#else
    const size_t per_slot_meta = per_slot_head;
#endif
    size_t slot_align = item_align;
#ifdef FM__ASAN
    if (slot_align < 8) slot_align = 8; /* whole shadow granules: see fm_pool_create */
#endif
    size_t fit = cb / (stride + per_slot_meta);
    uint32_t per = (uint32_t)(fit < FM__MAX_PER_CHUNK ? fit : FM__MAX_PER_CHUNK);
    for (; per > 0; per--) {
        size_t stack = (size_t)per * sizeof(uint32_t);
        size_t words_end = sizeof(uint32_t) << fm__slot_bits_for(per);
        size_t stack_end = stack + (size_t)per * sizeof(uint16_t);
        size_t sites = fm_align_up(stack_end > words_end ? stack_end : words_end, sizeof(void *));
        size_t meta_end = sites + (per_slot_meta - per_slot_head) * per;
        size_t off = fm_align_up(meta_end, slot_align);
        if (off + (size_t)per * stride <= cb) {
            out->stack_off = (uint32_t)stack;
            out->sites_off = (uint32_t)sites;
            out->slots_off = (uint32_t)off;
            break;
        }
    }
    return per;
}

/* chunk_bytes 0 (the default): the smallest power of two from 64 KiB that
 * holds a few dozen items (32; 16 of 64 KiB or more, 4 of 1 MiB or more).
 * Such a chunk holds fewer than 32768 slots (a slot is 4 bytes or more).
 * Then as many slots as the meta words and the free stack leave room for. */
static size_t fm__default_chunk_bytes(uint32_t stride, size_t item_align) {
#ifdef FM_TRACK_SITES
    const size_t per_slot_meta = sizeof(uint32_t) + sizeof(uint16_t) + sizeof(fm__site);
#else
    const size_t per_slot_meta = sizeof(uint32_t) + sizeof(uint16_t);
#endif
    uint32_t min_slots = stride >= (1u << 20) ? 4 : stride >= (1u << 16) ? 16 : 32;
    size_t want = (stride + per_slot_meta) * min_slots + item_align;
    size_t cb = (size_t)64 << 10;
    while (cb < want) cb <<= 1;
    return cb;
}

static void fm__geometry(fm_pool *p) {
    size_t cb = p->desc.chunk_bytes ? p->desc.chunk_bytes
                                    : fm__default_chunk_bytes(p->hot.stride, p->item_align);
    fm__chunk_layout lay = {0};
    uint32_t per = fm__layout(cb, p->hot.stride, p->item_align, &lay); /* >= 1: desc checked */
    p->stack_off = lay.stack_off;
    p->sites_off = lay.sites_off;
    p->hot.slots_off = lay.slots_off;
    p->hot.per_chunk = per;
    p->chunk_bytes = cb;
    p->chunk_shift = fm__ctz32((uint32_t)(cb >> 1)) + 1;
    p->base_mask = ~(uintptr_t)(cb - 1);
    p->hot.base_mask = p->base_mask;
    /* Growth windows (fm__window_take) of chunks that come from the OS. */
    size_t win = fm__os_get_caps()->window_bytes;
    p->win_chunks = win && cb <= win / 4 ? (uint32_t)(win / cb) : 0;
    p->hot.slot_bits = fm__slot_bits_for(per);
    p->hot.slot_mask = (1u << p->hot.slot_bits) - 1u;
    /* A handle's low word is (record + 1) << slot_bits | slot, and the
     * LOCKFREE stack's index record << slot_bits | slot (never UINT32_MAX,
     * its empty mark): records [0, 2^(32 - slot_bits) - 1) fit both. Record
     * arrays stay below 2^29 entries. */
    uint64_t records = ((uint64_t)1 << (32 - p->hot.slot_bits)) - 1u;
    p->max_chunks = (uint32_t)(records < (UINT32_MAX >> 3) ? records : (UINT32_MAX >> 3));
    p->hot.inv_shift = fm__ctz32(p->hot.stride);
    uint64_t odd = p->hot.stride >> p->hot.inv_shift, inv = odd;
    for (int i = 0; i < 6; i++) inv *= 2u - odd * inv; /* Newton: odd * inv == 1 mod 2^64 */
    p->hot.inv = inv;
}

/* ====================================================== reserve and trim */

static bool fm__reserve_core(fm_pool *pool, uint32_t capacity) {
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
    return fm__grow(pool, capacity - pool->capacity, FM__GROW_RESERVE);
}

/* Headroom for the next frame, grown at the frame boundary: twice min_free
 * above live, so that a pool short of room by a little does not grow again
 * at the next boundary. */
static bool fm__grow_ahead_core(fm_pool *pool, uint32_t min_free) {
    uint64_t live = fm__live(pool);
    if (pool->capacity >= live + min_free) return true;
    if (pool->desc.growth == FM_GROWTH_FIXED) {
        fm__report(FM_ERR_POOL_FULL, "pool '%s': FIXED pool cannot grow ahead (%llu of %llu free, %u wanted)",
                   pool->name, (unsigned long long)(pool->capacity - live),
                   (unsigned long long)pool->capacity, min_free);
        return false;
    }
    uint64_t target = live + 2 * (uint64_t)min_free;
    if (target > UINT32_MAX) target = UINT32_MAX;
    if (pool->desc.max_capacity && target > pool->desc.max_capacity)
        target = pool->desc.max_capacity;
    if (target <= pool->capacity) return true; /* as far as max_capacity allows */
    return fm__grow(pool, target - pool->capacity, FM__GROW_AHEAD);
}

static bool fm__trimmable(const fm_pool *p, uint32_t idx) {
    const fm__chunk *c = fm__chunk_at(p, idx);
    uint64_t usable = c->limit - c->retired;
    return p->capacity - usable >= p->desc.initial_capacity;
}

static size_t fm__trim_core(fm_pool *pool) {
    fm_pool *p = pool;
    fm__settle_next(p); /* a parked slot's chunk may be empty now */
    size_t before = p->bytes_reserved;
    /* Never-used chunks first (cheapest to get back), then empty ones, then
     * the current chunk if it is empty. */
    fm__trim_pending(p);
    while (p->empty.tail != FM__NONE && fm__trimmable(p, p->empty.tail)) {
        uint32_t idx = p->empty.tail;
        fm__list_unlink(p, &p->empty, idx);
        fm__release_chunk(p, idx);
    }
    if (p->cur_idx != FM__NONE && fm__chunk_live(p, p->cur_idx) == 0 &&
        fm__trimmable(p, p->cur_idx)) {
        uint32_t idx = p->cur_idx;
        fm__park_current(p);
        if (fm__chunk_at(p, idx)->state == FM__CHUNK_EMPTY) fm__list_unlink(p, &p->empty, idx);
        fm__release_chunk(p, idx);
    }
    size_t released = before - p->bytes_reserved;
    if (released) {
        p->trim_events++;
        p->bytes_trimmed += released;
    }
    return released;
}
