#!/bin/sh
# lcnd solve (one-shot mode): usage errors, the JSON summary, the written
# layout (checked by lcnctl check --instance), determinism under a move
# limit, the backend choice, a repaired invalid input, Ctrl-C.
# usage: test_lcnd_solve.sh path/to/lcnd path/to/lcnctl
set -u
LCND="$1"
LCNCTL="$2"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

expect() {
    want="$1"; what="$2"; shift 3
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, want $want"; sed 's/^/  stderr: /' "$T/err" | head -5
        fails=$((fails + 1))
    fi
}
contains() {
    if ! grep -qF -- "$2" "$1"; then
        echo "FAIL: $3: '$2' not in $(basename "$1"):"; sed 's/^/  /' "$1" | head -5
        fails=$((fails + 1))
    fi
}
# json FILE PYTHON-EXPR DESCRIPTION: the expression over d (the parsed file) must be true
json() {
    if ! python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; then
        echo "FAIL: $3: ($2) is false for $(basename "$1")"; head -c 600 "$1" | sed 's/^/  /'
        fails=$((fails + 1))
    fi
}

"$LCNCTL" gen random --nodes 30 --seed 3 -o "$T/g.json" || { echo "FAIL: gen"; exit 1; }
"$LCNCTL" gen planted --nodes 40 --k 2 --seed 5 -o "$T/p.json" || { echo "FAIL: gen planted"; exit 1; }

# usage
expect 2 "no arguments" -- "$LCND" solve
contains "$T/err" "missing GRAPH.json" "missing graph message"
expect 2 "no --out" -- "$LCND" solve "$T/g.json"
contains "$T/err" "missing --out" "missing out message"
expect 0 "help" -- "$LCND" solve --help
contains "$T/out" "usage: lcnd solve" "help text"
expect 2 "bad budget" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --budget-s -1
contains "$T/err" "--budget-s: expected a number in [0, 10000000], got '-1'" "bad budget message"
expect 2 "bad seed" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --seed x
expect 2 "bad backend" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --backend tpu
contains "$T/err" "--backend: expected one of auto|gpu|cpu, got 'tpu'" "bad backend message"
expect 2 "too many proposal workers" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --proposal-workers 300
contains "$T/err" "--proposal-workers: expected an integer in [1, 256], got '300'" "proposal workers message"
expect 2 "too many threads" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --threads 1025
contains "$T/err" "--threads: expected an integer in [1, 1024], got '1025'" "threads message"
expect 2 "knob beyond the limit" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --backend cpu \
    --tuning proposal_workers=300 --budget-s 1
contains "$T/err" "invalid argument" "knob beyond the limit message"
expect 2 "unknown option" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --frobnicate
expect 2 "stop without target" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --stop-at-target
expect 2 "bad tuning" -- "$LCND" solve "$T/g.json" --out "$T/o.json" --tuning nope=1 --budget-s 1
contains "$T/err" "invalid argument" "bad tuning message"
expect 2 "missing file" -- "$LCND" solve "$T/nope.json" --out "$T/o.json"
contains "$T/err" "nope.json" "missing file names the file"
printf '{"nodes":[{"id":0}],"edges":[{"source":0,"target":7}],"width":5,"height":5}' > "$T/bad.json"
expect 2 "bad graph" -- "$LCND" solve "$T/bad.json" --out "$T/o.json"
contains "$T/err" "edges[0].target" "bad graph names the field"
[ ! -e "$T/o.json" ] || { echo "FAIL: a failed run wrote its output"; fails=$((fails + 1)); }

# a deterministic run: summary, layout, checker
expect 0 "solve cpu" -- "$LCND" solve "$T/g.json" --out "$T/o1.json" --seed 7 --threads 2 \
    --backend cpu --replicas 4 --move-limit 2000 --quiet
cp "$T/out" "$T/s1.json"
json "$T/s1.json" "d['backend']=='cpu' and d['backend_requested']=='cpu' and d['seed']==7" "summary backend/seed"
json "$T/s1.json" "d['stop']=='limit' and d['time_to_target_s'] is None and d['target_k'] is None" "summary stop/ttt"
json "$T/s1.json" "set(d['best'])=={'K','nK','Phi','C'} and d['evaluator'] in ('grid-delta','scan-delta')" "summary best/evaluator"
t='d["telemetry"]'
json "$T/s1.json" "$t['accepted']+$t['rejected']==$t['selected'] and $t['committed']==$t['accepted'] and $t['valid']<=$t['attempted']" "telemetry identities"
expect 0 "check output" -- "$LCNCTL" check "$T/o1.json" --instance "$T/g.json"
cp "$T/out" "$T/c1.json"
python3 -c "
import json,sys
s=json.load(open('$T/s1.json'))['best']; c=json.load(open('$T/c1.json'))
sys.exit(0 if c['valid'] and all(s[k]==c[k] for k in ('K','nK','Phi','C')) else 1)" ||
    { echo "FAIL: summary tuple differs from the checker's"; fails=$((fails + 1)); }
json "$T/o1.json" "d['lcn']['best']['K']>=0 and len(d['nodes'])==30" "layout file carries the tuple"
# same seed and replicas, other thread count: the same layout
expect 0 "solve again" -- "$LCND" solve "$T/g.json" --out "$T/o2.json" --seed 7 --threads 1 \
    --backend cpu --replicas 4 --move-limit 2000 --quiet
cmp -s "$T/o1.json" "$T/o2.json" || { echo "FAIL: same seed, different layout"; fails=$((fails + 1)); }

# progress on stderr, summary alone on stdout
expect 0 "solve with progress" -- "$LCND" solve "$T/p.json" --out "$T/o3.json" --budget-s 1 \
    --target-k 2 --backend cpu
contains "$T/err" "best (" "progress lines"
contains "$T/err" "/1.00 s]" "progress shows elapsed/budget"
json "$T/out" "d['target_k']==2 and (d['time_to_target_s'] is None or d['time_to_target_s']>=0)" "target in summary"
# stop at target on a planted instance
expect 0 "stop at target" -- "$LCND" solve "$T/p.json" --out "$T/o4.json" --budget-s 20 \
    --target-k 2 --stop-at-target --backend cpu --quiet
json "$T/out" "d['stop'] in ('target','optimal') and d['best']['K']<=2 and d['elapsed_s']<19" "stopped at target"

# backends: auto always runs something; gpu fails cleanly where there is none
expect 0 "auto" -- "$LCND" solve "$T/g.json" --out "$T/o5.json" --budget-s 0.5 --quiet
json "$T/out" "d['backend'] in ('cpu','gpu') and d['backend_requested']=='auto'" "auto backend"
"$LCND" solve "$T/g.json" --out "$T/o6.json" --budget-s 0.5 --backend gpu --quiet >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ]; then
    [ $rc -eq 2 ] || { echo "FAIL: gpu without gpu: exit $rc, want 2"; fails=$((fails + 1)); }
    contains "$T/err" "no usable GPU engine" "gpu unavailable message"
fi

# a budget too short for any checked layout: exit 1 and a message that says what to do
expect 1 "budget too short" -- "$LCND" solve "$T/g.json" --out "$T/o9.json" --budget-s 0 --backend cpu
contains "$T/err" "the budget ran out before a first layout of this graph was built and checked" \
    "budget too short message"
[ ! -e "$T/o9.json" ] || { echo "FAIL: budget too short wrote a layout"; fails=$((fails + 1)); }

# an invalid input layout (all nodes on one point) is repaired before solving
python3 -c "
import json
d=json.load(open('$T/g.json'))
for n in d['nodes']: n['x']=1; n['y']=1
json.dump(d, open('$T/one.json','w'))"
expect 0 "invalid input" -- "$LCND" solve "$T/one.json" --out "$T/o7.json" --move-limit 500 \
    --backend cpu --quiet
expect 0 "repaired output valid" -- "$LCNCTL" check "$T/o7.json" --instance "$T/one.json"

# Ctrl-C ends the run early and still writes a valid layout
"$LCND" solve "$T/g.json" --out "$T/o8.json" --budget-s 60 --backend cpu --quiet >"$T/out" 2>"$T/err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: interrupted run: exit $rc"; fails=$((fails + 1)); }
json "$T/out" "d['stop']=='cancelled' and d['elapsed_s']<30" "interrupted run stops"
expect 0 "interrupted output valid" -- "$LCNCTL" check "$T/o8.json" --instance "$T/g.json"

# the layout on stdout (--out -, /dev/stdout): the summary goes to stderr, so
# that stdout holds the layout alone (it followed the layout: no JSON document)
for o in - /dev/stdout; do
    expect 0 "layout on stdout ($o)" -- "$LCND" solve "$T/g.json" --out "$o" --budget-s 0.2 \
        --backend cpu --quiet
    json "$T/out" "'nodes' in d and 'lcn' in d" "stdout holds the layout alone ($o)"
    json "$T/err" "d['out']=='$o' and 'best' in d" "the summary on stderr ($o)"
done

# a file name that is not UTF-8: the summary still names the graph and the
# output ('?' for the bytes past ASCII; json_string refused the name, and the
# keys were left out)
cp "$T/g.json" "$T/caf$(printf '\351').json"
expect 0 "Latin-1 file name" -- "$LCND" solve "$T/caf$(printf '\351').json" \
    --out "$T/o$(printf '\377').json" --budget-s 0.2 --backend cpu --quiet
json "$T/out" "d['graph'].endswith('caf?.json') and d['out'].endswith('o?.json')" "names not UTF-8"

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "lcnd solve: all checks passed"
