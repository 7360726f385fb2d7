#!/bin/bash
# The whole GPU round, run on the GPU machine over a copy of the working tree:
#   env      device, driver, library check of the carried binaries
#   tests    the GPU tests (test_gpu: evaluators vs oracle, solver vs twin, engine,
#            islands) and lcnd with two stand-in devices (test_daemon_multigpu.py)
#   kernels  the kernel benchmark (bench_gpu) and its audit
#   sanitize compute-sanitizer racecheck and synccheck on the solver's twin
#            tests, one test per run (SANITIZE_TESTS, SANITIZE_TIMEOUT s each) -> sanitize.log
#   daemon   lcnd serve with GPU workers: jobs, cancel, readiness, metrics
#   budgets  the device engine's deadline on graphs with a heavy start phase
#            (BUDGET_GRAPHS "dense:1000 ...", BUDGETS "0.5 1 3") -> budgets.jsonl
#   rate     candidate evaluations/s: GPU engine vs CPU engine on one core,
#            same generated graph (2519/4938 grid family), side by side
#   solver   lcnd solve --backend gpu over instances x seeds (SOLVER_* below)
#   sweep    the solver phase once per configuration of SWEEP, each into
#            OUTDIR/sweep-NAME: SWEEP="NAME:REPLICAS_TOTAL:TUNING NAME:..." (TUNING
#            k=v,k=v; SOLVER_GRAPHS, SOLVER_SEEDS, SOLVER_AT_ONCE apply to all)
#   accept   acceptance runs, each alone on the whole device: ACCEPT="GRAPH:SEEDS:BUDGET ..."
#            -> OUTDIR/accept-summary.txt, runs/, layouts/<graph>.s<seed>.json
#   islands  issue 18's island quality: lcnd solve --replicas R (one device) against
#            --devices D --replicas R (islands on the stand-ins D, e.g. 0,0), the same
#            total, alternating, each alone on the device: ISLANDS="GRAPH:SEEDS:BUDGET ..."
#            (ISLAND_DEVICES 0,0, ISLAND_REPLICAS 132) -> islands.jsonl, layouts/
#   steprate k_steps step rate of two binaries side by side (LCN_BIN_OLD vs LCN_BIN),
#            same deterministic runs of Automatic-3 and -7 -> steprate.jsonl
#            (STEPRATE_TUNING_B: knobs added on LCN_BIN's side only)
#   evaluators the device's scan and edge grids side by side, and auto, on the rate
#            graph, Automatic-3/-7, instance_04/06 (EVAL_GRAPHS, EVAL_BUDGET=10,
#            EVAL_REPS=2, EVAL_W=4); the CPU engine on the rate graph -> evaluators.jsonl
#   scale    issue 17's sizes: each of SCALE_GRAPHS (paths, .json or .json.gz; default
#            .gpu-carry/scale/*) with lcnd solve --backend gpu, then --backend cpu (every
#            core), SCALE_BUDGET=60 s each, alone on the machine: time to the first valid
#            layout, moves/s, peak device memory (nvidia-smi), K, the oracle's re-check
#            (lcnctl check; layouts over 4 MB are removed after it) -> scale.jsonl, layouts
#   profile  Nsight Compute on k_steps (one launch after PROFILE_SKIP=30) of a
#            PROFILE_S=4 s run of PROFILE_GRAPH with PROFILE_REPLICAS=48:
#            warp states, scheduler, occupancy, stall sampling -> profile.txt
# Results and manifests go to OUTDIR (default $OUT, else out/gpu-round).
#
# usage: tests/gpu/run-on-gpu.sh [OUTDIR] [phase ...]   (default phases: env tests kernels rate)
# env:   LCN_BIN (build/bin)  LCN_DEBS (.gpu-carry/debs: runtime .debs to unpack)
#        LCN_INSTANCES (../shared/instances, or .gpu-carry/instances when present)
#        SOLVER_GRAPHS (paths)  SOLVER_SEEDS ("1 2 3 4 5")  SOLVER_BUDGET (60)
#        SOLVER_TUNING  SOLVER_REPLICAS_TOTAL (default 132, what filling an H200 gives on the
#        shared instances, split between the concurrent runs; 0 = EVERY run fills the device,
#        so concurrent runs get that many replicas each and far fewer steps per replica)
#        SOLVER_AT_ONCE (graphs run at the same time, default 1)
#        LCN_COMMIT LCN_DIRTY (when the tree has no .git)
set -u
OUTDIR=${1:-${OUT:-out/gpu-round}}
shift || true
PHASES=${*:-env tests kernels rate}
mkdir -p "$OUTDIR"
BIN=${LCN_BIN:-build/bin}
DEBS=${LCN_DEBS:-.gpu-carry/debs}
if [ -z "${LCN_INSTANCES:-}" ]; then
    if [ -d .gpu-carry/instances ]; then LCN_INSTANCES=.gpu-carry/instances; else LCN_INSTANCES=../shared/instances; fi
fi
export NCCL_NVLS_ENABLE=0

# Runtime libraries the GPU machine lacks, unpacked into a private prefix.
# Only sonames the machine lacks are exposed (symlinks in one directory), so
# its own libraries (libssl for python3, say) are never shadowed.
if [ -d "$DEBS" ] && ls "$DEBS"/*.deb >/dev/null 2>&1; then
    PFX=$(mktemp -d)
    LIBS=$(mktemp -d)
    for d in "$DEBS"/*.deb; do dpkg -x "$d" "$PFX"; done
    for so in "$PFX"/usr/lib/x86_64-linux-gnu/*.so.* "$PFX"/lib/x86_64-linux-gnu/*.so.*; do
        [ -e "$so" ] || continue
        name=$(basename "$so")
        ldconfig -p | grep -q " $name " || ln -sf "$so" "$LIBS/$name"
    done
    export LD_LIBRARY_PATH="$LIBS:${LD_LIBRARY_PATH:-}"
fi

# The device copy of the tree may have no .git: the caller passes LCN_COMMIT/LCN_DIRTY.
COMMIT=${LCN_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
DIRTY=${LCN_DIRTY:-$( [ -n "$(git status --porcelain 2>/dev/null)" ] && echo 1 || echo 0)}
# The rate graph (the contest's Automatic-9 shape: grid family, 2519/4938,
# seed 7), generated into OUTDIR once; prints its path.
rate_graph() {
    local g="$OUTDIR/grid-2519.json"
    [ -f "$g" ] || "$BIN/lcnctl" gen grid --nodes 2519 --edges 4938 --seed 7 -o "$g" >/dev/null
    echo "$g"
}
manifest() { # name command...
    local name=$1; shift
    {
        echo "{"
        echo "  \"commit\": \"$COMMIT\", \"dirty\": $DIRTY,"
        echo "  \"date\": \"$(date -u +%FT%TZ)\", \"host\": \"$(hostname)\","
        echo "  \"gpu\": \"$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)\","
        echo "  \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\","
        echo "  \"binaries\": {"
        local first=1
        for b in lcnd lcnctl test_gpu bench_gpu; do
            [ -x "$BIN/$b" ] || continue
            [ $first = 1 ] || echo ","
            printf '    "%s": "%s"' "$b" "$(sha256sum "$BIN/$b" | cut -d' ' -f1)"
            first=0
        done
        echo ""
        echo "  },"
        printf '  "command": "%s"\n' "$*"
        echo "}"
    } > "$OUTDIR/manifest-$name.json"
}

for phase in $PHASES; do
case $phase in
env)
    {
        nvidia-smi || true
        echo "--- ldd"
        for b in "$BIN"/*; do echo "$b"; ldd "$b" | grep "not found" || true; done
    } > "$OUTDIR/env.txt" 2>&1
    tail -n 3 "$OUTDIR/env.txt"
    ;;
tests)
    manifest tests "$BIN/test_gpu; LCND=$BIN/lcnd LCNCTL=$BIN/lcnctl python3 tests/integration/test_daemon_multigpu.py"
    "$BIN/test_gpu" > "$OUTDIR/tests.log" 2>&1
    echo "test_gpu exit $?" | tee -a "$OUTDIR/tests.log"
    grep -E "PASSED|FAILED|ERROR|engine:|island|LINE" "$OUTDIR/tests.log" | head -30
    # several devices in one daemon (issue 18): two stand-ins on device 0
    LCND="$PWD/$BIN/lcnd" LCNCTL="$PWD/$BIN/lcnctl" python3 tests/integration/test_daemon_multigpu.py \
        > "$OUTDIR/multigpu.log" 2>&1
    echo "test_daemon_multigpu exit $?" | tee -a "$OUTDIR/multigpu.log"
    grep -E "^(OK|FAILED|Ran)|SKIP|devices:|island job|re-queued|Error|Traceback|lcnd log" "$OUTDIR/multigpu.log" | head -30
    ;;
sanitize)
    CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    ST=${SANITIZE_TESTS:-test_solver_r2_w2 test_solver_small_groups test_solver_r4_w256 test_solver_big_chunks}
    manifest sanitize "$CS --tool racecheck|synccheck --error-exitcode 1 $BIN/test_gpu with LCN_TEST_FILTER in: $ST"
    : > "$OUTDIR/sanitize.log"
    for tool in racecheck synccheck; do
        for t in $ST; do
            LCN_TEST_FILTER=$t timeout "${SANITIZE_TIMEOUT:-240}" "$CS" --tool $tool --error-exitcode 1 "$BIN/test_gpu" \
                >> "$OUTDIR/sanitize.log" 2>&1
            echo "$tool $t exit $?" | tee -a "$OUTDIR/sanitize.log"
        done
    done
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$OUTDIR/sanitize.log" | sort | uniq -c | head -20
    ;;
kernels)
    manifest kernels "$BIN/bench_gpu (random layout, stress layout, --force)"
    SHA=$(sha256sum "$BIN/bench_gpu" | cut -d' ' -f1)
    for lay in random stress; do
        "$BIN/bench_gpu" --layout $lay --out "$OUTDIR/bench_gpu_$lay.json" --commit "$COMMIT" \
            --dirty "$DIRTY" --binary-sha256 "$SHA" 2>&1 | tee -a "$OUTDIR/kernels.log"
        python3 tools/bench_audit.py "$OUTDIR/bench_gpu_$lay.json" 2>&1 | tee -a "$OUTDIR/kernels-audit.txt"
    done
    "$BIN/bench_gpu" --force --shapes 500/1740/1,2519/4938/1,10466/20288/1 --out "$OUTDIR/bench_force.json" \
        --commit "$COMMIT" --dirty "$DIRTY" --binary-sha256 "$SHA" 2>&1 | tee -a "$OUTDIR/kernels.log"
    ;;
daemon)
    # lcnd serve with GPU workers (tests/integration/test_daemon_gpu.py)
    manifest daemon "LCND=$BIN/lcnd LCNCTL=$BIN/lcnctl python3 tests/integration/test_daemon_gpu.py"
    LCND="$PWD/$BIN/lcnd" LCNCTL="$PWD/$BIN/lcnctl" python3 tests/integration/test_daemon_gpu.py \
        > "$OUTDIR/daemon.log" 2>&1
    echo "test_daemon_gpu exit $?" | tee -a "$OUTDIR/daemon.log"
    grep -E "^(OK|FAILED|Ran)|gpu |auto |cancel answered|Error|Traceback" "$OUTDIR/daemon.log" | head -20
    ;;
budgets)
    # Issue 14 on the device engine: lcnd solve --backend gpu with short
    # budgets on generated graphs whose start phase is heavy; the summary
    # holds the engine's elapsed_s against the budget (or its error) and the
    # whole command's wall time (which includes reading the graph).
    manifest budgets "lcnd solve GRAPH --backend gpu --budget-s B --seed 1 (lcnctl gen FAMILY --nodes N --seed 1)"
    for spec in ${BUDGET_GRAPHS:-dense:1000 dense:2000 random:20000}; do
        fam=${spec%%:*} n=${spec#*:}
        G="$OUTDIR/$fam-$n.json"
        "$BIN/lcnctl" gen "$fam" --nodes "$n" --seed 1 -o "$G" >/dev/null
        for B in ${BUDGETS:-0.5 1 3}; do
            t0=$(date +%s.%N)
            "$BIN/lcnd" solve "$G" --backend gpu --budget-s "$B" --seed 1 --quiet \
                --out "$OUTDIR/budget-out.json" > "$OUTDIR/budget-run.json" 2> "$OUTDIR/budget-err.txt"
            rc=$?
            t1=$(date +%s.%N)
            python3 - "$fam-$n" "$B" "$rc" "$t0" "$t1" "$OUTDIR/budget-run.json" "$OUTDIR/budget-err.txt" \
                >> "$OUTDIR/budgets.jsonl" <<'PY'
import json, sys
g, b, rc, t0, t1, f, e = sys.argv[1:]
try:
    d = json.load(open(f))
except Exception:
    d = {}
print(json.dumps({"graph": g, "budget_s": float(b), "rc": int(rc), "wall_s": float(t1) - float(t0),
                  "elapsed_s": d.get("elapsed_s"), "stop": d.get("stop"),
                  "K": (d.get("best") or {}).get("K"), "error": open(e).read().strip()[-200:]}))
PY
        done
        rm -f "$G"
    done
    cat "$OUTDIR/budgets.jsonl"
    ;;
rate)
    # Same graph, same budget, same proposal-worker width, the GPU's move mix
    # set to the CPU engine's defaults (candidate point: 5% uniform, 15% near
    # the barycentre, 80% local; node: 60% crossing-focused, 40% uniform).
    G=$(rate_graph)
    B=${RATE_BUDGET:-10}
    MIX="p_local=0.8,p_bary=0.15,p_hot=0.6"
    manifest rate "lcnd solve $G --budget-s $B --seed 1 --proposal-workers W (4, 32): --backend cpu --threads 1 / --backend gpu --tuning $MIX"
    for W in 4 32; do
        "$BIN/lcnd" solve "$G" --budget-s "$B" --seed 1 --backend cpu --threads 1 --proposal-workers $W \
            --quiet --out "$OUTDIR/rate-cpu-w$W-layout.json" > "$OUTDIR/rate-cpu-w$W.json"
        "$BIN/lcnd" solve "$G" --budget-s "$B" --seed 1 --backend gpu --proposal-workers $W --tuning "$MIX" \
            --quiet --out "$OUTDIR/rate-gpu-w$W-layout.json" > "$OUTDIR/rate-gpu-w$W.json"
    done
    python3 - "$OUTDIR" <<'PY'
import json, sys
d = sys.argv[1]
out = {"graph": "grid 2519/4938 seed 7", "mix": "p_local=0.8,p_bary=0.15,p_hot=0.6 (GPU) = CPU defaults"}
for w in (4, 32):
    c = json.load(open(f"{d}/rate-cpu-w{w}.json")); g = json.load(open(f"{d}/rate-gpu-w{w}.json"))
    rc = c["telemetry"]["evaluated"] / c["elapsed_s"]
    rg = g["telemetry"]["evaluated"] / g["elapsed_s"]
    out[f"W{w}"] = {"cpu_1_thread_evaluated_per_s": rc, "gpu_evaluated_per_s": rg,
                    "ratio_gpu_over_cpu": rg / rc, "cpu_best": c["best"], "gpu_best": g["best"],
                    "gpu_replicas": g.get("replicas"), "cpu_evaluator": c.get("evaluator")}
json.dump(out, open(d + "/rate.json", "w"), indent=1)
print(json.dumps(out))
PY
    ;;
solver)
    # Paired seeds of one graph run concurrently on one device context
    # (bench_solver), each with its own slot and an equal share of replicas.
    SEEDS=${SOLVER_SEEDS:-1,2,3,4,5}
    BUDGET=${SOLVER_BUDGET:-60}
    GRAPHS=${SOLVER_GRAPHS:-$(ls "$LCN_INSTANCES"/gd2025-automatic/*.json "$LCN_INSTANCES"/gd2025-examples/[0-9]*.json)}
    manifest solver "bench_solver --budget-s $BUDGET --seeds $SEEDS --replicas-total ${SOLVER_REPLICAS_TOTAL:-132} --graphs-at-once ${SOLVER_AT_ONCE:-1} --targets bench/targets.txt ${SOLVER_TUNING:+--tuning $SOLVER_TUNING} $(echo $GRAPHS)"
    mkdir -p "$OUTDIR/runs"
    "$BIN/bench_solver" --out "$OUTDIR/runs" --budget-s "$BUDGET" --seeds "$SEEDS" \
        --replicas-total "${SOLVER_REPLICAS_TOTAL:-132}" --graphs-at-once "${SOLVER_AT_ONCE:-1}" --targets bench/targets.txt \
        ${SOLVER_TUNING:+--tuning "$SOLVER_TUNING"} $GRAPHS | tee -a "$OUTDIR/solver-summary.txt"
    ;;
sweep)
    for cfg in ${SWEEP:-}; do
        IFS=: read -r name total tuning <<< "$cfg"
        SOLVER_REPLICAS_TOTAL=$total SOLVER_TUNING=$tuning "$0" "$OUTDIR/sweep-$name" solver > /dev/null 2>&1
        echo "sweep $name (replicas total $total, tuning $tuning):"
        tail -n 2 "$OUTDIR/sweep-$name/solver-summary.txt"
    done
    ;;
accept)
    # Acceptance runs, each ALONE on the whole device (bench_solver with one
    # seed and every replica of the device): ACCEPT="GRAPH:SEEDS:BUDGET ..."
    # (SEEDS comma-separated, run one after the other; GRAPH a path). Layouts
    # go to OUTDIR/layouts/<graph>.s<seed>.json, summaries to OUTDIR/runs/.
    mkdir -p "$OUTDIR/runs" "$OUTDIR/layouts"
    manifest accept "per run, alone on the device: bench_solver --budget-s BUDGET --seeds SEED --replicas-total ${SOLVER_REPLICAS_TOTAL:-132} ${SOLVER_TUNING:+--tuning $SOLVER_TUNING} GRAPH; runs: ${ACCEPT:-}"
    for spec in ${ACCEPT:-}; do
        IFS=: read -r g seeds budget <<< "$spec"
        for sd in ${seeds//,/ }; do
            "$BIN/bench_solver" --out "$OUTDIR/runs" --budget-s "$budget" --seeds "$sd" \
                --replicas-total "${SOLVER_REPLICAS_TOTAL:-132}" --targets bench/targets.txt \
                ${SOLVER_TUNING:+--tuning "$SOLVER_TUNING"} "$g" | tee -a "$OUTDIR/accept-summary.txt"
            b=$(basename "$g" .json)
            cp "$OUTDIR/runs/$b-s$sd.layout.json" "$OUTDIR/layouts/$b.s$sd.json"
        done
    done
    ;;
islands)
    DEVS=${ISLAND_DEVICES:-0,0}
    IR=${ISLAND_REPLICAS:-132}
    mkdir -p "$OUTDIR/islands" "$OUTDIR/layouts"
    manifest islands "per run, alone on the device, one then islands: lcnd solve GRAPH --backend gpu --replicas $IR --budget-s BUDGET --seed SEED [--devices $DEVS] ${SOLVER_TUNING:+--tuning $SOLVER_TUNING}; runs: ${ISLANDS:-}"
    for spec in ${ISLANDS:-}; do
        IFS=: read -r g seeds budget <<< "$spec"
        b=$(basename "$g" .json)
        for sd in ${seeds//,/ }; do
            for side in one islands; do
                extra=""; [ $side = islands ] && extra="--devices $DEVS"
                f="$OUTDIR/islands/$b.$side.s$sd"
                "$BIN/lcnd" solve "$g" --backend gpu --replicas "$IR" --budget-s "$budget" --seed "$sd" $extra \
                    ${SOLVER_TUNING:+--tuning "$SOLVER_TUNING"} --quiet --out "$f.layout.json" > "$f.json" 2> "$f.err"
                cp "$f.layout.json" "$OUTDIR/layouts/$b.$side.s$sd.json"
                python3 - "$f.json" "$b" "$side" "$sd" >> "$OUTDIR/islands.jsonl" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d.get("telemetry", {})
print(json.dumps({"graph": sys.argv[2], "side": sys.argv[3], "seed": int(sys.argv[4]),
                  "best": d.get("best"), "elapsed_s": d.get("elapsed_s"), "replicas": d.get("replicas"),
                  "selected": t.get("selected"), "restarts": t.get("restarts"),
                  "balance_ratio": d.get("balance_ratio"), "devices": t.get("devices", [])}))
PY
                tail -n 1 "$OUTDIR/islands.jsonl"
            done
        done
    done
    ;;
steprate)
    # k_steps' step rate, two binaries side by side (issue 16's split): the
    # same deterministic run (cool=1, fixed batches, a move limit, so both
    # take the same steps) of each graph, alternating A and B REPS times.
    # LCN_BIN_OLD: the other binary directory (lcnd). -> steprate.jsonl
    OLD=${LCN_BIN_OLD:?LCN_BIN_OLD: the binary directory to compare with}
    REPS=${STEPRATE_REPS:-3}
    manifest steprate "A=$OLD/lcnd (sha256 $(sha256sum "$OLD/lcnd" | cut -d' ' -f1)) B=$BIN/lcnd: lcnd solve G --backend gpu --seed 1 --budget-s 120 --move-limit N --tuning cool=1,batch_steps=256, alternating, $REPS pairs; graphs ${STEPRATE_GRAPHS:-Automatic-3:300000 Automatic-7:100000}"
    : > "$OUTDIR/steprate.jsonl"
    for spec in ${STEPRATE_GRAPHS:-Automatic-3:300000 Automatic-7:100000}; do
        IFS=: read -r g lim <<< "$spec"
        G=$LCN_INSTANCES/gd2025-automatic/$g.json
        for i in $(seq 1 "$REPS"); do
            for side in A B; do
                if [ $side = A ]; then L=$OLD/lcnd; T=; else L=$BIN/lcnd; T=${STEPRATE_TUNING_B:+,$STEPRATE_TUNING_B}; fi
                "$L" solve "$G" --backend gpu --seed 1 --budget-s 120 --move-limit "$lim" \
                    --tuning "cool=1,batch_steps=256$T" --quiet --out "$OUTDIR/steprate-$g-$side-$i.layout.json" \
                    > "$OUTDIR/steprate-$g-$side-$i.json" 2> "$OUTDIR/steprate-$g-$side-$i.err"
                python3 - "$OUTDIR/steprate-$g-$side-$i.json" "$g" "$side" "$i" "$OUTDIR/steprate-$g-$side-$i.layout.json" >> "$OUTDIR/steprate.jsonl" <<'PY'
import hashlib, json, sys
d = json.load(open(sys.argv[1]))
t = d.get("telemetry", {})
print(json.dumps({"graph": sys.argv[2], "side": sys.argv[3], "rep": int(sys.argv[4]),
                  "elapsed_s": d.get("elapsed_s"), "start_s": (d.get("start") or {}).get("elapsed_s"),
                  "selected": t.get("selected"), "pair_tests": t.get("pair_tests"),
                  "best": d.get("best"),
                  "layout_sha256": hashlib.sha256(open(sys.argv[5], "rb").read()).hexdigest()}))
PY
            done
        done
    done
    cat "$OUTDIR/steprate.jsonl"
    ;;
evaluators)
    # issue 17: the device's two evaluators side by side (the scan of every
    # edge, box-filtered, and the replicas' edge grids), and auto's choice,
    # on each graph: same seed and budget, alternating, EVAL_REPS pairs; the
    # rate graph (generated grid 2519/4938) also on the CPU engine, one
    # thread. Rates are candidate evaluations per second of the whole run
    # (the start phase included, as in the rate phase). -> evaluators.jsonl
    REPS=${EVAL_REPS:-2}
    B=${EVAL_BUDGET:-10}
    G=$(rate_graph)
    GRAPHS=${EVAL_GRAPHS:-$G $LCN_INSTANCES/gd2025-automatic/Automatic-3.json $LCN_INSTANCES/gd2025-automatic/Automatic-7.json $LCN_INSTANCES/course-2026/instance_04.json $LCN_INSTANCES/course-2026/instance_06.json}
    manifest evaluators "lcnd solve G --backend gpu --seed 1 --budget-s $B --proposal-workers ${EVAL_W:-4} --tuning evaluator=scan|index (alternating, $REPS pairs), then evaluator=auto; lcnd solve grid-2519 --backend cpu --threads 1 (same W); graphs $(echo $GRAPHS)"
    : > "$OUTDIR/evaluators.jsonl"
    one() { # graph tag backend args...
        local g=$1 tag=$2; shift 2
        local base; base=$(basename "$g" .json)
        "$BIN/lcnd" solve "$g" --seed 1 --budget-s "$B" --proposal-workers "${EVAL_W:-4}" "$@" --quiet \
            --out "$OUTDIR/ev-$base-$tag.layout.json" > "$OUTDIR/ev-$base-$tag.json" 2> "$OUTDIR/ev-$base-$tag.err"
        python3 - "$OUTDIR/ev-$base-$tag.json" "$base" "$tag" >> "$OUTDIR/evaluators.jsonl" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d.get("telemetry", {})
ev = t.get("evaluated") or 0
print(json.dumps({"graph": sys.argv[2], "run": sys.argv[3], "evaluator": d.get("evaluator"),
                  "elapsed_s": d["elapsed_s"], "evaluated": ev,
                  "evaluated_per_s": ev / d["elapsed_s"],
                  "pair_tests_per_candidate": (t.get("pair_tests") or 0) / ev if ev else None,
                  "replicas": d.get("replicas"), "best": d.get("best")}))
PY
    }
    for g in $GRAPHS; do
        for i in $(seq 1 "$REPS"); do
            one "$g" "scan-$i" --backend gpu --tuning evaluator=scan
            one "$g" "index-$i" --backend gpu --tuning evaluator=index
        done
        one "$g" auto --backend gpu --tuning evaluator=auto
    done
    one "$G" cpu --backend cpu --threads 1
    cat "$OUTDIR/evaluators.jsonl"
    ;;
scale)
    B=${SCALE_BUDGET:-60}
    manifest scale "per graph, alone on the machine: lcnd solve GRAPH --budget-s $B --seed 1 --backend gpu, then --backend cpu; graphs: ${SCALE_GRAPHS:-.gpu-carry/scale/*}"
    mkdir -p "$OUTDIR/scale"
    for src in ${SCALE_GRAPHS:-.gpu-carry/scale/*}; do
        b=$(basename "$src"); b=${b%.gz}; b=${b%.json}
        G="$OUTDIR/scale/$b.json"
        case $src in *.gz) gunzip -c "$src" > "$G";; *) cp "$src" "$G";; esac
        for be in ${SCALE_BACKENDS:-gpu cpu}; do
            nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 \
                > "$OUTDIR/scale/$b-$be.mem" 2>/dev/null &
            smi=$!
            t0=$(date +%s.%N)
            "$BIN/lcnd" solve "$G" --backend $be --budget-s "$B" --seed 1 \
                --out "$OUTDIR/scale/$b-$be.layout.json" > "$OUTDIR/scale/$b-$be.json" 2> "$OUTDIR/scale/$b-$be.err"
            rc=$?
            t1=$(date +%s.%N)
            kill $smi 2>/dev/null; wait $smi 2>/dev/null
            # the oracle's re-check of the layout here (a 200,000-node layout
            # is too large to come back), then the layout goes
            L="$OUTDIR/scale/$b-$be.layout.json"
            [ -f "$L" ] && "$BIN/lcnctl" check "$L" --instance "$G" > "$OUTDIR/scale/$b-$be.check.json" 2>&1
            [ -f "$L" ] && [ "$(stat -c %s "$L")" -gt 4000000 ] && rm -f "$L"
            python3 - "$b" "$be" "$rc" "$t0" "$t1" "$OUTDIR/scale" >> "$OUTDIR/scale.jsonl" <<'PY'
import json, re, sys
b, be, rc, t0, t1, d = sys.argv[1:]
try:
    ck = json.load(open(f"{d}/{b}-{be}.check.json"))
    check = {"valid": ck.get("valid"), "K": ck.get("K"), "nK": ck.get("nK"), "C": ck.get("C")}
except Exception:
    check = None
try:
    s = json.load(open(f"{d}/{b}-{be}.json"))
except Exception:
    s = {}
first = None
for line in open(f"{d}/{b}-{be}.err", errors="replace"):
    m = re.match(r"\[\s*([0-9.]+)/[0-9.]+ s\] best \(", line)
    if m:
        first = float(m.group(1))
        break
mem = [int(x) for x in open(f"{d}/{b}-{be}.mem").read().split() if x.isdigit()]
t = s.get("telemetry") or {}
el = s.get("elapsed_s") or 0
print(json.dumps({"graph": b, "n": s.get("n"), "m": s.get("m"), "backend": be, "rc": int(rc),
                  "wall_s": float(t1) - float(t0), "elapsed_s": el, "budget_s": s.get("budget_s"),
                  "first_layout_s": first, "moves_per_s": t.get("attempted_per_s"),
                  "evaluated_per_s": (t.get("evaluated") or 0) / el if el else None,
                  "device_mem_peak_mib": max(mem) if mem else None, "replicas": s.get("replicas"),
                  "threads": s.get("threads"), "evaluator": s.get("evaluator"), "best": s.get("best"),
                  "stop": s.get("stop"), "check": check}))
PY
            tail -n 1 "$OUTDIR/scale.jsonl"
        done
        rm -f "$G"
    done
    ;;
profile)
    PG=${PROFILE_GRAPH:-$LCN_INSTANCES/gd2025-automatic/Automatic-3.json}
    NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    manifest profile "$NCU k_steps skip ${PROFILE_SKIP:-30}: lcnd solve $PG --backend gpu --replicas ${PROFILE_REPLICAS:-48}"
    "$NCU" --kernel-name k_steps --launch-skip "${PROFILE_SKIP:-30}" --launch-count 1 \
        --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
        --section ComputeWorkloadAnalysis --section SourceCounters -f -o "$OUTDIR/profile" \
        "$BIN/lcnd" solve "$PG" --backend gpu --budget-s "${PROFILE_S:-4}" --seed 1 \
        --replicas "${PROFILE_REPLICAS:-48}" ${SOLVER_TUNING:+--tuning "$SOLVER_TUNING"} --quiet \
        --out "$OUTDIR/profile-layout.json" > "$OUTDIR/profile-run.json" 2> "$OUTDIR/profile-ncu.log"
    "$NCU" -i "$OUTDIR/profile.ncu-rep" --print-details all > "$OUTDIR/profile.txt" 2>&1
    "$NCU" -i "$OUTDIR/profile.ncu-rep" --page source --csv --print-source sass > "$OUTDIR/profile-sass.csv" 2>&1
    tail -n 5 "$OUTDIR/profile-ncu.log"; wc -l "$OUTDIR/profile.txt"
    ;;
*)
    echo "unknown phase $phase"; exit 2;;
esac
done
