/* tests/headers/test_headers.c: every public header of framemem (and of the
 * engine and overlay libraries) and every macro, as a caller uses them, in a
 * short real scenario: pools with typed functions and handles, arenas and
 * frame arenas, closures with an event and a defer queue, the clock, errors,
 * a file written whole and read back, telemetry with grow-ahead, a config
 * applied and a tuned one written, a headless engine run.
 *
 * One source for every language mode a caller may use: C99 and C11 as C,
 * C++17 and C++20 through test_headers.cpp, built with gcc/g++ by CMake and
 * with clang/clang++ (and gcc in gnu99) by check_headers.sh, always with
 * -Wall -Wextra -pedantic -Werror. Where C++ spells a thing differently,
 * both spellings are here (README: C++). Exit status: the number of failed
 * checks (0: all passed). */
#include "framemem/framemem.h"
#include "framemem/file.h"
#include "framemem/config.h"
#include "framemem/telemetry.h"

#include "engine/classic_pool.h"
#include "engine/engine.h"
#ifdef FM_TEST_OVERLAY
#include "overlay/draw.h"
#include "overlay/overlay.h"
#include "overlay/png.h"
#endif

#include <stdio.h>
#include <string.h>

#include "check.h"

/* Optimised GNU builds compile the inline fast paths into this caller, in
 * C++ and C99 too; MSVC mode (check_headers.sh msvc) leaves them out. */
#if defined(__GNUC__) && defined(NDEBUG) && !defined(FM__SANITIZED) && !defined(FM_NO_INLINE) && \
    !defined(FM_TRACK_SITES) && !defined(FM__CLOSURE_INLINE)
#error "an optimised GNU build without the inline paths"
#endif
#if defined(FM_TEST_MSVC_MODE) && (defined(FM__GNU) || defined(FM__INLINE))
#error "MSVC mode with the GNU paths"
#endif
#if defined(FM__INLINE)
#define INLINE_PATHS "inline paths"
#else
#define INLINE_PATHS "library calls"
#endif


/* A create call's desc: C takes the address of the literal, C++ passes it by
 * reference (C++ has no compound literal to take the address of). */
#ifdef __cplusplus
#define DESC(d) (d)
#else
#define DESC(d) (&(d))
#endif

/* ------------------------------------------------------------- support */

/* Errors as the handler sees them. */
static int error_count[FM_ERROR_COUNT];
static char last_message[256];
static void on_error(fm_error err, const char *message, void *user) {
    (void)user;
    if ((int)err >= 0 && err < FM_ERROR_COUNT) error_count[err]++;
    snprintf(last_message, sizeof last_message, "%s", message);
}

/* A backing allocator that counts what it holds. */
typedef struct counter {
    long blocks;
    size_t bytes;
} counter;
static void *counting_alloc(size_t size, size_t align, void *user) {
    static const fm_allocator system_allocator = FM_ZERO_INIT;
    counter *c = (counter *)user;
    void *p = fm_allocator_alloc(&system_allocator, size, align);
    if (p) c->blocks++, c->bytes += size;
    return p;
}
static void counting_free(void *ptr, size_t size, void *user) {
    static const fm_allocator system_allocator = FM_ZERO_INIT;
    counter *c = (counter *)user;
    c->blocks--, c->bytes -= size;
    fm_allocator_free(&system_allocator, ptr, size);
}

/* ---------------------------------------------------------------- pools */

typedef struct particle {
    float x, y, vx, vy;
    double life;
} particle;
FM_POOL_DECLARE_TYPED(particle, particle_pool)
FM_HANDLE_TYPE(particle_ref);
FM_POOL_DECLARE_HANDLE(particle, particle_pool, particle_ref)
/* Leak reports name the caller's line through the typed name (pool.h). */
#define particle_pool_new(pool) particle_pool_new_at((pool), FM_SITE)

static void particle_ctor(void *item, void *user) {
    ((particle *)item)->life = 1.0;
    ++*(int *)user;
}
static void particle_dtor(void *item, void *user) {
    (void)item;
    --*(int *)user;
}

static void test_pool_desc_takes_any_fields_in_any_order(void) {
    fm_pool_desc none = FM_POOL_DESC(particle);
    CHECK(strcmp(none.type_name, "particle") == 0);
    CHECK(none.item_size == sizeof(particle) && none.item_align == FM_ALIGNOF(particle));
    CHECK(none.name == NULL && none.initial_capacity == 0 && none.sync == FM_SYNC_NONE);

    counter held = {0, 0};
    /* Out of declaration order, nested fields included. */
    fm_pool_desc some = FM_POOL_DESC(particle, .sync = FM_SYNC_MUTEX, .name = "sparks",
                                     .max_capacity = 128, .initial_capacity = 64,
                                     .growth = FM_GROWTH_LINEAR, .allocator.free = counting_free,
                                     .allocator.alloc = counting_alloc, .allocator.user = &held);
    CHECK(strcmp(some.name, "sparks") == 0 && some.sync == FM_SYNC_MUTEX);
    CHECK(some.initial_capacity == 64 && some.max_capacity == 128);
    CHECK(some.growth == FM_GROWTH_LINEAR && some.allocator.user == &held);
    CHECK(some.item_size == sizeof(particle) && some.grow_factor == 0.0f);

    fm_pool *pool = fm_pool_create(&some);
    CHECK(pool != NULL && held.blocks > 0);
    fm_pool_desc got = fm_pool_get_desc(pool);
    CHECK(got.initial_capacity >= 64 && got.max_capacity == 128);
    CHECK(got.item_align == FM_ALIGNOF(particle));
    fm_pool_destroy(pool);
    CHECK(held.blocks == 0 && held.bytes == 0);

    /* fm_pool_desc_check names the broken rule. */
    char msg[128] = "";
    CHECK(fm_pool_desc_check(DESC(FM_POOL_DESC(particle, .grow_factor = 0.5f)), msg, sizeof msg) ==
          FM_ERR_INVALID_ARG);
    CHECK(strstr(msg, "grow_factor") != NULL);
}

static void test_pool_items_handles_and_misuse(void) {
    int constructed = 0;
    fm_pool *pool = fm_pool_create(DESC(FM_POOL_DESC(particle, .initial_capacity = 16,
                                                     .ctor = particle_ctor,
                                                     .dtor = particle_dtor, .user = &constructed)));
    CHECK(pool != NULL && strcmp(fm_pool_name(pool), "particle") == 0);

    particle *p = particle_pool_alloc(pool);
    CHECK(p != NULL && fm_is_aligned(p, FM_ALIGNOF(particle)));
    p->x = 3.0f;
    particle_ref ref = {fm_pool_handle(pool, p)};
    particle_ref none = {FM_HANDLE_NULL};
    CHECK(!fm_handle_is_null(ref.h) && fm_handle_is_null(none.h));
    CHECK(!fm_handle_equal(ref.h, none.h) && fm_handle_equal(ref.h, ref.h));
    CHECK(fm_pool_resolve(pool, ref.h) == p && fm_pool_owns(pool, p));
    particle_ref typed = particle_pool_handle(pool, p);
    CHECK(fm_handle_equal(typed.h, ref.h) && particle_pool_resolve(pool, typed) == p);

    particle_pool_free(pool, p);
    CHECK(fm_pool_resolve(pool, ref.h) == NULL && particle_pool_resolve(pool, typed) == NULL);
    int before = error_count[FM_ERR_DOUBLE_FREE];
    particle_pool_free(pool, p); /* reported, nothing changes */
    CHECK(error_count[FM_ERR_DOUBLE_FREE] == before + 1 && fm_last_error() == FM_ERR_DOUBLE_FREE);
    CHECK(strstr(last_message, "particle") != NULL);

    particle *q = particle_pool_new(pool);
    CHECK(q != NULL && q->life == 1.0 && constructed == 1);
    fm_pool_retain(pool, q);
    CHECK(fm_pool_refcount(pool, q) == 2);
    CHECK(!fm_pool_release(pool, q) && fm_pool_release(pool, q) && constructed == 0);
    particle *r = particle_pool_new(pool);
    particle *s = (particle_pool_new)(pool); /* the function under the site macro */
    particle *t = particle_pool_alloc_at(pool, FM_SITE);
    CHECK(s != NULL && t != NULL && constructed == 2);
    particle_pool_delete(pool, r);
    particle_pool_delete(pool, s);
    particle_pool_free(pool, t);
    CHECK(constructed == 0);

    void *batch[8];
    CHECK(fm_pool_alloc_n(pool, batch, 8) == 8);
    void *one = (fm_pool_alloc)(pool); /* the library's function, in any build */
    CHECK(one != NULL);
    (fm_pool_free)(pool, one);
    fm_pool_free_n(pool, batch, 8);

    fm_pool_stats st;
    fm_pool_get_stats(pool, &st);
    uint64_t fields = 0;
#define COUNT_FIELD(field, desc) fields += (sizeof st.field == 8 && desc[0] != 0) ? 1u : 0u;
    FM_POOL_STATS_FIELDS(COUNT_FIELD)
#undef COUNT_FIELD
    CHECK(fields >= 20 && st.live == 0 && st.total_allocs == 14 && st.total_frees == 14);
    CHECK(st.misuse_count == 1 && st.item_align == FM_ALIGNOF(particle));
    CHECK(fm_pool_check(pool) == FM_OK && fm_pool_trim(pool) == 0);
    fm_pool_destroy(pool);
}

/* ------------------------------------------------------------------ tags */

static void test_tags_count_growth_and_refuse_past_the_budget(void) {
    fm_tag *level = fm_tag_create(DESC(FM_DESC(fm_tag_desc, .name = "level",
                                               .hard_limit_bytes = 4u << 20)));
    fm_tag *props = fm_tag_create(DESC(FM_DESC(fm_tag_desc, .name = "props", .parent = level)));
    CHECK(level != NULL && props != NULL && strcmp(fm_tag_name(props), "props") == 0);
    char msg[128] = "";
    CHECK(fm_tag_desc_check(DESC(FM_DESC(fm_tag_desc, .soft_limit_bytes = 2,
                                         .hard_limit_bytes = 1)),
                            msg, sizeof msg) == FM_ERR_INVALID_ARG);
    fm_pool *pool = fm_pool_create(DESC(FM_POOL_DESC(particle, .tag = props)));
    fm_arena *arena = fm_arena_create(DESC(FM_DESC(fm_arena_desc, .tag = props)));
    CHECK(pool != NULL && arena != NULL && fm_arena_alloc(arena, 100, 8) != NULL);
    fm_tag_stats st;
    fm_tag_get_stats(level, &st);
    CHECK(st.committed > 0 && st.children == 1 && st.objects == 0 && st.live >= 100);
    int refused = error_count[FM_ERR_BUDGET];
    CHECK(!fm_pool_reserve(pool, (8u << 20) / (uint32_t)sizeof(particle)));
    CHECK(error_count[FM_ERR_BUDGET] == refused + 1 && fm_last_error() == FM_ERR_BUDGET);
    CHECK(fm_error_is_warning(FM_WARN_BUDGET) && !fm_error_is_warning(FM_ERR_BUDGET));
    CHECK(fm_tag_get_desc(props).parent == level);
    fm_pool_destroy(pool);
    fm_arena_destroy(arena);
    fm_tag_destroy(props);
    fm_tag_destroy(level);
}

/* --------------------------------------------------------------- arenas */

typedef struct vec3 {
    double x, y, z;
} vec3;

static void test_arenas_allocate_zeroed_typed_memory_and_rewind(void) {
    fm_arena *scratch = fm_arena_create(
        DESC(FM_DESC(fm_arena_desc, .reserve_bytes = (size_t)1 << 20, .name = "scratch")));
    CHECK(scratch != NULL && strcmp(fm_arena_name(scratch), "scratch") == 0);

    fm_arena_mark m = fm_arena_get_mark(scratch);
    vec3 *pts = FM_ARENA_NEW_ARRAY(scratch, vec3, 100);
    vec3 *one = FM_ARENA_NEW(scratch, vec3);
    CHECK(pts != NULL && one != NULL && fm_is_aligned(pts, FM_ALIGNOF(vec3)));
    CHECK(pts[99].z == 0.0 && one->x == 0.0);
    void *plain = fm_arena_alloc(scratch, 10, 0);
    CHECK(plain != NULL && fm_is_aligned(plain, FM_DEFAULT_ALIGN));
    CHECK(fm_arena_owns(scratch, pts, 100 * sizeof *pts));
    fm_arena_rewind(scratch, m);
    fm_arena_stats st;
    fm_arena_get_stats(scratch, &st);
    CHECK(st.used == 0 && st.total_allocs == 3 && st.rewinds == 1);
#define ARENA_FIELD(field, desc) CHECK(sizeof st.field == 8 && desc[0] != 0);
    FM_ARENA_STATS_FIELDS(ARENA_FIELD)
#undef ARENA_FIELD
    CHECK(FM_ARENA_NEW_ARRAY(scratch, vec3, SIZE_MAX / 2) == NULL &&
          fm_last_error() == FM_ERR_INVALID_ARG);
    fm_arena_destroy(scratch);

    fm_frame_arena *frames = fm_frame_arena_create(
        DESC(FM_DESC(fm_frame_arena_desc, .frames = 3, .arena.commit_step = 65536)));
    fm_frame_arena *defaults = fm_frame_arena_create(DESC(FM_LITERAL(fm_frame_arena_desc)
                                                              FM_ZERO_INIT));
    CHECK(frames != NULL && defaults != NULL);
    void *a = fm_frame_alloc(frames, 64, 16);
    CHECK(a != NULL && fm_is_aligned(a, 16));
    fm_frame_arena_advance(frames);
    CHECK(FM_ARENA_NEW(fm_frame_arena_current(frames), vec3) != NULL);
    fm_frame_arena_stats fs;
    fm_frame_arena_get_stats(frames, &fs);
    CHECK(fs.frame == 1 && fs.total_allocs == 2 && FM_FRAME_ARENA_MAX_FRAMES >= 3);
    CHECK(fm_frame_arena_desc_check(DESC(FM_DESC(fm_frame_arena_desc, .frames = 1)), NULL, 0) ==
          FM_ERR_INVALID_ARG);
    fm_frame_arena_destroy(defaults);
    fm_frame_arena_destroy(frames);
}

/* ------------------------------------------------------------- closures */

typedef struct hit {
    int target, damage;
} hit;
typedef struct hit_log {
    int calls, last_target, total_damage;
    void *last_arg;
} hit_log;
static hit_log hits;
static void on_hit(void *capture, void *arg) {
    const hit *h = (const hit *)capture;
    hits.calls++;
    hits.last_target = h->target;
    hits.total_damage += h->damage;
    hits.last_arg = arg;
}

static void test_closures_events_and_deferred_calls(void) {
    memset(&hits, 0, sizeof hits);
    fm_closure_pool *closures =
        fm_closure_pool_create(DESC(FM_LITERAL(fm_closure_pool_desc) FM_ZERO_INIT));
    fm_event *hit_event = fm_event_create(DESC(FM_DESC(fm_event_desc, .name = "hit")));
    fm_defer_queue *later = fm_defer_queue_create(DESC(FM_DESC(fm_defer_queue_desc,
                                                               .initial_capacity = 4)));
    CHECK(closures != NULL && hit_event != NULL && later != NULL);

    /* Fields in reverse order. */
    fm_closure *c = FM_CLOSURE(closures, on_hit, hit, .damage = 3, .target = 7);
    CHECK(c != NULL && fm_closure_capture_size(c) == sizeof(hit));
    fm_handle sub = fm_event_subscribe(hit_event, c);
    CHECK(!fm_handle_is_null(sub) && fm_event_count(hit_event) == 1);
    fm_closure_release(c); /* the event holds its reference */
    int world = 0;
    fm_event_emit(hit_event, &world);
    CHECK(hits.calls == 1 && hits.last_target == 7 && hits.total_damage == 3);
    CHECK(hits.last_arg == &world);

    fm_closure *respawn = FM_CLOSURE(closures, on_hit, hit, .target = 9, .damage = 1);
    CHECK(fm_defer(later, respawn, 1));
    fm_closure_release(respawn);
    CHECK(fm_defer_run(later) == 0 && fm_defer_pending(later) == 1);
    CHECK(fm_defer_run(later) == 1 && hits.calls == 2 && hits.last_target == 9);

    fm_frame_arena *frame = fm_frame_arena_create(DESC(FM_DESC(fm_frame_arena_desc, .frames = 2)));
    fm_closure *f = FM_CLOSURE_FRAME(frame, on_hit, hit, .target = 11, .damage = 5);
    CHECK(f != NULL);
    fm_closure_call(f, NULL);
    CHECK(hits.calls == 3 && hits.last_target == 11 && hits.total_damage == 9);
    fm_frame_arena_destroy(frame);

    CHECK(fm_event_unsubscribe(hit_event, sub) && fm_event_count(hit_event) == 0);
    CHECK(!fm_event_unsubscribe(hit_event, sub) && fm_last_error() == FM_ERR_STALE_HANDLE);
    fm_closure_pool_stats cs;
    fm_closure_pool_get_stats(closures, &cs);
    CHECK(cs.live == 0 && cs.total_made == 2 && FM_CLOSURE_MAX_CLASSES >= cs.classes);
    fm_defer_queue_destroy(later);
    fm_event_destroy(hit_event);
    fm_closure_pool_destroy(closures);
}

/* ------------------------------------------- timing and profiler hooks */

static void count_hook_alloc(const void *ptr, size_t size, const char *name, void *user) {
    *(int *)user += ptr != NULL && size == sizeof(particle) && name != NULL;
}

static void test_pool_timing_and_profiler_hooks(void) {
    fm_pool *pool = fm_pool_create(DESC(FM_POOL_DESC(particle, .name = "timed",
                                                     .timing = FM_POOL_TIMING_EVERY_CALL)));
    CHECK(pool != NULL && fm_pool_get_desc(pool).timing == FM_POOL_TIMING_EVERY_CALL);
    int events = 0;
    fm_hooks hooks = FM_ZERO_INIT;
    hooks.alloc = count_hook_alloc;
    hooks.user = &events;
    bool installed = fm_set_hooks(&hooks);
#ifdef FM_HOOKS
    CHECK(installed);
#else
    CHECK(!installed && fm_last_error() == FM_ERR_UNSUPPORTED);
#endif
    particle *p = (particle *)fm_pool_alloc(pool); /* inline or not, timed and announced */
    fm_pool_free(pool, p);
    fm_hooks_frame_end();
    CHECK(fm_set_hooks(NULL) && events == (installed ? 1 : 0));
    fm_pool_stats st;
    fm_pool_get_stats(pool, &st);
    CHECK(st.timed_calls == 2 && st.alloc_ns_total > 0 && st.free_ns_total > 0);
    CHECK(FM_POOL_TIMING_SAMPLE > 1 && FM_POOL_TIMING_COUNT == 3);
    fm_pool_destroy(pool);
}

/* ------------------------------------------------- clock, errors, files */

static void test_clock_errors_and_helpers(void) {
    fm_clock_init();
    uint64_t t0 = fm_clock_now();
    uint64_t t1 = (fm_clock_now)(); /* the library's, in any build: the same ticks */
    CHECK(t1 >= t0 && fm_clock_ticks_per_sec() > 0.0 && fm_clock_source()[0] != 0);
#ifdef FM_CLOCK_IS_NS
    CHECK(fm_clock_to_ns(1000) == 1000);
#else
    CHECK(fm_clock_to_ns((uint64_t)fm_clock_ticks_per_sec()) > 900000000u);
#endif

    int listed = 0;
#define CHECK_NAME(name, msg)                                                                     \
    CHECK(strcmp(fm_error_name(name), #name) == 0 && strcmp(fm_error_str(name), msg) == 0);       \
    listed++;
    FM_ERROR_LIST(CHECK_NAME)
#undef CHECK_NAME
    CHECK(listed == FM_ERROR_COUNT);
    fm_report_error(FM_ERR_CORRUPT, "%s %d", "reported", 42);
    CHECK(fm_last_error() == FM_ERR_CORRUPT && strcmp(fm_last_error_message(), "reported 42") == 0);
    fm_clear_error();
    CHECK(fm_last_error() == FM_OK);
    CHECK(strcmp(fm_sync_name(FM_SYNC_LOCKFREE), "") != 0 && FM_SYNC_COUNT == 4);
    CHECK(strcmp(fm_growth_name(FM_GROWTH_FIXED), "") != 0 && FM_GROWTH_COUNT == 3);
    CHECK(fm_align_up(17, 16) == 32 && FM_IS_POW2(FM_MAX_ALIGN) && !FM_IS_POW2(12));
    CHECK(FM_DEFAULT_ALIGN == 16 && FM_POOL_MAX_ITEM_SIZE == (size_t)1 << 24);
    fm_allocator half = {counting_alloc, NULL, NULL};
    fm_allocator none = FM_ZERO_INIT;
    CHECK(!fm_allocator_valid(&half) && fm_allocator_valid(&none));
}

static void test_file_written_whole_and_read_back(const char *path) {
    char err[FM_FILE_PATH_MAX + 128];
    const char text[] = "frame,ns\n1,2\n";
    CHECK(fm_file_write_whole(path, text, sizeof text - 1, err, sizeof err));
    fm_file_data d;
    CHECK(fm_file_read(path, 1024, NULL, &d, err, sizeof err));
    CHECK(d.size == sizeof text - 1 && strcmp(d.data, text) == 0);
    fm_file_data_release(&d);
    fm_file_writer *w = fm_file_begin(path, err, sizeof err);
    CHECK(w != NULL && fm_file_printf(w, "%d,%s\n", 7, "x") && fm_file_ok(w));
    CHECK(fm_file_commit(w, err, sizeof err));
    CHECK(fm_file_read(path, 2, NULL, &d, err, sizeof err) == false && strstr(err, "too large"));
    fm_file_data_release(&d);
    CHECK(remove(path) == 0);
}

/* ------------------------------------------------- engine and overlay */

/* ------------------------------------------------- telemetry and config */

typedef struct spark {
    float x, y, life;
    char trail[116];
} spark;

static void test_telemetry_and_config_of_a_callers_pools(const char *path) {
    char err[256] = "";
    static const char ini[] = "[pool.sparks]\ninitial_capacity = 100\ngrow_ahead = on\n"
                              "[tag.fx]\nsoft_limit_bytes = 4194304\n";
    fm_config *cfg = fm_config_load_mem(ini, sizeof ini - 1, "sparks.ini", NULL, err, sizeof err);
    CHECK(cfg != NULL && fm_config_problem_count(cfg) == 0 && fm_config_problems(cfg)[0] == 0);
    fm_tag_desc td = FM_ZERO_INIT;
    td.name = "fx";
    fm_pool_desc pd = FM_POOL_DESC(spark, .name = "sparks");
    /* one name for every desc in C11 and C++; C99 names the kind */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
    CHECK(fm_config_apply(cfg, &td) == 1 && fm_config_apply(cfg, &pd) == 1);
#else
    CHECK(fm_config_apply_tag(cfg, &td) == 1 && fm_config_apply_pool(cfg, &pd) == 1);
#endif
    CHECK(pd.initial_capacity == 100 && pd.grow_ahead && td.soft_limit_bytes == 4194304);
    CHECK(fm_config_report_unused(cfg) == 0);
    fm_tag *fx = fm_tag_create(DESC(td));
    pd.tag = fx;
    fm_pool *sparks = fm_pool_create(DESC(pd));
    fm_telemetry *tel = fm_telemetry_create(DESC(FM_DESC(fm_telemetry_desc, .frames = 8)));
    CHECK(fx != NULL && sparks != NULL && tel != NULL);
    CHECK(fm_telemetry_add_pool(tel, sparks) == 0 && fm_telemetry_add_tag(tel, fx) == 1);
    fm_telemetry_counters heap = FM_ZERO_INIT;
    CHECK(fm_telemetry_add_counters(tel, "heap", &heap) == 2);
    void *live[400];
    for (int f = 0; f < 4; f++) {
        fm_telemetry_frame_begin(tel);
        for (int i = 0; i < 100; i++) live[f * 100 + i] = fm_pool_alloc(sparks);
        heap.total_allocs += 3;
        heap.live += 3;
        fm_telemetry_grow_ahead(tel);
        fm_telemetry_frame_end(tel);
        fm_telemetry_set_render_ns(tel, 1000);
    }
    const fm_telemetry_source *src = fm_telemetry_get_source(tel, 0);
    CHECK(src != NULL && src->kind == FM_TELEMETRY_POOL && src->total_allocs == 400);
    CHECK(src->total_ahead_grow_events > 0 && fm_telemetry_get_frame(tel, 3)->render_ns == 1000);
    CHECK(fm_telemetry_get_source(tel, 1)->soft_limit == 4194304);
    CHECK(fm_telemetry_get_sample(tel, 3, 2)->live == 12);
    CHECK(fm_telemetry_write_csv(tel, path, err, sizeof err));
    fm_telemetry *back = fm_telemetry_read_csv(path, err, sizeof err);
    CHECK(back != NULL && fm_telemetry_frame_count(back) == 4);
    CHECK(fm_config_write_tuned(back, path, 1.25, err, sizeof err));
    fm_config *tuned = fm_config_load(path, NULL, err, sizeof err);
    fm_pool_desc again = FM_POOL_DESC(spark, .name = "sparks");
    CHECK(tuned != NULL && fm_config_apply_pool(tuned, &again) == 1 && again.initial_capacity >= 400);
    CHECK(strcmp(fm_telemetry_kind_name(FM_TELEMETRY_TAG), "tag") == 0);
    CHECK(fm_telemetry_suggest_capacity(400, 1.25, 100) == 500);
    fm_config_destroy(tuned);
    fm_telemetry_destroy(back);
    fm_telemetry_destroy(tel);
    for (int i = 0; i < 400; i++) fm_pool_free(sparks, live[i]);
    fm_pool_destroy(sparks);
    fm_tag_destroy(fx);
    fm_config_destroy(cfg);
    CHECK(remove(path) == 0);
}

/* ------------------------------------------------- engine and overlay */

static void test_engine_runs_headless(void) {
    eng_entity none = {FM_HANDLE_NULL};
    CHECK(fm_handle_is_null(none.h));
    eng_desc desc = FM_ZERO_INIT;
    desc.seed = 7;
    desc.scale = 0.05;
    eng_run_result out;
    char err[256] = "";
    fm_telemetry *t = eng_run_headless(&desc, 3, &out, err, sizeof err);
    CHECK(t != NULL && out.frames == 3 && fm_telemetry_frame_count(t) == 3);
    CHECK(fm_telemetry_source_count(t) > 0 && fm_telemetry_source_count(t) <=
                                                   FM_TELEMETRY_MAX_SOURCES);
    /* Every sample and frame field is a CSV column. */
    const fm_telemetry_sample *s = fm_telemetry_get_sample(t, 2, 0);
    const fm_telemetry_frame *f = fm_telemetry_get_frame(t, 2);
    CHECK(s != NULL && f != NULL && f->frame_ns > 0);
    int columns = 0;
    const char *all = FM_TELEMETRY_CSV_COLUMNS "," FM_TELEMETRY_CSV_COLUMNS_ADDED;
#define COLUMN(field, desc)                                                                        \
    columns += strstr(all, #field) != NULL && desc[0] != 0 && sizeof s->field == 8;
    FM_TELEMETRY_SAMPLE_FIELDS(COLUMN)
#undef COLUMN
#define COLUMN(field, desc)                                                                        \
    columns += strstr(all, #field) != NULL && desc[0] != 0 && sizeof f->field == 8;
    FM_TELEMETRY_FRAME_FIELDS(COLUMN)
#undef COLUMN
    CHECK(columns == 20 && strcmp(eng_backend_name(ENG_BACKEND_POOL), "pool") == 0);
    fm_telemetry_destroy(t);
    /* The classic eager pool: its inline alloc and free, a doubling growth. */
    eng_classic_pool *cp = eng_classic_pool_create(24, 2);
    CHECK(cp != NULL);
    if (cp) {
        void *a = eng_classic_pool_alloc(cp), *b = eng_classic_pool_alloc(cp);
        void *c = eng_classic_pool_alloc(cp); /* the third grows a block of 4 */
        eng_classic_pool_stats st;
        eng_classic_pool_get_stats(cp, &st);
        CHECK(a && b && c && st.grow_events == 1 && st.capacity == 6 &&
              eng_classic_pool_free_count(cp) == 3);
        eng_classic_pool_free(cp, b);
        CHECK(eng_classic_pool_alloc(cp) == b);
        eng_classic_pool_destroy(cp);
    }
#ifdef FM_TEST_OVERLAY
    CHECK(ovl_text_width("framemem", 1.0f) > 0.0f && OVL_GROWTH_RGB == 0xFF00FFu);
    CHECK(OVL_TEXT_LINE_HEIGHT > 0 && OVL_PALETTE_SIZE > 0);
#endif
}

int main(int argc, char **argv) {
    (void)argc;
    fm_set_error_handler(on_error, NULL);
    test_pool_desc_takes_any_fields_in_any_order();
    test_pool_items_handles_and_misuse();
    test_tags_count_growth_and_refuse_past_the_budget();
    test_arenas_allocate_zeroed_typed_memory_and_rewind();
    test_closures_events_and_deferred_calls();
    test_pool_timing_and_profiler_hooks();
    test_clock_errors_and_helpers();
    char path[FM_FILE_PATH_MAX];
    snprintf(path, sizeof path, "%s.txt", argv[0]);
    test_file_written_whole_and_read_back(path);
    snprintf(path, sizeof path, "%s.csv", argv[0]);
    test_telemetry_and_config_of_a_callers_pools(path);
    test_engine_runs_headless();
    fm_set_error_handler(NULL, NULL);
    printf("%s: %s, " INLINE_PATHS ", %d failed check(s)\n", argv[0],
#if defined(__cplusplus)
           "C++",
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
           "C11",
#else
           "C99",
#endif
           failures);
    return failures;
}
