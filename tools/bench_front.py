#!/usr/bin/env python3
"""Load test of three lcnd on one PostgreSQL job store through one
round-robin front (issue 20, deployment): what a client sees through an
ordinary load balancer (a Kubernetes Service) with no affinity.

The front is a TCP proxy in this script: each new client connection goes
to the next daemon in turn (kube-proxy's behaviour for a Service, without
its randomness), so a client's connections land on different daemons.
Run under tests/pg/with-postgres.sh (LCN_TEST_PG_URL). Two phases:

1. submit - --jobs `lcnctl submit GRAPH --wait --json` clients, --parallel at
   a time, all through the front: each submits, follows its job (SSE or
   polls, new connections: other daemons) and prints the final status; then
   `lcnctl solution` and `lcnctl check` through the front, one connection
   per request. Counts failures of any step.
2. poll - bench_http_poll with --pollers keep-alive clients on GET
   /jobs/<id> through the front (spread over the three daemons by the
   round robin) while a job runs, closed loop, 10 s.

Writes --out (JSON) and prints a summary. Python 3 standard library only.
"""
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_args import daemon_bench_parser  # noqa: E402
from bench_cluster import Daemon, percentile  # noqa: E402


class Front:
    """A round-robin TCP proxy on 127.0.0.1 (one backend per connection)."""

    def __init__(self, backends):
        self.backends = backends
        self.turn = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.per_backend = [0] * len(backends)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            c, _ = self.sock.accept()
            with self.lock:
                k = self.turn % len(self.backends)
                self.turn += 1
                self.per_backend[k] += 1
            host, port = self.backends[k]().rsplit(":", 1)
            try:
                b = socket.create_connection((host, int(port)))
            except OSError:
                c.close()
                continue
            for x in (c, b):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.pipe, args=(c, b), daemon=True).start()
            threading.Thread(target=self.pipe, args=(b, c), daemon=True).start()

    @staticmethod
    def pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def one_job(a, front, graph_file, i, tmp):
    server = "http://" + front.addr
    t0 = time.time()
    p = subprocess.run([a.lcnctl, "submit", graph_file, "--budget-s", str(a.budget_s),
                        "--seed", str(i + 1), "--wait", "--json", "--server", server],
                       capture_output=True, text=True)
    out = {"i": i, "submit_rc": p.returncode, "seconds": round(time.time() - t0, 3)}
    if p.returncode != 0:
        out["error"] = (p.stderr[-400:] + " | " + p.stdout[:300]).strip()
        return out
    st = json.loads(p.stdout)
    out.update(id=st["id"], state=st["state"])
    sol = os.path.join(tmp, "sol-%d.json" % i)
    p = subprocess.run([a.lcnctl, "solution", st["id"], "-o", sol, "--server", server],
                       capture_output=True, text=True)
    out["solution_rc"] = p.returncode
    if p.returncode == 0:
        p = subprocess.run([a.lcnctl, "check", sol, "--instance", graph_file],
                           capture_output=True, text=True)
        out["check_rc"] = p.returncode
    return out


def main():
    ap = daemon_bench_parser(__doc__)
    ap.add_argument("--graph", required=True)
    ap.add_argument("--jobs", type=int, default=30)
    ap.add_argument("--parallel", type=int, default=6)
    ap.add_argument("--budget-s", type=float, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-front-")
    extra = ["--backend", "cpu", "--cpu-workers", "1", "--cpu-threads", "1",
             "--max-queued", "1000"]
    ds = [Daemon(a.lcnd, os.environ["LCN_TEST_PG_URL"], "n%d" % i, tmp, extra) for i in range(3)]
    for d in ds:
        d.start()
    front = Front([lambda d=d: d.addr for d in ds])
    res = {"bench": "three lcnd on one PostgreSQL through a round-robin TCP front",
           "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                    text=True).stdout.strip(),
           "machine": {"host": platform.node(), "cpus": os.cpu_count()},
           "command": " ".join(sys.argv), "daemon_args": extra,
           "inputs": {"graph": a.graph}, "seeds": "job i (0-based) has seed i + 1"}
    try:
        t0 = time.time()
        with ThreadPoolExecutor(a.parallel) as ex:
            jobs = list(ex.map(lambda i: one_job(a, front, a.graph, i, tmp), range(a.jobs)))
        res["submit"] = {"seconds": round(time.time() - t0, 1), "jobs": jobs,
                         "connections_per_daemon": list(front.per_backend)}
        # a job that runs while 50 pollers ask through the front
        with open(a.graph) as f:
            g = json.load(f)
        st, body = ds[0].request("POST", "/jobs", {"graph": g, "budget_s": 30, "seed": 99})
        job = json.loads(body)["id"]
        time.sleep(1)
        samples = os.path.join(tmp, "poll.txt")
        cmd = [a.poller, "--addr", front.addr, "--path", "/jobs/" + job, "--clients",
               str(a.pollers), "--seconds", "10", "--warmup", "1", "--samples", samples]
        p = subprocess.run(cmd, capture_output=True, text=True)
        with open(samples) as f:
            us = [float(x) for x in f if x.strip()]
        res["poll"] = {"command": " ".join(cmd), "pollers": a.pollers, "requests": len(us),
                       "p50_ms": percentile(us, 0.5) / 1000, "p99_ms": percentile(us, 0.99) / 1000,
                       "max_ms": max(us) / 1000, "result": json.loads(p.stdout)}
        ds[1].request("DELETE", "/jobs/" + job)
    finally:
        for d in ds:
            d.stop()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    ok = [j for j in res["submit"]["jobs"] if j.get("submit_rc") == 0 and j.get(
        "state") == "succeeded" and j.get("solution_rc") == 0 and j.get("check_rc") == 0]
    print("front: %d of %d jobs submitted, followed, fetched and checked through the front "
          "(%.0f s; connections per daemon %s)" % (len(ok), a.jobs, res["submit"]["seconds"],
                                                   res["submit"]["connections_per_daemon"]))
    p = res["poll"]
    print("front poll: %d pollers, %d requests: p50 %.2f ms, p99 %.2f ms, max %.2f ms" % (
        p["pollers"], p["requests"], p["p50_ms"], p["p99_ms"], p["max_ms"]))


if __name__ == "__main__":
    main()
