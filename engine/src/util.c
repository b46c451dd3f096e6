/* util.c: the bottom of the engine's chain (eng_internal.h): backing memory,
 * messages into err, NULL-object reports and faults. Calls no other engine
 * file. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "eng_internal.h"

/* -------------------------------------------------------------- messages */

void eng__set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (!err || !err_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

void eng__report_null(const char *fn, const char *what, char *err, size_t err_len) {
    fm_report_error(FM_ERR_INVALID_ARG, "%s: the %s is NULL", fn, what);
    eng__set_err(err, err_len, "%s: the %s is NULL", fn, what);
}

/* -------------------------------------------------------- backing memory */

/* NULL stands for the zero allocator (the C heap) in the engine's helpers. */
static const fm_allocator eng__heap;
static const fm_allocator *eng__or_heap(const fm_allocator *a) { return a ? a : &eng__heap; }

void *eng__mem_alloc(const fm_allocator *a, size_t size) {
    return fm_allocator_alloc(eng__or_heap(a), size, FM_DEFAULT_ALIGN);
}

void *eng__mem_calloc(const fm_allocator *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    /* The heap's calloc leaves big blocks as untouched zero pages. Not on
     * Windows, where the zero allocator's blocks come from _aligned_malloc
     * and its free (_aligned_free) cannot take calloc's. */
#ifndef _WIN32
    if (!eng__or_heap(a)->alloc) return calloc(n ? n : 1, size ? size : 1);
#endif
    void *p = eng__mem_alloc(a, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void eng__mem_free(const fm_allocator *a, void *p, size_t size) {
    fm_allocator_free(eng__or_heap(a), p, size);
}

/* ---------------------------------------------------------------- faults */

void eng__fault(eng__faults *f, const char *fmt, ...) {
    if (!f) return;
    f->count++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->last, sizeof f->last, fmt, ap);
    va_end(ap);
}
