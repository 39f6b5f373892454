"""What every label-set aggregator shares: the estimator contract, the sparse
task/worker x annotation designs, and per-worker sensitivity and specificity.

A label-set aggregator takes a :class:`~crowdlearn.data.LabelSets` and sets
``probas_`` (n_tasks, n_classes): the probability that each class applies to each task.
``labels_`` is ``probas_ > 0.5`` (classes are not exclusive: a task may get none, one
or several).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from crowdlearn._bounds import check_params
from crowdlearn.data import LabelSets

#: A class is in the inferred set when its probability exceeds this (a task without
#: evidence, at 0.5, is left out).
THRESHOLD = 0.5


class LabelSetAggregator(BaseEstimator):
    """Base class of the label-set (multi-label) aggregators.

    Subclasses implement ``_fit(data)``, which sets ``probas_`` (n_tasks, n_classes),
    the probability that each class applies; this class checks the input and the
    numeric parameters, derives ``labels_`` (``probas_ > 0.5``), records
    ``classes_``, ``task_ids_`` and ``worker_ids_``, and provides ``predict`` and
    ``predict_proba`` (aggregation is transductive: they take no argument).

    ``worker_attributes`` names the learned per-worker arrays (first axis = worker
    code); the CLI writes them keyed by id.
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ()

    def fit(self, data: LabelSets) -> LabelSetAggregator:
        """Infer the set of classes of every task in ``data``; returns ``self``."""
        if not isinstance(data, LabelSets):
            raise TypeError(
                f"{type(self).__name__}.fit expects a LabelSets, got {type(data).__name__}; "
                "build one with LabelSets.from_frame(df) (a task, worker, label frame whose "
                "label cells are sets) or LabelSets.from_arrays(task, worker, labels)"
            )
        check_params(type(self).__name__, self.get_params(deep=False))
        self._fit(data)
        self.labels_ = self.probas_ > THRESHOLD
        self.classes_ = data.classes
        self.task_ids_ = data.task_ids
        self.worker_ids_ = data.worker_ids
        return self

    def _fit(self, data: LabelSets) -> None:
        raise NotImplementedError

    def predict_proba(self) -> np.ndarray:
        """Probability that each class applies to each task, (n_tasks, n_classes)."""
        self._check_fitted()
        return self.probas_

    def predict(self) -> np.ndarray:
        """The inferred sets: bool (n_tasks, n_classes)."""
        self._check_fitted()
        return self.labels_

    def _check_fitted(self) -> None:
        if not hasattr(self, "probas_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")


def indicator(codes: np.ndarray, n_rows: int) -> sp.csr_matrix:
    """The (n_rows x n_annotations) 0/1 matrix with a one at (codes[a], a): products
    with it sum per-annotation rows by task or by worker."""
    n = len(codes)
    return sp.csr_matrix((np.ones(n), (codes.astype(np.int64), np.arange(n))), shape=(n_rows, n))


def vote_shares(data: LabelSets) -> np.ndarray:
    """Share of each task's annotations that selected each class (0 for a task without
    annotations), (n_tasks, n_classes)."""
    by_task = indicator(data.task, data.n_tasks)
    counts = by_task @ data.answers.astype(np.float64)
    sizes = np.asarray(by_task.sum(axis=1)).ravel()
    return counts / np.maximum(sizes, 1)[:, None]


def rate_counts(
    by_worker: sp.csr_matrix, answers: np.ndarray, present: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per worker and class: hits, positives, correct rejections and negatives.

    ``answers`` (n_annotations, K) are the 0/1 answers and ``present`` the probability
    that each annotation's class applies to its task (``probas[data.task]``); sums of
    ``y p``, ``p``, ``(1 - y)(1 - p)`` and ``1 - p`` over each worker's annotations,
    each (n_workers, K), as four sparse products.
    """
    hits = by_worker @ (answers * present)
    positives = by_worker @ present
    absent = 1 - present
    rejections = by_worker @ ((1 - answers) * absent)
    negatives = by_worker @ absent
    return hits, positives, rejections, negatives


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
    hits, positives, rejections, negatives = rate_counts(
        indicator(data.worker, data.n_workers),
        data.answers.astype(np.float64),
        probas[data.task],
    )
    sensitivity = (hits + smoothing) / (positives + 2 * smoothing)
    specificity = (rejections + smoothing) / (negatives + 2 * smoothing)
    return sensitivity, specificity
