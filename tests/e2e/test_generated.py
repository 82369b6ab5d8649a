"""The one drift test: every generated file in the repository is what this version writes.

The files, how each is made and how it is checked are one table (``tests/helpers/generated.py``); ``python
tests/regenerate.py`` writes them all again. Two kinds are checked where the suite makes them anyway, by the test the
table names: the workbooks where the build tests build them (tests/templates/test_build.py), the docs' printed
examples where they are run (tests/e2e/test_docs.py).
"""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO
from tests.helpers.generated import GENERATED, REGENERATE, check


@pytest.mark.slow
@pytest.mark.parametrize("item", [g for g in GENERATED if g.check], ids=lambda g: g.name)
def test_the_committed_copy_is_what_this_version_writes(item):
    check(item)


def test_every_generated_file_exists_and_each_kind_has_a_check():
    for item in GENERATED:
        for name in item.files:
            assert list(REPO.glob(name)), name
        assert item.check or item.checked_by, item.name
        if item.checked_by:
            path, test = item.checked_by.split("::")
            assert f"def {test}(" in (REPO / path).read_text(encoding="utf-8"), item.checked_by


def test_contributing_names_the_one_regeneration_command_and_every_generated_file():
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert REGENERATE in text
    for item in GENERATED:
        for name in item.files:
            assert re.search(rf"`{re.escape(name)}`", text), name
