"""The texts benchmark, quick version (30 CrowdSpeech dev-clean tasks)."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.answer_kinds.texts import AUTHORS, QUICK_CROWDKIT, QUICK_OURS


def test_quick_run(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("texts", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| method | WER dev-clean | fit s dev-clean |" in text
    assert "our ROVER within 0.003 of the authors' ROVER" in text
    raw = pd.read_csv(tmp_path / "texts.csv")
    assert len(raw) == len(AUTHORS) + len(QUICK_OURS) + len(QUICK_CROWDKIT)
    assert (raw["status"] == "ok").all()
    assert raw["wer"].between(0, 0.5).all()
    timed = raw[raw["library"] != "authors"]
    assert (timed["fit_seconds"] > 0).all()
    wer = raw.set_index(["library", "method"])["wer"]
    # the same algorithm in both libraries: the same texts, hence the same WER
    assert wer[("crowdlearn", "rover")] == wer[("crowd-kit", "ROVER")]
    assert "100.00% of the tasks" in text


def test_absent_data_skips_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    text = run("texts", tmp_path / "out", quick=True, seeds=1).read_text()
    assert "- dev-clean skipped:" in text
