/* pool/unit.c: the pool as one compile unit.
 *
 * pool/ is split by concern (map, chunks, core, tcache, lockfree, refs,
 * check, pool, reset), but its hot paths cross those files: the out-of-line alloc and
 * free, the batches, MUTEX's locked core and THREAD_CACHE's dispatch each
 * call into two or three of them. Compiled as separate objects, every such
 * call would stay a call; included here, into one object (as mimalloc's
 * alloc.c includes free.c and its static.c builds the library), they inline
 * exactly as they did when the pool was one file. The functions they share
 * are static and declared in pool_internal.h.
 */
#define FM__POOL_UNIT 1
#include "pool/pool_internal.h"

#include "pool/map.c"
#include "pool/chunks.c"
#include "pool/core.c"
#include "pool/tcache.c"
#include "pool/lockfree.c"
#include "pool/refs.c"
#include "pool/check.c"
#include "pool/pool.c"
#include "pool/reset.c"
#include "pool/watch.c"
