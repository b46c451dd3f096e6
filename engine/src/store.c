/* store.c: pool or malloc storage for world items, counted and timed alike. */
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
    s->name = d->name;
    s->source = -1;
    s->backend = d->backend;
    s->timing = d->timing;
    s->item_size = d->item_size;
    s->item_align = d->item_align;
    s->handles = d->handles;
    s->alloc = d->allocator;
    s->faults = d->faults;
    s->grow_ahead = d->grow_ahead_switch && (!d->cfg || d->cfg->grow_ahead);
    if (s->backend == ENG_BACKEND_POOL) {
        const eng_pool_config *c = d->cfg;
        fm_pool_desc pd = c ? eng__pool_desc(c) : (fm_pool_desc){.prefault = true};
        pd.name = d->name;
        pd.item_size = d->item_size;
        pd.item_align = d->item_align;
        pd.silent_destroy = true; /* a world rebuild drops its items with the pool */
        pd.allocator = d->allocator;
        pd.prefault = pd.prefault && d->prefault_switch;
        if (d->override_growth) pd.growth = d->growth;
        s->pool = fm_pool_create(&pd);
        if (!s->pool) return false;
        fm_pool_stats st;
        fm_pool_get_stats(s->pool, &st);
        s->seen_grow_events = st.grow_events;
        s->seen_grow_ns = st.grow_ns_total;
        if (pd.growth == FM_GROWTH_FIXED) {
            s->grow_ahead = false;
            s->limit = st.capacity;
        }
        if (pd.max_capacity && (!s->limit || pd.max_capacity < s->limit)) s->limit = pd.max_capacity;
    }
    return true;
}

void eng__store_deinit(eng__store *s) {
    if (s->pool) fm_pool_destroy(s->pool);
    s->pool = NULL;
    for (size_t i = 0; i < arrlenu(s->slots); i++)
        if (s->slots[i].item) free((uint8_t *)s->slots[i].item - ENG__MHDR);
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

static void *eng__malloc_item(eng__store *s) {
    if (!s->handles) return malloc(s->item_size);
    uint8_t *raw = malloc(ENG__MHDR + s->item_size);
    if (!raw) return NULL;
    uint32_t idx;
    if (!eng__slot_take(s, raw + ENG__MHDR, &idx)) {
        free(raw);
        return NULL;
    }
    memcpy(raw, &idx, sizeof idx);
    return raw + ENG__MHDR;
}

static void eng__free_item(eng__store *s, void *item) {
    if (!s->handles) {
        free(item);
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
    free(raw);
}

/* -------------------------------------------------------------- alloc/free */

uint32_t eng__store_alloc_n(eng__store *s, void **out, uint32_t n) {
    if (!n) return 0;
    uint32_t asked = n;
    /* A full pool is an expected state of a game (fewer sparks), not an
     * error to report every frame: ask only for what fits. */
    if (s->limit) {
        uint64_t room = s->limit > s->live ? s->limit - s->live : 0;
        if (n > room) n = (uint32_t)room;
        if (!n) {
            s->failed_allocs += asked;
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
            eng__fault(s->faults, "'%s' (malloc) gave %u of %u items: out of memory", s->name, got,
                       n);
    }
    s->f_allocs += got;
    s->total_allocs += got;
    s->failed_allocs += asked - got;
    s->live += got;
    if (s->live > s->peak_live) s->peak_live = s->live;
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
    s->f_frees += n;
    s->total_frees += n;
    s->live -= n;
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

/* ----------------------------------------------------- frame boundary work */

uint64_t eng__store_capacity(const eng__store *s) {
    if (s->backend != ENG_BACKEND_POOL) return s->live;
    fm_pool_stats st;
    fm_pool_get_stats(s->pool, &st);
    return st.capacity;
}

uint64_t eng__store_chunk_items(const eng__store *s) {
    if (s->backend != ENG_BACKEND_POOL) return 1;
    fm_pool_stats st;
    fm_pool_get_stats(s->pool, &st);
    return st.items_per_chunk;
}

uint64_t eng__store_item_stride(const eng__store *s) {
    if (s->backend != ENG_BACKEND_POOL) return s->item_size;
    fm_pool_stats st;
    fm_pool_get_stats(s->pool, &st);
    return st.stride;
}

void eng__store_grow_ahead(eng__store *s) {
    int64_t net = (int64_t)s->f_allocs - (int64_t)s->f_frees;
    s->net[s->net_pos] = net > 0 ? net : 0;
    s->net_pos = (s->net_pos + 1) % ENG__GROW_AHEAD_WINDOW;
    if (s->backend != ENG_BACKEND_POOL || !s->grow_ahead) return;
    /* Allocations of a frame come after its frees, so a frame's peak demand
     * over its starting live count is its net allocation; the largest of the
     * recent ones is what the next frame may need. */
    int64_t worst = 0;
    for (uint32_t i = 0; i < ENG__GROW_AHEAD_WINDOW; i++)
        if (s->net[i] > worst) worst = s->net[i];
    fm_pool_stats st;
    fm_pool_get_stats(s->pool, &st);
    uint64_t headroom = st.capacity - st.live;
    uint64_t want = (uint64_t)worst * ENG__GROW_AHEAD_MARGIN;
    if (worst == 0 || headroom >= want) return;
    uint64_t target = st.live + 2 * want;
    if (target > UINT32_MAX) target = UINT32_MAX;
    fm_pool_desc pd = fm_pool_get_desc(s->pool);
    if (pd.max_capacity && target > pd.max_capacity) target = pd.max_capacity;
    if (target <= st.capacity) return;
    uint64_t ev0 = st.grow_events, ns0 = st.grow_ns_total;
    /* A refusal (out of memory, reported) leaves the pool as it was: the
     * frame's allocations then grow in place, which telemetry shows. */
    if (!fm_pool_reserve(s->pool, (uint32_t)target))
        eng__fault(s->faults, "pool '%s': grow-ahead to %llu items refused: %s", s->name,
                   (unsigned long long)target, fm_last_error_message());
    fm_pool_get_stats(s->pool, &st);
    s->f_ahead_events += st.grow_events - ev0;
    s->f_ahead_ns += st.grow_ns_total - ns0;
}

void eng__store_sample(eng__store *s, eng_sample *out, uint64_t overhead_ticks) {
    memset(out, 0, sizeof *out);
    out->allocs = s->f_allocs;
    out->frees = s->f_frees;
    out->live = s->live;
    out->peak_live = s->peak_live;
    uint64_t ticks = s->f_ticks;
    uint64_t over = overhead_ticks * s->f_batches;
    ticks = ticks > over ? ticks - over : 0;
    out->alloc_ns = s->timing ? fm_clock_to_ns(ticks) : 0;
    if (s->backend == ENG_BACKEND_POOL) {
        fm_pool_stats st;
        fm_pool_get_stats(s->pool, &st);
        out->capacity = st.capacity;
        uint64_t ev = st.grow_events - s->seen_grow_events;
        uint64_t ns = st.grow_ns_total - s->seen_grow_ns;
        out->ahead_grow_events = s->f_ahead_events;
        out->ahead_grow_ns = s->f_ahead_ns;
        out->grow_events = ev - s->f_ahead_events;
        out->grow_ns = ns > s->f_ahead_ns ? ns - s->f_ahead_ns : 0;
        s->in_alloc_grow_events += out->grow_events;
        s->ahead_events_total += s->f_ahead_events;
        s->ahead_ns_total += s->f_ahead_ns;
        s->seen_grow_events = st.grow_events;
        s->seen_grow_ns = st.grow_ns_total;
    } else {
        out->capacity = s->live;
    }
    s->f_allocs = s->f_frees = s->f_ticks = s->f_batches = 0;
    s->f_ahead_events = s->f_ahead_ns = 0;
}
