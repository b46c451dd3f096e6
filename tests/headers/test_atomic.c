/* tests/headers/test_atomic.c: framemem/detail/atomic.h's operations on every
 * kind of word the library uses them on (32- and 64-bit integers, signed and
 * not, uintptr_t, pointers), one thread and then four at once.
 *
 * check_headers.sh builds it twice and both must pass: with the GNU
 * mapping (__atomic builtins), and with the Interlocked mapping that MSVC
 * and clang-cl use, which clang -fms-extensions compiles on Linux
 * (FM__ATOMIC_INTERLOCKED), so the MSVC spelling runs here, not only
 * compiles. In MSVC mode (no threads, nothing run) it is syntax-checked with
 * the other headers. Exit status: failed checks. */
#include "framemem/detail/atomic.h"

#include <stdio.h>
#include <string.h>

#include "check.h"
#if !defined(_WIN32)
#include <pthread.h>
#endif


typedef struct words {
    uint32_t u32;
    uint64_t u64;
    int64_t i64;
    uintptr_t up;
    void *p;
    unsigned char **pp;
} words;

static void test_each_operation_on_each_word(void) {
    words w;
    memset(&w, 0, sizeof w);
    unsigned char bytes[4];
    unsigned char *row = bytes;

    /* 32-bit: the top bit and wrap-around. */
    FM__ATOMIC_STORE(&w.u32, 0xFFFFFFFEu, RELAXED);
    CHECK(FM__ATOMIC_LOAD(&w.u32, ACQUIRE) == 0xFFFFFFFEu);
    CHECK(FM__ATOMIC_FETCH_ADD(&w.u32, 3, RELAXED) == 0xFFFFFFFEu && w.u32 == 1u);
    CHECK(FM__ATOMIC_FETCH_SUB(&w.u32, 2, ACQ_REL) == 1u && w.u32 == 0xFFFFFFFFu);
    CHECK(FM__ATOMIC_EXCHANGE(&w.u32, 5u, ACQ_REL) == 0xFFFFFFFFu && w.u32 == 5u);
    uint32_t e32 = 4;
    CHECK(!FM__ATOMIC_CAS_STRONG(&w.u32, &e32, 9u, ACQ_REL, ACQUIRE) && e32 == 5u && w.u32 == 5u);
    CHECK(FM__ATOMIC_CAS_STRONG(&w.u32, &e32, 9u, ACQ_REL, ACQUIRE) && w.u32 == 9u);
    FM__ATOMIC_STORE(&w.u32, 7u, SEQ_CST);
    CHECK(FM__ATOMIC_LOAD(&w.u32, SEQ_CST) == 7u);

    /* 64-bit: both halves kept (a 32-bit mapping would lose the top one). */
    const uint64_t big = 0x123456789ABCDEF0u;
    FM__ATOMIC_STORE(&w.u64, big, RELEASE);
    CHECK(FM__ATOMIC_LOAD(&w.u64, RELAXED) == big);
    CHECK(FM__ATOMIC_FETCH_ADD(&w.u64, 0x100000000u, RELAXED) == big);
    CHECK(w.u64 == big + 0x100000000u);
    CHECK(FM__ATOMIC_FETCH_SUB(&w.u64, 0x100000000u, RELAXED) == big + 0x100000000u);
    CHECK(FM__ATOMIC_EXCHANGE(&w.u64, UINT64_MAX, ACQ_REL) == big && w.u64 == UINT64_MAX);
    uint64_t e64 = big;
    CHECK(!FM__ATOMIC_CAS_WEAK(&w.u64, &e64, 1u, RELEASE, RELAXED) && e64 == UINT64_MAX);
    while (!FM__ATOMIC_CAS_WEAK(&w.u64, &e64, big, RELEASE, RELAXED)) {}
    CHECK(w.u64 == big);
    FM__ATOMIC_STORE(&w.u64, 3u, SEQ_CST);
    CHECK(w.u64 == 3u);

    /* Signed 64-bit: negative values come back as they went. */
    FM__ATOMIC_STORE(&w.i64, -5, RELAXED);
    CHECK(FM__ATOMIC_FETCH_ADD(&w.i64, 2, RELAXED) == -5 && FM__ATOMIC_LOAD(&w.i64, ACQUIRE) == -3);
    CHECK(FM__ATOMIC_FETCH_SUB(&w.i64, 1, RELAXED) == -3 && w.i64 == -4);
    int64_t ei = -4;
    CHECK(FM__ATOMIC_CAS_STRONG(&w.i64, &ei, INT64_MIN, ACQ_REL, ACQUIRE) && w.i64 == INT64_MIN);

    /* uintptr_t and pointers. */
    FM__ATOMIC_STORE(&w.up, (uintptr_t)row, RELEASE);
    CHECK(FM__ATOMIC_LOAD(&w.up, ACQUIRE) == (uintptr_t)row);
    CHECK(FM__ATOMIC_FETCH_ADD(&w.up, 1, RELAXED) == (uintptr_t)row && w.up == (uintptr_t)row + 1);
    FM__ATOMIC_STORE(&w.p, row, RELEASE);
    void *got = FM__ATOMIC_LOAD(&w.p, ACQUIRE);
    CHECK(got == (void *)row);
    void *old = FM__ATOMIC_EXCHANGE(&w.p, NULL, ACQ_REL);
    CHECK(old == (void *)row && w.p == NULL);
    void *ep = row;
    CHECK(!FM__ATOMIC_CAS_STRONG(&w.p, &ep, bytes + 1, ACQ_REL, ACQUIRE) && ep == NULL);
    CHECK(FM__ATOMIC_CAS_STRONG(&w.p, &ep, bytes + 1, ACQ_REL, ACQUIRE) && w.p == bytes + 1);
    FM__ATOMIC_STORE(&w.pp, &row, RELAXED);
    unsigned char **pp = FM__ATOMIC_LOAD(&w.pp, RELAXED);
    CHECK(pp == &row && *pp == bytes);
    unsigned char **epp = &row;
    CHECK(FM__ATOMIC_CAS_STRONG(&w.pp, &epp, NULL, ACQ_REL, RELAXED) && w.pp == NULL);
}

#if !defined(_WIN32)
/* Four threads: every increment counted, every CAS-built push kept. */
enum { THREADS = 4, ROUNDS = 100000 };
static uint64_t shared_adds;
static uint32_t shared_cas;
static uint64_t shared_stack; /* low 32 bits: pushes; high: a tag, as the pool's */

static void *hammer(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        FM__ATOMIC_FETCH_ADD(&shared_adds, 1, RELAXED);
        uint32_t seen = FM__ATOMIC_LOAD(&shared_cas, RELAXED);
        while (!FM__ATOMIC_CAS_WEAK(&shared_cas, &seen, seen + 1, ACQ_REL, RELAXED)) {}
        uint64_t head = FM__ATOMIC_LOAD(&shared_stack, ACQUIRE);
        uint64_t next;
        do {
            next = (head + 1) + ((uint64_t)1 << 32);
        } while (!FM__ATOMIC_CAS_WEAK(&shared_stack, &head, next, RELEASE, ACQUIRE));
    }
    return NULL;
}

static void test_threads_lose_no_update(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, hammer, NULL) == 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    const uint64_t n = (uint64_t)THREADS * ROUNDS;
    CHECK(FM__ATOMIC_LOAD(&shared_adds, SEQ_CST) == n);
    CHECK(FM__ATOMIC_LOAD(&shared_cas, SEQ_CST) == n);
    CHECK(FM__ATOMIC_LOAD(&shared_stack, SEQ_CST) == (n | n << 32));
}
#endif

int main(void) {
    test_each_operation_on_each_word();
#if !defined(_WIN32)
    test_threads_lose_no_update();
#endif
#if defined(FM__ATOMIC_INTERLOCKED) || defined(_MSC_VER)
    printf("atomics (Interlocked mapping): %d failed check(s)\n", failures);
#else
    printf("atomics (GNU mapping): %d failed check(s)\n", failures);
#endif
    return failures;
}
