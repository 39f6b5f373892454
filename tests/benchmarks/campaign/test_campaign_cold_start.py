"""campaign-cold-start: Dawid-Skene at one label a task, and each arm's first round."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import run
from benchmarks.campaign.cold_start import (
    cold_start,
    lone_labels,
    no_overlap_crowd,
    vote_accuracy,
)
from benchmarks.campaign.replay import annotation_positions, policy_chooser
from crowdlearn.data import CrowdData
from crowdlearn.simulate import independent_confusion


def test_vote_accuracy_counts_ties_as_a_coin_toss():
    data = CrowdData.from_arrays(
        task=[0, 0, 1, 1, 2], worker=[0, 1, 0, 1, 0], label=["a", "a", "a", "b", "b"]
    )
    data = CrowdData(
        data.task, data.worker, data.label, classes=data.classes, truth=np.array([0, 0, 0])
    )
    # task 0 right, task 1 a tie (half), task 2 wrong
    assert vote_accuracy(data) == pytest.approx(0.5)


def test_lone_labels_are_those_of_tasks_with_one_label():
    data = CrowdData(np.array([0, 0, 1, 2]), np.array([0, 1, 0, 1]), np.array([1, 0, 2, 1]))
    assert lone_labels(data).tolist() == [-1, 2, 1]


def test_cold_start_reads_every_reading_of_one_order():
    data = independent_confusion(n_worker=12, n_task=120, n_classes=3, feedback=5, seed=0)
    row = cold_start(data, 0, {"policy": policy_chooser(0)})
    for k in (1, 2, 3):
        assert 0 <= row[f"ds_{k}"] <= 1 and 0 <= row[f"vote_{k}"] <= 1
    assert 0 <= row["flipped"] <= 1 and 0 <= row["policy_on_flipped"] <= 1
    # the gain is in whole tasks: the refit's correct tasks minus the start's
    assert row["policy_gain"] == pytest.approx(round(row["policy_gain"]))
    # with one label a task the vote is the lone label: the share of first labels right
    first = annotation_positions(data, 0) == 0
    right = data.label[first] == data.truth[data.task[first]]
    assert row["vote_1"] == pytest.approx(right.mean())


def test_the_control_crowd_shares_no_task_and_has_the_prior():
    data = no_overlap_crowd(5, 0)
    assert data.n_annotations == data.n_tasks == 150 and data.n_workers == 30
    assert np.bincount(data.task).max() == 1  # one label a task: no task shared
    assert (data.label == data.truth).mean() > 0.9
    assert set(np.unique(data.truth)) == {0, 1, 2}


def test_quick_run_on_the_real_crowds(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    monkeypatch.setenv("CROWDLEARN_CLEANLAB_PYTHON", str(tmp_path / "no-python"))
    report = run("campaign-cold-start", tmp_path, quick=True, seeds=1).read_text()
    assert "cleanlab not run: no interpreter" in report
    assert "| dataset | DS / vote, 1 label a task |" in report
    assert (
        "| dataset | policy: bought on differing tasks (share) | policy: correct tasks gained |"
        in (report)
    )
    raw = pd.read_csv(tmp_path / "campaign-cold-start.csv")
    assert set(raw["dataset"]) == {"wsd", "bluebirds"} and set(raw["order"]) == {0}
    # WSD: Dawid-Skene fitted on one label a task relabels some tasks, most of them right
    wsd = raw[raw["dataset"] == "wsd"].iloc[0]
    assert wsd["flipped"] > 0 and wsd["ds_1"] < wsd["vote_1"]
    control = report.split("**Control: simulated crowds with no task shared between workers**")[1]
    assert "| labels per worker | DS label differs from the lone label (share) |" in control
