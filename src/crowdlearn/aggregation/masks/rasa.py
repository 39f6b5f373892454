"""Segmentation RASA: a reliability-weighted vote per image, reweighted by IoU.

Li and Fukumoto, "A Dataset of Crowdsourced Word Sequences: Collections and Answer
Aggregation for Ground Truth Creation", AnnoNLP workshop at EMNLP 2019: RASA weighs
each answer by a reliability that falls with its distance to the current estimate;
crowd-kit 1.4.2 carries it over to masks as ``SegmentationRASA``, with the distance
``1 - IoU``. Each task is fitted on its own (nothing is shared between tasks). Within a
task of ``k`` masks ``D_j``, starting from the weights ``w_j = 1 / k``:

* the weighted vote ``V_i = sum_j w_j D_ij`` and the estimate ``M_i = [V_i >= 0.5]``;
* each worker's distance ``d_j = 1 - IoU(D_j, M)`` (two empty masks: distance 0) and
  the new weights ``w_j`` proportional to ``log(1 / (d_j + eps) + 1)``, normalised to
  sum 1 (:func:`reliability_weights`);
* stop after ``max_iter`` votes or when ``|V - V_prev|^2 / |V|^2 < tol``.

The result is the last estimate ``M``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.masks._base import POSITIVE, BaseMaskAggregator
from crowdlearn.data.masks import Masks


def reliability_weights(flat: np.ndarray, estimate: np.ndarray, eps: float) -> np.ndarray:
    """Normalised weights ``log(1 / (d_j + eps) + 1)``, ``d_j = 1 - IoU(D_j, estimate)``."""
    inter = flat[:, estimate].sum(axis=1)
    union = flat.sum(axis=1) + estimate.sum() - inter
    iou = np.ones(len(flat))
    np.divide(inter, union, out=iou, where=union > 0)
    weights = np.log(1.0 / (1.0 - iou + eps) + 1.0)
    return weights / weights.sum()


class SegmentationRASA(BaseMaskAggregator):
    """RASA for masks (Li and Fukumoto 2019; crowd-kit's SegmentationRASA): see the
    module docstring.

    Parameters
    ----------
    max_iter : int
        Votes per task.
    tol : float
        Stop when the relative squared change of the weighted vote is below this.
    eps : float
        Added to the distances before inverting them.

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
    >>> m = SegmentationRASA().fit(Masks.from_arrays([0, 0, 0], [1, 2, 3], [a, a, b]))
    >>> m.masks_(0).astype(int).tolist()
    [[1, 1], [0, 0]]
    """

    param_bounds: ClassVar[dict[str, Bounds]] = {
        "max_iter": Bounds(0, integer=True),  # 0: the initialisation alone
        "tol": Bounds(0),  # 0: run max_iter iterations
        "eps": POSITIVE,
    }

    def __init__(self, max_iter: int = 10, tol: float = 1e-5, eps: float = 1e-5) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.eps = eps

    def _fit(self, data: Masks) -> None:
        pass  # nothing is shared between tasks: each is fitted in _aggregate

    def _aggregate(self, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
        flat = masks.reshape(len(masks), -1)
        weights = np.full(len(flat), 1.0 / len(flat))
        previous = None
        estimate = weights @ flat >= 0.5  # max_iter=0: the equal-weight vote
        for _ in range(self.max_iter):
            vote = weights @ flat
            estimate = vote >= 0.5
            weights = reliability_weights(flat, estimate, self.eps)
            if previous is not None:
                change = vote - previous
                norm = float(vote @ vote)
                if norm == 0 or float(change @ change) / norm < self.tol:
                    break
            previous = vote
        return estimate.reshape(masks.shape[1:])
