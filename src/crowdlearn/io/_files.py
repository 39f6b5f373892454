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
import csv
import glob
import io
import lzma
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from crowdlearn.data.errors import CrowdDataError

#: Compression endings and their codec.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}
#: Delimiters recognised in a header line, in order of preference on a tie.
DELIMITERS = (",", ";", "\t", "|")
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
    """The codec of a compressed file's ending, or None."""
    return COMPRESSIONS.get(Path(path).suffix.lower())


def logical_suffix(path: str | os.PathLike[str]) -> str:
    """The ending that tells the format, under any compression ending (``.csv.gz`` ->
    ``.csv``)."""
    path = Path(path)
    if path.suffix.lower() in COMPRESSIONS:
        return Path(path.stem).suffix.lower()
    return path.suffix.lower()


def open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    """A binary stream of the file's content, decompressed by its ending."""
    codec = compression(path)
    if codec is None:
        return open(path, "rb")
    if codec == "xz":
        return lzma.open(path, "rb")
    import pyarrow as pa

    try:
        stream = pa.input_stream(str(path), compression=codec)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise CrowdDataError(f"cannot decompress ({codec}): {error}") from None
    return io.BufferedReader(_ArrowRaw(stream))


class _ArrowRaw(io.RawIOBase):
    """A pyarrow input stream as a Python raw stream (for io.BufferedReader)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


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
    (outside quotes), the comma on a tie; a :class:`ReadNoteWarning` names any other."""
    if default is not None:
        return default
    if logical_suffix(path) == ".tsv":
        return "\t"
    line = first_line(path)
    counts = {d: _count_outside_quotes(line, d) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: (counts[d], -DELIMITERS.index(d)))
    if best != "," and counts[best] > counts[","]:
        names = {";": "semicolons", "\t": "tabs", "|": "pipes"}
        note(f"{Path(path).name}: fields are separated by {names[best]}")
        return best
    return ","


def _count_outside_quotes(line: str, delimiter: str) -> int:
    try:
        row = next(csv.reader([line], delimiter=delimiter))
    except (csv.Error, StopIteration):
        return 0
    return len(row) - 1


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
