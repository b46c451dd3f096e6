/* tests/memory/test_event.c: multicast events and deferred calls against the
 * contract in framemem/closure.h. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"
#include "internal.h" /* fm__event_set_limits: generations short enough to spend */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* =================================================================== helpers */

static fm_closure_pool_stats cstats(const fm_closure_pool *cp) {
    fm_closure_pool_stats s;
    memset(&s, 0, sizeof s);
    fm_closure_pool_get_stats(cp, &s);
    return s;
}

/* Checks that the last call failed with code, reported once. */
static void expect_error(fm_test_env *env, int errors_before, fm_error code) {
    if (fm_last_error() != code) {
        print_error("expected %s, got %s (%s)\n", fm_error_name(code),
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_int_equal(fm_last_error(), code);
    assert_int_equal(env->errors.count, errors_before + 1);
    assert_int_equal(env->errors.last, code);
    assert_int_equal(env->errors.bad_messages, 0);
}

/* ----------------------------------------------------------- scripted calls
 *
 * Every subscriber records its tag in the fixture's call log; some also do
 * something to the event the first time they run (the action lives in the
 * closure's own capture, which it clears after acting). */

enum { MAX_SUBS = 160, MAX_CALLS = 1024 };

typedef enum action {
    ACT_NONE,
    ACT_UNSUB_SELF,          /* unsubscribe its own subscription */
    ACT_UNSUB_TARGET,        /* unsubscribe subscription `target` */
    ACT_SUBSCRIBE_TARGET,    /* subscribe closure `target` (made beforehand) */
    ACT_UNSUB_SELF_RELEASE,  /* unsubscribe itself, drop the test's reference,
                                then read its own capture again */
    ACT_RELEASE_TARGET,      /* drop the test's reference to closure `target` */
    ACT_EMIT_NESTED,         /* emit the event again from inside the emit */
    ACT_DESTROY_EVENT,       /* try to destroy the event it is called from */
    ACT_DEFER_TARGET,        /* defer closure `target` on the fixture's queue */
    ACT_UNSUB_ALL,           /* unsubscribe every live subscription */
    ACT_DEFER_RUN_NESTED,    /* fm_defer_run from inside a deferred call: refused */
} action;

typedef struct fixture fixture;

typedef struct script {
    fixture *fx;
    int tag;
    action act;
    int target;
    uint32_t magic; /* checked after the action: the capture is still there */
} script;

struct fixture {
    fm_test_env *env;
    fm_closure_pool *cp;
    fm_event *ev;
    fm_defer_queue *q;
    fm_closure *cl[MAX_SUBS];
    fm_handle sub[MAX_SUBS];
    bool held[MAX_SUBS]; /* the test still holds its reference to cl[i] */
    int calls;
    int order[MAX_CALLS];
    void *last_arg;
    uint32_t count_seen; /* fm_event_count right after an action */
    int errors_seen;     /* handler calls during an action */
    fm_error error_seen;
};

#define SCRIPT_MAGIC 0x5C819u

static void scripted(void *capture, void *arg) {
    script *s = capture;
    fixture *fx = s->fx;
    assert_int_equal(s->magic, SCRIPT_MAGIC);
    if (fx->calls < MAX_CALLS) fx->order[fx->calls] = s->tag;
    fx->calls++;
    fx->last_arg = arg;
    action act = s->act;
    s->act = ACT_NONE; /* act once */
    int errors = fx->env->errors.count;
    switch (act) {
    case ACT_NONE: break;
    case ACT_UNSUB_SELF: assert_true(fm_event_unsubscribe(fx->ev, fx->sub[s->tag])); break;
    case ACT_UNSUB_TARGET: assert_true(fm_event_unsubscribe(fx->ev, fx->sub[s->target])); break;
    case ACT_SUBSCRIBE_TARGET:
        fx->sub[s->target] = fm_event_subscribe(fx->ev, fx->cl[s->target]);
        assert_false(fm_handle_is_null(fx->sub[s->target]));
        break;
    case ACT_UNSUB_SELF_RELEASE:
        assert_true(fm_event_unsubscribe(fx->ev, fx->sub[s->tag]));
        assert_true(fx->held[s->tag]);
        fx->held[s->tag] = false;
        /* The event's reference keeps it alive while it runs. */
        assert_false(fm_closure_release(fx->cl[s->tag]));
        break;
    case ACT_RELEASE_TARGET:
        assert_true(fx->held[s->target]);
        fx->held[s->target] = false;
        assert_false(fm_closure_release(fx->cl[s->target]));
        break;
    case ACT_EMIT_NESTED: fm_event_emit(fx->ev, (void *)(uintptr_t)0xBEEF); break;
    case ACT_DESTROY_EVENT: fm_event_destroy(fx->ev); break;
    case ACT_DEFER_TARGET: assert_true(fm_defer(fx->q, fx->cl[s->target], 0)); break;
    case ACT_DEFER_RUN_NESTED:
        assert_int_equal(fm_defer_run(fx->q), 0);
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        break;
    case ACT_UNSUB_ALL:
        for (int i = 0; i < MAX_SUBS; i++) {
            if (fx->cl[i] && !fm_handle_is_null(fx->sub[i])) {
                fm_event_unsubscribe(fx->ev, fx->sub[i]);
                fx->sub[i] = FM_HANDLE_NULL;
            }
        }
        break;
    }
    fx->count_seen = fx->ev ? fm_event_count(fx->ev) : 0;
    fx->errors_seen = fx->env->errors.count - errors;
    fx->error_seen = fx->env->errors.last;
    /* Still our capture after whatever the action did. */
    assert_int_equal(s->magic, SCRIPT_MAGIC);
}

static void fixture_init(fixture *fx, fm_test_env *env) {
    memset(fx, 0, sizeof *fx);
    fx->env = env;
    fm_allocator counting = fm_test_allocator_get(&env->alloc);
    fx->cp = fm_closure_pool_create(&(fm_closure_pool_desc){.name = "ev_closures",
                                                            .allocator = counting});
    fx->ev = fm_event_create(&(fm_event_desc){.name = "on_hit", .allocator = counting});
    fx->q = fm_defer_queue_create(&(fm_defer_queue_desc){.name = "later", .allocator = counting});
    assert_non_null(fx->cp);
    assert_non_null(fx->ev);
    assert_non_null(fx->q);
}

/* Makes closure i (tag i) without subscribing it; the test holds it. */
static fm_closure *fixture_make(fixture *fx, int i, action act, int target) {
    assert_true(i >= 0 && i < MAX_SUBS);
    fx->cl[i] = FM_CLOSURE(fx->cp, scripted, script, .fx = fx, .tag = i, .act = act,
                           .target = target, .magic = SCRIPT_MAGIC);
    assert_non_null(fx->cl[i]);
    fx->held[i] = true;
    return fx->cl[i];
}

/* Makes closure i and subscribes it; the test's own reference is dropped,
 * so the event holds the only one. */
static void fixture_add(fixture *fx, int i, action act, int target) {
    fixture_make(fx, i, act, target);
    int errors = fx->env->errors.count;
    fx->sub[i] = fm_event_subscribe(fx->ev, fx->cl[i]);
    assert_false(fm_handle_is_null(fx->sub[i]));
    assert_int_equal(fx->env->errors.count, errors);
    fx->held[i] = false;
    assert_false(fm_closure_release(fx->cl[i]));
}

static void fixture_emit(fixture *fx, void *arg) {
    fx->calls = 0;
    fm_event_emit(fx->ev, arg);
}

static void assert_order(const fixture *fx, const int *want, int n) {
    bool same = fx->calls == n;
    for (int i = 0; same && i < n; i++) same = fx->order[i] == want[i];
    if (!same) {
        print_error("called %d subscriber(s):", fx->calls);
        for (int i = 0; i < fx->calls && i < MAX_CALLS; i++) print_error(" %d", fx->order[i]);
        print_error("; expected %d:", n);
        for (int i = 0; i < n; i++) print_error(" %d", want[i]);
        print_error("\n");
    }
    assert_true(same);
}

#define ASSERT_ORDER(fx, ...)                                                     \
    do {                                                                          \
        const int want_[] = {__VA_ARGS__};                                        \
        assert_order((fx), want_, (int)(sizeof want_ / sizeof want_[0]));         \
    } while (0)

/* Drops the test's remaining references, destroys everything and checks
 * that every closure went back and every byte with it. */
static void fixture_finish(fixture *fx) {
    for (int i = 0; i < MAX_SUBS; i++) {
        if (fx->cl[i] && fx->held[i]) fm_closure_release(fx->cl[i]);
        fx->held[i] = false;
    }
    fm_event_destroy(fx->ev);
    fm_defer_queue_destroy(fx->q);
    assert_int_equal(cstats(fx->cp).live, 0);
    int errors = fx->env->errors.count;
    fm_closure_pool_destroy(fx->cp);
    assert_int_equal(fx->env->errors.count, errors);
    fm_test_allocator_assert_clean(&fx->env->alloc);
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ====================================================== subscribe and emit */

static void test_event_subscribe_returns_distinct_handles_and_count_tracks_them(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    assert_int_equal(fm_event_count(fx.ev), 0);
    for (int i = 0; i < 5; i++) {
        fixture_add(&fx, i, ACT_NONE, 0);
        assert_int_equal(fm_event_count(fx.ev), (uint32_t)i + 1);
        for (int j = 0; j < i; j++) assert_false(fm_handle_equal(fx.sub[i], fx.sub[j]));
    }
    assert_true(fm_event_unsubscribe(fx.ev, fx.sub[2]));
    assert_int_equal(fm_event_count(fx.ev), 4);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_emit_calls_subscribers_in_subscription_order_with_the_arg(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    int order[] = {3, 1, 4, 0, 5, 9, 2, 6};
    for (int i = 0; i < 8; i++) fixture_add(&fx, order[i], ACT_NONE, 0);
    int arg;
    fixture_emit(&fx, &arg);
    ASSERT_ORDER(&fx, 3, 1, 4, 0, 5, 9, 2, 6);
    assert_ptr_equal(fx.last_arg, &arg);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 3, 1, 4, 0, 5, 9, 2, 6);
    assert_null(fx.last_arg);
    /* An event without subscribers: emit calls nothing. */
    fm_event *empty = fm_event_create(&(fm_event_desc){0});
    assert_non_null(empty);
    fm_event_emit(empty, &arg);
    assert_int_equal(fm_event_count(empty), 0);
    fm_event_destroy(empty);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_same_closure_subscribed_twice_is_called_twice(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_make(&fx, 0, ACT_NONE, 0);
    fm_handle a = fm_event_subscribe(fx.ev, fx.cl[0]);
    fixture_add(&fx, 1, ACT_NONE, 0);
    fm_handle b = fm_event_subscribe(fx.ev, fx.cl[0]);
    assert_false(fm_handle_equal(a, b));
    assert_int_equal(fm_event_count(fx.ev), 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 0);
    assert_true(fm_event_unsubscribe(fx.ev, a));
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 1, 0);
    /* Two subscriptions, two references: the test's is still needed. */
    assert_false(fm_closure_release(fx.cl[0]));
    fx.held[0] = false;
    assert_true(fm_event_unsubscribe(fx.ev, b));
    assert_int_equal(cstats(fx.cp).live, 1);
    fixture_finish(&fx);
}

static void test_event_grows_past_its_initial_capacity_and_keeps_order(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    enum { N = 100 };
    for (int i = 0; i < N; i++) fixture_add(&fx, i, ACT_NONE, 0);
    assert_int_equal(fm_event_count(fx.ev), N);
    fixture_emit(&fx, NULL);
    assert_int_equal(fx.calls, N);
    for (int i = 0; i < N; i++) assert_int_equal(fx.order[i], i);
    /* Remove every third, add more: survivors in order, newcomers last. */
    for (int i = 0; i < N; i += 3) assert_true(fm_event_unsubscribe(fx.ev, fx.sub[i]));
    for (int i = N; i < N + 20; i++) fixture_add(&fx, i, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    int k = 0;
    for (int i = 0; i < N + 20; i++) {
        if (i < N && i % 3 == 0) continue;
        assert_int_equal(fx.order[k], i);
        k++;
    }
    assert_int_equal(fx.calls, k);
    assert_int_equal(fm_event_count(fx.ev), (uint32_t)k);
    assert_int_equal(cstats(fx.cp).live, (uint64_t)k);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_subscribe_of_null_closure_is_invalid_arg(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    int errors = fx.env->errors.count;
    fm_handle h = fm_event_subscribe(fx.ev, NULL);
    assert_true(fm_handle_is_null(h));
    expect_error(fx.env, errors, FM_ERR_INVALID_ARG);
    assert_true(fm_test_contains(fx.env->errors.message, "on_hit"));
    assert_int_equal(fm_event_count(fx.ev), 0);
    fixture_finish(&fx);
}

static void test_event_frame_closures_can_subscribe(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){0});
    assert_non_null(fa);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fm_closure *fr = fm_closure_make_frame(
        fa, scripted, &(script){.fx = &fx, .tag = 7, .magic = SCRIPT_MAGIC}, sizeof(script));
    assert_non_null(fr);
    fm_handle h = fm_event_subscribe(fx.ev, fr);
    assert_false(fm_handle_is_null(h));
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 7);
    assert_true(fm_event_unsubscribe(fx.ev, h));
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0);
    assert_int_equal(fx.env->errors.count, 0);
    fm_frame_arena_destroy(fa);
    fixture_finish(&fx);
}

/* ============================================================= unsubscribe */

static void test_event_unsubscribe_returns_true_once_then_false_with_stale_handle(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fixture_add(&fx, 1, ACT_NONE, 0);
    assert_true(fm_event_unsubscribe(fx.ev, fx.sub[0]));
    int errors = fx.env->errors.count;
    fm_clear_error();
    assert_false(fm_event_unsubscribe(fx.ev, fx.sub[0]));
    expect_error(fx.env, errors, FM_ERR_STALE_HANDLE);
    assert_true(fm_test_contains(fx.env->errors.message, "on_hit"));
    assert_int_equal(fm_event_count(fx.ev), 1);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 1);

    /* A new subscription (likely in the freed place) does not revive the
     * old handle. */
    fixture_add(&fx, 2, ACT_NONE, 0);
    assert_false(fm_handle_equal(fx.sub[2], fx.sub[0]));
    errors = fx.env->errors.count;
    assert_false(fm_event_unsubscribe(fx.ev, fx.sub[0]));
    expect_error(fx.env, errors, FM_ERR_STALE_HANDLE);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 1, 2);
    assert_int_equal(fm_event_count(fx.ev), 2);
    fixture_finish(&fx);
}

static void test_event_unsubscribe_of_null_or_garbage_handle_is_stale(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    for (int i = 0; i < 4; i++) fixture_add(&fx, i, ACT_NONE, 0);
    int errors = fx.env->errors.count;
    assert_false(fm_event_unsubscribe(fx.ev, FM_HANDLE_NULL));
    expect_error(fx.env, errors, FM_ERR_STALE_HANDLE);
    uint64_t seed = 99;
    for (int k = 0; k < 10000; k++) {
        uint64_t bits = rng_next(&seed);
        if (k & 1) bits = fx.sub[k % 4].bits ^ ((uint64_t)1 << (bits % 64));
        bool real = false;
        for (int i = 0; i < 4; i++) real |= bits == fx.sub[i].bits;
        if (real) continue;
        errors = fx.env->errors.count;
        fm_clear_error();
        assert_false(fm_event_unsubscribe(fx.ev, (fm_handle){bits}));
        expect_error(fx.env, errors, FM_ERR_STALE_HANDLE);
    }
    assert_int_equal(fm_event_count(fx.ev), 4);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2, 3);
    fixture_finish(&fx);
}

/* A slot whose generation is spent retires: with 3-bit generations a slot
 * serves 4 subscriptions (generations 1, 3, 5, 7), where a wrap would hand
 * generation 1 out again and let the first handle remove a stranger. */
static void test_event_stale_handle_after_generation_wrap_is_stale_and_new_subscriber_stays(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fm__event_set_limits(fx.ev, 3, 0);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fm_handle first = fx.sub[0];
    assert_true(fm_event_unsubscribe(fx.ev, first));
    fixture_make(&fx, 1, ACT_NONE, 0);
    for (int i = 0; i < 3; i++) { /* the slot's generations 3, 5 and 7 */
        fm_handle h = fm_event_subscribe(fx.ev, fx.cl[1]);
        assert_false(fm_handle_is_null(h));
        assert_false(fm_handle_equal(h, first));
        assert_true(fm_event_unsubscribe(fx.ev, h));
    }
    assert_int_equal(fx.env->errors.count, 0);
    fixture_add(&fx, 2, ACT_NONE, 0);
    if (fm_handle_equal(fx.sub[2], first)) print_error("a wrapped generation revived a handle\n");
    assert_false(fm_handle_equal(fx.sub[2], first));

    int errors = fx.env->errors.count;
    fm_clear_error();
    assert_false(fm_event_unsubscribe(fx.ev, first));
    expect_error(fx.env, errors, FM_ERR_STALE_HANDLE);
    assert_int_equal(fm_event_count(fx.ev), 1);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 2);

    /* Many slots, each used past its generations, in a shuffled order: no
     * handle ever given out matches a later subscriber. */
    enum { OLD = 200, NEW = 12 };
    fm_handle old[OLD];
    fm_handle live[4] = {0};
    uint64_t seed = 7;
    for (int i = 0; i < OLD; i++) {
        int k = (int)(rng_next(&seed) % 4);
        if (!fm_handle_is_null(live[k])) assert_true(fm_event_unsubscribe(fx.ev, live[k]));
        live[k] = old[i] = fm_event_subscribe(fx.ev, fx.cl[1]);
        assert_false(fm_handle_is_null(old[i]));
    }
    for (int k = 0; k < 4; k++) assert_true(fm_event_unsubscribe(fx.ev, live[k]));
    for (int i = 0; i < NEW; i++) fixture_add(&fx, 3 + i, ACT_NONE, 0);
    errors = fx.env->errors.count;
    for (int i = 0; i < OLD; i++) {
        fm_clear_error();
        assert_false(fm_event_unsubscribe(fx.ev, old[i]));
        assert_int_equal(fm_last_error(), FM_ERR_STALE_HANDLE);
    }
    assert_int_equal(fx.env->errors.count, errors + OLD);
    assert_int_equal(fm_event_count(fx.ev), 1 + NEW);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
    fixture_finish(&fx);
}

/* With every slot in use or retired, subscribe refuses (FM_ERR_POOL_FULL,
 * naming the event) without taking a reference, and the subscribers stay. */
static void test_event_subscribe_with_every_slot_retired_or_in_use_is_pool_full(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fm__event_set_limits(fx.ev, 2, 2); /* 2 subscriptions per slot, 2 slots */
    fixture_make(&fx, 0, ACT_NONE, 0);
    for (int i = 0; i < 2; i++) { /* slot 0: generations 1 and 3, then retired */
        fm_handle h = fm_event_subscribe(fx.ev, fx.cl[0]);
        assert_false(fm_handle_is_null(h));
        assert_true(fm_event_unsubscribe(fx.ev, h));
    }
    fixture_add(&fx, 1, ACT_NONE, 0); /* slot 1 */
    fixture_make(&fx, 2, ACT_NONE, 0);
    int errors = fx.env->errors.count;
    fm_clear_error();
    assert_true(fm_handle_is_null(fm_event_subscribe(fx.ev, fx.cl[2])));
    expect_error(fx.env, errors, FM_ERR_POOL_FULL);
    assert_true(fm_test_contains(fx.env->errors.message, "on_hit"));
    assert_int_equal(fm_event_count(fx.ev), 1);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 1);

    /* Slot 1 freed: its second generation serves closure 2, then it retires. */
    assert_true(fm_event_unsubscribe(fx.ev, fx.sub[1]));
    fx.sub[2] = fm_event_subscribe(fx.ev, fx.cl[2]);
    assert_false(fm_handle_is_null(fx.sub[2]));
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 2);
    assert_true(fm_event_unsubscribe(fx.ev, fx.sub[2]));
    errors = fx.env->errors.count;
    assert_true(fm_handle_is_null(fm_event_subscribe(fx.ev, fx.cl[2])));
    expect_error(fx.env, errors, FM_ERR_POOL_FULL);
    assert_int_equal(fm_event_count(fx.ev), 0);
    /* No reference was kept by the refused subscribes: the test's is the last. */
    fx.held[2] = false;
    assert_true(fm_closure_release(fx.cl[2]));
    fixture_finish(&fx);
}

static void test_event_unsubscribe_with_another_events_handle_is_stale(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fm_event *other = fm_event_create(
        &(fm_event_desc){.name = "other", .allocator = fm_test_allocator_get(&fx.env->alloc)});
    assert_non_null(other);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fixture_add(&fx, 1, ACT_NONE, 0);
    fixture_make(&fx, 2, ACT_NONE, 0);
    fm_handle theirs = fm_event_subscribe(other, fx.cl[2]);
    assert_false(fm_handle_is_null(theirs));
    /* "false + FM_ERR_STALE_HANDLE for an unknown ... subscription": the
     * other event's subscription is unknown to this one. */
    int errors = fx.env->errors.count;
    bool removed = fm_event_unsubscribe(fx.ev, theirs);
    if (removed) print_error("another event's handle removed a subscriber of this event\n");
    assert_false(removed);
    expect_error(fx.env, errors, FM_ERR_STALE_HANDLE);
    assert_int_equal(fm_event_count(fx.ev), 2);
    assert_true(fm_event_unsubscribe(other, theirs));
    fm_event_destroy(other);
    fixture_finish(&fx);
}

/* ============================================================== references */

static void test_event_keeps_its_own_reference_to_each_closure(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    /* fixture_add drops the test's reference right after subscribing. */
    for (int i = 0; i < 3; i++) fixture_add(&fx, i, ACT_NONE, 0);
    assert_int_equal(cstats(fx.cp).live, 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    /* Unsubscribing drops the event's reference: the closure is gone. */
    assert_true(fm_event_unsubscribe(fx.ev, fx.sub[1]));
    assert_int_equal(cstats(fx.cp).live, 2);
    /* A closure the test still holds survives its unsubscribe. */
    fixture_make(&fx, 3, ACT_NONE, 0);
    fm_handle h = fm_event_subscribe(fx.ev, fx.cl[3]);
    assert_int_equal(cstats(fx.cp).live, 3);
    assert_true(fm_event_unsubscribe(fx.ev, h));
    assert_int_equal(cstats(fx.cp).live, 3);
    fm_closure_call(fx.cl[3], NULL);
    assert_true(fm_closure_release(fx.cl[3]));
    fx.held[3] = false;
    assert_int_equal(cstats(fx.cp).live, 2);
    /* Destroy releases the rest. */
    fm_event_destroy(fx.ev);
    fx.ev = NULL;
    assert_int_equal(cstats(fx.cp).live, 0);
    fm_event_destroy(NULL); /* no-op */
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

/* ====================================================== mutation during emit */

static void test_event_callback_unsubscribing_itself_is_not_called_again(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fixture_add(&fx, 1, ACT_UNSUB_SELF, 0);
    fixture_add(&fx, 2, ACT_NONE, 0);
    fixture_add(&fx, 3, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2, 3);
    assert_int_equal(fx.count_seen, 3); /* removal takes effect at once */
    assert_int_equal(fm_event_count(fx.ev), 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 2, 3);
    assert_int_equal(cstats(fx.cp).live, 3);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_unsubscribing_a_later_subscriber_skips_it_in_the_same_emit(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_UNSUB_TARGET, 2);
    fixture_add(&fx, 1, ACT_NONE, 0);
    fixture_add(&fx, 2, ACT_NONE, 0);
    fixture_add(&fx, 3, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 3);
    assert_int_equal(fm_event_count(fx.ev), 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 3);
    assert_int_equal(cstats(fx.cp).live, 3);
    int errors = fx.env->errors.count;
    assert_false(fm_event_unsubscribe(fx.ev, fx.sub[2]));
    expect_error(fx.env, errors, FM_ERR_STALE_HANDLE);
    fixture_finish(&fx);
}

static void test_event_unsubscribing_an_earlier_subscriber_keeps_the_rest_of_the_emit(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fixture_add(&fx, 1, ACT_NONE, 0);
    fixture_add(&fx, 2, ACT_UNSUB_TARGET, 0);
    fixture_add(&fx, 3, ACT_UNSUB_TARGET, 1);
    fixture_add(&fx, 4, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2, 3, 4);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 2, 3, 4);
    assert_int_equal(fm_event_count(fx.ev), 3);
    assert_int_equal(cstats(fx.cp).live, 3);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_subscribing_during_emit_waits_for_the_next_emit(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_SUBSCRIBE_TARGET, 5);
    fixture_add(&fx, 1, ACT_NONE, 0);
    fixture_make(&fx, 5, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1);
    assert_int_equal(fx.count_seen, 3);
    assert_int_equal(fm_event_count(fx.ev), 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 5);
    /* The event took its own reference. */
    assert_false(fm_closure_release(fx.cl[5]));
    fx.held[5] = false;
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 5);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_many_subscribes_during_emit_move_no_subscriber_out_of_turn(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    /* Each of the first 8 subscribes 8 more during the emit: the array must
     * grow under the running emit. */
    for (int i = 0; i < 8; i++) fixture_add(&fx, i, ACT_NONE, 0);
    for (int i = 8; i < 72; i++) fixture_make(&fx, i, ACT_NONE, 0);
    for (int i = 0; i < 8; i++) {
        script *s = fm_closure_capture(fx.cl[i]);
        s->act = ACT_SUBSCRIBE_TARGET;
        s->target = 8 + i * 8;
    }
    /* Only one target per closure via the script; the rest by hand below. */
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2, 3, 4, 5, 6, 7);
    for (int i = 8; i < 72; i++) {
        if ((i - 8) % 8 == 0) continue;
        fx.sub[i] = fm_event_subscribe(fx.ev, fx.cl[i]);
    }
    for (int i = 8; i < 72; i++) {
        assert_false(fm_closure_release(fx.cl[i]));
        fx.held[i] = false;
    }
    fixture_emit(&fx, NULL);
    assert_int_equal(fx.calls, 72);
    for (int i = 0; i < 8; i++) assert_int_equal(fx.order[i], i);
    for (int i = 0; i < 8; i++) assert_int_equal(fx.order[8 + i], 8 + i * 8);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_subscribe_then_unsubscribe_during_one_emit_never_calls_it(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_SUBSCRIBE_TARGET, 5);
    fixture_add(&fx, 1, ACT_UNSUB_TARGET, 5);
    fixture_make(&fx, 5, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1);
    assert_int_equal(fm_event_count(fx.ev), 2);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1);
    /* The event's reference went with the unsubscribe. */
    assert_true(fm_closure_release(fx.cl[5]));
    fx.held[5] = false;
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_callback_may_drop_the_last_outside_reference_to_itself(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_NONE, 0);
    /* 1 keeps the test's reference, then in its call unsubscribes itself and
     * drops that reference; its capture must outlive the call. */
    fixture_make(&fx, 1, ACT_UNSUB_SELF_RELEASE, 0);
    fx.sub[1] = fm_event_subscribe(fx.ev, fx.cl[1]);
    fixture_add(&fx, 2, ACT_NONE, 0);
    assert_int_equal(cstats(fx.cp).live, 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    assert_false(fx.held[1]);
    assert_int_equal(cstats(fx.cp).live, 2); /* freed once the emit ended */
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 2);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_callback_releasing_other_closures_keeps_them_subscribed(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_RELEASE_TARGET, 2);
    fixture_add(&fx, 1, ACT_NONE, 0);
    fixture_make(&fx, 2, ACT_NONE, 0);
    fx.sub[2] = fm_event_subscribe(fx.ev, fx.cl[2]);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    assert_int_equal(cstats(fx.cp).live, 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    assert_true(fm_event_unsubscribe(fx.ev, fx.sub[2]));
    assert_int_equal(cstats(fx.cp).live, 2);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_unsubscribing_everyone_during_emit_empties_the_event(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fixture_add(&fx, 1, ACT_UNSUB_ALL, 0);
    fixture_add(&fx, 2, ACT_NONE, 0);
    fixture_add(&fx, 3, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1);
    assert_int_equal(fx.count_seen, 0);
    assert_int_equal(fm_event_count(fx.ev), 0);
    assert_int_equal(cstats(fx.cp).live, 0);
    fixture_emit(&fx, NULL);
    assert_int_equal(fx.calls, 0);
    /* Still usable. */
    fixture_add(&fx, 4, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 4);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

/* closure.h does not forbid emitting an event from one of its own
 * callbacks; each emit calls the subscribers it finds. */
static void test_event_nested_emit_calls_every_subscriber_again(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fixture_add(&fx, 1, ACT_EMIT_NESTED, 0);
    fixture_add(&fx, 2, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 0, 1, 2, 2);
    assert_null(fx.last_arg); /* the outer emit's arg for its last call */
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_unsubscribe_inside_a_nested_emit_holds_for_the_outer_one(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_EMIT_NESTED, 0);
    fixture_add(&fx, 1, ACT_UNSUB_TARGET, 3); /* runs inside the nested emit */
    fixture_add(&fx, 2, ACT_NONE, 0);
    fixture_add(&fx, 3, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    /* outer 0 -> nested 0 1 2 (3 gone) -> outer 1 2 (3 gone) */
    ASSERT_ORDER(&fx, 0, 0, 1, 2, 1, 2);
    assert_int_equal(fm_event_count(fx.ev), 3);
    assert_int_equal(cstats(fx.cp).live, 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_event_destroy_during_emit_is_reported_and_destroys_nothing(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_add(&fx, 0, ACT_NONE, 0);
    fixture_add(&fx, 1, ACT_DESTROY_EVENT, 0);
    fixture_add(&fx, 2, ACT_NONE, 0);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    assert_int_equal(fx.errors_seen, 0); /* of the last call (2) */
    assert_int_equal(fx.env->errors.count, 1);
    assert_int_equal(fx.env->errors.last, FM_ERR_INVALID_ARG);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_true(fm_test_contains(fx.env->errors.message, "on_hit"));
    assert_int_equal(fm_event_count(fx.ev), 3);
    assert_int_equal(cstats(fx.cp).live, 3);
    fixture_emit(&fx, NULL);
    ASSERT_ORDER(&fx, 0, 1, 2);
    fixture_finish(&fx);
}

/* =========================================================== event faults */

static void test_event_create_rejects_bad_descs_and_fails_cleanly_under_faults(void **state) {
    fm_test_env *env = *state;
    fm_allocator counting = fm_test_allocator_get(&env->alloc);
    const fm_event_desc bad[] = {
        {.name = "lockfree_event", .sync = FM_SYNC_LOCKFREE, .allocator = counting},
        {.name = "cache_event", .sync = FM_SYNC_THREAD_CACHE, .allocator = counting},
        {.name = "unknown_sync_event", .sync = FM_SYNC_COUNT, .allocator = counting},
        {.name = "half_allocator_event", .allocator = {.alloc = counting.alloc}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int errors = env->errors.count;
        assert_null(fm_event_create(&bad[i]));
        expect_error(env, errors, FM_ERR_INVALID_ARG);
        assert_true(fm_test_contains(env->errors.message, bad[i].name));
    }
    assert_int_equal(env->alloc.alloc_calls, 0);

    for (int mode = 0; mode < 2; mode++) {
        bool created = false;
        for (uint64_t n = 1; n <= 100 && !created; n++) {
            fm_test_errors_reset(&env->errors);
            fm_clear_error();
            if (mode) fm_test_allocator_fail_from(&env->alloc, n);
            else fm_test_allocator_fail_nth(&env->alloc, n);
            fm_event *ev = fm_event_create(
                &(fm_event_desc){.name = "faulty_event", .initial_capacity = 100,
                                 .allocator = counting});
            uint64_t failed = env->alloc.failed_calls;
            fm_test_allocator_recover(&env->alloc);
            env->alloc.failed_calls = 0;
            if (ev) {
                created = true;
                assert_int_equal(failed, 0);
                assert_int_equal(env->errors.count, 0);
                fm_event_destroy(ev);
            } else {
                assert_true(failed > 0);
                assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
                assert_int_equal(env->errors.count, 1);
                assert_true(fm_test_contains(env->errors.message, "faulty_event"));
            }
            fm_test_allocator_assert_clean(&env->alloc);
        }
        assert_true(created);
    }
}

static void test_event_subscribe_fails_with_oom_when_it_cannot_grow(void **state) {
    fm_test_env *env = *state;
    fixture fx;
    fixture_init(&fx, env);
    fm_event_destroy(fx.ev);
    fx.ev = fm_event_create(&(fm_event_desc){.name = "small", .initial_capacity = 2,
                                             .allocator = fm_test_allocator_get(&env->alloc)});
    assert_non_null(fx.ev);
    fixture_add(&fx, 0, ACT_NONE, 0); /* the closures' count storage is had */
    /* Subscribe until the event has to grow: with the allocator refusing,
     * that subscribe fails and changes nothing. */
    fm_test_allocator_fail_from(&env->alloc, 1);
    int n = 1;
    for (;; n++) {
        assert_true(n < MAX_SUBS - 1);
        fixture_make(&fx, n, ACT_NONE, 0);
        int errors = env->errors.count;
        fm_handle h = fm_event_subscribe(fx.ev, fx.cl[n]);
        if (fm_handle_is_null(h)) {
            expect_error(env, errors, FM_ERR_OUT_OF_MEMORY);
            assert_true(fm_test_contains(env->errors.message, "small"));
            break;
        }
        fx.sub[n] = h;
        assert_false(fm_closure_release(fx.cl[n]));
        fx.held[n] = false;
    }
    fm_test_allocator_recover(&env->alloc);
    assert_true(env->alloc.failed_calls > 0);
    assert_true(n >= 2); /* initial_capacity subscribers fit without growing */
    assert_int_equal(fm_event_count(fx.ev), (uint32_t)n);
    fixture_emit(&fx, NULL);
    assert_int_equal(fx.calls, n);
    for (int i = 0; i < n; i++) assert_int_equal(fx.order[i], i);
    /* After recovery it grows. */
    fx.sub[n] = fm_event_subscribe(fx.ev, fx.cl[n]);
    assert_false(fm_handle_is_null(fx.sub[n]));
    fixture_emit(&fx, NULL);
    assert_int_equal(fx.calls, n + 1);
    assert_int_equal(fx.order[n], n);
    fixture_finish(&fx);
}

static void test_event_subscribe_keeps_a_reference_even_when_count_storage_is_refused(
    void **state) {
    fm_test_env *env = *state;
    fixture fx;
    fixture_init(&fx, env);
    /* First closure of its class chunk: the event's retain is the chunk's
     * first, and needs count storage from the allocator. */
    fixture_make(&fx, 0, ACT_NONE, 0);
    fm_test_allocator_fail_nth(&env->alloc, 1);
    fm_clear_error();
    fm_handle h = fm_event_subscribe(fx.ev, fx.cl[0]);
    fm_test_allocator_recover(&env->alloc);
    if (fm_handle_is_null(h)) {
        /* Refused as a whole: OOM, nothing subscribed, the count untouched. */
        assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
        assert_int_equal(fm_event_count(fx.ev), 0);
        assert_true(fm_closure_release(fx.cl[0]));
        fx.held[0] = false;
    } else {
        /* Subscribed: then the event holds a reference of its own, and the
         * caller's release must not free the closure. */
        bool freed = fm_closure_release(fx.cl[0]);
        fx.held[0] = false;
        if (freed) {
            print_error("fm_event_subscribe returned a handle (last error %s) but did not "
                        "retain the closure: the caller's release freed it\n",
                        fm_error_name(fm_last_error()));
        }
        assert_false(freed);
        fixture_emit(&fx, NULL);
        ASSERT_ORDER(&fx, 0);
    }
    fixture_finish(&fx);
}

/* ========================================================== deferred calls */

static void test_defer_with_delay_zero_runs_at_the_next_run(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_make(&fx, 0, ACT_NONE, 0);
    assert_true(fm_defer(fx.q, fx.cl[0], 0));
    assert_int_equal(fm_defer_pending(fx.q), 1);
    assert_int_equal(fx.calls, 0); /* not called by fm_defer */
    assert_int_equal(fm_defer_run(fx.q), 1);
    ASSERT_ORDER(&fx, 0);
    assert_null(fx.last_arg); /* arg NULL */
    assert_int_equal(fm_defer_pending(fx.q), 0);
    assert_int_equal(fm_defer_run(fx.q), 0);
    assert_int_equal(fx.calls, 1);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

/* A run from inside a deferred call is refused: the outer run goes on. */
static void test_defer_run_from_inside_a_run_is_refused(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_make(&fx, 0, ACT_DEFER_RUN_NESTED, 0);
    fixture_make(&fx, 1, ACT_NONE, 0);
    assert_true(fm_defer(fx.q, fx.cl[0], 0));
    assert_true(fm_defer(fx.q, fx.cl[1], 0));
    int errors = fx.env->errors.count;
    assert_int_equal(fm_defer_run(fx.q), 2);
    ASSERT_ORDER(&fx, 0, 1);
    assert_int_equal(fx.env->errors.count, errors + 1);
    assert_int_equal(fm_defer_pending(fx.q), 0);
    fixture_finish(&fx);
}

static void test_defer_with_delay_two_runs_at_the_third_run(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_make(&fx, 0, ACT_NONE, 0);
    fm_defer_run(fx.q); /* the queue's frame count is not at zero */
    assert_true(fm_defer(fx.q, fx.cl[0], 2));
    assert_int_equal(fm_defer_run(fx.q), 0);
    assert_int_equal(fm_defer_run(fx.q), 0);
    assert_int_equal(fx.calls, 0);
    assert_int_equal(fm_defer_pending(fx.q), 1);
    assert_int_equal(fm_defer_run(fx.q), 1);
    ASSERT_ORDER(&fx, 0);
    assert_int_equal(fm_defer_pending(fx.q), 0);
    fixture_finish(&fx);
}

static void test_defer_runs_in_the_order_deferred_including_ties(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    const uint32_t delay[] = {1, 0, 1, 0, 2, 0, 1, 2};
    for (int i = 0; i < 8; i++) {
        fixture_make(&fx, i, ACT_NONE, 0);
        assert_true(fm_defer(fx.q, fx.cl[i], delay[i]));
    }
    assert_int_equal(fm_defer_pending(fx.q), 8);
    assert_int_equal(fm_defer_run(fx.q), 3);
    ASSERT_ORDER(&fx, 1, 3, 5);
    assert_int_equal(fm_defer_pending(fx.q), 5);
    fx.calls = 0;
    assert_int_equal(fm_defer_run(fx.q), 3);
    ASSERT_ORDER(&fx, 0, 2, 6);
    fx.calls = 0;
    assert_int_equal(fm_defer_run(fx.q), 2);
    ASSERT_ORDER(&fx, 4, 7);
    assert_int_equal(fm_defer_pending(fx.q), 0);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_defer_of_one_closure_several_times_runs_it_each_time(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_make(&fx, 0, ACT_NONE, 0);
    fixture_make(&fx, 1, ACT_NONE, 0);
    assert_true(fm_defer(fx.q, fx.cl[0], 0));
    assert_true(fm_defer(fx.q, fx.cl[1], 0));
    assert_true(fm_defer(fx.q, fx.cl[0], 0));
    assert_true(fm_defer(fx.q, fx.cl[0], 1));
    /* The queue holds a reference per entry. */
    assert_false(fm_closure_release(fx.cl[0]));
    fx.held[0] = false;
    assert_int_equal(fm_defer_run(fx.q), 3);
    ASSERT_ORDER(&fx, 0, 1, 0);
    assert_int_equal(cstats(fx.cp).live, 2);
    fx.calls = 0;
    assert_int_equal(fm_defer_run(fx.q), 1);
    ASSERT_ORDER(&fx, 0);
    assert_int_equal(cstats(fx.cp).live, 1); /* released after its last run */
    fixture_finish(&fx);
}

static void test_defer_queue_keeps_closures_alive_until_they_run(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    for (int i = 0; i < 4; i++) {
        fixture_make(&fx, i, ACT_NONE, 0);
        assert_true(fm_defer(fx.q, fx.cl[i], (uint32_t)i));
        assert_false(fm_closure_release(fx.cl[i]));
        fx.held[i] = false;
    }
    assert_int_equal(cstats(fx.cp).live, 4);
    for (int run = 0; run < 4; run++) {
        assert_int_equal(fm_defer_run(fx.q), 1);
        assert_int_equal(fx.order[run], run);
        assert_int_equal(cstats(fx.cp).live, (uint64_t)(3 - run));
    }
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_defer_from_a_running_callback_waits_for_a_later_run(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fixture_make(&fx, 0, ACT_DEFER_TARGET, 1);
    fixture_make(&fx, 1, ACT_DEFER_TARGET, 2);
    fixture_make(&fx, 2, ACT_NONE, 0);
    fixture_make(&fx, 3, ACT_NONE, 0);
    assert_true(fm_defer(fx.q, fx.cl[0], 0));
    assert_true(fm_defer(fx.q, fx.cl[3], 0));
    assert_int_equal(fm_defer_run(fx.q), 2); /* 0 defers 1: not in this run */
    ASSERT_ORDER(&fx, 0, 3);
    assert_int_equal(fm_defer_pending(fx.q), 1);
    fx.calls = 0;
    assert_int_equal(fm_defer_run(fx.q), 1); /* 1 defers 2 */
    ASSERT_ORDER(&fx, 1);
    fx.calls = 0;
    assert_int_equal(fm_defer_run(fx.q), 1);
    ASSERT_ORDER(&fx, 2);
    assert_int_equal(fm_defer_pending(fx.q), 0);
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_defer_many_entries_grow_the_queue_and_run_when_due(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    enum { N = 150 };
    int due_count[8] = {0};
    for (int i = 0; i < N; i++) {
        fixture_make(&fx, i, ACT_NONE, 0);
        uint32_t d = (uint32_t)(i * 7 % 8);
        due_count[d]++;
        assert_true(fm_defer(fx.q, fx.cl[i], d));
        assert_false(fm_closure_release(fx.cl[i]));
        fx.held[i] = false;
    }
    assert_int_equal(fm_defer_pending(fx.q), N);
    int left = N;
    for (uint32_t d = 0; d < 8; d++) {
        fx.calls = 0;
        assert_int_equal(fm_defer_run(fx.q), (uint32_t)due_count[d]);
        left -= due_count[d];
        assert_int_equal(fm_defer_pending(fx.q), (uint32_t)left);
        int prev = -1;
        for (int k = 0; k < fx.calls; k++) {
            assert_int_equal((uint32_t)(fx.order[k] * 7 % 8), d);
            assert_true(fx.order[k] > prev); /* order deferred */
            prev = fx.order[k];
        }
    }
    assert_int_equal(cstats(fx.cp).live, 0);
    fixture_finish(&fx);
}

static void test_defer_queue_destroy_releases_waiting_closures_without_calling_them(
    void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    for (int i = 0; i < 5; i++) {
        fixture_make(&fx, i, ACT_NONE, 0);
        assert_true(fm_defer(fx.q, fx.cl[i], (uint32_t)i + 10));
        assert_false(fm_closure_release(fx.cl[i]));
        fx.held[i] = false;
    }
    fixture_make(&fx, 5, ACT_NONE, 0); /* the test keeps this one */
    assert_true(fm_defer(fx.q, fx.cl[5], UINT32_MAX));
    assert_int_equal(fm_defer_run(fx.q), 0);
    assert_int_equal(cstats(fx.cp).live, 6);
    fm_defer_queue_destroy(fx.q);
    fx.q = NULL;
    assert_int_equal(fx.calls, 0);
    assert_int_equal(cstats(fx.cp).live, 1);
    fm_closure_call(fx.cl[5], NULL); /* the test's reference still works */
    assert_int_equal(fx.calls, 1);
    fm_defer_queue_destroy(NULL); /* no-op */
    assert_int_equal(fx.env->errors.count, 0);
    fixture_finish(&fx);
}

static void test_defer_of_null_closure_is_invalid_arg(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    int errors = fx.env->errors.count;
    assert_false(fm_defer(fx.q, NULL, 0));
    expect_error(fx.env, errors, FM_ERR_INVALID_ARG);
    assert_true(fm_test_contains(fx.env->errors.message, "later"));
    assert_int_equal(fm_defer_pending(fx.q), 0);
    assert_int_equal(fm_defer_run(fx.q), 0);
    fixture_finish(&fx);
}

static void test_defer_frame_closures_run_too(void **state) {
    fixture fx;
    fixture_init(&fx, *state);
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.frames = 3});
    assert_non_null(fa);
    fm_closure *fr = fm_closure_make_frame(
        fa, scripted, &(script){.fx = &fx, .tag = 9, .magic = SCRIPT_MAGIC}, sizeof(script));
    assert_non_null(fr);
    assert_true(fm_defer(fx.q, fr, 1));
    assert_int_equal(fm_defer_run(fx.q), 0);
    assert_int_equal(fm_defer_run(fx.q), 1);
    ASSERT_ORDER(&fx, 9);
    assert_int_equal(fx.env->errors.count, 0);
    fm_frame_arena_destroy(fa);
    fixture_finish(&fx);
}

static void test_defer_queue_create_fails_cleanly_under_faults(void **state) {
    fm_test_env *env = *state;
    fm_allocator counting = fm_test_allocator_get(&env->alloc);
    int errors = env->errors.count;
    assert_null(fm_defer_queue_create(NULL));
    expect_error(env, errors, FM_ERR_INVALID_ARG);
    for (int mode = 0; mode < 2; mode++) {
        bool created = false;
        for (uint64_t n = 1; n <= 100 && !created; n++) {
            fm_test_errors_reset(&env->errors);
            fm_clear_error();
            if (mode) fm_test_allocator_fail_from(&env->alloc, n);
            else fm_test_allocator_fail_nth(&env->alloc, n);
            fm_defer_queue *q = fm_defer_queue_create(
                &(fm_defer_queue_desc){.name = "faulty_queue", .allocator = counting});
            uint64_t failed = env->alloc.failed_calls;
            fm_test_allocator_recover(&env->alloc);
            env->alloc.failed_calls = 0;
            if (q) {
                created = true;
                assert_int_equal(failed, 0);
                assert_int_equal(env->errors.count, 0);
                assert_int_equal(fm_defer_pending(q), 0);
                fm_defer_queue_destroy(q);
            } else {
                assert_true(failed > 0);
                assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
                assert_int_equal(env->errors.count, 1);
                assert_true(fm_test_contains(env->errors.message, "faulty_queue"));
            }
            fm_test_allocator_assert_clean(&env->alloc);
        }
        assert_true(created);
    }
}

static void test_defer_fails_with_oom_when_the_queue_cannot_grow(void **state) {
    fm_test_env *env = *state;
    fixture fx;
    fixture_init(&fx, env);
    fm_defer_queue_destroy(fx.q);
    fx.q = fm_defer_queue_create(&(fm_defer_queue_desc){
        .name = "tiny", .initial_capacity = 2, .allocator = fm_test_allocator_get(&env->alloc)});
    assert_non_null(fx.q);
    fixture_make(&fx, 0, ACT_NONE, 0);
    assert_true(fm_defer(fx.q, fx.cl[0], 0)); /* the closures' count storage is had */
    /* Defer until the queue has to grow: with the allocator refusing, that
     * defer fails and changes nothing. */
    fm_test_allocator_fail_from(&env->alloc, 1);
    int n = 1;
    for (;; n++) {
        assert_true(n < MAX_SUBS - 1);
        fixture_make(&fx, n, ACT_NONE, 0);
        int errors = env->errors.count;
        if (!fm_defer(fx.q, fx.cl[n], 0)) {
            expect_error(env, errors, FM_ERR_OUT_OF_MEMORY);
            assert_true(fm_test_contains(env->errors.message, "tiny"));
            break;
        }
    }
    fm_test_allocator_recover(&env->alloc);
    assert_true(env->alloc.failed_calls > 0);
    assert_true(n >= 2); /* initial_capacity entries fit without growing */
    assert_int_equal(fm_defer_pending(fx.q), (uint32_t)n);
    /* Not retained by the failed defer: one release frees it. */
    assert_true(fm_closure_release(fx.cl[n]));
    fx.held[n] = false;
    assert_int_equal(fm_defer_run(fx.q), (uint32_t)n);
    assert_int_equal(fx.calls, n);
    for (int i = 0; i < n; i++) assert_int_equal(fx.order[i], i);
    /* After recovery it grows. */
    fixture_make(&fx, n + 1, ACT_NONE, 0);
    for (int i = 0; i < n + 5; i++) assert_true(fm_defer(fx.q, fx.cl[n + 1], 0));
    fx.calls = 0;
    assert_int_equal(fm_defer_run(fx.q), (uint32_t)(n + 5));
    fixture_finish(&fx);
}

static void test_defer_keeps_a_reference_even_when_count_storage_is_refused(void **state) {
    fm_test_env *env = *state;
    fixture fx;
    fixture_init(&fx, env);
    /* First closure of its class chunk: the queue's retain is the chunk's
     * first, and needs count storage from the allocator. */
    fixture_make(&fx, 0, ACT_NONE, 0);
    fm_test_allocator_fail_nth(&env->alloc, 1);
    fm_clear_error();
    bool ok = fm_defer(fx.q, fx.cl[0], 0);
    fm_test_allocator_recover(&env->alloc);
    if (!ok) {
        /* Refused as a whole: OOM, nothing queued, the count untouched. */
        assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
        assert_int_equal(fm_defer_pending(fx.q), 0);
        assert_true(fm_closure_release(fx.cl[0]));
        fx.held[0] = false;
    } else {
        /* Queued: then the queue holds a reference of its own, and the
         * caller's release must not free the closure. */
        bool freed = fm_closure_release(fx.cl[0]);
        fx.held[0] = false;
        if (freed) {
            print_error("fm_defer returned true (last error %s) but did not retain the "
                        "closure: the caller's release freed it\n",
                        fm_error_name(fm_last_error()));
        }
        assert_false(freed);
        assert_int_equal(fm_defer_run(fx.q), 1);
        ASSERT_ORDER(&fx, 0);
    }
    fixture_finish(&fx);
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_event_subscribe_returns_distinct_handles_and_count_tracks_them),
        T(test_event_emit_calls_subscribers_in_subscription_order_with_the_arg),
        T(test_event_same_closure_subscribed_twice_is_called_twice),
        T(test_event_grows_past_its_initial_capacity_and_keeps_order),
        T(test_event_subscribe_of_null_closure_is_invalid_arg),
        T(test_event_frame_closures_can_subscribe),
        T(test_event_unsubscribe_returns_true_once_then_false_with_stale_handle),
        T(test_event_unsubscribe_of_null_or_garbage_handle_is_stale),
        T(test_event_unsubscribe_with_another_events_handle_is_stale),
        T(test_event_stale_handle_after_generation_wrap_is_stale_and_new_subscriber_stays),
        T(test_event_subscribe_with_every_slot_retired_or_in_use_is_pool_full),
        T(test_event_keeps_its_own_reference_to_each_closure),
        T(test_event_callback_unsubscribing_itself_is_not_called_again),
        T(test_event_unsubscribing_a_later_subscriber_skips_it_in_the_same_emit),
        T(test_event_unsubscribing_an_earlier_subscriber_keeps_the_rest_of_the_emit),
        T(test_event_subscribing_during_emit_waits_for_the_next_emit),
        T(test_event_many_subscribes_during_emit_move_no_subscriber_out_of_turn),
        T(test_event_subscribe_then_unsubscribe_during_one_emit_never_calls_it),
        T(test_event_callback_may_drop_the_last_outside_reference_to_itself),
        T(test_event_callback_releasing_other_closures_keeps_them_subscribed),
        T(test_event_unsubscribing_everyone_during_emit_empties_the_event),
        T(test_event_nested_emit_calls_every_subscriber_again),
        T(test_event_unsubscribe_inside_a_nested_emit_holds_for_the_outer_one),
        T(test_event_destroy_during_emit_is_reported_and_destroys_nothing),
        T(test_event_create_rejects_bad_descs_and_fails_cleanly_under_faults),
        T(test_event_subscribe_fails_with_oom_when_it_cannot_grow),
        T(test_event_subscribe_keeps_a_reference_even_when_count_storage_is_refused),
        T(test_defer_with_delay_zero_runs_at_the_next_run),
        T(test_defer_run_from_inside_a_run_is_refused),
        T(test_defer_with_delay_two_runs_at_the_third_run),
        T(test_defer_runs_in_the_order_deferred_including_ties),
        T(test_defer_of_one_closure_several_times_runs_it_each_time),
        T(test_defer_queue_keeps_closures_alive_until_they_run),
        T(test_defer_from_a_running_callback_waits_for_a_later_run),
        T(test_defer_many_entries_grow_the_queue_and_run_when_due),
        T(test_defer_queue_destroy_releases_waiting_closures_without_calling_them),
        T(test_defer_of_null_closure_is_invalid_arg),
        T(test_defer_frame_closures_run_too),
        T(test_defer_queue_create_fails_cleanly_under_faults),
        T(test_defer_fails_with_oom_when_the_queue_cannot_grow),
        T(test_defer_keeps_a_reference_even_when_count_storage_is_refused),
#undef T
    };
    return cmocka_run_group_tests_name("event", tests, NULL, NULL);
}
