/* string.h for the MSVC-mode header check (see stdio.h here). */
#ifndef FM_TEST_MSVC_STRING_H
#define FM_TEST_MSVC_STRING_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void *memset(void *dst, int value, size_t size);
int strcmp(const char *a, const char *b);
char *strstr(const char *haystack, const char *needle); /* (C's; C++ adds overloads) */
#ifdef __cplusplus
}
#endif
#endif
