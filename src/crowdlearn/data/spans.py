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
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data._ids import as_id_array, factorize
from crowdlearn.data._kinds import TaskKindData, check_codes, frame_column, keep_rows
from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning, show

__all__ = ["SCHEMES", "Spans", "spans_to_bio", "tags_to_spans"]

#: The tag schemes :func:`tags_to_spans` reads.
SCHEMES = ("bio", "iob1", "bioes", "io")

#: A span: (start, end, label), token indices, end exclusive.
Span = tuple[int, int, str]


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

    Examples
    --------
    >>> s = Spans.from_tags(["d1", "d1"], ["w1", "w2"],
    ...                     [["B-PER", "I-PER", "O"], ["B-PER", "O", "O"]],
    ...                     tokens={"d1": ["Ada", "Lovelace", "wrote"]})
    >>> s
    Spans(n_tasks=1, n_workers=2, n_labels=1, n_spans=2, n_annotations=2)
    >>> s.to_frame().values.tolist()
    [['d1', 'w1', 0, 2, 'PER'], ['d1', 'w2', 0, 1, 'PER']]
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
        tokens: Mapping[Any, Sequence[str]],
        task: str = "task",
        worker: str = "worker",
        start: str = "start",
        end: str = "end",
        label: str = "label",
        labels: Any = None,
        truth: pd.DataFrame | None = None,
    ) -> Spans:
        """Build from a long table with one row per span (token indices, end exclusive).

        A row whose start, end and label are all missing means "the worker saw the task
        and marked nothing". The tasks are the keys of ``tokens`` (every task named in
        the frame must have tokens). ``truth``, optional, is a frame with the same
        column names (task id, start, end, label id) holding the true spans.
        """
        task_col = frame_column(frame, task, "task")
        worker_col = frame_column(frame, worker, "worker")
        task_ids = as_id_array(list(tokens), "task")
        order = {t: i for i, t in enumerate(task_ids.tolist())}
        unknown = [t for t in pd.unique(task_col) if t not in order]
        if unknown:
            raise CrowdDataError(f"tasks {show(unknown)} have no reference tokens")
        worker_codes, worker_ids = factorize(worker_col, "worker")
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
        return cls._from_label_names(out, token_lists, task_ids, worker_ids, labels, truth_spans)

    @classmethod
    def _from_label_names(
        cls,
        out: dict[str, list],
        token_lists: list[list[str]],
        task_ids: np.ndarray,
        worker_ids: np.ndarray,
        labels: Any,
        truth_spans: list[tuple[int, int, int, Any]] | None,
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
            worker_ids=worker_ids, labels=label_ids, truth=truth,
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
