/* tests/headers/check.h: CHECK(cond) for the programs in tests/headers,
 * which build as C99 and C++ and in MSVC mode (no cmocka there): a failed
 * check prints its line and counts; main returns the count. */
#ifndef FM_TEST_HEADERS_CHECK_H
#define FM_TEST_HEADERS_CHECK_H
#include <stdio.h>

static int failures;
static int check(int ok, const char *what, const char *file, int line) {
    if (!ok) {
        fprintf(stderr, "%s:%d: CHECK(%s) failed\n", file, line, what);
        failures++;
    }
    return ok;
}
#define CHECK(cond) check((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
#endif
