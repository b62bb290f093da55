#!/usr/bin/env python3
"""scripts/check_layers.py [ROOT] [--graph] - checks that the source tree's folders are layers.

Every quoted #include between folders must point down the order below (docs/architecture.md,
"Layers"); folders on one level do not include each other. Prints each include that points up or
sideways (file:line, the include, both layers) and exits 1; with none, prints the include graph
between folders (how many includes each edge has) and exits 0. --graph prints the graph either way.
"""
import os
import re
import sys

# Lowest first. A folder may include folders of lower levels only (and itself).
LAYERS = [
    ("kernels", 0),
    ("runtime/include", 0),  # the public headers (nccl.h, cclab/*.h)
    ("runtime/base", 1),
    ("runtime/bootstrap", 2),
    ("runtime/graph", 2),
    ("runtime/trace", 3),
    ("runtime/transport", 3),
    ("runtime/core", 4),
    ("runtime/backends", 5),
    ("sim", 5),  # the simulator; its backend/ folder is the next level
    ("sim/backend", 6),
    ("viz", 6),
    ("runtime/cli", 7),
]
LEVEL = dict(LAYERS)
# Include prefixes ("graph/topo.h") and the folder they name.
PREFIX = {
    "kernels": "kernels", "base": "runtime/base", "bootstrap": "runtime/bootstrap", "graph": "runtime/graph",
    "trace": "runtime/trace", "transport": "runtime/transport", "core": "runtime/core",
    "backends": "runtime/backends", "sim": "sim", "viz": "viz", "cclab": "runtime/include",
}
SOURCE = re.compile(r"\.(h|cc|cu|cuh|c)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """The layer folder of a source path relative to the root, or None (tests, bench, ...)."""
    best = None
    for folder, _ in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def target_layer(inc, src_dir):
    first = inc.split("/", 1)[0]
    if "/" in inc and first in PREFIX:
        if first == "sim" and inc.startswith("sim/backend/"):
            return "sim/backend"
        return PREFIX[first]
    if inc == "nccl.h":
        return "runtime/include"
    return layer_of(os.path.normpath(os.path.join(src_dir, inc)))  # relative to the including file


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    show_graph = "--graph" in sys.argv
    edges = {}
    bad = []
    for top in ("kernels", "runtime", "sim", "viz"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not SOURCE.search(name):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                src = layer_of(rel)
                if src is None:
                    continue
                with open(full, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dst = target_layer(m.group(1), os.path.dirname(rel))
                        if dst is None or dst == src:
                            continue
                        edges[(src, dst)] = edges.get((src, dst), 0) + 1
                        if LEVEL[dst] >= LEVEL[src]:
                            bad.append(f"{rel}:{lineno}: includes \"{m.group(1)}\": {src} (level {LEVEL[src]}) "
                                       f"may include only lower levels, and {dst} is level {LEVEL[dst]}")
    if not edges:
        print(f"check_layers: no sources under {root}", file=sys.stderr)
        return 2
    if show_graph or not bad:
        print("# includes between folders (from -> to: count), lowest layer last")
        for (a, b), n in sorted(edges.items(), key=lambda e: (-LEVEL[e[0][0]], e[0][0], -LEVEL[e[0][1]], e[0][1])):
            print(f"{a:20s} -> {b:20s} {n:4d}")
    if bad:
        print("check_layers: includes that point up or sideways:", file=sys.stderr)
        for b in bad:
            print("  " + b, file=sys.stderr)
        return 1
    print(f"check_layers: {sum(edges.values())} includes between {len({f for e in edges for f in e})} folders, "
          "all pointing down (no cycle)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
