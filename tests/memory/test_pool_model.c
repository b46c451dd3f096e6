/* tests/memory/test_pool_model.c: randomized operations on fm_pool checked
 * against a reference model (live pointers and the byte pattern each holds).
 * Frees go through fm_pool_free, fm_pool_delete or fm_free (the owner found
 * by address); now and then fm_pool_reset frees everything at once.
 *
 * Fixed seeds (xorshift64*), so a failure replays exactly. Every operation is
 * checked against the model as it happens; every CHECK_EVERY operations the
 * whole pool is: counters, every item's contents, no overlap, fm_pool_check.
 * Some allocations and frees come as batches (fm_pool_alloc_n of up to
 * BATCH_MAX items; fm_pool_free_n of a random subset in random order, now
 * and then with a bad entry among them). Configurations with a budget put
 * the pool under a memory tag (framemem/tag.h) with a hard limit of whole
 * chunks, which refuses growth before max_target is reached (FM_ERR_BUDGET,
 * predicted), and a soft limit whose crossings are warned once each. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHECK_EVERY = 2048, RECENT_FREED = 8, BATCH_MAX = 16 };

/* ------------------------------------------------------------------- rng */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ull;
}

static uint32_t rng_below(rng *r, uint32_t n) {
    return n ? (uint32_t)((rng_next(r) >> 32) % n) : 0;
}

/* ----------------------------------------------------------------- model */

typedef struct model_config {
    const char *name;
    size_t item_size;
    fm_growth growth;
    uint32_t grow_step;
    uint32_t initial_capacity;
    uint32_t max_capacity;
    uint32_t max_target; /* the live count rises to at most this, then falls */
    int ops;
    uint64_t seed;
    uint32_t hard_chunks; /* a tag with a hard limit of this many chunks; 0: no tag */
    uint32_t soft_chunks; /* its soft limit in chunks (0: none) */
    bool fall_to_empty;   /* falling phases free everything (trims then release
                             chunks, taking the tag back below its soft limit) */
} model_config;

typedef struct hooks {
    uint64_t ctors;
    uint64_t dtors;
} hooks;

typedef struct model {
    const model_config *cfg;
    fm_test_env *env;
    fm_pool *pool;
    fm_pool *other;      /* a second pool, for foreign pointers */
    void *other_item;
    void *heap_block;    /* a malloc block, for foreign pointers */
    rng r;
    hooks hooks;

    void **items;
    uint32_t *seeds;
    size_t count;
    size_t cap;
    uint32_t next_seed;

    void *recent[RECENT_FREED]; /* freed, not reallocated, chunk not trimmed */
    size_t recent_count;

    /* what the pool's counters must say */
    uint64_t allocs, frees, failed, misuse, peak, trims, trimmed, resets;
    uint64_t ctors, dtors;
    int reports; /* error handler calls expected */
    uint32_t target; /* live count the current phase heads for */
    bool rising;
    uint32_t initial_capacity; /* resolved */

    /* budget configurations */
    fm_tag *tag;
    uint64_t chunk_bytes, hard, soft;
    uint32_t per_chunk;
    uint64_t budget_refusals, crossings;
} model;

static void ctor_count(void *item, void *user) {
    hooks *h = user;
    h->ctors++;
    memset(item, 0xC7, 1);
}

static void dtor_count(void *item, void *user) {
    hooks *h = user;
    h->dtors++;
    (void)item;
}

static fm_pool_stats stats_of(const fm_pool *pool) {
    fm_pool_stats s;
    memset(&s, 0, sizeof s);
    fm_pool_get_stats(pool, &s);
    return s;
}

static void model_fail(const model *m, int op, const char *what) {
    print_error("[%s] op %d: %s (last error %s: %s)\n", m->cfg->name, op, what,
                fm_error_name(fm_last_error()), fm_last_error_message());
    fail();
}

#define MODEL_CHECK(m, op, cond)                                                   \
    do {                                                                           \
        if (!(cond)) model_fail((m), (op), #cond);                                 \
    } while (0)

static void model_push(model *m, void *item) {
    if (m->count == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->items = realloc(m->items, m->cap * sizeof *m->items);
        m->seeds = realloc(m->seeds, m->cap * sizeof *m->seeds);
        assert_non_null(m->items);
        assert_non_null(m->seeds);
    }
    uint32_t seed = m->next_seed++;
    fm_test_fill(item, m->cfg->item_size, seed);
    m->items[m->count] = item;
    m->seeds[m->count] = seed;
    m->count++;
    if (m->count > m->peak) m->peak = m->count;
}

static void *model_take(model *m, size_t i, int op) {
    void *item = m->items[i];
    if (!fm_test_check_fill(item, m->cfg->item_size, m->seeds[i])) {
        model_fail(m, op, "item contents changed while it was live");
    }
    m->count--;
    m->items[i] = m->items[m->count];
    m->seeds[i] = m->seeds[m->count];
    return item;
}

static void recent_forget(model *m, const void *p) {
    for (size_t i = 0; i < m->recent_count; i++) {
        if (m->recent[i] == p) {
            m->recent[i] = m->recent[--m->recent_count];
            return;
        }
    }
}

static void recent_push(model *m, void *p) {
    if (m->recent_count < RECENT_FREED) {
        m->recent[m->recent_count++] = p;
    } else {
        m->recent[rng_below(&m->r, RECENT_FREED)] = p;
    }
}

/* ------------------------------------------------------------- budget */

static uint64_t tag_committed(const model *m) {
    if (!m->tag) return 0;
    fm_tag_stats s;
    fm_tag_get_stats(m->tag, &s);
    return s.committed;
}

/* Chunks the budget still allows (UINT32_MAX: no tag). */
static uint32_t budget_chunks(const model *m) {
    if (!m->tag) return UINT32_MAX;
    uint64_t c = tag_committed(m);
    return c >= m->hard ? 0 : (uint32_t)((m->hard - c) / m->chunk_bytes);
}

/* 1 when committed rose above the soft limit between c0 and c1. */
static int crossed(const model *m, uint64_t c0, uint64_t c1) {
    return m->soft && c0 <= m->soft && c1 > m->soft;
}

/* ------------------------------------------------------------ operations */

/* The error an allocation reports when count items are live and no more
 * can be had: max_capacity and FIXED are the pool's own limits, anything
 * else is the budget. */
static fm_error model_full_error(const model *m, size_t count) {
    if (m->cfg->max_capacity && count >= m->cfg->max_capacity) return FM_ERR_POOL_FULL;
    if (m->cfg->growth == FM_GROWTH_FIXED) return FM_ERR_POOL_FULL;
    return FM_ERR_BUDGET;
}

static bool model_pool_full(const model *m) {
    if (m->cfg->max_capacity && m->count >= m->cfg->max_capacity) return true;
    uint64_t cap = stats_of(m->pool).capacity;
    if (m->cfg->growth == FM_GROWTH_FIXED && m->count >= cap) return true;
    if (m->tag && m->count >= cap && budget_chunks(m) == 0) return true;
    return false;
}

/* How many more items the pool may hold (max_capacity, a FIXED capacity);
 * UINT32_MAX: no limit. */
static uint32_t model_room(const model *m) {
    uint64_t limit = UINT32_MAX;
    if (m->cfg->max_capacity) limit = m->cfg->max_capacity;
    if (m->cfg->growth == FM_GROWTH_FIXED) {
        uint64_t cap = stats_of(m->pool).capacity;
        if (cap < limit) limit = cap;
    }
    if (m->tag) { /* growths take whole chunks up to the hard limit */
        uint64_t cap = stats_of(m->pool).capacity + (uint64_t)budget_chunks(m) * m->per_chunk;
        if (cap < limit) limit = cap;
    }
    if (limit == UINT32_MAX) return UINT32_MAX;
    return limit > m->count ? (uint32_t)(limit - m->count) : 0;
}

/* fm_pool_alloc_n: as many as fit, the shortfall reported and counted once. */
static void op_alloc_n(model *m, int op) {
    void *out[BATCH_MAX];
    uint32_t k = 1 + rng_below(&m->r, BATCH_MAX);
    uint32_t room = model_room(m);
    size_t want = k < room ? k : room;
    int reports = m->env->errors.count;
    uint64_t c0 = tag_committed(m);
    fm_clear_error();
    size_t got = fm_pool_alloc_n(m->pool, out, k);
    int warned = crossed(m, c0, tag_committed(m));
    MODEL_CHECK(m, op, got == want);
    if (got < k) {
        fm_error full = model_full_error(m, m->count + got);
        if (full == FM_ERR_BUDGET) m->budget_refusals++;
        MODEL_CHECK(m, op, fm_last_error() == full);
        MODEL_CHECK(m, op, m->env->errors.count == reports + 1 + warned);
        m->failed++;
        m->reports++;
    } else {
        MODEL_CHECK(m, op, m->env->errors.count == reports + warned);
    }
    for (size_t i = 0; i < got; i++) {
        MODEL_CHECK(m, op, fm_is_aligned(out[i], FM_DEFAULT_ALIGN));
        MODEL_CHECK(m, op, fm_pool_owns(m->pool, out[i]));
        m->allocs++;
        recent_forget(m, out[i]);
        model_push(m, out[i]);
    }
}

static void op_alloc(model *m, int op) {
    if (rng_below(&m->r, 8) == 0) {
        op_alloc_n(m, op);
        return;
    }
    bool use_new = rng_below(&m->r, 4) == 0;
    bool full = model_pool_full(m);
    fm_error full_error = model_full_error(m, m->count);
    int reports = m->env->errors.count;
    void *item = use_new ? fm_pool_new(m->pool) : fm_pool_alloc(m->pool);
    if (full) {
        MODEL_CHECK(m, op, item == NULL);
        MODEL_CHECK(m, op, fm_last_error() == full_error);
        MODEL_CHECK(m, op, m->env->errors.count == reports + 1);
        if (full_error == FM_ERR_BUDGET) m->budget_refusals++;
        m->failed++;
        m->reports++;
        if (m->rising && rng_below(&m->r, 8) == 0) { /* linger at the limit a while */
            m->rising = false;
            m->target = m->cfg->fall_to_empty ? 0 : rng_below(&m->r, m->cfg->max_target / 8 + 1);
        }
        return;
    }
    if (!item) model_fail(m, op, "alloc returned NULL below the pool's limit");
    MODEL_CHECK(m, op, fm_is_aligned(item, FM_DEFAULT_ALIGN));
    MODEL_CHECK(m, op, fm_pool_owns(m->pool, item));
    if (use_new) m->ctors++;
    m->allocs++;
    recent_forget(m, item);
    model_push(m, item);
}

/* fm_pool_free_n of a random subset of the live items in random order;
 * one time in three a bad entry goes in at a random place: NULL (skipped),
 * an item freed earlier in this batch or before it, an interior pointer or
 * a foreign one (each reported once). */
static void op_free_n(model *m, int op) {
    void *freed[BATCH_MAX], *batch[BATCH_MAX + 1];
    uint32_t most = m->count < BATCH_MAX ? (uint32_t)m->count : BATCH_MAX;
    uint32_t k = rng_below(&m->r, most + 1), n = k;
    for (uint32_t i = 0; i < k; i++)
        batch[i] = freed[i] = model_take(m, rng_below(&m->r, (uint32_t)m->count), op);
    long long on_stack[4] = {0};
    int bad_reports = 0;
    if (rng_below(&m->r, 3) == 0) {
        uint32_t at = rng_below(&m->r, n + 1);
        void *bad = NULL;
        switch (rng_below(&m->r, 6)) {
        case 0: break; /* NULL */
        case 1: /* freed earlier in the batch */
            if (at > 0) bad = batch[rng_below(&m->r, at)];
            break;
        case 2: /* freed before the batch */
            if (m->recent_count) bad = m->recent[rng_below(&m->r, (uint32_t)m->recent_count)];
            break;
        case 3: /* inside an item, live or in the batch */
            if (m->cfg->item_size > 1 && m->count + n > 0) {
                uint32_t j = rng_below(&m->r, (uint32_t)m->count + n);
                void *item = j < m->count ? m->items[j] : batch[j - m->count];
                size_t off = 1 + rng_below(&m->r, (uint32_t)m->cfg->item_size - 1);
                bad = (void *)((uintptr_t)item + off);
            }
            break;
        case 4: bad = rng_below(&m->r, 2) ? m->heap_block : (void *)on_stack; break;
        default: bad = m->other_item; break;
        }
        memmove(&batch[at + 1], &batch[at], (n - at) * sizeof *batch);
        batch[at] = bad;
        n++;
        bad_reports = bad != NULL;
    }
    fm_pool_stats before = stats_of(m->pool);
    int reports = m->env->errors.count;
    fm_pool_free_n(m->pool, batch, n);
    fm_pool_stats after = stats_of(m->pool);
    MODEL_CHECK(m, op, m->env->errors.count == reports + bad_reports);
    MODEL_CHECK(m, op, after.total_frees == before.total_frees + k);
    MODEL_CHECK(m, op, after.live == before.live - k);
    MODEL_CHECK(m, op, after.misuse_count == before.misuse_count + (uint64_t)bad_reports);
    m->frees += k;
    m->misuse += (uint64_t)bad_reports;
    m->reports += bad_reports;
    for (uint32_t i = 0; i < k; i++) {
        MODEL_CHECK(m, op, !fm_pool_owns(m->pool, freed[i]));
        recent_push(m, freed[i]);
    }
}

static void op_free(model *m, int op) {
    if (rng_below(&m->r, 8) == 0) {
        op_free_n(m, op);
        return;
    }
    if (m->count == 0) return;
    uint32_t how = rng_below(&m->r, 4);
    void *item = model_take(m, rng_below(&m->r, (uint32_t)m->count), op);
    if (how == 0) {
        fm_pool_delete(m->pool, item);
        m->dtors++;
    } else if (how == 1) {
        MODEL_CHECK(m, op, fm_pool_of(item) == m->pool);
        fm_free(item);
    } else {
        fm_pool_free(m->pool, item);
    }
    m->frees++;
    MODEL_CHECK(m, op, !fm_pool_owns(m->pool, item));
    recent_push(m, item);
}

static void expect_rejected(model *m, int op, void *bad, fm_error code) {
    fm_pool_stats before = stats_of(m->pool);
    uint64_t dtors = m->hooks.dtors;
    int reports = m->env->errors.count;
    fm_clear_error();
    uint32_t how = rng_below(&m->r, 3);
    if (how == 0) {
        fm_pool_delete(m->pool, bad);
    } else if (how == 1 && fm_pool_of(bad) == m->pool) {
        fm_free(bad); /* the same report, found by address */
    } else {
        fm_pool_free(m->pool, bad);
    }
    if (fm_last_error() != code) {
        char what[128];
        snprintf(what, sizeof what, "bad free of %p: expected %s", bad, fm_error_name(code));
        model_fail(m, op, what);
    }
    MODEL_CHECK(m, op, m->env->errors.count == reports + 1);
    MODEL_CHECK(m, op, m->hooks.dtors == dtors);
    fm_pool_stats after = stats_of(m->pool);
    MODEL_CHECK(m, op, after.live == before.live);
    MODEL_CHECK(m, op, after.total_frees == before.total_frees);
    MODEL_CHECK(m, op, after.capacity == before.capacity);
    MODEL_CHECK(m, op, after.misuse_count == before.misuse_count + 1);
    m->misuse++;
    m->reports++;
}

static void op_double_free(model *m, int op) {
    if (m->recent_count == 0) return;
    void *p = m->recent[rng_below(&m->r, (uint32_t)m->recent_count)];
    MODEL_CHECK(m, op, !fm_pool_owns(m->pool, p));
    expect_rejected(m, op, p, FM_ERR_DOUBLE_FREE);
}

static void op_bad_pointer(model *m, int op) {
    long long on_stack[4] = {0};
    uint32_t kind = rng_below(&m->r, 5);
    if (kind == 0 && m->count && m->cfg->item_size > 1) {
        void *item = m->items[rng_below(&m->r, (uint32_t)m->count)];
        size_t off = 1 + rng_below(&m->r, (uint32_t)m->cfg->item_size - 1);
        void *inside = (void *)((uintptr_t)item + off);
        MODEL_CHECK(m, op, !fm_pool_owns(m->pool, inside));
        expect_rejected(m, op, inside, FM_ERR_INTERIOR_POINTER);
    } else if (kind == 1) {
        expect_rejected(m, op, on_stack, FM_ERR_FOREIGN_POINTER);
    } else if (kind == 2) {
        expect_rejected(m, op, m->heap_block, FM_ERR_FOREIGN_POINTER);
    } else if (kind == 3) {
        MODEL_CHECK(m, op, !fm_pool_owns(m->pool, m->other_item));
        expect_rejected(m, op, m->other_item, FM_ERR_FOREIGN_POINTER);
    } else if (m->count) {
        uintptr_t bit = UINTPTR_MAX > 0xFFFFFFFFu ? (uintptr_t)1 << 40 : (uintptr_t)1 << 30;
        void *far = (void *)((uintptr_t)m->items[0] ^ bit);
        expect_rejected(m, op, far, FM_ERR_FOREIGN_POINTER);
    }
}

static void op_trim(model *m, int op) {
    fm_pool_stats before = stats_of(m->pool);
    size_t released = fm_pool_trim(m->pool);
    fm_pool_stats after = stats_of(m->pool);
    MODEL_CHECK(m, op, after.bytes_reserved == before.bytes_reserved - released);
    MODEL_CHECK(m, op, after.capacity >= m->initial_capacity);
    MODEL_CHECK(m, op, after.capacity >= m->count);
    MODEL_CHECK(m, op, after.live == before.live);
    if (released) {
        m->trims++;
        m->trimmed += released;
        m->recent_count = 0; /* their chunks may be gone */
    }
}

/* Everything freed at once, dtors run; the chunks stay. A few of the items
 * go to the recent list: freeing one now is a double free. */
static void op_reset(model *m, int op) {
    fm_pool_stats before = stats_of(m->pool);
    int reports = m->env->errors.count;
    size_t n = m->count;
    void **dead = m->count ? malloc(m->count * sizeof *dead) : NULL;
    for (size_t i = 0; i < n; i++) dead[i] = model_take(m, m->count - 1, op);
    fm_pool_reset(m->pool);
    fm_pool_stats after = stats_of(m->pool);
    MODEL_CHECK(m, op, m->env->errors.count == reports);
    MODEL_CHECK(m, op, after.live == 0);
    MODEL_CHECK(m, op, after.total_frees == before.total_frees + n);
    MODEL_CHECK(m, op, after.capacity <= before.capacity); /* only retired slots go */
    MODEL_CHECK(m, op, after.chunk_count == before.chunk_count);
    MODEL_CHECK(m, op, after.bytes_reserved == before.bytes_reserved);
    MODEL_CHECK(m, op, after.resets == before.resets + 1);
    m->frees += n;
    m->dtors += n;
    m->resets++;
    for (size_t i = 0; i < n; i++) {
        if (i < 64) MODEL_CHECK(m, op, !fm_pool_owns(m->pool, dead[i]));
        if (i < RECENT_FREED) recent_push(m, dead[i]);
    }
    free(dead);
}

static void op_reserve(model *m, int op) {
    uint32_t want = (uint32_t)m->count + rng_below(&m->r, 300);
    fm_pool_stats before = stats_of(m->pool);
    bool expect_ok = true;
    fm_error refusal = FM_ERR_POOL_FULL;
    if (m->cfg->growth == FM_GROWTH_FIXED && want > before.capacity) expect_ok = false;
    if (m->cfg->max_capacity && want > m->cfg->max_capacity) expect_ok = false;
    if (expect_ok && m->tag && want > before.capacity) {
        /* All or nothing: the chunks the reserve needs must fit the budget. */
        uint64_t chunks = (want - before.capacity + m->per_chunk - 1) / m->per_chunk;
        if (chunks > budget_chunks(m)) {
            expect_ok = false;
            refusal = FM_ERR_BUDGET;
        }
    }
    int reports = m->env->errors.count;
    uint64_t c0 = tag_committed(m);
    bool ok = fm_pool_reserve(m->pool, want);
    int warned = crossed(m, c0, tag_committed(m));
    fm_pool_stats after = stats_of(m->pool);
    MODEL_CHECK(m, op, ok == expect_ok);
    if (ok) {
        MODEL_CHECK(m, op, after.capacity >= want);
        MODEL_CHECK(m, op, m->env->errors.count == reports + warned);
    } else {
        if (refusal == FM_ERR_BUDGET) m->budget_refusals++;
        MODEL_CHECK(m, op, fm_last_error() == refusal);
        MODEL_CHECK(m, op, after.capacity == before.capacity);
        MODEL_CHECK(m, op, after.bytes_reserved == before.bytes_reserved);
        MODEL_CHECK(m, op, m->env->errors.count == reports + 1);
        m->reports++;
    }
    if (m->cfg->max_capacity) MODEL_CHECK(m, op, after.capacity <= m->cfg->max_capacity);
}

static void op_owns(model *m, int op) {
    int reports = m->env->errors.count;
    for (int k = 0; k < 4 && m->count; k++) {
        MODEL_CHECK(m, op, fm_pool_owns(m->pool, m->items[rng_below(&m->r, (uint32_t)m->count)]));
    }
    for (size_t i = 0; i < m->recent_count; i++) {
        MODEL_CHECK(m, op, !fm_pool_owns(m->pool, m->recent[i]));
    }
    MODEL_CHECK(m, op, !fm_pool_owns(m->pool, NULL));
    MODEL_CHECK(m, op, !fm_pool_owns(m->pool, m->heap_block));
    MODEL_CHECK(m, op, m->env->errors.count == reports);
}

typedef struct visit {
    void **sorted;
    size_t n;
    size_t visits;
    size_t strangers;
} visit;

static void visit_item(void *item, void *user) {
    visit *v = user;
    v->visits++;
    if (!bsearch(&item, v->sorted, v->n, sizeof *v->sorted, fm_test_cmp_ptr)) v->strangers++;
}

static void **model_sorted(const model *m) {
    void **sorted = malloc((m->count + 1) * sizeof *sorted);
    assert_non_null(sorted);
    if (m->count) {
        memcpy(sorted, m->items, m->count * sizeof *sorted);
        qsort(sorted, m->count, sizeof *sorted, fm_test_cmp_ptr);
    }
    return sorted;
}

static void op_foreach(model *m, int op) {
    visit v = {.sorted = model_sorted(m), .n = m->count};
    fm_pool_foreach(m->pool, visit_item, &v);
    free(v.sorted);
    MODEL_CHECK(m, op, v.visits == m->count);
    MODEL_CHECK(m, op, v.strangers == 0);
}

static void full_check(model *m, int op) {
    fm_pool_stats s = stats_of(m->pool);
    MODEL_CHECK(m, op, s.live == m->count);
    MODEL_CHECK(m, op, s.total_allocs == m->allocs);
    MODEL_CHECK(m, op, s.total_frees == m->frees);
    MODEL_CHECK(m, op, s.failed_allocs == m->failed);
    MODEL_CHECK(m, op, s.misuse_count == m->misuse);
    MODEL_CHECK(m, op, s.peak_live == m->peak);
    MODEL_CHECK(m, op, s.trim_events == m->trims);
    MODEL_CHECK(m, op, s.bytes_trimmed == m->trimmed);
    MODEL_CHECK(m, op, s.resets == m->resets);
    MODEL_CHECK(m, op, s.capacity >= s.live);
    MODEL_CHECK(m, op, s.bytes_overhead == s.bytes_reserved - s.capacity * s.item_size);
    MODEL_CHECK(m, op, s.grow_ns_total >= s.grow_ns_max);
    if (m->cfg->max_capacity) MODEL_CHECK(m, op, s.capacity <= m->cfg->max_capacity);
    MODEL_CHECK(m, op, m->hooks.ctors == m->ctors);
    MODEL_CHECK(m, op, m->hooks.dtors == m->dtors);
    MODEL_CHECK(m, op, m->env->errors.count == m->reports);
    for (size_t i = 0; i < m->count; i++) {
        if (!fm_test_check_fill(m->items[i], m->cfg->item_size, m->seeds[i])) {
            model_fail(m, op, "a live item's contents changed");
        }
    }
    void **sorted = model_sorted(m);
    for (size_t i = 0; i + 1 < m->count; i++) {
        if ((uintptr_t)sorted[i] + m->cfg->item_size > (uintptr_t)sorted[i + 1]) {
            free(sorted);
            model_fail(m, op, "two live items overlap");
        }
    }
    free(sorted);
    fm_error check = fm_pool_check(m->pool);
    if (check != FM_OK) model_fail(m, op, "fm_pool_check found a problem");
    if (m->tag) {
        fm_tag_stats t;
        fm_tag_get_stats(m->tag, &t);
        MODEL_CHECK(m, op, t.committed == s.chunk_count * s.chunk_bytes);
        MODEL_CHECK(m, op, t.reserved == t.committed);
        MODEL_CHECK(m, op, t.peak <= m->hard);
        MODEL_CHECK(m, op, t.committed <= t.peak);
        MODEL_CHECK(m, op, t.live == m->count * m->cfg->item_size);
        MODEL_CHECK(m, op, t.growths_refused == m->budget_refusals);
        MODEL_CHECK(m, op, t.soft_crossings == m->crossings);
        MODEL_CHECK(m, op, m->env->errors.by_code[FM_WARN_BUDGET] == (int)m->crossings);
    }
}

/* ------------------------------------------------------------------ driver */

static void run_model(fm_test_env *env, const model_config *cfg) {
    model m;
    memset(&m, 0, sizeof m);
    m.cfg = cfg;
    m.env = env;
    m.r.s = cfg->seed;
    m.next_seed = 1;
    fm_allocator backing = fm_test_allocator_get(&env->alloc);
    if (cfg->hard_chunks) {
        /* The chunk size of this pool's geometry, from a twin without a tag. */
        fm_pool *twin = fm_pool_create(&(fm_pool_desc){.item_size = cfg->item_size});
        assert_non_null(twin);
        fm_pool_stats ts = stats_of(twin);
        fm_pool_destroy(twin);
        m.chunk_bytes = ts.chunk_bytes;
        m.per_chunk = (uint32_t)ts.items_per_chunk;
        m.hard = (uint64_t)cfg->hard_chunks * m.chunk_bytes;
        m.soft = (uint64_t)cfg->soft_chunks * m.chunk_bytes;
        m.tag = fm_tag_create(&(fm_tag_desc){.name = cfg->name, .hard_limit_bytes = m.hard,
                                             .soft_limit_bytes = m.soft, .allocator = backing});
        assert_non_null(m.tag);
    }
    m.pool = fm_pool_create(&(fm_pool_desc){
        .name = cfg->name,
        .item_size = cfg->item_size,
        .growth = cfg->growth,
        .grow_step = cfg->grow_step,
        .initial_capacity = cfg->initial_capacity,
        .max_capacity = cfg->max_capacity,
        .ctor = ctor_count,
        .dtor = dtor_count,
        .user = &m.hooks,
        .allocator = backing,
        .tag = m.tag,
    });
    assert_non_null(m.pool);
    assert_true(!m.tag || stats_of(m.pool).chunk_bytes == m.chunk_bytes);
    m.initial_capacity = fm_pool_get_desc(m.pool).initial_capacity;
    if (cfg->max_capacity && m.initial_capacity > cfg->max_capacity) {
        m.initial_capacity = cfg->max_capacity;
    }
    m.other = fm_pool_create(&(fm_pool_desc){.name = "model_other",
                                              .item_size = cfg->item_size,
                                              .allocator = backing});
    assert_non_null(m.other);
    m.other_item = fm_pool_alloc(m.other);
    assert_non_null(m.other_item);
    m.heap_block = malloc(cfg->item_size);
    assert_non_null(m.heap_block);

    /* Phases: rise to a high target (growing the pool), fall to a low one
     * (emptying chunks for trim), repeat. */
    m.rising = true;
    m.target = cfg->max_target / 2 + rng_below(&m.r, cfg->max_target / 2 + 1);
    for (int op = 0; op < cfg->ops; op++) {
        if (m.rising && m.count >= m.target) {
            m.rising = false;
            m.target = cfg->fall_to_empty ? 0 : rng_below(&m.r, cfg->max_target / 8 + 1);
        } else if (!m.rising && m.count <= m.target) {
            if (cfg->fall_to_empty) op_trim(&m, op); /* the chunks just emptied */
            m.rising = true;
            m.target = cfg->max_target / 2 + rng_below(&m.r, cfg->max_target / 2 + 1);
        }
        uint32_t roll = rng_below(&m.r, 101);
        uint32_t alloc_share = m.rising ? 75 : 15;
        uint64_t c0 = tag_committed(&m); /* a rise above the soft limit is warned */
        if (roll < alloc_share) {
            op_alloc(&m, op);
        } else if (roll < 88) {
            op_free(&m, op);
        } else if (roll < 91) {
            op_double_free(&m, op);
        } else if (roll < 94) {
            op_bad_pointer(&m, op);
        } else if (roll == 94) {
            op_trim(&m, op);
        } else if (roll == 95) {
            op_reserve(&m, op);
        } else if (roll < 99) {
            op_owns(&m, op);
        } else if (roll == 99) {
            op_foreach(&m, op);
        } else if (!m.rising && rng_below(&m.r, 4) == 0) {
            /* A level ends while the live count falls: a rise still gets to
             * its target (growth, a tag's limits). */
            op_reset(&m, op);
        }
        if (crossed(&m, c0, tag_committed(&m))) {
            m.crossings++;
            m.reports++;
        }
        if (op % CHECK_EVERY == CHECK_EVERY - 1) full_check(&m, op);
    }
    full_check(&m, cfg->ops);
    fm_pool_stats end = stats_of(m.pool);
    print_message("[%s] %d ops: %llu allocs, %llu frees, %llu full, %llu misuse, "
                  "%llu trims, %llu resets, peak %llu, %llu grow events, %llu budget refusals, "
                  "%llu soft crossings\n",
                  cfg->name, cfg->ops, (unsigned long long)m.allocs,
                  (unsigned long long)m.frees, (unsigned long long)m.failed,
                  (unsigned long long)m.misuse, (unsigned long long)m.trims,
                  (unsigned long long)m.resets, (unsigned long long)m.peak,
                  (unsigned long long)end.grow_events, (unsigned long long)m.budget_refusals,
                  (unsigned long long)m.crossings);
    if (m.tag) {
        /* The budget was met, and crossed more than once (trims brought it down). */
        MODEL_CHECK(&m, cfg->ops, m.budget_refusals > 0);
        MODEL_CHECK(&m, cfg->ops, m.crossings > 1);
    }

    /* Drain, give memory back, and leave nothing behind. */
    while (m.count) {
        fm_pool_free(m.pool, model_take(&m, m.count - 1, cfg->ops));
        m.frees++;
    }
    full_check(&m, cfg->ops);
    op_trim(&m, cfg->ops);
    MODEL_CHECK(&m, cfg->ops, fm_pool_check(m.pool) == FM_OK);
    fm_pool_destroy(m.pool);
    if (m.tag) {
        fm_tag_stats t;
        fm_tag_get_stats(m.tag, &t);
        MODEL_CHECK(&m, cfg->ops, t.committed == 0 && t.objects == 0);
        fm_tag_destroy(m.tag);
    }
    fm_pool_free(m.other, m.other_item);
    fm_pool_destroy(m.other);
    MODEL_CHECK(&m, cfg->ops, env->errors.count == m.reports);
    MODEL_CHECK(&m, cfg->ops, m.hooks.dtors == m.dtors);
    fm_test_allocator_assert_clean(&env->alloc);
    free(m.heap_block);
    free(m.items);
    free(m.seeds);
}

/* ------------------------------------------------------------------- tests */

static void test_pool_model_geometric_16_byte_items_match_the_reference(void **state) {
    const model_config cfg = {.name = "model_geo16", .item_size = 16,
                              .growth = FM_GROWTH_GEOMETRIC, .max_target = 8000,
                              .ops = 60000, .seed = 0x9E3779B97F4A7C15ull};
    run_model(*state, &cfg);
}

static void test_pool_model_linear_40_byte_items_with_small_step_match_the_reference(
    void **state) {
    const model_config cfg = {.name = "model_lin40", .item_size = 40,
                              .growth = FM_GROWTH_LINEAR, .grow_step = 7,
                              .max_target = 4000, .ops = 40000,
                              .seed = 0xD1B54A32D192ED03ull};
    run_model(*state, &cfg);
}

static void test_pool_model_geometric_40_byte_items_with_max_match_the_reference(
    void **state) {
    const model_config cfg = {.name = "model_geo40_max", .item_size = 40,
                              .growth = FM_GROWTH_GEOMETRIC, .max_capacity = 3000,
                              .max_target = 6000, .ops = 30000,
                              .seed = 0x8CB92BA72F3D8DD7ull};
    run_model(*state, &cfg);
}

static void test_pool_model_linear_1024_byte_items_match_the_reference(void **state) {
    const model_config cfg = {.name = "model_lin1024", .item_size = 1024,
                              .growth = FM_GROWTH_LINEAR, .grow_step = 3,
                              .max_target = 600, .ops = 20000,
                              .seed = 0xA0761D6478BD642Full};
    run_model(*state, &cfg);
}

static void test_pool_model_fixed_1024_byte_items_with_max_match_the_reference(
    void **state) {
    const model_config cfg = {.name = "model_fixed1024", .item_size = 1024,
                              .growth = FM_GROWTH_FIXED, .initial_capacity = 300,
                              .max_capacity = 300, .max_target = 350, .ops = 20000,
                              .seed = 0xE7037ED1A0B428DBull};
    run_model(*state, &cfg);
}

static void test_pool_model_linear_40_byte_items_under_a_budget_match_the_reference(
    void **state) {
    const model_config cfg = {.name = "model_tag_lin40", .item_size = 40,
                              .growth = FM_GROWTH_LINEAR, .max_target = 12000, .ops = 40000,
                              .seed = 0x2545F4914F6CDD1Dull, .hard_chunks = 6, .soft_chunks = 3,
                              .fall_to_empty = true};
    run_model(*state, &cfg);
}

static void test_pool_model_geometric_16_byte_items_under_a_budget_match_the_reference(
    void **state) {
    const model_config cfg = {.name = "model_tag_geo16", .item_size = 16,
                              .growth = FM_GROWTH_GEOMETRIC, .max_target = 16000, .ops = 40000,
                              .seed = 0x94D049BB133111EBull, .hard_chunks = 5, .soft_chunks = 2,
                              .fall_to_empty = true};
    run_model(*state, &cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_pool_model_geometric_16_byte_items_match_the_reference),
        T(test_pool_model_linear_40_byte_items_with_small_step_match_the_reference),
        T(test_pool_model_geometric_40_byte_items_with_max_match_the_reference),
        T(test_pool_model_linear_1024_byte_items_match_the_reference),
        T(test_pool_model_fixed_1024_byte_items_with_max_match_the_reference),
        T(test_pool_model_linear_40_byte_items_under_a_budget_match_the_reference),
        T(test_pool_model_geometric_16_byte_items_under_a_budget_match_the_reference),
#undef T
    };
    return cmocka_run_group_tests_name("pool_model", tests, NULL, NULL);
}
