"""What every simulator returns: the CrowdData and, on request, how it was made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from crowdlearn.data import CrowdData


@dataclass(frozen=True, eq=False)
class SimulationInfo:
    """The hidden truth of a simulated crowd, beyond the true labels.

    Attributes
    ----------
    confusions : ndarray of shape (n_workers, n_classes, n_classes)
        The row-stochastic confusion matrix each worker answered with: row = true class,
        column = given label. For :func:`discrete_difficulty` it applies to hard tasks
        only (easy tasks are always answered right, random tasks uniformly).
    worker_group : ndarray of str, shape (n_workers,), or None
        The group of each worker (e.g. ``"hammer"``/``"spammer"``), None when workers
        are not grouped.
    task_difficulty : ndarray of str, shape (n_tasks,), or None
        ``"easy"``, ``"hard"`` or ``"random"`` per task for :func:`discrete_difficulty`.
    params : dict
        The parameters of the call (after defaults were filled in), enough to re-run it.
    """

    confusions: np.ndarray
    worker_group: np.ndarray | None
    task_difficulty: np.ndarray | None
    params: dict[str, Any]


#: What a simulator returns: the data, or the data and its info with ``return_info=True``.
Simulated = CrowdData | tuple[CrowdData, SimulationInfo]


def simulated(
    task: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    truth: np.ndarray,
    confusions: np.ndarray,
    *,
    params: dict[str, Any],
    return_info: bool,
    classes: np.ndarray | None = None,
    features: np.ndarray | None = None,
    worker_group: np.ndarray | None = None,
    task_difficulty: np.ndarray | None = None,
) -> Simulated:
    """Package simulated annotations (codes) as CrowdData, with its info if asked.

    Tasks and workers are numbered ``0..n-1``; classes are ``0..K-1`` unless given.
    """
    n_classes = confusions.shape[-1]
    data = CrowdData(
        task,
        worker,
        label,
        n_tasks=len(truth),
        n_workers=len(confusions),
        n_classes=None if classes is not None else n_classes,
        classes=classes,
        features=features,
        truth=truth,
    )
    if not return_info:
        return data
    info = SimulationInfo(
        confusions=_frozen(confusions),
        worker_group=None if worker_group is None else _frozen(worker_group),
        task_difficulty=None if task_difficulty is None else _frozen(task_difficulty),
        params=params,
    )
    return data, info


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array)
    array.flags.writeable = False
    return array
