"""Task difficulty scores: entropy, GLAD, AUM and WAUM."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlearn import CrowdData
from crowdlearn.identify import (
    aum,
    glad_difficulty,
    margins,
    vote_entropy,
    waum,
    waum_trust,
    worst_codes,
)
from crowdlearn.simulate import discrete_difficulty


def test_entropy_of_vote_frequencies():
    data = CrowdData.from_arrays(
        [0, 0, 0, 1, 1, 1, 2],
        [0, 1, 2, 0, 1, 2, 0],
        [0, 0, 0, 0, 1, 2, 1],
        task_ids=[0, 1, 2, 3],
    )
    entropy = vote_entropy(data)
    np.testing.assert_allclose(entropy[:3], [0.0, np.log(3), 0.0])
    assert np.isnan(entropy[3])


def test_glad_difficulty_is_higher_on_hard_tasks():
    data, info = discrete_difficulty(
        n_worker=40, n_task=300, n_classes=3, feedback=8, seed=1, return_info=True
    )
    difficulty = glad_difficulty(data)
    hard = info.task_difficulty == "hard"
    assert np.median(difficulty[hard]) > np.median(difficulty[~hard])


def test_margins_of_every_candidate_label():
    proba = np.array([[0.2, 0.5, 0.3], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(margins(proba), [[-0.3, 0.2, -0.2], [0.0, 0.0, 0.0]])


def _corrupted_crowd(seed: int = 0) -> tuple[CrowdData, np.ndarray]:
    """Two separable blobs; 3 good workers per task, but on 15 tasks everyone gives the
    wrong class (a mislabelled task)."""
    rng = np.random.default_rng(seed)
    n = 240
    truth = rng.integers(2, size=n)
    X = rng.normal(size=(n, 2)) + 3.0 * truth[:, None]
    flipped = rng.choice(n, size=15, replace=False)
    answer = truth.copy()
    answer[flipped] = 1 - answer[flipped]
    task = np.repeat(np.arange(n), 3)
    worker = np.tile(np.arange(3), n)
    data = CrowdData.from_arrays(task, worker, answer[task], features=X, truth=truth)
    return data, flipped


def test_aum_ranks_mislabelled_tasks_lowest():
    data, flipped = _corrupted_crowd()
    scores = aum(data, max_epochs=15, lr=0.01)
    assert np.all((scores >= -1) & (scores <= 1))
    assert np.mean(scores[flipped]) < 0 < np.median(scores)
    lowest = worst_codes(scores, "low", 15 / len(scores))
    assert len(np.intersect1d(lowest, flipped)) >= 12


def test_waum_trust_is_the_diagonal_weighted_by_the_classifier():
    data = CrowdData.from_arrays([0, 0, 1], [0, 1, 1], [0, 1, 1])
    confusions = np.stack([np.eye(2), np.array([[0.6, 0.4], [0.2, 0.8]])])
    proba = np.array([[0.9, 0.1], [0.25, 0.75]])
    np.testing.assert_allclose(
        waum_trust(confusions, proba, data), [1.0, 0.9 * 0.6 + 0.1 * 0.8, 0.25 * 0.6 + 0.75 * 0.8]
    )


def test_waum_flags_mislabelled_tasks_and_weights_by_trust():
    data, flipped = _corrupted_crowd()
    scores, details = waum(data, max_epochs=15, lr=0.01, return_details=True)
    assert np.mean(scores[flipped]) < 0 < np.median(scores)
    assert np.all(np.abs(details["aum"]) <= 1) and np.all(details["trust"] >= 0)
    for task in range(5):  # the trust-weighted mean of the task's annotation AUMs
        rows = np.flatnonzero(data.task == task)
        weights, values = details["trust"][rows], details["aum"][rows]
        assert scores[task] == pytest.approx(np.sum(weights * values) / np.sum(weights))
        assert values.min() - 1e-12 <= scores[task] <= values.max() + 1e-12


def test_aum_needs_features():
    data = CrowdData.from_arrays([0, 1], [0, 0], [0, 1])
    with pytest.raises(ValueError, match="features"):
        aum(data)


def test_worst_codes_direction_and_nan():
    values = np.array([0.3, np.nan, 0.9, 0.1])
    np.testing.assert_array_equal(worst_codes(values, "high", 0.5), [0, 2])
    np.testing.assert_array_equal(worst_codes(values, "low", 0.75), [0, 2, 3])
    with pytest.raises(ValueError):
        worst_codes(values, "low", 1.0)
