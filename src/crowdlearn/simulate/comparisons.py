"""Simulated pairwise-comparison crowds on given true item scores.

:func:`simulate_comparisons` draws ``n_comparisons`` pairs of items, gives each to a
worker drawn at random, and lets the worker pick the winner by type:

- reliable: a Bradley-Terry choice, ``P(left) = sigma((t_l - t_r) / (reliable_noise * sd))``
  where ``t`` are the true scores and ``sd`` their standard deviation;
- noisy: the same with ``noisy_noise`` in place of ``reliable_noise``;
- spammer: a fair coin, whatever the items;
- reversed: a reliable worker who reads the question backwards (picks the loser).

The shares of the four types are ``worker_mix``; a worker's type is fixed. Pairs are
drawn uniformly among distinct items, or, for a share ``near_share`` of them, an item
and one of the ``window`` items nearest to it in true score on either side (the hard
pairs an active design asks about).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import expit

from crowdlearn.data import Comparisons, CrowdDataError

#: The worker types, in the order of ``worker_mix``.
WORKER_TYPES = ("reliable", "noisy", "spammer", "reversed")
#: Default shares of reliable, noisy, spamming and reversed workers.
DEFAULT_MIX = (0.6, 0.2, 0.1, 0.1)


def simulate_comparisons(
    scores: Any,
    n_comparisons: int,
    n_workers: int,
    worker_mix: Sequence[float] = DEFAULT_MIX,
    reliable_noise: float = 0.1,
    noisy_noise: float = 1.0,
    near_share: float = 0.0,
    window: int = 10,
    random_state: int | None = 0,
    return_info: bool = False,
) -> Comparisons | tuple[Comparisons, np.ndarray]:
    """A crowd of pairwise comparisons with ``truth = scores``.

    Parameters
    ----------
    scores : array-like of float, or pandas Series (item id -> score)
        True scores, higher = preferred (e.g. ages: "who is older"). A Series gives the
        item ids; otherwise the items are 0 .. n-1.
    n_comparisons : int
        Number of comparisons (>= 1).
    n_workers : int
        Number of workers (>= 1); each comparison goes to one drawn uniformly.
    worker_mix : sequence of 4 floats, default (0.6, 0.2, 0.1, 0.1)
        Shares of reliable, noisy, spamming and reversed workers (normalised to sum to
        1); the counts are rounded so that they add up to ``n_workers``.
    reliable_noise : float, default 0.1
        Logistic scale of a reliable (and of a reversed) worker's choice, in standard
        deviations of ``scores`` (> 0).
    noisy_noise : float, default 1.0
        The same for a noisy worker (> 0).
    near_share : float, default 0.0
        Share of the pairs drawn among neighbours in true score (in [0, 1]).
    window : int, default 10
        For those pairs, the most ranks apart in true score the two items may be (>= 1).
    random_state : int, optional
        Seed; the same seed gives the same crowd.
    return_info : bool, default False
        Also return each worker's type (an array of names from :data:`WORKER_TYPES`).

    Returns
    -------
    Comparisons, or (Comparisons, ndarray of str)

    Examples
    --------
    >>> data = simulate_comparisons([0.0, 1.0, 2.0, 3.0], n_comparisons=50, n_workers=5)
    >>> data
    Comparisons(n_items=4, n_workers=5, n_annotations=50, truth=4 known)
    """
    item_ids, truth = _scores(scores)
    n_items = len(truth)
    mix = _mix(worker_mix)
    _check(n_comparisons, n_workers, reliable_noise, noisy_noise, near_share, window, n_items)
    rng = np.random.default_rng(random_state)
    counts = _type_counts(mix, n_workers)
    types = rng.permutation(np.repeat(np.arange(len(WORKER_TYPES)), counts))
    left, right = _pairs(truth, n_comparisons, near_share, window, rng)
    worker = rng.integers(0, n_workers, n_comparisons)
    spread = float(np.std(truth)) or 1.0
    noise = np.array([reliable_noise, noisy_noise, 1.0, reliable_noise]) * spread
    kind = types[worker]
    p_left = expit((truth[left] - truth[right]) / noise[kind])
    p_left = np.where(kind == 2, 0.5, np.where(kind == 3, 1.0 - p_left, p_left))
    winner = np.where(rng.random(n_comparisons) < p_left, left, right)
    width = len(str(max(n_workers - 1, 0)))
    worker_ids = np.array([f"w{i:0{width}d}" for i in range(n_workers)], dtype=object)
    data = Comparisons(
        worker.astype(np.int32),
        left.astype(np.int32),
        right.astype(np.int32),
        winner.astype(np.int32),
        item_ids=item_ids,
        worker_ids=worker_ids,
        truth=truth,
    )
    if return_info:
        return data, np.array(WORKER_TYPES)[types]
    return data


def _scores(scores: Any) -> tuple[Any, np.ndarray]:
    import pandas as pd

    if isinstance(scores, pd.Series):
        item_ids = scores.index.to_numpy()
        truth = scores.to_numpy(dtype=np.float64)
    else:
        truth = np.asarray(scores, dtype=np.float64)
        item_ids = None
    if truth.ndim != 1 or len(truth) < 2:
        raise CrowdDataError(f"scores must be one score per item, at least 2, got {truth.shape}")
    if not np.all(np.isfinite(truth)):
        raise CrowdDataError("scores must be finite")
    return item_ids, truth


def _mix(worker_mix: Sequence[float]) -> np.ndarray:
    mix = np.asarray(worker_mix, dtype=np.float64)
    if mix.shape != (len(WORKER_TYPES),) or np.any(mix < 0) or not np.isfinite(mix).all():
        raise CrowdDataError(
            f"worker_mix must be {len(WORKER_TYPES)} non-negative shares "
            f"({', '.join(WORKER_TYPES)}), got {list(worker_mix)}"
        )
    if mix.sum() <= 0:
        raise CrowdDataError("worker_mix must have a positive share")
    return mix / mix.sum()


def _check(
    n_comparisons: int,
    n_workers: int,
    reliable_noise: float,
    noisy_noise: float,
    near_share: float,
    window: int,
    n_items: int,
) -> None:
    if n_comparisons < 1 or n_workers < 1 or window < 1:
        raise CrowdDataError(
            f"n_comparisons, n_workers and window must be at least 1, got {n_comparisons}, "
            f"{n_workers}, {window}"
        )
    if not (reliable_noise > 0 and noisy_noise > 0):
        raise CrowdDataError("reliable_noise and noisy_noise must be positive")
    if not 0.0 <= near_share <= 1.0:
        raise CrowdDataError(f"near_share must be in [0, 1], got {near_share}")


def _type_counts(mix: np.ndarray, n_workers: int) -> np.ndarray:
    """Worker counts per type, rounded by largest remainder to add up to n_workers."""
    exact = mix * n_workers
    counts = np.floor(exact).astype(int)
    short = n_workers - counts.sum()
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return counts


def _pairs(
    truth: np.ndarray, n: int, near_share: float, window: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` pairs of distinct items: uniform, or neighbours in true score."""
    n_items = len(truth)
    left = rng.integers(0, n_items, n)
    right = (left + rng.integers(1, n_items, n)) % n_items  # uniform among the others
    near = rng.random(n) < near_share
    if near.any():
        order = np.argsort(truth, kind="stable")
        rank = np.empty(n_items, dtype=np.int64)
        rank[order] = np.arange(n_items)
        reach = min(window, n_items - 1)
        count = int(near.sum())
        offset = rng.integers(1, reach + 1, count) * rng.choice([-1, 1], count)
        target = rank[left[near]] + offset
        own = rank[left[near]]
        target = np.where((target < 0) | (target >= n_items), own - offset, target)
        target = np.clip(target, 0, n_items - 1)
        target = np.where(target == own, np.where(own + 1 < n_items, own + 1, own - 1), target)
        right[near] = order[target]
    return left, right
