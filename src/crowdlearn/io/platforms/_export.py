"""The table every platform reader produces, and the helpers the readers share."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from crowdlearn.data.errors import CrowdDataError, show


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
        ``"class"``, ``"multilabel"`` (several choices in one answer) or ``"text"``
        (free text: see :func:`looks_like_free_text`).
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
        elif self.kind == "text":
            text += "; free-text answers: texts"
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


class _RowError(Exception):
    def __init__(self, row: int, message: str) -> None:
        self.row, self.message = row, message


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
    elif looks_like_free_text(answers["label"]):
        kind = "text"
    return answers, kind, int(empty.sum())


def looks_like_free_text(labels: pd.Series) -> bool:
    """Whether answers are free text rather than classes.

    The rule: more than half of the distinct answers hold a space between two words
    (whitespace inside the stripped answer) AND there are more distinct answers than
    half the number of answers. Class names can have spaces ("not sure") but repeat
    across answers; transcriptions rarely repeat exactly (CrowdSpeech dev-clean: 18,921
    answers, most of them distinct).
    """
    if not len(labels):
        return False
    distinct = pd.Series(labels.astype(str).str.strip().unique())
    spaced = distinct.str.contains(r"\s", regex=True)
    return bool(spaced.mean() > 0.5 and len(distinct) > len(labels) / 2)


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


def _items(frame: pd.DataFrame, task_column: str, inputs: list[str]) -> pd.DataFrame | None:
    if not inputs:
        return None
    items = frame[[task_column, *inputs]].drop_duplicates(subset=[task_column])
    return items.set_index(task_column)


#: The ``left_out`` reason of answers whose worker id is empty.
NO_WORKER = "answers without a worker id"


def blank(values: pd.Series) -> pd.Series:
    """Which cells are missing, empty or only whitespace (an id that names nobody)."""
    return values.map(lambda v: v is None or (isinstance(v, float) and pd.isna(v))) | (
        values.astype(str).str.strip() == ""
    )


def statuses(
    frame: pd.DataFrame, column: str, known: dict[str, str], keep: pd.Series
) -> pd.Series:
    """A platform's status column compared as the platform means it: trimmed and
    case-insensitive (``"Rejected "`` is ``rejected``), each value mapped by ``known``
    (lower-case spelling -> status). A value that is not one of them stops the reading
    with the first row holding it: an unknown status could be a rejection spelt
    otherwise, and keeping it silently would aggregate answers the platform refused."""
    folded = frame[column].astype(str).str.strip().str.lower()
    mapped = folded.map(known)
    unknown = mapped.isna() & keep
    if unknown.any():
        row = unknown.idxmax()
        raise _RowError(
            int(row),
            f"{column} {frame.at[row, column]!r} is not one of "
            f"{', '.join(sorted({k for k in known if k}))} (compared trimmed, in any case)",
        )
    return mapped
