"""Worker and task scores for binary segmentation masks.

Masks are streamed one task at a time (:meth:`crowdlearn.data.Masks.iter_tasks`); a
task's pairwise intersections are one matrix product of its flattened masks.

:func:`worker_scores` returns, aligned with the worker codes:

- ``n_masks``: number of masks;
- ``sensitivity``, ``specificity``: the worker's STAPLE estimates
  (:class:`~crowdlearn.aggregation.masks.STAPLE`, Warfield et al. 2004): the
  probability of marking a true foreground pixel, and of leaving a true background
  pixel unmarked;
- ``iou_with_others``: mean, over the worker's masks and the other masks of the same
  tasks, of their intersection over union (leave-one-out; NaN for a worker alone on
  all its tasks).

:func:`task_scores` returns, aligned with the task codes:

- ``n_masks``: number of masks;
- ``agreement``: mean pairwise IoU of the task's masks (NaN for a task with one mask).

Example
-------
>>> import numpy as np
>>> from crowdlearn.data import Masks
>>> a = np.array([[1, 1], [0, 0]], bool)
>>> data = Masks.from_arrays([0, 0, 0], ["x", "y", "z"], [a, a, ~a])
>>> task_scores(data)["agreement"].round(3)
array([0.333])
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation.masks import STAPLE
from crowdlearn.data.masks import Masks


def _pairwise_iou(masks: np.ndarray) -> np.ndarray:
    """IoU of every pair of a task's masks (k, k); two empty masks: 1."""
    flat = masks.reshape(len(masks), -1).astype(np.float64)
    inter = flat @ flat.T
    size = flat.sum(axis=1)
    union = size[:, None] + size[None, :] - inter
    out = np.ones_like(inter)
    np.divide(inter, union, out=out, where=union > 0)
    return out


def _pair_sums(data: Masks) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per worker: sum of IoU with the others and number of such pairs; per task: the
    same (over unordered pairs)."""
    worker_sum = np.zeros(data.n_workers)
    worker_pairs = np.zeros(data.n_workers)
    task_sum = np.zeros(data.n_tasks)
    task_pairs = np.zeros(data.n_tasks)
    for t, workers, masks in data.iter_tasks():
        k = len(masks)
        if k < 2:
            continue
        iou = _pairwise_iou(masks)
        others = iou.sum(axis=1) - np.diag(iou)
        worker_sum[workers] += others  # a task's workers are distinct
        worker_pairs[workers] += k - 1
        task_sum[t] = others.sum() / 2
        task_pairs[t] = k * (k - 1) / 2
    return worker_sum, worker_pairs, task_sum, task_pairs


def _mean(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    out = np.full(len(total), np.nan)
    np.divide(total, count, out=out, where=count > 0)
    return out


def worker_scores(data: Masks) -> dict[str, np.ndarray]:
    """Per-worker scores (see the module docstring)."""
    if not isinstance(data, Masks):
        raise TypeError(
            f"worker_scores expects a crowdlearn.data.Masks, got {type(data).__name__}"
        )
    model = STAPLE().fit(data)
    worker_sum, worker_pairs, _, _ = _pair_sums(data)
    return {
        "n_masks": np.bincount(data.worker, minlength=data.n_workers),
        "sensitivity": model.sensitivity_,
        "specificity": model.specificity_,
        "iou_with_others": _mean(worker_sum, worker_pairs),
    }


def task_scores(data: Masks) -> dict[str, np.ndarray]:
    """Per-task scores (see the module docstring)."""
    if not isinstance(data, Masks):
        raise TypeError(f"task_scores expects a crowdlearn.data.Masks, got {type(data).__name__}")
    _, _, task_sum, task_pairs = _pair_sums(data)
    return {
        "n_masks": np.bincount(data.task, minlength=data.n_tasks),
        "agreement": _mean(task_sum, task_pairs),
    }
