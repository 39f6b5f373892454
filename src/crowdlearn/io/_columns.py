"""Turning Arrow columns of ids into integer codes without one Python object per row.

A :class:`Column` yields its chunks (plain or dictionary-encoded Arrow arrays, e.g.
the record batches of a Parquet file). Encoding reads each column once: every chunk
is dictionary-encoded (``pyarrow.compute.dictionary_encode``; Parquet text chunks
come encoded already) and its int32 indices go into one preallocated array. The
chunk dictionaries, which are small next to the rows (a chunk's distinct ids), are
then unified in a single hashing pass; once each distinct value has its code (sorted
order, like :meth:`CrowdData.from_arrays`, or its position in a declared id list),
each chunk's indices are remapped in place by a vectorised gather.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crowdlearn.data import CrowdDataError
from crowdlearn.data._ids import as_id_array, warn_confusable
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
    #: Number of rows when known in advance (a Parquet footer); otherwise the
    #: chunks are counted first.
    length: int | None = None

    @classmethod
    def of(cls, array: pa.ChunkedArray) -> Column:
        """A column held in memory."""
        return cls(lambda: array.chunks, len(array))


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
    local = [_local_codes(column) for column in columns]
    dictionaries = [d for _, parts in local for _, _, d in parts]
    value_types = {d.type for d in dictionaries}
    if len(value_types) > 1:
        raise CrowdDataError(
            f"the ids mix value types {sorted(map(str, value_types))}; use one type"
        )
    if dictionaries:
        # One hashing pass over all chunk dictionaries: the distinct values, and the
        # position of each chunk-dictionary entry among them.
        unified = pc.dictionary_encode(pa.concat_arrays(dictionaries))
        values = unified.dictionary
        entry_value = pc.fill_null(unified.indices, -1).to_numpy()
    else:
        values = pa.array([], type=pa.string())
        entry_value = np.empty(0, dtype=np.int32)
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
        warn_confusable(typed, what)
        order = pc.sort_indices(typed).to_numpy()
        code_of_value = np.empty(len(order), dtype=np.int64)
        code_of_value[order] = np.arange(len(order))
        ids = typed.take(pa.array(order)).to_numpy(zero_copy_only=False)
    dtype = _code_dtype(len(ids))
    code_of_value = code_of_value.astype(dtype)
    undeclared = np.flatnonzero(code_of_value == UNDECLARED)
    if len(undeclared):
        raise CrowdDataError(
            f"{what} ids {show(values.take(pa.array(undeclared)).to_pylist())} are not "
            f"among the {len(ids)} declared {what} ids"
        )
    # Index -1 (a null entry or a null row) takes the last slot: MISSING.
    code_of_entry = np.append(code_of_value, dtype.type(MISSING))[entry_value]
    codes = []
    offset = 0
    while local:
        rows, parts = local.pop(0)
        # int32 codes overwrite the chunk indices in place; narrower ones get their
        # own array, freeing the indices as soon as the column is done.
        out = rows if dtype == rows.dtype else np.empty(len(rows), dtype=dtype)
        for start, stop, dictionary in parts:
            table = np.append(code_of_entry[offset : offset + len(dictionary)], MISSING)
            out[start:stop] = table.astype(dtype, copy=False)[rows[start:stop]]
            offset += len(dictionary)
        del rows
        codes.append(out)
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


def _local_codes(column: Column) -> tuple[np.ndarray, list[tuple[int, int, pa.Array]]]:
    """Each row's index into its chunk's dictionary (int32, -1 for null) and, per
    chunk, its row range and dictionary (only the entries its rows use)."""
    length = column.length
    if length is None:
        length = sum(len(chunk) for chunk in column.chunks())
    rows = np.empty(length, dtype=np.int32)
    parts = []
    start = 0
    for chunk in column.chunks():
        stop = start + len(chunk)
        if stop > length:
            raise CrowdDataError(f"the column has more than the expected {length} rows")
        if pa.types.is_dictionary(chunk.type):
            indices = pc.fill_null(chunk.indices, -1).to_numpy().astype(np.int32, copy=False)
            used = np.flatnonzero(
                np.bincount(indices[indices >= 0], minlength=len(chunk.dictionary))
            )
            dictionary = chunk.dictionary.take(pa.array(used))
            if len(used) < len(chunk.dictionary):
                renumber = np.full(len(chunk.dictionary) + 1, -1, dtype=np.int32)
                renumber[used] = np.arange(len(used), dtype=np.int32)
                indices = renumber[indices]
        else:
            encoded = pc.dictionary_encode(chunk)
            dictionary = encoded.dictionary
            indices = pc.fill_null(encoded.indices, -1).to_numpy()
        rows[start:stop] = indices
        parts.append((start, stop, dictionary))
        start = stop
    return rows[:start], parts


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
