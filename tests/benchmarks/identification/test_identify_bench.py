"""The identify benchmark, quick version (the module is imported explicitly: it is not in
benchmarks's list)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import benchmarks.identification.identify as identify_bench
from benchmarks import run


def test_quick_run_scores_simulated_and_real_crowds(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("identify", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert (
        "| score | rho discrete-difficulty | rho groups-on-features | rho hammer-spammer |" in text
    )
    assert "**Spearman correlation with accuracy against the truth (real crowds)**" in text
    assert "Test accuracy without / with WAUM pruning" in text
    raw = pd.read_csv(tmp_path / "identify.csv")
    sim = raw[raw["part"] == "simulated"]
    assert set(sim["crowd"]) == {"hammer-spammer", "discrete-difficulty", "groups-on-features"}
    # every score finds the spammers far better than chance, and tracks true accuracy
    assert (sim["spammer_auc"] > 0.85).all() and (sim["spearman"] > 0.5).all()
    real = raw[raw["part"] == "real"]
    assert set(real["crowd"]) == {"bluebirds"} and real["spearman"].between(-1, 1).all()
    pruning = raw[raw["part"] == "waum"]
    assert set(pruning["aggregator"]) == {"mv", "ds"}
    assert (pruning["n_pruned"] == 100).all()
    assert pruning[["accuracy_all", "accuracy_pruned"]].stack().between(0, 1).all()


def test_absent_datasets_are_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    text = run("identify", tmp_path / "out", quick=True, seeds=1).read_text()
    assert "- bluebirds skipped: dataset 'bluebirds' is not in" in text
    assert "- labelme skipped" in text and "WAUM pruning" not in text


def test_true_accuracy_weights_the_diagonal_by_the_class_shares():
    from crowdlearn import CrowdData

    data = CrowdData.from_arrays([0, 1, 2, 3], [0, 0, 0, 0], [0, 0, 0, 0], truth=[0, 0, 0, 1])
    confusions = np.array([[[0.9, 0.1], [0.5, 0.5]]])
    np.testing.assert_allclose(identify_bench.true_accuracy(data, confusions), [0.8])
