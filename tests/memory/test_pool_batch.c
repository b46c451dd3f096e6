/* tests/memory/test_pool_batch.c: fm_pool_alloc_n and fm_pool_free_n against
 * the contract in framemem/pool.h, under every sync policy.
 *
 * A batch must do what the same single calls in order would. alloc_n is
 * checked against a twin pool with the same history driven by fm_pool_alloc:
 * both must hand out the same slots (the location bits of their handles) in
 * the same order, with the same counters. free_n's runs (pool.c,
 * fm__free_run: a chunk's record kept in registers while consecutive items
 * are its own) are driven with items in allocation order, reversed,
 * interleaved between two chunks, mixed with the current chunk and shuffled,
 * with bad entries inside a run, at a run's start and at the batch's end;
 * afterwards the pool must serve exactly the freed slots again. */
#define _POSIX_C_SOURCE 200809L

#include "fm_test.h"

#include "framemem/framemem.h"

#include "fm_test_thread.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef FM_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* =================================================================== helpers */

#define stats_of fm_test_pool_stats
#define assert_stats_same fm_test_assert_pool_stats_same

/* As the library decides (pool.c): debug and sanitizer builds check owners. */
#if !defined(NDEBUG) || defined(FM__SANITIZED)
#define THREAD_CHECKS 1
#endif

static const fm_sync policies[] = {FM_SYNC_NONE, FM_SYNC_MUTEX, FM_SYNC_THREAD_CACHE,
                                   FM_SYNC_LOCKFREE};
#define N_POLICIES (sizeof policies / sizeof policies[0])

#define create_counted fm_test_pool_create_counted
#define destroy_clean fm_test_pool_destroy_clean
#define destroy_quiet fm_test_pool_destroy_quiet

static void *byte_offset(const void *p, size_t off) {
    return (void *)((uintptr_t)p + off);
}

static uint32_t per_chunk(size_t item_size) {
    fm_pool *probe = fm_pool_create(&(fm_pool_desc){.item_size = item_size});
    assert_non_null(probe);
    uint32_t per = (uint32_t)stats_of(probe).items_per_chunk;
    fm_pool_destroy(probe);
    return per;
}

/* The location bits of an item's handle (record and slot): equal for the
 * same slot of twin pools with the same history. */
static uint32_t where_of(const fm_pool *pool, const void *item) {
    fm_handle h = fm_pool_handle(pool, item);
    assert_false(fm_handle_is_null(h));
    return (uint32_t)h.bits;
}

#define shuffle fm_test_shuffle

/* cmocka-asserts that a[0, n) and b[0, n) hold the same pointers. */
static void assert_same_set(void *const *a, void *const *b, size_t n) {
    void **x = malloc((n + 1) * sizeof *x);
    void **y = malloc((n + 1) * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    memcpy(x, a, n * sizeof *x);
    memcpy(y, b, n * sizeof *y);
    qsort(x, n, sizeof *x, fm_test_cmp_ptr);
    qsort(y, n, sizeof *y, fm_test_cmp_ptr);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (x[i] != y[i]) bad = i;
    if (bad != n) print_error("sets differ at sorted entry %zu: %p vs %p\n", bad, x[bad], y[bad]);
    free(x);
    free(y);
    assert_int_equal(bad, n);
}

/* Every item: distinct, non-overlapping, aligned, live in the pool, and its
 * handle resolves to it. */
static void assert_items_valid(fm_pool *pool, void *const *items, size_t n) {
    fm_pool_stats s = stats_of(pool);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(items[i]);
        assert_true(fm_is_aligned(items[i], s.item_align));
        assert_true(fm_pool_owns(pool, items[i]));
        assert_ptr_equal((fm_pool_resolve)(pool, fm_pool_handle(pool, items[i])), items[i]);
    }
    fm_test_assert_no_overlap(items, n, s.item_size);
}

/* fm_pool_alloc_n that must return all n. */
static void alloc_all(fm_pool *pool, void **out, size_t n) {
    size_t got = fm_pool_alloc_n(pool, out, n);
    if (got != n) {
        print_error("fm_pool_alloc_n gave %zu of %zu: %s: %s\n", got, n,
                    fm_error_name(fm_last_error()), fm_last_error_message());
    }
    assert_int_equal(got, n);
}

static void alloc_singles(fm_pool *pool, void **out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        out[i] = fm_pool_alloc(pool);
        assert_non_null(out[i]);
    }
}

/* A FIXED pool of `chunks` whole chunks with every slot handed out (by
 * single allocs, in order) into *items (n = chunks * items_per_chunk). */
static fm_pool *full_fixed_pool(fm_test_env *env, const char *name, size_t item_size,
                                uint32_t chunks, fm_sync sync, void ***items, size_t *n) {
    *n = (size_t)per_chunk(item_size) * chunks;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = name, .item_size = item_size,
                                                       .growth = FM_GROWTH_FIXED,
                                                       .initial_capacity = (uint32_t)*n,
                                                       .sync = sync});
    assert_int_equal(stats_of(pool).capacity, *n);
    *items = calloc(*n, sizeof **items);
    assert_non_null(*items);
    alloc_singles(pool, *items, *n);
    return pool;
}

/* true when the error log names each of ptrs[0, n) in a report of a free,
 * in that order. */
static bool reported_in_order(const char *log, void *const *ptrs, size_t n) {
    const char *at = log;
    for (size_t i = 0; i < n; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "free(%p)", ptrs[i]);
        at = strstr(at, needle);
        if (!at) {
            print_error("no report of %s (in order) in:\n%s", needle, log);
            return false;
        }
        at += strlen(needle);
    }
    return true;
}

/* Debug builds fill a freed item with 0xDF, ASan builds poison it: a batch
 * free does both for every item, as a single free does. */
static void assert_freed_marked(const void *item, size_t size) {
#if defined(FM_TEST_ASAN)
    assert_true(__asan_address_is_poisoned(item));
    assert_true(__asan_address_is_poisoned((const char *)item + size - 1));
#elif !defined(NDEBUG)
    fm_test_allow_read(item, size);
    const unsigned char *b = item;
    for (size_t i = 0; i < size; i++) assert_int_equal(b[i], 0xDF);
#else
    (void)item, (void)size;
#endif
}

/* ============================================================= alloc_n */

/* n = 3 chunks + 7 items from a one-chunk pool: the batch crosses chunk
 * switches and two growths, and gives what n fm_pool_alloc calls give a twin
 * pool, slot for slot, with the same counters. */
static void test_pool_alloc_n_spans_chunks_and_growth_like_single_allocs_under_every_policy(
    void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        /* Names of one length: the pool's own bytes (its name included) match. */
        fm_pool_desc d = {.name = "batched", .item_size = 48, .sync = policies[pi]};
        fm_pool *batch = create_counted(env, d);
        d.name = "singles";
        fm_pool *single = create_counted(env, d);
        fm_pool_stats start = stats_of(batch);
        size_t n = (size_t)start.items_per_chunk * 3 + 7;
        void **got = calloc(n, sizeof *got);
        void **one = calloc(n, sizeof *one);
        assert_non_null(got);
        assert_non_null(one);
        fm_clear_error();

        alloc_all(batch, got, n);
        alloc_singles(single, one, n);

        assert_int_equal(env->errors.count, 0);
        assert_int_equal(fm_last_error(), FM_OK);
        assert_items_valid(batch, got, n);
        uintptr_t in_chunk = (uintptr_t)start.chunk_bytes - 1;
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(where_of(batch, got[i]), where_of(single, one[i]));
            assert_int_equal((uintptr_t)got[i] & in_chunk, (uintptr_t)one[i] & in_chunk);
        }
        fm_pool_stats a = stats_of(batch), b = stats_of(single);
        assert_int_equal(a.live, n);
        assert_int_equal(a.total_allocs, n);
        assert_int_equal(a.failed_allocs, 0);
        assert_true(a.capacity >= n && a.capacity > start.capacity);
        assert_true(a.grow_events >= 2);
        assert_int_equal(a.live, b.live);
        assert_int_equal(a.total_allocs, b.total_allocs);
        assert_int_equal(a.peak_live, b.peak_live);
        assert_int_equal(a.capacity, b.capacity);
        assert_int_equal(a.chunk_count, b.chunk_count);
        assert_int_equal(a.grow_events, b.grow_events);
        assert_int_equal(a.bytes_reserved, b.bytes_reserved);
        /* The items hold their whole contents. */
        for (size_t i = 0; i < n; i++) fm_test_fill(got[i], 48, (uint32_t)i + 1);
        for (size_t i = 0; i < n; i++) assert_true(fm_test_check_fill(got[i], 48, (uint32_t)i + 1));
        assert_int_equal(fm_pool_check(batch), FM_OK);
        assert_int_equal(fm_pool_check(single), FM_OK);

        fm_pool_free_n(batch, got, n);
        fm_pool_free_n(single, one, n);
        free(got);
        free(one);
        destroy_quiet(env, batch);
        destroy_quiet(env, single);
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

/* Twin pools with the same history: the batch pool allocates with
 * fm_pool_alloc_n, the single pool with fm_pool_alloc, and frees go to both
 * alike (the library's single free, which parks a slot of another chunk). */
typedef struct twins {
    fm_pool *batch, *single;
    void **b, **s; /* item i of each pool */
    size_t count;
} twins;

/* Twin pools (the same desc) with room for cap items each. */
static twins twins_create(fm_test_env *env, size_t item_size, fm_sync sync, size_t cap) {
    fm_pool_desc d = {.name = "batch", .item_size = item_size, .sync = sync};
    twins t = {.batch = create_counted(env, d)};
    d.name = "single";
    t.single = create_counted(env, d);
    t.b = calloc(cap, sizeof *t.b);
    t.s = calloc(cap, sizeof *t.s);
    assert_non_null(t.b);
    assert_non_null(t.s);
    return t;
}

/* Frees every item of both with one batch each, destroys both. */
static void twins_destroy(fm_test_env *env, twins *t) {
    fm_pool_free_n(t->batch, t->b, t->count);
    fm_pool_free_n(t->single, t->s, t->count);
    free(t->b);
    free(t->s);
    destroy_quiet(env, t->batch);
    destroy_quiet(env, t->single);
    fm_test_allocator_assert_clean(&env->alloc);
}

/* k more items in each; the same slots in the same order. */
static void twins_alloc(twins *t, size_t k) {
    alloc_all(t->batch, t->b + t->count, k);
    alloc_singles(t->single, t->s + t->count, k);
    for (size_t i = t->count; i < t->count + k; i++)
        assert_int_equal(where_of(t->batch, t->b[i]), where_of(t->single, t->s[i]));
    t->count += k;
}

/* Frees item i of both; the last one moves into its place. */
static void *twins_free(twins *t, size_t i) {
    void *was = t->b[i];
    (fm_pool_free)(t->batch, t->b[i]);
    (fm_pool_free)(t->single, t->s[i]);
    t->count--;
    t->b[i] = t->b[t->count];
    t->s[i] = t->s[t->count];
    return was;
}

static size_t twins_index(const twins *t, const void *b_item) {
    for (size_t i = 0; i < t->count; i++)
        if (t->b[i] == b_item) return i;
    fail_msg("item %p is not in the twins", b_item);
    return 0;
}

static void twins_same_stats(const twins *t) {
    fm_pool_stats a = stats_of(t->batch), b = stats_of(t->single);
    assert_int_equal(a.live, t->count);
    assert_int_equal(a.live, b.live);
    assert_int_equal(a.total_allocs, b.total_allocs);
    assert_int_equal(a.total_frees, b.total_frees);
    assert_int_equal(a.peak_live, b.peak_live);
    assert_int_equal(a.capacity, b.capacity);
    assert_int_equal(a.chunk_count, b.chunk_count);
    assert_int_equal(fm_pool_check(t->batch), FM_OK);
    assert_int_equal(fm_pool_check(t->single), FM_OK);
}

/* After frees, alloc_n takes slots back exactly as single allocs would: the
 * next slot a free left first (of the current chunk, or of another chunk,
 * parked), then the current chunk's stack, then other chunks. */
static void test_pool_alloc_n_after_frees_serves_slots_in_single_alloc_order(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        uint32_t per = per_chunk(64);
        twins t = twins_create(env, 64, policies[pi], (size_t)per * 8);
        twins_alloc(&t, (size_t)per * 2 + per / 2); /* current chunk: the third */
        uintptr_t mask = ~(uintptr_t)(stats_of(t.batch).chunk_bytes - 1);
        uintptr_t cur = (uintptr_t)t.b[t.count - 1] & mask;
        uintptr_t first = (uintptr_t)t.b[0] & mask;
        void *freed[16];

        /* The current chunk's stack: 12 frees, then one batch of 12. */
        for (size_t k = 0; k < 12; k++) {
            size_t i = t.count - 1 - 3 * k;
            assert_true(((uintptr_t)t.b[i] & mask) == cur);
            freed[k] = twins_free(&t, i);
        }
        size_t at = t.count;
        twins_alloc(&t, 12);
        assert_same_set(freed, t.b + at, 12);
        twins_same_stats(&t);

        /* A pending next slot (the current chunk's) comes first, then fresh
         * slots. */
        void *x = twins_free(&t, t.count - 5);
        at = t.count;
        twins_alloc(&t, 5);
        assert_ptr_equal(t.b[at], x);
        twins_same_stats(&t);

        /* A parked slot of another chunk comes first. */
        void *y = t.b[7];
        assert_true(((uintptr_t)y & mask) == first);
        twins_free(&t, 7);
        at = t.count;
        twins_alloc(&t, 4);
        assert_ptr_equal(t.b[at], y);
        twins_same_stats(&t);

        /* Two frees in the current chunk, then one elsewhere (parked): the
         * parked one first, then the stack, newest first. */
        size_t i1 = t.count - 2, i2 = t.count - 9;
        void *x1 = t.b[i1], *x2 = t.b[i2];
        twins_free(&t, i1);
        twins_free(&t, i2);
        void *y2 = twins_free(&t, (size_t)per + 3);
        assert_true(((uintptr_t)y2 & mask) != cur);
        at = t.count;
        twins_alloc(&t, 3);
        assert_ptr_equal(t.b[at], y2);
        assert_ptr_equal(t.b[at + 1], x2);
        assert_ptr_equal(t.b[at + 2], x1);
        twins_same_stats(&t);

        /* Frees filed on other chunks' stacks (a batch), then a batch longer
         * than the current chunk's room: it switches chunks mid-way. */
        void *other[16], *other_s[16];
        size_t n_other = 0;
        for (size_t i = 0; i < t.count && n_other < 16; i += 37) {
            if (((uintptr_t)t.b[i] & mask) == cur) continue;
            other[n_other] = t.b[i];
            other_s[n_other] = t.s[i];
            n_other++;
        }
        for (size_t k = 0; k < n_other; k++) {
            size_t i = twins_index(&t, other[k]);
            t.count--;
            t.b[i] = t.b[t.count];
            t.s[i] = t.s[t.count];
        }
        fm_pool_free_n(t.batch, other, n_other);
        fm_pool_free_n(t.single, other_s, n_other);
        twins_same_stats(&t);
        fm_pool_stats before = stats_of(t.batch);
        size_t room = (size_t)(before.capacity - before.live);
        twins_alloc(&t, room + (size_t)per / 2); /* every free slot, then growth */
        twins_same_stats(&t);
        assert_items_valid(t.batch, t.b, t.count);
        assert_int_equal(env->errors.count, 0);

        twins_destroy(env, &t);
    }
}

/* A batch that pops a chunk's stack past the old peak raises peak_live by
 * the excess only: headroom (peak - live) smaller than the pop. Chunk 0 gets
 * 30 free slots, the current chunk's last 20 fresh ones are taken (the
 * headroom falls to 10), one alloc moves to chunk 0, and the batch of 29
 * goes 20 past the peak. */
static void test_pool_alloc_n_past_the_peak_raises_peak_live_by_the_excess(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        uint32_t per = per_chunk(64);
        twins t = twins_create(env, 64, policies[pi], (size_t)per * 3);
        twins_alloc(&t, (size_t)per * 2 - 20);
        for (size_t k = 0; k < 30; k++) twins_free(&t, 40 + k * 7);
        twins_alloc(&t, 20);
        twins_alloc(&t, 1);
        twins_same_stats(&t);
        twins_alloc(&t, 29);
        twins_same_stats(&t);
        if (policies[pi] == FM_SYNC_NONE || policies[pi] == FM_SYNC_MUTEX) {
            /* Caches of the other policies count as used (see pool.h). */
            fm_pool_stats s = stats_of(t.batch);
            assert_int_equal(s.live, (uint64_t)per * 2);
            assert_int_equal(s.peak_live, (uint64_t)per * 2);
            assert_int_equal(s.capacity, (uint64_t)per * 2);
        }
        assert_items_valid(t.batch, t.b, t.count);
        twins_destroy(env, &t);
    }
}

/* A FIXED pool asked for 5 more than it holds: every slot, then one report
 * and one failed alloc; the pool stays consistent and serves again. */
static void test_pool_alloc_n_on_a_full_fixed_pool_returns_what_fits_and_reports_once(
    void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        uint32_t per = per_chunk(48);
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "fixed", .item_size = 48,
                                                           .growth = FM_GROWTH_FIXED,
                                                           .initial_capacity = per + 5,
                                                           .sync = policies[pi]});
        size_t c = (size_t)stats_of(pool).capacity;
        assert_true(c >= (size_t)per + 5);
        void **out = calloc(c + 5, sizeof *out);
        assert_non_null(out);
        fm_clear_error();
        fm_test_errors_reset(&env->errors);

        assert_int_equal(fm_pool_alloc_n(pool, out, c + 5), c);

        assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(env->errors.by_code[FM_ERR_POOL_FULL], 1);
        assert_true(fm_test_contains(env->errors.message, "fixed"));
        fm_pool_stats s = stats_of(pool);
        assert_int_equal(s.live, c);
        assert_int_equal(s.total_allocs, c);
        assert_int_equal(s.failed_allocs, 1);
        assert_int_equal(s.capacity, c);
        assert_int_equal(s.grow_events, 0);
        assert_items_valid(pool, out, c);
        assert_int_equal(fm_pool_check(pool), FM_OK);

        /* Free 7 (both chunks), ask for 10: the 7 come back, one more report. */
        void *freed[7];
        for (size_t k = 0; k < 7; k++) {
            size_t i = k * (c / 7);
            freed[k] = out[i];
            out[i] = out[c - 1 - k];
            out[c - 1 - k] = freed[k];
        }
        fm_pool_free_n(pool, out + c - 7, 7);
        assert_int_equal(stats_of(pool).live, c - 7);
        assert_int_equal(fm_pool_alloc_n(pool, out + c - 7, 10), 7);
        assert_same_set(freed, out + c - 7, 7);
        assert_int_equal(env->errors.count, 2);
        assert_int_equal(env->errors.by_code[FM_ERR_POOL_FULL], 2);
        s = stats_of(pool);
        assert_int_equal(s.live, c);
        assert_int_equal(s.failed_allocs, 2);
        assert_int_equal(fm_pool_check(pool), FM_OK);

        fm_pool_free_n(pool, out, c);
        free(out);
        destroy_clean(env, pool);
    }
}

/* Growth stops at max_capacity: the batch gets exactly up to it. */
static void test_pool_alloc_n_at_max_capacity_returns_what_fits_and_reports_once(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        uint32_t max = per_chunk(48) * 2 + 3;
        fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "capped", .item_size = 48,
                                                           .max_capacity = max,
                                                           .sync = policies[pi]});
        void **out = calloc((size_t)max + 5, sizeof *out);
        assert_non_null(out);
        fm_test_errors_reset(&env->errors);
        fm_clear_error();

        assert_int_equal(fm_pool_alloc_n(pool, out, (size_t)max + 5), max);

        assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(env->errors.by_code[FM_ERR_POOL_FULL], 1);
        fm_pool_stats s = stats_of(pool);
        assert_int_equal(s.live, max);
        assert_int_equal(s.capacity, max);
        assert_int_equal(s.failed_allocs, 1);
        assert_items_valid(pool, out, max);
        assert_int_equal(fm_pool_check(pool), FM_OK);

        /* Exactly what is free: no report. One more: a report. */
        fm_pool_free_n(pool, out + 10, 4);
        assert_int_equal(fm_pool_alloc_n(pool, out + 10, 4), 4);
        assert_int_equal(env->errors.count, 1);
        void *extra = NULL;
        assert_int_equal(fm_pool_alloc_n(pool, &extra, 1), 0);
        assert_null(extra);
        assert_int_equal(env->errors.count, 2);
        assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
        assert_int_equal(stats_of(pool).failed_allocs, 2);
        assert_items_valid(pool, out, max);

        fm_pool_free_n(pool, out, max);
        free(out);
        destroy_clean(env, pool);
    }
}

/* Growth refused by the backing allocator (every call, then each call of a
 * growth in turn): the batch returns the free slots there were, one
 * FM_ERR_OUT_OF_MEMORY, one failed alloc, and the pool and the allocator
 * are as before. */
static void test_pool_alloc_n_with_growth_refused_returns_what_fits_and_leaks_nothing(
    void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "refused", .item_size = 48, .sync = policies[pi]});
        size_t cap = (size_t)stats_of(pool).capacity;
        size_t max_items = cap * 16;
        void **items = calloc(max_items, sizeof *items);
        assert_non_null(items);
        alloc_all(pool, items, cap - 3);
        size_t count = cap - 3;

        fm_pool_stats before = stats_of(pool);
        size_t bytes_before = env->alloc.live_bytes;
        fm_test_errors_reset(&env->errors);
        fm_test_allocator_fail_from(&env->alloc, 1);
        assert_int_equal(fm_pool_alloc_n(pool, items + count, 10), 3);
        fm_test_allocator_recover(&env->alloc);
        count += 3;
        assert_int_equal(fm_last_error(), FM_ERR_OUT_OF_MEMORY);
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(env->errors.by_code[FM_ERR_OUT_OF_MEMORY], 1);
        assert_true(env->alloc.failed_calls > 0);
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.live, count);
        assert_int_equal(after.capacity, before.capacity);
        assert_int_equal(after.chunk_count, before.chunk_count);
        assert_int_equal(after.bytes_reserved, before.bytes_reserved);
        assert_int_equal(after.grow_events, before.grow_events);
        assert_int_equal(after.failed_allocs, before.failed_allocs + 1);
        assert_int_equal(after.total_allocs, before.total_allocs + 3);
        assert_int_equal(env->alloc.live_bytes, bytes_before);
        assert_int_equal(fm_pool_check(pool), FM_OK);

        /* One fault at each backing call a growth makes, with two free
         * slots each time: 2 items, then the fault; at last the growth. */
        bool grown = false;
        for (uint64_t n = 1; n <= 64 && !grown; n++) {
            count -= 2;
            fm_pool_free_n(pool, items + count, 2);
            before = stats_of(pool);
            bytes_before = env->alloc.live_bytes;
            fm_test_errors_reset(&env->errors);
            env->alloc.failed_calls = 0;
            fm_test_allocator_fail_nth(&env->alloc, n);
            size_t got = fm_pool_alloc_n(pool, items + count, 6);
            bool injected = env->alloc.failed_calls > 0;
            fm_test_allocator_recover(&env->alloc);
            after = stats_of(pool);
            count += got;
            if (got == 6) {
                if (!injected) assert_true(n > 1);
                assert_true(after.capacity > before.capacity);
                assert_int_equal(after.failed_allocs, before.failed_allocs);
                grown = true;
            } else {
                assert_true(injected);
                assert_int_equal(got, 2);
                assert_int_equal(env->errors.count, 1);
                assert_int_equal(env->errors.by_code[FM_ERR_OUT_OF_MEMORY], 1);
                assert_int_equal(after.capacity, before.capacity);
                assert_int_equal(after.chunk_count, before.chunk_count);
                assert_int_equal(after.bytes_reserved, before.bytes_reserved);
                assert_int_equal(after.failed_allocs, before.failed_allocs + 1);
                assert_int_equal(env->alloc.live_bytes, bytes_before);
            }
            assert_int_equal(after.live, count);
            assert_int_equal(fm_pool_check(pool), FM_OK);
        }
        assert_true(grown);
        assert_items_valid(pool, items, count);
        fm_pool_free_n(pool, items, count);
        free(items);
        env->alloc.failed_calls = 0;
        destroy_clean(env, pool);
    }
}

/* Under FM_TRACK_SITES (Debug builds) fm_pool_alloc_n records the caller's
 * file:line for every item, as the leak report on destroy shows. */
static void test_pool_alloc_n_records_the_call_site_of_every_item(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "sites", .item_size = 32, .sync = policies[pi]});
        void *items[3];
        int line = __LINE__ + 1;
        assert_int_equal(fm_pool_alloc_n(pool, items, 3), 3);
        fm_test_errors_reset(&env->errors);
        fm_pool_destroy(pool);
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(env->errors.last, FM_ERR_LEAK);
        assert_true(fm_test_contains(env->errors.message, "3 live"));
#ifdef FM_TRACK_SITES
        char site[64];
        snprintf(site, sizeof site, "3 from %s:%d", __FILE__, line);
        if (!fm_test_contains(env->errors.message, site)) {
            print_error("leak report lacks '%s': %s\n", site, env->errors.message);
            fail();
        }
#else
        (void)line;
#endif
        fm_test_allocator_assert_clean(&env->alloc);
    }
}

/* ============================================================== free_n */

enum order_kind {
    ORDER_ALLOC,        /* long runs, chunk after chunk, each in allocation order */
    ORDER_REVERSE,      /* long runs, each walked backwards */
    ORDER_INTERLEAVED,  /* chunks 0 and 1 alternate: runs of one item */
    ORDER_WITH_CURRENT, /* another chunk and the current one in groups of 5 and 2 */
    ORDER_SHUFFLED,     /* runs of random length */
    ORDER_KINDS
};

enum place_kind {
    PLACE_NOWHERE,    /* no bad entries */
    PLACE_INSIDE_RUN, /* each in the middle of a long run of one chunk */
    PLACE_RUN_START,  /* each right before the first item of a run */
    PLACE_LAST,       /* all at the end; `rotate` picks which is last */
};

/* The bad entries of a batch, in the order they are placed. */
enum bad_kind {
    BAD_NULL,        /* skipped, not reported */
    BAD_DUP,         /* an item freed earlier in the same batch */
    BAD_PARKED,      /* freed before the batch (parked in hot's next slot) */
    BAD_INTERIOR,    /* points inside an item of the batch */
    BAD_OTHER_POOL,  /* a live item of another pool */
    BAD_CURRENT,     /* freed before the batch, of the current chunk */
    BAD_STACK,       /* a stack address */
    BAD_KINDS
};

static const fm_error bad_code[BAD_KINDS] = {
    [BAD_NULL] = FM_OK,
    [BAD_DUP] = FM_ERR_DOUBLE_FREE,
    [BAD_PARKED] = FM_ERR_DOUBLE_FREE,
    [BAD_INTERIOR] = FM_ERR_INTERIOR_POINTER,
    [BAD_OTHER_POOL] = FM_ERR_FOREIGN_POINTER,
    [BAD_CURRENT] = FM_ERR_DOUBLE_FREE,
    [BAD_STACK] = FM_ERR_FOREIGN_POINTER,
};

enum { RUN_ITEM_SIZE = 128, RUN_CHUNKS = 4, N_KEPT = 4 };

typedef struct run_case {
    fm_test_env *env;
    fm_sync sync;
    enum order_kind order;
    enum place_kind place;
    uint32_t rotate;
    uint32_t per;
    uint32_t cur; /* the chunk of the last item allocated (NONE, MUTEX: current) */
    uint32_t mix; /* another chunk, mixed with it */
} run_case;

/* Sorts items[0, n) chunk by chunk, in the order each chunk's first item
 * came, each chunk's items in allocation order (THREAD_CACHE and LOCKFREE
 * hand out slots in batches, so chunks can overlap in allocation order);
 * every chunk must hold per of them. Returns the chunk of the item allocated
 * last. */
static uint32_t group_by_chunk(void **items, size_t n, uintptr_t mask, uint32_t per) {
    uintptr_t bases[RUN_CHUNKS];
    uint32_t counts[RUN_CHUNKS] = {0}, n_bases = 0, last = 0;
    void **grouped = calloc(n, sizeof *grouped);
    assert_non_null(grouped);
    for (size_t i = 0; i < n; i++) {
        uintptr_t base = (uintptr_t)items[i] & mask;
        uint32_t c = 0;
        while (c < n_bases && bases[c] != base) c++;
        if (c == n_bases) {
            assert_true(n_bases < RUN_CHUNKS);
            bases[n_bases++] = base;
        }
        assert_true(counts[c] < per);
        grouped[(size_t)c * per + counts[c]++] = items[i];
        last = c;
    }
    assert_int_equal(n_bases, RUN_CHUNKS);
    memcpy(items, grouped, n * sizeof *items);
    free(grouped);
    return last;
}

/* Appends the items of chunk ch (grouped, see above) that are still free to
 * take, from index *next on. */
static bool take_from_chunk(void **good, size_t *n_good, void **items, const uint8_t *skip,
                            uint32_t per, uint32_t ch, uint32_t *next) {
    while (*next < per) {
        size_t i = (size_t)ch * per + (*next)++;
        if (!skip[i]) {
            good[(*n_good)++] = items[i];
            return true;
        }
    }
    return false;
}

/* The good items of a batch in the case's order. */
static size_t order_good(const run_case *rc, void **good, void **items, const uint8_t *skip) {
    uint32_t per = rc->per;
    size_t total = (size_t)per * RUN_CHUNKS, n = 0;
    uint32_t next[RUN_CHUNKS] = {0};
    switch (rc->order) {
    case ORDER_ALLOC:
    case ORDER_REVERSE:
    case ORDER_SHUFFLED:
        for (size_t i = 0; i < total; i++)
            if (!skip[i]) good[n++] = items[i];
        if (rc->order == ORDER_REVERSE) {
            for (size_t i = 0; i < n / 2; i++) {
                void *t = good[i];
                good[i] = good[n - 1 - i];
                good[n - 1 - i] = t;
            }
        }
        if (rc->order == ORDER_SHUFFLED)
            shuffle(good, n, 0x5EED0000u + rc->rotate * 7u + (uint32_t)rc->place);
        break;
    case ORDER_INTERLEAVED: {
        bool more = true;
        while (more) {
            more = take_from_chunk(good, &n, items, skip, per, 0, &next[0]);
            more |= take_from_chunk(good, &n, items, skip, per, 1, &next[1]);
        }
        for (uint32_t ch = 2; ch < RUN_CHUNKS; ch++)
            while (take_from_chunk(good, &n, items, skip, per, ch, &next[ch])) {
            }
        break;
    }
    case ORDER_WITH_CURRENT: {
        bool more = true;
        while (more) {
            more = false;
            for (int k = 0; k < 5; k++)
                more |= take_from_chunk(good, &n, items, skip, per, rc->mix, &next[rc->mix]);
            for (int k = 0; k < 2; k++)
                more |= take_from_chunk(good, &n, items, skip, per, rc->cur, &next[rc->cur]);
        }
        for (uint32_t ch = 0; ch < RUN_CHUNKS; ch++)
            while (take_from_chunk(good, &n, items, skip, per, ch, &next[ch])) {
            }
        break;
    }
    default:
        fail();
    }
    return n;
}

/* Where each bad entry goes: before good[pos[k]] (pos == n_good: the end). */
static void place_bad(const run_case *rc, void *const *good, size_t n_good, uintptr_t mask,
                      size_t pos[BAD_KINDS]) {
    /* Runs: maximal stretches of good items of one chunk. */
    size_t starts[BAD_KINDS], mids[BAD_KINDS], n_starts = 0, n_mids = 0;
    for (size_t i = 0; i < n_good;) {
        size_t j = i + 1;
        while (j < n_good && ((uintptr_t)good[j] & mask) == ((uintptr_t)good[i] & mask)) j++;
        if (n_starts < BAD_KINDS) starts[n_starts++] = i;
        if (j - i >= 6 && n_mids < BAD_KINDS) mids[n_mids++] = i + (j - i) / 2;
        i = j;
    }
    for (size_t k = 0; k < BAD_KINDS; k++) {
        switch (rc->place) {
        case PLACE_INSIDE_RUN:
            assert_true(n_mids > 0);
            pos[k] = mids[k % n_mids];
            break;
        case PLACE_RUN_START:
            assert_true(n_starts > 0);
            pos[k] = starts[k % n_starts];
            break;
        default:
            pos[k] = n_good;
            break;
        }
    }
}

/* One batch: a FIXED pool of RUN_CHUNKS full chunks, a few items kept, two
 * freed before (one parked, one in the current chunk), the rest freed by one
 * fm_pool_free_n in the case's order with the bad entries where the case
 * puts them. Then: each bad entry reported once with its code, in batch
 * order; every other item freed; counters exact; the pool consistent; and
 * exactly the free slots served again. */
static void run_free_n_case(const run_case *given) {
    run_case case_copy = *given, *rc = &case_copy;
    fm_test_env *env = rc->env;
    uint32_t per = rc->per;
    void **items;
    size_t total;
    fm_pool *pool =
        full_fixed_pool(env, "runs", RUN_ITEM_SIZE, RUN_CHUNKS, rc->sync, &items, &total);
    assert_int_equal(total, (size_t)per * RUN_CHUNKS);
    fm_pool *other =
        create_counted(env, (fm_pool_desc){.name = "other", .item_size = RUN_ITEM_SIZE});
    void *other_item = fm_pool_alloc(other);
    assert_non_null(other_item);
    fm_test_fill(other_item, RUN_ITEM_SIZE, 99);
    uintptr_t mask = ~(uintptr_t)(stats_of(pool).chunk_bytes - 1);
    void **good = calloc(total, sizeof *good);
    void **batch = calloc(total + BAD_KINDS, sizeof *batch);
    void **copy = calloc(total + BAD_KINDS, sizeof *copy);
    uint8_t *skip = calloc(total, 1);
    assert_true(good && batch && copy && skip);
    rc->cur = group_by_chunk(items, total, mask, per);
    rc->mix = rc->cur == 1 ? 0 : 1;
    for (size_t i = 0; i < total; i++) fm_test_fill(items[i], RUN_ITEM_SIZE, (uint32_t)i + 1);

    size_t kept_idx[N_KEPT];
    for (size_t k = 0; k < N_KEPT; k++) {
        kept_idx[k] = k * per + 7 + 2 * k;
        skip[kept_idx[k]] = 1;
    }
    /* The current chunk's first, then the parked one (another chunk's), so
     * the batch starts with a slot parked. */
    size_t cur_freed = (size_t)rc->cur * per + 5, parked = (size_t)rc->mix * per + 5;
    skip[cur_freed] = skip[parked] = 1;
    (fm_pool_free)(pool, items[cur_freed]);
    (fm_pool_free)(pool, items[parked]);

    size_t n_good = order_good(rc, good, items, skip);
    assert_int_equal(n_good, total - N_KEPT - 2);
    long long on_stack[4] = {0};
    size_t pos[BAD_KINDS];
    void *bad[BAD_KINDS];
    size_t n_bad = rc->place == PLACE_NOWHERE ? 0 : BAD_KINDS;
    place_bad(rc, good, n_good, mask, pos);
    for (size_t k = 0; k < BAD_KINDS; k++) {
        /* The dup and the interior pointer go with their neighbours: the
         * item before (a run's own chunk) or at a run's start the next one. */
        size_t before = pos[k] > 0 ? pos[k] - 1 : 0;
        size_t near = rc->place == PLACE_RUN_START && pos[k] < n_good ? pos[k] : before;
        switch ((enum bad_kind)k) {
        case BAD_NULL: bad[k] = NULL; break;
        case BAD_DUP: bad[k] = good[before]; break;
        case BAD_PARKED: bad[k] = items[parked]; break;
        case BAD_INTERIOR: bad[k] = byte_offset(good[near], 8); break;
        case BAD_OTHER_POOL: bad[k] = other_item; break;
        case BAD_CURRENT: bad[k] = items[cur_freed]; break;
        default: bad[k] = on_stack; break;
        }
    }
    /* The dup needs its first free before it: never at the batch's start. */
    if (n_bad) assert_true(pos[BAD_DUP] > 0);

    /* Merge: bad entries before good[pos], in kind order (rotated at the end). */
    size_t n = 0;
    void *reported[BAD_KINDS];
    size_t n_reported = 0;
    for (size_t g = 0; g <= n_good; g++) {
        for (size_t j = 0; j < n_bad; j++) {
            size_t k = (j + rc->rotate) % BAD_KINDS;
            if (pos[k] != g) continue;
            batch[n++] = bad[k];
            if (bad[k]) reported[n_reported++] = bad[k];
        }
        if (g < n_good) batch[n++] = good[g];
    }
    assert_int_equal(n, n_good + n_bad);
    memcpy(copy, batch, n * sizeof *copy);

    fm_pool_stats before = stats_of(pool);
    fm_test_errors_reset(&env->errors);
    fm_clear_error();

    fm_pool_free_n(pool, batch, n);

    assert_memory_equal(copy, batch, n * sizeof *copy);
    int by_code[FM_ERROR_COUNT] = {0};
    for (size_t k = 0; k < n_bad; k++)
        if (bad[k]) by_code[bad_code[k]]++;
    assert_int_equal(env->errors.count, (int)n_reported);
    for (int code = 0; code < FM_ERROR_COUNT; code++)
        assert_int_equal(env->errors.by_code[code], by_code[code]);
    assert_true(reported_in_order(env->errors.log, reported, n_reported));
    fm_pool_stats after = stats_of(pool);
    assert_int_equal(after.live, before.live - n_good);
    assert_int_equal(after.total_frees, before.total_frees + n_good);
    assert_int_equal(after.misuse_count, before.misuse_count + n_reported);
    assert_int_equal(after.total_allocs, before.total_allocs);
    assert_int_equal(after.failed_allocs, before.failed_allocs);
    assert_int_equal(after.peak_live, before.peak_live);
    assert_int_equal(after.capacity, before.capacity);
    assert_int_equal(after.chunk_count, before.chunk_count);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    for (size_t i = 0; i < n_good; i++) {
        assert_false(fm_pool_owns(pool, good[i]));
        assert_freed_marked(good[i], RUN_ITEM_SIZE);
    }
    for (size_t k = 0; k < N_KEPT; k++) {
        assert_true(fm_pool_owns(pool, items[kept_idx[k]]));
        uint32_t seed = (uint32_t)kept_idx[k] + 1;
        assert_true(fm_test_check_fill(items[kept_idx[k]], RUN_ITEM_SIZE, seed));
    }
    assert_true(fm_pool_owns(other, other_item));
    assert_true(fm_test_check_fill(other_item, RUN_ITEM_SIZE, 99));

    /* Exactly the free slots come back, each once, and then the pool is full. */
    good[n_good] = items[parked];
    good[n_good + 1] = items[cur_freed];
    size_t n_free = n_good + 2;
    alloc_all(pool, batch, n_free);
    assert_same_set(good, batch, n_free);
    fm_clear_error();
    assert_null(fm_pool_alloc(pool));
    assert_int_equal(fm_last_error(), FM_ERR_POOL_FULL);
    assert_int_equal(fm_pool_check(pool), FM_OK);
    assert_int_equal(stats_of(pool).live, total);

    for (size_t k = 0; k < N_KEPT; k++) batch[n_free + k] = items[kept_idx[k]];
    fm_pool_free_n(pool, batch, n_free + N_KEPT);
    fm_test_errors_reset(&env->errors);
    destroy_quiet(env, pool);
    fm_pool_free(other, other_item);
    destroy_clean(env, other);
    free(items);
    free(good);
    free(batch);
    free(copy);
    free(skip);
}

static const char *const order_names[ORDER_KINDS] = {"alloc", "reverse", "interleaved",
                                                     "with_current", "shuffled"};

static void run_free_n_cases(fm_test_env *env, enum place_kind place, uint32_t rotations) {
    run_case rc = {.env = env, .place = place, .per = per_chunk(RUN_ITEM_SIZE)};
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        rc.sync = policies[pi];
        for (int o = 0; o < ORDER_KINDS; o++) {
            rc.order = (enum order_kind)o;
            for (uint32_t r = 0; r < rotations; r++) {
                rc.rotate = r;
                print_message("%s, %s order, placement %d, rotation %u\n", fm_sync_name(rc.sync),
                              order_names[o], (int)place, (unsigned)r);
                run_free_n_case(&rc);
            }
        }
    }
}

/* Long runs, reversed runs, runs of one item, current-chunk items mixed in,
 * shuffled: every item freed once, nothing reported. */
static void test_pool_free_n_in_every_order_frees_each_item_once(void **state) {
    run_free_n_cases(*state, PLACE_NOWHERE, 1);
}

/* A double free (in the batch and before it, in a run's chunk and in the
 * current chunk), an interior and two foreign pointers and a NULL in the
 * middle of a long run of one chunk. */
static void test_pool_free_n_reports_bad_entries_inside_a_run(void **state) {
    run_free_n_cases(*state, PLACE_INSIDE_RUN, 1);
}

/* The same bad entries each right before the first item of a run (the first
 * at the batch's very start). */
static void test_pool_free_n_reports_bad_entries_at_the_start_of_a_run(void **state) {
    run_free_n_cases(*state, PLACE_RUN_START, 1);
}

/* The same bad entries at the end of the batch, each kind last once. */
static void test_pool_free_n_reports_bad_entries_at_the_end_of_the_batch(void **state) {
    run_free_n_cases(*state, PLACE_LAST, BAD_KINDS);
}

/* The same item twice in one batch, in the current chunk and in another
 * chunk's run: the first frees it, the second is a double free. */
static void test_pool_free_n_of_the_same_item_twice_reports_the_second(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        /* Full, so the next allocs can only take the slots freed here. */
        void **items;
        size_t n;
        fm_pool *pool = full_fixed_pool(env, "twice", 64, 2, policies[pi], &items, &n);
        void *a = items[3], *b = items[4], *c = items[n - 2];
        void *batch[] = {a, b, a, items[5], c, c, items[6]};
        fm_pool_stats before = stats_of(pool);
        fm_test_errors_reset(&env->errors);

        fm_pool_free_n(pool, batch, sizeof batch / sizeof batch[0]);

        assert_int_equal(env->errors.count, 2);
        assert_int_equal(env->errors.by_code[FM_ERR_DOUBLE_FREE], 2);
        void *twice[] = {a, c};
        assert_true(reported_in_order(env->errors.log, twice, 2));
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.live, before.live - 5);
        assert_int_equal(after.total_frees, before.total_frees + 5);
        assert_int_equal(after.misuse_count, before.misuse_count + 2);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        /* Each slot once: 5 allocs give the 5 freed items, none twice. */
        void *again[5];
        alloc_all(pool, again, 5);
        void *freed[] = {a, b, items[5], c, items[6]};
        assert_same_set(freed, again, 5);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        fm_pool_free_n(pool, items, n);
        free(items);
        fm_test_errors_reset(&env->errors);
        destroy_clean(env, pool);
    }
}

/* Slot addresses the pool never handed out, in the current chunk (past its
 * bump index) and in a chunk reserve added (fresh): foreign, each reported
 * in its place; the live items around them are freed. */
static void test_pool_free_n_of_slots_never_handed_out_reports_them_as_foreign(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "unused", .item_size = 64, .sync = policies[pi]});
        fm_pool_stats s0 = stats_of(pool);
        void *items[10];
        alloc_all(pool, items, 10);
        uintptr_t in_chunk = (uintptr_t)s0.chunk_bytes - 1;
        uintptr_t slots_off = (uintptr_t)items[0] & in_chunk; /* slot 0: the first handed out */
        assert_true(fm_pool_reserve(pool, (uint32_t)s0.capacity * 3));
        const fm_test_block *fresh = NULL;
        for (size_t i = 0; i < env->alloc.block_count && !fresh; i++) {
            const fm_test_block *blk = &env->alloc.blocks[i];
            bool first_chunk = (uintptr_t)blk->ptr == ((uintptr_t)items[0] & ~in_chunk);
            if (blk->size == s0.chunk_bytes && !first_chunk) fresh = blk;
        }
        assert_non_null(fresh);
        void *in_fresh = byte_offset(fresh->ptr, slots_off + 3 * s0.stride);
        void *batch[8] = {items[1], items[2], in_fresh, items[3], NULL, items[4], items[5]};
        size_t nb = 7;
        void *reported[2] = {in_fresh};
        size_t n_reported = 1;
        if (policies[pi] == FM_SYNC_NONE || policies[pi] == FM_SYNC_MUTEX) {
            /* Under these the bump index is exact: 10 slots handed out. */
            void *past_bump = byte_offset(items[9], s0.stride);
            assert_true(((uintptr_t)past_bump & ~in_chunk) == ((uintptr_t)items[9] & ~in_chunk));
            batch[nb++] = past_bump;
            reported[n_reported++] = past_bump;
        }
        fm_pool_stats before = stats_of(pool);
        fm_test_errors_reset(&env->errors);

        fm_pool_free_n(pool, batch, nb);

        assert_int_equal(env->errors.count, (int)n_reported);
        assert_int_equal(env->errors.by_code[FM_ERR_FOREIGN_POINTER], (int)n_reported);
        assert_true(reported_in_order(env->errors.log, reported, n_reported));
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.live, before.live - 5);
        assert_int_equal(after.misuse_count, before.misuse_count + n_reported);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        void *rest[] = {items[0], items[6], items[7], items[8], items[9]};
        assert_items_valid(pool, rest, 5);
        fm_pool_free_n(pool, rest, 5);
        fm_test_errors_reset(&env->errors);
        destroy_clean(env, pool);
    }
}

/* One run frees a whole chunk: its record is written back empty, and trim
 * gives the chunk back (chunk_count and capacity drop by one chunk). */
static void test_pool_free_n_run_that_empties_a_chunk_lets_trim_release_it(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "empty", .item_size = 128, .sync = policies[pi]});
        fm_pool_stats s0 = stats_of(pool);
        uint32_t per = (uint32_t)s0.items_per_chunk;
        size_t n = (size_t)per * 4; /* growth to four chunks, all full */
        void **items = calloc(n, sizeof *items);
        assert_non_null(items);
        alloc_all(pool, items, n);
        fm_pool_stats full = stats_of(pool);
        assert_int_equal(full.chunk_count, 4);
        group_by_chunk(items, n, ~(uintptr_t)(s0.chunk_bytes - 1), per);

        /* Chunk 1 whole, as one run, then a few of chunk 2. */
        fm_pool_free_n(pool, items + per, (size_t)per + 5);
        fm_pool_stats s = stats_of(pool);
        assert_int_equal(s.live, n - per - 5);
        assert_int_equal(s.chunk_count, 4);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        size_t released = fm_pool_trim(pool);
        assert_int_equal(released, s0.chunk_bytes);
        s = stats_of(pool);
        assert_int_equal(s.chunk_count, 3);
        assert_int_equal(s.capacity, full.capacity - per);
        assert_int_equal(s.bytes_reserved, full.bytes_reserved - s0.chunk_bytes);
        assert_int_equal(s.live, n - per - 5);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        if (policies[pi] == FM_SYNC_NONE || policies[pi] == FM_SYNC_MUTEX) {
            /* Its items are foreign now (not read: the table no longer knows the chunk). */
            fm_test_errors_reset(&env->errors);
            fm_pool_free_n(pool, items + per + 1, 1);
            assert_int_equal(env->errors.count, 1);
            assert_int_equal(env->errors.last, FM_ERR_FOREIGN_POINTER);
        }

        /* The live ones still free as a batch (chunks 0, 2 and 3). */
        fm_pool_free_n(pool, items, per);
        fm_pool_free_n(pool, items + 2 * (size_t)per + 5, 2 * (size_t)per - 5);
        free(items);
        fm_test_errors_reset(&env->errors);
        destroy_clean(env, pool);
    }
}

/* A run into a FULL chunk (every slot live, not current) refiles it: its
 * slots are served again, exactly those, without growth (FIXED). */
static void test_pool_free_n_into_a_full_chunk_makes_it_allocatable_again(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        void **items;
        size_t n;
        fm_pool *pool = full_fixed_pool(env, "refile", 64, 2, policies[pi], &items, &n);
        uint32_t per = (uint32_t)(n / 2);
        fm_test_errors_reset(&env->errors);
        assert_null(fm_pool_alloc(pool));
        assert_int_equal(env->errors.last, FM_ERR_POOL_FULL);

        for (size_t round = 0; round < 3; round++) {
            /* Chunk 0 (full): 1 item, then 5 in reverse, then 40 scattered. */
            size_t k = round == 0 ? 1 : round == 1 ? 5 : 40;
            void *freed[40];
            for (size_t j = 0; j < k; j++) freed[j] = items[(k - 1 - j) * (per / 41) + round];
            fm_pool_free_n(pool, freed, k);
            assert_int_equal(stats_of(pool).live, n - k);
            assert_int_equal(fm_pool_check(pool), FM_OK);
            void *again[40];
            assert_int_equal(fm_pool_alloc_n(pool, again, k), k);
            assert_same_set(freed, again, k);
            assert_int_equal(stats_of(pool).live, n);
            for (size_t j = 0; j < k; j++) {
                /* The slots are the same: no item index changes. */
                assert_true(fm_pool_owns(pool, again[j]));
            }
        }
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(stats_of(pool).grow_events, 0);
        fm_pool_free_n(pool, items, n);
        free(items);
        destroy_clean(env, pool);
    }
}

/* The meta word of a live item (live bit 31 | generation) sits at the start
 * of its chunk, one per slot; the slot is the low bits of its handle. */
static uint32_t *meta_of(fm_pool *pool, void *item) {
    fm_pool_stats s = stats_of(pool);
    uint32_t bits = 1;
    while ((1u << bits) < s.items_per_chunk) bits++;
    uint32_t slot = (uint32_t)fm_pool_handle(pool, item).bits & ((1u << bits) - 1u);
    return (uint32_t *)((uintptr_t)item & ~(uintptr_t)(s.chunk_bytes - 1)) + slot;
}

/* A slot whose generation is exhausted, inside a run of another chunk and in
 * the current chunk: the batch hands it to the retire path (no report, the
 * slot retired, capacity one lower each), frees the rest, and a later entry
 * of a retired slot is a double free. Retired slots are never served again. */
static void test_pool_free_n_retires_a_slot_whose_generation_is_exhausted(void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        void **items;
        size_t n;
        fm_pool *pool = full_fixed_pool(env, "retire", 64, 2, policies[pi], &items, &n);
        uint32_t per = (uint32_t)(n / 2);
        size_t r1 = per / 2, r2 = (size_t)per + per / 2; /* chunk 0, current chunk */
        void *old1 = items[r1], *old2 = items[r2];
        fm_handle h1 = fm_pool_handle(pool, old1);
        uint32_t *m1 = meta_of(pool, old1), *m2 = meta_of(pool, old2);
        assert_true(*m1 & 0x80000000u);
        assert_true(*m2 & 0x80000000u);
        *m1 = 0xFFFFFFFFu; /* live, generation at its maximum */
        *m2 = 0xFFFFFFFFu;
        void *batch[13];
        size_t nb = 0;
        for (size_t i = r1 - 3; i <= r1 + 3; i++) batch[nb++] = items[i];
        for (size_t i = r2 - 2; i <= r2 + 2; i++) batch[nb++] = items[i];
        batch[nb++] = old1;
        fm_pool_stats before = stats_of(pool);
        fm_test_errors_reset(&env->errors);

        fm_pool_free_n(pool, batch, nb);

        assert_int_equal(*m1, 0u); /* retired */
        assert_int_equal(*m2, 0u);
        assert_int_equal(env->errors.count, 1);
        assert_int_equal(env->errors.last, FM_ERR_DOUBLE_FREE);
        void *last[] = {old1};
        assert_true(reported_in_order(env->errors.log, last, 1));
        fm_pool_stats after = stats_of(pool);
        assert_int_equal(after.capacity, before.capacity - 2);
        assert_int_equal(after.live, before.live - 12);
        assert_int_equal(after.total_frees, before.total_frees + 12);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        assert_false(fm_pool_owns(pool, old1));
        assert_null((fm_pool_resolve)(pool, h1));

        /* The other 10 come back; the retired two never. */
        void *again[12];
        assert_int_equal(fm_pool_alloc_n(pool, again, 12), 10);
        assert_int_equal(env->errors.last, FM_ERR_POOL_FULL);
        for (size_t j = 0; j < 10; j++) {
            assert_ptr_not_equal(again[j], old1);
            assert_ptr_not_equal(again[j], old2);
        }
        void *expect[10];
        size_t ne = 0;
        for (size_t j = 0; j + 1 < nb; j++)
            if (batch[j] != old1 && batch[j] != old2) expect[ne++] = batch[j];
        assert_int_equal(ne, 10);
        assert_same_set(expect, again, 10);
        assert_int_equal(fm_pool_check(pool), FM_OK);
        for (size_t j = 0; j < n; j++)
            if (items[j] != old1 && items[j] != old2) fm_pool_free(pool, items[j]);
        free(items);
        fm_test_errors_reset(&env->errors);
        destroy_clean(env, pool);
    }
}

/* A NULL array with n > 0: FM_ERR_INVALID_ARG naming the pool, nothing else
 * changes. n == 0 (any array) and a batch of NULLs: nothing at all. */
static void test_pool_batch_calls_with_a_null_array_are_invalid_and_empty_ones_no_ops(
    void **state) {
    fm_test_env *env = *state;
    for (size_t pi = 0; pi < N_POLICIES; pi++) {
        fm_pool *pool = create_counted(
            env, (fm_pool_desc){.name = "nullarg", .item_size = 16, .sync = policies[pi]});
        void *keep = fm_pool_alloc(pool);
        assert_non_null(keep);
        fm_pool_stats before = stats_of(pool);
        fm_test_errors_reset(&env->errors);

        fm_clear_error();
        assert_int_equal(fm_pool_alloc_n(pool, NULL, 3), 0);
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        fm_clear_error();
        fm_pool_free_n(pool, NULL, 2);
        assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
        assert_int_equal(env->errors.count, 2);
        assert_int_equal(env->errors.by_code[FM_ERR_INVALID_ARG], 2);
        assert_true(fm_test_contains(env->errors.message, "nullarg"));
        fm_pool_stats after = stats_of(pool);
        assert_stats_same(&before, &after, 0);

        fm_clear_error();
        void *untouched[2] = {keep, keep};
        assert_int_equal(fm_pool_alloc_n(pool, untouched, 0), 0);
        assert_int_equal(fm_pool_alloc_n(pool, NULL, 0), 0);
        assert_ptr_equal(untouched[0], keep);
        assert_ptr_equal(untouched[1], keep);
        fm_pool_free_n(pool, NULL, 0);
        fm_pool_free_n(pool, untouched, 0);
        void *nulls[3] = {NULL, NULL, NULL};
        fm_pool_free_n(pool, nulls, 3);
        assert_int_equal(fm_last_error(), FM_OK);
        assert_int_equal(env->errors.count, 2);
        after = stats_of(pool);
        assert_stats_same(&before, &after, 0);
        assert_true(fm_pool_owns(pool, keep));

        fm_pool_free_n(pool, &keep, 1);
        destroy_clean(env, pool);
    }
}

/* ============================================================== threads */

typedef struct stranger_arg {
    fm_pool *pool;
    void **live; /* 3 live items of the pool */
    void *out[4];
    size_t got;
    fm_error alloc_err, free_err;
} stranger_arg;

static void *stranger_main(void *p) {
    stranger_arg *a = p;
    fm_clear_error();
    a->got = fm_pool_alloc_n(a->pool, a->out, 4);
    a->alloc_err = fm_last_error();
    fm_clear_error();
    fm_pool_free_n(a->pool, a->live, 3);
    a->free_err = fm_last_error();
    return NULL;
}

/* An FM_SYNC_NONE pool used by a thread that does not own it: debug and
 * sanitizer builds refuse each batch call with one FM_ERR_WRONG_THREAD and
 * change nothing; release builds do not check. */
static void test_pool_batch_calls_from_a_non_owner_thread_are_refused_in_debug_builds(
    void **state) {
    fm_test_env *env = *state;
    fm_pool *pool = create_counted(env, (fm_pool_desc){.name = "owned", .item_size = 32});
    void *live[3];
    alloc_all(pool, live, 3);
    stranger_arg arg = {.pool = pool, .live = live};
    fm_pool_stats before = stats_of(pool);
    fm_test_errors_reset(&env->errors);
    fm_test_thread t;
    assert_int_equal(fm_test_thread_create(&t, stranger_main, &arg), 0);
    assert_int_equal(fm_test_thread_join(t, NULL), 0);
#ifdef THREAD_CHECKS
    assert_int_equal(arg.got, 0);
    for (size_t i = 0; i < 4; i++) assert_null(arg.out[i]);
    assert_int_equal(arg.alloc_err, FM_ERR_WRONG_THREAD);
    assert_int_equal(arg.free_err, FM_ERR_WRONG_THREAD);
    assert_int_equal(env->errors.count, 2);
    assert_int_equal(env->errors.by_code[FM_ERR_WRONG_THREAD], 2);
    assert_true(fm_test_contains(env->errors.message, "owned"));
    fm_pool_stats after = stats_of(pool);
    assert_stats_same(&before, &after, 0);
    for (size_t i = 0; i < 3; i++) assert_true(fm_pool_owns(pool, live[i]));
    fm_pool_free_n(pool, live, 3);
#else
    assert_int_equal(arg.got, 4);
    assert_int_equal(arg.alloc_err, FM_OK);
    assert_int_equal(arg.free_err, FM_OK);
    assert_int_equal(env->errors.count, 0);
    assert_int_equal(stats_of(pool).live, 4);
    fm_pool_free_n(pool, arg.out, 4);
    (void)before;
#endif
    destroy_clean(env, pool);
}

/* ==================================================================== main */

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_pool_alloc_n_spans_chunks_and_growth_like_single_allocs_under_every_policy),
        T(test_pool_alloc_n_after_frees_serves_slots_in_single_alloc_order),
        T(test_pool_alloc_n_past_the_peak_raises_peak_live_by_the_excess),
        T(test_pool_alloc_n_on_a_full_fixed_pool_returns_what_fits_and_reports_once),
        T(test_pool_alloc_n_at_max_capacity_returns_what_fits_and_reports_once),
        T(test_pool_alloc_n_with_growth_refused_returns_what_fits_and_leaks_nothing),
        T(test_pool_alloc_n_records_the_call_site_of_every_item),
        T(test_pool_free_n_in_every_order_frees_each_item_once),
        T(test_pool_free_n_reports_bad_entries_inside_a_run),
        T(test_pool_free_n_reports_bad_entries_at_the_start_of_a_run),
        T(test_pool_free_n_reports_bad_entries_at_the_end_of_the_batch),
        T(test_pool_free_n_of_the_same_item_twice_reports_the_second),
        T(test_pool_free_n_of_slots_never_handed_out_reports_them_as_foreign),
        T(test_pool_free_n_run_that_empties_a_chunk_lets_trim_release_it),
        T(test_pool_free_n_into_a_full_chunk_makes_it_allocatable_again),
        T(test_pool_free_n_retires_a_slot_whose_generation_is_exhausted),
        T(test_pool_batch_calls_with_a_null_array_are_invalid_and_empty_ones_no_ops),
        T(test_pool_batch_calls_from_a_non_owner_thread_are_refused_in_debug_builds),
#undef T
    };
    return cmocka_run_group_tests_name("pool_batch", tests, NULL, NULL);
}
