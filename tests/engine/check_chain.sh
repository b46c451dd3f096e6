#!/usr/bin/env bash
# The engine's sources form a one-way chain (engine/src/eng_internal.h):
#
#   check_chain.sh ENG_INTERNAL_H LIBFRAMEMEM_ENGINE.a [PROGRAM...]
#
# 1. Reads the order from the "ENG_FILE_ORDER:" line of ENG_INTERNAL_H
#    (bottom first). Every object file of the library must be in it and every
#    name in it must be an object file of the library.
# 2. Every eng_ symbol an object file refers to (nm: undefined) must be
#    defined by an object file below it in that order: a file never calls one
#    above it, nor one beside it in a circle.
# 3. Each PROGRAM (fm-tune, fm-plot: readers of telemetry and configs)
#    defines none of the symbols of the store, world and engine files: the
#    chain lets them link without eng_create and the world.
# Prints what it checked; any violation is one line each, then exit 1.
set -euo pipefail
header=$1 lib=$2
shift 2

order=$(sed -n 's/^[ *]*ENG_FILE_ORDER: *//p' "$header")
if [ -z "$order" ]; then
    echo "check_chain: no 'ENG_FILE_ORDER:' line in $header" >&2
    exit 1
fi

# "member symbol-type symbol" for every symbol of the archive's objects.
# nm -A prints "LIB:MEMBER:ADDRESS TYPE NAME" ("LIB:MEMBER: U NAME" when undefined).
symbols=$(nm -A -g "$lib" | awk 'NF == 3 {
    n = split($1, path, ":"); member = path[n - 1]; sub(/\.c\.o$|\.o$/, "", member);
    print member, $2, $3 }')

bad=0
fail() {
    echo "check_chain: $*" >&2
    bad=1
}

members=$(ar t "$lib" | sed 's/\.c\.o$//; s/\.o$//' | sort -u)
for m in $members; do
    case " $order " in *" $m "*) ;; *) fail "$m.c is not in ENG_FILE_ORDER ($order)" ;; esac
done
for f in $order; do
    grep -qx "$f" <<<"$members" || fail "ENG_FILE_ORDER names $f, which is not an object of $lib"
done

# Position of each file in the order (0 = bottom).
declare -A pos
i=0
for f in $order; do
    pos[$f]=$i
    i=$((i + 1))
done

# Where each eng_ symbol is defined.
declare -A where
while read -r m type sym; do
    [ "$type" = U ] && continue
    case $sym in eng_*) where[$sym]=$m ;; esac
done <<<"$symbols"

checked=0
while read -r m type sym; do
    [ "$type" = U ] || continue
    case $sym in eng_*) ;; *) continue ;; esac
    checked=$((checked + 1))
    d=${where[$sym]:-}
    if [ -z "$d" ]; then
        fail "$m.c refers to $sym, which no engine file defines"
    elif [ -n "${pos[$m]:-}" ] && [ -n "${pos[$d]:-}" ] && [ "${pos[$d]}" -ge "${pos[$m]}" ]; then
        fail "$m.c calls $sym of $d.c, which is not below it in the order ($order)"
    fi
done <<<"$symbols"
echo "check_chain: order $order; $checked references to eng_ symbols checked"

# The readers of telemetry and configs carry none of store, world, engine.
for prog in "$@"; do
    upper=$(awk '$2 != "U" && ($1 == "store" || $1 == "world" || $1 == "engine") {print $3}' \
        <<<"$symbols" | sort -u)
    defined=$(nm -g --defined-only "$prog" | awk '{print $NF}' | sort -u)
    found=$(comm -12 <(echo "$upper") <(echo "$defined") | head -n 5 | tr '\n' ' ')
    if [ -n "$found" ]; then
        fail "$(basename "$prog") contains symbols of store.c, world.c or engine.c: $found"
    else
        echo "check_chain: $(basename "$prog"): no symbol of store.c, world.c or engine.c" \
            "($(grep -c '^eng_' <<<"$defined") eng_ symbols)"
    fi
done
exit $bad
