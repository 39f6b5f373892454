"""A crowd as compact code arrays on disk (a *code store*), read back block by block.

:func:`convert_parquet` reads a Parquet file or directory of (task, worker, label)
rows once, in record batches, and writes into a directory:

* ``worker.codes``: one worker code per annotation (int16 when there are at most
  32,767 workers, else int32), raw little-endian;
* ``label.codes``: one class code per annotation (int8: at most 127 classes);
* ``indptr.codes``: the CSR task pointer (int64, ``n_tasks + 1`` entries): the
  annotations of task ``t`` are rows ``indptr[t]:indptr[t + 1]``;
* ``task_ids.parquet``, ``worker_ids.parquet``, ``classes.parquet``: the user's ids in
  code order (one column each, their Arrow type kept);
* ``store.json``: the sizes and dtypes.

The task column must be sorted (non-decreasing over the files in name order, as the
Parquet generator :func:`~crowdlearn.simulate.write_synthetic_parquet` writes it), so
that a task's rows are contiguous and the codes follow the sorted ids: task, worker
and class codes are those :func:`crowdlearn.io.read_parquet` gives (sorted ids), and
the per-block steps see the same blocks as the in-memory engine. Worker and class ids
get provisional codes in the order they first appear (a dictionary of the distinct
ids, never a table of the rows); one remap pass over ``worker.codes`` and
``label.codes`` turns them into the sorted order at the end.

No table of the rows is held: memory is O(batch) plus the distinct worker and class
ids. Duplicate (task, worker) pairs are not looked for (they count as separate
annotations, the ``"keep"`` policy of the Dask engine). The directory appears only
complete (atomic rename).

:class:`CodeStore` opens such a directory and yields its :class:`Block` objects of
about ``chunk_size`` annotations, with the task ranges the in-memory
:class:`~crowdlearn.aggregation._blocks.BlockReader` makes. A block is read with
explicit file reads (not a memory map), so the process's resident memory holds one
block at a time; the system's page cache keeps the files between passes when memory
allows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crowdlearn._atomic import atomic_directory
from crowdlearn._progress import Progress, progress_bar
from crowdlearn.aggregation._blocks import Block
from crowdlearn.data import CrowdDataError

#: Name of the description file of a code store.
STORE_FILE = "store.json"
#: Format name and version written into ``store.json``.
STORE_FORMAT, STORE_VERSION = "crowdlearn-code-store", 1
#: Rows per record batch read from Parquet.
BATCH_ROWS = 1 << 20
#: Values per chunk of the remap pass.
_REMAP_CHUNK = 1 << 24
_MAX_CLASSES = int(np.iinfo(np.int8).max)


def is_store(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a code store directory (it holds ``store.json``)."""
    return (Path(path) / STORE_FILE).is_file()


class CodeStore:
    """A code store directory, opened for reading (see the module docstring).

    Attributes
    ----------
    path : Path
    n_annotations, n_tasks, n_workers, n_classes : int
    worker_dtype : numpy dtype
        Of ``worker.codes`` (int16 or int32).
    worker_ids, classes : ndarray
        The ids in code order (sorted).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            meta = json.loads((self.path / STORE_FILE).read_text())
        except (OSError, ValueError) as exc:
            raise CrowdDataError(f"{self.path}: not a readable code store ({exc})") from None
        if meta.get("format") != STORE_FORMAT or meta.get("version") != STORE_VERSION:
            raise CrowdDataError(
                f"{self.path}: {STORE_FILE} is not a version-{STORE_VERSION} code store"
            )
        self.n_annotations = int(meta["n_annotations"])
        self.n_tasks = int(meta["n_tasks"])
        self.n_workers = int(meta["n_workers"])
        self.n_classes = int(meta["n_classes"])
        self.worker_dtype = np.dtype(meta["worker_dtype"])
        expected = {
            "worker.codes": self.n_annotations * self.worker_dtype.itemsize,
            "label.codes": self.n_annotations,
            "indptr.codes": (self.n_tasks + 1) * 8,
        }
        for name, size in expected.items():
            file = self.path / name
            if not file.is_file() or file.stat().st_size != size:
                raise CrowdDataError(f"{file}: missing or not {size} bytes (a damaged store)")
        #: Worker and class ids in code order (read once: they are few).
        self.worker_ids = _read_ids(self.path / "worker_ids.parquet")
        self.classes = _read_ids(self.path / "classes.parquet")

    @property
    def is_anonymous(self) -> bool:
        """Always False: a store has worker ids."""
        return False

    @property
    def task_ids(self) -> np.ndarray:
        """Task ids in code order (one array of ``n_tasks`` ids, read on each access)."""
        return _read_ids(self.path / "task_ids.parquet")

    def disk_bytes(self) -> int:
        """Bytes of the store's files."""
        return sum(f.stat().st_size for f in self.path.iterdir() if f.is_file())

    def indptr(self, start: int, stop: int) -> np.ndarray:
        """``indptr[start:stop]`` read from disk (int64)."""
        return _read(self.path / "indptr.codes", np.int64, start, stop - start)

    def task_ranges(self, chunk_size: int | None) -> list[tuple[int, int]]:
        """Task ranges ``(start, stop)`` of about ``chunk_size`` annotations each, cut
        where :func:`~crowdlearn.aggregation._blocks.task_blocks` cuts them (a binary
        search on the pointer file: only a few of its pages are read)."""
        if chunk_size is None:
            return [(0, self.n_tasks)]
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size}")
        pointer = np.memmap(self.path / "indptr.codes", dtype=np.int64, mode="r")
        try:
            targets = np.arange(chunk_size, self.n_annotations, chunk_size)
            cuts = np.searchsorted(pointer, targets)
        finally:
            del pointer
        bounds = np.unique(np.concatenate([[0], cuts, [self.n_tasks]]))
        return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))

    def block(self, start: int, stop: int) -> Block:
        """The :class:`Block` of tasks ``start:stop`` (int32 local task, worker and class
        codes, the dtypes of the in-memory engine's blocks)."""
        pointer = self.indptr(start, stop + 1)
        begin, end = int(pointer[0]), int(pointer[-1])
        pointer -= begin
        worker = _read(self.path / "worker.codes", self.worker_dtype, begin, end - begin)
        label = _read(self.path / "label.codes", np.int8, begin, end - begin)
        n_tasks = stop - start
        task = np.repeat(np.arange(n_tasks, dtype=np.int32), np.diff(pointer))
        return Block(
            start, n_tasks, pointer, task, worker.astype(np.int32), label.astype(np.int32)
        )

    def blocks(self, ranges: list[tuple[int, int]]) -> Iterator[Block]:
        """The blocks of ``ranges`` (from :meth:`task_ranges`), read one at a time."""
        for start, stop in ranges:
            yield self.block(start, stop)

    def __repr__(self) -> str:
        return (
            f"CodeStore({str(self.path)!r}: {self.n_annotations:,} annotations, "
            f"{self.n_tasks:,} tasks, {self.n_workers:,} workers, {self.n_classes} classes)"
        )


def _read(file: Path, dtype: Any, start: int, count: int) -> np.ndarray:
    """``count`` values of ``dtype`` from value ``start`` of a raw file (a plain read)."""
    dtype = np.dtype(dtype)
    values = np.fromfile(file, dtype=dtype, count=count, offset=start * dtype.itemsize)
    if len(values) != count:
        raise CrowdDataError(f"{file}: shorter than its store.json says (a damaged store)")
    return values


def _read_ids(file: Path) -> np.ndarray:
    """The ids of a one-column Parquet file; integer ids are read batch by batch into
    one int64 array (no second copy of a hundred million task ids)."""
    parquet = pq.ParquetFile(file)
    if not pa.types.is_integer(parquet.schema_arrow.field(0).type):
        column = parquet.read().column(0)
        return _as_numpy(column.combine_chunks() if column.num_chunks else column)
    ids = np.empty(parquet.metadata.num_rows, dtype=np.int64)
    position = 0
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
        values = batch.column(0).to_numpy(zero_copy_only=False)
        ids[position : position + len(values)] = values
        position += len(values)
    return ids


def _as_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Ids as the numpy array CrowdData holds: int64 for integers, object for text."""
    if pa.types.is_integer(values.type):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)
    array = values.to_numpy(zero_copy_only=False)
    return array.astype(object) if array.dtype.kind in "US" else array


# ------------------------------------------------------------------ conversion


def convert_parquet(
    source: str | os.PathLike[str],
    store: str | os.PathLike[str],
    *,
    columns: tuple[str, str, str] = ("task", "worker", "label"),
    progress: Progress = "auto",
) -> CodeStore:
    """Convert a Parquet file or directory to a code store, in one pass of record
    batches (memory O(batch) plus the distinct worker and class ids).

    Parameters
    ----------
    source : str or path-like
        A Parquet file, or a directory whose ``*.parquet`` files are read in name
        order. Its task column must be sorted over the files (each task's rows
        contiguous, ids non-decreasing).
    store : str or path-like
        The directory to write (replaced if it exists; it appears only complete).
    columns : (task, worker, label) column names
    progress : True, False or "auto"
        A bar over the rows read.

    Returns
    -------
    CodeStore

    Raises
    ------
    CrowdDataError
        Naming the file, for a missing column, an id type that is not integer, string,
        boolean or float, null ids, a task column out of order, more than 127 classes,
        or no rows.
    """
    from crowdlearn.io.longform import _check_id_types, _parquet_files, _parquet_footer

    source = Path(source)
    if not source.exists():
        raise CrowdDataError(f"{source}: no such file or directory")
    files = _parquet_files(source)
    footers = [_parquet_footer(file) for file in files]
    for footer in footers:
        missing = [name for name in columns if name not in footer.schema_arrow.names]
        if missing:
            raise CrowdDataError(f"{footer.path}: no column {missing[0]!r} (columns {columns})")
        _check_id_types(footer, columns)
    total = sum(footer.num_rows for footer in footers)
    if total == 0:
        raise CrowdDataError(f"{source}: there are no annotation rows")
    _check_free_space(Path(store), total)
    with atomic_directory(store) as tmp:
        writer = _Converter(tmp)
        bar = progress_bar(progress=progress, desc="convert", total=total, unit="rows")
        try:
            for file in files:
                for batch in _batches(file, columns):
                    writer.add(file, batch)
                    bar.update(batch.num_rows)
        finally:
            bar.close()
            writer.close()
        writer.finish()
    return CodeStore(store)


#: Bytes a store needs per annotation while it is written: provisional int32 worker
#: codes, final int16 ones and int8 class codes (the pointer and ids come on top).
_BYTES_PER_ROW = 7


def _check_free_space(store: Path, rows: int) -> None:
    """Refuse a conversion that cannot fit on the store's disk (before any write)."""
    import shutil

    folder = store.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if free < _BYTES_PER_ROW * rows:
        raise CrowdDataError(
            f"{store}: converting {rows:,} annotations needs at least "
            f"{_BYTES_PER_ROW * rows / 1e9:.1f} GB of disk and {free / 1e9:.1f} GB are free "
            "there; choose another folder (TMPDIR, or the store argument)"
        )


def _batches(file: Path, columns: tuple[str, str, str]) -> Iterator[pa.RecordBatch]:
    try:
        parquet = pq.ParquetFile(file)
        yield from parquet.iter_batches(batch_size=BATCH_ROWS, columns=list(columns))
    except (pa.ArrowException, OSError) as exc:
        raise CrowdDataError(f"{file}: cannot read it as Parquet: {exc}") from None


def _normalised(values: pa.Array) -> pa.Array:
    """Plain (not dictionary-encoded) ids of one type per kind: int64 for integers,
    large_string for text, so that files written with other widths read together."""
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_integer(values.type) and values.type != pa.int64():
        return values.cast(pa.int64())
    if pa.types.is_string(values.type) or pa.types.is_string_view(values.type):
        return values.cast(pa.large_string())
    return values


class _Dictionary:
    """Provisional codes of the distinct ids of one column, in order of appearance."""

    def __init__(self, what: str) -> None:
        self.what = what
        #: The distinct ids seen so far; an id's provisional code is its position.
        self.known: pa.Array | None = None
        self.type: pa.DataType | None = None

    def __len__(self) -> int:
        return 0 if self.known is None else len(self.known)

    def encode(self, file: Path, values: pa.Array) -> np.ndarray:
        """The provisional code of each value (int32): one hash lookup of the batch in
        the ids seen so far, and a second one after adding the ids new to this batch."""
        self._check_type(file, values.type)
        if self.known is None:
            self.known = pc.unique(values)
        codes = pc.index_in(values, value_set=self.known)
        if codes.null_count:
            new = pc.unique(values.filter(codes.is_null()))
            self.known = pa.concat_arrays([self.known, new])
            codes = pc.index_in(values, value_set=self.known)
        return codes.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)

    def _check_type(self, file: Path, value_type: pa.DataType) -> None:
        if self.type is None:
            self.type = value_type
        elif value_type != self.type:
            raise CrowdDataError(
                f"{file}: the {self.what} column has type {value_type}, another file {self.type}"
            )

    def sorted_ids(self) -> tuple[pa.Array, np.ndarray]:
        """The ids in sorted order, and the final code of each provisional code."""
        ids = self.known
        order = np.argsort(_as_numpy(ids), kind="stable")
        final = np.empty(len(order), dtype=np.int64)
        final[order] = np.arange(len(order))
        return ids.take(pa.array(order)), final


class _Converter:
    """The files of a store being written (see :func:`convert_parquet`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.workers = _Dictionary("worker")
        self.classes = _Dictionary("label")
        self.tasks = _Dictionary("task")  # its type check only
        self.worker_file = open(folder / "worker.provisional", "wb")
        self.label_file = open(folder / "label.codes", "wb")
        self.indptr_file = open(folder / "indptr.codes", "wb")
        self.task_writer: pq.ParquetWriter | None = None
        self.n_annotations = 0
        self.n_tasks = 0
        self.last_task: Any = None

    def add(self, file: Path, batch: pa.RecordBatch) -> None:
        """Append one record batch of (task, worker, label) rows."""
        if batch.num_rows == 0:
            return
        task, worker, label = (_normalised(batch.column(i)) for i in range(3))
        for name, values in zip(batch.schema.names, (task, worker, label), strict=True):
            if values.null_count:
                row = self.n_annotations + int(np.flatnonzero(values.is_null())[0])
                raise CrowdDataError(f"{file}: column {name!r} has null ids (row {row} overall)")
        self._add_tasks(file, task)
        self.worker_file.write(self.workers.encode(file, worker).tobytes())
        labels = self.classes.encode(file, label)
        if len(self.classes) > _MAX_CLASSES:
            raise CrowdDataError(
                f"{file}: more than {_MAX_CLASSES} classes; the stream engine stores class "
                "codes as int8"
            )
        self.label_file.write(labels.astype(np.int8).tobytes())
        self.n_annotations += batch.num_rows

    def _add_tasks(self, file: Path, task: pa.Array) -> None:
        """Record the start of each task that begins in this batch, and its id."""
        self.tasks._check_type(file, task.type)
        n = len(task)
        head, tail = task.slice(0, n - 1), task.slice(1)
        first = task[0].as_py()
        if pc.any(pc.less(tail, head)).as_py() or (
            self.last_task is not None and first < self.last_task
        ):
            raise CrowdDataError(
                f"{file}: the task column is not sorted (rows of a task must be contiguous, "
                "task ids non-decreasing over the files in name order); sort the annotations "
                "by task first, or use the memory or dask engine"
            )
        starts = np.flatnonzero(pc.not_equal(tail, head).to_numpy(zero_copy_only=False)) + 1
        if self.last_task is None or first != self.last_task:
            starts = np.concatenate([[0], starts])
        self.last_task = task[n - 1].as_py()
        (self.n_annotations + starts).astype(np.int64).tofile(self.indptr_file)
        ids = pa.table({"task": task.take(pa.array(starts))})
        if self.task_writer is None:
            self.task_writer = pq.ParquetWriter(self.folder / "task_ids.parquet", ids.schema)
        self.task_writer.write_table(ids)
        self.n_tasks += len(starts)

    def close(self) -> None:
        """Close the files (after success or failure)."""
        for handle in (self.worker_file, self.label_file, self.indptr_file):
            handle.close()
        if self.task_writer is not None:
            self.task_writer.close()

    def finish(self) -> None:
        """The final pointer entry, the remap to sorted codes and ``store.json``."""
        with open(self.folder / "indptr.codes", "ab") as handle:
            np.array([self.n_annotations], dtype=np.int64).tofile(handle)
        worker_ids, worker_codes = self.workers.sorted_ids()
        classes, class_codes = self.classes.sorted_ids()
        worker_dtype = np.dtype(
            np.int16 if len(worker_ids) <= np.iinfo(np.int16).max else np.int32
        )
        _remap(
            self.folder / "worker.provisional",
            np.int32,
            worker_codes.astype(worker_dtype),
            self.folder / "worker.codes",
        )
        (self.folder / "worker.provisional").unlink()
        if not np.array_equal(class_codes, np.arange(len(class_codes))):
            _remap(self.folder / "label.codes", np.int8, class_codes.astype(np.int8))
        pq.write_table(pa.table({"worker": worker_ids}), self.folder / "worker_ids.parquet")
        pq.write_table(pa.table({"label": classes}), self.folder / "classes.parquet")
        meta = {
            "format": STORE_FORMAT,
            "version": STORE_VERSION,
            "n_annotations": self.n_annotations,
            "n_tasks": self.n_tasks,
            "n_workers": len(worker_ids),
            "n_classes": len(classes),
            "worker_dtype": worker_dtype.name,
        }
        (self.folder / STORE_FILE).write_text(json.dumps(meta, indent=1))


def _remap(file: Path, dtype: Any, lookup: np.ndarray, target: Path | None = None) -> None:
    """Replace each code ``c`` of a raw file by ``lookup[c]`` (into ``target``, or in
    place), in chunks of ``_REMAP_CHUNK`` values."""
    itemsize = np.dtype(dtype).itemsize
    with open(file, "r+b" if target is None else "rb") as source:
        out = source if target is None else open(target, "wb")
        try:
            offset = 0
            while True:
                source.seek(offset * itemsize)
                codes = np.fromfile(source, dtype=dtype, count=_REMAP_CHUNK)
                if len(codes) == 0:
                    break
                if target is None:
                    source.seek(offset * itemsize)
                lookup[codes].tofile(out)
                offset += len(codes)
        finally:
            if target is not None:
                out.close()
