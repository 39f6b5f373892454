"""CoNLL inputs of spans: files with one tag column per worker, and reference token
files (:mod:`crowdlearn.io.spans`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crowdlearn.data.errors import CrowdDataError
from crowdlearn.data.spans import (
    SCHEMES,
    Spans,
    _split_tag,
    _warn_repaired,
    tags_to_spans,
)
from crowdlearn.io._common import about
from crowdlearn.io._span_build import (
    _Answer,
    _build,
    _Doc,
    _lines,
    _with_truth,
)

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
