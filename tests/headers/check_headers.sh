#!/usr/bin/env bash
# tests/headers/check_headers.sh MODE SOURCE_DIR ...: the public headers
# as callers other than the project's own build see them (CTest runs each
# mode in the Debug and Release configurations; tests/headers/tests.cmake).
#
#   compilers SRC "FLAGS" LIB...   test_headers.c built with clang as C99,
#       gnu99 and C11, with gcc as gnu99, with clang++ as C++11, C++17 and C++20
#       (the CMake targets build it with gcc as C99 and g++ as C++17/20),
#       each -Wall -Wextra -pedantic -Werror plus FLAGS (the configuration's:
#       -O2 -DNDEBUG in Release, where the inline paths are compiled in),
#       linked with LIB... (engine, file, framemem; the overlay when given)
#       and run. FM_TEST_OVERLAY=1 in the environment: with the overlay.
#   msvc SRC          test_headers.c and test_atomic.c, C and C++, compiled
#       (-fsyntax-only) for x86_64-, aarch64- and i686-pc-windows-msvc with
#       -U__clang__: _MSC_VER without __GNUC__ or __clang__, as with MSVC;
#       msvc_mode.h poisons every GNU spelling; plain, and -DNDEBUG -DFM_DLL.
#   atomic SRC        test_atomic.c with the GNU mapping (gcc, g++, C and
#       C++) and with the Interlocked mapping (clang -fms-extensions
#       -DFM__ATOMIC_INTERLOCKED, C), each run.
# Exit status 0 when every variant passed; a missing compiler fails.
set -euo pipefail
mode=${1:?usage: check_headers.sh compilers|msvc|atomic SOURCE_DIR ...}
src=${2:?source dir}
shift 2
here=$src/tests/headers
inc=(-I"$src/memory/include" -I"$src/engine/include" -I"$src/demo/overlay/include")
warn=(-Wall -Wextra -Werror)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

need() {
    command -v "$1" >/dev/null ||
        { echo "check_headers.sh: $1 not found (tools/dev installs it)" >&2; exit 1; }
}

# run NAME COMMAND...: one variant, its compiler output shown when it fails.
failed=0
variants=0
run() {
    local name=$1
    shift
    variants=$((variants + 1))
    if ! "$@" >"$tmp/out" 2>&1; then
        echo "FAILED: $name" >&2
        echo "  $*" >&2
        sed 's/^/  | /' "$tmp/out" >&2
        failed=$((failed + 1))
    fi
}

case $mode in
compilers)
    flags=$1
    shift
    libs=("$@")
    need clang
    need clang++
    need gcc
    extra=()
    if [ "${FM_TEST_OVERLAY:-0}" = 1 ]; then
        # shellcheck disable=SC2207
        extra=(-DFM_TEST_OVERLAY $(pkg-config --cflags sdl2))
        # shellcheck disable=SC2207
        libs+=($(pkg-config --libs sdl2 stb))
    fi
    libs+=(-lpthread -lm)
    build_and_run() { # NAME COMPILER STD LANG
        local exe=$tmp/$1
        # shellcheck disable=SC2086
        "$2" -std="$3" -x "$4" "${warn[@]}" -pedantic $flags "${extra[@]}" "${inc[@]}" \
            "$here/test_headers.c" -x none "${libs[@]}" -o "$exe" && (cd "$tmp" && "$exe")
    }
    run clang-c99 build_and_run clang-c99 clang c99 c
    run clang-gnu99 build_and_run clang-gnu99 clang gnu99 c
    run clang-c11 build_and_run clang-c11 clang c11 c
    run gcc-gnu99 build_and_run gcc-gnu99 gcc gnu99 c
    run clang++-c++11 build_and_run clang++-c++11 clang++ c++11 c++
    run clang++-c++17 build_and_run clang++-c++17 clang++ c++17 c++
    run clang++-c++20 build_and_run clang++-c++20 clang++ c++20 c++
    ;;
msvc)
    need clang
    for target in x86_64-pc-windows-msvc aarch64-pc-windows-msvc i686-pc-windows-msvc; do
        for lang in c c++; do
            for defs in "" "-DNDEBUG -DFM_DLL"; do
                for file in test_headers.c test_atomic.c; do
                    # shellcheck disable=SC2086
                    run "$target $lang $file $defs" clang --target="$target" -x "$lang" \
                        -fsyntax-only -ffreestanding -nostdlibinc -U__clang__ \
                        -isystem "$here/msvc_include" -include "$here/msvc_mode.h" \
                        "${warn[@]}" $defs "${inc[@]}" "$here/$file"
                done
            done
        done
    done
    ;;
atomic)
    need gcc
    need g++
    need clang
    build_and_run() { # NAME COMPILER ARGS...
        local exe=$tmp/$1 cc=$2
        shift 2
        "$cc" "${warn[@]}" -O2 "${inc[@]}" "$@" "$here/test_atomic.c" -x none -o "$exe" \
            -lpthread && "$exe"
    }
    run gnu-gcc build_and_run gnu-gcc gcc -std=c11 -pedantic
    run gnu-g++ build_and_run gnu-g++ g++ -std=c++17 -pedantic -x c++
    # clang models the Interlocked functions' long as int on Linux (LP64)
    # and declares them itself: its warnings about both say nothing about
    # Windows, where long and the declarations from <intrin.h> fit.
    run interlocked-clang build_and_run interlocked-clang clang -std=c11 -fms-extensions \
        -DFM__ATOMIC_INTERLOCKED -Wno-incompatible-pointer-types \
        -Wno-implicit-function-declaration
    ;;
*)
    echo "check_headers.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac

echo "check_headers.sh $mode: $((variants - failed)) of $variants variants passed"
[ "$failed" -eq 0 ]
