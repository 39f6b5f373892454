"""campaign-power: the tie's spread per crowd, the orders needed, ten-order readings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.campaign._budgets import ReplayCurves
from benchmarks.campaign.power import orders_needed, pooled_rows, replay_hours, split_halves
from benchmarks.campaign.replication import FIRST_ORDER
from tests.benchmarks.campaign.test_campaign_budgets import raw_rows


def write_sources(folder, policy_at_8, cleanlab_at_8, dataset="toy") -> None:
    """campaign-replay's rows (orders 0..) and campaign-replication's (30..) in
    ``folder``, each with a replay time of 60 s and an arm the power reading ignores."""
    for name, first in (("campaign-replay", 0), ("campaign-replication", FIRST_ORDER)):
        rows = raw_rows(policy_at_8, cleanlab_at_8)
        rows = rows.assign(dataset=dataset, seconds=60.0, n_tasks=4)
        extra = rows[rows["arm"] == "policy"].assign(arm="random")
        rows = pd.concat([rows, extra], ignore_index=True)
        rows.assign(order=rows["order"] + first).to_csv(folder / f"{name}.csv", index=False)


def test_orders_needed_follows_the_square_root_law():
    # a standard error of 1 on 20 orders: a difference of 1.96 is just resolved with 20
    assert orders_needed(20, 1.0, 1.959964) == pytest.approx(20)
    assert orders_needed(20, 1.0, 0.979982) == pytest.approx(80)  # half the difference
    assert orders_needed(20, 2.0, -1.959964) == pytest.approx(80)  # the sign does not matter
    assert orders_needed(20, 1.0, 0.0) == float("inf")


def test_pooled_rows_read_both_runs_and_say_what_is_missing(tmp_path):
    raw, notes = pooled_rows(tmp_path, 2)
    assert raw.empty and len(notes) == 2
    assert "run `python -m benchmarks campaign-replay --seeds 10`" in notes[0]
    write_sources(tmp_path, [0.8] * 3, [0.72] * 3)
    raw, notes = pooled_rows(tmp_path, 2)
    # two orders of each run, the three arms only
    assert sorted(raw["order"].unique()) == [0, 1, FIRST_ORDER, FIRST_ORDER + 1]
    assert set(raw["arm"]) == {"uniform", "policy", "cleanlab"}
    assert notes == [
        "campaign-replay: orders 0-1 read from campaign-replay.csv",
        f"campaign-replication: orders {FIRST_ORDER}-{FIRST_ORDER + 1} read from "
        "campaign-replication.csv",
    ]
    # asking for more orders than a run has leaves the dataset out, and says so
    raw, notes = pooled_rows(tmp_path, 4)
    assert raw.empty and notes[-1] == "left out (an arm or an order missing): toy"


def test_split_halves_of_equal_orders_read_no_difference_and_see_a_real_one():
    same = ReplayCurves(raw_rows([0.8] * 4, [0.8] * 4), {"toy": 4})
    paired, arms = split_halves(same, splits=20)
    assert paired.shape == (20, 5)
    assert np.nanmax(np.abs(paired)) == 0 and np.nanmax(np.abs(arms["policy"])) == 0
    better = ReplayCurves(raw_rows([0.8, 0.8, 0.74, 0.74], [0.72] * 4), {"toy": 4})
    paired, arms = split_halves(better, splits=50)
    assert (paired[:, 0] > 0).all()  # the policy ahead at k=2 on every half
    # the policy's own level moves with the half (0.8 or 0.74 in it), cleanlab's does not
    assert np.nanmax(np.abs(arms["policy"][:, 0])) > 0
    assert np.nanmax(np.abs(arms["cleanlab"][:, 0])) == 0


def test_replay_hours_sum_the_arms_of_one_order():
    raw = raw_rows([0.8] * 2, [0.8] * 2).assign(seconds=360.0)
    assert replay_hours(raw) == pytest.approx(3 * 360 / 3600)


def test_run_reads_the_folder_and_writes_every_table(tmp_path):
    write_sources(tmp_path, [0.8, 0.74, 0.77, 0.9], [0.72] * 4)
    report = run("campaign-power", tmp_path, quick=True, seeds=4).read_text()
    assert (
        "| budget | policy - cleanlab, mean saving (8 orders, points) | standard error | "
        "orders for the measured difference | orders for 1 point |"
    ) in report
    assert "**Cleanlab's share minus the policy's, per crowd (points ± standard error)**" in report
    assert "**Readings of 4 orders (random halves of the 8)**" in report
    raw = pd.read_csv(tmp_path / "campaign-power.csv")
    k2 = raw[raw["budget"] == "k=2"].iloc[0]
    # the policy reaches uniform's 0.75 sooner than cleanlab on every order: positive
    assert k2["cleanlab_minus_policy_share_points"] > 0 and k2["orders"] == 8
    assert "One order of the three arms on the 1 crowd takes 0.05 h" in report
    # the policy's curve is ahead at 8 labels on every order, by 0.0825 on average
    # (0.8025 against 0.72), so by 0.33 of 4 tasks, and never behind; uniform has no
    # k=5, so the curves are read to the pool (12 labels)
    apart = report.split("How far apart the mean curves are, in tasks")[1]
    # at uniform's budget for k=2 (8 labels): cleanlab - policy = -0.33 tasks
    assert "| toy | 4 | -0.33 | +0.00 | - | - | 0.00 | 0.33 | 4-12 |" in apart
