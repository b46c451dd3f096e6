/* config.c: INI pool-size files: load (each value checked at its line),
 * apply to any program's descs by name, tuned output from telemetry. */
#include "framemem/config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry_internal.h"

#define FM__CFG_MIN_RESERVE ((uint64_t)1 << 20)
/* 64 GiB, or what a size_t holds (32-bit builds): the loader's limit and the
 * tuned writer's cap, so a written config always loads. */
#define FM__CFG_MAX_RESERVE                                                                      \
    (SIZE_MAX < ((uint64_t)64 << 30) ? (uint64_t)SIZE_MAX : (uint64_t)64 << 30)
#define FM__CFG_MIN_COMMIT ((uint64_t)4 << 10)
#define FM__CFG_MAX_LIMIT ((uint64_t)1 << 48)
#define FM__CFG_DEFAULT_RESERVE ((uint64_t)64 << 20) /* fm_arena_desc's 0 */

/* ================================================================ storage */

typedef enum fm__sec_kind { FM__SEC_POOL, FM__SEC_ARENA, FM__SEC_TAG, FM__SEC_KINDS } fm__sec_kind;
static const char *const fm__sec_names[FM__SEC_KINDS] = {"pool", "arena", "tag"};

/* The keys a section set (bits of fm__section.set). */
enum {
    FM__K_INITIAL = 1 << 0,
    FM__K_MAX = 1 << 1,
    FM__K_GROWTH = 1 << 2,
    FM__K_FACTOR = 1 << 3,
    FM__K_STEP = 1 << 4,
    FM__K_PREFAULT = 1 << 5,
    FM__K_AHEAD = 1 << 6,
    FM__K_CHUNK = 1 << 7,
    FM__K_RESERVE = 1 << 0,
    FM__K_COMMIT = 1 << 1,
    FM__K_SOFT = 1 << 0,
    FM__K_HARD = 1 << 1,
};

typedef struct fm__section {
    fm__sec_kind kind;
    char name[FM_TELEMETRY_NAME_MAX];
    uint32_t line; /* of the header */
    uint32_t set;
    bool used;     /* an apply matched it */
    uint32_t initial_capacity, max_capacity, grow_step;
    fm_growth growth;
    float grow_factor;
    bool prefault, grow_ahead;
    uint64_t chunk_bytes;
    uint64_t reserve, commit_step;
    uint64_t soft_limit, hard_limit;
} fm__section;

struct fm_config {
    fm_allocator alloc;
    size_t bytes;
    const char *name; /* the file, for messages (inside this block) */
    uint32_t count, cap;
    fm__section *sections; /* [cap], those that loaded without a problem */
    uint32_t problems;
    char text[4096];
};

/* ------------------------------------------------------------ problems */

FM__TEL_PRINTF(3, 4)
static void fm__cfg_problem(fm_config *cfg, uint32_t line, const char *fmt, ...) {
    cfg->problems++;
    size_t used = strlen(cfg->text);
    /* Once full, the report ends with a "..." line and takes no more. */
    if (used >= 4 && strcmp(cfg->text + used - 4, "...\n") == 0 &&
        (used == 4 || cfg->text[used - 5] == '\n'))
        return;
    char msg[512], full[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int n = snprintf(full, sizeof full, "%s:%u: %s\n", cfg->name, line, msg);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof full ? (size_t)n : sizeof full - 1;
    if (len && full[len - 1] != '\n') full[len - 1] = '\n'; /* cut messages still end a line */
    /* Room is kept for the "...\n" line (5 bytes with the terminator). */
    if (used + len + 5 <= sizeof cfg->text) memcpy(cfg->text + used, full, len + 1);
    else memcpy(cfg->text + used, "...\n", 5);
}

/* ================================================================ parsing */

typedef struct fm__parse {
    fm_config *cfg;
    uint32_t line;
    enum { SEC_NONE, SEC_OPEN, SEC_IGNORED } sec;
    uint32_t sec_problems;
    fm__section stage; /* the open section */
} fm__parse;

#define fm__problem(ps, ...)                                                    \
    ((ps)->sec_problems++, fm__cfg_problem((ps)->cfg, (ps)->line, __VA_ARGS__))

static bool fm__parse_uint(const char *v, uint64_t lo, uint64_t hi, uint64_t *out, bool *range) {
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

static bool fm__parse_bool(const char *v, bool *out) {
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(v, yes[i]) == 0) return *out = true, true;
        if (strcmp(v, no[i]) == 0) return *out = false, true;
    }
    return false;
}

/* The keys s sets, onto a desc. */
static void fm__set_pool(const fm__section *s, fm_pool_desc *d) {
    if (s->set & FM__K_INITIAL) d->initial_capacity = s->initial_capacity;
    if (s->set & FM__K_MAX) d->max_capacity = s->max_capacity;
    if (s->set & FM__K_GROWTH) d->growth = s->growth;
    if (s->set & FM__K_FACTOR) d->grow_factor = s->grow_factor;
    if (s->set & FM__K_STEP) d->grow_step = s->grow_step;
    if (s->set & FM__K_CHUNK) d->chunk_bytes = (size_t)s->chunk_bytes;
    if (s->set & FM__K_PREFAULT) d->prefault = s->prefault;
    if (s->set & FM__K_AHEAD) d->grow_ahead = s->grow_ahead;
}

static void fm__set_arena(const fm__section *s, fm_arena_desc *d) {
    /* The loader keeps both within size_t (32-bit builds). */
    if (s->set & FM__K_RESERVE) d->reserve_bytes = (size_t)s->reserve;
    if (s->set & FM__K_COMMIT) d->commit_step = (size_t)s->commit_step;
}

static void fm__set_tag(const fm__section *s, fm_tag_desc *d) {
    if (s->set & FM__K_SOFT) d->soft_limit_bytes = s->soft_limit;
    if (s->set & FM__K_HARD) d->hard_limit_bytes = s->hard_limit;
}

/* Stands in for a program's allocator when an arena section is checked in
 * chained mode; never called. */
static void *fm__check_alloc(size_t size, size_t align, void *user) {
    (void)size, (void)align, (void)user;
    return NULL;
}
static void fm__check_free(void *ptr, size_t size, void *user) { (void)ptr, (void)size, (void)user; }

/* A section that parsed cleanly still goes through the checks of create,
 * over a desc of defaults: what no program's desc can take is refused here,
 * at its line (fm_config_apply checks the program's own desc again). */
static void fm__check_section(fm__parse *ps) {
    const fm__section *s = &ps->stage;
    char why[128];
    if (s->kind == FM__SEC_POOL) {
        fm_pool_desc d = {.item_size = 1};
        fm__set_pool(s, &d);
        if (fm_pool_desc_check(&d, why, sizeof why) != FM_OK)
            fm__cfg_problem(ps->cfg, s->line,
                            "[pool.%s]: %s (initial_capacity %u, max_capacity %u, growth %s, "
                            "grow_factor %g)",
                            s->name, why, d.initial_capacity, d.max_capacity,
                            fm_growth_name(d.growth), (double)d.grow_factor);
        else return;
    } else if (s->kind == FM__SEC_ARENA) {
        /* A program's arena reserves address space, or chains blocks from
         * its allocator: the section must suit both. */
        const fm_allocator chained = {.alloc = fm__check_alloc, .free = fm__check_free};
        for (int m = 0; m < 2; m++) {
            fm_arena_desc d = {.allocator = m ? chained : (fm_allocator){0}};
            fm__set_arena(s, &d);
            if (fm_arena_desc_check(&d, why, sizeof why) != FM_OK) {
                fm__cfg_problem(ps->cfg, s->line, "[arena.%s]: %s%s (reserve %llu, commit_step %llu)",
                                s->name, m ? "with an allocator: " : "", why,
                                (unsigned long long)d.reserve_bytes,
                                (unsigned long long)d.commit_step);
                break;
            }
            if (m == 1) return;
        }
    } else {
        fm_tag_desc d = {.name = s->name};
        fm__set_tag(s, &d);
        if (fm_tag_desc_check(&d, why, sizeof why) != FM_OK)
            fm__cfg_problem(ps->cfg, s->line, "[tag.%s]: %s (soft_limit_bytes %llu, "
                                              "hard_limit_bytes %llu)",
                            s->name, why, (unsigned long long)d.soft_limit_bytes,
                            (unsigned long long)d.hard_limit_bytes);
        else return;
    }
    ps->sec_problems++;
}

/* Ends the open section: kept only when it had no problem. */
static void fm__close_section(fm__parse *ps) {
    if (ps->sec == SEC_OPEN) {
        fm__section *s = &ps->stage;
        if (!ps->sec_problems) fm__check_section(ps);
        if (!ps->sec_problems && ps->cfg->count < ps->cfg->cap) {
            ps->cfg->sections[ps->cfg->count++] = *s;
        } else {
            fm__cfg_problem(ps->cfg, s->line,
                            "[%s.%s] not applied: its values stay as the program sets them",
                            fm__sec_names[s->kind], s->name);
            ps->cfg->problems--; /* not counted: a consequence of the problems above */
        }
    }
    ps->sec = SEC_NONE;
}

static void fm__open_section(fm__parse *ps, const char *s, size_t n) {
    fm__close_section(ps);
    ps->sec_problems = 0;
    ps->sec = SEC_IGNORED; /* keys below a refused header are skipped quietly */
    char name[128];
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, s, n);
    name[n] = 0;
    const char *dot = strchr(name, '.');
    int kind = FM__SEC_KINDS;
    if (dot) {
        for (int k = 0; k < FM__SEC_KINDS; k++)
            if ((size_t)(dot - name) == strlen(fm__sec_names[k]) &&
                strncmp(name, fm__sec_names[k], (size_t)(dot - name)) == 0)
                kind = k;
    }
    if (kind == FM__SEC_KINDS) {
        fm__problem(ps, "unknown section [%s] (expected [pool.NAME], [arena.NAME] or [tag.NAME])",
                    name);
        return;
    }
    if (!fm__tel_valid_name(dot + 1)) {
        fm__problem(ps, "bad name in [%s] (1-31 of A-Z a-z 0-9 _ - .)", name);
        return;
    }
    memset(&ps->stage, 0, sizeof ps->stage);
    ps->stage.kind = (fm__sec_kind)kind;
    ps->stage.line = ps->line;
    memcpy(ps->stage.name, dot + 1, strlen(dot + 1) + 1);
    ps->sec = SEC_OPEN;
}

static void fm__pool_key(fm__parse *ps, const char *key, const char *value) {
    fm__section *s = &ps->stage;
    const char *sn = s->name;
    uint64_t v;
    bool range;
    if (!strcmp(key, "initial_capacity") || !strcmp(key, "max_capacity") ||
        !strcmp(key, "grow_step")) {
        uint64_t lo = !strcmp(key, "initial_capacity") ? 1 : 0;
        if (!fm__parse_uint(value, lo, FM_CONFIG_MAX_ITEMS, &v, &range)) {
            if (range)
                fm__problem(ps, "[pool.%s] %s = %s out of range (%llu .. %u)", sn, key, value,
                            (unsigned long long)lo, FM_CONFIG_MAX_ITEMS);
            else
                fm__problem(ps, "[pool.%s] %s: bad number '%s' (whole number of items)", sn, key,
                            value);
            return;
        }
        if (key[0] == 'i') s->initial_capacity = (uint32_t)v, s->set |= FM__K_INITIAL;
        else if (key[0] == 'm') s->max_capacity = (uint32_t)v, s->set |= FM__K_MAX;
        else s->grow_step = (uint32_t)v, s->set |= FM__K_STEP;
    } else if (!strcmp(key, "growth")) {
        if (!strcmp(value, "geometric")) s->growth = FM_GROWTH_GEOMETRIC, s->set |= FM__K_GROWTH;
        else if (!strcmp(value, "linear")) s->growth = FM_GROWTH_LINEAR, s->set |= FM__K_GROWTH;
        else if (!strcmp(value, "fixed")) s->growth = FM_GROWTH_FIXED, s->set |= FM__K_GROWTH;
        else fm__problem(ps, "[pool.%s] growth: unknown policy '%s' (geometric, linear, fixed)", sn,
                         value);
    } else if (!strcmp(key, "grow_factor")) {
        char *end;
        errno = 0;
        double f = strtod(value, &end);
        /* The pool keeps a float: its own check judges the float it will
         * get (1.00000001 is 1 there), and 0, its "default", is refused. */
        float gf = (float)f;
        char why[128];
        if (end == value || *end || errno == ERANGE || !isfinite(f))
            fm__problem(ps, "[pool.%s] grow_factor: bad number '%s'", sn, value);
        else if (gf == 0.0f)
            fm__problem(ps, "[pool.%s] grow_factor = %s out of range (0 as a float; the pool "
                            "takes above 1, at most 64)", sn, value);
        else if (fm_pool_desc_check(&(fm_pool_desc){.item_size = 1, .grow_factor = gf}, why,
                                    sizeof why) != FM_OK)
            fm__problem(ps, "[pool.%s] grow_factor = %s out of range (%.9g as a float): %s", sn,
                        value, (double)gf, why);
        else s->grow_factor = gf, s->set |= FM__K_FACTOR;
    } else if (!strcmp(key, "chunk_bytes")) {
        /* Checked here for a 1-byte item; apply checks the program's own
         * item size and alignment against it. */
        char why[128];
        if (!fm__parse_uint(value, 0, FM_POOL_MAX_CHUNK_BYTES, &v, &range)) {
            if (range)
                fm__problem(ps, "[pool.%s] chunk_bytes = %s out of range (0 .. %zu)", sn, value,
                            FM_POOL_MAX_CHUNK_BYTES);
            else
                fm__problem(ps, "[pool.%s] chunk_bytes: bad number '%s' (bytes)", sn, value);
        } else if (fm_pool_desc_check(&(fm_pool_desc){.item_size = 1, .chunk_bytes = (size_t)v},
                                      why, sizeof why) != FM_OK)
            fm__problem(ps, "[pool.%s] chunk_bytes = %s: %s", sn, value, why);
        else s->chunk_bytes = v, s->set |= FM__K_CHUNK;
    } else if (!strcmp(key, "prefault") || !strcmp(key, "grow_ahead")) {
        bool b;
        if (!fm__parse_bool(value, &b))
            fm__problem(ps, "[pool.%s] %s: bad value '%s' (true or false)", sn, key, value);
        else if (key[0] == 'p') s->prefault = b, s->set |= FM__K_PREFAULT;
        else s->grow_ahead = b, s->set |= FM__K_AHEAD;
    } else {
        fm__problem(ps,
                    "[pool.%s] unknown key '%s' (initial_capacity, max_capacity, growth, "
                    "grow_factor, grow_step, chunk_bytes, prefault, grow_ahead)",
                    sn, key);
    }
}

static void fm__arena_key(fm__parse *ps, const char *key, const char *value) {
    fm__section *s = &ps->stage;
    uint64_t v;
    bool range;
    if (!strcmp(key, "reserve") || !strcmp(key, "commit_step")) {
        bool is_reserve = key[0] == 'r';
        uint64_t lo = is_reserve ? FM__CFG_MIN_RESERVE : FM__CFG_MIN_COMMIT;
        uint64_t hi = FM__CFG_MAX_RESERVE;
        if (!fm__parse_uint(value, lo, hi, &v, &range)) {
            if (range)
                fm__problem(ps, "[arena.%s] %s = %s out of range (%llu .. %llu bytes)", s->name,
                            key, value, (unsigned long long)lo, (unsigned long long)hi);
            else
                fm__problem(ps, "[arena.%s] %s: bad number '%s' (bytes)", s->name, key, value);
            return;
        }
        if (is_reserve) s->reserve = v, s->set |= FM__K_RESERVE;
        else s->commit_step = v, s->set |= FM__K_COMMIT;
    } else {
        fm__problem(ps, "[arena.%s] unknown key '%s' (reserve, commit_step)", s->name, key);
    }
}

static void fm__tag_key(fm__parse *ps, const char *key, const char *value) {
    fm__section *s = &ps->stage;
    uint64_t v;
    bool range;
    if (!strcmp(key, "soft_limit_bytes") || !strcmp(key, "hard_limit_bytes")) {
        if (!fm__parse_uint(value, 0, FM__CFG_MAX_LIMIT, &v, &range)) {
            if (range)
                fm__problem(ps, "[tag.%s] %s = %s out of range (0 .. %llu bytes)", s->name, key,
                            value, (unsigned long long)FM__CFG_MAX_LIMIT);
            else
                fm__problem(ps, "[tag.%s] %s: bad number '%s' (bytes)", s->name, key, value);
            return;
        }
        if (key[0] == 's') s->soft_limit = v, s->set |= FM__K_SOFT;
        else s->hard_limit = v, s->set |= FM__K_HARD;
    } else {
        fm__problem(ps, "[tag.%s] unknown key '%s' (soft_limit_bytes, hard_limit_bytes)", s->name,
                    key);
    }
}

/* One "key = value" line of the open section. */
static void fm__key(fm__parse *ps, const char *key, const char *value) {
    if (ps->sec == SEC_NONE) {
        fm__problem(ps, "'%s' outside a section", key);
        return;
    }
    if (ps->sec == SEC_IGNORED) return; /* the section was reported */
    if (ps->stage.kind == FM__SEC_POOL) fm__pool_key(ps, key, value);
    else if (ps->stage.kind == FM__SEC_ARENA) fm__arena_key(ps, key, value);
    else fm__tag_key(ps, key, value);
}

/* One line [s, s + n) (no line end): counted, checked, then a section
 * header, a "key = value" or a comment. A line with a problem is reported
 * and skipped. */
static void fm__line(fm__parse *ps, const char *s, size_t n) {
    ps->line++;
    if (n && s[n - 1] == '\r') n--;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            fm__problem(ps, "control byte 0x%02x in the line (not a text INI file?)", c);
            return;
        }
    }
    if (n > FM_CONFIG_MAX_LINE) {
        fm__problem(ps, "line longer than %d characters", FM_CONFIG_MAX_LINE);
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
            fm__problem(ps, "bad section header (expected [pool.NAME], [arena.NAME] or [tag.NAME])");
            /* Keys below belong to no known section: skip them quietly. */
            fm__close_section(ps);
            ps->sec = SEC_IGNORED;
            return;
        }
        const char *ns = a + 1, *ne = close;
        while (ns < ne && (*ns == ' ' || *ns == '\t')) ns++;
        while (ne > ns && (ne[-1] == ' ' || ne[-1] == '\t')) ne--;
        fm__open_section(ps, ns, (size_t)(ne - ns));
        return;
    }
    const char *eq = a;
    while (eq < b && *eq != '=' && *eq != ':') eq++;
    const char *ke = eq;
    while (ke > a && (ke[-1] == ' ' || ke[-1] == '\t')) ke--;
    if (eq == b || ke == a) {
        fm__problem(ps, "syntax error: expected 'key = value', [section] or a comment");
        return;
    }
    if (indented) {
        /* The format has no continuation lines (INI readers differ on them). */
        fm__problem(ps, "indented line (continuation lines are not allowed)");
        return;
    }
    /* The value ends at a ';' after a blank (an inline comment). */
    const char *va = eq + 1, *ve = va;
    for (bool blank = true; ve < b && !(blank && *ve == ';'); ve++) blank = *ve == ' ' || *ve == '\t';
    while (va < ve && (*va == ' ' || *va == '\t')) va++;
    while (ve > va && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    char key[FM_CONFIG_MAX_LINE + 1], value[FM_CONFIG_MAX_LINE + 1];
    memcpy(key, a, (size_t)(ke - a));
    key[ke - a] = 0;
    memcpy(value, va, (size_t)(ve - va));
    value[ve - va] = 0;
    fm__key(ps, key, value);
}

/* Section headers a text can have at most: lines whose first non-blank is '['. */
static uint32_t fm__count_headers(const char *p, const char *end) {
    uint32_t n = 0;
    bool start = true;
    for (; p < end; p++) {
        if (*p == '\n') start = true;
        else if (start && *p == '[') n++, start = false;
        else if (*p != ' ' && *p != '\t') start = false;
    }
    return n;
}

fm_config *fm_config_load_mem(const char *data, size_t size, const char *name,
                              const fm_allocator *allocator, char *err, size_t err_len) {
    fm_allocator al = allocator ? *allocator : (fm_allocator){0};
    if (!fm_allocator_valid(&al)) {
        fm__tel_set_err(err, err_len, "config: the allocator needs both alloc and free");
        return NULL;
    }
    if (!name) name = "<config>";
    if (!data) size = 0;
    else fm_file_skip_bom(&data, &size);
    const char *end = data ? data + size : NULL;
    uint32_t cap = data ? fm__count_headers(data, end) : 0;
    size_t name_len = strlen(name) + 1;
    size_t bytes = sizeof(fm_config) + (size_t)cap * sizeof(fm__section) + name_len;
    fm_config *cfg = fm_allocator_alloc(&al, bytes, FM_DEFAULT_ALIGN);
    if (!cfg) {
        fm__tel_set_err(err, err_len, "config %s: out of memory (%zu bytes)", name, bytes);
        return NULL;
    }
    memset(cfg, 0, sizeof *cfg);
    cfg->alloc = al;
    cfg->bytes = bytes;
    cfg->cap = cap;
    cfg->sections = (fm__section *)(void *)(cfg + 1);
    char *name_copy = (char *)(cfg->sections + cap);
    memcpy(name_copy, name, name_len);
    cfg->name = name_copy;
    fm__parse ps = {.cfg = cfg};
    for (const char *p = data; p && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        fm__line(&ps, p, (size_t)(le - p));
        p = nl ? nl + 1 : end;
    }
    fm__close_section(&ps);
    return cfg;
}

fm_config *fm_config_load(const char *path, const fm_allocator *allocator, char *err,
                          size_t err_len) {
    if (!path) {
        fm__tel_set_err(err, err_len, "config: no path given");
        return NULL;
    }
    fm_file_data file;
    char why[FM_FILE_PATH_MAX + 128];
    if (!fm_file_read(path, FM_CONFIG_MAX_BYTES, allocator, &file, why, sizeof why)) {
        fm__tel_set_err(err, err_len, "config %s", why);
        return NULL;
    }
    fm_config *cfg = fm_config_load_mem(file.data, file.size, path, allocator, err, err_len);
    fm_file_data_release(&file);
    return cfg;
}

void fm_config_destroy(fm_config *cfg) {
    if (!cfg) return;
    fm_allocator a = cfg->alloc;
    fm_allocator_free(&a, cfg, cfg->bytes);
}

uint32_t fm_config_problem_count(const fm_config *cfg) {
    FM__TEL_REFUSE_NULL(cfg, "config", 0);
    return cfg->problems;
}

const char *fm_config_problems(const fm_config *cfg) {
    FM__TEL_REFUSE_NULL(cfg, "config", "");
    return cfg->text;
}

/* ================================================================ apply */

/* The first section of that kind and name at or after *from; NULL when none. */
static fm__section *fm__find(const fm_config *cfg, fm__sec_kind kind, const char *name,
                             uint32_t *from) {
    for (uint32_t i = *from; i < cfg->count; i++) {
        if (cfg->sections[i].kind == kind && strcmp(cfg->sections[i].name, name) == 0) {
            *from = i + 1;
            return &cfg->sections[i];
        }
    }
    *from = cfg->count;
    return NULL;
}

/* Applies every section of kind named as the desc's name (raw) onto a copy
 * of the desc through set, checks it with check, and copies it back when
 * the check passes. */
#define FM__APPLY(cfg, kind, raw_name, desc, T, set, check)                                    \
    do {                                                                                      \
        char name_[FM_TELEMETRY_NAME_MAX];                                                    \
        fm__tel_source_name((raw_name), name_);                                               \
        T copy_ = *(desc);                                                                    \
        uint32_t from_ = 0, line_ = 0;                                                        \
        bool any_ = false;                                                                    \
        for (fm__section *s_; (s_ = fm__find((cfg), (kind), name_, &from_));) {               \
            set(s_, &copy_);                                                                  \
            s_->used = any_ = true;                                                           \
            line_ = s_->line;                                                                 \
        }                                                                                     \
        if (!any_) return 0;                                                                  \
        char why_[128];                                                                       \
        if (check(&copy_, why_, sizeof why_) != FM_OK) {                                      \
            fm__cfg_problem((cfg), line_,                                                     \
                            "[%s.%s] not applied to the program's desc: %s (its values stay " \
                            "as the program sets them)",                                      \
                            fm__sec_names[kind], name_, why_);                                \
            return -1;                                                                        \
        }                                                                                     \
        *(desc) = copy_;                                                                      \
        return 1;                                                                             \
    } while (0)

static void fm__set_frame_arena(const fm__section *s, fm_frame_arena_desc *d) {
    fm__set_arena(s, &d->arena);
}

static const char *fm__def_name(const char *a, const char *b) { return a ? a : b; }

int fm_config_apply_pool(fm_config *cfg, fm_pool_desc *desc) {
    FM__TEL_REFUSE_NULL(cfg, "config", -1);
    FM__TEL_REFUSE_NULL(desc, "desc", -1);
    FM__APPLY(cfg, FM__SEC_POOL, fm__def_name(desc->name, fm__def_name(desc->type_name, "pool")),
              desc, fm_pool_desc, fm__set_pool, fm_pool_desc_check);
}

int fm_config_apply_arena(fm_config *cfg, fm_arena_desc *desc) {
    FM__TEL_REFUSE_NULL(cfg, "config", -1);
    FM__TEL_REFUSE_NULL(desc, "desc", -1);
    FM__APPLY(cfg, FM__SEC_ARENA, fm__def_name(desc->name, "arena"), desc, fm_arena_desc,
              fm__set_arena, fm_arena_desc_check);
}

int fm_config_apply_frame_arena(fm_config *cfg, fm_frame_arena_desc *desc) {
    FM__TEL_REFUSE_NULL(cfg, "config", -1);
    FM__TEL_REFUSE_NULL(desc, "desc", -1);
    FM__APPLY(cfg, FM__SEC_ARENA, fm__def_name(desc->name, "frame"), desc, fm_frame_arena_desc,
              fm__set_frame_arena, fm_frame_arena_desc_check);
}

int fm_config_apply_tag(fm_config *cfg, fm_tag_desc *desc) {
    FM__TEL_REFUSE_NULL(cfg, "config", -1);
    FM__TEL_REFUSE_NULL(desc, "desc", -1);
    FM__APPLY(cfg, FM__SEC_TAG, fm__def_name(desc->name, "tag"), desc, fm_tag_desc, fm__set_tag,
              fm_tag_desc_check);
}

uint32_t fm_config_report_unused(fm_config *cfg) {
    FM__TEL_REFUSE_NULL(cfg, "config", 0);
    uint32_t n = 0;
    for (uint32_t i = 0; i < cfg->count; i++) {
        const fm__section *s = &cfg->sections[i];
        if (s->used) continue;
        fm__cfg_problem(cfg, s->line, "[%s.%s] matches no %s of the program", fm__sec_names[s->kind],
                        s->name, fm__sec_names[s->kind]);
        n++;
    }
    return n;
}

/* ========================================================== tuned output */

uint32_t fm_config_tuned_capacity(uint64_t peak_live, double headroom, uint64_t chunk_items,
                                  uint32_t max_capacity, fm_config_tuned *why) {
    uint64_t want = fm_telemetry_suggest_capacity(peak_live, headroom, chunk_items);
    fm_config_tuned w = FM_CONFIG_TUNED_EXACT;
    if (want > FM_CONFIG_MAX_ITEMS) want = FM_CONFIG_MAX_ITEMS, w = FM_CONFIG_TUNED_LIMIT;
    if (max_capacity && want > max_capacity) want = max_capacity, w = FM_CONFIG_TUNED_MAX_CAPACITY;
    if (want < 1) want = 1;
    if (why) *why = w;
    return (uint32_t)want;
}

static const char *fm__growth_key(fm_growth g) {
    switch (g) {
    case FM_GROWTH_LINEAR: return "linear";
    case FM_GROWTH_FIXED: return "fixed";
    default: return "geometric";
    }
}

/* The keys of base's sections of that kind and name but those in skip, in
 * the format's order. */
static void fm__write_kept(fm_file_writer *w, const fm_config *base, fm__sec_kind kind,
                           const char *name, uint32_t skip) {
    if (!base) return;
    fm__section all = {.kind = kind};
    uint32_t from = 0;
    for (const fm__section *s; (s = fm__find(base, kind, name, &from));) {
        /* Later sections win, key by key. */
        if (s->set & FM__K_INITIAL && kind == FM__SEC_POOL) all.initial_capacity = s->initial_capacity;
        if (kind == FM__SEC_POOL) {
            if (s->set & FM__K_MAX) all.max_capacity = s->max_capacity;
            if (s->set & FM__K_GROWTH) all.growth = s->growth;
            if (s->set & FM__K_FACTOR) all.grow_factor = s->grow_factor;
            if (s->set & FM__K_STEP) all.grow_step = s->grow_step;
            if (s->set & FM__K_CHUNK) all.chunk_bytes = s->chunk_bytes;
            if (s->set & FM__K_PREFAULT) all.prefault = s->prefault;
            if (s->set & FM__K_AHEAD) all.grow_ahead = s->grow_ahead;
        } else if (kind == FM__SEC_ARENA) {
            if (s->set & FM__K_RESERVE) all.reserve = s->reserve;
            if (s->set & FM__K_COMMIT) all.commit_step = s->commit_step;
        } else {
            if (s->set & FM__K_SOFT) all.soft_limit = s->soft_limit;
            if (s->set & FM__K_HARD) all.hard_limit = s->hard_limit;
        }
        all.set |= s->set;
    }
    uint32_t set = all.set & ~skip;
    if (kind == FM__SEC_POOL) {
        if (set & FM__K_INITIAL) fm_file_printf(w, "initial_capacity = %u\n", all.initial_capacity);
        if (set & FM__K_MAX) fm_file_printf(w, "max_capacity = %u\n", all.max_capacity);
        if (set & FM__K_GROWTH) fm_file_printf(w, "growth = %s\n", fm__growth_key(all.growth));
        /* %.9g: the float itself comes back (1.0000001 must not read as 1). */
        if (set & FM__K_FACTOR) fm_file_printf(w, "grow_factor = %.9g\n", (double)all.grow_factor);
        if (set & FM__K_STEP) fm_file_printf(w, "grow_step = %u\n", all.grow_step);
        if (set & FM__K_CHUNK)
            fm_file_printf(w, "chunk_bytes = %llu\n", (unsigned long long)all.chunk_bytes);
        if (set & FM__K_PREFAULT) fm_file_printf(w, "prefault = %s\n", all.prefault ? "true" : "false");
        if (set & FM__K_AHEAD) fm_file_printf(w, "grow_ahead = %s\n", all.grow_ahead ? "true" : "false");
    } else if (kind == FM__SEC_ARENA) {
        if (set & FM__K_RESERVE) fm_file_printf(w, "reserve = %llu\n", (unsigned long long)all.reserve);
        if (set & FM__K_COMMIT)
            fm_file_printf(w, "commit_step = %llu\n", (unsigned long long)all.commit_step);
    } else {
        if (set & FM__K_SOFT)
            fm_file_printf(w, "soft_limit_bytes = %llu\n", (unsigned long long)all.soft_limit);
        if (set & FM__K_HARD)
            fm_file_printf(w, "hard_limit_bytes = %llu\n", (unsigned long long)all.hard_limit);
    }
}

/* base's value of a pool key set in its sections of that name (later win). */
static bool fm__base_pool(const fm_config *base, const char *name, fm_pool_desc *out) {
    memset(out, 0, sizeof *out);
    if (!base) return false;
    bool any = false;
    uint32_t from = 0;
    for (const fm__section *s; (s = fm__find(base, FM__SEC_POOL, name, &from));) {
        fm__set_pool(s, out);
        any = true;
    }
    return any;
}

static bool fm__base_reserve(const fm_config *base, const char *name, uint64_t *reserve) {
    bool any = false;
    uint32_t from = 0;
    for (const fm__section *s; base && (s = fm__find(base, FM__SEC_ARENA, name, &from));)
        if (s->set & FM__K_RESERVE) *reserve = s->reserve, any = true;
    return any;
}

/* A live object's settings, where a run is a live telemetry. */
static bool fm__live_max_capacity(const fm_telemetry *t, int s, uint32_t *max) {
    if (t->src[s].type != FM__TEL_POOL) return false;
    *max = fm_pool_get_desc(t->src[s].obj.pool).max_capacity;
    return true;
}

static bool fm__live_reserve(const fm_telemetry *t, int s, uint64_t *reserve) {
    fm_arena *a = t->src[s].type == FM__TEL_ARENA         ? t->src[s].obj.arena
                  : t->src[s].type == FM__TEL_FRAME_ARENA ? fm_frame_arena_current(t->src[s].obj.fa)
                                                          : NULL;
    if (!a) return false;
    *reserve = fm_arena_get_desc(a).reserve_bytes;
    return true;
}

/* Names of every source of kind over the runs, in order of first appearance. */
typedef struct fm__names {
    uint32_t n;
    char (*v)[FM_TELEMETRY_NAME_MAX];
} fm__names;

static bool fm__names_has(const fm__names *ns, const char *name) {
    for (uint32_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0) return true;
    return false;
}

/* The source of that name and kind in run t, or -1. */
static int fm__source_of(const fm_telemetry *t, const char *name, fm_telemetry_kind kind) {
    int s = t ? fm_telemetry_find_source(t, name) : -1;
    return s >= 0 && t->sources[s].kind == kind ? s : -1;
}

/* The highest value of a sample field (at off) of source s over the frames
 * the ring of t holds. */
static uint64_t fm__highest(const fm_telemetry *t, int s, size_t off) {
    uint64_t top = 0;
    for (uint32_t k = 0; k < t->count; k++) {
        const fm_telemetry_sample *x = fm_telemetry_get_sample(t, k, (uint32_t)s);
        uint64_t v = *(const uint64_t *)(const void *)((const char *)x + off);
        if (v > top) top = v;
    }
    return top;
}
#define FM__HIGHEST(t, s, field) fm__highest((t), (s), offsetof(fm_telemetry_sample, field))

static void fm__write_pool(fm_file_writer *w, const fm_config *base,
                           const fm_telemetry *const *runs, uint32_t run_count, double headroom,
                           const char *name) {
    uint64_t peak = 0, chunk = 0, frames = 0;
    uint32_t seen_in = 0, max_cap = 0;
    fm_pool_desc bd;
    if (fm__base_pool(base, name, &bd)) max_cap = bd.max_capacity;
    for (uint32_t r = 0; r < run_count; r++) {
        const fm_telemetry *t = runs[r];
        int s = fm__source_of(t, name, FM_TELEMETRY_POOL);
        if (s < 0) continue;
        const fm_telemetry_source *si = &t->sources[s];
        seen_in++;
        uint64_t top = FM__HIGHEST(t, s, live), top_peak = FM__HIGHEST(t, s, peak_live);
        if (top_peak > top) top = top_peak;
        if (si->peak_live > top) top = si->peak_live;
        if (top > peak) peak = top;
        /* A malloc-backed source's chunk_items (1) is not the pool's. */
        if (si->backend == FM_TELEMETRY_BACKEND_POOL && si->chunk_items > chunk) chunk = si->chunk_items;
        frames = fm__tel_sat_add(frames, t->pushed);
        uint32_t live_max; /* the config's cap first, else a live pool's */
        if (!max_cap && fm__live_max_capacity(t, s, &live_max)) max_cap = live_max;
    }
    fm_file_printf(w, "\n[pool.%s]\n", name);
    if (!seen_in) {
        fm_file_printf(w, "; not in any run: kept from the current config\n");
        fm__write_kept(w, base, FM__SEC_POOL, name, 0);
        return;
    }
    fm_config_tuned why;
    uint32_t cap = fm_config_tuned_capacity(peak, headroom, chunk, max_cap, &why);
    if (why == FM_CONFIG_TUNED_MAX_CAPACITY) fm_file_printf(w, "; capped at max_capacity %u\n", max_cap);
    if (why == FM_CONFIG_TUNED_LIMIT)
        fm_file_printf(w, "; capped at %u, the most initial_capacity takes\n", cap);
    fm_file_printf(w,
                   "; peak live %llu over %llu frame(s) in %u run(s), x%.2f headroom, rounded up "
                   "to whole chunks of %llu items\n",
                   (unsigned long long)peak, (unsigned long long)frames, seen_in, headroom,
                   (unsigned long long)(chunk ? chunk : 1));
    fm_file_printf(w, "initial_capacity = %u\n", cap);
    fm__write_kept(w, base, FM__SEC_POOL, name, FM__K_INITIAL);
}

static void fm__write_arena(fm_file_writer *w, const fm_config *base,
                            const fm_telemetry *const *runs, uint32_t run_count, const char *name) {
    uint64_t hw = 0, reserve = 0;
    bool known = fm__base_reserve(base, name, &reserve), seen = false;
    for (uint32_t r = 0; r < run_count; r++) {
        const fm_telemetry *t = runs[r];
        int s = fm__source_of(t, name, FM_TELEMETRY_ARENA);
        if (s < 0) continue;
        seen = true;
        uint64_t top = FM__HIGHEST(t, s, high_water);
        if (top > hw) hw = top;
        if (!known) known = fm__live_reserve(t, s, &reserve);
    }
    fm_file_printf(w, "\n[arena.%s]\n", name);
    if (!seen) {
        fm_file_printf(w, "; not in any run: kept from the current config\n");
        fm__write_kept(w, base, FM__SEC_ARENA, name, 0);
        return;
    }
    if (!known) reserve = FM__CFG_DEFAULT_RESERVE;
    /* A frame's bytes must fit its arena with room for a bigger frame. hw
     * may come from a file: past the largest reserve it is capped before
     * any arithmetic. */
    uint32_t skip = 0;
    if (hw > FM__CFG_MAX_RESERVE / 4) {
        fm_file_printf(w, "; largest frame %llu bytes: reserve capped at the largest the config "
                          "takes\n",
                       (unsigned long long)hw);
        fm_file_printf(w, "reserve = %llu\n", (unsigned long long)FM__CFG_MAX_RESERVE);
        skip = FM__K_RESERVE;
    } else if (hw * 4 > reserve) {
        uint64_t r4 = (hw * 4 + FM__CFG_MIN_RESERVE - 1) / FM__CFG_MIN_RESERVE * FM__CFG_MIN_RESERVE;
        if (r4 > FM__CFG_MAX_RESERVE) r4 = FM__CFG_MAX_RESERVE; /* whole MiB past SIZE_MAX */
        fm_file_printf(w, "; largest frame %llu bytes: reserve raised to 4x that, whole MiB\n",
                       (unsigned long long)hw);
        fm_file_printf(w, "reserve = %llu\n", (unsigned long long)r4);
        skip = FM__K_RESERVE;
    } else {
        fm_file_printf(w, "; largest frame %llu bytes: reserve %s (at least 4x that)\n",
                       (unsigned long long)hw, known ? "kept" : "left to the program");
    }
    fm__write_kept(w, base, FM__SEC_ARENA, name, skip);
}

static void fm__write_tag(fm_file_writer *w, const fm_config *base,
                          const fm_telemetry *const *runs, uint32_t run_count, const char *name) {
    uint64_t peak = 0, soft = 0, hard = 0;
    bool seen = false;
    for (uint32_t r = 0; r < run_count; r++) {
        const fm_telemetry *t = runs[r];
        int s = fm__source_of(t, name, FM_TELEMETRY_TAG);
        if (s < 0) continue;
        seen = true;
        uint64_t top = FM__HIGHEST(t, s, peak_live);
        if (top > peak) peak = top;
        soft = t->sources[s].soft_limit;
        hard = t->sources[s].hard_limit;
    }
    fm_file_printf(w, "\n[tag.%s]\n", name);
    if (seen)
        fm_file_printf(w, "; peak committed %llu bytes (soft limit %llu, hard limit %llu; 0: none)\n",
                       (unsigned long long)peak, (unsigned long long)soft, (unsigned long long)hard);
    else fm_file_printf(w, "; not in any run: kept from the current config\n");
    fm__write_kept(w, base, FM__SEC_TAG, name, 0);
}

bool fm_config_write_tuned_runs(const fm_config *base, const fm_telemetry *const *runs,
                                uint32_t run_count, double headroom, const char *path, char *err,
                                size_t err_len) {
    if (!runs && run_count) {
        fm__tel_report_null(__func__, "runs array", err, err_len);
        return false;
    }
    for (uint32_t r = 0; r < run_count; r++) FM__TEL_REFUSE_NULL_ERR(runs[r], "telemetry", err, err_len, false);
    if (!(headroom >= 1.0)) headroom = 1.0;
    /* Every name of every kind, runs first then base, each once. */
    uint32_t most = base ? base->count : 0;
    for (uint32_t r = 0; r < run_count; r++) most += runs[r]->source_count;
    fm__names names[FM__SEC_KINDS] = {{0}};
    void *buf = NULL;
    if (most) {
        buf = calloc((size_t)most * FM__SEC_KINDS, FM_TELEMETRY_NAME_MAX);
        if (!buf) {
            fm__tel_set_err(err, err_len, "%s: out of memory", path ? path : "config");
            return false;
        }
    }
    /* No names (no runs, no base): the lists stay empty, and NULL gets no
     * offset (undefined even when 0). */
    for (int k = 0; buf && k < FM__SEC_KINDS; k++)
        names[k].v = (char (*)[FM_TELEMETRY_NAME_MAX])((char *)buf + (size_t)k * most * FM_TELEMETRY_NAME_MAX);
    static const fm__sec_kind of_kind[FM_TELEMETRY_KIND_COUNT] = {
        [FM_TELEMETRY_POOL] = FM__SEC_POOL, [FM_TELEMETRY_ARENA] = FM__SEC_ARENA,
        [FM_TELEMETRY_CLOSURES] = FM__SEC_KINDS, [FM_TELEMETRY_TAG] = FM__SEC_TAG};
    for (uint32_t r = 0; r < run_count; r++)
        for (uint32_t s = 0; s < runs[r]->source_count; s++) {
            const fm_telemetry_source *si = &runs[r]->sources[s];
            fm__sec_kind k = (unsigned)si->kind < FM_TELEMETRY_KIND_COUNT ? of_kind[si->kind] : FM__SEC_KINDS;
            if (k == FM__SEC_KINDS || fm__names_has(&names[k], si->name)) continue;
            memcpy(names[k].v[names[k].n++], si->name, FM_TELEMETRY_NAME_MAX);
        }
    for (uint32_t i = 0; base && i < base->count; i++) {
        const fm__section *s = &base->sections[i];
        if (fm__names_has(&names[s->kind], s->name)) continue;
        memcpy(names[s->kind].v[names[s->kind].n++], s->name, FM_TELEMETRY_NAME_MAX);
    }
    fm_file_writer *w = fm_file_begin(path, err, err_len);
    if (!w) {
        free(buf);
        return false;
    }
    fm_file_printf(w, "; framemem pool sizes, written by fm_config_write_tuned from %u run(s)\n"
                      "; with headroom x%.2f over the highest live count seen.\n",
                   run_count, headroom);
    for (uint32_t i = 0; i < names[FM__SEC_POOL].n; i++)
        fm__write_pool(w, base, runs, run_count, headroom, names[FM__SEC_POOL].v[i]);
    for (uint32_t i = 0; i < names[FM__SEC_ARENA].n; i++)
        fm__write_arena(w, base, runs, run_count, names[FM__SEC_ARENA].v[i]);
    for (uint32_t i = 0; i < names[FM__SEC_TAG].n; i++)
        fm__write_tag(w, base, runs, run_count, names[FM__SEC_TAG].v[i]);
    free(buf);
    return fm_file_commit(w, err, err_len);
}

bool fm_config_write_tuned(const fm_telemetry *tel, const char *path, double headroom, char *err,
                           size_t err_len) {
    FM__TEL_REFUSE_NULL_ERR(tel, "telemetry", err, err_len, false);
    return fm_config_write_tuned_runs(NULL, &tel, 1, headroom, path, err, err_len);
}
