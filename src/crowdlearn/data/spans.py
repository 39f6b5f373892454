"""Spans: sequence tags over tokens (named entities and the like).

Each task has a reference token sequence (:attr:`Spans.tokens`, one list of ``str`` per
task). Each annotation row is one span marked by one worker on one task: token
indices ``start`` and ``end`` (end exclusive, ``0 <= start < end <= n_tokens``) and its
label (coded like classes: ``labels`` holds the ids, sorted unless declared). A worker
marks several spans on a task, so the rows are not unique per (task, worker); a worker
who saw a task and marked nothing is one row with ``label == -1`` and
``start == end == -1``, so that "saw it, tagged everything O" is kept apart from "did
not see it". Two tag sequences for the same (task, worker) go through the duplicate
policy (``"error"`` by default) of the other kinds.

Tags are read in one of the schemes ``"bio"`` (IOB2), ``"iob1"``, ``"bioes"`` and
``"io"``; plain spans need no scheme (:meth:`Spans.from_frame`). An ``I-`` (or ``E-``)
tag that does not continue a span of its type is repaired into the start of a new span
and counted in one :class:`~crowdlearn.data.CrowdDataWarning` per call, never silently.
:meth:`Spans.bio_codes` gives the tags back as integer codes into
:meth:`Spans.tag_names` (``"O"``, then ``"B-X"``, ``"I-X"`` for each label ``X``).

The truth, where known, is a table of true spans (:attr:`Spans.truth`, a DataFrame
with columns ``task`` (code), ``start``, ``end``, ``label`` (code)); it covers every
task (a task without a truth row holds no span). ``None`` when unknown.

Text input: a task given as a raw text (:meth:`Spans.from_frame` with ``texts=``) is
cut into tokens by :func:`tokenize` (a fixed regular expression, :data:`TOKEN_PATTERN`:
numbers such as ``3.5`` or ``1,000``, words (letters, digits, ``_``, inner apostrophes),
and every other non-space character alone), and each token keeps its character
offsets (:attr:`Spans.offsets`: per task an ``(n_tokens, 2)`` int array of
``[start, end)``; :attr:`Spans.texts` the texts). Spans given in characters become
token spans: a span that cuts a token inside is extended to the whole token and
counted in one :class:`~crowdlearn.data.CrowdDataWarning`. :meth:`Spans.char_spans`
turns token spans (e.g. aggregated ones) back into character offsets. Token input has
``offsets`` and ``texts`` ``None``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import as_id_array, factorize
from crowdlearn.data._kinds import (
    TaskKindData,
    check_codes,
    frame_column,
    keep_rows,
    readonly,
)
from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning, show

__all__ = [
    "SCHEMES",
    "TOKEN_PATTERN",
    "Spans",
    "char_to_token_spans",
    "spans_to_bio",
    "tags_to_spans",
    "tokenize",
]

#: The tag schemes :func:`tags_to_spans` reads.
SCHEMES = ("bio", "iob1", "bioes", "io")

#: A span: (start, end, label), token indices, end exclusive.
Span = tuple[int, int, str]

#: The tokenizer of text input: a number (digits with inner ``.``, ``,``, ``:`` or
#: ``/`` between digits: ``3.5``, ``1,000``, ``12:30``), a word (letters, digits and
#: ``_``, with inner apostrophes: ``don't``), or any other non-space character alone
#: (punctuation: ``U.S.`` is ``U`` ``.`` ``S`` ``.``, ``New-York`` is three tokens).
TOKEN_PATTERN = re.compile(r"\d+(?:[.,:/]\d+)+|\w+(?:['\u2019]\w+)*|[^\w\s]")


def tokenize(text: str) -> tuple[list[str], np.ndarray]:
    """Cut ``text`` into tokens by :data:`TOKEN_PATTERN` (deterministic, no model).

    Returns the tokens and their character offsets, an ``(n_tokens, 2)`` int64 array of
    ``[start, end)``.

    >>> tokens, offsets = tokenize("Ada Lovelace, 1815.")
    >>> tokens
    ['Ada', 'Lovelace', ',', '1815', '.']
    >>> offsets.tolist()
    [[0, 3], [4, 12], [12, 13], [14, 18], [18, 19]]
    """
    if not isinstance(text, str):
        raise CrowdDataError(f"a text must be a string, got {type(text).__name__}")
    found = list(TOKEN_PATTERN.finditer(text))
    offsets = np.array([m.span() for m in found], dtype=np.int64).reshape(-1, 2)
    return [m.group() for m in found], offsets


def char_to_token_spans(
    offsets: np.ndarray, start: Any, end: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token spans covering character spans ``[start, end)`` of one text.

    A token belongs to the span when it shares a character with it; a span that cuts
    a token inside is thus extended to the whole token. Returns the token ``start``,
    ``end`` (exclusive) and whether each span cut a token (``start == end`` where the
    span covers no token: only spaces). The caller checks the bounds first.
    """
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    first = np.searchsorted(offsets[:, 1], start, side="right")  # first token ending after
    stop = np.searchsorted(offsets[:, 0], end, side="left")  # tokens starting before end
    covers = first < stop
    cut = np.zeros(start.shape, dtype=bool)
    if covers.any():
        f, s_ = first[covers], stop[covers]
        cut[covers] = (start[covers] > offsets[f, 0]) | (end[covers] < offsets[s_ - 1, 1])
    return first, np.maximum(stop, first), cut


def _split_tag(tag: Any, scheme: str, where: str) -> tuple[str, str | None]:
    """``(prefix, label)`` of one tag; ``("O", None)`` for the outside tag."""
    if not isinstance(tag, str):
        raise CrowdDataError(f"{where}: a tag must be a string, got {tag!r}")
    if tag == "O":
        return "O", None
    prefixes = {"bio": "BI", "iob1": "BI", "bioes": "BIES", "io": "I"}[scheme]
    if len(tag) > 2 and tag[1] == "-" and tag[0] in prefixes:
        return tag[0], tag[2:]
    raise CrowdDataError(
        f"{where}: unknown tag {tag!r} for scheme {scheme!r} (expected 'O' or one of "
        f"{', '.join(p + '-LABEL' for p in prefixes)})"
    )


def tags_to_spans(
    tags: Sequence[str],
    scheme: str = "bio",
    *,
    breaks: Sequence[int] = (),
    where: str = "tags",
) -> tuple[list[Span], int]:
    """Convert one tag sequence into spans.

    Parameters
    ----------
    tags : sequence of str
        One tag per token (``"O"``, ``"B-PER"``, ...).
    scheme : {"bio", "iob1", "bioes", "io"}
        ``"bio"`` (IOB2): every span opens with ``B-``. ``"iob1"``: a span opens with
        ``I-``; ``B-`` only where it follows a span of the same type. ``"bioes"``: ``B-``
        opens, ``I-`` continues, ``E-`` closes, ``S-`` is a one-token span. ``"io"``:
        runs of ``I-X`` are spans.
    breaks : sequence of int
        Token indices where a new sentence starts: no span crosses them.
    where : str
        What the error messages call the sequence.

    Returns
    -------
    spans : list of (start, end, label)
        End exclusive, in order.
    n_repaired : int
        How many ``I-``/``E-`` tags did not continue a span of their type (``"bio"`` and
        ``"bioes"`` only) and were read as the start of a new span.

    Examples
    --------
    >>> tags_to_spans(["B-PER", "I-PER", "O", "I-LOC"])
    ([(0, 2, 'PER'), (3, 4, 'LOC')], 1)
    >>> tags_to_spans(["I-PER", "B-PER", "O"], "iob1")
    ([(0, 1, 'PER'), (1, 2, 'PER')], 0)
    """
    if scheme not in SCHEMES:
        raise CrowdDataError(f"unknown tag scheme {scheme!r}; expected one of {list(SCHEMES)}")
    if isinstance(tags, str):
        raise CrowdDataError(f"{where}: expected one tag per token, got a single string")
    starts = set(breaks)
    spans: list[Span] = []
    repaired = 0
    open_start, open_label = -1, None  # the span being read, if any

    def close(at: int) -> None:
        nonlocal open_start, open_label
        if open_label is not None:
            spans.append((open_start, at, open_label))
        open_start, open_label = -1, None

    for i, tag in enumerate(tags):
        prefix, label = _split_tag(tag, scheme, f"{where}, token {i}")
        if i in starts:
            close(i)
        continues = open_label is not None and label == open_label
        if prefix == "O":
            close(i)
        elif scheme == "io":
            if not continues:
                close(i)
                open_start, open_label = i, label
        elif scheme == "iob1":
            if prefix == "B" or not continues:
                close(i)
                open_start, open_label = i, label
        elif prefix in ("B", "S"):
            close(i)
            open_start, open_label = i, label
            if prefix == "S":
                close(i + 1)
        else:  # I- or E- in bio / bioes
            if not continues:
                repaired += 1
                close(i)
                open_start, open_label = i, label
            if prefix == "E":
                close(i + 1)
    close(len(tags))
    return spans, repaired


def spans_to_bio(spans: Sequence[Span], n_tokens: int) -> list[str]:
    """The BIO (IOB2) tags of ``n_tokens`` tokens holding ``spans`` (later spans win
    where spans overlap)."""
    tags = ["O"] * n_tokens
    for start, end, label in spans:
        tags[start] = f"B-{label}"
        for i in range(start + 1, end):
            tags[i] = f"I-{label}"
    return tags


def _warn_repaired(repaired: int, what: str) -> None:
    if repaired:
        warnings.warn(
            f"{what}: {repaired} I- tag(s) did not continue a span of their type and were "
            "read as the start of a new span",
            CrowdDataWarning,
            stacklevel=3,
        )


def _token_lists(tokens: Any, task_ids: np.ndarray) -> list[list[str]]:
    """Each task's reference tokens, in task-code order."""
    if isinstance(tokens, Mapping):
        missing = [t for t in task_ids.tolist() if t not in tokens]
        if missing:
            raise CrowdDataError(f"tasks {show(missing)} have no reference tokens")
        cells = [tokens[t] for t in task_ids.tolist()]
    else:
        cells = list(tokens)
        if len(cells) != len(task_ids):
            raise CrowdDataError(f"tokens has {len(cells)} entries for {len(task_ids)} tasks")
    out = []
    for task, cell in zip(task_ids.tolist(), cells, strict=True):
        if isinstance(cell, str) or not all(isinstance(t, str) for t in cell):
            raise CrowdDataError(f"task {task!r}: tokens must be a sequence of strings")
        if len(cell) == 0:
            raise CrowdDataError(f"task {task!r}: the document is empty (no tokens)")
        out.append(list(cell))
    return out


class Spans(TaskKindData):
    """Spans (sequence tags) marked by a crowd over reference tokens.

    Parameters
    ----------
    task, worker : array-like of int
        Task and worker code of each row.
    start, end : array-like of int
        Token indices of each span, end exclusive (``-1`` on a row where the worker
        marked nothing).
    label : array-like of int
        Label code of each span (``-1`` on a row where the worker marked nothing).
    tokens : sequence of sequences of str
        The reference tokens of each task, in task-code order.
    task_ids, worker_ids, labels : array-like, optional
    truth : DataFrame, optional
        True spans: columns ``task``, ``start``, ``end``, ``label`` (codes).
    texts : sequence of str, optional
        Text input: each task's text, in task-code order (with ``offsets``).
    offsets : sequence of arrays, optional
        Text input: each task's ``(n_tokens, 2)`` character offsets of its tokens
        (:func:`tokenize`); :meth:`char_spans` maps token spans back to characters.

    Examples
    --------
    >>> s = Spans.from_tags(["d1", "d1"], ["w1", "w2"],
    ...                     [["B-PER", "I-PER", "O"], ["B-PER", "O", "O"]],
    ...                     tokens={"d1": ["Ada", "Lovelace", "wrote"]})
    >>> s
    Spans(n_tasks=1, n_workers=2, n_labels=1, n_spans=2, n_annotations=2)
    >>> s.to_frame().values.tolist()
    [['d1', 'w1', 0, 2, 'PER'], ['d1', 'w2', 0, 1, 'PER']]

    Text input, spans in characters (:meth:`from_frame` with ``texts``), and back:

    >>> t = Spans.from_frame(
    ...     pd.DataFrame({"task": ["d1"], "worker": ["w1"], "start": [0], "end": [12],
    ...                   "label": ["PER"]}),
    ...     texts={"d1": "Ada Lovelace wrote."})
    >>> t.tokens[0], t.start.tolist(), t.end.tolist()
    (('Ada', 'Lovelace', 'wrote', '.'), [0], [2])
    >>> t.char_spans(0, 0, 2)
    (0, 12)
    """

    kind = "spans"
    _rows = ("task", "worker", "start", "end", "label")
    _axes = ("task_ids", "worker_ids", "labels")
    _extras = ("n_tokens",)

    def __init__(
        self,
        task: Any,
        worker: Any,
        start: Any,
        end: Any,
        label: Any,
        *,
        tokens: Sequence[Sequence[str]],
        task_ids: Any = None,
        worker_ids: Any = None,
        labels: Any = None,
        truth: pd.DataFrame | None = None,
        texts: Sequence[str] | None = None,
        offsets: Sequence[Any] | None = None,
    ) -> None:
        task_codes = np.asarray(task)
        task_ids = (
            as_id_array(task_ids, "task") if task_ids is not None
            else np.arange(len(tokens), dtype=np.int64)
        )  # fmt: skip
        token_lists = _token_lists(tokens, task_ids)
        worker_codes = np.asarray(worker)
        worker_ids = (
            as_id_array(worker_ids, "worker") if worker_ids is not None
            else np.arange(int(worker_codes.max()) + 1 if len(worker_codes) else 0)
        )  # fmt: skip
        labels = as_id_array(labels if labels is not None else [], "label")
        task = check_codes(task_codes, len(task_ids), "task")
        worker = check_codes(worker_codes, len(worker_ids), "worker")
        start, end, label = (np.asarray(x) for x in (start, end, label))
        for name, arr in (("start", start), ("end", end), ("label", label)):
            if len(arr) and arr.dtype.kind not in "iu":
                raise CrowdDataError(f"{name} must be integers, got dtype {arr.dtype}")
        start, end, label = (x.astype(np.int64) for x in (start, end, label))
        if not (len(task) == len(worker) == len(start) == len(end) == len(label)):
            raise CrowdDataError(
                f"task, worker, start, end and label differ in length: {len(task)}, "
                f"{len(worker)}, {len(start)}, {len(end)}, {len(label)}"
            )
        if len(task) == 0:
            raise CrowdDataError("empty data: there are no annotations")
        n_tokens = np.array([len(t) for t in token_lists], dtype=np.int64)
        _check_spans(task, start, end, label, n_tokens, len(labels), "spans")
        self._store(
            task=task, worker=worker, start=start, end=end, label=label.astype(np.int32),
            task_ids=task_ids, worker_ids=worker_ids, labels=labels, n_tokens=n_tokens,
        )  # fmt: skip
        object.__setattr__(self, "tokens", tuple(tuple(t) for t in token_lists))
        texts, offsets = _check_text_input(texts, offsets, token_lists, task_ids)
        object.__setattr__(self, "texts", texts)
        object.__setattr__(self, "offsets", offsets)
        if truth is not None:
            truth = _truth_frame(truth, n_tokens, len(labels))
        object.__setattr__(self, "truth", truth)

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_tags(
        cls,
        task: Any,
        worker: Any,
        tags: Sequence[Sequence[str]],
        *,
        tokens: Mapping[Any, Sequence[str]] | Sequence[Sequence[str]],
        scheme: str = "bio",
        task_ids: Any = None,
        worker_ids: Any = None,
        labels: Any = None,
        truth: Mapping[Any, Sequence[str]] | None = None,
        breaks: Mapping[Any, Sequence[int]] | None = None,
        duplicates: str = "error",
    ) -> Spans:
        """Build from one tag sequence per (task, worker) over the task's reference tokens.

        Parameters
        ----------
        task, worker : array-like
            Task and worker id of each tag sequence.
        tags : sequence of sequences of str
            One tag per reference token of the task, in ``scheme``.
        tokens : mapping task id -> tokens, or a sequence in task-code order
        truth : mapping task id -> true tags, optional
            Every task's true tags (same scheme); tasks it leaves out are an error.
        breaks : mapping task id -> token indices, optional
            Where each task's sentences start: no span crosses a sentence start.
        duplicates : {"error", "keep", "first", "last"}
            Two sequences for the same (task, worker).
        """
        task_codes, task_ids = factorize(task, "task", task_ids)
        worker_codes, worker_ids = factorize(worker, "worker", worker_ids)
        tags = list(tags)
        if len(tags) != len(task_codes) or len(worker_codes) != len(task_codes):
            raise CrowdDataError(
                f"task, worker and tags differ in length: {len(task_codes)}, "
                f"{len(worker_codes)}, {len(tags)}"
            )
        token_lists = _token_lists(tokens, task_ids)
        if len(task_codes) == 0:
            raise CrowdDataError("empty data: there are no annotations")
        keep = keep_rows(
            task_codes, worker_codes, len(worker_ids), duplicates, task_ids, worker_ids
        )
        rows = np.arange(len(task_codes)) if keep is None else np.asarray(keep)
        out: dict[str, list] = {k: [] for k in ("task", "worker", "start", "end", "label")}
        repaired = 0
        for row in rows.tolist():
            t, w = int(task_codes[row]), int(worker_codes[row])
            seq = tags[row]
            if isinstance(seq, str) or len(seq) != len(token_lists[t]):
                raise CrowdDataError(
                    f"row {row}: task {task_ids[t]!r} has {len(token_lists[t])} tokens but "
                    f"worker {worker_ids[w]!r} gave "
                    f"{'a single string' if isinstance(seq, str) else f'{len(seq)} tags'}"
                )
            spans, n = tags_to_spans(
                seq, scheme, breaks=(breaks or {}).get(task_ids[t], ()), where=f"row {row}"
            )
            repaired += n
            _append(out, t, w, spans)
        truth_spans = None
        if truth is not None:
            truth_spans, n = _truth_from_tags(truth, task_ids, token_lists, scheme, breaks or {})
            repaired += n
        _warn_repaired(repaired, "tags")
        return cls._from_label_names(out, token_lists, task_ids, worker_ids, labels, truth_spans)

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        tokens: Mapping[Any, Sequence[str]] | None = None,
        texts: Mapping[Any, str] | None = None,
        task: str = "task",
        worker: str = "worker",
        start: str = "start",
        end: str = "end",
        label: str = "label",
        labels: Any = None,
        truth: pd.DataFrame | None = None,
    ) -> Spans:
        """Build from a long table with one row per span.

        With ``tokens`` (task id -> reference tokens), start and end are token indices
        (end exclusive). With ``texts`` (task id -> text) instead, they are character
        offsets into the text (end exclusive): each text is cut by :func:`tokenize`,
        each span covers the tokens it shares a character with (a span cutting a token
        inside is extended to whole tokens, counted in one
        :class:`~crowdlearn.data.CrowdDataWarning`), and the data keep the texts and
        offsets (:meth:`char_spans`). A span past the end of its text, one ending
        before it starts and one covering only spaces are errors naming the row.

        A row whose start, end and label are all missing means "the worker saw the task
        and marked nothing". The tasks are the keys of ``tokens`` / ``texts`` (every
        task named in the frame must have one). ``truth``, optional, is a frame with the
        same column names (task id, start, end, label id) holding the true spans, in
        the same units.
        """
        if (tokens is None) == (texts is None):
            raise CrowdDataError("give either tokens (token indices) or texts (characters)")
        task_col = frame_column(frame, task, "task")
        worker_col = frame_column(frame, worker, "worker")
        task_ids = as_id_array(list(tokens if tokens is not None else texts), "task")
        order = {t: i for i, t in enumerate(task_ids.tolist())}
        unknown = [t for t in pd.unique(task_col) if t not in order]
        if unknown:
            what = "reference tokens" if texts is None else "text"
            raise CrowdDataError(f"tasks {show(unknown)} have no {what}")
        worker_codes, worker_ids = factorize(worker_col, "worker")
        if texts is not None:
            text_list, token_lists, offsets = _tokenized(texts, task_ids)
        else:
            text_list, offsets = None, None
            token_lists = _token_lists(tokens, task_ids)
        out: dict[str, list] = {k: [] for k in ("task", "worker", "start", "end", "label")}
        cols = [frame_column(frame, c, r) for c, r in ((start, "start"), (end, "end"))]
        label_col = frame_column(frame, label, "label")
        for row, (t, w, s, e, lab) in enumerate(
            zip(task_col.tolist(), worker_codes.tolist(), cols[0].tolist(),
                cols[1].tolist(), label_col.tolist(), strict=True)
        ):  # fmt: skip
            empty = [pd.isna(x) for x in (s, e, lab)]
            if all(empty):
                _append(out, order[t], w, [])
                continue
            if any(empty) or not (_is_int(s) and _is_int(e)):
                raise CrowdDataError(
                    f"row {row}: start, end and label must all be given (integers), or all "
                    "be missing (the worker marked nothing)"
                )
            _append(out, order[t], w, [(int(s), int(e), lab)])
        truth_spans = None
        if truth is not None:
            truth_spans = [
                (order[t], int(s), int(e), lab)
                for t, s, e, lab in zip(
                    frame_column(truth, task, "task"),
                    frame_column(truth, start, "start"),
                    frame_column(truth, end, "end"),
                    frame_column(truth, label, "label"),
                    strict=True,
                )
            ]
        if offsets is not None:
            cut = _to_tokens(out, offsets, text_list, "row")
            if truth_spans:
                columns = {k: [x[i] for x in truth_spans] for i, k in
                           enumerate(("task", "start", "end", "label"))}  # fmt: skip
                cut += _to_tokens(columns, offsets, text_list, "truth row")
                truth_spans = list(zip(*columns.values(), strict=True))
            _warn_cut(cut)
        return cls._from_label_names(
            out, token_lists, task_ids, worker_ids, labels, truth_spans,
            texts=text_list, offsets=offsets,
        )  # fmt: skip

    @classmethod
    def _from_label_names(
        cls,
        out: dict[str, list],
        token_lists: list[list[str]],
        task_ids: np.ndarray,
        worker_ids: np.ndarray,
        labels: Any,
        truth_spans: list[tuple[int, int, int, Any]] | None,
        *,
        texts: Sequence[str] | None = None,
        offsets: Sequence[np.ndarray] | None = None,
    ) -> Spans:
        """Code the label names (rows with label None: the worker marked nothing)."""
        named = [x for x in out["label"] if x is not None]
        if truth_spans:
            named += [x[3] for x in truth_spans]
        _, label_ids = factorize(np.asarray(named, dtype=object) if named else [], "label", labels)
        lookup = {v: i for i, v in enumerate(label_ids.tolist())}
        codes = [-1 if x is None else lookup[x] for x in out["label"]]
        truth = None
        if truth_spans is not None:
            truth = pd.DataFrame(
                {
                    "task": [x[0] for x in truth_spans],
                    "start": [x[1] for x in truth_spans],
                    "end": [x[2] for x in truth_spans],
                    "label": [lookup[x[3]] for x in truth_spans],
                },
                dtype=np.int64,
            )
        return cls(
            np.asarray(out["task"], dtype=np.int64), np.asarray(out["worker"], dtype=np.int64),
            np.asarray(out["start"], dtype=np.int64), np.asarray(out["end"], dtype=np.int64),
            np.asarray(codes, dtype=np.int64), tokens=token_lists, task_ids=task_ids,
            worker_ids=worker_ids, labels=label_ids, truth=truth, texts=texts, offsets=offsets,
        )  # fmt: skip

    # ------------------------------------------------------------------ views
    @property
    def n_labels(self) -> int:
        """How many span labels (types)."""
        return len(self.labels)

    @property
    def n_spans(self) -> int:
        """How many spans (rows that are not "marked nothing")."""
        return int((self.label >= 0).sum())

    def char_spans(self, task: Any, start: Any, end: Any) -> tuple[Any, Any]:
        """Character offsets ``(char_start, char_end)`` of token spans of text input.

        Parameters
        ----------
        task : int or array of int
            Task code(s) (index into :attr:`task_ids`).
        start, end : int or array of int
            Token indices, end exclusive (an aggregator's output), ``start < end``.

        Returns
        -------
        char_start, char_end
            The first character of token ``start`` and the end (exclusive) of token
            ``end - 1`` in the task's text: ints for scalar input, else arrays.

        Raises
        ------
        CrowdDataError
            When the data are token input (no texts) or a span is not inside its task.
        """
        if self.offsets is None:
            raise CrowdDataError(
                "these spans were read as tokens, not text: they have no character offsets"
            )
        scalar = np.ndim(task) == 0 and np.ndim(start) == 0 and np.ndim(end) == 0
        task_a, start_a, end_a = np.broadcast_arrays(
            np.asarray(task, dtype=np.int64), np.asarray(start, dtype=np.int64),
            np.asarray(end, dtype=np.int64),
        )  # fmt: skip
        bad = (task_a < 0) | (task_a >= self.n_tasks)
        if bad.any():
            raise CrowdDataError(f"task codes {show(task_a[bad])} are not in [0, {self.n_tasks})")
        n = self.n_tokens[task_a]
        bad = (start_a < 0) | (end_a <= start_a) | (end_a > n)
        if bad.any():
            pairs = list(zip(start_a[bad].tolist(), end_a[bad].tolist(), strict=True))
            raise CrowdDataError(
                f"token spans {show(pairs)} "
                "are not inside their task (0 <= start < end <= n_tokens)"
            )
        char_start = np.empty(task_a.shape, dtype=np.int64)
        char_end = np.empty(task_a.shape, dtype=np.int64)
        for index in np.ndindex(task_a.shape):
            table = self.offsets[int(task_a[index])]
            char_start[index] = table[start_a[index], 0]
            char_end[index] = table[end_a[index] - 1, 1]
        if scalar:
            return int(char_start.reshape(-1)[0]), int(char_end.reshape(-1)[0])
        return char_start, char_end

    def tag_names(self) -> list[str]:
        """The BIO tags coded by :meth:`bio_codes`: ``"O"``, then ``"B-X"``, ``"I-X"``
        for each label ``X`` in label-code order (``B`` of label ``k`` is ``1 + 2k``)."""
        names = ["O"]
        for lab in self.labels.tolist():
            names += [f"B-{lab}", f"I-{lab}"]
        return names

    def bio_codes(self) -> dict[tuple[int, int], np.ndarray]:
        """Each (task code, worker code)'s BIO tags as integer codes into
        :meth:`tag_names` (0 = ``O``), one per reference token of the task."""
        out: dict[tuple[int, int], np.ndarray] = {}
        for t, w, s, e, lab in zip(
            self.task.tolist(), self.worker.tolist(), self.start.tolist(),
            self.end.tolist(), self.label.tolist(), strict=True,
        ):  # fmt: skip
            codes = out.get((t, w))
            if codes is None:
                codes = out[(t, w)] = np.zeros(int(self.n_tokens[t]), dtype=np.int32)
            if lab >= 0:
                codes[s] = 1 + 2 * lab
                codes[s + 1 : e] = 2 + 2 * lab
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per span: task, worker, start, end, label (ids); a worker who marked
        nothing on a task has one row with missing start, end and label."""
        empty = self.label < 0
        labels = np.asarray(self.labels, dtype=object)
        return pd.DataFrame(
            {
                "task": self.task_ids[self.task],
                "worker": self.worker_ids[self.worker],
                "start": pd.array(np.where(empty, None, self.start), dtype="Int64"),
                "end": pd.array(np.where(empty, None, self.end), dtype="Int64"),
                "label": np.where(empty, None, labels[np.maximum(self.label, 0)])
                if len(labels)
                else [None] * len(empty),
            }
        )

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is not True:
            return same
        mine, theirs = self.truth, other.truth  # type: ignore[attr-defined]
        if (mine is None) != (theirs is None):
            return False
        if self.texts != other.texts:  # type: ignore[attr-defined]
            return False
        if (self.offsets is None) != (other.offsets is None):  # type: ignore[attr-defined]
            return False
        if self.offsets is not None and not all(
            np.array_equal(a, b)
            for a, b in zip(self.offsets, other.offsets, strict=True)  # type: ignore[attr-defined]
        ):
            return False
        return self.tokens == other.tokens and (  # type: ignore[attr-defined]
            mine is None or mine.equals(theirs)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extras = f", truth={len(self.truth)} spans" if self.truth is not None else ""
        return (
            f"Spans(n_tasks={self.n_tasks}, n_workers={self.n_workers}, "
            f"n_labels={self.n_labels}, n_spans={self.n_spans}, "
            f"n_annotations={self.n_annotations}{extras})"
        )


def _tokenized(
    texts: Mapping[Any, str], task_ids: np.ndarray
) -> tuple[list[str], list[list[str]], list[np.ndarray]]:
    """Each task's text, tokens and offsets, in task-code order."""
    text_list, token_lists, offsets = [], [], []
    for task in task_ids.tolist():
        text = texts[task]
        if not isinstance(text, str):
            raise CrowdDataError(f"task {task!r}: the text must be a string, got {text!r}")
        tokens, table = tokenize(text)
        if not tokens:
            raise CrowdDataError(f"task {task!r}: the document is empty (no tokens in its text)")
        text_list.append(text)
        token_lists.append(tokens)
        offsets.append(table)
    return text_list, token_lists, offsets


def _to_tokens(
    out: dict[str, list], offsets: list[np.ndarray], texts: list[str], what: str
) -> int:
    """Turn the character spans of ``out`` (task codes) into token spans, in place;
    returns how many cut a token inside. Errors name the first bad row."""
    cut = 0
    for row, (t, s, e, lab) in enumerate(
        zip(out["task"], out["start"], out["end"], out["label"], strict=True)
    ):
        if lab is None:
            continue
        size = len(texts[t])
        if s < 0 or e > size:
            raise CrowdDataError(
                f"{what} {row}: the span [{s}, {e}) reaches past the end of its text "
                f"({size} characters)"
            )
        if e <= s:
            raise CrowdDataError(
                f"{what} {row}: the span ends ({e}) before or where it starts ({s})"
            )
        first, stop, cuts = char_to_token_spans(offsets[t], [s], [e])
        if stop[0] <= first[0]:
            raise CrowdDataError(
                f"{what} {row}: the span [{s}, {e}) = {texts[t][s:e]!r} covers no token"
            )
        out["start"][row], out["end"][row] = int(first[0]), int(stop[0])
        cut += bool(cuts[0])
    return cut


def _warn_cut(cut: int) -> None:
    if cut:
        warnings.warn(
            f"{cut} character span(s) cut a token inside and were extended to whole tokens",
            CrowdDataWarning,
            stacklevel=3,
        )


def _check_text_input(
    texts: Sequence[str] | None,
    offsets: Sequence[Any] | None,
    token_lists: list[list[str]],
    task_ids: np.ndarray,
) -> tuple[tuple[str, ...] | None, tuple[np.ndarray, ...] | None]:
    """Texts and offsets of text input checked against the tokens (both or neither)."""
    if texts is None and offsets is None:
        return None, None
    if texts is None or offsets is None:
        raise CrowdDataError("text input needs both texts and offsets")
    texts, offsets = list(texts), list(offsets)
    if not (len(texts) == len(offsets) == len(token_lists)):
        raise CrowdDataError(
            f"texts, offsets and tokens differ in length: {len(texts)}, {len(offsets)}, "
            f"{len(token_lists)}"
        )
    checked = []
    for task, text, table, tokens in zip(
        task_ids.tolist(), texts, offsets, token_lists, strict=True
    ):
        table = np.asarray(table, dtype=np.int64)
        if table.shape != (len(tokens), 2):
            raise CrowdDataError(
                f"task {task!r}: offsets must have shape ({len(tokens)}, 2), got {table.shape}"
            )
        if not isinstance(text, str) or any(
            text[a:b] != tok for (a, b), tok in zip(table.tolist(), tokens, strict=True)
        ):
            raise CrowdDataError(f"task {task!r}: the offsets do not give the tokens in the text")
        checked.append(readonly(table))
    return tuple(texts), tuple(checked)


def _is_int(value: Any) -> bool:
    """Whether a table cell is a whole number (``2`` or ``2.0``, not ``"2"`` or ``2.5``)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer()


def _append(out: dict[str, list], task: int, worker: int, spans: list[Span]) -> None:
    """Rows of one (task, worker): its spans, or one "marked nothing" row."""
    for s, e, lab in spans or [(-1, -1, None)]:
        out["task"].append(task)
        out["worker"].append(worker)
        out["start"].append(s)
        out["end"].append(e)
        out["label"].append(lab)


def _truth_from_tags(
    truth: Mapping[Any, Sequence[str]],
    task_ids: np.ndarray,
    token_lists: list[list[str]],
    scheme: str,
    breaks: Mapping[Any, Sequence[int]],
) -> tuple[list[tuple[int, int, int, Any]], int]:
    """True spans (task code, start, end, label name) from each task's true tags."""
    if not isinstance(truth, Mapping):
        raise CrowdDataError("truth must map each task id to its true tags")
    known = set(task_ids.tolist())
    unknown = [t for t in truth if t not in known]
    if unknown:
        raise CrowdDataError(f"truth names unknown tasks: {show(unknown)}")
    missing = [t for t in task_ids.tolist() if t not in truth]
    if missing:
        raise CrowdDataError(f"truth has no tags for tasks {show(missing)}")
    spans, repaired = [], 0
    for code, (task, tokens) in enumerate(zip(task_ids.tolist(), token_lists, strict=True)):
        tags = truth[task]
        if len(tags) != len(tokens):
            raise CrowdDataError(
                f"truth of task {task!r} has {len(tags)} tags for {len(tokens)} tokens"
            )
        found, n = tags_to_spans(
            tags, scheme, breaks=breaks.get(task, ()), where=f"truth of task {task!r}"
        )
        repaired += n
        spans += [(code, s, e, lab) for s, e, lab in found]
    return spans, repaired


def _check_spans(
    task: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    label: np.ndarray,
    n_tokens: np.ndarray,
    n_labels: int,
    what: str,
) -> None:
    """One error naming the rows whose span is not inside its task's tokens."""
    empty = label < 0
    bad_empty = np.flatnonzero(empty & ((label != -1) | (start != -1) | (end != -1)))
    if bad_empty.size:
        raise CrowdDataError(
            f"{what}: rows {show(bad_empty)} have a negative label; a row where the worker "
            "marked nothing has label, start and end all -1"
        )
    off = np.flatnonzero(~empty & (label >= n_labels))
    if off.size:
        raise CrowdDataError(f"{what}: rows {show(off)} have label codes outside [0, {n_labels})")
    backwards = np.flatnonzero(~empty & (end <= start))
    if backwards.size:
        raise CrowdDataError(
            f"{what}: rows {show(backwards)} end before or where they start "
            f"(start {show(start[backwards])}, end {show(end[backwards])})"
        )
    outside = np.flatnonzero(~empty & ((start < 0) | (end > n_tokens[task])))
    if outside.size:
        raise CrowdDataError(
            f"{what}: rows {show(outside)} reach past the end of their task's tokens "
            f"(end {show(end[outside])}, tokens {show(n_tokens[task[outside]])})"
        )


def _truth_frame(truth: pd.DataFrame, n_tokens: np.ndarray, n_labels: int) -> pd.DataFrame:
    """The truth table checked: codes in range, spans inside their task."""
    if not isinstance(truth, pd.DataFrame):
        raise CrowdDataError("truth must be a DataFrame with columns task, start, end, label")
    cols = [frame_column(truth, c, c).to_numpy() for c in ("task", "start", "end", "label")]
    task = check_codes(cols[0].astype(np.int64), len(n_tokens), "truth task")
    start, end, label = (c.astype(np.int64) for c in cols[1:])
    _check_spans(task, start, end, label, n_tokens, n_labels, "truth")
    frame = pd.DataFrame({"task": task, "start": start, "end": end, "label": label})
    return frame.sort_values(["task", "start", "end"], kind="stable").reset_index(drop=True)
