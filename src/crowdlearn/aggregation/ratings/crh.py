"""CRH: conflict resolution on heterogeneous data, continuous answers.

Li, Li, Gao, Zhao, Fan & Han, "Resolving conflicts in heterogeneous data by truth
discovery and source reliability estimation", SIGMOD 2014, section 2 (the optimisation
framework: minimise ``sum_k w_k sum_i d(z_i, y_ik)`` subject to
``sum_k exp(-w_k) = 1``) with the loss of section 3 for continuous data:

* loss: the normalised squared loss ``d(z_i, y_ik) = (z_i - y_ik)^2 / std_i``, with
  ``std_i`` the standard deviation of task ``i``'s ratings;
* weights (the closed-form minimiser of the framework):
  ``w_k = -log(sum_i d_ik / sum_k' sum_i d_ik')``;
* truth (the weighted-mean minimiser of the squared loss): ``z_i = sum_k w_k y_ik /
  sum_k w_k``;

alternated from the per-task median. PM ("probabilistic model" in some surveys' naming)
is this same framework. A worker with zero loss would get an infinite weight, so losses
are floored at ``1e-12`` of their total; on a task whose workers all have weight 0 (one
worker in all the data) the plain mean is used.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from crowdlearn.aggregation.ratings._base import (
    BaseRatingAggregator,
    task_std,
    value_scale,
    weighted_task_mean,
)
from crowdlearn.aggregation.ratings._iterative import iterate
from crowdlearn.aggregation.ratings.catd import initial_values
from crowdlearn.data.ratings import Ratings

_LOSS_FLOOR = 1e-12


class CRH(BaseRatingAggregator):
    """Truth discovery with worker weights ``-log(share of the total loss)``.

    Parameters
    ----------
    init : {"median", "mean"}, default "median"
    max_iter : int, default 100
    tol : float, default 1e-6
        Stop when no task's value moves by more than ``tol`` times the std of all ratings.

    Attributes
    ----------
    values_, spread_ : ndarray (n_tasks,)
    weights_ : ndarray (n_workers,)
        ``-log`` of each worker's share of the total normalised loss (>= 0).
    n_iter_, converged_

    Examples
    --------
    >>> from crowdlearn.simulate.ratings import simulate_ratings
    >>> data = simulate_ratings(n_tasks=200, n_workers=10, random_state=0)
    >>> model = CRH().fit(data)
    >>> error = abs(model.values_ - data.truth).mean()
    >>> bool(error < abs(data.value - data.truth[data.task]).mean())  # beats one rating
    True
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("weights_",)

    def __init__(self, init: str = "median", max_iter: int = 100, tol: float = 1e-6) -> None:
        self.init = init
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, data: Ratings) -> None:
        scale = value_scale(data.value)
        mean = weighted_task_mean(data.task, data.value, None, data.n_tasks)
        std = task_std(data, mean)
        # a task whose ratings all agree adds no loss; avoid 0/0 there
        std = np.where(std > 0, std, 1e-12 * scale)

        def weights(values: np.ndarray) -> np.ndarray:
            loss = (data.value - values[data.task]) ** 2 / std[data.task]
            per_worker = np.bincount(data.worker, weights=loss, minlength=data.n_workers)
            total = per_worker.sum()
            if total <= 0:
                return np.ones(data.n_workers)
            share = np.maximum(per_worker / total, _LOSS_FLOOR)
            return -np.log(share)

        def step(values: np.ndarray) -> np.ndarray:
            weighted = weighted_task_mean(
                data.task, data.value, weights(values)[data.worker], data.n_tasks
            )
            return np.where(np.isnan(weighted), mean, weighted)

        start = initial_values(data, self.init)
        self.values_, self.n_iter_, self.converged_ = iterate(
            start, step, self.max_iter, self.tol, scale
        )
        self.weights_ = weights(self.values_)
        self.spread_ = task_std(data, self.values_)
