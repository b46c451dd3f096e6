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
 */
#ifndef FRAMEMEM_DETAIL_ATOMIC_H
#define FRAMEMEM_DETAIL_ATOMIC_H

#if defined(__GNUC__) || defined(__clang__)
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
#else
#error "framemem: no atomics mapping for this compiler yet (detail/atomic.h)"
#endif

#endif /* FRAMEMEM_DETAIL_ATOMIC_H */
