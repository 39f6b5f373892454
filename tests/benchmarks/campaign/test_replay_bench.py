"""The campaign-replay benchmark: its replay on simulated crowds (no real data needed),
its metrics, and the quick run on the real datasets when they are here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.campaign.replay import (
    DatasetSummary,
    annotation_positions,
    fit_ds,
    labels_to_reach,
    order_shares,
    policy_chooser,
    random_chooser,
    replay,
    revealed_data,
    uniform_chooser,
)
from crowdlearn.simulate import hammer_spammer, independent_confusion


@pytest.fixture(scope="module")
def crowd():
    return independent_confusion(n_worker=20, n_task=60, n_classes=3, feedback=6, seed=3)


def test_each_task_gets_a_random_order_of_its_own_annotations(crowd):
    positions = annotation_positions(crowd, seed=0)
    for task in range(crowd.n_tasks):
        rows = np.flatnonzero(crowd.task == task)
        assert sorted(positions[rows]) == list(range(len(rows)))
    assert not np.array_equal(positions, annotation_positions(crowd, seed=1))
    revealed = np.full(crowd.n_tasks, 2)
    sub = revealed_data(crowd, positions, revealed)
    assert np.array_equal(np.bincount(sub.task, minlength=crowd.n_tasks), revealed)


@pytest.mark.parametrize("seed", [0, 1])
def test_every_arm_ends_with_every_label_and_uniforms_accuracy(crowd, seed):
    arms = {
        "uniform": uniform_chooser,
        "policy": policy_chooser(seed),
        "random": random_chooser(seed),
        "policy-accuracy": policy_chooser(seed, score="accuracy"),
    }
    curves = {
        arm: replay(crowd, seed, choose, min_share=0.1, growth=0.0) for arm, choose in arms.items()
    }
    for arm, curve in curves.items():
        labels = np.asarray(curve.labels)
        assert labels[0] == crowd.n_tasks and labels[-1] == crowd.n_annotations, arm
        assert (np.diff(labels) > 0).all(), arm  # monotone, something bought every round
        assert np.array_equal(np.diff(labels), curve.batch), arm
        assert labels.max() <= crowd.n_annotations
        # the same labels at full budget: the same accuracy
        assert curve.accuracy[-1] == curves["uniform"].accuracy[-1], arm
    # uniform's rounds are overlaps k = 1..6; the others buy 10 % of the tasks per round
    assert curves["uniform"].labels == [crowd.n_tasks * k for k in range(1, 7)]
    # (fewer at the end, when fewer tasks have an annotation left)
    assert curves["random"].batch[0] == 6 and max(curves["random"].batch) == 6


def test_an_arm_that_buys_a_missing_annotation_is_caught(crowd):
    def greedy(model, sub, open_tasks, batch, round_):
        return np.arange(batch)  # the first tasks, long after they are exhausted

    with pytest.raises(AssertionError, match="does not exist"):
        replay(crowd, 0, greedy, min_share=0.1, growth=0.0)


def test_the_policy_beats_random_choice_among_hammers_and_spammers():
    # 10 labels per task, 70 % spammers: which tasks need more labels matters
    crowd = hammer_spammer(n_worker=30, n_task=150, n_classes=4, ratio=0.7, feedback=10, seed=0)
    area = {"policy": [], "random": []}
    for seed in range(2):
        for arm, choose in (("policy", policy_chooser(seed)), ("random", random_chooser(seed))):
            curve = replay(crowd, seed, choose, min_share=0.05, growth=0.0)
            grid = np.arange(crowd.n_tasks, crowd.n_annotations + 1)
            area[arm].append(np.interp(grid, curve.labels, curve.accuracy).mean())
    # mean accuracy over the whole budget: policy clearly above random
    assert np.mean(area["policy"]) > np.mean(area["random"]) + 0.01, area


def test_labels_to_reach_interpolates_the_first_crossing():
    grid = np.array([10, 11, 12, 13])
    curve = np.array([0.5, 0.7, 0.9, 0.8])
    assert labels_to_reach(grid, curve, 0.8) == pytest.approx(11.5)
    assert labels_to_reach(grid, curve, 0.4) == 10
    assert np.isnan(labels_to_reach(grid, curve, 0.95))


def test_shares_and_gaps_read_the_mean_curves():
    grid = np.arange(4, 13)  # 4 tasks, 12 labels: uniform's budgets 4, 8, 12
    uniform = np.interp(grid, [4, 8, 12], [0.5, 0.75, 1.0])
    policy = np.interp(grid, [4, 6, 8, 12], [0.5, 1.0, 0.74, 1.0])
    summary = DatasetSummary(
        "toy", 4, 12, grid, {"uniform": uniform, "policy": policy}, np.array([4, 8, 12]), 1.0
    )
    assert summary.share("policy") == pytest.approx(6 / 12)
    assert summary.worst_gap("policy") == pytest.approx(-1.0)
    assert summary.share("uniform") == 1.0


def test_quick_run_on_the_real_datasets(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    monkeypatch.setenv("CROWDLEARN_CLEANLAB_PYTHON", str(tmp_path / "no-python"))
    report = run("campaign-replay", tmp_path, quick=True, seeds=2).read_text()
    assert "| dataset | tasks | labels | uniform acc. (all labels) | policy share |" in report
    assert "cleanlab not run: no interpreter" in report
    assert "| dataset | labels per task | excess confidence, 1 label (in sample / left out) |" in (
        report
    )
    # without cleanlab the equal-labels table still compares the arms that ran
    assert "| budget | policy - uniform (points) | policy - random (points) |" in report
    assert "policy - cleanlab" not in report
    raw = pd.read_csv(tmp_path / "campaign-replay.csv")
    assert set(raw["dataset"]) == {"wsd", "bluebirds"}
    assert set(raw["arm"]) == {"uniform", "policy", "random"}
    last = raw.loc[raw.groupby(["dataset", "arm", "order"])["labels"].idxmax()]
    assert (last["labels"] == last["n_annotations"]).all()
    for _, group in last.groupby(["dataset", "order"]):
        assert group["accuracy"].nunique() == 1
    assert (tmp_path / "campaign-replay-wsd.png").exists()


def test_order_shares_tell_first_reach_from_reach_and_stay():
    labels = np.array([10, 20, 30, 40, 50])
    # touches its final accuracy at 20 labels, falls below, and stays from 40
    first, stay = order_shares(labels, np.array([0.5, 0.9, 0.8, 0.9, 0.9]))
    assert (first, stay) == (20 / 50, 40 / 50)
    # a curve above its final accuracy from the start reaches and stays at once
    assert order_shares(labels, np.array([0.95, 0.95, 0.92, 0.93, 0.92])) == (0.2, 0.2)
    # only the last label reaches it
    assert order_shares(labels, np.array([0.5, 0.6, 0.7, 0.8, 0.9])) == (1.0, 1.0)


def test_the_floor_variant_buys_for_tasks_below_the_floor_first(crowd):
    positions = annotation_positions(crowd, seed=0)
    revealed = np.where(np.arange(crowd.n_tasks) < 30, 1, 3)  # tasks 0-29 have 1 label
    sub = revealed_data(crowd, positions, revealed)
    model = fit_ds(sub, 0)
    open_tasks = np.ones(crowd.n_tasks, dtype=bool)
    chosen = policy_chooser(0, floor=3)(model, sub, open_tasks, 30, 0)
    assert sorted(chosen) == list(range(30))
    # without the floor the ranking alone decides (here: not only the short tasks)
    plain = policy_chooser(0)(model, sub, open_tasks, 30, 0)
    assert len(plain) == 30 and set(plain) != set(range(30))
