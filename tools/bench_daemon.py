#!/usr/bin/env python3
"""bench_daemon.py - the lcnd service benchmark (run it through
scripts/bench-daemon.sh).

Two measurements, each on a fresh `lcnd serve` (loopback, temporary state
directory, CPU backend, embedded defaults otherwise: store_sync=full):

1. GET /jobs/<id> latency with many concurrent pollers, measured by
   bench_http_poll (C, one keep-alive connection per poller, every request
   timed from first byte sent to last byte received):
     idle    - closed loop, no job running (baseline);
     busy    - closed loop (each poller sends as soon as it has its answer),
               while one job runs on the CPU engine with every core;
     paced   - each poller sends every --interval-ms, while the job runs.
   The job must still be running when each measurement ends (checked).
2. Time from POST /jobs to the engine starting, on an idle daemon:
   start_latency_s from the job status (the daemon measures it with its
   monotonic clock, from the arrival of the request to the engine call:
   parsing, the durable insert, scheduling, the durable "running" event is
   not waited for), and the client's POST -> 201 time. Jobs are submitted
   one at a time, each after the previous one finished.

Everything goes to --out: results.json (manifest + results), the latency
samples of each phase (one microsecond value per line), and summary.txt.
"""

import http.client
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from bench_args import daemon_bench_parser
from lcntools import sha256


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout
    except Exception as e:  # noqa: BLE001 - recorded as is
        return "error: %r" % e


def machine():
    return {
        "uname": " ".join(platform.uname()),
        "nproc": os.cpu_count(),
        "cpu_model": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
        "mem": sh("grep MemTotal /proc/meminfo").strip(),
        "loadavg": open("/proc/loadavg").read().strip(),
        "busiest": sh("ps -eo pcpu,comm --sort=-pcpu | head -8").splitlines(),
    }


class Daemon:
    def __init__(self, lcnd, args):
        self.dir = tempfile.mkdtemp(prefix="lcnd-bench-")
        self.port_file = os.path.join(self.dir, "port")
        self.cmd = [lcnd, "serve", "--listen", "127.0.0.1:0", "--state-dir", self.dir + "/state",
                    "--port-file", self.port_file, "--log-file", self.dir + "/lcnd.log"] + args
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while not os.path.exists(self.port_file):
            if time.time() > deadline or self.proc.poll() is not None:
                raise SystemExit("lcnd did not start: " + " ".join(self.cmd))
            time.sleep(0.01)
        self.addr = open(self.port_file).read().strip()
        host, port = self.addr.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)

    def req(self, method, path, body=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        self.conn.request(method, path, body=body, headers=h)
        r = self.conn.getresponse()
        return r.status, r.read()

    def status(self, job):
        st, b = self.req("GET", "/jobs/" + job)
        assert st == 200, (st, b)
        return json.loads(b)

    def stop(self):
        self.conn.close()
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


def gen(lcnctl, family, nodes, seed, out):
    subprocess.run([lcnctl, "gen", family, "--nodes", str(nodes), "--seed", str(seed), "-o", out],
                   check=True, capture_output=True)
    return out


def histogram(path):
    """Latency histogram of a samples file: 20 log-spaced buckets per decade
    of microseconds, as [upper bound us, count] pairs (empty buckets left out),
    so results.json keeps the distribution without every sample."""
    import math
    counts = {}
    with open(path) as f:
        for line in f:
            v = float(line)
            k = math.ceil(20 * math.log10(max(v, 1.0)))
            counts[k] = counts.get(k, 0) + 1
    return [[round(10 ** (k / 20), 1), counts[k]] for k in sorted(counts)]


def poll(poller, addr, path, clients, seconds, interval_ms, samples):
    cmd = [poller, "--addr", addr, "--path", path, "--clients", str(clients),
           "--seconds", str(seconds), "--warmup", "1", "--interval-ms", str(interval_ms),
           "--samples", samples]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit("bench_http_poll failed: " + p.stderr)
    res = json.loads(p.stdout)
    res["command"] = " ".join(cmd)
    res["histogram_us"] = histogram(samples)
    return res


def main():
    ap = daemon_bench_parser(__doc__, note=True)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--interval-ms", type=float, default=20)
    ap.add_argument("--starts", type=int, default=30)
    ap.add_argument("--busy-nodes", type=int, default=2000)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = sh("git -C '%s' rev-parse HEAD" % src).strip() or "unknown"
    dirty = bool(sh("git -C '%s' status --porcelain --untracked-files=no" % src).strip())
    manifest = {
        "tool": "tools/bench_daemon.py",
        "command": " ".join([sys.executable] + sys.argv),
        "commit": commit,
        "dirty": dirty,
        "note": a.note,
        "binaries": {b: {"path": p, "sha256": sha256(p)}
                     for b, p in (("lcnd", a.lcnd), ("bench_http_poll", a.poller))},
        "machine_before": machine(),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    inputs = {}
    results = {}
    work = tempfile.mkdtemp(prefix="lcnd-bench-in-")
    try:
        busy_graph = gen(a.lcnctl, "grid", a.busy_nodes, 1, os.path.join(work, "busy.json"))
        small_graph = os.path.join(src, "samples", "planted-60.json")
        large_graph = busy_graph
        for name, path, how in (("busy", busy_graph, "lcnctl gen grid --nodes %d --seed 1" % a.busy_nodes),
                                ("start_small", small_graph, "samples/planted-60.json"),
                                ("start_large", large_graph, "lcnctl gen grid --nodes %d --seed 1" % a.busy_nodes)):
            g = json.load(open(path))
            inputs[name] = {"how": how, "sha256": sha256(path), "n": len(g["nodes"]),
                            "m": len(g["edges"]), "bytes": os.path.getsize(path)}

        # 1. polling latency
        daemon_args = ["--backend", "cpu", "--max-connections", "512"]
        d = Daemon(a.lcnd, daemon_args)
        try:
            st, b = d.req("POST", "/jobs", json.dumps({"graph": json.load(open(small_graph)),
                                                        "budget_s": 0.1}))
            idle_job = json.loads(b)["id"]
            while d.status(idle_job)["state"] not in ("succeeded", "failed"):
                time.sleep(0.05)
            results["poll_idle"] = poll(a.poller, d.addr, "/jobs/" + idle_job, a.pollers,
                                        a.seconds, 0, os.path.join(a.out, "poll_idle.txt"))
            budget = 2 * (a.seconds + 1) + 10
            body = json.dumps({"graph": json.load(open(busy_graph)), "budget_s": budget,
                               "seed": 1})
            st, b = d.req("POST", "/jobs", body)
            assert st == 201, b
            job = json.loads(b)["id"]
            while d.status(job)["state"] != "running":
                time.sleep(0.02)
            time.sleep(1.0)  # past the start layouts, into the annealing
            for name, interval in (("poll_busy", 0), ("poll_paced", a.interval_ms)):
                results[name] = poll(a.poller, d.addr, "/jobs/" + job, a.pollers, a.seconds,
                                     interval, os.path.join(a.out, name + ".txt"))
                s = d.status(job)
                results[name]["job_state_after"] = s["state"]
                results[name]["job_telemetry_after"] = s["telemetry"]
                if s["state"] != "running":
                    raise SystemExit("the job ended during the measurement; raise its budget")
            d.req("DELETE", "/jobs/" + job)
            results["daemon_args"] = daemon_args
            results["busy_job"] = {"budget_s": budget, "threads": "cpu_threads=0: all online cores"}
        finally:
            results["daemon_exit"] = d.stop()

        # 2. POST -> engine start on an idle daemon
        for name, path in (("start_small", small_graph), ("start_large", large_graph)):
            d = Daemon(a.lcnd, ["--backend", "cpu"])
            try:
                g = json.load(open(path))
                body = json.dumps({"graph": g, "budget_s": 0.05, "seed": 1})
                server, client = [], []
                for i in range(a.starts):
                    t0 = time.perf_counter()
                    st, b = d.req("POST", "/jobs", body)
                    t1 = time.perf_counter()
                    assert st == 201, b
                    job = json.loads(b)["id"]
                    while True:
                        s = d.status(job)
                        if s["state"] in ("succeeded", "failed", "cancelled"):
                            break
                        time.sleep(0.01)
                    assert s["state"] == "succeeded", s
                    server.append(s["start_latency_s"] * 1e3)
                    client.append((t1 - t0) * 1e3)
                with open(os.path.join(a.out, name + ".txt"), "w") as f:
                    f.write("# start_latency_ms post_to_201_ms\n")
                    for x, y in zip(server, client):
                        f.write("%.3f %.3f\n" % (x, y))

                def summ(v):
                    v = sorted(v)
                    return {"median": statistics.median(v), "p90": v[int(0.9 * (len(v) - 1))],
                            "max": v[-1], "min": v[0]}
                results[name] = {"runs": a.starts, "body_bytes": len(body),
                                 "start_latency_ms": summ(server), "post_to_201_ms": summ(client)}
            finally:
                results[name]["daemon_exit"] = d.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    manifest["machine_after"] = machine()
    manifest["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    manifest["inputs"] = inputs
    out = {"manifest": manifest, "results": results}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(out, f, indent=2)
    lines = ["lcnd service benchmark, commit %s%s" % (commit[:12], " (dirty)" if dirty else ""),
             "load before %s, after %s" % (manifest["machine_before"]["loadavg"],
                                           manifest["machine_after"]["loadavg"]),
             "",
             "GET /jobs/<id>, %d pollers, %g s each phase (microseconds):" % (a.pollers, a.seconds),
             "phase       req/s     p50      p90      p99     p99.9     max  errors"]
    for name in ("poll_idle", "poll_busy", "poll_paced"):
        r = results[name]
        l = r["latency_us"]
        lines.append("%-10s %7.0f %8.1f %8.1f %8.1f %8.1f %8.1f  %d" % (
            name[5:], r["requests_per_s"], l["p50"], l["p90"], l["p99"], l["p999"], l["max"],
            r["errors"] + r["non_200"]))
    lines += ["", "POST /jobs -> engine start on an idle daemon (milliseconds, %d runs):" % a.starts,
              "graph          start median   p90    max | POST->201 median   p90    max"]
    for name in ("start_small", "start_large"):
        r = results[name]
        s, c = r["start_latency_ms"], r["post_to_201_ms"]
        lines.append("%-12s %8.2f %8.2f %7.2f | %10.2f %8.2f %7.2f" % (
            "%d nodes" % inputs[name]["n"], s["median"], s["p90"], s["max"], c["median"],
            c["p90"], c["max"]))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
