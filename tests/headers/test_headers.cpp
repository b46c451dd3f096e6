/* tests/headers/test_headers.cpp: test_headers.c as a C++ program. The
 * headers come in first inside extern "C", as C++ code often includes C
 * headers: their C++ overloads keep C++ linkage all the same. */
extern "C" {
#include "framemem/framemem.h"
#include "framemem/file.h"
}

#include "test_headers.c"
