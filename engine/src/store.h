/*
 * store.h (engine internal): where one kind of world item lives — an fm_pool
 * or malloc/free — with the engine's own counting, batch timing, growth
 * accounting and grow-ahead. The world only talks to stores, so both
 * backends are counted and timed by the same code.
 *
 * Timing: alloc_n / free_n read fm_clock once before and once after the
 * whole batch (never per item) and count the batch; the clock pair's own
 * overhead (eng_telemetry_clock_overhead_ns) is subtracted per batch when
 * the frame is sampled.
 */
#ifndef ENG__STORE_H
#define ENG__STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_internal.h"
#include "engine/config.h"
#include "engine/telemetry.h"
#include "framemem/pool.h"

#define ENG__GROW_AHEAD_WINDOW 120 /* frames of net-allocation history */
#define ENG__GROW_AHEAD_MARGIN 2   /* headroom kept: this many times the largest net */

/* malloc backend: slot table so entities keep generation-checked handles. */
typedef struct eng__mslot {
    void *item;     /* NULL when free */
    uint32_t gen;   /* bumped at every free, 1..2^31-1 */
    uint32_t next;  /* free-list link */
} eng__mslot;

typedef struct eng__store {
    const char *name;
    int source;            /* telemetry source index */
    eng_backend backend;
    bool timing;
    bool grow_ahead;       /* this store may grow ahead (config and switch) */
    size_t item_size;
    size_t item_align;
    fm_pool *pool;         /* pool backend */
    fm_allocator alloc;    /* the pool's and the slot table's backing memory */
    eng__faults *faults;   /* where refusals are counted (may be NULL) */
    uint64_t limit;        /* most items the pool can hold (FIXED or max_capacity); 0 = none */
    /* malloc backend */
    bool handles;          /* keep the slot table (entities) */
    eng__mslot *slots;     /* stb_ds array (engine/ds.h) over alloc */
    uint32_t slot_free;    /* 1 + first free slot; 0: none */
    /* counts kept by the engine for both backends */
    uint64_t live, peak_live;
    uint64_t total_allocs, total_frees;
    uint64_t failed_allocs; /* asked for and not given: over the limit or refused */
    /* this frame */
    uint64_t f_allocs, f_frees, f_ticks, f_batches;
    uint64_t f_ahead_events, f_ahead_ns;
    /* pool stats at the previous sample, for deltas */
    uint64_t seen_grow_events, seen_grow_ns;
    uint64_t ahead_events_total, ahead_ns_total; /* growth by our reserve calls */
    uint64_t in_alloc_grow_events; /* since create, for tests */
    /* grow-ahead history: net allocations per frame */
    int64_t net[ENG__GROW_AHEAD_WINDOW];
    uint32_t net_pos;
    uint64_t live_at_frame_start;
} eng__store;

typedef struct eng__store_desc {
    const char *name;
    size_t item_size, item_align;
    eng_backend backend;
    bool timing;
    bool handles;
    const eng_pool_config *cfg;
    bool prefault_switch, grow_ahead_switch;
    bool override_growth;
    fm_growth growth;
    fm_allocator allocator; /* pool chunks and the malloc backend's slot table */
    eng__faults *faults;
} eng__store_desc;

/// Builds the pool (or the empty malloc store). false when the pool cannot be
/// created (the fm error was reported).
bool eng__store_init(eng__store *s, const eng__store_desc *d);
/// Frees the pool, or for the malloc backend the slot table (items must be
/// freed by the caller first; leftovers are freed if the table knows them).
void eng__store_deinit(eng__store *s);

/// Allocates up to n items into out, timed as one batch; returns how many
/// (fewer when the pool refused: FIXED/max_capacity, or out of memory, which
/// is also counted as a fault).
uint32_t eng__store_alloc_n(eng__store *s, void **out, uint32_t n);
/// Frees n items, timed as one batch.
void eng__store_free_n(eng__store *s, void *const *items, uint32_t n);
/// Handle of a live item; resolve gives NULL for a dead or foreign handle.
fm_handle eng__store_handle(const eng__store *s, const void *item);
void *eng__store_resolve(const eng__store *s, fm_handle h);

/// Frame boundary: grow ahead (when enabled and headroom is short) and
/// record the frame's net allocation; the growth goes to the frame's sample.
/// A refused growth is counted as a fault; the pool stays as it was.
void eng__store_grow_ahead(eng__store *s);
/// Fills the store's telemetry sample for the frame and resets frame counters.
void eng__store_sample(eng__store *s, eng_sample *out, uint64_t overhead_ticks);
/// Capacity now (malloc: live) and the chunk size in items (malloc: 1).
uint64_t eng__store_capacity(const eng__store *s);
uint64_t eng__store_chunk_items(const eng__store *s);
uint64_t eng__store_item_stride(const eng__store *s);

#endif /* ENG__STORE_H */
