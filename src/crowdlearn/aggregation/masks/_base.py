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
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from crowdlearn._bounds import Bounds, check_params
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


class BaseMaskAggregator(BaseEstimator):
    """Base class of mask aggregators (scikit-learn estimator contract).

    Subclasses implement ``_fit(data)`` (learn their parameters) and
    ``_aggregate(workers, masks)`` (one task's bool mask from its workers' codes and
    masks, with the learned parameters). ``fit`` then makes one more pass to set
    ``agreement_`` (n_tasks,): the mean IoU of each task's worker masks with its result.

    ``worker_attributes`` names the learned per-worker arrays (first axis = worker code).
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ()
    #: Bounds of the estimator's own numeric parameters (beyond ``_bounds.PARAMS``).
    param_bounds: ClassVar[dict[str, Bounds]] = {}

    def fit(self, data: Masks) -> BaseMaskAggregator:
        """Learn from ``data``'s masks (streamed one task at a time); returns ``self``."""
        if not isinstance(data, Masks):
            raise TypeError(
                f"{type(self).__name__}.fit expects a crowdlearn.data.Masks, got "
                f"{type(data).__name__}; build one with Masks.from_arrays(task, worker, "
                "masks) or Masks.from_folder(folder)"
            )
        params = self.get_params(deep=False)
        check_params(type(self).__name__, params)
        for name, bounds in self.param_bounds.items():
            problem = bounds.problem(params[name])
            if problem is not None:
                wrong = isinstance(params[name], bool) or not isinstance(
                    params[name], (int, float, np.number)
                )
                raise (TypeError if wrong else ValueError)(
                    f"{type(self).__name__}: {name} {problem}"
                )
        self._fit(data)
        agreement = np.empty(data.n_tasks)
        for t, workers, masks in data.iter_tasks():
            agreement[t] = mean_iou(masks, self._aggregate(workers, masks))
        self.agreement_ = agreement
        self.task_ids_ = data.task_ids
        self.worker_ids_ = data.worker_ids
        self._data = data
        return self

    def _fit(self, data: Masks) -> None:
        raise NotImplementedError

    def _aggregate(self, workers: np.ndarray, masks: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "agreement_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")

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

    def predict(self) -> list[np.ndarray]:
        """Every task's aggregated mask (all in memory: for small data)."""
        return [mask for _, mask in self.iter_masks()]
