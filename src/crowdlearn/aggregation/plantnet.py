"""Pl@ntNet's weighted vote: trust in a worker grows with the classes it identifies.

Lefort, Affouard, Charlier, Lombardo, Chouet, Goëau, Salmon, Bonnet and Joly,
"Cooperative learning of Pl@ntNet's Artificial Intelligence algorithm: how does it work
and how can we improve it?", arXiv:2406.03356, 2024; as peerannot implements it
(``PlantNet``), in the plain crowd setting (no AI vote, no observation authors).

Starting from equal weights ``w_j = log(2.1)``, each iteration

1. labels every task by the weighted majority vote ``y_i = argmax_k conf_i(k)`` with
   ``conf_i(k) = sum_{j in A(i)} w_j 1{y_i^(j) = k}``;
2. validates task ``i`` when ``conf_i(y_i) > theta_conf`` and
   ``acc_i = conf_i(y_i) / sum_k conf_i(k) > theta_acc``;
3. counts, for each worker, the distinct classes it identified correctly on validated
   tasks; each counts ``taxa_votes_weight`` and the sum is rounded to the nearest
   integer (halves to even), giving ``n_j``;
4. sets ``w_j = n_j^alpha - n_j^beta + log(2.1)``,

until ``sum_j |n_j - n_j^old| / n_tasks <= tol`` (``n_j`` no longer changes). The vote is
one ``np.bincount`` (:mod:`crowdlearn.aggregation.weighted_vote`); the distinct classes
are the unique ``worker * K + label`` codes of the validated correct annotations.

Departures from peerannot 0.0.1: peerannot validates the tasks and counts the classes
against the labels of its *first* vote in every iteration, and counts a worker's votes
on any task, validated or not; here both follow the current labels and only validated
tasks count, as the method describes. peerannot breaks ties to the lowest class and
runs at least 7 iterations; here ``tie_break`` applies and the loop stops as soon as
``n_j`` is stable. With the default ``taxa_votes_weight=0.1``, a worker needs six
distinct classes right to reach ``n_j = 1`` (which weighs as much as ``n_j = 0``) and
fifteen for ``n_j = 2``: the weights only move on data with many classes, the setting
of Pl@ntNet (thousands of species).
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation._base import BaseAggregator, TieBreak, break_ties
from crowdlearn.aggregation.weighted_vote import vote_shares, weighted_scores
from crowdlearn.data import CrowdData

#: Weight of a worker who has identified no class yet.
BASE_WEIGHT = float(np.log(2.1))


class PlantNet(BaseAggregator):
    """Weighted majority vote with Pl@ntNet's worker weights and task validation.

    Parameters
    ----------
    alpha, beta : float, default 0.5 and 0.2
        Exponents of the weight ``w_j = n_j^alpha - n_j^beta + log(2.1)``.
    theta_conf : float, default 2.0
        A task is validated when the weight behind its label exceeds this...
    theta_acc : float, default 0.7
        ...and that weight's share of the task's total weight exceeds this.
    taxa_votes_weight : float, default 0.1
        How much one correctly identified class counts toward ``n_j`` (peerannot's
        ``taxa_votes_weight``: a vote on an observation; Pl@ntNet counts a class seen in
        one's own observations fully).
    max_iter : int, default 100
        Maximum number of iterations.
    tol : float, default 1e-5
        Stop when ``sum_j |n_j - n_j^old| / n_tasks`` is at most this.
    tie_break : {"random", "lowest"}, default "random"
        How every weighted vote breaks ties (peerannot: the lowest class).
    random_state : int, default 0
        Seed of the random tie-break.

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        Share of each task's weighted votes per class (uniform without annotations).
    labels_ : ndarray of shape (n_tasks,)
    weights_ : ndarray of shape (n_workers,)
        The worker weights of the final vote.
    valid_ : ndarray of bool, shape (n_tasks,)
        Tasks validated by the final vote (confidence and accuracy thresholds).
    n_iter_ : int
    converged_ : bool
        Whether ``n_j`` became stable before ``max_iter`` iterations.

    Examples
    --------
    >>> from crowdlearn import CrowdData
    >>> data = CrowdData.from_arrays(
    ...     task=[0, 0, 0, 1, 1], worker=[0, 1, 2, 0, 1], label=[2, 2, 2, 0, 1]
    ... )
    >>> model = PlantNet(tie_break="lowest").fit(data)
    >>> model.valid_  # three votes of weight log(2.1) = 0.74 exceed theta_conf = 2
    array([ True, False])
    >>> model.predict()
    array([2, 0])
    """

    worker_attributes = ("weights_",)
    task_attributes = ("valid_",)
    accepts_anonymous = False

    def __init__(
        self,
        alpha: float = 0.5,
        beta: float = 0.2,
        theta_conf: float = 2.0,
        theta_acc: float = 0.7,
        taxa_votes_weight: float = 0.1,
        max_iter: int = 100,
        tol: float = 1e-5,
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
    ) -> None:
        self.alpha = alpha
        self.beta = beta
        self.theta_conf = theta_conf
        self.theta_acc = theta_acc
        self.taxa_votes_weight = taxa_votes_weight
        self.max_iter = max_iter
        self.tol = tol
        self.tie_break = tie_break
        self.random_state = random_state

    def _fit(self, data: CrowdData) -> None:
        self._check_params()
        identified = np.zeros(data.n_workers)
        self.converged_ = False
        # max_iter=0: the vote with the initial weights (no class identified yet)
        self.weights_ = self._weights(identified)
        scores = weighted_scores(data, self.weights_)
        self.valid_ = self._validated(
            scores, break_ties(scores, self.tie_break, self.random_state)
        )
        self.n_iter_ = 0
        for iteration in range(1, self.max_iter + 1):
            self.weights_ = self._weights(identified)
            scores = weighted_scores(data, self.weights_)
            labels = break_ties(scores, self.tie_break, self.random_state)
            self.valid_ = self._validated(scores, labels)
            previous, identified = identified, self._identified(data, labels, self.valid_)
            self.n_iter_ = iteration
            if np.abs(identified - previous).sum() / data.n_tasks <= self.tol:
                self.converged_ = True
                break
        self.probas_ = vote_shares(scores)

    def _weights(self, identified: np.ndarray) -> np.ndarray:
        """Pl@ntNet's weight function of the number of identified classes."""
        return identified**self.alpha - identified**self.beta + BASE_WEIGHT

    def _validated(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Tasks whose label has enough weight behind it, absolutely and relatively."""
        confidence = scores[np.arange(len(labels)), labels]
        totals = scores.sum(axis=1)
        accuracy = np.divide(confidence, totals, out=np.zeros_like(confidence), where=totals > 0)
        return _exceeds(confidence, self.theta_conf) & _exceeds(accuracy, self.theta_acc)

    def _identified(self, data: CrowdData, labels: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """``n_j``: the weighted, rounded number of distinct classes each worker got
        right on validated tasks."""
        right = valid[data.task] & (data.label == labels[data.task])
        pairs = np.unique(data.worker[right].astype(np.int64) * data.n_classes + data.label[right])
        distinct = np.bincount(pairs // data.n_classes, minlength=data.n_workers)
        return np.round(self.taxa_votes_weight * distinct)

    def _check_params(self) -> None:
        if self.max_iter < 0:
            raise ValueError(f"max_iter must be at least 0, got {self.max_iter}")
        for name in ("alpha", "beta", "theta_conf", "theta_acc", "taxa_votes_weight", "tol"):
            value = getattr(self, name)
            if not np.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        for name in ("alpha", "beta", "taxa_votes_weight", "tol"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")


def _exceeds(values: np.ndarray, threshold: float) -> np.ndarray:
    """``values > threshold``, where values equal to the threshold up to rounding (7 votes
    of 10 make an accuracy of 0.7000000000000001) do not count as above it."""
    return (values > threshold) & ~np.isclose(values, threshold, rtol=1e-12, atol=1e-12)
