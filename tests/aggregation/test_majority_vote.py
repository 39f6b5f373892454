"""Majority vote and naive soft labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from crowdlearn import CrowdData, MajorityVote, NaiveSoft


@st.composite
def crowds(draw):
    n_tasks = draw(st.integers(1, 10))
    n_workers = draw(st.integers(1, 6))
    n_classes = draw(st.integers(1, 4))
    answers = np.array(
        draw(
            st.lists(
                st.lists(st.integers(-1, n_classes - 1), min_size=n_workers, max_size=n_workers),
                min_size=n_tasks,
                max_size=n_tasks,
            )
        )
    )
    answers[:, 0] = np.maximum(answers[:, 0], 0)
    return CrowdData.from_matrix(answers, n_classes=n_classes)


@settings(max_examples=60, deadline=None)
@given(crowds(), st.integers(0, 1000))
def test_majority_vote_picks_a_most_voted_class(data, seed):
    counts = data.vote_counts.toarray()
    labels = MajorityVote(random_state=seed).fit(data).predict()
    np.testing.assert_array_equal(counts[np.arange(data.n_tasks), labels], counts.max(axis=1))


@settings(max_examples=60, deadline=None)
@given(crowds())
def test_naive_soft_probabilities_are_vote_frequencies(data):
    probas = NaiveSoft().fit(data).predict_proba()
    counts = data.vote_counts.toarray()
    np.testing.assert_allclose(probas.sum(axis=1), 1.0)
    np.testing.assert_allclose(probas * counts.sum(axis=1, keepdims=True), counts)


def test_tie_policies():
    data = CrowdData.from_arrays([0, 0] * 50 + [1], [*range(100), 0], [0, 1] * 50 + [1])
    # task 0: 50 votes each for classes 0 and 1; task 1: one vote for class 1
    lowest = MajorityVote(tie_break="lowest").fit(data)
    np.testing.assert_array_equal(lowest.labels_, [0, 1])
    np.testing.assert_array_equal(lowest.predict_proba(), [[1.0, 0.0], [0.0, 1.0]])
    draws = {int(MajorityVote(random_state=s).fit(data).labels_[0]) for s in range(30)}
    assert draws == {0, 1}
    assert (
        MajorityVote(random_state=4).fit(data).labels_
        == MajorityVote(random_state=4).fit(data).labels_
    ).all()
    with pytest.raises(ValueError, match="random_state"):
        MajorityVote(random_state=None).fit(data)
    with pytest.raises(ValueError, match="tie_break"):
        MajorityVote(tie_break="first").fit(data)


def test_random_ties_are_uniform_among_maximal_classes():
    data = CrowdData.from_counts(np.tile([3, 0, 3, 3], (3000, 1)))
    labels = MajorityVote(random_state=0).fit(data).labels_
    shares = np.bincount(labels, minlength=4) / len(labels)
    np.testing.assert_allclose(shares, [1 / 3, 0, 1 / 3, 1 / 3], atol=0.03)


def test_pandas_adapters_are_keyed_by_task_ids():
    frame = pd.DataFrame(
        {
            "task": ["q2", "q1", "q1", "q1"],
            "worker": ["a", "a", "b", "c"],
            "label": ["no", "yes", "yes", "no"],
        }
    )
    labels = MajorityVote(tie_break="lowest").fit_predict(frame)
    assert labels.to_dict() == {"q1": "yes", "q2": "no"}
    probas = NaiveSoft().fit_predict_proba(frame)
    assert list(probas.columns) == ["no", "yes"]
    assert probas.loc["q1"].tolist() == pytest.approx([1 / 3, 2 / 3])


def test_estimator_contract():
    model = NaiveSoft(tie_break="lowest", random_state=3)
    assert model.get_params() == {"tie_break": "lowest", "random_state": 3, "chunk_size": None}
    assert clone(model).get_params() == model.get_params()
    with pytest.raises(NotFittedError):
        model.predict()
    with pytest.raises(TypeError, match="CrowdData"):
        model.fit(np.zeros((2, 2)))


def test_mv_on_crowd_data_returns_codes():
    data = CrowdData.from_arrays(["t"] * 3, ["a", "b", "c"], ["x", "y", "y"])
    np.testing.assert_array_equal(MajorityVote().fit_predict(data), [1])
