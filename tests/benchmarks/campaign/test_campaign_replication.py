"""campaign-replication: campaign-replay's goals on fresh orders, and pooled."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks import run
from benchmarks.campaign._budgets import saving_difference
from benchmarks.campaign.replication import FIRST_ORDER, differences, reading
from tests.benchmarks.campaign.test_campaign_budgets import raw_rows


def shifted(raw: pd.DataFrame, by: int) -> pd.DataFrame:
    return raw.assign(order=raw["order"] + by)


def test_saving_difference_reads_the_lowest_orders_present_whatever_their_numbers():
    raw = raw_rows([0.8, 0.74, 0.77, 0.9], [0.72] * 4)
    low = saving_difference(raw, {"toy": 2}, reps=50)
    assert low.equals(saving_difference(shifted(raw, FIRST_ORDER), {"toy": 2}, reps=50))
    # the first two orders only: not the same as all four
    assert not low.equals(saving_difference(raw, {"toy": 4}, reps=50))


def test_differences_read_every_order_and_say_it():
    raw = shifted(raw_rows([0.8] * 3, [0.72] * 3), FIRST_ORDER)
    tables, sentence = differences(raw, "orders 30-32")
    saving = tables["Policy's mean saving minus cleanlab's at each budget: orders 30-32"]
    # uniform's 0.75 at k=2 (8 labels): the policy reaches it at 7 labels, cleanlab at 8.33
    assert float(saving.iloc[0, 1]) == pytest.approx(100 * (8 + 2 * 0.03 / 0.18 - 7) / 8, abs=0.05)
    accuracy = tables["Accuracy at equal labels at uniform overlap k's budget: orders 30-32"]
    assert accuracy.iloc[0, 1].startswith("+8.00")  # policy - cleanlab at k=2: 0.80 - 0.72
    assert list(accuracy.columns)[1:] == [
        "policy - cleanlab (points)",
        "policy - uniform (points)",
    ]
    assert sentence.startswith("Orders 30-32, the policy's mean saving minus cleanlab's")
    assert f"k=2: {saving.iloc[0, 1]} ({saving.iloc[0, 2]})" in sentence
    assert "At equal labels, policy's accuracy minus cleanlab's" in sentence


def test_without_cleanlab_the_reading_compares_the_policy_with_uniform_only():
    raw = raw_rows([0.8] * 2, [0.72] * 2)
    raw = raw[raw["arm"] != "cleanlab"].assign(n_tasks=4)
    table, extra, summary = reading(raw, "orders 0-1")
    assert list(table.columns) == [
        "orders",
        "dataset",
        "uniform acc. (all labels)",
        "policy - uniform, worst (pts)",
    ]
    assert not any("cleanlab" in title for title in extra)
    assert (
        "policy - uniform (points)"
        in extra["Accuracy at equal labels at uniform overlap k's budget: orders 0-1"]
    )
    assert summary.startswith("Orders 0-1: With the whole pool as the budget")
    assert "At equal labels, policy's accuracy minus uniform's" in summary


def test_quick_run_replays_fresh_orders(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    monkeypatch.setenv("CROWDLEARN_CLEANLAB_PYTHON", str(tmp_path / "no-python"))
    report = run("campaign-replication", tmp_path, quick=True, seeds=1).read_text()
    assert "cleanlab not run: no interpreter" in report
    assert "| orders | dataset | uniform acc. (all labels) | policy - uniform, worst (pts) |" in (
        report
    )
    raw = pd.read_csv(tmp_path / "campaign-replication.csv")
    assert set(raw["order"]) == {FIRST_ORDER}
    assert set(raw["arm"]) == {"uniform", "policy"}
    last = raw.loc[raw.groupby(["dataset", "arm", "order"])["labels"].idxmax()]
    assert (last["labels"] == last["n_annotations"]).all()
