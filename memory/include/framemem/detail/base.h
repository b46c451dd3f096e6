/*
 * framemem/detail/base.h: the inline parts of base.h, and what the inline
 * fast paths of the other headers need from the compiler. Private: FM__
 * names may change in any release.
 */
#ifndef FRAMEMEM_DETAIL_BASE_H
#define FRAMEMEM_DETAIL_BASE_H

#ifdef __cplusplus
extern "C" {
#endif

static inline size_t fm_align_up(size_t v, size_t align) {
    return (v + (align - 1)) & ~(align - 1);
}
static inline bool fm_is_aligned(const void *p, size_t align) {
    return ((uintptr_t)p & (align - 1)) == 0;
}

#ifdef __cplusplus
}
#endif

/* Sanitizer builds of the caller: the inline fast paths step aside so that
 * every operation goes through the annotated library code. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define FM__SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FM__SANITIZED 1
#endif

#if defined(__GNUC__) || defined(__clang__)
/* The inline fast paths are written for GNU C (builtins, statement
 * expressions, inline asm); other compilers call the library. */
#define FM__GNU 1
#define FM__MAYBE_UNUSED __attribute__((unused))
#else
#define FM__MAYBE_UNUSED
#endif

/* Optimised builds of the caller (NDEBUG, no sanitizer, no FM_NO_INLINE)
 * compile the common cases of pool, arena and closure calls into its own
 * code; each header's detail part says which. The library's own sources
 * (FM__BUILDING_LIBRARY) define the functions and call the inline paths
 * by their fm__ names where they want them. */
#if defined(FM__GNU) && defined(NDEBUG) && !defined(FM__SANITIZED) && !defined(FM_NO_INLINE)
#define FM__INLINE 1
#endif

/* asm goto with output operands ("+m" included) on every edge: GCC 11 and
 * later; clang before 16 supports outputs on the fall-through edge only,
 * which a branch that reads the operand again cannot rely on. Without it
 * the inline paths use their plain-C spelling. */
#if defined(__clang__)
#if defined(__has_extension)
#if __has_extension(gnu_asm_goto_with_outputs_full)
#define FM__ASM_GOTO_OUTPUTS 1
#endif
#endif
#elif defined(__GNUC__) && __GNUC__ >= 11
#define FM__ASM_GOTO_OUTPUTS 1
#endif

#endif /* FRAMEMEM_DETAIL_BASE_H */
