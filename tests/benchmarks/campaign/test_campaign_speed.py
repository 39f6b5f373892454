"""The campaign-speed benchmark: rank_tasks' cost beside a Dawid-Skene fit."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.campaign.speed import RANKINGS, best_of


def test_best_of_keeps_the_shortest_time_and_the_result():
    calls = []
    seconds, result = best_of(3, lambda: calls.append(1) or len(calls))
    assert result == 3 and len(calls) == 3 and seconds >= 0


def test_quick_run_times_every_ranking_on_both_class_counts(tmp_path):
    report = run("campaign-speed", tmp_path, quick=True, seeds=1).read_text()
    assert "| annotations | tasks | workers | classes | score | leave one task out |" in report
    assert "rank_tasks with its defaults (decision score, leave one task out) costs" in report
    raw = pd.read_csv(tmp_path / "campaign-speed.csv")
    assert len(raw) == 2 * len(RANKINGS)
    assert sorted(raw["classes"].unique()) == [2, 10]
    assert (raw["rank_s"] > 0).all() and (raw["fit_s"] > 0).all()
    assert (raw["rank / fit"] - raw["rank_s"] / raw["fit_s"]).abs().max() < 1e-12
    assert raw["target"].notna().sum() == 2  # the to_target estimate, once per class count
    assert "with a target confidence (the to_target estimate)" in report
