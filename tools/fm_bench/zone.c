/* fm_bench/zone.c: the first-fit zone allocator of zone.h. */
#include "zone.h"

#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define ZONE_CHECK 0x1D4A11u /* in every used block's header */
#define ZONE_INUSE ((void **)(uintptr_t)2) /* owner of a block allocated without one */
/* A free run is split when at least this much would be left over. */
#define ZONE_MINFRAGMENT 64

typedef struct zone_block {
    size_t size;    /* header included */
    void **owner;   /* NULL: free */
    int tag;        /* 0 when free */
    uint32_t check; /* ZONE_CHECK while in use */
    struct zone_block *next, *prev;
} zone_block;

/* The header is a multiple of 16 bytes, so payloads stay 16-aligned. */
#define ZONE_HEADER (((sizeof(zone_block) + 15) / 16) * 16)

struct zone {
    size_t size;
    zone_block blocklist; /* sentinel: never free, never merged */
    zone_block *rover;
    unsigned char *memory;
};

zone *zone_create(size_t bytes, int touch) {
    zone *z = malloc(sizeof *z);
    unsigned char *mem = malloc(bytes + 16);
    if (!z || !mem) {
        free(z);
        free(mem);
        return NULL;
    }
    /* Not zero: a memset of 0 right after malloc may become calloc, which
     * touches nothing. */
    if (touch) memset(mem, 0xA5, bytes + 16);
    z->memory = mem;
    z->size = bytes;
    zone_block *first = (zone_block *)(((uintptr_t)mem + 15) & ~(uintptr_t)15);
    first->size = bytes & ~(size_t)15;
    first->owner = NULL;
    first->tag = 0;
    first->check = 0;
    first->next = first->prev = &z->blocklist;
    z->blocklist.next = z->blocklist.prev = first;
    z->blocklist.owner = (void **)z; /* in use for ever */
    z->blocklist.tag = ZONE_STATIC;
    z->blocklist.size = 0;
    z->rover = first;
    return z;
}

void zone_destroy(zone *z) {
    if (!z) return;
    free(z->memory);
    free(z);
}

void zone_free(zone *z, void *ptr) {
    zone_block *block = (zone_block *)((unsigned char *)ptr - ZONE_HEADER);
    if (block->check != ZONE_CHECK) bench_die("zone_free: %p is not a zone block in use", ptr);
    if (block->owner != ZONE_INUSE) *block->owner = NULL;
    block->owner = NULL;
    block->tag = 0;
    block->check = 0;
    zone_block *other = block->prev;
    if (!other->owner) { /* merge into the free run before */
        other->size += block->size;
        other->next = block->next;
        other->next->prev = other;
        if (block == z->rover) z->rover = other;
        block = other;
    }
    other = block->next;
    if (!other->owner) { /* and the one after */
        block->size += other->size;
        block->next = other->next;
        block->next->prev = block;
        if (other == z->rover) z->rover = block;
    }
}

void *zone_malloc(zone *z, size_t size, int tag, void **owner) {
    size = ((size + 15) & ~(size_t)15) + ZONE_HEADER;
    zone_block *base = z->rover;
    /* A free run just before the rover may join the one at it. */
    if (!base->prev->owner) base = base->prev;
    zone_block *rover = base, *start = base->prev;
    do {
        if (rover == start) return NULL; /* all the way round: no run big enough */
        if (rover->owner) {
            if (rover->tag < ZONE_PURGELEVEL) {
                /* Used and not purgeable: look again after it. */
                base = rover = rover->next;
            } else {
                /* Purgeable: free it; it merges into the run at base. */
                base = base->prev;
                zone_free(z, (unsigned char *)rover + ZONE_HEADER);
                base = base->next;
                rover = base->next;
            }
        } else {
            rover = rover->next;
        }
    } while (base->owner || base->size < size);

    size_t extra = base->size - size;
    if (extra > ZONE_MINFRAGMENT) { /* the rest becomes a free block of its own */
        zone_block *rest = (zone_block *)((unsigned char *)base + size);
        rest->size = extra;
        rest->owner = NULL;
        rest->tag = 0;
        rest->check = 0;
        rest->prev = base;
        rest->next = base->next;
        rest->next->prev = rest;
        base->next = rest;
        base->size = size;
    }
    void *result = (unsigned char *)base + ZONE_HEADER;
    if (owner) {
        base->owner = owner;
        *owner = result;
    } else {
        if (tag >= ZONE_PURGELEVEL) bench_die("zone_malloc: a purgeable block needs an owner");
        base->owner = ZONE_INUSE;
    }
    base->tag = tag;
    base->check = ZONE_CHECK;
    z->rover = base->next; /* the next search starts after this block */
    return result;
}

void zone_free_tags(zone *z, int lowtag, int hightag) {
    zone_block *next;
    for (zone_block *block = z->blocklist.next; block != &z->blocklist; block = next) {
        next = block->next; /* the block may merge into the one before */
        if (!block->owner) continue;
        if (block->tag >= lowtag && block->tag <= hightag)
            zone_free(z, (unsigned char *)block + ZONE_HEADER);
    }
}

size_t zone_used_blocks(const zone *z) {
    size_t n = 0;
    for (const zone_block *b = z->blocklist.next; b != &z->blocklist; b = b->next)
        n += b->owner != NULL;
    return n;
}

size_t zone_free_blocks(const zone *z) {
    size_t n = 0;
    for (const zone_block *b = z->blocklist.next; b != &z->blocklist; b = b->next)
        n += b->owner == NULL;
    return n;
}
