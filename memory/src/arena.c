/* arena.c: linear arenas over reserved virtual memory or chained blocks.
 *
 * Positions: every byte of an arena has a position, the number of bytes
 * handed out (or skipped for alignment) before it. In virtual-memory mode the
 * position is top - base. In chained mode each block records the position at
 * which it took over, so a mark is one number in both modes.
 *
 * Mark validation: a mark is stale once a rewind or reset released memory
 * below it. Each such cut gets a serial number; the arena keeps a stack of
 * cuts with increasing serials and increasing positions (a new cut removes
 * the entries at or above its position: any mark they would reject, it
 * rejects too). A mark (pos, serial) is valid when the first cut newer than
 * it lies at or above pos.
 *
 * Shared arenas (MUTEX, LOCKFREE): the top and limit live in atomics beside
 * the hot struct, which stays zero so the inline path in arena.h always falls
 * through to here (NONE arenas keep their limit there too; hot holds the
 * inline path's copy, 0 where that path must not run). MUTEX runs the
 * single-threaded code under the lock. LOCKFREE bumps the top with a CAS loop
 * (alignment rules out a plain fetch-add) and takes the lock only to grow:
 * committing pages raises the limit (release) after the OS commit, so a thread
 * that reads a limit covering its bytes finds them committed; chaining a
 * block first seals the top (no CAS can succeed on it), then publishes the
 * new limit and then the new top, so a thread whose CAS succeeds read the
 * limit of the block its top was in. Blocks are not reused while threads
 * allocate (only rewind and reset free them), so a top value never returns
 * and the CAS has no ABA.
 *
 * The inline bump (detail/arena.h) writes top and total_allocs with two
 * plain stores. One 16-byte store of both was tried: it held more of a
 * 136 MiB frame's cache misses in flight (about 0.5 ns per allocation
 * there), but building the vector and forwarding from it put about 11
 * cycles between one allocation and the next, so frames that stay in cache
 * ran up to 3x slower, and it cost 12 instructions, not 8.
 */
#include "framemem/arena.h"

#include "internal.h"
#include "platform/os.h"
#include "platform/thread.h"
#include "tag_internal.h"

#include <stdio.h>
#include <string.h>

#define FM__ARENA_PAGE 4096u /* block and commit granularity: >= FM_MAX_ALIGN */
#define FM__CUTS_INLINE 16
#define FM__FILL_RELEASED 0xDD
#define FM__DEFAULT_RESERVE ((size_t)64 << 20)
#define FM__DEFAULT_COMMIT_STEP ((size_t)64 << 10)
/* LOCKFREE chained arenas: the top while a thread swaps blocks. */
#define FM__TOP_SEALED UINTPTR_MAX

typedef struct fm__block {
    struct fm__block *prev; /* older block in the chain, or the next spare */
    size_t size;            /* bytes of the whole block, header included */
    uint64_t start_pos;     /* position of the block's first data byte */
} fm__block;

#define FM__BLOCK_HEADER fm_align_up(sizeof(fm__block), 64)
/* The first block: a header and room to align one allocation to 4096. */
#define FM__MIN_BLOCK fm_align_up(FM__BLOCK_HEADER + FM_MAX_ALIGN, FM__ARENA_PAGE)

typedef struct fm__cut {
    uint64_t serial;
    uint64_t pos;
} fm__cut;

struct fm_arena {
    fm__arena_hot hot; /* first: the inline fast path in arena.h reads it;
                          all zero in shared arenas */
    fm_arena_desc desc;
    fm__tag_link tag_link; /* in desc.tag's list of objects */
    bool vm;
    bool shared; /* sync is MUTEX or LOCKFREE */
    bool no_inline; /* hot.limit stays 0: every call reaches the annotations
                       (fm__calls_annotated) */
    /* shared arenas: what hot holds otherwise */
    uintptr_t top;
    uintptr_t limit; /* every policy: hot.limit is the inline path's copy */
    uint64_t shared_allocs;
    uint32_t in_flight; /* debug builds: LOCKFREE allocations under way */
    fm__mutex lock;       /* MUTEX: every call; LOCKFREE: growth and queries */
    /* virtual-memory mode */
    uint8_t *base;
    size_t committed;
    /* chained mode */
    fm__block *block; /* the block the top is in */
    fm__block *spare; /* blocks released by rewind/reset, kept for reuse */
    size_t held;      /* bytes of all blocks, chain and spare */
    /* counters */
    uint64_t high_water;
    uint64_t failed_allocs;
    uint64_t commit_events;
    uint64_t decommit_events;
    uint64_t resets;
    uint64_t rewinds;
    /* marks */
    uint64_t cut_serial;
    uint32_t n_cuts;
    uint32_t cut_cap;
    fm__cut *cuts; /* cuts_inline, or a bigger array from the allocator */
    fm__cut cuts_inline[FM__CUTS_INLINE];
    size_t self_bytes;
    char name[];
};

/* ============================================================ positions */

static uint8_t *fm__block_data(fm__block *b) { return (uint8_t *)b + FM__BLOCK_HEADER; }

/* The top and limit wherever the policy keeps them. Callers on shared arenas
 * hold the lock (or, LOCKFREE, are the only thread using the arena). */
static uintptr_t fm__top(const fm_arena *a) {
    return a->shared ? FM__ATOMIC_LOAD(&a->top, ACQUIRE) : a->hot.top;
}
static void fm__set_top(fm_arena *a, uintptr_t top) {
    if (a->shared) FM__ATOMIC_STORE(&a->top, top, RELEASE);
    else a->hot.top = top;
}
/* The limit lives in a->limit for every policy; NONE arenas copy it into
 * hot for the inline path unless a size up to FM__ARENA_INLINE_MAX added to
 * an address below it could wrap (arena.h), or where every call must reach
 * the annotations (no_inline). */
static void fm__set_limit(fm_arena *a, uintptr_t limit) {
    FM__ATOMIC_STORE(&a->limit, limit, RELEASE);
    if (!a->shared)
        a->hot.limit = !a->no_inline && limit <= UINTPTR_MAX - FM__ARENA_INLINE_MAX ? limit : 0;
}

static void fm__lock(const fm_arena *a) {
    if (a->shared) fm__mutex_lock((fm__mutex *)&a->lock);
}
static void fm__unlock(const fm_arena *a) {
    if (a->shared) fm__mutex_unlock((fm__mutex *)&a->lock);
}

static void fm__count_failed(fm_arena *a) {
    if (a->shared) FM__ATOMIC_FETCH_ADD(&a->failed_allocs, 1, RELAXED);
    else
        FM__ATOMIC_STORE(&a->failed_allocs, FM__ATOMIC_LOAD(&a->failed_allocs, RELAXED) + 1,
                         RELAXED);
}

/* The position of a top value (which lies in the current block). */
static uint64_t fm__pos_of(const fm_arena *a, uintptr_t top) {
    if (a->vm) return (uint64_t)(top - (uintptr_t)a->base);
    if (!a->block) return 0;
    return a->block->start_pos + (top - (uintptr_t)fm__block_data(a->block));
}

static uint64_t fm__arena_pos(const fm_arena *a) { return fm__pos_of(a, fm__top(a)); }

static void fm__note_pos(fm_arena *a, uint64_t pos) {
    if (pos > a->high_water) a->high_water = pos;
}

/* ====================================================== debug annotations */

static void fm__release_bytes(fm_arena *a, uint8_t *p, size_t n) {
    if (!n) return;
#ifndef NDEBUG
    if (a->desc.poison) {
        /* Alignment gaps between allocations were never unpoisoned. */
        FM__UNPOISON(p, n);
        FM__VG_UNDEFINED(p, n);
        memset(p, FM__FILL_RELEASED, n);
    }
#else
    (void)a;
#endif
    FM__POISON(p, n);
    FM__VG_NOACCESS(p, n);
}

/* ============================================================= create */

/* Bytes of a chained arena's first block under desc d (SIZE_MAX: too big). */
static size_t fm__first_block(const fm_arena_desc *d) {
    size_t step = fm__def(d->commit_step, FM__DEFAULT_COMMIT_STEP);
    if (step > SIZE_MAX - FM__ARENA_PAGE) return SIZE_MAX;
    step = fm_align_up(step, FM__ARENA_PAGE);
    return step > FM__MIN_BLOCK ? step : FM__MIN_BLOCK;
}

fm_error fm_arena_desc_check(const fm_arena_desc *d, char *msg, size_t msg_len) {
    if (!d) return fm__desc_verdict("fm_arena_desc_check", NULL, msg, msg_len);
    const char *why = NULL;
    if ((unsigned)d->sync >= FM_SYNC_COUNT) why = "unknown sync policy";
    else if (d->sync == FM_SYNC_THREAD_CACHE)
        why = "FM_SYNC_THREAD_CACHE is a pool policy; arenas take NONE, MUTEX or LOCKFREE";
    else if (!fm_allocator_valid(&d->allocator))
        why = "allocator needs both alloc and free";
    else if (d->commit_step > fm__def(d->reserve_bytes, FM__DEFAULT_RESERVE))
        why = "commit_step above reserve_bytes";
    else if (d->allocator.alloc && fm__first_block(d) > fm__def(d->reserve_bytes, FM__DEFAULT_RESERVE))
        why = "reserve_bytes cannot hold the first chained block (commit_step, at least 8 KiB)";
    else if (d->huge_pages && d->allocator.alloc)
        why = "huge_pages needs virtual-memory mode: an allocator's blocks come in its own pages";
    return fm__desc_verdict(NULL, why, msg, msg_len);
}

/* v rounded up to a multiple of unit (a power of two); sizes near SIZE_MAX
 * stay where they are, so the OS refuses them at create rather than the
 * rounding wrapping them small. */
static size_t fm__round_up(size_t v, size_t unit) {
    return v > SIZE_MAX - unit ? v : fm_align_up(v, unit);
}

/* The arena's page: commit granularity, and the unit decommit releases
 * whole (the huge page with huge pages, where releasing part of one would
 * split it). */
static size_t fm__arena_page(const fm_arena *a) {
    return a->desc.huge_pages ? fm__os_get_caps()->huge_page_size : FM__ARENA_PAGE;
}

static bool fm__arena_add_block(fm_arena *a, uint64_t pos, size_t need, fm_error refused);

fm_arena *fm_arena_create(const fm_arena_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "arena: fm_arena_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, "arena");
    char why[128];
    if (!fm__desc_accepted(fm_arena_desc_check(desc, why, sizeof why), "arena", name, why))
        return NULL;
    size_t self_bytes;
    fm_arena *a = FM__OBJECT_NEW(fm_arena, &desc->allocator, "arena", name, &self_bytes);
    if (!a) return NULL;
    a->self_bytes = self_bytes;
    a->cuts = a->cuts_inline;
    a->cut_cap = FM__CUTS_INLINE;
    a->desc = *desc;
    a->desc.name = a->name;
    a->shared = desc->sync != FM_SYNC_NONE;
    a->no_inline = fm__calls_annotated() || FM__HOOKS; /* every allocation an event */
    fm__mutex_init(&a->lock, false);
    FM__VG_CREATE_POOL(a);
    a->vm = fm__allocator_is_system(&desc->allocator) && fm__os_get_caps()->has_virtual_reserve;
    /* Huge pages only where the OS will give them (asked at each create:
     * the setting can change while the program runs); otherwise the arena
     * is an ordinary one and its resolved desc says so. */
    a->desc.huge_pages = desc->huge_pages && a->vm && fm__os_huge_pages_usable();
    size_t page = fm__arena_page(a);
    a->desc.reserve_bytes = fm__round_up(fm__def(desc->reserve_bytes, FM__DEFAULT_RESERVE), page);
    size_t step = fm__def(desc->commit_step, FM__DEFAULT_COMMIT_STEP);
    a->desc.commit_step = fm__round_up(step, page);
    if (a->vm) {
        uint8_t *base = fm__os_reserve(a->desc.reserve_bytes, page, false);
        if (!base) {
            fm__report(FM_ERR_OUT_OF_MEMORY, "arena '%s': cannot reserve %zu bytes of address space",
                       name, a->desc.reserve_bytes);
            FM__VG_DESTROY_POOL(a);
            fm__mutex_destroy(&a->lock);
            fm_allocator_free(&desc->allocator, a, self_bytes);
            return NULL;
        }
        /* The advice sticks to the range through the commits; a refusal
         * leaves an ordinary arena (4 KiB commit steps). */
        if (a->desc.huge_pages && !fm__os_advise_huge_pages(base, a->desc.reserve_bytes)) {
            a->desc.huge_pages = false;
            a->desc.commit_step = fm__round_up(step, fm__arena_page(a));
        }
        a->base = base;
        fm__set_top(a, (uintptr_t)base);
        fm__set_limit(a, (uintptr_t)base);
        fm__tag_reserve(a->desc.tag, a->desc.reserve_bytes);
    } else if (!fm__arena_add_block(a, 0, 0, FM_ERR_OUT_OF_MEMORY)) {
        FM__VG_DESTROY_POOL(a);
        fm__mutex_destroy(&a->lock);
        fm_allocator_free(&desc->allocator, a, self_bytes);
        return NULL;
    }
    fm__tag_attach(a->desc.tag, &a->tag_link, FM__TAG_ARENA, a);
    return a;
}

void fm_arena_destroy(fm_arena *arena) {
    if (!arena) return;
    fm_arena *a = arena;
    /* First, so that the tag's stats never read an arena being destroyed. */
    fm__tag_detach(a->desc.tag, &a->tag_link);
    fm__hook_reset(a->name);
    if (a->vm) {
        FM__UNPOISON(a->base, a->committed);
        fm__os_release(a->base, a->desc.reserve_bytes);
        fm__tag_uncharge(a->desc.tag, a->committed, false);
        fm__tag_unreserve(a->desc.tag, a->desc.reserve_bytes);
    } else {
        fm__tag_uncharge(a->desc.tag, a->held, true);
        fm__block *lists[2] = {a->block, a->spare};
        for (int i = 0; i < 2; i++) {
            for (fm__block *b = lists[i], *prev; b; b = prev) {
                prev = b->prev;
                size_t size = b->size;
                FM__UNPOISON(b, size);
                FM__VG_UNDEFINED(b, size);
                fm_allocator_free(&a->desc.allocator, b, size);
            }
        }
    }
    if (a->cuts != a->cuts_inline)
        fm_allocator_free(&a->desc.allocator, a->cuts, a->cut_cap * sizeof *a->cuts);
    FM__VG_DESTROY_POOL(a);
    fm__mutex_destroy(&a->lock);
    fm_allocator al = a->desc.allocator;
    fm_allocator_free(&al, a, a->self_bytes);
}

/* ============================================================== growth */

/* Virtual memory: commits enough for `end` (a position), in commit steps. */
static fm_error fm__arena_commit(fm_arena *a, uint64_t end) {
    if (end > a->desc.reserve_bytes) return FM_ERR_ARENA_FULL;
    /* Up to a multiple of commit_step, which need not be a power of two (a
     * mask would commit some other amount), or to the end of the reservation
     * (no wrap on 32-bit targets, where the two may pass SIZE_MAX). */
    size_t rem = (size_t)end % a->desc.commit_step;
    size_t up = rem ? a->desc.commit_step - rem : 0;
    size_t want = up <= a->desc.reserve_bytes - (size_t)end ? (size_t)end + up
                                                            : a->desc.reserve_bytes;
    /* Charged to the tag before the OS commits (it reported a refusal). */
    size_t more = want - a->committed;
    uint64_t start = fm__hook_clock();
    if (!fm__tag_charge(a->desc.tag, more, "arena", a->name)) return FM_ERR_BUDGET;
    if (!fm__os_commit(a->base + a->committed, more)) {
        fm__tag_refund(a->desc.tag, more);
        return FM_ERR_OUT_OF_MEMORY;
    }
    fm__tag_charged(a->desc.tag, more, false, "arena", a->name);
    FM__POISON(a->base + a->committed, want - a->committed);
    FM__VG_NOACCESS(a->base + a->committed, want - a->committed);
    a->committed = want;
    fm__set_limit(a, (uintptr_t)a->base + want); /* after the commit: see the top of the file */
    a->commit_events++;
    fm__hook_grow(a->name, more, start);
    return FM_OK;
}

/* Chained: makes the top a block with room for `need` more bytes (aligned
 * to up to 4096) taking over at position pos, reusing a spare block when one
 * is big enough. A refusal is reported as `refused`: FM_ERR_ARENA_FULL for an
 * allocation, out of memory at create. The limit is published before the
 * top (LOCKFREE readers load them in the other order). */
static bool fm__arena_add_block(fm_arena *a, uint64_t pos, size_t need, fm_error refused) {
    size_t want = FM__BLOCK_HEADER + need + FM_MAX_ALIGN;
    if (want < need) {
        fm__report(FM_ERR_INVALID_ARG, "arena '%s': allocation of %zu bytes is too large", a->name,
                   need);
        return false;
    }
    size_t size = fm_align_up(want > a->desc.commit_step ? want : a->desc.commit_step,
                              FM__ARENA_PAGE);
    fm__block **link = &a->spare;
    while (*link && (*link)->size < want) link = &(*link)->prev;
    fm__block *b = *link;
    if (b) {
        *link = b->prev;
    } else {
        /* held never passes the reserve: compared so that no sum wraps. */
        if (size > a->desc.reserve_bytes - a->held || size < want) {
            fm__report(refused, "arena '%s': %zu more bytes would pass reserve_bytes %zu",
                       a->name, size, a->desc.reserve_bytes);
            return false;
        }
        /* Charged to the tag before the allocator is asked (it reported a
         * refusal). */
        uint64_t start = fm__hook_clock();
        if (!fm__tag_charge(a->desc.tag, size, "arena", a->name)) return false;
        b = fm_allocator_alloc(&a->desc.allocator, size, FM__ARENA_PAGE);
        if (!b) {
            fm__tag_refund(a->desc.tag, size);
            fm__report(refused, "arena '%s': backing allocator refused a %zu-byte block",
                       a->name, size);
            return false;
        }
        fm__tag_charged(a->desc.tag, size, true, "arena", a->name);
        FM__VG_NOACCESS(b, size);
        FM__VG_UNDEFINED(b, FM__BLOCK_HEADER);
        b->size = size;
        a->held += size;
        a->commit_events++;
        FM__POISON(fm__block_data(b), size - FM__BLOCK_HEADER);
        fm__hook_grow(a->name, size, start);
    }
    b->prev = a->block;
    b->start_pos = pos;
    a->block = b;
    fm__set_limit(a, (uintptr_t)b + b->size);
    fm__set_top(a, (uintptr_t)fm__block_data(b));
    return true;
}

/* ============================================================ allocation */

static FM__COLD void fm__report_align(fm_arena *a, size_t align, const char *op) {
    fm__report(FM_ERR_INVALID_ARG, "arena '%s': %s: alignment %zu is not a power of two up to 4096",
               a->name, op, align);
}

static bool fm__align_valid(fm_arena *a, size_t align, const char *op) {
    if (FM__LIKELY(FM_IS_POW2(align) && align <= FM_MAX_ALIGN)) return true;
    fm__report_align(a, align, op);
    return false;
}

/* No arena could hold size bytes, wherever it lay: a chained block needs its
 * header, the largest alignment's padding and a page's rounding besides. The
 * same verdict on every target, whatever the arena's address. */
static bool fm__size_overflows(size_t size) {
    return size > SIZE_MAX - FM__BLOCK_HEADER - FM_MAX_ALIGN - FM__ARENA_PAGE;
}

static FM__COLD void fm__report_size(fm_arena *a, size_t size) {
    fm__report(FM_ERR_INVALID_ARG, "arena '%s': size %zu overflows the address space", a->name,
               size);
}

/* false (reported) for a size no arena could hold. Any other size whose end
 * at p would pass the top of the address space (a 32-bit arena high in
 * memory meets that below 2 GiB) is past this arena's limit: growth finds it
 * past the reserve, or asks the allocator for a block that big, and the
 * arena is full for it, as a 64-bit one is. */
static bool fm__size_fits(fm_arena *a, uintptr_t p, size_t size) {
    if (FM__LIKELY(size <= UINTPTR_MAX - p) || !fm__size_overflows(size)) return true;
    fm__report_size(a, size);
    return false;
}

/* Room for size bytes at p (aligned from top) where the limit is too low:
 * commits more or chains a block. Shared arenas hold the lock. Reported. */
static bool fm__arena_grow(fm_arena *a, uintptr_t top, uintptr_t p, size_t size) {
    if (a->vm) {
        uint64_t start = p - (uintptr_t)a->base;
        if (size > UINT64_MAX - start) {
            fm__report(FM_ERR_INVALID_ARG, "arena '%s': size %zu overflows", a->name, size);
            return false;
        }
        fm_error err = fm__arena_commit(a, start + size);
        if (err == FM_ERR_ARENA_FULL)
            fm__report(err, "arena '%s': %zu bytes at %llu would pass reserve_bytes %zu", a->name,
                       size, (unsigned long long)start, a->desc.reserve_bytes);
        else if (err != FM_OK && err != FM_ERR_BUDGET) /* the tag reported a budget's refusal */
            fm__report(err, "arena '%s': the OS refused to commit memory", a->name);
        return err == FM_OK;
    }
    if (fm__size_overflows(size)) {
        fm__report(FM_ERR_INVALID_ARG, "arena '%s': size %zu overflows", a->name, size);
        return false;
    }
    uint64_t pos = fm__pos_of(a, top);
    fm__note_pos(a, pos);
    return fm__arena_add_block(a, pos, size, FM_ERR_ARENA_FULL);
}

/* [p, p + size) was just handed out. */
static void fm__arena_hand_out(fm_arena *a, uintptr_t p, size_t size) {
#ifdef FM__ASAN
    /* Neighbours may share an 8-byte shadow granule, which ASan updates by
     * read-modify-write: LOCKFREE threads take turns (MUTEX holds the lock). */
    bool lf = a->desc.sync == FM_SYNC_LOCKFREE;
    if (lf) fm__mutex_lock(&a->lock);
    FM__UNPOISON((void *)p, size);
    if (lf) fm__mutex_unlock(&a->lock);
#endif
    /* Valgrind: a mempool in virtual-memory mode, where one TRIM describes a
     * rewind; chained blocks only mark bytes addressable. */
    if (a->vm) {
        if (size) FM__VG_ALLOC(a, (void *)p, size); /* empty chunks would overlap */
    } else {
        FM__VG_UNDEFINED((void *)p, size);
    }
    /* MUTEX: under the lock, so before any reset's event. Not for 0 bytes,
     * which take no memory and share the next allocation's address. */
    if (size) fm__hook_alloc(a->name, (void *)p, size);
}

/* NONE, and MUTEX under the lock. `shared` is a constant at each call, so
 * the NONE copy works on the hot struct with no policy test. */
static inline FM__ALWAYS_INLINE void *fm__alloc_serial(fm_arena *a, size_t size, size_t al,
                                                       bool shared) {
    uintptr_t top = shared ? FM__ATOMIC_LOAD(&a->top, RELAXED) : a->hot.top;
    uintptr_t limit = FM__ATOMIC_LOAD(&a->limit, RELAXED);
    uintptr_t p = fm_align_up(top, al);
    if (!fm__size_fits(a, p, size)) return NULL;
    if (FM__UNLIKELY(size > limit - p)) {
        if (!fm__arena_grow(a, top, p, size)) return NULL;
        p = fm_align_up(fm__top(a), al);
    }
    if (shared) {
        FM__ATOMIC_STORE(&a->top, p + size, RELAXED);
        FM__ATOMIC_FETCH_ADD(&a->shared_allocs, 1, RELAXED);
    } else {
        a->hot.top = p + size;
        a->hot.total_allocs++;
    }
    fm__arena_hand_out(a, p, size);
    return (void *)p;
}

/* LOCKFREE: makes room for size bytes (align al) unless another thread did. */
static bool fm__grow_lockfree(fm_arena *a, size_t size, size_t al) {
    fm__mutex_lock(&a->lock);
    bool ok = true;
    /* Under the lock the top is never sealed and matches the limit. */
    uintptr_t top = FM__ATOMIC_LOAD(&a->top, ACQUIRE);
    uintptr_t p = fm_align_up(top, al);
    if (size > FM__ATOMIC_LOAD(&a->limit, ACQUIRE) - p) {
        if (a->vm) {
            ok = fm__arena_grow(a, top, p, size);
        } else {
            /* Seal the block: its final top is where the next block takes over. */
            uintptr_t final =
                FM__ATOMIC_EXCHANGE(&a->top, FM__TOP_SEALED, ACQ_REL);
            ok = fm__arena_grow(a, final, fm_align_up(final, al), size);
            if (!ok) FM__ATOMIC_STORE(&a->top, final, RELEASE);
        }
    }
    fm__mutex_unlock(&a->lock);
    return ok;
}

static void *fm__alloc_lockfree(fm_arena *a, size_t size, size_t al) {
    uintptr_t top = FM__ATOMIC_LOAD(&a->top, ACQUIRE);
    for (;;) {
        if (FM__UNLIKELY(top == FM__TOP_SEALED)) {
            /* Another thread is chaining a block under the lock: wait for it. */
            fm__mutex_lock(&a->lock);
            fm__mutex_unlock(&a->lock);
            top = FM__ATOMIC_LOAD(&a->top, ACQUIRE);
            continue;
        }
        uintptr_t limit = FM__ATOMIC_LOAD(&a->limit, ACQUIRE);
        uintptr_t p = fm_align_up(top, al);
        if (!fm__size_fits(a, p, size)) return NULL;
        if (p <= limit && size <= limit - p) {
            if (FM__ATOMIC_CAS_WEAK(&a->top, &top, p + size, ACQ_REL, ACQUIRE))
                break;
            continue; /* the failed CAS reloaded top */
        }
        if (p > limit) {
            /* top from one block, limit from the next: a block swap raced
             * the two loads; the CAS would fail, so start over. */
            top = FM__ATOMIC_LOAD(&a->top, ACQUIRE);
            continue;
        }
        if (!fm__grow_lockfree(a, size, al)) return NULL;
        top = FM__ATOMIC_LOAD(&a->top, ACQUIRE);
    }
    uintptr_t p = fm_align_up(top, al);
    FM__ATOMIC_FETCH_ADD(&a->shared_allocs, 1, RELAXED);
    fm__arena_hand_out(a, p, size);
    return (void *)p;
}

/* Out of line, so the NONE path of fm__arena_alloc_slow stays lean. */
static FM__NOINLINE void *fm__alloc_shared(fm_arena *a, size_t size, size_t al) {
    void *p;
    if (a->desc.sync == FM_SYNC_MUTEX) {
        fm__mutex_lock(&a->lock);
        p = fm__alloc_serial(a, size, al, true);
        fm__mutex_unlock(&a->lock);
        return p;
    }
#ifndef NDEBUG
    FM__ATOMIC_FETCH_ADD(&a->in_flight, 1, ACQ_REL);
#endif
    p = fm__alloc_lockfree(a, size, al);
#ifndef NDEBUG
    FM__ATOMIC_FETCH_SUB(&a->in_flight, 1, ACQ_REL);
#endif
    return p;
}

void *fm__arena_alloc_slow(fm_arena *arena, size_t size, size_t align) {
    fm_arena *a = arena;
    size_t al = align ? align : FM_DEFAULT_ALIGN;
    void *p = NULL;
    if (!fm__align_valid(a, al, "alloc")) {
        /* p stays NULL */
    } else if (FM__LIKELY(a->desc.sync == FM_SYNC_NONE)) {
        p = fm__alloc_serial(a, size, al, false);
    } else {
        p = fm__alloc_shared(a, size, al);
    }
    if (FM__UNLIKELY(!p)) fm__count_failed(a);
    return p;
}

void *fm_arena_alloc(fm_arena *arena, size_t size, size_t align) {
    FM__REFUSE_NULL(arena, "arena", NULL);
    return FM__ARENA_ALLOC(arena, size, align);
}

void *fm_arena_alloc_zero(fm_arena *arena, size_t size, size_t align) {
    FM__REFUSE_NULL(arena, "arena", NULL);
    void *p = FM__ARENA_ALLOC(arena, size, align);
    if (p) memset(p, 0, size);
    return p;
}

void *fm_arena_alloc_array(fm_arena *arena, size_t count, size_t size, size_t align) {
    FM__REFUSE_NULL(arena, "arena", NULL);
    if (size && count > SIZE_MAX / size) {
        fm__count_failed(arena);
        fm__report(FM_ERR_INVALID_ARG, "arena '%s': array of %zu x %zu bytes overflows",
                   arena->name, count, size);
        return NULL;
    }
    return fm_arena_alloc_zero(arena, count * size, align);
}

/* ================================================== marks, rewind, reset */

fm_arena_mark fm_arena_get_mark(const fm_arena *arena) {
    FM__REFUSE_NULL(arena, "arena", (fm_arena_mark){0});
    fm__lock(arena);
    fm_arena_mark m = {.arena = arena, .pos = fm__arena_pos(arena), .serial = arena->cut_serial};
    fm__unlock(arena);
    return m;
}

static void fm__record_cut(fm_arena *a, uint64_t pos) {
    while (a->n_cuts && a->cuts[a->n_cuts - 1].pos >= pos) a->n_cuts--;
    if (a->n_cuts == a->cut_cap) {
        /* The stack only grows while cuts land at rising positions (a scope
         * rewound, then more kept above it); reset empties it, so it stops
         * growing once a frame's pattern has been seen. */
        uint32_t cap = a->cut_cap * 2;
        fm__cut *cuts = fm_allocator_alloc(&a->desc.allocator, cap * sizeof *cuts, alignof(fm__cut));
        if (cuts) {
            memcpy(cuts, a->cuts, a->n_cuts * sizeof *cuts);
            if (a->cuts != a->cuts_inline)
                fm_allocator_free(&a->desc.allocator, a->cuts, a->cut_cap * sizeof *cuts);
            a->cuts = cuts;
            a->cut_cap = cap;
        } else {
            /* No memory for bookkeeping: forget the oldest cut, so a stale
             * mark older than it may pass. The rewind itself stands. */
            memmove(a->cuts, a->cuts + 1, (a->n_cuts - 1) * sizeof *a->cuts);
            a->n_cuts--;
        }
    }
    a->cuts[a->n_cuts++] = (fm__cut){++a->cut_serial, pos};
}

static bool fm__mark_released(const fm_arena *a, fm_arena_mark m) {
    for (uint32_t i = 0; i < a->n_cuts; i++) {
        if (a->cuts[i].serial > m.serial) return a->cuts[i].pos < m.pos;
    }
    return false;
}

/* Moves the top down to `pos` (<= the current position), releasing bytes. */
static void fm__arena_cut(fm_arena *a, uint64_t pos) {
    fm__note_pos(a, fm__arena_pos(a));
    if (a->vm) {
        uint8_t *new_top = a->base + pos;
        fm__release_bytes(a, new_top, (size_t)(fm__top(a) - (uintptr_t)new_top));
        fm__set_top(a, (uintptr_t)new_top);
        FM__VG_TRIM(a, a->base, (size_t)pos);
    } else {
        while (a->block->start_pos > pos) {
            fm__block *b = a->block;
            uint8_t *data = fm__block_data(b);
            fm__release_bytes(a, data, (size_t)(fm__top(a) - (uintptr_t)data));
            a->block = b->prev;
            b->prev = a->spare;
            a->spare = b;
            fm__set_limit(a, (uintptr_t)a->block + a->block->size);
            fm__set_top(a, (uintptr_t)fm__block_data(a->block) +
                               (size_t)(b->start_pos - a->block->start_pos));
        }
        uint8_t *new_top = fm__block_data(a->block) + (size_t)(pos - a->block->start_pos);
        fm__release_bytes(a, new_top, (size_t)(fm__top(a) - (uintptr_t)new_top));
        fm__set_top(a, (uintptr_t)new_top);
    }
    fm__record_cut(a, pos);
}

bool fm__arena_busy(const fm_arena *arena) {
#ifndef NDEBUG
    return arena->desc.sync == FM_SYNC_LOCKFREE &&
           FM__ATOMIC_LOAD(&arena->in_flight, ACQUIRE) != 0;
#else
    (void)arena;
    return false;
#endif
}

/* LOCKFREE arenas rewind, reset and decommit only while no other thread
 * allocates from them; debug builds catch an allocation under way. */
static bool fm__arena_quiet(fm_arena *a, const char *op) {
    if (FM__LIKELY(!fm__arena_busy(a))) return true;
    fm__report(FM_ERR_INVALID_ARG,
               "arena '%s': %s while another thread allocates (a LOCKFREE arena is rewound, "
               "reset or decommitted only between allocation phases); nothing changed",
               a->name, op);
    return false;
}

static void fm__arena_rewind_locked(fm_arena *a, fm_arena_mark mark) {
    const char *why = NULL;
    if (mark.arena != a) why = "the mark belongs to another arena";
    else if (mark.pos > fm__arena_pos(a)) why = "the mark lies above the top";
    else if (fm__mark_released(a, mark)) why = "an earlier rewind or reset already released the mark";
    if (why) {
        fm__report(FM_ERR_BAD_MARK, "arena '%s': rewind to position %llu: %s", a->name,
                   (unsigned long long)mark.pos, why);
        return;
    }
    fm__arena_cut(a, mark.pos);
    a->rewinds++;
    fm__hook_reset(a->name); /* see hooks.h: no list of allocations to free */
}

void fm_arena_rewind(fm_arena *arena, fm_arena_mark mark) {
    FM__REFUSE_NULL(arena, "arena", );
    if (!fm__arena_quiet(arena, "rewind")) return;
    fm__lock(arena);
    fm__arena_rewind_locked(arena, mark);
    fm__unlock(arena);
}

void fm_arena_reset(fm_arena *arena) {
    FM__REFUSE_NULL(arena, "arena", );
    if (!fm__arena_quiet(arena, "reset")) return;
    fm__lock(arena);
    fm__arena_cut(arena, 0);
    arena->resets++;
    fm__hook_reset(arena->name); /* under the lock: before any later allocation */
    fm__unlock(arena);
}

static size_t fm__arena_decommit_locked(fm_arena *a, size_t keep_bytes) {
    size_t released = 0;
    uint64_t pos = fm__arena_pos(a);
    if (a->vm) {
        size_t keep = keep_bytes > pos ? keep_bytes : (size_t)pos;
        /* committed is a multiple of the page (see fm__arena_page). */
        keep = keep >= a->committed ? a->committed : fm_align_up(keep, fm__arena_page(a));
        if (keep < a->committed) {
            released = a->committed - keep;
            FM__UNPOISON(a->base + keep, released);
            fm__os_decommit(a->base + keep, released);
            fm__tag_uncharge(a->desc.tag, released, false);
            a->committed = keep;
            fm__set_limit(a, (uintptr_t)a->base + keep);
        }
    } else {
        /* Spare blocks are wholly above the top; give back the largest
         * first while what stays holds keep_bytes. */
        for (;;) {
            fm__block **best = NULL;
            for (fm__block **link = &a->spare; *link; link = &(*link)->prev) {
                if (!best || (*link)->size > (*best)->size) best = link;
            }
            if (!best || a->held - (*best)->size < keep_bytes) break;
            fm__block *b = *best;
            size_t size = b->size;
            *best = b->prev;
            a->held -= size;
            released += size;
            FM__UNPOISON(b, size);
            FM__VG_UNDEFINED(b, size);
            fm_allocator_free(&a->desc.allocator, b, size);
            fm__tag_uncharge(a->desc.tag, size, true);
        }
    }
    if (released) a->decommit_events++;
    return released;
}

size_t fm_arena_decommit(fm_arena *arena, size_t keep_bytes) {
    FM__REFUSE_NULL(arena, "arena", 0);
    if (!fm__arena_quiet(arena, "decommit")) return 0;
    fm__lock(arena);
    size_t released = fm__arena_decommit_locked(arena, keep_bytes);
    fm__unlock(arena);
    return released;
}

/* ================================================================ queries */

void fm_arena_get_stats(const fm_arena *arena, fm_arena_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    FM__REFUSE_NULL(arena, "arena", );
    if (!out) return;
    const fm_arena *a = arena;
    fm__lock(a);
    uint64_t pos = fm__arena_pos(a);
    out->name = a->name;
    out->used = pos;
    out->high_water = pos > a->high_water ? pos : a->high_water;
    out->committed = a->vm ? a->committed : a->held;
    out->reserved = a->desc.reserve_bytes;
    out->total_allocs =
        a->hot.total_allocs + FM__ATOMIC_LOAD(&a->shared_allocs, RELAXED);
    out->failed_allocs = FM__ATOMIC_LOAD(&a->failed_allocs, RELAXED);
    out->commit_events = a->commit_events;
    out->decommit_events = a->decommit_events;
    out->resets = a->resets;
    out->rewinds = a->rewinds;
    out->huge_pages = a->desc.huge_pages;
    fm__unlock(a);
}

/* For the tag's stats (tag.h): the used bytes, read as fm_arena_get_stats
 * reads them. */
uint64_t fm__arena_live_bytes(fm_arena *arena) {
    fm__lock(arena);
    uint64_t pos = fm__arena_pos(arena);
    fm__unlock(arena);
    return pos;
}

fm_arena_desc fm_arena_get_desc(const fm_arena *arena) {
    FM__REFUSE_NULL(arena, "arena", (fm_arena_desc){0});
    return arena->desc;
}

const char *fm_arena_name(const fm_arena *arena) {
    FM__REFUSE_NULL(arena, "arena", "(null)");
    return arena->name;
}

static bool fm__arena_owns_locked(const fm_arena *arena, uintptr_t p, size_t size) {
    uintptr_t top = fm__top(arena);
    if (arena->vm) {
        uintptr_t base = (uintptr_t)arena->base;
        return p >= base && p <= top && size <= top - p;
    }
    /* A block's used part ends where the next block took over. */
    uint64_t end_pos = fm__pos_of(arena, top);
    for (const fm__block *b = arena->block; b; b = b->prev) {
        uintptr_t data = (uintptr_t)fm__block_data((fm__block *)b);
        uintptr_t end = data + (size_t)(end_pos - b->start_pos);
        if (p >= data && p <= end && size <= end - p) return true;
        end_pos = b->start_pos;
    }
    return false;
}

bool fm_arena_owns(const fm_arena *arena, const void *ptr, size_t size) {
    FM__REFUSE_NULL(arena, "arena", false);
    if (!ptr) return false;
    fm__lock(arena);
    bool owns = fm__arena_owns_locked(arena, (uintptr_t)ptr, size);
    fm__unlock(arena);
    return owns;
}
