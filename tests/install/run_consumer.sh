#!/usr/bin/env bash
# Installs framemem from BUILD_DIR into a temporary prefix, then builds and
# runs a consumer three ways: find_package, pkg-config, add_subdirectory.
# Then the shared libraries (FM_SHARED), built and installed on their own:
# their SONAMEs, their exports (check_exports.sh), the consumer through
# find_package and pkg-config as an optimised build (inline paths reading the
# library's thread-local variable), and a program that dlopens libframemem.
set -euo pipefail
src=$1 build=$2 cc=${3:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
consumer=$src/tests/install/consumer
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

cmake -S "$consumer" -B "$tmp/fp" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/fp" >/dev/null
"$tmp/fp/consumer"
"$tmp/fp/consumer_telemetry"

libdir=$(find "$tmp/prefix" -name framemem.pc -printf '%h\n' | head -n 1)
# Optimised (NDEBUG: the inline fast paths), with nothing but pkg-config's flags.
PKG_CONFIG_PATH=$libdir "$cc" -std=c11 -O2 -DNDEBUG "$consumer/main.c" -o "$tmp/pc" \
    $(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs framemem)
"$tmp/pc"

cmake -S "$consumer" -B "$tmp/sub" -DFM_CONSUMER_SOURCE_DIR="$src" \
    -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/sub" >/dev/null
"$tmp/sub/consumer"
"$tmp/sub/consumer_telemetry"

# ------------------------------------------------------- shared libraries
cmake -S "$src" -B "$tmp/shared-build" -DFM_SHARED=ON -DFM_BUILD_TESTS=OFF -DFM_BUILD_DEMO=OFF \
    -DFM_BUILD_TOOLS=OFF -DFM_WERROR=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" \
    >/dev/null
cmake --build "$tmp/shared-build" -j 2 --target framemem framemem_file framemem_telemetry >/dev/null
cmake --install "$tmp/shared-build" --prefix "$tmp/shared" >/dev/null
libdir=$(find "$tmp/shared" -name framemem.pc -printf '%h\n' | head -n 1)
libdir=${libdir%/pkgconfig}
for lib in libframemem libframemem_file libframemem_telemetry; do
    soname=$(readelf -d "$libdir/$lib.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    if [ "$soname" != "$lib.so.0" ] || [ ! -e "$libdir/$lib.so.0" ]; then
        echo "$lib.so: SONAME '$soname' (want $lib.so.0, installed beside it)" >&2
        exit 1
    fi
done
bash "$src/tests/install/check_exports.sh" "$src" "$libdir"

needs_shared() { # EXE: linked against libframemem.so.0, not the archive
    readelf -d "$1" | grep -q 'NEEDED.*\[libframemem\.so\.0\]' ||
        { echo "$1 does not load libframemem.so.0" >&2; exit 1; }
}
cmake -S "$consumer" -B "$tmp/shared-fp" -DCMAKE_PREFIX_PATH="$tmp/shared" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/shared-fp" >/dev/null
needs_shared "$tmp/shared-fp/consumer"
"$tmp/shared-fp/consumer"
# Its libframemem_telemetry.so.0 needs libframemem_file.so.0, which the
# program's RUNPATH does not cover (it is not the program's own NEEDED): an
# installed prefix outside the loader's paths is named, as a game's would be.
LD_LIBRARY_PATH=$libdir "$tmp/shared-fp/consumer_telemetry"

pc_flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs framemem)
[[ " $pc_flags " == *" -DFM_DLL "* ]] ||
    { echo "framemem.pc of a shared build: no -DFM_DLL in '$pc_flags'" >&2; exit 1; }
# shellcheck disable=SC2086
"$cc" -std=c11 -O2 -DNDEBUG "$consumer/main.c" -o "$tmp/shared-pc" $pc_flags \
    -Wl,-rpath,"$libdir"
needs_shared "$tmp/shared-pc"
"$tmp/shared-pc"

"$cc" -std=c11 -O2 -DNDEBUG -I"$src/memory/include" "$consumer/dlopen.c" -o "$tmp/dlopen" -ldl
"$tmp/dlopen" "$libdir/libframemem.so.0"
