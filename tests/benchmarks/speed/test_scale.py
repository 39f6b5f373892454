"""The ``scale`` benchmark: verdicts computed from rows, and the quick run."""

from __future__ import annotations

import pandas as pd
import pytest

import benchmarks.speed.scale  # noqa: F401  (registers "scale")
from benchmarks import run
from benchmarks.speed.scale import TARGET_SIZE, memory_budget_bytes, target_verdicts


def _row(engine, k, n, status="ok", fit=10.0, peak=None):
    return {
        "engine": engine,
        "K": k,
        "annotations": n,
        "status": status,
        "fit_seconds": fit,
        "peak_bytes": peak if peak is not None else memory_budget_bytes(n, k) / 2,
        "budget_bytes": memory_budget_bytes(n, k) if engine == "memory" else None,
    }


def test_verdicts_follow_the_rows():
    raw = pd.DataFrame(
        [
            _row("memory", 2, TARGET_SIZE, fit=59.0),
            _row("dask", 2, TARGET_SIZE, status="timeout"),
            _row("memory", 10, 1_000_000, peak=memory_budget_bytes(1_000_000, 10) * 1.1),
        ]
    )
    verdicts = dict(zip(*target_verdicts(raw)[["target", "verdict"]].T.values, strict=True))
    assert list(verdicts.values()) == ["met", "not met", "met", "not met"]
    raw.loc[0, "fit_seconds"] = 61.0
    raw.loc[1, "status"] = "ok"
    raw.loc[2, "peak_bytes"] = 1.0
    raw["fit_seconds"] = raw["fit_seconds"].astype(float)
    assert list(target_verdicts(raw)["verdict"]) == ["not met", "met", "met", "met"]
    raw.loc[0, "peak_bytes"] = memory_budget_bytes(TARGET_SIZE, 2) * 1.01
    assert list(target_verdicts(raw)["verdict"])[2:] == ["not met", "not met"]
    assert list(target_verdicts(raw.iloc[:0])["verdict"]) == ["undetermined"] * 4


def test_quick_run_writes_table_and_targets(tmp_path):
    pytest.importorskip("distributed")
    report = run("scale", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    raw = pd.read_csv(tmp_path / "scale.csv")
    assert set(raw["engine"]) == {"memory", "dask"} and set(raw["K"]) == {2, 10}
    assert (raw["status"] == "ok").all(), raw["error"].tolist()
    assert raw["accuracy"].min() > 0.5
    # both engines give the same labels, hence the same accuracy
    for _, group in raw.groupby("K"):
        assert group["accuracy"].nunique() == 1
    assert "**Targets**" in text and "undetermined" in text
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("scale-")] == []
