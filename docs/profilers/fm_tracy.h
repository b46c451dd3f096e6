/* fm_tracy.h: framemem's profiler hooks sent to Tracy (docs/PROFILERS.md).
 * Copy fm_tracy.c and this header into your game; build them with
 * TRACY_ENABLE and Tracy's public/ folder on the include path, and framemem
 * with FM_HOOKS=ON. */
#ifndef FM_TRACY_H
#define FM_TRACY_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Installs the hooks (fm_set_hooks): call it at startup, before creating
/// the pools and arenas to profile. false when framemem was built without
/// FM_HOOKS (reported through framemem's error handler).
bool fm_tracy_install(void);
/// Removes them.
void fm_tracy_uninstall(void);

#ifdef __cplusplus
}
#endif

#endif /* FM_TRACY_H */
