/*
 * fm_bench/peers.h: allocators measured in processes of their own.
 *
 * Debian's libmimalloc, libjemalloc and libtcmalloc replace malloc and free
 * in any process they are linked into, so linking one into fm-bench would
 * silently turn the glibc baseline into that allocator. Each peer is
 * therefore its own executable (fm-bench-peer-NAME, built from peer.c and
 * alloc_loops.h with -DBENCH_PEER_NAME; fm-bench-boost, the Boost.Pool
 * program), installed beside fm-bench. In every round of an experiment
 * fm-bench runs its own variants, then each peer present with
 *   PEER --peer EXPERIMENT [--quick]
 * which runs one round of its variants and prints one line per variant:
 *   row<TAB>variant<TAB>key<TAB>value<TAB>value...
 * so peers alternate with fm-bench's variants round by round and their rows
 * land in fm-bench's tables. `PEER --peer info` prints
 *   info<TAB>description<TAB>file defining malloc
 * and the run header shows it beside fm-bench's own (which must be libc).
 */
#ifndef FM_BENCH_PEERS_H
#define FM_BENCH_PEERS_H

#include "bench.h"

enum { BENCH_SERIES_VALUES = 8 };

/* One row of a peer across rounds: v[round * BENCH_SERIES_VALUES + i]. */
typedef struct bench_series {
    char variant[96];
    char key[32];
    int nv;
    int rounds;
    double *v; /* engine/ds.h array */
} bench_series;

/* The rows in the order they first came: s[0 .. n-1], an engine/ds.h array,
 * and index, a map from "variant<TAB>key" to the row's position. */
typedef struct bench_peer_set {
    bench_series *s;
    size_t n;
    struct bench_peer_index {
        char *key;
        size_t value;
    } *index;
} bench_peer_set;

/// Runs one round of experiment in every peer executable present (none with
/// --no-peers) and adds each printed row as one more round of its series.
/// A peer that fails or prints a malformed row ends fm-bench with a message.
void bench_peers_round(const bench_opts *opts, const char *experiment, bench_peer_set *set);
/// Median, smallest and largest of value i over the series' rounds.
void bench_series_stats(const bench_series *s, int i, double *med, double *lo, double *hi);
/// Frees the series (the set itself is the caller's).
void bench_peer_set_free(bench_peer_set *set);
/// Header lines: the file fm-bench's malloc comes from (a warning when it is
/// not libc) and each peer present with its own.
void bench_peers_print_info(const bench_opts *opts);

#endif /* FM_BENCH_PEERS_H */
