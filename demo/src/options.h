/*
 * options.h: framemem-demo's command line.
 *
 * demo_options_parse fills a demo_options from argv and reports the first
 * problem as one line naming the option and what was wrong. Exit codes of the
 * program (the --help text says the same): 0 everything asked was done;
 * 1 runtime failure (no display, SDL, a file that could not be written, a
 * key whose action failed); 2 bad command line, a config that is not a
 * readable regular file (nothing runs) or has problems (the run uses the
 * defaults for the bad entries), or an output refused before the run (not a
 * regular file, or the same file as an input or another output); 3 the
 * engine met failures during the run (eng_info.failures). When several
 * apply, the smallest.
 */
#ifndef DEMO_OPTIONS_H
#define DEMO_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

#define DEMO_EXIT_OK 0
#define DEMO_EXIT_FAILURE 1
#define DEMO_EXIT_USAGE 2
#define DEMO_EXIT_ENGINE 3

#define DEMO_MAX_PRESSES 64

/* A simulated key press: key (an SDL_Keycode) goes down before frame `frame`
 * (0 = before the first) runs; paused frames count like the others. */
typedef struct demo_press {
    long frame;
    int32_t key;
} demo_press;

typedef struct demo_options {
    const char *config;      /* --config FILE (NULL: built-in defaults)       */
    const char *screenshot;  /* --screenshot FILE.png, written at exit        */
    const char *csv;         /* --csv FILE, telemetry at exit                 */
    const char *trace;       /* --trace FILE.json, Chrome trace at exit       */
    const char *save_config; /* --save-config FILE, tuned config at exit      */
    long frames;             /* --frames N, paused ones included (0: until
                                the window closes)                            */
    uint64_t seed;           /* --seed N                                      */
    double scale;            /* --scale N, 0.05..50 (the engine's range)      */
    eng_backend backend;     /* --backend pool|classic|malloc                 */
    int width, height;       /* --size WxH                                    */
    bool headless;           /* --headless                                    */
    bool vsync;              /* --vsync                                       */
    bool grow_ahead;         /* --grow-ahead: pools grow at frame boundaries  */
    bool prefault;           /* --prefault: growth touches its pages at once  */
    bool software;           /* --software: no GPU renderer even if present   */
    bool overlay;            /* false with --no-overlay (F1 toggles)          */
    bool quiet;              /* --quiet: no summary at exit                   */
    bool compare;            /* --compare: the summary adds headless runs of
                                framemem (config and tuned), classic, malloc  */
    bool help;               /* --help was given                              */
    demo_press press[DEMO_MAX_PRESSES]; /* --press FRAME:KEY,... in frame order */
    int press_count;
} demo_options;

/// Defaults: 1280x720, scale 1, seed 1, pool backend, overlay on, run forever.
demo_options demo_options_default(void);
/// Parses argv[1..argc-1] into *out (starting from the defaults). On a bad
/// argument returns false and writes one line (no newline) into err.
bool demo_options_parse(int argc, char **argv, demo_options *out, char *err, size_t err_size);
/// The --help text.
const char *demo_options_usage(void);

#endif /* DEMO_OPTIONS_H */
