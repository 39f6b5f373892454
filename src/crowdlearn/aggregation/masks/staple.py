"""STAPLE: Simultaneous Truth And Performance Level Estimation.

Warfield, Zou and Wells, "Simultaneous Truth and Performance Level Estimation
(STAPLE): An Algorithm for the Validation of Image Segmentation", IEEE Transactions on
Medical Imaging 23(7), 2004. Each worker ``j`` has a sensitivity ``p_j = P(D_ij = 1 |
T_i = 1)`` and a specificity ``q_j = P(D_ij = 0 | T_i = 0)``; the hidden true label
``T_i`` of pixel ``i`` has the prior ``f(T_i = 1) = pi``. EM (section II of the paper):

* E-step (the paper's ``a_i``, ``b_i`` and ``W_i``):
  ``a_i = pi * prod_{j: D_ij=1} p_j * prod_{j: D_ij=0} (1 - p_j)``,
  ``b_i = (1 - pi) * prod_{j: D_ij=0} q_j * prod_{j: D_ij=1} (1 - q_j)``,
  ``W_i = a_i / (a_i + b_i)``, computed in log space
  (:func:`pixel_posterior`);
* M-step (the paper's update of ``p_j`` and ``q_j``):
  ``p_j = sum_{i: D_ij=1} W_i / sum_i W_i`` and
  ``q_j = sum_{i: D_ij=0} (1 - W_i) / sum_i (1 - W_i)``, the sums over the pixels of the
  tasks worker ``j`` segmented (:func:`_m_step` from per-worker sufficient statistics).

The prior ``pi`` is fixed, as in the paper: by default the fraction of foreground
pixels over all the workers' masks (``prior=`` sets it). The masks are streamed: each
EM iteration is one pass over the tasks, one task in memory at a time, accumulating the
four per-worker sums the M-step needs. The first M-step starts from the soft majority
vote (``W_i`` = the fraction of workers marking pixel ``i``). A pixel is foreground
when ``W_i >= threshold`` (0.5 in the paper).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.masks._base import (
    PROBABILITY,
    BaseMaskAggregator,
)
from crowdlearn.data.masks import Masks

_EPS = 1e-6


def pixel_posterior(masks: np.ndarray, p: np.ndarray, q: np.ndarray, prior: float) -> np.ndarray:
    """``W_i = P(T_i = 1 | D)`` of every pixel of one task (the E-step, in log space).

    Parameters
    ----------
    masks : bool array (k, h, w)
        The task's masks.
    p, q : arrays (k,)
        Sensitivity and specificity of the task's workers (in (0, 1)).
    prior : float
        ``f(T_i = 1)`` in (0, 1).
    """
    return expit(pixel_logit(masks, p, q, prior))


def pixel_logit(masks: np.ndarray, p: np.ndarray, q: np.ndarray, prior: float) -> np.ndarray:
    """``log W_i - log (1 - W_i)`` of every pixel of one task (the arguments of
    :func:`pixel_posterior`), shaped like one mask."""
    flat = masks.reshape(len(masks), -1)
    # log a_i - log b_i = logit(pi) + sum_j [D log p + (1-D) log(1-p)] - [(1-D) log q + D log(1-q)]
    on = np.log(p) - np.log1p(-q)  # weight of D_ij = 1
    off = np.log1p(-p) - np.log(q)  # weight of D_ij = 0
    base = np.log(prior) - np.log1p(-prior) + off.sum()
    logit = base + (on - off) @ flat
    return logit.reshape(masks.shape[1:])


#: Log-odds this close to the threshold's count as equal to it (``W_i >= threshold``
#: then holds): an exact tie in exact arithmetic, such as two workers whose masks and
#: rates mirror each other, comes out a few 1e-16 to either side depending on the order
#: of earlier sums, and relabelling the tasks or workers must not flip such a pixel.
_TIE = 1e-9


class _Stats:
    """Per-worker sums of one pass: sum W D, sum W, sum (1-W)(1-D), sum (1-W)."""

    def __init__(self, n_workers: int) -> None:
        self.wd = np.zeros(n_workers)
        self.w = np.zeros(n_workers)
        self.nn = np.zeros(n_workers)
        self.n = np.zeros(n_workers)

    def add(self, workers: np.ndarray, masks: np.ndarray, posterior: np.ndarray) -> None:
        flat = masks.reshape(len(masks), -1)
        w = posterior.reshape(-1)
        size = w.size
        dw = flat @ w
        d = flat.sum(axis=1, dtype=np.int64)
        total_w = w.sum()
        # workers of one task are distinct: fancy-index += adds once per worker
        self.wd[workers] += dw
        self.w[workers] += total_w
        self.nn[workers] += size - d - total_w + dw
        self.n[workers] += size - total_w


#: A worker whose pixels hold less than half an expected foreground (background) pixel
#: gives no evidence of its sensitivity (specificity): it gets the crowd's.
_EVIDENCE = 0.5


def _m_step(stats: _Stats) -> tuple[np.ndarray, np.ndarray]:
    """Sensitivity and specificity of every worker from the sums of one pass.

    A worker with (almost) no foreground under the current posterior has no evidence
    of its sensitivity: ``sum W D / sum W`` would be 0/0, and a value set from the few
    pixels the prior alone calls foreground collapses to 0 (its background answers
    then say nothing, and its unanimous all-background masks came back foreground
    whenever the prior exceeded one half). Such a worker takes the crowd's
    sensitivity, the ``sum W``-weighted mean over the workers with evidence (0.5 when
    none has any); specificity likewise with ``sum (1 - W)``.
    """
    p = _rates(stats.wd, stats.w)
    q = _rates(stats.nn, stats.n)
    return np.clip(p, _EPS, 1 - _EPS), np.clip(q, _EPS, 1 - _EPS)


def _rates(hits: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``hits / weights`` per worker; the pooled rate where ``weights < _EVIDENCE``."""
    known = weights >= _EVIDENCE
    pooled = hits[known].sum() / weights[known].sum() if known.any() else 0.5
    rates = np.full(len(weights), pooled, dtype=np.float64)
    np.divide(hits, weights, out=rates, where=known)
    return rates


class STAPLE(BaseMaskAggregator):
    """STAPLE (Warfield, Zou and Wells 2004): per-worker sensitivity and specificity by
    EM, one streamed pass over the tasks per iteration (see the module docstring).

    Parameters
    ----------
    prior : float, optional
        ``f(T_i = 1)`` in (0, 1); default: the fraction of foreground pixels over all
        the masks.
    threshold : float
        A pixel is foreground when its posterior is at least this.
    max_iter : int
        EM iterations (passes over the tasks).
    tol : float
        Stop when no sensitivity or specificity moves by more than ``tol``.

    Attributes
    ----------
    sensitivity_, specificity_ : ndarray of shape (n_workers,)
    prior_ : float
    agreement_ : ndarray of shape (n_tasks,)
        Mean IoU of each task's worker masks with the result.
    n_iter_ : int
    converged_ : bool

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.data import Masks
    >>> a = np.array([[1, 1], [0, 0]], bool)
    >>> b = np.array([[1, 1], [1, 1]], bool)
    >>> data = Masks.from_arrays([0, 0, 0], ["w1", "w2", "w3"], [a, a, b])
    >>> model = STAPLE().fit(data)
    >>> model.masks_(0).astype(int).tolist()
    [[1, 1], [0, 0]]
    >>> bool(model.specificity_[2] < model.specificity_[0])
    True
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ("sensitivity_", "specificity_")
    param_bounds: ClassVar[dict[str, Bounds]] = {
        "threshold": PROBABILITY,
        "max_iter": Bounds(0, integer=True),  # 0: the initialisation alone
        "tol": Bounds(0),  # 0: run max_iter iterations
    }

    def __init__(
        self,
        prior: float | None = None,
        threshold: float = 0.5,
        max_iter: int = 30,
        tol: float = 1e-4,
    ) -> None:
        self.prior = prior
        self.threshold = threshold
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, data: Masks) -> None:
        if self.prior is not None:
            problem = PROBABILITY.problem(self.prior)
            if problem is not None:
                raise ValueError(f"STAPLE: prior {problem}")
        # pass 0: the prior and the soft-vote start
        stats = _Stats(data.n_workers)
        on = total = 0
        for _, workers, masks in data.iter_tasks():
            on += int(masks.sum())
            total += masks.size
            stats.add(workers, masks, masks.mean(axis=0))
        prior = float(self.prior) if self.prior is not None else on / total
        self.prior_ = float(np.clip(prior, _EPS, 1 - _EPS))
        p, q = _m_step(stats)
        self.converged_ = False
        self.n_iter_ = 0
        for _ in range(self.max_iter):
            stats = _Stats(data.n_workers)
            for _, workers, masks in data.iter_tasks():
                stats.add(
                    workers, masks, pixel_posterior(masks, p[workers], q[workers], self.prior_)
                )
            new_p, new_q = _m_step(stats)
            change = max(np.abs(new_p - p).max(), np.abs(new_q - q).max())
            p, q = new_p, new_q
            self.n_iter_ += 1
            if change < self.tol:
                self.converged_ = True
                break
        self.sensitivity_ = p
        self.specificity_ = q

    def posterior_(self, t: int) -> np.ndarray:
        """``W_i``, the probability of foreground of every pixel of task code ``t``."""
        self._check_fitted()
        workers, masks = self._data.task_masks(int(t))
        return pixel_posterior(
            masks, self.sensitivity_[workers], self.specificity_[workers], self.prior_
        )

    def _aggregate(self, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
        logit = pixel_logit(
            masks, self.sensitivity_[workers], self.specificity_[workers], self.prior_
        )
        threshold = float(self.threshold)
        with np.errstate(divide="ignore", invalid="ignore"):  # thresholds 0 and 1: +-inf
            cut = np.log(threshold) - np.log1p(-threshold)
            tie = np.abs(logit - cut) <= _TIE
        return (expit(logit) >= threshold) | tie
