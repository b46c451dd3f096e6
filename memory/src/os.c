/* os.c: virtual memory for pool chunks and arenas. */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define FM__HAVE_MMAP 1
#endif

size_t fm__os_page_size(void) {
#ifdef FM__HAVE_MMAP
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
#else
    return 4096;
#endif
}

#ifdef FM__HAVE_MMAP
void *fm__os_reserve_aligned(size_t bytes, size_t align, bool writable) {
    /* Over-reserve by the alignment less a page, then unmap both ends. */
    size_t slack = align > fm__os_page_size() ? align - fm__os_page_size() : 0;
    if (bytes == 0 || bytes > SIZE_MAX - slack) return NULL;
    uint8_t *raw = mmap(NULL, bytes + slack, writable ? PROT_READ | PROT_WRITE : PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *start = (uint8_t *)fm_align_up((uintptr_t)raw, align);
    size_t head = (size_t)(start - raw);
    size_t tail = slack - head;
    if (head) munmap(raw, head);
    if (tail) munmap(start + bytes, tail);
    return start;
}

void *fm__os_map_aligned(size_t count, size_t block_bytes) {
    if (count == 0 || block_bytes == 0 || count > SIZE_MAX / block_bytes) return NULL;
    return fm__os_reserve_aligned(count * block_bytes, block_bytes, true);
}

void fm__os_unmap(void *ptr, size_t size) {
    if (ptr) munmap(ptr, size);
}

void fm__os_prefault(void *ptr, size_t size) {
#ifdef MADV_HUGEPAGE
    /* Memory asked to be resident anyway may as well come in 2 MiB pages
     * where the kernel allows (THP "madvise" mode): fewer faults now and
     * fewer TLB misses when the slots are first used. Best effort. */
    if (size >= ((size_t)2 << 20)) madvise(ptr, size, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    if (madvise(ptr, size, MADV_POPULATE_WRITE) == 0) return;
#else
    /* Linux 5.14's MADV_POPULATE_WRITE, for older headers. */
    if (madvise(ptr, size, 23) == 0) return;
#endif
    size_t page = fm__os_page_size();
    volatile uint8_t *p = ptr;
    for (size_t off = 0; off < size; off += page) p[off] = p[off];
}
#else
/* Without virtual memory the system allocator serves chunks directly. */
void *fm__os_reserve_aligned(size_t bytes, size_t align, bool writable) {
    (void)bytes, (void)align, (void)writable;
    return NULL;
}
void *fm__os_map_aligned(size_t count, size_t block_bytes) {
    (void)count, (void)block_bytes;
    return NULL;
}
void fm__os_unmap(void *ptr, size_t size) { (void)ptr, (void)size; }
void fm__os_prefault(void *ptr, size_t size) {
    volatile uint8_t *p = ptr;
    for (size_t off = 0; off < size; off += 4096) p[off] = p[off];
}
#endif
