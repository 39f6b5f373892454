"""Learning from crowds, numeric case without features (LFC-N).

Raykar, Yu, Zhao, Hermosillo Valadez, Florin, Bogoni & Moy, "Learning from crowds",
JMLR 11, 2010, section 4 (regression). Each worker ``j`` answers task ``i`` with the
true value plus Gaussian noise of the worker's own precision ``tau_j``:
``y_ij = z_i + e_ij``, ``e_ij ~ N(0, 1 / tau_j)``. Without instance features the
regression function reduces to one free value ``z_i`` per task, and the maximum
likelihood estimates alternate between

* the worker precision: ``1 / tau_j = mean_i (y_ij - z_i)^2`` over the tasks worker
  ``j`` rated (the paper's precision update, with ``z_i`` in place of ``w^T x_i``), and
* the truth: the precision-weighted mean ``z_i = sum_j tau_j y_ij / sum_j tau_j`` (the
  paper's estimate of the unknown value, the target the regressor is fit to).

The equation numbers of the paper could not be checked here; the updates above are the
model's maximum-likelihood conditions, derived directly. A worker variance of zero
(one worker alone on every task it rated) would make its precision infinite, so
variances are floored at ``floor`` times the variance of all ratings.
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
from crowdlearn.aggregation.ratings._iterative import iterate
from crowdlearn.data.ratings import Ratings


def worker_variances(
    data: Ratings, values: np.ndarray, floor: float, prior: float = 0.0, prior_var: float = 0.0
) -> np.ndarray:
    """Mean squared error of each worker around ``values``, floored at ``floor``.

    With ``prior > 0`` the estimate is shrunk towards ``prior_var`` as if by ``prior``
    pseudo-ratings of that squared error.
    """
    residual = (data.value - values[data.task]) ** 2
    sse = np.bincount(data.worker, weights=residual, minlength=data.n_workers)
    counts = np.bincount(data.worker, minlength=data.n_workers).astype(np.float64)
    totals = counts + prior
    variance = np.full(data.n_workers, prior_var if prior > 0 else floor)
    np.divide(sse + prior * prior_var, totals, out=variance, where=totals > 0)
    return np.maximum(variance, floor)


class LFCN(BaseRatingAggregator):
    """Raykar et al.'s learning from crowds for numbers: truth plus worker Gaussian noise.

    Parameters
    ----------
    max_iter : int, default 100
    tol : float, default 1e-6
        Stop when no task's value moves by more than ``tol`` times the std of all ratings.
    floor : float, default 1e-4
        Smallest worker variance, as a share of the variance of all ratings.

    Attributes
    ----------
    values_ : ndarray (n_tasks,)
        Precision-weighted mean of each task's ratings.
    spread_ : ndarray (n_tasks,)
        Posterior standard deviation of the truth, ``1 / sqrt(sum_j tau_j)``.
    precision_, variance_ : ndarray (n_workers,)
        Each worker's estimated noise precision and variance.
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> from crowdlearn.simulate.ratings import simulate_ratings
    >>> data = simulate_ratings(n_tasks=200, n_workers=10, random_state=0)
    >>> model = LFCN().fit(data)
    >>> error = abs(model.values_ - data.truth).mean()
    >>> bool(error < abs(data.value - data.truth[data.task]).mean())  # beats one rating
    True
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("precision_", "variance_")
    param_bounds: ClassVar[dict[str, Bounds]] = {"floor": POSITIVE}

    def __init__(self, max_iter: int = 100, tol: float = 1e-6, floor: float = 1e-4) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.floor = floor

    def _fit(self, data: Ratings) -> None:
        scale = value_scale(data.value)
        floor = self.floor * scale**2

        def step(values: np.ndarray) -> np.ndarray:
            self.variance_ = worker_variances(data, values, floor)
            precision = 1.0 / self.variance_
            return weighted_task_mean(data.task, data.value, precision[data.worker], data.n_tasks)

        start = weighted_task_mean(data.task, data.value, None, data.n_tasks)
        self.values_, self.n_iter_, self.converged_ = iterate(
            start, step, self.max_iter, self.tol, scale
        )
        self.variance_ = worker_variances(data, self.values_, floor)
        self.precision_ = 1.0 / self.variance_
        total = np.bincount(
            data.task, weights=self.precision_[data.worker], minlength=data.n_tasks
        )
        spread = np.full(data.n_tasks, np.nan)
        np.divide(1.0, np.sqrt(total), out=spread, where=total > 0)
        self.spread_ = spread
