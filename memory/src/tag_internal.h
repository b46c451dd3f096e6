/* tag_internal.h: what pools and arenas use of tags (tag.c); never installed.
 *
 * An object naming a tag joins the tag's list at create (fm__tag_attach)
 * and leaves it first thing at destroy (fm__tag_detach), so fm_tag_get_stats
 * can sum live bytes, and charges its growth (fm__tag_charge) before taking
 * the memory, giving it back (fm__tag_uncharge) when the memory goes. Every
 * function takes a NULL tag as "no tag" and does nothing. */
#ifndef FRAMEMEM_TAG_INTERNAL_H
#define FRAMEMEM_TAG_INTERNAL_H

#include "framemem/tag.h"

struct fm_pool;
struct fm_arena;

enum { FM__TAG_POOL = 1, FM__TAG_ARENA = 2 };

/* An object's place in its tag's list (in the object, beside its desc). */
typedef struct fm__tag_link {
    struct fm__tag_link *prev, *next;
    void *object;  /* the fm_pool or fm_arena */
    uint32_t kind; /* FM__TAG_POOL or FM__TAG_ARENA */
} fm__tag_link;

void fm__tag_attach(fm_tag *tag, fm__tag_link *link, uint32_t kind, void *object);
void fm__tag_detach(fm_tag *tag, fm__tag_link *link);

/* A growth in two steps. fm__tag_charge, before the memory is taken, holds
 * bytes against the hard limits of tag and its ancestors; false, nothing
 * held, when one would be passed: reported as FM_ERR_BUDGET naming
 * "<kind> '<name>'" and the tag, growths_refused counted. Then either
 * fm__tag_charged, once the memory is had: the bytes count as committed (and
 * reserved too when reserves: memory that is both at once, pool chunks and
 * chained blocks), peak follows, and a rise above a soft limit is reported
 * as FM_WARN_BUDGET; or fm__tag_refund, when it could not be had: the hold
 * goes and nothing else changed. */
bool fm__tag_charge(fm_tag *tag, uint64_t bytes, const char *kind, const char *name);
void fm__tag_charged(fm_tag *tag, uint64_t bytes, bool reserves, const char *kind,
                     const char *name);
void fm__tag_refund(fm_tag *tag, uint64_t bytes);
/* Bytes a growth may still take before a hard limit on the chain (UINT64_MAX:
 * none), as the counters stand: a hint for sizing a growth (fm__tag_charge
 * decides). */
uint64_t fm__tag_room(const fm_tag *tag);
/* Memory counted by fm__tag_charged given back (trim, decommit, destroy). */
void fm__tag_uncharge(fm_tag *tag, uint64_t bytes, bool reserves);
/* Address space reserved (a virtual-memory arena's reserve_bytes), or given
 * back: counted in reserved only, never limited. */
void fm__tag_reserve(fm_tag *tag, uint64_t bytes);
void fm__tag_unreserve(fm_tag *tag, uint64_t bytes);

/* Live bytes of a tag's member, read as its get_stats reads it (pool.c,
 * arena.c). */
uint64_t fm__pool_live_bytes(struct fm_pool *pool);
uint64_t fm__arena_live_bytes(struct fm_arena *arena);

#endif /* FRAMEMEM_TAG_INTERNAL_H */
