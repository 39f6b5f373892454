"""The em-floor benchmark, quick version: its rows and their arithmetic, not timings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.speed.floor import GOALS, METHODS, QUICK_SIZES, floor_bytes

pytest.importorskip("numba")


def test_quick_floor_benchmark_rows_and_arithmetic(tmp_path):
    report = run("em-floor", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "em-floor.csv")
    assert len(raw) == len(QUICK_SIZES) * len(METHODS)
    assert list(raw["method"][: len(METHODS)]) == list(METHODS)
    assert set(zip(raw["annotations"], raw["classes"], strict=True)) == set(QUICK_SIZES)
    assert (raw["kernels"] == "numba").all()
    n_tasks = raw["annotations"] // 5
    for row, tasks in zip(raw.itertuples(), n_tasks, strict=True):
        passes = 0.0 if np.isnan(row.passes) else row.passes
        expected = floor_bytes(row.method, row.annotations, tasks, row.classes, passes)
        assert row.floor_mb == pytest.approx(expected / 1e6)
        assert row.floor_ms == pytest.approx(row.floor_mb / row.bandwidth_gbs)
        assert row.ratio == pytest.approx(row.iteration_ms / row.floor_ms)
        assert row.goal == GOALS[row.method]
        if row.iteration_ms > 0:
            assert row.speedup == pytest.approx(row.numpy_ms / row.iteration_ms)
    glad = raw[raw["method"] == "glad"]
    assert (glad["passes"] >= 3).all()  # the E-step and at least one sweep's sums
    assert (raw["iteration_ms"] >= 0).all() and (raw["bandwidth_gbs"] > 0).all()
    text = report.read_text()
    assert "python -m benchmarks em-floor --quick" in text
    assert "| annotations | classes | method | floor_mb |" in text
