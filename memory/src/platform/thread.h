/* platform/thread.h: threads as framemem uses them, one spelling per
 * platform: mutexes (optionally recursive), run-once, a thread-exit hook, the
 * thread-local storage class and yield. POSIX threads, or on Windows the
 * native API (SRWLOCK, InitOnceExecuteOnce, an FLS callback, SwitchToThread):
 * never winpthreads. Nothing else in memory/src includes a thread header.
 *
 * The lock and unlock wrappers are inline: MUTEX pools and arenas take the
 * lock on every call, and a wrapper call would cost instructions there.
 *
 * Thread-local variables are defined with FM__THREAD_LOCAL and used through
 * FM__TLS(name), which is the variable itself except with gcc on Windows
 * (below); the usual spelling is a second name:
 *
 *     static FM__THREAD_LOCAL fm_error fm__last_error_tls;
 *     #define fm__last_error FM__TLS(fm__last_error_tls)
 */
#ifndef FRAMEMEM_PLATFORM_THREAD_H
#define FRAMEMEM_PLATFORM_THREAD_H

#include <stdbool.h>

/* ------------------------------------------------------------ thread-local */

#if defined(_WIN32) && defined(__GNUC__) && !defined(__clang__) &&                        \
    (defined(__x86_64__) || defined(__aarch64__))
/* gcc's MinGW targets have no native TLS: every _Thread_local access calls
 * __emutls_get_address, whose first call in each thread mallocs (the heap
 * lock, inside a pool's thread-cache path) and whose blocks are freed at
 * thread exit under the loader lock. framemem's thread-locals live in the
 * image's TLS template instead (the .tls$ sections the linker gathers
 * between the CRT's _tls_start and _tls_end, as MSVC's __declspec(thread)
 * does), which the loader copies for each thread before it runs: an access
 * is the TEB's ThreadLocalStoragePointer, indexed by the module's
 * _tls_index, plus the variable's offset in the template. Nothing is
 * allocated and no lock is taken. Variables are zero-initialised; take
 * their address or value only through FM__TLS. */
#define FM__THREAD_LOCAL __attribute__((section(".tls$FM")))
#define FM__WIN_TLS 1
extern char _tls_start;
extern unsigned long _tls_index;
static inline void *fm__tls_at(const void *var) {
    char **slots;
#if defined(__x86_64__)
    __asm__("movq %%gs:0x58, %0" : "=r"(slots)); /* TEB.ThreadLocalStoragePointer */
#else
    __asm__("ldr %0, [x18, #0x58]" : "=r"(slots));
#endif
    return slots[_tls_index] + ((const char *)var - &_tls_start);
}
#define FM__TLS(name) (*(__typeof__(&(name)))fm__tls_at(&(name)))
#else
#define FM__THREAD_LOCAL _Thread_local
#define FM__TLS(name) (name)
#endif

#if defined(_WIN32)
#include "platform/thread_win32.h"
#else

#include <pthread.h>
#include <sched.h>

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

#endif /* !_WIN32 */

#endif /* FRAMEMEM_PLATFORM_THREAD_H */
