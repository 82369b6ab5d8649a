"""The package's layers: each module imports only from the layers below it, faces never import each other, no import
cycles, and no module reaches into another's ``_private`` names.

Read from the source with ``ast``, imports inside functions included, so a lazy import cannot hide an arrow that
runs the wrong way.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.helpers import REPO

ROOT = REPO / "xlsxplan"

# The rank of every top-level name of the package: a module at the top, or a folder whose modules all share its rank.
# A module may import a module of a lower rank, or of its own rank and group; a face (rank FACE) never imports
# another face. A module whose top-level name is not here fails test_every_module_has_a_layer: a new file belongs
# to a folder, and its folder gives its rank. The plan sits under the registry because PLAN_OPTIONS and
# PLAN_OPTIONS_AT are Excel functions (the registry's table names the search, imported on first use); sheet/ sits
# over it because its forms (cell conversion, native formulas) read the registry.
RANKS: dict[str, tuple[int, str]] = {
    "errors": (0, "basics"),
    "infra": (1, "infra"),  # atomic files, zip checks, process limits, text, element-by-element arithmetic
    "domains": (2, "basics"),
    "precision": (3, "basics"),
    "core": (4, "core"),
    "catalog": (5, "catalog"),
    "calibration": (6, "calibration"),
    "plan": (7, "plan"),
    "registry": (8, "registry"),
    "__init__": (8, "registry"),  # the package itself: its public API, over the core, the data and the plan
    "sheet": (9, "sheet"),
    "excel": (10, "excel"),
    "headless": (10, "headless"),
    "templates": (10, "templates"),
    "cli": (11, "cli"),
    "__main__": (11, "cli"),
}
FACE = 10


def layer_of(module: str, ranks: dict[str, tuple[int, str]] = RANKS) -> tuple[int, str] | None:
    """(rank, group) of a module by its top-level name under ``xlsxplan``, or None for a name ``ranks`` lacks."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    return ranks.get(top)


def _layer(module: str) -> tuple[int, str]:
    found = layer_of(module)
    assert found is not None, f"{module} has no layer: put it in a folder of tests/test_layers.py's RANKS"
    return found


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["xlsxplan", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


@functools.cache
def _tree(module: str) -> ast.Module:
    """The parsed source of ``module``, parsed once for all the tests (none of them changes a tree)."""
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


@functools.cache
def _imports(module: str) -> tuple[tuple[str, int, list[str]], ...]:
    """(imported xlsxplan module, line, names imported from it) for every import in ``module``."""
    path = MODULES[module]
    out = []
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, []) for a in node.names if a.name.split(".")[0] == "xlsxplan"]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            if target.split(".")[0] != "xlsxplan":
                continue
            names = [a.name for a in node.names]
            submodules = [n for n in names if f"{target}.{n}" in MODULES]
            out += [(f"{target}.{n}", node.lineno, []) for n in submodules]
            rest = [n for n in names if n not in submodules]
            if rest or not submodules:
                out.append((target, node.lineno, rest))
    if module == "xlsxplan.registry":  # the modules its table names as text, imported when an entry is first read
        from xlsxplan.registry import ENTRY_MODULES

        out += [(f"xlsxplan.{m}", 0, []) for m in ENTRY_MODULES.values()]
    return tuple(out)


def test_every_module_has_a_layer():
    assert sorted(MODULES)
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_only_the_basics_the_registry_and_the_package_sit_at_the_top():
    top = sorted(p.stem for p in ROOT.glob("*.py"))
    assert top == ["__init__", "__main__", "domains", "errors", "precision", "registry"]


def test_an_unlisted_module_fails_the_layer_test():
    """The test of the test: a new top-level module, or a new folder, has no layer until RANKS names it."""
    assert layer_of("xlsxplan.newthing") is None
    assert layer_of("xlsxplan.newfolder.module") is None
    assert layer_of("xlsxplan.plan.search") == RANKS["plan"]
    assert layer_of("xlsxplan") == RANKS["__init__"]
    with pytest.raises(AssertionError, match="xlsxplan.newthing has no layer"):
        _layer("xlsxplan.newthing")


def test_every_import_runs_down_the_layers_and_no_face_imports_another():
    wrong = []
    for module in MODULES:
        rank, group = _layer(module)
        for target, line, _ in _imports(module):
            if target not in MODULES:
                continue
            t_rank, t_group = _layer(target)
            if t_rank > rank or (t_rank == rank and t_group != group):
                wrong.append(f"{module}:{line} imports {target} ({group} {rank} -> {t_group} {t_rank})")
    assert wrong == []


def test_no_module_imports_another_modules_private_names():
    wrong = []
    for module, path in MODULES.items():
        tree = _tree(module)
        aliases = {}  # local name -> xlsxplan module it is bound to
        for target, line, names in _imports(module):
            wrong += [
                f"{module}:{line} imports {target}.{n}" for n in names if n.startswith("_") and n != "__version__"
            ]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(module, path, node)
                for a in node.names:
                    if f"{target}.{a.name}" in MODULES:
                        aliases[a.asname or a.name] = f"{target}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in MODULES and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and aliases[node.value.id] != module
            ):
                wrong.append(f"{module}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert wrong == []


def test_no_import_cycles():
    graph = {m: {t for t, _, _ in _imports(m) if t in MODULES and t != m} for m in MODULES}
    # a package imports its own submodules to re-export them; a submodule importing the package back is the cycle
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if nxt == "xlsxplan":
                continue  # every module's parent: `from .. import __version__` reads a constant, not a layer
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


@pytest.mark.parametrize("module", ["xlsxplan.core", "xlsxplan.domains", "xlsxplan.precision", "xlsxplan.errors"])
def test_the_pure_layers_import_no_excel_workbook_or_cli_library(module):
    banned = ("openpyxl", "xlwings", "formualizer", "formulas", "argparse", "tqdm")
    found = []
    for name, path in MODULES.items():
        if name == module or name.startswith(module + "."):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found += [f"{name}: {a.name}" for a in node.names if a.name.split(".")[0] in banned]
                elif (
                    isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in banned
                ):
                    found.append(f"{name}: {node.module}")
    assert found == []
