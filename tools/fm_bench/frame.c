/*
 * fm_bench/frame.c: per-frame temporaries, arenas against malloc/free.
 *
 * A "frame" makes N allocations of mixed 16..256-byte temporaries (sizes
 * drawn once, before any clock starts, with a fixed-seed xorshift; the same
 * sequence for every variant), writes one byte into each (an asm barrier
 * keeps every allocation), then ends: everything it allocated is released at
 * once. Variants:
 * - fm_arena, virtual-memory mode: fm_arena_alloc (the header's inline fast
 *   path in optimised builds), fm_arena_reset at frame end;
 * - fm_frame_arena (2 frames, double-buffered): fm_frame_alloc (the same
 *   inline fast path on the current arena in optimised builds),
 *   fm_frame_arena_advance at frame end;
 * - fm_arena, chained mode: the same calls, blocks from a trivial
 *   aligned_alloc wrapper instead of virtual memory;
 * - the bare bump pointer: the arena's fast path with nothing around it (no
 *   limit check, no counter, no arena struct) over one malloc'd buffer of
 *   the frame's size: the lower bound of any arena on this machine, since
 *   the byte writes to fresh memory cost the same whoever hands it out;
 * - fm_arena and fm_frame_arena again with desc.huge_pages, and the bare bump
 *   pointer over a 2 MiB-aligned buffer advised for transparent huge pages
 *   (their lower bound): the frame writes 136 MiB, and over 4 KiB pages
 *   every page is a TLB miss (a two-level walk in a virtual machine);
 * - malloc/free: malloc each temporary, keep its pointer, free them all at
 *   frame end: what the arena replaces.
 * Each run creates the allocator, runs F frames and destroys it; the first
 * frame commits (or mallocs) the memory, the later ones find it warm. The
 * figure of a run is its warm frames' time over their allocations (a mean:
 * glibc's frames are not alike, a median would pick one kind); runs
 * alternate the variants (A B C D E A B C D E ...) and the table shows the
 * median of the runs.
 *
 * Second part: what fm_arena_reset costs after 1,000, 100,000 and 1,000,000
 * allocations, each reset timed on its own, median of many.
 *
 * Third part: a frame arena shared by job threads: FM_SYNC_NONE on one
 * thread against FM_SYNC_LOCKFREE on 1 and 2 threads (each thread making
 * its share of the frame's allocations at once), frames separated by a
 * barrier and fm_frame_arena_advance.
 */
#define _GNU_SOURCE 1 /* pthread_attr_setaffinity_np, CPU_SET */
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "framemem/arena.h"
#include "framemem/clock.h"

enum {
    FRAME_MIN_SIZE = 16,
    FRAME_MAX_SIZE = 256,
    FRAME_COLD = 2, /* frames not counted as warm: the frame arena's 2 arenas each serve one */
};

/* Also the variants' order in the table and in each round of runs: the five
 * rows this experiment always had, in their old order (each still runs right
 * after the same row as before), then the huge_pages rows. */
typedef enum frame_kind {
    FRAME_ARENA,
    FRAME_FRAME_ARENA,
    FRAME_CHAINED,
    FRAME_BUMP,
    FRAME_MALLOC,
    FRAME_ARENA_HUGE,
    FRAME_FRAME_ARENA_HUGE,
    FRAME_BUMP_HUGE,
    FRAME_VARIANTS
} frame_kind;

typedef struct frame_variant {
    const char *name; /* no commas: it is a CSV field */
    const char *end;  /* what ends its frame */
    frame_kind kind;
    bool huge;        /* asks for 2 MiB pages */
} frame_variant;

static const frame_variant frame_variants[FRAME_VARIANTS] = {
    [FRAME_ARENA] = {"fm_arena (virtual memory)", "fm_arena_reset", FRAME_ARENA, false},
    [FRAME_FRAME_ARENA] = {"fm_frame_arena (2 frames)", "fm_frame_arena_advance",
                           FRAME_FRAME_ARENA, false},
    [FRAME_CHAINED] = {"fm_arena (chained blocks from aligned_alloc)", "fm_arena_reset",
                       FRAME_CHAINED, false},
    [FRAME_BUMP] = {"bare bump pointer (lower bound)", "top = start", FRAME_BUMP, false},
    [FRAME_ARENA_HUGE] = {"fm_arena (virtual memory; huge_pages)", "fm_arena_reset",
                          FRAME_ARENA, true},
    [FRAME_FRAME_ARENA_HUGE] = {"fm_frame_arena (2 frames; huge_pages)", "fm_frame_arena_advance",
                                FRAME_FRAME_ARENA, true},
    [FRAME_BUMP_HUGE] = {"bare bump pointer over 2 MiB pages (lower bound with huge pages)",
                         "top = start", FRAME_BUMP, true},
    [FRAME_MALLOC] = {"malloc/free", "free of every pointer", FRAME_MALLOC, false},
};

/* One frame as the clock saw it. */
typedef struct frame_ticks {
    uint64_t alloc; /* the N allocations and their byte writes */
    uint64_t end;   /* reset, advance or free-all */
} frame_ticks;

/* One run of one variant; times in ns. */
typedef struct frame_result {
    double ns_per_alloc; /* warm frames: their total time / their allocations, frame end included */
    double best_ns;      /* the fastest warm frame, ns per allocation */
    double worst_ns;     /* the slowest warm frame, ns per allocation */
    double end_ns;       /* frame end, mean over the warm frames, ns per frame */
    double first_ns;     /* the first frame, ns per allocation, frame end included */
    double warm_faults;  /* minor page faults per warm frame, mean */
    double first_faults; /* minor page faults of the first frame */
    bool huge;           /* 2 MiB pages asked for and, as far as the OS says, granted */
} frame_result;

/* ------------------------------------------------------- the allocators */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, cold))
#endif
static void frame_failed(const char *what) {
    bench_die("frame: %s failed (%s: %s)", what, fm_error_name(fm_last_error()),
              fm_last_error_message());
}

/* The chained variant's backing allocator: aligned_alloc, size rounded up
 * to a multiple of the alignment as C11 asks. */
static void *frame_block_alloc(size_t size, size_t align, void *user) {
    (void)user;
    if (align < sizeof(void *)) align = sizeof(void *);
    return aligned_alloc(align, fm_align_up(size, align));
}

static void frame_block_free(void *ptr, size_t size, void *user) {
    (void)size, (void)user;
    free(ptr);
}

/* reserve_bytes for a frame of `bytes`: room for the frame plus the chained
 * mode's block headers and tails, page rounded by the library. */
static fm_arena_desc frame_arena_desc(const char *name, bool chained, size_t bytes) {
    fm_arena_desc d = {.name = name, .reserve_bytes = 2 * bytes + ((size_t)16 << 20)};
    if (chained) d.allocator = (fm_allocator){frame_block_alloc, frame_block_free, NULL};
    return d;
}

/* The huge-page bump buffer: `bytes` at a 2 MiB boundary, advised for
 * transparent huge pages where the OS has them; *map and *map_bytes are what
 * to munmap. *advised: the OS took the advice. Elsewhere: aligned_alloc. */
enum { FRAME_HUGE_PAGE = 2 << 20 };

static unsigned char *frame_huge_buffer(size_t bytes, void **map, size_t *map_bytes,
                                        bool *advised) {
    size_t len = fm_align_up(bytes, FRAME_HUGE_PAGE) + FRAME_HUGE_PAGE;
    *advised = false;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    void *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) bench_die("frame: mmap of %zu bytes failed", len);
    unsigned char *buf = (unsigned char *)fm_align_up((uintptr_t)raw, FRAME_HUGE_PAGE);
    *advised = madvise(buf, len - FRAME_HUGE_PAGE, MADV_HUGEPAGE) == 0;
    *map = raw;
    *map_bytes = len;
    return buf;
#else
    *map = NULL;
    *map_bytes = 0;
    unsigned char *buf = aligned_alloc(FRAME_HUGE_PAGE, len);
    if (!buf) bench_die("frame: aligned_alloc of %zu bytes failed", len);
    return buf;
#endif
}

/* Bytes one frame takes from an arena: every size rounded to the default
 * alignment. */
static size_t frame_bytes(const uint16_t *sizes, uint32_t n) {
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) total += fm_align_up(sizes[i], FM_DEFAULT_ALIGN);
    return total;
}

/* ----------------------------------------------------------- timed frames */

static BENCH_NOINLINE frame_ticks frame_arena(fm_arena *arena, const uint16_t *sizes,
                                              uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_arena_alloc(arena, sizes[i], 0);
        if (!p) frame_failed("fm_arena_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
    uint64_t t1 = fm_clock_now();
    fm_arena_reset(arena);
    uint64_t t2 = fm_clock_now();
    return (frame_ticks){t1 - t0, t2 - t1};
}

static BENCH_NOINLINE frame_ticks frame_frame_arena(fm_frame_arena *fa, const uint16_t *sizes,
                                                    uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_frame_alloc(fa, sizes[i], 0);
        if (!p) frame_failed("fm_frame_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
    uint64_t t1 = fm_clock_now();
    fm_frame_arena_advance(fa);
    uint64_t t2 = fm_clock_now();
    return (frame_ticks){t1 - t0, t2 - t1};
}

/* The bare bump pointer: fm_arena_alloc's arithmetic (align the top, add the
 * size) inlined, with no limit check, no counter, no NULL test. */
static BENCH_NOINLINE frame_ticks frame_bump(unsigned char *buf, const uint16_t *sizes,
                                             uint32_t n) {
    uint64_t t0 = fm_clock_now();
    uintptr_t top = (uintptr_t)buf;
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t at = (top + (FM_DEFAULT_ALIGN - 1)) & ~(uintptr_t)(FM_DEFAULT_ALIGN - 1);
        top = at + sizes[i];
        unsigned char *p = (unsigned char *)at;
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
    uint64_t t1 = fm_clock_now();
    top = (uintptr_t)buf; /* the frame end */
    BENCH_ESCAPE(top);
    uint64_t t2 = fm_clock_now();
    return (frame_ticks){t1 - t0, t2 - t1};
}

static BENCH_NOINLINE frame_ticks frame_malloc(void **ptrs, const uint16_t *sizes, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = malloc(sizes[i]);
        if (!p) frame_failed("malloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        ptrs[i] = p;
    }
    uint64_t t1 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) free(ptrs[i]);
    uint64_t t2 = fm_clock_now();
    return (frame_ticks){t1 - t0, t2 - t1};
}

/* ---------------------------------------------------------------- one run */

typedef struct frame_scratch {
    const uint16_t *sizes;
    void **ptrs;      /* malloc's pointers */
    double *per_alloc; /* per frame, ns per allocation */
    double *end_ns;    /* per frame */
    double *faults;    /* per frame */
} frame_scratch;

static void frame_once(const frame_variant *v, uint32_t n, int frames, size_t bytes,
                       frame_scratch *s, frame_result *out) {
    fm_arena *arena = NULL;
    fm_frame_arena *fa = NULL;
    unsigned char *buf = NULL;
    void *map = NULL; /* the huge-page bump buffer's mapping */
    size_t map_bytes = 0;
    out->huge = false;
    switch (v->kind) {
    case FRAME_ARENA:
    case FRAME_CHAINED: {
        fm_arena_desc d = frame_arena_desc("bench-frame", v->kind == FRAME_CHAINED, bytes);
        d.huge_pages = v->huge;
        arena = fm_arena_create(&d);
        if (!arena) frame_failed("fm_arena_create");
        out->huge = fm_arena_get_desc(arena).huge_pages;
        break;
    }
    case FRAME_FRAME_ARENA: {
        fm_arena_desc d = frame_arena_desc(NULL, false, bytes);
        d.huge_pages = v->huge;
        fa = fm_frame_arena_create(&(fm_frame_arena_desc){.name = "bench-frame", .arena = d});
        if (!fa) frame_failed("fm_frame_arena_create");
        out->huge = fm_arena_get_desc(fm_frame_arena_current(fa)).huge_pages;
        break;
    }
    case FRAME_BUMP:
        /* Fresh pages from the OS (glibc maps a buffer this large), faulted
         * in by the first frame like the arena's. */
        if (v->huge) buf = frame_huge_buffer(bytes + FM_DEFAULT_ALIGN, &map, &map_bytes, &out->huge);
        else buf = bench_xmalloc(bytes + FM_DEFAULT_ALIGN);
        break;
    case FRAME_MALLOC:
    default: break;
    }

    for (int f = 0; f < frames; f++) {
        uint64_t faults0 = bench_minor_faults();
        frame_ticks t;
        switch (v->kind) {
        case FRAME_ARENA:
        case FRAME_CHAINED: t = frame_arena(arena, s->sizes, n); break;
        case FRAME_FRAME_ARENA: t = frame_frame_arena(fa, s->sizes, n); break;
        case FRAME_BUMP: t = frame_bump(buf, s->sizes, n); break;
        case FRAME_MALLOC:
        default: t = frame_malloc(s->ptrs, s->sizes, n); break;
        }
        s->faults[f] = (double)(bench_minor_faults() - faults0);
        s->per_alloc[f] = (double)fm_clock_to_ns(t.alloc + t.end) / (double)n;
        s->end_ns[f] = (double)fm_clock_to_ns(t.end);
    }

    /* Every allocation was counted, none failed. */
    uint64_t want = (uint64_t)frames * n;
    if (arena) {
        fm_arena_stats st;
        fm_arena_get_stats(arena, &st);
        if (st.total_allocs != want || st.failed_allocs || st.used || st.resets != (uint64_t)frames)
            bench_die("frame, %s: arena stats wrong after the run: total_allocs %llu (expected "
                      "%llu), failed %llu, used %llu, resets %llu",
                      v->name, (unsigned long long)st.total_allocs, (unsigned long long)want,
                      (unsigned long long)st.failed_allocs, (unsigned long long)st.used,
                      (unsigned long long)st.resets);
        fm_arena_destroy(arena);
    }
    if (fa) {
        fm_frame_arena_stats st;
        fm_frame_arena_get_stats(fa, &st);
        if (st.total_allocs != want || st.failed_allocs || st.frame != (uint64_t)frames)
            bench_die("frame, %s: frame arena stats wrong after the run: total_allocs %llu "
                      "(expected %llu), failed %llu, frame %llu",
                      v->name, (unsigned long long)st.total_allocs, (unsigned long long)want,
                      (unsigned long long)st.failed_allocs, (unsigned long long)st.frame);
        fm_frame_arena_destroy(fa);
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (map) munmap(map, map_bytes);
    else free(buf);
#else
    free(buf);
#endif

    /* Means over the warm frames: a program pays every frame, and glibc's
     * frames are not alike (see the text), so a median would pick one kind. */
    out->first_ns = s->per_alloc[0];
    out->first_faults = s->faults[0];
    double sum = 0, end = 0, faults = 0;
    out->best_ns = out->worst_ns = s->per_alloc[FRAME_COLD];
    for (int f = FRAME_COLD; f < frames; f++) {
        sum += s->per_alloc[f];
        end += s->end_ns[f];
        faults += s->faults[f];
        if (s->per_alloc[f] < out->best_ns) out->best_ns = s->per_alloc[f];
        if (s->per_alloc[f] > out->worst_ns) out->worst_ns = s->per_alloc[f];
    }
    double warm = (double)(frames - FRAME_COLD);
    out->ns_per_alloc = sum / warm;
    out->end_ns = end / warm;
    out->warm_faults = faults / warm;
}

/* ------------------------------------------------------------ reset cost */

enum { RESET_COUNTS = 3, RESET_WINDOW = 4096 };
static const uint32_t reset_counts[RESET_COUNTS] = {1000, 100000, 1000000};

/* Bytes of n allocations with the sizes sizes[i % RESET_WINDOW]. */
static size_t reset_bytes(const uint16_t *sizes, uint32_t n) {
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += fm_align_up(sizes[i % RESET_WINDOW], FM_DEFAULT_ALIGN);
    return total;
}

/* Allocates n (untimed), then times one fm_arena_reset. The sizes repeat
 * every RESET_WINDOW allocations: streaming 2 MB of sizes would push the
 * reset's own code out of the caches and time that instead. */
static BENCH_NOINLINE uint64_t reset_once(fm_arena *arena, const uint16_t *sizes, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        void *p = fm_arena_alloc(arena, sizes[i % RESET_WINDOW], 0);
        if (!p) frame_failed("fm_arena_alloc");
        BENCH_ESCAPE(p);
    }
    uint64_t t0 = fm_clock_now();
    fm_arena_reset(arena);
    uint64_t t1 = fm_clock_now();
    return t1 - t0;
}

/* The same interval with nothing in it: the floor under every figure above. */
static BENCH_NOINLINE uint64_t reset_empty(void) {
    uint64_t t0 = fm_clock_now();
    BENCH_ESCAPE(&t0);
    uint64_t t1 = fm_clock_now();
    return t1 - t0;
}

static void reset_cost(const uint16_t *sizes, int resets) {
    uint32_t most = reset_counts[RESET_COUNTS - 1];
    size_t bytes = reset_bytes(sizes, most);
    fm_arena_desc dv = frame_arena_desc("bench-reset", false, bytes);
    fm_arena_desc dc = frame_arena_desc("bench-reset-chained", true, bytes);
    fm_arena *vm = fm_arena_create(&dv), *chained = fm_arena_create(&dc);
    if (!vm || !chained) frame_failed("fm_arena_create");
    /* Commit (or chain) the largest frame once, outside the samples. */
    reset_once(vm, sizes, most);
    reset_once(chained, sizes, most);

    size_t per = (size_t)resets;
    uint64_t *ns = bench_xmalloc((size_t)(2 * RESET_COUNTS + 1) * per * sizeof *ns);
    for (int r = 0; r < resets; r++) {
        for (int c = 0; c < RESET_COUNTS; c++) {
            ns[(size_t)c * per + (size_t)r] =
                fm_clock_to_ns(reset_once(vm, sizes, reset_counts[c]));
            ns[(size_t)(RESET_COUNTS + c) * per + (size_t)r] =
                fm_clock_to_ns(reset_once(chained, sizes, reset_counts[c]));
        }
        ns[(size_t)(2 * RESET_COUNTS) * per + (size_t)r] = fm_clock_to_ns(reset_empty());
    }
    bench_latency empty = bench_latency_of(&ns[(size_t)(2 * RESET_COUNTS) * per], per);

    printf("\n### frame: reset cost against the number of allocations\n\n");
    printf("fm_arena_reset timed on its own right after n allocations (not timed) of mixed "
           "16..256-byte sizes, the first %d of the sequence above over and over (so the "
           "benchmark's own size array stays in the L1 cache instead of pushing the reset's "
           "code out of the caches), %d resets per count, the counts interleaved reset by "
           "reset; memory committed (or chained) once before the first sample. "
           "Virtual-memory mode moves the top back and records one cut: O(1), no "
           "per-allocation work (desc.poison off, no AddressSanitizer). Chained mode also moves every "
           "block above the first onto its spare list: O(blocks), so it grows with the "
           "bytes, not with the count. An empty timed interval (two clock reads) costs "
           "%llu ns median here and is included in every figure.\n\n",
           RESET_WINDOW, resets, (unsigned long long)empty.median);
    printf("| allocations before the reset | bytes | virtual memory: ns/reset median | p99 | "
           "max | chained: ns/reset median | p99 | max |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    uint64_t vm_med[RESET_COUNTS];
    for (int c = 0; c < RESET_COUNTS; c++) {
        bench_latency a = bench_latency_of(&ns[(size_t)c * per], per);
        bench_latency b = bench_latency_of(&ns[(size_t)(RESET_COUNTS + c) * per], per);
        vm_med[c] = a.median;
        printf("| %u | %zu | %llu | %llu | %llu | %llu | %llu | %llu |\n", reset_counts[c],
               reset_bytes(sizes, reset_counts[c]), (unsigned long long)a.median,
               (unsigned long long)a.p99, (unsigned long long)a.max,
               (unsigned long long)b.median, (unsigned long long)b.p99,
               (unsigned long long)b.max);
    }
    printf("| (empty interval) | - | %llu | %llu | %llu | - | - | - |\n",
           (unsigned long long)empty.median, (unsigned long long)empty.p99,
           (unsigned long long)empty.max);
    printf("\nvirtual-memory reset, 1,000,000 vs 1,000 allocations: %llu / %llu ns median = "
           "%.2fx (flat means about 1x)\n",
           (unsigned long long)vm_med[RESET_COUNTS - 1], (unsigned long long)vm_med[0],
           vm_med[0] ? (double)vm_med[RESET_COUNTS - 1] / (double)vm_med[0] : 0.0);

    fm_arena_stats st;
    fm_arena_get_stats(vm, &st);
    if (st.failed_allocs || st.used) bench_die("frame: reset arena stats wrong after the run");
    fm_arena_destroy(vm);
    fm_arena_destroy(chained);
    free(ns);
}

/* ---------------------------------------------- shared frame arena */

enum { SHARED_MAX_THREADS = 2 };

typedef struct shared_frames {
    fm_frame_arena *fa;
    const uint16_t *sizes;
    uint32_t n; /* allocations per frame, all threads together */
    int threads, frames;
    pthread_barrier_t start, end;
} shared_frames;

typedef struct shared_worker {
    shared_frames *sf;
    int index;
} shared_worker;

/* Thread `index` makes allocations index, index + threads, ... of each frame. */
static void shared_frame_part(shared_frames *sf, int index) {
    for (uint32_t i = (uint32_t)index; i < sf->n; i += (uint32_t)sf->threads) {
        unsigned char *p = fm_frame_alloc(sf->fa, sf->sizes[i], 0);
        if (!p) frame_failed("fm_frame_alloc (shared)");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
}

static void *shared_frame_worker(void *arg) {
    shared_worker *w = arg;
    for (int f = 0; f < w->sf->frames; f++) {
        pthread_barrier_wait(&w->sf->start);
        shared_frame_part(w->sf, w->index);
        pthread_barrier_wait(&w->sf->end);
    }
    return NULL;
}

/* One run: ns per allocation over the warm frames (wall time from the
 * frame's start to the end of its advance, all threads together). */
static double shared_frames_once(fm_sync sync, int threads, const uint16_t *sizes, uint32_t n,
                                 int frames, size_t bytes) {
    fm_arena_desc ad = frame_arena_desc(NULL, false, bytes);
    ad.sync = sync;
    shared_frames sf = {.sizes = sizes, .n = n, .threads = threads, .frames = frames};
    sf.fa = fm_frame_arena_create(&(fm_frame_arena_desc){.name = "bench-shared", .arena = ad});
    if (!sf.fa) frame_failed("fm_frame_arena_create (shared)");
    pthread_barrier_init(&sf.start, NULL, (unsigned)threads);
    pthread_barrier_init(&sf.end, NULL, (unsigned)threads);
    pthread_t tid[SHARED_MAX_THREADS];
    shared_worker w[SHARED_MAX_THREADS];
    /* fm-bench is pinned to one CPU; the helper threads may use any. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
#if defined(__linux__)
    cpu_set_t all;
    CPU_ZERO(&all);
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++) CPU_SET((int)c, &all);
    pthread_attr_setaffinity_np(&attr, sizeof all, &all);
#endif
    for (int i = 1; i < threads; i++) {
        w[i] = (shared_worker){&sf, i};
        if (pthread_create(&tid[i], &attr, shared_frame_worker, &w[i]) != 0)
            bench_die("frame: pthread_create failed");
    }
    pthread_attr_destroy(&attr);
    uint64_t warm = 0;
    for (int f = 0; f < frames; f++) {
        pthread_barrier_wait(&sf.start);
        uint64_t t0 = fm_clock_now();
        shared_frame_part(&sf, 0);
        pthread_barrier_wait(&sf.end);
        fm_frame_arena_advance(sf.fa);
        uint64_t t1 = fm_clock_now();
        if (f >= FRAME_COLD) warm += t1 - t0;
    }
    for (int i = 1; i < threads; i++) pthread_join(tid[i], NULL);
    fm_frame_arena_stats st;
    fm_frame_arena_get_stats(sf.fa, &st);
    if (st.total_allocs != (uint64_t)frames * n || st.failed_allocs)
        bench_die("frame, shared: total_allocs %llu (expected %llu), failed %llu",
                  (unsigned long long)st.total_allocs, (unsigned long long)frames * n,
                  (unsigned long long)st.failed_allocs);
    pthread_barrier_destroy(&sf.start);
    pthread_barrier_destroy(&sf.end);
    fm_frame_arena_destroy(sf.fa);
    return (double)fm_clock_to_ns(warm) / ((double)(frames - FRAME_COLD) * n);
}

static void shared_frames_report(const uint16_t *sizes, uint32_t n, int frames, size_t bytes,
                                 int repeat) {
    static const struct {
        const char *name;
        fm_sync sync;
        int threads;
    } rows[] = {
        {"fm_frame_arena, FM_SYNC_NONE, 1 thread (baseline)", FM_SYNC_NONE, 1},
        {"fm_frame_arena, FM_SYNC_LOCKFREE, 1 thread", FM_SYNC_LOCKFREE, 1},
        {"fm_frame_arena, FM_SYNC_LOCKFREE, 2 threads sharing it", FM_SYNC_LOCKFREE, 2},
        {"fm_frame_arena, FM_SYNC_MUTEX, 2 threads sharing it", FM_SYNC_MUTEX, 2},
    };
    enum { ROWS = sizeof rows / sizeof rows[0] };
    double *ns = bench_xmalloc((size_t)ROWS * (size_t)repeat * sizeof *ns);
    for (int r = 0; r < repeat; r++)
        for (int v = 0; v < ROWS; v++)
            ns[v * repeat + r] = shared_frames_once(rows[v].sync, rows[v].threads, sizes, n,
                                                    frames, bytes);
    printf("\n### frame: one frame arena shared by job threads\n\n");
    printf("The same %u allocations per frame through fm_frame_alloc (2 frames), split "
           "round-robin between the threads, which run the frame at once (a barrier starts "
           "and ends it; the first thread, pinned like the rest of fm-bench, then calls "
           "fm_frame_arena_advance; the second may run on any CPU). ns/alloc = "
           "wall time of the %d warm frames (barriers and advance included) / their "
           "allocations; median of %d runs, rows interleaved run by run. FM_SYNC_LOCKFREE: "
           "a CAS on the top per allocation; FM_SYNC_MUTEX: a lock per allocation. Ratio = "
           "row / the FM_SYNC_NONE row. This machine has 2 cores shared with other work.\n\n",
           n, frames - FRAME_COLD, repeat);
    printf("| variant | ns/alloc (wall) | min | max | ratio vs NONE, 1 thread |\n");
    printf("|---|---:|---:|---:|---:|\n");
    double base = bench_median(&ns[0], (size_t)repeat);
    for (int v = 0; v < ROWS; v++) {
        double *col = &ns[v * repeat];
        double med = bench_median(col, (size_t)repeat); /* sorts col */
        printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", rows[v].name, med, col[0],
               col[repeat - 1], med / base);
    }
    free(ns);
}

/* ----------------------------------------------------------------- report */

void frame_run(const bench_opts *opts) {
    uint32_t n = opts->quick ? 100000 : 1000000;
    int frames = opts->quick ? 4 : 10;
    int repeat = bench_repeat(opts);
    int resets = opts->quick ? 31 : 301;
    uint32_t drawn = n > RESET_WINDOW ? n : RESET_WINDOW;

    /* Everything the frames read or write, drawn and faulted in up front. */
    uint16_t *sizes = bench_xmalloc((size_t)drawn * sizeof *sizes);
    uint64_t rng = 0x2545F4914F6CDD1Dull;
    for (uint32_t i = 0; i < drawn; i++)
        sizes[i] = (uint16_t)(FRAME_MIN_SIZE +
                              bench_xorshift64(&rng) % (FRAME_MAX_SIZE - FRAME_MIN_SIZE + 1));
    frame_scratch s = {
        .sizes = sizes,
        .ptrs = bench_xmalloc((size_t)n * sizeof(void *)),
        .per_alloc = bench_xmalloc((size_t)frames * sizeof(double)),
        .end_ns = bench_xmalloc((size_t)frames * sizeof(double)),
        .faults = bench_xmalloc((size_t)frames * sizeof(double)),
    };
    memset(s.ptrs, 0, (size_t)n * sizeof(void *));
    size_t bytes = frame_bytes(sizes, n);
    uint64_t requested = 0;
    for (uint32_t i = 0; i < n; i++) requested += sizes[i];

    frame_result *runs = bench_xmalloc((size_t)FRAME_VARIANTS * (size_t)repeat * sizeof *runs);
    for (int r = 0; r < repeat; r++)
        for (int v = 0; v < FRAME_VARIANTS; v++)
            frame_once(&frame_variants[v], n, frames, bytes, &s, &runs[v * repeat + r]);

    /* Per variant: the median run (by ns per allocation), with the spread. */
    frame_result med[FRAME_VARIANTS];
    double lo[FRAME_VARIANTS], hi[FRAME_VARIANTS];
    double *col = bench_xmalloc((size_t)repeat * sizeof *col);
    for (int v = 0; v < FRAME_VARIANTS; v++) {
        const frame_result *rr = &runs[v * repeat];
#define FRAME_MEDIAN(field)                                     \
    for (int r = 0; r < repeat; r++) col[r] = rr[r].field;      \
    med[v].field = bench_median(col, (size_t)repeat);
        FRAME_MEDIAN(best_ns)
        FRAME_MEDIAN(worst_ns)
        FRAME_MEDIAN(end_ns)
        FRAME_MEDIAN(first_ns)
        FRAME_MEDIAN(warm_faults)
        FRAME_MEDIAN(first_faults)
        FRAME_MEDIAN(ns_per_alloc) /* last: col stays sorted by it */
#undef FRAME_MEDIAN
        lo[v] = col[0];
        hi[v] = col[repeat - 1];
        med[v].huge = true; /* granted in every run */
        for (int r = 0; r < repeat; r++) med[v].huge = med[v].huge && rr[r].huge;
    }
    free(col);

    int m = FRAME_MALLOC;
    printf("\n## frame\n\n");
    printf("Per-frame temporaries: each frame makes %u allocations of mixed sizes, %d..%d "
           "bytes (fixed-seed xorshift, uniform, drawn before any clock starts, the same "
           "sequence for every variant and frame: %llu bytes asked for, %zu after rounding "
           "each to %zu), writes one byte into each (an asm barrier keeps every allocation), "
           "then ends the frame: fm_arena_reset (fm_arena), fm_frame_arena_advance "
           "(fm_frame_arena, 2 frames: the advance resets the arena of the frame before, so "
           "its memory in use is twice the frame), or "
           "free of every pointer in allocation order (malloc/free, which keeps its pointers "
           "in an array to do so). Arenas: FM_SYNC_NONE, align 0 (alignof(max_align_t)), "
           "default commit_step (64 KiB: commit step in virtual-memory mode, block size when "
           "chained), reserve_bytes 2x the frame plus 16 MiB; fm_arena_alloc is the header's "
           "inline fast path, and so is fm_frame_alloc (on the current arena). Chained: blocks "
           "from a trivial "
           "aligned_alloc wrapper, kept on the arena's spare list across resets. Bare bump "
           "pointer: fm_arena_alloc's arithmetic (align the top, add the size) inlined over "
           "one malloc'd buffer, with no limit check, no counter, no NULL test: the lower "
           "bound of any arena. The huge_pages rows: the same two arenas with "
           "fm_arena_desc.huge_pages (reservation aligned to 2 MiB and advised with "
           "MADV_HUGEPAGE, commits in whole 2 MiB steps), and the bare bump pointer over a "
           "2 MiB-aligned mmap'd buffer advised the same way, their lower bound; 2 MiB pages "
           "%s.\n\n",
           n, FRAME_MIN_SIZE, FRAME_MAX_SIZE, (unsigned long long)requested, bytes,
           (size_t)FM_DEFAULT_ALIGN,
           med[FRAME_ARENA_HUGE].huge && med[FRAME_FRAME_ARENA_HUGE].huge &&
                   med[FRAME_BUMP_HUGE].huge
               ? "granted to all three (the arenas' resolved desc.huge_pages; madvise for the "
                 "buffer)"
               : "NOT granted to all three here (no transparent huge pages, or THP disabled): "
                 "those rows ran over 4 KiB pages");
    printf("Each run creates the allocator, runs %d frames, destroys it. The first frame "
           "commits (or mallocs) and faults in the memory; the arenas are warm after it (the "
           "first %d frames are left out of the warm figures so that both arenas of the frame "
           "arena have served a frame). ns/alloc (warm) = total time of the %d warm frames "
           "(allocations + frame end) / their allocations: a mean, because a program pays "
           "every frame and glibc's frames are not alike (compare its fastest and slowest "
           "warm frame). Every figure is the median of %d runs, variants interleaved run by "
           "run; min and max are the runs' extremes of ns/alloc. Frame end is timed from the "
           "last allocation, so it also holds the drain of that loop's pending stores. "
           "Ratio = variant / malloc+free; x faster = malloc+free / variant. Every "
           "allocation writes a byte to memory the frame has not touched yet (%zu MiB per "
           "frame): the arenas' figures are mostly that memory "
           "traffic, which the bare bump pointer pays too; tools/fm-callgrind counts the "
           "instructions of fm_arena_alloc itself.\n\n",
           frames, FRAME_COLD, frames - FRAME_COLD, repeat, bytes >> 20);
    printf("| variant | ns/alloc (warm) | min | max | fastest / slowest warm frame, ns/alloc | "
           "frame end, ns/frame | first frame, ns/alloc | minor faults: first frame / per "
           "warm frame | ratio vs malloc+free | x faster than malloc |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < FRAME_VARIANTS; v++) {
        printf("| %s | %.2f | %.2f | %.2f | %.2f / %.2f | %.0f (%s) | %.2f | %.0f / %.0f | "
               "%.3f | %.1fx |\n",
               frame_variants[v].name, med[v].ns_per_alloc, lo[v], hi[v], med[v].best_ns,
               med[v].worst_ns, med[v].end_ns, frame_variants[v].end, med[v].first_ns,
               med[v].first_faults, med[v].warm_faults,
               med[v].ns_per_alloc / med[m].ns_per_alloc,
               med[m].ns_per_alloc / med[v].ns_per_alloc);
    }
    /* The target is for the configuration an engine gives a frame arena of this
     * size (huge_pages); the default desc's figure stays beside it. */
    int ah = FRAME_ARENA_HUGE, a4 = FRAME_ARENA, b4 = FRAME_BUMP, bh = FRAME_BUMP_HUGE;
    double xh = med[m].ns_per_alloc / med[ah].ns_per_alloc;
    double x4 = med[m].ns_per_alloc / med[a4].ns_per_alloc;
    printf("\nfm_arena (desc.huge_pages = true, %s) vs malloc+free, warm frames: %.2f / %.2f ns "
           "per allocation = %.1fx faster; target >= 20x: %s (the bare bump pointer over 2 MiB "
           "pages, what no arena can beat here: %.1fx)\n",
           med[ah].huge ? "2 MiB pages granted" : "NOT granted here: 4 KiB pages",
           med[m].ns_per_alloc, med[ah].ns_per_alloc, xh, xh >= 20.0 ? "met" : "NOT met",
           med[m].ns_per_alloc / med[bh].ns_per_alloc);
    printf("fm_arena (default desc, 4 KiB pages) vs malloc+free, warm frames: %.2f / %.2f ns per "
           "allocation = %.1fx faster (%s 20x; the bare bump pointer over 4 KiB pages: %.1fx)\n",
           med[m].ns_per_alloc, med[a4].ns_per_alloc, x4, x4 >= 20.0 ? "at or above" : "below",
           med[m].ns_per_alloc / med[b4].ns_per_alloc);
    printf("against malloc+free's fastest warm frame: %.2f / %.2f = %.1fx (huge_pages), %.1fx "
           "(default); fm_frame_arena %.1fx (huge_pages), %.1fx (default), chained fm_arena "
           "%.1fx faster than malloc+free\n",
           med[m].best_ns, med[ah].ns_per_alloc, med[m].best_ns / med[ah].ns_per_alloc,
           med[m].best_ns / med[a4].ns_per_alloc,
           med[m].ns_per_alloc / med[FRAME_FRAME_ARENA_HUGE].ns_per_alloc,
           med[m].ns_per_alloc / med[FRAME_FRAME_ARENA].ns_per_alloc,
           med[m].ns_per_alloc / med[FRAME_CHAINED].ns_per_alloc);
    printf("fm_arena vs the bare bump pointer on the same pages: %.2f / %.2f ns = %.2fx, %+.2f ns "
           "(4 KiB pages); %.2f / %.2f ns = %.2fx, %+.2f ns (2 MiB pages) per allocation for the "
           "limit check, the counter and the arena in memory\n",
           med[a4].ns_per_alloc, med[b4].ns_per_alloc, med[a4].ns_per_alloc / med[b4].ns_per_alloc,
           med[a4].ns_per_alloc - med[b4].ns_per_alloc, med[ah].ns_per_alloc,
           med[bh].ns_per_alloc, med[ah].ns_per_alloc / med[bh].ns_per_alloc,
           med[ah].ns_per_alloc - med[bh].ns_per_alloc);
    printf("frame end: free of %u pointers %.0f ns (%.2f ns per allocation); fm_arena_reset "
           "%.0f ns per frame\n",
           n, med[m].end_ns, med[m].end_ns / (double)n, med[FRAME_ARENA].end_ns);

    if (opts->csv_dir) {
        fm_file_writer *f = bench_csv_open(opts->csv_dir, "frame.csv");
        fm_file_printf(f, "variant,allocs_per_frame,frames,run,ns_per_alloc_warm,fastest_warm,"
                   "slowest_warm,frame_end_ns,first_frame_ns_per_alloc,first_frame_faults,"
                   "faults_per_warm_frame\n");
        for (int v = 0; v < FRAME_VARIANTS; v++)
            for (int r = 0; r < repeat; r++) {
                const frame_result *p = &runs[v * repeat + r];
                fm_file_printf(f, "%s,%u,%d,%d,%.3f,%.3f,%.3f,%.0f,%.3f,%.0f,%.1f\n",
                        frame_variants[v].name, n, frames, r + 1, p->ns_per_alloc, p->best_ns,
                        p->worst_ns, p->end_ns, p->first_ns, p->first_faults, p->warm_faults);
            }
        bench_csv_close(f);
        printf("\nwrote %s/frame.csv\n", opts->csv_dir);
    }

    reset_cost(sizes, resets);
    shared_frames_report(sizes, n, frames, bytes, repeat);

    free(runs);
    free(s.faults);
    free(s.end_ns);
    free(s.per_alloc);
    free(s.ptrs);
    free(sizes);
}

/* ------------------------------------------------------- callgrind mode */

/* The loops tools/fm-callgrind measures with --callgrind-arena N: N
 * allocations in frames of CG_FRAME, the same mixed 16..256-byte sizes
 * (the first CG_FRAME of frame_run's sequence), align 0, one byte written
 * into each; each function is one frame, its frame end included:
 * - arena_inline: fm_arena_alloc as a caller writes it (the header's inline
 *   fast path in optimised builds), fm_arena_reset;
 * - arena_call: (fm_arena_alloc)(...), the library's out-of-line function;
 * - arena_frame_arena: fm_frame_alloc, fm_frame_arena_advance;
 * - arena_bump: the bare bump pointer, inlined (the lower bound);
 * - arena_malloc: malloc each (keeping its pointer), free all;
 * - arena_empty: the loop's skeleton (counter, size load, byte write) with
 *   no allocator, for the script to subtract. */
enum { CG_FRAME = 4096 };

static unsigned char cg_byte[16];

static BENCH_NOINLINE void fm_bench_cg_arena_inline(fm_arena *arena, const uint16_t *sizes,
                                                    uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_arena_alloc(arena, sizes[i], 0);
        if (!p) frame_failed("fm_arena_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
    fm_arena_reset(arena);
    BENCH_ESCAPE(arena); /* no tail call: callgrind sees the reset as a call */
}

static BENCH_NOINLINE void fm_bench_cg_arena_call(fm_arena *arena, const uint16_t *sizes,
                                                  uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = (fm_arena_alloc)(arena, sizes[i], 0);
        if (!p) frame_failed("fm_arena_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
    fm_arena_reset(arena);
    BENCH_ESCAPE(arena); /* no tail call: callgrind sees the reset as a call */
}

static BENCH_NOINLINE void fm_bench_cg_arena_frame_arena(fm_frame_arena *fa,
                                                         const uint16_t *sizes, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = fm_frame_alloc(fa, sizes[i], 0);
        if (!p) frame_failed("fm_frame_alloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
    fm_frame_arena_advance(fa);
    BENCH_ESCAPE(fa); /* no tail call */
}

static BENCH_NOINLINE void fm_bench_cg_arena_bump(unsigned char *buf, const uint16_t *sizes,
                                                  uint32_t n) {
    uintptr_t top = (uintptr_t)buf;
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t at = (top + (FM_DEFAULT_ALIGN - 1)) & ~(uintptr_t)(FM_DEFAULT_ALIGN - 1);
        top = at + sizes[i];
        unsigned char *p = (unsigned char *)at;
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
    }
}

static BENCH_NOINLINE void fm_bench_cg_arena_malloc(void **ptrs, const uint16_t *sizes,
                                                    uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *p = malloc(sizes[i]);
        if (!p) frame_failed("malloc");
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        ptrs[i] = p;
    }
    for (uint32_t i = 0; i < n; i++) free(ptrs[i]);
}

static BENCH_NOINLINE void fm_bench_cg_arena_empty(const uint16_t *sizes, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        size_t size = sizes[i];
        unsigned char *p = cg_byte;
        p[0] = (unsigned char)i;
        BENCH_ESCAPE(p);
        BENCH_ESCAPE((void *)(uintptr_t)size);
    }
}

int frame_callgrind(uint32_t allocs) {
    uint16_t sizes[CG_FRAME];
    uint64_t rng = 0x2545F4914F6CDD1Dull; /* frame_run's sequence */
    for (uint32_t i = 0; i < CG_FRAME; i++)
        sizes[i] = (uint16_t)(FRAME_MIN_SIZE +
                              bench_xorshift64(&rng) % (FRAME_MAX_SIZE - FRAME_MIN_SIZE + 1));
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "cg-arena"});
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.name = "cg-frame"});
    if (!arena || !fa) frame_failed("fm_arena_create / fm_frame_arena_create");
    unsigned char *buf = bench_xmalloc(frame_bytes(sizes, CG_FRAME) + FM_DEFAULT_ALIGN);
    void **ptrs = bench_xmalloc(CG_FRAME * sizeof *ptrs);

    /* Warm every allocator outside the measured functions: commit the arena's
     * frame and both frame arenas', fault the bump buffer, grow malloc's heap,
     * bind the PLT entries. */
    frame_arena(arena, sizes, CG_FRAME);
    void *p = (fm_arena_alloc)(arena, 16, 0);
    BENCH_ESCAPE(p);
    fm_arena_reset(arena);
    frame_frame_arena(fa, sizes, CG_FRAME);
    frame_frame_arena(fa, sizes, CG_FRAME);
    frame_bump(buf, sizes, CG_FRAME);
    frame_malloc(ptrs, sizes, CG_FRAME);

    uint32_t frames = 0;
    for (uint32_t done = 0; done < allocs; frames++) {
        uint32_t k = allocs - done < CG_FRAME ? allocs - done : CG_FRAME;
        fm_bench_cg_arena_empty(sizes, k);
        fm_bench_cg_arena_inline(arena, sizes, k);
        fm_bench_cg_arena_call(arena, sizes, k);
        fm_bench_cg_arena_frame_arena(fa, sizes, k);
        fm_bench_cg_arena_bump(buf, sizes, k);
        fm_bench_cg_arena_malloc(ptrs, sizes, k);
        done += k;
    }

    fm_arena_stats st;
    fm_arena_get_stats(arena, &st);
    fm_frame_arena_stats fst;
    fm_frame_arena_get_stats(fa, &fst);
    fm_arena_destroy(arena);
    fm_frame_arena_destroy(fa);
    free(ptrs);
    free(buf);
    uint64_t want = CG_FRAME + 1 + 2 * (uint64_t)allocs;
    uint64_t want_fa = 2 * CG_FRAME + (uint64_t)allocs;
    printf("callgrind-arena: %u allocations of mixed 16..256-byte sizes, align 0, in %u frames "
           "of up to %d, through fm_arena_alloc as callers compile it, its out-of-line "
           "function, fm_frame_alloc, the bare bump pointer, malloc/free and an empty loop; "
           "arena total_allocs %llu (expected %llu), failed %llu; frame arena total_allocs "
           "%llu (expected %llu), failed %llu\n",
           allocs, frames, CG_FRAME, (unsigned long long)st.total_allocs,
           (unsigned long long)want, (unsigned long long)st.failed_allocs,
           (unsigned long long)fst.total_allocs, (unsigned long long)want_fa,
           (unsigned long long)fst.failed_allocs);
    return st.total_allocs == want && st.failed_allocs == 0 && fst.total_allocs == want_fa &&
                   fst.failed_allocs == 0
               ? 0
               : 1;
}
