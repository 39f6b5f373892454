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

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn.data.errors import CrowdDataError
from crowdlearn.data.spans import SCHEMES, Spans
from crowdlearn.io._span_conll import (
    CONLL_SUFFIXES,
    _reference_tokens,
    read_conll_annotators,
    read_token_file,
)
from crowdlearn.io._span_json import _is_span_list, read_label_studio, read_prodigy
from crowdlearn.io._span_options import _OPTIONS, span_options
from crowdlearn.io._span_table import read_span_table, read_texts

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
