"""Reading and writing by format name, with the format told by the path when not given."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.io._common import as_path, existing_path, require_data
from crowdlearn.io._files import compression, is_batch_source, logical_suffix
from crowdlearn.io._source import STDIN_NAME, is_stdin
from crowdlearn.io.longform import (
    PARQUET_SUFFIXES,
    read_csv,
    read_parquet,
    write_csv,
    write_parquet,
)
from crowdlearn.io.matrix import read_matrix, write_matrix
from crowdlearn.io.peerannot import ANSWERS, read_answers_json, write_peerannot

#: Column names set by :func:`default_columns` for the reads inside its block.
_DEFAULT_COLUMNS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "crowdlearn_default_columns", default=None
)

#: The formats :func:`read` and :func:`write` know.
FORMATS = ("csv", "parquet", "peerannot", "matrix")

_BY_SUFFIX = {
    ".csv": "csv",
    ".tsv": "csv",
    ".json": "peerannot",
    ".txt": "matrix",
    ".npy": "matrix",
    **dict.fromkeys(PARQUET_SUFFIXES, "parquet"),
}


#: Compression endings, with the command that decompresses a file while keeping it.
_COMPRESSED = {
    ".gz": "gunzip -k",
    ".bz2": "bunzip2 -k",
    ".xz": "unxz -k",
    ".zst": "unzstd",
    ".zip": "unzip",
}


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of a file or directory, told by its name ending or contents.

    A directory holding ``answers.json`` is peerannot, one holding ``*.parquet``
    files is parquet; files go by ending: ``.json`` peerannot, ``.csv``/``.tsv``
    csv, ``.parquet``/``.pq`` parquet, ``.txt``/``.npy`` matrix.

    Parameters
    ----------
    path : str or path-like
        Need not exist (for writing), unless it is a directory.

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    CrowdDataError
        When the format cannot be told; the message lists the formats.
    """
    path = Path(path)
    if path.is_dir():
        if (path / ANSWERS).is_file():
            return "peerannot"
        if any(p.suffix.lower() in PARQUET_SUFFIXES for p in path.iterdir()):
            return "parquet"
        raise CrowdDataError(
            f"{path}: cannot tell the format of this directory: it holds neither {ANSWERS} "
            f"nor *.parquet files; pass format= (one of {', '.join(FORMATS)})"
        )
    suffix = logical_suffix(path)
    fmt = _BY_SUFFIX.get(suffix)
    if compression(path) is not None and fmt not in (None, "csv", "peerannot"):
        raise CrowdDataError(
            f"{path}: a compressed {suffix} file; crowdlearn decompresses CSV, TSV and JSON "
            f"files as it reads them, not {suffix} ones: decompress it first "
            f"({_COMPRESSED[path.suffix.lower()]} {path})"
        )
    if fmt is None and path.suffix.lower() in _COMPRESSED:
        tool = _COMPRESSED[path.suffix.lower()]
        raise CrowdDataError(
            f"{path}: a compressed file ({path.suffix}) whose name does not say what it "
            f"holds (e.g. crowd.csv{path.suffix}); decompress it first ({tool} {path}) or "
            f"rename it"
        )
    if fmt is None and suffix == ".jsonl" and (is_stdin(path) or path.is_file()):
        raise CrowdDataError(_json_lines_problem(path))
    if fmt is None:
        raise CrowdDataError(
            f"{path}: cannot tell the format from the ending {path.suffix!r}; pass format= "
            f"(one of {', '.join(FORMATS)}) or use one of the endings {', '.join(_BY_SUFFIX)}"
        )
    return fmt


def _json_lines_problem(path: Path) -> str:
    """Why a JSON-lines file is not read: crowdlearn reads JSON lines as Prodigy exports;
    names the first line that is not a JSON object, by its number."""
    import json

    from crowdlearn.io._source import describe, reading_session

    with reading_session():
        found = describe(path)
        label = found.label
        lines = found.head.decode("utf-8", errors="replace").splitlines()
    expected = (
        "crowdlearn reads JSON lines as Prodigy exports (one JSON object a line, with "
        "'answer' and '_input_hash' or '_task_hash')"
    )
    for number, line in enumerate(lines[:-1] if len(lines) > 1 else lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            return f"{label}: line {number} is not JSON; {expected}"
        if not isinstance(value, dict):
            shown = line.strip() if len(line.strip()) <= 40 else line.strip()[:40] + "..."
            return f"{label}: line {number} is {shown}, not a JSON object; {expected}"
        return f"{label}: line {number} is not a Prodigy example; {expected}"
    return f"{label}: the file holds no JSON line; {expected}"


def read(
    source: str | os.PathLike[str] | pd.DataFrame, format: str | None = None, **kwargs: Any
) -> CrowdData:
    """Read crowd data from a file, a directory or a pandas DataFrame.

    Parameters
    ----------
    source : str, path-like or DataFrame
        ``"-"`` reads standard input (its format and compression told by its content).
        A DataFrame is read with :meth:`CrowdData.from_frame` (crowd-kit's layout). A
        platform's export (Amazon Mechanical Turk, Toloka, CrowdFlower, Label Studio,
        Prodigy) is recognised by its header and read by
        :func:`crowdlearn.io.platforms.read_export`; a folder or glob of CSV/TSV batch
        files is read as one table.
    format : str, optional
        One of :data:`FORMATS`; default told by :func:`detect_format`.
    **kwargs
        Passed to the reader (:func:`read_csv`, :func:`read_parquet`,
        :func:`read_answers_json`, :func:`read_matrix`). ``kind="spans"`` reads
        spans with :func:`crowdlearn.io.spans.read_spans` (options ``texts``,
        ``tokens``, ``scheme``, ``duplicates``); the other kinds are read by
        :func:`crowdlearn.io.read_kind`. Without ``kind``, an input that looks like
        spans (:func:`crowdlearn.io.spans.looks_like_spans`: a NER-MTurk folder, a
        ``.conll`` file, a Label Studio export of ``labels``, a Prodigy ``ner`` JSONL)
        is read as spans.

    Returns
    -------
    CrowdData (or the kind's data type: :class:`~crowdlearn.data.Spans` for spans)

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from crowdlearn import io
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(folder.name) / "answers.csv"
    >>> _ = path.write_text("task,worker,label\\nt1,w1,cat\\nt1,w2,dog\\nt2,w1,dog\\n")
    >>> io.read(path)
    CrowdData(n_tasks=2, n_workers=2, n_classes=2, n_annotations=3)
    >>> folder.cleanup()
    """
    from crowdlearn.io._source import reading_session

    kind = kwargs.pop("kind", None)
    if kind == "spans" and not isinstance(source, pd.DataFrame):
        from crowdlearn.io.spans import read_spans

        return read_spans(source, **kwargs)
    if kind not in (None, "class"):
        raise CrowdDataError(
            f"read() reads classes and spans (kind='spans'); read {kind!r} answers with "
            f"crowdlearn.io.read_kind(source, {kind!r})"
        )
    if isinstance(source, pd.DataFrame):
        return CrowdData.from_frame(source, **_with_default_columns(kwargs))
    as_path(source)  # a TypeError naming what a path is, before anything else
    with reading_session():  # the input is described, and opened, once
        return _read(source, format, kwargs)


def _read(source: str | os.PathLike[str], format: str | None, kwargs: dict[str, Any]) -> Any:
    if format is None:
        from crowdlearn.io.platforms import batch_frame, platform_data, with_batch_rows
        from crowdlearn.io.spans import looks_like_spans, read_spans

        if looks_like_spans(source):
            return read_spans(source, **kwargs)

        data = platform_data(source, "class", duplicates=kwargs.get("duplicates", "error"))
        if data is not None:
            return data
        if is_batch_source(source) or logical_suffix(source) == ".xlsx":
            frame, place = batch_frame(source)
            options = _with_default_columns(kwargs)
            with with_batch_rows(source, place):
                return CrowdData.from_frame(
                    frame,
                    columns=options.get("columns"),
                    duplicates=options.get("duplicates", "error"),
                )
    path = existing_path(source)
    fmt = _checked(format) if format is not None else detect_format(path)
    if fmt == "matrix" and is_stdin(path):
        raise CrowdDataError(
            f"{STDIN_NAME}: answer matrices are read from files, not from standard input; "
            "save it to a file (.txt or .npy) first"
        )
    if fmt in ("csv", "parquet"):
        kwargs = _with_default_columns(kwargs)
    readers = {
        "csv": read_csv,
        "parquet": read_parquet,
        "peerannot": read_answers_json,
        "matrix": read_matrix,
    }
    return readers[fmt](path, **kwargs)


@contextlib.contextmanager
def default_columns(
    columns: Mapping[str, str | None] | None = None, truth_column: str | None = None
) -> Iterator[None]:
    """Within the block, :func:`read` names the columns of long tables this way.

    The command-line options ``--columns`` and ``--truth-column`` use it, so that every
    command reading long files honours them. Arguments passed to :func:`read` itself
    win; answer matrices and peerannot folders have no columns and ignore it.

    Parameters
    ----------
    columns : mapping, optional
        Role (``"task"``, ``"worker"``, ``"label"``, ``"truth"``) to column name, as
        accepted by :func:`~crowdlearn.io.read_csv`.
    truth_column : str, optional
        Truth column that must be present.

    Examples
    --------
    >>> from crowdlearn import io
    >>> with io.default_columns({"task": "question", "label": "answer"}):
    ...     pass  # io.read("answers.csv") reads columns question, worker, answer here
    """
    defaults = {"columns": columns, "truth_column": truth_column}
    token = _DEFAULT_COLUMNS.set({k: v for k, v in defaults.items() if v is not None})
    try:
        yield
    finally:
        _DEFAULT_COLUMNS.reset(token)


def _with_default_columns(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**(_DEFAULT_COLUMNS.get() or {}), **kwargs}


def write(
    data: CrowdData, dest: str | os.PathLike[str], format: str | None = None, **kwargs: Any
) -> None:
    """Write crowd data in one of :data:`FORMATS`, atomically.

    Parameters
    ----------
    data : CrowdData
    dest : str or path-like
        A file; for ``"peerannot"`` a folder (a path ending in ``answers.json`` means
        its folder).
    format : str, optional
        One of :data:`FORMATS`; default told by :func:`detect_format` from ``dest``.
    **kwargs
        Passed to the writer (:func:`write_csv`, :func:`write_parquet`,
        :func:`write_peerannot`, :func:`write_matrix`).
    """
    require_data(data, "io.write")
    dest = as_path(dest)
    fmt = _checked(format) if format is not None else detect_format(dest)
    if fmt == "peerannot":
        if dest.suffix.lower() == ".json":
            if dest.name != ANSWERS:
                raise CrowdDataError(
                    f"{dest}: a peerannot dataset is a folder holding {ANSWERS}; "
                    "give the folder (or a path ending in answers.json)"
                )
            dest = dest.parent
        write_peerannot(data, dest, **kwargs)
        return
    writers = {"csv": write_csv, "parquet": write_parquet, "matrix": write_matrix}
    writers[fmt](data, dest, **kwargs)


def _checked(format: str) -> str:
    if format not in FORMATS:
        raise CrowdDataError(f"unknown format {format!r}; the formats are {', '.join(FORMATS)}")
    return format
