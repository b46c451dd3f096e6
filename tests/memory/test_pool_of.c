/* tests/memory/test_pool_of.c: fm_pool_of and fm_free through the
 * process-wide chunk map: the owner of every address inside a chunk, for
 * every chunk size and backing; NULL, unreported, for everything else
 * (stack, static, heap, far and trimmed or destroyed pools' addresses);
 * fm_free into the owning pool under every policy, with the owner's reports
 * for dead and interior pointers and FM_ERR_FOREIGN_POINTER for the rest;
 * lookups while other threads create, grow, trim and destroy pools; and
 * desc.chunk_bytes (4 KiB chunks included: several pools' chunks in one
 * 64 KiB granule). */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS, MADV_POPULATE_WRITE */
#define _POSIX_C_SOURCE 200809L
#include "fm_test.h"

#include "framemem/pool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14, for older headers (as os_posix.c) */
#endif
#endif

static const fm_sync policies[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                   FM_SYNC_LOCKFREE};
enum { POLICIES = sizeof policies / sizeof policies[0] };

#define create_counted fm_test_pool_create_counted
#define destroy_clean fm_test_pool_destroy_clean
#define stats_of fm_test_pool_stats

static long long g_static_block[16];

/* Every address of every chunk the items sit in (stepping by 64 bytes, and
 * the first and last byte) belongs to pool. */
static void assert_chunks_owned(fm_pool *pool, void **items, size_t n) {
    size_t cb = (size_t)stats_of(pool).chunk_bytes;
    uintptr_t last_chunk = 0;
    for (size_t i = 0; i < n; i++) {
        assert_ptr_equal(fm_pool_of(items[i]), pool);
        assert_ptr_equal(fm_pool_of((char *)items[i] + 1), pool);
        uintptr_t chunk = (uintptr_t)items[i] & ~(uintptr_t)(cb - 1);
        if (chunk == last_chunk) continue;
        last_chunk = chunk;
        for (size_t off = 0; off < cb; off += 64)
            assert_ptr_equal(fm_pool_of((void *)(chunk + off)), pool);
        assert_ptr_equal(fm_pool_of((void *)(chunk + cb - 1)), pool);
    }
}

/* ================================================================ owners */

/* Pools with chunks of 4 KiB to 1 MiB, mapped or from the counting
 * allocator: fm_pool_of names each item's pool, and any address inside its
 * chunk, freed items included. */
static void test_pool_of_names_the_pool_of_every_address_in_its_chunks(void **state) {
    fm_test_env *env = *state;
    const struct {
        size_t item_size, chunk_bytes;
    } shapes[] = {{40, 4096}, {200, 8192}, {16, 32768}, {64, 0}, {3000, 0}, {100, 1 << 20}};
    enum { SHAPES = sizeof shapes / sizeof shapes[0] };
    for (int counted = 0; counted < 2; counted++) {
        fm_pool *pools[SHAPES];
        void **items[SHAPES];
        size_t n[SHAPES];
        for (int k = 0; k < SHAPES; k++) {
            fm_pool_desc d = {.name = "owned", .item_size = shapes[k].item_size,
                              .chunk_bytes = shapes[k].chunk_bytes};
            pools[k] = counted ? create_counted(env, d) : fm_pool_create(&d);
            assert_non_null(pools[k]);
            fm_pool_stats s = stats_of(pools[k]);
            if (shapes[k].chunk_bytes) assert_int_equal(s.chunk_bytes, shapes[k].chunk_bytes);
            n[k] = (size_t)s.items_per_chunk * 3 + 1; /* several chunks */
            items[k] = malloc(n[k] * sizeof *items[k]);
            assert_non_null(items[k]);
            for (size_t i = 0; i < n[k]; i++)
                assert_non_null(items[k][i] = fm_pool_alloc(pools[k]));
        }
        for (int k = 0; k < SHAPES; k++) {
            assert_chunks_owned(pools[k], items[k], n[k]);
            for (size_t i = 0; i < n[k]; i += 2) fm_pool_free(pools[k], items[k][i]);
            assert_chunks_owned(pools[k], items[k], n[k]); /* dead items too */
            for (size_t i = 1; i < n[k]; i += 2) fm_pool_free(pools[k], items[k][i]);
            free(items[k]);
        }
        assert_int_equal(env->errors.count, 0);
        for (int k = 0; k < SHAPES; k++) {
            if (counted) fm_test_pool_destroy_quiet(env, pools[k]);
            else fm_pool_destroy(pools[k]);
        }
        fm_test_allocator_assert_clean(&env->alloc);
    }
    assert_true(fm_pool_map_bytes() > 0);
}

/* Pointers in no chunk: NULL, and nothing reported, whatever they point at
 * (the map is all that is read: these are never dereferenced). */
static void test_pool_of_a_pointer_in_no_chunk_is_null_and_unreported(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "near", .item_size = 32});
    void *item = fm_pool_alloc(pool);
    long long on_stack[4] = {0};
    void *heap = malloc(64);
    assert_non_null(heap);
    void *far[] = {NULL, (void *)1, (void *)(uintptr_t)4096, on_stack, g_static_block, heap,
                   (void *)UINTPTR_MAX, (void *)(UINTPTR_MAX - 4095)};
    fm_clear_error();
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) assert_null(fm_pool_of(far[i]));
#if UINTPTR_MAX > 0xFFFFFFFFu
    /* Above the 2^48 the map covers, and bits flipped high in an item's. */
    assert_null(fm_pool_of((void *)((uintptr_t)1 << 48)));
    assert_null(fm_pool_of((void *)((uintptr_t)item | ((uintptr_t)1 << 52))));
    assert_null(fm_pool_of((void *)((uintptr_t)item ^ ((uintptr_t)1 << 44))));
#endif
    assert_int_equal(fm_last_error(), FM_OK);
    assert_int_equal(env->errors.count, 0);
    assert_ptr_equal(fm_pool_of(item), pool);
    fm_pool_free(pool, item);
    free(heap);
    destroy_clean(env, pool);
}

/* Chunks given back (trim, destroy) leave the map: their addresses are in
 * no pool's chunk any more, and fm_free of one is foreign. */
static void test_pool_of_trimmed_and_destroyed_chunks_is_null(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "shrinking", .item_size = 64});
    size_t n = (size_t)stats_of(pool).items_per_chunk * 4;
    void **items = malloc(n * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < n; i++) assert_non_null(items[i] = fm_pool_alloc(pool));
    for (size_t i = 0; i < n; i++) fm_pool_free(pool, items[i]);
    assert_true(fm_pool_trim(pool) > 0);
    size_t gone = 0;
    for (size_t i = 0; i < n; i++) {
        fm_pool *owner = fm_pool_of(items[i]);
        if (owner == NULL) gone++;
        else assert_ptr_equal(owner, pool); /* the chunk it kept */
    }
    assert_true(gone >= n / 2);
    fm_pool_destroy(pool);
    for (size_t i = 0; i < n; i++) assert_null(fm_pool_of(items[i]));
    assert_int_equal(env->errors.count, 0);
    fm_test_allocator_assert_clean(&env->alloc);
    free(items);
}

/* The pool (a or b) one of whose chunks, listed in bases, covers addr; NULL
 * for none. */
enum { GRANULE_CHUNKS = 12 };
typedef struct chunk_list {
    fm_pool *pool;
    uintptr_t base[GRANULE_CHUNKS];
    size_t n;
} chunk_list;

static fm_pool *covering(const chunk_list *lists, int nlists, size_t cb, uintptr_t addr) {
    for (int l = 0; l < nlists; l++)
        for (size_t i = 0; i < lists[l].n; i++)
            if (addr - lists[l].base[i] < cb) return lists[l].pool;
    return NULL;
}

/* Every 4 KiB page of every 64 KiB granule the lists' chunks lie in names
 * the pool whose chunk covers it, or none. */
static size_t assert_granules_mapped(const chunk_list *lists, int nlists, size_t cb) {
    size_t shared = 0; /* granules holding chunks of both pools */
    for (int l = 0; l < nlists; l++) {
        for (size_t i = 0; i < lists[l].n; i++) {
            uintptr_t g = lists[l].base[i] & ~(uintptr_t)65535;
            bool other = false;
            for (uintptr_t page = g; page < g + 65536; page += 4096) {
                fm_pool *want = covering(lists, nlists, cb, page);
                assert_ptr_equal(fm_pool_of((void *)page), want);
                assert_ptr_equal(fm_pool_of((void *)(page + 4095)), want);
                other |= want != NULL && want != lists[l].pool;
            }
            shared += other;
        }
    }
    return shared;
}

/* Chunks under 64 KiB mapped for their pools (the system allocator), two
 * pools' chunks made in turns: every page of the granules they lie in
 * belongs to the pool whose chunk covers it, or to none, before and after
 * one pool is destroyed. Where the OS maps them side by side (Linux), a
 * granule may hold both pools' chunks; on Windows, where a reservation
 * starts on a 64 KiB boundary and each chunk is one, a chunk is alone at
 * the start of its granule and the rest of the granule is in no pool. */
static void test_pool_of_names_the_owner_of_each_page_of_a_small_chunks_granule(void **state) {
    fm_test_env *env = *state;
    const size_t sizes[] = {4096, 8192, 32768};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t cb = sizes[k];
        chunk_list lists[2] = {{0}, {0}};
        for (int l = 0; l < 2; l++) {
            lists[l].pool = fm_pool_create(&(fm_pool_desc){.name = l ? "b" : "a",
                                                           .item_size = l ? 56 : 48,
                                                           .chunk_bytes = cb,
                                                           .growth = FM_GROWTH_LINEAR});
            assert_non_null(lists[l].pool);
        }
        size_t per[2] = {(size_t)stats_of(lists[0].pool).items_per_chunk,
                         (size_t)stats_of(lists[1].pool).items_per_chunk};
        void **items[2];
        for (int l = 0; l < 2; l++) {
            items[l] = malloc(GRANULE_CHUNKS * per[l] * sizeof *items[l]);
            assert_non_null(items[l]);
        }
        /* In turns, a chunk's worth each: every growth is one new chunk. */
        for (size_t c = 0; c < GRANULE_CHUNKS; c++) {
            for (int l = 0; l < 2; l++) {
                for (size_t i = 0; i < per[l]; i++) {
                    void *item = fm_pool_alloc(lists[l].pool);
                    assert_non_null(item);
                    items[l][c * per[l] + i] = item;
                    uintptr_t base = (uintptr_t)item & ~(uintptr_t)(cb - 1);
                    if (lists[l].n == 0 || lists[l].base[lists[l].n - 1] != base) {
                        assert_true(lists[l].n < GRANULE_CHUNKS);
                        lists[l].base[lists[l].n++] = base;
                    }
                }
            }
        }
        for (int l = 0; l < 2; l++) assert_int_equal(lists[l].n, GRANULE_CHUNKS);
#ifdef _WIN32
        for (int l = 0; l < 2; l++)
            for (size_t i = 0; i < lists[l].n; i++) assert_int_equal(lists[l].base[i] % 65536, 0);
#endif
        size_t shared = assert_granules_mapped(lists, 2, cb);
        print_message("chunk_bytes %zu: %zu of %d chunks share a granule with the other pool's\n",
                      cb, shared, 2 * GRANULE_CHUNKS);
#ifdef _WIN32
        assert_int_equal(shared, 0);
#endif
        /* a goes: its pages are in no pool, b's stay b's. */
        for (size_t i = 0; i < GRANULE_CHUNKS * per[0]; i++) fm_free(items[0][i]);
        fm_pool_destroy(lists[0].pool);
        chunk_list gone = lists[0];
        gone.pool = NULL;
        chunk_list after[2] = {lists[1], gone};
        assert_granules_mapped(after, 2, cb);
        for (size_t i = 0; i < GRANULE_CHUNKS * per[1]; i++) fm_free(items[1][i]);
        fm_pool_destroy(lists[1].pool);
        for (int l = 0; l < 2; l++)
            for (size_t i = 0; i < lists[l].n; i++) assert_null(fm_pool_of((void *)lists[l].base[i]));
        free(items[0]);
        free(items[1]);
    }
    assert_int_equal(env->errors.count, 0);
}

/* An allocator that hands out the 4 KiB blocks of one 64 KiB-aligned region
 * in turn (everything else from the C heap): the 4 KiB chunks of two pools
 * share one 64 KiB granule of the map. */
typedef struct granule_alloc {
    uint8_t *region;
    uint32_t used; /* bit i: block i handed out */
} granule_alloc;

static void *granule_alloc_fn(size_t size, size_t align, void *user) {
    granule_alloc *g = user;
    if (size == 4096 && align == 4096) {
        for (int i = 0; i < 16; i++) {
            if (!(g->used & (1u << i))) {
                g->used |= 1u << i;
                return g->region + (size_t)i * 4096;
            }
        }
        return NULL;
    }
    return fm_test_aligned_alloc(align < sizeof(void *) ? sizeof(void *) : align, size);
}

static void granule_free_fn(void *ptr, size_t size, void *user) {
    granule_alloc *g = user;
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)g->region;
    if (off < 65536) {
        assert_int_equal(size, 4096);
        g->used &= ~(1u << (off / 4096));
        return;
    }
    fm_test_aligned_free(ptr);
}

static void test_pool_of_tells_apart_small_chunks_of_two_pools_in_one_granule(void **state) {
    fm_test_env *env = *state;
    granule_alloc g = {0};
    void *region = fm_test_aligned_alloc(65536, 65536);
    assert_non_null(region);
    g.region = region;
    fm_allocator a = {.alloc = granule_alloc_fn, .free = granule_free_fn, .user = &g};
    fm_pool *even = fm_pool_create(&(fm_pool_desc){.name = "even", .item_size = 100,
                                                   .chunk_bytes = 4096, .allocator = a,
                                                   .growth = FM_GROWTH_LINEAR});
    fm_pool *odd = fm_pool_create(&(fm_pool_desc){.name = "odd", .item_size = 60,
                                                  .chunk_bytes = 4096, .allocator = a,
                                                  .growth = FM_GROWTH_LINEAR});
    assert_non_null(even);
    assert_non_null(odd);
    /* Turns: even, odd, even, ... each a new chunk, all in the region. */
    size_t pe = (size_t)stats_of(even).items_per_chunk, po = (size_t)stats_of(odd).items_per_chunk;
    void *ie[16 * 80], *io[16 * 80]; /* at most 16 chunks of at most 80 items */
    size_t ne = 0, no = 0;
    for (int round = 0; round < 5; round++) {
        for (size_t i = 0; i < pe; i++) assert_non_null(ie[ne++] = fm_pool_alloc(even));
        for (size_t i = 0; i < po; i++) assert_non_null(io[no++] = fm_pool_alloc(odd));
    }
    assert_int_equal(g.used, 0x3FF); /* ten chunks, both pools' */
    for (int b = 0; b < 10; b++) {
        fm_pool *owner = fm_pool_of(g.region + (size_t)b * 4096 + 123);
        assert_true(owner == even || owner == odd);
    }
    for (size_t i = 0; i < ne; i++) assert_ptr_equal(fm_pool_of(ie[i]), even);
    for (size_t i = 0; i < no; i++) assert_ptr_equal(fm_pool_of(io[i]), odd);
    /* Free through the map; one pool gives its chunks back: the other's stay. */
    for (size_t i = 0; i < ne; i++) fm_free(ie[i]);
    assert_true(fm_pool_trim(even) > 0);
    for (size_t i = 0; i < no; i++) assert_ptr_equal(fm_pool_of(io[i]), odd);
    size_t unowned = 0;
    for (size_t i = 0; i < ne; i++) unowned += fm_pool_of(ie[i]) == NULL;
    assert_true(unowned >= ne - pe); /* all but the chunk trim keeps */
    /* A block given back and handed to the other pool now maps to it. */
    for (size_t i = 0; i < 3 * po; i++) assert_non_null(io[no++] = fm_pool_alloc(odd));
    for (size_t i = 0; i < no; i++) assert_ptr_equal(fm_pool_of(io[i]), odd);
    for (size_t i = 0; i < no; i++) fm_free(io[i]);
    assert_int_equal(stats_of(odd).live, 0);
    assert_int_equal(env->errors.count, 0);
    fm_pool_destroy(even);
    fm_pool_destroy(odd);
    assert_int_equal(g.used, 0);
    for (int b = 0; b < 16; b++) assert_null(fm_pool_of(g.region + (size_t)b * 4096));
    fm_test_aligned_free(region);
}

/* ================================================================ fm_free */

static void test_fm_free_frees_into_the_owning_pool_under_every_policy(void **state) {
    fm_test_env *env = *state;
    fm_pool *pools[POLICIES];
    void **items[POLICIES];
    size_t n = 0;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        pools[pi] = create_counted(env, (fm_pool_desc){.name = "freed", .item_size = 48,
                                                       .sync = policies[pi]});
        n = (size_t)stats_of(pools[pi]).items_per_chunk * 2 + 5;
        items[pi] = malloc(n * sizeof *items[pi]);
        assert_non_null(items[pi]);
        for (size_t i = 0; i < n; i++) assert_non_null(items[pi][i] = fm_pool_alloc(pools[pi]));
    }
    /* Interleaved over the pools, as a base-pointer free would come. */
    for (size_t i = 0; i < n; i++)
        for (size_t pi = 0; pi < POLICIES; pi++) fm_free(items[pi][(i * 7) % n]);
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool_stats s = stats_of(pools[pi]);
        assert_int_equal(s.live, 0);
        assert_int_equal(s.total_frees, n);
        for (size_t i = 0; i < n; i++) assert_false(fm_pool_owns(pools[pi], items[pi][i]));
        free(items[pi]);
    }
    assert_int_equal(env->errors.count, 0);
    for (size_t pi = 0; pi < POLICIES; pi++) fm_test_pool_destroy_quiet(env, pools[pi]);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* The owner reports a dead item (freed, or freed by a reset) as a double
 * free and a pointer inside an item as interior, counts the misuse, and
 * nothing changes. */
static void test_fm_free_of_a_dead_or_interior_pointer_is_reported_by_its_pool(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "misused", .item_size = 32,
                                                           .sync = policies[pi]});
        void *a = fm_pool_alloc(pool), *b = fm_pool_alloc(pool), *c = fm_pool_alloc(pool);
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(c);
        fm_free(a);
        fm_pool_stats before = stats_of(pool);
        fm_free(a);
        assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
        assert_true(fm_test_contains(env->errors.message, "'misused'"));
        fm_free((char *)b + 8);
        assert_int_equal(fm_last_error(), FM_ERR_INTERIOR_POINTER);
        fm_pool_stats after = stats_of(pool);
        fm_test_assert_pool_stats_same(&before, &after, 2);
        assert_true(fm_pool_owns(pool, b));
        fm_pool_reset(pool);
        fm_free(c);
        assert_int_equal(fm_last_error(), FM_ERR_DOUBLE_FREE);
        assert_int_equal(env->errors.count, 3);
        assert_int_equal(stats_of(pool).misuse_count, 3);
        fm_test_errors_reset(&env->errors);
        destroy_clean(env, pool);
    }
}

/* A pointer in no pool's chunk: FM_ERR_FOREIGN_POINTER naming fm_free,
 * every pool as it was. NULL: nothing at all. */
static void test_fm_free_of_a_pointer_no_pool_holds_is_foreign_and_changes_nothing(void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "bystander", .item_size = 32});
    void *item = fm_pool_alloc(pool);
    long long on_stack[4] = {0};
    void *heap = malloc(64);
    assert_non_null(heap);
    fm_pool_stats before = stats_of(pool);
    void *foreign[] = {on_stack, g_static_block, heap, (void *)(uintptr_t)4096};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        int reports = env->errors.count;
        fm_clear_error();
        fm_free(foreign[i]);
        assert_int_equal(fm_last_error(), FM_ERR_FOREIGN_POINTER);
        assert_int_equal(env->errors.count, reports + 1);
        assert_true(fm_test_contains(env->errors.message, "fm_free"));
    }
    fm_clear_error();
    int reports = env->errors.count;
    fm_free(NULL);
    assert_int_equal(fm_last_error(), FM_OK);
    assert_int_equal(env->errors.count, reports);
    fm_pool_stats after = stats_of(pool);
    fm_test_assert_pool_stats_same(&before, &after, 0);
    assert_int_equal(((long long *)heap)[0] * 0, 0); /* the heap block is still ours */
    free(heap);
    fm_pool_free(pool, item);
    fm_test_errors_reset(&env->errors);
    destroy_clean(env, pool);
}

/* ================================================================ threads */

typedef struct churner {
    atomic_bool stop;
    atomic_int rounds;
} churner;

/* Creates, grows, trims and destroys pools of every chunk size while the
 * main thread looks up its own pool's items. */
static void *churn_pools(void *arg) {
    churner *c = arg;
    size_t sizes[] = {4096, 8192, 65536, 0};
    while (!atomic_load(&c->stop)) {
        for (int k = 0; k < 4; k++) {
            fm_pool *p = fm_pool_create(&(fm_pool_desc){.name = "churn", .item_size = 72,
                                                        .chunk_bytes = sizes[k],
                                                        .sync = FM_SYNC_MUTEX});
            if (!p) abort();
            void *items[600];
            for (int i = 0; i < 600; i++) items[i] = fm_pool_alloc(p);
            for (int i = 0; i < 600; i++) {
                if (fm_pool_of(items[i]) != p) abort();
                fm_free(items[i]);
            }
            fm_pool_trim(p);
            fm_pool_destroy(p);
        }
        atomic_fetch_add(&c->rounds, 1);
    }
    return NULL;
}

static void test_pool_of_is_right_while_other_threads_grow_and_destroy_pools(void **state) {
    fm_test_env *env = *state;
    fm_pool *mine = fm_pool_create(&(fm_pool_desc){.name = "mine", .item_size = 40,
                                                   .chunk_bytes = 4096, .sync = FM_SYNC_MUTEX});
    assert_non_null(mine);
    enum { N = 2000 };
    void **items = malloc(N * sizeof *items);
    assert_non_null(items);
    for (size_t i = 0; i < N; i++) assert_non_null(items[i] = fm_pool_alloc(mine));
    churner c = {0};
    fm_test_thread t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(fm_test_thread_create(&t[i], churn_pools, &c), 0);
    int lookups = fm_test_under_valgrind() ? 20 : 400;
    for (int r = 0; r < lookups || atomic_load(&c.rounds) < 2; r++)
        for (size_t i = 0; i < N; i++) assert_ptr_equal(fm_pool_of(items[i]), mine);
    atomic_store(&c.stop, true);
    for (int i = 0; i < 2; i++) fm_test_thread_join(t[i], NULL);
    for (size_t i = 0; i < N; i++) fm_free(items[i]);
    assert_int_equal(stats_of(mine).live, 0);
    assert_int_equal(env->errors.count, 0);
    fm_pool_destroy(mine);
    free(items);
}

/* ============================================================ chunk_bytes */

/* Doom's door thinkers (about 80 bytes each), 24 of them: one 4 KiB chunk,
 * and the pool's own memory besides it is what pool.h says. */
static void test_pool_of_24_door_thinkers_lives_in_one_4_kib_chunk(void **state) {
    fm_test_env *env = *state;
    typedef struct door {
        void *prev, *next, *fn; /* the thinker */
        int type, sector_tag, topheight, speed, direction, wait, countdown;
        void *sector;
        char pad[12];
    } door;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "doors", .item_size = sizeof(door),
                                                       .item_align = alignof(door),
                                                       .chunk_bytes = 4096,
                                                       .initial_capacity = 24});
    fm_pool_stats s = stats_of(pool);
    assert_int_equal(s.chunk_bytes, 4096);
    assert_int_equal(s.chunk_count, 1);
    assert_true(s.items_per_chunk >= 24);
    assert_int_equal(fm_pool_get_desc(pool).chunk_bytes, 4096);
    void *doors[24];
    for (int i = 0; i < 24; i++) assert_non_null(doors[i] = fm_pool_alloc(pool));
    s = stats_of(pool);
    assert_int_equal(s.chunk_count, 1);
    assert_int_equal(s.grow_events, 0);
    /* pool.h's fixed cost: the pool object, its record array (8 records),
     * base arrays (8 records) and chunk table (16 entries) beside the chunk. */
    print_message("24 doors of %zu bytes: %llu bytes reserved (chunk 4096)\n", sizeof(door),
                  (unsigned long long)s.bytes_reserved);
    assert_true(s.bytes_reserved < 4096 + 4096);
    for (int i = 0; i < 24; i++) fm_free(doors[i]);
    destroy_clean(env, pool);
}

/* The rule: 0, or a power of two from 4 KiB to 1 GiB that holds at least
 * one item; the check says which part is broken and create refuses. */
static void test_pool_desc_check_and_create_refuse_a_bad_chunk_bytes(void **state) {
    fm_test_env *env = *state;
    const struct {
        size_t item_size, item_align, chunk_bytes;
        const char *why;
    } bad[] = {
        {16, 0, 1000, "power of two"},
        {16, 0, 6144, "power of two"},
        {16, 0, 2048, "power of two"},
        {16, 0, (size_t)1 << 31, "power of two"},
        {4096, 0, 4096, "too small"},
        {3000, 4096, 4096, "too small"},
        {5000, 0, 4096, "too small"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fm_pool_desc d = {.name = "bad_chunk", .item_size = bad[i].item_size,
                          .item_align = bad[i].item_align, .chunk_bytes = bad[i].chunk_bytes};
        char msg[128] = "";
        int reports = env->errors.count;
        assert_int_equal(fm_pool_desc_check(&d, msg, sizeof msg), FM_ERR_INVALID_ARG);
        assert_int_equal(env->errors.count, reports); /* the check reports nothing */
        fm_test_expect_contains(msg, bad[i].why);
        assert_null(fm_pool_create(&d));
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        fm_test_expect_contains(env->errors.message, "bad_chunk");
        fm_test_expect_contains(env->errors.message, bad[i].why);
    }
    const size_t good[][2] = {{16, 4096}, {4000, 4096}, {16, (size_t)1 << 30}, {1 << 20, 1 << 21}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        fm_pool_desc d = {.name = "good_chunk", .item_size = good[i][0], .chunk_bytes = good[i][1],
                          .growth = FM_GROWTH_FIXED, .initial_capacity = 1};
        assert_int_equal(fm_pool_desc_check(&d, NULL, 0), FM_OK);
    }
    fm_test_allocator_assert_clean(&env->alloc);
}

/* Small chunks under every policy: many chunks, growth, trim, handles, the
 * pool consistent throughout. */
static void test_pool_with_4_kib_chunks_works_under_every_policy(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < POLICIES; pi++) {
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "small", .item_size = 56,
                                                           .chunk_bytes = 4096,
                                                           .sync = policies[pi]});
        enum { N = 3000 };
        void **items = malloc(N * sizeof *items);
        fm_handle *hs = malloc(N * sizeof *hs);
        assert_non_null(items);
        assert_non_null(hs);
        for (size_t i = 0; i < N; i++) {
            assert_non_null(items[i] = fm_pool_alloc(pool));
            fm_test_fill(items[i], 56, (uint32_t)i);
            hs[i] = fm_pool_handle(pool, items[i]);
        }
        fm_pool_stats s = stats_of(pool);
        assert_true(s.chunk_count >= N / s.items_per_chunk);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t i = 0; i < N; i++) {
            assert_true(fm_test_check_fill(items[i], 56, (uint32_t)i));
            assert_ptr_equal(fm_pool_resolve(pool, hs[i]), items[i]);
            assert_ptr_equal(fm_pool_of(items[i]), pool);
        }
        for (size_t i = 0; i < N; i++) fm_free(items[i]);
        assert_true(fm_pool_trim(pool) > 0);
        for (size_t i = 0; i < N; i++) assert_null(fm_pool_resolve(pool, hs[i]));
        assert_int_equal(fm_pool_check(pool), FM_OK);
        assert_int_equal(env->errors.count, 0);
        free(items);
        free(hs);
        destroy_clean(env, pool);
    }
}

/* Cold small pools: a fresh pool's first chunk (64 KiB by default) is
 * resident at create, so filling it takes no page fault; a first chunk
 * above 64 KiB is touched as it is used. */
static void test_pool_first_chunk_of_a_fresh_small_pool_takes_no_page_fault(void **state) {
    fm_test_env *env = *state;
    if (fm_test_under_valgrind() || FM_TEST_TSAN) {
        print_message("[ did not apply ] page faults filling a fresh pool's first chunk: "
                      "%s\n", FM_TEST_TSAN ? "ThreadSanitizer's shadow of the items faults in "
                                             "on their first use"
                                           : "Valgrind's own memory faults in");
        skip();
    }
    if (!fm_test_page_faults_counted("page faults filling a fresh pool's first chunk")) return;
    if (!fm_test_populate_makes_pages_resident("making a fresh pool's first chunk resident"))
        return;
    const size_t chunks[] = {0, 4096, 65536, 131072};
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
        fm_pool *pool = fm_pool_create(&(fm_pool_desc){.name = "cold", .item_size = 120,
                                                       .chunk_bytes = chunks[k]});
        assert_non_null(pool);
        size_t n = (size_t)stats_of(pool).items_per_chunk;
        void **items = malloc(n * sizeof *items);
        assert_non_null(items);
        uint64_t before = fm_test_minor_faults();
        for (size_t i = 0; i < n; i++) {
            assert_non_null(items[i] = fm_pool_alloc(pool));
            memset(items[i], 0x3C, 120);
        }
        uint64_t faults = fm_test_minor_faults() - before;
        print_message("chunk_bytes %zu: %llu minor faults filling the first chunk (%zu items)\n",
                      chunks[k], (unsigned long long)faults, n);
        if (chunks[k] <= 65536) assert_int_equal(faults, 0);
        else assert_true(faults >= 16); /* 128 KiB: its pages come in as used */
        assert_int_equal(stats_of(pool).chunk_count, 1);
        for (size_t i = 0; i < n; i++) fm_free(items[i]);
        free(items);
        fm_pool_destroy(pool);
    }
    assert_int_equal(env->errors.count, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_pool_of_names_the_pool_of_every_address_in_its_chunks),
        T(test_pool_of_a_pointer_in_no_chunk_is_null_and_unreported),
        T(test_pool_of_trimmed_and_destroyed_chunks_is_null),
        T(test_pool_of_tells_apart_small_chunks_of_two_pools_in_one_granule),
        T(test_pool_of_names_the_owner_of_each_page_of_a_small_chunks_granule),
        T(test_fm_free_frees_into_the_owning_pool_under_every_policy),
        T(test_fm_free_of_a_dead_or_interior_pointer_is_reported_by_its_pool),
        T(test_fm_free_of_a_pointer_no_pool_holds_is_foreign_and_changes_nothing),
        T(test_pool_of_is_right_while_other_threads_grow_and_destroy_pools),
        T(test_pool_of_24_door_thinkers_lives_in_one_4_kib_chunk),
        T(test_pool_desc_check_and_create_refuse_a_bad_chunk_bytes),
        T(test_pool_with_4_kib_chunks_works_under_every_policy),
        T(test_pool_first_chunk_of_a_fresh_small_pool_takes_no_page_fault),
#undef T
    };
    fm_test_filter_from_env();
    return cmocka_run_group_tests_name("pool_of", tests, NULL, NULL);
}
