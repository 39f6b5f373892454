"""CrowdData: the immutable container every reader produces and every engine consumes.

Annotations are stored in coordinate form: three equal-length int32 arrays ``task``,
``worker`` and ``label`` holding codes ``0..n-1``. The user's identifiers live in
``task_ids``, ``worker_ids`` and ``classes`` (code ``i`` means ``task_ids[i]``), so
results computed on codes translate back losslessly.

Two settings of the Crowd Mixture Model paper are covered:

* *Individual*: each annotation has a known worker (the usual case).
* *Global* (anonymous): workers are unknown; ``worker`` is ``None`` and
  ``n_workers == 0``. Per-task vote counts alone (CIFAR-10H) load this way with
  :meth:`CrowdData.from_counts`.

Derived views (vote counts, per-task and per-worker indexes) are computed on first
use and cached; nothing builds a dense task x worker array.

This module holds the class and its core: the fields, the validation of the codes at
construction (``CrowdData(...)``), the sizes, equality, ``repr``, immutability and
pickling. Its parts live beside it, as base classes of :class:`CrowdData`:

* ``_constructors.py``: ``from_arrays``, ``from_frame``, ``from_matrix``, ``from_counts``
  (the user's ids and layouts turned into codes);
* ``_views.py``: the cached derived views and :class:`GroupIndex`;
* ``_transform.py``: ``with_*`` copies, ``subsample``, ``split``, ``select_tasks``,
  ``restrict_to_workers``, ``anonymous``, ``to_frame``, ``truth_series``;
* ``_validation.py``: the checks and the truth/features alignment they share.

CrowdData holds no file reader: :mod:`crowdlearn.io` builds CrowdData from files
(``crowdlearn.io.read_answers_json`` for peerannot's ``answers.json``), so the data
layer imports nothing of ``crowdlearn.io``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from crowdlearn.data._constructors import _CrowdDataConstructors
from crowdlearn.data._memory import check_implied_classes
from crowdlearn.data._transform import _CrowdDataTransformations
from crowdlearn.data._validation import (
    _check_lengths,
    _check_range,
    _code_array,
    _duplicate_rows_to_keep,
    _ids_or_range,
    _readonly,
    _validate_features,
    _validate_truth_codes,
)
from crowdlearn.data._views import GroupIndex, _CrowdDataViews
from crowdlearn.data.errors import CrowdDataError

__all__ = ["DUPLICATE_POLICIES", "CrowdData", "DuplicatePolicy", "GroupIndex"]

DuplicatePolicy = Literal["error", "keep", "first", "last"]
DUPLICATE_POLICIES = ("error", "keep", "first", "last")

_FIELDS = (
    "task",
    "worker",
    "label",
    "task_ids",
    "worker_ids",
    "classes",
    "features",
    "truth",
    "inputs",
)


class CrowdData(_CrowdDataConstructors, _CrowdDataViews, _CrowdDataTransformations):
    """Crowd annotations with the user's ids, optional features and optional truth.

    Most users build one with a constructor that takes their own identifiers:
    :meth:`from_arrays`, :meth:`from_frame`, :meth:`from_matrix` or
    :meth:`from_counts`, or with a reader of :mod:`crowdlearn.io` (``read``,
    ``read_csv``, ``read_answers_json`` for a peerannot ``answers.json``...). The
    initializer itself takes integer *codes*.

    Parameters
    ----------
    task, worker, label : array-like of int
        One entry per annotation: task code, worker code and class code. ``worker``
        is ``None`` for anonymous annotations (the Global setting).
    task_ids, worker_ids, classes : array-like, optional
        The user's identifier of each code; default ``0..n-1``.
    n_tasks, n_workers, n_classes : int, optional
        Sizes when ids are not given; default one more than the largest code (for
        classes, also counting ``truth``).
    features : array of shape (n_tasks, ...), optional
        One row of numeric features per task (aligned with task codes).
    truth : array of shape (n_tasks,), optional
        True class code of each task, ``-1`` where unknown.
    duplicates : {"error", "keep", "first", "last"}, default "error"
        What to do with repeated (task, worker) pairs: fail, keep every annotation,
        or keep the first or last one in row order.

    Attributes
    ----------
    task, worker, label : ndarray of int32
        Read-only code arrays (``worker`` is ``None`` when anonymous).
    task_ids, worker_ids, classes : ndarray
        Read-only identifiers; ``worker_ids`` is empty when anonymous.
    features : ndarray or None
    truth : ndarray of int32 or None
        ``None`` when no task has a known truth.
    inputs : TaskInputs or None
        Task inputs given as files (e.g. images), see :meth:`with_inputs`; learners use
        them when present, else ``features``.

    Examples
    --------
    >>> data = CrowdData.from_arrays(
    ...     task=["a", "a", "b"], worker=["w1", "w2", "w1"], label=["cat", "dog", "dog"]
    ... )
    >>> data
    CrowdData(n_tasks=2, n_workers=2, n_classes=2, n_annotations=3)
    >>> data.label
    array([0, 1, 1], dtype=int32)
    >>> list(data.classes)
    ['cat', 'dog']
    >>> data.vote_counts.toarray()
    array([[1, 1],
           [0, 1]])
    """

    task: np.ndarray
    worker: np.ndarray | None
    label: np.ndarray
    task_ids: np.ndarray
    worker_ids: np.ndarray
    classes: np.ndarray
    features: np.ndarray | None
    truth: np.ndarray | None
    inputs: Any

    __hash__ = None  # type: ignore[assignment]  # content equality, arrays are large

    def __init__(
        self,
        task: Any,
        worker: Any,
        label: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        classes: Any = None,
        n_tasks: int | None = None,
        n_workers: int | None = None,
        n_classes: int | None = None,
        features: Any = None,
        truth: Any = None,
        duplicates: DuplicatePolicy = "error",
    ) -> None:
        if duplicates not in DUPLICATE_POLICIES:
            raise CrowdDataError(
                f"duplicates={duplicates!r} is not a policy; use one of {DUPLICATE_POLICIES}"
            )
        task = _code_array(task, "task")
        label = _code_array(label, "label")
        anonymous = worker is None
        worker = None if anonymous else _code_array(worker, "worker")
        _check_lengths(task=task, worker=worker, label=label)
        if len(task) == 0:
            raise CrowdDataError("empty data: there are no annotations")
        if anonymous and (worker_ids is not None or n_workers):
            raise CrowdDataError("worker ids were given but the annotations have no workers")

        truth_codes = None if truth is None else _code_array(truth, "truth")
        task_ids = _ids_or_range(task_ids, n_tasks, task, "task")
        worker_ids = (
            np.empty(0, dtype=np.int64)
            if anonymous
            else _ids_or_range(worker_ids, n_workers, worker, "worker")
        )
        label_extent = label if truth_codes is None else np.concatenate([label, truth_codes])
        if classes is None and n_classes is None:
            check_implied_classes(label_extent, "pass n_classes= or classes=")
        classes = _ids_or_range(classes, n_classes, label_extent, "label")

        _check_range(task, len(task_ids), "task")
        if not anonymous:
            _check_range(worker, len(worker_ids), "worker")
        _check_range(label, len(classes), "label", noun="class")
        if truth_codes is not None:
            truth_codes = _validate_truth_codes(truth_codes, len(task_ids), len(classes))
        features = _validate_features(features, len(task_ids))

        if not anonymous:
            keep = _duplicate_rows_to_keep(
                task, worker, len(worker_ids), duplicates, task_ids, worker_ids
            )
            if keep is not None:
                task, worker, label = task[keep], worker[keep], label[keep]

        self._set(
            task=task,
            worker=worker,
            label=label,
            task_ids=task_ids,
            worker_ids=worker_ids,
            classes=classes,
            features=features,
            truth=truth_codes,
            inputs=None,
        )

    # ------------------------------------------------------------------ sizes

    @property
    def n_annotations(self) -> int:
        """Number of annotations."""
        return len(self.task)

    @property
    def n_tasks(self) -> int:
        """Number of tasks (including tasks without annotations)."""
        return len(self.task_ids)

    @property
    def n_workers(self) -> int:
        """Number of workers (0 when anonymous)."""
        return len(self.worker_ids)

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.classes)

    @property
    def is_anonymous(self) -> bool:
        """True when workers are unknown (the Global setting)."""
        return self.worker is None

    @property
    def has_truth(self) -> bool:
        """True when at least one task has a known true class."""
        return self.truth is not None

    def __len__(self) -> int:
        return self.n_annotations

    # ------------------------------------------------------------------ comparison

    def equals(self, other: object) -> bool:
        """Same annotations (in any row order), ids, classes, features and truth."""
        if not isinstance(other, CrowdData):
            return False
        if self.is_anonymous != other.is_anonymous or self.n_annotations != other.n_annotations:
            return False
        for name in ("task_ids", "worker_ids", "classes"):
            if not _same_ids(getattr(self, name), getattr(other, name)):
                return False
        if self.inputs is not other.inputs:
            return False
        for name in ("truth", "features"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if (mine is None) != (theirs is None):
                return False
            if mine is not None and not np.array_equal(mine, theirs):
                return False
        return all(
            np.array_equal(a, b)
            for a, b in zip(self._sorted_codes(), other._sorted_codes(), strict=True)
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CrowdData):
            return NotImplemented
        return self.equals(other)

    def __repr__(self) -> str:
        parts = [
            f"n_tasks={self.n_tasks}",
            f"n_workers={'anonymous' if self.is_anonymous else self.n_workers}",
            f"n_classes={self.n_classes}",
            f"n_annotations={self.n_annotations}",
        ]
        if self.features is not None:
            parts.append(f"features={self.features.shape}")
        if self.truth is not None:
            parts.append(f"truth={int(np.sum(self.truth >= 0))} known")
        if self.inputs is not None:
            parts.append(f"inputs={type(self.inputs).__name__}")
        return f"CrowdData({', '.join(parts)})"

    # ------------------------------------------------------------------ internals

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("CrowdData is immutable; use its with_* methods for a changed copy")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("CrowdData is immutable")

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._set(**state)

    def _set(self, **fields: Any) -> None:
        for name in _FIELDS:
            value = fields.get(name)
            if value is not None and name != "inputs":
                value = _readonly(value)
            object.__setattr__(self, name, value)

    def _replace(self, **changes: Any) -> CrowdData:
        """A copy with some fields replaced, trusting the caller that they are valid."""
        new = object.__new__(CrowdData)
        new._set(**{name: changes.get(name, getattr(self, name)) for name in _FIELDS})
        return new

    def _sorted_codes(self) -> tuple[np.ndarray, ...]:
        """Code arrays in a canonical row order, for order-insensitive comparison."""
        columns = (
            [self.label, self.task]
            if self.worker is None
            else [self.label, self.worker, self.task]
        )
        order = np.lexsort(columns)
        return tuple(column[order] for column in reversed(columns))


def _same_ids(a: np.ndarray, b: np.ndarray) -> bool:
    """Ids are equal when they have the same values and the same kind (1 != "1")."""
    if len(a) != len(b) or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind == "O" and pd.api.types.infer_dtype(a) != pd.api.types.infer_dtype(b):
        return False
    return bool(np.array_equal(a, b))
