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
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from crowdlearn.data._ids import (
    CODE_DTYPE,
    as_id_array,
    declared_ids,
    factorize,
    missing_rows,
)
from crowdlearn.data._memory import array_bytes, check_allocation, check_implied_classes
from crowdlearn.data.errors import CrowdDataError, plain, show

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


@dataclass(frozen=True)
class GroupIndex:
    """Annotations grouped by task or by worker, in CSR form.

    ``order`` lists annotation rows sorted by group (stable, so rows keep their
    original order inside a group); the rows of group ``g`` are
    ``order[indptr[g]:indptr[g + 1]]``.
    """

    indptr: np.ndarray
    order: np.ndarray

    def rows(self, group: int) -> np.ndarray:
        """Annotation rows of one group."""
        return self.order[self.indptr[group] : self.indptr[group + 1]]

    @property
    def sizes(self) -> np.ndarray:
        """Number of annotations of each group."""
        return np.diff(self.indptr)


class CrowdData:
    """Crowd annotations with the user's ids, optional features and optional truth.

    Most users build one with a constructor that takes their own identifiers:
    :meth:`from_arrays`, :meth:`from_frame`, :meth:`from_matrix`,
    :meth:`from_counts` or :meth:`from_answers_json`. The initializer itself takes
    integer *codes*.

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

    # ------------------------------------------------------------------ constructors

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

    @classmethod
    def from_answers_json(
        cls,
        path: str | os.PathLike[str],
        *,
        features: Any = None,
        truth: Any = None,
        **kwargs: Any,
    ) -> CrowdData:
        """Read a peerannot ``answers.json`` (``{task: {worker: label}}``).

        The ``metadata.json`` beside it, when present, gives the number of classes,
        tasks and workers; a ground-truth file (``ground_truth.npy`` / ``.json``) and
        ``features.npy`` beside it give the truth and the features.

        Parameters
        ----------
        path : str or path-like
            The ``answers.json`` file, or the folder holding it.
        features : array or DataFrame, optional
            Features to use instead of ``features.npy`` (as in :meth:`with_features`).
        truth : array-like, Mapping or Series, optional
            Truth to use instead of the ground-truth file (as in :meth:`with_truth`).
        **kwargs
            Reader options of :func:`crowdlearn.io.read_answers_json` (``metadata``,
            ``duplicates``).
        """
        from crowdlearn.io.peerannot import read_answers_json

        data = read_answers_json(path, truth=truth is None, **kwargs)
        if features is not None:
            data = data.with_features(features)
        return data if truth is None else data.with_truth(truth)

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

    # ------------------------------------------------------------------ derived views

    @cached_property
    def vote_counts(self) -> sp.csr_matrix:
        """Sparse (n_tasks, n_classes) matrix of votes per task and class (int64)."""
        ones = np.ones(self.n_annotations, dtype=np.int64)
        counts = sp.csr_matrix(
            (ones, (self.task, self.label)), shape=(self.n_tasks, self.n_classes)
        )
        counts.sum_duplicates()
        return counts

    @cached_property
    def by_task(self) -> GroupIndex:
        """Annotations grouped by task."""
        return _group_index(self.task, self.n_tasks)

    @cached_property
    def by_worker(self) -> GroupIndex:
        """Annotations grouped by worker."""
        if self.worker is None:
            raise CrowdDataError("anonymous data has no workers to group by")
        return _group_index(self.worker, self.n_workers)

    @cached_property
    def feedback_effort(self) -> np.ndarray:
        """Number of annotations of each task (peerannot's feedback effort)."""
        return _readonly(np.bincount(self.task, minlength=self.n_tasks))

    @cached_property
    def workload(self) -> np.ndarray:
        """Number of annotations of each worker (empty when anonymous)."""
        if self.worker is None:
            return _readonly(np.zeros(0, dtype=np.int64))
        return _readonly(np.bincount(self.worker, minlength=self.n_workers))

    # ------------------------------------------------------------------ transformations

    def with_truth(self, truth: Any) -> CrowdData:
        """A copy with ``truth`` (user class ids; array, Mapping or Series as in
        :meth:`from_arrays`), or without truth when ``truth`` is None."""
        if truth is None:
            return self._replace(truth=None)
        values = _truth_by_task(truth, self.task_ids)
        codes = _truth_codes(values, self.classes)
        return self._replace(truth=_validate_truth_codes(codes, self.n_tasks, self.n_classes))

    def with_features(self, features: Any) -> CrowdData:
        """A copy with ``features`` (array aligned with task codes, or a DataFrame
        indexed by task id), or without features when ``features`` is None."""
        features = _features_by_task(features, self.task_ids)
        return self._replace(features=_validate_features(features, self.n_tasks))

    def with_inputs(self, inputs: Any) -> CrowdData:
        """A copy whose tasks have ``inputs`` (one item per task, in task-code order),
        e.g. :class:`~crowdlearn.data.inputs.ImageFolderInputs`; ``None`` removes them.

        Inputs are objects referring to files: :meth:`equals` compares them by identity.
        """
        if inputs is not None:
            from crowdlearn.data.inputs import as_inputs

            inputs = as_inputs(inputs)
            if len(inputs) != self.n_tasks:
                raise CrowdDataError(
                    f"inputs have {len(inputs)} items but there are {self.n_tasks} tasks"
                )
        return self._replace(inputs=inputs)

    def anonymous(self) -> CrowdData:
        """A copy without worker identities (the Global setting)."""
        return self._replace(worker=None, worker_ids=_readonly(np.empty(0, dtype=np.int64)))

    def subsample(
        self, fraction: float, seed: int | None = 0, keep_one_per_task: bool = True
    ) -> CrowdData:
        """Keep a random ``fraction`` of the annotations (sparsity experiments).

        Parameters
        ----------
        fraction : float in (0, 1]
            Share of annotations kept (``round(fraction * n_annotations)`` of them).
            To *remove* a fraction ``p``, pass ``1 - p``.
        seed : int or None
            Seed of the random draw; the same seed keeps the same annotations.
        keep_one_per_task : bool, default True
            Every task that has annotations keeps at least one, chosen at random;
            if that needs more annotations than ``fraction`` allows, it wins.

        Returns
        -------
        CrowdData
            Same tasks, workers and classes; annotations keep their relative order.
        """
        if not 0 < fraction <= 1:
            raise CrowdDataError(f"fraction must be in (0, 1], got {fraction}")
        rng = np.random.default_rng(seed)
        n = self.n_annotations
        n_keep = round(fraction * n)
        order = rng.permutation(n)
        if keep_one_per_task:
            _, first = np.unique(self.task[order], return_index=True)
            chosen_first = np.zeros(n, dtype=bool)
            chosen_first[first] = True
            extra = max(n_keep - len(first), 0)
            kept = np.concatenate([order[chosen_first], order[~chosen_first][:extra]])
        else:
            if n_keep == 0:
                raise CrowdDataError(f"fraction={fraction} keeps no annotation out of {n}")
            kept = order[:n_keep]
        kept.sort()
        return self._take_annotations(kept)

    def split(
        self, test_size: float = 0.2, seed: int | None = 0, stratify: bool = False
    ) -> tuple[CrowdData, CrowdData]:
        """Split the tasks in two (e.g. train and validation), with their annotations.

        Workers and classes keep their codes in both parts, so per-worker parameters
        learned on one part apply to the other.

        Parameters
        ----------
        test_size : float in (0, 1) or int
            Share (or number) of tasks in the second part.
        seed : int or None
        stratify : bool
            Keep the class proportions of the known truth in both parts.
        """
        from sklearn.model_selection import train_test_split

        tasks = np.arange(self.n_tasks)
        labels = None
        if stratify:
            if self.truth is None or np.any(self.truth < 0):
                raise CrowdDataError("stratify=True needs the truth of every task")
            labels = self.truth
        try:
            first, second = train_test_split(
                tasks, test_size=test_size, random_state=seed, stratify=labels
            )
        except ValueError as exc:
            raise CrowdDataError(f"cannot split {self.n_tasks} tasks: {exc}") from exc
        return self.select_tasks(np.sort(first)), self.select_tasks(np.sort(second))

    def select_tasks(self, tasks: Any) -> CrowdData:
        """Keep some tasks (codes, or a boolean mask of length n_tasks) and their
        annotations; tasks are re-coded in the given order."""
        codes = np.asarray(tasks)
        if codes.dtype == bool:
            if codes.shape != (self.n_tasks,):
                raise CrowdDataError(
                    f"task mask has shape {codes.shape}, expected ({self.n_tasks},)"
                )
            codes = np.flatnonzero(codes)
        codes = codes.astype(np.int64, copy=False)
        _check_range(codes, self.n_tasks, "selected task")
        if len(np.unique(codes)) != len(codes):
            raise CrowdDataError("selected tasks repeat some task codes")
        new_code = np.full(self.n_tasks, -1, dtype=np.int64)
        new_code[codes] = np.arange(len(codes))
        kept = np.flatnonzero(new_code[self.task] >= 0)
        if len(kept) == 0:
            raise CrowdDataError("empty data: the selected tasks have no annotations")
        return self._replace(
            task=_readonly(new_code[self.task[kept]].astype(CODE_DTYPE)),
            worker=None if self.worker is None else _readonly(self.worker[kept]),
            label=_readonly(self.label[kept]),
            task_ids=_readonly(self.task_ids[codes]),
            features=None if self.features is None else _readonly(self.features[codes]),
            inputs=None if self.inputs is None else self.inputs.subset(codes),
            truth=_normalise_truth(None if self.truth is None else self.truth[codes]),
        )

    def restrict_to_workers(
        self, workers: Iterable[Any], drop_empty_tasks: bool = False
    ) -> CrowdData:
        """Keep only the annotations of the given workers (by worker id).

        Workers are re-coded in the order of their current codes. Tasks are kept,
        even those left without annotations, unless ``drop_empty_tasks``.
        """
        if self.worker is None:
            raise CrowdDataError("anonymous data has no workers to restrict to")
        wanted = as_id_array(list(workers))
        positions = pd.Index(self.worker_ids).get_indexer(wanted)
        if np.any(positions < 0):
            raise CrowdDataError(f"unknown worker ids: {show(wanted[positions < 0])}")
        keep_worker = np.zeros(self.n_workers, dtype=bool)
        keep_worker[positions] = True
        new_code = np.cumsum(keep_worker) - 1
        kept = np.flatnonzero(keep_worker[self.worker])
        if len(kept) == 0:
            raise CrowdDataError("empty data: the selected workers have no annotations")
        data = self._replace(
            task=_readonly(self.task[kept]),
            worker=_readonly(new_code[self.worker[kept]].astype(CODE_DTYPE)),
            label=_readonly(self.label[kept]),
            worker_ids=_readonly(self.worker_ids[keep_worker]),
        )
        if drop_empty_tasks:
            data = data.select_tasks(data.feedback_effort > 0)
        return data

    def to_frame(self, truth: bool = False) -> pd.DataFrame:
        """One row per annotation with the user's ids: columns task, worker, label
        (no worker column when anonymous), and a ``truth`` column if asked
        (missing where unknown)."""
        columns: dict[str, Any] = {"task": self.task_ids[self.task]}
        if self.worker is not None:
            columns["worker"] = self.worker_ids[self.worker]
        columns["label"] = self.classes[self.label]
        if truth:
            columns["truth"] = self._truth_column()
        return pd.DataFrame(columns)

    def _truth_column(self) -> Any:
        """Each annotation's task truth; nullable dtypes keep int and bool classes exact
        where some truth is missing (a float column would round ids above 2**53)."""
        codes = np.full(self.n_annotations, -1) if self.truth is None else self.truth[self.task]
        known = codes >= 0
        values = self.classes[np.where(known, codes, 0)]
        if self.classes.dtype.kind == "b":
            return pd.arrays.BooleanArray(values, ~known)
        if self.classes.dtype.kind in "iu":
            return pd.arrays.IntegerArray(values.astype(np.int64), ~known)
        column = values.astype(object)
        column[~known] = None
        return column

    def truth_series(self) -> pd.Series:
        """Known truth as a Series of class ids indexed by task id."""
        if self.truth is None:
            return pd.Series(
                [], dtype=object, index=pd.Index(self.task_ids[:0], name="task"), name="truth"
            )
        known = self.truth >= 0
        return pd.Series(
            self.classes[self.truth[known]],
            index=pd.Index(self.task_ids[known], name="task"),
            name="truth",
        )

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

    def _take_annotations(self, rows: np.ndarray) -> CrowdData:
        return self._replace(
            task=self.task[rows],
            worker=None if self.worker is None else self.worker[rows],
            label=self.label[rows],
        )

    def _sorted_codes(self) -> tuple[np.ndarray, ...]:
        """Code arrays in a canonical row order, for order-insensitive comparison."""
        columns = (
            [self.label, self.task]
            if self.worker is None
            else [self.label, self.worker, self.task]
        )
        order = np.lexsort(columns)
        return tuple(column[order] for column in reversed(columns))


# ---------------------------------------------------------------------- validation helpers


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def _code_array(values: Any, what: str) -> np.ndarray:
    """Integer codes as int32; floats are accepted when integral, NaN is an error.

    Integer input is range-checked in place and converted without an int64
    temporary (readers pass narrow codes to keep the peak memory of a load low).
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise CrowdDataError(f"{what} codes must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        nan = np.flatnonzero(np.isnan(arr))
        if len(nan):
            raise CrowdDataError(f"{what} codes contain NaN at rows {show(nan)}")
        fractional = np.flatnonzero(arr != np.round(arr))
        if len(fractional):
            raise CrowdDataError(f"{what} codes must be integers; rows {show(fractional)} are not")
    elif arr.dtype.kind not in "iub" and len(arr):
        raise CrowdDataError(f"{what} codes must be integers, got dtype {arr.dtype}")
    limit = np.iinfo(CODE_DTYPE)
    if len(arr) and arr.dtype.kind != "b" and (arr.max() > limit.max or arr.min() < limit.min):
        too_big = np.flatnonzero((arr > limit.max) | (arr < limit.min))
        raise CrowdDataError(f"{what} codes exceed the int32 range at rows {show(too_big)}")
    return arr.astype(CODE_DTYPE, copy=False)


def _cells(rows: np.ndarray, cols: np.ndarray, which: np.ndarray) -> str:
    """The (row, column) pairs of some matrix entries, for an error message."""
    return show(list(zip(rows[which].tolist(), cols[which].tolist(), strict=True)))


def _check_lengths(**arrays: np.ndarray | None) -> None:
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise CrowdDataError(f"mismatched array lengths: {described} rows")


def _ids_or_range(ids: Any, n: int | None, codes: np.ndarray, what: str) -> np.ndarray:
    if ids is not None:
        ids = declared_ids(ids, what)
        if n is not None and n != len(ids):
            raise CrowdDataError(f"{len(ids)} {what} ids were declared but n={n} was given")
        return ids
    if n is None:
        known = codes[codes >= 0]
        n = int(known.max()) + 1 if len(known) else 0
    check_allocation(
        array_bytes([n]), f"the ids of {n} {'classes' if what == 'label' else what + 's'}"
    )
    return np.arange(n, dtype=np.int64)


def _check_range(codes: np.ndarray, n: int, what: str, noun: str | None = None) -> None:
    noun = noun or what
    negative = np.flatnonzero(codes < 0)
    if len(negative):
        raise CrowdDataError(
            f"negative {what} codes {show(codes[negative])} at rows {show(negative)}"
        )
    beyond = np.flatnonzero(codes >= n)
    if len(beyond):
        raise CrowdDataError(
            f"{what} codes {show(codes[beyond])} at rows {show(beyond)} are out of range: "
            f"there are {n} {noun} ids (codes 0..{n - 1})"
        )


def _validate_truth_codes(truth: np.ndarray, n_tasks: int, n_classes: int) -> np.ndarray | None:
    if len(truth) != n_tasks:
        raise CrowdDataError(f"truth has {len(truth)} entries but there are {n_tasks} tasks")
    bad = np.flatnonzero((truth < -1) | (truth >= n_classes))
    if len(bad):
        raise CrowdDataError(
            f"truth has unknown classes {show(truth[bad])} at tasks {show(bad)}: "
            f"class codes are 0..{n_classes - 1}, and -1 marks an unknown truth"
        )
    return _normalise_truth(truth)


def _normalise_truth(truth: np.ndarray | None) -> np.ndarray | None:
    """No known truth at all is stored as None."""
    if truth is None or not np.any(truth >= 0):
        return None
    return truth.astype(CODE_DTYPE, copy=False)


def _validate_features(features: Any, n_tasks: int) -> np.ndarray | None:
    if features is None:
        return None
    array = np.asarray(features)
    if array.ndim < 2:
        raise CrowdDataError(
            f"features must have one row per task (2-D or more), got shape {array.shape}"
        )
    if array.shape[0] != n_tasks:
        raise CrowdDataError(f"features have {array.shape[0]} rows but there are {n_tasks} tasks")
    if array.dtype.kind not in "fiub":
        raise CrowdDataError(f"features must be numeric, got dtype {array.dtype}")
    if array.dtype.kind != "f":
        array = array.astype(np.float32)
    finite = np.isfinite(array).reshape(n_tasks, -1).all(axis=1)
    if not finite.all():
        raise CrowdDataError(
            "features contain non-finite values (NaN or inf) at rows "
            f"{show(np.flatnonzero(~finite))}"
        )
    return array


def _duplicate_rows_to_keep(
    task: np.ndarray,
    worker: np.ndarray,
    n_workers: int,
    policy: str,
    task_ids: np.ndarray,
    worker_ids: np.ndarray,
) -> np.ndarray | None:
    """Rows to keep under the duplicate policy, or None to keep them all."""
    if policy == "keep":
        return None
    key = _pair_keys(task, worker, n_workers)
    key.sort()  # in place: this check runs on every construction, keep its memory at one key
    if not np.any(key[1:] == key[:-1]):
        return None
    key = _pair_keys(task, worker, n_workers)
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.concatenate([[True], key[1:] != key[:-1]])
    if policy == "error":
        repeated = np.flatnonzero(~starts)
        first_row = order[repeated[0]]
        rows = order[key == key[repeated[0]]]
        n_pairs = len(np.unique(key[repeated]))
        raise CrowdDataError(
            f"{n_pairs} duplicate (task, worker) pair(s), e.g. task "
            f"{plain(task_ids[task[first_row]])} by worker {plain(worker_ids[worker[first_row]])} "
            f"at rows {show(np.sort(rows))}; pass duplicates='keep', 'first' or 'last' to choose "
            "how to handle them"
        )
    ends = np.concatenate([starts[1:], [True]])
    kept = order[starts] if policy == "first" else order[ends]
    kept.sort()
    return kept


def _pair_keys(task: np.ndarray, worker: np.ndarray, n_workers: int) -> np.ndarray:
    """One int64 per annotation identifying its (task, worker) pair."""
    key = task.astype(np.int64)
    key *= max(n_workers, 1)
    key += worker
    return key


def _group_index(codes: np.ndarray, n_groups: int) -> GroupIndex:
    index_dtype = np.int32 if len(codes) < np.iinfo(np.int32).max else np.int64
    order = np.argsort(codes, kind="stable").astype(index_dtype, copy=False)
    indptr = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_groups), out=indptr[1:])
    return GroupIndex(indptr=_readonly(indptr), order=_readonly(order))


def _same_ids(a: np.ndarray, b: np.ndarray) -> bool:
    """Ids are equal when they have the same values and the same kind (1 != "1")."""
    if len(a) != len(b) or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind == "O" and pd.api.types.infer_dtype(a) != pd.api.types.infer_dtype(b):
        return False
    return bool(np.array_equal(a, b))


# ---------------------------------------------------------------------- truth and features


def _known_truth(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mask of truth entries that are known: not None/NaN, and not -1 unless -1 is a label."""
    known = np.ones(len(values), dtype=bool)
    known[missing_rows(values)] = False
    minus_one_is_label = bool(np.any(labels == -1)) if labels.dtype.kind in "iuf" else False
    if not minus_one_is_label:
        with np.errstate(invalid="ignore"):
            known &= ~_equals_minus_one(values)
    return known


def _equals_minus_one(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind in "iuf":
        return values == -1
    return np.array([isinstance(v, (int, np.integer)) and v == -1 for v in values], dtype=bool)


def _truth_by_task(truth: Any, task_ids: np.ndarray) -> np.ndarray:
    """Truth values (user class ids, possibly missing) aligned with task codes."""
    if isinstance(truth, (Mapping, pd.Series)):
        series = truth if isinstance(truth, pd.Series) else pd.Series(dict(truth), dtype=object)
        unknown = ~series.index.isin(task_ids)
        if unknown.any():
            raise CrowdDataError(
                f"truth is given for tasks that are not in the data: {show(series.index[unknown])}"
            )
        return as_id_array(series.reindex(pd.Index(task_ids)).astype(object))
    values = as_id_array(truth)
    if len(values) != len(task_ids):
        raise CrowdDataError(
            f"truth has {len(values)} entries but there are {len(task_ids)} tasks"
        )
    return values


def _truth_codes(values: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Class codes of truth values; -1 where unknown; an error for unknown classes."""
    known = _known_truth(values, classes)
    codes = np.full(len(values), -1, dtype=np.int64)
    positions = pd.Index(classes).get_indexer(values[known])
    if np.any(positions < 0):
        bad_tasks = np.flatnonzero(known)[positions < 0]
        raise CrowdDataError(
            f"truth has unknown classes {show(pd.unique(values[bad_tasks]))} at task codes "
            f"{show(bad_tasks)}; the classes are {show(classes, 20)}"
        )
    codes[known] = positions
    return codes


def _truth_from_rows(task: pd.Series, truth: pd.Series) -> pd.Series:
    """Per-task truth from a per-row column; rows of a task must agree."""
    frame = pd.DataFrame({"task": as_id_array(task), "truth": as_id_array(truth)}).dropna()
    per_task = frame.groupby("task", sort=False)["truth"].nunique()
    conflicting = per_task.index[per_task > 1]
    if len(conflicting):
        raise CrowdDataError(f"the truth column disagrees within tasks {show(conflicting)}")
    return frame.drop_duplicates("task").set_index("task")["truth"]


def _features_by_task(features: Any, task_ids: np.ndarray) -> Any:
    """Reindex a DataFrame of features by task id; arrays pass through unchanged."""
    if not isinstance(features, pd.DataFrame):
        return features
    missing = ~pd.Index(task_ids).isin(features.index)
    if missing.any():
        raise CrowdDataError(f"features have no row for tasks {show(task_ids[missing])}")
    return features.loc[task_ids].to_numpy()
