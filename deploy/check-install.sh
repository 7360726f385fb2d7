#!/bin/sh
# cmake --install BUILD --prefix SCRATCH (DESTDIR for the absolute config
# directory) and check the layout: binaries, units naming the configured
# bindir and config, the sample config, the docs; a second install keeps an
# edited config.
# usage: check-install.sh CMAKE BUILD SCRATCH BINDIR CONFDIR
set -u
cmake="$1" build="$2" scratch="$3" bindir="$4" confdir="$5"
rm -rf "$scratch"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
DESTDIR="$scratch" "$cmake" --install "$build" >"$scratch.log" 2>&1 || {
    cat "$scratch.log"; echo "FAIL: cmake --install"; exit 1; }
root="$scratch"
for f in "$bindir/lcnctl" "$bindir/lcnd"; do
    [ -x "$root$f" ] || fail "$f not installed"
done
unit=$(find "$root" -name lcnd.service | head -1)
tmpl=$(find "$root" -name 'lcnd@.service' | head -1)
[ -n "$unit" ] || fail "lcnd.service not installed"
[ -n "$tmpl" ] || fail "lcnd@.service not installed"
if [ -n "$unit" ]; then
    grep -q "^ExecStart=$bindir/lcnd serve --config $confdir/lcnd.conf " "$unit" ||
        fail "ExecStart of $unit does not name $bindir/lcnd and $confdir/lcnd.conf"
    grep -q '^Type=notify$' "$unit" || fail "unit is not Type=notify"
fi
if [ -f "$(dirname "$0")/../config/lcnd.conf" ]; then
    [ -f "$root$confdir/lcnd.conf" ] || fail "$confdir/lcnd.conf not installed"
    [ -n "$(find "$root" -name lcnd.conf.sample)" ] || fail "lcnd.conf.sample not installed"
    echo "# edited" >>"$root$confdir/lcnd.conf"
    DESTDIR="$scratch" "$cmake" --install "$build" >"$scratch.log" 2>&1 || fail "second install"
    grep -q '^# edited$' "$root$confdir/lcnd.conf" || fail "a second install overwrote the config"
else
    echo "note: config/lcnd.conf not in this tree yet; not installed"
fi
[ -n "$(find "$root" -name DEPLOY.md)" ] || fail "docs/DEPLOY.md not installed"
[ -n "$(find "$root" -name lcnd.yaml)" ] || fail "the Kubernetes example not installed"
rm -rf "$scratch" "$scratch.log"
[ "$fails" -eq 0 ] && echo "ok: install layout under DESTDIR"
[ "$fails" -eq 0 ]
