"""Rewrite the printed output of every ``$ xlsxplan ...`` example in the pages from what the command prints now.

    .venv/bin/python tests/helpers/refresh_examples.py              # every page tests/e2e/test_docs.py runs
    .venv/bin/python tests/helpers/refresh_examples.py docs/planning.md

The one command that regenerates the docs' pinned command output (after a calibration refit or a model change),
so that no printed figure is edited by hand. Each command runs as tests/e2e/test_docs.py runs it (the command line's
``main`` in a fresh folder holding a copy of ``workbooks/``, ``tests/`` linked, ``plan.xlsx`` where a block names it,
``/tmp/`` paths in that folder). A block whose output already matches is left as it is; elsewhere the lines under a
command become what it printed, except that a shown output with one ``...`` line keeps as many lines before and after
it as it had. It prints each example it changed; read the diff before committing.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, run as a script

from tests.helpers.docpages import EXIT, ROOT, Block, commands, example_folder, matches, pages, read, shell_blocks  # noqa: E402


def _run(command: str, tmp: Path) -> tuple[str, int, bool]:
    from xlsxplan.cli import main

    echo = EXIT.search(command) is not None
    argv = shlex.split(EXIT.sub("", command), comments=True)
    argv = [str(tmp / a.removeprefix("/tmp/")) if a.startswith("/tmp/") else a for a in argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv[1:])
    return out.getvalue() + err.getvalue() + (f"exit {code}\n" if echo else ""), code, echo


def _shown_like(printed: str, shown: str) -> str:
    """``printed`` as the page shows it: where ``shown`` skips lines with ``...``, each shown stretch keeps its
    length, the first one at the top, the last at the bottom, one between found by its first line's first words;
    all of it where that fails."""
    parts = [p.splitlines(keepends=True) for p in re.split(r"^\.\.\.\n", shown, flags=re.M)]
    if len(parts) == 1:
        return printed
    lines = printed.splitlines(keepends=True)
    out, at = list(lines[: len(parts[0])]), len(parts[0])
    for part in parts[1:-1]:
        key = part[0][:24] if part else ""
        found = next((i for i in range(at, len(lines)) if key and lines[i].startswith(key)), None)
        if found is None:
            return printed
        out += ["...\n", *lines[found : found + len(part)]]
        at = found + len(part)
    tail = len(parts[-1])
    if at + tail > len(lines):
        return printed
    out += ["...\n", *(lines[len(lines) - tail :] if tail else [])]
    return "".join(out)


def refresh(block: Block) -> str | None:
    """The block's new text, or None if every command prints what it shows."""
    import xlsxplan.infra.system

    xlsxplan.infra.system.limit_address_space = lambda gigabytes: False  # the command line's cap, off in this process
    changed, pieces = False, []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        here, env = os.getcwd(), dict(os.environ)
        os.chdir(example_folder(tmp, block.text))
        try:
            for command, shown in commands(block):
                if command.startswith("export "):
                    name, _, value = command.removeprefix("export ").partition("=")
                    os.environ[name] = value
                    pieces.append((command, shown))
                    continue
                printed, _, _ = _run(command, tmp)
                if matches(printed, shown):
                    pieces.append((command, shown))
                else:
                    changed = True
                    pieces.append((command, _shown_like(printed, shown)))
        finally:
            os.chdir(here)
            os.environ.clear()
            os.environ.update(env)
    if not changed:
        return None
    chunks = re.split(r"^\$ ", block.text, flags=re.M)
    text = chunks[0]  # what the block holds before its first command
    for (command, output), raw in zip(pieces, chunks[1:], strict=True):
        first = raw.split("\n")
        n = 0
        while first[n].endswith("\\"):
            n += 1
        text += "$ " + "\n".join(first[: n + 1]) + "\n" + output
        del command
    return text.removesuffix("\n")


def main(argv: list[str]) -> int:
    targets = argv or pages()
    for page in targets:
        text = read(page)
        lines = text.split("\n")
        for block in reversed(shell_blocks(page)):  # from the end, so earlier line numbers stay right
            new = refresh(block)
            if new is None:
                continue
            body = block.text.split("\n")
            start = block.line  # the fence's line (1-based); the body follows it
            assert lines[start : start + len(body)] == body, block.where
            lines[start : start + len(body)] = new.split("\n")
            print(f"refreshed {block.where}")
        (ROOT / page).write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
