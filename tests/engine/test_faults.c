/* tests/engine/test_faults.c: the engine under fault injection. A counting
 * allocator in eng_desc fails its Nth backing call for N = 1, 2, ... until a
 * sweep's operation makes no call that fails: through eng_create, through a
 * run of frames, through a world rebuild. Every failure must be reported,
 * nothing may leak, the engine must keep working, and its telemetry must
 * still add up to its pools' own stats. */
#include "fm_test.h"

#include "eng_test.h"
#include "engine/engine.h"

#include <stdio.h>
#include <string.h>

/* A sweep runs its operation once per N: small worlds keep the whole file
 * near a second under ASan. */
#define SCALE 0.05
/* Frames of each run of the frame sweeps: 1 KiB particles fill a 64 KiB
 * chunk every 63, so warm-up has made every kind of call by then. */
#define FAULT_FRAMES 20
#define MAX_SWEEP 2000 /* a sweep longer than this means calls never stop */

static const char *const fault_ini = "eng_faults.ini";

static void write_ini(void) {
    FILE *f = fopen(fault_ini, "wb");
    assert_non_null(f);
    fputs("[pool.particles]\ninitial_capacity = 512\n", f);
    fclose(f);
}

static eng_desc with_allocator(fm_test_env *env, eng_desc d) {
    d.allocator = fm_test_allocator_get(&env->alloc);
    return d;
}

static eng *make_ok(fm_test_env *env, const eng_desc *d) {
    fm_test_allocator_recover(&env->alloc);
    return eng_test_make(d);
}

/* Substrings a sweep must have met in its messages: proof that it went
 * through every path it claims to cover. */
typedef struct seen_set {
    const char *const *want;
    size_t count;
    bool hit[16];
} seen_set;

static void seen_note(seen_set *s, const char *message) {
    for (size_t i = 0; i < s->count; i++)
        if (fm_test_contains(message, s->want[i])) s->hit[i] = true;
}

static void seen_assert_all(const seen_set *s, const char *sweep) {
    for (size_t i = 0; i < s->count; i++) {
        if (!s->hit[i]) print_error("%s: no failure mentioned '%s'\n", sweep, s->want[i]);
        assert_true(s->hit[i]);
    }
}

/* The engine after a run with failures: still spawning once memory is back,
 * and (pool backend) telemetry equal to the pools' stats. */
static void assert_keeps_working(eng *e, bool pools) {
    if (pools) eng_test_assert_telemetry_matches_pools(e);
    eng_test_run(e, 10);
    eng_info in;
    eng_get_info(e, &in);
    assert_true(in.spawned > 0);
    assert_true(in.particles > 0);
    assert_true(in.entities > 0);
    if (pools) {
        eng_test_assert_telemetry_matches_pools(e);
        fm_pool_stats st;
        fm_pool_get_stats(eng_get_pool(e, "particles"), &st);
        assert_int_equal(in.particles, st.live);
    }
    /* Both backends: each source's net allocations are its live count. */
    const fm_telemetry *t = eng_get_telemetry(e);
    uint32_t last = fm_telemetry_frame_count(t) - 1;
    for (uint32_t s = 0; s < fm_telemetry_source_count(t); s++) {
        const fm_telemetry_source *si = fm_telemetry_get_source(t, s);
        if (si->kind != FM_TELEMETRY_POOL) continue;
        assert_int_equal(si->total_allocs - si->total_frees, fm_telemetry_get_sample(t, last, s)->live);
    }
}

/* ------------------------------------------------------------------ create */

/* Fails call N of eng_create for N = 1, 2, ... until a create makes no call
 * that fails; returns how many N failed it. */
static uint64_t sweep_create(fm_test_env *env, const eng_desc *d, seen_set *seen) {
    uint64_t n = 1;
    for (;; n++) {
        assert_true(n < MAX_SWEEP);
        fm_test_errors_reset(&env->errors);
        uint64_t failed0 = env->alloc.failed_calls;
        fm_test_allocator_fail_nth(&env->alloc, n);
        char err[512] = "";
        eng *e = eng_create(d, err, sizeof err);
        fm_test_allocator_recover(&env->alloc);
        if (env->alloc.failed_calls == failed0) { /* no call failed: done */
            assert_non_null(e);
            eng_test_run(e, 5);
            eng_destroy(e);
            fm_test_allocator_assert_clean(&env->alloc);
            return n - 1;
        }
        if (e) print_error("N = %llu: eng_create succeeded although a call failed\n",
                           (unsigned long long)n);
        assert_null(e);
        /* Reported, saying what could not be made: the engine's own memory
         * ("out of memory for ..."), or a framemem object ("cannot create
         * ...: why"), which also reported through the error handler. */
        bool own = fm_test_contains(err, "out of memory");
        bool object = fm_test_contains(err, "engine: cannot create") && env->errors.count > 0;
        if (!own && !object)
            print_error("N = %llu: message '%s', %d framemem reports\n", (unsigned long long)n,
                        err, env->errors.count);
        assert_true(own || object);
        seen_note(seen, err);
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

static void test_faults_every_failing_create_returns_null_reported_and_leak_free(void **state) {
    fm_test_env *env = *state;
    write_ini();
    static const char *const pool_paths[] = {
        "engine itself", "config", "telemetry", "the world", "pool 'entities'",
        "pool 'particles'", "the frame arena", "the closure pool", "the events",
        "the timer queue"};
    seen_set seen = {pool_paths, sizeof pool_paths / sizeof pool_paths[0], {0}};
    eng_desc d = with_allocator(env, (eng_desc){.scale = SCALE, .seed = 3, .config_path = fault_ini});
    uint64_t swept = sweep_create(env, &d, &seen);
    seen_assert_all(&seen, "create (pool backend)");

    static const char *const malloc_paths[] = {"engine itself", "telemetry", "the world",
                                               "the frame arena", "the closure pool"};
    seen_set seen_m = {malloc_paths, sizeof malloc_paths / sizeof malloc_paths[0], {0}};
    eng_desc dm = with_allocator(env, (eng_desc){.scale = SCALE, .seed = 3, .backend = ENG_BACKEND_MALLOC});
    uint64_t swept_m = sweep_create(env, &dm, &seen_m);
    seen_assert_all(&seen_m, "create (malloc backend)");
    print_message("eng_create swept N = 1..%llu (pool backend with a config), 1..%llu (malloc)\n",
                  (unsigned long long)swept, (unsigned long long)swept_m);
    assert_true(swept >= 20);
    assert_true(swept_m >= 5);
    remove(fault_ini);
}

/* -------------------------------------------------------------------- run */

typedef struct run_sweep {
    eng_desc desc;
    int frames;      /* frames while calls fail */
    bool persistent; /* fail call N and every one after it (else only N) */
    bool pools;
} run_sweep;

/* Creates the engine, fails call N of the next `frames` frames, recovers and
 * checks; for N = 1, 2, ... until the frames make no call that fails.
 * Returns how many N made a call fail. */
static uint64_t sweep_run(fm_test_env *env, const run_sweep *r, seen_set *seen) {
    uint64_t n = 1;
    for (;; n++) {
        assert_true(n < MAX_SWEEP);
        eng *e = make_ok(env, &r->desc);
        fm_test_errors_reset(&env->errors);
        uint64_t failed0 = env->alloc.failed_calls;
        if (r->persistent) fm_test_allocator_fail_from(&env->alloc, n);
        else fm_test_allocator_fail_nth(&env->alloc, n);
        eng_test_run(e, r->frames);
        fm_test_allocator_recover(&env->alloc);
        uint64_t failed = env->alloc.failed_calls - failed0;
        eng_info in;
        eng_get_info(e, &in);
        if (failed) {
            /* Reported by the engine, each single failure once; pools,
             * arenas and closures also report through the handler. */
            if (!r->persistent) assert_int_equal(in.failures, 1);
            else assert_true(in.failures >= 1);
            assert_true(eng_last_failure(e)[0] != '\0');
            if (r->pools) assert_true(env->errors.count >= 1);
            seen_note(seen, eng_last_failure(e));
        } else {
            assert_int_equal(in.failures, 0);
            assert_string_equal(eng_last_failure(e), "");
        }
        assert_keeps_working(e, r->pools);
        eng_destroy(e);
        fm_test_allocator_assert_clean(&env->alloc);
        if (!failed) return n - 1;
    }
}

static void test_faults_failures_during_frames_are_reported_and_the_engine_keeps_running(
    void **state) {
    fm_test_env *env = *state;
    /* Warm-up grows the particles pool in allocations and ahead of them at
     * frame ends, and the frame arena chains blocks for the growing lists.
     * (Closure and timer growth needs far more emitters than a fast sweep
     * has: 64 KiB chunks hold over a thousand timers.) */
    run_sweep r = {
        .desc = with_allocator(env, (eng_desc){.scale = 2 * SCALE, .seed = 7, .grow_ahead = true,
                                               .telemetry_frames = 200}),
        .frames = FAULT_FRAMES,
        .pools = true,
    };
    static const char *const paths[] = {"grow-ahead", "frame arena"};
    seen_set seen = {paths, sizeof paths / sizeof paths[0], {0}};
    uint64_t swept = sweep_run(env, &r, &seen);
    seen_assert_all(&seen, "run");
    /* Without grow-ahead the pools grow inside the frames' allocations. */
    run_sweep in_alloc = r;
    in_alloc.desc.grow_ahead = false;
    static const char *const in_alloc_paths[] = {"items", "frame arena"};
    seen_set seen_a = {in_alloc_paths, sizeof in_alloc_paths / sizeof in_alloc_paths[0], {0}};
    sweep_run(env, &in_alloc, &seen_a);
    seen_assert_all(&seen_a, "run without grow-ahead");
    /* Every call from N on failing: the engine limps through, then recovers. */
    run_sweep p = r;
    p.persistent = true;
    seen_set seen_p = {paths, sizeof paths / sizeof paths[0], {0}};
    uint64_t swept_p = sweep_run(env, &p, &seen_p);
    print_message("%d frames swept N = 1..%llu (call N fails), 1..%llu (N and after)\n",
                  FAULT_FRAMES, (unsigned long long)swept, (unsigned long long)swept_p);
    assert_true(swept >= 4);
}

static void test_faults_malloc_backend_tables_fail_cleanly(void **state) {
    fm_test_env *env = *state;
    /* Items stay on malloc; the handle table and every framemem object take
     * the allocator. Scale 1 grows the entities' handle table past 256. */
    run_sweep r = {
        .desc = with_allocator(env, (eng_desc){.scale = 1.0, .seed = 7, .backend = ENG_BACKEND_MALLOC,
                                               .telemetry_frames = 200}),
        .frames = 3,
    };
    static const char *const paths[] = {"(malloc)"};
    seen_set seen = {paths, 1, {0}};
    uint64_t swept = sweep_run(env, &r, &seen);
    seen_assert_all(&seen, "malloc run");
    print_message("3 malloc-backend frames swept N = 1..%llu\n", (unsigned long long)swept);
}

/* ---------------------------------------------------------------- rebuild */

static void test_faults_failing_rebuild_keeps_the_old_world(void **state) {
    fm_test_env *env = *state;
    write_ini();
    eng_desc d = with_allocator(env, (eng_desc){.scale = SCALE, .seed = 5, .telemetry_frames = 200});
    uint64_t n = 1;
    for (;; n++) {
        assert_true(n < MAX_SWEEP);
        eng *e = make_ok(env, &d);
        eng_test_run(e, 20);
        eng_info before;
        eng_get_info(e, &before);
        fm_test_errors_reset(&env->errors);
        uint64_t failed0 = env->alloc.failed_calls;
        fm_test_allocator_fail_nth(&env->alloc, n);
        char err[512] = "";
        bool ok = eng_reload_config(e, fault_ini, err, sizeof err);
        fm_test_allocator_recover(&env->alloc);
        bool failed = env->alloc.failed_calls > failed0;
        eng_info in;
        eng_get_info(e, &in);
        if (!failed) {
            assert_true(ok);
            assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).initial_capacity, 512);
            assert_int_equal(in.failures, 0);
            eng_destroy(e);
            fm_test_allocator_assert_clean(&env->alloc);
            break;
        }
        /* Refused: said so, nothing changed, the old world runs on. */
        assert_false(ok);
        assert_true(err[0] != '\0');
        assert_null(in.config_path);
        assert_int_equal(fm_pool_get_desc(eng_get_pool(e, "particles")).initial_capacity, 1024);
        assert_int_equal(in.checksum, before.checksum);
        assert_int_equal(in.particles, before.particles);
        assert_true(in.failures <= 1); /* the read buffer is the caller's error only */
        assert_keeps_working(e, true);
        eng_destroy(e);
        fm_test_allocator_assert_clean(&env->alloc);
    }
    /* The same through a control (no message to a caller: counted instead). */
    eng *e = make_ok(env, &d);
    eng_test_run(e, 5);
    fm_test_allocator_fail_nth(&env->alloc, 1);
    eng_set_backend(e, ENG_BACKEND_MALLOC);
    fm_test_allocator_recover(&env->alloc);
    eng_info in;
    eng_get_info(e, &in);
    assert_int_equal(in.backend, ENG_BACKEND_POOL);
    assert_int_equal(in.failures, 1);
    assert_true(fm_test_contains(eng_last_failure(e), "rebuild refused"));
    eng_set_backend(e, ENG_BACKEND_MALLOC); /* memory is back */
    eng_get_info(e, &in);
    assert_int_equal(in.backend, ENG_BACKEND_MALLOC);
    eng_test_run(e, 5);
    eng_destroy(e);
    fm_test_allocator_assert_clean(&env->alloc);
    print_message("eng_reload_config swept N = 1..%llu\n", (unsigned long long)(n - 1));
    remove(fault_ini);
}

/* ----------------------------------------------------------------- basics */

static void test_faults_allocator_holds_every_byte_and_changes_nothing_else(void **state) {
    fm_test_env *env = *state;
    eng_run_result heap, counted;
    char err[256];
    eng_desc d = {.scale = SCALE, .seed = 11, .scene = "bursts"};
    fm_telemetry *th = eng_run_headless(&d, 120, &heap, err, sizeof err);
    eng_desc dc = with_allocator(env, d);
    fm_telemetry *tc = eng_run_headless(&dc, 120, &counted, err, sizeof err);
    assert_non_null(th);
    assert_non_null(tc);
    assert_int_equal(heap.checksum, counted.checksum);
    assert_int_equal(heap.total_spawned, counted.total_spawned);
    assert_true(env->alloc.live_bytes > 0); /* the returned telemetry's ring */
    fm_telemetry_destroy(tc);
    fm_telemetry_destroy(th);
    fm_test_allocator_assert_clean(&env->alloc);
    assert_true(env->alloc.peak_bytes > 0);
    /* Half an allocator is refused before anything is made. */
    eng_desc half = {.allocator = {.alloc = fm_test_allocator_get(&env->alloc).alloc}};
    assert_null(eng_create(&half, err, sizeof err));
    assert_true(fm_test_contains(err, "allocator needs both"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_faults_allocator_holds_every_byte_and_changes_nothing_else, fm_test_setup,
            fm_test_teardown),
        cmocka_unit_test_setup_teardown(
            test_faults_every_failing_create_returns_null_reported_and_leak_free, fm_test_setup,
            fm_test_teardown),
        cmocka_unit_test_setup_teardown(
            test_faults_failures_during_frames_are_reported_and_the_engine_keeps_running,
            fm_test_setup, fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_faults_malloc_backend_tables_fail_cleanly,
                                        fm_test_setup, fm_test_teardown),
        cmocka_unit_test_setup_teardown(test_faults_failing_rebuild_keeps_the_old_world,
                                        fm_test_setup, fm_test_teardown),
    };
    return cmocka_run_group_tests_name("engine_faults", tests, NULL, NULL);
}
