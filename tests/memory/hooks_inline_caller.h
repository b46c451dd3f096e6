/* tests/memory/hooks_inline_caller.h: hooks_inline_caller.c's calls, made
 * as a caller compiled without FM_HOOKS makes them. */
#ifndef HOOKS_INLINE_CALLER_H
#define HOOKS_INLINE_CALLER_H

#include <stdbool.h>
#include <stddef.h>

#include "framemem/arena.h"
#include "framemem/pool.h"

void *hooks_caller_pool_alloc(fm_pool *pool);
void hooks_caller_pool_free(fm_pool *pool, void *item);
void *hooks_caller_arena_alloc(fm_arena *arena, size_t size);
/// true when the calls above were compiled as the inline fast paths.
bool hooks_caller_is_inline(void);

#endif /* HOOKS_INLINE_CALLER_H */
