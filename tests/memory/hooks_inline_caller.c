/* tests/memory/hooks_inline_caller.c: a caller of framemem compiled without
 * FM_HOOKS, with NDEBUG and without FM_TRACK_SITES (tests/CMakeLists.txt):
 * its fm_pool_alloc, fm_pool_free and fm_arena_alloc are the inline fast
 * paths (outside sanitizer builds), linked into test_hooks with a library
 * built with FM_HOOKS, which must see their calls all the same. */
#include "framemem/framemem.h"

#include "hooks_inline_caller.h"

void *hooks_caller_pool_alloc(fm_pool *pool) { return fm_pool_alloc(pool); }

void hooks_caller_pool_free(fm_pool *pool, void *item) { fm_pool_free(pool, item); }

void *hooks_caller_arena_alloc(fm_arena *arena, size_t size) {
    return fm_arena_alloc(arena, size, 0);
}

bool hooks_caller_is_inline(void) {
#if defined(FM__POOL_INLINE) && defined(FM__INLINE)
    return true;
#else
    return false;
#endif
}
