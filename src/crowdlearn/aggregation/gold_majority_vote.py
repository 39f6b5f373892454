"""Gold majority vote: worker weights measured on the tasks whose class is known.

Each worker's weight is its accuracy on the gold tasks it labelled (the share of its
gold-task labels equal to the gold class); the labels of every task are then the
weighted majority vote with those weights (crowd-kit's ``GoldMajorityVote``). A worker
who labelled no gold task has no measured weight: ``default_weight`` decides (None
refuses the data, naming those workers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.aggregation._base import BaseAggregator, TieBreak, gold_codes
from crowdlearn.aggregation.weighted_vote import (
    resolve_worker_weights,
    vote_shares,
    weighted_scores,
)
from crowdlearn.data import CrowdData, CrowdDataError


def gold_accuracy(data: CrowdData, gold: np.ndarray) -> np.ndarray:
    """Each worker's accuracy on the gold tasks (``gold``: class code per task code,
    -1 unknown), shape (n_workers,); NaN for a worker who labelled no gold task."""
    known = gold[data.task] >= 0
    right = (data.label == gold[data.task]) & known
    hits = np.bincount(data.worker, weights=right, minlength=data.n_workers)
    seen = np.bincount(data.worker, weights=known, minlength=data.n_workers)
    out = np.full(data.n_workers, np.nan)
    return np.divide(hits, seen, out=out, where=seen > 0)


class GoldMajorityVote(BaseAggregator):
    """Majority vote weighted by each worker's accuracy on gold tasks.

    Parameters
    ----------
    default_weight : float, optional
        Weight of the workers who labelled no gold task. None (the default) refuses
        data where such a worker has labels, as crowd-kit does.
    tie_break : {"random", "lowest"}, default "random"
    random_state : int, default 0

    Attributes
    ----------
    probas_ : ndarray (n_tasks, n_classes)
        Each class's share of the task's weighted vote.
    labels_ : ndarray (n_tasks,)
    skills_ : ndarray (n_workers,)
        Accuracy on the gold tasks (NaN for a worker without gold tasks).

    Examples
    --------
    >>> from crowdlearn import CrowdData
    >>> data = CrowdData.from_arrays(
    ...     ["g", "g", "t", "t"], ["a", "b", "a", "b"], ["x", "y", "y", "x"]
    ... )
    >>> model = GoldMajorityVote().fit(data, gold={"g": "x"})
    >>> model.skills_
    array([1., 0.])
    >>> list(model.classes_[model.labels_])
    ['x', 'y']
    """

    worker_attributes = ("skills_",)
    accepts_anonymous = False

    def __init__(
        self,
        default_weight: float | None = None,
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
    ) -> None:
        self.default_weight = default_weight
        self.tie_break = tie_break
        self.random_state = random_state

    def fit(self, data: CrowdData, gold: Any = None) -> GoldMajorityVote:
        """Measure each worker on the gold tasks of ``gold`` (keyed by task id, or
        aligned with task codes) and vote; returns ``self``."""
        return super().fit(data, gold=gold)  # type: ignore[return-value]

    def _fit(self, data: CrowdData, gold: Any = None) -> None:
        codes = gold_codes(data, gold)
        if codes is None:
            raise CrowdDataError("GoldMajorityVote needs gold labels for some tasks (gold=)")
        self.skills_ = gold_accuracy(data, codes)
        weights = resolve_worker_weights(data, self.skills_, self.default_weight)
        self.probas_ = vote_shares(weighted_scores(data, weights))
