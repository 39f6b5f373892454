"""Worker and task scores of spans (sequence tags).

A worker's spans on a task are compared with a reference set of spans on that task
(the consensus: an aggregator's spans; or the truth) by exact match of start, end and
label (strict span matching, as :func:`crowdlearn.metrics.span_scores` counts):

- :func:`worker_scores`: per worker, the tasks answered, the spans marked, and the
  span precision, recall and F1 of the worker's spans against the reference, pooled
  over the tasks the worker answered (NaN where undefined: no span marked for the
  precision, no reference span on those tasks for the recall);
- :func:`task_scores`: per task, the workers who answered it, the spans they marked,
  and ``agreement``, the mean over pairs of workers of the span F1 between the two
  workers' spans (``2 |A & B| / (|A| + |B|)``; two workers who both marked nothing
  agree fully, 1.0); NaN for a task with one worker.

The reference is a DataFrame with columns ``task``, ``start``, ``end``, ``label`` in
*ids* (as an aggregator's ``labels_`` holds them); :func:`reference_codes` turns it
into the codes these functions use.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data.spans import Spans

__all__ = [
    "data_truth",
    "model_worker_scores",
    "pair_f1",
    "reference_codes",
    "task_frame",
    "task_scores",
    "truth_codes",
    "truth_scores",
    "worker_frame",
    "worker_scores",
]

#: A span in codes: (start, end, label code).
_Span = tuple[int, int, int]


def _answers(data: Spans) -> dict[tuple[int, int], set[_Span]]:
    """(task code, worker code) -> that worker's spans on that task (an empty set for a
    worker who answered and marked nothing)."""
    out: dict[tuple[int, int], set[_Span]] = defaultdict(set)
    columns = (data.task, data.worker, data.start, data.end, data.label)
    for task, worker, start, end, label in zip(*(c.tolist() for c in columns), strict=True):
        spans = out[(task, worker)]
        if label >= 0:
            spans.add((start, end, label))
    return out


def reference_codes(frame: pd.DataFrame, data: Spans) -> dict[int, set[_Span]]:
    """Task code -> the spans of ``frame`` (columns task, start, end, label: ids) on that
    task, in codes; a label the data do not know gets a code no worker span has."""
    out: dict[int, set[_Span]] = defaultdict(set)
    if frame is None or len(frame) == 0:
        return out
    tasks = pd.Index(data.task_ids).get_indexer(frame["task"].to_numpy())
    labels = pd.Index(data.labels).get_indexer(frame["label"].to_numpy())
    labels = np.where(labels < 0, -2, labels)  # unknown to the data: matches nothing
    columns = (tasks, frame["start"].to_numpy(), frame["end"].to_numpy(), labels)
    for task, start, end, label in zip(*(np.asarray(c).tolist() for c in columns), strict=True):
        if task >= 0:
            out[int(task)].add((int(start), int(end), int(label)))
    return out


def truth_codes(data: Spans) -> dict[int, set[_Span]] | None:
    """Task code -> the true spans (codes), or None when the data carry no truth."""
    truth = getattr(data, "truth", None)
    if truth is None:
        return None
    out: dict[int, set[_Span]] = defaultdict(set)
    for task, start, end, label in truth.loc[:, ["task", "start", "end", "label"]].itertuples(
        index=False, name=None
    ):
        if label >= 0:
            out[int(task)].add((int(start), int(end), int(label)))
    return out


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


def worker_scores(data: Spans, reference: dict[int, set[_Span]]) -> dict[str, np.ndarray]:
    """Per worker (code order): ``n_tasks``, ``n_spans``, and ``precision``,
    ``recall``, ``f1`` of the worker's spans against ``reference`` (task code -> spans
    in codes, see :func:`reference_codes`), pooled over the tasks the worker answered.

    Examples
    --------
    >>> s = Spans.from_tags(["d"] * 2, ["a", "b"], [["B-PER", "I-PER", "O"],
    ...     ["B-PER", "O", "O"]], tokens={"d": ["Ada", "Lovelace", "wrote"]})
    >>> scores = worker_scores(s, {0: {(0, 2, 0)}})
    >>> scores["precision"].tolist(), scores["recall"].tolist()
    ([1.0, 0.0], [1.0, 0.0])
    """
    n = data.n_workers
    tasks, spans, correct, expected = (np.zeros(n, np.int64) for _ in range(4))
    for (task, worker), marked in _answers(data).items():
        truth = reference.get(task, set())
        tasks[worker] += 1
        spans[worker] += len(marked)
        correct[worker] += len(marked & truth)
        expected[worker] += len(truth)
    precision = np.array([_ratio(c, s) for c, s in zip(correct, spans, strict=True)])
    recall = np.array([_ratio(c, e) for c, e in zip(correct, expected, strict=True)])
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    f1 = np.where(np.isnan(precision) | np.isnan(recall), np.nan, f1)
    return {"n_tasks": tasks, "n_spans": spans, "precision": precision, "recall": recall, "f1": f1}


def pair_f1(a: set[Any], b: set[Any]) -> float:
    """Span F1 between two sets of spans (1.0 when both are empty)."""
    if not a and not b:
        return 1.0
    return 2 * len(a & b) / (len(a) + len(b))


def task_scores(data: Spans) -> dict[str, np.ndarray]:
    """Per task (code order): ``n_workers``, ``n_spans`` (marked by all its workers)
    and ``agreement`` (mean pairwise span F1 between its workers; NaN with one worker).

    Examples
    --------
    >>> s = Spans.from_tags(["d"] * 2, ["a", "b"], [["B-PER", "I-PER", "O"],
    ...     ["B-PER", "O", "O"]], tokens={"d": ["Ada", "Lovelace", "wrote"]})
    >>> task_scores(s)["agreement"].tolist()
    [0.0]
    """
    by_task: dict[int, list[set[_Span]]] = defaultdict(list)
    for (task, _worker), marked in _answers(data).items():
        by_task[task].append(marked)
    workers = np.zeros(data.n_tasks, np.int64)
    spans = np.zeros(data.n_tasks, np.int64)
    agreement = np.full(data.n_tasks, np.nan)
    for task, answers in by_task.items():
        workers[task] = len(answers)
        spans[task] = sum(len(a) for a in answers)
        if len(answers) > 1:
            agreement[task] = float(np.mean([pair_f1(a, b) for a, b in combinations(answers, 2)]))
    return {"n_workers": workers, "n_spans": spans, "agreement": agreement}


def data_truth(data: Spans) -> pd.DataFrame | None:
    """The data's true spans in ids (columns task, start, end, label), or None."""
    truth = getattr(data, "truth", None)
    if truth is None:
        return None
    kept = truth[truth["label"] >= 0]
    return pd.DataFrame(
        {
            "task": data.task_ids[kept["task"].to_numpy(np.int64)],
            "start": kept["start"].to_numpy(np.int64),
            "end": kept["end"].to_numpy(np.int64),
            "label": data.labels[kept["label"].to_numpy(np.int64)],
        }
    )


def truth_scores(
    predicted: pd.DataFrame, truth: pd.DataFrame, tasks: Any = None
) -> dict[str, float]:
    """Strict span P/R/F1 (:func:`crowdlearn.metrics.span_scores`) of ``predicted``
    against ``truth`` (both in ids; labels compared as text), on ``tasks`` (ids) only
    when given."""
    from crowdlearn.metrics import span_scores

    columns = ["task", "start", "end", "label"]
    predicted = predicted.loc[:, columns].copy()
    truth = truth.loc[:, columns].copy()
    if tasks is not None:
        predicted = predicted[predicted["task"].isin(list(tasks))]
        truth = truth[truth["task"].isin(list(tasks))]
    for frame in (predicted, truth):
        frame["label"] = frame["label"].astype(str)
    return span_scores(predicted, truth)


def model_worker_scores(model: Any) -> pd.DataFrame | None:
    """An aggregator's own worker scores: its optional attribute ``worker_scores_``, a
    DataFrame with a ``worker`` column (ids; or the ids as its index) and one column per
    score (e.g. the mean diagonal of a worker's tag confusion); None without it."""
    frame = getattr(model, "worker_scores_", None)
    if frame is None:
        return None
    frame = pd.DataFrame(frame)
    if "worker" not in frame.columns:
        frame = frame.rename_axis("worker").reset_index()
    return frame


def worker_frame(data: Spans, model: Any, consensus: pd.DataFrame) -> pd.DataFrame:
    """Per worker: :func:`worker_scores` against the ``consensus`` spans (ids, e.g. the
    fitted ``model``'s ``labels_``), ``truth_precision``, ``truth_recall``, ``truth_f1``
    against the truth where the data carry it, and the model's own scores
    (:func:`model_worker_scores`, prefixed ``model_``)."""
    frame = pd.DataFrame(
        {"worker": data.worker_ids, **worker_scores(data, reference_codes(consensus, data))}
    )
    true = truth_codes(data)
    if true is not None:
        scores = worker_scores(data, true)
        for key in ("precision", "recall", "f1"):
            frame[f"truth_{key}"] = scores[key]
    own = model_worker_scores(model)
    if own is not None:
        own = own.rename(columns={c: f"model_{c}" for c in own.columns if c != "worker"})
        frame = frame.merge(own, on="worker", how="left")
    return frame


def task_frame(data: Spans, consensus: pd.DataFrame) -> pd.DataFrame:
    """Per task: :func:`task_scores`, the number of ``consensus`` spans and, where the
    consensus has a ``score`` column, their mean score."""
    frame = pd.DataFrame({"task": data.task_ids, **task_scores(data)})
    grouped = consensus.groupby("task", sort=False)
    frame["n_consensus_spans"] = frame["task"].map(grouped.size()).fillna(0).astype(np.int64)
    if "score" in consensus.columns:
        frame["mean_score"] = frame["task"].map(grouped["score"].mean()).astype(np.float64)
    return frame
