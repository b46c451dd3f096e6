/* tests/engine/test_telemetry.c: registry, ring buffer, CSV out and in, trace JSON. */
#include "fm_test.h"

#include "engine/telemetry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static eng_telemetry *make_two_sources(uint32_t frames) {
    eng_telemetry *t = eng_telemetry_create(&(eng_telemetry_desc){.frames = frames});
    assert_non_null(t);
    assert_int_equal(eng_telemetry_add_source(t, "particles", ENG_SOURCE_POOL, 32, 1024), 0);
    assert_int_equal(eng_telemetry_add_source(t, "frame", ENG_SOURCE_ARENA, 0, 1), 1);
    return t;
}

/* Frame f: particles allocs f, live 10 f, a growth on frames divisible by 3. */
static void push_frames(eng_telemetry *t, uint64_t first, uint32_t n) {
    for (uint64_t f = first; f < first + n; f++) {
        eng_sample s[2] = {
            {.allocs = f, .frees = f / 2, .live = 10 * f, .capacity = 1024, .peak_live = 10 * f,
             .alloc_ns = 100 + f, .grow_events = f % 3 == 0, .grow_ns = f % 3 == 0 ? 5000 : 0,
             .ahead_grow_events = f % 5 == 0, .ahead_grow_ns = f % 5 == 0 ? 700 : 0},
            {.allocs = 3, .bytes_used = 4096 + f, .high_water = 9000, .capacity = 65536,
             .commit_events = f == first},
        };
        eng_telemetry_push(t, &(eng_frame_record){.frame = f, .frame_ns = 16000000 + f,
                                                  .sim_ns = 1000, .alloc_total_ns = 100 + f,
                                                  .maint_ns = 50},
                           s);
    }
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---------------------------------------------------------------- registry */

static void test_telemetry_registry_finds_names_and_refuses_bad_ones(void **state) {
    (void)state;
    eng_telemetry *t = make_two_sources(8);
    assert_int_equal(eng_telemetry_add_source(t, "particles", ENG_SOURCE_POOL, 32, 1024), 0);
    assert_int_equal(eng_telemetry_find_source(t, "frame"), 1);
    assert_int_equal(eng_telemetry_find_source(t, "nope"), -1);
    assert_int_equal(eng_telemetry_add_source(t, "", ENG_SOURCE_POOL, 1, 1), -1);
    assert_int_equal(eng_telemetry_add_source(t, "has space", ENG_SOURCE_POOL, 1, 1), -1);
    assert_int_equal(eng_telemetry_add_source(t, "a,comma", ENG_SOURCE_POOL, 1, 1), -1);
    assert_int_equal(eng_telemetry_add_source(t, "x23456789012345678901234567890123", ENG_SOURCE_POOL,
                                              1, 1), -1);
    assert_int_equal(eng_telemetry_source_count(t), 2);
    assert_string_equal(eng_telemetry_source(t, 0)->name, "particles");
    assert_null(eng_telemetry_source(t, 2));
    /* After the first frame the registry is closed. */
    push_frames(t, 0, 1);
    assert_int_equal(eng_telemetry_add_source(t, "late", ENG_SOURCE_POOL, 1, 1), -1);
    eng_telemetry_destroy(t);

    eng_telemetry *full = eng_telemetry_create(&(eng_telemetry_desc){.frames = 2, .max_sources = 2});
    assert_int_equal(eng_telemetry_add_source(full, "a", ENG_SOURCE_POOL, 1, 1), 0);
    assert_int_equal(eng_telemetry_add_source(full, "b", ENG_SOURCE_POOL, 1, 1), 1);
    assert_int_equal(eng_telemetry_add_source(full, "c", ENG_SOURCE_POOL, 1, 1), -1);
    eng_telemetry_destroy(full);
    assert_null(eng_telemetry_create(&(eng_telemetry_desc){.max_sources = ENG_TELEMETRY_MAX_SOURCES + 1}));
}

/* ------------------------------------------------------------------- ring */

static void test_telemetry_ring_wraps_keeping_the_newest_frames(void **state) {
    (void)state;
    eng_telemetry *t = make_two_sources(10);
    assert_int_equal(eng_telemetry_capacity(t), 10);
    push_frames(t, 0, 4);
    assert_int_equal(eng_telemetry_frame_count(t), 4);
    assert_int_equal(eng_telemetry_frame(t, 0)->frame, 0);
    push_frames(t, 4, 21); /* 25 frames pushed, the ring holds 15..24 */
    assert_int_equal(eng_telemetry_frame_count(t), 10);
    assert_int_equal(eng_telemetry_frames_pushed(t), 25);
    for (uint32_t i = 0; i < 10; i++) {
        assert_int_equal(eng_telemetry_frame(t, i)->frame, 15 + i);
        assert_int_equal(eng_telemetry_sample(t, i, 0)->live, 10 * (15 + i));
        assert_int_equal(eng_telemetry_sample(t, i, 1)->bytes_used, 4096 + 15 + i);
    }
    assert_null(eng_telemetry_frame(t, 10));
    assert_null(eng_telemetry_sample(t, 0, 2));
    /* Totals cover every frame pushed, not only those held. */
    const eng_source_info *si = eng_telemetry_source(t, 0);
    assert_int_equal(si->total_allocs, 24 * 25 / 2);
    assert_int_equal(si->total_grow_events, 9); /* 0, 3, ..., 24 */
    assert_int_equal(si->total_ahead_grow_events, 5);
    assert_int_equal(si->peak_live, 240);
    assert_int_equal(si->last_grow_frame, 24);
    /* Frame records sum their sources' growth. */
    assert_int_equal(eng_telemetry_frame(t, 9)->grow_events, 1);
    eng_telemetry_set_render_ns(t, 777);
    assert_int_equal(eng_telemetry_frame(t, 9)->render_ns, 777);
    assert_int_equal(eng_telemetry_frame(t, 8)->render_ns, 0);
    eng_telemetry_clear(t);
    assert_int_equal(eng_telemetry_frame_count(t), 0);
    assert_int_equal(eng_telemetry_source(t, 0)->total_allocs, 0);
    assert_int_equal(eng_telemetry_source_count(t), 2);
    eng_telemetry_set_render_ns(t, 1); /* empty: no-op */
    eng_telemetry_destroy(t);
}

static void test_telemetry_suggest_capacity_rounds_to_whole_chunks(void **state) {
    (void)state;
    assert_int_equal(eng_suggest_capacity(1000, 1.25, 512), 1536);
    assert_int_equal(eng_suggest_capacity(1024, 1.0, 512), 1024);
    assert_int_equal(eng_suggest_capacity(1025, 1.0, 512), 1536);
    assert_int_equal(eng_suggest_capacity(0, 2.0, 100), 100); /* at least a chunk */
    assert_int_equal(eng_suggest_capacity(10, 0.5, 0), 10);   /* headroom < 1 is 1, chunk 0 is 1 */
    assert_true(eng_telemetry_clock_overhead_ns() < 10000);
}

/* Numbers from files may be anything: the suggestion saturates at the most
 * whole chunks a uint64_t holds, never wraps (2^64 - 1 live items gave 64). */
static void test_telemetry_suggest_capacity_saturates_at_extreme_values(void **state) {
    (void)state;
    const uint64_t max = UINT64_MAX;
    assert_true(eng_suggest_capacity(max, 1.25, 64) == max / 64 * 64);
    assert_true(eng_suggest_capacity(max, 1.0, 1) == max);
    assert_true(eng_suggest_capacity(max, 1000.0, 100) == max / 100 * 100);
    assert_true(eng_suggest_capacity(max - 1, 1.0, 3) == max / 3 * 3);
    assert_true(eng_suggest_capacity(max / 2, 2.0, 1) == max);           /* 2^64 - 2: rounds to 2^64 */
    assert_true(eng_suggest_capacity(1ull << 62, 1.25, 1) == 5ull << 60); /* still exact */
    assert_true(eng_suggest_capacity(1, 1.0, max) == max);               /* one chunk of 2^64 - 1 */
    assert_true(eng_suggest_capacity(max, 1.0, max) == max);
    assert_true(eng_suggest_capacity(max, 1.0, max - 1) == max - 1);     /* one whole chunk fits */
    assert_true(eng_suggest_capacity(2, 1.0, max - 1) == max - 1);
    /* a double holds 53 bits: never below the peak itself */
    uint64_t odd = (1ull << 60) + 1;
    assert_true(eng_suggest_capacity(odd, 1.0, 1) >= odd);
    assert_true(eng_suggest_capacity(odd, 1.0, 1) <= odd + 256);
    /* headroom NaN, infinite or huge is clamped, never overflows */
    assert_int_equal(eng_suggest_capacity(100, NAN, 1), 100);
    assert_int_equal(eng_suggest_capacity(100, INFINITY, 1), 100000);
    assert_int_equal(eng_suggest_capacity(100, -INFINITY, 1), 100);
}

/* Totals over frames (from a file: any value) saturate instead of wrapping,
 * and a frame's growth count saturates at UINT32_MAX. */
static void test_telemetry_totals_saturate_instead_of_wrapping(void **state) {
    (void)state;
    eng_telemetry *t = make_two_sources(4);
    for (uint64_t f = 0; f < 3; f++) {
        eng_sample s[2] = {{.allocs = UINT64_MAX, .frees = UINT64_MAX - 1, .alloc_ns = UINT64_MAX,
                            .grow_events = UINT64_MAX, .grow_ns = UINT64_MAX,
                            .ahead_grow_events = (1ull << 32) + 5, .ahead_grow_ns = UINT64_MAX,
                            .peak_live = UINT64_MAX},
                           {.grow_events = UINT32_MAX, .ahead_grow_events = 7}};
        eng_telemetry_push(t, &(eng_frame_record){.frame = f}, s);
    }
    const eng_source_info *si = eng_telemetry_source(t, 0);
    assert_true(si->total_allocs == UINT64_MAX);
    assert_true(si->total_frees == UINT64_MAX);
    assert_true(si->total_alloc_ns == UINT64_MAX);
    assert_true(si->total_grow_events == UINT64_MAX);
    assert_true(si->total_grow_ns == UINT64_MAX);
    assert_true(si->total_ahead_grow_events == 3 * ((1ull << 32) + 5));
    assert_true(si->total_ahead_grow_ns == UINT64_MAX);
    assert_true(si->peak_live == UINT64_MAX);
    const eng_frame_record *r = eng_telemetry_frame(t, 2);
    assert_int_equal(r->grow_events, UINT32_MAX);
    assert_int_equal(r->ahead_grow_events, UINT32_MAX);
    eng_telemetry_destroy(t);
}

/* ---------------------------------------------------------------- CSV out */

static void test_telemetry_csv_has_header_and_a_row_per_frame_and_source(void **state) {
    (void)state;
    eng_telemetry *t = make_two_sources(16);
    push_frames(t, 100, 5);
    char err[256];
    assert_true(eng_telemetry_write_csv(t, "tel_rows.csv", err, sizeof err));
    char *csv = slurp("tel_rows.csv");
    assert_true(strncmp(csv, ENG_CSV_COLUMNS "\n", strlen(ENG_CSV_COLUMNS) + 1) == 0);
    int lines = 0;
    for (char *p = csv; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 1 + 5 * 2);
    assert_non_null(strstr(csv, "\n100,particles,pool,pool,100,50,1000,1024,1000,32,1024,200,0,0,1,700,"
                                "0,0,0,16000100,1000,200,50,0\n"));
    assert_non_null(strstr(csv, "\n102,frame,arena,pool,3,0,0,65536,0,0,1,0,0,0,0,0,4198,9000,0,"));
    free(csv);
    /* An unwritable path fails with a message and leaves nothing behind. */
    assert_false(eng_telemetry_write_csv(t, "no_such_dir/x.csv", err, sizeof err));
    assert_true(fm_test_contains(err, "no_such_dir/x.csv"));
    assert_false(eng_telemetry_write_csv(t, NULL, err, sizeof err));
    eng_telemetry_destroy(t);
}

static void test_telemetry_csv_round_trips_through_the_reader(void **state) {
    (void)state;
    eng_telemetry *t = make_two_sources(600);
    push_frames(t, 0, 50);
    char err[256] = "";
    assert_true(eng_telemetry_write_csv(t, "tel_rt.csv", err, sizeof err));
    eng_telemetry *u = eng_telemetry_read_csv("tel_rt.csv", err, sizeof err);
    assert_non_null(u);
    assert_int_equal(eng_telemetry_frame_count(u), 50);
    assert_int_equal(eng_telemetry_source_count(u), 2);
    const eng_source_info *a = eng_telemetry_source(t, 0), *b = eng_telemetry_source(u, 0);
    assert_string_equal(b->name, "particles");
    assert_int_equal(b->kind, ENG_SOURCE_POOL);
    assert_int_equal(eng_telemetry_source(u, 1)->kind, ENG_SOURCE_ARENA);
    assert_int_equal(b->item_size, 32);
    assert_int_equal(b->chunk_items, 1024);
    assert_int_equal(b->total_allocs, a->total_allocs);
    assert_int_equal(b->total_grow_events, a->total_grow_events);
    assert_int_equal(b->peak_live, a->peak_live);
    for (uint32_t i = 0; i < 50; i++) {
        assert_memory_equal(eng_telemetry_frame(u, i), eng_telemetry_frame(t, i),
                            sizeof(eng_frame_record));
        for (uint32_t s = 0; s < 2; s++)
            assert_memory_equal(eng_telemetry_sample(u, i, s), eng_telemetry_sample(t, i, s),
                                sizeof(eng_sample));
    }
    /* Writing the loaded copy gives the same bytes. */
    assert_true(eng_telemetry_write_csv(u, "tel_rt2.csv", err, sizeof err));
    char *x = slurp("tel_rt.csv"), *y = slurp("tel_rt2.csv");
    assert_string_equal(x, y);
    free(x);
    free(y);
    eng_telemetry_destroy(u);
    eng_telemetry_destroy(t);
}

static void test_telemetry_stream_writes_each_frame_once_with_final_render_time(void **state) {
    (void)state;
    eng_telemetry *t = make_two_sources(4); /* smaller than the run: streaming keeps all */
    char err[256];
    fm_file_writer *w = fm_file_begin("tel_stream.csv", err, sizeof err);
    assert_non_null(w);
    eng_telemetry_stream_csv(t, w);
    for (uint64_t k = 0; k < 9; k++) {
        push_frames(t, k, 1);
        eng_telemetry_set_render_ns(t, 1000 + k);
    }
    eng_telemetry_stream_end(t);
    assert_true(fm_file_commit(w, err, sizeof err));
    eng_telemetry *u = eng_telemetry_read_csv("tel_stream.csv", err, sizeof err);
    assert_non_null(u);
    assert_int_equal(eng_telemetry_frame_count(u), 9);
    for (uint32_t i = 0; i < 9; i++) assert_int_equal(eng_telemetry_frame(u, i)->render_ns, 1000 + i);
    eng_telemetry_destroy(u);
    eng_telemetry_destroy(t);
}

/* ----------------------------------------------------------------- CSV in */

#define HDR ENG_CSV_COLUMNS "\n"
#define ROW_P(f) #f ",particles,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n"
#define ROW_A(f) #f ",frame,arena,pool,1,0,0,65536,0,0,1,0,0,0,0,0,64,64,0,100,50,5,1,0\n"

static void expect_csv_error(const char *text, size_t len, const char *want) {
    char err[512] = "";
    eng_telemetry *t = eng_telemetry_read_csv_mem(text, len, "in.csv", err, sizeof err);
    if (t || !fm_test_contains(err, want)) {
        print_error("input:\n%.*s\nexpected error containing '%s', got '%s'\n", (int)len, text,
                    want, t ? "(success)" : err);
        eng_telemetry_destroy(t);
        fail();
    }
}
#define EXPECT_CSV_ERROR(text, want) expect_csv_error((text), sizeof(text) - 1, (want))

static void test_telemetry_reader_names_file_and_line_of_every_problem(void **state) {
    (void)state;
    /* the valid base reads */
    char err[256];
    const char ok[] = HDR ROW_P(1) ROW_A(1) ROW_P(2) ROW_A(2);
    eng_telemetry *t = eng_telemetry_read_csv_mem(ok, sizeof ok - 1, "in.csv", err, sizeof err);
    assert_non_null(t);
    assert_int_equal(eng_telemetry_frame_count(t), 2);
    eng_telemetry_destroy(t);
    /* columns in another order and extra columns are fine */
    const char reordered[] =
        "extra,pool,frame,kind,backend,allocs,frees,live,capacity,peak_live,item_size,chunk_items,"
        "alloc_ns,grow_events,grow_ns,ahead_grow_events,ahead_grow_ns,bytes_used,high_water,"
        "commit_events,frame_ns,sim_ns,alloc_total_ns,maint_ns,render_ns\n"
        "zz,p,7,pool,malloc,1,0,1,1,1,32,1,5,0,0,0,0,0,0,0,100,50,5,1,0\n";
    t = eng_telemetry_read_csv_mem(reordered, sizeof reordered - 1, "in.csv", err, sizeof err);
    assert_non_null(t);
    assert_int_equal(eng_telemetry_frame(t, 0)->frame, 7);
    assert_int_equal(eng_telemetry_source(t, 0)->backend, ENG_BACKEND_MALLOC);
    eng_telemetry_destroy(t);

    expect_csv_error("", 0, "in.csv:1: empty file");
    EXPECT_CSV_ERROR(HDR, "in.csv:1: no data rows");
    EXPECT_CSV_ERROR("frame,pool,kind\n1,a,pool\n", "in.csv:1: missing column 'backend'");
    EXPECT_CSV_ERROR(HDR ROW_P(1) "1,frame,arena,pool,1,0\n", "in.csv:3: truncated line (6 of 24 fields)");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0",
                     "in.csv:2: truncated line (the file ends without a newline)");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0,9\n",
                     "in.csv:2: too many fields");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,5x,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad number '5x' in column 'alloc_ns'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,-1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad number '-1' in column 'allocs'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,99999999999999999999,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "bad number '99999999999999999999'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad number '' in column 'alloc_ns'");
    EXPECT_CSV_ERROR(HDR "1,particles,heap,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad kind 'heap'");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,slab,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad backend 'slab'");
    EXPECT_CSV_ERROR(HDR "1,,pool,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: bad pool name");
    EXPECT_CSV_ERROR(HDR "1,particles,pool,pool,1,0,1,1024,1,32,0,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:2: chunk_items must be at least 1");
    EXPECT_CSV_ERROR(HDR ROW_P(2) ROW_A(2) ROW_P(1) ROW_A(1), "in.csv:4: frame 1 after frame 2");
    EXPECT_CSV_ERROR(HDR ROW_P(1) ROW_A(1) ROW_P(2), "in.csv:4: frame 2 has no row for pool 'frame'");
    EXPECT_CSV_ERROR(HDR ROW_P(1) ROW_P(1), "in.csv:3: pool 'particles' appears twice in frame 1");
    EXPECT_CSV_ERROR(HDR ROW_P(1) ROW_P(2) ROW_A(2), "in.csv:4: pool 'frame' is not in the first frame");
    EXPECT_CSV_ERROR(HDR ROW_P(1) "2,particles,arena,pool,1,0,1,1024,1,32,1024,5,0,0,0,0,0,0,0,100,50,5,1,0\n",
                     "in.csv:3: pool 'particles' changes kind");
    /* binary input: a PNG header, and a NUL in the middle of a row */
    EXPECT_CSV_ERROR("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "in.csv:2: binary content (byte 0x1a)");
    const char nul[] = HDR "1,particles,pool\0,pool\n";
    expect_csv_error(nul, sizeof nul - 1, "in.csv:2: binary content (byte 0x00)");
    /* files */
    assert_null(eng_telemetry_read_csv("no_such_file.csv", err, sizeof err));
    assert_true(fm_test_contains(err, "no_such_file.csv: cannot open: No such file or directory"));
    write_file("tel_bad.csv", HDR "1,particles,pool,pool,1,0,1,1024,1,32,1024,zz,0,0,0,0,0,0,0,100,50,5,1,0\n");
    assert_null(eng_telemetry_read_csv("tel_bad.csv", err, sizeof err));
    assert_true(fm_test_contains(err, "tel_bad.csv:2: bad number 'zz'"));
    assert_null(eng_telemetry_read_csv(NULL, err, sizeof err));
    /* err may be NULL */
    assert_null(eng_telemetry_read_csv_mem("x", 1, NULL, NULL, 0));
}

/* ------------------------------------------------------------------ trace */

#ifdef FM_JSON_CHECKED_ON_HOST
/* A cross build run under an emulator (wine) cannot start the host's
 * python3: ctest's engine_telemetry_json runs the same check on the files
 * this suite leaves, after it. */
static int json_check(const char *path) {
    print_message("[ did not apply ] checking %s here: python3 runs on the host (ctest's "
                  "engine_telemetry_json checks it after this suite)\n",
                  path);
    return -1;
}
#define JSON_CHECK_EQ(path, rc) (void)json_check(path)
#define JSON_CHECK_NE(path, rc) (void)json_check(path)
#else
#define JSON_CHECK_EQ(path, rc) assert_int_equal(json_check(path), rc)
#define JSON_CHECK_NE(path, rc) assert_int_not_equal(json_check(path), rc)
static int json_check(const char *path) {
#ifdef FM_PYTHON3
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "e=d[\"traceEvents\"]; "
             "assert any(x[\"ph\"]==\"X\" for x in e); "
             "assert all(\"ph\" in x and \"name\" in x for x in e)' %s",
             FM_PYTHON3, path);
    return system(cmd);
#else
    /* tools/dev installs python3; a build without it must not pass this. */
    (void)path;
    fail_msg("python3 was not found when configuring: the trace JSON cannot be checked");
    return 1;
#endif
}
#endif

static void test_telemetry_trace_is_json_with_frames_and_growth_events(void **state) {
    (void)state;
    eng_telemetry *t = make_two_sources(32);
    push_frames(t, 1, 7);
    char err[256];
    assert_true(eng_telemetry_write_trace(t, "tel_trace.json", err, sizeof err));
    JSON_CHECK_EQ("tel_trace.json", 0);
    char *j = slurp("tel_trace.json");
    int frames = 0, grows = 0, aheads = 0;
    for (const char *p = j; (p = strstr(p, "\"ph\":\"X\",\"pid\":1,\"tid\":1")); p++) frames++;
    for (const char *p = j; (p = strstr(p, "\"name\":\"grow particles\",\"ph\":\"i\"")); p++) grows++;
    for (const char *p = j; (p = strstr(p, "\"name\":\"grow-ahead particles\",\"ph\":\"i\"")); p++) aheads++;
    assert_int_equal(frames, 7);
    assert_int_equal(grows, 2);  /* frames 3 and 6 */
    assert_int_equal(aheads, 1); /* frame 5 */
    free(j);
    /* The check itself fails on broken JSON. */
    write_file("tel_broken.json", "{\"traceEvents\":[{\"ph\":\"X\",}]");
    JSON_CHECK_NE("tel_broken.json", 0);
    assert_false(eng_telemetry_write_trace(t, "no_such_dir/t.json", err, sizeof err));
    assert_true(fm_test_contains(err, "no_such_dir/t.json"));
    struct stat st;
    assert_int_not_equal(stat("no_such_dir", &st), 0);
    eng_telemetry_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_telemetry_registry_finds_names_and_refuses_bad_ones),
        cmocka_unit_test(test_telemetry_ring_wraps_keeping_the_newest_frames),
        cmocka_unit_test(test_telemetry_suggest_capacity_rounds_to_whole_chunks),
        cmocka_unit_test(test_telemetry_suggest_capacity_saturates_at_extreme_values),
        cmocka_unit_test(test_telemetry_totals_saturate_instead_of_wrapping),
        cmocka_unit_test(test_telemetry_csv_has_header_and_a_row_per_frame_and_source),
        cmocka_unit_test(test_telemetry_csv_round_trips_through_the_reader),
        cmocka_unit_test(test_telemetry_stream_writes_each_frame_once_with_final_render_time),
        cmocka_unit_test(test_telemetry_reader_names_file_and_line_of_every_problem),
        cmocka_unit_test(test_telemetry_trace_is_json_with_frames_and_growth_events),
    };
    return cmocka_run_group_tests_name("engine_telemetry", tests, NULL, NULL);
}
