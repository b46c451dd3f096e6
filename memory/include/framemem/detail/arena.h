/*
 * framemem/detail/arena.h: arena.h's inline fast path and the private structs
 * it reads. Private: FM__/fm__ names may change in any release.
 *
 * Optimised builds of the caller (FM__INLINE, see detail/base.h) inline the
 * common case of fm_arena_alloc and fm_frame_alloc: an aligned bump inside
 * committed memory that leaves room above it (an exact fit takes the library
 * call). Everything else calls into the library, which keeps the real limit
 * beside the hot struct and runs this same function for its own entry points.
 * hot.limit is 0, failing the test for every size, in shared arenas (MUTEX,
 * LOCKFREE: their top and limit live in atomics) and for memory that ends
 * within FM__ARENA_INLINE_MAX bytes of the top of the address space, where
 * p + size could wrap. The arena is not tested for NULL here (a
 * precondition, base.h); the library's functions test it.
 */
#ifndef FRAMEMEM_DETAIL_ARENA_H
#define FRAMEMEM_DETAIL_ARENA_H

#ifdef __cplusplus
extern "C" {
#endif

/* The first bytes of every fm_arena. */
typedef struct fm__arena_hot {
    uint64_t top;          /* next free byte */
    uint64_t total_allocs; /* beside top: one cache line for the inline path */
    uintptr_t limit; /* 0, or the end of committed memory or of the current
                        block: a multiple of 4096 (aligning top never passes
                        it) at most UINTPTR_MAX - FM__ARENA_INLINE_MAX (adding
                        an inline size to an address below it never wraps) */
} fm__arena_hot;

/* The largest size the inline path takes: half the address space, so sizes
 * of 32-bit (and narrower) types need no test on 64-bit targets. */
#define FM__ARENA_INLINE_MAX (UINTPTR_MAX >> 1)

/* The first bytes of every fm_frame_arena: the arena serving the current frame. */
typedef struct fm__frame_arena_hot {
    fm_arena *current;
} fm__frame_arena_hot;

FM_API void *fm__arena_alloc_slow(fm_arena *arena, size_t size, size_t align);
/* Debug builds: true while a LOCKFREE allocation is under way (another
 * thread inside fm_arena_alloc); always false in release builds. */
FM_API bool fm__arena_busy(const fm_arena *arena);

#ifdef FM__GNU
/* top and total_allocs are two plain stores (arena.c says why not one). */
static inline void *fm__arena_alloc_inline(fm_arena *arena, size_t size, size_t align) {
    fm__arena_hot *h = (fm__arena_hot *)(void *)arena;
    size_t al = align ? align : FM_DEFAULT_ALIGN;
    if (__builtin_expect(FM_IS_POW2(al) && al <= FM_MAX_ALIGN && size <= FM__ARENA_INLINE_MAX,
                         1)) {
        uintptr_t p = (h->top + (al - 1)) & ~(uintptr_t)(al - 1);
        uintptr_t end = p + size; /* cannot wrap while limit != 0 (see hot) */
        if (__builtin_expect(end < h->limit, 1)) {
            h->top = end;
            h->total_allocs++;
            /* A bump lands at or above the arena's first byte: telling the
             * compiler spares the caller's NULL test on this path. */
            if (p == 0) __builtin_unreachable();
            return (void *)p;
        }
    }
    return fm__arena_alloc_slow(arena, size, align);
}
static inline void *fm__frame_alloc_inline(fm_frame_arena *fa, size_t size, size_t align) {
    return fm__arena_alloc_inline(((fm__frame_arena_hot *)(void *)fa)->current, size, align);
}
#endif

/* The fastest frame allocation this translation unit may use, for the other
 * headers' inline paths (closure.h's frame closures). */
#if defined(FM__INLINE)
#define FM__FRAME_ALLOC(fa, size, align) fm__frame_alloc_inline((fa), (size), (align))
#else
#define FM__FRAME_ALLOC(fa, size, align) (fm_frame_alloc)((fa), (size), (align))
#endif

/* The caller's calls (the library's own sources call the functions). */
#if defined(FM__INLINE) && !defined(FM__BUILDING_LIBRARY)
#define fm_arena_alloc(arena, size, align) fm__arena_alloc_inline((arena), (size), (align))
#define fm_frame_alloc(fa, size, align) fm__frame_alloc_inline((fa), (size), (align))
#endif

#ifdef __cplusplus
}
#endif

#endif /* FRAMEMEM_DETAIL_ARENA_H */
