/* telemetry.c: create, sources, sampling at the frame end, grow-ahead, the ring. */
#include "telemetry_internal.h"

#include "framemem/clock.h"
#include "framemem/hooks.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ helpers */

void fm__tel_set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (!err || !err_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

void fm__tel_report_null(const char *fn, const char *what, char *err, size_t err_len) {
    fm_report_error(FM_ERR_INVALID_ARG, "%s: the %s is NULL", fn, what);
    fm__tel_set_err(err, err_len, "%s: the %s is NULL", fn, what);
}

static bool fm__tel_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
}

bool fm__tel_valid_name(const char *name) {
    if (!name || !name[0]) return false;
    size_t n = 0;
    for (const char *p = name; *p; p++, n++)
        if (!fm__tel_name_char(*p) || n + 1 >= FM_TELEMETRY_NAME_MAX) return false;
    return true;
}

void fm__tel_source_name(const char *name, char *out) {
    size_t n = 0;
    for (; name && name[n] && n + 1 < FM_TELEMETRY_NAME_MAX; n++)
        out[n] = fm__tel_name_char(name[n]) ? name[n] : '_';
    if (!n) out[n++] = '?';
    out[n] = 0;
}

const char *fm_telemetry_kind_name(fm_telemetry_kind kind) {
    switch (kind) {
    case FM_TELEMETRY_POOL: return "pool";
    case FM_TELEMETRY_ARENA: return "arena";
    case FM_TELEMETRY_CLOSURES: return "closures";
    case FM_TELEMETRY_TAG: return "tag";
    default: return "?";
    }
}

const char *fm_telemetry_backend_name(fm_telemetry_backend backend) {
    switch (backend) {
    case FM_TELEMETRY_BACKEND_POOL: return "pool";
    case FM_TELEMETRY_BACKEND_MALLOC: return "malloc";
    case FM_TELEMETRY_BACKEND_CLASSIC: return "classic";
    default: return "?";
    }
}

/* --------------------------------------------------------- clock overhead */

/* Measured once per process: the first measurement published wins (no
 * thread library: this layer is over framemem's public API, with no platform
 * code of its own). */
static _Atomic uint64_t fm__tel_overhead_ns = UINT64_MAX; /* UINT64_MAX: not yet */

static int fm__tel_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t fm__tel_measure_overhead(void) {
    enum { N = 1001 };
    uint64_t d[N];
    fm_clock_init();
    for (int i = 0; i < N; i++) {
        uint64_t t0 = fm_clock_now();
        uint64_t t1 = fm_clock_now();
        d[i] = t1 - t0;
    }
    qsort(d, N, sizeof d[0], fm__tel_cmp_u64);
    uint64_t ns = fm_clock_to_ns(d[N / 2]);
    return ns == UINT64_MAX ? ns - 1 : ns;
}

uint64_t fm_telemetry_clock_overhead_ns(void) {
    uint64_t ns = atomic_load(&fm__tel_overhead_ns);
    if (ns != UINT64_MAX) return ns;
    uint64_t mine = fm__tel_measure_overhead();
    /* Another thread's first: every caller sees that one value. */
    return atomic_compare_exchange_strong(&fm__tel_overhead_ns, &ns, mine) ? mine : ns;
}

uint64_t fm_telemetry_suggest_capacity(uint64_t peak_live, double headroom, uint64_t chunk_items) {
    if (!(headroom >= 1.0)) headroom = 1.0; /* NaN too */
    if (headroom > 1000.0) headroom = 1000.0;
    if (!chunk_items) chunk_items = 1;
    /* The numbers may come from a file: whatever they are, the answer
     * saturates at the most whole chunks a uint64_t holds, never wraps. */
    const uint64_t most_chunks = UINT64_MAX / chunk_items;
    double want = (double)peak_live * headroom;
    if (!(want < 18446744073709551616.0)) return most_chunks * chunk_items; /* 2^64 */
    uint64_t items = (uint64_t)want;
    if ((double)items < want) items++;
    if (items < peak_live) items = peak_live; /* a double holds 53 bits */
    uint64_t chunks = items / chunk_items + (items % chunk_items != 0);
    if (!chunks) chunks = 1;
    return (chunks > most_chunks ? most_chunks : chunks) * chunk_items;
}

/* =============================================================== lifetime */

/* Offsets of the arrays in the one block create allocates. */
typedef struct fm__tel_layout {
    size_t sources, src, net, frames, samples, scratch, total;
} fm__tel_layout;

static bool fm__tel_add_size(size_t *at, size_t n, size_t size, size_t *offset) {
    size_t align = 16;
    *at = (*at + align - 1) / align * align;
    if (size && n > (SIZE_MAX - *at) / size) return false;
    *offset = *at;
    *at += n * size;
    return true;
}

static bool fm__tel_layout_of(uint32_t cap, uint32_t ms, uint32_t window, fm__tel_layout *l) {
    size_t at = sizeof(fm_telemetry);
    return fm__tel_add_size(&at, ms, sizeof(fm_telemetry_source), &l->sources) &&
           fm__tel_add_size(&at, ms, sizeof(fm__tel_src), &l->src) &&
           fm__tel_add_size(&at, (size_t)ms * window, sizeof(uint32_t), &l->net) &&
           fm__tel_add_size(&at, cap, sizeof(fm_telemetry_frame), &l->frames) &&
           fm__tel_add_size(&at, (size_t)cap * ms, sizeof(fm_telemetry_sample), &l->samples) &&
           fm__tel_add_size(&at, ms, sizeof(fm_telemetry_sample), &l->scratch) &&
           (l->total = at, true);
}

fm_telemetry *fm_telemetry_create(const fm_telemetry_desc *desc) {
    fm_telemetry_desc d = desc ? *desc : (fm_telemetry_desc){0};
    uint32_t cap = d.frames ? d.frames : 600;
    uint32_t ms = d.max_sources ? d.max_sources : 32;
    uint32_t window = d.grow_ahead_window ? d.grow_ahead_window : 120;
    float margin = d.grow_ahead_margin != 0.0f ? d.grow_ahead_margin : 2.0f;
    const char *why = NULL;
    if (cap > FM_TELEMETRY_MAX_FRAMES) why = "frames above FM_TELEMETRY_MAX_FRAMES (2^24)";
    else if (ms > FM_TELEMETRY_MAX_SOURCES) why = "max_sources above FM_TELEMETRY_MAX_SOURCES (256)";
    else if (window > FM_TELEMETRY_MAX_WINDOW) why = "grow_ahead_window above 1024";
    else if (!(margin >= 1.0f && margin <= 64.0f)) why = "grow_ahead_margin must be in [1, 64]";
    else if (!fm_allocator_valid(&d.allocator)) why = "allocator needs both alloc and free";
    if (why) {
        fm_report_error(FM_ERR_INVALID_ARG, "telemetry: fm_telemetry_create: %s", why);
        return NULL;
    }
    fm__tel_layout l;
    uint8_t *block = NULL;
    if (fm__tel_layout_of(cap, ms, window, &l))
        block = fm_allocator_alloc(&d.allocator, l.total, FM_DEFAULT_ALIGN);
    if (!block) {
        fm_report_error(FM_ERR_OUT_OF_MEMORY,
                        "telemetry: out of memory for a ring of %u frames x %u sources", cap, ms);
        return NULL;
    }
    memset(block, 0, l.total); /* pages of a big ring are touched now, not in a frame */
    fm_telemetry *t = (fm_telemetry *)(void *)block;
    t->alloc = d.allocator;
    t->bytes = l.total;
    t->cap = cap;
    t->max_sources = ms;
    t->window = window;
    t->margin = margin;
    t->sources = (fm_telemetry_source *)(void *)(block + l.sources);
    t->src = (fm__tel_src *)(void *)(block + l.src);
    t->net = (uint32_t *)(void *)(block + l.net);
    t->frames = (fm_telemetry_frame *)(void *)(block + l.frames);
    t->samples = (fm_telemetry_sample *)(void *)(block + l.samples);
    t->scratch = (fm_telemetry_sample *)(void *)(block + l.scratch);
    (void)fm_telemetry_clock_overhead_ns(); /* measured now, never inside a frame */
    t->last_end = fm_clock_now();
    return t;
}

void fm_telemetry_destroy(fm_telemetry *tel) {
    if (!tel) return;
    fm_telemetry_stream_end(tel);
    fm_allocator a = tel->alloc;
    fm_allocator_free(&a, tel, tel->bytes);
}

/* ================================================================ sources */

int fm_telemetry_find_source(const fm_telemetry *tel, const char *name) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    if (!name) return -1;
    for (uint32_t i = 0; i < tel->source_count; i++)
        if (strcmp(tel->sources[i].name, name) == 0) return (int)i;
    return -1;
}

/* A new source (name valid, not registered); -1 when the registry is full. */
static int fm__tel_new_source(fm_telemetry *t, const char *name, fm_telemetry_kind kind) {
    if (t->source_count >= t->max_sources) return -1;
    uint32_t i = t->source_count++;
    fm_telemetry_source *s = &t->sources[i];
    memset(s, 0, sizeof *s);
    memcpy(s->name, name, strlen(name) + 1);
    s->kind = kind;
    s->chunk_items = 1;
    memset(&t->src[i], 0, sizeof t->src[i]);
    return (int)i;
}

int fm_telemetry_add_source(fm_telemetry *tel, const char *name, fm_telemetry_kind kind,
                            uint64_t item_size, uint64_t chunk_items) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    if (!fm__tel_valid_name(name) || (unsigned)kind >= FM_TELEMETRY_KIND_COUNT) return -1;
    int found = fm_telemetry_find_source(tel, name);
    if (found >= 0) return tel->sources[found].kind == kind ? found : -1;
    int i = fm__tel_new_source(tel, name, kind);
    if (i < 0) return -1;
    tel->sources[i].item_size = item_size;
    tel->sources[i].chunk_items = chunk_items ? chunk_items : 1;
    return i;
}

void fm_telemetry_set_source_shape(fm_telemetry *tel, uint32_t source, fm_telemetry_backend backend,
                                   uint64_t item_size, uint64_t chunk_items) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (source >= tel->source_count) return;
    tel->sources[source].backend = backend;
    tel->sources[source].item_size = item_size;
    tel->sources[source].chunk_items = chunk_items ? chunk_items : 1;
}

void fm_telemetry_set_source_limits(fm_telemetry *tel, uint32_t source, uint64_t soft_limit,
                                    uint64_t hard_limit) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (source >= tel->source_count) return;
    tel->sources[source].soft_limit = soft_limit;
    tel->sources[source].hard_limit = hard_limit;
}

/* Reads the object's counters now, so the next frame's deltas start here. */
static void fm__tel_baseline(fm_telemetry *t, uint32_t i);

/* Binds obj (of type, named name, kind) to its source: a new one, or a
 * detached one of that name and kind. -1, reported, otherwise. */
static int fm__tel_attach(fm_telemetry *t, const char *fn, fm__tel_object type, const void *obj,
                          const char *obj_name, fm_telemetry_kind kind) {
    if (!obj) {
        fm__tel_report_null(fn, "object to add", NULL, 0);
        return -1;
    }
    for (uint32_t i = 0; i < t->source_count; i++)
        if (t->src[i].type == type && t->src[i].obj.any == obj) return (int)i;
    char name[FM_TELEMETRY_NAME_MAX];
    fm__tel_source_name(obj_name, name);
    int i = fm_telemetry_find_source(t, name);
    if (i >= 0) {
        const char *why = t->sources[i].kind != kind ? "is a source of another kind"
                          : t->sources[i].attached  ? "is attached to another object (detach it first)"
                                                    : NULL;
        if (why) {
            fm_report_error(FM_ERR_INVALID_ARG, "telemetry: %s: the name '%s' %s", fn, name, why);
            return -1;
        }
    } else {
        i = fm__tel_new_source(t, name, kind);
        if (i < 0) {
            fm_report_error(FM_ERR_INVALID_ARG,
                            "telemetry: %s: '%s' not added: all %u sources (max_sources) are in use",
                            fn, name, t->max_sources);
            return -1;
        }
    }
    fm__tel_src *s = &t->src[i];
    memset(s, 0, sizeof *s);
    s->type = type;
    s->obj.any = obj;
    t->sources[i].attached = true;
    t->sources[i].backend =
        type == FM__TEL_COUNTERS ? FM_TELEMETRY_BACKEND_MALLOC : FM_TELEMETRY_BACKEND_POOL;
    uint32_t *net = &t->net[(size_t)i * t->window];
    memset(net, 0, t->window * sizeof *net);
    fm__tel_baseline(t, (uint32_t)i);
    return i;
}

int fm_telemetry_add_pool(fm_telemetry *tel, fm_pool *pool) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    return fm__tel_attach(tel, __func__, FM__TEL_POOL, pool, pool ? fm_pool_name(pool) : NULL,
                          FM_TELEMETRY_POOL);
}

int fm_telemetry_add_arena(fm_telemetry *tel, fm_arena *arena) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    return fm__tel_attach(tel, __func__, FM__TEL_ARENA, arena, arena ? fm_arena_name(arena) : NULL,
                          FM_TELEMETRY_ARENA);
}

int fm_telemetry_add_frame_arena(fm_telemetry *tel, fm_frame_arena *fa) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    fm_frame_arena_stats st;
    if (fa) fm_frame_arena_get_stats(fa, &st);
    return fm__tel_attach(tel, __func__, FM__TEL_FRAME_ARENA, fa, fa ? st.name : NULL,
                          FM_TELEMETRY_ARENA);
}

int fm_telemetry_add_closure_pool(fm_telemetry *tel, fm_closure_pool *cp) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    fm_closure_pool_stats st;
    if (cp) fm_closure_pool_get_stats(cp, &st);
    return fm__tel_attach(tel, __func__, FM__TEL_CLOSURES, cp, cp ? st.name : NULL,
                          FM_TELEMETRY_CLOSURES);
}

int fm_telemetry_add_tag(fm_telemetry *tel, fm_tag *tag) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    return fm__tel_attach(tel, __func__, FM__TEL_TAG, tag, tag ? fm_tag_name(tag) : NULL,
                          FM_TELEMETRY_TAG);
}

int fm_telemetry_add_counters(fm_telemetry *tel, const char *name,
                              const fm_telemetry_counters *counters) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", -1);
    return fm__tel_attach(tel, __func__, FM__TEL_COUNTERS, counters, name, FM_TELEMETRY_POOL);
}

void fm_telemetry_detach(fm_telemetry *tel, uint32_t source) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (source >= tel->source_count) return;
    memset(&tel->src[source], 0, sizeof tel->src[source]);
    tel->sources[source].attached = false;
}

uint32_t fm_telemetry_source_count(const fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", 0);
    return tel->source_count;
}

const fm_telemetry_source *fm_telemetry_get_source(const fm_telemetry *tel, uint32_t i) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", NULL);
    return i < tel->source_count ? &tel->sources[i] : NULL;
}

/* =============================================================== sampling */

/* The object's counters as one shape: cumulative counts (allocs, frees,
 * growths, commits, resets, refusals) whose changes are the frame's, and
 * levels (live, capacity, bytes) as they stand. */
typedef struct fm__tel_read {
    uint64_t allocs, frees, live, capacity, peak;
    uint64_t grow, grow_ns, ahead, ahead_ns;
    uint64_t bytes_used, high_water, commits, resets, failed;
    uint64_t item_size, chunk_items, soft_limit, hard_limit;
    uint64_t timed_ns; /* a pool's own timing (desc.timing): ns inside alloc and free */
    bool frees_from_live; /* closures: frees = allocs - change of live */
} fm__tel_read;

static void fm__tel_read_object(const fm__tel_src *s, fm__tel_read *r) {
    memset(r, 0, sizeof *r);
    r->chunk_items = 1;
    switch (s->type) {
    case FM__TEL_POOL: {
        fm_pool_stats st;
        fm_pool_get_stats(s->obj.pool, &st);
        r->allocs = st.total_allocs;
        r->frees = st.total_frees;
        r->live = st.live;
        r->capacity = st.capacity;
        r->peak = st.peak_live;
        r->grow = st.alloc_grow_events;
        r->grow_ns = st.alloc_grow_ns;
        r->ahead = st.ahead_grow_events;
        r->ahead_ns = st.ahead_grow_ns;
        r->resets = st.resets;
        r->failed = st.failed_allocs;
        r->timed_ns = st.alloc_ns_total + st.free_ns_total;
        r->item_size = st.stride;
        r->chunk_items = st.items_per_chunk ? st.items_per_chunk : 1;
        break;
    }
    case FM__TEL_ARENA: {
        fm_arena_stats st;
        fm_arena_get_stats(s->obj.arena, &st);
        r->allocs = st.total_allocs;
        r->capacity = st.committed;
        r->bytes_used = st.used;
        r->high_water = st.high_water;
        r->commits = st.commit_events;
        r->resets = st.resets;
        r->failed = st.failed_allocs;
        break;
    }
    case FM__TEL_FRAME_ARENA: {
        fm_frame_arena_stats st;
        fm_frame_arena_get_stats(s->obj.fa, &st);
        r->allocs = st.total_allocs;
        r->capacity = st.committed;
        r->bytes_used = st.used;
        r->high_water = st.high_water;
        r->commits = st.commit_events;
        r->resets = st.frame;
        r->failed = st.failed_allocs;
        break;
    }
    case FM__TEL_CLOSURES: {
        fm_closure_pool_stats st;
        fm_closure_pool_get_stats(s->obj.cp, &st);
        r->allocs = st.total_made;
        r->live = st.live;
        r->capacity = st.capacity; /* no peak of its own: frame ends' highest live */
        r->grow = st.grow_events;
        r->grow_ns = st.grow_ns;
        r->failed = st.refused;
        r->frees_from_live = true;
        break;
    }
    case FM__TEL_TAG: {
        fm_tag_stats st;
        fm_tag_get_stats(s->obj.tag, &st);
        r->live = st.live;
        r->capacity = st.committed;
        r->peak = st.peak;
        r->failed = st.growths_refused;
        r->item_size = 1;
        r->soft_limit = st.soft_limit_bytes;
        r->hard_limit = st.hard_limit_bytes;
        break;
    }
    case FM__TEL_COUNTERS: {
        const fm_telemetry_counters *c = s->obj.counters;
        r->allocs = c->total_allocs;
        r->frees = c->total_frees;
        r->live = c->live;
        r->capacity = c->capacity ? c->capacity : c->live;
        r->peak = c->peak_live;
        r->failed = c->failed;
        r->item_size = c->item_size;
        r->grow = c->grow_events;
        r->grow_ns = c->grow_ns;
        break;
    }
    case FM__TEL_NONE: break;
    }
}

/* Counters go only up; one that went down (an object rebuilt under the same
 * pointer, a caller's counters reset) starts a new baseline. */
static uint64_t fm__tel_delta(uint64_t now, uint64_t *seen) {
    uint64_t d = now >= *seen ? now - *seen : now;
    *seen = now;
    return d;
}

static void fm__tel_baseline(fm_telemetry *t, uint32_t i) {
    fm__tel_src *s = &t->src[i];
    fm__tel_read r;
    fm__tel_read_object(s, &r);
    s->seen_allocs = r.allocs;
    s->seen_frees = r.frees;
    s->seen_live = r.live;
    s->seen_grow = r.grow;
    s->seen_grow_ns = r.grow_ns;
    s->seen_ahead = r.ahead;
    s->seen_ahead_ns = r.ahead_ns;
    s->seen_commits = r.commits;
    s->seen_resets = r.resets;
    s->seen_failed = r.failed;
    s->seen_timed_ns = r.timed_ns;
    s->peak_base = r.peak;
    s->peak_seen = r.live;
    fm_telemetry_source *si = &t->sources[i];
    if (s->type != FM__TEL_NONE) {
        si->item_size = r.item_size;
        si->chunk_items = r.chunk_items;
        si->soft_limit = r.soft_limit;
        si->hard_limit = r.hard_limit;
    }
}

/* Source i's sample of this frame into x; returns the frame's net
 * allocation for the grow-ahead history. */
static void fm__tel_sample(fm_telemetry *t, uint32_t i, fm_telemetry_sample *x) {
    fm__tel_src *s = &t->src[i];
    memset(x, 0, sizeof *x);
    x->alloc_ns = s->pending_alloc_ns;
    s->pending_alloc_ns = 0;
    if (s->type == FM__TEL_NONE) return;
    fm__tel_read r;
    fm__tel_read_object(s, &r);
    x->allocs = fm__tel_delta(r.allocs, &s->seen_allocs);
    if (r.frees_from_live) {
        /* frees = allocations minus what live gained (it may have lost) */
        uint64_t before = fm__tel_sat_add(x->allocs, s->seen_live);
        x->frees = before >= r.live ? before - r.live : 0;
    } else {
        x->frees = fm__tel_delta(r.frees, &s->seen_frees);
    }
    s->seen_live = r.live;
    x->live = r.live;
    x->capacity = r.capacity;
    if (r.live > s->peak_seen) s->peak_seen = r.live;
    /* A tag's peak is of committed bytes, never restarted. */
    x->peak_live = s->type == FM__TEL_TAG || r.peak > s->peak_base ? r.peak : s->peak_seen;
    x->grow_events = fm__tel_delta(r.grow, &s->seen_grow);
    x->grow_ns = fm__tel_delta(r.grow_ns, &s->seen_grow_ns);
    x->ahead_grow_events = fm__tel_delta(r.ahead, &s->seen_ahead);
    x->ahead_grow_ns = fm__tel_delta(r.ahead_ns, &s->seen_ahead_ns);
    x->bytes_used = r.bytes_used;
    x->high_water = r.high_water;
    x->commit_events = fm__tel_delta(r.commits, &s->seen_commits);
    x->resets = fm__tel_delta(r.resets, &s->seen_resets);
    x->failed = fm__tel_delta(r.failed, &s->seen_failed);
    /* A timed pool's own time inside its calls joins what the caller added. */
    x->alloc_ns = fm__tel_sat_add(x->alloc_ns, fm__tel_delta(r.timed_ns, &s->seen_timed_ns));
    fm_telemetry_source *si = &t->sources[i];
    si->item_size = r.item_size;
    si->chunk_items = r.chunk_items;
    si->soft_limit = r.soft_limit;
    si->hard_limit = r.hard_limit;
    /* The net history grow-ahead sizes from. */
    if (s->type == FM__TEL_POOL) {
        uint64_t net = x->allocs > x->frees ? x->allocs - x->frees : 0;
        t->net[(size_t)i * t->window + s->net_pos] = net > UINT32_MAX ? UINT32_MAX : (uint32_t)net;
        s->net_pos = s->net_pos + 1 == t->window ? 0 : s->net_pos + 1;
    }
}

void fm_telemetry_frame_begin(fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    tel->begin = fm_clock_now();
    tel->has_begin = true;
}

void fm_telemetry_add_alloc_ns(fm_telemetry *tel, uint32_t source, uint64_t ns) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (source >= tel->source_count) return;
    tel->src[source].pending_alloc_ns = fm__tel_sat_add(tel->src[source].pending_alloc_ns, ns);
}

uint32_t fm_telemetry_grow_ahead(fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", 0);
    uint64_t t0 = fm_clock_now();
    uint32_t refused = 0;
    for (uint32_t i = 0; i < tel->source_count; i++) {
        fm__tel_src *s = &tel->src[i];
        if (s->type != FM__TEL_POOL) continue;
        fm_pool_desc d = fm_pool_get_desc(s->obj.pool);
        if (!d.grow_ahead || d.growth == FM_GROWTH_FIXED) continue;
        /* The frame so far counts: allocations of a frame come after its
         * frees, so its peak demand above its starting live count is its
         * net allocation; the largest recent one is what the next may need. */
        fm_pool_stats st;
        fm_pool_get_stats(s->obj.pool, &st);
        uint64_t allocs = st.total_allocs - s->seen_allocs, frees = st.total_frees - s->seen_frees;
        uint64_t worst = allocs > frees ? allocs - frees : 0;
        const uint32_t *net = &tel->net[(size_t)i * tel->window];
        for (uint32_t k = 0; k < tel->window; k++)
            if (net[k] > worst) worst = net[k];
        if (!worst) continue;
        double want = (double)worst * tel->margin;
        uint32_t min_free = want >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)(want + 0.5);
        /* A refusal (reported by the pool) leaves it as it was: the frame's
         * allocations then grow in place, which the telemetry shows. */
        if (!fm_pool_grow_ahead(s->obj.pool, min_free)) refused++;
    }
    tel->pending_maint += fm_clock_now() - t0;
    return refused;
}

/* Records rec and samples into the ring and the totals (the oldest frame
 * drops out of a full ring). */
static void fm__tel_record(fm_telemetry *t, const fm_telemetry_frame *rec,
                           const fm_telemetry_sample *samples) {
    if (t->stream && t->stream_pending) fm__tel_stream_pending(t);
    uint32_t slot;
    if (t->count < t->cap) {
        slot = t->head + t->count;
        if (slot >= t->cap) slot -= t->cap;
        t->count++;
    } else {
        slot = t->head;
        t->head = t->head + 1 == t->cap ? 0 : t->head + 1;
    }
    fm_telemetry_frame *r = &t->frames[slot];
    *r = *rec;
    r->grow_events = r->ahead_grow_events = 0;
    fm_telemetry_sample *dst = &t->samples[(size_t)slot * t->max_sources];
    for (uint32_t s = 0; s < t->source_count; s++) {
        dst[s] = samples ? samples[s] : (fm_telemetry_sample){0};
        const fm_telemetry_sample *x = &dst[s];
        fm_telemetry_source *si = &t->sources[s];
        /* Samples may come from a file (any uint64_t): totals saturate. */
        si->total_allocs = fm__tel_sat_add(si->total_allocs, x->allocs);
        si->total_frees = fm__tel_sat_add(si->total_frees, x->frees);
        si->total_alloc_ns = fm__tel_sat_add(si->total_alloc_ns, x->alloc_ns);
        si->total_grow_events = fm__tel_sat_add(si->total_grow_events, x->grow_events);
        si->total_grow_ns = fm__tel_sat_add(si->total_grow_ns, x->grow_ns);
        si->total_ahead_grow_events =
            fm__tel_sat_add(si->total_ahead_grow_events, x->ahead_grow_events);
        si->total_ahead_grow_ns = fm__tel_sat_add(si->total_ahead_grow_ns, x->ahead_grow_ns);
        if (x->live > si->peak_live) si->peak_live = x->live;
        if (x->peak_live > si->peak_live && si->kind == FM_TELEMETRY_POOL)
            si->peak_live = x->peak_live;
        if (x->grow_events) {
            si->last_grow_frame = rec->frame;
            si->last_grow_ns = x->grow_ns;
        }
        r->grow_events = fm__tel_sat_add32(r->grow_events, x->grow_events);
        r->ahead_grow_events = fm__tel_sat_add32(r->ahead_grow_events, x->ahead_grow_events);
    }
    t->pushed++;
    t->next_frame = rec->frame + 1;
    t->stream_pending = t->stream != NULL;
}

void fm_telemetry_frame_end(fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    uint64_t t0 = fm_clock_now();
    uint64_t alloc_ns = 0;
    for (uint32_t i = 0; i < tel->source_count; i++) {
        fm__tel_sample(tel, i, &tel->scratch[i]);
        alloc_ns = fm__tel_sat_add(alloc_ns, tel->scratch[i].alloc_ns);
    }
    uint64_t t1 = fm_clock_now();
    uint64_t start = tel->has_begin ? tel->begin : tel->last_end;
    fm_telemetry_frame rec = {.frame = tel->next_frame};
    rec.frame_ns = fm_clock_to_ns(t1 - start);
    rec.maint_ns = fm_clock_to_ns(tel->pending_maint + (t1 - t0));
    rec.alloc_total_ns = alloc_ns;
    uint64_t busy = fm__tel_sat_add(alloc_ns, rec.maint_ns);
    rec.sim_ns = rec.frame_ns > busy ? rec.frame_ns - busy : 0;
    fm__tel_record(tel, &rec, tel->scratch);
    tel->last_end = t1;
    tel->has_begin = false;
    tel->pending_maint = 0;
    /* The frame boundary for profilers too (framemem/hooks.h). */
    fm_hooks_frame_end();
}

void fm_telemetry_push(fm_telemetry *tel, const fm_telemetry_frame *rec,
                       const fm_telemetry_sample *samples) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (!rec) return;
    fm__tel_record(tel, rec, samples);
}

/* ================================================================== ring */

static uint32_t fm__tel_slot(const fm_telemetry *t, uint32_t i) {
    uint32_t s = t->head + i;
    return s >= t->cap ? s - t->cap : s;
}

uint32_t fm_telemetry_frame_count(const fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", 0);
    return tel->count;
}

uint32_t fm_telemetry_capacity(const fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", 0);
    return tel->cap;
}

uint64_t fm_telemetry_frames_pushed(const fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", 0);
    return tel->pushed;
}

const fm_telemetry_frame *fm_telemetry_get_frame(const fm_telemetry *tel, uint32_t i) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", NULL);
    if (i >= tel->count) return NULL;
    return &tel->frames[fm__tel_slot(tel, i)];
}

const fm_telemetry_sample *fm_telemetry_get_sample(const fm_telemetry *tel, uint32_t i, uint32_t s) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", NULL);
    if (i >= tel->count || s >= tel->source_count) return NULL;
    return &tel->samples[(size_t)fm__tel_slot(tel, i) * tel->max_sources + s];
}

void fm_telemetry_set_render_ns(fm_telemetry *tel, uint64_t render_ns) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (!tel->count) return;
    tel->frames[fm__tel_slot(tel, tel->count - 1)].render_ns = render_ns;
}

void fm_telemetry_clear(fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (tel->stream && tel->stream_pending) fm__tel_stream_pending(tel);
    tel->stream_pending = false;
    tel->head = tel->count = 0;
    tel->pushed = 0;
    for (uint32_t i = 0; i < tel->source_count; i++) {
        fm_telemetry_source *si = &tel->sources[i];
        si->total_allocs = si->total_frees = si->total_alloc_ns = 0;
        si->total_grow_events = si->total_grow_ns = 0;
        si->total_ahead_grow_events = si->total_ahead_grow_ns = 0;
        si->peak_live = si->last_grow_frame = si->last_grow_ns = 0;
        /* Peaks restart from the live counts. */
        fm__tel_src *s = &tel->src[i];
        if (s->type == FM__TEL_NONE) continue;
        fm__tel_read r;
        fm__tel_read_object(s, &r);
        s->peak_base = r.peak;
        s->peak_seen = r.live;
    }
}
