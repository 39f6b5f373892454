"""The builder every span reader shares: answers (spans per task and worker, in
characters or tokens) over documents into one :class:`~crowdlearn.data.Spans`, with the
duplicate policy, the bounds checked where each span was read, characters mapped to
tokens and answers aligned to reference tokens (:mod:`crowdlearn.io.spans`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data.errors import CrowdDataError
from crowdlearn.data.spans import (
    Spans,
    _warn_cut,
    _warn_repaired,
    char_to_token_spans,
    spans_to_bio,
    tags_to_spans,
    tokenize,
)
from crowdlearn.io._align import align_or_refuse
from crowdlearn.io._files import note


@dataclass
class _Answer:
    """One worker's answer on one task: spans ``(start, end, label)`` in characters or
    tokens (``[]``: the worker marked nothing), and where it was read (for errors)."""

    task: Any
    worker: Any
    spans: list[tuple[int, int, Any]]
    where: str
    key: Any = None  # answers of one (task, worker) with different keys are merged
    #: where each span was read, when not all at ``where`` (a long table: one line each)
    span_where: list[str] | None = None


@dataclass
class _Doc:
    """A task's reference: tokens, and for text input its text and token offsets."""

    tokens: list[str]
    text: str | None = None
    offsets: np.ndarray | None = None
    where: str = ""
    extra: dict = field(default_factory=dict)


def _keep(answers: list[_Answer], duplicates: str) -> list[_Answer]:
    """The duplicate policy over (task, worker) (answers whose ``key`` differ are parts
    of one answer and are merged)."""
    if duplicates not in ("error", "keep", "first", "last"):
        raise CrowdDataError(
            f"duplicates must be 'error', 'keep', 'first' or 'last', got {duplicates!r}"
        )
    seen: dict[tuple[Any, Any, Any], int] = {}
    kept: list[_Answer | None] = []
    for answer in answers:
        pair = (answer.task, answer.worker, answer.key)
        if pair in seen:
            before = kept[seen[pair]]
            if duplicates == "error":
                raise CrowdDataError(
                    f"{answer.where}: worker {answer.worker!r} answered task {answer.task!r} "
                    f"twice (first at {before.where if before else '?'}); choose with "
                    "duplicates='keep', 'first' or 'last' (--duplicates)"
                )
            if duplicates == "first":
                continue
            if duplicates == "last":
                kept[seen[pair]] = None
        seen[pair] = len(kept)
        kept.append(answer)
    merged: dict[tuple[Any, Any], _Answer] = {}
    out = []
    for answer in kept:
        if answer is None:
            continue
        pair = (answer.task, answer.worker)
        if duplicates != "keep" and pair in merged:
            merged[pair].spans = sorted(set(merged[pair].spans) | set(answer.spans), key=str)
            continue
        merged[pair] = _Answer(
            answer.task, answer.worker, list(answer.spans), answer.where,
            span_where=answer.span_where,
        )  # fmt: skip
        out.append(merged[pair])
    return out


def _build(
    answers: list[_Answer],
    docs: Mapping[Any, _Doc],
    *,
    units: str,
    duplicates: str,
    reference: Mapping[Any, list[str]] | None = None,
    what: str = "text",
    every_doc: bool = False,
) -> Spans:
    """The :class:`Spans` of ``answers`` over ``docs``; ``units`` says whether their
    spans are in ``"char"`` (offsets into the doc's text) or ``"token"`` indices.
    With ``reference``, each answer is aligned from its doc's tokens onto the
    reference tokens of its task. The tasks are those answered, or with ``every_doc``
    every doc (a document nobody annotated stays a task: its tokens and truth count)."""
    if not answers:
        raise CrowdDataError("no answer is left to read")
    answers = _keep(answers, duplicates)
    rows: list[tuple[Any, Any, list[tuple[int, int, Any]]]] = []
    cut = unaligned = repaired = differ = 0
    for answer in answers:
        doc = docs.get(answer.task)
        if doc is None:
            raise CrowdDataError(f"{answer.where}: task {answer.task!r} has no {what}")
        spans = []
        wheres = answer.span_where or [answer.where] * len(answer.spans)
        for (start, end, label), where in zip(answer.spans, wheres, strict=True):
            if units == "char":
                size = len(doc.text or "")
                if start < 0 or end > size:
                    raise CrowdDataError(
                        f"{where}: the span [{start}, {end}) reaches past the end of its "
                        f"text ({size} characters)"
                    )
                if end <= start:
                    raise CrowdDataError(
                        f"{where}: the span [{start}, {end}) ends before or where it starts"
                    )
                first, stop, cuts = char_to_token_spans(doc.offsets, [start], [end])
                if stop[0] <= first[0]:
                    raise CrowdDataError(
                        f"{where}: the span [{start}, {end}) = "
                        f"{(doc.text or '')[start:end]!r} covers no token"
                    )
                cut += bool(cuts[0])
                spans.append((int(first[0]), int(stop[0]), label))
            else:
                n = len(doc.tokens)
                if end <= start:
                    raise CrowdDataError(
                        f"{where}: the span [{start}, {end}) ends before or where it starts"
                    )
                if start < 0 or end > n:
                    raise CrowdDataError(
                        f"{where}: the span [{start}, {end}) reaches past the end of "
                        f"task {answer.task!r} ({n} tokens)"
                    )
                spans.append((start, end, label))
        if reference is not None:
            target = _lookup(reference, answer.task)
            if target is None:
                raise CrowdDataError(
                    f"{answer.where}: task {answer.task!r} has no reference tokens"
                )
            tags, missed = align_or_refuse(
                doc.tokens, spans_to_bio(spans, len(doc.tokens)), target, answer.where
            )
            differ += doc.tokens != target
            unaligned += missed
            spans, n_repaired = tags_to_spans(tags, "bio", where=answer.where)
            repaired += n_repaired
        rows.append((answer.task, answer.worker, spans))
    _warn_cut(cut)
    _warn_repaired(repaired, "aligned answers")
    if differ:
        note(
            f"{differ} answer(s) over other tokens than the reference were aligned to it; "
            f"{unaligned} reference token(s) faced no token of the answer and were tagged O"
        )
    return _spans_from_rows(rows, docs, reference, list(docs) if every_doc else None)


def _spans_from_rows(
    rows: list[tuple[Any, Any, list[tuple[int, int, Any]]]],
    docs: Mapping[Any, _Doc],
    reference: Mapping[Any, list[str]] | None,
    tasks: list[Any] | None = None,
) -> Spans:
    from crowdlearn.data._ids import factorize
    from crowdlearn.data.spans import _append

    if tasks is None:
        task_codes, task_ids = factorize(_one_type([r[0] for r in rows]), "task")
    else:
        _, task_ids = factorize(_one_type(tasks), "task")  # sorted, as without declaring
        task_codes, _ = factorize([r[0] for r in rows], "task", task_ids)
    worker_codes, worker_ids = factorize(_one_type([r[1] for r in rows]), "worker")
    out: dict[str, list] = {k: [] for k in ("task", "worker", "start", "end", "label")}
    for t, w, (_, _, spans) in zip(task_codes.tolist(), worker_codes.tolist(), rows, strict=True):
        _append(out, t, w, sorted(spans, key=lambda s: (s[0], s[1], str(s[2]))))
    tasks = task_ids.tolist()
    if reference is not None:
        return Spans._from_label_names(
            out, [list(_lookup(reference, t)) for t in tasks], task_ids, worker_ids, None, None
        )
    texted = all(docs[t].offsets is not None for t in tasks)
    return Spans._from_label_names(
        out,
        [docs[t].tokens for t in tasks],
        task_ids,
        worker_ids,
        None,
        None,
        texts=[docs[t].text for t in tasks] if texted else None,
        offsets=[docs[t].offsets for t in tasks] if texted else None,
    )


def _lookup(mapping: Mapping[Any, Any], task: Any) -> Any:
    """``mapping[task]``, or by the task id's text (ids read from a token file or a
    folder's file names are text: task ``1`` of an export is ``"1"`` there)."""
    if task in mapping:
        return mapping[task]
    return mapping.get(str(task))


def _cell(value: Any, what: str, where: str) -> int:
    """An integer from a table cell (a column with empty cells is read as text)."""
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise CrowdDataError(f"{where}: {what} must be an integer, got {value!r}") from None
    return _int(value, what, where)


def _one_type(ids: list[Any]) -> list[Any]:
    """Ids of one type: as read, or all as text where the export mixes types (Label
    Studio's ``completed_by`` is a number, or an object whose e-mail names the worker)."""
    kinds = {type(i) for i in ids}
    if len(kinds) > 1 and not kinds <= {int, np.int64}:
        return [str(i) for i in ids]
    return ids


def _text_doc(task: Any, text: Any, where: str) -> _Doc:
    """A task's text cut into tokens; errors for a missing or empty text."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        raise CrowdDataError(f"{where}: task {task!r} has no text")
    if not isinstance(text, str):
        raise CrowdDataError(f"{where}: the text of task {task!r} is not a string: {text!r}")
    tokens, offsets = tokenize(text)
    if not tokens:
        raise CrowdDataError(f"{where}: the document of task {task!r} is empty (no tokens)")
    return _Doc(tokens, text, offsets, where)


def _int(value: Any, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise CrowdDataError(f"{where}: {what} must be an integer, got {value!r}")
    if not float(value).is_integer():
        raise CrowdDataError(f"{where}: {what} must be an integer, got {value!r}")
    return int(value)


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        raise CrowdDataError(f"{path}: not UTF-8 text (byte {error.start})") from None


def _by_text(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """A mapping keyed by the text of its keys (task ids read from a folder are text)."""
    return {str(k): v for k, v in mapping.items()}


def _with_truth(spans: Spans, truth: Mapping[Any, list[tuple[int, int, Any]]]) -> Spans:
    """``spans`` with true spans (task id -> spans over its tokens) added."""
    lookup = {t: i for i, t in enumerate(spans.task_ids.tolist())}
    labels = list(spans.labels.tolist())
    for found in truth.values():
        labels += [lab for _, _, lab in found if lab not in labels]
    labels = sorted(set(labels), key=str)
    code = {lab: i for i, lab in enumerate(labels)}
    records = [
        (lookup[t], s, e, code[lab]) for t, found in truth.items() if t in lookup
        for s, e, lab in found
    ]  # fmt: skip
    frame = pd.DataFrame(records, columns=["task", "start", "end", "label"], dtype=np.int64)
    old = np.asarray([code[lab] for lab in spans.labels.tolist()], dtype=np.int64)
    label = np.where(spans.label >= 0, old[np.maximum(spans.label, 0)] if len(old) else -1, -1)
    return Spans(
        spans.task, spans.worker, spans.start, spans.end, label, tokens=spans.tokens,
        task_ids=spans.task_ids, worker_ids=spans.worker_ids, labels=labels, truth=frame,
        texts=spans.texts, offsets=spans.offsets,
    )  # fmt: skip
