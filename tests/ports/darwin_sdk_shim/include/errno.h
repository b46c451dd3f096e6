/* errno.h (darwin_sdk_shim, not the SDK; see ../README.md): errno is the
 * thread's value behind __error(); the values are Darwin's. */
#ifndef FM_DARWIN_SHIM_ERRNO_H
#define FM_DARWIN_SHIM_ERRNO_H
int *__error(void);
#define errno (*__error())
#define ENOENT 2
#define EINTR 4
#define EIO 5
#define EACCES 13
#define EEXIST 17
#define ENOSPC 28
#define ERANGE 34
#define ENAMETOOLONG 63
#endif
