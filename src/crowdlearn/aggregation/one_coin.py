"""One-coin Dawid-Skene: each worker has a single accuracy.

The restriction of Dawid & Skene (1979) in which worker ``j`` answers the true class
with probability ``s_j`` and each wrong class with probability ``(1 - s_j) / (K - 1)``
(the "one-coin" model, e.g. Zhang, Chen, Zhou & Jordan, "Spectral methods meet EM",
NeurIPS 2014). EM:

* M-step: ``s_j`` = mean over worker ``j``'s annotations of the posterior probability
  that the given label is the true class; ``rho`` = mean posterior.
* E-step: ``log T_ik = log rho_k + sum_a log P(y_a | z_i = k)`` (see
  :mod:`crowdlearn.aggregation._correctness`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.aggregation._base import IterativeAggregator, TieBreak, float_dtype
from crowdlearn.aggregation._correctness import correctness_log_scores, posterior_of_given_label
from crowdlearn.aggregation._design import (
    FLOOR,
    class_priors,
    normalise_log,
    vote_posteriors,
)
from crowdlearn.aggregation.dawid_skene import Init
from crowdlearn.data import CrowdData


class OneCoinDawidSkene(IterativeAggregator):
    """Dawid-Skene with one accuracy per worker, errors spread evenly.

    Parameters
    ----------
    max_iter : int, default 100
    tol : float, default 1e-5
        Stop when the log-likelihood per annotation changes by less than this.
    init : {"naive_soft", "majority_vote"}, default "naive_soft"
    dtype : {"float64", "float32"}, default "float64"
    tie_break : {"random", "lowest"}, default "random"
    random_state : int, default 0
    progress : bool, default False

    Attributes
    ----------
    probas_, labels_
    skills_ : ndarray (n_workers,)
        Probability that each worker answers the true class (clipped to [1e-10, 1 - 1e-10]).
    confusions_ : ndarray (n_workers, n_classes, n_classes)
        The matrices those accuracies imply.
    priors_ : ndarray (n_classes,)
    history_, n_iter_, converged_

    Examples
    --------
    >>> from crowdlearn.simulate import hammer_spammer
    >>> data = hammer_spammer(n_worker=10, n_task=200, n_classes=3, ratio=0.3, feedback=4)
    >>> skills = OneCoinDawidSkene().fit(data).skills_
    >>> bool(skills[:7].min() > 0.9 and skills[7:].max() < 0.6)  # hammers, then spammers
    True
    """

    worker_attributes = ("skills_", "confusions_")
    accepts_anonymous = False

    def __init__(
        self,
        max_iter: int = 100,
        tol: float = 1e-5,
        init: Init = "naive_soft",
        dtype: str = "float64",
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        progress: bool = False,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.dtype = dtype
        self.tie_break = tie_break
        self.random_state = random_state
        self.progress = progress

    def _initialize(self, data: CrowdData, **_: Any) -> None:
        self._dtype = float_dtype(self.dtype)
        self._annotated = data.feedback_effort > 0
        self.probas_ = vote_posteriors(data, self._dtype, hard=self.init == "majority_vote")

    def _m_step(self, data: CrowdData) -> None:
        right = posterior_of_given_label(data, self.probas_)
        totals = np.bincount(data.worker, minlength=data.n_workers)
        sums = np.bincount(data.worker, weights=right, minlength=data.n_workers)
        skills = np.divide(sums, totals, out=np.full(data.n_workers, 0.5), where=totals > 0)
        self.skills_ = np.clip(skills, FLOOR, 1 - FLOOR).astype(self._dtype)
        self.priors_ = class_priors(self.probas_, self._annotated).astype(self._dtype)

    def _e_step(self, data: CrowdData) -> float:
        k = data.n_classes
        skill = self.skills_[data.worker]
        log_wrong = np.log((1 - skill) / max(k - 1, 1))
        log_scores = correctness_log_scores(data, np.log(skill), log_wrong, np.log(self.priors_))
        self.probas_, log_norm = normalise_log(log_scores)
        return float(log_norm.sum())

    @property
    def confusions_(self) -> np.ndarray:
        """(n_workers, K, K) matrices with ``skills_`` on the diagonal."""
        k = len(self.priors_)
        off = (1 - self.skills_) / max(k - 1, 1)
        matrices = np.repeat(off[:, None, None], k, axis=1).repeat(k, axis=2)
        matrices[:, np.arange(k), np.arange(k)] = self.skills_[:, None]
        return matrices
