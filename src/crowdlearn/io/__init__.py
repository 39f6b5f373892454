"""Readers and writers: long CSV/Parquet, the peerannot folder, answer matrices.

Every reader returns a :class:`~crowdlearn.CrowdData` and raises
:class:`~crowdlearn.CrowdDataError` naming the file and the offending rows, ids or
keys; every writer writes atomically (temporary file, then rename) and writes
nothing when the data does not fit the format. A write followed by a read gives
back equal data (see each writer for what its format cannot hold).

Use :func:`read` and :func:`write` to pick the format from the path, or the
per-format functions for their options; ``"-"`` reads standard input. :func:`describe`
tells what an input is (format, compression, delimiter, header, platform) once, in a
:class:`Source` that the readers read from. The names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.io._dispatch import FORMATS, default_columns, detect_format, read, write
    from crowdlearn.io._source import Source, describe
    from crowdlearn.io.kinds import KINDS, detect_kind, read_kind, read_table
    from crowdlearn.io.longform import read_csv, read_parquet, write_csv, write_parquet
    from crowdlearn.io.matrix import read_matrix, to_matrix, write_matrix
    from crowdlearn.io.peerannot import read_answers_json, read_peerannot, write_peerannot
    from crowdlearn.io.spans import read_spans

__getattr__, __dir__ = attach(
    __name__,
    {
        "FORMATS": "._dispatch",
        "default_columns": "._dispatch",
        "detect_format": "._dispatch",
        "read": "._dispatch",
        "write": "._dispatch",
        "Source": "._source",
        "describe": "._source",
        "KINDS": ".kinds",
        "detect_kind": ".kinds",
        "read_kind": ".kinds",
        "read_table": ".kinds",
        "read_csv": ".longform",
        "read_parquet": ".longform",
        "write_csv": ".longform",
        "write_parquet": ".longform",
        "read_matrix": ".matrix",
        "to_matrix": ".matrix",
        "write_matrix": ".matrix",
        "read_answers_json": ".peerannot",
        "read_peerannot": ".peerannot",
        "write_peerannot": ".peerannot",
        "read_spans": ".spans",
    },
)

__all__ = [
    "FORMATS",
    "KINDS",
    "Source",
    "default_columns",
    "describe",
    "detect_format",
    "detect_kind",
    "read",
    "read_answers_json",
    "read_csv",
    "read_kind",
    "read_matrix",
    "read_parquet",
    "read_peerannot",
    "read_spans",
    "read_table",
    "to_matrix",
    "write",
    "write_csv",
    "write_matrix",
    "write_parquet",
    "write_peerannot",
]
