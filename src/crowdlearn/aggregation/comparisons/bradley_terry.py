"""Bradley-Terry scores fitted by Hunter's MM algorithm, with a virtual-item prior.

Model (Bradley and Terry, Biometrika 1952): item ``i`` beats item ``j`` with probability
``p_i / (p_i + p_j)`` for positive strengths ``p``. The MM algorithm of Hunter ("MM
algorithms for generalized Bradley-Terry models", Annals of Statistics 2004, eq. 3)
updates every strength at once:

    p_i <- W_i / sum_{comparisons c of i} 1 / (p_i + p_other(c))

where ``W_i`` is the number of wins of ``i``. Each iteration is two gathers and two
``np.bincount`` over the comparisons.

Regularisation: every item also plays ``prior`` virtual wins and ``prior`` virtual
losses against a virtual item of fixed strength 1 (the device of Chen et al., WSDM
2013, section 3.2; equivalent to a log-logistic prior on ``p_i``). Its MM update adds
``prior`` to ``W_i`` and ``2 * prior / (p_i + 1)`` to the denominator, so that items
seen once, never beaten or never winning keep finite scores, the comparison graph need
not be connected, and the strengths need no renormalisation. Default ``prior=0.5``.

Declared ties count as half a win for each side. ``scores_`` are the log-strengths
centred to mean 0 over the items.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from crowdlearn.aggregation.comparisons._base import BaseComparisonAggregator, Rows


def mm_strengths(
    rows: Rows,
    wins: np.ndarray,
    prior: float,
    start: np.ndarray,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, int, bool]:
    """Hunter's MM iterations (eq. 3) for BT log-strengths, with the virtual-item prior,
    accelerated by SQUAREM (:func:`squarem`).

    Parameters
    ----------
    rows : Rows
        The comparisons; each row's ``weight`` enters the denominators.
    wins : ndarray (n_items,)
        The (possibly soft) wins of each item, prior excluded; per row, the winner's and
        the loser's shares add up to the row's weight.
    prior : float
        Virtual wins and losses of each item against a virtual item of strength 1.
    start : ndarray (n_items,)
        Initial log-strengths.
    max_iter : int
        Most SQUAREM cycles (three MM steps each).
    tol : float
        Stop when a plain MM step moves no log-strength by more than this.

    Returns
    -------
    log_strengths, n_iter, converged
    """
    return squarem(RowsMMStep(rows, wins, prior), start, max_iter, tol)


def squarem(
    step: MMStep, start: np.ndarray, max_iter: int, tol: float
) -> tuple[np.ndarray, int, bool]:
    """Iterate ``step`` from ``start``, accelerated by SQUAREM.

    Each cycle takes two MM steps from ``theta``, extrapolates along them (SQUAREM,
    Varadhan and Roland, Scandinavian Journal of Statistics 2008, scheme S3), takes one
    MM step from there and keeps the result if its log-likelihood is not below the
    second plain step's (otherwise the plain step). Stops when a plain step moves no
    coordinate by more than ``tol``; returns the point, the cycles and convergence.
    """
    theta = start.copy()
    for n_iter in range(1, max_iter + 1):
        first = step(theta)
        if np.max(np.abs(first - theta)) < tol:
            return first, n_iter, True
        second = step(first)
        r = first - theta
        v = second - first - r
        norm_v = np.sqrt(np.dot(v, v))
        if norm_v == 0.0:
            theta = second
            continue
        alpha = min(-np.sqrt(np.dot(r, r)) / norm_v, -1.0)
        candidate = step(theta - 2.0 * alpha * r + alpha * alpha * v)
        good = np.all(np.isfinite(candidate))
        theta = candidate if good and step.loglik(candidate) >= step.loglik(second) else second
    return theta, max_iter, False


class MMStep:
    """One MM update of the BT log-strengths with the virtual-item prior, and the
    log-likelihood it increases, given the two sums over the comparisons that a
    subclass computes (in memory, or over partitions on a cluster)."""

    def __init__(self, wins: np.ndarray, prior: float) -> None:
        self.wins = wins
        self.prior = prior

    def pair_sums(self, strengths: np.ndarray) -> np.ndarray:
        """Per item, ``sum over its comparisons of weight / (p_left + p_right)``."""
        raise NotImplementedError

    def pair_logsum(self, theta: np.ndarray) -> float:
        """``sum over comparisons of weight * log(exp(theta_left) + exp(theta_right))``."""
        raise NotImplementedError

    def __call__(self, theta: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            strengths = np.exp(theta)
            denominator = self.pair_sums(strengths) + 2.0 * self.prior / (strengths + 1.0)
            updated = np.log(self.wins + self.prior) - np.log(denominator)
        return best_shift(updated, self.prior)

    def loglik(self, theta: np.ndarray) -> float:
        virtual = theta - 2.0 * np.logaddexp(theta, 0.0)
        pairs = self.pair_logsum(theta)
        return float(np.dot(self.wins, theta) - pairs + self.prior * virtual.sum())


class RowsMMStep(MMStep):
    """:class:`MMStep` over comparisons held in memory (gathers and ``np.bincount``)."""

    def __init__(self, rows: Rows, wins: np.ndarray, prior: float) -> None:
        super().__init__(wins, prior)
        self.rows = rows
        self.weights = None if bool(np.all(rows.weight == 1.0)) else rows.weight

    def pair_sums(self, strengths: np.ndarray) -> np.ndarray:
        return pair_sums(self.rows.left, self.rows.right, self.weights, strengths)

    def pair_logsum(self, theta: np.ndarray) -> float:
        return pair_logsum(self.rows.left, self.rows.right, self.weights, theta)


def pair_sums(
    left: np.ndarray, right: np.ndarray, weights: np.ndarray | None, strengths: np.ndarray
) -> np.ndarray:
    """The denominators' comparison part of Hunter's eq. 3 for these rows."""
    inverse = 1.0 / (strengths[left] + strengths[right])
    if weights is not None:
        inverse *= weights
    sums = np.bincount(left, inverse, len(strengths))
    sums += np.bincount(right, inverse, len(strengths))
    return sums


def pair_logsum(
    left: np.ndarray, right: np.ndarray, weights: np.ndarray | None, theta: np.ndarray
) -> float:
    """``sum weight * log(exp(theta_left) + exp(theta_right))`` over these rows."""
    pair = np.logaddexp(theta[left], theta[right])
    return float(pair.sum() if weights is None else np.dot(weights, pair))


def best_shift(theta: np.ndarray, prior: float, steps: int = 3) -> np.ndarray:
    """``theta`` plus the common shift ``c`` that maximises the virtual comparisons.

    The real comparisons do not see a common shift of the log-strengths, only the
    virtual item does; MM moves the shift by a step of order ``prior / degree`` per
    iteration, the slowest mode by far. Newton steps on ``c`` for the virtual part,
    ``sum_i theta_i + c - 2 log(1 + exp(theta_i + c))`` (concave in ``c``), solve for
    it directly; the comparisons' part of the log-likelihood does not change.
    """
    shift = 0.0
    for _ in range(steps):
        sigma = expit(theta + shift)
        gradient = np.sum(1.0 - 2.0 * sigma)
        curvature = 2.0 * np.sum(sigma * (1.0 - sigma))
        shift += gradient / max(curvature, 1e-12)
    return theta + shift


def bt_start(rows: Rows, prior: float) -> np.ndarray:
    """Centred Bradley-Terry scores from a loose MM fit (50 cycles, tolerance 1e-4):
    the starting point of the richer models."""
    wins = np.bincount(rows.winner, rows.weight, rows.n_items)
    theta, _, _ = mm_strengths(rows, wins, prior, np.zeros(rows.n_items), 50, 1e-4)
    return theta - theta.mean()


class BradleyTerry(BaseComparisonAggregator):
    """Bradley-Terry scores by Hunter's MM algorithm, regularised by a virtual item.

    Parameters
    ----------
    prior : float, default 0.5
        Virtual wins and virtual losses of every item against a virtual item of
        strength 1 (> 0): keeps the scores of items never beaten, never winning or
        seen once finite. Larger values shrink the scores toward 0.
    max_iter : int, default 1000
    tol : float, default 1e-6
        Stop when no log-strength changes by more than this between iterations.

    Attributes
    ----------
    scores_ : ndarray (n_items,)
        Log-strengths centred to mean 0 (higher = preferred).
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
    >>> scores = BradleyTerry().fit(data).scores_
    >>> [str(data.item_ids[i]) for i in scores.argsort()[::-1]]
    ['a', 'b', 'c']
    """

    def __init__(self, prior: float = 0.5, max_iter: int = 1000, tol: float = 1e-6) -> None:
        self.prior = prior
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, rows: Rows) -> np.ndarray:
        wins = np.bincount(rows.winner, rows.weight, rows.n_items)
        theta, self.n_iter_, self.converged_ = mm_strengths(
            rows, wins, self.prior, np.zeros(rows.n_items), self.max_iter, self.tol
        )
        return theta
