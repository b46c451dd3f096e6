/* csv.c: the telemetry CSV writer and stream, the Chrome trace, the CSV reader. */
#include "telemetry_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ columns */

/* Every column, in the order the writer writes them: the first
 * FM__TEL_REQUIRED ones are FM_TELEMETRY_CSV_COLUMNS (every file has them),
 * the rest FM_TELEMETRY_CSV_COLUMNS_ADDED. One table drives the writer and
 * the reader. */
typedef enum fm__col_type {
    FM__COL_FRAME,   /* the frame number */
    FM__COL_POOL,    /* the source's name */
    FM__COL_KIND,
    FM__COL_BACKEND,
    FM__COL_SOURCE,  /* a uint64_t of fm_telemetry_source at off */
    FM__COL_SAMPLE,  /* a uint64_t of fm_telemetry_sample at off */
    FM__COL_TIME,    /* a uint64_t of fm_telemetry_frame at off */
} fm__col_type;

typedef struct fm__col {
    const char *name;
    fm__col_type type;
    size_t off;
} fm__col;

#define FM__S(f) {#f, FM__COL_SAMPLE, offsetof(fm_telemetry_sample, f)}
#define FM__T(f) {#f, FM__COL_TIME, offsetof(fm_telemetry_frame, f)}
#define FM__SRC(f) {#f, FM__COL_SOURCE, offsetof(fm_telemetry_source, f)}
static const fm__col fm__cols[] = {
    {"frame", FM__COL_FRAME, 0}, {"pool", FM__COL_POOL, 0}, {"kind", FM__COL_KIND, 0},
    {"backend", FM__COL_BACKEND, 0}, FM__S(allocs), FM__S(frees), FM__S(live),
    FM__S(capacity), FM__S(peak_live), FM__SRC(item_size), FM__SRC(chunk_items),
    FM__S(alloc_ns), FM__S(grow_events), FM__S(grow_ns), FM__S(ahead_grow_events),
    FM__S(ahead_grow_ns), FM__S(bytes_used), FM__S(high_water), FM__S(commit_events),
    FM__T(frame_ns), FM__T(sim_ns), FM__T(alloc_total_ns), FM__T(maint_ns), FM__T(render_ns),
    /* issue 20 */
    FM__S(resets), FM__S(failed), FM__SRC(soft_limit), FM__SRC(hard_limit),
};
#undef FM__S
#undef FM__T
#undef FM__SRC
enum {
    FM__N_COLS = sizeof fm__cols / sizeof fm__cols[0],
    FM__REQUIRED = 24, /* FM_TELEMETRY_CSV_COLUMNS */
};
static const char fm__header[] = FM_TELEMETRY_CSV_COLUMNS "," FM_TELEMETRY_CSV_COLUMNS_ADDED "\n";

static uint64_t *fm__col_u64(void *base, const fm__col *c) {
    return (uint64_t *)(void *)((char *)base + c->off);
}

/* ============================================================== CSV out */

/* Where CSV rows go: a caller's stdio stream, or a file writer. */
typedef struct fm__csv_out {
    FILE *f;
    fm_file_writer *w;
} fm__csv_out;

static bool fm__csv_put(fm__csv_out out, const char *text, size_t len) {
    if (out.w) return fm_file_write(out.w, text, len);
    return fwrite(text, 1, len, out.f) == len;
}

/* Every row of frame i; false when a write failed (a writer keeps the reason). */
static bool fm__write_frame_rows(const fm_telemetry *t, uint32_t i, fm__csv_out out) {
    const fm_telemetry_frame *r = fm_telemetry_get_frame(t, i);
    if (!r) return true;
    for (uint32_t s = 0; s < t->source_count; s++) {
        const fm_telemetry_source *si = &t->sources[s];
        fm_telemetry_sample x = *fm_telemetry_get_sample(t, i, s);
        fm_telemetry_frame rec = *r;
        fm_telemetry_source src = *si;
        char row[1024]; /* 28 fields of at most 20 digits or a 31-byte name */
        size_t n = 0;
        for (int c = 0; c < FM__N_COLS; c++) {
            const fm__col *col = &fm__cols[c];
            const char *text = NULL;
            uint64_t v = 0;
            switch (col->type) {
            case FM__COL_FRAME: v = r->frame; break;
            case FM__COL_POOL: text = si->name; break;
            case FM__COL_KIND: text = fm_telemetry_kind_name(si->kind); break;
            case FM__COL_BACKEND: text = fm_telemetry_backend_name(si->backend); break;
            case FM__COL_SOURCE: v = *fm__col_u64(&src, col); break;
            case FM__COL_SAMPLE: v = *fm__col_u64(&x, col); break;
            case FM__COL_TIME: v = *fm__col_u64(&rec, col); break;
            }
            int k = text ? snprintf(row + n, sizeof row - n, "%s%c", text, c + 1 < FM__N_COLS ? ',' : '\n')
                         : snprintf(row + n, sizeof row - n, "%llu%c", (unsigned long long)v,
                                    c + 1 < FM__N_COLS ? ',' : '\n');
            if (k < 0 || (size_t)k >= sizeof row - n) return false;
            n += (size_t)k;
        }
        if (!fm__csv_put(out, row, n)) return false;
    }
    return true;
}

static bool fm__write_csv_rows(const fm_telemetry *t, fm__csv_out out) {
    if (!fm__csv_put(out, fm__header, sizeof fm__header - 1)) return false;
    for (uint32_t i = 0; i < t->count; i++)
        if (!fm__write_frame_rows(t, i, out)) return false;
    return true;
}

bool fm_telemetry_write_csv_file(const fm_telemetry *tel, FILE *f) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", false);
    FM__TEL_REFUSE_NULL(f, "stream", false);
    return fm__write_csv_rows(tel, (fm__csv_out){.f = f}) && !ferror(f);
}

bool fm_telemetry_write_csv(const fm_telemetry *tel, const char *path, char *err, size_t err_len) {
    FM__TEL_REFUSE_NULL_ERR(tel, "telemetry", err, err_len, false);
    fm_file_writer *w = fm_file_begin(path, err, err_len);
    if (!w) return false;
    fm__write_csv_rows(tel, (fm__csv_out){.w = w});
    return fm_file_commit(w, err, err_len);
}

void fm__tel_stream_pending(fm_telemetry *tel) {
    if (tel->stream && tel->stream_pending && tel->count)
        fm__write_frame_rows(tel, tel->count - 1, (fm__csv_out){.w = tel->stream});
    tel->stream_pending = false;
}

void fm_telemetry_stream_csv(fm_telemetry *tel, fm_file_writer *w) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    fm_telemetry_stream_end(tel);
    tel->stream = w;
    tel->stream_pending = false;
    if (w) fm_file_write(w, fm__header, sizeof fm__header - 1);
}

void fm_telemetry_stream_end(fm_telemetry *tel) {
    FM__TEL_REFUSE_NULL(tel, "telemetry", );
    if (!tel->stream) return;
    fm__tel_stream_pending(tel);
    tel->stream = NULL;
}

/* ============================================================= trace out */

static void fm__trace_x(fm_file_writer *w, bool *first, const char *name, int tid, double ts_us,
                        double dur_us, uint64_t frame) {
    fm_file_printf(w,
                   "%s\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                   "\"args\":{\"frame\":%llu}}",
                   *first ? "" : ",", name, tid, ts_us, dur_us, (unsigned long long)frame);
    *first = false;
}

/* An instant event of a pool's growths in one frame: "grow" inside
 * allocations (scope g), "grow-ahead" at the frame boundary (scope t). */
static void fm__trace_growth(fm_file_writer *w, const char *what, char scope, const char *pool,
                             double ts_us, uint64_t events, uint64_t ns, uint64_t frame) {
    fm_file_printf(w,
                   ",\n{\"name\":\"%s %s\",\"ph\":\"i\",\"s\":\"%c\",\"pid\":1,\"tid\":3,"
                   "\"ts\":%.3f,\"args\":{\"pool\":\"%s\",\"events\":%llu,\"ns\":%llu,"
                   "\"frame\":%llu}}",
                   what, pool, scope, ts_us, pool, (unsigned long long)events,
                   (unsigned long long)ns, (unsigned long long)frame);
}

bool fm_telemetry_write_trace(const fm_telemetry *tel, const char *path, char *err,
                              size_t err_len) {
    FM__TEL_REFUSE_NULL_ERR(tel, "telemetry", err, err_len, false);
    const fm_telemetry *t = tel;
    fm_file_writer *w = fm_file_begin(path, err, err_len);
    if (!w) return false;
    fm_file_printf(w, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    bool first = true;
    static const char *const threads[] = {"", "frame", "split", "growth"};
    for (int tid = 1; tid <= 3; tid++) {
        fm_file_printf(w,
                       "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                       "\"args\":{\"name\":\"%s\"}}",
                       first ? "" : ",", tid, threads[tid]);
        first = false;
    }
    /* Frames laid end to end: the telemetry records durations, not start times. */
    double ts = 0.0;
    for (uint32_t i = 0; i < t->count; i++) {
        const fm_telemetry_frame *r = fm_telemetry_get_frame(t, i);
        double dur = (double)r->frame_ns / 1000.0;
        fm_file_printf(w,
                       ",\n{\"name\":\"frame %llu\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
                       "\"dur\":%.3f,\"args\":{\"frame\":%llu,\"sim_ns\":%llu,\"alloc_ns\":%llu,"
                       "\"maint_ns\":%llu,\"render_ns\":%llu,\"grow_events\":%u}}",
                       (unsigned long long)r->frame, ts, dur, (unsigned long long)r->frame,
                       (unsigned long long)r->sim_ns, (unsigned long long)r->alloc_total_ns,
                       (unsigned long long)r->maint_ns, (unsigned long long)r->render_ns,
                       r->grow_events);
        double at = ts;
        fm__trace_x(w, &first, "maintenance", 2, at, (double)r->maint_ns / 1000.0, r->frame);
        at += (double)r->maint_ns / 1000.0;
        fm__trace_x(w, &first, "simulation", 2, at, (double)r->sim_ns / 1000.0, r->frame);
        at += (double)r->sim_ns / 1000.0;
        fm__trace_x(w, &first, "allocation", 2, at, (double)r->alloc_total_ns / 1000.0, r->frame);
        for (uint32_t s = 0; s < t->source_count; s++) {
            const fm_telemetry_sample *x = fm_telemetry_get_sample(t, i, s);
            if (x->grow_events)
                fm__trace_growth(w, "grow", 'g', t->sources[s].name, ts, x->grow_events,
                                 x->grow_ns, r->frame);
            if (x->ahead_grow_events)
                fm__trace_growth(w, "grow-ahead", 't', t->sources[s].name, ts,
                                 x->ahead_grow_events, x->ahead_grow_ns, r->frame);
        }
        ts += dur + (double)r->render_ns / 1000.0;
    }
    fm_file_printf(w, "\n]}\n");
    return fm_file_commit(w, err, err_len);
}

/* =============================================================== CSV in */

/* One data row as read. */
typedef struct fm__row {
    uint64_t frame;
    fm_telemetry_source src; /* name, kind, backend and the source columns */
    fm_telemetry_sample sample;
    fm_telemetry_frame times;
} fm__row;

/* A field [p, end) as an unsigned decimal; false for anything else. */
static bool fm__parse_u64(const char *p, const char *end, uint64_t *out) {
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

static bool fm__field_is(const char *p, const char *end, const char *s) {
    size_t n = strlen(s);
    return (size_t)(end - p) == n && memcmp(p, s, n) == 0;
}

#define FM__CSV_MAX_FIELDS 64

/* Splits line [p, end) at commas. Returns the field count, or -1 when more
 * than max. */
static int fm__split(const char *p, const char *end, const char **fs, const char **fe, int max) {
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

static void fm__printable(const char *p, const char *end, char *out, size_t out_len) {
    size_t n = (size_t)(end - p);
    if (n > out_len - 1) n = out_len - 1;
    for (size_t i = 0; i < n; i++) out[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
    out[n] = 0;
}

/* The reader's state: the text, the header's column map, the line. */
typedef struct fm__reader {
    const char *name, *p, *end;
    uint32_t line;
    int colmap[FM__N_COLS]; /* field of each column; -1: absent (optional ones) */
    int nheader;
    char *err;
    size_t err_len;
} fm__reader;

/* The next line [*a, *b) (line end cut); false at the end of the text or
 * (with a message) when the text ends without a newline. */
static bool fm__next_line(fm__reader *rd, const char **a, const char **b, bool *ok) {
    if (rd->p >= rd->end) return false;
    rd->line++;
    const char *nl = memchr(rd->p, '\n', (size_t)(rd->end - rd->p));
    if (!nl) {
        fm__tel_set_err(rd->err, rd->err_len,
                        "%s:%u: truncated line (the file ends without a newline)", rd->name,
                        rd->line);
        *ok = false;
        return false;
    }
    *a = rd->p;
    *b = nl > rd->p && nl[-1] == '\r' ? nl - 1 : nl;
    rd->p = nl + 1;
    return true;
}

static bool fm__read_header(fm__reader *rd) {
    const char *a, *b, *fs[FM__CSV_MAX_FIELDS], *fe[FM__CSV_MAX_FIELDS];
    bool ok = true;
    if (!fm__next_line(rd, &a, &b, &ok)) {
        if (ok) fm__tel_set_err(rd->err, rd->err_len, "%s:1: empty file (expected the header row)",
                                rd->name);
        return false;
    }
    rd->nheader = fm__split(a, b, fs, fe, FM__CSV_MAX_FIELDS);
    if (rd->nheader < 0) {
        fm__tel_set_err(rd->err, rd->err_len, "%s:1: header has more than %d columns", rd->name,
                        FM__CSV_MAX_FIELDS);
        return false;
    }
    for (int c = 0; c < FM__N_COLS; c++) {
        rd->colmap[c] = -1;
        for (int k = 0; k < rd->nheader && rd->colmap[c] < 0; k++)
            if (fm__field_is(fs[k], fe[k], fm__cols[c].name)) rd->colmap[c] = k;
        if (rd->colmap[c] < 0 && c < FM__REQUIRED) {
            fm__tel_set_err(rd->err, rd->err_len,
                            "%s:1: missing column '%s' (header must name: %s)", rd->name,
                            fm__cols[c].name, FM_TELEMETRY_CSV_COLUMNS);
            return false;
        }
    }
    return true;
}

/* Parses the data line [a, b) into row; false with a message. */
static bool fm__parse_row(fm__reader *rd, const char *a, const char *b, fm__row *row) {
    const char *fs[FM__CSV_MAX_FIELDS], *fe[FM__CSV_MAX_FIELDS];
    int n = fm__split(a, b, fs, fe, FM__CSV_MAX_FIELDS);
    if (n != rd->nheader) {
        if (n >= 0 && n < rd->nheader)
            fm__tel_set_err(rd->err, rd->err_len, "%s:%u: truncated line (%d of %d fields)",
                            rd->name, rd->line, n, rd->nheader);
        else
            fm__tel_set_err(rd->err, rd->err_len, "%s:%u: too many fields (header has %d)",
                            rd->name, rd->line, rd->nheader);
        return false;
    }
    memset(row, 0, sizeof *row);
    for (int c = 0; c < FM__N_COLS; c++) {
        if (rd->colmap[c] < 0) continue;
        const fm__col *col = &fm__cols[c];
        const char *p = fs[rd->colmap[c]], *e = fe[rd->colmap[c]];
        char shown[48];
        if (col->type == FM__COL_POOL) {
            size_t len = (size_t)(e - p);
            if (len > 0 && len < FM_TELEMETRY_NAME_MAX) {
                memcpy(row->src.name, p, len);
                row->src.name[len] = 0;
            }
            if (!fm__tel_valid_name(row->src.name)) {
                fm__printable(p, e, shown, sizeof shown);
                fm__tel_set_err(rd->err, rd->err_len,
                                "%s:%u: bad pool name '%s' (1-31 of A-Z a-z 0-9 _ - .)", rd->name,
                                rd->line, shown);
                return false;
            }
            continue;
        }
        if (col->type == FM__COL_KIND) {
            int k = 0;
            while (k < FM_TELEMETRY_KIND_COUNT &&
                   !fm__field_is(p, e, fm_telemetry_kind_name((fm_telemetry_kind)k)))
                k++;
            if (k == FM_TELEMETRY_KIND_COUNT) {
                fm__printable(p, e, shown, sizeof shown);
                fm__tel_set_err(rd->err, rd->err_len,
                                "%s:%u: bad kind '%s' (pool, arena, closures or tag)", rd->name,
                                rd->line, shown);
                return false;
            }
            row->src.kind = (fm_telemetry_kind)k;
            continue;
        }
        if (col->type == FM__COL_BACKEND) {
            if (fm__field_is(p, e, "pool")) row->src.backend = FM_TELEMETRY_BACKEND_POOL;
            else if (fm__field_is(p, e, "malloc")) row->src.backend = FM_TELEMETRY_BACKEND_MALLOC;
            else if (fm__field_is(p, e, "classic")) row->src.backend = FM_TELEMETRY_BACKEND_CLASSIC;
            else {
                fm__printable(p, e, shown, sizeof shown);
                fm__tel_set_err(rd->err, rd->err_len, "%s:%u: bad backend '%s' (pool, malloc or classic)",
                                rd->name, rd->line, shown);
                return false;
            }
            continue;
        }
        uint64_t v;
        if (!fm__parse_u64(p, e, &v)) {
            fm__printable(p, e, shown, sizeof shown);
            fm__tel_set_err(rd->err, rd->err_len,
                            "%s:%u: bad number '%s' in column '%s' (unsigned decimal integer)",
                            rd->name, rd->line, shown, col->name);
            return false;
        }
        switch (col->type) {
        case FM__COL_FRAME: row->frame = v; break;
        case FM__COL_SOURCE: *fm__col_u64(&row->src, col) = v; break;
        case FM__COL_SAMPLE: *fm__col_u64(&row->sample, col) = v; break;
        case FM__COL_TIME: *fm__col_u64(&row->times, col) = v; break;
        default: break;
        }
    }
    if (row->src.chunk_items == 0) {
        fm__tel_set_err(rd->err, rd->err_len, "%s:%u: chunk_items must be at least 1", rd->name,
                        rd->line);
        return false;
    }
    return true;
}

/* What the first pass learns: the sources in order of appearance and the
 * frame count. */
typedef struct fm__csv_shape {
    uint32_t nsrc;
    char names[FM_TELEMETRY_MAX_SOURCES][FM_TELEMETRY_NAME_MAX];
    fm_telemetry_kind kinds[FM_TELEMETRY_MAX_SOURCES];
    uint32_t frames;
} fm__csv_shape;

static int fm__shape_find(const fm__csv_shape *sh, const char *name) {
    for (uint32_t s = 0; s < sh->nsrc; s++)
        if (strcmp(sh->names[s], name) == 0) return (int)s;
    return -1;
}

/* Pass over the rows: checks every rule. With t (the second pass, over text
 * the first one accepted), the frames go into t. */
static bool fm__read_rows(fm__reader *rd, fm__csv_shape *sh, fm_telemetry *t) {
    const char *a, *b;
    bool ok = true, in_frame = false;
    uint64_t frame = 0;
    uint32_t last_line = 0;
    bool seen[FM_TELEMETRY_MAX_SOURCES], appeared[FM_TELEMETRY_MAX_SOURCES] = {0};
    fm_telemetry_sample *samples = t ? t->scratch : NULL;
    fm_telemetry_frame rec = {0};
    fm__row row;
    /* Ends the open frame: every source seen before it must have a row. */
#define FM__END_FRAME()                                                                       \
    do {                                                                                      \
        for (uint32_t s_ = 0; s_ < sh->nsrc && ok; s_++)                                      \
            if (appeared[s_] && !seen[s_]) {                                                  \
                fm__tel_set_err(rd->err, rd->err_len, "%s:%u: frame %llu has no row for pool '%s'", \
                                rd->name, last_line, (unsigned long long)frame, sh->names[s_]); \
                ok = false;                                                                   \
            }                                                                                 \
        if (ok && t) fm_telemetry_push(t, &rec, samples);                                     \
        if (ok && !t) sh->frames++;                                                           \
    } while (0)
    while (ok && fm__next_line(rd, &a, &b, &ok)) {
        if (a == b) continue; /* blank line */
        if (!fm__parse_row(rd, a, b, &row)) return false;
        if (!in_frame || row.frame != frame) {
            if (in_frame) {
                FM__END_FRAME();
                if (!ok) break;
                if (row.frame <= frame) {
                    fm__tel_set_err(rd->err, rd->err_len,
                                    "%s:%u: frame %llu after frame %llu (frames must increase)",
                                    rd->name, rd->line, (unsigned long long)row.frame,
                                    (unsigned long long)frame);
                    return false;
                }
            }
            in_frame = true;
            frame = row.frame;
            memset(seen, 0, sizeof seen);
            if (samples) memset(samples, 0, (size_t)t->max_sources * sizeof *samples);
            rec = row.times;
            rec.frame = frame;
        }
        last_line = rd->line;
        int s = fm__shape_find(sh, row.src.name);
        if (s < 0) {
            if (t) return false; /* cannot happen: the first pass saw it */
            if (sh->nsrc == FM_TELEMETRY_MAX_SOURCES) {
                fm__tel_set_err(rd->err, rd->err_len, "%s:%u: more than %d pools", rd->name,
                                rd->line, FM_TELEMETRY_MAX_SOURCES);
                return false;
            }
            s = (int)sh->nsrc++;
            memcpy(sh->names[s], row.src.name, FM_TELEMETRY_NAME_MAX);
            sh->kinds[s] = row.src.kind;
        } else if (seen[s]) {
            fm__tel_set_err(rd->err, rd->err_len, "%s:%u: pool '%s' appears twice in frame %llu",
                            rd->name, rd->line, row.src.name, (unsigned long long)frame);
            return false;
        } else if (sh->kinds[s] != row.src.kind) {
            fm__tel_set_err(rd->err, rd->err_len, "%s:%u: pool '%s' changes kind", rd->name,
                            rd->line, row.src.name);
            return false;
        }
        seen[s] = appeared[s] = true;
        if (t) {
            samples[s] = row.sample;
            fm_telemetry_set_source_shape(t, (uint32_t)s, row.src.backend, row.src.item_size,
                                          row.src.chunk_items);
            fm_telemetry_set_source_limits(t, (uint32_t)s, row.src.soft_limit, row.src.hard_limit);
        }
    }
    if (ok && in_frame) FM__END_FRAME();
#undef FM__END_FRAME
    if (ok && !in_frame && !t) {
        fm__tel_set_err(rd->err, rd->err_len, "%s:%u: no data rows after the header", rd->name,
                        rd->line);
        return false;
    }
    return ok;
}

fm_telemetry *fm_telemetry_read_csv_mem(const char *data, size_t size, const char *name,
                                        char *err, size_t err_len) {
    if (!name) name = "<csv>";
    fm_file_skip_bom(&data, &size);
    if (!data || size == 0) {
        fm__tel_set_err(err, err_len, "%s:1: empty file (expected the header row)", name);
        return NULL;
    }
    /* Binary content: NUL or control bytes other than tab, CR and LF. */
    uint32_t line = 1;
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c == '\n') line++;
        else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
            fm__tel_set_err(err, err_len, "%s:%u: binary content (byte 0x%02x), not a telemetry CSV",
                            name, line, c);
            return NULL;
        }
    }
    /* Two passes over the text: the first checks it and learns its shape,
     * the second fills a telemetry of exactly that size. No row is kept in
     * between, so a big file takes its ring's memory and no more. */
    fm__csv_shape *sh = malloc(sizeof *sh); /* 9 KiB of names: not on the stack */
    if (!sh) {
        fm__tel_set_err(err, err_len, "%s: out of memory", name);
        return NULL;
    }
    memset(sh, 0, sizeof *sh);
    fm__reader rd = {.name = name, .p = data, .end = data + size, .err = err, .err_len = err_len};
    fm_telemetry *t = NULL;
    if (fm__read_header(&rd) && fm__read_rows(&rd, sh, NULL)) {
        t = fm_telemetry_create(&(fm_telemetry_desc){.frames = sh->frames,
                                                      .max_sources = sh->nsrc});
        if (!t) {
            fm__tel_set_err(err, err_len, "%s: out of memory for %u frames of %u pools", name,
                            sh->frames, sh->nsrc);
        } else {
            for (uint32_t s = 0; s < sh->nsrc; s++)
                fm_telemetry_add_source(t, sh->names[s], sh->kinds[s], 0, 1);
            fm__reader again = {.name = name, .p = data, .end = data + size, .err = err,
                                .err_len = err_len};
            if (!fm__read_header(&again) || !fm__read_rows(&again, sh, t)) {
                fm_telemetry_destroy(t);
                t = NULL;
            }
        }
    }
    free(sh);
    return t;
}

fm_telemetry *fm_telemetry_read_csv(const char *path, char *err, size_t err_len) {
    if (!path) {
        fm__tel_set_err(err, err_len, "no CSV path given");
        return NULL;
    }
    fm_file_data file;
    if (!fm_file_read(path, FM_TELEMETRY_CSV_MAX_BYTES, NULL, &file, err, err_len)) return NULL;
    fm_telemetry *t = fm_telemetry_read_csv_mem(file.data, file.size, path, err, err_len);
    fm_file_data_release(&file);
    return t;
}
