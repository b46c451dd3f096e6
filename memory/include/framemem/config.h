/*
 * framemem/config.h: pool, arena and tag sizes from INI files, for any
 * program's objects; tuned files written from telemetry. Part of
 * framemem_telemetry (CMake target framemem::telemetry).
 *
 * Step by step:
 *
 *     // 1. Load; NULL only when the file cannot be read (err says why).
 *     fm_config *cfg = fm_config_load("pools.ini", NULL, err, sizeof err);
 *     if (cfg && fm_config_problem_count(cfg)) fputs(fm_config_problems(cfg), stderr);
 *
 *     // 2. The program's own desc, then the file's values for its name.
 *     fm_pool_desc d = FM_POOL_DESC(bullet, .name = "bullets", .initial_capacity = 64);
 *     fm_config_apply(cfg, &d);          // [pool.bullets]: what the file sets
 *     fm_pool *bullets = fm_pool_create(&d);
 *
 *     // 3. After a run: capacities from the telemetry's peaks.
 *     fm_config_write_tuned(tel, "pools.ini", 1.25, err, sizeof err);
 *     fm_config_destroy(cfg);
 *
 * The format:
 *
 *   [pool.particles]
 *   initial_capacity = 32768   ; items, 1 .. 2^28
 *   max_capacity = 0           ; items, 0 .. 2^28; 0 = unbounded
 *   growth = geometric         ; geometric | linear | fixed
 *   grow_factor = 2.0          ; (1, 64]
 *   grow_step = 4096           ; items, 0 .. 2^28 (0 = one chunk)
 *   chunk_bytes = 4096         ; 0 (the default) or a power of two, 4096 .. 2^30
 *   prefault = true            ; true/false/1/0/yes/no/on/off
 *   grow_ahead = true          ; grown at the frame boundary (fm_telemetry_grow_ahead)
 *   [arena.frame]              ; an fm_arena or fm_frame_arena named "frame"
 *   reserve = 268435456        ; bytes, 1 MiB .. 64 GiB (32-bit: 4 GiB - 1)
 *   commit_step = 65536        ; bytes, 4 KiB .. reserve
 *   [tag.level]
 *   soft_limit_bytes = 25165824 ; bytes, 0 .. 2^48; 0 = none
 *   hard_limit_bytes = 33554432 ; the same; at least soft_limit_bytes
 *
 * Comments are lines starting with ';' or '#', and a ';' after a blank ends
 * a value. Names are source names (fm_telemetry: 1-31 of [A-Za-z0-9_.-]);
 * a desc's name is compared as telemetry writes it (other characters as
 * '_'). Each problem is reported as "file:line: message" (fm_config_problems):
 * unknown section or key, bad name, bad number, out-of-range value, bad
 * syntax, a line over FM_CONFIG_MAX_LINE (200) characters. A section that
 * parsed is then checked by the very rules of create (fm_pool_desc_check,
 * fm_arena_desc_check both with virtual memory and with an allocator,
 * fm_tag_desc_check) over a desc of defaults, reported at its header line.
 * A section with a problem is never applied (its values stay as the
 * program's desc has them); a section that appears twice is applied twice
 * (the later values win).
 *
 * Applying: fm_config_apply_* (or fm_config_apply, C11 and C++) sets on the
 * desc the keys the file's sections of that kind and name set, nothing
 * else, and checks the result with the desc's own check: a desc that check
 * would refuse (the file's max_capacity below the program's
 * initial_capacity, say) is left as it was and the problem added at the
 * section's line. So a readable config never makes create fail.
 *
 * The reader is framemem's own: libinih, which the project used before
 * issue 16, reads lines through a fixed buffer (200 bytes in Debian's
 * build, terminator included) and silently splits longer lines, where this
 * format promises lines of 200 characters and a report for longer ones.
 *
 * NULL: a NULL config is reported as framemem does (base.h:
 * FM_ERR_INVALID_ARG naming the function, also in err where there is one)
 * and the function returns its failure value. fm_config_destroy(NULL) does
 * nothing.
 */
#ifndef FRAMEMEM_CONFIG_H
#define FRAMEMEM_CONFIG_H

#include "framemem/telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FM_CONFIG_MAX_LINE 200 /* characters, without the line end */
/* Largest config file fm_config_load reads; a bigger one is not a config. */
#define FM_CONFIG_MAX_BYTES ((size_t)1 << 20)
/* The most initial_capacity, max_capacity and grow_step take. */
#define FM_CONFIG_MAX_ITEMS (1u << 28)

typedef struct fm_config fm_config;

/// Reads the INI file at path (fm_file_read: a FIFO, device or directory is
/// refused at once, a file above FM_CONFIG_MAX_BYTES too). NULL with "config
/// PATH: REASON" in err when it cannot be read (or out of memory); otherwise
/// the config, problems inside the file kept in it. allocator (NULL: the C
/// heap) holds the file while it is read and the config.
FM_TELEMETRY_API fm_config *fm_config_load(const char *path, const fm_allocator *allocator,
                                           char *err, size_t err_len);
/// The same from memory; name stands for the file in messages. A UTF-8
/// byte-order mark at the start is skipped.
FM_TELEMETRY_API fm_config *fm_config_load_mem(const char *data, size_t size, const char *name,
                                               const fm_allocator *allocator, char *err,
                                               size_t err_len);
/// Frees the config. NULL: no-op.
FM_TELEMETRY_API void fm_config_destroy(fm_config *cfg);
/// Problems found so far (load, apply, fm_config_report_unused).
FM_TELEMETRY_API uint32_t fm_config_problem_count(const fm_config *cfg);
/// Their messages, "file:line: message\n" each (the text ends with "...\n"
/// when they pass 4 KiB); "" when none.
FM_TELEMETRY_API const char *fm_config_problems(const fm_config *cfg);

/// Sets the keys of [pool.NAME] (NAME: desc->name, else type_name, else
/// "pool") on desc. 1 applied; 0 no such section (desc untouched); -1 the
/// result would fail fm_pool_desc_check: desc untouched, a problem added.
FM_TELEMETRY_API int fm_config_apply_pool(fm_config *cfg, fm_pool_desc *desc);
/// [arena.NAME] (NAME: desc->name, else "arena"): reserve, commit_step.
FM_TELEMETRY_API int fm_config_apply_arena(fm_config *cfg, fm_arena_desc *desc);
/// [arena.NAME] (NAME: desc->name, else "frame") on desc->arena.
FM_TELEMETRY_API int fm_config_apply_frame_arena(fm_config *cfg, fm_frame_arena_desc *desc);
/// [tag.NAME] (NAME: desc->name, else "tag"): the limits.
FM_TELEMETRY_API int fm_config_apply_tag(fm_config *cfg, fm_tag_desc *desc);
/// Adds a problem "file:line: [KIND.NAME] matches no object of the program"
/// for each section no fm_config_apply_* has matched yet; how many.
FM_TELEMETRY_API uint32_t fm_config_report_unused(fm_config *cfg);

/* Why a tuned capacity is not the suggestion itself. */
typedef enum fm_config_tuned {
    FM_CONFIG_TUNED_EXACT,        /* fm_telemetry_suggest_capacity as it is */
    FM_CONFIG_TUNED_LIMIT,        /* capped at FM_CONFIG_MAX_ITEMS */
    FM_CONFIG_TUNED_MAX_CAPACITY, /* capped at the pool's max_capacity */
} fm_config_tuned;

/// The initial_capacity the tuned writers write for a pool whose highest live
/// count was peak_live: fm_telemetry_suggest_capacity(peak_live, headroom,
/// chunk_items), capped at FM_CONFIG_MAX_ITEMS, then at max_capacity (0:
/// none), at least 1; *why (may be NULL) says which cap applied.
FM_TELEMETRY_API uint32_t fm_config_tuned_capacity(uint64_t peak_live, double headroom,
                                                   uint64_t chunk_items, uint32_t max_capacity,
                                                   fm_config_tuned *why);
/// Writes a config from one telemetry (live or read from a CSV): per pool
/// source, initial_capacity = fm_config_tuned_capacity of its highest live
/// count (capped at a live pool's max_capacity) with a comment saying where
/// it came from; per arena source, a reserve of at least 4x its largest
/// frame when the current one is known to be smaller (a live arena's) or the
/// 64 MiB default is. Written whole or not at all (fm_file_begin /
/// fm_file_commit); false with "PATH: ..." in err when it cannot be written
/// (an existing file is then unchanged). headroom below 1 is taken as 1.
FM_TELEMETRY_API bool fm_config_write_tuned(const fm_telemetry *tel, const char *path,
                                            double headroom, char *err, size_t err_len);
/// The same over several runs (the highest peak of any run), keeping every
/// other key of base (may be NULL): its sections' keys are written too, its
/// max_capacity caps, its reserve is the current one, and its sections no run
/// recorded are written as they are.
FM_TELEMETRY_API bool fm_config_write_tuned_runs(const fm_config *base,
                                                 const fm_telemetry *const *runs,
                                                 uint32_t run_count, double headroom,
                                                 const char *path, char *err, size_t err_len);

#ifdef __cplusplus
}
/* C++: one name for every kind of desc. */
extern "C++" {
inline int fm_config_apply(fm_config *cfg, fm_pool_desc *desc) {
    return fm_config_apply_pool(cfg, desc);
}
inline int fm_config_apply(fm_config *cfg, fm_arena_desc *desc) {
    return fm_config_apply_arena(cfg, desc);
}
inline int fm_config_apply(fm_config *cfg, fm_frame_arena_desc *desc) {
    return fm_config_apply_frame_arena(cfg, desc);
}
inline int fm_config_apply(fm_config *cfg, fm_tag_desc *desc) {
    return fm_config_apply_tag(cfg, desc);
}
}
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* C11: fm_config_apply(cfg, &desc) for a pool, arena, frame arena or tag
 * desc (C99: the named functions). */
#define fm_config_apply(cfg, desc)                                              \
    _Generic((desc),                                                            \
        fm_pool_desc *: fm_config_apply_pool,                                   \
        fm_arena_desc *: fm_config_apply_arena,                                 \
        fm_frame_arena_desc *: fm_config_apply_frame_arena,                     \
        fm_tag_desc *: fm_config_apply_tag)((cfg), (desc))
#endif

#endif /* FRAMEMEM_CONFIG_H */
