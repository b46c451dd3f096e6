/* tests/engine/test_null_args.c: every public function of the engine called
 * with a NULL object (the rule of framemem/base.h, as eng_internal.h applies
 * it: FM_ERR_INVALID_ARG through framemem's error channel, the message in
 * err too where there is one, the failure value returned), from one table
 * that is checked against the headers of engine/include/engine. */
#define _POSIX_C_SOURCE 200809L

#include "fm_null_table.h"

#include "engine/classic_pool.h"
#include "engine/engine.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Real arguments beside the NULL object. */
static struct {
    char err[256];
} g;

/* err was written, naming the function. */
static bool err_names(const char *fn) { return strstr(g.err, fn) != NULL; }

/* No file at path: a refused write leaves nothing behind. */
static bool absent(const char *path) { return access(path, F_OK) != 0; }

#define OUT_PATH "null_args_out.tmp"

#define ENGINE_NULL_CASES(X)                                                    \
    /* engine.h: a NULL desc is every default (documented), not a NULL object */ \
    X(eng_create, FM_OK, eng *e = eng_create(NULL, g.err, sizeof g.err);         \
      bool ok = e != NULL;                                                      \
      eng_destroy(e);                                                           \
      return ok;)                                                               \
    X(eng_destroy, FM_OK, eng_destroy(NULL); return true;)                      \
    X(eng_frame_begin, FM_ERR_INVALID_ARG, eng_frame_begin(NULL); return true;)  \
    X(eng_update, FM_ERR_INVALID_ARG, eng_update(NULL, 1.0 / 60); return true;)  \
    X(eng_frame_end, FM_ERR_INVALID_ARG, eng_frame_end(NULL); return true;)      \
    X(eng_tick, FM_ERR_INVALID_ARG, eng_tick(NULL, 1.0 / 60); return true;)      \
    X(eng_get_render_list, FM_ERR_INVALID_ARG, eng_render_list l = eng_get_render_list(NULL); \
      return fm_test_all_zero(&l, sizeof l);)                                   \
    X(eng_set_render_ns, FM_ERR_INVALID_ARG, eng_set_render_ns(NULL, 5); return true;) \
    X(eng_burst, FM_ERR_INVALID_ARG, eng_burst(NULL, 1.0); return true;)         \
    X(eng_set_scale, FM_ERR_INVALID_ARG, eng_set_scale(NULL, 2.0); return true;) \
    X(eng_set_growth, FM_ERR_INVALID_ARG, eng_set_growth(NULL, FM_GROWTH_LINEAR); return true;) \
    X(eng_clear_growth_override, FM_ERR_INVALID_ARG, eng_clear_growth_override(NULL); \
      return true;)                                                             \
    X(eng_set_grow_ahead, FM_ERR_INVALID_ARG, eng_set_grow_ahead(NULL, true); return true;) \
    X(eng_set_prefault, FM_ERR_INVALID_ARG, eng_set_prefault(NULL, true); return true;) \
    X(eng_set_backend, FM_ERR_INVALID_ARG, eng_set_backend(NULL, ENG_BACKEND_MALLOC); \
      return true;)                                                             \
    X(eng_reload_config, FM_ERR_INVALID_ARG,                                     \
      return !eng_reload_config(NULL, OUT_PATH, g.err, sizeof g.err) &&         \
             err_names("eng_reload_config");)                                   \
    X(eng_write_tuned_config, FM_ERR_INVALID_ARG,                                \
      return !eng_write_tuned_config(NULL, OUT_PATH, 1.25, g.err, sizeof g.err) && \
             err_names("eng_write_tuned_config") && absent(OUT_PATH);)          \
    X(eng_reset_stats, FM_ERR_INVALID_ARG, eng_reset_stats(NULL); return true;)  \
    X(eng_get_info, FM_ERR_INVALID_ARG, eng_info in;                             \
      memset(&in, 0x5A, sizeof in);                                             \
      eng_get_info(NULL, &in);                                                  \
      return fm_test_all_zero(&in, sizeof in);)                                 \
    X(eng_last_failure, FM_ERR_INVALID_ARG, return strcmp(eng_last_failure(NULL), "") == 0;) \
    X(eng_get_telemetry, FM_ERR_INVALID_ARG, return eng_get_telemetry(NULL) == NULL;) \
    X(eng_get_telemetry_mut, FM_ERR_INVALID_ARG, return eng_get_telemetry_mut(NULL) == NULL;) \
    X(eng_get_config, FM_ERR_INVALID_ARG, return eng_get_config(NULL) == NULL;)   \
    X(eng_get_pool, FM_ERR_INVALID_ARG, return eng_get_pool(NULL, "particles") == NULL;) \
    X(eng_config_problems, FM_ERR_INVALID_ARG,                                   \
      return strcmp(eng_config_problems(NULL), "") == 0;)                       \
    /* classic_pool.h */                                                        \
    X(eng_classic_pool_destroy, FM_OK, eng_classic_pool_destroy(NULL); return true;) \
    X(eng_classic_pool_grow, FM_ERR_INVALID_ARG, return eng_classic_pool_grow(NULL) == 0;) \
    X(eng_classic_pool_get_stats, FM_ERR_INVALID_ARG, eng_classic_pool_stats st;   \
      memset(&st, 0x5A, sizeof st);                                             \
      eng_classic_pool_get_stats(NULL, &st);                                    \
      return fm_test_all_zero(&st, sizeof st);)                                 \
    X(eng_classic_pool_free_count, FM_ERR_INVALID_ARG,                            \
      return eng_classic_pool_free_count(NULL) == 0;)                           \
    X(eng_classic_pool_alloc, FM_ERR_INVALID_ARG, return eng_classic_pool_alloc(NULL) == NULL;) \
    X(eng_classic_pool_free, FM_ERR_INVALID_ARG, int x = 0;                       \
      eng_classic_pool_free(NULL, &x);                                          \
      return x == 0;)                                                           \
    X(eng_run_headless, FM_OK, eng_run_result r;                                 \
      fm_telemetry *t = eng_run_headless(NULL, 2, &r, g.err, sizeof g.err);    \
      bool ok = t != NULL && r.frames == 2;                                     \
      fm_telemetry_destroy(t);                                                 \
      return ok;)

FM_NULL_TABLE(ENGINE_NULL_CASES, engine_null_cases);

/* Public functions that take no object: names. (The engine's telemetry and
 * config are framemem_telemetry's: tests/memory/test_null_args.c.) */
static const char *const engine_no_object[] = {
    "eng_scene_names",
    "eng_backend_name",
    "eng_classic_pool_create", /* sizes, no object: tests/engine/test_engine.c */
};

#define N_CASES (sizeof engine_null_cases / sizeof engine_null_cases[0])

static void test_every_engine_function_reports_a_null_object_and_returns_its_failure_value(
    void **state) {
    fm_test_env *env = *state;
    remove(OUT_PATH);
    fm_test_run_null_cases(env, engine_null_cases, N_CASES);
    assert_true(absent(OUT_PATH));
}

static void test_null_table_has_a_row_for_every_public_function_of_the_engine(void **state) {
    (void)state;
    fm_test_assert_null_table_complete(FM_SOURCE_DIR "/engine/include/engine", engine_null_cases,
                                       N_CASES, engine_no_object,
                                       sizeof engine_no_object / sizeof engine_no_object[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fm_test_setup, fm_test_teardown)
        T(test_every_engine_function_reports_a_null_object_and_returns_its_failure_value),
        T(test_null_table_has_a_row_for_every_public_function_of_the_engine),
#undef T
    };
    return cmocka_run_group_tests_name("engine_null_args", tests, NULL, NULL);
}
