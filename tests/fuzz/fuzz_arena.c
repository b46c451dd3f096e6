/*
 * tests/fuzz/fuzz_arena.c: libFuzzer harness for fm_arena against a reference
 * model.
 *
 * Input: a 2-byte header choosing the mode (virtual memory, or chained blocks
 * from a counting allocator), debug poisoning, reserve_bytes and commit_step
 * from small tables (some of them a desc create must reject) and a fault in
 * create; then one operation per opcode byte:
 *
 *   alloc / alloc_zero / alloc_array with sizes from 0 to past the reserve
 *   and near SIZE_MAX, valid, default and invalid alignments; get_mark;
 *   rewind to a live mark; rewind to a released, foreign or too-high mark
 *   (FM_ERR_BAD_MARK, nothing changes); reset; decommit; arming the
 *   allocator's faults (chained); a request for a full sweep.
 *
 * The model keeps the live allocations in order with their byte patterns,
 * the stack of live marks (each with `used` and the live count when taken),
 * recently released marks and the counters. Virtual-memory mode is predicted
 * exactly (where each allocation lands, when the reserve is full); chained
 * mode within bounds (padding, block size). Every allocation released by a
 * rewind or reset must be poisoned for ASan; every live one must keep its
 * bytes, lie inside the arena and overlap no other.
 *
 * What is checked when: after every operation, the counters; an allocation
 * when it is made (placement, ownership, zeroes) and when a rewind or reset
 * releases it (its bytes just before, its poisoning after), so each one is
 * read once on its way out rather than at every rewind; the topmost
 * allocation that survives a rewind or decommit (it borders the released
 * memory). A full sweep (every live allocation's bytes, ownership and
 * overlap) runs when an operation asks for one (the check opcode, a rewind,
 * a decommit that released memory) or every FZ_SWEEP_EVERY operations,
 * paid from a budget every operation adds FZ_SWEEP_CREDIT bytes to, and
 * always at the end. An input's operations stop after WORK_BUDGET units:
 * one per operation and one per UNIT_BYTES allocated (the arena zeroes or
 * poisons those bytes, the model fills and reads windows of them, fresh
 * pages fault in); an allocation that could succeed and would pass the
 * budget is skipped. Re-reading every live allocation at every rewind and
 * decommit, and 4 KiB inputs of megabyte allocations, held the harness to a
 * few hundred runs a second. At the end the counting allocator must hold
 * zero bytes.
 */
#include "fuzz_support.h"

#include "framemem/arena.h"

enum {
    MAX_LIVE = 2048,
    MAX_MARKS = 32,
    MAX_STALE = 16,
    WORK_BUDGET = 2048, /* units per input: an operation, or UNIT_BYTES allocated */
    UNIT_BYTES = 1024,
    BLOCK_HEADER = 64,  /* arena.c's block header, rounded to a cache line */
    PAGE = 4096,
};

typedef struct live_alloc {
    uint8_t *ptr;
    size_t size;
    uint32_t seed;
} live_alloc;

typedef struct model_mark {
    fm_arena_mark mark;
    uint64_t used;     /* the arena's used when taken */
    size_t live_count; /* live allocations when taken */
} model_mark;

typedef struct model {
    fm_arena *arena;
    bool chained;
    size_t reserve; /* resolved */
    size_t step;    /* resolved */

    live_alloc live[MAX_LIVE];
    size_t count;
    uint64_t live_bytes;
    uint64_t used;      /* exact in virtual-memory mode, read back when chained */
    uint64_t high;      /* highest used */

    model_mark marks[MAX_MARKS];
    size_t depth;
    fm_arena_mark stale[MAX_STALE];
    size_t n_stale, next_stale;
    uint32_t next_seed;

    /* what the arena's counters must say */
    uint64_t allocs, failed, rewinds, resets, decommits;
    uint64_t reports;

    /* when to check what */
    uint64_t window_bytes; /* the live allocations' pattern bytes: a sweep's work */
    fz_sweeper sweep;      /* when the next full sweep runs */
    uint64_t work;         /* units spent, up to WORK_BUDGET */
    fm_arena_stats stats;  /* as read after the last operation (reading them
                              walks a chained arena's blocks) */
} model;

static model g_m;
static fm_test_allocator g_alloc;
static int g_not_an_arena; /* address for foreign marks */

/* ================================================================ helpers */

static fm_arena_stats stats_of(const fm_arena *arena) {
    fm_arena_stats s;
    memset(&s, 0, sizeof s);
    fm_arena_get_stats(arena, &s);
    return s;
}

/* Every stat equal except failed_allocs, which grew by failed_delta. */
static void check_unchanged(const fm_arena_stats *b, const fm_arena_stats *a,
                            uint64_t failed_delta) {
#define FZ__SAME(field, desc)                                                   \
    if (strcmp(#field, "failed_allocs") != 0 && b->field != a->field)           \
        FZ_FAIL("stat %s changed: %llu -> %llu", #field, (unsigned long long)b->field, \
                (unsigned long long)a->field);
    FM_ARENA_STATS_FIELDS(FZ__SAME)
#undef FZ__SAME
    FZ_CHECK_EQ(a->failed_allocs, b->failed_allocs + failed_delta);
}

/* Big allocations (above 16 KiB) hold their pattern only in windows: the
 * first and last 4 KiB and 64 bytes every 16 KiB between. Filling and
 * checking megabytes per run made the harness crawl, and a stray write by the
 * arena (a header, a fill) is a run of bytes, not one. Windows start on
 * multiples of 8, as the pattern is per 8-byte word. */
enum { WHOLE_MAX = 16384, EDGE = 4096, WINDOW = 64, WINDOW_STEP = 16384 };

/* Window k of an allocation of `size` bytes: false past the last one. */
static bool window(size_t size, size_t k, size_t *off, size_t *n) {
    if (size <= WHOLE_MAX) {
        *off = 0, *n = size;
        return k == 0;
    }
    size_t middle = (size - 2 * EDGE) / WINDOW_STEP; /* windows between the edges */
    if (k == 0) *off = 0, *n = EDGE;
    else if (k <= middle) *off = EDGE + (k - 1) * WINDOW_STEP, *n = WINDOW;
    else if (k == middle + 1) *off = (size - EDGE) & ~(size_t)7, *n = size - *off;
    else return false;
    return true;
}

/* The pattern of fz_fill(p, size, seed), written in the windows only. */
FZ_NO_COVERAGE static void fill_alloc(uint8_t *p, size_t size, uint32_t seed) {
    size_t off, n;
    for (size_t k = 0; window(size, k, &off, &n); k++) fz_fill_from(p, off, n, seed);
}

static void verify_one(const model *m, size_t i) {
    const live_alloc *l = &m->live[i];
    size_t off, n;
    for (size_t k = 0; window(l->size, k, &off, &n); k++) {
        size_t at = fz_check_fill_from(l->ptr, off, n, l->seed);
        if (at != n)
            FZ_FAIL("live allocation %zu (%p, %zu bytes) changed at byte %zu", i, (void *)l->ptr,
                    l->size, off + at);
    }
}

/* Allocations [first, count): before a rewind or reset releases them. */
static void verify_from(const model *m, size_t first) {
    for (size_t i = first; i < m->count; i++) verify_one(m, i);
}

/* The topmost live allocation, which borders whatever was just released. */
static void verify_top(const model *m) {
    if (m->count) verify_one(m, m->count - 1);
}

/* The bytes of an allocation that hold its pattern. */
static size_t pattern_bytes(size_t size) {
    size_t total = 0, off, n;
    for (size_t k = 0; window(size, k, &off, &n); k++) total += n;
    return total;
}

/* Drops the allocations from `count` on; their bytes must be poisoned now. */
static void truncate_live(model *m, size_t count) {
    FZ_CHECK(count <= m->count);
    while (m->count > count) {
        live_alloc *l = &m->live[--m->count];
        m->live_bytes -= l->size;
        m->window_bytes -= pattern_bytes(l->size);
        if (!fz_poisoned(l->ptr, l->size))
            FZ_FAIL("released allocation %p (%zu bytes) is not poisoned", (void *)l->ptr, l->size);
    }
}

static void add_stale(model *m, fm_arena_mark mark) {
    if (m->n_stale < MAX_STALE) {
        m->stale[m->n_stale++] = mark;
    } else {
        m->stale[m->next_stale] = mark;
        m->next_stale = (m->next_stale + 1) % MAX_STALE;
    }
}

/* A rewind or reset whose cut record could not grow forgot the oldest cut:
 * marks released before may pass for live now (arena.h says so). */
static void cut_recorded(model *m, uint64_t failed_calls_before) {
    if (g_alloc.failed_calls != failed_calls_before) m->n_stale = m->next_stale = 0;
}

static void note_used(model *m) {
    fm_arena_stats s = stats_of(m->arena);
    if (!m->chained) FZ_CHECK_EQ(s.used, m->used);
    m->used = s.used;
    if (m->used > m->high) m->high = m->used;
}

FZ_NO_COVERAGE static int cmp_live(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const live_alloc *)a)->ptr;
    uintptr_t y = (uintptr_t)((const live_alloc *)b)->ptr;
    return (x > y) - (x < y);
}

static live_alloc g_sorted[MAX_LIVE];

/* Every live allocation's bytes, place and ownership. */
static void full_sweep(model *m) {
    verify_from(m, 0);
    size_t n = 0; /* empty allocations share their address with the next one */
    for (size_t i = 0; i < m->count; i++) {
        if (m->live[i].size) g_sorted[n++] = m->live[i];
    }
    qsort(g_sorted, n, sizeof *g_sorted, cmp_live);
    for (size_t i = 0; i + 1 < n; i++) {
        if ((uintptr_t)g_sorted[i].ptr + g_sorted[i].size > (uintptr_t)g_sorted[i + 1].ptr)
            FZ_FAIL("allocations %p (+%zu) and %p overlap", (void *)g_sorted[i].ptr,
                    g_sorted[i].size, (void *)g_sorted[i + 1].ptr);
    }
    for (size_t i = 0; i < m->count; i++) {
        if (!fm_arena_owns(m->arena, m->live[i].ptr, m->live[i].size))
            FZ_FAIL("live allocation %p (+%zu) not owned", (void *)m->live[i].ptr, m->live[i].size);
    }
    FZ_CHECK(!fm_arena_owns(m->arena, &g_not_an_arena, 1));
    FZ_CHECK(!fm_arena_owns(m->arena, NULL, 0));
}

/* Counters every operation keeps exact. */
static void check_counters(model *m) {
    fm_arena_stats s = stats_of(m->arena);
    m->stats = s;
    FZ_CHECK_EQ(s.total_allocs, m->allocs);
    FZ_CHECK_EQ(s.failed_allocs, m->failed);
    FZ_CHECK_EQ(s.rewinds, m->rewinds);
    FZ_CHECK_EQ(s.resets, m->resets);
    FZ_CHECK_EQ(s.high_water, m->high);
    FZ_CHECK_EQ(s.reserved, m->reserve);
    FZ_CHECK(s.used >= m->live_bytes);
    if (!m->chained) FZ_CHECK_EQ(s.used, m->used);
    FZ_CHECK(s.committed <= s.reserved);
    if (!m->chained) FZ_CHECK(s.committed >= s.used);
    if (m->chained) FZ_CHECK(g_alloc.live_bytes >= s.committed);
    FZ_CHECK_EQ(fz_err.count, m->reports);
}

/* After every operation: the counters, then a full sweep when one is due.
 * A sweep costs its pattern bytes plus a little per allocation (the sort,
 * fm_arena_owns). */
static void after_op(model *m) {
    check_counters(m);
    if (fz_sweep_due(&m->sweep, m->window_bytes + m->count * 64)) full_sweep(m);
}

/* ============================================================= allocation */

/* Block bytes a chained arena needs for `size` more bytes (SIZE_MAX: more
 * than any reserve), as arena.c sizes them. */
static size_t block_for(const model *m, size_t size) {
    if (size > SIZE_MAX - BLOCK_HEADER - FM_MAX_ALIGN - PAGE) return SIZE_MAX;
    size_t want = BLOCK_HEADER + size + FM_MAX_ALIGN;
    return fm_align_up(want > m->step ? want : m->step, PAGE);
}

static size_t pick_size(model *m, fz_input *in, uint8_t mode) {
    switch (mode) {
    case 0: return fz_u8(in) % 64;
    case 1: return fz_u16(in) % 8192;
    case 2: {
        size_t span = m->reserve + m->reserve / 4 + 1;
        if (span > ((size_t)1 << 20)) span = (size_t)1 << 20;
        return fz_u32(in) % span;
    }
    default:
        switch (fz_u8(in) % 4) {
        case 0: return SIZE_MAX - fz_u16(in);
        case 1: return (size_t)1 << (33 + fz_u8(in) % 31);
        case 2: { /* right at the end of the reserve */
            size_t room = m->reserve > m->used ? m->reserve - (size_t)m->used : 0;
            return room + (size_t)(int8_t)fz_u8(in);
        }
        default: { /* right at the end of the committed memory / block */
            /* commit_step need not be a power of two: no mask rounding */
            size_t to_step = m->step - (size_t)m->used % m->step;
            return to_step + (size_t)(int8_t)fz_u8(in);
        }
        }
    }
}

static size_t pick_align(fz_input *in) {
    uint8_t sel = fz_u8(in);
    uint32_t shift = sel & 15;
    if (shift <= 12) return (size_t)1 << shift;
    if (shift == 13) return 0;
    if (shift == 14) return 3 + 2 * (size_t)(sel >> 4); /* odd, not a power of two */
    return (size_t)8192 << (sel >> 6);
}

static void op_alloc(model *m, fz_input *in) {
    if (m->count == MAX_LIVE) return;
    uint8_t sel = fz_u8(in);
    int kind = sel & 3; /* 0, 1: alloc, 2: zero, 3: array */
    size_t size = pick_size(m, in, (sel >> 2) & 3);
    size_t align = pick_align(in);
    size_t al = align ? align : FM_DEFAULT_ALIGN;
    bool bad_align = !FM_IS_POW2(al) || al > FM_MAX_ALIGN;
    size_t elem = 1, n = size;
    bool overflow = false;
    if (kind == 3) {
        elem = 1 + fz_u8(in) % 16;
        n = size / elem;
        if (sel & 0x80 && elem > 1) { /* count * elem past SIZE_MAX */
            n = SIZE_MAX / elem + 1 + fz_u8(in);
            overflow = true;
        }
        size = overflow ? 0 : n * elem;
    }
    /* One that could succeed costs its bytes (filled, zeroed, faulted in,
     * filled again on release): not past what is left of the budget. Past
     * the reserve it fails at once, so it always runs. */
    if (size <= m->reserve && size / UNIT_BYTES > WORK_BUDGET - m->work) return;

    fm_arena_stats before = m->stats;
    uint64_t failed_calls = g_alloc.failed_calls;
    size_t backing = g_alloc.live_bytes;
    fm_clear_error();
    uint8_t *p = kind <= 1   ? fm_arena_alloc(m->arena, size, align)
                 : kind == 2 ? fm_arena_alloc_zero(m->arena, size, align)
                             : fm_arena_alloc_array(m->arena, n, elem, align);
    fm_arena_stats after = stats_of(m->arena);

    uint64_t start = fm_align_up((size_t)before.used, bad_align ? 1 : al);
    bool fits = start + size >= start && start + size <= m->reserve;
    if (overflow || bad_align) {
        if (p) FZ_FAIL("alloc(%zu, align %zu%s) succeeded", size, align,
                       overflow ? ", count * size overflowing" : "");
        FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
    } else if (!p) {
        fm_error err = fm_last_error();
        bool huge = size > ((size_t)1 << 62);
        if (err == FM_ERR_INVALID_ARG) {
            if (!huge) FZ_FAIL("alloc(%zu, align %zu) rejected as invalid", size, align);
        } else if (err != FM_ERR_ARENA_FULL) {
            FZ_FAIL("alloc(%zu, align %zu) failed with %s", size, align, fm_error_name(err));
        } else if (!m->chained) {
            if (fits) FZ_FAIL("alloc(%zu, align %zu) at %llu failed within reserve %zu", size,
                              align, (unsigned long long)start, m->reserve);
        } else {
            bool refused = g_alloc.failed_calls != failed_calls;
            size_t block = block_for(m, size);
            /* committed never passes the reserve: no sum that could wrap. */
            if (!refused && block != SIZE_MAX && block <= m->reserve - before.committed)
                FZ_FAIL("chained alloc(%zu) failed with room for a %zu-byte block", size, block);
        }
    }
    if (!p) {
        check_unchanged(&before, &after, 1);
        FZ_CHECK_EQ(g_alloc.live_bytes, backing);
        m->failed++;
        m->reports++;
        return;
    }
    FZ_CHECK_ERR(FM_OK);
    if (!fm_is_aligned(p, al)) FZ_FAIL("alloc(%zu, align %zu) gave %p", size, al, (void *)p);
    if (!m->chained) {
        if (!fits) FZ_FAIL("alloc(%zu) at %llu past reserve %zu succeeded", size,
                           (unsigned long long)start, m->reserve);
        FZ_CHECK_EQ(after.used, start + size);
        /* Above the top, committed memory stays poisoned (arena.h). */
        size_t above = (size_t)(after.committed - after.used);
        if (!fz_poisoned(p + size, above < 256 ? above : 256))
            FZ_FAIL("bytes above the top (%p) are not poisoned", (void *)(p + size));
    }
    if (after.used < before.used + size || after.used > before.used + size + al - 1)
        FZ_FAIL("used went %llu -> %llu for %zu bytes aligned to %zu",
                (unsigned long long)before.used, (unsigned long long)after.used, size, al);
    if (!fm_arena_owns(m->arena, p, size)) FZ_FAIL("new allocation %p (+%zu) not owned", (void *)p, size);
    if (kind >= 2) {
        size_t i = fz_first_nonzero(p, size);
        if (i != size) FZ_FAIL("zeroed allocation %p has %#x at byte %zu", (void *)p, p[i], i);
    }
    m->allocs++;
    m->used = after.used;
    if (m->used > m->high) m->high = m->used;
    uint32_t seed = m->next_seed++;
    fill_alloc(p, size, seed);
    m->live[m->count++] = (live_alloc){p, size, seed};
    m->live_bytes += size;
    m->window_bytes += pattern_bytes(size);
    m->work += size / UNIT_BYTES;
}

/* ====================================================== marks and rewind */

static void op_mark(model *m) {
    if (m->depth == MAX_MARKS) return;
    fm_arena_mark mark = fm_arena_get_mark(m->arena);
    m->marks[m->depth++] = (model_mark){mark, m->used, m->count};
}

static void op_rewind(model *m, fz_input *in) {
    size_t i = fz_below(in, (uint32_t)m->depth);
    bool keep = fz_u8(in) & 1;
    if (!m->depth) return;
    model_mark target = m->marks[i];
    verify_from(m, target.live_count);
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    fm_arena_rewind(m->arena, target.mark);
    FZ_CHECK_ERR(FM_OK);
    cut_recorded(m, failed_calls);
    m->rewinds++;
    truncate_live(m, target.live_count);
    /* Marks above the target: released when they lay above it; those at its
     * position stay valid (with nothing allocated after them now). */
    size_t depth = i;
    if (keep) m->marks[depth++] = target;
    for (size_t j = i + 1; j < m->depth; j++) {
        if (m->marks[j].used > target.used) {
            add_stale(m, m->marks[j].mark);
        } else {
            m->marks[j].live_count = target.live_count;
            m->marks[depth++] = m->marks[j];
        }
    }
    m->depth = depth;
    m->used = target.used;
    note_used(m);
    verify_top(m);
    m->sweep.wanted = true;
}

static void expect_bad_mark(model *m, fm_arena_mark mark) {
    fm_arena_stats before = m->stats;
    fm_clear_error();
    fm_arena_rewind(m->arena, mark);
    FZ_CHECK_ERR(FM_ERR_BAD_MARK);
    fm_arena_stats after = stats_of(m->arena);
    check_unchanged(&before, &after, 0);
    m->reports++;
}

/* kind: 0 another arena's, 1 above the top, 2 and 3 a released one; then a
 * u16 operand (distance above the top, or which released mark). */
static void op_bad_rewind(model *m, fz_input *in) {
    uint8_t kind = fz_u8(in) % 4;
    uint16_t operand = fz_u16(in);
    fm_arena_mark mark = fm_arena_get_mark(m->arena);
    if (kind == 0) {
        mark.arena = (const fm_arena *)(const void *)&g_not_an_arena;
    } else if (kind == 1) {
        mark.pos += 1u + operand;
    } else {
        if (!m->n_stale) return;
        mark = m->stale[operand % m->n_stale];
    }
    expect_bad_mark(m, mark);
}

static void op_reset(model *m) {
    verify_from(m, 0);
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    fm_arena_reset(m->arena);
    FZ_CHECK_ERR(FM_OK);
    cut_recorded(m, failed_calls);
    m->resets++;
    truncate_live(m, 0);
    size_t depth = 0;
    for (size_t j = 0; j < m->depth; j++) {
        if (m->marks[j].used > 0) add_stale(m, m->marks[j].mark);
        else m->marks[depth++] = (model_mark){m->marks[j].mark, 0, 0};
    }
    m->depth = depth;
    m->used = 0;
    note_used(m);
}

static void op_decommit(model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    size_t keep = sel & 1 ? fz_u32(in) % (2 * m->reserve + 1) : 0;
    fm_arena_stats before = m->stats;
    size_t backing = g_alloc.live_bytes;
    fm_clear_error();
    size_t released = fm_arena_decommit(m->arena, keep);
    FZ_CHECK_ERR(FM_OK);
    fm_arena_stats after = stats_of(m->arena);
    FZ_CHECK_EQ(after.committed, before.committed - released);
    FZ_CHECK_EQ(after.used, before.used);
    FZ_CHECK_EQ(after.decommit_events, before.decommit_events + (released ? 1 : 0));
    if (!m->chained) {
        /* Down to max(keep, top), rounded up to a page. */
        size_t floor = keep > after.used ? keep : (size_t)after.used;
        if (released) FZ_CHECK_EQ(after.committed, fm_align_up(floor, PAGE));
        else FZ_CHECK(fm_align_up(floor, PAGE) >= before.committed);
    } else {
        FZ_CHECK_EQ(g_alloc.live_bytes, backing - released);
        if (released) FZ_CHECK(after.committed >= keep);
    }
    verify_top(m);
    if (released) m->sweep.wanted = true;
}

/* ================================================================= create */

static const size_t k_reserve[8] = {4096, 10000, 16384, 65536, 100000, 262144, 1u << 20, 0};
static const size_t k_step[8] = {0, 4096, 5000, 8192, 65536, 1u << 20, 1, 100000};

static bool create_arena(model *m, fz_input *in) {
    uint8_t b0 = fz_u8(in), b1 = fz_u8(in);
    fm_arena_desc d = {.name = "fuzz"};
    m->chained = b0 & 1;
    d.poison = b0 & 2;
    d.reserve_bytes = k_reserve[(b0 >> 2) & 7];
    d.commit_step = k_step[(b0 >> 5) & 7];
    if (m->chained) d.allocator = fm_test_allocator_get(&g_alloc);
    /* Shared arenas follow the same model on one thread. */
    static const fm_sync k_sync[4] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_LOCKFREE, FM_SYNC_NONE};
    d.sync = k_sync[(b1 >> 4) & 3];
    size_t reserve = d.reserve_bytes ? d.reserve_bytes : (size_t)64 << 20;
    m->reserve = fm_align_up(reserve, PAGE);
    m->step = fm_align_up(d.commit_step ? d.commit_step : (size_t)64 << 10, PAGE);
    /* arena.h: a chained arena whose reserve cannot hold its first block is
     * a bad desc (the smallest block is a header plus 4096 of alignment). */
    bool valid = d.commit_step <= reserve && !(m->chained && block_for(m, 0) > reserve);
    /* Chained: blocks never pass the reserve, so no request may either
     * (bookkeeping allocations are far smaller). */
    if (m->chained) g_alloc.fatal_above = m->reserve > (1u << 20) ? m->reserve : (1u << 20);

    if (b1 & 7) fz_alloc_fail(&g_alloc, b1 & 7, b1 & 8);
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    m->arena = fm_arena_create(&d);
    fz_alloc_fail(&g_alloc, 0, false);
    if (!valid) {
        if (m->arena) FZ_FAIL("create accepted commit_step %zu above reserve %zu", d.commit_step,
                              reserve);
        FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
        return false;
    }
    if (!m->arena) {
        FZ_CHECK_ERR(FM_ERR_OUT_OF_MEMORY);
        if (g_alloc.failed_calls == failed_calls) FZ_FAIL("create failed unprompted");
        FZ_CHECK_EQ(fz_err.count, 1);
        return false;
    }
    FZ_CHECK_ERR(FM_OK);
    FZ_CHECK_EQ(fz_err.count, 0);
    fm_arena_desc r = fm_arena_get_desc(m->arena);
    FZ_CHECK_EQ(r.reserve_bytes, m->reserve);
    FZ_CHECK_EQ(r.commit_step, m->step);
    FZ_CHECK_EQ(r.sync, d.sync);
    FZ_CHECK(strcmp(fm_arena_name(m->arena), "fuzz") == 0);
    fm_arena_stats s = stats_of(m->arena);
    FZ_CHECK_EQ(s.used, 0);
    FZ_CHECK_EQ(s.reserved, m->reserve);
    m->stats = s;
    return true;
}

/* ================================================================= driver */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    model *m = &g_m;
    memset(m, 0, sizeof *m);
    fz_errors_begin();
    fz_alloc_begin(&g_alloc, (size_t)64 << 20, (size_t)128 << 20);
    fz_input in = {data, size};

    if (create_arena(m, &in)) {
        while (m->work < WORK_BUDGET && fz_more(&in)) {
            uint8_t code = fz_u8(&in);
            m->work++;
            switch (code % 12) {
            case 0: case 1: case 2: case 3: op_alloc(m, &in); break;
            case 4: case 5: op_mark(m); break;
            case 6: op_rewind(m, &in); break;
            case 7: op_bad_rewind(m, &in); break;
            case 8: op_reset(m); break;
            case 9: op_decommit(m, &in); break;
            case 10: { /* faults (they only reach a chained arena) */
                uint8_t sel = fz_u8(&in);
                fz_alloc_fail(&g_alloc, sel & 0x80 ? 0 : 1 + (sel & 3), sel & 0x10);
                break;
            }
            default: m->sweep.wanted = true; break;
            }
            after_op(m);
        }
        fz_alloc_fail(&g_alloc, 0, false);
        check_counters(m);
        full_sweep(m);
        fm_arena_destroy(m->arena);
        FZ_CHECK_EQ(fz_err.count, m->reports);
    }
    fz_alloc_check_clean(&g_alloc);
    return 0;
}
