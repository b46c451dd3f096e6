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

#if defined(__GNUC__)
/* The inline fast paths are written for GNU C (builtins, statement
 * expressions, inline asm): gcc and clang. Other compilers, MSVC and
 * clang-cl (which does not define __GNUC__) among them, call the library's
 * functions, which every build exports (FM_API): the same results, one call
 * more per operation. */
#define FM__GNU 1
#endif
/* (clang-cl takes the attribute too; MSVC does not warn of unused static
 * inline functions.) */
#if defined(__GNUC__) || defined(__clang__)
#define FM__MAYBE_UNUSED __attribute__((unused))
#else
#define FM__MAYBE_UNUSED
#endif

/* Optimised builds of the caller (NDEBUG, no sanitizer, no FM_NO_INLINE,
 * no FM_HOOKS: hooks.h) compile the common cases of pool, arena and closure
 * calls into its own code; each header's detail part says which. The
 * library's own sources (FM__BUILDING_LIBRARY) define the functions and
 * call the inline paths by their fm__ names where they want them. */
#if defined(FM__GNU) && defined(NDEBUG) && !defined(FM__SANITIZED) && !defined(FM_NO_INLINE) && \
    !defined(FM_HOOKS) && !(defined(_WIN32) && defined(FM_DLL))
/* (A Windows DLL cannot lend its callers the thread-local variable that
 * THREAD_CACHE's inline paths read: their callers call the library.) */
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

/* FM__EXPAND(m(__VA_ARGS__)): makes MSVC's traditional preprocessor split
 * __VA_ARGS__ into m's arguments (others need nothing). */
#define FM__EXPAND(x) x

/* C++: FM__SET(obj, .a = x, .b = y) is `(void)(obj.a = x); (void)(obj.b = y);`,
 * for up to 40 arguments (an empty one is `(void)(obj);`): the designators
 * of FM_DESC, FM_POOL_DESC and FM_CLOSURE as assignments. */
#ifdef __cplusplus
#define FM__CAT(a, b) FM__CAT_(a, b)
#define FM__CAT_(a, b) a##b
#define FM__NARGS(...)                                                                   \
    FM__EXPAND(FM__NARGS_(__VA_ARGS__, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, \
                          27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, \
                          11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0))
#define FM__NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, \
                   a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, \
                   a33, a34, a35, a36, a37, a38, a39, a40, n, ...)                           \
    n
#define FM__SET(obj, ...) FM__EXPAND(FM__CAT(FM__SET_, FM__NARGS(__VA_ARGS__))(obj, __VA_ARGS__))
#define FM__SET_1(o, a) (void)(o a);
#define FM__SET_2(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_1(o, __VA_ARGS__))
#define FM__SET_3(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_2(o, __VA_ARGS__))
#define FM__SET_4(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_3(o, __VA_ARGS__))
#define FM__SET_5(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_4(o, __VA_ARGS__))
#define FM__SET_6(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_5(o, __VA_ARGS__))
#define FM__SET_7(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_6(o, __VA_ARGS__))
#define FM__SET_8(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_7(o, __VA_ARGS__))
#define FM__SET_9(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_8(o, __VA_ARGS__))
#define FM__SET_10(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_9(o, __VA_ARGS__))
#define FM__SET_11(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_10(o, __VA_ARGS__))
#define FM__SET_12(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_11(o, __VA_ARGS__))
#define FM__SET_13(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_12(o, __VA_ARGS__))
#define FM__SET_14(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_13(o, __VA_ARGS__))
#define FM__SET_15(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_14(o, __VA_ARGS__))
#define FM__SET_16(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_15(o, __VA_ARGS__))
#define FM__SET_17(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_16(o, __VA_ARGS__))
#define FM__SET_18(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_17(o, __VA_ARGS__))
#define FM__SET_19(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_18(o, __VA_ARGS__))
#define FM__SET_20(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_19(o, __VA_ARGS__))
#define FM__SET_21(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_20(o, __VA_ARGS__))
#define FM__SET_22(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_21(o, __VA_ARGS__))
#define FM__SET_23(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_22(o, __VA_ARGS__))
#define FM__SET_24(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_23(o, __VA_ARGS__))
#define FM__SET_25(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_24(o, __VA_ARGS__))
#define FM__SET_26(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_25(o, __VA_ARGS__))
#define FM__SET_27(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_26(o, __VA_ARGS__))
#define FM__SET_28(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_27(o, __VA_ARGS__))
#define FM__SET_29(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_28(o, __VA_ARGS__))
#define FM__SET_30(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_29(o, __VA_ARGS__))
#define FM__SET_31(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_30(o, __VA_ARGS__))
#define FM__SET_32(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_31(o, __VA_ARGS__))
#define FM__SET_33(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_32(o, __VA_ARGS__))
#define FM__SET_34(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_33(o, __VA_ARGS__))
#define FM__SET_35(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_34(o, __VA_ARGS__))
#define FM__SET_36(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_35(o, __VA_ARGS__))
#define FM__SET_37(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_36(o, __VA_ARGS__))
#define FM__SET_38(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_37(o, __VA_ARGS__))
#define FM__SET_39(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_38(o, __VA_ARGS__))
#define FM__SET_40(o, a, ...) (void)(o a); FM__EXPAND(FM__SET_39(o, __VA_ARGS__))
#endif

#endif /* FRAMEMEM_DETAIL_BASE_H */
