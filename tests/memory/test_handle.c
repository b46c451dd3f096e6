/* tests/memory/test_handle.c: generational handles (fm_pool_handle,
 * fm_pool_resolve) against the contract in framemem/pool.h. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"
#include "internal.h" /* fm__pool_set_max_chunks: a chunk limit a test can reach */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* =================================================================== helpers */

#define stats_of fm_test_pool_stats
#define assert_stats_same fm_test_assert_pool_stats_same

static fm_pool *create_with(fm_pool_desc desc) {
    fm_pool *pool = fm_pool_create(&desc);
    if (!pool) {
        print_error("fm_pool_create failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    }
    assert_non_null(pool);
    return pool;
}

#define create_counted fm_test_pool_create_counted
#define destroy_clean fm_test_pool_destroy_clean

static void *alloc_ok(fm_pool *pool) {
    void *item = fm_pool_alloc(pool);
    if (!item) {
        print_error("fm_pool_alloc failed: %s: %s\n", fm_error_name(fm_last_error()),
                    fm_last_error_message());
    }
    assert_non_null(item);
    return item;
}

/* The handle of a live item: not null, reports nothing. */
static fm_handle handle_ok(fm_test_env *env, const fm_pool *pool, const void *item) {
    int errors_before = env->errors.count;
    fm_handle h = fm_pool_handle(pool, item);
    if (fm_handle_is_null(h)) {
        print_error("fm_pool_handle(%p) is null: %s: %s\n", item,
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_false(fm_handle_is_null(h));
    assert_int_equal(env->errors.count, errors_before);
    return h;
}

/* Both spellings: the macro (inline in optimised builds) and the function. */
static void *resolve_both(fm_test_env *env, const fm_pool *pool, fm_handle h) {
    int errors_before = env->errors.count;
    fm_error last_before = fm_last_error();
    void *a = fm_pool_resolve(pool, h);
    void *b = (fm_pool_resolve)(pool, h);
    assert_ptr_equal(a, b);
    /* A weak reference coming back NULL is not an error. */
    assert_int_equal(env->errors.count, errors_before);
    assert_int_equal(fm_last_error(), last_before);
    return a;
}

static void assert_resolves_to(fm_test_env *env, const fm_pool *pool, fm_handle h,
                               const void *item) {
    void *got = resolve_both(env, pool, h);
    if (got != item) {
        print_error("handle %#llx resolved to %p, expected %p\n", (unsigned long long)h.bits,
                    got, item);
    }
    assert_ptr_equal(got, item);
}

static void assert_resolves_null(fm_test_env *env, const fm_pool *pool, fm_handle h) {
    void *got = resolve_both(env, pool, h);
    if (got) {
        print_error("handle %#llx should be gone, resolved to %p\n", (unsigned long long)h.bits,
                    got);
    }
    assert_null(got);
}

/* fm_pool_handle of something that is not a live item: null handle, code
 * reported once naming the pool, nothing else changes but misuse_count. */
static void expect_bad_handle(fm_test_env *env, fm_pool *pool, const void *bad, fm_error code) {
    fm_pool_stats before = stats_of(pool);
    int errors_before = env->errors.count;
    fm_clear_error();
    fm_handle h = fm_pool_handle(pool, bad);
    assert_true(fm_handle_is_null(h));
    assert_true(fm_handle_equal(h, FM_HANDLE_NULL));
    if (fm_last_error() != code) {
        print_error("fm_pool_handle(%p): expected %s, got %s (%s)\n", bad, fm_error_name(code),
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_int_equal(fm_last_error(), code);
    assert_int_equal(env->errors.count, errors_before + 1);
    assert_int_equal(env->errors.last, code);
    assert_true(fm_test_contains(env->errors.message, fm_pool_name(pool)));
    fm_pool_stats after = stats_of(pool);
    assert_stats_same(&before, &after, 1);
}

/* ------------------------------------------------------ recycling allocator
 *
 * Hands a freed block of the same size and alignment straight back (newest
 * first, when its address has the alignment asked for), so a pool created
 * after a destroy, or a chunk grown after a trim, lands on exactly the memory
 * of its predecessor. */
enum { RECYCLER_CACHE = 256 };

typedef struct recycler {
    struct {
        void *ptr;
        size_t size;
    } cache[RECYCLER_CACHE];
    int cached;
    long live; /* blocks handed out and not yet freed */
} recycler;

static void *recycler_alloc(size_t size, size_t align, void *user) {
    recycler *r = user;
    for (int i = r->cached - 1; i >= 0; i--) {
        if (r->cache[i].size == size && fm_is_aligned(r->cache[i].ptr, align)) {
            void *p = r->cache[i].ptr;
            size_t after = (size_t)(r->cached - i - 1);
            memmove(&r->cache[i], &r->cache[i + 1], after * sizeof r->cache[0]);
            r->cached--;
            r->live++;
            return p;
        }
    }
    void *p = fm_test_aligned_alloc(align < sizeof(void *) ? sizeof(void *) : align, size);
    if (!p) return NULL;
    memset(p, 0xA5, size);
    r->live++;
    return p;
}

static void recycler_free(void *ptr, size_t size, void *user) {
    recycler *r = user;
    r->live--;
    if (r->cached == RECYCLER_CACHE) {
        fm_test_aligned_free(ptr);
        return;
    }
    r->cache[r->cached].ptr = ptr;
    r->cache[r->cached].size = size;
    r->cached++;
}

static void recycler_release(recycler *r) {
    for (int i = 0; i < r->cached; i++) fm_test_aligned_free(r->cache[i].ptr);
    r->cached = 0;
}

static uint64_t rng_next(uint64_t *s) {
    /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* true when the two sorted arrays share a value. */
static bool sorted_share_a_value(const uint64_t *a, size_t na, const uint64_t *b, size_t nb) {
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) return true;
        if (a[i] < b[j]) i++;
        else j++;
    }
    return false;
}

/* ========================================================= null and equal */

static void test_handle_null_is_zero_and_compares_equal_only_to_itself(void **state) {
    (void)state;
    fm_handle n = FM_HANDLE_NULL;
    assert_int_equal(n.bits, 0);
    assert_true(fm_handle_is_null(n));
    assert_true(fm_handle_is_null((fm_handle){0}));
    assert_true(fm_handle_equal(n, FM_HANDLE_NULL));
    assert_false(fm_handle_is_null((fm_handle){1}));
    assert_false(fm_handle_is_null((fm_handle){(uint64_t)1 << 63}));
    assert_false(fm_handle_equal(n, (fm_handle){1}));
    assert_true(fm_handle_equal((fm_handle){0x1234}, (fm_handle){0x1234}));
    assert_false(fm_handle_equal((fm_handle){0x1234}, (fm_handle){0x1235}));
}

FM_HANDLE_TYPE(entity_handle);
FM_HANDLE_TYPE(particle_handle);

static entity_handle entity_of(fm_test_env *env, const fm_pool *pool, const void *item) {
    return (entity_handle){handle_ok(env, pool, item)};
}
static void *entity_get(const fm_pool *pool, entity_handle e) { return fm_pool_resolve(pool, e.h); }

static void test_handle_type_macro_gives_distinct_handle_structs(void **state) {
    fm_test_env *env = *state;
    entity_handle e = {FM_HANDLE_NULL};
    particle_handle p = {FM_HANDLE_NULL};
    /* Distinct types: _Generic tells them apart (passing one for the other
     * would not compile). */
    assert_int_equal(_Generic(e, entity_handle: 1, particle_handle: 2, default: 0), 1);
    assert_int_equal(_Generic(p, entity_handle: 1, particle_handle: 2, default: 0), 2);
    assert_int_equal(_Generic(e.h, fm_handle: 1, default: 0), 1);
    assert_int_equal(sizeof(entity_handle), sizeof(fm_handle));
    assert_true(fm_handle_is_null(e.h) && fm_handle_is_null(p.h));

    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "entities", .item_size = 24});
    void *item = alloc_ok(pool);
    e = entity_of(env, pool, item);
    assert_ptr_equal(entity_get(pool, e), item);
    fm_pool_free(pool, item);
    assert_null(entity_get(pool, e));
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, pool);
}

typedef struct door {
    int open;
    float angle;
} door;
FM_HANDLE_TYPE(door_ref);
FM_POOL_DECLARE_HANDLE(door, door_pool, door_ref)

/* The typed handle and resolve answer as fm_pool_handle and fm_pool_resolve
 * (compile/typed_handle.c proves that mix-ups do not compile). */
static void test_typed_handle_and_resolve_answer_as_the_untyped_ones(void **state) {
    fm_test_env *env = *state;
    fm_pool *doors = create_counted(env, FM_POOL_DESC(door, .name = "doors"));
    fm_pool *others = create_counted(env, FM_POOL_DESC(door, .name = "others"));
    door *d = alloc_ok(doors);
    door *o = alloc_ok(others);
    door_ref ref = door_pool_handle(doors, d);
    assert_true(fm_handle_equal(ref.h, fm_pool_handle(doors, d)));
    assert_ptr_equal(door_pool_resolve(doors, ref), d);
    assert_null(door_pool_resolve(others, ref)); /* another pool's handle */
    assert_int_equal(env->errors.count, 0);
    /* Not an item of the pool: a null handle and the untyped call's report. */
    door_ref none = door_pool_handle(doors, o);
    assert_true(fm_handle_is_null(none.h));
    assert_int_equal(fm_last_error(), FM_ERR_FOREIGN_POINTER);
    assert_int_equal(env->errors.count, 1);
    assert_null(door_pool_resolve(doors, none));
    fm_pool_free(doors, d);
    assert_null(door_pool_resolve(doors, ref)); /* stale */
    assert_int_equal(env->errors.count, 1);
    fm_pool_free(others, o);
    fm_test_pool_destroy_quiet(env, doors);
    destroy_clean(env, others);
}

/* ============================================================ fm_pool_handle */

static void test_handle_of_live_items_resolves_to_them_and_is_stable(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "live", .item_size = 40});
    enum { N = 64 };
    void *items[N];
    fm_handle hs[N];
    for (int i = 0; i < N; i++) {
        items[i] = alloc_ok(pool);
        hs[i] = handle_ok(env, pool, items[i]);
    }
    for (int i = 0; i < N; i++) {
        assert_resolves_to(env, pool, hs[i], items[i]);
        /* The same item gives the same handle every time. */
        assert_true(fm_handle_equal(hs[i], fm_pool_handle(pool, items[i])));
        for (int j = 0; j < i; j++) assert_false(fm_handle_equal(hs[i], hs[j]));
    }
    fm_pool_stats s = stats_of(pool);
    assert_int_equal(s.misuse_count, 0);
    assert_int_equal(env->errors.count, 0);
    for (int i = 0; i < N; i++) fm_pool_free(pool, items[i]);
    destroy_clean(env, pool);
}

static void test_handle_of_stack_malloc_and_other_pools_pointers_is_null_and_foreign(
    void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "handle_owner", .item_size = 32});
    fm_pool *other = create_counted(env, (fm_pool_desc){.name = "other", .item_size = 32});
    void *mine = alloc_ok(pool);
    void *theirs = alloc_ok(other);
    char on_stack[64];
    void *heap = malloc(64);
    assert_non_null(heap);

    expect_bad_handle(env, pool, on_stack, FM_ERR_FOREIGN_POINTER);
    expect_bad_handle(env, pool, heap, FM_ERR_FOREIGN_POINTER);
    expect_bad_handle(env, pool, theirs, FM_ERR_FOREIGN_POINTER);
    expect_bad_handle(env, pool, NULL, FM_ERR_FOREIGN_POINTER);
    /* A pointer inside an item is not the item. */
    expect_bad_handle(env, pool, (void *)((uintptr_t)mine + 1), FM_ERR_INTERIOR_POINTER);

    /* Nothing disturbed: the real items still have working handles. */
    assert_resolves_to(env, pool, handle_ok(env, pool, mine), mine);
    assert_resolves_to(env, other, handle_ok(env, other, theirs), theirs);
    free(heap);
    fm_pool_free(pool, mine);
    fm_pool_free(other, theirs);
    fm_pool_destroy(other);
    destroy_clean(env, pool);
}

static void test_handle_of_a_freed_item_is_null_and_reported_as_foreign(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "freed_handle", .item_size = 32});
    void *keep = alloc_ok(pool);
    void *gone = alloc_ok(pool);
    fm_pool_free(pool, gone);
    /* pool.h: "FM_HANDLE_NULL and FM_ERR_FOREIGN_POINTER for anything else
     * (a freed item included ...)". */
    expect_bad_handle(env, pool, gone, FM_ERR_FOREIGN_POINTER);
    assert_resolves_to(env, pool, handle_ok(env, pool, keep), keep);
    fm_pool_free(pool, keep);
    destroy_clean(env, pool);
}

/* ============================================================ fm_pool_resolve */

static void test_resolve_of_a_freed_item_is_null_without_reporting(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "weak", .item_size = 48});
    void *a = alloc_ok(pool);
    void *b = alloc_ok(pool);
    fm_handle ha = handle_ok(env, pool, a);
    fm_handle hb = handle_ok(env, pool, b);
    fm_pool_free(pool, a);

    fm_clear_error();
    assert_resolves_null(env, pool, ha);
    assert_int_equal(fm_last_error(), FM_OK);
    /* An earlier error stays the thread's last error: resolve sets none. */
    fm_pool_free(pool, a); /* double free, reported */
    assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
    int errors = env->errors.count;
    fm_pool_stats before = stats_of(pool);
    assert_resolves_null(env, pool, ha);
    assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
    assert_int_equal(env->errors.count, errors);
    fm_pool_stats after = stats_of(pool);
    assert_stats_same(&before, &after, 0);

    assert_resolves_to(env, pool, hb, b);
    fm_pool_free(pool, b);
    assert_resolves_null(env, pool, hb);
    destroy_clean(env, pool);
}

static void test_resolve_after_slot_reuse_is_null_and_new_handle_resolves(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "reuse", .item_size = 32});
    void *first = alloc_ok(pool);
    fm_handle h1 = handle_ok(env, pool, first);
    fm_pool_free(pool, first);
    void *again = alloc_ok(pool);
    assert_ptr_equal(again, first); /* the slot just freed is handed out next */
    fm_handle h2 = handle_ok(env, pool, again);
    assert_false(fm_handle_equal(h1, h2));
    assert_resolves_null(env, pool, h1);
    assert_resolves_to(env, pool, h2, again);

    /* Many generations of one slot: only the newest handle resolves. */
    enum { ROUNDS = 1000 };
    fm_handle *old = malloc(ROUNDS * sizeof *old);
    assert_non_null(old);
    fm_handle cur = h2;
    for (int r = 0; r < ROUNDS; r++) {
        old[r] = cur;
        fm_pool_free(pool, again);
        void *next = alloc_ok(pool);
        assert_ptr_equal(next, first);
        cur = handle_ok(env, pool, next);
        again = next;
    }
    assert_resolves_to(env, pool, cur, first);
    assert_resolves_null(env, pool, h1);
    for (int r = 0; r < ROUNDS; r++) {
        assert_false(fm_handle_equal(old[r], cur));
        assert_resolves_null(env, pool, old[r]);
    }
    free(old);
    fm_pool_free(pool, again);
    assert_resolves_null(env, pool, cur);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, pool);
}

static void test_resolve_of_null_handle_is_null(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "nulls", .item_size = 16});
    void *items[8];
    for (int i = 0; i < 8; i++) items[i] = alloc_ok(pool);
    assert_resolves_null(env, pool, FM_HANDLE_NULL);
    /* Location bits zero, whatever the generation bits say. */
    assert_resolves_null(env, pool, (fm_handle){0xFFFFFFFF00000000ull});
    assert_resolves_null(env, pool, (fm_handle){0x8000000000000000ull});
    for (int i = 0; i < 8; i++) fm_pool_free(pool, items[i]);
    assert_int_equal(env->errors.count, 0);
    destroy_clean(env, pool);
}

static void test_resolve_of_another_pools_handle_is_null(void **state) {
    fm_test_env *env = *state;
    /* Twin pools with identical histories: same locations and generations,
     * only the pool differs. */
    fm_pool_desc desc = {.name = "twin", .item_size = 64};
    fm_pool *a = create_counted(env, desc);
    fm_pool *b = create_counted(env, desc);
    enum { N = 300 };
    void *ia[N], *ib[N];
    fm_handle ha[N], hb[N];
    for (int i = 0; i < N; i++) {
        ia[i] = alloc_ok(a);
        ib[i] = alloc_ok(b);
        ha[i] = handle_ok(env, a, ia[i]);
        hb[i] = handle_ok(env, b, ib[i]);
    }
    for (int i = 0; i < N; i++) {
        assert_resolves_to(env, a, ha[i], ia[i]);
        assert_resolves_to(env, b, hb[i], ib[i]);
        assert_resolves_null(env, a, hb[i]);
        assert_resolves_null(env, b, ha[i]);
    }
    for (int i = 0; i < N; i++) {
        fm_pool_free(a, ia[i]);
        fm_pool_free(b, ib[i]);
    }
    fm_pool_destroy(b);
    destroy_clean(env, a);
}

/* Where a pool's memory comes from in the tests that free it and ask again. */
typedef enum backing {
    BACKING_COUNTING,  /* the fixture's counting allocator */
    BACKING_SYSTEM,    /* zero allocator: heap for the pool, mmap for chunks */
    BACKING_RECYCLING, /* the same blocks handed back (see recycler) */
} backing;

static const char *backing_name(backing b) {
    return b == BACKING_COUNTING ? "counting" : b == BACKING_SYSTEM ? "system" : "recycling";
}

static fm_pool *create_on(fm_test_env *env, fm_pool_desc desc, backing b, recycler *r) {
    if (b == BACKING_COUNTING) return create_counted(env, desc);
    if (b == BACKING_RECYCLING)
        desc.allocator = (fm_allocator){.alloc = recycler_alloc, .free = recycler_free, .user = r};
    return create_with(desc);
}

/* Allocates n items of a fresh pool (same sequence each time) and records
 * their handles. */
static fm_pool *pool_with_handles(fm_test_env *env, fm_pool_desc desc, backing b, recycler *r,
                                  void **items, fm_handle *hs, int n) {
    fm_pool *pool = create_on(env, desc, b, r);
    for (int i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        hs[i] = handle_ok(env, pool, items[i]);
    }
    return pool;
}

/* Pools created one after another with identical histories: each new one
 * holds items at the same locations and generations as the destroyed one
 * (with the recycling allocator at the very same addresses); the handles
 * of the destroyed pool must not resolve in the new one. */
static void check_destroyed_pools_handles_die(fm_test_env *env, backing b) {
    recycler *r = calloc(1, sizeof *r);
    assert_non_null(r);
    fm_pool_desc desc = {.name = "reborn", .item_size = 32};
    enum { N = 200, ROUNDS = 16 };
    void *items[N], *first_items[N];
    fm_handle old[N], cur[N];
    fm_pool *pool = pool_with_handles(env, desc, b, r, items, old, N);
    const fm_pool *first_address = pool;
    memcpy(first_items, items, sizeof items);
    int same_address = 0;
    for (int i = 0; i < N; i++) fm_pool_free(pool, items[i]);
    fm_pool_destroy(pool);
    for (int round = 0; round < ROUNDS; round++) {
        pool = pool_with_handles(env, desc, b, r, items, cur, N);
        if (pool == first_address) same_address++;
        if (b == BACKING_RECYCLING) {
            assert_ptr_equal(pool, first_address);
            assert_memory_equal(items, first_items, sizeof items);
        }
        for (int i = 0; i < N; i++) {
            assert_resolves_to(env, pool, cur[i], items[i]);
            assert_resolves_null(env, pool, old[i]);
        }
        for (int i = 0; i < N; i++) fm_pool_free(pool, items[i]);
        fm_pool_destroy(pool);
        memcpy(old, cur, sizeof old);
    }
    if (b == BACKING_COUNTING) fm_test_allocator_assert_clean(&env->alloc);
    if (b == BACKING_RECYCLING) assert_int_equal(r->live, 0);
    assert_int_equal(env->errors.count, 0);
    print_message("%s allocator: the destroyed pool's address came back for %d of %d pools\n",
                  backing_name(b), same_address, ROUNDS);
    recycler_release(r);
    free(r);
}

static void test_resolve_in_a_new_pool_of_a_destroyed_pools_handle_is_null(void **state) {
    fm_test_env *env = *state;
    check_destroyed_pools_handles_die(env, BACKING_COUNTING);
    check_destroyed_pools_handles_die(env, BACKING_SYSTEM);
    check_destroyed_pools_handles_die(env, BACKING_RECYCLING);
}

/* Fill several chunks, free everything, trim; the old handles are gone, and
 * stay gone once the records and chunk memory are used again. */
static void check_trimmed_chunks_handles_die(fm_test_env *env, backing b) {
    recycler *r = calloc(1, sizeof *r);
    assert_non_null(r);
    fm_pool_desc desc = {.name = "trimmed", .item_size = 64};
    fm_pool *pool = create_on(env, desc, b, r);
    fm_pool_stats s0 = stats_of(pool);
    size_t n = (size_t)s0.items_per_chunk * 4;
    void **items = malloc(n * sizeof *items);
    uint64_t *old = malloc(n * sizeof *old);
    uint64_t *cur = malloc(n * sizeof *cur);
    assert_non_null(items);
    assert_non_null(old);
    assert_non_null(cur);
    for (size_t i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        old[i] = handle_ok(env, pool, items[i]).bits;
    }
    assert_true(stats_of(pool).chunk_count >= 4);
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    size_t released = fm_pool_trim(pool);
    assert_true(released > 0);
    fm_pool_stats trimmed = stats_of(pool);
    assert_true(trimmed.chunk_count < 4);
    for (size_t i = 0; i < n; i++) assert_resolves_null(env, pool, (fm_handle){old[i]});

    /* Grow again: the records (and, recycling, the same memory) come back. */
    size_t reused_addresses = 0;
    void **old_items = malloc(n * sizeof *old_items);
    assert_non_null(old_items);
    memcpy(old_items, items, n * sizeof *items);
    qsort(old_items, n, sizeof *old_items, fm_test_cmp_ptr);
    for (size_t i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        cur[i] = handle_ok(env, pool, items[i]).bits;
        if (bsearch(&items[i], old_items, n, sizeof *old_items, fm_test_cmp_ptr))
            reused_addresses++;
    }
    if (b == BACKING_RECYCLING) assert_int_equal(reused_addresses, n);
    for (size_t i = 0; i < n; i++) {
        assert_resolves_null(env, pool, (fm_handle){old[i]});
        assert_resolves_to(env, pool, (fm_handle){cur[i]}, items[i]);
    }
    /* No new handle equals any old one. */
    qsort(old, n, sizeof *old, fm_test_cmp_u64);
    uint64_t *sorted_cur = malloc(n * sizeof *sorted_cur);
    assert_non_null(sorted_cur);
    memcpy(sorted_cur, cur, n * sizeof *cur);
    qsort(sorted_cur, n, sizeof *sorted_cur, fm_test_cmp_u64);
    assert_false(sorted_share_a_value(old, n, sorted_cur, n));
    print_message("%s allocator: %zu of %zu addresses reused after trim\n", backing_name(b),
                  reused_addresses, n);

    /* Once more: free, trim, grow; neither generation of handles comes back. */
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    assert_true(fm_pool_trim(pool) > 0);
    for (size_t i = 0; i < n; i++) items[i] = alloc_ok(pool);
    for (size_t i = 0; i < n; i++) {
        assert_resolves_null(env, pool, (fm_handle){old[i]});
        assert_resolves_null(env, pool, (fm_handle){cur[i]});
    }

    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    assert_int_equal(env->errors.count, 0);
    if (b == BACKING_COUNTING) {
        destroy_clean(env, pool);
    } else {
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_destroy(pool);
        if (b == BACKING_RECYCLING) assert_int_equal(r->live, 0);
    }
    free(sorted_cur);
    free(old_items);
    free(items);
    free(old);
    free(cur);
    recycler_release(r);
    free(r);
}

static void test_resolve_into_a_trimmed_chunk_is_null_even_after_reuse(void **state) {
    fm_test_env *env = *state;
    check_trimmed_chunks_handles_die(env, BACKING_COUNTING);
    check_trimmed_chunks_handles_die(env, BACKING_SYSTEM);
    check_trimmed_chunks_handles_die(env, BACKING_RECYCLING);
}

static void test_resolve_survives_growth_of_the_record_array(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "growing", .item_size = 32});
    enum { N = 16 };
    void *items[N];
    fm_handle hs[N];
    for (int i = 0; i < N; i++) {
        items[i] = alloc_ok(pool);
        hs[i] = handle_ok(env, pool, items[i]);
    }
    fm_pool_stats s = stats_of(pool);
    /* Many more chunks than the first record array holds. */
    assert_true(fm_pool_reserve(pool, (uint32_t)(s.items_per_chunk * 40)));
    assert_true(stats_of(pool).chunk_count >= 40);
    for (int i = 0; i < N; i++) assert_resolves_to(env, pool, hs[i], items[i]);
    /* Open those chunks: the base array handles read is replaced by bigger
     * ones on the way (filled as chunks open, published once complete).
     * Record field 0 (the null handle's, whatever its other bits) goes on
     * resolving to NULL through every one of them. */
    size_t m = (size_t)s.items_per_chunk * 40;
    void **more = malloc(m * sizeof *more);
    assert_non_null(more);
    assert_true(s.items_per_chunk >= 8); /* a location below 8: record field 0 */
    for (size_t i = 0; i < m; i++) {
        more[i] = alloc_ok(pool);
        if (i % s.items_per_chunk == 0) {
            assert_resolves_null(env, pool, FM_HANDLE_NULL);
            assert_resolves_null(env, pool, (fm_handle){(uint64_t)1 << 32 | (i / 7 % 8)});
            assert_resolves_to(env, pool, handle_ok(env, pool, more[i]), more[i]);
        }
    }
    assert_true(stats_of(pool).chunk_count >= 40);
    for (int i = 0; i < N; i++) assert_resolves_to(env, pool, hs[i], items[i]);
    for (size_t i = 0; i < m; i++) fm_pool_free(pool, more[i]);
    free(more);
    for (int i = 0; i < N; i++) fm_pool_free(pool, items[i]);
    for (int i = 0; i < N; i++) assert_resolves_null(env, pool, hs[i]);
    assert_resolves_null(env, pool, FM_HANDLE_NULL);
    destroy_clean(env, pool);
}

/* ====================================================== slot fields past the slots
 *
 * fm_pool_resolve does not test a handle's slot field against the chunk's
 * slot count: it reads the meta word of any slot the field can name, [0,
 * 2^slot_bits), and the words past the last slot's (the free stack's
 * entries, then zero padding) must never read as live (pool/chunks.c,
 * fm__layout). White-box: a chunk starts with its meta words and is aligned
 * to its size (README, "How growth stays hitch-free"). */

#define META_LIVE 0x80000000u
#define META_GEN 0x7FFFFFFFu

static uint32_t word_at(const void *item, size_t chunk_bytes, uint32_t slot) {
    uintptr_t base = (uintptr_t)item & ~(uintptr_t)(chunk_bytes - 1);
    uint32_t w;
    memcpy(&w, (const unsigned char *)base + (size_t)slot * 4u, sizeof w);
    return w;
}

static fm_handle handle_at(uint32_t rec1, uint32_t bits, uint32_t slot, uint32_t gen) {
    return (fm_handle){(uint64_t)(gen & META_GEN) << 32 | (uint64_t)(rec1 << bits | slot)};
}

/* Fills three chunks' worth of one pool, frees two thirds of the items in
 * a scrambled order, takes them back and frees half of those again (the
 * free stacks hold indices from all over each chunk); then every slot field
 * past the slots, of every chunk, with the generation that would match its
 * word were that word live and with random ones, resolves to NULL, as do
 * record fields 0 and one past the last; the live items still resolve. */
static void check_slot_fields_past_the_slots(fm_test_env *env, fm_pool_desc desc, backing b) {
    recycler *r = calloc(1, sizeof *r);
    assert_non_null(r);
    fm_pool *pool = create_on(env, desc, b, r);
    fm_pool_stats s0 = stats_of(pool);
    size_t cb = fm_pool_get_desc(pool).chunk_bytes;
    uint32_t per = (uint32_t)s0.items_per_chunk;
    size_t n = (size_t)per * 3;
    void **items = malloc(n * sizeof *items);
    fm_handle *hs = malloc(n * sizeof *hs);
    bool *live = calloc(n, sizeof *live);
    assert_non_null(items);
    assert_non_null(hs);
    assert_non_null(live);
    /* Items full of set bits: a word read from a slot would look live. */
    for (size_t i = 0; i < n; i++) items[i] = alloc_ok(pool), live[i] = true;
    for (size_t i = 0; i < n; i++) memset(items[i], 0xFF, desc.item_size);
    uint64_t seed = 0xC0FFEE ^ per;
    for (size_t i = n; i > 1; i--) { /* shuffle, then free all but a third */
        size_t j = (size_t)(rng_next(&seed) % i);
        void *t = items[i - 1];
        items[i - 1] = items[j];
        items[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        if (i % 3) fm_pool_free(pool, items[i]), live[i] = false;
    for (size_t i = 0; i < n; i++)
        if (!live[i]) {
            items[i] = alloc_ok(pool), live[i] = i % 3 == 1;
            memset(items[i], 0xFF, desc.item_size);
        }
    for (size_t i = 0; i < n; i++)
        if (i % 3 == 2) fm_pool_free(pool, items[i]);
    for (size_t i = 0; i < n; i++)
        if (live[i]) hs[i] = handle_ok(env, pool, items[i]);

    /* The handle layout, from a live item's handle: (record + 1) << bits |
     * slot, and its generation bits (the slot's minus the pool's key). */
    size_t first = 0;
    while (!live[first]) first++;
    uint32_t loc0 = (uint32_t)hs[first].bits, bits = 1;
    while ((1u << bits) < per) bits++;
    uint32_t slot0 = loc0 & ((1u << bits) - 1u);
    uint32_t key = (word_at(items[first], cb, slot0) - (uint32_t)(hs[first].bits >> 32)) & META_GEN;
    uint32_t records = (uint32_t)stats_of(pool).chunk_count, checked = 0;
    assert_true(records >= 3);
    bool *chunk_done = calloc((size_t)records + 2, sizeof *chunk_done);
    assert_non_null(chunk_done);

    for (size_t i = 0; i < n; i++) {
        if (!live[i]) continue;
        uint32_t loc = (uint32_t)hs[i].bits, rec1 = loc >> bits, gen = (uint32_t)(hs[i].bits >> 32);
        assert_true(rec1 >= 1 && rec1 <= records);
        assert_int_equal((word_at(items[i], cb, loc & ((1u << bits) - 1u)) - gen) & META_GEN, key);
        assert_resolves_null(env, pool, handle_at(0, bits, loc & ((1u << bits) - 1u), gen));
        assert_resolves_null(env, pool,
                             handle_at(records + 1, bits, loc & ((1u << bits) - 1u), gen));
        if (chunk_done[rec1]) continue;
        chunk_done[rec1] = true;
        for (uint32_t s = per; s < (1u << bits); s++) { /* this item's chunk, past its slots */
            uint32_t w = word_at(items[i], cb, s);
            if (w & META_LIVE) {
                print_error("pool '%s' (%u slots, %u slot bits): the word past the slots at "
                            "slot field %u reads as live: %#x\n",
                            fm_pool_name(pool), per, bits, s, w);
                fail();
            }
            assert_resolves_null(env, pool, handle_at(rec1, bits, s, (w & META_GEN) - key));
            assert_resolves_null(env, pool, handle_at(rec1, bits, s, (uint32_t)rng_next(&seed)));
            checked++;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (live[i]) assert_resolves_to(env, pool, hs[i], items[i]);
    print_message("%s allocator, %s: %u slots, %u slot bits, %u words past the slots checked\n",
                  backing_name(b), fm_pool_name(pool), per, bits, checked);

    /* Trimmed (down to the one chunk of initial_capacity): the records
     * without a chunk read the dead chunk; no field of any record resolves. */
    for (size_t i = 0; i < n; i++)
        if (live[i]) fm_pool_free(pool, items[i]);
    assert_true(fm_pool_trim(pool) > 0);
    assert_true(stats_of(pool).chunk_count < records);
    for (uint32_t rec1 = 0; rec1 <= records + 1; rec1++)
        for (uint32_t s = 0; s < (1u << bits); s += 1u + (1u << bits) / 64u)
            for (int g = 0; g < 4; g++)
                assert_resolves_null(
                    env, pool, handle_at(rec1, bits, s, g ? (uint32_t)rng_next(&seed) : 0u - key));
    for (size_t i = 0; i < n; i++)
        if (live[i]) assert_resolves_null(env, pool, hs[i]);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    if (b == BACKING_COUNTING) destroy_clean(env, pool);
    else fm_pool_destroy(pool);
    if (b == BACKING_RECYCLING) assert_int_equal(r->live, 0);
    recycler_release(r);
    free(r);
    free(chunk_done);
    free(live);
    free(hs);
    free(items);
}

static void test_resolve_of_slot_fields_past_a_chunks_slots_is_null(void **state) {
    fm_test_env *env = *state;
    /* Slot counts just above a power of two (zero padding past the stack),
     * well above one (the stack covers the words), one, past 16384 (stack
     * entries up to 2^15 - 1) and at the most a chunk holds (12-byte items
     * would fit 58254); the shared read path (MUTEX, THREAD_CACHE); the
     * fixture's counting allocator, the OS's zero pages and allocator memory
     * that starts as 0xA5 (recycling). */
    static const struct {
        size_t item_size, chunk_bytes;
        fm_sync sync;
    } cases[] = {
        {20, 4096, FM_SYNC_NONE},
        {20, 4096, FM_SYNC_MUTEX},
        {3000, 16384, FM_SYNC_NONE},
        {16, 4096, FM_SYNC_NONE},
        {100, 65536, FM_SYNC_NONE},
        {4, 1u << 18, FM_SYNC_NONE},
        {12, 1u << 20, FM_SYNC_NONE},
        {3000, 4096, FM_SYNC_NONE},
        {48, 1u << 16, FM_SYNC_THREAD_CACHE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int b = BACKING_COUNTING; b <= BACKING_RECYCLING; b++) {
            char name[48];
            snprintf(name, sizeof name, "past-%zu-%zu", cases[c].item_size, cases[c].chunk_bytes);
            fm_pool_desc desc = {.name = name,
                                 .item_size = cases[c].item_size,
                                 .item_align = 4,
                                 .chunk_bytes = cases[c].chunk_bytes,
                                 .sync = cases[c].sync};
            check_slot_fields_past_the_slots(env, desc, (backing)b);
        }
    }
}

static void test_resolve_of_garbage_bits_is_null_or_a_live_item(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "garbage", .item_size = 24});
    fm_pool_stats s0 = stats_of(pool);
    size_t n = (size_t)s0.items_per_chunk * 3 + 7;
    void **items = malloc(n * sizeof *items);
    fm_handle *hs = malloc(n * sizeof *hs);
    assert_non_null(items);
    assert_non_null(hs);
    for (size_t i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        hs[i] = handle_ok(env, pool, items[i]);
    }
    /* Free every third, so some slots are dead. */
    for (size_t i = 0; i < n; i += 3) fm_pool_free(pool, items[i]);
    fm_pool_stats before = stats_of(pool);

    uint64_t seed = 0x5EEDF00Dull;
    size_t hits = 0;
    for (int k = 0; k < 200000; k++) {
        uint64_t bits = rng_next(&seed);
        switch (k & 3) {
        case 0: break;                                         /* anything */
        case 1: bits &= 0xFFFFFFFF00000FFFull; break;          /* small locations */
        case 2: bits = (bits & ~0xFFFFFFFFull) | (uint32_t)hs[bits % n].bits; break;
        default: bits = hs[bits % n].bits ^ ((uint64_t)1 << (bits & 63)); break;
        }
        void *got = resolve_both(env, pool, (fm_handle){bits});
        if (got) {
            hits++;
            assert_true(fm_pool_owns(pool, got));
        }
    }
    assert_int_equal(fm_last_error(), FM_OK);
    assert_int_equal(env->errors.count, 0);
    fm_pool_stats after = stats_of(pool);
    assert_stats_same(&before, &after, 0);
    print_message("%zu of 200000 garbage handles named a live item\n", hits);

    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 0) assert_resolves_null(env, pool, hs[i]);
        else assert_resolves_to(env, pool, hs[i], items[i]);
    }
    for (size_t i = 0; i < n; i++) {
        if (i % 3 != 0) fm_pool_free(pool, items[i]);
    }
    free(items);
    free(hs);
    destroy_clean(env, pool);
}

/* ========================================================= generation wrap */

static void test_handle_to_a_slot_retired_at_generation_wrap_is_null_for_good(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "wrap_handle", .item_size = 32,
                                                       .growth = FM_GROWTH_FIXED});
    fm_pool_stats s = stats_of(pool);
    uint8_t *first = alloc_ok(pool);
    uint32_t *meta0 = (uint32_t *)((uintptr_t)first & ~(uintptr_t)(s.chunk_bytes - 1));
    assert_true(*meta0 & 0x80000000u); /* slot 0: live, in its first generation */
    fm_handle gen0 = handle_ok(env, pool, first);

    *meta0 = 0xFFFFFFFFu; /* live, generation at its maximum */
    assert_resolves_null(env, pool, gen0);
    fm_handle last = handle_ok(env, pool, first);
    assert_false(fm_handle_equal(gen0, last));
    assert_resolves_to(env, pool, last, first);

    fm_pool_free(pool, first);
    assert_int_equal(env->errors.count, 0);
    fm_pool_stats after = stats_of(pool);
    assert_int_equal(after.capacity, s.capacity - 1);
    assert_int_equal(after.live, 0);
    assert_resolves_null(env, pool, last);
    assert_resolves_null(env, pool, gen0);
    assert_int_equal(fm_pool_check(pool), FM_OK);

    /* Every other slot is handed out; the retired one never is. */
    size_t n = (size_t)after.capacity;
    void **items = malloc(n * sizeof *items);
    fm_handle *hs = malloc(n * sizeof *hs);
    assert_non_null(items);
    assert_non_null(hs);
    for (size_t i = 0; i < n; i++) {
        items[i] = alloc_ok(pool);
        assert_ptr_not_equal(items[i], first);
        hs[i] = handle_ok(env, pool, items[i]);
    }
    assert_null(fm_pool_alloc(pool));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    for (size_t i = 0; i < n; i++) {
        assert_false(fm_handle_equal(hs[i], last));
        assert_resolves_to(env, pool, hs[i], items[i]);
    }
    assert_resolves_null(env, pool, last);
    assert_resolves_null(env, pool, gen0);
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    /* Round two: still never handed out. */
    for (size_t i = 0; i < n; i++) assert_ptr_not_equal(items[i] = alloc_ok(pool), first);
    assert_resolves_null(env, pool, last);
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    free(items);
    free(hs);
    destroy_clean(env, pool);
}

/* ====================================================== the chunk limit
 *
 * A handle's low 32 bits are (record + 1) << slot_bits | slot, slot_bits =
 * ceil(log2(items_per_chunk)): a pool can hold 2^(32 - slot_bits) - 1
 * chunks (at most 2^29 - 1), the limit pool.h documents. */

static uint64_t handle_chunk_limit(const fm_pool_stats *s) {
    uint32_t bits = 1;
    while ((1ull << bits) < s->items_per_chunk) bits++;
    uint64_t chunks = (1ull << (32 - bits)) - 1;
    return chunks < (1ull << 29) - 1 ? chunks : (1ull << 29) - 1;
}

static void test_pool_growth_past_the_chunks_its_handles_address_is_pool_full_for_any_size(
    void **state) {
    fm_test_env *env = *state;
    static const struct {
        size_t size, align;
    } shapes[] = {{4, 4}, {12, 4}, {16, 0}, {100, 4}, {5000, 8}, {(size_t)1 << 20, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "vast",
                                                           .item_size = shapes[i].size,
                                                           .item_align = shapes[i].align});
        fm_pool_stats before = stats_of(pool);
        uint64_t limit = handle_chunk_limit(&before) * before.items_per_chunk;
        print_message("%zu-byte items: %llu per chunk, at most %llu chunks, %llu items\n",
                      shapes[i].size, (unsigned long long)before.items_per_chunk,
                      (unsigned long long)handle_chunk_limit(&before), (unsigned long long)limit);
        assert_true(limit < UINT32_MAX); /* reserve can ask for more */

        /* One item more than the handles address: refused before any memory
         * is asked for, the pool as it was. (The backing allocator refuses
         * everything meanwhile: a growth that went ahead fails fast.) */
        fm_test_allocator_fail_from(&env->alloc, 1);
        uint64_t calls = env->alloc.alloc_calls;
        int errors = env->errors.count;
        fm_clear_error();
        assert_false(fm_pool_reserve(pool, (uint32_t)limit + 1));
        assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
        assert_int_equal(env->errors.count, errors + 1);
        assert_true(fm_test_contains(env->errors.message, "vast"));
        assert_int_equal(env->alloc.alloc_calls, calls);
        fm_pool_stats after = stats_of(pool);
        assert_stats_same(&before, &after, 0);

        /* Exactly the limit passes the check (and then meets the backing
         * allocator, refused here: tens of GiB). */
        assert_false(fm_pool_reserve(pool, (uint32_t)limit));
        assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
        fm_test_allocator_recover(&env->alloc);
        after = stats_of(pool);
        assert_stats_same(&before, &after, 0);
        void *item = alloc_ok(pool);
        fm_pool_free(pool, item);
        destroy_clean(env, pool);
    }
}

static void test_pool_at_its_chunk_limit_is_full_intact_and_every_handle_resolves(void **state) {
    fm_test_env *env = *state;
    static const fm_sync syncs[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                    FM_SYNC_LOCKFREE};
    for (size_t k = 0; k < sizeof syncs / sizeof syncs[0]; k++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "capped", .item_size = 16, .sync = syncs[k]});
        fm__pool_set_max_chunks(pool, 3);
        uint64_t per = stats_of(pool).items_per_chunk;
        size_t n = (size_t)(3 * per);
        void **items = malloc(n * sizeof *items);
        fm_handle *hs = malloc(n * sizeof *hs);
        assert_non_null(items);
        assert_non_null(hs);
        for (int round = 0; round < 2; round++) {
            /* Geometric growth from 1 chunk: 2, then the 1 chunk left (not 4). */
            for (size_t i = 0; i < n; i++) {
                items[i] = alloc_ok(pool);
                hs[i] = handle_ok(env, pool, items[i]);
            }
            fm_pool_stats full = stats_of(pool);
            assert_int_equal(full.chunk_count, 3);
            assert_int_equal(full.capacity, n);
            int errors = env->errors.count;
            fm_clear_error();
            assert_null(fm_pool_alloc(pool));
            assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
            assert_int_equal(env->errors.count, errors + 1);
            assert_true(fm_test_contains(env->errors.message, "capped"));
            assert_false(fm_pool_reserve(pool, (uint32_t)n + 1));
            assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
            fm_pool_stats after = stats_of(pool);
            assert_int_equal(after.failed_allocs, full.failed_allocs + 1);
            after.failed_allocs = full.failed_allocs;
            assert_stats_same(&full, &after, 0);
            assert_int_equal(fm_pool_check(pool), FM_OK);
            for (size_t i = 0; i < n; i++) assert_resolves_to(env, pool, hs[i], items[i]);
            /* Freed and trimmed back to one chunk, it grows to the limit again
             * on the records it gave back. */
            for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
            for (size_t i = 0; i < n; i += 97) assert_resolves_null(env, pool, hs[i]);
            fm_pool_trim(pool);
            assert_int_equal(stats_of(pool).chunk_count, 1);
        }
        free(items);
        free(hs);
        destroy_clean(env, pool);
    }
}

/* ==================================================================== scale */

static void test_handles_of_100k_items_resolve_and_freed_half_is_null(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "many", .item_size = 16});
    enum { N = 100000 };
    void **items = malloc(N * sizeof *items);
    fm_handle *hs = malloc(N * sizeof *hs);
    assert_non_null(items);
    assert_non_null(hs);
    for (int i = 0; i < N; i++) {
        items[i] = alloc_ok(pool);
        hs[i] = fm_pool_handle(pool, items[i]);
    }
    for (int i = 0; i < N; i++) {
        if (fm_pool_resolve(pool, hs[i]) != items[i]) {
            print_error("item %d: handle %#llx does not resolve\n", i,
                        (unsigned long long)hs[i].bits);
            fail();
        }
    }
    for (int i = 0; i < N; i += 2) fm_pool_free(pool, items[i]);
    for (int i = 0; i < N; i++) {
        void *want = (i % 2) ? items[i] : NULL;
        void *got = fm_pool_resolve(pool, hs[i]);
        if (got != want || (fm_pool_resolve)(pool, hs[i]) != want) {
            print_error("item %d: resolved to %p, expected %p\n", i, got, want);
            fail();
        }
    }
    /* Refill the freed half: new items, old handles still dead. */
    for (int i = 0; i < N; i += 2) items[i] = alloc_ok(pool);
    for (int i = 0; i < N; i += 2) {
        if (fm_pool_resolve(pool, hs[i]) != NULL) {
            print_error("item %d: stale handle resolved after refill\n", i);
            fail();
        }
        assert_ptr_equal(fm_pool_resolve(pool, fm_pool_handle(pool, items[i])), items[i]);
    }
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (int i = 0; i < N; i++) fm_pool_free(pool, items[i]);
    free(items);
    free(hs);
    destroy_clean(env, pool);
#ifdef FM__POOL_INLINE
    print_message("fm_pool_resolve here is pool.h's inline macro\n");
#else
    print_message("fm_pool_resolve here is the library function\n");
#endif
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_handle_null_is_zero_and_compares_equal_only_to_itself),
        T(test_handle_type_macro_gives_distinct_handle_structs),
        T(test_handle_of_live_items_resolves_to_them_and_is_stable),
        T(test_handle_of_stack_malloc_and_other_pools_pointers_is_null_and_foreign),
        T(test_handle_of_a_freed_item_is_null_and_reported_as_foreign),
        T(test_resolve_of_a_freed_item_is_null_without_reporting),
        T(test_resolve_after_slot_reuse_is_null_and_new_handle_resolves),
        T(test_typed_handle_and_resolve_answer_as_the_untyped_ones),
        T(test_resolve_of_null_handle_is_null),
        T(test_resolve_of_another_pools_handle_is_null),
        T(test_resolve_in_a_new_pool_of_a_destroyed_pools_handle_is_null),
        T(test_resolve_into_a_trimmed_chunk_is_null_even_after_reuse),
        T(test_resolve_survives_growth_of_the_record_array),
        T(test_resolve_of_garbage_bits_is_null_or_a_live_item),
        T(test_resolve_of_slot_fields_past_a_chunks_slots_is_null),
        T(test_handle_to_a_slot_retired_at_generation_wrap_is_null_for_good),
        T(test_pool_growth_past_the_chunks_its_handles_address_is_pool_full_for_any_size),
        T(test_pool_at_its_chunk_limit_is_full_intact_and_every_handle_resolves),
        T(test_handles_of_100k_items_resolve_and_freed_half_is_null),
#undef T
    };
    return cmocka_run_group_tests_name("handle", tests, NULL, NULL);
}
