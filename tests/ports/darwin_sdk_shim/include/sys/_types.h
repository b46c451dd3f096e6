/* sys/_types.h (darwin_sdk_shim, not the SDK; see ../../README.md): the LP64
 * types that several of Apple's headers share, as Darwin defines them. */
#ifndef FM_DARWIN_SHIM_SYS__TYPES_H
#define FM_DARWIN_SHIM_SYS__TYPES_H
#include <stddef.h>
#include <stdint.h>
typedef int32_t dev_t;
typedef uint16_t mode_t;
typedef uint16_t nlink_t;
typedef uint64_t ino_t; /* 64-bit inodes (__DARWIN_64_BIT_INO_T) */
typedef uint32_t uid_t;
typedef uint32_t gid_t;
typedef int64_t off_t;
typedef int64_t blkcnt_t;
typedef int32_t blksize_t;
typedef int32_t pid_t;
typedef long ssize_t;
typedef long time_t;
struct timespec {
    time_t tv_sec;
    long tv_nsec;
};
#endif
