#!/usr/bin/env bash
# The engine, the demo and their suites start no thread: tools/dev's TSan
# configuration leaves those suites out on that ground (TSan reports races
# between threads), so a thread started there must fail a test, here.
#
#   check_no_threads.sh FILE...
#
# A FILE ending in .c (a suite's source) must not call a function that starts
# a thread (the suites' own fm_test_thread_create among them); any other FILE
# (a static library or an executable) must have none among its undefined
# symbols (nm -u). Fails naming the file and the function.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: check_no_threads.sh FILE..." >&2; exit 2; }
starters='pthread_create|thrd_create|SDL_CreateThread|SDL_CreateThreadWithStackSize|CreateThread|_beginthread|_beginthreadex|fm_test_thread_create'
fail=0
for f in "$@"; do
    [ -f "$f" ] || { echo "check_no_threads: no file $f" >&2; exit 2; }
    case $f in
        *.c) found=$(grep -oE "\\b($starters)[[:space:]]*\\(" "$f" | sed 's/[[:space:](]*$//' | sort -u || true) ;;
        # "U name"; versioned names end in @GLIBC_x.
        *) found=$(nm -u "$f" | awk '{ print $NF }' | sed 's/@.*//' | grep -Ex "$starters" | sort -u || true) ;;
    esac
    if [ -n "$found" ]; then
        echo "check_no_threads: $(basename "$f") calls $(tr '\n' ' ' <<<"$found")- it starts a thread," \
            "so the TSan configuration (tools/dev) must run its suites" >&2
        fail=1
    else
        echo "$(basename "$f"): starts no thread"
    fi
done
exit "$fail"
