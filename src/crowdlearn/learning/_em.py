"""EM with a network in the loop (DL-EM, CMM): posteriors become the network's targets.

Each trainer epoch is one EM iteration:

1. ``_epoch_start``: the M-step of the crowd parameters (confusion matrices, group
   weights...) from the current posteriors ``targets_``;
2. the epoch: the network is trained on ``targets_`` (soft cross-entropy), which is the
   M-step of the classifier;
3. ``_epoch_end``: the E-step with the updated network gives new ``targets_`` and the
   log-likelihood; when it changes by less than ``tol`` per annotation, training stops.

``n_restarts`` runs the whole fit with seeds ``random_state, random_state + 1, ...`` and
keeps the run with the highest final log-likelihood (as the CMM paper does for DL-EM and
CMM), or, with crowd validation (``valid="crowd"``), the run with the best held-out
score. A subclass implements ``_initial_targets``, ``_m_step`` and ``_e_step``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import clone

from crowdlearn._progress import format_postfix, progress_bar, progress_scope
from crowdlearn.data import CrowdData, TaskInputs
from crowdlearn.learning._trainer import EpochContext
from crowdlearn.learning._validation import CrowdValidation
from crowdlearn.learning.two_stage import _TargetLearner


class EMLearner(_TargetLearner):
    """Base class of EM learners; subclasses store ``tol`` and ``n_restarts``.

    Attributes (after ``fit``)
    --------------------------
    targets_ : ndarray (n_tasks, K)
        Posterior class probabilities of the training tasks after the last E-step.
    log_likelihood_ : float
        Final log-likelihood of the annotations (per annotation).
    restart_log_likelihoods_ : list of float
        The final log-likelihood of every restart (the best one is kept).
    history_
        Also has a ``log_likelihood`` column (per annotation).
    """

    tol: float
    n_restarts: int

    def _fit(self, data: CrowdData, valid: Any) -> None:
        """Run EM (``n_restarts`` times, keeping the most likely run; with crowd
        validation, the run of best held-out score)."""
        if self.n_restarts < 1:
            raise ValueError(f"n_restarts must be at least 1, got {self.n_restarts}")
        if self.n_restarts == 1:
            super()._fit(data, valid)
            self.restart_log_likelihoods_ = [self.log_likelihood_]
            self.chosen_random_state_ = self.random_state
            return
        by_crowd = isinstance(valid, CrowdValidation)
        best, likelihoods = None, []
        with progress_scope(self.progress) as show:
            # one bar over the restarts; each restart's epochs nest under it
            bar = progress_bar(
                range(self.n_restarts),
                progress=show,
                desc=f"{type(self).__name__} restarts",
                unit="restart",
            )
            for restart in bar:
                run = clone(self).set_params(
                    n_restarts=1,
                    random_state=self.random_state + restart,
                    checkpoint_dir=None
                    if self.checkpoint_dir is None
                    else Path(self.checkpoint_dir) / f"restart-{restart}",
                )
                run.fit(data, valid)
                likelihoods.append(run.log_likelihood_)
                if best is None or _better(run, best, by_crowd):
                    best = run  # only the best run so far is kept in memory
                bar.set_postfix(format_postfix({"best_log_likelihood": best.log_likelihood_}))
            bar.close()
        fitted = {name: value for name, value in vars(best).items() if name.endswith("_")}
        vars(self).update(fitted)
        self.restart_log_likelihoods_ = likelihoods
        self.chosen_random_state_ = best.random_state

    # ------------------------------------------------------------------ EM steps

    def _initial_targets(self, data: CrowdData, inputs: TaskInputs) -> np.ndarray:
        raise NotImplementedError

    def _m_step(self, context: EpochContext) -> None:
        raise NotImplementedError

    def _e_step(self, context: EpochContext) -> float:
        """New ``targets_`` from the network and crowd parameters; returns the total
        log-likelihood of the annotations."""
        raise NotImplementedError

    # ------------------------------------------------------------------ trainer hooks

    def _prepare(self, data: CrowdData, inputs: TaskInputs) -> None:
        self.targets_ = np.asarray(self._initial_targets(data, inputs), dtype=np.float32)
        self.log_likelihood_ = -np.inf

    def _epoch_start(self, context: EpochContext) -> None:
        self._m_step(context)

    def _epoch_end(self, context: EpochContext) -> dict[str, float]:
        total = self._e_step(context)
        per_annotation = total / max(context.data.n_annotations, 1)
        change = per_annotation - self.log_likelihood_
        self.log_likelihood_ = per_annotation
        if abs(change) < self.tol:
            context.stop = True
        return {"log_likelihood": per_annotation}

    def _method_state(self) -> dict[str, Any]:
        return {**super()._method_state(), "log_likelihood_": self.log_likelihood_}


def _better(run: EMLearner, best: EMLearner, by_crowd: bool) -> bool:
    if by_crowd:
        return run.valid_score_ > best.valid_score_
    return run.log_likelihood_ > best.log_likelihood_
