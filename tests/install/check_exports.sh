#!/usr/bin/env bash
# tests/install/check_exports.sh SOURCE_DIR LIBDIR: the shared libraries in
# LIBDIR (libframemem.so, libframemem_file.so, libframemem_telemetry.so)
# export every function that
# framemem's headers declare out of line, whatever compiler a caller uses
# (fm_clock_now and the inline paths' fm__*_slow included), the variables
# they declare (fm__tc_cur, fm__pool_map), and nothing else. The declarations come from
# the compiler (gcc -aux-info lists each function a translation unit
# declares, with its header), the exports from nm -D.
set -euo pipefail
src=$1 libdir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '#include <framemem/framemem.h>\n#include <framemem/file.h>\n#include <framemem/telemetry.h>\n#include <framemem/config.h>\n' >"$tmp/all.c"
# Release callers' view (-DNDEBUG): the inline paths' declarations too.
gcc -std=c11 -DNDEBUG -I"$src/memory/include" -aux-info "$tmp/all.aux" -c "$tmp/all.c" \
    -o "$tmp/all.o"
# "/* .../framemem/pool.h:145:NC */ extern fm_pool *fm_pool_create (const fm_pool_desc *);"
sed -n 's|^/\* [^ ]*/framemem/[^ ]*:[0-9]*:NC \*/ extern .*[ *]\([A-Za-z_0-9]*\) (.*|\1|p' \
    "$tmp/all.aux" | sort -u >"$tmp/functions"
# Variables: the extern declarations of framemem's headers (the line
# markers say which header a line comes from; telemetry.h includes stdio.h),
# an array's bounds dropped.
gcc -std=c11 -DNDEBUG -I"$src/memory/include" -E "$tmp/all.c" |
    awk '/^# [0-9]+ "/ { fm = ($3 ~ /\/framemem\//); next } fm && /^extern /' |
    sed 's/ *__attribute__.*//; s/ *;.*//; s/\[.*//; s/.*[ *]//' | sort -u >"$tmp/variables"
sort -u "$tmp/functions" "$tmp/variables" >"$tmp/declared"
[ "$(wc -l <"$tmp/functions")" -ge 100 ] ||
    { echo "check_exports.sh: only $(wc -l <"$tmp/functions") declarations found" >&2; exit 1; }

nm -D --defined-only "$libdir/libframemem.so" "$libdir/libframemem_file.so" \
    "$libdir/libframemem_telemetry.so" |
    awk 'NF == 3 { print $3 }' | sort -u >"$tmp/exported"

status=0
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
if [ -n "$missing" ]; then
    echo "declared in the headers but not exported:" $missing >&2
    status=1
fi
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
if [ -n "$extra" ]; then
    echo "exported but declared in no header:" $extra >&2
    status=1
fi
echo "check_exports.sh: $(wc -l <"$tmp/functions") functions and $(wc -l <"$tmp/variables")" \
     "variable(s) declared, $(wc -l <"$tmp/exported") symbols exported"
exit $status
