"""Long-format files: one row per annotation with columns task, worker, label (and truth).

This is crowd-kit's layout. Two containers are supported:

* **CSV** (or TSV). Cells are text; ids get their type back by a fixed rule (see
  :func:`read_csv`), so integer and string ids survive a round trip. The rows are
  all there is: tasks and workers without annotations, classes that no label or
  truth uses, and a code order other than the sorted ids cannot be represented.
* **Parquet**. Ids keep their native types (int64, string, bool, float64; strings are
  dictionary-encoded). The schema metadata key ``b"crowdlearn"`` holds a JSON document
  (see :func:`write_parquet`) that makes the round trip lossless, declared-but-unused
  ids included. :func:`read_parquet` reads one column at a time with pyarrow and never
  creates one Python object per row.

Features are not stored in CSV. :func:`write_parquet` stores them in a ``.npy`` file
beside the Parquet file (``crowd.parquet`` -> ``crowd.features.npy``), named in the
metadata, and :func:`read_parquet` restores them (see ``docs/formats.md``).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from crowdlearn._atomic import atomic_open, atomic_path
from crowdlearn.data import CrowdData, CrowdDataError, DuplicatePolicy
from crowdlearn.data._headers import Columns, note_recognized, resolve_columns
from crowdlearn.data.errors import show
from crowdlearn.io._columns import Column, encode, missing_rows, normalise, truth_by_task
from crowdlearn.io._common import (
    about,
    as_path,
    existing_path,
    id_text,
    ids_to_json,
    json_count,
    json_ids,
    require_data,
)
from crowdlearn.io._files import (
    compressing,
    logical_suffix,
    open_binary,
    open_text,
    sniff_delimiter,
)

#: The column of known answers (gold) that :func:`write_csv` writes and
#: :func:`crowdlearn.io._gold.read_gold_column` reads (not ``gold``: tables use that
#: name for the truth).
GOLD_COLUMN = "known_answer"
#: Schema metadata key of the JSON document written by :func:`write_parquet`.
METADATA_KEY = b"crowdlearn"
#: File name endings read as Parquet (also inside a directory).
PARQUET_SUFFIXES = (".parquet", ".pq")
_METADATA_VERSION = 1
#: Rows handed to the CSV writer at a time, to bound the memory of the row tuples.
_CSV_BLOCK = 100_000
#: Rows per record batch read from Parquet (bounds the per-batch temporaries).
_BATCH_ROWS = 1 << 20


@dataclass(frozen=True)
class _Declared:
    """Ids and counts declared beyond the rows (Parquet metadata, or ``classes=``)."""

    task_ids: list | None = None
    worker_ids: list | None = None
    classes: list | None = None
    n_tasks: int | None = None
    n_workers: int | None = None
    anonymous: bool = False
    unannotated_truth: list | None = None
    features: Any = None


# ---------------------------------------------------------------------------- CSV


def read_csv(
    path: str | os.PathLike[str],
    *,
    task: str = "task",
    worker: str | None = "worker",
    label: str = "label",
    truth: str | None = "truth",
    sep: str | None = None,
    classes: Sequence[Any] | None = None,
    duplicates: DuplicatePolicy = "error",
    columns: Mapping[str, str | None] | None = None,
    truth_column: str | None = None,
) -> CrowdData:
    """Read a long CSV (or TSV) file with one row per annotation.

    Every cell is read as text; each id column then takes the first type that fits
    all its values: int64 when every value is a canonical integer
    (``str(int(v)) == v``), bool when every value is ``True``/``False``, float when
    every value is a float whose ``repr`` is the text itself, else string. Labels and
    the truth column are typed together (they share the classes).

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    task, worker, label : str
        Column names. ``worker=None`` reads anonymous annotations (no worker column).
    truth : str or None, default "truth"
        Column holding the true class of each row's task, used when present; all rows
        of a task must agree, and an empty cell means unknown. None ignores it.
    sep : str, optional
        Field separator; default tab for ``.tsv`` files, else the comma, semicolon,
        tab or pipe that the header line holds most of (with a note when not the comma).
        Files ending in ``.gz``, ``.bz2``, ``.xz`` or ``.zst`` are decompressed as read.
    classes : sequence, optional
        Declared classes in code order (unused classes are kept); a cell matches a
        declared class when it equals its text (``str(class)``).
    duplicates : {"error", "keep", "first", "last"}
        Policy for repeated (task, worker) pairs, as in :class:`CrowdData`.
    columns : mapping, optional
        Role (``"task"``, ``"worker"``, ``"label"``, ``"truth"``) to column name, e.g.
        ``{"task": "question", "worker": "worker", "label": "answer"}``; it takes
        precedence over ``task``/``worker``/``label``. A role not named whose standard
        column is absent is looked for among common spellings (see
        :data:`crowdlearn.data.RECOGNISED_COLUMNS`); a
        :class:`~crowdlearn.data.ColumnsRecognizedWarning` names the columns taken.
    truth_column : str, optional
        Truth column that must be present (``truth`` is used only when present).

    Returns
    -------
    CrowdData
        Codes follow the sorted ids, as with :meth:`CrowdData.from_arrays`.

    Raises
    ------
    CrowdDataError
        Naming the file, for a missing column, an empty file, empty cells (with their
        rows, counted from 0 after the header) or invalid data.
    """
    from crowdlearn.io._source import reading_session

    path = existing_path(path)
    with reading_session(), about(_label(path)):
        sep = sniff_delimiter(path, sep)
        header = _csv_header(path, sep)
        found = _resolve(header, columns, task, worker, label, truth, truth_column)
        task, worker, label, truth = found.task, found.worker, found.label, found.truth
        _require_columns(header, task, worker, label)
        repeated = sorted({n for n in (task, worker, label, truth) if n and header.count(n) > 1})
        if repeated:
            raise CrowdDataError(f"the header names column(s) {show(repeated)} more than once")
        wanted = [name for name in (task, worker, label, truth) if name is not None]
        table = _read_csv_table(path, sep, wanted)
        if table.num_rows == 0:
            raise CrowdDataError("the file has a header but no annotation rows")
        return _assemble(
            lambda name: Column.of(table.column(name)),
            task=task,
            worker=worker,
            label=label,
            truth=truth,
            as_text=True,
            declared=_Declared(classes=None if classes is None else list(classes)),
            duplicates=duplicates,
        )


def write_csv(
    data: CrowdData,
    path: str | os.PathLike[str],
    *,
    truth: bool = True,
    gold: Mapping[Any, Any] | None = None,
) -> None:
    """Write a long CSV (TSV for a ``.tsv`` path) with one row per annotation.

    Columns: ``task``, ``worker`` (omitted when anonymous), ``label``, and ``truth``
    when ``truth`` is true and the data has truth (empty where unknown). Ids are
    written as ``str(id)``, which :func:`read_csv` types back, so int, bool, float
    and string ids round-trip, except strings that read as another type (``"7"``,
    ``"True"``) and the empty string. Rows end in ``\\r\\n`` (RFC 4180) and fields
    are quoted where needed. Features are not written. The file is written atomically,
    compressed when its name ends in ``.gz``, ``.bz2``, ``.xz`` or ``.zst``
    (``crowd.csv.gz``), as the readers decompress it.

    Parameters
    ----------
    data : CrowdData
    path : str or path-like
    truth : bool, default True
        Write the truth column (when the data has truth).
    gold : mapping or Series, optional
        Known answers (task id -> label), such as a platform export's golden answers
        (:func:`crowdlearn.io.platforms.export_gold`): written as a ``known_answer``
        column (:data:`GOLD_COLUMN`), the
        task's known answer on each of its rows (empty elsewhere), which
        :func:`crowdlearn.io._gold.read_gold_column` reads back and the command line
        uses as gold.
    """
    require_data(data, "io.write_csv")
    as_path(path)
    columns = {"task": _texts(data.task_ids, data.task)}
    if not data.is_anonymous:
        columns["worker"] = _texts(data.worker_ids, data.worker)
    columns["label"] = _texts(data.classes, data.label)
    if truth and data.truth is not None:
        columns["truth"] = _texts(data.classes, data.truth[data.task])
    if gold is not None and len(gold):
        known = {id_text(task): id_text(label) for task, label in dict(gold).items()}
        tasks = [id_text(v) for v in data.task_ids.tolist()]
        per_task = np.array([known.get(task, "") for task in tasks] + [""], dtype=object)
        columns[GOLD_COLUMN] = per_task[data.task]
    sep = "\t" if logical_suffix(path) == ".tsv" else ","
    # Rows end in \r\n (RFC 4180, the csv module's default): the csv module quotes
    # fields holding a character of the line terminator, so a lone \r in an id is
    # quoted too. newline="" keeps the text layer from translating line endings.
    with (
        atomic_open(path, "wb") as raw,
        compressing(raw, path) as packed,
        io.TextIOWrapper(packed, "utf-8", newline="") as handle,
    ):
        writer = csv.writer(handle, delimiter=sep, lineterminator="\r\n")
        writer.writerow(list(columns))
        cells = list(columns.values())
        for start in range(0, data.n_annotations, _CSV_BLOCK):
            writer.writerows(zip(*(c[start : start + _CSV_BLOCK] for c in cells), strict=True))


def _texts(ids: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The text of each row's id; code -1 gives an empty cell."""
    texts = np.array([id_text(v) for v in ids.tolist()] + [""], dtype=object)
    return texts[codes]


def _label(path: Path) -> str:
    """How messages name a file (standard input: ``<stdin>``)."""
    from crowdlearn.io._source import STDIN_NAME, is_stdin

    return STDIN_NAME if is_stdin(path) else str(path)


def _csv_header(path: Path, sep: str) -> list[str]:
    from crowdlearn.io._files import _source_of

    source = _source_of(path)
    if source is not None and source.delimiter == sep and source.header is not None:
        if not source.header:
            raise CrowdDataError("the file is empty: expected a header row and annotation rows")
        return list(source.header)
    try:
        with open_text(path) as handle:
            header = next(csv.reader(handle, delimiter=sep), None)
    except UnicodeDecodeError as exc:
        raise CrowdDataError(f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    if not header:
        raise CrowdDataError("the file is empty: expected a header row and annotation rows")
    return header


#: Arrow parses a CSV file in blocks of this many bytes (its default)...
CSV_BLOCK = 1 << 20
#: ...and, when one row is longer than a block (a 10 MB text cell), again with blocks
#: 16 times larger, up to the largest block Arrow accepts.
CSV_BLOCK_LIMIT = (1 << 31) - 1


def _read_csv_table(path: Path, sep: str, columns: list[str]) -> pa.Table:
    """The wanted columns as text; empty cells (quoted or not) are null."""
    block = CSV_BLOCK
    while True:
        try:
            return _arrow_csv(path, sep, columns, block)
        except pa.ArrowInvalid as exc:
            if "straddling" not in str(exc) or block >= CSV_BLOCK_LIMIT:
                error: Exception = exc
                break
            block = min(block * 16, CSV_BLOCK_LIMIT)
        except UnicodeDecodeError as exc:
            error = exc
            break
        except pa.ArrowCapacityError:
            # one row (a line without its end) longer than Arrow's largest block
            raise CrowdDataError(
                f"a row is longer than the {CSV_BLOCK_LIMIT >> 20} MiB crowdlearn can read as "
                "one CSV row (a line that never ends, or a cell of gigabytes)"
            ) from None
    line = _ragged_line(path, sep)
    where = "" if line is None else f" (line {line})"
    raise CrowdDataError(f"cannot parse the file as CSV{where}: {error}") from None


def _arrow_csv(path: Path, sep: str, columns: list[str], block: int) -> pa.Table:
    with open_binary(path) as stream:
        return _arrow_csv_stream(stream, sep, columns, block)


def _arrow_csv_stream(stream: Any, sep: str, columns: list[str], block: int) -> pa.Table:
    return pa_csv.read_csv(
        stream,
        read_options=pa_csv.ReadOptions(block_size=block),
        parse_options=pa_csv.ParseOptions(delimiter=sep, newlines_in_values=True),
        convert_options=pa_csv.ConvertOptions(
            include_columns=columns,
            column_types=dict.fromkeys(columns, pa.string()),
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        ),
    )


def _ragged_line(path: Path, sep: str) -> int | None:
    """The line number of the first row whose field count differs from the header's
    (Arrow's parse errors show the row but not where it is); None if there is none."""
    try:
        with open_text(path) as handle:
            reader = csv.reader(handle, delimiter=sep)
            header = next(reader, [])
            for row in reader:
                if len(row) != len(header):
                    return reader.line_num
    except (csv.Error, UnicodeDecodeError, OSError):
        return None
    return None


# ---------------------------------------------------------------------------- Parquet


def read_parquet(
    path: str | os.PathLike[str],
    *,
    task: str = "task",
    worker: str | None = "worker",
    label: str = "label",
    truth: str | None = "truth",
    duplicates: DuplicatePolicy = "error",
    columns: Mapping[str, str | None] | None = None,
    truth_column: str | None = None,
    features: bool = True,
) -> CrowdData:
    """Read a long Parquet file, or a directory of ``*.parquet`` files.

    Columns are read one at a time, in one pass of record batches, and encoded with
    pyarrow compute: each batch is dictionary-encoded (text columns come encoded from
    their Parquet dictionaries) into one preallocated int32 array of indices, the
    batch dictionaries are unified once, and the indices are remapped in place to the
    final codes, so memory stays near the int32 code arrays. When the files carry the
    metadata written by :func:`write_parquet`, it restores the classes,
    declared-but-unused ids, the code order and anonymity exactly.

    Parameters
    ----------
    path : str or path-like
        A Parquet file, or a directory whose Parquet files are read in sorted name order.
    task, worker, label : str
        Column names. ``worker=None`` reads anonymous annotations; data written
        anonymous reads back anonymous by itself.
    truth : str or None, default "truth"
        Nullable column with the true class of each row's task, used when present
        (rows of a task must agree). None ignores any truth.
    duplicates : {"error", "keep", "first", "last"}
        Policy for repeated (task, worker) pairs.
    columns : mapping, optional
        Role to column name, and recognition of common spellings, as in
        :func:`read_csv`.
    truth_column : str, optional
        Truth column that must be present.
    features : bool, default True
        Load the features the metadata names (the ``.features.npy`` file written by
        :func:`write_parquet`); False ignores them.

    Returns
    -------
    CrowdData
        Without metadata, codes follow the sorted ids. Features written by
        :func:`write_parquet` (the ``.features.npy`` file beside it) are restored.

    Raises
    ------
    CrowdDataError
        Naming the file, for a missing column, an unreadable file, an id column
        whose type is not integer, string, bool or float (lists, structs, dates,
        bytes...; checked from the footers before any row is read), null ids (with
        their rows) or invalid data.
    """
    path = existing_path(path)
    files = _parquet_files(path)
    with about(path):
        footers = [_parquet_footer(file) for file in files]
        declared = _parquet_declared([footer.schema_arrow for footer in footers])
        if declared.anonymous:
            worker = None
            columns = {**(columns or {}), "worker": None}
        found = _resolve(
            footers[0].schema_arrow.names, columns, task, worker, label, truth, truth_column
        )
        task, worker, label = found.task, found.worker, found.label
        truth = found.truth if found.truth is not None else truth
        for footer in footers:
            names = footer.schema_arrow.names
            _require_columns(names, task, worker, label, where=f" in {footer.path.name}")
        for footer in footers:
            _check_id_types(footer, (task, worker, label, truth))
        has_truth = [truth in footer.schema_arrow.names for footer in footers]
        if any(has_truth) and not all(has_truth):
            raise CrowdDataError(f"only some files have the truth column {truth!r}")
        n_rows = sum(footer.num_rows for footer in footers)
        if n_rows == 0:
            raise CrowdDataError("there are no annotation rows")
        data = _assemble(
            lambda name: _parquet_column(files, name, n_rows),
            task=task,
            worker=worker,
            label=label,
            truth=truth if all(has_truth) else None,
            as_text=False,
            declared=declared,
            duplicates=duplicates,
        )
        _check_counts(data, declared)
        if features and declared.features is not None:
            data = data.with_features(_read_features(files[0].parent, declared.features))
        return data


def _read_features(folder: Path, entry: Any) -> np.ndarray:
    """The features array named by the metadata, checked against its shape and dtype."""
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
        raise CrowdDataError("metadata 'features' must be an object with a 'file' name")
    file = folder / Path(entry["file"]).name  # a name beside the Parquet file, never a path
    if not file.is_file():
        raise CrowdDataError(
            f"the features file {file} named in the metadata is missing; copy it along with "
            "the Parquet file, or read without features (features=False)"
        )
    try:
        array = np.load(file, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CrowdDataError(f"{file}: cannot read the features: {exc}") from None
    shape, dtype = entry.get("shape"), entry.get("dtype")
    if list(array.shape) != shape or array.dtype.str != dtype:
        raise CrowdDataError(
            f"{file} holds an array of shape {list(array.shape)} and dtype {array.dtype.str} "
            f"but the metadata expects shape {shape} and dtype {dtype}: it belongs to "
            "another file"
        )
    return array


def write_parquet(
    data: CrowdData,
    path: str | os.PathLike[str],
    *,
    truth: bool = True,
    row_group_size: int = 1_000_000,
    features: bool = True,
) -> None:
    """Write a long Parquet file with one row per annotation, atomically.

    Columns: ``task``, ``worker`` (absent when anonymous), ``label`` and, when
    ``truth`` is true and the data has truth, a nullable ``truth``. Ids keep their
    types (int64, string, bool, float64); string ids are dictionary-encoded.

    The schema metadata key ``b"crowdlearn"`` holds a JSON document with
    ``version``, ``n_tasks``, ``n_workers``, ``n_classes``, ``anonymous`` and
    ``classes`` (class ids in code order). When the task (or worker) ids cannot be
    recovered from the rows, because some have no annotation or their code order
    is not the sorted order, it also holds ``task_ids`` (``worker_ids``) in code
    order, and ``unannotated_truth``: ``[task code, class code]`` pairs for tasks
    without annotations whose truth is known.

    Features (when the data have them and ``features`` is true) go to a ``.npy`` file
    beside the Parquet file: ``crowd.parquet`` -> ``crowd.features.npy``, one row per
    task in task-code order, with the array's own dtype and shape. The metadata's
    ``features`` entry names it: ``{"file": "crowd.features.npy", "shape": [...],
    "dtype": "float32"}``; :func:`read_parquet` loads it from the Parquet file's folder
    and checks both. The ``.npy`` file is written first, so a reader never finds
    metadata naming a file that is not complete.

    Parameters
    ----------
    data : CrowdData
    path : str or path-like
    truth : bool, default True
        Write the truth.
    row_group_size : int, default 1_000_000
        Rows per Parquet row group.
    features : bool, default True
        Write the features (when the data have them) to the ``.features.npy`` file.
    """
    require_data(data, "io.write_parquet")
    as_path(path)
    columns = {"task": _arrow_ids(data.task_ids, data.task, "task")}
    if not data.is_anonymous:
        columns["worker"] = _arrow_ids(data.worker_ids, data.worker, "worker")
    columns["label"] = _arrow_ids(data.classes, data.label, "class")
    write_truth = truth and data.truth is not None
    if write_truth:
        columns["truth"] = _arrow_ids(data.classes, data.truth[data.task], "class")
    document = _parquet_metadata(data, write_truth)
    table = pa.table(columns).replace_schema_metadata({METADATA_KEY: json.dumps(document)})
    sidecar = None
    if features and data.features is not None:
        sidecar = features_path(path)
        document["features"] = {
            "file": sidecar.name,
            "shape": list(data.features.shape),
            "dtype": data.features.dtype.str,
        }
        table = table.replace_schema_metadata({METADATA_KEY: json.dumps(document)})
        if data.features.dtype == object:
            raise CrowdDataError("features of dtype object cannot be stored; use numbers")
        with atomic_path(sidecar) as tmp, open(tmp, "wb") as handle:
            np.save(handle, np.ascontiguousarray(data.features), allow_pickle=False)
    try:
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, row_group_size=row_group_size)
    except BaseException:
        # The features alone are of no use: do not leave them behind.
        if sidecar is not None:
            sidecar.unlink(missing_ok=True)
        raise


def features_path(path: str | os.PathLike[str]) -> Path:
    """The features file written beside a Parquet file: ``x.parquet`` -> ``x.features.npy``."""
    path = Path(path)
    stem = path.stem if path.suffix.lower() in PARQUET_SUFFIXES else path.name
    return path.with_name(f"{stem}.features.npy")


def _arrow_ids(ids: np.ndarray, codes: np.ndarray, what: str) -> pa.Array:
    """Each row's id as an Arrow array (null where the code is -1)."""
    mask = codes < 0 if np.any(codes < 0) else None
    try:
        if ids.dtype == object:
            dictionary = pa.array(ids, type=pa.string())
            return pa.DictionaryArray.from_arrays(pa.array(codes, mask=mask), dictionary)
        return pa.array(ids[codes], mask=mask)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CrowdDataError(
            f"{what} ids cannot be stored in Parquet ({exc}); use int, str, bool or float ids"
        ) from None


def _parquet_metadata(data: CrowdData, with_truth: bool) -> dict[str, Any]:
    document: dict[str, Any] = {
        "version": _METADATA_VERSION,
        "n_tasks": data.n_tasks,
        "n_workers": data.n_workers,
        "n_classes": data.n_classes,
        "anonymous": data.is_anonymous,
        "classes": ids_to_json(data.classes, "class"),
    }
    task_counts = np.bincount(data.task, minlength=data.n_tasks)
    if _ids_need_listing(data.task_ids, task_counts):
        document["task_ids"] = ids_to_json(data.task_ids, "task")
        if with_truth:
            unannotated = np.flatnonzero((task_counts == 0) & (data.truth >= 0))
            document["unannotated_truth"] = [
                [int(t), int(data.truth[t])] for t in unannotated.tolist()
            ]
    if not data.is_anonymous and _ids_need_listing(data.worker_ids, data.workload):
        document["worker_ids"] = ids_to_json(data.worker_ids, "worker")
    return document


def _ids_need_listing(ids: np.ndarray, counts: np.ndarray) -> bool:
    """Whether reading the rows back would lose ids or their code order."""
    if np.any(counts == 0):
        return True
    return len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1]))


def _parquet_files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    files = sorted(
        p for p in path.iterdir() if p.is_file() and p.suffix.lower() in PARQUET_SUFFIXES
    )
    if not files:
        raise CrowdDataError(f"{path}: the directory holds no *.parquet files")
    return files


@dataclass(frozen=True)
class _Footer:
    """What a Parquet file's footer says: its columns, schema metadata and row count."""

    path: Path
    schema_arrow: pa.Schema
    num_rows: int


def parquet_input(file: Path) -> Any:
    """What pyarrow reads a Parquet file from: its path, or for standard input (``-``)
    the described stream."""
    from crowdlearn.io._source import describe, is_stdin

    return describe(file).arrow_file() if is_stdin(file) else file


def _parquet_footer(file: Path) -> _Footer:
    try:
        parquet = pq.ParquetFile(parquet_input(file))
    except (pa.ArrowException, OSError) as exc:
        raise CrowdDataError(f"{file}: cannot read the file as Parquet: {exc}") from None
    return _Footer(file, parquet.schema_arrow, parquet.metadata.num_rows)


def _check_id_types(footer: _Footer, columns: Sequence[str | None]) -> None:
    """Refuse id columns whose Arrow type is not int, float, bool or string (lists,
    structs, dates, bytes...): they could not be written back or compared as ids."""
    schema = footer.schema_arrow
    for name in columns:
        if name is None or name not in schema.names:
            continue
        value_type = schema.field(name).type
        if pa.types.is_dictionary(value_type):
            value_type = value_type.value_type
        if not _is_id_type(value_type):
            raise CrowdDataError(
                f"{footer.path}: column {name!r} has type {value_type}; ids and labels must "
                "be integers, strings, booleans or floats"
            )


def _is_id_type(value_type: pa.DataType) -> bool:
    return (
        pa.types.is_integer(value_type)
        or pa.types.is_floating(value_type)
        or pa.types.is_boolean(value_type)
        or pa.types.is_null(value_type)
        or pa.types.is_string(value_type)
        or pa.types.is_large_string(value_type)
        or pa.types.is_string_view(value_type)
    )


def _parquet_column(files: list[Path], name: str, length: int) -> Column:
    """One column of the files, streamed in record batches of at most ``_BATCH_ROWS``
    rows; text comes dictionary-encoded (straight from the Parquet dictionary pages)."""

    def chunks() -> Iterator[pa.Array]:
        for file in files:
            try:
                parquet = pq.ParquetFile(parquet_input(file), read_dictionary=[name])
                for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=[name]):
                    yield normalise(batch.column(0))
            except (pa.ArrowException, OSError) as exc:
                raise CrowdDataError(f"{file}: cannot read column {name!r}: {exc}") from None

    return Column(chunks, length)


def _parquet_declared(schemas: list[pa.Schema]) -> _Declared:
    """The crowdlearn metadata shared by all files, or nothing when they carry none."""
    documents = {(schema.metadata or {}).get(METADATA_KEY) for schema in schemas}
    if len(documents) > 1:
        raise CrowdDataError("the files carry different crowdlearn metadata; read them apart")
    raw = documents.pop()
    if raw is None:
        return _Declared()
    try:
        document = json.loads(raw)
    except RecursionError:
        raise CrowdDataError("the crowdlearn metadata is nested too deeply to be read") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CrowdDataError(f"the crowdlearn metadata is not valid JSON: {exc}") from None
    if not isinstance(document, dict) or "classes" not in document:
        raise CrowdDataError("the crowdlearn metadata must be a JSON object with 'classes'")
    return _Declared(
        task_ids=_optional_ids(document, "task_ids"),
        worker_ids=_optional_ids(document, "worker_ids"),
        classes=json_ids(document["classes"], "classes"),
        n_tasks=json_count(document, "n_tasks"),
        n_workers=json_count(document, "n_workers"),
        anonymous=document.get("anonymous") is True,
        unannotated_truth=document.get("unannotated_truth"),
        features=document.get("features"),
    )


def _optional_ids(document: dict, key: str) -> list | None:
    return json_ids(document[key], key) if key in document else None


def _check_counts(data: CrowdData, declared: _Declared) -> None:
    """The numbers of tasks and workers found must match the metadata."""
    found = {"tasks": data.n_tasks, "workers": data.n_workers}
    expected = {"tasks": declared.n_tasks, "workers": declared.n_workers}
    for what, n in expected.items():
        if n is not None and n != found[what] and not (what == "workers" and data.is_anonymous):
            raise CrowdDataError(
                f"the metadata declares {n} {what} but the rows have {found[what]}; "
                "the file was changed after it was written"
            )


# ---------------------------------------------------------------------------- shared


def _resolve(
    header: Sequence[str],
    columns: Mapping[str, str | None] | None,
    task: str,
    worker: str | None,
    label: str,
    truth: str | None,
    truth_column: str | None,
) -> Columns:
    """The column of each role (see :func:`~crowdlearn.data._headers.resolve_columns`),
    warning when some were recognised from common spellings."""
    found = resolve_columns(
        header,
        columns,
        task=task,
        worker=worker,
        label=label,
        truth=truth,
        truth_column=truth_column,
    )
    # stacklevel 4: the warning points at the code that called read_csv/read_parquet.
    note_recognized(found, stacklevel=4)
    return found


def _require_columns(
    present: Sequence[str], task: str, worker: str | None, label: str, where: str = ""
) -> None:
    missing = [name for name in (task, worker, label) if name is not None and name not in present]
    if not missing:
        return
    hint = ""
    if worker in missing:
        hint = "; for anonymous annotations (no worker column) pass worker=None"
    hint += (
        "; name the columns with columns={'task': ..., 'worker': ..., 'label': ...} "
        "(command line: --columns task=...,worker=...,label=...)"
    )
    raise CrowdDataError(
        f"missing column(s) {show(missing)}{where}; the columns are {show(list(present), 20)}"
        f"{hint}"
    )


def _assemble(
    load: Callable[[str], Column],
    *,
    task: str,
    worker: str | None,
    label: str,
    truth: str | None,
    as_text: bool,
    declared: _Declared,
    duplicates: DuplicatePolicy,
) -> CrowdData:
    """Encode the columns one at a time (``load`` gives a column by name) into CrowdData."""
    task_codes, task_ids = _encode_one(load, task, "task", as_text, declared.task_ids)
    worker_codes, worker_ids = None, None
    if worker is not None:
        worker_codes, worker_ids = _encode_one(
            load, worker, "worker", as_text, declared.worker_ids
        )
    label_columns = [load(label)] if truth is None else [load(label), load(truth)]
    codes, classes = encode(label_columns, "class", as_text=as_text, declared=declared.classes)
    label_codes = codes[0]
    _refuse_missing(label_codes, label)
    truth_codes = None
    if truth is not None:
        truth_codes, conflicts = truth_by_task(task_codes, codes[1], len(task_ids))
        if len(conflicts):
            raise CrowdDataError(
                f"the {truth!r} column disagrees within tasks {show(task_ids[conflicts])}"
            )
        if declared.unannotated_truth:
            _add_unannotated_truth(truth_codes, declared.unannotated_truth)
    del codes
    pa.default_memory_pool().release_unused()
    return CrowdData(
        task_codes,
        worker_codes,
        label_codes,
        task_ids=task_ids,
        worker_ids=worker_ids,
        classes=classes,
        truth=truth_codes,
        duplicates=duplicates,
    )


def _encode_one(
    load: Callable[[str], Column],
    column: str,
    what: str,
    as_text: bool,
    declared: list | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Codes and ids of one required column; Arrow's freed memory goes back to the system."""
    (codes,), ids = encode([load(column)], what, as_text=as_text, declared=declared)
    pa.default_memory_pool().release_unused()
    _refuse_missing(codes, column)
    return codes, ids


def _refuse_missing(codes: np.ndarray, column: str) -> None:
    rows = missing_rows(codes)
    if len(rows):
        raise CrowdDataError(
            f"column {column!r} has {len(rows)} empty (missing) value(s) at rows {show(rows)} "
            "(rows count from 0 after the header)"
        )


def _add_unannotated_truth(truth: np.ndarray, pairs: Any) -> None:
    """Set the metadata's truth of tasks without annotations, in place."""
    try:
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    except (TypeError, ValueError, OverflowError):
        raise CrowdDataError(
            "metadata 'unannotated_truth' must be a list of [task code, class code] pairs"
        ) from None
    tasks = pairs[:, 0]
    if np.any((tasks < 0) | (tasks >= len(truth))):
        raise CrowdDataError(
            f"metadata 'unannotated_truth' names unknown task codes {show(tasks)}"
        )
    classes = pairs[:, 1]
    if np.any((classes < -1) | (classes > np.iinfo(truth.dtype).max)):
        raise CrowdDataError(
            f"metadata 'unannotated_truth' names invalid class codes {show(classes)}"
        )
    truth[tasks] = classes
