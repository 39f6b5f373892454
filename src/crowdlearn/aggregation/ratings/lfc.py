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

By default (``leave_one_out=True``, our change) a worker's error is measured against
the truth computed without its own rating, which stops the maximum-likelihood runaway
in which one worker's precision grows without bound and the truth becomes its ratings;
``leave_one_out=False`` gives the plain updates above. The equation numbers of the
paper could not be checked here; the updates above are the
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
    squared_errors,
    value_scale,
    weighted_task_mean,
    worker_error_sums,
)
from crowdlearn.aggregation.ratings._iterative import iterate
from crowdlearn.data.ratings import Ratings


def worker_variances(
    data: Ratings, values: np.ndarray, weight: np.ndarray, floor: float, leave_one_out: bool
) -> np.ndarray:
    """Mean squared error of each worker (see :func:`~._base.squared_errors`), floored at
    ``floor``; a worker with no comparable rating gets the pooled mean squared error."""
    errors, comparable = squared_errors(data, values, weight, leave_one_out)
    sse, counts = worker_error_sums(data, errors, comparable)
    pooled = sse.sum() / counts.sum() if counts.sum() > 0 else floor
    variance = np.full(data.n_workers, pooled)
    np.divide(sse, counts, out=variance, where=counts > 0)
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
    leave_one_out : bool, default True
        Measure each worker's error against the truth computed without its own rating
        (see :func:`~crowdlearn.aggregation.ratings._base.squared_errors`). The
        maximum-likelihood updates (False) let a worker's weight run away when few
        workers share many tasks: its ratings pull the truth, which lowers its error,
        which raises its weight; on the 8 Snow et al. (2008) rating sets the mean
        Pearson correlation with the experts is 0.663 with False, 0.732 with True
        (``benchmarks/answer_kinds/ratings.py``).

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
    worker_units: ClassVar[dict[str, int]] = {"precision_": -2, "variance_": 2}
    param_bounds: ClassVar[dict[str, Bounds]] = {"floor": POSITIVE}

    def __init__(
        self,
        max_iter: int = 100,
        tol: float = 1e-6,
        floor: float = 1e-4,
        leave_one_out: bool = True,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.floor = floor
        self.leave_one_out = leave_one_out

    def _fit(self, data: Ratings) -> None:
        scale = value_scale(data.value)
        floor = self.floor * scale**2

        precision = np.ones(data.n_workers)

        def step(values: np.ndarray) -> np.ndarray:
            nonlocal precision
            variance = worker_variances(
                data, values, precision[data.worker], floor, self.leave_one_out
            )
            precision = 1.0 / variance
            return weighted_task_mean(data.task, data.value, precision[data.worker], data.n_tasks)

        start = weighted_task_mean(data.task, data.value, None, data.n_tasks)
        self.values_, self.n_iter_, self.converged_ = iterate(
            start, step, self.max_iter, self.tol, scale
        )
        self.variance_ = worker_variances(
            data, self.values_, precision[data.worker], floor, self.leave_one_out
        )
        self.precision_ = 1.0 / self.variance_
        total = np.bincount(
            data.task, weights=self.precision_[data.worker], minlength=data.n_tasks
        )
        spread = np.full(data.n_tasks, np.nan)
        np.divide(1.0, np.sqrt(total), out=spread, where=total > 0)
        self.spread_ = spread
