/* telemetry.c: the source registry, the frame ring, CSV and trace export, CSV import. */
#include "engine/telemetry.h"

#include "framemem/clock.h"
#include "framemem/file.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "eng_internal.h"
#include "engine/ds.h"

struct eng_telemetry {
    uint32_t cap;         /* frames in the ring */
    uint32_t max_sources; /* samples per frame slot */
    uint32_t source_count;
    uint32_t head;        /* slot of the oldest frame */
    uint32_t count;       /* frames held */
    uint64_t pushed;
    eng_source_info sources[ENG_TELEMETRY_MAX_SOURCES];
    eng_frame_record *frames; /* [cap] */
    eng_sample *samples;      /* [cap * max_sources] */
    fm_file_writer *stream;   /* eng_telemetry_stream_csv's, the caller's */
    bool stream_pending;      /* the newest frame is not written yet */
    fm_allocator alloc;       /* where this struct and the ring came from */
};

const char *eng_backend_name(eng_backend b) {
    switch (b) {
    case ENG_BACKEND_POOL: return "pool";
    case ENG_BACKEND_MALLOC: return "malloc";
    default: return "?";
    }
}

/* ------------------------------------------------------------ clock overhead */

/* Measured once per process: the first measurement published wins (no
 * thread library: the engine has no platform code). */
static _Atomic uint64_t eng__overhead_ns = UINT64_MAX; /* UINT64_MAX: not yet */

static int eng__cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t eng__measure_overhead(void) {
    enum { N = 1001 };
    uint64_t d[N];
    fm_clock_init();
    for (int i = 0; i < N; i++) {
        uint64_t t0 = fm_clock_now();
        uint64_t t1 = fm_clock_now();
        d[i] = t1 - t0;
    }
    qsort(d, N, sizeof d[0], eng__cmp_u64);
    uint64_t ns = fm_clock_to_ns(d[N / 2]);
    return ns == UINT64_MAX ? ns - 1 : ns;
}

uint64_t eng_telemetry_clock_overhead_ns(void) {
    uint64_t ns = atomic_load(&eng__overhead_ns);
    if (ns != UINT64_MAX) return ns;
    uint64_t mine = eng__measure_overhead();
    /* Another thread's first: every caller sees that one value. */
    return atomic_compare_exchange_strong(&eng__overhead_ns, &ns, mine) ? mine : ns;
}

uint64_t eng_suggest_capacity(uint64_t peak_live, double headroom, uint64_t chunk_items) {
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

/* ---------------------------------------------------------------- lifetime */

eng_telemetry *eng_telemetry_create(const eng_telemetry_desc *desc) {
    return eng__telemetry_create(desc, NULL);
}

eng_telemetry *eng__telemetry_create(const eng_telemetry_desc *desc, const fm_allocator *a) {
    eng_telemetry_desc d = desc ? *desc : (eng_telemetry_desc){0};
    uint32_t cap = d.frames ? d.frames : 600;
    uint32_t ms = d.max_sources ? d.max_sources : ENG_TELEMETRY_MAX_SOURCES;
    if (ms > ENG_TELEMETRY_MAX_SOURCES || cap > ENG__MAX_FRAMES) return NULL;
    fm_allocator al = a ? *a : (fm_allocator){0};
    eng_telemetry *t = eng__mem_calloc(&al, 1, sizeof *t);
    if (!t) return NULL;
    t->alloc = al;
    t->cap = cap;
    t->max_sources = ms;
    t->frames = eng__mem_calloc(&al, cap, sizeof *t->frames);
    t->samples = eng__mem_calloc(&al, (size_t)cap * ms, sizeof *t->samples);
    if (!t->frames || !t->samples) {
        eng_telemetry_destroy(t);
        return NULL;
    }
    (void)eng_telemetry_clock_overhead_ns(); /* measured now, never inside a frame */
    return t;
}

void eng_telemetry_destroy(eng_telemetry *t) {
    if (!t) return;
    eng_telemetry_stream_end(t);
    fm_allocator a = t->alloc;
    eng__mem_free(&a, t->frames, (size_t)t->cap * sizeof *t->frames);
    eng__mem_free(&a, t->samples, (size_t)t->cap * t->max_sources * sizeof *t->samples);
    eng__mem_free(&a, t, sizeof *t);
}

/* ---------------------------------------------------------------- registry */

/* Names of sources: 1-31 of [A-Za-z0-9_.-]. */
static bool eng__valid_name(const char *name) {
    if (!name || !name[0]) return false;
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok || n + 1 >= ENG_NAME_MAX) return false;
    }
    return true;
}

int eng_telemetry_find_source(const eng_telemetry *t, const char *name) {
    ENG__REFUSE_NULL(t, "telemetry", -1);
    if (!name) return -1;
    for (uint32_t i = 0; i < t->source_count; i++) {
        if (strcmp(t->sources[i].name, name) == 0) return (int)i;
    }
    return -1;
}

int eng_telemetry_add_source(eng_telemetry *t, const char *name, eng_source_kind kind,
                             uint64_t item_size, uint64_t chunk_items) {
    ENG__REFUSE_NULL(t, "telemetry", -1);
    if (!eng__valid_name(name)) return -1;
    int found = eng_telemetry_find_source(t, name);
    if (found >= 0) return found;
    if (t->source_count >= t->max_sources || t->pushed > 0) return -1;
    eng_source_info *s = &t->sources[t->source_count];
    memset(s, 0, sizeof *s);
    memcpy(s->name, name, strlen(name) + 1);
    s->kind = kind;
    s->item_size = item_size;
    s->chunk_items = chunk_items ? chunk_items : 1;
    return (int)t->source_count++;
}

void eng_telemetry_set_source_shape(eng_telemetry *t, uint32_t source, eng_backend backend,
                                    uint64_t item_size, uint64_t chunk_items) {
    ENG__REFUSE_NULL(t, "telemetry", );
    if (source >= t->source_count) return;
    t->sources[source].backend = backend;
    t->sources[source].item_size = item_size;
    t->sources[source].chunk_items = chunk_items ? chunk_items : 1;
}

uint32_t eng_telemetry_source_count(const eng_telemetry *t) {
    ENG__REFUSE_NULL(t, "telemetry", 0);
    return t->source_count;
}

const eng_source_info *eng_telemetry_source(const eng_telemetry *t, uint32_t i) {
    ENG__REFUSE_NULL(t, "telemetry", NULL);
    return i < t->source_count ? &t->sources[i] : NULL;
}

/* ------------------------------------------------------------------ frames */

static uint32_t eng__slot(const eng_telemetry *t, uint32_t i) {
    uint32_t s = t->head + i;
    return s >= t->cap ? s - t->cap : s;
}

/* Where CSV rows go: a caller's stdio stream, or a file writer. */
typedef struct eng__csv_out {
    FILE *f;
    fm_file_writer *w;
} eng__csv_out;

static bool eng__write_frame_rows(const eng_telemetry *t, uint32_t i, eng__csv_out out);

void eng_telemetry_push(eng_telemetry *t, const eng_frame_record *rec, const eng_sample *samples) {
    ENG__REFUSE_NULL(t, "telemetry", );
    if (!rec) return;
    if (t->stream && t->stream_pending)
        eng__write_frame_rows(t, t->count - 1, (eng__csv_out){.w = t->stream});
    uint32_t slot;
    if (t->count < t->cap) {
        slot = eng__slot(t, t->count);
        t->count++;
    } else {
        slot = t->head;
        t->head = eng__slot(t, 1);
    }
    eng_frame_record *r = &t->frames[slot];
    *r = *rec;
    r->grow_events = r->ahead_grow_events = 0;
    eng_sample *dst = &t->samples[(size_t)slot * t->max_sources];
    for (uint32_t s = 0; s < t->source_count; s++) {
        dst[s] = samples ? samples[s] : (eng_sample){0};
        const eng_sample *x = &dst[s];
        eng_source_info *si = &t->sources[s];
        /* Samples may come from a file (any uint64_t): totals saturate. */
        si->total_allocs = eng__sat_add(si->total_allocs, x->allocs);
        si->total_frees = eng__sat_add(si->total_frees, x->frees);
        si->total_alloc_ns = eng__sat_add(si->total_alloc_ns, x->alloc_ns);
        si->total_grow_events = eng__sat_add(si->total_grow_events, x->grow_events);
        si->total_grow_ns = eng__sat_add(si->total_grow_ns, x->grow_ns);
        si->total_ahead_grow_events = eng__sat_add(si->total_ahead_grow_events, x->ahead_grow_events);
        si->total_ahead_grow_ns = eng__sat_add(si->total_ahead_grow_ns, x->ahead_grow_ns);
        if (x->live > si->peak_live) si->peak_live = x->live;
        if (x->peak_live > si->peak_live && si->kind == ENG_SOURCE_POOL) si->peak_live = x->peak_live;
        if (x->grow_events) {
            si->last_grow_frame = rec->frame;
            si->last_grow_ns = x->grow_ns;
        }
        r->grow_events = eng__sat_add32(r->grow_events, x->grow_events);
        r->ahead_grow_events = eng__sat_add32(r->ahead_grow_events, x->ahead_grow_events);
    }
    t->pushed++;
    t->stream_pending = t->stream != NULL;
}

uint32_t eng_telemetry_frame_count(const eng_telemetry *t) {
    ENG__REFUSE_NULL(t, "telemetry", 0);
    return t->count;
}
uint32_t eng_telemetry_capacity(const eng_telemetry *t) {
    ENG__REFUSE_NULL(t, "telemetry", 0);
    return t->cap;
}
uint64_t eng_telemetry_frames_pushed(const eng_telemetry *t) {
    ENG__REFUSE_NULL(t, "telemetry", 0);
    return t->pushed;
}

const eng_frame_record *eng_telemetry_frame(const eng_telemetry *t, uint32_t i) {
    ENG__REFUSE_NULL(t, "telemetry", NULL);
    if (i >= t->count) return NULL;
    return &t->frames[eng__slot(t, i)];
}

const eng_sample *eng_telemetry_sample(const eng_telemetry *t, uint32_t i, uint32_t s) {
    ENG__REFUSE_NULL(t, "telemetry", NULL);
    if (i >= t->count || s >= t->source_count) return NULL;
    return &t->samples[(size_t)eng__slot(t, i) * t->max_sources + s];
}

void eng_telemetry_set_render_ns(eng_telemetry *t, uint64_t render_ns) {
    ENG__REFUSE_NULL(t, "telemetry", );
    if (!t->count) return;
    t->frames[eng__slot(t, t->count - 1)].render_ns = render_ns;
}

void eng_telemetry_clear(eng_telemetry *t) {
    ENG__REFUSE_NULL(t, "telemetry", );
    if (t->stream && t->stream_pending)
        eng__write_frame_rows(t, t->count - 1, (eng__csv_out){.w = t->stream});
    t->stream_pending = false;
    t->head = t->count = 0;
    t->pushed = 0;
    for (uint32_t s = 0; s < t->source_count; s++) {
        eng_source_info *si = &t->sources[s];
        si->total_allocs = si->total_frees = si->total_alloc_ns = 0;
        si->total_grow_events = si->total_grow_ns = 0;
        si->total_ahead_grow_events = si->total_ahead_grow_ns = 0;
        si->peak_live = si->last_grow_frame = si->last_grow_ns = 0;
    }
}

/* ---------------------------------------------------------------- CSV out */

static bool eng__csv_put(eng__csv_out out, const char *text, size_t len) {
    if (out.w) return fm_file_write(out.w, text, len);
    return fwrite(text, 1, len, out.f) == len;
}

/* Every row of frame i; false when a write failed (a writer keeps the reason). */
static bool eng__write_frame_rows(const eng_telemetry *t, uint32_t i, eng__csv_out out) {
    const eng_frame_record *r = eng_telemetry_frame(t, i);
    if (!r) return true;
    for (uint32_t s = 0; s < t->source_count; s++) {
        const eng_source_info *si = &t->sources[s];
        const eng_sample *x = eng_telemetry_sample(t, i, s);
        char row[1024]; /* 24 fields of at most 20 digits or a 31-byte name */
        int n = snprintf(row, sizeof row,
                "%llu,%s,%s,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
                "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
                (unsigned long long)r->frame, si->name,
                si->kind == ENG_SOURCE_POOL ? "pool" : "arena", eng_backend_name(si->backend),
                (unsigned long long)x->allocs, (unsigned long long)x->frees,
                (unsigned long long)x->live, (unsigned long long)x->capacity,
                (unsigned long long)x->peak_live, (unsigned long long)si->item_size,
                (unsigned long long)si->chunk_items, (unsigned long long)x->alloc_ns,
                (unsigned long long)x->grow_events, (unsigned long long)x->grow_ns,
                (unsigned long long)x->ahead_grow_events, (unsigned long long)x->ahead_grow_ns,
                (unsigned long long)x->bytes_used, (unsigned long long)x->high_water,
                (unsigned long long)x->commit_events, (unsigned long long)r->frame_ns,
                (unsigned long long)r->sim_ns, (unsigned long long)r->alloc_total_ns,
                (unsigned long long)r->maint_ns, (unsigned long long)r->render_ns);
        if (n < 0 || (size_t)n >= sizeof row || !eng__csv_put(out, row, (size_t)n)) return false;
    }
    return true;
}

static bool eng__write_csv_rows(const eng_telemetry *t, eng__csv_out out) {
    static const char header[] = ENG_CSV_COLUMNS "\n";
    if (!eng__csv_put(out, header, sizeof header - 1)) return false;
    for (uint32_t i = 0; i < t->count; i++)
        if (!eng__write_frame_rows(t, i, out)) return false;
    return true;
}

bool eng_telemetry_write_csv_file(const eng_telemetry *t, FILE *f) {
    ENG__REFUSE_NULL(t, "telemetry", false);
    ENG__REFUSE_NULL(f, "stream", false);
    return eng__write_csv_rows(t, (eng__csv_out){.f = f}) && !ferror(f);
}

bool eng_telemetry_write_csv(const eng_telemetry *t, const char *path, char *err, size_t err_len) {
    ENG__REFUSE_NULL_ERR(t, "telemetry", err, err_len, false);
    fm_file_writer *w = fm_file_begin(path, err, err_len);
    if (!w) return false;
    eng__write_csv_rows(t, (eng__csv_out){.w = w});
    return fm_file_commit(w, err, err_len);
}

void eng_telemetry_stream_csv(eng_telemetry *t, fm_file_writer *w) {
    ENG__REFUSE_NULL(t, "telemetry", );
    eng_telemetry_stream_end(t);
    t->stream = w;
    t->stream_pending = false;
    if (w) fm_file_write(w, ENG_CSV_COLUMNS "\n", sizeof ENG_CSV_COLUMNS);
}

void eng_telemetry_stream_end(eng_telemetry *t) {
    ENG__REFUSE_NULL(t, "telemetry", );
    if (!t->stream) return;
    if (t->stream_pending) eng__write_frame_rows(t, t->count - 1, (eng__csv_out){.w = t->stream});
    t->stream = NULL;
    t->stream_pending = false;
}

/* --------------------------------------------------------------- trace out */

static void eng__trace_x(fm_file_writer *w, bool *first, const char *name, int tid, double ts_us,
                         double dur_us, uint64_t frame) {
    fm_file_printf(w, "%s\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
               "\"args\":{\"frame\":%llu}}",
            *first ? "" : ",", name, tid, ts_us, dur_us, (unsigned long long)frame);
    *first = false;
}

bool eng_telemetry_write_trace(const eng_telemetry *t, const char *path, char *err,
                               size_t err_len) {
    ENG__REFUSE_NULL_ERR(t, "telemetry", err, err_len, false);
    fm_file_writer *w = fm_file_begin(path, err, err_len);
    if (!w) return false;
    fm_file_printf(w, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    bool first = true;
    static const char *const threads[] = {"", "frame", "split", "growth"};
    for (int tid = 1; tid <= 3; tid++) {
        fm_file_printf(w, "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                   "\"args\":{\"name\":\"%s\"}}",
                first ? "" : ",", tid, threads[tid]);
        first = false;
    }
    /* Frames laid end to end: the engine records durations, not start times. */
    double ts = 0.0;
    for (uint32_t i = 0; i < t->count; i++) {
        const eng_frame_record *r = eng_telemetry_frame(t, i);
        double dur = (double)r->frame_ns / 1000.0;
        fm_file_printf(w, ",\n{\"name\":\"frame %llu\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
                   "\"dur\":%.3f,\"args\":{\"frame\":%llu,\"sim_ns\":%llu,\"alloc_ns\":%llu,"
                   "\"maint_ns\":%llu,\"render_ns\":%llu,\"grow_events\":%u}}",
                (unsigned long long)r->frame, ts, dur, (unsigned long long)r->frame,
                (unsigned long long)r->sim_ns, (unsigned long long)r->alloc_total_ns,
                (unsigned long long)r->maint_ns, (unsigned long long)r->render_ns,
                r->grow_events);
        double at = ts;
        eng__trace_x(w, &first, "maintenance", 2, at, (double)r->maint_ns / 1000.0, r->frame);
        at += (double)r->maint_ns / 1000.0;
        eng__trace_x(w, &first, "simulation", 2, at, (double)r->sim_ns / 1000.0, r->frame);
        at += (double)r->sim_ns / 1000.0;
        eng__trace_x(w, &first, "allocation", 2, at, (double)r->alloc_total_ns / 1000.0, r->frame);
        for (uint32_t s = 0; s < t->source_count; s++) {
            const eng_sample *x = eng_telemetry_sample(t, i, s);
            if (x->grow_events)
                fm_file_printf(w, ",\n{\"name\":\"grow %s\",\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":3,"
                           "\"ts\":%.3f,\"args\":{\"pool\":\"%s\",\"events\":%llu,\"ns\":%llu,"
                           "\"frame\":%llu}}",
                        t->sources[s].name, ts, t->sources[s].name,
                        (unsigned long long)x->grow_events, (unsigned long long)x->grow_ns,
                        (unsigned long long)r->frame);
            if (x->ahead_grow_events)
                fm_file_printf(w, ",\n{\"name\":\"grow-ahead %s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,"
                           "\"tid\":3,\"ts\":%.3f,\"args\":{\"pool\":\"%s\",\"events\":%llu,"
                           "\"ns\":%llu,\"frame\":%llu}}",
                        t->sources[s].name, ts, t->sources[s].name,
                        (unsigned long long)x->ahead_grow_events,
                        (unsigned long long)x->ahead_grow_ns, (unsigned long long)r->frame);
        }
        ts += dur + (double)r->render_ns / 1000.0;
    }
    fm_file_printf(w, "\n]}\n");
    return fm_file_commit(w, err, err_len);
}

/* ----------------------------------------------------------------- CSV in */

enum { COL_FRAME, COL_POOL, COL_KIND, COL_BACKEND, COL_ITEM_SIZE, COL_CHUNK_ITEMS, COL_FIXED };

/* Column names: the fixed ones, then the sample fields, then the frame fields. */
static const char *const eng__fixed_cols[COL_FIXED] = {"frame",   "pool",      "kind",
                                                       "backend", "item_size", "chunk_items"};
#define ENG__NAME(f, d) #f,
static const char *const eng__sample_cols[] = {ENG_SAMPLE_FIELDS(ENG__NAME)};
static const char *const eng__frame_cols[] = {ENG_FRAME_FIELDS(ENG__NAME)};
#undef ENG__NAME
enum {
    N_SAMPLE = sizeof eng__sample_cols / sizeof eng__sample_cols[0],
    N_FRAME = sizeof eng__frame_cols / sizeof eng__frame_cols[0],
    N_COLS = COL_FIXED + N_SAMPLE + N_FRAME
};

static const char *eng__col_name(int c) {
    if (c < COL_FIXED) return eng__fixed_cols[c];
    if (c < COL_FIXED + N_SAMPLE) return eng__sample_cols[c - COL_FIXED];
    return eng__frame_cols[c - COL_FIXED - N_SAMPLE];
}

/* Field k of the X-macro lists, so loops need not know the names. */
static uint64_t *eng__sample_field(eng_sample *x, int k) {
    int i = 0;
#define ENG__AT(f, d) if (k == i++) return &x->f;
    ENG_SAMPLE_FIELDS(ENG__AT)
#undef ENG__AT
    return NULL;
}

static uint64_t *eng__frame_field(eng_frame_record *r, int k) {
    int i = 0;
#define ENG__AT(f, d) if (k == i++) return &r->f;
    ENG_FRAME_FIELDS(ENG__AT)
#undef ENG__AT
    return NULL;
}

typedef struct eng__row {
    uint32_t line;
    uint64_t frame;
    char pool[ENG_NAME_MAX];
    eng_source_kind kind;
    eng_backend backend;
    uint64_t item_size, chunk_items;
    eng_sample sample;
    uint64_t ftimes[N_FRAME];
} eng__row;

/* A field [p, end) as an unsigned decimal; false for anything else. */
static bool eng__parse_u64(const char *p, const char *end, uint64_t *out) {
    if (p == end || end - p > 20) return false;
    uint64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') return false;
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool eng__field_is(const char *p, const char *end, const char *s) {
    size_t n = strlen(s);
    return (size_t)(end - p) == n && memcmp(p, s, n) == 0;
}

#define ENG__CSV_MAX_FIELDS 64

/* Splits line [p, end) at commas. Returns the field count, or -1 when more
 * than max. */
static int eng__split(const char *p, const char *end, const char **fs, const char **fe, int max) {
    int n = 0;
    for (;;) {
        if (n == max) return -1;
        fs[n] = p;
        const char *c = memchr(p, ',', (size_t)(end - p));
        if (!c) {
            fe[n++] = end;
            return n;
        }
        fe[n++] = c;
        p = c + 1;
    }
}

static void eng__printable(const char *p, const char *end, char *out, size_t out_len) {
    size_t n = (size_t)(end - p);
    if (n > out_len - 1) n = out_len - 1;
    for (size_t i = 0; i < n; i++) out[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
    out[n] = 0;
}

eng_telemetry *eng_telemetry_read_csv_mem(const char *data, size_t size, const char *name,
                                          char *err, size_t err_len) {
    if (!name) name = "<csv>";
    fm_file_skip_bom(&data, &size);
    if (!data || size == 0) {
        eng__set_err(err, err_len, "%s:1: empty file (expected the header row)", name);
        return NULL;
    }
    /* Binary content: NUL or control bytes other than tab, CR and LF. */
    {
        uint32_t line = 1;
        for (size_t i = 0; i < size; i++) {
            unsigned char c = (unsigned char)data[i];
            if (c == '\n') line++;
            else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
                eng__set_err(err, err_len, "%s:%u: binary content (byte 0x%02x), not a telemetry CSV",
                             name, line, c);
                return NULL;
            }
        }
    }
    eng__row *rows = NULL; /* stb_ds array */
    size_t nrows = 0;
    eng_telemetry *t = NULL;
    int colmap[N_COLS]; /* field index of each column */
    int nheader = 0;
    const char *fs[ENG__CSV_MAX_FIELDS], *fe[ENG__CSV_MAX_FIELDS];
    const char *p = data, *endall = data + size;
    uint32_t line = 0;
    bool ok = true;

    while (p < endall && ok) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(endall - p));
        if (!nl) {
            eng__set_err(err, err_len, "%s:%u: truncated line (the file ends without a newline)",
                         name, line);
            ok = false;
            break;
        }
        const char *end = nl;
        if (end > p && end[-1] == '\r') end--;
        const char *next = nl + 1;
        if (line == 1) {
            nheader = eng__split(p, end, fs, fe, ENG__CSV_MAX_FIELDS);
            if (nheader < 0) {
                eng__set_err(err, err_len, "%s:1: header has more than %d columns", name,
                             ENG__CSV_MAX_FIELDS);
                ok = false;
                break;
            }
            for (int c = 0; c < N_COLS; c++) {
                colmap[c] = -1;
                for (int k = 0; k < nheader; k++) {
                    if (eng__field_is(fs[k], fe[k], eng__col_name(c))) {
                        colmap[c] = k;
                        break;
                    }
                }
                if (colmap[c] < 0) {
                    eng__set_err(err, err_len, "%s:1: missing column '%s' (header must name: %s)",
                                 name, eng__col_name(c), ENG_CSV_COLUMNS);
                    ok = false;
                    break;
                }
            }
            p = next;
            continue;
        }
        if (end == p) { /* blank line */
            p = next;
            continue;
        }
        int n = eng__split(p, end, fs, fe, ENG__CSV_MAX_FIELDS);
        if (n != nheader) {
            if (n >= 0 && n < nheader)
                eng__set_err(err, err_len, "%s:%u: truncated line (%d of %d fields)", name, line, n,
                             nheader);
            else
                eng__set_err(err, err_len, "%s:%u: too many fields (header has %d)", name, line,
                             nheader);
            ok = false;
            break;
        }
        if (!ENG_ARR_RESERVE(rows, 1, NULL)) {
            eng__set_err(err, err_len, "%s:%u: out of memory", name, line);
            ok = false;
            break;
        }
        eng__row row, *r = &row;
        memset(r, 0, sizeof *r);
        r->line = line;
        for (int c = 0; c < N_COLS && ok; c++) {
            const char *a = fs[colmap[c]], *b = fe[colmap[c]];
            char shown[48];
            if (c == COL_POOL) {
                size_t len = (size_t)(b - a);
                if (len > 0 && len < ENG_NAME_MAX) {
                    memcpy(r->pool, a, len);
                    r->pool[len] = 0;
                }
                if (!eng__valid_name(r->pool)) {
                    eng__printable(a, b, shown, sizeof shown);
                    eng__set_err(err, err_len,
                                 "%s:%u: bad pool name '%s' (1-31 of A-Z a-z 0-9 _ - .)", name,
                                 line, shown);
                    ok = false;
                }
                continue;
            }
            if (c == COL_KIND) {
                if (eng__field_is(a, b, "pool")) r->kind = ENG_SOURCE_POOL;
                else if (eng__field_is(a, b, "arena")) r->kind = ENG_SOURCE_ARENA;
                else {
                    eng__printable(a, b, shown, sizeof shown);
                    eng__set_err(err, err_len, "%s:%u: bad kind '%s' (pool or arena)", name, line,
                                 shown);
                    ok = false;
                }
                continue;
            }
            if (c == COL_BACKEND) {
                if (eng__field_is(a, b, "pool")) r->backend = ENG_BACKEND_POOL;
                else if (eng__field_is(a, b, "malloc")) r->backend = ENG_BACKEND_MALLOC;
                else {
                    eng__printable(a, b, shown, sizeof shown);
                    eng__set_err(err, err_len, "%s:%u: bad backend '%s' (pool or malloc)", name,
                                 line, shown);
                    ok = false;
                }
                continue;
            }
            uint64_t v;
            if (!eng__parse_u64(a, b, &v)) {
                eng__printable(a, b, shown, sizeof shown);
                eng__set_err(err, err_len,
                             "%s:%u: bad number '%s' in column '%s' (unsigned decimal integer)",
                             name, line, shown, eng__col_name(c));
                ok = false;
                continue;
            }
            if (c == COL_FRAME) r->frame = v;
            else if (c == COL_ITEM_SIZE) r->item_size = v;
            else if (c == COL_CHUNK_ITEMS) {
                if (v == 0) {
                    eng__set_err(err, err_len, "%s:%u: chunk_items must be at least 1", name, line);
                    ok = false;
                }
                r->chunk_items = v;
            } else if (c < COL_FIXED + N_SAMPLE) {
                *eng__sample_field(&r->sample, c - COL_FIXED) = v;
            } else {
                r->ftimes[c - COL_FIXED - N_SAMPLE] = v;
            }
        }
        if (ok) arrput(rows, row); /* into the room reserved: cannot fail */
        p = next;
    }
    nrows = arrlenu(rows);
    if (ok && line <= 1 && nheader == 0) {
        eng__set_err(err, err_len, "%s:1: empty file (expected the header row)", name);
        ok = false;
    }
    if (ok && nrows == 0) {
        eng__set_err(err, err_len, "%s:%u: no data rows after the header", name, line);
        ok = false;
    }

    /* Structure: sources from the first frame; every frame has each once. */
    uint32_t nsrc = 0, nframes = 0;
    char srcnames[ENG_TELEMETRY_MAX_SOURCES][ENG_NAME_MAX];
    eng_source_kind srckind[ENG_TELEMETRY_MAX_SOURCES];
    if (ok) {
        uint64_t f0 = rows[0].frame;
        for (size_t i = 0; i < nrows && rows[i].frame == f0 && ok; i++) {
            for (uint32_t s = 0; s < nsrc; s++) {
                if (strcmp(srcnames[s], rows[i].pool) == 0) {
                    eng__set_err(err, err_len, "%s:%u: pool '%s' appears twice in frame %llu",
                                 name, rows[i].line, rows[i].pool, (unsigned long long)f0);
                    ok = false;
                }
            }
            if (!ok) break;
            if (nsrc == ENG_TELEMETRY_MAX_SOURCES) {
                eng__set_err(err, err_len, "%s:%u: more than %d pools in a frame", name,
                             rows[i].line, ENG_TELEMETRY_MAX_SOURCES);
                ok = false;
                break;
            }
            memcpy(srcnames[nsrc], rows[i].pool, ENG_NAME_MAX);
            srckind[nsrc++] = rows[i].kind;
        }
        if (ok) nframes = (uint32_t)(nrows / nsrc);
        if (ok && nrows > (size_t)UINT32_MAX) ok = false;
    }
    if (ok) {
        t = eng_telemetry_create(&(eng_telemetry_desc){.frames = nframes ? nframes : 1,
                                                       .max_sources = nsrc});
        if (!t) {
            eng__set_err(err, err_len, "%s: out of memory for %u frames", name, nframes);
            ok = false;
        }
    }
    if (ok) {
        for (uint32_t s = 0; s < nsrc; s++)
            eng_telemetry_add_source(t, srcnames[s], srckind[s], 0, 1);
        eng_sample samples[ENG_TELEMETRY_MAX_SOURCES];
        bool seen[ENG_TELEMETRY_MAX_SOURCES];
        size_t i = 0;
        uint64_t prev_frame = 0;
        uint32_t frames_done = 0;
        while (i < nrows && ok) {
            uint64_t fr = rows[i].frame;
            if (frames_done > 0 && fr <= prev_frame) {
                eng__set_err(err, err_len,
                             "%s:%u: frame %llu after frame %llu (frames must increase)", name,
                             rows[i].line, (unsigned long long)fr, (unsigned long long)prev_frame);
                ok = false;
                break;
            }
            memset(seen, 0, sizeof seen);
            memset(samples, 0, sizeof samples);
            eng_frame_record rec = {.frame = fr};
            for (int k = 0; k < N_FRAME; k++) *eng__frame_field(&rec, k) = rows[i].ftimes[k];
            size_t last = i;
            for (; i < nrows && rows[i].frame == fr; i++) {
                const eng__row *r = &rows[i];
                last = i;
                int s = eng_telemetry_find_source(t, r->pool);
                if (s < 0) {
                    eng__set_err(err, err_len, "%s:%u: pool '%s' is not in the first frame", name,
                                 r->line, r->pool);
                    ok = false;
                    break;
                }
                if (seen[s]) {
                    eng__set_err(err, err_len, "%s:%u: pool '%s' appears twice in frame %llu",
                                 name, r->line, r->pool, (unsigned long long)fr);
                    ok = false;
                    break;
                }
                if (r->kind != srckind[s]) {
                    eng__set_err(err, err_len, "%s:%u: pool '%s' changes kind", name, r->line,
                                 r->pool);
                    ok = false;
                    break;
                }
                seen[s] = true;
                samples[s] = r->sample;
                eng_telemetry_set_source_shape(t, (uint32_t)s, r->backend, r->item_size,
                                               r->chunk_items);
            }
            for (uint32_t s = 0; s < nsrc && ok; s++) {
                if (!seen[s]) {
                    eng__set_err(err, err_len, "%s:%u: frame %llu has no row for pool '%s'", name,
                                 rows[last].line, (unsigned long long)fr, srcnames[s]);
                    ok = false;
                }
            }
            if (!ok) break;
            if (frames_done == t->cap) {
                /* More frames than nrows / nsrc means some frame lacked rows;
                 * caught above, so this cannot happen, but never overwrite. */
                eng__set_err(err, err_len, "%s:%u: inconsistent frame count", name, rows[i - 1].line);
                ok = false;
                break;
            }
            eng_telemetry_push(t, &rec, samples);
            frames_done++;
            prev_frame = fr;
        }
    }
    arrfree(rows);
    if (!ok) {
        eng_telemetry_destroy(t);
        return NULL;
    }
    return t;
}

eng_telemetry *eng_telemetry_read_csv(const char *path, char *err, size_t err_len) {
    if (!path) {
        eng__set_err(err, err_len, "no CSV path given");
        return NULL;
    }
    /* ENG_CSV_MAX_BYTES, 256 MiB, holds about an hour of the demo at 60 fps. */
    fm_file_data file;
    if (!fm_file_read(path, ENG_CSV_MAX_BYTES, NULL, &file, err, err_len)) return NULL;
    eng_telemetry *t = eng_telemetry_read_csv_mem(file.data, file.size, path, err, err_len);
    fm_file_data_release(&file);
    return t;
}
