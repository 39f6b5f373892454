"""Weighted majority vote, and the vote arithmetic that the worker-weighting methods share.

A weighted majority vote gives task ``i`` the class with the largest total weight of
the workers who chose it (peerannot paper, sec. 3.1, the MV equation with a weight
``w_j`` on each vote; crowd-kit's ``MajorityVote(skills=...)``):

    score_ik = sum_{j in A(i)} w_j 1{y_i^(j) = k},   y_i = argmax_k score_ik.

The helpers below are used by :class:`WeightedMajorityVote` and by the methods that
estimate the weights: :class:`~crowdlearn.aggregation.wawa.Wawa`,
:class:`~crowdlearn.aggregation.zero_based_skill.ZeroBasedSkill`,
:class:`~crowdlearn.aggregation.iwmv.IWMV` and
:class:`~crowdlearn.aggregation.plantnet.PlantNet`. Each is one ``np.bincount`` over
the annotations:

* :func:`weighted_scores`: the (n_tasks, K) scores above, binned on ``task * K + label``;
* :func:`vote_shares`: scores turned into probabilities (the rule for non-positive
  totals is documented there);
* :func:`worker_accuracy`: each worker's share of annotations that agree with given
  task labels (binned on the worker).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

import crowdlearn.aggregation._kernels as _kernels
from crowdlearn.aggregation._base import BaseAggregator, TieBreak
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.errors import show


def weighted_scores(data: CrowdData, weights: np.ndarray) -> np.ndarray:
    """Total weight of the votes for each class of each task, shape (n_tasks, K).

    ``weights`` holds one weight per worker code; tasks without annotations score 0.
    """
    if _kernels.active(data.n_annotations):
        fused = fused_votes(data, np.asarray(weights, dtype=np.float64))
        if fused is not None:
            return fused
    k = data.n_classes
    cells = data.task.astype(np.int64) * k + data.label
    totals = np.bincount(
        cells,
        weights=np.asarray(weights, dtype=np.float64)[data.worker],
        minlength=data.n_tasks * k,
    )
    return totals.reshape(data.n_tasks, k)


def fused_votes(data: CrowdData, weights: np.ndarray | None = None) -> np.ndarray | None:
    """(n_tasks, K) votes per class by the fused kernel, one pass over the annotations:
    the total weight (float64) with per-worker ``weights``, else the counts (int64).
    Parallel over ranges of whole tasks when the annotations are sorted by task (what
    the readers of large files and the generators produce), else one sequential pass.
    None if the kernels cannot run (see :mod:`crowdlearn.aggregation._kernels`)."""
    return _kernels.votes(
        data.task, data.worker, data.label, weights, data.n_tasks, data.n_classes
    )


def vote_shares(scores: np.ndarray) -> np.ndarray:
    """Probabilities from vote scores (n_tasks, K): each class's share of the positive
    part of the scores.

    Where no class has a positive score (a task without annotations, or whose voters
    all weigh zero or less), the mass is spread evenly over the classes of highest
    score. Either way the most probable classes are exactly the highest-scoring ones,
    so ``labels_`` (the argmax of the probabilities) is the weighted majority vote.
    """
    positive = np.maximum(scores, 0.0)
    totals = positive.sum(axis=1, keepdims=True)
    top = (scores == scores.max(axis=1, keepdims=True)).astype(np.float64)
    fallback = top / top.sum(axis=1, keepdims=True)
    safe_totals = np.where(totals > 0, totals, 1.0)
    return np.where(totals > 0, positive / safe_totals, fallback)


def worker_accuracy(
    data: CrowdData, labels: np.ndarray, fill: float | np.ndarray = 0.0
) -> np.ndarray:
    """Share of each worker's annotations that equal the given task labels, (n_workers,).

    Workers without annotations get ``fill`` (a scalar or a per-worker array).
    """
    agree = data.label == np.asarray(labels)[data.task]
    right = np.bincount(data.worker, weights=agree, minlength=data.n_workers)
    totals = data.workload
    out = np.broadcast_to(np.asarray(fill, dtype=np.float64), right.shape).copy()
    return np.divide(right, totals, out=out, where=totals > 0)


def majority_labels(data: CrowdData) -> np.ndarray:
    """Plain majority vote, ties going to the lowest class code."""
    return weighted_scores(data, np.ones(data.n_workers)).argmax(axis=1)


def resolve_worker_weights(
    data: CrowdData, weights: Any, default_weight: float | None
) -> np.ndarray:
    """One float per worker code from a Mapping/Series keyed by worker id, or an array
    aligned with the worker codes (NaN marks a missing weight).

    Workers without a weight get ``default_weight``; when it is None, workers that
    have annotations and no weight are an error (workers without annotations then get
    0, as they cast no vote). Weights for workers not in the data are ignored.
    """
    if weights is None:
        return np.ones(data.n_workers)
    if isinstance(weights, (Mapping, pd.Series)):
        series = weights if isinstance(weights, pd.Series) else pd.Series(dict(weights))
        if series.index.has_duplicates:
            repeated = series.index[series.index.duplicated()].unique()
            raise CrowdDataError(f"weights are given twice for workers {show(repeated)}")
        resolved = _as_floats(series.reindex(pd.Index(data.worker_ids)).to_numpy())
    else:
        resolved = _as_floats(weights)
        if resolved.shape != (data.n_workers,):
            raise CrowdDataError(
                f"weights has shape {resolved.shape}; an array of weights must have one "
                f"entry per worker code, shape ({data.n_workers},)"
            )
    if np.any(np.isinf(resolved)):
        raise CrowdDataError(
            f"weights must be finite; workers {show(data.worker_ids[np.isinf(resolved)])} "
            "have infinite weights"
        )
    missing = np.isnan(resolved)
    if default_weight is not None:
        if not np.isfinite(default_weight):
            raise ValueError(f"default_weight must be finite, got {default_weight!r}")
        return np.where(missing, float(default_weight), resolved)
    voting = missing & (data.workload > 0)
    if voting.any():
        raise CrowdDataError(
            f"no weight for workers {show(data.worker_ids[voting])}; give their weights "
            "or a default_weight"
        )
    return np.where(missing, 0.0, resolved)


def _as_floats(values: Any) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise CrowdDataError("worker weights must be numbers") from None


class WeightedMajorityVote(BaseAggregator):
    """Majority vote with given worker weights.

    Parameters
    ----------
    weights : Mapping, Series or array-like, optional
        Weight of each worker: keyed by worker id, or an array aligned with the worker
        codes (NaN marks a missing weight). Weights may be any finite numbers; a
        negative weight counts against the class the worker chose. ``None`` gives
        every worker weight 1 (the plain majority vote, with vote frequencies as
        probabilities).
    default_weight : float, optional
        Weight of the workers that ``weights`` leaves out. When ``None``, a worker with
        annotations and no weight is an error naming the missing worker ids.
    tie_break : {"random", "lowest"}, default "random"
        How ``labels_`` breaks ties between classes of equal weight.
    random_state : int, default 0
        Seed of the random tie-break.

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        Each class's share of the positive weighted score of the task. A task with no
        positive score (no annotations, or only voters of weight <= 0) spreads the mass
        evenly over its highest-scoring classes.
    labels_ : ndarray of shape (n_tasks,)
        The weighted majority class of each task.
    weights_ : ndarray of shape (n_workers,)
        The weight used for each worker code.
    scores_ : ndarray of shape (n_tasks, n_classes)
        Total weight of the votes for each class.

    Examples
    --------
    >>> from crowdlearn import CrowdData
    >>> data = CrowdData.from_arrays(
    ...     ["t1", "t1", "t1"], ["ann", "bob", "cat"], ["yes", "no", "no"]
    ... )
    >>> model = WeightedMajorityVote(weights={"ann": 3.0, "bob": 1.0, "cat": 1.0})
    >>> model.fit(data).predict_proba()
    array([[0.4, 0.6]])
    >>> WeightedMajorityVote(weights={"ann": 0.5}, default_weight=1.0).fit(data).predict()
    array([0])
    """

    worker_attributes = ("weights_",)
    accepts_anonymous = False

    def __init__(
        self,
        weights: Any = None,
        default_weight: float | None = None,
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
    ) -> None:
        self.weights = weights
        self.default_weight = default_weight
        self.tie_break = tie_break
        self.random_state = random_state

    def _fit(self, data: CrowdData) -> None:
        self.weights_ = resolve_worker_weights(data, self.weights, self.default_weight)
        self.scores_ = weighted_scores(data, self.weights_)
        self.probas_ = vote_shares(self.scores_)
