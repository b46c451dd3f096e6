/* tests/memory/test_frame_arena.c: fm_frame_arena against framemem/arena.h.
 *
 * The contract under test: memory allocated during frame f stays valid until
 * frame f + frames begins; then the arena that served f is reset and serves
 * the new frame. Tests write a pattern per frame and check every frame still
 * due is intact after each advance. Most tests run in "[vm]" mode (virtual
 * memory) and "[chained]" mode (blocks from the counting allocator, which
 * proves every byte comes back at destroy). */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define KIB ((size_t)1 << 10)

/* =================================================================== modes */

typedef enum arena_mode { MODE_VM, MODE_CHAINED } arena_mode;

static arena_mode g_mode;
/* The sync policy of the frame arenas the tests create: NONE, or the one
 * named on the command line ("mutex", "lockfree"), so the whole suite also
 * runs against shared arenas. */
static fm_sync g_sync;

static const char *mode_name(arena_mode mode) { return mode == MODE_VM ? "vm" : "chained"; }

static int setup_vm(void **state) {
    g_mode = MODE_VM;
    return fm_test_setup(state);
}

static int setup_chained(void **state) {
    g_mode = MODE_CHAINED;
    return fm_test_setup(state);
}

/* =================================================================== helpers */

static fm_frame_arena_stats frame_stats_of(const fm_frame_arena *fa) {
    fm_frame_arena_stats s;
    memset(&s, 0, sizeof s);
    fm_frame_arena_get_stats(fa, &s);
    return s;
}

static fm_arena_stats arena_stats_of(const fm_arena *arena) {
    fm_arena_stats s;
    memset(&s, 0, sizeof s);
    fm_arena_get_stats(arena, &s);
    return s;
}

static fm_frame_arena_desc in_mode(fm_test_env *env, arena_mode mode, fm_frame_arena_desc desc) {
    if (mode == MODE_CHAINED) desc.arena.allocator = fm_test_allocator_get(&env->alloc);
    if (desc.arena.sync == FM_SYNC_NONE) desc.arena.sync = g_sync;
    return desc;
}

static fm_frame_arena *create_frame_arena(fm_test_env *env, arena_mode mode,
                                          fm_frame_arena_desc desc) {
    desc = in_mode(env, mode, desc);
    fm_frame_arena *fa = fm_frame_arena_create(&desc);
    if (!fa) {
        print_error("[%s] fm_frame_arena_create failed: %s: %s\n", mode_name(mode),
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_non_null(fa);
    return fa;
}

static void destroy_clean(fm_test_env *env, fm_frame_arena *fa) {
    int errors_before = env->errors.count;
    fm_frame_arena_destroy(fa);
    assert_int_equal(env->errors.count, errors_before);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ------------------------------------------------- per-frame fill patterns */

enum { MAX_PIECES = 64 };

/* What one frame allocated, with the seed of each piece's pattern. */
typedef struct frame_record {
    uint64_t frame;
    fm_arena *arena; /* the arena that served it */
    size_t count;
    uint8_t *ptr[MAX_PIECES];
    size_t size[MAX_PIECES];
    uint32_t seed[MAX_PIECES];
    uint64_t bytes; /* sum of sizes (align 1: exactly the arena's used) */
} frame_record;

static uint32_t piece_seed(uint64_t frame, size_t i) { return (uint32_t)(frame * 1000 + i + 1); }

static size_t piece_size(uint64_t frame, size_t i) {
    return (size_t)((frame * 7919 + i * 104729) % 3000);
}

/* Allocates count pieces in the current frame and fills them. */
static void fill_frame(fm_frame_arena *fa, frame_record *r, uint64_t frame, size_t count,
                       size_t align) {
    memset(r, 0, sizeof *r);
    r->frame = frame;
    r->arena = fm_frame_arena_current(fa);
    for (size_t i = 0; i < count; i++) {
        size_t size = piece_size(frame, i);
        uint8_t *p = fm_frame_alloc(fa, size, align);
        if (!p) {
            print_error("frame %llu piece %zu: fm_frame_alloc(%zu) failed: %s: %s\n",
                        (unsigned long long)frame, i, size, fm_error_name(fm_last_error()),
                        fm_last_error_message());
        }
        assert_non_null(p);
        assert_true(fm_is_aligned(p, align ? align : FM_DEFAULT_ALIGN));
        assert_true(fm_arena_owns(r->arena, p, size));
        fm_test_fill(p, size, piece_seed(frame, i));
        r->ptr[i] = p;
        r->size[i] = size;
        r->seed[i] = piece_seed(frame, i);
        r->bytes += size;
        r->count++;
    }
}

static void verify_frame(const frame_record *r, uint64_t now) {
    for (size_t i = 0; i < r->count; i++) {
        if (!fm_test_check_fill(r->ptr[i], r->size[i], r->seed[i])) {
            print_error("[%s] frame %llu piece %zu (%zu bytes) overwritten during frame %llu\n",
                        mode_name(g_mode), (unsigned long long)r->frame, i, r->size[i],
                        (unsigned long long)now);
            fail();
        }
    }
}

/* =================================================================== create */

static void test_frame_arena_create_with_defaults_is_double_buffered(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){0});
    assert_non_null(fa);
    fm_frame_arena_stats s = frame_stats_of(fa);
    assert_string_equal(s.name, "frame");
    assert_int_equal(s.frame, 0);
    assert_int_equal(s.used, 0);
    assert_int_equal(s.high_water, 0);
    assert_int_equal(s.total_allocs, 0);
    assert_int_equal(s.failed_allocs, 0);
    assert_int_equal(s.history_count, 0);
    fm_arena *first = fm_frame_arena_current(fa);
    assert_non_null(first);
    /* The underlying arenas use the arena defaults. */
    fm_arena_desc d = fm_arena_get_desc(first);
    assert_int_equal(d.reserve_bytes, (size_t)64 << 20);
    assert_int_equal(d.commit_step, (size_t)64 << 10);
    fm_frame_arena_advance(fa);
    fm_arena *second = fm_frame_arena_current(fa);
    assert_ptr_not_equal(second, first);
    fm_frame_arena_advance(fa);
    assert_ptr_equal(fm_frame_arena_current(fa), first);
    fm_frame_arena_advance(fa);
    assert_ptr_equal(fm_frame_arena_current(fa), second);
    assert_int_equal(frame_stats_of(fa).frame, 3);
    fm_frame_arena_destroy(fa);
    assert_int_equal(env->errors.count, 0);
}

/* The arenas serving frames 0.. in order, over two full cycles. */
static void assert_cycle_length(fm_frame_arena *fa, uint32_t frames) {
    fm_arena *seen[FM_FRAME_ARENA_MAX_FRAMES];
    for (uint32_t i = 0; i < frames; i++) {
        seen[i] = fm_frame_arena_current(fa);
        for (uint32_t j = 0; j < i; j++) assert_ptr_not_equal(seen[i], seen[j]);
        fm_frame_arena_advance(fa);
    }
    for (uint32_t i = 0; i < frames; i++) {
        assert_ptr_equal(fm_frame_arena_current(fa), seen[i]);
        fm_frame_arena_advance(fa);
    }
}

static void test_frame_arena_frames_zero_means_two(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, g_mode,
                                            (fm_frame_arena_desc){.name = "zero", .frames = 0});
    assert_cycle_length(fa, 2);
    destroy_clean(env, fa);
}

static void test_frame_arena_cycles_through_as_many_arenas_as_frames(void **state) {
    fm_test_env *env = *state;
    for (uint32_t frames = 2; frames <= FM_FRAME_ARENA_MAX_FRAMES; frames++) {
        fm_frame_arena *fa = create_frame_arena(
            env, g_mode, (fm_frame_arena_desc){.frames = frames, .arena.commit_step = 4096});
        assert_cycle_length(fa, frames);
        assert_int_equal(frame_stats_of(fa).frame, 2 * frames);
        destroy_clean(env, fa);
    }
}

static void test_frame_arena_create_with_null_desc_fails_with_invalid_arg(void **state) {
    fm_test_env *env = *state;
    assert_null(fm_frame_arena_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.bad_messages, 0);
}

static void expect_frame_create_rejected(fm_test_env *env, fm_frame_arena_desc desc,
                                         const char *label) {
    fm_test_errors_reset(&env->errors);
    fm_clear_error();
    char why[128];
    assert_int_equal(fm_frame_arena_desc_check(&desc, why, sizeof why), FM_ERR_INVALID_ARG);
    assert_true(why[0] != 0);
    assert_int_equal(env->errors.count, 0);
    fm_frame_arena *fa = fm_frame_arena_create(&desc);
    if (fa || fm_last_error() != FM_ERR_INVALID_ARG || env->errors.count != 1) {
        print_error("case '%s': frame arena %p, last error %s (%s), handler calls %d\n", label,
                    (void *)fa, fm_error_name(fm_last_error()), fm_last_error_message(),
                    env->errors.count);
        if (fa) fm_frame_arena_destroy(fa);
        fail();
    }
    assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
    if (!fm_test_contains(env->errors.message, desc.name) ||
        !fm_test_contains(env->errors.message, why)) {
        print_error("case '%s': message does not name '%s': %s\n", label, desc.name,
                    env->errors.message);
        fail();
    }
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_frame_arena_rejects_one_or_more_than_eight_frames(void **state) {
    fm_test_env *env = *state;
    const uint32_t bad[] = {1, FM_FRAME_ARENA_MAX_FRAMES + 1, 100, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char label[32];
        snprintf(label, sizeof label, "frames %u", (unsigned)bad[i]);
        expect_frame_create_rejected(
            env, in_mode(env, g_mode, (fm_frame_arena_desc){.name = "bad_frames", .frames = bad[i]}),
            label);
        assert_int_equal(env->alloc.alloc_calls, 0);
    }
}

static void test_frame_arena_create_rejects_a_bad_arena_desc(void **state) {
    fm_test_env *env = *state;
    expect_frame_create_rejected(
        env, in_mode(env, g_mode, (fm_frame_arena_desc){.name = "bad_sync",
                                                         .arena.sync = FM_SYNC_THREAD_CACHE}),
        "arena sync thread cache");
    expect_frame_create_rejected(
        env, in_mode(env, g_mode, (fm_frame_arena_desc){.name = "bad_step",
                                                         .arena.reserve_bytes = 64 * KIB,
                                                         .arena.commit_step = 128 * KIB}),
        "arena commit_step above reserve");
}

static void test_frame_arena_keeps_its_own_copy_of_the_name(void **state) {
    fm_test_env *env = *state;
    char name[32];
    snprintf(name, sizeof name, "%s", "render_frame");
    fm_frame_arena *fa = create_frame_arena(env, g_mode, (fm_frame_arena_desc){.name = name});
    memset(name, 'X', sizeof name - 1);
    assert_string_equal(frame_stats_of(fa).name, "render_frame");
    destroy_clean(env, fa);
}

static void test_frame_arena_destroy_of_null_is_a_noop(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena_destroy(NULL);
    assert_int_equal(env->errors.count, 0);
}

/* =============================================================== lifetime */

/* Runs 6 * frames + 3 frames. Each frame writes its pattern; after every
 * advance, all frames still due (the last frames - 1) are intact and the
 * arena that comes round is empty. */
static void run_lifetime(fm_test_env *env, uint32_t frames) {
    fm_frame_arena *fa = create_frame_arena(
        env, g_mode,
        (fm_frame_arena_desc){.frames = frames, .arena.commit_step = 4096});
    frame_record *records = calloc(frames, sizeof *records);
    assert_non_null(records);
    uint64_t total = 6u * frames + 3;
    for (uint64_t f = 0; f < total; f++) {
        frame_record *r = &records[f % frames];
        if (f >= frames) {
            /* r is frame f - frames: its arena was reset as frame f began. */
            fm_arena *current = fm_frame_arena_current(fa);
            assert_ptr_equal(current, r->arena);
            assert_int_equal(arena_stats_of(current).used, 0);
            assert_int_equal(frame_stats_of(fa).used, 0);
        }
        fill_frame(fa, r, f, 10 + f % 7, (size_t)1 << (f % 5));
        for (uint64_t back = 1; back < frames && back <= f; back++) {
            verify_frame(&records[(f - back) % frames], f);
        }
        verify_frame(r, f);
        fm_frame_arena_advance(fa);
        /* Frames f - frames + 2 .. f are still due at the start of f + 1. */
        for (uint64_t back = 0; back + 1 < frames && back <= f; back++) {
            verify_frame(&records[(f - back) % frames], f + 1);
        }
    }
    assert_int_equal(frame_stats_of(fa).frame, total);
    free(records);
    destroy_clean(env, fa);
}

static void test_frame_memory_stays_valid_for_two_frames_when_double_buffered(void **state) {
    run_lifetime(*state, 2);
}

static void test_frame_memory_stays_valid_for_three_frames_when_triple_buffered(void **state) {
    run_lifetime(*state, 3);
}

static void test_frame_memory_stays_valid_for_eight_frames(void **state) {
    run_lifetime(*state, 8);
}

static void test_frame_arena_resets_the_arena_that_comes_round(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, g_mode, (fm_frame_arena_desc){.frames = 3});
    fm_arena *served[3];
    uint64_t resets_when_left[3];
    for (int f = 0; f < 3; f++) {
        served[f] = fm_frame_arena_current(fa);
        assert_non_null(fm_frame_alloc(fa, 1000, 8));
        resets_when_left[f] = arena_stats_of(served[f]).resets;
        fm_frame_arena_advance(fa);
    }
    for (int f = 3; f < 12; f++) {
        fm_arena *a = fm_frame_arena_current(fa);
        assert_ptr_equal(a, served[f % 3]);
        fm_arena_stats s = arena_stats_of(a);
        assert_int_equal(s.used, 0);
        assert_int_equal(s.resets, resets_when_left[f % 3] + 1); /* once, as f began */
        assert_true(s.high_water >= 1000);
        assert_non_null(fm_frame_alloc(fa, 1000, 8));
        /* The other arenas still hold their frames. */
        assert_int_equal(arena_stats_of(served[(f + 1) % 3]).used, 1000);
        assert_int_equal(arena_stats_of(served[(f + 2) % 3]).used, 1000);
        resets_when_left[f % 3] = arena_stats_of(a).resets;
        fm_frame_arena_advance(fa);
    }
    destroy_clean(env, fa);
}

typedef struct particle {
    float pos[3];
    float vel[3];
    alignas(32) uint32_t id;
} particle;

static void test_frame_arena_current_serves_marks_and_typed_allocs(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, g_mode, (fm_frame_arena_desc){0});
    for (int f = 0; f < 6; f++) {
        fm_arena *a = fm_frame_arena_current(fa);
        uint8_t *keep = fm_frame_alloc(fa, 64, 8);
        assert_non_null(keep);
        memset(keep, f, 64);
        fm_arena_mark m = fm_arena_get_mark(a);
        particle *p = FM_ARENA_NEW(a, particle);
        assert_non_null(p);
        assert_true(fm_is_aligned(p, alignof(particle)));
        assert_int_equal(p->id, 0);
        particle *many = FM_ARENA_NEW_ARRAY(a, particle, 100);
        assert_non_null(many);
        assert_true(fm_is_aligned(many, alignof(particle)));
        for (int i = 0; i < 100; i++) assert_int_equal(many[i].id, 0);
        memset(many, 0xEE, 100 * sizeof *many);
        uint64_t used_scoped = frame_stats_of(fa).used;
        assert_true(used_scoped >= 64 + 101 * sizeof(particle));
        fm_arena_rewind(a, m);
        assert_int_equal(fm_last_error(), FM_OK);
        assert_int_equal(frame_stats_of(fa).used, arena_stats_of(a).used);
        assert_true(frame_stats_of(fa).used < used_scoped);
        for (int i = 0; i < 64; i++) assert_int_equal(keep[i], f);
        /* The rewound bytes come back, zeroed again. */
        particle *p2 = FM_ARENA_NEW(a, particle);
        assert_ptr_equal(p2, p);
        particle *again = FM_ARENA_NEW_ARRAY(a, particle, 100);
        assert_ptr_equal(again, many);
        for (int i = 0; i < 100; i++) assert_int_equal(again[i].id, 0);
        fm_frame_arena_advance(fa);
    }
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, fa);
}

/* Release builds inline fm_frame_alloc; it and the out-of-line function must
 * bump the current arena's top, count in its stats and follow advance. */
static void test_frame_alloc_inline_and_out_of_line_share_the_current_arena(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, g_mode,
                                            (fm_frame_arena_desc){.frames = 3,
                                                                  .arena.commit_step = 4096});
    for (int f = 0; f < 7; f++) {
        fm_arena *a = fm_frame_arena_current(fa);
        uint64_t allocs = arena_stats_of(a).total_allocs;
        uintptr_t prev_end = 0;
        for (int i = 0; i < 200; i++) {
            size_t size = (size_t)((i * 53 + f) % 400);
            size_t align = (size_t)1 << ((i + f) % 7);
            uint8_t *p = (i % 2) ? fm_frame_alloc(fa, size, align)
                                 : (fm_frame_alloc)(fa, size, align);
            assert_non_null(p);
            assert_true(fm_is_aligned(p, align));
            assert_true(fm_arena_owns(a, p, size));
            /* Each allocation follows the previous one up to alignment
             * (chained mode moves to another block now and then, a fresh or
             * a spare one). */
            if (prev_end && g_mode == MODE_VM) {
                assert_int_equal((uintptr_t)p, fm_align_up(prev_end, align));
            }
            prev_end = (uintptr_t)p + size;
        }
        assert_int_equal(arena_stats_of(a).total_allocs, allocs + 200);
        /* Bad alignment: reported and counted by either form, nothing moves. */
        uint64_t used = arena_stats_of(a).used;
        uint64_t failed = arena_stats_of(a).failed_allocs;
        fm_clear_error();
        assert_null(fm_frame_alloc(fa, 16, 24));
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        fm_clear_error();
        assert_null((fm_frame_alloc)(fa, 16, 8192));
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        assert_int_equal(arena_stats_of(a).failed_allocs, failed + 2);
        assert_int_equal(arena_stats_of(a).used, used);
        fm_frame_arena_advance(fa);
        assert_ptr_not_equal(fm_frame_arena_current(fa), a);
    }
    fm_frame_arena_stats s = frame_stats_of(fa);
    assert_int_equal(s.total_allocs, 7 * 200);
    assert_int_equal(s.failed_allocs, 7 * 2);
    fm_test_errors_reset(&env->errors);
    destroy_clean(env, fa);
}

/* ================================================================== stats */

static void test_frame_arena_stats_track_frames_used_high_water_and_history(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, g_mode,
                                            (fm_frame_arena_desc){.name = "stats", .frames = 2,
                                                                  .arena.commit_step = 4096});
    enum { FRAMES = 100 };
    uint64_t bytes[FRAMES];
    uint64_t high = 0, allocs = 0, failed = 0;
    for (uint64_t f = 0; f < FRAMES; f++) {
        /* align 1: used is exactly the bytes asked for */
        bytes[f] = (f * 7919) % 5000 + 1;
        uint64_t pieces = 1 + f % 4;
        uint64_t left = bytes[f];
        for (uint64_t i = 0; i < pieces; i++) {
            uint64_t n = i + 1 == pieces ? left : left / 2;
            left -= n;
            assert_non_null(fm_frame_alloc(fa, (size_t)n, 1));
            allocs++;
        }
        if (f % 10 == 3) {
            assert_null(fm_frame_alloc(fa, 8, 3));
            assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
            assert_true(fm_test_contains(env->errors.message, "stats"));
            failed++;
        }
        if (bytes[f] > high) high = bytes[f];
        fm_frame_arena_stats s = frame_stats_of(fa);
        assert_string_equal(s.name, "stats");
        assert_int_equal(s.frame, f);
        assert_int_equal(s.used, bytes[f]);
        assert_int_equal(s.high_water, high);
        assert_int_equal(s.total_allocs, allocs);
        assert_int_equal(s.failed_allocs, failed);
        uint32_t want_history = f < FM_FRAME_ARENA_HISTORY ? (uint32_t)f : FM_FRAME_ARENA_HISTORY;
        assert_int_equal(s.history_count, want_history);
        for (uint32_t i = 0; i < s.history_count; i++) {
            if (s.history[i] != bytes[f - 1 - i]) {
                print_error("frame %llu: history[%u] = %llu, expected %llu (frame %llu)\n",
                            (unsigned long long)f, i, (unsigned long long)s.history[i],
                            (unsigned long long)bytes[f - 1 - i],
                            (unsigned long long)(f - 1 - i));
                fail();
            }
        }
        /* committed sums the arenas: this frame's and the previous one's. */
        fm_arena *cur = fm_frame_arena_current(fa);
        uint64_t committed = arena_stats_of(cur).committed;
        fm_frame_arena_advance(fa);
        fm_arena *next = fm_frame_arena_current(fa);
        committed += arena_stats_of(next).committed;
        assert_int_equal(frame_stats_of(fa).committed, committed);
        assert_true(committed >= bytes[f]);
    }
    fm_frame_arena_stats s = frame_stats_of(fa);
    assert_int_equal(s.frame, FRAMES);
    assert_int_equal(s.used, 0);
    assert_int_equal(s.history[0], bytes[FRAMES - 1]);
    fm_frame_arena_get_stats(fa, NULL); /* ignored */
    fm_test_errors_reset(&env->errors);
    destroy_clean(env, fa);
}

/* ========================================================= chained blocks */

static void test_frame_arena_chained_mode_returns_every_byte_at_destroy(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, MODE_CHAINED,
                                            (fm_frame_arena_desc){.name = "chained_frames",
                                                                  .frames = 3,
                                                                  .arena.commit_step = 4096});
    frame_record records[3];
    for (uint64_t f = 0; f < 40; f++) {
        fill_frame(fa, &records[f % 3], f, 20 + f % 30, 16);
        if (f % 5 == 0) assert_non_null(fm_frame_alloc(fa, 50000, 64)); /* a big block */
        for (uint64_t back = 1; back < 3 && back <= f; back++) verify_frame(&records[(f - back) % 3], f);
        if (f == 20) {
            /* Give spare blocks back mid-run: later frames allocate anew. */
            fm_arena_decommit(fm_frame_arena_current(fa), 0);
        }
        fm_frame_arena_advance(fa);
    }
    assert_true(env->alloc.live_blocks > 3);
    assert_int_equal(env->alloc.errors, 0);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, fa);
}

static void run_create_failures(fm_test_env *env, uint32_t frames) {
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    uint64_t n = 1;
    for (;; n++) {
        fm_test_errors_reset(&env->errors);
        fm_clear_error();
        fm_test_allocator_fail_nth(&env->alloc, n);
        fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){
            .name = "frame_fault", .frames = frames, .arena.allocator = al});
        fm_test_allocator_recover(&env->alloc);
        if (fa) {
            fm_frame_arena_destroy(fa);
            fm_test_allocator_assert_clean(&env->alloc);
            break;
        }
        assert_int_not_equal(fm_last_error(), FM_OK);
        assert_true(env->errors.count >= 1);
        assert_true(fm_test_contains(env->errors.message, "frame_fault"));
        fm_test_allocator_assert_clean(&env->alloc);
    }
    /* The frame arena itself, then each arena and its first block. */
    assert_true(n >= 2 + 2 * (uint64_t)frames);
}

static void test_frame_arena_create_failure_at_every_n_leaks_nothing(void **state) {
    fm_test_env *env = *state;
    run_create_failures(env, 2);
    run_create_failures(env, 3);
    run_create_failures(env, FM_FRAME_ARENA_MAX_FRAMES);
}

static void test_frame_alloc_failure_keeps_earlier_frames_and_recovers(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, g_mode,
                                            (fm_frame_arena_desc){.name = "tight",
                                                                  .arena.reserve_bytes = 64 * KIB,
                                                                  .arena.commit_step = 16 * KIB});
    frame_record prev;
    fill_frame(fa, &prev, 0, 10, 8);
    fm_frame_arena_advance(fa);
    frame_record cur;
    fill_frame(fa, &cur, 1, 5, 8);
    /* Fill the rest of this frame's arena. */
    size_t extra = 0;
    while (fm_frame_alloc(fa, 1000, 8)) extra++;
    assert_int_equal(fm_last_error(), FM_ERR_ARENA_FULL);
    assert_true(fm_test_contains(env->errors.message, "tight"));
    assert_true(extra > 10);
    fm_frame_arena_stats s = frame_stats_of(fa);
    assert_int_equal(s.failed_allocs, 1);
    assert_null(fm_frame_alloc(fa, 100000, 8));
    assert_int_equal(fm_last_error(), FM_ERR_ARENA_FULL);
    assert_int_equal(frame_stats_of(fa).failed_allocs, 2);
    assert_int_equal(frame_stats_of(fa).used, s.used);
    verify_frame(&prev, 1);
    verify_frame(&cur, 1);
    /* The next frame has the other arena: room again. */
    fm_frame_arena_advance(fa);
    frame_record next;
    fill_frame(fa, &next, 2, 20, 8);
    verify_frame(&cur, 2);
    fm_frame_arena_advance(fa);
    fill_frame(fa, &prev, 3, 20, 8);
    verify_frame(&next, 3);
    fm_test_errors_reset(&env->errors);
    destroy_clean(env, fa);
}

static void test_frame_alloc_block_failure_is_arena_full_and_recovers(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, MODE_CHAINED,
                                            (fm_frame_arena_desc){.name = "faulty_frames",
                                                                  .arena.commit_step = 4096});
    frame_record prev;
    fill_frame(fa, &prev, 0, 20, 8);
    fm_frame_arena_advance(fa);
    frame_record cur;
    fill_frame(fa, &cur, 1, 3, 8);
    fm_test_allocator_fail_from(&env->alloc, 1);
    fm_frame_arena_stats before = frame_stats_of(fa);
    assert_null(fm_frame_alloc(fa, 20000, 8)); /* needs a new block */
    assert_int_equal(fm_last_error(), FM_ERR_ARENA_FULL);
    fm_frame_arena_stats after = frame_stats_of(fa);
    assert_int_equal(after.used, before.used);
    assert_int_equal(after.total_allocs, before.total_allocs);
    assert_int_equal(after.committed, before.committed);
    assert_int_equal(after.failed_allocs, before.failed_allocs + 1);
    verify_frame(&prev, 1);
    verify_frame(&cur, 1);
    fm_test_allocator_recover(&env->alloc);
    assert_non_null(fm_frame_alloc(fa, 20000, 8));
    verify_frame(&prev, 1);
    verify_frame(&cur, 1);
    fm_test_errors_reset(&env->errors);
    destroy_clean(env, fa);
}

/* ============================================================= debug aids */

typedef fm_test_child child_result;

static arena_mode g_child_mode;
static fm_test_allocator g_child_alloc;

#define run_child fm_test_run_child

static fm_frame_arena *child_frame_arena(void) {
    fm_frame_arena_desc desc = {.name = "child_frames", .arena.commit_step = 4096};
    if (g_child_mode == MODE_CHAINED) {
        fm_test_allocator_init(&g_child_alloc);
        desc.arena.allocator = fm_test_allocator_get(&g_child_alloc);
    }
    fm_frame_arena *fa = fm_frame_arena_create(&desc);
    if (!fa) _exit(3);
    return fa;
}

static void child_read(const volatile unsigned char *p) {
    unsigned char v = *p;
    fprintf(stderr, "read %u\n", v);
}

/* Frame 0's memory read during frame 1: still valid. */
static void read_previous_frame(void) {
    fm_frame_arena *fa = child_frame_arena();
    unsigned char *p = fm_frame_alloc(fa, 64, 16);
    if (!p) _exit(4);
    memset(p, 7, 64);
    fm_frame_arena_advance(fa);
    child_read(p + 16);
}

/* Frame 0's memory read during frame 2: released. */
static void read_released_frame(void) {
    fm_frame_arena *fa = child_frame_arena();
    unsigned char *p = fm_frame_alloc(fa, 64, 16);
    if (!p) _exit(4);
    memset(p, 7, 64);
    fm_frame_arena_advance(fa);
    fm_frame_arena_advance(fa);
    child_read(p + 16);
}

static void test_frame_memory_of_the_previous_frame_is_readable(void **state) {
    (void)state;
    g_child_mode = g_mode;
    child_result r = run_child(read_previous_frame);
    /* Under Valgrind the child's exit status also counts what it leaves
     * behind when it exits without cleaning up: only its output says. */
    if (fm_test_under_valgrind()) {
        assert_non_null(strstr(r.output, "valgrind errors: 0"));
        assert_non_null(strstr(r.output, "read 7"));
        return;
    }
    if (!(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)) {
        print_error("child status %d, output:\n%s\n", r.status, r.output);
    }
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.output, "read 7"));
}

static void test_frame_memory_released_by_advance_is_poisoned_under_asan(void **state) {
    (void)state;
    g_child_mode = g_mode;
    child_result r = run_child(read_released_frame);
#if defined(FM_TEST_ASAN)
    if (!strstr(r.output, "use-after-poison")) print_error("child output:\n%s\n", r.output);
    assert_false(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.output, "use-after-poison"));
#else
    if (fm_test_under_valgrind()) {
        /* Memcheck run: released arena bytes are no-access to Valgrind. */
        assert_true(fm_test_child_caught(&r));
    } else {
        /* Without ASan the read is harmless: the bytes are the arena's. */
        assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
        assert_non_null(strstr(r.output, "read "));
    }
#endif
}

/* With arena.poison, Debug builds fill the released frame with 0xDD. */
static void test_frame_advance_fills_the_released_frame_in_debug_builds(void **state) {
    fm_test_env *env = *state;
    fm_frame_arena *fa = create_frame_arena(env, g_mode,
                                            (fm_frame_arena_desc){.arena.poison = true,
                                                                  .arena.commit_step = 4096});
    uint8_t *p = fm_frame_alloc(fa, 5000, 16);
    assert_non_null(p);
    memset(p, 0xEE, 5000);
    fm_frame_arena_advance(fa);
    for (size_t i = 0; i < 5000; i++) assert_int_equal(p[i], 0xEE); /* still due */
    fm_frame_arena_advance(fa);
#if defined(FM_TEST_ASAN)
    /* Reading p is a report now; the same bytes come back unzeroed. */
    uint8_t *q = fm_frame_alloc(fa, 5000, 16);
    assert_ptr_equal(q, p);
#else
    const uint8_t *q = p;
#endif
#ifdef NDEBUG
    const uint8_t want = 0xEE;
#else
    const uint8_t want = 0xDD;
#endif
    fm_test_allow_read(q, 5000);
    for (size_t i = 0; i < 5000; i++) {
        if (q[i] != want) {
            print_error("byte %zu is 0x%02X, expected 0x%02X\n", i, q[i], want);
            fail();
        }
    }
    destroy_clean(env, fa);
}

/* ==================================================================== main */

#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
#define T_VM(fn) {#fn " [vm]", fn, setup_vm, fm_test_teardown, NULL}
#define T_CHAINED(fn) {#fn " [chained]", fn, setup_chained, fm_test_teardown, NULL}
#define T_BOTH(fn) T_VM(fn), T_CHAINED(fn)

int main(int argc, char **argv) {
    const char *sync = fm_test_sync_from_args(argc, argv, &g_sync);
    if (!sync) return 2;
    const struct CMUnitTest tests[] = {
        T(test_frame_arena_create_with_defaults_is_double_buffered),
        T_BOTH(test_frame_arena_frames_zero_means_two),
        T_BOTH(test_frame_arena_cycles_through_as_many_arenas_as_frames),
        T(test_frame_arena_create_with_null_desc_fails_with_invalid_arg),
        T_BOTH(test_frame_arena_rejects_one_or_more_than_eight_frames),
        T_BOTH(test_frame_arena_create_rejects_a_bad_arena_desc),
        T_BOTH(test_frame_arena_keeps_its_own_copy_of_the_name),
        T(test_frame_arena_destroy_of_null_is_a_noop),
        T_BOTH(test_frame_memory_stays_valid_for_two_frames_when_double_buffered),
        T_BOTH(test_frame_memory_stays_valid_for_three_frames_when_triple_buffered),
        T_BOTH(test_frame_memory_stays_valid_for_eight_frames),
        T_BOTH(test_frame_arena_resets_the_arena_that_comes_round),
        T_BOTH(test_frame_arena_current_serves_marks_and_typed_allocs),
        T_BOTH(test_frame_alloc_inline_and_out_of_line_share_the_current_arena),
        T_BOTH(test_frame_arena_stats_track_frames_used_high_water_and_history),
        T(test_frame_arena_chained_mode_returns_every_byte_at_destroy),
        T(test_frame_arena_create_failure_at_every_n_leaks_nothing),
        T_BOTH(test_frame_alloc_failure_keeps_earlier_frames_and_recovers),
        T(test_frame_alloc_block_failure_is_arena_full_and_recovers),
        T_BOTH(test_frame_memory_of_the_previous_frame_is_readable),
        T_BOTH(test_frame_memory_released_by_advance_is_poisoned_under_asan),
        T_BOTH(test_frame_advance_fills_the_released_frame_in_debug_builds),
    };
    char group[64];
    snprintf(group, sizeof group, "frame_arena [%s]", sync);
    return cmocka_run_group_tests_name(group, tests, NULL, NULL);
}
