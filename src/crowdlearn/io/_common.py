"""Helpers shared by the readers and writers: paths, error context, ids as text and JSON."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.errors import plain

#: A canonical integer is what ``str(int(text))`` gives back: no sign on 0, no leading zeros.
_CANONICAL_INT = r"^(0|-?[1-9][0-9]*)$"


def as_path(path: Any) -> Path:
    """``path`` as a :class:`~pathlib.Path`; a :class:`TypeError` for anything but a path."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"expected a path (str or os.PathLike), got {type(path).__name__}")
    return Path(path)


def require_data(data: Any, function: str) -> None:
    """A :class:`TypeError` saying how to get a CrowdData when ``data`` is not one."""
    if isinstance(data, CrowdData):
        return
    hint = ""
    if type(data).__name__ == "DataFrame":
        hint = "; use CrowdData.from_frame(df) first"
    elif isinstance(data, (str, os.PathLike)):
        hint = "; the data come first, then the destination path"
    raise TypeError(f"{function} expects a CrowdData, got {type(data).__name__}{hint}")


def load_npy(path: Path) -> np.ndarray:
    """``np.load`` of a ``.npy`` file of numbers, refusing a header that promises more
    data than the file holds (numpy would first allocate what the header says).

    Raises the errors of ``np.load`` (``ValueError``, ``OSError``, ``EOFError``) for the
    caller to report, with a ``ValueError`` for the truncated case.
    """
    readers = {
        (1, 0): np.lib.format.read_array_header_1_0,
        (2, 0): np.lib.format.read_array_header_2_0,
    }
    with open(path, "rb") as handle:
        try:
            version = np.lib.format.read_magic(handle)
            header = readers[version](handle) if version in readers else None
        except (ValueError, EOFError) as exc:
            raise ValueError(f"not a .npy file ({exc})") from None
        if header is not None:
            shape, _, dtype = header
            needed = dtype.itemsize
            for size in shape:
                needed *= int(size)
            left = os.fstat(handle.fileno()).st_size - handle.tell()
            if not dtype.hasobject and needed > left:
                raise ValueError(
                    f"the header says shape {shape} of {dtype} ({needed} bytes) but the file "
                    f"holds {left} bytes of data (truncated or corrupt)"
                )
    return np.load(path, allow_pickle=False)


def npy_problem(exc: BaseException) -> str:
    """What went wrong loading a ``.npy`` file, without numpy's advice to unpickle it."""
    if "allow_pickle" in str(exc):
        return "not a .npy file of numbers (it is not in the .npy format, or holds Python objects)"
    return str(exc)


def existing_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path`; a :class:`CrowdDataError` when it does not exist
    (``-``, standard input, always does)."""
    path = as_path(path)
    if os.fspath(path) == "-":  # standard input (see crowdlearn.io._source)
        return path
    if not path.exists():
        raise CrowdDataError(f"{path}: no such file or directory")
    return path


@contextlib.contextmanager
def about(path: str | os.PathLike[str]) -> Iterator[None]:
    """Prefix the message of a :class:`CrowdDataError` raised inside with the file it is
    about (``<stdin>`` for ``-``)."""
    name = "<stdin>" if os.fspath(path) == "-" else str(path)
    try:
        yield
    except CrowdDataError as exc:
        if str(exc).startswith(name):
            raise
        # Same class: a CrowdMemoryError stays a MemoryError too.
        raise type(exc)(f"{name}: {exc}") from exc


def load_json(path: Path, **kwargs: Any) -> Any:
    """Parse a JSON file; malformed or truncated text is a :class:`CrowdDataError`
    naming the file, line and column."""
    from crowdlearn.io._files import read_bytes

    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CrowdDataError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    if not text.strip():
        raise CrowdDataError(f"{path}: the file is empty, expected a JSON document")
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise CrowdDataError(f"{path}: the JSON is nested too deeply to be read") from None
    except json.JSONDecodeError as exc:
        problem = "truncated JSON (the text ends early)"
        if exc.pos < len(text.rstrip()):
            problem = "malformed JSON"
        raise CrowdDataError(
            f"{path}: {problem} at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None


def parse_ids(texts: pa.Array) -> pa.Array:
    """Give ids read as text their natural type.

    All texts are canonical integers (``str(int(t)) == t``) and fit int64: int64.
    All are ``"True"``/``"False"``: bool. All are floats whose ``repr`` gives the text
    back (NaN excluded, it means a missing value): float64. Otherwise: strings.
    Writers produce ids with :func:`id_text`, so int, bool, float and string ids whose
    text does not look like another type survive a round trip through text.
    """
    texts = texts.cast(pa.string())
    if len(texts) == 0:
        return texts
    if pc.all(pc.match_substring_regex(texts, _CANONICAL_INT)).as_py():
        with contextlib.suppress(pa.ArrowInvalid):  # beyond int64: keep the text
            return pc.cast(texts, pa.int64())
    if pc.all(pc.is_in(texts, value_set=pa.array(["True", "False"]))).as_py():
        return pc.equal(texts, "True")
    values = texts.to_pylist()
    if all(_is_float_text(text) for text in values):
        return pa.array([float(text) for text in values], type=pa.float64())
    return texts


def _is_float_text(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return value == value and repr(value) == text


def id_text(value: Any) -> str:
    """The text of an id in a CSV cell or a JSON key (``repr`` for floats, so it round-trips)."""
    return str(value.item() if isinstance(value, np.generic) else value)


def is_range(ids: np.ndarray) -> bool:
    """True when the ids are exactly the integers ``0..n-1`` in order."""
    return ids.dtype.kind in "iu" and np.array_equal(ids, np.arange(len(ids)))


def ids_to_json(ids: np.ndarray, what: str) -> list:
    """Ids as a JSON-ready list of ints, strings, bools or floats."""
    values = ids.tolist()
    if ids.dtype == object:
        odd = {type(v).__name__ for v in values if not isinstance(v, str)}
        if odd:
            raise CrowdDataError(
                f"{what} ids of type {', '.join(sorted(odd))} cannot be stored as JSON; "
                "use int, str, bool or float ids"
            )
    return values


def json_ids(values: Any, key: str) -> list:
    """Validate a list of ids read from JSON metadata."""
    if not isinstance(values, list) or not values:
        raise CrowdDataError(f"metadata {key!r} must be a non-empty list of ids")
    if not all(isinstance(v, (int, float, str)) for v in values):
        raise CrowdDataError(f"metadata {key!r} must hold ints, strings, bools or floats")
    return values


def json_count(metadata: dict, *keys: str) -> int | None:
    """A non-negative integer stored under the first of ``keys`` present, or None."""
    for key in keys:
        if key in metadata:
            value = metadata[key]
            if type(value) is not int or value < 0:
                raise CrowdDataError(
                    f"metadata {key!r} must be a non-negative integer, got {value!r}"
                )
            return value
    return None


def refuse_repeated_pairs(data: CrowdData, why: str) -> None:
    """A :class:`CrowdDataError` when a worker annotated a task more than once."""
    key = data.task.astype(np.int64) * data.n_workers + data.worker
    key.sort()
    repeated = np.flatnonzero(key[1:] == key[:-1])
    if len(repeated):
        task, worker = divmod(int(key[repeated[0]]), data.n_workers)
        raise CrowdDataError(
            f"{len(np.unique(key[repeated]))} (task, worker) pair(s) have several "
            f"annotations, e.g. task {plain(data.task_ids[task])} by worker "
            f"{plain(data.worker_ids[worker])}; {why} (build the data with "
            "duplicates='first' or 'last', or use CSV or Parquet)"
        )


def typed_column(column: pa.ChunkedArray) -> Any:
    """A column of text cells as a pandas Series, typed by :func:`parse_ids` when it has
    no missing cell (else left as text)."""
    import pandas as pd

    array = column.combine_chunks()
    present = array.drop_null()
    if len(present) == len(array) and len(array):
        return pd.Series(parse_ids(array).to_pandas())
    return pd.Series(array.to_pandas())
