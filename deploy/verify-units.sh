#!/bin/sh
# systemd-analyze verify on the lcnd units in DIR (lcnd.service, and the
# template through an instance, lcnd@0.service). Fails on a non-zero status
# and on any message about the units (verify only warns about unknown keys
# or bad values); exits 77 (skipped) without systemd-analyze.
# usage: verify-units.sh DIR
set -u
dir="$1"
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "skipped: systemd-analyze not found (scripts/deps.sh installs systemd)"
    exit 77
fi
cp "$dir/lcnd@.service" "$dir/lcnd@0.service"
out=$(cd "$dir" && systemd-analyze verify --man=no ./lcnd.service ./lcnd@0.service 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne 0 ]; then
    echo "FAIL: systemd-analyze verify exited $rc"
    exit 1
fi
if echo "$out" | grep -q 'lcnd'; then
    echo "FAIL: systemd-analyze verify complained about the units"
    exit 1
fi
echo "ok: systemd-analyze verify accepts lcnd.service and lcnd@.service"
