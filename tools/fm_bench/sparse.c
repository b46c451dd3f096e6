/*
 * fm_bench/sparse.c: the pattern of a shipped C game moved onto framemem
 * (issue 19): a few kinds of object in pools of their own, each pool
 * touched a few times per frame, objects freed through a pointer to their
 * base (the pool not known at the call), and a whole level thrown away at
 * once. Against glibc malloc/free and a first-fit zone allocator with
 * free-by-tag (zone.h, the way id Software's zone works), in the same run.
 *
 * 1. sparse: 9 pools of 40..200-byte items. Per frame each pool gets 0..10
 *    allocations (none in 7 frames of 10, else 1..10), in a shuffled order
 *    across the pools; each object lives 1..240 frames, or (one in five)
 *    until the level ends. Per frame the dead are freed first, in birth
 *    order, then the new objects allocated and their first word written.
 *    Every N frames the level ends: fm_pool_reset of each pool, free() of
 *    every live object, zone_free_tags of the level's tag. The schedule is
 *    drawn once (fixed seed) and played by every variant; each frame's frees
 *    and allocations are timed as two regions, a teardown as one. Pools and
 *    the zone are created fresh for every run, so the first level includes
 *    the first allocations of fresh pools (reported apart). Variants for the
 *    frees: fm_free (the pool found by address), fm_pool_free (the pool
 *    known: the target's baseline), and the integration's old way, asking
 *    every pool fm_pool_owns in turn. The lower bound: bare pools, a free
 *    list and a bump pointer per type with no checks.
 * 2. cold: the first 24 allocations of each of 9 fresh pools (round robin),
 *    against the same allocations once the pages are resident (after a
 *    reset) and in steady state (after frees): today's default (the first
 *    chunk resident and current at create), a first chunk of 128 KiB (over
 *    the 64 KiB that is made resident: what every pool did before), 4 KiB
 *    chunks; glibc and the zone (warm: it served earlier levels).
 * 3. reset: one pool with 1,000 live 176-byte items (1,500 allocated, 500
 *    scattered ones freed): fm_pool_reset against the zone's free-by-tag of
 *    the same level, free() of each item, and the old ways (foreach + free;
 *    destroy + create).
 *    Then what a page's first write costs after each way of making pages
 *    resident (none, MADV_POPULATE_WRITE, a write per page, both: the
 *    library's fm__os_prefault, both and then another range populated),
 *    in fresh 4 KiB-page mappings.
 * 4. fm_pool_of of pointers no pool holds (heap, stack, static) and of
 *    pool items, inline and through the library's function, against the
 *    loop alone.
 * Medians over runs; targets with their verdicts at the end.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_POPULATE_WRITE */
#endif
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "framemem/clock.h"
#include "framemem/pool.h"
#include "zone.h"

enum { SP_POOLS = 9, SP_LIFE = 240, SP_COLD_FIRST = 24, SP_RESET_LIVE = 1000 };
static const size_t sp_sizes[SP_POOLS] = {40, 48, 64, 88, 104, 120, 144, 176, 200};

#define SP_ZONE_BYTES ((size_t)32 << 20)

static double sp_ns(uint64_t ticks, uint64_t n) {
    return n ? (double)fm_clock_to_ns(ticks) / (double)n : 0.0;
}

/* ============================================================ the schedule */

typedef struct sp_sched {
    uint32_t frames, per_level;
    uint32_t objects;
    uint8_t *pool_of;      /* per object */
    uint32_t *alloc_start; /* per frame (+1): its range of alloc_id */
    uint32_t *alloc_id;
    uint32_t *free_start; /* per frame (+1): its range of free_id */
    uint32_t *free_id;
    uint32_t *end_start; /* per level (+1): objects alive at its end */
    uint32_t *end_id;
} sp_sched;

static uint32_t sp_below(uint64_t *rng, uint32_t n) {
    return (uint32_t)((bench_xorshift64(rng) >> 11) % n);
}

static sp_sched sp_sched_make(uint32_t levels, uint32_t per_level) {
    sp_sched s = {.frames = levels * per_level, .per_level = per_level};
    size_t cap = (size_t)s.frames * SP_POOLS * 10 + 1;
    s.pool_of = bench_xmalloc(cap);
    s.alloc_id = bench_xmalloc(cap * sizeof *s.alloc_id);
    s.free_id = bench_xmalloc(cap * sizeof *s.free_id);
    s.end_id = bench_xmalloc(cap * sizeof *s.end_id);
    s.alloc_start = bench_xmalloc((s.frames + 1) * sizeof *s.alloc_start);
    s.free_start = bench_xmalloc((s.frames + 1) * sizeof *s.free_start);
    s.end_start = bench_xmalloc((levels + 1) * sizeof *s.end_start);
    uint32_t *live = bench_xmalloc(cap * sizeof *live);
    uint32_t *death = bench_xmalloc(cap * sizeof *death);
    uint64_t rng = 0x5DEECE66Dull;
    uint32_t n_alloc = 0, n_free = 0, n_end = 0;
    for (uint32_t level = 0; level < levels; level++) {
        uint32_t n_live = 0;
        for (uint32_t lf = 0; lf < per_level; lf++) {
            uint32_t f = level * per_level + lf;
            s.free_start[f] = n_free;
            uint32_t kept = 0;
            for (uint32_t i = 0; i < n_live; i++) {
                if (death[live[i]] == f) s.free_id[n_free++] = live[i];
                else live[kept++] = live[i];
            }
            n_live = kept;
            s.alloc_start[f] = n_alloc;
            for (uint32_t k = 0; k < SP_POOLS; k++) {
                uint32_t count = sp_below(&rng, 10) < 7 ? 0 : 1 + sp_below(&rng, 10);
                for (uint32_t j = 0; j < count; j++) {
                    uint32_t id = s.objects++;
                    s.pool_of[id] = (uint8_t)k;
                    death[id] =
                        sp_below(&rng, 5) == 0 ? UINT32_MAX : f + 1 + sp_below(&rng, SP_LIFE);
                    s.alloc_id[n_alloc++] = id;
                    live[n_live++] = id;
                }
            }
            /* The frame's allocations in a shuffled order across the pools. */
            for (uint32_t i = n_alloc; i-- > s.alloc_start[f] + 1;) {
                uint32_t j = s.alloc_start[f] + sp_below(&rng, i - s.alloc_start[f] + 1);
                uint32_t t = s.alloc_id[i];
                s.alloc_id[i] = s.alloc_id[j];
                s.alloc_id[j] = t;
            }
        }
        s.end_start[level] = n_end;
        for (uint32_t i = 0; i < n_live; i++) s.end_id[n_end++] = live[i];
    }
    s.alloc_start[s.frames] = n_alloc;
    s.free_start[s.frames] = n_free;
    s.end_start[levels] = n_end;
    free(live);
    free(death);
    return s;
}

static void sp_sched_free(sp_sched *s) {
    free(s->pool_of);
    free(s->alloc_id);
    free(s->free_id);
    free(s->end_id);
    free(s->alloc_start);
    free(s->free_start);
    free(s->end_start);
}

/* ============================================================ 1. sparse */

typedef enum sp_kind {
    SP_FM_FREE,
    SP_FM_POOL_FREE,
    SP_FM_OWNS,
    SP_MALLOC,
    SP_ZONE,
    SP_BARE
} sp_kind;
static const char *const sp_names[] = {
    "fm_pool; frees by fm_free (base pointer)",
    "fm_pool; frees by fm_pool_free (the pool known)",
    "fm_pool; frees by fm_pool_owns of each pool in turn, then fm_pool_free",
    "glibc malloc / free",
    "zone: first fit, free-by-tag",
    "bare pools: a free list and a bump pointer per type, no checks (lower bound)",
};
enum { SP_KINDS = 6 };

/* The lower bound: per type an intrusive free list (a free writes its link
 * into the object) over a bump pointer into memory made resident up front;
 * a teardown empties both. No checks, no counters. */
typedef struct sp_bare {
    uint8_t *mem;
    size_t used, stride;
    void *free;
} sp_bare;

typedef struct sp_result {
    double alloc_first, alloc_later, free_ns, teardown_us, teardown_item_ns;
    uint64_t allocs_first, allocs_later, frees, torn;
} sp_result;

typedef struct sp_state {
    sp_kind kind;
    fm_pool *pools[SP_POOLS];
    zone *z;
    sp_bare bare[SP_POOLS];
} sp_state;

static void sp_open(sp_state *st, sp_kind kind, const sp_sched *s) {
    memset(st, 0, sizeof *st);
    st->kind = kind;
    if (kind == SP_MALLOC) return;
    if (kind == SP_BARE) {
        for (int k = 0; k < SP_POOLS; k++) {
            size_t n = 0;
            for (uint32_t id = 0; id < s->objects; id++) n += s->pool_of[id] == k;
            st->bare[k].stride = (sp_sizes[k] + 15) & ~(size_t)15;
            st->bare[k].mem = bench_xmalloc(n * st->bare[k].stride + 16);
            memset(st->bare[k].mem, 0xA5, n * st->bare[k].stride + 16); /* resident */
        }
        return;
    }
    if (kind == SP_ZONE) {
        st->z = zone_create(SP_ZONE_BYTES, 1);
        if (!st->z) bench_die("sparse: zone_create");
        return;
    }
    for (int k = 0; k < SP_POOLS; k++) {
        st->pools[k] = fm_pool_create(&(fm_pool_desc){.name = "sparse", .item_size = sp_sizes[k]});
        if (!st->pools[k]) bench_die("sparse: fm_pool_create: %s", fm_last_error_message());
    }
}

static void sp_close(sp_state *st) {
    for (int k = 0; k < SP_POOLS; k++) {
        if (st->pools[k]) fm_pool_destroy(st->pools[k]);
        free(st->bare[k].mem);
    }
    zone_destroy(st->z);
}

static BENCH_NOINLINE void sp_allocs(sp_state *st, const sp_sched *s, uint32_t f, void **obj) {
    for (uint32_t e = s->alloc_start[f]; e < s->alloc_start[f + 1]; e++) {
        uint32_t id = s->alloc_id[e];
        uint32_t k = s->pool_of[id];
        void *p;
        switch (st->kind) {
        case SP_MALLOC: p = malloc(sp_sizes[k]); break;
        case SP_ZONE: p = zone_malloc(st->z, sp_sizes[k], ZONE_LEVEL, NULL); break;
        case SP_BARE: {
            sp_bare *b = &st->bare[k];
            if (b->free) {
                p = b->free;
                b->free = *(void **)p;
            } else {
                p = b->mem + b->used;
                b->used += b->stride;
            }
            break;
        }
        default: p = fm_pool_alloc(st->pools[k]); break;
        }
        if (!p) bench_die("sparse: an allocation returned NULL (%s)", fm_last_error_message());
        *(uint64_t *)p = id; /* the object's first word: its thinker function, say */
        obj[id] = p;
    }
}

static BENCH_NOINLINE void sp_frees(sp_state *st, const sp_sched *s, uint32_t f, void **obj) {
    const uint32_t *ids = s->free_id;
    uint32_t end = s->free_start[f + 1];
    switch (st->kind) {
    case SP_FM_FREE:
        for (uint32_t e = s->free_start[f]; e < end; e++) fm_free(obj[ids[e]]);
        break;
    case SP_FM_POOL_FREE:
        for (uint32_t e = s->free_start[f]; e < end; e++)
            fm_pool_free(st->pools[s->pool_of[ids[e]]], obj[ids[e]]);
        break;
    case SP_FM_OWNS:
        for (uint32_t e = s->free_start[f]; e < end; e++) {
            void *p = obj[ids[e]];
            for (int k = 0; k < SP_POOLS; k++) {
                if (fm_pool_owns(st->pools[k], p)) {
                    fm_pool_free(st->pools[k], p);
                    break;
                }
            }
        }
        break;
    case SP_MALLOC:
        for (uint32_t e = s->free_start[f]; e < end; e++) free(obj[ids[e]]);
        break;
    case SP_ZONE:
        for (uint32_t e = s->free_start[f]; e < end; e++) zone_free(st->z, obj[ids[e]]);
        break;
    case SP_BARE:
        for (uint32_t e = s->free_start[f]; e < end; e++) {
            sp_bare *b = &st->bare[s->pool_of[ids[e]]];
            void *p = obj[ids[e]];
            *(void **)p = b->free;
            b->free = p;
        }
        break;
    }
}

static BENCH_NOINLINE void sp_teardown(sp_state *st, const sp_sched *s, uint32_t level,
                                       void **obj) {
    switch (st->kind) {
    case SP_MALLOC:
        for (uint32_t e = s->end_start[level]; e < s->end_start[level + 1]; e++)
            free(obj[s->end_id[e]]);
        break;
    case SP_ZONE: zone_free_tags(st->z, ZONE_LEVEL, ZONE_PURGELEVEL - 1); break;
    case SP_BARE:
        for (int k = 0; k < SP_POOLS; k++) {
            st->bare[k].used = 0;
            st->bare[k].free = NULL;
        }
        break;
    default:
        for (int k = 0; k < SP_POOLS; k++) fm_pool_reset(st->pools[k]);
        break;
    }
}

static sp_result sp_once(sp_kind kind, const sp_sched *s, void **obj) {
    sp_state st;
    sp_open(&st, kind, s);
    uint64_t t_first = 0, t_later = 0, t_free = 0, t_down = 0;
    sp_result r = {0};
    for (uint32_t f = 0; f < s->frames; f++) {
        uint64_t t0 = fm_clock_now();
        sp_frees(&st, s, f, obj);
        uint64_t t1 = fm_clock_now();
        sp_allocs(&st, s, f, obj);
        uint64_t t2 = fm_clock_now();
        t_free += t1 - t0;
        uint32_t allocs = s->alloc_start[f + 1] - s->alloc_start[f];
        if (f < s->per_level) {
            t_first += t2 - t1;
            r.allocs_first += allocs;
        } else {
            t_later += t2 - t1;
            r.allocs_later += allocs;
        }
        r.frees += s->free_start[f + 1] - s->free_start[f];
        if ((f + 1) % s->per_level == 0) {
            uint32_t level = f / s->per_level;
            uint64_t t3 = fm_clock_now();
            sp_teardown(&st, s, level, obj);
            t_down += fm_clock_now() - t3;
            r.torn += s->end_start[level + 1] - s->end_start[level];
        }
    }
    if (kind < SP_MALLOC) {
        for (int k = 0; k < SP_POOLS; k++) {
            fm_pool_stats ps;
            fm_pool_get_stats(st.pools[k], &ps);
            if (ps.live != 0 || ps.misuse_count != 0 || ps.resets != s->frames / s->per_level)
                bench_die("sparse: pool %d left %llu live, %llu misuse, %llu resets", k,
                          (unsigned long long)ps.live, (unsigned long long)ps.misuse_count,
                          (unsigned long long)ps.resets);
        }
    }
    if (kind == SP_ZONE && zone_used_blocks(st.z) != 0) bench_die("sparse: the zone kept blocks");
    sp_close(&st);
    r.alloc_first = sp_ns(t_first, r.allocs_first);
    r.alloc_later = sp_ns(t_later, r.allocs_later);
    r.free_ns = sp_ns(t_free, r.frees);
    r.teardown_us = (double)fm_clock_to_ns(t_down) / 1000.0 / (double)(s->frames / s->per_level);
    r.teardown_item_ns = sp_ns(t_down, r.torn);
    return r;
}

/* ============================================================== 2. cold */

typedef enum cold_kind {
    COLD_DEFAULT,
    COLD_BIG_FIRST,
    COLD_4K,
    COLD_MALLOC,
    COLD_ZONE,
    COLD_BARE
} cold_kind;
static const char *const cold_names[] = {
    "fm_pool, default desc (first chunk resident and current at create)",
    "fm_pool, chunk_bytes 128 KiB (first chunk left untouched, as before)",
    "fm_pool, chunk_bytes 4096",
    "glibc malloc",
    "zone (warm)",
    "bare bump pointers into 9 fresh 64 KiB mappings made resident as fm_pool's are (lower bound)",
};
enum { COLD_KINDS = 6, COLD_N = SP_POOLS * SP_COLD_FIRST, COLD_REGION = 64 << 10 };

/* The two halves of fm__os_prefault (platform/os_posix.c) on fresh memory:
 * the kernel's faults in one call, where Linux has it; a write per 4 KiB
 * page. */
static void sp_populate(void *m, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    madvise(m, bytes, MADV_POPULATE_WRITE);
#else
    (void)m, (void)bytes;
#endif
}
static void sp_write_pages(void *m, size_t bytes) {
    for (size_t off = 0; off < bytes; off += 4096) ((volatile uint8_t *)m)[off] = 0;
}

/* COLD_BARE: fresh memory, made resident the way fm_pool makes a first
 * chunk resident (MADV_POPULATE_WRITE where Linux has it, then a write per
 * page: platform/os_posix.c, fm__os_prefault), and a bump pointer per type
 * into it. */
typedef struct cold_bare {
    uint8_t *region[SP_POOLS];
    size_t used[SP_POOLS];
} cold_bare;

static void cold_bare_open(cold_bare *b) {
    for (int k = 0; k < SP_POOLS; k++) {
        void *m = mmap(NULL, COLD_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) bench_die("cold: mmap");
        sp_populate(m, COLD_REGION);
        sp_write_pages(m, COLD_REGION);
        b->region[k] = m;
        b->used[k] = 0;
    }
}

typedef struct cold_result {
    double create_us, first_ns, resident_ns, steady_ns;
    uint64_t faults;
} cold_result;

/* The 216 allocations, round robin over the pools. */
static BENCH_NOINLINE uint64_t cold_allocs(cold_kind kind, fm_pool **pools, zone *z, cold_bare *b,
                                           void **out) {
    uint64_t t0 = fm_clock_now();
    for (int i = 0; i < SP_COLD_FIRST; i++) {
        for (int k = 0; k < SP_POOLS; k++) {
            void *p;
            if (kind == COLD_BARE) {
                p = b->region[k] + b->used[k];
                b->used[k] += (sp_sizes[k] + 15) & ~(size_t)15;
            } else if (kind == COLD_MALLOC) p = malloc(sp_sizes[k]);
            else if (kind == COLD_ZONE) p = zone_malloc(z, sp_sizes[k], ZONE_LEVEL, NULL);
            else p = fm_pool_alloc(pools[k]);
            if (!p) bench_die("cold: an allocation returned NULL");
            *(uint64_t *)p = (uint64_t)i;
            out[i * SP_POOLS + k] = p;
        }
    }
    return fm_clock_now() - t0;
}

static void cold_free_all(cold_kind kind, fm_pool **pools, zone *z, cold_bare *b, void **items) {
    if (kind == COLD_BARE) {
        memset(b->used, 0, sizeof b->used);
        return;
    }
    for (int i = 0; i < COLD_N; i++) {
        if (kind == COLD_MALLOC) free(items[i]);
        else if (kind == COLD_ZONE) zone_free(z, items[i]);
        else fm_pool_free(pools[i % SP_POOLS], items[i]);
    }
}

static cold_result cold_once(cold_kind kind, zone *z) {
    cold_result r = {0};
    fm_pool *pools[SP_POOLS] = {0};
    cold_bare bare = {0};
    void *items[COLD_N];
    uint64_t t0 = fm_clock_now();
    if (kind == COLD_BARE) cold_bare_open(&bare);
    if (kind <= COLD_4K) {
        size_t cb = kind == COLD_BIG_FIRST ? (size_t)128 << 10 : kind == COLD_4K ? 4096 : 0;
        for (int k = 0; k < SP_POOLS; k++) {
            pools[k] = fm_pool_create(&(fm_pool_desc){.name = "cold", .item_size = sp_sizes[k],
                                                      .chunk_bytes = cb});
            if (!pools[k]) bench_die("cold: fm_pool_create: %s", fm_last_error_message());
        }
    }
    r.create_us = (double)fm_clock_to_ns(fm_clock_now() - t0) / 1000.0;
    uint64_t faults = bench_minor_faults();
    r.first_ns = sp_ns(cold_allocs(kind, pools, z, &bare, items), COLD_N);
    r.faults = bench_minor_faults() - faults;
    /* The same again with every page resident: a reset (the pools), or all
     * freed (glibc, the zone). */
    if (kind <= COLD_4K) {
        for (int k = 0; k < SP_POOLS; k++) fm_pool_reset(pools[k]);
    } else {
        cold_free_all(kind, pools, z, &bare, items);
    }
    r.resident_ns = sp_ns(cold_allocs(kind, pools, z, &bare, items), COLD_N);
    /* Steady state: freed one by one, allocated again (a pool's free stack). */
    cold_free_all(kind, pools, z, &bare, items);
    r.steady_ns = sp_ns(cold_allocs(kind, pools, z, &bare, items), COLD_N);
    cold_free_all(kind, pools, z, &bare, items);
    for (int k = 0; k < SP_POOLS; k++) {
        if (pools[k]) fm_pool_destroy(pools[k]);
        if (bare.region[k]) munmap(bare.region[k], COLD_REGION);
    }
    return r;
}

/* Making pages resident, and what the first write to each page costs after
 * it: fresh mappings of RP_PAGES 4 KiB pages (MADV_NOHUGEPAGE), made
 * resident one way (timed), then 1 KiB written into each page in turn (each
 * write timed; the guest's page faults counted around them). */
typedef enum rp_way { RP_NONE, RP_POPULATE, RP_WRITE, RP_BOTH, RP_BOTH_THEN, RP_WAYS } rp_way;
static const char *const rp_way_names[RP_WAYS] = {
    "untouched (the first write faults)",
    "MADV_POPULATE_WRITE alone (fm__os_prefault before)",
    "a write to every page alone",
    "MADV_POPULATE_WRITE, then a write to every page (fm__os_prefault)",
    "the same, then another 8 MiB populated before the first writes",
};
enum { RP_PAGES = 256, RP_OTHER = 8 << 20 };

typedef struct rp_result {
    double prefault_ns, first_ns; /* per page; first_ns: the median page's */
    uint64_t slow, faults;        /* pages whose first write took over 2 us; faults in them */
} rp_result;

static rp_result rp_once(rp_way way) {
    rp_result r = {0};
#if defined(__linux__) && defined(MADV_POPULATE_WRITE) && defined(MADV_NOHUGEPAGE)
    size_t page = 4096, bytes = (size_t)RP_PAGES * page;
    uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) bench_die("resident: mmap");
    madvise(m, bytes, MADV_NOHUGEPAGE);
    uint64_t t0 = fm_clock_now();
    if (way != RP_NONE && way != RP_WRITE) sp_populate(m, bytes);
    if (way != RP_NONE && way != RP_POPULATE) sp_write_pages(m, bytes);
    r.prefault_ns = (double)fm_clock_to_ns(fm_clock_now() - t0) / RP_PAGES;
    if (way == RP_BOTH_THEN) {
        void *o = mmap(NULL, RP_OTHER, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (o == MAP_FAILED) bench_die("resident: mmap");
        sp_populate(o, RP_OTHER);
        munmap(o, RP_OTHER);
    }
    uint64_t ns[RP_PAGES];
    uint64_t faults = bench_minor_faults();
    for (size_t i = 0; i < RP_PAGES; i++) {
        uint64_t a = fm_clock_now();
        memset(m + i * page + 128, 0x5A, 1024);
        BENCH_ESCAPE(m);
        ns[i] = fm_clock_to_ns(fm_clock_now() - a);
    }
    r.faults = bench_minor_faults() - faults;
    for (size_t i = 0; i < RP_PAGES; i++) r.slow += ns[i] > 2000;
    r.first_ns = (double)bench_median_u64(ns, RP_PAGES);
    munmap(m, bytes);
#else
    (void)way;
#endif
    return r;
}

static void rp_report(int runs) {
    printf("\n### making pages resident: what each page's first write costs after it\n\n");
#if defined(__linux__) && defined(MADV_POPULATE_WRITE) && defined(MADV_NOHUGEPAGE)
    printf("Fresh mappings of %d 4 KiB pages (MADV_NOHUGEPAGE), made resident one way (timed), "
           "then 1 KiB written into each page in turn, each write timed, the process's page "
           "faults counted around them. %d run(s), ways interleaved; medians over the runs.\n\n",
           RP_PAGES, runs);
    rp_result *all = bench_xmalloc((size_t)runs * RP_WAYS * sizeof *all);
    for (int r = 0; r < runs; r++)
        for (int w = 0; w < RP_WAYS; w++) all[r * RP_WAYS + w] = rp_once((rp_way)w);
    double *col = bench_xmalloc((size_t)runs * sizeof *col);
    uint64_t *ucol = bench_xmalloc((size_t)runs * sizeof *ucol);
    printf("| way | making resident, ns per page | first write, median page, ns | pages over 2 "
           "µs at their first write | page faults in the writes |\n|---|---:|---:|---:|---:|\n");
    for (int w = 0; w < RP_WAYS; w++) {
        double pre, first;
        uint64_t slow, faults;
        for (int r = 0; r < runs; r++) col[r] = all[r * RP_WAYS + w].prefault_ns;
        pre = bench_median(col, (size_t)runs);
        for (int r = 0; r < runs; r++) col[r] = all[r * RP_WAYS + w].first_ns;
        first = bench_median(col, (size_t)runs);
        for (int r = 0; r < runs; r++) ucol[r] = all[r * RP_WAYS + w].slow;
        slow = bench_median_u64(ucol, (size_t)runs);
        for (int r = 0; r < runs; r++) ucol[r] = all[r * RP_WAYS + w].faults;
        faults = bench_median_u64(ucol, (size_t)runs);
        printf("| %s | %.0f | %.0f | %llu of %d | %llu |\n", rp_way_names[w], pre, first,
               (unsigned long long)slow, RP_PAGES, (unsigned long long)faults);
    }
    free(ucol);
    free(col);
    free(all);
#else
    (void)runs;
    printf("Not measured here: no MADV_POPULATE_WRITE (Linux 5.14) in this build.\n");
#endif
}

/* ============================================================= 3. reset */

typedef enum rs_kind { RS_RESET, RS_ZONE, RS_MALLOC, RS_FOREACH, RS_RECREATE } rs_kind;
static const char *const rs_names[] = {
    "fm_pool_reset",
    "zone: free-by-tag of the level's tag",
    "glibc: free() of each item",
    "fm_pool: fm_pool_foreach + fm_pool_free of each (the old way)",
    "fm_pool: destroy + create (the old way; the pages fault again)",
};
enum { RS_KINDS = 5, RS_ITEM = 176, RS_ALLOCATED = SP_RESET_LIVE * 3 / 2 };

static void rs_free_each(void *item, void *user) { fm_pool_free(user, item); }

/* silent: destroyed with its items (RS_RECREATE), as the game did. */
static fm_pool *rs_pool(bool silent) {
    fm_pool *p = fm_pool_create(&(fm_pool_desc){.name = "level", .item_size = RS_ITEM,
                                                .initial_capacity = RS_ALLOCATED,
                                                .silent_destroy = silent});
    if (!p) bench_die("reset: fm_pool_create: %s", fm_last_error_message());
    return p;
}

/* One level: 1,500 items, a scattered 500 freed (every third), then the
 * teardown, timed. Returns ns. */
static uint64_t rs_once(rs_kind kind, fm_pool **pool, zone *z, void **items) {
    for (int i = 0; i < RS_ALLOCATED; i++) {
        void *p = kind == RS_ZONE     ? zone_malloc(z, RS_ITEM, ZONE_LEVEL, NULL)
                  : kind == RS_MALLOC ? malloc(RS_ITEM)
                                      : fm_pool_alloc(*pool);
        if (!p) bench_die("reset: an allocation returned NULL");
        memset(p, i, 16);
        items[i] = p;
    }
    for (int i = 0; i < RS_ALLOCATED; i += 3) {
        if (kind == RS_ZONE) zone_free(z, items[i]);
        else if (kind == RS_MALLOC) free(items[i]);
        else fm_pool_free(*pool, items[i]);
        items[i] = NULL;
    }
    uint64_t t0 = fm_clock_now();
    switch (kind) {
    case RS_RESET: fm_pool_reset(*pool); break;
    case RS_ZONE: zone_free_tags(z, ZONE_LEVEL, ZONE_PURGELEVEL - 1); break;
    case RS_MALLOC:
        for (int i = 0; i < RS_ALLOCATED; i++)
            if (items[i]) free(items[i]);
        break;
    case RS_FOREACH: fm_pool_foreach(*pool, rs_free_each, *pool); break;
    case RS_RECREATE:
        fm_pool_destroy(*pool);
        *pool = rs_pool(true);
        break;
    }
    return fm_clock_now() - t0;
}

/* ============================================================ 4. pool_of */

enum { OF_PTRS = 4096 };

static BENCH_NOINLINE uint64_t of_loop(void *const *ptrs, uint32_t n, int how, uintptr_t *sum) {
    uintptr_t acc = 0;
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        const void *p = ptrs[i & (OF_PTRS - 1)];
        if (how == 0) acc += (uintptr_t)fm_pool_of(p);
        else if (how == 1) acc += (uintptr_t)(fm_pool_of)(p);
        else acc += (uintptr_t)p; /* the loop alone */
    }
    uint64_t t = fm_clock_now() - t0;
    *sum += acc;
    return t;
}

/* ================================================================= main */

static void verdict(const char *what, bool met) {
    printf("- %s: %s\n", what, met ? "met" : "NOT met");
}

void sparse_run(const bench_opts *opts) {
    int runs = bench_repeat(opts);
    uint32_t levels = opts->quick ? 2 : 6, per_level = opts->quick ? 60 : 600;
    sp_sched s = sp_sched_make(levels, per_level);
    void **obj = bench_xmalloc((size_t)s.objects * sizeof *obj);

    printf(
        "\n## sparse: a game's pattern: 9 small pools, frees by base pointer, a level reset\n\n");
    printf("9 pools of %zu..%zu-byte items; per frame and pool 0..10 allocations (none in 7 "
           "frames of 10), shuffled across the pools; lives of 1..%d frames or (1 in 5) the "
           "whole level; %u levels of %u frames, each ended by a teardown. %u objects, %u "
           "freed one by one, %u torn down with their level. Pools and zone fresh each run, so "
           "level 1 holds fresh pools' first allocations. Each frame's frees and allocations "
           "are timed as two regions. %d run(s) per variant, interleaved; medians.\n\n",
           sp_sizes[0], sp_sizes[SP_POOLS - 1], SP_LIFE, levels, per_level, s.objects,
           s.free_start[s.frames], s.end_start[levels], runs);
    sp_result *res = bench_xmalloc((size_t)runs * SP_KINDS * sizeof *res);
    for (int r = 0; r < runs; r++)
        for (int v = 0; v < SP_KINDS; v++) res[r * SP_KINDS + v] = sp_once((sp_kind)v, &s, obj);
    double *col = bench_xmalloc((size_t)runs * sizeof *col);
    sp_result med[SP_KINDS];
#define SP_MED(field)                                                         \
    do {                                                                      \
        for (int r = 0; r < runs; r++) col[r] = res[r * SP_KINDS + v].field; \
        med[v].field = bench_median(col, (size_t)runs);                       \
    } while (0)
    for (int v = 0; v < SP_KINDS; v++) {
        SP_MED(alloc_first);
        SP_MED(alloc_later);
        SP_MED(free_ns);
        SP_MED(teardown_us);
        SP_MED(teardown_item_ns);
    }
#undef SP_MED
    printf("| variant | ns/alloc, level 1 (fresh pools) | ns/alloc, later levels | ns/free | "
           "teardown µs per level | ns per item torn down |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < SP_KINDS; v++)
        printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", sp_names[v], med[v].alloc_first,
               med[v].alloc_later, med[v].free_ns, med[v].teardown_us, med[v].teardown_item_ns);
    const sp_result *fm = &med[SP_FM_FREE], *fp = &med[SP_FM_POOL_FREE], *ml = &med[SP_MALLOC],
                    *zn = &med[SP_ZONE], *bare = &med[SP_BARE];
    printf("\nAllocation, level 1: glibc / fm_pool %.2fx, zone / fm_pool %.2fx; later levels: "
           "%.2fx, %.2fx. Free: glibc / fm_free %.2fx, zone / fm_free %.2fx; fm_free / "
           "fm_pool_free %.2fx; the fm_pool_owns scan / fm_free %.2fx. Teardown per item: "
           "glibc / fm_pool_reset %.1fx, zone / fm_pool_reset %.1fx.\n",
           ml->alloc_first / fm->alloc_first, zn->alloc_first / fm->alloc_first,
           ml->alloc_later / fm->alloc_later, zn->alloc_later / fm->alloc_later,
           ml->free_ns / fm->free_ns, zn->free_ns / fm->free_ns, fm->free_ns / fp->free_ns,
           med[SP_FM_OWNS].free_ns / fm->free_ns, ml->teardown_item_ns / fm->teardown_item_ns,
           zn->teardown_item_ns / fm->teardown_item_ns);
    printf("Above the lower bound (bare pools, which check nothing and write a link into each "
           "freed object; the timed regions' own cost included): fm_pool's allocation +%.2f ns "
           "in level 1, +%.2f later, its free (fm_free) +%.2f; the zone's +%.2f, +%.2f, +%.2f.\n",
           fm->alloc_first - bare->alloc_first, fm->alloc_later - bare->alloc_later,
           fm->free_ns - bare->free_ns, zn->alloc_first - bare->alloc_first,
           zn->alloc_later - bare->alloc_later, zn->free_ns - bare->free_ns);

    /* ---- 2. cold */
    printf("\n### the first allocations of fresh pools\n\n");
    printf("9 fresh pools (the sizes above), their first %d allocations each, round robin, "
           "timed as one region: ns per allocation and the page faults in it; then the same "
           "with every page resident (after fm_pool_reset; glibc and the zone: after freeing "
           "all) and in steady state (after freeing all, a pool's free stack). The zone is "
           "warm: its memory served earlier levels. %d run(s), interleaved; medians.\n\n",
           SP_COLD_FIRST, runs);
    zone *cz = zone_create(SP_ZONE_BYTES, 1);
    if (!cz) bench_die("cold: zone_create");
    cold_result *cres = bench_xmalloc((size_t)runs * COLD_KINDS * sizeof *cres);
    for (int r = 0; r < runs; r++)
        for (int v = 0; v < COLD_KINDS; v++) cres[r * COLD_KINDS + v] = cold_once((cold_kind)v, cz);
    zone_destroy(cz);
    cold_result cmed[COLD_KINDS];
    uint64_t *fcol = bench_xmalloc((size_t)runs * sizeof *fcol);
    for (int v = 0; v < COLD_KINDS; v++) {
#define COLD_MED(field)                                                          \
    do {                                                                         \
        for (int r = 0; r < runs; r++) col[r] = cres[r * COLD_KINDS + v].field; \
        cmed[v].field = bench_median(col, (size_t)runs);                         \
    } while (0)
        COLD_MED(create_us);
        COLD_MED(first_ns);
        COLD_MED(resident_ns);
        COLD_MED(steady_ns);
#undef COLD_MED
        for (int r = 0; r < runs; r++) fcol[r] = cres[r * COLD_KINDS + v].faults;
        cmed[v].faults = bench_median_u64(fcol, (size_t)runs);
    }
    printf("| variant | create, 9 pools, µs | first allocations, ns each | page faults in them | "
           "pages resident, ns each | steady state, ns each | first / steady |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < COLD_KINDS; v++)
        printf("| %s | %.1f | %.2f | %llu | %.2f | %.2f | %.2fx |\n", cold_names[v],
               v <= COLD_4K || v == COLD_BARE ? cmed[v].create_us : 0.0, cmed[v].first_ns,
               (unsigned long long)cmed[v].faults, cmed[v].resident_ns, cmed[v].steady_ns,
               cmed[v].first_ns / cmed[v].steady_ns);
    printf(
        "\nThe default's first allocations: %.2f ns each, %.2fx the same pools with every page "
        "resident, %.2fx steady state; a first chunk left untouched: %.2f ns each (%.1fx "
        "the default), with %llu page faults.\n",
        cmed[COLD_DEFAULT].first_ns, cmed[COLD_DEFAULT].first_ns / cmed[COLD_DEFAULT].resident_ns,
        cmed[COLD_DEFAULT].first_ns / cmed[COLD_DEFAULT].steady_ns, cmed[COLD_BIG_FIRST].first_ns,
        cmed[COLD_BIG_FIRST].first_ns / cmed[COLD_DEFAULT].first_ns,
        (unsigned long long)cmed[COLD_BIG_FIRST].faults);

    rp_report(runs);

    /* ---- 3. reset */
    printf("\n### a level's teardown: 1,000 live items\n\n");
    int reps = opts->quick ? 20 : 200;
    printf("One pool of %d-byte items (room for %d, no dtor), %d allocated and every third "
           "freed: %d live; then the teardown, timed alone. The zone holds the same level, "
           "tagged. %d teardowns per run, %d run(s), interleaved; medians (the clock's step: "
           "%.0f ns).\n\n",
           RS_ITEM, RS_ALLOCATED, RS_ALLOCATED, SP_RESET_LIVE, reps, runs, bench_clock_step_ns());
    zone *rz = zone_create(SP_ZONE_BYTES, 1);
    if (!rz) bench_die("reset: zone_create");
    void **items = bench_xmalloc(RS_ALLOCATED * sizeof *items);
    uint64_t *samples = bench_xmalloc((size_t)runs * reps * sizeof *samples);
    double rs_med[RS_KINDS];
    fm_pool *pools[RS_KINDS];
    for (int v = 0; v < RS_KINDS; v++) pools[v] = rs_pool(v == RS_RECREATE);
    uint64_t *per_kind = bench_xmalloc((size_t)RS_KINDS * runs * reps * sizeof *per_kind);
    for (int r = 0; r < runs; r++)
        for (int v = 0; v < RS_KINDS; v++)
            for (int i = 0; i < reps; i++)
                per_kind[((size_t)v * runs + r) * reps + i] =
                    rs_once((rs_kind)v, &pools[v], rz, items);
    for (int v = 0; v < RS_KINDS; v++) {
        memcpy(samples, per_kind + (size_t)v * runs * reps, (size_t)runs * reps * sizeof *samples);
        rs_med[v] = (double)fm_clock_to_ns(bench_median_u64(samples, (size_t)runs * reps));
        fm_pool_destroy(pools[v]);
    }
    zone_destroy(rz);
    printf("| teardown of %d live items | ns | ns per item | / fm_pool_reset |\n", SP_RESET_LIVE);
    printf("|---|---:|---:|---:|\n");
    for (int v = 0; v < RS_KINDS; v++)
        printf("| %s | %.0f | %.2f | %.1fx |\n", rs_names[v], rs_med[v],
               rs_med[v] / SP_RESET_LIVE, rs_med[v] / rs_med[RS_RESET]);

    /* ---- 4. fm_pool_of */
    printf("\n### fm_pool_of\n\n");
    uint32_t lookups = opts->quick ? 1u << 18 : 1u << 24;
    void **foreign = bench_xmalloc(OF_PTRS * sizeof *foreign);
    void **owned = bench_xmalloc(OF_PTRS * sizeof *owned);
    void **heap = bench_xmalloc(OF_PTRS / 2 * sizeof *heap);
    long long on_stack[64];
    static long long in_static[64];
    uint64_t rng = 0x1234567ull;
    for (int i = 0; i < OF_PTRS / 2; i++) heap[i] = bench_xmalloc(16 + sp_below(&rng, 400));
    for (int i = 0; i < OF_PTRS; i++) {
        uint32_t pick = sp_below(&rng, 4);
        foreign[i] = pick < 2   ? heap[sp_below(&rng, OF_PTRS / 2)]
                     : pick < 3 ? (void *)&on_stack[sp_below(&rng, 64)]
                                : (void *)&in_static[sp_below(&rng, 64)];
    }
    fm_pool *opools[SP_POOLS];
    for (int k = 0; k < SP_POOLS; k++) {
        opools[k] = fm_pool_create(&(fm_pool_desc){.name = "of", .item_size = sp_sizes[k]});
        if (!opools[k]) bench_die("fm_pool_of: fm_pool_create");
    }
    for (int i = 0; i < OF_PTRS; i++) owned[i] = fm_pool_alloc(opools[i % SP_POOLS]);
    for (int i = 0; i < OF_PTRS; i++)
        if (!owned[i] || fm_pool_of(owned[i]) != opools[i % SP_POOLS] || fm_pool_of(foreign[i]))
            bench_die("fm_pool_of: a wrong answer");
    uintptr_t sum = 0;
    double of_ns[3][2]; /* [how][foreign, owned] */
    double *ocol = bench_xmalloc((size_t)runs * sizeof *ocol);
    for (int how = 0; how < 3; how++) {
        for (int which = 0; which < 2; which++) {
            for (int r = 0; r < runs; r++)
                ocol[r] = sp_ns(of_loop(which ? owned : foreign, lookups, how, &sum), lookups);
            of_ns[how][which] = bench_median(ocol, (size_t)runs);
        }
    }
    BENCH_ESCAPE((void *)sum);
    printf("%u lookups per run of %d pointers in turn: heap blocks, stack and static "
           "variables (no pool's), or items of 9 pools. %d run(s); medians.\n\n",
           lookups, OF_PTRS, runs);
    printf("| lookup | pointers no pool holds, ns | pool items, ns |\n|---|---:|---:|\n");
    static const char *const of_names[] = {"fm_pool_of, as callers compile it (inline)",
                                           "(fm_pool_of), the library's function",
                                           "the loop alone (no lookup)"};
    for (int how = 0; how < 3; how++)
        printf("| %s | %.2f | %.2f |\n", of_names[how], of_ns[how][0], of_ns[how][1]);
    for (int i = 0; i < OF_PTRS; i++) fm_free(owned[i]);
    for (int k = 0; k < SP_POOLS; k++) fm_pool_destroy(opools[k]);
    for (int i = 0; i < OF_PTRS / 2; i++) free(heap[i]);

    /* ---- targets */
    printf("\nTargets (issue 19), this run:\n");
    char line[256];
    snprintf(line, sizeof line,
             "fm_pool_reset of %d live items, no dtor, under 5 µs: %.0f ns", SP_RESET_LIVE,
             rs_med[RS_RESET]);
    verdict(line, rs_med[RS_RESET] < 5000.0);
    snprintf(line, sizeof line,
             "fm_pool_reset at least 50x faster than the zone's free-by-tag of the same level: "
             "%.1fx", rs_med[RS_ZONE] / rs_med[RS_RESET]);
    verdict(line, rs_med[RS_ZONE] >= 50.0 * rs_med[RS_RESET]);
    snprintf(line, sizeof line,
             "fm_free at most 1.5x fm_pool_free (sparse frees): %.2f / %.2f ns = %.2fx",
             fm->free_ns, fp->free_ns, fm->free_ns / fp->free_ns);
    verdict(line, fm->free_ns <= 1.5 * fp->free_ns);
    snprintf(line, sizeof line,
             "fm_pool_of of a foreign pointer at most 5 ns: %.2f ns (the loop alone %.2f)",
             of_ns[0][0], of_ns[2][0]);
    verdict(line, of_ns[0][0] <= 5.0);
    snprintf(line, sizeof line,
             "sparse alloc faster than glibc and the zone, level 1 (fresh pools): %.2f ns vs "
             "%.2f and %.2f (lower bound %.2f)",
             fm->alloc_first, ml->alloc_first, zn->alloc_first, bare->alloc_first);
    verdict(line, fm->alloc_first < ml->alloc_first && fm->alloc_first < zn->alloc_first);
    snprintf(line, sizeof line,
             "sparse alloc faster than glibc and the zone, later levels: %.2f ns vs %.2f and %.2f "
             "(lower bound %.2f)",
             fm->alloc_later, ml->alloc_later, zn->alloc_later, bare->alloc_later);
    verdict(line, fm->alloc_later < ml->alloc_later && fm->alloc_later < zn->alloc_later);
    snprintf(line, sizeof line,
             "first allocations of fresh pools faster than glibc's and the zone's: %.2f ns vs "
             "%.2f and %.2f (lower bound in fresh memory %.2f)",
             cmed[COLD_DEFAULT].first_ns, cmed[COLD_MALLOC].first_ns, cmed[COLD_ZONE].first_ns,
             cmed[COLD_BARE].first_ns);
    verdict(line, cmed[COLD_DEFAULT].first_ns < cmed[COLD_MALLOC].first_ns &&
                      cmed[COLD_DEFAULT].first_ns < cmed[COLD_ZONE].first_ns);
    snprintf(line, sizeof line,
             "sparse free (fm_free) faster than glibc and the zone: %.2f ns vs %.2f and %.2f "
             "(lower bound %.2f)",
             fm->free_ns, ml->free_ns, zn->free_ns, bare->free_ns);
    verdict(line, fm->free_ns < ml->free_ns && fm->free_ns < zn->free_ns);

    free(ocol);
    free(foreign);
    free(owned);
    free(heap);
    free(items);
    free(samples);
    free(per_kind);
    free(fcol);
    free(cres);
    free(col);
    free(res);
    free(obj);
    sp_sched_free(&s);
}
