/*
 * framemem/detail/closure.h: closure.h's inline fast paths and the private
 * structs they read. Private: FM__/fm__ names may change in any release.
 *
 * When pool.h inlines its fast paths (FM__POOL_INLINE), make, alloc,
 * make_frame, alloc_frame, retain, release, call and capture are inlined
 * too, so a capture of constant size picks its class and is copied at
 * compile time. The library's functions run the same code and stay callable
 * as (fm_closure_make)(...). Every refusal and every misuse goes into the
 * library, which reports it (a NULL closure pool, frame arena or closure is
 * a precondition here, as in pool.h's inline paths; the library's functions
 * check it): the inline make calls it with the arguments it
 * refused, or after the class pool or arena returned NULL (and reported
 * why); the inline retain and release only touch a live closure of an
 * FM_SYNC_NONE pool (its tag says so) and hand anything else, frame, shared,
 * released, foreign or NULL, to the library.
 */
#ifndef FRAMEMEM_DETAIL_CLOSURE_H
#define FRAMEMEM_DETAIL_CLOSURE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef FM__GNU
/* A closure's header; its capture follows at sizeof(fm__closure_hdr). A live
 * closure is recognised by its tag (cleared by the last release), owner and
 * class. */
typedef struct fm__closure_hdr {
    fm_closure_fn fn;
    uint32_t capture_size;
    uint32_t refs; /* pooled: references held (atomic under shared pools); frame: 0 */
    void *owner;   /* the fm_closure_pool (its fm__closure_pool_hot); NULL: frame */
    uint32_t tag;  /* FM__CLOSURE_TAG_* while live; 0 from the last release on */
    uint32_t cls;  /* size class of a pooled closure */
#if UINTPTR_MAX == UINT32_MAX
    uint32_t pad[2]; /* 32-bit targets: 32 bytes too, so the capture stays 16-aligned */
#endif
} fm__closure_hdr;

/* The start of every fm_closure_pool. */
typedef struct fm__closure_pool_hot {
    fm_pool *classes[FM_CLOSURE_MAX_CLASSES];
    uint32_t n_classes;
    uint32_t tag; /* of its closures: LOCAL under FM_SYNC_NONE, SHARED otherwise */
    size_t max_capture;
} fm__closure_pool_hot;

#define FM__CLOSURE_MAGIC 0xC105u
#define FM__CLOSURE_TAG_LOCAL (FM__CLOSURE_MAGIC | 1u << 16)  /* pooled, FM_SYNC_NONE */
#define FM__CLOSURE_TAG_SHARED (FM__CLOSURE_MAGIC | 2u << 16) /* pooled, any other sync */
#define FM__CLOSURE_TAG_FRAME (FM__CLOSURE_MAGIC | 3u << 16)

/* Report (unless the arguments were fine: the pool or arena has reported
 * already), count the refusal, NULL. */
FM_API fm_closure *fm__closure_refuse(fm_closure_pool *cp, fm_closure_fn fn, const void *capture,
                                      size_t capture_size, bool copy_required);
FM_API fm_closure *fm__closure_refuse_frame(fm_closure_fn fn, const void *capture,
                                            size_t capture_size, bool copy_required);

/* The class whose capture (16 << cls) holds size bytes. */
static inline uint32_t fm__closure_class(size_t size) {
    return size <= 16 ? 0u : 60u - (uint32_t)__builtin_clzll((unsigned long long)size - 1u);
}

static inline fm_closure *fm__closure_init(fm__closure_hdr *c, fm_closure_fn fn,
                                           const void *capture, size_t size, void *owner,
                                           uint32_t refs, uint32_t tag, uint32_t cls) {
    c->fn = fn;
    c->capture_size = (uint32_t)size;
    c->refs = refs;
    c->owner = owner;
    c->tag = tag;
    c->cls = cls;
    if (!capture) return (fm_closure *)(void *)c;
    unsigned char *to = (unsigned char *)(c + 1);
    const unsigned char *from = (const unsigned char *)capture;
    if (__builtin_constant_p(size) || size < 8 || size > 32) {
        __builtin_memcpy(to, from, size); /* a constant size: a few moves */
    } else if (size >= 16) {
        /* The library's own calls know the size only at run time: a common
         * 8..32-byte capture in two overlapping moves, not a libc call. */
        __builtin_memcpy(to, from, 16);
        __builtin_memcpy(to + size - 16, from + size - 16, 16);
    } else {
        __builtin_memcpy(to, from, 8);
        __builtin_memcpy(to + size - 8, from + size - 8, 8);
    }
    return (fm_closure *)(void *)c;
}

/* fm_closure_make (copy_required) and fm_closure_alloc. */
static inline fm_closure *fm__closure_pooled(fm_closure_pool *cp, fm_closure_fn fn,
                                             const void *capture, size_t size,
                                             bool copy_required) {
    fm__closure_pool_hot *p = (fm__closure_pool_hot *)(void *)cp;
    if (__builtin_expect(!fn || size > p->max_capture || (copy_required && size && !capture), 0))
        return fm__closure_refuse(cp, fn, capture, size, copy_required);
    uint32_t cls = fm__closure_class(size);
    /* max_capture <= 65536 (create checks it): tells the compiler so. */
    if (cls >= FM_CLOSURE_MAX_CLASSES) __builtin_unreachable();
    fm__closure_hdr *c = (fm__closure_hdr *)FM__POOL_ALLOC(p->classes[cls]);
    if (__builtin_expect(!c, 0)) return fm__closure_refuse(cp, fn, capture, size, copy_required);
    return fm__closure_init(c, fn, capture, size, cp, 1, p->tag, cls);
}

/* fm_closure_make_frame (copy_required) and fm_closure_alloc_frame. */
static inline fm_closure *fm__closure_framed(fm_frame_arena *fa, fm_closure_fn fn,
                                             const void *capture, size_t size,
                                             bool copy_required) {
    if (__builtin_expect(!fn || size > UINT32_MAX || (copy_required && size && !capture), 0))
        return fm__closure_refuse_frame(fn, capture, size, copy_required);
    fm__closure_hdr *c =
        (fm__closure_hdr *)FM__FRAME_ALLOC(fa, sizeof(fm__closure_hdr) + size, 16);
    if (__builtin_expect(!c, 0)) return NULL; /* the arena reported why */
    return fm__closure_init(c, fn, capture, size, NULL, 0, FM__CLOSURE_TAG_FRAME, 0);
}

/* true for a live closure of an FM_SYNC_NONE pool: the one case retain and
 * release finish without the library. */
static inline bool fm__closure_is_local(const fm_closure *c) {
    const fm__closure_hdr *h = (const fm__closure_hdr *)(const void *)c;
    return c && h->tag == FM__CLOSURE_TAG_LOCAL &&
           h->cls < ((const fm__closure_pool_hot *)h->owner)->n_classes;
}

/* For a closure fm__closure_is_local accepted. */
static inline bool fm__closure_release_local(fm_closure *c) {
    fm__closure_hdr *h = (fm__closure_hdr *)(void *)c;
    if (--h->refs > 0) return false;
    /* The tag goes with the last reference, so a later release of this
     * pointer is recognised even where the slot's bytes survive. */
    h->tag = 0;
    FM__POOL_FREE(((fm__closure_pool_hot *)h->owner)->classes[h->cls], c);
    return true;
}

#if defined(FM__POOL_INLINE)
#define FM__CLOSURE_INLINE 1

static inline bool fm__closure_release_inline(fm_closure *c) {
    if (__builtin_expect(fm__closure_is_local(c), 1)) return fm__closure_release_local(c);
    return (fm_closure_release)(c);
}

static inline void fm__closure_retain_inline(fm_closure *c) {
    fm__closure_hdr *h = (fm__closure_hdr *)(void *)c;
    if (__builtin_expect(fm__closure_is_local(c) && h->refs != UINT32_MAX, 1)) h->refs++;
    else (fm_closure_retain)(c);
}

static inline void fm__closure_call_inline(const fm_closure *c, void *arg) {
    const fm__closure_hdr *h = (const fm__closure_hdr *)(const void *)c;
    h->fn((void *)(h + 1), arg);
}

static inline void *fm__closure_capture_inline(fm_closure *c) {
    return (fm__closure_hdr *)(void *)c + 1;
}
#endif /* FM__POOL_INLINE */
#endif /* FM__GNU */

/* The caller's calls (the library's own sources call the functions).
 * Variadic: an argument given as a compound literal holds commas. */
#if defined(FM__CLOSURE_INLINE) && !defined(FM__BUILDING_LIBRARY)
#define fm_closure_make(...) fm__closure_pooled(__VA_ARGS__, true)
#define fm_closure_alloc(...) fm__closure_pooled(__VA_ARGS__, false)
#define fm_closure_make_frame(...) fm__closure_framed(__VA_ARGS__, true)
#define fm_closure_alloc_frame(...) fm__closure_framed(__VA_ARGS__, false)
#define fm_closure_call(...) fm__closure_call_inline(__VA_ARGS__)
#define fm_closure_capture(...) fm__closure_capture_inline(__VA_ARGS__)
#define fm_closure_retain(...) fm__closure_retain_inline(__VA_ARGS__)
#define fm_closure_release(...) fm__closure_release_inline(__VA_ARGS__)
#endif

#ifdef __cplusplus
}
#endif

#endif /* FRAMEMEM_DETAIL_CLOSURE_H */
