"""Worker groups of :func:`crowd_on_features`: one confusion generator per behaviour.

Each generator takes ``(rng, n_workers, n_classes, **params)`` and returns a stack of
row-stochastic matrices. ``accuracy`` parameters are either a number (every worker of the
group has it) or a ``(low, high)`` pair (each worker draws it uniformly in between).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from crowdlearn.simulate._checks import check_real
from crowdlearn.simulate._matrices import cyclic_derangements, spread_errors, uniform_rows

Accuracy = float | tuple[float, float]

#: Default parameters of each group; ``group_params`` overrides them key by key.
GROUP_DEFAULTS: dict[str, dict[str, Any]] = {
    "expert": {"accuracy": (0.85, 0.98), "error_concentration": 1.0},
    "inexpert": {"accuracy": (0.5, 0.75), "error_concentration": 1.0},
    "spammer": {},
    "adversarial": {"accuracy": (0.0, 0.15), "target_share": 0.8, "error_concentration": 1.0},
    "class_confuser": {"accuracy": 0.9, "pair_confusion": 0.6, "error_concentration": 1.0},
}


def _draw_accuracy(rng: np.random.Generator, accuracy: Accuracy, n_workers: int) -> np.ndarray:
    if isinstance(accuracy, (tuple, list)):
        if len(accuracy) != 2:
            raise ValueError(f"accuracy must be a number or a (low, high) pair, got {accuracy!r}")
        low = check_real("accuracy low", accuracy[0], 0.0, 1.0)
        high = check_real("accuracy high", accuracy[1], low, 1.0)
        return rng.uniform(low, high, size=n_workers)
    return np.full(n_workers, check_real("accuracy", accuracy, 0.0, 1.0))


def _accurate(
    rng: np.random.Generator,
    n_workers: int,
    n_classes: int,
    *,
    accuracy: Accuracy,
    error_concentration: float,
) -> np.ndarray:
    """Experts and inexperts: the true class with probability ``accuracy``, otherwise
    another class (error shares drawn from Dirichlet(``error_concentration``))."""
    concentration = check_real("error_concentration", error_concentration, 1e-6)
    return spread_errors(rng, _draw_accuracy(rng, accuracy, n_workers), n_classes, concentration)


def _spammer(rng: np.random.Generator, n_workers: int, n_classes: int) -> np.ndarray:
    """Spammers: every label equally likely whatever the true class."""
    return uniform_rows(n_workers, n_classes)


def _adversarial(
    rng: np.random.Generator,
    n_workers: int,
    n_classes: int,
    *,
    accuracy: Accuracy,
    target_share: float,
    error_concentration: float,
) -> np.ndarray:
    """Systematically wrong workers: true class with probability ``accuracy``; of the
    error mass, ``target_share`` goes to the class a fixed per-worker derangement maps
    the true class to, the rest is spread over the other classes."""
    share = check_real("target_share", target_share, 0.0, 1.0)
    confusions = _accurate(
        rng,
        n_workers,
        n_classes,
        accuracy=accuracy,
        error_concentration=error_concentration,
    )
    error = 1.0 - np.diagonal(confusions, axis1=1, axis2=2)
    target = cyclic_derangements(rng, n_workers, n_classes)
    confusions[:, ~np.eye(n_classes, dtype=bool)] *= 1.0 - share
    workers = np.arange(n_workers)[:, None]
    confusions[workers, np.arange(n_classes), target] += share * error
    return confusions


def _class_confuser(
    rng: np.random.Generator,
    n_workers: int,
    n_classes: int,
    *,
    accuracy: Accuracy,
    pair_confusion: float,
    error_concentration: float,
) -> np.ndarray:
    """Accurate workers who mix up one random pair of classes ``(a, b)``: rows ``a`` and
    ``b`` give the other class of the pair with probability at least ``pair_confusion``
    (the row becomes ``(1 - pair_confusion) * row + pair_confusion * one_hot(partner)``)."""
    mix = check_real("pair_confusion", pair_confusion, 0.0, 1.0)
    confusions = _accurate(
        rng,
        n_workers,
        n_classes,
        accuracy=accuracy,
        error_concentration=error_concentration,
    )
    first = rng.integers(n_classes, size=n_workers)
    second = (first + rng.integers(1, n_classes, size=n_workers)) % n_classes
    workers = np.arange(n_workers)
    for row, partner in ((first, second), (second, first)):
        confusions[workers, row] *= 1.0 - mix
        confusions[workers, row, partner] += mix
    return confusions


GROUP_GENERATORS: dict[str, Callable[..., np.ndarray]] = {
    "expert": _accurate,
    "inexpert": _accurate,
    "spammer": _spammer,
    "adversarial": _adversarial,
    "class_confuser": _class_confuser,
}


def resolve_group_params(
    groups: Mapping[str, float], group_params: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """Defaults of each group in ``groups``, updated by ``group_params``."""
    unknown = [name for name in groups if name not in GROUP_DEFAULTS]
    if unknown:
        raise ValueError(f"unknown worker groups {unknown}; the groups are {list(GROUP_DEFAULTS)}")
    overrides = dict(group_params or {})
    stray = [name for name in overrides if name not in groups]
    if stray:
        raise ValueError(f"group_params names groups {stray} that are not in groups")
    resolved = {}
    for name in groups:
        params = dict(GROUP_DEFAULTS[name])
        extra = [key for key in overrides.get(name, {}) if key not in params]
        if extra:
            raise ValueError(
                f"unknown parameters {extra} for group {name!r}; it takes {list(params)}"
            )
        params.update(overrides.get(name, {}))
        resolved[name] = params
    return resolved


def group_confusions(
    rng: np.random.Generator, group: str, n_workers: int, n_classes: int, params: dict[str, Any]
) -> np.ndarray:
    """Confusion matrices of ``n_workers`` workers of one group."""
    return GROUP_GENERATORS[group](rng, n_workers, n_classes, **params)
