#!/usr/bin/env bash
# Installs framemem from BUILD_DIR into a temporary prefix, then builds and
# runs a consumer three ways: find_package, pkg-config, add_subdirectory.
set -euo pipefail
src=$1 build=$2 cc=${3:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

cmake -S "$src/tests/install/consumer" -B "$tmp/fp" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/fp" >/dev/null
"$tmp/fp/consumer"

libdir=$(find "$tmp/prefix" -name framemem.pc -printf '%h\n' | head -n 1)
# Optimised (NDEBUG: the inline fast paths), with nothing but pkg-config's flags.
PKG_CONFIG_PATH=$libdir "$cc" -std=c11 -O2 -DNDEBUG "$src/tests/install/consumer/main.c" -o "$tmp/pc" \
    $(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs framemem)
"$tmp/pc"

cmake -S "$src/tests/install/consumer" -B "$tmp/sub" -DFM_CONSUMER_SOURCE_DIR="$src" \
    -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/sub" >/dev/null
"$tmp/sub/consumer"
