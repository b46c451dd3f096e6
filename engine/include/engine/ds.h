/*
 * engine/ds.h: growable arrays and string-keyed maps (stb_ds, from Debian's
 * libstb-dev) whose growth can fail, for the engine and its programs outside
 * the hot paths.
 *
 *     row *rows = NULL;                              // an empty array
 *     if (!ENG_ARR_RESERVE(rows, 1, alloc))          // room for one more
 *         return report("out of memory");            // rows as it was
 *     arrput(rows, r);                               // never allocates now
 *     ...
 *     arrfree(rows);                                 // back to its allocator
 *
 *     struct { char *key; int value; } *ids = NULL;  // an empty map
 *     if (!ENG_SH_PUT(ids, "particles", 5, NULL))    // the key is copied
 *         return report("out of memory");            // ids as it was
 *     ptrdiff_t i = ENG_SH_GETI(ids, "particles");   // -1 when absent
 *     shfree(ids);
 *
 * Memory: each array or map takes its blocks from the fm_allocator given when
 * it was made (NULL: the C heap) and gives them back to it; arrfree, shfree
 * and hmfree work as in stb_ds.
 *
 * Out of memory: plain stb_ds aborts, or writes through NULL, when realloc
 * fails. Here growth happens only inside ENG_ARR_RESERVE and ENG_SH_PUT, which
 * obtain every block first and return false, changing nothing, when one is
 * refused; the stb_ds calls after them (arrput, arraddnptr within the room
 * made, shput inside ENG_SH_PUT) take those blocks and cannot fail. Reading,
 * ENG_SH_GETI, arrpop, arrdel and arrsetlen below the capacity never
 * allocate. stb_ds calls that grow by themselves (arrput past the room
 * reserved, shput, shdel, arrsetcap) still work, from the heap or the
 * array's allocator, but abort with a message when memory is refused: library
 * code never uses them.
 *
 * Include this header, never <stb/stb_ds.h> itself: the engine carries its
 * own copy of stb_ds's functions under eng__stbds_ names (engine/src/ds.c),
 * so a program that also links Debian's libstb, or its own
 * STB_DS_IMPLEMENTATION, gets no clash and no swap. stb_ds's short names
 * (arrput, shgeti, ...) are available unless STBDS_NO_SHORT_NAMES is defined.
 *
 * Threads: an array or map is used by one thread at a time; maps are made
 * from one thread at a time (stb_ds seeds their hashes from a global).
 */
#ifndef ENGINE_DS_H
#define ENGINE_DS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "framemem/base.h"

#if defined(INCLUDE_STB_DS_H) && !defined(ENG__DS_NAMES)
#error "engine/ds.h must be included instead of <stb/stb_ds.h>, not after it"
#endif
#define ENG__DS_NAMES 1

#ifdef __cplusplus
extern "C" {
#endif

/* The engine's copy of stb_ds (engine/src/ds.c). */
#define stbds_arrgrowf eng__stbds_arrgrowf
#define stbds_arrfreef eng__stbds_arrfreef
#define stbds_hmfree_func eng__stbds_hmfree_func
#define stbds_hmget_key eng__stbds_hmget_key
#define stbds_hmget_key_ts eng__stbds_hmget_key_ts
#define stbds_hmput_default eng__stbds_hmput_default
#define stbds_hmput_key eng__stbds_hmput_key
#define stbds_hmdel_key eng__stbds_hmdel_key
#define stbds_shmode_func eng__stbds_shmode_func
#define stbds_hash_bytes eng__stbds_hash_bytes
#define stbds_hash_string eng__stbds_hash_string
#define stbds_rand_seed eng__stbds_rand_seed
#define stbds_stralloc eng__stbds_stralloc
#define stbds_strreset eng__stbds_strreset
#define stbds_unit_tests eng__stbds_unit_tests

/* Every block stb_ds takes or gives back: engine/src/ds.c. */
void *eng__ds_realloc(void *p, size_t size);
void eng__ds_free(void *p);
#define STBDS_REALLOC(context, p, size) ((void)(context), eng__ds_realloc((p), (size)))
#define STBDS_FREE(context, p) ((void)(context), eng__ds_free(p))

bool eng__ds_arr_reserve(void *arrp, size_t item_size, size_t n, const fm_allocator *alloc);
bool eng__ds_sh_prepare(void *mapp, size_t entry_size, const char *key, const fm_allocator *alloc);
void eng__ds_done(void);
ptrdiff_t eng__ds_sh_index(const void *map, size_t entry_size, const char *key);

#ifdef __cplusplus
}
#endif

#include <stb/stb_ds.h>

/// Makes room for n more items at the end of array a: a NULL a becomes a new
/// array whose blocks come from alloc (NULL: the C heap); an existing one
/// keeps its allocator. true when the room is there; false when a block was
/// refused or the size overflows (a, its items and its capacity unchanged).
#define ENG_ARR_RESERVE(a, n, alloc)                                            \
    eng__ds_arr_reserve((void *)&(a), sizeof *(a), (n), (alloc))

/// Sets map[key] = value in the string-keyed map m (struct {char *key; T
/// value;} *), copying a new key: a NULL m becomes a new map whose blocks come
/// from alloc (NULL: the C heap); an existing one keeps its allocator. true
/// when set; false when a block was refused (m holds what it held).
#define ENG_SH_PUT(m, key, value, alloc)                                        \
    (eng__ds_sh_prepare((void *)&(m), sizeof *(m), (key), (alloc))              \
         ? (stbds_shput((m), (key), (value)), eng__ds_done(), true)             \
         : false)

/// Index of key in the map m, or -1 (m NULL: -1). Never allocates, and
/// leaves m itself alone (stbds_shgeti assigns it).
#define ENG_SH_GETI(m, key) eng__ds_sh_index((m), sizeof *(m), (key))

#endif /* ENGINE_DS_H */
