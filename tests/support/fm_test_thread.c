/* tests/support/fm_test_thread.c: see fm_test_thread.h. */
#define _POSIX_C_SOURCE 200809L
#include "fm_test_thread.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first thread of the process says what kind it is. */
static atomic_bool fm_test__kind_said;

static void fm_test__say_kind(void) {
    if (!atomic_exchange(&fm_test__kind_said, true))
        printf("[threads: %s]\n", fm_test_thread_kind());
}

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <process.h>

#define FM_TEST_SRW(p) ((PSRWLOCK)(void *)(p))
#define FM_TEST_CV(p) ((PCONDITION_VARIABLE)(void *)(p))

struct fm_test_thread_s {
    HANDLE handle;
    void *(*fn)(void *);
    void *arg;
    void *result;
};

static bool fm_test__crt_threads(void) {
    const char *kind = getenv("FM_TEST_THREADS");
    return kind && strcmp(kind, "crt") == 0;
}

const char *fm_test_thread_kind(void) {
    return fm_test__crt_threads() ? "_beginthreadex" : "CreateThread";
}

static DWORD WINAPI fm_test__win32_main(LPVOID p) {
    struct fm_test_thread_s *t = p;
    t->result = t->fn(t->arg);
    return 0;
}

static unsigned __stdcall fm_test__crt_main(void *p) {
    struct fm_test_thread_s *t = p;
    t->result = t->fn(t->arg);
    return 0;
}

int fm_test_thread_create(fm_test_thread *out, void *(*fn)(void *), void *arg) {
    fm_test__say_kind();
    /* The process heap, not malloc: test_pool_backing counts malloc calls. */
    struct fm_test_thread_s *t = HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, sizeof *t);
    if (!t) return 1;
    t->fn = fn;
    t->arg = arg;
    if (fm_test__crt_threads())
        t->handle = (HANDLE)_beginthreadex(NULL, 0, fm_test__crt_main, t, 0, NULL);
    else
        t->handle = CreateThread(NULL, 0, fm_test__win32_main, t, 0, NULL);
    if (!t->handle) {
        HeapFree(GetProcessHeap(), 0, t);
        return 1;
    }
    *out = t;
    return 0;
}

int fm_test_thread_join(fm_test_thread t, void **result) {
    if (WaitForSingleObject(t->handle, INFINITE) != WAIT_OBJECT_0) return 1;
    CloseHandle(t->handle);
    if (result) *result = t->result;
    HeapFree(GetProcessHeap(), 0, t);
    return 0;
}

void fm_test_thread_yield(void) {
    if (!SwitchToThread()) Sleep(0);
}
void fm_test_sleep_ms(unsigned ms) { Sleep(ms); }

int fm_test_mutex_init(fm_test_mutex *m) {
    InitializeSRWLock(FM_TEST_SRW(&m->srw));
    return 0;
}
int fm_test_mutex_destroy(fm_test_mutex *m) {
    (void)m;
    return 0;
}
int fm_test_mutex_lock(fm_test_mutex *m) {
    AcquireSRWLockExclusive(FM_TEST_SRW(&m->srw));
    return 0;
}
int fm_test_mutex_unlock(fm_test_mutex *m) {
    ReleaseSRWLockExclusive(FM_TEST_SRW(&m->srw));
    return 0;
}

int fm_test_barrier_init(fm_test_barrier *b, unsigned count) {
    InitializeSRWLock(FM_TEST_SRW(&b->srw));
    InitializeConditionVariable(FM_TEST_CV(&b->cv));
    b->count = count;
    b->waiting = 0;
    b->round = 0;
    return 0;
}

int fm_test_barrier_wait(fm_test_barrier *b) {
    AcquireSRWLockExclusive(FM_TEST_SRW(&b->srw));
    unsigned round = b->round;
    if (++b->waiting == b->count) {
        b->waiting = 0;
        b->round++;
        WakeAllConditionVariable(FM_TEST_CV(&b->cv));
    } else {
        while (round == b->round) SleepConditionVariableSRW(FM_TEST_CV(&b->cv), FM_TEST_SRW(&b->srw), INFINITE, 0);
    }
    ReleaseSRWLockExclusive(FM_TEST_SRW(&b->srw));
    return 0;
}

int fm_test_barrier_destroy(fm_test_barrier *b) {
    (void)b;
    return 0;
}
#else
#include <sched.h>
#include <time.h>

const char *fm_test_thread_kind(void) { return "pthread"; }
void fm_test_sleep_ms(unsigned ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int fm_test_thread_create(fm_test_thread *t, void *(*fn)(void *), void *arg) {
    fm_test__say_kind();
    return pthread_create(t, NULL, fn, arg);
}
int fm_test_thread_join(fm_test_thread t, void **result) { return pthread_join(t, result); }
void fm_test_thread_yield(void) { sched_yield(); }

int fm_test_mutex_init(fm_test_mutex *m) { return pthread_mutex_init(m, NULL); }
int fm_test_mutex_destroy(fm_test_mutex *m) { return pthread_mutex_destroy(m); }
int fm_test_mutex_lock(fm_test_mutex *m) { return pthread_mutex_lock(m); }
int fm_test_mutex_unlock(fm_test_mutex *m) { return pthread_mutex_unlock(m); }

int fm_test_barrier_init(fm_test_barrier *b, unsigned count) {
    b->count = count;
    b->waiting = 0;
    b->round = 0;
    if (pthread_mutex_init(&b->lock, NULL) != 0) return 1;
    return pthread_cond_init(&b->cv, NULL);
}
int fm_test_barrier_wait(fm_test_barrier *b) {
    pthread_mutex_lock(&b->lock);
    unsigned round = b->round;
    if (++b->waiting == b->count) {
        b->waiting = 0;
        b->round++;
        pthread_cond_broadcast(&b->cv);
    } else {
        while (round == b->round) pthread_cond_wait(&b->cv, &b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    return 0;
}
int fm_test_barrier_destroy(fm_test_barrier *b) {
    pthread_cond_destroy(&b->cv);
    return pthread_mutex_destroy(&b->lock);
}
#endif
