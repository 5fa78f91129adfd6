"""The package's modules import in one direction: no cycle, the display hooks included.

Every ``import`` of a package module is read from the source (module level and inside
functions alike). The only imports that may point up the layers are the lazy ones inside the ``plot``
methods of the result objects (pictures: :mod:`mlsysim_sym.plot` sits above the results it draws, and
imports none of them), which say so where they stand; they are in the graph too, and make no cycle. The
model's notebook display needs no such import: the printer registers it (``notation.DISPLAY``).
``if TYPE_CHECKING:`` blocks never run and are left out.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Set

PACKAGE = Path(__file__).resolve().parents[1] / "mlsysim_sym"
HOOKS = ("_repr_latex_", "_repr_html_", "plot")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(current: str, is_package: bool, level: int, module: str) -> str:
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([module] if module else []))


def _known(name: str, modules: Set[str]) -> str:
    """The package module an import names (``a.b.c`` may be module ``a.b`` plus an attribute)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def import_graph(hooks_included: bool = True) -> Dict[str, Set[str]]:
    files = {(_module_name(p)): p for p in PACKAGE.rglob("*.py") if "_generated" not in p.parts}
    modules = set(files)
    graph: Dict[str, Set[str]] = {m: set() for m in modules}
    for mod, path in files.items():
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"
        hooks = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in HOOKS and not hooks_included:
                hooks |= {id(n) for n in ast.walk(node)}
            # ``if TYPE_CHECKING:`` imports never run: annotations only
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                hooks |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in hooks:
                continue
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_package, node.level, node.module or "") if node.level else (node.module or "")
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                k = _known(t, modules)
                if k and k != mod and not (is_package and k.startswith(mod + ".")) and k != "mlsysim_sym":
                    graph[mod].add(k)
                    break
    return graph


def find_cycle(graph):
    state: Dict[str, int] = {}
    stack = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        state[m] = 2
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle_hooks_included():
    graph = import_graph()
    assert len(graph) > 30 and "mlsysim_sym.arguments" in graph["mlsysim_sym.solver"]
    assert "mlsysim_sym.plot" in graph["mlsysim_sym.solver"]          # the picture hook is in the graph
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))
    # the one lazy import that points up: the pictures of a result (plot imports no result module)
    upward = {(m, n) for m, ns in graph.items() for n in ns} - \
        {(m, n) for m, ns in import_graph(hooks_included=False).items() for n in ns}
    assert {n for _, n in upward} == {"mlsysim_sym.plot"}, upward


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_lower_layers_import_nothing_above_them():
    graph = import_graph()
    below = {"mlsysim_sym.proposals": set(), "mlsysim_sym.notation": {"mlsysim_sym.proposals"},
             "mlsysim_sym.symbols": {"mlsysim_sym.notation"},
             "mlsysim_sym.mechanisms": set(), "mlsysim_sym.outputs": {"mlsysim_sym.notation"}}
    for mod, allowed in below.items():
        assert graph[mod] <= allowed, (mod, graph[mod])
    # the model's algebra never reaches the numeric drivers
    for mod in ("mlsysim_sym.model", "mlsysim_sym.simplify", "mlsysim_sym.printing", "mlsysim_sym.units"):
        assert not graph[mod] & {"mlsysim_sym.solver", "mlsysim_sym.sweeps", "mlsysim_sym.inputs",
                                 "mlsysim_sym.arguments", "mlsysim_sym.checks", "mlsysim_sym.optimize",
                                 "mlsysim_sym.sensitivity"}, mod
    # the checks read an Arguments without importing it (annotations only): the arguments sit above them
    assert "mlsysim_sym.arguments" not in graph["mlsysim_sym.checks"]


def test_repr_hooks_that_import_lazily_say_so():
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        lines = path.read_text().splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in HOOKS:
                imports = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                for imp in imports:
                    before = lines[imp.lineno - 2]
                    assert "hook" in before and "lazy import" in before or "display hook" in before, \
                        f"{path.name}:{imp.lineno}: say why this import is lazy"


def test_the_readme_module_table_names_every_module():
    table = (PACKAGE.parent / "README.md").read_text().split("| path | what |", 1)[1].split("\n\n", 1)[0]
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if "_generated" in rel.parts or rel.name == "__init__.py" and len(rel.parts) == 1:
            continue
        if len(rel.parts) > 1:          # a subpackage: its row names it and each of its modules
            row = next((line for line in table.splitlines() if f"mlsysim_sym/{rel.parts[0]}/" in line), "")
            assert rel.name == "__init__.py" or f"`{rel.stem}`" in row, rel
        else:
            assert f"{rel.name}`" in table, rel
