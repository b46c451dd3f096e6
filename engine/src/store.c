/* store.c: pool, classic-pool or malloc storage for world items, counted and
 * timed alike. */
#include "store.h"

#include "framemem/clock.h"

#include <stdlib.h>
#include <string.h>

#include "eng_internal.h"
#include "engine/ds.h"

/* The slot index sits in front of each malloc'd item that has a handle. */
#define ENG__MHDR 16u

/* ---------------------------------------------------------------- lifetime */

bool eng__store_init(eng__store *s, const eng__store_desc *d) {
    memset(s, 0, sizeof *s);
    s->name = d->pool.name;
    s->source = -1;
    s->backend = d->backend;
    s->timing = d->timing;
    s->item_size = d->pool.item_size;
    s->item_align = d->pool.item_align;
    s->handles = d->handles;
    s->alloc = d->allocator;
    s->faults = d->faults;
    s->counts.item_size = d->pool.item_size;
    if (s->backend == ENG_BACKEND_POOL) {
        fm_pool_desc pd = d->pool;
        pd.silent_destroy = true; /* a world rebuild drops its items with the pool */
        pd.allocator = d->allocator;
        pd.prefault = pd.prefault && d->prefault_switch;
        if (d->override_growth) pd.growth = d->growth;
        s->pool = fm_pool_create(&pd);
        if (!s->pool) return false;
        fm_pool_stats st;
        fm_pool_get_stats(s->pool, &st);
        if (pd.growth == FM_GROWTH_FIXED) s->limit = st.capacity;
        if (pd.max_capacity && (!s->limit || pd.max_capacity < s->limit)) s->limit = pd.max_capacity;
    } else if (s->backend == ENG_BACKEND_CLASSIC) {
        /* Slots are 16-aligned (the handle header keeps them so). Growth
         * policy, limits, prefault and grow-ahead are framemem's: Boost's
         * pool only doubles. */
        if (s->item_align > 16) {
            fm_report_error(FM_ERR_INVALID_ARG, "classic pool '%s': alignment %zu over 16", s->name,
                            s->item_align);
            return false;
        }
        s->classic = eng_classic_pool_create(s->item_size + (s->handles ? ENG__MHDR : 0),
                                             d->pool.initial_capacity);
        if (!s->classic) {
            fm_report_error(FM_ERR_OUT_OF_MEMORY, "classic pool '%s': no memory for its first block",
                            s->name);
            return false;
        }
        eng_classic_pool_stats st;
        eng_classic_pool_get_stats(s->classic, &st);
        s->counts.capacity = st.capacity;
    }
    return true;
}

void eng__store_deinit(eng__store *s) {
    if (s->pool) fm_pool_destroy(s->pool);
    s->pool = NULL;
    if (s->backend == ENG_BACKEND_MALLOC)
        for (size_t i = 0; i < arrlenu(s->slots); i++)
            if (s->slots[i].item) free((uint8_t *)s->slots[i].item - ENG__MHDR);
    eng_classic_pool_destroy(s->classic); /* its items go with its blocks */
    s->classic = NULL;
    arrfree(s->slots);
}

/* ------------------------------------------------------ malloc slot table */

static bool eng__slot_take(eng__store *s, void *item, uint32_t *out) {
    if (s->slot_free) {
        uint32_t i = s->slot_free - 1;
        s->slot_free = s->slots[i].next;
        s->slots[i].item = item;
        *out = i;
        return true;
    }
    /* Handles hold index + 1 in 32 bits. A first table of 256 slots spares
     * the frame loop a run of small regrowths. */
    size_t n = arrlenu(s->slots);
    if (n >= UINT32_MAX - 1 || !ENG_ARR_RESERVE(s->slots, n ? 1 : 256, &s->alloc)) return false;
    arrput(s->slots, ((eng__mslot){.item = item, .gen = 1, .next = 0}));
    *out = (uint32_t)n;
    return true;
}

/* An item's memory, its handle header included: a classic pool's slot
 * (sized for it) or malloc's. */
static void *eng__raw_alloc(eng__store *s, size_t size) {
    return s->classic ? eng_classic_pool_alloc(s->classic) : malloc(size);
}

static void eng__raw_free(eng__store *s, void *raw) {
    if (s->classic) eng_classic_pool_free(s->classic, raw);
    else free(raw);
}

static void *eng__malloc_item(eng__store *s) {
    if (!s->handles) return eng__raw_alloc(s, s->item_size);
    uint8_t *raw = eng__raw_alloc(s, ENG__MHDR + s->item_size);
    if (!raw) return NULL;
    uint32_t idx;
    if (!eng__slot_take(s, raw + ENG__MHDR, &idx)) {
        eng__raw_free(s, raw);
        return NULL;
    }
    memcpy(raw, &idx, sizeof idx);
    return raw + ENG__MHDR;
}

static void eng__free_item(eng__store *s, void *item) {
    if (!s->handles) {
        eng__raw_free(s, item);
        return;
    }
    uint8_t *raw = (uint8_t *)item - ENG__MHDR;
    uint32_t idx;
    memcpy(&idx, raw, sizeof idx);
    eng__mslot *sl = &s->slots[idx];
    sl->item = NULL;
    sl->gen = sl->gen >= 0x7fffffffu ? 1 : sl->gen + 1;
    sl->next = s->slot_free;
    s->slot_free = idx + 1;
    eng__raw_free(s, raw);
}

/* -------------------------------------------------------------- alloc/free */

uint32_t eng__store_alloc_n(eng__store *s, void **out, uint32_t n) {
    if (!n) return 0;
    uint32_t asked = n;
    /* A full pool is an expected state of a game (fewer sparks), not an
     * error to report every frame: ask only for what fits. */
    if (s->limit) {
        uint64_t room = s->limit > s->counts.live ? s->limit - s->counts.live : 0;
        if (n > room) n = (uint32_t)room;
        if (!n) {
            s->counts.failed += asked;
            return 0;
        }
    }
    uint32_t got = 0;
    uint64_t t0 = s->timing ? fm_clock_now() : 0;
    if (s->backend == ENG_BACKEND_POOL) {
        got = (uint32_t)fm_pool_alloc_n(s->pool, out, n);
    } else {
        for (; got < n; got++) {
            void *it = eng__malloc_item(s);
            if (!it) break;
            out[got] = it;
        }
    }
    if (s->timing) {
        s->f_ticks += fm_clock_now() - t0;
        s->f_batches++;
    }
    if (got < n) {
        /* Within the limit, so the backing memory ran out: fewer items this
         * frame; the next batch tries again. */
        if (s->backend == ENG_BACKEND_POOL)
            eng__fault(s->faults, "pool '%s' gave %u of %u items: %s", s->name, got, n,
                       fm_last_error_message());
        else
            eng__fault(s->faults, "'%s' (%s) gave %u of %u items: out of memory", s->name,
                       s->classic ? "classic" : "malloc", got, n);
    }
    fm_telemetry_counters *c = &s->counts;
    if (s->classic) {
        eng_classic_pool_stats st;
        eng_classic_pool_get_stats(s->classic, &st);
        c->capacity = st.capacity;
        c->grow_events = st.grow_events;
        c->grow_ns = fm_clock_to_ns(st.grow_ticks);
    }
    c->total_allocs += got;
    c->failed += asked - got;
    c->live += got;
    if (c->live > c->peak_live) c->peak_live = c->live;
    return got;
}

void eng__store_free_n(eng__store *s, void *const *items, uint32_t n) {
    if (!n) return;
    uint64_t t0 = s->timing ? fm_clock_now() : 0;
    if (s->backend == ENG_BACKEND_POOL) {
        fm_pool_free_n(s->pool, items, n);
    } else {
        for (uint32_t i = 0; i < n; i++) eng__free_item(s, items[i]);
    }
    if (s->timing) {
        s->f_ticks += fm_clock_now() - t0;
        s->f_batches++;
    }
    s->counts.total_frees += n;
    s->counts.live -= n;
}

fm_handle eng__store_handle(const eng__store *s, const void *item) {
    if (!item) return FM_HANDLE_NULL;
    if (s->backend == ENG_BACKEND_POOL) return fm_pool_handle(s->pool, item);
    if (!s->handles) return FM_HANDLE_NULL;
    uint32_t idx;
    memcpy(&idx, (const uint8_t *)item - ENG__MHDR, sizeof idx);
    return (fm_handle){((uint64_t)s->slots[idx].gen << 32) | (uint64_t)(idx + 1)};
}

void *eng__store_resolve(const eng__store *s, fm_handle h) {
    if (s->backend == ENG_BACKEND_POOL) return fm_pool_resolve(s->pool, h);
    uint32_t loc = (uint32_t)h.bits, gen = (uint32_t)(h.bits >> 32);
    if (!s->handles || loc == 0 || loc > arrlenu(s->slots)) return NULL;
    const eng__mslot *sl = &s->slots[loc - 1];
    return sl->item && sl->gen == gen ? sl->item : NULL;
}

/* ----------------------------------------------------------- frame timing */

uint64_t eng__store_take_ns(eng__store *s, uint64_t overhead_ticks, uint64_t *batches) {
    uint64_t ticks = s->f_ticks, over = overhead_ticks * s->f_batches;
    *batches = s->f_batches;
    s->f_ticks = s->f_batches = 0;
    return s->timing && ticks > over ? fm_clock_to_ns(ticks - over) : 0;
}
