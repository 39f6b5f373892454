"""Span-level vote: whole spans matched exactly across workers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdlearn.aggregation.spans._tokens import TokenTable, finish, worker_frame
from crowdlearn.data.spans import Spans


class SpanVote:
    """Keep a span when more than ``threshold`` of the task's workers marked it.

    Spans are matched across workers exactly: the same ``(start, end, label)`` on the
    same task (a span one token shorter, or of another type, is a different span; the
    strict span F1 scores spans the same way). A span's votes are the number of
    distinct workers who marked it; it is a candidate when its votes exceed
    ``threshold`` times the number of workers who answered the task (by default more
    than half). Candidates that overlap are resolved by votes: the most voted is kept
    first, ties to the longer span, then to the earlier one; a candidate overlapping a
    kept span is dropped. (With BIO input a worker marks no overlapping spans, so two
    overlapping spans cannot both have a majority; the rule matters for
    ``Spans.from_frame`` input and for lower thresholds.)

    Parameters
    ----------
    threshold : float
        Share of the task's workers a span must exceed (0.5: a strict majority).

    Attributes
    ----------
    labels_ : DataFrame
        The kept spans; ``score`` is the share of the task's workers who marked it.
    tags_, marginals_ :
        The kept spans as BIO codes per task; each token's share of workers voting
        each code (as :class:`~crowdlearn.aggregation.spans.TokenMajorityVote`).
    worker_scores_ : DataFrame
        Worker id and ``score``: the share of the worker's spans that were kept
        (its span precision against the consensus; NaN for a worker who marked none).
    """

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def fit(self, data: Spans) -> SpanVote:
        """Aggregate ``data`` (a :class:`~crowdlearn.data.Spans`)."""
        if not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"threshold must be in [0, 1), got {self.threshold!r}")
        table = TokenTable(data)
        n_workers = np.bincount(
            np.unique(data.task.astype(np.int64) * data.n_workers + data.worker)
            // max(data.n_workers, 1),
            minlength=data.n_tasks,
        )
        marked = data.label >= 0
        frame = pd.DataFrame(
            {
                "task": data.task[marked].astype(np.int64),
                "start": data.start[marked],
                "end": data.end[marked],
                "label": data.label[marked].astype(np.int64),
                "worker": data.worker[marked].astype(np.int64),
            }
        ).drop_duplicates()
        votes = frame.groupby(["task", "start", "end", "label"], sort=False).size()
        votes = votes.rename("votes").reset_index()
        votes["share"] = votes["votes"] / n_workers[votes["task"].to_numpy()]
        votes["length"] = votes["end"] - votes["start"]
        candidates = votes[votes["share"] > self.threshold].sort_values(
            ["task", "votes", "length", "start"], ascending=[True, False, False, True]
        )
        codes = np.zeros(table.n_total, dtype=np.int64)
        kept_rows = []
        taken = np.zeros(table.n_total, dtype=bool)
        for row in candidates.itertuples(index=False):
            lo = table.offsets[row.task] + row.start
            hi = table.offsets[row.task] + row.end
            if taken[lo:hi].any():
                continue
            taken[lo:hi] = True
            codes[lo] = 1 + 2 * row.label
            codes[lo + 1 : hi] = 2 + 2 * row.label
            kept_rows.append((row.task, row.start, row.end, row.label, row.share))
        post = table.vote_shares()
        finish(self, data, table, codes, post)
        # the score of a kept span is its vote share, not the token posteriors
        kept = pd.DataFrame(kept_rows, columns=["task", "start", "end", "label", "score"])
        if len(kept):
            key = pd.MultiIndex.from_arrays(
                [data.task_ids[kept["task"].to_numpy()], kept["start"], kept["end"]]
            )
            share = pd.Series(kept["score"].to_numpy(), index=key)
            own = pd.MultiIndex.from_frame(self.labels_[["task", "start", "end"]])
            self.labels_["score"] = share.reindex(own).to_numpy(dtype=np.float64)
        hits = frame.merge(kept[["task", "start", "end", "label"]], how="left", indicator=True)[
            "_merge"
        ].eq("both")
        per_worker = np.bincount(frame["worker"], minlength=data.n_workers).astype(float)
        kept_per_worker = np.bincount(
            frame["worker"], weights=hits.to_numpy(dtype=float), minlength=data.n_workers
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.where(per_worker > 0, kept_per_worker / per_worker, np.nan)
        self.worker_scores_ = worker_frame(data, score)
        return self

    def predict(self) -> pd.DataFrame:
        """The aggregated spans (``labels_``)."""
        return self.labels_
