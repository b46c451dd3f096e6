/*
 * tests/memory/test_hooks.c: the profiler hooks (framemem/hooks.h).
 *
 * Built twice (tests/CMakeLists.txt): test_hooks against framemem_hooks, the
 * library built with FM_HOOKS, and test_hooks_unsupported against the
 * configuration's framemem, built without it, where fm_set_hooks refuses.
 *
 * With hooks, a recording hook keeps the first events and checks every one
 * as it comes the way Tracy does: no alloc of an address that is live, no
 * free of one that is not (or is another object's), and a reset drops the
 * object's live addresses. Events are appended under one lock, so their
 * order is the order in which the threads sent them; each thread's own
 * events are in its program order.
 */
#define _POSIX_C_SOURCE 200809L
#include "fm_test.h"
#include "fm_test_thread.h"

#include "framemem/framemem.h"
#include "framemem/hooks.h"
#include "framemem/telemetry.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_HOOKS
#include "fm_tracy.h"
#include "hooks_inline_caller.h"
#include "tracy/TracyC.h"

/* ================================================================ recorder */

typedef enum ev_kind { EV_ALLOC, EV_FREE, EV_RESET, EV_GROW, EV_FRAME_END, EV_KINDS } ev_kind;

typedef struct rec_event {
    ev_kind kind;
    const char *name;
    const void *ptr;
    size_t size; /* alloc: size; grow: bytes */
} rec_event;

enum { REC_KEEP = 4096, LIVE_CAP = 1 << 16 };

typedef struct recorder {
    fm_test_mutex lock;
    rec_event ev[REC_KEEP]; /* the first REC_KEEP events */
    size_t n, total;
    size_t by_kind[EV_KINDS];
    /* Tracy's rule: the live allocations, by address (linear probing). */
    const void *live_ptr[LIVE_CAP];
    const char *live_name[LIVE_CAP];
    size_t live;
    int violations;
    char first_violation[256];
} recorder;

static recorder rec;

static size_t live_home(const void *p) {
    return (size_t)(((uint64_t)(uintptr_t)p >> 3) * 0x9E3779B97F4A7C15ull >> 48) & (LIVE_CAP - 1);
}

static size_t live_find(const void *p) {
    for (size_t i = live_home(p);; i = (i + 1) & (LIVE_CAP - 1)) {
        if (!rec.live_ptr[i]) return LIVE_CAP;
        if (rec.live_ptr[i] == p) return i;
    }
}

static void live_insert(const void *p, const char *name) {
    size_t i = live_home(p);
    while (rec.live_ptr[i]) i = (i + 1) & (LIVE_CAP - 1);
    rec.live_ptr[i] = p;
    rec.live_name[i] = name;
    rec.live++;
}

/* Deletion by backward shift: later entries of the probe run move up. */
static void live_remove_at(size_t i) {
    size_t j = i;
    for (;;) {
        j = (j + 1) & (LIVE_CAP - 1);
        if (!rec.live_ptr[j]) break;
        size_t k = live_home(rec.live_ptr[j]);
        bool movable = i <= j ? (k <= i || k > j) : (k <= i && k > j);
        if (movable) {
            rec.live_ptr[i] = rec.live_ptr[j];
            rec.live_name[i] = rec.live_name[j];
            i = j;
        }
    }
    rec.live_ptr[i] = NULL;
    rec.live_name[i] = NULL;
    rec.live--;
}

static size_t live_of(const char *name) {
    size_t n = 0;
    for (size_t i = 0; i < LIVE_CAP; i++) n += rec.live_ptr[i] && rec.live_name[i] == name;
    return n;
}

static void violation(const char *fmt, const void *p, const char *name) {
    if (rec.violations++ == 0)
        snprintf(rec.first_violation, sizeof rec.first_violation, fmt, p, name ? name : "?");
}

static void record(ev_kind kind, const char *name, const void *ptr, size_t size) {
    fm_test_mutex_lock(&rec.lock);
    if (rec.n < REC_KEEP) rec.ev[rec.n++] = (rec_event){kind, name, ptr, size};
    rec.total++;
    rec.by_kind[kind]++;
    if (kind == EV_ALLOC) {
        if (live_find(ptr) != LIVE_CAP) violation("alloc of %p (%s), live already", ptr, name);
        else live_insert(ptr, name);
    } else if (kind == EV_FREE) {
        size_t i = live_find(ptr);
        if (i == LIVE_CAP) violation("free of %p (%s), not live", ptr, name);
        else if (rec.live_name[i] != name) violation("free of %p (%s), another object's", ptr, name);
        else live_remove_at(i);
    } else if (kind == EV_RESET) {
        for (size_t i = 0; i < LIVE_CAP;) {
            if (rec.live_ptr[i] && rec.live_name[i] == name) live_remove_at(i); /* i again */
            else i++;
        }
    }
    fm_test_mutex_unlock(&rec.lock);
}

static void on_alloc(const void *ptr, size_t size, const char *name, void *user) {
    assert_ptr_equal(user, &rec);
    record(EV_ALLOC, name, ptr, size);
}
static void on_free(const void *ptr, const char *name, void *user) {
    (void)user;
    record(EV_FREE, name, ptr, 0);
}
static void on_reset(const char *name, void *user) {
    (void)user;
    record(EV_RESET, name, NULL, 0);
}
static void on_grow(size_t bytes, uint64_t ns, const char *name, void *user) {
    (void)user, (void)ns;
    record(EV_GROW, name, NULL, bytes);
}
static void on_frame_end(void *user) {
    (void)user;
    record(EV_FRAME_END, NULL, NULL, 0);
}

static const fm_hooks recording = {
    .alloc = on_alloc,
    .free = on_free,
    .reset = on_reset,
    .grow = on_grow,
    .frame_end = on_frame_end,
    .user = &rec,
};

/* Clears the record (hooks stay as they are). */
static void rec_clear(void) {
    fm_test_mutex_lock(&rec.lock);
    rec.n = rec.total = 0;
    memset(rec.by_kind, 0, sizeof rec.by_kind);
    memset(rec.live_ptr, 0, sizeof rec.live_ptr);
    memset(rec.live_name, 0, sizeof rec.live_name);
    rec.live = 0;
    rec.violations = 0;
    rec.first_violation[0] = '\0';
    fm_test_mutex_unlock(&rec.lock);
}

static int hooks_setup(void **state) {
    int rc = fm_test_setup(state);
    static bool lock_made;
    if (!lock_made) fm_test_mutex_init(&rec.lock);
    lock_made = true;
    rec_clear();
    if (!fm_set_hooks(&recording)) return -1;
    return rc;
}

static int hooks_teardown(void **state) {
    fm_set_hooks(NULL);
    return fm_test_teardown(state);
}

static void assert_no_violation(void) {
    if (rec.violations) {
        print_error("%d violation(s) of the event order; first: %s\n", rec.violations,
                    rec.first_violation);
        fail();
    }
}

/* Asserts that events [from, rec.n) are exactly want[0, n) (kind, name and,
 * where set, ptr and size). */
static void assert_events(size_t from, const rec_event *want, size_t n) {
    assert_no_violation();
    if (rec.n - from != n) {
        print_error("%zu events, wanted %zu:\n", rec.n - from, n);
        for (size_t i = from; i < rec.n; i++)
            print_error("  %d %s %p %zu\n", rec.ev[i].kind, rec.ev[i].name ? rec.ev[i].name : "-",
                        rec.ev[i].ptr, rec.ev[i].size);
        fail();
    }
    for (size_t i = 0; i < n; i++) {
        const rec_event *e = &rec.ev[from + i];
        if (e->kind != want[i].kind || e->name != want[i].name ||
            (want[i].ptr && e->ptr != want[i].ptr) || (want[i].size && e->size != want[i].size)) {
            print_error("event %zu: got %d %s %p %zu, wanted %d %s %p %zu\n", i, e->kind,
                        e->name ? e->name : "-", e->ptr, e->size, want[i].kind,
                        want[i].name ? want[i].name : "-", want[i].ptr, want[i].size);
            fail();
        }
    }
}

static const fm_sync all_policies[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                       FM_SYNC_LOCKFREE};

static fm_pool *make_pool(fm_test_env *env, fm_sync sync, size_t item_size) {
    return fm_test_pool_create_counted(
        env, (fm_pool_desc){.name = "hooked", .item_size = item_size, .sync = sync});
}

/* ================================================================== pools */

static void test_hooks_pool_events_follow_alloc_and_free_under_each_policy(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        fm_pool *pool = make_pool(env, all_policies[k], 24);
        const char *name = fm_pool_name(pool);
        size_t from = rec.n;
        void *a = fm_pool_alloc(pool);
        void *b = (fm_pool_alloc)(pool);
        fm_pool_free(pool, a);
        void *c = fm_pool_new(pool);
        (fm_pool_free)(pool, b);
        fm_pool_free(pool, c);
        fm_pool_free(pool, NULL); /* a no-op: no event */
        rec_event want[] = {
            {EV_ALLOC, name, a, 24}, {EV_ALLOC, name, b, 24}, {EV_FREE, name, a, 0},
            {EV_ALLOC, name, c, 24}, {EV_FREE, name, b, 0},   {EV_FREE, name, c, 0},
        };
        assert_events(from, want, 6);
        assert_int_equal(live_of(name), 0);
        fm_test_pool_destroy_clean(env, pool);
    }
}

static void test_hooks_refused_frees_send_no_event(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        fm_pool *pool = make_pool(env, all_policies[k], 32);
        char *a = fm_pool_alloc(pool);
        char *b = fm_pool_alloc(pool);
        fm_pool_free(pool, a);
        size_t from = rec.n;
        int errors = env->errors.count;
        fm_pool_free(pool, a);     /* double free */
        fm_pool_free(pool, &from); /* foreign */
        fm_pool_free(pool, b + 8); /* interior */
        fm_pool_delete(pool, a);   /* dead */
        assert_false(fm_pool_release(pool, a));
        assert_int_equal(env->errors.count, errors + 5);
        assert_int_equal(rec.n, from);
        assert_no_violation();
        fm_pool_free(pool, b);
        fm_test_pool_destroy_clean(env, pool);
    }
}

static void test_hooks_batches_send_one_event_per_item_and_a_repeated_item_once(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        fm_pool *pool = make_pool(env, all_policies[k], 16);
        const char *name = fm_pool_name(pool);
        size_t from = rec.n;
        void *items[9];
        assert_int_equal(fm_pool_alloc_n(pool, items, 8), 8);
        items[8] = items[3]; /* freed twice in one batch: reported once, announced once */
        int errors = env->errors.count;
        fm_pool_free_n(pool, items, 9);
        assert_int_equal(env->errors.count, errors + 1);
        assert_int_equal(env->errors.last, FM_ERR_DOUBLE_FREE);
        rec_event want[16];
        for (int i = 0; i < 8; i++) want[i] = (rec_event){EV_ALLOC, name, items[i], 16};
        for (int i = 0; i < 8; i++) want[8 + i] = (rec_event){EV_FREE, name, items[i], 0};
        assert_events(from, want, 16);
        fm_test_pool_destroy_clean(env, pool);
    }
}

static int dtor_calls;
static void count_dtor(void *item, void *user) {
    (void)item, (void)user;
    dtor_calls++;
    /* The free event must not have gone out yet. */
    assert_int_equal(rec.by_kind[EV_FREE], 0);
}

static void test_hooks_delete_and_last_release_send_free_after_the_dtor(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        dtor_calls = 0;
        fm_pool *pool = fm_test_pool_create_counted(
            env, (fm_pool_desc){.name = "dtors", .item_size = 16, .sync = all_policies[k],
                                .dtor = count_dtor});
        const char *name = fm_pool_name(pool);
        void *a = fm_pool_alloc(pool);
        void *b = fm_pool_alloc(pool);
        size_t from = rec.n;
        fm_pool_delete(pool, a);
        assert_int_equal(dtor_calls, 1);
        rec_event want_delete[] = {{EV_FREE, name, a, 0}};
        assert_events(from, want_delete, 1);
        rec.by_kind[EV_FREE] = 0;
        fm_pool_retain(pool, b);
        assert_false(fm_pool_release(pool, b)); /* count 2 -> 1: still live, no event */
        assert_int_equal(rec.n, from + 1);
        assert_true(fm_pool_release(pool, b));
        assert_int_equal(dtor_calls, 2);
        rec_event want_release[] = {{EV_FREE, name, b, 0}};
        assert_events(from + 1, want_release, 1);
        fm_test_pool_destroy_clean(env, pool);
    }
}

static void test_hooks_growth_is_sent_at_create_and_before_the_alloc_that_needed_it(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        fm_pool *pool = fm_test_pool_create_counted(
            env, (fm_pool_desc){.name = "grows", .item_size = 64, .sync = all_policies[k],
                                .growth = FM_GROWTH_LINEAR});
        const char *name = fm_pool_name(pool);
        fm_pool_stats st = fm_test_pool_stats(pool);
        rec_event at_create[] = {{EV_GROW, name, NULL, st.chunk_bytes}};
        assert_events(0, at_create, 1);
        /* Every slot of the first chunk, then one more: the growth comes
         * before the event of the item that made it. */
        uint64_t n = st.capacity + 1;
        void **items = malloc(n * sizeof *items);
        assert_non_null(items);
        for (uint64_t i = 0; i < n; i++) items[i] = fm_pool_alloc(pool);
        size_t grow_at = SIZE_MAX;
        for (size_t i = 1; i < rec.n; i++)
            if (rec.ev[i].kind == EV_GROW) grow_at = i;
        assert_int_equal(rec.by_kind[EV_GROW], 2);
        assert_int_equal(rec.ev[grow_at].size, st.chunk_bytes);
        /* The create's growth, the first chunk's items, the growth, then
         * the item that needed it (THREAD_CACHE and LOCKFREE too: their
         * caches are refilled only with what the pool has, until the
         * refill that finds nothing grows it). */
        assert_int_equal(grow_at, 1 + st.capacity);
        assert_int_equal(rec.ev[grow_at + 1].kind, EV_ALLOC);
        assert_ptr_equal(rec.ev[grow_at + 1].ptr, items[n - 1]);
        assert_int_equal(rec.by_kind[EV_ALLOC], n);
        for (uint64_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
        free(items);
        assert_no_violation();
        fm_test_pool_destroy_clean(env, pool);
    }
}

static void test_hooks_destroy_sends_reset_and_its_live_items_go(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        fm_pool *pool = fm_test_pool_create_counted(
            env, (fm_pool_desc){.name = "leaky", .item_size = 16, .sync = all_policies[k],
                                .silent_destroy = true});
        const char *name = fm_pool_name(pool);
        for (int i = 0; i < 5; i++) assert_non_null(fm_pool_alloc(pool));
        assert_int_equal(live_of(name), 5);
        size_t from = rec.n;
        fm_pool_destroy(pool);
        rec_event want[] = {{EV_RESET, name, NULL, 0}};
        assert_events(from, want, 1);
        assert_int_equal(live_of(name), 0);
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

/* The four pool events in one stream, under each policy: growth at create
 * and before the alloc that needed it, frees by fm_pool_free and by fm_free
 * (the chunk map), a reset (fm_pool_reset) that drops what is live, then
 * allocations again, which may reuse the addresses the reset freed. */
static void test_hooks_event_order_under_alloc_free_reset_and_growth(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        fm_pool *pool = fm_test_pool_create_counted(
            env, (fm_pool_desc){.name = "level", .item_size = 512, .chunk_bytes = 4096,
                                .sync = all_policies[k], .growth = FM_GROWTH_LINEAR});
        const char *name = fm_pool_name(pool);
        uint64_t per = fm_test_pool_stats(pool).capacity; /* one chunk */
        assert_true(per >= 2 && per <= 8);
        void *items[9];
        rec_event want[32];
        size_t n = 0;
        want[n++] = (rec_event){EV_GROW, name, NULL, 4096};
        for (uint64_t i = 0; i <= per; i++) {
            items[i] = fm_pool_alloc(pool);
            if (i == per) want[n++] = (rec_event){EV_GROW, name, NULL, 4096};
            want[n++] = (rec_event){EV_ALLOC, name, items[i], 512};
        }
        fm_free(items[0]);
        want[n++] = (rec_event){EV_FREE, name, items[0], 0};
        fm_pool_free(pool, items[1]);
        want[n++] = (rec_event){EV_FREE, name, items[1], 0};
        assert_int_equal(live_of(name), per - 1);
        fm_pool_reset(pool);
        want[n++] = (rec_event){EV_RESET, name, NULL, 0};
        assert_int_equal(live_of(name), 0);
        void *again = fm_pool_alloc(pool);
        want[n++] = (rec_event){EV_ALLOC, name, again, 512};
        fm_free(again);
        want[n++] = (rec_event){EV_FREE, name, again, 0};
        assert_events(0, want, n);
        assert_int_equal(fm_test_pool_stats(pool).resets, 1);
        fm_test_pool_destroy_clean(env, pool);
    }
}

static void reset_inside_walk(void *item, void *user) {
    (void)item;
    fm_pool_reset(user); /* refused: the walk is under way */
}

static int reset_dtor_calls;
static void reset_dtor(void *item, void *user) {
    (void)item, (void)user;
    reset_dtor_calls++;
    assert_int_equal(rec.by_kind[EV_RESET], 0); /* not sent yet */
}

/* With a dtor, the reset runs it on each live item first: the reset event
 * follows; a reset the pool refuses (inside a walk) sends nothing. */
static void test_hooks_reset_is_sent_after_the_dtors_and_a_refused_one_sends_nothing(void **state) {
    fm_test_env *env = *state;
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        reset_dtor_calls = 0;
        fm_pool *pool = fm_test_pool_create_counted(
            env, (fm_pool_desc){.name = "dtors", .item_size = 32, .sync = all_policies[k],
                                .dtor = reset_dtor});
        const char *name = fm_pool_name(pool);
        for (int i = 0; i < 5; i++) assert_non_null(fm_pool_alloc(pool));
        size_t from = rec.n;
        fm_pool_reset(pool);
        assert_int_equal(reset_dtor_calls, 5);
        rec_event want[] = {{EV_RESET, name, NULL, 0}};
        assert_events(from, want, 1);
        assert_int_equal(live_of(name), 0);
        fm_test_pool_destroy_clean(env, pool);
    }
    rec_clear();
    fm_pool *pool = make_pool(env, FM_SYNC_NONE, 16);
    void *item = fm_pool_alloc(pool);
    size_t from = rec.n;
    int errors = env->errors.count;
    fm_pool_foreach(pool, reset_inside_walk, pool);
    assert_int_equal(env->errors.count, errors + 1);
    assert_int_equal(rec.n, from); /* no reset event */
    assert_int_equal(live_of(fm_pool_name(pool)), 1);
    fm_pool_free(pool, item);
    fm_test_pool_destroy_clean(env, pool);
}

/* ================================================================= arenas */

static void test_hooks_arena_allocations_commits_resets_and_rewinds(void **state) {
    (void)state;
    for (int chained = 0; chained < 2; chained++) {
        rec_clear();
        fm_test_allocator heap;
        fm_test_allocator_init(&heap);
        fm_arena *arena = fm_arena_create(&(fm_arena_desc){
            .name = "scratch", .commit_step = 4096,
            .allocator = chained ? fm_test_allocator_get(&heap) : (fm_allocator){0}});
        assert_non_null(arena);
        const char *name = fm_arena_name(arena);
        /* Chained: the first block at create; virtual memory commits at the
         * first allocation. */
        assert_int_equal(rec.by_kind[EV_GROW], chained ? 1 : 0);
        size_t from = rec.n;
        void *a = fm_arena_alloc(arena, 100, 0);
        void *z = fm_arena_alloc(arena, 0, 0); /* takes nothing: no event */
        fm_arena_mark m = fm_arena_get_mark(arena);
        void *b = (fm_arena_alloc)(arena, 20000, 64); /* past the first step: a commit or block */
        void *c = fm_arena_alloc_zero(arena, 8, 8);
        assert_true(a && z && b && c);
        fm_arena_rewind(arena, m);
        void *d = fm_arena_alloc_array(arena, 4, 8, 8);
        fm_arena_reset(arena);
        /* Each growth comes right before the allocation that needed it. */
        rec_event want[] = {
            {EV_GROW, name, NULL, 0},   {EV_ALLOC, name, a, 100}, {EV_GROW, name, NULL, 0},
            {EV_ALLOC, name, b, 20000}, {EV_ALLOC, name, c, 8},   {EV_RESET, name, NULL, 0},
            {EV_ALLOC, name, d, 32},   {EV_RESET, name, NULL, 0},
        };
        assert_events(from, want + chained, 8 - (size_t)chained);
        fm_arena_stats st;
        fm_arena_get_stats(arena, &st);
        size_t grown = 0;
        for (size_t i = 0; i < rec.n; i++) grown += rec.ev[i].kind == EV_GROW ? rec.ev[i].size : 0;
        assert_int_equal(grown, st.committed);
        fm_arena_destroy(arena);
        assert_int_equal(rec.ev[rec.n - 1].kind, EV_RESET);
        assert_ptr_equal(rec.ev[rec.n - 1].name, name);
        fm_test_allocator_assert_clean(&heap);
        fm_test_allocator_release(&heap);
    }
}

static void test_hooks_frame_arena_advance_resets_the_arena_coming_round(void **state) {
    (void)state;
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.name = "frame"});
    assert_non_null(fa);
    const char *first = fm_arena_name(fm_frame_arena_current(fa));
    assert_string_equal(first, "frame[0]");
    void *p0 = fm_frame_alloc(fa, 64, 0);
    fm_frame_arena_advance(fa); /* frame 1: arena 1, nothing due yet */
    const char *second = fm_arena_name(fm_frame_arena_current(fa));
    void *p1 = fm_frame_alloc(fa, 64, 0);
    size_t from = rec.n;
    fm_frame_arena_advance(fa); /* frame 2: arena 0 comes round, its memory is due */
    void *p2 = fm_frame_alloc(fa, 64, 0);
    assert_ptr_equal(p2, p0);
    rec_event want[] = {{EV_RESET, first, NULL, 0}, {EV_ALLOC, first, p2, 64}};
    assert_events(from, want, 2);
    assert_int_equal(live_of(second), 1);
    assert_non_null(p1);
    fm_frame_arena_destroy(fa);
    assert_int_equal(live_of(first) + live_of(second), 0);
    assert_no_violation();
}

/* ============================================================ frame end */

static void test_hooks_frame_end_is_sent_when_called(void **state) {
    (void)state;
    fm_hooks_frame_end();
    fm_hooks_frame_end();
    rec_event want[] = {{EV_FRAME_END, NULL, NULL, 0}, {EV_FRAME_END, NULL, NULL, 0}};
    assert_events(0, want, 2);
}

/* fm_telemetry_frame_end sends frame_end as its last step, after the frame's
 * events, grow-ahead's growth among them; every frame end does, a full ring
 * too. */
static void test_hooks_telemetry_frame_end_sends_frame_end_after_the_frames_events(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = fm_test_pool_create_counted(
        env, (fm_pool_desc){.name = "framed", .item_size = 512, .chunk_bytes = 4096,
                            .growth = FM_GROWTH_LINEAR, .grow_ahead = true});
    const char *name = fm_pool_name(pool);
    uint64_t per = fm_test_pool_stats(pool).capacity;
    fm_telemetry *tel = fm_telemetry_create(&(fm_telemetry_desc){.frames = 2});
    assert_int_equal(fm_telemetry_add_pool(tel, pool), 0);
    size_t from = rec.n;
    rec_event want[24];
    size_t n = 0;
    void *items[8];
    for (uint64_t i = 0; i < per; i++) {
        items[i] = fm_pool_alloc(pool);
        want[n++] = (rec_event){EV_ALLOC, name, items[i], 512};
    }
    fm_telemetry_frame_end(tel);
    want[n++] = (rec_event){EV_FRAME_END, NULL, NULL, 0};
    /* next frame: the last frame's net allocation (per items) asks for room
     * at the boundary, before the frame ends */
    assert_int_equal(fm_telemetry_grow_ahead(tel), 0);
    want[n++] = (rec_event){EV_GROW, name, NULL, 0};
    fm_telemetry_frame_end(tel);
    want[n++] = (rec_event){EV_FRAME_END, NULL, NULL, 0};
    for (uint64_t i = 0; i < per; i++) {
        fm_pool_free(pool, items[i]);
        want[n++] = (rec_event){EV_FREE, name, items[i], 0};
    }
    fm_telemetry_frame_end(tel); /* the ring of 2 is full: still sent */
    want[n++] = (rec_event){EV_FRAME_END, NULL, NULL, 0};
    assert_events(from, want, n);
    assert_int_equal(fm_telemetry_get_sample(tel, 0, 0)->ahead_grow_events, 1);
    size_t before = rec.n;
    fm_telemetry_destroy(tel);
    assert_int_equal(rec.n, before);
    fm_test_pool_destroy_clean(env, pool);
}

/* ====================================================== install, remove */

static void test_hooks_null_or_empty_set_removes_the_hooks(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = make_pool(env, FM_SYNC_NONE, 16);
    size_t from = rec.n;
    assert_true(fm_set_hooks(NULL));
    fm_pool_free(pool, fm_pool_alloc(pool));
    fm_hooks_frame_end();
    assert_int_equal(rec.n, from);
    assert_true(fm_set_hooks(&recording));
    fm_pool_free(pool, fm_pool_alloc(pool));
    assert_int_equal(rec.n, from + 2);
    /* A set whose functions are all NULL is none (its user pointer too). */
    assert_true(fm_set_hooks(&(fm_hooks){.user = &rec}));
    fm_pool_free(pool, fm_pool_alloc(pool));
    fm_hooks_frame_end();
    assert_int_equal(rec.n, from + 2);
    /* One hook alone: the others stay silent. */
    assert_true(fm_set_hooks(&(fm_hooks){.frame_end = on_frame_end, .user = &rec}));
    fm_pool_free(pool, fm_pool_alloc(pool));
    fm_hooks_frame_end();
    assert_int_equal(rec.n, from + 3);
    assert_int_equal(rec.ev[from + 2].kind, EV_FRAME_END);
    assert_int_equal(env->errors.count, 0);
    fm_pool_destroy(pool);
}

static void test_hooks_callers_built_without_fm_hooks_still_send_events(void **state) {
    fm_test_env *env = *state;
    print_message("hooks_inline_caller.c: %s\n", hooks_caller_is_inline()
                                                     ? "inline fast paths compiled in"
                                                     : "library calls (a sanitizer build)");
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        rec_clear();
        fm_pool *pool = make_pool(env, all_policies[k], 16);
        const char *name = fm_pool_name(pool);
        size_t from = rec.n;
        void *a = hooks_caller_pool_alloc(pool);
        void *b = hooks_caller_pool_alloc(pool);
        hooks_caller_pool_free(pool, a);
        void *c = hooks_caller_pool_alloc(pool);
        hooks_caller_pool_free(pool, b);
        hooks_caller_pool_free(pool, c);
        rec_event want[] = {
            {EV_ALLOC, name, a, 16}, {EV_ALLOC, name, b, 16}, {EV_FREE, name, a, 0},
            {EV_ALLOC, name, c, 16}, {EV_FREE, name, b, 0},   {EV_FREE, name, c, 0},
        };
        assert_events(from, want, 6);
        fm_test_pool_destroy_clean(env, pool);
    }
    fm_arena *arena = fm_arena_create(&(fm_arena_desc){.name = "inline arena"});
    assert_non_null(arena);
    size_t from = rec.n;
    void *p = hooks_caller_arena_alloc(arena, 40);
    void *q = hooks_caller_arena_alloc(arena, 40);
    rec_event want[] = {{EV_ALLOC, fm_arena_name(arena), NULL, 40},
                        {EV_ALLOC, fm_arena_name(arena), p, 40},
                        {EV_ALLOC, fm_arena_name(arena), q, 40}};
    /* The first allocation commits (a grow event) unless create did. */
    if (rec.n - from == 3) {
        assert_int_equal(rec.ev[from].kind, EV_GROW);
        assert_events(from + 1, want + 1, 2);
    } else {
        assert_events(from, want + 1, 2);
    }
    fm_arena_destroy(arena);
}

static void test_hooks_timed_pools_send_events_and_count_their_calls(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = fm_test_pool_create_counted(
        env, (fm_pool_desc){.name = "timed", .item_size = 16,
                            .timing = FM_POOL_TIMING_EVERY_CALL});
    size_t from = rec.n;
    void *a = fm_pool_alloc(pool);
    void *items[4];
    assert_int_equal(fm_pool_alloc_n(pool, items, 4), 4);
    fm_pool_free_n(pool, items, 4);
    fm_pool_free(pool, a);
    assert_int_equal(rec.n - from, 10);
    assert_int_equal(rec.by_kind[EV_ALLOC], 5);
    assert_int_equal(rec.by_kind[EV_FREE], 5);
    assert_int_equal(fm_test_pool_stats(pool).timed_calls, 4);
    assert_no_violation();
    fm_test_pool_destroy_clean(env, pool);
}

typedef struct hit {
    int amount;
} hit;
static void on_hit(void *capture, void *arg) {
    (void)capture;
    (*(int *)arg)++;
}

static void test_hooks_closure_pools_send_events_of_their_size_class_pools(void **state) {
    (void)state;
    fm_closure_pool *closures = fm_closure_pool_create(&(fm_closure_pool_desc){.name = "cl"});
    assert_non_null(closures);
    size_t from = rec.n;
    fm_closure *c = FM_CLOSURE(closures, on_hit, hit, .amount = 3);
    assert_non_null(c);
    int calls = 0;
    fm_closure_call(c, &calls);
    assert_true(fm_closure_release(c));
    assert_int_equal(calls, 1);
    assert_no_violation();
    size_t allocs = 0, frees = 0;
    const char *name = NULL;
    for (size_t i = from; i < rec.n; i++) {
        if (rec.ev[i].kind == EV_ALLOC) allocs++, name = rec.ev[i].name;
        if (rec.ev[i].kind == EV_FREE) frees++, assert_ptr_equal(rec.ev[i].name, name);
    }
    assert_int_equal(allocs, 1);
    assert_int_equal(frees, 1);
    assert_true(strncmp(name, "cl/", 3) == 0);
    fm_closure_pool_destroy(closures);
    assert_no_violation();
}

/* ================================================================ threads */

enum { STRESS_SLOTS = 64, STRESS_THREADS = 4 };

typedef struct stress {
    fm_pool *pool;
    int ops;
    _Atomic(void *) slots[STRESS_SLOTS];
    atomic_ullong allocs, frees;
} stress;

typedef struct stress_arg {
    stress *s;
    uint64_t seed;
} stress_arg;

static uint64_t next_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Random allocs and frees through slots shared by the threads, so items
 * are freed by other threads than their allocator's and slots come round
 * fast. */
static void *stress_main(void *p) {
    stress_arg *a = p;
    stress *s = a->s;
    uint64_t x = a->seed;
    uint64_t allocs = 0, frees = 0;
    for (int op = 0; op < s->ops; op++) {
        uint64_t r = next_rand(&x);
        size_t i = (size_t)(r % STRESS_SLOTS);
        void *item = atomic_exchange(&s->slots[i], NULL);
        if (item) {
            if ((r >> 8) % 4 == 0) fm_pool_free_n(s->pool, &item, 1);
            else if ((r >> 8) % 4 == 1) fm_pool_delete(s->pool, item);
            else fm_pool_free(s->pool, item);
            frees++;
            continue;
        }
        if ((r >> 8) % 4 == 0) {
            if (fm_pool_alloc_n(s->pool, &item, 1) != 1) item = NULL;
        } else {
            item = fm_pool_alloc(s->pool);
        }
        if (!item) continue;
        allocs++;
        void *old = atomic_exchange(&s->slots[i], item);
        if (old) {
            fm_pool_free(s->pool, old);
            frees++;
        }
    }
    atomic_fetch_add(&s->allocs, allocs);
    atomic_fetch_add(&s->frees, frees);
    return NULL;
}

static void test_hooks_threads_keep_the_alloc_free_order_under_each_shared_policy(void **state) {
    (void)state;
    static const fm_sync shared[] = {FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE, FM_SYNC_LOCKFREE};
    for (size_t k = 0; k < 3; k++) {
        rec_clear();
        static stress s;
        memset(&s, 0, sizeof s);
        s.ops = fm_test_under_valgrind() ? 4000 : 40000;
        s.pool = fm_pool_create(&(fm_pool_desc){.name = "shared", .item_size = 32,
                                                .sync = shared[k], .initial_capacity = 16});
        assert_non_null(s.pool);
        const char *name = fm_pool_name(s.pool);
        fm_test_thread t[STRESS_THREADS];
        stress_arg args[STRESS_THREADS];
        for (int i = 0; i < STRESS_THREADS; i++) {
            args[i] = (stress_arg){&s, 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) + k};
            assert_int_equal(fm_test_thread_create(&t[i], stress_main, &args[i]), 0);
        }
        for (int i = 0; i < STRESS_THREADS; i++) fm_test_thread_join(t[i], NULL);
        for (size_t i = 0; i < STRESS_SLOTS; i++) {
            void *item = atomic_exchange(&s.slots[i], NULL);
            if (item) {
                fm_pool_free(s.pool, item);
                s.frees++;
            }
        }
        assert_int_equal(s.allocs, s.frees);
        assert_no_violation();
        fm_test_mutex_lock(&rec.lock);
        size_t allocs = rec.by_kind[EV_ALLOC], frees = rec.by_kind[EV_FREE];
        fm_test_mutex_unlock(&rec.lock);
        assert_int_equal(allocs, s.allocs);
        assert_int_equal(frees, s.frees);
        assert_int_equal(live_of(name), 0);
        fm_pool_stats st = fm_test_pool_stats(s.pool);
        assert_int_equal(st.total_allocs, s.allocs);
        assert_int_equal(st.live, 0);
        fm_pool_destroy(s.pool);
    }
}

/* Two sets whose functions check that their own user pointer came with
 * them, swapped while threads allocate. */
static int set_a, set_b;
static atomic_int mismatched, events_a, events_b;
static void a_alloc(const void *ptr, size_t size, const char *name, void *user) {
    (void)ptr, (void)size, (void)name;
    if (user != &set_a) atomic_fetch_add(&mismatched, 1);
    atomic_fetch_add(&events_a, 1);
}
static void a_free(const void *ptr, const char *name, void *user) { a_alloc(ptr, 0, name, user); }
static void b_alloc(const void *ptr, size_t size, const char *name, void *user) {
    (void)ptr, (void)size, (void)name;
    if (user != &set_b) atomic_fetch_add(&mismatched, 1);
    atomic_fetch_add(&events_b, 1);
}
static void b_free(const void *ptr, const char *name, void *user) { b_alloc(ptr, 0, name, user); }

typedef struct swap_run {
    fm_pool *pool;
    atomic_bool stop;
    int ops;
} swap_run;

static void *swap_worker(void *p) {
    swap_run *r = p;
    for (int i = 0; i < r->ops; i++) {
        void *items[4];
        for (int j = 0; j < 4; j++) items[j] = fm_pool_alloc(r->pool);
        for (int j = 0; j < 4; j++) fm_pool_free(r->pool, items[j]);
    }
    return NULL;
}

static void test_hooks_replaced_while_threads_allocate_go_whole_to_one_set(void **state) {
    (void)state;
    atomic_store(&mismatched, 0);
    atomic_store(&events_a, 0);
    atomic_store(&events_b, 0);
    const fm_hooks a = {.alloc = a_alloc, .free = a_free, .user = &set_a};
    const fm_hooks b = {.alloc = b_alloc, .free = b_free, .user = &set_b};
    assert_true(fm_set_hooks(&a));
    swap_run run = {.ops = fm_test_under_valgrind() ? 2000 : 20000};
    run.pool = fm_pool_create(&(fm_pool_desc){.name = "swapped", .item_size = 16,
                                              .sync = FM_SYNC_THREAD_CACHE});
    assert_non_null(run.pool);
    fm_test_thread t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(fm_test_thread_create(&t[i], swap_worker, &run), 0);
    for (int i = 0; i < 2000; i++) assert_true(fm_set_hooks(i % 2 ? &a : &b));
    for (int i = 0; i < 2; i++) fm_test_thread_join(t[i], NULL);
    assert_true(fm_set_hooks(&recording));
    assert_int_equal(atomic_load(&mismatched), 0);
    assert_int_equal(atomic_load(&events_a) + atomic_load(&events_b),
                     2 * 8 * run.ops);
    fm_pool_destroy(run.pool);
}

/* ======================================= the Tracy adapter of the docs */

/* tracy/TracyC.h's stand-in (tests/memory/fake_tracy): docs/profilers/
 * fm_tracy.c's Tracy calls, checked by the recorder as Tracy would. */
static int tracy_frames, tracy_growths;
void fake_tracy_alloc(const void *ptr, size_t size, const char *name) {
    record(EV_ALLOC, name, ptr, size);
}
void fake_tracy_free(const void *ptr, const char *name) { record(EV_FREE, name, ptr, 0); }
void fake_tracy_discard(const char *name) { record(EV_RESET, name, NULL, 0); }
void fake_tracy_message(const char *text, size_t size) {
    assert_int_equal(strlen(text), size);
    tracy_growths += strstr(text, " grew by ") != NULL;
}
void fake_tracy_frame_mark(void) { tracy_frames++; }

static void test_hooks_tracy_adapter_of_the_docs_keeps_tracys_rules(void **state) {
    fm_test_env *env = *state;
    tracy_frames = tracy_growths = 0;
    assert_true(fm_tracy_install());
    for (size_t k = 0; k < sizeof all_policies / sizeof all_policies[0]; k++) {
        char name[32];
        snprintf(name, sizeof name, "tracy %zu", k);
        fm_pool *pool = fm_test_pool_create_counted(
            env, (fm_pool_desc){.name = name, .item_size = 16, .sync = all_policies[k]});
        void *items[100];
        for (int i = 0; i < 100; i++) items[i] = fm_pool_alloc(pool);
        fm_pool_free_n(pool, items, 50);
        assert_int_equal(fm_pool_alloc_n(pool, items, 50), 50);
        fm_pool_free_n(pool, items, 100);
        /* Tracy's pool is named by a copy that outlives the pool. */
        size_t last = rec.n - 1;
        assert_string_equal(rec.ev[last].name, name);
        assert_ptr_not_equal(rec.ev[last].name, fm_pool_name(pool));
        fm_test_pool_destroy_clean(env, pool);
        assert_int_equal(rec.ev[rec.n - 1].kind, EV_RESET);
        assert_ptr_equal(rec.ev[rec.n - 1].name, rec.ev[last].name);
        fm_hooks_frame_end();
    }
    fm_frame_arena *fa = fm_frame_arena_create(&(fm_frame_arena_desc){.name = "tracy frame"});
    assert_non_null(fa);
    for (int f = 0; f < 10; f++) {
        for (int i = 0; i < 20; i++) assert_non_null(fm_frame_alloc(fa, 48, 0));
        fm_frame_arena_advance(fa);
        fm_hooks_frame_end();
    }
    fm_frame_arena_destroy(fa);
    fm_tracy_uninstall();
    fm_pool *quiet = make_pool(env, FM_SYNC_NONE, 16);
    size_t n = rec.n;
    fm_pool_free(quiet, fm_pool_alloc(quiet));
    assert_int_equal(rec.n, n);
    fm_test_pool_destroy_clean(env, quiet);
    assert_no_violation();
    assert_int_equal(tracy_frames, 14);
    assert_true(tracy_growths >= 6); /* each pool's first chunks, each arena's commits */
    assert_int_equal(rec.live, 0);
}

#endif /* FM_HOOKS */

/* ===================================== both builds: install and refusal */

static int untouched_calls;
static void untouched_alloc(const void *ptr, size_t size, const char *name, void *user) {
    (void)ptr, (void)size, (void)name, (void)user;
    untouched_calls++;
}
static void untouched_frame_end(void *user) {
    (void)user;
    untouched_calls++;
}

static void test_hooks_set_hooks_says_whether_this_build_sends_events(void **state) {
    fm_test_env *env = *state;
    untouched_calls = 0;
    bool ok = fm_set_hooks(&(fm_hooks){.alloc = untouched_alloc, .frame_end = untouched_frame_end});
    fm_pool *pool = fm_pool_create(&(fm_pool_desc){.name = "plain", .item_size = 8});
    assert_non_null(pool);
    fm_pool_free(pool, fm_pool_alloc(pool));
    fm_hooks_frame_end();
    fm_pool_destroy(pool);
#ifdef FM_HOOKS
    assert_true(ok);
    assert_int_equal(untouched_calls, 2);
    assert_int_equal(env->errors.count, 0);
#else
    /* Without FM_HOOKS: refused, reported, nothing installed. */
    assert_false(ok);
    assert_int_equal(untouched_calls, 0);
    assert_int_equal(env->errors.count, 1);
    assert_int_equal(fm_last_error(), FM_ERR_UNSUPPORTED);
    fm_test_expect_contains(env->errors.message, "FM_HOOKS");
#endif
    /* Removing hooks works in every build and reports nothing. */
    int errors = env->errors.count;
    assert_true(fm_set_hooks(NULL));
    assert_true(fm_set_hooks(&(fm_hooks){0}));
    fm_hooks_frame_end();
    assert_int_equal(env->errors.count, errors);
    assert_int_equal(untouched_calls, ok ? 2 : 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hooks_set_hooks_says_whether_this_build_sends_events,
                                        fm_test_setup, fm_test_teardown),
#ifdef FM_HOOKS
#define T(f) cmocka_unit_test_setup_teardown(f, hooks_setup, hooks_teardown)
        T(test_hooks_pool_events_follow_alloc_and_free_under_each_policy),
        T(test_hooks_refused_frees_send_no_event),
        T(test_hooks_batches_send_one_event_per_item_and_a_repeated_item_once),
        T(test_hooks_delete_and_last_release_send_free_after_the_dtor),
        T(test_hooks_growth_is_sent_at_create_and_before_the_alloc_that_needed_it),
        T(test_hooks_destroy_sends_reset_and_its_live_items_go),
        T(test_hooks_event_order_under_alloc_free_reset_and_growth),
        T(test_hooks_reset_is_sent_after_the_dtors_and_a_refused_one_sends_nothing),
        T(test_hooks_arena_allocations_commits_resets_and_rewinds),
        T(test_hooks_frame_arena_advance_resets_the_arena_coming_round),
        T(test_hooks_frame_end_is_sent_when_called),
        T(test_hooks_telemetry_frame_end_sends_frame_end_after_the_frames_events),
        T(test_hooks_null_or_empty_set_removes_the_hooks),
        T(test_hooks_callers_built_without_fm_hooks_still_send_events),
        T(test_hooks_timed_pools_send_events_and_count_their_calls),
        T(test_hooks_closure_pools_send_events_of_their_size_class_pools),
        T(test_hooks_threads_keep_the_alloc_free_order_under_each_shared_policy),
        T(test_hooks_replaced_while_threads_allocate_go_whole_to_one_set),
        T(test_hooks_tracy_adapter_of_the_docs_keeps_tracys_rules),
#undef T
#endif
    };
    fm_test_filter_from_env();
    return cmocka_run_group_tests_name("hooks", tests, NULL, NULL);
}
