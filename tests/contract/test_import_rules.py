"""The package's import rules, read from its own source (no module is imported):

- the folders form layers, and a module imports only from its own folder, from a lower layer, or
  from the leaves (``solve``, ``validation`` and the private helpers at the top level);
- no import cycle among modules, counting imports inside functions (``if TYPE_CHECKING:`` blocks
  are left out: they never run);
- no private name crosses a folder: neither imported (``from ..data._tables import _matvec``) nor
  reached as an attribute of a module of another folder (``tables._matvec``), nor called as a
  private method that only another folder defines (``workload._kernel()``); and a folder's modules
  are private (``_tables.py``): other folders import from its package (``from ..data import X``).
"""

from __future__ import annotations

import ast
import pathlib
import sys
from collections import defaultdict

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "projmech"

#: The layers, lowest first: a folder imports only from its own layer's folder and the layers below.
LAYERS = (("privacy",), ("data",), ("workloads", "datasets"), ("analysis",), ("tables",), ("bodies", "factorization"),
          ("synthetic",), ("mechanisms",), ("audit",), ("cli",))
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}

#: Top-level modules every layer may import; they import no folder.
LEAVES = ("solve", "validation", "errors", "_threads", "_sparse")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _folder(module: str) -> str:
    """``projmech.data._tables`` -> ``data``; a top-level module is its own folder."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _runtime_nodes(tree: ast.Module):
    """Every node outside ``if TYPE_CHECKING:`` blocks."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _imports(module: str, path: pathlib.Path, modules: dict[str, pathlib.Path]):
    """``(imported module, names taken from it, node)`` for each runtime import of ``module``."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("projmech"):
                continue
            for alias in node.names:
                # "from . import hull" imports a module; "from .hull import Hull" a name of one.
                if f"{target}.{alias.name}" in modules:
                    yield f"{target}.{alias.name}", [], alias.asname or alias.name, node
                else:
                    yield target, [alias.name], None, node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("projmech"):
                    yield alias.name, [], alias.asname, node


def _edges():
    modules = _modules()
    for module, path in modules.items():
        for target, names, bound, node in _imports(module, path, modules):
            yield module, path, target, names, bound, node


def test_a_folder_imports_only_its_own_folder_lower_layers_and_leaves():
    wrong = []
    for module, path, target, _, _, node in _edges():
        source, destination = _folder(module), _folder(target)
        if module == "projmech" or source == destination or destination in LEAVES:
            continue
        if source in LEAVES:
            wrong.append(f"{path.name}:{node.lineno}: the leaf {module} imports {target}")
        elif destination == "" or destination not in RANK:
            continue  # the package itself ("from .. import workloads" is caught as the module)
        elif source not in RANK:
            wrong.append(f"{module} is in no layer of LAYERS")
        elif RANK[destination] >= RANK[source]:
            wrong.append(f"{module}:{node.lineno} imports {target}: layer {RANK[destination]} from layer "
                         f"{RANK[source]}")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    modules = _modules()
    for module, _, target, _, _, _ in _edges():
        if module == "projmech":
            continue
        # Importing a name from a package runs its __init__, which imports its modules.
        graph[module].add(target if target in modules else target.rsplit(".", 1)[0])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            # A package and the modules its __init__ imports form a benign loop when a module
            # imports a sibling through the package; only loops among modules count.
            if len([member for member in component if member in modules and modules[member].name != "__init__.py"]) > 1:
                cycles.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def _private_names_by_folder() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The private method names each folder's classes define, and every private name each folder
    defines or assigns (methods, functions, ``self._x`` attributes)."""
    methods: dict[str, set[str]] = defaultdict(set)
    names: dict[str, set[str]] = defaultdict(set)
    for module, path in _modules().items():
        folder = _folder(module)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name):
                        methods[folder].add(item.name)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _private(node.name):
                names[folder].add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
                names[folder].add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _private(node.id):
                names[folder].add(node.id)
    return methods, names


def _is_self_or_super(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("self", "cls")) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def test_no_private_name_crosses_a_folder():
    modules = _modules()
    wrong = []
    bound_modules: dict[str, dict[str, str]] = defaultdict(dict)
    for module, _, target, names, bound, node in _edges():
        if module == "projmech" or _folder(module) == _folder(target) or _folder(target) in LEAVES:
            continue
        for name in names:
            if name.startswith("_"):
                wrong.append(f"{module}:{node.lineno} imports the private {target}.{name}")
        if any(_private(part) for part in target.split(".")[2:]):
            wrong.append(f"{module}:{node.lineno} imports {target}, a private module of another folder: "
                         "import from its package")
        if bound is not None:
            bound_modules[module][bound] = target
    methods, defined = _private_names_by_folder()
    for module, path in modules.items():
        folder = _folder(module)
        # Private methods of other folders' classes that this folder defines under no name of its own.
        # A leaf's classes are everyone's (a result's ``_with_stats``); a subclass may use what its
        # base class defines for subclasses (``self._setup``, ``super()._rmatmat``).
        elsewhere = set().union(*(names for other, names in methods.items()
                                  if other != folder and other not in LEAVES)) - defined[folder]
        for node in _runtime_nodes(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in bound_modules[module]:
                wrong.append(f"{module}:{node.lineno} reaches the private "
                             f"{bound_modules[module][node.value.id]}.{node.attr}")
            elif node.attr in elsewhere and not _is_self_or_super(node.value):
                wrong.append(f"{module}:{node.lineno} calls .{node.attr}, private to another folder")
    assert not wrong, "\n".join(sorted(set(wrong)))


@pytest.mark.parametrize("planted", ["layer", "cycle", "private", "private module"])
def test_the_rules_catch_a_planted_violation(planted, tmp_path, monkeypatch):
    """Each rule fails on a copy of the package with one violation planted."""
    import shutil

    copy = tmp_path / "projmech"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.gz", "*.json", "*.md"))
    target = copy / "data" / "_domain.py"
    line = {"layer": "from ..mechanisms import Release\n",
            "cycle": "from ._dataset import Dataset\n",
            "private": "from ..privacy._noise import _opendp_sample\n",
            "private module": "from ..privacy._noise import Noise\n"}[planted]
    target.write_text(target.read_text() + "\n\ndef _planted():\n    " + line)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", copy)
    rule = {"layer": test_a_folder_imports_only_its_own_folder_lower_layers_and_leaves,
            "cycle": test_no_import_cycle, "private": test_no_private_name_crosses_a_folder,
            "private module": test_no_private_name_crosses_a_folder}[planted]
    with pytest.raises(AssertionError):
        rule()


def folder_graph() -> str:
    """The package's structure as its imports draw it: each folder's lines and modules, and the
    folders it imports with how many import statements, lowest layer first."""
    modules = _modules()
    edges: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for module, _, target, _, _, _ in _edges():
        source, destination = _folder(module), _folder(target)
        if module != "projmech" and source != destination and destination:
            edges[source][destination] += 1
    sizes: dict[str, list[int]] = defaultdict(list)
    for module, path in modules.items():
        sizes[_folder(module) or module.split(".")[-1]].append(path.read_text().count("\n"))
    order = [folder for layer in LAYERS for folder in layer]
    lines = []
    for folder in order + sorted(set(sizes) - set(order)):
        imported = ", ".join(f"{other} ({count})" for other, count in sorted(edges[folder].items()))
        lines.append(f"{folder:<14} {sum(sizes[folder]):>6} lines in {len(sizes[folder]):>2} modules "
                     f"(largest {max(sizes[folder]):>4})  imports: {imported or '-'}")
    return "\n".join(lines)


if __name__ == "__main__":  # python tests/contract/test_import_rules.py
    print(folder_graph())
