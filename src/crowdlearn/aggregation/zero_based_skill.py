"""Zero-Based Skill: worker skills fitted to their agreement with a weighted vote.

The heuristic of crowd-kit's ``ZeroBasedSkill`` (Toloka). Every worker starts with the
skill of a random guesser, ``s_j = 1/K + eps``; then, for ``t = 1..max_iter``:

1. ``labels`` = weighted majority vote with weights ``s`` (ties to the lowest class
   code, as crowd-kit);
2. ``s_j <- s_j + lr_t (a_j - s_j)``, where ``a_j`` is the share of worker ``j``'s
   annotations that equal ``labels``: one gradient step on the squared error
   ``(a_j - s_j)^2 / 2``;

with the learning rate ``lr_t = lr_init * lr_reduce_factor ** (t // lr_steps_to_reduce)``
(crowd-kit halves it at steps 20, 40, ...). The result is the weighted vote with the
final skills. Both steps are single ``np.bincount`` passes
(:mod:`crowdlearn.aggregation.weighted_vote`).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from crowdlearn.aggregation._base import BaseAggregator, TieBreak
from crowdlearn.aggregation.weighted_vote import vote_shares, weighted_scores, worker_accuracy
from crowdlearn.data import CrowdData


class ZeroBasedSkill(BaseAggregator):
    """Weighted majority vote with skills learned by gradient steps toward agreement.

    Parameters
    ----------
    max_iter : int, default 100
        Number of skill updates (crowd-kit's ``n_iter``; all of them are run).
    lr_init : float, default 1.0
        Initial learning rate.
    lr_steps_to_reduce : int, default 20
        The learning rate is multiplied by ``lr_reduce_factor`` every this many steps.
    lr_reduce_factor : float, default 0.5
    eps : float, default 1e-5
        Added to the initial skill ``1 / n_classes`` (crowd-kit's ``eps``).
    tie_break : {"random", "lowest"}, default "random"
        How ``labels_`` breaks ties of the final vote. The votes inside the updates
        break ties to the lowest class code (crowd-kit's rule).
    random_state : int, default 0
        Seed of the random tie-break.

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        Share of each task's skill-weighted votes per class (uniform where no voter
        has a positive skill).
    labels_ : ndarray of shape (n_tasks,)
    skills_ : ndarray of shape (n_workers,)
        Final skills. Workers without annotations keep the initial skill.
    history_ : DataFrame
        One row per update: ``iteration``, ``learning_rate``, ``skill_change`` (largest
        absolute change of a skill), ``labels_changed`` (tasks whose vote changed
        since the previous update) and ``seconds`` since the start of the fit.
    n_iter_ : int
        Updates run (``max_iter``).

    Examples
    --------
    >>> from crowdlearn.simulate import hammer_spammer
    >>> data = hammer_spammer(n_worker=10, n_task=200, n_classes=3, ratio=0.3, feedback=4)
    >>> skills = ZeroBasedSkill().fit(data).skills_
    >>> bool(skills[:7].min() > 0.9 and skills[7:].max() < 0.6)  # hammers, then spammers
    True
    """

    worker_attributes = ("skills_",)
    accepts_anonymous = False

    def __init__(
        self,
        max_iter: int = 100,
        lr_init: float = 1.0,
        lr_steps_to_reduce: int = 20,
        lr_reduce_factor: float = 0.5,
        eps: float = 1e-5,
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
    ) -> None:
        self.max_iter = max_iter
        self.lr_init = lr_init
        self.lr_steps_to_reduce = lr_steps_to_reduce
        self.lr_reduce_factor = lr_reduce_factor
        self.eps = eps
        self.tie_break = tie_break
        self.random_state = random_state

    def _fit(self, data: CrowdData) -> None:
        self._check_params()
        start = time.perf_counter()
        skills = np.full(data.n_workers, 1.0 / data.n_classes + self.eps)
        labels = np.full(data.n_tasks, -1)
        rows = []
        for iteration in range(1, self.max_iter + 1):
            rate = self.lr_init * self.lr_reduce_factor ** (iteration // self.lr_steps_to_reduce)
            previous = labels
            labels = weighted_scores(data, skills).argmax(axis=1)
            step = rate * (worker_accuracy(data, labels, fill=skills) - skills)
            skills = skills + step
            rows.append(
                {
                    "iteration": iteration,
                    "learning_rate": rate,
                    "skill_change": float(np.abs(step).max(initial=0.0)),
                    "labels_changed": int(np.sum(labels != previous)) if iteration > 1 else 0,
                    "seconds": time.perf_counter() - start,
                }
            )
        self.skills_ = skills
        self.probas_ = vote_shares(weighted_scores(data, skills))
        self.n_iter_ = self.max_iter
        self.history_ = pd.DataFrame(
            rows,
            columns=["iteration", "learning_rate", "skill_change", "labels_changed", "seconds"],
        )

    def _check_params(self) -> None:
        if self.max_iter < 0:
            raise ValueError(f"max_iter must be at least 0, got {self.max_iter}")
        if self.lr_steps_to_reduce < 1:
            raise ValueError(
                f"lr_steps_to_reduce must be at least 1, got {self.lr_steps_to_reduce}"
            )
        for name in ("lr_init", "lr_reduce_factor", "eps"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
