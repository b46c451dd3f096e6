/* platform/os.h: the one interface between framemem and the OS's memory and
 * time. One implementation per OS (os_posix.c: Linux, macOS, the BSDs;
 * os_win32.c): nothing else in memory/src includes an OS header for these.
 *
 * Callers ask fm__os_caps() what the OS can do instead of testing for the OS:
 * - has_virtual_reserve: address space can be reserved without memory and
 *   committed later (fm__os_reserve / fm__os_commit). Without it, pools and
 *   arenas take every byte from the desc's fm_allocator.
 * - has_partial_release: any page-aligned part of a reservation can be
 *   released on its own (munmap; VirtualFree cannot). A pool's growth maps
 *   its new chunks in one reservation either way and trims them one by one:
 *   released where the OS has it, decommitted elsewhere, the reservation
 *   released whole with its last chunk (pool/chunks.c, fm__span).
 * - huge_page_size: the size of a transparent huge page where the OS has
 *   them (0 otherwise); fm__os_huge_pages_usable says whether they may be
 *   used now.
 * - window_bytes: address space a pool may map readable and writable ahead
 *   of its growths, which takes no memory and no commit charge until its
 *   pages are touched (Linux, 64-bit, overcommit not strict); 0 where that
 *   does not hold (pool/chunks.c, fm__window). */
#ifndef FRAMEMEM_PLATFORM_OS_H
#define FRAMEMEM_PLATFORM_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fm__os_caps {
    size_t page_size;         /* commit and protection granularity */
    size_t huge_page_size;    /* 0: no huge pages on this OS */
    bool has_virtual_reserve; /* reserve now, commit later */
    bool has_partial_release; /* release part of a reservation */
    size_t window_bytes;      /* 0: no growth windows */
} fm__os_caps;

/* What the OS offers; filled on first use, constant afterwards. */
const fm__os_caps *fm__os_get_caps(void);

/* bytes of address space starting at a multiple of align (a power of two;
 * the page size or more), or NULL when the OS refuses. commit: readable and
 * writable at once (pages come in zero-filled on first touch); otherwise
 * inaccessible until fm__os_commit. */
void *fm__os_reserve(size_t bytes, size_t align, bool commit);
/* fm__os_reserve's, placed to end at `end` rounded down to align (bytes a
 * multiple of align) where that range is free: one system call where
 * fm__os_reserve may need three to align (POSIX; Windows reserves aligned in
 * one already, and takes no hint). A pool's next growth asks for the range
 * below its last: where Linux places anonymous mappings top-down, that is
 * where the next one goes anyway, less the alignment. NULL end:
 * fm__os_reserve. */
void *fm__os_reserve_below(void *end, size_t bytes, size_t align, bool commit);
/* Makes reserved pages readable and writable; false when the OS refuses. */
bool fm__os_commit(void *ptr, size_t bytes);
/* Gives the memory of committed pages back and makes them inaccessible (the
 * address space stays reserved; a later commit brings zero-filled pages). */
void fm__os_decommit(void *ptr, size_t bytes);
/* Returns address space from fm__os_reserve (all of it, or, where
 * has_partial_release, any page-aligned part). NULL: no-op. */
void fm__os_release(void *ptr, size_t bytes);
/* Makes the pages of committed memory resident now (best effort): writes
 * one byte of each page (unchanged), so only memory no other thread uses. */
void fm__os_prefault(void *ptr, size_t bytes);

/* Whether memory advised with fm__os_advise_huge_pages gets huge pages now
 * (the system setting and the process's can change while it runs). */
bool fm__os_huge_pages_usable(void);
/* Asks for huge pages over a reservation; false when the OS refused. */
bool fm__os_advise_huge_pages(void *ptr, size_t bytes);

/* The C heap with alignment (the zero fm_allocator): bytes aligned to align
 * (a power of two, at least pointer alignment), freed only by
 * fm__os_heap_free. NULL when refused. */
void *fm__os_heap_alloc(size_t bytes, size_t align);
void fm__os_heap_free(void *ptr);

/* A monotonic clock in nanoseconds (fm_clock's calibration and fallback). */
uint64_t fm__os_now_ns(void);

#endif /* FRAMEMEM_PLATFORM_OS_H */
