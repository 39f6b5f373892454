"""The long table of spans (task, worker, start, end, label) with its texts or tokens
(:mod:`crowdlearn.io.spans`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data.errors import CrowdDataError, show
from crowdlearn.data.spans import (
    Spans,
)
from crowdlearn.io._common import about
from crowdlearn.io._span_build import _Answer, _build, _by_text, _cell, _Doc, _text_doc
from crowdlearn.io._span_conll import read_token_file


def read_texts(source: str | os.PathLike[str] | Mapping[Any, str]) -> dict[str, str]:
    """Task texts (task id as text -> text): a CSV/TSV with columns ``task`` and
    ``text``, or a folder of ``TASK.txt`` files (UTF-8; the whole file is the text)."""
    if isinstance(source, Mapping):
        return _by_text(source)
    path = Path(source)
    if path.is_dir():
        files = sorted(path.glob("*.txt"))
        if not files:
            raise CrowdDataError(f"{path}: no TASK.txt files")
        out = {}
        for file in files:
            try:
                out[file.stem] = file.read_text(encoding="utf-8-sig")
            except UnicodeDecodeError as error:
                raise CrowdDataError(f"{file}: not UTF-8 text (byte {error.start})") from None
        return out
    if not path.is_file():
        raise CrowdDataError(f"{path}: no such texts file or folder")
    frame = _table(path)
    columns = {str(c).lower(): c for c in frame.columns}
    if "task" not in columns or "text" not in columns:
        raise CrowdDataError(
            f"{path}: a texts file has columns task and text; it has {show(list(frame.columns))}"
        )
    out = {}
    for number, (task, text) in enumerate(
        zip(frame[columns["task"]], frame[columns["text"]], strict=True), start=2
    ):
        key = str(task)
        if key in out:
            raise CrowdDataError(f"{path}, line {number}: task {task!r} has a second text")
        out[key] = text if isinstance(text, str) else None
    return out


def read_span_table(
    source: str | os.PathLike[str],
    *,
    texts: str | os.PathLike[str] | Mapping[Any, str] | None = None,
    tokens: str | os.PathLike[str] | Mapping[Any, Any] | None = None,
    duplicates: str = "error",
) -> Spans:
    """A long CSV/TSV of spans: columns ``task``, ``worker``, ``start``, ``end``,
    ``label`` (named so, in any case), one row per span.

    With ``texts`` (:func:`read_texts`), start and end are character offsets into the
    task's text (end exclusive); with ``tokens`` (:func:`read_token_file`, or a
    mapping), token indices into the task's tokens (end exclusive). A row whose start,
    end and label are all empty: the worker saw the task and marked nothing. Errors
    name the line (the header is line 1). ``duplicates`` does not apply: a worker
    marks several spans on a task, one row each.
    """
    del duplicates  # rows are spans, several per (task, worker)
    path = Path(source)
    if (texts is None) == (tokens is None):
        raise CrowdDataError(
            f"{path}: a long table of spans needs the texts (texts=, --texts FILE: character "
            "offsets) or the tokens (tokens=, --tokens FILE: token indices) of its tasks"
            + (", not both" if texts is not None else "")
        )
    frame = _table(path)
    with about(path):
        columns = {str(c).lower(): c for c in frame.columns}
        missing = [c for c in ("task", "worker", "start", "end", "label") if c not in columns]
        if missing:
            raise CrowdDataError(
                f"missing column(s) {', '.join(missing)}; a long table of spans has columns "
                f"task, worker, start, end, label; it has {show(list(frame.columns))}"
            )
        if texts is not None:
            by_text = read_texts(texts)
            units = "char"
        else:
            by_text = _by_text(tokens if isinstance(tokens, Mapping) else read_token_file(tokens))
            units = "token"
        grouped: dict[tuple[Any, Any], _Answer] = {}
        docs: dict[Any, _Doc] = {}
        cells = zip(*(frame[columns[c]].tolist() for c in ("task", "worker", "start", "end",
                                                           "label")), strict=True)  # fmt: skip
        for number, (task, worker, start, end, label) in enumerate(cells, start=2):
            where = f"line {number}"
            if pd.isna(task) or pd.isna(worker):
                raise CrowdDataError(f"{where}: the task or worker is missing")
            if task not in docs:
                if str(task) not in by_text:
                    what = "text" if units == "char" else "reference tokens"
                    raise CrowdDataError(f"{where}: task {task!r} has no {what}")
                value = by_text[str(task)]
                if units == "char":
                    docs[task] = _text_doc(task, value, where)
                else:
                    docs[task] = _Doc(list(value), where=where)
            answer = grouped.setdefault(
                (task, worker), _Answer(task, worker, [], where, span_where=[])
            )
            empty = [pd.isna(x) for x in (start, end, label)]
            if all(empty):
                continue
            if any(empty):
                raise CrowdDataError(
                    f"{where}: start, end and label must all be given, or all be empty (the "
                    "worker marked nothing)"
                )
            answer.spans.append((_cell(start, "start", where), _cell(end, "end", where), label))
            answer.span_where.append(where)  # type: ignore[union-attr]
        return _build(list(grouped.values()), docs, units=units, duplicates="error")


def _table(path: Path) -> pd.DataFrame:
    """Every column of a CSV/TSV file, id-like cells typed as every reader types them
    (as :func:`crowdlearn.io.read_table` reads CSV, without its format dispatch)."""
    from crowdlearn.io._common import typed_column
    from crowdlearn.io._files import sniff_delimiter
    from crowdlearn.io._source import reading_session
    from crowdlearn.io.longform import _csv_header, _read_csv_table

    if path.suffix.lower() not in (".csv", ".tsv"):
        raise CrowdDataError(f"{path}: a table of spans or texts is a CSV or TSV file")
    with reading_session(), about(path):
        sep = sniff_delimiter(path)
        table = _read_csv_table(path, sep, _csv_header(path, sep))
        return pd.DataFrame(
            {name: typed_column(table.column(name)) for name in table.column_names}
        )
