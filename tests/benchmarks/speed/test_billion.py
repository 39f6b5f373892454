"""The ``billion`` benchmark: verdicts computed from rows, sizes, and the quick run."""

from __future__ import annotations

import pandas as pd

import benchmarks.speed.billion  # noqa: F401  (registers "billion")
from benchmarks import run
from benchmarks.speed.billion import (
    EQUALITY_MAX,
    TARGET_SIZE,
    sizes_from_environment,
    target_verdicts,
)


def _row(n, seconds=600.0, peak=5e9, status="ok", diff=0.0, equal=True):
    return {
        "annotations": n,
        "stream_status": status,
        "stream_total_seconds": seconds,
        "stream_peak_bytes": peak,
        "memory_status": "ok" if n <= EQUALITY_MAX else None,
        "max_abs_difference": diff if n <= EQUALITY_MAX else None,
        "labels_equal": equal if n <= EQUALITY_MAX else None,
    }


def test_verdicts_follow_the_rows():
    raw = pd.DataFrame([_row(EQUALITY_MAX), _row(TARGET_SIZE)])
    assert list(target_verdicts(raw)["verdict"]) == ["met", "met", "met"]
    raw = pd.DataFrame([_row(EQUALITY_MAX, diff=1e-6), _row(TARGET_SIZE, 901.0, 8.1e9)])
    assert list(target_verdicts(raw)["verdict"]) == ["not met", "not met", "not met"]
    raw = pd.DataFrame([_row(EQUALITY_MAX, equal=False), _row(TARGET_SIZE, status="timeout")])
    verdicts = target_verdicts(raw)
    assert list(verdicts["verdict"]) == ["not met", "not met", "not met"]
    assert verdicts["measured"][0] == "status timeout"
    only_small = pd.DataFrame([_row(1_000_000)])
    assert list(target_verdicts(only_small)["verdict"]) == ["undetermined"] * 3


def test_sizes(monkeypatch):
    monkeypatch.delenv("CROWDLEARN_BILLION_SIZES", raising=False)
    assert sizes_from_environment(True) == (1_000_000,)
    assert sizes_from_environment(False) == (1_000_000_000,)
    monkeypatch.setenv("CROWDLEARN_BILLION_SIZES", "10000000, 100000000")
    assert sizes_from_environment(False) == (10_000_000, 100_000_000)


def test_quick_run_measures_and_compares(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_BILLION_DIR", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    report = run("billion", tmp_path / "out", quick=True, seeds=1)
    raw = pd.read_csv(tmp_path / "out" / "billion.csv")
    row = raw.iloc[0]
    assert row["annotations"] == 1_000_000
    for stage in ("generate", "stream", "memory"):
        assert row[f"{stage}_status"] == "ok", row.get(f"{stage}_error")
    assert row["max_abs_difference"] == 0.0 and bool(row["labels_equal"])
    assert row["accuracy"] > 0.9 and row["n_iter"] >= 2
    assert row["store_bytes"] > 3 * 1_000_000 and row["parquet_bytes"] > 0
    assert 0 < row["stream_peak_bytes"] < 4e9
    assert "**Targets**" in report.read_text()
    assert list((tmp_path / "scratch").iterdir()) == []  # scratch files removed
