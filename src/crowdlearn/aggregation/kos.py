"""KOS: message passing on the task-worker graph for binary labels.

Karger, Oh and Shah, "Iterative learning for reliable crowdsourcing systems", NeurIPS
2011. Labels are ``A_ij = +1`` (class code 0) or ``-1`` (class code 1). Messages live on
the edges of the bipartite task-worker graph, i.e. on the annotations; the paper's
iterative algorithm alternates

    x_{i->j} = sum_{j' in A(i) \\ j} A_ij' y_{j'->i}      (task to worker)
    y_{j->i} = sum_{i' in T(j) \\ i} A_i'j x_{i'->j}      (worker to task)

from ``y ~ N(1, 1)`` and estimates ``z_i = sign(sum_j A_ij y_{j->i})``. Each update is a
sum over a group of annotations minus the annotation's own term: one ``np.bincount``
and a gather (:func:`_sum_of_others`), vectorised over all edges.

The updates are linear, so dividing the messages by a positive number changes no sign.
Messages are divided by their largest absolute value after every update, so they never
overflow however many iterations run (crowd-kit instead stops once a sum exceeds
``1e300``; the labels are the same as long as it has not stopped).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from crowdlearn.aggregation._base import BaseAggregator, TieBreak
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.errors import show


class KOS(BaseAggregator):
    """Karger-Oh-Shah iterative inference for binary tasks.

    Parameters
    ----------
    max_iter : int, default 100
        Number of message-passing iterations (all of them run).
    tie_break : {"random", "lowest"}, default "random"
        How ``labels_`` breaks ties (a score of exactly 0, e.g. tasks without
        annotations).
    random_state : int, default 0
        Seed of the initial worker messages ``N(1, 1)`` and of the random tie-break.

    Attributes
    ----------
    probas_ : ndarray (n_tasks, 2)
        One-hot encoding of the sign of ``scores_``; ``(0.5, 0.5)`` for a score of 0.
    labels_ : ndarray (n_tasks,)
    scores_ : ndarray (n_tasks,)
        ``sum_j A_ij y_{j->i}`` divided by its largest absolute value: positive for
        class code 0, negative for class code 1.
    reliabilities_ : ndarray (n_workers,)
        ``sum_i A_ij x_{i->j}`` divided by its largest absolute value: how well each
        worker agrees with the others (negative for workers who contradict them).
    history_ : DataFrame
        One row per iteration: ``iteration``, ``change`` (largest absolute change of
        the normalised scores) and ``seconds`` since the start.
    n_iter_ : int
        Iterations run (``max_iter``).

    Examples
    --------
    >>> from crowdlearn.simulate import hammer_spammer
    >>> data = hammer_spammer(n_worker=20, n_task=200, n_classes=2, ratio=0.3, feedback=7)
    >>> kos = KOS().fit(data)
    >>> bool((kos.labels_ == data.truth).mean() > 0.95)
    True
    >>> bool(kos.reliabilities_[:14].min() > kos.reliabilities_[14:].max())  # hammers first
    True
    """

    worker_attributes = ("reliabilities_",)
    task_attributes = ("scores_",)
    accepts_anonymous = False

    def __init__(
        self, max_iter: int = 100, tie_break: TieBreak = "random", random_state: int | None = 0
    ) -> None:
        self.max_iter = max_iter
        self.tie_break = tie_break
        self.random_state = random_state

    def _fit(self, data: CrowdData) -> None:
        if int(self.max_iter) != self.max_iter or self.max_iter < 0:
            raise ValueError(f"max_iter must be a non-negative integer, got {self.max_iter!r}")
        if data.n_classes != 2:
            raise CrowdDataError(
                f"KOS handles binary labels only, but the data have {data.n_classes} "
                f"class(es): {show(data.classes)}"
            )
        _check_graph(data)
        start = time.perf_counter()
        answer = 1.0 - 2.0 * data.label  # A_ij: +1 for class code 0, -1 for class code 1
        to_task = np.random.default_rng(self.random_state).normal(1.0, 1.0, data.n_annotations)
        scores = np.zeros(data.n_tasks)
        to_worker = np.zeros(data.n_annotations)  # max_iter=0: no message passed yet
        rows = []
        for iteration in range(1, int(self.max_iter) + 1):
            to_worker = _max_normalised(_sum_of_others(data.task, answer * to_task, data.n_tasks))
            to_task = _max_normalised(
                _sum_of_others(data.worker, answer * to_worker, data.n_workers)
            )
            previous, scores = scores, _task_scores(data, answer * to_task)
            rows.append(
                {
                    "iteration": iteration,
                    "change": float(np.abs(scores - previous).max()),
                    "seconds": time.perf_counter() - start,
                }
            )
        self.scores_ = scores
        self.reliabilities_ = _max_normalised(
            np.bincount(data.worker, weights=answer * to_worker, minlength=data.n_workers)
        )
        self.probas_ = np.column_stack([scores > 0, scores < 0]).astype(np.float64)
        self.probas_[scores == 0] = 0.5
        self.n_iter_ = len(rows)
        self.history_ = pd.DataFrame(rows, columns=["iteration", "change", "seconds"])


def _check_graph(data: CrowdData) -> None:
    """Refuse a crowd on which no message can carry information.

    Each message leaves out the annotation's own term: a task's score sums what its
    workers' *other* tasks say of them, and a worker's message what the task's *other*
    workers say. With a single worker, or when no worker labels two tasks, or no task
    has two workers, every message is 0 and every label would be a tie-break.
    """
    task_sizes = np.bincount(data.task, minlength=data.n_tasks)
    worker_loads = np.bincount(data.worker, minlength=data.n_workers)
    if data.n_workers < 2 or task_sizes.max(initial=0) < 2 or worker_loads.max(initial=0) < 2:
        raise CrowdDataError(
            "KOS needs at least two workers, a task labelled by two or more workers and a "
            "worker who labels two or more tasks: its messages leave out each "
            f"annotation's own vote, so on this crowd ({data.n_tasks} task(s), "
            f"{data.n_workers} worker(s)) every score would be 0; use majority vote (mv)"
        )


def _sum_of_others(groups: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """For each annotation, the sum of ``values`` over the other annotations of its group."""
    return np.bincount(groups, weights=values, minlength=n_groups)[groups] - values


def _task_scores(data: CrowdData, weighted_answers: np.ndarray) -> np.ndarray:
    """Normalised per-task sums of ``A_ij y_{j->i}``."""
    return _max_normalised(
        np.bincount(data.task, weights=weighted_answers, minlength=data.n_tasks)
    )


def _max_normalised(values: np.ndarray) -> np.ndarray:
    """``values`` divided by their largest absolute value (unchanged when all are 0)."""
    largest = np.abs(values).max(initial=0.0)
    return values / largest if largest > 0 else values
