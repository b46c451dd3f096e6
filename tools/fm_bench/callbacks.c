/*
 * fm_bench/callbacks.c: callbacks without allocation (framemem/closure.h)
 * against closures malloc'd per call, and what the handles and reference
 * counts of pool items cost.
 *
 * Every callback captures a 32-byte struct (a pointer to the tally it
 * updates, a target and a source id, a damage and a position: what a "hit"
 * callback of a game carries) and runs cb_on_hit, a never-inlined function
 * reached through the closure's function pointer, which counts the call and
 * adds the captured target to a sum; each run checks both totals, so every
 * callback really ran with its own capture.
 *
 * Part 1, per frame: 5,000 callbacks made, called and released, for 1,000
 * frames (50 with --quick) after 2 warm-up frames. Two patterns:
 * - one at a time: make, call, release, the next;
 * - queued: make 5,000 (keeping their pointers), call them all, release them
 *   all: a per-frame callback queue.
 * Variants: a malloc'd struct {fn, capture} (what C does without a pool; the
 * baseline), fm_closure_make + fm_closure_call + fm_closure_release,
 * fm_closure_make_frame + fm_closure_call (released by
 * fm_frame_arena_advance at frame end), the library's own queue (fm_defer
 * with delay 0, fm_defer_run at frame end) with pooled and with frame
 * closures, and a lower bound that allocates nothing: the same struct built
 * on the stack (one at a time) or in a preallocated array (queued), the
 * capture copied in and called through its pointer. One at a time also has
 * the capture written in place, field by field, into a malloc'd closure and
 * into the stack closure: what the copy from the caller's temporary costs.
 * Part 2: fm_event_emit with 10 subscribers against a plain C array of 10
 * malloc'd closures called in a loop.
 * Part 3: fm_pool_retain + fm_pool_release pairs on a live item (its count
 * goes 1, 2, 1), fm_closure_retain + fm_closure_release, and an intrusive
 * counter inside the item (the lower bound).
 * Part 4: fm_pool_resolve of handles of 10,000 live items, in random and in
 * sequential order, against the classic weak reference (a pointer plus a
 * generation, compared with the generation stored in the item: a pointer
 * chase plus a compare) and a raw pointer with no check (the lower bound).
 *
 * Runs alternate the variants of a table (A B C ... A B C ...) and each
 * figure is the median of the runs. Everything the timed loops read (random
 * indices, handles) is prepared before the clock starts.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "framemem/arena.h"
#include "framemem/closure.h"
#include "framemem/clock.h"
#include "framemem/pool.h"

enum {
    CB_PER_FRAME = 5000, /* callbacks per frame */
    CB_WARM = 2,         /* warm-up frames: pools grown, both frame arenas used once */
    CB_LIVE = 10000,     /* live items for the handle and count loops */
    CB_SUBS = 10,        /* event subscribers */
    CB_ITEM = 64,        /* bytes of a pool item in parts 3 and 4 */
};

/* Hides a value from the optimiser: the timed loops get the callback as an
 * opaque function pointer, as a library does, not as a known function. */
#if defined(__GNUC__) || defined(__clang__)
#define CB_OPAQUE(x) __asm__("" : "+r"(x))
#else
#define CB_OPAQUE(x) ((void)0)
#endif

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, cold))
#endif
static void cb_failed(const char *what) {
    bench_die("callbacks: %s failed (%s: %s)", what, fm_error_name(fm_last_error()),
              fm_last_error_message());
}

/* ------------------------------------------------- capture and callback */

typedef struct cb_tally {
    uint64_t calls;
    uint64_t sum; /* of the captured targets */
} cb_tally;

/* The capture: 32 bytes. */
typedef struct cb_hit {
    cb_tally *tally;
    uint32_t target, source;
    float damage, x, y, z;
} cb_hit;

_Static_assert(sizeof(cb_hit) == 32, "the capture is meant to be 32 bytes");

static BENCH_NOINLINE void cb_on_hit(void *capture, void *arg) {
    (void)arg;
    const cb_hit *h = capture;
    h->tally->calls++;
    h->tally->sum += h->target;
}

static inline cb_hit cb_hit_at(cb_tally *t, uint32_t i, uint32_t frame) {
    return (cb_hit){.tally = t,
                    .target = i,
                    .source = frame,
                    .damage = (float)(i & 15u),
                    .x = (float)i,
                    .y = 1.0f,
                    .z = 2.0f};
}

/* Sum of the targets of one frame: 0 + 1 + ... + (n - 1). */
static uint64_t cb_frame_sum(uint32_t n) { return (uint64_t)n * (n - 1) / 2; }

/* The closure C code mallocs: the function pointer and a copy of the
 * capture in one block, aligned like fm_closure's capture. */
typedef struct heap_closure {
    fm_closure_fn fn;
    size_t capture_size;
    _Alignas(16) unsigned char capture[];
} heap_closure;

enum { CB_STRIDE = (sizeof(heap_closure) + sizeof(cb_hit) + 15) & ~15 };

static inline heap_closure *heap_closure_make(fm_closure_fn fn, const void *capture,
                                              size_t size) {
    heap_closure *c = malloc(sizeof *c + size);
    if (!c) return NULL;
    c->fn = fn;
    c->capture_size = size;
    memcpy(c->capture, capture, size);
    return c;
}

static inline void heap_closure_call(const heap_closure *c, void *arg) {
    c->fn((void *)c->capture, arg);
}

/* The lower bound's closure: the same struct in memory it already has. */
static inline heap_closure *bare_closure_make(unsigned char *at, fm_closure_fn fn,
                                              const void *capture, size_t size) {
    heap_closure *c = (heap_closure *)(void *)at;
    c->fn = fn;
    c->capture_size = size;
    memcpy(c->capture, capture, size);
    return c;
}

/* The hand-written alternative to the copy: the capture's fields stored
 * straight into the closure. */
static inline heap_closure *inplace_closure_make(void *at, fm_closure_fn fn, cb_tally *t,
                                                 uint32_t i, uint32_t frame) {
    heap_closure *c = at;
    c->fn = fn;
    c->capture_size = sizeof(cb_hit);
    cb_hit *h = (cb_hit *)(void *)c->capture;
    h->tally = t;
    h->target = i;
    h->source = frame;
    h->damage = (float)(i & 15u);
    h->x = (float)i;
    h->y = 1.0f;
    h->z = 2.0f;
    return c;
}

/* ============================================ part 1: callbacks per frame */

typedef enum cb_kind {
    CB_ONE_MALLOC,
    CB_ONE_POOL,
    CB_ONE_FRAME,
    CB_ONE_STACK,
    CB_ONE_POOL_INPLACE,
    CB_ONE_FRAME_INPLACE,
    CB_ONE_MALLOC_INPLACE,
    CB_ONE_STACK_INPLACE,
    CB_Q_MALLOC,
    CB_Q_POOL,
    CB_Q_FRAME,
    CB_Q_DEFER_POOL,
    CB_Q_DEFER_FRAME,
    CB_Q_BARE,
} cb_kind;

typedef struct cb_variant {
    const char *pattern;
    const char *name;
    const char *release; /* what releases the closure */
    cb_kind kind;
} cb_variant;

#define CB_ONE "one at a time"
#define CB_QUEUED "queued (5,000, then call all)"
static const cb_variant cb_variants[] = {
    {CB_ONE, "malloc'd closure (baseline)", "free", CB_ONE_MALLOC},
    {CB_ONE, "fm_closure_make + fm_closure_call", "fm_closure_release", CB_ONE_POOL},
    {CB_ONE, "fm_closure_make_frame + fm_closure_call", "fm_frame_arena_advance at frame end",
     CB_ONE_FRAME},
    {CB_ONE, "closure on the stack, no allocation (lower bound)", "-", CB_ONE_STACK},
    {CB_ONE, "FM_CLOSURE (capture built in place) + fm_closure_call", "fm_closure_release",
     CB_ONE_POOL_INPLACE},
    {CB_ONE, "FM_CLOSURE_FRAME (capture built in place) + fm_closure_call",
     "fm_frame_arena_advance at frame end", CB_ONE_FRAME_INPLACE},
    {CB_ONE, "malloc'd closure, capture written in place (hand-written C)", "free",
     CB_ONE_MALLOC_INPLACE},
    {CB_ONE, "closure on the stack, capture written in place (no copy)", "-",
     CB_ONE_STACK_INPLACE},
    {CB_QUEUED, "malloc'd closures (baseline)", "free of each", CB_Q_MALLOC},
    {CB_QUEUED, "fm_closure_make + fm_closure_call", "fm_closure_release of each", CB_Q_POOL},
    {CB_QUEUED, "fm_closure_make_frame + fm_closure_call", "fm_frame_arena_advance at frame end",
     CB_Q_FRAME},
    {CB_QUEUED, "fm_closure_make + fm_defer(0) + fm_closure_release; fm_defer_run calls",
     "fm_defer_run", CB_Q_DEFER_POOL},
    {CB_QUEUED, "fm_closure_make_frame + fm_defer(0); fm_defer_run calls",
     "fm_frame_arena_advance at frame end", CB_Q_DEFER_FRAME},
    {CB_QUEUED, "closures in a preallocated array (lower bound)", "-", CB_Q_BARE},
};
enum { CB_VARIANTS = sizeof cb_variants / sizeof cb_variants[0] };

/* ------------------------------------------------------- timed frames */

static BENCH_NOINLINE uint64_t one_malloc(fm_closure_fn fn, cb_tally *t, uint32_t n,
                                          uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        heap_closure *c = heap_closure_make(fn, &h, sizeof h);
        if (!c) cb_failed("malloc");
        heap_closure_call(c, NULL);
        free(c);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t one_pool(fm_closure_pool *cp, fm_closure_fn fn, cb_tally *t,
                                        uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make(cp, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make");
        fm_closure_call(c, NULL);
        fm_closure_release(c);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t one_frame(fm_frame_arena *fa, fm_closure_fn fn, cb_tally *t,
                                         uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make_frame(fa, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make_frame");
        fm_closure_call(c, NULL);
    }
    fm_frame_arena_advance(fa);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t one_stack(fm_closure_fn fn, cb_tally *t, uint32_t n,
                                         uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        _Alignas(16) unsigned char at[CB_STRIDE];
        unsigned char *p = at;
        CB_OPAQUE(p); /* the capture is really copied, as every other variant does */
        cb_hit h = cb_hit_at(t, i, frame);
        heap_closure_call(bare_closure_make(p, fn, &h, sizeof h), NULL);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t one_pool_inplace(fm_closure_pool *cp, fm_closure_fn fn,
                                                cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        fm_closure *c = FM_CLOSURE(cp, fn, cb_hit, .tally = t, .target = i, .source = frame,
                                   .damage = (float)(i & 15u), .x = (float)i, .y = 1.0f,
                                   .z = 2.0f);
        if (!c) cb_failed("FM_CLOSURE");
        fm_closure_call(c, NULL);
        fm_closure_release(c);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t one_frame_inplace(fm_frame_arena *fa, fm_closure_fn fn,
                                                 cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        fm_closure *c = FM_CLOSURE_FRAME(fa, fn, cb_hit, .tally = t, .target = i,
                                         .source = frame, .damage = (float)(i & 15u),
                                         .x = (float)i, .y = 1.0f, .z = 2.0f);
        if (!c) cb_failed("FM_CLOSURE_FRAME");
        fm_closure_call(c, NULL);
    }
    fm_frame_arena_advance(fa);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t one_malloc_inplace(fm_closure_fn fn, cb_tally *t, uint32_t n,
                                                  uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        void *at = malloc(CB_STRIDE);
        if (!at) cb_failed("malloc");
        heap_closure *c = inplace_closure_make(at, fn, t, i, frame);
        heap_closure_call(c, NULL);
        free(c);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t one_stack_inplace(fm_closure_fn fn, cb_tally *t, uint32_t n,
                                                 uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        _Alignas(16) unsigned char at[CB_STRIDE];
        unsigned char *p = at;
        CB_OPAQUE(p);
        heap_closure_call(inplace_closure_make(p, fn, t, i, frame), NULL);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t q_malloc(fm_closure_fn fn, void **slots, cb_tally *t, uint32_t n,
                                        uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        heap_closure *c = heap_closure_make(fn, &h, sizeof h);
        if (!c) cb_failed("malloc");
        slots[i] = c;
    }
    for (uint32_t i = 0; i < n; i++) heap_closure_call(slots[i], NULL);
    for (uint32_t i = 0; i < n; i++) free(slots[i]);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t q_pool(fm_closure_pool *cp, fm_closure_fn fn, void **slots,
                                      cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make(cp, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make");
        slots[i] = c;
    }
    for (uint32_t i = 0; i < n; i++) fm_closure_call(slots[i], NULL);
    for (uint32_t i = 0; i < n; i++) fm_closure_release(slots[i]);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t q_frame(fm_frame_arena *fa, fm_closure_fn fn, void **slots,
                                       cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make_frame(fa, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make_frame");
        slots[i] = c;
    }
    for (uint32_t i = 0; i < n; i++) fm_closure_call(slots[i], NULL);
    fm_frame_arena_advance(fa);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t q_defer_pool(fm_closure_pool *cp, fm_defer_queue *q,
                                            fm_closure_fn fn, cb_tally *t, uint32_t n,
                                            uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make(cp, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make");
        if (!fm_defer(q, c, 0)) cb_failed("fm_defer");
        fm_closure_release(c); /* the queue holds it now */
    }
    uint32_t ran = fm_defer_run(q);
    uint64_t t1 = fm_clock_now();
    if (ran != n) bench_die("callbacks: fm_defer_run ran %u of %u closures", ran, n);
    return t1 - t0;
}

static BENCH_NOINLINE uint64_t q_defer_frame(fm_frame_arena *fa, fm_defer_queue *q,
                                             fm_closure_fn fn, cb_tally *t, uint32_t n,
                                             uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make_frame(fa, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make_frame");
        if (!fm_defer(q, c, 0)) cb_failed("fm_defer");
    }
    uint32_t ran = fm_defer_run(q);
    fm_frame_arena_advance(fa);
    uint64_t t1 = fm_clock_now();
    if (ran != n) bench_die("callbacks: fm_defer_run ran %u of %u closures", ran, n);
    return t1 - t0;
}

static BENCH_NOINLINE uint64_t q_bare(unsigned char *buf, fm_closure_fn fn, void **slots,
                                      cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        slots[i] = bare_closure_make(buf + (size_t)i * CB_STRIDE, fn, &h, sizeof h);
    }
    for (uint32_t i = 0; i < n; i++) heap_closure_call(slots[i], NULL);
    return fm_clock_now() - t0;
}

/* ---------------------------------------------------------- one run */

typedef struct cb_scratch {
    void **slots;       /* CB_PER_FRAME closure pointers */
    unsigned char *buf; /* the lower bound's array, CB_PER_FRAME * CB_STRIDE */
} cb_scratch;

static fm_closure_pool *cb_pool_create(const char *name) {
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){.name = name});
    if (!cp) cb_failed("fm_closure_pool_create");
    return cp;
}

static fm_frame_arena *cb_frame_arena_create(const char *name) {
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.name = name});
    if (!fa) cb_failed("fm_frame_arena_create");
    return fa;
}

/* Nanoseconds per callback of one run: F timed frames after CB_WARM. */
static double cb_once(const cb_variant *v, uint32_t n, uint32_t frames, cb_scratch *s) {
    fm_closure_pool *cp = NULL;
    fm_frame_arena *fa = NULL;
    fm_defer_queue *q = NULL;
    cb_kind k = v->kind;
    if (k == CB_ONE_POOL || k == CB_ONE_POOL_INPLACE || k == CB_Q_POOL || k == CB_Q_DEFER_POOL)
        cp = cb_pool_create("bench-cb");
    if (k == CB_ONE_FRAME || k == CB_ONE_FRAME_INPLACE || k == CB_Q_FRAME || k == CB_Q_DEFER_FRAME)
        fa = cb_frame_arena_create("bench-cb");
    if (k == CB_Q_DEFER_POOL || k == CB_Q_DEFER_FRAME) {
        q = fm_defer_queue_create(&(fm_defer_queue_desc){.name = "bench-cb"});
        if (!q) cb_failed("fm_defer_queue_create");
    }

    fm_closure_fn fn = cb_on_hit;
    cb_tally t = {0, 0};
    uint64_t ticks = 0;
    uint32_t total = CB_WARM + frames;
    for (uint32_t f = 0; f < total; f++) {
        uint64_t d = 0;
        switch (k) {
        case CB_ONE_MALLOC: d = one_malloc(fn, &t, n, f); break;
        case CB_ONE_POOL: d = one_pool(cp, fn, &t, n, f); break;
        case CB_ONE_FRAME: d = one_frame(fa, fn, &t, n, f); break;
        case CB_ONE_STACK: d = one_stack(fn, &t, n, f); break;
        case CB_ONE_POOL_INPLACE: d = one_pool_inplace(cp, fn, &t, n, f); break;
        case CB_ONE_FRAME_INPLACE: d = one_frame_inplace(fa, fn, &t, n, f); break;
        case CB_ONE_MALLOC_INPLACE: d = one_malloc_inplace(fn, &t, n, f); break;
        case CB_ONE_STACK_INPLACE: d = one_stack_inplace(fn, &t, n, f); break;
        case CB_Q_MALLOC: d = q_malloc(fn, s->slots, &t, n, f); break;
        case CB_Q_POOL: d = q_pool(cp, fn, s->slots, &t, n, f); break;
        case CB_Q_FRAME: d = q_frame(fa, fn, s->slots, &t, n, f); break;
        case CB_Q_DEFER_POOL: d = q_defer_pool(cp, q, fn, &t, n, f); break;
        case CB_Q_DEFER_FRAME: d = q_defer_frame(fa, q, fn, &t, n, f); break;
        case CB_Q_BARE: d = q_bare(s->buf, fn, s->slots, &t, n, f); break;
        }
        if (f >= CB_WARM) ticks += d;
    }

    /* Every callback ran once with its own capture; nothing is left over. */
    uint64_t want = (uint64_t)total * n;
    if (t.calls != want || t.sum != (uint64_t)total * cb_frame_sum(n))
        bench_die("callbacks, %s: %llu calls (expected %llu), target sum %llu (expected %llu)",
                  v->name, (unsigned long long)t.calls, (unsigned long long)want,
                  (unsigned long long)t.sum, (unsigned long long)total * cb_frame_sum(n));
    if (cp) {
        fm_closure_pool_stats st;
        fm_closure_pool_get_stats(cp, &st);
        if (st.live || st.refused || st.total_made != want)
            bench_die("callbacks, %s: closure pool stats wrong after the run: live %llu, "
                      "refused %llu, total_made %llu (expected %llu)",
                      v->name, (unsigned long long)st.live, (unsigned long long)st.refused,
                      (unsigned long long)st.total_made, (unsigned long long)want);
        fm_closure_pool_destroy(cp);
    }
    if (fa) {
        fm_frame_arena_stats st;
        fm_frame_arena_get_stats(fa, &st);
        if (st.failed_allocs || st.total_allocs != want || st.frame != total)
            bench_die("callbacks, %s: frame arena stats wrong after the run: total_allocs %llu "
                      "(expected %llu), failed %llu, frame %llu",
                      v->name, (unsigned long long)st.total_allocs, (unsigned long long)want,
                      (unsigned long long)st.failed_allocs, (unsigned long long)st.frame);
        fm_frame_arena_destroy(fa);
    }
    if (q) {
        if (fm_defer_pending(q) != 0) bench_die("callbacks, %s: defer queue not empty", v->name);
        fm_defer_queue_destroy(q);
    }
    return (double)fm_clock_to_ns(ticks) / ((double)frames * n);
}

/* ============================================================ statistics */

/* ns[v * repeat + r]: sorts each variant's runs; med, lo and hi per variant. */
static void cb_summarise(double *ns, int variants, int repeat, double *med, double *lo,
                         double *hi) {
    for (int v = 0; v < variants; v++) {
        double *runs = &ns[v * repeat];
        med[v] = bench_median(runs, (size_t)repeat); /* sorts the runs */
        lo[v] = runs[0];
        hi[v] = runs[repeat - 1];
    }
}

/* One CSV row per variant and run: table,pattern,variant,run,ns (runs in
 * the order they ran, before cb_summarise sorts them). */
static void cb_csv(fm_file_writer *f, const char *table, const char *const *patterns,
                   const char *const *names, int variants, const double *ns, int repeat) {
    if (!f) return;
    for (int v = 0; v < variants; v++)
        for (int r = 0; r < repeat; r++)
            fm_file_printf(f, "%s,\"%s\",\"%s\",%d,%.3f\n", table, patterns ? patterns[v] : "",
                    names[v], r + 1, ns[v * repeat + r]);
}

static const char *met(bool ok) { return ok ? "met" : "NOT met"; }

/* ====================================================== part 2: events */

typedef enum ev_kind { EV_EMIT, EV_POOLED_ARRAY, EV_MALLOC_ARRAY } ev_kind;

static const char *const ev_names[] = {
    "fm_event_emit, 10 subscribed pooled closures",
    "fm_closure_call over an array of 10 pooled closures",
    "plain C: array of 10 malloc'd closures called in a loop (baseline)",
};
enum { EV_VARIANTS = sizeof ev_names / sizeof ev_names[0] };

static BENCH_NOINLINE uint64_t ev_emit(fm_event *ev, uint32_t emits) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t e = 0; e < emits; e++) fm_event_emit(ev, NULL);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t ev_pooled_array(fm_closure *const *subs, uint32_t count,
                                               uint32_t emits) {
    CB_OPAQUE(count);
    uint64_t t0 = fm_clock_now();
    for (uint32_t e = 0; e < emits; e++)
        for (uint32_t s = 0; s < count; s++) fm_closure_call(subs[s], NULL);
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t ev_malloc_array(heap_closure *const *subs, uint32_t count,
                                               uint32_t emits) {
    CB_OPAQUE(count);
    uint64_t t0 = fm_clock_now();
    for (uint32_t e = 0; e < emits; e++)
        for (uint32_t s = 0; s < count; s++) heap_closure_call(subs[s], NULL);
    return fm_clock_now() - t0;
}

/* Nanoseconds per subscriber call of one run. */
static double ev_once(ev_kind k, uint32_t emits) {
    cb_tally t = {0, 0};
    fm_closure_pool *cp = cb_pool_create("bench-event");
    fm_event *ev = NULL;
    fm_closure *pooled[CB_SUBS];
    heap_closure *heap[CB_SUBS];
    if (k == EV_EMIT) {
        ev = fm_event_create(&(fm_event_desc){.name = "bench-event"});
        if (!ev) cb_failed("fm_event_create");
    }
    for (uint32_t s = 0; s < CB_SUBS; s++) {
        cb_hit h = cb_hit_at(&t, s, 0);
        if (k == EV_MALLOC_ARRAY) {
            heap[s] = heap_closure_make(cb_on_hit, &h, sizeof h);
            if (!heap[s]) cb_failed("malloc");
            continue;
        }
        pooled[s] = fm_closure_make(cp, cb_on_hit, &h, sizeof h);
        if (!pooled[s]) cb_failed("fm_closure_make");
        if (ev) {
            if (fm_handle_is_null(fm_event_subscribe(ev, pooled[s])))
                cb_failed("fm_event_subscribe");
            fm_closure_release(pooled[s]); /* the event holds it */
        }
    }
    uint32_t warm = emits / 100 + 1;
    uint64_t ticks = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t m = pass ? emits : warm;
        uint64_t d = k == EV_EMIT           ? ev_emit(ev, m)
                     : k == EV_POOLED_ARRAY ? ev_pooled_array(pooled, CB_SUBS, m)
                                            : ev_malloc_array(heap, CB_SUBS, m);
        if (pass) ticks = d;
    }
    uint64_t want = (uint64_t)(warm + emits) * CB_SUBS;
    if (t.calls != want || t.sum != (uint64_t)(warm + emits) * cb_frame_sum(CB_SUBS))
        bench_die("callbacks, %s: %llu calls (expected %llu)", ev_names[k],
                  (unsigned long long)t.calls, (unsigned long long)want);
    if (ev) fm_event_destroy(ev); /* releases the subscribers' closures */
    for (uint32_t s = 0; s < CB_SUBS; s++) {
        if (k == EV_MALLOC_ARRAY) free(heap[s]);
        else if (k == EV_POOLED_ARRAY) fm_closure_release(pooled[s]);
    }
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(cp, &st);
    if (st.live) bench_die("callbacks, %s: %llu closures live after the run", ev_names[k],
                           (unsigned long long)st.live);
    fm_closure_pool_destroy(cp);
    return (double)fm_clock_to_ns(ticks) / ((double)emits * CB_SUBS);
}

/* ============================================ parts 3 and 4: pool items */

/* The baseline's item: the generation and an intrusive count inside it. */
typedef struct cb_entity {
    uint32_t gen;
    uint32_t refs;
    unsigned char rest[CB_ITEM - 8];
} cb_entity;

/* The classic weak reference: a pointer and the generation it expects. */
typedef struct cb_weak {
    cb_entity *p;
    uint32_t gen;
} cb_weak;

typedef struct cb_items {
    fm_pool *pool;
    void *items[CB_LIVE];      /* pool items, in allocation order */
    fm_handle handles[CB_LIVE]; /* their handles */
    cb_entity *ents[CB_LIVE];  /* the baseline's items, malloc'd one by one */
    cb_weak weak[CB_LIVE];     /* their weak references */
    fm_closure_pool *cp;
    fm_closure *closure;       /* one live pooled closure */
    uint64_t sum_items;        /* sum of the item addresses over an index array */
    uint64_t sum_ents;
    /* The bare indirection (issue 22's physical limit of a handle lookup):
     * a copy of the pool's per-record origins and its handle geometry. */
    uintptr_t *bare_metas, *bare_items;
    uint32_t bare_slot_bits, bare_key, bare_stride;
} cb_items;

static void cb_items_open(cb_items *it) {
    memset(it, 0, sizeof *it);
    it->pool = fm_pool_create(&(fm_pool_desc){.name = "bench-items",
                                              .item_size = CB_ITEM,
                                              .item_align = 16,
                                              .initial_capacity = CB_LIVE});
    if (!it->pool) cb_failed("fm_pool_create");
    for (uint32_t i = 0; i < CB_LIVE; i++) {
        it->items[i] = fm_pool_alloc(it->pool);
        if (!it->items[i]) cb_failed("fm_pool_alloc");
        memset(it->items[i], (int)(i & 0xff), CB_ITEM);
        it->handles[i] = fm_pool_handle(it->pool, it->items[i]);
        if (fm_handle_is_null(it->handles[i])) cb_failed("fm_pool_handle");
        it->ents[i] = bench_xmalloc(sizeof(cb_entity));
        memset(it->ents[i], (int)(i & 0xff), sizeof(cb_entity));
        it->ents[i]->gen = 2 * i + 1;
        it->ents[i]->refs = 1;
        it->weak[i] = (cb_weak){it->ents[i], 2 * i + 1};
    }
    /* The handle layout the inline resolve reads (framemem/detail/pool.h). */
    const fm__pool_hot *hot = (const fm__pool_hot *)(const void *)it->pool;
    size_t bare_bytes = ((size_t)hot->n_bases + 1) * sizeof(uintptr_t); /* [0]: dead */
    it->bare_metas = bench_xmalloc(bare_bytes);
    it->bare_items = bench_xmalloc(bare_bytes);
    memcpy(it->bare_metas, hot->bases, bare_bytes);
    memcpy(it->bare_items, (const uintptr_t *)hot->bases[-1], bare_bytes);
    it->bare_slot_bits = hot->slot_bits;
    it->bare_key = hot->gen_key;
    it->bare_stride = hot->stride;
    it->cp = cb_pool_create("bench-refs");
    cb_tally t = {0, 0};
    cb_hit h = cb_hit_at(&t, 0, 0);
    it->closure = fm_closure_make(it->cp, cb_on_hit, &h, sizeof h);
    if (!it->closure) cb_failed("fm_closure_make");
}

static void cb_items_close(cb_items *it) {
    for (uint32_t i = 0; i < CB_LIVE; i++) {
        if (fm_pool_refcount(it->pool, it->items[i]) != 1 || it->ents[i]->refs != 1)
            bench_die("callbacks: item %u's count is not 1 after the runs", i);
        fm_pool_free(it->pool, it->items[i]);
        free(it->ents[i]);
    }
    fm_pool_stats st;
    fm_pool_get_stats(it->pool, &st);
    if (st.live || st.misuse_count)
        bench_die("callbacks: item pool stats wrong after the runs: live %llu, misuse %llu",
                  (unsigned long long)st.live, (unsigned long long)st.misuse_count);
    fm_pool_destroy(it->pool);
    free(it->bare_metas);
    free(it->bare_items);
    if (!fm_closure_release(it->closure)) bench_die("callbacks: closure count not 1 at the end");
    fm_closure_pool_destroy(it->cp);
}

/* ------------------------------------------------------ part 3: counts */

typedef enum ref_kind { REF_POOL_ONE, REF_POOL_RANDOM, REF_CLOSURE, REF_INTR_ONE, REF_INTR_RANDOM } ref_kind;

static const char *const ref_names[] = {
    "fm_pool_retain + fm_pool_release, one live item",
    "fm_pool_retain + fm_pool_release, random item of 10,000 live",
    "fm_closure_retain + fm_closure_release, one pooled closure",
    "intrusive count in the item, ++ / -- and zero test, one item (lower bound)",
    "intrusive count in the item, random item of 10,000 (lower bound)",
};
enum { REF_VARIANTS = sizeof ref_names / sizeof ref_names[0] };

/* idx[i] & mask picks the item: mask 0 keeps to item 0 at the same cost. */
static BENCH_NOINLINE uint64_t refs_pool(fm_pool *pool, void *const *items, const uint32_t *idx,
                                         uint32_t mask, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        void *item = items[idx[i] & mask];
        fm_pool_retain(pool, item);
        fm_pool_release(pool, item);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE uint64_t refs_closure(fm_closure *c, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        fm_closure_retain(c);
        fm_closure_release(c);
    }
    return fm_clock_now() - t0;
}

static BENCH_NOINLINE void cb_entity_free(cb_entity *e) {
    bench_die("callbacks: intrusive count of %p reached 0", (void *)e);
}

static BENCH_NOINLINE uint64_t refs_intrusive(cb_entity *const *ents, const uint32_t *idx,
                                              uint32_t mask, uint32_t n) {
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) {
        cb_entity *e = ents[idx[i] & mask];
        e->refs++;
        BENCH_ESCAPE(e); /* retain and release are separate operations */
        if (--e->refs == 0) cb_entity_free(e);
    }
    return fm_clock_now() - t0;
}

static double ref_once(ref_kind k, cb_items *it, const uint32_t *idx, uint32_t n) {
    uint64_t ticks = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t m = pass ? n : n / 100 + 1;
        uint64_t d = 0;
        switch (k) {
        case REF_POOL_ONE: d = refs_pool(it->pool, it->items, idx, 0, m); break;
        case REF_POOL_RANDOM: d = refs_pool(it->pool, it->items, idx, ~0u, m); break;
        case REF_CLOSURE: d = refs_closure(it->closure, m); break;
        case REF_INTR_ONE: d = refs_intrusive(it->ents, idx, 0, m); break;
        case REF_INTR_RANDOM: d = refs_intrusive(it->ents, idx, ~0u, m); break;
        }
        if (pass) ticks = d;
    }
    return (double)fm_clock_to_ns(ticks) / (double)n;
}

/* ---------------------------------------------------- part 4: resolves */

typedef enum res_kind { RES_INLINE, RES_CALL, RES_CHASE, RES_RAW, RES_BARE } res_kind;

static const char *const res_names[] = {
    "fm_pool_resolve, as callers compile it (inline)",
    "(fm_pool_resolve), the library's out-of-line function",
    "pointer + generation: chase and compare (baseline)",
    "raw pointer, no check (lower bound)",
    "bare handle -> record's origins -> generation word -> item, no bound check (physical limit)",
};
enum { RES_KINDS = sizeof res_names / sizeof res_names[0] };

static BENCH_NOINLINE uint64_t res_inline(const fm_pool *pool, const fm_handle *hs,
                                          const uint32_t *idx, uint32_t n, uint64_t *out) {
    uint64_t acc = 0;
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) acc += (uintptr_t)fm_pool_resolve(pool, hs[idx[i]]);
    uint64_t t1 = fm_clock_now();
    *out = acc;
    return t1 - t0;
}

static BENCH_NOINLINE uint64_t res_call(const fm_pool *pool, const fm_handle *hs,
                                        const uint32_t *idx, uint32_t n, uint64_t *out) {
    uint64_t acc = 0;
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) acc += (uintptr_t)(fm_pool_resolve)(pool, hs[idx[i]]);
    uint64_t t1 = fm_clock_now();
    *out = acc;
    return t1 - t0;
}

static inline cb_entity *cb_weak_resolve(cb_weak w) {
    return w.p->gen == w.gen ? w.p : NULL;
}

static BENCH_NOINLINE uint64_t res_chase(const cb_weak *ws, const uint32_t *idx, uint32_t n,
                                         uint64_t *out) {
    uint64_t acc = 0;
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) acc += (uintptr_t)cb_weak_resolve(ws[idx[i]]);
    uint64_t t1 = fm_clock_now();
    *out = acc;
    return t1 - t0;
}

static BENCH_NOINLINE uint64_t res_raw(cb_entity *const *ents, const uint32_t *idx, uint32_t n,
                                       uint64_t *out) {
    uint64_t acc = 0;
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) acc += (uintptr_t)ents[idx[i]];
    uint64_t t1 = fm_clock_now();
    *out = acc;
    return t1 - t0;
}

/* The indirection of a handle with nothing else: its record's two origins
 * from two arrays, the slot's meta word compared with live | generation,
 * the item's address; no check that the record or the slot exists. */
static inline void *res_bare_one(const cb_items *it, fm_handle h) {
    /* The geometry is read before anything depends on the handle, as
     * fm_pool_resolve reads its pool's, so a loop reads it once. */
    const uintptr_t *metas = it->bare_metas, *items = it->bare_items;
    uint32_t slot_bits = it->bare_slot_bits, key = it->bare_key, stride = it->bare_stride;
    uint32_t loc = (uint32_t)h.bits;
    uint32_t rec1 = loc >> slot_bits;
    uint32_t want = 0x80000000u | ((uint32_t)(h.bits >> 32) + key);
    return *(const uint32_t *)(metas[rec1] + (uintptr_t)loc * 4u) == want
               ? (void *)(items[rec1] + (uintptr_t)loc * stride)
               : NULL;
}

static BENCH_NOINLINE uint64_t res_bare(const cb_items *it, const uint32_t *idx, uint32_t n,
                                        uint64_t *out) {
    uint64_t acc = 0;
    uint64_t t0 = fm_clock_now();
    for (uint32_t i = 0; i < n; i++) acc += (uintptr_t)res_bare_one(it, it->handles[idx[i]]);
    uint64_t t1 = fm_clock_now();
    *out = acc;
    return t1 - t0;
}

/* Sum of the addresses the n lookups must find (untimed). */
static uint64_t res_expected(void *const *ptrs, const uint32_t *idx, uint32_t n) {
    uint64_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += (uintptr_t)ptrs[idx[i]];
    return acc;
}

static double res_once(res_kind k, const cb_items *it, const uint32_t *idx, uint32_t n,
                       uint64_t want_items, uint64_t want_ents) {
    uint64_t ticks = 0, got = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t m = pass ? n : n / 100 + 1;
        uint64_t d = 0;
        switch (k) {
        case RES_INLINE: d = res_inline(it->pool, it->handles, idx, m, &got); break;
        case RES_CALL: d = res_call(it->pool, it->handles, idx, m, &got); break;
        case RES_CHASE: d = res_chase(it->weak, idx, m, &got); break;
        case RES_RAW: d = res_raw(it->ents, idx, m, &got); break;
        case RES_BARE: d = res_bare(it, idx, m, &got); break;
        }
        if (pass) ticks = d;
    }
    uint64_t want = k == RES_INLINE || k == RES_CALL || k == RES_BARE ? want_items : want_ents;
    if (got != want) bench_die("callbacks, %s: a lookup failed (address sum differs)", res_names[k]);
    return (double)fm_clock_to_ns(ticks) / (double)n;
}

/* ================================================================ report */

static void cb_part_frames(const bench_opts *opts, int repeat, fm_file_writer *csv, double *x_pool_one,
                           double *x_frame_one, double *x_pool_q, double *x_frame_q) {
    uint32_t n = CB_PER_FRAME;
    uint32_t frames = opts->quick ? 50 : 1000;
    cb_scratch s = {
        .slots = bench_xmalloc((size_t)n * sizeof(void *)),
        .buf = bench_xmalloc((size_t)n * CB_STRIDE),
    };
    memset(s.slots, 0, (size_t)n * sizeof(void *));
    memset(s.buf, 0, (size_t)n * CB_STRIDE);

    double *ns = bench_xmalloc((size_t)CB_VARIANTS * (size_t)repeat * sizeof *ns);
    for (int r = 0; r < repeat; r++)
        for (int v = 0; v < CB_VARIANTS; v++)
            ns[v * repeat + r] = cb_once(&cb_variants[v], n, frames, &s);
    if (csv) {
        const char *pat[CB_VARIANTS], *names[CB_VARIANTS];
        for (int v = 0; v < CB_VARIANTS; v++) {
            pat[v] = cb_variants[v].pattern;
            names[v] = cb_variants[v].name;
        }
        cb_csv(csv, "frames", pat, names, CB_VARIANTS, ns, repeat);
    }
    double med[CB_VARIANTS], lo[CB_VARIANTS], hi[CB_VARIANTS];
    cb_summarise(ns, CB_VARIANTS, repeat, med, lo, hi);

    printf("\n## callbacks\n\n");
    printf("Callbacks without allocation (framemem/closure.h) against closures malloc'd per "
           "call. Each frame makes %u callbacks, calls each once and releases it, for %u "
           "frames after %d warm-up frames (which grow the pools and use both arenas of the "
           "frame arena once). Every callback captures a %zu-byte struct (a pointer to the "
           "tally it updates, a target and a source id, a damage, a position), built in the "
           "loop, and runs cb_on_hit, a never-inlined function reached through the closure's "
           "function pointer (the loops get it as an opaque pointer), which counts the call "
           "and adds the captured target to a sum: each run checks both totals. Malloc'd "
           "closure: malloc(%zu) for a struct {fn, capture size, 16-byte aligned capture} "
           "(the same layout as fm_closure's), the capture memcpy'd in, called through "
           "c->fn, freed: what C code does without a pool, inlined into the loop. "
           "fm_closure_make / fm_closure_call / fm_closure_release (and the _frame calls) "
           "are written as callers write them: in optimised builds closure.h inlines their "
           "common case (class pool pop or frame bump, header, capture copy; misuse and "
           "refusals go into the library), elsewhere they are library calls; the "
           "closure pool has default settings (size classes 16..256, one chunk to start). "
           "fm_closure_make_frame allocates from an fm_frame_arena (2 frames, default "
           "settings) and nothing releases it but fm_frame_arena_advance at frame end, "
           "which is timed. Patterns: one at a time (make, call, release, then the next) "
           "and queued (make all %u keeping their pointers, call them all, release them "
           "all: a per-frame callback queue); fm_defer (delay 0) with fm_defer_run at "
           "frame end is the library's own queue (the queue retains the closure, the maker "
           "releases its reference, the run calls and releases it). Lower bounds allocate "
           "nothing: the same struct built on the stack (one at a time) or in a "
           "preallocated array (queued), the capture copied in, called through its pointer: "
           "the floor of any closure that takes its capture by pointer and copies it. "
           "Written in place: the capture's fields stored one by one straight into the "
           "closure (no temporary, no copy), which fm_closure_make cannot do: it copies "
           "capture_size bytes from a pointer.\n\n",
           n, frames, CB_WARM, sizeof(cb_hit), sizeof(heap_closure) + sizeof(cb_hit), n);
    printf("ns/callback = the timed frames' total time / their callbacks (make, call, "
           "release and the frame end included); median of %d runs, variants interleaved "
           "run by run (each run creates its pool, arena or queue, runs the frames, checks "
           "the stats, destroys it); min and max are the runs' extremes. Ratio = variant / "
           "the malloc'd closure of the same pattern; x faster = malloc'd / variant.\n\n",
           repeat);
    printf("| pattern | variant | released by | ns/callback | min | max | ratio vs malloc'd | "
           "x faster than malloc'd |\n");
    printf("|---|---|---|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < CB_VARIANTS; v++) {
        int base = cb_variants[v].kind < CB_Q_MALLOC ? CB_ONE_MALLOC : CB_Q_MALLOC;
        printf("| %s | %s | %s | %.2f | %.2f | %.2f | %.3f | %.1fx |\n", cb_variants[v].pattern,
               cb_variants[v].name, cb_variants[v].release, med[v], lo[v], hi[v],
               med[v] / med[base], med[base] / med[v]);
    }
    *x_pool_one = med[CB_ONE_MALLOC] / med[CB_ONE_POOL];
    *x_frame_one = med[CB_ONE_MALLOC] / med[CB_ONE_FRAME];
    *x_pool_q = med[CB_Q_MALLOC] / med[CB_Q_POOL];
    *x_frame_q = med[CB_Q_MALLOC] / med[CB_Q_FRAME];
    int o = CB_ONE_MALLOC, st = CB_ONE_STACK, q = CB_Q_MALLOC, b = CB_Q_BARE;
    printf("\none at a time: malloc'd %.2f ns/callback; fm_closure_make+call+release %.2f: "
           "malloc'd / pooled = %.2fx (target >= 5x: %s); fm_closure_make_frame+call %.2f: "
           "malloc'd / frame = %.2fx (target >= 10x: %s)\n",
           med[o], med[CB_ONE_POOL], *x_pool_one, met(*x_pool_one >= 5.0), med[CB_ONE_FRAME],
           *x_frame_one, met(*x_frame_one >= 10.0));
    printf("queued: malloc'd %.2f ns/callback; fm_closure_make+call+release %.2f: "
           "malloc'd / pooled = %.2fx (target >= 5x: %s); fm_closure_make_frame+call %.2f: "
           "malloc'd / frame = %.2fx (target >= 10x: %s); fm_defer: malloc'd / pooled "
           "%.2fx, malloc'd / frame %.2fx\n",
           med[q], med[CB_Q_POOL], *x_pool_q, met(*x_pool_q >= 5.0), med[CB_Q_FRAME],
           *x_frame_q, met(*x_frame_q >= 10.0), med[q] / med[CB_Q_DEFER_POOL],
           med[q] / med[CB_Q_DEFER_FRAME]);
    printf("the floor, one at a time: a closure that allocates nothing but, like "
           "fm_closure_make and the malloc'd closure, copies its capture from the caller's "
           "temporary and is called through its pointer costs %.2f ns: %.1fx faster than the "
           "malloc'd closure, the most any closure that copies its capture can gain in this "
           "loop. Written in place instead (no copy) it costs %.2f ns: copying the 32 bytes "
           "just written (16-byte loads over 4- and 8-byte stores, a store-to-load "
           "forwarding stall) is most of the floor; the malloc'd closure with its capture "
           "written in place costs %.2f ns (malloc and free hide most of that stall, so the "
           "differences below do not add up)\n",
           med[st], med[o] / med[st], med[CB_ONE_STACK_INPLACE], med[CB_ONE_MALLOC_INPLACE]);
    printf("above the floor, ns/callback: one at a time: fm_closure_make_frame %+.2f, "
           "fm_closure_make %+.2f, malloc'd %+.2f; queued (floor: the preallocated array, "
           "%.2f ns, %.1fx faster than malloc'd): fm_closure_make_frame %+.2f, "
           "fm_closure_make %+.2f, malloc'd %+.2f\n",
           med[CB_ONE_FRAME] - med[st], med[CB_ONE_POOL] - med[st], med[o] - med[st], med[b],
           med[q] / med[b], med[CB_Q_FRAME] - med[b], med[CB_Q_POOL] - med[b],
           med[q] - med[b]);
    free(ns);
    free(s.buf);
    free(s.slots);
}

static void cb_part_events(const bench_opts *opts, int repeat, fm_file_writer *csv) {
    uint32_t emits = opts->quick ? 10000 : 100000;
    double *ns = bench_xmalloc((size_t)EV_VARIANTS * (size_t)repeat * sizeof *ns);
    for (int r = 0; r < repeat; r++)
        for (int v = 0; v < EV_VARIANTS; v++) ns[v * repeat + r] = ev_once((ev_kind)v, emits);
    cb_csv(csv, "event", NULL, ev_names, EV_VARIANTS, ns, repeat);
    double med[EV_VARIANTS], lo[EV_VARIANTS], hi[EV_VARIANTS];
    cb_summarise(ns, EV_VARIANTS, repeat, med, lo, hi);

    printf("\n### callbacks: event emit, %d subscribers\n\n", CB_SUBS);
    printf("%u emits of one event with %d subscribers (pooled closures, the same capture "
           "and callback as above; the event holds the only reference), after %u untimed; "
           "ns per subscriber call = time / (emits x %d). Against the same %d pooled "
           "closures in an array called with fm_closure_call, and the plain C callback "
           "list: %d malloc'd closures in an array, called through c->fn in a loop. Median "
           "of %d runs, variants interleaved.\n\n",
           emits, CB_SUBS, emits / 100 + 1, CB_SUBS, CB_SUBS, CB_SUBS, repeat);
    printf("| variant | ns/subscriber call | min | max | ratio vs plain C array |\n");
    printf("|---|---:|---:|---:|---:|\n");
    for (int v = 0; v < EV_VARIANTS; v++)
        printf("| %s | %.2f | %.2f | %.2f | %.3f |\n", ev_names[v], med[v], lo[v], hi[v],
               med[v] / med[EV_MALLOC_ARRAY]);
    printf("\nfm_event_emit: %.2f ns per subscriber call, %+.2f ns over the plain C array "
           "(%.2f ns per emit of %d)\n",
           med[EV_EMIT], med[EV_EMIT] - med[EV_MALLOC_ARRAY], med[EV_EMIT] * CB_SUBS, CB_SUBS);
    free(ns);
}

static void cb_part_items(const bench_opts *opts, int repeat, fm_file_writer *csv, double *res_ns,
                          double *chase_ns) {
    uint32_t n = opts->quick ? 100000 : 1000000;
    uint32_t *rnd = bench_xmalloc((size_t)n * sizeof *rnd);
    uint32_t *seq = bench_xmalloc((size_t)n * sizeof *seq);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < n; i++) {
        rnd[i] = (uint32_t)(bench_xorshift64(&rng) % CB_LIVE);
        seq[i] = i % CB_LIVE;
    }
    cb_items *it = bench_xmalloc(sizeof *it);
    cb_items_open(it);

    /* Part 3: retain/release pairs. */
    double *ns = bench_xmalloc((size_t)REF_VARIANTS * (size_t)repeat * sizeof *ns);
    for (int r = 0; r < repeat; r++)
        for (int v = 0; v < REF_VARIANTS; v++)
            ns[v * repeat + r] = ref_once((ref_kind)v, it, rnd, n);
    cb_csv(csv, "refcount", NULL, ref_names, REF_VARIANTS, ns, repeat);
    double med[REF_VARIANTS], lo[REF_VARIANTS], hi[REF_VARIANTS];
    cb_summarise(ns, REF_VARIANTS, repeat, med, lo, hi);
    free(ns);

    printf("\n### callbacks: reference counts\n\n");
    printf("%u retain + release pairs per run on live items of an fm_pool (%d live %d-byte "
           "items; each pair takes the count from 1 to 2 and back, so nothing is freed), "
           "after %u untimed; the item is item 0 or picked at random (fixed-seed xorshift, "
           "indices drawn before the clock starts, loaded the same way for every variant). "
           "fm_pool_retain / fm_pool_release are library calls that locate the item from its "
           "pointer (chunk, slot, live bit) and keep the count beside the slot; "
           "fm_closure_retain / fm_closure_release check the pointer is a live closure of a "
           "FM_SYNC_NONE pool (one tag word, the class) and count in its header, inline in "
           "optimised builds (anything else goes into the library). Lower bound: a count field "
           "inside a malloc'd item, ++ then -- and a test for zero, inlined, an asm barrier "
           "between them. Median of %d runs, variants interleaved.\n\n",
           n, CB_LIVE, CB_ITEM, n / 100 + 1, repeat);
    printf("| variant | ns/pair | min | max | ratio vs intrusive count |\n");
    printf("|---|---:|---:|---:|---:|\n");
    for (int v = 0; v < REF_VARIANTS; v++) {
        int base = v == REF_POOL_RANDOM || v == REF_INTR_RANDOM ? REF_INTR_RANDOM : REF_INTR_ONE;
        printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", ref_names[v], med[v], lo[v], hi[v],
               med[v] / med[base]);
    }
    printf("\nfm_pool_retain + fm_pool_release: %.2f ns per pair on one item, %.2f on random "
           "items (%.2f and %.2f ns per call)\n",
           med[REF_POOL_ONE], med[REF_POOL_RANDOM], med[REF_POOL_ONE] / 2,
           med[REF_POOL_RANDOM] / 2);

    /* Part 4: resolves, random then sequential order. */
    static const char *const orders[2] = {"random", "sequential"};
    const uint32_t *order_idx[2] = {rnd, seq};
    uint64_t want_items[2], want_ents[2];
    for (int o = 0; o < 2; o++) {
        want_items[o] = res_expected(it->items, order_idx[o], n);
        want_ents[o] = res_expected((void *const *)it->ents, order_idx[o], n);
    }
    enum { RES_VARIANTS = 2 * RES_KINDS };
    const char *pat[RES_VARIANTS], *names[RES_VARIANTS];
    ns = bench_xmalloc((size_t)RES_VARIANTS * (size_t)repeat * sizeof *ns);
    for (int r = 0; r < repeat; r++)
        for (int v = 0; v < RES_VARIANTS; v++) {
            int o = v / RES_KINDS;
            ns[v * repeat + r] = res_once((res_kind)(v % RES_KINDS), it, order_idx[o], n,
                                          want_items[o], want_ents[o]);
        }
    for (int v = 0; v < RES_VARIANTS; v++) {
        pat[v] = orders[v / RES_KINDS];
        names[v] = res_names[v % RES_KINDS];
    }
    cb_csv(csv, "resolve", pat, names, RES_VARIANTS, ns, repeat);
    double rmed[RES_VARIANTS], rlo[RES_VARIANTS], rhi[RES_VARIANTS];
    cb_summarise(ns, RES_VARIANTS, repeat, rmed, rlo, rhi);
    free(ns);

    fm_pool_stats st;
    fm_pool_get_stats(it->pool, &st);
    printf("\n### callbacks: handle resolution\n\n");
    printf("%u resolves per run of the handles of %d live %d-byte items of one fm_pool "
           "(stride %llu, %llu chunks), after %u untimed, in random order (fixed-seed "
           "xorshift) or in sequential order (allocation order, which is address order), "
           "indices drawn before the clock starts; the loop adds up the returned pointers "
           "and the run checks that sum (no lookup failed). fm_pool_resolve decodes the "
           "handle, checks its record field against the records in use (the slot field "
           "needs no test: a chunk's words past its slots never read as live) and compares "
           "the slot's live bit and generation (a 4-byte word beside the slots, not in the "
           "item) with the handle's. Baseline, the classic weak reference: a {pointer, "
           "generation} pair per item and the generation stored in the item (%d-byte items "
           "malloc'd one by one), resolved by loading the item's generation and comparing: "
           "a pointer chase plus a compare. Lower bound: an array of raw pointers, no "
           "check. Physical limit of any handle that names a chunk and a slot: the bare "
           "indirection, the same handles through copies of the pool's per-record origins "
           "(one array for the generation words, one for the items) to the slot's "
           "generation word and the item, with no bound check. Median of %d runs, "
           "variants interleaved.\n\n",
           n, CB_LIVE, CB_ITEM, (unsigned long long)st.stride, (unsigned long long)st.chunk_count,
           n / 100 + 1, CB_ITEM, repeat);
    printf("| order | variant | ns/resolve | min | max | ratio vs pointer chase + compare |\n");
    printf("|---|---|---:|---:|---:|---:|\n");
    for (int v = 0; v < RES_VARIANTS; v++) {
        int base = (v / RES_KINDS) * RES_KINDS + RES_CHASE;
        printf("| %s | %s | %.2f | %.2f | %.2f | %.2f |\n", pat[v], names[v], rmed[v], rlo[v],
               rhi[v], rmed[v] / rmed[base]);
    }
    *res_ns = rmed[RES_INLINE];
    *chase_ns = rmed[RES_CHASE];
    int q = RES_KINDS; /* sequential */
    printf("\nfm_pool_resolve, random order: %.2f ns (target <= 2 ns: %s); pointer chase + "
           "compare %.2f ns: %.2fx (target: no slower: %s); raw pointer %.2f ns\n",
           rmed[RES_INLINE], met(rmed[RES_INLINE] <= 2.0), rmed[RES_CHASE],
           rmed[RES_INLINE] / rmed[RES_CHASE], met(rmed[RES_INLINE] <= rmed[RES_CHASE]),
           rmed[RES_RAW]);
    printf("sequential order: fm_pool_resolve %.2f ns, pointer chase + compare %.2f ns "
           "(%.2fx), raw pointer %.2f ns; the out-of-line function: %.2f ns random, %.2f "
           "sequential\n",
           rmed[q + RES_INLINE], rmed[q + RES_CHASE], rmed[q + RES_INLINE] / rmed[q + RES_CHASE],
           rmed[q + RES_RAW], rmed[RES_CALL], rmed[q + RES_CALL]);
    /* Issue 22: at most 1.2x the chase. The bare indirection reads what a
     * handle must (its record's origins, then the slot's generation word) and
     * checks nothing else: what any index -> chunk -> item handle costs. */
    double x_chase = rmed[RES_INLINE] / rmed[RES_CHASE];
    double bare_x = rmed[RES_BARE] / rmed[RES_CHASE];
    double over_bare = rmed[RES_INLINE] / rmed[RES_BARE];
    printf("issue 22 target, random order: fm_pool_resolve %.2f ns / pointer chase + compare "
           "%.2f ns = %.2fx (target <= 1.2x: %s); physical limit, the bare indirection "
           "(handle -> record's origins -> generation word -> item, no bound check): %.2f ns = "
           "%.2fx the chase; fm_pool_resolve = %.2fx the bare indirection (proposed target: "
           "<= 1.2x the bare indirection, same run: %s)\n",
           rmed[RES_INLINE], rmed[RES_CHASE], x_chase, met(x_chase <= 1.2), rmed[RES_BARE], bare_x,
           over_bare, met(over_bare <= 1.2));

    cb_items_close(it);
    free(it);
    free(seq);
    free(rnd);
}

void callbacks_run(const bench_opts *opts) {
    int repeat = bench_repeat(opts);
    fm_file_writer *csv = NULL;
    if (opts->csv_dir) {
        csv = bench_csv_open(opts->csv_dir, "callbacks.csv");
        fm_file_printf(csv, "table,pattern,variant,run,ns\n");
    }
    double x_pool_one, x_frame_one, x_pool_q, x_frame_q, res_ns, chase_ns;
    cb_part_frames(opts, repeat, csv, &x_pool_one, &x_frame_one, &x_pool_q, &x_frame_q);
    fflush(stdout);
    cb_part_events(opts, repeat, csv);
    fflush(stdout);
    cb_part_items(opts, repeat, csv, &res_ns, &chase_ns);

    printf("\n### callbacks: targets\n\n");
    printf("| target | measured | |\n|---|---:|---|\n");
    printf("| pooled closures >= 5x faster than malloc'd, one at a time | %.1fx | %s |\n",
           x_pool_one, met(x_pool_one >= 5.0));
    printf("| pooled closures >= 5x faster than malloc'd, queued | %.1fx | %s |\n", x_pool_q,
           met(x_pool_q >= 5.0));
    printf("| frame closures >= 10x faster than malloc'd, one at a time | %.1fx | %s |\n",
           x_frame_one, met(x_frame_one >= 10.0));
    printf("| frame closures >= 10x faster than malloc'd, queued | %.1fx | %s |\n", x_frame_q,
           met(x_frame_q >= 10.0));
    printf("| fm_pool_resolve, random order, <= 2 ns | %.2f ns | %s |\n", res_ns,
           met(res_ns <= 2.0));
    printf("| fm_pool_resolve no slower than pointer chase + compare, random order | %.2f / "
           "%.2f ns | %s |\n",
           res_ns, chase_ns, met(res_ns <= chase_ns));
    if (csv) {
        bench_csv_close(csv);
        printf("\nwrote %s/callbacks.csv\n", opts->csv_dir);
    }
}

/* ------------------------------------------------------- callgrind mode */

/* The loops tools/fm-callgrind measures with --callgrind-callbacks N, each
 * in its own function so callgrind can attribute the calls:
 * - resolve_inline: N fm_pool_resolve as a caller writes it (the header's
 *   inline function in optimised builds) of handles of CB_LIVE live items,
 *   random order (the first CG_IDX indices of callbacks_run's sequence, over
 *   and over), adding up the pointers;
 * - resolve_call: (fm_pool_resolve)(...), the library's function;
 * - resolve_chase: the {pointer, generation} weak reference, chase and
 *   compare (the baseline); resolve_raw: a raw pointer (the lower bound);
 * - resolve_empty: the loop's skeleton (index and handle loads, the sum);
 * - refs_pool / refs_closure / refs_intrusive: N retain+release pairs on one
 *   live item, closure, counted item; refs_empty: the loop alone;
 *   refs_closure_call: (fm_closure_retain)(...) and (fm_closure_release)(...),
 *   the library's functions (refs_closure as a caller writes them: the
 *   header's inline functions in optimised builds);
 * - closure_pool / closure_frame / closure_malloc / closure_stack: N
 *   callbacks with the 32-byte capture made, called and released one at a
 *   time, one frame of up to CG_CB_FRAME per call; closure_frame ends its
 *   frame with fm_frame_arena_advance; closure_stack allocates nothing (the
 *   lower bound, and the loop the script subtracts); closure_pool_call and
 *   closure_frame_call: closure_pool and closure_frame through the library's
 *   functions, (fm_closure_make)(...) and so on, where the others are
 *   written as callers write them (inline in optimised builds). */
enum { CG_CB_FRAME = 4096, CG_IDX = 16384 };

static BENCH_NOINLINE uint64_t fm_bench_cg_resolve_inline(const fm_pool *pool,
                                                          const fm_handle *hs,
                                                          const uint32_t *idx, uint32_t n) {
    uint64_t acc = 0;
    for (uint32_t i = 0; i < n; i++)
        acc += (uintptr_t)fm_pool_resolve(pool, hs[idx[i & (CG_IDX - 1)]]);
    return acc;
}

static BENCH_NOINLINE uint64_t fm_bench_cg_resolve_call(const fm_pool *pool, const fm_handle *hs,
                                                        const uint32_t *idx, uint32_t n) {
    uint64_t acc = 0;
    for (uint32_t i = 0; i < n; i++)
        acc += (uintptr_t)(fm_pool_resolve)(pool, hs[idx[i & (CG_IDX - 1)]]);
    return acc;
}

static BENCH_NOINLINE uint64_t fm_bench_cg_resolve_chase(const cb_weak *ws, const uint32_t *idx,
                                                         uint32_t n) {
    uint64_t acc = 0;
    for (uint32_t i = 0; i < n; i++)
        acc += (uintptr_t)cb_weak_resolve(ws[idx[i & (CG_IDX - 1)]]);
    return acc;
}

static BENCH_NOINLINE uint64_t fm_bench_cg_resolve_raw(cb_entity *const *ents,
                                                       const uint32_t *idx, uint32_t n) {
    uint64_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += (uintptr_t)ents[idx[i & (CG_IDX - 1)]];
    return acc;
}

static BENCH_NOINLINE uint64_t fm_bench_cg_resolve_empty(const fm_handle *hs,
                                                         const uint32_t *idx, uint32_t n) {
    uint64_t acc = 0;
    for (uint32_t i = 0; i < n; i++) acc += hs[idx[i & (CG_IDX - 1)]].bits;
    return acc;
}

static BENCH_NOINLINE void fm_bench_cg_refs_pool(fm_pool *pool, void *item, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        fm_pool_retain(pool, item);
        fm_pool_release(pool, item);
    }
    BENCH_ESCAPE(item); /* no tail call */
}

static BENCH_NOINLINE void fm_bench_cg_refs_closure(fm_closure *c, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        fm_closure_retain(c);
        fm_closure_release(c);
    }
    BENCH_ESCAPE(c); /* no tail call */
}

static BENCH_NOINLINE void fm_bench_cg_refs_closure_call(fm_closure *c, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        (fm_closure_retain)(c);
        (fm_closure_release)(c);
    }
    BENCH_ESCAPE(c); /* no tail call */
}

static BENCH_NOINLINE void fm_bench_cg_refs_intrusive(cb_entity *e, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        e->refs++;
        BENCH_ESCAPE(e);
        if (--e->refs == 0) cb_entity_free(e);
    }
}

static BENCH_NOINLINE void fm_bench_cg_refs_empty(void *item, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) BENCH_ESCAPE(item);
}

static BENCH_NOINLINE void fm_bench_cg_closure_pool(fm_closure_pool *cp, fm_closure_fn fn,
                                                    cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make(cp, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make");
        fm_closure_call(c, NULL);
        fm_closure_release(c);
    }
    BENCH_ESCAPE(cp); /* no tail call */
}

static BENCH_NOINLINE void fm_bench_cg_closure_frame(fm_frame_arena *fa, fm_closure_fn fn,
                                                     cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = fm_closure_make_frame(fa, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make_frame");
        fm_closure_call(c, NULL);
    }
    fm_frame_arena_advance(fa);
    BENCH_ESCAPE(fa); /* no tail call: callgrind sees the advance as a call */
}

static BENCH_NOINLINE void fm_bench_cg_closure_pool_call(fm_closure_pool *cp, fm_closure_fn fn,
                                                         cb_tally *t, uint32_t n, uint32_t frame) {
    CB_OPAQUE(fn);
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = (fm_closure_make)(cp, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make");
        (fm_closure_call)(c, NULL);
        (fm_closure_release)(c);
    }
    BENCH_ESCAPE(cp); /* no tail call */
}

static BENCH_NOINLINE void fm_bench_cg_closure_frame_call(fm_frame_arena *fa, fm_closure_fn fn,
                                                          cb_tally *t, uint32_t n,
                                                          uint32_t frame) {
    CB_OPAQUE(fn);
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        fm_closure *c = (fm_closure_make_frame)(fa, fn, &h, sizeof h);
        if (!c) cb_failed("fm_closure_make_frame");
        (fm_closure_call)(c, NULL);
    }
    fm_frame_arena_advance(fa);
    BENCH_ESCAPE(fa); /* no tail call: callgrind sees the advance as a call */
}

static BENCH_NOINLINE void fm_bench_cg_closure_malloc(fm_closure_fn fn, cb_tally *t, uint32_t n,
                                                      uint32_t frame) {
    CB_OPAQUE(fn);
    for (uint32_t i = 0; i < n; i++) {
        cb_hit h = cb_hit_at(t, i, frame);
        heap_closure *c = heap_closure_make(fn, &h, sizeof h);
        if (!c) cb_failed("malloc");
        heap_closure_call(c, NULL);
        free(c);
    }
}

static BENCH_NOINLINE void fm_bench_cg_closure_stack(fm_closure_fn fn, cb_tally *t, uint32_t n,
                                                     uint32_t frame) {
    CB_OPAQUE(fn);
    for (uint32_t i = 0; i < n; i++) {
        _Alignas(16) unsigned char at[CB_STRIDE];
        unsigned char *p = at;
        CB_OPAQUE(p); /* the capture is really copied, as every other variant does */
        cb_hit h = cb_hit_at(t, i, frame);
        heap_closure_call(bare_closure_make(p, fn, &h, sizeof h), NULL);
    }
}

int callbacks_callgrind(uint32_t count) {
    uint32_t idx[CG_IDX];
    uint64_t rng = 0x9E3779B97F4A7C15ull; /* callbacks_run's sequence */
    for (uint32_t i = 0; i < CG_IDX; i++) idx[i] = (uint32_t)(bench_xorshift64(&rng) % CB_LIVE);
    cb_items *it = bench_xmalloc(sizeof *it);
    cb_items_open(it);
    fm_closure_pool *cp = cb_pool_create("cg-closures");
    fm_frame_arena *fa = cb_frame_arena_create("cg-frame");
    cb_tally t = {0, 0};
    cb_tally warm = {0, 0};

    /* The sums the resolve loops must find, untimed. */
    uint64_t want_items = 0, want_ents = 0, want_bits = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t j = idx[i & (CG_IDX - 1)];
        want_items += (uintptr_t)it->items[j];
        want_ents += (uintptr_t)it->ents[j];
        want_bits += it->handles[j].bits;
    }

    /* Warm everything outside the measured functions: the closure pool's
     * chunk, both frame arenas, malloc's heap, the count storage of the
     * items' chunk, lazy PLT binding. */
    uint64_t sink = 0;
    one_pool(cp, cb_on_hit, &warm, CG_CB_FRAME, 0);
    one_frame(fa, cb_on_hit, &warm, CG_CB_FRAME, 0);
    one_frame(fa, cb_on_hit, &warm, CG_CB_FRAME, 1);
    one_malloc(cb_on_hit, &warm, CG_CB_FRAME, 0);
    refs_pool(it->pool, it->items, idx, 0, 1);
    refs_closure(it->closure, 1);
    res_call(it->pool, it->handles, idx, 1, &sink);

    bool ok = fm_bench_cg_resolve_empty(it->handles, idx, count) == want_bits;
    ok &= fm_bench_cg_resolve_inline(it->pool, it->handles, idx, count) == want_items;
    ok &= fm_bench_cg_resolve_call(it->pool, it->handles, idx, count) == want_items;
    ok &= fm_bench_cg_resolve_chase(it->weak, idx, count) == want_ents;
    ok &= fm_bench_cg_resolve_raw(it->ents, idx, count) == want_ents;

    fm_bench_cg_refs_empty(it->items[0], count);
    fm_bench_cg_refs_pool(it->pool, it->items[0], count);
    fm_bench_cg_refs_closure(it->closure, count);
    fm_bench_cg_refs_closure_call(it->closure, count);
    fm_bench_cg_refs_intrusive(it->ents[0], count);

    uint32_t frames = 0;
    for (uint32_t done = 0; done < count; frames++) {
        uint32_t k = count - done < CG_CB_FRAME ? count - done : CG_CB_FRAME;
        fm_bench_cg_closure_stack(cb_on_hit, &t, k, frames);
        fm_bench_cg_closure_pool(cp, cb_on_hit, &t, k, frames);
        fm_bench_cg_closure_frame(fa, cb_on_hit, &t, k, frames);
        fm_bench_cg_closure_pool_call(cp, cb_on_hit, &t, k, frames);
        fm_bench_cg_closure_frame_call(fa, cb_on_hit, &t, k, frames);
        fm_bench_cg_closure_malloc(cb_on_hit, &t, k, frames);
        done += k;
    }

    /* Each of the 6 closure loops called every callback once. */
    uint64_t sum = 0;
    for (uint32_t done = 0; done < count; done += CG_CB_FRAME) {
        uint32_t k = count - done < CG_CB_FRAME ? count - done : CG_CB_FRAME;
        sum += cb_frame_sum(k);
    }
    ok &= t.calls == 6 * (uint64_t)count && t.sum == 6 * sum;
    fm_closure_pool_stats cst;
    fm_closure_pool_get_stats(cp, &cst);
    ok &= cst.live == 0 && cst.refused == 0;
    fm_frame_arena_stats fst;
    fm_frame_arena_get_stats(fa, &fst);
    ok &= fst.failed_allocs == 0;
    fm_pool_stats pst;
    fm_pool_get_stats(it->pool, &pst);
    ok &= pst.misuse_count == 0;
    cb_items_close(it);
    free(it);
    fm_closure_pool_destroy(cp);
    fm_frame_arena_destroy(fa);
    printf("callgrind-callbacks: %u resolves of handles of %d live items in random order "
           "(inline as callers compile fm_pool_resolve, the out-of-line function, a pointer "
           "chase plus compare, a raw pointer, an empty loop); %u retain+release pairs "
           "(fm_pool, fm_closure inline and out-of-line, an intrusive count, an empty loop); "
           "%u callbacks with a %zu-byte capture made, called and released one at a time in "
           "%u frames of up to %d (fm_closure_make, fm_closure_make_frame, each inline and "
           "out-of-line, malloc'd closure, stack closure); "
           "callbacks run %llu (expected %llu), closures live %llu, lookups %s\n",
           count, CB_LIVE, count, count, sizeof(cb_hit), frames, CG_CB_FRAME,
           (unsigned long long)t.calls, 6 * (unsigned long long)count,
           (unsigned long long)cst.live, ok ? "all found" : "WRONG");
    return ok ? 0 : 1;
}
