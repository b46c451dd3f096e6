/*
 * tests/fuzz/fuzz_pool.c: libFuzzer harness for fm_pool against a reference
 * model.
 *
 * Input: an 8-byte header choosing the pool (item size 1..1024, alignment
 * 1..4096 or the default, growth policy, initial and max capacity, grow step
 * or factor, hooks, system or counting allocator, a fault in create, sync
 * NONE or MUTEX, the chunk size: default, 4 KiB .. 256 KiB or refused), then
 * one operation per opcode byte (modulo 23) with its operands:
 *
 *   alloc / new, bursts of them; free / delete / fm_free (by address; the
 *   dtor may free its own item: a documented misuse); bad frees (fm_free
 *   too) and other calls on NULL, stack, static, freed, interior, nearby and
 *   other-pool pointers (each must be reported with its code and change
 *   nothing); reset (everything freed at once, dtors run, handles stale; or
 *   from inside foreach, refused each time); reserve; trim; owns;
 *   handle / resolve (stale handles resolve NULL, live ones to their item);
 *   retain / release / refcount; foreach (counting, or freeing as it walks);
 *   a request for a full sweep; arming the allocator's faults; alloc_n, a
 *   batch of 1..64 that must stop at the first item the pool must or may
 *   refuse, with that failure reported and counted once; free_n of up to 64
 *   entries: live items in allocation order, backwards, at random or
 *   strided, mixed with NULLs and bad entries (an item the batch freed
 *   already, a remembered freed item, interior pointers of items before and
 *   after the batch frees them, stack, static, far and other-pool pointers),
 *   where the model plays the batch as single frees in order and predicts
 *   which items go, how many reports and the last code; either batch into
 *   or from NULL (rejected, nothing changes).
 *
 * The model keeps every live item with its byte pattern and count (and an
 * address -> item map, so no check searches), a few freed pointers, a few
 * handles with the item each must resolve to (NULL once it is gone), and
 * every counter the pool reports. Any mismatch aborts with a message.
 *
 * What is checked when: after every operation, every counter and a rotating
 * sample of SAMPLE live items (bytes, alignment, ownership of one); the
 * items an operation touches (an item in full before it is freed; a new
 * item is no live one; the ends of the live items either side of a new or
 * freed item, where a stray write by the pool would land; the ends of every
 * item a walk visits). A full sweep (every live item's bytes, alignment and
 * overlap, every tracked handle, fm_pool_check) runs when an operation asks
 * for one (the check opcode, a trim that released memory) or every
 * FZ_SWEEP_EVERY operations, paid from a budget every operation adds
 * FZ_SWEEP_CREDIT bytes to, and always at the end. So an input costs time in
 * proportion to its operations, not to operations times live items, and its
 * operations stop after WORK_BUDGET pool calls: a pool call costs a
 * microsecond or two here (ASan, coverage hooks), and 4 KiB inputs of bursts
 * and walks over thousands of items held the harness to a few hundred runs a
 * second. At the end the pool is destroyed (dtors and the leak report
 * checked) and the counting allocator must hold zero bytes.
 */
#include "fuzz_support.h"

#include "framemem/pool.h"

enum {
    MAX_LIVE = 4096,
    MAX_FREED = 16,
    MAX_HANDLES = 32,
    WORK_BUDGET = 1024,   /* pool calls per input (a walk's visits count a quarter) */
    MEMORY_CAP = 4 << 20, /* bytes of slots the model lets the pool grow to */
    SAMPLE = 8,           /* live items checked after every operation */
    MAP_BITS = 14,        /* the address map: 4x MAX_LIVE slots */
    MAP_SLOTS = 1 << MAP_BITS,
};

typedef struct live_item {
    uint8_t *ptr;
    uint32_t seed;
    uint32_t refs;
} live_item;

typedef struct tracked_handle {
    fm_handle h;
    uint8_t *expect; /* the item, or NULL once it is gone */
} tracked_handle;

typedef struct model {
    fm_pool *pool;
    fm_pool *other; /* a second pool, for foreign items */
    void *other_item;
    bool counting;
    bool hooks;
    bool silent;
    size_t item_size;
    size_t align;
    size_t stride;
    size_t chunk_bytes;
    uintptr_t last_chunk; /* of the last item allocated */
    fm_growth growth;
    uint32_t max_capacity;
    uint64_t min_capacity; /* trim never goes below it */

    live_item live[MAX_LIVE];
    size_t count;
    uint8_t *freed[MAX_FREED]; /* freed, not handed out again, chunk not trimmed */
    size_t n_freed, next_freed;
    tracked_handle handles[MAX_HANDLES];
    size_t n_handles, next_handle;
    uint32_t next_seed;

    /* when to check what */
    uint64_t capacity;     /* as last read; only alloc, reserve and trim change it */
    fz_sweeper sweep;      /* when the next full sweep runs */
    uint32_t work;         /* pool calls so far, up to WORK_BUDGET */
    size_t sample_at;      /* where the rotating sample goes on */

    /* what the pool's counters and hooks must say */
    uint64_t allocs, frees, failed, misuse, peak, trims, trimmed, resets;
    uint64_t ctors, dtors;
    uint64_t reports;

    /* what the hooks saw */
    uint64_t ctor_calls, dtor_calls;
    const void *dtor_expect; /* the item delete / release is destroying */
    bool dtor_frees_item;    /* that dtor frees its own item */
    bool destroying;
} model;

static model g_m;
static fm_test_allocator g_alloc;
static long long g_static_block[8]; /* foreign memory that is not the stack */

/* Scratch for foreach, destroy and the full check. */
static uint8_t g_visited[MAX_LIVE];
static uint8_t g_doomed[MAX_LIVE];
static void *g_sorted[MAX_LIVE];

/* ================================================================ helpers */

static fm_pool_stats stats_of(const fm_pool *pool) {
    fm_pool_stats s;
    memset(&s, 0, sizeof s);
    fm_pool_get_stats(pool, &s);
    return s;
}

/* A rejected call changed nothing: the stats read before it and the
 * backing allocator's live bytes then. */
static void check_unchanged(const model *m, const fm_pool_stats *before, size_t backing) {
    fm_pool_stats after = stats_of(m->pool);
    FZ_CHECK_EQ(after.live, before->live);
    FZ_CHECK_EQ(after.total_allocs, before->total_allocs);
    FZ_CHECK_EQ(after.total_frees, before->total_frees);
    FZ_CHECK_EQ(after.failed_allocs, before->failed_allocs);
    FZ_CHECK_EQ(after.capacity, before->capacity);
    FZ_CHECK_EQ(after.bytes_reserved, before->bytes_reserved);
    FZ_CHECK_EQ(g_alloc.live_bytes, backing);
}

static void verify_item(const model *m, size_t i) {
    const live_item *it = &m->live[i];
    size_t bad = fz_check_fill(it->ptr, m->item_size, it->seed);
    if (bad != m->item_size)
        FZ_FAIL("live item %p (%zu bytes) changed at byte %zu", (void *)it->ptr, m->item_size, bad);
}

/* The first and last bytes of live item i: a walk's check that it was given
 * the right item, in O(1) whatever the item size. */
static void verify_item_ends(const model *m, size_t i) {
    const live_item *it = &m->live[i];
    size_t head = m->item_size < 8 ? m->item_size : 8;
    size_t tail = (m->item_size - 1) & ~(size_t)7; /* the last word of the pattern */
    if (fz_check_fill_from(it->ptr, 0, head, it->seed) != head ||
        fz_check_fill_from(it->ptr, tail, m->item_size - tail, it->seed) != m->item_size - tail)
        FZ_FAIL("live item %p (%zu bytes) changed at its ends", (void *)it->ptr, m->item_size);
}

/* ------------------------------------------------------------ address map */

/* Live item address -> index in model.live: linear probing, deletion by
 * backward shift. A slot is in use when its epoch is this input's, so a new
 * input starts with an empty map without clearing it. Bookkeeping: nothing
 * for the fuzzer to learn from (probe lengths follow addresses). */
typedef struct map_slot {
    const void *ptr;
    uint32_t index;
    uint32_t epoch;
} map_slot;

static map_slot g_map[MAP_SLOTS];
static uint32_t g_epoch;

static void map_begin(void) {
    if (++g_epoch == 0) { /* wrapped: old epochs could pass for this one */
        memset(g_map, 0, sizeof g_map);
        g_epoch = 1;
    }
}

static size_t map_home(const void *p) {
    return (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> (64 - MAP_BITS));
}

/* The slot holding p, or the empty slot where it would go. */
FZ_NO_COVERAGE static size_t map_slot_of(const void *p) {
    size_t i = map_home(p);
    while (g_map[i].epoch == g_epoch && g_map[i].ptr != p) i = (i + 1) & (MAP_SLOTS - 1);
    return i;
}

FZ_NO_COVERAGE static void map_set(const void *p, size_t index) {
    size_t i = map_slot_of(p);
    g_map[i] = (map_slot){p, (uint32_t)index, g_epoch};
}

FZ_NO_COVERAGE static void map_remove(const void *p) {
    size_t i = map_slot_of(p);
    if (g_map[i].epoch != g_epoch) FZ_FAIL("model: %p is not in the address map", p);
    g_map[i].epoch = 0;
    /* Pull back the entries after the hole that probing would no longer find. */
    for (size_t j = (i + 1) & (MAP_SLOTS - 1); g_map[j].epoch == g_epoch;
         j = (j + 1) & (MAP_SLOTS - 1)) {
        size_t home = map_home(g_map[j].ptr);
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays) continue;
        g_map[i] = g_map[j];
        g_map[j].epoch = 0;
        i = j;
    }
}

/* The live index of p, or SIZE_MAX. */
FZ_NO_COVERAGE static size_t find_live(const model *m, const void *p) {
    (void)m;
    size_t i = map_slot_of(p);
    return g_map[i].epoch == g_epoch ? g_map[i].index : SIZE_MAX;
}

static void add_live(model *m, uint8_t *p, uint32_t seed) {
    map_set(p, m->count);
    m->live[m->count++] = (live_item){p, seed, 1};
}

static void remove_live(model *m, size_t i) {
    map_remove(m->live[i].ptr);
    m->live[i] = m->live[--m->count];
    if (i < m->count) map_set(m->live[i].ptr, i);
}

/* The ends of the live items in the slots either side of p: a free list
 * linked through free slots, or a slot index off by one, writes there. */
static void verify_neighbours(const model *m, const uint8_t *p) {
    size_t below = find_live(m, (const void *)((uintptr_t)p - m->stride));
    size_t above = find_live(m, (const void *)((uintptr_t)p + m->stride));
    if (below != SIZE_MAX) verify_item_ends(m, below);
    if (above != SIZE_MAX) verify_item_ends(m, above);
}

static void forget_freed(model *m, const void *p) {
    for (size_t i = 0; i < m->n_freed; i++) {
        if (m->freed[i] == p) {
            m->freed[i] = m->freed[--m->n_freed];
            return;
        }
    }
}

/* The item at p was freed (by free, delete, release or a walk). Its slot is
 * poisoned for ASan from now on (docs/CONTRIBUTING.md, "Debug aids"). */
static void item_gone(model *m, uint8_t *p) {
    if (!fz_poisoned(p, m->stride)) FZ_FAIL("freed item %p is not poisoned", (void *)p);
    verify_neighbours(m, p);
    m->frees++;
    for (size_t i = 0; i < m->n_handles; i++) {
        if (m->handles[i].expect == p) m->handles[i].expect = NULL;
    }
    if (m->n_freed < MAX_FREED) {
        m->freed[m->n_freed++] = p;
    } else {
        m->freed[m->next_freed] = p;
        m->next_freed = (m->next_freed + 1) % MAX_FREED;
    }
}

/* The live items g_doomed marks were freed: out of the model first, as
 * item_gone checks the live neighbours of each. They are left in
 * g_sorted[0, returned count). */
static size_t doomed_gone(model *m) {
    size_t gone = 0;
    for (size_t i = m->count; i-- > 0;) { /* from the top: remove_live moves the last */
        if (!g_doomed[i]) continue;
        g_sorted[gone++] = m->live[i].ptr;
        remove_live(m, i);
    }
    for (size_t k = 0; k < gone; k++) item_gone(m, g_sorted[k]);
    return gone;
}

static void track_handle(model *m, fm_handle h, uint8_t *item) {
    if (m->n_handles < MAX_HANDLES) {
        m->handles[m->n_handles++] = (tracked_handle){h, item};
    } else {
        m->handles[m->next_handle] = (tracked_handle){h, item};
        m->next_handle = (m->next_handle + 1) % MAX_HANDLES;
    }
}

/* ================================================================== hooks */

static void ctor_hook(void *item, void *user) {
    model *m = user;
    m->ctor_calls++;
    memset(item, 0xC7, m->item_size); /* the whole item is the ctor's */
}

static void dtor_hook(void *item, void *user) {
    model *m = user;
    m->dtor_calls++;
    if (m->destroying) { /* destroy's or reset's walk over every live item */
        size_t i = find_live(m, item);
        if (i == SIZE_MAX) FZ_FAIL("destroy or reset ran the dtor on %p, not a live item", item);
        if (g_visited[i]++) FZ_FAIL("destroy or reset ran the dtor on %p twice", item);
        return;
    }
    if (item != m->dtor_expect) FZ_FAIL("dtor ran on %p, expected %p", item, m->dtor_expect);
    if (m->dtor_frees_item) fm_pool_free(m->pool, item);
}

/* ========================================================== whole checks */

/* Counters and geometry that every operation keeps exact; the stats read. */
static fm_pool_stats check_counters(const model *m) {
    fm_pool_stats s = stats_of(m->pool);
    FZ_CHECK_EQ(s.live, m->count);
    FZ_CHECK_EQ(s.total_allocs, m->allocs);
    FZ_CHECK_EQ(s.total_frees, m->frees);
    FZ_CHECK_EQ(s.failed_allocs, m->failed);
    FZ_CHECK_EQ(s.misuse_count, m->misuse);
    FZ_CHECK_EQ(s.peak_live, m->peak);
    FZ_CHECK(s.capacity >= s.live);
    if (m->max_capacity) FZ_CHECK(s.capacity <= m->max_capacity);
    FZ_CHECK_EQ(fz_err.count, m->reports);
    FZ_CHECK_EQ(m->ctor_calls, m->ctors);
    FZ_CHECK_EQ(m->dtor_calls, m->dtors);
    FZ_CHECK_EQ(s.trim_events, m->trims);
    FZ_CHECK_EQ(s.bytes_trimmed, m->trimmed);
    FZ_CHECK_EQ(s.resets, m->resets);
    FZ_CHECK_EQ(s.item_size, m->item_size);
    FZ_CHECK_EQ(s.item_align, m->align);
    FZ_CHECK_EQ(s.stride, m->stride);
    FZ_CHECK(s.bytes_overhead == s.bytes_reserved - s.capacity * s.item_size);
    FZ_CHECK(s.grow_ns_total >= s.grow_ns_max);
    FZ_CHECK(FM_IS_POW2(s.chunk_bytes));
    FZ_CHECK_EQ(s.chunk_bytes, m->chunk_bytes);
    FZ_CHECK(s.capacity <= s.chunk_count * s.items_per_chunk);
    return s;
}

static void check_handles(const model *m) {
    for (size_t i = 0; i < m->n_handles; i++) {
        void *got = fm_pool_resolve(m->pool, m->handles[i].h);
        if (got != m->handles[i].expect)
            FZ_FAIL("handle %#llx resolves to %p, expected %p",
                    (unsigned long long)m->handles[i].h.bits, got, (void *)m->handles[i].expect);
    }
}

/* Every live item's bytes, alignment and place, every tracked handle and
 * the pool's own validation walk. */
static void full_sweep(model *m) {
    for (size_t i = 0; i < m->count; i++) {
        verify_item(m, i);
        FZ_CHECK(fm_is_aligned(m->live[i].ptr, m->align));
        g_sorted[i] = m->live[i].ptr;
    }
    qsort(g_sorted, m->count, sizeof *g_sorted, fz_cmp_ptr);
    for (size_t i = 0; i + 1 < m->count; i++) {
        if ((uintptr_t)g_sorted[i] + m->stride > (uintptr_t)g_sorted[i + 1])
            FZ_FAIL("live items %p and %p overlap (stride %zu)", g_sorted[i], g_sorted[i + 1],
                    m->stride);
    }
    check_handles(m);
    fm_error err = fm_pool_check(m->pool);
    if (err != FM_OK) FZ_FAIL("fm_pool_check: %s", fm_error_name(err));
}

/* SAMPLE live items in turn, so that every item is looked at now and then
 * between sweeps; the first of them is asked about ownership too. */
static void check_sample(model *m) {
    if (m->count) FZ_CHECK(fm_pool_owns(m->pool, m->live[m->sample_at % m->count].ptr));
    for (size_t k = 0; k < SAMPLE && k < m->count; k++) {
        size_t i = (m->sample_at + k) % m->count;
        verify_item(m, i);
        FZ_CHECK(fm_is_aligned(m->live[i].ptr, m->align));
    }
    m->sample_at += SAMPLE;
}

/* After every operation: the counters, then a full sweep when one is due,
 * else the sample. A sweep costs its pattern bytes plus a little per item
 * and per slot (the sort, fm_pool_check's walk). */
static void after_op(model *m) {
    fm_pool_stats s = check_counters(m);
    m->capacity = s.capacity;
    if (fz_sweep_due(&m->sweep, m->count * (m->item_size + 64) + s.capacity * 8))
        full_sweep(m);
    else
        check_sample(m);
}

/* =============================================================== allocation */

/* Whether the pool must refuse an item with `live` items live (capacity as
 * read before): FIXED at its capacity, or at max_capacity. */
static bool pool_full(const model *m, size_t live, uint64_t capacity) {
    return (m->max_capacity && live >= m->max_capacity) ||
           (m->growth == FM_GROWTH_FIXED && live >= capacity);
}

/* A new item p from alloc, new or alloc_n: aligned, no live item's slot,
 * the ends of its neighbours intact; it gets a fresh pattern and joins the
 * model. */
static void item_taken(model *m, uint8_t *p, bool constructed) {
    FZ_CHECK(fm_is_aligned(p, m->align));
    /* Ownership goes by chunk: asked when an alloc lands in a chunk other
     * than the last one's (and of one sampled item after every operation). */
    uintptr_t chunk = (uintptr_t)p & ~(uintptr_t)(m->chunk_bytes - 1);
    if (chunk != m->last_chunk) {
        FZ_CHECK(fm_pool_owns(m->pool, p));
        m->last_chunk = chunk;
    }
    if (constructed) m->ctors++;
    m->allocs++;
    forget_freed(m, p);
    if (find_live(m, p) != SIZE_MAX) FZ_FAIL("alloc handed out live item %p", (void *)p);
    uint32_t seed = m->next_seed++;
    fz_fill(p, m->item_size, seed);
    add_live(m, p, seed);
    verify_neighbours(m, p);
    if (m->count > m->peak) m->peak = m->count;
}

static bool alloc_one(model *m, bool use_new) {
    if (m->count == MAX_LIVE) return false;
    m->work++;
    /* Below the capacity last read there is room (only trim shrinks it, and
     * every operation reads it back); at it, the pool's stats decide. */
    fm_pool_stats before = {.capacity = m->capacity};
    if (m->count >= m->capacity) {
        before = stats_of(m->pool);
        m->capacity = before.capacity;
    }
    bool full = pool_full(m, m->count, before.capacity);
    bool room = m->count < before.capacity;
    if (!full && !room && (before.capacity + 1) * m->stride > MEMORY_CAP) return false;
    uint64_t failed_calls = g_alloc.failed_calls;
    size_t backing = g_alloc.live_bytes;
    fm_clear_error();
    uint8_t *p = use_new ? fm_pool_new(m->pool) : fm_pool_alloc(m->pool);
    if (!p) {
        if (full) {
            FZ_CHECK_ERR(FM_ERR_POOL_FULL);
        } else {
            if (room) FZ_FAIL("alloc failed with %llu live of capacity %llu",
                              (unsigned long long)m->count, (unsigned long long)before.capacity);
            FZ_CHECK_ERR(FM_ERR_OUT_OF_MEMORY);
            if (!m->counting || g_alloc.failed_calls == failed_calls)
                FZ_FAIL("growth failed though the allocator refused nothing");
            fm_pool_stats after = stats_of(m->pool);
            FZ_CHECK_EQ(after.capacity, before.capacity);
            FZ_CHECK_EQ(after.bytes_reserved, before.bytes_reserved);
            FZ_CHECK_EQ(g_alloc.live_bytes, backing);
        }
        m->failed++;
        m->reports++;
        return false;
    }
    if (full) FZ_FAIL("alloc succeeded past the pool's limit (%zu live)", m->count);
    FZ_CHECK_ERR(FM_OK);
    item_taken(m, p, use_new && m->hooks);
    return true;
}

/* sel: bit 7 a burst of 1 + (sel & 63), bit 6 fm_pool_new. */
static void op_alloc(model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    int n = sel & 0x80 ? 1 + (sel & 0x3F) : 1;
    for (int k = 0; k < n; k++) {
        if (!alloc_one(m, sel & 0x40)) break;
    }
}

/* sel: a batch of 1 + (sel & 63) by fm_pool_alloc_n; 0xFF: into out ==
 * NULL instead (rejected, nothing changes). The batch is alloc_one's items
 * in a row: it must stop at the first item the pool must refuse (full) or
 * may refuse (a growth the allocator refused), and only there, with that
 * failure reported and counted once. */
static void op_alloc_n(model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    fm_pool_stats before = stats_of(m->pool);
    m->capacity = before.capacity;
    uint64_t failed_calls = g_alloc.failed_calls;
    size_t backing = g_alloc.live_bytes;
    if (sel == 0xFF) {
        fm_clear_error();
        FZ_CHECK_EQ(fm_pool_alloc_n(m->pool, NULL, 0), 0); /* nothing asked: quiet */
        FZ_CHECK_ERR(FM_OK);
        FZ_CHECK_EQ(fm_pool_alloc_n(m->pool, NULL, 64), 0);
        FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
        m->reports++;
        check_unchanged(m, &before, backing);
        return;
    }
    /* Items from `limit` live on must be refused, without growth. */
    size_t limit = SIZE_MAX;
    if (m->max_capacity) limit = m->max_capacity;
    if (m->growth == FM_GROWTH_FIXED && before.capacity < limit) limit = before.capacity;
    /* As alloc_one: growth at c live items only while (c + 1) strides fit in
     * MEMORY_CAP. The batch grows at most at count + n - 1 live items. */
    size_t n = 1 + (sel & 63);
    if (n > MAX_LIVE - m->count) n = MAX_LIVE - m->count;
    size_t most = MEMORY_CAP / m->stride;
    if (most < before.capacity) most = before.capacity;
    if (limit > most && m->count + n > most) n = most > m->count ? most - m->count : 0;
    if (!n) return;
    void *out[64];
    for (size_t k = 0; k < n; k++) out[k] = &g_static_block[k % 8];
    fm_clear_error();
    size_t got = fm_pool_alloc_n(m->pool, out, n);
    m->work += (uint32_t)n;
    if (got > n) FZ_FAIL("alloc_n of %zu items returned %zu", n, got);
    for (size_t k = got; k < n; k++) { /* out[got, n) is left as it was */
        if (out[k] != &g_static_block[k % 8])
            FZ_FAIL("alloc_n of %zu items returned %zu and wrote out[%zu]", n, got, k);
    }
    fm_pool_stats after = stats_of(m->pool);
    /* Growth in the batch took its chunks (and bigger records) from the
     * allocator, and a refused one took nothing. */
    if (m->counting)
        FZ_CHECK_EQ(g_alloc.live_bytes - backing, after.bytes_reserved - before.bytes_reserved);
    for (size_t k = 0; k < got; k++) {
        if (m->count >= limit)
            FZ_FAIL("alloc_n succeeded past the pool's limit (item %zu of %zu, %zu live)", k, n,
                    m->count);
        item_taken(m, out[k], false);
    }
    if (got == n) {
        FZ_CHECK_ERR(FM_OK);
        return;
    }
    if (m->count >= limit) {
        FZ_CHECK_ERR(FM_ERR_POOL_FULL);
    } else {
        if (m->count < before.capacity)
            FZ_FAIL("alloc_n stopped at item %zu of %zu with %zu live of capacity %llu", got, n,
                    m->count, (unsigned long long)before.capacity);
        FZ_CHECK_ERR(FM_ERR_OUT_OF_MEMORY);
        if (!m->counting || g_alloc.failed_calls == failed_calls)
            FZ_FAIL("growth in alloc_n failed though the allocator refused nothing");
        /* Growth is tried only when every slot held is live. */
        FZ_CHECK_EQ(after.capacity, m->count);
    }
    m->failed++;
    m->reports++;
}

/* Frees live item i by free, delete, or delete whose dtor frees the item
 * itself (reported as a double free after the fact). */
static void free_one(model *m, size_t i, uint8_t how) {
    m->work++;
    verify_item(m, i);
    uint8_t *p = m->live[i].ptr;
    remove_live(m, i);
    fm_clear_error();
    how %= 4;
    if (how == 0) {
        fm_pool_free(m->pool, p);
        FZ_CHECK_ERR(FM_OK);
    } else if (how == 1) { /* by address: fm_pool_of finds the pool */
        FZ_CHECK(fm_pool_of(p) == m->pool);
        fm_free(p);
        FZ_CHECK_ERR(FM_OK);
    } else {
        bool self_free = how == 3 && m->hooks;
        m->dtor_expect = p;
        m->dtor_frees_item = self_free;
        fm_pool_delete(m->pool, p);
        m->dtor_expect = NULL;
        m->dtor_frees_item = false;
        if (m->hooks) m->dtors++;
        if (self_free) {
            FZ_CHECK_ERR(FM_ERR_DOUBLE_FREE);
            m->misuse++;
            m->reports++;
        } else {
            FZ_CHECK_ERR(FM_OK);
        }
    }
    item_gone(m, p);
    FZ_CHECK(!fm_pool_owns(m->pool, p));
}

/* sel: bit 7 a burst of 1 + (sel & 31), bit 6 delete, bit 5 its dtor frees
 * the item (without bit 6: fm_free); then a u16 index per item. */
static void op_free(model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    int n = sel & 0x80 ? 1 + (sel & 0x1F) : 1;
    uint8_t how = sel & 0x40 ? (sel & 0x20 ? 3 : 2) : (sel & 0x20 ? 1 : 0);
    for (int k = 0; k < n; k++) {
        uint32_t i = fz_below(in, (uint32_t)m->count);
        if (m->count) free_one(m, i, how);
    }
}

/* ============================================================ bad pointers */

enum {
    CALL_FREE,
    CALL_DELETE,
    CALL_HANDLE,
    CALL_RETAIN,
    CALL_RELEASE,
    CALL_REFCOUNT,
    CALL_FM_FREE, /* fm_free: the pool found by address, or no pool */
    CALL_COUNT
};

/* Calls `call` on bad, a pointer that free would reject with `code` (FM_OK:
 * any of the three codes a nearby address can get), and checks it was
 * reported with the code that call documents and that nothing changed. */
static void expect_rejected(model *m, void *bad, int call, fm_error code) {
    fm_pool_stats before = stats_of(m->pool);
    size_t backing = g_alloc.live_bytes;
    fm_clear_error();
    bool null_ok = false; /* free and delete of NULL are quiet no-ops */
    bool unowned = false; /* fm_free of a pointer in no pool's chunk */
    switch (call) {
    case CALL_FREE: fm_pool_free(m->pool, bad); null_ok = true; break;
    case CALL_FM_FREE: {
        fm_pool *owner = fm_pool_of(bad);
        /* In another pool's chunk it would be that pool's free. */
        if (owner == m->pool || owner == NULL) fm_free(bad);
        else fm_pool_free(m->pool, bad);
        unowned = owner == NULL && bad != NULL;
        null_ok = true;
        break;
    }
    case CALL_DELETE: fm_pool_delete(m->pool, bad); null_ok = true; break;
    case CALL_HANDLE: FZ_CHECK(fm_handle_is_null(fm_pool_handle(m->pool, bad))); break;
    case CALL_RETAIN: fm_pool_retain(m->pool, bad); break;
    case CALL_RELEASE: FZ_CHECK(!fm_pool_release(m->pool, bad)); break;
    default: FZ_CHECK_EQ(fm_pool_refcount(m->pool, bad), 0); break;
    }
    fm_error got = fm_last_error();
    if (bad == NULL && null_ok) {
        FZ_CHECK_ERR(FM_OK);
    } else if (unowned) {
        /* Reported by fm_free itself: no pool counts it. */
        FZ_CHECK_ERR(FM_ERR_FOREIGN_POINTER);
        if (code == FM_ERR_DOUBLE_FREE || code == FM_ERR_INTERIOR_POINTER)
            FZ_FAIL("fm_free found no pool for %p, an address in the pool's chunk", bad);
        m->reports++;
    } else {
        /* A freed slot is "not a live item" to handle, "dead" to counts. */
        fm_error dead = call == CALL_HANDLE                                ? FM_ERR_FOREIGN_POINTER
                        : call >= CALL_RETAIN && call <= CALL_REFCOUNT ? FM_ERR_REFCOUNT
                                                                       : FM_ERR_DOUBLE_FREE;
        if (code == FM_OK) {
            if (got != FM_ERR_FOREIGN_POINTER && got != FM_ERR_INTERIOR_POINTER && got != dead)
                FZ_FAIL("call %d on nearby %p: %s", call, bad, fm_error_name(got));
        } else {
            fm_error want = code == FM_ERR_DOUBLE_FREE ? dead : code;
            if (got != want)
                FZ_FAIL("call %d on %p: expected %s, got %s", call, bad, fm_error_name(want),
                        fm_error_name(got));
        }
        m->misuse++;
        m->reports++;
    }
    check_unchanged(m, &before, backing);
    FZ_CHECK(!fm_pool_owns(m->pool, bad));
}

/* A pointer of kind 0..7 that every call rejects: NULL, stack, static, a
 * remembered freed item (picked by which), an interior pointer of item, a
 * nearby one (off slots or bytes from item), another pool's item, a far one.
 * *code is what free reports for it (FM_OK for a nearby one: any of the
 * three a nearby address can get). false when the kind has nothing to point
 * at now (no freed item, no item, no other pool, a nearby address that is a
 * live item). */
static bool bad_pointer(const model *m, int kind, uint8_t *item, uint16_t which, uint16_t off,
                        uint8_t flags, void *stack, void **out, fm_error *code) {
    *code = FM_ERR_FOREIGN_POINTER;
    switch (kind) {
    case 0: *out = NULL; return true;
    case 1: *out = stack; return true;
    case 2: *out = &g_static_block[flags % 8]; return true;
    case 3:
        if (!m->n_freed) return false;
        *out = m->freed[which % m->n_freed];
        *code = FM_ERR_DOUBLE_FREE;
        return true;
    case 4:
        if (!item) return false;
        *out = item + 1 + off % (m->stride - 1);
        *code = FM_ERR_INTERIOR_POINTER;
        return true;
    case 5: {
        if (!item) return false;
        intptr_t step = flags & 1 ? (intptr_t)m->stride : 1;
        void *q = (void *)((uintptr_t)item + (uintptr_t)((int16_t)off * step));
        if (q == item || find_live(m, q) != SIZE_MAX) return false;
        *out = q;
        *code = FM_OK;
        return true;
    }
    case 6:
        if (!m->other) return false;
        *out = m->other_item;
        return true;
    default:
        if (!item) return false;
        *out = (void *)((uintptr_t)item ^ ((uintptr_t)1 << (36 + flags % 8)));
        return true;
    }
}

/* Operands: kind, call, then always `which` (u16: an item or freed pointer),
 * `off` (u16: offset or signed delta) and `flags` (u8). */
static void op_bad_pointer(model *m, fz_input *in) {
    long long on_stack[4] = {0};
    uint8_t kind = fz_u8(in) % 8;
    int call = fz_u8(in) % CALL_COUNT;
    uint16_t which = fz_u16(in), off = fz_u16(in);
    uint8_t flags = fz_u8(in);
    uint8_t *item = m->count ? m->live[which % m->count].ptr : NULL;
    void *bad;
    fm_error code;
    if (bad_pointer(m, kind, item, which, off, flags, on_stack, &bad, &code))
        expect_rejected(m, bad, call, code);
}

/* ============================================================ batch free */

enum { BATCH_MAX = 64 };

/* The order a batch takes live items in: index k of it in model.live. */
typedef struct batch_order {
    uint8_t mode; /* 0 a run of live[] (allocation order, as far as frees left
                     it), 1 the run backwards, 2 random picks, 3 every step-th */
    uint32_t start, step;
} batch_order;

static size_t order_pick(const model *m, const batch_order *o, size_t k) {
    size_t n = m->count;
    switch (o->mode) {
    case 0: return (o->start + k) % n;
    case 1: return (o->start + n - k % n) % n;
    case 2: {
        uint32_t x = (o->start + 1) * 0x9E3779B1u ^ (uint32_t)k * 0x85EBCA6Bu;
        x ^= x >> 15;
        x *= 0x2C1B3C6Du;
        x ^= x >> 12;
        return x % n;
    }
    default: return (o->start + k * o->step) % n;
    }
}

/* Operands: sel (bits 0-1 the order, 2-3 how many bad entries: 1/4, 1/32,
 * none, 1/2; 4-7 the step of order 3, less one), len (a batch of
 * 1 + (len & 63); 0xFF: fm_pool_free_n of NULL instead, rejected), start
 * (u16: where the order starts, or its random seed), off (u16: interior
 * offsets), then one byte per entry: below the bad threshold the order's
 * next live item (NULL when there is none), else bits 0-2 a bad entry (0
 * NULL, 1 stack, 2 static, 3 a remembered freed item, 4 an interior pointer
 * of the order's next item, still live then, 5 one of an item this batch
 * freed already, 6 an item this batch freed already, again, 7 another
 * pool's item or a far pointer) with bits 3-5 its parameter.
 *
 * The model plays the batch as single frees in order (a live item's first
 * entry frees it, a later one is a double free) and predicts the reports
 * and the last code; the pool must free exactly the items it predicts. An
 * interior pointer is one whether its item is still live at that entry or
 * freed by an earlier one: nothing in a batch releases a chunk. */
static void op_free_n(model *m, fz_input *in) {
    static const uint16_t bad_from[4] = {0xC0, 0xF8, 0x100, 0x80};
    long long on_stack[4] = {0};
    uint8_t sel = fz_u8(in), len = fz_u8(in);
    uint16_t start = fz_u16(in), off = fz_u16(in);
    size_t n = 1 + (len & 63);
    uint8_t ent[BATCH_MAX];
    for (size_t k = 0; k < n; k++) ent[k] = fz_u8(in);
    fm_pool_stats before = stats_of(m->pool);
    size_t backing = g_alloc.live_bytes;
    if (len == 0xFF) {
        fm_clear_error();
        fm_pool_free_n(m->pool, NULL, 0); /* nothing asked: quiet */
        FZ_CHECK_ERR(FM_OK);
        fm_pool_free_n(m->pool, NULL, n);
        FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
        m->reports++;
        check_unchanged(m, &before, backing);
        return;
    }

    /* The batch, and the model's play of it. */
    batch_order order = {.mode = sel & 3, .start = start, .step = 1u + (sel >> 4)};
    void *items[BATCH_MAX];
    uint8_t *picked[BATCH_MAX]; /* the live items entries named so far */
    uint8_t *inside[BATCH_MAX]; /* items interior pointers were made from */
    size_t n_picked = 0, n_inside = 0, reports = 0, n_doomed = 0;
    fm_error last = FM_OK;
    memset(g_doomed, 0, m->count);
    for (size_t k = 0; k < n; k++) {
        uint8_t e = ent[k], param = (e >> 3) & 7;
        void *p = NULL;
        fm_error code = FM_OK; /* a live item's entry */
        if (e < bad_from[(sel >> 2) & 3]) {
            if (m->count) {
                p = picked[n_picked] = m->live[order_pick(m, &order, n_picked)].ptr;
                n_picked++;
            }
        } else {
            int kind = e & 7;
            uint8_t *item = m->count ? m->live[(start + k * 7919u) % m->count].ptr : NULL;
            if (kind == 4 && m->count) item = m->live[order_pick(m, &order, n_picked)].ptr;
            if (kind == 5 && n_picked) item = picked[n_picked - 1 - param % n_picked];
            if (kind == 6) {
                if (n_picked) p = picked[n_picked - 1 - param % n_picked];
            } else {
                static const uint8_t helper_kind[7] = {0, 1, 2, 3, 4, 4};
                int hk = kind < 7 ? helper_kind[kind] : (param & 1) && m->other ? 6 : 7;
                uint16_t at = (uint16_t)(off + k * 13);
                if (!bad_pointer(m, hk, item, (uint16_t)(param + k), at, param, &on_stack[param & 3],
                                 &p, &code))
                    p = NULL;
                if (hk == 4 && p) inside[n_inside++] = item;
            }
        }
        items[k] = p;
        if (!p) continue;
        if (code == FM_OK) {
            size_t i = find_live(m, p);
            if (i == SIZE_MAX) FZ_FAIL("model: batch entry %p is no live item", p);
            if (g_doomed[i]) {
                code = FM_ERR_DOUBLE_FREE;
            } else {
                g_doomed[i] = 1;
                verify_item(m, i);
                n_doomed++;
                continue;
            }
        }
        reports++;
        last = code;
    }

    uint64_t reported = fz_err.count;
    fm_clear_error();
    fm_pool_free_n(m->pool, items, n);
    m->work += (uint32_t)n;
    if (fz_err.count - reported != reports || (reports && fz_err.last != last))
        FZ_FAIL("free_n of %zu entries (%zu live items): %llu reports, the last %s; expected "
                "%zu, the last %s", n, n_doomed, (unsigned long long)(fz_err.count - reported),
                fm_error_name(fz_err.last), reports, fm_error_name(last));
    FZ_CHECK_ERR(last);
    m->misuse += reports;
    m->reports += reports;
    fm_pool_stats after = stats_of(m->pool);
    FZ_CHECK_EQ(after.live, before.live - n_doomed);
    FZ_CHECK_EQ(after.total_frees, before.total_frees + n_doomed);
    FZ_CHECK_EQ(after.capacity, before.capacity);
    FZ_CHECK_EQ(after.bytes_reserved, before.bytes_reserved);
    FZ_CHECK_EQ(g_alloc.live_bytes, backing);
    size_t gone = doomed_gone(m);
    for (size_t k = 0; k < gone; k++) FZ_CHECK(!fm_pool_owns(m->pool, g_sorted[k]));
    /* The items interior pointers went into are untouched, if still live. */
    for (size_t k = 0; k < n_inside; k++) {
        size_t i = find_live(m, inside[k]);
        if (i != SIZE_MAX) verify_item_ends(m, i);
    }
    /* Runs of frees refile chunks (full ones have room, emptied ones can be
     * trimmed): fm_pool_check's walk sees whether they did. */
    if (gone) m->sweep.wanted = true;
}

/* ========================================================= capacity, trim */

static void op_reserve(model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    uint32_t want = sel & 1 ? (uint32_t)m->count + fz_u16(in) % 2048 : fz_u32(in);
    fm_pool_stats before = stats_of(m->pool);
    bool grows = want > before.capacity;
    bool refused = grows && (m->growth == FM_GROWTH_FIXED ||
                             (m->max_capacity && want > m->max_capacity));
    if (grows && !refused && (uint64_t)want * m->stride > MEMORY_CAP) return;
    uint64_t failed_calls = g_alloc.failed_calls;
    size_t backing = g_alloc.live_bytes;
    fm_clear_error();
    bool ok = fm_pool_reserve(m->pool, want);
    fm_pool_stats after = stats_of(m->pool);
    if (ok) {
        if (refused) FZ_FAIL("reserve(%u) succeeded past the pool's limit", want);
        FZ_CHECK_ERR(FM_OK);
        FZ_CHECK(after.capacity >= want);
        if (!grows) FZ_CHECK_EQ(after.bytes_reserved, before.bytes_reserved);
        return;
    }
    if (refused) {
        FZ_CHECK_ERR(FM_ERR_POOL_FULL);
    } else {
        FZ_CHECK_ERR(FM_ERR_OUT_OF_MEMORY);
        if (!grows) FZ_FAIL("reserve(%u) below the capacity failed", want);
        if (!m->counting || g_alloc.failed_calls == failed_calls)
            FZ_FAIL("reserve(%u) failed though the allocator refused nothing", want);
    }
    FZ_CHECK_EQ(after.capacity, before.capacity);
    FZ_CHECK_EQ(after.bytes_reserved, before.bytes_reserved);
    FZ_CHECK_EQ(g_alloc.live_bytes, backing);
    m->reports++;
}

static void op_trim(model *m) {
    fm_pool_stats before = stats_of(m->pool);
    size_t backing = g_alloc.live_bytes;
    fm_clear_error();
    size_t released = fm_pool_trim(m->pool);
    FZ_CHECK_ERR(FM_OK);
    fm_pool_stats after = stats_of(m->pool);
    FZ_CHECK_EQ(after.bytes_reserved, before.bytes_reserved - released);
    FZ_CHECK(after.capacity >= m->min_capacity);
    FZ_CHECK_EQ(after.live, before.live);
    FZ_CHECK_EQ(released % before.chunk_bytes, 0);
    if (m->counting) FZ_CHECK(backing - g_alloc.live_bytes >= released);
    if (released) {
        m->trims++;
        m->trimmed += released;
        m->n_freed = m->next_freed = 0; /* their chunks may be gone */
        m->sweep.wanted = true; /* a chunk with a live item in it must not have gone */
        m->last_chunk = 0;      /* a new chunk may come back at a trimmed one's address */
    }
    check_handles(m);
}

/* ================================================================ queries */

static void op_owns(model *m, fz_input *in) {
    for (int k = 0; k < 8; k++) {
        uint32_t i = fz_below(in, (uint32_t)m->count);
        if (m->count) FZ_CHECK(fm_pool_owns(m->pool, m->live[i].ptr));
    }
    for (size_t i = 0; i < m->n_freed; i++) FZ_CHECK(!fm_pool_owns(m->pool, m->freed[i]));
    FZ_CHECK(!fm_pool_owns(m->pool, NULL));
    FZ_CHECK(!fm_pool_owns(m->pool, g_static_block));
    if (m->other) FZ_CHECK(!fm_pool_owns(m->pool, m->other_item));
    if (m->count) FZ_CHECK(!fm_pool_owns(m->pool, (void *)((uintptr_t)m->live[0].ptr + m->stride / 2)));
}

static void op_handle(model *m, fz_input *in) {
    size_t i = fz_below(in, (uint32_t)m->count);
    if (!m->count) return;
    fm_clear_error();
    fm_handle h = fm_pool_handle(m->pool, m->live[i].ptr);
    FZ_CHECK_ERR(FM_OK);
    FZ_CHECK(!fm_handle_is_null(h));
    FZ_CHECK(fm_pool_resolve(m->pool, h) == m->live[i].ptr);
    track_handle(m, h, m->live[i].ptr);
}

static void op_resolve(model *m, fz_input *in) {
    uint8_t flip = fz_u8(in);
    fm_handle made_up = {fz_u64(in)};
    check_handles(m);
    FZ_CHECK(fm_pool_resolve(m->pool, FM_HANDLE_NULL) == NULL);
    /* Another generation of a live handle's slot never resolves. */
    for (size_t i = 0; i < m->n_handles; i++) {
        if (!m->handles[i].expect) continue;
        fm_handle h = {m->handles[i].h.bits ^ (uint64_t)1 << (32 + flip % 31)};
        FZ_CHECK(fm_pool_resolve(m->pool, h) == NULL);
        break;
    }
    /* A made-up handle resolves to nothing or to some live item. */
    void *got = fm_pool_resolve(m->pool, made_up);
    if (got && find_live(m, got) == SIZE_MAX)
        FZ_FAIL("made-up handle %#llx resolves to %p, not a live item",
                (unsigned long long)made_up.bits, got);
}

/* ======================================================= reference counts */

static void op_retain(model *m, fz_input *in) {
    size_t i = fz_below(in, (uint32_t)m->count);
    if (!m->count) return;
    uint64_t failed_calls = g_alloc.failed_calls;
    fm_clear_error();
    fm_pool_retain(m->pool, m->live[i].ptr);
    if (fm_last_error() == FM_ERR_OUT_OF_MEMORY) {
        /* The chunk's count array could not be had: nothing changes. */
        if (g_alloc.failed_calls == failed_calls) FZ_FAIL("retain ran out of memory unprompted");
        m->reports++;
    } else {
        FZ_CHECK_ERR(FM_OK);
        m->live[i].refs++;
    }
    FZ_CHECK_EQ(fm_pool_refcount(m->pool, m->live[i].ptr), m->live[i].refs);
}

static void op_release(model *m, fz_input *in) {
    size_t i = fz_below(in, (uint32_t)m->count);
    bool self_free = m->hooks && (fz_u8(in) & 1);
    if (!m->count) return;
    uint8_t *p = m->live[i].ptr;
    uint32_t refs = m->live[i].refs;
    if (refs == 1) verify_item(m, i);
    fm_clear_error();
    m->dtor_expect = p;
    m->dtor_frees_item = refs == 1 && self_free;
    bool freed = fm_pool_release(m->pool, p);
    m->dtor_expect = NULL;
    m->dtor_frees_item = false;
    if (refs > 1) {
        FZ_CHECK(!freed);
        FZ_CHECK_ERR(FM_OK);
        m->live[i].refs--;
        FZ_CHECK_EQ(fm_pool_refcount(m->pool, p), m->live[i].refs);
        return;
    }
    FZ_CHECK(freed);
    if (m->hooks) m->dtors++;
    if (self_free) {
        FZ_CHECK_ERR(FM_ERR_DOUBLE_FREE);
        m->misuse++;
        m->reports++;
    } else {
        FZ_CHECK_ERR(FM_OK);
    }
    remove_live(m, i);
    item_gone(m, p);
}

static void op_refcount(model *m, fz_input *in) {
    size_t i = fz_below(in, (uint32_t)m->count);
    if (!m->count) return;
    fm_clear_error();
    FZ_CHECK_EQ(fm_pool_refcount(m->pool, m->live[i].ptr), m->live[i].refs);
    FZ_CHECK_ERR(FM_OK);
}

/* ================================================================ foreach */

/* A walk either frees some of the items it is given or allocates now and
 * then (items allocated during the walk may or may not be visited; growth
 * in the middle of a walk moves the pool's records). */
typedef struct walk {
    model *m;
    size_t base;       /* live items when the walk began: live[0, base) */
    size_t visits;
    size_t old_visits; /* of those items */
    bool free_some;
    uint8_t pick;
    uint32_t alloc_every; /* 0: never */
    uint32_t allocs_left;
} walk;

/* Every visited item is a live one, visited once, that still has its
 * pattern at both ends (all of it when the walk frees it). */
static void walk_item(void *item, void *user) {
    walk *w = user;
    model *m = w->m;
    w->visits++;
    size_t j = find_live(m, item); /* a walk's items stay in the model until it ends */
    if (j == SIZE_MAX) FZ_FAIL("foreach visited %p, not a live item", item);
    if (j < w->base) w->old_visits++;
    if (g_visited[j]++) FZ_FAIL("foreach visited %p twice", item);
    if (w->free_some && j < w->base && ((m->live[j].seed ^ w->pick) & 1)) {
        verify_item(m, j);
        fm_pool_free(m->pool, item); /* fn may free the item it is given */
        g_doomed[j] = 1;
    } else {
        verify_item_ends(m, j);
    }
    if (w->alloc_every && w->allocs_left && w->visits % w->alloc_every == 0) {
        w->allocs_left--;
        if (alloc_one(m, false)) g_visited[m->count - 1] = g_doomed[m->count - 1] = 0;
    }
}

/* sel: bit 0 free some (chosen by bit 2), or with bit 1 set, allocate
 * after every (sel >> 2 & 7) + 1 visits instead. */
static void op_foreach(model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    walk w = {.m = m, .base = m->count, .pick = sel >> 2};
    if (sel & 2) {
        w.alloc_every = 1 + (sel >> 2 & 7);
        w.allocs_left = 16;
    } else {
        w.free_some = sel & 1;
    }
    memset(g_visited, 0, m->count);
    memset(g_doomed, 0, m->count);
    fm_clear_error();
    fm_pool_foreach(m->pool, walk_item, &w);
    m->work += (uint32_t)(w.visits + 3) / 4; /* a visit costs far less than an alloc */
    if (!w.alloc_every) FZ_CHECK_ERR(FM_OK); /* a refused alloc sets it */
    FZ_CHECK_EQ(w.old_visits, w.base);
    doomed_gone(m);
}

/* ================================================================= reset */

static void reset_from_walk(void *item, void *user) {
    model *m = user;
    (void)item;
    fm_clear_error();
    fm_pool_reset(m->pool);
    FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
    m->misuse++;
    m->reports++;
}

/* sel bit 0: a reset from inside fm_pool_foreach, refused at every visit,
 * nothing freed. Otherwise every live item goes at once (its dtor run): the
 * chunks stay, the counters count the frees, every tracked handle is stale,
 * and each item is poisoned and dead to free (the freed ring holds some). */
static void op_reset(model *m, fz_input *in) {
    uint8_t sel = fz_u8(in);
    fm_pool_stats before = stats_of(m->pool);
    size_t backing = g_alloc.live_bytes;
    if (sel & 1) {
        fm_pool_foreach(m->pool, reset_from_walk, m);
        m->work += (uint32_t)(m->count + 3) / 4;
        check_unchanged(m, &before, backing);
        return;
    }
    memset(g_visited, 0, m->count);
    m->destroying = true;
    fm_clear_error();
    fm_pool_reset(m->pool);
    m->destroying = false;
    FZ_CHECK_ERR(FM_OK);
    m->work += (uint32_t)(m->count + 3) / 4;
    fm_pool_stats after = stats_of(m->pool);
    FZ_CHECK_EQ(after.live, 0);
    FZ_CHECK_EQ(after.total_frees, before.total_frees + m->count);
    FZ_CHECK_EQ(after.chunk_count, before.chunk_count);
    FZ_CHECK_EQ(after.bytes_reserved, before.bytes_reserved);
    FZ_CHECK(after.capacity <= before.capacity); /* only slots out of generations retire */
    FZ_CHECK_EQ(g_alloc.live_bytes, backing);
    if (m->hooks) {
        for (size_t i = 0; i < m->count; i++)
            if (!g_visited[i]) FZ_FAIL("reset ran no dtor on live item %p", (void *)m->live[i].ptr);
        m->dtors += m->count;
    }
    m->resets++;
    m->capacity = after.capacity;
    memset(g_doomed, 1, m->count); /* all out of the model first: see doomed_gone */
    doomed_gone(m);
    check_handles(m);
}

/* ================================================================= create */

/* The header's pool, or false when the desc is one create must reject (then
 * that rejection has been checked). */
static bool create_pool(model *m, fz_input *in) {
    uint8_t b0 = fz_u8(in);
    uint16_t size_sel = fz_u16(in);
    uint8_t init_sel = fz_u8(in), max_sel = fz_u8(in), grow_sel = fz_u8(in), flags = fz_u8(in);
    uint8_t chunk_sel = fz_u8(in);

    fm_pool_desc d = {.name = "fuzz"};
    bool valid = true;
    d.growth = (fm_growth)(b0 & 3);
    if (d.growth == FM_GROWTH_COUNT) { /* 3: geometric with a factor of its own */
        d.growth = FM_GROWTH_GEOMETRIC;
        d.grow_factor = 1.0f + (float)grow_sel / 16.0f; /* 0: exactly 1, rejected */
        if (grow_sel == 0) valid = false;
    } else if (d.growth == FM_GROWTH_LINEAR) {
        d.grow_step = grow_sel;
    }
    uint32_t align_sel = (b0 >> 2) & 15;
    if (align_sel <= 12) d.item_align = (size_t)1 << align_sel;
    else if (align_sel == 15) {
        d.item_align = grow_sel & 1 ? 8192 : 24;
        valid = false;
    }
    d.item_size = 1 + size_sel % 1024;
    if (size_sel == 0xFFFF) {
        d.item_size = 0;
        valid = false;
    } else if (size_sel == 0xFFFE) {
        d.item_size = FM_POOL_MAX_ITEM_SIZE + 1;
        valid = false;
    }
    d.initial_capacity = init_sel & 0x80 ? (init_sel & 0x7Fu) * 64u : init_sel;
    d.max_capacity = max_sel & 0x80 ? 0 : max_sel;
    if (d.max_capacity && d.initial_capacity > d.max_capacity) valid = false;
    /* chunk_sel bits 0-2, k > 0: chunks of 4096 << (k - 1) bytes (8192 at
     * least for items aligned to 4096, so one item and its metadata fit);
     * bit 3: a chunk_bytes the check refuses (2048 with bit 4, else 3000). */
    if (chunk_sel & 8) {
        d.chunk_bytes = chunk_sel & 0x10 ? 2048 : 3000;
        valid = false;
    } else if (chunk_sel & 7) {
        d.chunk_bytes = (size_t)4096 << ((chunk_sel & 7) - 1);
        if (d.item_align == 4096 && d.chunk_bytes < 8192) d.chunk_bytes = 8192;
    }
    m->hooks = b0 & 0x40;
    if (m->hooks) {
        d.ctor = ctor_hook;
        d.dtor = dtor_hook;
        d.user = m;
    }
    m->counting = !(b0 & 0x80);
    if (m->counting) d.allocator = fm_test_allocator_get(&g_alloc);
    d.silent_destroy = flags & 1;
    d.prefault = (flags & 6) == 6; /* rarely: prefaulting costs page faults up front */
    /* The same core behind the lock, with hot's current chunk kept empty:
     * every call goes into the library (batches included). */
    if (flags & 0x80) d.sync = FM_SYNC_MUTEX;
    m->silent = d.silent_destroy;

    if ((flags & 8) && valid) { /* a second pool of the same geometry, for foreign items */
        m->other = fm_pool_create(&(fm_pool_desc){.name = "fuzz_other",
                                                  .item_size = d.item_size,
                                                  .item_align = d.item_align,
                                                  .silent_destroy = true,
                                                  .allocator = d.allocator});
        FZ_CHECK(m->other != NULL);
        m->other_item = fm_pool_alloc(m->other);
        FZ_CHECK(m->other_item != NULL);
    }

    uint32_t fail_at = (flags >> 4) & 7;
    if (m->counting && fail_at) fz_alloc_fail(&g_alloc, fail_at, false);
    uint64_t failed_calls = g_alloc.failed_calls;
    size_t backing = g_alloc.live_bytes;
    fm_clear_error();
    m->pool = fm_pool_create(&d);
    fz_alloc_fail(&g_alloc, 0, false);
    if (!valid) {
        if (m->pool) FZ_FAIL("create accepted an invalid desc");
        FZ_CHECK_ERR(FM_ERR_INVALID_ARG);
        FZ_CHECK_EQ(fz_err.count, 1);
        FZ_CHECK_EQ(g_alloc.live_bytes, backing);
        return false;
    }
    if (!m->pool) {
        FZ_CHECK_ERR(FM_ERR_OUT_OF_MEMORY);
        if (g_alloc.failed_calls == failed_calls) FZ_FAIL("create failed unprompted");
        FZ_CHECK_EQ(fz_err.count, 1);
        FZ_CHECK_EQ(g_alloc.live_bytes, backing);
        return false;
    }
    FZ_CHECK_ERR(FM_OK);
    FZ_CHECK_EQ(fz_err.count, 0);

    fm_pool_desc r = fm_pool_get_desc(m->pool);
    fm_pool_stats s = stats_of(m->pool);
    m->item_size = d.item_size;
    m->align = d.item_align ? d.item_align : FM_DEFAULT_ALIGN;
    m->stride = s.stride;
    m->chunk_bytes = s.chunk_bytes;
    m->growth = d.growth;
    m->max_capacity = d.max_capacity;
    m->min_capacity = r.initial_capacity;
    FZ_CHECK_EQ(r.item_align, m->align);
    FZ_CHECK(m->stride >= m->item_size && m->stride >= 2 && m->stride % m->align == 0);
    FZ_CHECK(s.capacity >= r.initial_capacity);
    if (d.initial_capacity) FZ_CHECK_EQ(r.initial_capacity, d.initial_capacity);
    if (m->max_capacity) FZ_CHECK(r.initial_capacity <= m->max_capacity);
    FZ_CHECK(strcmp(fm_pool_name(m->pool), "fuzz") == 0);
    return true;
}

static void destroy_pool(model *m, bool free_all) {
    check_counters(m);
    full_sweep(m);
    if (free_all) {
        while (m->count) free_one(m, m->count - 1, 0);
    }
    memset(g_visited, 0, m->count);
    m->destroying = true;
    fm_clear_error();
    fm_pool_destroy(m->pool);
    m->pool = NULL;
    if (m->count && !m->silent) {
        FZ_CHECK_ERR(FM_ERR_LEAK);
        m->reports++;
    } else {
        FZ_CHECK_ERR(FM_OK);
    }
    FZ_CHECK_EQ(fz_err.count, m->reports);
    if (m->hooks) FZ_CHECK_EQ(m->dtor_calls, m->dtors + m->count);
    m->destroying = false;
}

/* ================================================================= driver */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    model *m = &g_m;
    memset(m, 0, sizeof *m);
    map_begin();
    fz_errors_begin();
    fz_alloc_begin(&g_alloc, (size_t)16 << 20, (size_t)MEMORY_CAP * 4);
    fz_input in = {data, size};

    if (create_pool(m, &in)) {
        bool free_all = false;
        while (m->work < WORK_BUDGET && fz_more(&in)) {
            uint8_t code = fz_u8(&in);
            m->work++;
            switch (code % 23) {
            case 0: case 1: case 2: op_alloc(m, &in); break;
            case 3: case 4: op_free(m, &in); break;
            case 5: case 6: op_bad_pointer(m, &in); break;
            case 7: op_reserve(m, &in); break;
            case 8: op_trim(m); break;
            case 9: op_owns(m, &in); break;
            case 10: op_handle(m, &in); break;
            case 11: op_resolve(m, &in); break;
            case 12: op_retain(m, &in); break;
            case 13: op_release(m, &in); break;
            case 14: op_refcount(m, &in); break;
            case 15: op_foreach(m, &in); break;
            case 16: m->sweep.wanted = true; break;
            case 17: { /* faults: the nth backing call from now, or all from it */
                uint8_t sel = fz_u8(&in);
                fz_alloc_fail(&g_alloc, sel & 0x80 ? 0 : 1 + (sel & 3), sel & 0x10);
                break;
            }
            case 18: free_all = !free_all; break;
            case 20: op_alloc_n(m, &in); break;
            case 21: op_free_n(m, &in); break;
            case 22: op_reset(m, &in); break;
            default: { /* a run of mixed allocs and frees, to move through chunks */
                uint8_t sel = fz_u8(&in);
                for (int k = 0; k < 16; k++) {
                    if ((sel >> (k & 7)) & 1) alloc_one(m, false);
                    else if (m->count) free_one(m, (size_t)(k * 7919u) % m->count, 0);
                }
                break;
            }
            }
            after_op(m);
        }
        fz_alloc_fail(&g_alloc, 0, false);
        destroy_pool(m, free_all);
    }
    if (m->other) {
        fm_pool_destroy(m->other);
        m->other = NULL;
    }
    fz_alloc_check_clean(&g_alloc);
    return 0;
}
