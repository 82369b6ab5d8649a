"""The project's Markdown pages and the examples in them, for the tests that keep the docs honest.

An example is a fenced block (```sh, ```text, ```console or bare ```) holding lines that start with ``$ ``: each is a
command (a line ending in a backslash goes on), and the lines under it, up to the next ``$`` line or the end of the
block, are what it prints (``...`` on a line of its own skips any number of lines). A ```python block with ``>>>``
prompts is a doctest. The pages: README.md, SECURITY.md, CONTRIBUTING.md, BENCHMARKS.md and every page in docs/ but
the generated FUNCTIONS.md.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import REPO

ROOT = REPO
GENERATED = {"docs/FUNCTIONS.md"}


def pages() -> list[str]:
    """The pages written by hand, as paths relative to the checkout."""
    found = ["README.md", "SECURITY.md", "CONTRIBUTING.md", "BENCHMARKS.md"]
    found += sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    return [p for p in found if p not in GENERATED]


def read(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def outside_code(text: str) -> list[tuple[int, str]]:
    """(line number, line) for every line outside fenced code blocks."""
    out, fence = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            out.append((n, line))
    return out


def section(text: str, heading: str) -> str:
    """The text under the heading ``heading`` (any level), up to the next heading of the same level or above."""
    lines = text.split("\n")
    headings = [
        (n, len(m.group(1)), m.group(2).strip())
        for n, line in outside_code(text)
        if (m := re.match(r"^(#{1,6}) (.+)$", line))
    ]
    for i, (n, level, title) in enumerate(headings):
        if title == heading:
            end = next((m for m, lv, _ in headings[i + 1 :] if lv <= level), len(lines) + 1)
            return "\n".join(lines[n : end - 1])
    raise KeyError(f"no heading {heading!r}")


def words(text: str) -> str:
    """``text`` with every run of white space one space: a phrase wrapped across lines still reads as one."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: where it starts, its language and its text."""

    page: str
    line: int
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    found, lang, start, body = [], None, 0, []
    for n, line in enumerate(read(page).split("\n"), 1):
        stripped = line.strip()
        if lang is None and stripped.startswith("```"):
            lang, start, body = stripped[3:].strip(), n, []
        elif lang is not None and stripped == "```":
            found.append(Block(page, start, lang, "\n".join(body)))
            lang = None
        elif lang is not None:
            body.append(line)
    return found


def commands(block: Block) -> list[tuple[str, str]]:
    """Each ``$ ...`` command of a shell block, joined across backslashes, with what it prints under it."""
    pairs = []
    for chunk in re.split(r"^\$ ", block.text, flags=re.M)[1:]:
        lines = chunk.removesuffix("\n").split("\n")
        n = 0
        while lines[n].endswith("\\"):
            n += 1
        command = " ".join(line.rstrip("\\").strip() for line in lines[: n + 1])
        printed = "\n".join(lines[n + 1 :])
        pairs.append((command, printed + "\n" if printed else ""))
    return pairs


def shell_blocks(page: str | None = None) -> list[Block]:
    """The blocks of ``page`` (of every page if None) with ``$`` commands in them."""
    return [
        b
        for p in ([page] if page else pages())
        for b in blocks(p)
        if b.lang in ("", "sh", "text", "console") and re.search(r"^\$ ", b.text, re.M)
    ]


def doctest_blocks(page: str | None = None) -> list[Block]:
    """The ```python blocks of ``page`` (of every page if None) with ``>>>`` prompts."""
    return [
        b
        for p in ([page] if page else pages())
        for b in blocks(p)
        if b.lang == "python" and re.search(r"^>>> ", b.text, re.M)
    ]


def matches(printed: str, shown: str) -> bool:
    """Whether ``printed`` is what ``shown`` says, a line ``...`` in ``shown`` standing for any lines."""
    parts = [re.escape(part) for part in re.split(r"^\.\.\.\n", shown, flags=re.M)]
    return re.fullmatch("(?:.*\n)*?".join(parts), printed) is not None


EXIT = re.compile(r';\s*echo "exit \$\?"$')
"""A command's ending that shows its exit status (`; echo "exit $?"`)."""


def is_build_block(block: Block) -> bool:
    """Whether ``block`` runs ``xlsxplan build`` and nothing else: docs/templates.md's, which
    tests/templates/test_build.py checks on the one build its tests share, and tests/e2e/test_docs.py does not run
    again."""
    return [command for command, _ in commands(block)] == ["xlsxplan build"]


def example_folder(tmp_path: Path, text: str) -> Path:
    """A fresh folder for one block: the committed workbooks, tests/ for its data, plan.xlsx if the block uses it."""
    work = tmp_path / "work"
    work.mkdir()
    if "workbooks/" in text:
        shutil.copytree(ROOT / "workbooks", work / "workbooks")
    (work / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    if re.search(r"(?<![\w/.-])plan\.xlsx\b", text):
        from .books import plan_book

        plan_book(work / "plan.xlsx")
    return work
