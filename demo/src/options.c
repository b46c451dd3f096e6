/*
 * options.c: framemem-demo's command line.
 */
#include "options.h"

#include <SDL.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: framemem-demo [options]\n"
    "\n"
    "Watch frame hitches from pool regrowth, then tune them away.\n"
    "\n"
    "  --config FILE        pool sizes from an INI file (see --save-config)\n"
    "  --save-config FILE   write a tuned config (capacities from observed peaks) at exit\n"
    "  --frames N           exit after N frames, paused ones included (default: run\n"
    "                       until closed)\n"
    "  --headless           no window: offscreen software rendering\n"
    "  --screenshot FILE    PNG of the last frame, overlay included, at exit\n"
    "  --csv FILE           telemetry of every frame as CSV, one row per pool per frame\n"
    "  --trace FILE         Chrome trace event JSON of the last 600 frames, at exit\n"
    "                       (Perfetto, chrome://tracing)\n"
    "  --seed N             simulation seed (default 1)\n"
    "  --scale N            load multiplier, 0.05..50 (default 1: 20,000 particles,\n"
    "                       effect objects of 1 KiB each)\n"
    "  --backend NAME       allocator behind the world: pool (framemem, default),\n"
    "                       classic (Boost object_pool's doubling eager pool) or\n"
    "                       malloc\n"
    "  --compare            the summary adds the same frames run headless on\n"
    "                       framemem (the config, then tuned from its peaks),\n"
    "                       classic and malloc, side by side\n"
    "  --grow-ahead         start with grow-ahead on (pools grow at frame boundaries)\n"
    "  --prefault           start with prefault on (growth touches its pages at once)\n"
    "  --size WxH           window size (default 1280x720)\n"
    "  --vsync              synchronise presents with the display\n"
    "  --software           software renderer even when a GPU renderer exists\n"
    "  --no-overlay         start with the overlay hidden (F1 shows it)\n"
    "  --quiet              no summary at exit\n"
    "  --press LIST         simulated key presses FRAME:KEY[,FRAME:KEY...] (SDL key\n"
    "                       names: S, L, M, F1, F12, =, -, ...), e.g. 300:S,301:L;\n"
    "                       frames count as --frames does\n"
    "  --help               this text\n"
    "\n"
    "Keys: F1 overlay, P pause, N step, B burst, +/- scale, G growth policy,\n"
    "      A grow-ahead, F prefault, M backend (pool, classic, malloc), V memory\n"
    "      map, S save tuned config, L reload config, R reset stats, F12\n"
    "      screenshot, Esc quit. S writes the --save-config\n"
    "      file (else framemem-tuned.ini); L reloads --config or the file S wrote;\n"
    "      F12 writes framemem-demo-NNN.png.\n"
    "\n"
    "Outputs (--csv, --trace, --screenshot, --save-config) are written at exit,\n"
    "only when the run succeeded; each whole or not at all.\n"
    "\n"
    "Exit codes: 0 everything asked was done; 1 runtime failure (no display, SDL,\n"
    "a key whose action failed) or a file that could not be written (named, with\n"
    "the reason; an existing file is kept as it was); 2 bad arguments, a config\n"
    "that is not a readable regular file of at most 1 MiB (nothing runs) or has\n"
    "problems (the run goes on with the defaults for the bad entries), or an\n"
    "output that is not a regular file or is the same file as an input or another\n"
    "output (nothing runs); 3 the engine met failures during the run (memory\n"
    "refused: fewer spawns, the world emptied, a rebuild refused; the summary\n"
    "counts them). When several apply, the smallest.\n";

const char *demo_options_usage(void) { return usage; }

demo_options demo_options_default(void) {
    return (demo_options){
        .seed = 1,
        .scale = 1,
        .backend = ENG_BACKEND_POOL,
        .width = 1280,
        .height = 720,
        .overlay = true,
    };
}

static bool fail(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return false;
}

/* A whole decimal number in [lo, hi], nothing else in the string. */
static bool parse_range(const char *opt, const char *s, unsigned long long lo, unsigned long long hi,
                        unsigned long long *out, char *err, size_t n) {
    char *end;
    errno = 0;
    if (*s == '-' || *s == '+' || *s == ' ' || *s == 0)
        return fail(err, n, "%s: '%s' is not a whole number in %llu..%llu", opt, s, lo, hi);
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != 0)
        return fail(err, n, "%s: '%s' is not a whole number in %llu..%llu", opt, s, lo, hi);
    if (errno == ERANGE || v < lo || v > hi)
        return fail(err, n, "%s: %s is out of range %llu..%llu", opt, s, lo, hi);
    *out = v;
    return true;
}

/* A decimal number in [lo, hi] (--scale 5, --scale 0.5). */
static bool parse_real(const char *opt, const char *s, double lo, double hi, double *out, char *err,
                       size_t n) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != 0 || *s == ' ' || v != v)
        return fail(err, n, "%s: '%s' is not a number in %g..%g", opt, s, lo, hi);
    if (errno == ERANGE || v < lo || v > hi)
        return fail(err, n, "%s: %s is out of range %g..%g", opt, s, lo, hi);
    *out = v;
    return true;
}

/* FRAME:KEY[,FRAME:KEY...], frames not decreasing, SDL key names. */
static bool parse_presses(const char *s, demo_options *o, char *err, size_t n) {
    const char *p = s;
    while (*p) {
        if (o->press_count == DEMO_MAX_PRESSES)
            return fail(err, n, "--press: more than %d presses", DEMO_MAX_PRESSES);
        char *colon;
        errno = 0;
        long frame = strtol(p, &colon, 10);
        if (colon == p || *colon != ':' || frame < 0 || errno == ERANGE)
            return fail(err, n, "--press: '%s' is not FRAME:KEY[,FRAME:KEY...]", s);
        const char *key = colon + 1, *end = strchr(key, ',');
        size_t len = end ? (size_t)(end - key) : strlen(key);
        char name[32];
        if (len == 0 || len >= sizeof name)
            return fail(err, n, "--press: '%s' is not FRAME:KEY[,FRAME:KEY...]", s);
        memcpy(name, key, len);
        name[len] = 0;
        SDL_Keycode k = SDL_GetKeyFromName(name);
        if (k == SDLK_UNKNOWN) return fail(err, n, "--press: '%s' is not an SDL key name", name);
        if (o->press_count && frame < o->press[o->press_count - 1].frame)
            return fail(err, n, "--press: frame %ld comes after frame %ld", frame,
                        o->press[o->press_count - 1].frame);
        o->press[o->press_count++] = (demo_press){.frame = frame, .key = k};
        p = end ? end + 1 : key + len;
        if (end && !*p) return fail(err, n, "--press: '%s' ends with a comma", s);
    }
    return true;
}

static bool parse_size(const char *s, int *w, int *h, char *err, size_t n) {
    char *x;
    errno = 0;
    long a = strtol(s, &x, 10);
    if (x == s || (*x != 'x' && *x != 'X'))
        return fail(err, n, "--size: '%s' is not WIDTHxHEIGHT (e.g. 1280x720)", s);
    char *end;
    long b = strtol(x + 1, &end, 10);
    if (end == x + 1 || *end != 0)
        return fail(err, n, "--size: '%s' is not WIDTHxHEIGHT (e.g. 1280x720)", s);
    if (errno == ERANGE || a < 320 || b < 240 || a > 8192 || b > 8192)
        return fail(err, n, "--size: %s is out of range 320x240..8192x8192", s);
    *w = (int)a;
    *h = (int)b;
    return true;
}

bool demo_options_parse(int argc, char **argv, demo_options *o, char *err, size_t n) {
    *o = demo_options_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        /* Flags without a value. */
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { o->help = true; continue; }
        if (!strcmp(a, "--headless")) { o->headless = true; continue; }
        if (!strcmp(a, "--vsync")) { o->vsync = true; continue; }
        if (!strcmp(a, "--grow-ahead")) { o->grow_ahead = true; continue; }
        if (!strcmp(a, "--prefault")) { o->prefault = true; continue; }
        if (!strcmp(a, "--software")) { o->software = true; continue; }
        if (!strcmp(a, "--no-overlay")) { o->overlay = false; continue; }
        if (!strcmp(a, "--quiet")) { o->quiet = true; continue; }
        if (!strcmp(a, "--compare")) { o->compare = true; continue; }

        static const char *const with_value[] = {
            "--config", "--frames", "--screenshot", "--csv", "--trace", "--seed",
            "--scale", "--backend", "--save-config", "--size", "--press",
        };
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            known |= !strcmp(a, with_value[k]);
        if (!known)
            return fail(err, n, "unknown option '%s'", a);
        if (i + 1 >= argc)
            return fail(err, n, "%s needs a value", a);
        const char *v = argv[++i];
        if (*v == 0)
            return fail(err, n, "%s: the value is empty", a);
        unsigned long long num;
        if (!strcmp(a, "--config")) o->config = v;
        else if (!strcmp(a, "--screenshot")) o->screenshot = v;
        else if (!strcmp(a, "--csv")) o->csv = v;
        else if (!strcmp(a, "--trace")) o->trace = v;
        else if (!strcmp(a, "--save-config")) o->save_config = v;
        else if (!strcmp(a, "--frames")) {
            if (!parse_range(a, v, 1, 1000000000ull, &num, err, n)) return false;
            o->frames = (long)num;
        } else if (!strcmp(a, "--seed")) {
            if (!parse_range(a, v, 0, UINT64_MAX, &num, err, n)) return false;
            o->seed = num;
        } else if (!strcmp(a, "--scale")) {
            if (!parse_real(a, v, 0.05, 50, &o->scale, err, n)) return false;
        } else if (!strcmp(a, "--backend")) {
            int b = 0;
            while (b < ENG_BACKEND_COUNT && strcmp(v, eng_backend_name((eng_backend)b))) b++;
            if (b == ENG_BACKEND_COUNT)
                return fail(err, n, "--backend: '%s' is not 'pool', 'classic' or 'malloc'", v);
            o->backend = (eng_backend)b;
        } else if (!strcmp(a, "--press")) {
            if (!parse_presses(v, o, err, n)) return false;
        } else if (!strcmp(a, "--size")) {
            if (!parse_size(v, &o->width, &o->height, err, n)) return false;
        }
    }
    return true;
}
