/*
 * framemem/telemetry.h: per-frame allocation telemetry of any program's pools,
 * arenas, frame arenas, closure pools and tags, with CSV and Chrome trace
 * export, the CSV reader and grow-ahead at the frame boundary.
 *
 * The library framemem_telemetry (CMake target framemem::telemetry), beside
 * framemem: it writes and reads files through framemem_file. framemem/config.h
 * (pool sizes from INI files) is part of it.
 *
 * Step by step:
 *
 *     // 1. One telemetry object; everything it needs is allocated here.
 *     fm_telemetry *tel = fm_telemetry_create(&(fm_telemetry_desc){.frames = 600});
 *
 *     // 2. Register what the game owns (a source each, by the object's name).
 *     fm_telemetry_add_pool(tel, bullets);
 *     fm_telemetry_add_frame_arena(tel, frame);
 *     fm_telemetry_add_tag(tel, level);
 *
 *     // 3. Once per frame, at the frame boundary:
 *     fm_telemetry_grow_ahead(tel);   // pools with desc.grow_ahead grow now, not
 *                                     // inside next frame's allocations
 *     fm_telemetry_frame_end(tel);    // samples every source into the ring
 *
 *     // 4. Look, draw (framemem_overlay), save, tune (framemem/config.h).
 *     fm_telemetry_write_csv(tel, "run.csv", err, sizeof err);
 *     fm_telemetry_destroy(tel);      // before or after the objects: it owns none
 *
 * Sources. Each add_* registers an object under its name (characters outside
 * [A-Za-z0-9_.-] become '_', cut at 31: the names files carry) and returns
 * the source's index, stable for the telemetry's life. fm_telemetry_frame_end
 * samples each object's own counters (fm_pool_get_stats, ...) and records the
 * frame's deltas: allocations, frees, live, capacity, peak, growths inside
 * allocation calls and their time, grow-ahead growths and theirs, arena bytes
 * and high water, resets, refusals, a tag's bytes against its budget. The
 * telemetry owns no object: detach a source (fm_telemetry_detach) before its
 * object is destroyed; its history stays, and adding an object of the same
 * name and kind later binds it to the same source (a rebuilt pool). Objects
 * the telemetry cannot see (items from malloc, say) are counted by the caller
 * in an fm_telemetry_counters it registers (fm_telemetry_add_counters).
 * Sources may be added at any time; frames before a source was added hold
 * zeros for it.
 *
 * Time. fm_telemetry_frame_end records the frame's time: from
 * fm_telemetry_frame_begin when it was called since the last frame end, else
 * from the last frame end (or create); maint_ns is the time of
 * fm_telemetry_grow_ahead and of the sampling itself; alloc_total_ns the sum
 * of the sources' alloc_ns: time inside allocation calls that the caller
 * measured (fm_telemetry_add_alloc_ns, around batches of calls, say), plus,
 * for a pool with desc.timing (pool.h), what it measured itself: the change
 * of its alloc_ns_total + free_ns_total over the frame; sim_ns the rest of
 * the frame. Render time is reported after the frame
 * (fm_telemetry_set_render_ns). Without timing a pool's alloc_ns is what the
 * caller adds (0 if nothing); its counts and growth times (grow_ns,
 * ahead_grow_ns) come from the pool whatever the timing. Nanoseconds, from
 * fm_clock.
 *
 * Profilers: fm_telemetry_frame_end calls fm_hooks_frame_end
 * (framemem/hooks.h) as its last step, so an FM_HOOKS build's frame_end
 * event follows the frame's other events (grow-ahead's growth included).
 *
 * Grow-ahead. fm_telemetry_grow_ahead calls fm_pool_grow_ahead(pool,
 * margin x the largest net allocation (allocations minus frees, at least 0)
 * of a frame of the pool's last grow_ahead_window frames, the current one
 * included) for every pool source whose desc.grow_ahead is set (not FIXED):
 * the growth happens at the frame boundary, counted as grow-ahead (ahead_*),
 * and the next frame's allocations find room.
 *
 * Memory: create allocates everything (the ring of frames x max_sources
 * samples, the sources, their grow-ahead history) from desc.allocator;
 * adding sources, frame_end, grow-ahead (but for the pools' own growth),
 * streaming and reading frames allocate nothing. The CSV reader allocates the
 * telemetry it returns.
 *
 * Threads: one thread at a time per telemetry object. frame_end reads each
 * object as its get_stats does (under the lock of a shared pool), so call it
 * while the objects' FM_SYNC_NONE users are quiet (the frame boundary).
 *
 * ---------------------------------------------------------------- CSV format
 * One header row, then one row per frame per source, frames oldest first and
 * within a frame sources in registry order. Columns (FM_TELEMETRY_CSV_COLUMNS,
 * the format the engine wrote before issue 20, then four more):
 *
 *   frame              frame number (since create; not reset by clear)
 *   pool               source name ([A-Za-z0-9_.-], at most 31 characters)
 *   kind               "pool", "arena" (arenas and frame arenas), "closures"
 *                      (closure pools) or "tag"
 *   backend            "pool", "malloc" or "classic": what served this
 *                      source's items (malloc, classic: a counters source;
 *                      classic: an eager pool of doubling blocks, its growths
 *                      from fm_telemetry_counters.grow_events)
 *   allocs             allocations during the frame
 *   frees              frees during the frame
 *   live               items live at the end of the frame (arena: 0; tag:
 *                      live bytes)
 *   capacity           items the pool holds without growing, end of frame
 *                      (malloc backend: live; arena: bytes committed; tag:
 *                      bytes committed)
 *   peak_live          highest live (tag: highest committed bytes)
 *   item_size          bytes per item (pool stride; malloc: the item size;
 *                      arena, closures: 0; tag: 1)
 *   chunk_items        items per pool chunk, the unit capacities round to
 *                      (malloc backend, arena, closures, tag: 1)
 *   alloc_ns           ns inside alloc/free calls during the frame
 *   grow_events        growths inside allocation calls (the hitches)
 *   grow_ns            ns of those growths
 *   ahead_grow_events  growths done by grow-ahead at the frame boundary
 *   ahead_grow_ns      ns of those (maintenance, not part of alloc_ns)
 *   bytes_used         arena: bytes allocated, end of the frame (pool: 0)
 *   high_water         arena: the largest frame's bytes so far (pool: 0)
 *   commit_events      arena: commits during the frame (pool: 0)
 *   frame_ns           the whole frame
 *   sim_ns             the frame without allocation and maintenance
 *   alloc_total_ns     sum of every source's alloc_ns in the frame
 *   maint_ns           frame-boundary maintenance (grow-ahead, sampling)
 *   render_ns          set by fm_telemetry_set_render_ns, else 0
 *   resets             pool resets (fm_pool_reset), arena resets, frame arena
 *                      advances
 *   failed             allocations refused (tag: growths its budget refused)
 *   soft_limit         tag: soft limit in bytes (0: none; others: 0)
 *   hard_limit         tag: hard limit in bytes (0: none; others: 0)
 *
 * Per-frame columns (frame_ns .. render_ns) repeat on every row of that
 * frame. Numbers are unsigned decimal integers. The reader needs the first
 * 24 columns (files written before issue 20 have exactly those), takes the
 * last four when present (0 otherwise) and ignores any other; column order
 * is free.
 *
 * NULL: every function reports a NULL telemetry object (or stream) as
 * framemem does (base.h: FM_ERR_INVALID_ARG naming the function, also in err
 * where there is one) and returns its failure value (false, NULL, 0, -1;
 * nothing written). fm_telemetry_destroy(NULL) does nothing; a NULL desc
 * means every default.
 */
#ifndef FRAMEMEM_TELEMETRY_H
#define FRAMEMEM_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "framemem/arena.h"
#include "framemem/base.h"
#include "framemem/closure.h"
#include "framemem/file.h"
#include "framemem/pool.h"
#include "framemem/tag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What FM_API (base.h) is for framemem, for framemem_telemetry's functions
 * (telemetry.h and config.h). */
#if defined(FM__BUILDING_TELEMETRY)
#define FM_TELEMETRY_API FM__EXPORT
#else
#define FM_TELEMETRY_API FM__IMPORT
#endif

#define FM_TELEMETRY_NAME_MAX 32     /* source names, terminator included */
#define FM_TELEMETRY_MAX_SOURCES 256 /* the most desc.max_sources takes */
#define FM_TELEMETRY_MAX_FRAMES (1u << 24)
#define FM_TELEMETRY_MAX_WINDOW 1024 /* the most desc.grow_ahead_window takes */
/* Largest CSV fm_telemetry_read_csv reads; a bigger file is refused, never
 * read into memory. */
#define FM_TELEMETRY_CSV_MAX_BYTES ((size_t)256 << 20)

/* The columns every telemetry CSV has (the reader needs them all). */
#define FM_TELEMETRY_CSV_COLUMNS                                                   \
    "frame,pool,kind,backend,allocs,frees,live,capacity,peak_live,item_size,"     \
    "chunk_items,alloc_ns,grow_events,grow_ns,ahead_grow_events,ahead_grow_ns,"    \
    "bytes_used,high_water,commit_events,frame_ns,sim_ns,alloc_total_ns,maint_ns," \
    "render_ns"
/* The columns issue 20 added: written after those, read when present. */
#define FM_TELEMETRY_CSV_COLUMNS_ADDED "resets,failed,soft_limit,hard_limit"

typedef enum fm_telemetry_kind {
    FM_TELEMETRY_POOL = 0, /* an fm_pool, or a counters source */
    FM_TELEMETRY_ARENA,    /* an fm_arena or an fm_frame_arena */
    FM_TELEMETRY_CLOSURES, /* an fm_closure_pool */
    FM_TELEMETRY_TAG,      /* an fm_tag */
    FM_TELEMETRY_KIND_COUNT
} fm_telemetry_kind;

typedef enum fm_telemetry_backend {
    FM_TELEMETRY_BACKEND_POOL = 0, /* framemem's object */
    FM_TELEMETRY_BACKEND_MALLOC,   /* a counters source: items from elsewhere */
    FM_TELEMETRY_BACKEND_CLASSIC,  /* a counters source: a classic eager pool
                                      (Boost pool<>'s doubling blocks) */
    FM_TELEMETRY_BACKEND_COUNT
} fm_telemetry_backend;

/* One source in one frame. X(field, description): the struct, the CSV
 * writer, the reader and the tests iterate this list. */
#define FM_TELEMETRY_SAMPLE_FIELDS(X)                                          \
    X(allocs, "allocations during the frame")                                  \
    X(frees, "frees during the frame")                                         \
    X(live, "items live at the end of the frame (tag: live bytes)")            \
    X(capacity, "items held without growing (arena, tag: bytes committed)")    \
    X(peak_live, "highest live (tag: highest committed bytes)")                \
    X(alloc_ns, "ns inside alloc/free calls")                                  \
    X(grow_events, "growths inside allocation calls")                          \
    X(grow_ns, "ns of growth inside allocation calls")                         \
    X(ahead_grow_events, "growths by grow-ahead at the frame boundary")        \
    X(ahead_grow_ns, "ns of grow-ahead growth")                                \
    X(bytes_used, "arena: bytes allocated, end of the frame")                  \
    X(high_water, "arena: largest frame so far")                               \
    X(commit_events, "arena: commits during the frame")                        \
    X(resets, "pool and arena resets, frame arena advances")                   \
    X(failed, "allocations refused (tag: growths its budget refused)")

typedef struct fm_telemetry_sample {
#define FM__TELEMETRY_SAMPLE_FIELD(f, d) uint64_t f;
    FM_TELEMETRY_SAMPLE_FIELDS(FM__TELEMETRY_SAMPLE_FIELD)
#undef FM__TELEMETRY_SAMPLE_FIELD
} fm_telemetry_sample;

/* Per-frame times, same X-macro habit. */
#define FM_TELEMETRY_FRAME_FIELDS(X)                                           \
    X(frame_ns, "whole frame")                                                 \
    X(sim_ns, "the frame without allocation and maintenance")                  \
    X(alloc_total_ns, "sum of alloc_ns over the sources")                      \
    X(maint_ns, "frame-boundary maintenance (grow-ahead, sampling)")           \
    X(render_ns, "rendering, set by fm_telemetry_set_render_ns")

typedef struct fm_telemetry_frame {
    uint64_t frame;
#define FM__TELEMETRY_FRAME_FIELD(f, d) uint64_t f;
    FM_TELEMETRY_FRAME_FIELDS(FM__TELEMETRY_FRAME_FIELD)
#undef FM__TELEMETRY_FRAME_FIELD
    uint32_t grow_events;       /* sum of the sources' in-allocation grow_events
                                   (saturating at UINT32_MAX) */
    uint32_t ahead_grow_events; /* sum of the sources' ahead_grow_events (same) */
} fm_telemetry_frame;

typedef struct fm_telemetry_source {
    char name[FM_TELEMETRY_NAME_MAX];
    fm_telemetry_kind kind;
    fm_telemetry_backend backend; /* as of the newest frame */
    uint64_t item_size;           /* see the CSV columns */
    uint64_t chunk_items;         /* >= 1 */
    uint64_t soft_limit, hard_limit; /* a tag's budget in bytes (0: none) */
    /* Totals since create or the last fm_telemetry_clear, over every frame
     * recorded (not only those the ring still holds); saturating. */
    uint64_t total_allocs, total_frees, total_alloc_ns;
    uint64_t total_grow_events, total_grow_ns;
    uint64_t total_ahead_grow_events, total_ahead_grow_ns;
    uint64_t peak_live;        /* highest live (pool) seen since then */
    uint64_t last_grow_frame;  /* frame of the newest in-allocation growth */
    uint64_t last_grow_ns;     /* its grow_ns (0: none yet) */
    bool attached;             /* sampled from an object or counters now */
} fm_telemetry_source;

/* What a counters source reads at each frame end: counts the caller keeps for
 * items framemem does not serve (malloc, another allocator). Cumulative,
 * like a pool's stats; the caller owns it and keeps it alive while it is
 * attached. */
typedef struct fm_telemetry_counters {
    uint64_t total_allocs; /* allocations since counting began */
    uint64_t total_frees;
    uint64_t live;
    uint64_t peak_live;
    uint64_t capacity;  /* items held without allocating more; 0: live */
    uint64_t failed;    /* allocations refused */
    uint64_t item_size; /* bytes per item */
    uint64_t grow_events; /* growths inside allocation calls (an eager pool's
                             new blocks): the frame's are its grow_events */
    uint64_t grow_ns;     /* ns of those growths */
} fm_telemetry_counters;

typedef struct fm_telemetry fm_telemetry;

typedef struct fm_telemetry_desc {
    uint32_t frames;            /* ring size; 0 = 600; at most FM_TELEMETRY_MAX_FRAMES */
    uint32_t max_sources;       /* 0 = 32; at most FM_TELEMETRY_MAX_SOURCES */
    uint32_t grow_ahead_window; /* frames of net-allocation history; 0 = 120;
                                   at most FM_TELEMETRY_MAX_WINDOW */
    float grow_ahead_margin;    /* min_free = margin x the largest net; 0 = 2; 1 .. 64 */
    fm_allocator allocator;     /* the object, its ring and history; zero = system */
} fm_telemetry_desc;

/// Creates a telemetry object with its ring and sources (desc NULL: every
/// default). NULL when out of memory (FM_ERR_OUT_OF_MEMORY) or for a desc
/// out of range (FM_ERR_INVALID_ARG: frames, max_sources, window, margin,
/// half an allocator), reported.
FM_TELEMETRY_API fm_telemetry *fm_telemetry_create(const fm_telemetry_desc *desc);
/// Ends a CSV stream (its pending frame written, its writer not committed)
/// and frees everything; the objects are not touched. NULL: no-op.
FM_TELEMETRY_API void fm_telemetry_destroy(fm_telemetry *tel);

/* ----------------------------------------------------------------- sources */

/// Registers a pool (by fm_pool_name); returns its source index. Adding the
/// same object again returns its index; a detached source of that name and
/// kind is bound to it (deltas start from its counters now). -1, reported
/// (FM_ERR_INVALID_ARG), for a NULL object, a name in use by an attached
/// source or by another kind, or a full registry (max_sources).
FM_TELEMETRY_API int fm_telemetry_add_pool(fm_telemetry *tel, fm_pool *pool);
/// The same for an arena (kind "arena"); rules as fm_telemetry_add_pool.
FM_TELEMETRY_API int fm_telemetry_add_arena(fm_telemetry *tel, fm_arena *arena);
/// The same for a frame arena (kind "arena", resets = frames advanced).
FM_TELEMETRY_API int fm_telemetry_add_frame_arena(fm_telemetry *tel, fm_frame_arena *fa);
/// The same for a closure pool (kind "closures"; its class pools summed).
FM_TELEMETRY_API int fm_telemetry_add_closure_pool(fm_telemetry *tel, fm_closure_pool *cp);
/// The same for a tag (kind "tag": its bytes against its limits).
FM_TELEMETRY_API int fm_telemetry_add_tag(fm_telemetry *tel, fm_tag *tag);
/// A pool-kind source (backend "malloc") read from counters the caller keeps
/// (see fm_telemetry_counters); rules as fm_telemetry_add_pool, name as given
/// (made a valid source name as above).
FM_TELEMETRY_API int fm_telemetry_add_counters(fm_telemetry *tel, const char *name,
                                               const fm_telemetry_counters *counters);
/// A source with no object, for frames recorded elsewhere (fm_telemetry_push,
/// importers, tests): its index, or the existing index when the name is
/// registered with that kind; -1 (not reported) for a name that is empty,
/// longer than 31 characters or not of [A-Za-z0-9_.-], another kind, or a
/// full registry.
FM_TELEMETRY_API int fm_telemetry_add_source(fm_telemetry *tel, const char *name,
                                             fm_telemetry_kind kind, uint64_t item_size,
                                             uint64_t chunk_items);
/// Updates a source's backend, item_size and chunk_items (0 taken as 1).
FM_TELEMETRY_API void fm_telemetry_set_source_shape(fm_telemetry *tel, uint32_t source,
                                                    fm_telemetry_backend backend,
                                                    uint64_t item_size, uint64_t chunk_items);
/// Sets a source's budget in bytes (a tag's soft and hard limits; 0: none),
/// as frame_end does for a tag and the CSV reader from its columns.
FM_TELEMETRY_API void fm_telemetry_set_source_limits(fm_telemetry *tel, uint32_t source,
                                                     uint64_t soft_limit, uint64_t hard_limit);
/// Stops sampling a source's object (before it is destroyed): the source and
/// its history stay; its later frames are zero. Out of range: no-op.
FM_TELEMETRY_API void fm_telemetry_detach(fm_telemetry *tel, uint32_t source);
FM_TELEMETRY_API uint32_t fm_telemetry_source_count(const fm_telemetry *tel);
/// Source i (0 .. count-1), or NULL out of range.
FM_TELEMETRY_API const fm_telemetry_source *fm_telemetry_get_source(const fm_telemetry *tel,
                                                                uint32_t i);
/// Index of the source with that name, or -1.
FM_TELEMETRY_API int fm_telemetry_find_source(const fm_telemetry *tel, const char *name);

/* ------------------------------------------------------------------ frames */

/// Marks the start of a frame (optional): frame_ns runs from here rather
/// than from the previous frame end, leaving out what came between (render).
FM_TELEMETRY_API void fm_telemetry_frame_begin(fm_telemetry *tel);
/// Adds ns the caller measured inside source's allocation calls to the
/// current frame's alloc_ns (out of range: no-op).
FM_TELEMETRY_API void fm_telemetry_add_alloc_ns(fm_telemetry *tel, uint32_t source, uint64_t ns);
/// Grow-ahead for every attached pool source with desc.grow_ahead (see
/// above); its time is maintenance. Returns how many pools refused to grow
/// (each reported by the pool: FM_ERR_BUDGET, FM_ERR_OUT_OF_MEMORY, ...).
FM_TELEMETRY_API uint32_t fm_telemetry_grow_ahead(fm_telemetry *tel);
/// The frame boundary: samples every attached source and records the frame
/// (the oldest drops out of a full ring), then sends the profiler hooks'
/// frame_end (fm_hooks_frame_end). Allocates nothing.
FM_TELEMETRY_API void fm_telemetry_frame_end(fm_telemetry *tel);
/// Appends a frame recorded elsewhere: rec plus one sample per source
/// (samples[source_count], NULL: zeros), copied; totals updated.
FM_TELEMETRY_API void fm_telemetry_push(fm_telemetry *tel, const fm_telemetry_frame *rec,
                                        const fm_telemetry_sample *samples);
/// Frames the ring holds now (<= capacity).
FM_TELEMETRY_API uint32_t fm_telemetry_frame_count(const fm_telemetry *tel);
FM_TELEMETRY_API uint32_t fm_telemetry_capacity(const fm_telemetry *tel);
/// Frames recorded since create / clear (may exceed the ring).
FM_TELEMETRY_API uint64_t fm_telemetry_frames_pushed(const fm_telemetry *tel);
/// Frame i, 0 = oldest held .. frame_count-1 = newest; NULL out of range.
FM_TELEMETRY_API const fm_telemetry_frame *fm_telemetry_get_frame(const fm_telemetry *tel,
                                                              uint32_t i);
/// Source s in frame i; NULL out of range.
FM_TELEMETRY_API const fm_telemetry_sample *fm_telemetry_get_sample(const fm_telemetry *tel,
                                                                uint32_t i, uint32_t s);
/// Sets render_ns of the newest frame (rendering follows the frame end).
/// No-op while empty.
FM_TELEMETRY_API void fm_telemetry_set_render_ns(fm_telemetry *tel, uint64_t render_ns);
/// Drops every frame and zeroes the totals and peaks; sources stay attached.
FM_TELEMETRY_API void fm_telemetry_clear(fm_telemetry *tel);

/* --------------------------------------------------------------- summaries */

/// Capacity that holds peak_live * headroom items (headroom >= 1; < 1 is
/// taken as 1, above 1000 as 1000), rounded up to whole chunks of
/// chunk_items (0 taken as 1). Where that passes 2^64 - 1 it saturates at the
/// most whole chunks a uint64_t holds (never wraps: inputs may come from files).
FM_TELEMETRY_API uint64_t fm_telemetry_suggest_capacity(uint64_t peak_live, double headroom,
                                                        uint64_t chunk_items);
/// Clock overhead (ns) of one fm_clock_now pair as measured once per process
/// (the median of 1000 pairs): what a caller timing batches subtracts per batch.
FM_TELEMETRY_API uint64_t fm_telemetry_clock_overhead_ns(void);
/// "pool", "arena", "closures", "tag"; "?" out of range.
FM_TELEMETRY_API const char *fm_telemetry_kind_name(fm_telemetry_kind kind);
/// "pool" / "malloc" / "classic"; "?" out of range.
FM_TELEMETRY_API const char *fm_telemetry_backend_name(fm_telemetry_backend backend);

/* ------------------------------------------------------------------ export */

/// Writes the frames the ring holds as CSV (see above) to path through
/// fm_file_begin / fm_file_commit: whole or not at all. false with "PATH: ..."
/// in err (may be NULL) when the file cannot be written (the old one kept).
FM_TELEMETRY_API bool fm_telemetry_write_csv(const fm_telemetry *tel, const char *path,
                                             char *err, size_t err_len);
/// The same rows to an open stream (header included); false when a write failed.
FM_TELEMETRY_API bool fm_telemetry_write_csv_file(const fm_telemetry *tel, FILE *f);
/// Streams every frame recorded from now on to w as CSV rows (header first);
/// a frame's rows are written when the next frame is recorded (so render_ns
/// is final) or at fm_telemetry_stream_end / destroy. w stays the caller's: a
/// failed write is kept in w and reported by its fm_file_commit, which the
/// caller calls after fm_telemetry_stream_end (or fm_file_abort: nothing
/// written). NULL w: streaming stops.
FM_TELEMETRY_API void fm_telemetry_stream_csv(fm_telemetry *tel, fm_file_writer *w);
/// Writes the pending frame and stops streaming (w is not committed).
FM_TELEMETRY_API void fm_telemetry_stream_end(fm_telemetry *tel);
/// Chrome trace event JSON (Perfetto, chrome://tracing): each frame a
/// complete event ("ph":"X") with its split in args plus complete events for
/// sim/alloc/maint, each in-allocation growth an instant event ("ph":"i")
/// named "grow <pool>", grow-ahead growths "grow-ahead <pool>". false with a
/// message on I/O error; written whole or not at all (fm_file_commit).
FM_TELEMETRY_API bool fm_telemetry_write_trace(const fm_telemetry *tel, const char *path,
                                               char *err, size_t err_len);

/* ------------------------------------------------------------------ import */

/// Loads a CSV written by fm_telemetry_write_csv / stream_csv (or by the
/// engine before issue 20) into a new telemetry object holding every frame of
/// the file (ring = frame count), from the C heap. NULL with "file:line:
/// problem" in err for: unreadable file, empty file, binary content, a
/// missing column, a bad or out-of-range number, a bad kind or backend, a
/// truncated line (too few fields or no final newline), frames going
/// backwards, a frame missing a source seen before or repeating one, more
/// than FM_TELEMETRY_MAX_SOURCES sources. The file is read with
/// fm_file_read: "PATH: not a regular file" for a FIFO, device or directory
/// (never blocking), "PATH: too large (cap N bytes)" above
/// FM_TELEMETRY_CSV_MAX_BYTES, "PATH: cannot open: REASON".
FM_TELEMETRY_API fm_telemetry *fm_telemetry_read_csv(const char *path, char *err,
                                                     size_t err_len);
/// The same from memory (name is used in messages in place of a path). A
/// UTF-8 byte-order mark at the start is skipped.
FM_TELEMETRY_API fm_telemetry *fm_telemetry_read_csv_mem(const char *data, size_t size,
                                                         const char *name, char *err,
                                                         size_t err_len);

#ifdef __cplusplus
}
/* C++: the desc by reference (C++ has no compound literal to take the
 * address of); C++ linkage also when a caller includes this header inside
 * extern "C". */
extern "C++" {
inline fm_telemetry *fm_telemetry_create(const fm_telemetry_desc &desc) {
    return fm_telemetry_create(&desc);
}
}
#endif

#endif /* FRAMEMEM_TELEMETRY_H */
