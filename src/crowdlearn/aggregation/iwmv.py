"""IWMV: iterative weighted majority voting.

Li and Yu, "Error rate bounds and iterative weighted majority voting for crowdsourcing",
arXiv:1411.4086, 2014, as peerannot implements it (``IWMV``):

1. start from the plain majority vote ``y^0`` (ties broken at random by default);
2. for ``t = 1..max_iter``: estimate each worker's accuracy against the current labels,
   ``w_j = (1/|T(w_j)|) sum_{i in T(w_j)} 1{y_i^(j) = y_i^(t-1)}``, turn it into a
   weight ``v_j``, and relabel every task by the weighted majority vote
   ``y_i^t = argmax_k sum_{j in A(i)} v_j 1{y_i^(j) = k}``.

The weight is ``v_j = w_j`` in peerannot (``weighting="accuracy"``). Li & Yu use
``v_j = K w_j - 1`` (``weighting="li_yu"``), the weights that optimise their error-rate
bound; to first order around a random guesser (``w_j = 1/K``) they are proportional to
the one-coin log-odds weight ``log((K - 1) w_j / (1 - w_j))``, so a worker at chance level
has no say and a worse one votes against its label. Both steps are single ``np.bincount``
passes (:mod:`crowdlearn.aggregation.weighted_vote`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from crowdlearn.aggregation._base import BaseAggregator, TieBreak, break_ties
from crowdlearn.aggregation.weighted_vote import vote_shares, weighted_scores, worker_accuracy
from crowdlearn.data import CrowdData

Weighting = Literal["accuracy", "li_yu"]


class IWMV(BaseAggregator):
    """Iterative weighted majority vote: worker weights from their agreement with the
    current labels, labels from the weighted vote, repeated.

    Parameters
    ----------
    max_iter : int, default 10
        Rounds of reweighting after the initial majority vote (peerannot's
        ``nb_iter``; ``max_iter=1`` is peerannot's WAWA). The rounds stop early once
        the labels no longer change: later rounds would repeat the same vote.
    weighting : {"accuracy", "li_yu"}, default "accuracy"
        Worker weight from its estimated accuracy ``w_j``: ``w_j`` itself (peerannot)
        or ``K w_j - 1`` (Li & Yu 2014), which may be negative.
    tie_break : {"random", "lowest"}, default "random"
        How every vote, the initial one included, breaks ties between classes.
    random_state : int, default 0
        Seed of the random tie-break (the same draw serves every round).

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        Share of each task's positive weighted score per class in the last vote;
        spread evenly over the top classes where no class scores above zero.
    labels_ : ndarray of shape (n_tasks,)
    skills_ : ndarray of shape (n_workers,)
        Accuracy of each worker against the labels of the previous round (0 for
        workers without annotations).
    weights_ : ndarray of shape (n_workers,)
        The weights of the last vote, derived from ``skills_``.
    n_iter_ : int
        Reweighting rounds run.
    converged_ : bool
        Whether the labels stopped changing before ``max_iter`` rounds.

    Examples
    --------
    >>> from crowdlearn.simulate import hammer_spammer
    >>> data = hammer_spammer(n_worker=10, n_task=200, n_classes=3, ratio=0.3, feedback=4)
    >>> model = IWMV().fit(data)
    >>> bool(model.converged_), bool((model.labels_ == data.truth).mean() > 0.95)
    (True, True)
    """

    worker_attributes = ("skills_", "weights_")
    accepts_anonymous = False

    def __init__(
        self,
        max_iter: int = 10,
        weighting: Weighting = "accuracy",
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
    ) -> None:
        self.max_iter = max_iter
        self.weighting = weighting
        self.tie_break = tie_break
        self.random_state = random_state

    def _fit(self, data: CrowdData) -> None:
        if self.max_iter < 0:
            raise ValueError(f"max_iter must be at least 0, got {self.max_iter}")
        if self.weighting not in ("accuracy", "li_yu"):
            raise ValueError(f"weighting must be 'accuracy' or 'li_yu', got {self.weighting!r}")
        scores = weighted_scores(data, np.ones(data.n_workers))
        labels = self._vote(scores)
        self.converged_ = False
        # max_iter=0: the plain vote, every worker weighted 1
        self.skills_ = worker_accuracy(data, labels)
        self.weights_ = np.ones(data.n_workers)
        self.n_iter_ = 0
        for iteration in range(1, self.max_iter + 1):
            self.skills_ = worker_accuracy(data, labels)
            self.weights_ = self._weights(self.skills_, data.n_classes)
            scores = weighted_scores(data, self.weights_)
            previous, labels = labels, self._vote(scores)
            self.n_iter_ = iteration
            if np.array_equal(labels, previous):
                self.converged_ = True
                break
        self.probas_ = vote_shares(scores)

    def _vote(self, scores: np.ndarray) -> np.ndarray:
        return break_ties(scores, self.tie_break, self.random_state)

    def _weights(self, accuracy: np.ndarray, n_classes: int) -> np.ndarray:
        if self.weighting == "li_yu":
            return n_classes * accuracy - 1.0
        return accuracy
