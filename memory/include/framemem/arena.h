/*
 * framemem/arena.h: linear arenas, scoped marks and double-buffered frame
 * arenas for per-frame temporaries.
 *
 * Step by step:
 *
 *     // 1. An arena reserves address space once (64 MiB unless told).
 *     fm_arena *scratch = fm_arena_create(&(fm_arena_desc){.name = "scratch"});
 *
 *     // 2. An allocation bumps a pointer; a mark rewinds a scope.
 *     fm_arena_mark m = fm_arena_get_mark(scratch);
 *     vec3 *pts = FM_ARENA_NEW_ARRAY(scratch, vec3, 1024);
 *     fm_arena_rewind(scratch, m);             // pts is released
 *
 *     // 3. A frame arena keeps a frame's memory for `frames` frames.
 *     fm_frame_arena *frame = fm_frame_arena_create(&(fm_frame_arena_desc){0});
 *     draw_cmd *cmd = fm_frame_alloc(frame, sizeof *cmd, 0);
 *     fm_frame_arena_advance(frame);           // at the frame boundary
 *
 * An arena hands out memory by bumping a pointer and frees it all at once.
 * By default it reserves address space once (reserve_bytes) and commits it in
 * commit_step pieces as the top grows: pointers never move and growth never
 * copies. With an fm_allocator in the desc it chains blocks from that
 * allocator instead (platforms without virtual memory, or a user heap).
 *
 * Huge pages (desc.huge_pages, virtual memory only, off by default): the
 * reservation is aligned to 2 MiB and advised for transparent huge pages, and
 * memory is committed in whole 2 MiB steps (reserve_bytes and commit_step are
 * rounded up to multiples of 2 MiB). A big frame arena then takes a TLB
 * entry and a fault per 2 MiB instead of per 4 KiB; the price is that the first
 * touch of each 2 MiB faults in (and zeroes) all of it, at times after the
 * kernel compacts memory to find one, and even a tiny arena holds 2 MiB of
 * RAM. Where the OS cannot do it (no THP, THP mode "never", THP
 * disabled for the process, not Linux) the arena works as without the flag:
 * fm_arena_get_desc and the stats tell which one you got.
 *
 * Lifetime: fm_arena_create / fm_arena_destroy. Marks rewind LIFO scopes;
 * reset is O(1) (no per-allocation work unless debug poisoning is on).
 * A frame arena holds `frames` arenas (default 2): memory allocated during
 * frame f stays valid until frame f + frames begins.
 *
 * Threads (desc.sync):
 * - FM_SYNC_NONE (default): one thread at a time; no atomics, no lock, and
 *   optimised builds inline the bump.
 * - FM_SYNC_MUTEX: every call takes the arena's lock; anything goes from any
 *   thread (a mark is still a position: rewinding to it releases whatever
 *   other threads allocated above it).
 * - FM_SYNC_LOCKFREE: allocation from any number of threads at once by a CAS
 *   on the top; committing pages or chaining a block takes a lock. Stats,
 *   marks and fm_arena_owns may be read at any time (a snapshot). Rewind,
 *   reset and decommit need the arena to themselves: call them only while no
 *   other thread allocates from it (after the jobs are joined); debug builds
 *   report one that overlaps an allocation (FM_ERR_INVALID_ARG, nothing done).
 *   Each call crosses into the library (no inline path).
 * - FM_SYNC_THREAD_CACHE is a pool policy: create rejects it
 *   (FM_ERR_INVALID_ARG), as it does unknown values.
 *
 * NULL (base.h): every function reports a NULL arena or frame arena
 * (FM_ERR_INVALID_ARG) and returns its failure value; destroy(NULL) does
 * nothing. The inline fm_arena_alloc and fm_frame_alloc of optimised builds
 * (detail/arena.h) take a non-NULL arena as a precondition; debug and sanitizer
 * builds, and (fm_arena_alloc)(...) in any build, check it.
 *
 * Debug aids: under AddressSanitizer everything above the top and everything
 * released by rewind, reset and frame advance is poisoned; Valgrind builds
 * describe the arena as a mempool; with desc.poison, debug builds fill
 * released bytes with 0xDD.
 */
#ifndef FRAMEMEM_ARENA_H
#define FRAMEMEM_ARENA_H

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fm_arena fm_arena;

typedef struct fm_arena_desc {
    const char *name;     /* shown in errors and stats; copied */
    size_t reserve_bytes; /* 0 = 64 MiB: most the arena ever holds */
    size_t commit_step;   /* 0 = 64 KiB: commit granularity (block size when chained) */
    fm_allocator allocator; /* set: chained blocks from it instead of virtual memory */
    fm_sync sync;         /* NONE (default), MUTEX or LOCKFREE: see Threads above */
    bool poison;          /* debug builds: fill released bytes with 0xDD */
    bool huge_pages;      /* 2 MiB pages where the OS allows (see above); not with
                             an allocator. Resolved desc: whether it took effect */
    fm_tag *tag;          /* memory tag its commits and blocks are charged to
                             (tag.h); NULL: none */
} fm_arena_desc;

/* A position in one arena, for fm_arena_rewind. Opaque. */
typedef struct fm_arena_mark {
    const fm_arena *arena;
    uint64_t pos;
    uint64_t serial;
} fm_arena_mark;

#define FM_ARENA_STATS_FIELDS(X)                                                 \
    X(used, "bytes between the base and the top")                                \
    X(high_water, "highest `used` since create")                                 \
    X(committed, "bytes committed (virtual memory) or held in blocks (chained)") \
    X(reserved, "address space reserved, or the chained-block limit")            \
    X(total_allocs, "successful allocations since create")                       \
    X(failed_allocs, "allocations that returned NULL")                           \
    X(commit_events, "times memory was committed or a block was added")          \
    X(decommit_events, "times memory was given back")                            \
    X(resets, "fm_arena_reset calls")                                            \
    X(rewinds, "successful fm_arena_rewind calls")                              \
    X(huge_pages, "1: 2 MiB-aligned reservation advised for huge pages, 2 MiB commits")

typedef struct fm_arena_stats {
    const char *name;
#define FM__ARENA_STAT_FIELD(field, desc) uint64_t field;
    FM_ARENA_STATS_FIELDS(FM__ARENA_STAT_FIELD)
#undef FM__ARENA_STAT_FIELD
} fm_arena_stats;

/// Creates an arena. NULL with FM_ERR_INVALID_ARG (bad desc: sync unknown or
/// THREAD_CACHE; commit_step above reserve_bytes; huge_pages with an
/// allocator; chained, a reserve that cannot hold the first block),
/// FM_ERR_BUDGET (chained: the first block would pass desc.tag's hard limit)
/// or FM_ERR_OUT_OF_MEMORY (no address space / allocator refused).
FM_API fm_arena *fm_arena_create(const fm_arena_desc *desc);
/// The check fm_arena_create applies, without creating or reporting anything:
/// FM_OK, or FM_ERR_INVALID_ARG with the rule broken in msg (may be NULL), so
/// a desc from a file can be checked where the file is read. A NULL desc is
/// reported (FM_ERR_INVALID_ARG).
FM_API fm_error fm_arena_desc_check(const fm_arena_desc *desc, char *msg, size_t msg_len);
/// Releases every byte; NULL is a no-op.
FM_API void fm_arena_destroy(fm_arena *arena);

/// size bytes aligned to align (0 = FM_DEFAULT_ALIGN, 16; a power of two up
/// to 4096), not zeroed; size 0 gives a valid aligned pointer. NULL with
/// FM_ERR_INVALID_ARG (bad align; a size within 8 KiB + 64 bytes of SIZE_MAX,
/// which no arena could hold), FM_ERR_ARENA_FULL (past reserve_bytes or the
/// end of the address space, or the allocator refused a block),
/// FM_ERR_BUDGET (the commit or block would pass desc.tag's hard limit, tag.h)
/// or FM_ERR_OUT_OF_MEMORY (the OS refused to commit).
FM_API void *fm_arena_alloc(fm_arena *arena, size_t size, size_t align);
/// fm_arena_alloc, then zero-filled.
FM_API void *fm_arena_alloc_zero(fm_arena *arena, size_t size, size_t align);
/// count * size bytes, zeroed; NULL with FM_ERR_INVALID_ARG when the product
/// overflows.
FM_API void *fm_arena_alloc_array(fm_arena *arena, size_t count, size_t size, size_t align);

/// Zeroed, typed, overflow-checked allocation.
#define FM_ARENA_NEW(a, T) ((T *)fm_arena_alloc_zero((a), sizeof(T), FM_ALIGNOF(T)))
#define FM_ARENA_NEW_ARRAY(a, T, n) ((T *)fm_arena_alloc_array((a), (n), sizeof(T), FM_ALIGNOF(T)))

/// The current top, to rewind to later.
FM_API fm_arena_mark fm_arena_get_mark(const fm_arena *arena);
/// Releases everything allocated since mark (LOCKFREE: while no other thread
/// allocates; see Threads above). FM_ERR_BAD_MARK (nothing
/// changes) for a mark of another arena, above the top, or one that an
/// earlier rewind or reset already released. The arena remembers rewinds to
/// tell those apart; that record grows (from the desc's allocator) only while
/// rewinds land at rising positions between resets, and if it cannot grow the
/// oldest rewind is forgotten: a mark older than it is then not recognised
/// as stale.
FM_API void fm_arena_rewind(fm_arena *arena, fm_arena_mark mark);
/// Releases everything; O(1) unless debug poisoning is on. Invalidates marks.
FM_API void fm_arena_reset(fm_arena *arena);
/// Gives committed memory (or blocks) above max(top, keep_bytes) back to the
/// OS or allocator (in whole 2 MiB pages with huge_pages); returns the bytes
/// released.
FM_API size_t fm_arena_decommit(fm_arena *arena, size_t keep_bytes);

/// Fills out with the arena's counters; all zero for a NULL arena (reported).
FM_API void fm_arena_get_stats(const fm_arena *arena, fm_arena_stats *out);
/// The desc with every default resolved (name points into the arena); a zero
/// desc for a NULL arena (reported).
FM_API fm_arena_desc fm_arena_get_desc(const fm_arena *arena);
/// The arena's name; "(null)" for a NULL arena (reported).
FM_API const char *fm_arena_name(const fm_arena *arena);
/// true when [ptr, ptr + size) lies below the top of this arena.
FM_API bool fm_arena_owns(const fm_arena *arena, const void *ptr, size_t size);

/* ---------------------------------------------------------- frame arenas */

typedef struct fm_frame_arena fm_frame_arena;

#define FM_FRAME_ARENA_MAX_FRAMES 8
#define FM_FRAME_ARENA_HISTORY 64

typedef struct fm_frame_arena_desc {
    const char *name;    /* 0 = "frame" */
    uint32_t frames;     /* 0 = 2 (double-buffered); at most 8 */
    fm_arena_desc arena; /* for each underlying arena (its name is ignored);
                            arena.sync is the frame arena's policy */
    fm_tag *tag;         /* memory tag of its arenas (tag.h), the same as
                            arena.tag: set either, or both to one tag */
} fm_frame_arena_desc;

typedef struct fm_frame_arena_stats {
    const char *name;
    uint64_t frame;          /* frames advanced since create */
    uint64_t used;           /* bytes allocated in the current frame */
    uint64_t high_water;     /* largest frame so far: its used bytes at its end */
    uint64_t committed;      /* sum over the underlying arenas */
    uint64_t total_allocs;
    uint64_t failed_allocs;
    uint64_t commit_events;  /* sum over the underlying arenas */
    uint32_t history_count;  /* valid entries in history */
    uint64_t history[FM_FRAME_ARENA_HISTORY]; /* bytes of the last finished frames, newest first */
} fm_frame_arena_stats;

/* Frame arena threads: with arena.sync = FM_SYNC_LOCKFREE (or MUTEX) job
 * threads call fm_frame_alloc at once, all through a frame. One thread calls
 * fm_frame_arena_advance at the frame boundary, while no other thread
 * allocates from the frame arena (the jobs of the frame are joined): advance
 * switches the current arena and resets the one coming round. Stats may be
 * read while threads allocate (not during an advance). */

/// Checks a desc by fm_frame_arena_create's rules (frames, tag and arena.tag
/// not two tags, then fm_arena_desc_check of desc->arena) without creating or reporting
/// anything: FM_OK, or FM_ERR_INVALID_ARG with the rule broken in msg (may be
/// NULL). A NULL desc is reported (FM_ERR_INVALID_ARG).
FM_API fm_error fm_frame_arena_desc_check(const fm_frame_arena_desc *desc, char *msg,
                                          size_t msg_len);
/// NULL with FM_ERR_INVALID_ARG (a desc fm_frame_arena_desc_check refuses) or
/// an arena's error (FM_ERR_BUDGET, FM_ERR_OUT_OF_MEMORY, ...).
FM_API fm_frame_arena *fm_frame_arena_create(const fm_frame_arena_desc *desc);
FM_API void fm_frame_arena_destroy(fm_frame_arena *fa);
/// Memory that stays valid until `frames` advances from now.
FM_API void *fm_frame_alloc(fm_frame_arena *fa, size_t size, size_t align);
/// The frame boundary: the arena of frames - 1 frames ago is reset and becomes
/// current. Not while another thread allocates (see above): debug builds
/// report one that overlaps an allocation (FM_ERR_INVALID_ARG, nothing done).
FM_API void fm_frame_arena_advance(fm_frame_arena *fa);
/// The arena serving the current frame (for marks and typed macros).
FM_API fm_arena *fm_frame_arena_current(fm_frame_arena *fa);
FM_API void fm_frame_arena_get_stats(const fm_frame_arena *fa, fm_frame_arena_stats *out);

#ifdef __cplusplus
}
/* C++: descs by reference (C++ has no compound literal to take the address
 * of); C++ linkage also when a caller includes this header inside extern "C". */
extern "C++" {
inline fm_arena *fm_arena_create(const fm_arena_desc &desc) { return fm_arena_create(&desc); }
inline fm_error fm_arena_desc_check(const fm_arena_desc &desc, char *msg, size_t msg_len) {
    return fm_arena_desc_check(&desc, msg, msg_len);
}
inline fm_frame_arena *fm_frame_arena_create(const fm_frame_arena_desc &desc) {
    return fm_frame_arena_create(&desc);
}
inline fm_error fm_frame_arena_desc_check(const fm_frame_arena_desc &desc, char *msg,
                                          size_t msg_len) {
    return fm_frame_arena_desc_check(&desc, msg, msg_len);
}
}
#endif

#include "framemem/detail/arena.h"

#endif /* FRAMEMEM_ARENA_H */
