"""The peerannot dataset format: ``answers.json`` and the files beside it.

A peerannot folder holds:

* ``answers.json``: ``{task: {worker: label}}``; JSON keys are text, labels are
  integer class codes ``0..K-1``; a task mapped to ``{}`` has no annotation.
* ``metadata.json``: ``n_classes``, ``n_workers`` and ``n_task`` (peerannot's
  spelling; ``n_tasks`` is accepted too), and possibly more (``name``...).
* ``ground_truth.npy``: the class code of task ``i`` at index ``i`` (task ids
  ``0..n-1``), ``-1`` when unknown; or ``ground_truth.json``: ``{task: class code}``.
* ``features.npy`` (crowdlearn's addition): one row of features per task, in code order.

Keys become ids by the text rule of :func:`crowdlearn.io._common.parse_ids` (canonical
integers become ints), unless ``metadata.json`` lists the ids. crowdlearn's writer
adds to ``metadata.json`` what a lossless read needs: ``classes`` (class ids in
code order) always, and ``task_ids`` / ``worker_ids`` (ids in code order; keys are
``str(id)``) when the ids are not simply the integers ``0..n-1``.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from crowdlearn._atomic import atomic_open
from crowdlearn.data import CrowdData, CrowdDataError, DuplicatePolicy
from crowdlearn.data._memory import array_bytes, check_allocation, check_implied_classes
from crowdlearn.data.errors import plain, show
from crowdlearn.io._columns import Column, encode
from crowdlearn.io._common import (
    about,
    as_path,
    existing_path,
    id_text,
    ids_to_json,
    is_range,
    json_count,
    json_ids,
    load_json,
    load_npy,
    npy_problem,
    parse_ids,
    refuse_repeated_pairs,
    require_data,
)

ANSWERS = "answers.json"
METADATA = "metadata.json"
TRUTH_NPY = "ground_truth.npy"
TRUTH_JSON = "ground_truth.json"
FEATURES = "features.npy"


class _Object(list):
    """A JSON object as its (key, value) pairs in file order, repeated keys included."""


@dataclass(frozen=True)
class _Metadata:
    """What ``metadata.json`` declares (None: not said)."""

    n_tasks: int | None = None
    n_workers: int | None = None
    n_classes: int | None = None
    task_ids: list | None = None
    worker_ids: list | None = None
    classes: list | None = None


@dataclass(frozen=True)
class _Answers:
    """``answers.json`` flattened: one entry per task object, one row per annotation."""

    task_keys: list[str]
    counts: np.ndarray
    worker_keys: list[str]
    labels: np.ndarray


# ---------------------------------------------------------------------------- reading


def read_answers_json(
    path: str | os.PathLike[str],
    *,
    metadata: bool = True,
    truth: bool = True,
    duplicates: DuplicatePolicy = "error",
) -> CrowdData:
    """Read a peerannot ``answers.json`` and the files beside it.

    This is the ``answers.json`` constructor of :class:`~crowdlearn.data.CrowdData`
    (``from_answers_json`` in the design). It is not a ``CrowdData`` classmethod so that
    :mod:`crowdlearn.data` imports no reader (readers depend on the data layer, never
    the reverse). Other features or truth than the files' are given afterwards:
    ``read_answers_json(path, truth=False).with_features(X).with_truth(y)``.

    Parameters
    ----------
    path : str or path-like
        The ``answers.json`` file (or the folder holding it).
    metadata : bool, default True
        Use ``metadata.json`` when present: it declares the tasks ``0..n_task-1``,
        workers ``0..n_workers-1`` and classes ``0..n_classes-1`` when keys are such
        integers (so ids without annotations survive), or lists the ids.
    truth : bool, default True
        Read ``ground_truth.npy`` or ``ground_truth.json`` when present.
    duplicates : {"error", "keep", "first", "last"}
        Policy for a worker answering a task twice (a task key or worker key
        repeated in the file).

    Returns
    -------
    CrowdData
        With ``features`` when ``features.npy`` is present.

    Raises
    ------
    CrowdDataError
        Naming the file and the place: malformed or truncated JSON (line and
        column), wrong nesting, a label that is not an integer class code or is out
        of range, class codes implying far more classes than are used (more than
        1000 and more than 10 times the distinct codes: declare ``n_classes`` in
        ``metadata.json``), malformed metadata, ground truth of the wrong length,
        invalid data. A :class:`~crowdlearn.data.CrowdMemoryError` (also a
        ``MemoryError``) when declared counts need more memory than is available.
    """
    path = existing_path(path)
    if path.is_dir():
        path = existing_path(path / ANSWERS)
    folder = path.parent
    meta = _read_metadata(folder / METADATA) if metadata else _Metadata()
    with about(path):
        answers = _flatten(load_json(path, object_pairs_hook=_Object))
        entry_codes, task_ids = _key_ids(answers.task_keys, meta.task_ids, meta.n_tasks, "task")
        worker_codes, worker_ids = _key_ids(
            answers.worker_keys, meta.worker_ids, meta.n_workers, "worker"
        )
        n_classes = _declared_n_classes(meta)
        if n_classes is not None:
            _check_label_range(answers, n_classes, meta)
        elif len(answers.labels) and answers.labels.min() < 0:
            _refuse_labels(answers, answers.labels < 0, "negative")
    truth_codes = _read_truth(folder, task_ids, n_classes) if truth else None
    features = _read_features(folder / FEATURES, len(task_ids))
    if n_classes is None:
        seen = (
            answers.labels
            if truth_codes is None
            else np.concatenate([answers.labels, truth_codes])
        )
        with about(path):
            check_implied_classes(seen, f'"n_classes" in {folder / METADATA}')
        n_classes = int(seen.max(initial=-1)) + 1
    if meta.classes is None:
        with about(path):
            check_allocation(array_bytes([n_classes]), f"the ids of {n_classes} classes")
    classes = np.arange(n_classes) if meta.classes is None else meta.classes
    with about(path):
        return CrowdData(
            np.repeat(entry_codes, answers.counts),
            worker_codes,
            answers.labels,
            task_ids=task_ids,
            worker_ids=worker_ids,
            classes=classes,
            truth=truth_codes,
            features=features,
            duplicates=duplicates,
        )


def read_peerannot(folder: str | os.PathLike[str], **kwargs: Any) -> CrowdData:
    """Read a peerannot dataset folder (its ``answers.json`` and the files beside it).

    Parameters
    ----------
    folder : str or path-like
        The folder holding ``answers.json``.
    **kwargs
        Passed to :func:`read_answers_json` (``metadata``, ``truth``, ``duplicates``).

    Returns
    -------
    CrowdData
    """
    folder = existing_path(folder)
    return read_answers_json(existing_path(folder / ANSWERS), **kwargs)


def _read_metadata(path: Path) -> _Metadata:
    if not path.exists():
        return _Metadata()
    with about(path):
        document = load_json(path)
        if not isinstance(document, dict):
            raise CrowdDataError(f"expected a JSON object, got {_json_type(document)}")
        listed = {
            key: json_ids(document[key], key)
            for key in ("task_ids", "worker_ids", "classes")
            if key in document
        }
        meta = _Metadata(
            n_tasks=json_count(document, "n_task", "n_tasks"),
            n_workers=json_count(document, "n_workers"),
            n_classes=json_count(document, "n_classes"),
            **listed,
        )
        for what, ids, n in (
            ("task_ids", meta.task_ids, meta.n_tasks),
            ("worker_ids", meta.worker_ids, meta.n_workers),
            ("classes", meta.classes, meta.n_classes),
        ):
            if ids is not None and n is not None and len(ids) != n:
                raise CrowdDataError(f"{what} lists {len(ids)} ids but the count says {n}")
    return meta


def _flatten(document: Any) -> _Answers:
    if not isinstance(document, _Object):
        raise CrowdDataError(
            "the top level must be an object {task: {worker: label}}, "
            f"got {_json_type(document)}"
        )
    task_keys: list[str] = []
    counts: list[int] = []
    worker_keys: list[str] = []
    labels: list[Any] = []
    for key, answers in document:
        if not isinstance(answers, _Object):
            raise CrowdDataError(
                f"task {key!r}: expected an object {{worker: label}}, got {_json_type(answers)}"
            )
        task_keys.append(key)
        counts.append(len(answers))
        if answers:
            workers, values = zip(*answers, strict=True)
            worker_keys.extend(workers)
            labels.extend(values)
    counts_array = np.asarray(counts, dtype=np.int64)
    bad = next((row for row, value in enumerate(labels) if type(value) is not int), None)
    if bad is None:
        try:
            label_array = np.asarray(labels, dtype=np.int64)
        except OverflowError:
            bad = next(row for row, value in enumerate(labels) if abs(value) >= 2**63)
    if bad is not None:
        task = task_keys[_entry_of_row(counts_array, bad)]
        raise CrowdDataError(
            f"task {task!r}, worker {worker_keys[bad]!r}: label {labels[bad]!r} is not an "
            "integer class code"
        )
    return _Answers(task_keys, counts_array, worker_keys, label_array)


def _entry_of_row(counts: np.ndarray, row: int) -> int:
    """The task entry an annotation row belongs to."""
    return int(np.searchsorted(np.cumsum(counts), row, side="right"))


def _key_ids(
    keys: list[str], listed: list | None, count: int | None, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Codes of JSON keys and the ids: listed in metadata, ``0..count-1`` when the
    keys are integers in that range, else the keys typed by the text rule."""
    column = pa.chunked_array([pa.array(keys, type=pa.string())], type=pa.string())
    declared = listed
    if declared is None and count is not None:
        declared = _integer_range(column, count, what)
    (codes,), ids = encode([Column.of(column)], what, as_text=True, declared=declared)
    return codes, ids


def _integer_range(column: pa.ChunkedArray, count: int, what: str) -> list[int] | None:
    """``0..count-1`` when every key is an integer in that range."""
    ids = parse_ids(column.unique())
    if len(ids) > count:
        raise CrowdDataError(
            f"metadata.json declares {count} {what}s but there are {len(ids)} distinct {what} keys"
        )
    if pa.types.is_int64(ids.type) and len(ids):
        values = ids.to_numpy()
        if values.min() >= 0 and values.max() < count:
            # A Python int and its list slot take about 40 bytes.
            check_allocation(array_bytes([count], 40), f"the ids of {count} {what}s")
            return list(range(count))
    return None


def _declared_n_classes(meta: _Metadata) -> int | None:
    return len(meta.classes) if meta.classes is not None else meta.n_classes


def _check_label_range(answers: _Answers, n_classes: int, meta: _Metadata) -> None:
    outside = (answers.labels < 0) | (answers.labels >= n_classes)
    if np.any(outside):
        source = "classes" if meta.classes is not None else "n_classes"
        _refuse_labels(
            answers, outside, f"outside the class codes 0..{n_classes - 1} (metadata {source})"
        )


def _refuse_labels(answers: _Answers, bad: np.ndarray, problem: str) -> None:
    rows = np.flatnonzero(bad)
    first = int(rows[0])
    task = answers.task_keys[_entry_of_row(answers.counts, first)]
    raise CrowdDataError(
        f"{len(rows)} label(s) {problem}, e.g. task {task!r}, worker "
        f"{answers.worker_keys[first]!r}: label {plain(answers.labels[first])}"
    )


def _read_truth(folder: Path, task_ids: np.ndarray, n_classes: int | None) -> np.ndarray | None:
    """Truth codes per task from ``ground_truth.npy`` or ``ground_truth.json``."""
    npy, js = folder / TRUTH_NPY, folder / TRUTH_JSON
    if npy.exists() and js.exists():
        raise CrowdDataError(f"{folder}: both {TRUTH_NPY} and {TRUTH_JSON} exist; keep one")
    if npy.exists():
        with about(npy):
            codes = _truth_from_npy(npy, task_ids)
            _check_truth_range(codes, task_ids, n_classes)
        return codes
    if js.exists():
        with about(js):
            codes = _truth_from_json(js, task_ids)
            _check_truth_range(codes, task_ids, n_classes)
        return codes
    return None


def _truth_from_npy(path: Path, task_ids: np.ndarray) -> np.ndarray:
    values = _load_npy(path)
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise CrowdDataError(
            f"expected a 1-D array of class codes, got shape {values.shape} dtype {values.dtype}"
        )
    if len(values) != len(task_ids):
        raise CrowdDataError(
            f"the ground truth has {len(values)} entries but there are {len(task_ids)} tasks"
        )
    if not is_range(task_ids):
        raise CrowdDataError(
            f"{TRUTH_NPY} is indexed by task number but the task ids are not 0..n-1; "
            f"use {TRUTH_JSON}"
        )
    if values.dtype.kind == "f" and not np.all(values == np.round(values)):
        bad = np.flatnonzero(values != np.round(values))
        raise CrowdDataError(f"non-integer class codes at tasks {show(bad)}")
    return values.astype(np.int64)


def _truth_from_json(path: Path, task_ids: np.ndarray) -> np.ndarray:
    document = load_json(path)
    if not isinstance(document, dict):
        raise CrowdDataError(f"expected an object {{task: class}}, got {_json_type(document)}")
    code_of_key = {id_text(v): code for code, v in enumerate(task_ids.tolist())}
    codes = np.full(len(task_ids), -1, dtype=np.int64)
    unknown = [key for key in document if key not in code_of_key]
    if unknown:
        raise CrowdDataError(f"ground truth for tasks not in {ANSWERS}: {show(unknown)}")
    for key, value in document.items():
        if value is None:
            continue
        if type(value) is not int or not -(2**31) <= value < 2**31:
            raise CrowdDataError(f"task {key!r}: truth {value!r} is not an integer class code")
        codes[code_of_key[key]] = value
    return codes


def _check_truth_range(codes: np.ndarray, task_ids: np.ndarray, n_classes: int | None) -> None:
    bad = codes < -1
    if n_classes is not None:
        bad |= codes >= n_classes
    if np.any(bad):
        rows = np.flatnonzero(bad)
        classes = "" if n_classes is None else f" 0..{n_classes - 1}"
        raise CrowdDataError(
            f"truth {show(codes[rows])} of tasks {show(task_ids[rows])} is not a class "
            f"code{classes} or -1 (unknown)"
        )


def _read_features(path: Path, n_tasks: int) -> np.ndarray | None:
    if not path.exists():
        return None
    with about(path):
        features = _load_npy(path)
        if features.ndim < 2 or features.shape[0] != n_tasks:
            raise CrowdDataError(
                f"expected one row of features per task ({n_tasks} rows), got shape "
                f"{features.shape}"
            )
    return features


def _load_npy(path: Path) -> np.ndarray:
    try:
        return load_npy(path)
    except (ValueError, OSError, EOFError) as exc:
        raise CrowdDataError(f"cannot read the .npy file: {npy_problem(exc)}") from None


def _json_type(value: Any) -> str:
    if isinstance(value, _Object):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"


# ---------------------------------------------------------------------------- writing


def write_peerannot(
    data: CrowdData, folder: str | os.PathLike[str], *, name: str | None = None
) -> None:
    """Write a peerannot dataset folder that :func:`read_peerannot` reads back exactly.

    Writes ``answers.json`` (keys ``str(id)``, labels class codes), ``metadata.json``
    (``name``, ``n_classes``, ``n_workers``, ``n_task`` and ``n_tasks``, ``classes``,
    and ``task_ids`` / ``worker_ids`` when those ids are not ``0..n-1``), the truth
    as ``ground_truth.npy`` when task ids are ``0..n-1`` (else ``ground_truth.json``),
    and ``features.npy`` when the data has features. Every file is serialised in
    memory first, then written atomically; a ground-truth or features file left in
    the folder by an earlier write, that this data does not have, is removed.

    Parameters
    ----------
    data : CrowdData
        Annotated by identified workers, at most once per (task, worker) pair.
    folder : str or path-like
        Created if needed.
    name : str, optional
        Dataset name in the metadata; default the folder name.

    Raises
    ------
    CrowdDataError
        For anonymous data or repeated (task, worker) pairs, before writing anything.
    """
    require_data(data, "io.write_peerannot")
    as_path(folder)
    if data.is_anonymous:
        raise CrowdDataError(
            "the peerannot format maps each task to {worker: label}, so it needs worker "
            "ids and this data is anonymous; write CSV or Parquet instead (write_csv, "
            "write_parquet)"
        )
    refuse_repeated_pairs(data, "answers.json holds one label per (task, worker) pair")
    folder = Path(folder)
    files = {
        METADATA: _metadata_json(data, name or folder.resolve().name),
        ANSWERS: _answers_json(data),
    }
    if data.truth is not None:
        if is_range(data.task_ids):
            files[TRUTH_NPY] = _npy_bytes(data.truth)
        else:
            files[TRUTH_JSON] = _truth_json(data)
    if data.features is not None:
        files[FEATURES] = _npy_bytes(data.features)
    for file_name, content in files.items():
        with atomic_open(folder / file_name, "wb") as handle:
            handle.write(content)
    for stale in (TRUTH_NPY, TRUTH_JSON, FEATURES):
        if stale not in files:
            (folder / stale).unlink(missing_ok=True)


def _answers_json(data: CrowdData) -> bytes:
    worker_keys = np.array([id_text(v) for v in data.worker_ids.tolist()], dtype=object)
    order = data.by_task.order
    workers = worker_keys[data.worker[order]].tolist()
    labels = data.label[order].tolist()
    bounds = data.by_task.indptr.tolist()
    answers = {
        id_text(task): dict(zip(workers[start:stop], labels[start:stop], strict=True))
        for task, start, stop in zip(data.task_ids.tolist(), bounds, bounds[1:], strict=False)
    }
    return json.dumps(answers).encode()


def _metadata_json(data: CrowdData, name: str) -> bytes:
    metadata: dict[str, Any] = {
        "name": name,
        "n_classes": data.n_classes,
        "n_workers": data.n_workers,
        "n_task": data.n_tasks,
        "n_tasks": data.n_tasks,
        "classes": ids_to_json(data.classes, "class"),
    }
    if not is_range(data.task_ids):
        metadata["task_ids"] = ids_to_json(data.task_ids, "task")
    if not is_range(data.worker_ids):
        metadata["worker_ids"] = ids_to_json(data.worker_ids, "worker")
    return json.dumps(metadata).encode()


def _truth_json(data: CrowdData) -> bytes:
    known = np.flatnonzero(data.truth >= 0)
    truth = {
        id_text(task): code
        for task, code in zip(
            data.task_ids[known].tolist(), data.truth[known].tolist(), strict=True
        )
    }
    return json.dumps(truth).encode()


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()
