"""Simulated numeric and ordinal ratings with a known truth.

The crowd (all draws from one ``numpy.random.Generator`` seeded by ``random_state``):

* each task's truth is ``N(truth_mean, truth_std^2)`` (numeric), or a level drawn
  uniformly from ``0 .. levels-1`` (ordinal);
* each task is rated by ``per_task`` distinct workers, drawn at random with chances
  proportional to ``(rank of the worker)^-activity_skew`` (0: uniform; 1: a long tail of
  workers with few ratings, the setting of CATD) (``simulate._assign``);
* a share ``spammers`` of the workers (the last ones) ignore the task: their rating is
  drawn from ``N(truth_mean, truth_std^2)`` (uniform over the levels when ordinal);
* every other worker ``j`` has an additive bias ``b_j ~ N(0, bias_std^2)`` and a noise
  standard deviation ``s_j ~ Uniform(noise)``, and rates ``truth + b_j + N(0, s_j^2)``;
* ordinal ratings are those numbers rounded to the nearest level and clipped to
  ``0 .. levels-1`` (bias and noise are then in level units).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.data.ratings import Ratings
from crowdlearn.simulate._assign import assign_workers


def simulate_ratings(
    n_tasks: int = 200,
    n_workers: int = 20,
    per_task: int = 5,
    *,
    truth_mean: float = 0.0,
    truth_std: float = 1.0,
    bias_std: float = 0.2,
    noise: tuple[float, float] = (0.1, 0.6),
    spammers: float = 0.1,
    levels: int | None = None,
    activity_skew: float = 0.0,
    random_state: int | None = 0,
    return_info: bool = False,
) -> Ratings | tuple[Ratings, dict[str, Any]]:
    """A crowd of numeric (or ordinal) ratings with its truth.

    Parameters
    ----------
    n_tasks, n_workers : int
    per_task : int, default 5
        Distinct workers per task (at most ``n_workers``).
    truth_mean, truth_std : float, default 0, 1
        Distribution of the numeric truth (ignored when ``levels`` is given).
    bias_std : float, default 0.2
        Standard deviation of the workers' additive biases.
    noise : (low, high), default (0.1, 0.6)
        Range of the workers' noise standard deviations (uniform).
    spammers : float, default 0.1
        Share of workers whose ratings ignore the task.
    levels : int, optional
        Number of ordered levels: the ratings and the truth are then ranks
        ``0 .. levels-1`` with levels named ``1 .. levels``.
    activity_skew : float, default 0
        Exponent of the workers' Zipf-like chances of being drawn (0: uniform).
    random_state : int, optional
    return_info : bool, default False
        Also return a dict with ``bias``, ``noise`` (per worker) and ``spammer`` (bool
        per worker).

    Returns
    -------
    Ratings with ``truth`` set (and the info dict when ``return_info``).

    Examples
    --------
    >>> data = simulate_ratings(n_tasks=50, n_workers=8, per_task=3, random_state=1)
    >>> data
    Ratings(n_tasks=50, n_workers=8, n_annotations=150, truth=50 known)
    >>> simulate_ratings(n_tasks=10, levels=5).levels
    array([1, 2, 3, 4, 5])
    """
    if n_tasks < 1 or n_workers < 1:
        raise ValueError(f"n_tasks and n_workers must be at least 1, got {n_tasks}, {n_workers}")
    if not 1 <= per_task <= n_workers:
        raise ValueError(f"per_task must be in [1, n_workers={n_workers}], got {per_task}")
    if not 0 <= spammers <= 1:
        raise ValueError(f"spammers must be a share in [0, 1], got {spammers}")
    if not 0 <= noise[0] <= noise[1]:
        raise ValueError(f"noise must be (low, high) with 0 <= low <= high, got {noise}")
    if bias_std < 0 or truth_std < 0 or activity_skew < 0:
        raise ValueError("bias_std, truth_std and activity_skew must be >= 0")
    if levels is not None and levels < 2:
        raise ValueError(f"levels must be at least 2, got {levels}")
    rng = np.random.default_rng(random_state)
    if levels is None:
        truth = rng.normal(truth_mean, truth_std, n_tasks)
    else:
        truth = rng.integers(0, levels, n_tasks).astype(np.float64)
    bias = rng.normal(0.0, bias_std, n_workers)
    sigma = rng.uniform(noise[0], noise[1], n_workers)
    spammer = np.zeros(n_workers, dtype=bool)
    spammer[n_workers - round(spammers * n_workers) :] = True
    bias[spammer] = 0.0
    weights = np.arange(1, n_workers + 1, dtype=np.float64) ** -activity_skew
    task, worker = assign_workers(np.full(n_tasks, per_task), n_workers, rng, weights=weights)
    value = truth[task] + bias[worker] + rng.normal(0.0, 1.0, len(task)) * sigma[worker]
    is_spam = spammer[worker]
    if levels is None:
        value[is_spam] = rng.normal(truth_mean, truth_std, int(is_spam.sum()))
        data = Ratings(task, worker, value, n_tasks=n_tasks, truth=truth)
    else:
        value = np.clip(np.round(value), 0, levels - 1)
        value[is_spam] = rng.integers(0, levels, int(is_spam.sum()))
        data = Ratings(
            task, worker, value, n_tasks=n_tasks, truth=truth, levels=np.arange(1, levels + 1)
        )
    if return_info:
        return data, {"bias": bias, "noise": sigma, "spammer": spammer}
    return data
