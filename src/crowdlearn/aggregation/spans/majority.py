"""Token majority vote over BIO tags."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data.spans import Spans


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
        """Aggregate ``data`` (a :class:`~crowdlearn.data.Spans`)."""
        if not isinstance(data, Spans):
            raise TypeError(f"TokenMajorityVote fits Spans, got {type(data).__name__}")
        n_tags = 1 + 2 * data.n_labels
        counts = [np.zeros((int(n), n_tags), dtype=np.int64) for n in data.n_tokens]
        for (task, _worker), codes in data.bio_codes().items():
            np.add.at(counts[task], (np.arange(len(codes)), codes), 1)
        tags, marginals = [], []
        rows: dict[str, list[Any]] = {
            "task": [], "start": [], "end": [], "label": [], "score": []
        }  # fmt: skip
        for task, table in enumerate(counts):
            share = table / np.maximum(table.sum(axis=1, keepdims=True), 1)
            marginals.append(share)
            best = table.max(axis=1, keepdims=True)
            winners = table == best
            chosen = np.where(winners.sum(axis=1) == 1, table.argmax(axis=1), 0)
            chosen = repair_bio(chosen.astype(np.int32))
            tags.append(chosen)
            for start, end, label in bio_to_spans(chosen):
                rows["task"].append(data.task_ids[task])
                rows["start"].append(start)
                rows["end"].append(end)
                rows["label"].append(data.labels[label])
                picked = share[np.arange(start, end), chosen[start:end]]
                rows["score"].append(float(picked.mean()))
        self.tags_ = tags
        self.marginals_ = marginals
        self.labels_ = pd.DataFrame(rows).astype(
            {"start": np.int64, "end": np.int64, "score": np.float64}
        )
        return self

    def predict(self) -> pd.DataFrame:
        """The aggregated spans (``labels_``)."""
        return self.labels_
