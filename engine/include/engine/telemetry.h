/*
 * engine/telemetry.h: per-frame allocation telemetry of pools and arenas.
 *
 * A telemetry object holds a registry of sources (pools and arenas, by name;
 * a source's index is stable and is what the overlay colours by) and a ring
 * buffer of the last N frames (default 600): one eng_frame_record per frame
 * plus one eng_sample per source and frame. Everything is allocated at
 * create; pushing frames, streaming CSV and reading never allocate.
 *
 * The same object comes from a live engine (eng_get_telemetry) or from a CSV
 * file (eng_telemetry_read_csv); readers cannot tell the difference, so the
 * overlay, fm-plot and fm-tune draw and tune from either.
 *
 * Times are nanoseconds from fm_clock. alloc_ns is measured around batches of
 * alloc/free calls (a burst of spawns, the free loop over a frame's dead
 * items), never around single calls; each timed batch is charged its
 * calibrated clock overhead (eng_telemetry_clock_overhead_ns) subtracted, so
 * the figure is the time inside the allocator's calls.
 *
 * ---------------------------------------------------------------- CSV format
 * One header row, then one row per frame per source, frames oldest first and
 * within a frame sources in registry order. Columns (ENG_CSV_COLUMNS):
 *
 *   frame              frame number (since the engine started; not reset)
 *   pool               source name ([A-Za-z0-9_.-], at most 31 characters)
 *   kind               "pool" or "arena"
 *   backend            "pool" or "malloc": what served this source's items
 *   allocs             allocations during the frame
 *   frees              frees during the frame
 *   live               items live at the end of the frame (arena: 0)
 *   capacity           items the pool holds without growing, end of frame
 *                      (malloc backend: live; arena: bytes committed)
 *   peak_live          highest live since the stats were last reset
 *   item_size          bytes per item (pool stride; malloc: the item size;
 *                      arena: 0)
 *   chunk_items        items per pool chunk, the unit capacities round to
 *                      (malloc backend and arena: 1)
 *   alloc_ns           ns inside alloc/free calls during the frame
 *   grow_events        growths inside allocation calls (the hitches)
 *   grow_ns            ns of those growths (part of alloc_ns)
 *   ahead_grow_events  growths done by grow-ahead at the frame boundary
 *   ahead_grow_ns      ns of those (maintenance, not part of alloc_ns)
 *   bytes_used         arena: bytes allocated during the frame (pool: 0)
 *   high_water         arena: the largest frame's bytes so far (pool: 0)
 *   commit_events      arena: commits during the frame (pool: 0)
 *   frame_ns           whole frame as the engine measured it (begin to end)
 *   sim_ns             simulation, allocation excluded
 *   alloc_total_ns     sum of every source's alloc_ns in the frame
 *   maint_ns           frame-boundary maintenance (grow-ahead, sampling)
 *   render_ns          set by the platform (eng_set_render_ns), else 0
 *
 * The last six are per frame and repeat on every row of that frame. Numbers
 * are unsigned decimal integers. Extra columns are ignored by the reader;
 * column order is free.
 *
 * NULL: every function reports a NULL telemetry object (or stream) as
 * framemem does (base.h: FM_ERR_INVALID_ARG naming the function, also in err
 * where there is one) and returns its failure value (false, NULL, 0, -1;
 * nothing written). eng_telemetry_destroy(NULL) does nothing; a NULL desc
 * means every default.
 */
#ifndef ENGINE_TELEMETRY_H
#define ENGINE_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "framemem/file.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ENG_NAME_MAX 32          /* source names, terminator included */
#define ENG_TELEMETRY_MAX_SOURCES 32
/* Largest CSV eng_telemetry_read_csv reads; a bigger file is refused, never
 * read into memory. */
#define ENG_CSV_MAX_BYTES ((size_t)256 << 20)

#define ENG_CSV_COLUMNS                                                            \
    "frame,pool,kind,backend,allocs,frees,live,capacity,peak_live,item_size,"     \
    "chunk_items,alloc_ns,grow_events,grow_ns,ahead_grow_events,ahead_grow_ns,"    \
    "bytes_used,high_water,commit_events,frame_ns,sim_ns,alloc_total_ns,maint_ns," \
    "render_ns"

typedef enum eng_source_kind { ENG_SOURCE_POOL = 0, ENG_SOURCE_ARENA } eng_source_kind;
typedef enum eng_backend { ENG_BACKEND_POOL = 0, ENG_BACKEND_MALLOC, ENG_BACKEND_COUNT } eng_backend;

/// "pool" / "malloc"; "?" out of range.
const char *eng_backend_name(eng_backend b);

/* One source in one frame. X(field, description): the struct, the CSV
 * writer, the reader and the tests iterate this list. */
#define ENG_SAMPLE_FIELDS(X)                                                   \
    X(allocs, "allocations during the frame")                                  \
    X(frees, "frees during the frame")                                         \
    X(live, "items live at the end of the frame")                              \
    X(capacity, "items held without growing (arena: bytes committed)")        \
    X(peak_live, "highest live since the last reset")                          \
    X(alloc_ns, "ns inside alloc/free calls")                                  \
    X(grow_events, "growths inside allocation calls")                          \
    X(grow_ns, "ns of growth inside allocation calls")                         \
    X(ahead_grow_events, "growths by grow-ahead at the frame boundary")        \
    X(ahead_grow_ns, "ns of grow-ahead growth")                                \
    X(bytes_used, "arena: bytes allocated during the frame")                   \
    X(high_water, "arena: largest frame so far")                               \
    X(commit_events, "arena: commits during the frame")

typedef struct eng_sample {
#define ENG__SAMPLE_FIELD(f, d) uint64_t f;
    ENG_SAMPLE_FIELDS(ENG__SAMPLE_FIELD)
#undef ENG__SAMPLE_FIELD
} eng_sample;

/* Per-frame times, same X-macro habit. */
#define ENG_FRAME_FIELDS(X)                                                    \
    X(frame_ns, "whole frame")                                                 \
    X(sim_ns, "simulation without allocation")                                 \
    X(alloc_total_ns, "sum of alloc_ns over the sources")                      \
    X(maint_ns, "frame-boundary maintenance (grow-ahead)")                     \
    X(render_ns, "platform rendering, set by eng_set_render_ns")

typedef struct eng_frame_record {
    uint64_t frame;
#define ENG__FRAME_FIELD(f, d) uint64_t f;
    ENG_FRAME_FIELDS(ENG__FRAME_FIELD)
#undef ENG__FRAME_FIELD
    uint32_t grow_events;       /* sum of the sources' in-allocation grow_events
                                   (saturating at UINT32_MAX) */
    uint32_t ahead_grow_events; /* sum of the sources' ahead_grow_events (same) */
} eng_frame_record;

typedef struct eng_source_info {
    char name[ENG_NAME_MAX];
    eng_source_kind kind;
    eng_backend backend;  /* as of the newest frame */
    uint64_t item_size;   /* see the CSV columns */
    uint64_t chunk_items; /* >= 1 */
    /* Totals since create or the last eng_telemetry_clear, over every frame
     * pushed (not only those the ring still holds); saturating at UINT64_MAX. */
    uint64_t total_allocs, total_frees, total_alloc_ns;
    uint64_t total_grow_events, total_grow_ns;
    uint64_t total_ahead_grow_events, total_ahead_grow_ns;
    uint64_t peak_live;        /* highest live seen at a frame end */
    uint64_t last_grow_frame;  /* frame of the newest in-allocation growth */
    uint64_t last_grow_ns;     /* its grow_ns (0: none yet) */
} eng_source_info;

typedef struct eng_telemetry eng_telemetry;

typedef struct eng_telemetry_desc {
    uint32_t frames;      /* ring size; 0 = 600 */
    uint32_t max_sources; /* 0 = ENG_TELEMETRY_MAX_SOURCES (also the limit) */
} eng_telemetry_desc;

/// desc NULL: every default. NULL when out of memory or desc.max_sources above
/// ENG_TELEMETRY_MAX_SOURCES.
eng_telemetry *eng_telemetry_create(const eng_telemetry_desc *desc);
/// Flushes a CSV stream (not closing its FILE) and frees everything. NULL: no-op.
void eng_telemetry_destroy(eng_telemetry *t);

/* ---------------------------------------------------------------- registry */

/// Registers a source; returns its index, the existing index when the name is
/// already registered, or -1 (registry full, name empty or too long).
/// Sources can only be added before the first frame is pushed.
int eng_telemetry_add_source(eng_telemetry *t, const char *name, eng_source_kind kind,
                             uint64_t item_size, uint64_t chunk_items);
/// Updates a source's item_size / chunk_items / backend (a world rebuild).
void eng_telemetry_set_source_shape(eng_telemetry *t, uint32_t source, eng_backend backend,
                                    uint64_t item_size, uint64_t chunk_items);
uint32_t eng_telemetry_source_count(const eng_telemetry *t);
/// Source i (0 .. count-1), or NULL out of range.
const eng_source_info *eng_telemetry_source(const eng_telemetry *t, uint32_t i);
/// Index of the source with that name, or -1.
int eng_telemetry_find_source(const eng_telemetry *t, const char *name);

/* ------------------------------------------------------------------- frames */

/// Appends a frame: rec plus one sample per source (samples[source_count]),
/// copied. The oldest frame drops out when the ring is full. Updates totals.
void eng_telemetry_push(eng_telemetry *t, const eng_frame_record *rec, const eng_sample *samples);
/// Frames the ring holds now (<= capacity).
uint32_t eng_telemetry_frame_count(const eng_telemetry *t);
uint32_t eng_telemetry_capacity(const eng_telemetry *t);
/// Frames pushed since create / clear (may exceed the ring).
uint64_t eng_telemetry_frames_pushed(const eng_telemetry *t);
/// Frame i, 0 = oldest held .. frame_count-1 = newest; NULL out of range.
const eng_frame_record *eng_telemetry_frame(const eng_telemetry *t, uint32_t i);
/// Source s in frame i; NULL out of range.
const eng_sample *eng_telemetry_sample(const eng_telemetry *t, uint32_t i, uint32_t s);
/// Sets render_ns of the newest frame (the platform measures render after the
/// engine's frame ended). No-op while empty.
void eng_telemetry_set_render_ns(eng_telemetry *t, uint64_t render_ns);
/// Drops every frame and zeroes the totals; sources stay.
void eng_telemetry_clear(eng_telemetry *t);

/* -------------------------------------------------------------- summaries */

/// Capacity that holds peak_live * headroom items (headroom >= 1; < 1 is
/// taken as 1, above 1000 as 1000), rounded up to whole chunks of
/// chunk_items (0 taken as 1). Where that passes 2^64 - 1 it saturates at the
/// most whole chunks a uint64_t holds (never wraps: inputs may come from files).
uint64_t eng_suggest_capacity(uint64_t peak_live, double headroom, uint64_t chunk_items);
/// Clock overhead (ns) of one fm_clock_now pair as measured at process start
/// (the median of 1000 pairs), subtracted once from each timed batch.
uint64_t eng_telemetry_clock_overhead_ns(void);

/* ------------------------------------------------------------------ export */

/// Writes the frames the ring holds as CSV (see above) to path through
/// fm_file_begin / fm_file_commit: whole or not at all. false with "PATH: ..."
/// in err (may be NULL) when the file cannot be written (the old one kept).
bool eng_telemetry_write_csv(const eng_telemetry *t, const char *path, char *err, size_t err_len);
/// The same rows to an open stream (header included); false when a write failed.
bool eng_telemetry_write_csv_file(const eng_telemetry *t, FILE *f);
/// Streams every frame pushed from now on to w as CSV rows (header first); a
/// frame's rows are written when the next frame is pushed (so render_ns is
/// final) or at eng_telemetry_stream_end / destroy. w stays the caller's: a
/// failed write is kept in w and reported by its fm_file_commit, which the
/// caller calls after eng_telemetry_stream_end (or fm_file_abort: nothing
/// written). NULL w: streaming stops.
void eng_telemetry_stream_csv(eng_telemetry *t, fm_file_writer *w);
/// Writes the pending frame and stops streaming (w is not committed).
void eng_telemetry_stream_end(eng_telemetry *t);
/// Chrome trace event JSON (Perfetto, chrome://tracing): each frame a
/// complete event ("ph":"X") with its split in args plus complete events for
/// sim/alloc/maint, each in-allocation growth an instant event ("ph":"i")
/// named "grow <pool>", grow-ahead growths "grow-ahead <pool>". false with a
/// message on I/O error; written whole or not at all (fm_file_commit).
bool eng_telemetry_write_trace(const eng_telemetry *t, const char *path, char *err,
                               size_t err_len);

/* ------------------------------------------------------------------ import */

/// Loads a CSV written by eng_telemetry_write_csv / stream_csv into a new
/// telemetry object holding every frame of the file (ring = frame count).
/// NULL with "file:line: problem" in err for: unreadable file, empty file,
/// binary content, a missing column, a bad or out-of-range number, a bad kind
/// or backend, a truncated line (too few fields or no final newline),
/// frames going backwards, a frame missing a source or repeating one. The
/// file is read with fm_file_read: "PATH: not a regular file" for a FIFO,
/// device or directory (never blocking), "PATH: too large (cap N bytes)"
/// above ENG_CSV_MAX_BYTES, "PATH: cannot open: REASON".
eng_telemetry *eng_telemetry_read_csv(const char *path, char *err, size_t err_len);
/// The same from memory (name is used in messages in place of a path). A
/// UTF-8 byte-order mark at the start is skipped.
eng_telemetry *eng_telemetry_read_csv_mem(const char *data, size_t size, const char *name,
                                          char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* ENGINE_TELEMETRY_H */
