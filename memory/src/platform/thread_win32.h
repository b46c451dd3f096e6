/* platform/thread_win32.h: thread.h's names on Windows, with the native API
 * only (no winpthreads, no C runtime threads): SRWLOCK mutexes,
 * InitOnceExecuteOnce, an FLS callback as the thread-exit hook (os_win32.c),
 * SwitchToThread. Included by platform/thread.h alone. */
#ifndef FRAMEMEM_PLATFORM_THREAD_WIN32_H
#define FRAMEMEM_PLATFORM_THREAD_WIN32_H

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <stdint.h>

#include "framemem/detail/atomic.h"

/* ------------------------------------------------------------------ mutex */

/* An SRWLOCK: one interlocked instruction to take and to give back, a
 * static initialiser, nothing to destroy. It is not recursive, so a
 * recursive mutex adds its owner's thread id (0 is no thread's) and a depth:
 * only the owner can find its own id there, so a relaxed load decides. A
 * CRITICAL_SECTION is recursive but has no static initialiser and spins
 * before it sleeps. */
typedef struct fm__mutex {
    SRWLOCK lock;
    DWORD owner;    /* recursive: the holder's thread id, 0 when free */
    uint32_t depth; /* recursive: the holder's lock count */
    bool recursive;
} fm__mutex;

/* A mutex of static storage needs no init (never recursive). */
#define FM__MUTEX_INIT {SRWLOCK_INIT, 0, 0, false}

static inline bool fm__mutex_init(fm__mutex *mu, bool recursive) {
    InitializeSRWLock(&mu->lock);
    mu->owner = 0;
    mu->depth = 0;
    mu->recursive = recursive;
    return true;
}
static inline void fm__mutex_destroy(fm__mutex *mu) { (void)mu; }
static inline void fm__mutex_lock(fm__mutex *mu) {
    if (mu->recursive) {
        DWORD me = GetCurrentThreadId();
        if (FM__ATOMIC_LOAD(&mu->owner, RELAXED) == me) {
            mu->depth++;
            return;
        }
        AcquireSRWLockExclusive(&mu->lock);
        FM__ATOMIC_STORE(&mu->owner, me, RELAXED);
        mu->depth = 1;
        return;
    }
    AcquireSRWLockExclusive(&mu->lock);
}
static inline void fm__mutex_unlock(fm__mutex *mu) {
    if (mu->recursive) {
        if (--mu->depth) return;
        FM__ATOMIC_STORE(&mu->owner, (DWORD)0, RELAXED);
    }
    ReleaseSRWLockExclusive(&mu->lock);
}

/* --------------------------------------------------------------- run once */

typedef struct fm__once {
    INIT_ONCE o;
} fm__once;

#define FM__ONCE_INIT {INIT_ONCE_STATIC_INIT}

/* The function travels boxed: a function pointer is not an object pointer. */
typedef struct fm__once_fn {
    void (*fn)(void);
} fm__once_fn;

static inline BOOL CALLBACK fm__once_run(PINIT_ONCE once, PVOID box, PVOID *context) {
    (void)once, (void)context;
    ((fm__once_fn *)box)->fn();
    return TRUE;
}

/* Runs fn exactly once per flag, whichever thread gets there first; the
 * others wait until it has returned. */
static inline void fm__call_once(fm__once *flag, void (*fn)(void)) {
    fm__once_fn box = {fn};
    InitOnceExecuteOnce(&flag->o, fm__once_run, &box, NULL);
}

/* --------------------------------------------------------- thread-exit hook */

/* A per-thread value with a function that the exiting thread runs on it: a
 * fiber-local storage slot with a callback (FlsAlloc). The callback is a
 * WINAPI function of os_win32.c that clears the slot and calls on_exit, so
 * on_exit keeps the portable signature; at most FM__EXIT_HOOKS hooks exist
 * in a process. A value armed again from inside on_exit is not called back
 * (POSIX repeats key destructors; Windows runs each FLS callback once). */
enum { FM__EXIT_HOOKS = 4 };

typedef struct fm__exit_hook {
    DWORD index;
} fm__exit_hook;

/* Makes the hook (once per process). false when the platform refused. */
bool fm__exit_hook_create(fm__exit_hook *hook, void (*on_exit)(void *value));
/* Arms the hook for the calling thread: at its exit on_exit(value) runs
 * (value != NULL). false when the platform refused. */
bool fm__exit_hook_arm(fm__exit_hook *hook, void *value);

/* ------------------------------------------------------------------ yield */

/* Gives the CPU to another thread (spin-waits that must let a holder run). */
static inline void fm__thread_yield(void) {
    if (!SwitchToThread()) Sleep(0);
}

#endif /* FRAMEMEM_PLATFORM_THREAD_WIN32_H */
