"""Noisy Bradley-Terry: BT scores with a skill and a position bias per worker.

The model crowd-kit 1.4.2 calls ``NoisyBradleyTerry`` (after Bugakova, Fedorova,
Gusev and Drutsa, "Aggregation of pairwise comparisons with reduction of biases",
NeurIPS 2019 workshop on Human-in-the-Loop Learning): worker ``w`` follows the
Bradley-Terry model with probability ``a_w = sigma(g_w)`` (the skill) and otherwise
picks the left item with probability ``c_w = sigma(q_w)`` (the position bias),
whatever the items:

    P(w picks left | l, r) = a_w * sigma(s_l - s_r) + (1 - a_w) * c_w.

This module fits it with its own objective (:func:`negative_log_posterior`): the
vectorised minus log-likelihood in log space (``logaddexp`` of the two branches), a
virtual-item regulariser on the scores (``prior`` virtual wins and losses of each item
against an item of score 0, as in Crowd-BT) and an L2 penalty ``worker_l2 / 2`` on
``g`` and ``q`` (so that a worker who always clicks left keeps finite parameters), with
its analytic gradient, minimised by L-BFGS from the Bradley-Terry scores, skills from
each worker's agreement with them and no bias.
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
    x: np.ndarray, rows: Rows, prior: float, worker_l2: float
) -> tuple[float, np.ndarray]:
    """Minus the penalised log-likelihood of the noisy BT model and its gradient.

    ``x`` holds the item scores ``s``, then the skills' log-odds ``g`` and the biases'
    log-odds ``q`` of the workers.
    """
    n_items, n_workers = rows.n_items, rows.n_workers
    scores, g, q = x[:n_items], x[n_items : n_items + n_workers], x[n_items + n_workers :]
    y = rows.sign  # +1: the left item won the row
    yd = y * (scores[rows.left] - scores[rows.right])
    yq = y * q[rows.worker]
    bt_branch = log_sigmoid(g)[rows.worker] + log_sigmoid(yd)
    bias_branch = log_sigmoid(-g)[rows.worker] + log_sigmoid(yq)
    log_p = np.logaddexp(bt_branch, bias_branch)
    share = np.exp(bt_branch - log_p)  # posterior share of the BT branch
    weight = rows.weight
    value = -float(np.dot(weight, log_p))
    d_gradient = -weight * share * y * expit(-yd)
    score_gradient = np.bincount(rows.left, d_gradient, n_items)
    score_gradient -= np.bincount(rows.right, d_gradient, n_items)
    skill = expit(g)
    # d log P / d g = share * (1 - a) - (1 - share) * a = share - a
    g_gradient = -np.bincount(rows.worker, weight * share, n_workers)
    g_gradient += skill * np.bincount(rows.worker, weight, n_workers)
    q_gradient = -np.bincount(rows.worker, weight * (1.0 - share) * y * expit(-yq), n_workers)
    penalty, penalty_gradient = virtual_item_penalty(scores, prior)
    value += penalty + 0.5 * worker_l2 * float(np.dot(g, g) + np.dot(q, q))
    gradient = np.concatenate(
        [score_gradient + penalty_gradient, g_gradient + worker_l2 * g, q_gradient + worker_l2 * q]
    )
    return value, gradient


class NoisyBT(BaseComparisonAggregator):
    """Noisy Bradley-Terry: BT scores, a skill and a left-position bias per worker.

    Parameters
    ----------
    prior : float, default 0.5
        Virtual wins and losses of every item against a virtual item of score 0 (> 0).
    worker_l2 : float, default 0.1
        L2 penalty on the workers' skill and bias log-odds (> 0).
    max_iter : int, default 500
        L-BFGS iterations.
    tol : float, default 1e-9
        L-BFGS tolerance on the relative decrease of the objective and on its gradient.

    Attributes
    ----------
    scores_ : ndarray (n_items,)
        Centred scores (higher = preferred).
    skills_ : ndarray (n_workers,)
        Probability that the worker follows the BT model.
    biases_ : ndarray (n_workers,)
        Probability that the worker, when not following the model, picks the left item.
    n_iter_ : int
    converged_ : bool
    item_ids_, worker_ids_ : ndarray

    Examples
    --------
    >>> from crowdlearn.data import Comparisons
    >>> data = Comparisons.from_arrays(
    ...     worker=["w1", "w1", "w2", "w2", "w3", "w3"], left=["a", "b", "a", "c", "b", "a"],
    ...     right=["b", "c", "c", "b", "a", "c"], label=["a", "b", "a", "b", "a", "a"],
    ... )
    >>> model = NoisyBT().fit(data)
    >>> [str(data.item_ids[i]) for i in model.scores_.argsort()[::-1]]
    ['a', 'b', 'c']
    """

    worker_attributes = ("skills_", "biases_")

    def __init__(
        self,
        prior: float = 0.5,
        worker_l2: float = 0.1,
        max_iter: int = 500,
        tol: float = 1e-9,
    ) -> None:
        self.prior = prior
        self.worker_l2 = worker_l2
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, rows: Rows) -> np.ndarray:
        start = bt_start(rows, self.prior)
        agreed = agreement_counts(rows, start)
        total = np.bincount(rows.worker, rows.weight, rows.n_workers)
        skill = np.clip((agreed + 1.0) / (total + 2.0), 0.05, 0.95)
        x0 = np.concatenate([start, logit(skill), np.zeros(rows.n_workers)])
        x, self.n_iter_, self.converged_ = lbfgs(
            lambda x: negative_log_posterior(x, rows, self.prior, self.worker_l2),
            x0,
            self.max_iter,
            self.tol,
        )
        n_items, n_workers = rows.n_items, rows.n_workers
        self.skills_ = expit(x[n_items : n_items + n_workers])
        self.biases_ = expit(x[n_items + n_workers :])
        return x[:n_items]
