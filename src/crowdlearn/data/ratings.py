"""Ratings: numeric answers (scores, estimates) and ordered categories (1-5 stars).

Each annotation is one worker's number for one task, ``value`` (float64). Ordered
categories are stored as their rank (0 .. L-1) in ``value`` with the categories, in
order, in ``levels``; numeric ratings have ``levels=None``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import as_id_array, factorize
from crowdlearn.data._kinds import (
    TaskKindData,
    coded_annotations,
    frame_column,
    task_features,
    truth_by_task,
)
from crowdlearn.data.errors import CrowdDataError, show


class Ratings(TaskKindData):
    """Numeric or ordinal crowd answers.

    Parameters
    ----------
    task, worker : array-like of int
        Task and worker code of each annotation.
    value : array-like of float
        The rating of each annotation (the rank of its category for ordinal data).
    task_ids, worker_ids : array-like, optional
    levels : array-like, optional
        For ordered categories: the categories from lowest to highest (``value`` holds
        ranks into it). ``None`` for numbers.
    truth : array of shape (n_tasks,), optional
        True values (ranks for ordinal data), NaN where unknown.
    features : array of shape (n_tasks, ...), optional
    duplicates : {"error", "keep", "first", "last"}

    Examples
    --------
    >>> r = Ratings.from_arrays(["a", "a", "b"], ["w1", "w2", "w1"], [4, 5, 2])
    >>> r
    Ratings(n_tasks=2, n_workers=2, n_annotations=3)
    >>> stars = Ratings.from_arrays(["a", "b"], ["w1", "w1"], ["good", "bad"],
    ...                             order=["bad", "fair", "good"])
    >>> stars.value, list(stars.levels)
    (array([2., 0.]), ['bad', 'fair', 'good'])
    """

    kind = "rating"
    _rows = ("task", "worker", "value")
    _axes = ("task_ids", "worker_ids")
    _extras = ("levels", "truth", "features")

    def __init__(
        self,
        task: Any,
        worker: Any,
        value: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        n_tasks: int | None = None,
        levels: Any = None,
        truth: Any = None,
        features: Any = None,
        duplicates: str = "error",
    ) -> None:
        value = np.asarray(value, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(value))
        if len(bad):
            raise CrowdDataError(f"ratings must be finite numbers; rows {show(bad)} are not")
        if levels is not None:
            levels = as_id_array(levels, "level")
            off = np.flatnonzero((value < 0) | (value >= len(levels)) | (value != np.round(value)))
            if len(off):
                raise CrowdDataError(
                    f"ordinal ratings must be ranks in [0, {len(levels)}); rows {show(off)}"
                )
        task, worker, value, task_ids, worker_ids = coded_annotations(
            task, worker, value, "value", task_ids=task_ids, worker_ids=worker_ids,
            n_tasks=n_tasks, duplicates=duplicates,
        )  # fmt: skip
        if truth is not None:
            truth = np.asarray(truth, dtype=np.float64)
            if truth.shape != (len(task_ids),):
                raise CrowdDataError(
                    f"truth must have one value per task ({len(task_ids)}), got {truth.shape}"
                )
            if np.all(np.isnan(truth)):
                truth = None
        self._store(
            task=task, worker=worker, value=value, task_ids=task_ids, worker_ids=worker_ids,
            levels=levels, truth=truth, features=task_features(features, len(task_ids)),
        )  # fmt: skip

    @classmethod
    def from_arrays(
        cls,
        task: Any,
        worker: Any,
        value: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        order: Any = None,
        truth: Any = None,
        features: Any = None,
        duplicates: str = "error",
    ) -> Ratings:
        """Build from one entry per annotation with any hashable ids.

        Parameters
        ----------
        value : array-like
            Numbers, or categories when ``order`` is given.
        order : sequence, optional
            The categories from lowest to highest (e.g. ``["bad", "fair", "good"]`` or
            ``[1, 2, 3, 4, 5]``): the ratings are then ordinal, and a value outside the
            order is an error naming its row.
        truth : Mapping / Series keyed by task id, or a sequence aligned with the task
            codes, optional (numbers, or categories of ``order``).
        """
        task_codes, task_ids = factorize(task, "task", task_ids)
        worker_codes, worker_ids = factorize(worker, "worker", worker_ids)
        values = _ratings(value, order, "rating")
        truth_values = None
        if truth is not None:
            cells = truth_by_task(truth, task_ids)
            truth_values = _ratings(cells, order, "truth", missing_ok=True)
        return cls(
            task_codes,
            worker_codes,
            values,
            task_ids=task_ids,
            worker_ids=worker_ids,
            levels=order,
            truth=truth_values,
            features=features,
            duplicates=duplicates,
        )

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        task: str = "task",
        worker: str = "worker",
        label: str = "label",
        **kwargs: Any,
    ) -> Ratings:
        """Build from a DataFrame with one row per (task, worker) and the rating in
        ``label``."""
        return cls.from_arrays(
            frame_column(frame, task, "task"),
            frame_column(frame, worker, "worker"),
            frame_column(frame, label, "rating"),
            **kwargs,
        )

    @property
    def ordinal(self) -> bool:
        return self.levels is not None

    def to_frame(self) -> pd.DataFrame:
        """One row per annotation: task, worker, label (the category for ordinal data)."""
        label = self.value if self.levels is None else self.levels[self.value.astype(int)]
        return pd.DataFrame(
            {
                "task": self.task_ids[self.task],
                "worker": self.worker_ids[self.worker],
                "label": label,
            }
        )

    def __repr__(self) -> str:
        extras = f", levels={len(self.levels)}" if self.levels is not None else ""
        if self.features is not None:
            extras += f", features={self.features.shape}"
        if self.truth is not None:
            extras += f", truth={int(np.sum(~np.isnan(self.truth)))} known"
        return (
            f"Ratings(n_tasks={self.n_tasks}, n_workers={self.n_workers}, "
            f"n_annotations={self.n_annotations}{extras})"
        )


def _ratings(values: Any, order: Any, what: str, missing_ok: bool = False) -> np.ndarray:
    """Numbers (or ranks in ``order``), with one error naming the rows that are neither."""
    series = pd.Series(list(values) if not isinstance(values, (pd.Series, np.ndarray)) else values)
    missing = series.isna().to_numpy()
    if order is not None:
        levels = pd.Index(as_id_array(order, "level"))
        if not levels.is_unique:
            raise CrowdDataError(
                f"the order repeats categories: {show(levels[levels.duplicated()])}"
            )
        codes = levels.get_indexer(as_id_array(series.to_numpy(dtype=object), what))
        if levels.dtype.kind in "iuf":  # "4" in a text column and 4 in the order
            numeric = pd.to_numeric(series, errors="coerce").to_numpy()
            retry = (codes < 0) & ~np.isnan(numeric)
            codes[retry] = levels.get_indexer(numeric[retry])
        bad = np.flatnonzero((codes < 0) & ~(missing & missing_ok))
        if len(bad):
            raise CrowdDataError(
                f"{what}s {show(series.iloc[bad].tolist())} at rows {show(bad)} are not in the "
                f"declared order {show(list(levels))}"
            )
        out = codes.astype(np.float64)
        out[missing] = np.nan
        return out
    numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(np.isnan(numbers) & ~(missing & missing_ok))
    if len(bad):
        raise CrowdDataError(
            f"{what}s {show(series.iloc[bad].tolist())} at rows {show(bad)} are not numbers; "
            "for ordered categories declare their order (order=[...], --order)"
        )
    infinite = np.flatnonzero(np.isinf(numbers))
    if len(infinite):
        raise CrowdDataError(f"{what}s at rows {show(infinite)} are infinite")
    return numbers
