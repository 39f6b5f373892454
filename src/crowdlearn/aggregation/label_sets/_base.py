"""What every label-set aggregator shares: the estimator contract, the sparse
task/worker x annotation designs, and per-worker sensitivity and specificity.

A label-set aggregator takes a :class:`~crowdlearn.data.LabelSets` and sets
``probas_`` (n_tasks, n_classes): the probability that each class applies to each task.
``labels_`` is ``probas_ > 0.5`` (classes are not exclusive: a task may get none, one
or several).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from crowdlearn.aggregation._kind_base import KindAggregator
from crowdlearn.data import LabelSets

#: A class is in the inferred set when its probability exceeds this (a task without
#: evidence, at 0.5, is left out).
THRESHOLD = 0.5


class LabelSetAggregator(KindAggregator):
    """Base class of the label-set (multi-label) aggregators.

    Subclasses implement ``_fit(data)``, which sets ``probas_`` (n_tasks, n_classes),
    the probability that each class applies; this class checks the input and the
    numeric parameters, derives ``labels_`` (``probas_ > 0.5``), records
    ``classes_``, ``task_ids_`` and ``worker_ids_``, and provides ``predict`` and
    ``predict_proba`` (aggregation is transductive: they take no argument).

    ``worker_attributes`` names the learned per-worker arrays (first axis = worker
    code); the CLI writes them keyed by id.
    """

    data_type = LabelSets
    build_hint = (
        "build one with LabelSets.from_frame(df) (a task, worker, label frame whose label "
        "cells are sets) or LabelSets.from_arrays(task, worker, labels)"
    )
    result = "probas_"
    frame_kind = "multilabel"
    #: After a DataFrame fit: DataFrames indexed by task id, one column per class id.
    task_results = ("probas_", "labels_")

    def _fitted(self, data: LabelSets) -> None:
        self.labels_ = self.probas_ > THRESHOLD
        self.classes_ = data.classes

    def predict_proba(self) -> np.ndarray:
        """Probability that each class applies to each task, (n_tasks, n_classes)."""
        self._check_fitted()
        return self.probas_

    def predict(self) -> np.ndarray:
        """The inferred sets: bool (n_tasks, n_classes) (a bool DataFrame indexed by
        task id, one column per class id, after a fit on a DataFrame)."""
        self._check_fitted()
        return self.labels_

    def fit_predict_proba(self, data: Any) -> Any:
        """Fit and return :meth:`predict_proba` (a DataFrame indexed by task id, one
        column per class id, for a DataFrame input)."""
        return self.fit(data).predict_proba()


@dataclass(frozen=True)
class SetDesign:
    """The sparse structure of a label-set crowd that the EM steps multiply with.

    Nothing of size (n_annotations x K) is built: a label set is mostly empty, so the
    answers are kept as the list of *selected* cells (annotation's task, worker and
    class), and everything that does not depend on the answers goes through the
    (n_tasks x n_workers) count matrix of who answered what.

    Attributes
    ----------
    pairs : csr_matrix (n_tasks, n_workers)
        Number of annotations of each (task, worker).
    task, worker, label : ndarray of int
        Task, worker and class of every selected cell.
    task_cell, worker_cell : ndarray of int
        Their flat (task, class) and (worker, class) indices.
    n_answers : ndarray (n_workers,)
        Annotations of each worker.
    n_selected : ndarray (n_workers, K)
        Times each worker selected each class.
    """

    pairs: sp.csr_matrix
    task: np.ndarray
    worker: np.ndarray
    label: np.ndarray
    task_cell: np.ndarray
    worker_cell: np.ndarray
    n_answers: np.ndarray
    n_selected: np.ndarray

    @classmethod
    def of(cls, data: LabelSets) -> SetDesign:
        rows, label = np.nonzero(data.answers)
        task, worker = data.task[rows].astype(np.int64), data.worker[rows].astype(np.int64)
        pairs = sp.csr_matrix(
            (np.ones(data.n_annotations), (data.task.astype(np.int64), data.worker)),
            shape=(data.n_tasks, data.n_workers),
        )
        k = data.n_classes
        worker_cell = worker * k + label
        n_selected = np.bincount(worker_cell, minlength=data.n_workers * k)
        return cls(
            pairs=pairs,
            task=task,
            worker=worker,
            label=label,
            task_cell=task * k + label,
            worker_cell=worker_cell,
            n_answers=np.bincount(data.worker, minlength=data.n_workers).astype(np.float64),
            n_selected=n_selected.reshape(data.n_workers, k).astype(np.float64),
        )

    @property
    def shape(self) -> tuple[int, int, int]:
        """(n_tasks, n_workers, n_classes)."""
        return (*self.pairs.shape, self.n_selected.shape[1])

    def task_sums(self, unselected: np.ndarray, selected: np.ndarray) -> np.ndarray:
        """Per task and class, the sum over its annotations of ``selected[j, k]`` where
        worker ``j`` selected ``k`` and ``unselected[j, k]`` where it did not, (n_tasks,
        K): ``pairs @ unselected`` plus a bincount of the difference over the selected
        cells."""
        n_tasks, _, k = self.shape
        difference = (selected - unselected).ravel()[self.worker_cell]
        extra = np.bincount(self.task_cell, difference, minlength=n_tasks * k)
        return self.pairs @ unselected + extra.reshape(n_tasks, k)

    def rate_counts(
        self, probas: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per worker and class: hits, positives, correct rejections and negatives.

        With ``p = probas`` (n_tasks, K) the probability that each class applies: sums
        over each worker's annotations of ``y p``, ``p``, ``(1 - y)(1 - p)`` and
        ``1 - p`` (``y``: the answer), each (n_workers, K).
        """
        _, n_workers, k = self.shape
        hits = np.bincount(
            self.worker_cell, probas.ravel()[self.task_cell], minlength=n_workers * k
        ).reshape(n_workers, k)
        positives = self.pairs.T @ probas
        negatives = self.n_answers[:, None] - positives
        rejections = negatives - (self.n_selected - hits)
        return hits, positives, rejections, negatives


def vote_shares(data: LabelSets) -> np.ndarray:
    """Share of each task's annotations that selected each class (0 for a task without
    annotations), (n_tasks, n_classes)."""
    k = data.n_classes
    rows, label = np.nonzero(data.answers)
    counts = np.bincount(
        data.task[rows].astype(np.int64) * k + label, minlength=data.n_tasks * k
    ).reshape(data.n_tasks, k)
    sizes = np.bincount(data.task, minlength=data.n_tasks)
    return counts / np.maximum(sizes, 1)[:, None]


def posterior_rates(
    data: LabelSets, probas: np.ndarray, smoothing: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's sensitivity and specificity per class against soft truths.

    ``sensitivity[j, k] = (sum_a y_ak p_ik + s) / (sum_a p_ik + 2 s)`` over worker
    ``j``'s annotations ``a`` (of task ``i``), with ``p = probas`` the probability that
    class ``k`` applies; ``specificity`` the same with ``1 - y`` and ``1 - p``. The
    pseudo-count ``s`` (Laplace with 1) keeps both defined (0.5) where a worker saw no
    mass of that kind.

    Returns
    -------
    sensitivity, specificity : ndarray of shape (n_workers, n_classes)
    """
    hits, positives, rejections, negatives = SetDesign.of(data).rate_counts(probas)
    sensitivity = (hits + smoothing) / (positives + 2 * smoothing)
    specificity = (rejections + smoothing) / (negatives + 2 * smoothing)
    return sensitivity, specificity
