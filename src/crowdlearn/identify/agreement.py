"""Agreement between workers: Krippendorff's alpha, per-class agreement, effort and workload.

Krippendorff's alpha for nominal data (Krippendorff, *Content Analysis*, 2004, ch. 11;
"Computing Krippendorff's alpha-reliability", 2011) is computed from the coincidence
matrix ``o`` built from the sparse vote counts ``n_uc`` (task ``u``, class ``c``, ``m_u``
labels on the task); only tasks with at least two labels are *pairable*::

    o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)
    n_c  = sum_k o_ck,   n = sum_c n_c
    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k

Missing values are the normal case (each worker labels a few tasks): nothing dense over
tasks x workers is built, the coincidences are one sparse product.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from crowdlearn.data import CrowdData
from crowdlearn.data._memory import array_bytes, check_allocation


def coincidences(data: CrowdData) -> np.ndarray:
    """Krippendorff's coincidence matrix ``o`` (K x K) of the pairable tasks.

    Parameters
    ----------
    data : CrowdData

    Returns
    -------
    ndarray of shape (n_classes, n_classes)
        ``o[c, k]``: number of pairable (c, k) value pairs, each task weighted by
        ``1 / (m_u - 1)``; the matrix is symmetric and sums to the number of labels on
        pairable tasks.

    Examples
    --------
    >>> data = CrowdData.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], ["a", "a", "a", "b"])
    >>> coincidences(data)
    array([[2., 1.],
           [1., 0.]])
    """
    k = data.n_classes
    # The dense K x K result and its diagonal correction.
    check_allocation(array_bytes([2, k, k]), f"the {k} x {k} coincidence matrix")
    counts = data.vote_counts.astype(np.float64)
    sizes = np.asarray(counts.sum(axis=1)).ravel()
    pairable = sizes >= 2
    weights = np.zeros_like(sizes)
    weights[pairable] = 1.0 / (sizes[pairable] - 1.0)
    weighted = sp.diags(weights) @ counts
    pairs = np.asarray((counts.T @ weighted).todense())
    pairs -= np.diag(np.asarray(weighted.sum(axis=0)).ravel())
    return pairs


def krippendorff_alpha(data: CrowdData) -> float:
    """Krippendorff's alpha for nominal labels (1: full agreement, 0: chance level).

    Parameters
    ----------
    data : CrowdData

    Returns
    -------
    float
        ``1 - D_o / D_e``; NaN when no task has two labels or when a single class was
        ever given (the expected disagreement is then 0, alpha is undefined).

    Examples
    --------
    >>> data = CrowdData.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], ["a", "a", "b", "b"])
    >>> krippendorff_alpha(data)
    1.0
    """
    pairs = coincidences(data)
    totals = pairs.sum(axis=1)
    n = totals.sum()
    expected = n * n - np.sum(totals**2)
    if n < 2 or expected <= 0:
        return float("nan")
    observed = n - np.trace(pairs)
    return float(1.0 - (n - 1.0) * observed / expected)


def class_agreement(data: CrowdData) -> np.ndarray:
    """Per-class agreement: the share of the pairable labels of class ``k`` whose pair
    partner on the same task is also ``k`` (``o_kk / n_k``).

    Parameters
    ----------
    data : CrowdData

    Returns
    -------
    ndarray of shape (n_classes,)
        In [0, 1]; NaN for classes without a pairable label.

    Examples
    --------
    >>> data = CrowdData.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], ["a", "a", "a", "b"])
    >>> class_agreement(data)
    array([0.66666667, 0.        ])
    """
    pairs = coincidences(data)
    totals = pairs.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, np.diag(pairs) / totals, np.nan)


def feedback_effort(data: CrowdData) -> np.ndarray:
    """Number of labels of each task (shape ``(n_tasks,)``)."""
    return np.asarray(data.feedback_effort, dtype=np.float64)


def workload(data: CrowdData) -> np.ndarray:
    """Number of labels of each worker (shape ``(n_workers,)``)."""
    return np.asarray(data.workload, dtype=np.float64)


def agreement_with_labels(data: CrowdData, labels: np.ndarray) -> np.ndarray:
    """Share of each worker's labels equal to ``labels`` of their task (e.g. an aggregate).

    Parameters
    ----------
    data : CrowdData
    labels : ndarray of shape (n_tasks,)
        Class codes per task; entries ``< 0`` (unknown) are left out.

    Returns
    -------
    ndarray of shape (n_workers,)
        NaN for workers without a task of known label.
    """
    labels = np.asarray(labels)
    target = labels[data.task]
    known = target >= 0
    agree = np.bincount(
        data.worker[known],
        weights=(data.label[known] == target[known]).astype(np.float64),
        minlength=data.n_workers,
    )
    seen = np.bincount(data.worker[known], minlength=data.n_workers).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(seen > 0, agree / seen, np.nan)
