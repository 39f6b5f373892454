"""Metrics specific to crowd data: imbalance, confusion-matrix divergences, certainty."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import jensenshannon

from crowdlearn.data import CrowdData


def imbalance_ratio(labels: Any, n_classes: int | None = None) -> float:
    """Class-imbalance ratio: the count of the most frequent class over the count of the
    least frequent one, ``N_max / N_min``.

    The usual meaning, and the one of ``crowdlearn simulate --imbalance-ratio`` and
    :func:`crowdlearn.simulate.make_imbalanced`: 1 for balanced labels, 10 when the
    largest class is ten times the smallest. A class with no label makes it infinite.
    Self-Crowd's R, a different quantity, is :func:`self_crowd_r`.

    Parameters
    ----------
    labels : array of int or CrowdData
        Class codes (entries ``< 0`` are ignored, so a truth array can be passed as
        is); a CrowdData gives its annotations' labels and its number of classes.
    n_classes : int, optional
        Number of classes; default one more than the largest label.

    Returns
    -------
    float
        ``N_max / N_min`` (``inf`` when some class has no label).

    Examples
    --------
    >>> imbalance_ratio([0, 0, 0, 1], n_classes=2)
    3.0
    >>> imbalance_ratio([0, 1, 2], n_classes=4)
    inf
    """
    counts = _class_counts(labels, n_classes, "the imbalance ratio")
    if counts.min() == 0:
        return float("inf")
    return float(counts.max() / counts.min())


def self_crowd_r(labels: Any, n_classes: int | None = None) -> float:
    """Self-Crowd's class-imbalance measure R = (N_max - N_min) / N (Self-Crowd paper,
    eq. 6).

    ``N_max`` and ``N_min`` are the counts of the most and least frequent class among
    ``N`` labels; R is 0 for perfectly balanced labels and approaches 1 when one class
    takes everything. A class with no label counts as ``N_min = 0``. Not to be
    confused with :func:`imbalance_ratio` (``N_max / N_min``).

    Parameters
    ----------
    labels : array of int or CrowdData
        Class codes (entries ``< 0`` are ignored, so a truth array can be passed as
        is); a CrowdData gives its annotations' labels and its number of classes.
    n_classes : int, optional
        Number of classes; default one more than the largest label.

    Returns
    -------
    float
        R, in [0, 1].

    Examples
    --------
    >>> self_crowd_r([0, 0, 0, 1], n_classes=2)
    0.5
    >>> self_crowd_r([0, 1, 2], n_classes=4)
    0.3333333333333333
    """
    counts = _class_counts(labels, n_classes, "Self-Crowd's R")
    return float((counts.max() - counts.min()) / counts.sum())


def _class_counts(labels: Any, n_classes: int | None, what: str) -> np.ndarray:
    """Label count per class (codes < 0 ignored); a CrowdData gives its annotations."""
    if isinstance(labels, CrowdData):
        n_classes = labels.n_classes if n_classes is None else n_classes
        labels = labels.label
    codes = np.asarray(labels)
    codes = codes[codes >= 0].astype(np.int64)
    if len(codes) == 0:
        raise ValueError(f"{what} needs at least one label")
    if n_classes is None:
        n_classes = int(codes.max()) + 1
    return np.bincount(codes, minlength=n_classes)


def js_divergence(p: Any, q: Any, base: float = 2.0) -> np.ndarray | float:
    """Jensen-Shannon divergence between distributions along the last axis.

    With ``base=2`` (default) it lies in [0, 1]. Inputs are normalised to sum to one.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    divergence = jensenshannon(p, q, base=base, axis=-1) ** 2
    return float(divergence) if np.ndim(divergence) == 0 else divergence


def confusion_js(true: Any, estimated: Any, row_weights: Any = None) -> np.ndarray | float:
    """Divergence between confusion matrices: mean over rows of the rows' JS divergence.

    Parameters
    ----------
    true, estimated : array of shape (..., K, K)
        Row-stochastic confusion matrices (row = true class).
    row_weights : array of shape (..., K), optional
        Weight of each row (e.g. how many annotations each true class has); default
        equal weights. Rows of zero weight do not count.
    """
    per_row = np.asarray(js_divergence(true, estimated))
    if row_weights is None:
        return _scalar(per_row.mean(axis=-1))
    weights = np.broadcast_to(np.asarray(row_weights, dtype=np.float64), per_row.shape)
    total = weights.sum(axis=-1)
    if np.any(total <= 0):
        raise ValueError("every matrix needs a row with positive weight")
    return _scalar((per_row * weights).sum(axis=-1) / total)


def individual_js(true: Any, estimated: Any, row_weights: Any = None) -> float:
    """I-JS (CMM paper, sec. 5): mean over workers of the JS divergence between each
    worker's true and estimated confusion matrices.

    Parameters
    ----------
    true, estimated : array of shape (n_workers, K, K)
    row_weights : array of shape (n_workers, K) or (n_workers,), optional
        Per-row weights (see :func:`confusion_js`); with per-worker weights the mean
        over workers is weighted too. Workers whose weights are all zero are skipped.
    """
    true = np.asarray(true, dtype=np.float64)
    if row_weights is None:
        return float(np.mean(confusion_js(true, estimated)))
    weights = np.asarray(row_weights, dtype=np.float64)
    if weights.ndim == 1:
        per_worker = np.asarray(confusion_js(true, estimated))
        return float(np.average(per_worker, weights=weights))
    used = weights.sum(axis=1) > 0
    estimated = np.asarray(estimated, dtype=np.float64)
    return float(np.mean(confusion_js(true[used], estimated[used], weights[used])))


def global_confusion(confusions: Any, weights: Any = None) -> np.ndarray:
    """The crowd's global confusion matrix: a weighted average of workers' matrices.

    Parameters
    ----------
    confusions : array of shape (n_workers, K, K)
    weights : array of shape (n_workers,) or (n_workers, K), optional
        Weight of each worker, or of each (worker, true class) row, e.g. the number of
        annotations; default equal weights. Rows are renormalised to sum to one.
    """
    confusions = np.asarray(confusions, dtype=np.float64)
    if weights is None:
        weights = np.ones(confusions.shape[:2])
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 1:
        weights = np.repeat(weights[:, None], confusions.shape[1], axis=1)
    summed = np.einsum("wk,wkl->kl", weights, confusions)
    return _normalise_rows(summed)


def global_js(true_global: Any, estimated_global: Any) -> float:
    """G-JS (CMM paper, sec. 5): JS divergence between two global confusion matrices."""
    return float(confusion_js(true_global, estimated_global))


def empirical_confusions(
    data: CrowdData, per_worker: bool = True, return_counts: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Confusion matrices measured against the known truth.

    Entry ``[w, k, l]`` is the share of worker ``w``'s annotations on tasks of true
    class ``k`` that say ``l``. Rows without any such annotation are uniform (use the
    counts as weights to leave them out of divergences).

    Parameters
    ----------
    data : CrowdData
        Must have truth; ``per_worker=True`` needs worker ids.
    per_worker : bool, default True
        One matrix per worker (n_workers, K, K), or one global matrix (K, K) over all
        annotations (works for anonymous data).
    return_counts : bool
        Also return the row counts, shape (n_workers, K) or (K,).
    """
    if data.truth is None:
        raise ValueError("empirical confusions need the truth of some tasks")
    if per_worker and data.worker is None:
        raise ValueError("anonymous data have no per-worker confusions; use per_worker=False")
    k = data.n_classes
    truth = data.truth[data.task]
    known = truth >= 0
    cell = truth[known].astype(np.int64) * k + data.label[known]
    n_groups = data.n_workers if per_worker else 1
    if per_worker:
        cell += data.worker[known].astype(np.int64) * k * k
    counts = np.bincount(cell, minlength=n_groups * k * k).reshape(n_groups, k, k)
    confusions = _normalise_rows(counts.astype(np.float64))
    row_counts = counts.sum(axis=2)
    if not per_worker:
        confusions, row_counts = confusions[0], row_counts[0]
    return (confusions, row_counts) if return_counts else confusions


def label_certainty(data: Any, eps: float = 1e-6) -> np.ndarray:
    """ICED's label certainty score S(x_i) = 1 / (E_u ||y_i - E_u y_i||^2 + eps) (eq. 2.4).

    Labels are one-hot vectors, so the expected squared deviation is
    ``1 - sum_k p_k^2`` with ``p`` the task's vote frequencies (the multi-class form
    of the paper's multinomial variance; for two classes it is twice the Bernoulli
    variance p(1-p) of scalar 0/1 labels). It is largest for unanimous tasks and
    smallest for ties.

    Parameters
    ----------
    data : CrowdData or array of shape (n_tasks, K)
        The annotations, or per-task vote counts.
    eps : float
        Keeps unanimous tasks finite (their score is ``1 / eps``).

    Returns
    -------
    ndarray of shape (n_tasks,)
        NaN for tasks without annotations.
    """
    counts = data.vote_counts if isinstance(data, CrowdData) else data
    counts = counts.toarray() if sp.issparse(counts) else np.asarray(counts)
    counts = counts.astype(np.float64)
    totals = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        frequencies = counts / totals[:, None]
        spread = 1.0 - np.sum(frequencies**2, axis=1)
    return np.where(totals > 0, 1.0 / (np.clip(spread, 0.0, None) + eps), np.nan)


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows divided by their sums; all-zero rows become uniform."""
    sums = matrix.sum(axis=-1, keepdims=True)
    uniform = np.full_like(matrix, 1.0 / matrix.shape[-1])
    return np.divide(matrix, sums, out=uniform, where=sums > 0)


def _scalar(value: np.ndarray) -> np.ndarray | float:
    return float(value) if np.ndim(value) == 0 else value
