"""Worker and task scores of ratings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.data import CrowdData, Ratings
from crowdlearn.identify.ratings import task_scores, worker_scores
from crowdlearn.simulate.ratings import simulate_ratings


def test_scores_against_a_pandas_reference():
    data = simulate_ratings(n_tasks=60, n_workers=9, per_task=4, random_state=3)
    frame = pd.DataFrame({"task": data.task, "worker": data.worker, "value": data.value})
    grouped = frame.groupby("task")["value"]
    frame["others"] = (grouped.transform("sum") - frame["value"]) / (grouped.transform("size") - 1)
    frame["diff"] = frame["value"] - frame["others"]
    scores = worker_scores(data)
    by_worker = frame.groupby("worker")
    np.testing.assert_allclose(scores["bias"], by_worker["diff"].mean().to_numpy())
    np.testing.assert_allclose(
        scores["mae_to_consensus"], by_worker["diff"].apply(lambda d: d.abs().mean()).to_numpy()
    )
    reference = by_worker.apply(lambda g: np.corrcoef(g["value"], g["others"])[0, 1])
    np.testing.assert_allclose(scores["correlation"], reference.to_numpy())
    np.testing.assert_array_equal(scores["n_ratings"], by_worker.size().to_numpy())
    tasks = task_scores(data)
    np.testing.assert_allclose(tasks["spread"], grouped.std(ddof=0).to_numpy())
    np.testing.assert_allclose(tasks["range"], (grouped.max() - grouped.min()).to_numpy())
    np.testing.assert_array_equal(tasks["n_ratings"], grouped.size().to_numpy())


def test_scores_find_the_spammers_and_the_biased():
    data, info = simulate_ratings(
        n_tasks=400,
        n_workers=20,
        per_task=6,
        spammers=0.2,
        bias_std=0.5,
        random_state=1,
        return_info=True,
    )
    scores = worker_scores(data)
    spam = info["spammer"]
    assert scores["correlation"][spam].max() < scores["correlation"][~spam].min()
    honest = ~spam
    assert np.corrcoef(scores["bias"][honest], info["bias"][honest])[0, 1] > 0.9


@settings(max_examples=30, deadline=None)
@given(
    shift=st.floats(-100, 100),
    seed=st.integers(0, 100),
)
def test_shift_invariance(shift, seed):
    data = simulate_ratings(n_tasks=20, n_workers=5, per_task=3, random_state=seed)
    moved = Ratings(data.task, data.worker, data.value + shift, n_tasks=data.n_tasks)
    base, other = worker_scores(data), worker_scores(moved)
    for name in base:
        np.testing.assert_allclose(other[name], base[name], atol=1e-8, equal_nan=True)
    for name, values in task_scores(data).items():
        np.testing.assert_allclose(task_scores(moved)[name], values, atol=1e-8)


def test_degenerate_and_wrong_inputs():
    lone = Ratings([0, 1, 1], [0, 0, 1], [1.0, 2.0, 2.0], n_tasks=3)
    scores = worker_scores(lone)
    np.testing.assert_array_equal(scores["n_ratings"], [2, 1])
    assert np.isnan(scores["correlation"]).all()  # one comparable task each
    np.testing.assert_allclose(scores["bias"], [0.0, 0.0])
    tasks = task_scores(lone)
    np.testing.assert_allclose(tasks["spread"], [0.0, 0.0, np.nan])
    with pytest.raises(TypeError, match="Ratings"):
        worker_scores(CrowdData.from_arrays(["a"], ["w"], ["x"]))


# ---- issue 43: ratings in huge or tiny units


@pytest.mark.parametrize("exponent", [1000, -1000])
def test_scores_of_huge_or_tiny_ratings_are_the_scaled_scores(exponent):
    """Ratings near 1e308 used to give an infinite spread and no worker score."""
    import numpy as np

    from crowdlearn.data import Ratings
    from crowdlearn.identify.ratings import task_scores, worker_scores
    from crowdlearn.simulate.ratings import simulate_ratings

    data = simulate_ratings(n_tasks=30, n_workers=5, random_state=4)
    scaled = Ratings(
        data.task, data.worker, np.ldexp(data.value, exponent),
        n_tasks=data.n_tasks, worker_ids=data.worker_ids,
    )  # fmt: skip
    for scores, units in ((worker_scores, ("bias", "mae_to_consensus", "noise")),
                          (task_scores, ("spread", "range"))):  # fmt: skip
        ordinary, huge = scores(data), scores(scaled)
        for name, values in ordinary.items():
            expected = np.ldexp(values, exponent) if name in units else values
            np.testing.assert_allclose(huge[name], expected, rtol=1e-9, err_msg=name)
