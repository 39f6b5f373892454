"""The campaign-replay's reading at each budget (uniform overlap k)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks._campaign_budgets import budget_headline, budget_tables, share_at
from benchmarks.campaign_replay import DatasetSummary


def toy(name: str = "toy") -> DatasetSummary:
    """4 tasks, 12 labels: uniform's budgets 4, 8, 12 (overlap 1, 2, 3)."""
    grid = np.arange(4, 13)
    uniform = np.interp(grid, [4, 8, 12], [0.5, 0.75, 1.0])
    policy = np.interp(grid, [4, 6, 8, 12], [0.5, 0.75, 0.8, 1.0])
    cleanlab = np.interp(grid, [4, 7, 12], [0.5, 0.75, 1.0])
    curves = {"uniform": uniform, "policy": policy, "cleanlab": cleanlab}
    return DatasetSummary(name, 4, 12, grid, curves, np.array([4, 8, 12]), 1.0)


def test_share_at_an_overlap_reads_uniforms_accuracy_there():
    summary = toy()
    # uniform's accuracy at k=2 (8 labels) is 0.75: the policy has it with 6 labels
    assert share_at(summary, "policy", 2) == pytest.approx(6 / 8)
    assert share_at(summary, "cleanlab", 2) == pytest.approx(7 / 8)
    assert share_at(summary, "uniform", 2) == pytest.approx(1.0)
    # the whole pool: every arm ends with the same labels
    assert share_at(summary, "policy", None) == pytest.approx(1.0)
    assert np.isnan(share_at(summary, "policy", 4))  # no task has 4 labels


def test_budget_tables_count_the_goal_and_compare_with_cleanlab():
    summaries = [toy("a"), toy("b")]
    side = {"a": summaries[0]}
    tables = budget_tables(summaries, side, goal=0.2)
    titles = list(tables)
    budgets, policy, against = (tables[t] for t in titles)
    assert list(budgets["k=2"]) == ["0.67", "0.67"]
    assert list(budgets["k=4"]) == ["-", "-"]
    assert policy.iloc[0]["k=2"] == "0.750"
    assert policy.iloc[-1]["k=2"] == "2 of 2"  # 25 % saved >= 20 %
    assert policy.iloc[-1]["all labels"] == "0 of 2"
    assert list(against["dataset"]) == ["a", "mean saving, policy / cleanlab"]
    assert against.iloc[0]["k=2"] == "0.750 / 0.875"
    assert against.iloc[-1]["k=2"] == "25.0% / 12.5%"
    text = budget_headline(summaries, side, goal=0.2)
    assert "k=2: 2 of 2, mean saving 25.0% against cleanlab's 12.5%" in text
    assert "cleanlab" not in budget_headline(summaries, {}, goal=0.2)
