"""Worker and task scores for bounding boxes.

The boxes of each task are matched across workers and consolidated by majority
(:class:`~crowdlearn.aggregation.boxes.MajorityBoxes`: a group is an object when at
least half of the task's workers drew it); every score below is measured against those
consensus objects, each worker's own boxes included (``np.bincount`` over the matched
groups).

:func:`worker_scores` returns, aligned with the worker codes:

- ``n_tasks``: tasks the worker saw; ``n_boxes``: boxes drawn;
- ``recall``: share of the consensus objects of the worker's tasks that the worker
  drew (NaN when those tasks hold none);
- ``precision``: share of the worker's boxes that belong to a consensus object (NaN
  without boxes);
- ``iou``: mean IoU of those boxes with the consensus box (localisation quality);
- ``class_accuracy``: share of those boxes naming the consensus class.

:func:`task_scores` returns, aligned with the task codes:

- ``n_workers``: workers who saw the task; ``n_boxes``: boxes drawn on it;
- ``n_objects``: consensus objects;
- ``unmatched``: share of the task's boxes outside any consensus object (NaN without
  boxes): false boxes, or objects the workers disagree on;
- ``mean_iou``: mean IoU of the matched boxes with their consensus box (NaN without).

Example
-------
>>> from crowdlearn.data import Boxes
>>> data = Boxes.from_arrays(["t"] * 3, ["a", "b", "c"], ["cat"] * 3,
...                          [0, 0, 50], [0, 0, 50], [10, 10, 60], [10, 10, 60])
>>> worker_scores(data)["precision"].tolist()
[1.0, 1.0, 0.0]
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation.boxes import MajorityBoxes
from crowdlearn.aggregation.boxes._base import (
    match_boxes,
    member_iou,
    scaled_boxes,
    task_exponents,
)
from crowdlearn.data.boxes import COORDINATES, Boxes


def _consensus(data: Boxes) -> tuple[MajorityBoxes, object, np.ndarray, np.ndarray]:
    exponent = task_exponents(data)
    if exponent.any():  # corners near 1e308 or 1e-300: each task in a safe unit
        data = scaled_boxes(data, -exponent)  # the scores here have no unit
    model = MajorityBoxes().fit(data)
    groups = match_boxes(data, model.iou_threshold)
    real = (model.groups_["score"].to_numpy() >= model.threshold)[groups.group]
    fused = model.groups_[list(COORDINATES)].to_numpy(np.float64)
    return model, groups, real, member_iou(groups, fused)


def worker_scores(data: Boxes) -> dict[str, np.ndarray]:
    """Per-worker scores (see the module docstring)."""
    model, _, _, _ = _consensus(data)
    n = data.n_workers
    pairs = np.unique(data.task.astype(np.int64) * n + data.worker)
    return {
        "n_tasks": np.bincount(pairs % n, minlength=n),
        "n_boxes": np.bincount(data.worker[data.drawn], minlength=n),
        "recall": model.recall_,
        "precision": model.precision_,
        "iou": model.iou_,
        "class_accuracy": model.class_accuracy_,
    }


def task_scores(data: Boxes) -> dict[str, np.ndarray]:
    """Per-task scores (see the module docstring)."""
    model, groups, real, iou = _consensus(data)
    t = data.n_tasks
    pairs = np.unique(data.task.astype(np.int64) * data.n_workers + data.worker)
    member_task = groups.task[groups.group]
    n_boxes = np.bincount(member_task, minlength=t).astype(np.float64)
    n_real = np.bincount(member_task, weights=real, minlength=t)
    with np.errstate(invalid="ignore", divide="ignore"):
        unmatched = np.where(n_boxes > 0, 1.0 - n_real / n_boxes, np.nan)
        mean_iou = np.where(
            n_real > 0, np.bincount(member_task, weights=real * iou, minlength=t) / n_real, np.nan
        )
    return {
        "n_workers": np.bincount(pairs // data.n_workers, minlength=t),
        "n_boxes": n_boxes.astype(np.int64),
        "n_objects": np.bincount(model.boxes_["task"].to_numpy(np.int64), minlength=t),
        "unmatched": unmatched,
        "mean_iou": mean_iou,
    }
