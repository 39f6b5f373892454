"""The spans-learning benchmark, quick version (a generated crowd, 2 folds)."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.spans.learning import METHODS, QUICK, toy_ner


def test_quick_run_scores_every_method_on_held_out_documents(tmp_path):
    text = run("spans-learning", tmp_path, quick=True, seeds=1).read_text()
    assert "| method | what | F1 | F1 spread | precision | recall | fit s |" in text
    assert "F1 - mv+tagger (points)" in text
    raw = pd.read_csv(tmp_path / "spans-learning.csv")
    assert set(raw["method"]) == {"mv-aggregate", *METHODS}
    assert len(raw) == QUICK["folds"] * (1 + len(METHODS))
    assert raw["f1"].between(0, 1).all()
    # every true span of the held-out folds is counted once per fold
    data = toy_ner(QUICK["docs"])
    assert raw.groupby("method")["n_true"].sum().eq(len(data.truth)).all()
    # the ceiling learns the template sentences: well above nothing
    assert raw.loc[raw["method"] == "supervised", "f1"].mean() > 0.5
    assert not (tmp_path / "spans-learning-partial.csv").exists()


def test_absent_data_skips_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    text = run("spans-learning", tmp_path / "out", quick=False, seeds=1).read_text()
    assert "NER-MTurk val skipped" in text
