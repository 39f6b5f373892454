"""Turning users' identifiers (any hashable: ints, strings, booleans) into integer codes."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence, Set
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning, show

#: Codes are int32: 2**31 - 1 distinct tasks, workers or classes is far beyond any crowd.
CODE_DTYPE = np.int32


def as_id_array(values: Any, what: str = "ids") -> np.ndarray:
    """A 1-D numpy array of ids: int64 for integers, bool, float or object otherwise.

    Integral floats (what pandas makes of an integer column with a gap) become int64.

    Parameters
    ----------
    values : array-like
        One id per entry (a list, tuple, numpy array, Series or Index).
    what : str
        What the ids are, for error messages (e.g. ``"task"``).

    Raises
    ------
    CrowdDataError
        For a scalar, a string, a nested (2-D) sequence, or integers beyond int64.
    """
    if isinstance(values, (Mapping, Set)):
        kind = "a dict" if isinstance(values, Mapping) else "a set"
        raise CrowdDataError(
            f"{what}: expected a sequence of ids (one per annotation), got {kind}, whose "
            "order and pairing with the other arrays are not defined; pass a list or an "
            f"array (list(d.values()) for a dict of ids)"
        )
    if isinstance(values, pd.DataFrame):
        raise CrowdDataError(
            f"{what}: expected one column of ids, got a DataFrame with columns "
            f"{list(values.columns)[:5]} (a repeated or MultiIndex column name?)"
        )
    if isinstance(values, (pd.Series, pd.Index)):
        numeric = values.dtype.kind in "iufb" and not (values.dtype.kind != "f" and values.hasnans)
        values = values.to_numpy() if numeric else values.to_numpy(dtype=object)
    if isinstance(values, np.ndarray):
        arr = values
    else:
        arr = _object_array(values, what)
    if arr.ndim != 1:
        raise CrowdDataError(
            f"{what} must be one-dimensional (one id per entry), got shape {arr.shape}"
        )
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    if arr.dtype.kind in "bf":
        return arr
    if arr.dtype.kind in "US":
        return arr.astype(object)
    if arr.dtype == object and len(arr):
        # Python ints, floats or bools boxed in an object array: store them natively.
        kind = pd.api.types.infer_dtype(arr, skipna=False)
        if kind == "integer":
            try:
                return arr.astype(np.int64)
            except OverflowError:
                big = [v for v in arr.tolist() if not -(2**63) <= v < 2**63]
                raise CrowdDataError(
                    f"{what} {show(big)} are integers beyond the int64 range; "
                    "give such ids as strings"
                ) from None
        if kind == "boolean":
            return arr.astype(bool)
        if kind in ("floating", "mixed-integer-float"):
            return as_id_array(arr.astype(np.float64))
    return arr


def _object_array(values: Any, what: str) -> np.ndarray:
    """A 1-D object array of a sequence's items, keeping their Python types (numpy
    would turn ``[1, "a"]`` into strings); scalars and nested sequences are refused."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise CrowdDataError(
            f"{what} must be a 1-D array-like (list, array or Series) with one id per "
            f"entry, got {type(values).__name__} {values!r:.50}"
        )
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    # Lists, arrays, dicts and sets make pandas infer "mixed"; only then look closer.
    if len(arr) and pd.api.types.infer_dtype(arr, skipna=True) == "mixed":
        nested = next(
            (i for i, v in enumerate(arr) if isinstance(v, (list, np.ndarray, dict, set))), None
        )
        if nested is not None:
            raise CrowdDataError(
                f"{what} must be one-dimensional (one id per entry); entry {nested} is a "
                f"{type(arr[nested]).__name__}"
            )
    return arr


def missing_rows(values: np.ndarray) -> np.ndarray:
    """Positions of None / NaN entries."""
    if values.dtype.kind in "iub":
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(pd.isna(values))


def check_not_mixed(values: np.ndarray, what: str) -> None:
    """Refuse ids that mix numbers and strings: sorting them has no meaning."""
    if values.dtype == object and len(values):
        kind = pd.api.types.infer_dtype(values, skipna=True)
        if kind.startswith("mixed"):
            types = sorted({type(v).__name__ for v in values[:10000] if not pd.isna(v)})
            raise CrowdDataError(
                f"{what} ids mix types ({', '.join(types)}); use one type for all {what} ids"
            )


def factorize(
    values: Any, what: str, declared: Sequence | np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Codes (int32) and the id of each code.

    Without ``declared`` ids, codes follow the sorted order of the distinct values.
    With ``declared`` ids, code ``i`` is ``declared[i]`` (the caller's order is kept,
    so arrays aligned with the declared ids stay aligned) and a value that is not
    declared is an error.
    """
    values = as_id_array(values)
    nan_rows = missing_rows(values)
    if len(nan_rows):
        raise CrowdDataError(
            f"{what} column has {len(nan_rows)} missing (None/NaN) value(s) "
            f"at rows {show(nan_rows)}"
        )
    if declared is None:
        check_not_mixed(values, what)
        codes, uniques = pd.factorize(values, sort=True)
        ids = as_id_array(uniques)
        warn_confusable(ids, what)
    else:
        ids = declared_ids(declared, what)
        codes = pd.Index(ids).get_indexer(values)
        unknown = np.flatnonzero(codes < 0)
        if len(unknown):
            bad = pd.unique(values[unknown])
            noun = "labels" if what == "label" else f"{what} ids"
            raise CrowdDataError(
                f"{noun} not among the declared {_declared_name(what)}: {show(bad)} "
                f"at rows {show(unknown)}"
            )
    return codes.astype(CODE_DTYPE), ids


def declared_ids(declared: Sequence | np.ndarray, what: str) -> np.ndarray:
    """Validate a declared list of ids: no missing values, no repeats, one type."""
    ids = as_id_array(declared)
    if len(missing_rows(ids)):
        raise CrowdDataError(f"declared {_declared_name(what)} contain None/NaN")
    check_not_mixed(ids, what)
    index = pd.Index(ids)
    if not index.is_unique:
        repeated = index[index.duplicated()].unique()
        raise CrowdDataError(f"declared {_declared_name(what)} repeat ids: {show(repeated)}")
    return ids


def _declared_name(what: str) -> str:
    return "classes" if what == "label" else f"{what}_ids"


#: Class ids compared as numbers ("1" and "1.0") only when there are at most this many
#: (the comparison is a Python loop; there are few classes).
_MAX_NUMERIC_CHECK = 10_000


def warn_confusable(ids: Any, what: str) -> None:
    """Warn (:class:`CrowdDataWarning`) about distinct text ids that look the same.

    Ids that differ only by surrounding whitespace (``" t1"``, ``"t1"``, ``"t1 "``)
    stay distinct ids, as do class ids that are the same number written differently
    (``"1"`` and ``"1.0"``); both are more often a typing accident than intended, so
    the first few are named in a warning.

    Parameters
    ----------
    ids : ndarray or pyarrow Array
        Distinct ids; only text ids are looked at.
    what : str
        "task", "worker", "label" or "class", for the message.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(ids, np.ndarray):
        if ids.dtype != object or not len(ids) or pd.api.types.infer_dtype(ids) != "string":
            return
        ids = pa.array(ids, type=pa.string())
    if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type)) or not len(ids):
        return
    noun = "class" if what in ("label", "class") else what
    # Trimming and comparing lengths is several times faster than a regex match.
    trimmed = pc.utf8_trim_whitespace(ids)
    if pc.any(pc.not_equal(pc.binary_length(ids), pc.binary_length(trimmed))).as_py():
        counts = pc.value_counts(trimmed)
        shared = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
        if len(shared):
            examples = ids.filter(pc.is_in(trimmed, value_set=shared)).to_pylist()
            warnings.warn(
                f"{noun} ids {show(examples)} differ only by surrounding whitespace; they "
                f"are kept as different {'classes' if noun == 'class' else noun + 's'} "
                "(strip the whitespace if they are the same)",
                CrowdDataWarning,
                stacklevel=3,
            )
    if noun == "class" and len(ids) <= _MAX_NUMERIC_CHECK:
        by_number: dict[float, list[str]] = {}
        for text in ids.to_pylist():
            try:
                by_number.setdefault(float(text), []).append(text)
            except (TypeError, ValueError):
                continue
        same = [texts for texts in by_number.values() if len(texts) > 1]
        if same:
            warnings.warn(
                f"labels {show(same[0])} are the same number written differently and are "
                "read as different classes (use one spelling if they are the same class)",
                CrowdDataWarning,
                stacklevel=3,
            )
