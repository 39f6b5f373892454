"""Validation and alignment helpers shared by CrowdData's construction and transformations.

* Checks run once, when a CrowdData is built: code arrays (integer, 1-D, within int32),
  equal lengths, codes within their id ranges, truth codes, the features array and the
  duplicate (task, worker) policy. Each raises one :class:`CrowdDataError` naming the
  rows and ids at fault.
* Truth and features given by the user's ids (a Mapping or Series keyed by task id, a
  DataFrame indexed by task id) aligned with the task codes, and truth values turned
  into class codes.
* :func:`_readonly`: every array a CrowdData holds is a read-only view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import CODE_DTYPE, as_id_array, declared_ids, missing_rows
from crowdlearn.data._memory import array_bytes, check_allocation
from crowdlearn.data.errors import CrowdDataError, plain, show

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


def _features_by_task(features: Any, task_ids: np.ndarray) -> Any:
    """Reindex a DataFrame of features by task id; arrays pass through unchanged."""
    if not isinstance(features, pd.DataFrame):
        return features
    missing = ~pd.Index(task_ids).isin(features.index)
    if missing.any():
        raise CrowdDataError(f"features have no row for tasks {show(task_ids[missing])}")
    return features.loc[task_ids].to_numpy()
