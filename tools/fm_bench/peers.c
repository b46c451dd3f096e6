/* fm_bench/peers.c: runs the peer executables and collects their rows. */
#include "peers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/ds.h"

/* Every peer fm-bench knows; each is optional (built when its package is
 * installed) and looked for in fm-bench's own directory. */
static const char *const peer_names[] = {
    "fm-bench-peer-mimalloc", "fm-bench-peer-mimalloc-heap", "fm-bench-peer-jemalloc",
    "fm-bench-peer-tcmalloc", "fm-bench-boost",
};
enum { PEERS = sizeof peer_names / sizeof peer_names[0] };

/* Full path of peer i when it exists and is executable; false otherwise. */
static bool peer_path(int i, char *out, size_t cap) {
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return false;
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return false;
    *slash = '\0';
    if ((size_t)snprintf(out, cap, "%s/%s", self, peer_names[i]) >= cap) return false;
    return access(out, X_OK) == 0;
}

/* Runs path with args, returns its whole stdout (an engine/ds.h array: the
 * caller arrfrees it); ends fm-bench when it cannot start or does not exit 0. */
static char *peer_run(const char *path, char *const argv[]) {
    int fd[2];
    if (pipe(fd) != 0) bench_die("pipe: %s", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(path, argv);
        fprintf(stderr, "fm-bench: cannot run %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    char *buf = NULL;
    for (;;) {
        if (!ENG_ARR_RESERVE(buf, 4096, NULL)) bench_die("out of memory reading %s", path);
        size_t n = arrlenu(buf);
        ssize_t got = read(fd[0], buf + n, arrcap(buf) - n - 1); /* room for the '\0' */
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        arrsetlen(buf, n + (size_t)got);
    }
    arrput(buf, '\0'); /* into the byte kept free: cannot fail */
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bench_die("peer %s (%s) failed: %s %d", path, argv[1] ? argv[2] : "",
                  WIFEXITED(status) ? "exit code" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return buf;
}

static char *run_round(const char *path, const char *what, bool quick) {
    char *argv[] = {(char *)path, "--peer", (char *)what, quick ? "--quick" : NULL, NULL};
    return peer_run(path, argv);
}

static bench_series *series_for(bench_peer_set *set, const char *variant, const char *key) {
    bench_series row = {0};
    snprintf(row.variant, sizeof row.variant, "%s", variant);
    snprintf(row.key, sizeof row.key, "%s", key);
    char name[sizeof row.variant + sizeof row.key + 1];
    snprintf(name, sizeof name, "%s\t%s", row.variant, row.key);
    ptrdiff_t at = ENG_SH_GETI(set->index, name);
    if (at >= 0) return &set->s[set->index[at].value];
    if (!ENG_ARR_RESERVE(set->s, 1, NULL) || !ENG_SH_PUT(set->index, name, arrlenu(set->s), NULL))
        bench_die("out of memory for peer rows");
    arrput(set->s, row);
    set->n = arrlenu(set->s);
    return &arrlast(set->s);
}

/* One "row" line, split in place at tabs. */
static void add_row(bench_peer_set *set, const char *path, char *line) {
    char *field[3 + BENCH_SERIES_VALUES + 1];
    int nf = 0;
    for (char *p = line; nf < (int)(sizeof field / sizeof field[0]);) {
        field[nf++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    int nv = nf - 3;
    if (nv < 1 || nv > BENCH_SERIES_VALUES)
        bench_die("peer %s printed a row with %d values (1 to %d expected)", path, nv,
                  BENCH_SERIES_VALUES);
    bench_series *s = series_for(set, field[1], field[2]);
    if (s->rounds && s->nv != nv)
        bench_die("peer %s: row '%s' changed from %d to %d values", path, field[1], s->nv, nv);
    s->nv = nv;
    if (!ENG_ARR_RESERVE(s->v, BENCH_SERIES_VALUES, NULL)) bench_die("out of memory for peer rows");
    double *round = arraddnptr(s->v, BENCH_SERIES_VALUES);
    for (int i = 0; i < BENCH_SERIES_VALUES; i++) round[i] = 0.0;
    for (int i = 0; i < nv; i++) {
        char *end = NULL;
        double x = strtod(field[3 + i], &end);
        if (end == field[3 + i] || *end)
            bench_die("peer %s: row '%s': value %d is not a number: '%s'", path, field[1], i + 1,
                      field[3 + i]);
        round[i] = x;
    }
    s->rounds++;
}

void bench_peers_round(const bench_opts *opts, const char *experiment, bench_peer_set *set) {
    if (opts->no_peers) return;
    char path[4200];
    for (int i = 0; i < PEERS; i++) {
        if (!peer_path(i, path, sizeof path)) continue;
        char *out = run_round(path, experiment, opts->quick);
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
            if (!strncmp(line, "row\t", 4)) add_row(set, path, line);
        arrfree(out);
    }
}

void bench_series_stats(const bench_series *s, int i, double *med, double *lo, double *hi) {
    double *col = bench_xmalloc((size_t)(s->rounds ? s->rounds : 1) * sizeof *col);
    for (int r = 0; r < s->rounds; r++) col[r] = s->v[r * BENCH_SERIES_VALUES + i];
    *med = bench_median(col, (size_t)s->rounds); /* sorts col */
    *lo = s->rounds ? col[0] : 0.0;
    *hi = s->rounds ? col[s->rounds - 1] : 0.0;
    free(col);
}

void bench_peer_set_free(bench_peer_set *set) {
    for (size_t i = 0; i < arrlenu(set->s); i++) arrfree(set->s[i].v);
    arrfree(set->s);
    shfree(set->index);
    set->n = 0;
}

void bench_peers_print_info(const bench_opts *opts) {
    const char *own = bench_malloc_library();
    if (strncmp(own, "libc.so", 7) == 0)
        printf("- malloc in fm-bench: %s (the glibc baseline)\n", own);
    else
        printf("- WARNING: malloc in fm-bench comes from %s, not glibc: its malloc rows are "
               "not glibc's (a sanitizer build, or a preloaded allocator)\n", own);
    if (opts->no_peers) {
        printf("- peers: none (--no-peers)\n");
        return;
    }
    char path[4200];
    int found = 0;
    for (int i = 0; i < PEERS; i++) {
        if (!peer_path(i, path, sizeof path)) continue;
        char *out = run_round(path, "info", false);
        char *desc = strstr(out, "info\t");
        char *lib = desc ? strchr(desc + 5, '\t') : NULL;
        if (!lib) bench_die("peer %s: --peer info printed no info line", path);
        *lib++ = '\0';
        lib[strcspn(lib, "\n")] = '\0';
        printf("- peer %s: %s; its malloc comes from %s\n", peer_names[i], desc + 5, lib);
        arrfree(out);
        found++;
    }
    if (!found)
        printf("- peers: none built (install libmimalloc-dev, libjemalloc-dev, "
               "libgoogle-perftools-dev, libboost-dev: tools/dev bench does)\n");
}
