"""What every answer kind's data type shares: coded ids, immutability, sizes, equality.

Label sets, ratings and comparisons are each their own small type
(:class:`~crowdlearn.data.LabelSets`, :class:`~crowdlearn.data.Ratings`,
:class:`~crowdlearn.data.Comparisons`), siblings of :class:`~crowdlearn.data.CrowdData`
built on the same id coding (``_ids.factorize``: the user's ids in, int32 codes out,
sorted unless declared) and the same validation error (:class:`CrowdDataError`). This
module holds their common bases, :class:`KindData` and :class:`TaskKindData`, and the
helpers their constructors share: the duplicate policy, declared-or-seen ids, per-row messages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from crowdlearn.data._ids import CODE_DTYPE, as_id_array, factorize
from crowdlearn.data._validation import _duplicate_rows_to_keep, _validate_features
from crowdlearn.data.errors import CrowdDataError, show

#: Where a column of a frame must be a flat name (MultiIndex columns are refused).
_FLAT = "columns must be flat names (not a MultiIndex); flatten them first"


def readonly(array: np.ndarray) -> np.ndarray:
    """A read-only view (the data types are immutable)."""
    array = np.asarray(array)
    view = array.view()
    view.flags.writeable = False
    return view


def encode(values: Any, what: str, declared: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Codes and ids of one axis (the categorical type's rule: sorted unless declared)."""
    return factorize(values, what, declared)


def frame_column(frame: pd.DataFrame, name: str, role: str) -> pd.Series:
    """One column of ``frame`` by name, with the errors a user can act on."""
    if isinstance(frame.columns, pd.MultiIndex):
        raise CrowdDataError(_FLAT)
    if name not in frame.columns:
        raise CrowdDataError(
            f"no {role} column {name!r}; the columns are {show(list(frame.columns))}"
        )
    column = frame[name]
    if isinstance(column, pd.DataFrame):
        raise CrowdDataError(f"the {role} column {name!r} appears more than once")
    return column


def keep_rows(
    task: np.ndarray,
    worker: np.ndarray,
    n_workers: int,
    policy: str,
    task_ids: np.ndarray,
    worker_ids: np.ndarray,
) -> np.ndarray | None:
    """Rows to keep under the duplicate (task, worker) policy (None: all of them)."""
    if policy not in ("error", "keep", "first", "last"):
        raise CrowdDataError(
            f"duplicates must be 'error', 'keep', 'first' or 'last', got {policy!r}"
        )
    if len(task) == 0:
        return None
    return _duplicate_rows_to_keep(task, worker, n_workers, policy, task_ids, worker_ids)


def check_codes(codes: Any, n: int, what: str) -> np.ndarray:
    """int32 codes in ``[0, n)``, or one error naming the first bad rows."""
    arr = np.asarray(codes)
    if arr.ndim != 1:
        raise CrowdDataError(f"{what} codes must be one-dimensional, got shape {arr.shape}")
    if len(arr) and arr.dtype.kind not in "iu":
        raise CrowdDataError(f"{what} codes must be integers, got dtype {arr.dtype}")
    bad = np.flatnonzero((arr < 0) | (arr >= n)) if len(arr) else np.empty(0, int)
    if len(bad):
        raise CrowdDataError(
            f"{what} codes must be in [0, {n}); rows {show(bad)} hold {show(arr[bad])}"
        )
    return arr.astype(CODE_DTYPE, copy=False)


def id_axis(ids: Any, n: int | None, codes: np.ndarray, what: str) -> np.ndarray:
    """The ids of an axis given as codes: declared ids, or ``0..n-1``."""
    if ids is not None:
        return as_id_array(ids, what)
    size = n if n is not None else (int(codes.max()) + 1 if len(codes) else 0)
    return np.arange(size, dtype=np.int64)


def coded_annotations(
    task: Any,
    worker: Any,
    values: np.ndarray,
    what: str,
    *,
    task_ids: Any,
    worker_ids: Any,
    n_tasks: int | None,
    duplicates: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Task and worker codes checked against their ids, one ``values`` row per
    annotation, no empty data, and the duplicate (task, worker) policy applied: the
    shared start of every per-task kind's initializer.

    Returns ``task, worker, values, task_ids, worker_ids`` (rows kept by the policy).
    """
    task_codes, worker_codes = np.asarray(task), np.asarray(worker)
    task_ids = id_axis(task_ids, n_tasks, task_codes, "task")
    worker_ids = id_axis(worker_ids, None, worker_codes, "worker")
    task = check_codes(task_codes, len(task_ids), "task")
    worker = check_codes(worker_codes, len(worker_ids), "worker")
    if not (len(task) == len(worker) == len(values)):
        raise CrowdDataError(
            f"task, worker and {what} differ in length: {len(task)}, {len(worker)}, {len(values)}"
        )
    if len(task) == 0:
        raise CrowdDataError("empty data: there are no annotations")
    keep = keep_rows(task, worker, len(worker_ids), duplicates, task_ids, worker_ids)
    if keep is not None:
        task, worker, values = task[keep], worker[keep], values[keep]
    return task, worker, values, task_ids, worker_ids


def truth_by_task(truth: Any, task_ids: np.ndarray) -> list[Any]:
    """Each task's truth in task-code order, from a mapping / Series keyed by task id
    (tasks it leaves out are unknown: None) or a sequence aligned with the task codes."""
    if isinstance(truth, (Mapping, pd.Series)):
        lookup = dict(truth.items())
        known = set(task_ids.tolist())
        unknown = [t for t in lookup if t not in known]
        if unknown:
            raise CrowdDataError(f"truth names unknown tasks: {show(unknown)}")
        return [lookup.get(t) for t in task_ids.tolist()]
    cells = list(truth)
    if len(cells) != len(task_ids):
        raise CrowdDataError(
            f"truth has {len(cells)} entries for {len(task_ids)} tasks; pass a mapping of "
            "task id -> truth for a partial truth"
        )
    return cells


class KindData:
    """Base of the answer kinds' data types: fields, immutability, sizes, equality.

    A subclass lists its per-annotation arrays in ``_rows`` and its id axes in
    ``_axes`` (attribute name of the ids -> size property); ``__eq__`` compares them
    all, and the arrays are read-only.
    """

    kind: ClassVar[str] = ""
    _rows: ClassVar[tuple[str, ...]] = ()
    _axes: ClassVar[tuple[str, ...]] = ()
    _extras: ClassVar[tuple[str, ...]] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable; build a new one")
        object.__setattr__(self, name, value)

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    @property
    def n_annotations(self) -> int:
        return len(getattr(self, self._rows[0]))

    @property
    def n_workers(self) -> int:
        return len(self.worker_ids)  # type: ignore[attr-defined]

    def _fields(self) -> Iterator[tuple[str, Any]]:
        for name in (*self._rows, *self._axes, *self._extras):
            yield name, getattr(self, name)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for (_name, mine), (_, theirs) in zip(self._fields(), other._fields(), strict=True):
            if (mine is None) != (theirs is None):
                return False
            if mine is None:
                continue
            a, b = np.asarray(mine), np.asarray(theirs)
            if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
                return False
            if a.dtype.kind == "f":
                if not np.array_equal(a, b, equal_nan=True):
                    return False
            elif not np.array_equal(a, b):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


def task_features(features: Any, n_tasks: int) -> np.ndarray | None:
    """Per-task features checked against the number of tasks (None stays None)."""
    return None if features is None else _validate_features(features, n_tasks)


class TaskKindData(KindData):
    """Base of the kinds whose answers are about tasks (``task_ids``): all but
    comparisons, whose answers are about pairs of items."""

    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)  # type: ignore[attr-defined]

    def _store(self, **fields: Any) -> None:
        """Set every field read-only (None stays None), then make the object immutable."""
        for name, value in fields.items():
            setattr(self, name, None if value is None else readonly(value))
        self._freeze()
