/* tests/memory/test_arena_huge.c: fm_arena_desc.huge_pages against
 * framemem/arena.h.
 *
 * The contract: with huge_pages, a virtual-memory arena reserves at a 2 MiB
 * boundary, advises the range for transparent huge pages and commits (and
 * decommits) whole 2 MiB pages, where the OS offers them; elsewhere it is an
 * ordinary arena, and its resolved desc and stats say which one it is. An
 * arena with an allocator rejects the flag.
 *
 * Whether the OS offers huge pages is read here on its own (THP mode in
 * sysfs, the process's PR_GET_THP_DISABLE), so each test checks the branch
 * the machine takes; the fallback test forces the other branch by disabling
 * THP for the process. On Linux the kernel's view of the arena's range comes
 * from /proc/self/smaps: the "hg" VmFlag (advised) and resident bytes. Which
 * page size the kernel finally backs a range with is its choice (it may find
 * no free 2 MiB page); the tests check what makes 2 MiB pages possible.
 *
 * Under qemu-user (the arm64 configuration) the kernel never sees the
 * guest's madvise(MADV_HUGEPAGE), so smaps shows no "hg" flag, and
 * prctl(PR_SET_THP_DISABLE) fails with EINVAL. Both are probed: where the
 * probe finds a feature missing the checks that need it print that they did
 * not apply and why; that is accepted only when FM_TEST_EMULATOR names an
 * emulator, and fails the test on a native run. */
#define _GNU_SOURCE 1

#include "fm_test.h"

#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <errno.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#define HUGE_LINUX 1
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define HUGE_PAGE (2 * MIB)

/* The sync policy of the arenas the tests create (argv[1], as the arena
 * suite): growth and decommit run under the lock in shared arenas. */
static fm_sync g_sync;

/* ================================================================ helpers */

static fm_arena_stats stats_of(const fm_arena *arena) {
    fm_arena_stats s;
    memset(&s, 0, sizeof s);
    fm_arena_get_stats(arena, &s);
    return s;
}

static fm_arena *create_huge(fm_arena_desc desc) {
    desc.huge_pages = true;
    if (desc.sync == FM_SYNC_NONE) desc.sync = g_sync;
    fm_arena *arena = fm_arena_create(&desc);
    if (!arena)
        print_error("fm_arena_create failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    assert_non_null(arena);
    return arena;
}

#ifdef HUGE_LINUX
/* The system's THP mode gives 2 MiB pages to memory advised with
 * MADV_HUGEPAGE ("always" or "madvise"). */
static bool thp_mode_allows(void) {
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return false;
    char mode[128] = {0};
    size_t n = fread(mode, 1, sizeof mode - 1, f);
    fclose(f);
    return n > 0 && (strstr(mode, "[always]") || strstr(mode, "[madvise]"));
}
#endif

/* PR_SET_THP_DISABLE's flag (Linux 6.18) that keeps THP for advised memory. */
#define THP_DISABLE_EXCEPT_ADVISED 2

/* The oracle: whether this process may get transparent huge pages for
 * memory advised with MADV_HUGEPAGE right now. */
static bool thp_offered(void) {
#ifdef HUGE_LINUX
    int off = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
    if (off > 0 && !(off & THP_DISABLE_EXCEPT_ADVISED)) return false;
    return thp_mode_allows();
#else
    return false;
#endif
}

#ifdef HUGE_LINUX
/* The kernel's mapping that holds an address (Linux, /proc/self/smaps). */
typedef struct vma_info {
    uintptr_t start, end;
    size_t rss;     /* resident bytes */
    bool advised;   /* VmFlags has "hg": MADV_HUGEPAGE */
} vma_info;

static bool vma_of(const void *p, vma_info *out);

/* Whether smaps shows the kernel's view of THP advice: a probe mapping
 * advised with MADV_HUGEPAGE must carry the "hg" VmFlag. Where the advice
 * itself is refused (a kernel without THP) there is no advice to see and
 * the view is accurate: advised is false everywhere. */
static bool kernel_sees_advice(void) {
    static int known = -1;
    if (known >= 0) return known;
    size_t len = 4 * HUGE_PAGE;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    vma_info v;
    bool advised = madvise(m, len, MADV_HUGEPAGE) == 0;
    bool seen = !advised || (vma_of(m, &v) && v.advised);
    munmap(m, len);
    known = seen || !fm_test_feature_missing("the kernel's view of huge-page advice",
                                     "madvise(MADV_HUGEPAGE) succeeded but /proc/self/smaps "
                                     "shows no 'hg' VmFlag for the range");
    return known;
}

/* Whether smaps shows a mapping's resident pages: a probe mapping of 64
 * pages, each touched, must show them all in Rss. qemu-i386 places the
 * guest's mappings inside one reservation of its own and reports that
 * reservation's line (no access, Rss 0) for them. */
static bool kernel_reports_rss(void) {
    enum { PAGES = 64 };
    static int known = -1;
    if (known >= 0) return known;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = PAGES * page;
    uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    for (size_t i = 0; i < PAGES; i++) m[i * page] = 1;
    vma_info v;
    bool seen = vma_of(m, &v) && v.rss >= len;
    munmap(m, len);
    known = seen || !fm_test_feature_missing("the resident pages of a mapping",
                                             "/proc/self/smaps shows fewer than the 64 pages "
                                             "a probe mapping touched in its Rss");
    return known;
}

static bool vma_of(const void *p, vma_info *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return false;
    char line[512];
    bool in = false, found = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, kib;
        char c;
        /* Mapping lines start "lo-hi perms"; field lines ("Rss:", and even
         * "AnonHugePages:", whose 'A' reads as hex) never match all three. */
        if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3) {
            if (in) break; /* past the mapping we wanted */
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            if (in) {
                out->start = lo;
                out->end = hi;
                found = true;
            }
        } else if (in && sscanf(line, "Rss: %lu kB", &kib) == 1) {
            out->rss = (size_t)kib * KIB;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            out->advised = strstr(line, " hg") != NULL;
        }
    }
    fclose(f);
    return found;
}
#endif

/* ============================================================== defaults */

static void test_arena_huge_pages_are_off_by_default(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){.sync = g_sync});
    assert_non_null(arena);
    assert_false(fm_arena_get_desc(arena).huge_pages);
    assert_int_equal(fm_arena_get_desc(arena).commit_step, 64 * KIB);
    assert_int_equal(stats_of(arena).huge_pages, 0);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

/* ============================================ the option where it is offered */

static void test_arena_huge_pages_resolve_to_what_the_os_offers(void **state) {
    fm_test_env *env = *state;
    bool offered = thp_offered();
    fm_arena *arena = create_huge((fm_arena_desc){.name = "big", .reserve_bytes = 16 * MIB});
    fm_arena_desc d = fm_arena_get_desc(arena);
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(d.huge_pages, offered);
    assert_int_equal(s.huge_pages, offered);
    /* Granted: whole 2 MiB commit steps; refused: the ordinary default. */
    assert_int_equal(d.commit_step, offered ? HUGE_PAGE : 64 * KIB);
    assert_int_equal(d.reserve_bytes, 16 * MIB);
    assert_int_equal(s.reserved, 16 * MIB);
    assert_int_equal(s.committed, 0);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

static void test_arena_huge_pages_round_reserve_and_commit_step_up_to_2mib(void **state) {
    fm_test_env *env = *state;
    if (!thp_offered()) {
        /* Refused: the sizes round to 4 KiB pages as without the flag. */
        fm_arena *arena = create_huge(
            (fm_arena_desc){.reserve_bytes = 3 * MIB + 1, .commit_step = 100 * KIB});
        assert_int_equal(fm_arena_get_desc(arena).reserve_bytes, 3 * MIB + 4 * KIB);
        assert_int_equal(fm_arena_get_desc(arena).commit_step, 100 * KIB);
        fm_arena_destroy(arena);
        assert_int_equal(env->errors.count, 0);
        return;
    }
    fm_arena *arena =
        create_huge((fm_arena_desc){.reserve_bytes = 3 * MIB + 1, .commit_step = 100 * KIB});
    fm_arena_desc d = fm_arena_get_desc(arena);
    assert_true(d.huge_pages);
    assert_int_equal(d.reserve_bytes, 4 * MIB);
    assert_int_equal(d.commit_step, 2 * MIB);
    assert_int_equal(stats_of(arena).reserved, 4 * MIB);
    fm_arena_destroy(arena);

    /* A commit step of several huge pages stays as given. */
    arena = create_huge((fm_arena_desc){.reserve_bytes = 64 * MIB, .commit_step = 6 * MIB});
    assert_int_equal(fm_arena_get_desc(arena).commit_step, 6 * MIB);
    void *p = fm_arena_alloc(arena, 1, 0);
    assert_non_null(p);
    assert_int_equal(stats_of(arena).committed, 6 * MIB);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

static void test_arena_huge_pages_align_the_reservation_and_commit_whole_pages(void **state) {
    fm_test_env *env = *state;
    bool offered = thp_offered();
    size_t page = offered ? HUGE_PAGE : 64 * KIB; /* the commit step either way */
    fm_arena *arena = create_huge((fm_arena_desc){.reserve_bytes = 32 * MIB});
    uint8_t *base = fm_arena_alloc(arena, 100, 0);
    assert_non_null(base);
    fm_test_fill(base, 100, 1);
    if (offered) assert_int_equal((uintptr_t)base % HUGE_PAGE, 0);
    assert_int_equal(stats_of(arena).committed, page);
    assert_int_equal(stats_of(arena).commit_events, 1);

    /* Across a page boundary: the commit grows by whole pages. */
    uint8_t *big = fm_arena_alloc(arena, 3 * MIB, 16);
    assert_non_null(big);
    fm_test_fill(big, 3 * MIB, 2);
    assert_int_equal(stats_of(arena).committed, fm_align_up(100 + 12 + 3 * MIB, page));
    assert_true(fm_test_check_fill(base, 100, 1));
    assert_true(fm_test_check_fill(big, 3 * MIB, 2));

#ifdef HUGE_LINUX
    /* The kernel's view: the committed range is a mapping that ends on a
     * page boundary (the reserved rest is PROT_NONE), advised for huge pages
     * when offered. (Its start may merge with a neighbouring mapping.) */
    vma_info v;
    if (kernel_sees_advice()) {
    assert_true(vma_of(base, &v));
    assert_true(v.start <= (uintptr_t)base);
    assert_int_equal(v.end, (uintptr_t)base + stats_of(arena).committed);
    assert_int_equal(v.advised, offered);
    /* The reserved but uncommitted rest is advised too, ready for growth. */
    assert_true(vma_of(base + stats_of(arena).committed, &v));
    assert_int_equal(v.advised, offered);
    assert_true(v.end >= (uintptr_t)base + 32 * MIB);
    }
#endif
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

static void test_arena_huge_pages_allocations_rewind_and_reset(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_huge((fm_arena_desc){.name = "frame", .reserve_bytes = 64 * MIB});
    enum { N = 20000 };
    static uint8_t *ptrs[N];
    static size_t sizes[N];
    uint64_t rng = 12345;
    size_t total = 0;
    fm_arena_mark half = {0};
    for (int i = 0; i < N; i++) {
        if (i == N / 2) half = fm_arena_get_mark(arena);
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        sizes[i] = 16 + (size_t)(rng >> 33) % 1000;
        ptrs[i] = fm_arena_alloc(arena, sizes[i], 0);
        assert_non_null(ptrs[i]);
        assert_int_equal((uintptr_t)ptrs[i] % FM_DEFAULT_ALIGN, 0);
        fm_test_fill(ptrs[i], sizes[i], (uint32_t)i);
        total += sizes[i];
    }
    for (int i = 0; i < N; i++) assert_true(fm_test_check_fill(ptrs[i], sizes[i], (uint32_t)i));
    fm_arena_stats s = stats_of(arena);
    assert_int_equal(s.total_allocs, N);
    assert_true(s.used >= total && s.used <= total + N * FM_DEFAULT_ALIGN);
    assert_true(s.committed >= s.used);
    if (s.huge_pages) assert_int_equal(s.committed % HUGE_PAGE, 0);

    /* Rewind to the middle: the first half stays, the second is released
     * and handed out again from the same place. */
    uint64_t used_at_half = half.pos;
    fm_arena_rewind(arena, half);
    assert_int_equal(stats_of(arena).used, used_at_half);
    assert_int_equal(stats_of(arena).rewinds, 1);
    for (int i = 0; i < N / 2; i++) assert_true(fm_test_check_fill(ptrs[i], sizes[i], (uint32_t)i));
    uint8_t *again = fm_arena_alloc(arena, sizes[N / 2], 0);
    assert_ptr_equal(again, ptrs[N / 2]);

    /* Reset: everything released, memory stays committed for the next frame. */
    size_t committed = stats_of(arena).committed;
    fm_arena_reset(arena);
    s = stats_of(arena);
    assert_int_equal(s.used, 0);
    assert_int_equal(s.resets, 1);
    assert_int_equal(s.committed, committed);
    assert_true(s.high_water >= total);
    uint8_t *first = fm_arena_alloc(arena, 64, 0);
    assert_ptr_equal(first, ptrs[0]);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

static void test_arena_huge_pages_decommit_releases_whole_pages(void **state) {
    fm_test_env *env = *state;
    bool offered = thp_offered();
    size_t page = offered ? HUGE_PAGE : 4 * KIB; /* decommit granularity */
    fm_arena *arena = create_huge((fm_arena_desc){.name = "rss", .reserve_bytes = 64 * MIB});
    uint8_t *p = fm_arena_alloc(arena, 16 * MIB, 0);
    assert_non_null(p);
    memset(p, 0x5A, 16 * MIB);
    assert_int_equal(stats_of(arena).committed, 16 * MIB);
#ifdef HUGE_LINUX
    vma_info v;
    bool rss = kernel_reports_rss();
    assert_true(vma_of(p, &v));
    if (rss) assert_true(v.rss >= 12 * MIB); /* noisy machines: three quarters */
#endif

    /* The top in the middle of a page keeps that whole page. */
    fm_arena_reset(arena);
    assert_non_null(fm_arena_alloc(arena, 3 * MIB, 0));
    size_t released = fm_arena_decommit(arena, 0);
    size_t kept = fm_align_up(3 * MIB, page);
    assert_int_equal(released, 16 * MIB - kept);
    assert_int_equal(stats_of(arena).committed, kept);
    assert_int_equal(stats_of(arena).decommit_events, 1);
    memset(p, 0x11, 3 * MIB); /* what stays committed stays writable */

    /* keep_bytes rounds up the same way; nothing to release is no event. */
    assert_int_equal(fm_arena_decommit(arena, kept - 1), 0);
    assert_int_equal(stats_of(arena).decommit_events, 1);

    /* Everything back: committed 0, the pages leave the process. */
    fm_arena_reset(arena);
    assert_int_equal(fm_arena_decommit(arena, 0), kept);
    assert_int_equal(stats_of(arena).committed, 0);
#ifdef HUGE_LINUX
    assert_true(vma_of(p, &v));
    if (rss) assert_int_equal(v.rss, 0);
    if (kernel_sees_advice())
        assert_int_equal(v.advised, offered); /* the advice outlives the decommit */
#endif

    /* And the arena grows again in whole pages. */
    uint8_t *q = fm_arena_alloc(arena, MIB + 1, 0);
    assert_ptr_equal(q, p);
    memset(q, 1, MIB + 1);
    assert_int_equal(stats_of(arena).committed, offered ? HUGE_PAGE : fm_align_up(MIB + 1, 64 * KIB));
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

static void test_arena_huge_pages_fill_the_reservation_exactly(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = create_huge((fm_arena_desc){.name = "exact", .reserve_bytes = 4 * MIB});
    size_t reserve = fm_arena_get_desc(arena).reserve_bytes;
    assert_int_equal(reserve, 4 * MIB);
    uint8_t *p = fm_arena_alloc(arena, reserve, 0);
    assert_non_null(p);
    p[0] = 1;
    p[reserve - 1] = 2;
    assert_int_equal(stats_of(arena).committed, reserve);
    assert_null(fm_arena_alloc(arena, 1, 1));
    assert_int_equal(fm_last_error(), FM_ERR_ARENA_FULL);
    assert_int_equal(env->errors.count, 1);
    assert_true(fm_test_contains(env->errors.message, "exact"));
    assert_int_equal(stats_of(arena).failed_allocs, 1);
    fm_arena_destroy(arena);
}

/* Address space costs nothing until touched: 64 GiB (256 MiB on 32-bit
 * targets). Reservations beyond any address space fail in test_arena.c,
 * with and without huge_pages. */
static void test_arena_huge_pages_reserve_large_address_space(void **state) {
    fm_test_env *env = *state;
    /* Valgrind keeps less address space for the program than 64 GiB. */
    size_t big = SIZE_MAX <= UINT32_MAX ? 256 * MIB
                 : fm_test_under_valgrind() ? (size_t)4 << 30
                                            : (size_t)64 << 30;
    fm_arena *arena = create_huge((fm_arena_desc){.name = "large", .reserve_bytes = big});
    assert_int_equal(stats_of(arena).reserved, big);
    uint8_t *p = fm_arena_alloc(arena, 5 * MIB, 0);
    assert_non_null(p);
    p[0] = 1;
    p[5 * MIB - 1] = 2;
    bool huge = fm_arena_get_desc(arena).huge_pages;
    assert_int_equal(huge, thp_offered());
    if (huge) assert_int_equal((uintptr_t)p % HUGE_PAGE, 0);
    assert_int_equal(stats_of(arena).committed, huge ? 6 * MIB : 5 * MIB);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
}

/* ========================================================= bad combinations */

static void test_arena_huge_pages_with_an_allocator_is_rejected(void **state) {
    fm_test_env *env = *state;
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){
        .name = "user-heap",
        .allocator = fm_test_allocator_get(&env->alloc),
        .huge_pages = true,
        .sync = g_sync,
    });
    assert_null(arena);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_int_equal(env->errors.count, 1);
    assert_true(fm_test_contains(env->errors.message, "user-heap"));
    assert_true(fm_test_contains(env->errors.message, "huge_pages"));
    assert_int_equal(env->alloc.alloc_calls, 0); /* rejected before anything was made */
    fm_test_allocator_assert_clean(&env->alloc);

    /* The same through a frame arena. */
    fm_test_errors_reset(&env->errors);
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){
        .name = "frame-heap",
        .arena = {.allocator = fm_test_allocator_get(&env->alloc), .huge_pages = true},
    });
    assert_null(fa);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_true(fm_test_contains(env->errors.message, "huge_pages"));
    fm_test_allocator_assert_clean(&env->alloc);
}

/* ================================================================ fallback */

#ifdef HUGE_LINUX
/* The fallback test disables THP for the whole process: its teardown
 * re-enables it even when an assertion ends the test early. */
static int teardown_thp(void **state) {
    prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
    return fm_test_teardown(state);
}
#endif

static void test_arena_huge_pages_fall_back_to_an_ordinary_arena(void **state) {
    fm_test_env *env = *state;
#ifdef HUGE_LINUX
    /* THP disabled for the process: what a container or a launcher may do. */
    if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) {
        int e = errno;
        assert_int_equal(e, EINVAL); /* the only failure an emulator explains */
        fm_test_feature_missing("disabling THP for the process",
                        "prctl(PR_SET_THP_DISABLE) fails with EINVAL");
        skip();
    }
    assert_false(thp_offered());
#endif
    fm_arena *arena = create_huge(
        (fm_arena_desc){.name = "plain", .reserve_bytes = 8 * MIB, .commit_step = 16 * KIB});
    fm_arena_desc d = fm_arena_get_desc(arena);
    assert_false(d.huge_pages);
    assert_int_equal(stats_of(arena).huge_pages, 0);
    assert_int_equal(d.commit_step, 16 * KIB); /* as asked, not rounded to 2 MiB */
    uint8_t *p = fm_arena_alloc(arena, 100 * KIB, 0);
    assert_non_null(p);
    fm_test_fill(p, 100 * KIB, 7);
    assert_int_equal(stats_of(arena).committed, 112 * KIB);
    assert_true(fm_test_check_fill(p, 100 * KIB, 7));
#ifdef HUGE_LINUX
    vma_info v;
    assert_true(vma_of(p, &v));
    assert_false(v.advised);
#endif
    fm_arena_reset(arena);
    assert_int_equal(fm_arena_decommit(arena, 0), 112 * KIB);
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
#ifdef HUGE_LINUX
    /* Disabled except where advised (kernels from 6.18 take the flag): an
     * arena with huge_pages advises, so it still gets them. */
    if (prctl(PR_SET_THP_DISABLE, 1, THP_DISABLE_EXCEPT_ADVISED, 0, 0) == 0) {
        arena = create_huge((fm_arena_desc){.reserve_bytes = 8 * MIB});
        assert_int_equal(fm_arena_get_desc(arena).huge_pages, thp_mode_allows());
        fm_arena_destroy(arena);
    }
    /* Offered again: the next arena takes them (read at each create). */
    assert_int_equal(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0), 0);
    arena = create_huge((fm_arena_desc){.reserve_bytes = 8 * MIB});
    assert_int_equal(fm_arena_get_desc(arena).huge_pages, thp_mode_allows());
    fm_arena_destroy(arena);
    assert_int_equal(env->errors.count, 0);
#endif
}

/* ============================================================ frame arenas */

static void test_frame_arena_passes_huge_pages_to_each_arena(void **state) {
    fm_test_env *env = *state;
    bool offered = thp_offered();
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){
        .name = "frame",
        .frames = 3,
        .arena = {.reserve_bytes = 8 * MIB, .huge_pages = true, .sync = g_sync},
    });
    assert_non_null(fa);
    uint8_t *frame_ptr[3];
    for (int f = 0; f < 3; f++) {
        fm_arena *cur = fm_frame_arena_current(fa);
        assert_int_equal(fm_arena_get_desc(cur).huge_pages, offered);
        assert_int_equal(stats_of(cur).huge_pages, offered);
        frame_ptr[f] = fm_frame_alloc(fa, MIB, 0);
        assert_non_null(frame_ptr[f]);
        if (offered) assert_int_equal((uintptr_t)frame_ptr[f] % HUGE_PAGE, 0);
        fm_test_fill(frame_ptr[f], MIB, (uint32_t)f);
        fm_frame_arena_advance(fa);
    }
    /* Frames 1 and 2 are still due; frame 0's arena now serves frame 3. */
    assert_true(fm_test_check_fill(frame_ptr[1], MIB, 1));
    assert_true(fm_test_check_fill(frame_ptr[2], MIB, 2));
    fm_frame_arena_stats s;
    fm_frame_arena_get_stats(fa, &s);
    assert_int_equal(s.total_allocs, 3);
    assert_int_equal(s.committed, 3 * (offered ? HUGE_PAGE : MIB));
    fm_frame_arena_destroy(fa);
    assert_int_equal(env->errors.count, 0);
}

/* ==================================================================== main */

#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)

int main(int argc, char **argv) {
    const char *sync = fm_test_sync_from_args(argc, argv, &g_sync);
    if (!sync) return 2;
    const struct CMUnitTest tests[] = {
        T(test_arena_huge_pages_are_off_by_default),
        T(test_arena_huge_pages_resolve_to_what_the_os_offers),
        T(test_arena_huge_pages_round_reserve_and_commit_step_up_to_2mib),
        T(test_arena_huge_pages_align_the_reservation_and_commit_whole_pages),
        T(test_arena_huge_pages_allocations_rewind_and_reset),
        T(test_arena_huge_pages_decommit_releases_whole_pages),
        T(test_arena_huge_pages_fill_the_reservation_exactly),
        T(test_arena_huge_pages_reserve_large_address_space),
        T(test_arena_huge_pages_with_an_allocator_is_rejected),
#ifdef HUGE_LINUX
        cmocka_unit_test_setup_teardown(test_arena_huge_pages_fall_back_to_an_ordinary_arena,
                                        fm_test_setup, teardown_thp),
#else
        T(test_arena_huge_pages_fall_back_to_an_ordinary_arena),
#endif
        T(test_frame_arena_passes_huge_pages_to_each_arena),
    };
    char group[64];
    snprintf(group, sizeof group, "arena huge pages [%s]", sync);
    return cmocka_run_group_tests_name(group, tests, NULL, NULL);
}
