"""Worker and task scores for ratings (numbers or ordinal ranks).

Each worker is compared with the *leave-one-out consensus* of a task: the mean of the
other workers' ratings of the task (the worker's own rating left out, so that a worker
is never compared with itself; a task rated by that worker alone gives no comparison).
Everything is computed for all workers at once from per-task and per-worker sums
(``np.bincount``).

:func:`worker_scores` returns, aligned with the worker codes:

- ``n_ratings``: number of ratings;
- ``bias``: mean signed difference ``rating - consensus`` (positive: rates high);
- ``mae_to_consensus``: mean absolute difference from the consensus;
- ``correlation``: Pearson correlation between the worker's ratings and the consensus
  over the worker's comparable tasks (NaN with fewer than 2 of them or when either side
  is constant: there is nothing to correlate);
- ``noise``: standard deviation of ``rating - consensus - bias`` (the scatter left once
  the worker's bias is removed).

:func:`task_scores` returns, aligned with the task codes:

- ``n_ratings``: number of ratings;
- ``spread``: standard deviation of the task's ratings (ddof=0; NaN when unrated);
- ``range``: highest minus lowest rating.

Ratings whose squares would leave float64's range (near 1e308 or 1e-300) are scored in
a unit scaled by a power of two, as the aggregators do, and the scores scaled back.

Example
-------
>>> from crowdlearn.data import Ratings
>>> data = Ratings.from_arrays(list("aabbcc"), list("xyxyxy"), [1, 3, 2, 4, 3, 5])
>>> worker_scores(data)["bias"]
array([-2.,  2.])
"""

from __future__ import annotations

import numpy as np

from crowdlearn.data.ratings import Ratings


def _exponent(data: Ratings) -> int:
    from crowdlearn.aggregation.ratings._base import rescaling_exponent

    return rescaling_exponent(data)


def scaled_ratings(data: Ratings, exponent: int) -> Ratings:
    """``data`` in a unit scaled by ``2**exponent`` (see the ratings aggregators)."""
    from crowdlearn.aggregation.ratings._base import scaled_ratings as scaled

    return scaled(data, exponent)


def _scaled_back(
    scores: dict[str, np.ndarray], exponent: int, names: tuple[str, ...]
) -> dict[str, np.ndarray]:
    """The scores in the ratings' unit again (those in ``names`` are in rating units)."""
    with np.errstate(over="ignore", under="ignore"):
        return {k: np.ldexp(v, exponent) if k in names else v for k, v in scores.items()}


def _per_worker_mean(data: Ratings, values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    counts = np.bincount(data.worker[keep], minlength=data.n_workers)
    sums = np.bincount(data.worker[keep], weights=values[keep], minlength=data.n_workers)
    out = np.full(data.n_workers, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def leave_one_out_consensus(data: Ratings) -> np.ndarray:
    """For each annotation, the mean of the other ratings of its task (NaN when none)."""
    counts = np.bincount(data.task, minlength=data.n_tasks).astype(np.float64)
    sums = np.bincount(data.task, weights=data.value, minlength=data.n_tasks)
    others = counts[data.task] - 1
    out = np.full(data.n_annotations, np.nan)
    np.divide(sums[data.task] - data.value, others, out=out, where=others > 0)
    return out


def worker_scores(data: Ratings) -> dict[str, np.ndarray]:
    """Per-worker scores (see the module docstring), each of shape (n_workers,).

    Parameters
    ----------
    data : Ratings

    Returns
    -------
    dict
        ``n_ratings``, ``bias``, ``mae_to_consensus``, ``correlation``, ``noise``.
    """
    if not isinstance(data, Ratings):
        raise TypeError(
            f"worker_scores expects a crowdlearn.data.Ratings, got {type(data).__name__}"
        )
    if exponent := _exponent(data):  # numbers near 1e308 or 1e-300: in a safe unit
        scores = worker_scores(scaled_ratings(data, -exponent))
        return _scaled_back(scores, exponent, ("bias", "mae_to_consensus", "noise"))
    consensus = leave_one_out_consensus(data)
    keep = np.isfinite(consensus)
    difference = data.value - consensus
    bias = _per_worker_mean(data, difference, keep)
    mae = _per_worker_mean(data, np.abs(difference), keep)
    residual = difference - np.nan_to_num(bias)[data.worker]
    noise = np.sqrt(_per_worker_mean(data, residual**2, keep))
    # Pearson correlation from centred sums, all workers at once
    mean_x = _per_worker_mean(data, data.value, keep)
    mean_y = _per_worker_mean(data, consensus, keep)
    dx = np.where(keep, data.value - np.nan_to_num(mean_x)[data.worker], 0.0)
    dy = np.where(keep, np.nan_to_num(consensus) - np.nan_to_num(mean_y)[data.worker], 0.0)
    sxy = np.bincount(data.worker, weights=dx * dy, minlength=data.n_workers)
    sxx = np.bincount(data.worker, weights=dx * dx, minlength=data.n_workers)
    syy = np.bincount(data.worker, weights=dy * dy, minlength=data.n_workers)
    comparable = np.bincount(data.worker[keep], minlength=data.n_workers)
    denominator = np.sqrt(sxx * syy)
    scale = np.maximum(np.abs(data.value).max(), 1.0) ** 2
    defined = (comparable >= 2) & (denominator > 1e-12 * scale)
    correlation = np.full(data.n_workers, np.nan)
    np.divide(sxy, denominator, out=correlation, where=defined)
    return {
        "n_ratings": np.bincount(data.worker, minlength=data.n_workers),
        "bias": bias,
        "mae_to_consensus": mae,
        "correlation": np.clip(correlation, -1.0, 1.0),
        "noise": noise,
    }


def task_scores(data: Ratings) -> dict[str, np.ndarray]:
    """Per-task scores (see the module docstring), each of shape (n_tasks,).

    Parameters
    ----------
    data : Ratings

    Returns
    -------
    dict
        ``n_ratings``, ``spread``, ``range``.
    """
    if not isinstance(data, Ratings):
        raise TypeError(
            f"task_scores expects a crowdlearn.data.Ratings, got {type(data).__name__}"
        )
    if exponent := _exponent(data):  # numbers near 1e308 or 1e-300: in a safe unit
        return _scaled_back(
            task_scores(scaled_ratings(data, -exponent)), exponent, ("spread", "range")
        )
    counts = np.bincount(data.task, minlength=data.n_tasks)
    sums = np.bincount(data.task, weights=data.value, minlength=data.n_tasks)
    mean = np.full(data.n_tasks, np.nan)
    np.divide(sums, counts, out=mean, where=counts > 0)
    squares = np.bincount(
        data.task, weights=(data.value - mean[data.task]) ** 2, minlength=data.n_tasks
    )
    spread = np.full(data.n_tasks, np.nan)
    np.divide(squares, counts, out=spread, where=counts > 0)
    ordered = data.value[np.lexsort((data.value, data.task))]  # by task, then value
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rated = counts > 0
    value_range = np.full(data.n_tasks, np.nan)
    value_range[rated] = ordered[first[rated] + counts[rated] - 1] - ordered[first[rated]]
    return {"n_ratings": counts, "spread": np.sqrt(spread), "range": value_range}
