#!/usr/bin/env python3
"""Raw benchmark files out of the source tree: one compressed archive per round.

A round is one directory under bench/results/; a folder there that holds no
manifest itself but whose subfolders do (gpu-20261129, gpu-20261201, ...)
groups rounds, and each of its subfolders is a round. In the tree a round
keeps what a reader looks at first and what the docs cite:

  * manifests (manifest*.json, and bench_eval.json, which is its own manifest);
  * summary tables: *.md (report.md, summary.md, README.md, ...), summary*
    and solver-summary* tables (.txt, .csv, .json) at the round's top level,
    rate.json and results.json;
  * the oracle's re-check of the round's layouts (check*.txt at the top level)
    and an acceptance round's final layouts (layouts/<graph>.s<seed>.json, the
    input format: small, and anyone can re-check every K with them);
  * every file that docs/*.md or README.md cites by path (pack also takes a
    cited file back out of the archive when a doc starts citing it).

Everything else (runs/ directories, per-run JSON, coordinates and run layouts,
logs, traces, raw samples, the sweep configurations' own manifests,
summaries and report.md: anything below the round's top level but its
layouts/) goes into ROUND/raw.tar.xz, member names relative to the round.
The archive is deterministic (sorted members, fixed owner and time), so
packing the same files twice gives the same bytes. `pack` is re-runnable: a
round already packed is left alone, files added to a packed round are merged
into its archive (a member whose bytes would change is refused), and an
older runs.tgz in a round is merged too and removed.

usage:
  results_archive.py pack ROUND...         pack rounds (re-runnable)
  results_archive.py pack --all [ROOT]     every round under ROOT (bench/results)
  results_archive.py list ROUND            the archive's members
  results_archive.py extract ROUND [DEST]  unpack the archive (into ROUND by default)
  results_archive.py cat PATH              one file, from the tree or its round's archive
  results_archive.py check-citations       every results path the docs cite exists

Readers of old rounds import this module (it sits next to them in tools/):
glob(), exists(), isdir(), listdir(), read_bytes() and open_text() see an
archived file at the path it had before it was packed.

Python 3 standard library only.
"""
import fnmatch
import glob as _glob
import io
import os
import re
import sys
import tarfile

ARCHIVE = "raw.tar.xz"
LEGACY = ("runs.tgz",)  # archives written before this tool, merged by pack
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "bench", "results")

# ---------------------------------------------------------------------------
# Reading: archived members at their old paths.

_cache = {}


def _norm(p):
    return os.path.normpath(os.path.abspath(p))


def _archives_in(d):
    return [os.path.join(d, a) for a in (ARCHIVE,) + LEGACY if os.path.isfile(os.path.join(d, a))]


def _members(archive):
    """{member name: bytes} of one archive, read once per process."""
    key = (archive, os.stat(archive).st_mtime_ns)
    if key not in _cache:
        out = {}
        with tarfile.open(archive, "r:*") as t:
            for m in t:
                if m.isfile():
                    name = os.path.normpath(m.name)
                    out[name] = t.extractfile(m).read()
        _cache[key] = out
    return _cache[key]


def _round_archives(path):
    """(round dir, archive) pairs for every archive in path's directory or above."""
    d = _norm(path)
    out = []
    while True:
        for a in _archives_in(d):
            out.append((d, a))
        up = os.path.dirname(d)
        if up == d:
            return out
        d = up


def _archived(path):
    """The bytes of path from its round's archive, or None."""
    p = _norm(path)
    for rnd, a in _round_archives(os.path.dirname(p)):
        data = _members(a).get(os.path.relpath(p, rnd))
        if data is not None:
            return data
    return None


def exists(path):
    return os.path.exists(path) or _archived(path) is not None or isdir(path)


def isdir(path):
    if os.path.isdir(path):
        return True
    p = _norm(path)
    for rnd, a in _round_archives(os.path.dirname(p)):
        pre = os.path.relpath(p, rnd) + os.sep
        if any(n.startswith(pre) for n in _members(a)):
            return True
    return False


def read_bytes(path):
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    data = _archived(path)
    if data is None:
        raise FileNotFoundError(2, "no such file, in the tree or an archive", path)
    return data


def open_text(path):
    """A text file object for path, from the tree or its round's archive."""
    if os.path.isfile(path):
        return open(path)
    return io.StringIO(read_bytes(path).decode())


def _split(p):
    return [c for c in p.split(os.sep) if c]


def glob(pattern):
    """glob.glob(pattern) plus the archived files it would have matched, sorted;
    each archived match is spelled the way the pattern is (relative or not)."""
    found = set(_glob.glob(pattern))
    pat = _norm(pattern)
    parts = _split(pat)
    fixed = []
    for c in parts:
        if _glob.has_magic(c):
            break
        fixed.append(c)
    base = os.sep + os.sep.join(fixed)
    rel_prefix = None if os.path.isabs(pattern) else os.getcwd()
    for rnd, a in _round_archives(base):
        for name in _members(a):
            full = os.path.join(rnd, name)
            comps = _split(full)
            if len(comps) == len(parts) and all(fnmatch.fnmatchcase(c, q) for c, q in zip(comps, parts)):
                found.add(os.path.relpath(full, rel_prefix) if rel_prefix else full)
    return sorted(found)


def listdir(path):
    """Names in directory path, in the tree and in its round's archive."""
    names = set(os.listdir(path)) if os.path.isdir(path) else set()
    p = _norm(path)
    for rnd, a in _round_archives(p):
        rel = os.path.relpath(p, rnd)
        pre = "" if rel == "." else rel + os.sep
        for n in _members(a):
            if n.startswith(pre):
                names.add(n[len(pre):].split(os.sep)[0])
    if not names and not isdir(path):
        raise FileNotFoundError(2, "no such directory", path)
    return sorted(names)


# ---------------------------------------------------------------------------
# Which files stay in the tree.

TOP_KEEP = re.compile(r"^(manifest[^/]*\.json|bench_eval\.json|rate\.json|results\.json|"
                      r"(solver-)?summary[^/]*\.(txt|csv|json)|check[^/]*\.txt|[^/]*\.md)$")
# an acceptance round's final layouts (input format, small): anyone can re-check its K
LAYOUT_KEEP = re.compile(r"^layouts/[^/]+\.json$")


def keeps(rel, cited=frozenset()):
    """Whether the file at rel (relative to its round) stays in the tree."""
    parts = rel.split("/")
    if rel in cited:
        return True
    if "runs" in parts[:-1]:
        return False
    if len(parts) == 1:
        return bool(TOP_KEEP.match(parts[0]))
    if LAYOUT_KEEP.match(rel):
        return True
    return False  # deeper files (a sweep configuration's report.md, ...) unless cited


def rounds(root=RESULTS):
    """Every round directory under root, sorted."""
    out = []
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        if not os.path.isdir(d):
            continue
        subs = [os.path.join(d, s) for s in sorted(os.listdir(d)) if os.path.isdir(os.path.join(d, s))]
        has_manifest = any(fnmatch.fnmatch(f, "manifest*.json") for f in os.listdir(d))
        if not has_manifest and _archives_in(d) == [] and subs and any(_has_manifest(s) for s in subs):
            out += subs
        else:
            out.append(d)
    return out


def _has_manifest(d):
    for _, _, files in os.walk(d):
        if any(fnmatch.fnmatch(f, "manifest*.json") for f in files) or ARCHIVE in files:
            return True
    return False


# ---------------------------------------------------------------------------
# Citations: paths under bench/results/ that docs/*.md and README.md name.

TOKEN = re.compile(r"[A-Za-z0-9_.*?\[\]-]+(?:/[A-Za-z0-9_.*?\[\]-]*)+")


def doc_files(repo=REPO):
    return sorted(_glob.glob(os.path.join(repo, "docs", "*.md"))) + [os.path.join(repo, "README.md")]


def _anchors(root):
    """{directory name: [paths]} for the folders one and two levels under root."""
    out = {}
    for a in sorted(os.listdir(root)):
        pa = os.path.join(root, a)
        if not os.path.isdir(pa):
            continue
        out.setdefault(a, []).append(pa)
        for b in sorted(os.listdir(pa)):
            if os.path.isdir(os.path.join(pa, b)):
                out.setdefault(b, []).append(os.path.join(pa, b))
    return out


def citations(docs=None, root=RESULTS):
    """[(doc, line, token, [candidate paths])]: each path a doc cites under root.

    A token counts when it starts with bench/results/ (or results/) or with the
    name of a folder one or two levels under root (docs often name a round's
    file from its round: `solver-8159714/tests.log`). Placeholders (gpu-DATE,
    cpu-...) name no folder and are not citations."""
    anchors = _anchors(root)
    out = []
    for doc in docs or doc_files():
        with open(doc) as f:
            for ln, line in enumerate(f, 1):
                for tok in TOKEN.findall(line):
                    if "..." in tok:
                        continue
                    tok = tok.rstrip(".")
                    rest = None
                    for pre in ("bench/results/", "results/"):
                        if tok.startswith(pre):
                            rest = tok[len(pre):]
                            break
                    if rest is not None:
                        cands = [os.path.join(root, rest)]
                        first = rest.split("/")[0]
                        if "..." in first or first.isupper() or re.search(r"-[A-Z]{3,}", first):
                            continue
                    else:
                        first, _, tail = tok.partition("/")
                        if first not in anchors or first in ("runs", "layouts"):
                            continue
                        cands = [os.path.join(p, tail) for p in anchors[first]]
                    out.append((doc, ln, tok, [c.rstrip("/") for c in cands]))
    return out


def cited_files(rnd, root=RESULTS, docs=None):
    """Paths relative to round rnd of the files the docs cite in it."""
    rnd = _norm(rnd)
    out = set()
    for _, _, _, cands in citations(docs, root):
        for c in cands:
            for p in glob(c):
                p = _norm(p)
                if p.startswith(rnd + os.sep) and not os.path.isdir(p):
                    out.add(os.path.relpath(p, rnd).replace(os.sep, "/"))
    return out


def check_citations(root=RESULTS, docs=None):
    """Messages for cited paths that exist neither in the tree nor in an archive.

    Cited files must be in the tree (pack keeps them); a cited directory may
    live in its round's archive (the readers open it there)."""
    bad = []
    for doc, ln, tok, cands in citations(docs, root):
        ok = False
        for c in cands:
            if any(os.path.exists(h) for h in _glob.glob(c)) or (not _glob.has_magic(c) and isdir(c)):
                ok = True
        if not ok:
            bad.append(f"{os.path.relpath(doc, REPO)}:{ln}: '{tok}' names nothing under {os.path.relpath(root, REPO)}")
    return bad


# ---------------------------------------------------------------------------
# Packing.


def _tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            t.addfile(info, io.BytesIO(members[name]))
    return buf.getvalue()


def _write_atomic(path, data):
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pack(rnd, root=RESULTS, log=print, docs=None):
    """Moves round rnd's raw files into rnd/raw.tar.xz. Returns the number of
    files moved; raises ValueError when a file would change an archived member."""
    rnd = _norm(rnd)
    cited = cited_files(rnd, root, docs) if os.path.isdir(root) else set()
    archive = os.path.join(rnd, ARCHIVE)
    legacy = [a for a in _archives_in(rnd) if a != archive]
    members = dict(_members(archive)) if os.path.exists(archive) else {}
    for a in legacy:
        for name, data in _members(a).items():
            if members.setdefault(name, data) != data:
                raise ValueError(f"{a}: member '{name}' differs from the one in {ARCHIVE}")
    moved = []
    for d, dirs, files in os.walk(rnd):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, rnd).replace(os.sep, "/")
            if p == archive or p in legacy or keeps(rel, cited):
                continue
            with open(p, "rb") as fh:
                data = fh.read()
            if members.setdefault(rel, data) != data:
                raise ValueError(f"{p}: differs from the member '{rel}' already in {archive}")
            moved.append(p)
    restored = []
    for rel in sorted(cited):
        p = os.path.join(rnd, rel)
        if not os.path.exists(p) and rel in members:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            _write_atomic(p, members[rel])
            restored.append(rel)
    if restored:
        log(f"{os.path.relpath(rnd)}: {len(restored)} cited files back in the tree: {', '.join(restored)}")
    if not moved and not legacy:
        return 0
    data = _tar_bytes(members)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as t:  # read back before deleting
        back = {m.name: t.extractfile(m).read() for m in t if m.isfile()}
    if back != members:
        raise ValueError(f"{archive}: the archive does not read back")
    _write_atomic(archive, data)
    for p in moved + legacy:
        os.unlink(p)
    for d, dirs, files in sorted(os.walk(rnd, topdown=False), key=lambda w: -len(w[0])):
        if d != rnd and not os.listdir(d):
            os.rmdir(d)
    log(f"{os.path.relpath(rnd)}: {len(moved)} files into {ARCHIVE} ({len(members)} members, "
        f"{len(data)} bytes){', merged ' + ', '.join(os.path.basename(a) for a in legacy) if legacy else ''}")
    return len(moved)


def extract(rnd, dest=None):
    dest = dest or rnd
    for name, data in _members(os.path.join(rnd, ARCHIVE)).items():
        p = os.path.join(dest, name)
        if os.path.exists(p):
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    cmd, args = argv[1], argv[2:]
    if cmd == "pack":
        if args[:1] == ["--all"]:
            root = args[1] if len(args) > 1 else RESULTS
            todo = rounds(root)
        else:
            root, todo = RESULTS, args
        if not todo:
            print("results_archive: pack: no rounds", file=sys.stderr)
            return 2
        try:
            n = sum(pack(r, root) for r in todo)
        except ValueError as e:
            print(f"results_archive: {e}", file=sys.stderr)
            return 1
        print(f"{n} files archived in {len(todo)} rounds")
        return 0
    if cmd == "list" and len(args) == 1:
        for name in sorted(_members(os.path.join(args[0], ARCHIVE))):
            print(name)
        return 0
    if cmd == "extract" and len(args) in (1, 2):
        extract(*args)
        return 0
    if cmd == "cat" and len(args) == 1:
        sys.stdout.buffer.write(read_bytes(args[0]))
        return 0
    if cmd == "check-citations" and not args:
        bad = check_citations()
        for b in bad:
            print(b)
        print(f"{len(citations())} citations of bench/results in docs/*.md and README.md, {len(bad)} missing")
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
