"""bench_args.py - the command line every daemon benchmark shares: the
binaries it drives (lcnd, lcnctl, the bench_http_poll poller), the output
directory, the number of pollers, and the note a tool that writes a
manifest keeps in it. Imported by bench_daemon.py, bench_front.py and
bench_cluster.py (they sit next to it in tools/)."""

import argparse


def daemon_bench_parser(doc, note=False):
    """An ArgumentParser described by the first line of doc, with --lcnd,
    --lcnctl, --poller and --out (all required), --pollers and, with note,
    --note."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--lcnd", required=True)
    ap.add_argument("--lcnctl", required=True)
    ap.add_argument("--poller", required=True)
    ap.add_argument("--out", required=True)
    # bench_daemon.py called it --clients (bench_http_poll's word): both work
    ap.add_argument("--pollers", "--clients", type=int, default=50,
                    help="concurrent GET pollers, one connection each (bench_http_poll --clients)")
    if note:
        ap.add_argument("--note", default="",
                        help="free text kept in the manifest (the machine's load, say)")
    return ap
