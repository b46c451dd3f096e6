/*
 * tests/support/fm_null_table.h: the rule "NULL object arguments" (framemem/
 * base.h), checked by table: every public function of a layer is called
 * with NULL for its object, and the table is checked against the layer's
 * headers, so a public function added without a row fails the suite.
 *
 * A table is an X-macro list of rows X(function, error, body...): body is
 * the code of a bool function that calls `function` with a NULL object (as
 * (function)(...), the library's function even where a macro stands for
 * it) and returns true when it returned its failure value and left every
 * out-parameter as documented; error is what it must report (FM_OK: nothing,
 * as for destroy, or a NULL desc that means "defaults"). FM_NULL_TABLE
 * turns such a list into an array of fm_test_null_case.
 */
#ifndef FM_NULL_TABLE_H
#define FM_NULL_TABLE_H

#include "fm_test.h"

typedef struct fm_test_null_case {
    const char *name;
    fm_error want;
    bool (*run)(void);
} fm_test_null_case;

#define FM_NULL__DEFINE(fn, want, ...)                                          \
    static bool fm_null__##fn(void) { __VA_ARGS__ }
#define FM_NULL__ROW(fn, want, ...) {#fn, (want), fm_null__##fn},
/* FM_NULL_TABLE(LIST, name): the row functions and `name`, their array. */
#define FM_NULL_TABLE(LIST, name)                                               \
    LIST(FM_NULL__DEFINE)                                                       \
    static const fm_test_null_case name[] = {LIST(FM_NULL__ROW)}

/// Runs every case with env's error capture: the body must return true, the
/// last error must be case.want and the handler must have run once with a
/// message naming the function (never, for FM_OK). Failures are printed with
/// the function's name before the assertion fails.
void fm_test_run_null_cases(fm_test_env *env, const fm_test_null_case *cases, size_t n);

/// cmocka-asserts that the public functions (fm_* and eng_* names, not
/// fm__/eng__) declared in the .h files of dir are exactly the cases' names
/// plus the names in no_object (functions that take no object), each listed
/// once; prints every name that is missing or extra.
void fm_test_assert_null_table_complete(const char *dir, const fm_test_null_case *cases,
                                        size_t n, const char *const *no_object, size_t n_no);

/// true when the n bytes at p are all zero.
bool fm_test_all_zero(const void *p, size_t n);

#endif /* FM_NULL_TABLE_H */
