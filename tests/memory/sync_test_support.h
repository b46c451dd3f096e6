/*
 * tests/memory/sync_test_support.h: helpers for the arena and closure thread
 * suites (test_arena_threads.c, test_closure_threads.c).
 *
 * fm_test.h's error capture is single-threaded; the stress tests need a
 * thread-safe one (fm_test_allocator, their backing allocator, is):
 * - sync_errors: a process-wide error handler counting reports per code with
 *   atomics, keeping the last message under a lock.
 * - sync_run: starts n threads on fn(arg + i * arg_size) and joins them.
 */
#ifndef SYNC_TEST_SUPPORT_H
#define SYNC_TEST_SUPPORT_H

#include "fm_test.h"

#include "fm_test_thread.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ errors */

typedef struct sync_errors {
    atomic_int count;
    atomic_int by_code[FM_ERROR_COUNT];
    fm_test_mutex lock;
    char last_message[512];
} sync_errors;

static inline void sync_errors_handler(fm_error err, const char *message, void *user) {
    sync_errors *e = user;
    atomic_fetch_add(&e->count, 1);
    if ((unsigned)err < FM_ERROR_COUNT) atomic_fetch_add(&e->by_code[err], 1);
    fm_test_mutex_lock(&e->lock);
    snprintf(e->last_message, sizeof e->last_message, "%s", message ? message : "");
    fm_test_mutex_unlock(&e->lock);
}

static inline void sync_errors_install(sync_errors *e) {
    memset(e, 0, sizeof *e);
    fm_test_mutex_init(&e->lock);
    fm_set_error_handler(sync_errors_handler, e);
    fm_clear_error();
}

static inline void sync_errors_remove(sync_errors *e) {
    fm_set_error_handler(NULL, NULL);
    fm_test_mutex_destroy(&e->lock);
}

/* Asserts that the reports since `before` were exactly n of code. */
static inline void sync_expect_errors(sync_errors *e, int before, fm_error code, int n) {
    int got = atomic_load(&e->count) - before;
    if (got != n || atomic_load(&e->by_code[code]) < n) {
        print_error("expected %d report(s) of %s, got %d (%d of that code); last: %s\n", n,
                    fm_error_name(code), got, atomic_load(&e->by_code[code]), e->last_message);
        fail();
    }
}

/* ----------------------------------------------------------------- threads */

#define SYNC_MAX_THREADS 16

static inline void sync_run(int n, void *(*fn)(void *), void *args, size_t arg_size) {
    fm_test_thread t[SYNC_MAX_THREADS];
    assert_true(n > 0 && n <= SYNC_MAX_THREADS);
    for (int i = 0; i < n; i++)
        assert_int_equal(fm_test_thread_create(&t[i], fn, (char *)args + (size_t)i * arg_size), 0);
    for (int i = 0; i < n; i++) assert_int_equal(fm_test_thread_join(t[i], NULL), 0);
}

/* xorshift64*: per-thread random streams. */
static inline uint64_t sync_rand(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

#endif /* SYNC_TEST_SUPPORT_H */
