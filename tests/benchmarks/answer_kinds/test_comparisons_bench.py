"""The comparisons benchmarks, quick versions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.answer_kinds.comparisons import (
    CROWDKIT,
    CROWDLEARN,
    SCENARIOS,
    held_out_accuracy,
    quick_methods,
)
from crowdlearn.datasets import DatasetError


def test_quick_accuracy_run_on_the_imdb_wiki_ages(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("comparisons", tmp_path, quick=True, seeds=1)
    assert "| scenario | method | Spearman | Kendall | held-out pair accuracy | fit s |" in (
        report.read_text()
    )
    raw = pd.read_csv(tmp_path / "comparisons.csv")
    assert len(raw) == len(SCENARIOS) * (len(CROWDLEARN) + len(CROWDKIT))
    assert raw[["spearman", "kendall"]].abs().le(1).all().all()
    assert raw["held_out_accuracy"].between(0, 1).all() and (raw["fit_seconds"] > 0).all()
    clean = raw[(raw["scenario"] == "clean") & raw["method"].str.startswith("crowdlearn")]
    assert (clean["spearman"] > 0.8).all()  # reliable workers only: the order is recovered


def test_the_accuracy_benchmark_needs_the_ages(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DatasetError, match="imdb_wiki_sbs_scores"):
        run("comparisons", tmp_path / "out", quick=True, seeds=1)


def test_quick_speed_run_measures_every_fit_in_a_child(tmp_path):
    report = run("comparisons-speed", tmp_path, quick=True, seeds=1)
    raw = pd.read_csv(tmp_path / "comparisons-speed.csv")
    assert len(raw) == len(quick_methods()) + 1
    assert (raw["status"] == "ok").all(), raw.to_dict("records")
    assert (raw["fit_seconds"] > 0).all() and (raw["spearman"] > 0.8).all()
    assert set(raw["library"]) == {"crowdlearn", "crowd-kit"}
    assert "crowd-kit / crowdlearn time" in report.read_text()


def test_quick_dask_run_gives_the_in_memory_scores(tmp_path):
    report = run("comparisons-dask", tmp_path, quick=True, seeds=1)
    raw = pd.read_csv(tmp_path / "comparisons-dask.csv")
    assert raw["run"].tolist() == ["file, memory", "file, dask"]
    assert (raw["status"] == "ok").all(), raw.to_dict("records")
    assert (raw["spearman"] > 0.8).all()
    assert (raw["max_score_diff"] < 1e-4).all()
    assert "max |score diff|" in report.read_text()


def test_held_out_accuracy_counts_equal_scores_as_half():
    truth = np.array([1.0, 2.0, 3.0])
    left, right = np.array([0, 1, 2]), np.array([1, 2, 0])
    assert held_out_accuracy(truth, truth, left, right) == 1.0
    assert held_out_accuracy(-truth, truth, left, right) == 0.0
    assert held_out_accuracy(np.zeros(3), truth, left, right) == 0.5
