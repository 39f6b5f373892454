"""GTM: the Gaussian truth model for real-valued truth discovery.

Zhao & Han, "A probabilistic model for estimating real-valued truth from conflicting
sources", QDB workshop at VLDB 2012, section 3. Generative model:

* each task's truth ``z_i ~ N(mu_0, sigma_0^2)``;
* each worker's (source's) variance ``sigma_k^2 ~ InvGamma(alpha, beta)``;
* each rating ``y_ik ~ N(z_i, sigma_k^2)``.

EM (MAP for the variances, the truth the latent variable):

* E-step, the Gaussian posterior of the truth:
  ``z_i = (mu_0 / sigma_0^2 + sum_k y_ik / sigma_k^2) / (1 / sigma_0^2 + sum_k 1 / sigma_k^2)``;
* M-step, the posterior mode of each variance:
  ``sigma_k^2 = (2 beta + sum_i (y_ik - z_i)^2) / (2 (alpha + 1) + |C_k|)``,
  ``|C_k|`` the number of the worker's ratings.

The paper standardises the claims before inference so that the priors are unit-free;
here all ratings are standardised together (minus their mean, over their std), the
model is fit, and the results are mapped back, so that shifting or scaling every
rating shifts or scales the results alike. ``mu_0 = 0`` and ``sigma_0 = 1`` are then the
mean and the spread of all ratings.
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


class GTM(BaseRatingAggregator):
    """Gaussian truth model: Gaussian truth prior, inverse-gamma worker variances, EM.

    Parameters
    ----------
    alpha, beta : float, default 10, 10
        Shape and scale of the inverse-gamma prior of the workers' variances (in units
        of the variance of all ratings; the paper's defaults).
    mu0 : float, default 0
        Prior mean of the truth, in standard deviations of all ratings from their mean.
    sigma0 : float, default 1
        Prior standard deviation of the truth, in the same units.
    max_iter : int, default 100
    tol : float, default 1e-6

    Attributes
    ----------
    values_ : ndarray (n_tasks,)
        Posterior mean of the truth.
    spread_ : ndarray (n_tasks,)
        Posterior standard deviation of the truth.
    variance_ : ndarray (n_workers,)
        Each worker's variance (in the ratings' units squared).
    n_iter_, converged_

    Examples
    --------
    >>> from crowdlearn.simulate.ratings import simulate_ratings
    >>> data = simulate_ratings(n_tasks=200, n_workers=10, random_state=0)
    >>> model = GTM().fit(data)
    >>> error = abs(model.values_ - data.truth).mean()
    >>> bool(error < abs(data.value - data.truth[data.task]).mean())  # beats one rating
    True
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("variance_",)
    worker_units: ClassVar[dict[str, int]] = {"variance_": 2}
    param_bounds: ClassVar[dict[str, Bounds]] = {
        "alpha": POSITIVE,
        "beta": POSITIVE,
        "mu0": Bounds(),
        "sigma0": POSITIVE,
    }

    def __init__(
        self,
        alpha: float = 10.0,
        beta: float = 10.0,
        mu0: float = 0.0,
        sigma0: float = 1.0,
        max_iter: int = 100,
        tol: float = 1e-6,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.mu0 = mu0
        self.sigma0 = sigma0
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, data: Ratings) -> None:
        centre = float(np.mean(data.value))
        scale = value_scale(data.value)
        x = (data.value - centre) / scale
        counts = np.bincount(data.worker, minlength=data.n_workers).astype(np.float64)
        rated = np.bincount(data.task, minlength=data.n_tasks) > 0
        prior_precision = 1.0 / self.sigma0**2

        def variances(z: np.ndarray) -> np.ndarray:
            sse = np.bincount(
                data.worker, weights=(x - z[data.task]) ** 2, minlength=data.n_workers
            )
            return (2 * self.beta + sse) / (2 * (self.alpha + 1) + counts)

        def posterior(variance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            precision = 1.0 / variance[data.worker]
            total = prior_precision + np.bincount(
                data.task, weights=precision, minlength=data.n_tasks
            )
            sums = self.mu0 * prior_precision + np.bincount(
                data.task, weights=precision * x, minlength=data.n_tasks
            )
            return np.where(rated, sums / total, np.nan), total

        def step(z: np.ndarray) -> np.ndarray:
            return posterior(variances(z))[0]

        start = weighted_task_mean(data.task, x, None, data.n_tasks)
        z, self.n_iter_, self.converged_ = iterate(start, step, self.max_iter, self.tol, 1.0)
        variance = variances(z)
        z, total = posterior(variance)
        self.values_ = centre + scale * z
        self.spread_ = np.where(rated, scale / np.sqrt(total), np.nan)
        self.variance_ = variance * scale**2
