"""``crowdlearn report``: writes one HTML file, progress bar, options, bad input."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from crowdlearn import CrowdData, _progress
from crowdlearn.cli import cli
from crowdlearn.io import write_csv


def _crowd_csv(tmp_path):
    rng = np.random.default_rng(0)
    task = np.repeat(np.arange(10), 3)
    data = CrowdData.from_arrays(
        [f"t{t}" for t in task],
        [f"w{w}" for w in np.tile([0, 1, 2], 10)],
        np.array(["cat", "dog"])[rng.integers(2, size=30)],
        truth=dict(zip([f"t{t}" for t in range(10)], rng.choice(["cat", "dog"], 10), strict=True)),
    )
    path = tmp_path / "crowd.csv"
    write_csv(data, path)
    return path


def test_report_writes_html_and_shows_a_progress_bar(tmp_path, monkeypatch):
    # the bar is shown by default on a terminal; CliRunner's stderr is not one
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)
    path = _crowd_csv(tmp_path)
    out = tmp_path / "sub" / "report.html"
    result = CliRunner().invoke(cli, ["report", str(path), "-s", "mv,ds", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "<title>crowdlearn report: " in text and "w0" in text
    assert "accuracy (truth)" not in text  # the truth is used only with --truth
    assert "report:" in result.stderr and "9/9" in result.stderr  # the tqdm bar
    quiet = CliRunner().invoke(
        cli,
        [
            "report",
            str(path),
            "-s",
            "mv",
            "-o",
            str(out),
            "--quiet",
            "--title",
            "T",
            "--truth",
            "--overwrite",
        ],
    )
    assert quiet.exit_code == 0 and "9/9" not in quiet.stderr
    text = out.read_text()
    assert "<title>T</title>" in text and "accuracy (truth)" in text


def test_bad_input_exits_2_without_output(tmp_path):
    path = _crowd_csv(tmp_path)
    out = tmp_path / "report.html"
    bad = CliRunner().invoke(cli, ["report", str(path), "-s", "nope", "-o", str(out)])
    assert bad.exit_code == 2 and "crowdlearn: error:" in bad.stderr
    missing = CliRunner().invoke(cli, ["report", str(tmp_path / "none.csv"), "-o", str(out)])
    assert missing.exit_code != 0
    caps = CliRunner().invoke(cli, ["report", str(path), "--max-worker-rows", "1", "-o", str(out)])
    assert caps.exit_code == 2 and "--max-worker-rows" in caps.stderr
    assert not out.exists()
