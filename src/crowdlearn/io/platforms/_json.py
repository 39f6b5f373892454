"""Platform exports in JSON: Label Studio (JSON and JSON-MIN) and Prodigy (JSONL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data.errors import CrowdDataError
from crowdlearn.io._files import (
    note,
    open_text,
)
from crowdlearn.io.platforms._export import (
    NO_WORKER,
    PlatformExport,
    _choose,
    _typed_ids,
    blank,
)

# ----------------------------------------------------------------------- JSON exports


def _label_studio(path: Path, answer: str | None) -> PlatformExport:
    from crowdlearn.io._common import load_json

    document = load_json(path)
    if not isinstance(document, list):
        raise CrowdDataError(f"{path}: a Label Studio export is a JSON list of tasks")
    if document and all(isinstance(t, dict) and "annotations" in t for t in document):
        return _label_studio_full(document, path)
    if document and all(isinstance(t, dict) and "annotator" in t for t in document):
        return _label_studio_min(document, answer, path)
    raise CrowdDataError(
        f"{path}: a JSON list, but neither Label Studio's JSON export (tasks with "
        "'annotations') nor its JSON-MIN export (rows with 'annotator')"
    )


def _annotator(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("email", value.get("id"))
    return value


def _no_id(value: Any) -> bool:
    """Whether an annotator id names nobody (missing, null, empty or blank)."""
    return bool(blank(pd.Series([value], dtype=object)).iloc[0])


def _json_type(value: Any) -> str:
    """What a JSON value is, in words (for errors)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return f"the number {value!r}"


def _json_list(value: Any, what: str) -> list[Any]:
    """A field that holds a list in Label Studio's export (missing or null: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise CrowdDataError(f"{what} is {_json_type(value)}, not a list")
    return value


def _result_value(result: dict, where: str) -> dict:
    """A result's ``value`` object (missing or null: empty)."""
    value = result.get("value")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CrowdDataError(
            f"{where}: a result's 'value' is {_json_type(value)}, not a JSON object"
        )
    return value


def _choices_of(value: Any, where: str) -> list[Any]:
    """The classes of one ``choices`` field: a list of them, or one class given alone
    (``"choices": "cat"`` is the class cat, not the classes c, a and t)."""
    if value is None or value == "":
        return []
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list) and all(
        isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in value
    ):
        return list(value)
    if isinstance(value, list):
        odd = next(c for c in value if not isinstance(c, (str, int, float)) or isinstance(c, bool))
        what = f"holds {_json_type(odd)} among its classes"
    else:
        what = f"is {_json_type(value)}"
    raise CrowdDataError(
        f"{where}: 'choices' {what}; crowdlearn reads a list of classes (or one class)"
    )


def _label_studio_full(tasks: list[dict], path: Path | None = None) -> PlatformExport:
    rows: list[tuple[Any, Any, list[Any], bool]] = []
    cancelled = no_choice = anonymous = 0
    names: dict[str, str] = {}  # the choices control's from_name / to_name
    items = {}
    for position, entry in enumerate(tasks):
        task_id = entry.get("id", position)
        where = f"{path}: task {task_id!r}" if path is not None else f"task {task_id!r}"
        items[task_id] = entry.get("data", {})
        for annotation in _json_list(entry.get("annotations"), f"{where}: 'annotations'"):
            if not isinstance(annotation, dict):
                raise CrowdDataError(
                    f"{where}: an annotation is {_json_type(annotation)}, not a JSON object"
                )
            if annotation.get("was_cancelled"):
                cancelled += 1
                continue
            results = [
                r
                for r in _json_list(annotation.get("result"), f"{where}: an annotation's 'result'")
                if isinstance(r, dict)
            ]
            values = [_result_value(r, where) for r in results]
            choices = [c for v in values for c in _choices_of(v.get("choices"), where)]
            for result, value in zip(results, values, strict=True):
                if value.get("choices") and "from_name" in result:
                    names.setdefault("from_name", result["from_name"])
                    names.setdefault("to_name", result.get("to_name", ""))
            if not choices:
                no_choice += 1
                continue
            worker = _annotator(annotation.get("completed_by"))
            if _no_id(worker):
                anonymous += 1
                continue
            rows.append((task_id, worker, choices, bool(annotation.get("ground_truth"))))
    left_out = {}
    if cancelled:
        left_out["cancelled annotations"] = cancelled
    if no_choice:
        left_out["annotations without a choice"] = no_choice
    if anonymous:
        left_out[NO_WORKER] = anonymous
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
        **names,
    }
    frame = pd.DataFrame.from_dict(items, orient="index") if items else None
    return PlatformExport("labelstudio", _typed_ids(answers), kind, roles, left_out, frame)


_MIN_OWN = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time"}


def _label_studio_min(
    rows: list[dict], answer: str | None = None, path: Path | None = None
) -> PlatformExport:
    frame = pd.DataFrame(rows)
    missing = frame["id"].isna() if "id" in frame else pd.Series(True, index=frame.index)
    if missing.any():
        raise CrowdDataError(
            f"{path}: row {int(missing.idxmax()) + 1} has no 'id': which task it answers "
            "is unknown"
        )
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
    labels = pd.Series(
        [
            _choices(value, f"{path}: task {task!r}")
            for value, task in zip(frame[label_column], frame["id"], strict=True)
        ],
        index=frame.index,
        dtype=object,
    )
    empty = labels.map(len) == 0
    workers = frame["annotator"].map(_annotator)
    anonymous = blank(workers) & ~empty
    answers = pd.DataFrame({"task": frame["id"], "worker": workers, "label": labels})[
        ~empty & ~anonymous
    ]
    kind = "multilabel" if any(len(c) > 1 for c in answers["label"]) else "class"
    if kind == "class":
        answers["label"] = [c[0] for c in answers["label"]]
    left_out = {"rows without a choice": int(empty.sum())} if empty.any() else {}
    if anonymous.any():
        left_out[NO_WORKER] = int(anonymous.sum())
    inputs = [c for c in fields if c != label_column and c not in candidates]
    items = (
        frame[["id", *inputs]].drop_duplicates(subset=["id"]).set_index("id") if inputs else None
    )
    roles = {"task": "id", "worker": "annotator", "label": label_column}
    return PlatformExport("labelstudio-min", _typed_ids(answers), kind, roles, left_out, items)


def _is_choice_dict(value: Any) -> bool:
    return isinstance(value, dict) and "choices" in value


def _choices(value: Any, where: str) -> list[Any]:
    """The classes of one JSON-MIN cell: a class, a list of them, or Label Studio's
    ``{"choices": ...}`` object (whose ``choices`` may be one class given alone)."""
    if _is_choice_dict(value):
        return _choices_of(value["choices"], where)
    if isinstance(value, float) and pd.isna(value):
        return []
    return _choices_of(value, where)


#: Prodigy's answers, and the ``left_out`` reason of the examples left out for each.
_PRODIGY_LEFT_OUT = {"ignore": "ignored examples", "reject": "rejected examples"}


def _prodigy_rows(path: Path) -> pd.DataFrame:
    """The examples of a JSONL file, indexed by their line numbers (from 1)."""
    rows, lines = [], []
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise CrowdDataError(f"{path}: line {number} is not JSON ({error})") from None
            if not isinstance(row, dict):
                raise CrowdDataError(
                    f"{path}: line {number} is {_json_type(row)}, not a JSON object "
                    "(a Prodigy export holds one example per line)"
                )
            rows.append(row)
            lines.append(number)
    return pd.DataFrame(rows, index=lines)


def _prodigy(path: Path) -> PlatformExport:
    frame = _prodigy_rows(path)
    if "answer" not in frame:
        raise CrowdDataError(f"{path}: Prodigy examples need an 'answer' field")
    worker_field = "_annotator_id" if "_annotator_id" in frame else "_session_id"
    if worker_field not in frame:
        raise CrowdDataError(f"{path}: no _annotator_id or _session_id: who answered is unknown")
    # accept / reject / ignore, compared trimmed and in any case
    answer = frame["answer"].map(lambda v: v.strip().lower() if isinstance(v, str) else v)
    unknown = ~answer.isin(["accept", "reject", "ignore"])
    if unknown.any():
        line = unknown.idxmax()
        value = frame.at[line, "answer"]
        what = "missing" if isinstance(value, float) and pd.isna(value) else _json_type(value)
        raise CrowdDataError(
            f"{path}: line {line}: 'answer' is {what}, not accept, reject or ignore"
        )
    choice = "accept" in frame and bool(
        frame["accept"].map(lambda v: isinstance(v, list) or (isinstance(v, str) and v)).any()
    )
    task_field = "_input_hash" if choice else "_task_hash"
    if task_field not in frame or frame[task_field].isna().any():
        line = frame[task_field].isna().idxmax() if task_field in frame else frame.index[0]
        raise CrowdDataError(f"{path}: line {line} has no {task_field}: its example is unknown")
    left_out: dict[str, int] = {}
    # a choice interface: the accepted options are the answer, and a rejected example
    # (the question does not fit) is left out like an ignored one; a binary interface:
    # accept / reject is the answer (does the example's label apply?)
    for value, reason in _PRODIGY_LEFT_OUT.items():
        if value == "reject" and not choice:
            continue
        dropped = answer == value
        if dropped.any():
            left_out[reason] = int(dropped.sum())
            frame, answer = frame[~dropped], answer[~dropped]
    anonymous = blank(frame[worker_field])
    if anonymous.any():
        left_out[NO_WORKER] = int(anonymous.sum())
        frame, answer = frame[~anonymous], answer[~anonymous]
    if choice:
        labels: list[Any] = [
            _choices_of(a, f"{path}: line {line}: 'accept'") if isinstance(a, (list, str)) else []
            for line, a in zip(frame.index, frame["accept"], strict=True)
        ]
        kind = "multilabel" if any(len(x) > 1 for x in labels) else "class"
        label_role = "accept"
    else:
        labels = answer.tolist()
        kind = "class"
        label_role = "answer"
    answers = pd.DataFrame(
        {"task": frame[task_field].astype(str), "worker": frame[worker_field], "label": labels},
        index=frame.index,
    )
    if kind == "class" and choice:
        chose = answers["label"].map(len) > 0
        if not chose.all():
            left_out["accepted examples choosing no option"] = int((~chose).sum())
        answers = answers[chose].copy()
        answers["label"] = [x[0] for x in answers["label"]]
    content = [c for c in ("text", "image", "label") if c in frame]
    items = (
        frame.assign(task=answers["task"])[["task", *content]]
        .dropna(subset=["task"])
        .drop_duplicates("task")
        .set_index("task")
        if content
        else None
    )
    roles = {"task": task_field, "worker": worker_field, "label": label_role}
    return PlatformExport("prodigy", _typed_ids(answers), kind, roles, left_out, items)
