#!/usr/bin/env python3
"""List the functions longer than a limit and fail on one without a reason.

Issue 16: no function over 120 lines outside tests without a comment saying
why. The comment is a block comment that ends on the line right above the
function's first line (its template or attribute line, when it has one)
and holds the marker `long:` followed by the reason:

    /* ... long: one launch whose phases are separated by barriers ... */
    template <int SMALL>
    static __global__ void __launch_bounds__(1024)
        k_steps(...)
    {

The scan is lexical, over the C and CUDA sources (.c .h .cu .cuh) below
the root, leaving out tests/, build directories (build*, or any directory
holding a CMakeCache.txt), .git, node_modules and vendored code (vendor,
third_party, external, _deps). Comments, string and character literals and
preprocessor lines are blanked out; a function definition is a '{' at
brace depth 0 whose declaration (the text since the previous ';' or '}' at
depth 0) ends with a parameter list, possibly followed by attributes, and
has no '=' outside parentheses (so initialisers and compound literals are
not functions). `extern "C" {` blocks are transparent. The name is the
identifier before the parameter list, so a kernel whose name follows
`__launch_bounds__(...)` on the next line is reported by its own name. A
function's lines run from the first line of its declaration to its closing
brace. A file whose braces do not balance (a brace inside #if/#else
branches, say) is reported and fails the check rather than being misread.

Prints `file:line name lines` for every function over the limit without a
reason, the excused ones with their reason after them, and a count.
Exits 1 when a function over the limit has no reason (or a file could not
be read as above), 0 otherwise.

    python3 tools/long_functions.py [--root DIR] [--limit N] [--quiet]
"""
import argparse
import os
import re
import sys

EXTENSIONS = (".c", ".h", ".cu", ".cuh")
SKIP_DIRS = {".git", "node_modules", "tests", "vendor", "third_party", "external", "_deps"}
ATTRIBUTES = {"__attribute__", "__launch_bounds__", "__declspec", "alignas", "_Alignas"}
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "defined"}
IDENT_BEFORE = re.compile(r"([A-Za-z_]\w*)\s*$")
MARKER = re.compile(r"\blong:\s*[^\s*/]")


def blank(src):
    """src with comments, string and character literals and preprocessor
    lines (continuations included) replaced by spaces; newlines and so
    every line and column stay where they were."""
    out = list(src)
    i, n = 0, len(src)
    at_line_start = True

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":
            j = i
            while j < n and src[j] != "\n":
                if src[j] == "\\" and j + 1 < n and src[j + 1] == "\n":
                    j += 2
                    continue
                if src.startswith("/*", j):  # a comment may run on past the line
                    e = src.find("*/", j + 2)
                    j = n if e < 0 else e + 2
                    continue
                j += 1
            wipe(i, j)
            i = j
            continue
        at_line_start = False
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            wipe(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def matching_open(text, close):
    """Index of the '(' that the ')' at text[close] closes, or -1."""
    level = 0
    for k in range(close, -1, -1):
        if text[k] == ")":
            level += 1
        elif text[k] == "(":
            level -= 1
            if level == 0:
                return k
    return -1


def function_name(decl):
    """The name a declaration ending in a parameter list declares, or None
    when decl is not a function header."""
    depth = 0
    for ch in decl:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "=" and depth == 0:
            return None
    d = decl.rstrip()
    while d.endswith(")"):
        op = matching_open(d, len(d) - 1)
        if op < 0:
            return None
        m = IDENT_BEFORE.search(d[:op])
        if not m:
            return None
        if m.group(1) in ATTRIBUTES:  # trailing attributes: the list is before them
            d = d[: m.start()].rstrip()
            continue
        return None if m.group(1) in NOT_NAMES else m.group(1)
    return None


def functions(src):
    """[(first_line, name, lines)] for every function defined in src, with
    1-based line numbers; raises ValueError when the braces do not balance."""
    text = blank(src)
    line_of = []
    ln = 1
    for ch in text:
        line_of.append(ln)
        ln += ch == "\n"
    found = []
    depth = 0
    stack = []  # per open brace: True when it opened a transparent extern "C" block
    decl_start = 0
    open_fn = None  # (start index, name) of the function whose body is open
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                decl = text[decl_start:i]
                if re.fullmatch(r"\s*extern\s+\"\s*\"\s*", decl):
                    stack.append(True)
                    decl_start = i + 1
                    continue
                name = function_name(decl)
                if name:
                    first = decl_start + (len(decl) - len(decl.lstrip()))
                    open_fn = (first, name)
            stack.append(False)
            depth += 1
        elif ch == "}":
            if not stack:
                raise ValueError(f"line {line_of[i]}: '}}' without a '{{'")
            if stack.pop():
                decl_start = i + 1
                continue
            depth -= 1
            if depth == 0:
                if open_fn:
                    start_line = line_of[open_fn[0]]
                    found.append((start_line, open_fn[1], line_of[i] - start_line + 1))
                    open_fn = None
                decl_start = i + 1
        elif ch == ";" and depth == 0:
            decl_start = i + 1
    if stack:
        raise ValueError(f"{len(stack)} '{{' never closed")
    return found


def reason(lines, first_line):
    """The text after `long:` in the block comment that ends right above
    line first_line (1-based), or None."""
    k = first_line - 2
    if k < 0 or not lines[k].rstrip().endswith("*/"):
        return None
    comment = []
    while k >= 0:
        comment.insert(0, lines[k])
        if "/*" in lines[k]:
            break
        k -= 1
    text = " ".join(l.strip().lstrip("/*").rstrip("*/").strip() for l in comment)
    m = MARKER.search(text)
    if not m:
        return None
    return text[m.start() + len("long:"):].strip()


def sources(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs
            if d not in SKIP_DIRS and not d.startswith("build")
            and not os.path.exists(os.path.join(top, d, "CMakeCache.txt")))
        for f in sorted(files):
            if f.endswith(EXTENSIONS):
                yield os.path.join(top, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--limit", type=int, default=120, help="longest function without a reason (lines)")
    ap.add_argument("--quiet", action="store_true", help="print only the offenders")
    args = ap.parse_args(argv)
    root = os.path.normpath(args.root)
    offenders, excused, broken = [], [], []
    for path in sources(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as fh:
            src = fh.read()
        try:
            found = functions(src)
        except ValueError as e:
            broken.append(f"{rel}: braces do not balance ({e}); the file was not checked")
            continue
        lines = src.split("\n")
        for first, name, count in found:
            if count <= args.limit:
                continue
            why = reason(lines, first)
            row = f"{rel}:{first} {name} {count}"
            if why:
                excused.append(f"{row} (long: {why})")
            else:
                offenders.append(row)
    for row in broken + offenders:
        print(row)
    if not args.quiet:
        for row in excused:
            print(row)
        print(f"{len(offenders) + len(excused)} function(s) over {args.limit} lines: "
              f"{len(excused)} with a 'long:' comment, {len(offenders)} without")
    return 1 if offenders or broken else 0


if __name__ == "__main__":
    sys.exit(main())
