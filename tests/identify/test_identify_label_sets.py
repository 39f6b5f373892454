"""Label-set worker and task scores: they single out spammers, careless workers and
split tasks, and follow the codes."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.data import CrowdData, LabelSets
from crowdlearn.identify.label_sets import task_scores, worker_scores
from crowdlearn.simulate import simulate_label_sets


def test_worker_scores_find_the_groups():
    data, info = simulate_label_sets(n_tasks=600, n_workers=20, random_state=0, return_info=True)
    scores = worker_scores(data)
    assert set(scores) == {"sensitivity", "specificity", "agreement", "n_answers"}
    for values in scores.values():
        assert values.shape == (data.n_workers,)
    assert scores["n_answers"].sum() == data.n_annotations
    reliable, careless, spammer = (info.group == g for g in ("reliable", "careless", "spammer"))
    assert scores["sensitivity"][reliable].min() > scores["sensitivity"][careless].max()
    assert scores["agreement"][reliable].min() > scores["agreement"][spammer].max()
    truth = (info.sensitivity * data.truth.mean(axis=0)).sum(axis=1) / data.truth.mean(
        axis=0
    ).sum()
    assert np.corrcoef(scores["sensitivity"], truth)[0, 1] > 0.9


def test_agreement_by_hand():
    """Task 0: a, b select x and c selects y; task 1: b alone (not shared)."""
    data = LabelSets.from_arrays(
        [0, 0, 0, 1], ["a", "b", "c", "b"], [["x"], ["x"], ["y"], ["x", "y"]]
    )
    agreement = worker_scores(data, strategy="binary-mv")["agreement"]
    # a: x agreed by b of (b, c) -> 1/2; y left out by b, selected by c -> 1/2
    np.testing.assert_allclose(agreement, [0.5, 0.5, 0.0])
    lone = LabelSets.from_arrays([0, 1], ["a", "b"], [["x"], ["y"]])
    assert np.all(np.isnan(worker_scores(lone)["agreement"]))


def test_task_scores():
    data = LabelSets.from_arrays(
        [0, 0, 1, 1, 2],
        ["a", "b", "a", "b", "a"],
        [["x"], ["x"], ["x"], ["y"], []],
        classes=["x", "y"],
    )
    scores = task_scores(data, strategy="binary-ds")
    np.testing.assert_array_equal(scores["n_answers"], [2, 2, 1])
    np.testing.assert_allclose(scores["disagreement"], [0.0, 1.0, 0.0])
    assert scores["uncertainty"][1] > scores["uncertainty"][0]
    assert np.all((scores["uncertainty"] >= 0) & (scores["uncertainty"] <= 1))


def test_scores_follow_a_relabelling_of_workers_and_tasks():
    data = simulate_label_sets(n_tasks=60, n_workers=8, random_state=1)
    rng = np.random.default_rng(0)
    tasks, workers = rng.permutation(data.n_tasks), rng.permutation(data.n_workers)
    renamed = LabelSets(
        tasks[data.task],
        workers[data.worker],
        data.answers,
        n_tasks=data.n_tasks,
        worker_ids=np.arange(data.n_workers),
        classes=data.classes,
    )
    before, after = worker_scores(data), worker_scores(renamed)
    for name in before:
        np.testing.assert_allclose(after[name][workers], before[name], atol=1e-8)
    before, after = task_scores(data), task_scores(renamed)
    for name in before:
        np.testing.assert_allclose(after[name][tasks], before[name], atol=1e-8)


def test_wrong_type():
    with pytest.raises(TypeError, match="LabelSets"):
        worker_scores(CrowdData.from_arrays([0], [0], [0]))
