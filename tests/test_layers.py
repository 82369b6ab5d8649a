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

ROOT = Path(__file__).resolve().parents[1] / "xlsxplan"

# (module prefix, rank, group). A module may import a module of a lower rank, or of its own rank and group; a face
# (rank FACE) never imports another face. The longest matching prefix decides.
LAYERS = [
    ("xlsxplan.errors", 0, "basics"),
    ("xlsxplan.elementwise", 1, "basics"),
    ("xlsxplan.domains", 1, "basics"),
    ("xlsxplan.fileio", 1, "basics"),
    ("xlsxplan.text", 1, "basics"),
    ("xlsxplan.system", 1, "basics"),
    ("xlsxplan.zipfiles", 1, "basics"),
    ("xlsxplan.precision", 2, "basics"),
    ("xlsxplan.core", 3, "core"),
    ("xlsxplan.core.effects", 3, "core"),  # communication and attention effects (calibration uses them)
    ("xlsxplan.catalog", 4, "catalog"),
    ("xlsxplan.calibration", 5, "calibration"),
    ("xlsxplan.registry", 6, "registry"),
    ("xlsxplan.cells", 6, "registry"),
    ("xlsxplan.native", 6, "registry"),  # the registry functions as native formulas, the catalog as tables
    ("xlsxplan.xlwings_conf", 6, "registry"),
    ("xlsxplan.portable_layout", 6, "registry"),  # the frozen-values block the portable builder writes, recalc reads
    ("xlsxplan", 6, "registry"),  # the package itself: its public API, over the core and the data
    ("xlsxplan.excel", 7, "excel"),
    ("xlsxplan.headless", 7, "headless"),
    ("xlsxplan.templates", 7, "templates"),
    ("xlsxplan.reference", 7, "docs"),
    ("xlsxplan.cli", 8, "cli"),
    ("xlsxplan.__main__", 8, "cli"),
]
FACE = 7


def _layer(module: str) -> tuple[int, str]:
    best = max((p for p in LAYERS if module == p[0] or module.startswith(p[0] + ".")), key=lambda p: len(p[0]))
    return best[1], best[2]


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
    return tuple(out)


def test_the_layers_cover_every_module():
    assert sorted(MODULES) and all(_layer(m) for m in MODULES)


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
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and aliases[node.value.id] != module):  # fmt: skip
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
