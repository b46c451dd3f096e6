/* fcntl.h (darwin_sdk_shim, not the SDK; see ../README.md): open and fcntl
 * with Darwin's flag values (O_NONBLOCK 0x4, O_CREAT 0x200, O_CLOEXEC
 * 0x1000000...) and F_FULLFSYNC (51), which asks the drive to flush its
 * cache. */
#ifndef FM_DARWIN_SHIM_FCNTL_H
#define FM_DARWIN_SHIM_FCNTL_H
#include <sys/_types.h>
#define O_RDONLY 0x0000
#define O_WRONLY 0x0001
#define O_NONBLOCK 0x0004
#define O_CREAT 0x0200
#define O_EXCL 0x0800
#define O_NOCTTY 0x20000
#define O_DIRECTORY 0x100000
#define O_CLOEXEC 0x1000000
#define F_FULLFSYNC 51
int open(const char *path, int oflag, ...);
int fcntl(int fd, int cmd, ...);
#endif
