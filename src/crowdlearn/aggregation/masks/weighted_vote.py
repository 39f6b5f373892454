"""Per-pixel majority vote of binary masks with a weight per worker.

A pixel is foreground when the workers who marked it carry at least half of the
total weight of the task's workers, ``2 * sum_j w_j m_j - sum_j w_j >= 0`` (ties go to
foreground, as in :class:`~crowdlearn.aggregation.masks.MaskMajorityVote`): crowd-kit's
``SegmentationMajorityVote(skills=...)``. One streamed pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.aggregation.masks._base import BaseMaskAggregator
from crowdlearn.data.errors import CrowdDataError
from crowdlearn.data.masks import Masks


class WeightedMaskVote(BaseMaskAggregator):
    """Per-pixel vote weighted by worker (ties: foreground).

    Parameters
    ----------
    weights : Mapping or Series keyed by worker id, or array aligned with worker codes
        Each worker's weight (NaN or absent: missing).
    default_weight : float, optional
        Weight of workers without one; None refuses data where such a worker has a mask.

    Attributes
    ----------
    weights_ : ndarray (n_workers,)
        The weight used for each worker code.
    agreement_ : ndarray (n_tasks,)

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.data import Masks
    >>> a = np.array([[1, 1]], bool)
    >>> b = np.array([[0, 1]], bool)
    >>> data = Masks.from_arrays([0, 0, 0], ["x", "y", "z"], [a, b, b])
    >>> vote = WeightedMaskVote(weights={"x": 3.0, "y": 1.0, "z": 1.0}).fit(data)
    >>> vote.masks_(0).astype(int).tolist()
    [[1, 1]]
    """

    worker_attributes = ("weights_",)

    def __init__(self, weights: Any = None, default_weight: float | None = None) -> None:
        self.weights = weights
        self.default_weight = default_weight

    def _fit(self, data: Masks) -> None:
        n = len(data.worker_ids)
        if self.weights is None:
            weights = np.ones(n)
        elif isinstance(self.weights, (Mapping, pd.Series)):
            series = pd.Series(self.weights, dtype=np.float64)
            weights = series.reindex(pd.Index(data.worker_ids)).to_numpy(dtype=np.float64)
        else:
            weights = np.array(self.weights, dtype=np.float64)
            if weights.shape != (n,):
                raise CrowdDataError(f"weights has shape {weights.shape}, expected ({n},)")
        missing = np.isnan(weights)
        if missing.any():
            if self.default_weight is None:
                raise CrowdDataError(
                    f"no weight for {int(missing.sum())} worker(s); give their weights or a "
                    "default_weight"
                )
            weights = np.where(missing, float(self.default_weight), weights)
        self.weights_ = weights

    def _aggregate(self, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
        w = self.weights_[workers]
        score = np.tensordot(w, masks.astype(np.float64), axes=1)
        return 2 * score - w.sum() >= 0
