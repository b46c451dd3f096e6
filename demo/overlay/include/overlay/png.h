/*
 * overlay/png.h: pictures (the demo's screenshots, fm-plot's plots) as PNG,
 * encoded in memory with stb_image_write and written whole or not at all
 * through framemem/file.h: a full disk leaves no empty or cut-off PNG, and a
 * new file gets the usual mode (0644 less the umask).
 */
#ifndef OVERLAY_PNG_H
#define OVERLAY_PNG_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ovl_png {
    unsigned char *data; /* the PNG file's bytes (C heap: release with
                            ovl_png_free) */
    size_t size;
} ovl_png;

/// Encodes w x h RGBA pixels (stride bytes a row, R G B A in memory) as PNG
/// into *out (release with ovl_png_free). false (out empty) when the encoder
/// fails or memory runs out.
bool ovl_png_encode(ovl_png *out, const void *rgba, int w, int h, int stride);
/// Frees an encoded PNG and empties it; an empty one: no-op.
void ovl_png_free(ovl_png *png);
/// Writes an encoded PNG to path (fm_file_write_whole); false with "PATH: ..."
/// in err, the old file at path unchanged.
bool ovl_png_save(const ovl_png *png, const char *path, char *err, size_t err_len);
/// ovl_png_encode + ovl_png_save; false with the reason in err.
bool ovl_png_write(const char *path, const void *rgba, int w, int h, int stride, char *err,
                   size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* OVERLAY_PNG_H */
