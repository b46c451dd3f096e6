#!/usr/bin/env bash
# tools/dev's apt-get calls with a fake apt-get (FM_APT_GET): a package lists
# lock held by another process is waited for (polled, said once, given up
# after FM_APT_LOCK_WAIT seconds), install passes DPkg::Lock::Timeout so apt
# waits for the dpkg locks (its repeated "Waiting for cache lock" lines
# folded), other failures are not retried, installed packages need no apt.
# The real locks are not touched.
#
#   check_dev_apt.sh PATH/TO/tools/dev
set -u
dev=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

# The fake: logs "DEBIAN_FRONTEND | args" per call; FAKE_LOCKED_UPDATES
# updates fail on the lists lock first; FAKE_INSTALL=fail fails otherwise.
cat >fake-apt-get <<'FAKE'
#!/usr/bin/env bash
echo "${DEBIAN_FRONTEND:-} | $*" >>"$FAKE_DIR/calls"
case " $* " in
*" update "*)
    n=$(cat "$FAKE_DIR/updates" 2>/dev/null || echo 0)
    echo $((n + 1)) >"$FAKE_DIR/updates"
    if [ "$n" -lt "${FAKE_LOCKED_UPDATES:-0}" ]; then
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)"
        echo "E: Unable to lock directory /var/lib/apt/lists/"
        exit 100
    fi ;;
*" install "*)
    if [ "${FAKE_INSTALL:-}" = fail ]; then
        echo "E: Unable to locate package fm-test-no-such-package"
        exit 100
    fi
    for i in 1 2 3; do
        echo "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)..."
    done
    echo "Setting up fm-test-no-such-package ..." ;;
esac
exit 0
FAKE
chmod +x fake-apt-get
export FM_APT_GET=$work/fake-apt-get FAKE_DIR=$work
pkg=fm-test-no-such-package
fresh() { rm -f calls updates; }

# 1. The lists lock is free after two tries: waited for, said once, then
# install with the dpkg lock timeout, non-interactive.
fresh
FAKE_LOCKED_UPDATES=2 FM_APT_LOCK_WAIT=30 "$dev" install "$pkg" >out.txt 2>&1
rc=$?
[ $rc = 0 ] || err "lock freed after 2 tries: exit $rc ($(cat out.txt))"
[ "$(grep -c ' update ' calls)" = 3 ] || err "expected 3 update calls: $(cat calls)"
[ "$(grep -c "waiting for it (up to 30 s)" out.txt)" = 1 ] || err "the wait was not said once: $(cat out.txt)"
grep -q "apt-get waits up to 30 s for the package manager's locks" out.txt ||
    err "the install line does not say it waits: $(cat out.txt)"
grep -qx "noninteractive | -o DPkg::Lock::Timeout=30 install -y -q --no-install-recommends $pkg" calls ||
    err "install arguments: $(cat calls)"
grep -qx "noninteractive | -o DPkg::Lock::Timeout=30 update -qq" calls || err "update arguments: $(cat calls)"
[ "$(grep -c 'Waiting for cache lock' out.txt)" = 1 ] || err "apt's wait lines not folded: $(cat out.txt)"

# 2. The lock is never freed: given up after FM_APT_LOCK_WAIT, apt's exit code.
fresh
start=$(date +%s)
FAKE_LOCKED_UPDATES=1000 FM_APT_LOCK_WAIT=3 "$dev" install "$pkg" >out.txt 2>&1
rc=$?
took=$(( $(date +%s) - start ))
[ $rc = 100 ] || err "lock never freed: exit $rc, expected 100"
grep -q "held the package lists lock for 4 s (FM_APT_LOCK_WAIT=3); giving up" out.txt ||
    err "no give-up message: $(cat out.txt)"
[ "$took" -ge 3 ] && [ "$took" -le 15 ] || err "gave up after $took s"
grep -q ' install ' calls && err "installed after giving up on update"

# 3. Another failure is not retried.
fresh
FAKE_INSTALL=fail "$dev" install "$pkg" >out.txt 2>&1
rc=$?
[ $rc = 100 ] || err "failing install: exit $rc, expected 100"
[ "$(grep -c ' install ' calls)" = 1 ] || err "a failing install was retried: $(cat calls)"
grep -q "tools/dev: apt-get install -y -q --no-install-recommends $pkg failed (exit 100)" out.txt ||
    err "no failure message: $(cat out.txt)"

# 4. Installed packages: no apt-get at all.
fresh
"$dev" install bash >out.txt 2>&1 || err "installed package: exit $? ($(cat out.txt))"
[ -e calls ] && err "apt-get ran for an installed package: $(cat calls)"

# 5. Bad FM_APT_LOCK_WAIT, no package.
FM_APT_LOCK_WAIT=ten "$dev" install "$pkg" >/dev/null 2>&1
[ $? = 2 ] || err "FM_APT_LOCK_WAIT=ten accepted"
"$dev" install >/dev/null 2>&1
[ $? = 2 ] || err "install without a package accepted"

[ $fail = 0 ] && echo "tools/dev: apt-get waits for the locks, says so, and gives up when told"
exit $fail
