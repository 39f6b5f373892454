"""Properties of the value of one more label (crowdlearn.campaign.values), checked on
random posteriors and confusion matrices."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.campaign import SCORES, next_label_value


def simplex_rows(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    return rng.dirichlet(np.ones(k), size=n)


cases = st.tuples(
    st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(2, 6), st.sampled_from(SCORES)
)


@settings(max_examples=60, deadline=None)
@given(cases)
def test_values_are_non_negative(case):
    seed, n, k, score = case
    rng = np.random.default_rng(seed)
    values = next_label_value(simplex_rows(rng, n, k), simplex_rows(rng, k, k), score)
    assert values.shape == (n,) and (values >= 0).all()


@settings(max_examples=60, deadline=None)
@given(cases)
def test_certain_tasks_are_worth_nothing(case):
    seed, n, k, score = case
    rng = np.random.default_rng(seed)
    probas = np.eye(k)[rng.integers(0, k, size=n)]
    values = next_label_value(probas, simplex_rows(rng, k, k), score)
    assert np.allclose(values, 0.0)


@settings(max_examples=60, deadline=None)
@given(cases)
def test_renaming_the_classes_consistently_changes_nothing(case):
    seed, n, k, score = case
    rng = np.random.default_rng(seed)
    probas, confusion = simplex_rows(rng, n, k), simplex_rows(rng, k, k)
    perm = rng.permutation(k)
    renamed = next_label_value(probas[:, perm], confusion[np.ix_(perm, perm)], score)
    assert np.allclose(renamed, next_label_value(probas, confusion, score))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6))
def test_a_worker_who_answers_at_random_is_worth_nothing(seed, k):
    rng = np.random.default_rng(seed)
    probas = simplex_rows(rng, 5, k)
    spammer = np.tile(simplex_rows(rng, 1, k), (k, 1))  # the answer ignores the truth
    for score in SCORES:
        assert np.allclose(next_label_value(probas, spammer, score), 0.0)
