"""CI fails, rather than skips, the LibreOffice cross-checks when LibreOffice or poppler is missing (.ci/run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO

ROOT = REPO

SKIPPING = """
import pytest

@pytest.mark.skipif(True, reason="LibreOffice (soffice) is not installed")
def test_cross_check():
    pass

@pytest.mark.skipif(True, reason="needs a GPU")
def test_unrelated_skip():
    pass
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "required, code, outcome, workers",
    [(None, 0, "2 skipped", "0"), ("1", 1, "1 skipped, 1 error", "0"), ("1", 1, "1 skipped, 1 error", "2")],
)  # the suite runs on pytest-xdist's workers (pyproject.toml): the failure must reach the summary from a worker too
def test_a_libreoffice_skip_fails_only_where_ci_requires_it(tmp_path, required, code, outcome, workers):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    env = {k: v for k, v in os.environ.items() if k != "XLSXPLAN_REQUIRE_LIBREOFFICE"}
    env["COLUMNS"] = "300"  # the summary line whole
    if required:
        env["XLSXPLAN_REQUIRE_LIBREOFFICE"] = required
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert result.returncode == code, result.stdout + result.stderr
    assert outcome in result.stdout
    if required:
        assert "XLSXPLAN_REQUIRE_LIBREOFFICE=1 but this test would be skipped: LibreOffice (soffice)" in result.stdout


def test_ci_requires_libreoffice_and_fails_when_it_cannot_install_it():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "export XLSXPLAN_REQUIRE_LIBREOFFICE=1" in ci
    assert "will be skipped" not in ci
    assert "exit 1" in ci and "for tool in soffice pdftotext" in ci


@pytest.mark.slow
@pytest.mark.parametrize("option, workers", [([], True), (["-p", "no:xdist"], False), (["-n", "0"], False)])
def test_the_suite_runs_on_workers_unless_xdist_is_off_or_given_none(tmp_path, option, workers):
    # pyproject.toml's addopts start pytest-xdist's workers; without the plugin (tests/conftest.py then accepts and
    # ignores its options) or with -n 0, the same command runs the tests in this one process
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            *option,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout and ("bringing up nodes" in result.stdout) == workers, result.stdout
