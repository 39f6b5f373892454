"""The campaign-cavity and campaign-score controls of the policy's defaults."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.campaign._budgets import paired_gains
from benchmarks.campaign.cavity import FIRST_ORDER


def _rows(arm, order, labels, accuracy):
    return [
        {"dataset": "toy", "arm": arm, "order": order, "labels": n, "accuracy": a}
        for n, a in zip(labels, accuracy, strict=True)
    ]


def test_paired_gains_read_each_order_at_uniforms_budgets():
    # 10 tasks, uniform's budgets 10, 20, 30 (overlaps 1-3): k=2 at 20, k=3 at 30
    rows = []
    for order, lift in ((0, 0.1), (1, -0.05)):
        rows += _rows("uniform", order, [10, 20, 30], [0.5, 0.6, 0.7])
        rows += _rows("policy", order, [10, 15, 25, 30], [0.5, 0.7, 0.8, 0.7])
        rows += _rows("policy-in-sample", order, [10, 20, 30], [0.5, 0.7 - lift, 0.7])
    gains = paired_gains(pd.DataFrame(rows), "policy", "policy-in-sample").set_index("dataset")
    # policy at 20 labels: halfway between 0.7 (15) and 0.8 (25) = 0.75
    expected_k2 = np.mean([0.75 - (0.7 - 0.1), 0.75 - (0.7 + 0.05)])
    assert gains.loc["toy", "k=2"] == pytest.approx(100 * expected_k2)
    assert gains.loc["toy", "k=3"] == pytest.approx(0.0)
    assert np.isnan(gains.loc["toy", "k=4"]) and np.isnan(gains.loc["toy", "k=5"])


def test_quick_run_on_the_real_datasets(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("campaign-cavity", tmp_path, quick=True, seeds=2).read_text()
    assert "| orders | dataset | gain k=2 (points) |" in report
    assert "orders 0-1: accuracy at uniform's budget" in report
    raw = pd.read_csv(tmp_path / "campaign-cavity.csv")
    assert set(raw["arm"]) == {"uniform", "policy", "policy-in-sample"}
    assert sorted(raw["order"].unique()) == [0, 1]  # below FIRST_ORDER: held out
    assert FIRST_ORDER == 10
    last = raw.loc[raw.groupby(["dataset", "arm", "order"])["labels"].idxmax()]
    assert (last["labels"] == last["n_annotations"]).all()


def test_quick_score_control_on_the_real_datasets(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("campaign-score", tmp_path, quick=True, seeds=1).read_text()
    assert "shares k=2, policy / policy-entropy" in report
    raw = pd.read_csv(tmp_path / "campaign-score.csv")
    assert set(raw["arm"]) == {"uniform", "policy", "policy-entropy"}
    # WSD has three classes, so the two scores may choose differently; Bluebirds has
    # two, where the decision score is the entropy score: the replays are the same
    # until their last rounds, where the two formulas' rounding can order tasks of
    # equal value differently (frequent since issue 43: workers known only through
    # the prior give many tasks the same posterior), and the readings are equal
    two = raw[raw["dataset"] == "bluebirds"]
    ours = two[two["arm"] == "policy"].set_index("labels")["accuracy"]
    theirs = two[two["arm"] == "policy-entropy"].set_index("labels")["accuracy"]
    early = ours.index[ours.index < 0.9 * two["n_annotations"].iloc[0]]
    assert len(early) > 100
    np.testing.assert_array_equal(ours.loc[early].to_numpy(), theirs.loc[early].to_numpy())
    [row] = [line for line in report.splitlines() if line.startswith("| 0-0 | bluebirds |")]
    pairs = [cell.split(" / ") for cell in row.strip(" |").split(" | ") if " / " in cell]
    assert len(pairs) == 4 and all(a == b for a, b in pairs)
