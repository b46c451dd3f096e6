/*
 * tests/fuzz/fuzz_support.h: what every framemem fuzz harness shares.
 *
 * - fz_input: the fuzzer's bytes read as a stream of small integers; reads
 *   past the end give 0, so every input is a valid program. Operations read
 *   a fixed number of operand bytes whatever the object's state.
 * - fz_alloc: a counting fm_allocator. It checks that free gets back the
 *   pointer and size alloc gave, proves zero live bytes after destroy, fills
 *   fresh blocks with garbage (0xA5) so reliance on zeroed memory shows, and
 *   refuses calls on request: the nth from now, every one from the nth on,
 *   or any block above a size cap (so a hostile input cannot exhaust memory).
 *   A refusal of any kind counts in failed_calls; a request above fatal_above
 *   is a library bug and aborts. Freed big blocks are kept, poisoned, for
 *   reuse (a later access by the library is an ASan report).
 * - fz_fill / fz_check_fill: position-dependent byte patterns for contents;
 *   fz_poisoned: whether memory the library released is poisoned for ASan.
 * - fz_errors: an error handler that counts reports and keeps the last code,
 *   without formatting or printing (stderr noise slows fuzzing down).
 * - FZ_CHECK: a model mismatch prints what failed and aborts, which libFuzzer
 *   turns into a crash with a reproducer file.
 * - fz_sweeper: when a harness re-reads its whole model (a full sweep): when
 *   asked or every FZ_SWEEP_EVERY operations, within a budget that grows by
 *   FZ_SWEEP_CREDIT bytes of checking per operation, so an input costs time
 *   in proportion to its operations, not to operations times live objects.
 *
 * Header-only (static functions) so that each harness is one .c file and the
 * CMake glob over fuzz_*.c needs nothing else. Single-threaded.
 */
#ifndef FM_FUZZ_SUPPORT_H
#define FM_FUZZ_SUPPORT_H

/* posix_memalign; include this header first. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "framemem/base.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define FZ_HAVE_ASAN 1
#define FZ_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define FZ_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#endif
#endif
#ifndef FZ_POISON
#define FZ_POISON(p, n) ((void)(p), (void)(n))
#define FZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Loops that fill and compare byte patterns teach the fuzzer nothing: keep
 * libFuzzer's comparison hooks out of them (they were a third of the time). */
#if defined(__clang__)
#define FZ_NO_COVERAGE __attribute__((no_sanitize("coverage"), noinline))
#else
#define FZ_NO_COVERAGE
#endif

#if defined(__GNUC__) || defined(__clang__)
#define FZ_UNUSED __attribute__((unused))
#define FZ_NORETURN __attribute__((noreturn))
#define FZ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FZ_UNUSED
#define FZ_NORETURN
#define FZ_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------ checks */

FZ_UNUSED FZ_NORETURN FZ_PRINTF(3, 4) static void fz_fail(const char *file, int line,
                                                          const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\n%s:%d: model mismatch: ", file, line);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  (framemem last error %s: %s)\n", fm_error_name(fm_last_error()),
            fm_last_error_message());
    fflush(stderr);
    abort();
}

#define FZ_FAIL(...) fz_fail(__FILE__, __LINE__, __VA_ARGS__)
#define FZ_CHECK(cond)                                                          \
    do {                                                                        \
        if (!(cond)) FZ_FAIL("%s", #cond);                                      \
    } while (0)
/* Equality of two integers, printing both. */
#define FZ_CHECK_EQ(a, b)                                                       \
    do {                                                                        \
        unsigned long long fz__a = (unsigned long long)(a);                     \
        unsigned long long fz__b = (unsigned long long)(b);                     \
        if (fz__a != fz__b) FZ_FAIL("%s == %s (%llu vs %llu)", #a, #b, fz__a, fz__b); \
    } while (0)
/* The thread's last error is `code` (after an fm_clear_error before the call). */
#define FZ_CHECK_ERR(code)                                                      \
    do {                                                                        \
        fm_error fz__e = fm_last_error();                                       \
        if (fz__e != (code))                                                    \
            FZ_FAIL("expected %s, last error is %s", fm_error_name(code), fm_error_name(fz__e)); \
    } while (0)

/* ------------------------------------------------------------------- input */

typedef struct fz_input {
    const uint8_t *p;
    size_t n;
} fz_input;

FZ_UNUSED static bool fz_more(const fz_input *in) { return in->n > 0; }

FZ_UNUSED static uint8_t fz_u8(fz_input *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

FZ_UNUSED static uint16_t fz_u16(fz_input *in) {
    uint16_t lo = fz_u8(in);
    return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

FZ_UNUSED static uint32_t fz_u32(fz_input *in) {
    uint32_t lo = fz_u16(in);
    return lo | (uint32_t)fz_u16(in) << 16;
}

FZ_UNUSED static uint64_t fz_u64(fz_input *in) {
    uint64_t lo = fz_u32(in);
    return lo | (uint64_t)fz_u32(in) << 32;
}

/* An operand in [0, n): always two bytes, whatever n is (0 gives 0), so that
 * an operation reads the same bytes whatever the state; read operands before
 * deciding to skip an operation, and seeds stay readable. */
FZ_UNUSED static uint32_t fz_below(fz_input *in, uint32_t n) {
    uint32_t v = fz_u16(in);
    return n ? v % n : 0;
}

/* ------------------------------------------------------ counting allocator */

typedef struct fz_block {
    void *ptr;
    size_t size;
} fz_block;

/* Big blocks the library gave back are kept (poisoned, so a use after the
 * free is still an ASan report) and handed out again for the same size and
 * alignment: fresh pages for every pool chunk made page faults the main cost
 * of a run. */
enum { FZ_CACHE_BLOCKS = 256, FZ_CACHE_MIN = 4096, FZ_CACHE_BYTES = 64 << 20 };

typedef struct fz_cached {
    void *ptr;
    size_t size;
} fz_cached;

typedef struct fz_alloc {
    size_t live_bytes;
    size_t live_blocks;
    uint64_t alloc_calls;
    uint64_t failed_calls; /* refused: injected or above max_block */
    uint64_t fail_at;      /* alloc_calls value that fails; 0 = never */
    bool fail_after;       /* and every call after it */
    size_t max_block;      /* bigger requests are refused; 0 = no cap */
    size_t max_live;       /* refuse what would pass this many live bytes; 0 = no cap */
    size_t fatal_above;    /* a bigger request is a library bug (say, past an
                              arena's reserve_bytes); 0 = no such limit */
    fz_block *blocks;
    size_t count, cap;
    fz_cached cache[FZ_CACHE_BLOCKS]; /* survives fz_alloc_reset */
    size_t cached, cached_bytes;
} fz_alloc;

/* A cached block of exactly size bytes aligned to align, unpoisoned; NULL if none. */
FZ_UNUSED static void *fz_cache_take(fz_alloc *a, size_t size, size_t align) {
    for (size_t i = 0; i < a->cached; i++) {
        if (a->cache[i].size != size || !fm_is_aligned(a->cache[i].ptr, align)) continue;
        void *p = a->cache[i].ptr;
        a->cached_bytes -= size;
        a->cache[i] = a->cache[--a->cached];
        FZ_UNPOISON(p, size);
        return p;
    }
    return NULL;
}

FZ_UNUSED static void fz_cache_put(fz_alloc *a, void *p, size_t size) {
    if (size < FZ_CACHE_MIN || a->cached == FZ_CACHE_BLOCKS ||
        a->cached_bytes + size > FZ_CACHE_BYTES) {
        free(p);
        return;
    }
    FZ_POISON(p, size);
    a->cache[a->cached++] = (fz_cached){p, size};
    a->cached_bytes += size;
}

FZ_UNUSED static void *fz_alloc_fn(size_t size, size_t align, void *user) {
    fz_alloc *a = user;
    a->alloc_calls++;
    if (!FM_IS_POW2(align)) FZ_FAIL("backing alloc(%zu) with alignment %zu", size, align);
    if (a->fatal_above && size > a->fatal_above)
        FZ_FAIL("backing alloc(%zu) above the object's limit of %zu bytes", size, a->fatal_above);
    bool injected = a->fail_at != 0 && (a->alloc_calls == a->fail_at ||
                                        (a->fail_after && a->alloc_calls > a->fail_at));
    if (injected || (a->max_block && size > a->max_block) ||
        (a->max_live && size > a->max_live - a->live_bytes)) {
        a->failed_calls++;
        return NULL;
    }
    if (a->count == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        fz_block *blocks = realloc(a->blocks, cap * sizeof *blocks);
        if (!blocks) FZ_FAIL("out of memory for the allocator registry");
        a->blocks = blocks;
        a->cap = cap;
    }
    void *p = fz_cache_take(a, size, align);
    if (!p && posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
                             size ? size : 1) != 0) {
        a->failed_calls++;
        return NULL;
    }
    /* Garbage, not zeros, so reliance on fresh memory being zero shows: over
     * the first 64 KiB (where a pool chunk keeps its meta words) and the last
     * page; filling all of a big block made page faults the main cost. */
    size_t head = size < 65536 ? size : 65536;
    memset(p, 0xA5, head);
    if (size - head > 4096) memset((uint8_t *)p + size - 4096, 0xA5, 4096);
    else memset((uint8_t *)p + head, 0xA5, size - head);
    a->blocks[a->count++] = (fz_block){p, size};
    a->live_bytes += size;
    a->live_blocks++;
    return p;
}

FZ_UNUSED static void fz_free_fn(void *ptr, size_t size, void *user) {
    fz_alloc *a = user;
    if (!ptr) FZ_FAIL("backing free(NULL, %zu)", size);
    /* Newest first: objects mostly free what they took last. */
    for (size_t i = a->count; i-- > 0;) {
        if (a->blocks[i].ptr != ptr) continue;
        if (a->blocks[i].size != size)
            FZ_FAIL("backing free(%p) with size %zu, allocated with %zu", ptr, size,
                    a->blocks[i].size);
        a->live_bytes -= size;
        a->live_blocks--;
        a->blocks[i] = a->blocks[--a->count];
        fz_cache_put(a, ptr, size);
        return;
    }
    FZ_FAIL("backing free(%p, %zu) of a block the allocator did not hand out", ptr, size);
}

/* Starts a fresh allocator, keeping the registry's storage and the block
 * cache across runs. */
FZ_UNUSED static void fz_alloc_reset(fz_alloc *a, size_t max_block, size_t max_live) {
    for (size_t i = 0; i < a->count; i++) free(a->blocks[i].ptr);
    a->live_bytes = a->live_blocks = 0;
    a->alloc_calls = a->failed_calls = a->fail_at = 0;
    a->fail_after = false;
    a->fatal_above = 0;
    a->count = 0;
    a->max_block = max_block;
    a->max_live = max_live;
}

FZ_UNUSED static fm_allocator fz_alloc_get(fz_alloc *a) {
    return (fm_allocator){.alloc = fz_alloc_fn, .free = fz_free_fn, .user = a};
}

/* Fail the nth alloc call from now (1 = the next), and with `after` every
 * later one too. n = 0 disarms. */
FZ_UNUSED static void fz_alloc_fail(fz_alloc *a, uint32_t n, bool after) {
    a->fail_at = n ? a->alloc_calls + n : 0;
    a->fail_after = n && after;
}

/* Every object built on a is destroyed: nothing may be left. */
FZ_UNUSED static void fz_alloc_check_clean(const fz_alloc *a) {
    if (a->live_bytes || a->live_blocks)
        FZ_FAIL("%zu bytes in %zu blocks still live after destroy", a->live_bytes,
                a->live_blocks);
}

/* ----------------------------------------------------------- error capture */

typedef struct fz_errors {
    uint64_t count;
    fm_error last;
} fz_errors;

static fz_errors fz_err;

FZ_UNUSED static void fz_error_handler(fm_error err, const char *message, void *user) {
    (void)user;
    if (!message || !message[0]) FZ_FAIL("error %s reported without a message", fm_error_name(err));
    fz_err.count++;
    fz_err.last = err;
}

/* Installs the quiet handler (once per process) and clears the state. */
FZ_UNUSED static void fz_errors_begin(void) {
    static bool installed;
    if (!installed) {
        fm_set_error_handler(fz_error_handler, NULL);
        installed = true;
    }
    fz_err.count = 0;
    fz_err.last = FM_OK;
    fm_clear_error();
}

/* ------------------------------------------------------------ full sweeps */

enum { FZ_SWEEP_EVERY = 64, FZ_SWEEP_CREDIT = 16384 };

typedef struct fz_sweeper {
    uint64_t credit; /* bytes of checking paid for and not spent */
    uint32_t since;  /* operations since the last sweep */
    bool wanted;     /* an operation asked for a sweep (a check opcode, a trim) */
} fz_sweeper;

/* Call once after every operation with what a sweep would cost now (about
 * the bytes it reads): whether to sweep now. A wanted sweep waits until it
 * is paid for; sweeping never costs more than FZ_SWEEP_CREDIT bytes of
 * checks per operation, and runs at least every
 * max(FZ_SWEEP_EVERY, cost / FZ_SWEEP_CREDIT) operations. */
FZ_UNUSED static bool fz_sweep_due(fz_sweeper *s, uint64_t cost) {
    s->credit += FZ_SWEEP_CREDIT;
    s->since++;
    if (!(s->wanted || s->since >= FZ_SWEEP_EVERY) || s->credit < cost) return false;
    s->credit -= cost;
    s->since = 0;
    s->wanted = false;
    return true;
}

/* ------------------------------------------------------------ byte patterns */

/* Word w of pattern `seed`: position-dependent, so a shifted or overlapping
 * copy of another allocation's bytes does not pass for this one. Byte i of
 * the pattern is byte i % 8 of word i / 8 (the machine's byte order). */
static inline uint64_t fz_pattern_word(uint32_t seed, size_t w) {
    uint64_t x = ((uint64_t)seed << 32 | (uint32_t)w) * 0x9E3779B97F4A7C15ull;
    return x ^ x >> 29;
}

/* Bytes [off, off + n) of fz_fill(base, ..., seed), off a multiple of 8:
 * a window of the pattern, for areas too big to fill whole. Whole words by
 * fixed-size copies (inlined; a variable-size memcpy per word is a call
 * into ASan), then the tail. */
FZ_UNUSED FZ_NO_COVERAGE static void fz_fill_from(void *base, size_t off, size_t n,
                                                  uint32_t seed) {
    uint8_t *b = (uint8_t *)base + off;
    size_t w0 = off / 8, w = 0;
    for (; (w + 1) * 8 <= n; w++) {
        uint64_t x = fz_pattern_word(seed, w0 + w);
        memcpy(b + w * 8, &x, 8);
    }
    if (w * 8 < n) {
        uint64_t x = fz_pattern_word(seed, w0 + w);
        memcpy(b + w * 8, &x, n - w * 8);
    }
}

FZ_UNUSED static void fz_fill(void *p, size_t n, uint32_t seed) { fz_fill_from(p, 0, n, seed); }

/* Bytes [off, off + n) of an area filled by fz_fill(base, ..., seed), off a
 * multiple of 8: the index (from off) of the first byte that differs, or n.
 * Word loads (an inlined memcpy), not memcmp: ASan and libFuzzer intercept
 * memcmp. */
FZ_UNUSED FZ_NO_COVERAGE static size_t fz_check_fill_from(const void *base, size_t off, size_t n,
                                                          uint32_t seed) {
    const uint8_t *b = (const uint8_t *)base + off;
    size_t w0 = off / 8, w = 0;
    for (; (w + 1) * 8 <= n; w++) {
        uint64_t have;
        memcpy(&have, b + w * 8, 8);
        if (have != fz_pattern_word(seed, w0 + w)) break;
    }
    for (size_t i = w * 8; i < n; i++) {
        uint64_t x = fz_pattern_word(seed, w0 + i / 8);
        if (b[i] != ((const uint8_t *)&x)[i % 8]) return i;
    }
    return n;
}

/* The index of the first byte of fz_fill(p, n, seed) that differs, or n. */
FZ_UNUSED static size_t fz_check_fill(const void *p, size_t n, uint32_t seed) {
    return fz_check_fill_from(p, 0, n, seed);
}

/* Whether the whole 8-byte granules inside the n bytes at p are poisoned for
 * ASan (the partial granules at either end cannot always be: ASan tracks a
 * granule as "its first k bytes addressable"). Sampled: both ends and up to
 * 4096 granules between. Always true without ASan. */
FZ_UNUSED static bool fz_poisoned(const void *p, size_t n) {
#ifdef FZ_HAVE_ASAN
    uintptr_t lo = ((uintptr_t)p + 7) & ~(uintptr_t)7;
    uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)7;
    if (lo >= hi) return true;
    if (!__asan_address_is_poisoned((void *)lo) || !__asan_address_is_poisoned((void *)(hi - 1)))
        return false;
    size_t span = hi - lo;
    size_t step = span / 4096 > 8 ? (span / 4096) & ~(size_t)7 : 8;
    for (uintptr_t a = lo; a < hi; a += step) {
        if (!__asan_address_is_poisoned((void *)a)) return false;
    }
    return true;
#else
    (void)p, (void)n;
    return true;
#endif
}

/* The index of the first non-zero byte of the n at p, or n. */
FZ_UNUSED FZ_NO_COVERAGE static size_t fz_first_nonzero(const void *p, size_t n) {
    const uint8_t *b = p;
    size_t i = 0;
    for (uint64_t w; i + 8 <= n; i += 8) { /* a word at a time, then the byte */
        memcpy(&w, b + i, 8);
        if (w) break;
    }
    for (; i < n; i++) {
        if (b[i]) return i;
    }
    return n;
}

FZ_UNUSED FZ_NO_COVERAGE static int fz_cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(void *const *)a;
    uintptr_t y = (uintptr_t)*(void *const *)b;
    return (x > y) - (x < y);
}

#endif /* FM_FUZZ_SUPPORT_H */
