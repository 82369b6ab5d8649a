"""Every generated file of the repository: how it is made and how a test knows the committed copy is current.

One table, :data:`GENERATED`, read by the one regeneration command (``python tests/regenerate.py``, which runs each
entry's command in order) and by the one drift test (``tests/e2e/test_generated.py``, which runs each entry's
check). The order is the order of dependence: the calibration's factors go into the workbooks, the workbooks into
the screenshots, and the docs' examples print what all of them give.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import REPO

REGENERATE = "python tests/regenerate.py"
"""The command that writes every generated file again (run from the repository's root, in its environment)."""


@dataclass(frozen=True)
class Generated:
    """One kind of generated file."""

    name: str
    files: tuple[str, ...]
    """The files it writes, relative to the repository's root."""
    command: tuple[str, ...]
    """What writes them: ``xlsxplan`` arguments, or a Python script and its arguments (``python ...``)."""
    check: Callable[[Path], None] | None
    """Raises AssertionError, naming the file, where the committed copy is not what this version writes (given a
    scratch folder); None where a test that makes the same files anyway is the check (:attr:`checked_by`: the
    workbooks, built once by the build tests; the docs' examples, run by the docs tests)."""
    checked_by: str = ""
    """The test that checks these files, where :attr:`check` is None."""
    needs: str = ""
    """What the command needs beyond the package (LibreOffice, poppler)."""


def _cli(*argv: str) -> str:
    from xlsxplan.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(argv))
    assert code == 0, f"xlsxplan {' '.join(argv)} exited {code}: {out.getvalue()[-2000:]}"
    return out.getvalue()


def _stale(path: str) -> str:
    return f"{path} is not what this version writes: run `{REGENERATE}` (or its step) and commit the result"


def _check_calibration(tmp: Path) -> None:
    from xlsxplan import calibration

    fresh_path = tmp / "calibration.json"
    _cli("calibrate", "--fit", "--out", str(fresh_path))
    fresh = json.loads(fresh_path.read_text(encoding="utf-8"))
    stored = json.loads(calibration.factors_path().read_text(encoding="utf-8"))
    assert set(fresh) == set(stored), _stale("xlsxplan/calibration/data/calibration.json")
    for key in sorted(set(fresh) - {"about"}):
        assert _rounded(fresh[key]) == _rounded(stored[key]), _stale(
            f"xlsxplan/calibration/data/calibration.json ({key})"
        )


def _rounded(value: object) -> object:
    """A factors file's figures to 6 significant digits: a refit on another machine may differ in the last bits."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def check_workbooks(built: Path) -> None:
    """Each workbook in ``built`` (both editions, as ``xlsxplan build`` and ``build --functions`` write them) is byte for byte the
    committed one (the build writes the same bytes every time), and workbooks/ holds no other."""
    for name in sorted(p.name for p in built.glob("*.xlsx")):
        committed = REPO / "workbooks" / name
        assert committed.is_file(), f"workbooks/{name} is missing: run `{REGENERATE}`"
        fresh, old = (built / name).read_bytes(), committed.read_bytes()
        if fresh != old:
            parts = _differing_parts(fresh, old)
            raise AssertionError(f"{_stale('workbooks/' + name)}; parts that differ: {', '.join(parts[:8])}")
    names = {p.name for p in built.glob("*.xlsx")}
    assert {p.name for p in (REPO / "workbooks").glob("*.xlsx")} == names, (
        "workbooks/ holds a file build does not write"
    )


def _differing_parts(a: bytes, b: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(a)) as za, zipfile.ZipFile(io.BytesIO(b)) as zb:
        names = sorted(set(za.namelist()) | set(zb.namelist()))
        return [n for n in names if n not in za.namelist() or n not in zb.namelist() or za.read(n) != zb.read(n)]


def _check_reference(tmp: Path) -> None:
    from xlsxplan.cli import reference

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert reference.splice(readme, reference.readme_table()) == readme, _stale("README.md's function table")
    page = (REPO / "docs" / "FUNCTIONS.md").read_text(encoding="utf-8")
    assert page == reference.full_reference(), _stale("docs/FUNCTIONS.md")


def _check_lite(tmp: Path) -> None:
    # A Mac or web user downloads lite/main.py and lite/requirements.txt from the repository, with no Python of
    # their own, so the committed copies must be what `xlsxplan excel --lite` writes
    from xlsxplan.excel import lite

    root = REPO / "lite"
    assert (root / "main.py").read_text(encoding="utf-8") == lite.lite_bundle(), _stale("lite/main.py")
    assert (root / "requirements.txt").read_text(encoding="utf-8") == lite.lite_requirements(), _stale(
        "lite/requirements.txt"
    )


def screenshots_module():
    """docs/screenshots.py, imported by its path (it is a script of the docs, not a module of the package)."""
    spec = importlib.util.spec_from_file_location("screenshots", REPO / "docs" / "screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_screenshots(tmp: Path) -> None:
    # docs/screenshots.py stamps each picture with the SHA-256 of the workbook it printed, and the build writes the
    # same bytes every time, so a changed template fails here until the screenshots are taken again
    shots = screenshots_module()
    for book, _title, _sheet, png in shots.SHOTS:
        stamped = shots.png_text((REPO / "docs" / png).read_bytes()).get(shots.SOURCE_KEY)
        sha = hashlib.sha256((REPO / "workbooks" / book).read_bytes()).hexdigest()
        assert stamped == sha, _stale(f"docs/{png} (it shows another workbooks/{book})")


GENERATED: tuple[Generated, ...] = (
    Generated(
        "calibration",
        ("xlsxplan/calibration/data/calibration.json", "docs/calibration_figures.json"),
        ("calibrate", "--fit", "--shipped"),
        _check_calibration,
    ),
    Generated(
        "workbooks",
        (
            "workbooks/serving_plan.xlsx",
            "workbooks/training_plan.xlsx",
            "workbooks/serving_plan_functions.xlsx",
            "workbooks/training_plan_functions.xlsx",
        ),
        ("build", "--force", "&&", "build", "--functions", "--force"),
        None,
        checked_by="tests/templates/test_build.py::test_the_committed_workbooks_are_what_build_writes",
    ),
    Generated("function reference", ("README.md", "docs/FUNCTIONS.md"), ("docs",), _check_reference),
    Generated(
        "Lite bundle",
        ("lite/main.py", "lite/requirements.txt"),
        ("excel", "--checks-only", "--force", "--lite", "lite"),
        _check_lite,
    ),
    Generated(
        "screenshots",
        ("docs/serving_plan.png", "docs/training_plan.png"),
        ("python", "docs/screenshots.py"),
        _check_screenshots,
        needs="LibreOffice and poppler (soffice, pdftotext, pdftoppm)",
    ),
    Generated(
        "Excel match table",
        ("docs/headless.md",),
        ("python", "tests/helpers/excel_corpus.py"),
        None,
        checked_by="tests/headless/test_excel_corpus.py::test_the_match_table_in_the_docs_is_what_this_version_gives",
    ),
    Generated(
        "docs examples",
        ("README.md", "docs/*.md", "CONTRIBUTING.md", "SECURITY.md", "BENCHMARKS.md"),
        ("python", "tests/helpers/refresh_examples.py"),
        None,
        checked_by="tests/e2e/test_docs.py::test_each_command_prints_what_the_page_shows",
    ),
)


def regenerate(names: list[str] | None = None) -> int:
    """Run each entry's command in order (only ``names``, if given); 0 if all succeeded."""
    import os
    import subprocess

    from xlsxplan.cli import main

    os.chdir(REPO)  # the commands write where the checkout keeps each file
    for item in GENERATED:
        if names and item.name not in names:
            continue
        print(f"== {item.name}: {' '.join(item.command)}", flush=True)
        if item.command[0] == "python":
            code = subprocess.run([sys.executable, *item.command[1:]], cwd=REPO).returncode
        else:
            code = 0
            for argv in " ".join(item.command).split(" && "):
                code = code or main(argv.split())
        if code:
            print(f"{item.name}: exit {code}" + (f" (needs {item.needs})" if item.needs else ""), file=sys.stderr)
            return code
    return 0


def check(item: Generated) -> None:
    """Run ``item``'s drift check in a scratch folder."""
    assert item.check is not None
    with tempfile.TemporaryDirectory(prefix="xlsxplan-generated-") as tmp:
        item.check(Path(tmp))
