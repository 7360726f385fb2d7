"""bench_args.py - the command line every daemon benchmark shares: the
binaries it drives (lcnd, lcnctl, the bench_http_poll poller) and the
output directory. Imported by bench_daemon.py, bench_front.py and
bench_cluster.py (they sit next to it in tools/)."""

import argparse


def daemon_bench_parser(doc, options=()):
    """An ArgumentParser described by the first line of doc, with --lcnd,
    --lcnctl, --poller and --out (all required), then the benchmark's own
    options: (flag, type, default) rows, a default of None making the option
    required."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    for flag in ("--lcnd", "--lcnctl", "--poller", "--out"):
        ap.add_argument(flag, required=True)
    for flag, kind, default in options:
        if default is None:
            ap.add_argument(flag, type=kind, required=True)
        else:
            ap.add_argument(flag, type=kind, default=default)
    return ap
