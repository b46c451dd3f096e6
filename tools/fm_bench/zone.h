/*
 * fm_bench/zone.h: a first-fit zone allocator, as a baseline: the way id
 * Software's zone memory (Doom's Z_Malloc) works, written for fm-bench from
 * that description.
 *
 * One big block of memory, taken once, is cut into blocks kept in one
 * doubly linked list in address order (circular, through a sentinel that is
 * never free). Each block has a header: its size, its tag, an owner pointer
 * (NULL: free) and a check word. A rover remembers where the last
 * allocation ended. zone_malloc walks from the rover (backing up over one
 * free block first) to the first free run big enough: blocks with a tag at
 * or above ZONE_PURGELEVEL (purgeable caches) it passes are freed on the
 * way and merged into the run; any other used block restarts the search
 * after it. The block found is split when the rest is worth a block of its
 * own. zone_free marks a block free and merges it with free neighbours.
 * zone_free_tags frees every block whose tag lies in a range by walking the
 * whole list: how a level's objects go at once (Z_FreeTags(PU_LEVEL,
 * PU_PURGELEVEL - 1)).
 *
 * Differences from Doom's: payloads are aligned to 16 bytes (its were to 4
 * or 8), the zone's size comes from the caller, and an exhausted zone
 * returns NULL instead of ending the program.
 */
#ifndef FM_BENCH_ZONE_H
#define FM_BENCH_ZONE_H

#include <stddef.h>
#include <stdint.h>

enum {
    ZONE_STATIC = 1,       /* lives until freed */
    ZONE_LEVEL = 50,       /* a level's objects: freed together at its end */
    ZONE_LEVSPEC = 51,     /* a level's special objects, freed with it */
    ZONE_PURGELEVEL = 100, /* from here on: purgeable, freed when in the way */
    ZONE_CACHE = 101,
};

typedef struct zone zone;

/// A zone of `bytes` (malloc'd once; touch: written through now, as the
/// memory of a zone that served earlier levels is). NULL when malloc fails.
zone *zone_create(size_t bytes, int touch);
/// Gives the whole zone back.
void zone_destroy(zone *z);
/// size bytes (16-aligned) tagged tag, or NULL when no free run is big
/// enough (purgeable blocks in the way are freed while searching). *owner,
/// when given, is set to the block and cleared when it is freed or purged;
/// purgeable blocks need one.
void *zone_malloc(zone *z, size_t size, int tag, void **owner);
/// Frees a block of this zone (its neighbours merged).
void zone_free(zone *z, void *ptr);
/// Frees every block tagged lowtag..hightag (a walk over the whole zone).
void zone_free_tags(zone *z, int lowtag, int hightag);
/// Blocks in use and free runs right now (walks the list; not for timed code).
size_t zone_used_blocks(const zone *z);
size_t zone_free_blocks(const zone *z);

#endif /* FM_BENCH_ZONE_H */
