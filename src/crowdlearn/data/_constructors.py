"""CrowdData's constructors from the user's ids and layouts.

``from_arrays`` (one entry per annotation, any hashable ids: codes are assigned by
factorising the ids, truth and features are aligned with the task codes),
``from_frame`` (a long DataFrame, columns named or recognised, a per-row truth
column), ``from_matrix`` (an answer matrix, ``missing`` for no answer) and
``from_counts`` (per-task vote counts, anonymous). They live in
:class:`_CrowdDataConstructors`, a base class of :class:`~crowdlearn.data.CrowdData`,
and end in ``CrowdData(...)``, whose initializer validates the codes.

Files are read by :mod:`crowdlearn.io` (``read_answers_json`` for peerannot's
``answers.json``): ``crowdlearn.data`` imports no reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from crowdlearn.data._ids import as_id_array, factorize
from crowdlearn.data._memory import array_bytes, check_allocation
from crowdlearn.data._validation import (
    _check_lengths,
    _features_by_task,
    _known_truth,
    _truth_by_task,
    _truth_codes,
)
from crowdlearn.data.errors import CrowdDataError, show

if TYPE_CHECKING:
    from crowdlearn.data.crowddata import CrowdData, DuplicatePolicy


class _CrowdDataConstructors:
    """The classmethod constructors of :class:`~crowdlearn.data.CrowdData` (a base class
    of it): each builds codes from the user's data and calls ``cls(...)``."""

    @classmethod
    def from_arrays(
        cls,
        task: Any,
        worker: Any,
        label: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        classes: Any = None,
        features: Any = None,
        truth: Any = None,
        duplicates: DuplicatePolicy = "error",
    ) -> CrowdData:
        """Build from one entry per annotation, using any hashable ids.

        Parameters
        ----------
        task, worker, label : array-like
            The task id, worker id and class label of each annotation. ``worker`` may
            be ``None`` for anonymous annotations.
        task_ids, worker_ids, classes : array-like, optional
            Declared ids. When given, code ``i`` is the ``i``-th declared id (so tasks
            without annotations, workers with none and classes never used can exist)
            and any other value is an error. When not given, codes follow the sorted
            order of the values seen (for classes: labels and known truth).
        features : array of shape (n_tasks, ...) or DataFrame indexed by task id
            An array is aligned with the task codes (the declared ``task_ids``, or the
            sorted task ids).
        truth : array-like, Mapping or Series, optional
            True class of each task in the user's class ids: an array aligned with
            the task codes, or a mapping / Series keyed by task id. ``None``/NaN
            marks an unknown truth, as does ``-1`` when ``-1`` is not a class.
        duplicates : {"error", "keep", "first", "last"}
            Policy for repeated (task, worker) pairs.
        """
        anonymous = worker is None
        task_arr, label_arr = as_id_array(task, "task"), as_id_array(label, "label")
        worker_arr = None if anonymous else as_id_array(worker, "worker")
        _check_lengths(task=task_arr, worker=worker_arr, label=label_arr)
        if len(task_arr) == 0:
            raise CrowdDataError("empty data: there are no annotations")

        task_codes, task_ids = factorize(task_arr, "task", task_ids)
        worker_codes, worker_ids = (
            (None, None) if anonymous else factorize(worker_arr, "worker", worker_ids)
        )
        truth_values = None if truth is None else _truth_by_task(truth, task_ids)
        if classes is None and truth_values is not None:
            # The class set is every label seen plus every known true class.
            known = truth_values[_known_truth(truth_values, label_arr)]
            _, classes = factorize(np.concatenate([label_arr.astype(object), known]), "label")
        label_codes, classes = factorize(label_arr, "label", classes)
        truth_codes = None if truth_values is None else _truth_codes(truth_values, classes)
        return cls(
            task_codes,
            worker_codes,
            label_codes,
            task_ids=task_ids,
            worker_ids=worker_ids,
            classes=classes,
            features=_features_by_task(features, task_ids),
            truth=truth_codes,
            duplicates=duplicates,
        )

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        task: str = "task",
        worker: str | None = "worker",
        label: str = "label",
        truth: Any = "truth",
        columns: Mapping[str, str | None] | None = None,
        truth_column: str | None = None,
        **kwargs: Any,
    ) -> CrowdData:
        """Build from a long DataFrame with one row per annotation (crowd-kit's layout).

        Parameters
        ----------
        frame : DataFrame
            Columns ``task``, ``worker`` and ``label`` (names configurable).
        task, worker, label : str
            Column names; ``worker=None`` reads anonymous annotations.
        truth : str, Mapping, Series, array-like or None, default "truth"
            The name of a column holding each row's task truth (it must agree within
            a task; empty cells mean unknown), or truth as accepted by
            :meth:`from_arrays`. The default reads a ``truth`` column when the frame
            has one, as :func:`crowdlearn.io.read_csv` does; None ignores it.
        columns : mapping, optional
            Role (``"task"``, ``"worker"``, ``"label"``, ``"truth"``) to column name,
            e.g. ``{"task": "question", "worker": "worker", "label": "answer"}``; it
            takes precedence over ``task``/``worker``/``label``. When a role is not
            named and its standard column is absent, common spellings are recognised
            (``question``/``item`` for task, ``annotator``/``user`` for worker,
            ``answer``/``response`` for label, ...: see
            :data:`crowdlearn.data.RECOGNISED_COLUMNS`) and a
            :class:`~crowdlearn.data.ColumnsRecognizedWarning` names the columns taken.
        truth_column : str, optional
            Column holding each row's task truth (same as a column name in ``truth``).
        **kwargs
            Passed to :meth:`from_arrays` (``task_ids``, ``classes``, ``features``,
            ``duplicates``, ...).

        Examples
        --------
        >>> import pandas as pd
        >>> from crowdlearn import CrowdData
        >>> frame = pd.DataFrame(
        ...     {"task": ["t1", "t1", "t2"], "worker": ["w1", "w2", "w1"],
        ...      "label": ["cat", "dog", "dog"]}
        ... )
        >>> data = CrowdData.from_frame(frame)
        >>> data
        CrowdData(n_tasks=2, n_workers=2, n_classes=2, n_annotations=3)
        >>> list(data.classes), list(data.task_ids)
        (['cat', 'dog'], ['t1', 't2'])
        """
        from crowdlearn.data._headers import note_recognized, resolve_columns

        if not isinstance(frame, pd.DataFrame):
            raise CrowdDataError(f"expected a pandas DataFrame, got {type(frame).__name__}")
        if isinstance(frame.columns, pd.MultiIndex):
            raise CrowdDataError(
                f"the frame has {frame.columns.nlevels}-level (MultiIndex) column names, e.g. "
                f"{frame.columns[0]!r}; flatten them first (frame.columns = ['_'.join(map(str, "
                "c)) for c in frame.columns]) or select one level"
            )
        default_truth = isinstance(truth, str) and truth == "truth"
        if truth_column is not None:
            if truth is not None and not default_truth:
                raise CrowdDataError("pass the truth as truth= or truth_column=, not both")
            truth = truth_column
        found = resolve_columns(
            [c for c in frame.columns if isinstance(c, str)],
            columns,
            task=task,
            worker=worker,
            label=label,
        )
        note_recognized(found)
        task, worker, label = found.task, found.worker, found.label
        if columns is not None and columns.get("truth") is not None:
            if not (
                truth is None
                or default_truth
                or (isinstance(truth, str) and truth == columns["truth"])
            ):
                raise CrowdDataError(
                    "the truth is given twice: as columns['truth'] and as truth=/truth_column="
                )
            truth = columns["truth"]
        if isinstance(truth, str) and truth == "truth" and truth not in frame.columns:
            truth = None  # the default: a truth column is optional
        wanted = [c for c in (task, worker, label) if c is not None]
        if isinstance(truth, str):
            wanted.append(truth)
        repeated = [c for c in wanted if int((frame.columns == c).sum()) > 1]
        if repeated:
            raise CrowdDataError(
                f"column name(s) {show(repeated)} appear more than once; give every column "
                "its own name"
            )
        missing = [c for c in wanted if c not in frame.columns]
        if missing:
            raise CrowdDataError(
                f"missing column(s) {show(missing)}; "
                f"the columns are {show(list(frame.columns), 20)}; name them with "
                "columns={'task': ..., 'worker': ..., 'label': ...} "
                "(command line: --columns task=...,worker=...,label=...)"
            )
        if isinstance(truth, str):
            truth = _truth_from_rows(frame[task], frame[truth])
        return cls.from_arrays(
            frame[task],
            None if worker is None else frame[worker],
            frame[label],
            truth=truth,
            **kwargs,
        )

    @classmethod
    def from_matrix(
        cls,
        answers: Any,
        missing: int = -1,
        *,
        n_classes: int | None = None,
        features: Any = None,
        truth: Any = None,
    ) -> CrowdData:
        """Build from an answer matrix: one row per task, one column per worker.

        This is the format of Rodrigues & Pereira's LabelMe and Music data: entry
        ``(i, j)`` is the class code (``0..K-1``) worker ``j`` gave task ``i``, or
        ``missing``. NaN entries also count as missing. Tasks, workers and classes
        are the row, column and class numbers; empty columns remain workers with
        no annotations, so column numbers are kept.

        Parameters
        ----------
        answers : array-like of shape (n_tasks, n_workers)
        missing : int, default -1
        n_classes : int, optional
            Default: one more than the largest class code in ``answers`` and ``truth``;
            required when that code implies more than 1000 classes and more than 10
            times the number of distinct codes (a stray code would otherwise make
            every (tasks x classes) table huge).
        features : array of shape (n_tasks, ...), optional
        truth : array-like of shape (n_tasks,), optional
            Class codes, ``-1`` where unknown.
        """
        matrix = np.asarray(answers)
        if matrix.ndim != 2:
            raise CrowdDataError(f"an answer matrix must be 2-D, got shape {matrix.shape}")
        if matrix.dtype.kind not in "iuf":
            raise CrowdDataError(f"an answer matrix must be numeric, got dtype {matrix.dtype}")
        observed = matrix != missing
        if matrix.dtype.kind == "f":
            observed &= ~np.isnan(matrix)
        rows, cols = np.nonzero(observed)
        values = matrix[rows, cols]
        if matrix.dtype.kind == "f" and not np.all(np.isfinite(values)):
            bad = np.flatnonzero(~np.isfinite(values))
            raise CrowdDataError(
                f"answer matrix has infinite labels at (task, worker) {_cells(rows, cols, bad)}"
            )
        if matrix.dtype.kind == "f" and np.any(values != np.round(values)):
            bad = np.flatnonzero(values != np.round(values))
            raise CrowdDataError(
                f"answer matrix has non-integer labels at (task, worker) {_cells(rows, cols, bad)}"
            )
        too_big = np.flatnonzero(values > np.iinfo(np.int32).max)
        if len(too_big):
            raise CrowdDataError(
                f"answer matrix has class codes beyond the int32 range at (task, worker) "
                f"{_cells(rows, cols, too_big)}"
            )
        negative = np.flatnonzero(values < 0)
        if len(negative):
            raise CrowdDataError(
                f"answer matrix has negative labels other than missing={missing} at "
                f"(task, worker) {_cells(rows, cols, negative)}"
            )
        return cls(
            rows,
            cols,
            values.astype(np.int64),
            n_tasks=matrix.shape[0],
            n_workers=matrix.shape[1],
            n_classes=n_classes,
            features=features,
            truth=truth,
        )

    @classmethod
    def from_counts(
        cls,
        counts: Any,
        *,
        classes: Any = None,
        task_ids: Any = None,
        features: Any = None,
        truth: Any = None,
    ) -> CrowdData:
        """Build anonymous data (the Global setting) from per-task vote counts.

        Parameters
        ----------
        counts : array-like or sparse matrix of shape (n_tasks, n_classes)
            Non-negative integer number of votes for each class.
        classes, task_ids : array-like, optional
            Ids of the columns and rows; default ``0..n-1``.
        features : array of shape (n_tasks, ...), optional
        truth : array-like of shape (n_tasks,), optional
            Class codes, ``-1`` where unknown.
        """
        matrix = sp.coo_matrix(counts) if sp.issparse(counts) else np.asarray(counts)
        dense = not sp.issparse(matrix)
        if matrix.ndim != 2:
            raise CrowdDataError(f"vote counts must be 2-D, got shape {matrix.shape}")
        if dense:
            rows, cols = np.nonzero(matrix)
            values = matrix[rows, cols]
        else:
            rows, cols, values = matrix.row, matrix.col, matrix.data
        values = np.asarray(values)
        if values.dtype.kind not in "iufb":
            raise CrowdDataError(f"vote counts must be numeric, got dtype {values.dtype}")
        bad = np.flatnonzero(~np.isfinite(values) | (values < 0) | (values != np.round(values)))
        if len(bad):
            raise CrowdDataError(
                "vote counts must be non-negative integers; bad entries at (task, class) "
                f"{_cells(rows, cols, bad)}"
            )
        repeats = values.astype(np.int64)
        # One annotation per vote: three int32 code arrays and their validation copies.
        n_votes = int(repeats.sum(dtype=np.float64))
        check_allocation(array_bytes([n_votes], 4 * 4), f"{n_votes} annotations (one per vote)")
        return cls(
            np.repeat(rows, repeats),
            None,
            np.repeat(cols, repeats),
            task_ids=task_ids,
            classes=classes,
            n_tasks=matrix.shape[0],
            n_classes=matrix.shape[1],
            features=features,
            truth=truth,
        )


def _cells(rows: np.ndarray, cols: np.ndarray, which: np.ndarray) -> str:
    """The (row, column) pairs of some matrix entries, for an error message."""
    return show(list(zip(rows[which].tolist(), cols[which].tolist(), strict=True)))


def _truth_from_rows(task: pd.Series, truth: pd.Series) -> pd.Series:
    """Per-task truth from a per-row column; rows of a task must agree."""
    frame = pd.DataFrame({"task": as_id_array(task), "truth": as_id_array(truth)}).dropna()
    per_task = frame.groupby("task", sort=False)["truth"].nunique()
    conflicting = per_task.index[per_task > 1]
    if len(conflicting):
        raise CrowdDataError(f"the truth column disagrees within tasks {show(conflicting)}")
    return frame.drop_duplicates("task").set_index("task")["truth"]
