"""Test-wide settings: never read or write the real user's catalog; in CI, never skip the LibreOffice cross-checks."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

# No per-example deadline by default: the suite runs on two workers beside LibreOffice and child processes on two
# cores, where a pause for CPU says nothing about the code. A test's own @settings still apply.
settings.register_profile("xlsxplan", deadline=None)
settings.load_profile("xlsxplan")  # --hypothesis-profile NAME still chooses another


def pytest_addoption(parser, pluginmanager):
    """pyproject.toml's addopts run the suite on pytest-xdist's workers (``-n auto --dist loadfile``). Where xdist is
    not loaded (``-p no:xdist``, or an environment installed before it joined the test extra), accept and ignore
    those two options, so that the same command runs every test in this one process instead of failing to parse."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist", "distributed testing (pytest-xdist is not loaded: tests run in one process)")
    group._addoption("-n", "--numprocesses", dest="numprocesses", default=None, help="ignored without pytest-xdist")
    group.addoption("--dist", dest="dist", default="no", help="ignored without pytest-xdist")


def pytest_configure(config):
    """Before collection, which already reads the catalog (parametrized lists of presets), point the user catalog
    and factors at an empty folder: a preset or a refit of the person running the tests never changes them."""
    import shutil
    import tempfile

    # Bytecode is kept, as an installed package keeps it (pip compiles it at install): where the shell sets
    # PYTHONDONTWRITEBYTECODE, every worker and every child process the tests start (the command line, the hostile
    # corpus, the kill test) would compile the package from source again. Set before xdist starts its workers.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False

    # pytest-xdist hands the files out in the order the workers collected them (pytest_collection_modifyitems)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False

    folder = tempfile.mkdtemp(prefix="xlsxplan-user-catalog-")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.environ["XLSXPLAN_CATALOG_DIR"] = folder
    os.environ.pop("XLSXPLAN_CALIBRATION", None)


LONGEST_FIRST = (
    "tests/templates/test_portable_libreoffice.py",
    "tests/headless/test_frozen.py",
    "tests/templates/test_build.py",
    "tests/templates/test_portable.py",
    "tests/sheet/test_native.py",
    "tests/headless/test_untrusted.py",
    "tests/templates/test_plans.py",
    "tests/core/test_queueing.py",
    "tests/calibration/test_measurements.py",
    "tests/sheet/test_cells_vectorised.py",
    "tests/e2e/test_docs.py",
    "tests/templates/test_serving_options.py",
    "tests/cli/test_calibrate.py",
    "tests/templates/test_print.py",
    "tests/headless/test_workbook_sets.py",
    "tests/templates/test_finance_sheet.py",
    "tests/cli/test_recalc.py",
    "tests/headless/test_references.py",
    "tests/headless/test_untrusted_corpus.py",
    "tests/templates/test_portfolio_sheet.py",
    "tests/plan/test_search.py",
    "tests/templates/test_timeline.py",
    "tests/excel/test_setup.py",
    "tests/templates/test_training_options.py",
    "tests/headless/test_excel_corpus.py",
    "tests/cli/test_inputs.py",
    "tests/cli/test_recalc_checks.py",
    "tests/e2e/test_generated.py",
    "tests/sheet/test_native_queueing.py",
    "tests/headless/test_workbook.py",
    "tests/sheet/test_cells_warnings.py",
    "tests/e2e/test_ci.py",
    "tests/headless/test_libreoffice.py",
    "tests/calibration/test_fit.py",
    "tests/sheet/test_cells_totality.py",
    "tests/calibration/test_validate_hang.py",
    "tests/test_layers.py",
    "tests/cli/test_outputs.py",
    "tests/cli/test_signals.py",
    "tests/cli/test_inputs_hang_ranges.py",
)
"""The test files that take longest (3 to 42 s each on a worker of the 2-core development VM, measured with
``--junitxml`` on 7 December 2026, ninth session), longest first: the workers start on them, so that neither is left
with a long file when the other has finished. A file not named here follows, those with more tests first
(pytest-xdist's own order); a file of few tests and a long LibreOffice conversion left among the last kept one worker
busy while the other idled."""


def pytest_collection_modifyitems(config, items):
    """On pytest-xdist's workers (each file whole on one, ``--dist loadfile``), hand the files out in the order of
    :data:`LONGEST_FIRST`, then by their number of tests; each file's tests stay together and in their order. Its
    own reordering, by the number of tests alone, put the one-test LibreOffice check of the portable editions (the
    longest file) among the last, and the run waited on it (``pytest_configure`` turns that off)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    files = [item.nodeid.split("::")[0] for item in items]
    count: dict[str, int] = {}
    for f in files:
        count[f] = count.get(f, 0) + 1
    first = {f: i for i, f in reversed(list(enumerate(files)))}
    order = sorted(
        range(len(items)), key=lambda i: (rank.get(files[i], len(rank)), -count[files[i]], first[files[i]], i)
    )
    items[:] = [items[i] for i in order]


@pytest.fixture(autouse=True)
def _isolated_user_catalog(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path_factory.mktemp("user-catalog")))


REQUIRE_LIBREOFFICE = "XLSXPLAN_REQUIRE_LIBREOFFICE"
_LIBREOFFICE_WORDS = ("libreoffice", "soffice", "poppler", "pdftotext")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where ``XLSXPLAN_REQUIRE_LIBREOFFICE=1`` (CI sets it in .ci/run), a test skipped because LibreOffice or
    poppler is missing fails instead: the cross-checks must not vanish from CI unnoticed. Elsewhere it skips."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get(REQUIRE_LIBREOFFICE) != "1":
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if any(word in reason.lower() for word in _LIBREOFFICE_WORDS):
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_LIBREOFFICE}=1 but this test would be skipped: {reason}"
