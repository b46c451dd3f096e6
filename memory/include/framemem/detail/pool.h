/*
 * framemem/detail/pool.h: pool.h's inline fast paths and the private structs
 * they read. Private: FM__/fm__ names may change in any release.
 *
 * Each fast path exists once, here, and the library's out-of-line functions
 * run the same inline code (fm__meta_kill, fm__pool_resolve_at, ...) where
 * they do the same thing, adding only what debug and sanitizer builds need.
 *
 * Optimised builds of the caller (FM__INLINE, see detail/base.h, without
 * FM_TRACK_SITES) inline the common case of fm_pool_alloc, fm_pool_free and
 * fm_pool_resolve: an alloc takes the slot waiting as the next one, else pops
 * the current chunk's stack of free slot indices or takes the bump index's
 * next slot (one never handed out, or one a reset left); a free of the item
 * the last alloc took makes it wait again. Each with the live bit, double-free
 * and foreign-pointer checks and the counters exactly as the library keeps
 * them; every other free calls the library's leaf (pool/core.c), which takes
 * any chunk's item on one path. Everything else calls into the library; the
 * functions stay callable as (fm_pool_alloc)(pool). The pool is not tested for
 * NULL here (a precondition, base.h): the test would cost every call an
 * instruction; the library's functions test it. Pools with sync != NONE keep
 * cur_next_slot and cur_last NULL and cur_top, cur_bump and the bump's ends 0
 * here, so NONE's part falls through; a THREAD_CACHE pool (tc_id set) goes to
 * its own part right after an alloc's first test and a free's. It pops from or
 * pushes onto the calling thread's magazine when its last entry (fm__tc_cur)
 * is the pool's: an alloc checks the slot is not live and sets the live bit, a
 * free checks the item is a live slot start of the chunk the thread freed into
 * last and bumps the generation (no CAS: see docs/POOLS.md, Threads); the
 * thread's other pools, an empty or full magazine, a first use and every
 * misuse go into the library. The inline resolve reads words the library only
 * ever replaces whole (old arrays of shared pools are kept until destroy).
 */
#ifndef FRAMEMEM_DETAIL_POOL_H
#define FRAMEMEM_DETAIL_POOL_H

#ifdef FM__GNU
#include "framemem/detail/atomic.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

static inline bool fm_handle_is_null(fm_handle h) { return h.bits == 0; }
static inline bool fm_handle_equal(fm_handle a, fm_handle b) { return a.bits == b.bits; }

#ifdef FM__GNU

#define FM__META_LIVE 0x80000000u /* meta word: live bit | 31-bit generation */

/* The first cache line of every fm_pool: what the inline paths read. */
typedef struct fm__pool_hot {
    /* A chunk keeps the indices of its free slots in a stack of 16-bit
     * entries beside its meta words, never inside the slots: an alloc reads
     * a cached stack entry instead of a link in a cold item (a dependent
     * cache miss per alloc once frees come in random order), and a free
     * does not write into the item. The last freed slot waits here, as a
     * pointer and an index: an alloc right after a free returns the pointer
     * the free stored (which the CPU forwards at once) without turning an
     * index into an address, so a free's index arithmetic and an alloc's
     * meta word update stay off the chain from one pair to the next. */
    uint8_t *cur_next_slot;  /* the next free slot, NULL: none */
    uint32_t *cur_next_meta; /* its meta word */
    uint8_t *cur_last;       /* the slot the last alloc took as the next slot:
                                while no slot waits, cur_next_meta and cur_next
                                are still its (a park makes one wait, which
                                only an alloc, setting this, or the library's
                                settle, clearing it, ends), so a free of it
                                waits there again at the cost of a compare
                                (an alloc+free pair); NULL: none */
    uint32_t cur_next;       /* its index in the current chunk; UINT32_MAX: it is
                                another chunk's, parked by the library's free
                                (see pool/core.c), and a free here goes there */
    uint32_t cur_top;        /* free indices on its stack below cur_next */
    uint16_t *cur_stack;     /* the current chunk's stack: [0, cur_top) */
    uint32_t cur_limit;
    uint32_t cur_hw;         /* slots [0, cur_hw) were handed out before the last
                                reset: the bump index walks them again
                                (pool/reset.c); 0 when there was none */
    uintptr_t cur_base;      /* current chunk, or 1 when there is none */
    uint8_t *cur_slots;      /* its first slot */
    uint64_t cur_bump;       /* slots [0, cur_bump) have been handed out */
    uint32_t stride;
    uint32_t inv_shift;      /* stride's trailing zero bits */
    uint64_t inv;            /* inverse of stride's odd factor mod 2^64 */
    int64_t headroom;        /* peak_live - live - (1 while a next slot waits: it
                                counts live until the library settles it, so a
                                free into it and the alloc taking it back leave
                                this word alone); never negative outside alloc */
    uint64_t peak_live;
    uint64_t total_allocs;
    /* handle resolution */
    uintptr_t *bases;        /* [r]: the meta origin of record r - 1's chunk, [-1]:
                                where the item origins are ([0] and records
                                with no chunk: a dead chunk, no live meta word;
                                pool/chunks.c, fm__bases_bytes); never NULL */
    uint32_t n_bases;        /* records in use: [0, n_bases) */
    uint32_t slot_bits;      /* handle bits 0..slot_bits-1: slot; above: record + 1 */
    uint32_t per_chunk;
    uint32_t slots_off;
    uint32_t gen_key;        /* a handle's generation bits are the slot's minus this
                                (mod 2^31): random per pool, one lower per reset */
    uint32_t sync;           /* the fm_sync policy: the library dispatches on it */
    uint32_t cur_fresh_word; /* a never-used slot's meta word once handed out:
                                live | the current chunk's first generation */
    uint32_t slot_mask;      /* (1 << slot_bits) - 1: a handle's slot bits */
    /* THREAD_CACHE's inline paths */
    uint64_t tc_id;          /* the pool's unique id; UINT64_MAX (no thread's) otherwise */
    uintptr_t base_mask;     /* ptr & base_mask: the chunk (its meta words) of an item */
} fm__pool_hot;

/* FM_SYNC_THREAD_CACHE: a thread's magazine of free slots of one pool. The
 * library makes, lists and frees these (pool/tcache.c: they are the pool's,
 * from its allocator); the inline paths only pop and push on the one
 * fm__tc_cur names. */
#define FM__TC_SLOTS 64
#define FM__TC_POOLS 256 /* entries a thread holds at once (pool/tcache.c) */
typedef struct fm__tc_entry fm__tc_entry;

/* A pool's id and the thread's entry for it: fm__tc_cur, and the slots of
 * the thread's table. */
typedef struct fm__tc_slot {
    uint64_t id; /* the pool's unique id; 0: none */
    fm__tc_entry *entry;
} fm__tc_slot;

struct fm__tc_entry {
    /* Written by the owning thread only (but hint_slots), read by stats
     * and destroy: accessed atomically. */
    uint32_t count;       /* slots[0, count) are free slots of the pool */
    uint64_t hint_slots;  /* first slot of a chunk of the pool this thread freed
                             into; trim resets it (to 2^63: no address, even on
                             32-bit targets, where 2^31 is one) */
    uint32_t *hint_meta;  /* that chunk's meta words (valid while hint_slots is) */
    /* The inline free's last slot, not yet on slots[] (NULL: none), and its
     * meta word (whose index in its chunk's words is its slot_idx): as with
     * NONE's cur_next_slot, an alloc right after a free takes it back without
     * reading count or slots[]. Only the inline free sets it, and only while
     * slots[] has room for it; the library moves it onto slots[] before it
     * uses the magazine. */
    void *next_slot;
    uint32_t *next_meta;
    uint64_t allocs;      /* items handed out */
    uint64_t taken;       /* THREAD_CACHE: slots taken from the pool's depot minus
                             those given back (mod 2^64); frees are not counted
                             but derived (see pool/tcache.c) */
    uint64_t frees;       /* LOCKFREE: items freed */
    fm_pool *pool;
    fm__tc_slot *home;    /* the owning thread's table slot for it */
    fm__tc_entry *prev, *next; /* the pool's list, under its lock */
    void *slots[FM__TC_SLOTS];
    uint32_t slot_idx[FM__TC_SLOTS]; /* slots[i]'s index in its chunk: its meta word */
};

/* The calling thread's entry used last and its pool's id ({0, NULL} when
 * there is none). The id is tested before the entry is touched: an entry
 * freed by its pool's destroy is never read again, as no call on that pool
 * may follow and ids are never reused. initial-exec: %fs-relative loads.
 * A shared framemem (FM_DLL) leaves the model to the compiler: executables
 * still load it %fs-relative (their default for a library's variable), and
 * with no initial-exec access of its own the library can also be loaded by
 * dlopen (glibc's static TLS reserve, about 1.6 KiB, cannot hold the
 * library's 4.6 KiB of thread-locals). Windows: gcc's MinGW targets have
 * only emulated TLS (a call per access, a malloc per thread) and no
 * thread-local variable crosses a DLL's boundary, so THREAD_CACHE's alloc
 * and free are not inlined there and fm__tc_cur stays inside the library
 * (platform/thread.h). */
#if !defined(_WIN32)
#define FM__TC_INLINE 1
#if defined(FM_DLL)
#define FM__TC_TLS_MODEL
#else
#define FM__TC_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif
extern FM_API __thread fm__tc_slot fm__tc_cur FM__TC_TLS_MODEL;
#endif

FM_API void *fm__pool_alloc_slow(fm_pool *pool);
/* cold: a NONE free outside the current chunk calls it, and the inline free
 * stays laid out for the common case (gcc otherwise keeps a register copy of
 * the counter it decrements in the alloc). */
FM_API __attribute__((cold)) void fm__pool_free_slow(fm_pool *pool, void *item);

/* ------------------------------------------------- shared by the library */

/* next_slot's index in its chunk: its meta word's place among the chunk's
 * (base_mask: the pool's). */
static inline uint32_t fm__tc_next_idx(const fm__tc_entry *e, uintptr_t base_mask) {
    return (uint32_t)(e->next_meta - (uint32_t *)((uintptr_t)e->next_slot & base_mask));
}

/* The slot index of the address off bytes past a chunk's first slot, by
 * exact division by the stride with a multiply and a rotate (Granlund &
 * Montgomery; inv and shift are the pool's): a slot start at index j gives
 * j; any other address, inside an item, before the slots or in another
 * chunk, gives a value far above every slot index. */
static inline uint64_t fm__exact_index(uint64_t off, uint64_t inv, uint32_t shift) {
    uint64_t x = off * inv;
    return (x >> shift) | (x << ((64u - shift) & 63u));
}

/* The slot index of ptr in the current chunk (see fm__exact_index). */
static inline uint64_t fm__pool_hot_index(const fm__pool_hot *h, const void *ptr) {
    return fm__exact_index((uintptr_t)ptr - (uintptr_t)h->cur_slots, h->inv, h->inv_shift);
}

/* A free's meta word update: clears live (bit 31) and bumps the generation,
 * which is adding INT32_MIN + 1. As a signed add it overflows exactly when
 * the word was live with a generation below the maximum (every other word
 * stays in range), so the overflow flag is the whole check. true when it
 * was; false with the word as it was otherwise (not live, or a slot to
 * retire).
 *
 * shared: another thread may read the word meanwhile (the library's paths,
 * which MUTEX pools run while lock-free resolves read): a relaxed load and
 * store. Otherwise, on x86-64, the add goes to memory and its flag decides
 * (C loads, compares, branches, adds and stores, and compilers expand
 * __builtin_add_overflow with overflow as the rare case, which here is the
 * common one); it writes before it tests and undoes a refused free, a value
 * no other thread may see. */
static inline bool fm__meta_kill(uint32_t *w, bool shared) {
#if defined(__x86_64__) && defined(FM__ASM_GOTO_OUTPUTS) && !defined(FM__SANITIZED)
    if (!shared) {
        __asm__ goto("addl %1, %0\n\tjno %l[bad]" : "+m"(*w) : "i"(INT32_MIN + 1) : "cc" : bad);
        return true;
    bad:
        *w -= (uint32_t)INT32_MIN + 1u;
        return false;
    }
#else
    (void)shared;
#endif
    int32_t next = (int32_t)(FM__ATOMIC_LOAD(w, RELAXED) + FM__META_LIVE + 1u);
    if (__builtin_expect(next <= 0, 0)) return false;
    FM__ATOMIC_STORE(w, (uint32_t)next, RELAXED);
    return true;
}

/* A word of the pool read as the inline path reads it (shared false) or as
 * published to lock-free readers (shared true: acquire). */
#define FM__POOL_READ(shared, ptr) ((shared) ? FM__ATOMIC_LOAD((ptr), ACQUIRE) : *(ptr))

/* Handle bits: 0..31 location ((record + 1) << slot_bits | slot), 32..62 the
 * slot's generation minus the pool's gen_key (mod 2^31; bit 63, never set
 * by the library, is not looked at). A random key per pool makes another
 * pool's handles miss; fm_pool_reset lowers it by one, so every handle made
 * before a reset asks for a generation one below the slot's (see
 * pool/reset.c). Entry record + 1 of bases holds two origins from which the
 * whole location field, times 4 or times the stride, gives the slot's meta
 * word and item (pool/chunks.c, fm__bases_put): no slot field taken apart,
 * no chunk base and slots_off added. The null handle's location (record + 1
 * = 0) reads entry 0, a dead chunk: its words are 0, and the word a handle
 * asks for always has the live bit, whatever its bits.
 * shared: read as another thread may be growing the pool (every policy but
 * NONE): n_bases before bases, so the arrays read hold entry n_bases. */
static inline void *fm__pool_resolve_at(const fm_pool *pool, fm_handle h, bool shared) {
    const fm__pool_hot *hot = (const fm__pool_hot *)(const void *)pool;
    /* Every pool word is read before the first test: a compiler hoists out
     * of a caller's loop only the loads every call makes, and a loop of
     * independent resolves is bound by its loads and instructions, not by
     * latency. Hence also the dead chunk at entry 0 and in trimmed records
     * (no test for NULL, no - 1 on the record) and the slot field not
     * tested against per_chunk: a chunk's words past its last slot's, up
     * to 2^slot_bits, never read as live (pool/chunks.c, fm__layout). */
    uint32_t n_bases = FM__POOL_READ(shared, &hot->n_bases);
    const uintptr_t *metas = FM__POOL_READ(shared, &hot->bases);
    const uintptr_t *items = (const uintptr_t *)metas[-1]; /* set before metas was published */
    uint32_t key = FM__POOL_READ(shared, &hot->gen_key);
    uint32_t slot_bits = hot->slot_bits, stride = hot->stride;
    uint32_t loc = (uint32_t)h.bits;
    uint32_t rec1 = loc >> slot_bits; /* record + 1 */
    if (rec1 > n_bases) return NULL;
    uintptr_t meta = FM__POOL_READ(shared, &metas[rec1]);
    uint32_t want = FM__META_LIVE | ((uint32_t)(h.bits >> 32) + key);
    if (FM__POOL_READ(shared, (const uint32_t *)(meta + (uintptr_t)loc * 4u)) != want) return NULL;
    return (void *)(FM__POOL_READ(shared, &items[rec1]) + (uintptr_t)loc * stride);
}

/* The process-wide chunk map (pool/map.c): per 4 GiB region of addresses
 * below 2^48 a table of the owners of its 64 KiB granules (an entry with bit
 * 0 set: a table of its sixteen 4 KiB pages). */
#if UINTPTR_MAX > 0xFFFFFFFFu
#define FM__MAP_L1 65536u
#else
#define FM__MAP_L1 1u
#endif
extern FM_API uintptr_t *fm__pool_map[FM__MAP_L1];

/* fm_pool_of: two or three loads from the map, never from ptr. */
static inline fm_pool *fm__pool_of_at(const void *ptr) {
    uint64_t a = (uint64_t)(uintptr_t)ptr;
    if (a >> 32 >= FM__MAP_L1) return NULL;
    const uintptr_t *table = FM__ATOMIC_LOAD(&fm__pool_map[a >> 32], ACQUIRE);
    if (!table) return NULL;
    uintptr_t e = FM__ATOMIC_LOAD(&table[(uint32_t)a >> 16], ACQUIRE);
    if (__builtin_expect(e & 1u, 0))
        e = FM__ATOMIC_LOAD(&((const uintptr_t *)(e - 1u))[((uint32_t)a >> 12) & 15u], ACQUIRE);
    return (fm_pool *)e;
}

/* fm_free of a pointer no pool holds: NULL is a no-op, anything else is
 * reported. */
FM_API __attribute__((cold)) void fm__free_unowned(void *ptr);

/* ------------------------------------------------------ the inline paths */

#if defined(FM__INLINE) && !defined(FM_TRACK_SITES)
#define FM__POOL_INLINE 1

/* THREAD_CACHE's alloc of a cached slot: sets live (bit 31) in its meta
 * word; false, with the word unchanged, when it was set already. A relaxed
 * load and store, no CAS (see docs/POOLS.md, Threads). */
static inline bool fm__meta_set_live(uint32_t *w) {
    uint32_t m = FM__ATOMIC_LOAD(w, RELAXED);
    if (__builtin_expect((int32_t)m < 0, 0)) return false;
    FM__ATOMIC_STORE(w, m | FM__META_LIVE, RELAXED);
    return true;
}

/* The owning thread's count of its allocations, read by other threads for
 * stats. On x86-64 one add to memory: an aligned 8-byte store is never seen
 * torn, as the relaxed load and store elsewhere (which no compiler turns
 * into one instruction). */
static inline void fm__tc_count_alloc(uint64_t *allocs) {
#if defined(__x86_64__)
    __asm__("addq $1, %0" : "+m"(*allocs) : : "cc");
#else
    FM__ATOMIC_STORE(allocs, *allocs + 1, RELAXED);
#endif
}

/* THREAD_CACHE: the pool's id, to compare with fm__tc_cur's. A relaxed
 * load (of a word that never changes after create), which the compiler does
 * not merge with the plain load of the caller's test for NONE: that test
 * then stays one compare with memory instead of a load kept in a register. */
static inline uint64_t fm__pool_tc_id(const fm__pool_hot *h) {
    return FM__ATOMIC_LOAD(&h->tc_id, RELAXED);
}

#ifdef FM__TC_INLINE
/* THREAD_CACHE: a pop from this thread's magazine for the pool (its
 * next_slot first). */
static inline void *fm__pool_alloc_tc(fm_pool *pool) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    /* A slot found live already was served from another thread's cache too
     * (see Threads): the library drops this copy and reports. */
    if (__builtin_expect(fm__tc_cur.id == fm__pool_tc_id(h), 1)) {
        fm__tc_entry *e = fm__tc_cur.entry;
        uint8_t *slot = (uint8_t *)FM__ATOMIC_LOAD(&e->next_slot, RELAXED);
        if (__builtin_expect(slot != NULL, 1)) {
            if (__builtin_expect(fm__meta_set_live(e->next_meta), 1)) {
                FM__ATOMIC_STORE(&e->next_slot, NULL, RELAXED);
                fm__tc_count_alloc(&e->allocs);
                return slot;
            }
        } else {
            uint32_t n = e->count;
            if (__builtin_expect(n != 0, 1)) {
                slot = (uint8_t *)e->slots[n - 1];
                if (!slot) __builtin_unreachable(); /* callers' NULL tests fold away */
                uint32_t *meta = (uint32_t *)((uintptr_t)slot & h->base_mask) + e->slot_idx[n - 1];
                if (__builtin_expect(fm__meta_set_live(meta), 1)) {
                    FM__ATOMIC_STORE(&e->count, n - 1, RELAXED);
                    fm__tc_count_alloc(&e->allocs);
                    return slot;
                }
            }
        }
    }
    return fm__pool_alloc_slow(pool);
}

#endif /* FM__TC_INLINE */

/* --*headroom < 0, as one decrement of memory and a branch on its sign: from
 * C, gcc loads, decrements, stores and tests the word when the caller's code
 * around it keeps a register busy (which depends on the caller). */
static inline bool fm__headroom_taken(int64_t *headroom) {
#if defined(__x86_64__) && defined(FM__ASM_GOTO_OUTPUTS)
    __asm__ goto("subq $1, %0\n\tjs %l[below]" : "+m"(*headroom) : : "cc" : below);
    return false;
below:
    return true;
#else
    return --*headroom < 0;
#endif
}

static inline void *fm__pool_alloc_inline(fm_pool *pool) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    uint8_t *slot = h->cur_next_slot;
    uint32_t *meta;
    if (__builtin_expect(slot != NULL, 1)) {
        h->cur_next_slot = NULL;
        meta = h->cur_next_meta;
    } else if (h->tc_id != UINT64_MAX) {
#ifdef FM__TC_INLINE
        return fm__pool_alloc_tc(pool);
#else
        return fm__pool_alloc_slow(pool);
#endif
    } else {
        /* The top of the free stack, else the bump index's next slot: one
         * never handed out (word 0: the first allocations of a fresh chunk
         * cost what later ones do) or one a reset left (pool/reset.c): a
         * word still saying live goes on to its next generation, a free one
         * keeps its own. Chosen without a branch, as pools in different
         * states would send one either way. A retired slot (0 below cur_hw)
         * and a spent one (live, the last generation) go to the library,
         * and so does an empty chunk (or none). */
        uint32_t top = h->cur_top;
        uint64_t bump = h->cur_bump;
        bool pop = top != 0;
        if (__builtin_expect(!pop & (bump >= h->cur_limit), 0)) return fm__pool_alloc_slow(pool);
        size_t stacked = h->cur_stack[top - pop]; /* [0] when empty: read, not used */
        size_t idx = pop ? stacked : (size_t)bump;
        uint32_t *w = (uint32_t *)h->cur_base + idx;
        uint32_t m = *w;
        if (__builtin_expect((m == 0 && idx < h->cur_hw) | (m == 0xFFFFFFFFu), 0))
            return fm__pool_alloc_slow(pool);
        *w = m ? (m + (m >> 31)) | FM__META_LIVE : h->cur_fresh_word;
        h->cur_top = top - pop;
        h->cur_bump = bump + !pop;
        h->total_allocs++;
        if (__builtin_expect(fm__headroom_taken(&h->headroom), 0)) {
            h->headroom = 0;
            h->peak_live++;
        }
        return h->cur_slots + idx * h->stride;
    }
    if (!slot) __builtin_unreachable(); /* callers' NULL tests fold away */
    *meta |= FM__META_LIVE;
    h->cur_last = slot;
    h->total_allocs++; /* the next slot counted live while it waited */
    return slot;
}

#ifdef FM__TC_INLINE
/* THREAD_CACHE: a slot start of the chunk this thread freed into last, live,
 * becomes the magazine's next_slot (the one before it moves onto slots[],
 * which must have room). The live bit goes with a relaxed load and store,
 * not a CAS (see docs/POOLS.md, Threads). */
static inline void fm__pool_free_tc(fm_pool *pool, void *item) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    if (__builtin_expect(fm__tc_cur.id == fm__pool_tc_id(h), 1)) {
        fm__tc_entry *e = fm__tc_cur.entry;
        uint64_t hs = FM__ATOMIC_LOAD(&e->hint_slots, RELAXED);
        uint64_t si = fm__exact_index((uintptr_t)item - hs, h->inv, h->inv_shift);
        if (__builtin_expect(si < h->per_chunk, 1)) {
            uint32_t *meta = e->hint_meta + si;
            uint32_t m = FM__ATOMIC_LOAD(meta, RELAXED);
            if (__builtin_expect((int32_t)m < -1, 1)) {
                void *prev = FM__ATOMIC_LOAD(&e->next_slot, RELAXED);
                if (prev) {
                    /* n < FM__TC_SLOTS - 1: slots[] keeps room for next_slot. */
                    uint32_t n = e->count;
                    if (__builtin_expect(n >= FM__TC_SLOTS - 1, 0)) goto slow;
                    e->slots[n] = prev;
                    e->slot_idx[n] = fm__tc_next_idx(e, h->base_mask);
                    FM__ATOMIC_STORE(&e->count, n + 1, RELAXED);
                }
                FM__ATOMIC_STORE(meta, m + (FM__META_LIVE + 1u), RELAXED);
                e->next_meta = meta;
                FM__ATOMIC_STORE(&e->next_slot, item, RELAXED);
                return;
            }
        }
    }
slow:
    fm__pool_free_slow(pool, item);
}

#endif /* FM__TC_INLINE */

static inline void fm__pool_free_inline(fm_pool *pool, void *item) {
    fm__pool_hot *h = (fm__pool_hot *)(void *)pool;
    /* A THREAD_CACHE pool skips the NONE test. */
    if (h->tc_id == UINT64_MAX) {
        /* The item the last alloc took, with nothing waiting: it waits again,
         * its meta word and index still at hand. Every other free goes to
         * the library's leaf (pool/core.c), which takes any chunk's item on
         * one path: a branch here on the item's chunk would go either way at
         * random under random frees. */
        if (__builtin_expect((item == h->cur_last) & (item != NULL) & (h->cur_next_slot == NULL),
                             1) &&
            __builtin_expect(fm__meta_kill(h->cur_next_meta, false), 1)) {
            h->cur_next_slot = (uint8_t *)item;
            return;
        }
        fm__pool_free_slow(pool, item);
        return;
    }
#ifdef FM__TC_INLINE
    fm__pool_free_tc(pool, item);
#else
    fm__pool_free_slow(pool, item);
#endif
}

static inline void fm__free_inline(void *ptr) {
    fm_pool *pool = fm__pool_of_at(ptr);
    if (__builtin_expect(pool != NULL, 1)) fm__pool_free_inline(pool, ptr);
    else fm__free_unowned(ptr);
}

#endif /* FM__INLINE && !FM_TRACK_SITES */
#endif /* FM__GNU */

/* --------------------------------------- what a call compiles to here */

/* The fastest alloc and free this translation unit may use, for the other
 * headers' inline paths (closure.h's makes and releases). */
#if defined(FM__POOL_INLINE)
#define FM__POOL_ALLOC(pool) fm__pool_alloc_inline(pool)
#define FM__POOL_FREE(pool, item) fm__pool_free_inline((pool), (item))
#elif defined(FM_TRACK_SITES)
#define FM__POOL_ALLOC(pool) fm_pool_alloc_at((pool), __FILE__, __LINE__)
#define FM__POOL_FREE(pool, item) (fm_pool_free)((pool), (item))
#else
#define FM__POOL_ALLOC(pool) (fm_pool_alloc)(pool)
#define FM__POOL_FREE(pool, item) (fm_pool_free)((pool), (item))
#endif

/* fm_pool_create as the caller's code calls it: with whether the caller
 * passes allocation sites, so that a library that records them can say
 * when a caller does not (FM_WARN_NO_SITES, pool.h), and one that does not
 * record them can say so to a caller that passes them. */
FM_API fm_pool *fm__pool_create_from(const fm_pool_desc *desc, bool caller_sites);

#ifdef __cplusplus
} /* extern "C" */
/* C++: the desc by reference, so that FM_POOL_DESC(...) passes as it is (C++
 * has no compound literal to take the address of); C++ linkage also when a
 * caller includes pool.h inside extern "C"; before the macros below take the
 * name. */
extern "C++" {
inline fm_pool *fm_pool_create(const fm_pool_desc &desc) { return fm_pool_create(&desc); }
inline fm_error fm_pool_desc_check(const fm_pool_desc &desc, char *msg, size_t msg_len) {
    return fm_pool_desc_check(&desc, msg, msg_len);
}
inline fm_pool *fm__pool_create_from(const fm_pool_desc &desc, bool caller_sites) {
    return fm__pool_create_from(&desc, caller_sites);
}
}
extern "C" {
#endif

/* The caller's calls: site-recording or inline. The library's own sources
 * call the functions (and the inline paths by their fm__ names). Variadic
 * where an argument may be a compound literal, whose commas would split it. */
#if !defined(FM__BUILDING_LIBRARY)
#if defined(FM_TRACK_SITES)
#define fm_pool_create(...) fm__pool_create_from((__VA_ARGS__), true)
#else
#define fm_pool_create(...) fm__pool_create_from((__VA_ARGS__), false)
#endif
#if defined(FM_TRACK_SITES)
#define fm_pool_alloc(pool) fm_pool_alloc_at((pool), __FILE__, __LINE__)
#define fm_pool_alloc_n(pool, out, n) fm_pool_alloc_n_at((pool), (out), (n), __FILE__, __LINE__)
#define fm_pool_new(pool) fm_pool_new_at((pool), __FILE__, __LINE__)
#elif defined(FM__POOL_INLINE)
#define fm_pool_alloc(pool) fm__pool_alloc_inline(pool)
#define fm_pool_free(pool, item) fm__pool_free_inline((pool), (item))
#define fm_pool_resolve(pool, h) fm__pool_resolve_at((pool), (h), false)
#define fm_pool_of(ptr) fm__pool_of_at(ptr)
#define fm_free(ptr) fm__free_inline(ptr)
#endif
#endif

/* The typed wrappers' _at functions (pool.h): the site reaches the library
 * where this caller tracks sites; elsewhere the call is the plain one, inline
 * where that is, so a site macro costs nothing in optimised builds. */
static inline void *fm__pool_alloc_site(fm_pool *pool, const char *file, int line) {
#if defined(FM_TRACK_SITES)
    return fm_pool_alloc_at(pool, file, line);
#else
    (void)file;
    (void)line;
    return fm_pool_alloc(pool);
#endif
}
static inline void *fm__pool_new_site(fm_pool *pool, const char *file, int line) {
#if defined(FM_TRACK_SITES)
    return fm_pool_new_at(pool, file, line);
#else
    (void)file;
    (void)line;
    return fm_pool_new(pool);
#endif
}

/* The bodies of pool.h's FM_HANDLE_TYPE, FM_POOL_DESC, FM_POOL_DECLARE_TYPED
 * and FM_POOL_DECLARE_HANDLE. */
#define FM__HANDLE_TYPE(name)                                                   \
    typedef struct name {                                                       \
        fm_handle h;                                                            \
    } name

#ifdef __cplusplus
#define FM__POOL_DESC(T, ...)                                                                 \
    ([&]() -> fm_pool_desc {                                                                  \
        fm_pool_desc fm__d{};                                                                 \
        fm__d.type_name = #T;                                                                 \
        fm__d.item_size = sizeof(T);                                                          \
        fm__d.item_align = FM_ALIGNOF(T);                                                     \
        FM__SET(fm__d, __VA_ARGS__)                                                           \
        return fm__d;                                                                         \
    }())
#else
#define FM__POOL_DESC(T, ...)                                                                 \
    ((fm_pool_desc){                                                                          \
        .type_name = #T, .item_size = sizeof(T), .item_align = FM_ALIGNOF(T), __VA_ARGS__})
#endif

#define FM__POOL_DECLARE_TYPED(T, prefix)                                       \
    FM__MAYBE_UNUSED static inline T *prefix##_alloc_at(fm_pool *pool, const char *file, \
                                                       int line) {              \
        return (T *)fm__pool_alloc_site(pool, file, line);                      \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_new_at(fm_pool *pool, const char *file, \
                                                     int line) {                \
        return (T *)fm__pool_new_site(pool, file, line);                        \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_alloc(fm_pool *pool) {           \
        return (T *)fm_pool_alloc(pool);                                        \
    }                                                                           \
    FM__MAYBE_UNUSED static inline void prefix##_free(fm_pool *pool, T *item) { \
        fm_pool_free(pool, item);                                               \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_new(fm_pool *pool) {             \
        return (T *)fm_pool_new(pool);                                          \
    }                                                                           \
    FM__MAYBE_UNUSED static inline void prefix##_delete(fm_pool *pool, T *item) { \
        fm_pool_delete(pool, item);                                             \
    }

#define FM__POOL_DECLARE_HANDLE(T, prefix, handle_type)                         \
    FM__MAYBE_UNUSED static inline handle_type prefix##_handle(const fm_pool *pool, \
                                                               const T *item) { \
        handle_type ref;                                                        \
        ref.h = fm_pool_handle(pool, item);                                     \
        return ref;                                                             \
    }                                                                           \
    FM__MAYBE_UNUSED static inline T *prefix##_resolve(const fm_pool *pool,     \
                                                      handle_type ref) {        \
        return (T *)fm_pool_resolve(pool, ref.h);                               \
    }

#ifdef __cplusplus
}
#endif

#endif /* FRAMEMEM_DETAIL_POOL_H */
