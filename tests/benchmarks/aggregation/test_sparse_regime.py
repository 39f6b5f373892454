"""The sparse-regime benchmark: its logic on a crowd sharing no task, and its quick run."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.aggregation.sparse_regime import FULL, dataset_rows, misses, summary_table
from tests.aggregation.test_ds_lone_labels import no_overlap_crowd


def test_one_label_a_task_keeps_majority_vote_where_the_old_rule_fell_below():
    """The benchmark's rows on simulated crowds where no two workers share a task:
    the default equals the vote (the lone labels kept), the old rule falls below it
    (it relabels right lone labels), and the summary says so."""
    rows = []
    for seed in range(3):
        rows += dataset_rows(f"no-overlap-{seed}", no_overlap_crowd(seed), (1,), seeds=2)
    raw = pd.DataFrame(rows)
    assert set(raw["level"]) == {"1", FULL}
    assert (raw["lone_share"] == 1.0).all()
    assert (raw["ds"] == raw["mv"]).all()
    assert (raw["ds_old"] < raw["mv"]).mean() > 0.5
    below_mv, below_old = misses(raw)
    assert below_mv == [] and below_old == []
    table = summary_table(raw)
    assert (table["goal"] == "ok").all()
    assert table["DS - old (points)"].str.startswith("+").all()


def test_quick_run_on_wsd(tmp_path, shared_datasets, monkeypatch):
    """WSD at one label a task, the issue's reproduction: the default within 0.5 point
    of the vote, the old rule more than 5 points below it."""
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("sparse-regime", tmp_path, quick=True, seeds=2)
    text = report.read_text()
    assert "| dataset | labels a task | subsamples | MV | DS (default) |" in text
    raw = pd.read_csv(tmp_path / "sparse-regime.csv")
    assert set(raw["level"].astype(str)) == {"1", "2", "1+5%", FULL}
    one = raw[raw["level"].astype(str) == "1"]
    assert len(one) == 2 and (one["lone_share"] == 1.0).all()
    assert one["ds"].mean() >= one["mv"].mean() - 0.005
    assert one["ds_old"].mean() < one["mv"].mean() - 0.05
    full = raw[raw["level"].astype(str) == FULL]
    assert full["ds"].iloc[0] >= full["ds_old"].iloc[0]


def test_absent_data_root_is_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "nowhere"))
    report = run("sparse-regime", tmp_path / "out", quick=True, seeds=1)
    assert "- wsd skipped: dataset 'wsd' is not in" in report.read_text()
    assert pd.read_csv(tmp_path / "out" / "sparse-regime.csv").empty
