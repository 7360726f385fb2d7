#!/usr/bin/env python3
"""bench_connections.py - lcnd's HTTP layer under connection abuse (issue 14).

Starts a real `lcnd serve` (CPU backend, temporary state directory, a free
loopback port, embedded defaults otherwise: max_connections 256,
max_connections_per_ip 128, header_timeout_s 10, connection_reserve 16)
and measures the latency
of ordinary requests while clients misbehave. A poller (its own process, so
that the attackers' Python threads cannot delay it) opens a new connection
from 127.0.0.1 every --interval-ms and sends GET /healthz or GET /jobs in
turn; each request is timed from connect() to the last byte of the answer,
with a --timeout-s limit (a timeout counts as an error and as that many
seconds of latency). Phases, in order:

  baseline         nothing else;
  idle             --idle TCP connections from 127.0.0.2, opened and held
                   --hold-s, then closed, --rounds times (one client far
                   over max_connections; the per-address limit keeps it to
                   its share);
  slowloris        2 x max_connections connections from 127.0.0.2, each
                   sending one more header byte every --every-s and reopened
                   when the daemon closes it, for --slowloris-s;
  after            nothing else again;
  idle_spread      as idle, spread over --spread addresses (127.0.0.2 ..),
                   so that max_connections is reached every round;
  slowloris_spread as slowloris, spread over --spread addresses;
  recovery         the first --recovery-s after it (connections the
                   slowloris left behind are being closed);
  final            nothing else.

The target (p99 < --target-ms, no error) applies to every phase. In the
spread phases clients from enough addresses could hold every connection
slot whatever the per-address limit, and new connections would wait in the
listen backlog (until the idle ones close, or the header timeout closes the
slow ones); the daemon keeps connection_reserve slots free by closing the
connections that have waited longest for a request header (eviction), so
the poller's connection is accepted and its request read at once.

Only loopback addresses are used; every loop is bounded in count and time.
Python 3 standard library only. Writes to --out: results.json (manifest:
commit, machine, command, parameters, lcnd binary and effective limits;
per-phase statistics; per-round counts), samples.csv (every poller
request), summary.md, lcnd.log (the daemon's log, its last 100 kB).
"""

import argparse
import errno
import http.client
import json
import multiprocessing
import os
import platform
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from lcntools import sha256

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGET_PHASES = ("baseline", "idle", "slowloris", "after", "idle_spread", "slowloris_spread",
                 "recovery", "final")


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30,
                              cwd=ROOT).stdout.strip()
    except Exception as e:  # noqa: BLE001 - recorded as is
        return "error: %r" % e


def machine():
    return {
        "hostname": socket.gethostname(),
        "uname": " ".join(platform.uname()),
        "nproc": os.cpu_count(),
        "cpu_model": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
        "mem": sh("grep MemTotal /proc/meminfo"),
        "loadavg": open("/proc/loadavg").read().strip(),
        "somaxconn": sh("cat /proc/sys/net/core/somaxconn"),
        "python": sys.version.split()[0],
    }


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        soft = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


# ------------------------------------------------------------------ daemon

class Daemon:
    def __init__(self, lcnd, extra):
        self.dir = tempfile.mkdtemp(prefix="lcnd-bench-conn-")
        self.port_file = os.path.join(self.dir, "port")
        self.log = os.path.join(self.dir, "lcnd.log")
        self.cmd = [lcnd, "serve", "--listen", "127.0.0.1:0", "--state-dir",
                    os.path.join(self.dir, "state"), "--port-file", self.port_file,
                    "--log-file", self.log, "--backend", "cpu"] + extra
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while not (os.path.exists(self.port_file) and open(self.port_file).read().strip()):
            if time.time() > deadline or self.proc.poll() is not None:
                raise SystemExit("lcnd did not start: " + " ".join(self.cmd))
            time.sleep(0.01)
        host, port = open(self.port_file).read().strip().rsplit(":", 1)
        self.host, self.port = host, int(port)

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            h = {"Content-Type": "application/json"} if body else {}
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def effective_config(lcnd, extra):
    out = subprocess.run([lcnd, "serve", "--print-config"] + extra, capture_output=True,
                         text=True, timeout=30).stdout
    cfg = {}
    for line in out.splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            cfg[k.strip()] = v.strip()
    return cfg


# ------------------------------------------------------------------ poller

def poller(host, port, interval, timeout, stop_at, out_path):
    """Runs in its own process until stop_at (time.time()); one line per
    request: t, path, ms, outcome."""
    paths = ("/healthz", "/jobs")
    i = 0
    with open(out_path, "w") as out:
        nxt = time.time()
        while time.time() < stop_at:
            path = paths[i % 2]
            i += 1
            t0 = time.time()
            outcome = "ok"
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(timeout)
                s.bind(("127.0.0.1", 0))
                s.connect((host, port))
                s.sendall(b"GET %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n" %
                          path.encode())
                data = b""
                while True:
                    left = timeout - (time.time() - t0)
                    if left <= 0:
                        raise socket.timeout()
                    s.settimeout(left)
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                s.close()
                if not data.startswith(b"HTTP/1.1 200 "):
                    outcome = "status:" + data[:12].decode("latin-1", "replace").split(" ")[-1]
            except socket.timeout:
                outcome = "timeout"
            except OSError as e:
                outcome = "error:" + (errno.errorcode.get(e.errno, str(e.errno))
                                      if e.errno else type(e).__name__)
            ms = (time.time() - t0) * 1000.0
            if outcome == "timeout":
                ms = max(ms, timeout * 1000.0)
            out.write("%.4f,%s,%.3f,%s\n" % (t0, path, ms, outcome))
            out.flush()
            nxt += interval
            pause = nxt - time.time()
            if pause > 0:
                time.sleep(pause)
            else:
                nxt = time.time()


# ------------------------------------------------------------------ clients

def nb_connect(host, port, src):
    """A non-blocking connect from loopback address src; None if the
    socket cannot even be made."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        s.bind((src, 0))
        s.setblocking(False)
        s.connect_ex((host, port))
        return s
    except OSError:
        s.close()
        return None


def state(s):
    """'connecting', 'open' or 'closed' (by the server, or refused)."""
    try:
        s.getpeername()
    except OSError as e:
        if e.errno == errno.ENOTCONN:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            return "closed" if err else "connecting"
        return "closed"
    try:
        data = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        return "closed" if data == b"" else "open"
    except BlockingIOError:
        return "open"
    except OSError:
        return "closed"


def addresses(n):
    return ["127.0.0.%d" % (2 + i) for i in range(n)]


def idle_rounds(d, n, rounds, hold, srcs, deadline):
    """n idle connections over srcs, held `hold` s, then closed; per round
    how many were open (held by the daemon or waiting in its backlog) and
    how many the daemon had closed at the end of the hold."""
    out = []
    for r in range(rounds):
        if time.time() > deadline:
            break
        t0 = time.time()
        socks = [nb_connect(d.host, d.port, srcs[i % len(srcs)]) for i in range(n)]
        made = sum(1 for s in socks if s is not None)
        time.sleep(hold)
        states = [state(s) for s in socks if s is not None]
        for s in socks:
            if s is not None:
                s.close()
        out.append({"round": r, "made": made, "open": states.count("open"),
                    "closed_by_daemon": states.count("closed"),
                    "connecting": states.count("connecting"),
                    "seconds": round(time.time() - t0, 3)})
        time.sleep(0.2)
    return out


def slowloris(d, n, srcs, every, duration):
    """n connections over srcs, each sending one more header byte every
    `every` s and reopened when closed, for `duration` s. Returns counts."""
    socks = [None] * n
    sent = [False] * n
    opened = reopened = bytes_sent = 0
    held = []
    end = time.time() + duration
    while time.time() < end:
        t0 = time.time()
        open_now = 0
        for i in range(n):
            s = socks[i]
            st = state(s) if s is not None else "closed"
            if st == "closed":
                if s is not None:
                    s.close()
                    reopened += 1
                socks[i] = nb_connect(d.host, d.port, srcs[i % len(srcs)])
                sent[i] = False
                opened += 1
                continue
            if st == "connecting":
                continue
            open_now += 1
            try:
                s.send(b"X" if sent[i] else b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-")
                sent[i] = True
                bytes_sent += 1
            except OSError:
                pass  # found closed on the next pass
        held.append(open_now)
        time.sleep(max(0.0, every - (time.time() - t0)))
    for s in socks:
        if s is not None:
            s.close()
    return {"connections": n, "addresses": srcs, "opened": opened,
            "reopened_after_close": reopened, "header_bytes_sent": bytes_sent,
            "open_per_pass": held}


# ------------------------------------------------------------------ stats

def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return round(v[k], 2)


def stats(samples):
    ms = [s["ms"] for s in samples]
    return {"requests": len(samples),
            "errors": sum(1 for s in samples if s["outcome"] != "ok"),
            "outcomes": sorted({s["outcome"] for s in samples}),
            "p50_ms": pct(ms, 50), "p90_ms": pct(ms, 90), "p99_ms": pct(ms, 99),
            "max_ms": round(max(ms), 2) if ms else None}


def phase_wait(seconds):
    time.sleep(seconds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lcnd", default=os.path.join(ROOT, "build", "bin", "lcnd"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--idle", type=int, default=1000, help="idle connections per round")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--hold-s", type=float, default=1.0)
    ap.add_argument("--every-s", type=float, default=3.0, help="slowloris: s between bytes")
    ap.add_argument("--slowloris-s", type=float, default=30.0)
    ap.add_argument("--spread", type=int, default=8, help="addresses of the spread phases")
    ap.add_argument("--quiet-s", type=float, default=10.0, help="baseline and after phases")
    ap.add_argument("--recovery-s", type=float, default=3.0)
    ap.add_argument("--interval-ms", type=float, default=40.0)
    ap.add_argument("--timeout-s", type=float, default=5.0)
    ap.add_argument("--target-ms", type=float, default=50.0)
    ap.add_argument("--no-spread", action="store_true", help="skip the two spread phases")
    ap.add_argument("lcnd_args", nargs="*", help="extra lcnd serve flags (after --)")
    a = ap.parse_args()
    if not os.access(a.lcnd, os.X_OK):
        raise SystemExit("no lcnd at %s (--lcnd)" % a.lcnd)
    os.makedirs(a.out, exist_ok=True)
    cfg = effective_config(a.lcnd, a.lcnd_args)
    limit = int(cfg.get("max_connections", "256"))
    nofile = raise_nofile(a.idle + 2 * limit + 256)
    started = time.time()
    manifest = {
        "tool": "tools/bench_connections.py",
        "commit": sh("git rev-parse HEAD"),
        "dirty": bool(sh("git status --porcelain --untracked-files=no")),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "command": " ".join([sys.executable] + sys.argv),
        "parameters": {k: v for k, v in vars(a).items() if k != "out"},
        "machine": machine(),
        "client_nofile": list(nofile),
        "lcnd": {"path": a.lcnd, "sha256": sha256(a.lcnd),
                 "limits": {k: cfg.get(k) for k in ("max_connections", "max_connections_per_ip",
                                                    "header_timeout_s", "connection_timeout_s",
                                                    "connection_reserve")}},
    }
    d = Daemon(a.lcnd, a.lcnd_args)
    samples_raw = os.path.join(d.dir, "samples.raw")
    phases, rounds = [], {}
    try:
        # a few finished jobs, so that GET /jobs lists something
        tiny = json.dumps({"graph": {"nodes": [{"id": 0, "x": 0, "y": 0},
                                               {"id": 1, "x": 4, "y": 4}],
                                     "edges": [{"source": 0, "target": 1}],
                                     "width": 8, "height": 8}, "budget_s": 0.05})
        for _ in range(5):
            d.request("POST", "/jobs", tiny)
        # the poller lives for the whole run, bounded by the longest it can take
        plan_s = (4 * a.quiet_s + 2 * (a.rounds * (a.hold_s + 3.0)) + 2 * a.slowloris_s + 60)
        p = multiprocessing.Process(target=poller, args=(
            d.host, d.port, a.interval_ms / 1000.0, a.timeout_s, time.time() + plan_s,
            samples_raw))
        p.start()

        def phase(name, fn, *args):
            t0 = time.time()
            res = fn(*args)
            phases.append({"name": name, "start": t0, "end": time.time()})
            if res is not None:
                rounds[name] = res

        round_deadline = a.rounds * (a.hold_s + 10.0)
        phase("baseline", phase_wait, a.quiet_s)
        phase("idle", idle_rounds, d, a.idle, a.rounds, a.hold_s, addresses(1),
              time.time() + round_deadline)
        phase("slowloris", slowloris, d, 2 * limit, addresses(1), a.every_s, a.slowloris_s)
        phase("after", phase_wait, a.quiet_s)
        if not a.no_spread:
            phase("idle_spread", idle_rounds, d, a.idle, a.rounds, a.hold_s,
                  addresses(a.spread), time.time() + round_deadline)
            phase("slowloris_spread", slowloris, d, 2 * limit, addresses(a.spread), a.every_s,
                  a.slowloris_s)
            phase("recovery", phase_wait, a.recovery_s)
        phase("final", phase_wait, a.quiet_s)
        p.terminate()
        p.join(timeout=30)
        _, metrics = d.request("GET", "/metrics")
    finally:
        rc = d.stop()
        log = open(d.log, errors="replace").read() if os.path.exists(d.log) else ""
        with open(os.path.join(a.out, "lcnd.log"), "w") as f:
            f.write(log[-100000:])
        raw = open(samples_raw).read().splitlines() if os.path.exists(samples_raw) else []
        d.cleanup()

    # samples -> phases (a request belongs to the phase in which it started)
    samples = []
    for line in raw:
        t, path, ms, outcome = line.split(",", 3)
        t = float(t)
        name = next((ph["name"] for ph in phases if ph["start"] <= t < ph["end"]), None)
        if name:
            samples.append({"t": t, "phase": name, "path": path, "ms": float(ms),
                            "outcome": outcome})
    results = []
    for ph in phases:
        mine = [s for s in samples if s["phase"] == ph["name"]]
        st = stats(mine)
        st.update({"phase": ph["name"], "seconds": round(ph["end"] - ph["start"], 2),
                   "target": ph["name"] in TARGET_PHASES})
        if st["target"]:
            st["meets_target"] = (st["p99_ms"] is not None and st["p99_ms"] < a.target_ms and
                                  st["errors"] == 0)
        for path in ("/healthz", "/jobs"):
            st[path] = stats([s for s in mine if s["path"] == path])
        results.append(st)
    http_lines = [l for l in metrics.decode(errors="replace").splitlines()
                  if l.startswith("lcn_http_responses_total")]
    logsum = {
        "lines": len(log.splitlines()),
        "per_address_or_limit_refusals_logged": log.count("Server reached connection limit"),
        "max_connections_reached": log.count("new ones wait in the listen backlog"),
        "eviction_messages": log.count("waited longest for a request header"),
        "suppressed_notes": [l for l in log.splitlines() if "not logged" in l][-5:],
    }
    doc = {"manifest": manifest, "exit_status": rc, "phases": results, "rounds": rounds,
           "http_responses": http_lines, "log": logsum,
           "all_targets_met": all(r.get("meets_target", True) for r in results)}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    t_base = phases[0]["start"] if phases else 0
    with open(os.path.join(a.out, "samples.csv"), "w") as f:
        f.write("t_s,phase,path,ms,outcome\n")
        for s in samples:
            f.write("%.3f,%s,%s,%.2f,%s\n" % (s["t"] - t_base, s["phase"], s["path"], s["ms"],
                                              s["outcome"]))
    write_summary(a, doc)
    print(open(os.path.join(a.out, "summary.md")).read())
    return 0 if doc["all_targets_met"] and rc == 0 else 1


def write_summary(a, doc):
    m = doc["manifest"]
    lim = m["lcnd"]["limits"]
    lines = [
        "# lcnd connection benchmark (issue 14)", "",
        "`%s`" % m["command"], "",
        "commit %s%s, %s, %s cores (%s), load %s at the start." % (
            m["commit"][:12], " (dirty)" if m["dirty"] else "", m["machine"]["hostname"],
            m["machine"]["nproc"], m["machine"]["cpu_model"], m["machine"]["loadavg"]),
        "lcnd limits: max_connections %s, max_connections_per_ip %s, header_timeout_s %s, "
        "connection_timeout_s %s, connection_reserve %s." % (
            lim["max_connections"], lim["max_connections_per_ip"], lim["header_timeout_s"],
            lim["connection_timeout_s"], lim.get("connection_reserve")),
        "",
        "Poller: a new connection from 127.0.0.1 every %g ms, GET /healthz and GET /jobs in "
        "turn, timed from connect to the last byte (timeout %g s). Target: p99 < %g ms and no "
        "error in the target phases." % (a.interval_ms, a.timeout_s, a.target_ms), "",
        "| phase | target | s | requests | errors | p50 ms | p90 ms | p99 ms | max ms | met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["phases"]:
        lines.append("| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |" % (
            r["phase"], "yes" if r["target"] else "no", r["seconds"], r["requests"],
            r["errors"], r["p50_ms"], r["p90_ms"], r["p99_ms"], r["max_ms"],
            ("yes" if r["meets_target"] else "NO") if r["target"] else "-"))
    lines += ["", "Phases: idle = %d connections from 127.0.0.2 held %g s and closed, %d "
              "rounds; slowloris = %d connections (2 x max_connections) from 127.0.0.2, a "
              "header byte every %g s, reopened when closed, %g s; the *_spread phases the same "
              "over %d addresses (127.0.0.2..): enough addresses to hold every slot whatever "
              "the per-address limit, but for eviction (connection_reserve slots kept free by "
              "closing the connections waiting longest for a request header); recovery = the "
              "first %g s after them." % (
                  a.idle, a.hold_s, a.rounds, 2 * int(lim["max_connections"]), a.every_s,
                  a.slowloris_s, a.spread, a.recovery_s), ""]
    for name, res in doc["rounds"].items():
        if isinstance(res, list) and res:
            lines.append("%s rounds: open (held or in the backlog) %s..%s, closed by the "
                         "daemon %s..%s of %d." % (
                             name, min(r["open"] for r in res), max(r["open"] for r in res),
                             min(r["closed_by_daemon"] for r in res),
                             max(r["closed_by_daemon"] for r in res), res[0]["made"]))
        elif isinstance(res, dict):
            op = res["open_per_pass"]
            lines.append("%s: %d connections over %d address(es); open per pass %s..%s; "
                         "%d reopened after the daemon closed them." % (
                             name, res["connections"], len(res["addresses"]),
                             min(op) if op else 0, max(op) if op else 0,
                             res["reopened_after_close"]))
    lg = doc["log"]
    lines += ["", "lcnd log: %d eviction message(s) (at most one a minute), %d "
              "max_connections-reached message(s)." % (lg["eviction_messages"],
                                                       lg["max_connections_reached"])]
    lines += ["", "lcnd exit status %s; all targets met: %s." % (
        doc["exit_status"], "yes" if doc["all_targets_met"] else "NO"), ""]
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
