#!/usr/bin/env bash
# pool.h reads top to bottom: at most 250 lines up to its detail include
# (issue 17); the long reference belongs in docs/POOLS.md.
set -euo pipefail
h=$1/memory/include/framemem/pool.h
n=$(grep -n '^#include "framemem/detail/pool.h"' "$h" | cut -d: -f1)
if [ -z "$n" ]; then
    echo "check_pool_h_length: $h has no detail include" >&2
    exit 1
fi
if [ "$n" -gt 250 ]; then
    echo "check_pool_h_length: $h is $n lines up to its detail include, over 250:" \
         "move reference text to docs/POOLS.md or macro bodies to detail/pool.h" >&2
    exit 1
fi
echo "pool.h: $n lines up to its detail include (limit 250)"
