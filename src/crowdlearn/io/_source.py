"""One description of an input, made once: :class:`Source` and :func:`describe`.

Before a command reads its input, several parts want to know what it is: the format
(by its ending, or by its content for standard input), the compression, the CSV
delimiter and header, the platform whose export it is, and the answer kind its
columns say. Each used to open and sniff the file again, so a pipe or ``-`` could not
be an input. :func:`describe` now opens the input once, sniffs its head once and
keeps the open handle; every reader of that input then reads through the same
:class:`Source` (:meth:`Source.open` rewinds the one handle, it never opens the path
again).

* **Standard input** (``-``) is copied as it comes, still compressed, to an anonymous
  temporary file on disk (not in memory), so that readers that need to go back (the
  CSV reader's retry with larger blocks, the line number of a ragged row) can; its
  format and compression are told from its first bytes.
* **Compressed input** is decompressed as it is read, never whole, and the
  decompressed bytes are counted: past the memory the process can get divided by
  :data:`INFLATION` (what reading a byte of text costs in memory), the read stops
  with a :class:`~crowdlearn.data.errors.CrowdMemoryError` (the memory guard of
  ``crowdlearn.data._memory``, whose limit ``CROWDLEARN_MEMORY_LIMIT`` sets).
* Descriptions live for a **reading session** (:func:`reading_session`): the command
  line opens one around each command, :func:`crowdlearn.io.read` around each read,
  and its end closes the handles.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import csv
import io
import lzma
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from crowdlearn.data.errors import CrowdDataError, CrowdMemoryError

#: The name that means standard input.
STDIN = "-"
#: How standard input is named in messages.
STDIN_NAME = "<stdin>"
#: Bytes of (decompressed) content sniffed at the head of a file.
HEAD = 1 << 16
#: Memory one byte of text costs while it is read into crowd data (Arrow's strings and
#: offsets, then the ids and codes): reading a 27 MB CSV of 900,000 distinct task ids
#: (``io.read``, gzipped or not) peaked 255 MB above the imports, about 9.5 times the
#: text. Decompressed content past the available memory divided by this is refused
#: before it is read on.
INFLATION = 10
#: Compression endings and their codec.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}
#: Delimiters recognised in a header line, in order of preference on a tie.
DELIMITERS = (",", ";", "\t", "|")
#: The compression of a file, told by its first bytes (standard input has no name).
MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
#: The ending of each codec (to name what standard input holds).
_ENDING = {"gzip": ".gz", "bz2": ".bz2", "xz": ".xz", "zstd": ".zst"}


def _open_raw(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open an input file, in binary; the one place crowdlearn opens its inputs (the
    tests count the calls)."""
    return open(path, "rb")


def is_stdin(source: Any) -> bool:
    """Whether ``source`` names standard input (``"-"``)."""
    return isinstance(source, (str, os.PathLike)) and os.fspath(source) == STDIN


@dataclass(frozen=True, eq=False)
class Source:
    """What an input is, told once, and the one handle it is read from.

    Attributes
    ----------
    name : str
        The input as given (``"-"`` for standard input).
    path : Path or None
        The file; None for standard input.
    suffix : str
        The ending that tells the format, under any compression ending (for standard
        input, the one its content says: ``.csv``, ``.json``, ``.jsonl``, ``.parquet``,
        ``.npy``).
    compression : str or None
        ``gzip``, ``bz2``, ``xz`` or ``zstd``.
    head : bytes
        The first (decompressed) bytes, at most :data:`HEAD`.
    delimiter : str or None
        CSV/TSV files: the field separator.
    header : tuple of str or None
        CSV/TSV files: the column names.
    platform : str or None
        The platform whose export this is (``crowdlearn.io.platforms.PLATFORMS``).
    """

    name: str
    path: Path | None
    suffix: str
    compression: str | None
    head: bytes
    delimiter: str | None = None
    header: tuple[str, ...] | None = None
    platform: str | None = None
    _raw: Any = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """The input's name in messages."""
        return STDIN_NAME if self.path is None else str(self.path)

    def open(self) -> IO[bytes]:
        """The whole (decompressed) content, from the start, read through the one
        handle; closing the stream leaves the handle open for the next reader."""
        self._raw.seek(0)
        return decompressed(_Borrowed(self._raw), self.compression, self.label)

    def open_text(self) -> IO[str]:
        """The content as UTF-8 text (a byte-order mark skipped)."""
        return io.TextIOWrapper(self.open(), encoding="utf-8-sig", newline="")

    def arrow_file(self) -> Any:
        """The raw handle for pyarrow's random-access readers (Parquet)."""
        import pyarrow as pa

        self._raw.seek(0)
        return pa.PythonFile(_Borrowed(self._raw), mode="r")

    def close(self) -> None:
        """Close the handle."""
        self._raw.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            self.close()


class _Borrowed(io.RawIOBase):
    """A handle lent to one reader: closing it does not close the handle."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._handle = raw

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def readinto(self, buffer: Any) -> int:
        return self._handle.readinto(buffer)

    def fileno(self) -> int:
        return self._handle.fileno()


# ---------------------------------------------------------------- decompressing


def decompressed(raw: IO[bytes], codec: str | None, label: str) -> IO[bytes]:
    """``raw`` decompressed by ``codec`` (as is when None), buffered; the decompressed
    bytes are counted against the memory guard (:data:`INFLATION`)."""
    if codec is None:
        return io.BufferedReader(raw) if isinstance(raw, io.RawIOBase) else raw
    if codec == "xz":
        stream: Any = lzma.LZMAFile(raw, "rb")
    else:
        import pyarrow as pa

        try:
            stream = _ArrowRaw(pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), codec))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise CrowdDataError(f"cannot decompress ({codec}): {error}") from None
    return io.BufferedReader(_Guarded(stream, codec, label), buffer_size=1 << 20)


class _ArrowRaw(io.RawIOBase):
    """A pyarrow input stream as a Python raw stream."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        return self._stream.read(size) if size >= 0 else self._stream.read()

    def close(self) -> None:
        self._stream.close()
        super().close()


class _Guarded(io.RawIOBase):
    """A decompressing stream that stops, with a :class:`CrowdMemoryError`, once the
    decompressed bytes would not fit in memory once read into a table."""

    def __init__(self, stream: Any, codec: str, label: str) -> None:
        from crowdlearn.data._memory import available_memory

        self._stream = stream
        self._codec = codec
        self._label = label
        self._count = 0
        available = available_memory()
        self._budget = None if available is None else available // INFLATION

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._stream.read(len(view))
        view[: len(data)] = data
        self._count += len(data)
        if self._budget is not None and self._count > self._budget:
            from crowdlearn.data._memory import format_bytes

            raise CrowdMemoryError(
                f"{self._label}: the {self._codec}-compressed content decompresses to more "
                f"than {format_bytes(self._count)}, which would need more than "
                f"{format_bytes(self._count * INFLATION)} of memory to read but only "
                f"{format_bytes(self._budget * INFLATION)} is available"
            )
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


# ---------------------------------------------------------------- describing

#: The descriptions of the open reading session, by path (a context variable: each
#: thread and task has its own).
_SESSION: contextvars.ContextVar[dict[str, Source] | None] = contextvars.ContextVar(
    "crowdlearn_reading_session", default=None
)
#: Standard input's stream and its description: described once per stream (it can be
#: read only once; a test runner may swap ``sys.stdin`` between commands).
_STDIN: list[tuple[Any, Source]] = []


@contextlib.contextmanager
def reading_session() -> Iterator[None]:
    """Within the block, each input is described once and its handle kept; at the end
    the handles opened in the block are closed. Nested blocks share the outer one's."""
    if _SESSION.get() is not None:
        yield
        return
    sources: dict[str, Source] = {}
    token = _SESSION.set(sources)
    try:
        yield
    finally:
        _SESSION.reset(token)
        for source in sources.values():
            if source.path is not None:
                source.close()


def in_session() -> bool:
    """Whether a :func:`reading_session` is open."""
    return _SESSION.get() is not None


def described(path: str | os.PathLike[str]) -> Source | None:
    """The description of ``path`` made in the open session (standard input: in this
    process), or None."""
    if is_stdin(path):
        if _STDIN and _STDIN[0][0] is _stdin_stream():
            return _STDIN[0][1]
        return None
    sources = _SESSION.get()
    if sources is None:
        return None
    known = sources.get(os.fspath(path))
    if known is not None and not _same_file(known, path):
        # replaced since it was described (a command that writes what it read)
        del sources[os.fspath(path)]
        known.close()
        return None
    return known


def _same_file(source: Source, path: str | os.PathLike[str]) -> bool:
    try:
        now, then = os.stat(path), os.fstat(source._raw.fileno())
    except OSError:
        return False
    return (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns) == (
        then.st_ino,
        then.st_dev,
        then.st_size,
        then.st_mtime_ns,
    )


def describe(source: str | os.PathLike[str] | IO[bytes]) -> Source:
    """Describe a file (or ``-``, standard input, or a binary stream), once.

    Within a :func:`reading_session` the description is kept, so every later
    description of the same path (and every reader of it) reuses it and its one open
    handle, closed when the session ends; outside one, close it (``with
    describe(path) as source:``).

    Parameters
    ----------
    source : path, ``"-"`` or binary stream
        A regular file. A stream (standard input for ``"-"``) is copied, as it comes,
        to a temporary file on disk first.

    Returns
    -------
    Source

    Raises
    ------
    CrowdDataError
        When the file cannot be read, or its compression cannot be decompressed.
    """
    if not isinstance(source, (str, os.PathLike)):
        return _describe_stream(source, "stream")
    if is_stdin(source):
        known = described(STDIN)
        if known is None:
            stream = _stdin_stream()
            known = _describe_stream(stream, STDIN)
            for _, old in _STDIN:
                old.close()
            if not _STDIN:
                atexit.register(_close_stdin)
            _STDIN[:] = [(stream, known)]
        return known
    known = described(source)
    if known is not None:
        return known
    path = Path(source)
    raw = _open_raw(path)
    try:
        found = _describe(raw, os.fspath(source), path)
    except BaseException:
        raw.close()
        raise
    sources = _SESSION.get()
    if sources is not None:
        sources[os.fspath(source)] = found
    return found


def _close_stdin() -> None:
    for _, source in _STDIN:
        source.close()


def _stdin_stream() -> Any:
    return getattr(sys.stdin, "buffer", sys.stdin)


def _describe_stream(stream: IO[bytes], name: str) -> Source:
    import tempfile

    spool = tempfile.TemporaryFile(prefix="crowdlearn-stdin-")
    try:
        shutil.copyfileobj(stream, spool, 1 << 20)
        spool.seek(0)
        return _describe(spool, name, None)
    except BaseException:
        spool.close()
        raise


def _describe(raw: IO[bytes], name: str, path: Path | None) -> Source:
    label = STDIN_NAME if path is None else str(path)
    magic = raw.read(8)
    raw.seek(0)
    codec = None
    if path is not None and path.suffix.lower() in COMPRESSIONS:
        codec = COMPRESSIONS[path.suffix.lower()]
    else:
        codec = next((c for m, c in MAGIC if magic.startswith(m)), None)
    if path is not None:
        suffix = path.suffix.lower()
        if suffix in COMPRESSIONS:
            suffix = Path(path.stem).suffix.lower()
    else:
        suffix = ""
    head = b""
    if suffix not in (".parquet", ".pq", ".npy", ".xlsx"):
        head = _read_head(raw, codec, label, path)
    if path is None:
        suffix = _content_suffix(head)
    found = Source(name, path, suffix, codec, head, _raw=raw)
    return _sniffed(found)


def _read_head(raw: IO[bytes], codec: str | None, label: str, path: Path | None) -> bytes:
    try:
        with decompressed(_Borrowed(raw), codec, label) as stream:
            head = stream.read(HEAD)
    except (OSError, EOFError, lzma.LZMAError) as error:
        if codec is not None and path is not None:
            raise CrowdDataError(
                f"{label}: cannot read the file as {codec}-compressed, as its ending "
                f"{path.suffix} says ({error}); if it is not compressed, rename it"
            ) from None
        raise CrowdDataError(f"{label}: cannot read the input: {error}") from None
    finally:
        raw.seek(0)
    return head


def _content_suffix(head: bytes) -> str:
    """The format standard input's first bytes say, as a file ending."""
    if head.startswith(b"PAR1"):
        return ".parquet"
    if head.startswith(b"\x93NUMPY"):
        return ".npy"
    if head.startswith(b"PK\x03\x04"):
        return ".xlsx"
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    first, _, rest = text.partition("\n")
    if rest.lstrip().startswith("{") and first.strip() in ("null", "[]", "{}", "true", "false"):
        return ".jsonl"  # JSON lines whose first line is not an object
    if text.startswith("["):
        return ".json"
    if text.startswith("{"):
        import json

        first = text.split("\n", 1)[0]
        try:
            line = json.loads(first)
        except ValueError:
            return ".json"  # a document over several lines
        rest = text[len(first) :].strip()
        if rest.startswith("{") or (isinstance(line, dict) and "answer" in line):
            return ".jsonl"
        return ".json"
    return ".csv"


def _sniffed(found: Source) -> Source:
    """The delimiter, header and platform of a described input."""
    import dataclasses

    if found.suffix in (".csv", ".tsv"):
        text = _head_text(found)
        line = next(iter(text.splitlines(keepends=True)), "")
        if found.suffix == ".tsv":
            delimiter = "\t"
        else:
            counts = {d: count_outside_quotes(line, d) for d in DELIMITERS}
            best = max(DELIMITERS, key=lambda d: (counts[d], -DELIMITERS.index(d)))
            delimiter = best if best != "," and counts[best] > counts[","] else ","
        header = _header_of(found, delimiter, csv)
        platform = recognise_header(list(header)) if header else None
        return dataclasses.replace(found, delimiter=delimiter, header=header, platform=platform)
    if found.suffix == ".jsonl":
        first = _first_json_object(_head_text(found))
        if (
            isinstance(first, dict)
            and "answer" in first
            and ("_input_hash" in first or "_task_hash" in first)
        ):
            return dataclasses.replace(found, platform="prodigy")
        return found
    if found.suffix == ".json" and (found.path is None or found.path.name != "answers.json"):
        start = found.head.decode("utf-8-sig", errors="ignore")
        if start.lstrip().startswith("[") and ('"annotations"' in start or '"annotator"' in start):
            return dataclasses.replace(found, platform="labelstudio")
    return found


def _first_json_object(text: str, lines: int = 100) -> Any:
    """The first JSON object among the first ``lines`` lines of JSON-lines text (a stray
    ``null`` or other non-object line before it is skipped here: the reader refuses it,
    naming its line); None when a line is not JSON or there is no object."""
    import json

    for number, line in enumerate(text.splitlines()):
        if number >= lines:
            break
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError:
                return None
            if isinstance(value, dict):
                return value
    return None


def _head_text(found: Source) -> str:
    """The head as text, a character cut in two at its end left out."""
    text = found.head.decode("utf-8-sig", errors="ignore")
    try:
        found.head.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        if error.start < len(found.head) - 4:
            raise CrowdDataError(
                f"{found.label}: not UTF-8 text (byte {error.start}: {error.reason})"
            ) from None
    return text


def _header_of(found: Source, delimiter: str, csv: Any) -> tuple[str, ...]:
    """The header row (read through the handle when it is longer than the head)."""
    text = _head_text(found)
    if len(found.head) >= HEAD and "\n" not in text:
        try:
            with found.open_text() as handle:
                row = next(csv.reader(handle, delimiter=delimiter), None)
        except UnicodeDecodeError as error:
            raise CrowdDataError(
                f"{found.label}: not UTF-8 text (byte {error.start}: {error.reason})"
            ) from None
        return tuple(row or ())
    try:
        row = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), None)
    except csv.Error:
        row = None
    return tuple(row or ())


def count_outside_quotes(line: str, delimiter: str) -> int:
    """How many ``delimiter`` separate the fields of a CSV line (quoted ones not counted)."""
    try:
        row = next(csv.reader([line], delimiter=delimiter))
    except (csv.Error, StopIteration):
        return 0
    return len(row) - 1


def recognise_header(header: list[str]) -> str | None:
    """The platform whose export has this CSV/TSV header, or None (the platforms'
    headers, here so that a description tells them without importing the readers)."""
    names = set(header)
    if {"HITId", "WorkerId"} <= names and any(h.startswith("Answer.") for h in header):
        return "mturk"
    if "ASSIGNMENT:worker_id" in names and any(h.startswith("OUTPUT:") for h in header):
        return "toloka"
    if {"_unit_id", "_worker_id"} <= names:
        return "crowdflower"
    return None
