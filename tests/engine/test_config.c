/* tests/engine/test_config.c: pool-size INI loading, problems with file:line, tuned output. */
#include "fm_test.h"

#include "engine/config.h"
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load(eng_config *cfg, const char *text, eng_config_diag *rep) {
    eng_config_defaults(cfg);
    return eng_config_load_mem(cfg, text, strlen(text), "t.ini", rep);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_config_defaults_name_every_engine_pool_and_the_frame_arena(void **state) {
    (void)state;
    eng_config c;
    eng_config_defaults(&c);
    const char *names[] = {"entities", "transforms", "velocities", "lifetimes", "emitters", "particles"};
    for (size_t i = 0; i < 6; i++) {
        eng_pool_config *p = eng_config_pool(&c, names[i]);
        assert_non_null(p);
        assert_true(p->initial_capacity >= 1);
        assert_int_equal(p->growth, FM_GROWTH_GEOMETRIC);
        assert_true(p->grow_ahead);
    }
    assert_null(eng_config_pool(&c, "nope"));
    assert_null(eng_config_pool(&c, NULL));
    eng_arena_config *a = eng_config_arena(&c, "frame");
    assert_non_null(a);
    assert_true(a->reserve >= a->commit_step);
    assert_null(eng_config_arena(&c, "other"));
}

static void test_config_valid_file_applies_every_key(void **state) {
    (void)state;
    eng_config c;
    eng_config_diag rep;
    int n = load(&c,
                 "; comment\n"
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
                 "grow_ahead = off\n"
                 "[ pool.entities ]\r\n"
                 "growth = fixed\r\n"
                 "initial_capacity: 2000\r\n"
                 "[arena.frame]\n"
                 "reserve = 134217728\n"
                 "commit_step = 131072\n",
                 &rep);
    assert_int_equal(n, 0);
    assert_string_equal(rep.text, "");
    eng_pool_config *p = eng_config_pool(&c, "particles");
    assert_int_equal(p->initial_capacity, 30000);
    assert_int_equal(p->max_capacity, 500000);
    assert_int_equal(p->growth, FM_GROWTH_LINEAR);
    assert_true(p->grow_factor > 1.49f && p->grow_factor < 1.51f);
    assert_int_equal(p->grow_step, 4096);
    assert_int_equal(p->chunk_bytes, 8192);
    assert_int_equal(eng_config_pool(&c, "entities")->chunk_bytes, 0); /* the default */
    assert_false(p->prefault);
    assert_false(p->grow_ahead);
    assert_int_equal(eng_config_pool(&c, "entities")->growth, FM_GROWTH_FIXED);
    assert_int_equal(eng_config_pool(&c, "entities")->initial_capacity, 2000);
    assert_int_equal(eng_config_arena(&c, "frame")->reserve, 134217728);
    assert_int_equal(eng_config_arena(&c, "frame")->commit_step, 131072);
}

/* One problem per case: the message with file:line, and the pool untouched. */
static void expect_problem(const char *text, const char *want) {
    eng_config c, d;
    eng_config_defaults(&d);
    eng_config_diag rep;
    int n = load(&c, text, &rep);
    if (n != 1 || !fm_test_contains(rep.text, want)) {
        print_error("input:\n%s\nexpected one problem containing '%s', got %d:\n%s\n", text, want,
                    n, rep.text);
        fail();
    }
    assert_int_equal(rep.problems, 1);
    assert_memory_equal(&c, &d, sizeof c); /* nothing half-applied */
}

static void test_config_each_problem_is_reported_with_file_and_line(void **state) {
    (void)state;
    expect_problem("; pools\n\n[pool.nope]\ninitial_capacity = 5\n",
                   "t.ini:3: unknown pool 'nope' (known: entities, transforms");
    expect_problem("[arena.other]\nreserve = 1048576\n", "t.ini:1: unknown arena 'other'");
    expect_problem("[pools]\nx = 1\n", "t.ini:1: unknown section [pools]");
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
    expect_problem("[pool.particles]\ngrowth = exponential\n", "t.ini:2: [pool.particles] growth: unknown policy 'exponential'");
    expect_problem("[pool.particles]\ngrow_factor = 1.0\n", "grow_factor = 1.0 out of range");
    expect_problem("[pool.particles]\ngrow_factor = 65\n", "out of range");
    expect_problem("[pool.particles]\ngrow_factor = nan\n", "grow_factor: bad number 'nan'");
    expect_problem("[pool.particles]\ngrow_factor = 2x\n", "grow_factor: bad number '2x'");
    expect_problem("[pool.particles]\nprefault = maybe\n", "t.ini:2: [pool.particles] prefault: bad value 'maybe'");
    expect_problem("[arena.frame]\nreserve = 4096\n", "t.ini:2: [arena.frame] reserve = 4096 out of range");
    expect_problem("[arena.frame]\ncommit_step = big\n", "[arena.frame] commit_step: bad number 'big'");
    expect_problem("[arena.frame]\nsize = 1\n", "t.ini:2: [arena.frame] unknown key 'size'");
    expect_problem("[arena.frame]\nreserve = 1048576\ncommit_step = 2097152\n",
                   "t.ini:1: [arena.frame]: commit_step above reserve_bytes (reserve 1048576, "
                   "commit_step 2097152)");
    expect_problem("[pool.particles]\nmax_capacity = 100\ninitial_capacity = 200\n",
                   "t.ini:1: [pool.particles]: initial_capacity above max_capacity "
                   "(initial_capacity 200, max_capacity 100");
    /* a ';' after a blank in the key is not a comment there: the key is wrong */
    expect_problem("[pool.particles]\ninitial_capacity ;x = 5\n",
                   "t.ini:2: [pool.particles] unknown key 'initial_capacity ;x'");
    expect_problem("[pool.particles]\ngrow_factor = 1.00000001\n",
                   "t.ini:2: [pool.particles] grow_factor = 1.00000001 out of range (1 as a float): "
                   "grow_factor must be in (1, 64]");
    expect_problem("[pool.particles]\ngrow_factor = 1e-50\n", "grow_factor = 1e-50 out of range (0 as a float");
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
    assert_int_equal(ENG_CONFIG_MAX_LINE, 200);
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
            eng_config c;
            eng_config_diag rep;
            int n = load(&c, text, &rep);
            if (len <= 200) {
                if (n != 0) fail_msg("length %d, kind %d: %s", len, kind, rep.text);
                if (kind != 2) assert_int_equal(eng_config_pool(&c, "particles")->initial_capacity, 4096);
            } else {
                assert_int_equal(n, 1);
                assert_true(fm_test_contains(rep.text, "t.ini:2: line longer than 200 characters"));
            }
        }
    }
}

/* A budget allocator: eng_create with a big capacity fails for memory, not
 * for the desc. */
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
 * section's line 1) and leaves the config as it was; whatever the loader
 * accepts, the engine builds (on the system allocator, and chaining the
 * frame arena from an allocator): a readable config never makes create fail. */
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
        {"pool.particles", "max_capacity", "1023"}, /* the default initial is 1024 */
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
        {"arena.frame", "commit_step", "268435456"}, /* the default reserve */
        {"arena.frame", "commit_step", "268435457"},
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
            snprintf(label, sizeof label, "[%s] %s = %s", cases[i].section, cases[i].key, cases[i].value);
        } else {
            const char *const *pr = pairs[i - n_cases];
            snprintf(text, sizeof text, "[arena.frame]\nreserve = %s\ncommit_step = %s\n", pr[0], pr[1]);
            snprintf(label, sizeof label, "reserve %s, commit_step %s", pr[0], pr[1]);
        }
        eng_config c, d;
        eng_config_defaults(&d);
        eng_config_diag rep;
        int n = load(&c, text, &rep);
        if (n > 0) {
            rejected++;
            /* every line of the report names this file and a line of the section */
            for (const char *l = rep.text; *l; l = strchr(l, '\n') + 1) {
                bool ok = !strncmp(l, "t.ini:1: ", 9) || !strncmp(l, "t.ini:3: ", 9) ||
                          (i >= n_cases && !strncmp(l, "t.ini:2: ", 9));
                if (!ok) fail_msg("%s: report line without its file:line: %s", label, rep.text);
            }
            assert_memory_equal(&c, &d, sizeof c); /* not applied */
        } else {
            assert_int_equal(n, 0);
            accepted++;
        }
        /* create never fails for the desc: on the system allocator... */
        write_file("cfg_sweep.ini", text);
        char err[512] = "";
        /* 2^28 items, or 1 GiB chunks: more than the budget below holds */
        bool big = i < n_cases &&
                   ((!strcmp(cases[i].key, "initial_capacity") && strlen(cases[i].value) > 6) ||
                    (!strcmp(cases[i].key, "chunk_bytes") && strlen(cases[i].value) > 9));
        bool huge_reserve = i < n_cases && !strcmp(cases[i].key, "reserve") && strlen(cases[i].value) > 10;
        if (!big && !huge_reserve) {
            eng *e = eng_create(&(eng_desc){.config_path = "cfg_sweep.ini"}, err, sizeof err);
            if (!e) fail_msg("%s: loader found %d problem(s), yet create failed: %s", label, n, err);
            eng_tick(e, 1.0 / 60.0);
            eng_destroy(e);
        }
        /* ...and chaining its memory from an allocator (a 640 MiB budget:
         * 2^28 particles do not fit, and that must be the only reason) */
        budget b = {.limit = (size_t)640 << 20};
        fm_clear_error();
        eng *e = eng_create(&(eng_desc){.config_path = "cfg_sweep.ini",
                                        .allocator = {.alloc = budget_alloc, .free = budget_free, .user = &b}},
                            err, sizeof err);
        if (!e && (!big || fm_last_error() != FM_ERR_OUT_OF_MEMORY))
            fail_msg("%s: loader found %d problem(s), yet create failed (%s): %s", label, n,
                     fm_error_name(fm_last_error()), err);
        eng_destroy(e);
        assert_int_equal(b.live, 0);
    }
    remove("cfg_sweep.ini");
    assert_true(accepted >= 25);
    assert_true(rejected >= 25);
}

static void test_config_bad_section_keeps_its_pool_and_others_still_apply(void **state) {
    (void)state;
    eng_config c, d;
    eng_config_defaults(&d);
    eng_config_diag rep;
    int n = load(&c,
                 "[pool.particles]\n"
                 "initial_capacity = 50000\n" /* good key in a bad section: not applied */
                 "growth = sideways\n"
                 "max_capacity = lots\n"
                 "[pool.emitters]\n"
                 "initial_capacity = 999\n",
                 &rep);
    assert_int_equal(n, 2);
    assert_true(fm_test_contains(rep.text, "t.ini:3:"));
    assert_true(fm_test_contains(rep.text, "t.ini:4:"));
    assert_true(fm_test_contains(rep.text, "t.ini:1: [pool.particles] not applied"));
    assert_memory_equal(eng_config_pool(&c, "particles"), eng_config_pool(&d, "particles"),
                        sizeof(eng_pool_config));
    assert_int_equal(eng_config_pool(&c, "emitters")->initial_capacity, 999);
    /* a file with binary garbage: problems, no crash, defaults kept */
    const char junk[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0[pool.x\n\xff\xfe=\n";
    eng_config_defaults(&c);
    n = eng_config_load_mem(&c, junk, sizeof junk - 1, "junk", &rep);
    assert_true(n >= 2);
    assert_memory_equal(&c, &d, sizeof c);
    /* a report that overflows ends with "..." */
    char *many = malloc(200 * 32 + 32);
    strcpy(many, "[pool.particles]\n");
    for (int i = 0; i < 200; i++) strcat(many, "bogus_key_here = 1\n");
    n = load(&c, many, &rep);
    assert_int_equal(n, 200);
    assert_true(fm_test_contains(rep.text, "...\n"));
    free(many);
    /* no rep given */
    assert_int_equal(load(&c, "[x]\n", NULL), 1);
}

static void test_config_missing_file_is_an_error_and_keeps_the_config(void **state) {
    (void)state;
    eng_config c, d;
    eng_config_defaults(&c);
    eng_config_defaults(&d);
    eng_config_diag rep;
    assert_int_equal(eng_config_load(&c, "no_such.ini", &rep), -1);
    assert_true(fm_test_contains(rep.text, "config no_such.ini: cannot open: No such file or directory"));
    assert_memory_equal(&c, &d, sizeof c);
    write_file("cfg_one.ini", "[pool.particles]\ninitial_capacity = 7\n\n[pool.zzz]\n");
    assert_int_equal(eng_config_load(&c, "cfg_one.ini", &rep), 1);
    assert_true(fm_test_contains(rep.text, "cfg_one.ini:4: unknown pool 'zzz'"));
    assert_int_equal(eng_config_pool(&c, "particles")->initial_capacity, 7);
    /* an engine refuses a config it cannot read, with the reason */
    char err[512];
    assert_null(eng_create(&(eng_desc){.config_path = "no_such.ini"}, err, sizeof err));
    assert_true(fm_test_contains(err, "no_such.ini"));
    /* and reports problems of one it can read */
    eng *e = eng_create(&(eng_desc){.config_path = "cfg_one.ini"}, err, sizeof err);
    assert_non_null(e);
    assert_true(fm_test_contains(eng_config_problems(e), "cfg_one.ini:4: unknown pool 'zzz'"));
    eng_destroy(e);
}

/* Pools of a run and their in-allocation growth after frame `after`. */
static uint64_t growth_after(const eng_telemetry *t, uint64_t after) {
    uint64_t g = 0;
    for (uint32_t i = 0; i < eng_telemetry_frame_count(t); i++) {
        const eng_frame_record *r = eng_telemetry_frame(t, i);
        if (r->frame > after) g += r->grow_events;
    }
    return g;
}

static void test_config_tuned_round_trip_removes_growth(void **state) {
    (void)state;
    char err[512];
    eng *e = eng_create(&(eng_desc){.seed = 3, .scale = 0.3}, err, sizeof err);
    assert_non_null(e);
    for (int i = 0; i < 240; i++) eng_tick(e, 1.0 / 60.0);
    /* Default sizes regrow during warm-up: the hitches. */
    assert_true(growth_after(eng_get_telemetry(e), 0) > 0);
    assert_true(eng_write_tuned_config(e, "cfg_tuned.ini", 1.25, err, sizeof err));
    const eng_source_info *ps =
        eng_telemetry_source(eng_get_telemetry(e), (uint32_t)eng_telemetry_find_source(eng_get_telemetry(e), "particles"));
    uint64_t want = eng_suggest_capacity(ps->peak_live, 1.25, ps->chunk_items);
    eng_destroy(e);

    eng_config c;
    eng_config_defaults(&c);
    eng_config_diag rep;
    assert_int_equal(eng_config_load(&c, "cfg_tuned.ini", &rep), 0);
    assert_int_equal(eng_config_pool(&c, "particles")->initial_capacity, want);
    FILE *f = fopen("cfg_tuned.ini", "rb");
    char text[8192] = "";
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = 0;
    fclose(f);
    assert_true(fm_test_contains(text, "; peak live "));
    assert_true(fm_test_contains(text, "rounded up to whole chunks of"));

    /* The same scene on the tuned config: capacities applied, no growth inside
     * an allocation after the first frame. */
    e = eng_create(&(eng_desc){.seed = 3, .scale = 0.3, .config_path = "cfg_tuned.ini"}, err, sizeof err);
    assert_non_null(e);
    assert_string_equal(eng_config_problems(e), "");
    fm_pool_stats st;
    fm_pool_get_stats(eng_get_pool(e, "particles"), &st);
    assert_true(st.capacity >= want);
    for (int i = 0; i < 240; i++) eng_tick(e, 1.0 / 60.0);
    assert_int_equal(growth_after(eng_get_telemetry(e), 0), 0);
    eng_destroy(e);

    /* Pools no run has seen keep their value and say so; a chunk size too. */
    eng_config_defaults(&c);
    eng_config_pool(&c, "emitters")->chunk_bytes = 4096;
    assert_true(eng_config_write_tuned(&c, NULL, 0, 1.5, "cfg_none.ini", err, sizeof err));
    eng_config c2;
    eng_config_defaults(&c2);
    assert_int_equal(eng_config_load(&c2, "cfg_none.ini", &rep), 0);
    assert_memory_equal(&c, &c2, sizeof c);
    assert_false(eng_config_write_tuned(&c, NULL, 0, 1.5, "no_dir/x.ini", err, sizeof err));
    assert_true(fm_test_contains(err, "no_dir/x.ini"));
    assert_false(eng_config_write_tuned(NULL, NULL, 0, 1.5, "x.ini", err, sizeof err));
}

static void test_config_tuned_from_several_runs_takes_the_highest_peak(void **state) {
    (void)state;
    eng_telemetry *runs[2];
    for (int r = 0; r < 2; r++) {
        runs[r] = eng_telemetry_create(&(eng_telemetry_desc){.frames = 4});
        eng_telemetry_add_source(runs[r], "particles", ENG_SOURCE_POOL, 32, 100);
        eng_sample s = {.live = r ? 950u : 400u, .peak_live = r ? 950u : 400u};
        eng_telemetry_push(runs[r], &(eng_frame_record){.frame = 1}, &s);
    }
    eng_config c;
    eng_config_defaults(&c);
    eng_pool_config *p = eng_config_pool(&c, "particles");
    p->max_capacity = 5000;
    char err[256];
    assert_true(eng_config_write_tuned(&c, (const eng_telemetry *const *)runs, 2, 2.0, "cfg_two.ini",
                                       err, sizeof err));
    eng_config d;
    eng_config_defaults(&d);
    assert_int_equal(eng_config_load(&d, "cfg_two.ini", NULL), 0);
    assert_int_equal(eng_config_pool(&d, "particles")->initial_capacity, 1900);
    assert_int_equal(eng_config_pool(&d, "particles")->max_capacity, 5000);
    /* capped at max_capacity */
    p->max_capacity = 1000;
    assert_true(eng_config_write_tuned(&c, (const eng_telemetry *const *)runs, 2, 2.0, "cfg_two.ini",
                                       err, sizeof err));
    eng_config_defaults(&d);
    assert_int_equal(eng_config_load(&d, "cfg_two.ini", NULL), 0);
    assert_int_equal(eng_config_pool(&d, "particles")->initial_capacity, 1000);
    for (int r = 0; r < 2; r++) eng_telemetry_destroy(runs[r]);
}

/* Telemetry from a file may hold any number: the tuned config saturates
 * (2^28 items, 64 GiB reserve, SIZE_MAX on 32-bit targets), says so, and loads back without a problem;
 * grow_factor is written so that the float itself comes back. */
static void test_config_tuned_from_extreme_values_saturates_and_loads_back(void **state) {
    (void)state;
    eng_telemetry *t = eng_telemetry_create(&(eng_telemetry_desc){.frames = 4});
    eng_telemetry_add_source(t, "particles", ENG_SOURCE_POOL, 32, UINT64_MAX);
    eng_telemetry_add_source(t, "entities", ENG_SOURCE_POOL, 64, 100);
    eng_telemetry_add_source(t, "frame", ENG_SOURCE_ARENA, 0, 1);
    for (uint64_t f = 0; f < 2; f++) {
        eng_sample s[3] = {{.live = UINT64_MAX, .peak_live = UINT64_MAX},
                           {.live = UINT64_MAX - 1},
                           {.high_water = UINT64_MAX, .bytes_used = UINT64_MAX}};
        eng_telemetry_push(t, &(eng_frame_record){.frame = f}, s);
    }
    eng_config c;
    eng_config_defaults(&c);
    eng_config_pool(&c, "velocities")->grow_factor = 1.0000001f; /* > 1 as a float */
    eng_config_pool(&c, "entities")->max_capacity = 5000;
    char err[256];
    const eng_telemetry *runs[] = {t};
    assert_true(eng_config_write_tuned(&c, runs, 1, 16.0, "cfg_extreme.ini", err, sizeof err));
    eng_config d;
    eng_config_defaults(&d);
    eng_config_diag rep;
    if (eng_config_load(&d, "cfg_extreme.ini", &rep) != 0) fail_msg("%s", rep.text);
    assert_int_equal(eng_config_pool(&d, "particles")->initial_capacity, 1u << 28);
    assert_int_equal(eng_config_pool(&d, "entities")->initial_capacity, 5000);
    /* 64 GiB, or the most a 32-bit size_t holds */
    uint64_t max_reserve = SIZE_MAX < ((uint64_t)64 << 30) ? SIZE_MAX : (uint64_t)64 << 30;
    assert_int_equal(eng_config_arena(&d, "frame")->reserve, max_reserve);
    assert_true(eng_config_pool(&d, "velocities")->grow_factor == (float)1.0000001f);
    FILE *f = fopen("cfg_extreme.ini", "rb");
    char text[8192] = "";
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    assert_true(fm_test_contains(text, "; capped at 268435456, the most initial_capacity takes"));
    assert_true(fm_test_contains(text, "; capped at max_capacity 5000"));
    assert_true(fm_test_contains(text, "reserve capped at the largest the config takes"));
    remove("cfg_extreme.ini");
    /* the shared rule, alone */
    eng_tuned_cap why;
    eng_pool_config pc = {.max_capacity = 0};
    assert_int_equal(eng_config_tuned_capacity(&pc, UINT64_MAX, 1.25, 64, &why), 1u << 28);
    assert_int_equal(why, ENG_TUNED_CONFIG_LIMIT);
    assert_int_equal(eng_config_tuned_capacity(NULL, 1000, 1.25, 64, &why), 1280);
    assert_int_equal(why, ENG_TUNED_EXACT);
    pc.max_capacity = 1000;
    assert_int_equal(eng_config_tuned_capacity(&pc, 1000, 1.25, 64, NULL), 1000);
    assert_int_equal(eng_config_tuned_capacity(&pc, 0, 1.0, 0, &why), 1);
    eng_telemetry_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults_name_every_engine_pool_and_the_frame_arena),
        cmocka_unit_test(test_config_valid_file_applies_every_key),
        cmocka_unit_test(test_config_each_problem_is_reported_with_file_and_line),
        cmocka_unit_test(test_config_lines_of_200_characters_load_and_longer_ones_are_reported),
        cmocka_unit_test(test_config_accepted_values_always_build_and_rejected_ones_name_their_line),
        cmocka_unit_test(test_config_bad_section_keeps_its_pool_and_others_still_apply),
        cmocka_unit_test(test_config_missing_file_is_an_error_and_keeps_the_config),
        cmocka_unit_test(test_config_tuned_round_trip_removes_growth),
        cmocka_unit_test(test_config_tuned_from_several_runs_takes_the_highest_peak),
        cmocka_unit_test(test_config_tuned_from_extreme_values_saturates_and_loads_back),
    };
    return cmocka_run_group_tests_name("engine_config", tests, NULL, NULL);
}
