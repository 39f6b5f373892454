"""peerannot's strategies and the STRATEGIES registry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData
from crowdlearn.simulate import (
    STRATEGIES,
    SimulationInfo,
    discrete_difficulty,
    hammer_spammer,
    independent_confusion,
    student_teacher,
)

PEERANNOT = [independent_confusion, hammer_spammer, student_teacher, discrete_difficulty]


def empirical_confusions(data: CrowdData) -> np.ndarray:
    """Per-worker counts of (true class, label) as row frequencies."""
    counts = np.zeros((data.n_workers, data.n_classes, data.n_classes))
    np.add.at(counts, (data.worker, data.truth[data.task], data.label), 1)
    return counts / np.maximum(counts.sum(axis=2, keepdims=True), 1)


def test_registry_names_the_cli_strategies():
    assert set(STRATEGIES) == {
        "independent-confusion",
        "hammer-spammer",
        "student-teacher",
        "discrete-difficulty",
        "cmm-gaussians",
    }
    assert STRATEGIES["student-teacher"] is student_teacher


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_same_seed_same_crowd_and_other_seed_other_crowd(name):
    simulate = STRATEGIES[name]
    small = {"n_per_class": 60} if name == "cmm-gaussians" else {}
    first = simulate(seed=11, **small)
    assert isinstance(first, CrowdData)
    assert first == simulate(seed=11, **small)
    assert first != simulate(seed=12, **small)
    assert first.has_truth and np.all(first.truth >= 0)


@pytest.mark.parametrize("simulate", PEERANNOT)
def test_sizes_and_distinct_workers_per_task(simulate):
    data, info = simulate(n_worker=12, n_task=300, n_classes=4, feedback=7, return_info=True)
    assert (data.n_tasks, data.n_workers, data.n_classes) == (300, 12, 4)
    assert data.n_annotations == 300 * 7
    np.testing.assert_array_equal(data.feedback_effort, np.full(300, 7))
    pairs = data.task.astype(np.int64) * data.n_workers + data.worker
    assert len(np.unique(pairs)) == data.n_annotations
    assert isinstance(info, SimulationInfo)
    assert info.confusions.shape == (12, 4, 4)
    np.testing.assert_allclose(info.confusions.sum(axis=2), 1.0)
    assert info.params["feedback"] == 7 and info.params["seed"] == 0
    assert "return_info" not in info.params
    with pytest.raises(ValueError):
        info.confusions[0, 0, 0] = 1.0  # read-only


def test_defaults_follow_the_paper_examples():
    assert independent_confusion().n_annotations == 200 * 10
    assert independent_confusion().n_workers == 30
    assert student_teacher().n_workers == 50
    _, info = discrete_difficulty(return_info=True)
    assert info.params["n_worker"] == 100 and info.params["ratio"] == 0.35


def test_independent_confusions_are_diagonally_dominant_and_drive_the_answers():
    data, info = independent_confusion(
        n_worker=6, n_task=30000, n_classes=3, feedback=3, seed=4, return_info=True
    )
    diagonal = np.diagonal(info.confusions, axis1=1, axis2=2)
    np.testing.assert_array_equal(diagonal, info.confusions.max(axis=2))
    # Each worker answers ~15000 tasks, ~5000 per class: frequencies within ~0.03.
    np.testing.assert_allclose(empirical_confusions(data), info.confusions, atol=0.03)
    accuracy = np.bincount(data.worker, weights=data.label == data.truth[data.task])
    accuracy /= np.bincount(data.worker)
    expected = diagonal.mean(axis=1)  # classes are uniform
    np.testing.assert_allclose(accuracy, expected, atol=0.02)


def test_hammers_are_always_right_and_spammers_uniform():
    data, info = hammer_spammer(
        n_worker=20, n_task=4000, n_classes=4, ratio=0.25, feedback=5, seed=2, return_info=True
    )
    groups = info.worker_group
    assert list(groups).count("spammer") == 5
    np.testing.assert_array_equal(
        info.confusions[groups == "hammer"], np.tile(np.eye(4), (15, 1, 1))
    )
    correct = data.label == data.truth[data.task]
    by_hammer = groups[data.worker] == "hammer"
    assert correct[by_hammer].all()
    assert abs(correct[~by_hammer].mean() - 0.25) < 0.03


def test_students_copy_their_teacher():
    _, info = student_teacher(n_worker=50, ratio=0.8, seed=3, return_info=True)
    groups = info.worker_group
    assert list(groups[:10]) == ["teacher"] * 10
    for student in range(10, 50):
        teacher = int(groups[student].removeprefix("student_of_"))
        assert teacher < 10
        np.testing.assert_array_equal(info.confusions[student], info.confusions[teacher])
    diagonal = np.diagonal(info.confusions, axis1=1, axis2=2)
    np.testing.assert_array_equal(diagonal, info.confusions.max(axis=2))


def test_discrete_difficulty_levels():
    data, info = discrete_difficulty(
        n_worker=20,
        n_task=30000,
        n_classes=4,
        ratio=0.3,
        ratio_diff=3.0,
        random=0.2,
        feedback=2,
        seed=5,
        return_info=True,
    )
    level = info.task_difficulty
    # p_hard = 0.8 / 4 = 0.2, p_easy = 0.6, p_random = 0.2; sd of a share ~0.003.
    for name, expected in [("easy", 0.6), ("hard", 0.2), ("random", 0.2)]:
        assert abs(np.mean(level == name) - expected) < 0.015
    answered = level[data.task]
    correct = data.label == data.truth[data.task]
    assert correct[answered == "easy"].all()
    assert abs(correct[answered == "random"].mean() - 0.25) < 0.02
    groups = info.worker_group
    assert list(groups).count("good") == 6
    good = info.confusions[groups == "good"]
    np.testing.assert_array_equal(np.diagonal(good, axis1=1, axis2=2), good.max(axis=2))
    # Hard tasks follow the worker's matrix.
    hard = answered == "hard"
    accuracy = np.bincount(data.worker[hard], weights=correct[hard], minlength=20)
    accuracy /= np.bincount(data.worker[hard], minlength=20)
    expected = np.diagonal(info.confusions, axis1=1, axis2=2).mean(axis=1)
    np.testing.assert_allclose(accuracy, expected, atol=0.08)


def test_workerload_caps_every_worker():
    data = independent_confusion(n_worker=30, n_task=200, feedback=10, workerload=67, seed=1)
    assert data.workload.max() <= 67
    np.testing.assert_array_equal(data.feedback_effort, np.full(200, 10))


def test_imbalance_votes_draws_between_one_and_feedback_labels():
    data = hammer_spammer(n_worker=10, n_task=5000, feedback=6, imbalance_votes=True, seed=0)
    effort = data.feedback_effort
    assert effort.min() == 1 and effort.max() == 6
    assert abs(effort.mean() - 3.5) < 0.1


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(PEERANNOT),
    st.integers(1, 15),
    st.integers(1, 40),
    st.integers(2, 6),
    st.data(),
)
def test_any_valid_size_gives_a_consistent_crowd(simulate, n_worker, n_task, n_classes, data):
    feedback = data.draw(st.integers(1, n_worker))
    ratio = data.draw(st.floats(0.0, 1.0 if simulate is not student_teacher else 0.9))
    kwargs = {} if simulate is independent_confusion else {"ratio": ratio}
    crowd, info = simulate(
        n_worker=n_worker,
        n_task=n_task,
        n_classes=n_classes,
        feedback=feedback,
        return_info=True,
        **kwargs,
    )
    assert crowd.n_annotations == n_task * feedback
    assert crowd.label.max() < n_classes
    np.testing.assert_allclose(info.confusions.sum(axis=2), 1.0)
    assert info.confusions.shape == (n_worker, n_classes, n_classes)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: independent_confusion(n_worker=5, feedback=6), "feedback=6 exceeds n_worker=5"),
        (lambda: independent_confusion(n_task=-3), "n_task must be at least 1"),
        (lambda: independent_confusion(n_classes=1), "n_classes must be at least 2"),
        (lambda: independent_confusion(feedback=2.5), "feedback must be an integer"),
        (lambda: independent_confusion(n_worker=True), "n_worker must be an integer"),
        (lambda: hammer_spammer(ratio=1.5), r"ratio must be in \[0.0, 1.0\]"),
        (lambda: hammer_spammer(ratio=-0.1), r"ratio must be in \[0.0, 1.0\]"),
        (lambda: student_teacher(ratio=1.0), "at least one teacher"),
        (lambda: discrete_difficulty(random=2.0), r"random must be in \[0.0, 1.0\]"),
        (lambda: discrete_difficulty(ratio_diff=-1), "ratio_diff must be in"),
        (lambda: independent_confusion(workerload=0), "workerload must be at least 1"),
        (
            lambda: independent_confusion(n_worker=30, n_task=200, feedback=10, workerload=66),
            "2000 labels are asked for but n_worker=30 workers with workerload=66",
        ),
    ],
)
def test_invalid_parameters_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()
