"""Bounding-box metrics: intersection over union, matching, precision / recall, mAP.

- :func:`box_iou`: the IoU matrix of two sets of boxes (area of the intersection over
  area of the union; two degenerate boxes of zero area have IoU 0), computed in a unit
  scaled by a power of two when corners near 1e308 (or 1e-300) would make the areas
  overflow (underflow).
- :func:`detection_scores`: predicted boxes matched to true boxes of the same task and
  class, greedily in decreasing score order, each true box matched at most once, a pair
  counting when its IoU reaches ``iou_threshold`` (the PASCAL VOC rule, Everingham et
  al., IJCV 2010, section 4.2); returns precision, recall and the mean IoU of the
  matched pairs.
- :func:`mean_average_precision`: for each class with a true box, the average precision
  of the ranked predictions under that matching, with VOC's all-point interpolation
  (area under the precision envelope ``p_interp(r) = max_{r' >= r} p(r')``, VOC 2010
  onwards), averaged over the classes (mAP@0.5 by default).

Box tables are DataFrames with columns ``task``, ``class``, ``x_min``, ``y_min``,
``x_max``, ``y_max`` and, for predictions, ``score`` (higher = more confident).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_COORDS = ["x_min", "y_min", "x_max", "y_max"]


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of ``a`` (n, 4) with every box of ``b`` (m, 4) -> (n, m).

    Examples
    --------
    >>> box_iou(np.array([[0, 0, 2, 2]]), np.array([[1, 0, 3, 2], [5, 5, 6, 6]]))
    array([[0.33333333, 0.        ]])
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    a, b = _in_safe_unit(a, b)
    width = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    height = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(width, 0, None) * np.clip(height, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    out = np.zeros_like(inter)
    np.divide(inter, union, out=out, where=union > 0)
    return out


#: Corners whose largest magnitude lies outside [2**-LIMIT, 2**LIMIT) are scaled first.
_SAFE_EXPONENT = 256


def _in_safe_unit(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` scaled by one power of two (exact, and IoU does not depend on the
    unit) when their largest magnitude would make widths or areas overflow (corners near
    1e308) or underflow (near 1e-300); unchanged otherwise."""
    finite = np.concatenate([a.ravel(), b.ravel()])
    finite = np.abs(finite[np.isfinite(finite)])
    largest = float(finite.max()) if finite.size else 0.0
    if largest == 0.0:
        return a, b
    exponent = int(np.frexp(largest)[1])
    if abs(exponent) <= _SAFE_EXPONENT:
        return a, b
    with np.errstate(under="ignore"):
        return np.ldexp(a, -exponent), np.ldexp(b, -exponent)


def _match(
    pred: pd.DataFrame, truth: pd.DataFrame, iou_threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """VOC matching: the predictions in decreasing score order (ties: table order), each
    one's true-positive flag and IoU with its match, their classes and scores."""
    scores = pred["score"].to_numpy(np.float64) if "score" in pred else np.ones(len(pred))
    order = np.argsort(-scores, kind="stable")
    p_task = pred["task"].to_numpy()[order]
    p_class = pred["class"].to_numpy()[order]
    p_box = pred[_COORDS].to_numpy(np.float64)[order]
    t_task = truth["task"].to_numpy()
    t_class = truth["class"].to_numpy()
    t_box = truth[_COORDS].to_numpy(np.float64)
    groups: dict[tuple[object, object], np.ndarray] = {
        key: np.asarray(rows) for key, rows in pd.Series(range(len(truth))).groupby(
            [t_task, t_class]).groups.items()
    } if len(truth) else {}  # fmt: skip
    taken = np.zeros(len(truth), dtype=bool)
    hit = np.zeros(len(order), dtype=bool)
    overlap = np.zeros(len(order))
    for k in range(len(order)):
        rows = groups.get((p_task[k], p_class[k]))
        if rows is None:
            continue
        ious = box_iou(p_box[k], t_box[rows])[0]
        best = int(np.argmax(ious))
        if ious[best] >= iou_threshold and not taken[rows[best]]:
            taken[rows[best]] = True
            hit[k] = True
            overlap[k] = ious[best]
    return hit, overlap, p_class, scores[order]


def detection_scores(
    pred: pd.DataFrame, truth: pd.DataFrame, iou_threshold: float = 0.5
) -> dict[str, float]:
    """Precision, recall and mean IoU of the matched pairs (see the module docstring).

    Returns
    -------
    dict with ``precision`` (NaN without predictions), ``recall`` (NaN without true
    boxes), ``mean_iou`` (NaN without a match), ``n_pred``, ``n_true``, ``n_matched``.

    Examples
    --------
    >>> truth = pd.DataFrame({"task": [0, 0], "class": [0, 1], "x_min": [0, 5],
    ...                       "y_min": [0, 5], "x_max": [2, 6], "y_max": [2, 6]})
    >>> pred = truth.iloc[:1].assign(score=1.0)
    >>> detection_scores(pred, truth)["recall"]
    0.5
    """
    hit, overlap, _, _ = _match(pred, truth, iou_threshold)
    n_matched = int(hit.sum())
    return {
        "precision": n_matched / len(pred) if len(pred) else float("nan"),
        "recall": n_matched / len(truth) if len(truth) else float("nan"),
        "mean_iou": float(overlap[hit].mean()) if n_matched else float("nan"),
        "n_pred": len(pred),
        "n_true": len(truth),
        "n_matched": n_matched,
    }


def average_precision(hit: np.ndarray, n_true: int) -> float:
    """All-point interpolated AP of ranked predictions (``hit``: true-positive flags in
    decreasing score order) against ``n_true`` true boxes.

    Examples
    --------
    >>> average_precision(np.array([True, False, True]), 2)
    0.8333333333333333
    """
    if n_true == 0:
        return float("nan")
    tp = np.cumsum(hit)
    precision = tp / np.arange(1, len(hit) + 1)
    recall = tp / n_true
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    steps = np.diff(np.concatenate(([0.0], recall)))
    return float(np.sum(steps * envelope))


def mean_average_precision(
    pred: pd.DataFrame, truth: pd.DataFrame, iou_threshold: float = 0.5
) -> float:
    """Mean over the classes with a true box of the VOC all-point AP (mAP@0.5 by
    default); NaN without true boxes.

    Examples
    --------
    >>> truth = pd.DataFrame({"task": [0, 1], "class": [0, 0], "x_min": [0, 0],
    ...                       "y_min": [0, 0], "x_max": [2, 2], "y_max": [2, 2]})
    >>> pred = truth.assign(score=[0.9, 0.8])
    >>> mean_average_precision(pred, truth)
    1.0
    """
    hit, _, p_class, _ = _match(pred, truth, iou_threshold)
    classes = np.unique(truth["class"].to_numpy())
    if not len(classes):
        return float("nan")
    counts = truth["class"].value_counts()
    return float(np.mean([average_precision(hit[p_class == c], int(counts[c])) for c in classes]))
