"""Label sets: "select every class that applies" answers (multi-label crowds).

Each annotation is one worker's *set* of classes for one task, stored as one row of a
boolean matrix ``answers`` (n_annotations x n_classes). An empty row is an explicit
"none of these" answer; a worker who gave no answer for a task has no row at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import as_id_array, factorize
from crowdlearn.data._kinds import (
    TaskKindData,
    coded_annotations,
    frame_column,
    id_axis,
    task_features,
    truth_by_task,
)
from crowdlearn.data.errors import CrowdDataError, plain, show

_BRACKETED = re.compile(r"\[([^\[\]]*)\]")


def parse_label_set(cell: Any, sep: str | None = None) -> list[Any]:
    """The classes in one label-set cell.

    Accepted: a list, tuple or set of class ids; a JSON list (``'["a", "b"]'``);
    CrowdFlower's bracketed values, one per line (``"[CAUSES]\\n[SYMPTOM]"``); a text
    split on ``sep`` (e.g. ``"a|b"`` with ``sep="|"``); a single class. An empty
    cell, ``""`` or ``"[]"`` is the empty set ("none of these").

    >>> parse_label_set('["cause", "treat"]')
    ['cause', 'treat']
    >>> parse_label_set("[CAUSES]\\n[SYMPTOM]")
    ['CAUSES', 'SYMPTOM']
    >>> parse_label_set("a|b", sep="|")
    ['a', 'b']
    """
    if isinstance(cell, (list, tuple, set, frozenset, np.ndarray)):
        return list(cell)
    if cell is None or (isinstance(cell, float) and np.isnan(cell)):
        return []
    if not isinstance(cell, str):
        return [cell]
    text = cell.strip()
    if not text or text == "[]":
        return []
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
        found = _BRACKETED.findall(text)
        rest = _BRACKETED.sub("", text).strip()
        if found and not rest:
            return [value.strip() for value in found if value.strip()]
        raise CrowdDataError(f"cannot parse the label set {cell!r}")
    if sep is not None:
        return [value.strip() for value in text.split(sep) if value.strip()]
    return [text]


class LabelSets(TaskKindData):
    """Multi-label crowd answers: each annotation is a set of classes.

    Most users build one with :meth:`from_arrays` or :meth:`from_frame`; the
    initializer takes codes.

    Parameters
    ----------
    task, worker : array-like of int
        Task and worker code of each annotation.
    answers : array of bool, shape (n_annotations, n_classes)
        ``answers[a, k]`` is True when annotation ``a`` selected class ``k``.
    task_ids, worker_ids, classes : array-like, optional
        The user's id of each code (default ``0..n-1``).
    truth : array of shape (n_tasks, n_classes), optional
        The true sets as 0/1, with a row of ``-1`` where a task's truth is unknown.
    features : array of shape (n_tasks, ...), optional
    duplicates : {"error", "keep", "first", "last"}

    Examples
    --------
    >>> sets = LabelSets.from_arrays(
    ...     task=["t1", "t1", "t2"], worker=["a", "b", "a"],
    ...     labels=[["cat", "dog"], ["cat"], []],
    ... )
    >>> sets
    LabelSets(n_tasks=2, n_workers=2, n_classes=2, n_annotations=3)
    >>> sets.answers.astype(int)
    array([[1, 1],
           [1, 0],
           [0, 0]])
    """

    kind = "multilabel"
    _rows = ("task", "worker", "answers")
    _axes = ("task_ids", "worker_ids", "classes")
    _extras = ("truth", "features")

    def __init__(
        self,
        task: Any,
        worker: Any,
        answers: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        classes: Any = None,
        n_tasks: int | None = None,
        truth: Any = None,
        features: Any = None,
        duplicates: str = "error",
    ) -> None:
        answers = np.asarray(answers)
        if answers.ndim != 2:
            raise CrowdDataError(
                f"answers must be a 2-D (annotations x classes) array, got shape {answers.shape}"
            )
        if answers.dtype != bool:
            if answers.dtype.kind not in "iub" or np.any((answers != 0) & (answers != 1)):
                raise CrowdDataError("answers must hold 0/1 or booleans")
            answers = answers.astype(bool)
        n_classes = answers.shape[1] if classes is None else len(classes)
        if answers.shape[1] != n_classes:
            raise CrowdDataError(
                f"answers have {answers.shape[1]} columns but there are {n_classes} classes"
            )
        task, worker, answers, task_ids, worker_ids = coded_annotations(
            task, worker, answers, "answers", task_ids=task_ids, worker_ids=worker_ids,
            n_tasks=n_tasks, duplicates=duplicates,
        )  # fmt: skip
        classes = id_axis(classes, n_classes, np.empty(0, np.int32), "label")
        self._store(
            task=task, worker=worker, answers=answers, task_ids=task_ids, worker_ids=worker_ids,
            classes=classes,
            truth=None if truth is None else _truth_matrix(truth, task_ids, classes),
            features=task_features(features, len(task_ids)),
        )  # fmt: skip

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_arrays(
        cls,
        task: Any,
        worker: Any,
        labels: Iterable[Any],
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        classes: Any = None,
        truth: Any = None,
        features: Any = None,
        sep: str | None = None,
        duplicates: str = "error",
    ) -> LabelSets:
        """Build from one entry per annotation with any hashable ids.

        Parameters
        ----------
        task, worker : array-like
            The task and worker id of each annotation.
        labels : sequence
            Each annotation's set: an iterable of class ids, or a cell that
            :func:`parse_label_set` reads (JSON list, CrowdFlower brackets, text split on
            ``sep``). An empty set is the answer "none of these".
        classes : array-like, optional
            Declared classes (their order gives the codes); default: the sorted classes
            seen in the answers and the truth.
        truth : Mapping or Series of task id -> set, or a sequence aligned with the
            task codes, optional.
        """
        task_arr, worker_arr = as_id_array(task, "task"), as_id_array(worker, "worker")
        sets = [_parsed(cell, sep, row) for row, cell in enumerate(labels)]
        if not (len(task_arr) == len(worker_arr) == len(sets)):
            raise CrowdDataError(
                f"task, worker and labels differ in length: {len(task_arr)}, "
                f"{len(worker_arr)}, {len(sets)}"
            )
        task_codes, task_ids = factorize(task_arr, "task", task_ids)
        worker_codes, worker_ids = factorize(worker_arr, "worker", worker_ids)
        truth_sets = _truth_sets(truth, task_ids, sep)
        lengths = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
        flat = [value for s in sets for value in s]
        truth_flat = [value for s in truth_sets if s is not None for value in s]
        everything = as_id_array(flat + truth_flat, "label") if flat or truth_flat else None
        if classes is None and everything is None:
            raise CrowdDataError("no class was selected in any answer; declare classes=")
        if everything is None:
            everything = as_id_array(np.empty(0, dtype=object), "label")
        codes, classes = factorize(everything, "label", classes)
        answers = np.zeros((len(sets), len(classes)), dtype=bool)
        answers[np.repeat(np.arange(len(sets)), lengths), codes[: len(flat)]] = True
        truth_matrix = None
        if any(s is not None for s in truth_sets):
            truth_matrix = np.full((len(task_ids), len(classes)), -1, dtype=np.int8)
            truth_codes = codes[len(flat) :]
            position = 0
            for i, s in enumerate(truth_sets):
                if s is None:
                    continue
                truth_matrix[i] = 0
                truth_matrix[i, truth_codes[position : position + len(s)]] = 1
                position += len(s)
        return cls(
            task_codes,
            worker_codes,
            answers,
            task_ids=task_ids,
            worker_ids=worker_ids,
            classes=classes,
            truth=truth_matrix,
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
        *,
        sep: str | None = None,
        layout: str = "auto",
        **kwargs: Any,
    ) -> LabelSets:
        """Build from a DataFrame in either layout.

        ``layout="cells"``: one row per (task, worker) whose ``label`` cell holds the
        whole set (see :func:`parse_label_set`). ``layout="long"``: one row per
        (task, worker, class), the rows of a pair merged into one set (a row with an
        empty label is an explicit empty answer). ``"auto"`` takes the long layout when
        every cell holds at most one class and some (task, worker) pair repeats.
        """
        if layout not in ("auto", "cells", "long"):
            raise CrowdDataError(f"layout must be 'auto', 'cells' or 'long', got {layout!r}")
        tasks = frame_column(frame, task, "task")
        workers = frame_column(frame, worker, "worker")
        cells = [_parsed(c, sep, row) for row, c in enumerate(frame_column(frame, label, "label"))]
        if layout == "auto":
            single = all(len(c) <= 1 for c in cells)
            pairs = pd.MultiIndex.from_arrays([tasks.to_numpy(), workers.to_numpy()])
            layout = "long" if single and pairs.has_duplicates else "cells"
        if layout == "cells":
            return cls.from_arrays(tasks, workers, cells, **kwargs)
        merged: dict[tuple[Any, Any], list[Any]] = {}
        for t, w, c in zip(tasks.tolist(), workers.tolist(), cells, strict=True):
            merged.setdefault((t, w), []).extend(v for v in c if v not in merged.get((t, w), ()))
        keys = list(merged)
        return cls.from_arrays(
            [k[0] for k in keys], [k[1] for k in keys], list(merged.values()), **kwargs
        )

    # ------------------------------------------------------------------------ views

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def binary(self, k: int) -> Any:
        """The crowd for class ``k`` alone, as a two-class CrowdData (0: not selected,
        1: selected), with the same task and worker ids and codes (the per-class
        reduction of multi-label aggregation)."""
        from crowdlearn.data.crowddata import CrowdData

        truth = None
        if self.truth is not None:
            truth = self.truth[:, k].astype(np.int32)
        return CrowdData(
            self.task,
            self.worker,
            self.answers[:, k].astype(np.int32),
            task_ids=self.task_ids,
            worker_ids=self.worker_ids,
            classes=np.array([0, 1]),
            truth=truth,
            features=self.features,
            duplicates="keep",
        )

    def to_frame(self, sep: str | None = None) -> pd.DataFrame:
        """One row per annotation: task, worker and the set (a list, or a text joined
        with ``sep``)."""
        rows, cols = np.nonzero(self.answers)
        starts = np.searchsorted(rows, np.arange(self.n_annotations + 1))
        classes = self.classes.tolist()
        sets = [
            [classes[c] for c in cols[starts[a] : starts[a + 1]]]
            for a in range(self.n_annotations)
        ]
        if sep is not None:
            sets = [sep.join(map(str, s)) for s in sets]
        return pd.DataFrame(
            {
                "task": self.task_ids[self.task],
                "worker": self.worker_ids[self.worker],
                "label": sets,
            }
        )

    def __repr__(self) -> str:
        extras = ""
        if self.features is not None:
            extras += f", features={self.features.shape}"
        if self.truth is not None:
            extras += f", truth={int(np.sum(self.truth[:, 0] >= 0))} known"
        return (
            f"LabelSets(n_tasks={self.n_tasks}, n_workers={self.n_workers}, "
            f"n_classes={self.n_classes}, n_annotations={self.n_annotations}{extras})"
        )


def _parsed(cell: Any, sep: str | None, row: int) -> list[Any]:
    try:
        values = parse_label_set(cell, sep)
    except CrowdDataError as error:
        raise CrowdDataError(f"row {row}: {error}") from None
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def _truth_sets(truth: Any, task_ids: np.ndarray, sep: str | None) -> list[list[Any] | None]:
    """Each task's true set (None where unknown), from a mapping or an aligned sequence."""
    if truth is None:
        return [None] * len(task_ids)
    cells = truth_by_task(truth, task_ids)
    return [None if c is None else _parsed(c, sep, i) for i, c in enumerate(cells)]


def _truth_matrix(truth: Any, task_ids: np.ndarray, classes: np.ndarray) -> np.ndarray:
    matrix = np.asarray(truth)
    if matrix.shape != (len(task_ids), len(classes)):
        raise CrowdDataError(
            f"truth must have shape (n_tasks, n_classes) = {(len(task_ids), len(classes))}, "
            f"got {matrix.shape}"
        )
    if matrix.dtype.kind not in "iub" or np.any((matrix != 0) & (matrix != 1) & (matrix != -1)):
        raise CrowdDataError("truth must hold 0/1, with -1 rows for unknown tasks")
    partial = np.any(matrix == -1, axis=1) & ~np.all(matrix == -1, axis=1)
    if np.any(partial):
        raise CrowdDataError(
            f"truth rows of tasks {show([plain(t) for t in task_ids[partial]])} mix -1 "
            "(unknown) with 0/1; a task's truth is known for every class or for none"
        )
    return matrix.astype(np.int8)
