"""Test-wide settings: never read or write the real user's catalog."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_catalog(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path_factory.mktemp("user-catalog")))
