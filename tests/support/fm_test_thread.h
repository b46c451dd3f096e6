/*
 * tests/support/fm_test_thread.h: threads, mutexes and barriers for the test
 * suites, one spelling on POSIX (pthreads) and on Windows (the native API),
 * shaped like pthreads' calls (0 on success).
 *
 * Windows runs the suites with either kind of thread, chosen by the
 * environment variable FM_TEST_THREADS:
 * - "win32" (the default): CreateThread, the raw OS thread, on which the C
 *   runtime never ran its per-thread set-up;
 * - "crt": _beginthreadex, the C runtime's thread (what C11's thrd_create
 *   and winpthreads' pthread_create are built on).
 * framemem itself uses neither library: its thread-exit work is an FLS
 * callback, which both kinds of thread run. The first thread a process
 * starts prints which kind it is.
 */
#ifndef FM_TEST_THREAD_H
#define FM_TEST_THREAD_H

#include <stdbool.h>

#ifdef _WIN32
/* windows.h stays out of the suites (its near, far, min, max...): an SRWLOCK
 * and a CONDITION_VARIABLE are each one pointer. */
typedef struct fm_test_thread_s *fm_test_thread;
typedef struct fm_test_mutex {
    void *srw;
} fm_test_mutex;
typedef struct fm_test_barrier {
    void *srw, *cv;
    unsigned count, waiting, round;
} fm_test_barrier;
#else
#include <pthread.h>

typedef pthread_t fm_test_thread;
typedef pthread_mutex_t fm_test_mutex;
/* Not pthread_barrier_t, which strict C11 sources cannot see. */
typedef struct fm_test_barrier {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    unsigned count, waiting, round;
} fm_test_barrier;
#endif

/// Starts fn(arg) on a new thread; 0, or nonzero when the OS refused.
int fm_test_thread_create(fm_test_thread *t, void *(*fn)(void *), void *arg);
/// Waits for the thread; its result in *result (may be NULL). 0 on success.
int fm_test_thread_join(fm_test_thread t, void **result);
/// "pthread", "CreateThread" or "_beginthreadex".
const char *fm_test_thread_kind(void);
/// Gives the CPU to another thread.
void fm_test_thread_yield(void);
/// Sleeps for ms milliseconds.
void fm_test_sleep_ms(unsigned ms);

int fm_test_mutex_init(fm_test_mutex *m);
int fm_test_mutex_destroy(fm_test_mutex *m);
int fm_test_mutex_lock(fm_test_mutex *m);
int fm_test_mutex_unlock(fm_test_mutex *m);

/// A barrier for count threads; wait returns once count threads wait.
int fm_test_barrier_init(fm_test_barrier *b, unsigned count);
int fm_test_barrier_wait(fm_test_barrier *b);
int fm_test_barrier_destroy(fm_test_barrier *b);

#endif /* FM_TEST_THREAD_H */
