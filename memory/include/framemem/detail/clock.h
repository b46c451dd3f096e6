/*
 * framemem/detail/clock.h: clock.h's inline counter reads. Private.
 *
 * With a GNU compiler on x86 (64- and 32-bit) and arm64, fm_clock_now() reads the counter
 * in the caller's code; the library exports fm_clock_now for everyone else,
 * reading the same counter, so ticks from either agree.
 */
#ifndef FRAMEMEM_DETAIL_CLOCK_H
#define FRAMEMEM_DETAIL_CLOCK_H

#if !defined(__x86_64__) && !defined(_M_X64) && !defined(__i386__) && !defined(__aarch64__) &&  \
    !defined(_M_ARM64)
#define FM_CLOCK_IS_NS 1 /* no counter framemem reads: ticks are nanoseconds */
#endif

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
static inline uint64_t fm__clock_now_inline(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#define fm_clock_now() fm__clock_now_inline()
#elif defined(__aarch64__) && defined(__GNUC__)
static inline uint64_t fm__clock_now_inline(void) {
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#define fm_clock_now() fm__clock_now_inline()
#endif

#endif /* FRAMEMEM_DETAIL_CLOCK_H */
