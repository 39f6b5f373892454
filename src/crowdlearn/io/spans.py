"""Readers of crowd spans (sequence tags): every layout behind ``read(path, kind="spans")``.

:func:`read_spans` tells the layout from the path and reads it into a
:class:`~crowdlearn.data.Spans`:

=================================== =============================================================
layout                              recognised by
=================================== =============================================================
NER-MTurk per-worker CoNLL folders  a folder holding ``mturk_train_data/`` and ``ground_truth/``
                                    (:func:`crowdlearn.io.conll_folders.read_conll_folders`)
CoNLL file, one column per worker   ending ``.conll``, ``.bio``, ``.iob`` or ``.txt``
                                    (:func:`read_conll_annotators`)
Label Studio NER export             ``.json``: a list of tasks with ``annotations`` (JSON) or of
                                    rows with ``annotator`` (JSON-MIN) (:func:`read_label_studio`)
Prodigy ``ner`` / ``ner.manual``    ``.jsonl``: examples with ``text`` and ``spans``
                                    (:func:`read_prodigy`)
long CSV of spans                   ``.csv``/``.tsv`` with columns task, worker, start, end, label,
                                    and ``texts=`` (characters) or ``tokens=`` (token indices)
                                    (:func:`read_span_table`)
=================================== =============================================================

Text inputs (Label Studio, Prodigy, the CSV with texts) keep each task's text and the
character offsets of its tokens (:attr:`Spans.offsets`; the text is cut by
:func:`crowdlearn.data.spans.tokenize`, or by the tokens a Prodigy example carries), so
aggregated spans can be written back in characters (:meth:`Spans.char_spans`). With
``tokens=`` (reference tokens from a CoNLL token file or folder) the answers are carried
onto those tokens instead: each answer's tags over its own tokens are aligned to the
reference by :func:`crowdlearn.io._align.align_or_refuse` (the NER-MTurk reader uses
the same function); reference tokens that face no token of the answer are tagged ``O``
for it, and a note counts them.

Every error is one :class:`~crowdlearn.data.CrowdDataError` naming the file and the line
(or the task and annotation of a JSON export): a span past the end of its text, a span
ending before it starts, an unknown tag or scheme, tokens that cannot be aligned, an
answer for a task that has no text, an empty document. Notes
(:class:`~crowdlearn.io._files.ReadNoteWarning`) say what was left out and why.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data.errors import CrowdDataError, show
from crowdlearn.data.spans import (
    SCHEMES,
    Spans,
    _split_tag,
    _warn_cut,
    _warn_repaired,
    char_to_token_spans,
    spans_to_bio,
    tags_to_spans,
    tokenize,
)
from crowdlearn.io._align import align_or_refuse
from crowdlearn.io._common import about, load_json
from crowdlearn.io._files import note

__all__ = [
    "CONLL_SUFFIXES",
    "looks_like_spans",
    "read_conll_annotators",
    "read_label_studio",
    "read_prodigy",
    "read_span_table",
    "read_spans",
    "read_texts",
    "read_token_file",
    "span_options",
]

#: Endings of CoNLL files (one token a line, a tag column per worker).
CONLL_SUFFIXES = (".conll", ".bio", ".iob", ".txt")

#: The document separator line of CoNLL files.
DOCSTART = "-DOCSTART-"

#: The tag of a worker who did not annotate a document (a column of a CoNLL file).
NOT_SEEN = "?"

#: The CoNLL layout read, as errors name it.
LAYOUT = (
    "crowdlearn reads CoNLL files with one tag column per worker (TOKEN TAG_1 ... TAG_k, "
    "'?' where a worker did not annotate; not TOKEN WORKER TAG rows)"
)

_OPTIONS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "crowdlearn_span_options", default=None
)


@contextlib.contextmanager
def span_options(
    texts: str | os.PathLike[str] | None = None,
    tokens: str | os.PathLike[str] | None = None,
    scheme: str | None = None,
) -> Iterator[None]:
    """Within the block, :func:`read_spans` uses these inputs when not given (the
    command line's ``--texts``, ``--tokens`` and ``--scheme``)."""
    token = _OPTIONS.set({"texts": texts, "tokens": tokens, "scheme": scheme})
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def _option(name: str, given: Any) -> Any:
    return given if given is not None else (_OPTIONS.get() or {}).get(name)


# ---------------------------------------------------------------------- recognising


def _is_conll_folders(path: Path) -> bool:
    from crowdlearn.io.conll_folders import GOLD_DIR, WORKERS_DIR

    return path.is_dir() and (path / WORKERS_DIR).is_dir() and (path / GOLD_DIR).is_dir()


def looks_like_spans(source: Any) -> bool:
    """Whether ``source`` is a span layout read without being told (``kind=None``): a
    NER-MTurk folder, a CoNLL file (``.conll``, ``.bio``, ``.iob``), a Label Studio
    export holding ``labels`` results, or a Prodigy JSONL whose first example has
    ``spans``. A ``.txt`` file (an answer matrix too) and a CSV need ``kind="spans"``."""
    import json

    if isinstance(source, pd.DataFrame) or str(source) == "-":
        return False
    path = Path(source)
    if _is_conll_folders(path):
        return True
    if not path.is_file():
        return False
    suffix = path.suffix.lower()
    if suffix in (".conll", ".bio", ".iob"):
        return True
    try:
        if suffix == ".jsonl":
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        first = json.loads(line)
                        return _prodigy_ner_example(first)
            return False
        if suffix == ".json":
            with path.open("rb") as handle:
                head = handle.read(4096).lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
            if head[:1] != b"[":
                return False  # a peerannot answers.json (an object), not a list of tasks
            raw = path.read_bytes()
            if b'"labels"' not in raw:
                return False  # not a list of tasks, or no span labels in it
            document = json.loads(raw.decode("utf-8-sig"))
            return isinstance(document, list) and any(
                _span_results(entry) for entry in document[:50] if isinstance(entry, dict)
            )
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return False


def _prodigy_ner_example(example: Any) -> bool:
    """Whether a Prodigy example is a ``ner`` one: a text and a list of spans, and
    neither the options of a choice nor the top-level label of a binary text class
    (``spans`` alone may be an empty list that a text classification carried along)."""
    if not isinstance(example, dict) or "text" not in example:
        return False
    spans = example.get("spans")
    return (
        isinstance(spans, list)
        and "options" not in example
        and "label" not in example
        and (bool(spans) or "tokens" in example)
    )


def _span_results(entry: dict) -> bool:
    """Whether a Label Studio task (JSON) or row (JSON-MIN) holds a span."""
    for annotation in entry.get("annotations") or []:
        if isinstance(annotation, dict):
            for result in annotation.get("result") or []:
                if isinstance(result, dict) and result.get("type") == "labels":
                    return True
    return any(_is_span_list(v) and v for v in entry.values())


def _is_span_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, dict) and "start" in v and "end" in v and "labels" in v for v in value
    )


# -------------------------------------------------------------------------- reading


def read_spans(
    source: str | os.PathLike[str],
    *,
    texts: str | os.PathLike[str] | Mapping[Any, str] | None = None,
    tokens: str | os.PathLike[str] | Mapping[Any, Any] | None = None,
    scheme: str | None = None,
    duplicates: str = "error",
) -> Spans:
    """Read crowd spans from any layout of the module docstring's table.

    Parameters
    ----------
    source : path
        A NER-MTurk folder, a CoNLL file, a Label Studio JSON / JSON-MIN export, a
        Prodigy JSONL file or a long CSV/TSV of spans.
    texts : path or mapping, optional
        The long CSV's texts: a CSV with columns ``task`` and ``text``, a folder of
        ``TASK.txt`` files (UTF-8, the whole file is the text), or a mapping task id ->
        text. Start and end are then character offsets.
    tokens : path or mapping, optional
        Reference tokens: a CoNLL token file (``-DOCSTART- TASK`` opens each task, then
        one token a line: its first field), a folder of ``TASK.txt`` CoNLL files (e.g.
        NER-MTurk's ``ground_truth/``), or a mapping task id -> tokens. For the long CSV,
        start and end are then token indices; for Label Studio and Prodigy, the answers
        are aligned to these tokens.
    scheme : {"bio", "iob1", "bioes", "io"}, optional
        The tag scheme of CoNLL files (default ``"bio"``).
    duplicates : {"error", "keep", "first", "last"}
        Two answers of one worker on one task.
    """
    texts = _option("texts", texts)
    tokens = _option("tokens", tokens)
    scheme = _option("scheme", scheme) or "bio"
    if scheme not in SCHEMES:
        raise CrowdDataError(
            f"unknown tag scheme {scheme!r}; the schemes are {', '.join(SCHEMES)}"
        )
    if str(source) == "-":
        raise CrowdDataError("<stdin>: spans are read from files and folders, not standard input")
    path = Path(source)
    if path.is_dir():
        if _is_conll_folders(path):
            if texts is not None or tokens is not None:
                raise CrowdDataError(
                    f"{path}: a NER-MTurk folder holds its own reference tokens (the gold "
                    "folder); texts and tokens are not used"
                )
            from crowdlearn.io.conll_folders import read_conll_folders

            return read_conll_folders(path)
        raise CrowdDataError(
            f"{path}: a folder of spans is the NER-MTurk layout (mturk_train_data/WORKER/"
            "DOC.txt and ground_truth/DOC.txt); this one has neither folder"
        )
    if not path.exists():
        raise CrowdDataError(f"{path}: no such file or folder")
    suffix = path.suffix.lower()
    reference = _reference_tokens(tokens)
    if suffix in (".csv", ".tsv"):
        return read_span_table(path, texts=texts, tokens=reference, duplicates=duplicates)
    if texts is not None:
        raise CrowdDataError(
            f"{path}: texts are read with a long CSV of spans; this {suffix} file holds its "
            "own texts or tokens"
        )
    if suffix in CONLL_SUFFIXES:
        if reference is not None:
            raise CrowdDataError(f"{path}: a CoNLL file holds its own tokens; tokens are not used")
        return read_conll_annotators(path, scheme=scheme, duplicates=duplicates)
    if suffix == ".json":
        return read_label_studio(path, tokens=reference, duplicates=duplicates)
    if suffix == ".jsonl":
        return read_prodigy(path, tokens=reference, duplicates=duplicates)
    raise CrowdDataError(
        f"{path}: cannot tell the layout of spans from the ending {suffix!r}; spans are read "
        "from a NER-MTurk folder, CoNLL files (.conll, .bio, .iob, .txt), Label Studio "
        "exports (.json), Prodigy exports (.jsonl) or a long CSV/TSV with texts or tokens"
    )


# ----------------------------------------------------------- the shared span builder


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


# ------------------------------------------------------------------ reference tokens


def _reference_tokens(tokens: Any) -> dict[Any, list[str]] | None:
    if tokens is None:
        return None
    if isinstance(tokens, Mapping):
        return {k: list(v) for k, v in tokens.items()}
    return read_token_file(tokens)


def _conll_tokens(lines: list[str], path: Path, first_line: int) -> list[str]:
    out = []
    for number, line in enumerate(lines, start=first_line):
        fields = line.split()
        if fields:
            out.append(fields[0])
        elif line.strip():
            raise CrowdDataError(f"{path}, line {number}: expected a token")
    return out


def read_token_file(source: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Reference tokens (task id, as text -> tokens) from a CoNLL token file or folder.

    A file: each task opens with a line ``-DOCSTART- TASK``, then one token a line (the
    line's first field; further fields, e.g. tags, are ignored; blank lines are
    ignored). A folder: one CoNLL file per task, ``TASK.txt`` or ``TASK.conll`` (the
    first field of each line), as NER-MTurk's ``ground_truth/``.
    """
    path = Path(source)
    out: dict[str, list[str]] = {}
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in (".txt", ".conll"))
        if not files:
            raise CrowdDataError(f"{path}: no .txt or .conll token files")
        for file in files:
            tokens = _conll_tokens(file.read_text(encoding="utf-8").splitlines(), file, 1)
            if not tokens:
                raise CrowdDataError(f"{file}: the document is empty (no tokens)")
            out[file.stem] = tokens
        return out
    if not path.is_file():
        raise CrowdDataError(f"{path}: no such token file or folder")
    lines = _lines(path)
    task, start = None, 0
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if fields and fields[0] == DOCSTART:
            _close_token_task(out, task, lines[start : number - 1], path, start + 1)
            if len(fields) != 2:
                raise CrowdDataError(
                    f"{path}, line {number}: a token file names each task: '{DOCSTART} TASK'"
                )
            if fields[1] in out:
                raise CrowdDataError(f"{path}, line {number}: task {fields[1]!r} appears twice")
            task, start = fields[1], number
        elif fields and task is None:
            raise CrowdDataError(
                f"{path}, line {number}: a token before the first '{DOCSTART} TASK' line"
            )
    _close_token_task(out, task, lines[start:], path, start + 1)
    if not out:
        raise CrowdDataError(f"{path}: no '{DOCSTART} TASK' line: the file names no task")
    return out


def _close_token_task(
    out: dict[str, list[str]], task: str | None, lines: list[str], path: Path, first: int
) -> None:
    if task is None:
        return
    tokens = _conll_tokens(lines, path, first)
    if not tokens:
        raise CrowdDataError(
            f"{path}, line {first - 1}: the document {task!r} is empty (no tokens)"
        )
    out[task] = tokens


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        raise CrowdDataError(f"{path}: not UTF-8 text (byte {error.start})") from None


def _by_text(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """A mapping keyed by the text of its keys (task ids read from a folder are text)."""
    return {str(k): v for k, v in mapping.items()}


# ---------------------------------------------------------- CoNLL with worker columns


def read_conll_annotators(
    source: str | os.PathLike[str], *, scheme: str = "bio", duplicates: str = "error"
) -> Spans:
    """A CoNLL file with one tag column per worker.

    The layout: one token a line, ``TOKEN TAG_1 ... TAG_k`` (fields split on white
    space; every token line has the same number of fields), a blank line between
    sentences (no span crosses it). The first line may be a header ``TOKEN NAME_1 ...
    NAME_k`` (its first field ``TOKEN``, in any case) naming the workers; a column named
    ``gold`` or ``truth`` holds the true tags. Without a header the workers are the
    column numbers ``1..k``. The tag ``?`` marks a worker who did not annotate the
    task (all of its tags in the task are then ``?``), as in Rodrigues et al.'s
    ``answers.txt``. Tasks: the documents, each opened by a ``-DOCSTART-`` line (its
    second field, when every such line has exactly two, is the task id; else the
    documents are numbered from 1); a file without ``-DOCSTART-`` holds one task per
    sentence, numbered from 1. Other layouts (e.g. ``TOKEN WORKER TAG`` rows) are
    refused: their rows do not have one tag per worker.
    """
    path = Path(source)
    if scheme not in SCHEMES:
        raise CrowdDataError(
            f"unknown tag scheme {scheme!r}; the schemes are {', '.join(SCHEMES)}"
        )
    with about(path):
        return _conll_annotators(path, scheme, duplicates)


def _conll_annotators(path: Path, scheme: str, duplicates: str) -> Spans:
    lines = _lines(path)
    numbered = [(n, line.split()) for n, line in enumerate(lines, start=1)]
    header: list[str] | None = None
    content = [(n, f) for n, f in numbered if f]
    if not content:
        raise CrowdDataError("the file is empty (no tokens)")
    if content[0][1][0].lower() == "token":
        header = content[0][1][1:]
        numbered = [(n, f) for n, f in numbered if n != content[0][0]]
    docstarts = [(n, f) for n, f in numbered if f and f[0] == DOCSTART]
    named = bool(docstarts) and all(len(f) == 2 for _, f in docstarts)
    # documents: (task id, line of its first token, [(line, fields)], sentence starts)
    documents: list[tuple[Any, int, list[tuple[int, list[str]]], list[int]]] = []
    current: list[tuple[int, list[str]]] | None = None
    breaks: list[int] = []
    new_sentence = True
    for number, fields in numbered:
        starts_doc = bool(fields) and fields[0] == DOCSTART
        if starts_doc or (not docstarts and not fields and current):
            task = fields[1] if starts_doc and named else len(documents) + 1
            current, breaks = [], []
            documents.append((task, number, current, breaks))
            new_sentence = True
            continue
        if not fields:
            new_sentence = True
            continue
        if current is None:
            if docstarts:
                raise CrowdDataError(f"line {number}: a token before the first {DOCSTART} line")
            current, breaks = [], []
            documents.append((1, number, current, breaks))
        if new_sentence:
            breaks.append(len(current))
            new_sentence = False
        current.append((number, fields))
    documents = [d for d in documents if d[2] or docstarts]
    tokens_seen = [
        (n, f) for n, f in content if f[0] != DOCSTART and (header is None or n > content[0][0])
    ]
    if not tokens_seen:
        raise CrowdDataError("the file is empty (no tokens)")
    width = len(tokens_seen[0][1]) if header is None else len(header) + 1
    if width < 2:
        raise CrowdDataError(
            f"line {tokens_seen[0][0]}: expected 'TOKEN TAG_1 ... TAG_k' (one tag column per "
            "worker), got one field"
        )
    names: list[Any] = list(header) if header is not None else list(range(1, width))
    if len(set(names)) != len(names):
        raise CrowdDataError(f"line {content[0][0]}: the header names a column twice")
    gold = [i for i, n in enumerate(names) if str(n).lower() in ("gold", "truth")]
    if len(gold) > 1:
        raise CrowdDataError(f"line {content[0][0]}: the header names two truth columns")
    answers: list[_Answer] = []
    docs: dict[Any, _Doc] = {}
    truth: dict[Any, list[tuple[int, int, Any]]] = {}
    repaired = 0
    seen_ids: set[Any] = set()
    for task, first, rows, starts in documents:
        if not rows:
            raise CrowdDataError(f"line {first}: the document is empty (no tokens)")
        if task in seen_ids:
            raise CrowdDataError(f"line {first}: task {task!r} appears twice")
        seen_ids.add(task)
        for number, fields in rows:
            if len(fields) != width:
                raise CrowdDataError(
                    f"line {number}: expected {width} fields (TOKEN and one tag per worker"
                    f"{', as the header names' if header is not None else ''}), got "
                    f"{len(fields)}; crowdlearn reads CoNLL files with one tag column per worker"
                )
        docs[task] = _Doc([f[0] for _, f in rows])
        for column, name in enumerate(names, start=1):
            tags = [f[column] for _, f in rows]
            missing = [t == NOT_SEEN for t in tags]
            if all(missing):
                if column - 1 in gold:
                    raise CrowdDataError(f"line {first}: the truth column has no tags (?)")
                continue
            if any(missing):
                line = rows[missing.index(True) if not missing[0] else missing.index(False)][0]
                raise CrowdDataError(
                    f"line {line}: column {name!r} mixes '?' (not annotated) with tags in one "
                    "document"
                )
            for (number, _), tag in zip(rows, tags, strict=True):
                try:
                    _split_tag(tag, scheme, f"line {number}, column {name!r}")
                except CrowdDataError as error:
                    raise CrowdDataError(f"{error}; {LAYOUT}") from None
            spans, n = tags_to_spans(tags, scheme, breaks=starts, where=f"line {first}")
            repaired += n
            if column - 1 in gold:
                truth[task] = spans
            else:
                answers.append(_Answer(task, name, spans, f"line {first}"))
    _warn_repaired(repaired, "tags")
    if not answers:
        raise CrowdDataError("no worker annotated any document (every tag column is '?')")
    spans = _build(
        answers, docs, units="token", duplicates=duplicates, what="tokens", every_doc=True
    )
    if gold:
        spans = _with_truth(spans, truth)
    return spans


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


# ---------------------------------------------------------------------- Label Studio


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


# ------------------------------------------------------------------- the long table


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
    from crowdlearn.io.kinds import read_table

    if not path.is_file():
        raise CrowdDataError(f"{path}: no such texts file or folder")
    frame = read_table(path)
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
    from crowdlearn.io.kinds import read_table

    frame = read_table(path)
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
