#!/usr/bin/env python3
"""layers.py: the call graph between plaunch's source files and folders, from the symbols of the built objects.

Usage: scripts/layers.py BUILD_DIR [--graph]   (from the repository root)
Prints every cycle between files (two files that call each other, directly or around a ring) and between
folders, and exits 1 when there is one; --graph prints the folder graph (who calls whom) as well.
"""
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRVWGSC":
            defined.add(name)
    return defined, undefined


def sccs(graph):
    """Tarjan's strongly connected components; returns those with more than one node."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.join(sys.argv[1], "obj")
    files = {}
    for top in ("common", "launcher", "worker"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                src = os.path.relpath(os.path.join(d, n), root)[:-2] + ".c"
                # objects of sources that were moved or removed since they were built do not count
                if n.endswith(".o") and os.path.exists(src):
                    files[src] = symbols(os.path.join(d, n))
    owner = {}
    for src, (defined, _) in files.items():
        for s in defined:
            owner.setdefault(s, src)
    graph = {src: set() for src in files}
    for src, (_, undefined) in files.items():
        for s in undefined:
            dst = owner.get(s)
            if dst and dst != src:
                graph[src].add(dst)
    folders = {}
    for src, dsts in graph.items():
        a = os.path.dirname(src)
        folders.setdefault(a, set())
        for dst in dsts:
            b = os.path.dirname(dst)
            if a != b:
                folders[a].add(b)
    bad = 0
    for comp in sccs(graph):
        bad = 1
        print("file cycle: " + " <-> ".join(comp))
    for comp in sccs(folders):
        bad = 1
        print("folder cycle: " + " <-> ".join(comp))
    if "--graph" in sys.argv:
        for a in sorted(folders):
            print(f"{a} -> {', '.join(sorted(folders[a])) or '(nothing)'}")
    if not bad:
        print(f"no cycles among {len(graph)} files in {len(folders)} folders")
    return bad


if __name__ == "__main__":
    sys.exit(main())
