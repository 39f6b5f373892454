"""The incremental benchmark, quick version: its rows and the exactness of the vote
methods, not the timings."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.speed.incremental import METHODS, QUICK_SIZES


def test_quick_benchmark_measures_every_method_against_a_refit(tmp_path):
    report = run("incremental", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "incremental.csv")
    assert list(raw["method"]) == [name for name, *_ in METHODS]
    assert set(raw["annotations"]) == set(QUICK_SIZES)
    assert (raw["update_s"] > 0).all() and (raw["refit_s"] > 0).all()
    assert (raw["speedup"] - raw["refit_s"] / raw["update_s"]).abs().max() < 1e-9
    # about 1 % of the annotations arrive, some of them on new tasks
    assert (raw["new"] / raw["annotations"]).between(0.008, 0.012).all()
    assert (raw["new_tasks"] > 0).all()
    exact = raw[raw["method"].isin(["mv", "wawa"])]
    assert (exact["labels_equal"] == 1.0).all() and (exact["max_proba_diff"] < 1e-12).all()
    assert raw["labels_equal"].between(0.9, 1.0).all()
    text = report.read_text()
    assert "python -m benchmarks incremental --quick" in text
    assert "| annotations | method | update_s | refit_s | speedup |" in text
