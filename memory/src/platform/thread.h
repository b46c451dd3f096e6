/* platform/thread.h: threads as framemem uses them, one spelling per
 * platform: mutexes (optionally recursive), run-once, a thread-exit hook, the
 * thread-local storage class and yield. POSIX threads only, so far; a
 * Windows section (SRWLOCK or CRITICAL_SECTION, InitOnceExecuteOnce, an FLS
 * callback, SwitchToThread) is to implement the same names. Nothing else in
 * memory/src includes a thread header.
 *
 * The lock and unlock wrappers are inline: MUTEX pools and arenas take the
 * lock on every call, and a wrapper call would cost instructions there. */
#ifndef FRAMEMEM_PLATFORM_THREAD_H
#define FRAMEMEM_PLATFORM_THREAD_H

#include <stdbool.h>

#include <pthread.h>
#include <sched.h>

/* The storage class of per-thread variables. */
#define FM__THREAD_LOCAL _Thread_local

/* ------------------------------------------------------------------ mutex */

typedef struct fm__mutex {
    pthread_mutex_t m;
} fm__mutex;

/* A mutex of static storage needs no init (never recursive). */
#define FM__MUTEX_INIT {PTHREAD_MUTEX_INITIALIZER}

/* recursive: the owner may lock it again (and unlocks as often). false when
 * the platform refused. */
static inline bool fm__mutex_init(fm__mutex *mu, bool recursive) {
    if (!recursive) return pthread_mutex_init(&mu->m, NULL) == 0;
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0) return false;
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    bool ok = pthread_mutex_init(&mu->m, &attr) == 0;
    pthread_mutexattr_destroy(&attr);
    return ok;
}
static inline void fm__mutex_destroy(fm__mutex *mu) { pthread_mutex_destroy(&mu->m); }
static inline void fm__mutex_lock(fm__mutex *mu) { pthread_mutex_lock(&mu->m); }
static inline void fm__mutex_unlock(fm__mutex *mu) { pthread_mutex_unlock(&mu->m); }

/* --------------------------------------------------------------- run once */

typedef struct fm__once {
    pthread_once_t o;
} fm__once;

#define FM__ONCE_INIT {PTHREAD_ONCE_INIT}

/* Runs fn exactly once per flag, whichever thread gets there first; the
 * others wait until it has returned. */
static inline void fm__call_once(fm__once *flag, void (*fn)(void)) { pthread_once(&flag->o, fn); }

/* --------------------------------------------------------- thread-exit hook */

/* A per-thread value with a function that the exiting thread runs on it
 * (pthread key destructors; FLS callbacks on Windows). */
typedef struct fm__exit_hook {
    pthread_key_t key;
} fm__exit_hook;

/* Makes the hook (once per process). false when the platform refused. */
static inline bool fm__exit_hook_create(fm__exit_hook *hook, void (*on_exit)(void *value)) {
    return pthread_key_create(&hook->key, on_exit) == 0;
}
/* Arms the hook for the calling thread: at its exit on_exit(value) runs
 * (value != NULL). The thread's value is cleared before on_exit runs, so an
 * on_exit that leaves the thread using framemem again may arm it again.
 * false when the platform refused. */
static inline bool fm__exit_hook_arm(fm__exit_hook *hook, void *value) {
    return pthread_setspecific(hook->key, value) == 0;
}

/* ------------------------------------------------------------------ yield */

/* Gives the CPU to another thread (spin-waits that must let a holder run). */
static inline void fm__thread_yield(void) { sched_yield(); }

#endif /* FRAMEMEM_PLATFORM_THREAD_H */
