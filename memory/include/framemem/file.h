/*
 * framemem/file.h: files written whole or not at all, read without surprises.
 *
 * The library framemem_file (CMake target framemem::file), separate from the
 * core framemem library, which does no file I/O. The engine, the demo and the
 * tools write and read every file through it.
 *
 *   fm_file_writer *w = fm_file_begin("run.csv", err, sizeof err);
 *   if (!w) return fail(err);                   // "run.csv: cannot write: ..."
 *   fm_file_printf(w, "frame,ns\n");            // each call checked; after a
 *   fm_file_write(w, row, row_len);             // failure the rest are skipped
 *   if (!fm_file_commit(w, err, sizeof err))    // "run.csv: write failed: File too large"
 *       return fail(err);                       // (run.csv as it was)
 *   // or fm_file_abort(w): nothing written, run.csv as it was
 *
 * Writing. fm_file_begin creates a temporary file in the destination's
 * folder ("NAME.tmpPID-N"); fm_file_write and fm_file_printf append to it and
 * check every call; fm_file_commit flushes, checks the stream's error flag,
 * fsyncs, closes and only then renames it over the destination. On any
 * failure the temporary file is removed and the destination is left exactly
 * as it was; the message names the destination and the system's reason
 * (strerror). fm_file_write_whole does all of it for a buffer.
 * - A destination that exists and is not a regular file (a device, FIFO,
 *   directory or socket) is refused, never replaced ("PATH: not a regular
 *   file (refusing to replace it)"): as root, writing to /dev/null must not
 *   replace the system's /dev/null.
 * - A symbolic link to a regular file: the file it points to is replaced,
 *   the link stays.
 * - Mode: a new file gets 0644 less the umask, as fopen's files do (minus
 *   group/other write); a replaced file keeps its permission bits.
 *
 * Reading. fm_file_read opens without blocking (O_NONBLOCK) and checks the
 * open file (fstat): anything that is not a regular file is refused at once
 * ("PATH: not a regular file"), so a FIFO, a directory or /dev/zero never
 * hangs or floods a reader; a file above the caller's cap is refused
 * ("PATH: too large (cap N bytes)") before any of it is read. Text readers
 * accept a UTF-8 byte-order mark by skipping it (fm_file_skip_bom).
 *
 * Before a program runs: fm_file_check_input and fm_file_check_outputs refuse
 * unusable inputs, outputs that are not regular files, outputs that are the
 * same file as an input (same device and inode) and one file given for two
 * outputs, so that nothing runs only to fail at the end.
 *
 * Messages go to (err, err_len) (err may be NULL); nothing is written to
 * stderr and the fm error handler is not called for a file's problems (these
 * are the user's files, not framemem's objects). A NULL writer is a caller's
 * bug and is reported as base.h says for every NULL object
 * (FM_ERR_INVALID_ARG); fm_file_abort(NULL) is a no-op. Writers and reads are independent: any number may
 * be used at once from different threads, one writer by one thread at a time.
 * POSIX (open, fstat, fsync, rename).
 */
#ifndef FRAMEMEM_FILE_H
#define FRAMEMEM_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "framemem/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FM_FILE_PRINTF(f, a) FM__PRINTF_LIKE(f, a)

/* What FM_API (base.h) is for framemem, for framemem_file's functions. */
#if defined(FM__BUILDING_FILE)
#define FM_FILE_API FM__EXPORT
#else
#define FM_FILE_API FM__IMPORT
#endif

/// Longest path (terminator included) a writer takes; longer ones are refused.
#define FM_FILE_PATH_MAX 4096

/* ----------------------------------------------------------------- writing */

typedef struct fm_file_writer fm_file_writer;

/// Starts writing path: refuses an existing destination that is not a regular
/// file, creates the temporary file beside it. The writer (C heap) is freed by
/// commit or abort. NULL with "PATH: ..." in err when refused or not creatable.
FM_FILE_API fm_file_writer *fm_file_begin(const char *path, char *err, size_t err_len);
/// Appends size bytes. false (and later writes skipped) after the first
/// failure, which commit reports; NULL w: false, FM_ERR_INVALID_ARG.
FM_FILE_API bool fm_file_write(fm_file_writer *w, const void *data, size_t size);
/// Appends printf-formatted text; false as fm_file_write.
FM_FILE_API FM_FILE_PRINTF(2, 3) bool fm_file_printf(fm_file_writer *w, const char *fmt, ...);
/// true until a write of w failed (NULL: false, FM_ERR_INVALID_ARG).
FM_FILE_API bool fm_file_ok(const fm_file_writer *w);
/// Flush, error check, fsync, close, rename over the destination; frees w.
/// false with "PATH: STEP failed: REASON" in err on any failure (the first
/// one), the temporary file removed and the destination unchanged. NULL w:
/// false, FM_ERR_INVALID_ARG.
FM_FILE_API bool fm_file_commit(fm_file_writer *w, char *err, size_t err_len);
/// Closes and removes the temporary file, frees w; the destination is
/// unchanged. NULL: no-op.
FM_FILE_API void fm_file_abort(fm_file_writer *w);
/// begin + write + commit of size bytes at data; false with err as they give.
FM_FILE_API bool fm_file_write_whole(const char *path, const void *data, size_t size, char *err,
                                     size_t err_len);

/* ----------------------------------------------------------------- reading */

/// A file's bytes: data[size] is a NUL (not counted), so text can be parsed
/// as a string. Release with fm_file_data_release.
typedef struct fm_file_data {
    char *data;
    size_t size;
    size_t alloc_size_;     /* bytes held at data (internal) */
    fm_allocator allocator_; /* where they came from (internal) */
} fm_file_data;

/// Reads the whole regular file at path, at most max_bytes (its cap), into
/// memory from a (NULL or zero: the C heap). false with "PATH: cannot open:
/// REASON", "PATH: not a regular file", "PATH: too large (cap N bytes)",
/// "PATH: read failed: REASON" or "PATH: out of memory ..." in err; *out is
/// then empty (and safe to release).
FM_FILE_API bool fm_file_read(const char *path, size_t max_bytes, const fm_allocator *a,
                              fm_file_data *out, char *err, size_t err_len);
/// Frees what fm_file_read gave and empties d. An empty d: no-op.
FM_FILE_API void fm_file_data_release(fm_file_data *d);
/// Skips a UTF-8 byte-order mark (EF BB BF) at *data: true when there was one.
FM_FILE_API bool fm_file_skip_bom(const char **data, size_t *size);

/// Flushes stdout: false with "standard output: write failed: REASON" in err
/// when anything printed to it was lost (a full disk, a closed pipe), so a
/// program's exit status can say so.
FM_FILE_API bool fm_file_stdout_ok(char *err, size_t err_len);

/* ---------------------------------------------------- checks before a run */

/// true when path opens without blocking as a regular file of at most
/// max_bytes (closed again, nothing read); false with fm_file_read's
/// messages otherwise.
FM_FILE_API bool fm_file_check_input(const char *path, size_t max_bytes, char *err, size_t err_len);
/// Checks the outputs a program is about to write against each other and its
/// inputs (NULL entries are skipped): false with the first problem in err for
/// an output that exists and is not a regular file ("PATH: not a regular file
/// (refusing to replace it)"), the same file as an input ("OUT: the same file
/// as the input IN") or the same file as another output ("OUT: given for two
/// outputs"). Paths not created yet compare by folder and name.
FM_FILE_API bool fm_file_check_outputs(const char *const *outputs, size_t output_count,
                                       const char *const *inputs, size_t input_count, char *err,
                                       size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* FRAMEMEM_FILE_H */
