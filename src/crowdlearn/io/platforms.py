"""Crowdsourcing platforms' own export files, recognised by their headers.

Each reader turns a platform's export into one long table of answers -- columns
``task``, ``worker``, ``label`` (a class, or a list of classes for label sets) and,
where the platform has them, ``gold`` (a known answer of the task) -- and says in
notes (:class:`~crowdlearn.io._files.ReadNoteWarning`) which columns played which role
and which rows were left out and why:

============== ========================================================= ==============
platform       recognised by                                             format
============== ========================================================= ==============
mturk          ``HITId``, ``WorkerId``, ``AssignmentStatus``, ``Answer.*`` CSV
toloka         ``ASSIGNMENT:worker_id`` and ``OUTPUT:*`` columns           TSV / CSV
crowdflower    ``_unit_id`` and ``_worker_id`` (Figure Eight, Appen)       CSV, batches
labelstudio    a JSON list of tasks with ``annotations`` (JSON export),    JSON
               or of rows with ``annotator`` (JSON-MIN export)
prodigy        JSON lines with ``answer`` and ``_input_hash``              JSONL
============== ========================================================= ==============

The answer column is chosen for the user when there is one candidate (MTurk's single
``Answer.*`` column, Toloka's single ``OUTPUT:*`` column, for CrowdFlower and Label
Studio JSON-MIN the job's one field that varies within a task); with several, the error
names them and ``answer=`` (``--answer``) chooses. Rejected assignments (MTurk, Toloka),
tainted judgments (CrowdFlower), cancelled annotations (Label Studio) and ignored
examples (Prodigy) are left out by default, with a note (``keep_rejected=True`` keeps
the rejected and tainted ones).
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data.errors import CrowdDataError, show
from crowdlearn.io._files import (
    batch_files,
    is_batch_source,
    logical_suffix,
    note,
    open_text,
    sniff_delimiter,
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


@dataclass
class PlatformExport:
    """A platform export read as answers.

    Attributes
    ----------
    platform : str
        One of :data:`PLATFORMS`.
    answers : DataFrame
        Columns ``task``, ``worker``, ``label`` (lists for label sets), and ``gold`` when
        the export marks known answers.
    kind : str
        ``"class"`` or ``"multilabel"`` (several choices in one answer).
    roles : dict
        The export's column (or JSON field) behind each role.
    left_out : dict
        Reason -> number of rows left out.
    items : DataFrame or None
        The task contents (the export's input fields, e.g. a text or an image path),
        one row per task, indexed by task id.
    """

    platform: str
    answers: pd.DataFrame
    kind: str
    roles: dict[str, str]
    left_out: dict[str, int] = field(default_factory=dict)
    items: pd.DataFrame | None = None

    def describe(self) -> str:
        """One line: the platform, the roles and what was left out."""
        roles = ", ".join(f"{role}={name}" for role, name in self.roles.items())
        text = f"read as {_NAMES[self.platform]} ({roles})"
        if self.kind == "multilabel":
            text += "; several choices per answer: label sets"
        if self.left_out:
            parts = [f"{n} {why}" for why, n in self.left_out.items()]
            text += f"; left out {', '.join(parts)}"
        return text

    @property
    def gold(self) -> pd.Series | None:
        """The known answer of each task that has one (task id -> label)."""
        if "gold" not in self.answers:
            return None
        known = self.answers.dropna(subset=["gold"])
        if known.empty:
            return None
        return known.groupby("task", sort=False)["gold"].first()


_NAMES = {
    "mturk": "an Amazon Mechanical Turk batch results file",
    "toloka": "a Toloka assignments export",
    "crowdflower": "a CrowdFlower / Figure Eight / Appen full report",
    "labelstudio": "a Label Studio JSON export",
    "labelstudio-min": "a Label Studio JSON-MIN export",
    "prodigy": "a Prodigy JSONL export",
}


# ----------------------------------------------------------------------- recognising


def recognise_header(header: list[str]) -> str | None:
    """The platform whose export has this CSV/TSV header, or None."""
    names = set(header)
    if {"HITId", "WorkerId"} <= names and any(h.startswith("Answer.") for h in header):
        return "mturk"
    if "ASSIGNMENT:worker_id" in names and any(h.startswith("OUTPUT:") for h in header):
        return "toloka"
    if {"_unit_id", "_worker_id"} <= names:
        return "crowdflower"
    return None


def recognise(source: str | os.PathLike[str]) -> str | None:
    """The platform of an export file, folder of batches or glob, or None (a plain
    table, a peerannot folder...)."""
    from crowdlearn.io.longform import _csv_header

    text = str(source)
    if is_batch_source(text):
        files = batch_files(text)
        return recognise(files[0])
    path = Path(text)
    if not path.is_file():
        return None
    suffix = logical_suffix(path)
    if suffix in (".csv", ".tsv"):
        return recognise_header(_csv_header(path, sniff_delimiter(path)))
    if suffix == ".jsonl":
        first = _first_json_line(path)
        if (
            isinstance(first, dict)
            and "answer" in first
            and ("_input_hash" in first or "_task_hash" in first)
        ):
            return "prodigy"
        return None
    if suffix == ".json":
        head = _json_head(path)
        if head == "[":
            return "labelstudio"
    return None


def _json_head(path: Path) -> str:
    with open_text(path) as handle:
        while True:
            char = handle.read(1)
            if not char or not char.isspace():
                return char


def _first_json_line(path: Path) -> Any:
    with open_text(path) as handle:
        for line in handle:
            if line.strip():
                try:
                    return json.loads(line)
                except ValueError:
                    return None
    return None


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


class _RowError(Exception):
    def __init__(self, row: int, message: str) -> None:
        self.row, self.message = row, message


def _read_tables(source: str | os.PathLike[str]) -> tuple[pd.DataFrame, Any]:
    """Every cell as text (empty cells as ""), batches concatenated, and where row i is."""
    from crowdlearn.io._files import row_places

    files = batch_files(source) if is_batch_source(source) else [Path(source)]
    frames = []
    for path in files:
        sep = sniff_delimiter(path)
        try:
            with open_text(path) as handle:
                frame = pd.read_csv(
                    handle,
                    sep=sep,
                    dtype=str,
                    keep_default_na=False,
                    na_values=[],
                    # tab-separated exports (Toloka) do not quote: a " is text
                    quoting=csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL,
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


def _choose(candidates: list[str], chosen: str | None, what: str, option: str) -> str:
    if chosen is not None:
        if chosen not in candidates:
            raise CrowdDataError(
                f"{option} {chosen!r} is not one of the {what} columns: {show(candidates)}"
            )
        return chosen
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise CrowdDataError(f"the export has no {what} column")
    raise CrowdDataError(
        f"the export has several {what} columns: {', '.join(candidates)}; choose one with "
        f"{option} NAME (Python: {option.lstrip('-')}=...)"
    )


def _answers(
    frame: pd.DataFrame, task: pd.Series, worker: pd.Series, label: pd.Series
) -> tuple[pd.DataFrame, str, int]:
    """The answer table, its kind (label sets when a cell holds several choices) and the
    number of rows left out for an empty answer."""
    from crowdlearn.data.label_sets import parse_label_set

    empty = label.str.strip() == ""
    answers = pd.DataFrame({"task": task, "worker": worker, "label": label})[~empty]
    # CrowdFlower's checkbox answers are bracketed values, one per line ("[A]\n[B]"), and a
    # JSON list is a set too; free text with brackets or line breaks is not.
    bracketed = answers["label"].str.fullmatch(r"\s*\[.*\]\s*", flags=re.S)
    kind = "class"
    if len(answers) and bracketed.all() and _parse_all(answers["label"]):
        sets = []
        for row, cell in zip(answers.index, answers["label"].tolist(), strict=True):
            try:
                sets.append(parse_label_set(cell))
            except CrowdDataError:
                raise _RowError(int(row), f"cannot read the answer {cell!r} as a set") from None
        answers["label"] = sets
        kind = "multilabel"
    return answers, kind, int(empty.sum())


def _parse_all(cells: pd.Series) -> bool:
    from crowdlearn.data.label_sets import parse_label_set

    try:
        for cell in cells.tolist():
            parse_label_set(cell)
    except CrowdDataError:
        return False
    return True


def _typed_ids(answers: pd.DataFrame) -> pd.DataFrame:
    """Task and worker ids (and single-class labels) typed by the readers' text rule."""
    import pyarrow as pa

    from crowdlearn.io._common import parse_ids

    out = answers.copy()
    columns = ["task", "worker"]
    if len(out) and not isinstance(out["label"].iloc[0], list):
        columns.append("label")
    for name in columns:
        typed = parse_ids(pa.array(out[name].astype(str).tolist())).to_pandas()
        out[name] = typed.to_numpy()
    return out.reset_index(drop=True)


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
    if "AssignmentStatus" in frame and not keep_rejected:
        rejected = frame["AssignmentStatus"].str.lower() == "rejected"
        if rejected.any():
            left_out["rejected assignments (--keep-rejected keeps them)"] = int(rejected.sum())
        keep &= ~rejected
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
        status = frame["ASSIGNMENT:status"].str.upper()
        if not keep_rejected and (status == "REJECTED").any():
            left_out["rejected assignments (--keep-rejected keeps them)"] = int(
                (status == "REJECTED").sum()
            )
            keep &= status != "REJECTED"
        unfinished = status.isin(["SKIPPED", "EXPIRED"])
        if unfinished.any():
            left_out["skipped or expired assignments"] = int((unfinished & keep).sum())
            keep &= ~unfinished
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
    if "_tainted" in frame and not keep_rejected:
        tainted = frame["_tainted"].str.lower() == "true"
        if tainted.any():
            left_out["tainted judgments (--keep-rejected keeps them)"] = int(tainted.sum())
        keep &= ~tainted
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


def _items(frame: pd.DataFrame, task_column: str, inputs: list[str]) -> pd.DataFrame | None:
    if not inputs:
        return None
    items = frame[[task_column, *inputs]].drop_duplicates(subset=[task_column])
    return items.set_index(task_column)


# ----------------------------------------------------------------------- JSON exports


def _label_studio(path: Path, answer: str | None) -> PlatformExport:
    from crowdlearn.io._common import load_json

    document = load_json(path)
    if not isinstance(document, list):
        raise CrowdDataError(f"{path}: a Label Studio export is a JSON list of tasks")
    if document and all(isinstance(t, dict) and "annotations" in t for t in document):
        return _label_studio_full(document)
    if document and all(isinstance(t, dict) and "annotator" in t for t in document):
        return _label_studio_min(document, answer)
    raise CrowdDataError(
        f"{path}: a JSON list, but neither Label Studio's JSON export (tasks with "
        "'annotations') nor its JSON-MIN export (rows with 'annotator')"
    )


def _annotator(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("email", value.get("id"))
    return value


def _label_studio_full(tasks: list[dict]) -> PlatformExport:
    rows: list[tuple[Any, Any, list[Any], bool]] = []
    cancelled = no_choice = 0
    items = {}
    for position, entry in enumerate(tasks):
        task_id = entry.get("id", position)
        items[task_id] = entry.get("data", {})
        for annotation in entry.get("annotations") or []:
            if annotation.get("was_cancelled"):
                cancelled += 1
                continue
            choices = [
                choice
                for result in annotation.get("result") or []
                if isinstance(result, dict)
                for choice in (result.get("value") or {}).get("choices") or []
            ]
            if not choices:
                no_choice += 1
                continue
            worker = _annotator(annotation.get("completed_by"))
            rows.append((task_id, worker, choices, bool(annotation.get("ground_truth"))))
    left_out = {}
    if cancelled:
        left_out["cancelled annotations"] = cancelled
    if no_choice:
        left_out["annotations without a choice"] = no_choice
    answers = pd.DataFrame(rows, columns=["task", "worker", "label", "ground_truth"])
    kind = "multilabel" if any(len(c) > 1 for c in answers["label"]) else "class"
    if kind == "class":
        answers["label"] = [c[0] for c in answers["label"]]
    answers["gold"] = answers["label"].where(answers.pop("ground_truth"), None)
    if answers["gold"].notna().any() and kind == "class":
        note(
            f"ground_truth annotations give the answer of {answers['gold'].notna().sum()} task(s)"
        )
    else:
        answers = answers.drop(columns="gold")
    roles = {
        "task": "id",
        "worker": "annotations[].completed_by",
        "label": "result[].value.choices",
    }
    frame = pd.DataFrame.from_dict(items, orient="index") if items else None
    return PlatformExport("labelstudio", _typed_ids(answers), kind, roles, left_out, frame)


_MIN_OWN = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time"}


def _label_studio_min(rows: list[dict], answer: str | None = None) -> PlatformExport:
    frame = pd.DataFrame(rows)
    fields = [c for c in frame.columns if c not in _MIN_OWN]
    if answer is None:
        texts = frame[fields].map(lambda v: json.dumps(v, sort_keys=True, default=str))
        varying = texts.assign(id=frame["id"]).groupby("id").nunique().max()
        choice_like = [
            c
            for c in fields
            if frame[c].map(lambda v: isinstance(v, (str, dict, list)) or pd.isna(v)).all()
        ]
        candidates = [c for c in choice_like if varying.get(c, 0) > 1]
        if not candidates:
            candidates = [c for c in choice_like if frame[c].map(_is_choice_dict).any()]
    else:
        candidates = fields
    label_column = _choose(candidates, answer, "answer", "--answer")
    labels = frame[label_column].map(_choices)
    empty = labels.map(len) == 0
    answers = pd.DataFrame(
        {"task": frame["id"], "worker": frame["annotator"].map(_annotator), "label": labels}
    )[~empty]
    kind = "multilabel" if any(len(c) > 1 for c in answers["label"]) else "class"
    if kind == "class":
        answers["label"] = [c[0] for c in answers["label"]]
    left_out = {"rows without a choice": int(empty.sum())} if empty.any() else {}
    inputs = [c for c in fields if c != label_column and c not in candidates]
    items = (
        frame[["id", *inputs]].drop_duplicates(subset=["id"]).set_index("id") if inputs else None
    )
    roles = {"task": "id", "worker": "annotator", "label": label_column}
    return PlatformExport("labelstudio-min", _typed_ids(answers), kind, roles, left_out, items)


def _is_choice_dict(value: Any) -> bool:
    return isinstance(value, dict) and "choices" in value


def _choices(value: Any) -> list[Any]:
    if _is_choice_dict(value):
        return list(value["choices"])
    if isinstance(value, list):
        return list(value)
    if value is None or (isinstance(value, float) and pd.isna(value)) or value == "":
        return []
    return [value]


def _prodigy(path: Path) -> PlatformExport:
    rows = []
    ignored = 0
    with open_text(path) as handle:
        for number, line in enumerate(handle):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as error:
                raise CrowdDataError(f"{path}: line {number + 1} is not JSON ({error})") from None
    frame = pd.DataFrame(rows)
    if "answer" not in frame:
        raise CrowdDataError(f"{path}: Prodigy examples need an 'answer' field")
    worker_field = "_annotator_id" if "_annotator_id" in frame else "_session_id"
    if worker_field not in frame:
        raise CrowdDataError(f"{path}: no _annotator_id or _session_id: who answered is unknown")
    ignored = int((frame["answer"] == "ignore").sum())
    frame = frame[frame["answer"] != "ignore"]
    if "accept" in frame and frame["accept"].map(lambda v: isinstance(v, list)).any():
        # a choice interface: the accepted options are the answer (a rejected example
        # accepts none of them)
        task_field = "_input_hash"
        labels = [
            list(a) if ans == "accept" and isinstance(a, list) else []
            for a, ans in zip(frame["accept"], frame["answer"], strict=True)
        ]
        kind = "multilabel" if any(len(x) > 1 for x in labels) else "class"
        if kind == "class":
            labels = [x[0] if x else "" for x in labels]
        label_role = "accept"
    else:
        # a binary interface: does the label apply to the example? accept / reject
        task_field = "_task_hash"
        labels = frame["answer"].tolist()
        kind = "class"
        label_role = "answer"
    answers = pd.DataFrame(
        {"task": frame[task_field].astype(str), "worker": frame[worker_field], "label": labels}
    )
    if kind == "class":
        answers = answers[answers["label"] != ""]
    left_out = {"ignored examples": ignored} if ignored else {}
    content = [c for c in ("text", "image", "label") if c in frame]
    items = (
        frame.assign(task=answers["task"])[["task", *content]]
        .drop_duplicates("task")
        .set_index("task")
        if content
        else None
    )
    roles = {"task": task_field, "worker": worker_field, "label": label_role}
    return PlatformExport("prodigy", _typed_ids(answers), kind, roles, left_out, items)


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
    """The known answers (task id -> label) of a platform export, or None."""
    if recognise(source) is None:
        return None
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
    text = str(source)
    batch = is_batch_source(text)
    if not batch and not Path(text).is_file():
        return None
    platform = recognise(text)
    if platform is None:
        return None
    export = _cached_export(text)
    note(f"{Path(text).name}: {export.describe()}")
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
    raise CrowdDataError(f"a {_NAMES[export.platform]} holds no {kind} answers")


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
