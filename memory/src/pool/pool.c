/* pool/pool.c: the public entry points and the dispatch on the sync policy:
 * create, destroy, owner checks and locking around the core, queries.
 */
#ifndef FM__POOL_UNIT
#error "pool/pool.c is compiled as part of pool/unit.c"
#endif

#include "pool/pool_internal.h"

/* ================================================================ threads
 *
 * FM_SYNC_NONE: nothing here but, in debug builds, the owner check.
 * MUTEX: every entry point takes p->lock around the single-threaded code.
 * THREAD_CACHE and LOCKFREE: slots leave the single-threaded core ("the
 * depot") in batches under p->lock and are then handed out and taken back
 * without it, from per-thread magazines or from one shared lock-free stack.
 * The core counts those slots as live; their meta words say free (live bit
 * clear, generation bumped), so double frees and stale handles are caught
 * exactly as in the core. The core's counters then describe slots out of the
 * depot; the user's counters are kept beside, per thread (see
 * THREAD_CACHE's entries), and summed when read. */

static uint64_t fm__pool_ids; /* source of fm_pool.id (atomic) */

static bool fm__cached_policy(const fm_pool *p) {
    return p->sync == FM_SYNC_THREAD_CACHE || p->sync == FM_SYNC_LOCKFREE;
}

static void fm__lock(const fm_pool *p) {
    if (p->sync != FM_SYNC_NONE) fm__mutex_lock(&((fm_pool *)p)->lock);
}
static void fm__unlock(const fm_pool *p) {
    if (p->sync != FM_SYNC_NONE) fm__mutex_unlock(&((fm_pool *)p)->lock);
}

/* ---- FM_SYNC_NONE owner (debug builds) */

#ifdef FM__THREAD_CHECKS
static FM__THREAD_LOCAL char fm__thread_token_tls;
/* The address of a thread-local byte names the calling thread. */
static uintptr_t fm__self(void) { return (uintptr_t)&FM__TLS(fm__thread_token_tls); }
#endif

/* true when the calling thread may use p: it owns p, or p had no owner and
 * the calling thread claims it. Otherwise FM_ERR_WRONG_THREAD is reported and
 * nothing of p changes (no counter either: that write would race). */
static bool fm__owner_ok(const fm_pool *p, const char *op) {
#ifdef FM__THREAD_CHECKS
    if (!p || p->sync != FM_SYNC_NONE) return true;
    uintptr_t me = fm__self();
    uintptr_t owner = FM__ATOMIC_LOAD(&p->owner, ACQUIRE);
    if (FM__LIKELY(owner == me)) return true;
    if (owner == 0 && FM__ATOMIC_CAS_STRONG(&((fm_pool *)p)->owner, &owner, me, ACQ_REL, ACQUIRE))
        return true;
    fm__report(FM_ERR_WRONG_THREAD,
               "pool '%s': %s from a thread that does not own it (an FM_SYNC_NONE pool "
               "belongs to one thread at a time: hand it over with "
               "fm_pool_release_owner_thread / fm_pool_set_owner_thread)",
               p->name, op);
    return false;
#else
    (void)p, (void)op;
    return true;
#endif
}

/* Around the single-threaded code of an entry point: the owner check (NONE)
 * or the lock (every other policy). false: refused and reported. */
static bool fm__enter(const fm_pool *p, const char *op) {
    if (p->sync == FM_SYNC_NONE) return fm__owner_ok(p, op);
    fm__lock(p);
    return true;
}
static void fm__leave(const fm_pool *p) { fm__unlock(p); }

void fm_pool_set_owner_thread(fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", );
#ifdef FM__THREAD_CHECKS
    FM__ATOMIC_STORE(&pool->owner, fm__self(), RELEASE);
#endif
}

void fm_pool_release_owner_thread(fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", );
#ifdef FM__THREAD_CHECKS
    if (!fm__owner_ok(pool, "release_owner_thread")) return;
    FM__ATOMIC_STORE(&pool->owner, (uintptr_t)0, RELEASE);
#endif
}

/* ---- dispatch */

/* Never inlined: the FM_SYNC_NONE paths that test for it stay as lean as
 * they were before policies existed (no registers saved for these). */
FM__NOINLINE static void *fm__mutex_alloc(fm_pool *p) {
    fm__mutex_lock(&p->lock);
    void *item = fm__alloc_core(p);
    fm__mutex_unlock(&p->lock);
    return item;
}

FM__NOINLINE static void fm__mutex_free(fm_pool *p, void *item, const char *op) {
    fm__mutex_lock(&p->lock);
    fm__free_checked(p, item, op);
    fm__mutex_unlock(&p->lock);
}

/* The alloc of a policy other than NONE. */
static inline void *fm__policy_alloc(fm_pool *p) {
    if (FM__LIKELY(p->sync == FM_SYNC_THREAD_CACHE)) return fm__tc_alloc(p);
    if (p->sync == FM_SYNC_LOCKFREE) return fm__lf_alloc(p);
    return fm__mutex_alloc(p);
}

/* hot.sync != NONE: another policy, or a watched pool (pool/watch.c). */
FM__NOINLINE static void *fm__sync_alloc(fm_pool *p) {
    if (FM__UNLIKELY(p->hot.sync & FM__SYNC_WATCHED)) return fm__watch_alloc(p);
    return fm__policy_alloc(p);
}

FM__NOINLINE static void fm__sync_free(fm_pool *p, void *item, const char *op) {
    if (!item) return;
    if (FM__LIKELY(p->sync == FM_SYNC_THREAD_CACHE)) fm__tc_free(p, item, op);
    else if (p->sync == FM_SYNC_LOCKFREE) fm__lf_free(p, item, op);
    else fm__mutex_free(p, item, op);
}

/* Items live for the user: the core's count, or under THREAD_CACHE and
 * LOCKFREE the user's allocs minus frees (caches' free slots excluded). */
static void fm__user_counts(const fm_pool *p, uint64_t *allocs, uint64_t *frees) {
    if (fm__cached_policy(p)) {
        uint64_t a = p->tc_gone_allocs, f = p->tc_gone_frees;
        for (const fm__tc_entry *e = p->tc_entries; e; e = e->next) {
            f += fm__entry_frees(p, e);
            a += FM__ATOMIC_LOAD(&e->allocs, ACQUIRE);
        }
        *allocs = a;
        *frees = f;
    } else {
        *allocs = p->cs->total_allocs;
        *frees = p->cs->total_allocs - fm__live(p);
    }
}

static uint64_t fm__user_live(const fm_pool *p) {
    uint64_t allocs, frees;
    fm__lock(p);
    fm__user_counts(p, &allocs, &frees);
    fm__unlock(p);
    return allocs > frees ? allocs - frees : 0;
}

/* For the tag's stats (tag.h): as fm_pool_get_stats counts live items, but
 * an FM_SYNC_NONE pool is read without its owner check, from whichever
 * thread asks (tag.h says when the figure is exact). */
uint64_t fm__pool_live_bytes(fm_pool *pool) {
    return fm__user_live(pool) * pool->item_size;
}

/* ====================================================== alloc and free */

void *fm__pool_alloc_slow(fm_pool *pool) {
    if (FM__UNLIKELY(pool->hot.sync != FM_SYNC_NONE)) return fm__sync_alloc(pool);
#ifdef FM__THREAD_CHECKS
    if (!fm__owner_ok(pool, "alloc")) return NULL;
#endif
    return fm__alloc_core(pool);
}

void *fm_pool_alloc_at(fm_pool *pool, const char *file, int line) {
    FM__REFUSE_NULL(pool, "pool", NULL);
    void *item = fm__pool_alloc_slow(pool);
#ifdef FM_TRACK_SITES
    bool lock = !fm__cached_policy(pool);
    if (item && (!lock || fm__enter(pool, "alloc"))) {
        fm__record_site(pool, item, file, line);
        if (lock) fm__leave(pool);
    }
#else
    (void)file, (void)line;
#endif
    return item;
}

void *fm_pool_alloc(fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", NULL);
#ifdef FM_TRACK_SITES
    return fm_pool_alloc_at(pool, NULL, 0);
#else
    return fm__pool_alloc_slow(pool);
#endif
}

static size_t fm__alloc_n(fm_pool *pool, void **out, size_t n) {
    if (n && !out) {
        fm__report(FM_ERR_INVALID_ARG, "pool '%s': fm_pool_alloc_n of %zu items into NULL",
                   pool->name, n);
        return 0;
    }
    /* hot.sync is the policy, but for watched pools (pool/watch.c). */
    if (FM__LIKELY(pool->hot.sync <= FM_SYNC_MUTEX)) return fm__alloc_n_serial(pool, out, n);
    if (pool->hot.sync & FM__SYNC_WATCHED) return fm__watch_alloc_n(pool, out, n);
    return fm__alloc_n_cached(pool, out, n);
}

/* The policies' batches, NONE and MUTEX, then THREAD_CACHE and LOCKFREE.
 * Inlined at each call (here and in the watch) with the batch loops, as
 * when they had one call each. */
static inline FM__ALWAYS_INLINE size_t fm__alloc_n_serial(fm_pool *pool, void **out, size_t n) {
    if (!fm__enter(pool, "alloc")) return 0;
    size_t got = fm__alloc_batch(pool, out, n);
    fm__leave(pool);
    return got;
}
static inline FM__ALWAYS_INLINE size_t fm__alloc_n_cached(fm_pool *pool, void **out, size_t n) {
    size_t got = 0;
    for (; got < n; got++) {
        void *item = fm__policy_alloc(pool);
        if (!item) break; /* out[got] stays as it was, as under NONE and MUTEX */
        out[got] = item;
    }
    return got;
}

size_t fm_pool_alloc_n_at(fm_pool *pool, void **out, size_t n, const char *file, int line) {
    FM__REFUSE_NULL(pool, "pool", 0);
    size_t got = fm__alloc_n(pool, out, n);
#ifdef FM_TRACK_SITES
    bool lock = !fm__cached_policy(pool);
    if (got && (!lock || fm__enter(pool, "alloc"))) {
        for (size_t i = 0; i < got; i++) fm__record_site(pool, out[i], file, line);
        if (lock) fm__leave(pool);
    }
#else
    (void)file, (void)line;
#endif
    return got;
}

size_t fm_pool_alloc_n(fm_pool *pool, void **out, size_t n) {
    FM__REFUSE_NULL(pool, "pool", 0);
#ifdef FM_TRACK_SITES
    return fm_pool_alloc_n_at(pool, out, n, NULL, 0);
#else
    return fm__alloc_n(pool, out, n);
#endif
}

void fm__pool_free_slow(fm_pool *pool, void *item) {
#ifndef FM__THREAD_CHECKS
    /* First: in a pool of any other policy hot has no current chunk. */
    if (FM__LIKELY(fm__free_park_leaf(pool, item))) return;
#endif
    if (FM__UNLIKELY(pool->hot.sync != FM_SYNC_NONE)) {
        if (FM__UNLIKELY(pool->hot.sync & FM__SYNC_WATCHED)) fm__watch_free(pool, item);
        else fm__sync_free(pool, item, "free");
        return;
    }
#ifdef FM__THREAD_CHECKS
    if (!fm__owner_ok(pool, "free")) return;
    if (FM__LIKELY(fm__free_park_leaf(pool, item))) return;
#endif
    fm__free_checked(pool, item, "free");
}

/* The out-of-line free: the same fast path as detail/pool.h's inline one, plus the
 * debug fill and sanitizer annotations. Under sync != NONE hot's current
 * chunk is empty, so every free goes through fm__pool_free_slow. */
void fm_pool_free(fm_pool *pool, void *item) {
    FM__REFUSE_NULL(pool, "pool", );
#ifdef FM__THREAD_CHECKS
    if (pool->hot.sync == FM_SYNC_NONE && !fm__owner_ok(pool, "free")) return;
#endif
    if (FM__LIKELY(fm__free_current(pool, &pool->hot, item))) return;
    fm__pool_free_slow(pool, item);
}

void fm_pool_free_n(fm_pool *pool, void *const *items, size_t n) {
    FM__REFUSE_NULL(pool, "pool", );
    if (n && !items) {
        fm__report(FM_ERR_INVALID_ARG, "pool '%s': fm_pool_free_n of %zu items from NULL",
                   pool->name, n);
        return;
    }
    if (FM__LIKELY(pool->hot.sync <= FM_SYNC_MUTEX)) fm__free_n_serial(pool, items, n);
    else if (pool->hot.sync & FM__SYNC_WATCHED) fm__watch_free_n(pool, items, n);
    else fm__free_n_cached(pool, items, n);
}

/* The policies' batches (inlined as fm__alloc_n_serial and _cached). */
static inline FM__ALWAYS_INLINE void fm__free_n_serial(fm_pool *pool, void *const *items, size_t n) {
    if (!fm__enter(pool, "free")) return;
    fm__free_batch(pool, items, n);
    fm__leave(pool);
}
static inline FM__ALWAYS_INLINE void fm__free_n_cached(fm_pool *pool, void *const *items, size_t n) {
    for (size_t i = 0; i < n; i++) fm__sync_free(pool, items[i], "free");
}

void *fm_pool_new_at(fm_pool *pool, const char *file, int line) {
    FM__REFUSE_NULL(pool, "pool", NULL);
    void *item = fm_pool_alloc_at(pool, file, line);
    if (item && pool->desc.ctor) pool->desc.ctor(item, pool->desc.user);
    return item;
}

void *fm_pool_new(fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", NULL);
    void *item = fm_pool_alloc(pool);
    if (item && pool->desc.ctor) pool->desc.ctor(item, pool->desc.user);
    return item;
}

/* ================================================================ create */

/* Bytes from one item to the next: the item (4 bytes at least, so a chunk
 * of up to 64 KiB keeps under 65536 slots) rounded up to its alignment. */
static uint32_t fm__stride_of(size_t item_size, size_t item_align) {
    size_t stride = fm_align_up(item_size > sizeof(uint32_t) ? item_size : sizeof(uint32_t),
                                item_align);
#ifdef FM__ASAN
    /* ASan keeps one shadow byte per 8-byte granule, telling how many of its
     * first bytes are addressable, so items sharing a granule cannot be
     * poisoned apart: a freed 12-byte item's bytes 8..11 stayed writable
     * while the item after it lived. Slots of whole granules, at granule
     * starts (fm__layout), are poisoned whole. */
    stride = fm_align_up(stride, 8);
#endif
    return (uint32_t)stride;
}

/* The rule for desc.chunk_bytes (a valid item size and alignment checked
 * before); NULL when it is kept. */
static const char *fm__chunk_bytes_problem(const fm_pool_desc *d) {
    size_t cb = d->chunk_bytes;
    if (cb == 0) return NULL;
    if (!FM_IS_POW2(cb) || cb < FM_POOL_MIN_CHUNK_BYTES || cb > FM_POOL_MAX_CHUNK_BYTES)
        return "chunk_bytes must be 0 or a power of two from 4096 to 2^30";
    size_t align = fm__def(d->item_align, FM_DEFAULT_ALIGN);
    fm__chunk_layout lay;
    if (fm__layout(cb, fm__stride_of(d->item_size, align), align, &lay) == 0)
        return "chunk_bytes too small to hold one item and its metadata";
    return NULL;
}

fm_error fm_pool_desc_check(const fm_pool_desc *d, char *msg, size_t msg_len) {
    if (!d) return fm__desc_verdict("fm_pool_desc_check", NULL, msg, msg_len);
    const char *why = NULL;
    if (d->item_size == 0) why = "item_size is 0";
    else if (d->item_size > FM_POOL_MAX_ITEM_SIZE) why = "item_size above FM_POOL_MAX_ITEM_SIZE";
    else if (d->item_align && !FM_IS_POW2(d->item_align)) why = "item_align is not a power of two";
    else if (d->item_align > FM_MAX_ALIGN) why = "item_align above 4096";
    else if ((unsigned)d->growth >= FM_GROWTH_COUNT) why = "unknown growth policy";
    else if (d->grow_factor != 0.0f && !(d->grow_factor > 1.0f && d->grow_factor <= 64.0f))
        why = "grow_factor must be in (1, 64]";
    else if ((unsigned)d->sync >= FM_SYNC_COUNT) why = "unknown sync policy";
    else if ((unsigned)d->timing >= FM_POOL_TIMING_COUNT) why = "unknown timing mode";
    else if (!fm_allocator_valid(&d->allocator))
        why = "allocator needs both alloc and free";
    else if (d->max_capacity && d->initial_capacity > d->max_capacity)
        why = "initial_capacity above max_capacity";
    else why = fm__chunk_bytes_problem(d);
    return fm__desc_verdict(NULL, why, msg, msg_len);
}

/* Cold small pools: the first allocations of a fresh pool cost what later
 * ones do. The first chunk becomes current now (no chunk switch in the first
 * allocation) and, when it is mapped for the pool and at most
 * FM__PREFAULT_FIRST bytes, its pages are made resident now (no page fault
 * in the first allocation of each page: a few hundred ns to several us
 * each, measured by fm-bench's sparse experiment). A bigger first chunk
 * (a pool sized for many items) keeps its pages untouched until used, or
 * until desc.prefault has them all touched at growth. */
static void fm__open_first_chunk(fm_pool *p) {
    if (!p->spans || !fm__next_chunk(p)) return;
    uint8_t *base = (uint8_t *)p->cs->cur_base;
    if (p->use_os && !p->desc.prefault && p->chunk_bytes <= FM__PREFAULT_FIRST) {
        /* The slots were poisoned at growth: the tools must not see this. */
        uint8_t *slots0 = base + p->hot.slots_off;
        size_t slots_bytes = (size_t)p->hot.per_chunk * p->hot.stride;
        FM__UNPOISON(slots0, slots_bytes);
        FM__VG_DEFINED(slots0, slots_bytes);
        fm__os_prefault(base, p->chunk_bytes);
        FM__POISON(slots0, slots_bytes);
        FM__VG_NOACCESS(slots0, slots_bytes);
    }
}

fm_pool *fm_pool_create(const fm_pool_desc *desc) {
    if (!desc) {
        fm__report(FM_ERR_INVALID_ARG, "pool: fm_pool_create(NULL)");
        return NULL;
    }
    const char *name = fm__def(desc->name, fm__def(desc->type_name, "pool"));
    char why[128];
    if (!fm__desc_accepted(fm_pool_desc_check(desc, why, sizeof why), "pool", name, why)) return NULL;
    fm_clock_init();

    size_t self_bytes;
    fm_pool *p = FM__OBJECT_NEW(fm_pool, &desc->allocator, "pool", name, &self_bytes);
    if (!p) return NULL;
    p->desc = *desc;
    p->desc.name = p->name;
    p->desc.item_align = fm__def(desc->item_align, FM_DEFAULT_ALIGN);
    p->desc.grow_factor = desc->grow_factor != 0.0f ? desc->grow_factor : 2.0f;
    p->self_bytes = self_bytes;
    p->bytes_reserved = self_bytes;
    p->item_size = (uint32_t)desc->item_size;
    p->item_align = (uint32_t)p->desc.item_align;
    p->hot.stride = fm__stride_of(p->item_size, p->item_align);
    fm__geometry(p);
    p->desc.chunk_bytes = p->chunk_bytes;
    p->desc.grow_step = fm__def(desc->grow_step, p->hot.per_chunk);
    p->desc.initial_capacity = fm__def(desc->initial_capacity, p->hot.per_chunk);
    if (p->desc.max_capacity && p->desc.initial_capacity > p->desc.max_capacity)
        p->desc.initial_capacity = p->desc.max_capacity;
    /* Only a pool that may grow maps a growth window (see fm__window_take). */
    if (p->desc.growth == FM_GROWTH_FIXED ||
        (p->desc.max_capacity && p->desc.max_capacity <= p->desc.initial_capacity))
        p->win_chunks = 0;
    /* Chunks smaller than a page come from the C heap: a mapping is released
     * in whole pages. */
    const fm__os_caps *caps = fm__os_get_caps();
    p->use_os = fm__allocator_is_system(&desc->allocator) && caps->has_virtual_reserve &&
                p->chunk_bytes % caps->page_size == 0;
    p->os_chunks_alone = p->use_os && caps->has_partial_release;
    p->sync = desc->sync;
    p->watch_scale = desc->timing == FM_POOL_TIMING_EVERY_CALL ? 1u
                     : desc->timing == FM_POOL_TIMING_SAMPLED  ? FM_POOL_TIMING_SAMPLE
                                                               : 0u;
    bool watched = p->watch_scale != 0 || FM__HOOKS;
    p->hot.sync = (uint32_t)desc->sync | (watched ? FM__SYNC_WATCHED : 0u);
    p->id = (FM__ATOMIC_FETCH_ADD(&fm__pool_ids, 1, RELAXED) + 1);
    /* Where every call must reach the annotations (fm__calls_annotated) or
     * pool/watch.c, the inline paths find nothing to take: no magazine
     * (tc_id) and, below, no current chunk in hot. */
    bool library_only = fm__calls_annotated() || watched;
    p->hot.tc_id = p->sync == FM_SYNC_THREAD_CACHE && !library_only ? p->id : UINT64_MAX;
#ifdef FM__THREAD_CHECKS
    p->owner = fm__self();
#endif
    p->hot.cur_base = 1;
    p->hot.bases = fm__no_bases + 1;
    p->hot.cur_next_slot = NULL;
    p->hot.cur_next = FM__NONE;
    p->hot.cur_last = NULL;
    p->hot.cur_top = 0;
    /* The core works on hot (NONE) or on the shadow; hot's current chunk
     * stays empty (cur_next_slot NULL, cur_top 0, cur_bump 0) for every other
     * policy, and for NONE where every call must reach the annotations
     * (fm__calls_annotated) or the watch. */
    p->shadow = p->hot;
    p->cs = p->sync == FM_SYNC_NONE && !library_only ? &p->hot : &p->shadow;
    p->cur_idx = FM__NONE;
    p->lf.head = FM__NONE;
    p->dm = p->dm_first;
    p->dm_mask = FM__DM_SLOTS - 1;
    if (p->sync != FM_SYNC_NONE && !fm__mutex_init(&p->lock, true)) {
        fm__report(FM_ERR_OUT_OF_MEMORY, "pool '%s': cannot create its lock", name);
        fm_allocator_free(&desc->allocator, p, self_bytes);
        return NULL;
    }
    p->unused_head = FM__NONE;
    fm__list_init(&p->partial);
    fm__list_init(&p->empty);
    /* Handles of this pool carry its random key in their generation bits, so
     * those of another pool, or of an earlier pool at this address, do not
     * match. */
    uint64_t seed = ((uint64_t)(uintptr_t)p ^ fm_clock_now()) * 0x9E3779B97F4A7C15ull;
    p->hot.gen_key = (uint32_t)(seed >> 33);
    p->gen_budget = FM__GEN_BUDGET;
    FM__VG_CREATE_POOL(p);
    fm__tag_attach(p->desc.tag, &p->tag_link, FM__TAG_POOL, p);

    if (!fm__grow(p, p->desc.initial_capacity, FM__GROW_CREATE)) {
        /* The growth reported the failure; destroy of an empty pool reports
         * nothing, so that report stays the thread's last error. */
        fm_pool_destroy(p);
        return NULL;
    }
    fm__open_first_chunk(p);
    return p;
}

/* One FM_WARN_NO_SITES per process (an atomic flag): a caller's build
 * settings do not change between its calls. */
static uint32_t fm__warned_sites;

fm_pool *fm__pool_create_from(const fm_pool_desc *desc, bool caller_sites) {
    fm_pool *p = fm_pool_create(desc);
#ifdef FM_TRACK_SITES
    if (p && !caller_sites && !FM__ATOMIC_EXCHANGE(&fm__warned_sites, 1, RELAXED))
        fm__report(FM_WARN_NO_SITES,
                   "pool '%s': allocation sites cannot be recorded for its creator: this "
                   "framemem keeps them (built with FM_TRACK_SITES, as Debug builds are), but the "
                   "calling code was compiled without FM_TRACK_SITES, so its allocations pass no "
                   "file:line and leak reports will say \"site not recorded\" (compile it with "
                   "-DFM_TRACK_SITES: CMake's framemem::framemem and pkg-config --cflags framemem "
                   "pass it); said once",
                   p->name);
#else
    if (p && caller_sites && !FM__ATOMIC_EXCHANGE(&fm__warned_sites, 1, RELAXED))
        fm__report(FM_WARN_NO_SITES,
                   "pool '%s': allocation sites cannot be recorded: the calling code passes them "
                   "(compiled with FM_TRACK_SITES), but this framemem was built without it, so "
                   "leak reports list none (build framemem in Debug or with -DFM_TRACK_SITES=ON); "
                   "said once",
                   p->name);
#endif
    return p;
}

void fm__pool_set_max_chunks(fm_pool *pool, uint32_t max_chunks) {
    /* Never above what handles encode, never below the records in use. */
    if (max_chunks < pool->max_chunks) pool->max_chunks = max_chunks;
    if (pool->max_chunks < pool->chunk_top) pool->max_chunks = pool->chunk_top;
}

/* ================================================================ destroy */

#ifdef FM_TRACK_SITES
enum { FM__LEAK_SITES = 16 };
typedef struct fm__leak_site {
    const char *file;
    int line;
    uint64_t count;
} fm__leak_site;
#endif

static void fm__report_leaks(fm_pool *p, uint64_t live) {
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "pool '%s': destroyed with %llu live item(s)", p->name,
                     (unsigned long long)live);
#ifdef FM_TRACK_SITES
    fm__leak_site sites[FM__LEAK_SITES];
    uint32_t n_sites = 0;
    uint64_t other = 0;
    for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
        fm__chunk *c = fm__chunk_at(p, ci);
        if (c->state == FM__CHUNK_UNUSED || c->state == FM__CHUNK_FRESH) continue;
        uint32_t bump = fm__chunk_bump(p, ci);
        for (uint32_t s = 0; s < bump; s++) {
            if (!(fm__meta_get((uintptr_t)c->base, s) & FM__LIVE)) continue;
            const fm__site *site = &fm__sites(p, c->base)[s];
            uint32_t j = 0;
            while (j < n_sites && !(sites[j].file == site->file && sites[j].line == site->line))
                j++;
            if (j == n_sites && n_sites < FM__LEAK_SITES)
                sites[n_sites++] = (fm__leak_site){site->file, site->line, 0};
            if (j < n_sites) sites[j].count++;
            else other++;
        }
    }
    for (uint32_t j = 0; j < n_sites && n > 0 && (size_t)n < sizeof msg; j++) {
        if (sites[j].file)
            n += snprintf(msg + n, sizeof msg - (size_t)n, "%s %llu from %s:%d", j ? "," : ":",
                          (unsigned long long)sites[j].count, sites[j].file, sites[j].line);
        else /* fm__pool_create_from said why, at create */
            n += snprintf(msg + n, sizeof msg - (size_t)n,
                          "%s %llu whose site was not recorded (allocated by code compiled "
                          "without FM_TRACK_SITES)",
                          j ? "," : ":", (unsigned long long)sites[j].count);
    }
    if (other && n > 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n, ", %llu from other sites",
                 (unsigned long long)other);
#endif
    (void)n;
    fm__report(FM_ERR_LEAK, "%s", msg);
}

void fm_pool_destroy(fm_pool *pool) {
    if (!pool) return;
    fm_pool *p = pool;
    /* First, so that the tag's stats never read a pool being destroyed. */
    fm__tag_detach(p->desc.tag, &p->tag_link);
    fm__hook_reset(p->name); /* its items go with it */
    /* Every thread's entry goes (the slots it holds go with the chunks). */
    if (fm__cached_policy(p)) fm__tc_free_entries(p);
    uint64_t live = fm__user_live(p);
    if (live && !p->desc.silent_destroy) fm__report_leaks(p, live);
    if (live && p->desc.dtor) {
        for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
            fm__chunk *c = fm__chunk_at(p, ci);
            if (c->state == FM__CHUNK_UNUSED || c->state == FM__CHUNK_FRESH) continue;
            uint32_t bump = fm__chunk_bump(p, ci);
            for (uint32_t s = 0; s < bump; s++) {
                if (fm__meta_get((uintptr_t)c->base, s) & FM__LIVE)
                    p->desc.dtor(fm__slot(p, c->base, s), p->desc.user);
            }
        }
    }
    for (uint32_t ci = 0; ci < p->chunk_top; ci++) {
        if (fm__chunk_at(p, ci)->state != FM__CHUNK_UNUSED) fm__release_chunk(p, ci);
    }
    fm__spans_release(p);
    if (p->win_next != p->win_end) fm__os_release(p->win_next, (size_t)(p->win_end - p->win_next));
    fm_allocator a = p->desc.allocator;
    for (uint32_t i = 0; i < p->chunk_top; i++) {
        uint32_t *links = *fm__links_slot(p, i);
        if (links) fm_allocator_free(&a, links, fm__links_bytes(p));
    }
    for (uint32_t s = 0; s < FM__REC_SEGS; s++)
        if (p->seg[s]) fm__array_delete(p, fm__seg_mem(p, s), fm__seg_bytes(s));
    if (p->hot.bases != fm__no_bases + 1)
        fm__array_delete(p, fm__bases_block(p->hot.bases), fm__bases_bytes(p->bases_cap));
    if (p->dm != p->dm_first) fm__array_delete(p, p->dm, ((size_t)p->dm_mask + 1) * sizeof *p->dm);
    if (p->bases_next)
        fm__array_delete(p, fm__bases_block(p->bases_next), fm__bases_bytes(p->bases_next_cap));
    fm__table_delete(p, p->table, p->table_cap);
    fm__table_delete(p, p->old_table, p->old_cap);
    for (uint32_t i = 0; i < p->n_retired_arrays; i++)
        fm__array_delete(p, p->retired_arrays[i], p->retired_bytes[i]);
    if (p->sync != FM_SYNC_NONE) fm__mutex_destroy(&p->lock);
    FM__VG_DESTROY_POOL(p);
    fm_allocator_free(&a, p, p->self_bytes);
}

/* ================================================================ queries */

static bool fm__owns_core(const fm_pool *pool, const void *item) {
    fm__loc loc;
    if (fm__cached_policy(pool)) return fm__locate_shared(pool, item, &loc) == FM_OK;
    return fm__locate(pool, item, &loc) == FM_OK;
}

static void fm__foreach_core(fm_pool *pool, fm_item_fn fn, void *user) {
    if (!fn) {
        fm__report(FM_ERR_INVALID_ARG, "pool '%s': fm_pool_foreach needs a function", pool->name);
        return;
    }
    /* Indices, not pointers: fn may allocate, and growth moves the records.
     * A reset from fn is refused (walking). */
    pool->walking++;
    uint32_t top = pool->chunk_top;
    for (uint32_t ci = 0; ci < top; ci++) {
        uint32_t state = fm__chunk_at(pool, ci)->state;
        if (state == FM__CHUNK_UNUSED || state == FM__CHUNK_FRESH) continue;
        uint8_t *base = fm__chunk_at(pool, ci)->base;
        uint32_t bump = fm__chunk_bump(pool, ci);
        for (uint32_t s = 0; s < bump; s++) {
            if (fm__chunk_at(pool, ci)->base != base) break; /* trimmed by fn */
            if (fm__meta_get((uintptr_t)base, s) & FM__LIVE) fn(fm__slot(pool, base, s), user);
        }
    }
    pool->walking--;
}

static void fm__stats_core(const fm_pool *pool, fm_pool_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    const fm_pool *p = pool;
    out->name = p->name;
    out->item_size = p->item_size;
    out->item_align = p->item_align;
    out->stride = p->hot.stride;
    out->chunk_bytes = p->chunk_bytes;
    out->items_per_chunk = p->hot.per_chunk;
    out->chunk_count = p->chunk_count;
    out->capacity = p->capacity;
    out->live = fm__live(p);
    out->peak_live = p->cs->peak_live;
    out->total_allocs = p->cs->total_allocs;
    out->total_frees = p->cs->total_allocs - fm__live(p);
    out->failed_allocs = p->failed_allocs;
    out->misuse_count = FM__ATOMIC_LOAD(&p->misuse_count, RELAXED);
    out->grow_events = p->grow_events;
    out->grow_ns_total = fm_clock_to_ns(p->grow_ticks_total);
    out->grow_ns_max = fm_clock_to_ns(p->grow_ticks_max);
    out->alloc_grow_events = p->alloc_grow_events;
    out->alloc_grow_ns = fm_clock_to_ns(p->alloc_grow_ticks);
    out->ahead_grow_events = p->ahead_grow_events;
    out->ahead_grow_ns = fm_clock_to_ns(p->ahead_grow_ticks);
    out->trim_events = p->trim_events;
    out->bytes_trimmed = p->bytes_trimmed;
    out->resets = p->resets;
    out->bytes_reserved = p->bytes_reserved;
    out->bytes_overhead = p->bytes_reserved - p->capacity * p->item_size;
    out->alloc_ns_total = fm_clock_to_ns(FM__ATOMIC_LOAD(&p->alloc_ticks, RELAXED));
    out->free_ns_total = fm_clock_to_ns(FM__ATOMIC_LOAD(&p->free_ticks, RELAXED));
    out->timed_calls = FM__ATOMIC_LOAD(&p->timed_calls, RELAXED);
}

fm_pool_desc fm_pool_get_desc(const fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", (fm_pool_desc){0});
    return pool->desc;
}

const char *fm_pool_name(const fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", "(null)");
    return pool->name;
}

/* ============================================================ entry points
 *
 * The single-threaded code (core.c, chunks.c, refs.c, check.c and the
 * queries above) behind fm__enter / fm__leave (the owner check for NONE,
 * the lock otherwise), except where THREAD_CACHE and LOCKFREE need no lock. */

/* Entry points whose THREAD_CACHE and LOCKFREE paths take no lock: one call
 * site of the core function each, so it is inlined. */
static inline bool fm__enter_unlocked(const fm_pool *p, const char *op) {
    return fm__cached_policy(p) || fm__enter(p, op);
}
static inline void fm__leave_unlocked(const fm_pool *p) {
    if (!fm__cached_policy(p)) fm__leave(p);
}

void fm_pool_delete(fm_pool *pool, void *item) {
    FM__REFUSE_NULL(pool, "pool", );
    if (!item || !fm__enter_unlocked(pool, "delete")) return;
    fm__delete_core(pool, item);
    fm__leave_unlocked(pool);
}

bool fm_pool_reserve(fm_pool *pool, uint32_t capacity) {
    FM__REFUSE_NULL(pool, "pool", false);
    if (!fm__enter(pool, "reserve")) return false;
    bool ok = fm__reserve_core(pool, capacity);
    fm__leave(pool);
    return ok;
}

bool fm_pool_grow_ahead(fm_pool *pool, uint32_t min_free) {
    FM__REFUSE_NULL(pool, "pool", false);
    if (!fm__enter(pool, "grow_ahead")) return false;
    bool ok = fm__grow_ahead_core(pool, min_free);
    fm__leave(pool);
    return ok;
}

size_t fm_pool_trim(fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", 0);
    if (!fm__enter(pool, "trim")) return 0;
    /* Free slots held outside the core go back first: the caller's own
     * magazine, or the whole shared stack. */
    if (pool->sync == FM_SYNC_THREAD_CACHE) {
        fm_pool_flush_thread_cache(pool);
        fm__tc_forget_hints(pool);
    }
    if (pool->sync == FM_SYNC_LOCKFREE) fm__lf_drain(pool);
    size_t released = fm__trim_core(pool);
    fm__leave(pool);
    return released;
}

bool fm_pool_owns(const fm_pool *pool, const void *item) {
    FM__REFUSE_NULL(pool, "pool", false);
    if (!item || !fm__enter_unlocked(pool, "owns")) return false;
    bool owns = fm__owns_core(pool, item);
    fm__leave_unlocked(pool);
    return owns;
}

void fm_pool_foreach(fm_pool *pool, fm_item_fn fn, void *user) {
    FM__REFUSE_NULL(pool, "pool", );
    if (!fm__enter(pool, "foreach")) return;
    fm__foreach_core(pool, fn, user);
    fm__leave(pool);
}

void fm_pool_get_stats(const fm_pool *pool, fm_pool_stats *out) {
    if (!pool && out) memset(out, 0, sizeof *out);
    FM__REFUSE_NULL(pool, "pool", );
    if (!fm__enter(pool, "get_stats")) {
        if (out) memset(out, 0, sizeof *out);
        return;
    }
    fm__stats_core(pool, out);
    if (out && fm__cached_policy(pool)) {
        /* The user's view; capacity and peak_live count slots out of the
         * depot (live items plus free slots held by caches or the stack). */
        uint64_t allocs, frees;
        fm__user_counts(pool, &allocs, &frees);
        out->total_allocs = allocs;
        out->total_frees = frees;
        out->live = allocs > frees ? allocs - frees : 0;
        if (out->peak_live < out->live) out->peak_live = out->live;
    }
    fm__leave(pool);
}

uint32_t fm_pool_chunk_occupancy(const fm_pool *pool, uint32_t *live, uint32_t max) {
    FM__REFUSE_NULL(pool, "pool", 0);
    if (!live) max = 0;
    if (!fm__enter(pool, "chunk_occupancy")) return 0;
    uint32_t n = 0;
    for (uint32_t ci = 0; ci < pool->chunk_top; ci++) {
        if (fm__chunk_at(pool, ci)->state == FM__CHUNK_UNUSED) continue;
        if (n < max) live[n] = fm__chunk_live(pool, ci);
        n++;
    }
    /* Chunks a growth mapped that have no record yet hold no item. */
    for (const fm__span *sp = pool->spans; sp; sp = sp->next_span)
        for (uint32_t i = 0; i < sp->left; i++, n++)
            if (n < max) live[n] = 0;
    fm__leave(pool);
    return n;
}

fm_handle fm_pool_handle(const fm_pool *pool, const void *item) {
    FM__REFUSE_NULL(pool, "pool", FM_HANDLE_NULL);
    if (!fm__enter_unlocked(pool, "handle")) return FM_HANDLE_NULL;
    fm_handle h = fm__handle_core(pool, item);
    fm__leave_unlocked(pool);
    return h;
}

void *fm_pool_resolve(const fm_pool *pool, fm_handle h) {
    FM__REFUSE_NULL(pool, "pool", NULL);
    if (pool->sync != FM_SYNC_NONE) return fm__pool_resolve_at(pool, h, true);
    if (!fm__owner_ok(pool, "resolve")) return NULL;
    return fm__pool_resolve_at(pool, h, false);
}

void fm_pool_retain(fm_pool *pool, void *item) {
    FM__REFUSE_NULL(pool, "pool", );
    if (!fm__enter_unlocked(pool, "retain")) return;
    fm__retain_core(pool, item);
    fm__leave_unlocked(pool);
}

bool fm_pool_release(fm_pool *pool, void *item) {
    FM__REFUSE_NULL(pool, "pool", false);
    if (!fm__enter_unlocked(pool, "release")) return false;
    bool freed = fm__release_core(pool, item);
    fm__leave_unlocked(pool);
    return freed;
}

uint32_t fm_pool_refcount(const fm_pool *pool, const void *item) {
    FM__REFUSE_NULL(pool, "pool", 0);
    if (!fm__enter_unlocked(pool, "refcount")) return 0;
    uint32_t count = fm__refcount_core(pool, item);
    fm__leave_unlocked(pool);
    return count;
}

fm_error fm_pool_check(const fm_pool *pool) {
    FM__REFUSE_NULL(pool, "pool", FM_ERR_INVALID_ARG);
    if (!fm__enter(pool, "check")) return FM_ERR_WRONG_THREAD;
    fm_error err = fm__check_core(pool);
    fm__leave(pool);
    return err;
}
