/*
 * store.h (engine internal): where one kind of world item lives — an fm_pool,
 * a classic eager pool (engine/classic_pool.h) or malloc/free — with the engine's own counting and batch timing. The
 * world only talks to stores, so both backends are counted and timed by the
 * same code. Telemetry samples a pool store's pool (fm_telemetry_add_pool)
 * and a classic or malloc store's counts (fm_telemetry_add_counters; a
 * classic store's growths and their time among them); grow-ahead is the
 * telemetry's (fm_telemetry_grow_ahead, pools whose desc.grow_ahead is set).
 *
 * Timing: alloc_n / free_n read fm_clock once before and once after the
 * whole batch (never per item) and count the batch; the clock pair's own
 * overhead (fm_telemetry_clock_overhead_ns) is subtracted per batch when the
 * frame's time is handed to the telemetry (eng__store_take_ns).
 */
#ifndef ENG__STORE_H
#define ENG__STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "eng_internal.h"
#include "engine/classic_pool.h"
#include "engine/engine.h"
#include "framemem/pool.h"
#include "framemem/telemetry.h"

/* malloc and classic backends: slot table so entities keep
 * generation-checked handles. */
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
    size_t item_size;
    size_t item_align;
    fm_pool *pool;         /* pool backend */
    eng_classic_pool *classic; /* classic backend (its blocks from malloc, as Boost's) */
    fm_allocator alloc;    /* the pool's and the slot table's backing memory */
    eng__faults *faults;   /* where refusals are counted (may be NULL) */
    uint64_t limit;        /* most items the pool can hold (FIXED or max_capacity); 0 = none */
    /* malloc and classic backends */
    bool handles;          /* keep the slot table (entities) */
    eng__mslot *slots;     /* stb_ds array (engine/ds.h) over alloc */
    uint32_t slot_free;    /* 1 + first free slot; 0: none */
    /* Counts kept by the engine for both backends (failed: asked for and not
     * given, over the limit or refused); a malloc store's telemetry source. */
    fm_telemetry_counters counts;
    /* this frame's timing */
    uint64_t f_ticks, f_batches;
} eng__store;

typedef struct eng__store_desc {
    fm_pool_desc pool;      /* name, item size and alignment, sizes (defaults + config;
                               classic: initial_capacity is its first block) */
    eng_backend backend;
    bool timing;
    bool handles;
    bool prefault_switch;
    bool override_growth;
    fm_growth growth;
    fm_allocator allocator; /* pool chunks and the malloc backend's slot table */
    eng__faults *faults;
} eng__store_desc;

/// Builds the pool, the classic pool's first block, or the empty malloc store.
/// false when it cannot be created (the fm error was reported).
bool eng__store_init(eng__store *s, const eng__store_desc *d);
/// Frees the pool (classic: its blocks, items with them), and the slot table
/// (malloc: items must be freed by the caller first; leftovers are freed if
/// the table knows them).
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

/// The frame's time inside alloc/free in ns (its batches' clock overhead,
/// overhead_ticks each, subtracted; 0 without timing), and the batches timed
/// in *batches; restarts the frame's timing.
uint64_t eng__store_take_ns(eng__store *s, uint64_t overhead_ticks, uint64_t *batches);
#endif /* ENG__STORE_H */
