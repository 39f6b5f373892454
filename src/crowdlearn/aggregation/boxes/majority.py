"""Majority consolidation of matched boxes, with plain or IoU-weighted fusion.

After matching (:func:`~crowdlearn.aggregation.boxes._base.match_boxes`), a group is an
object when at least ``threshold`` (default one half) of the workers who saw its task
drew it: the existence rule of Amazon SageMaker Ground Truth's bounding-box
consolidation, which keeps a matched box when a majority of the workers drew it. Its
class is the plurality of its members' classes (ties: the lowest class code) and its
score the share of the task's workers who drew it.

- :class:`MajorityBoxes` (``majority``): the corners are the mean of the members'
  corners, i.e. Weighted Boxes Fusion (Solovyev, Peng and Wang, Image and Vision
  Computing 2021, eq. 1-2) with equal confidences.
- :class:`WeightedBoxFusion` (``wbf``): WBF eq. 1-2 with each member's confidence set
  to its IoU with the group's mean box (a box that agrees with the others pulls
  harder; a loose or shifted one less), recomputed ``n_rounds`` times.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation.boxes._base import BaseBoxAggregator, Groups, fuse, member_iou, vote
from crowdlearn.data.boxes import Boxes


class MajorityBoxes(BaseBoxAggregator):
    """Objects drawn by a majority of the task's workers, corners averaged.

    Parameters
    ----------
    iou_threshold : float in (0, 1], default 0.5
        Two boxes of different workers can be matched when their IoU reaches it.
    threshold : float in [0, 1], default 0.5
        Share of the task's workers who must draw a group for it to be kept.

    Examples
    --------
    >>> from crowdlearn.data import Boxes
    >>> data = Boxes.from_arrays(["img"] * 4, ["a", "b", "c", "c"], ["cat"] * 4,
    ...     [0, 2, 0, 50], [0, 0, 2, 50], [10, 12, 10, 60], [10, 10, 12, 60])
    >>> model = MajorityBoxes().fit(data)
    >>> model.boxes_[["x_min", "y_min", "x_max", "y_max", "score"]].round(2).values.tolist()
    [[0.67, 0.67, 10.67, 10.67, 1.0]]
    >>> model.groups_["score"].round(2).tolist()  # c's second box: 1 worker of 3
    [1.0, 0.33]
    """

    def __init__(self, iou_threshold: float = 0.5, threshold: float = 0.5) -> None:
        self.iou_threshold = iou_threshold
        self.threshold = threshold

    def _weights(self, groups: Groups) -> np.ndarray:
        return np.ones(len(groups.group))

    def _consolidate(
        self, data: Boxes, groups: Groups
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        weight = self._weights(groups)
        fused = fuse(groups, weight)
        label = vote(groups, np.ones(len(groups.group)), data.n_classes)
        score = groups.n_members / groups.n_seen
        return fused, label, score


class WeightedBoxFusion(MajorityBoxes):
    """Majority existence, corners fused with weights = IoU with the mean box.

    Parameters
    ----------
    iou_threshold, threshold : see :class:`MajorityBoxes`
    n_rounds : int >= 1, default 2
        Times the weights are recomputed from the current fused box.

    Examples
    --------
    >>> from crowdlearn.data import Boxes
    >>> data = Boxes.from_arrays(["img"] * 3, ["a", "b", "c"], ["cat"] * 3,
    ...     [0, 0, 0], [0, 0, 0], [10, 10, 14], [10, 10, 10])
    >>> float(WeightedBoxFusion().fit(data).boxes_["x_max"][0].round(2))
    11.25
    """

    param_bounds: ClassVar[dict[str, Bounds]] = {
        **BaseBoxAggregator.param_bounds,
        "n_rounds": Bounds(1, integer=True),
    }

    def __init__(
        self, iou_threshold: float = 0.5, threshold: float = 0.5, n_rounds: int = 2
    ) -> None:
        super().__init__(iou_threshold=iou_threshold, threshold=threshold)
        self.n_rounds = n_rounds

    def _weights(self, groups: Groups) -> np.ndarray:
        weight = np.ones(len(groups.group))
        for _ in range(int(self.n_rounds)):
            weight = np.maximum(member_iou(groups, fuse(groups, weight)), 1e-6)
        return weight
