#!/usr/bin/env python3
"""tools/results_archive.py: a generated round is packed, read back through the
helper (and through a reader, solver_report.py) unchanged, re-packed without
change, merged and refused where it must be; and the repository itself keeps
fewer than 300 tracked files under bench/results/ with every path its docs
cite still there. python3 -m unittest, or run directly."""

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOOLS = os.path.join(ROOT, "tools")
sys.path.insert(0, TOOLS)
import results_archive as ra  # noqa: E402


def run_json(k, seed):
    return {"best": {"K": k, "nK": seed, "Phi": 100 + seed, "C": 10}, "target_k": 5,
            "time_to_target_s": 0.5 * seed, "oracle_valid": True}


# relative path under the results root -> contents
ROUND = "gpu-20990101/round1-abc1234"
FILES = {
    f"{ROUND}/manifest-solver.json": json.dumps({"command": "bench_solver --tuning x=1"}),
    f"{ROUND}/solver-summary.txt": "Automatic-1 (4,1,101,10)\n",
    f"{ROUND}/report.md": "| instance | runs |\n",
    f"{ROUND}/tests.log": "ok 1/1\n",
    f"{ROUND}/daemon.log": "cited by the fake doc\n",
    f"{ROUND}/env.txt": "H200\n",
    f"{ROUND}/runs/Automatic-1-s1.json": json.dumps(run_json(4, 1)),
    f"{ROUND}/runs/Automatic-1-s2.json": json.dumps(run_json(5, 2)),
    f"{ROUND}/runs/Automatic-1-s1.coords.json": json.dumps({"x": [0], "y": [0]}),
    f"{ROUND}/layouts/Automatic-1.s1.json": json.dumps({"nodes": [], "edges": []}),
    f"{ROUND}/check.txt": "Automatic-1.s1 True 8\n",
    f"{ROUND}/sweep-a/manifest-solver.json": "{}",
    f"{ROUND}/sweep-a/report.md": "| sweep a |\n",
    f"{ROUND}/sweep-a/runs/Automatic-2-s1.json": json.dumps(run_json(7, 1)),
    "gpu-20990101/README.md": "the day's rounds\n",
    "cpu-20990102/manifest.json": "{}",
    "cpu-20990102/summary.md": "| cpu |\n",
    "cpu-20990102/runs/x.s1.json": "{}",
}
KEPT = {f"{ROUND}/manifest-solver.json", f"{ROUND}/solver-summary.txt", f"{ROUND}/report.md",
        f"{ROUND}/daemon.log", f"{ROUND}/layouts/Automatic-1.s1.json", f"{ROUND}/check.txt",
        "gpu-20990101/README.md",
        "cpu-20990102/manifest.json", "cpu-20990102/summary.md"}
DOC = "Round one: `round1-abc1234/daemon.log`, bench/results/gpu-20990101/round1-abc1234/runs and\n" \
      "bench/results/gpu-DATE/solver-COMMIT (a placeholder).\n"


class FakeRound(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lcn-results-")
        self.root = os.path.join(self.tmp, "results")
        for rel, text in FILES.items():
            p = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        self.doc = os.path.join(self.tmp, "DOC.md")
        with open(self.doc, "w") as f:
            f.write(DOC)
        self.log = []

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, rel):
        return os.path.join(self.root, rel)

    def pack_all(self):
        return sum(ra.pack(r, self.root, log=self.log.append, docs=[self.doc]) for r in ra.rounds(self.root))

    def tree(self):
        return {os.path.relpath(os.path.join(d, f), self.root)
                for d, _, fs in os.walk(self.root) for f in fs}

    def report(self, rundir):
        p = subprocess.run([sys.executable, os.path.join(TOOLS, "solver_report.py"), rundir],
                           capture_output=True, text=True, check=True)
        return p.stdout

    def test_rounds(self):
        self.assertEqual([os.path.relpath(r, self.root) for r in ra.rounds(self.root)],
                         ["cpu-20990102", ROUND])

    def test_pack_and_read_back(self):
        before = self.report(self.path(f"{ROUND}/runs"))
        self.assertEqual(self.pack_all(), 9)
        archives = {f"{ROUND}/raw.tar.xz", "cpu-20990102/raw.tar.xz"}
        self.assertEqual(self.tree(), KEPT | archives)
        self.assertFalse(os.path.exists(self.path(f"{ROUND}/runs")), "emptied runs/ is removed")
        # every file reads back through the helper, at its old path
        for rel, text in FILES.items():
            self.assertTrue(ra.exists(self.path(rel)), rel)
            with ra.open_text(self.path(rel)) as f:
                self.assertEqual(f.read(), text, rel)
        self.assertTrue(ra.isdir(self.path(f"{ROUND}/runs")))
        self.assertFalse(ra.isdir(self.path(f"{ROUND}/nothing")))
        self.assertEqual(ra.listdir(self.path(f"{ROUND}/runs")),
                         ["Automatic-1-s1.coords.json", "Automatic-1-s1.json", "Automatic-1-s2.json"])
        self.assertIn("runs", ra.listdir(self.path(ROUND)))
        self.assertEqual(ra.glob(self.path(f"{ROUND}/*/runs/*-s*.json")),
                         [self.path(f"{ROUND}/sweep-a/runs/Automatic-2-s1.json")])
        with self.assertRaises(FileNotFoundError):
            ra.read_bytes(self.path(f"{ROUND}/runs/missing.json"))
        # a reader gives the same table as before packing
        self.assertEqual(self.report(self.path(f"{ROUND}/runs")), before)
        # the documented way to open an archive
        with tarfile.open(self.path(f"{ROUND}/raw.tar.xz")) as t:
            self.assertIn("runs/Automatic-1-s1.json", t.getnames())

    def test_repack_is_a_no_op_and_deterministic(self):
        self.pack_all()
        a = self.path(f"{ROUND}/raw.tar.xz")
        first = ra.read_bytes(a)
        self.assertEqual(self.pack_all(), 0)
        self.assertEqual(ra.read_bytes(a), first)
        # the same files packed elsewhere give the same bytes
        other = tempfile.mkdtemp(prefix="lcn-results-")
        try:
            for rel, text in FILES.items():
                if rel.startswith(ROUND):
                    p = os.path.join(other, rel)
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    with open(p, "w") as f:
                        f.write(text)
            ra.pack(os.path.join(other, ROUND), other, log=self.log.append, docs=[self.doc])
            self.assertEqual(ra.read_bytes(os.path.join(other, ROUND, "raw.tar.xz")), first)
        finally:
            shutil.rmtree(other)

    def test_new_files_merge_and_changed_ones_are_refused(self):
        self.pack_all()
        new = self.path(f"{ROUND}/runs/Automatic-1-s3.json")
        os.makedirs(os.path.dirname(new))
        with open(new, "w") as f:
            f.write(json.dumps(run_json(4, 3)))
        self.assertEqual(self.pack_all(), 1)
        self.assertFalse(os.path.exists(new))
        self.assertEqual(len(ra.glob(self.path(f"{ROUND}/runs/*-s*.json"))), 4)
        clash = self.path(f"{ROUND}/runs/Automatic-1-s1.json")
        os.makedirs(os.path.dirname(clash))
        with open(clash, "w") as f:
            f.write("{}")
        with self.assertRaises(ValueError):
            ra.pack(self.path(ROUND), self.root, log=self.log.append, docs=[self.doc])
        self.assertTrue(os.path.exists(clash), "a refused pack deletes nothing")

    def test_cited_file_comes_back_and_legacy_archive_merges(self):
        self.pack_all()
        # a doc starts citing an archived file: pack takes it back out
        with open(self.doc, "a") as f:
            f.write("See `round1-abc1234/env.txt`.\n")
        self.assertEqual(ra.check_citations(self.root, [self.doc])[0].split(": ", 1)[1],
                         "'round1-abc1234/env.txt' names nothing under " + os.path.relpath(self.root, ra.REPO))
        self.pack_all()
        self.assertTrue(os.path.isfile(self.path(f"{ROUND}/env.txt")))
        self.assertEqual(ra.check_citations(self.root, [self.doc]), [])
        # an older runs.tgz is merged into raw.tar.xz and removed
        legacy = self.path("cpu-20990102/runs.tgz")
        with tarfile.open(legacy, "w:gz") as t:
            data = b'{"old": 1}'
            info = tarfile.TarInfo("./runs/old.s1.json")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        self.pack_all()
        self.assertFalse(os.path.exists(legacy))
        self.assertEqual(ra.read_bytes(self.path("cpu-20990102/runs/old.s1.json")), b'{"old": 1}')


class Repository(unittest.TestCase):
    def test_docs_cite_only_existing_results(self):
        self.assertEqual(ra.check_citations(), [])

    def test_fewer_than_300_tracked_result_files(self):
        p = subprocess.run(["git", "-C", ROOT, "ls-files", "bench/results"], capture_output=True, text=True)
        if p.returncode != 0 or shutil.which("git") is None:
            self.skipTest("not a git checkout")
        n = len(p.stdout.split())
        self.assertLess(n, 300, "tracked files under bench/results/: pack new rounds with "
                                "tools/results_archive.py pack --all")


if __name__ == "__main__":
    unittest.main()
