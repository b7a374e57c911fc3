#!/usr/bin/env python3
"""Says whether any two top-level modules of src/ import each other, directly or
through others (docs/design.md §1.2: imports go one way; the one loop the design
needs lives inside run/). A module is a file or folder directly under src/; an
import is any `crate::name` path in its files, comments and tests excluded.
Exit 1 and each loop printed when there is one."""
import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "src"
PATH = re.compile(r"\bcrate::(\w+)")
USE_GROUP = re.compile(r"\buse crate::\{([^}]*)\}", re.S)


def code_of(text):
    """The text without comments and without #[cfg(test)] modules' bodies."""
    text = re.sub(r"//[^\n]*", "", text)
    cut = re.search(r"#\[cfg\(test\)\]\s*mod \w+\s*\{", text)
    return text[: cut.start()] if cut else text


def modules():
    found = {}
    for entry in sorted(os.listdir(SRC)):
        path = os.path.join(SRC, entry)
        if entry.endswith(".rs") and entry not in ("lib.rs", "main.rs"):
            found[entry[:-3]] = [path]
        elif os.path.isdir(path):
            found[entry] = [
                os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".rs")
            ]
    return found


def edges(mods):
    graph = {m: set() for m in mods}
    for m, files in mods.items():
        for f in files:
            if f.endswith("tests.rs") or "_tests.rs" in f:
                continue
            code = code_of(open(f, encoding="utf-8").read())
            names = set(PATH.findall(code))
            for group in USE_GROUP.findall(code):
                names.update(re.findall(r"(?:^|,)\s*(\w+)", group))
            graph[m].update(n for n in names if n in mods and n != m)
    return graph


def loops(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


graph = edges(modules())
found = loops(graph)
for comp in found:
    print("  " + " <-> ".join(comp) + ": " + "; ".join(
        f"{a} -> {', '.join(sorted(graph[a] & set(comp)))}" for a in comp))
sys.exit(1 if found else 0)
