"""simulate_ratings: reproducible crowds with the documented worker mix."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn.data import Ratings
from crowdlearn.simulate import simulate_ratings


def test_reproducible_and_shaped():
    first = simulate_ratings(n_tasks=80, n_workers=12, per_task=4, random_state=3)
    again = simulate_ratings(n_tasks=80, n_workers=12, per_task=4, random_state=3)
    other = simulate_ratings(n_tasks=80, n_workers=12, per_task=4, random_state=4)
    assert isinstance(first, Ratings) and first == again and first != other
    assert first.n_annotations == 80 * 4 and first.levels is None
    assert np.isfinite(first.truth).all()
    # distinct workers on every task
    pairs = first.task.astype(np.int64) * first.n_workers + first.worker
    assert len(np.unique(pairs)) == len(pairs)
    np.testing.assert_array_equal(np.bincount(first.task), np.full(80, 4))


def test_worker_mix_shows_in_the_ratings():
    data, info = simulate_ratings(
        n_tasks=2000,
        n_workers=10,
        per_task=5,
        spammers=0.2,
        bias_std=0.5,
        random_state=0,
        return_info=True,
    )
    np.testing.assert_array_equal(info["spammer"], [False] * 8 + [True] * 2)
    error = data.value - data.truth[data.task]
    for worker in range(8):  # honest: mean error = bias, spread = noise
        mine = error[data.worker == worker]
        assert mine.mean() == pytest.approx(info["bias"][worker], abs=0.06)
        assert mine.std() == pytest.approx(info["noise"][worker], rel=0.15)
    spam = np.isin(data.worker, [8, 9])
    # spammers ignore the truth: their ratings do not correlate with it
    assert abs(np.corrcoef(data.value[spam], data.truth[data.task[spam]])[0, 1]) < 0.1


def test_ordinal_levels_and_long_tail():
    data = simulate_ratings(n_tasks=300, n_workers=30, levels=4, activity_skew=1.0)
    assert list(data.levels) == [1, 2, 3, 4]
    assert set(np.unique(data.value)) <= {0.0, 1.0, 2.0, 3.0}
    assert set(np.unique(data.truth)) <= {0.0, 1.0, 2.0, 3.0}
    counts = np.bincount(data.worker, minlength=30)
    assert counts[:3].sum() > counts[-10:].sum()  # a few workers do much of the work


@pytest.mark.parametrize(
    "params",
    [
        {"per_task": 0},
        {"per_task": 30},
        {"spammers": 1.5},
        {"noise": (1.0, 0.5)},
        {"levels": 1},
        {"bias_std": -1.0},
    ],
)
def test_bad_parameters(params):
    with pytest.raises(ValueError):
        simulate_ratings(n_tasks=10, n_workers=20, **params)
