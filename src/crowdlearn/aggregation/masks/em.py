"""Segmentation EM: a one-coin worker model per image, fitted image by image.

Lee, Das Sarma and Parameswaran, "Aggregating Crowdsourced Image Segmentations",
HCOMP 2018 workshops (CEUR Workshop Proceedings 2173), the pixel-level EM of the
paper; crowd-kit 1.4.2 implements it as ``SegmentationEM``. Each task is fitted on its
own (nothing is shared between tasks, so the masks stream one task at a time). Within a
task, worker ``j`` marks each pixel correctly with probability ``a_j`` (one coin: the
same for foreground and background pixels), and pixel ``i`` has its own prior
``pi_i``, first the fraction of workers marking it, then the last posterior.

* M-step: ``a_j = 1 - E[errors_j] / R`` with ``E[errors_j] = |D_j| + sum_i W_i -
  2 sum_i D_ij W_i`` (the expected number of pixels where worker ``j`` and the truth
  differ) and ``R`` the number of pixels that some worker marked (:func:`_accuracy`);
  the first M-step takes ``W`` = the rounded vote fraction (a strict majority);
* E-step: ``W_i = pi_i prod_j c_ij / (pi_i prod_j c_ij + (1 - pi_i) prod_j (1 - c_ij))``
  with ``c_ij = a_j`` where ``D_ij = 1`` and ``1 - a_j`` elsewhere, in log space
  (:func:`_posterior`); posteriors below ``eps`` are set to 0;
* the prior becomes the posterior; iterations stop after ``max_iter`` or when the
  evidence lower bound per mask pixel (:func:`_elbo`) rises by less than ``tol``.

A pixel is foreground when its final posterior exceeds 0.5; a task where no worker
marked anything gets an empty mask.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit, xlogy

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.masks._base import POSITIVE, BaseMaskAggregator
from crowdlearn.data.masks import Masks


def _accuracy(flat: np.ndarray, posterior: np.ndarray, region: int) -> np.ndarray:
    """M-step: each worker's probability of marking a pixel correctly."""
    errors = flat.sum(axis=1) + posterior.sum() - 2 * (flat @ posterior)
    return 1.0 - errors / region


def _posterior(flat: np.ndarray, accuracy: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """E-step: ``W_i`` of every pixel (log space; 0 where both hypotheses are impossible)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_on, log_off = np.log(accuracy)[:, None], np.log1p(-accuracy)[:, None]
        # sum_j log c_ij and sum_j log(1 - c_ij), c_ij = a_j (D=1) or 1 - a_j (D=0);
        # np.where, not a product with the masks: a_j of 0 or 1 gives -inf, and -inf * 0
        # would be NaN
        pos = np.log(prior) + np.where(flat, log_on, log_off).sum(axis=0)
        neg = np.log1p(-prior) + np.where(flat, log_off, log_on).sum(axis=0)
        out = expit(pos - neg)
    out[np.isnan(out)] = 0.0
    return out


def _elbo(
    flat: np.ndarray, accuracy: np.ndarray, prior: np.ndarray, posterior: np.ndarray
) -> float:
    """Evidence lower bound per mask pixel; terms of weight 0 count 0, impossible
    terms of positive weight count as a very large negative number."""
    c = np.where(flat, accuracy[:, None], 1.0 - accuracy[:, None])
    huge = np.finfo(np.float64).max
    with np.errstate(divide="ignore", invalid="ignore"):
        on = np.nan_to_num((np.log(c) + np.log(prior)) * posterior, nan=0.0, neginf=-huge)
        off = np.nan_to_num(
            (np.log1p(-c) + np.log1p(-prior)) * (1.0 - posterior), nan=0.0, neginf=-huge
        )
    with np.errstate(over="ignore"):  # several impossible terms: -inf, as it should be
        value = on.sum() + off.sum() + (-xlogy(posterior, posterior)).sum()
    return float(value) / flat.size


class SegmentationEM(BaseMaskAggregator):
    """Per-image one-coin EM of Lee, Das Sarma and Parameswaran (2018); see the module
    docstring.

    Parameters
    ----------
    max_iter : int
        EM iterations per task.
    tol : float
        Stop when the evidence lower bound per pixel rises by less than this.
    eps : float
        Posteriors below it are set to 0.

    Attributes
    ----------
    agreement_ : ndarray of shape (n_tasks,)
        Mean IoU of each task's worker masks with the result.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.data import Masks
    >>> a = np.array([[1, 1], [0, 0]], bool)
    >>> b = np.array([[1, 0], [0, 1]], bool)
    >>> m = SegmentationEM().fit(Masks.from_arrays([0, 0, 0], [1, 2, 3], [a, a, b]))
    >>> m.masks_(0).astype(int).tolist()
    [[1, 1], [0, 0]]
    """

    param_bounds: ClassVar[dict[str, Bounds]] = {
        "max_iter": Bounds(0, integer=True),  # 0: the initialisation alone
        "tol": Bounds(0),  # 0: run max_iter iterations
        "eps": POSITIVE,
    }

    def __init__(self, max_iter: int = 10, tol: float = 1e-5, eps: float = 1e-15) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.eps = eps

    def _fit(self, data: Masks) -> None:
        pass  # nothing is shared between tasks: each is fitted in _aggregate

    def _aggregate(self, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
        flat = masks.reshape(len(masks), -1)
        region = int(flat.any(axis=0).sum())
        if region == 0:
            return np.zeros(masks.shape[1:], dtype=bool)
        prior = flat.mean(axis=0)
        accuracy = _accuracy(flat, np.round(prior), region)
        loss = -np.inf
        for _ in range(self.max_iter):
            posterior = _posterior(flat, accuracy, prior)
            posterior[posterior < self.eps] = 0.0
            accuracy = _accuracy(flat, posterior, region)
            new_loss = _elbo(flat, accuracy, prior, posterior)
            prior = posterior
            if new_loss - loss < self.tol:
                break
            loss = new_loss
        return (prior > 0.5).reshape(masks.shape[1:])
