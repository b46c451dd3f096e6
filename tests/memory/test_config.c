/* tests/memory/test_config.c: pool, arena and tag configs from INI files:
 * loading with file:line problems, applying by name to any program's descs,
 * tuned output from telemetry. */
#define _POSIX_C_SOURCE 200809L /* mkfifo */
#include "fm_test.h"

#include "framemem/config.h"
#include "framemem/framemem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct particle {
    float x, y, vx, vy, life;
} particle;

static fm_config *load(const char *text) {
    char err[256] = "";
    fm_config *cfg = fm_config_load_mem(text, strlen(text), "t.ini", NULL, err, sizeof err);
    if (!cfg) fail_msg("load: %s", err);
    return cfg;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[16384];
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = 0;
    fclose(f);
    return text;
}

/* The program's descs before a config: what the tests apply files to. */
static fm_pool_desc particles_desc(void) {
    return FM_POOL_DESC(particle, .name = "particles", .initial_capacity = 1024);
}

static void test_config_valid_file_applies_every_key_and_only_those(void **state) {
    (void)state;
    fm_config *c = load("; comment\n"
                        "# another\n"
                        "\n"
                        "[pool.particles]\n"
                        "initial_capacity = 30000 ; inline comment\n"
                        "max_capacity = 500000\n"
                        "growth = linear\n"
                        "grow_factor = 1.5\n"
                        "grow_step = 4096\n"
                        "chunk_bytes = 8192\n"
                        "prefault = no\n"
                        "grow_ahead = on\n"
                        "[ pool.entities ]\r\n"
                        "growth = fixed\r\n"
                        "initial_capacity: 2000\r\n"
                        "[arena.frame]\n"
                        "reserve = 134217728\n"
                        "commit_step = 131072\n"
                        "[arena.scratch]\n"
                        "commit_step = 8192\n"
                        "[tag.level]\n"
                        "soft_limit_bytes = 1000000\n"
                        "hard_limit_bytes = 2000000\n");
    assert_int_equal(fm_config_problem_count(c), 0);
    assert_string_equal(fm_config_problems(c), "");
    fm_pool_desc p = particles_desc();
    p.prefault = true;
    assert_int_equal(fm_config_apply_pool(c, &p), 1);
    assert_int_equal(p.initial_capacity, 30000);
    assert_int_equal(p.max_capacity, 500000);
    assert_int_equal(p.growth, FM_GROWTH_LINEAR);
    assert_true(p.grow_factor > 1.49f && p.grow_factor < 1.51f);
    assert_int_equal(p.grow_step, 4096);
    assert_int_equal(p.chunk_bytes, 8192);
    assert_false(p.prefault);
    assert_true(p.grow_ahead);
    assert_int_equal(p.item_size, sizeof(particle)); /* the program's own fields stay */
    /* keys the file does not set stay as the program has them */
    fm_pool_desc e = {.name = "entities", .item_size = 64, .max_capacity = 9000, .prefault = true};
    assert_int_equal(fm_config_apply(c, &e), 1);
    assert_int_equal(e.growth, FM_GROWTH_FIXED);
    assert_int_equal(e.initial_capacity, 2000);
    assert_int_equal(e.max_capacity, 9000);
    assert_int_equal(e.chunk_bytes, 0); /* the default */
    assert_true(e.prefault);
    /* no section of that name: untouched */
    fm_pool_desc other = {.name = "bullets", .item_size = 8, .initial_capacity = 3};
    fm_pool_desc copy = other;
    assert_int_equal(fm_config_apply(c, &other), 0);
    assert_memory_equal(&other, &copy, sizeof other);
    /* arenas and frame arenas by name ("frame" when a frame arena has none) */
    fm_frame_arena_desc fd = {0};
    assert_int_equal(fm_config_apply(c, &fd), 1);
    assert_int_equal(fd.arena.reserve_bytes, 134217728);
    assert_int_equal(fd.arena.commit_step, 131072);
    fm_arena_desc ad = {.name = "scratch", .reserve_bytes = 1 << 24};
    assert_int_equal(fm_config_apply(c, &ad), 1);
    assert_int_equal(ad.commit_step, 8192);
    assert_int_equal(ad.reserve_bytes, 1 << 24);
    fm_arena_desc unnamed = {0}; /* "arena": no section */
    assert_int_equal(fm_config_apply_arena(c, &unnamed), 0);
    /* tags */
    fm_tag_desc td = {.name = "level"};
    assert_int_equal(fm_config_apply(c, &td), 1);
    assert_int_equal(td.soft_limit_bytes, 1000000);
    assert_int_equal(td.hard_limit_bytes, 2000000);
    /* every section matched something: nothing unused */
    assert_int_equal(fm_config_report_unused(c), 0);
    /* and the descs build */
    fm_pool *pool = fm_pool_create(&p);
    fm_frame_arena *fa = fm_frame_arena_create(&fd);
    fm_tag *tag = fm_tag_create(&td);
    assert_non_null(pool);
    assert_non_null(fa);
    assert_non_null(tag);
    fm_tag_destroy(tag);
    fm_frame_arena_destroy(fa);
    fm_pool_destroy(pool);
    fm_config_destroy(c);
    fm_config_destroy(NULL);
}

/* Names are compared as telemetry writes them; the type name stands in for
 * a missing name; later sections win, key by key. */
static void test_config_matches_names_as_telemetry_writes_them(void **state) {
    (void)state;
    fm_config *c = load("[pool.enemy_bullets]\ninitial_capacity = 77\n"
                        "[pool.particle]\ninitial_capacity = 88\n"
                        "[pool.pool]\ngrow_step = 64\n"
                        "[pool.twice]\ninitial_capacity = 1\ngrowth = linear\n"
                        "[pool.twice]\ninitial_capacity = 2\n");
    fm_pool_desc a = {.name = "enemy bullets", .item_size = 4};
    assert_int_equal(fm_config_apply_pool(c, &a), 1);
    assert_int_equal(a.initial_capacity, 77);
    fm_pool_desc b = FM_POOL_DESC(particle); /* no name: its type name */
    assert_int_equal(fm_config_apply_pool(c, &b), 1);
    assert_int_equal(b.initial_capacity, 88);
    fm_pool_desc d = {.item_size = 4}; /* neither: "pool" */
    assert_int_equal(fm_config_apply_pool(c, &d), 1);
    assert_int_equal(d.grow_step, 64);
    fm_pool_desc t = {.name = "twice", .item_size = 4};
    assert_int_equal(fm_config_apply_pool(c, &t), 1);
    assert_int_equal(t.initial_capacity, 2);
    assert_int_equal(t.growth, FM_GROWTH_LINEAR);
    fm_config_destroy(c);
}

/* A file's values that the program's own desc cannot take (its
 * initial_capacity above the file's max_capacity) are not applied: the
 * desc stays as it was, the problem names the section's line, create
 * succeeds. */
static void test_config_apply_refuses_what_the_programs_desc_cannot_take(void **state) {
    fm_test_env *env = *state;
    fm_config *c = load("; sizes\n[pool.particles]\nmax_capacity = 100\n"
                        "[arena.scratch]\ncommit_step = 2097152\n"
                        "[tag.level]\nsoft_limit_bytes = 5000\n");
    assert_int_equal(fm_config_problem_count(c), 0);
    fm_pool_desc p = particles_desc(); /* initial_capacity 1024 */
    fm_pool_desc before = p;
    int errors = env->errors.count;
    assert_int_equal(fm_config_apply_pool(c, &p), -1);
    assert_memory_equal(&p, &before, sizeof p);
    assert_int_equal(fm_config_problem_count(c), 1);
    fm_test_expect_contains(fm_config_problems(c),
                            "t.ini:2: [pool.particles] not applied to the program's desc: "
                            "initial_capacity above max_capacity");
    fm_pool *pool = fm_pool_create(&p);
    assert_non_null(pool);
    fm_pool_destroy(pool);
    fm_arena_desc ad = {.name = "scratch", .reserve_bytes = 1 << 20};
    assert_int_equal(fm_config_apply(c, &ad), -1);
    assert_int_equal(ad.commit_step, 0);
    fm_test_expect_contains(fm_config_problems(c), "t.ini:4: [arena.scratch] not applied");
    fm_frame_arena_desc fd = {.name = "scratch", .arena.reserve_bytes = 1 << 20};
    assert_int_equal(fm_config_apply(c, &fd), -1);
    fm_tag_desc td = {.name = "level", .hard_limit_bytes = 1000};
    assert_int_equal(fm_config_apply(c, &td), -1);
    assert_int_equal(td.soft_limit_bytes, 0);
    fm_test_expect_contains(fm_config_problems(c), "t.ini:6: [tag.level] not applied");
    assert_int_equal(fm_config_problem_count(c), 4);
    assert_int_equal(env->errors.count, errors); /* a file's problem, not an error report */
    fm_config_destroy(c);
}

/* Sections no object of the program matched are reported at their line. */
static void test_config_unused_sections_are_reported_at_their_line(void **state) {
    (void)state;
    fm_config *c = load("[pool.particles]\ninitial_capacity = 5\n\n[pool.nope]\ninitial_capacity = 5\n"
                        "[arena.other]\nreserve = 1048576\n[tag.t]\n");
    fm_pool_desc p = particles_desc();
    assert_int_equal(fm_config_apply(c, &p), 1);
    assert_int_equal(fm_config_report_unused(c), 3);
    fm_test_expect_contains(fm_config_problems(c), "t.ini:4: [pool.nope] matches no pool of the program");
    fm_test_expect_contains(fm_config_problems(c), "t.ini:6: [arena.other] matches no arena");
    fm_test_expect_contains(fm_config_problems(c), "t.ini:8: [tag.t] matches no tag");
    assert_int_equal(fm_config_problem_count(c), 3);
    fm_config_destroy(c);
}

/* One problem per case: the message with file:line, and the section not
 * applied. */
static void expect_problem(const char *text, const char *want) {
    fm_config *c = load(text);
    uint32_t n = fm_config_problem_count(c);
    if (n != 1 || !fm_test_contains(fm_config_problems(c), want)) {
        print_error("input:\n%s\nexpected one problem containing '%s', got %u:\n%s\n", text, want,
                    n, fm_config_problems(c));
        fail();
    }
    fm_pool_desc p = particles_desc(), before = p;
    assert_true(fm_config_apply_pool(c, &p) <= 0);
    assert_memory_equal(&p, &before, sizeof p);
    fm_frame_arena_desc fd = {0};
    assert_true(fm_config_apply_frame_arena(c, &fd) <= 0);
    assert_int_equal(fd.arena.reserve_bytes, 0);
    fm_tag_desc td = {.name = "level"};
    assert_true(fm_config_apply_tag(c, &td) <= 0);
    fm_config_destroy(c);
}

static void test_config_each_problem_is_reported_with_file_and_line(void **state) {
    (void)state;
    expect_problem("[pools]\nx = 1\n", "t.ini:1: unknown section [pools]");
    expect_problem("[heap.x]\nx = 1\n", "t.ini:1: unknown section [heap.x]");
    expect_problem("[pool.bad name]\nx = 1\n", "t.ini:1: bad name in [pool.bad name]");
    expect_problem("[pool.]\n", "t.ini:1: bad name in [pool.]");
    expect_problem("[pool.particles]\ninitial_capacity = lots\n",
                   "t.ini:2: [pool.particles] initial_capacity: bad number 'lots'");
    expect_problem("[pool.particles]\ninitial_capacity = 12abc\n", "t.ini:2:");
    expect_problem("[pool.particles]\ninitial_capacity = -5\n", "bad number '-5'");
    expect_problem("[pool.particles]\ninitial_capacity =\n", "bad number ''");
    expect_problem("[pool.particles]\ninitial_capacity = 0\n",
                   "t.ini:2: [pool.particles] initial_capacity = 0 out of range (1 .. 268435456)");
    expect_problem("[pool.particles]\nmax_capacity = 268435457\n", "out of range");
    expect_problem("[pool.particles]\nmax_capacity = 99999999999999999999999\n", "out of range");
    expect_problem("\n[pool.particles]\ncapacity = 5\n",
                   "t.ini:3: [pool.particles] unknown key 'capacity'");
    expect_problem("[pool.particles]\ngrowth = exponential\n",
                   "t.ini:2: [pool.particles] growth: unknown policy 'exponential'");
    expect_problem("[pool.particles]\ngrow_factor = 1.0\n", "grow_factor = 1.0 out of range");
    expect_problem("[pool.particles]\ngrow_factor = 65\n", "out of range");
    expect_problem("[pool.particles]\ngrow_factor = nan\n", "grow_factor: bad number 'nan'");
    expect_problem("[pool.particles]\ngrow_factor = 2x\n", "grow_factor: bad number '2x'");
    expect_problem("[pool.particles]\nprefault = maybe\n",
                   "t.ini:2: [pool.particles] prefault: bad value 'maybe'");
    expect_problem("[pool.particles]\ngrow_ahead = 2\n", "t.ini:2: [pool.particles] grow_ahead: bad value '2'");
    expect_problem("[arena.frame]\nreserve = 4096\n", "t.ini:2: [arena.frame] reserve = 4096 out of range");
    expect_problem("[arena.frame]\ncommit_step = big\n", "[arena.frame] commit_step: bad number 'big'");
    expect_problem("[arena.frame]\nsize = 1\n", "t.ini:2: [arena.frame] unknown key 'size'");
    expect_problem("[arena.frame]\nreserve = 1048576\ncommit_step = 2097152\n",
                   "t.ini:1: [arena.frame]: commit_step above reserve_bytes (reserve 1048576, "
                   "commit_step 2097152)");
    expect_problem("[pool.particles]\nmax_capacity = 100\ninitial_capacity = 200\n",
                   "t.ini:1: [pool.particles]: initial_capacity above max_capacity "
                   "(initial_capacity 200, max_capacity 100");
    expect_problem("[tag.level]\nsoft_limit_bytes = 10\nhard_limit_bytes = 5\n",
                   "t.ini:1: [tag.level]: ");
    expect_problem("[tag.level]\nsoft_limit_bytes = lots\n",
                   "t.ini:2: [tag.level] soft_limit_bytes: bad number 'lots'");
    expect_problem("[tag.level]\nhard_limit_bytes = 281474976710657\n",
                   "t.ini:2: [tag.level] hard_limit_bytes = 281474976710657 out of range");
    expect_problem("[tag.level]\nlimit = 5\n", "t.ini:2: [tag.level] unknown key 'limit'");
    /* a ';' after a blank in the key is not a comment there: the key is wrong */
    expect_problem("[pool.particles]\ninitial_capacity ;x = 5\n",
                   "t.ini:2: [pool.particles] unknown key 'initial_capacity ;x'");
    expect_problem("[pool.particles]\ngrow_factor = 1.00000001\n",
                   "t.ini:2: [pool.particles] grow_factor = 1.00000001 out of range (1 as a float): "
                   "grow_factor must be in (1, 64]");
    expect_problem("[pool.particles]\ngrow_factor = 1e-50\n",
                   "grow_factor = 1e-50 out of range (0 as a float");
    expect_problem("initial_capacity = 5\n", "t.ini:1: 'initial_capacity' outside a section");
    expect_problem("[pool.particles]\njust some words\n", "t.ini:2: syntax error");
    expect_problem("[pool.particles\ninitial_capacity = 5\n", "t.ini:1: bad section header");
    expect_problem("[pool.particles]\n  initial_capacity = 5\n", "t.ini:2: indented line");
    expect_problem("[pool.particles]\ninitial_capacity = 5\x01\n", "t.ini:2: control byte 0x01");
    char longline[400];
    snprintf(longline, sizeof longline, "[pool.particles]\ninitial_capacity = 5 ; %0300d\n", 0);
    expect_problem(longline, "t.ini:2: line longer than");
}

/* config.h promises lines of 200 characters (without the line end). */
static void test_config_lines_of_200_characters_load_and_longer_ones_are_reported(void **state) {
    (void)state;
    assert_int_equal(FM_CONFIG_MAX_LINE, 200);
    for (int len = 198; len <= 202; len++) {
        for (int kind = 0; kind < 4; kind++) {
            /* a key with a padding comment, a value of leading zeros, a
             * comment line, and the first with CRLF */
            char line[256];
            if (kind == 0 || kind == 3)
                snprintf(line, sizeof line, "initial_capacity = 4096 ;%*s", len - 25, "x");
            else if (kind == 1)
                snprintf(line, sizeof line, "initial_capacity = %0*d", len - 19, 4096);
            else
                snprintf(line, sizeof line, ";%*s", len - 1, "c");
            assert_int_equal((int)strlen(line), len);
            char text[512];
            snprintf(text, sizeof text, "[pool.particles]%s\n%s%s\n", kind == 3 ? "\r" : "", line,
                     kind == 3 ? "\r" : "");
            fm_config *c = load(text);
            uint32_t n = fm_config_problem_count(c);
            fm_pool_desc p = particles_desc();
            p.initial_capacity = 7;
            int applied = fm_config_apply_pool(c, &p);
            if (len <= 200) {
                if (n != 0) fail_msg("length %d, kind %d: %s", len, kind, fm_config_problems(c));
                if (kind != 2) assert_int_equal(p.initial_capacity, 4096);
                else assert_int_equal(applied, 1); /* an empty section */
            } else {
                assert_int_equal(n, 1);
                assert_true(fm_test_contains(fm_config_problems(c),
                                             "t.ini:2: line longer than 200 characters"));
                assert_int_equal(p.initial_capacity, 7);
            }
            fm_config_destroy(c);
        }
    }
}

/* A budget allocator: create with a big capacity fails for memory, not for
 * the desc. */
typedef struct budget {
    size_t live, limit;
} budget;

static void *budget_alloc(size_t size, size_t align, void *user) {
    budget *b = user;
    if (size > b->limit - b->live) return NULL;
    void *p = fm_test_aligned_alloc(align, (size + align - 1) / align * align);
    if (p) b->live += size;
    return p;
}

static void budget_free(void *p, size_t size, void *user) {
    budget *b = user;
    if (!p) return;
    b->live -= size;
    fm_test_aligned_free(p);
}

typedef struct sweep_case {
    const char *section, *key, *value;
} sweep_case;

/* Every field near each of its boundaries. The value sits on line 3; a
 * problem is reported on that line (or, for rules between fields, on the
 * section's line 1) and the section is not applied; whatever is applied to
 * the program's descs builds (pool and frame arena on the system's memory,
 * and both chained from an allocator): a readable config never makes create
 * fail. */
static void test_config_accepted_values_always_build_and_rejected_ones_name_their_line(void **state) {
    (void)state;
    static const sweep_case cases[] = {
        {"pool.particles", "initial_capacity", "0"},
        {"pool.particles", "initial_capacity", "1"},
        {"pool.particles", "initial_capacity", "2"},
        {"pool.particles", "initial_capacity", "268435455"},
        {"pool.particles", "initial_capacity", "268435456"},
        {"pool.particles", "initial_capacity", "268435457"},
        {"pool.particles", "initial_capacity", "18446744073709551616"},
        {"pool.particles", "initial_capacity", "-1"},
        {"pool.particles", "max_capacity", "0"},
        {"pool.particles", "max_capacity", "1"},
        {"pool.particles", "max_capacity", "1023"}, /* the program's initial is 1024 */
        {"pool.particles", "max_capacity", "1024"},
        {"pool.particles", "max_capacity", "1025"},
        {"pool.particles", "max_capacity", "268435456"},
        {"pool.particles", "max_capacity", "268435457"},
        {"pool.particles", "grow_step", "0"},
        {"pool.particles", "grow_step", "1"},
        {"pool.particles", "grow_step", "268435456"},
        {"pool.particles", "grow_step", "268435457"},
        {"pool.particles", "growth", "geometric"},
        {"pool.particles", "growth", "linear"},
        {"pool.particles", "growth", "fixed"},
        {"pool.particles", "growth", "Fixed"},
        {"pool.particles", "grow_factor", "0"},
        {"pool.particles", "grow_factor", "-0"},
        {"pool.particles", "grow_factor", "1e-50"},
        {"pool.particles", "grow_factor", "1"},
        {"pool.particles", "grow_factor", "1.00000001"},
        {"pool.particles", "grow_factor", "1.0000001"},
        {"pool.particles", "grow_factor", "1.000001"},
        {"pool.particles", "grow_factor", "1.5"},
        {"pool.particles", "grow_factor", "64"},
        {"pool.particles", "grow_factor", "64.0000001"},
        {"pool.particles", "grow_factor", "64.00001"},
        {"pool.particles", "grow_factor", "65"},
        {"pool.particles", "grow_factor", "-2"},
        {"pool.particles", "grow_factor", "inf"},
        {"pool.particles", "grow_factor", "1e300"},
        {"pool.particles", "chunk_bytes", "0"},
        {"pool.particles", "chunk_bytes", "2048"},
        {"pool.particles", "chunk_bytes", "4095"},
        {"pool.particles", "chunk_bytes", "4096"},
        {"pool.particles", "chunk_bytes", "6144"},
        {"pool.particles", "chunk_bytes", "1073741824"},
        {"pool.particles", "chunk_bytes", "2147483648"},
        {"pool.particles", "chunk_bytes", "4k"},
        {"pool.particles", "prefault", "yes"},
        {"pool.particles", "prefault", "maybe"},
        {"pool.particles", "grow_ahead", "off"},
        {"arena.frame", "reserve", "1048575"},
        {"arena.frame", "reserve", "1048576"},
        {"arena.frame", "reserve", "1048577"},
        {"arena.frame", "reserve", "68719476736"},
        {"arena.frame", "reserve", "68719476737"},
        {"arena.frame", "commit_step", "4095"},
        {"arena.frame", "commit_step", "4096"},
        {"arena.frame", "commit_step", "4097"},
        {"arena.frame", "commit_step", "67108864"}, /* the default reserve */
        {"arena.frame", "commit_step", "67108865"},
        {"tag.level", "soft_limit_bytes", "0"},
        {"tag.level", "soft_limit_bytes", "281474976710656"},
        {"tag.level", "soft_limit_bytes", "281474976710657"},
        {"tag.level", "hard_limit_bytes", "1"},
    };
    /* the arena's cross-field boundaries: commit_step just under, at and
     * just over reserve, with reserves on and off a page */
    static const char *const pairs[][2] = {
        {"1048576", "1048575"}, {"1048576", "1048576"}, {"1048576", "1048577"},
        {"1048577", "1048576"}, {"1048577", "1048577"}, {"1052671", "1052671"},
        {"1052672", "1052672"}, {"1048576", "4096"},
    };
    size_t n_cases = sizeof cases / sizeof cases[0], n_pairs = sizeof pairs / sizeof pairs[0];
    int accepted = 0, rejected = 0;
    for (size_t i = 0; i < n_cases + n_pairs; i++) {
        char text[256], label[128];
        if (i < n_cases) {
            snprintf(text, sizeof text, "[%s]\n; the value under test\n%s = %s\n", cases[i].section,
                     cases[i].key, cases[i].value);
            snprintf(label, sizeof label, "[%s] %s = %s", cases[i].section, cases[i].key,
                     cases[i].value);
        } else {
            const char *const *pr = pairs[i - n_cases];
            snprintf(text, sizeof text, "[arena.frame]\nreserve = %s\ncommit_step = %s\n", pr[0], pr[1]);
            snprintf(label, sizeof label, "reserve %s, commit_step %s", pr[0], pr[1]);
        }
        fm_config *c = load(text);
        fm_pool_desc pd = particles_desc(), pd0 = pd;
        fm_frame_arena_desc fd = {0};
        fm_tag_desc td = {.name = "level"};
        int ap = fm_config_apply_pool(c, &pd), af = fm_config_apply_frame_arena(c, &fd);
        int at = fm_config_apply_tag(c, &td);
        /* problems of the load, and of applying to the program's descs */
        uint32_t n = fm_config_problem_count(c);
        if (n > 0) {
            rejected++;
            /* every line of the report names this file and a line of the section */
            const char *rep = fm_config_problems(c);
            for (const char *l = rep; *l; l = strchr(l, '\n') + 1) {
                bool ok = !strncmp(l, "t.ini:1: ", 9) || !strncmp(l, "t.ini:3: ", 9) ||
                          (i >= n_cases && !strncmp(l, "t.ini:2: ", 9));
                if (!ok) fail_msg("%s: report line without its file:line: %s", label, rep);
            }
            assert_true(ap <= 0 && af <= 0 && at <= 0); /* dropped, or refused by the desc */
            assert_memory_equal(&pd, &pd0, sizeof pd);
        } else {
            accepted++;
            assert_true(ap >= 0 && af >= 0 && at >= 0);
        }
        /* whatever was applied builds: on the system's memory... */
        /* 2^28 items, or 1 GiB chunks: more than the budget below holds */
        bool big = i < n_cases &&
                   ((!strcmp(cases[i].key, "initial_capacity") && strlen(cases[i].value) > 6) ||
                    (!strcmp(cases[i].key, "chunk_bytes") && strlen(cases[i].value) > 9));
        if (!big) {
            fm_pool *p = fm_pool_create(&pd);
            if (!p) fail_msg("%s: %u problem(s), yet the pool was refused: %s", label, n,
                             fm_last_error_message());
            fm_pool_destroy(p);
            bool huge_reserve = fd.arena.reserve_bytes / 16 > ((size_t)1 << 30); /* 16 GiB */
            if (!huge_reserve) {
                fm_frame_arena *fa = fm_frame_arena_create(&fd);
                if (!fa) fail_msg("%s: the frame arena was refused: %s", label, fm_last_error_message());
                fm_frame_arena_destroy(fa);
            }
            fm_tag *tag = fm_tag_create(&td);
            if (!tag) fail_msg("%s: the tag was refused: %s", label, fm_last_error_message());
            fm_tag_destroy(tag);
        }
        /* ...and chaining its memory from an allocator (a 640 MiB budget:
         * 2^28 particles do not fit, and that must be the only reason) */
        budget b = {.limit = (size_t)640 << 20};
        fm_allocator al = {.alloc = budget_alloc, .free = budget_free, .user = &b};
        pd.allocator = al;
        fd.arena.allocator = al;
        fm_clear_error();
        fm_pool *p = fm_pool_create(&pd);
        if (!p && (!big || fm_last_error() != FM_ERR_OUT_OF_MEMORY))
            fail_msg("%s: %u problem(s), yet the pool was refused (%s)", label, n,
                     fm_error_name(fm_last_error()));
        fm_pool_destroy(p);
        fm_frame_arena *fa = fm_frame_arena_create(&fd);
        if (!fa) fail_msg("%s: chained, the frame arena was refused: %s", label, fm_last_error_message());
        fm_frame_arena_destroy(fa);
        assert_int_equal(b.live, 0);
        fm_config_destroy(c);
    }
    assert_true(accepted >= 25);
    assert_true(rejected >= 25);
}

static void test_config_bad_section_is_dropped_and_others_still_apply(void **state) {
    (void)state;
    fm_config *c = load("[pool.particles]\n"
                        "initial_capacity = 50000\n" /* good key in a bad section: not applied */
                        "growth = sideways\n"
                        "max_capacity = lots\n"
                        "[pool.emitters]\n"
                        "initial_capacity = 999\n");
    assert_int_equal(fm_config_problem_count(c), 2);
    const char *rep = fm_config_problems(c);
    assert_true(fm_test_contains(rep, "t.ini:3:"));
    assert_true(fm_test_contains(rep, "t.ini:4:"));
    assert_true(fm_test_contains(rep, "t.ini:1: [pool.particles] not applied"));
    fm_pool_desc p = particles_desc();
    assert_int_equal(fm_config_apply_pool(c, &p), 0);
    assert_int_equal(p.initial_capacity, 1024);
    fm_pool_desc e = {.name = "emitters", .item_size = 8};
    assert_int_equal(fm_config_apply_pool(c, &e), 1);
    assert_int_equal(e.initial_capacity, 999);
    fm_config_destroy(c);
    /* a file with binary garbage: problems, no crash, nothing applied */
    const char junk[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0[pool.x\n\xff\xfe=\n";
    c = fm_config_load_mem(junk, sizeof junk - 1, "junk", NULL, NULL, 0);
    assert_non_null(c);
    assert_true(fm_config_problem_count(c) >= 2);
    fm_pool_desc x = {.name = "x", .item_size = 1};
    assert_int_equal(fm_config_apply_pool(c, &x), 0);
    fm_config_destroy(c);
    /* a report that overflows ends with "..." */
    char *many = malloc(200 * 32 + 32);
    strcpy(many, "[pool.particles]\n");
    for (int i = 0; i < 200; i++) strcat(many, "bogus_key_here = 1\n");
    c = load(many);
    assert_int_equal(fm_config_problem_count(c), 200);
    assert_true(fm_test_contains(fm_config_problems(c), "...\n"));
    free(many);
    fm_config_destroy(c);
    /* empty input, and none at all */
    c = fm_config_load_mem("", 0, NULL, NULL, NULL, 0);
    assert_int_equal(fm_config_problem_count(c), 0);
    fm_config_destroy(c);
    c = fm_config_load_mem(NULL, 5, NULL, NULL, NULL, 0);
    assert_non_null(c);
    fm_config_destroy(c);
}

/* Files: missing, a FIFO, a folder, too big (refused at once with the
 * reason), a byte-order mark (accepted); the config's memory from the
 * caller's allocator, and a refusal reported. */
static void test_config_files_are_read_whole_with_a_cap_and_the_callers_memory(void **state) {
    fm_test_env *env = *state;
    char err[512];
    assert_null(fm_config_load("no_such.ini", NULL, err, sizeof err));
    fm_test_expect_contains(err, "config no_such.ini: cannot open: No such file or directory");
    assert_null(fm_config_load(NULL, NULL, err, sizeof err));
    char dir[256];
    assert_true(fm_test_make_dir(dir, sizeof dir, "fm_cfg"));
    const char *fifo = fm_test_path(dir, "fifo.ini");
    if (fm_test_make_fifo(fifo, "a FIFO as the config")) {
        assert_null(fm_config_load(fifo, NULL, err, sizeof err));
        fm_test_expect_contains(err, "not a regular file");
    }
    assert_null(fm_config_load(dir, NULL, err, sizeof err));
    fm_test_expect_contains(err, "not a regular file");
    const char *big = fm_test_path(dir, "big.ini");
    FILE *f = fopen(big, "wb");
    for (size_t i = 0; i < FM_CONFIG_MAX_BYTES / 64 + 1; i++)
        fputs(";23456789012345678901234567890123456789012345678901234567890123\n", f);
    fclose(f);
    assert_null(fm_config_load(big, NULL, err, sizeof err));
    fm_test_expect_contains(err, "too large (cap 1048576 bytes)");
    const char *bom = fm_test_path(dir, "bom.ini");
    fm_test_write_text(bom, "\xEF\xBB\xBF[pool.particles]\ninitial_capacity = 12\n");
    fm_allocator a = fm_test_allocator_get(&env->alloc);
    fm_config *c = fm_config_load(bom, &a, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(fm_config_problem_count(c), 0);
    fm_pool_desc p = particles_desc();
    assert_int_equal(fm_config_apply_pool(c, &p), 1);
    assert_int_equal(p.initial_capacity, 12);
    assert_int_equal(env->alloc.live_blocks, 1); /* the config, from a; the file went back */
    fm_config_destroy(c);
    fm_test_allocator_assert_clean(&env->alloc);
    /* every allocation refused in turn: NULL with the reason, nothing held */
    for (uint64_t k = 1; k <= 2; k++) {
        fm_test_allocator_fail_nth(&env->alloc, k);
        c = fm_config_load(bom, &a, err, sizeof err);
        assert_null(c);
        fm_test_expect_contains(err, "bom.ini");
        fm_test_allocator_assert_clean(&env->alloc);
    }
    fm_test_allocator_recover(&env->alloc);
    fm_allocator half = {.alloc = a.alloc};
    assert_null(fm_config_load_mem("", 0, "x", &half, err, sizeof err));
    fm_test_expect_contains(err, "allocator");
    assert_int_equal(fm_test_remove_dir(dir), 0);
}

/* ============================================================ tuned output */

typedef struct spark {
    float x, y;
    int life;
    char trail[200]; /* a few hundred to a chunk: the run grows several times */
} spark;

/* A small "game": sparks and a frame arena, grown from small defaults. */
static void run_game(fm_config *cfg, fm_telemetry **out_tel, uint64_t *growth_after_first) {
    fm_pool_desc sd = FM_POOL_DESC(spark, .name = "sparks", .initial_capacity = 16);
    fm_frame_arena_desc fd = {.arena.commit_step = 4096};
    if (cfg) {
        assert_true(fm_config_apply(cfg, &sd) >= 0);
        assert_true(fm_config_apply(cfg, &fd) >= 0);
    }
    fm_pool *sparks = fm_pool_create(&sd);
    fm_frame_arena *fa = fm_frame_arena_create(&fd);
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 240});
    fm_telemetry_add_pool(t, sparks);
    fm_telemetry_add_frame_arena(t, fa);
    static void *live[4000];
    size_t n = 0;
    for (int f = 0; f < 120; f++) {
        fm_frame_arena_advance(fa);
        size_t born = (size_t)(10 + (f % 30) * 3);
        for (size_t k = 0; k < born && n < 4000; k++) live[n++] = fm_pool_alloc(sparks);
        size_t dead = n > 1500 ? born : born / 3;
        while (dead-- && n) fm_pool_free(sparks, live[--n]);
        assert_non_null(fm_frame_alloc(fa, (size_t)(f % 17) * 1000 + 100, 16));
        fm_telemetry_frame_end(t);
    }
    *growth_after_first = 0;
    for (uint32_t i = 1; i < fm_telemetry_frame_count(t); i++)
        *growth_after_first += fm_telemetry_get_frame(t, i)->grow_events;
    fm_telemetry_detach(t, 0);
    fm_telemetry_detach(t, 1);
    while (n) fm_pool_free(sparks, live[--n]);
    fm_frame_arena_destroy(fa);
    fm_pool_destroy(sparks);
    *out_tel = t;
}

static void test_config_tuned_round_trip_removes_growth(void **state) {
    (void)state;
    char err[512];
    fm_telemetry *t;
    uint64_t growth;
    run_game(NULL, &t, &growth);
    assert_true(growth > 0); /* small defaults regrow: the hitches */
    const fm_telemetry_source *ps = fm_telemetry_get_source(t, 0);
    uint64_t want = fm_telemetry_suggest_capacity(ps->peak_live, 1.25, ps->chunk_items);
    assert_true(fm_config_write_tuned(t, "cfg_tuned.ini", 1.25, err, sizeof err));
    fm_telemetry_destroy(t);
    char *text = slurp("cfg_tuned.ini");
    assert_true(fm_test_contains(text, "; peak live "));
    assert_true(fm_test_contains(text, "rounded up to whole chunks of"));
    assert_true(fm_test_contains(text, "[arena.frame]"));
    fm_config *cfg = fm_config_load("cfg_tuned.ini", NULL, err, sizeof err);
    assert_non_null(cfg);
    assert_int_equal(fm_config_problem_count(cfg), 0);
    fm_pool_desc sd = FM_POOL_DESC(spark, .name = "sparks", .initial_capacity = 16);
    assert_int_equal(fm_config_apply(cfg, &sd), 1);
    assert_int_equal(sd.initial_capacity, want);
    /* the same game on the tuned config: no growth inside an allocation
     * after the first frame */
    run_game(cfg, &t, &growth);
    assert_int_equal(growth, 0);
    assert_int_equal(fm_config_report_unused(cfg), 0);
    fm_telemetry_destroy(t);
    fm_config_destroy(cfg);
    /* unwritable */
    fm_telemetry *e = fm_telemetry_create(NULL);
    assert_false(fm_config_write_tuned(e, "no_dir/x.ini", 1.5, err, sizeof err));
    assert_true(fm_test_contains(err, "no_dir/x.ini"));
    assert_false(fm_config_write_tuned(NULL, "x.ini", 1.5, err, sizeof err));
    fm_telemetry_destroy(e);
}

/* A live pool's max_capacity caps its tuned capacity; a live arena's
 * reserve is the current one. */
static void test_config_tuned_from_live_objects_respects_their_limits(void **state) {
    (void)state;
    fm_pool *p = fm_pool_create(&FM_POOL_DESC(spark, .name = "sparks", .max_capacity = 1000));
    fm_arena *a = fm_arena_create(&(fm_arena_desc){.name = "scratch", .reserve_bytes = 2 << 20});
    fm_arena *b = fm_arena_create(&(fm_arena_desc){.name = "small", .reserve_bytes = 2 << 20});
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 8});
    fm_telemetry_add_pool(t, p);
    fm_telemetry_add_arena(t, a);
    fm_telemetry_add_arena(t, b);
    void *items[1000];
    for (int i = 0; i < 1000; i++) items[i] = fm_pool_alloc(p);
    assert_non_null(fm_arena_alloc(a, 1 << 20, 16)); /* 1 MiB: 4x is above the 2 MiB reserve */
    assert_non_null(fm_arena_alloc(b, 100000, 16));  /* 4x fits in 2 MiB */
    fm_telemetry_frame_end(t);
    char err[256];
    assert_true(fm_config_write_tuned(t, "cfg_live.ini", 1.25, err, sizeof err));
    char *text = slurp("cfg_live.ini");
    assert_true(fm_test_contains(text, "; capped at max_capacity 1000\n"));
    assert_true(fm_test_contains(text, "initial_capacity = 1000\n"));
    assert_true(fm_test_contains(text, "[arena.scratch]\n; largest frame 1048576 bytes: reserve "
                                       "raised to 4x that, whole MiB\nreserve = 4194304\n"));
    assert_true(fm_test_contains(text, "[arena.small]\n; largest frame 100000 bytes: reserve kept "
                                       "(at least 4x that)\n"));
    for (int i = 0; i < 1000; i++) fm_pool_free(p, items[i]);
    fm_telemetry_destroy(t);
    fm_arena_destroy(b);
    fm_arena_destroy(a);
    fm_pool_destroy(p);
}

static void test_config_tuned_from_several_runs_takes_the_highest_peak_and_keeps_the_rest(void **state) {
    (void)state;
    fm_telemetry *runs[2];
    for (int r = 0; r < 2; r++) {
        runs[r] = fm_telemetry_create(&(fm_telemetry_desc){.frames = 4});
        fm_telemetry_add_source(runs[r], "particles", FM_TELEMETRY_POOL, 32, 100);
        fm_telemetry_sample s = {.live = r ? 950u : 400u, .peak_live = r ? 950u : 400u};
        fm_telemetry_push(runs[r], &(fm_telemetry_frame){.frame = 1}, &s);
    }
    fm_config *base = load("[pool.particles]\nmax_capacity = 5000\ngrowth = linear\n"
                           "[pool.kept]\ninitial_capacity = 33\nchunk_bytes = 8192\n[tag.level]\nhard_limit_bytes = 4096\n");
    char err[256];
    assert_true(fm_config_write_tuned_runs(base, (const fm_telemetry *const *)runs, 2, 2.0,
                                           "cfg_two.ini", err, sizeof err));
    fm_config *d = fm_config_load("cfg_two.ini", NULL, err, sizeof err);
    assert_int_equal(fm_config_problem_count(d), 0);
    fm_pool_desc p = {.name = "particles", .item_size = 32};
    assert_int_equal(fm_config_apply(d, &p), 1);
    assert_int_equal(p.initial_capacity, 1900);
    assert_int_equal(p.max_capacity, 5000);
    assert_int_equal(p.growth, FM_GROWTH_LINEAR);
    fm_pool_desc k = {.name = "kept", .item_size = 32};
    assert_int_equal(fm_config_apply(d, &k), 1);
    assert_int_equal(k.initial_capacity, 33);
    assert_int_equal(k.chunk_bytes, 8192); /* a chunk size too */
    fm_tag_desc td = {.name = "level"};
    assert_int_equal(fm_config_apply(d, &td), 1);
    assert_int_equal(td.hard_limit_bytes, 4096);
    assert_true(fm_test_contains(slurp("cfg_two.ini"), "[pool.kept]\n; not in any run: kept"));
    fm_config_destroy(d);
    fm_config_destroy(base);
    /* capped at base's max_capacity */
    base = load("[pool.particles]\nmax_capacity = 1000\n");
    assert_true(fm_config_write_tuned_runs(base, (const fm_telemetry *const *)runs, 2, 2.0,
                                           "cfg_two.ini", err, sizeof err));
    d = fm_config_load("cfg_two.ini", NULL, err, sizeof err);
    p = (fm_pool_desc){.name = "particles", .item_size = 32};
    assert_int_equal(fm_config_apply(d, &p), 1);
    assert_int_equal(p.initial_capacity, 1000);
    fm_config_destroy(d);
    fm_config_destroy(base);
    /* no runs, no base: a file with its header only */
    assert_true(fm_config_write_tuned_runs(NULL, NULL, 0, 1.0, "cfg_none.ini", err, sizeof err));
    d = fm_config_load("cfg_none.ini", NULL, err, sizeof err);
    assert_int_equal(fm_config_problem_count(d), 0);
    fm_config_destroy(d);
    const fm_telemetry *nulls[1] = {NULL};
    assert_false(fm_config_write_tuned_runs(NULL, nulls, 1, 1.0, "cfg_none.ini", err, sizeof err));
    assert_false(fm_config_write_tuned_runs(NULL, NULL, 1, 1.0, "cfg_none.ini", err, sizeof err));
    for (int r = 0; r < 2; r++) fm_telemetry_destroy(runs[r]);
}

/* Telemetry from a file may hold any number: the tuned config saturates
 * (2^28 items, 64 GiB reserve, SIZE_MAX on 32-bit targets), says so, and loads
 * back without a problem; grow_factor is written so that the float itself
 * comes back. */
static void test_config_tuned_from_extreme_values_saturates_and_loads_back(void **state) {
    (void)state;
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 4});
    fm_telemetry_add_source(t, "particles", FM_TELEMETRY_POOL, 32, UINT64_MAX);
    fm_telemetry_add_source(t, "entities", FM_TELEMETRY_POOL, 64, 100);
    fm_telemetry_add_source(t, "frame", FM_TELEMETRY_ARENA, 0, 1);
    fm_telemetry_add_source(t, "small", FM_TELEMETRY_ARENA, 0, 1);
    fm_telemetry_add_source(t, "edge", FM_TELEMETRY_ARENA, 0, 1);
    /* 64 GiB, or the most a 32-bit size_t holds */
    uint64_t max_reserve = SIZE_MAX < ((uint64_t)64 << 30) ? SIZE_MAX : (uint64_t)64 << 30;
    for (uint64_t f = 0; f < 2; f++) {
        /* edge: 4x its frame, in whole MiB, passes the largest reserve on
         * 32-bit targets (4 GiB) and is capped there too. */
        fm_telemetry_sample s[5] = {{.live = UINT64_MAX, .peak_live = UINT64_MAX},
                                    {.live = UINT64_MAX - 1},
                                    {.high_water = UINT64_MAX, .bytes_used = UINT64_MAX},
                                    {.high_water = 1000},
                                    {.high_water = max_reserve / 4}};
        fm_telemetry_push(t, &(fm_telemetry_frame){.frame = f}, s);
    }
    fm_config *base = load("[pool.velocities]\ngrow_factor = 1.0000001\n"
                           "[pool.entities]\nmax_capacity = 5000\n");
    char err[256];
    const fm_telemetry *runs[] = {t};
    assert_true(fm_config_write_tuned_runs(base, runs, 1, 16.0, "cfg_extreme.ini", err, sizeof err));
    fm_config *d = fm_config_load("cfg_extreme.ini", NULL, err, sizeof err);
    if (fm_config_problem_count(d)) fail_msg("%s", fm_config_problems(d));
    fm_pool_desc p = {.name = "particles", .item_size = 1};
    fm_config_apply(d, &p);
    assert_int_equal(p.initial_capacity, 1u << 28);
    fm_pool_desc e = {.name = "entities", .item_size = 1};
    fm_config_apply(d, &e);
    assert_int_equal(e.initial_capacity, 5000);
    fm_frame_arena_desc fd = {0};
    fm_config_apply(d, &fd);
    assert_int_equal(fd.arena.reserve_bytes, max_reserve);
    fm_arena_desc edge = {.name = "edge"};
    fm_config_apply(d, &edge);
    assert_int_equal(edge.reserve_bytes, max_reserve);
    fm_arena_desc small = {.name = "small"};
    assert_int_equal(fm_config_apply(d, &small), 1); /* its section, without a reserve */
    assert_int_equal(small.reserve_bytes, 0);
    fm_pool_desc v = {.name = "velocities", .item_size = 1};
    fm_config_apply(d, &v);
    assert_true(v.grow_factor == (float)1.0000001f);
    char *text = slurp("cfg_extreme.ini");
    assert_true(fm_test_contains(text, "; capped at 268435456, the most initial_capacity takes"));
    assert_true(fm_test_contains(text, "; capped at max_capacity 5000"));
    assert_true(fm_test_contains(text, "reserve capped at the largest the config takes"));
    assert_true(fm_test_contains(text, "reserve left to the program"));
    remove("cfg_extreme.ini");
    /* the shared rule, alone */
    fm_config_tuned why;
    assert_int_equal(fm_config_tuned_capacity(UINT64_MAX, 1.25, 64, 0, &why), 1u << 28);
    assert_int_equal(why, FM_CONFIG_TUNED_LIMIT);
    assert_int_equal(fm_config_tuned_capacity(1000, 1.25, 64, 0, &why), 1280);
    assert_int_equal(why, FM_CONFIG_TUNED_EXACT);
    assert_int_equal(fm_config_tuned_capacity(1000, 1.25, 64, 1000, &why), 1000);
    assert_int_equal(why, FM_CONFIG_TUNED_MAX_CAPACITY);
    assert_int_equal(fm_config_tuned_capacity(0, 1.0, 0, 0, NULL), 1);
    fm_config_destroy(d);
    fm_config_destroy(base);
    fm_telemetry_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_config_valid_file_applies_every_key_and_only_those),
        T(test_config_matches_names_as_telemetry_writes_them),
        T(test_config_apply_refuses_what_the_programs_desc_cannot_take),
        T(test_config_unused_sections_are_reported_at_their_line),
        T(test_config_each_problem_is_reported_with_file_and_line),
        T(test_config_lines_of_200_characters_load_and_longer_ones_are_reported),
        T(test_config_accepted_values_always_build_and_rejected_ones_name_their_line),
        T(test_config_bad_section_is_dropped_and_others_still_apply),
        T(test_config_files_are_read_whole_with_a_cap_and_the_callers_memory),
        T(test_config_tuned_round_trip_removes_growth),
        T(test_config_tuned_from_live_objects_respects_their_limits),
        T(test_config_tuned_from_several_runs_takes_the_highest_peak_and_keeps_the_rest),
        T(test_config_tuned_from_extreme_values_saturates_and_loads_back),
#undef T
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
