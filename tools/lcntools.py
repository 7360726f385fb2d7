"""Helpers the scripts in tools/ share (the bench drivers and the oracle
check runner): import it with tools/ on sys.path."""

import hashlib


def sha256(path):
    """Hex SHA-256 of the file at path, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
