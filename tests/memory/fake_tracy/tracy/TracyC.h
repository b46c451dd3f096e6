/* tests/memory/fake_tracy/tracy/TracyC.h: a stand-in for Tracy's C API
 * header (Tracy is not a Debian package) with the macros
 * docs/profilers/fm_tracy.c uses, each a call to a function of test_hooks.c
 * that checks the events as Tracy's server would. */
#ifndef FAKE_TRACY_C_H
#define FAKE_TRACY_C_H

#include <stddef.h>

void fake_tracy_alloc(const void *ptr, size_t size, const char *name);
void fake_tracy_free(const void *ptr, const char *name);
void fake_tracy_discard(const char *name);
void fake_tracy_message(const char *text, size_t size);
void fake_tracy_frame_mark(void);

#define TracyCAllocN(ptr, size, name) fake_tracy_alloc((ptr), (size), (name))
#define TracyCFreeN(ptr, name) fake_tracy_free((ptr), (name))
#define TracyCMemoryDiscard(name) fake_tracy_discard(name)
#define TracyCMessage(text, size) fake_tracy_message((text), (size))
#define TracyCFrameMark fake_tracy_frame_mark();

#endif /* FAKE_TRACY_C_H */
