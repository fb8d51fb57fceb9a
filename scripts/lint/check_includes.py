#!/usr/bin/env python3
"""Fails (exit 1) on an include that points up the layer order or sideways between experiments, and on any
include cycle between iclab's own files. Run by the build (CMake target check_includes) and by ctest.

Layers, lowest first; a file may include its own folder and any lower layer, never a higher one:
  framework/core < framework/config, framework/io < framework/text < framework/nn, framework/tasks < framework/model
  < framework/train < framework/icl < framework/checkpoint < framework/run < framework/workflow < experiments/<name>
  < experiments/registry < experiments/cli < python (the Python module's C++, python/src/), tests
framework/checkpoint is the checkpoint format (parameters in and out of HDF5), framework/run the training loops and the
experiment interface, framework/workflow the research workflow over runs (sweep, launch, locks, collect, claims pooling).
An experiment (experiments/<name>/) includes no other experiment, nor the registry or the CLI.
"""
import os
import re
import sys

USAGE = "usage: check_includes.py [SOURCE_DIR]   (exit 1: a violation, listed; 2: bad arguments)"
if len(sys.argv) > 2 or (len(sys.argv) == 2 and (sys.argv[1].startswith("-") or not os.path.isdir(sys.argv[1]))):
    print(f"check_includes: not a source folder: {' '.join(sys.argv[1:])}\n{USAGE}", file=sys.stderr)
    sys.exit(2)
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
RANKS = {
    "framework/core": 0,
    "framework/config": 1, "framework/io": 1,
    "framework/text": 1.5,
    "framework/nn": 2, "framework/tasks": 2,
    "framework/model": 3,
    "framework/train": 4,
    "framework/icl": 5,
    "framework/checkpoint": 5.5,
    "framework/run": 6,
    "framework/workflow": 6.5,
    "experiments/<name>": 7,
    "experiments/registry": 8,
    "experiments/cli": 9,
    "python": 9.5,
    "tests": 10,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """'framework/nn/gemm.hpp' -> ('framework/nn', None); 'experiments/x/y.cpp' -> ('experiments/<name>', 'x')."""
    parts = path.split("/")
    if parts[0] == "framework" and len(parts) >= 3:
        return "/".join(parts[:2]), None
    if parts[0] == "experiments":
        if len(parts) == 2 and parts[1].startswith("registry."):
            return "experiments/registry", None
        if parts[1] == "cli":
            return "experiments/cli", None
        if len(parts) >= 3:
            return "experiments/<name>", parts[1]
    if parts[0] == "tests":
        return "tests", None
    if parts[0] == "python":
        return "python", None
    return None, None


def main():
    files = []
    for top in ("framework", "experiments", "python", "tests"):
        for folder, subfolders, names in os.walk(os.path.join(ROOT, top)):
            subfolders[:] = [d for d in subfolders if os.path.relpath(os.path.join(folder, d), ROOT) != "tests/data"]
            for name in names:
                if name.endswith((".hpp", ".cpp", ".h")):
                    files.append(os.path.relpath(os.path.join(folder, name), ROOT))
    problems = []
    graph = {}
    for path in sorted(files):
        layer, experiment = layer_of(path)
        if layer is None:
            problems.append(f"{path}: not in a known layer (add it to scripts/lint/check_includes.py)")
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        graph[path] = []
        for target in INCLUDE.findall(text):
            if not os.path.exists(os.path.join(ROOT, target)):
                continue  # a system or generated header
            graph[path].append(target)
            target_layer, target_experiment = layer_of(target)
            if target_layer is None:
                problems.append(f"{path}: includes {target}, which is in no known layer")
            elif RANKS[target_layer] > RANKS[layer]:
                problems.append(f"{path} ({layer}) includes {target} ({target_layer}): an upward include")
            elif layer == target_layer == "experiments/<name>" and experiment != target_experiment:
                problems.append(f"{path}: experiment {experiment} includes experiment {target_experiment} ({target}); "
                                "share the code through a service in framework/run instead")
            elif RANKS[target_layer] == RANKS[layer] and target_layer != layer:
                problems.append(f"{path} ({layer}) includes {target} ({target_layer}): layers of the same rank are independent")
    # Include cycles between files (a .cpp and its own .hpp never form one: headers do not include .cpp files).
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                problems.append("include cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    for p in problems:
        print("check_includes: " + p, file=sys.stderr)
    if problems:
        return 1
    print(f"check_includes: {len(graph)} files, no upward or sideways include, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
