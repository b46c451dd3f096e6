/*
 * framemem/clock.h: a cheap monotonic cycle clock for timing allocations.
 *
 * x86-64: rdtsc (the invariant TSC), calibrated once against CLOCK_MONOTONIC;
 * arm64: the virtual counter CNTVCT_EL0 and its frequency register;
 * elsewhere: clock_gettime(CLOCK_MONOTONIC) in nanoseconds.
 * Calibration runs once per process (about 2 ms, thread-safe) on the first call
 * to fm_clock_to_ns or fm_clock_init; pools call fm_clock_init at create so
 * it never lands inside a timed allocation.
 */
#ifndef FRAMEMEM_CLOCK_H
#define FRAMEMEM_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static inline uint64_t fm_clock_now(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
static inline uint64_t fm_clock_now(void) {
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#else
/// Current tick count (nanoseconds on this platform).
uint64_t fm_clock_now(void);
#define FM_CLOCK_IS_NS 1
#endif

/// Calibrates the tick rate once; cheap after the first call. Thread-safe.
void fm_clock_init(void);
/// Converts a tick difference to nanoseconds.
uint64_t fm_clock_to_ns(uint64_t ticks);
/// Ticks per second as calibrated.
double fm_clock_ticks_per_sec(void);
/// Name of the source: "rdtsc", "cntvct" or "clock_gettime".
const char *fm_clock_source(void);

#ifdef __cplusplus
}
#endif
#endif /* FRAMEMEM_CLOCK_H */
