"""Thurstone's Case V: a probit model of paired comparisons.

Thurstone, "A law of comparative judgment", Psychological Review 1927; Case V (equal,
uncorrelated discriminal dispersions) as in Mosteller, Psychometrika 1951: item ``i`` is
preferred to ``j`` with probability ``Phi(s_i - s_j)`` (the unit of the scores is the
standard deviation of the difference of two perceptions). The scores maximise

    sum_rows weight * log Phi(s_winner - s_loser) - l2 / 2 * ||s||^2

(:func:`negative_log_posterior`, with ``scipy.special.log_ndtr`` for the log of the
normal CDF and its analytic gradient), by L-BFGS from the Bradley-Terry scores rescaled
to probit units (divided by 1.7). The L2 penalty keeps items never beaten or never
winning finite.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr

from crowdlearn.aggregation.comparisons._base import BaseComparisonAggregator, Rows, lbfgs
from crowdlearn.aggregation.comparisons.bradley_terry import bt_start

#: log of the standard normal density's constant, 1 / sqrt(2 pi).
_LOG_NORM = -0.5 * np.log(2.0 * np.pi)
#: A logistic difference of 1.7 is close to a probit difference of 1.
_LOGIT_PER_PROBIT = 1.7


def negative_log_posterior(x: np.ndarray, rows: Rows, l2: float) -> tuple[float, np.ndarray]:
    """Minus the L2-penalised log-likelihood of Case V and its gradient in the scores."""
    d = x[rows.winner] - x[rows.loser]
    log_cdf = log_ndtr(d)
    value = -float(np.dot(rows.weight, log_cdf)) + 0.5 * l2 * float(np.dot(x, x))
    # d/dd log Phi(d) = phi(d) / Phi(d) (the inverse Mills ratio), in log space
    ratio = np.exp(_LOG_NORM - 0.5 * d * d - log_cdf)
    d_gradient = -rows.weight * ratio
    gradient = np.bincount(rows.winner, d_gradient, rows.n_items)
    gradient -= np.bincount(rows.loser, d_gradient, rows.n_items)
    return value, gradient + l2 * x


class Thurstone(BaseComparisonAggregator):
    """Thurstone Case V (probit link) scores, L2-penalised, by L-BFGS.

    Parameters
    ----------
    l2 : float, default 0.1
        L2 penalty on the scores (> 0): a standard normal prior of variance ``1 / l2``.
    max_iter : int, default 500
        L-BFGS iterations.
    tol : float, default 1e-9
        L-BFGS tolerance on the relative decrease of the objective and on its gradient.

    Attributes
    ----------
    scores_ : ndarray (n_items,)
        Centred scores in probit units (higher = preferred).
    n_iter_ : int
    converged_ : bool
    item_ids_, worker_ids_ : ndarray

    Examples
    --------
    >>> from crowdlearn.data import Comparisons
    >>> data = Comparisons.from_arrays(
    ...     worker=["w1", "w2", "w1", "w2"], left=["a", "b", "a", "c"],
    ...     right=["b", "c", "c", "b"], label=["a", "b", "a", "b"],
    ... )
    >>> scores = Thurstone().fit(data).scores_
    >>> [str(data.item_ids[i]) for i in scores.argsort()[::-1]]
    ['a', 'b', 'c']
    """

    def __init__(self, l2: float = 0.1, max_iter: int = 500, tol: float = 1e-9) -> None:
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, rows: Rows) -> np.ndarray:
        x0 = bt_start(rows, 0.5) / _LOGIT_PER_PROBIT
        x, self.n_iter_, self.converged_ = lbfgs(
            lambda x: negative_log_posterior(x, rows, self.l2), x0, self.max_iter, self.tol
        )
        return x
