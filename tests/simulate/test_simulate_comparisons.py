"""The pairwise-comparison crowd simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlearn.data import CrowdDataError
from crowdlearn.simulate import simulate_comparisons
from crowdlearn.simulate.comparisons import WORKER_TYPES


def agreement_by_type(data, types):
    truth = data.truth
    winner, loser = np.asarray(data.winner), np.asarray(data.loser)
    agree = truth[winner] > truth[loser]
    return pd.Series(agree).groupby(types[np.asarray(data.worker)]).mean()


def test_same_seed_same_crowd_and_truth_is_the_scores():
    scores = pd.Series([30.0, 20.0, 50.0, 41.0], index=["p", "q", "r", "s"])
    one = simulate_comparisons(scores, 200, 7, random_state=4)
    two = simulate_comparisons(scores, 200, 7, random_state=4)
    other = simulate_comparisons(scores, 200, 7, random_state=5)
    assert one == two and one != other
    assert list(one.item_ids) == ["p", "q", "r", "s"]
    np.testing.assert_array_equal(one.truth, scores.to_numpy())
    assert one.n_annotations == 200 and one.n_workers <= 7
    assert np.all(np.asarray(one.left) != np.asarray(one.right))


def test_worker_types_follow_the_mix_and_behave_as_documented():
    scores = np.random.default_rng(0).normal(size=300)
    data, types = simulate_comparisons(
        scores, 40000, 40, worker_mix=(2, 1, 1, 1), random_state=0, return_info=True
    )
    counts = pd.Series(types).value_counts()
    assert counts.to_dict() == {"reliable": 16, "noisy": 8, "spammer": 8, "reversed": 8}
    assert set(types) <= set(WORKER_TYPES)
    rate = agreement_by_type(data, types)
    assert rate["reliable"] > 0.9 and rate["reversed"] < 0.1
    assert 0.45 < rate["spammer"] < 0.55
    assert 0.6 < rate["noisy"] < rate["reliable"]


def test_near_pairs_are_close_in_true_rank():
    scores = np.arange(1000.0)
    data = simulate_comparisons(scores, 3000, 5, near_share=1.0, window=3, random_state=1)
    gap = np.abs(np.asarray(data.left) - np.asarray(data.right))
    assert gap.max() <= 3 and gap.min() >= 1
    uniform = simulate_comparisons(scores, 3000, 5, random_state=1)
    assert np.median(np.abs(np.asarray(uniform.left) - np.asarray(uniform.right))) > 100


@pytest.mark.parametrize(
    "kwargs",
    [
        {"worker_mix": (1, 1)},
        {"worker_mix": (0, 0, 0, 0)},
        {"worker_mix": (1, -1, 0, 0)},
        {"n_comparisons": 0},
        {"reliable_noise": 0.0},
        {"near_share": 1.5},
    ],
)
def test_bad_parameters_are_refused(kwargs):
    args = {"n_comparisons": 10, "n_workers": 2, **kwargs}
    with pytest.raises(CrowdDataError):
        simulate_comparisons([1.0, 2.0, 3.0], **args)


def test_scores_must_be_finite_and_several():
    with pytest.raises(CrowdDataError):
        simulate_comparisons([1.0], 10, 2)
    with pytest.raises(CrowdDataError):
        simulate_comparisons([1.0, np.nan], 10, 2)
