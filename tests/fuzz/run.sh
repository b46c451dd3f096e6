#!/usr/bin/env bash
# tests/fuzz/run.sh: build one libFuzzer harness and fuzz it for a while.
#
#   tests/fuzz/run.sh NAME SECONDS [BUILD_DIR] [-- LIBFUZZER_ARGS...]
#
#   NAME       harness tests/fuzz/fuzz_NAME.c (pool, arena, frame_arena, ...)
#   SECONDS    fuzzing time; 0 runs the seed corpus once (a regression run)
#   BUILD_DIR  default build/fuzz; configured here (clang, Debug,
#              FM_SANITIZE=address,undefined, FM_BUILD_FUZZERS=ON, tests and
#              tools off) when it has no CMake cache yet, built every time
#              (FUZZ_NO_BUILD=1: not configured nor built, the harness must
#              be there: tools/dev test runs several at once in one tree)
#
# The committed corpus (tests/fuzz/corpus/NAME) is read, never written: new
# inputs go to a temporary directory, deleted afterwards. FUZZ_SAVE=1 merges
# the ones that add coverage into the committed corpus; FUZZ_KEEP=1 keeps the
# temporary directory. A crash leaves its reproducer in
# BUILD_DIR/tests/fuzz/artifacts/NAME/ and exits 1; the script prints how to
# minimize it and where a reproducer goes so the ctest regression run covers
# it. Prints the executions and the coverage (cov: edges, ft: features).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() {
    sed -n '3,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[ $# -ge 2 ] || usage
name=$1 seconds=$2
shift 2
build=$root/build/fuzz
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    case $1 in /*) build=$1 ;; *) build=$PWD/$1 ;; esac
    shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
extra=("$@")

[[ $seconds =~ ^[0-9]+$ ]] || { echo "run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }
if [ ! -f "$here/fuzz_$name.c" ]; then
    echo "run.sh: no harness tests/fuzz/fuzz_$name.c; there are:" \
        $(cd "$here" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//') >&2
    exit 2
fi

log() { printf '\033[1m== %s\033[0m\n' "$*"; }

# ------------------------------------------------------------ configure, build
bin=$build/tests/fuzz/fuzz_$name
if [ "${FUZZ_NO_BUILD:-0}" = 1 ]; then
    [ -x "$bin" ] || { echo "run.sh: FUZZ_NO_BUILD=1 and $bin is not built" >&2; exit 2; }
elif [ ! -f "$build/CMakeCache.txt" ]; then
    log "configure $build (clang, ASan+UBSan, fuzzers)"
    cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
        -DFM_SANITIZE=address,undefined -DFM_BUILD_FUZZERS=ON -DFM_BUILD_TESTS=OFF \
        -DFM_BUILD_TOOLS=OFF -DFM_WERROR=ON >/dev/null
elif ! grep -q '^FM_BUILD_FUZZERS:BOOL=ON' "$build/CMakeCache.txt"; then
    log "turn on FM_BUILD_FUZZERS in $build"
    cmake -S "$root" -B "$build" -DFM_BUILD_FUZZERS=ON >/dev/null
fi
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
    cmake --build "$build" --target "fuzz_$name" -j "${FM_JOBS:-$(nproc 2>/dev/null || echo 2)}" \
        >/dev/null
fi

# ------------------------------------------------------------------- run
corpus=$here/corpus/$name
work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_$name.XXXXXX")
artifacts=$build/tests/fuzz/artifacts/$name
mkdir -p "$artifacts"
cleanup() { [ "${FUZZ_KEEP:-0}" = 1 ] && echo "inputs kept in $work" || rm -rf "$work"; }
trap cleanup EXIT

# libFuzzer writes new inputs to the first directory only.
dirs=("$work/new")
mkdir -p "$work/new"
[ -d "$corpus" ] && dirs+=("$corpus")
if [ "$seconds" -eq 0 ]; then
    mode=(-runs=0)
    log "fuzz_$name: seed corpus once"
else
    mode=(-max_total_time="$seconds")
    log "fuzz_$name: $seconds s"
fi

status=0
"$bin" "${dirs[@]}" "${mode[@]}" -print_final_stats=1 -timeout=30 \
    -artifact_prefix="$artifacts/" "${extra[@]+"${extra[@]}"}" >"$work/log" 2>&1 || status=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n 1)
last=$(grep -E '^#[0-9]+' "$work/log" | grep -E 'cov: ' | tail -n 1 || true)
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
new=$(find "$work/new" -type f | wc -l)

if [ "$status" -ne 0 ]; then
    grep -E 'model mismatch|framemem last error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' \
        "$work/log" | head -n 12 || true
    echo "--- last lines of the log:"
    tail -n 25 "$work/log"
    crash=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$work/log" | tail -n 1)
    echo
    echo "fuzz_$name FAILED after ${execs:-?} executions (exit $status)."
    if [ -n "$crash" ]; then
        echo "reproduce: $bin $crash"
        echo "minimize:  $bin -minimize_crash=1 -runs=20000 -artifact_prefix=$artifacts/min- $crash"
        echo "keep it:   cp <minimized file> $corpus/crash-<what> (the ctest run then covers it)"
    fi
    exit 1
fi

echo "fuzz_$name: ${execs:-?} executions (${rate:-?}/s), cov: ${cov:-?} edges, ft: ${ft:-?} features, corpus ${corp:-?} (${new} new inputs)"
if [ "${FUZZ_SAVE:-0}" = 1 ] && [ "$new" -gt 0 ]; then
    mkdir -p "$corpus"
    before=$(find "$corpus" -type f | wc -l)
    "$bin" -merge=1 "$corpus" "$work/new" >"$work/merge.log" 2>&1
    after=$(find "$corpus" -type f | wc -l)
    echo "merged $((after - before)) input(s) that add coverage into $corpus"
fi
