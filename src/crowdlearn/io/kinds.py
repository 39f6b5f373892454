"""Reading every answer kind from a long table: classes, label sets, ratings, comparisons,
texts.

:func:`read_kind` reads a CSV/TSV or Parquet file (or takes a DataFrame), tells the kind
from ``kind=`` or from the columns (:func:`detect_kind`: a ``left``/``right`` pair means
comparisons), resolves the columns the way :func:`crowdlearn.io.read` does (the roles
``task``, ``worker``, ``label``, ``truth``, plus ``left`` and ``right``; named by
``columns=`` / ``--columns``, else the standard names, else common spellings) and builds
the kind's data type: :class:`~crowdlearn.data.CrowdData`,
:class:`~crowdlearn.data.LabelSets`, :class:`~crowdlearn.data.Ratings`,
:class:`~crowdlearn.data.Comparisons` or :class:`~crowdlearn.data.Texts`. Id cells are
typed by the rule every reader uses (integers, booleans, floats, else text).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data import CrowdDataError
from crowdlearn.data._headers import check_mapping, resolve_columns
from crowdlearn.io._common import about, as_path, existing_path, typed_column
from crowdlearn.io._files import is_batch_source, logical_suffix, sniff_delimiter
from crowdlearn.io.platforms import batch_frame, platform_data, with_batch_rows

#: The kinds of answer, by their ``--kind`` name.
KINDS = ("class", "multilabel", "rating", "comparison", "text", "box", "mask", "spans")


def detect_kind(header: Sequence[str], columns: Mapping[str, Any] | None = None) -> str:
    """The kind a table's columns say: ``comparison`` when it has (or names) both a
    ``left`` and a ``right`` column, else ``class`` (label sets and ratings look like
    classes and are chosen with ``kind=``).

    >>> detect_kind(["worker", "left", "right", "label"])
    'comparison'
    >>> detect_kind(["task", "worker", "label"])
    'class'
    """
    mapping = dict(columns or {})
    lowered = {name.lower() for name in header}
    has = {role: role in mapping or role in lowered for role in ("left", "right")}
    return "comparison" if has["left"] and has["right"] else "class"


def source_kind(source: str | os.PathLike[str], columns: Mapping[str, Any] | None = None) -> str:
    """The kind of answer an input holds, told from its description
    (:func:`crowdlearn.io._source.describe`): a platform export's own kind (label sets
    when its answers hold several choices), ``comparison`` for a table with a
    ``left``/``right`` pair (:func:`detect_kind`), else ``class``.

    An input whose columns cannot be read is ``class``: its reader then says what is
    wrong with it.
    """
    from crowdlearn.io._source import reading_session
    from crowdlearn.io.platforms import _cached_export, recognise
    from crowdlearn.io.spans import looks_like_spans

    if looks_like_spans(source):
        return "spans"
    with reading_session():
        if recognise(source) is not None:
            return _cached_export(source).kind
        if is_batch_source(source):
            return "class"
        try:
            header = _header(Path(source))
        except CrowdDataError:
            return "class"
        return detect_kind(header, columns)


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Every column of a long CSV/TSV or Parquet file, id-like cells typed.

    CSV cells are read as text and each column is typed by the readers' rule (all
    integers: int64, all ``True``/``False``: bool, all floats: float64, else text);
    empty cells are missing.
    """
    from crowdlearn.io._dispatch import detect_format
    from crowdlearn.io._source import reading_session
    from crowdlearn.io.longform import _csv_header, _read_csv_table

    path = existing_path(path)
    fmt = detect_format(path)
    with reading_session(), about(path):
        if fmt == "csv":
            sep = sniff_delimiter(path)
            header = _csv_header(path, sep)
            table = _read_csv_table(path, sep, header)
            frame = pd.DataFrame(
                {name: typed_column(table.column(name)) for name in table.column_names}
            )
        elif fmt == "parquet":
            frame = pd.read_parquet(path)
        else:
            raise CrowdDataError(
                f"{path}: label sets, ratings and comparisons are read from long CSV/TSV "
                f"or Parquet tables, not from the {fmt} format"
            )
    return frame


def read_kind(
    source: str | os.PathLike[str] | pd.DataFrame,
    kind: str | None = None,
    *,
    columns: Mapping[str, str | None] | None = None,
    truth_column: str | None = None,
    sep: str | None = None,
    order: Sequence[Any] | None = None,
    tie: Any = None,
    duplicates: str = "error",
    texts: Any = None,
    tokens: Any = None,
    scheme: str | None = None,
) -> Any:
    """Read one answer kind from a long table.

    Parameters
    ----------
    source : path or DataFrame
        A CSV/TSV or Parquet file (or folder), or a DataFrame.
    kind : {"class", "multilabel", "rating", "comparison", "text", "box", "mask"}, optional
        Default: told by :func:`detect_kind` (comparisons from a ``left``/``right`` pair,
        else classes).
    columns : mapping, optional
        Role -> column name; roles ``task``, ``worker``, ``label``, ``truth``, and
        ``left``, ``right`` for comparisons.
    sep : str, optional
        Label sets: the separator inside a label cell (JSON lists and CrowdFlower's
        bracketed values are read without it).
    order : sequence, optional
        Ratings: the ordered categories, lowest first (the ratings are then ordinal).
    tie : optional
        Comparisons: the label value that declares a tie.
    duplicates : {"error", "keep", "first", "last"}
        Repeated (task, worker) pairs (classes, label sets, ratings, spans).
    texts, tokens, scheme : optional
        Spans (``kind="spans"``, or an input that looks like spans): passed to
        :func:`crowdlearn.io.spans.read_spans`.

    Returns
    -------
    CrowdData, LabelSets, Ratings, Comparisons or Texts (free text: the label column
    holds each answer's text; truth, when named, the true text), or Masks (``kind="mask"``:
    ``source`` is a folder laid out as ``FOLDER/TASK/WORKER.npy|png``, see
    :mod:`crowdlearn.data.masks`; only the file names are read here), or Spans
    (``kind="spans"``: the layouts of :mod:`crowdlearn.io.spans`)
    """
    from crowdlearn.io._source import reading_session

    if kind == "spans" or (
        kind is None and not isinstance(source, pd.DataFrame) and _spans_like(source)
    ):
        from crowdlearn.io.spans import read_spans

        if isinstance(source, pd.DataFrame):
            raise CrowdDataError(
                "spans are read from files (Spans.from_frame builds them from a table)"
            )
        return read_spans(source, texts=texts, tokens=tokens, scheme=scheme, duplicates=duplicates)
    with reading_session():  # the input is described, and opened, once
        return _read_kind(source, kind, columns, truth_column, sep, order, tie, duplicates)


def _spans_like(source: Any) -> bool:
    from crowdlearn.io.spans import looks_like_spans

    return looks_like_spans(source)


def _read_kind(
    source: str | os.PathLike[str] | pd.DataFrame,
    kind: str | None,
    columns: Mapping[str, str | None] | None,
    truth_column: str | None,
    sep: str | None,
    order: Sequence[Any] | None,
    tie: Any,
    duplicates: str,
) -> Any:
    from crowdlearn.io._dispatch import _with_default_columns

    defaults = _with_default_columns({})  # --columns / --truth-column of the command
    columns = columns if columns is not None else defaults.get("columns")
    truth_column = truth_column if truth_column is not None else defaults.get("truth_column")
    mapping = check_mapping({k: v for k, v in (columns or {}).items()})
    if kind is not None and kind not in KINDS:
        raise CrowdDataError(f"unknown kind {kind!r}; the kinds are {', '.join(KINDS)}")
    if not isinstance(source, pd.DataFrame):
        as_path(source)  # a TypeError naming what a path is, before anything else
    if kind == "box" and not isinstance(source, pd.DataFrame) and str(source).endswith(".json"):
        return _coco_boxes(existing_path(source))
    if kind == "mask":
        from crowdlearn.data import Masks

        if isinstance(source, pd.DataFrame):
            raise CrowdDataError(
                "masks are read from a folder (FOLDER/TASK/WORKER.npy), not a table"
            )
        return Masks.from_folder(source, duplicates=duplicates)
    if isinstance(source, pd.DataFrame):
        frame = source
    elif (
        kind != "comparison"
        and (data := platform_data(source, kind, order=order, duplicates=duplicates)) is not None
    ):
        return data
    elif is_batch_source(source) or logical_suffix(source) == ".xlsx":
        frame, place = batch_frame(source)
        with with_batch_rows(source, place):
            return read_kind(
                frame,
                kind,
                columns=columns,
                truth_column=truth_column,
                sep=sep,
                order=order,
                tie=tie,
                duplicates=duplicates,
            )
    else:
        path = existing_path(source)
        if kind in (None, "class"):
            header = _header(path)
            if kind is None:
                kind = detect_kind(header, mapping)
            if kind == "class":
                from crowdlearn.io._dispatch import read

                options = {"columns": columns, "truth_column": truth_column}
                return read(path, duplicates=duplicates, **{k: v for k, v in options.items() if v})
        frame = read_table(path)
    if kind is None:
        kind = detect_kind([str(c) for c in frame.columns], mapping)
    if kind == "class":
        from crowdlearn.data import CrowdData

        return CrowdData.from_frame(frame, columns=columns, duplicates=duplicates)
    context = contextlib.nullcontext() if isinstance(source, pd.DataFrame) else about(source)
    with context:
        if kind == "comparison":
            return _comparisons(frame, mapping, truth_column, tie)
        if kind == "box":
            return _boxes(frame, mapping, truth_column)
        return _per_task(frame, kind, mapping, truth_column, sep, order, duplicates)


def _header(path: Path) -> list[str]:
    from crowdlearn.io._dispatch import detect_format
    from crowdlearn.io._source import reading_session
    from crowdlearn.io.longform import _csv_header

    fmt = detect_format(path)
    if fmt == "csv":
        with reading_session():
            return _csv_header(path, sniff_delimiter(path))
    if fmt == "parquet":
        import pyarrow.parquet as pq

        from crowdlearn.io.longform import parquet_input

        files = [path] if not path.is_dir() else sorted(path.glob("*.parquet"))
        return list(pq.read_schema(parquet_input(files[0])).names) if files else []
    return []


def _require(frame: pd.DataFrame, names: Mapping[str, str | None], kind: str) -> None:
    missing = [f"{role} ({name})" for role, name in names.items() if name and name not in frame]
    if missing:
        raise CrowdDataError(
            f"reading {kind} answers: missing column(s) {', '.join(missing)}; the columns are "
            f"{', '.join(map(str, frame.columns[:20]))}; name them with --columns "
            f"ROLE=COLUMN (Python: columns={{...}})"
        )


def _per_task(
    frame: pd.DataFrame,
    kind: str,
    mapping: Mapping[str, str | None],
    truth_column: str | None,
    sep: str | None,
    order: Sequence[Any] | None,
    duplicates: str,
) -> Any:
    from crowdlearn.data import LabelSets, Ratings, Texts

    found = resolve_columns(
        [str(c) for c in frame.columns],
        {k: v for k, v in mapping.items() if k in ("task", "worker", "label", "truth")},
        truth="truth",
        truth_column=truth_column,
    )
    roles = {"task": found.task, "worker": found.worker, "label": found.label}
    if found.worker is None:
        raise CrowdDataError(f"{kind} answers need a worker column")
    _require(frame, {**roles, "truth": found.truth}, kind)
    truth = None
    if found.truth is not None:
        per_task = frame[[found.task, found.truth]].dropna()
        truth = dict(
            zip(per_task[found.task].tolist(), per_task[found.truth].tolist(), strict=True)
        )
    if kind == "multilabel":
        return LabelSets.from_frame(
            frame,
            found.task,
            found.worker,  # type: ignore[arg-type]
            found.label,
            sep=sep,
            truth=truth,
            duplicates=duplicates,
        )
    if kind == "text":
        return Texts.from_frame(
            frame,
            found.task,
            found.worker,  # type: ignore[arg-type]
            found.label,
            truth=truth,
            duplicates=duplicates,
        )
    return Ratings.from_frame(
        frame,
        found.task,
        found.worker,  # type: ignore[arg-type]
        found.label,
        order=order,
        truth=truth,
        duplicates=duplicates,
    )


def _coco_boxes(path: Path) -> Any:
    """Bounding boxes from a COCO JSON document (``Boxes.from_coco``)."""
    import json

    from crowdlearn.data import Boxes

    with about(path):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise CrowdDataError(f"not a JSON document ({error})") from None
        return Boxes.from_coco(document)


def _boxes(
    frame: pd.DataFrame, mapping: Mapping[str, str | None], truth_column: str | None
) -> Any:
    """Bounding boxes: one row per box (task, worker, label = class, x_min, y_min, x_max,
    y_max; a row with no label and no coordinates: the worker saw the task and drew
    nothing). Without a ``label`` column, a column named ``class`` holds the class."""
    from crowdlearn.data import Boxes
    from crowdlearn.data.boxes import COORDINATES

    if truth_column is not None or mapping.get("truth"):
        raise CrowdDataError("bounding boxes take no truth column (their truth is a box table)")
    header = [str(c) for c in frame.columns]
    # the class of a box: a ``label`` column, else one named ``class`` (COCO's and the
    # detection tools' word; boxes.csv, the output, names it so too)
    spelled_class = [name for name in header if name.lower() == "class"]
    label = spelled_class[0] if "label" not in header and len(spelled_class) == 1 else "label"
    found = resolve_columns(
        header,
        {k: v for k, v in mapping.items() if k in ("task", "worker", "label")},
        label=label,
    )
    if found.worker is None:
        raise CrowdDataError("box answers need a worker column")
    names = {"task": found.task, "worker": found.worker, "label": found.label}
    _require(frame, {**names, **{c: c for c in COORDINATES}}, "box")
    return Boxes.from_frame(frame, found.task, found.worker, found.label)


def _comparisons(
    frame: pd.DataFrame,
    mapping: Mapping[str, str | None],
    truth_column: str | None,
    tie: Any,
) -> Any:
    from crowdlearn.data import Comparisons

    header = {str(c).lower(): str(c) for c in frame.columns}
    names = {
        role: mapping.get(role) or header.get(role, role)
        for role in ("worker", "left", "right", "label")
    }
    if "worker" not in mapping and names["worker"] not in frame:
        for spelling in ("annotator", "user", "worker_id", "annotator_id", "performer"):
            if spelling in header:
                names["worker"] = header[spelling]
                break
    _require(frame, names, "comparison")
    if truth_column is not None or mapping.get("truth"):
        raise CrowdDataError(
            "comparisons take no truth column (their truth is a score per item, not per row)"
        )
    return Comparisons.from_frame(
        frame, names["worker"], names["left"], names["right"], names["label"], tie=tie
    )
