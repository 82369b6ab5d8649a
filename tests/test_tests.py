"""The tests' own rules: they mirror the package folder by folder, no test asserts a wall-clock time, and the fast
loop (``pytest -m "not slow"``) runs tests in every folder.

A time bound in a unit test fails on a busy machine while nothing is wrong: speed lives in ``benchmarks/`` and
BENCHMARKS.md, and a test bounds the work instead (elements scanned, bytes read, calls made).
"""

from __future__ import annotations

import ast
import re

import pytest

from tests.helpers import REPO, TESTS

PACKAGE = REPO / "xlsxplan"
NOT_MIRRORS = {
    "helpers": "what the tests share",
    "data": "published measurements and config copies",
    "e2e": "end to end: the README, the docs' examples, CI",
}
TIME_CALLS = re.compile(r"perf_counter|process_time|thread_time|monotonic|time\.time\(|datetime\.now\(")
TIME_WORDS = re.compile(r"seconds|elapsed|duration|wall|took", re.I)
TIME_BOUND = re.compile(r"^[A-Z][A-Z0-9_]*(_S|_SECONDS|_MS)$")


def _folders(root) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}


def _packages() -> set[str]:
    """The package's folders of modules (core/ and excel/ are namespace packages: no ``__init__.py``)."""
    return {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}


def test_the_tests_mirror_the_package_folder_by_folder():
    packages = _packages()
    assert _folders(TESTS) - set(NOT_MIRRORS) == packages
    for folder in packages:
        assert any((TESTS / folder).glob("test_*.py")), folder
    tested = {p.stem.removeprefix("test_") for p in TESTS.glob("test_*.py")}
    assert {"package", "precision", "registry", "layers"} <= tested  # the top-level modules and the package's shape


def time_assertions(source: str) -> list[str]:
    """The ``assert`` statements in ``source`` that bound a wall-clock time: any that calls a clock, and any
    comparison with ``<``, ``<=``, ``>`` or ``>=`` between something timed (a variable, item or attribute named for
    seconds, elapsed, duration or wall time) and a number or a constant named like a time limit (``CASE_S``,
    ``LIMIT_SECONDS``). A model's seconds computed by a call (``train_seconds(...) < 184_320``) are not a clock."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assert):
            continue
        text = ast.unparse(node)
        if TIME_CALLS.search(text):
            found.append(text)
            continue
        for cmp in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            sides = [cmp.left, *cmp.comparators]
            if not any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in cmp.ops):
                continue
            # a measured time is held in a variable, an item or an attribute; a model's seconds come from a call
            held = (ast.Name, ast.Subscript, ast.Attribute)
            timed = any(isinstance(s, held) and TIME_WORDS.search(ast.unparse(s)) for s in sides)
            bound = any(
                (isinstance(s, ast.Name) and TIME_BOUND.match(s.id)) or isinstance(s, ast.Constant) for s in sides
            )
            named = any(isinstance(s, ast.Name) and TIME_BOUND.match(s.id) for s in sides)
            if (timed and bound) or (named and timed):
                found.append(text)
                break
    return found


@pytest.mark.parametrize(
    "condition, caught",
    [  # each the condition of an assert statement (the test writes the keyword, so that no line here is one)
        ('got["seconds"] < CASE_S, got', True),
        ("time.perf_counter() - start < 2", True),
        ("elapsed <= 1.5", True),
        ("wall_s < LIMIT_SECONDS", True),
        ("slower < x.replica_rps(PREFILL_S, OUTPUT, T94)", False),  # a model's prefill seconds, not a clock
        ("scanned <= 4 * rows", False),
        ("train_seconds(6.7, 2e12, 1, 312, fast) / 3600 < 184_320", False),
        ('got["peak_mb"] < PEAK_MB', False),
    ],
)
def test_the_time_assertion_search_finds_clocks_and_time_bounds(condition, caught):
    assert bool(time_assertions(f"assert {condition}")) is caught


def test_no_test_asserts_a_wall_clock_time():
    found = []
    for path in sorted(TESTS.rglob("*.py")):  # this file too: its examples are conditions, not assert lines
        found += [f"{path.relative_to(REPO)}: {t}" for t in time_assertions(path.read_text(encoding="utf-8"))]
    assert found == []


def fast_tests(source: str) -> list[str]:
    """The test functions of a test file that ``pytest -m "not slow"`` runs: none where the module's ``pytestmark``
    holds the slow mark, else those without ``@pytest.mark.slow`` (read from the source, as the tests mark it)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            if "pytest.mark.slow" in ast.unparse(node.value):
                return []
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    return [f.name for f in functions if not any("pytest.mark.slow" in ast.unparse(d) for d in f.decorator_list)]


def test_the_fast_loop_runs_tests_in_every_folder():
    """``pytest -m "not slow"`` runs tests in every mirrored folder and at the top: the fast loop touches every
    package (slow = LibreOffice, hostile corpora, kill tests, big books). The folders it runs, and how many tests in
    each (functions, before parametrization):"""
    runs: dict[str, int] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        folder = path.parent.name if path.parent != TESTS else "."
        runs[folder] = runs.get(folder, 0) + len(fast_tests(path.read_text(encoding="utf-8")))
    assert {f for f, n in runs.items() if n} >= _packages() | {".", "e2e"}, runs


@pytest.mark.parametrize(
    "source, fast",
    [
        ("import pytest\ndef test_a(): pass\n@pytest.mark.slow\ndef test_b(): pass", ["test_a"]),
        ("import pytest\npytestmark = [pytest.mark.slow]\ndef test_a(): pass", []),
        ("import pytest\n@pytest.mark.parametrize('x', [1])\n@pytest.mark.slow\ndef test_a(x): pass", []),
    ],
)
def test_the_fast_loop_reading_sees_both_ways_of_marking_slow(source, fast):
    assert fast_tests(source) == fast


def test_peak_growth_sees_what_a_block_holds_at_its_peak():
    """The memory bound of the hostile-input tests: a block that holds 64 MiB at once measures over 60 MiB, one that
    holds 1 MiB at a time measures well under 16 MiB."""
    from tests.helpers.memory import peak_growth

    with peak_growth() as big:
        block = bytearray(64 * 2**20)
        block[::4096] = b"x" * len(block[::4096])  # touch every page, so that it is resident
        del block
    with peak_growth() as small:
        for _ in range(64):
            chunk = bytearray(2**20)
            chunk[::4096] = b"x" * len(chunk[::4096])
            del chunk
    assert big[0] > 60 * 2**20
    assert small[0] < 16 * 2**20
