"""test_daemon_probe5.py - regression tests for what the fifth reliability
probe of 2026-12-02 found (HTTP framing, ...): each test is the probe's
minimal reproducer. Generated graphs only; bounds on time are liveness
bounds for a loaded machine.
"""

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lcnd_harness import LCND, LCNCTL, WAIT, Daemon, need_binaries, tiny_graph  # noqa: E402
from lcnd_harness import assert_error, assert_start_fails  # noqa: E402
from lcnd_harness import exchange as harness_exchange  # noqa: E402
from lcnd_harness import daemon_with_finished_job, listings_of_named_job  # noqa: E402
from test_daemon_http_hardening import RefusedFraming  # noqa: E402

ANSWER = 10.0  # seconds an answer may take on a loaded machine


def exchange(d, raw):
    return harness_exchange(d, raw, ANSWER)


class WhitespaceInHeaderName(RefusedFraming, unittest.TestCase):
    """`Content-Length : 5` (blank before the colon, which RFC 9112 section
    5.1 says a server must refuse with 400, because proxies differ on it)
    reached the daemon as a header named "Content-Length ", which neither
    the HTTP library nor the framing check took for a Content-Length: the
    request was served without a body, and its body was read as the next
    request on the connection ("helloGET is not allowed on /healthz", 405;
    a proxy that trims the blank forwards that body as the first request's,
    so the daemon answered a request the proxy never saw). Such a header is
    now ambiguous framing: 400 bad_request, connection closed."""

    def test_blank_before_colon_refused(self):
        smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        for name in (b"Content-Length ", b"Content-Length\t", b"content-length  "):
            self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Type: application/json\r\n%s: %d\r\n\r\n%s" %
                                (name, len(smuggled), smuggled))
        self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Transfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + smuggled)
        # any other header name with a blank is no better formed
        self.assert_refused(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX Forwarded: 1\r\n\r\n")

    def test_name_not_a_token_refused(self):
        """The same with other bytes that are no part of a header name (RFC
        9110 token) but that lenient parsers strip as blanks: vertical tab,
        form feed, CR, other controls, bytes past ASCII (NEL, NBSP). MHD kept
        them in the name, and the body was served as the next request
        (GET /version answered 200 after the POST's 400 bad_json)."""
        smuggled = b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
        for junk in (b"\x0b", b"\x0c", b"\r", b"\x1f", b"\x7f", b"\x85", b"\xa0", b"(", b"/"):
            with self.subTest(junk=junk):
                self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\n"
                                    b"Content-Type: application/json\r\nContent-Length%s: %d"
                                    b"\r\n\r\n%s" % (junk, len(smuggled), smuggled))

    def test_folded_framing_header_refused(self):
        """A folded line after Content-Length or Transfer-Encoding (obs-fold,
        "Content-Length: 37\\r\\n 0"): libmicrohttpd 0.9.75 appends the
        continuation to the header's name, not to its value, so the daemon
        saw a header "Content-Length0", no length, and served the body as
        the next request (GET /version, 200); a proxy that unfolds it, as
        RFC 9112 allows, reads a length. Refused as ambiguous framing."""
        smuggled = b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
        self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: %d\r\n 0\r\n\r\n%s" % (len(smuggled), smuggled))
        self.assert_refused(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Transfer-Encoding: chunked\r\n\tx\r\n\r\n2\r\n{}\r\n0\r\n\r\n" +
                            smuggled)

    def test_plain_headers_still_served(self):
        data = exchange(self.d, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A:  padded value \r\n"
                                b"Connection: close\r\n\r\n")
        self.assertTrue(data.startswith(b"HTTP/1.1 200 "), data[:300])


class TokenFileReadAlike(unittest.TestCase):
    """lcnd reads its token_file whole, without surrounding blanks and
    newlines; lcnctl read the first line of $LCN_TOKEN_FILE and trimmed
    its end only. The daemon's own token file, when it began with a blank
    line, made lcnctl exit 2 ("... is empty"), and when it began with a
    tab, lcnctl sent the tab and got 401 (exit 5). lcnctl now reads the
    file as the daemon does."""

    def test_lcnctl_takes_the_daemons_token_file(self):
        need_binaries(self)
        tok = "s3cret-token-0123456789"
        d = Daemon(token=tok)
        self.addCleanup(d.cleanup)
        tf = os.path.join(d.dir, "token")
        with open(tf, "w") as f:
            f.write("\n%s\n" % tok)  # lcnd takes it
        d.start(extra=["--token-file", tf])
        env = dict(os.environ)
        env.pop("LCN_TOKEN", None)
        for text in ("\n%s\n" % tok, "\t%s\r\n" % tok, "  \n\n %s \n\n" % tok):
            with open(tf, "w") as f:
                f.write(text)
            env["LCN_TOKEN_FILE"] = tf
            p = subprocess.run([LCNCTL, "--server", d.addr, "list"], capture_output=True,
                               text=True, env=env, timeout=WAIT)
            self.assertEqual(p.returncode, 0, (text, p.stderr))
        with open(tf, "w") as f:
            f.write(" \n\t\n")
        p = subprocess.run([LCNCTL, "--server", d.addr, "list"], capture_output=True,
                           text=True, env=env, timeout=WAIT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("is empty", p.stderr)
        self.assertEqual(d.stop(), 0)


class PictureOfAnyName(unittest.TestCase):
    """A job's name is any UTF-8 text of 128 bytes; the picture's caption
    carries it, escaped for <, >, & and " and with control bytes blanked,
    but U+FFFE and U+FFFF (well-formed UTF-8, not XML characters) went
    into the caption as they were: GET /jobs/<id>/solution.svg answered
    200 with a document no XML parser (nor browser) accepts ("not
    well-formed (invalid token)"). Only XML characters reach the picture
    now; others are drawn as '?'."""

    def test_svg_well_formed_whatever_the_name(self):
        need_binaries(self)
        d = Daemon()
        self.addCleanup(d.cleanup)
        d.start()
        captions = []
        for name in ("a\ufffeb\uffffc", "\x01\x1b[2J\x7f", "x]]>y<&\"'"):
            job = d.submit(tiny_graph(), budget_s=0.1, name=name)
            self.assertEqual(d.wait(job)["state"], "succeeded")
            r = d.get("/jobs/%s/solution.svg" % job)
            self.assertEqual(r.status, 200, r.body[:300])
            root = ET.fromstring(r.body)  # raises when not well-formed
            captions.append("".join(root.itertext()))
            self.assertIn(job, captions[-1])
        self.assertIn("a?b?c", captions[0])
        self.assertIn("x]]>y<&\"'", captions[2])
        self.assertEqual(d.stop(), 0)


class C1ControlsEscaped(unittest.TestCase):
    """The fourth probe made `lcnctl list`, `lcnctl get` and the log write
    a name's control bytes as \\xNN, but only C0 ones (below 0x20) and DEL:
    the C1 controls U+0080 to U+009F, as UTF-8 (C2 80 to C2 9F), went out
    raw. U+009B is CSI, ESC [ in one character, which xterm acts on: a
    name with U+009B "2J" cleared the operator's screen. They are escaped
    too now (\\xc2\\x9b)."""

    def test_c1_controls_escaped(self):
        d, out = listings_of_named_job(self, "A\u009b2JB\u0085C\u00a0\u00e9")
        for cmd, stdout in out:
            self.assertNotIn(b"\xc2\x9b", stdout, cmd)
            self.assertNotIn(b"\xc2\x85", stdout, cmd)
            # other characters stay as they are
            self.assertIn(b"A\\xc2\\x9b2JB\\xc2\\x85C\xc2\xa0\xc3\xa9", stdout, cmd)
        self.assertEqual(d.stop(), 0)
        log = d.log().encode()
        self.assertNotIn(b"\xc2\x9b", log)
        self.assertIn(b"A\\xc2\\x9b2JB\\xc2\\x85C", log)


class SolutionOnStdout(unittest.TestCase):
    """`lcnctl solution ID -o /dev/stdout` wrote the layout and then its
    note ("saved the final layout of ... to /dev/stdout: K=...") on
    stdout after it, so the output was no JSON document; with --json the
    summary object followed the layout the same way, and `lcnctl --json
    gen ... -o /dev/stdout` appended its summary to the graph. As with
    render: the note goes to stderr when the file is stdout (or not a
    regular file), --json there is a usage error for solution, and gen
    prints no summary, as with -o -."""

    def test_note_kept_out_of_the_layout(self):
        d, job = daemon_with_finished_job(self)
        p = subprocess.run([LCNCTL, "--server", d.addr, "solution", job, "-o", "/dev/stdout"],
                           capture_output=True, timeout=WAIT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["lcn"]["job"], job)  # the layout alone
        self.assertIn(b"saved the final layout of", p.stderr)
        p = subprocess.run([LCNCTL, "--server", d.addr, "--json", "solution", job, "-o",
                            "/dev/stdout"], capture_output=True, timeout=WAIT)
        self.assertEqual(p.returncode, 2, p.stdout[-300:])
        self.assertIn(b"both want stdout", p.stderr)
        self.assertEqual(p.stdout, b"")
        p = subprocess.run([LCNCTL, "--json", "gen", "random", "--nodes", "8", "-o",
                            "/dev/stdout"], capture_output=True, timeout=WAIT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)["nodes"]), 8)
        self.assertEqual(d.stop(), 0)


class BodiesOnlyWhereTaken(unittest.TestCase):
    """http.h says routes without HTTP_BODY refuse bodies, but nothing
    checked it: GET /healthz and GET / (served without the token) took a
    body of up to max_body_bytes each and held it against
    max_body_total_bytes, so a client without the token made every POST
    /jobs of the others 503 busy (two 1 MB GET bodies against 2 MiB; by
    default four 64 MiB ones, trickled to stay open, held 256 MiB). A
    request with a body on a route that takes none is now 413 too_large
    at its header, the body unread and the connection closed."""

    @classmethod
    def setUpClass(cls):
        need_binaries(cls)
        cls.tok = "s3cret-token-0123456789"
        cls.d = Daemon(token=cls.tok)
        tf = os.path.join(cls.d.dir, "token")
        with open(tf, "w") as f:
            f.write(cls.tok)
        cls.d.start(extra=["--token-file", tf, "--max-body-bytes", "1048576",
                           "--max-body-total-bytes", "2097152"])

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.cleanup()
        assert rc == 0, rc

    def test_open_routes_hold_no_body(self):
        host, port = self.d.addr.rsplit(":", 1)
        held = []
        for path in (b"/healthz", b"/"):
            s = socket.create_connection((host, int(port)), timeout=ANSWER)
            self.addCleanup(s.close)
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" % path)
            try:  # before: held by the daemon; now refused, perhaps while being sent
                s.sendall(b"x" * 1048000)
            except OSError:
                pass
            held.append(s)
        for s in held:
            try:
                self.assertTrue(s.recv(200).startswith(b"HTTP/1.1 413 "))
            except ConnectionResetError:  # closed before the client had sent it all
                pass
        graph = {"nodes": [{"id": i} for i in range(200)], "edges": [], "width": 20,
                 "height": 20}
        job = self.d.submit(graph, budget_s=0.1)  # 201, not 503 busy
        self.assertEqual(self.d.wait(job)["state"], "succeeded")

    def test_body_refused_unread(self):
        smuggled = b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
        for first in (b"GET /healthz", b"GET /jobs", b"DELETE /jobs/j0000000000000001"):
            data = exchange(self.d, first + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                            self.tok.encode() + b"\r\nContent-Length: %d\r\n\r\n" %
                            len(smuggled) + smuggled)
            self.assertTrue(data.startswith(b"HTTP/1.1 413 "), data[:300])
            self.assertIn(b'"code":"too_large"', data)
            self.assertIn(b"takes no request body", data)
            self.assertNotIn(b"<not closed>", data)
            self.assertEqual(data.count(b"HTTP/1.1 "), 1, data)
        data = exchange(self.d, b"GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
                                b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        self.assertTrue(data.startswith(b"HTTP/1.1 413 "), data[:300])
        # an empty body is no body
        data = exchange(self.d, b"DELETE /jobs/j0000000000000099 HTTP/1.1\r\nHost: x\r\n"
                                b"Authorization: Bearer " + self.tok.encode() +
                                b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        self.assertTrue(data.startswith(b"HTTP/1.1 404 "), data[:300])


class FewDescriptors(unittest.TestCase):
    """With a hard open-file limit below what max_connections needs, lcnd
    only warned ("fewer connections will be served") and kept
    max_connections: accept then failed for want of descriptors long
    before the connection limit, so the reserve that closes idle
    connections for new clients never came into play, and idle
    connections locked every client out until their header timeout (a
    GET /healthz waited 30 s behind 100 idle connections with a limit of
    96 descriptors). max_connections is now lowered to what the
    descriptors allow, so the reserve works."""

    def test_idle_connections_do_not_lock_out(self):
        need_binaries(self)
        d = Daemon("--header-timeout-s", "30", wrapper=("prlimit", "--nofile=96:96", "--"))
        self.addCleanup(d.cleanup)
        d.start()
        host, port = d.addr.rsplit(":", 1)
        idle = []
        for _ in range(100):
            s = socket.create_connection((host, int(port)), timeout=ANSWER)
            self.addCleanup(s.close)
            idle.append(s)
        time.sleep(1)
        t0 = time.time()
        data = exchange(d, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertTrue(data.startswith(b"HTTP/1.1 200 "), data[:200])
        self.assertLess(time.time() - t0, 8)
        self.assertIn("max_connections lowered to", d.log())
        for s in idle:
            s.close()
        self.assertEqual(d.stop(), 0)


class PortFileKeptWhenSpecial(unittest.TestCase):
    """At start lcnd removed whatever port_file named, so that a stale port
    line is not read, and then wrote it atomically: `--port-file
    /dev/full` (or /dev/null, or a symlink such as /dev/stdout) run as
    root deleted the device node and left a regular file in its place
    (the probe's /dev/full became a 16-byte file holding the port). Only
    a regular file is removed now; a device, a FIFO or a symlink is kept
    and written in place as lcn_write_atomic does (docs/FORMAT.md)."""

    def run_with(self, port_file, wait_log):
        d = tempfile.mkdtemp(prefix="lcnd-test-")
        self.addCleanup(shutil.rmtree, d, True)
        log = os.path.join(d, "lcnd.log")
        p = subprocess.Popen([LCND, "serve", "--listen", "127.0.0.1:0", "--state-dir",
                              os.path.join(d, "st"), "--port-file", port_file, "--log-file", log,
                              "--backend", "cpu", "--cpu-threads", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(p.kill)
        deadline = time.time() + WAIT
        while wait_log and time.time() < deadline:
            if os.path.exists(log) and "listening on" in open(log).read():
                break
            time.sleep(0.05)
        return p

    def test_fifo_and_symlink_kept(self):
        need_binaries(self)
        d = tempfile.mkdtemp(prefix="lcnd-test-")
        self.addCleanup(shutil.rmtree, d, True)
        fifo = os.path.join(d, "port.fifo")
        os.mkfifo(fifo)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.addCleanup(os.close, rfd)
        p = self.run_with(fifo, wait_log=False)
        line, deadline = b"", time.time() + WAIT
        while not line.endswith(b"\n") and time.time() < deadline:
            try:
                line += os.read(rfd, 100)
            except BlockingIOError:
                pass
            time.sleep(0.05)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was removed")
        self.assertRegex(line.decode(), r"^127\.0\.0\.1:\d+\n$")
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(WAIT), 0)
        link = os.path.join(d, "port.link")
        os.symlink("/dev/null", link)
        p = self.run_with(link, wait_log=True)
        self.assertTrue(os.path.islink(link), "the symlink was replaced")
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(WAIT), 0)


class CorsOnEveryAnswer(unittest.TestCase):
    """API.md: every answer to a request whose Origin is allowed, errors
    included, carries Access-Control-Allow-Origin. The 400 for ambiguous
    framing was decided before the Origin was looked at, so it came
    without it (and a page of the allowed origin could not read why its
    request failed)."""

    def test_framing_error_carries_cors(self):
        need_binaries(self)
        d = Daemon("--allowed-origins", "https://app.example")
        self.addCleanup(d.cleanup)
        d.start()
        data = exchange(d, b"POST /jobs HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
                           b"Content-Type: application/json\r\nContent-Length: 2\r\n"
                           b"Content-Length: 2\r\n\r\n{}")
        head = data.partition(b"\r\n\r\n")[0]
        self.assertTrue(head.startswith(b"HTTP/1.1 400 "), data[:300])
        self.assertIn(b"\r\nAccess-Control-Allow-Origin: https://app.example", head)
        self.assertIn(b"\r\nVary: Origin", head)
        self.assertEqual(d.stop(), 0)


class BenchOfAFileNameNotUtf8(unittest.TestCase):
    """`lcnctl bench DIR` over a graph file named in Latin-1 (caf\\xe9.json)
    ran it, exit 0, but the manifest listed no input and no run, the
    summary no graph, and the jobs had no name: each of those JSON objects
    was built with the name as a JSON string, which json_pack refuses
    for text that is not UTF-8, and the NULL was dropped. The name is
    given with '?' for its bytes past ASCII."""

    def test_manifest_lists_the_run(self):
        need_binaries(self)
        d = Daemon()
        self.addCleanup(d.cleanup)
        d.start()
        tmp = tempfile.mkdtemp(prefix="lcnd-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        bdir = os.path.join(os.fsencode(tmp), b"in")
        os.makedirs(bdir)
        with open(os.path.join(bdir, b"caf\xe9.json"), "w") as f:
            json.dump(tiny_graph(), f)
        out = os.path.join(os.fsencode(tmp), b"out")
        p = subprocess.run([os.fsencode(LCNCTL), b"--server", d.addr.encode(), b"bench", bdir,
                            b"--budget-s", b"0.2", b"--seeds", b"1", b"-o", out],
                           capture_output=True, timeout=WAIT)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, b"manifest.json")) as f:
            man = json.load(f)
        self.assertEqual([i["name"] for i in man["inputs"]], ["caf?"])
        self.assertEqual([(r["graph"], r["outcome"]) for r in man["runs"]], [("caf?", "ok")])
        with open(os.path.join(out, b"summary.json")) as f:
            self.assertEqual([g["graph"] for g in json.load(f)["graphs"]], ["caf?"])
        self.assertEqual(d.status(man["runs"][0]["job"])["name"], "bench caf? seed 1")
        self.assertEqual(d.stop(), 0)


class NumbersAsJsonWritesThem(unittest.TestCase):
    """A number option of lcnctl, lcnd solve or the config file went
    through strtod, which also reads hexadecimal: `lcnd solve --budget-s
    0x10` ran for 16 s (exit 0), `lcnctl submit --budget-s 0x10` sent 16.
    Query arguments took what a JSON body refuses: `POST
    /jobs?budget_s=.5` (and `+1`, `5.`, `00001`) made a job (201), and
    `GET /jobs?limit=0001` answered 200. Numbers are now written as JSON
    writes them everywhere: exit 2 with a message, 400 at the field."""

    def test_cli_refuses_hexadecimal(self):
        need_binaries(self)
        tmp = tempfile.mkdtemp(prefix="lcnd-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        g = os.path.join(tmp, "g.json")
        with open(g, "w") as f:
            json.dump(tiny_graph(), f)
        out = os.path.join(tmp, "o.json")
        for v in ("0x10", "0x1p3", ".5", "5.", "+1", "007"):
            with self.subTest(v=v):
                p = subprocess.run([LCND, "solve", g, "--out", out, "--quiet", "--budget-s", v],
                                   capture_output=True, text=True, timeout=WAIT)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("--budget-s: expected a number", p.stderr)
                p = subprocess.run([LCNCTL, "--server", "127.0.0.1:1", "submit", g,
                                    "--budget-s", v], capture_output=True, text=True,
                                   timeout=WAIT)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("--budget-s: expected a number", p.stderr)
        p = subprocess.run([LCND, "solve", g, "--out", out, "--quiet", "--gpus", "+1"],
                           capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(p.returncode, 2, p.stderr)
        conf = os.path.join(tmp, "lcnd.conf")
        with open(conf, "w") as f:
            f.write("default_budget_s = 0x10\n")
        p = subprocess.run([LCND, "serve", "--config", conf, "--print-config"],
                           capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("default_budget_s: expected a number", p.stderr)

    def test_query_numbers_as_in_a_body(self):
        need_binaries(self)
        d = Daemon()
        self.addCleanup(d.cleanup)
        d.start()
        body = json.dumps(tiny_graph())
        for q in ("budget_s=.5", "budget_s=5.", "budget_s=%2B1", "budget_s=00001",
                  "budget_s=0x1", "seed=%2B1", "seed=007", "target_k=01"):
            with self.subTest(q=q):
                r = d.request("POST", "/jobs?" + q, body=body)
                assert_error(self, r, 400, "invalid_field", q.split("=")[0])
        for q in ("limit=0001", "limit=%2B1", "limit=-0"):
            with self.subTest(q=q):
                assert_error(self, d.get("/jobs?" + q), 400, "invalid_field", "limit")
        r = d.request("POST", "/jobs?budget_s=0.5&seed=0&target_k=10", body=body)
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(d.get("/jobs?limit=10").status, 200)
        self.assertEqual(d.stop(), 0)


class TokenFileADirectory(unittest.TestCase):
    """`lcnd serve --token-file DIR` refused to start saying "the token
    must be one word of at least 16 bytes of visible ASCII" (fopen opens a
    directory, the read failed and was taken for an empty file), and
    lcnctl with LCN_TOKEN_FILE=DIR said "'DIR' is empty". Both now give
    the read's reason: "Is a directory"."""

    def test_directory_named(self):
        need_binaries(self)
        tmp = tempfile.mkdtemp(prefix="lcnd-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        assert_start_fails(self, ("--token-file", tmp), "token_file %s: Is a directory" % tmp)


class LogWriteFailureReported(unittest.TestCase):
    """`lcnd serve --log-file /dev/full` served with every log line lost
    and nothing said anywhere (the write's result was ignored). The first
    lost line of a run of failures is now said once on standard error, and
    /metrics counts them all (lcn_log_lines_lost_total)."""

    def test_full_log_said_once_and_counted(self):
        need_binaries(self)
        d = Daemon()
        self.addCleanup(d.cleanup)
        d.start(extra=["--log-file", "/dev/full"])
        job = d.submit(tiny_graph(), budget_s=0.1, name="lost")
        self.assertEqual(d.wait(job)["state"], "succeeded")
        m = d.get("/metrics")
        self.assertEqual(m.status, 200)
        lost = [ln for ln in m.body.decode().splitlines()
                if ln.startswith("lcn_log_lines_lost_total ")]
        self.assertEqual(len(lost), 1, m.body[-500:])
        self.assertGreaterEqual(int(lost[0].split()[1]), 3)  # start, submit, end at least
        self.assertEqual(d.stop(), 0)
        err = d.read_stderr()
        self.assertEqual(err.count("cannot write to log_file '/dev/full': No space left on "
                                   "device"), 1, err)


class BidiControlsEscaped(unittest.TestCase):
    """`lcnctl list` and `lcnctl get` (and the text log) wrote a name's
    bidirectional overrides and isolates (U+202A to U+202E, U+2066 to
    U+2069) raw: U+202E turns the rest of the line right to left, so a
    name could make the line read other than it is (the Trojan Source
    trick). They are escaped per byte like the C1 controls now."""

    def test_bidi_escaped(self):
        d, out = listings_of_named_job(self, "A\u202eB\u2066C\u2069D\u2029E")
        want = b"A\\xe2\\x80\\xaeB\\xe2\\x81\\xa6C\\xe2\\x81\\xa9D\xe2\x80\xa9E"
        for cmd, stdout in out:
            self.assertNotIn(b"\xe2\x80\xae", stdout, cmd)
            self.assertIn(want, stdout, cmd)
        self.assertEqual(d.stop(), 0)
        self.assertIn(want, d.log().encode())


class ByteOrderMarkSkipped(unittest.TestCase):
    """A graph file saved with a UTF-8 byte-order mark (Windows editors)
    was refused by lcnd solve, lcnctl submit and check (exit 2, "line 1
    column 1: '[' or '{' expected near" the invisible mark) and by POST
    /jobs (400 bad_json). RFC 8259 lets a parser ignore it; every reader skips a
    leading one now (and the oracle, tools/oracle/lcn_check.py, alike)."""

    def test_bom_graph_read_everywhere(self):
        need_binaries(self)
        d = Daemon()
        self.addCleanup(d.cleanup)
        d.start()
        tmp = tempfile.mkdtemp(prefix="lcnd-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        g = os.path.join(tmp, "g.json")
        text = b"\xef\xbb\xbf" + json.dumps(tiny_graph()).encode()
        with open(g, "wb") as f:
            f.write(text)
        p = subprocess.run([LCND, "solve", g, "--out", os.path.join(tmp, "o.json"), "--quiet",
                            "--budget-s", "0.1"], capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([LCNCTL, "check", g], capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([LCNCTL, "--server", d.addr, "submit", g, "--budget-s", "0.1"],
                           capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(d.wait(p.stdout.strip())["state"], "succeeded")
        for body in (text, b"\xef\xbb\xbf" + json.dumps({"graph": tiny_graph()}).encode()):
            r = d.request("POST", "/jobs?budget_s=0.1" if body is text else "/jobs", body=body)
            self.assertEqual(r.status, 201, r.body)
            first = r.json()["id"]
            self.assertEqual(d.wait(first)["state"], "succeeded")
        # a warm start parses the body again: the mark there answered 500
        # ("the request no longer parses", the session's review)
        warm = b"\xef\xbb\xbf" + json.dumps({"graph": tiny_graph(), "init_from": first,
                                              "budget_s": 0.1}).encode()
        r = d.request("POST", "/jobs", body=warm)
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(d.wait(r.json()["id"])["state"], "succeeded")
        self.assertEqual(d.stop(), 0)


class TokenReloadedOnSighup(unittest.TestCase):
    """The token_file was read at the start only (SIGHUP reopened the log
    alone): rotating the token needed a restart, and after a rewrite of
    the file the old token went on opening the API (200) and the new one
    got 401. SIGHUP now reads the file again; one that holds no valid
    token keeps the old token, with an error in the log."""

    def wait_status(self, d, token, status):
        deadline = time.time() + WAIT
        while True:
            r = d.get("/jobs", headers={"Authorization": "Bearer " + token})
            if r.status == status or time.time() > deadline:
                return r.status
            time.sleep(0.05)

    def test_sighup_rereads_the_token(self):
        need_binaries(self)
        old, new = "old-token-0123456789", "new-token-9876543210"
        d = Daemon(token=old)
        self.addCleanup(d.cleanup)
        tf = os.path.join(d.dir, "token")
        with open(tf, "w") as f:
            f.write(old + "\n")
        d.start(extra=["--token-file", tf])
        self.assertEqual(self.wait_status(d, old, 200), 200)
        with open(tf + ".new", "w") as f:
            f.write(new + "\n")
        os.rename(tf + ".new", tf)
        d.send(signal.SIGHUP)
        self.assertEqual(self.wait_status(d, new, 200), 200)
        self.assertEqual(self.wait_status(d, old, 401), 401)
        # a file without a valid token: the token in use stays
        with open(tf, "w") as f:
            f.write("short\n")
        d.send(signal.SIGHUP)
        deadline = time.time() + WAIT
        while "token not reloaded" not in d.log() and time.time() < deadline:
            time.sleep(0.05)
        self.assertIn("token not reloaded, the old one stays: token_file %s: the token must be"
                      % tf, d.log())
        self.assertEqual(self.wait_status(d, new, 200), 200)
        self.assertEqual(self.wait_status(d, "short", 401), 401)
        d.token = new
        self.assertEqual(d.stop(), 0)


class HeadOfAStreamLikeItsGet(unittest.TestCase):
    """HEAD /jobs/<id>/progress with Accept: text/event-stream answered
    "Content-Length: 0" where the GET streams without a length (chunked
    on HTTP/1.1, up to the close on HTTP/1.0): RFC 9110 section 8.6 says a
    HEAD answer must not give a Content-Length other than the GET's. HEAD
    now answers the GET's header without a length; on HTTP/1.1 without
    the chunked coding too (libmicrohttpd 0.9.75 would write its
    terminator after a HEAD answer), the connection closed after it."""

    def header(self, d, method, job, version):
        raw = (b"%s /jobs/%s/progress %s\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n" %
               (method, job.encode(), version))
        # a GET's stream stays open on HTTP/1.1 (keep-alive): its start is enough
        got = exchange(d, raw) if method == b"HEAD" else harness_exchange(d, raw, 2)
        head, _, body = got.partition(b"\r\n\r\n")
        fields = dict(ln.split(b": ", 1) for ln in head.split(b"\r\n")[1:])
        fields.pop(b"Date", None)
        return head.split(b"\r\n")[0], fields, body

    def test_head_has_the_gets_header(self):
        d, job = daemon_with_finished_job(self)
        for version in (b"HTTP/1.1", b"HTTP/1.0"):
            with self.subTest(version=version):
                line, head, body = self.header(d, b"HEAD", job, version)
                gline, get, gbody = self.header(d, b"GET", job, version)
                self.assertEqual(line, gline)
                self.assertNotIn(b"Content-Length", head)
                self.assertEqual(body, b"")  # and the connection closed
                self.assertIn(b"lcnd progress stream", gbody)
                get.pop(b"Transfer-Encoding", None)
                get[b"Connection"] = b"close"
                self.assertEqual(head, get)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
