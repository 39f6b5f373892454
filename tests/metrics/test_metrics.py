"""Metrics: hand-checked values and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from crowdlearn import CrowdData
from crowdlearn.metrics import (
    acc_train,
    accuracy,
    confusion_js,
    empirical_confusions,
    expected_calibration_error,
    global_confusion,
    global_js,
    imbalance_ratio,
    individual_js,
    js_divergence,
    label_certainty,
    macro_f1,
    negative_log_likelihood,
    self_crowd_r,
)
from crowdlearn.simulate import make_imbalanced


def test_accuracy_ignores_unknown_truth_and_takes_argmax_of_probabilities():
    assert accuracy([0, 1, 2, -1], [0, 1, 0, 2]) == pytest.approx(2 / 3)
    probas = np.array([[0.9, 0.1], [0.4, 0.6], [0.7, 0.3]])
    assert accuracy([0, 1, 1], probas) == pytest.approx(2 / 3)


def test_accuracy_errors():
    with pytest.raises(ValueError, match="align"):
        accuracy([0, 1], [0])
    with pytest.raises(ValueError, match="known truth"):
        accuracy([-1, -1], [0, 1])


def test_acc_train_reads_truth_from_crowd_data_and_handles_ties():
    data = CrowdData.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1], truth=[1, 1])
    soft = np.array([[0.5, 0.5], [0.0, 1.0]])
    assert acc_train(data, soft) == pytest.approx(0.5)  # first max is class 0: wrong
    assert acc_train(data, soft, ties="expected") == pytest.approx(0.75)
    assert acc_train(data, [1, 1]) == 1.0


def test_macro_f1_matches_hand_computation():
    # class 0: precision 1, recall 0.5 -> F1 2/3; class 1: precision 2/3, recall 1 -> F1 0.8
    assert macro_f1([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx((2 / 3 + 0.8) / 2)
    # an absent class counts with F1 0 when n_classes says it exists
    assert macro_f1([0, 1], [0, 1], n_classes=3) == pytest.approx(2 / 3)


def test_ece_of_a_perfectly_calibrated_and_an_overconfident_model():
    truth = np.array([0, 0, 0, 1])
    calibrated = np.tile([0.75, 0.25], (4, 1))  # confidence 0.75, accuracy 0.75
    assert expected_calibration_error(truth, calibrated) == pytest.approx(0.0)
    overconfident = np.tile([1.0, 0.0], (4, 1))
    assert expected_calibration_error(truth, overconfident) == pytest.approx(0.25)


def test_negative_log_likelihood():
    probas = np.array([[0.5, 0.5], [0.25, 0.75]])
    assert negative_log_likelihood([0, 1], probas) == pytest.approx(
        -(np.log(0.5) + np.log(0.75)) / 2
    )


def test_self_crowd_r_of_the_self_crowd_paper():
    assert self_crowd_r([0, 0, 0, 1], n_classes=2) == pytest.approx(0.5)
    assert self_crowd_r([0, 1, 2, 0, 1, 2]) == 0.0
    assert self_crowd_r([0, 0, 1, -1], n_classes=3) == pytest.approx(2 / 3)  # class 2 empty
    data = CrowdData.from_arrays([0, 1, 2], [0, 0, 0], ["a", "a", "b"])
    assert self_crowd_r(data) == pytest.approx(1 / 3)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=50))
def test_self_crowd_r_lies_in_unit_interval(labels):
    value = self_crowd_r(labels, n_classes=5)
    assert 0.0 <= value <= 1.0


def test_imbalance_ratio_is_largest_over_smallest_class():
    assert imbalance_ratio([0, 0, 0, 1], n_classes=2) == 3.0
    assert imbalance_ratio([0, 1, 2, 0, 1, 2]) == 1.0
    assert imbalance_ratio([0, 0, 1, -1], n_classes=2) == 2.0  # -1 (unknown) ignored
    assert imbalance_ratio([0, 0, 1], n_classes=3) == np.inf  # class 2 has no label
    data = CrowdData.from_arrays([0, 1, 2, 3], [0, 0, 0, 0], ["a", "a", "a", "b"])
    assert imbalance_ratio(data) == 3.0
    with pytest.raises(ValueError, match="at least one label"):
        imbalance_ratio([-1, -1])


@settings(max_examples=30, deadline=None)
@given(st.floats(1.0, 20.0), st.integers(0, 1000))
def test_imbalance_ratio_measures_what_make_imbalanced_makes(ratio, seed):
    # One meaning everywhere: the ratio the simulator is asked for is the ratio measured
    # (up to the rounding of class sizes).
    y = np.repeat(np.arange(4), 200)
    _, y_sub, _ = make_imbalanced(np.zeros((len(y), 1)), y, ratio, seed=seed)
    sizes = np.bincount(y_sub)
    assert imbalance_ratio(y_sub) == sizes.max() / sizes.min()
    assert imbalance_ratio(y_sub) == pytest.approx(ratio, rel=0.05)


def _stochastic(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    matrix = rng.random(shape) + 1e-3
    return matrix / matrix.sum(axis=-1, keepdims=True)


def test_js_divergence_known_values():
    assert js_divergence([1, 0], [0, 1]) == pytest.approx(1.0)
    assert js_divergence([0.5, 0.5], [0.5, 0.5]) == pytest.approx(0.0)
    # hand computation: M = (0.75, 0.25); KL(P||M) with P = (1, 0) is log2(4/3)
    expected = 0.5 * np.log2(4 / 3) + 0.5 * (0.5 * np.log2(0.5 / 0.75) + 0.5 * np.log2(2))
    assert js_divergence([1, 0], [0.5, 0.5]) == pytest.approx(expected)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_confusion_js_is_symmetric_bounded_and_zero_on_identity(seed):
    rng = np.random.default_rng(seed)
    a, b = _stochastic(rng, (3, 3)), _stochastic(rng, (3, 3))
    assert confusion_js(a, b) == pytest.approx(confusion_js(b, a))
    assert 0.0 <= confusion_js(a, b) <= 1.0
    assert confusion_js(a, a) == pytest.approx(0.0, abs=1e-12)


def test_individual_and_global_js():
    rng = np.random.default_rng(0)
    true = _stochastic(rng, (4, 3, 3))
    estimated = true.copy()
    estimated[0] = np.eye(3) * 0.5 + 0.5 / 3
    per_worker = [confusion_js(t, e) for t, e in zip(true, estimated, strict=True)]
    assert individual_js(true, estimated) == pytest.approx(np.mean(per_worker))
    # a worker with zero weight does not count
    weights = np.array([0.0, 1.0, 1.0, 1.0])
    assert individual_js(true, estimated, weights) == pytest.approx(0.0, abs=1e-12)
    row_weights = np.ones((4, 3))
    row_weights[0] = 0
    assert individual_js(true, estimated, row_weights) == pytest.approx(0.0, abs=1e-12)
    assert global_js(global_confusion(true), global_confusion(true)) == pytest.approx(0.0)


def test_global_confusion_weights_rows():
    confusions = np.stack([np.eye(2), np.full((2, 2), 0.5)])
    weights = np.array([[3.0, 1.0], [1.0, 1.0]])
    expected = np.array([[3.5 / 4, 0.5 / 4], [0.5 / 2, 1.5 / 2]])
    np.testing.assert_allclose(global_confusion(confusions, weights), expected)


def test_empirical_confusions_count_against_truth():
    data = CrowdData.from_arrays(
        [0, 1, 2, 0, 1], ["a", "a", "a", "b", "b"], [0, 0, 1, 1, 1], truth=[0, 1, 1]
    )
    confusions, counts = empirical_confusions(data, return_counts=True)
    np.testing.assert_allclose(confusions[0], [[1.0, 0.0], [0.5, 0.5]])
    np.testing.assert_allclose(confusions[1], [[0.0, 1.0], [0.0, 1.0]])
    np.testing.assert_array_equal(counts, [[1, 2], [1, 1]])
    overall = empirical_confusions(data.anonymous(), per_worker=False)
    np.testing.assert_allclose(overall, [[0.5, 0.5], [1 / 3, 2 / 3]])


def test_label_certainty_is_largest_for_unanimous_tasks():
    counts = np.array([[3, 0], [2, 1], [1, 1], [0, 0]])
    scores = label_certainty(counts, eps=1e-6)
    assert scores[0] == pytest.approx(1e6)
    assert scores[1] == pytest.approx(1 / (1 - (4 / 9 + 1 / 9) + 1e-6))
    assert scores[2] == pytest.approx(1 / (0.5 + 1e-6))
    assert np.isnan(scores[3])
    assert scores[0] > scores[1] > scores[2]


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.int64, st.tuples(st.integers(1, 10), st.integers(2, 5)), elements=st.integers(0, 6))
)
def test_label_certainty_minimum_is_at_a_uniform_split(counts):
    scores = label_certainty(counts)
    k = counts.shape[1]
    annotated = counts.sum(axis=1) > 0
    assert np.all(scores[annotated] >= 1 / (1 - 1 / k + 1e-6) - 1e-9)
