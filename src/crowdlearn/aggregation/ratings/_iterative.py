"""The loop shared by the iterative ratings aggregators (truth <-> worker weights)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crowdlearn.aggregation.ratings._base import relative_change


def iterate(
    values: np.ndarray,
    step: Callable[[np.ndarray], np.ndarray],
    max_iter: int,
    tol: float,
    scale: float,
) -> tuple[np.ndarray, int, bool]:
    """Apply ``step`` (current values -> new values) until the largest change of a task's
    value is below ``tol * scale`` or ``max_iter`` steps have run.

    Returns the final values, the number of steps and whether the tolerance was met.
    """
    for iteration in range(1, max_iter + 1):
        new = step(values)
        change = relative_change(new, values, scale)
        values = new
        if change < tol:
            return values, iteration, True
    return values, max_iter, False
