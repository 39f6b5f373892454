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


@settings(max_examples=60, deadline=None)
@given(beliefs(), st.sampled_from(["entropy", "accuracy"]))
def test_values_are_non_negative_and_bounded(belief, score):
    probas, confusion = belief
    values = next_label_value(probas, confusion, score)
    assert values.shape == (len(probas),)
    assert (values >= 0).all()
    if score == "entropy":  # a label cannot remove more uncertainty than there is
        assert (values <= _entropy(probas) + 1e-9).all()
    else:
        assert (values <= 1 - probas.max(axis=1) + 1e-9).all()


@settings(max_examples=60, deadline=None)
@given(beliefs(), st.sampled_from(["entropy", "accuracy"]), st.randoms(use_true_random=False))
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
    for score in ("entropy", "accuracy"):
        np.testing.assert_allclose(next_label_value(certain, confusion, score), 0, atol=1e-12)
    # a worker whose answer does not depend on the truth (equal rows) tells nothing
    blind = np.tile(confusion[0], (k, 1))
    np.testing.assert_allclose(next_label_value(probas, blind, "entropy"), 0, atol=1e-12)


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
