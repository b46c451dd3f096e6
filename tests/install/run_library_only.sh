#!/usr/bin/env bash
# A game that adds framemem with add_subdirectory and -DFM_BUILD_ENGINE=OFF
# (tests, demo and tools follow it off): configuring and building need a C
# compiler and CMake, nothing else, and the game's install holds framemem's
# library and nothing of its engine, demo or tools. The game profiles with
# -DFM_HOOKS=ON: its code gets FM_HOOKS from the target and hears the hooks
# (the consumer checks), and the installed package passes it on.
#
# "Nothing else": the build runs with a PATH holding every program of the
# current one but pkg-config and SDL's config scripts, and CMake is told
# that pkg-config and SDL2 cannot be found, so any find_package of them
# fails the configure.
set -euo pipefail
src=$1 cc=${2:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/bin"
IFS=: read -ra path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do
    [ -d "$d" ] || continue
    for f in "$d"/*; do
        name=${f##*/}
        case $name in *pkg-config* | pkgconf* | sdl2-config | sdl-config) continue ;; esac
        [ -x "$f" ] && [ ! -e "$tmp/bin/$name" ] && ln -s "$f" "$tmp/bin/$name"
    done
done
for tool in pkg-config pkgconf sdl2-config; do
    if PATH=$tmp/bin command -v "$tool" >/dev/null; then
        echo "run_library_only: $tool is still on the stripped PATH" >&2
        exit 1
    fi
done

export PATH=$tmp/bin
cmake -S "$src/tests/install/consumer" -B "$tmp/build" -DFM_CONSUMER_SOURCE_DIR="$src" \
    -DFM_BUILD_ENGINE=OFF -DFM_HOOKS=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_DISABLE_FIND_PACKAGE_SDL2=ON \
    >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/build/consumer"
"$tmp/build/consumer_telemetry"

# Nothing of the engine, demo or tools was even configured.
for dir in engine demo tools tests; do
    if [ -e "$tmp/build/framemem/$dir" ]; then
        echo "run_library_only: framemem/$dir was configured in a library-only build" >&2
        exit 1
    fi
done

# The install: the game's program, and framemem's library, headers and
# package files; anything else is reported.
cmake --install "$tmp/build" --prefix "$tmp/prefix" >/dev/null
status=0
while IFS= read -r f; do
    case $f in
        bin/consumer | bin/consumer_telemetry) ;;
        lib*/libframemem.a | lib*/libframemem_file.a | lib*/libframemem_telemetry.a) ;;
        include/framemem/*.h | include/framemem/detail/*.h) ;;
        lib*/cmake/framemem/*.cmake | lib*/pkgconfig/framemem.pc) ;;
        share/doc/framemem/POOLS.md) ;;
        *) echo "run_library_only: the install holds $f" >&2; status=1 ;;
    esac
done < <(cd "$tmp/prefix" && find . -type f -o -type l | sed 's|^\./||' | sort)
[ -f "$tmp/prefix/include/framemem/framemem.h" ] || { echo "run_library_only: no headers installed" >&2; status=1; }
[ -f "$tmp/prefix/share/doc/framemem/POOLS.md" ] || { echo "run_library_only: docs/POOLS.md not installed" >&2; status=1; }
ls "$tmp"/prefix/lib*/libframemem.a >/dev/null 2>&1 || { echo "run_library_only: no library installed" >&2; status=1; }
# An FM_HOOKS library tells its callers, through both kinds of package file.
grep -q -- '-DFM_HOOKS' "$tmp"/prefix/lib*/pkgconfig/framemem.pc ||
    { echo "run_library_only: framemem.pc of an FM_HOOKS build lacks -DFM_HOOKS" >&2; status=1; }
grep -q 'FM_HOOKS' "$tmp"/prefix/lib*/cmake/framemem/framemem-targets.cmake ||
    { echo "run_library_only: the CMake package of an FM_HOOKS build lacks FM_HOOKS" >&2; status=1; }
[ $status -eq 0 ] && echo "library-only build: configured, built and installed without pkg-config or SDL"
exit $status
