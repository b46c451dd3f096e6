/* tests/support/fm_null_table.c: running NULL-object tables and checking
 * them against the headers (see fm_null_table.h). */
#define _POSIX_C_SOURCE 200809L

#include "fm_null_table.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- running */

void fm_test_run_null_cases(fm_test_env *env, const fm_test_null_case *cases, size_t n) {
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        const fm_test_null_case *c = &cases[i];
        fm_clear_error();
        int before = env->errors.count;
        bool ok = c->run();
        int reports = env->errors.count - before;
        const char *why = NULL;
        if (!ok) why = "did not return its failure value (or changed an out-parameter)";
        else if (fm_last_error() != c->want) why = "left another last error";
        else if (reports != (c->want == FM_OK ? 0 : 1)) why = "reported another number of times";
        else if (c->want != FM_OK && !fm_test_contains(env->errors.message, c->name))
            why = "reported without naming the function";
        if (why) {
            print_error("%s(NULL ...): %s (want %s, last error %s, %d report(s), message \"%s\")\n",
                        c->name, why, fm_error_name(c->want), fm_error_name(fm_last_error()),
                        reports, reports ? env->errors.message : "");
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

bool fm_test_all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return false;
    return true;
}

/* ------------------------------------------------- the headers' functions */

typedef struct fm_null__names {
    char (*v)[96];
    size_t n, cap;
} fm_null__names;

static bool fm_null__has(const fm_null__names *s, const char *name) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0) return true;
    return false;
}

static void fm_null__add(fm_null__names *s, const char *name, size_t len) {
    char buf[96];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, name, len);
    buf[len] = 0;
    if (fm_null__has(s, buf)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        assert_non_null(s->v);
    }
    memcpy(s->v[s->n++], buf, len + 1);
}

/* Comments become spaces (newlines kept); string and character literals
 * are skipped over, so a quote in a comment or a comment marker in a
 * string changes nothing. */
static void fm_null__strip_comments(char *s) {
    for (char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            for (; p < stop; p++)
                if (*p != '\n') *p = ' ';
            p--;
        } else if (p[0] == '/' && p[1] == '/') {
            for (; *p && *p != '\n'; p++) *p = ' ';
            p--;
        } else if (*p == '"' || *p == '\'') {
            char q = *p;
            for (p++; *p && *p != q && *p != '\n'; p++)
                if (*p == '\\' && p[1]) p++;
            if (!*p) return;
        }
    }
}

static bool fm_null__public_prefix(const char *id, size_t len) {
    if (len > 3 && strncmp(id, "fm_", 3) == 0) return id[3] != '_';
    if (len > 4 && strncmp(id, "eng_", 4) == 0) return id[4] != '_';
    return false;
}

/* Declarations and definitions at file scope start in column 0 (struct
 * members and function bodies are indented); the declared name is the
 * first fm_/eng_ identifier followed by "(" or ")(" (a parenthesised name,
 * as for functions a macro may stand for). Preprocessor lines, continued
 * or not, and typedefs (function pointer types) are not declarations. */
static void fm_null__scan(char *text, fm_null__names *out) {
    fm_null__strip_comments(text);
    bool continued = false;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        size_t len = strlen(line);
        bool directive = continued;
        if (!directive) {
            const char *q = line;
            while (*q == ' ' || *q == '\t') q++;
            directive = *q == '#';
        }
        continued = directive && len && line[len - 1] == '\\';
        if (!directive && isalpha((unsigned char)line[0]) && strncmp(line, "typedef", 7) != 0) {
            for (char *p = line; *p;) {
                if (!(isalpha((unsigned char)*p) || *p == '_')) {
                    p++;
                    continue;
                }
                char *id = p;
                while (isalnum((unsigned char)*p) || *p == '_') p++;
                size_t n = (size_t)(p - id);
                const char *after = p;
                while (*after == ' ') after++;
                if (*after == ')') after++;
                while (*after == ' ') after++;
                if (*after == '(' && fm_null__public_prefix(id, n)) {
                    fm_null__add(out, id, n);
                    break;
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
}

void fm_test_assert_null_table_complete(const char *dir, const fm_test_null_case *cases,
                                        size_t n, const char *const *no_object, size_t n_no) {
    fm_null__names declared = {0};
    DIR *d = opendir(dir);
    if (!d) print_error("cannot open %s\n", dir);
    assert_non_null(d);
    int headers = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".h") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        assert_true(size >= 0);
        char *text = malloc((size_t)size + 1);
        assert_non_null(text);
        assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
        text[size] = 0;
        fclose(f);
        fm_null__scan(text, &declared);
        free(text);
        headers++;
    }
    closedir(d);
    assert_true(headers > 0);

    fm_null__names listed = {0};
    int problems = 0;
    for (size_t i = 0; i < n + n_no; i++) {
        const char *name = i < n ? cases[i].name : no_object[i - n];
        if (fm_null__has(&listed, name)) {
            print_error("%s is listed twice\n", name);
            problems++;
        }
        fm_null__add(&listed, name, strlen(name));
        if (!fm_null__has(&declared, name)) {
            print_error("%s is listed but no header in %s declares it\n", name, dir);
            problems++;
        }
    }
    for (size_t i = 0; i < declared.n; i++) {
        if (!fm_null__has(&listed, declared.v[i])) {
            print_error("%s (declared in %s) has no row in the NULL table\n", declared.v[i], dir);
            problems++;
        }
    }
    print_message("%zu public functions in %d headers of %s: %zu with an object, %zu without\n",
                  declared.n, headers, dir, n, n_no);
    free(declared.v);
    free(listed.v);
    assert_int_equal(problems, 0);
}
