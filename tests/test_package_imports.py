"""The packages of ``sayuri_async`` import each other without a cycle.

Every import of every module counts, function-local ones included (parsed
with ``ast``, nothing imported): a package is a folder of ``sayuri_async``
or one of its top-level modules. The search does not import the Sayuri
interoperability package (``sayuri/``): it reaches encoders, ladders and
safe areas through ``encoders/``.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import sayuri_async

PACKAGE = Path(sayuri_async.__file__).resolve().parent
NAME = PACKAGE.name


def _module_name(path: Path) -> str:
    parts = (NAME, *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, module: str, is_package: bool) -> list[tuple[str, int]]:
    """Every module name the source of ``module`` imports (absolute), with
    its line: at any depth (in functions too), relative ones resolved."""
    here = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                out.append((node.module or "", node.lineno))
                continue
            base = here.split(".")[:len(here.split(".")) - node.level + 1]
            if node.module:
                out.append((".".join([*base, node.module]), node.lineno))
            else:
                out += [(".".join([*base, a.name]), node.lineno) for a in node.names]
    return out


def _unit(module: str) -> str:
    """The package a module belongs to: the part after ``sayuri_async.``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_edges() -> dict[str, dict[str, list[str]]]:
    """package -> imported package -> ``file:line`` of each such import."""
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _unit(_module_name(path))
        for target, line in imported(path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py"):
            if target == NAME or target.startswith(NAME + "."):
                dst = _unit(target)
                if dst != src and dst != NAME:
                    edges[src][dst].append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    return edges


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_imports_are_found_at_any_depth_and_resolved() -> None:
    source = """
import sayuri_async.go.board
from . import tree
from ..encoders import leaf

def f():
    from ..sayuri.weights import load_any_weights
    if True:
        import numpy
"""
    got = imported(source, "sayuri_async.search.mcts", False)
    assert [name for name, _ in got] == ["sayuri_async.go.board", "sayuri_async.search.tree",
                                         "sayuri_async.encoders", "sayuri_async.sayuri.weights", "numpy"]
    assert imported("from .ladder import x", "sayuri_async.encoders", True) == [("sayuri_async.encoders.ladder", 1)]
    assert _unit("sayuri_async.search.puct") == "search" and _unit("sayuri_async.loop") == "loop"


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_package_cycle() -> None:
    edges = package_edges()
    graph = {src: set(dsts) for src, dsts in edges.items()}
    found = cycles(graph)
    detail = [f"{a} -> {b}: {', '.join(edges[a][b][:3])}" for c in found for a in c for b in edges[a] if b in c]
    assert not found, "import cycles between packages:\n" + "\n".join(detail)


def test_search_does_not_import_sayuri() -> None:
    assert "sayuri" not in package_edges()["search"], package_edges()["search"]["sayuri"]
