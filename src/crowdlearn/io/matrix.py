"""Answer matrices: one row per task, one column per worker, ``missing`` where unanswered.

This is the format of Rodrigues & Pereira's LabelMe and Music data (``answers.txt``
with ``-1`` for no answer). Entry ``(i, j)`` is the class code worker ``j`` gave task
``i``. The format has no ids: tasks, workers and classes are numbers ``0..n-1``, and
it holds neither truth nor features (pass them to :func:`read_matrix` separately).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from crowdlearn._atomic import atomic_open
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data._memory import array_bytes, check_allocation
from crowdlearn.io._common import (
    about,
    as_path,
    existing_path,
    is_range,
    load_npy,
    npy_problem,
    refuse_repeated_pairs,
    require_data,
)

#: Largest matrix (tasks x workers) that :func:`to_matrix` builds: 200M cells of int32.
MAX_CELLS = 200_000_000
#: Matrix file endings and their field separators (None: whitespace; "": binary .npy).
MATRIX_SUFFIXES = {".txt": None, ".csv": ",", ".npy": ""}


def to_matrix(data: CrowdData, missing: int = -1) -> np.ndarray:
    """The dense answer matrix of some data.

    Parameters
    ----------
    data : CrowdData
        Annotated by identified workers, at most once per (task, worker) pair.
    missing : int, default -1
        Value of unanswered cells; it must not be a class code.

    Returns
    -------
    ndarray of int32, shape (n_tasks, n_workers)
        Class codes, ``missing`` where a worker did not answer a task.

    Raises
    ------
    CrowdDataError
        For anonymous data, repeated (task, worker) pairs, a ``missing`` value that is
        a class code, or a matrix of more than ``MAX_CELLS`` cells.
    """
    require_data(data, "io.to_matrix")
    if data.is_anonymous:
        raise CrowdDataError("anonymous data has no workers, so it has no answer matrix")
    cells = data.n_tasks * data.n_workers
    if cells > MAX_CELLS:
        raise CrowdDataError(
            f"the answer matrix would have {data.n_tasks} x {data.n_workers} = {cells} cells, "
            f"more than {MAX_CELLS}; keep the data sparse (CSV, Parquet or peerannot)"
        )
    limits = np.iinfo(np.int32)
    if 0 <= missing < data.n_classes or not limits.min <= missing <= limits.max:
        raise CrowdDataError(
            f"missing={missing} must be an int32 value that is not a class code "
            f"(0..{data.n_classes - 1})"
        )
    refuse_repeated_pairs(data, "a matrix cell holds one answer")
    check_allocation(
        array_bytes([data.n_tasks, data.n_workers], 4),
        f"the {data.n_tasks} x {data.n_workers} answer matrix",
    )
    matrix = np.full((data.n_tasks, data.n_workers), missing, dtype=np.int32)
    matrix[data.task, data.worker] = data.label
    return matrix


def read_matrix(
    path: str | os.PathLike[str],
    *,
    missing: int = -1,
    n_classes: int | None = None,
    truth: Any = None,
    features: Any = None,
) -> CrowdData:
    """Read an answer matrix from a ``.txt`` (whitespace-separated), ``.csv`` or ``.npy`` file.

    Parameters
    ----------
    path : str or path-like
    missing : int, default -1
        Value of unanswered cells (NaN also counts as missing).
    n_classes : int, optional
        Number of classes; default one more than the largest class code seen.
    truth : array-like or path, optional
        Class code of each task (``-1`` unknown), or a file holding them.
    features : array-like or path, optional
        One row of features per task, or a file holding them.

    Returns
    -------
    CrowdData
        Task, worker and class ids are the row, column and class numbers.

    Raises
    ------
    CrowdDataError
        Naming the file, for entries that are not numbers, non-integer or negative
        answers, or an empty matrix.
    """
    path = existing_path(path)
    with about(path):
        answers = _load(path, ndmin=2)
        if answers.size == 0:
            raise CrowdDataError("the file holds no answers")
        return CrowdData.from_matrix(
            answers,
            missing,
            n_classes=n_classes,
            truth=_array_or_file(truth, ndmin=1),
            features=_array_or_file(features, ndmin=2),
        )


def write_matrix(
    data: CrowdData,
    path: str | os.PathLike[str],
    *,
    missing: int = -1,
    drop_ids: bool = False,
) -> None:
    """Write the answer matrix to a ``.txt`` (integers), ``.csv`` or ``.npy`` file, atomically.

    Truth and features are not written (the format has room for neither).

    Parameters
    ----------
    data : CrowdData
    path : str or path-like
    missing : int, default -1
        Value of unanswered cells.
    drop_ids : bool, default False
        The format has no ids, so task, worker and class ids must be the integers
        ``0..n-1``; set this to write the codes of other ids anyway.

    Raises
    ------
    CrowdDataError
        For ids that are not ``0..n-1`` (unless ``drop_ids``), an unknown file
        ending, or data :func:`to_matrix` refuses; nothing is written then.
    """
    require_data(data, "io.write_matrix")
    as_path(path)
    suffix = _suffix(Path(path))
    if not drop_ids:
        named = {"task": data.task_ids, "worker": data.worker_ids, "class": data.classes}
        odd = [what for what, ids in named.items() if not is_range(ids)]
        if odd:
            raise CrowdDataError(
                f"the {', '.join(odd)} ids are not the integers 0..n-1 and an answer matrix "
                "has no ids; pass drop_ids=True to write the codes instead"
            )
    matrix = to_matrix(data, missing)
    if suffix == ".npy":
        with atomic_open(path, "wb") as handle:
            np.save(handle, matrix, allow_pickle=False)
    else:
        with atomic_open(path, "w") as handle:
            np.savetxt(handle, matrix, fmt="%d", delimiter=MATRIX_SUFFIXES[suffix] or " ")


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in MATRIX_SUFFIXES:
        raise CrowdDataError(
            f"{path}: unknown matrix file ending {suffix!r}; use one of {list(MATRIX_SUFFIXES)}"
        )
    return suffix


def _load(path: Path, ndmin: int) -> np.ndarray:
    suffix = _suffix(path)
    try:
        if suffix == ".npy":
            try:
                return load_npy(path)
            except ValueError as exc:
                raise ValueError(npy_problem(exc)) from None
        with warnings.catch_warnings():
            # An empty file only warns; the caller reports it.
            warnings.simplefilter("ignore", UserWarning)
            return np.loadtxt(path, delimiter=MATRIX_SUFFIXES[suffix], ndmin=ndmin)
    except (ValueError, OSError, EOFError) as exc:
        raise CrowdDataError(f"{path}: cannot read a numeric array: {exc}") from None


def _array_or_file(value: Any, ndmin: int) -> Any:
    """An array given directly, or loaded from a file path."""
    if isinstance(value, (str, os.PathLike)):
        path = existing_path(value)
        with about(path):
            return _load(path, ndmin)
    return value
