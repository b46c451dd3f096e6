/* sys/mman.h (darwin_sdk_shim, not the SDK; see ../../README.md): Darwin's
 * protection, mapping and advice values. Darwin has MAP_ANON (0x1000;
 * MAP_ANONYMOUS is its alias) and MAP_NORESERVE (0x40, accepted and
 * ignored); it has no MADV_HUGEPAGE and no MADV_POPULATE_WRITE, and its
 * MADV_DONTNEED (4) may leave the pages resident. */
#ifndef FM_DARWIN_SHIM_SYS_MMAN_H
#define FM_DARWIN_SHIM_SYS_MMAN_H
#include <sys/_types.h>
#define PROT_NONE 0x00
#define PROT_READ 0x01
#define PROT_WRITE 0x02
#define MAP_PRIVATE 0x0002
#define MAP_FIXED 0x0010
#define MAP_NORESERVE 0x0040
#define MAP_ANON 0x1000
#define MAP_ANONYMOUS MAP_ANON
#define MAP_FAILED ((void *)-1)
#define MADV_DONTNEED 4
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
int munmap(void *addr, size_t len);
int mprotect(void *addr, size_t len, int prot);
int madvise(void *addr, size_t len, int advice);
#endif
