"""campaign-target: the to_target estimate against what a replayed campaign bought."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks import run
from benchmarks.campaign.replay import annotation_positions, fit_ds, revealed_data
from benchmarks.campaign.target import (
    MIN_LABELS,
    TARGET,
    estimate,
    finish,
    rule_rows,
    target_rows,
)
from crowdlearn.campaign import rank_tasks
from crowdlearn.campaign.ranking import TARGET_CAP
from crowdlearn.simulate import independent_confusion


def crowd():
    return independent_confusion(n_worker=20, n_task=60, n_classes=2, feedback=6, seed=3)


def test_finish_buys_until_no_open_task_can_get_a_label():
    data = crowd()
    revealed = np.ones(data.n_tasks, np.int64)
    run = finish(data, 0, revealed, 0.05)
    bought, left_open = run["bought"], run["left open"]
    sizes = np.bincount(data.task, minlength=data.n_tasks)
    assert run["rounds"] > 0 and bought.sum() > 0
    assert (revealed + bought <= sizes).all()  # only labels the pool holds
    assert 0 <= run["accuracy of the done tasks"] <= 1 and 0 <= run["accuracy"] <= 1
    # at the end every open task has nothing left to buy
    sub = revealed_data(data, annotation_positions(data, 0), revealed + bought)
    table = rank_tasks(sub, target_confidence=TARGET, min_labels=MIN_LABELS, random_state=0)
    still_open = table.loc[~table["done"], "task"].to_numpy(dtype=np.int64)
    assert len(still_open) == left_open
    assert (revealed[still_open] + bought[still_open] == sizes[still_open]).all()


def test_the_estimate_is_rank_tasks_to_target_column():
    # the benchmark rebuilds rank_tasks' inputs to cap each task at its pool; with the
    # user's cap it must give exactly the column the user gets
    data = crowd()
    sub = revealed_data(data, annotation_positions(data, 0), np.full(data.n_tasks, 2))
    model = fit_ds(sub, 0)
    ours, _ = estimate(sub, model, TARGET_CAP, 0)
    table = rank_tasks(sub, model, target_confidence=TARGET, min_labels=MIN_LABELS)
    theirs = np.zeros(data.n_tasks)
    theirs[table["task"].to_numpy(dtype=np.int64)] = table["to_target"].to_numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_a_stricter_done_rule_buys_more_and_uniform_is_read_at_the_same_labels():
    rows = rule_rows("toy", crowd(), 0, 0.05)
    assert [row["min labels"] for row in rows] == [2, 3, 4]
    spent = [row["labels per task"] for row in rows]
    assert spent[0] <= spent[1] <= spent[2]
    assert all(0 <= row["uniform, same labels"] <= 1 for row in rows)


def test_target_rows_compare_the_estimate_with_what_was_bought():
    data = crowd()
    (row,) = target_rows("toy", data, 0, 0.05, (1.5,))
    assert row["labels now"] >= 1.5 * data.n_tasks
    # the same walks, capped at the pool (at most 5 left a task here) instead of at 30
    assert row["estimate within the pool"] <= row["estimate"]
    assert row["bought"] > 0 and row["open tasks"] > 0
    # a crowd drawn from the model's own kind: the estimate is near what was bought
    assert 0.5 < row["estimate within the pool"] / row["bought"] < 2.0


def test_quick_run_on_the_real_datasets(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("campaign-target", tmp_path, quick=True, seeds=1).read_text()
    assert "| dataset | start (labels per task) | open tasks | estimate |" in report
    assert "Estimate within the pool over the labels bought, by start" in report
    assert "| dataset | min labels | labels per task | accuracy of the done tasks |" in report
    raw = pd.read_csv(tmp_path / "campaign-target.csv")
    assert set(raw["dataset"]) == {"wsd", "bluebirds"}
    assert set(raw["part"]) == {"estimate", "done rule"}
    assert (raw.loc[raw["part"] == "estimate", "bought"] > 0).all()
    assert sorted(raw.loc[raw["part"] == "done rule", "min labels"].unique()) == [2, 3, 4]
