/*
 * tests/fuzz/fuzz_frame_arena.c: libFuzzer harness for fm_frame_arena against
 * a reference model.
 *
 * Input: a 2-byte header choosing the frame count (2..4, the default, or one
 * create must reject), the mode (virtual memory, or chained blocks from a
 * counting allocator), poisoning, reserve and commit step, and a fault in
 * create; then one operation per opcode byte:
 *
 *   frame allocs (fm_frame_alloc) and zeroed allocs through
 *   fm_frame_arena_current, of sizes from 0 to past the reserve, valid and
 *   invalid alignments; advance; a mark and a rewind inside the current frame;
 *   a rewind to a mark of a frame whose arena came round again (released:
 *   FM_ERR_BAD_MARK, nothing changes); arming the allocator's faults; a
 *   full check.
 *
 * The contract checked: memory allocated during frame f stays intact until
 * frame f + frames begins, so after every operation the allocations of the
 * current frame and the frames - 1 before it keep their bytes; those of older
 * frames are released, which under ASan means poisoned (checked without
 * reading them). The stats (frame number, used, history newest first, high
 * water, totals) follow the model; in virtual-memory mode `used` is predicted
 * exactly. At the end the counting allocator must hold zero bytes.
 */
#include "fuzz_support.h"

#include "framemem/arena.h"

enum {
    MAX_LIVE = 4096,
    MAX_MARKS = 16,
    MAX_OLD_MARKS = 16,
    MAX_OPS = 4096,
    PAGE = 4096,
};

typedef struct frame_alloc {
    uint8_t *ptr;
    size_t size;
    uint32_t seed;
    uint64_t frame;
} frame_alloc;

typedef struct frame_mark {
    fm_arena *arena;
    fm_arena_mark mark;
    uint64_t frame;
    uint64_t used;
    size_t live_count;
} frame_mark;

typedef struct model {
    fm_frame_arena *fa;
    uint32_t frames;
    bool chained;
    size_t reserve; /* resolved, per arena */
    size_t step;    /* resolved */

    frame_alloc live[MAX_LIVE]; /* in allocation order: the current frame last */
    size_t count;
    uint64_t frame;
    uint64_t used[FM_FRAME_ARENA_MAX_FRAMES]; /* per arena; exact in VM mode */
    uint64_t history[FM_FRAME_ARENA_HISTORY]; /* newest first */
    uint32_t history_count;
    uint64_t high_water;
    uint32_t next_seed;

    frame_mark marks[MAX_MARKS];         /* in the current frame */
    size_t depth;
    frame_mark old_marks[MAX_OLD_MARKS]; /* of earlier frames */
    size_t n_old, next_old;

    uint64_t allocs, failed, reports;
} model;

static model g_m;
static fm_test_allocator g_alloc;

/* ================================================================ helpers */

static uint32_t cur_index(const model *m) { return (uint32_t)(m->frame % m->frames); }

static fm_arena_stats arena_stats(const fm_arena *arena) {
    fm_arena_stats s;
    memset(&s, 0, sizeof s);
    fm_arena_get_stats(arena, &s);
    return s;
}

static void verify_all(const model *m) {
    for (size_t i = 0; i < m->count; i++) {
        const frame_alloc *l = &m->live[i];
        size_t bad = fz_check_fill(l->ptr, l->size, l->seed);
        if (bad != l->size)
            FZ_FAIL("allocation of frame %llu (%p, %zu bytes; now frame %llu) changed at byte %zu",
                    (unsigned long long)l->frame, (void *)l->ptr, l->size,
                    (unsigned long long)m->frame, bad);
    }
}

static void check_stats(const model *m) {
    fm_frame_arena_stats s;
    fm_frame_arena_get_stats(m->fa, &s);
    FZ_CHECK(strcmp(s.name, "fuzz") == 0);
    FZ_CHECK_EQ(s.frame, m->frame);
    if (!m->chained) FZ_CHECK_EQ(s.used, m->used[cur_index(m)]);
    FZ_CHECK_EQ(s.total_allocs, m->allocs);
    FZ_CHECK_EQ(s.failed_allocs, m->failed);
    FZ_CHECK_EQ(s.history_count, m->history_count);
    for (uint32_t i = 0; i < m->history_count; i++) {
        if (s.history[i] != m->history[i])
            FZ_FAIL("history[%u] is %llu, expected %llu", i, (unsigned long long)s.history[i],
                    (unsigned long long)m->history[i]);
    }
    uint64_t high = m->high_water > s.used ? m->high_water : s.used;
    FZ_CHECK_EQ(s.high_water, high);
    FZ_CHECK_EQ(fz_err.count, m->reports);
}

FZ_NO_COVERAGE static int cmp_alloc(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const frame_alloc *)a)->ptr;
    uintptr_t y = (uintptr_t)((const frame_alloc *)b)->ptr;
    return (x > y) - (x < y);
}

static frame_alloc g_sorted[MAX_LIVE];

static void full_check(const model *m) {
    verify_all(m);
    check_stats(m);
    /* Empty allocations may sit at the end of another arena's range. */
    size_t n = 0;
    for (size_t i = 0; i < m->count; i++) {
        if (m->live[i].size) g_sorted[n++] = m->live[i];
    }
    qsort(g_sorted, n, sizeof *g_sorted, cmp_alloc);
    for (size_t i = 0; i + 1 < n; i++) {
        const frame_alloc *a = &g_sorted[i], *b = &g_sorted[i + 1];
        if ((uintptr_t)a->ptr + a->size > (uintptr_t)b->ptr)
            FZ_FAIL("allocations %p (+%zu, frame %llu) and %p (+%zu, frame %llu) overlap",
                    (void *)a->ptr, a->size, (unsigned long long)a->frame, (void *)b->ptr, b->size,
                    (unsigned long long)b->frame);
    }
}

static void drop_live(model *m, size_t count) {
    while (m->count > count) {
        frame_alloc *l = &m->live[--m->count];
        if (!fz_poisoned(l->ptr, l->size))
            FZ_FAIL("rewound allocation %p (+%zu) is not poisoned", (void *)l->ptr, l->size);
    }
}

/* A reset or rewind whose cut record could not grow may forget an old cut,
 * after which a released mark can pass for live (arena.h says so). */
static void cut_recorded(model *m, uint64_t failed_calls_before) {
    if (g_alloc.failed_calls != failed_calls_before) m->n_old = m->next_old = 0;
}

/* ============================================================= operations */

static size_t pick_size(const model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    switch (sel & 3) {
    case 0: return sel >> 2;
    case 1: return fz_u16(in) % 4096;
    case 2: return fz_u32(in) % (m->reserve + m->reserve / 4 + 1);
    default: { /* at the end of the reserve */
        uint64_t used = m->used[cur_index(m)];
        size_t room = m->reserve > used ? m->reserve - (size_t)used : 0;
        return room + (size_t)(int8_t)fz_u8(in);
    }
    }
}

static void op_alloc(model *m, fz_input *in, bool through_current) {
    if (m->count == MAX_LIVE) return;
    size_t size = pick_size(m, in);
    uint8_t asel = fz_u8(in);
    size_t align = asel % 16 <= 12 ? (size_t)1 << (asel % 16) : asel % 16 == 13 ? 0 : 24;
    size_t al = align ? align : FM_DEFAULT_ALIGN;
    bool bad_align = !FM_IS_POW2(al);
    uint32_t cur = cur_index(m);
    fm_arena *arena = fm_frame_arena_current(m->fa);
    fm_arena_stats before = arena_stats(arena);
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    uint8_t *p = through_current ? fm_arena_alloc_zero(arena, size, align)
                                 : fm_frame_alloc(m->fa, size, align);
    fm_arena_stats after = arena_stats(arena);
    uint64_t start = fm_align_up((size_t)before.used, bad_align ? 1 : al);
    bool fits = start + size >= start && start + size <= m->reserve;
    if (bad_align) {
        if (p) FZ_FAIL("frame alloc with alignment %zu succeeded", align);
        FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
    } else if (!p && size > ((size_t)1 << 62)) { /* may overflow the address space */
        if (fm_last_error() != FM_ERR_INVALID_ARG) FZ_CHECK_ERR(FM_ERR_ARENA_FULL);
    } else if (!p) {
        FZ_CHECK_ERR(FM_ERR_ARENA_FULL);
        if (!m->chained && fits) FZ_FAIL("frame alloc(%zu) at %llu failed within reserve %zu",
                                         size, (unsigned long long)start, m->reserve);
        /* Chained: a new block holds a 64-byte header, the size and 4096
         * bytes of alignment slack, in commit steps. */
        size_t want = size + 64 + FM_MAX_ALIGN;
        size_t block = fm_align_up(want > m->step ? want : m->step, PAGE);
        if (m->chained && g_alloc.failed_calls == failed_calls &&
            before.committed + block <= m->reserve)
            FZ_FAIL("chained frame alloc(%zu) failed with room for a %zu-byte block", size, block);
    }
    if (!p) {
        FZ_CHECK_EQ(after.used, before.used);
        FZ_CHECK_EQ(after.committed, before.committed);
        m->failed++;
        m->reports++;
        return;
    }
    FZ_CHECK_ERR(FM_OK);
    FZ_CHECK(fm_is_aligned(p, al));
    if (!m->chained) {
        if (!fits) FZ_FAIL("frame alloc(%zu) past the reserve succeeded", size);
        FZ_CHECK_EQ(after.used, start + size);
        size_t above = (size_t)(after.committed - after.used); /* poisoned (arena.h) */
        if (!fz_poisoned(p + size, above < 256 ? above : 256))
            FZ_FAIL("bytes above the top (%p) are not poisoned", (void *)(p + size));
    } else {
        FZ_CHECK(after.used >= before.used + size && after.used <= before.used + size + al - 1);
    }
    if (through_current) {
        size_t i = fz_first_nonzero(p, size);
        if (i != size) FZ_FAIL("zeroed frame allocation %p has a non-zero byte %zu", (void *)p, i);
    }
    FZ_CHECK(fm_arena_owns(arena, p, size));
    m->allocs++;
    m->used[cur] = after.used;
    uint32_t seed = m->next_seed++;
    fz_fill(p, size, seed);
    m->live[m->count++] = (frame_alloc){p, size, seed, m->frame};
}

static void op_advance(model *m) {
    verify_all(m);
    uint32_t cur = cur_index(m);
    uint64_t finished = m->chained ? arena_stats(fm_frame_arena_current(m->fa)).used : m->used[cur];
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    fm_frame_arena_advance(m->fa);
    FZ_CHECK_ERR(FM_OK);
    cut_recorded(m, failed_calls);

    memmove(m->history + 1, m->history, (FM_FRAME_ARENA_HISTORY - 1) * sizeof *m->history);
    m->history[0] = finished;
    if (m->history_count < FM_FRAME_ARENA_HISTORY) m->history_count++;
    if (finished > m->high_water) m->high_water = finished;
    m->frame++;

    /* The current frame's marks become old marks. */
    for (size_t i = 0; i < m->depth; i++) {
        if (m->n_old < MAX_OLD_MARKS) {
            m->old_marks[m->n_old++] = m->marks[i];
        } else {
            m->old_marks[m->next_old] = m->marks[i];
            m->next_old = (m->next_old + 1) % MAX_OLD_MARKS;
        }
    }
    m->depth = 0;

    /* The arena coming round held frame - frames: it was reset. */
    if (m->frame >= m->frames) {
        uint64_t due = m->frame - m->frames;
        size_t kept = 0;
        for (size_t i = 0; i < m->count; i++) {
            frame_alloc *l = &m->live[i];
            if (l->frame == due) {
                if (!fz_poisoned(l->ptr, l->size))
                    FZ_FAIL("allocation %p (+%zu) of frame %llu is not poisoned at frame %llu",
                            (void *)l->ptr, l->size, (unsigned long long)l->frame,
                            (unsigned long long)m->frame);
            } else {
                FZ_CHECK(l->frame > due);
                m->live[kept++] = *l;
            }
        }
        m->count = kept;
        m->used[cur_index(m)] = 0;
    }
    if (!m->chained) FZ_CHECK_EQ(arena_stats(fm_frame_arena_current(m->fa)).used, 0);
    verify_all(m);
}

static void op_mark(model *m) {
    if (m->depth == MAX_MARKS) return;
    fm_arena *arena = fm_frame_arena_current(m->fa);
    fm_arena_stats s = arena_stats(arena);
    m->marks[m->depth++] =
        (frame_mark){arena, fm_arena_get_mark(arena), m->frame, s.used, m->count};
}

static void op_rewind(model *m, fz_input *in) {
    size_t i = fz_below(in, (uint32_t)m->depth);
    if (!m->depth) return;
    frame_mark t = m->marks[i];
    FZ_CHECK(t.arena == fm_frame_arena_current(m->fa));
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    fm_arena_rewind(t.arena, t.mark);
    FZ_CHECK_ERR(FM_OK);
    cut_recorded(m, failed_calls);
    drop_live(m, t.live_count);
    m->used[cur_index(m)] = t.used;
    m->depth = i + 1; /* marks above it are gone (or at its position: dropped too) */
    FZ_CHECK_EQ(arena_stats(t.arena).used, t.used);
    verify_all(m);
}

/* A mark from a frame whose arena has been reset since: released. */
static void op_old_rewind(model *m, fz_input *in) {
    size_t i = fz_below(in, (uint32_t)m->n_old);
    if (!m->n_old) return;
    frame_mark t = m->old_marks[i];
    if (t.mark.pos == 0 || m->frame < t.frame + m->frames) return; /* not released */
    fm_arena_stats before = arena_stats(t.arena);
    fm_clear_error();
    fm_arena_rewind(t.arena, t.mark);
    FZ_CHECK_ERR(FM_ERR_BAD_MARK);
    fm_arena_stats after = arena_stats(t.arena);
    FZ_CHECK_EQ(after.used, before.used);
    FZ_CHECK_EQ(after.rewinds, before.rewinds);
    m->reports++;
}

/* ================================================================= create */

static const size_t k_reserve[4] = {16384, 65536, 100000, 262144};
static const size_t k_step[4] = {4096, 8192, 5000, 16384};

static bool create_frame_arena(model *m, fz_input *in) {
    uint8_t b0 = fz_u8(in), b1 = fz_u8(in);
    static const uint32_t k_frames[8] = {2, 3, 4, 0, 1, 9, 2, 3};
    uint32_t frames = k_frames[b0 & 7];
    fm_frame_arena_desc d = {.name = "fuzz", .frames = frames};
    m->chained = b0 & 8;
    d.arena.poison = b0 & 16;
    d.arena.reserve_bytes = k_reserve[(b0 >> 5) & 3];
    d.arena.commit_step = k_step[(b1 >> 4) & 3];
    if (m->chained) d.arena.allocator = fm_test_allocator_get(&g_alloc);
    bool valid = frames == 0 || (frames >= 2 && frames <= FM_FRAME_ARENA_MAX_FRAMES);
    m->frames = frames ? frames : 2;
    m->reserve = fm_align_up(d.arena.reserve_bytes, PAGE);
    m->step = fm_align_up(d.arena.commit_step, PAGE);
    if (m->chained) g_alloc.fatal_above = (size_t)1 << 20;

    if (b1 & 7) fz_alloc_fail(&g_alloc, b1 & 7, b1 & 8);
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    m->fa = fm_frame_arena_create(&d);
    fz_alloc_fail(&g_alloc, 0, false);
    if (!valid) {
        if (m->fa) FZ_FAIL("create accepted %u frames", frames);
        FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
        return false;
    }
    if (!m->fa) {
        FZ_CHECK_ERR(FM_ERR_OUT_OF_MEMORY);
        if (g_alloc.failed_calls == failed_calls) FZ_FAIL("create failed unprompted");
        FZ_CHECK_EQ(fz_err.count, 1);
        return false;
    }
    FZ_CHECK_ERR(FM_OK);
    FZ_CHECK_EQ(fz_err.count, 0);
    check_stats(m);
    return true;
}

/* ================================================================= driver */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    model *m = &g_m;
    memset(m, 0, sizeof *m);
    fz_errors_begin();
    fz_alloc_begin(&g_alloc, (size_t)16 << 20, (size_t)64 << 20);
    fz_input in = {data, size};

    if (create_frame_arena(m, &in)) {
        for (int op = 0; op < MAX_OPS && fz_more(&in); op++) {
            uint8_t code = fz_u8(&in);
            switch (code % 10) {
            case 0: case 1: case 2: op_alloc(m, &in, false); break;
            case 3: op_alloc(m, &in, true); break;
            case 4: case 5: op_advance(m); break;
            case 6: op_mark(m); break;
            case 7: op_rewind(m, &in); break;
            case 8: op_old_rewind(m, &in); break;
            default: {
                uint8_t sel = fz_u8(&in);
                if (sel & 0x40) { /* faults (they only reach a chained arena) */
                    fz_alloc_fail(&g_alloc, sel & 0x80 ? 0 : 1 + (sel & 3), sel & 0x10);
                } else {
                    full_check(m);
                }
                break;
            }
            }
            check_stats(m);
        }
        fz_alloc_fail(&g_alloc, 0, false);
        full_check(m);
        fm_frame_arena_destroy(m->fa);
        FZ_CHECK_EQ(fz_err.count, m->reports);
    }
    fz_alloc_check_clean(&g_alloc);
    return 0;
}
