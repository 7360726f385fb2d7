#!/usr/bin/env python3
"""tools/server_calls.py finds a circle, ignores what only looks like a use
(comments, strings, a file's own static function of the same name),
passes a layered tree, and holds a document's module map to the code's."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import server_calls  # noqa: E402


def run(files, doc=None):
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, "server"))
        for name, text in files.items():
            with open(os.path.join(root, "server", name), "w") as f:
                f.write(text)
        extra = []
        if doc is not None:
            with open(os.path.join(root, "MAP.md"), "w") as f:
                f.write(doc)
            extra = ["--doc", "MAP.md"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = server_calls.main(["--root", root] + extra)
        return rc, out.getvalue()


LOW = """#include "low.h"
static int helper(int x) { return x; }
int low_get(int x)
{
    return helper(x);
}
"""


class ServerCalls(unittest.TestCase):
    def test_layers_pass(self):
        rc, out = run({"low.c": LOW, "high.c": "int high_run(void) { return low_get(1); }\n"})
        self.assertEqual(rc, 0, out)
        self.assertIn("-> low: low_get", out)
        self.assertIn("no circle", out)

    def test_callback_upward_is_a_circle(self):
        # low names high's function (as a callback or a call): a circle
        rc, out = run({
            "low.c": LOW + "void low_wire(void) { void *p = (void *)high_hook; (void)p; }\n",
            "high.c": "int high_hook(void) { return low_get(1); }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("circle: high <-> low", out)

    def test_comments_strings_and_statics_are_not_uses(self):
        rc, out = run({
            "low.c": LOW + '/* high_run() */ const char *s = "high_run()";\n'
                           "static int high_hook(void) { return 0; }\n"
                           "int low_other(void) { return high_hook(); }\n",
            "high.c": "int high_run(void) { return low_get(1); }\n"
                      "int high_hook(void) { return 2; }\n",
        })
        self.assertEqual(rc, 0, out)

    def test_doc_map_must_match(self):
        files = {"low.c": LOW, "high.c": "int high_run(void) { return low_get(1); }\n"}
        doc = "Its output today, in\nshort:\n\n```\nhigh -> low\n(low use no other module)\n```\n"
        rc, out = run(files, doc)
        self.assertEqual(rc, 0, out)
        rc, out = run(files, doc.replace("high -> low", "high -> low, mid"))
        self.assertEqual(rc, 1, out)
        self.assertIn("MAP.md: the module map differs", out)
        self.assertIn("high -> low\n(low use no other module)", out)


if __name__ == "__main__":
    unittest.main()
