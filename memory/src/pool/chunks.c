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
    p->cs->cur_base = 1;
    p->cs->cur_slots = NULL;
    p->cs->cur_next_slot = NULL;
    p->cs->cur_next = FM__NONE;
    p->cs->cur_top = 0;
    p->cs->cur_stack = NULL;
    p->cs->cur_bump = 0;
    p->cs->cur_limit = 0;
    p->cs->cur_hw = 0;
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
    return p->chunks[idx].live - fm__parked_in(p, idx);
}

static uint32_t fm__chunk_bump(const fm_pool *p, uint32_t idx) {
    return idx == p->cur_idx ? (uint32_t)p->cs->cur_bump : p->chunks[idx].bump;
}

/* Slots [0, returned) of a chunk have been handed out at some time: their
 * meta words are the chunk's, never the zero of a page not yet touched. */
static uint32_t fm__chunk_used(const fm_pool *p, uint32_t idx) {
    uint32_t bump = fm__chunk_bump(p, idx), hw = p->chunks[idx].hw;
    return bump > hw ? bump : hw;
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
    while ((e = FM__ATOMIC_LOAD(&table[i], RELAXED)) != FM__NONE && e != FM__TOMB)
        i = (i + 1) & (cap - 1);
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

/* ============================================= records: taken and dropped */

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
    fm__map_set((uintptr_t)c->base, p->chunk_bytes, NULL);
    uint32_t k = fm__dm_slot(p, (uintptr_t)c->base);
    if (p->dm_base[k] == (uintptr_t)c->base) p->dm_base[k] = 1;
    FM__ATOMIC_STORE(&p->hot.bases[idx], NULL, RELEASE);
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
    if (p->use_os) fm__os_release(c->base, p->chunk_bytes);
    else fm_allocator_free(&p->desc.allocator, c->base, p->chunk_bytes);
    fm__tag_uncharge(p->desc.tag, p->chunk_bytes, true);
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
    bool map_failed; /* the chunk map (pool/map.c) could not take the chunks */
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
        if (p->use_os) fm__os_release(g->chain, p->chunk_bytes);
        else fm_allocator_free(a, g->chain, p->chunk_bytes);
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
    if (p->use_os && fm__os_get_caps()->has_partial_release) {
        /* One mapping for all k chunks, so growing by many chunks costs a
         * few system calls; each chunk is released on its own later. */
        if (g->k > SIZE_MAX / p->chunk_bytes) return false;
        g->block = fm__os_reserve((size_t)g->k * p->chunk_bytes, p->chunk_bytes, true);
        if (!g->block) return false;
        g->map_failed = !fm__map_prepare((uintptr_t)g->block, (size_t)g->k * p->chunk_bytes,
                                         p->chunk_bytes);
        return !g->map_failed;
    }
    /* The allocator's chunks, or an OS that releases only whole
     * reservations (Windows): one reservation per chunk, so that trim can
     * give any chunk back alone. */
    for (uint32_t i = 0; i < g->k; i++) {
        uint8_t *base = p->use_os ? fm__os_reserve(p->chunk_bytes, p->chunk_bytes, true)
                                  : fm_allocator_alloc(a, p->chunk_bytes, p->chunk_bytes);
        if (!base) return false;
        fm__pending pend = {g->chain};
        if (!fm_is_aligned(base, p->chunk_bytes)) { /* an allocator's only */
            fm_allocator_free(a, base, p->chunk_bytes);
            return false;
        }
        memcpy(base, &pend, sizeof pend);
        g->chain = base;
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
        fm__map_set((uintptr_t)c->base, p->chunk_bytes, p);
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
        p->fresh.head == FM__NONE) {
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

/* THREAD_CACHE and LOCKFREE: the lookup needs no lock; only a problem takes
 * it (other policies call fm__locate with the lock held or as the owner). */
static fm_error fm__locate_for(const fm_pool *p, const void *ptr, fm__loc *out) {
    fm_error err = fm__locate_fast(p, ptr, out);
    return err == FM_OK ? err : fm__shared_problem(p, err, ptr);
}

/* ================================================================ layout */

static uint32_t fm__ctz32(uint32_t v) {
    uint32_t n = 0;
    while (!(v & 1u)) {
        v >>= 1;
        n++;
    }
    return n;
}

/* Where a chunk of cb bytes puts its parts for slots of stride bytes
 * aligned to item_align: the stack, the sites and the first slot, and how
 * many slots fit (at most 65536, what 16-bit stack entries can name); 0
 * when not even one does. */
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
    uint32_t per = (uint32_t)(fit < 65536 ? fit : 65536);
    for (; per > 0; per--) {
        size_t stack = (size_t)per * sizeof(uint32_t);
        size_t sites = fm_align_up(stack + (size_t)per * sizeof(uint16_t), sizeof(void *));
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
 * Such a chunk holds fewer than 65536 slots (a slot is 4 bytes or more).
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
    p->hot.slot_bits = 1;
    while ((1u << p->hot.slot_bits) < per) p->hot.slot_bits++;
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
    const fm__chunk *c = &p->chunks[idx];
    uint64_t usable = c->limit - c->retired;
    return p->capacity - usable >= p->desc.initial_capacity;
}

static size_t fm__trim_core(fm_pool *pool) {
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
