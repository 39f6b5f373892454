"""Vectorised BIO helpers over all tasks at once (every task's tokens concatenated).

A corpus of tasks is held flat: token ``i`` of task ``t`` sits at ``offsets[t] + i``,
``offsets`` being the cumulative token counts (:func:`task_offsets`). The functions here
give the same results as the per-task ones of :mod:`~crowdlearn.aggregation.spans.majority`
(``Spans.bio_codes``, ``repair_bio``, ``bio_to_spans``) with no Python loop per task or
per token, so that the aggregators stay fast at a million tokens.
"""

from __future__ import annotations

import numpy as np

from crowdlearn.data.spans import Spans

__all__ = ["repair_bio_flat", "spans_of_codes", "task_offsets", "token_votes"]


def task_offsets(n_tokens: np.ndarray) -> np.ndarray:
    """Where each task's tokens start in the flat corpus, and the total at the end
    (length ``n_tasks + 1``)."""
    return np.r_[0, np.cumsum(n_tokens, dtype=np.int64)]


def token_votes(data: Spans) -> np.ndarray:
    """How many of each task's workers gave each token each BIO tag.

    Returns an ``(n_tokens_total, 1 + 2 * n_labels)`` int64 array, rows in flat corpus
    order, columns the codes of :meth:`Spans.tag_names`. Every worker with a row on a task
    votes once per token of it (``O`` outside its spans). Where a worker's spans overlap,
    the later row wins each token, as in :meth:`Spans.bio_codes`.
    """
    offsets = task_offsets(data.n_tokens)
    n_all, n_tags, n_workers = int(offsets[-1]), 1 + 2 * data.n_labels, data.n_workers
    task = data.task.astype(np.int64)
    pairs = np.unique(task * n_workers + data.worker)
    voters = np.bincount(pairs // n_workers, minlength=data.n_tasks)
    rows = np.flatnonzero(data.label >= 0)
    length = (data.end - data.start)[rows]
    row = np.repeat(rows, length)
    rank = np.arange(len(row)) - np.repeat(np.cumsum(length) - length, length)
    position = offsets[task[row]] + data.start[row] + rank
    label = data.label[row].astype(np.int64)
    code = np.where(rank == 0, 1 + 2 * label, 2 + 2 * label)
    # the last row of a worker covering a token gives its tag (rows are in order)
    key = position * n_workers + data.worker[row]
    order = np.argsort(key, kind="stable")
    key = key[order]
    last = np.r_[key[1:] != key[:-1], True] if len(key) else np.zeros(0, dtype=bool)
    winner = order[last]
    counts = np.bincount(
        position[winner] * n_tags + code[winner], minlength=n_all * n_tags
    ).reshape(n_all, n_tags)
    counts[:, 0] = np.repeat(voters, data.n_tokens) - counts[:, 1:].sum(axis=1)
    return counts


def repair_bio_flat(codes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """:func:`~crowdlearn.aggregation.spans.majority.repair_bio` of every task at once.

    An ``I-X`` is valid when the token before it (in its task) is ``B-X`` or ``I-X``.
    A repair turns ``I-X`` into ``B-X`` and so keeps the token's label and its being
    inside a span: the validity of the next token does not change, and one pass over the
    original codes gives the sequential result.
    """
    previous = np.r_[0, codes[:-1]]
    previous[offsets[:-1][offsets[:-1] < len(codes)]] = 0  # a task's first token
    inside = (codes > 0) & (codes % 2 == 0)
    orphan = inside & ((previous == 0) | ((previous - 1) // 2 != (codes - 1) // 2))
    return np.where(orphan, codes - 1, codes).astype(codes.dtype)


def spans_of_codes(codes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    """Spans of valid (repaired) flat BIO codes: task, start, end (token indices in the
    task, end exclusive) and label code, in corpus order."""
    begins = np.flatnonzero(codes % 2 == 1)
    stops = np.r_[np.flatnonzero((codes == 0) | (codes % 2 == 1)), len(codes)]
    # a task's first token is never I- once repaired, so a span ends at its task's end
    ends = stops[np.searchsorted(stops, begins, side="right")]
    task = np.searchsorted(offsets, begins, side="right") - 1
    ends = np.minimum(ends, offsets[task + 1])
    return task, begins - offsets[task], ends - offsets[task], (codes[begins] - 1) // 2
