"""The label-sets and label-sets-speed benchmarks, quick versions."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.answer_kinds.label_sets import QUICK_RELEX, our_specs
from benchmarks.answer_kinds.label_sets_speed import QUICK_PAIRS


def test_quick_label_sets(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("label-sets", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| method | sim macro F1 | sim Hamming | RelEx cause F1 | RelEx cause AUC |" in text
    raw = pd.read_csv(tmp_path / "label-sets.csv")
    simulated = raw[raw["part"] == "simulated"]
    assert set(simulated["method"]) == {
        *our_specs(quick=True),
        "crowd-kit BR(MV)",
        "crowd-kit BR(DS)",
    }
    assert simulated["macro_f1"].between(0, 1).all()
    assert simulated["hamming"].between(0, 1).all()
    relex = raw[raw["part"] == "relex"]
    assert set(relex["method"]) == {
        *QUICK_RELEX,
        "CrowdTruth score >= 0.5",
        "CrowdTruth score >= 0.7",
    }
    assert set(relex["scenario"]) == {"cause", "treat"}
    assert relex["f1"].between(0, 1).all()
    # the per-class reductions beat a majority vote on the simulated crowd
    f1 = simulated.set_index("method")["macro_f1"]
    assert f1["binary-ds"] > f1["binary-mv"] and f1["ml-mixture"] > f1["binary-mv"]


def test_label_sets_without_relex(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    text = run("label-sets", tmp_path / "out", quick=True, seeds=1).read_text()
    assert "- RelEx skipped: RelEx: no raw_RelEx" in text
    raw = pd.read_csv(tmp_path / "out" / "label-sets.csv")
    assert set(raw["part"]) == {"simulated"}


def test_quick_label_sets_speed(tmp_path):
    report = run("label-sets-speed", tmp_path, quick=True, seeds=1)
    raw = pd.read_csv(tmp_path / "label-sets-speed.csv")
    assert (raw["status"] == "ok").all(), raw.get("error")
    assert len(raw) == 2 * len(QUICK_PAIRS)
    assert (raw["fit_seconds"] > 0).all() and raw["hamming"].between(0, 0.5).all()
    assert "| ours | crowd-kit | ours s |" in report.read_text()
