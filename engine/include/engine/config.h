/*
 * engine/config.h: pool-size configuration (INI).
 *
 *   [pool.particles]
 *   initial_capacity = 32768   ; items, 1 .. 2^28
 *   max_capacity = 0           ; 0 = unbounded, else >= initial_capacity
 *   growth = geometric         ; geometric | linear | fixed
 *   grow_factor = 2.0          ; (1, 64]
 *   grow_step = 4096           ; items, 0 .. 2^28 (0 = one chunk)
 *   prefault = true            ; true/false/1/0/yes/no/on/off
 *   chunk_bytes = 4096         ; 0 (the default) or a power of two, 4096 .. 2^30
 *   grow_ahead = true
 *   [arena.frame]
 *   reserve = 268435456        ; bytes, 1 MiB .. 64 GiB (32-bit: 4 GiB - 1)
 *   commit_step = 65536        ; bytes, 4 KiB .. reserve
 *
 * Comments are lines starting with ';' or '#', and a ';' after a blank ends
 * a value. Loading starts from the values already in the eng_config (the
 * engine's defaults) and reports every problem as "file:line: message":
 * unknown section, pool or arena, unknown key, bad number, out-of-range
 * value, bad syntax, a line over ENG_CONFIG_MAX_LINE (200) characters. Each
 * section that parsed is then checked by the very rules of fm_pool_create /
 * fm_frame_arena_create (fm_pool_desc_check, fm_frame_arena_desc_check; an
 * arena both with and without eng_desc.allocator), reported at its header
 * line: a loaded config never makes the engine's create fail. grow_factor is
 * judged as the float the pool keeps (1.00000001 is 1 there: refused). A
 * section is parsed into a staging copy and applied only when it had no
 * problem, so a pool is never half-configured; a section that appears twice
 * is applied twice (the later values win).
 *
 * NULL: a NULL eng_config is reported as framemem does (base.h:
 * FM_ERR_INVALID_ARG naming the function, also in rep or err) and the
 * function returns its failure value (NULL, -1, false; nothing written).
 */
#ifndef ENGINE_CONFIG_H
#define ENGINE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/telemetry.h"
#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ENG_CONFIG_MAX_POOLS 16
#define ENG_CONFIG_MAX_LINE 200 /* characters, without the line end */
#define ENG_CONFIG_MAX_ARENAS 4
/* Largest config file eng_config_load reads; a bigger one is not a pool config. */
#define ENG_CONFIG_MAX_BYTES ((size_t)1 << 20)

typedef struct eng_pool_config {
    char name[ENG_NAME_MAX];
    uint32_t initial_capacity;
    uint32_t max_capacity;
    fm_growth growth;
    float grow_factor;
    uint32_t grow_step;
    uint64_t chunk_bytes; /* 0: the pool's default (docs/POOLS.md, Memory) */
    bool prefault;
    bool grow_ahead;
} eng_pool_config;

typedef struct eng_arena_config {
    char name[ENG_NAME_MAX];
    uint64_t reserve;
    uint64_t commit_step;
} eng_arena_config;

typedef struct eng_config {
    eng_pool_config pools[ENG_CONFIG_MAX_POOLS];
    uint32_t pool_count;
    eng_arena_config arenas[ENG_CONFIG_MAX_ARENAS];
    uint32_t arena_count;
} eng_config;

/* Problems of one load: the messages, newline-separated, truncated (with
 * "...") when they pass the buffer. */
typedef struct eng_config_diag {
    uint32_t problems;
    char text[4096];
} eng_config_diag;

/// The engine's pools and arenas with their default (deliberately small)
/// sizes: the pools regrow during warm-up, which a tuned config removes.
void eng_config_defaults(eng_config *cfg);
/// The pool / arena entry of that name, or NULL.
eng_pool_config *eng_config_pool(eng_config *cfg, const char *name);
eng_arena_config *eng_config_arena(eng_config *cfg, const char *name);

/// Applies the INI file at path on top of cfg. Returns the number of problems
/// (also in rep, which may be NULL); -1 when the file cannot be read (cfg
/// untouched, "config PATH: ..." in rep): it is read with fm_file_read, so a
/// FIFO, device or directory is refused at once ("not a regular file") and a
/// file above ENG_CONFIG_MAX_BYTES too ("too large (cap N bytes)").
int eng_config_load(eng_config *cfg, const char *path, eng_config_diag *rep);
/// The same from memory; name stands for the file in messages. A UTF-8
/// byte-order mark at the start is skipped.
int eng_config_load_mem(eng_config *cfg, const char *data, size_t size, const char *name,
                        eng_config_diag *rep);

/* Why a tuned capacity is not the suggestion itself. */
typedef enum eng_tuned_cap {
    ENG_TUNED_EXACT,         /* eng_suggest_capacity as it is */
    ENG_TUNED_CONFIG_LIMIT,  /* capped at 2^28, the most initial_capacity takes */
    ENG_TUNED_MAX_CAPACITY,  /* capped at the pool's max_capacity */
} eng_tuned_cap;

/// The initial_capacity eng_config_write_tuned writes for pool p from the
/// highest live count of the runs: eng_suggest_capacity(peak_live, headroom,
/// chunk_items), capped at 2^28 and then at p->max_capacity, at least 1.
/// *why (may be NULL) says which cap applied. p NULL: no max_capacity.
uint32_t eng_config_tuned_capacity(const eng_pool_config *p, uint64_t peak_live, double headroom,
                                   uint64_t chunk_items, eng_tuned_cap *why);
/// Writes a config with every pool of cfg: initial_capacity from the highest
/// live count over every frame of the runs (eng_suggest_capacity with
/// headroom, whole chunks), growth kept, a comment per pool saying where the
/// number came from; pools absent from every run keep their value and say so.
/// Arenas: reserve kept, commit_step kept. Written whole or not at all
/// (fm_file_begin / fm_file_commit); false with "PATH: ..." in err when it
/// cannot be written (an existing file at path is then unchanged).
bool eng_config_write_tuned(const eng_config *cfg, const eng_telemetry *const *runs,
                            uint32_t run_count, double headroom, const char *path, char *err,
                            size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* ENGINE_CONFIG_H */
