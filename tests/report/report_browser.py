"""Open an HTML file in headless Chromium (the system binary, driven by playwright) and
collect what a browser test asserts: title, images decoded, console errors, requests."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: The system Chromium (Debian's ``chromium`` package); playwright never downloads one.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_binary() -> str:
    """Path of the system Chromium, or skip the test."""
    override = os.environ.get("CROWDLEARN_CHROMIUM")
    for candidate in (override, *CHROMIUM_CANDIDATES, shutil.which("chromium")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no chromium binary (apt-get install chromium)")


@dataclass
class PageCheck:
    title: str = ""
    images: list[dict] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    sorted_first: str = ""


def open_in_chromium(html_file: Path, screenshot: Path, timeout_ms: int = 60_000) -> PageCheck:
    """Load ``html_file`` (file://), record console errors and every request other than
    the page itself, report each image's naturalWidth, and save a full-page screenshot."""
    binary = chromium_binary()
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed"
    )
    check = PageCheck()
    url = html_file.resolve().as_uri()
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=binary, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on(
                "console",
                lambda message: (
                    check.console_errors.append(message.text) if message.type == "error" else None
                ),
            )
            page.on("pageerror", lambda error: check.console_errors.append(str(error)))
            page.on(
                "request",
                lambda request: (
                    check.requests.append(request.url)
                    if request.url != url and not request.url.startswith("data:")
                    else None
                ),
            )
            page.goto(url, wait_until="load", timeout=timeout_ms)
            check.title = page.title()
            check.images = page.eval_on_selector_all(
                "img",
                "imgs => imgs.map(i => ({alt: i.alt, complete: i.complete,"
                " width: i.naturalWidth}))",
            )
            page.screenshot(path=str(screenshot), full_page=True)
            header = page.query_selector("#worker-table th:nth-child(2)")
            if header is not None:
                header.click()
                first = page.query_selector("#worker-table tbody tr:first-child td:nth-child(2)")
                check.sorted_first = "" if first is None else first.inner_text()
        finally:
            browser.close()
    return check
