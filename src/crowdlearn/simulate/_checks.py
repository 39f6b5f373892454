"""Parameter validation shared by the simulators: one clear ValueError per problem."""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def check_int(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int of at least ``minimum``.

    Integral floats (``3.0``, as command lines and config files give) are accepted;
    booleans and other floats are refused.
    """
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {number}")
    return number


def check_real(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` as a finite float in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}")
    return number


def check_labels_per_task(name: str, value: Any, n_workers: int, workers_name: str) -> int:
    """Labels per task come from distinct workers, so there are at most ``n_workers``."""
    number = check_int(name, value)
    if number > n_workers:
        raise ValueError(
            f"{name}={number} exceeds {workers_name}={n_workers}: a task's labels come from "
            "distinct workers"
        )
    return number


def check_proportions(name: str, values: Sequence[float] | Mapping[str, float]) -> np.ndarray:
    """Non-negative finite proportions summing to 1 (to 1e-6), as a float array."""
    raw = list(values.values()) if isinstance(values, Mapping) else list(values)
    if not raw:
        raise ValueError(f"{name} is empty")
    array = np.array([check_real(f"{name} entries", v, 0.0) for v in raw])
    if not math.isclose(array.sum(), 1.0, abs_tol=1e-6):
        raise ValueError(f"{name} must sum to 1, got {array.tolist()} (sum {array.sum():.6g})")
    return array / array.sum()
