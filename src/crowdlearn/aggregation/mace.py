"""MACE: Multi-Annotator Competence Estimation.

Hovy, Berg-Kirkpatrick, Vaswani and Hovy, "Learning Whom to Trust with MACE", NAACL-HLT
2013. The generative story of the paper's section 2: the true class ``T_i`` of task ``i``
is uniform; on each annotation worker ``j`` spams with probability ``s_j``; a knowing
worker gives the true class, a spamming one draws a label from its own distribution
``theta_j``. So each annotation's likelihood given the true class (the inner factor of
the paper's marginal likelihood) is

    P(A_ij = l | T_i = k) = (1 - s_j) 1{l = k} + s_j theta_j[l].

* E-step (:meth:`MACE._e_step`): ``log T_ik = log(1/K) + sum_{a in i} log P(l_a | k)``. An
  annotation has one value when ``k`` is its label and another for every other class,
  which is the structure of :func:`~crowdlearn.aggregation._correctness.
  correctness_log_scores` (two ``np.bincount``). The posterior that annotation ``a``
  was given knowingly is ``T_{i, l_a} (1 - s_j) / ((1 - s_j) + s_j theta_j[l_a])``; the
  rest of its mass is spamming.
* M-step (:meth:`MACE._m_step`): expected knowing / spamming counts per worker and
  expected spamming counts per (worker, label), reduced with ``np.bincount``, are
  normalised after adding a pseudo-count (``method="em"``), or turned into the
  variational-Bayes weights ``exp(E[log p]) = exp(digamma(c + a) - digamma(sum(c + a)))``
  under Beta / Dirichlet priors (``method="vb"``, the paper's Bayesian variant).

Training keeps, out of ``n_restarts`` random initialisations, the one with the highest
final log marginal likelihood, as in the paper.

Facts taken from crowd-kit 1.4.2's MACE (its initialisation, both M-steps, the default
pseudo-count ``0.01 / K`` and priors) and differences: from the same start the posteriors
agree to about 1e-15. crowd-kit seeds every restart with the same ``random_state``, so
its restarts are one run repeated; here they are different draws. crowd-kit multiplies
probabilities and adds 1e-8 before the log of a task's likelihood (used to pick the
restart); here everything is in log space. crowd-kit indexes its parameters by order of
first appearance of workers and labels but reads the expected spamming counts from a
table sorted by worker and label, which mixes up workers and labels unless the orders agree;
here every array is aligned with the codes.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy.special import digamma, expit

from crowdlearn.aggregation._base import IterativeAggregator, TieBreak, float_dtype
from crowdlearn.aggregation._correctness import correctness_log_scores, posterior_of_given_label
from crowdlearn.aggregation._design import FLOOR, normalise_log, normalise_rows
from crowdlearn.data import CrowdData, CrowdDataError

Method = Literal["em", "vb"]

#: Attributes that make up the fitted state of one restart.
_RESTART_STATE = (
    "probas_",
    "_log_spam",
    "_log_know",
    "_log_thetas",
    "history_",
    "n_iter_",
    "converged_",
)


class MACE(IterativeAggregator):
    """MACE aggregation: a spamming probability and a spamming label distribution per worker.

    Parameters
    ----------
    method : {"vb", "em"}, default "vb"
        M-step: variational Bayes with Beta and Dirichlet priors, or EM with a
        pseudo-count added to the expected counts.
    n_restarts : int, default 10
        Random initialisations; the one with the highest final log marginal likelihood
        is kept. Each restart draws new parameters from one generator seeded with
        ``random_state`` (crowd-kit 1.4.2 re-seeds every restart with the same seed,
        so its restarts are identical).
    max_iter : int, default 50
        Maximum number of EM iterations of each restart.
    tol : float, default 1e-5
        Stop a restart when the log marginal likelihood per annotation changes by less
        than this; ``tol=0`` runs exactly ``max_iter`` iterations, as crowd-kit does.
    smoothing : float, optional
        Pseudo-count of ``method="em"`` (default ``0.01 / n_classes``, the value
        crowd-kit uses).
    alpha, beta : float, default 0.5
        Beta-prior pseudo-counts of spamming and of knowing for ``method="vb"`` (the
        order crowd-kit uses).
    theta_prior : float, default 10.0
        Symmetric Dirichlet pseudo-count of each label of ``theta_j`` for ``method="vb"``.
    default_noise : float, default 0.5
        Spread of the random initialisation: every initial weight (knowing, spamming,
        and each label of ``theta_j``) is drawn from ``U(1, 2 + default_noise)`` and the
        weights are normalised, as in crowd-kit.
    dtype : {"float64", "float32"}, default "float64"
    tie_break : {"random", "lowest"}, default "random"
    random_state : int, default 0
        Seed of the initialisations and of the random tie-break of ``labels_``.
    progress : bool or "auto", default "auto"
        Show a progress bar over the iterations of each restart.
        "auto": when stderr is a terminal (see :mod:`crowdlearn._progress`).

    Attributes
    ----------
    probas_ : ndarray (n_tasks, n_classes)
        Posterior class probabilities (uniform for tasks without annotations).
    labels_ : ndarray (n_tasks,)
    spamming_ : ndarray (n_workers,)
        Probability that each worker spams. With ``method="vb"`` the E-step uses
        sub-normalised weights ``exp(E[log p])``; the attributes are those weights
        renormalised.
    competence_ : ndarray (n_workers,)
        ``1 - spamming_``: probability that each worker knows the answer.
    thetas_ : ndarray (n_workers, n_classes)
        Each worker's label distribution when spamming.
    restart_objectives_ : ndarray (n_restarts_run,)
        Final log marginal likelihood per annotation of every restart.
    history_, n_iter_, converged_
        Of the restart kept; see :class:`~crowdlearn.aggregation.IterativeAggregator`.

    Examples
    --------
    >>> from crowdlearn.simulate import hammer_spammer
    >>> data = hammer_spammer(n_worker=10, n_task=300, n_classes=3, ratio=0.3, feedback=5)
    >>> mace = MACE(n_restarts=3).fit(data)
    >>> (mace.competence_ > 0.9).astype(int)  # seven hammers, then three spammers
    array([1, 1, 1, 1, 1, 1, 1, 0, 0, 0])
    >>> mace.thetas_.shape, mace.restart_objectives_.shape
    ((10, 3), (3,))
    """

    worker_attributes = ("competence_", "spamming_", "thetas_")
    accepts_anonymous = False

    def __init__(
        self,
        method: Method = "vb",
        n_restarts: int = 10,
        max_iter: int = 50,
        tol: float = 1e-5,
        smoothing: float | None = None,
        alpha: float = 0.5,
        beta: float = 0.5,
        theta_prior: float = 10.0,
        default_noise: float = 0.5,
        dtype: str = "float64",
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        progress: bool | Literal["auto"] = "auto",
    ) -> None:
        self.method = method
        self.n_restarts = n_restarts
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.alpha = alpha
        self.beta = beta
        self.theta_prior = theta_prior
        self.default_noise = default_noise
        self.dtype = dtype
        self.tie_break = tie_break
        self.random_state = random_state
        self.progress = progress

    def fit(
        self,
        data: CrowdData | pd.DataFrame,
        initial_spamming: Any = None,
        initial_thetas: Any = None,
    ) -> MACE:
        """Run the restarts on ``data`` and keep the best one.

        Parameters
        ----------
        data : CrowdData or DataFrame
            A (task, worker, label) DataFrame gives pandas results keyed by ids
            (see :meth:`BaseAggregator._present`).
        initial_spamming : array (n_workers,), optional
            Initial spamming probabilities, aligned with the worker codes.
        initial_thetas : array (n_workers, n_classes), optional
            Initial spamming label distributions (rows are normalised). When either
            initial array is given, a single run starts from it (the other parameter
            drawn at random).
        """
        return super().fit(data, initial_spamming=initial_spamming, initial_thetas=initial_thetas)

    def _fit(
        self, data: CrowdData, initial_spamming: Any = None, initial_thetas: Any = None
    ) -> None:
        self._check_params()
        self._dtype = float_dtype(self.dtype)
        k = data.n_classes
        self._smoothing = 0.01 / k if self.smoothing is None else float(self.smoothing)
        best: dict[str, Any] = {}
        objectives = []
        for switch, thetas in self._starts(data, initial_spamming, initial_thetas):
            super()._fit(data, switch=switch, thetas=thetas)
            history = self.history_["objective"]  # empty with max_iter=0
            objectives.append(float(history.iloc[-1]) if len(history) else -np.inf)
            if not best or objectives[-1] > max(objectives[:-1]):
                best = {name: getattr(self, name) for name in _RESTART_STATE}
        for name, value in best.items():
            setattr(self, name, value)
        self.restart_objectives_ = np.array(objectives)
        self.spamming_ = expit(self._log_spam - self._log_know)
        self.competence_ = expit(self._log_know - self._log_spam)
        self.thetas_, _ = normalise_log(self._log_thetas.astype(np.float64))

    def _check_params(self) -> None:
        if self.method not in ("em", "vb"):
            raise ValueError(f"method must be 'em' or 'vb', got {self.method!r}")
        if int(self.n_restarts) != self.n_restarts or self.n_restarts < 1:
            raise ValueError(f"n_restarts must be a positive integer, got {self.n_restarts!r}")
        if self.tol < 0:
            raise ValueError(f"tol must be non-negative, got {self.tol}")
        if self.smoothing is not None and not self.smoothing >= 0:
            raise ValueError(f"smoothing must be non-negative or None, got {self.smoothing}")
        for name in ("alpha", "beta", "theta_prior"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.default_noise >= 0:
            raise ValueError(f"default_noise must be non-negative, got {self.default_noise}")

    def _starts(
        self, data: CrowdData, initial_spamming: Any, initial_thetas: Any
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Initial (spamming, knowing) and theta probabilities of every restart."""
        rng = np.random.default_rng(self.random_state)
        if initial_spamming is None and initial_thetas is None:
            return [self._random_start(rng, data) for _ in range(self.n_restarts)]
        switch, thetas = self._random_start(rng, data)
        if initial_spamming is not None:
            spamming = _given_spamming(initial_spamming, data)
            switch = np.column_stack([spamming, 1 - spamming])
        if initial_thetas is not None:
            thetas = _given_thetas(initial_thetas, data)
        return [(switch, thetas)]

    def _random_start(
        self, rng: np.random.Generator, data: CrowdData
    ) -> tuple[np.ndarray, np.ndarray]:
        """crowd-kit's initialisation: weights from U(1, 2 + default_noise), normalised."""
        high = 2.0 + self.default_noise
        switch = rng.uniform(1.0, high, size=(data.n_workers, 2))
        thetas = rng.uniform(1.0, high, size=(data.n_workers, data.n_classes))
        return normalise_rows(switch), normalise_rows(thetas)

    # ------------------------------------------------------------------ EM steps

    def _initialize(self, data: CrowdData, switch: np.ndarray, thetas: np.ndarray) -> None:
        logs = np.log(np.maximum(switch, FLOOR)).astype(self._dtype)
        self._log_spam, self._log_know = logs[:, 0], logs[:, 1]
        self._log_thetas = np.log(np.maximum(thetas, FLOOR)).astype(self._dtype)
        self._e_step(data)  # posteriors and expected counts under the initial parameters

    def _e_step(self, data: CrowdData) -> float:
        k = data.n_classes
        log_spam_label = self._log_spam[data.worker] + self._log_thetas[data.worker, data.label]
        log_know = self._log_know[data.worker]
        log_given_label = np.logaddexp(log_know, log_spam_label)
        log_prior = np.full(k, -np.log(k), dtype=self._dtype)
        log_scores = correctness_log_scores(data, log_given_label, log_spam_label, log_prior)
        self.probas_, log_norm = normalise_log(log_scores)
        self._knowing = posterior_of_given_label(data, self.probas_) * np.exp(
            log_know - log_given_label
        )
        return float(log_norm.sum())

    def _m_step(self, data: CrowdData) -> None:
        n_workers, k = data.n_workers, data.n_classes
        cell = data.worker.astype(np.int64) * k + data.label
        spam_by_label = np.bincount(
            cell, weights=1.0 - self._knowing, minlength=n_workers * k
        ).reshape(n_workers, k)
        knowing = np.bincount(data.worker, weights=self._knowing, minlength=n_workers)
        switch = np.column_stack([spam_by_label.sum(axis=1), knowing])
        if self.method == "em":
            log_switch = np.log(normalise_rows(switch + self._smoothing))
            log_thetas = np.log(normalise_rows(spam_by_label + self._smoothing))
        else:
            log_switch = _log_variational_weights(switch, np.array([self.alpha, self.beta]))
            log_thetas = _log_variational_weights(spam_by_label, self.theta_prior)
        log_switch = log_switch.astype(self._dtype)
        self._log_spam, self._log_know = log_switch[:, 0], log_switch[:, 1]
        self._log_thetas = log_thetas.astype(self._dtype)


def _log_variational_weights(counts: np.ndarray, prior: Any) -> np.ndarray:
    """``E[log p]`` under the Dirichlet posterior ``counts + prior`` (per row)."""
    posterior = counts + prior
    return digamma(posterior) - digamma(posterior.sum(axis=1, keepdims=True))


def _given_spamming(values: Any, data: CrowdData) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.shape != (data.n_workers,):
        raise CrowdDataError(
            f"initial_spamming has shape {array.shape}, expected ({data.n_workers},) "
            "(one probability per worker code)"
        )
    if not np.all((array >= 0) & (array <= 1)):
        raise CrowdDataError("initial_spamming must hold probabilities in [0, 1]")
    return array


def _given_thetas(values: Any, data: CrowdData) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    expected = (data.n_workers, data.n_classes)
    if array.shape != expected:
        raise CrowdDataError(
            f"initial_thetas has shape {array.shape}, expected {expected} (workers x classes)"
        )
    if not np.all(np.isfinite(array)) or np.any(array < 0) or np.any(array.sum(axis=1) <= 0):
        raise CrowdDataError(
            "initial_thetas must be finite and non-negative with a positive sum per worker"
        )
    return array / array.sum(axis=1, keepdims=True)
