#!/usr/bin/env python3
"""tools/long_functions.py fails on a long function without a `long:`
comment, passes one with it, names a kernel whose name follows its
__launch_bounds__ line by its own name, counts only function bodies and
skips tests/ and build directories."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import long_functions  # noqa: E402


def body(n):
    """n statement lines."""
    return "".join(f"    x += {i};\n" for i in range(n))


def func(name, n, head=None):
    """A function of n lines (signature, braces, return and n - 4
    statements) in the tree's layout."""
    head = head or f"static int {name}(int x)\n"
    return head + "{\n" + body(n - 4) + "    return x;\n}\n"


def run(files, *args):
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = long_functions.main(["--root", root, *args])
        return rc, out.getvalue()


KERNEL = """/*
 * Phases apart by barriers.
 *
 * long: one launch; its phases share registers and shared memory
 */
template <int SMALL>
static __global__ void __launch_bounds__(1024)
    k_steps(const struct sol_params sp, int S, long long max_steps)
{
    extern __shared__ __align__(16) unsigned char smem[];
    if (threadIdx.x == 0) {
        smem[0] = 1;
    }
""" + body(130) + "}\n"


class LongFunctions(unittest.TestCase):
    def test_long_without_marker_fails(self):
        src = "#include <stdio.h>\n\n" + func("short_one", 20) + "\n" + func("too_long", 130)
        rc, out = run({"common/a.c": src})
        self.assertEqual(rc, 1, out)
        self.assertIn("common/a.c:24 too_long 130\n", out)
        self.assertNotIn("short_one", out)

    def test_marker_passes_and_limit_applies(self):
        src = ("/* Walks the table.\n * long: one switch over every opcode; a split would\n"
               " * only move the cases apart */\n" + func("interp", 130))
        rc, out = run({"common/a.c": src})
        self.assertEqual(rc, 0, out)
        self.assertIn("common/a.c:4 interp 130 (long: one switch over every opcode", out)
        # a comment without the marker, or not right above, is no reason
        for bad in ("/* Walks the table: one long switch. */\n",
                    "/* long: a reason */\n\n"):
            rc, out = run({"common/a.c": bad + func("interp", 130)})
            self.assertEqual(rc, 1, out)
            self.assertIn("interp 130\n", out)
        rc, out = run({"common/a.c": func("interp", 130)}, "--limit", "130")
        self.assertEqual(rc, 0, out)

    def test_kernel_named_on_the_next_line(self):
        rc, out = run({"gpu/solver.cu": KERNEL})
        self.assertEqual(rc, 0, out)
        self.assertIn("gpu/solver.cu:6 k_steps 139 (long: one launch;", out)
        rc, out = run({"gpu/solver.cu": KERNEL.replace("long:", "note:")})
        self.assertEqual(rc, 1, out)
        self.assertIn("gpu/solver.cu:6 k_steps 139\n", out)
        self.assertNotIn("__launch_bounds__", out)

    def test_only_function_bodies_count(self):
        # a long initialiser, an extern "C" block holding a function, braces
        # in comments, strings and preprocessor lines, a trailing attribute
        table = "static const int table[] = {\n" + "    1,\n" * 200 + "};\n"
        src = (table + 'extern "C" {\n#include "x.h"\n}\n'
               + func("c_api", 125, 'extern "C" int c_api(int x)\n')
               + "#define OPEN {\n/* } */\nstatic const char *s = \"}{\";\n"
               + func("attr", 126, "static int attr(int x) __attribute__((unused))\n"))
        rc, out = run({"gpu/ctx.cu": src})
        self.assertEqual(rc, 1, out)
        self.assertIn("gpu/ctx.cu:206 c_api 125\n", out)
        self.assertIn(" attr 126\n", out)
        self.assertNotIn("table", out)
        self.assertIn("2 function(s) over 120 lines", out)

    def test_tests_and_build_dirs_are_skipped(self):
        long_one = func("too_long", 130)
        rc, out = run({"tests/unit/t.c": long_one, "build/gen.c": long_one,
                       "out/CMakeCache.txt": "", "out/gen.c": long_one,
                       "third_party/v.c": long_one, "server/ok.c": func("fine", 30)})
        self.assertEqual(rc, 0, out)
        self.assertIn("0 function(s) over 120 lines", out)

    def test_unbalanced_braces_fail(self):
        # two headers in #if/#else branches open two bodies that one brace
        # closes: the file is reported, not misread
        src = func("f", 10) + "#if A\nint g(void)\n{\n#else\nint g(int x)\n{\n#endif\n" \
            "    return 0;\n}\n"
        rc, out = run({"common/a.c": src})
        self.assertEqual(rc, 1, out)
        self.assertIn("common/a.c: braces do not balance", out)

if __name__ == "__main__":
    unittest.main()
