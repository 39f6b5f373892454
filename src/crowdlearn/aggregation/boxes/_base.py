"""What every box aggregator shares: the estimator contract, matching the boxes of a
task across workers, and the vectorised consolidation of the matched groups.

Matching (:func:`match_boxes`) follows the consolidation of Amazon SageMaker Ground
Truth's bounding-box tasks (developer guide, "Annotation consolidation: bounding box"):
the boxes of different workers on one image are paired by maximum-IoU bipartite
matching (the Hungarian algorithm, :func:`scipy.optimize.linear_sum_assignment`), a pair
counting when its IoU reaches ``iou_threshold``. Here the workers of a task are taken in
turn (worker-code order); each one's boxes are assigned to the groups built so far
(cost: minus the IoU with each group's current mean box), so that a group never holds
two boxes of one worker; a box left unassigned starts a group. Matching ignores the
class (a wrong class is then out-voted, not a separate object). It is the only step
with a Python loop (over the (task, worker) pairs, once); everything after it is
``np.bincount`` over the group members.

A group is a candidate object. Consolidation (:func:`fuse`) gives it coordinates (a
weighted mean of its members' corners: the fusion of Weighted Boxes Fusion, Solovyev,
Peng and Wang, Image and Vision Computing 2021, eq. 1-2, with worker weights in place of
detector confidences), a class (a weighted vote) and a score in [0, 1].
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from sklearn.exceptions import NotFittedError

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation._kind_base import KindAggregator
from crowdlearn.data.boxes import COORDINATES, Boxes
from crowdlearn.metrics._boxes import box_iou

UNIT_OPEN = Bounds(0, 1, low_open=True)
UNIT = Bounds(0, 1)
POSITIVE = Bounds(0, low_open=True)


class Groups:
    """The matched groups of a :class:`~crowdlearn.data.Boxes`.

    Attributes
    ----------
    row, group, worker : ndarray
        One entry per drawn box: its row in the data, its group, its worker.
    task : ndarray (n_groups,)
        The task of each group.
    seen_group, seen_worker : ndarray
        One entry per (group, worker who saw the group's task): the exposure pairs.
    n_seen : ndarray (n_groups,)
        Number of workers who saw each group's task.
    """

    def __init__(self, data: Boxes, group_of_row: np.ndarray, task: np.ndarray) -> None:
        drawn = np.flatnonzero(group_of_row >= 0)
        self.row = drawn
        self.group = group_of_row[drawn]
        self.worker = data.worker[drawn].astype(np.int64)
        self.label = data.label[drawn].astype(np.int64)
        self.coords = data.coords[drawn]
        self.task = task
        self.n_groups = len(task)
        # distinct (task, worker) pairs that saw a task, then expanded over its groups
        pairs = np.unique(data.task.astype(np.int64) * data.n_workers + data.worker)
        pair_task, pair_worker = pairs // data.n_workers, pairs % data.n_workers
        per_task = np.bincount(pair_task, minlength=data.n_tasks)
        starts = np.concatenate(([0], np.cumsum(per_task)[:-1]))
        size = per_task[task]
        self.seen_group = np.repeat(np.arange(self.n_groups), size)
        offset = np.arange(len(self.seen_group)) - np.repeat(np.cumsum(size) - size, size)
        self.seen_worker = pair_worker[starts[task][self.seen_group] + offset]
        self.n_seen = size.astype(np.float64)
        self.n_members = np.bincount(self.group, minlength=self.n_groups).astype(np.float64)


#: A task whose largest coordinate magnitude lies outside [2**-LIMIT, 2**LIMIT) is
#: aggregated in a unit scaled by a power of two.
RESCALE_LIMIT = 256


def task_exponents(data: Boxes) -> np.ndarray:
    """Per task, the power of two its coordinates are divided by before aggregation: 0
    when their largest magnitude is within ``[2**-RESCALE_LIMIT, 2**RESCALE_LIMIT)`` (or
    all are 0 or the task has no box), else the exponent that brings it into
    ``[0.5, 1)``."""
    drawn = data.drawn
    largest = np.zeros(data.n_tasks)
    np.maximum.at(largest, data.task[drawn], np.abs(data.coords[drawn]).max(axis=1))
    exponent = np.frexp(largest)[1].astype(np.int64)
    exponent[(largest == 0) | (np.abs(exponent) <= RESCALE_LIMIT)] = 0
    return exponent


def scaled_boxes(data: Boxes, exponent: np.ndarray) -> Boxes:
    """``data`` with each task's corners multiplied by ``2**exponent[task]`` (exactly, but
    for corners that underflow to 0)."""
    with np.errstate(under="ignore"):
        coords = np.ldexp(data.coords, exponent[data.task][:, None])
    return Boxes(
        data.task,
        data.worker,
        data.label,
        coords,
        task_ids=data.task_ids,
        worker_ids=data.worker_ids,
        classes=data.classes,
    )


def match_boxes(data: Boxes, iou_threshold: float) -> Groups:
    """Group the boxes of each task across workers (see the module docstring)."""
    drawn = np.flatnonzero(data.drawn)
    order = drawn[np.lexsort((drawn, data.worker[drawn], data.task[drawn]))]
    group_of_row = np.full(data.n_annotations, -1, dtype=np.int64)
    group_task: list[int] = []
    key = data.task[order].astype(np.int64) * data.n_workers + data.worker[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    sums = np.zeros((0, 4))
    counts = np.zeros(0)
    first_group_of_task = 0
    current_task = -1
    for rows in np.split(order, cuts) if len(order) else []:
        task = int(data.task[rows[0]])
        if task != current_task:
            current_task, first_group_of_task = task, len(group_task)
        boxes = data.coords[rows]
        assigned = np.full(len(rows), -1, dtype=np.int64)
        if len(group_task) > first_group_of_task:
            span = slice(first_group_of_task, len(group_task))
            means = sums[span] / counts[span, None]
            iou = box_iou(boxes, means)
            mine, theirs = linear_sum_assignment(-iou)
            ok = iou[mine, theirs] >= iou_threshold
            assigned[mine[ok]] = first_group_of_task + theirs[ok]
        new = np.flatnonzero(assigned < 0)
        assigned[new] = len(group_task) + np.arange(len(new))
        group_task.extend([task] * len(new))
        if len(new):
            sums = np.vstack([sums, np.zeros((len(new), 4))])
            counts = np.concatenate([counts, np.zeros(len(new))])
        sums[assigned] += boxes
        counts[assigned] += 1
        group_of_row[rows] = assigned
    return Groups(data, group_of_row, np.asarray(group_task, dtype=np.int64))


def fuse(groups: Groups, weight: np.ndarray) -> np.ndarray:
    """Weighted mean corners of each group (``weight`` per member, > 0) -> (n_groups, 4)."""
    total = np.bincount(groups.group, weights=weight, minlength=groups.n_groups)
    out = np.empty((groups.n_groups, 4))
    for k in range(4):
        out[:, k] = np.bincount(
            groups.group, weights=weight * groups.coords[:, k], minlength=groups.n_groups
        )
    return out / np.maximum(total, np.finfo(float).tiny)[:, None]


def member_iou(groups: Groups, fused: np.ndarray) -> np.ndarray:
    """IoU of each member box with its group's fused box."""
    a, b = groups.coords, fused[groups.group]
    width = np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0])
    height = np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1])
    inter = np.clip(width, 0, None) * np.clip(height, 0, None)
    union = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = union - inter
    out = np.ones(len(a))  # two identical degenerate boxes agree fully
    np.divide(inter, union, out=out, where=union > 0)
    return out


def vote(groups: Groups, weight: np.ndarray, n_classes: int) -> np.ndarray:
    """The class of each group with the largest total member weight (ties: lowest code)."""
    n = max(n_classes, 1)
    tally = np.bincount(
        groups.group * n + groups.label, weights=weight, minlength=groups.n_groups * n
    ).reshape(groups.n_groups, n)
    return np.argmax(tally, axis=1)


class BaseBoxAggregator(KindAggregator):
    """Base class of box aggregators (scikit-learn estimator contract).

    Subclasses implement ``_consolidate(data, groups)`` returning, per group, the fused
    corners (n_groups, 4), the class code (n_groups,) and the score (n_groups,) in
    [0, 1]; a group is kept as an object when its score is at least ``threshold``.
    ``fit`` then sets:

    - ``groups_``: DataFrame of every candidate group: ``task``, ``class``, the corners,
      ``score``, ``n_workers`` (workers who drew it), ``n_seen`` (who saw the task);
    - ``boxes_``: the kept groups, columns ``task``, ``class``, the corners, ``score``;
    - the per-worker arrays of ``worker_attributes``: ``recall_`` (share of the kept
      objects of the worker's tasks that the worker drew), ``precision_`` (share of the
      worker's boxes in kept objects), ``iou_`` (mean IoU of those boxes with the fused
      box), ``class_accuracy_`` (share of them with the object's class); NaN where the
      worker has nothing to count.
    """

    worker_attributes: ClassVar[tuple[str, ...]] = (
        "recall_",
        "precision_",
        "iou_",
        "class_accuracy_",
    )
    param_bounds: ClassVar[dict[str, Bounds]] = {"iou_threshold": UNIT_OPEN, "threshold": UNIT}
    data_type = Boxes
    build_hint = (
        "build one with Boxes.from_frame(df) (columns task, worker, label, x_min, y_min, "
        "x_max, y_max) or Boxes.from_arrays(...)"
    )
    result = "boxes_"
    frame_kind = "box"

    def _other_forms(self) -> dict[str, pd.DataFrame]:
        """After a DataFrame fit, ``boxes_`` and ``groups_`` name tasks and classes by
        their ids (the ``task`` and ``class`` columns hold codes after a fit on
        :class:`Boxes`)."""
        forms = {}
        for name in ("boxes_", "groups_"):
            table = getattr(self, name).copy()
            table["task"] = np.asarray(self.task_ids_)[table["task"].to_numpy()]
            table["class"] = np.asarray(self.classes_)[table["class"].to_numpy()]
            forms[name] = table
        return forms

    def _fit(self, data: Boxes) -> None:
        """Match and consolidate each task's boxes.

        A task whose coordinates are too large or too small for areas to be computed in
        float64 (largest magnitude ``>= 2**256`` or ``< 2**-256``) is matched and
        consolidated in a unit scaled by a power of two (exact; IoU, weights and scores
        do not depend on the unit) and its boxes are scaled back.
        """
        exponent = task_exponents(data)
        if exponent.any():
            data = scaled_boxes(data, -exponent)
        groups = match_boxes(data, self.iou_threshold)
        fused, label, score = self._consolidate(data, groups)
        corners = fused
        if exponent.any():
            with np.errstate(over="ignore", under="ignore"):
                corners = np.ldexp(fused, exponent[groups.task][:, None])
        frame = pd.DataFrame({"task": groups.task, "class": label.astype(np.int64)})
        for k, name in enumerate(COORDINATES):
            frame[name] = corners[:, k]
        frame["score"] = score
        frame["n_workers"] = groups.n_members.astype(np.int64)
        frame["n_seen"] = groups.n_seen.astype(np.int64)
        self.groups_ = frame
        kept = score >= self.threshold
        self.boxes_ = frame.loc[kept, ["task", "class", *COORDINATES, "score"]].reset_index(
            drop=True
        )
        self._worker_stats(data, groups, kept.astype(np.float64), fused, label)
        self.classes_ = data.classes

    def _consolidate(
        self, data: Boxes, groups: Groups
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _worker_stats(
        self, data: Boxes, groups: Groups, real: np.ndarray, fused: np.ndarray, label: np.ndarray
    ) -> None:
        """The per-worker attributes, given how real each group is (0..1)."""
        n = data.n_workers
        member_real = real[groups.group]
        seen_real = np.bincount(groups.seen_worker, weights=real[groups.seen_group], minlength=n)
        drawn_real = np.bincount(groups.worker, weights=member_real, minlength=n)
        n_boxes = np.bincount(groups.worker, minlength=n).astype(np.float64)
        iou = member_iou(groups, fused)
        right = (groups.label == label[groups.group]).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.recall_ = np.where(seen_real > 0, drawn_real / seen_real, np.nan)
            self.precision_ = np.where(n_boxes > 0, drawn_real / n_boxes, np.nan)
            self.iou_ = np.where(
                drawn_real > 0,
                np.bincount(groups.worker, weights=member_real * iou, minlength=n) / drawn_real,
                np.nan,
            )
            self.class_accuracy_ = np.where(
                drawn_real > 0,
                np.bincount(groups.worker, weights=member_real * right, minlength=n) / drawn_real,
                np.nan,
            )

    def predict(self) -> pd.DataFrame:
        """The consolidated boxes (``boxes_``)."""
        if not hasattr(self, "boxes_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")
        return self.boxes_
