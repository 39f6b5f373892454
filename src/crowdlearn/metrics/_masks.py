"""Overlap of binary masks: intersection over union (Jaccard) and Dice.

``iou(a, b) = |a & b| / |a | b|`` (Jaccard 1912) and ``dice(a, b) = 2 |a & b| /
(|a| + |b|)`` (Dice 1945); two empty masks overlap fully (1.0).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _pair(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if x.shape != y.shape:
        raise ValueError(f"the masks differ in shape: {x.shape} and {y.shape}")
    return x, y


def iou(a: Any, b: Any) -> float:
    """Intersection over union of two bool masks of the same shape (1.0 when both are
    empty).

    >>> iou([[1, 1], [0, 0]], [[1, 0], [0, 0]])
    0.5
    """
    x, y = _pair(a, b)
    union = int(np.count_nonzero(x | y))
    return 1.0 if union == 0 else int(np.count_nonzero(x & y)) / union


def dice(a: Any, b: Any) -> float:
    """Dice coefficient of two bool masks of the same shape (1.0 when both are empty).

    >>> round(dice([[1, 1], [0, 0]], [[1, 0], [0, 0]]), 4)
    0.6667
    """
    x, y = _pair(a, b)
    total = int(np.count_nonzero(x)) + int(np.count_nonzero(y))
    return 1.0 if total == 0 else 2 * int(np.count_nonzero(x & y)) / total
