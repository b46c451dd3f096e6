/*
 * tests/fuzz/fuzz_closure.c: libFuzzer harness for framemem/closure.h.
 *
 * The input is a program: one config byte, then operations on one closure
 * pool, one frame arena, two events and one defer queue (all on the tests'
 * counting allocator, made to refuse the next backing call of an operation).
 * A reference model runs beside them and every mismatch aborts:
 *
 * - making: fm_closure_make / _make_frame, and fm_closure_alloc / _alloc_frame
 *   with the capture copied or written in place afterwards;
 * - pooled closures: reference counts (the harness's own references, one per
 *   subscription and per queued entry); release returns true exactly when the
 *   model's count reaches zero; the pool's live / total_made / refused stats;
 *   a capture above max_capture (256) is FM_ERR_INVALID_ARG; the releases and
 *   retains of a dead closure (only while its slot has not been handed out
 *   again) are FM_ERR_REFCOUNT and change nothing;
 * - frame closures: valid for `frames` advances, then dropped from the model
 *   (never touched again); before an advance their subscriptions are removed,
 *   and an advance that would expire a frame closure still queued is skipped;
 * - captures: every live closure's bytes equal the model's copy after every
 *   operation and at every call;
 * - events: subscribers are called in subscription order; a removal during an
 *   emit takes effect at once, an addition from the next emit (nested emits
 *   included); stale handles and handles of the other event are
 *   FM_ERR_STALE_HANDLE; fm_event_count matches;
 * - defer: entries run at the run of their due frame in the order deferred;
 *   entries deferred during a run wait; fm_defer_pending and the run's return
 *   value match.
 *
 * Callbacks mutate the objects during emits and runs as directed by the
 * first bytes of their own capture (unsubscribe self / another, subscribe,
 * release, retain, defer, nested emit, destroying the emitting event or the
 * running queue, which must be refused). The model checks, at each call, that
 * the callee and the argument are the ones it predicts, so the call log is
 * checked as it is written. Removed subscriptions keep the event's reference
 * until the outermost emit of that event ends (the closure may be running);
 * the model counts those references as `pend` and never lets the harness drop
 * the last reference of a closure that is running outside that emit.
 *
 * Encoding (reads past the end give 0). Config byte: frames 2 + (b & 3);
 * event initial capacity {default, 1, 2, 5}[(b >> 2) & 3]; queue initial
 * capacity likewise from (b >> 4) & 3; 0x40 max_capture 256 given explicitly;
 * 0x80 pool initial_capacity 1. Then per operation one byte: bit 7 = the
 * allocator refuses its next call during this operation; low nibble =
 *    0,1 make        size_lo size_hi act p f seed   (size_hi bit 0: 256 + lo % 45,
 *    2   make_frame  (same)                          bit 1: fm_closure_alloc*,
 *                                                    bit 2 with it: in place)
 *    3   call        sel arg        4  retain      sel
 *    5   release     sel            6  dead op     sel v (release/retain/subscribe/defer)
 *    7   subscribe   ev sel         8  unsubscribe sel v (v & 1: the other event)
 *    9,10 emit       b (event b & 1, arg from b)
 *    11  defer       sel delay      12,15 defer run     13 frame advance
 *    14  invalid     v (NULL fn / capture / closure / handle)
 * A capture of 4 bytes or more steers its callback: byte 0 % 9 the action,
 * byte 1 its selector, byte 2 flags (bit 0 event / other, bits 1-2 defer
 * delay, bit 7 act only once). Seeds: corpus/closure/seed-*.
 *
 * Set FUZZ_CLOSURE_TRACE=1 to print the decoded operations on stderr.
 */
#define _POSIX_C_SOURCE 200809L

#include "fuzz_support.h"

#include "framemem/framemem.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Byte-by-byte fills and compares teach the fuzzer nothing: no coverage
 * feedback (or comparison hints) from them. */
#if defined(__clang__) && __clang_major__ >= 13
#define FZC_NO_COVERAGE __attribute__((no_sanitize("coverage"), noinline))
#else
#define FZC_NO_COVERAGE
#endif

enum {
    MAX_CL = 48,          /* closure records (pooled, frame, dead) */
    MAX_SUB = 160,        /* subscription records (active and removed) */
    MAX_ACTIVE = 48,      /* active subscriptions per event */
    MAX_DEF = 96,         /* queued entries */
    MAX_CAP = 300,        /* largest capture the harness makes */
    MAX_CAPTURE = 256,    /* the pool's max_capture */
    MAX_PEND = 256,       /* removals per event during one outermost emit */
    MAX_CTX = 6,          /* nested emit / run / call contexts */
    MAX_NESTED_EMITS = 6, /* emits from callbacks per operation */
};

/* The backing allocator (fuzz_support.h's fz_alloc_*): every run creates a
 * pool with 64 KiB chunks, and fresh pages for them from the system on each
 * run would cost more than the rest of the run, so freed blocks are reused. */
enum { CA_MAX_BLOCK = 1 << 24 };
static fm_test_allocator g_alloc;

/* ================================================================= model */

typedef enum { CL_FREE, CL_POOLED, CL_FRAME, CL_DEAD } cl_state;

typedef struct cl_rec {
    cl_state st;
    fm_closure *c;
    unsigned char *cap;  /* fm_closure_capture(c) */
    uint32_t size;
    uint32_t refs;       /* pooled: the library's count, as the model sees it */
    uint32_t hrefs;      /* pooled: references the harness holds */
    uint32_t pend;       /* pooled: refs of subscriptions removed during an emit */
    uint64_t born;       /* frame: the frame arena's frame at make */
    uint32_t running;    /* invocations on the call stack */
    int outer_ctx;       /* context of the outermost of them */
    unsigned char bytes[MAX_CAP];
} cl_rec;

typedef struct sub_rec {
    bool used, active;
    int ev, cl;
    uint32_t serial; /* bumped when the record is recycled */
    fm_handle h;
} sub_rec;

typedef struct ev_model {
    fm_event *obj;
    int list[MAX_ACTIVE]; /* active subscription ids, in subscription order */
    int n;
    uint32_t depth;   /* emits of this event on the stack */
    int outer_ctx;    /* context index of the outermost one */
    int pend[MAX_PEND]; /* closures whose release waits for the outermost emit */
    int npend;
} ev_model;

typedef struct dentry {
    int cl;
    uint64_t due;
} dentry;

typedef enum { CTX_DIRECT, CTX_EMIT, CTX_DEFER } ctx_kind;

typedef struct ctx {
    ctx_kind kind;
    void *arg;
    int calls;
    /* direct */
    int cl;
    /* emit */
    int ev;
    int snap[MAX_ACTIVE];
    uint32_t snap_serial[MAX_ACTIVE];
    int nsnap, cursor, cur_sub;
    /* defer run */
    dentry dsnap[MAX_DEF];
    int nd, dcursor, release_cl;
} ctx;

typedef struct state {
    fm_closure_pool *cp;
    fm_frame_arena *fa;
    fm_defer_queue *q;
    ev_model ev[2];
    cl_rec cl[MAX_CL];
    sub_rec sub[MAX_SUB];
    dentry dq[MAX_DEF];
    int ndq;
    uint64_t qframe;   /* fm_defer_run calls */
    uint64_t fa_frame; /* fm_frame_arena_advance calls */
    uint32_t frames;
    uint64_t live, made, refused;
    ctx stack[MAX_CTX];
    int depth;
    int nested_emits;
    uint64_t op_index;
} state;

static state S;
static bool trace;

#define TRACE(...)                                                              \
    do {                                                                        \
        if (trace) fprintf(stderr, __VA_ARGS__);                                \
    } while (0)

/* ---------------------------------------------------------- error checks */

/* Error accounting around one library call: `before` is fz_err.count. */
static void expect_no_error(uint64_t before, const char *what) {
    if (fz_err.count != before)
        FZ_FAIL("%s: unexpected error report %s (%llu new)", what, fm_error_name(fz_err.last),
                (unsigned long long)(fz_err.count - before));
}

static void expect_error(uint64_t before, fm_error code, const char *what) {
    if (fz_err.count != before + 1 || fz_err.last != code || fm_last_error() != code)
        FZ_FAIL("%s: expected one %s report, got %llu, last %s (thread last error %s)", what,
                fm_error_name(code), (unsigned long long)(fz_err.count - before),
                fm_error_name(fz_err.last), fm_error_name(fm_last_error()));
}

/* ------------------------------------------------------- closure records */

static void cb(void *capture, void *arg);

static bool cl_valid(int id) {
    return id >= 0 && (S.cl[id].st == CL_POOLED || S.cl[id].st == CL_FRAME);
}

/* Effective references: those not already on their way out. */
static uint32_t cl_eff(const cl_rec *r) { return r->refs - r->pend; }

static void drop_ref(int id) {
    cl_rec *r = &S.cl[id];
    if (r->st != CL_POOLED) return;
    if (r->refs == 0) FZ_FAIL("model: closure %d dropped below zero", id);
    r->refs--;
    if (r->refs == 0) {
        if (r->hrefs || r->pend || r->running)
            FZ_FAIL("model: closure %d freed with hrefs %u pend %u running %u", id, r->hrefs,
                    r->pend, r->running);
        r->st = CL_DEAD;
        S.live--;
        TRACE("    closure %d freed\n", id);
    }
}

/* May a reference of closure id be dropped now (deferred_ev: the event
 * whose outermost emit will drop it, or -1 for at once)? Never the last one
 * of a closure that runs outside the window where it is still held. */
static bool drop_is_safe(int id, int deferred_ev) {
    const cl_rec *r = &S.cl[id];
    if (r->st != CL_POOLED || !r->running || cl_eff(r) > 1) return true;
    if (deferred_ev >= 0 && r->outer_ctx >= S.ev[deferred_ev].outer_ctx) return true;
    return false;
}

/* Candidates, picked by a selector byte; -1 when there is none. */
typedef bool (*cl_pred)(int id);

static bool pred_usable(int id) {
    const cl_rec *r = &S.cl[id];
    return r->st == CL_FRAME || (r->st == CL_POOLED && cl_eff(r) > 0);
}
static bool pred_held(int id) {
    const cl_rec *r = &S.cl[id];
    return r->st == CL_FRAME || (r->st == CL_POOLED && r->hrefs > 0);
}
static bool pred_dead(int id) { return S.cl[id].st == CL_DEAD; }

static int pick(cl_pred pred, uint32_t sel) {
    int ids[MAX_CL], n = 0;
    for (int i = 0; i < MAX_CL; i++)
        if (pred(i)) ids[n++] = i;
    return n ? ids[sel % (uint32_t)n] : -1;
}

static int find_by_capture(const void *capture) {
    for (int i = 0; i < MAX_CL; i++)
        if (cl_valid(i) && S.cl[i].cap == capture) return i;
    return -1;
}

/* A record for a new closure: a free one, else a dead one is forgotten. */
static int new_record(void) {
    for (int i = 0; i < MAX_CL; i++)
        if (S.cl[i].st == CL_FREE) return i;
    for (int i = 0; i < MAX_CL; i++)
        if (S.cl[i].st == CL_DEAD) {
            S.cl[i].st = CL_FREE;
            return i;
        }
    return -1;
}

/* The first three bytes steer the callback (see act()); the rest is a
 * position-dependent pattern, so a shifted or foreign copy does not pass. */
FZC_NO_COVERAGE static void fill_capture(unsigned char *b, uint32_t size, const uint8_t hdr[3],
                                         uint8_t seed) {
    for (uint32_t i = 0; i < size; i++) {
        uint32_t x = (seed + 1u) * 0x9E3779B1u + i * 0x85EBCA77u;
        b[i] = i < 3 ? hdr[i] : (uint8_t)(x >> 24 ^ x >> 11);
    }
}

FZC_NO_COVERAGE static void check_capture(int id, const char *when) {
    const cl_rec *r = &S.cl[id];
    if (fm_closure_capture(r->c) != r->cap)
        FZ_FAIL("%s: closure %d capture pointer moved", when, id);
    if (fm_closure_capture_size(r->c) != r->size)
        FZ_FAIL("%s: closure %d capture size %zu, made with %u", when, id,
                fm_closure_capture_size(r->c), r->size);
    for (uint32_t i = 0; i < r->size; i++)
        if (r->cap[i] != r->bytes[i])
            FZ_FAIL("%s: closure %d capture byte %u is %02x, expected %02x", when, id, i,
                    r->cap[i], r->bytes[i]);
}

/* --------------------------------------------------------- subscriptions */

static bool sub_live(int sid, uint32_t serial) {
    return S.sub[sid].used && S.sub[sid].serial == serial && S.sub[sid].active;
}

/* A record for a new subscription: an unused one, else a removed one is
 * recycled (emit snapshots name records by id and serial, so a recycled
 * record is never mistaken for the subscription it held before). */
static int new_sub_record(void) {
    for (int i = 0; i < MAX_SUB; i++)
        if (!S.sub[i].used) return i;
    for (int i = 0; i < MAX_SUB; i++)
        if (!S.sub[i].active) return i;
    return -1;
}

static void ev_list_remove(ev_model *E, int sid) {
    for (int i = 0; i < E->n; i++) {
        if (E->list[i] != sid) continue;
        memmove(&E->list[i], &E->list[i + 1], (size_t)(E->n - i - 1) * sizeof E->list[0]);
        E->n--;
        return;
    }
    FZ_FAIL("model: subscription %d not in its event's list", sid);
}

/* ============================================================ operations
 *
 * Each wrapper calls the library once, checks the result and its error
 * report against the model, and updates the model. They run both as
 * top-level operations and from inside callbacks. */

static bool alloc_failed_since(uint64_t failed_before) {
    return g_alloc.failed_calls != failed_before;
}

static void op_retain(int id) {
    cl_rec *r = &S.cl[id];
    uint64_t e0 = fz_err.count, f0 = g_alloc.failed_calls;
    fm_clear_error();
    fm_closure_retain(r->c);
    if (r->st == CL_FRAME) {
        expect_no_error(e0, "retain (frame closure)");
        return;
    }
    if (alloc_failed_since(f0)) {
        expect_error(e0, FM_ERR_OUT_OF_MEMORY, "retain with the count storage refused");
        return;
    }
    expect_no_error(e0, "retain");
    r->refs++;
    r->hrefs++;
}

static void op_release(int id) {
    cl_rec *r = &S.cl[id];
    uint64_t e0 = fz_err.count;
    if (r->st == CL_FRAME) {
        bool freed = fm_closure_release(r->c);
        if (freed) FZ_FAIL("release of frame closure %d returned true", id);
        expect_no_error(e0, "release (frame closure)");
        return;
    }
    if (r->hrefs == 0 || !drop_is_safe(id, -1)) return;
    bool expect_freed = r->refs == 1;
    bool freed = fm_closure_release(r->c);
    if (freed != expect_freed)
        FZ_FAIL("release of closure %d returned %d, model count %u (pend %u)", id, freed,
                r->refs, r->pend);
    expect_no_error(e0, "release");
    r->hrefs--;
    drop_ref(id);
}

static void op_unsubscribe(int sid, int ev) {
    sub_rec *s = &S.sub[sid];
    ev_model *E = &S.ev[ev];
    bool expect_ok = s->active && s->ev == ev;
    bool deferred = E->depth > 0;
    if (expect_ok) {
        if (!drop_is_safe(s->cl, deferred ? ev : -1)) return;
        if (deferred && E->npend == MAX_PEND) return;
    }
    uint64_t e0 = fz_err.count;
    fm_clear_error();
    bool ok = fm_event_unsubscribe(E->obj, s->h);
    if (ok != expect_ok)
        FZ_FAIL("unsubscribe of subscription %d (event %d, active %d) from event %d returned %d",
                sid, s->ev, s->active, ev, ok);
    if (!ok) {
        expect_error(e0, FM_ERR_STALE_HANDLE, "unsubscribe of a stale or foreign handle");
        return;
    }
    expect_no_error(e0, "unsubscribe");
    s->active = false;
    ev_list_remove(E, sid);
    cl_rec *r = &S.cl[s->cl];
    if (r->st != CL_POOLED) return;
    if (deferred) {
        r->pend++;
        E->pend[E->npend++] = s->cl;
    } else {
        drop_ref(s->cl);
    }
}

static void op_subscribe(int ev, int id) {
    ev_model *E = &S.ev[ev];
    cl_rec *r = &S.cl[id];
    if (E->n == MAX_ACTIVE) return;
    int sid = new_sub_record();
    if (sid < 0) return;
    uint64_t e0 = fz_err.count, f0 = g_alloc.failed_calls;
    fm_clear_error();
    fm_handle h = fm_event_subscribe(E->obj, r->c);
    if (alloc_failed_since(f0)) {
        if (!fm_handle_is_null(h)) FZ_FAIL("subscribe succeeded though the allocator refused");
        expect_error(e0, FM_ERR_OUT_OF_MEMORY, "subscribe with the allocator refusing");
        return;
    }
    if (fm_handle_is_null(h)) FZ_FAIL("subscribe of closure %d to event %d failed", id, ev);
    expect_no_error(e0, "subscribe");
    for (int i = 0; i < MAX_SUB; i++) {
        if (S.sub[i].used && S.sub[i].ev == ev && fm_handle_equal(S.sub[i].h, h))
            FZ_FAIL("subscribe returned the handle of subscription %d (active %d)", i,
                    S.sub[i].active);
    }
    sub_rec *s = &S.sub[sid];
    uint32_t serial = s->serial + 1;
    *s = (sub_rec){.used = true, .active = true, .ev = ev, .cl = id, .serial = serial, .h = h};
    E->list[E->n++] = sid;
    if (r->st == CL_POOLED) r->refs++;
    TRACE("    subscription %d = closure %d on event %d\n", sid, id, ev);
}

static void op_defer(int id, uint32_t delay) {
    if (S.ndq == MAX_DEF) return;
    cl_rec *r = &S.cl[id];
    uint64_t e0 = fz_err.count, f0 = g_alloc.failed_calls;
    fm_clear_error();
    bool ok = fm_defer(S.q, r->c, delay);
    if (alloc_failed_since(f0)) {
        if (ok) FZ_FAIL("defer succeeded though the allocator refused");
        expect_error(e0, FM_ERR_OUT_OF_MEMORY, "defer with the allocator refusing");
        return;
    }
    if (!ok) FZ_FAIL("defer of closure %d failed", id);
    expect_no_error(e0, "defer");
    S.dq[S.ndq++] = (dentry){id, S.qframe + 1 + delay};
    if (r->st == CL_POOLED) r->refs++;
}

static ctx *ctx_push(ctx_kind kind, void *arg) {
    if (S.depth >= MAX_CTX) FZ_FAIL("model: context stack overflow");
    ctx *x = &S.stack[S.depth++];
    x->kind = kind;
    x->arg = arg;
    x->calls = 0;
    x->cl = -1;
    x->ev = -1;
    x->nsnap = x->cursor = 0;
    x->cur_sub = -1;
    x->nd = x->dcursor = 0;
    x->release_cl = -1;
    return x;
}

static void ctx_pop(void) { S.depth--; }

static void op_emit(int ev, void *arg) {
    if (S.depth >= MAX_CTX) return;
    ev_model *E = &S.ev[ev];
    ctx *x = ctx_push(CTX_EMIT, arg);
    x->ev = ev;
    for (int i = 0; i < E->n; i++) {
        x->snap[i] = E->list[i];
        x->snap_serial[i] = S.sub[E->list[i]].serial;
    }
    x->nsnap = E->n;
    if (E->depth++ == 0) E->outer_ctx = S.depth - 1;
    TRACE("    emit event %d (%d subscribers, depth %u)\n", ev, E->n, E->depth);
    fm_event_emit(E->obj, arg);
    for (; x->cursor < x->nsnap; x->cursor++) {
        int sid = x->snap[x->cursor];
        if (sub_live(sid, x->snap_serial[x->cursor]))
            FZ_FAIL("emit of event %d did not call subscription %d (closure %d)", ev, sid,
                    S.sub[sid].cl);
    }
    if (--E->depth == 0) {
        /* The outermost emit has ended: removed subscriptions let go. */
        for (int i = 0; i < E->npend; i++) {
            S.cl[E->pend[i]].pend--;
            drop_ref(E->pend[i]);
        }
        E->npend = 0;
    }
    ctx_pop();
}

/* The queue's reference to the entry that ran last goes right after it. */
static void defer_release_prev(ctx *x) {
    if (x->release_cl < 0) return;
    drop_ref(x->release_cl);
    x->release_cl = -1;
}

static void op_defer_run(void) {
    if (S.depth >= MAX_CTX) return;
    ctx *x = ctx_push(CTX_DEFER, NULL);
    int n0 = S.ndq;
    memcpy(x->dsnap, S.dq, (size_t)n0 * sizeof S.dq[0]);
    x->nd = n0;
    uint64_t frame = ++S.qframe;
    uint32_t due = 0;
    for (int i = 0; i < n0; i++) due += x->dsnap[i].due <= frame;
    TRACE("    run frame %llu: %u of %d due\n", (unsigned long long)frame, due, n0);
    uint32_t ran = fm_defer_run(S.q);
    defer_release_prev(x);
    for (; x->dcursor < x->nd; x->dcursor++) {
        if (x->dsnap[x->dcursor].due <= frame)
            FZ_FAIL("defer run %llu did not run entry %d (closure %d, due %llu)",
                    (unsigned long long)frame, x->dcursor, x->dsnap[x->dcursor].cl,
                    (unsigned long long)x->dsnap[x->dcursor].due);
    }
    if (ran != due || (uint32_t)x->calls != due)
        FZ_FAIL("defer run returned %u after %d calls, model says %u due", ran, x->calls, due);
    /* Entries that ran leave; the rest and those deferred meanwhile stay, in order. */
    int out = 0;
    for (int i = 0; i < S.ndq; i++)
        if (i >= n0 || S.dq[i].due > frame) S.dq[out++] = S.dq[i];
    S.ndq = out;
    ctx_pop();
}

static void op_call(int id, void *arg) {
    if (S.depth >= MAX_CTX) return;
    ctx *x = ctx_push(CTX_DIRECT, arg);
    x->cl = id;
    fm_closure_call(S.cl[id].c, arg);
    if (x->calls != 1) FZ_FAIL("fm_closure_call of closure %d made %d calls", id, x->calls);
    ctx_pop();
}

/* ============================================================= callbacks */

enum {
    ACT_NONE,
    ACT_UNSUB_SELF,  /* the subscription it was called through, else its first */
    ACT_UNSUB_OTHER, /* any subscription record, maybe stale, maybe the other event */
    ACT_SUBSCRIBE,
    ACT_RELEASE,     /* one of the harness's references */
    ACT_DEFER,
    ACT_EMIT,        /* nested emit */
    ACT_RETAIN,
    ACT_DESTROY,     /* destroy an event that is emitting or the running queue:
                        refused with FM_ERR_INVALID_ARG, nothing destroyed */
    ACT_COUNT
};

static void *arg_of(uint8_t b) { return (void *)(uintptr_t)(0x1000u + 16u * b); }

static void act(int id, ctx *x) {
    cl_rec *r = &S.cl[id];
    if (r->size < 4) return;
    unsigned a = r->cap[0] % ACT_COUNT, p = r->cap[1], f = r->cap[2];
    if (f & 0x80) { /* act once */
        r->cap[0] = 0;
        r->bytes[0] = 0;
    }
    switch (a) {
    case ACT_NONE: break;
    case ACT_UNSUB_SELF: {
        int sid = -1;
        if (x->kind == CTX_EMIT) {
            sid = x->cur_sub;
        } else {
            for (int i = 0; i < MAX_SUB && sid < 0; i++)
                if (S.sub[i].used && S.sub[i].active && S.sub[i].cl == id) sid = i;
        }
        if (sid >= 0) {
            TRACE("    closure %d unsubscribes itself (%d)\n", id, sid);
            op_unsubscribe(sid, S.sub[sid].ev);
        }
        break;
    }
    case ACT_UNSUB_OTHER: {
        int ids[MAX_SUB], n = 0;
        for (int i = 0; i < MAX_SUB; i++)
            if (S.sub[i].used) ids[n++] = i;
        if (!n) break;
        int sid = ids[p % (unsigned)n];
        int ev = (f & 1) ? 1 - S.sub[sid].ev : S.sub[sid].ev;
        TRACE("    closure %d unsubscribes %d from event %d\n", id, sid, ev);
        op_unsubscribe(sid, ev);
        break;
    }
    case ACT_SUBSCRIBE: {
        int t = pick(pred_usable, p);
        if (t >= 0) {
            TRACE("    closure %d subscribes %d to event %d\n", id, t, f & 1);
            op_subscribe(f & 1, t);
        }
        break;
    }
    case ACT_RELEASE: {
        int t = pick(pred_held, p);
        if (t >= 0) {
            TRACE("    closure %d releases %d\n", id, t);
            op_release(t);
        }
        break;
    }
    case ACT_DEFER: {
        int t = pick(pred_usable, p);
        if (t >= 0) {
            TRACE("    closure %d defers %d by %u\n", id, t, (f >> 1) & 3);
            op_defer(t, (f >> 1) & 3);
        }
        break;
    }
    case ACT_EMIT:
        if (S.nested_emits < MAX_NESTED_EMITS) {
            S.nested_emits++;
            op_emit(f & 1, arg_of((uint8_t)p));
        }
        break;
    case ACT_RETAIN: {
        int t = pick(pred_usable, p);
        if (t >= 0) {
            TRACE("    closure %d retains %d\n", id, t);
            op_retain(t);
        }
        break;
    }
    case ACT_DESTROY: {
        bool running = false;
        for (int i = 0; i < S.depth; i++) running |= S.stack[i].kind == CTX_DEFER;
        int ev = S.ev[p & 1].depth ? (int)(p & 1) : S.ev[1 - (p & 1)].depth ? 1 - (int)(p & 1) : -1;
        uint64_t e0 = fz_err.count;
        fm_clear_error();
        if (ev >= 0 && (!running || (f & 1))) {
            TRACE("    closure %d destroys emitting event %d\n", id, ev);
            fm_event_destroy(S.ev[ev].obj);
            expect_error(e0, FM_ERR_INVALID_ARG, "event destroy from inside its own emit");
        } else if (running) {
            TRACE("    closure %d destroys the running queue\n", id);
            fm_defer_queue_destroy(S.q);
            expect_error(e0, FM_ERR_INVALID_ARG, "queue destroy from inside its own run");
        }
        break;
    }
    }
}

/* Checks the call against the innermost context's prediction. */
static void expect_call(ctx *x, int id, void *arg) {
    if (arg != x->arg)
        FZ_FAIL("closure %d called with arg %p, expected %p", id, arg, x->arg);
    switch (x->kind) {
    case CTX_DIRECT:
        if (id != x->cl || x->calls != 0)
            FZ_FAIL("fm_closure_call of %d called closure %d (call %d)", x->cl, id, x->calls);
        break;
    case CTX_EMIT: {
        while (x->cursor < x->nsnap && !sub_live(x->snap[x->cursor], x->snap_serial[x->cursor]))
            x->cursor++;
        if (x->cursor == x->nsnap)
            FZ_FAIL("emit of event %d called closure %d after its last due subscriber", x->ev, id);
        int sid = x->snap[x->cursor++];
        if (S.sub[sid].cl != id)
            FZ_FAIL("emit of event %d called closure %d, expected subscription %d (closure %d)",
                    x->ev, id, sid, S.sub[sid].cl);
        x->cur_sub = sid;
        break;
    }
    case CTX_DEFER:
        defer_release_prev(x);
        while (x->dcursor < x->nd && x->dsnap[x->dcursor].due > S.qframe) x->dcursor++;
        if (x->dcursor == x->nd)
            FZ_FAIL("defer run called closure %d after its last due entry", id);
        if (x->dsnap[x->dcursor].cl != id)
            FZ_FAIL("defer run called closure %d, expected entry %d (closure %d)", id, x->dcursor,
                    x->dsnap[x->dcursor].cl);
        x->dcursor++;
        x->release_cl = id;
        break;
    }
    x->calls++;
}

static void cb(void *capture, void *arg) {
    if (S.depth == 0) FZ_FAIL("callback ran outside any call, emit or run");
    int id = find_by_capture(capture);
    if (id < 0) FZ_FAIL("callback with capture %p of no live closure", capture);
    if (((uintptr_t)capture & 15u) != 0) FZ_FAIL("capture %p not 16-byte aligned", capture);
    ctx *x = &S.stack[S.depth - 1];
    expect_call(x, id, arg);
    cl_rec *r = &S.cl[id];
    check_capture(id, "at call");
    if (r->running++ == 0) r->outer_ctx = S.depth - 1;
    act(id, x);
    /* Still ours, whatever the action did. */
    if (!cl_valid(id)) FZ_FAIL("model: running closure %d was freed", id);
    check_capture(id, "after its action");
    r->running--;
}

/* ============================================================ invariants */

static void check_invariants(const char *after) {
    if (S.depth != 0) FZ_FAIL("model: context stack not empty after %s", after);
    for (int e = 0; e < 2; e++) {
        uint32_t count = fm_event_count(S.ev[e].obj);
        if (count != (uint32_t)S.ev[e].n)
            FZ_FAIL("after %s: event %d count %u, model %d", after, e, count, S.ev[e].n);
        if (S.ev[e].depth || S.ev[e].npend) FZ_FAIL("model: event %d still emitting", e);
    }
    uint32_t pending = fm_defer_pending(S.q);
    if (pending != (uint32_t)S.ndq)
        FZ_FAIL("after %s: defer pending %u, model %d", after, pending, S.ndq);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(S.cp, &st);
    if (st.live != S.live || st.total_made != S.made || st.refused != S.refused)
        FZ_FAIL("after %s: pool live/made/refused %llu/%llu/%llu, model %llu/%llu/%llu", after,
                (unsigned long long)st.live, (unsigned long long)st.total_made,
                (unsigned long long)st.refused, (unsigned long long)S.live,
                (unsigned long long)S.made, (unsigned long long)S.refused);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < st.classes && i < FM_CLOSURE_MAX_CLASSES; i++) sum += st.class_live[i];
    if (sum != st.live) FZ_FAIL("after %s: class_live sums to %llu, live %llu", after,
                                (unsigned long long)sum, (unsigned long long)st.live);
    for (int i = 0; i < MAX_CL; i++) {
        if (!cl_valid(i)) continue;
        check_capture(i, after);
        const cl_rec *r = &S.cl[i];
        if (r->st == CL_POOLED && (r->pend || r->running || r->refs < r->hrefs))
            FZ_FAIL("model: closure %d refs %u hrefs %u pend %u running %u", i, r->refs,
                    r->hrefs, r->pend, r->running);
    }
}

/* ============================================================ top level */

static const char *const op_names[16] = {
    "make", "make", "make_frame", "call", "retain", "release", "dead", "subscribe",
    "unsubscribe", "emit", "emit", "defer", "defer_run", "advance", "invalid", "defer_run",
};

static void top_make(fz_input *in, bool frame) {
    uint8_t b1 = fz_u8(in), b2 = fz_u8(in);
    uint32_t size = (b2 & 1) ? 256u + b1 % 45u : b1;
    uint8_t hdr[3] = {fz_u8(in), fz_u8(in), fz_u8(in)};
    uint8_t seed = fz_u8(in);
    int id = new_record();
    if (id < 0) return;
    cl_rec *r = &S.cl[id];
    fill_capture(r->bytes, size, hdr, seed);
    uint64_t e0 = fz_err.count, f0 = g_alloc.failed_calls;
    fm_clear_error();
    /* b2 bit 1: the fm_closure_alloc variants; bit 2 with it: capture NULL,
     * the bytes written in place afterwards. */
    bool via_alloc = b2 & 2, in_place = via_alloc && (b2 & 4);
    const void *src = size && !in_place ? r->bytes : NULL;
    fm_closure *c;
    if (via_alloc)
        c = frame ? fm_closure_alloc_frame(S.fa, cb, src, size)
                  : fm_closure_alloc(S.cp, cb, src, size);
    else
        c = frame ? fm_closure_make_frame(S.fa, cb, src, size)
                  : fm_closure_make(S.cp, cb, src, size);
    if (c && in_place) memcpy(fm_closure_capture(c), r->bytes, size);
    TRACE("    -> record %d, %u bytes, act %u p %u f %02x: %p\n", id, size, hdr[0] % ACT_COUNT,
          hdr[1], hdr[2], (void *)c);
    if (!frame && size > MAX_CAPTURE) {
        if (c) FZ_FAIL("make with a %u-byte capture (max 256) succeeded", size);
        expect_error(e0, FM_ERR_INVALID_ARG, "make above max_capture");
        S.refused++;
        return;
    }
    if (alloc_failed_since(f0)) {
        if (c) FZ_FAIL("make succeeded though the allocator refused");
        expect_error(e0, frame ? FM_ERR_ARENA_FULL : FM_ERR_OUT_OF_MEMORY,
                     "make with the allocator refusing");
        if (!frame) S.refused++;
        return;
    }
    if (!c) FZ_FAIL("make of a %u-byte %s closure failed", size, frame ? "frame" : "pooled");
    expect_no_error(e0, "make");
    /* A new closure never shares memory with a live one; a dead one whose
     * slot it took is forgotten (its pointer now names the new closure). */
    for (int i = 0; i < MAX_CL; i++) {
        if (i == id) continue;
        if (cl_valid(i) && S.cl[i].c == c)
            FZ_FAIL("make returned live closure %d's pointer %p", i, (void *)c);
        if (S.cl[i].st == CL_DEAD && S.cl[i].c == c) S.cl[i].st = CL_FREE;
    }
    r->c = c;
    r->cap = fm_closure_capture(c);
    r->size = size;
    r->running = 0;
    r->pend = 0;
    if (frame) {
        r->st = CL_FRAME;
        r->refs = r->hrefs = 0;
        r->born = S.fa_frame;
    } else {
        r->st = CL_POOLED;
        r->refs = r->hrefs = 1;
        S.live++;
        S.made++;
    }
    check_capture(id, "after make");
}

/* Operations on a dead closure whose slot has not been reused. */
static void top_dead(fz_input *in) {
    int id = pick(pred_dead, fz_u8(in));
    uint8_t v = fz_u8(in);
    if (id < 0) return;
    fm_closure *c = S.cl[id].c;
    uint64_t e0 = fz_err.count, f0 = g_alloc.failed_calls;
    fm_clear_error();
    switch (v % 4) {
    case 0:
        if (fm_closure_release(c)) FZ_FAIL("release of dead closure %d returned true", id);
        expect_error(e0, FM_ERR_REFCOUNT, "release of a dead closure");
        break;
    case 1:
        fm_closure_retain(c);
        expect_error(e0, FM_ERR_REFCOUNT, "retain of a dead closure");
        break;
    case 2: {
        fm_handle h = fm_event_subscribe(S.ev[v >> 7].obj, c);
        if (!fm_handle_is_null(h)) FZ_FAIL("subscribe of dead closure %d succeeded", id);
        expect_error(e0, alloc_failed_since(f0) ? FM_ERR_OUT_OF_MEMORY : FM_ERR_REFCOUNT,
                     "subscribe of a dead closure");
        break;
    }
    case 3:
        if (fm_defer(S.q, c, 0)) FZ_FAIL("defer of dead closure %d succeeded", id);
        expect_error(e0, alloc_failed_since(f0) ? FM_ERR_OUT_OF_MEMORY : FM_ERR_REFCOUNT,
                     "defer of a dead closure");
        break;
    }
}

/* Calls that must be refused with FM_ERR_INVALID_ARG / FM_ERR_STALE_HANDLE. */
static void top_invalid(fz_input *in) {
    uint8_t v = fz_u8(in);
    uint64_t e0 = fz_err.count;
    fm_clear_error();
    unsigned char bytes[8] = {0};
    switch (v % 9) {
    case 0:
        if (fm_closure_make(S.cp, NULL, bytes, sizeof bytes)) FZ_FAIL("make(fn NULL) succeeded");
        expect_error(e0, FM_ERR_INVALID_ARG, "make(fn NULL)");
        S.refused++;
        break;
    case 1:
        if (fm_closure_make(S.cp, cb, NULL, 1 + v % 64)) FZ_FAIL("make(capture NULL) succeeded");
        expect_error(e0, FM_ERR_INVALID_ARG, "make(capture NULL, size > 0)");
        S.refused++;
        break;
    case 2:
        if (!fm_handle_is_null(fm_event_subscribe(S.ev[v >> 7].obj, NULL)))
            FZ_FAIL("subscribe(NULL) succeeded");
        expect_error(e0, FM_ERR_INVALID_ARG, "subscribe(NULL)");
        break;
    case 3:
        if (fm_defer(S.q, NULL, v >> 4)) FZ_FAIL("defer(NULL) succeeded");
        expect_error(e0, FM_ERR_INVALID_ARG, "defer(NULL)");
        break;
    case 4:
        if (fm_closure_release(NULL)) FZ_FAIL("release(NULL) returned true");
        expect_error(e0, FM_ERR_INVALID_ARG, "release(NULL)");
        break;
    case 5:
        if (fm_event_unsubscribe(S.ev[v >> 7].obj, FM_HANDLE_NULL))
            FZ_FAIL("unsubscribe(null handle) succeeded");
        expect_error(e0, FM_ERR_STALE_HANDLE, "unsubscribe(null handle)");
        break;
    case 6:
        if (fm_closure_make_frame(S.fa, NULL, bytes, sizeof bytes))
            FZ_FAIL("make_frame(fn NULL) succeeded");
        expect_error(e0, FM_ERR_INVALID_ARG, "make_frame(fn NULL)");
        break;
    case 7:
        if (fm_closure_make_frame(S.fa, cb, NULL, 1 + v % 64))
            FZ_FAIL("make_frame(capture NULL) succeeded");
        expect_error(e0, FM_ERR_INVALID_ARG, "make_frame(capture NULL, size > 0)");
        break;
    case 8:
        if (fm_closure_alloc(S.cp, NULL, NULL, v % 64)) FZ_FAIL("alloc(fn NULL) succeeded");
        expect_error(e0, FM_ERR_INVALID_ARG, "alloc(fn NULL)");
        S.refused++;
        break;
    }
}

static void top_advance(void) {
    uint64_t next = S.fa_frame + 1;
    bool expiring[MAX_CL] = {false};
    for (int i = 0; i < MAX_CL; i++)
        expiring[i] = S.cl[i].st == CL_FRAME && next - S.cl[i].born >= S.frames;
    /* A queued entry cannot be taken back: keep its closure alive. */
    for (int i = 0; i < S.ndq; i++)
        if (expiring[S.dq[i].cl]) {
            TRACE("    skipped: closure %d is queued\n", S.dq[i].cl);
            return;
        }
    for (int i = 0; i < MAX_SUB; i++)
        if (S.sub[i].used && S.sub[i].active && expiring[S.sub[i].cl])
            op_unsubscribe(i, S.sub[i].ev);
    fm_frame_arena_advance(S.fa);
    S.fa_frame = next;
    for (int i = 0; i < MAX_CL; i++)
        if (expiring[i]) {
            TRACE("    frame closure %d expires\n", i);
            S.cl[i].st = CL_FREE;
        }
}

static void run_op(fz_input *in) {
    uint8_t op = fz_u8(in);
    bool refuse = op & 0x80;
    unsigned kind = op & 0x0f;
    S.nested_emits = 0;
    TRACE("op %llu: %s%s\n", (unsigned long long)S.op_index, op_names[kind],
          refuse ? " (allocator refuses the next call)" : "");
    if (refuse) fz_alloc_fail(&g_alloc, 1, false);
    switch (kind) {
    case 0:
    case 1: top_make(in, false); break;
    case 2: top_make(in, true); break;
    case 3: {
        int id = pick(pred_held, fz_u8(in));
        uint8_t a = fz_u8(in);
        if (id >= 0) op_call(id, arg_of(a));
        break;
    }
    case 4: {
        int id = pick(pred_usable, fz_u8(in));
        if (id >= 0) op_retain(id);
        break;
    }
    case 5: {
        int id = pick(pred_held, fz_u8(in));
        if (id >= 0) op_release(id);
        break;
    }
    case 6: top_dead(in); break;
    case 7: {
        uint8_t b = fz_u8(in);
        int id = pick(pred_usable, fz_u8(in));
        if (id >= 0) op_subscribe(b & 1, id);
        break;
    }
    case 8: {
        uint8_t sel = fz_u8(in), v = fz_u8(in);
        int ids[MAX_SUB], n = 0;
        for (int i = 0; i < MAX_SUB; i++)
            if (S.sub[i].used) ids[n++] = i;
        if (n) {
            int sid = ids[sel % n];
            op_unsubscribe(sid, (v & 1) ? 1 - S.sub[sid].ev : S.sub[sid].ev);
        }
        break;
    }
    case 9:
    case 10: {
        uint8_t b = fz_u8(in);
        op_emit(b & 1, arg_of(b));
        break;
    }
    case 11: {
        int id = pick(pred_usable, fz_u8(in));
        uint8_t d = fz_u8(in);
        if (id >= 0) op_defer(id, d & 3);
        break;
    }
    case 12:
    case 15: op_defer_run(); break;
    case 13: top_advance(); break;
    case 14: top_invalid(in); break;
    }
    fz_alloc_fail(&g_alloc, 0, false);
    check_invariants(op_names[kind]);
    S.op_index++;
}

/* Drops the harness's references, destroys everything and checks that every
 * closure and every byte went back. */
static void finish(void) {
    for (int i = 0; i < MAX_CL; i++) {
        cl_rec *r = &S.cl[i];
        while (r->st == CL_POOLED && r->hrefs) op_release(i);
    }
    uint64_t e0 = fz_err.count;
    for (int e = 0; e < 2; e++) {
        fm_event_destroy(S.ev[e].obj);
        for (int i = 0; i < S.ev[e].n; i++) drop_ref(S.sub[S.ev[e].list[i]].cl);
        S.ev[e].n = 0;
    }
    fm_defer_queue_destroy(S.q);
    for (int i = 0; i < S.ndq; i++) drop_ref(S.dq[i].cl);
    S.ndq = 0;
    expect_no_error(e0, "destroying the events and the queue");
    for (int i = 0; i < MAX_CL; i++)
        if (S.cl[i].st == CL_POOLED) FZ_FAIL("model: closure %d alive at the end", i);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(S.cp, &st);
    if (st.live != 0 || S.live != 0)
        FZ_FAIL("%llu closures live after every reference was dropped (model %llu)",
                (unsigned long long)st.live, (unsigned long long)S.live);
    fm_closure_pool_destroy(S.cp);
    fm_frame_arena_destroy(S.fa);
    expect_no_error(e0, "destroying the pool and the frame arena");
    fz_alloc_check_clean(&g_alloc);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *t = getenv("FUZZ_CLOSURE_TRACE");
    trace = t && *t && *t != '0';
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    fz_errors_begin();
    memset(&S, 0, sizeof S);
    fz_alloc_begin(&g_alloc, CA_MAX_BLOCK, 0);
    fm_allocator a = fm_test_allocator_get(&g_alloc);

    uint8_t cfg = fz_u8(&in);
    static const uint32_t caps[4] = {0, 1, 2, 5};
    S.frames = 2 + (cfg & 3);
    S.cp = fm_closure_pool_create(&(fm_closure_pool_desc){
        .name = "fuzz_closures",
        .max_capture = (cfg & 0x40) ? MAX_CAPTURE : 0,
        .initial_capacity = (cfg & 0x80) ? 1 : 0,
        .allocator = a});
    S.fa = fm_frame_arena_create(&(fm_frame_arena_desc){
        .name = "fuzz_frames",
        .frames = S.frames,
        .arena = {.commit_step = 4096, .allocator = a}});
    for (int e = 0; e < 2; e++)
        S.ev[e].obj = fm_event_create(&(fm_event_desc){
            .name = e ? "ev1" : "ev0", .initial_capacity = caps[(cfg >> 2) & 3], .allocator = a});
    S.q = fm_defer_queue_create(&(fm_defer_queue_desc){
        .name = "fuzz_defer", .initial_capacity = caps[(cfg >> 4) & 3], .allocator = a});
    if (!S.cp || !S.fa || !S.ev[0].obj || !S.ev[1].obj || !S.q)
        FZ_FAIL("creating the objects failed (%s)", fm_error_name(fm_last_error()));
    if (fz_err.count) FZ_FAIL("creating the objects reported %s", fm_error_name(fz_err.last));
    TRACE("config: frames %u, event cap %u, defer cap %u\n", S.frames, caps[(cfg >> 2) & 3],
          caps[(cfg >> 4) & 3]);

    while (fz_more(&in)) run_op(&in);
    finish();
    return 0;
}
