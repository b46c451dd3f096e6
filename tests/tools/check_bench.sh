#!/usr/bin/env bash
# fm-bench --quick: every experiment of --list prints its section with a
# markdown table whose rows have as many cells as its header; the glibc rows
# and, for each peer executable built beside fm-bench, the peer's rows are in
# the churn, bulk and regrowth tables; --csv files are written whole or not
# at all (a full disk exits 1, the old file kept; a FIFO is refused, exit 2);
# the physical limit's second copy in regrowth with its verdict, the two
# proposed targets and the growths followed one by one, the scene's classic
# rows and issue 22's line are there, and the hidden
# --callgrind-scene-BACKEND modes (tools/fm-callgrind) print their counts;
# bad options exit 2.
#
#   check_bench.sh PATH/TO/fm-bench EXPECT_LIBC(0|1)
set -u
bench=$1
expect_libc=$2
dir=$(dirname "$bench")
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

out=$("$bench" --quick --no-pin) || { echo "FAIL: fm-bench --quick exited $?" >&2; exit 1; }
names=$("$bench" --list | awk '{print $1}')
[ -n "$names" ] || err "--list printed no experiment"

# The lines of section "## NAME" (or "## NAME: title", "## NAME (...)") up to
# the next "## ".
section() {
    awk -v h="## $1" '!on && ($0 == h || index($0, h ":") == 1 || index($0, h " ") == 1) {on = 1; next}
        on && /^## / {exit} on' <<<"$out"
}

for name in $names; do
    body=$(section "$name")
    [ -n "$body" ] || { err "no '## $name' section"; continue; }
    # Every table in the section: header cells == cells of each row.
    bad=$(awk -F'|' '
        BEGIN { t = 0 }
        /^\|/ { if (!intable) { cols = NF; intable = 1; rows[t] = 0; next }
                if ($0 ~ /^\|[-:| ]+\|$/) next
                rows[t]++
                if (NF != cols) printf "row with %d cells, header %d: %s\n", NF, cols, $0
                next }
        { if (intable) { t++; intable = 0 } }
        END { if (intable) t++
              if (t == 0) print "no table"
              for (i = 0; i < t; i++) if (rows[i] < 1) printf "table %d has no rows\n", i + 1 }' <<<"$body")
    [ -z "$bad" ] || err "$name: $bad"
done

has_row() { # experiment, row prefix
    section "$1" | grep -qF -- "| $2" || err "$1: no row starting '| $2'"
}
has_row churn "fm_pool | 16 B | alloc+free pairs |"
has_row churn "malloc/free | 1024 B | random free, 10,000 live |"
has_row bulk "fm_pool geometric, default initial |"
has_row bulk "glibc malloc/free |"
has_row regrowth "malloc(1024) |"
has_row regrowth "bare mapping in fm_pool's layout, no allocator (physical limit), second copy |"
section regrowth | grep -qE "^Targets \(issue 22\), this run: the same rule for the physical-limit row's second copy .*: [0-9]+ ns median, [0-9]+ ns worst: (met|NOT met)$" ||
    err "regrowth: no verdict line for the physical limit's second copy"
section regrowth | grep -qE "^Proposed \(issue 22\), this run: each fm_pool row's median .*: [0-9]+ ns: fm_pool geometric, initial 1 [0-9]+.*: (met|NOT met)$" ||
    err "regrowth: no proposed-target line"
section regrowth | grep -qE "^Proposed \(issue 22\), this run: each fm_pool row's median over the runs of the run's slowest growth at or below 25 us .*: fm_pool geometric, initial 1 [0-9.]+ us \([0-9]+ of [0-9]+ runs above\);.*: (met|NOT met)$" ||
    err "regrowth: no proposed growth line"
for row in "fm_pool geometric, initial 1" "fm_pool linear +1024, initial 32"; do
    section regrowth | grep -qF "The growths of $row, each by the sample it happened in" ||
        err "regrowth: no attribution of the growths of $row"
done
has_row telemetry "fm_telemetry_frame_end, 16 pools |"
has_row telemetry "16 fm_pool_get_stats calls (baseline) |"
section telemetry | grep -q "target < 2000 ns: " || err "telemetry: no verdict line"
has_row sparse "fm_pool; frees by fm_free (base pointer) |"
has_row sparse "zone: first fit, free-by-tag |"
has_row sparse "fm_pool_reset |"
section sparse | grep -q "^- fm_pool_reset of 1000 live items, no dtor, under 5 µs: " ||
    err "sparse: no verdict line for the reset target"
has_row timing "per item, desc.timing SAMPLED |"
# The scene on the classic backend beside the pool, and issue 22's line.
has_row scene "classic, tuned config |"
has_row scene "classic |"
has_row scene "malloc / classic, tuned config |"
section scene | grep -qE '^Issue 22 \(no regression\), this run: malloc / pool, tuned config, median [0-9.]+x \(target >= 8x: (met|NOT met)\)\. The same frames on the bare free list .*: malloc / it [0-9.]+x; it takes [0-9.]+x the pool.s median allocation time \([0-9]+ / [0-9]+ ns per frame\)\.$' ||
    err "scene: no issue 22 line"
section scene | grep -qE '^Proposed \(issue 22\), this run: the pool.s median allocation time per frame \(tuned config\) at most 0\.6x the bare free list.s on the same frames: [0-9.]+x: (met|NOT met)$' ||
    err "scene: no proposed line for issue 22"
# fm-callgrind's scene modes, run natively: the counts it divides by.
sums=""
for b in pool classic malloc; do
    line=$("$bench" --callgrind-scene-$b 3) || err "--callgrind-scene-$b 3 exited $?"
    grep -qE "^scene, [a-z, ]+: 3 frames, [1-9][0-9]* allocs, [0-9]+ frees, checksum [0-9a-f]{16}$" <<<"$line" ||
        err "--callgrind-scene-$b: '$line'"
    sums="$sums ${line##* }"
done
[ "$(tr ' ' '\n' <<<"$sums" | sort -u | grep -c .)" = 1 ] ||
    err "--callgrind-scene-*: the backends simulated different worlds:$sums"
msg=$("$bench" --callgrind-scene-nosuch 3 2>&1)
[ $? = 2 ] || err "--callgrind-scene-nosuch: exit is not 2"
grep -qF "fm-bench: --callgrind-scene-nosuch: no such backend (pool, malloc, classic)" <<<"$msg" ||
    err "--callgrind-scene-nosuch: message '$msg'"
# Issue 20's targets, after the experiments: a verdict for each of the three.
targets=$(awk '/^Targets \(issue 20\), this run:$/ {on = 1; next} on && /^- / {print} on && !/^- / {exit}' <<<"$out")
[ "$(grep -c ': \(met\|NOT met\)$' <<<"$targets")" = 3 ] ||
    err "no 'Targets (issue 20)' block with three verdicts: $targets"
grep -q '^- fm_telemetry_frame_end with 16 sources under 2 µs per frame: [0-9]* ns' <<<"$targets" ||
    err "issue 20: no telemetry target line"
grep -q "^- the timing mode's overhead and error beside the engine's batch timing: " <<<"$targets" ||
    err "issue 20: no timing target line"
# --only takes several names; an unknown one among them exits 2.
"$bench" --quick --no-pin --only telemetry,nosuch >/dev/null 2>&1
[ $? = 2 ] || err "--only with an unknown name did not exit 2"
has_row timing "batched, each batch clocked by the caller (engine/src/store.c) |"

if [ "$expect_libc" = 1 ]; then
    grep -q '^- malloc in fm-bench: libc\.so' <<<"$out" || err "fm-bench's malloc is not glibc's"
fi

# Each peer built: its header line and its rows in churn, bulk and regrowth.
check_peer() { # executable, variant name
    [ -x "$dir/$1" ] || return 0
    grep -q "^- peer $1: " <<<"$out" || err "no header line for peer $1"
    for e in churn bulk regrowth; do has_row "$e" "$2"; done
    "$dir/$1" --peer nosuch >/dev/null 2>&1; [ $? = 2 ] || err "$1 --peer nosuch: exit is not 2"
}
check_peer fm-bench-peer-mimalloc "mimalloc mi_malloc/mi_free"
check_peer fm-bench-peer-mimalloc-heap "mimalloc mi_heap per workload"
check_peer fm-bench-peer-jemalloc "jemalloc malloc/free"
check_peer fm-bench-peer-tcmalloc "tcmalloc malloc/free"
check_peer fm-bench-boost "boost::pool<> malloc/free"
if [ -x "$dir/fm-bench-boost" ]; then
    has_row bulk "std::allocate_shared, fast_pool_allocator, null_mutex |"
    has_row churn "boost::pool_allocator, default mutex | 16 B | alloc+free pairs |"
    alone=$("$dir/fm-bench-boost" --quick --only bulk) || err "fm-bench-boost alone failed"
    grep -qF "| malloc/free (glibc, in fm-bench-boost) |" <<<"$alone" ||
        err "fm-bench-boost alone: no glibc baseline row"
fi

# Without peers: no peer row.
noout=$("$bench" --quick --no-pin --no-peers --only bulk) || err "--no-peers run failed"
grep -qE "^\| (mimalloc|jemalloc|tcmalloc|boost::|std::)" <<<"$noout" && err "--no-peers still printed peer rows"

# The peer protocol end to end, with a stand-in peer beside a copy of
# fm-bench: its rows join the table with a ratio against fm-bench's glibc
# row; a malformed row or a failing peer stops fm-bench with a message.
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
cp "$bench" "$fake/fm-bench"
peer="$fake/fm-bench-peer-jemalloc"
write_peer() { # body of the churn answer
    printf '#!/bin/sh\ncase "$2" in\n  info) printf "info\\tstand-in\\tlibstandin.so\\n" ;;\n  churn) %s ;;\nesac\n' "$1" >"$peer"
    chmod +x "$peer"
}
write_peer 'printf "row\\tstand-in peer\\t16 pairs\\t4.5\\n"'
fout=$("$fake/fm-bench" --quick --no-pin --only churn 2>&1) || err "stand-in peer: fm-bench failed: $fout"
grep -q '^- peer fm-bench-peer-jemalloc: stand-in; its malloc comes from libstandin.so$' <<<"$fout" ||
    err "stand-in peer: no header line"
grep -qE '^\| stand-in peer \| 16 B \| alloc\+free pairs \| 4\.50 \| 4\.50 \| 4\.50 \| [0-9.]+ \|$' <<<"$fout" ||
    err "stand-in peer: its row is not in the churn table"
write_peer 'printf "row\\tstand-in peer\\t16 pairs\\tfast\\n"'
fout=$("$fake/fm-bench" --quick --no-pin --only churn 2>&1)
rc=$?
[ $rc = 1 ] || err "malformed peer row: exit $rc, expected 1"
grep -q "row 'stand-in peer': value 1 is not a number: 'fast'" <<<"$fout" ||
    err "malformed peer row: message missing"
write_peer 'exit 3'
fout=$("$fake/fm-bench" --quick --no-pin --only churn 2>&1)
rc=$?
[ $rc = 1 ] || err "failing peer: exit $rc, expected 1"
grep -q "fm-bench-peer-jemalloc (churn) failed: exit code 3" <<<"$fout" || err "failing peer: message missing"

# --csv: each file written whole or not at all. On a full disk (no file may
# grow: RLIMIT_FSIZE 0, SIGXFSZ ignored) fm-bench exits 1 naming the file and
# the reason, and the old file stays; a FIFO in its place is refused (exit 2)
# and stays a FIFO.
csvdir="$fake/csv"
"$bench" --quick --no-pin --no-peers --only churn --csv "$csvdir" >/dev/null || err "--csv run failed"
head -n 1 "$csvdir/churn.csv" | grep -qx 'variant,item_size,pattern,runs,median_ns_per_pair' ||
    err "--csv: churn.csv lacks its header"
printf 'old\n' >"$csvdir/churn.csv"
msg=$( (ulimit -f 0 && trap '' XFSZ &&
        exec "$bench" --quick --no-pin --no-peers --only churn --csv "$csvdir") 2>&1 >/dev/null)
rc=$?
[ $rc = 1 ] || err "--csv on a full disk: exit $rc, expected 1 ($msg)"
grep -qF -e "fm-bench: --csv $csvdir/churn.csv: write failed: File too large" <<<"$msg" ||
    err "--csv on a full disk: message '$msg'"
[ "$(cat "$csvdir/churn.csv")" = old ] || err "--csv on a full disk: the old churn.csv was changed"
ls "$csvdir"/*.tmp* >/dev/null 2>&1 && err "--csv on a full disk: a temporary file was left"
rm "$csvdir/churn.csv"
mkfifo "$csvdir/churn.csv"
msg=$(timeout 120 "$bench" --quick --no-pin --no-peers --only churn --csv "$csvdir" 2>&1 >/dev/null)
rc=$?
[ $rc = 2 ] || err "--csv over a FIFO: exit $rc, expected 2 ($msg)"
grep -qF -e "churn.csv: not a regular file (refusing to replace it)" <<<"$msg" ||
    err "--csv over a FIFO: message '$msg'"
[ -p "$csvdir/churn.csv" ] || err "--csv over a FIFO: the FIFO was replaced"
# Refused before anything runs: not even the run header is printed, also
# when the FIFO is the file of another experiment than the one asked for.
out=$(timeout 120 "$bench" --quick --no-pin --no-peers --only regrowth --csv "$csvdir" 2>/dev/null)
rc=$?
[ $rc = 2 ] || err "--csv over a FIFO, other experiment: exit $rc, expected 2"
[ -z "$out" ] || err "--csv over a FIFO: something ran before the refusal: '$(head -n 3 <<<"$out")'"

# Its tables lost to a full disk: exit 1, said on stderr.
msg=$("$bench" --quick --no-pin --no-peers --only churn 2>&1 >/dev/full)
rc=$?
[ $rc = 1 ] || err "stdout on a full disk: exit $rc, expected 1 ($msg)"
grep -qF -e "fm-bench: standard output: write failed: No space left on device" <<<"$msg" ||
    err "stdout on a full disk: message '$msg'"

for bad in "--only nosuch" "--repeat 0" "--repeat x" "--frobnicate" "--callgrind-scene-pool 0" \
    "--callgrind-scene-pool"; do
    # shellcheck disable=SC2086
    "$bench" $bad >/dev/null 2>&1
    [ $? = 2 ] || err "fm-bench $bad: exit is not 2"
done

[ $fail = 0 ] && echo "fm-bench --quick: every experiment printed its tables"
exit $fail
