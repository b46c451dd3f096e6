/*
 * framemem/clock.h: a cheap monotonic cycle clock for timing allocations.
 *
 * Step by step:
 *
 *     fm_clock_init();                         // once, outside timed code
 *     uint64_t t0 = fm_clock_now();
 *     spawn_wave();
 *     uint64_t ns = fm_clock_to_ns(fm_clock_now() - t0);
 *
 * x86-64 and i686: rdtsc (the invariant TSC), calibrated once against the
 * OS's monotonic clock; arm64: the virtual counter CNTVCT_EL0 and its
 * frequency register; elsewhere: the monotonic clock in nanoseconds
 * (FM_CLOCK_IS_NS).
 * Calibration runs once per process (about 2 ms, thread-safe) on the first call
 * to fm_clock_to_ns or fm_clock_init; pools call fm_clock_init at create so
 * it never lands inside a timed allocation.
 */
#ifndef FRAMEMEM_CLOCK_H
#define FRAMEMEM_CLOCK_H

#include <stdint.h>

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The current tick count (GNU compilers read the counter inline).
FM_API uint64_t fm_clock_now(void);
/// Calibrates the tick rate once; cheap after the first call. Thread-safe.
FM_API void fm_clock_init(void);
/// Converts a tick difference to nanoseconds.
FM_API uint64_t fm_clock_to_ns(uint64_t ticks);
/// Ticks per second as calibrated.
FM_API double fm_clock_ticks_per_sec(void);
/// Name of the source: "rdtsc", "cntvct" or "clock_gettime".
FM_API const char *fm_clock_source(void);

#ifdef __cplusplus
}
#endif

#include "framemem/detail/clock.h"

#endif /* FRAMEMEM_CLOCK_H */
