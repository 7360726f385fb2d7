#!/usr/bin/env python3
"""run_checks.py - compare `lcnctl check` with the independent checker
lcn_check.py on every JSON file of some directories and on held-out
generated instances (plus deterministic mutations of them), and write the
results with a manifest.

  run_checks.py --lcnctl build/bin/lcnctl --out DIR [--heldout none|small|full]
                [--repo ROOT] [INPUT_DIR...]

For each file both checkers run with per-edge counts and an unlimited
violation list; they agree when the exit status (0 valid, 1 invalid,
2 unreadable) and, for a readable file, n, m, bounds, the tuple, the
per-edge counts, the violation counts, the full violation list and the
problem count are identical. In an input directory a file named
sol-<name>-*.json is checked with --instance <name>.json when that file
exists. Held-out files are generated with `lcnctl gen` into DIR/heldout.

Writes DIR/manifest.json, DIR/results.jsonl (one record per file) and
DIR/summary.json; prints a table. Exit status 0 when every file agrees
(and every held-out mutation has the verdict its construction implies),
1 otherwise.
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # tools/
import lcn_check  # noqa: E402
from lcntools import sha256  # noqa: E402
import mutate  # noqa: E402

UNLIMITED = 10_000_000

# (name, family, nodes, edges or None, seed, k or None). Seeds 9000+ are not
# used by any unit test: these graphs are held out from development.
HELDOUT = {
    "small": [
        ("random-20", "random", 20, None, 9001, None),
        ("grid-30", "grid", 30, None, 9002, None),
        ("dense-20", "dense", 20, 150, 9003, None),
        ("large-30", "large", 30, None, 9004, None),
        ("planted-25", "planted", 25, None, 9005, 2),
    ],
    "full": [
        ("random-200", "random", 200, 600, 9101, None),
        ("random-60-dense", "random", 60, 900, 9102, None),
        ("grid-600", "grid", 600, None, 9103, None),
        ("dense-100", "dense", 100, None, 9104, None),
        ("large-800", "large", 800, None, 9105, None),
        ("planted-300", "planted", 300, None, 9106, 3),
        ("planted-80-k1", "planted", 80, None, 9107, 1),
        ("planted-150-k8", "planted", 150, 400, 9108, 8),
    ],
}
# mutated variants are made of these held-out graphs (all variants of each)
MUTATED = {"small": ["random-20", "planted-25"], "full": ["random-200", "grid-600", "planted-80-k1"]}
# variants whose tuple must equal their base's (a similarity transform or a
# relabelling of the same drawing)
SAME_TUPLE = {"huge", "negative", "reordered"}


def git(repo, *args):
    try:
        return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def run_lcnctl(lcnctl, path, instance):
    cmd = [lcnctl, "check", path, "--counts", "--max-violations", str(UNLIMITED)]
    if instance:
        cmd += ["--instance", instance]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True)
    dt = time.perf_counter() - t0
    out = None
    if p.returncode in (0, 1):
        out = json.loads(p.stdout)
    return p.returncode, out, p.stderr.decode(errors="replace").strip(), dt


def run_oracle(path, instance):
    t0 = time.perf_counter()
    errors = []
    rc, out, err = lcn_check.check(path, instance, counts=True, max_violations=UNLIMITED, errors=errors)
    syntax = bool(errors) and errors[0].syntax
    return rc, out, err, syntax, time.perf_counter() - t0


COMPARED = [
    "valid", "n", "m", "width", "height", "missing_coordinates", "K", "nK", "Phi", "C",
    "violation_counts", "violations_total", "violations", "violations_listed_all",
    "problems_total", "problems", "c",
]


def compare(rc_a, a, err_a, rc_b, b, err_b, syntax_b):
    diffs = []
    if rc_a != rc_b:
        diffs.append("exit status: lcnctl %d, oracle %d" % (rc_a, rc_b))
    elif rc_a == 2 and not syntax_b and err_a != "lcnctl check: " + err_b:
        # a field-level rejection: same path, same reason
        diffs.append("error message differs")
    if a is not None and b is not None:
        for k in COMPARED:
            if a.get(k) != b.get(k):
                diffs.append("%s differs" % k)
    return diffs


def verdict(rc):
    return {0: "valid", 1: "invalid", 2: "unreadable"}.get(rc, "error(%d)" % rc)


def find_inputs(dirs):
    cases = []
    for d in dirs:
        files = []
        for root, _, names in os.walk(d):
            files += [os.path.join(root, n) for n in names if n.endswith(".json")]
        for f in sorted(files):
            inst = None
            m = re.match(r"sol-(.+?-nodes)-", os.path.basename(f))
            if m:
                cand = os.path.join(os.path.dirname(f), m.group(1) + ".json")
                if os.path.exists(cand):
                    inst = cand
            cases.append({"set": "input", "file": f, "instance": inst, "expect": None, "base": None})
    return cases


def gen_heldout(lcnctl, level, outdir):
    os.makedirs(outdir, exist_ok=True)
    cases, params = [], []
    base_docs = {}
    for name, fam, n, m, seed, k in HELDOUT.get(level, []):
        path = os.path.join(outdir, name + ".json")
        cmd = [lcnctl, "gen", fam, "--nodes", str(n), "--seed", str(seed), "-o", path]
        if m:
            cmd += ["--edges", str(m)]
        if k:
            cmd += ["--k", str(k)]
        planted = None
        if fam == "planted":
            planted = os.path.join(outdir, name + "-planted.json")
            cmd += ["--planted", planted]
        subprocess.run(cmd, check=True)
        params.append({"name": name, "command": cmd[1:]})
        cases.append({"set": "heldout", "file": path, "instance": None, "expect": "valid", "base": None})
        if planted:
            cases.append({"set": "heldout", "file": planted, "instance": path, "expect": "valid", "base": None})
        with open(path) as f:
            base_docs[name] = json.load(f)
    for name in MUTATED.get(level, []):
        base = os.path.join(outdir, name + ".json")
        for mname, data, use_instance, expect in mutate.mutations(base_docs[name], seed=1):
            path = os.path.join(outdir, "%s-%s.json" % (name, mname))
            with open(path, "wb") as f:
                f.write(data)
            cases.append({
                "set": "mutated", "file": path, "instance": base if use_instance else None,
                "expect": expect, "base": base if mname in SAME_TUPLE else None,
            })
    return cases, params


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lcnctl", required=True)
    ap.add_argument("--out", required=True, help="results folder (created)")
    ap.add_argument("--heldout", choices=["none", "small", "full"], default="full")
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("inputs", nargs="*")
    args = ap.parse_args()

    started = datetime.datetime.now(datetime.timezone.utc)
    os.makedirs(args.out, exist_ok=True)
    cases = find_inputs(args.inputs)
    held, gen_params = gen_heldout(args.lcnctl, args.heldout, os.path.join(args.out, "heldout"))
    cases += held

    tuples = {}
    records = []
    for cs in cases:
        rc_a, a, err_a, t_a = run_lcnctl(args.lcnctl, cs["file"], cs["instance"])
        rc_b, b, err_b, syntax_b, t_b = run_oracle(cs["file"], cs["instance"])
        diffs = compare(rc_a, a, err_a, rc_b, b, err_b, syntax_b)
        tup = [a[k] for k in ("K", "nK", "Phi", "C")] if a and a["K"] is not None else None
        tuples[cs["file"]] = tup
        rec = {
            "set": cs["set"], "file": cs["file"], "instance": cs["instance"],
            "verdict": verdict(rc_a), "oracle_verdict": verdict(rc_b), "agree": not diffs, "diffs": diffs,
            "tuple": tup, "violation_counts": a.get("violation_counts") if a else None,
            "problems_total": a.get("problems_total") if a else None,
            "lcnctl_error": err_a or None, "oracle_error": err_b,
            "lcnctl_s": round(t_a, 4), "oracle_s": round(t_b, 4),
        }
        if cs["expect"] is not None and verdict(rc_a) != cs["expect"]:
            rec["agree"] = False
            rec["diffs"].append("expected %s by construction" % cs["expect"])
        records.append((cs, rec))
    for cs, rec in records:
        if cs["base"] is not None and rec["tuple"] != tuples.get(cs["base"]):
            rec["agree"] = False
            rec["diffs"].append("tuple differs from its base %s" % os.path.basename(cs["base"]))

    files = sorted({cs["file"] for cs in cases} | {cs["instance"] for cs in cases if cs["instance"]})
    commit = (git(args.repo, "rev-parse", "HEAD") or "unknown").strip()
    status = git(args.repo, "status", "--porcelain", "--untracked-files=no")
    version = subprocess.run([args.lcnctl, "--version"], capture_output=True, text=True).stdout.strip()
    manifest = {
        "tool": "tools/oracle/run_checks.py",
        "command": sys.argv,
        "started_at": started.isoformat(),
        "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": commit,
        "dirty": None if status is None else bool(status.strip()),
        "machine": {"node": platform.node(), "system": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "lcnctl": {"path": args.lcnctl, "version": version, "sha256": sha256(args.lcnctl)},
        "heldout": {"level": args.heldout, "generated": gen_params, "mutated": MUTATED.get(args.heldout, []),
                    "mutation_seed": 1},
        "inputs": [{"path": f, "sha256": sha256(f), "bytes": os.path.getsize(f)} for f in files],
        "note": "timings are wall-clock on a shared machine; they are recorded, not claimed",
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.out, "results.jsonl"), "w") as f:
        for _, rec in records:
            f.write(json.dumps(rec) + "\n")

    summary = {"files": len(records), "agree": sum(r["agree"] for _, r in records)}
    summary["disagree"] = summary["files"] - summary["agree"]
    for s in ("input", "heldout", "mutated"):
        rs = [r for _, r in records if r["set"] == s]
        summary[s] = {
            "files": len(rs), "agree": sum(r["agree"] for r in rs),
            "valid": sum(r["verdict"] == "valid" for r in rs),
            "invalid": sum(r["verdict"] == "invalid" for r in rs),
            "unreadable": sum(r["verdict"] == "unreadable" for r in rs),
        }
    summary["lcnctl_s_total"] = round(sum(r["lcnctl_s"] for _, r in records), 3)
    summary["oracle_s_total"] = round(sum(r["oracle_s"] for _, r in records), 3)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    for _, r in records:
        name = os.path.relpath(r["file"], args.out) if r["set"] != "input" else r["file"]
        tup = "(%s)" % ", ".join(map(str, r["tuple"])) if r["tuple"] else "-"
        vc = r["violation_counts"]
        vcs = " ".join("%s=%d" % kv for kv in vc.items() if kv[1]) if vc else ""
        print("%-5s %-10s %-48s %-28s %s%s" % (
            "ok" if r["agree"] else "DIFF", r["verdict"], name[-48:], tup, vcs,
            ("  " + "; ".join(r["diffs"])) if r["diffs"] else ""))
    print("%d files, %d agree, %d disagree (inputs %d, held-out %d, mutated %d); results in %s" % (
        summary["files"], summary["agree"], summary["disagree"], summary["input"]["files"],
        summary["heldout"]["files"], summary["mutated"]["files"], args.out))
    return 0 if summary["disagree"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
