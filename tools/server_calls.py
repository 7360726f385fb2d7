#!/usr/bin/env python3
"""List the calls between the daemon's modules and fail on a circle.

Each server/*.c file is a module. A module uses another when it names a
function defined (not static) in the other file: a call, or a function
passed as a callback (the route table, the hooks serve.c wires). The scan is
lexical: comments, strings and character literals are removed, a function
definition is an identifier at brace depth 0 followed by a parenthesised
list and a '{', and every other identifier that names a function of another
file is a use. A file's own definitions (static ones included) shadow
another file's. Headers are not modules (their static inline helpers are
part of the module whose header they are).

Prints one line per module with the modules it uses and the functions it
names there, then the circles among modules if any (strongly connected
components of the graph). Exits 1 when there is a circle, 0 otherwise.
docs/DAEMON.md describes the layers this checks (issue 16: no module calls
up into the one that wires it).

    python3 tools/server_calls.py [--root DIR] [--dir server] [--quiet] [--doc docs/DAEMON.md]
"""
import argparse
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {
    "if", "for", "while", "switch", "return", "sizeof", "do", "else", "case",
    "_Static_assert", "defined", "__attribute__", "typeof", "_Alignof",
}


def strip(src):
    """src without comments, string and character literals, and
    preprocessor lines (a line continued with a backslash included)."""
    out = []
    i, n = 0, len(src)
    at_line_start = True
    while i < n:
        c = src[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            while i < n and src[i] != "\n":
                if src[i] == "\\" and i + 1 < n and src[i + 1] == "\n":
                    i += 2
                    continue
                i += 1
            continue
        at_line_start = False
        if src.startswith("//", i):
            while i < n and src[i] != "\n":
                i += 1
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        if c == "\n":
            at_line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def scan(text):
    """(defined, static_defined, used): function names defined in text (all,
    and those declared static) and every identifier used outside a
    definition's name."""
    defined, static, used = set(), set(), []
    depth = 0
    toks = re.finditer(r"[A-Za-z_]\w*|[{}()\[\];,=]", text)
    toks = [(m.group(0), m.start()) for m in toks]
    decl_start = 0  # index of the first token of the current top-level declaration
    k = 0
    while k < len(toks):
        t, _ = toks[k]
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                decl_start = k + 1
        elif t == ";" and depth == 0:
            decl_start = k + 1
        elif IDENT.fullmatch(t):
            is_def = False
            if depth == 0 and k + 1 < len(toks) and toks[k + 1][0] == "(":
                # find the matching ')' and look for '{' right after it
                level, m = 0, k + 1
                while m < len(toks):
                    if toks[m][0] == "(":
                        level += 1
                    elif toks[m][0] == ")":
                        level -= 1
                        if level == 0:
                            break
                    m += 1
                if m + 1 < len(toks) and toks[m + 1][0] == "{" and t not in KEYWORDS:
                    is_def = True
                    defined.add(t)
                    if any(x[0] == "static" for x in toks[decl_start:k]):
                        static.add(t)
            if not is_def and t not in KEYWORDS:
                used.append(t)
        k += 1
    return defined, static, used


def graph(src_dir):
    files = sorted(f for f in os.listdir(src_dir) if f.endswith(".c"))
    info = {}
    for f in files:
        with open(os.path.join(src_dir, f), encoding="utf-8") as fh:
            info[f[:-2]] = scan(strip(fh.read()))
    exported = {}
    for mod, (defined, static, _) in info.items():
        for name in defined - static:
            exported.setdefault(name, mod)
    edges = {mod: {} for mod in info}
    for mod, (defined, _, used) in info.items():
        for name in used:
            owner = exported.get(name)
            if owner is None or owner == mod or name in defined:
                continue
            edges[mod].setdefault(owner, set()).add(name)
    return edges


def circles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def short_map(edges):
    """The short form docs/DAEMON.md shows: one line per module that uses
    another (module -> modules), then the modules that use none."""
    lines = [f"{m} -> {', '.join(sorted(edges[m]))}" for m in sorted(edges) if edges[m]]
    none = sorted(m for m in edges if not edges[m])
    lines.append(f"({', '.join(none)} use no other module)")
    return lines


def doc_map(path):
    """The fenced block after "Its output today, in short" in path."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"Its output today,\s+in\s+short", text)
    start = text.find("```\n", m.end()) if m else -1
    end = text.find("```", start + 4) if start >= 0 else -1
    if end < 0:
        return None
    return text[start + 4:end].strip().splitlines()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--dir", default="server", help="directory of the modules, under root")
    ap.add_argument("--quiet", action="store_true", help="print only the circles")
    ap.add_argument("--doc", help="a file whose module map (the block after \"Its output "
                    "today, in short\") must equal this scan's short form; relative to root")
    args = ap.parse_args(argv)
    edges = graph(os.path.join(args.root, args.dir))
    if args.doc:
        want, have = short_map(edges), doc_map(os.path.join(args.root, args.doc))
        if have != want:
            print(f"{args.doc}: the module map differs from the code's; it should read:")
            print("\n".join(want))
            return 1
    if not args.quiet:
        print(f"cross-file calls between {args.dir}/ modules (module -> module: functions)")
        for mod in sorted(edges):
            if not edges[mod]:
                print(f"{mod}: (none)")
                continue
            print(f"{mod}:")
            for dep in sorted(edges[mod]):
                names = sorted(edges[mod][dep])
                print(f"    -> {dep}: {', '.join(names)}")
    found = circles(edges)
    if not found:
        print("no circle among modules")
        return 0
    for comp in found:
        detail = []
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    detail.append(f"{a} -> {b} ({', '.join(sorted(edges[a][b]))})")
        print("circle: " + " <-> ".join(comp) + ": " + "; ".join(detail))
    return 1


if __name__ == "__main__":
    sys.exit(main())
