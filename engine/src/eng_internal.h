/* eng_internal.h: helpers shared by the engine's sources (not installed). */
#ifndef ENG_INTERNAL_H
#define ENG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/telemetry.h"

#if defined(__GNUC__) || defined(__clang__)
#define ENG__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ENG__PRINTF(f, a)
#endif

/// snprintf into err when err is not NULL.
ENG__PRINTF(3, 4) void eng__set_err(char *err, size_t err_len, const char *fmt, ...);
/// Names of sources and config sections: 1-31 of [A-Za-z0-9_.-].
bool eng__valid_name(const char *name);
/// A temporary file beside path (written, then renamed by eng__close_temp).
FILE *eng__open_temp(const char *path, char *tmp, size_t tmp_len, char *err, size_t err_len);
bool eng__close_temp(FILE *f, bool ok, const char *tmp, const char *path, char *err,
                     size_t err_len);
/// Field k of ENG_SAMPLE_FIELDS / ENG_FRAME_FIELDS; NULL out of range.
uint64_t *eng__sample_field(eng_sample *x, int k);
uint64_t *eng__frame_field(eng_frame_record *r, int k);

#endif /* ENG_INTERNAL_H */
