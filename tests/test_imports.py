"""The import rules of the code base (README, "Layout"): no import cycle among tri's and
pipelines' modules, and imports at the top of modules, except where a comment says why one waits
(a heavy dependency only some commands need, a setting that must be made before a library is
imported, a module pickled by name)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("tri", "pipelines")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.Module, modules: dict[str, Path], *, top: bool):
    """(line, imported first-party module) pairs: at module level (``top``) or inside functions."""

    def targets(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        return [base] + [f"{base}.{a.name}" for a in node.names]

    found = []

    def walk(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue  # never runs
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function != top:
                found.extend((child.lineno, t) for t in targets(child) if t in modules)
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        deps = {t for _, t in _imports(tree, modules, top=True)}
        # Importing a.b.c runs the packages a and a.b first.
        deps |= {".".join(t.split(".")[:i]) for t in deps for i in range(1, t.count(".") + 1)}
        graph[name] = {d for d in deps if d in modules and d != name and not name.startswith(d + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_inside_functions_say_why():
    """An import of a tri or pipelines module inside a function has a comment on its line or the
    line above saying why it is not at the top."""
    modules = _modules()
    unexplained = []
    for name, path in modules.items():
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines), str(path))
        for lineno, target in _imports(tree, modules, top=False):
            here, above = lines[lineno - 1], lines[lineno - 2] if lineno > 1 else ""
            if "#" not in here and not above.strip().startswith("#"):
                unexplained.append(f"{path.relative_to(REPO)}:{lineno} imports {target}")
    assert not sorted(set(unexplained)), "\n".join(sorted(set(unexplained)))


def test_modules_stay_small():
    """No module over about 400 lines (the numba kernels of a game excepted)."""
    big = [f"{p.relative_to(REPO)}: {n} lines" for p in _modules().values()
           if (n := len(p.read_text().splitlines())) > 420 and not p.name.startswith("kernels")]
    assert not big, big
