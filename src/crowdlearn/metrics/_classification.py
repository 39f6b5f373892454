"""Metrics comparing predictions (hard labels or class probabilities) with a truth."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from crowdlearn.data import CrowdData


def _known(y_true: Any, predictions: Any) -> tuple[np.ndarray, np.ndarray]:
    """Truth and predictions restricted to entries whose truth is known (>= 0)."""
    if isinstance(y_true, CrowdData):
        if y_true.truth is None:
            raise ValueError("the data have no truth to evaluate against")
        y_true = y_true.truth
    truth = np.asarray(y_true)
    predictions = np.asarray(predictions)
    if truth.ndim != 1:
        raise ValueError(f"the truth must be 1-D class codes, got shape {truth.shape}")
    if len(predictions) != len(truth):
        raise ValueError(
            f"{len(predictions)} predictions for {len(truth)} truth entries; they must align"
        )
    known = truth >= 0
    if not known.any():
        raise ValueError("no entry has a known truth (all are -1)")
    return truth[known].astype(np.int64), predictions[known]


def _hard(predictions: np.ndarray) -> np.ndarray:
    """Class codes from hard labels or from (n, K) probabilities (argmax, first on ties)."""
    if predictions.ndim == 2:
        return predictions.argmax(axis=1)
    if predictions.ndim != 1:
        raise ValueError(
            f"predictions must be labels (n,) or probabilities (n, K), got "
            f"shape {predictions.shape}"
        )
    return predictions.astype(np.int64)


def _probabilities(predictions: np.ndarray) -> np.ndarray:
    if predictions.ndim != 2:
        raise ValueError(
            f"this metric needs class probabilities (n, K), got shape {predictions.shape}"
        )
    return predictions.astype(np.float64)


def accuracy(y_true: Any, y_pred: Any) -> float:
    """Share of entries whose predicted class is the true class.

    Parameters
    ----------
    y_true : array of int or CrowdData
        True class codes, ``-1`` where unknown (left out); a CrowdData gives its truth.
    y_pred : array of shape (n,) or (n, K)
        Predicted class codes, or probabilities (their argmax is the prediction).

    Examples
    --------
    >>> accuracy([0, 1, 1, -1], [0, 1, 0, 1])
    0.6666666666666666
    """
    truth, predictions = _known(y_true, y_pred)
    return float(np.mean(_hard(predictions) == truth))


def acc_train(data: Any, aggregated: Any, ties: Literal["first", "expected"] = "first") -> float:
    """AccTrain (peerannot, sec. 3.2): accuracy of aggregated labels on the training tasks.

    Parameters
    ----------
    data : CrowdData or array of int
        The crowd data (its truth is used) or the true class codes, -1 where unknown.
    aggregated : array of shape (n_tasks,) or (n_tasks, K)
        Hard labels or soft labels (probabilities or scores) for each task.
    ties : {"first", "expected"}, default "first"
        For soft labels with several maximal classes: count the first (lowest) one,
        or the expected accuracy when the tie is broken uniformly at random.

    Examples
    --------
    >>> acc_train([0, 1], [[0.5, 0.5], [0.2, 0.8]], ties="expected")
    0.75
    """
    truth, predictions = _known(data, aggregated)
    if ties == "first" or predictions.ndim == 1:
        return float(np.mean(_hard(predictions) == truth))
    if ties != "expected":
        raise ValueError(f"ties must be 'first' or 'expected', got {ties!r}")
    scores = _probabilities(predictions)
    is_max = np.isclose(scores, scores.max(axis=1, keepdims=True), rtol=0, atol=1e-12)
    hit = is_max[np.arange(len(truth)), truth]
    return float(np.mean(hit / is_max.sum(axis=1)))


def macro_f1(y_true: Any, y_pred: Any, n_classes: int | None = None) -> float:
    """Macro-averaged F1 score over all ``n_classes`` classes (absent classes score 0).

    Parameters
    ----------
    y_true : array of int or CrowdData
    y_pred : array of shape (n,) or (n, K)
    n_classes : int, optional
        Number of classes; default the width of ``y_pred`` when it is (n, K), else one
        more than the largest class seen.
    """
    # scikit-learn takes about a second to import: only this metric needs it
    from sklearn.metrics import f1_score

    truth, predictions = _known(y_true, y_pred)
    hard = _hard(predictions)
    if n_classes is None:
        n_classes = (
            predictions.shape[1]
            if predictions.ndim == 2
            else int(max(truth.max(), hard.max()) + 1)
        )
    return float(
        f1_score(truth, hard, labels=np.arange(n_classes), average="macro", zero_division=0)
    )


def expected_calibration_error(y_true: Any, probas: Any, n_bins: int = 15) -> float:
    """Expected calibration error of the top-class confidence (equal-width bins).

    ``sum_b |B_b| / n * |accuracy(B_b) - mean confidence(B_b)|`` over ``n_bins`` bins
    of the predicted class's probability.
    """
    truth, predictions = _known(y_true, probas)
    scores = _probabilities(predictions)
    confidence = scores.max(axis=1)
    correct = scores.argmax(axis=1) == truth
    bins = np.clip(np.ceil(confidence * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    gap = np.abs(
        np.bincount(bins, weights=correct, minlength=n_bins)
        - np.bincount(bins, weights=confidence, minlength=n_bins)
    )
    return float(gap.sum() / count.sum())


def negative_log_likelihood(y_true: Any, probas: Any, eps: float = 1e-12) -> float:
    """Mean negative log-probability of the true class (probabilities clipped at ``eps``)."""
    truth, predictions = _known(y_true, probas)
    scores = _probabilities(predictions)
    return float(-np.mean(np.log(np.clip(scores[np.arange(len(truth)), truth], eps, None))))
