"""The real-aggregation benchmark, quick version."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.aggregation.real import QUICK_DATASETS, QUICK_STRATEGIES, mean_ranks
from crowdlearn.aggregation import STRATEGIES


def test_quick_run_on_the_shared_datasets(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("real-aggregation", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| strategy | bluebirds | wsd | temp | mean rank | datasets ranked |" in text
    raw = pd.read_csv(tmp_path / "real-aggregation.csv")
    ran = [s for s in QUICK_STRATEGIES if s in STRATEGIES]
    assert len(raw) == len(QUICK_DATASETS) * len(ran)
    assert set(raw["dataset"]) == set(QUICK_DATASETS)
    assert (raw["status"] == "ok").all()
    assert raw["accuracy"].between(0, 1).all() and (raw["fit_seconds"] > 0).all()
    mv = raw[raw["strategy"] == "mv"]
    assert mv["accuracy_expected_ties"].notna().all() and mv["n_iter"].isna().all()
    assert raw.loc[raw["strategy"] == "ds", "n_iter"].ge(1).all()


def test_absent_data_root_skips_every_dataset_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    report = run("real-aggregation", tmp_path / "out", quick=True, seeds=1)
    text = report.read_text()
    for name in QUICK_DATASETS:
        assert f"- {name} skipped: dataset {name!r} is not in" in text
    assert "| strategy | mean rank | datasets ranked |" in text
    raw = pd.read_csv(tmp_path / "out" / "real-aggregation.csv")
    assert raw.empty and {"dataset", "strategy", "accuracy", "reason"} <= set(raw.columns)


def test_mean_rank_shares_ties_and_leaves_out_missing_cells():
    accuracy = pd.DataFrame(
        {"a": [0.9, 0.8, 0.8], "b": [0.5, 0.7, float("nan")]}, index=["x", "y", "z"]
    )
    ranks = mean_ranks(accuracy)
    # x: ranks 1 and 2; y: 2.5 (tied with z on a) and 1; z: 2.5 and nothing on b
    assert ranks["mean rank"].tolist() == [1.5, 1.75, 2.5]
    assert ranks["datasets ranked"].tolist() == [2, 2, 1]
