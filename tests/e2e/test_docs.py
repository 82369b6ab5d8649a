"""Every example in README.md, docs/ and the other top-level pages is run, and prints what the page says.

Each ``$ xlsxplan ...`` command of a fenced block runs through the command line's ``main`` in a fresh folder holding
a copy of ``workbooks/`` and a link to ``tests/`` (for ``tests/data``), plus the ``plan.xlsx`` of ``tests/helpers/books.py``
when a command names it; a path under ``/tmp/`` goes to the test's own folder instead. What it prints (stdout, then
stderr) must be the lines under it, ``...`` skipping lines; ``; echo "exit $?"`` prints the exit status, which is
otherwise 0, or 1 where the output is an error value (``#NUM! ...``). ``export NAME=VALUE`` sets a variable for the
rest of the block. Each ```python block with ``>>>`` prompts runs as a doctest in such a folder.

The pages' other promises are checked here too: the README is at most 250 lines, every module a page names exists,
no page cites a source by anything but its title, links land, every arXiv paper the package cites is in
docs/references.md, and SECURITY.md's limits are the code's.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import re
import shlex

import pytest

from tests.helpers.docpages import (
    EXIT,
    ROOT,
    Block,
    commands,
    doctest_blocks,
    example_folder,
    is_build_block,
    matches,
    outside_code,
    pages,
    read,
    shell_blocks,
    words,
)


@pytest.fixture
def quiet_machine(monkeypatch):
    """The command line caps its own address space; the test process keeps its own."""
    monkeypatch.setattr("xlsxplan.infra.system.limit_address_space", lambda gigabytes: False)


def test_only_the_templates_page_s_build_is_left_to_the_build_tests():
    assert [b.page for b in shell_blocks() if is_build_block(b)] == ["docs/templates.md"]
    source = (ROOT / "tests" / "templates" / "test_build.py").read_text(encoding="utf-8")
    assert "def test_the_templates_page_shows_what_build_prints(cli_build):" in source


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in shell_blocks() if not is_build_block(b)], ids=lambda b: b.where)
def test_each_command_prints_what_the_page_shows(block: Block, tmp_path, monkeypatch, capsys, quiet_machine):
    from xlsxplan.cli import main

    monkeypatch.chdir(example_folder(tmp_path, block.text))
    for command, shown in commands(block):
        if command.startswith("export "):
            name, _, value = command.removeprefix("export ").partition("=")
            monkeypatch.setenv(name, value)
            assert shown == "", f"{block.where}: export prints nothing"
            continue
        echo = EXIT.search(command)
        argv = shlex.split(EXIT.sub("", command), comments=True)
        assert argv[0] == "xlsxplan", f"{block.where}: {command}"
        argv = [str(tmp_path / a.removeprefix("/tmp/")) if a.startswith("/tmp/") else a for a in argv]
        code = main(argv[1:])
        out = capsys.readouterr()
        printed = out.out + out.err + (f"exit {code}\n" if echo else "")
        assert matches(printed, shown), f"{block.where}: $ {command}\nprinted:\n{printed}\nthe page shows:\n{shown}"
        if not echo:
            assert code == (1 if shown.startswith("#") else 0), f"{block.where}: $ {command} exited {code}"


@pytest.mark.parametrize("block", doctest_blocks(), ids=lambda b: b.where)
def test_each_python_example_prints_what_the_page_shows(block: Block, tmp_path, monkeypatch):
    monkeypatch.chdir(example_folder(tmp_path, block.text))
    test = doctest.DocTestParser().get_doctest(block.text, {}, block.where, block.page, block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)


def test_there_are_examples_to_run():
    by_page = {p: len(shell_blocks(p)) + len(doctest_blocks(p)) for p in pages()}
    for page in (
        "README.md",
        "docs/excel.md",
        "docs/headless.md",
        "docs/templates.md",
        "docs/traffic.md",
        "docs/architectures.md",
        "docs/calibration.md",
    ):
        assert by_page[page] >= 1, page
    assert doctest_blocks("README.md") and doctest_blocks("docs/headless.md")


def test_every_fenced_command_line_is_run_or_is_an_instruction():
    # a line that looks like a command with output under it but lacks its "$ " would silently escape the runner
    for page in pages():
        for block in shell_blocks(page):
            for line in block.text.split("\n"):
                assert not line.startswith("xlsxplan "), f"{block.where}: {line!r} has no '$ '"


# --- What the pages promise --------------------------------------------------------------------------------------


def test_the_readme_is_a_front_door_of_at_most_250_lines():
    assert len(read("README.md").splitlines()) <= 250


def test_the_manual_is_in_docs():
    for name in ("excel", "templates", "headless", "architectures", "calibration", "traffic", "references"):
        assert (ROOT / "docs" / f"{name}.md").is_file(), name
    readme = read("README.md")
    for page in [p for p in pages() if p != "README.md"]:
        assert f"]({page})" in readme, f"the README links to {page}"


def _prose(page: str) -> str:
    """A page without the generated function table."""
    text = read(page)
    return re.sub(r"<!-- function-reference:start.*?<!-- function-reference:end -->", "", text, flags=re.S)


@pytest.mark.parametrize("page", pages())
def test_sources_are_cited_by_title(page):
    found = re.findall(r"(?i)\b(?:seeds?\b(?: \d+)?|issue \d+|audit)\b", _prose(page))
    assert found == [], f"{page}: cite by title, not {found}"


def _dotted_names(text: str) -> set[str]:
    return set(re.findall(r"\bxlsxplan(?:\.[A-Za-z_]\w*)+", text))


@pytest.mark.parametrize("page", pages())
def test_every_module_a_page_names_exists(page):
    missing = []
    for name in sorted(_dotted_names(_prose(page))):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable prefix, then attributes of it
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                missing.append(name)
            break
        else:
            missing.append(name)
    assert missing == []


@pytest.mark.parametrize("page", pages())
def test_every_path_a_page_names_exists(page):
    text = _prose(page)
    paths = set(re.findall(r"`((?:xlsxplan|tests|docs|benchmarks|workbooks|lite|\.ci)/[\w./*-]+)`", text))
    missing = [p for p in sorted(paths) if not any(ROOT.glob(p.rstrip("/")))]
    assert missing == []


def _anchors(page: str) -> set[str]:
    """GitHub's anchors for the headings of a page."""
    out = set()
    for _, line in outside_code(read(page)):
        if m := re.match(r"^#{1,6} (.+)$", line):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


@pytest.mark.parametrize("page", pages())
def test_every_link_lands(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", "\n".join(line for _, line in outside_code(read(page)))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = ((ROOT / page).parent / path if path else ROOT / page).resolve()
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved.relative_to(ROOT).as_posix()):
            broken.append(target)
    assert broken == []


def _cited_arxiv_ids() -> set[str]:
    package = ROOT / "xlsxplan"
    files = [*package.rglob("*.py"), *package.rglob("*.toml"), *package.rglob("*.csv")]
    return {m for f in files for m in re.findall(r"arXiv:(\d{4}\.\d{4,5})", f.read_text(encoding="utf-8"))}


def test_the_references_list_both_source_texts_and_every_paper_the_package_cites():
    references = words(read("docs/references.md"))
    assert '"Back-of-the-Envelope Estimation for LLM Systems"' in references
    assert '"Estimating the Compute and Memory Needed for Language Models"' in references
    cited = _cited_arxiv_ids()
    assert len(cited) > 30
    assert sorted(i for i in cited if f"arXiv:{i}" not in references) == []


def test_the_references_name_every_source_of_the_calibration_measurements():
    import csv

    references = read("docs/references.md")
    with open(ROOT / "xlsxplan" / "calibration" / "data" / "measurements.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    repos = {m for r in rows for m in re.findall(r"github\.com/([\w.-]+/[\w.-]+)", r["source"])}
    assert repos and sorted(r for r in repos if r not in references) == []
    lines = re.findall(r"^\| (\d+)(?:-(\d+))? \|", references.split("## Calibration measurements", 1)[1], re.M)
    covered = {n for a, b in lines for n in range(int(a), int(b or a) + 1)}
    assert covered == set(range(2, len(rows) + 2))  # every row of the file, by its line number


def test_security_states_the_limits_the_code_enforces():
    from xlsxplan.excel.vba import MAX_VBA_MB
    from xlsxplan.headless import Limits
    from xlsxplan.infra.zipfiles import BLANK_MAX

    security = read("SECURITY.md")
    table = re.findall(r"^\| [^|]+ \| `(max_\w+)` \| ([\d,]+)(?: (?:MiB|GB))? \|$", security, re.M)
    defaults = Limits()
    assert sorted(name for name, _ in table) == sorted(f.name for f in dataclasses.fields(Limits))
    for name, shown in table:
        assert float(shown.replace(",", "")) == getattr(defaults, name), name
    prose = words(security)
    assert f"{BLANK_MAX // 1024} KiB of blank space" in prose and f"{MAX_VBA_MB} MiB of VBA project" in prose
    for promise in (
        "is not guaranteed",
        "Macros never run",
        "Nothing outside the workbook is reached",
        "Zip bombs",
        "entity bombs",
        "Text stays text",
    ):
        assert promise.lower() in prose.lower(), promise


def test_contributing_says_how_to_run_lint_regenerate_and_where_the_fast_loop_time_goes():
    text = words(read("CONTRIBUTING.md"))
    for needed in (
        'pytest -m "not slow"',
        ".venv/bin/python -m pytest -q",
        "tests/test_layers.py",
        "ruff check",
        "xlsxplan build",
        "xlsxplan docs",
        "xlsxplan excel --checks-only --force --lite lite",
        "python docs/screenshots.py",
        "python tests/regenerate.py",
        "The fast loop's time is measured in [BENCHMARKS.md](BENCHMARKS.md)",
        "<!-- fast-loop-time -->",
    ):
        assert needed in text, needed
