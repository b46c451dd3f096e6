#!/usr/bin/env bash
# tests/ports/check_darwin.sh SOURCE_DIR: the macOS paths, compile-checked.
#
# Debian has no macOS SDK, so nothing here links or runs for macOS. What is
# checked: every source a macOS build compiles (memory/ with os_posix.c, the
# file and telemetry layers, engine/) compiles to a Mach-O assembly file for
# arm64-apple-macos11 and x86_64-apple-macos10.15, with the target's own
# predefined macros (__APPLE__ and __MACH__ come from --target, never from
# -D; __linux__ is not defined), -std=c11 and the project's warnings as
# errors. The headers are clang's own (stddef.h, stdint.h, stdatomic.h...)
# and darwin_sdk_shim/include here, which declares what those sources use of
# Apple's C library as Apple declares it (not the SDK: see its README.md).
# Linux-only constructs (prctl, Linux's MADV_* values, fdatasync) are
# absent from the shim, so a macOS build that reaches one fails here, as a
# macOS branch that stops compiling does. Each source is compiled as a Debug
# build sees it (FM_TRACK_SITES) and as a Release one with FM_HOOKS and
# FM_DLL (the other sides of the headers' conditionals); tests/headers'
# caller of every public header, as C99 and C11, -pedantic. Then the macOS
# branches must have been taken: the clock calls mach_absolute_time and
# mach_timebase_info (not clock_gettime or prctl), the file layer calls
# fcntl (F_FULLFSYNC), and no compiled source names a path in /proc or /sys.
# Exit status 0 when every step passed; a missing clang or stb_ds.h fails.
set -euo pipefail
src=${1:?usage: check_darwin.sh SOURCE_DIR}
shim=$src/tests/ports/darwin_sdk_shim/include
cc=${FM_DARWIN_CC:-clang}
command -v "$cc" >/dev/null ||
    { echo "check_darwin.sh: $cc not found (tools/dev installs clang)" >&2; exit 1; }
builtin=$("$cc" -print-resource-dir)/include
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# stb_ds.h (engine/ds.h) is a header alone, the same for every platform:
# Debian's copy, on its own, so that no other host header comes along.
stb=/usr/include/stb/stb_ds.h
[ -f "$stb" ] ||
    { echo "check_darwin.sh: $stb not found (tools/dev installs libstb-dev)" >&2; exit 1; }
mkdir -p "$tmp/stb/stb"
cp "$stb" "$tmp/stb/stb/"

# What a macOS build compiles: the CMake targets' sources. pool/unit.c
# includes the rest of pool/; os_win32.c is Windows'. A source in neither
# list fails the check until it is placed in one.
cd "$src"
sources=(memory/src/*.c memory/src/platform/os_posix.c memory/src/pool/unit.c
         memory/src/telemetry/*.c engine/src/*.c)
failed=0
for f in $(find memory/src engine/src -name '*.c' | sort); do
    case " ${sources[*]} " in *" $f "*) continue ;; esac
    [ "$f" = memory/src/platform/os_win32.c ] && continue
    [[ $f == memory/src/pool/* ]] &&
        grep -q "^#include \"pool/$(basename "$f")\"" memory/src/pool/unit.c && continue
    echo "FAILED: $f is not in check_darwin.sh's list of what a macOS build compiles" >&2
    failed=$((failed + 1))
done

flags=(-std=c11 -S -nostdinc -isystem "$builtin" -isystem "$shim"
       -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
       -D_GNU_SOURCE -I"$src/memory/include" -I"$src/engine/include" -isystem "$tmp/stb")
compiles=0
compile_failed=0
for target in arm64-apple-macos11 x86_64-apple-macos10.15; do
    for defs in "-DFM_TRACK_SITES" "-DNDEBUG -DFM_HOOKS -DFM_DLL"; do
        for f in "${sources[@]}"; do
            case $f in
            memory/src/file.c) own=(-DFM__BUILDING_FILE -Imemory/src) ;;
            memory/src/telemetry/*) own=(-DFM__BUILDING_TELEMETRY -Imemory/src/telemetry) ;;
            engine/src/*) own=(-Iengine/src) ;;
            *) own=(-DFM__BUILDING_LIBRARY -Imemory/src) ;;
            esac
            asm=$tmp/$target-$(basename "$f" .c).s
            compiles=$((compiles + 1))
            # shellcheck disable=SC2086
            if ! "$cc" --target="$target" "${flags[@]}" $defs "${own[@]}" "$f" -o "$asm" \
                >"$tmp/out" 2>&1; then
                echo "FAILED: $target $defs $f" >&2
                sed 's/^/  | /' "$tmp/out" >&2
                compile_failed=$((compile_failed + 1))
            fi
        done
    done
    # A macOS caller of the public headers: tests/headers' program, as C99
    # and as C11 with NDEBUG, -pedantic (compiled only).
    for std in "-std=c99" "-std=c11 -DNDEBUG"; do
        compiles=$((compiles + 1))
        # shellcheck disable=SC2086
        if ! "$cc" --target="$target" "${flags[@]}" $std -pedantic tests/headers/test_headers.c \
            -o "$tmp/caller.s" >"$tmp/out" 2>&1; then
            echo "FAILED: $target $std tests/headers/test_headers.c" >&2
            sed 's/^/  | /' "$tmp/out" >&2
            compile_failed=$((compile_failed + 1))
        fi
    done
    # The macOS branches, not the Linux ones, in what was built (Mach-O
    # symbols carry a leading underscore).
    expect() { # FILE.s SYMBOL yes|no
        local asm=$tmp/$target-$1 n
        [ -f "$asm" ] || return 0 # its compile failed, reported above
        n=$(grep -c "[[:space:]]_$2\b" "$asm" || true)
        if { [ "$3" = yes ] && [ "$n" -eq 0 ]; } || { [ "$3" = no ] && [ "$n" -gt 0 ]; }; then
            echo "FAILED: $target ${1%.s}.c: a macOS build should $([ "$3" = yes ] ||
                echo 'not ')call $2" >&2
            failed=$((failed + 1))
        fi
    }
    expect os_posix.s mach_absolute_time yes
    expect os_posix.s mach_timebase_info yes
    expect os_posix.s clock_gettime no
    expect os_posix.s prctl no
    expect file.s fcntl yes
    # macOS has neither /proc nor /sys: no path into them in what was built.
    for asm in "$tmp/$target"-*.s; do
        if grep -q '"/proc/\|"/sys/' "$asm"; then
            echo "FAILED: $target $(basename "$asm" .s | sed "s/^$target-//").c: a macOS" \
                 "build reads /proc or /sys: $(grep -o '"/proc/[^"]*"\|"/sys/[^"]*"' "$asm" |
                 head -1)" >&2
            failed=$((failed + 1))
        fi
    done
done
echo "check_darwin.sh: $((compiles - compile_failed)) of $compiles compiles passed" \
     "(${#sources[@]} sources and a caller; arm64-apple-macos11, x86_64-apple-macos10.15);" \
     "$failed other failures"
[ "$failed" -eq 0 ] && [ "$compile_failed" -eq 0 ]
