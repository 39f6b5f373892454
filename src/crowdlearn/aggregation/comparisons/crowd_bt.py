"""Crowd-BT: Bradley-Terry scores with one reliability per worker.

Chen, Bennett, Collins-Thompson and Horvitz, "Pairwise ranking aggregation in a
crowdsourced setting", WSDM 2013. Worker ``w`` reports the Bradley-Terry preference with
probability ``eta_w`` and reverses it otherwise (eq. 4):

    P(w says i > j) = eta_w * sigma(s_i - s_j) + (1 - eta_w) * sigma(s_j - s_i).

A spammer has ``eta`` near 1/2, a worker who reads the question backwards near 0. The
scores are regularised by virtual comparisons with a virtual item of score 0 (eq. 7:
``prior`` virtual wins and losses per item), and each ``eta_w`` by a Beta prior of
``prior_agree`` pseudo-agreements and ``prior_reverse`` pseudo-reversals (which also
picks, of the two mirror solutions ``(s, eta)`` and ``(-s, 1 - eta)``, the one where
most workers are reliable). Instead of the paper's online updates, the posterior mode is
found in batch by L-BFGS on all parameters at once (:func:`negative_log_posterior`, the
vectorised minus log of eq. 4 summed over comparisons plus the priors, with its
analytic gradient), started from the Bradley-Terry scores and each worker's agreement
with them.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from crowdlearn.aggregation.comparisons._base import (
    BaseComparisonAggregator,
    Rows,
    agreement_counts,
    lbfgs,
    log_sigmoid,
    virtual_item_penalty,
)
from crowdlearn.aggregation.comparisons.bradley_terry import bt_start


def negative_log_posterior(
    x: np.ndarray,
    rows: Rows,
    prior: float,
    prior_agree: float,
    prior_reverse: float,
) -> tuple[float, np.ndarray]:
    """Minus the log-posterior of Crowd-BT (eq. 4 and 7) and its gradient.

    ``x`` holds the item scores, then the workers' log-odds of reliability
    ``g_w = logit(eta_w)``.
    """
    n_items = rows.n_items
    scores, g = x[:n_items], x[n_items:]
    # the row's winner beat its loser: d > 0 means the BT model agrees with the row
    d = scores[rows.winner] - scores[rows.loser]
    log_eta, log_not_eta = log_sigmoid(g), log_sigmoid(-g)
    agree_branch = log_eta[rows.worker] + log_sigmoid(d)
    reverse_branch = log_not_eta[rows.worker] + log_sigmoid(-d)
    log_p = np.logaddexp(agree_branch, reverse_branch)
    agree = np.exp(agree_branch - log_p)  # posterior share of "the worker agreed"
    weight = rows.weight
    value = -float(np.dot(weight, log_p))
    # d log P / d d = agree * sigma(-d) - (1 - agree) * sigma(d) = agree - sigma(d)
    d_gradient = -weight * (agree - expit(d))
    score_gradient = np.bincount(rows.winner, d_gradient, n_items)
    score_gradient -= np.bincount(rows.loser, d_gradient, n_items)
    eta = expit(g)
    # d log P / d g = agree * (1 - eta) - (1 - agree) * eta = agree - eta
    g_gradient = -np.bincount(rows.worker, weight * agree, rows.n_workers)
    g_gradient += eta * np.bincount(rows.worker, weight, rows.n_workers)
    penalty, penalty_gradient = virtual_item_penalty(scores, prior)
    value += penalty - float(np.sum(prior_agree * log_eta + prior_reverse * log_not_eta))
    g_gradient -= prior_agree * (1.0 - eta) - prior_reverse * eta
    return value, np.concatenate([score_gradient + penalty_gradient, g_gradient])


class CrowdBT(BaseComparisonAggregator):
    """Crowd-BT (Chen et al., WSDM 2013): BT scores and a reliability per worker.

    Parameters
    ----------
    prior : float, default 0.5
        Virtual wins and losses of every item against a virtual item of score 0 (the
        paper's regulariser; > 0).
    prior_agree, prior_reverse : float, default 4.0 and 1.0
        Beta prior on each reliability ``eta``: pseudo-comparisons in which the worker
        agreed with, or reversed, the model (> 0). The default leans to reliable
        workers (prior mean 0.8) with the weight of five comparisons.
    max_iter : int, default 500
        L-BFGS iterations.
    tol : float, default 1e-9
        L-BFGS tolerance on the relative decrease of the objective and on its gradient.

    Attributes
    ----------
    scores_ : ndarray (n_items,)
        Centred scores (higher = preferred).
    reliability_ : ndarray (n_workers,)
        ``eta_w``: the probability that worker ``w`` reports the model's preference
        rather than its reverse (0.5: random, below 0.5: reversed).
    n_iter_ : int
    converged_ : bool
    item_ids_, worker_ids_ : ndarray

    Examples
    --------
    >>> from crowdlearn.data import Comparisons
    >>> data = Comparisons.from_arrays(
    ...     worker=["w1", "w1", "w2", "w2", "w3"], left=["a", "b", "a", "b", "a"],
    ...     right=["b", "c", "b", "c", "c"], label=["a", "b", "a", "b", "a"],
    ... )
    >>> model = CrowdBT().fit(data)
    >>> [str(data.item_ids[i]) for i in model.scores_.argsort()[::-1]]
    ['a', 'b', 'c']
    >>> bool(model.reliability_.min() > 0.5)
    True
    """

    worker_attributes = ("reliability_",)

    def __init__(
        self,
        prior: float = 0.5,
        prior_agree: float = 4.0,
        prior_reverse: float = 1.0,
        max_iter: int = 500,
        tol: float = 1e-9,
    ) -> None:
        self.prior = prior
        self.prior_agree = prior_agree
        self.prior_reverse = prior_reverse
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, rows: Rows) -> np.ndarray:
        start = bt_start(rows, self.prior)
        agreed = agreement_counts(rows, start)
        total = np.bincount(rows.worker, rows.weight, rows.n_workers)
        eta = (agreed + self.prior_agree) / (total + self.prior_agree + self.prior_reverse)
        x0 = np.concatenate([start, logit(eta)])
        x, self.n_iter_, self.converged_ = lbfgs(
            lambda x: negative_log_posterior(
                x, rows, self.prior, self.prior_agree, self.prior_reverse
            ),
            x0,
            self.max_iter,
            self.tol,
        )
        self.reliability_ = expit(x[rows.n_items :])
        return x[: rows.n_items]
