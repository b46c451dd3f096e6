/* stdlib.h (darwin_sdk_shim, not the SDK; see ../README.md). */
#ifndef FM_DARWIN_SHIM_STDLIB_H
#define FM_DARWIN_SHIM_STDLIB_H
#include <stddef.h>
void *malloc(size_t size);
void *calloc(size_t count, size_t size);
void *realloc(void *ptr, size_t size);
void free(void *ptr);
int posix_memalign(void **memptr, size_t alignment, size_t size);
void abort(void) __attribute__((noreturn));
void exit(int status) __attribute__((noreturn));
double strtod(const char *restrict s, char **restrict end);
unsigned long long strtoull(const char *restrict s, char **restrict end, int base);
void qsort(void *base, size_t nel, size_t width, int (*compar)(const void *, const void *));
char *realpath(const char *restrict path, char *restrict resolved_path);
#endif
