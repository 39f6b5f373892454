"""What every mask aggregator shares: the estimator contract and the streamed outputs.

Masks are big, so a fitted aggregator holds no mask: it holds what it learned (worker
parameters, a prior) and ``agreement_`` per task, and :meth:`BaseMaskAggregator.masks_`
recomputes a task's aggregated mask from that task's masks alone (one task loaded at a
time). Fitting makes passes over the tasks one at a time
(:meth:`crowdlearn.data.Masks.iter_tasks`): the Python loop is over tasks by design
(each task's pixels are processed vectorised), never over pixels or annotations.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation._frames import id_index, require_columns
from crowdlearn.aggregation._kind_base import KindAggregator
from crowdlearn.data.masks import Masks

PROBABILITY = Bounds(0, 1, low_open=True, high_open=True)
POSITIVE_INT = Bounds(1, integer=True)
POSITIVE = Bounds(0, low_open=True)


def mean_iou(stack: np.ndarray, mask: np.ndarray) -> float:
    """Mean over the workers' masks ``stack`` (k, h, w) of their IoU with ``mask``
    (two empty masks agree fully: IoU 1)."""
    flat = stack.reshape(len(stack), -1)
    m = mask.reshape(-1)
    inter = flat[:, m].sum(axis=1)
    union = flat.sum(axis=1) + m.sum() - inter
    iou = np.ones(len(stack))
    np.divide(inter, union, out=iou, where=union > 0)
    return float(iou.mean())


class BaseMaskAggregator(KindAggregator):
    """Base class of mask aggregators (scikit-learn estimator contract).

    Subclasses implement ``_fit(data)`` (learn their parameters) and
    ``_aggregate(workers, masks)`` (one task's bool mask from its workers' codes and
    masks, with the learned parameters). ``fit`` then makes one more pass to set
    ``agreement_`` (n_tasks,): the mean IoU of each task's worker masks with its result.

    ``worker_attributes`` names the learned per-worker arrays (first axis = worker code).
    """

    data_type = Masks
    build_hint = (
        "build one with Masks.from_arrays(task, worker, masks) or Masks.from_folder(folder)"
    )
    result = "agreement_"
    frame_kind = "mask"
    #: After a DataFrame fit: a Series indexed by task id.
    task_results = ("agreement_",)
    #: The columns of a DataFrame input (crowd-kit's layout): one 2-D mask per row.
    frame_columns: tuple[str, str, str] = ("task", "worker", "segmentation")

    def _from_frame(self, frame: pd.DataFrame) -> Masks:
        """Masks from a (task, worker, segmentation) DataFrame, one 2-D bool array (or a
        mask file's path) per row, as crowd-kit takes them (a ``label`` or ``mask``
        column may hold the masks instead)."""
        task, worker, masks = self.frame_columns
        if masks not in frame.columns:
            masks = next((c for c in ("label", "mask") if c in frame.columns), masks)
        require_columns(frame, (task, worker, masks), f"{type(self).__name__}.fit")
        return Masks.from_arrays(frame[task], frame[worker], frame[masks].tolist())

    def _fitted(self, data: Masks) -> None:
        """One more pass over the tasks: each task's agreement with its result."""
        agreement = np.empty(data.n_tasks)
        for t, workers, masks in data.iter_tasks():
            agreement[t] = mean_iou(masks, self._aggregate(workers, masks))
        self.agreement_ = agreement
        self._data = data

    def _aggregate(self, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def masks_(self, t: int) -> np.ndarray:
        """The aggregated bool mask of task code ``t`` (recomputed from its masks)."""
        self._check_fitted()
        workers, masks = self._data.task_masks(int(t))
        return self._aggregate(workers, masks)

    def iter_masks(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(t, mask)`` for every task in code order, one task at a time."""
        self._check_fitted()
        for t, workers, masks in self._data.iter_tasks():
            yield t, self._aggregate(workers, masks)

    def predict(self) -> list[np.ndarray] | pd.Series:
        """Every task's aggregated mask (all in memory: for small data): a list in task
        code order, or a Series of masks indexed by task id (name ``segmentation``)
        after a fit on a DataFrame."""
        masks = [mask for _, mask in self.iter_masks()]
        if not self._as_frames:
            return masks
        index = id_index(self.task_ids_, "task")
        return pd.Series(masks, index=index, name="segmentation", dtype=object)
