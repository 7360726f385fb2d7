#!/usr/bin/env python3
"""Acceptance benchmark of the shared queue (issue 20): three lcnd on one
PostgreSQL job store.

Run by scripts/bench-cluster.sh under tests/pg/with-postgres.sh (a throwaway
server: LCN_TEST_PG_URL). Three phases, one manifest (--out/manifest.json):

1. chaos - JOBS jobs with budgets drawn uniformly from [MIN, MAX] s on the
   given instances, submitted round-robin through the three daemons (the
   next one when the one in turn is down), at most --outstanding of them
   unfinished at a time (the queue limit counts the whole queue), while
   every --kill-every s one daemon (in turn) is killed with SIGKILL and
   started again at once. Then, for every job acknowledged with 201:
     lost        not found, or not finished, through every daemon;
     overlap     two runs of one job at the same time: every run is an
                 interval on one daemon's log, from "started on" to the line
                 that ends it or to the daemon's SIGKILL; and in the job's
                 own event log, a "running" not preceded by "queued";
     invalid     the solution (through a daemon chosen at random) fails
                 `lcnctl check --instance`, or its K, nK, Phi, C differ;
     unresumed   an "interrupted" event not followed by "queued" and a run
                 to the end, or resumes lower than the interruptions.
2. poll - a long job runs; bench_http_poll puts --pollers keep-alive
   clients on GET /jobs/<id> of each daemon that does not run it, closed
   loop and paced (one request per client every 100 ms), 10 s each.
3. cancel - --cancels times: a job is submitted through one daemon, and
   once running DELETE goes through a daemon that does not run it; the
   time from the DELETE to the runner's log line that ends the run, and to
   the DELETE's answer.

Python 3 standard library only.
"""
import calendar
import http.client
import json
import os
import platform
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from bench_args import daemon_bench_parser

END_RUN = ("succeeded after", "cancelled after", "failed:", "stopped for shutdown",
           "its run stopped", "no longer held")


class Daemon:
    def __init__(self, lcnd, url, name, root, extra):
        self.lcnd, self.url, self.name = lcnd, url, name
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "lcnd.log")
        self.port_file = os.path.join(self.dir, "port")
        self.extra = extra
        self.proc = None
        self.addr = None
        self.kills = []  # wall-clock times of SIGKILL

    def start(self):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        cmd = [self.lcnd, "serve", "--listen", "127.0.0.1:0", "--state-dir", self.dir,
               "--port-file", self.port_file, "--log-file", self.log, "--store-url", self.url,
               "--node-name", self.name] + self.extra
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.dir, "stderr"), "a"))
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("%s exited at start" % self.name)
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    self.addr = f.read().strip()
                if self.addr:
                    return
            time.sleep(0.02)
        raise SystemExit("%s did not start" % self.name)

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.kills.append(time.time())  # the process is gone by now

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)

    def up(self):
        return self.proc is not None and self.proc.poll() is None

    def request(self, method, path, body=None, timeout=30):
        host, port = self.addr.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=timeout)
        try:
            h = {"Content-Type": "application/json"} if body is not None else {}
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers=h)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def log_lines(self):
        with open(self.log) as f:
            return f.read().splitlines()


def wall(line):
    """The wall-clock time of a log line (UTC ISO stamp)."""
    m = re.match(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):([\d.]+)Z", line)
    if not m:
        return None
    y, mo, d, h, mi, s = m.groups()
    return calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), 0)) + float(s)


def any_up(ds, rng):
    up = [d for d in ds if d.up()]
    return rng.choice(up) if up else None


def ask(ds, rng, method, path, tries=200):
    """A request through any live daemon, retried while daemons restart."""
    for _ in range(tries):
        d = any_up(ds, rng)
        try:
            if d:
                st, body = d.request(method, path)
                if st < 500:
                    return st, body, d
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("no daemon answered %s %s" % (method, path))


# ---------------------------------------------------------------- chaos

def chaos(a, ds, graphs, rng):
    jobs = {}  # id -> {graph, budget, via}
    refused = []
    done = threading.Event()

    def killer():
        k = 0
        while not done.wait(a.kill_every):
            d = ds[k % len(ds)]
            k += 1
            d.kill9()
            d.start()

    t = threading.Thread(target=killer)
    t.start()
    t0 = time.time()
    try:
        turn = 0
        names = sorted(graphs)
        for i in range(a.jobs):
            while True:  # at most a.outstanding unfinished
                open_ = [j for j, v in jobs.items() if not v.get("final")]
                for j in open_[:20]:
                    st, body, _ = ask(ds, rng, "GET", "/jobs/" + j)
                    if st == 200 and json.loads(body)["state"] in (
                            "succeeded", "failed", "cancelled", "interrupted"):
                        jobs[j]["final"] = True
                if sum(1 for v in jobs.values() if not v.get("final")) < a.outstanding:
                    break
                time.sleep(0.2)
            g = names[i % len(names)]
            budget = round(rng.uniform(a.budget_min, a.budget_max), 2)
            body = {"graph": graphs[g], "budget_s": budget, "seed": i + 1, "name": g}
            for attempt in range(300):
                d = ds[turn % len(ds)]
                turn += 1
                try:
                    if not d.up():
                        continue
                    st, resp = d.request("POST", "/jobs", body)
                except OSError:
                    continue
                if st == 201:
                    jobs[json.loads(resp)["id"]] = {"graph": g, "budget_s": budget, "via": d.name}
                    break
                refused.append({"status": st, "via": d.name, "t": time.time() - t0})
                time.sleep(0.1)
            else:
                raise SystemExit("job %d could not be submitted" % i)
        deadline = time.time() + a.jobs * a.budget_max + 300
        while time.time() < deadline:
            open_ = [j for j, v in jobs.items() if not v.get("final")]
            if not open_:
                break
            for j in open_:
                st, body, _ = ask(ds, rng, "GET", "/jobs/" + j)
                if st == 200 and json.loads(body)["state"] in (
                        "succeeded", "failed", "cancelled", "interrupted"):
                    jobs[j]["final"] = True
            time.sleep(0.5)
    finally:
        done.set()
        t.join()
    return jobs, refused, time.time() - t0


def runs_of(ds):
    """Every run of every job: job -> [(daemon, start, end)]."""
    runs = {}
    for d in ds:
        open_ = {}
        for line in d.log_lines():
            m = re.search(r"job (j\d+): (.*)", line)
            t = wall(line)
            if not m or t is None:
                continue
            j, what = m.groups()
            if what.startswith("started on"):
                if j in open_:  # a run cut by a SIGKILL, then this daemon's next life
                    s = open_.pop(j)
                    ks = [k for k in d.kills if s <= k <= t]
                    runs.setdefault(j, []).append((d.name, s, min(ks) if ks else float("inf")))
                open_[j] = t
            elif j in open_ and any(what.startswith(e) for e in END_RUN):
                runs.setdefault(j, []).append((d.name, open_.pop(j), t))
        # runs still open at a SIGKILL end there (the process is gone)
        for j, s in open_.items():
            ends = [k for k in d.kills if k >= s]
            runs.setdefault(j, []).append((d.name, s, min(ends) if ends else float("inf")))
    # a run open at a kill ends at the kill even if the log goes on later
    out = {}
    for j, rs in runs.items():
        fixed = []
        for name, s, e in rs:
            d = next(x for x in ds if x.name == name)
            ks = [k for k in d.kills if s <= k < e]
            fixed.append((name, s, min(ks) if ks else e))
        out[j] = sorted(fixed, key=lambda r: r[1])
    return out


def verify(a, ds, jobs, graphs, rng, tmp):
    for d in ds:  # kills are over: every daemon is up
        if not d.up():
            d.start()
    runs = runs_of(ds)
    res = {"lost": [], "overlap": [], "event_order": [], "invalid": [], "unresumed": [],
           "interrupted_jobs": 0, "interruptions": 0, "resumed_ok": 0, "states": {},
           "runs_per_job": {}}
    per_job = []
    for j, v in sorted(jobs.items()):
        st, body, _ = ask(ds, rng, "GET", "/jobs/" + j)
        if st != 200:
            res["lost"].append(j)
            continue
        s = json.loads(body)
        res["states"][s["state"]] = res["states"].get(s["state"], 0) + 1
        if s["state"] not in ("succeeded", "failed", "cancelled", "interrupted"):
            res["lost"].append(j)
        # the job's event log, through any daemon
        events, after = [], 0
        while True:
            st, body, _ = ask(ds, rng, "GET", "/jobs/%s/progress?after=%d" % (j, after))
            p = json.loads(body)
            events += p["events"]
            if not p["events"]:
                break
            after = p["next"]
        states = [e["state"] for e in events if e["type"] == "state"]
        for k, x in enumerate(states):
            if x == "running" and (k == 0 or states[k - 1] != "queued"):
                res["event_order"].append(j)
                break
        inter = states.count("interrupted")
        if inter:
            res["interrupted_jobs"] += 1
            res["interruptions"] += inter
            ok = s["state"] == "succeeded" and s.get("resumes", 0) >= inter and all(
                states[k + 1] == "queued" for k, x in enumerate(states[:-1]) if x == "interrupted")
            res["resumed_ok"] += ok
            if not ok:
                res["unresumed"].append(j)
        rs = runs.get(j, [])
        res["runs_per_job"][str(len(rs))] = res["runs_per_job"].get(str(len(rs)), 0) + 1
        if inter and len(rs) < inter + 1:
            res["unresumed"].append(j)  # the logs show fewer runs than the events say
        for k in range(1, len(rs)):
            if rs[k][1] < rs[k - 1][2]:
                res["overlap"].append({"job": j, "runs": rs[k - 1:k + 1]})
        # the solution, checked by the oracle
        valid = None
        if s["state"] == "succeeded":
            st, body, d = ask(ds, rng, "GET", "/jobs/%s/solution" % j)
            sp = os.path.join(tmp, "sol.json")
            with open(sp, "wb") as f:
                f.write(body)
            p = subprocess.run([a.lcnctl, "check", sp, "--instance", graph_path(a, v["graph"])],
                               capture_output=True, text=True)
            valid = p.returncode == 0
            if valid:
                rep, sol = json.loads(p.stdout), json.loads(body)
                valid = all(rep[k] == sol["lcn"][k] for k in ("K", "nK", "Phi", "C"))
            if not valid:
                res["invalid"].append(j)
        per_job.append({"id": j, "graph": v["graph"], "budget_s": v["budget_s"], "via": v["via"],
                        "state": s["state"], "resumes": s.get("resumes", 0), "K": s.get(
                            "best", {}).get("K") if s.get("best") else None,
                        "runs": [[r[0], round(r[1] - 0, 3), round(r[2], 3)] for r in rs],
                        "valid": valid})
    return res, per_job


def graph_path(a, name):
    return os.path.join(a.instances, name + ".json")


# ---------------------------------------------------------------- poll, cancel

def runner_of(ds, job, timeout=60):
    needle = "job %s: started on" % job
    deadline = time.time() + timeout
    while time.time() < deadline:
        for d in ds:
            if any(needle in l for l in d.log_lines()):
                return d
        time.sleep(0.05)
    raise SystemExit("nobody runs %s" % job)


def wait_state(d, job, state, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st, body = d.request("GET", "/jobs/" + job)
        if st == 200 and json.loads(body)["state"] == state:
            return
        time.sleep(0.02)
    raise SystemExit("%s never %s" % (job, state))


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def poll_phase(a, ds, graphs, tmp):
    g = sorted(graphs)[-1]
    st, body = ds[0].request("POST", "/jobs", {"graph": graphs[g], "budget_s": 60, "seed": 7})
    job = json.loads(body)["id"]
    r = runner_of(ds, job)
    out = []
    for d in ds:
        if d is r:
            continue
        wait_state(d, job, "running")
        for mode, interval in (("closed_loop", 0), ("paced_100ms", 100)):
            samples = os.path.join(tmp, "poll-%s-%s.txt" % (d.name, mode))
            cmd = [a.poller, "--addr", d.addr, "--path", "/jobs/" + job, "--clients",
                   str(a.pollers), "--seconds", "10", "--warmup", "1", "--interval-ms",
                   str(interval), "--samples", samples]
            p = subprocess.run(cmd, capture_output=True, text=True)
            res = json.loads(p.stdout)
            with open(samples) as f:
                us = [float(x) for x in f if x.strip()]
            out.append({"daemon": d.name, "runner": r.name, "mode": mode, "pollers": a.pollers,
                        "requests": len(us), "p50_ms": percentile(us, 0.5) / 1000,
                        "p99_ms": percentile(us, 0.99) / 1000, "max_ms": max(us) / 1000,
                        "errors": res.get("errors", 0), "command": " ".join(cmd)})
    ds[0].request("DELETE", "/jobs/" + job)
    return out


def cancel_phase(a, ds, graphs, rng):
    g = sorted(graphs)[0]
    out = []
    for i in range(a.cancels):
        via = ds[i % len(ds)]
        st, body = via.request("POST", "/jobs", {"graph": graphs[g], "budget_s": 60, "seed": 100 + i})
        job = json.loads(body)["id"]
        r = runner_of(ds, job)
        wait_state(r, job, "running")
        time.sleep(0.5 + rng.random())
        other = [d for d in ds if d is not r][i % 2]
        t0 = time.time()
        st, body = other.request("DELETE", "/jobs/" + job)
        answered = time.time() - t0
        needle = "job %s: cancelled after" % job
        ended = None
        deadline = time.time() + 30
        while ended is None and time.time() < deadline:
            for l in r.log_lines():
                if needle in l:
                    ended = wall(l) - t0
            time.sleep(0.02)
        out.append({"job": job, "runner": r.name, "delete_via": other.name, "status": st,
                    "state": json.loads(body).get("state"), "answer_s": round(answered, 4),
                    "run_ended_s": round(ended, 4) if ended is not None else None})
    return out


# ---------------------------------------------------------------- main

def main():
    ap = daemon_bench_parser(__doc__, note=True)
    ap.add_argument("--instances", required=True)
    ap.add_argument("--graphs", default="Automatic-1,Automatic-2,Automatic-3")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--budget-min", type=float, default=2)
    ap.add_argument("--budget-max", type=float, default=5)
    ap.add_argument("--kill-every", type=float, default=10)
    ap.add_argument("--outstanding", type=int, default=40)
    ap.add_argument("--lease-s", type=float, default=5)
    ap.add_argument("--cancels", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    url = os.environ["LCN_TEST_PG_URL"]
    rng = random.Random(a.seed)
    graphs = {}
    for g in a.graphs.split(","):
        with open(graph_path(a, g)) as f:
            graphs[g] = json.load(f)
    extra = ["--backend", "cpu", "--cpu-workers", "1", "--cpu-threads", "1", "--lease-s",
             str(a.lease_s), "--checkpoint-interval-s", "1", "--max-queued", "1000"]
    tmp = tempfile.mkdtemp(prefix="bench-cluster-")
    ds = [Daemon(a.lcnd, url, "n%d" % i, tmp, extra) for i in range(3)]
    for d in ds:
        d.start()
    manifest = {
        "bench": "shared queue, three lcnd on one PostgreSQL (issue 20)",
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                 text=True).stdout.strip(),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "cpu": platform.processor() or platform.machine(), "note": a.note},
        "command": " ".join(sys.argv),
        "daemon_args": extra + ["--queue-poll-ms", "200 (default)"],
        "inputs": {g: {"path": graph_path(a, g), "nodes": len(graphs[g]["nodes"]),
                       "edges": len(graphs[g]["edges"])} for g in graphs},
        "seeds": {"bench": a.seed, "jobs": "job i (0-based) has seed i + 1"},
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        jobs, refused, chaos_s = chaos(a, ds, graphs, rng)
        kills = {d.name: len(d.kills) for d in ds}
        res, per_job = verify(a, ds, jobs, graphs, rng, tmp)
        poll = poll_phase(a, ds, graphs, tmp)
        cancel = cancel_phase(a, ds, graphs, rng)
    finally:
        for d in ds:
            d.stop()
    manifest["chaos"] = {"jobs_acknowledged": len(jobs), "seconds": round(chaos_s, 1),
                         "kills": kills, "kill_times": {d.name: d.kills for d in ds},
                         "refused_posts": refused, **res}
    manifest["poll"] = poll
    manifest["cancel"] = cancel
    manifest["jobs"] = per_job
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    ends = [c["run_ended_s"] for c in cancel if c["run_ended_s"] is not None]
    lines = [
        "chaos: %d jobs acknowledged, %.0f s, SIGKILLs %s" % (len(jobs), chaos_s, kills),
        "  final states %s" % res["states"],
        "  lost %d, two runs at once (daemon logs) %d, running without queued before (event "
        "logs) %d, invalid solutions %d" % (len(res["lost"]), len(res["overlap"]),
                                            len(res["event_order"]), len(res["invalid"])),
        "  interrupted jobs %d (%d interruptions), resumed to the end %d, not resumed %d" % (
            res["interrupted_jobs"], res["interruptions"], res["resumed_ok"], len(res["unresumed"])),
        "  runs per job (daemon logs) %s" % res["runs_per_job"],
        "  POSTs refused while a daemon restarted: %d (retried through the next daemon)" % len(refused),
    ]
    for p in poll:
        lines.append("poll: %s through %s (runner %s), %d pollers, %d requests: p50 %.2f ms, "
                     "p99 %.2f ms, max %.2f ms, errors %d" % (
                         p["mode"], p["daemon"], p["runner"], p["pollers"], p["requests"],
                         p["p50_ms"], p["p99_ms"], p["max_ms"], p["errors"]))
    lines.append("cancel through another daemon (%d): run ended after median %.3f s, max %.3f s; "
                 "DELETE answered after median %.3f s, max %.3f s" % (
                     len(cancel), percentile(ends, 0.5), max(ends),
                     percentile([c["answer_s"] for c in cancel], 0.5),
                     max(c["answer_s"] for c in cancel)))
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print("daemon logs: " + tmp)


if __name__ == "__main__":
    main()
