#!/usr/bin/env python3
"""layers.py: the dependency graph between plaunch's source files and folders, checked against the layer map.

Usage: scripts/layers.py BUILD_DIR [--graph]   (from the root of a source tree built into BUILD_DIR)

It reads three kinds of edge:
  include   a source or header's `#include "..."`, which names the header by its path from the source root
            ("launcher/coord/verdict/coord_verdict.h"; a generated header by its schema's path:
            "common/wire/wire.pb-c.h"), to the header's folder; the public header is <plaunch.h> (worker/);
  symbol    an object's undefined symbol that another folder's object defines (nm of BUILD_DIR/obj);
  callback  a function stored into another folder's struct field or passed to another folder's function (read
            from the sources: a function name used other than in a call): the receiving folder calls it later.
and fails (exit 1) on
  - a cycle between folders (include and symbol edges, and callbacks that are not an owner's registration);
    a cycle between files through symbols; a cycle between headers through their includes;
  - an edge that goes against the layer map of docs/design.md ("The map": a folder may depend only on folders
    listed below it); a callback is fine when the folder above registers its own function into the folder
    below (the lower folder calls up only through what it was handed), or when it goes down the map;
  - an edge that breaks one of RULES below, whatever the map says;
  - an include by a bare name or a relative path (the folder of every dependency is visible at the include);
  - a folder README.md whose "May call:" line does not list exactly the folders that folder's code depends on;
  - a folder of more than MAX_SOURCES sources, a private header (*_priv.h) of more than MAX_PRIV_LINES lines;
  - an entry of EXCEPTIONS or SIZE_EXCEPTIONS that no longer matches (remove it: the violation is gone).
Edges listed in EXCEPTIONS (known violations, each with its reason and the issue item that removes it) are
reported with --graph but do not fail the check, so it passes today and fails on any new violation.
--graph prints the folder graph with each edge's kinds.
"""
import os
import re
import subprocess
import sys

ROOTS = ("common", "launcher", "worker")
SOURCE_EXT = (".c", ".h", ".cu")

# Rules of the architecture (docs/design.md), held whatever the map's order says: (from, to, why). A folder
# matches a rule's folder when it is that folder or below it.
RULES = [
    ("common", "launcher", "common/ includes nothing of launcher/"),
    ("common", "worker", "common/ includes nothing of worker/"),
    ("launcher/job", "launcher/supervisor", "the job's configuration includes no supervisor code"),
    ("launcher/job", "launcher/monitor", "the job's configuration includes no monitor code"),
    ("launcher/job", "launcher/agent", "the job's configuration includes no agent code"),
    ("launcher/opts", "launcher/supervisor", "the job's configuration includes no supervisor code"),
    ("launcher/opts", "launcher/monitor", "the job's configuration includes no monitor code"),
    ("launcher/opts", "launcher/agent", "the job's configuration includes no agent code"),
    ("launcher/coord", "launcher/supervisor", "the coordinator includes no supervisor code"),
    ("launcher/coord", "launcher/agent", "the coordinator includes no agent code (it talks to agents by messages)"),
    ("launcher/monitor", "launcher/coord", "monitor/ includes no coordinator code"),
    ("launcher/monitor", "launcher/supervisor", "monitor/ includes no supervisor code"),
    ("launcher/hang", "launcher/coord", "hang/ includes no coordinator code"),
    ("launcher/hang", "launcher/supervisor", "hang/ includes no supervisor code"),
    ("launcher/relay", "launcher/agent", "the relay includes no agent code"),
]

# Known violations: (file name, kind, what it uses) -> (reason, what removes it). One table, nowhere else. The
# file is named without its folder, so that an entry follows a file that moves (file names are unique: checked).
EXCEPTIONS = {
}

# Sizes (docs/design.md): a folder names one concept, so it holds at most MAX_SOURCES sources (.c, .cu); a private
# header (*_priv.h) shared inside a folder stays under MAX_PRIV_LINES lines. Known excesses, as EXCEPTIONS above:
MAX_SOURCES, MAX_PRIV_LINES = 14, 150
SIZE_EXCEPTIONS = {
}

C_KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "case", "do", "else", "typeof", "__typeof__",
              "_Alignof", "alignof", "defined"}


def under(folder, prefix):
    return folder == prefix or folder.startswith(prefix + "/")


def source_files():
    out = []
    for top in ROOTS:
        for d, dirs, names in os.walk(top):
            dirs.sort()
            for n in sorted(names):
                if n.endswith(SOURCE_EXT):
                    out.append(os.path.join(d, n))
    return out


def strip_c(text):
    """The text with comments, string and character literals blanked (line structure kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


PUBLIC_HEADER = ("plaunch.h", "worker/plaunch.h")  # <plaunch.h>, as its users (and worker/examples/) include it


def includes(path):
    """[(line, name)] of the file's quoted includes, and of <plaunch.h> (as its path in the tree)."""
    out = []
    with open(path, errors="replace") as f:
        for ln, line in enumerate(f, 1):
            m = re.match(r'\s*#\s*include\s+(?:"([^"]+)"|<([^>]+)>)', line)
            if m and m.group(1):
                out.append((ln, m.group(1)))
            elif m and m.group(2) == PUBLIC_HEADER[0]:
                out.append((ln, PUBLIC_HEADER[1]))
    return out


def symbols(objs):
    """{object: (defined, undefined, functions)} from one nm run over every object."""
    out = {o: (set(), set(), set()) for o in objs}
    res = subprocess.run(["nm", "-P", "-A"] + objs, capture_output=True, text=True, check=True).stdout
    for line in res.splitlines():
        head, _, rest = line.partition(": ")
        parts = rest.split()
        if head not in out or len(parts) < 2:
            continue
        defined, undefined, funcs = out[head]
        name, kind = parts[0].split(".")[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRVWGSC":
            defined.add(name)
        if kind in "Tt":
            funcs.add(name)
    return out


def read_map(problems):
    """The folders of docs/design.md's map block, top first."""
    order = []
    try:
        text = open("docs/design.md").read()
    except OSError as e:
        problems.append(f"docs/design.md: {e.strerror}: the layer map is read from there")
        return order
    m = re.search(r"^## The map.*?$(.*?)^## ", text, re.S | re.M)
    for line in (m.group(1) if m else "").splitlines():
        f = re.match(r"    ((?:common|launcher|worker)(?:/[a-z0-9_]+)*)/\s", line)
        if f:
            order.append(f.group(1))
    if not order:
        problems.append("docs/design.md: no folder list under '## The map'")
    return order


def read_may_call(folder):
    """The folders a README's "May call:" line names (text in parentheses is a comment), or None."""
    try:
        text = open(os.path.join(folder, "README.md")).read()
    except OSError:
        return None
    m = re.search(r"^May call:(.*?)(?:\n\s*\n|\Z)", text, re.S | re.M)
    if not m:
        return "missing"
    body = m.group(1)
    while re.search(r"\([^()]*\)", body):
        body = re.sub(r"\([^()]*\)", " ", body)
    return {p.rstrip("/") for p in re.findall(r"\b(?:common|launcher|worker)(?:/[a-z0-9_]+)*/", body)}


def tokens(text):
    return re.findall(r"[A-Za-z_]\w*|->|\S", text)


def callbacks(src, text, funcs_here, global_owner, field_folders):
    """[(function name, receiver: ('field'|'call', name))] for functions used other than by a call in src."""
    toks = tokens(text)
    out = []
    for i, t in enumerate(toks):
        if t not in funcs_here and t not in global_owner:
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        prev = toks[i - 1] if i else ""
        if nxt == "(" or prev in (".", "->", "struct", "enum", "goto") or nxt == ":":
            continue
        j = i - 1
        while j >= 0 and toks[j] == "&":
            j -= 1
        if j >= 0 and toks[j] == "=" and j >= 2 and toks[j - 2] in (".", "->"):
            out.append((t, ("field", toks[j - 1])))
            continue
        if j >= 0 and toks[j] in (",", "("):
            depth, k = 0, j
            while k >= 0:
                if toks[k] in (")", "]", "}"):
                    depth += 1
                elif toks[k] in ("(", "[", "{"):
                    if depth == 0:
                        break
                    depth -= 1
                elif toks[k] == ";" and depth == 0:
                    k = -1
                    break
                k -= 1
            if k > 0 and toks[k] == "(" and re.match(r"[A-Za-z_]\w*$", toks[k - 1]) and \
                    toks[k - 1] not in C_KEYWORDS:
                out.append((t, ("call", toks[k - 1])))
    return out


def fn_pointer_fields(files, folder_of):
    """field name -> folders declaring a function-pointer member (or variable) of that name."""
    typedefs, decls = set(), []
    for f in files:
        text = strip_c(open(f, errors="replace").read())
        decls.append((f, text))
        typedefs.update(re.findall(r"typedef[^;]*?\(\s*\*\s*(\w+)\s*\)\s*\(", text))
    fields = {}
    for f, text in decls:
        names = re.findall(r"\(\s*\*\s*(\w+)\s*\)\s*\(", text)
        if typedefs:
            names += re.findall(r"\b(?:" + "|".join(sorted(typedefs)) + r")\s+\*?\s*(\w+)\s*[;,\[=]", text)
        for n in names:
            fields.setdefault(n, set()).add(folder_of[f])
    return fields


def sccs(graph):
    """Tarjan's strongly connected components; returns those with more than one node, or a node on itself."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


class Tree:
    """The sources, their folders and the edges found between folders: edges[(a, b)] = [(kind, file, what,
    excepted)]; used holds the exception keys that matched; problems what the checks found."""

    def __init__(self, build):
        self.build = build
        self.problems = []
        self.files = source_files()
        self.folder_of = {f: os.path.dirname(f) for f in self.files}
        self.folders = sorted(set(self.folder_of.values()))
        self.edges, self.used = {}, set()
        seen = {}
        for f in self.files:
            other = seen.setdefault(os.path.basename(f), f)
            if other != f:
                self.problems.append(f"{f} and {other}: two source files of one name (EXCEPTIONS name "
                                     f"files without their folder): rename one")

    def add(self, a, b, kind, f, what):
        key = (os.path.basename(f), kind, what)
        if key in EXCEPTIONS:
            self.used.add(key)
        self.edges.setdefault((a, b), []).append((kind, f, what, key in EXCEPTIONS))


def read_includes(t):
    """Include edges; returns the graph of headers including headers. An include names its header by its path from
    the source root (the build passes -I. and the generated headers' folder), so the folder of every dependency is
    visible where it is used: a bare name ("log.h") or a relative one ("../log.h") is refused, with the path to
    write instead."""
    gen_folder = {os.path.join(d, n[:-len(".proto")] + ".pb-c.h"): d for top in ROOTS for d, _, ns in os.walk(top)
                  for n in ns if n.endswith(".proto")}
    by_name = {}
    for f in t.files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    header_graph = {}
    for f in t.files:
        for ln, name in includes(f):
            if name in gen_folder:
                b = gen_folder[name]
            elif os.path.normpath(name) == name and name.split("/")[0] in ROOTS and os.path.isfile(name):
                b = t.folder_of.get(name, os.path.dirname(name))
                if f.endswith(".h") and name.endswith(".h"):
                    header_graph.setdefault(f, set()).add(name)
            else:
                local = os.path.normpath(os.path.join(os.path.dirname(f), name))
                known = [local] if local in t.folder_of else by_name.get(os.path.basename(name), [])
                gen = [g for g in gen_folder if os.path.basename(g) == os.path.basename(name)]
                paths = known + gen
                if paths:
                    t.problems.append(f"{f}:{ln}: includes \"{name}\" by a bare or relative name: write its path "
                                      f"from the source root ({' or '.join(chr(34) + p + chr(34) for p in paths)})")
                else:
                    t.problems.append(f"{f}:{ln}: includes \"{name}\", which is no file of the tree")
                continue
            if b != t.folder_of[f]:
                t.add(t.folder_of[f], b, "include", f, os.path.basename(name))
    return header_graph


def read_symbols(t):
    """Symbol edges; returns {source: (defined, undefined, functions)} and the graph of files calling files."""
    root = os.path.join(t.build, "obj")
    obj_of = {f: os.path.join(root, f[:-2] + ".o") for f in t.files if f.endswith(".c")}
    obj_of = {f: o for f, o in obj_of.items() if os.path.exists(o)}
    syms = symbols(sorted(obj_of.values())) if obj_of else {}
    objs = {f: syms[o] for f, o in obj_of.items()}
    if not objs:
        t.problems.append(f"{root}: no objects of this tree's sources: build it first (make)")
    owner = {}
    for f, (defined, _, _) in objs.items():
        for s in defined:
            owner.setdefault(s, f)
    file_graph = {f: set() for f in objs}
    for f, (_, undefined, _) in objs.items():
        for s in undefined:
            g = owner.get(s)
            if g and g != f:
                file_graph[f].add(g)
                if t.folder_of[g] != t.folder_of[f]:
                    t.add(t.folder_of[f], t.folder_of[g], "symbol", f, s)
    return objs, file_graph


def read_callbacks(t, objs):
    """[(receiver folder, the function's folder, registering file, function, how)] across folders."""
    global_funcs = {s: f for f, (d, _, fn) in objs.items() for s in d & fn}
    fields = fn_pointer_fields(t.files, t.folder_of)
    out = []
    for f, (_, _, fn) in objs.items():
        text = strip_c(open(f, errors="replace").read())
        text = re.sub(r"^\s*#\s*include.*$", "", text, flags=re.M)
        for name, (how, rname) in callbacks(f, text, fn, global_funcs, fields):
            a = t.folder_of[global_funcs[name]] if name not in fn and name in global_funcs else t.folder_of[f]
            if how == "field":
                recv = fields.get(rname, set())
                if len(recv) != 1:
                    continue  # not a function-pointer field, or one name in several folders: cannot tell
                b = next(iter(recv))
            else:
                h = global_funcs.get(rname)
                if not h:
                    continue  # a library's function (zmq_poll, qsort) or a macro
                b = t.folder_of[h]
            if b != a:
                out.append((b, a, f, name, f"{how} {rname}"))
    return out


def check_order(t, cb_edges):
    """The map's order and RULES; returns the callbacks that call up unasked (edges of the folder graph)."""
    order = read_map(t.problems)
    rank = {d: i for i, d in enumerate(order)}
    for d in t.folders:
        if order and d not in rank:
            t.problems.append(f"{d}/: not in docs/design.md's map: add it where it belongs")

    def down(a, b):
        return a in rank and b in rank and rank[a] < rank[b]

    for (a, b), es in sorted(t.edges.items()):
        for kind, f, what, exc in es:
            if exc:
                continue
            if a in rank and b in rank and not down(a, b):
                t.problems.append(f"{f}: {kind} {what} ({b}/): against the map: docs/design.md lists {b}/ above {a}/")
            for ra, rb, why in RULES:
                if under(a, ra) and under(b, rb):
                    t.problems.append(f"{f}: {kind} {what} ({b}/): breaks the rule \"{why}\"")
    runtime = {}
    for b, a, f, name, how in cb_edges:
        # fine: a call down the map, or the folder above handing its own function to the folder below
        if down(b, a) or (t.folder_of[f] == a and down(a, b)):
            continue
        t.problems.append(f"{f}: {name} ({a}/) handed to {b}/ ({how}): {b}/ would call {a}/ against the map")
        runtime.setdefault(b, set()).add(a)
    return runtime


def check_cycles(t, runtime, file_graph, header_graph):
    fgraph = {d: set() for d in t.folders}
    for (a, b), es in t.edges.items():
        if any(not exc for *_, exc in es):
            fgraph[a].add(b)
    for a, bs in runtime.items():
        fgraph[a] |= bs
    for comp in sccs(fgraph):
        t.problems.append("folder cycle: " + " <-> ".join(c + "/" for c in comp))
    for comp in sccs(file_graph):
        t.problems.append("file cycle (symbols): " + " <-> ".join(comp))
    for comp in sccs(header_graph):
        t.problems.append("header cycle (includes): " + " <-> ".join(comp))


def check_readmes(t):
    deps = {d: set() for d in t.folders}
    for (a, b) in t.edges:
        deps[a].add(b)
    for d in t.folders:
        said = read_may_call(d)
        if said is None:
            continue  # no README (layout.t says which folders need one)
        if said == "missing":
            t.problems.append(f"{d}/README.md: no \"May call:\" line (say which folders its code may call)")
            continue
        extra, missing = sorted(said - deps[d]), sorted(deps[d] - said)
        if extra or missing:
            msg = f"{d}/README.md: \"May call:\" disagrees with the code:"
            if missing:
                msg += " the code also calls " + ", ".join(m + "/" for m in missing) + " (" + "; ".join(
                    f"{es[0][1]}: {es[0][0]} {es[0][2]}" for es in (t.edges[(d, m)] for m in missing)) + ")"
            if extra:
                msg += " it names " + ", ".join(m + "/" for m in extra) + ", which the code does not call"
            t.problems.append(msg)


def check_sizes(t):
    nsrc = {}
    for f in t.files:
        if f.endswith((".c", ".cu")):
            nsrc[t.folder_of[f]] = nsrc.get(t.folder_of[f], 0) + 1
    for d, n in sorted(nsrc.items()):
        if n > MAX_SOURCES and d in SIZE_EXCEPTIONS:
            t.used.add(d)
        elif n > MAX_SOURCES:
            t.problems.append(f"{d}/: {n} sources, more than {MAX_SOURCES}: split it into folders that name its "
                              f"concepts")
    for f in t.files:
        n = sum(1 for _ in open(f, errors="replace")) if f.endswith("_priv.h") else 0
        if n > MAX_PRIV_LINES and os.path.basename(f) in SIZE_EXCEPTIONS:
            t.used.add(os.path.basename(f))
        elif n > MAX_PRIV_LINES:
            t.problems.append(f"{f}: {n} lines, more than {MAX_PRIV_LINES} for a private header: give its parts "
                              f"their own headers")


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    t = Tree(sys.argv[1])
    header_graph = read_includes(t)
    objs, file_graph = read_symbols(t)
    cb_edges = read_callbacks(t, objs)
    runtime = check_order(t, cb_edges)
    check_cycles(t, runtime, file_graph, header_graph)
    check_readmes(t)
    check_sizes(t)
    for key in sorted(set(SIZE_EXCEPTIONS) - t.used):
        t.problems.append(f"scripts/layers.py: size exception {key!r} matches nothing any more: remove it")
    for key in sorted(set(EXCEPTIONS) - t.used):
        t.problems.append(f"scripts/layers.py: exception {key} matches nothing any more: remove it")

    if "--graph" in sys.argv:
        for a in t.folders:
            outs = sorted(b for (x, b) in t.edges if x == a)
            print(f"{a}/ -> " + (", ".join(
                f"{b}/ ({'+'.join(sorted({k for k, *_ in t.edges[(a, b)]}))}"
                f"{', excepted' if all(e for *_, e in t.edges[(a, b)]) else ''})" for b in outs) or "(nothing)"))
        for b, a, f, name, how in sorted(set(cb_edges)):
            print(f"callback: {b}/ calls {a}/'s {name} ({how}, registered in {f})")
        for key, (why, fix) in sorted(EXCEPTIONS.items()):
            print(f"exception: {key[0]}: {key[1]} {key[2]}: {why}; removed by {fix}")
    for p in t.problems:
        print(p)
    if t.problems:
        return 1
    print(f"layers: {len(t.files)} files in {len(t.folders)} folders: no cycle, every edge down the map and within "
          f"the rules, every README's May call true ({len(cb_edges)} callbacks, {len(EXCEPTIONS)} known exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
