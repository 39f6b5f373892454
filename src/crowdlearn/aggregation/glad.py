"""GLAD: worker ability and task difficulty (Whitehill et al., NeurIPS 2009).

Whitehill, Ruvolo, Wu, Bergsma and Movellan, "Whose vote should count more: optimal
integration of labels from labelers of unknown expertise", NeurIPS 2009. Worker ``j``
has an ability ``alpha_j`` (negative: adversarial) and task ``i`` an inverse
difficulty ``beta_i > 0``, parametrised as ``beta_i = exp(b_i)``. A label is correct
with probability (the paper's eq. 1, peerannot's eq. in sec. 3.1)

    P(y_ij = z_i) = sigma(alpha_j * beta_i)

and otherwise any wrong class with probability ``(1 - sigma(alpha_j beta_i)) / (K - 1)``.
EM with Gaussian priors ``alpha_j ~ N(mu_alpha, 1)``, ``b_i ~ N(mu_b, 1)`` (MAP, as in
the paper's implementation and crowd-kit):

* E-step: posteriors of ``z`` given the parameters (the paper's eq. 3), with the
  shared correctness E-step of :mod:`crowdlearn.aggregation._correctness`.
* M-step: the expected complete-data log-posterior (eq. 4)

      Q = sum_a [p_a log sigma(x_a) + (1 - p_a) (log sigma(-x_a) - log(K - 1))]
          - sum_j (alpha_j - mu_alpha)^2 / 2 - sum_i (b_i - mu_b)^2 / 2,

  with ``x_a = alpha_j exp(b_i)`` and ``p_a`` the posterior that annotation ``a`` is
  right, is increased by block-coordinate Newton steps (the paper maximises the same Q
  by gradient ascent; the optimiser is our choice). Given ``b``, Q is a sum of
  one-dimensional concave functions, one per worker, so every ``alpha_j`` takes a
  Newton step; given ``alpha``, one function per task, and every ``b_i`` takes a
  Fisher-scoring step (the expected Hessian, always negative). Gradients (eq. 5-6) and
  curvatures are ``np.bincount`` over the annotations: ``dQ/dx_a = p_a - sigma(x_a)``,
  ``dx_a/dalpha_j = exp(b_i)``, ``dx_a/db_i = x_a``. Each parameter's step is halved
  until its own term of Q does not decrease, so Q never decreases (generalised EM).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

import crowdlearn.aggregation._kernels as _kernels
from crowdlearn.aggregation._base import IterativeAggregator, TieBreak, float_dtype
from crowdlearn.aggregation._blocks import BlockReader
from crowdlearn.aggregation._correctness import (
    correctness_log_scores,
    correctness_scores,
    posterior_of_given_label,
)
from crowdlearn.aggregation._design import class_priors, normalise_log
from crowdlearn.aggregation._incremental import IncrementalMixin, Merge
from crowdlearn.aggregation._incremental_em import LARGE_BATCH
from crowdlearn.data import CrowdData


class GLAD(IncrementalMixin, IterativeAggregator):
    """GLAD aggregation: worker abilities ``alpha`` and task inverse difficulties ``beta``.

    Parameters
    ----------
    max_iter : int, default 100
        Maximum number of EM iterations.
    tol : float, default 1e-5
        Stop when the EM objective (log-likelihood plus log-prior of the parameters)
        per annotation changes by less than this.
    m_step_max_iter : int, default 3
        Maximum sweeps (a step on every ``alpha_j``, then on every ``b_i``) per M-step;
        a sweep whose largest step is below 1e-6 ends it.
    alpha_prior_mean, log_beta_prior_mean : float, default 1.0
        Means of the Gaussian priors on ``alpha_j`` and ``b_i = log(beta_i)``; they
        are also the initial values.
    class_prior : {"uniform", "learn"}, default "uniform"
        Keep the class prior uniform (Whitehill et al., crowd-kit) or re-estimate it
        from the posteriors at each M-step.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the posteriors; the parameters are optimised in float64.
    tie_break : {"random", "lowest"}, default "random"
    random_state : int, default 0
    progress : bool or "auto", default "auto"
        Show a progress bar over the iterations; "auto": when stderr is a terminal
        (see :mod:`crowdlearn._progress`).
    chunk_size : int, optional
        Run both EM steps on blocks of about this many annotations (whole tasks), so
        that no temporary has the annotations' size: the worker-ability sums are
        accumulated block by block, the task parameters and posteriors are computed
        per block. None (default) works on all annotations at once. Same results
        either way up to floating-point rounding (docs/scale.md).

    Attributes
    ----------
    probas_, labels_
    alphas_ : ndarray (n_workers,)
        Worker abilities (larger is better, 0 is random, negative adversarial).
    betas_ : ndarray (n_tasks,)
        Task inverse difficulties ``exp(b_i)`` (larger is easier); ``1 / betas_`` is the
        difficulty.
    priors_ : ndarray (n_classes,)
    history_, n_iter_, converged_
    crowd_ : CrowdData
        The annotations fitted so far (kept for :meth:`partial_fit`).

    Notes
    -----
    :meth:`partial_fit` merges the new annotations and runs EM on all of them,
    warm-started from the fitted abilities and difficulties (new workers and tasks
    start at the prior means): fewer iterations than a refit, each as costly as a
    refit's. A batch of more than 10 % of all annotations is a refit. It converges to
    a fixed point near the refit's (tested: labels equal on at least 99 % of the
    tasks of simulated crowds; ``python -m benchmarks incremental`` measures it at 1M
    annotations). ``history_`` is the warm EM's.

    Examples
    --------
    >>> from crowdlearn.simulate import discrete_difficulty
    >>> data = discrete_difficulty(n_worker=30, n_task=200, n_classes=3, feedback=6, seed=2)
    >>> glad = GLAD().fit(data)
    >>> glad.alphas_.shape, glad.betas_.shape
    ((30,), (200,))
    """

    worker_attributes = ("alphas_",)
    task_attributes = ("betas_",)
    accepts_anonymous = False
    state_attributes = ("alphas_", "_log_betas", "priors_")

    def __init__(
        self,
        max_iter: int = 100,
        tol: float = 1e-5,
        m_step_max_iter: int = 3,
        alpha_prior_mean: float = 1.0,
        log_beta_prior_mean: float = 1.0,
        class_prior: Literal["uniform", "learn"] = "uniform",
        dtype: str = "float64",
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        progress: bool | Literal["auto"] = "auto",
        chunk_size: int | None = None,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.m_step_max_iter = m_step_max_iter
        self.alpha_prior_mean = alpha_prior_mean
        self.log_beta_prior_mean = log_beta_prior_mean
        self.class_prior = class_prior
        self.dtype = dtype
        self.tie_break = tie_break
        self.random_state = random_state
        self.progress = progress
        self.chunk_size = chunk_size

    def _initialize(self, data: CrowdData, **_: Any) -> None:
        if self.class_prior not in ("uniform", "learn"):
            raise ValueError(f"class_prior must be 'uniform' or 'learn', got {self.class_prior!r}")
        self._dtype = float_dtype(self.dtype)
        self._annotated = data.feedback_effort > 0
        self._log_k_minus_1 = np.log(max(data.n_classes - 1, 1))
        self.alphas_ = np.full(data.n_workers, float(self.alpha_prior_mean))
        self._log_betas = np.full(data.n_tasks, float(self.log_beta_prior_mean))
        self.priors_ = np.full(data.n_classes, 1.0 / data.n_classes)
        warm = getattr(self, "_warm", None)
        if warm is not None:  # partial_fit: start from the previous parameters
            self.alphas_, self._log_betas, self.priors_ = warm
        self._blocks = None if self.chunk_size is None else BlockReader(data, self.chunk_size)
        # Unchunked and large: the annotations as one CSR block for the fused kernels.
        self._fused = None
        self._probas_owned = False
        if self.chunk_size is None and _kernels.active(
            data.n_annotations, _kernels.weight("glad")
        ):
            self._fused = next(iter(BlockReader(data, None)))
        self._e_step(data)  # posteriors under the initial parameters

    def _m_step(self, data: CrowdData) -> None:
        if self._blocks is not None:
            self._chunked_m_step(data)
        elif self._fused is not None and self._fused_m_step():
            pass
        else:
            self._whole_m_step(data)
        if self.class_prior == "learn":
            self.priors_ = class_priors(self.probas_, self._annotated)

    def _whole_m_step(self, data: CrowdData) -> None:
        right = posterior_of_given_label(data, self.probas_).astype(np.float64)
        terms = _QTerms(right, self._log_k_minus_1)
        for _ in range(self.m_step_max_iter):
            beta = np.exp(self._log_betas)[data.task]
            alpha_step = _safeguarded_step(
                self.alphas_,
                self.alpha_prior_mean,
                data.worker,
                lambda alphas, derivatives=True, beta=beta: terms.by_alpha(
                    alphas[data.worker], beta, derivatives
                ),
            )
            alpha = self.alphas_[data.worker]
            beta_step = _safeguarded_step(
                self._log_betas,
                self.log_beta_prior_mean,
                data.task,
                lambda log_betas, derivatives=True, alpha=alpha: terms.by_log_beta(
                    alpha, np.exp(log_betas)[data.task], derivatives
                ),
            )
            if max(alpha_step, beta_step) < 1e-6:
                break

    def _fused_m_step(self) -> bool:
        """:meth:`_whole_m_step` on the fused kernels: the per-worker sums of each
        ``alpha`` Newton step (and halving) in one pass each, and the whole ``log beta``
        step (each task's sums, step and halvings, which involve only its own
        annotations) in one pass; no per-annotation or per-task temporary. False if the
        kernels cannot run."""
        block, probas = self._fused, self.probas_
        k1 = float(self._log_k_minus_1)
        codes = (block.indptr, block.worker, block.label, probas)
        # Each trial of the alphas also writes each task's sums for the log beta step
        # at those alphas; when the last trial is the step taken (the usual case: no
        # halving), the log beta step starts from them instead of computing them again.
        task_sums = np.empty((block.n_tasks, 4))
        last_trial: list[np.ndarray] = []

        def alpha_sums(alphas: np.ndarray, derivatives: bool = True) -> list[np.ndarray]:
            ahead = None if derivatives else task_sums
            sums = _kernels.glad_alpha_sums(
                *codes, alphas, self._log_betas, k1, derivatives, ahead
            )
            if sums is None:
                raise _NoKernel
            if not derivatives:
                last_trial[:] = [alphas.copy()]
            return list(sums)

        try:
            for _ in range(self.m_step_max_iter):
                last_trial.clear()
                alpha_step = newton_step(self.alphas_, self.alpha_prior_mean, alpha_sums)
                taken = bool(last_trial) and np.array_equal(last_trial[0], self.alphas_)
                beta_step = _kernels.glad_beta_newton(
                    *codes,
                    self.alphas_,
                    self._log_betas,
                    k1,
                    self.log_beta_prior_mean,
                    task_sums=task_sums if taken else None,
                )
                if beta_step is None:
                    raise _NoKernel
                if max(alpha_step, beta_step) < 1e-6:
                    break
        except _NoKernel:  # a kernel failed to compile (first M-step): NumPy from here
            self._fused = None
            return False
        return True

    def _chunked_m_step(self, data: CrowdData) -> None:
        """The M-step block by block: per-worker sums accumulated over the blocks for
        each ``alpha`` Newton step (and step halving), then each block's own ``b_i``
        step (a task never spans blocks)."""
        blocks = self._blocks
        probas = self.probas_
        terms_of = self._block_terms

        def alpha_sums(alphas: np.ndarray, derivatives: bool = True) -> list[np.ndarray]:
            totals: list[np.ndarray] | None = None
            for block in blocks:
                terms = terms_of(block, probas)
                beta = np.exp(self._log_betas[block.start : block.stop])[block.task]
                parts = [
                    np.bincount(block.worker, weights=weights, minlength=data.n_workers)
                    for weights in terms.by_alpha(alphas[block.worker], beta, derivatives)
                ]
                if totals is None:
                    totals = parts
                else:
                    for total, part in zip(totals, parts, strict=True):
                        total += part
            assert totals is not None
            return totals

        for _ in range(self.m_step_max_iter):
            alpha_step = newton_step(self.alphas_, self.alpha_prior_mean, alpha_sums)
            beta_step = 0.0
            for block in blocks:
                terms = terms_of(block, probas)
                alpha = self.alphas_[block.worker]
                log_betas = self._log_betas[block.start : block.stop]  # a view: set in place
                step = _safeguarded_step(
                    log_betas,
                    self.log_beta_prior_mean,
                    block.task,
                    lambda values, derivatives=True, a=alpha, b=block, q=terms: q.by_log_beta(
                        a, np.exp(values)[b.task], derivatives
                    ),
                )
                beta_step = max(beta_step, step)
            if max(alpha_step, beta_step) < 1e-6:
                break

    def _block_terms(self, block: Any, probas: np.ndarray) -> _QTerms:
        """Q terms of a block's annotations under the current posteriors."""
        right = probas[block.start : block.stop][block.task, block.label]
        return _QTerms(right.astype(np.float64), self._log_k_minus_1)

    def _e_step(self, data: CrowdData) -> float:
        if self._blocks is not None:
            return self._chunked_e_step(data)
        if self._fused is not None:
            log_likelihood = self._fused_e_step(data)
            if log_likelihood is not None:
                return log_likelihood + self._log_parameter_prior()
        x = self.alphas_[data.worker] * np.exp(self._log_betas[data.task])
        log_correct = log_sigmoid(x)
        log_wrong = (log_correct - x - self._log_k_minus_1).astype(self._dtype)
        log_correct = log_correct.astype(self._dtype)
        log_scores = correctness_log_scores(data, log_correct, log_wrong, np.log(self.priors_))
        self.probas_, log_norm = normalise_log(log_scores)
        return float(log_norm.sum()) + self._log_parameter_prior()

    def _fused_e_step(self, data: CrowdData) -> float | None:
        """The E-step by the fused kernel (None if it cannot run)."""
        block = self._fused
        # This fit's own table is overwritten in place (a previous fit's, which the
        # caller may hold, is not: the first E-step of a fit makes a new one).
        out = self.probas_ if self._probas_owned else None
        if out is None or out.shape != (data.n_tasks, data.n_classes) or out.dtype != self._dtype:
            out = np.empty((data.n_tasks, data.n_classes), dtype=self._dtype)
        log_likelihood = _kernels.glad_e_step(
            block.indptr,
            block.worker,
            block.label,
            self.alphas_,
            self._log_betas,
            float(self._log_k_minus_1),
            np.log(self.priors_),
            out,
        )
        if log_likelihood is None:
            self._fused = None
            return None
        self.probas_ = out
        self._probas_owned = True
        return float(log_likelihood)

    def _chunked_e_step(self, data: CrowdData) -> float:
        """The E-step block by block, into one (n_tasks, K) posterior array."""
        probas = np.empty((data.n_tasks, data.n_classes), dtype=self._dtype)
        log_prior = np.log(self.priors_)
        log_likelihood = 0.0
        for block in self._blocks:
            x = self.alphas_[block.worker] * np.exp(
                self._log_betas[block.start : block.stop][block.task]
            )
            log_correct = log_sigmoid(x)
            log_wrong = (log_correct - x - self._log_k_minus_1).astype(self._dtype)
            log_correct = log_correct.astype(self._dtype)
            log_scores = correctness_scores(
                block.task,
                block.label,
                block.n_tasks,
                data.n_classes,
                log_correct,
                log_wrong,
                log_prior,
            )
            probas[block.start : block.stop], log_norm = normalise_log(log_scores)
            log_likelihood += float(log_norm.sum())
        self.probas_ = probas
        return log_likelihood + self._log_parameter_prior()

    def _partial_update(self, merge: Merge) -> None:
        """EM on the merged annotations, warm-started from the fitted parameters."""
        data = merge.data
        if merge.n_new > LARGE_BATCH * data.n_annotations:
            self._fit(data)  # a large batch: a refit (see IncrementalEMMixin)
            return
        alphas = np.full(data.n_workers, float(self.alpha_prior_mean))
        alphas[merge.worker_map] = self.alphas_
        log_betas = np.full(data.n_tasks, float(self.log_beta_prior_mean))
        log_betas[merge.task_map] = self._log_betas
        priors = np.full(data.n_classes, 1.0 / data.n_classes)
        if self.class_prior == "learn":  # new classes get a uniform share
            priors[merge.class_map] = self.priors_ * len(merge.class_map) / data.n_classes
        self._warm = (alphas, log_betas, priors)
        try:
            self._fit(data)
        finally:
            self._warm = None

    def _log_parameter_prior(self) -> float:
        """Gaussian log-prior of the parameters (up to a constant): part of the MAP
        objective that EM increases."""
        return -0.5 * float(
            np.sum((self.alphas_ - self.alpha_prior_mean) ** 2)
            + np.sum((self._log_betas - self.log_beta_prior_mean) ** 2)
        )

    @property
    def betas_(self) -> np.ndarray:
        """Task inverse difficulties ``exp(b_i)`` (keyed by task id after a fit on a
        DataFrame)."""
        return self._derived("betas_", np.exp(self._log_betas), "task")


class _NoKernel(Exception):
    """The fused kernels cannot run: the M-step falls back to NumPy."""


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """``log(1 / (1 + exp(-x)))`` without overflow: ``min(x, 0) - log1p(exp(-|x|))``
    (2.5x faster than SciPy's ``log_expit``, which dominated GLAD's running time)."""
    tail = -np.abs(x)
    np.exp(tail, out=tail)
    np.log1p(tail, out=tail)
    return np.minimum(x, 0.0) - tail


class _QTerms:
    """Each annotation's term of GLAD's Q and its first and second derivatives.

    ``f(x) = p log sigma(x) + (1 - p) (log sigma(-x) - log(K - 1))
           = log sigma(x) - (1 - p) (x + log(K - 1))``, with ``f' = p - sigma(x)`` and
    ``-f'' = sigma(x) (1 - sigma(x))``.
    """

    def __init__(self, right: np.ndarray, log_k_minus_1: float) -> None:
        self.wrong = 1.0 - right
        self.right = right
        self.log_k_minus_1 = log_k_minus_1

    def value(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The terms, and ``log sigma(x)`` for the derivatives."""
        log_right = log_sigmoid(x)
        return log_right - self.wrong * (x + self.log_k_minus_1), log_right

    def by_alpha(
        self, alpha: np.ndarray, beta: np.ndarray, derivatives: bool = True
    ) -> tuple[np.ndarray, ...]:
        """Terms and their derivatives in ``alpha`` (``dx/dalpha = beta``)."""
        value, log_right = self.value(alpha * beta)
        if not derivatives:
            return (value,)
        sigma = np.exp(log_right)
        return value, (self.right - sigma) * beta, sigma * (1.0 - sigma) * beta**2

    def by_log_beta(
        self, alpha: np.ndarray, beta: np.ndarray, derivatives: bool = True
    ) -> tuple[np.ndarray, ...]:
        """Terms and their derivatives in ``b = log beta`` (``dx/db = x``). Minus the
        second derivative is ``sigma (1 - sigma) x^2 - (p - sigma) x``; where a task's
        sum of it is not safely positive (Q not locally concave in ``b_i``), the expected
        curvature ``sigma (1 - sigma) x^2`` (Fisher scoring) replaces it."""
        x = alpha * beta
        value, log_right = self.value(x)
        if not derivatives:
            return (value,)
        sigma = np.exp(log_right)
        slope = (self.right - sigma) * x
        fisher = sigma * (1.0 - sigma) * x**2
        return value, slope, fisher - slope, fisher


def _safeguarded_step(
    params: np.ndarray,
    prior_mean: float,
    group: np.ndarray,
    terms: Any,
    max_halvings: int = 30,
) -> float:
    """One Newton step on every parameter of a block, in place; returns the largest step.

    The block's objective separates: parameter ``g`` owns the terms of its group plus
    its Gaussian log-prior. ``terms(params)`` gives, per annotation, the term, its slope,
    minus its curvature and optionally a positive fallback curvature used where the
    parameter's total curvature is not safely negative; they are summed per parameter
    by ``np.bincount`` on ``group`` (see :func:`newton_step`).
    """
    n = len(params)

    def sums(values: np.ndarray, derivatives: bool = True) -> list[np.ndarray]:
        return [
            np.bincount(group, weights=weights, minlength=n)
            for weights in terms(values, derivatives)
        ]

    return newton_step(params, prior_mean, sums, max_halvings)


def newton_step(params: np.ndarray, prior_mean: float, sums: Any, max_halvings: int = 30) -> float:
    """:func:`_safeguarded_step` given ``sums(params, derivatives)``: the per-parameter
    sums of the terms (and, with ``derivatives``, of slopes and curvatures). The
    distributed engine passes sums reduced over partitions. Each step is halved until
    that parameter's own objective does not decrease; a parameter that cannot improve
    keeps its value."""
    n = len(params)
    value, slope, curvature, *fallback = sums(params)
    current = value - 0.5 * (params - prior_mean) ** 2
    gradient = slope - (params - prior_mean)
    # minus the second derivative of each parameter's objective (the prior adds 1)
    bend = curvature + 1.0
    if fallback:
        expected = fallback[0] + 1.0
        bend = np.where(bend > 0.5 * expected, bend, expected)
    step = gradient / bend
    worse = np.ones(n, dtype=bool)
    for _ in range(max_halvings):
        trial = params + step
        reached = sums(trial, False)[0] - 0.5 * (trial - prior_mean) ** 2
        worse = reached < current - 1e-12 * np.abs(current)
        if not worse.any():
            break
        step[worse] *= 0.5
    step[worse] = 0.0
    params += step
    return float(np.abs(step).max(initial=0.0))
