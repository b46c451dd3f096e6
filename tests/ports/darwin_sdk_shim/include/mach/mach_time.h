/* mach/mach_time.h (darwin_sdk_shim, not the SDK; see ../../README.md):
 * mach_absolute_time counts ticks of a clock that does not advance while
 * the machine sleeps; numer/denom from mach_timebase_info convert ticks to
 * nanoseconds (kern_return_t: 0 is KERN_SUCCESS). */
#ifndef FM_DARWIN_SHIM_MACH_MACH_TIME_H
#define FM_DARWIN_SHIM_MACH_MACH_TIME_H
#include <stdint.h>
typedef int kern_return_t;
struct mach_timebase_info {
    uint32_t numer;
    uint32_t denom;
};
typedef struct mach_timebase_info *mach_timebase_info_t;
typedef struct mach_timebase_info mach_timebase_info_data_t;
kern_return_t mach_timebase_info(mach_timebase_info_t info);
uint64_t mach_absolute_time(void);
#endif
