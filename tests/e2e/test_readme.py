"""The README keeps its promises: its commands are the ones CI runs, its function reference is current, it shows each
face. Every example on it (and in docs/) is run by tests/e2e/test_docs.py."""

from __future__ import annotations

import re

from tests.helpers import REPO
from tests.helpers.docpages import read, section, words

ROOT = REPO
README = read("README.md")


def quickstart_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", section(README, "Quickstart"))


def test_quickstart_has_two_commands_an_install_and_run_and_a_test_run():
    commands = quickstart_commands()
    assert len(commands) == 2
    main_job, tests = commands
    assert "pip install" in main_job and "xlsxplan build" in main_job
    assert "pip install" in tests and "pytest" in tests
    assert commands == [
        "python3.11 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/xlsxplan build",
        'python3.11 -m venv .venv && .venv/bin/pip install -q ".[test]" && .venv/bin/python -m pytest -q',
    ]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = quickstart_commands()[1].replace("python3.11", "$PY")
    assert test_command in ci


def test_the_readme_shows_each_face_on_one_screen():
    # a formula (xlsxplan eval and the Python API), a template (its screenshot), a recalculation (--set); the
    # examples themselves run in tests/e2e/test_docs.py, the manual for each face is in docs/
    face = {name: section(README, name) for name in ("A formula", "A template", "A recalculation")}
    assert "$ xlsxplan eval " in face["A formula"] and ">>> import xlsxplan" in face["A formula"]
    assert "](docs/serving_plan.png)" in face["A template"] and "](docs/templates.md)" in face["A template"]
    assert re.search(r"^\$ xlsxplan recalc .+ --set ", face["A recalculation"], re.M)
    for text in face.values():
        assert len(text.splitlines()) <= 40


def _template_formula_counts() -> dict[str, int]:
    import openpyxl

    counts = {}
    for name in ("serving_plan.xlsx", "training_plan.xlsx"):  # the add-in edition's, which the benchmarks measure
        wb = openpyxl.load_workbook(ROOT / "workbooks" / name.replace(".xlsx", "_functions.xlsx"))
        counts[name] = sum(1 for ws in wb for row in ws.iter_rows() for c in row if c.data_type == "f")
    return counts


def test_benchmarks_quote_the_shipped_templates_formula_counts():
    # Review finding 16: a stale paragraph said the templates were not on the branch and gave 279 and 132 formulas
    benchmarks = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    counts = _template_formula_counts()
    headless = benchmarks.split("## Headless recalculation", 1)[1].split("\n## ", 1)[0]
    quoted = re.search(r"\*\*Templates\*\*[^*]*?\(([\d,]+) and ([\d,]+) formula cells\)", headless)
    assert quoted and [int(n.replace(",", "")) for n in quoted.groups()] == [
        counts["serving_plan.xlsx"],
        counts["training_plan.xlsx"],
    ]
    assert "not on this branch" not in headless
    measured = benchmarks.split("## Template recalculation", 1)[1].split("\n## ", 1)[0]
    for name, n in counts.items():
        assert re.search(rf"^{re.escape(name)} +{n} ", measured, re.M), name


def test_the_templates_page_describes_the_master_check_as_the_templates_compute_it():
    # Review finding 17: the manual said the master check "adds them up"; it is =MIN(1,SUM(...)), a 0/1 flag
    from xlsxplan.templates import serving, training

    page = words(read("docs/templates.md"))
    assert "adds them up" not in page
    assert "`=MIN(1,SUM(...))`" in page and "1 when any of them is 1 and 0 when all are 0" in page
    for build in (serving.build, training.build):
        book = build()
        ref = book.master_check
        assert re.fullmatch(r"=MIN\(1,SUM\(B\d+:B\d+\)\)", book.wb[ref.sheet][f"{ref.col}{ref.row}"].value)
