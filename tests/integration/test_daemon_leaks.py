#!/usr/bin/env python3
"""lcnd leak check: a short run under valgrind (memcheck) that goes through
every path of the service (submit, poll, SSE, solution, cancel of a queued
and of a running job, bad input, a vanished SSE client, SIGTERM with a
running job and with connections held open through it) must end with exit status 0 and no definite or indirect leak
and no invalid access. Skipped (exit 77) when valgrind is not installed; an
ASan build (-DLCN_SANITIZE=address) checks leaks in every integration test
instead, since each one asserts a zero exit status."""

import os
import shutil
import socket
import sys
import unittest

from lcnd_harness import Daemon, gen_graph, need_binaries, tiny_graph

VALGRIND = shutil.which("valgrind")


class Leaks(unittest.TestCase):
    def test_short_run_under_valgrind(self):
        need_binaries(self)
        g = gen_graph("random", 24, seed=2)
        log = None
        d = Daemon("--cpu-workers", "1", "--checkpoint-interval-s", "0.2",
                   "--sse-heartbeat-s", "0.2",
                   wrapper=[VALGRIND, "--quiet", "--leak-check=full",
                            "--errors-for-leak-kinds=definite,indirect",
                            "--show-leak-kinds=definite,indirect", "--error-exitcode=99",
                            "--trace-children=no"])
        try:
            log = os.path.join(d.dir, "valgrind.log")
            d.wrapper.append("--log-file=" + log)
            d.start()
            a = d.submit(g, budget_s=0.6)
            b = d.submit(g, budget_s=30)  # queued behind a, cancelled there
            r = d.request("DELETE", "/jobs/" + b)
            self.assertEqual(r.status, 200)
            self.assertEqual(d.wait(a)["state"], "succeeded")
            self.assertEqual(d.get("/jobs/%s/solution" % a).status, 200)
            d.events(a)
            self.assertEqual(d.request("POST", "/jobs", body=b'{"graph": [').status, 400)
            self.assertEqual(d.request("POST", "/jobs", body={"graph": tiny_graph(),
                                                             "budget_s": -1}).status, 400)
            self.assertEqual(d.get("/jobs/j0000000000000099").status, 404)
            c = d.submit(g, budget_s=30)
            d.wait(c, ("running",))
            # a client that opens a stream and vanishes
            import http.client
            host, port = d.addr.rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=60)
            conn.request("GET", "/jobs/%s/progress" % c, headers={"Accept": "text/event-stream"})
            conn.getresponse().readline()
            conn.close()
            self.assertEqual(d.request("DELETE", "/jobs/" + c).json()["state"], "cancelled")
            e = d.submit(g, budget_s=30)
            d.wait(e, ("running",))
            self.assertEqual(d.get("/metrics").status, 200)
            # held open through the SIGTERM: an idle keep-alive connection,
            # a stream, and a request whose body never comes (cut off at the
            # drain deadline)
            k = http.client.HTTPConnection(host, int(port), timeout=60)
            k.request("GET", "/jobs/" + e)
            k.getresponse().read()
            sc = http.client.HTTPConnection(host, int(port), timeout=60)
            sc.request("GET", "/jobs/%s/progress" % e, headers={"Accept": "text/event-stream"})
            sc.getresponse().readline()
            raw = socket.create_connection((host, int(port)), timeout=60)
            raw.sendall(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 1000\r\n\r\n{")
            rc = d.stop()
            for h in (k, sc, raw):
                h.close()
            with open(log) as f:
                report = f.read()
            self.assertEqual(rc, 0, report[-4000:])
            self.assertNotIn("definitely lost", report)
            self.assertNotIn("Invalid read", report)
            self.assertNotIn("Invalid write", report)
        finally:
            d.cleanup()


if __name__ == "__main__":
    if not VALGRIND:
        print("valgrind not found: skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
