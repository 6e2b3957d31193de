#!/usr/bin/env python3
"""Check the module layering of the server crate.

The top-level modules of a crate's src/ and the `crate::` paths each one
names form a graph; it must have no cycle. The crate also declares its
layers (LAYERS below, bottom first): a module may name modules of its own
layer or of layers below it, never one above. Tests (`tests.rs`, a
trailing `#[cfg(test)]` module, `test_support`) may reach anywhere and are
not counted. Exit status 1 lists every cycle and every upward import, with
the file and line that makes it.

Run by `make lint` (and so by `make test`).
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The server crate's layers, bottom first. A module not listed is an error,
# so that a new module is placed on purpose.
LAYERS = {
    "tollgate-server": [
        # Values: what a request is and what is known of it; plumbing; the
        # mapping of configuration to the lower crates' settings.
        ["rescue", "facts", "stage", "body", "runtime", "tls", "settings"],
        # The parts a route is built from.
        ["upstream", "error", "task_handle", "catalog", "audit_index", "shipping", "checkpoint", "spend"],
        # Routes.
        ["route"],
        # The request path of a route: phases, the answers they build, the
        # summary; the catalog governance that serves the routes.
        ["summary", "learn", "lists", "metered", "phase", "phases", "governance"],
        # Virtual servers, which route calls into the request path.
        ["vserver"],
        # The public front and the live routing table.
        ["front", "live"],
        # Building generations; operations, listeners and layers.
        ["generation", "reload", "metrics", "layer", "stack", "serve", "services", "admin", "console", "dev_signin", "front_door"],
        # The gateway: assembles everything.
        ["gateway"],
    ],
}

CRATE_PATH = re.compile(r"\bcrate::(\{[^}]*\}|\w+)")
LINE_COMMENT = re.compile(r"//.*$")


def top_module(src: Path, file: Path) -> str:
    rel = file.relative_to(src)
    first = rel.parts[0]
    return first[:-3] if first.endswith(".rs") else first


def test_files(src: Path):
    """Files of modules declared under `#[cfg(test)]` (`#[cfg(test)] mod x;`)."""
    out = set()
    for file in src.rglob("*.rs"):
        home = file.parent if file.name in ("lib.rs", "main.rs", "mod.rs") else file.with_suffix("")
        for name in re.findall(r"#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\(crate\))? )?mod (\w+);", file.read_text()):
            out.add(home / f"{name}.rs")
            out.update((home / name).rglob("*.rs"))
    return out


def imports(src: Path):
    """(from module, to module) -> first (file, line) naming it."""
    edges = {}
    tests = test_files(src)
    for file in sorted(src.rglob("*.rs")):
        module = top_module(src, file)
        if module in ("lib", "main") or file in tests:
            continue
        text = file.read_text()
        # A trailing unit-test module is not part of the layering.
        cut = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod tests\s*\{", text, re.M)
        if cut:
            text = text[: cut.start()]
        for m in CRATE_PATH.finditer(strip_comments(text)):
            names = m.group(1)
            targets = re.findall(r"\w+", names) if names.startswith("{") else [names]
            line = text.count("\n", 0, m.start()) + 1
            for target in targets:
                known = (src / f"{target}.rs").exists() or (src / target).is_dir()
                if known and target != module:
                    edges.setdefault((module, target), (file, line))
    return edges


def strip_comments(text: str) -> str:
    """Blank out `//` comments, keeping offsets (for line numbers)."""
    out = []
    for line in text.split("\n"):
        m = LINE_COMMENT.search(line)
        out.append(line if m is None else line[: m.start()] + " " * (len(line) - m.start()))
    return "\n".join(out)


def cycles(edges):
    """The strongly connected components with more than one module."""
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(set(graph) | {b for _, b in edges}):
        if v not in index:
            visit(v)
    return out


def check_layers(crate, src, edges, problems):
    layers = LAYERS.get(crate)
    if layers is None:
        return
    rank = {m: i for i, layer in enumerate(layers) for m in layer}
    tests = test_files(src)
    modules = {top_module(src, f) for f in src.rglob("*.rs") if f not in tests} - {"lib", "main"}
    for m in sorted(modules - set(rank)):
        problems.append(f"{crate}: module `{m}` is in no layer (scripts/layers.py LAYERS)")
    for (a, b), (file, line) in sorted(edges.items()):
        if a in rank and b in rank and rank[b] > rank[a]:
            rel = file.relative_to(ROOT)
            problems.append(f"{crate}: `{a}` (layer {rank[a]}) imports `{b}` (layer {rank[b]}) at {rel}:{line}")


def main():
    problems = []
    for crate in sorted(LAYERS):
        src = ROOT / "crates" / crate / "src"
        edges = imports(src)
        for component in cycles(edges):
            inside = [f"{a} -> {b} ({f.relative_to(ROOT)}:{n})" for (a, b), (f, n) in sorted(edges.items())
                      if a in component and b in component]
            problems.append(f"{crate}: import cycle among {', '.join(component)}:\n    " + "\n    ".join(inside))
        check_layers(crate, src, edges, problems)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print("layers: no import cycles, no upward imports")


if __name__ == "__main__":
    main()
