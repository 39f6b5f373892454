"""Annotation tools' exports of spans: Label Studio NER (JSON, JSON-MIN) and Prodigy
``ner`` JSONL (:mod:`crowdlearn.io.spans`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from crowdlearn.data.errors import CrowdDataError, show
from crowdlearn.data.spans import (
    Spans,
    char_to_token_spans,
)
from crowdlearn.io._common import about, load_json
from crowdlearn.io._files import note
from crowdlearn.io._span_build import (
    _Answer,
    _build,
    _Doc,
    _int,
    _lines,
    _text_doc,
    _with_truth,
)


def _is_span_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, dict) and "start" in v and "end" in v and "labels" in v for v in value
    )


def read_label_studio(
    source: str | os.PathLike[str],
    *,
    tokens: Mapping[Any, list[str]] | None = None,
    duplicates: str = "error",
) -> Spans:
    """A Label Studio NER export, JSON or JSON-MIN.

    JSON (the full export): a list of tasks, each with ``id``, ``data`` (the text:
    ``data["text"]``, else the one field of ``data`` holding a text with spaces) and
    ``annotations``; each
    annotation has ``completed_by`` (the worker: its ``email``, else its ``id``, else
    the value) and ``result``, whose items of ``type: "labels"`` are the spans:
    ``value`` = ``{start, end, text, labels: [...]}`` (character offsets, end
    exclusive; a span with several labels is one span per label). JSON-MIN: a list of
    rows, one per annotation, with ``id`` (the task), ``text``, ``annotator`` and one
    field holding a list of ``{start, end, text, labels}`` (the labels control's name,
    e.g. ``label``); a row without it: the worker marked nothing.

    Cancelled annotations, annotations without a worker and results that are not
    ``labels`` (relations, choices) are left out and counted in a note. Annotations
    marked ``ground_truth`` are answers like the others, and the truth
    (:attr:`Spans.truth`) where every task has exactly one (else a note says why not). A span whose
    ``text`` is not the text's characters at ``[start, end)`` is an error (the offsets
    are then not into this text).
    """
    path = Path(source)
    with about(path):
        document = load_json(path)
        if not isinstance(document, list) or not document:
            raise CrowdDataError("a Label Studio export is a non-empty JSON list of tasks")
        if all(isinstance(t, dict) and "annotations" in t for t in document):
            answers, docs, left_out = _ls_full(document)
        elif all(isinstance(t, dict) and "annotator" in t for t in document):
            answers, docs, left_out = _ls_min(document)
        else:
            raise CrowdDataError(
                "a JSON list, but neither Label Studio's JSON export (tasks with "
                "'annotations') nor its JSON-MIN export (rows with 'annotator')"
            )
        if left_out:
            note(f"{path.name}: left out " + ", ".join(f"{n} {w}" for w, n in left_out.items()))
        spans = _build(answers, docs, units="char", duplicates=duplicates, reference=tokens)
        return _ls_truth(spans, docs, tokens is not None, path.name)


def _ls_truth(spans: Spans, docs: Mapping[Any, _Doc], aligned: bool, name: str) -> Spans:
    """``spans`` with the truth of Label Studio's ``ground_truth`` annotations, where
    every task has exactly one (a truth of spans covers every task); else a note."""
    marked = {t: d.extra["truth"] for t, d in docs.items() if "truth" in d.extra}
    if not marked:
        return spans
    tasks = spans.task_ids.tolist()
    why = None
    if aligned:
        why = "the answers were aligned to other tokens (--tokens)"
    elif any(len(v) > 1 for v in marked.values()):
        why = "a task has several"
    elif set(marked) != set(tasks):
        why = f"{len(set(tasks) - set(marked))} of {len(tasks)} task(s) have none"
    if why is not None:
        note(f"{name}: ground_truth annotations are not used as the truth: {why}")
        return spans
    truth = {}
    for task, (found,) in marked.items():
        doc = docs[task]
        truth[task] = []
        for start, end, label in found:
            first, stop, _ = char_to_token_spans(doc.offsets, [start], [end])
            truth[task].append((int(first[0]), int(stop[0]), label))
    note(f"{name}: the ground_truth annotations are the truth ({len(truth)} task(s))")
    return _with_truth(spans, truth)


def _ls_text(data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        return None
    if "text" in data:
        return data["text"]
    # another name for the text field ($content, $sentence...): the one field holding a
    # text with spaces (an image path or an id is not the text)
    texts = [v for v in data.values() if isinstance(v, str) and len(v.split()) > 1]
    if len(texts) > 1:
        raise CrowdDataError(f"{where}: 'data' holds several texts and none is named 'text'")
    return texts[0] if texts else None


def _ls_span(value: Any, text: Any, where: str) -> list[tuple[int, int, Any]]:
    if not isinstance(value, dict):
        raise CrowdDataError(f"{where}: a span's value is not a JSON object")
    start = _int(value.get("start"), "'start'", where)
    end = _int(value.get("end"), "'end'", where)
    labels = value.get("labels")
    if isinstance(labels, str):
        labels = [labels]
    if not isinstance(labels, list) or not labels:
        raise CrowdDataError(f"{where}: the span [{start}, {end}) has no 'labels'")
    said = value.get("text")
    if (
        isinstance(said, str)
        and isinstance(text, str)
        and 0 <= start < end <= len(text)
        and text[start:end] != said
    ):
        raise CrowdDataError(
            f"{where}: the span [{start}, {end}) says {said[:40]!r} but the task's text holds "
            f"{text[start:end][:40]!r} there"
        )
    return [(start, end, label) for label in labels]


def _ls_full(document: list[dict]) -> tuple[list[_Answer], dict[Any, _Doc], dict[str, int]]:
    from crowdlearn.io.platforms._json import _annotator, _no_id

    answers: list[_Answer] = []
    docs: dict[Any, _Doc] = {}
    left_out: dict[str, int] = {}

    def leave(why: str) -> None:
        left_out[why] = left_out.get(why, 0) + 1

    for position, entry in enumerate(document):
        task = entry.get("id", position)
        where = f"task {task!r}"
        if task in docs:
            raise CrowdDataError(f"{where} appears twice")
        text = _ls_text(entry.get("data"), where)
        annotations = entry.get("annotations") or []
        if not isinstance(annotations, list):
            raise CrowdDataError(f"{where}: 'annotations' is not a list")
        live = [a for a in annotations if isinstance(a, dict) and not a.get("was_cancelled")]
        for _ in range(len(annotations) - len(live)):
            leave("cancelled annotations")
        if not live:
            continue
        docs[task] = _text_doc(task, text, where)
        for k, annotation in enumerate(live):
            place = f"{where}, annotation {annotation.get('id', k)!r}"
            worker = _annotator(annotation.get("completed_by"))
            if _no_id(worker):
                leave("annotations without a worker (completed_by)")
                continue
            spans = []
            for result in annotation.get("result") or []:
                if not isinstance(result, dict):
                    raise CrowdDataError(f"{place}: a result is not a JSON object")
                if result.get("type") != "labels":
                    leave("results that are not labels")
                    continue
                spans += _ls_span(result.get("value"), text, place)
            answers.append(_Answer(task, worker, spans, place))
            if annotation.get("ground_truth"):
                docs[task].extra.setdefault("truth", []).append(spans)
    return answers, docs, left_out


def _ls_min(rows: list[dict]) -> tuple[list[_Answer], dict[Any, _Doc], dict[str, int]]:
    from crowdlearn.io.platforms._json import _annotator, _no_id

    fields = {
        k for row in rows for k, v in row.items() if isinstance(v, list) and _is_span_list(v)
    }
    if len(fields) > 1:
        raise CrowdDataError(f"the rows hold spans in several fields: {show(sorted(fields))}")
    name = fields.pop() if fields else None
    answers: list[_Answer] = []
    docs: dict[Any, _Doc] = {}
    left_out: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        where = f"row {number}"
        if "id" not in row:
            raise CrowdDataError(f"{where} has no 'id': which task it answers is unknown")
        task = row["id"]
        text = row.get("text")
        doc = docs.get(task)
        if doc is None:
            doc = docs[task] = _text_doc(task, text, where)
        elif text != doc.text:
            raise CrowdDataError(f"{where}: task {task!r} has another text than in {doc.where}")
        worker = _annotator(row.get("annotator"))
        if _no_id(worker):
            left_out["rows without a worker (annotator)"] = (
                left_out.get("rows without a worker (annotator)", 0) + 1
            )
            continue
        value = row.get(name) if name else None
        spans = []
        if value is not None and not _is_span_list(value):
            raise CrowdDataError(f"{where}: {name!r} is not a list of spans")
        for item in value or []:
            spans += _ls_span(item, text, where)
        answers.append(_Answer(task, worker, spans, where))
    return answers, docs, left_out


# --------------------------------------------------------------------------- Prodigy


def read_prodigy(
    source: str | os.PathLike[str],
    *,
    tokens: Mapping[Any, list[str]] | None = None,
    duplicates: str = "error",
) -> Spans:
    """A Prodigy ``ner`` / ``ner.manual`` JSONL export.

    One example a line: ``text``, ``spans`` (each with ``start``, ``end`` character
    offsets and ``label``; without ``start``/``end``, ``token_start`` and ``token_end``
    (inclusive, Prodigy's convention) index ``tokens``), ``tokens`` (each with
    ``text``, ``start``, ``end``: the task's tokens, taken from its first example; a
    task without them is cut by :func:`~crowdlearn.data.spans.tokenize`), ``answer``
    and the worker ``_annotator_id`` (else ``_session_id``). The task is
    ``_input_hash`` (one text). Only accepted examples count: rejected and ignored
    ones are left out and counted in a note. Several accepted examples of one worker
    on one text with different ``_task_hash`` (the binary ``ner`` recipes ask about
    one suggested span each) are merged into one answer; the same ``_task_hash``
    twice goes through the duplicate policy.
    """
    path = Path(source)
    with about(path):
        return _prodigy_spans(path, tokens, duplicates)


def _prodigy_spans(
    path: Path, reference: Mapping[Any, list[str]] | None, duplicates: str
) -> Spans:
    import json

    answers: list[_Answer] = []
    docs: dict[Any, _Doc] = {}
    left_out: dict[str, int] = {}
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            example = json.loads(line)
        except ValueError as error:
            raise CrowdDataError(f"{where} is not JSON ({error})") from None
        if not isinstance(example, dict):
            raise CrowdDataError(f"{where} is not a JSON object (one Prodigy example a line)")
        answer = example.get("answer")
        answer = answer.strip().lower() if isinstance(answer, str) else answer
        if answer not in ("accept", "reject", "ignore"):
            raise CrowdDataError(f"{where}: 'answer' is {answer!r}, not accept, reject or ignore")
        if answer != "accept":
            why = f"{answer}ed examples"
            left_out[why] = left_out.get(why, 0) + 1
            continue
        worker = example.get("_annotator_id", example.get("_session_id"))
        if worker is None or (isinstance(worker, str) and not worker.strip()):
            left_out["examples without _annotator_id or _session_id"] = (
                left_out.get("examples without _annotator_id or _session_id", 0) + 1
            )
            continue
        task = example.get("_input_hash")
        if task is None:
            raise CrowdDataError(f"{where} has no _input_hash: which text it answers is unknown")
        text = example.get("text")
        doc = docs.get(task)
        if doc is None:
            doc = docs[task] = _prodigy_doc(task, text, example.get("tokens"), where)
        elif text != doc.text:
            raise CrowdDataError(
                f"{where}: _input_hash {task!r} has another text than {doc.where}"
            )
        spans = example.get("spans") or []
        if not isinstance(spans, list):
            raise CrowdDataError(f"{where}: 'spans' is not a list")
        own = (
            _prodigy_tokens(example.get("tokens"), text, where) if example.get("tokens") else None
        )
        answers.append(
            _Answer(
                task,
                worker,
                [_prodigy_span(s, own or doc.extra.get("tokens"), where) for s in spans],
                where,
                key=example.get("_task_hash"),
            )
        )
    if left_out:
        note(
            f"{path.name}: only accepted examples count; left out "
            + ", ".join(f"{n} {w}" for w, n in left_out.items())
        )
    return _build(answers, docs, units="char", duplicates=duplicates, reference=reference)


def _prodigy_tokens(tokens: Any, text: Any, where: str) -> list[tuple[str, int, int]]:
    if not isinstance(tokens, list):
        raise CrowdDataError(f"{where}: 'tokens' is not a list")
    out = []
    for k, token in enumerate(tokens):
        if not isinstance(token, dict):
            raise CrowdDataError(f"{where}: token {k} is not a JSON object")
        start = _int(token.get("start"), f"token {k}'s 'start'", where)
        end = _int(token.get("end"), f"token {k}'s 'end'", where)
        if not (0 <= start < end <= len(text)):
            raise CrowdDataError(
                f"{where}: token {k} [{start}, {end}) is not inside the text ({len(text)} "
                "characters)"
            )
        if out and start < out[-1][2]:
            raise CrowdDataError(f"{where}: token {k} starts before the token before it ends")
        out.append((text[start:end], start, end))
    return out


def _prodigy_doc(task: Any, text: Any, tokens: Any, where: str) -> _Doc:
    if tokens is None:
        doc = _text_doc(task, text, where)
        return doc
    if not isinstance(text, str):
        _text_doc(task, text, where)  # the error for a missing text
    found = _prodigy_tokens(tokens, text, where)
    if not found:
        raise CrowdDataError(f"{where}: the document of task {task!r} is empty (no tokens)")
    offsets = np.array([[s, e] for _, s, e in found], dtype=np.int64)
    return _Doc([t for t, _, _ in found], text, offsets, where, {"tokens": found})


def _prodigy_span(span: Any, tokens: list[tuple[str, int, int]] | None, where: str) -> tuple:
    if not isinstance(span, dict):
        raise CrowdDataError(f"{where}: a span is not a JSON object")
    label = span.get("label")
    if label is None or label == "":
        raise CrowdDataError(f"{where}: a span has no 'label'")
    if "start" in span and "end" in span:
        return (
            _int(span["start"], "a span's 'start'", where),
            _int(span["end"], "a span's 'end'", where),
            label,
        )
    if "token_start" in span and "token_end" in span and tokens:
        first = _int(span["token_start"], "'token_start'", where)
        last = _int(span["token_end"], "'token_end'", where)  # inclusive
        if not (0 <= first <= last < len(tokens)):
            raise CrowdDataError(
                f"{where}: the span of tokens [{first}, {last}] (token_end inclusive) reaches "
                f"past the end of its {len(tokens)} tokens"
            )
        return tokens[first][1], tokens[last][2], label
    raise CrowdDataError(f"{where}: a span needs 'start' and 'end' (or token_start/token_end)")
