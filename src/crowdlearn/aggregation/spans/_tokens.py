"""Vectorised token tables, forward-backward and Viterbi shared by the span aggregators.

Every model here works on one long array of tokens: all tasks' reference tokens
concatenated in task-code order (task ``t`` holds global tokens
``offsets[t]:offsets[t + 1]``). A worker's answer on a task is a row of BIO codes over
those tokens; :class:`TokenTable` holds one entry per (worker answer, token), never a
Python loop per token. :class:`Chains` lays the tokens out position-major (all tasks'
first tokens, then all second tokens, ...; tasks sorted by length, longest first) so
that forward-backward and Viterbi take one vectorised step per position for all tasks
at once: the Python loop runs ``max task length`` times, whatever the number of tasks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from crowdlearn.aggregation.spans.majority import bio_to_spans, repair_bio
from crowdlearn.data.spans import Spans

#: Added to probabilities before a log.
TINY = 1e-300


class TokenTable:
    """Each (worker answer, reference token) of a :class:`~crowdlearn.data.Spans` as
    flat arrays.

    Attributes
    ----------
    n_tags : int
        ``1 + 2 * n_labels`` (codes of :meth:`Spans.tag_names`).
    offsets : ndarray (n_tasks + 1,)
        Global index of each task's first token.
    token, worker, code, prev : ndarray (n_entries,)
        The global token, the worker, the BIO code the worker gave it and the code the
        same worker gave the token before (``0``, ``O``, at a task's first token).
    """

    def __init__(self, data: Spans) -> None:
        if not isinstance(data, Spans):
            raise TypeError(f"span aggregators fit Spans, got {type(data).__name__}")
        self.n_tags = 1 + 2 * data.n_labels
        self.n_workers = data.n_workers
        self.n_tasks = data.n_tasks
        lengths = np.asarray(data.n_tokens, dtype=np.int64)
        self.lengths = lengths
        self.offsets = np.concatenate([[0], np.cumsum(lengths)])
        self.n_total = int(self.offsets[-1])
        # one answer per (task, worker) pair
        pair_key = data.task.astype(np.int64) * max(data.n_workers, 1) + data.worker
        pairs, pair_of_row = np.unique(pair_key, return_inverse=True)
        pair_task = pairs // max(data.n_workers, 1)
        pair_worker = pairs % max(data.n_workers, 1)
        sizes = lengths[pair_task]
        starts = np.concatenate([[0], np.cumsum(sizes)])
        n_entries = int(starts[-1])
        within = np.arange(n_entries) - np.repeat(starts[:-1], sizes)
        self.token = np.repeat(self.offsets[:-1][pair_task], sizes) + within
        self.worker = np.repeat(pair_worker, sizes)
        code = np.zeros(n_entries, dtype=np.int64)
        spans = np.flatnonzero(data.label >= 0)
        if spans.size:
            base = starts[pair_of_row[spans]]
            first = base + data.start[spans]
            width = data.end[spans] - data.start[spans]
            label = data.label[spans].astype(np.int64)
            inside = np.repeat(first, width) + _ranges(width)
            code[inside] = np.repeat(2 + 2 * label, width)
            code[first] = 1 + 2 * label  # B after I, so that adjacent spans stay apart
        self.code = code
        prev = np.zeros(n_entries, dtype=np.int64)
        prev[1:] = code[:-1]
        prev[starts[:-1]] = 0
        self.prev = prev
        self.n_answers = len(pairs)

    def vote_shares(self, smoothing: float = 0.0) -> np.ndarray:
        """Each token's share of its workers giving each code, shape (n_total, n_tags)."""
        counts = (
            np.bincount(self.token * self.n_tags + self.code, minlength=self.n_total * self.n_tags)
            .reshape(self.n_total, self.n_tags)
            .astype(np.float64)
        )
        counts += smoothing
        total = counts.sum(axis=1, keepdims=True)
        counts[total[:, 0] == 0] = 1.0  # a token no worker saw: uniform
        return counts / np.maximum(counts.sum(axis=1, keepdims=True), TINY)

    def _incidence(self, sequential: bool) -> sparse.csr_matrix:
        """Sparse (n_total, n_workers * n_tags [* n_tags]) 0/1 matrix: which (worker,
        [previous code,] code) each token received; built once per model."""
        key = "_seq_matrix" if sequential else "_matrix"
        if getattr(self, key, None) is None:
            k = self.n_tags
            column = self.worker * k + self.code
            n_columns = self.n_workers * k
            if sequential:
                column = (self.worker * k + self.prev) * k + self.code
                n_columns *= k
            matrix = sparse.csr_matrix(
                (np.ones(len(column)), (self.token, column)), shape=(self.n_total, n_columns)
            )
            setattr(self, key, matrix)
        return getattr(self, key)

    def confusion_counts(self, post: np.ndarray) -> np.ndarray:
        """Expected counts ``[worker, true code, given code]`` under the token
        posteriors ``post`` (n_total, n_tags)."""
        k = self.n_tags
        flat = np.asarray(self._incidence(False).T @ post)  # (worker * given, true)
        return flat.reshape(self.n_workers, k, k).transpose(0, 2, 1)

    def seq_confusion_counts(self, post: np.ndarray) -> np.ndarray:
        """Expected counts ``[worker, true code, previous given code, given code]``."""
        k = self.n_tags
        flat = np.asarray(self._incidence(True).T @ post)  # (worker * prev * given, true)
        return flat.reshape(self.n_workers, k, k, k).transpose(0, 3, 1, 2)

    def loglik(self, log_conf: np.ndarray) -> np.ndarray:
        """Per token and true code, the summed log-probability of the workers' codes
        under ``log_conf[worker, true, given]`` (or ``[worker, true, prev, given]``)."""
        k = self.n_tags
        if log_conf.ndim == 3:
            columns = log_conf.transpose(0, 2, 1).reshape(-1, k)  # (worker * given, true)
            return np.asarray(self._incidence(False) @ columns)
        columns = log_conf.transpose(0, 2, 3, 1).reshape(-1, k)
        return np.asarray(self._incidence(True) @ columns)

    def first_tokens(self) -> np.ndarray:
        """Whether each global token opens its task."""
        first = np.zeros(self.n_total, dtype=bool)
        first[self.offsets[:-1]] = True
        return first


def _ranges(width: np.ndarray) -> np.ndarray:
    """``concat(arange(w) for w in width)`` without a loop."""
    total = int(width.sum())
    starts = np.repeat(np.cumsum(width) - width, width)
    return np.arange(total) - starts


def allowed_transitions(n_tags: int) -> np.ndarray:
    """``[from, to]``: False where BIO forbids the step (``I-X`` after anything but
    ``B-X`` or ``I-X``)."""
    ok = np.ones((n_tags, n_tags), dtype=bool)
    for to in range(2, n_tags, 2):
        ok[:, to] = False
        ok[to - 1, to] = ok[to, to] = True
    return ok


class Chains:
    """The tasks' tokens laid out position-major for vectorised chain algorithms."""

    def __init__(self, lengths: np.ndarray, offsets: np.ndarray) -> None:
        order = np.argsort(-lengths, kind="stable")
        ordered = lengths[order]
        self.max_len = int(ordered[0]) if len(ordered) else 0
        # active[t]: how many tasks have a token at position t (a prefix of `order`)
        self.active = _active_counts(ordered, self.max_len)
        self.start = np.concatenate([[0], np.cumsum(self.active)])
        perm = np.empty(int(self.start[-1]), dtype=np.int64)
        first = offsets[:-1][order]
        for t in range(self.max_len):
            n = self.active[t]
            perm[self.start[t] : self.start[t] + n] = first[:n] + t
        self.perm = perm  # flat position -> global token
        self.inverse = np.empty_like(perm)
        self.inverse[perm] = np.arange(len(perm))

    def block(self, t: int) -> slice:
        """The flat positions of all tasks' tokens at position ``t``."""
        return slice(self.start[t], self.start[t] + self.active[t])

    def forward_backward(
        self, emission: np.ndarray, trans: np.ndarray, start: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """Posteriors of a chain with per-token ``emission`` likelihoods (global token
        order, any positive scale per token), transition ``trans[from, to]`` and
        initial ``start`` probabilities.

        Returns the token posteriors (global order), the expected transition counts,
        the expected initial counts and the log-likelihood (up to the emissions' scale).
        """
        e = emission[self.perm]
        n, k = e.shape
        alpha = np.empty((n, k))
        scale = np.empty(n)
        for t in range(self.max_len):
            here = self.block(t)
            if t == 0:
                a = e[here] * start
            else:
                prev = self.block(t - 1)
                # einsum, not @: BLAS is slow on tall, 9-column products
                a = np.einsum("si,ij->sj", alpha[prev][: self.active[t]], trans) * e[here]
            s = a.sum(axis=1)
            s[s <= 0] = TINY
            alpha[here] = a / s[:, None]
            scale[here] = s
        beta = np.ones((n, k))
        xi = np.zeros((k, k))
        for t in range(self.max_len - 1, 0, -1):
            here, prev = self.block(t), self.block(t - 1)
            m = self.active[t]
            weighted = e[here] * beta[here] / scale[here][:, None]
            beta[prev.start : prev.start + m] = np.einsum("sj,ij->si", weighted, trans)
            xi += (alpha[prev.start : prev.start + m].T @ weighted) * trans
        gamma = alpha * beta
        gamma /= np.maximum(gamma.sum(axis=1, keepdims=True), TINY)
        first = gamma[self.block(0)].sum(axis=0)
        return gamma[self.inverse], xi, first, float(np.log(scale).sum())

    def viterbi(
        self, log_emission: np.ndarray, log_trans: np.ndarray, log_start: np.ndarray
    ) -> np.ndarray:
        """The most likely code of each token (global order) of the chain."""
        le = log_emission[self.perm]
        n, k = le.shape
        delta = np.empty((n, k))
        back = np.zeros((n, k), dtype=np.int16)
        for t in range(self.max_len):
            here = self.block(t)
            if t == 0:
                delta[here] = le[here] + log_start
            else:
                prev = self.block(t - 1)
                scores = delta[prev][: self.active[t], :, None] + log_trans[None]
                best = scores.argmax(axis=1)
                back[here] = best
                delta[here] = np.take_along_axis(scores, best[:, None, :], axis=1)[:, 0] \
                    + le[here]  # fmt: skip
        path = np.zeros(n, dtype=np.int64)
        state = np.zeros(int(self.active[0]) if self.max_len else 0, dtype=np.int64)
        for t in range(self.max_len - 1, -1, -1):
            here = self.block(t)
            m = self.active[t]
            ending = m - (self.active[t + 1] if t + 1 < self.max_len else 0)
            if ending:  # tasks whose last token is at t start their trace here
                state[m - ending : m] = delta[here][m - ending :].argmax(axis=1)
            path[here] = state[:m]
            if t:
                state[:m] = back[here][np.arange(m), state[:m]]
        return path[self.inverse]


def _active_counts(ordered_desc: np.ndarray, max_len: int) -> np.ndarray:
    """How many of the (descending) lengths exceed each position ``0..max_len-1``."""
    counts = np.bincount(ordered_desc, minlength=max_len + 1)
    return len(ordered_desc) - np.cumsum(counts)[:max_len]


def normalise(counts: np.ndarray, axis: int = -1) -> np.ndarray:
    """``counts`` divided by their sum along ``axis``."""
    return counts / np.maximum(counts.sum(axis=axis, keepdims=True), TINY)


def finish(
    model: Any, data: Spans, table: TokenTable, codes: np.ndarray, post: np.ndarray
) -> None:
    """Set ``tags_``, ``marginals_`` and ``labels_`` of a span aggregator from the
    global per-token ``codes`` (repaired to valid BIO per task) and posteriors ``post``.

    A span's score is the mean over its tokens of the posterior of the code it got.
    """
    tags, marginals = [], []
    rows: dict[str, list[Any]] = {"task": [], "start": [], "end": [], "label": [], "score": []}
    for task in range(table.n_tasks):
        lo, hi = table.offsets[task], table.offsets[task + 1]
        chosen = repair_bio(codes[lo:hi].astype(np.int32))
        share = post[lo:hi]
        tags.append(chosen)
        marginals.append(share)
        for start, end, label in bio_to_spans(chosen):
            rows["task"].append(data.task_ids[task])
            rows["start"].append(start)
            rows["end"].append(end)
            rows["label"].append(data.labels[label])
            rows["score"].append(float(share[np.arange(start, end), chosen[start:end]].mean()))
    model.tags_ = tags
    model.marginals_ = marginals
    model.labels_ = pd.DataFrame(rows).astype(
        {"start": np.int64, "end": np.int64, "score": np.float64}
    )


def worker_frame(data: Spans, score: np.ndarray, name: str = "score") -> pd.DataFrame:
    """``worker_scores_``: worker id and the model's own per-worker score."""
    return pd.DataFrame({"worker": data.worker_ids, name: np.asarray(score, dtype=np.float64)})
