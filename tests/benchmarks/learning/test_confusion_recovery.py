"""``confusion-recovery``: the error is measured against the simulator's confusions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks import run
from benchmarks.learning.confusion_recovery import crowd_for, fit_one


def test_dawid_skene_row_is_its_error_against_the_simulator():
    crowd, info, _, _ = crowd_for(0)
    from crowdlearn.aggregation import DawidSkene

    expected = np.abs(DawidSkene().fit(crowd).confusions_ - info.confusions).mean()
    row = fit_one("ds", 0, quick=True)
    assert row["confusion_error"] == expected and np.isnan(row["accuracy"])
    assert 0.0 < expected < 0.5
    assert np.isnan(fit_one("mv+nn", 0, quick=True)["confusion_error"])


def test_quick_run_writes_every_row(tmp_path):
    report = run("confusion-recovery", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "confusion-recovery.csv")
    assert set(raw["spec"]) == {"mv+nn", "ds", "crowdlayer", "trace-reg"}
    assert raw.loc[raw["spec"] == "trace-reg", "confusion_error"].between(0, 1).all()
    assert "vs Crowd Layer" in report.read_text()
