"""The HTML report: content, self-containment, capping and flagging."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crowdlearn import CrowdData
from crowdlearn.report import ReportLimits, build_report, write_report
from crowdlearn.simulate import hammer_spammer


def _worker_rows(text: str) -> list[str]:
    body = text.split('id="worker-table"', 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr( class=\"[a-z]+\")?><td", body)


def test_ten_task_crowd_gives_a_complete_self_contained_page():
    data = CrowdData.from_arrays(
        np.repeat(np.arange(10), 3), np.tile([0, 1, 2], 10), np.arange(30) % 3
    )
    text = build_report(data, title="tiny <crowd>", strategies=("mv", "kos"), progress=False)
    assert "strategy kos skipped" in text  # KOS is binary only: noted, not fatal
    assert "accuracy (truth)" not in text
    assert "<title>tiny &lt;crowd&gt;</title>" in text
    for section in ("summary", "histograms", "workers", "tasks", "strategies", "confusions"):
        assert f'id="{section}"' in text
    assert not re.search(r"(src|href)=\"(https?:)?//", text)
    images = re.findall(r'<img alt="[^"]*" src="([^"]+)"', text)
    assert len(images) >= 6 and all(s.startswith("data:image/png;base64,") for s in images)
    assert len(_worker_rows(text)) == 3
    assert "capped" not in text


def test_spammers_are_flagged_and_sorted_last():
    data, info = hammer_spammer(
        n_worker=20, n_task=300, n_classes=4, ratio=0.25, feedback=5, seed=1, return_info=True
    )
    text = build_report(data, strategies=("mv", "ds"), progress=False)
    rows = _worker_rows(text)
    flags = [row == ' class="flag"' for row in rows]
    n_spammers = int(np.sum(info.worker_group == "spammer"))
    assert flags == [False] * (20 - n_spammers) + [True] * n_spammers
    assert f"{n_spammers} of 20 workers" in text
    assert "accuracy (truth)" in text


def test_large_crowd_caps_tables_and_subsamples_plots_and_says_so(tmp_path):
    data = hammer_spammer(n_worker=60, n_task=2000, n_classes=3, feedback=4, seed=0)
    limits = ReportLimits(worker_rows=10, task_rows=7, plot_points=500, worker_panels=4)
    path = write_report(
        data.with_truth(data.truth),
        tmp_path / "r.html",
        strategies=("mv",),
        limits=limits,
        progress=False,
    )
    text = path.read_text()
    rows = _worker_rows(text)
    assert len(rows) == 11 and rows[5] == ' class="gap"'
    assert "50 workers in between not shown" in text
    assert "worker table capped: the 5 most and 5 least reliable of 60 workers" in text
    assert "500 random tasks of 2000 are drawn" in text
    task_body = text.split('id="task-table"', 1)[1].split("<tbody>", 1)[1].split("</tbody>")[0]
    assert task_body.count("<tr>") == 7
    assert "The 7 tasks of highest vote entropy" in text


def test_unknown_strategy_and_anonymous_data_are_refused():
    data = hammer_spammer(n_worker=10, n_task=60, n_classes=3, feedback=3, seed=0)
    with pytest.raises(ValueError, match="nope"):
        build_report(data, strategies=("mv", "nope"), progress=False)
    with pytest.raises(ValueError, match="anonymous"):
        build_report(data.anonymous(), progress=False)
