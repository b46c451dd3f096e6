/*
 * platform.h: the demo's window and renderer, or an offscreen surface.
 *
 * Windowed: SDL_Renderer accelerated when SDL finds a GPU driver, software
 * otherwise (or with .software, or when the "accelerated" OpenGL is a CPU
 * rasterizer such as Mesa's llvmpipe or softpipe: platform.c says why). With
 * no display, SDL's silent fallback to its offscreen driver is refused so the
 * user gets a message suggesting --headless instead of an invisible window.
 * Headless: SDL's offscreen video driver (dummy when offscreen is missing)
 * and a software renderer drawing into an SDL_Surface, so the same drawing
 * code runs with no display at all.
 */
#ifndef DEMO_PLATFORM_H
#define DEMO_PLATFORM_H

#include <SDL.h>
#include <stdbool.h>
#include <stddef.h>

#include "overlay/png.h"

typedef struct demo_platform_desc {
    int width, height;
    bool headless, vsync, software;
    const char *title;
} demo_platform_desc;

typedef struct demo_platform {
    SDL_Window *window;     /* NULL when headless */
    SDL_Surface *surface;   /* the headless target, else NULL */
    SDL_Renderer *renderer;
    int width, height;      /* output size in pixels */
    bool headless;
    bool gl_on_cpu;         /* OpenGL was a CPU rasterizer, so software it is */
    char renderer_name[80]; /* "software", "opengl", ... plus " (headless)" */
    char video_driver[32];
} demo_platform;

/// Opens the window (or offscreen surface) and its renderer. On failure writes
/// a one-line reason into err (for a missing display it suggests --headless)
/// and leaves *p closed.
bool demo_platform_open(demo_platform *p, const demo_platform_desc *desc, char *err, size_t err_size);
/// Destroys renderer, window/surface and shuts SDL down.
void demo_platform_close(demo_platform *p);
/// Shows the frame (no-op headless).
void demo_platform_present(demo_platform *p);
/// Encodes what the renderer currently holds (call before present) as a PNG
/// in memory (ovl_png_free it). On failure writes the reason into err.
bool demo_platform_capture(demo_platform *p, ovl_png *png, char *err, size_t err_size);
/// demo_platform_capture, then written to path whole or not at all
/// (ovl_png_save). On failure writes the reason ("PATH: ...") into err.
bool demo_platform_screenshot(demo_platform *p, const char *path, char *err, size_t err_size);

#endif /* DEMO_PLATFORM_H */
