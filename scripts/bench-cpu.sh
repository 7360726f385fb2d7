#!/bin/sh
# bench-cpu.sh - solver-outcome benchmark of the CPU engine (ARCHITECTURE.md
# section 6, layer 3): a fixed wall-clock budget, a paired seed list (every
# instance runs with the same seeds), runs interleaved (seed-major), every
# written layout checked by `lcnctl check --instance`, time-to-target for the
# best known K with runs that missed it kept as censored.
#
# usage: scripts/bench-cpu.sh [--budget S] [--seeds "1 2 3 4 5"] [--threads T]
#            [--set accept|examples|automatic|all|gen|quick] [--instances "A B ..."]
#            [--gen "family:n[:m][:k] ..."] [--out DIR] [--build DIR] [--extra "ARGS"]
#
# Instances are read from ../shared/instances (never copied into the
# repository); generated ones are made with `lcnctl gen` into the output
# directory. Writes DIR/manifest.json, DIR/runs/*.json (one lcnd solve
# summary per run, plus the check verdict), DIR/layouts/, DIR/logs/, and
# DIR/summary.md + DIR/summary.csv (scripts/bench-cpu-summary.py).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
budget=10
seeds="1 2 3 4 5"
threads=2
set_name=accept
instances=""
gens=""
out=""
build="$here/build"
extra=""
inst_root="$here/../shared/instances"

. "$here/scripts/lib/options.sh"
options_parse bench-cpu.sh 2,20 "budget:budget seeds:seeds threads:threads set:set_name
    instances:instances gen:gens out:out build:build extra:extra instances-root:inst_root" "$@"

lcnd="$build/bin/lcnd"
lcnctl="$build/bin/lcnctl"
for b in "$lcnd" "$lcnctl"; do
    [ -x "$b" ] || { echo "bench-cpu.sh: '$b' not built" >&2; exit 2; }
done

ex="gd2025-examples"
au="gd2025-automatic"
accept_set="$ex/15-nodes $ex/100-nodes $ex/625-nodes $au/Automatic-1 $au/Automatic-2 $au/Automatic-3 $au/Automatic-4"
examples_set="$ex/15-nodes $ex/70-nodes $ex/100-nodes $ex/150-nodes $ex/225-nodes $ex/625-nodes"
automatic_set="$au/Automatic-1 $au/Automatic-2 $au/Automatic-3 $au/Automatic-4 $au/Automatic-6 $au/Automatic-7"
gen_default="grid:2519:4938 grid:10466:20288 large:2000 planted:400:0:2"
if [ -z "$instances" ]; then
    case "$set_name" in
    accept) instances=$accept_set ;;
    examples) instances=$examples_set ;;
    automatic) instances=$automatic_set ;;
    all) instances="$examples_set $automatic_set"; [ -n "$gens" ] || gens=$gen_default ;;
    gen) instances=""; [ -n "$gens" ] || gens=$gen_default ;;
    quick) instances="$ex/15-nodes $au/Automatic-1" ;;
    *) echo "bench-cpu.sh: unknown set '$set_name'" >&2; exit 2 ;;
    esac
fi

# Best known K (../shared/instances/README.md: the best of the contest
# results and the public solvers' 60 s runs; for examples without a better
# result, the planted k).
best_known() {
    case "$1" in
    15-nodes) echo 4 ;; 70-nodes) echo 16 ;; 100-nodes) echo 6 ;; 150-nodes) echo 50 ;;
    225-nodes) echo 16 ;; 625-nodes) echo 1 ;;
    Automatic-1) echo 9 ;; Automatic-2) echo 3 ;; Automatic-3) echo 36 ;;
    Automatic-4) echo 6 ;; Automatic-6) echo 568 ;; Automatic-7) echo 28 ;;
    *) echo "" ;;
    esac
}

commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=False
[ -z "$(git -C "$here" status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=True
stamp=$(date -u +%Y%m%dT%H%M%SZ)
[ -n "$out" ] || out="$here/out/bench-cpu/$stamp-$commit"
mkdir -p "$out/runs" "$out/layouts" "$out/logs" "$out/instances"

# name|path|target lines
list="$out/instances.txt"
: > "$list"
for i in $instances; do
    f="$inst_root/$i.json"
    [ -f "$f" ] || { echo "bench-cpu.sh: missing instance $f" >&2; exit 2; }
    name=$(basename "$i")
    echo "$name|$f|$(best_known "$name")" >> "$list"
done
for gspec in $gens; do
    fam=$(echo "$gspec" | cut -d: -f1)
    n=$(echo "$gspec" | cut -d: -f2)
    m=$(echo "$gspec" | cut -s -d: -f3)
    k=$(echo "$gspec" | cut -s -d: -f4)
    name="gen-$fam-$n"
    f="$out/instances/$name.json"
    set -- gen "$fam" --nodes "$n" --seed 1 -o "$f"
    [ -z "$m" ] || [ "$m" = 0 ] || set -- "$@" --edges "$m"
    target=""
    if [ "$fam" = planted ]; then
        k=${k:-2}
        set -- "$@" --k "$k"
        target=$k
    fi
    "$lcnctl" "$@"
    echo "$name|$f|$target" >> "$list"
done

hash_of() { sha256sum "$1" | cut -d' ' -f1; }

python3 - "$out/manifest.json" <<EOF
import json, os, platform, subprocess, sys
def sh(c):
    try:
        return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
    except Exception:
        return ""
inst = []
for line in open("$list"):
    name, path, target = line.strip().split("|")
    inst.append({"name": name, "path": os.path.relpath(path, "$here"),
                 "sha256": sh("sha256sum '%s' | cut -d' ' -f1" % path),
                 "target_k": int(target) if target else None})
m = {
    "kind": "bench-cpu",
    "started_utc": "$stamp",
    "commit": "$commit",
    "dirty": $dirty,
    "lcnd": {"path": "$lcnd", "sha256": sh("sha256sum '$lcnd' | cut -d' ' -f1")},
    "lcnctl": {"path": "$lcnctl", "sha256": sh("sha256sum '$lcnctl' | cut -d' ' -f1")},
    "machine": {"hostname": platform.node(), "uname": " ".join(platform.uname()),
                "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
                "cores_online": os.cpu_count(),
                "loadavg_start": open("/proc/loadavg").read().split()[:3]},
    "command": "scripts/bench-cpu.sh",
    "budget_s": float("$budget"),
    "threads": int("$threads"),
    "seeds": [int(s) for s in "$seeds".split()],
    "extra_args": "$extra",
    "order": "interleaved: for each seed, every instance in list order",
    "instances": inst,
}
json.dump(m, open(sys.argv[1], "w"), indent=2)
EOF

total=0
for s in $seeds; do total=$((total + $(wc -l < "$list"))); done
i=0
for s in $seeds; do
    while IFS='|' read -r name path target; do
        i=$((i + 1))
        run="$name.s$s"
        set -- solve "$path" --budget-s "$budget" --seed "$s" --threads "$threads" --backend cpu \
            --quiet --out "$out/layouts/$run.json"
        [ -z "$target" ] || set -- "$@" --target-k "$target"
        # shellcheck disable=SC2086
        if "$lcnd" "$@" $extra > "$out/runs/$run.solve.json" 2> "$out/logs/$run.stderr"; then
            rc=0
        else
            rc=$?
        fi
        check_rc=0
        if [ $rc -eq 0 ]; then
            "$lcnctl" check "$out/layouts/$run.json" --instance "$path" --max-violations 5 \
                > "$out/runs/$run.check.json" 2>> "$out/logs/$run.stderr" || check_rc=$?
        fi
        python3 - "$out/runs/$run.solve.json" "$out/runs/$run.check.json" "$out/runs/$run.json" \
            "$name" "$s" "$rc" "$check_rc" "$target" <<'EOF'
import json, sys
solve_p, check_p, out_p, name, seed, rc, check_rc, target = sys.argv[1:9]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
r = {"instance": name, "seed": int(seed), "exit": int(rc), "check_exit": int(check_rc),
     "target_k": int(target) if target else None, "solve": load(solve_p), "check": load(check_p)}
chk = r["check"] or {}
sol = r["solve"] or {}
r["valid"] = bool(chk.get("valid")) and int(check_rc) == 0
best = sol.get("best") or {}
r["tuple_matches_check"] = all(best.get(k) == chk.get(k) for k in ("K", "nK", "Phi", "C"))
json.dump(r, open(out_p, "w"), indent=1)
EOF
        printf '[%d/%d] %s seed %s: ' "$i" "$total" "$name" "$s"
        python3 -c "
import json,sys
r=json.load(open('$out/runs/$run.json'))
b=(r['solve'] or {}).get('best')
print('exit', r['exit'], 'valid', r['valid'], 'best', b and (b['K'], b['nK'], b['Phi'], b['C']),
      'ttt', (r['solve'] or {}).get('time_to_target_s'))"
    done < "$list"
done

python3 -c "
import json
m=json.load(open('$out/manifest.json'))
m['loadavg_end']=open('/proc/loadavg').read().split()[:3]
json.dump(m, open('$out/manifest.json','w'), indent=2)"
python3 "$here/scripts/bench-cpu-summary.py" "$out"
echo "bench-cpu.sh: results in $out"
