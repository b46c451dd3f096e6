/* unistd.h (darwin_sdk_shim, not the SDK; see ../README.md): Darwin's
 * sysconf names are its own numbers (_SC_PAGESIZE is 29). Darwin declares
 * no fdatasync. */
#ifndef FM_DARWIN_SHIM_UNISTD_H
#define FM_DARWIN_SHIM_UNISTD_H
#include <sys/_types.h>
#define _SC_PAGESIZE 29
long sysconf(int name);
int close(int fd);
ssize_t read(int fd, void *buf, size_t nbyte);
int fsync(int fd);
int unlink(const char *path);
pid_t getpid(void);
#endif
