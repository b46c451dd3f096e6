/* tests/headers/msvc_mode.h: force-included (-include) first by
 * check_headers.sh msvc, which compiles test_headers.c and test_atomic.c for
 * x86_64-, aarch64- and i686-pc-windows-msvc with -U__clang__: the compiler
 * then defines _MSC_VER and _WIN32 but neither __GNUC__ nor __clang__, as
 * MSVC does. The standard headers come in here; after them every GNU
 * spelling is poisoned, so framemem's headers compile only if they use
 * MSVC's (Interlocked, __forceinline, no attributes, no asm, no builtins)
 * and switch their inline paths off. */
#if !defined(_MSC_VER) || defined(__GNUC__) || defined(__clang__)
#error "not MSVC mode: _MSC_VER without __GNUC__ and __clang__ expected"
#endif

#include <intrin.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifndef __cplusplus
#include <stdalign.h>
#endif

#pragma GCC poison __attribute__ __thread __asm__ asm __extension__ __typeof__ __alignof__
#pragma GCC poison __builtin_expect __builtin_unreachable __builtin_clzll __builtin_memcpy
#pragma GCC poison __builtin_constant_p __builtin_add_overflow
#pragma GCC poison __atomic_load_n __atomic_store_n __atomic_fetch_add __atomic_fetch_sub
#pragma GCC poison __atomic_exchange_n __atomic_compare_exchange_n

/* And the headers' own GNU switches stay off (checked once they are in). */
#define FM_TEST_MSVC_MODE 1
