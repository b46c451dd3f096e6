/* tests/support/fm_test_alloc.c: the counting, fault-injecting allocator. */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L

#include "fm_test_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <malloc.h>
#else
#include <sys/mman.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define FM_TEST__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FM_TEST__ASAN 1
#endif
#endif
#ifdef FM_TEST__ASAN
#include <sanitizer/asan_interface.h>
#define FM_TEST__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define FM_TEST__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FM_TEST__POISON(p, n) ((void)(p), (void)(n))
#define FM_TEST__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define FM_TEST__PRINTF(f, a) FM__PRINTF_LIKE(f, a)

/* Alignments above this come from mmap. */
#define FM_TEST__MMAP_ALIGN ((size_t)1 << 20)
/* What the cache keeps: blocks of at least CACHE_MIN bytes, CACHE_BYTES in all. */
#define FM_TEST__CACHE_MIN ((size_t)4096)
#define FM_TEST__CACHE_BYTES ((size_t)64 << 20)
#define FM_TEST__PAGE ((size_t)4096)

/* A contract violation: counted, kept and printed (called with the lock held). */
FM_TEST__PRINTF(2, 3) static void fm_test__problem(fm_test_allocator *a, const char *fmt, ...) {
    a->errors++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->last_problem, sizeof a->last_problem, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fm_test_allocator: %s\n", a->last_problem);
    if (a->abort_on_problem) {
        fprintf(stderr, "  (framemem last error %s: %s)\n", fm_error_name(fm_last_error()),
                fm_last_error_message());
        fflush(stderr);
        abort();
    }
}

/* ------------------------------------------------------------ raw blocks */

static size_t fm_test__pages(size_t size) {
    return (size + FM_TEST__PAGE - 1) & ~(FM_TEST__PAGE - 1);
}
static size_t fm_test__real_align(size_t align) {
    return align < sizeof(void *) ? sizeof(void *) : align;
}

#ifdef _WIN32
/* Windows cannot give back part of a reservation: reserve more, release it
 * and reserve again at the aligned address inside it. */
static void *fm_test__map_aligned(size_t size, size_t align) {
    size = fm_test__pages(size);
    if (size > SIZE_MAX - align) return NULL;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint8_t *raw = VirtualAlloc(NULL, size + align, MEM_RESERVE, PAGE_NOACCESS);
        if (!raw) return NULL;
        uint8_t *p = (uint8_t *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
        VirtualFree(raw, 0, MEM_RELEASE);
        if (VirtualAlloc(p, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE) == p) return p;
    }
    return NULL;
}
static void fm_test__unmap(void *p, size_t size) {
    (void)size;
    VirtualFree(p, 0, MEM_RELEASE);
}

void *fm_test_aligned_alloc(size_t align, size_t size) {
    return _aligned_malloc(size ? size : 1, align);
}
void fm_test_aligned_free(void *p) { _aligned_free(p); }
#else
static void fm_test__unmap(void *p, size_t size) { munmap(p, size); }

void *fm_test_aligned_alloc(size_t align, size_t size) {
    void *p = NULL;
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}
void fm_test_aligned_free(void *p) { free(p); }

/* size bytes aligned to align from the OS; the slack around the aligned part
 * goes straight back, so munmap(p, pages(size)) frees it all. */
static void *fm_test__map_aligned(size_t size, size_t align) {
    size = fm_test__pages(size);
    if (size > SIZE_MAX - align) return NULL;
    size_t bytes = size + align;
    uint8_t *raw = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + bytes - (p + size));
    if (tail) munmap(p + size, tail);
    return p;
}
#endif

static void *fm_test__raw_alloc(size_t size, size_t align) {
    size_t real = fm_test__real_align(align);
    if (real > FM_TEST__MMAP_ALIGN) return fm_test__map_aligned(size ? size : 1, real);
    return fm_test_aligned_alloc(real, size);
}

static void fm_test__raw_free(void *p, size_t size, size_t align) {
    if (fm_test__real_align(align) > FM_TEST__MMAP_ALIGN)
        fm_test__unmap(p, fm_test__pages(size ? size : 1));
    else
        fm_test_aligned_free(p);
}

/* ----------------------------------------------------------------- cache */

/* A cached block of exactly size bytes aligned to align, unpoisoned; NULL if none. */
static void *fm_test__cache_take(fm_test_allocator *a, size_t size, size_t align) {
    for (size_t i = 0; i < a->cached_count; i++) {
        fm_test_block *c = &a->cached[i];
        if (c->size != size || !fm_is_aligned(c->ptr, fm_test__real_align(align))) continue;
        void *p = c->ptr;
        a->cached_bytes -= size;
        *c = a->cached[--a->cached_count];
        FM_TEST__UNPOISON(p, size);
        return p;
    }
    return NULL;
}

/* Keeps a freed block for reuse, or frees it. */
static void fm_test__cache_put(fm_test_allocator *a, fm_test_block b) {
    bool keep = a->cache && b.size >= FM_TEST__CACHE_MIN &&
                fm_test__real_align(b.align) <= FM_TEST__MMAP_ALIGN &&
                a->cached_count < FM_TEST_CACHE_BLOCKS &&
                a->cached_bytes + b.size <= FM_TEST__CACHE_BYTES;
    if (!keep) {
        fm_test__raw_free(b.ptr, b.size, b.align);
        return;
    }
    FM_TEST__POISON(b.ptr, b.size);
    a->cached[a->cached_count++] = b;
    a->cached_bytes += b.size;
}

/* ------------------------------------------------------------ alloc, free */

/* Garbage, not zeros: every byte, or the first fill_limit bytes and the last page. */
static void fm_test__fill(const fm_test_allocator *a, uint8_t *p, size_t size) {
    size_t head = a->fill_limit && a->fill_limit < size ? a->fill_limit : size;
    memset(p, 0xA5, head);
    size_t rest = size - head;
    if (rest > FM_TEST__PAGE) memset(p + size - FM_TEST__PAGE, 0xA5, FM_TEST__PAGE);
    else memset(p + head, 0xA5, rest);
}

/* Whether this call is refused (injected or over a limit). */
static bool fm_test__refused(const fm_test_allocator *a, size_t size) {
    bool injected = a->fail_at != 0 && (a->alloc_calls == a->fail_at ||
                                        (a->fail_after && a->alloc_calls > a->fail_at));
    return injected || (a->max_block && size > a->max_block) ||
           (a->max_live && size > a->max_live - a->live_bytes);
}

static void *fm_test__alloc_locked(fm_test_allocator *a, size_t size, size_t align) {
    a->alloc_calls++;
    if (!FM_IS_POW2(align)) {
        fm_test__problem(a, "backing alloc(%zu) with alignment %zu, not a power of two", size,
                         align);
        return NULL;
    }
    if (a->fatal_above && size > a->fatal_above) {
        fm_test__problem(a, "backing alloc(%zu) above the object's limit of %zu bytes", size,
                         a->fatal_above);
        a->failed_calls++;
        return NULL;
    }
    if (fm_test__refused(a, size)) {
        a->failed_calls++;
        return NULL;
    }
    if (a->block_count == a->block_cap) {
        size_t cap = a->block_cap ? a->block_cap * 2 : 64;
        fm_test_block *blocks = realloc(a->blocks, cap * sizeof *blocks);
        if (!blocks) {
            fm_test__problem(a, "out of memory for the registry of %zu blocks", cap);
            a->failed_calls++;
            return NULL;
        }
        a->blocks = blocks;
        a->block_cap = cap;
    }
    void *p = fm_test__cache_take(a, size, align);
    if (!p) p = fm_test__raw_alloc(size, align);
    if (!p) {
        a->failed_calls++;
        return NULL;
    }
    if (!fm_is_aligned(p, align))
        fm_test__problem(a, "the system returned %p, not aligned to %zu", p, align);
    fm_test__fill(a, p, size);
    a->blocks[a->block_count++] = (fm_test_block){p, size, align};
    a->live_bytes += size;
    a->live_blocks++;
    if (a->live_bytes > a->peak_bytes) a->peak_bytes = a->live_bytes;
    return p;
}

static void *fm_test__alloc(size_t size, size_t align, void *user) {
    fm_test_allocator *a = user;
    if (a->hook) a->hook(a);
    fm_test_mutex_lock(&a->lock);
    void *p = fm_test__alloc_locked(a, size, align);
    fm_test_mutex_unlock(&a->lock);
    return p;
}

static void fm_test__free_locked(fm_test_allocator *a, void *ptr, size_t size) {
    a->free_calls++;
    if (!ptr) {
        fm_test__problem(a, "backing free(NULL, %zu)", size);
        return;
    }
    /* Newest first: objects mostly free what they took last. */
    for (size_t i = a->block_count; i-- > 0;) {
        if (a->blocks[i].ptr != ptr) continue;
        fm_test_block b = a->blocks[i];
        if (b.size != size)
            fm_test__problem(a, "backing free(%p) with size %zu, allocated with %zu", ptr, size,
                             b.size);
        a->live_bytes -= b.size;
        a->live_blocks--;
        a->blocks[i] = a->blocks[--a->block_count];
        fm_test__cache_put(a, b);
        return;
    }
    fm_test__problem(a, "backing free(%p, %zu) of a block this allocator did not hand out", ptr,
                     size);
}

static void fm_test__free(void *ptr, size_t size, void *user) {
    fm_test_allocator *a = user;
    fm_test_mutex_lock(&a->lock);
    fm_test__free_locked(a, ptr, size);
    fm_test_mutex_unlock(&a->lock);
}

/* ------------------------------------------------------------- lifetime */

void fm_test_allocator_init(fm_test_allocator *a) {
    memset(a, 0, sizeof *a);
    fm_test_mutex_init(&a->lock);
}

/* Frees the blocks still live (a failed test's leftovers). */
static void fm_test__free_leftovers(fm_test_allocator *a) {
    for (size_t i = 0; i < a->block_count; i++)
        fm_test__raw_free(a->blocks[i].ptr, a->blocks[i].size, a->blocks[i].align);
    a->block_count = 0;
}

void fm_test_allocator_release(fm_test_allocator *a) {
    fm_test__free_leftovers(a);
    for (size_t i = 0; i < a->cached_count; i++) {
        FM_TEST__UNPOISON(a->cached[i].ptr, a->cached[i].size);
        fm_test__raw_free(a->cached[i].ptr, a->cached[i].size, a->cached[i].align);
    }
    free(a->blocks);
    fm_test_mutex_destroy(&a->lock);
    memset(a, 0, sizeof *a);
}

void fm_test_allocator_reset(fm_test_allocator *a) {
    fm_test_mutex_lock(&a->lock);
    fm_test__free_leftovers(a);
    a->live_bytes = a->live_blocks = a->peak_bytes = 0;
    a->alloc_calls = a->failed_calls = a->free_calls = a->errors = 0;
    a->last_problem[0] = '\0';
    a->fail_at = 0;
    a->fail_after = false;
    a->max_block = a->max_live = a->fatal_above = 0;
    fm_test_mutex_unlock(&a->lock);
}

fm_allocator fm_test_allocator_get(fm_test_allocator *a) {
    return (fm_allocator){.alloc = fm_test__alloc, .free = fm_test__free, .user = a};
}

void fm_test_allocator_fail_nth(fm_test_allocator *a, uint64_t n) {
    fm_test_mutex_lock(&a->lock);
    a->fail_at = a->alloc_calls + n;
    a->fail_after = false;
    fm_test_mutex_unlock(&a->lock);
}

void fm_test_allocator_fail_from(fm_test_allocator *a, uint64_t n) {
    fm_test_mutex_lock(&a->lock);
    a->fail_at = a->alloc_calls + n;
    a->fail_after = true;
    fm_test_mutex_unlock(&a->lock);
}

void fm_test_allocator_recover(fm_test_allocator *a) {
    fm_test_mutex_lock(&a->lock);
    a->fail_at = 0;
    a->fail_after = false;
    fm_test_mutex_unlock(&a->lock);
}

bool fm_test_allocator_clean(fm_test_allocator *a) {
    fm_test_mutex_lock(&a->lock);
    bool clean = !a->live_bytes && !a->live_blocks && !a->errors;
    fm_test_mutex_unlock(&a->lock);
    return clean;
}
