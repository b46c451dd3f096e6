/* file_internal.h: test hooks of framemem_file (not installed). */
#ifndef FM_FILE_INTERNAL_H
#define FM_FILE_INTERNAL_H

/* The steps of a write or read that tests can make fail: the ones a test
 * cannot provoke for real without root (an fsync or close that fails, a
 * read error) and, for completeness, the others. */
typedef enum fm__file_step {
    FM__FILE_STEP_NONE = 0,
    FM__FILE_STEP_CREATE, /* the temporary file */
    FM__FILE_STEP_WRITE,  /* fm_file_write / fm_file_printf */
    FM__FILE_STEP_FLUSH,  /* commit's fflush */
    FM__FILE_STEP_FSYNC,
    FM__FILE_STEP_CLOSE,
    FM__FILE_STEP_RENAME,
    FM__FILE_STEP_READ,   /* fm_file_read's read(2) */
} fm__file_step;

/// The next time the calling thread reaches step, it fails with errno err
/// (the real call is skipped, except close, which still closes). Once.
void fm__file_fail_next(fm__file_step step, int err);

#endif /* FM_FILE_INTERNAL_H */
