/* pool/map.c: the process-wide chunk map: which pool holds the chunk an
 * address points into, for fm_pool_of and fm_free, in O(1) and without ever
 * reading the memory at that address (as mimalloc's segment map does).
 *
 * Two levels over the address's 64 KiB granule (addresses below 2^48; a
 * chunk above cannot be entered, and its growth fails):
 * - fm__pool_map[a >> 32]: the table of a 4 GiB region, or NULL. This first
 *   level is 512 KiB of the library's zero-filled static storage (pages
 *   never written cost nothing; on 32-bit targets one 4-byte entry, the
 *   whole address space being one region).
 * - table[(a >> 16) & 0xFFFF]: per granule, the pool whose chunk covers it
 *   (chunks of 64 KiB or more), or a sub-table | 1 where chunks smaller than
 *   a granule have been: one entry per 4 KiB, the smallest chunk. 0: none.
 * Region tables (512 KiB of address space each, 256 KiB on 32-bit targets;
 * only the pages holding entries are touched) and sub-tables (128 bytes, 64
 * on 32-bit, carved from 64 KiB blocks) come from the OS through the
 * platform layer (VirtualAlloc on Windows; the C heap where there is no
 * virtual memory). On Windows each chunk is a reservation of its own
 * starting at a 64 KiB boundary (pool/chunks.c), so a chunk under 64 KiB
 * is alone in its granule and its sub-table holds one owner. A growth makes the ones its chunks need before it
 * installs anything (fm__map_prepare, under a lock; when the OS refuses, the
 * growth fails and changes nothing), and they are never freed: another
 * thread's lookup may be reading one, and a granule's sub-table serves its
 * later small chunks. That is at most 512 KiB per 4 GiB region that ever
 * held a chunk and 128 bytes per 64 KiB granule that ever held a small one;
 * fm_pool_map_bytes counts it.
 *
 * Entries are single atomic stores, made without the lock: when a growth
 * installs its chunks, and cleared when a chunk is released, before its
 * memory goes back (a chunk at the same address in another pool is then
 * never cleared by mistake). Releasing writes no table: no free path
 * allocates. Lookups take no lock; a pointer into a chunk that another
 * thread installs or releases at that moment may or may not be found.
 */
#ifndef FM__POOL_UNIT
#error "pool/map.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

enum {
    FM__MAP_GRANULE_SHIFT = 16,
    FM__MAP_PAGE_SHIFT = 12,
    FM__MAP_SUB = 1 << (FM__MAP_GRANULE_SHIFT - FM__MAP_PAGE_SHIFT),
    FM__MAP_TABLE = 1 << (32 - FM__MAP_GRANULE_SHIFT),
    FM__MAP_BLOCK = 64 << 10, /* bytes of sub-tables taken at once */
};

uintptr_t *fm__pool_map[FM__MAP_L1];

static fm__mutex fm__map_lock = FM__MUTEX_INIT;
static size_t fm__map_bytes; /* atomic: tables and blocks taken */
static uintptr_t *fm__map_block; /* lock held: sub-tables not yet handed out */
static size_t fm__map_block_left;

/* Zeroed memory for the map, never returned. */
static void *fm__map_memory(size_t bytes) {
    void *mem;
    if (fm__os_get_caps()->has_virtual_reserve) {
        mem = fm__os_reserve(bytes, fm__os_get_caps()->page_size, true); /* zero-filled */
    } else {
        mem = fm__os_heap_alloc(bytes, 64);
        if (mem) memset(mem, 0, bytes);
    }
    if (mem) FM__ATOMIC_FETCH_ADD(&fm__map_bytes, bytes, RELAXED);
    return mem;
}

/* Lock held: the table of the region of a, made when missing; NULL when the
 * OS refused. */
static uintptr_t *fm__map_region(uint64_t a) {
    uintptr_t **slot = &fm__pool_map[a >> 32];
    uintptr_t *table = FM__ATOMIC_LOAD(slot, ACQUIRE);
    if (table) return table;
    table = fm__map_memory(FM__MAP_TABLE * sizeof *table);
    if (table) FM__ATOMIC_STORE(slot, table, RELEASE);
    return table;
}

/* Lock held: a zeroed sub-table; NULL when the OS refused. */
static uintptr_t *fm__map_sub_new(void) {
    if (fm__map_block_left < FM__MAP_SUB) {
        uintptr_t *block = fm__map_memory(FM__MAP_BLOCK);
        if (!block) return NULL;
        fm__map_block = block;
        fm__map_block_left = FM__MAP_BLOCK / sizeof *block;
    }
    uintptr_t *sub = fm__map_block;
    fm__map_block += FM__MAP_SUB;
    fm__map_block_left -= FM__MAP_SUB;
    return sub;
}

/* Makes the tables that entering chunks of chunk_bytes over [base, base +
 * bytes) needs. false when the range is above what the map covers or the OS
 * refused memory (what was made stays, for later growths). */
static bool fm__map_prepare(uintptr_t base, size_t bytes, size_t chunk_bytes) {
    uint64_t a = base, end = (uint64_t)base + bytes;
    if (end < a || end - 1 >= (uint64_t)FM__MAP_L1 << 32) return false;
    bool small = chunk_bytes < ((size_t)1 << FM__MAP_GRANULE_SHIFT);
    bool ok = true;
    fm__mutex_lock(&fm__map_lock);
    for (uint64_t g = a >> FM__MAP_GRANULE_SHIFT; ok && g <= (end - 1) >> FM__MAP_GRANULE_SHIFT;
         g++) {
        uintptr_t *table = fm__map_region(g << FM__MAP_GRANULE_SHIFT);
        if (!table) {
            ok = false;
        } else if (small) {
            uintptr_t *e = &table[g & (FM__MAP_TABLE - 1)];
            if (!(FM__ATOMIC_LOAD(e, RELAXED) & 1u)) {
                uintptr_t *sub = fm__map_sub_new();
                if (sub) FM__ATOMIC_STORE(e, (uintptr_t)sub | 1u, RELEASE);
                else ok = false;
            }
        } else {
            /* Big chunks need the region tables only: go to the next region. */
            g |= FM__MAP_TABLE - 1;
        }
    }
    fm__mutex_unlock(&fm__map_lock);
    return ok;
}

/* desc.prefault: the pages of the entries that entering chunks over [base,
 * base + bytes) will write made resident now (fm__map_prepare made their
 * tables). An atomic add of 0 to one word of each page: other pools enter
 * and clear entries of the same pages meanwhile. */
static void fm__map_prefault(uintptr_t base, size_t bytes) {
    uint64_t end = (uint64_t)base + bytes;
    uintptr_t page_mask = ~((uintptr_t)fm__os_get_caps()->page_size - 1u), touched = 0;
    for (uint64_t g = (uint64_t)base >> FM__MAP_GRANULE_SHIFT;
         g <= (end - 1) >> FM__MAP_GRANULE_SHIFT; g++) {
        uintptr_t *table =
            FM__ATOMIC_LOAD(&fm__pool_map[g >> (32 - FM__MAP_GRANULE_SHIFT)], ACQUIRE);
        uintptr_t *e = &table[g & (FM__MAP_TABLE - 1)];
        uintptr_t v = FM__ATOMIC_LOAD(e, ACQUIRE);
        uintptr_t *w = v & 1u ? (uintptr_t *)(v - 1u) : e; /* a sub-table's, or the entry */
        if (((uintptr_t)w & page_mask) == touched) continue;
        touched = (uintptr_t)w & page_mask;
        FM__ATOMIC_FETCH_ADD(w, 0, RELAXED);
    }
}

/* Enters pool (NULL: none) as the owner of chunk_bytes at base, a chunk of
 * that size (aligned to it); the tables were made by fm__map_prepare. */
static void fm__map_set(uintptr_t base, size_t chunk_bytes, fm_pool *pool) {
    size_t step = chunk_bytes < ((size_t)1 << FM__MAP_GRANULE_SHIFT)
                      ? (size_t)1 << FM__MAP_PAGE_SHIFT
                      : (size_t)1 << FM__MAP_GRANULE_SHIFT;
    for (size_t off = 0; off < chunk_bytes; off += step) {
        uint64_t a = (uint64_t)(base + off);
        uintptr_t *table = FM__ATOMIC_LOAD(&fm__pool_map[a >> 32], ACQUIRE);
        uintptr_t *e = &table[(uint32_t)a >> FM__MAP_GRANULE_SHIFT];
        uintptr_t v = FM__ATOMIC_LOAD(e, ACQUIRE);
        if (v & 1u) {
            uintptr_t *sub = (uintptr_t *)(v - 1u);
            if (step == ((size_t)1 << FM__MAP_PAGE_SHIFT)) {
                FM__ATOMIC_STORE(&sub[((uint32_t)a >> FM__MAP_PAGE_SHIFT) & (FM__MAP_SUB - 1)],
                                 (uintptr_t)pool, RELEASE);
            } else { /* a big chunk where small ones were: every page */
                for (uint32_t i = 0; i < FM__MAP_SUB; i++)
                    FM__ATOMIC_STORE(&sub[i], (uintptr_t)pool, RELEASE);
            }
        } else {
            FM__ATOMIC_STORE(e, (uintptr_t)pool, RELEASE);
        }
    }
}

/* ================================================================ public */

size_t fm_pool_map_bytes(void) { return FM__ATOMIC_LOAD(&fm__map_bytes, RELAXED); }

fm_pool *fm_pool_of(const void *ptr) { return fm__pool_of_at(ptr); }

void fm__free_unowned(void *ptr) {
    if (!ptr) return;
    fm__report(FM_ERR_FOREIGN_POINTER, "fm_free(%p): not in a chunk of any pool", ptr);
}

void fm_free(void *ptr) {
    fm_pool *pool = fm__pool_of_at(ptr);
    if (FM__UNLIKELY(!pool)) {
        fm__free_unowned(ptr);
        return;
    }
    fm_pool_free(pool, ptr);
}
