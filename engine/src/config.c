/* config.c: pool-size INI files, defaults and tuned output. */
#include "engine/config.h"

#include "framemem/file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "eng_internal.h"

#define ENG__MAX_ITEMS (1u << 28)
#define ENG__MIN_RESERVE ((uint64_t)1 << 20)
/* 64 GiB, or what a size_t holds (32-bit builds): the loader's limit and the
 * tuned writer's cap, so a written config always loads. */
#define ENG__MAX_RESERVE                                                                     \
    (SIZE_MAX < ((uint64_t)64 << 30) ? (uint64_t)SIZE_MAX : (uint64_t)64 << 30)
#define ENG__MIN_COMMIT ((uint64_t)4 << 10)

/* ---------------------------------------------------------------- defaults */

static const struct {
    const char *name;
    uint32_t initial;
} eng__default_pools[] = {
    /* Deliberately small: one chunk each, so warm-up regrows (the hitches a
     * tuned config removes). */
    {"entities", 64}, {"transforms", 64}, {"velocities", 64},
    {"lifetimes", 64}, {"emitters", 32},  {"particles", 1024},
};

void eng_config_defaults(eng_config *cfg) {
    ENG__REFUSE_NULL(cfg, "config", );
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < sizeof eng__default_pools / sizeof eng__default_pools[0]; i++) {
        eng_pool_config *p = &cfg->pools[cfg->pool_count++];
        snprintf(p->name, sizeof p->name, "%s", eng__default_pools[i].name);
        p->initial_capacity = eng__default_pools[i].initial;
        p->max_capacity = 0;
        p->growth = FM_GROWTH_GEOMETRIC;
        p->grow_factor = 2.0f;
        p->grow_step = 0;
        p->prefault = true;
        p->grow_ahead = true;
    }
    eng_arena_config *a = &cfg->arenas[cfg->arena_count++];
    snprintf(a->name, sizeof a->name, "frame");
    a->reserve = (uint64_t)256 << 20;
    a->commit_step = (uint64_t)64 << 10;
}

eng_pool_config *eng_config_pool(eng_config *cfg, const char *name) {
    ENG__REFUSE_NULL(cfg, "config", NULL);
    if (!name) return NULL;
    for (uint32_t i = 0; i < cfg->pool_count; i++)
        if (strcmp(cfg->pools[i].name, name) == 0) return &cfg->pools[i];
    return NULL;
}

eng_arena_config *eng_config_arena(eng_config *cfg, const char *name) {
    ENG__REFUSE_NULL(cfg, "config", NULL);
    if (!name) return NULL;
    for (uint32_t i = 0; i < cfg->arena_count; i++)
        if (strcmp(cfg->arenas[i].name, name) == 0) return &cfg->arenas[i];
    return NULL;
}

/* ------------------------------------------------------------------ descs */

/* The one place a config becomes descs: the world builds its pools and frame
 * arena from these, and the loader checks these. */
fm_pool_desc eng__pool_desc(const eng_pool_config *c) {
    return (fm_pool_desc){
        .initial_capacity = c->initial_capacity,
        .max_capacity = c->max_capacity,
        .growth = c->growth,
        .grow_step = c->grow_step,
        .grow_factor = c->grow_factor,
        .chunk_bytes = (size_t)c->chunk_bytes,
        .prefault = c->prefault,
    };
}

fm_frame_arena_desc eng__frame_arena_desc(const eng_arena_config *c, const fm_allocator *a) {
    /* The loader keeps reserve and commit_step within size_t (32-bit builds). */
    return (fm_frame_arena_desc){
        .name = c ? c->name : "frame",
        .frames = 2,
        .arena = {.reserve_bytes = c ? (size_t)c->reserve : 0,
                  .commit_step = c ? (size_t)c->commit_step : 0,
                  .allocator = a ? *a : (fm_allocator){0}},
    };
}

/* ------------------------------------------------------------------ parsing */

typedef struct eng__parse {
    eng_config *cfg;
    eng_config_diag *rep;
    const char *name; /* file name for messages */
    const char *p, *end;
    uint32_t line;
    /* the open section */
    enum { SEC_NONE, SEC_POOL, SEC_ARENA, SEC_IGNORED } sec;
    uint32_t sec_line;
    uint32_t sec_problems;
    eng_pool_config *pool_dst;
    eng_pool_config pool_stage;
    eng_arena_config *arena_dst;
    eng_arena_config arena_stage;
} eng__parse;

ENG__PRINTF(3, 4)
static void eng__problem_at(eng__parse *ps, uint32_t line, const char *fmt, ...) {
    eng_config_diag *r = ps->rep;
    r->problems++;
    ps->sec_problems++;
    size_t used = strlen(r->text);
    /* Once full, the report ends with a "..." line and takes no more. */
    if (used >= 4 && strcmp(r->text + used - 4, "...\n") == 0 &&
        (used == 4 || r->text[used - 5] == '\n'))
        return;
    char msg[512], full[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int n = snprintf(full, sizeof full, "%s:%u: %s\n", ps->name, line, msg);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof full ? (size_t)n : sizeof full - 1;
    if (len && full[len - 1] != '\n') full[len - 1] = '\n'; /* cut messages still end a line */
    /* Room is kept for the "...\n" line (5 bytes with the terminator). */
    if (used + len + 5 <= sizeof r->text) memcpy(r->text + used, full, len + 1);
    else memcpy(r->text + used, "...\n", 5);
}

#define eng__problem(ps, ...) eng__problem_at((ps), (ps)->line, __VA_ARGS__)

static bool eng__parse_uint(const char *v, uint64_t lo, uint64_t hi, uint64_t *out, bool *range) {
    *range = false;
    if (!v || *v < '0' || *v > '9') return false;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno == ERANGE) {
        if (errno == ERANGE && !*end) *range = true;
        return false;
    }
    if (x < lo || x > hi) {
        *range = true;
        return false;
    }
    *out = x;
    return true;
}

static bool eng__parse_bool(const char *v, bool *out) {
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(v, yes[i]) == 0) return *out = true, true;
        if (strcmp(v, no[i]) == 0) return *out = false, true;
    }
    return false;
}

/* Ends the open section: applied only when it had no problem. */
/* Stands in for eng_desc.allocator when a frame arena desc is checked in
 * chained mode; never called. */
static void *eng__check_alloc(size_t size, size_t align, void *user) {
    (void)size, (void)align, (void)user;
    return NULL;
}
static void eng__check_free(void *ptr, size_t size, void *user) { (void)ptr, (void)size, (void)user; }

/* A section that parsed cleanly still goes through the checks of
 * fm_pool_create / fm_frame_arena_create, on the very desc the engine will
 * build from it: a config the loader accepts never makes create fail. */
static void eng__check_section(eng__parse *ps) {
    char why[128];
    if (ps->sec == SEC_POOL) {
        const eng_pool_config *s = &ps->pool_stage;
        fm_pool_desc d = eng__pool_desc(s);
        d.item_size = 1; /* the engine's item sizes are its own, always valid */
        if (fm_pool_desc_check(&d, why, sizeof why) != FM_OK)
            eng__problem_at(ps, ps->sec_line,
                            "[pool.%s]: %s (initial_capacity %u, max_capacity %u, growth %s, "
                            "grow_factor %g)",
                            s->name, why, s->initial_capacity, s->max_capacity,
                            fm_growth_name(s->growth), (double)s->grow_factor);
    }
    if (ps->sec == SEC_ARENA) {
        /* The engine chains blocks from eng_desc.allocator when one is set,
         * else reserves address space: the section must suit both. */
        const eng_arena_config *s = &ps->arena_stage;
        const fm_allocator chained = {.alloc = eng__check_alloc, .free = eng__check_free};
        const fm_allocator *modes[2] = {NULL, &chained};
        for (int m = 0; m < 2; m++) {
            fm_frame_arena_desc d = eng__frame_arena_desc(s, modes[m]);
            if (fm_frame_arena_desc_check(&d, why, sizeof why) != FM_OK) {
                eng__problem_at(ps, ps->sec_line, "[arena.%s]: %s%s (reserve %llu, commit_step %llu)",
                                s->name, m ? "with an allocator (eng_desc.allocator): " : "", why,
                                (unsigned long long)s->reserve, (unsigned long long)s->commit_step);
                break;
            }
        }
    }
}

static void eng__close_section(eng__parse *ps) {
    if (!ps->sec_problems) eng__check_section(ps);
    bool ok = ps->sec_problems == 0;
    if (ps->sec == SEC_POOL) {
        if (ok) *ps->pool_dst = ps->pool_stage;
        else {
            /* Not counted: a consequence of the problems above. */
            ps->rep->problems--;
            eng__problem_at(ps, ps->sec_line, "[pool.%s] not applied: its values stay as they were",
                            ps->pool_stage.name);
        }
    } else if (ps->sec == SEC_ARENA) {
        if (ok) *ps->arena_dst = ps->arena_stage;
        else {
            ps->rep->problems--;
            eng__problem_at(ps, ps->sec_line,
                            "[arena.%s] not applied: its values stay as they were",
                            ps->arena_stage.name);
        }
    }
    ps->sec = SEC_NONE;
}

static void eng__open_section(eng__parse *ps, const char *s, size_t n) {
    eng__close_section(ps);
    ps->sec_line = ps->line;
    ps->sec_problems = 0;
    char name[128];
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, s, n);
    name[n] = 0;
    ps->sec = SEC_IGNORED;
    if (strncmp(name, "pool.", 5) == 0) {
        eng_pool_config *p = eng_config_pool(ps->cfg, name + 5);
        if (!p) {
            char known[256] = "";
            for (uint32_t i = 0; i < ps->cfg->pool_count; i++) {
                size_t k = strlen(known);
                snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", ps->cfg->pools[i].name);
            }
            eng__problem(ps, "unknown pool '%s' (known: %s)", name + 5, known);
            return;
        }
        ps->sec = SEC_POOL;
        ps->pool_dst = p;
        ps->pool_stage = *p;
    } else if (strncmp(name, "arena.", 6) == 0) {
        eng_arena_config *a = eng_config_arena(ps->cfg, name + 6);
        if (!a) {
            eng__problem(ps, "unknown arena '%s' (known: frame)", name + 6);
            return;
        }
        ps->sec = SEC_ARENA;
        ps->arena_dst = a;
        ps->arena_stage = *a;
    } else {
        eng__problem(ps, "unknown section [%s] (expected [pool.NAME] or [arena.NAME])", name);
    }
}

/* One "key = value" line of the open section. */
static void eng__key(eng__parse *ps, const char *key, const char *value) {
    if (ps->sec == SEC_NONE) {
        eng__problem(ps, "'%s' outside a section", key);
        return;
    }
    if (ps->sec == SEC_IGNORED) return; /* the section was reported */
    uint64_t v;
    bool range;
    if (ps->sec == SEC_POOL) {
        eng_pool_config *s = &ps->pool_stage;
        const char *sn = s->name;
        if (!strcmp(key, "initial_capacity") || !strcmp(key, "max_capacity") ||
            !strcmp(key, "grow_step")) {
            uint64_t lo = !strcmp(key, "initial_capacity") ? 1 : 0;
            if (!eng__parse_uint(value, lo, ENG__MAX_ITEMS, &v, &range)) {
                if (range)
                    eng__problem(ps, "[pool.%s] %s = %s out of range (%llu .. %u)", sn, key, value,
                                 (unsigned long long)lo, ENG__MAX_ITEMS);
                else
                    eng__problem(ps, "[pool.%s] %s: bad number '%s' (whole number of items)", sn,
                                 key, value);
                return;
            }
            if (key[0] == 'i') s->initial_capacity = (uint32_t)v;
            else if (key[0] == 'm') s->max_capacity = (uint32_t)v;
            else s->grow_step = (uint32_t)v;
        } else if (!strcmp(key, "growth")) {
            if (!strcmp(value, "geometric")) s->growth = FM_GROWTH_GEOMETRIC;
            else if (!strcmp(value, "linear")) s->growth = FM_GROWTH_LINEAR;
            else if (!strcmp(value, "fixed")) s->growth = FM_GROWTH_FIXED;
            else eng__problem(ps, "[pool.%s] growth: unknown policy '%s' (geometric, linear, fixed)",
                              sn, value);
        } else if (!strcmp(key, "grow_factor")) {
            char *end;
            errno = 0;
            double f = strtod(value, &end);
            /* The pool keeps a float: its own check judges the float it will
             * get (1.00000001 is 1 there), and 0, its "default", is refused. */
            float gf = (float)f;
            char why[128];
            if (end == value || *end || errno == ERANGE || !isfinite(f))
                eng__problem(ps, "[pool.%s] grow_factor: bad number '%s'", sn, value);
            else if (gf == 0.0f)
                eng__problem(ps, "[pool.%s] grow_factor = %s out of range (0 as a float; the pool "
                             "takes above 1, at most 64)", sn, value);
            else if (fm_pool_desc_check(&(fm_pool_desc){.item_size = 1, .grow_factor = gf}, why,
                                        sizeof why) != FM_OK)
                eng__problem(ps, "[pool.%s] grow_factor = %s out of range (%.9g as a float): %s",
                             sn, value, (double)gf, why);
            else s->grow_factor = gf;
        } else if (!strcmp(key, "chunk_bytes")) {
            /* The engine's items are small: a chunk the check takes for a
             * 1-byte item holds each of them. */
            char why[128];
            if (!eng__parse_uint(value, 0, FM_POOL_MAX_CHUNK_BYTES, &v, &range)) {
                if (range)
                    eng__problem(ps, "[pool.%s] chunk_bytes = %s out of range (0 .. %zu)", sn,
                                 value, FM_POOL_MAX_CHUNK_BYTES);
                else
                    eng__problem(ps, "[pool.%s] chunk_bytes: bad number '%s' (bytes)", sn, value);
            } else if (fm_pool_desc_check(&(fm_pool_desc){.item_size = 1, .chunk_bytes = (size_t)v},
                                        why, sizeof why) != FM_OK)
                eng__problem(ps, "[pool.%s] chunk_bytes = %s: %s", sn, value, why);
            else s->chunk_bytes = v;
        } else if (!strcmp(key, "prefault") || !strcmp(key, "grow_ahead")) {
            bool b;
            if (!eng__parse_bool(value, &b))
                eng__problem(ps, "[pool.%s] %s: bad value '%s' (true or false)", sn, key, value);
            else if (key[0] == 'p') s->prefault = b;
            else s->grow_ahead = b;
        } else {
            eng__problem(ps,
                         "[pool.%s] unknown key '%s' (initial_capacity, max_capacity, growth, "
                         "grow_factor, grow_step, chunk_bytes, prefault, grow_ahead)",
                         sn, key);
        }
        return;
    }
    eng_arena_config *s = &ps->arena_stage;
    if (!strcmp(key, "reserve") || !strcmp(key, "commit_step")) {
        bool is_reserve = key[0] == 'r';
        uint64_t lo = is_reserve ? ENG__MIN_RESERVE : ENG__MIN_COMMIT;
        uint64_t hi = ENG__MAX_RESERVE;
        if (!eng__parse_uint(value, lo, hi, &v, &range)) {
            if (range)
                eng__problem(ps, "[arena.%s] %s = %s out of range (%llu .. %llu bytes)", s->name,
                             key, value, (unsigned long long)lo, (unsigned long long)hi);
            else
                eng__problem(ps, "[arena.%s] %s: bad number '%s' (bytes)", s->name, key, value);
            return;
        }
        if (is_reserve) s->reserve = v;
        else s->commit_step = v;
    } else {
        eng__problem(ps, "[arena.%s] unknown key '%s' (reserve, commit_step)", s->name, key);
    }
    return;
}

/* One line [s, s + n) (no line end): counted, checked, then a section
 * header, a "key = value" or a comment. A line with a problem is reported
 * and skipped. */
static void eng__line(eng__parse *ps, const char *s, size_t n) {
    ps->line++;
    if (n && s[n - 1] == '\r') n--;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            eng__problem(ps, "control byte 0x%02x in the line (not a text INI file?)", c);
            return;
        }
    }
    if (n > ENG_CONFIG_MAX_LINE) {
        eng__problem(ps, "line longer than %d characters", ENG_CONFIG_MAX_LINE);
        return;
    }
    /* trimmed view */
    const char *a = s, *b = s + n;
    while (a < b && (*a == ' ' || *a == '\t')) a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
    bool indented = a > s;
    if (a == b || *a == ';' || *a == '#') return;
    if (*a == '[') {
        const char *close = memchr(a, ']', (size_t)(b - a));
        const char *after = close ? close + 1 : b;
        while (after < b && (*after == ' ' || *after == '\t')) after++;
        if (!close || (after < b && *after != ';' && *after != '#')) {
            eng__problem(ps, "bad section header (expected [pool.NAME] or [arena.NAME])");
            /* Keys below belong to no known section: skip them quietly. */
            eng__close_section(ps);
            ps->sec = SEC_IGNORED;
            return;
        }
        const char *ns = a + 1, *ne = close;
        while (ns < ne && (*ns == ' ' || *ns == '\t')) ns++;
        while (ne > ns && (ne[-1] == ' ' || ne[-1] == '\t')) ne--;
        eng__open_section(ps, ns, (size_t)(ne - ns));
        return;
    }
    const char *eq = a;
    while (eq < b && *eq != '=' && *eq != ':') eq++;
    const char *ke = eq;
    while (ke > a && (ke[-1] == ' ' || ke[-1] == '\t')) ke--;
    if (eq == b || ke == a) {
        eng__problem(ps, "syntax error: expected 'key = value', [section] or a comment");
        return;
    }
    if (indented) {
        /* The format has no continuation lines (INI readers differ on them). */
        eng__problem(ps, "indented line (continuation lines are not allowed)");
        return;
    }
    /* The value ends at a ';' after a blank (an inline comment). */
    const char *va = eq + 1, *ve = va;
    for (bool blank = true; ve < b && !(blank && *ve == ';'); ve++) blank = *ve == ' ' || *ve == '\t';
    while (va < ve && (*va == ' ' || *va == '\t')) va++;
    while (ve > va && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    char key[ENG_CONFIG_MAX_LINE + 1], value[ENG_CONFIG_MAX_LINE + 1];
    memcpy(key, a, (size_t)(ke - a));
    key[ke - a] = 0;
    memcpy(value, va, (size_t)(ve - va));
    value[ve - va] = 0;
    eng__key(ps, key, value);
}

int eng_config_load_mem(eng_config *cfg, const char *data, size_t size, const char *name,
                        eng_config_diag *rep) {
    eng_config_diag local;
    if (!rep) rep = &local;
    rep->problems = 0;
    rep->text[0] = 0;
    ENG__REFUSE_NULL_ERR(cfg, "config", rep->text, sizeof rep->text, -1);
    fm_file_skip_bom(&data, &size);
    eng__parse ps = {
        .cfg = cfg,
        .rep = rep,
        .name = name ? name : "<config>",
        .p = data ? data : "",
        .end = data ? data + size : "",
    };
    while (ps.p < ps.end) {
        const char *nl = memchr(ps.p, '\n', (size_t)(ps.end - ps.p));
        const char *le = nl ? nl : ps.end;
        eng__line(&ps, ps.p, (size_t)(le - ps.p));
        ps.p = nl ? nl + 1 : ps.end;
    }
    eng__close_section(&ps);
    return (int)rep->problems;
}

int eng_config_load(eng_config *cfg, const char *path, eng_config_diag *rep) {
    if (!cfg && rep) rep->problems = 0;
    ENG__REFUSE_NULL_ERR(cfg, "config", rep ? rep->text : NULL, sizeof rep->text, -1);
    return eng__config_load(cfg, path, rep, NULL);
}

int eng__config_load(eng_config *cfg, const char *path, eng_config_diag *rep,
                     const fm_allocator *a) {
    eng_config_diag local;
    if (!rep) rep = &local;
    rep->problems = 0;
    rep->text[0] = 0;
    /* Config files are small; a bigger one is not a pool config. */
    fm_file_data file;
    char why[sizeof rep->text - 16];
    if (!fm_file_read(path, ENG_CONFIG_MAX_BYTES, a, &file, why, sizeof why)) {
        snprintf(rep->text, sizeof rep->text, "config %s", why);
        return -1;
    }
    int r = eng_config_load_mem(cfg, file.data, file.size, path, rep);
    fm_file_data_release(&file);
    return r;
}

/* ------------------------------------------------------------ tuned output */

static const char *eng__growth_key(fm_growth g) {
    switch (g) {
    case FM_GROWTH_LINEAR: return "linear";
    case FM_GROWTH_FIXED: return "fixed";
    default: return "geometric";
    }
}

uint32_t eng_config_tuned_capacity(const eng_pool_config *p, uint64_t peak_live, double headroom,
                                   uint64_t chunk_items, eng_tuned_cap *why) {
    uint64_t want = eng_suggest_capacity(peak_live, headroom, chunk_items);
    eng_tuned_cap w = ENG_TUNED_EXACT;
    if (want > ENG__MAX_ITEMS) want = ENG__MAX_ITEMS, w = ENG_TUNED_CONFIG_LIMIT;
    if (p && p->max_capacity && want > p->max_capacity) want = p->max_capacity, w = ENG_TUNED_MAX_CAPACITY;
    if (want < 1) want = 1;
    if (why) *why = w;
    return (uint32_t)want;
}

bool eng_config_write_tuned(const eng_config *cfg, const eng_telemetry *const *runs,
                            uint32_t run_count, double headroom, const char *path, char *err,
                            size_t err_len) {
    ENG__REFUSE_NULL_ERR(cfg, "config", err, err_len, false);
    if (!(headroom >= 1.0)) headroom = 1.0;
    fm_file_writer *w = fm_file_begin(path, err, err_len);
    if (!w) return false;
    fm_file_printf(w, "; framemem pool sizes, written by eng_config_write_tuned from %u run(s)\n"
               "; with headroom x%.2f over the highest live count seen.\n",
            run_count, headroom);
    for (uint32_t i = 0; i < cfg->pool_count; i++) {
        const eng_pool_config *p = &cfg->pools[i];
        uint64_t peak = 0, chunk = 0, frames = 0;
        uint32_t seen_in = 0;
        for (uint32_t r = 0; r < run_count; r++) {
            const eng_telemetry *t = runs ? runs[r] : NULL;
            int s = t ? eng_telemetry_find_source(t, p->name) : -1;
            if (s < 0) continue;
            const eng_source_info *si = eng_telemetry_source(t, (uint32_t)s);
            if (si->kind != ENG_SOURCE_POOL) continue;
            seen_in++;
            if (si->peak_live > peak) peak = si->peak_live;
            if (si->chunk_items > chunk) chunk = si->chunk_items;
            frames = eng__sat_add(frames, eng_telemetry_frames_pushed(t));
        }
        uint32_t cap = p->initial_capacity;
        fm_file_printf(w, "\n[pool.%s]\n", p->name);
        if (!seen_in) {
            fm_file_printf(w, "; not in any run: initial_capacity kept from the current config\n");
        } else {
            eng_tuned_cap why;
            cap = eng_config_tuned_capacity(p, peak, headroom, chunk, &why);
            if (why == ENG_TUNED_MAX_CAPACITY)
                fm_file_printf(w, "; capped at max_capacity %u\n", p->max_capacity);
            if (why == ENG_TUNED_CONFIG_LIMIT)
                fm_file_printf(w, "; capped at %u, the most initial_capacity takes\n", cap);
            fm_file_printf(w,
                    "; peak live %llu over %llu frame(s) in %u run(s), x%.2f headroom, rounded up "
                    "to whole chunks of %llu items\n",
                    (unsigned long long)peak, (unsigned long long)frames, seen_in, headroom,
                    (unsigned long long)(chunk ? chunk : 1));
        }
        fm_file_printf(w, "initial_capacity = %u\n", cap);
        fm_file_printf(w, "max_capacity = %u\n", p->max_capacity);
        fm_file_printf(w, "growth = %s\n", eng__growth_key(p->growth));
        /* %.9g: the float itself comes back (1.0000001 must not read as 1). */
        fm_file_printf(w, "grow_factor = %.9g\n", (double)(p->grow_factor > 1.0f ? p->grow_factor : 2.0f));
        fm_file_printf(w, "grow_step = %u\n", p->grow_step);
        if (p->chunk_bytes) /* 0, the default, is left out */
            fm_file_printf(w, "chunk_bytes = %llu\n", (unsigned long long)p->chunk_bytes);
        fm_file_printf(w, "prefault = %s\n", p->prefault ? "true" : "false");
        fm_file_printf(w, "grow_ahead = %s\n", p->grow_ahead ? "true" : "false");
    }
    for (uint32_t i = 0; i < cfg->arena_count; i++) {
        const eng_arena_config *a = &cfg->arenas[i];
        uint64_t hw = 0;
        for (uint32_t r = 0; r < run_count; r++) {
            const eng_telemetry *t = runs ? runs[r] : NULL;
            int s = t ? eng_telemetry_find_source(t, a->name) : -1;
            if (s < 0) continue;
            for (uint32_t k = 0; k < eng_telemetry_frame_count(t); k++) {
                const eng_sample *x = eng_telemetry_sample(t, k, (uint32_t)s);
                if (x->high_water > hw) hw = x->high_water;
            }
        }
        uint64_t reserve = a->reserve;
        fm_file_printf(w, "\n[arena.%s]\n", a->name);
        /* A frame's bytes must fit its arena with room for a bigger frame.
         * hw may come from a file: past the largest reserve it is capped
         * before any arithmetic. */
        if (hw > ENG__MAX_RESERVE / 4) {
            reserve = ENG__MAX_RESERVE;
            fm_file_printf(w, "; largest frame %llu bytes: reserve capped at the largest the config "
                       "takes\n",
                    (unsigned long long)hw);
        } else if (hw * 4 > reserve) {
            reserve = ((hw * 4 + ENG__MIN_RESERVE - 1) / ENG__MIN_RESERVE) * ENG__MIN_RESERVE;
            if (reserve > ENG__MAX_RESERVE) reserve = ENG__MAX_RESERVE;
            fm_file_printf(w, "; largest frame %llu bytes: reserve raised to 4x that, whole MiB\n",
                    (unsigned long long)hw);
        } else {
            fm_file_printf(w, "; largest frame %llu bytes: reserve kept (at least 4x that)\n",
                    (unsigned long long)hw);
        }
        fm_file_printf(w, "reserve = %llu\n", (unsigned long long)reserve);
        fm_file_printf(w, "commit_step = %llu\n", (unsigned long long)a->commit_step);
    }
    return fm_file_commit(w, err, err_len);
}
