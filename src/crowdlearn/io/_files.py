"""Files as users have them: compressed, with any common delimiter, in batches.

* **Compression** by the name's ending: ``.gz``, ``.bz2`` and ``.zst`` through pyarrow's
  codecs, ``.xz`` through the standard library's ``lzma``; the format is the ending
  underneath (``crowd.csv.gz`` is a CSV file). :func:`open_binary` gives a decompressing
  stream, so nothing is written to disk.
* **Delimiters**: a CSV file whose header line holds more semicolons, tabs or pipes than
  commas is read with that delimiter (:func:`sniff_delimiter`); a
  :class:`ReadNoteWarning` says so (the command line prints it as a note).
* **Batches**: a glob (``reports/*.csv``) or a folder of CSV/TSV files is one dataset
  (:func:`batch_files`); readers keep the file of each row so that errors name it.
"""

from __future__ import annotations

import bz2  # noqa: F401  (imported so that a missing codec fails here, not mid-read)
import contextlib
import glob
import io
import lzma
import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from crowdlearn.data.errors import CrowdDataError
from crowdlearn.io._source import COMPRESSIONS, DELIMITERS, count_outside_quotes

#: Endings of the text tables a folder of batches may hold.
TABLE_ENDINGS = (".csv", ".tsv")
_GLOB_CHARS = set("*?[")


class ReadNoteWarning(UserWarning):
    """How a file was read when it was not the plain case (a delimiter other than the
    comma, a platform export recognised, rows left out); the CLI prints it as one
    ``crowdlearn: note:`` line."""


def note(message: str) -> None:
    """Emit a :class:`ReadNoteWarning`."""
    warnings.warn(ReadNoteWarning(message), stacklevel=3)


def compression(path: str | os.PathLike[str]) -> str | None:
    """The codec of a compressed file's ending (standard input's: of its first bytes), or
    None."""
    from crowdlearn.io._source import described, is_stdin

    if is_stdin(path):
        return _stdin().compression
    known = described(path)
    if known is not None:
        return known.compression
    return COMPRESSIONS.get(Path(path).suffix.lower())


def logical_suffix(path: str | os.PathLike[str]) -> str:
    """The ending that tells the format, under any compression ending (``.csv.gz`` ->
    ``.csv``); for standard input (``-``), the ending its content says."""
    from crowdlearn.io._source import is_stdin

    if is_stdin(path):
        return _stdin().suffix
    path = Path(path)
    if path.suffix.lower() in COMPRESSIONS:
        return Path(path.stem).suffix.lower()
    return path.suffix.lower()


def _stdin() -> Any:
    from crowdlearn.io._source import STDIN, describe

    return describe(STDIN)


def _source_of(path: str | os.PathLike[str]) -> Any:
    """The :class:`~crowdlearn.io._source.Source` to read ``path`` through: the one
    already described, else (inside a reading session, or for standard input) a new
    description; None outside a session."""
    from crowdlearn.io._source import describe, described, in_session, is_stdin

    known = described(path)
    if known is not None:
        return known
    if is_stdin(path) or in_session():
        return describe(path)
    return None


def open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    """A binary stream of the file's content, decompressed by its ending (read through
    its description, see :mod:`crowdlearn.io._source`, so a file is opened once)."""
    from crowdlearn.io._source import _open_raw, decompressed

    source = _source_of(path)
    if source is not None:
        return source.open()
    raw = _open_raw(path)
    try:
        return decompressed(raw, compression(path), str(path))
    except BaseException:
        raw.close()
        raise


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """The file as UTF-8 text (a byte-order mark skipped), decompressed by its ending."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole (decompressed) content."""
    with open_binary(path) as handle:
        return handle.read()


def first_line(path: str | os.PathLike[str], limit: int = 1 << 20) -> str:
    """The first line of the (decompressed) file, at most ``limit`` characters."""
    try:
        with open_text(path) as handle:
            return handle.readline(limit)
    except (OSError, EOFError, lzma.LZMAError) as error:
        codec = compression(path)
        if codec is not None:
            raise CrowdDataError(
                f"cannot read the file as {codec}-compressed, as its ending "
                f"{Path(path).suffix} says ({error}); if it is not compressed, rename it"
            ) from None
        raise CrowdDataError(f"cannot read the file: {error}") from None
    except UnicodeDecodeError as error:
        raise CrowdDataError(f"not UTF-8 text (byte {error.start}: {error.reason})") from None


def sniff_delimiter(path: str | os.PathLike[str], default: str | None = None) -> str:
    """The delimiter of a CSV/TSV file: ``default`` when given, a tab for ``.tsv``,
    else whichever of comma, semicolon, tab and pipe the header line holds most of
    (outside quotes), the comma on a tie; a :class:`ReadNoteWarning` names any other.
    A described file's delimiter was told once, by its description."""
    if default is not None:
        return default
    if logical_suffix(path) == ".tsv":
        return "\t"
    source = _source_of(path)
    if source is not None and source.delimiter is not None:
        best = source.delimiter
    else:
        line = first_line(path)
        counts = {d: count_outside_quotes(line, d) for d in DELIMITERS}
        best = max(DELIMITERS, key=lambda d: (counts[d], -DELIMITERS.index(d)))
        if not (best != "," and counts[best] > counts[","]):
            best = ","
    if best != ",":
        names = {";": "semicolons", "\t": "tabs", "|": "pipes"}
        name = source.label if source is not None and source.path is None else Path(path).name
        note(f"{name}: fields are separated by {names[best]}")
    return best


def is_batch_source(source: str | os.PathLike[str]) -> bool:
    """A glob pattern, or a folder holding CSV/TSV files (compressed or not)."""
    text = str(source)
    if _GLOB_CHARS & set(text) and not Path(text).exists():
        return True
    path = Path(text)
    return path.is_dir() and bool(_tables_in(path))


def _tables_in(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.is_file() and logical_suffix(p) in TABLE_ENDINGS
    )


def batch_files(source: str | os.PathLike[str]) -> list[Path]:
    """The files of a glob or a folder of batches, sorted by name; one clear error when
    there are none or when they are not all regular CSV/TSV files."""
    text = str(source)
    if Path(text).is_dir():
        files = _tables_in(Path(text))
    else:
        files = sorted(Path(p) for p in glob.glob(text))
    if not files:
        raise CrowdDataError(f"{text}: no CSV/TSV file matches")
    others = [p.name for p in files if logical_suffix(p) not in TABLE_ENDINGS or not p.is_file()]
    if others:
        raise CrowdDataError(
            f"{text}: a batch must hold CSV/TSV files only; also matched {others[:5]}"
        )
    return files


def row_places(files: Sequence[Path], lengths: Sequence[int]) -> Any:
    """A function from a row of the concatenated batches to ``"FILE row N"``."""
    import numpy as np

    starts = np.cumsum([0, *lengths])

    def place(row: int) -> str:
        index = int(np.searchsorted(starts, row, side="right") - 1)
        return f"{files[index].name} row {row - starts[index]}"

    return place


@contextlib.contextmanager
def compressing(raw: Any, path: str | os.PathLike[str]) -> Iterator[Any]:
    """``raw`` compressed by ``path``'s ending (``.gz``, ``.bz2``, ``.xz``, ``.zst``; as is
    without one); the compressed stream is finished when the block ends."""
    codec = COMPRESSIONS.get(Path(path).suffix.lower())
    if codec is None:
        with _Unclosed(raw) as lent:
            yield lent
        return
    if codec == "gzip":
        import gzip

        stream: Any = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
    elif codec == "bz2":
        import bz2

        stream = bz2.BZ2File(raw, "wb")
    elif codec == "xz":
        import lzma

        stream = lzma.LZMAFile(raw, "wb")
    else:
        import pyarrow as pa

        stream = pa.CompressedOutputStream(pa.PythonFile(_Unclosed(raw), mode="w"), codec)
    with stream, _Unclosed(stream) as lent:
        yield lent


class _Unclosed(io.RawIOBase):
    """A writable stream whose closing (by a text layer) leaves the stream open."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._stream.write(bytes(data))
        return len(data)

    def flush(self) -> None:
        if not self.closed and not getattr(self._stream, "closed", False):
            self._stream.flush()
