"""Texts: free-text answers (transcriptions, short texts).

Each annotation is one worker's text for one task, ``text`` (an object array of
``str``). An empty or whitespace-only text is an error naming its rows (a worker who
gave nothing gave no answer: leave the row out). The truth, where known, is the true
text of each task (``None`` where unknown).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import factorize
from crowdlearn.data._kinds import (
    TaskKindData,
    coded_annotations,
    frame_column,
    task_features,
    truth_by_task,
)
from crowdlearn.data.errors import CrowdDataError, show


class Texts(TaskKindData):
    """Free-text crowd answers.

    Parameters
    ----------
    task, worker : array-like of int
        Task and worker code of each annotation.
    text : array-like of str
        The text of each annotation (not empty, not only whitespace).
    task_ids, worker_ids : array-like, optional
    truth : array of shape (n_tasks,), optional
        True texts, ``None`` where unknown.
    features : array of shape (n_tasks, ...), optional
    duplicates : {"error", "keep", "first", "last"}

    Examples
    --------
    >>> t = Texts.from_arrays(["a", "a", "b"], ["w1", "w2", "w1"],
    ...                       ["the cat sat", "the cat sad", "a dog"])
    >>> t
    Texts(n_tasks=2, n_workers=2, n_annotations=3)
    >>> list(t.text)
    ['the cat sat', 'the cat sad', 'a dog']
    """

    kind = "text"
    _rows = ("task", "worker", "text")
    _axes = ("task_ids", "worker_ids")
    _extras = ("truth", "features")

    def __init__(
        self,
        task: Any,
        worker: Any,
        text: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        n_tasks: int | None = None,
        truth: Any = None,
        features: Any = None,
        duplicates: str = "error",
    ) -> None:
        task, worker, text, task_ids, worker_ids = coded_annotations(
            task, worker, _texts(text, "text"), "text", task_ids=task_ids,
            worker_ids=worker_ids, n_tasks=n_tasks, duplicates=duplicates,
        )  # fmt: skip
        if truth is not None:
            truth = _texts(truth, "truth", missing_ok=True)
            if truth.shape != (len(task_ids),):
                raise CrowdDataError(
                    f"truth must have one text per task ({len(task_ids)}), got {truth.shape}"
                )
            if all(t is None for t in truth.tolist()):
                truth = None
        self._store(
            task=task, worker=worker, text=text, task_ids=task_ids, worker_ids=worker_ids,
            truth=truth, features=task_features(features, len(task_ids)),
        )  # fmt: skip

    @classmethod
    def from_arrays(
        cls,
        task: Any,
        worker: Any,
        text: Any,
        *,
        task_ids: Any = None,
        worker_ids: Any = None,
        truth: Any = None,
        features: Any = None,
        duplicates: str = "error",
    ) -> Texts:
        """Build from one entry per annotation with any hashable ids.

        Parameters
        ----------
        text : array-like of str
        truth : Mapping / Series keyed by task id, or a sequence aligned with the task
            codes, optional (texts; ``None`` or NaN where unknown).
        """
        task_codes, task_ids = factorize(task, "task", task_ids)
        worker_codes, worker_ids = factorize(worker, "worker", worker_ids)
        truth_texts = None if truth is None else truth_by_task(truth, task_ids)
        return cls(
            task_codes,
            worker_codes,
            text,
            task_ids=task_ids,
            worker_ids=worker_ids,
            truth=truth_texts,
            features=features,
            duplicates=duplicates,
        )

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        task: str = "task",
        worker: str = "worker",
        label: str = "text",
        **kwargs: Any,
    ) -> Texts:
        """Build from a DataFrame with one row per (task, worker) and the text in
        ``label`` (default column ``"text"``)."""
        return cls.from_arrays(
            frame_column(frame, task, "task"),
            frame_column(frame, worker, "worker"),
            frame_column(frame, label, "text"),
            **kwargs,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per annotation: task, worker, text."""
        return pd.DataFrame(
            {
                "task": self.task_ids[self.task],
                "worker": self.worker_ids[self.worker],
                "text": self.text,
            }
        )

    def __repr__(self) -> str:
        extras = ""
        if self.features is not None:
            extras += f", features={self.features.shape}"
        if self.truth is not None:
            known = sum(t is not None for t in self.truth.tolist())
            extras += f", truth={known} known"
        return (
            f"Texts(n_tasks={self.n_tasks}, n_workers={self.n_workers}, "
            f"n_annotations={self.n_annotations}{extras})"
        )


def _texts(values: Any, what: str, missing_ok: bool = False) -> np.ndarray:
    """An object array of str, with one error naming the rows that are not texts.

    Missing cells (None, NaN) are errors unless ``missing_ok`` (they become None);
    empty or whitespace-only texts are always errors.
    """
    if isinstance(values, (str, bytes)):
        raise CrowdDataError(f"{what}: expected one text per entry, got a single string")
    cells = values.tolist() if isinstance(values, (np.ndarray, pd.Series)) else list(values)
    out = np.empty(len(cells), dtype=object)
    missing, wrong, blank = [], [], []
    for row, cell in enumerate(cells):
        if cell is None or (isinstance(cell, float) and cell != cell) or cell is pd.NA:
            missing.append(row)
            out[row] = None
        elif not isinstance(cell, str):
            wrong.append(row)
        elif not cell.strip():
            blank.append(row)
        else:
            out[row] = cell
    if wrong:
        raise CrowdDataError(
            f"{what}s must be strings; rows {show(wrong)} hold "
            f"{show([type(cells[r]).__name__ for r in wrong])}"
        )
    if blank:
        raise CrowdDataError(
            f"{what}s at rows {show(blank)} are empty or only whitespace; leave those rows out"
        )
    if missing and not missing_ok:
        raise CrowdDataError(f"{what}s at rows {show(missing)} are missing")
    return out
