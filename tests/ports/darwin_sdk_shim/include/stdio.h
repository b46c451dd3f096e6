/* stdio.h (darwin_sdk_shim, not the SDK; see ../README.md): FILE is Darwin's
 * struct __sFILE (opaque here: framemem only passes pointers), and the
 * standard streams are the C library's __stdoutp and __stderrp. */
#ifndef FM_DARWIN_SHIM_STDIO_H
#define FM_DARWIN_SHIM_STDIO_H
#include <stdarg.h>
#include <sys/_types.h>
typedef struct __sFILE FILE;
extern FILE *__stdoutp;
extern FILE *__stderrp;
#define stdout __stdoutp
#define stderr __stderrp
FILE *fopen(const char *restrict path, const char *restrict mode);
FILE *fdopen(int fd, const char *mode);
int fclose(FILE *stream);
int fflush(FILE *stream);
int ferror(FILE *stream);
int fileno(FILE *stream);
size_t fwrite(const void *restrict ptr, size_t size, size_t nitems, FILE *restrict stream);
int fputs(const char *restrict s, FILE *restrict stream);
int printf(const char *restrict format, ...);
int fprintf(FILE *restrict stream, const char *restrict format, ...);
int snprintf(char *restrict s, size_t n, const char *restrict format, ...);
int vfprintf(FILE *restrict stream, const char *restrict format, va_list ap);
int vsnprintf(char *restrict s, size_t n, const char *restrict format, va_list ap);
int rename(const char *old, const char *new_path);
int remove(const char *path);
#endif
