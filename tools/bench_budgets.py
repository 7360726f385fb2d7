#!/usr/bin/env python3
"""bench_budgets.py - how soon a job is terminal after its deadline and
after a DELETE, on graphs whose start phase is heavy (issue 14).

For each graph a fresh `lcnd serve` (CPU backend, its defaults otherwise,
a temporary state directory, a loopback port) runs, one at a time:
  deadline: a job with budget B; the figure is finished_at - (started_at
            + B) from the job's status (both stamped by the daemon when it
            starts the run and when the job's state turns terminal);
  delete:   a job with a 600 s budget, DELETE sent D seconds after it
            started running; the figure is finished_at - the client's
            clock when it sent the DELETE (same machine), and the round
            trip the client saw until GET showed a terminal state.
Peak memory is the daemon's VmHWM after the graph's runs (the daemon holds
the parsed graph and the engine's states).

Graphs are generated with `lcnctl gen` (seed 1) into --cache (the large
ones take minutes to generate; reused when present). Python standard
library only; loopback only; every wait is bounded.

usage: tools/bench_budgets.py --out DIR [--lcnd build/bin/lcnd]
           [--lcnctl build/bin/lcnctl] [--cache DIR] [--runs 3]
           [--budgets 1] [--delete-after 0.5,3] [--graphs random:20000,...]
Writes DIR/manifest.json, DIR/runs.jsonl and DIR/summary.md.
"""

import argparse
import datetime
import http.client
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from lcntools import sha256

GRAPHS = "random:20000,random:100000:300000,grid:200000,dense:1000,dense:2000"


def iso_ms(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp() * 1000.0


class Daemon:
    def __init__(self, lcnd):
        self.dir = tempfile.mkdtemp(prefix="lcnd-bench-")
        pf = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen(
            [lcnd, "serve", "--listen", "127.0.0.1:0", "--state-dir", self.dir, "--port-file", pf,
             "--log-file", os.path.join(self.dir, "log"), "--backend", "cpu"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline and not (os.path.exists(pf) and open(pf).read().strip()):
            time.sleep(0.02)
        host, port = open(pf).read().strip().rsplit(":", 1)
        self.host, self.port = host, int(port)

    def req(self, method, path, body=None, timeout=120):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        data = json.dumps(body).encode() if body is not None else None
        c.request(method, path, body=data,
                  headers={"Content-Type": "application/json"} if data else {})
        r = c.getresponse()
        out = r.status, r.read()
        c.close()
        return out

    def status(self, job):
        st, b = self.req("GET", "/jobs/" + job)
        assert st == 200, (st, b[:200])
        return json.loads(b)

    def wait(self, job, states, limit=300):
        deadline = time.time() + limit
        while time.time() < deadline:
            s = self.status(job)
            if s["state"] in states:
                return s
            time.sleep(0.005)
        raise RuntimeError("job %s never reached %s" % (job, states))

    def vmhwm_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return -1

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def submit(d, graph, budget):
    st, b = d.req("POST", "/jobs", {"graph": graph, "budget_s": budget, "seed": 1})
    assert st == 201, (st, b[:300])
    return json.loads(b)["id"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--lcnd", default=os.path.join(here, "build", "bin", "lcnd"))
    ap.add_argument("--lcnctl", default=os.path.join(here, "build", "bin", "lcnctl"))
    ap.add_argument("--cache", default=os.path.join(here, "build", "bench-graphs"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budgets", default="1")
    ap.add_argument("--delete-after", default="0.5,3")
    ap.add_argument("--graphs", default=GRAPHS)
    a = ap.parse_args()
    if os.path.exists(a.out):
        sys.exit("%s exists: results are never overwritten" % a.out)
    os.makedirs(a.out)
    os.makedirs(a.cache, exist_ok=True)
    budgets = [float(x) for x in a.budgets.split(",")]
    dels = [float(x) for x in a.delete_after.split(",")]
    graphs = []
    for spec in a.graphs.split(","):
        p = spec.split(":")
        fam, n = p[0], int(p[1])
        m = int(p[2]) if len(p) > 2 else None
        name = "%s-%d" % (fam, n) + ("-%d" % m if m else "")
        path = os.path.join(a.cache, name + ".json")
        if not os.path.exists(path):
            cmd = [a.lcnctl, "gen", fam, "--nodes", str(n), "--seed", "1", "-o", path]
            if m:
                cmd[4:4] = ["--edges", str(m)]
            subprocess.run(cmd, check=True, capture_output=True)
        graphs.append((name, path))

    commit = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    manifest = {
        "kind": "deadline and DELETE to terminal state, CPU engine (tools/bench_budgets.py)",
        "date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit, "dirty": dirty,
        "machine": {"hostname": socket.gethostname(), "cpu": cpu, "cores_online": os.cpu_count(),
                    "load_at_start": os.getloadavg(), "python": platform.python_version()},
        "lcnd": {"path": a.lcnd, "sha256": sha256(a.lcnd)},
        "command": " ".join(sys.argv),
        "daemon": "lcnd serve --backend cpu (defaults: 1 CPU worker, threads = online cores)",
        "graphs": {name: {"path": os.path.relpath(path, here), "sha256": sha256(path),
                          "generator": "lcnctl gen (seed 1)"} for name, path in graphs},
        "budgets_s": budgets, "delete_after_s": dels, "runs": a.runs, "seed": 1,
    }
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)

    runs = []
    with open(os.path.join(a.out, "runs.jsonl"), "w") as out:
        for name, path in graphs:
            with open(path) as f:
                graph = json.load(f)
            d = Daemon(a.lcnd)
            try:
                for r in range(a.runs):
                    for b in budgets:
                        job = submit(d, graph, b)
                        s = d.wait(job, ("succeeded", "failed", "cancelled", "interrupted"))
                        over = iso_ms(s["finished_at"]) - iso_ms(s["started_at"]) - b * 1000
                        rec = {"graph": name, "case": "deadline", "budget_s": b, "run": r,
                               "ms": round(over, 1), "state": s["state"],
                               "K": (s["best"] or {}).get("K"),
                               "error": (s["error"] or {}).get("code")}
                        runs.append(rec)
                        out.write(json.dumps(rec) + "\n")
                    for after in dels:
                        job = submit(d, graph, 600)
                        s = d.wait(job, ("running",))
                        time.sleep(max(0.0, after - (time.time() * 1000 - iso_ms(s["started_at"])) / 1000))
                        t_del = time.time()
                        st, body = d.req("DELETE", "/jobs/" + job)
                        s = d.wait(job, ("succeeded", "failed", "cancelled", "interrupted"))
                        seen = (time.time() - t_del) * 1000
                        rec = {"graph": name, "case": "delete", "after_s": after, "run": r,
                               "ms": round(iso_ms(s["finished_at"]) - t_del * 1000, 1),
                               "client_ms": round(seen, 1), "delete_status": st,
                               "state": s["state"], "K": (s["best"] or {}).get("K")}
                        runs.append(rec)
                        out.write(json.dumps(rec) + "\n")
                    out.flush()
                mem = d.vmhwm_kb()
            finally:
                d.stop()
            rec = {"graph": name, "case": "memory", "vmhwm_kb": mem}
            runs.append(rec)
            out.write(json.dumps(rec) + "\n")

    lines = ["# Deadline and DELETE to terminal state (CPU engine, %s)" % commit, "",
             "Medians of %d runs, milliseconds; max in brackets. Machine: %s, %d cores. "
             "Command: `%s`." % (a.runs, cpu, os.cpu_count(), " ".join(sys.argv)), "",
             "| graph | n / m | " + " | ".join("deadline, budget %g s" % b for b in budgets) + " | "
             + " | ".join("DELETE %g s in" % x for x in dels) + " | outcome at the deadline | peak memory |",
             "|---|---|" + "---|" * (len(budgets) + len(dels)) + "---|---|"]
    for name, path in graphs:
        g = manifest["graphs"][name]
        with open(path) as f:
            gg = json.load(f)
        cells = []
        for b in budgets:
            v = [x["ms"] for x in runs if x["graph"] == name and x["case"] == "deadline" and x["budget_s"] == b]
            cells.append("%.0f (%.0f)" % (statistics.median(v), max(v)))
        for after in dels:
            v = [x["ms"] for x in runs if x["graph"] == name and x["case"] == "delete" and x["after_s"] == after]
            cells.append("%.0f (%.0f)" % (statistics.median(v), max(v)))
        outc = sorted({"%s%s" % (x["state"], "/" + x["error"] if x.get("error") else "")
                       for x in runs if x["graph"] == name and x["case"] == "deadline"})
        mem = [x["vmhwm_kb"] for x in runs if x["graph"] == name and x["case"] == "memory"][0]
        lines.append("| %s | %d / %d | %s | %s | %.0f MB |" % (
            name, len(gg["nodes"]), len(gg["edges"]), " | ".join(cells), ", ".join(outc), mem / 1024))
        del g
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
