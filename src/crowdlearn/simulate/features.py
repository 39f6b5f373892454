"""Simulated crowds on real features, and class imbalance by subsampling.

:func:`crowd_on_features` keeps a data set's instances and true classes and replaces the
human annotators by a simulated crowd made of behaviour groups (experts, inexperts,
spammers, adversarial workers, class confusers), with a sparse, possibly skewed
assignment of tasks. It extends peerannot's simulations (section 3.2 of its paper) to
real feature matrices, so learning-from-crowds methods can be evaluated with a known
truth. :func:`make_imbalanced` subsamples a data set to a chosen imbalance ratio.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from crowdlearn.simulate._assign import assign_workers, keep_random_quota
from crowdlearn.simulate._checks import (
    check_int,
    check_labels_per_task,
    check_proportions,
    check_real,
)
from crowdlearn.simulate._draw import draw_labels
from crowdlearn.simulate._groups import group_confusions, resolve_group_params
from crowdlearn.simulate._result import Simulated, simulated

#: Default composition of the crowd of :func:`crowd_on_features`.
DEFAULT_GROUPS: dict[str, float] = {
    "expert": 0.2,
    "inexpert": 0.5,
    "spammer": 0.2,
    "adversarial": 0.05,
    "class_confuser": 0.05,
}


def crowd_on_features(
    X: Any,
    y: Any,
    *,
    n_workers: int = 50,
    groups: Mapping[str, float] | None = None,
    labels_per_task: float = 3,
    labels_per_task_dist: Literal["fixed", "poisson"] = "fixed",
    load_skew: float = 0.0,
    imbalance_ratio: float | None = None,
    group_params: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int | None = 0,
    return_info: bool = False,
) -> Simulated:
    """Simulate a crowd of behaviour groups labelling the instances of ``(X, y)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, ...)
        Features; they become ``data.features`` (row ``i`` is task ``i``).
    y : array-like of shape (n_samples,)
        True class of each instance, any sortable labels (no missing values).
    n_workers : int
        Size of the crowd.
    groups : mapping of group name to proportion, optional
        Composition of the crowd; default :data:`DEFAULT_GROUPS`
        (``expert`` 0.2, ``inexpert`` 0.5, ``spammer`` 0.2, ``adversarial`` 0.05,
        ``class_confuser`` 0.05). Proportions must sum to 1. Group sizes follow the
        largest remainder rule; every group with a positive proportion has at least one
        worker when ``n_workers`` allows. Workers are shuffled, so codes do not reveal
        groups.
    labels_per_task : number
        With ``labels_per_task_dist="fixed"``, the (integer) number of labels of every
        task; with ``"poisson"``, their mean: each task gets ``1 + Poisson(labels_per_task
        - 1)`` labels, clipped to ``n_workers``.
    labels_per_task_dist : {"fixed", "poisson"}
    load_skew : float >= 0
        Power-law workload: workers are ranked at random and the chance that worker of
        rank ``r`` (0-based) is drawn is proportional to ``(r + 1) ** -load_skew``
        (tasks still get distinct workers). 0 draws workers uniformly.
    imbalance_ratio : float >= 1, optional
        First subsample ``(X, y)`` with :func:`make_imbalanced` to this ratio of the
        largest to the smallest class.
    group_params : mapping of group name to parameters, optional
        Override the defaults of :data:`GROUP_DEFAULTS` for the groups present.
        Group behaviours (``accuracy`` is a number, or a ``(low, high)`` range drawn
        uniformly per worker):

        - ``expert``: the true class with probability ``accuracy`` (default
          ``(0.85, 0.98)``); otherwise another class, with error shares per row drawn
          from Dirichlet(``error_concentration``, default 1).
        - ``inexpert``: the same with ``accuracy`` ``(0.5, 0.75)``.
        - ``spammer``: uniformly random answers (no parameters).
        - ``adversarial``: systematically wrong: ``accuracy`` ``(0.0, 0.15)``, and a
          share ``target_share`` (default 0.8) of the error goes to the class a fixed
          per-worker derangement maps the true class to.
        - ``class_confuser``: ``accuracy`` 0.9 but one random pair of classes is mixed
          up: each class of the pair is answered as the other with probability at least
          ``pair_confusion`` (default 0.6).
    seed : int or None
        Seed of ``numpy.random.default_rng``; the same seed gives the same crowd.
    return_info : bool
        Also return a :class:`SimulationInfo`; its ``params`` hold the resolved group
        parameters, the group sizes and, with ``imbalance_ratio``, ``kept_indices``
        (the rows of the original ``X`` that became tasks ``0..n-1``).

    Returns
    -------
    CrowdData, or (CrowdData, SimulationInfo) when ``return_info``
        Task ids are ``0..n-1`` and index the rows of ``X`` (after subsampling); worker
        ids are ``0..n_workers-1``; ``classes`` are the sorted distinct values of the
        original ``y`` (so class codes stay the same when subsampling drops a class);
        ``truth`` and ``features`` are set.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(1000, 4)), rng.integers(3, size=1000)
    >>> crowd_on_features(X, y, n_workers=20, seed=0)
    CrowdData(n_tasks=1000, n_workers=20, n_classes=3, n_annotations=3000, features=(1000, 4), truth=1000 known)
    """  # noqa: E501
    X, y = _check_samples(X, y)
    n_workers = check_int("n_workers", n_workers)
    groups = dict(DEFAULT_GROUPS if groups is None else groups)
    proportions = check_proportions("groups", groups)
    resolved = resolve_group_params(groups, group_params)
    load_skew = check_real("load_skew", load_skew, 0.0)
    if imbalance_ratio is not None:
        check_real("imbalance_ratio", imbalance_ratio, 1.0)
    if labels_per_task_dist not in ("fixed", "poisson"):
        raise ValueError(
            f"labels_per_task_dist must be 'fixed' or 'poisson', got {labels_per_task_dist!r}"
        )
    if labels_per_task_dist == "fixed":
        check_labels_per_task("labels_per_task", labels_per_task, n_workers, "n_workers")
    else:
        check_real("labels_per_task", labels_per_task, 1.0)

    classes, truth = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y has a single class ({classes[0]!r}); a crowd needs two or more")
    rng = np.random.default_rng(seed)
    kept = None
    if imbalance_ratio is not None:
        kept = _imbalanced_rows(truth, imbalance_ratio, rng)
        X, truth = X[kept], truth[kept]

    sizes = allocate_groups(n_workers, proportions)
    worker_group = rng.permutation(np.repeat(list(groups), sizes))
    confusions = np.empty((n_workers, len(classes), len(classes)))
    for name in groups:
        members = worker_group == name
        confusions[members] = group_confusions(
            rng, name, int(members.sum()), len(classes), resolved[name]
        )

    n_labels = _labels_per_task(labels_per_task, labels_per_task_dist, len(truth), n_workers, rng)
    weights = None
    if load_skew > 0:
        weights = (rng.permutation(n_workers) + 1.0) ** -load_skew
    task, worker = assign_workers(n_labels, n_workers, rng, weights=weights)
    label = draw_labels(confusions, worker, truth[task], rng)

    params = {
        "n_workers": n_workers,
        "groups": groups,
        "group_sizes": dict(zip(groups, sizes.tolist(), strict=True)),
        "labels_per_task": labels_per_task,
        "labels_per_task_dist": labels_per_task_dist,
        "load_skew": load_skew,
        "imbalance_ratio": imbalance_ratio,
        "group_params": resolved,
        "seed": seed,
        "kept_indices": kept,
    }
    return simulated(
        task,
        worker,
        label,
        truth,
        confusions,
        params=params,
        return_info=return_info,
        classes=classes,
        features=X,
        worker_group=worker_group,
    )


def make_imbalanced(
    X: Any, y: Any, ratio: float, seed: int | None = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subsample ``(X, y)`` so that class sizes decay geometrically by a set ratio.

    Classes are ranked by decreasing frequency (ties by class, in sorted order); the
    class of rank ``r`` among ``C`` keeps ``round(n_top * ratio ** (-r / (C - 1)))``
    random instances, so the largest kept class is ``ratio`` times the smallest (up to
    rounding). ``n_top`` is the largest size every class can supply.

    Parameters
    ----------
    X : array-like of shape (n_samples, ...)
    y : array-like of shape (n_samples,)
    ratio : float >= 1
        Imbalance ratio ``n_max / n_min`` of the result (1 balances the classes).
    seed : int or None
        Seed of the random choice of the kept instances.

    Returns
    -------
    X_sub, y_sub : ndarrays
        The kept rows, in their original order.
    kept_indices : ndarray of int
        Their positions in ``X`` and ``y``.

    Raises
    ------
    ValueError
        When the ratio would leave the smallest class empty.

    Examples
    --------
    >>> y = np.repeat([0, 1, 2], [500, 300, 400])
    >>> X = np.arange(len(y))[:, None]
    >>> _, y_sub, kept = make_imbalanced(X, y, ratio=4.0)
    >>> np.bincount(y_sub)
    array([500, 125, 250])
    """
    X, y = _check_samples(X, y)
    ratio = check_real("ratio", ratio, 1.0)
    _, codes = np.unique(y, return_inverse=True)
    kept = _imbalanced_rows(codes, ratio, np.random.default_rng(seed))
    return X[kept], y[kept], kept


def allocate_groups(n_workers: int, proportions: np.ndarray) -> np.ndarray:
    """Split ``n_workers`` into groups by the largest remainder rule.

    Each group gets the integer part of its quota ``proportion * n_workers``; the
    workers left go to the largest fractional parts (ties to the earlier group). When
    there are at least as many workers as groups with a positive proportion, a group
    left empty takes a worker from the group that keeps the most of its quota
    (largest ``(size - 1) / quota``).

    Examples
    --------
    >>> allocate_groups(10, np.array([0.2, 0.5, 0.2, 0.05, 0.05]))
    array([2, 4, 2, 1, 1])
    """
    quotas = proportions * n_workers
    sizes = np.floor(quotas).astype(np.int64)
    by_remainder = np.argsort(-(quotas - sizes), kind="stable")
    sizes[by_remainder[: n_workers - sizes.sum()]] += 1
    positive = proportions > 0
    if n_workers >= positive.sum():
        for empty in np.flatnonzero(positive & (sizes == 0)):
            kept_share = np.divide(
                sizes - 1, quotas, out=np.full(len(sizes), -np.inf), where=sizes > 1
            )
            donor = np.argmax(kept_share)
            sizes[donor] -= 1
            sizes[empty] += 1
    return sizes


def _imbalanced_rows(codes: np.ndarray, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted rows kept so that class sizes decay geometrically (see make_imbalanced)."""
    counts = np.bincount(codes)
    present = np.flatnonzero(counts)
    ranked = present[np.lexsort((present, -counts[present]))]
    decay = ratio ** -(np.arange(len(ranked)) / max(len(ranked) - 1, 1))
    top = np.min(counts[ranked] / decay)
    targets = np.zeros(len(counts), dtype=np.int64)
    targets[ranked] = np.floor(top * decay + 0.5)
    if targets[ranked[-1]] < 1:
        raise ValueError(
            f"ratio={ratio} leaves the smallest class empty (the classes have "
            f"{counts[ranked].tolist()} instances); choose a smaller ratio"
        )
    return np.flatnonzero(keep_random_quota(codes, targets, rng))


def _check_samples(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X, y = np.asarray(X), np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if X.ndim == 0 or len(X) != len(y):
        raise ValueError(f"X has {len(X) if X.ndim else 0} rows but y has {len(y)} entries")
    if len(y) == 0:
        raise ValueError("X and y are empty")
    if pd.isna(y).any():
        raise ValueError("y has missing values (None/NaN); every instance needs its class")
    return X, y


def _labels_per_task(
    mean: float, dist: str, n_tasks: int, n_workers: int, rng: np.random.Generator
) -> np.ndarray:
    if dist == "fixed":
        return np.full(n_tasks, int(mean))
    return np.minimum(1 + rng.poisson(mean - 1.0, size=n_tasks), n_workers)
