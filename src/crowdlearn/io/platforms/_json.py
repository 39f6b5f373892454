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
from crowdlearn.io.platforms._export import PlatformExport, _choose, _typed_ids

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
    names: dict[str, str] = {}  # the choices control's from_name / to_name
    items = {}
    for position, entry in enumerate(tasks):
        task_id = entry.get("id", position)
        items[task_id] = entry.get("data", {})
        for annotation in entry.get("annotations") or []:
            if annotation.get("was_cancelled"):
                cancelled += 1
                continue
            results = [r for r in annotation.get("result") or [] if isinstance(r, dict)]
            choices = [c for r in results for c in (r.get("value") or {}).get("choices") or []]
            for result in results:
                if (result.get("value") or {}).get("choices") and "from_name" in result:
                    names.setdefault("from_name", result["from_name"])
                    names.setdefault("to_name", result.get("to_name", ""))
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
        **names,
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
