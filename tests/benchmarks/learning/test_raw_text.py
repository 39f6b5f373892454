"""The raw-text benchmark, quick version: built-in featuriser against features by hand."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.learning.raw_text import QUICK_FEATURES, QUICK_UNITS


def test_quick_run_on_the_relex_crowd(tmp_path, shared_datasets, monkeypatch):
    if not (shared_datasets / "crowdtruth_medical_relex").is_dir():
        import pytest

        pytest.skip("crowdtruth_medical_relex is not among the shared datasets")
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("raw-text", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| arm | test accuracy | test macro-F1 | test AUC |" in text
    raw = pd.read_csv(tmp_path / "raw-text.csv")
    arms = raw.set_index("arm")
    assert {"built-in", "by hand", "majority class"} <= set(arms.index)
    assert raw[["accuracy", "macro_f1", "auc"]].apply(lambda c: c.between(0, 1)).all().all()
    # the built-in arm featurised the training sentences, its vocabulary capped
    assert 0 < arms.loc["built-in", "n_features"] <= QUICK_FEATURES
    assert arms.loc["by hand", "n_features"] > 0
    assert f"the first {QUICK_UNITS[0]} training and {QUICK_UNITS[1]} test units" in text


def test_absent_data_root_skips_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    report = run("raw-text", tmp_path / "out", quick=True, seeds=1)
    assert "- skipped: " in report.read_text() and "crowdtruth_medical_relex" in report.read_text()
    assert pd.read_csv(tmp_path / "out" / "raw-text.csv").empty
