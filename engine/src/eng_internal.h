/*
 * eng_internal.h: what the engine's sources share (not installed).
 *
 * The sources form a one-way chain: a file calls functions of the files below
 * it and never one of a file above, so a program links only the part it uses
 * (fm-tune and fm-plot read telemetry and configs without the world). Bottom
 * to top:
 *
 *   ENG_FILE_ORDER: util ds classic store world engine
 *
 *   util.c       the engine's backing memory (eng_desc.allocator), messages
 *                into err, NULL-object reports, faults counted while running
 *   ds.c         stb_ds over fm_allocator with growth that can fail (engine/ds.h)
 *   classic.c    Boost pool<>'s eager pool (engine/classic_pool.h): the
 *                classic backend, and fm-bench's baseline
 *   store.c      one kind of world item in a pool or on malloc, counted, timed
 *   world.c      entities, components, particles, events and timers, the
 *                engine's default descs
 *   engine.c     the eng object: frames, telemetry and config (framemem's
 *                framemem_telemetry, as any game uses it), controls, queries,
 *                headless runner
 *
 * tests/engine/check_chain.sh reads the ENG_FILE_ORDER line above and fails
 * when an object file of the engine refers to an eng_ symbol that is not
 * defined below it (nm), or when a source is missing from the line.
 *
 * Names: everything internal to the engine is eng__ (functions, types,
 * variables) or ENG__ (macros, enum values); a name shared between files
 * carries its file's name after the prefix (eng__store_init, eng__world_*),
 * except util.c's helpers, which every file uses (eng__mem_*, eng__set_err,
 * eng__fault). This header declares the helpers of util.c; store.h and
 * world.h declare their own.
 */
#ifndef ENG__INTERNAL_H
#define ENG__INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "framemem/arena.h"
#include "framemem/base.h"
#include "framemem/pool.h"

#define ENG__PRINTF(f, a) FM__PRINTF_LIKE(f, a)

/* ================================================================ util.c */

/// snprintf into err when err is not NULL.
ENG__PRINTF(3, 4) void eng__set_err(char *err, size_t err_len, const char *fmt, ...);
/* NULL object arguments (the rule of framemem/base.h, for engines, telemetry
 * and configs): reported through framemem's channel as FM_ERR_INVALID_ARG
 * naming the function ("eng_update: the engine is NULL"), and written to err
 * too when the function has one; then the caller returns its failure value.
 * ENG__REFUSE_NULL(e, "engine", false), or nothing after the last comma in a
 * function returning void. */
void eng__report_null(const char *fn, const char *what, char *err, size_t err_len);
#define ENG__REFUSE_NULL(obj, what, ...) ENG__REFUSE_NULL_ERR(obj, what, NULL, 0, __VA_ARGS__)
#define ENG__REFUSE_NULL_ERR(obj, what, err, err_len, ...)                      \
    do {                                                                        \
        if (!(obj)) {                                                           \
            eng__report_null(__func__, (what), (err), (err_len));               \
            return __VA_ARGS__;                                                 \
        }                                                                       \
    } while (0)

/* The engine's own memory (its struct, the world's, telemetry rings, store
 * tables, the config read buffer) comes from eng_desc.allocator, as its
 * framemem objects do (fm_allocator_alloc/free); the zero allocator, or a
 * NULL one, is the C heap. */

/// size bytes aligned for any type, not zeroed; NULL when refused.
void *eng__mem_alloc(const fm_allocator *a, size_t size);
/// n * size zeroed bytes; NULL when refused or the product overflows.
void *eng__mem_calloc(const fm_allocator *a, size_t n, size_t size);
/// Frees what eng__mem_alloc/calloc gave for size bytes; NULL: no-op.
void eng__mem_free(const fm_allocator *a, void *p, size_t size);

/* Memory refused while the engine runs (a pool that could not grow, a frame's
 * lists, a timer, a rebuild): the engine keeps going with less, and counts
 * and describes each (eng_info.failures, eng_last_failure). framemem objects
 * also report their own through the fm error handler. */
typedef struct eng__faults {
    uint64_t count;
    char last[256];
} eng__faults;

/// Counts a failure and keeps its message (f NULL: nothing).
ENG__PRINTF(2, 3) void eng__fault(eng__faults *f, const char *fmt, ...);

#endif /* ENG__INTERNAL_H */
