"""The ratings benchmarks, quick versions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.answer_kinds.ratings import (
    CATD_AS_RASA,
    QUICK_DATASETS,
    QUICK_SCENARIOS,
    QUICK_STRATEGIES,
    _speed_table,
    scores,
)


def test_quick_real_run(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("ratings", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| strategy | anger | wordsim | mean rank | ranked |" in text
    raw = pd.read_csv(tmp_path / "ratings.csv")
    assert len(raw) == len(QUICK_DATASETS) * len(QUICK_STRATEGIES)
    assert raw["pearson"].between(-1, 1).all() and (raw["mae"] > 0).all()
    assert (raw["rmse"] >= raw["mae"]).all()
    # the mean of 10 non-experts correlates well with the experts on both data sets
    assert raw.loc[raw["strategy"] == "mean", "pearson"].min() > 0.6


def test_absent_data_skips_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    report = run("ratings", tmp_path / "out", quick=True, seeds=1)
    text = report.read_text()
    for name in QUICK_DATASETS:
        assert f"- {name} skipped:" in text


def test_quick_simulated_run(tmp_path):
    run("ratings-simulated", tmp_path, quick=True, seeds=2)
    raw = pd.read_csv(tmp_path / "ratings-simulated.csv")
    assert set(raw["scenario"]) == set(QUICK_SCENARIOS)
    ordinal = raw[raw["scenario"] == "ordinal, 5 levels"]
    assert set(ordinal["strategy"]) == {*QUICK_STRATEGIES, "ordinal-ds"}
    assert ordinal["accuracy"].between(0, 1).all()
    assert len(raw) == 2 * (2 * len(QUICK_STRATEGIES) + 1)


def test_scores_and_speed_table():
    truth = np.array([0.0, 1.0, 2.0, 3.0])
    result = scores(truth * 2.5, truth, factor=0.4)
    assert result["mae"] == pytest.approx(0.0) and result["pearson"] == pytest.approx(1.0)
    raw = pd.DataFrame(
        {
            "n_annotations": [1000, 1000, 1000],
            "library": ["crowdlearn", "crowd-kit", "crowdlearn"],
            "method": [CATD_AS_RASA, "RASA", "median"],
            "status": ["ok", "ok", "timeout"],
            "fit_seconds": [0.5, 2.0, np.nan],
            "peak_fit_bytes": [2**20, 2**21, np.nan],
            "mae": [0.1, 0.1, np.nan],
        }
    )
    table = _speed_table(raw)
    ratio = table.loc[table["method"] == "RASA", "RASA / our same estimate, time"]
    assert ratio.tolist() == ["4x"]
    assert table.loc[table["method"] == "median", "fit s"].tolist() == ["timeout"]


def test_quick_speed_run(tmp_path):
    run("ratings-speed", tmp_path, quick=True, seeds=1)
    raw = pd.read_csv(tmp_path / "ratings-speed.csv")
    assert (raw["status"] == "ok").all()
    # the same estimator in both libraries: the same estimates, hence the same MAE
    mae = raw.set_index("method")["mae"]
    assert mae[CATD_AS_RASA] == pytest.approx(mae["RASA"], abs=1e-3)
