"""No import circles in ``src/crowdlearn`` (issue 27).

Every ``import crowdlearn...`` and ``from crowdlearn... import ...`` of every module is
read from its source, at module level and inside functions alike (a lazy import still
ties two modules together), except under ``if TYPE_CHECKING:``. An import of a package
counts as an import of its ``__init__``; ``from package import name`` counts as an
import of ``package.name`` when that is a module, and of the module that defines
``name`` when the package exposes it lazily (``crowdlearn._lazy.attach``: ``from
crowdlearn.data import CrowdData`` is an import of ``crowdlearn.data.crowddata``). The
graph of modules must have no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "crowdlearn"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _lazy_names(package: str, path: Path) -> dict[str, str]:
    """Name -> defining module of a package's ``attach(__name__, {...})`` table (whose
    values are ``"module"``, ``".relative"`` or ``"module:attribute"``)."""
    names: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "attach":
            for argument in node.args[1:2]:
                if isinstance(argument, ast.Dict):
                    for key, value in zip(argument.keys, argument.values, strict=True):
                        if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                            module = value.value.partition(":")[0]
                            if module.startswith("."):
                                module = package + module
                            names[key.value] = module
    return names


LAZY = {
    name: _lazy_names(name, path) for name, path in MODULES.items() if path.name == "__init__.py"
}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            for alias in node.names:
                found.add(f"{base}.{alias.name}")
                found.add(LAZY.get(base, {}).get(alias.name, ""))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {module for module in found if module in MODULES and module != name}


def import_graph() -> dict[str, set[str]]:
    return {name: _imports(name, path) for name, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_package_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert cycles(graph) == expected


def test_lazy_imports_count_and_type_checking_ones_do_not(tmp_path, monkeypatch):
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from crowdlearn.data import CrowdData\n"
        "def f():\n    from crowdlearn.io import read\n"
    )
    path = tmp_path / "mod.py"
    path.write_text(source)
    found = _imports("crowdlearn.x", path)
    assert "crowdlearn.io" in found and "crowdlearn.data" not in found


def test_no_module_is_longer_than_900_lines():
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := len(path.read_text().splitlines())) > 900
    }
    assert not long, long


def test_a_lazily_exposed_name_counts_as_its_defining_module():
    assert LAZY["crowdlearn.data"]["CrowdData"] == "crowdlearn.data.crowddata"
    assert "crowdlearn.data.crowddata" in _imports(
        "crowdlearn.io._common", MODULES["crowdlearn.io._common"]
    )
