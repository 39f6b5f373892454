"""The masks benchmarks, quick versions (a handful of small simulated tasks)."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.answer_kinds.masks import MEMORY_METHODS, QUICK_MEMORY
from crowdlearn.aggregation.masks import STRATEGIES


def test_quick_quality_run(tmp_path):
    report = run("masks", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| method | IoU | Dice | fit s |" in text
    raw = pd.read_csv(tmp_path / "masks.csv")
    assert len(raw) == len(STRATEGIES) + 1
    assert (raw["status"] == "ok").all(), raw.get("error")
    assert raw["iou"].between(0, 1).all() and (raw["dice"] >= raw["iou"]).all()
    assert (raw["fit_seconds"] > 0).all()
    by = raw.set_index("method")["iou"]
    # the same rule in both libraries (ties to foreground): the same masks, the same IoU
    assert by["mv"] == by["SegmentationMajorityVote"]
    staple = raw.set_index("method").loc["staple"]
    assert 0 <= staple["sensitivity_mae"] < 0.2 and 0 <= staple["specificity_mae"] < 0.2


def test_quick_memory_run(tmp_path):
    run("masks-memory", tmp_path, quick=True, seeds=1)
    raw = pd.read_csv(tmp_path / "masks-memory.csv")
    assert raw["method"].tolist() == list(MEMORY_METHODS)
    assert (raw["status"] == "ok").all()
    n = QUICK_MEMORY["n_tasks"] * QUICK_MEMORY["per_task"]
    assert (raw["n_masks"] == n).all()
    assert (raw["peak_rss_bytes"] > 0).all() and raw["iou"].between(0, 1).all()
