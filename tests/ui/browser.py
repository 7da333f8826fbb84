"""Headless Chromium for the web-view tests: the system's Debian `chromium` driven by
Playwright (Playwright's own browser download cannot work on these machines)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $TOOLTRAIL_UI_ARTIFACTS, else a pytest temporary folder."""
    chosen = os.environ.get("TOOLTRAIL_UI_ARTIFACTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("ui-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def chromium() -> Iterator[object]:
    """A launched browser; fails in CI, skips elsewhere, when Chromium is not installed."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{CHROMIUM} is missing")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
