/* png.c: PNG encoding to memory (stb_image_write) and writing through
 * framemem/file.h. */
#include "overlay/png.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image_write.h>

#include "framemem/file.h"

typedef struct ovl__png_sink {
    ovl_png *png;
    size_t cap;
    bool failed;
} ovl__png_sink;

/* stb_image_write's output callback: appends, or remembers that it could not. */
static void ovl__png_append(void *context, void *data, int size) {
    ovl__png_sink *s = context;
    if (s->failed || size <= 0) return;
    ovl_png *p = s->png;
    if ((size_t)size > SIZE_MAX / 2 - p->size) {
        s->failed = true;
        return;
    }
    if (p->size + (size_t)size > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 65536;
        while (ncap < p->size + (size_t)size) ncap *= 2;
        unsigned char *nd = realloc(p->data, ncap);
        if (!nd) {
            s->failed = true;
            return;
        }
        p->data = nd;
        s->cap = ncap;
    }
    memcpy(p->data + p->size, data, (size_t)size);
    p->size += (size_t)size;
}

bool ovl_png_encode(ovl_png *out, const void *rgba, int w, int h, int stride) {
    *out = (ovl_png){0};
    ovl__png_sink sink = {.png = out};
    int ok = stbi_write_png_to_func(ovl__png_append, &sink, w, h, 4, rgba, stride);
    if (!ok || sink.failed || !out->size) {
        ovl_png_free(out);
        return false;
    }
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
