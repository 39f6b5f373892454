"""DSWC: Dawid-Skene with worker clusters, by variational EM.

Imamura, Sato and Sugiyama, "Analysis of minimax error rate for crowdsourcing and its
application to worker clustering model", ICML 2018, as peerannot implements it
(``DawidSkeneClust``). Workers fall into ``L`` clusters; cluster ``l`` has one
confusion matrix ``lambda_l[k, m]`` = P(answer ``m`` | true class ``k``). With class
prior ``rho`` and cluster prior ``tau``, task classes ``z_i`` and worker clusters
``c_j`` are latent; the mean-field posterior ``q(z_i = k) = theta_ik``,
``q(c_j = l) = phi_jl`` maximises the evidence lower bound

    ELBO = sum_{i,j,k,l,m} theta_ik phi_jl x_ijm log lambda_l[k, m]
           + sum_ik theta_ik log rho_k + sum_jl phi_jl log tau_l
           - sum_ik theta_ik log theta_ik - sum_jl phi_jl log phi_jl.

With ``N_j[k, m] = sum_i theta_ik x_ijm``, worker ``j``'s expected confusion counts (the
transposed product of the sparse task x (worker, label) design with ``theta``, as in
Dawid-Skene), each step is a sparse or a small dense product:

* E-step (:meth:`DSWC._e_step`), the mean-field updates, both from the previous
  ``theta`` and ``phi`` (as peerannot does):
  ``log phi_jl = log tau_l + sum_{k,m} N_j[k, m] log lambda_l[k, m] + const`` and
  ``log theta_ik = log rho_k + sum_{(j, m) in i} sum_l phi_jl log lambda_l[k, m] + const``,
  the latter through the design and an (n_workers * K, K) table of log confusions, as
  the Dawid-Skene E-step.
* M-step (:meth:`DSWC._m_step`): ``lambda_l`` proportional to ``sum_j phi_jl N_j`` (rows
  normalised), ``rho`` = mean ``theta`` over annotated tasks, ``tau`` = mean ``phi``
  over workers with annotations.

Initialisation (peerannot): ``theta`` = vote frequencies; each worker's own confusion
matrix is estimated from them; workers are sorted by the nuclear norm of that matrix
(most informative first) and split into ``L`` equal groups, which give ``phi`` (one-hot)
and ``lambda_l`` (the mean matrix of group ``l``). If all tasks end up in one class (the
"chance rate" solution), the fit restarts from vote frequencies perturbed by Gaussian
noise of standard deviation 0.1.

Because ``theta`` and ``phi`` are updated together, an iteration can lower the ELBO a
little; the loop stops when it changes by less than ``tol`` per annotation either way.

Departures from peerannot 0.0.1, none of which changes the model: no dense
task x worker x class tensor, and log-space normalisation (peerannot's probability-space
products underflow to NaN with many classes); the initial ``lambda_l`` is the mean of
its group's matrices (peerannot scales the sum by ``L / n_workers``, the mean only when
``L`` divides the number of workers); ``rho`` and ``tau`` average over the tasks and
workers that have annotations (peerannot: over all, and tasks without annotations make
its initial ``theta`` NaN); ``tol`` applies to the ELBO per annotation (peerannot: 1e-4
on the total ELBO, with no bound on the iterations) and ``max_iter`` bounds each run; a
run counts as collapsed when every annotated task puts more than ``1 - 1e-6`` on one
class (peerannot: exactly all the mass); restarts are not made when every annotation has
the same label (one class is then the right answer) and are bounded by ``max_restarts``
(peerannot: ``maxiter``).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, ClassVar, Literal

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from crowdlearn.aggregation._base import IterativeAggregator, TieBreak, float_dtype
from crowdlearn.aggregation._design import (
    class_priors,
    confusion_counts,
    normalise_log,
    normalise_rows,
    vote_posteriors,
    worker_label_design,
)
from crowdlearn.data import CrowdData

#: Standard deviation of the noise on the initial posteriors of a restart (peerannot).
RESTART_NOISE = 0.1
#: A task is "in one class" when that class has more than this posterior probability.
COLLAPSE = 1 - 1e-6


class DSWC(IterativeAggregator):
    """Dawid-Skene with ``n_clusters`` worker clusters sharing confusion matrices.

    Parameters
    ----------
    n_clusters : int, default 2
        Number of worker clusters ``L`` (peerannot's ``L``), between 1 and the number
        of workers: 1 gives every worker the same matrix, more clusters come closer to
        Dawid-Skene's one matrix per worker.
    max_iter : int, default 100
        Maximum number of variational EM iterations per run.
    tol : float, default 1e-6
        Stop when the ELBO per annotation changes by less than this (peerannot stops
        at 1e-4 on the total ELBO: about 1e-7 per annotation on its 2000-annotation
        examples; 1e-4 per annotation stops too early to reproduce its results).
    max_restarts : int, default 10
        Restarts from perturbed vote frequencies while every task falls into one class.
    dtype : {"float64", "float32"}, default "float64"
    tie_break : {"random", "lowest"}, default "random"
    random_state : int, default 0
        Seed of the restarts' noise and of the random tie-break.
    progress : bool or "auto", default "auto"
        Show a progress bar over the iterations.
        "auto": when stderr is a terminal (see :mod:`crowdlearn._progress`).

    Attributes
    ----------
    probas_ : ndarray of shape (n_tasks, n_classes)
        Variational posterior ``theta`` of each task's class (the prior for tasks
        without annotations).
    labels_ : ndarray of shape (n_tasks,)
    memberships_ : ndarray of shape (n_workers, n_clusters)
        Variational posterior ``phi`` of each worker's cluster.
    cluster_confusions_ : ndarray of shape (n_clusters, n_classes, n_classes)
        ``cluster_confusions_[l, k, m]``: probability that a worker of cluster ``l``
        answers ``m`` when the true class is ``k``.
    confusions_ : ndarray of shape (n_workers, n_classes, n_classes)
        The matrix of each worker's most probable cluster (peerannot's ``pi_hat``).
    priors_ : ndarray of shape (n_classes,)
        Class prior ``rho``.
    cluster_priors_ : ndarray of shape (n_clusters,)
        Cluster prior ``tau``.
    n_restarts_ : int
        Restarts made after a run ended with every task in one class.
    history_, n_iter_, converged_
        Of the last run; the objective is the ELBO per annotation. See
        :class:`~crowdlearn.aggregation.IterativeAggregator`.

    Examples
    --------
    >>> from crowdlearn.simulate import student_teacher
    >>> data = student_teacher(n_worker=20, n_task=300, n_classes=3, ratio=0.9, seed=3)
    >>> model = DSWC(n_clusters=2).fit(data)
    >>> model.cluster_confusions_.shape, model.memberships_.shape
    ((2, 3, 3), (20, 2))
    >>> bool((model.labels_ == data.truth).mean() > 0.8)
    True
    """

    worker_attributes = ("memberships_", "confusions_")
    #: Column axis of the pandas forms of a DataFrame fit (memberships: one per cluster).
    attribute_columns: ClassVar[dict[str, str]] = {"memberships_": "cluster"}
    accepts_anonymous = False
    per_worker_confusions = True

    def __init__(
        self,
        n_clusters: int = 2,
        max_iter: int = 100,
        tol: float = 1e-6,
        max_restarts: int = 10,
        dtype: str = "float64",
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        progress: bool | Literal["auto"] = "auto",
    ) -> None:
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.tol = tol
        self.max_restarts = max_restarts
        self.dtype = dtype
        self.tie_break = tie_break
        self.random_state = random_state
        self.progress = progress

    def _fit(self, data: CrowdData, **fit_params: Any) -> None:
        self._check_params(data)
        self._dtype = float_dtype(self.dtype)
        self._design = worker_label_design(data, self._dtype)
        self._annotated = data.feedback_effort > 0
        self._active = data.workload > 0
        self._rng = np.random.default_rng(self.random_state)
        self._perturb = False
        self.n_restarts_ = 0
        super()._fit(data, **fit_params)
        several_labels = data.label.min() != data.label.max()
        while several_labels and self._in_one_class() and self.n_restarts_ < self.max_restarts:
            self.n_restarts_ += 1
            self._perturb = True
            super()._fit(data, **fit_params)
        if several_labels and self._in_one_class():
            warnings.warn(
                f"DSWC put every task in one class after {self.n_restarts_} restarts",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.confusions_ = self.cluster_confusions_[self.memberships_.argmax(axis=1)]

    # ------------------------------------------------------------------ EM steps

    def _initialize(self, data: CrowdData, **_: Any) -> None:
        theta = vote_posteriors(data, self._dtype)
        if self._perturb:
            noise = self._rng.normal(scale=RESTART_NOISE, size=theta.shape)
            theta = normalise_rows(np.clip(theta + noise, 0.0, 1.0)).astype(self._dtype)
        self.probas_ = theta
        self._counts = confusion_counts(self._design, self.probas_, data.n_workers)
        own = normalise_rows(self._counts)
        groups = _nuclear_norm_groups(own, self._n_clusters)
        self.memberships_ = np.eye(self._n_clusters, dtype=self._dtype)[groups]
        sizes = np.bincount(groups, minlength=self._n_clusters)
        sums = np.tensordot(self.memberships_, own, axes=(0, 0))
        self.cluster_confusions_ = (sums / sizes[:, None, None]).astype(self._dtype)
        self.priors_ = class_priors(theta, self._annotated).astype(self._dtype)
        self.cluster_priors_ = self._cluster_priors()
        self._e_step(data)  # posteriors under the initial parameters

    def _m_step(self, data: CrowdData) -> None:
        pooled = np.tensordot(self.memberships_, self._counts, axes=(0, 0))
        self.cluster_confusions_ = normalise_rows(pooled).astype(self._dtype)
        self.priors_ = class_priors(self.probas_, self._annotated).astype(self._dtype)
        self.cluster_priors_ = self._cluster_priors()

    def _e_step(self, data: CrowdData) -> float:
        k, n_clusters = data.n_classes, self._n_clusters
        log_confusions = np.log(self.cluster_confusions_).reshape(n_clusters, k * k)
        # Both updates read the previous theta (through the counts) and phi.
        worker_evidence = self._counts.reshape(data.n_workers, k * k) @ log_confusions.T
        table = (self.memberships_ @ log_confusions).reshape(data.n_workers, k, k)
        task_evidence = self._design @ table.transpose(0, 2, 1).reshape(-1, k)
        self.memberships_, phi_norm = normalise_log(np.log(self.cluster_priors_) + worker_evidence)
        self.probas_, theta_norm = normalise_log(np.log(self.priors_) + task_evidence)
        self._counts = confusion_counts(self._design, self.probas_, data.n_workers)
        # ELBO at the new theta and phi. As theta = softmax(log rho + task_evidence),
        # sum_k theta_ik (log rho_k - log theta_ik) = theta_norm_i - sum_k theta_ik
        # task_evidence_ik; the same holds for phi; the rest is the expected
        # log-likelihood of the annotations.
        likelihood = self._counts.reshape(data.n_workers, k * k) @ log_confusions.T
        return float(
            np.sum(self.memberships_ * likelihood)
            + theta_norm.sum()
            - np.sum(self.probas_ * task_evidence)
            + phi_norm.sum()
            - np.sum(self.memberships_ * worker_evidence)
        )

    def _cluster_priors(self) -> np.ndarray:
        return normalise_rows(self.memberships_[self._active].sum(axis=0)).astype(self._dtype)

    def _in_one_class(self) -> bool:
        """Whether every annotated task puts (almost) all its mass on the same class."""
        theta = self.probas_[self._annotated]
        return bool(np.any(theta.min(axis=0) > COLLAPSE))

    def _check_params(self, data: CrowdData) -> None:
        n_clusters = self.n_clusters
        if not isinstance(n_clusters, numbers.Integral) or isinstance(n_clusters, bool):
            raise ValueError(f"n_clusters must be an integer, got {n_clusters!r}")
        if n_clusters < 1:
            raise ValueError(f"n_clusters must be at least 1, got {n_clusters}")
        self._n_clusters = min(n_clusters, data.n_workers)
        if n_clusters > data.n_workers:
            warnings.warn(
                f"n_clusters={n_clusters} but the data has {data.n_workers} workers; "
                f"using {data.n_workers} clusters (one worker per cluster at most)",
                UserWarning,
                stacklevel=4,
            )
        if not isinstance(self.max_restarts, numbers.Integral) or self.max_restarts < 0:
            raise ValueError(
                f"max_restarts must be a non-negative integer, got {self.max_restarts!r}"
            )


def _nuclear_norm_groups(confusions: np.ndarray, n_groups: int) -> np.ndarray:
    """Group of each worker: workers sorted by decreasing nuclear norm of their confusion
    matrix (ties in worker order) and cut into ``n_groups`` near-equal consecutive runs."""
    n_workers = len(confusions)
    norms = np.linalg.svd(confusions.astype(np.float64), compute_uv=False).sum(axis=1)
    order = np.argsort(-norms, kind="stable")
    bounds = n_workers * np.arange(n_groups + 1) // n_groups
    groups = np.empty(n_workers, dtype=np.intp)
    groups[order] = np.repeat(np.arange(n_groups), np.diff(bounds))
    return groups
