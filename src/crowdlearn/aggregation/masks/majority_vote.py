"""Per-pixel majority vote of binary masks.

A pixel is foreground when at least half of the task's workers marked it
(``2 * votes - k >= 0``: ties go to foreground, the rule of crowd-kit's
SegmentationMajorityVote, so the two agree on every pixel). One streamed pass.
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation.masks._base import BaseMaskAggregator
from crowdlearn.data.masks import Masks


class MaskMajorityVote(BaseMaskAggregator):
    """Per-pixel majority vote (ties: foreground).

    Attributes
    ----------
    agreement_ : ndarray of shape (n_tasks,)
        Mean IoU of each task's worker masks with the result.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.data import Masks
    >>> a = np.array([[1, 1], [0, 0]], bool)
    >>> b = np.array([[1, 0], [0, 0]], bool)
    >>> m = MaskMajorityVote().fit(Masks.from_arrays([0, 0, 0], [1, 2, 3], [a, a, b]))
    >>> m.masks_(0).astype(int).tolist()
    [[1, 1], [0, 0]]
    """

    def _fit(self, data: Masks) -> None:
        pass

    def _aggregate(self, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
        votes = masks.sum(axis=0, dtype=np.int64)
        return 2 * votes - len(masks) >= 0
