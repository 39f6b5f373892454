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
  right, is maximised over all ``alpha`` and ``b`` at once with L-BFGS-B. Its
  gradient (eq. 5-6) is two ``np.bincount`` over the annotations:
  ``dQ/dx_a = p_a - sigma(x_a)``, ``dx_a/dalpha_j = exp(b_i)``, ``dx_a/db_i = x_a``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from crowdlearn.aggregation._base import IterativeAggregator, TieBreak, float_dtype
from crowdlearn.aggregation._correctness import correctness_log_scores, posterior_of_given_label
from crowdlearn.aggregation._design import class_priors, normalise_log
from crowdlearn.data import CrowdData


class GLAD(IterativeAggregator):
    """GLAD aggregation: worker abilities ``alpha`` and task inverse difficulties ``beta``.

    Parameters
    ----------
    max_iter : int, default 100
        Maximum number of EM iterations.
    tol : float, default 1e-5
        Stop when the EM objective (log-likelihood plus log-prior of the parameters)
        per annotation changes by less than this.
    m_step_max_iter : int, default 25
        L-BFGS-B iterations per M-step.
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
    progress : bool, default False

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

    def __init__(
        self,
        max_iter: int = 100,
        tol: float = 1e-5,
        m_step_max_iter: int = 25,
        alpha_prior_mean: float = 1.0,
        log_beta_prior_mean: float = 1.0,
        class_prior: Literal["uniform", "learn"] = "uniform",
        dtype: str = "float64",
        tie_break: TieBreak = "random",
        random_state: int | None = 0,
        progress: bool = False,
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

    def _initialize(self, data: CrowdData, **_: Any) -> None:
        if self.class_prior not in ("uniform", "learn"):
            raise ValueError(f"class_prior must be 'uniform' or 'learn', got {self.class_prior!r}")
        self._dtype = float_dtype(self.dtype)
        self._annotated = data.feedback_effort > 0
        self._log_k_minus_1 = np.log(max(data.n_classes - 1, 1))
        self.alphas_ = np.full(data.n_workers, float(self.alpha_prior_mean))
        self._log_betas = np.full(data.n_tasks, float(self.log_beta_prior_mean))
        self.priors_ = np.full(data.n_classes, 1.0 / data.n_classes)
        self._e_step(data)  # posteriors under the initial parameters

    def _m_step(self, data: CrowdData) -> None:
        right = posterior_of_given_label(data, self.probas_).astype(np.float64)
        start = np.concatenate([self.alphas_, self._log_betas])
        result = minimize(
            _negative_q,
            start,
            args=(
                data,
                right,
                self._log_k_minus_1,
                self.alpha_prior_mean,
                self.log_beta_prior_mean,
            ),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": self.m_step_max_iter},
        )
        self.alphas_ = result.x[: data.n_workers]
        self._log_betas = result.x[data.n_workers :]
        if self.class_prior == "learn":
            self.priors_ = class_priors(self.probas_, self._annotated)

    def _e_step(self, data: CrowdData) -> float:
        x = self.alphas_[data.worker] * np.exp(self._log_betas[data.task])
        log_correct = log_expit(x).astype(self._dtype)
        log_wrong = (log_expit(-x) - self._log_k_minus_1).astype(self._dtype)
        log_scores = correctness_log_scores(data, log_correct, log_wrong, np.log(self.priors_))
        self.probas_, log_norm = normalise_log(log_scores)
        return float(log_norm.sum()) + self._log_parameter_prior()

    def _log_parameter_prior(self) -> float:
        """Gaussian log-prior of the parameters (up to a constant): part of the MAP
        objective that EM increases."""
        return -0.5 * float(
            np.sum((self.alphas_ - self.alpha_prior_mean) ** 2)
            + np.sum((self._log_betas - self.log_beta_prior_mean) ** 2)
        )

    @property
    def betas_(self) -> np.ndarray:
        """Task inverse difficulties ``exp(b_i)``."""
        return np.exp(self._log_betas)


def _negative_q(
    parameters: np.ndarray,
    data: CrowdData,
    right: np.ndarray,
    log_k_minus_1: float,
    alpha_mean: float,
    log_beta_mean: float,
) -> tuple[float, np.ndarray]:
    """Minus the M-step objective Q of GLAD, and its gradient, over (alpha, b)."""
    alphas, log_betas = parameters[: data.n_workers], parameters[data.n_workers :]
    beta = np.exp(log_betas[data.task])
    x = alphas[data.worker] * beta
    q = np.sum(right * log_expit(x) + (1 - right) * (log_expit(-x) - log_k_minus_1))
    q -= 0.5 * (np.sum((alphas - alpha_mean) ** 2) + np.sum((log_betas - log_beta_mean) ** 2))
    slope = right - expit(x)
    grad_alpha = np.bincount(data.worker, weights=slope * beta, minlength=data.n_workers)
    grad_log_beta = np.bincount(data.task, weights=slope * x, minlength=data.n_tasks)
    grad_alpha -= alphas - alpha_mean
    grad_log_beta -= log_betas - log_beta_mean
    return -float(q), -np.concatenate([grad_alpha, grad_log_beta])
