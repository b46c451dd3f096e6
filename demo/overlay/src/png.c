/* png.c: PNG encoding to memory (stb_image_write) and writing through
 * framemem/file.h. */
#include "overlay/png.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image_write.h>

#include "framemem/file.h"

/* The encoded bytes, in a buffer doubled as it fills (C heap). */
typedef struct ovl__png_sink {
    unsigned char *bytes;
    size_t size, cap;
    bool failed;
} ovl__png_sink;

/* stb_image_write's output callback: appends, or remembers that it could not. */
static void ovl__png_append(void *context, void *data, int size) {
    ovl__png_sink *s = context;
    if (s->failed || size <= 0) return;
    if ((size_t)size > s->cap - s->size) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap - s->size < (size_t)size && cap <= SIZE_MAX / 2) cap *= 2;
        unsigned char *grown = cap - s->size >= (size_t)size ? realloc(s->bytes, cap) : NULL;
        if (!grown) {
            s->failed = true;
            return;
        }
        s->bytes = grown;
        s->cap = cap;
    }
    memcpy(s->bytes + s->size, data, (size_t)size);
    s->size += (size_t)size;
}

bool ovl_png_encode(ovl_png *out, const void *rgba, int w, int h, int stride) {
    *out = (ovl_png){0};
    ovl__png_sink sink = {0};
    int ok = stbi_write_png_to_func(ovl__png_append, &sink, w, h, 4, rgba, stride);
    if (!ok || sink.failed || !sink.size) {
        free(sink.bytes);
        return false;
    }
    *out = (ovl_png){.data = sink.bytes, .size = sink.size};
    return true;
}

void ovl_png_free(ovl_png *png) {
    if (!png) return;
    free(png->data);
    *png = (ovl_png){0};
}

bool ovl_png_save(const ovl_png *png, const char *path, char *err, size_t err_len) {
    return fm_file_write_whole(path, png->data, png->size, err, err_len);
}

bool ovl_png_write(const char *path, const void *rgba, int w, int h, int stride, char *err,
                   size_t err_len) {
    ovl_png png;
    if (!ovl_png_encode(&png, rgba, w, h, stride)) {
        if (err && err_len) snprintf(err, err_len, "%s: cannot encode the PNG (out of memory?)", path);
        return false;
    }
    bool ok = ovl_png_save(&png, path, err, err_len);
    ovl_png_free(&png);
    return ok;
}
