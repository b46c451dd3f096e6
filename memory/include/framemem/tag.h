/*
 * framemem/tag.h: memory tags with budgets. A tag names a category of memory
 * (audio, particles, level) that pools, arenas, frame arenas and closure
 * pools are counted under, with an optional soft and hard limit, as engines
 * budget memory per category.
 *
 * Step by step:
 *
 *     // 1. A tag per category; limits in bytes, 0 = none.
 *     fm_tag *audio = fm_tag_create(&(fm_tag_desc){
 *         .name = "audio", .soft_limit_bytes = 48 << 20, .hard_limit_bytes = 64 << 20});
 *
 *     // 2. Objects name it in their desc: their growth is charged to it.
 *     fm_pool *voices = fm_pool_create(&FM_POOL_DESC(voice, .tag = audio));
 *
 *     // 3. Growth past the hard limit fails (NULL, FM_ERR_BUDGET) and changes
 *     //    nothing; the counters say where the memory is.
 *     fm_tag_stats st;
 *     fm_tag_get_stats(audio, &st);       // committed, live, peak, growths_refused
 *
 *     fm_pool_destroy(voices);
 *     fm_tag_destroy(audio);              // after every object that names it
 *
 * What a tag counts, in bytes (fm_tag_stats):
 * - committed: the memory its objects hold for their contents, taken from
 *   the OS or their allocator: a pool's chunks (chunk_count x chunk_bytes,
 *   fm_pool_stats), an arena's committed pages or chained blocks
 *   (fm_arena_stats.committed); a frame arena and a closure pool count as
 *   their arenas and size-class pools. The objects' bookkeeping (their own
 *   structs, a pool's chunk records, lookup tables and thread caches: the
 *   rest of fm_pool_stats.bytes_reserved) is not counted. The limits apply
 *   to committed.
 * - reserved: committed, plus the address space a virtual-memory arena has
 *   reserved and not yet committed (its reserve_bytes in all).
 * - live: the bytes in use, summed from the objects when asked: a pool's
 *   live items x item_size (the bytes asked for; committed - live is every
 *   overhead, alignment and free slots included), an arena's used bytes
 *   (fm_arena_stats.used, alignment gaps included).
 * - peak: the highest committed since create.
 * A tag's counts include those of its child tags (desc.parent), to any depth.
 *
 * Limits:
 * - Growth (a pool's new chunks, an arena's next commit step or block, and
 *   the first ones at create) is charged to the tag and each ancestor before
 *   the memory is taken, and given back if taking it fails. Growth that
 *   would take committed above the hard_limit_bytes of the tag or of any
 *   ancestor fails: the object reports FM_ERR_BUDGET (naming the tag) and
 *   is unchanged, and so are the tags' counters but growths_refused (counted
 *   on the tag whose limit refused and on the tags below it on the chain).
 *   Growths under way on other threads count against the hard limit until
 *   they are done or given back. A pool growing by its policy near a hard
 *   limit adds the whole chunks that still fit, as near max_capacity (an
 *   explicit fm_pool_reserve is all or nothing); an arena commits whole
 *   commit steps (or blocks), so its limit is met a step at a time.
 * - Committed rising above soft_limit_bytes is reported through the error
 *   handler as FM_WARN_BUDGET, once per crossing: it has to fall back to the
 *   limit or below (trim, decommit, destroy) before the next rise is
 *   reported. A warning, not an error (base.h): the growth goes ahead, the
 *   call succeeds and the thread's last error stays as it was.
 * - Memory only goes down by the objects' own calls (trim, decommit,
 *   destroy): a tag never takes memory back by itself.
 *
 * Lifetime: fm_tag_create / fm_tag_destroy. A tag outlives every object and
 * child tag that names it: destroy with one left is refused (FM_ERR_INVALID_ARG,
 * nothing changed). Parent chains are at most FM_TAG_MAX_DEPTH tags long.
 *
 * Threads: a tag may be shared by objects of every sync policy used from any
 * number of threads: growth charges it with atomic operations (a
 * compare-and-swap loop against the hard limit; no lock), and alloc and free
 * never touch it. fm_tag_get_stats may be called from any thread: the byte
 * counters are read atomically; live is read from each object as its own
 * get_stats reads it, under the lock of a MUTEX, THREAD_CACHE or LOCKFREE
 * object (so not from the error handler: a shared object reports with its
 * lock held), and an FM_SYNC_NONE object is read as it stands, so ask while
 * its thread does not use it (as after the frame's jobs are joined) for an
 * exact live figure. Create and destroy of objects naming the tag take its lock.
 * Destroy runs while no other call on the tag runs or follows.
 *
 * NULL (base.h): every function but destroy (a no-op) reports a NULL tag as
 * FM_ERR_INVALID_ARG. A desc's tag of NULL means no tag.
 */
#ifndef FRAMEMEM_TAG_H
#define FRAMEMEM_TAG_H

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tags on a parent chain, the tag itself included. */
#define FM_TAG_MAX_DEPTH 8

typedef struct fm_tag_desc {
    const char *name;          /* 0 = "tag"; copied */
    uint64_t soft_limit_bytes; /* 0 = none; FM_WARN_BUDGET when committed rises above it */
    uint64_t hard_limit_bytes; /* 0 = none; growth past it fails with FM_ERR_BUDGET */
    fm_tag *parent;            /* optional: counts this tag's bytes too; its limits apply */
    fm_allocator allocator;    /* for the tag itself; zero = system */
} fm_tag_desc;

/* X(field, description): one list for the struct, writers and tests. */
#define FM_TAG_STATS_FIELDS(X)                                                   \
    X(reserved, "bytes of address space held: committed, plus arenas' reserve")  \
    X(committed, "bytes held for contents (chunks, pages, blocks): the limits' count") \
    X(live, "bytes in use: pools' live items x item_size, arenas' used bytes")    \
    X(peak, "highest committed since create")                                    \
    X(growths_refused, "growths refused by a hard limit (this tag's or an ancestor's)") \
    X(soft_crossings, "times committed rose above soft_limit_bytes")             \
    X(soft_limit_bytes, "the desc's soft limit (0: none)")                       \
    X(hard_limit_bytes, "the desc's hard limit (0: none)")                       \
    X(objects, "pools and arenas naming this tag (class pools, frame arenas' arenas)") \
    X(children, "child tags naming this one as parent")

typedef struct fm_tag_stats {
    const char *name;
#define FM__TAG_STAT_FIELD(field, desc) uint64_t field;
    FM_TAG_STATS_FIELDS(FM__TAG_STAT_FIELD)
#undef FM__TAG_STAT_FIELD
} fm_tag_stats;

/// Creates a tag. NULL on failure: FM_ERR_INVALID_ARG (a soft limit above the
/// hard one, a parent chain longer than FM_TAG_MAX_DEPTH, an allocator with
/// only one of alloc/free) or FM_ERR_OUT_OF_MEMORY.
FM_API fm_tag *fm_tag_create(const fm_tag_desc *desc);
/// The check fm_tag_create applies, without creating or reporting anything:
/// FM_OK, or FM_ERR_INVALID_ARG with the rule broken in msg (may be NULL). A
/// NULL desc is reported (FM_ERR_INVALID_ARG).
FM_API fm_error fm_tag_desc_check(const fm_tag_desc *desc, char *msg, size_t msg_len);
/// Destroys a tag that no object or child tag names any more. Refused while
/// one does (FM_ERR_INVALID_ARG, saying how many; the tag is unchanged and
/// still usable). NULL is a no-op.
FM_API void fm_tag_destroy(fm_tag *tag);
/// Fills out with the tag's counters (FM_TAG_STATS_FIELDS, see above); zeros
/// for a NULL tag (reported).
FM_API void fm_tag_get_stats(const fm_tag *tag, fm_tag_stats *out);
/// The desc the tag was created with (name points into the tag); zero for NULL.
FM_API fm_tag_desc fm_tag_get_desc(const fm_tag *tag);
/// The tag's name; "(null)" for a NULL tag (reported).
FM_API const char *fm_tag_name(const fm_tag *tag);

#ifdef __cplusplus
}
/* C++: the desc by reference (C++ has no compound literal to take the
 * address of); C++ linkage also when a caller includes this header inside
 * extern "C". */
extern "C++" {
inline fm_tag *fm_tag_create(const fm_tag_desc &desc) { return fm_tag_create(&desc); }
inline fm_error fm_tag_desc_check(const fm_tag_desc &desc, char *msg, size_t msg_len) {
    return fm_tag_desc_check(&desc, msg, msg_len);
}
}
#endif

#endif /* FRAMEMEM_TAG_H */
