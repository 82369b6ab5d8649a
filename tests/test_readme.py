"""The README keeps its promises: its commands are the ones CI runs, its function reference is current."""

from __future__ import annotations

import re
from pathlib import Path

from xlsxplan import reference

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quickstart_commands() -> list[str]:
    section = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_quickstart_has_two_commands_an_install_and_run_and_a_test_run():
    commands = quickstart_commands()
    assert len(commands) == 2
    main_job, tests = commands
    assert "pip install" in main_job and "xlsxplan build" in main_job
    assert "pip install" in tests and "pytest" in tests


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = quickstart_commands()[1].replace("python3.11", "$PY")
    assert test_command in ci


def test_readme_function_reference_is_generated_and_current():
    assert reference.splice(README, reference.readme_table()) == README


def test_full_function_reference_is_current():
    page = (ROOT / "docs" / "FUNCTIONS.md").read_text(encoding="utf-8")
    assert page == reference.full_reference()


def test_readme_recalc_example_is_what_the_command_prints(tmp_path, monkeypatch, capsys):
    from books import plan_book

    from xlsxplan.cli import main

    section = README.split("## Headless recalculation", 1)[1].split("\n## ", 1)[0]
    example = re.search(r"```sh\n\$ (xlsxplan recalc .+?)\n(.+?)\n```", section, re.S)
    command, expected = example.group(1), example.group(2)
    monkeypatch.chdir(tmp_path)
    plan_book(tmp_path / "plan.xlsx")
    code = main(command.split()[1:])
    out = capsys.readouterr()
    assert code == 0
    assert out.out + out.err == expected + "\n"


def test_readme_recalc_python_example_runs(tmp_path, monkeypatch):
    from books import plan_book

    section = README.split("## Headless recalculation", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.+?)\n```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    plan_book(tmp_path / "plan.xlsx")
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    wb = namespace["wb"]
    assert list(wb.errors()) == ["Calc!B16"]
    assert (tmp_path / "plan.recalc.xlsx").exists() and (tmp_path / "out.xlsx").exists()


def _template_formula_counts() -> dict[str, int]:
    import openpyxl

    counts = {}
    for name in ("serving_plan.xlsx", "training_plan.xlsx"):
        wb = openpyxl.load_workbook(ROOT / "workbooks" / name)
        counts[name] = sum(1 for ws in wb for row in ws.iter_rows() for c in row if c.data_type == "f")
    return counts


def test_benchmarks_quote_the_shipped_templates_formula_counts():
    # Review finding 16: a stale paragraph said the templates were not on the branch and gave 279 and 132 formulas
    benchmarks = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    counts = _template_formula_counts()
    headless = benchmarks.split("## Headless recalculation", 1)[1].split("\n## ", 1)[0]
    quoted = re.search(r"\*\*Templates\*\*[^*]*?\((\d+) and (\d+) formula cells\)", headless)
    assert quoted and [int(n) for n in quoted.groups()] == [counts["serving_plan.xlsx"], counts["training_plan.xlsx"]]
    assert "not on this branch" not in headless
    measured = benchmarks.split("## Template recalculation", 1)[1].split("\n## ", 1)[0]
    for name, n in counts.items():
        assert re.search(rf"^{re.escape(name)} +{n} ", measured, re.M), name


def test_readme_describes_the_master_check_as_the_templates_compute_it():
    # Review finding 17: the README said the master check "adds them up"; it is =MIN(1,SUM(...)), a 0/1 flag
    from xlsxplan.templates import serving, training

    section = README.split("## Template workbooks", 1)[1].split("\n## ", 1)[0]
    assert "adds them up" not in section
    assert "`=MIN(1,SUM(...))`" in section and "1 when any of them is 1 and 0 when all are 0" in " ".join(
        section.split()
    )
    for build in (serving.build, training.build):
        book = build()
        ref = book.master_check
        assert re.fullmatch(r"=MIN\(1,SUM\(B\d+:B\d+\)\)", book.wb[ref.sheet][f"{ref.col}{ref.row}"].value)
