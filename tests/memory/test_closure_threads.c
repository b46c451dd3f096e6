/* tests/memory/test_closure_threads.c: closure pools, events and defer
 * queues shared by 4 and 8 threads.
 *
 * - Closure pools under MUTEX, THREAD_CACHE and LOCKFREE: closures made on
 *   one thread are called and released on others (the last release frees
 *   into the pool they came from); one closure retained and released by all
 *   threads at once keeps an exact count. Every capture carries its maker's
 *   tag and a checksum that each call verifies.
 * - Events under MUTEX: emits race subscribes and unsubscribes from other
 *   threads, and callbacks unsubscribe themselves and subscribe others
 *   during the emit. Nothing runs after its closure is freed (the checksum
 *   would break, ASan would report), and every reference comes back.
 * - Defer queues under MUTEX and LOCKFREE (with an inbox small enough to
 *   overflow): pushes from many threads race fm_defer_run; every closure runs
 *   exactly once, each thread's closures in the order it deferred them.
 * - Frame closures from a LOCKFREE frame arena, made on many threads.
 * - Error paths: unknown and unsupported policies name the object; destroy
 *   of an event while another thread emits is refused.
 */
#define _POSIX_C_SOURCE 200809L

#include "sync_test_support.h"

#include "framemem/framemem.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================ captures */

/* Every capture: who made it, a sequence number, and a checksum of both. */
typedef struct tagged {
    uint32_t tag;
    uint32_t seq;
    uint64_t check;
    atomic_int *calls;   /* incremented by each call */
    atomic_int *bad;     /* incremented when the checksum is wrong */
} tagged; /* captures may be larger (other size classes): the rest is unused */

static uint64_t check_of(uint32_t tag, uint32_t seq) {
    return ((uint64_t)tag << 32 | seq) * 0x9E3779B97F4A7C15ull ^ 0xC105C105u;
}

static void tagged_fn(void *capture, void *arg) {
    (void)arg;
    tagged *t = capture;
    if (t->check != check_of(t->tag, t->seq)) atomic_fetch_add(t->bad, 1);
    atomic_fetch_add(t->calls, 1);
}

static fm_closure *make_tagged(fm_closure_pool *cp, uint32_t tag, uint32_t seq, size_t size,
                               atomic_int *calls, atomic_int *bad) {
    fm_closure *c = fm_closure_alloc(cp, tagged_fn, NULL, size);
    if (!c) return NULL;
    tagged *t = fm_closure_capture(c);
    *t = (tagged){.tag = tag, .seq = seq, .check = check_of(tag, seq), .calls = calls, .bad = bad};
    return c;
}

static const size_t k_sizes[] = {sizeof(tagged), 48, 100, 200}; /* four size classes */

/* ===================================================== a mailbox of closures */

/* A mutex-protected ring: closures made on one thread travel to another. */
typedef struct mailbox {
    fm_test_mutex lock;
    fm_closure **items;
    size_t cap, head, count;
} mailbox;

static void mailbox_init(mailbox *m, size_t cap) {
    fm_test_mutex_init(&m->lock);
    m->items = calloc(cap, sizeof *m->items);
    assert_non_null(m->items);
    m->cap = cap;
    m->head = m->count = 0;
}

static bool mailbox_put(mailbox *m, fm_closure *c) {
    fm_test_mutex_lock(&m->lock);
    bool ok = m->count < m->cap;
    if (ok) m->items[(m->head + m->count++) % m->cap] = c;
    fm_test_mutex_unlock(&m->lock);
    return ok;
}

static fm_closure *mailbox_take(mailbox *m) {
    fm_test_mutex_lock(&m->lock);
    fm_closure *c = NULL;
    if (m->count) {
        c = m->items[m->head];
        m->head = (m->head + 1) % m->cap;
        m->count--;
    }
    fm_test_mutex_unlock(&m->lock);
    return c;
}

static void mailbox_destroy(mailbox *m) {
    fm_test_mutex_destroy(&m->lock);
    free(m->items);
}

/* ======================================================== closure pools */

typedef struct pool_run {
    fm_closure_pool *cp;
    int threads;
    int per_thread;
    mailbox *boxes;    /* one per thread: closures for that thread to finish */
    atomic_int calls;
    atomic_int bad;
    atomic_int made;
    atomic_int finished; /* closures released for the last time */
    atomic_int failed;
} pool_run;

typedef struct pool_thread {
    pool_run *run;
    int index;
} pool_thread;

/* A closure from another thread's maker: call it, drop the reference it
 * came with (the last one frees it, into the pool it came from). */
static void finish_one(pool_run *r, fm_closure *c) {
    fm_closure_call(c, NULL);
    if (fm_closure_release(c)) atomic_fetch_add(&r->finished, 1);
}

static void *pool_worker(void *arg) {
    pool_thread *pt = arg;
    pool_run *r = pt->run;
    mailbox *mine = &r->boxes[pt->index];
    mailbox *next = &r->boxes[(pt->index + 1) % r->threads];
    int made = 0;
    fm_closure *kept[64];
    int n_kept = 0;
    while (made < r->per_thread || atomic_load(&r->finished) < r->threads * r->per_thread) {
        if (made < r->per_thread) {
            size_t size = k_sizes[made % 4];
            fm_closure *c = make_tagged(r->cp, (uint32_t)pt->index + 1, (uint32_t)made, size,
                                        &r->calls, &r->bad);
            if (!c) {
                atomic_fetch_add(&r->failed, 1);
                break;
            }
            atomic_fetch_add(&r->made, 1);
            fm_closure_call(c, NULL);
            fm_closure_retain(c); /* one reference for the next thread, one kept */
            while (!mailbox_put(next, c)) {
                /* Full: finish what came in meanwhile, so no one waits on us. */
                fm_closure *in = mailbox_take(mine);
                if (in) finish_one(r, in);
                else fm_test_thread_yield();
            }
            kept[n_kept++] = c;
            made++;
            if (n_kept == 64 || made == r->per_thread) {
                /* Drop the kept references: whichever of maker and
                 * receiver lets go last frees the closure. */
                for (int i = 0; i < n_kept; i++)
                    if (fm_closure_release(kept[i])) atomic_fetch_add(&r->finished, 1);
                n_kept = 0;
            }
        }
        fm_closure *in = mailbox_take(mine);
        if (in) {
            finish_one(r, in);
        } else if (made == r->per_thread) {
            fm_test_thread_yield();
        }
    }
    return NULL;
}

static void run_pool(fm_sync sync, int threads) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){
        .name = "shared_closures", .sync = sync, .initial_capacity = 8,
        .allocator = fm_test_allocator_get(&backing)});
    if (!cp) print_error("create: %s\n", fm_last_error_message());
    assert_non_null(cp);
    pool_run r = {.cp = cp, .threads = threads, .per_thread = 8000 / threads};
    r.boxes = calloc((size_t)threads, sizeof *r.boxes);
    assert_non_null(r.boxes);
    for (int i = 0; i < threads; i++) mailbox_init(&r.boxes[i], 32);
    pool_thread pt[SYNC_MAX_THREADS];
    for (int i = 0; i < threads; i++) pt[i] = (pool_thread){&r, i};
    sync_run(threads, pool_worker, pt, sizeof pt[0]);

    int total = threads * r.per_thread;
    assert_int_equal(atomic_load(&r.failed), 0);
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_int_equal(atomic_load(&r.made), total);
    assert_int_equal(atomic_load(&r.finished), total);
    assert_int_equal(atomic_load(&r.calls), 2 * total); /* maker and receiver */
    fm_closure_pool_stats s;
    fm_closure_pool_get_stats(cp, &s);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.total_made, (uint64_t)total);
    assert_int_equal(s.refused, 0);
    for (uint32_t i = 0; i < s.classes; i++) assert_int_equal(s.class_live[i], 0);
    assert_int_equal(atomic_load(&errors.count), 0);
    for (int i = 0; i < threads; i++) mailbox_destroy(&r.boxes[i]);
    free(r.boxes);
    fm_closure_pool_destroy(cp);
    assert_int_equal(atomic_load(&errors.count), 0);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

static void test_mutex_closures_made_and_released_on_different_threads_4(void **state) {
    (void)state;
    run_pool(FM_SYNC_MUTEX, 4);
}
static void test_thread_cache_closures_made_and_released_on_different_threads_8(void **state) {
    (void)state;
    run_pool(FM_SYNC_THREAD_CACHE, 8);
}
static void test_lockfree_closures_made_and_released_on_different_threads_4(void **state) {
    (void)state;
    run_pool(FM_SYNC_LOCKFREE, 4);
}
static void test_lockfree_closures_made_and_released_on_different_threads_8(void **state) {
    (void)state;
    run_pool(FM_SYNC_LOCKFREE, 8);
}

/* One closure, retained and released by every thread at once. */
typedef struct shared_ref {
    fm_closure *c;
    int rounds;
    atomic_int freed;
} shared_ref;

static void *retain_release_worker(void *arg) {
    shared_ref *s = arg;
    for (int i = 0; i < s->rounds; i++) {
        fm_closure_retain(s->c);
        fm_closure_retain(s->c);
        fm_closure_call(s->c, NULL);
        if (fm_closure_release(s->c)) atomic_fetch_add(&s->freed, 1);
        if (fm_closure_release(s->c)) atomic_fetch_add(&s->freed, 1);
    }
    return NULL;
}

static void run_shared_count(fm_sync sync, int threads) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_closure_pool *cp =
        fm_closure_pool_create(&(fm_closure_pool_desc){.name = "counted", .sync = sync});
    assert_non_null(cp);
    atomic_int calls = 0, bad = 0;
    shared_ref s = {.c = make_tagged(cp, 7, 7, sizeof(tagged), &calls, &bad), .rounds = 2000};
    assert_non_null(s.c);
    fm_test_thread t[SYNC_MAX_THREADS];
    for (int i = 0; i < threads; i++)
        assert_int_equal(fm_test_thread_create(&t[i], retain_release_worker, &s), 0);
    for (int i = 0; i < threads; i++) assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
    assert_int_equal(atomic_load(&s.freed), 0);
    assert_int_equal(atomic_load(&calls), threads * s.rounds);
    assert_int_equal(atomic_load(&bad), 0);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(cp, &st);
    assert_int_equal(st.live, 1);
    assert_true(fm_closure_release(s.c)); /* the count came back to exactly 1 */
    fm_closure_pool_get_stats(cp, &st);
    assert_int_equal(st.live, 0);
    /* A release of the dead closure is reported and ignored. */
    int before = atomic_load(&errors.count);
    assert_false(fm_closure_release(s.c));
    sync_expect_errors(&errors, before, FM_ERR_REFCOUNT, 1);
    fm_closure_pool_destroy(cp);
    sync_errors_remove(&errors);
}

static void test_lockfree_closure_count_stays_exact_under_8_threads(void **state) {
    (void)state;
    run_shared_count(FM_SYNC_LOCKFREE, 8);
}
static void test_mutex_closure_count_stays_exact_under_4_threads(void **state) {
    (void)state;
    run_shared_count(FM_SYNC_MUTEX, 4);
}

/* ================================================================= events */

typedef struct ev_run {
    fm_event *ev;
    fm_closure_pool *cp;
    int rounds;
    atomic_int calls, bad, self_removed, spawned;
    atomic_int emits_done;
} ev_run;

/* A subscriber that unsubscribes itself on its first call (whichever emit
 * makes it) and, every fourth time, subscribes a plain one in its place. */
typedef struct self_remover {
    tagged t; /* first: tagged_fn's checks apply */
    ev_run *run;
    _Atomic uint64_t handle; /* set once subscribed; 0 when taken */
} self_remover;

static void self_remover_fn(void *capture, void *arg) {
    self_remover *s = capture;
    tagged_fn(&s->t, arg);
    uint64_t h = atomic_load(&s->handle);
    if (h && atomic_compare_exchange_strong(&s->handle, &h, 0)) {
        ev_run *r = s->run;
        if (fm_event_unsubscribe(r->ev, (fm_handle){h})) atomic_fetch_add(&r->self_removed, 1);
        if (s->t.seq % 4 == 0) {
            fm_closure *c = make_tagged(r->cp, 99, s->t.seq, 24, &r->calls, &r->bad);
            if (c) {
                fm_handle nh = fm_event_subscribe(r->ev, c);
                fm_closure_release(c);
                if (!fm_handle_is_null(nh)) {
                    atomic_fetch_add(&r->spawned, 1);
                    fm_event_unsubscribe(r->ev, nh); /* and gone again */
                }
            }
        }
    }
}

static void *emitter(void *arg) {
    ev_run *r = arg;
    for (int i = 0; i < r->rounds; i++) fm_event_emit(r->ev, NULL);
    atomic_fetch_add(&r->emits_done, 1);
    return NULL;
}

static void *subscriber(void *arg) {
    ev_run *r = arg;
    /* No cmocka asserts off the main thread: problems count as bad. */
    for (int i = 0; i < r->rounds; i++) {
        fm_closure *c = make_tagged(r->cp, 1, (uint32_t)i, i % 2 ? 24 : 100, &r->calls, &r->bad);
        fm_handle h = fm_event_subscribe(r->ev, c);
        fm_closure_release(c); /* the event holds it now */
        if (i % 3 == 0) fm_test_thread_yield();
        if (fm_handle_is_null(h) || !fm_event_unsubscribe(r->ev, h)) atomic_fetch_add(&r->bad, 1);
        if (fm_event_unsubscribe(r->ev, h)) atomic_fetch_add(&r->bad, 1); /* stale now */

        fm_closure *s = fm_closure_alloc(r->cp, self_remover_fn, NULL, sizeof(self_remover));
        if (!s) {
            atomic_fetch_add(&r->bad, 1);
            continue;
        }
        self_remover *sr = fm_closure_capture(s);
        *sr = (self_remover){.t = {.tag = 2, .seq = (uint32_t)i, .check = check_of(2, (uint32_t)i),
                                   .calls = &r->calls, .bad = &r->bad},
                             .run = r};
        fm_handle sh = fm_event_subscribe(r->ev, s);
        if (fm_handle_is_null(sh)) atomic_fetch_add(&r->bad, 1);
        atomic_store(&sr->handle, sh.bits);
        fm_closure_release(s);
        /* Take it back unless an emit got there first. */
        uint64_t bits = sh.bits;
        if (i % 2 && atomic_compare_exchange_strong(&sr->handle, &bits, 0) &&
            !fm_event_unsubscribe(r->ev, sh))
            atomic_fetch_add(&r->bad, 1);
    }
    return NULL;
}

static void run_event(int threads) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_closure_pool *cp = fm_closure_pool_create(
        &(fm_closure_pool_desc){.name = "event_closures", .sync = FM_SYNC_LOCKFREE});
    assert_non_null(cp);
    fm_event *ev = fm_event_create(&(fm_event_desc){.name = "shared_event", .sync = FM_SYNC_MUTEX,
                                                    .initial_capacity = 2});
    assert_non_null(ev);
    ev_run r = {.ev = ev, .cp = cp, .rounds = 3200 / threads};
    /* A few long-lived subscribers every emit must reach. */
    atomic_int steady_calls = 0;
    fm_handle steady[3];
    for (int i = 0; i < 3; i++) {
        fm_closure *c = make_tagged(cp, 50, (uint32_t)i, 48, &steady_calls, &r.bad);
        steady[i] = fm_event_subscribe(ev, c);
        fm_closure_release(c);
    }
    fm_test_thread t[SYNC_MAX_THREADS];
    for (int i = 0; i < threads; i++)
        assert_int_equal(fm_test_thread_create(&t[i], i % 2 ? subscriber : emitter, &r), 0);
    for (int i = 0; i < threads; i++) assert_int_equal(fm_test_thread_join(t[i], NULL), 0);

    int emits = (threads / 2) * r.rounds;
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_int_equal(atomic_load(&steady_calls), 3 * emits);
    /* Self-removers that no emit reached are still subscribed: one more
     * emit, on this thread alone, removes every one of them. */
    fm_event_emit(ev, NULL);
    assert_int_equal(fm_event_count(ev), 3);
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_true(atomic_load(&r.self_removed) > 0); /* callbacks did unsubscribe ... */
    assert_true(atomic_load(&r.spawned) > 0);      /* ... and subscribe during emits */
    for (int i = 0; i < 3; i++) assert_true(fm_event_unsubscribe(ev, steady[i]));
    assert_int_equal(fm_event_count(ev), 0);
    assert_int_equal(atomic_load(&errors.count), (threads / 2) * r.rounds); /* the stale unsubscribes */
    assert_int_equal(atomic_load(&errors.by_code[FM_ERR_STALE_HANDLE]), (threads / 2) * r.rounds);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(cp, &st);
    assert_int_equal(st.live, 0); /* every reference the event took came back */
    fm_event_destroy(ev);
    fm_closure_pool_destroy(cp);
    sync_errors_remove(&errors);
}

static void test_mutex_event_emits_race_subscribes_and_unsubscribes_4_threads(void **state) {
    (void)state;
    run_event(4);
}
static void test_mutex_event_emits_race_subscribes_and_unsubscribes_8_threads(void **state) {
    (void)state;
    run_event(8);
}

/* An event cannot be destroyed while another thread is inside its emit. */
typedef struct parked {
    atomic_int inside, go;
} parked;

static void park_fn(void *capture, void *arg) {
    (void)arg;
    parked *p = *(parked **)capture;
    atomic_store(&p->inside, 1);
    while (!atomic_load(&p->go)) fm_test_thread_yield();
}

static void *emit_once(void *arg) {
    fm_event_emit(arg, NULL);
    return NULL;
}

static void test_mutex_event_destroy_during_another_threads_emit_is_refused(void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    fm_closure_pool *cp = fm_closure_pool_create(
        &(fm_closure_pool_desc){.name = "park_closures", .sync = FM_SYNC_MUTEX});
    assert_non_null(cp);
    fm_event *ev = fm_event_create(&(fm_event_desc){.name = "busy_event", .sync = FM_SYNC_MUTEX});
    assert_non_null(ev);
    parked p = {0};
    parked *pp = &p;
    fm_closure *c = fm_closure_make(cp, park_fn, &pp, sizeof pp);
    assert_false(fm_handle_is_null(fm_event_subscribe(ev, c)));
    fm_closure_release(c);
    fm_test_thread t;
    assert_int_equal(fm_test_thread_create(&t, emit_once, ev), 0);
    while (!atomic_load(&p.inside)) fm_test_thread_yield();
    fm_event_destroy(ev); /* refused: the event and its subscriber stay */
    sync_expect_errors(&errors, 0, FM_ERR_INVALID_ARG, 1);
    assert_true(fm_test_contains(errors.last_message, "busy_event"));
    assert_int_equal(fm_event_count(ev), 1); /* the lock is free during the call */
    atomic_store(&p.go, 1);
    assert_int_equal(fm_test_thread_join(t, NULL), 0);
    fm_event_destroy(ev);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(cp, &st);
    assert_int_equal(st.live, 0);
    fm_closure_pool_destroy(cp);
    assert_int_equal(atomic_load(&errors.count), 1);
    sync_errors_remove(&errors);
}

/* ============================================================ defer queues */

typedef struct order_log {
    atomic_int ran;
    atomic_int out_of_order;
    atomic_int twice;
    uint32_t last_seq[SYNC_MAX_THREADS]; /* written only by the running thread */
    unsigned char *seen;                 /* per closure: ran already */
} order_log;

typedef struct ordered {
    order_log *log;
    uint32_t thread, seq, index;
} ordered;

static void ordered_fn(void *capture, void *arg) {
    (void)arg;
    ordered *o = capture;
    order_log *l = o->log;
    if (l->seen[o->index]) atomic_fetch_add(&l->twice, 1);
    l->seen[o->index] = 1;
    uint32_t last = l->last_seq[o->thread];
    if (last != UINT32_MAX && o->seq <= last) atomic_fetch_add(&l->out_of_order, 1);
    l->last_seq[o->thread] = o->seq;
    atomic_fetch_add(&l->ran, 1);
}

typedef struct defer_run {
    fm_defer_queue *q;
    fm_closure_pool *cp;
    order_log *log;
    int per_thread;
    atomic_int pushers_done;
    atomic_int refused;
} defer_run;

typedef struct defer_thread {
    defer_run *run;
    uint32_t index;
} defer_thread;

static void *pusher(void *arg) {
    defer_thread *dt = arg;
    defer_run *r = dt->run;
    for (int i = 0; i < r->per_thread; i++) {
        ordered o = {r->log, dt->index, (uint32_t)i, dt->index * (uint32_t)r->per_thread + (uint32_t)i};
        fm_closure *c = fm_closure_make(r->cp, ordered_fn, &o, sizeof o);
        if (!c || !fm_defer(r->q, c, 0)) atomic_fetch_add(&r->refused, 1);
        fm_closure_release(c); /* the queue holds it */
        if (i % 64 == 0) fm_test_thread_yield();
    }
    atomic_fetch_add(&r->pushers_done, 1);
    return NULL;
}

static void run_defer(fm_sync sync, int threads) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_closure_pool *cp = fm_closure_pool_create(
        &(fm_closure_pool_desc){.name = "defer_closures", .sync = FM_SYNC_LOCKFREE});
    assert_non_null(cp);
    fm_defer_queue *q = fm_defer_queue_create(
        &(fm_defer_queue_desc){.name = "shared_defer", .sync = sync, .initial_capacity = 8});
    assert_non_null(q);
    int pushers = threads - 1; /* this thread runs the queue */
    order_log log = {0};
    defer_run r = {.q = q, .cp = cp, .log = &log, .per_thread = 6000 / threads};
    log.seen = calloc((size_t)(pushers * r.per_thread), 1);
    assert_non_null(log.seen);
    for (int i = 0; i < SYNC_MAX_THREADS; i++) log.last_seq[i] = UINT32_MAX;
    defer_thread dt[SYNC_MAX_THREADS];
    fm_test_thread t[SYNC_MAX_THREADS];
    for (int i = 0; i < pushers; i++) {
        dt[i] = (defer_thread){&r, (uint32_t)i};
        assert_int_equal(fm_test_thread_create(&t[i], pusher, &dt[i]), 0);
    }
    uint32_t ran = 0;
    while (atomic_load(&r.pushers_done) < pushers) ran += fm_defer_run(q);
    for (int i = 0; i < pushers; i++) assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
    ran += fm_defer_run(q);
    int total = pushers * r.per_thread;
    assert_int_equal(atomic_load(&r.refused), 0);
    assert_int_equal(ran, (uint32_t)total);
    assert_int_equal(atomic_load(&log.ran), total);
    assert_int_equal(atomic_load(&log.twice), 0);
    assert_int_equal(atomic_load(&log.out_of_order), 0);
    for (int i = 0; i < total; i++) assert_int_equal(log.seen[i], 1);
    assert_int_equal(fm_defer_pending(q), 0);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(cp, &st);
    assert_int_equal(st.live, 0);
    assert_int_equal(atomic_load(&errors.count), 0);
    fm_defer_queue_destroy(q);
    fm_closure_pool_destroy(cp);
    free(log.seen);
    sync_errors_remove(&errors);
}

static void test_mutex_defer_queue_takes_pushes_from_3_threads_during_runs(void **state) {
    (void)state;
    run_defer(FM_SYNC_MUTEX, 4);
}
static void test_lockfree_defer_queue_takes_pushes_from_3_threads_during_runs(void **state) {
    (void)state;
    run_defer(FM_SYNC_LOCKFREE, 4);
}
static void test_lockfree_defer_queue_takes_pushes_from_7_threads_during_runs(void **state) {
    (void)state;
    run_defer(FM_SYNC_LOCKFREE, 8);
}

static void *run_queue_once(void *arg) {
    return (void *)(uintptr_t)fm_defer_run(arg);
}

/* While one thread's run is inside a deferred call, another thread may
 * defer (the closure waits for a later run) but not run or destroy. */
static void run_beside_a_run(fm_sync sync) {
    sync_errors errors;
    sync_errors_install(&errors);
    fm_closure_pool *cp = fm_closure_pool_create(
        &(fm_closure_pool_desc){.name = "beside_closures", .sync = FM_SYNC_MUTEX});
    assert_non_null(cp);
    fm_defer_queue *q =
        fm_defer_queue_create(&(fm_defer_queue_desc){.name = "busy_queue", .sync = sync});
    assert_non_null(q);
    parked p = {0};
    parked *pp = &p;
    fm_closure *park = fm_closure_make(cp, park_fn, &pp, sizeof pp);
    assert_true(fm_defer(q, park, 0));
    fm_closure_release(park);
    fm_test_thread t;
    assert_int_equal(fm_test_thread_create(&t, run_queue_once, q), 0);
    while (!atomic_load(&p.inside)) fm_test_thread_yield();
    assert_int_equal(fm_defer_run(q), 0);
    sync_expect_errors(&errors, 0, FM_ERR_INVALID_ARG, 1);
    assert_true(fm_test_contains(errors.last_message, "busy_queue"));
    fm_defer_queue_destroy(q); /* refused too: the queue stays */
    sync_expect_errors(&errors, 1, FM_ERR_INVALID_ARG, 1);
    atomic_int calls = 0, bad = 0;
    fm_closure *later = make_tagged(cp, 4, 4, 24, &calls, &bad);
    assert_true(fm_defer(q, later, 0));
    fm_closure_release(later);
    atomic_store(&p.go, 1);
    void *ran;
    assert_int_equal(fm_test_thread_join(t, &ran), 0);
    assert_int_equal((uintptr_t)ran, 1);        /* the parked one only */
    assert_int_equal(atomic_load(&calls), 0);   /* deferred during the run: waits */
    assert_int_equal(fm_defer_pending(q), 1);
    assert_int_equal(fm_defer_run(q), 1);
    assert_int_equal(atomic_load(&calls), 1);
    assert_int_equal(atomic_load(&bad), 0);
    fm_defer_queue_destroy(q);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(cp, &st);
    assert_int_equal(st.live, 0);
    fm_closure_pool_destroy(cp);
    assert_int_equal(atomic_load(&errors.count), 2);
    sync_errors_remove(&errors);
}

static void test_mutex_defer_run_beside_another_threads_run_is_refused(void **state) {
    (void)state;
    run_beside_a_run(FM_SYNC_MUTEX);
}
static void test_lockfree_defer_run_beside_another_threads_run_is_refused(void **state) {
    (void)state;
    run_beside_a_run(FM_SYNC_LOCKFREE);
}

/* Waiting closures at destroy are released, inbox included. */
static void test_lockfree_defer_queue_destroy_releases_what_waits(void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    fm_test_allocator backing;
    fm_test_allocator_init(&backing);
    fm_closure_pool *cp = fm_closure_pool_create(&(fm_closure_pool_desc){
        .name = "waiting", .sync = FM_SYNC_LOCKFREE, .allocator = fm_test_allocator_get(&backing)});
    assert_non_null(cp);
    fm_defer_queue *q = fm_defer_queue_create(&(fm_defer_queue_desc){
        .name = "waiting_q", .sync = FM_SYNC_LOCKFREE, .initial_capacity = 4,
        .allocator = fm_test_allocator_get(&backing)});
    assert_non_null(q);
    atomic_int calls = 0, bad = 0;
    for (uint32_t i = 0; i < 10; i++) { /* 4 in the inbox, the rest drained past it */
        fm_closure *c = make_tagged(cp, 3, i, 24, &calls, &bad);
        assert_true(fm_defer(q, c, 5));
        fm_closure_release(c);
    }
    assert_int_equal(fm_defer_pending(q), 10);
    fm_defer_queue_destroy(q);
    fm_closure_pool_stats st;
    fm_closure_pool_get_stats(cp, &st);
    assert_int_equal(st.live, 0);
    assert_int_equal(atomic_load(&calls), 0);
    fm_closure_pool_destroy(cp);
    assert_int_equal(atomic_load(&errors.count), 0);
    fm_test_allocator_assert_clean(&backing);
    fm_test_allocator_release(&backing);
    sync_errors_remove(&errors);
}

/* ========================================================== frame closures */

typedef struct frame_maker {
    fm_frame_arena *fa;
    uint32_t tag;
    fm_closure *made[500];
    atomic_int calls, bad;
} frame_maker;

static void *make_frame_closures(void *arg) {
    frame_maker *m = arg;
    for (uint32_t i = 0; i < 500; i++) {
        tagged t = {.tag = m->tag, .seq = i, .check = check_of(m->tag, i), .calls = &m->calls,
                    .bad = &m->bad};
        m->made[i] = fm_closure_alloc_frame(m->fa, tagged_fn, NULL, k_sizes[i % 4]);
        if (!m->made[i]) continue;
        *(tagged *)fm_closure_capture(m->made[i]) = t;
        fm_closure_call(m->made[i], NULL);
    }
    return NULL;
}

static void test_frame_closures_made_on_8_threads_in_a_lockfree_frame_arena(void **state) {
    (void)state;
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){
        .name = "closure_frames", .arena = {.sync = FM_SYNC_LOCKFREE, .commit_step = 4096}});
    assert_non_null(fa);
    frame_maker *m = calloc(8, sizeof *m);
    assert_non_null(m);
    for (int i = 0; i < 8; i++) {
        m[i].fa = fa;
        m[i].tag = (uint32_t)i + 1;
    }
    sync_run(8, make_frame_closures, m, sizeof *m);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(atomic_load(&m[i].calls), 500);
        for (int j = 0; j < 500; j++) {
            assert_non_null(m[i].made[j]);
            fm_closure_call(m[i].made[j], NULL); /* every capture intact after the join */
        }
        assert_int_equal(atomic_load(&m[i].calls), 1000);
        assert_int_equal(atomic_load(&m[i].bad), 0);
    }
    fm_frame_arena_stats s;
    fm_frame_arena_get_stats(fa, &s);
    assert_int_equal(s.total_allocs, 8 * 500);
    free(m);
    fm_frame_arena_destroy(fa);
}

/* ============================================================= bad descs */

static void test_closure_objects_reject_unknown_and_unsupported_policies(void **state) {
    (void)state;
    sync_errors errors;
    sync_errors_install(&errors);
    const struct {
        fm_sync sync;
        bool pool_ok, event_ok, queue_ok;
    } cases[] = {
        {FM_SYNC_NONE, true, true, true},
        {FM_SYNC_MUTEX, true, true, true},
        {FM_SYNC_THREAD_CACHE, true, false, false},
        {FM_SYNC_LOCKFREE, true, false, true},
        {FM_SYNC_COUNT, false, false, false},
        {(fm_sync)1000, false, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fm_sync sy = cases[i].sync;
        int before = atomic_load(&errors.count);
        fm_closure_pool *cp =
            fm_closure_pool_create(&(fm_closure_pool_desc){.name = "policy_pool", .sync = sy});
        fm_event *ev = fm_event_create(&(fm_event_desc){.name = "policy_event", .sync = sy});
        fm_defer_queue *q =
            fm_defer_queue_create(&(fm_defer_queue_desc){.name = "policy_queue", .sync = sy});
        if ((cp != NULL) != cases[i].pool_ok || (ev != NULL) != cases[i].event_ok ||
            (q != NULL) != cases[i].queue_ok) {
            print_error("sync %d: pool %p event %p queue %p; last: %s\n", (int)sy, (void *)cp,
                        (void *)ev, (void *)q, errors.last_message);
            fail();
        }
        int refused = !cases[i].pool_ok + !cases[i].event_ok + !cases[i].queue_ok;
        sync_expect_errors(&errors, before, FM_ERR_INVALID_ARG, refused);
        if (!cases[i].queue_ok) assert_true(fm_test_contains(errors.last_message, "policy_queue"));
        else if (!cases[i].event_ok) assert_true(fm_test_contains(errors.last_message, "policy_event"));
        fm_defer_queue_destroy(q);
        fm_event_destroy(ev);
        fm_closure_pool_destroy(cp);
    }
    sync_errors_remove(&errors);
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closure_objects_reject_unknown_and_unsupported_policies),
        cmocka_unit_test(test_mutex_closures_made_and_released_on_different_threads_4),
        cmocka_unit_test(test_thread_cache_closures_made_and_released_on_different_threads_8),
        cmocka_unit_test(test_lockfree_closures_made_and_released_on_different_threads_4),
        cmocka_unit_test(test_lockfree_closures_made_and_released_on_different_threads_8),
        cmocka_unit_test(test_lockfree_closure_count_stays_exact_under_8_threads),
        cmocka_unit_test(test_mutex_closure_count_stays_exact_under_4_threads),
        cmocka_unit_test(test_mutex_event_emits_race_subscribes_and_unsubscribes_4_threads),
        cmocka_unit_test(test_mutex_event_emits_race_subscribes_and_unsubscribes_8_threads),
        cmocka_unit_test(test_mutex_event_destroy_during_another_threads_emit_is_refused),
        cmocka_unit_test(test_mutex_defer_queue_takes_pushes_from_3_threads_during_runs),
        cmocka_unit_test(test_lockfree_defer_queue_takes_pushes_from_3_threads_during_runs),
        cmocka_unit_test(test_lockfree_defer_queue_takes_pushes_from_7_threads_during_runs),
        cmocka_unit_test(test_mutex_defer_run_beside_another_threads_run_is_refused),
        cmocka_unit_test(test_lockfree_defer_run_beside_another_threads_run_is_refused),
        cmocka_unit_test(test_lockfree_defer_queue_destroy_releases_what_waits),
        cmocka_unit_test(test_frame_closures_made_on_8_threads_in_a_lockfree_frame_arena),
    };
    return cmocka_run_group_tests_name("closure_threads", tests, NULL, NULL);
}
