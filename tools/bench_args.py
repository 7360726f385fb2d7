"""bench_args.py - the command line every daemon benchmark shares: the
binaries it drives (lcnd, lcnctl, the bench_http_poll poller) and the
output directory. Imported by bench_daemon.py, bench_front.py and
bench_cluster.py (they sit next to it in tools/)."""

import argparse


def daemon_bench_parser(doc):
    """An ArgumentParser described by the first line of doc, with --lcnd,
    --lcnctl, --poller and --out (all required)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--lcnd", required=True)
    ap.add_argument("--lcnctl", required=True)
    ap.add_argument("--poller", required=True)
    ap.add_argument("--out", required=True)
    return ap
