"""Worker bias and noise: truth plus an additive worker bias plus worker Gaussian noise.

The model ``y_ij = z_i + b_j + e_ij``, ``e_ij ~ N(0, v_j)``, the numeric analogue of a
confusion matrix (a worker who rates everything 10 points high is informative once the
10 points are known), as in Welinder & Perona's annotator bias (CVPR Workshops 2010)
and the continuous models of Raykar et al. (JMLR 2010, section 4) extended by a bias.
Fitted by alternating (block-coordinate) maximisation of the log-posterior with weak
priors that keep a worker with very few ratings sensible:

* bias: ``b_j = sum_i (y_ij - z_i) / (n_j + prior)`` (a Gaussian prior at 0 worth
  ``prior`` ratings), then shifted so that the biases average 0 over the ratings (the
  truth and the biases are otherwise defined only up to a common constant: the crowd as
  a whole is taken as unbiased);
* variance: ``v_j = (sum_i (y_ij - z_i - b_j)^2 + prior * v_0) / (n_j + prior)``, with
  ``v_0`` the pooled residual variance (an inverse-gamma-like pseudo-count), floored;
* truth: ``z_i = sum_j (y_ij - b_j) / v_j / sum_j 1 / v_j``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.ratings._base import (
    POSITIVE,
    BaseRatingAggregator,
    value_scale,
    weighted_task_mean,
)
from crowdlearn.data.ratings import Ratings


class WorkerBias(BaseRatingAggregator):
    """Truth, an additive bias and a noise variance per worker (alternating maximisation).

    Parameters
    ----------
    prior : float, default 1.0
        Pseudo-ratings of the priors on each worker's bias (at 0) and variance (at the
        pooled variance); 0 gives the maximum-likelihood updates.
    max_iter : int, default 100
    tol : float, default 1e-6
        Stop when no task's value moves by more than ``tol`` times the std of all ratings.
    floor : float, default 1e-4
        Smallest worker variance, as a share of the variance of all ratings.

    Attributes
    ----------
    values_ : ndarray (n_tasks,)
    spread_ : ndarray (n_tasks,)
        ``1 / sqrt(sum_j 1 / v_j)`` over the task's workers.
    bias_, variance_ : ndarray (n_workers,)
    n_iter_, converged_

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.data import Ratings
    >>> task = np.repeat(np.arange(50), 3)
    >>> worker = np.tile([0, 1, 2], 50)
    >>> truth = np.linspace(0, 10, 50)
    >>> data = Ratings(task, worker, truth[task] + np.array([-1.0, 0.0, 1.0])[worker])
    >>> model = WorkerBias(prior=0).fit(data)
    >>> np.round(model.bias_, 3)
    array([-1.,  0.,  1.])
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("bias_", "variance_")
    worker_units: ClassVar[dict[str, int]] = {"bias_": 1, "variance_": 2}
    param_bounds: ClassVar[dict[str, Bounds]] = {"prior": Bounds(0), "floor": POSITIVE}

    def __init__(
        self, prior: float = 1.0, max_iter: int = 100, tol: float = 1e-6, floor: float = 1e-4
    ) -> None:
        self.prior = prior
        self.max_iter = max_iter
        self.tol = tol
        self.floor = floor

    def _fit(self, data: Ratings) -> None:
        scale = value_scale(data.value)
        floor = self.floor * scale**2
        n = data.n_workers
        counts = np.bincount(data.worker, minlength=n).astype(np.float64)
        denominator = counts + self.prior
        safe = np.where(denominator > 0, denominator, 1.0)
        z = weighted_task_mean(data.task, data.value, None, data.n_tasks)
        bias = np.zeros(n)
        variance = np.full(n, scale**2)
        self.converged_ = False
        self.n_iter_ = 0
        for iteration in range(1, self.max_iter + 1):
            residual = data.value - z[data.task]
            bias = np.bincount(data.worker, weights=residual, minlength=n) / safe
            bias -= float(np.mean(bias[data.worker]))
            error = (residual - bias[data.worker]) ** 2
            pooled = max(float(np.mean(error)), floor)
            sse = np.bincount(data.worker, weights=error, minlength=n)
            variance = np.maximum((sse + self.prior * pooled) / safe, floor)
            new = weighted_task_mean(
                data.task,
                data.value - bias[data.worker],
                1.0 / variance[data.worker],
                data.n_tasks,
            )
            change = np.nanmax(np.abs(new - z)) / scale if np.any(np.isfinite(new)) else 0.0
            z = new
            self.n_iter_ = iteration
            if change < self.tol:
                self.converged_ = True
                break
        self.values_ = z
        self.bias_ = bias
        self.variance_ = variance
        total = np.bincount(data.task, weights=1.0 / variance[data.worker], minlength=data.n_tasks)
        spread = np.full(data.n_tasks, np.nan)
        np.divide(1.0, np.sqrt(total), out=spread, where=total > 0)
        self.spread_ = spread
