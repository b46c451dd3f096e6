/* platform/os_posix.c: os.h on POSIX systems (Linux, the BSDs, macOS):
 * mmap reservations, mprotect commits, madvise for decommit, prefault and
 * transparent huge pages, posix_memalign for the C heap, CLOCK_MONOTONIC.
 * macOS: mach_absolute_time for the clock, a fresh PROT_NONE mapping over a
 * decommitted range (its MADV_DONTNEED leaves the pages resident), no
 * MADV_POPULATE_WRITE, no transparent huge pages, no /sys or /proc. The
 * macOS paths are compiled (not run) by tests/ports/check_darwin.sh. */
#include "platform/os.h"

#include "platform/thread.h"

#include "framemem/base.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <mach/mach_time.h>
#endif

#if defined(__linux__)
#include <fcntl.h>
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#include <sys/prctl.h>
#define FM__OS_THP 1
#endif

/* ------------------------------------------------------------ capabilities */

static fm__os_caps fm__os_caps_value;
static fm__once fm__os_caps_once = FM__ONCE_INIT;

#if defined(__linux__) && UINTPTR_MAX > 0xFFFFFFFFu
/* true when the kernel charges every writable private mapping against its
 * commit limit, MAP_NORESERVE or not (vm.overcommit_memory = 2). */
static bool fm__os_overcommit_strict(void) {
    int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true; /* unknown: take no window */
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    close(fd);
    return n != 1 || c == '2';
}
#endif

static void fm__os_caps_fill(void) {
    long p = sysconf(_SC_PAGESIZE);
    fm__os_caps_value = (fm__os_caps){
        .page_size = p > 0 ? (size_t)p : 4096,
        .has_virtual_reserve = true,
        .has_partial_release = true,
    };
#if defined(__linux__) && UINTPTR_MAX > 0xFFFFFFFFu
    if (!fm__os_overcommit_strict()) fm__os_caps_value.window_bytes = (size_t)1 << 30;
#endif
#ifdef FM__OS_THP
    fm__os_caps_value.huge_page_size = (size_t)2 << 20;
#endif
}

const fm__os_caps *fm__os_get_caps(void) {
    fm__call_once(&fm__os_caps_once, fm__os_caps_fill);
    return &fm__os_caps_value;
}

/* ----------------------------------------------------------- virtual memory */

/* An anonymous private mapping of bytes, read-write (commit) or reserved
 * only, at `at` as extra_flags say (0: where the kernel likes); MAP_FAILED
 * when refused. */
static void *fm__os_map(void *at, size_t bytes, bool commit, int extra_flags) {
    return mmap(at, bytes, commit ? PROT_READ | PROT_WRITE : PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1, 0);
}

void *fm__os_reserve(size_t bytes, size_t align, bool commit) {
    /* Over-reserve by the alignment less a page, then unmap both ends. */
    size_t page = fm__os_get_caps()->page_size;
    size_t slack = align > page ? align - page : 0;
    if (bytes == 0 || bytes > SIZE_MAX - slack) return NULL;
    /* Linux places anonymous mappings of whole 2 MiB multiples on a 2 MiB
     * boundary where it can (for huge pages): try the exact size first, one
     * system call instead of three (each a few us in a VM). */
    if (slack && align <= ((size_t)2 << 20) && bytes % ((size_t)2 << 20) == 0) {
        uint8_t *exact = fm__os_map(NULL, bytes, commit, 0);
        if (exact == MAP_FAILED) return NULL;
        if (fm_is_aligned(exact, align)) return exact;
        munmap(exact, bytes);
    }
    uint8_t *raw = fm__os_map(NULL, bytes + slack, commit, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *start = (uint8_t *)fm_align_up((uintptr_t)raw, align);
    size_t head = (size_t)(start - raw);
    size_t tail = slack - head;
    if (head) munmap(raw, head);
    if (tail) munmap(start + bytes, tail);
    return start;
}

void *fm__os_reserve_below(void *end, size_t bytes, size_t align, bool commit) {
    uintptr_t e = (uintptr_t)end & ~(uintptr_t)(align - 1);
    if (e && bytes && bytes % align == 0 && e > bytes) {
        uint8_t *want = (uint8_t *)(e - bytes);
#if defined(MAP_FIXED_NOREPLACE)
        int there = MAP_FIXED_NOREPLACE; /* fails (EEXIST) rather than move */
#else
        int there = 0;
#endif
        uint8_t *got = fm__os_map(want, bytes, commit, there);
        if (got == want) return got;
        /* Elsewhere: a kernel that takes the address as a hint only. */
        if (got != MAP_FAILED) munmap(got, bytes);
    }
    return fm__os_reserve(bytes, align, commit);
}

bool fm__os_commit(void *ptr, size_t bytes) {
    return mprotect(ptr, bytes, PROT_READ | PROT_WRITE) == 0;
}

void fm__os_decommit(void *ptr, size_t bytes) {
#if defined(__APPLE__)
    /* Darwin's MADV_DONTNEED is a hint that keeps the pages: a new mapping
     * in place drops them, and its pages come back zero-filled. */
    if (mmap(ptr, bytes, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANON, -1, 0) != MAP_FAILED)
        return;
#endif
    madvise(ptr, bytes, MADV_DONTNEED);
    mprotect(ptr, bytes, PROT_NONE);
}

void fm__os_release(void *ptr, size_t bytes) {
    if (ptr) munmap(ptr, bytes);
}

/* The kernel's faults in one call (Linux 5.14's MADV_POPULATE_WRITE; its
 * number for older headers), then a write to every page all the same: in a
 * VM (a Firecracker guest, fm-bench's regrowth and sparse experiments) a
 * page populated but never written by the CPU took about 4 us at its first
 * write, a cost the guest does not count as a fault. Populating first halves
 * what the writes cost there (4.7 against 10.4 us a 4 KiB page in fm-bench
 * sparse's "making pages resident"; bench/RESULTS.md, tenth session). */
void fm__os_prefault(void *ptr, size_t bytes) {
#ifdef MADV_HUGEPAGE
    /* Memory asked to be resident anyway may as well come in 2 MiB pages
     * where the kernel allows (THP "madvise" mode): fewer faults now and
     * fewer TLB misses when the slots are first used. Best effort. */
    if (bytes >= ((size_t)2 << 20)) madvise(ptr, bytes, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    madvise(ptr, bytes, MADV_POPULATE_WRITE);
#elif defined(__linux__)
    madvise(ptr, bytes, 23);
#endif
    size_t page = fm__os_get_caps()->page_size;
    volatile uint8_t *p = ptr;
    for (size_t off = 0; off < bytes; off += page) p[off] = p[off];
}

/* ------------------------------------------------------------- huge pages */

#ifdef FM__OS_THP
/* PR_SET_THP_DISABLE's flag (Linux 6.18) that keeps THP for madvised memory. */
#define FM__THP_DISABLE_EXCEPT_ADVISED 2
#endif

bool fm__os_huge_pages_usable(void) {
#ifdef FM__OS_THP
    /* THP mode "always" or "madvise", and not disabled for this process. */
    int off = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
    if (off > 0 && !(off & FM__THP_DISABLE_EXCEPT_ADVISED)) return false;
    char mode[128] = {0};
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false; /* a kernel without THP */
    ssize_t n = read(fd, mode, sizeof mode - 1);
    close(fd);
    return n > 0 && (strstr(mode, "[always]") || strstr(mode, "[madvise]"));
#else
    return false;
#endif
}

bool fm__os_advise_huge_pages(void *ptr, size_t bytes) {
#ifdef FM__OS_THP
    return madvise(ptr, bytes, MADV_HUGEPAGE) == 0;
#else
    (void)ptr, (void)bytes;
    return false;
#endif
}

/* ----------------------------------------------------------------- C heap */

void *fm__os_heap_alloc(size_t bytes, size_t align) {
    void *p = NULL;
    if (posix_memalign(&p, align, bytes ? bytes : 1) != 0) return NULL;
    return p;
}

void fm__os_heap_free(void *ptr) { free(ptr); }

/* ------------------------------------------------------------------ clock */

#if defined(__APPLE__)
static mach_timebase_info_data_t fm__os_timebase;
static fm__once fm__os_timebase_once = FM__ONCE_INIT;
static void fm__os_timebase_fill(void) { mach_timebase_info(&fm__os_timebase); }

/* mach_absolute_time ticks (1 ns on Intel Macs, 125/3 ns on Apple silicon)
 * scaled by the timebase, split so the multiply cannot overflow. */
uint64_t fm__os_now_ns(void) {
    fm__call_once(&fm__os_timebase_once, fm__os_timebase_fill);
    uint64_t t = mach_absolute_time(), n = fm__os_timebase.numer, d = fm__os_timebase.denom;
    return t / d * n + t % d * n / d;
}
#else
uint64_t fm__os_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif
