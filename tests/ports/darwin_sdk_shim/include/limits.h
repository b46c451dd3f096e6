/* limits.h (darwin_sdk_shim, not the SDK; see ../README.md): what Darwin's
 * adds (sys/syslimits.h) to the compiler's own limits.h, which includes
 * this one and defines the rest. */
#ifndef FM_DARWIN_SHIM_LIMITS_H
#define FM_DARWIN_SHIM_LIMITS_H
#define PATH_MAX 1024
#endif
