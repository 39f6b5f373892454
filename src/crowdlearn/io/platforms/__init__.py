"""Crowdsourcing platforms' own export files, recognised by their headers.

Each reader turns a platform's export into one long table of answers -- columns
``task``, ``worker``, ``label`` (a class, or a list of classes for label sets) and,
where the platform has them, ``gold`` (a known answer of the task) -- and says in
notes (:class:`~crowdlearn.io._files.ReadNoteWarning`) which columns played which role
and which rows were left out and why:

============== =========================================================== ==============
platform       recognised by                                               format
============== =========================================================== ==============
mturk          ``HITId``, ``WorkerId``, ``AssignmentStatus``, ``Answer.*``   CSV
toloka         ``ASSIGNMENT:worker_id`` and ``OUTPUT:*`` columns             TSV / CSV
crowdflower    ``_unit_id`` and ``_worker_id`` (Figure Eight, Appen)         CSV, batches
labelstudio    a JSON list of tasks with ``annotations`` (JSON export),      JSON
               or of rows with ``annotator`` (JSON-MIN export)
prodigy        JSON lines with ``answer`` and ``_input_hash``                JSONL
============== =========================================================== ==============

The answer column is chosen for the user when there is one candidate (MTurk's single
``Answer.*`` column, Toloka's single ``OUTPUT:*`` column, for CrowdFlower and Label
Studio JSON-MIN the job's one field that varies within a task); with several, the error
names them and ``answer=`` (``--answer``) chooses. Rejected assignments (MTurk, Toloka),
tainted judgments (CrowdFlower), cancelled annotations (Label Studio) and ignored or
rejected examples (Prodigy) are left out by default, with a note (``keep_rejected=True``
keeps the rejected assignments and tainted judgments). Status values are compared
trimmed and in any case, and one the platform does not have is refused naming its row.
Answers without a worker id are left out, with a note saying how many.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data.errors import CrowdDataError
from crowdlearn.io._common import about
from crowdlearn.io._files import (
    batch_files,
    is_batch_source,
    logical_suffix,
    note,
)
from crowdlearn.io._source import recognise_header
from crowdlearn.io.platforms._export import _NAMES, PlatformExport, _RowError
from crowdlearn.io.platforms._json import _label_studio, _prodigy
from crowdlearn.io.platforms._tables import (
    _crowdflower,
    _mturk,
    _read_tables,
    _toloka,
    batch_frame,
    excel_text,
    with_batch_rows,
)

#: The platforms :func:`recognise` knows.
PLATFORMS = ("mturk", "toloka", "crowdflower", "labelstudio", "prodigy")

_OPTIONS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "crowdlearn_platform_options", default=None
)


@contextlib.contextmanager
def platform_options(
    answer: str | None = None, task: str | None = None, keep_rejected: bool = False
) -> Iterator[None]:
    """Within the block, platform exports are read with these options (the CLI's
    ``--answer``, ``--task-field`` and ``--keep-rejected``)."""
    token = _OPTIONS.set({"answer": answer, "task": task, "keep_rejected": keep_rejected})
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def _option(name: str, given: Any) -> Any:
    if given is not None:
        return given
    return (_OPTIONS.get() or {}).get(name)


# ----------------------------------------------------------------------- recognising


def recognise(source: str | os.PathLike[str]) -> str | None:
    """The platform of an export file, folder of batches or glob, or None (a plain
    table, a peerannot folder...); told by the input's description
    (:func:`crowdlearn.io._source.describe`), made once per reading session."""
    from crowdlearn.io._source import is_stdin

    text = str(source)
    if is_batch_source(text):
        files = batch_files(text)
        return recognise(files[0])
    path = Path(text)
    if not is_stdin(text) and not path.is_file():
        return None
    with about(path):
        return _recognise_file(path)


def _recognise_file(path: Path) -> str | None:
    from crowdlearn.io._source import describe, is_stdin, reading_session

    suffix = logical_suffix(path)
    if suffix == ".xlsx" and is_stdin(path):
        raise CrowdDataError(
            "an Excel workbook is read from a file, not from standard input; save it to a "
            "file (.xlsx) first"
        )
    if suffix == ".xlsx":
        return recognise_header([str(c) for c in excel_text(path).columns])
    if suffix not in (".csv", ".tsv", ".jsonl", ".json"):
        return None
    with reading_session():
        return describe(path).platform


# -------------------------------------------------------------------------- reading


def read_export(
    source: str | os.PathLike[str],
    *,
    answer: str | None = None,
    task: str | None = None,
    keep_rejected: bool | None = None,
    platform: str | None = None,
) -> PlatformExport:
    """Read a platform's export (see the module docstring for what each one holds).

    Parameters
    ----------
    source : path
        The export file, or a folder / glob of CrowdFlower batch files.
    answer : str, optional
        The column (field) holding the answer, when the export has several.
    task : str, optional
        The column identifying the task (MTurk: an ``Input.*`` column instead of
        ``HITId``; Toloka: instead of ``ASSIGNMENT:task_id`` / the ``INPUT:*`` values).
    keep_rejected : bool, default False
        Keep rejected assignments (MTurk, Toloka) and tainted judgments (CrowdFlower).
    platform : str, optional
        Default: :func:`recognise`.

    Returns
    -------
    PlatformExport
    """
    answer = _option("answer", answer)
    task = _option("task", task)
    keep_rejected = bool(_option("keep_rejected", keep_rejected))
    platform = platform or recognise(source)
    if platform is None:
        raise CrowdDataError(
            f"{source}: not an export crowdlearn recognises ({', '.join(PLATFORMS)})"
        )
    if platform == "labelstudio":
        export = _label_studio(Path(source), answer)
    elif platform == "prodigy":
        export = _prodigy(Path(source))
    else:
        frame, place = _read_tables(source)
        reader = {"mturk": _mturk, "toloka": _toloka, "crowdflower": _crowdflower}[platform]
        try:
            export = reader(frame, answer, task, keep_rejected)
        except _RowError as error:
            raise CrowdDataError(f"{place(error.row)}: {error.message}") from None
    if export.answers.empty:
        raise CrowdDataError(f"{source}: no answer is left to read ({export.describe()})")
    return export


# ------------------------------------------------------------- into the data types

#: The exports read in this process, by source and options (a command reads its input
#: for the answers, then asks for the gold answers of the same export).
_READ: dict[tuple[Any, ...], PlatformExport] = {}


def _cached_export(source: str | os.PathLike[str]) -> PlatformExport:
    options = _OPTIONS.get() or {}
    try:
        stamp = os.stat(source).st_mtime_ns
    except OSError:
        stamp = None
    key = (str(source), stamp, tuple(sorted(options.items())))
    if key not in _READ:
        _READ.clear()
        _READ[key] = read_export(source)
    return _READ[key]


def export_gold(source: str | os.PathLike[str]) -> pd.Series | None:
    """The known answers (task id -> label) of a platform export, or of a long CSV/TSV
    file's ``known_answer`` column (what ``crowdlearn convert`` writes for an export's known
    answers: :func:`crowdlearn.io._gold.read_gold_column`), or None."""
    if recognise(source) is None:
        if is_batch_source(source) or logical_suffix(source) not in (".csv", ".tsv"):
            return None
        from crowdlearn.io._gold import read_gold_column

        return read_gold_column(source)
    return _cached_export(source).gold


def platform_data(
    source: str | os.PathLike[str],
    kind: str | None = None,
    *,
    order: Any = None,
    duplicates: str = "error",
) -> Any:
    """``source`` read as ``kind`` when it is a platform export, else None (the caller
    reads it as a plain file, or a batch of them with :func:`batch_frame`).

    A platform export is read by :func:`read_export`, and a note says how.
    """
    from crowdlearn.io._source import is_stdin

    text = str(source)
    batch = is_batch_source(text)
    if not batch and not is_stdin(text) and not Path(text).is_file():
        return None
    platform = recognise(text)
    if platform is None:
        return None
    export = _cached_export(text)
    name = "<stdin>" if is_stdin(text) else Path(text).name
    note(f"{name}: {export.describe()}")
    return export_as(export, kind or export.kind, order=order, duplicates=duplicates)


def export_as(
    export: PlatformExport, kind: str, *, order: Any = None, duplicates: str = "error"
) -> Any:
    """The export's answers as ``kind``'s data type."""
    from crowdlearn.data import CrowdData, LabelSets, Ratings

    answers = export.answers
    if kind == "class":
        if export.kind == "multilabel":
            raise CrowdDataError(
                "the answers hold several choices each (label sets): read them as label sets "
                "(--kind multilabel; Python: read_kind(..., 'multilabel'))"
            )
        return CrowdData.from_frame(answers[["task", "worker", "label"]], duplicates=duplicates)
    if kind == "multilabel":
        labels = [v if isinstance(v, list) else [v] for v in answers["label"].tolist()]
        return LabelSets.from_arrays(
            answers["task"], answers["worker"], labels, duplicates=duplicates
        )
    if kind == "rating":
        return Ratings.from_arrays(
            answers["task"],
            answers["worker"],
            answers["label"],
            order=order,
            duplicates=duplicates,
        )
    if kind == "text":
        return texts_from_export(export, duplicates=duplicates)
    raise CrowdDataError(f"a {_NAMES[export.platform]} holds no {kind} answers")


def texts_from_export(export: PlatformExport, *, duplicates: str = "error") -> Any:
    """The export's answers as :class:`~crowdlearn.data.Texts` (each answer's text as
    the platform gave it; empty answers were already left out by the reader)."""
    from crowdlearn.data import Texts

    if export.kind == "multilabel":
        raise CrowdDataError("the answers hold several choices each (label sets), not texts")
    answers = export.answers
    texts = [str(v) for v in answers["label"].tolist()]
    return Texts.from_arrays(answers["task"], answers["worker"], texts, duplicates=duplicates)


__all__ = [
    "PLATFORMS",
    "PlatformExport",
    "batch_frame",
    "export_as",
    "export_gold",
    "platform_data",
    "platform_options",
    "read_export",
    "recognise",
    "recognise_header",
    "texts_from_export",
    "with_batch_rows",
]
