"""The campaign-replay's reading at each budget (uniform overlap k)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.campaign._budgets import (
    accuracy_difference,
    budget_headline,
    budget_tables,
    saving_difference,
    share_at,
)
from benchmarks.campaign.replay import DatasetSummary


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


def raw_rows(policy_at_8: list[float], cleanlab_at_8: list[float]) -> pd.DataFrame:
    """Replays of 4 tasks (12 labels) on len(orders) orders: uniform buys 4 a round,
    the other arms reach their accuracy at 8 labels through 6 and 10."""
    rows = []
    for order, (ours, theirs) in enumerate(zip(policy_at_8, cleanlab_at_8, strict=True)):
        arms = {
            "uniform": ([4, 8, 12], [0.5, 0.75, 1.0]),
            "policy": ([4, 6, 8, 10, 12], [0.5, 0.7, ours, 0.9, 1.0]),
            "cleanlab": ([4, 6, 8, 10, 12], [0.5, 0.7, theirs, 0.9, 1.0]),
        }
        for arm, (labels, accuracy) in arms.items():
            rows += [
                {
                    "dataset": "toy",
                    "arm": arm,
                    "order": order,
                    "labels": n,
                    "accuracy": a,
                    "n_annotations": 12,
                }
                for n, a in zip(labels, accuracy, strict=True)
            ]
    return pd.DataFrame(rows)


def test_saving_difference_is_zero_for_equal_arms_and_signed_otherwise():
    same = saving_difference(raw_rows([0.8] * 4, [0.8] * 4), {"toy": 4}, reps=50)
    assert list(same["budget"]) == ["k=2", "k=3", "k=4", "k=5", "all labels"]
    assert same.iloc[0, 1] == "+0.0" and same.iloc[0, 2] == "+0.0 to +0.0"
    better = saving_difference(raw_rows([0.8] * 4, [0.72] * 4), {"toy": 4}, reps=50)
    # uniform's 0.75 at k=2: the policy reaches it at 7 labels, cleanlab at 8.33
    assert float(better.iloc[0, 1]) == pytest.approx(100 * (8 + 2 * 0.03 / 0.18 - 7) / 8, abs=0.05)
    low, high = (float(v) for v in better.iloc[0, 2].split(" to "))
    assert 0 < low <= high
    assert saving_difference(raw_rows([0.8], [0.8]), {"other": 1}).empty


def test_accuracy_difference_reads_each_order_at_uniforms_budgets_paired():
    same = accuracy_difference(raw_rows([0.8] * 3, [0.8] * 3), [("policy", "cleanlab")], reps=50)
    assert list(same["budget"]) == ["k=2", "k=3", "k=4", "k=5"]
    assert same.iloc[0, 1] == "+0.00 (+0.00 to +0.00)"
    assert same.iloc[2, 1] == "- (- to -)"  # uniform never reaches 4 labels a task
    # at k=2 (8 labels) the policy leads by 8, 2 and 5 points on three orders
    ours, theirs = [0.8, 0.74, 0.77], [0.72, 0.72, 0.72]
    table = accuracy_difference(
        raw_rows(ours, theirs), [("policy", "cleanlab"), ("cleanlab", "policy")], reps=200
    )
    value, interval = table.iloc[0, 1].split(" (")
    assert float(value) == pytest.approx(5.0)
    low, high = (float(v) for v in interval.rstrip(")").split(" to "))
    assert 2.0 <= low < 5.0 < high <= 8.0
    assert table.iloc[0, 2].startswith("-5.00")  # antisymmetric
    assert table.iloc[1, 1].startswith("+0.00")  # k=3 is the whole pool: equal
    assert accuracy_difference(raw_rows([0.8], [0.8]), [("policy", "random")]).empty


def test_a_curve_that_never_reaches_counts_the_whole_pool_against_its_arm():
    """In the replay every arm ends with the pool's labels, so it reaches the (capped)
    level at the latest with the last label; should an arm ever end lower, it must not
    drop out of its own mean saving."""
    grid = np.arange(4, 13)
    curves = {
        "uniform": np.interp(grid, [4, 8, 12], [0.5, 0.75, 1.0]),
        "policy": np.interp(grid, [4, 8, 12], [0.5, 0.7, 0.7]),  # never 0.75
        "cleanlab": np.interp(grid, [4, 7, 12], [0.5, 0.75, 1.0]),
    }
    summary = DatasetSummary("a", 4, 12, grid, curves, np.array([4, 8, 12]), 1.0)
    assert np.isnan(share_at(summary, "policy", 2))
    assert share_at(summary, "policy", 2, unreached="pool") == pytest.approx(12 / 8)
    assert np.isnan(share_at(summary, "policy", 4, unreached="pool"))  # no overlap 4
    with pytest.raises(ValueError, match="unreached"):
        share_at(summary, "policy", 2, unreached="skip")
    tables = budget_tables([summary], {"a": summary}, goal=0.2)
    policy, against = (tables[t] for t in list(tables)[1:])
    assert policy.iloc[0]["k=2"] == "never"
    assert against.iloc[0]["k=2"] == "never / 0.875"
    # the policy's saving at k=2 is 1 - 12/8 = -50 %, not left out of its mean
    assert against.iloc[-1]["k=2"] == "-50.0% / 12.5%"
    assert "mean saving -50.0% against cleanlab's 12.5%" in budget_headline(
        [summary], {"a": summary}, goal=0.2
    )


def test_the_level_to_reach_is_capped_at_the_pools_accuracy():
    """Uniform at k can beat all the labels (a task that 3 labels get right and 10 get
    wrong); the arms are asked for the most the pool supports, not for that luck."""
    grid = np.arange(4, 13)
    curves = {
        "uniform": np.interp(grid, [4, 8, 12], [0.5, 0.9, 0.85]),
        "policy": np.interp(grid, [4, 6, 12], [0.5, 0.85, 0.85]),  # the pool's level at 6
        "cleanlab": np.interp(grid, [4, 7, 8, 12], [0.5, 0.9, 0.85, 0.85]),
    }
    summary = DatasetSummary("a", 4, 12, grid, curves, np.array([4, 8, 12]), 0.85)
    assert share_at(summary, "policy", 2) == pytest.approx(6 / 8)
    # 0.85 on the way up to 0.9: 4 + 0.35 / 0.4 * 3 labels
    assert share_at(summary, "cleanlab", 2) == pytest.approx((4 + 0.35 / 0.4 * 3) / 8)
    assert share_at(summary, "uniform", 2) == pytest.approx((4 + 0.35 / 0.4 * 4) / 8)
