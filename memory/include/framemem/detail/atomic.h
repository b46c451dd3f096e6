/*
 * framemem/detail/atomic.h: the one spelling of atomic operations in
 * framemem. Private (FM__ names); it sits with the public headers only
 * because their inline fast paths, which the library runs too, use it.
 *
 * Operations act on plain integer and pointer objects (never _Atomic types),
 * so the structs that the inline paths and the library share read the same
 * in C and C++ and can map to MSVC's Interlocked functions and volatile
 * accesses. The memory order is the last argument, one of RELAXED, ACQUIRE,
 * RELEASE, ACQ_REL, SEQ_CST:
 *
 *     uint64_t head = FM__ATOMIC_LOAD(&p->head, ACQUIRE);
 *     FM__ATOMIC_STORE(&e->count, n, RELAXED);
 *     if (FM__ATOMIC_CAS_WEAK(&p->head, &head, next, RELEASE, RELAXED)) ...
 *
 * Relaxed loads and stores are plain moves on every target framemem runs
 * on; they mark words that another thread may read or write at the same
 * time, so the compiler neither tears nor invents accesses to them.
 *
 * GNU compilers (gcc, clang) use the __atomic builtins; MSVC and clang-cl
 * the Interlocked intrinsics (below).
 */
#ifndef FRAMEMEM_DETAIL_ATOMIC_H
#define FRAMEMEM_DETAIL_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(FM__ATOMIC_INTERLOCKED)
#define FM__MO_RELAXED __ATOMIC_RELAXED
#define FM__MO_ACQUIRE __ATOMIC_ACQUIRE
#define FM__MO_RELEASE __ATOMIC_RELEASE
#define FM__MO_ACQ_REL __ATOMIC_ACQ_REL
#define FM__MO_SEQ_CST __ATOMIC_SEQ_CST

#define FM__ATOMIC_LOAD(ptr, order) __atomic_load_n((ptr), FM__MO_##order)
#define FM__ATOMIC_STORE(ptr, value, order) __atomic_store_n((ptr), (value), FM__MO_##order)
/* The value before the operation. */
#define FM__ATOMIC_FETCH_ADD(ptr, value, order) __atomic_fetch_add((ptr), (value), FM__MO_##order)
#define FM__ATOMIC_FETCH_SUB(ptr, value, order) __atomic_fetch_sub((ptr), (value), FM__MO_##order)
#define FM__ATOMIC_EXCHANGE(ptr, value, order) __atomic_exchange_n((ptr), (value), FM__MO_##order)
/* true when *ptr held *expected and now holds desired; otherwise *expected
 * is what *ptr held. The weak form may fail spuriously (use it in loops). */
#define FM__ATOMIC_CAS_WEAK(ptr, expected, desired, ok_order, fail_order)                       \
    __atomic_compare_exchange_n((ptr), (expected), (desired), 1, FM__MO_##ok_order,              \
                                FM__MO_##fail_order)
#define FM__ATOMIC_CAS_STRONG(ptr, expected, desired, ok_order, fail_order)                     \
    __atomic_compare_exchange_n((ptr), (expected), (desired), 0, FM__MO_##ok_order,              \
                                FM__MO_##fail_order)
#elif defined(_MSC_VER) || defined(FM__ATOMIC_INTERLOCKED)
/* MSVC and clang-cl (and clang -fms-extensions with FM__ATOMIC_INTERLOCKED,
 * so that tests/headers/test_atomic.c runs this mapping on Linux): the
 * Interlocked intrinsics for read-modify-writes (full barriers on x86, x64
 * and ARM64, so any order asked is kept); loads and stores of aligned words
 * as volatile accesses, single instructions that neither tear nor vanish,
 * with the fence an order needs after a load or before a store: a compiler
 * barrier on x86 and x64 (whose loads acquire and stores release), dmb ish
 * on ARM64. SEQ_CST stores exchange. 32-bit x86 reads and writes 8-byte
 * words with cmpxchg8b. Words of 4 and 8 bytes: integers and object
 * pointers (C: _Generic on the word's type, C11; C++: overloads); a pointer
 * loaded in C comes back as void *. */
#include <limits.h>
#ifdef _MSC_VER
#include <intrin.h>
#endif /* (clang -fms-extensions elsewhere knows the intrinsics without it) */

/* The words the Interlocked functions take: long (32 bits on Windows; on an
 * LP64 target clang -fms-extensions gives them int) and __int64. */
#if ULONG_MAX == 0xffffffffu
typedef long fm__il_w32;
#else
typedef int fm__il_w32;
#endif
typedef long long fm__il_w64;

#define FM__MO_RELAXED 0
#define FM__MO_ACQUIRE 2
#define FM__MO_RELEASE 3
#define FM__MO_ACQ_REL 4
#define FM__MO_SEQ_CST 5

#if defined(_M_ARM64) || defined(_M_ARM)
#define FM__IL_FENCE() __dmb(0xB) /* _ARM64_BARRIER_ISH */
#else
#define FM__IL_FENCE() _ReadWriteBarrier()
#endif

/* The operations on one word size: bits, the intrinsics' suffix (none for
 * 32, 64 for 64) and their word type. */
#define FM__IL_CAS(bits, sfx, w)                                                              \
    static __forceinline bool fm__il_cas##bits(volatile void *p, void *expected,              \
                                               uint##bits##_t desired) {                      \
        uint##bits##_t want = *(uint##bits##_t *)expected;                                    \
        uint##bits##_t seen = (uint##bits##_t)_InterlockedCompareExchange##sfx(               \
            (volatile w *)p, (w)desired, (w)want);                                            \
        if (seen == want) return true;                                                        \
        *(uint##bits##_t *)expected = seen;                                                   \
        return false;                                                                         \
    }
#define FM__IL_WORD(bits, sfx, w)                                                             \
    static __forceinline uint##bits##_t fm__il_load##bits(const volatile void *p, int mo) {   \
        uint##bits##_t v = *(const volatile uint##bits##_t *)p;                               \
        if (mo != FM__MO_RELAXED) FM__IL_FENCE();                                             \
        return v;                                                                             \
    }                                                                                         \
    static __forceinline void fm__il_store##bits(volatile void *p, uint##bits##_t v, int mo) { \
        if (mo == FM__MO_SEQ_CST) {                                                           \
            _InterlockedExchange##sfx((volatile w *)p, (w)v);                                 \
            return;                                                                           \
        }                                                                                     \
        if (mo != FM__MO_RELAXED) FM__IL_FENCE();                                             \
        *(volatile uint##bits##_t *)p = v;                                                    \
    }                                                                                         \
    static __forceinline uint##bits##_t fm__il_add##bits(volatile void *p, uint##bits##_t v,  \
                                                         int mo) {                            \
        (void)mo;                                                                             \
        return (uint##bits##_t)_InterlockedExchangeAdd##sfx((volatile w *)p, (w)v);           \
    }                                                                                         \
    static __forceinline uint##bits##_t fm__il_xchg##bits(volatile void *p, uint##bits##_t v, \
                                                          int mo) {                           \
        (void)mo;                                                                             \
        return (uint##bits##_t)_InterlockedExchange##sfx((volatile w *)p, (w)v);              \
    }                                                                                         \
    FM__IL_CAS(bits, sfx, w)

FM__IL_WORD(32, , fm__il_w32)
#if !defined(_M_IX86)
FM__IL_WORD(64, 64, fm__il_w64)
#else
/* x86: one 8-byte access takes cmpxchg8b, the one 64-bit intrinsic there. */
FM__IL_CAS(64, 64, fm__il_w64)
static __forceinline uint64_t fm__il_load64(const volatile void *p, int mo) {
    (void)mo;
    return (uint64_t)_InterlockedCompareExchange64((volatile fm__il_w64 *)p, 0, 0);
}
static __forceinline uint64_t fm__il_xchg64(volatile void *p, uint64_t v, int mo) {
    uint64_t old = fm__il_load64(p, mo);
    while (!fm__il_cas64(p, &old, v)) {}
    return old;
}
static __forceinline void fm__il_store64(volatile void *p, uint64_t v, int mo) {
    fm__il_xchg64(p, v, mo);
}
static __forceinline uint64_t fm__il_add64(volatile void *p, uint64_t v, int mo) {
    uint64_t old = fm__il_load64(p, mo);
    while (!fm__il_cas64(p, &old, old + v)) {}
    return old;
}
#endif
#undef FM__IL_WORD
#undef FM__IL_CAS

/* Object pointers: the word of their size. */
#if UINTPTR_MAX > 0xffffffffu
#define FM__IL_PTR(op) fm__il_##op##64
#else
#define FM__IL_PTR(op) fm__il_##op##32
#endif
static __forceinline void *fm__il_loadptr(const volatile void *p, int mo) {
    return (void *)(uintptr_t)FM__IL_PTR(load)(p, mo);
}
static __forceinline void fm__il_storeptr(volatile void *p, const void *v, int mo) {
    FM__IL_PTR(store)(p, (uintptr_t)v, mo);
}
static __forceinline void *fm__il_xchgptr(volatile void *p, const void *v, int mo) {
    return (void *)(uintptr_t)FM__IL_PTR(xchg)(p, (uintptr_t)v, mo);
}
static __forceinline bool fm__il_casptr(volatile void *p, void *expected, const void *desired) {
    return FM__IL_PTR(cas)(p, expected, (uintptr_t)desired);
}
/* As the __atomic builtins: bytes, not scaled by the pointed-to size. */
static __forceinline void *fm__il_addptr(volatile void *p, intptr_t v, int mo) {
    return (void *)(uintptr_t)FM__IL_PTR(add)(p, (uintptr_t)v, mo);
}

#ifdef __cplusplus
/* One overload per integer type, each returning its own type; a template
 * for pointers. */
extern "C++" {
template <class T> struct fm__il_same { typedef T type; };
#define FM__IL_INT(T, bits)                                                                   \
    static __forceinline T fm__il_load(const volatile T *p, int mo) {                         \
        return (T)fm__il_load##bits(p, mo);                                                   \
    }                                                                                         \
    static __forceinline void fm__il_store(volatile T *p, T v, int mo) {                      \
        fm__il_store##bits(p, (uint##bits##_t)v, mo);                                         \
    }                                                                                         \
    static __forceinline T fm__il_add(volatile T *p, T v, int mo) {                           \
        return (T)fm__il_add##bits(p, (uint##bits##_t)v, mo);                                 \
    }                                                                                         \
    static __forceinline T fm__il_xchg(volatile T *p, T v, int mo) {                          \
        return (T)fm__il_xchg##bits(p, (uint##bits##_t)v, mo);                                \
    }                                                                                         \
    static __forceinline bool fm__il_cas(volatile T *p, T *expected, T desired) {             \
        return fm__il_cas##bits(p, expected, (uint##bits##_t)desired);                       \
    }
FM__IL_INT(int, 32)
FM__IL_INT(unsigned int, 32)
#if ULONG_MAX == 0xffffffffu
FM__IL_INT(long, 32)
FM__IL_INT(unsigned long, 32)
#else
FM__IL_INT(long, 64)
FM__IL_INT(unsigned long, 64)
#endif
FM__IL_INT(long long, 64)
FM__IL_INT(unsigned long long, 64)
#undef FM__IL_INT
template <class T> static __forceinline T *fm__il_load(T *const volatile *p, int mo) {
    return (T *)fm__il_loadptr(p, mo);
}
template <class T>
static __forceinline void fm__il_store(T *volatile *p, typename fm__il_same<T *>::type v, int mo) {
    fm__il_storeptr(p, (const void *)v, mo);
}
template <class T>
static __forceinline T *fm__il_xchg(T *volatile *p, typename fm__il_same<T *>::type v, int mo) {
    return (T *)fm__il_xchgptr(p, (const void *)v, mo);
}
template <class T>
static __forceinline bool fm__il_cas(T *volatile *p, T **expected,
                                     typename fm__il_same<T *>::type desired) {
    return fm__il_casptr(p, expected, (const void *)desired);
}
}
#define FM__IL_OP(op, word) fm__il_##op
#else
/* C11: the function for the word's type; signed words come back signed. */
#define FM__IL_SIGNED(bits)                                                                   \
    static __forceinline int##bits##_t fm__il_load##bits##s(const volatile void *p, int mo) { \
        return (int##bits##_t)fm__il_load##bits(p, mo);                                       \
    }                                                                                         \
    static __forceinline void fm__il_store##bits##s(volatile void *p, int##bits##_t v,        \
                                                    int mo) {                                 \
        fm__il_store##bits(p, (uint##bits##_t)v, mo);                                         \
    }                                                                                         \
    static __forceinline int##bits##_t fm__il_add##bits##s(volatile void *p, int##bits##_t v, \
                                                           int mo) {                          \
        return (int##bits##_t)fm__il_add##bits(p, (uint##bits##_t)v, mo);                     \
    }                                                                                         \
    static __forceinline int##bits##_t fm__il_xchg##bits##s(volatile void *p,                 \
                                                            int##bits##_t v, int mo) {        \
        return (int##bits##_t)fm__il_xchg##bits(p, (uint##bits##_t)v, mo);                    \
    }                                                                                         \
    static __forceinline bool fm__il_cas##bits##s(volatile void *p, void *expected,           \
                                                  int##bits##_t desired) {                    \
        return fm__il_cas##bits(p, expected, (uint##bits##_t)desired);                        \
    }
FM__IL_SIGNED(32)
FM__IL_SIGNED(64)
#undef FM__IL_SIGNED
#if ULONG_MAX == 0xffffffffu
#define FM__IL_LONG(op, s) fm__il_##op##32##s
#else
#define FM__IL_LONG(op, s) fm__il_##op##64##s
#endif
#define FM__IL_OP(op, word)                                                                   \
    _Generic(*(word), int: fm__il_##op##32s, unsigned int: fm__il_##op##32,                    \
             long: FM__IL_LONG(op, s), unsigned long: FM__IL_LONG(op, ),                      \
             long long: fm__il_##op##64s, unsigned long long: fm__il_##op##64,                \
             default: fm__il_##op##ptr)
#endif

#define FM__ATOMIC_LOAD(ptr, order) FM__IL_OP(load, ptr)((ptr), FM__MO_##order)
#define FM__ATOMIC_STORE(ptr, value, order) FM__IL_OP(store, ptr)((ptr), (value), FM__MO_##order)
#define FM__ATOMIC_FETCH_ADD(ptr, value, order) FM__IL_OP(add, ptr)((ptr), (value), FM__MO_##order)
#define FM__ATOMIC_FETCH_SUB(ptr, value, order)                                                 \
    FM__IL_OP(add, ptr)((ptr), 0 - (value), FM__MO_##order)
#define FM__ATOMIC_EXCHANGE(ptr, value, order) FM__IL_OP(xchg, ptr)((ptr), (value), FM__MO_##order)
/* Interlocked compare-exchange never fails spuriously: weak and strong are one. */
#define FM__ATOMIC_CAS_WEAK(ptr, expected, desired, ok_order, fail_order)                       \
    FM__IL_OP(cas, ptr)((ptr), (expected), (desired))
#define FM__ATOMIC_CAS_STRONG(ptr, expected, desired, ok_order, fail_order)                     \
    FM__IL_OP(cas, ptr)((ptr), (expected), (desired))
#else
#error "framemem: no atomics mapping for this compiler yet (detail/atomic.h)"
#endif

#endif /* FRAMEMEM_DETAIL_ATOMIC_H */
