"""The boxes benchmark, quick version (30 simulated images, one seed)."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.answer_kinds.boxes import QUICK, REFERENCE
from crowdlearn.aggregation.boxes import STRATEGIES


def test_quick_run(tmp_path):
    report = run("boxes", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert (
        "| scenario | method | precision@0.5 | recall@0.5 | F1@0.5 | mean IoU | mAP@0.5 |" in text
    )
    assert "crowd-kit 1.4.2 has no bounding-box aggregation" in text
    raw = pd.read_csv(tmp_path / "boxes.csv")
    assert set(raw["scenario"]) == set(QUICK)
    assert sorted(raw["method"]) == sorted([REFERENCE, *STRATEGIES])
    for column in ("precision", "recall", "f1", "mean_iou", "map50"):
        assert raw[column].between(0, 1).all(), column
    scores = raw.set_index("method")
    # aggregating three workers beats the boxes of one of them
    for name in STRATEGIES:
        assert scores.loc[name, "map50"] > scores.loc[REFERENCE, "map50"]
    assert (raw.dropna(subset=["fit_seconds"])["fit_seconds"] > 0).all()
