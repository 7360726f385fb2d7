#!/bin/sh
# bench-overshoot.sh - how far past its budget the CPU engine returns on
# graphs whose start phase is heavy: `lcnd solve --budget-s B` on generated
# graphs (default: dense 1000 nodes / 15,000 edges and grid 10,000 nodes,
# seed 1), for each budget, each binary in turn (A B A B ...: paired runs on
# a drifting machine). Records the engine's own elapsed_s (measured inside
# lcnd up to the final validated layout) and the whole command's wall time.
#
# usage: scripts/bench-overshoot.sh --out DIR [--a LCND] [--b LCND] [--runs N]
#            [--budgets "0.05 1 3"] [--gen "dense:1000 grid:10000"] [--threads T]
#
# --a defaults to build/bin/lcnd; --b is optional (a second binary, e.g. an
# earlier commit's). Writes DIR/manifest.json, DIR/runs.jsonl (one line per
# run: binary label, graph, budget, run, elapsed_s, wall_s, K, stop) and
# DIR/summary.md (medians per binary, graph and budget; with --b the ratio
# A/B of the medians).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
out=""
a="$here/build/bin/lcnd"
b=""
runs=3
budgets="0.05 1 3"
gens="dense:1000 grid:10000"
threads=2
. "$here/scripts/lib/options.sh"
options_parse bench-overshoot "" "out:out a:a b:b runs:runs budgets:budgets gen:gens threads:threads" "$@"
[ -n "$out" ] || { echo "usage: $0 --out DIR [--a LCND] [--b LCND] ..." >&2; exit 2; }
[ -e "$out" ] && { echo "$out exists: results are never overwritten" >&2; exit 1; }
mkdir -p "$out/graphs"
lcnctl="$here/build/bin/lcnctl"

sha() { sha256sum "$1" | cut -d' ' -f1; }
commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$( [ -n "$(git -C "$here" status --porcelain 2>/dev/null)" ] && echo true || echo false)
for gspec in $gens; do
    fam=${gspec%%:*} n=${gspec#*:}
    "$lcnctl" gen "$fam" --nodes "$n" --seed 1 -o "$out/graphs/$fam-$n.json" >/dev/null
done
{
    printf '{\n  "kind": "CPU engine deadline overshoot (scripts/bench-overshoot.sh)",\n'
    printf '  "date_utc": "%s",\n  "commit": "%s", "dirty": %s,\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$dirty"
    printf '  "machine": {"hostname": "%s", "cpu": "%s", "cores_online": %s, "load_at_start": "%s"},\n' \
        "$(hostname)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" "$(nproc)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '  "a": {"path": "%s", "sha256": "%s"},\n' "$a" "$(sha "$a")"
    [ -n "$b" ] && printf '  "b": {"path": "%s", "sha256": "%s"},\n' "$b" "$(sha "$b")"
    printf '  "command": "lcnd solve GRAPH --budget-s B --threads %s --backend cpu --seed 1 --quiet --out L",\n' "$threads"
    printf '  "graphs": "lcnctl gen FAMILY --nodes N --seed 1: %s", "budgets": "%s", "runs": %s\n}\n' "$gens" "$budgets" "$runs"
} > "$out/manifest.json"

one() { # label binary graph budget run
    t0=$(date +%s.%N)
    "$2" solve "$3" --budget-s "$4" --threads "$threads" --backend cpu --seed 1 --quiet \
        --out "$out/last-layout.json" > "$out/last.json"
    t1=$(date +%s.%N)
    python3 - "$1" "$3" "$4" "$5" "$t0" "$t1" "$out/last.json" >> "$out/runs.jsonl" <<'PY'
import json, os, sys
label, graph, budget, run, t0, t1, f = sys.argv[1:]
d = json.load(open(f))
print(json.dumps({"binary": label, "graph": os.path.basename(graph), "budget_s": float(budget),
                  "run": int(run), "elapsed_s": d["elapsed_s"], "wall_s": float(t1) - float(t0),
                  "K": d["best"]["K"], "stop": d["stop"]}))
PY
}
for gspec in $gens; do
    g="$out/graphs/${gspec%%:*}-${gspec#*:}.json"
    for bud in $budgets; do
        r=1
        while [ "$r" -le "$runs" ]; do
            one A "$a" "$g" "$bud" "$r"
            [ -n "$b" ] && one B "$b" "$g" "$bud" "$r"
            r=$((r + 1))
        done
    done
done
rm -f "$out/last.json" "$out/last-layout.json"
rm -rf "$out/graphs" # generated again from the manifest's parameters
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(out + "/runs.jsonl")]
keys = sorted({(r["graph"], r["budget_s"]) for r in rows})
labels = sorted({r["binary"] for r in rows})
med = {}
for r in rows:
    med.setdefault((r["binary"], r["graph"], r["budget_s"]), []).append(r)
lines = ["| graph | budget s | " + " | ".join(f"{l} elapsed s | {l} wall s | {l} K" for l in labels)
         + (" | A/B elapsed |" if len(labels) == 2 else " |"),
         "|---|---|" + "---|---|---|" * len(labels) + ("---|" if len(labels) == 2 else "")]
for g, b in keys:
    cells, el = [], {}
    for l in labels:
        rs = med[(l, g, b)]
        el[l] = statistics.median(x["elapsed_s"] for x in rs)
        cells.append(f"{el[l]:.3f} | {statistics.median(x['wall_s'] for x in rs):.3f} | "
                     + " ".join(str(x["K"]) for x in rs))
    ratio = f" | {el['A'] / el['B']:.2f} |" if len(labels) == 2 else " |"
    lines.append(f"| {g} | {b:g} | " + " | ".join(cells) + ratio)
open(out + "/summary.md", "w").write("Medians over the runs (K per run).\n\n" + "\n".join(lines) + "\n")
print("\n".join(lines))
PY
