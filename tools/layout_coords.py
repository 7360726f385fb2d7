#!/usr/bin/env python3
"""Store or restore a layout as coordinates only.

Benchmark results keep the coordinates a solver produced, not the instance
(the instances are public data the repository must not copy). A coords file
is {"instance": NAME, "instance_sha256": HEX, "x": [...], "y": [...]} with
nodes in id order.

  layout_coords.py extract LAYOUT.json INSTANCE.json OUT.coords.json
  layout_coords.py restore COORDS.json INSTANCE.json OUT.layout.json
      (refuses when the instance's sha256 differs from the recorded one)
"""
import json
import os
import sys

from lcntools import sha256
import results_archive as ra  # coords of packed rounds live in ROUND/raw.tar.xz


def extract(layout, instance, out):
    d = json.load(open(layout))
    nodes = sorted(d["nodes"], key=lambda v: v["id"])
    name = os.path.basename(instance)
    if name.endswith(".json"):
        name = name[:-5]
    json.dump({"instance": name, "instance_sha256": sha256(instance),
               "x": [v["x"] for v in nodes], "y": [v["y"] for v in nodes]}, open(out, "w"))


def restore(coords, instance, out):
    c = json.load(ra.open_text(coords))
    if sha256(instance) != c["instance_sha256"]:
        sys.exit(f"{instance}: sha256 differs from the one recorded in {coords}")
    d = json.load(open(instance))
    for v in d["nodes"]:
        v["x"] = c["x"][v["id"]]
        v["y"] = c["y"][v["id"]]
    json.dump(d, open(out, "w"))


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("extract", "restore"):
        sys.exit(__doc__)
    (extract if sys.argv[1] == "extract" else restore)(*sys.argv[2:])
