/* stdio.h for the MSVC-mode header check (check_headers.sh msvc): there is
 * no Windows SDK here, and clang's own headers cover only the freestanding
 * ones. What test_headers.c, test_atomic.c and the engine's headers use,
 * declared as the UCRT declares it. */
#ifndef FM_TEST_MSVC_STDIO_H
#define FM_TEST_MSVC_STDIO_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct _iobuf FILE;
FILE *__acrt_iob_func(unsigned index);
#define stderr (__acrt_iob_func(2))
int printf(const char *fmt, ...);
int fprintf(FILE *f, const char *fmt, ...);
int snprintf(char *buf, size_t size, const char *fmt, ...);
int remove(const char *path);
#ifdef __cplusplus
}
#endif
#endif
