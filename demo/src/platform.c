/*
 * platform.c: window, renderer, headless surface, screenshots.
 */
#include "platform.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void set_err(char *err, size_t n, const char *what) {
    snprintf(err, n, "%s: %s", what, SDL_GetError());
}

static bool open_headless(demo_platform *p, const demo_platform_desc *d, char *err, size_t n) {
    /* Offscreen first; SDL builds without it still have the dummy driver. */
    static const char *const drivers[] = {"offscreen", "dummy"};
    bool ok = false;
    for (size_t i = 0; i < 2 && !ok; i++) {
        SDL_SetHint(SDL_HINT_VIDEODRIVER, drivers[i]);
        ok = SDL_InitSubSystem(SDL_INIT_VIDEO) == 0;
    }
    if (!ok) {
        set_err(err, n, "headless: no offscreen or dummy SDL video driver");
        return false;
    }
    p->surface = SDL_CreateRGBSurfaceWithFormat(0, d->width, d->height, 32, SDL_PIXELFORMAT_ARGB8888);
    if (!p->surface) {
        set_err(err, n, "headless: cannot create the target surface");
        return false;
    }
    p->renderer = SDL_CreateSoftwareRenderer(p->surface);
    if (!p->renderer) {
        set_err(err, n, "headless: cannot create the software renderer");
        return false;
    }
    return true;
}

/* GL drivers that rasterise on the CPU (Mesa's llvmpipe, softpipe, swrast):
 * SDL calls them accelerated, but its own software renderer is faster there
 * (under Xvfb a frame's present costs about a third as much). */
static bool gl_is_cpu_rasterizer(SDL_Renderer *r) {
    SDL_RendererInfo info;
    if (SDL_GetRendererInfo(r, &info) != 0 || strncmp(info.name, "opengl", 6) != 0) return false;
    typedef const unsigned char *(*get_string_fn)(unsigned int);
    get_string_fn get_string = (get_string_fn)(uintptr_t)SDL_GL_GetProcAddress("glGetString");
    if (!get_string) return false;
    const char *name = (const char *)get_string(0x1F01 /* GL_RENDERER */);
    return name && (strstr(name, "llvmpipe") || strstr(name, "softpipe") || strstr(name, "swrast"));
}

static bool open_window(demo_platform *p, const demo_platform_desc *d, char *err, size_t n) {
    if (SDL_InitSubSystem(SDL_INIT_VIDEO) != 0) {
        snprintf(err, n,
                 "cannot open a window: no display available (SDL: %s). "
                 "Run with --headless to render offscreen, or under xvfb-run.",
                 SDL_GetError());
        return false;
    }
    /* With no display SDL 2 falls back to its offscreen driver on its own: a
     * window nobody sees. Only accept that when the user asked for it. */
    const char *drv = SDL_GetCurrentVideoDriver(), *asked = SDL_getenv("SDL_VIDEODRIVER");
    if (drv && (!strcmp(drv, "offscreen") || !strcmp(drv, "dummy")) && !(asked && !strcmp(asked, drv))) {
        snprintf(err, n,
                 "cannot open a window: no display available (DISPLAY and WAYLAND_DISPLAY are not "
                 "set; SDL found only its '%s' driver). Run with --headless to render offscreen, "
                 "or under xvfb-run.",
                 drv);
        return false;
    }
    p->window = SDL_CreateWindow(d->title ? d->title : "framemem-demo", SDL_WINDOWPOS_CENTERED,
                                 SDL_WINDOWPOS_CENTERED, d->width, d->height, 0);
    if (!p->window) {
        snprintf(err, n,
                 "cannot open a window (SDL: %s). Run with --headless to render offscreen.",
                 SDL_GetError());
        return false;
    }
    Uint32 vs = d->vsync ? SDL_RENDERER_PRESENTVSYNC : 0;
    if (!d->software) {
        p->renderer = SDL_CreateRenderer(p->window, -1, SDL_RENDERER_ACCELERATED | vs);
        if (p->renderer && gl_is_cpu_rasterizer(p->renderer)) {
            SDL_DestroyRenderer(p->renderer);
            p->renderer = NULL;
            p->gl_on_cpu = true;
        }
    }
    if (!p->renderer) { /* no GPU renderer (or --software): software it is */
        /* Present through the native framebuffer (X11: MIT-SHM), not through
         * SDL's OpenGL "texture framebuffer", which is Mesa's CPU JIT here. */
        SDL_SetHint(SDL_HINT_FRAMEBUFFER_ACCELERATION, "0");
        p->renderer = SDL_CreateRenderer(p->window, -1, SDL_RENDERER_SOFTWARE | vs);
    }
    if (!p->renderer) {
        set_err(err, n, "cannot create a renderer for the window");
        return false;
    }
    return true;
}

bool demo_platform_open(demo_platform *p, const demo_platform_desc *d, char *err, size_t n) {
    memset(p, 0, sizeof *p);
    p->headless = d->headless;
    bool ok = d->headless ? open_headless(p, d, err, n) : open_window(p, d, err, n);
    if (!ok) {
        demo_platform_close(p);
        return false;
    }
    if (SDL_GetRendererOutputSize(p->renderer, &p->width, &p->height) != 0) {
        p->width = d->width;
        p->height = d->height;
    }
    SDL_RendererInfo info;
    const char *name = SDL_GetRendererInfo(p->renderer, &info) == 0 ? info.name : "?";
    snprintf(p->renderer_name, sizeof p->renderer_name, "%s%s", name,
             d->headless ? " (headless)" : p->gl_on_cpu ? " (OpenGL is a CPU rasterizer here)" : "");
    const char *drv = SDL_GetCurrentVideoDriver();
    snprintf(p->video_driver, sizeof p->video_driver, "%s", drv ? drv : "none");
    return true;
}

void demo_platform_close(demo_platform *p) {
    if (p->renderer) SDL_DestroyRenderer(p->renderer);
    if (p->surface) SDL_FreeSurface(p->surface);
    if (p->window) SDL_DestroyWindow(p->window);
    if (SDL_WasInit(SDL_INIT_VIDEO)) SDL_QuitSubSystem(SDL_INIT_VIDEO);
    SDL_Quit();
    memset(p, 0, sizeof *p);
}

void demo_platform_present(demo_platform *p) {
    SDL_RenderPresent(p->renderer);
}

bool demo_platform_capture(demo_platform *p, ovl_png *png, char *err, size_t n) {
    *png = (ovl_png){0};
    int w = p->width, h = p->height;
    unsigned char *px = malloc((size_t)w * (size_t)h * 4);
    if (!px) {
        snprintf(err, n, "screenshot: out of memory");
        return false;
    }
    /* ABGR8888 is R, G, B, A in memory on little-endian machines and RGBA8888
     * on big-endian ones: the byte order stb_image_write wants. */
    Uint32 fmt = SDL_BYTEORDER == SDL_LIL_ENDIAN ? SDL_PIXELFORMAT_ABGR8888 : SDL_PIXELFORMAT_RGBA8888;
    bool ok = SDL_RenderReadPixels(p->renderer, NULL, fmt, px, w * 4) == 0;
    if (!ok) {
        set_err(err, n, "screenshot: cannot read the frame back");
    } else {
        /* Opaque output: the frame is what was on screen, alpha is noise. */
        for (size_t i = 3; i < (size_t)w * (size_t)h * 4; i += 4) px[i] = 255;
        ok = ovl_png_encode(png, px, w, h, w * 4);
        if (!ok) snprintf(err, n, "screenshot: cannot encode the PNG (out of memory?)");
    }
    free(px);
    return ok;
}

bool demo_platform_screenshot(demo_platform *p, const char *path, char *err, size_t n) {
    ovl_png png;
    if (!demo_platform_capture(p, &png, err, n)) return false;
    bool ok = ovl_png_save(&png, path, err, n);
    ovl_png_free(&png);
    return ok;
}
