/* time.h (darwin_sdk_shim, not the SDK; see ../README.md): struct timespec
 * and clock_gettime (macOS 10.12 and later; clockid_t is an enum there,
 * CLOCK_MONOTONIC 6). framemem's macOS clock is mach_absolute_time. */
#ifndef FM_DARWIN_SHIM_TIME_H
#define FM_DARWIN_SHIM_TIME_H
#include <sys/_types.h>
typedef enum {
    _CLOCK_MONOTONIC = 6,
} clockid_t;
#define CLOCK_MONOTONIC _CLOCK_MONOTONIC
int clock_gettime(clockid_t clock_id, struct timespec *tp);
#endif
