/* tests/memory/test_arena.c: fm_arena against the contract in framemem/arena.h.
 *
 * Most tests run twice, once per backing mode: "[vm]" (reserved virtual
 * memory, the system allocator) and "[chained]" (blocks from the counting
 * fm_allocator, which proves every byte comes back at destroy). Every
 * rejected call is checked the same way: NULL (or no effect), the expected
 * code, one report naming the arena, stats unchanged but for failed_allocs,
 * earlier allocations still holding their fill patterns, and the next valid
 * allocation succeeding.
 *
 * The debug-aid tests read released memory. Under AddressSanitizer that read
 * runs in a forked child whose stderr must carry "use-after-poison"; without
 * ASan the same child must run cleanly, and Debug builds check the 0xDD fill. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <psapi.h>
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* =================================================================== modes */

typedef enum arena_mode { MODE_VM, MODE_CHAINED } arena_mode;

/* Set by the per-mode fixture before each test. */
static arena_mode g_mode;
/* The sync policy of the arenas the tests create: NONE, or the one named
 * on the command line ("mutex", "lockfree"), so the whole suite also runs
 * against shared arenas. */
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

static fm_arena_stats stats_of(const fm_arena *arena) {
    fm_arena_stats s;
    memset(&s, 0, sizeof s);
    fm_arena_get_stats(arena, &s);
    return s;
}

static void print_stats(const char *label, const fm_arena_stats *s) {
    print_error("%s:", label);
#define PRINT_FIELD(field, desc) print_error(" %s=%llu", #field, (unsigned long long)s->field);
    FM_ARENA_STATS_FIELDS(PRINT_FIELD)
#undef PRINT_FIELD
    print_error("\n");
}

/* Every counter equal, except failed_allocs, which went up by failed_delta. */
static void assert_stats_same(const fm_arena_stats *before, const fm_arena_stats *after,
                              uint64_t failed_delta) {
    bool same = true;
#define CHECK_FIELD(field, desc)                                                  \
    if (strcmp(#field, "failed_allocs") != 0 && before->field != after->field) {  \
        print_error("stat %s changed: %llu -> %llu\n", #field,                    \
                    (unsigned long long)before->field,                            \
                    (unsigned long long)after->field);                            \
        same = false;                                                             \
    }
    FM_ARENA_STATS_FIELDS(CHECK_FIELD)
#undef CHECK_FIELD
    if (!same) {
        print_stats("before", before);
        print_stats("after", after);
    }
    assert_true(same);
    assert_string_equal(after->name, before->name);
    assert_int_equal(after->failed_allocs, before->failed_allocs + failed_delta);
}

/* The desc for the current mode: chained mode takes the counting allocator. */
static fm_arena_desc in_mode(fm_test_env *env, arena_mode mode, fm_arena_desc desc) {
    if (mode == MODE_CHAINED) desc.allocator = fm_test_allocator_get(&env->alloc);
    if (desc.sync == FM_SYNC_NONE) desc.sync = g_sync;
    return desc;
}

static fm_arena *create_arena(fm_test_env *env, arena_mode mode, fm_arena_desc desc) {
    desc = in_mode(env, mode, desc);
    fm_arena *arena = fm_arena_create(&desc);
    if (!arena) {
        print_error("[%s] fm_arena_create failed: %s: %s\n", mode_name(mode),
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_non_null(arena);
    return arena;
}

/* Destroys an arena: nothing reported, every byte back in the counting
 * allocator (trivially true in vm mode, where it is never used). */
static void destroy_clean(fm_test_env *env, fm_arena *arena) {
    int errors_before = env->errors.count;
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, errors_before);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ------------------------------------------- allocations with fill patterns */

typedef struct piece {
    uint8_t *ptr;
    size_t size;
    uint32_t seed;
} piece;

typedef struct piece_list {
    piece *items;
    size_t count;
    size_t cap;
    uint32_t next_seed;
} piece_list;

static void pieces_push(piece_list *l, void *p, size_t size) {
    assert_non_null(p);
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->items = realloc(l->items, l->cap * sizeof *l->items);
        assert_non_null(l->items);
    }
    uint32_t seed = ++l->next_seed;
    fm_test_fill(p, size, seed);
    l->items[l->count++] = (piece){p, size, seed};
}

static void *pieces_alloc(piece_list *l, fm_arena *arena, size_t size, size_t align) {
    void *p = fm_arena_alloc(arena, size, align);
    if (!p) {
        print_error("fm_arena_alloc(%zu, %zu) failed: %s: %s\n", size, align,
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_non_null(p);
    assert_true(fm_is_aligned(p, align ? align : FM_DEFAULT_ALIGN));
    pieces_push(l, p, size);
    return p;
}

static int piece_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const piece *)a)->ptr;
    uintptr_t y = (uintptr_t)((const piece *)b)->ptr;
    if (x != y) return (x > y) - (x < y);
    /* A size-0 piece shares its address with the next: it goes first
     * (qsort need not keep the order it was given: msvcrt's does not). */
    size_t m = ((const piece *)a)->size, n = ((const piece *)b)->size;
    return (m > n) - (m < n);
}

/* Every piece holds its pattern and no two overlap. */
static void pieces_verify(const piece_list *l) {
    for (size_t i = 0; i < l->count; i++) {
        if (!fm_test_check_fill(l->items[i].ptr, l->items[i].size, l->items[i].seed)) {
            print_error("piece %zu (%p, %zu bytes) was overwritten\n", i,
                        (void *)l->items[i].ptr, l->items[i].size);
            fail();
        }
    }
    if (l->count < 2) return;
    piece *sorted = malloc(l->count * sizeof *sorted);
    assert_non_null(sorted);
    memcpy(sorted, l->items, l->count * sizeof *sorted);
    qsort(sorted, l->count, sizeof *sorted, piece_cmp);
    size_t bad = l->count;
    for (size_t i = 0; i + 1 < l->count; i++) {
        if ((uintptr_t)sorted[i].ptr + sorted[i].size > (uintptr_t)sorted[i + 1].ptr) bad = i;
    }
    if (bad != l->count) {
        print_error("pieces %p (+%zu) and %p overlap\n", (void *)sorted[bad].ptr,
                    sorted[bad].size, (void *)sorted[bad + 1].ptr);
    }
    free(sorted);
    assert_int_equal(bad, l->count);
}

static void pieces_truncate(piece_list *l, size_t count) {
    assert_true(count <= l->count);
    l->count = count;
}

static size_t pieces_bytes(const piece_list *l) {
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++) n += l->items[i].size;
    return n;
}

static void pieces_free(piece_list *l) {
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* After a rejected call the arena still works: old pieces intact, a fresh
 * allocation succeeds and is owned, and nothing overlaps. */
static void assert_arena_usable(fm_arena *arena, piece_list *l) {
    pieces_verify(l);
    void *p = pieces_alloc(l, arena, 48, 16);
    assert_true(fm_arena_owns(arena, p, 48));
    pieces_verify(l);
}

/* ------------------------------------------------------- rejected calls */

static void check_failed_alloc(fm_test_env *env, fm_arena *arena, const fm_arena_stats *before,
                               int errors_before, void *p, fm_error code, const char *call) {
    if (p || fm_last_error() != code) {
        print_error("[%s] %s: got %p, %s (%s); expected NULL, %s\n", mode_name(g_mode), call, p,
                    fm_error_name(fm_last_error()), fm_last_error_message(),
                    fm_error_name(code));
    }
    assert_null(p);
    assert_int_equal(fm_last_error(), code);
    assert_int_equal(env->errors.count, errors_before + 1);
    assert_int_equal(env->errors.last, code);
    assert_int_equal(env->errors.bad_messages, 0);
    if (!fm_test_contains(env->errors.message, fm_arena_name(arena))) {
        print_error("%s: message does not name the arena '%s': %s\n", call,
                    fm_arena_name(arena), env->errors.message);
        fail();
    }
    fm_arena_stats after = stats_of(arena);
    assert_stats_same(before, &after, 1);
}

/* Runs an allocating call that must fail with code and change nothing else. */
#define EXPECT_ALLOC_FAILS(env, arena, code, call)                                \
    do {                                                                          \
        fm_arena_stats before_ = stats_of(arena);                                 \
        int errors_before_ = (env)->errors.count;                                 \
        fm_clear_error();                                                         \
        void *p_ = (call);                                                        \
        check_failed_alloc((env), (arena), &before_, errors_before_, p_, (code), #call); \
    } while (0)

/* Rewinds to a mark that must be rejected with FM_ERR_BAD_MARK. */
static void expect_bad_mark(fm_test_env *env, fm_arena *arena, fm_arena_mark mark,
                            const piece_list *l, const char *label) {
    fm_arena_stats before = stats_of(arena);
    int errors_before = env->errors.count;
    fm_clear_error();
    fm_arena_rewind(arena, mark);
    if (fm_last_error() != FM_ERR_BAD_MARK) {
        print_error("[%s] %s: rewind gave %s (%s), expected FM_ERR_BAD_MARK\n",
                    mode_name(g_mode), label, fm_error_name(fm_last_error()),
                    fm_last_error_message());
    }
    assert_int_equal(fm_last_error(), FM_ERR_BAD_MARK);
    assert_int_equal(env->errors.count, errors_before + 1);
    assert_int_equal(env->errors.last, FM_ERR_BAD_MARK);
    assert_true(fm_test_contains(env->errors.message, fm_arena_name(arena)));
    fm_arena_stats after = stats_of(arena);
    assert_stats_same(&before, &after, 0);
    if (l) pieces_verify(l);
}

static void rewind_ok(fm_test_env *env, fm_arena *arena, fm_arena_mark mark) {
    int errors_before = env->errors.count;
    uint64_t rewinds = stats_of(arena).rewinds;
    fm_clear_error();
    fm_arena_rewind(arena, mark);
    if (fm_last_error() != FM_OK) {
        print_error("rewind failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    }
    assert_int_equal(fm_last_error(), FM_OK);
    assert_int_equal(env->errors.count, errors_before);
    assert_int_equal(stats_of(arena).rewinds, rewinds + 1);
}

/* ====================================================== create and defaults */

static void test_arena_create_with_defaults_resolves_the_desc(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){0});
    assert_non_null(arena);
    fm_arena_desc d = fm_arena_get_desc(arena);
    assert_string_equal(d.name, "arena");
    assert_ptr_equal(d.name, fm_arena_name(arena));
    assert_int_equal(d.reserve_bytes, 64 * MIB);
    assert_int_equal(d.commit_step, 64 * KIB);
    assert_null(d.allocator.alloc);
    assert_null(d.allocator.free);
    assert_int_equal(d.sync, FM_SYNC_NONE);
    assert_false(d.poison);
    assert_false(d.huge_pages);

    fm_arena_stats s = stats_of(arena);
    assert_string_equal(s.name, "arena");
    assert_int_equal(s.used, 0);
    assert_int_equal(s.high_water, 0);
    assert_int_equal(s.reserved, 64 * MIB);
    assert_int_equal(s.total_allocs, 0);
    assert_int_equal(s.failed_allocs, 0);
    assert_int_equal(s.decommit_events, 0);
    assert_int_equal(s.resets, 0);
    assert_int_equal(s.rewinds, 0);
    assert_int_equal(s.huge_pages, 0);
    assert_true(s.committed <= s.reserved);

    void *p = fm_arena_alloc(arena, 100, 0);
    assert_non_null(p);
    memset(p, 0x42, 100);
    assert_int_equal(stats_of(arena).total_allocs, 1);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
}

static void test_arena_get_desc_keeps_given_values(void **state) {
    fm_test_env *env = *state;
    fm_arena_desc want = in_mode(env, g_mode,
                                 (fm_arena_desc){
                                     .name = "particles",
                                     .reserve_bytes = 2 * MIB,
                                     .commit_step = 16 * KIB,
                                     .poison = true,
                                 });
    fm_arena *arena = create_arena(env, g_mode, want);
    fm_arena_desc d = fm_arena_get_desc(arena);
    assert_string_equal(d.name, "particles");
    assert_ptr_not_equal(d.name, want.name); /* the arena's own copy */
    assert_ptr_equal(d.name, fm_arena_name(arena));
    assert_int_equal(d.reserve_bytes, 2 * MIB);
    assert_int_equal(d.commit_step, 16 * KIB);
    assert_ptr_equal(d.allocator.alloc, want.allocator.alloc);
    assert_ptr_equal(d.allocator.free, want.allocator.free);
    assert_ptr_equal(d.allocator.user, want.allocator.user);
    assert_int_equal(d.sync, g_sync);
    assert_true(d.poison);
    assert_int_equal(stats_of(arena).reserved, 2 * MIB);
    destroy_clean(env, arena);
}

static void test_arena_keeps_its_own_copy_of_the_name(void **state) {
    fm_test_env *env = *state;
    char name[32];
    snprintf(name, sizeof name, "%s", "scratch");
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = name});
    memset(name, 'X', sizeof name - 1);
    assert_string_equal(fm_arena_name(arena), "scratch");
    assert_string_equal(stats_of(arena).name, "scratch");
    assert_string_equal(fm_arena_get_desc(arena).name, "scratch");
    /* Errors name the copy too. */
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG, fm_arena_alloc(arena, 8, 3));
    assert_true(fm_test_contains(env->errors.message, "scratch"));
    destroy_clean(env, arena);
}

static void test_arena_create_with_null_desc_fails_with_invalid_arg(void **state) {
    fm_test_env *env = *state;
    assert_null(fm_arena_create(NULL));
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.bad_messages, 0);
}

typedef struct desc_case {
    const char *label;
    fm_arena_desc desc;
    bool counted;      /* take the counting allocator */
    int drop_fn;       /* 1: no free, 2: no alloc */
} desc_case;

static void expect_create_rejected(fm_test_env *env, const desc_case *c) {
    fm_arena_desc desc = c->desc;
    if (c->counted || c->drop_fn) desc.allocator = fm_test_allocator_get(&env->alloc);
    if (c->drop_fn == 1) desc.allocator.free = NULL;
    if (c->drop_fn == 2) desc.allocator.alloc = NULL;
    desc.name = "bad_desc_arena";
    fm_test_errors_reset(&env->errors);
    fm_clear_error();
    /* the public check refuses it by the same rule, reporting nothing */
    char why[128];
    assert_int_equal(fm_arena_desc_check(&desc, why, sizeof why), FM_ERR_INVALID_ARG);
    assert_true(why[0] != 0);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
    fm_arena *arena = fm_arena_create(&desc);
    if (arena || fm_last_error() != FM_ERR_INVALID_ARG || env->errors.count != 1) {
        print_error("case '%s': arena %p, last error %s (%s), handler calls %d\n", c->label,
                    (void *)arena, fm_error_name(fm_last_error()), fm_last_error_message(),
                    env->errors.count);
        if (arena) fm_arena_destroy(arena);
        fail();
    }
    assert_int_equal(env->errors.last, FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.bad_messages, 0);
    if (!fm_test_contains(env->errors.message, "bad_desc_arena") ||
        !fm_test_contains(env->errors.message, why)) {
        print_error("case '%s': message does not name the arena and '%s': %s\n", c->label, why,
                    env->errors.message);
        fail();
    }
    assert_int_equal(env->alloc.alloc_calls, 0);
    fm_test_allocator_assert_clean(&env->alloc);
}

static void test_arena_create_rejects_invalid_descs_naming_the_arena(void **state) {
    fm_test_env *env = *state;
    const desc_case cases[] = {
        {"sync thread cache", {.sync = FM_SYNC_THREAD_CACHE}, false, 0},
        {"sync count", {.sync = FM_SYNC_COUNT}, false, 0},
        {"sync 99", {.sync = (fm_sync)99}, false, 0},
        {"chained, sync thread cache", {.sync = FM_SYNC_THREAD_CACHE}, true, 0},
        {"lockfree, commit_step above reserve",
         {.sync = FM_SYNC_LOCKFREE, .reserve_bytes = 64 * KIB, .commit_step = 128 * KIB}, false, 0},
        {"allocator with alloc only", {0}, false, 1},
        {"allocator with free only", {0}, false, 2},
        {"commit_step 2 MiB above reserve 1 MiB",
         {.reserve_bytes = 1 * MIB, .commit_step = 2 * MIB}, false, 0},
        {"chained, commit_step above reserve",
         {.reserve_bytes = 64 * KIB, .commit_step = 128 * KIB}, true, 0},
        {"commit_step one page above reserve",
         {.reserve_bytes = 64 * KIB, .commit_step = 68 * KIB}, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_create_rejected(env, &cases[i]);
}

/* reserve_bytes 0 means 64 MiB; a commit step above it is as wrong as one
 * above an explicit reserve (and SIZE_MAX must not wrap to a zero step). */
static void test_arena_create_rejects_commit_step_above_the_default_reserve(void **state) {
    fm_test_env *env = *state;
    const desc_case cases[] = {
        {"commit_step 128 MiB, default reserve", {.commit_step = 128 * MIB}, false, 0},
        {"commit_step SIZE_MAX, default reserve", {.commit_step = SIZE_MAX}, false, 0},
        {"chained, commit_step 128 MiB, default reserve", {.commit_step = 128 * MIB}, true, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_create_rejected(env, &cases[i]);
}

static void test_arena_create_accepts_commit_step_equal_to_reserve(void **state) {
    fm_test_env *env = *state;
    char why[64] = "x";
    assert_int_equal(fm_arena_desc_check(&(fm_arena_desc){.reserve_bytes = 64 * KIB,
                                                          .commit_step = 64 * KIB},
                                         why, sizeof why),
                     FM_OK);
    assert_string_equal(why, "");
    assert_int_equal(fm_arena_desc_check(NULL, why, sizeof why), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, 1); /* a NULL desc is reported */
    fm_test_errors_reset(&env->errors);
    fm_arena *arena = create_arena(env, g_mode,
                                   (fm_arena_desc){.reserve_bytes = 64 * KIB,
                                                   .commit_step = 64 * KIB});
    piece_list l = {0};
    pieces_alloc(&l, arena, 1000, 8);
    pieces_verify(&l);
    pieces_free(&l);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, arena);
}

static void test_arena_create_fails_when_address_space_cannot_be_reserved(void **state) {
    fm_test_env *env = *state;
    if (SIZE_MAX <= UINT32_MAX) {
        /* 32-bit: 3 GiB is beyond most processes' free address space. */
        fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "huge",
                                                            .reserve_bytes = (size_t)3 << 30});
        if (arena) {
            fm_arena_destroy(arena);
            return;
        }
    } else {
        /* 2^62 bytes and more is beyond every 64-bit user address space
         * (and must not wrap to something small when rounded to pages, 2 MiB
         * ones with huge_pages, or by the slack that aligns to them). */
        const size_t sizes[] = {(size_t)1 << (sizeof(size_t) * 8 - 2), SIZE_MAX - 100, SIZE_MAX,
                                SIZE_MAX - ((size_t)2 << 20)};
        for (size_t i = 0; i < 2 * sizeof sizes / sizeof sizes[0]; i++) {
            size_t size = sizes[i / 2];
            bool huge_pages = i % 2;
            fm_test_errors_reset(&env->errors);
            fm_clear_error();
            fm_arena *arena = fm_arena_create(
                &(fm_arena_desc){.name = "huge", .reserve_bytes = size, .huge_pages = huge_pages});
            if (arena) {
                print_error("reserve_bytes %zu, huge_pages %d: create succeeded\n", size,
                            huge_pages);
                fm_arena_destroy(arena);
            }
            assert_null(arena);
            assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
            assert_int_equal(env->errors.count, 1);
            assert_true(fm_test_contains(env->errors.message, "huge"));
        }
        return;
    }
    assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
    assert_int_equal(env->errors.count, 1);
    assert_true(fm_test_contains(env->errors.message, "huge"));
}

static void test_arena_destroy_of_null_is_a_noop(void **state) {
    fm_test_env *env = *state;
    fm_arena_destroy(NULL);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_last_error(), FM_OK);
}

/* ================================================================ alloc */

static void test_arena_alloc_of_size_zero_gives_an_aligned_non_null_pointer(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "zero_size"});
    piece_list l = {0};
    /* First call on an empty arena, before anything was committed. */
    void *first = fm_arena_alloc(arena, 0, 0);
    assert_non_null(first);
    assert_true(fm_is_aligned(first, FM_DEFAULT_ALIGN));
    for (size_t align = 1; align <= FM_MAX_ALIGN; align *= 2) {
        pieces_alloc(&l, arena, 3, 1); /* knock the top off alignment */
        void *p = fm_arena_alloc(arena, 0, align);
        assert_non_null(p);
        assert_true(fm_is_aligned(p, align));
        assert_true(fm_arena_owns(arena, p, 0));
        void *z = fm_arena_alloc_zero(arena, 0, align);
        assert_non_null(z);
        assert_true(fm_is_aligned(z, align));
        void *arr = fm_arena_alloc_array(arena, 0, 8, align);
        assert_non_null(arr);
        assert_true(fm_is_aligned(arr, align));
        void *arr2 = fm_arena_alloc_array(arena, 8, 0, align);
        assert_non_null(arr2);
        assert_true(fm_is_aligned(arr2, align));
    }
    /* Zero-size pointers never sit inside a live allocation. */
    void *z = fm_arena_alloc(arena, 0, 1);
    for (size_t i = 0; i < l.count; i++) {
        uintptr_t lo = (uintptr_t)l.items[i].ptr, hi = lo + l.items[i].size;
        assert_false((uintptr_t)z > lo && (uintptr_t)z < hi);
    }
    assert_int_equal(stats_of(arena).total_allocs, 1 + 13 * 5 + 1);
    assert_arena_usable(arena, &l);
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_alloc_aligns_to_every_power_of_two_up_to_4096(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 16 * KIB});
    piece_list l = {0};
    const size_t sizes[] = {1, 3, 17, 100, 4096, 5000};
    for (int round = 0; round < 2; round++) {
        for (size_t align = 1; align <= FM_MAX_ALIGN; align *= 2) {
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                uint8_t *p = pieces_alloc(&l, arena, sizes[i], align);
                assert_true(fm_is_aligned(p, align));
                assert_true(fm_arena_owns(arena, p, sizes[i]));
                pieces_alloc(&l, arena, 1, 1);
            }
        }
    }
    pieces_verify(&l);
    fm_arena_stats s = stats_of(arena);
    assert_true(s.used >= pieces_bytes(&l));
    assert_int_equal(s.total_allocs, l.count);
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_alloc_with_align_zero_uses_max_align_t(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){0});
    piece_list l = {0};
    for (size_t odd = 1; odd < 40; odd += 3) {
        pieces_alloc(&l, arena, odd, 1);
        void *p = pieces_alloc(&l, arena, 24, 0);
        assert_true(fm_is_aligned(p, alignof(max_align_t)));
    }
    pieces_verify(&l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_mixed_sizes_keep_their_contents_and_never_overlap(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 4096});
    piece_list l = {0};
    uint32_t x = 12345;
    for (int i = 0; i < 600; i++) {
        x = x * 1664525u + 1013904223u;
        size_t size;
        switch ((x >> 8) % 4) {
        case 0: size = (x >> 12) % 16; break;
        case 1: size = (x >> 12) % 512; break;
        case 2: size = (x >> 12) % 5000; break;
        default: size = (x >> 12) % 20000; break;
        }
        size_t align = (size_t)1 << ((x >> 20) % 8);
        void *p = pieces_alloc(&l, arena, size, align);
        assert_true(fm_arena_owns(arena, p, size));
        if (i % 50 == 0) pieces_verify(&l);
    }
    pieces_verify(&l);
    for (size_t i = 0; i < l.count; i++) {
        assert_true(fm_arena_owns(arena, l.items[i].ptr, l.items[i].size));
    }
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.total_allocs, 600);
    assert_int_equal(s.failed_allocs, 0);
    assert_true(s.used >= pieces_bytes(&l));
    assert_int_equal(s.high_water, s.used);
    assert_true(s.committed >= pieces_bytes(&l));
    assert_true(s.committed <= s.reserved);
    if (g_mode == MODE_VM) assert_true(s.committed >= s.used);
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* Release builds inline fm_arena_alloc; the out-of-line function and the
 * inline path must bump the same top. */
static void test_arena_inline_and_out_of_line_alloc_share_the_top(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 4096});
    piece_list l = {0};
    uintptr_t prev_end = 0;
    uint64_t commits = stats_of(arena).commit_events;
    for (int i = 0; i < 400; i++) {
        size_t size = (size_t)(i * 37 % 300);
        size_t align = (size_t)1 << (i % 6);
        uint8_t *p = (i % 2) ? fm_arena_alloc(arena, size, align)
                             : (fm_arena_alloc)(arena, size, align);
        assert_non_null(p);
        assert_true(fm_is_aligned(p, align));
        /* Each allocation follows the previous one up to alignment, except
         * where chained mode had to start a new block. */
        uint64_t now = stats_of(arena).commit_events;
        if (prev_end && (g_mode == MODE_VM || now == commits)) {
            assert_int_equal((uintptr_t)p, fm_align_up(prev_end, align));
        }
        commits = now;
        pieces_push(&l, p, size);
        prev_end = (uintptr_t)p + size;
    }
    pieces_verify(&l);
    assert_int_equal(stats_of(arena).total_allocs, 400);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* ============================================================ rejections */

static void test_arena_alloc_rejects_bad_alignment_and_keeps_its_state(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "bad_align",
                                                                  .commit_step = 4096});
    piece_list l = {0};
    for (int i = 0; i < 20; i++) pieces_alloc(&l, arena, (size_t)(i * 97 % 700), 8);
    const size_t aligns[] = {3,    5,    6,    7,    12,        24,         48,
                             100,  4095, 4097, 6144, 8192,      (size_t)1 << 20,
                             SIZE_MAX, SIZE_MAX / 2 + 1, SIZE_MAX / 2};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        size_t al = aligns[i];
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG, fm_arena_alloc(arena, 16, al));
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG, fm_arena_alloc(arena, 0, al));
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG, (fm_arena_alloc)(arena, 16, al));
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG, fm_arena_alloc_zero(arena, 16, al));
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                           fm_arena_alloc_array(arena, 4, 4, al));
        pieces_verify(&l);
    }
    assert_int_equal(stats_of(arena).failed_allocs, 5 * (sizeof aligns / sizeof aligns[0]));
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_alloc_rejects_sizes_that_overflow_with_invalid_arg(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "overflow"});
    piece_list l = {0};
    pieces_alloc(&l, arena, 5, 1); /* the top is now off alignment: padding is due */
    /* Every case overflows: the end of the allocation (top + padding + size)
     * is past SIZE_MAX. */
    const struct {
        size_t size, align;
    } cases[] = {
        {SIZE_MAX, 1},     {SIZE_MAX, 8},         {SIZE_MAX, 0},          {SIZE_MAX, 4096},
        {SIZE_MAX - 1, 8}, {SIZE_MAX - 4, 4096},  {SIZE_MAX - 8, 16},     {SIZE_MAX - 100, 4096},
        {SIZE_MAX - 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                           fm_arena_alloc(arena, cases[i].size, cases[i].align));
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                           fm_arena_alloc_zero(arena, cases[i].size, cases[i].align));
        pieces_verify(&l);
    }
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* SIZE_MAX can never be satisfied: it is an overflow however empty the arena
 * is, in both modes alike. */
static void test_arena_alloc_of_size_max_is_invalid_arg_on_an_empty_arena(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "empty_overflow"});
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG, fm_arena_alloc(arena, SIZE_MAX, 1));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG, fm_arena_alloc(arena, SIZE_MAX, 0));
    piece_list l = {0};
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* Huge but representable sizes are past the reserve, not overflows; on
 * either side of the largest size the inline path takes. */
static void test_arena_alloc_of_half_the_address_space_is_arena_full(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "half"});
    piece_list l = {0};
    pieces_alloc(&l, arena, 100, 8);
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, SIZE_MAX / 2, 8));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, SIZE_MAX / 2 + 1, 8));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL,
                       (fm_arena_alloc)(arena, SIZE_MAX / 2 + 1, 0));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, 64 * MIB + 1, 1));
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

typedef struct vec3 {
    float x, y, z;
} vec3;

static void test_arena_new_array_rejects_count_times_size_overflow(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "array_overflow"});
    piece_list l = {0};
    pieces_alloc(&l, arena, 64, 8);
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                       FM_ARENA_NEW_ARRAY(arena, uint64_t, SIZE_MAX / 8 + 1));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                       FM_ARENA_NEW_ARRAY(arena, vec3, SIZE_MAX / sizeof(vec3) + 1));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                       FM_ARENA_NEW_ARRAY(arena, vec3, SIZE_MAX));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                       fm_arena_alloc_array(arena, SIZE_MAX, SIZE_MAX, 1));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                       fm_arena_alloc_array(arena, SIZE_MAX / 2 + 1, 2, 1));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_INVALID_ARG,
                       fm_arena_alloc_array(arena, 2, SIZE_MAX / 2 + 1, 1));
    /* The largest product that fits is no overflow: it is past the reserve. */
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL,
                       fm_arena_alloc_array(arena, SIZE_MAX / 4, 2, 1));
    /* Zero counts are valid, non-NULL allocations. */
    vec3 *none = FM_ARENA_NEW_ARRAY(arena, vec3, 0);
    assert_non_null(none);
    assert_true(fm_is_aligned(none, alignof(vec3)));
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_alloc_past_reserve_fails_with_arena_full_and_keeps_its_state(void **state) {
    fm_test_env *env = *state;
    const size_t reserve = 64 * KIB;
    fm_arena *arena = create_arena(env, g_mode,
                                   (fm_arena_desc){.name = "small",
                                                   .reserve_bytes = reserve,
                                                   .commit_step = 16 * KIB});
    piece_list l = {0};
    void *p;
    while ((p = fm_arena_alloc(arena, 1000, 8)) != NULL) {
        pieces_push(&l, p, 1000);
        assert_true(l.count < 1000);
    }
    /* The loop's last call already failed; check the code, then again with
     * the full before/after comparison. */
    assert_int_equal(fm_last_error(), FM_ERR_ARENA_FULL);
    fm_test_errors_reset(&env->errors);
    fm_arena_stats full = stats_of(arena);
    assert_int_equal(full.failed_allocs, 1);
    assert_true(full.used <= reserve);
    assert_true(full.committed <= reserve);
    assert_true(l.count >= (g_mode == MODE_VM ? 60u : 40u));
    if (g_mode == MODE_VM) assert_true(fm_align_up(full.used, 8) + 1000 > reserve);
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, 1000, 8));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc_zero(arena, 1000, 8));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, reserve + 1, 1));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL,
                       fm_arena_alloc_array(arena, 1000, 1000, 1));
    pieces_verify(&l);
    if (g_mode == MODE_VM) {
        /* What is left below the reserve can still be had, to the byte. */
        size_t left = reserve - (size_t)full.used;
        if (left) pieces_alloc(&l, arena, left, 1);
        assert_int_equal(stats_of(arena).used, reserve);
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, 1, 1));
        assert_non_null(fm_arena_alloc(arena, 0, 1));
    }
    /* Releasing makes room again, without new memory in chained mode. */
    fm_arena_stats before_reset = stats_of(arena);
    size_t count = l.count;
    fm_arena_reset(arena);
    pieces_truncate(&l, 0);
    for (size_t i = 0; i + 1 < count; i++) pieces_alloc(&l, arena, 1000, 8);
    pieces_verify(&l);
    assert_int_equal(stats_of(arena).commit_events, before_reset.commit_events);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* Virtual memory: the reserve is usable to its last byte, in one piece. */
static void test_arena_allocation_of_exactly_the_reserve_fits(void **state) {
    fm_test_env *env = *state;
    const size_t reserve = 64 * KIB;
    fm_arena *arena = create_arena(env, MODE_VM,
                                   (fm_arena_desc){.name = "exact", .reserve_bytes = reserve,
                                                   .commit_step = 4096});
    for (int round = 0; round < 2; round++) {
        uint8_t *p = fm_arena_alloc(arena, reserve, 4096);
        assert_non_null(p);
        memset(p, 0x3C, reserve);
        assert_int_equal(stats_of(arena).used, reserve);
        assert_int_equal(stats_of(arena).committed, reserve);
        EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, 1, 1));
        fm_arena_reset(arena);
        fm_arena_decommit(arena, 0);
    }
    fm_arena_destroy(arena);
}

/* =========================================================== zeroing, types */

static void test_arena_alloc_zero_clears_bytes_a_rewind_released(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 4096});
    for (int round = 0; round < 3; round++) {
        fm_arena_mark m = fm_arena_get_mark(arena);
        uint8_t *dirty = fm_arena_alloc(arena, 20000, 16);
        assert_non_null(dirty);
        memset(dirty, 0xEE, 20000);
        if (round == 2) {
            fm_arena_reset(arena);
        } else {
            rewind_ok(env, arena, m);
        }
        uint8_t *z = fm_arena_alloc_zero(arena, 20000, 16);
        assert_non_null(z);
        for (size_t i = 0; i < 20000; i++) {
            if (z[i] != 0) {
                print_error("byte %zu is %u\n", i, z[i]);
                fail();
            }
        }
        uint8_t *arr = fm_arena_alloc_array(arena, 100, 7, 1);
        assert_non_null(arr);
        for (size_t i = 0; i < 700; i++) assert_int_equal(arr[i], 0);
        memset(z, 0xEE, 20000);
        memset(arr, 0xEE, 700);
    }
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, arena);
}

typedef struct big_aligned {
    alignas(256) unsigned char bytes[300];
} big_aligned;

typedef struct page_aligned {
    alignas(4096) uint32_t words[3];
} page_aligned;

static bool all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i]) return false;
    }
    return true;
}

static void test_arena_new_and_new_array_zero_and_align_to_the_type(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 4096});
    /* Dirty memory first so zeroing is not an accident of fresh pages. */
    fm_arena_mark m = fm_arena_get_mark(arena);
    void *dirty = fm_arena_alloc(arena, 64 * KIB, 4096);
    assert_non_null(dirty);
    memset(dirty, 0xEE, 64 * KIB);
    rewind_ok(env, arena, m);
    for (int i = 0; i < 4; i++) {
        char *c = FM_ARENA_NEW(arena, char);
        assert_non_null(c);
        assert_int_equal(*c, 0);
        *c = 'x';
        double *d = FM_ARENA_NEW(arena, double);
        assert_non_null(d);
        assert_true(fm_is_aligned(d, alignof(double)));
        assert_true(all_zero(d, sizeof *d));
        vec3 *v = FM_ARENA_NEW(arena, vec3);
        assert_non_null(v);
        assert_true(fm_is_aligned(v, alignof(vec3)));
        assert_true(v->x == 0.0f && v->y == 0.0f && v->z == 0.0f);
        big_aligned *b = FM_ARENA_NEW(arena, big_aligned);
        assert_non_null(b);
        assert_true(fm_is_aligned(b, 256));
        assert_true(all_zero(b, sizeof *b));
        memset(b, 0xAB, sizeof *b);
        page_aligned *pa = FM_ARENA_NEW(arena, page_aligned);
        assert_non_null(pa);
        assert_true(fm_is_aligned(pa, 4096));
        assert_true(all_zero(pa, sizeof *pa));
        double *ds = FM_ARENA_NEW_ARRAY(arena, double, 1000);
        assert_non_null(ds);
        assert_true(fm_is_aligned(ds, alignof(double)));
        assert_true(all_zero(ds, 1000 * sizeof(double)));
        big_aligned *bs = FM_ARENA_NEW_ARRAY(arena, big_aligned, 5);
        assert_non_null(bs);
        assert_true(fm_is_aligned(bs, 256));
        assert_true(all_zero(bs, 5 * sizeof(big_aligned)));
        char *cs = FM_ARENA_NEW_ARRAY(arena, char, 3);
        assert_non_null(cs);
        assert_true(all_zero(cs, 3));
        memset(ds, 0xEE, 1000 * sizeof(double));
        memset(bs, 0xEE, 5 * sizeof(big_aligned));
        memset(cs, 0xEE, 3);
    }
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, arena);
}

/* ================================================================= growth */

/* Grows an arena with commit_step `step` to 2 MiB in small pieces: commits
 * (vm) are multiples of step, blocks (chained) cover the top, nothing moves. */
static void commit_grows_in_steps(fm_test_env *env, size_t step) {
    fm_arena *arena = create_arena(env, g_mode,
                                   (fm_arena_desc){.reserve_bytes = 4 * MIB, .commit_step = step});
    piece_list l = {0};
    fm_arena_stats prev = stats_of(arena);
    uint64_t growths = 0;
    while (stats_of(arena).used < 2 * MIB) {
        size_t size = 100 + (l.count * 53) % 400;
        uint8_t *p = pieces_alloc(&l, arena, size, 8);
        if (l.count > 1 && g_mode == MODE_VM) {
            /* One contiguous range: every piece follows the previous one. */
            const piece *last = &l.items[l.count - 2];
            assert_true((uintptr_t)p >= (uintptr_t)last->ptr + last->size);
        }
        fm_arena_stats s = stats_of(arena);
        assert_true(s.committed >= prev.committed);
        if (s.committed != prev.committed) {
            growths++;
            assert_int_equal(s.commit_events, prev.commit_events + 1);
        } else {
            assert_int_equal(s.commit_events, prev.commit_events);
        }
        if (g_mode == MODE_VM) {
            assert_int_equal(s.committed % step, 0);
            assert_true(s.committed >= s.used);
            assert_true(s.committed < s.used + step + 8);
        } else {
            assert_true(s.committed >= s.used);
        }
        prev = s;
    }
    /* Many commit steps (vm) or blocks (chained) later, nothing moved. */
    assert_true(growths >= 2 * MIB / step - 1);
    assert_true(prev.commit_events >= growths);
    pieces_verify(&l);
    for (size_t i = 0; i < l.count; i += 97) {
        assert_true(fm_arena_owns(arena, l.items[i].ptr, l.items[i].size));
    }
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_commit_grows_in_steps_and_keeps_pointers(void **state) {
    commit_grows_in_steps(*state, 16 * KIB);
}

/* 96 KiB is 24 pages: commits are still whole steps (a power-of-two mask
 * used to commit 32 KiB, then 128 KiB). */
static void test_arena_commit_step_need_not_be_a_power_of_two(void **state) {
    commit_grows_in_steps(*state, 96 * KIB);
}

/* ================================================================= marks */

static void test_arena_rewind_releases_nested_scopes_in_lifo_order(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 4096});
    piece_list l = {0};
    enum { LEVELS = 4 };
    fm_arena_mark marks[LEVELS];
    size_t counts[LEVELS];
    uint64_t used_at[LEVELS];
    for (int level = 0; level < LEVELS; level++) {
        marks[level] = fm_arena_get_mark(arena);
        counts[level] = l.count;
        used_at[level] = stats_of(arena).used;
        for (int i = 0; i < 10 + level * 5; i++) {
            pieces_alloc(&l, arena, (size_t)(level * 1000 + i * 131) % 3000, (size_t)1 << (i % 5));
        }
    }
    uint64_t high = stats_of(arena).used;
    /* Innermost scope: release, refill with something else, release again. */
    for (int level = LEVELS - 1; level >= 0; level--) {
        void *released = l.items[counts[level]].ptr;
        size_t released_size = l.items[counts[level]].size;
        rewind_ok(env, arena, marks[level]);
        pieces_truncate(&l, counts[level]);
        pieces_verify(&l);
        assert_int_equal(stats_of(arena).used, used_at[level]);
        if (released_size) assert_false(fm_arena_owns(arena, released, released_size));
        for (int i = 0; i < 7; i++) pieces_alloc(&l, arena, 2500, 16);
        pieces_verify(&l);
        /* The same mark again: still valid, releases the refill. */
        rewind_ok(env, arena, marks[level]);
        pieces_truncate(&l, counts[level]);
        assert_int_equal(stats_of(arena).used, used_at[level]);
        pieces_verify(&l);
    }
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.used, 0);
    assert_true(s.high_water >= high);
    assert_int_equal(s.rewinds, 2 * LEVELS);
    assert_int_equal(s.resets, 0);
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_rewind_to_a_mark_of_another_arena_is_bad_mark(void **state) {
    fm_test_env *env = *state;
    fm_arena *a = create_arena(env, g_mode, (fm_arena_desc){.name = "mine"});
    fm_arena *b = create_arena(env, g_mode, (fm_arena_desc){.name = "theirs"});
    piece_list l = {0};
    fm_arena_mark b_empty = fm_arena_get_mark(b);
    void *bp = fm_arena_alloc(b, 64, 8);
    assert_non_null(bp);
    fm_arena_mark b_used = fm_arena_get_mark(b);
    for (int i = 0; i < 10; i++) pieces_alloc(&l, a, 100, 8);
    fm_arena_stats b_before = stats_of(b);
    expect_bad_mark(env, a, b_empty, &l, "mark of another arena at position 0");
    expect_bad_mark(env, a, b_used, &l, "mark of another arena below the top");
    expect_bad_mark(env, a, (fm_arena_mark){0}, &l, "zero mark");
    assert_false(fm_arena_owns(a, bp, 64));
    fm_arena_stats b_after = stats_of(b);
    assert_stats_same(&b_before, &b_after, 0);
    assert_arena_usable(a, &l);
    pieces_free(&l);
    fm_arena_destroy(b);
    destroy_clean(env, a);
}

static void test_arena_rewind_to_a_mark_above_the_top_is_bad_mark(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "above"});
    piece_list l = {0};
    pieces_alloc(&l, arena, 200, 8);
    fm_arena_mark low = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 1000, 8);
    fm_arena_mark high = fm_arena_get_mark(arena);
    rewind_ok(env, arena, low);
    pieces_truncate(&l, 1);
    expect_bad_mark(env, arena, high, &l, "mark above the top after a rewind");
    /* A mark past the current top. */
    fm_arena_mark here = fm_arena_get_mark(arena);
    fm_arena_mark past = here;
    past.pos += 64;
    expect_bad_mark(env, arena, past, &l, "position past the top");
    rewind_ok(env, arena, here);
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_rewind_to_a_mark_released_by_an_earlier_rewind_is_bad_mark(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "stale",
                                                                  .commit_step = 4096});
    piece_list l = {0};
    pieces_alloc(&l, arena, 64, 8);
    fm_arena_mark m1 = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 500, 8);
    fm_arena_mark m2 = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 500, 8);
    fm_arena_mark m3 = fm_arena_get_mark(arena);
    rewind_ok(env, arena, m1);
    pieces_truncate(&l, 1);
    /* Allocate past m2 and m3 again: they are below the top, but stale. */
    for (int i = 0; i < 10; i++) pieces_alloc(&l, arena, 700, 8); /* crosses blocks too */
    expect_bad_mark(env, arena, m2, &l, "m2 after rewind(m1)");
    expect_bad_mark(env, arena, m3, &l, "m3 after rewind(m1)");
    /* m1 itself is still good, and so is a mark taken after the rewind. */
    fm_arena_mark m4 = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 32, 8);
    rewind_ok(env, arena, m4);
    pieces_truncate(&l, l.count - 1);
    expect_bad_mark(env, arena, m2, &l, "m2 after a later, unrelated rewind");
    rewind_ok(env, arena, m1);
    pieces_truncate(&l, 1);
    /* Nested: rewinding to an outer mark invalidates every inner one. */
    fm_arena_mark outer = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 300, 8);
    fm_arena_mark inner1 = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 300, 8);
    fm_arena_mark inner2 = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 300, 8);
    rewind_ok(env, arena, inner1);
    pieces_truncate(&l, 2);
    for (int i = 0; i < 3; i++) pieces_alloc(&l, arena, 300, 8);
    expect_bad_mark(env, arena, inner2, &l, "inner2 after rewind(inner1)");
    rewind_ok(env, arena, outer);
    pieces_truncate(&l, 1);
    for (int i = 0; i < 5; i++) pieces_alloc(&l, arena, 300, 8);
    expect_bad_mark(env, arena, inner1, &l, "inner1 after rewind(outer)");
    expect_bad_mark(env, arena, inner2, &l, "inner2 after rewind(outer)");
    assert_int_equal(stats_of(arena).rewinds, 5);
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* The header promises BAD_MARK for any mark an earlier rewind released, however
 * many rewinds happened since. */
static void test_arena_mark_released_many_rewinds_ago_is_still_bad_mark(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "old_stale"});
    piece_list l = {0};
    fm_arena_mark m0 = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 100, 1);
    fm_arena_mark stale = fm_arena_get_mark(arena);
    rewind_ok(env, arena, m0);
    pieces_truncate(&l, 0);
    pieces_alloc(&l, arena, 100, 1);
    expect_bad_mark(env, arena, stale, &l, "right after the rewind");
    /* Scopes above it, each released at a higher position than the last. */
    for (int i = 0; i < 100; i++) {
        pieces_alloc(&l, arena, 1, 1);
        fm_arena_mark m = fm_arena_get_mark(arena);
        assert_non_null(fm_arena_alloc(arena, 8, 1));
        rewind_ok(env, arena, m);
        if (i % 10 == 9) {
            char label[64];
            snprintf(label, sizeof label, "after %d more rewinds", i + 1);
            expect_bad_mark(env, arena, stale, &l, label);
        }
    }
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* Chained mode: rewinds stand even when the backing allocator refuses
 * everything (bookkeeping for marks included), and nothing leaks. */
static void test_arena_chained_rewinds_work_while_the_allocator_refuses(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, MODE_CHAINED, (fm_arena_desc){.name = "refusing"});
    piece_list l = {0};
    fm_test_allocator_fail_from(&env->alloc, 1);
    for (int i = 0; i < 100; i++) {
        pieces_alloc(&l, arena, 3, 1); /* all within the first block */
        fm_arena_mark m = fm_arena_get_mark(arena);
        uint64_t used = stats_of(arena).used;
        assert_non_null(fm_arena_alloc(arena, 8, 1));
        rewind_ok(env, arena, m);
        assert_int_equal(stats_of(arena).used, used);
    }
    pieces_verify(&l);
    fm_test_allocator_recover(&env->alloc);
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* ================================================================= reset */

static void test_arena_reset_releases_everything_and_keeps_high_water(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 4096});
    piece_list l = {0};
    for (int i = 0; i < 50; i++) pieces_alloc(&l, arena, 777, 16);
    fm_arena_stats before = stats_of(arena);
    uint64_t peak = before.used;
    fm_arena_reset(arena);
    pieces_truncate(&l, 0);
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.used, 0);
    assert_int_equal(s.high_water, peak);
    assert_int_equal(s.resets, 1);
    assert_int_equal(s.rewinds, 0);
    assert_int_equal(s.total_allocs, before.total_allocs);
    assert_int_equal(s.committed, before.committed); /* reset gives nothing back */
    for (int i = 0; i < 10; i++) pieces_alloc(&l, arena, 777, 16);
    assert_int_equal(stats_of(arena).high_water, peak);
    for (int i = 0; i < 60; i++) pieces_alloc(&l, arena, 777, 16);
    assert_true(stats_of(arena).high_water > peak);
    pieces_verify(&l);
    fm_arena_reset(arena);
    fm_arena_reset(arena);
    assert_int_equal(stats_of(arena).resets, 3);
    assert_int_equal(stats_of(arena).used, 0);
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_marks_taken_before_a_reset_are_stale(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "reset_marks",
                                                                  .commit_step = 4096});
    piece_list l = {0};
    pieces_alloc(&l, arena, 100, 8);
    fm_arena_mark m1 = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 5000, 8);
    fm_arena_mark m2 = fm_arena_get_mark(arena);
    fm_arena_reset(arena);
    pieces_truncate(&l, 0);
    expect_bad_mark(env, arena, m1, &l, "m1 after reset, above the top");
    for (int i = 0; i < 20; i++) pieces_alloc(&l, arena, 1000, 8);
    expect_bad_mark(env, arena, m1, &l, "m1 after reset, below the top");
    expect_bad_mark(env, arena, m2, &l, "m2 after reset, below the top");
    fm_arena_mark fresh = fm_arena_get_mark(arena);
    pieces_alloc(&l, arena, 100, 8);
    rewind_ok(env, arena, fresh);
    pieces_truncate(&l, l.count - 1);
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* ============================================================== decommit */

static void test_arena_decommit_gives_back_memory_above_the_top(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 16 * KIB});
    piece_list l = {0};
    for (int i = 0; i < 3; i++) pieces_alloc(&l, arena, 1000, 8);
    fm_arena_mark m = fm_arena_get_mark(arena);
    for (int i = 0; i < 120; i++) pieces_alloc(&l, arena, 10000, 8);
    rewind_ok(env, arena, m);
    pieces_truncate(&l, 3);
    fm_arena_stats before = stats_of(arena);
    size_t live_before = env->alloc.live_bytes;
    assert_true(before.committed >= 1 * MIB);
    size_t released = fm_arena_decommit(arena, 0);
    fm_arena_stats after = stats_of(arena);
    assert_true(released > 0);
    assert_int_equal(after.committed, before.committed - released);
    assert_true(after.committed >= after.used);
    assert_true(after.committed < before.committed / 4);
    assert_int_equal(after.decommit_events, before.decommit_events + 1);
    assert_int_equal(after.used, before.used);
    assert_int_equal(after.high_water, before.high_water);
    if (g_mode == MODE_CHAINED) assert_int_equal(env->alloc.live_bytes, live_before - released);
    pieces_verify(&l);
    /* Nothing more to give back: 0, no event. */
    assert_int_equal(fm_arena_decommit(arena, 0), 0);
    assert_int_equal(stats_of(arena).decommit_events, after.decommit_events);

    /* Grow again (new commits), then keep 256 KiB above an empty top. */
    for (int i = 0; i < 100; i++) pieces_alloc(&l, arena, 10000, 8);
    assert_true(stats_of(arena).commit_events > after.commit_events);
    pieces_verify(&l);
    fm_arena_reset(arena);
    pieces_truncate(&l, 0);
    size_t keep = 256 * KIB;
    before = stats_of(arena);
    released = fm_arena_decommit(arena, keep);
    after = stats_of(arena);
    assert_true(released > 0);
    assert_int_equal(after.committed, before.committed - released);
    assert_true(after.committed >= keep);
    assert_true(after.committed < before.committed);
    /* And the arena still works over the kept and the new memory. */
    for (int i = 0; i < 120; i++) pieces_alloc(&l, arena, 10000, 8);
    pieces_verify(&l);
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* keep_bytes beyond everything committed keeps everything. */
static void test_arena_decommit_keeping_more_than_committed_releases_nothing(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 16 * KIB});
    piece_list l = {0};
    for (int i = 0; i < 40; i++) pieces_alloc(&l, arena, 1000, 8);
    fm_arena_mark m = fm_arena_get_mark(arena);
    for (int i = 0; i < 40; i++) pieces_alloc(&l, arena, 10000, 8);
    rewind_ok(env, arena, m);
    pieces_truncate(&l, 40);
    const size_t keeps[] = {64 * MIB, 64 * MIB + 1, SIZE_MAX / 2, SIZE_MAX - 4096, SIZE_MAX - 1,
                            SIZE_MAX};
    for (size_t i = 0; i < sizeof keeps / sizeof keeps[0]; i++) {
        fm_arena_stats before = stats_of(arena);
        size_t released = fm_arena_decommit(arena, keeps[i]);
        if (released) {
            print_error("[%s] decommit(keep_bytes %zu) released %zu bytes of %llu committed\n",
                        mode_name(g_mode), keeps[i], released,
                        (unsigned long long)before.committed);
        }
        /* Checked before touching the pieces: a wrong answer unmapped them. */
        assert_int_equal(released, 0);
        fm_arena_stats after = stats_of(arena);
        assert_stats_same(&before, &after, 0);
    }
    pieces_verify(&l);
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

#ifdef _WIN32
/* The working set: the pages of the process in memory. */
static bool resident_bytes(size_t *out) {
    PROCESS_MEMORY_COUNTERS pmc;
    if (!K32GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc)) return false;
    *out = pmc.WorkingSetSize;
    return true;
}
#else
static bool resident_bytes(size_t *out) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return false;
    unsigned long size = 0, resident = 0;
    int n = fscanf(f, "%lu %lu", &size, &resident);
    fclose(f);
    if (n != 2) return false;
    *out = (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
    return true;
}
#endif

static void test_arena_decommit_returns_pages_to_the_os(void **state) {
    fm_test_env *env = *state;
    size_t rss0 = 0, rss1 = 0, rss2 = 0;
    bool have_proc = resident_bytes(&rss0);
    /* No /proc: still check decommit's own accounting. */
    if (!have_proc) print_message("no /proc/self/statm: checking committed bytes only\n");
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "rss"});
    assert_non_null(arena);
    const size_t touched = 32 * MIB;
    uint8_t *p = fm_arena_alloc(arena, touched, 4096);
    assert_non_null(p);
    memset(p, 0x5A, touched);
    assert_true(stats_of(arena).committed >= touched);
    if (have_proc) assert_true(resident_bytes(&rss1));
    fm_arena_reset(arena);
    size_t released = fm_arena_decommit(arena, 0);
    assert_true(released >= touched);
    assert_int_equal(stats_of(arena).committed, 0);
    if (have_proc) {
        assert_true(resident_bytes(&rss2));
        /* The machine is noisy: ask for three quarters of the 32 MiB. */
        const size_t slack = touched / 4;
        if (rss1 < rss0 + touched - slack || rss2 + touched - slack > rss1) {
            print_error("rss before %zu KiB, touched %zu KiB, after decommit %zu KiB\n",
                        rss0 / KIB, rss1 / KIB, rss2 / KIB);
        }
        assert_true(rss1 >= rss0 + touched - slack);
        assert_true(rss2 + touched - slack <= rss1);
    }
    /* Memory comes back (zeroed by the OS, but the contract only promises
     * usable bytes) when the arena grows again. */
    uint8_t *q = fm_arena_alloc(arena, MIB, 16);
    assert_non_null(q);
    memset(q, 1, MIB);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

/* ================================================================== owns */

static void test_arena_owns_only_bytes_below_the_top(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.commit_step = 4096});
    fm_arena *other = create_arena(env, g_mode, (fm_arena_desc){.name = "other"});
    int local = 0;
    uint8_t *a = fm_arena_alloc(arena, 100, 8);
    assert_non_null(a);
    assert_true(fm_arena_owns(arena, a, 100));
    assert_true(fm_arena_owns(arena, a + 50, 50));
    assert_true(fm_arena_owns(arena, a + 99, 1));
    assert_true(fm_arena_owns(arena, a + 100, 0));
    assert_false(fm_arena_owns(arena, a, 101));
    assert_false(fm_arena_owns(arena, a + 100, 1));
    assert_false(fm_arena_owns(arena, a, SIZE_MAX));
    assert_false(fm_arena_owns(arena, NULL, 0));
    assert_false(fm_arena_owns(arena, &local, sizeof local));
    uint8_t *o = fm_arena_alloc(other, 100, 8);
    assert_non_null(o);
    assert_false(fm_arena_owns(arena, o, 1));
    assert_false(fm_arena_owns(other, a, 1));

    fm_arena_mark m = fm_arena_get_mark(arena);
    uint64_t blocks = stats_of(arena).commit_events;
    uint8_t *b = fm_arena_alloc(arena, 3000, 8);
    uint8_t *c = fm_arena_alloc(arena, 6000, 8); /* a new block in chained mode */
    assert_non_null(b);
    assert_non_null(c);
    if (g_mode == MODE_CHAINED) assert_int_equal(stats_of(arena).commit_events, blocks + 1);
    assert_true(fm_arena_owns(arena, a, 100));
    assert_true(fm_arena_owns(arena, b, 3000));
    assert_true(fm_arena_owns(arena, c, 6000));
    assert_true(fm_arena_owns(arena, b + 3000, 0));
    /* vm: c follows b in one range. chained: the rest of b's block never
     * became arena memory. */
    assert_int_equal(fm_arena_owns(arena, b, 3001), g_mode == MODE_VM);
    rewind_ok(env, arena, m);
    assert_false(fm_arena_owns(arena, b, 1));
    assert_false(fm_arena_owns(arena, c, 1));
    assert_true(fm_arena_owns(arena, a, 100));
    fm_arena_reset(arena);
    assert_false(fm_arena_owns(arena, a, 1));
    fm_arena_destroy(other);
    destroy_clean(env, arena);
}

/* ======================================================== chained blocks */

static void test_arena_chained_mode_returns_every_byte_at_destroy(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, MODE_CHAINED,
                                   (fm_arena_desc){.name = "chain", .commit_step = 4096,
                                                   .reserve_bytes = 8 * MIB});
    piece_list l = {0};
    for (int round = 0; round < 5; round++) {
        fm_arena_mark m = fm_arena_get_mark(arena);
        size_t keep = l.count;
        for (int i = 0; i < 40; i++) {
            pieces_alloc(&l, arena, (size_t)((i * 2654435761u) % 9000), (size_t)1 << (i % 13));
        }
        pieces_verify(&l);
        fm_arena_stats s = stats_of(arena);
        assert_true(env->alloc.live_bytes >= s.committed);
        assert_true(s.committed <= s.reserved);
        if (round % 2) {
            rewind_ok(env, arena, m);
            pieces_truncate(&l, keep);
        }
        if (round == 3) {
            fm_arena_decommit(arena, 0);
            assert_true(env->alloc.live_bytes >= stats_of(arena).committed);
        }
    }
    fm_arena_reset(arena);
    pieces_truncate(&l, 0);
    for (int i = 0; i < 30; i++) pieces_alloc(&l, arena, 20000, 64);
    pieces_verify(&l);
    assert_true(env->alloc.live_blocks > 1);
    assert_int_equal(env->alloc.errors, 0);
    assert_int_equal(env->errors.count, 0);
    pieces_free(&l);
    destroy_clean(env, arena);
}

static void test_arena_chained_reserve_bytes_limits_the_blocks(void **state) {
    fm_test_env *env = *state;
    const size_t reserve = 64 * KIB;
    fm_arena *arena = create_arena(env, MODE_CHAINED,
                                   (fm_arena_desc){.name = "chain_limit",
                                                   .reserve_bytes = reserve,
                                                   .commit_step = 16 * KIB});
    size_t self_bytes = env->alloc.live_bytes - stats_of(arena).committed;
    piece_list l = {0};
    void *p;
    while ((p = fm_arena_alloc(arena, 1000, 8)) != NULL) pieces_push(&l, p, 1000);
    assert_int_equal(fm_last_error(), FM_ERR_ARENA_FULL);
    fm_test_errors_reset(&env->errors);
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.reserved, reserve);
    assert_true(s.committed <= reserve);
    assert_true(env->alloc.live_bytes - self_bytes <= reserve);
    assert_true(l.count >= 40); /* most of the reserve was usable */
    uint64_t calls = env->alloc.alloc_calls;
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, 1000, 8));
    EXPECT_ALLOC_FAILS(env, arena, FM_ERR_ARENA_FULL, fm_arena_alloc(arena, reserve, 1));
    assert_int_equal(env->alloc.alloc_calls, calls); /* refused before asking */
    pieces_verify(&l);
    /* A rewind frees room that the next allocations reuse, no new blocks. */
    fm_arena_reset(arena);
    size_t count = l.count;
    pieces_truncate(&l, 0);
    for (size_t i = 0; i < count; i++) pieces_alloc(&l, arena, 1000, 8);
    assert_int_equal(env->alloc.alloc_calls, calls);
    pieces_verify(&l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* A released block is reused only when the new request, aligned, fits it. */
static void test_arena_chained_spare_block_is_reused_only_when_the_request_fits(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, MODE_CHAINED,
                                   (fm_arena_desc){.name = "spares", .commit_step = 4096});
    piece_list l = {0};
    /* Fill the first block so each later allocation needs a block of its own. */
    while (stats_of(arena).commit_events == 1) pieces_alloc(&l, arena, 500, 8);
    fm_arena_mark m = fm_arena_get_mark(arena);
    size_t kept = l.count;
    for (int round = 0; round < 3; round++) {
        /* Small blocks, released to the spare list... */
        for (int i = 0; i < 4; i++) pieces_alloc(&l, arena, 4000, 8);
        pieces_verify(&l);
        rewind_ok(env, arena, m);
        pieces_truncate(&l, kept);
        /* ...then requests a spare could hold only without their padding. */
        for (int i = 0; i < 4; i++) {
            uint8_t *p = pieces_alloc(&l, arena, 8000 + (size_t)i * 100, 4096);
            assert_true(fm_arena_owns(arena, p, 8000 + (size_t)i * 100));
        }
        pieces_alloc(&l, arena, 100, 4096);
        pieces_verify(&l);
        rewind_ok(env, arena, m);
        pieces_truncate(&l, kept);
    }
    pieces_verify(&l);
    pieces_free(&l);
    destroy_clean(env, arena);
}

/* One pass of a workload with marks, rewinds and every allocating call. A
 * NULL must be the armed fault: ARENA_FULL, nothing changed; the same call
 * then succeeds. Returns whether a fault was hit. */
static bool run_block_fault_workload(fm_test_env *env, uint64_t fail_at, bool fail_from) {
    fm_arena *arena = create_arena(env, MODE_CHAINED,
                                   (fm_arena_desc){.name = "faulty", .commit_step = 4096});
    piece_list l = {0};
    if (fail_from) {
        fm_test_allocator_fail_from(&env->alloc, fail_at);
    } else {
        fm_test_allocator_fail_nth(&env->alloc, fail_at);
    }
    bool hit = false;
    fm_arena_mark m = {0};
    size_t mark_count = 0;
    for (int i = 0; i < 60; i++) {
        if (i == 15) {
            m = fm_arena_get_mark(arena);
            mark_count = l.count;
        }
        if (i == 35) {
            rewind_ok(env, arena, m);
            pieces_truncate(&l, mark_count);
        }
        size_t size = (size_t)((i * 7919) % 9000);
        size_t align = (size_t)1 << (i % 13);
        int kind = i % 3;
        for (int attempt = 0;; attempt++) {
            fm_arena_stats before = stats_of(arena);
            int errors_before = env->errors.count;
            fm_clear_error();
            uint8_t *p = kind == 0   ? fm_arena_alloc(arena, size, align)
                         : kind == 1 ? fm_arena_alloc_zero(arena, size, align)
                                     : fm_arena_alloc_array(arena, size, 1, align);
            if (p) {
                assert_true(fm_is_aligned(p, align));
                if (kind) assert_true(all_zero(p, size));
                pieces_push(&l, p, size);
                break;
            }
            check_failed_alloc(env, arena, &before, errors_before, p, FM_ERR_ARENA_FULL,
                               "allocation with a failing backing allocator");
            assert_true(env->alloc.failed_calls > 0);
            pieces_verify(&l);
            hit = true;
            /* fail_from keeps failing until recovered. */
            if (fail_from && attempt == 2) fm_test_allocator_recover(&env->alloc);
            assert_true(attempt < 3);
        }
    }
    fm_test_allocator_recover(&env->alloc);
    pieces_verify(&l);
    assert_arena_usable(arena, &l);
    pieces_free(&l);
    fm_test_errors_reset(&env->errors);
    destroy_clean(env, arena);
    return hit;
}

static void test_arena_chained_block_failure_at_every_n_is_arena_full_and_recovers(void **state) {
    fm_test_env *env = *state;
    uint64_t n = 1;
    while (run_block_fault_workload(env, n, false)) n++;
    /* The workload needs many blocks; each of them failed once. */
    assert_true(n > 10);
    uint64_t m = 1;
    while (run_block_fault_workload(env, m, true)) m++;
    assert_int_equal(m, n);
}

static void test_arena_chained_create_failure_at_every_n_leaks_nothing(void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    uint64_t n = 1;
    for (;; n++) {
        fm_test_errors_reset(&env->errors);
        fm_clear_error();
        fm_test_allocator_fail_nth(&env->alloc, n);
        fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "create_fault",
                                                            .allocator = al});
        fm_test_allocator_recover(&env->alloc);
        if (arena) {
            fm_arena_destroy(arena);
            fm_test_allocator_assert_clean(&env->alloc);
            break;
        }
        assert_int_not_equal(fm_last_error(), FM_OK);
        assert_int_equal(env->errors.count, 1);
        assert_true(fm_test_contains(env->errors.message, "create_fault"));
        fm_test_allocator_assert_clean(&env->alloc);
    }
    assert_true(n >= 3); /* the arena itself and its first block */
}

/* Header: create fails with FM_ERR_OUT_OF_MEMORY when the allocator refuses. */
static void test_arena_chained_create_reports_out_of_memory_when_the_allocator_refuses(
    void **state) {
    fm_test_env *env = *state;
    fm_allocator al = fm_test_allocator_get(&env->alloc);
    for (uint64_t n = 1;; n++) {
        fm_clear_error();
        fm_test_allocator_fail_nth(&env->alloc, n);
        fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "create_oom",
                                                            .allocator = al});
        fm_test_allocator_recover(&env->alloc);
        if (arena) {
            fm_arena_destroy(arena);
            break;
        }
        if (fm_last_error() != FM_ERR_OUT_OF_MEMORY) {
            print_error("backing alloc call %llu refused: create reported %s (%s)\n",
                        (unsigned long long)n, fm_error_name(fm_last_error()),
                        fm_last_error_message());
        }
        assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
    }
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ================================================================= stats */

static void test_arena_stats_count_every_operation(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode,
                                   (fm_arena_desc){.name = "counted", .reserve_bytes = 256 * KIB,
                                                   .commit_step = 4096});
    fm_arena_stats s0 = stats_of(arena);
    assert_int_equal(s0.reserved, 256 * KIB);
    assert_non_null(fm_arena_alloc(arena, 10, 1));
    assert_non_null(fm_arena_alloc_zero(arena, 20, 1));
    assert_non_null(fm_arena_alloc_array(arena, 3, 10, 1));
    fm_arena_mark m = fm_arena_get_mark(arena);
    assert_non_null(fm_arena_alloc(arena, 40, 1));
    assert_null(fm_arena_alloc(arena, 8, 3));
    assert_null(fm_arena_alloc(arena, 512 * KIB, 1));
    assert_null(fm_arena_alloc_array(arena, SIZE_MAX, 2, 1));
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.used, 100);
    assert_int_equal(s.high_water, 100);
    assert_int_equal(s.total_allocs, 4);
    assert_int_equal(s.failed_allocs, 3);
    assert_true(s.commit_events >= 1);
    rewind_ok(env, arena, m);
    fm_arena_rewind(arena, (fm_arena_mark){0}); /* rejected: not counted */
    s = stats_of(arena);
    assert_int_equal(s.used, 60);
    assert_int_equal(s.high_water, 100);
    assert_int_equal(s.rewinds, 1);
    fm_arena_reset(arena);
    s = stats_of(arena);
    assert_int_equal(s.used, 0);
    assert_int_equal(s.resets, 1);
    assert_int_equal(s.rewinds, 1);
    assert_int_equal(s.total_allocs, 4);
    assert_int_equal(s.failed_allocs, 3);
    assert_int_equal(s.decommit_events, 0);
    assert_string_equal(s.name, "counted");
    assert_int_equal(env->errors.count, 4);
    destroy_clean(env, arena);
}

static void test_arena_get_stats_ignores_null_out(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){0});
    fm_arena_get_stats(arena, NULL);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, arena);
}

/* ============================================================ debug aids */

typedef fm_test_child child_result;

static arena_mode g_child_mode;

#define run_child fm_test_run_child

static void expect_child_reads_poison(void (*fn)(void)) {
    child_result r = run_child(fn);
#if defined(FM_TEST_ASAN)
    if (!strstr(r.output, "use-after-poison")) print_error("child output:\n%s\n", r.output);
    assert_false(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.output, "use-after-poison"));
#else
    if (fm_test_under_valgrind()) {
        /* Memcheck run: bytes above the top or released are no-access. */
        assert_true(fm_test_child_caught(&r));
        return;
    }
    /* Without ASan the read is harmless (the memory is still the arena's)
     * and the child reports what it saw. */
    if (!(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)) {
        print_error("child status %d, output:\n%s\n", r.status, r.output);
    }
    assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    assert_non_null(strstr(r.output, "read "));
#endif
}

static fm_test_allocator g_child_alloc;

static fm_arena *child_arena(void) {
    fm_arena_desc desc = {.name = "child", .commit_step = 4096};
    if (g_child_mode == MODE_CHAINED) {
        fm_test_allocator_init(&g_child_alloc);
        desc.allocator = fm_test_allocator_get(&g_child_alloc);
    }
    fm_arena *arena = fm_arena_create(&desc);
    if (!arena) _exit(3);
    return arena;
}

static void child_read(const volatile unsigned char *p) {
    unsigned char v = *p;
    fprintf(stderr, "read %u\n", v);
}

static void read_above_the_top(void) {
    fm_arena *arena = child_arena();
    unsigned char *p = fm_arena_alloc(arena, 64, 16);
    if (!p) _exit(4);
    memset(p, 1, 64);
    child_read(p + 64 + 16);
}

static void read_after_rewind(void) {
    fm_arena *arena = child_arena();
    (void)fm_arena_alloc(arena, 64, 16);
    fm_arena_mark m = fm_arena_get_mark(arena);
    unsigned char *p = fm_arena_alloc(arena, 64, 16);
    if (!p) _exit(4);
    memset(p, 1, 64);
    fm_arena_rewind(arena, m);
    child_read(p + 16);
}

static void read_after_rewind_across_blocks(void) {
    fm_arena *arena = child_arena();
    fm_arena_mark m = fm_arena_get_mark(arena);
    unsigned char *p = NULL;
    for (int i = 0; i < 10; i++) {
        p = fm_arena_alloc(arena, 3000, 16); /* several blocks in chained mode */
        if (!p) _exit(4);
        memset(p, 1, 3000);
    }
    fm_arena_rewind(arena, m);
    child_read(p + 1024);
}

static void read_after_reset(void) {
    fm_arena *arena = child_arena();
    unsigned char *p = fm_arena_alloc(arena, 256, 16);
    if (!p) _exit(4);
    memset(p, 1, 256);
    fm_arena_reset(arena);
    child_read(p + 32);
}

static void test_arena_bytes_above_the_top_are_poisoned_under_asan(void **state) {
    (void)state;
    g_child_mode = g_mode;
    expect_child_reads_poison(read_above_the_top);
}

static void test_arena_bytes_released_by_rewind_are_poisoned_under_asan(void **state) {
    (void)state;
    g_child_mode = g_mode;
    expect_child_reads_poison(read_after_rewind);
    expect_child_reads_poison(read_after_rewind_across_blocks);
}

static void test_arena_bytes_released_by_reset_are_poisoned_under_asan(void **state) {
    (void)state;
    g_child_mode = g_mode;
    expect_child_reads_poison(read_after_reset);
}

/* Released bytes hold 0xDD in Debug builds with desc.poison. Without ASan the
 * test reads them where they lie; with ASan (where that read is a report) it
 * allocates them again without zeroing, which hands the same bytes back.
 * Release builds do no per-byte work: the old contents stay. */
static void expect_released_fill(const uint8_t *p, size_t n, uint8_t old, const char *what) {
#ifdef NDEBUG
    const uint8_t want = old;
#else
    const uint8_t want = 0xDD;
    (void)old;
#endif
    fm_test_allow_read(p, n);
    for (size_t i = 0; i < n; i++) {
        if (p[i] != want) {
            print_error("[%s] %s: byte %zu of %zu is 0x%02X, expected 0x%02X\n",
                        mode_name(g_mode), what, i, n, p[i], want);
            fail();
        }
    }
}

static void test_arena_poison_fills_released_bytes_in_debug_builds(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_arena(env, g_mode, (fm_arena_desc){.name = "poisoned",
                                                                  .commit_step = 4096,
                                                                  .poison = true});
    uint8_t *keep = fm_arena_alloc(arena, 100, 8);
    assert_non_null(keep);
    memset(keep, 0x11, 100);
    const size_t sizes[] = {64, 3000, 3000, 3000}; /* the last ones cross blocks */
    for (int op = 0; op < 2; op++) {
        fm_arena_mark m = fm_arena_get_mark(arena);
        uint8_t *p[4];
        for (int i = 0; i < 4; i++) {
            p[i] = fm_arena_alloc(arena, sizes[i], 8);
            assert_non_null(p[i]);
            memset(p[i], 0xEE, sizes[i]);
        }
        if (op == 0) {
            rewind_ok(env, arena, m);
        } else {
            fm_arena_reset(arena);
        }
#if defined(FM_TEST_ASAN)
        /* Same sizes, same order: the same bytes come back. */
        if (op == 1) {
            uint8_t *k = fm_arena_alloc(arena, 100, 8);
            assert_ptr_equal(k, keep);
            expect_released_fill(k, 100, 0x11, "kept bytes after reset");
        }
        for (int i = 0; i < 4; i++) {
            uint8_t *q = fm_arena_alloc(arena, sizes[i], 8);
            assert_ptr_equal(q, p[i]);
            expect_released_fill(q, sizes[i], 0xEE, op == 0 ? "after rewind" : "after reset");
        }
        if (op == 0) {
            rewind_ok(env, arena, m);
        } else {
            fm_arena_reset(arena);
        }
#else
        for (int i = 0; i < 4; i++) {
            expect_released_fill(p[i], sizes[i], 0xEE, op == 0 ? "after rewind" : "after reset");
        }
        if (op == 1) expect_released_fill(keep, 100, 0x11, "kept bytes after reset");
#endif
        if (op == 0) {
            for (int i = 0; i < 100; i++) assert_int_equal(keep[i], 0x11);
        }
    }
    destroy_clean(env, arena);
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
        T(test_arena_create_with_defaults_resolves_the_desc),
        T_BOTH(test_arena_get_desc_keeps_given_values),
        T_BOTH(test_arena_keeps_its_own_copy_of_the_name),
        T(test_arena_create_with_null_desc_fails_with_invalid_arg),
        T(test_arena_create_rejects_invalid_descs_naming_the_arena),
        T(test_arena_create_rejects_commit_step_above_the_default_reserve),
        T_BOTH(test_arena_create_accepts_commit_step_equal_to_reserve),
        T(test_arena_create_fails_when_address_space_cannot_be_reserved),
        T(test_arena_destroy_of_null_is_a_noop),
        T_BOTH(test_arena_alloc_of_size_zero_gives_an_aligned_non_null_pointer),
        T_BOTH(test_arena_alloc_aligns_to_every_power_of_two_up_to_4096),
        T_BOTH(test_arena_alloc_with_align_zero_uses_max_align_t),
        T_BOTH(test_arena_mixed_sizes_keep_their_contents_and_never_overlap),
        T_BOTH(test_arena_inline_and_out_of_line_alloc_share_the_top),
        T_BOTH(test_arena_alloc_rejects_bad_alignment_and_keeps_its_state),
        T_BOTH(test_arena_alloc_rejects_sizes_that_overflow_with_invalid_arg),
        T_BOTH(test_arena_alloc_of_size_max_is_invalid_arg_on_an_empty_arena),
        T_BOTH(test_arena_alloc_of_half_the_address_space_is_arena_full),
        T_BOTH(test_arena_new_array_rejects_count_times_size_overflow),
        T_BOTH(test_arena_alloc_past_reserve_fails_with_arena_full_and_keeps_its_state),
        T(test_arena_allocation_of_exactly_the_reserve_fits),
        T_BOTH(test_arena_alloc_zero_clears_bytes_a_rewind_released),
        T_BOTH(test_arena_new_and_new_array_zero_and_align_to_the_type),
        T_BOTH(test_arena_commit_grows_in_steps_and_keeps_pointers),
        T_BOTH(test_arena_commit_step_need_not_be_a_power_of_two),
        T_BOTH(test_arena_rewind_releases_nested_scopes_in_lifo_order),
        T_BOTH(test_arena_rewind_to_a_mark_of_another_arena_is_bad_mark),
        T_BOTH(test_arena_rewind_to_a_mark_above_the_top_is_bad_mark),
        T_BOTH(test_arena_rewind_to_a_mark_released_by_an_earlier_rewind_is_bad_mark),
        T_BOTH(test_arena_mark_released_many_rewinds_ago_is_still_bad_mark),
        T_BOTH(test_arena_reset_releases_everything_and_keeps_high_water),
        T_BOTH(test_arena_marks_taken_before_a_reset_are_stale),
        T_BOTH(test_arena_decommit_gives_back_memory_above_the_top),
        T_BOTH(test_arena_decommit_keeping_more_than_committed_releases_nothing),
        T(test_arena_decommit_returns_pages_to_the_os),
        T_BOTH(test_arena_owns_only_bytes_below_the_top),
        T(test_arena_chained_mode_returns_every_byte_at_destroy),
        T(test_arena_chained_reserve_bytes_limits_the_blocks),
        T(test_arena_chained_spare_block_is_reused_only_when_the_request_fits),
        T(test_arena_chained_rewinds_work_while_the_allocator_refuses),
        T(test_arena_chained_block_failure_at_every_n_is_arena_full_and_recovers),
        T(test_arena_chained_create_failure_at_every_n_leaks_nothing),
        T(test_arena_chained_create_reports_out_of_memory_when_the_allocator_refuses),
        T_BOTH(test_arena_stats_count_every_operation),
        T_BOTH(test_arena_get_stats_ignores_null_out),
        T_BOTH(test_arena_bytes_above_the_top_are_poisoned_under_asan),
        T_BOTH(test_arena_bytes_released_by_rewind_are_poisoned_under_asan),
        T_BOTH(test_arena_bytes_released_by_reset_are_poisoned_under_asan),
        T_BOTH(test_arena_poison_fills_released_bytes_in_debug_builds),
    };
    char group[64];
    snprintf(group, sizeof group, "arena [%s]", sync);
    return cmocka_run_group_tests_name(group, tests, NULL, NULL);
}
