#!/bin/sh
# The README's first command ends here: solve the bundled sample through the
# daemon's HTTP API.
#
#   1. start `lcnd serve` on its embedded defaults, except a free loopback
#      port (port 0) and a temporary state directory;
#   2. submit samples/planted-60.json with curl (POST /jobs), with a short
#      budget and the planted k as the target (time_to_target_s tells when it
#      was reached; the run goes on improving nK, Phi and C);
#   3. follow the job's progress (GET /jobs/<id>/progress?after=N);
#   4. fetch the validated solution (GET /jobs/<id>/solution) and check it
#      with the independent validator (`lcnctl check --instance`);
#   5. stop the daemon with SIGTERM and check that it exits 0.
#
# LCND, LCNCTL override build/bin/lcnd and build/bin/lcnctl; DEMO_BUDGET (s)
# the budget (default 5).
set -eu
cd "$(dirname "$0")/.."
lcnd="${LCND:-build/bin/lcnd}"
lcnctl="${LCNCTL:-build/bin/lcnctl}"
budget="${DEMO_BUDGET:-5}"
sample=samples/planted-60.json
for b in "$lcnd" "$lcnctl"; do
    if [ ! -x "$b" ]; then
        echo "demo: $b not found; build first: cmake -S . -B build && cmake --build build" >&2
        exit 2
    fi
done
for t in curl python3; do
    command -v "$t" >/dev/null || { echo "demo: $t is needed (scripts/deps.sh)" >&2; exit 2; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lcn-demo.XXXXXX")
pid=""
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# a field of a JSON document on stdin, by a Python expression on `j`
field() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }

echo "== starting lcnd serve (embedded defaults, free loopback port, state in $tmp/state)"
"$lcnd" serve --listen 127.0.0.1:0 --state-dir "$tmp/state" --port-file "$tmp/port" \
    --log-file "$tmp/lcnd.log" &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
    i=$((i + 1))
    if [ "$i" -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
        echo "demo: lcnd did not start:" >&2
        cat "$tmp/lcnd.log" >&2 2>/dev/null || true
        exit 1
    fi
    sleep 0.1
done
base="http://$(cat "$tmp/port")"
echo "   listening on $base; $(curl -sf "$base/version")"
curl -sf "$base/readyz" >/dev/null

echo "== POST /jobs: $sample, budget ${budget} s, target K <= 3 (the planted k)"
{
    printf '{"name": "demo", "budget_s": %s, "seed": 1, "target_k": 3, "graph": ' "$budget"
    cat "$sample"
    printf '}'
} >"$tmp/request.json"
curl -sf -X POST -H 'Content-Type: application/json' --data-binary @"$tmp/request.json" \
    "$base/jobs" >"$tmp/created.json"
job=$(field 'j["id"]' <"$tmp/created.json")
echo "   created $job ($(field 'j["links"]["self"]' <"$tmp/created.json"))"

echo "== progress (GET $base/jobs/$job/progress?after=N): states, and improvements of K or nK"
after=0
: >"$tmp/last"
while :; do
    curl -sf "$base/jobs/$job/progress?after=$after" >"$tmp/page.json"
    python3 - "$tmp/page.json" "$tmp/last" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
last = open(sys.argv[2]).read().split()
for e in p["events"]:
    if e["type"] == "state":
        print("   %7.3f s  state %s" % (e["elapsed_s"], e["state"]))
    elif e["type"] == "improve":
        b = e["best"]
        now = [str(b["K"]), str(b["nK"])]
        if now != last[:2]:
            print("   %7.3f s  improve (K, nK, Phi, C) = (%d, %d, %d, %d)  [%s]" % (
                e["elapsed_s"], b["K"], b["nK"], b["Phi"], b["C"], e["stage"]))
        last = now
open(sys.argv[2], "w").write(" ".join(last))
EOF
    after=$(field 'j["next"]' <"$tmp/page.json")
    [ "$(field 'j["done"]' <"$tmp/page.json")" = "True" ] && break
    sleep 0.3
done
curl -sf "$base/jobs/$job" >"$tmp/status.json"
echo "   $(field '"%s after %.2f s (%s), backend %s, evaluator %s; K <= 3 reached after %s s; %d progress events" % (j["state"], j["elapsed_s"], j["stop_reason"], j["backend"], j["evaluator"], j["time_to_target_s"], j["progress_seq"])' <"$tmp/status.json")"
[ "$(field 'j["state"]' <"$tmp/status.json")" = "succeeded" ]

echo "== GET /jobs/$job/solution, checked by the independent validator"
curl -sf "$base/jobs/$job/solution" >"$tmp/solution.json"
"$lcnctl" check "$tmp/solution.json" --instance "$sample" >"$tmp/check.json"
echo "   $(field '"valid=%s  (K, nK, Phi, C) = (%d, %d, %d, %d)" % (j["valid"], j["K"], j["nK"], j["Phi"], j["C"])' <"$tmp/check.json")"
[ "$(field 'j["K"]' <"$tmp/check.json")" = "$(field 'j["lcn"]["K"]' <"$tmp/solution.json")" ]

echo "== stopping lcnd (SIGTERM)"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
if [ "$rc" -ne 0 ]; then
    echo "demo: lcnd exited with status $rc" >&2
    cat "$tmp/lcnd.log" >&2
    exit 1
fi
echo "   lcnd exited 0; its log:"
sed 's/^/   | /' "$tmp/lcnd.log"
echo "== demo done: the sample was solved through the API and the solution is valid"
