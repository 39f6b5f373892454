"""DL-EM: Dawid-Skene with the classifier in place of the class prior, learned by EM.

Raykar, Yu, Zhao, Valadez, Florin, Bogoni & Moy, "Learning from crowds", JMLR 11, 2010
(the multi-class model of its section on multi-class classification): the true class
of instance ``x_i`` follows the classifier, ``P(z_i = k | x_i) = f_k(x_i)``, and annotator
``r`` answers ``l`` to an instance of class ``k`` with probability ``pi_r[k, l]``,
independently of the others, so the likelihood is

    prod_i sum_k f_k(x_i) prod_{a in A(i)} pi_{r_a}[k, y_a].

With a neural network as the classifier this is AggNet (Albarqouni, Baur, Achilles,
Belagiannis, Demirci & Navab, "AggNet: Deep learning from crowds for mitosis detection
in breast cancer histology images", IEEE TMI, 2016) and the "DL-EM" baseline of the
Crowd Mixture Model paper (Mena & Ñanculef, CIARP 2019). Each trainer epoch is one EM
iteration (see :class:`~crowdlearn.learning._em.EMLearner`):

* M-step of the annotators (:meth:`DLEM._m_step`): Raykar's closed-form update, the
  Dawid-Skene M-step ``pi_r[k, l]`` proportional to ``sum_{i: y_i^r = l} T_ik``, as one
  sparse product of the transposed task x (worker, label) design with the posteriors;
* M-step of the classifier: one epoch of soft cross-entropy on the posteriors ``T``
  (a partial M-step, i.e. generalised EM);
* E-step (:meth:`DLEM._e_step`): ``T_ik`` proportional to ``f_k(x_i) prod_a
  pi_{r_a}[k, y_a]``, in log space, as one sparse product of the design with the
  (worker, label) x class table of log confusions, plus ``log f``; it returns the log
  of the likelihood above. Tasks without annotations get ``T_i = f(x_i)``.

EM starts from the vote frequencies (or the majority vote), as Raykar et al. do.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
import scipy.sparse as sp

from crowdlearn.aggregation._design import (
    FLOOR,
    confusion_counts,
    log_confusion_table,
    normalise_log,
    normalise_rows,
    vote_posteriors,
    worker_label_design,
)
from crowdlearn.data import CrowdData, TaskInputs
from crowdlearn.learning._em import EMLearner
from crowdlearn.learning._trainer import EpochContext

Init = Literal["naive_soft", "majority_vote"]


class DLEM(EMLearner):
    """Learning from crowds by EM with a network as the prior (Raykar et al., JMLR 2010).

    Parameters
    ----------
    init : {"naive_soft", "majority_vote"}, default "naive_soft"
        Initial posteriors: the vote frequencies, or the majority classes (ties share
        the mass).
    smoothing : float, default 0.0
        Dirichlet pseudo-count added to every confusion-matrix cell in the M-step.
        With 0, counts are floored at 1e-10 (as in
        :class:`~crowdlearn.aggregation.DawidSkene`).
    tol : float, default 1e-4
        Stop when the log-likelihood per annotation changes by less than this.
    n_restarts : int, default 1
        Run EM with seeds ``random_state, random_state + 1, ...`` and keep the run of
        highest final log-likelihood (the CMM paper uses 20 restarts).
    **training
        The shared training parameters (see :class:`BaseLearner`); ``max_epochs`` is
        the number of EM iterations (the CMM paper uses up to 50).

    Attributes
    ----------
    confusions_ : ndarray (n_workers, K, K)
        ``confusions_[r, k, l]``: probability that worker ``r`` answers ``l`` when the
        true class is ``k``, from the last M-step.
    targets_ : ndarray (n_tasks, K)
        Posterior class probabilities of the training tasks after the last E-step.
    log_likelihood_ : float
        Final log-likelihood per annotation.
    restart_log_likelihoods_ : list of float
        The final log-likelihood of every restart.
    module_, classes_, history_, best_epoch_
        See :class:`BaseLearner`; ``history_`` also has a ``log_likelihood`` column.

    Examples
    --------
    >>> from crowdlearn.simulate import crowd_on_features
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)); y = (X[:, 1] > 0).astype(int)
    >>> crowd = crowd_on_features(X, y, n_workers=8, labels_per_task=3, seed=1)
    >>> model = DLEM(max_epochs=5).fit(crowd)
    >>> model.confusions_.shape
    (8, 2, 2)
    >>> list(model.history_.columns[:3]), "log_likelihood" in model.history_
    (['fold', 'epoch', 'train_loss'], True)
    """

    needs_workers: ClassVar[bool] = True

    def __init__(
        self,
        init: Init = "naive_soft",
        smoothing: float = 0.0,
        tol: float = 1e-4,
        n_restarts: int = 1,
        **training: Any,
    ) -> None:
        self.init = init
        self.smoothing = smoothing
        self.tol = tol
        self.n_restarts = n_restarts
        super().__init__(**training)

    # ------------------------------------------------------------------ EM steps

    def _initial_targets(self, data: CrowdData, inputs: TaskInputs) -> np.ndarray:
        if self.init not in ("naive_soft", "majority_vote"):
            raise ValueError(f"init must be 'naive_soft' or 'majority_vote', got {self.init!r}")
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be non-negative, got {self.smoothing}")
        return vote_posteriors(data, np.float64, hard=self.init == "majority_vote")

    def _m_step(self, context: EpochContext) -> None:
        """Confusion matrices from the posteriors ``targets_`` (the Dawid-Skene M-step)."""
        data = context.data
        counts = confusion_counts(_design(data), self.targets_, data.n_workers)
        self.confusions_ = normalise_rows(counts + self.smoothing)

    def _e_step(self, context: EpochContext) -> float:
        """Posteriors ``T_ik`` proportional to ``f_k(x_i) prod_a pi_{r_a}[k, y_a]``; returns
        ``sum_i log sum_k f_k(x_i) prod_a pi_{r_a}[k, y_a]`` over the annotated tasks."""
        data = context.data
        log_scores = _design(data) @ log_confusion_table(self.confusions_)
        log_scores += np.log(np.maximum(context.classifier_proba(), FLOOR))
        probas, log_norm = normalise_log(log_scores)
        self.targets_ = probas.astype(np.float32)
        return float(log_norm[data.feedback_effort > 0].sum())

    # Crowd validation scores DL-EM by its Dawid-Skene agreement (the base class's
    # default), not by its own likelihood: its maximum-likelihood confusions
    # (smoothing=0) have empty cells, and a held-out annotation in one costs log(1e-10),
    # so on Music its own held-out likelihood fell from the first EM iteration on while
    # the agreement rose (the selection kept iteration 1, test accuracy 0.31).

    def _method_state(self) -> dict[str, Any]:
        return {**super()._method_state(), "confusions_": self.confusions_}


def _design(data: CrowdData) -> sp.csr_matrix:
    # Rebuilt at each step (O(annotations), negligible next to a network epoch) rather
    # than cached, so that a resumed run, which skips ``_prepare``, needs no extra state.
    return worker_label_design(data, np.dtype(np.float64))
