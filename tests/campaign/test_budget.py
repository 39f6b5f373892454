"""labels_to_target: the labels each open task is expected to still need."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.campaign import labels_to_target, one_coin_confusion, rank_tasks
from crowdlearn.campaign.ranking import TARGET_DRAWS, TARGET_WALKS, target_draws
from crowdlearn.data import CrowdDataError
from crowdlearn.simulate import independent_confusion


def gamblers_ruin_steps(accuracy: float, steps_to_target: int) -> float:
    """Expected labels until a two-class posterior that starts at 0.5 reaches the
    target: a walk of +-1 step (probability accuracy toward the truth) from 0 until
    it is ``steps_to_target`` away from 0 on either side (either side is sure)."""
    p, q, a = accuracy, 1 - accuracy, steps_to_target
    r, n = q / p, 2 * a
    return a / (q - p) - n / (q - p) * (1 - r**a) / (1 - r**n)


@pytest.mark.parametrize(("accuracy", "target"), [(0.8, 0.95), (0.7, 0.9), (0.9, 0.99)])
def test_two_classes_match_the_gamblers_ruin(accuracy, target):
    confusion = one_coin_confusion(accuracy, 2)
    # each label moves the log-odds by log(a / (1 - a)); the target needs this many
    steps = int(np.ceil(np.log(target / (1 - target)) / np.log(accuracy / (1 - accuracy))))
    expected, reached = labels_to_target(
        np.full((3000, 2), 0.5), confusion, target, cap=500, draws=40
    )
    assert expected.mean() == pytest.approx(gamblers_ruin_steps(accuracy, steps), rel=0.03)
    assert reached.min() == 1.0


def test_done_tasks_need_nothing_and_min_labels_holds_a_sure_task_open():
    confusion = one_coin_confusion(0.8, 2)
    probas = np.array([[0.99, 0.01], [0.99, 0.01]])
    expected, reached = labels_to_target(probas, confusion, 0.95, n_labels=[2, 1], min_labels=2)
    assert expected[0] == 0.0 and reached[0] == 1.0
    assert expected[1] >= 1.0  # sure, but one label is checked against nothing


def test_the_cap_bounds_the_walk_and_says_how_often_it_is_hit():
    weak = one_coin_confusion(0.55, 2)
    expected, reached = labels_to_target(np.full((200, 2), 0.5), weak, 0.99, cap=5)
    assert expected.max() <= 5 and reached.mean() < 0.2
    none_left, reached = labels_to_target(np.full((2, 2), 0.5), weak, 0.99, cap=[0, 0])
    assert none_left.tolist() == [0.0, 0.0] and reached.tolist() == [0.0, 0.0]


def test_a_task_believed_wrong_needs_more_labels():
    confusion = one_coin_confusion(0.8, 2)
    probas = np.tile([0.9, 0.1], (2000, 1))
    right, _ = labels_to_target(probas, confusion, 0.99, draws=8)
    # the model says class 0 at 0.9; the belief says class 1 is the truth
    wrong, _ = labels_to_target(
        probas, confusion, 0.99, draws=8, belief=np.tile([0, 1.0], (2000, 1))
    )
    assert wrong.mean() > right.mean() + 1


def test_per_task_confusions_equal_a_shared_one_repeated():
    rng = np.random.default_rng(3)
    probas = rng.dirichlet([1, 1, 1], 50)
    confusion = np.array([[0.7, 0.2, 0.1], [0.1, 0.7, 0.2], [0.2, 0.1, 0.7]])
    shared = labels_to_target(probas, confusion, 0.9, cap=8)
    each = labels_to_target(probas, np.repeat(confusion[None], 50, axis=0), 0.9, cap=8)
    np.testing.assert_array_equal(shared[0], each[0])
    np.testing.assert_array_equal(shared[1], each[1])


@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 4),
    st.floats(0.55, 0.95),
    st.floats(0.6, 0.99),
    st.integers(0, 2**16),
)
def test_a_better_crowd_never_needs_more_and_values_stay_in_range(k, accuracy, target, seed):
    probas = np.random.default_rng(seed).dirichlet(np.ones(k), 40)
    better = min(accuracy + 0.04, 0.99)
    weak, reached = labels_to_target(
        probas, one_coin_confusion(accuracy, k), target, draws=64, random_state=seed
    )
    strong, _ = labels_to_target(
        probas, one_coin_confusion(better, k), target, draws=64, random_state=seed
    )
    assert ((weak >= 0) & (weak <= 30)).all() and ((reached >= 0) & (reached <= 1)).all()
    assert strong.sum() <= weak.sum() * 1.05 + 1  # summed over tasks: little noise


def test_bad_input_is_refused():
    confusion = one_coin_confusion(0.8, 2)
    with pytest.raises(CrowdDataError, match="target"):
        labels_to_target(np.full((2, 2), 0.5), confusion, 1.5)
    with pytest.raises(CrowdDataError, match="confusion"):
        labels_to_target(np.full((2, 2), 0.5), np.eye(3), 0.9)
    with pytest.raises(CrowdDataError, match="belief"):
        labels_to_target(np.full((2, 2), 0.5), confusion, 0.9, belief=np.ones((3, 2)))
    with pytest.raises(CrowdDataError, match="draws"):
        labels_to_target(np.full((2, 2), 0.5), confusion, 0.9, draws=0)


def test_rank_tasks_gives_to_target_with_a_target_only():
    data = independent_confusion(n_worker=10, n_task=120, n_classes=2, feedback=2, seed=4)
    assert "to_target" not in rank_tasks(data).columns
    table = rank_tasks(data, target_confidence=0.95)
    assert (table.loc[table["done"], "to_target"] == 0).all()
    assert (table.loc[~table["done"], "to_target"] >= 1).all()


def test_many_open_tasks_get_fewer_walks_each_but_never_fewer_than_four():
    assert target_draws(10) == TARGET_DRAWS
    assert target_draws(TARGET_WALKS // 8) == 8
    assert target_draws(10 * TARGET_WALKS) == 4
