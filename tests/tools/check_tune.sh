#!/usr/bin/env bash
# fm-tune: known runs give known capacities; every malformed input fails
# with exit 2 and "file:line: problem", writing nothing (an existing output
# stays as it was, no temporary file is left); bad arguments exit 2; an
# unwritable output exits 1; FIFOs, folders and an --out equal to an input
# are refused with exit 2 (never blocking); a BOM is accepted; a full disk
# exits 1 with the old output kept.
#
#   check_tune.sh PATH/TO/fm-tune DATA_DIR
set -u
tune=$(realpath "$1")
data=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

# --- known runs (tests/tools/data, CSVs the engine wrote before issue 20):
# particles peaks at 1000 live (run2's peak_live), chunks of 64 items, 7
# in-allocation growths; entities peaks at 301 (run2, malloc backend) with
# chunks of 256 items from run1. Without --config the capacities before are
# the program's own.
expect_ini() { # file, pool, capacity
    awk -v s="[pool.$2]" -v want="initial_capacity = $3" '
        $0 == s { on = 1; next } /^\[/ { on = 0 } on && $0 == want { found = 1 }
        END { exit !found }' "$1" || err "$1: [pool.$2] does not say '$3'"
}
"$tune" --out tuned.ini "$data/run1.csv" "$data/run2.csv" >table.txt 2>stderr.txt ||
    err "fm-tune on the known runs exited $? ($(cat stderr.txt))"
expect_ini tuned.ini particles 1280 # 1000 x 1.25 = 1250 -> 20 chunks of 64
expect_ini tuned.ini entities 512   # 301 x 1.25 = 377 -> 2 chunks of 256
grep -qF "| particles | 32 | 64 | - (the program's) | 128 | 1024 | 1000 | 1280 | 7 | 560.0 | 40.0 | +8.0 |" table.txt ||
    err "before/after row of particles wrong: $(grep particles table.txt)"
grep -q "^\[pool\.frame\]" tuned.ini && err "the arena 'frame' got a pool section"

"$tune" --headroom 1 --out exact.ini "$data/run1.csv" "$data/run2.csv" >/dev/null ||
    err "--headroom 1 failed"
expect_ini exact.ini particles 1024 # 1000 -> 16 chunks of 64
expect_ini exact.ini entities 512   # 301 -> 2 chunks of 256

# Only the malloc-backed run: the chunk size is unknown, no rounding.
"$tune" --out malloc.ini "$data/run2.csv" >/dev/null || err "run2 alone failed"
expect_ini malloc.ini entities 377
expect_ini malloc.ini particles 1280

# --config: the configured capacity is the "before", max_capacity caps the
# tuned one, the other settings are kept; the tuned file loads back.
printf '[pool.particles]\ninitial_capacity = 256\nmax_capacity = 1100\ngrowth = linear\ngrow_step = 128\n' >current.ini
"$tune" --config current.ini --out capped.ini "$data/run1.csv" "$data/run2.csv" >table.txt 2>stderr.txt ||
    err "--config current.ini failed: $(cat stderr.txt)"
expect_ini capped.ini particles 1100
grep -qF "| particles | 32 | 64 | 256 | 128 | 1024 | 1000 | 1100 (max_capacity) | 7 |" table.txt ||
    err "capped row wrong: $(grep particles table.txt)"
awk '/^\[pool.particles\]/ { on = 1; next } /^\[/ { on = 0 } on && /^growth = linear$/ { f = 1 }
     END { exit !f }' capped.ini || err "capped.ini lost growth = linear"
"$tune" --config tuned.ini --out again.ini "$data/run1.csv" >/dev/null 2>stderr.txt ||
    err "the tuned file does not load back: $(cat stderr.txt)"

# Any program's pools: whatever their names, each gets its section.
sed 's/,particles,/,bullets,/' "$data/run1.csv" >renamed.csv
"$tune" --out renamed.ini renamed.csv >/dev/null 2>stderr.txt || err "renamed.csv: exit $?"
expect_ini renamed.ini bullets 704 # run1 alone: peak 520 x 1.25 -> 11 chunks of 64
grep -q '^\[pool.particles\]' renamed.ini && err "a pool the run does not have was written"
# Runs without a pool (only an arena): nothing to tune, exit 2.
awk -F, 'NR == 1 || $3 == "arena"' "$data/run1.csv" >arena_only.csv
"$tune" --out none.ini arena_only.csv >/dev/null 2>stderr.txt
rc=$?
[ $rc = 2 ] || err "no pool: exit $rc, expected 2"
grep -q "no pool in the runs" stderr.txt || err "no pool: message '$(cat stderr.txt)'"
[ -e none.ini ] && err "no pool: none.ini was written"
# A config's sections no run recorded are kept, as they are.
printf '[pool.spare]\ninitial_capacity = 77\n[tag.level]\nhard_limit_bytes = 4096\n' >extra.ini
"$tune" --config extra.ini --out kept.ini "$data/run1.csv" >/dev/null 2>stderr.txt ||
    err "--config extra.ini: exit $? ($(cat stderr.txt))"
expect_ini kept.ini spare 77
grep -q '^hard_limit_bytes = 4096$' kept.ini || err "kept.ini lost the tag's limit"

# A bad --config: exit 2 with its file:line, nothing written.
printf '[pool.particles]\ninitial_capacity = abc\n' >bad.ini
"$tune" --config bad.ini --out out.ini "$data/run1.csv" >/dev/null 2>stderr.txt
rc=$?
[ $rc = 2 ] || err "bad --config: exit $rc, expected 2"
grep -q "bad.ini:2" stderr.txt || err "bad --config: message '$(cat stderr.txt)' lacks bad.ini:2"
[ -e out.ini ] && err "bad --config: out.ini was written"

# --- numbers at the edge of uint64_t (a CSV may hold anything): capacities
# saturate at what a config takes, sums saturate, nothing wraps, and the
# file loads back (2^64 - 1 live items once gave initial_capacity = 64).
max=18446744073709551615
awk -F, -v OFS=, -v m=$max 'NR > 1 && $2 == "particles" { $9 = m; $13 = m; $14 = m }
    NR > 1 && $2 == "frame" { $18 = m } { print }' "$data/run1.csv" >extreme.csv
"$tune" --out extreme.ini extreme.csv >table.txt 2>stderr.txt ||
    err "extreme.csv: exit $? ($(cat stderr.txt))"
expect_ini extreme.ini particles 268435456
grep -qF "| particles | 32 | 64 | - (the program's) | 128 | 512 | $max | 268435456 (the config's limit) | $max |" table.txt ||
    err "extreme row wrong: $(grep particles table.txt)"
grep -q "warning: pool 'particles': peak live $max x 1.25 is more than initial_capacity takes: capped at 268435456" stderr.txt ||
    err "no warning for the capped pool: $(cat stderr.txt)"
grep -q '^reserve = 68719476736$' extreme.ini || err "extreme.ini: reserve not capped at 64 GiB"
"$tune" --config extreme.ini --out again.ini "$data/run1.csv" >/dev/null 2>stderr.txt ||
    err "extreme.ini does not load back: $(cat stderr.txt)"

# --- malformed inputs, made from run1.csv.
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "live") c = i }
    { out = ""; for (i = 1; i <= NF; i++) if (i != c) out = out (out == "" ? "" : ",") $i; print out }' \
    "$data/run1.csv" >missing_column.csv
awk -F, -v OFS=, 'NR == 6 { $9 = "31x" } { print }' "$data/run1.csv" >bad_number.csv
awk -F, -v OFS=, 'NR == 4 { NF = 7 } { print }' "$data/run1.csv" >short_line.csv
head -c -9 "$data/run1.csv" >truncated.csv
cp "$tune" binary.csv
: >empty.csv
printf 'old\n' >keep.ini

check_bad() { # file, expected "file:line" prefix of the message
    rm -f out.ini
    "$tune" --out out.ini "$data/run1.csv" "$1" >/dev/null 2>msg.txt
    rc=$?
    [ $rc = 2 ] || err "$1: exit $rc, expected 2"
    grep -q "^fm-tune: $2: " msg.txt || err "$1: message '$(cat msg.txt)' lacks '$2: '"
    [ -e out.ini ] && err "$1: out.ini was written"
    "$tune" --out keep.ini "$1" >/dev/null 2>&1
    [ "$(cat keep.ini)" = old ] || err "$1: an existing output was changed"
    ls ./*.tmp* >/dev/null 2>&1 && err "$1: a temporary file was left"
}
check_bad missing_column.csv "missing_column.csv:1"
check_bad bad_number.csv "bad_number.csv:6"
check_bad short_line.csv "short_line.csv:4"
check_bad truncated.csv "truncated.csv:13"
check_bad binary.csv "binary.csv:1"
check_bad empty.csv "empty.csv:1"
check_bad nosuch.csv "nosuch.csv: cannot open"

# --- arguments and output errors.
for args in "" "--out x.ini" "$data/run1.csv" "--headroom 0.5 --out x.ini $data/run1.csv" \
            "--headroom abc --out x.ini $data/run1.csv" "--frob --out x.ini $data/run1.csv"; do
    # shellcheck disable=SC2086
    "$tune" $args >/dev/null 2>&1
    rc=$?
    [ $rc = 2 ] || err "fm-tune $args: exit $rc, expected 2"
done
[ -e x.ini ] && err "a refused command line wrote x.ini"
"$tune" --out nodir/out.ini "$data/run1.csv" >/dev/null 2>msg.txt
rc=$?
[ $rc = 1 ] || err "unwritable output: exit $rc, expected 1"
grep -qF -e "--out nodir/out.ini: cannot write: No such file or directory" msg.txt ||
    err "unwritable output: message '$(cat msg.txt)'"

# --- files. FIFOs and folders are refused at once with exit 2 (a read that
# blocks is killed by timeout: exit 124); an --out that is an input, a FIFO
# or a folder is refused before anything is read, and left as it was.
mkfifo pipe.csv pipe.ini
mkdir folder
cp "$data/run1.csv" in.csv
printf '[pool.particles]\ninitial_capacity = 256\n' >cfg.ini
refused() { # expected message, fm-tune arguments...
    local want=$1
    shift
    timeout 60 "$tune" "$@" >/dev/null 2>msg.txt
    rc=$?
    [ $rc = 2 ] || err "fm-tune $*: exit $rc, expected 2 ($(cat msg.txt))"
    grep -qF -e "$want" msg.txt || err "fm-tune $*: message '$(cat msg.txt)' lacks '$want'"
}
refused "fm-tune: pipe.csv: not a regular file" --out o.ini pipe.csv
refused "fm-tune: folder: not a regular file" --out o.ini folder
refused "config pipe.ini: not a regular file" --config pipe.ini --out o.ini in.csv
refused "config folder: not a regular file" --config folder --out o.ini in.csv
refused "--out pipe.ini: not a regular file (refusing to replace it); nothing written" \
    --out pipe.ini in.csv
refused "--out folder: not a regular file (refusing to replace it)" --out folder in.csv
refused "--out in.csv: the same file as the input in.csv; nothing written" --out in.csv in.csv
refused "--out ./cfg.ini: the same file as the input cfg.ini" --config cfg.ini --out ./cfg.ini in.csv
[ -p pipe.ini ] || err "the FIFO given as --out is no longer a FIFO"
[ -d folder ] || err "the folder given as --out is no longer a folder"
cmp -s in.csv "$data/run1.csv" || err "the CSV given as --out was changed"
[ "$(cat cfg.ini)" = "$(printf '[pool.particles]\ninitial_capacity = 256')" ] ||
    err "the config given as --out was changed"
[ -e o.ini ] && err "a refused run wrote o.ini"

# A UTF-8 byte-order mark before a CSV or an INI is accepted.
{ printf '\357\273\277'; cat "$data/run1.csv"; } >bom.csv
"$tune" --out bom_csv.ini bom.csv >/dev/null 2>msg.txt || err "BOM CSV: exit $? ($(cat msg.txt))"
"$tune" --out plain_csv.ini "$data/run1.csv" >/dev/null 2>&1
cmp -s bom_csv.ini plain_csv.ini || err "BOM CSV: not tuned as the same CSV without the mark"
{ printf '\357\273\277'; cat current.ini; } >bom.ini
"$tune" --config bom.ini --out bom_ini.ini "$data/run1.csv" "$data/run2.csv" >/dev/null 2>msg.txt ||
    err "BOM config: exit $? ($(cat msg.txt))"
expect_ini bom_ini.ini particles 1100 # current.ini's max_capacity applied

# A full disk (files limited to 1 KiB, SIGXFSZ ignored: writes fail with
# EFBIG): exit 1 with the file and the reason, the old file kept, no
# temporary file left. (The config's 30 sections, kept, pass 1 KiB.)
printf 'old\n' >full.ini
for i in $(seq 30); do printf '[pool.spare%d]\ninitial_capacity = %d\n' "$i" "$i"; done >spares.ini
( ulimit -f 1 && trap '' XFSZ && exec "$tune" --config spares.ini --out full.ini "$data/run1.csv" "$data/run2.csv" ) \
    >/dev/null 2>msg.txt
rc=$?
[ $rc = 1 ] || err "full disk: exit $rc, expected 1 ($(cat msg.txt))"
grep -qF -e "fm-tune: --out full.ini: write failed: File too large" msg.txt ||
    err "full disk: message '$(cat msg.txt)'"
[ "$(cat full.ini)" = old ] || err "full disk: the old full.ini was changed"
ls ./*.tmp* >/dev/null 2>&1 && err "full disk: a temporary file was left"

# Its table lost to a full disk: exit 1, said on stderr.
"$tune" --out fullout.ini "$data/run1.csv" >/dev/full 2>msg.txt
rc=$?
[ $rc = 1 ] || err "stdout on a full disk: exit $rc, expected 1 ($(cat msg.txt))"
grep -qF -e "fm-tune: standard output: write failed: No space left on device" msg.txt ||
    err "stdout on a full disk: message '$(cat msg.txt)'"

[ $fail = 0 ] && echo "fm-tune: capacities, malformed inputs and arguments as expected"
exit $fail
