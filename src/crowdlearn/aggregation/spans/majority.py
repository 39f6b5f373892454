"""Token majority vote over BIO tags."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdlearn.aggregation.spans._flat import (
    repair_bio_flat,
    spans_of_codes,
    task_offsets,
    token_votes,
)
from crowdlearn.data.spans import Spans

#: ``numpy.mean`` adds fewer than 8 values in order and more pairwise: spans of 8 tokens
#: or more are averaged by ``numpy.mean`` itself, the shorter ones in its order, so that
#: the scores match it bit for bit.
_PAIRWISE_FROM = 8


def _span_means(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``values[s:e].mean()`` for each span, bit for bit as ``numpy.mean`` gives it."""
    length = ends - starts
    sums = values[starts] if len(starts) else np.zeros(0)
    for k in range(1, _PAIRWISE_FROM - 1):
        more = length > k
        sums[more] += values[starts[more] + k]
    means = sums / length
    for i in np.flatnonzero(length >= _PAIRWISE_FROM).tolist():
        means[i] = values[starts[i] : ends[i]].mean()
    return means


def repair_bio(codes: np.ndarray) -> np.ndarray:
    """BIO codes (0 = O, ``1 + 2k`` = B of label k, ``2 + 2k`` = I of label k) made
    valid: an I that does not follow a B or I of its label becomes a B."""
    out = codes.copy()
    previous = 0
    for i, code in enumerate(out.tolist()):
        if code and code % 2 == 0 and previous not in (code - 1, code):
            out[i] = code - 1
        previous = int(out[i])
    return out


def bio_to_spans(codes: np.ndarray) -> list[tuple[int, int, int]]:
    """Spans ``(start, end, label code)`` of valid BIO codes."""
    spans = []
    start = label = -1
    for i, code in enumerate([*codes.tolist(), 0]):
        if start >= 0 and code != 2 + 2 * label:
            spans.append((start, i, label))
            start = -1
        if code % 2 == 1:
            start, label = i, (code - 1) // 2
    return spans


class TokenMajorityVote:
    """Per token, the tag most workers of the task gave; ties go to ``O``.

    Each worker who answered a task votes one BIO tag per reference token (``O`` outside
    its spans). A token's tag is the one with the most votes; where several tags tie
    for the most, ``O``. The tags are then repaired into a valid BIO sequence (an ``I-X``
    that does not continue an ``X`` span opens one) and read as spans.

    Attributes
    ----------
    tags_ : list of ndarray
        Per task (code order), the aggregated BIO codes into ``data.tag_names()``.
    marginals_ : list of ndarray
        Per task (code order), each token's share of the task's workers voting each tag
        (shape ``(n_tokens, 1 + 2 * n_labels)``, rows sum to one).
    labels_ : DataFrame
        The aggregated spans: task (id), start, end (token indices, end exclusive),
        label (id), score (the mean over the span's tokens of the share of workers
        who gave the token its aggregated tag).

    Examples
    --------
    >>> s = Spans.from_tags(["d"] * 3, ["a", "b", "c"],
    ...     [["B-PER", "I-PER"], ["B-PER", "O"], ["B-PER", "I-PER"]],
    ...     tokens={"d": ["Ada", "Lovelace"]})
    >>> TokenMajorityVote().fit(s).predict().values.tolist()
    [['d', 0, 2, 'PER', 0.8333333333333333]]
    """

    def fit(self, data: Spans) -> TokenMajorityVote:
        """Aggregate ``data`` (a :class:`~crowdlearn.data.Spans`).

        All tasks are voted at once over their concatenated tokens
        (:mod:`~crowdlearn.aggregation.spans._flat`); the result is the one of the
        per-task definition above (``tests/aggregation/spans/test_majority_flat.py``
        checks it against a per-task loop).
        """
        if not isinstance(data, Spans):
            raise TypeError(f"TokenMajorityVote fits Spans, got {type(data).__name__}")
        offsets = task_offsets(data.n_tokens)
        table = token_votes(data)
        share = table / np.maximum(table.sum(axis=1, keepdims=True), 1)
        best = table.max(axis=1, keepdims=True)
        unique = (table == best).sum(axis=1) == 1
        chosen = np.where(unique, table.argmax(axis=1), 0).astype(np.int32)
        chosen = repair_bio_flat(chosen, offsets)
        task, start, end, label = spans_of_codes(chosen, offsets)
        picked = share[np.arange(len(chosen)), chosen]
        score = _span_means(picked, offsets[task] + start, offsets[task] + end)
        cuts = offsets[1:-1]
        self.tags_ = np.split(chosen, cuts)
        self.marginals_ = np.split(share, cuts)
        self.labels_ = pd.DataFrame(
            {
                "task": data.task_ids[task].tolist(),
                "start": start.tolist(),
                "end": end.tolist(),
                "label": np.asarray(data.labels)[label].tolist(),
                "score": score.tolist(),
            }
        ).astype({"start": np.int64, "end": np.int64, "score": np.float64})
        return self

    def predict(self) -> pd.DataFrame:
        """The aggregated spans (``labels_``)."""
        return self.labels_
