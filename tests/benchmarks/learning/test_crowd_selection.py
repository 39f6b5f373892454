"""The crowd-selection control: each criterion's pick is read off one trajectory."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks import run
from benchmarks.learning.crowd_selection import picks


def test_picks_read_each_criterion_off_the_same_trajectory():
    history = pd.DataFrame(
        {
            "epoch": [1, 2, 3, 4],
            "valid_ds_ll": [-2.0, -1.0, -1.5, -1.8],
            "valid_crowd_ll": [-3.0, -2.5, -2.0, -1.0],
            "test_accuracy": [0.5, 0.8, 0.9, 0.7],
        }
    )
    chosen = picks(history)
    assert chosen["agreement"] == 0.8 and chosen["agreement epoch"] == 2
    assert chosen["own likelihood"] == 0.7 and chosen["own likelihood epoch"] == 4
    assert chosen["last epoch"] == 0.7
    assert chosen["oracle"] == 0.9 and chosen["oracle epoch"] == 3


def test_quick_run_records_criteria_and_test_accuracy_every_epoch(
    tmp_path, shared_datasets, monkeypatch
):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("crowd-selection", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "crowd-selection.csv")
    assert set(raw["spec"]) == {"mv+nn", "crowdlayer"}
    assert (raw.groupby("spec")["epoch"].max() == 3).all()
    assert raw[["valid_ds_ll", "valid_crowd_ll", "test_accuracy"]].notna().all().all()
    # two-stage learners have no noise model: both criteria are the agreement
    mv = raw[raw["spec"] == "mv+nn"]
    assert mv["valid_ds_ll"].to_numpy() == pytest.approx(mv["valid_crowd_ll"].to_numpy())
    assert "oracle" in report.read_text()


def test_variants_early_stopping_smoothing_and_the_sum():
    from benchmarks.learning.crowd_selection import early_stopped

    # a spike at epoch 2, then 20 worse epochs, then the real peak: patience stops first
    ds = [-2.0, -1.0] + [-1.5] * 20 + [-0.5, -0.6]
    history = pd.DataFrame(
        {
            "epoch": range(1, len(ds) + 1),
            "valid_ds_ll": ds,
            "valid_crowd_ll": [-float(len(ds) - i) for i in range(len(ds))],
            "test_accuracy": [0.1 * (i % 10) for i in range(len(ds))],
        }
    )
    assert early_stopped(ds, 20) == 1
    assert early_stopped(ds, 30) == 22
    chosen = picks(history)
    assert chosen["agreement, patience 20"] == pytest.approx(0.1)
    assert chosen["agreement"] == pytest.approx(0.2)  # index 22
    # the 5-epoch trailing mean is highest at the last epoch (-0.5 and -0.6 in its window)
    assert chosen["agreement, 5-epoch mean"] == pytest.approx(0.3)
    # own likelihood rises every epoch: the z-scored sum picks the agreement's peak or later
    assert chosen["both, z-scored sum"] in (pytest.approx(0.2), pytest.approx(0.3))


def test_calibration_quick_run_scores_one_fit_under_each_temperature(
    tmp_path, shared_datasets, monkeypatch
):
    from benchmarks.learning.crowd_selection import TEMPERATURES

    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("crowd-calibration", tmp_path, quick=True).read_text()
    raw = pd.read_csv(tmp_path / "crowd-calibration.csv")
    assert list(raw["temperature from"]) == list(TEMPERATURES)
    # the same weights: only the folds' mean of calibrated probabilities moves with T
    assert raw["accuracy"].max() - raw["accuracy"].min() <= 0.05
    assert raw.loc[raw["temperature from"] == "none", "temperature"].item() == 1.0
    assert (raw["temperature"] > 0).all() and raw["ece"].between(0, 1).all()
    assert "ECE, agreement" in report and "ECE, joint" in report
    assert "mean ECE over the datasets" in report
