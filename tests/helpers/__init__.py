"""What the tests share: workbook builders (:mod:`.books`), the worked examples (:mod:`.examples`), hostile files
(:mod:`.hostile`, run in a capped child by :mod:`.hostile_run`), LibreOffice conversion (:mod:`.office`), the docs'
command blocks (:mod:`.docpages`) and the queue simulation (:mod:`.sim_queue`); and the paths every test reads.

Imported as ``tests.helpers`` (pytest runs with ``--import-mode=importlib`` and the repository root on its path), so
no test counts ``parents[...]`` to find a file.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root: README.md, docs/, workbooks/, lite/, xlsxplan/."""
TESTS = REPO / "tests"
"""The tests' folder."""
DATA = TESTS / "data"
"""The tests' data: config.json copies and published measurements, each with its source (data/README.md)."""
HELPERS = Path(__file__).resolve().parent
"""This package's folder (scripts run as child processes live here)."""
