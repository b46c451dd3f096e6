/* tests/memory/test_null_args.c: every public function of framemem called
 * with a NULL object (the rule in framemem/base.h), from one table that is
 * checked against the headers of memory/include/framemem. */
#include "fm_null_table.h"

#include "framemem/config.h"
#include "framemem/file.h"
#include "framemem/framemem.h"
#include "framemem/telemetry.h"

#include <string.h>

/* Real objects for the arguments that are not under test: each row passes
 * NULL for the object and real values for the rest, so only the NULL can
 * be what the function refuses. */
static struct {
    fm_tag *tag; /* the pool's */
    fm_pool *pool;
    void *item; /* live in pool */
    fm_handle handle;
    fm_arena *arena;
    fm_frame_arena *frame;
    fm_closure_pool *closures;
    fm_closure *closure; /* pooled, count 1 */
    fm_event *event;
    fm_defer_queue *queue;
    int calls; /* of the callbacks below: must stay 0 */
} g;

static void count_call(void *a, void *b) {
    (void)a, (void)b;
    g.calls++;
}

/* The array or struct at p still holds the 0x5A bytes put there first. */
static bool untouched(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0x5A) return false;
    return true;
}

#define OUT_ZEROED(T, call_with_out)                                            \
    T out_;                                                                     \
    memset(&out_, 0x5A, sizeof out_);                                           \
    call_with_out;                                                              \
    return fm_test_all_zero(&out_, sizeof out_);

/* X(function, error, body): see fm_null_table.h. */
#define MEMORY_NULL_CASES(X)                                                    \
    /* base.h */                                                                \
    X(fm_allocator_valid, FM_ERR_INVALID_ARG, return !fm_allocator_valid(NULL);) \
    X(fm_allocator_alloc, FM_ERR_INVALID_ARG, return fm_allocator_alloc(NULL, 64, 16) == NULL;) \
    X(fm_allocator_free, FM_ERR_INVALID_ARG, fm_allocator_free(NULL, g.item, 64); return true;) \
    /* pool.h */                                                                \
    X(fm_pool_create, FM_ERR_INVALID_ARG, return fm_pool_create(NULL) == NULL;)  \
    X(fm_pool_desc_check, FM_ERR_INVALID_ARG, char msg_[64] = "";               \
      return fm_pool_desc_check(NULL, msg_, sizeof msg_) == FM_ERR_INVALID_ARG && msg_[0];) \
    X(fm_pool_destroy, FM_OK, fm_pool_destroy(NULL); return true;)              \
    X(fm_pool_alloc, FM_ERR_INVALID_ARG, return (fm_pool_alloc)(NULL) == NULL;)  \
    X(fm_pool_free, FM_ERR_INVALID_ARG, (fm_pool_free)(NULL, g.item);            \
      return fm_pool_owns(g.pool, g.item);)                                     \
    X(fm_pool_free_n, FM_ERR_INVALID_ARG, fm_pool_free_n(NULL, &g.item, 1);      \
      return fm_pool_owns(g.pool, g.item);)                                     \
    X(fm_pool_alloc_n, FM_ERR_INVALID_ARG, void *out[2];                         \
      memset(out, 0x5A, sizeof out);                                            \
      return (fm_pool_alloc_n)(NULL, out, 2) == 0 && untouched(out, sizeof out);) \
    X(fm_pool_new, FM_ERR_INVALID_ARG, return (fm_pool_new)(NULL) == NULL;)      \
    X(fm_pool_delete, FM_ERR_INVALID_ARG, fm_pool_delete(NULL, g.item);          \
      return fm_pool_owns(g.pool, g.item);)                                     \
    X(fm_pool_alloc_at, FM_ERR_INVALID_ARG,                                      \
      return fm_pool_alloc_at(NULL, __FILE__, __LINE__) == NULL;)               \
    X(fm_pool_alloc_n_at, FM_ERR_INVALID_ARG, void *out[2];                      \
      memset(out, 0x5A, sizeof out);                                            \
      return fm_pool_alloc_n_at(NULL, out, 2, __FILE__, __LINE__) == 0 &&       \
             untouched(out, sizeof out);)                                       \
    X(fm_pool_new_at, FM_ERR_INVALID_ARG,                                        \
      return fm_pool_new_at(NULL, __FILE__, __LINE__) == NULL;)                 \
    X(fm_pool_reserve, FM_ERR_INVALID_ARG, return !fm_pool_reserve(NULL, 100);)  \
    X(fm_pool_grow_ahead, FM_ERR_INVALID_ARG, return !fm_pool_grow_ahead(NULL, 100);) \
    X(fm_pool_trim, FM_ERR_INVALID_ARG, return fm_pool_trim(NULL) == 0;)         \
    X(fm_pool_reset, FM_ERR_INVALID_ARG, fm_pool_reset(NULL);                     \
      return fm_pool_owns(g.pool, g.item);)                                     \
    /* NULL is a pointer in no pool: the answer NULL, nothing reported */       \
    X(fm_pool_of, FM_OK, return (fm_pool_of)(NULL) == NULL;)                     \
    /* as free(NULL): a no-op */                                                \
    X(fm_free, FM_OK, (fm_free)(NULL); return fm_pool_owns(g.pool, g.item);)    \
    X(fm_pool_owns, FM_ERR_INVALID_ARG, return !fm_pool_owns(NULL, g.item);)     \
    X(fm_pool_foreach, FM_ERR_INVALID_ARG, fm_pool_foreach(NULL, count_call, NULL); \
      return g.calls == 0;)                                                     \
    X(fm_pool_get_stats, FM_ERR_INVALID_ARG,                                     \
      OUT_ZEROED(fm_pool_stats, fm_pool_get_stats(NULL, &out_)))                \
    X(fm_pool_chunk_occupancy, FM_ERR_INVALID_ARG, uint32_t live_[2] = {7, 7};       \
      return fm_pool_chunk_occupancy(NULL, live_, 2) == 0 && live_[0] == 7;)        \
    X(fm_pool_get_desc, FM_ERR_INVALID_ARG, fm_pool_desc d = fm_pool_get_desc(NULL); \
      return fm_test_all_zero(&d, sizeof d);)                                   \
    X(fm_pool_name, FM_ERR_INVALID_ARG, return strcmp(fm_pool_name(NULL), "(null)") == 0;) \
    X(fm_pool_handle, FM_ERR_INVALID_ARG,                                        \
      return fm_handle_is_null(fm_pool_handle(NULL, g.item));)                  \
    X(fm_pool_resolve, FM_ERR_INVALID_ARG, return (fm_pool_resolve)(NULL, g.handle) == NULL;) \
    X(fm_pool_retain, FM_ERR_INVALID_ARG, fm_pool_retain(NULL, g.item);          \
      return fm_pool_refcount(g.pool, g.item) == 1;)                            \
    X(fm_pool_release, FM_ERR_INVALID_ARG, return !fm_pool_release(NULL, g.item) && \
                                                  fm_pool_owns(g.pool, g.item);) \
    X(fm_pool_refcount, FM_ERR_INVALID_ARG, return fm_pool_refcount(NULL, g.item) == 0;) \
    X(fm_pool_set_owner_thread, FM_ERR_INVALID_ARG, fm_pool_set_owner_thread(NULL); return true;) \
    X(fm_pool_release_owner_thread, FM_ERR_INVALID_ARG,                          \
      fm_pool_release_owner_thread(NULL); return true;)                         \
    X(fm_pool_flush_thread_cache, FM_ERR_INVALID_ARG,                            \
      fm_pool_flush_thread_cache(NULL); return true;)                           \
    X(fm_pool_check, FM_ERR_INVALID_ARG, return fm_pool_check(NULL) == FM_ERR_INVALID_ARG;) \
    /* arena.h */                                                               \
    X(fm_arena_create, FM_ERR_INVALID_ARG, return fm_arena_create(NULL) == NULL;) \
    X(fm_arena_desc_check, FM_ERR_INVALID_ARG, char msg_[64] = "";             \
      return fm_arena_desc_check(NULL, msg_, sizeof msg_) == FM_ERR_INVALID_ARG && msg_[0];) \
    X(fm_arena_destroy, FM_OK, fm_arena_destroy(NULL); return true;)            \
    X(fm_arena_alloc, FM_ERR_INVALID_ARG, return (fm_arena_alloc)(NULL, 16, 8) == NULL;) \
    X(fm_arena_alloc_zero, FM_ERR_INVALID_ARG, return fm_arena_alloc_zero(NULL, 16, 8) == NULL;) \
    X(fm_arena_alloc_array, FM_ERR_INVALID_ARG,                                  \
      return fm_arena_alloc_array(NULL, 4, 16, 8) == NULL;)                     \
    X(fm_arena_get_mark, FM_ERR_INVALID_ARG, fm_arena_mark m = fm_arena_get_mark(NULL); \
      return m.arena == NULL && m.pos == 0 && m.serial == 0;)                   \
    X(fm_arena_rewind, FM_ERR_INVALID_ARG,                                       \
      fm_arena_rewind(NULL, fm_arena_get_mark(g.arena)); return true;)          \
    X(fm_arena_reset, FM_ERR_INVALID_ARG, fm_arena_reset(NULL); return true;)    \
    X(fm_arena_decommit, FM_ERR_INVALID_ARG, return fm_arena_decommit(NULL, 0) == 0;) \
    X(fm_arena_get_stats, FM_ERR_INVALID_ARG,                                    \
      OUT_ZEROED(fm_arena_stats, fm_arena_get_stats(NULL, &out_)))              \
    X(fm_arena_get_desc, FM_ERR_INVALID_ARG, fm_arena_desc d = fm_arena_get_desc(NULL); \
      return fm_test_all_zero(&d, sizeof d);)                                   \
    X(fm_arena_name, FM_ERR_INVALID_ARG, return strcmp(fm_arena_name(NULL), "(null)") == 0;) \
    X(fm_arena_owns, FM_ERR_INVALID_ARG, return !fm_arena_owns(NULL, g.item, 1);) \
    X(fm_frame_arena_create, FM_ERR_INVALID_ARG, return fm_frame_arena_create(NULL) == NULL;) \
    X(fm_frame_arena_desc_check, FM_ERR_INVALID_ARG, char msg_[64] = "";             \
      return fm_frame_arena_desc_check(NULL, msg_, sizeof msg_) == FM_ERR_INVALID_ARG && msg_[0];) \
    X(fm_frame_arena_destroy, FM_OK, fm_frame_arena_destroy(NULL); return true;) \
    X(fm_frame_alloc, FM_ERR_INVALID_ARG, return (fm_frame_alloc)(NULL, 16, 8) == NULL;) \
    X(fm_frame_arena_advance, FM_ERR_INVALID_ARG, fm_frame_arena_advance(NULL); return true;) \
    X(fm_frame_arena_current, FM_ERR_INVALID_ARG, return fm_frame_arena_current(NULL) == NULL;) \
    X(fm_frame_arena_get_stats, FM_ERR_INVALID_ARG,                              \
      OUT_ZEROED(fm_frame_arena_stats, fm_frame_arena_get_stats(NULL, &out_)))  \
    /* closure.h */                                                             \
    X(fm_closure_pool_create, FM_ERR_INVALID_ARG, return fm_closure_pool_create(NULL) == NULL;) \
    X(fm_closure_pool_destroy, FM_OK, fm_closure_pool_destroy(NULL); return true;) \
    X(fm_closure_pool_get_stats, FM_ERR_INVALID_ARG,                             \
      OUT_ZEROED(fm_closure_pool_stats, fm_closure_pool_get_stats(NULL, &out_))) \
    X(fm_closure_make, FM_ERR_INVALID_ARG,                                       \
      return (fm_closure_make)(NULL, count_call, &g, sizeof g) == NULL;)        \
    X(fm_closure_make_frame, FM_ERR_INVALID_ARG,                                 \
      return (fm_closure_make_frame)(NULL, count_call, &g, sizeof g) == NULL;)  \
    X(fm_closure_alloc, FM_ERR_INVALID_ARG,                                      \
      return (fm_closure_alloc)(NULL, count_call, NULL, 8) == NULL;)            \
    X(fm_closure_alloc_frame, FM_ERR_INVALID_ARG,                                \
      return (fm_closure_alloc_frame)(NULL, count_call, NULL, 8) == NULL;)      \
    X(fm_closure_call, FM_ERR_INVALID_ARG, (fm_closure_call)(NULL, &g); return g.calls == 0;) \
    X(fm_closure_capture, FM_ERR_INVALID_ARG, return (fm_closure_capture)(NULL) == NULL;) \
    X(fm_closure_capture_size, FM_ERR_INVALID_ARG, return fm_closure_capture_size(NULL) == 0;) \
    X(fm_closure_retain, FM_ERR_INVALID_ARG, (fm_closure_retain)(NULL); return true;) \
    X(fm_closure_release, FM_ERR_INVALID_ARG, return !(fm_closure_release)(NULL);) \
    X(fm_event_create, FM_ERR_INVALID_ARG, return fm_event_create(NULL) == NULL;) \
    X(fm_event_destroy, FM_OK, fm_event_destroy(NULL); return true;)            \
    X(fm_event_subscribe, FM_ERR_INVALID_ARG,                                    \
      return fm_handle_is_null(fm_event_subscribe(NULL, g.closure));)           \
    X(fm_event_unsubscribe, FM_ERR_INVALID_ARG,                                  \
      return !fm_event_unsubscribe(NULL, (fm_handle){(uint64_t)1 << 32 | 1});)  \
    X(fm_event_emit, FM_ERR_INVALID_ARG, fm_event_emit(NULL, &g); return g.calls == 0;) \
    X(fm_event_count, FM_ERR_INVALID_ARG, return fm_event_count(NULL) == 0;)     \
    X(fm_defer_queue_create, FM_ERR_INVALID_ARG, return fm_defer_queue_create(NULL) == NULL;) \
    X(fm_defer_queue_destroy, FM_OK, fm_defer_queue_destroy(NULL); return true;) \
    X(fm_defer, FM_ERR_INVALID_ARG, return !fm_defer(NULL, g.closure, 0);)       \
    X(fm_defer_run, FM_ERR_INVALID_ARG, return fm_defer_run(NULL) == 0 && g.calls == 0;) \
    X(fm_defer_pending, FM_ERR_INVALID_ARG, return fm_defer_pending(NULL) == 0;) \
    /* tag.h */                                                                 \
    X(fm_tag_create, FM_ERR_INVALID_ARG, return fm_tag_create(NULL) == NULL;)    \
    X(fm_tag_desc_check, FM_ERR_INVALID_ARG, char msg_[64] = "";                 \
      return fm_tag_desc_check(NULL, msg_, sizeof msg_) == FM_ERR_INVALID_ARG && msg_[0];) \
    X(fm_tag_destroy, FM_OK, fm_tag_destroy(NULL); return true;)                 \
    X(fm_tag_get_stats, FM_ERR_INVALID_ARG,                                      \
      OUT_ZEROED(fm_tag_stats, fm_tag_get_stats(NULL, &out_)))                  \
    X(fm_tag_get_desc, FM_ERR_INVALID_ARG, fm_tag_desc d = fm_tag_get_desc(NULL); \
      return fm_test_all_zero(&d, sizeof d);)                                   \
    X(fm_tag_name, FM_ERR_INVALID_ARG, return strcmp(fm_tag_name(NULL), "(null)") == 0;) \
    /* file.h (framemem_file) */                                                \
    X(fm_file_write, FM_ERR_INVALID_ARG, return !fm_file_write(NULL, "x", 1);)   \
    X(fm_file_printf, FM_ERR_INVALID_ARG, return !fm_file_printf(NULL, "%d", 1);) \
    X(fm_file_ok, FM_ERR_INVALID_ARG, return !fm_file_ok(NULL);)                 \
    X(fm_file_commit, FM_ERR_INVALID_ARG, char err_[64] = "";                    \
      return !fm_file_commit(NULL, err_, sizeof err_) && err_[0] != 0;)          \
    X(fm_file_abort, FM_OK, fm_file_abort(NULL); return true;)                   \
    X(fm_file_data_release, FM_OK, fm_file_data_release(NULL); return true;)    \
    /* telemetry.h (framemem_telemetry): a NULL desc means the defaults */     \
    X(fm_telemetry_create, FM_OK, fm_telemetry *t_ = fm_telemetry_create(NULL); \
      bool ok_ = t_ && fm_telemetry_capacity(t_) == 600; fm_telemetry_destroy(t_); return ok_;) \
    X(fm_telemetry_destroy, FM_OK, fm_telemetry_destroy(NULL); return true;)     \
    X(fm_telemetry_add_pool, FM_ERR_INVALID_ARG, return fm_telemetry_add_pool(NULL, g.pool) == -1;) \
    X(fm_telemetry_add_arena, FM_ERR_INVALID_ARG,                                \
      return fm_telemetry_add_arena(NULL, g.arena) == -1;)                      \
    X(fm_telemetry_add_frame_arena, FM_ERR_INVALID_ARG,                          \
      return fm_telemetry_add_frame_arena(NULL, g.frame) == -1;)                \
    X(fm_telemetry_add_closure_pool, FM_ERR_INVALID_ARG,                         \
      return fm_telemetry_add_closure_pool(NULL, g.closures) == -1;)            \
    X(fm_telemetry_add_tag, FM_ERR_INVALID_ARG, return fm_telemetry_add_tag(NULL, g.tag) == -1;) \
    X(fm_telemetry_add_counters, FM_ERR_INVALID_ARG, fm_telemetry_counters c_ = {0}; \
      return fm_telemetry_add_counters(NULL, "c", &c_) == -1;)                  \
    X(fm_telemetry_add_source, FM_ERR_INVALID_ARG,                               \
      return fm_telemetry_add_source(NULL, "s", FM_TELEMETRY_POOL, 8, 1) == -1;) \
    X(fm_telemetry_set_source_shape, FM_ERR_INVALID_ARG,                         \
      fm_telemetry_set_source_shape(NULL, 0, FM_TELEMETRY_BACKEND_POOL, 8, 1); return true;) \
    X(fm_telemetry_set_source_limits, FM_ERR_INVALID_ARG,                        \
      fm_telemetry_set_source_limits(NULL, 0, 1, 2); return true;)              \
    X(fm_telemetry_detach, FM_ERR_INVALID_ARG, fm_telemetry_detach(NULL, 0); return true;) \
    X(fm_telemetry_source_count, FM_ERR_INVALID_ARG, return fm_telemetry_source_count(NULL) == 0;) \
    X(fm_telemetry_get_source, FM_ERR_INVALID_ARG,                               \
      return fm_telemetry_get_source(NULL, 0) == NULL;)                         \
    X(fm_telemetry_find_source, FM_ERR_INVALID_ARG,                              \
      return fm_telemetry_find_source(NULL, "held") == -1;)                     \
    X(fm_telemetry_frame_begin, FM_ERR_INVALID_ARG, fm_telemetry_frame_begin(NULL); return true;) \
    X(fm_telemetry_add_alloc_ns, FM_ERR_INVALID_ARG,                             \
      fm_telemetry_add_alloc_ns(NULL, 0, 5); return true;)                      \
    X(fm_telemetry_grow_ahead, FM_ERR_INVALID_ARG, return fm_telemetry_grow_ahead(NULL) == 0;) \
    X(fm_telemetry_frame_end, FM_ERR_INVALID_ARG, fm_telemetry_frame_end(NULL); return true;) \
    X(fm_telemetry_push, FM_ERR_INVALID_ARG, fm_telemetry_frame r_ = {0};        \
      fm_telemetry_push(NULL, &r_, NULL); return true;)                         \
    X(fm_telemetry_frame_count, FM_ERR_INVALID_ARG, return fm_telemetry_frame_count(NULL) == 0;) \
    X(fm_telemetry_capacity, FM_ERR_INVALID_ARG, return fm_telemetry_capacity(NULL) == 0;) \
    X(fm_telemetry_frames_pushed, FM_ERR_INVALID_ARG,                            \
      return fm_telemetry_frames_pushed(NULL) == 0;)                            \
    X(fm_telemetry_get_frame, FM_ERR_INVALID_ARG, return fm_telemetry_get_frame(NULL, 0) == NULL;) \
    X(fm_telemetry_get_sample, FM_ERR_INVALID_ARG,                               \
      return fm_telemetry_get_sample(NULL, 0, 0) == NULL;)                      \
    X(fm_telemetry_set_render_ns, FM_ERR_INVALID_ARG,                            \
      fm_telemetry_set_render_ns(NULL, 5); return true;)                        \
    X(fm_telemetry_clear, FM_ERR_INVALID_ARG, fm_telemetry_clear(NULL); return true;) \
    X(fm_telemetry_write_csv, FM_ERR_INVALID_ARG, char err_[96] = "";            \
      return !fm_telemetry_write_csv(NULL, "null_args.csv", err_, sizeof err_) && err_[0];) \
    X(fm_telemetry_write_csv_file, FM_ERR_INVALID_ARG,                           \
      return !fm_telemetry_write_csv_file(NULL, stderr);)                       \
    X(fm_telemetry_stream_csv, FM_ERR_INVALID_ARG, fm_telemetry_stream_csv(NULL, NULL); return true;) \
    X(fm_telemetry_stream_end, FM_ERR_INVALID_ARG, fm_telemetry_stream_end(NULL); return true;) \
    X(fm_telemetry_write_trace, FM_ERR_INVALID_ARG, char err_[96] = "";          \
      return !fm_telemetry_write_trace(NULL, "null_args.json", err_, sizeof err_) && err_[0];) \
    /* config.h (framemem_telemetry) */                                         \
    X(fm_config_destroy, FM_OK, fm_config_destroy(NULL); return true;)           \
    X(fm_config_problem_count, FM_ERR_INVALID_ARG, return fm_config_problem_count(NULL) == 0;) \
    X(fm_config_problems, FM_ERR_INVALID_ARG, return strcmp(fm_config_problems(NULL), "") == 0;) \
    X(fm_config_apply_pool, FM_ERR_INVALID_ARG, fm_pool_desc d_ = {.name = "held", .item_size = 8}; \
      return fm_config_apply_pool(NULL, &d_) == -1 && d_.initial_capacity == 0;) \
    X(fm_config_apply_arena, FM_ERR_INVALID_ARG, fm_arena_desc d_ = {.name = "held"}; \
      return fm_config_apply_arena(NULL, &d_) == -1 && d_.reserve_bytes == 0;)  \
    X(fm_config_apply_frame_arena, FM_ERR_INVALID_ARG, fm_frame_arena_desc d_ = {0}; \
      return fm_config_apply_frame_arena(NULL, &d_) == -1 && d_.arena.reserve_bytes == 0;) \
    X(fm_config_apply_tag, FM_ERR_INVALID_ARG, fm_tag_desc d_ = {.name = "held"}; \
      return fm_config_apply_tag(NULL, &d_) == -1 && d_.hard_limit_bytes == 0;) \
    X(fm_config_apply, FM_ERR_INVALID_ARG, fm_pool_desc d_ = {.name = "held", .item_size = 8}; \
      return fm_config_apply(NULL, &d_) == -1;)                                 \
    X(fm_config_report_unused, FM_ERR_INVALID_ARG, return fm_config_report_unused(NULL) == 0;) \
    X(fm_config_write_tuned, FM_ERR_INVALID_ARG, char err_[96] = "";             \
      return !fm_config_write_tuned(NULL, "null_args.ini", 1.25, err_, sizeof err_) && err_[0];) \
    X(fm_config_write_tuned_runs, FM_ERR_INVALID_ARG, char err_[96] = "";        \
      const fm_telemetry *runs_[1] = {NULL};                                    \
      return !fm_config_write_tuned_runs(NULL, runs_, 1, 1.25, "null_args.ini", err_, sizeof err_) && \
             err_[0];)

FM_NULL_TABLE(MEMORY_NULL_CASES, memory_null_cases);

/* Public functions that take no object: error codes and names, the error
 * handler, policy names, alignment and handle arithmetic, the clock, the
 * profiler hooks (fm_set_hooks(NULL) removes them: test_hooks.c). */
static const char *const memory_no_object[] = {
    "fm_error_name",  "fm_error_str",     "fm_error_is_warning", "fm_last_error", "fm_clear_error",
    "fm_last_error_message", "fm_set_error_handler", "fm_report_error", "fm_sync_name",
    "fm_growth_name", "fm_align_up",      "fm_is_aligned",     "fm_handle_is_null",
    "fm_handle_equal", "fm_clock_now",    "fm_clock_init",     "fm_clock_to_ns",
    "fm_clock_ticks_per_sec", "fm_clock_source", "fm_pool_map_bytes", "fm_set_hooks",
    "fm_hooks_frame_end",
    /* file.h: paths, buffers and out-structs, no object */
    "fm_file_begin", "fm_file_write_whole", "fm_file_read", "fm_file_skip_bom",
    "fm_file_check_input", "fm_file_check_outputs", "fm_file_stdout_ok",
    /* telemetry.h, config.h: readers of paths and buffers, arithmetic, names */
    "fm_telemetry_read_csv", "fm_telemetry_read_csv_mem", "fm_telemetry_suggest_capacity",
    "fm_telemetry_clock_overhead_ns", "fm_telemetry_kind_name", "fm_telemetry_backend_name",
    "fm_config_load", "fm_config_load_mem", "fm_config_tuned_capacity",
};

#define N_CASES (sizeof memory_null_cases / sizeof memory_null_cases[0])

static void make_objects(fm_test_env *env) {
    fm_allocator a = fm_test_allocator_get(&env->alloc);
    g.tag = fm_tag_create(&(fm_tag_desc){.name = "held", .allocator = a});
    assert_non_null(g.tag);
    g.pool = fm_pool_create(
        &(fm_pool_desc){.name = "held", .item_size = 64, .allocator = a, .tag = g.tag});
    assert_non_null(g.pool);
    g.item = fm_pool_alloc(g.pool);
    assert_non_null(g.item);
    g.handle = fm_pool_handle(g.pool, g.item);
    g.arena = fm_arena_create(&(fm_arena_desc){.name = "held", .allocator = a});
    g.frame = fm_frame_arena_create(&(fm_frame_arena_desc){.arena.allocator = a});
    g.closures = fm_closure_pool_create(&(fm_closure_pool_desc){.allocator = a});
    assert_non_null(g.arena);
    assert_non_null(g.frame);
    assert_non_null(g.closures);
    g.closure = fm_closure_make(g.closures, count_call, NULL, 0);
    assert_non_null(g.closure);
    g.event = fm_event_create(&(fm_event_desc){.allocator = a});
    g.queue = fm_defer_queue_create(&(fm_defer_queue_desc){.allocator = a});
    assert_non_null(g.event);
    assert_non_null(g.queue);
    g.calls = 0;
}

/* Nothing the NULL calls did reached the real objects: the closure is not
 * held by anyone else (its release frees it), the item is live with count
 * 1, and every byte goes back. */
static void destroy_objects(fm_test_env *env) {
    assert_int_equal(g.calls, 0);
    assert_int_equal(fm_event_count(g.event), 0);
    assert_int_equal(fm_defer_pending(g.queue), 0);
    assert_true(fm_closure_release(g.closure));
    assert_int_equal(fm_pool_refcount(g.pool, g.item), 1);
    fm_pool_free(g.pool, g.item);
    assert_int_equal(fm_pool_check(g.pool), FM_OK);
    int errors = env->errors.count;
    fm_defer_queue_destroy(g.queue);
    fm_event_destroy(g.event);
    fm_closure_pool_destroy(g.closures);
    fm_frame_arena_destroy(g.frame);
    fm_arena_destroy(g.arena);
    fm_pool_destroy(g.pool);
    fm_tag_destroy(g.tag);
    assert_int_equal(env->errors.count, errors);
    fm_test_allocator_assert_clean(&env->alloc);
    memset(&g, 0, sizeof g);
}

static void test_every_memory_function_reports_a_null_object_and_returns_its_failure_value(
    void **state) {
    fm_test_env *env = *state;
    make_objects(env);
    fm_test_run_null_cases(env, memory_null_cases, N_CASES);
    destroy_objects(env);
}

/* The second object of a call is checked too: a NULL stream. */
static void test_telemetry_csv_to_a_null_stream_is_refused_and_reported(void **state) {
    fm_test_env *env = *state;
    fm_telemetry *t = fm_telemetry_create(&(fm_telemetry_desc){.frames = 4});
    assert_non_null(t);
    int before = env->errors.count;
    assert_false(fm_telemetry_write_csv_file(t, NULL));
    assert_int_equal(env->errors.count, before + 1);
    assert_int_equal(fm_last_error(), FM_ERR_INVALID_ARG);
    assert_true(fm_test_contains(env->errors.message, "stream"));
    fm_telemetry_destroy(t);
}

static void test_null_table_has_a_row_for_every_public_function_of_memory(void **state) {
    (void)state;
    fm_test_assert_null_table_complete(FM_SOURCE_DIR "/memory/include/framemem", memory_null_cases,
                                       N_CASES, memory_no_object,
                                       sizeof memory_no_object / sizeof memory_no_object[0]);
}

/* Outside optimised builds the macros that name the inline fast paths go to
 * the library, which checks: the NULL precondition of the inline paths
 * (base.h) is caught in debug and sanitizer builds. */
#if !defined(FM__INLINE)
static void test_fast_path_macros_report_a_null_object_outside_optimised_builds(void **state) {
    fm_test_env *env = *state;
    make_objects(env);
    int before = env->errors.count;
    assert_null(fm_pool_alloc(NULL));
    fm_pool_free(NULL, g.item);
    assert_null(fm_pool_resolve(NULL, g.handle));
    assert_null(fm_arena_alloc(NULL, 16, 8));
    assert_null(fm_frame_alloc(NULL, 16, 8));
    assert_null(fm_closure_make(NULL, count_call, NULL, 0));
    assert_null(fm_closure_make_frame(NULL, count_call, NULL, 0));
    fm_closure_call(NULL, NULL);
    assert_null(fm_closure_capture(NULL));
    assert_int_equal(env->errors.count - before, 9);
    assert_int_equal(env->errors.by_code[FM_ERR_INVALID_ARG], 9);
    assert_true(fm_pool_owns(g.pool, g.item));
    destroy_objects(env);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_every_memory_function_reports_a_null_object_and_returns_its_failure_value),
        T(test_telemetry_csv_to_a_null_stream_is_refused_and_reported),
        T(test_null_table_has_a_row_for_every_public_function_of_memory),
#if !defined(FM__INLINE)
        T(test_fast_path_macros_report_a_null_object_outside_optimised_builds),
#endif
#undef T
    };
    return cmocka_run_group_tests_name("null_args", tests, NULL, NULL);
}
