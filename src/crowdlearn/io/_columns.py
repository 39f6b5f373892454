"""Turning Arrow columns of ids into integer codes without one Python object per row.

A :class:`Column` yields its chunks (plain or dictionary-encoded Arrow arrays) each
time it is asked, so a Parquet column can be streamed row group by row group.
Encoding takes two passes over the chunks: the distinct non-null values (hashing,
or the dictionaries that dictionary-encoded chunks already carry), then, once each
distinct value has its code (sorted order, like :meth:`CrowdData.from_arrays`, or
its position in a declared id list), a gather per chunk into one preallocated array.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crowdlearn.data import CrowdDataError
from crowdlearn.data._ids import as_id_array
from crowdlearn.data.errors import show
from crowdlearn.io._common import id_text, parse_ids

#: Row code of a null (empty) cell.
MISSING = -1
#: Code of a distinct value that is not among the declared ids.
UNDECLARED = -2


@dataclass(frozen=True)
class Column:
    """A column of ids that can be read, chunk by chunk, as many times as needed.

    Parameters
    ----------
    chunks : callable
        Returns a fresh iterable of the column's chunks (Arrow arrays, plain or
        dictionary-encoded, all with one value type).
    """

    chunks: Callable[[], Iterable[pa.Array]]

    @classmethod
    def of(cls, array: pa.ChunkedArray) -> Column:
        """A column held in memory."""
        return cls(lambda: array.chunks)


def encode(
    columns: Sequence[Column],
    what: str,
    *,
    as_text: bool = False,
    declared: Sequence[Any] | np.ndarray | None = None,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Codes of one or more columns sharing one set of ids.

    Parameters
    ----------
    columns : sequence of Column
        Columns with the same value type (e.g. labels and the truth column, which
        share the classes).
    what : str
        What the ids are ("task", "worker", "class"), for error messages.
    as_text : bool
        The columns hold ids as text: distinct texts get their type from
        :func:`~crowdlearn.io._common.parse_ids`, and a text matches a declared id
        when it equals ``id_text(id)``.
    declared : sequence, optional
        Declared ids in code order; otherwise codes follow the sorted ids.

    Returns
    -------
    codes : list of ndarray
        One array per column: the code of each row, ``MISSING`` for null cells, in
        the narrowest signed integer type that holds them (int8, int16 or int32).
        :class:`CrowdData` stores int32 codes whatever it is given, and holds both
        its input and its int32 copy while it validates, so narrow inputs lower the
        peak memory of a read.
    ids : ndarray
        The id of each code.

    Raises
    ------
    CrowdDataError
        When the columns mix value types, or a value is not among the declared ids.
    """
    values, lengths = _distinct(columns)
    if declared is not None:
        ids = as_id_array(declared)
        if as_text:
            keys = pa.array([id_text(v) for v in ids.tolist()], type=pa.string())
        else:
            keys = _declared_as(ids, values.type, what)
        found = pc.fill_null(pc.index_in(values, value_set=keys), UNDECLARED)
        code_of_value = found.to_numpy()
    else:
        typed = parse_ids(values) if as_text else values
        order = pc.sort_indices(typed).to_numpy()
        code_of_value = np.empty(len(order), dtype=np.int64)
        code_of_value[order] = np.arange(len(order))
        ids = typed.take(pa.array(order)).to_numpy(zero_copy_only=False)
    code_of_value = code_of_value.astype(_code_dtype(len(ids)))
    undeclared = np.flatnonzero(code_of_value == UNDECLARED)
    if len(undeclared):
        raise CrowdDataError(
            f"{what} ids {show(values.take(pa.array(undeclared)).to_pylist())} are not "
            f"among the {len(ids)} declared {what} ids"
        )
    codes = [
        _row_codes(column, length, values, code_of_value)
        for column, length in zip(columns, lengths, strict=True)
    ]
    return codes, ids


def normalise(chunk: pa.Array) -> pa.Array:
    """One value type per id kind: int64 for integers, string for text."""
    if pa.types.is_dictionary(chunk.type):
        dictionary = normalise(chunk.dictionary)
        if dictionary.type == chunk.dictionary.type:
            return chunk
        return pa.DictionaryArray.from_arrays(chunk.indices, dictionary)
    if pa.types.is_integer(chunk.type) and chunk.type != pa.int64():
        return chunk.cast(pa.int64())
    if pa.types.is_large_string(chunk.type) or pa.types.is_string_view(chunk.type):
        return chunk.cast(pa.string())
    return chunk


def missing_rows(codes: np.ndarray) -> np.ndarray:
    """Rows whose cell was null."""
    return np.flatnonzero(codes == MISSING)


def truth_by_task(
    task: np.ndarray, truth: np.ndarray, n_tasks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-task truth codes from per-row codes (negative: unknown).

    Returns the per-task codes (int32, ``-1`` unknown) and the codes of the tasks
    whose rows disagree (empty when they all agree).
    """
    known = truth >= 0
    tasks, classes = task[known], truth[known]
    per_task = np.full(n_tasks, -1, dtype=np.int32)
    per_task[tasks] = classes
    conflicts = np.unique(tasks[per_task[tasks] != classes])
    return per_task, conflicts


def _distinct(columns: Sequence[Column]) -> tuple[pa.Array, list[int]]:
    """Distinct non-null values of the columns and the length of each column.

    A dictionary chunk contributes the dictionary entries its rows use. The plain
    chunks of a column are hashed together in one table: merging per-chunk results
    would hash most values once per chunk.
    """
    parts: list[pa.Array] = []
    value_types: set[pa.DataType] = set()
    lengths = []
    for column in columns:
        plain: list[pa.Array] = []
        length = 0
        for chunk in column.chunks():
            length += len(chunk)
            if pa.types.is_dictionary(chunk.type):
                value_types.add(chunk.type.value_type)
                parts.append(chunk.dictionary.take(pc.unique(chunk.indices).drop_null()))
            else:
                value_types.add(chunk.type)
                plain.append(chunk)
            if len(value_types) > 1:
                raise CrowdDataError(
                    f"the ids mix value types {sorted(map(str, value_types))}; use one type"
                )
        lengths.append(length)
        if plain:
            parts.append(pc.unique(pa.chunked_array(plain)))
    if not parts:
        return pa.array([], type=pa.string()), lengths
    values = parts[0] if len(parts) == 1 else pc.unique(pa.concat_arrays(parts))
    return values.drop_null(), lengths


def _code_dtype(n_ids: int) -> np.dtype:
    """The narrowest signed integer type for codes ``UNDECLARED..n_ids-1``."""
    for dtype in (np.int8, np.int16):
        if n_ids <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int32)


def _declared_as(declared: np.ndarray, value_type: pa.DataType, what: str) -> pa.Array:
    """Declared ids as an Arrow array of the column's type."""
    try:
        return pa.array(declared.tolist()).cast(value_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise CrowdDataError(
            f"the declared {what} ids do not have the column's type {value_type}: {exc}"
        ) from None


def _row_codes(
    column: Column, length: int, values: pa.Array, code_of_value: np.ndarray
) -> np.ndarray:
    """Gather the code of each row, chunk by chunk, into one array."""
    missing = code_of_value.dtype.type(MISSING)
    # One slot past the distinct values stands for null.
    lookup = np.append(code_of_value, missing)
    null_slot = len(values)
    codes = np.empty(length, dtype=code_of_value.dtype)
    start = 0
    for chunk in column.chunks():
        stop = start + len(chunk)
        if pa.types.is_dictionary(chunk.type):
            entry = pc.fill_null(pc.index_in(chunk.dictionary, value_set=values), null_slot)
            table = np.append(lookup[entry.to_numpy()], missing)
            rows = pc.fill_null(chunk.indices, len(chunk.dictionary)).to_numpy()
            np.take(table, rows, out=codes[start:stop])
        else:
            rows = pc.fill_null(pc.index_in(chunk, value_set=values), null_slot).to_numpy()
            np.take(lookup, rows, out=codes[start:stop])
        start = stop
    return codes
