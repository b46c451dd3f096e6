#!/usr/bin/env bash
# framemem-minimal's tune-and-rerun loop, headless (SDL's dummy video
# driver): a run from the program's own small sizes grows inside allocation
# calls after its first frame; fm-tune writes a config from its CSV; the
# same run on that config grows in no allocation call after the first frame
# (the program's summary and its CSV agree); the timed pool's allocation
# time is in the CSV. A config with problems is
# reported at its file:line and the run goes on; one that cannot be read
# stops it (exit 2).
#
#   check_minimal.sh PATH/TO/framemem-minimal PATH/TO/fm-tune
set -u
minimal=$(realpath "$1")
tune=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }
# In-allocation growths (CSV column grow_events) of the frames after the first.
late_growths() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "grow_events") c = i; next }
                          $1 > first { g += $c } NR == 2 { first = $1 } END { print g + 0 }' "$1"; }

"$minimal" --frames 300 --csv run1.csv >out1.txt 2>err1.txt || err "first run: exit $? ($(cat err1.txt))"
[ "$(late_growths run1.csv)" -gt 0 ] || err "first run: no growth inside an allocation after frame 0"
grep -q "300 frames, [1-9][0-9]* growth(s) inside allocation calls after the first" out1.txt ||
    err "first run's summary: $(cat out1.txt)"
# Allocation time per frame from the pool's own timing (desc.timing), not
# from calls the program clocks: sparks' alloc_ns adds up, ships' (untimed) is 0.
alloc_ns() { awk -F, -v src="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "alloc_ns") c = i; next }
                                  $2 == src { t += $c } END { print t + 0 }' "$1"; }
[ "$(alloc_ns run1.csv sparks)" -gt 0 ] || err "first run: no allocation time for 'sparks'"
[ "$(alloc_ns run1.csv ships)" = 0 ] || err "first run: allocation time for the untimed 'ships'"
for src in sparks ships frame game; do
    grep -q "^[0-9]*,$src," run1.csv || err "run1.csv has no rows for '$src'"
done

"$tune" --out tuned.ini run1.csv >tune.txt 2>&1 || err "fm-tune: exit $? ($(cat tune.txt))"
grep -q '^\[pool.sparks\]' tuned.ini || err "tuned.ini has no [pool.sparks]"

"$minimal" --frames 300 --config tuned.ini --csv run2.csv >out2.txt 2>err2.txt ||
    err "tuned run: exit $? ($(cat err2.txt))"
[ -s err2.txt ] && err "tuned run: the config had problems: $(cat err2.txt)"
[ "$(late_growths run2.csv)" = 0 ] || err "tuned run: $(late_growths run2.csv) growth(s) after frame 0"
grep -q "300 frames, 0 growth(s) inside allocation calls after the first" out2.txt ||
    err "tuned run's summary: $(cat out2.txt)"

# Problems: reported at file:line (the program's sizes kept), the run goes on.
printf '[pool.sparks]\nmax_capacity = 10\n[pool.nope]\ninitial_capacity = 5\n' >bad.ini
"$minimal" --frames 5 --config bad.ini >/dev/null 2>err3.txt || err "config with problems: exit $?"
grep -q "bad.ini:1: \[pool.sparks\] not applied to the program's desc: initial_capacity above max_capacity" err3.txt ||
    err "problem not reported: $(cat err3.txt)"
grep -q "bad.ini:3: \[pool.nope\] matches no pool of the program" err3.txt ||
    err "unused section not reported: $(cat err3.txt)"
"$minimal" --frames 5 --config nosuch.ini >/dev/null 2>err4.txt
rc=$?
[ $rc = 2 ] || err "unreadable config: exit $rc, expected 2"
grep -q "config nosuch.ini: cannot open" err4.txt || err "unreadable config: '$(cat err4.txt)'"
"$minimal" --frobnicate >/dev/null 2>&1
[ $? = 2 ] || err "bad argument: not exit 2"
"$minimal" --frames 5 --csv nodir/x.csv >/dev/null 2>err5.txt
[ $? = 1 ] || err "unwritable CSV: not exit 1"
grep -q "nodir/x.csv" err5.txt || err "unwritable CSV: '$(cat err5.txt)'"
[ $fail = 0 ] && echo "framemem-minimal: tuned from its own CSV, no growth inside an allocation after the first frame"
exit $fail
