"""The value of one more label: properties of the look-ahead scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from crowdlearn.campaign import mix_learner, next_label_value, one_coin_confusion
from crowdlearn.data import CrowdDataError


def _rows(k: int, n: int):
    positive = arrays(np.float64, (n, k), elements=st.floats(0.01, 1.0))
    return positive.map(lambda a: a / a.sum(axis=1, keepdims=True))


@st.composite
def beliefs(draw):
    k = draw(st.integers(2, 5))
    n = draw(st.integers(1, 8))
    probas = draw(_rows(k, n))
    confusion = draw(_rows(k, k))
    return probas, confusion


def _entropy(p):
    return -(p * np.log(np.where(p > 0, p, 1))).sum(axis=-1)


def _binary_entropy(q):
    return _entropy(np.stack([q, 1 - q], axis=-1))


@settings(max_examples=60, deadline=None)
@given(beliefs(), st.sampled_from(["entropy", "decision", "accuracy"]))
def test_values_are_non_negative_and_bounded(belief, score):
    probas, confusion = belief
    values = next_label_value(probas, confusion, score)
    assert values.shape == (len(probas),)
    assert (values >= 0).all()
    if score == "entropy":  # a label cannot remove more uncertainty than there is
        assert (values <= _entropy(probas) + 1e-9).all()
    elif score == "decision":  # ... nor more than there is about the current label
        assert (values <= _binary_entropy(probas.max(axis=1)) + 1e-9).all()
        assert (values <= next_label_value(probas, confusion, "entropy") + 1e-9).all()
    else:
        assert (values <= 1 - probas.max(axis=1) + 1e-9).all()


@settings(max_examples=60, deadline=None)
@given(
    beliefs(),
    st.sampled_from(["entropy", "decision", "accuracy"]),
    st.randoms(use_true_random=False),
)
def test_relabelling_classes_does_not_change_values(belief, score, rng):
    probas, confusion = belief
    order = list(range(probas.shape[1]))
    rng.shuffle(order)
    permuted = next_label_value(probas[:, order], confusion[np.ix_(order, order)], score)
    np.testing.assert_allclose(permuted, next_label_value(probas, confusion, score), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(beliefs())
def test_certain_tasks_and_uninformative_workers_are_worth_nothing(belief):
    probas, confusion = belief
    k = probas.shape[1]
    certain = np.eye(k)[np.arange(len(probas)) % k]
    for score in ("entropy", "decision", "accuracy"):
        np.testing.assert_allclose(next_label_value(certain, confusion, score), 0, atol=1e-12)
    # a worker whose answer does not depend on the truth (equal rows) tells nothing
    blind = np.tile(confusion[0], (k, 1))
    for score in ("entropy", "decision"):
        np.testing.assert_allclose(next_label_value(probas, blind, score), 0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(beliefs())
def test_a_perfect_worker_removes_all_uncertainty(belief):
    probas, _ = belief
    k = probas.shape[1]
    np.testing.assert_allclose(
        next_label_value(probas, np.eye(k), "entropy"), _entropy(probas), atol=1e-9
    )
    np.testing.assert_allclose(
        next_label_value(probas, np.eye(k), "accuracy"), 1 - probas.max(axis=1), atol=1e-9
    )
    np.testing.assert_allclose(
        next_label_value(probas, np.eye(k), "decision"),
        _binary_entropy(probas.max(axis=1)),
        atol=1e-9,
    )


@settings(max_examples=40, deadline=None)
@given(beliefs())
def test_with_two_classes_decision_is_entropy(belief):
    probas, confusion = belief
    two = np.c_[probas[:, 0], 1 - probas[:, 0]]
    square = np.c_[confusion[:2, 0], 1 - confusion[:2, 0]]
    np.testing.assert_allclose(
        next_label_value(two, square, "decision"),
        next_label_value(two, square, "entropy"),
        atol=1e-12,
    )


def test_decision_puts_a_disagreement_before_doubt_spread_over_unlikely_classes():
    # ten classes, workers right 70 % of the time: one label (0.7, the rest spread over
    # nine classes) against two labels that disagree (0.48 / 0.48)
    confusion = one_coin_confusion(0.7, 10)
    lone = np.r_[0.7, np.full(9, 0.3 / 9)]
    split = np.r_[0.48, 0.48, np.full(8, 0.04 / 8)]
    probas = np.stack([lone, split])
    entropy = next_label_value(probas, confusion, "entropy")
    decision = next_label_value(probas, confusion, "decision")
    accuracy = next_label_value(probas, confusion, "accuracy")
    assert entropy[0] > entropy[1]  # most entropy left in the lone label's spread
    assert decision[1] > decision[0]  # but the split's label is the one in doubt
    assert accuracy[1] > accuracy[0] == 0  # one more label can only fix the split
    # classes tied for the most probable: the mean of their values, whatever the order
    tied = np.array([[0.4, 0.4, 0.2]])
    skewed = np.array([[0.9, 0.05, 0.05], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])
    forward = next_label_value(tied, skewed, "decision")
    swapped = next_label_value(
        tied[:, [1, 0, 2]], skewed[np.ix_([1, 0, 2], [1, 0, 2])], "decision"
    )
    np.testing.assert_allclose(forward, swapped, atol=1e-12)


def test_uncertain_tasks_rank_first_and_better_workers_are_worth_more():
    probas = np.array([[0.5, 0.5], [0.8, 0.2], [0.99, 0.01]])
    good, poor = one_coin_confusion(0.9, 2), one_coin_confusion(0.6, 2)
    values = next_label_value(probas, good)
    assert values[0] > values[1] > values[2]
    assert (next_label_value(probas, good) > next_label_value(probas, poor)).all()
    # a per-task confusion (GLAD) equal to the shared one gives the same values
    per_task = np.broadcast_to(good, (3, 2, 2))
    np.testing.assert_allclose(next_label_value(probas, per_task), values)


def test_one_coin_confusion_rows_sum_to_one():
    matrices = one_coin_confusion(np.array([0.3, 0.9]), 4)
    assert matrices.shape == (2, 4, 4)
    np.testing.assert_allclose(matrices.sum(axis=2), 1)
    np.testing.assert_allclose(np.diagonal(matrices, axis1=1, axis2=2)[:, 0], [0.3, 0.9])


def test_learner_mix_fades_as_labels_accumulate():
    crowd = np.array([[0.9, 0.1]] * 3)
    model = np.array([[0.1, 0.9]] * 3)
    mixed = mix_learner(
        crowd, model, np.array([0, 1, 10]), learner_weight=0.3, annotator_weight=0.3
    )
    np.testing.assert_allclose(mixed[0], model[0])  # no label: the classifier alone
    assert mixed[1, 0] == pytest.approx(0.5)  # one label weighs as much as the classifier
    assert mixed[2, 0] > 0.8
    np.testing.assert_allclose(mixed.sum(axis=1), 1)


def test_bad_shapes_and_scores_are_refused():
    with pytest.raises(CrowdDataError, match="confusion must be"):
        next_label_value(np.full((2, 3), 1 / 3), np.eye(2))
    with pytest.raises(CrowdDataError, match="score must be"):
        next_label_value(np.full((2, 2), 0.5), np.eye(2), "gain")  # type: ignore[arg-type]
    with pytest.raises(CrowdDataError, match="learner_probas"):
        mix_learner(np.full((2, 2), 0.5), np.full((3, 2), 0.5), np.ones(2), 1, 1)
