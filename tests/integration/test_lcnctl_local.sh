#!/bin/sh
# lcnctl's local commands (check, gen): exit statuses, usage errors, field-path
# messages, determinism of gen, stdin/stdout.
# usage: test_lcnctl_local.sh path/to/lcnctl
set -u
LCNCTL="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

# expect STATUS DESCRIPTION -- command...  (stdout/stderr kept in $T/out, $T/err)
expect() {
    want="$1"; what="$2"; shift 3
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, want $want"; sed 's/^/  stderr: /' "$T/err"
        fails=$((fails + 1))
    fi
}
# contains FILE TEXT DESCRIPTION
contains() {
    if ! grep -qF -- "$2" "$1"; then
        echo "FAIL: $3: '$2' not in $(basename "$1"):"; sed 's/^/  /' "$1" | head -5
        fails=$((fails + 1))
    fi
}

expect 2 "no command" -- "$LCNCTL"
expect 0 "global help" -- "$LCNCTL" --help
contains "$T/out" "check" "global help lists check"
contains "$T/out" "gen" "global help lists gen"
expect 0 "version" -- "$LCNCTL" --version
contains "$T/out" "lcnctl " "version line"
expect 2 "unknown command" -- "$LCNCTL" frobnicate
contains "$T/err" "unknown command 'frobnicate'" "unknown command message"
expect 0 "help check" -- "$LCNCTL" help check
contains "$T/out" "usage: lcnctl check" "help check text"
for c in check gen; do
    expect 0 "$c --help" -- "$LCNCTL" $c --help
    contains "$T/out" "usage: lcnctl $c" "$c --help text"
    expect 0 "$c -h" -- "$LCNCTL" $c -h
done

# usage errors
expect 2 "check without file" -- "$LCNCTL" check
expect 2 "check with two files" -- "$LCNCTL" check a.json b.json
contains "$T/err" "unexpected argument 'b.json'" "extra argument message"
expect 2 "check unknown option" -- "$LCNCTL" check --bogus x.json
contains "$T/err" "unknown option '--bogus'" "unknown option message"
expect 2 "check bad integer" -- "$LCNCTL" check x.json --max-violations ten
contains "$T/err" "--max-violations: expected an integer in [0, 10000000], got 'ten'" "bad integer message"
expect 2 "check negative integer" -- "$LCNCTL" check x.json --max-violations=-1
expect 2 "check missing value" -- "$LCNCTL" check x.json --instance
contains "$T/err" "--instance needs a value" "missing value message"
expect 2 "gen without nodes" -- "$LCNCTL" gen random -o "$T/g.json"
contains "$T/err" "--nodes is required" "gen nodes message"
expect 2 "gen without output" -- "$LCNCTL" gen random --nodes 10
expect 2 "gen unknown family" -- "$LCNCTL" gen spiral --nodes 10 -o "$T/g.json"
contains "$T/err" "unknown family 'spiral'" "gen family message"
expect 2 "gen --k for random" -- "$LCNCTL" gen random --nodes 10 --k 3 -o "$T/g.json"
expect 2 "gen one node" -- "$LCNCTL" gen random --nodes 1 -o "$T/g.json"
contains "$T/err" "--nodes: expected an integer in [2, 1000000], got '1'" "gen range message"
expect 2 "gen too many edges" -- "$LCNCTL" gen random --nodes 5 --edges 11 -o "$T/g.json"
contains "$T/err" "edge count exceeds the simple-graph maximum" "gen impossible message"
expect 2 "gen unwritable" -- "$LCNCTL" gen random --nodes 10 -o /nonexistent/dir/g.json
contains "$T/err" "cannot create" "gen unwritable message"

# gen is deterministic and check accepts what it writes
expect 0 "gen random" -- "$LCNCTL" gen random --nodes 30 --seed 7 -o "$T/a.json"
expect 0 "gen random again" -- "$LCNCTL" gen random --nodes 30 --seed 7 -o "$T/b.json"
cmp -s "$T/a.json" "$T/b.json" || { echo "FAIL: gen is not deterministic"; fails=$((fails + 1)); }
expect 0 "gen other seed" -- "$LCNCTL" gen random --nodes 30 --seed 8 -o "$T/c.json"
cmp -s "$T/a.json" "$T/c.json" && { echo "FAIL: seed does not matter"; fails=$((fails + 1)); }
expect 0 "check generated" -- "$LCNCTL" check "$T/a.json"
contains "$T/out" '"valid":true' "generated layout is valid"
contains "$T/out" '"n":30,"m":90' "generated sizes"
expect 0 "gen planted" -- "$LCNCTL" gen planted --nodes 40 --k 2 --seed 3 -o "$T/p.json" --planted "$T/pp.json" --pretty
expect 0 "check planted against instance" -- "$LCNCTL" check "$T/pp.json" --instance "$T/p.json"
contains "$T/out" '"valid":true' "planted drawing is valid"
grep -q '"K":[012],' "$T/out" || { echo "FAIL: planted K above 2"; cat "$T/out"; fails=$((fails + 1)); }
expect 1 "instance mismatch" -- "$LCNCTL" check "$T/pp.json" --instance "$T/a.json"
contains "$T/out" '"nodes: 40 in the layout, 30 in the instance"' "mismatch reason"
expect 0 "gen to stdout" -- "$LCNCTL" gen grid --nodes 20 -o -
cp "$T/out" "$T/stdout.json"
expect 0 "check from stdin" -- "$LCNCTL" check - <"$T/stdout.json"
contains "$T/out" '"layout":"-"' "stdin named -"

# invalid and unreadable layouts
printf '{"nodes":[{"id":0,"x":1,"y":1},{"id":1,"x":1,"y":1}],"edges":[],"width":5,"height":5}' >"$T/v2.json"
expect 1 "shared point" -- "$LCNCTL" check "$T/v2.json"
contains "$T/out" '"violations":[{"kind":"V2","nodes":[0,1]}]' "V2 listed"
printf '{"nodes":[{"id":0},{"id":1,"x":1,"y":1}],"edges":[],"width":5,"height":5}' >"$T/miss.json"
expect 1 "missing coordinates" -- "$LCNCTL" check "$T/miss.json"
contains "$T/out" '"K":null' "no tuple without coordinates"
printf '{"nodes":[{"id":0,"x":1,"y":1}],"edges":[{"source":99,"target":0}],"width":5,"height":5}' >"$T/bad.json"
expect 2 "unknown node" -- "$LCNCTL" check "$T/bad.json"
contains "$T/err" "bad.json: edges[0].source: unknown node 99" "field path on stderr"
expect 2 "bad instance" -- "$LCNCTL" check "$T/a.json" --instance "$T/bad.json"
contains "$T/err" "edges[0].source: unknown node 99" "instance field path"
expect 2 "missing file" -- "$LCNCTL" check "$T/nope.json"
contains "$T/err" "cannot open" "missing file message"

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all lcnctl local checks passed"
