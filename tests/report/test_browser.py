"""The report in headless Chromium: title, every image decoded, no console error, no
network request; a screenshot is saved in the test's temporary directory.

Skipped when no chromium binary or no playwright package is present.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.io import write_parquet
from crowdlearn.simulate import hammer_spammer

sys.path.insert(0, str(Path(__file__).parent))
from report_browser import PageCheck, chromium_binary, open_in_chromium


def _check_page(html: Path, screenshot: Path, title: str) -> PageCheck:
    check = open_in_chromium(html, screenshot)
    assert check.title == title
    assert len(check.images) >= 6
    assert all(i["complete"] and i["width"] > 0 for i in check.images), check.images
    assert check.console_errors == []
    assert check.requests == []
    assert screenshot.stat().st_size > 10_000
    return check


def _report(args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["report", *map(str, args)])
    assert result.exit_code == 0, result.output


def test_small_crowd_report_in_chromium(tmp_path):
    chromium_binary()
    data = hammer_spammer(n_worker=12, n_task=80, n_classes=3, ratio=0.25, feedback=4, seed=0)
    source = tmp_path / "crowd.parquet"
    write_parquet(data, source)
    html = tmp_path / "report.html"
    _report([source, "--truth", "--title", "small crowd", "-o", html, "--quiet"])
    check = _check_page(html, tmp_path / "small.png", "small crowd")
    # the sortable worker table: clicking "annotations" sorts it ascending
    assert int(check.sorted_first) == min(data.workload)


def test_labelme_report_in_chromium(tmp_path, shared_datasets):
    chromium_binary()
    html = tmp_path / "report-labelme.html"
    _report(
        ["labelme", "--root", shared_datasets, "--truth", "-s", "mv,ds", "-o", html, "--quiet"]
    )
    _check_page(html, tmp_path / "report-labelme.png", "crowdlearn report: labelme")


@pytest.mark.slow
def test_million_annotation_report_in_chromium(tmp_path):
    chromium_binary()
    data = hammer_spammer(
        n_worker=2000, n_task=100_000, n_classes=5, ratio=0.2, feedback=10, seed=0
    )
    assert data.n_annotations == 1_000_000
    source = tmp_path / "million.parquet"
    write_parquet(data, source)
    html = tmp_path / "report-1m.html"
    _report([source, "--truth", "--title", "1M annotations", "-o", html, "--quiet"])
    text = html.read_text()
    assert "worker table capped" in text and "3000 random tasks of 100000" in text
    assert html.stat().st_size < 5_000_000
    _check_page(html, tmp_path / "report-1m.png", "1M annotations")


def test_no_chromium_means_a_clean_skip(monkeypatch):
    import report_browser

    monkeypatch.setattr(report_browser, "CHROMIUM_CANDIDATES", ())
    monkeypatch.setattr(report_browser.shutil, "which", lambda name: None)
    monkeypatch.delenv("CROWDLEARN_CHROMIUM", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium binary"):
        chromium_binary()
