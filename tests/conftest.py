"""Test-wide settings: never read or write the real user's catalog; in CI, never skip the LibreOffice cross-checks."""

from __future__ import annotations

import os

import pytest


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
