/* tests/memory/test_arena_model.c: randomized operations on fm_arena checked
 * against a reference model.
 *
 * The model holds the live allocations in allocation order (pointer, size,
 * pattern offset), the stack of live marks (each with the arena's `used` and
 * the live count when it was taken), recently released marks, and the
 * counters the arena must report. Fixed seeds (xorshift64*), so a failure
 * replays exactly.
 *
 * Operations: alloc / alloc_zero / alloc_array with sizes 0..600 and aligns
 * 1..256, invalid calls, get_mark, rewind to a live mark (drops every
 * allocation made after it), rewind to a released or foreign mark (rejected,
 * nothing changes), reset, decommit and, in chained mode, an injected block
 * failure. The reserve is small so ARENA_FULL happens. Every operation checks
 * the stats it affects; every live allocation is verified before each rewind
 * and reset and every CHECK_EVERY operations, with the overlap, owns and
 * used >= live bytes invariants. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    CHECK_EVERY = 1000,
    MAX_MARKS = 48,
    MAX_STALE = 32,
    RECENT_CUTS = 8, /* stale marks are tried while this few cuts old */
    MAX_SIZE = 600,
    PATTERN_BYTES = 1024,
};

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

/* A fixed random byte table: allocation k holds g_pattern[off .. off + size),
 * so filling and checking are one memcpy / memcmp. */
static uint8_t g_pattern[PATTERN_BYTES];

static void pattern_init(void) {
    rng r = {0x9E3779B97F4A7C15ull};
    for (size_t i = 0; i < PATTERN_BYTES; i++) g_pattern[i] = (uint8_t)(rng_next(&r) >> 56);
}

/* ----------------------------------------------------------------- model */

typedef struct model_config {
    const char *name;
    bool chained;
    size_t reserve_bytes;
    size_t commit_step;
    bool poison;
    bool faults; /* chained: now and then the next backing alloc fails */
    int ops;
    uint64_t seed;
} model_config;

typedef struct live_alloc {
    uint8_t *ptr;
    size_t size;
    uint16_t pattern; /* offset into g_pattern */
} live_alloc;

typedef struct model_mark {
    fm_arena_mark mark;
    uint64_t used;     /* the arena's used when taken */
    size_t live_count; /* live allocations when taken */
} model_mark;

typedef struct stale_mark {
    fm_arena_mark mark;
    uint64_t cut; /* the cut (rewind or reset) that released it */
} stale_mark;

typedef struct model {
    const model_config *cfg;
    fm_test_env *env;
    fm_arena *arena;
    fm_arena *other; /* for foreign marks */
    fm_arena_mark foreign;
    rng r;

    live_alloc *live;
    size_t count;
    size_t cap;
    uint64_t live_bytes;

    model_mark marks[MAX_MARKS];
    size_t depth;
    stale_mark stale[MAX_STALE];
    size_t stale_count;
    size_t stale_next;
    uint64_t cuts;

    /* what the arena's counters must say */
    uint64_t allocs, failed, rewinds, resets, decommits;
    int reports;

    /* what happened, for the summary and the coverage asserts */
    uint64_t n_full, n_invalid, n_injected, n_bad_mark, n_rewind, n_reset, n_decommit, n_zero;
} model;

static fm_arena_stats stats_of(const fm_arena *arena) {
    fm_arena_stats s;
    memset(&s, 0, sizeof s);
    fm_arena_get_stats(arena, &s);
    return s;
}

static void model_fail(const model *m, int op, const char *what) {
    print_error("[%s] op %d: %s (last error %s: %s)\n", m->cfg->name, op, what,
                fm_error_name(fm_last_error()), fm_last_error_message());
    fail();
}

/* Every stat equal except failed_allocs (+failed_delta). */
static void assert_unchanged(const model *m, int op, const fm_arena_stats *b,
                             const fm_arena_stats *a, uint64_t failed_delta) {
#define CHECK_FIELD(field, desc)                                                 \
    if (strcmp(#field, "failed_allocs") != 0 && b->field != a->field) {          \
        print_error("[%s] op %d: stat %s changed: %llu -> %llu\n", m->cfg->name, op, \
                    #field, (unsigned long long)b->field, (unsigned long long)a->field); \
        fail();                                                                  \
    }
    FM_ARENA_STATS_FIELDS(CHECK_FIELD)
#undef CHECK_FIELD
    assert_int_equal(a->failed_allocs, b->failed_allocs + failed_delta);
}

static void verify_one(const model *m, size_t i, int op) {
    const live_alloc *l = &m->live[i];
    if (l->size && memcmp(l->ptr, g_pattern + l->pattern, l->size) != 0) {
        print_error("[%s] op %d: live allocation %zu (%p, %zu bytes) was overwritten\n",
                    m->cfg->name, op, i, (void *)l->ptr, l->size);
        fail();
    }
}

static void verify_contents(const model *m, int op) {
    for (size_t i = 0; i < m->count; i++) verify_one(m, i, op);
}

static int live_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const live_alloc *)a)->ptr;
    uintptr_t y = (uintptr_t)((const live_alloc *)b)->ptr;
    if (x != y) return (x > y) - (x < y);
    /* A size-0 allocation shares its address with the next: it goes first
     * (qsort need not keep the order it was given: msvcrt's does not). */
    size_t m = ((const live_alloc *)a)->size, n = ((const live_alloc *)b)->size;
    return (m > n) - (m < n);
}

/* Contents, no overlap, owns, and the counters. */
static void check_all(model *m, int op) {
    verify_contents(m, op);
    if (m->count > 1) {
        live_alloc *sorted = malloc(m->count * sizeof *sorted);
        assert_non_null(sorted);
        memcpy(sorted, m->live, m->count * sizeof *sorted);
        qsort(sorted, m->count, sizeof *sorted, live_cmp);
        for (size_t i = 0; i + 1 < m->count; i++) {
            if ((uintptr_t)sorted[i].ptr + sorted[i].size > (uintptr_t)sorted[i + 1].ptr) {
                print_error("[%s] op %d: %p (+%zu) overlaps %p\n", m->cfg->name, op,
                            (void *)sorted[i].ptr, sorted[i].size, (void *)sorted[i + 1].ptr);
                free(sorted);
                fail();
            }
        }
        free(sorted);
    }
    for (size_t i = 0; i < m->count; i++) {
        if (!fm_arena_owns(m->arena, m->live[i].ptr, m->live[i].size)) {
            model_fail(m, op, "a live allocation is not owned by its arena");
        }
    }
    fm_arena_stats s = stats_of(m->arena);
    assert_int_equal(s.total_allocs, m->allocs);
    assert_int_equal(s.failed_allocs, m->failed);
    assert_int_equal(s.rewinds, m->rewinds);
    assert_int_equal(s.resets, m->resets);
    assert_true(s.used >= m->live_bytes);
    assert_true(s.high_water >= s.used);
    assert_true(s.committed <= s.reserved);
    assert_int_equal(s.reserved, m->cfg->reserve_bytes);
    if (!m->cfg->chained) assert_true(s.committed >= s.used);
    assert_int_equal(m->env->errors.count, m->reports);
}

static void live_push(model *m, uint8_t *p, size_t size) {
    if (m->count == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->live = realloc(m->live, m->cap * sizeof *m->live);
        assert_non_null(m->live);
    }
    uint16_t pattern = (uint16_t)rng_below(&m->r, PATTERN_BYTES - MAX_SIZE);
    memcpy(p, g_pattern + pattern, size);
    m->live[m->count++] = (live_alloc){p, size, pattern};
    m->live_bytes += size;
}

static void live_truncate(model *m, size_t count) {
    assert_true(count <= m->count);
    while (m->count > count) m->live_bytes -= m->live[--m->count].size;
}

static void stale_add(model *m, fm_arena_mark mark) {
    m->stale[m->stale_next] = (stale_mark){mark, m->cuts};
    m->stale_next = (m->stale_next + 1) % MAX_STALE;
    if (m->stale_count < MAX_STALE) m->stale_count++;
}

/* ------------------------------------------------------------ operations */

static void op_alloc(model *m, int op) {
    size_t size = rng_below(&m->r, MAX_SIZE + 1);
    uint32_t shift = rng_below(&m->r, 10); /* 9: align 0, the default */
    size_t align = shift == 9 ? 0 : (size_t)1 << shift;
    size_t al = align ? align : FM_DEFAULT_ALIGN;
    int kind = (int)rng_below(&m->r, 4); /* 0, 1: alloc, 2: zero, 3: array */
    size_t elem = 1 + rng_below(&m->r, 8);
    if (kind == 3) size -= size % elem;

    fm_arena_stats before = stats_of(m->arena);
    fm_test_allocator *ta = &m->env->alloc;
    bool armed = ta->fail_at != 0 && ta->alloc_calls < ta->fail_at;
    uint64_t failed_calls = ta->failed_calls;
    fm_clear_error();
    uint8_t *p = kind <= 1   ? fm_arena_alloc(m->arena, size, align)
                 : kind == 2 ? fm_arena_alloc_zero(m->arena, size, align)
                             : fm_arena_alloc_array(m->arena, size / elem, elem, align);
    fm_arena_stats after = stats_of(m->arena);

    /* Virtual memory: the outcome is known exactly. */
    uint64_t start = fm_align_up((size_t)before.used, al);
    bool fits = start + size <= m->cfg->reserve_bytes;
    if (!p) {
        if (fm_last_error() != FM_ERR_ARENA_FULL) model_fail(m, op, "alloc failed, not ARENA_FULL");
        if (!m->cfg->chained && fits) model_fail(m, op, "alloc within the reserve failed");
        if (m->cfg->chained) {
            bool injected = armed && ta->failed_calls > failed_calls;
            size_t block = (size + 4160 > m->cfg->commit_step ? size + 4160 : m->cfg->commit_step) + 4095;
            if (!injected && before.committed + block <= m->cfg->reserve_bytes) {
                model_fail(m, op, "chained alloc failed with room for a block");
            }
            if (injected) m->n_injected++;
        }
        assert_unchanged(m, op, &before, &after, 1);
        m->failed++;
        m->reports++;
        m->n_full++;
        return;
    }
    if (!m->cfg->chained && !fits) model_fail(m, op, "alloc past the reserve succeeded");
    if (!fm_is_aligned(p, al)) model_fail(m, op, "misaligned allocation");
    if (!m->cfg->chained && after.used != start + size) model_fail(m, op, "used is not the new top");
    if (after.used < before.used + size || after.used > before.used + size + al - 1) {
        model_fail(m, op, "used grew by more than size + padding");
    }
    if (!fm_arena_owns(m->arena, p, size)) model_fail(m, op, "new allocation not owned");
    if (kind >= 2) {
        for (size_t i = 0; i < size; i++) {
            if (p[i]) model_fail(m, op, "zeroed allocation holds a non-zero byte");
        }
    }
    if (size == 0) m->n_zero++;
    m->allocs++;
    live_push(m, p, size);
}

static void op_invalid(model *m, int op) {
    fm_arena_stats before = stats_of(m->arena);
    fm_clear_error();
    void *p;
    uint32_t which = rng_below(&m->r, 4);
    /* SIZE_MAX - 2 overflows once the top is past the arena's first bytes. */
    if (which == 3 && before.used < 64) which = 0;
    switch (which) {
    case 0: p = fm_arena_alloc(m->arena, 16, 3); break;
    case 1: p = fm_arena_alloc_zero(m->arena, 16, 8192); break;
    case 2: p = fm_arena_alloc_array(m->arena, SIZE_MAX / 2, 3, 8); break;
    default: p = fm_arena_alloc(m->arena, SIZE_MAX - 2, 64); break;
    }
    if (p || fm_last_error() != FM_ERR_INVALID_ARG) model_fail(m, op, "invalid call not rejected");
    fm_arena_stats after = stats_of(m->arena);
    assert_unchanged(m, op, &before, &after, 1);
    m->failed++;
    m->reports++;
    m->n_invalid++;
}

static void op_mark(model *m) {
    if (m->depth == MAX_MARKS) return;
    m->marks[m->depth++] = (model_mark){fm_arena_get_mark(m->arena),
                                        stats_of(m->arena).used, m->count};
}

static void op_rewind(model *m, int op) {
    if (!m->depth) return;
    size_t i = rng_below(&m->r, (uint32_t)m->depth);
    model_mark target = m->marks[i];
    verify_contents(m, op);
    fm_clear_error();
    fm_arena_rewind(m->arena, target.mark);
    if (fm_last_error() != FM_OK) model_fail(m, op, "rewind to a live mark failed");
    m->cuts++;
    m->rewinds++;
    m->n_rewind++;
    live_truncate(m, target.live_count);
    /* Marks above the target: released when they lay above it. */
    for (size_t j = i + 1; j < m->depth; j++) {
        if (m->marks[j].used > target.used) stale_add(m, m->marks[j].mark);
    }
    /* The target stays valid; keep it (the scope goes on) or drop it. */
    m->depth = rng_below(&m->r, 2) ? i + 1 : i;
    fm_arena_stats s = stats_of(m->arena);
    if (s.used != target.used) model_fail(m, op, "rewind did not restore used");
    verify_contents(m, op);
}

static void op_bad_rewind(model *m, int op) {
    fm_arena_mark mark;
    if (rng_below(&m->r, 4) == 0) {
        mark = m->foreign;
    } else {
        /* A recently released mark. */
        size_t tries = 0, k;
        do {
            if (!m->stale_count || ++tries > 8) return;
            k = rng_below(&m->r, (uint32_t)m->stale_count);
        } while (m->cuts - m->stale[k].cut >= RECENT_CUTS);
        mark = m->stale[k].mark;
    }
    fm_arena_stats before = stats_of(m->arena);
    fm_clear_error();
    fm_arena_rewind(m->arena, mark);
    if (fm_last_error() != FM_ERR_BAD_MARK) model_fail(m, op, "bad mark not rejected");
    fm_arena_stats after = stats_of(m->arena);
    assert_unchanged(m, op, &before, &after, 0);
    m->reports++;
    m->n_bad_mark++;
}

static void op_reset(model *m, int op) {
    verify_contents(m, op);
    fm_arena_stats before = stats_of(m->arena);
    fm_arena_reset(m->arena);
    m->cuts++;
    m->resets++;
    m->n_reset++;
    for (size_t j = 0; j < m->depth; j++) {
        if (m->marks[j].used > 0) stale_add(m, m->marks[j].mark);
    }
    m->depth = 0;
    live_truncate(m, 0);
    fm_arena_stats after = stats_of(m->arena);
    assert_int_equal(after.used, 0);
    assert_int_equal(after.high_water, before.high_water);
}

static void op_decommit(model *m, int op) {
    size_t keep = rng_below(&m->r, 4) ? 0 : rng_below(&m->r, 64 * 1024);
    fm_arena_stats before = stats_of(m->arena);
    size_t live_before = m->env->alloc.live_bytes;
    size_t released = fm_arena_decommit(m->arena, keep);
    fm_arena_stats after = stats_of(m->arena);
    if (after.committed != before.committed - released) model_fail(m, op, "decommit accounting");
    if (after.used != before.used) model_fail(m, op, "decommit moved the top");
    if (after.committed < after.used && !m->cfg->chained) model_fail(m, op, "decommit below the top");
    assert_int_equal(after.decommit_events, before.decommit_events + (released ? 1 : 0));
    if (m->cfg->chained) assert_int_equal(m->env->alloc.live_bytes, live_before - released);
    if (released) m->n_decommit++;
    verify_contents(m, op);
}

/* ------------------------------------------------------------------- run */

static void run_model(fm_test_env *env, const model_config *cfg) {
    pattern_init();
    model m;
    memset(&m, 0, sizeof m);
    m.cfg = cfg;
    m.env = env;
    m.r.s = cfg->seed;
    fm_arena_desc desc = {.name = cfg->name,
                          .reserve_bytes = cfg->reserve_bytes,
                          .commit_step = cfg->commit_step,
                          .poison = cfg->poison};
    if (cfg->chained) desc.allocator = fm_test_allocator_get(&env->alloc);
    m.arena = fm_arena_create(&desc);
    assert_non_null(m.arena);
    m.other = fm_arena_create(&(fm_arena_desc){.name = "other", .reserve_bytes = 64 * 1024});
    assert_non_null(m.other);
    assert_non_null(fm_arena_alloc(m.other, 100, 1));
    m.foreign = fm_arena_get_mark(m.other);

    for (int op = 0; op < cfg->ops; op++) {
        uint32_t roll = rng_below(&m.r, 1000);
        if (roll < 450) {
            op_alloc(&m, op);
        } else if (roll < 470) {
            op_invalid(&m, op);
        } else if (roll < 620) {
            op_mark(&m);
        } else if (roll < 740) {
            op_rewind(&m, op);
        } else if (roll < 790) {
            op_bad_rewind(&m, op);
        } else if (roll < 793) {
            op_reset(&m, op);
        } else if (roll < 803) {
            op_decommit(&m, op);
        } else if (roll < 815 && cfg->faults) {
            fm_test_allocator_fail_nth(&env->alloc, 1);
        } else {
            /* A run of allocations, to reach the reserve now and then. */
            for (int k = 0; k < 8; k++) op_alloc(&m, op);
        }
        fm_arena_stats s = stats_of(m.arena);
        if (s.used < m.live_bytes) model_fail(&m, op, "used below the live bytes");
        if (s.total_allocs != m.allocs) model_fail(&m, op, "total_allocs differs from the model");
        if (op % CHECK_EVERY == 0) check_all(&m, op);
    }
    check_all(&m, cfg->ops);
    print_message("[%s] %d ops: %llu allocs (%llu of size 0), %llu full (%llu injected), "
                  "%llu invalid, %llu rewinds, %llu bad marks, %llu resets, %llu decommits\n",
                  cfg->name, cfg->ops, (unsigned long long)m.allocs,
                  (unsigned long long)m.n_zero, (unsigned long long)m.n_full,
                  (unsigned long long)m.n_injected, (unsigned long long)m.n_invalid,
                  (unsigned long long)m.n_rewind, (unsigned long long)m.n_bad_mark,
                  (unsigned long long)m.n_reset, (unsigned long long)m.n_decommit);
    /* The run reached every interesting path. */
    assert_true(m.n_full > 0);
    assert_true(m.n_bad_mark > 100);
    assert_true(m.n_rewind > 100);
    assert_true(m.n_reset > 10);
    assert_true(m.n_decommit > 0);
    assert_true(m.n_zero > 0);
    if (cfg->faults) assert_true(m.n_injected > 0);

    fm_test_allocator_recover(&env->alloc);
    fm_arena_destroy(m.other);
    fm_arena_destroy(m.arena);
    free(m.live);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_arena_model_virtual_memory(void **state) {
    run_model(*state, &(model_config){.name = "model_vm",
                                      .reserve_bytes = 96 * 1024,
                                      .commit_step = 4096,
                                      .ops = 50000,
                                      .seed = 0x1234567887654321ull});
}

static void test_arena_model_virtual_memory_with_poison(void **state) {
    run_model(*state, &(model_config){.name = "model_vm_poison",
                                      .reserve_bytes = 80 * 1024,
                                      .commit_step = 4096,
                                      .poison = true,
                                      .ops = 40000,
                                      .seed = 0xDEADBEEFCAFEF00Dull});
}

static void test_arena_model_chained_blocks(void **state) {
    run_model(*state, &(model_config){.name = "model_chained",
                                      .chained = true,
                                      .reserve_bytes = 128 * 1024,
                                      .commit_step = 4096,
                                      .faults = true,
                                      .ops = 50000,
                                      .seed = 0x0F1E2D3C4B5A6978ull});
}

static void test_arena_model_chained_blocks_with_poison(void **state) {
    run_model(*state, &(model_config){.name = "model_chained_poison",
                                      .chained = true,
                                      .reserve_bytes = 64 * 1024,
                                      .commit_step = 8192,
                                      .poison = true,
                                      .faults = true,
                                      .ops = 40000,
                                      .seed = 0xA5A5A5A55A5A5A5Aull});
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_arena_model_virtual_memory),
        T(test_arena_model_virtual_memory_with_poison),
        T(test_arena_model_chained_blocks),
        T(test_arena_model_chained_blocks_with_poison),
#undef T
    };
    return cmocka_run_group_tests_name("arena_model", tests, NULL, NULL);
}
