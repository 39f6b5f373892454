"""Platform exports that are tables: MTurk, Toloka, CrowdFlower (and batches of files)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data.errors import CrowdDataError
from crowdlearn.io._files import (
    batch_files,
    is_batch_source,
    logical_suffix,
    note,
    open_text,
    sniff_delimiter,
)
from crowdlearn.io.platforms._export import (
    NO_WORKER,
    PlatformExport,
    _answers,
    _choose,
    _items,
    _typed_ids,
    blank,
    statuses,
)

#: MTurk's assignment statuses (trimmed, lower case); an empty cell is a live HIT's.
_MTURK_STATUS = {"submitted": "submitted", "approved": "approved", "rejected": "rejected", "": ""}
#: Toloka's assignment statuses.
_TOLOKA_STATUS = {
    s.lower(): s for s in ("ACTIVE", "SUBMITTED", "ACCEPTED", "REJECTED", "SKIPPED", "EXPIRED", "")
}
#: CrowdFlower's ``_tainted`` values, as the report and a spreadsheet may write them.
_TAINTED = {
    **dict.fromkeys(("true", "t", "1", "yes"), "true"),
    **dict.fromkeys(("false", "f", "0", "no", ""), "false"),
}


def _leave_out_anonymous(
    frame: pd.DataFrame, column: str, keep: pd.Series, left_out: dict[str, int]
) -> pd.Series:
    """``keep`` less the rows whose worker id is empty (counted in ``left_out``):
    anonymous answers on different tasks would otherwise be one worker named ''."""
    anonymous = blank(frame[column]) & keep
    if anonymous.any():
        left_out[NO_WORKER] = int(anonymous.sum())
    return keep & ~anonymous


def excel_text(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The first sheet of an ``.xlsx`` file, every cell as text ("" when empty), through
    openpyxl (the optional extra ``crowdlearn[xlsx]``)."""
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        raise CrowdDataError(
            f"{path}: reading .xlsx files needs openpyxl: pip install 'crowdlearn[xlsx]' "
            "(or save the sheet as CSV)"
        ) from None
    try:
        frame = pd.read_excel(path, dtype=str, keep_default_na=False, engine="openpyxl")
    except (ValueError, OSError, KeyError) as error:
        raise CrowdDataError(f"{path}: cannot read the workbook: {error}") from None
    return frame.fillna("")


def _read_tables(source: str | os.PathLike[str]) -> tuple[pd.DataFrame, Any]:
    """Every cell as text (empty cells as ""), batches concatenated, and where row i is."""
    from crowdlearn.io._files import row_places

    files = batch_files(source) if is_batch_source(source) else [Path(source)]
    frames = []
    for path in files:
        if logical_suffix(path) == ".xlsx":
            frames.append(excel_text(path))
            continue
        sep = sniff_delimiter(path)
        try:
            with open_text(path) as handle:
                frame = pd.read_csv(
                    handle,
                    sep=sep,
                    dtype=str,
                    keep_default_na=False,
                    na_values=[],
                )
        except (ValueError, UnicodeDecodeError) as error:
            raise CrowdDataError(f"{path}: cannot parse the file as CSV: {error}") from None
        frames.append(frame)
    place = row_places(files, [len(f) for f in frames])
    if len(files) > 1:
        note(
            f"read {len(files)} batch files as one dataset ({files[0].name} ... {files[-1].name})"
        )
        shared = set.intersection(*(set(f.columns) for f in frames))
        partial = sorted(set().union(*(set(f.columns) for f in frames)) - shared)
        if partial:
            note(f"columns in some batches only (empty elsewhere): {', '.join(partial[:8])}")
    return pd.concat(frames, ignore_index=True).fillna(""), place


def _mturk(
    frame: pd.DataFrame, answer: str | None, task: str | None, keep_rejected: bool
) -> PlatformExport:
    answers_columns = [c for c in frame.columns if c.startswith("Answer.")]
    label_column = _choose(answers_columns, answer, "Answer.*", "--answer")
    inputs = [c for c in frame.columns if c.startswith("Input.")]
    task_column = (
        "HITId" if task is None else _choose([*inputs, "HITId"], task, "task", "--task-field")
    )
    left_out: dict[str, int] = {}
    keep = pd.Series(True, index=frame.index)
    if "AssignmentStatus" in frame:
        rejected = statuses(frame, "AssignmentStatus", _MTURK_STATUS, keep) == "rejected"
        if rejected.any() and not keep_rejected:
            left_out["rejected assignments (--keep-rejected keeps them)"] = int(rejected.sum())
            keep &= ~rejected
    keep = _leave_out_anonymous(frame, "WorkerId", keep, left_out)
    kept = frame[keep]
    answers, kind, empty = _answers(kept, kept[task_column], kept["WorkerId"], kept[label_column])
    if empty:
        left_out["empty answers"] = empty
    items = _items(kept, task_column, inputs)
    roles = {"task": task_column, "worker": "WorkerId", "label": label_column}
    return PlatformExport("mturk", _typed_ids(answers), kind, roles, left_out, items)


def _toloka(
    frame: pd.DataFrame, answer: str | None, task: str | None, keep_rejected: bool
) -> PlatformExport:
    outputs = [c for c in frame.columns if c.startswith("OUTPUT:")]
    label_column = _choose(outputs, answer, "OUTPUT:*", "--answer")
    inputs = [c for c in frame.columns if c.startswith("INPUT:")]
    if task is not None:
        task_values = frame[_choose([*inputs, "ASSIGNMENT:task_id"], task, "task", "--task-field")]
        task_column = task
    elif "ASSIGNMENT:task_id" in frame:
        task_values, task_column = frame["ASSIGNMENT:task_id"], "ASSIGNMENT:task_id"
    elif len(inputs) == 1:
        task_values, task_column = frame[inputs[0]], inputs[0]
    elif inputs:
        task_values = frame[inputs].agg(" | ".join, axis=1)
        task_column = " + ".join(inputs)
    else:
        raise CrowdDataError("the Toloka export has neither ASSIGNMENT:task_id nor INPUT: columns")
    left_out: dict[str, int] = {}
    keep = pd.Series(True, index=frame.index)
    if "ASSIGNMENT:status" in frame:
        status = statuses(frame, "ASSIGNMENT:status", _TOLOKA_STATUS, keep)
        if not keep_rejected and (status == "REJECTED").any():
            left_out["rejected assignments (--keep-rejected keeps them)"] = int(
                (status == "REJECTED").sum()
            )
            keep &= status != "REJECTED"
        unfinished = status.isin(["SKIPPED", "EXPIRED"])
        if unfinished.any():
            left_out["skipped or expired assignments"] = int((unfinished & keep).sum())
            keep &= ~unfinished
    keep = _leave_out_anonymous(frame, "ASSIGNMENT:worker_id", keep, left_out)
    kept = frame[keep]
    answers, kind, empty = _answers(
        kept, task_values[keep], kept["ASSIGNMENT:worker_id"], kept[label_column]
    )
    golden = "GOLDEN:" + label_column.split(":", 1)[1]
    if golden in kept:
        gold = kept.loc[answers.index, golden].replace("", None)
        answers["gold"] = gold
        known = gold.notna()
        if known.any():
            note(
                f"{golden}: known answers of {answers.loc[known, 'task'].nunique()} task(s) "
                "(used as gold by the strategies that take it)"
            )
    if empty:
        left_out["empty answers"] = empty
    roles = {"task": task_column, "worker": "ASSIGNMENT:worker_id", "label": label_column}
    items = _items(kept.assign(_task=task_values[keep]), "_task", inputs)
    return PlatformExport("toloka", _typed_ids(answers), kind, roles, left_out, items)


#: CrowdFlower report columns that are the platform's, not the job's.
_CROWDFLOWER_OWN = {"_golden", "_unit_state", "_trusted_judgments", "_last_judgment_at"}


def _crowdflower(
    frame: pd.DataFrame, answer: str | None, task: str | None, keep_rejected: bool
) -> PlatformExport:
    job = [c for c in frame.columns if not c.startswith("_") and not c.endswith("_gold")]
    # the job's inputs are the same in every judgment of a unit; its answers vary
    varying = frame.groupby("_unit_id")[job].nunique().max() if job else pd.Series()
    candidates = [c for c in job if varying.get(c, 0) > 1]
    label_column = _choose(
        candidates if answer is None else job,
        answer,
        "answer (fields that vary within a unit)",
        "--answer",
    )
    left_out: dict[str, int] = {}
    keep = pd.Series(True, index=frame.index)
    if "_tainted" in frame:
        tainted = statuses(frame, "_tainted", _TAINTED, keep) == "true"
        if tainted.any() and not keep_rejected:
            left_out["tainted judgments (--keep-rejected keeps them)"] = int(tainted.sum())
            keep &= ~tainted
    keep = _leave_out_anonymous(frame, "_worker_id", keep, left_out)
    kept = frame[keep]
    answers, kind, empty = _answers(kept, kept["_unit_id"], kept["_worker_id"], kept[label_column])
    gold_column = f"{label_column}_gold"
    if gold_column in kept:
        gold = kept.loc[answers.index, gold_column].replace("", None)
        if kind == "class":
            answers["gold"] = gold
    if empty:
        left_out["empty answers"] = empty
    inputs = [c for c in job if c != label_column and c not in candidates]
    roles = {"task": "_unit_id", "worker": "_worker_id", "label": label_column}
    items = _items(kept, "_unit_id", inputs)
    return PlatformExport("crowdflower", _typed_ids(answers), kind, roles, left_out, items)


def batch_frame(source: str | os.PathLike[str]) -> tuple[pd.DataFrame, Any]:
    """A folder or glob of plain long tables as one frame (cells typed as one file's
    would be), and the function from a row to ``"FILE row N"``."""
    import pyarrow as pa

    from crowdlearn.io._common import typed_column

    frame, place = _read_tables(source)
    frame = pd.DataFrame(
        {
            name: typed_column(
                pa.chunked_array([pa.array(frame[name].replace("", None), pa.string())])
            )
            for name in frame.columns
        }
    )
    return frame, place


def _numbers(text: str) -> list[str]:
    return [n for n in text.replace(".", "").split(",") if n.strip()]


@contextlib.contextmanager
def with_batch_rows(source: str | os.PathLike[str], place: Any) -> Iterator[None]:
    """Errors raised inside name the batch file and its row instead of the row of the
    concatenated table."""
    try:
        yield
    except CrowdDataError as error:
        text = re.sub(
            r"rows? \[([0-9, .]+)\]",
            lambda m: (
                "rows "
                + "; ".join(
                    place(int(n)) for n in m.group(1).replace(".", "").split(",") if n.strip()
                )
            ),
            str(error),
        )
        raise CrowdDataError(f"{source}: {text}") from None
