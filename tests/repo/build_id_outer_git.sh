#!/bin/sh
# cmake/build_id.cmake names the commit only of a source tree that is itself
# the top level of its git checkout: a source tree unpacked inside another
# checkout (here a temporary repository holding it in a subfolder) reports
# "unknown", never the outer checkout's commit; at the top level it reports
# that repository's commit.
#   sh build_id_outer_git.sh CMAKE SOURCE_DIR    (exit 77: no git)
set -eu
CMAKE=$1 SRC=$2
command -v git >/dev/null 2>&1 || { echo "skip: no git"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
outer=$tmp/outer
mkdir -p "$outer/lcn-0.1.0/cmake"
cp "$SRC/cmake/build_id.cmake" "$outer/lcn-0.1.0/cmake/"
git -C "$outer" init -q
git -C "$outer" add -A
git -C "$outer" -c user.name=test -c user.email=test@invalid -c commit.gpgsign=false \
    commit -q -m outer
want=$(git -C "$outer" rev-parse --short=12 HEAD)

"$CMAKE" -DSRC="$outer/lcn-0.1.0" -DOUT="$tmp/inner.c" -P "$SRC/cmake/build_id.cmake"
grep -q 'lcn_build_commit\[\] = "unknown";' "$tmp/inner.c" ||
    { echo "nested source tree: expected unknown, got: $(cat "$tmp/inner.c")"; exit 1; }
! grep -q "$want" "$tmp/inner.c" || { echo "nested source tree names the outer commit $want"; exit 1; }

"$CMAKE" -DSRC="$outer" -DOUT="$tmp/top.c" -P "$SRC/cmake/build_id.cmake"
grep -q "lcn_build_commit\[\] = \"$want\";" "$tmp/top.c" ||
    { echo "top level: expected $want, got: $(cat "$tmp/top.c")"; exit 1; }
echo "ok: nested tree unknown, top level $want"
