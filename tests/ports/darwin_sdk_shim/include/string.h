/* string.h (darwin_sdk_shim, not the SDK; see ../README.md). */
#ifndef FM_DARWIN_SHIM_STRING_H
#define FM_DARWIN_SHIM_STRING_H
#include <stddef.h>
void *memchr(const void *s, int c, size_t n);
int memcmp(const void *s1, const void *s2, size_t n);
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t len);
void *memset(void *b, int c, size_t len);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
int strcmp(const char *s1, const char *s2);
int strncmp(const char *s1, const char *s2, size_t n);
char *strcpy(char *restrict dst, const char *restrict src);
char *strerror(int errnum);
size_t strlen(const char *s);
char *strstr(const char *haystack, const char *needle);
#endif
