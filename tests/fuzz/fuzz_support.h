/*
 * tests/fuzz/fuzz_support.h: what every framemem fuzz harness shares.
 *
 * - fz_input: the fuzzer's bytes read as a stream of small integers; reads
 *   past the end give 0, so every input is a valid program. Operations read
 *   a fixed number of operand bytes whatever the object's state.
 * - fz_alloc_begin / fz_alloc_fail / fz_alloc_check_clean: the tests'
 *   counting allocator (tests/support/fm_test_alloc.h) set up for fuzzing:
 *   a contract violation aborts (a reproducer), only the head and the last
 *   page of a big block are filled, freed big blocks are kept poisoned for
 *   reuse, and a size cap keeps a hostile input from exhausting memory.
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
 * Header-only (static functions) so that each harness is one .c file; every
 * harness links the allocator's library (fm_test_alloc). Single-threaded.
 */
#ifndef FM_FUZZ_SUPPORT_H
#define FM_FUZZ_SUPPORT_H

/* POSIX declarations for the harnesses; include this header first. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "fm_test_alloc.h"
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
#endif
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

/* Starts a fuzzing run on a: the first time sets it up for fuzzing (a
 * violation aborts, fills of big blocks limited to their first 64 KiB and
 * last page, freed big blocks cached), then counts afresh with no fault armed
 * and these limits (0 = none): bigger blocks and blocks past max_live live
 * bytes are refused. The registry's storage and the cache outlive runs. */
FZ_UNUSED static void fz_alloc_begin(fm_test_allocator *a, size_t max_block, size_t max_live) {
    static fm_test_allocator *ready;
    if (ready != a) {
        fm_test_allocator_init(a);
        a->abort_on_problem = true;
        a->fill_limit = 65536;
        a->cache = true;
        ready = a;
    }
    fm_test_allocator_reset(a);
    a->max_block = max_block;
    a->max_live = max_live;
}

/* Fail the nth alloc call from now (1 = the next), and with `after` every
 * later one too. n = 0 disarms. */
FZ_UNUSED static void fz_alloc_fail(fm_test_allocator *a, uint32_t n, bool after) {
    if (!n) fm_test_allocator_recover(a);
    else if (after) fm_test_allocator_fail_from(a, n);
    else fm_test_allocator_fail_nth(a, n);
}

/* Every object built on a is destroyed: nothing may be left. */
FZ_UNUSED static void fz_alloc_check_clean(fm_test_allocator *a) {
    if (!fm_test_allocator_clean(a))
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
