/*
 * telemetry_internal.h: what the files of framemem_telemetry share (not
 * installed): the telemetry object, NULL reports, saturating sums, names.
 *
 *   telemetry.c  create, sources, sampling at the frame end, grow-ahead, the ring
 *   csv.c        CSV writer and stream, Chrome trace, CSV reader
 *   config.c     INI pool-size files: load, apply to descs, tuned output
 *
 * framemem_telemetry is a library of its own over framemem's public API: it
 * calls no fm__ function of framemem (hidden in a shared framemem).
 */
#ifndef FM__TELEMETRY_INTERNAL_H
#define FM__TELEMETRY_INTERNAL_H

#include "framemem/telemetry.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

/* As framemem's own (framemem/base.h): GNU formats on MinGW too. */
#define FM__TEL_PRINTF(f, a) FM__PRINTF_LIKE(f, a)

/* --------------------------------------------------------------- the object */

/* What a source samples. */
typedef enum fm__tel_object {
    FM__TEL_NONE = 0, /* detached, or a source with no object (push) */
    FM__TEL_POOL,
    FM__TEL_ARENA,
    FM__TEL_FRAME_ARENA,
    FM__TEL_CLOSURES,
    FM__TEL_TAG,
    FM__TEL_COUNTERS,
} fm__tel_object;

/* A source's object and its counters at the previous sample. */
typedef struct fm__tel_src {
    fm__tel_object type;
    union {
        const void *any;
        fm_pool *pool;
        fm_arena *arena;
        fm_frame_arena *fa;
        fm_closure_pool *cp;
        fm_tag *tag;
        const fm_telemetry_counters *counters;
    } obj;
    uint64_t seen_allocs, seen_frees, seen_live;
    uint64_t seen_grow, seen_grow_ns, seen_ahead, seen_ahead_ns;
    uint64_t seen_commits, seen_resets, seen_failed;
    uint64_t seen_timed_ns; /* a timed pool's alloc_ns_total + free_ns_total */
    /* Peaks since attach or clear: the object's own peak once it passes
     * peak_base (its value then), else the highest live seen at frame ends. */
    uint64_t peak_base, peak_seen;
    uint64_t pending_alloc_ns; /* fm_telemetry_add_alloc_ns, this frame */
    uint32_t net_pos;          /* next slot of the net history */
} fm__tel_src;

struct fm_telemetry {
    uint32_t cap;         /* frames in the ring */
    uint32_t max_sources; /* samples per frame slot */
    uint32_t source_count;
    uint32_t head;        /* slot of the oldest frame */
    uint32_t count;       /* frames held */
    uint32_t window;      /* grow-ahead history, frames */
    float margin;
    uint64_t pushed;      /* frames recorded since create / clear */
    uint64_t next_frame;  /* frame number of the next frame_end */
    uint64_t last_end;    /* ticks: the previous frame end (or create) */
    uint64_t begin;       /* ticks: fm_telemetry_frame_begin, when has_begin */
    bool has_begin;
    uint64_t pending_maint; /* ticks of grow-ahead since the last frame end */
    fm_telemetry_source *sources; /* [max_sources] */
    fm__tel_src *src;             /* [max_sources] */
    uint32_t *net;                /* [max_sources * window] net allocations */
    fm_telemetry_frame *frames;   /* [cap] */
    fm_telemetry_sample *samples; /* [cap * max_sources] */
    fm_telemetry_sample *scratch; /* [max_sources]: the frame being sampled */
    fm_file_writer *stream;       /* fm_telemetry_stream_csv's, the caller's */
    bool stream_pending;          /* the newest frame is not written yet */
    fm_allocator alloc;           /* where all of this came from */
    size_t bytes;                 /* one block: the struct and every array */
};

/* ------------------------------------------------------------------ helpers */

/// a + b, saturating at UINT64_MAX: sums of numbers read from files.
static inline uint64_t fm__tel_sat_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
/// a + b, saturating at UINT32_MAX (b may be any uint64_t).
static inline uint32_t fm__tel_sat_add32(uint32_t a, uint64_t b) {
    return b > (uint64_t)(UINT32_MAX - a) ? UINT32_MAX : a + (uint32_t)b;
}

/// snprintf into err when err is not NULL.
FM__TEL_PRINTF(3, 4) void fm__tel_set_err(char *err, size_t err_len, const char *fmt, ...);

/* NULL objects (framemem/base.h): FM_ERR_INVALID_ARG naming the function,
 * also into err where the function has one; then the failure value. */
void fm__tel_report_null(const char *fn, const char *what, char *err, size_t err_len);
#define FM__TEL_REFUSE_NULL(obj, what, ...) FM__TEL_REFUSE_NULL_ERR(obj, what, NULL, 0, __VA_ARGS__)
#define FM__TEL_REFUSE_NULL_ERR(obj, what, err, err_len, ...)                   \
    do {                                                                        \
        if (!(obj)) {                                                           \
            fm__tel_report_null(__func__, (what), (err), (err_len));            \
            return __VA_ARGS__;                                                 \
        }                                                                       \
    } while (0)

/// Valid source names: 1-31 of [A-Za-z0-9_.-].
bool fm__tel_valid_name(const char *name);
/// name as a source name: other characters become '_', cut at 31, "?" for
/// an empty one. out holds FM_TELEMETRY_NAME_MAX bytes.
void fm__tel_source_name(const char *name, char *out);

/// Writes the newest frame's rows to the stream (telemetry.c calls it before
/// recording the next frame, clear and stream end). csv.c.
void fm__tel_stream_pending(fm_telemetry *tel);

#endif /* FM__TELEMETRY_INTERNAL_H */
