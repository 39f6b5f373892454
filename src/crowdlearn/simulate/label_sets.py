"""Simulated label-set crowds: correlated true sets and workers with per-class
sensitivity and specificity.

The true sets (Zhang & Wu's generative story, KDD 2018, in its simplest form):

* ``n_prototypes`` prototype sets, each class in a prototype with probability
  ``prototype_density`` (at least one class each), with shares drawn from a
  Dirichlet(2, ..., 2);
* each task takes one prototype at random by those shares, then each class of it is
  flipped with probability ``set_noise``. Classes are thus correlated (they come and go
  together with their prototype) without being deterministic.

The workers (``worker_mix``: shares of three groups, in this order in the codes):

* ``"reliable"``: per class, sensitivity ~ U(0.75, 0.95), specificity ~ U(0.9, 0.99);
* ``"careless"``: they miss classes that apply: sensitivity ~ U(0.2, 0.5), specificity
  ~ U(0.9, 0.99);
* ``"spammer"``: they select each class with a probability ``q ~ U(0.1, 0.5)`` of their
  own whatever the truth (sensitivity ``q``, specificity ``1 - q`` per class).

Worker ``j`` selects class ``k`` of a task where it applies with probability
``sensitivity[j, k]``, and where it does not with ``1 - specificity[j, k]``, each class
independently. Each task receives ``labels_per_task`` distinct workers drawn uniformly.

Optional features for a learner (``n_features > 0``): ``x_i = sum_k z_ik m_k + e_i``
with a random centre ``m_k ~ N(0, I)`` per class and ``e_i ~ N(0, feature_noise^2 I)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from crowdlearn.data import LabelSets
from crowdlearn.simulate._assign import assign_workers
from crowdlearn.simulate._checks import (
    check_int,
    check_labels_per_task,
    check_proportions,
    check_real,
)

#: The worker groups, in the order of their codes, and their default shares.
WORKER_MIX = {"reliable": 0.6, "careless": 0.25, "spammer": 0.15}

#: (low, high) of the uniform draws of sensitivity and specificity per group.
_RANGES = {
    "reliable": ((0.75, 0.95), (0.9, 0.99)),
    "careless": ((0.2, 0.5), (0.9, 0.99)),
}


@dataclass(frozen=True)
class LabelSetSimulation:
    """What :func:`simulate_label_sets` drew besides the answers.

    Attributes
    ----------
    sensitivity, specificity : ndarray (n_workers, n_classes)
    group : ndarray of str (n_workers,)
        Each worker's group: ``"reliable"``, ``"careless"`` or ``"spammer"``.
    prototypes : ndarray of bool (n_prototypes, n_classes)
    prototype : ndarray of int (n_tasks,)
        The prototype each task's true set was drawn from.
    """

    sensitivity: np.ndarray
    specificity: np.ndarray
    group: np.ndarray
    prototypes: np.ndarray
    prototype: np.ndarray


def simulate_label_sets(
    n_tasks: int = 500,
    n_workers: int = 30,
    n_classes: int = 8,
    labels_per_task: int = 5,
    *,
    n_prototypes: int = 4,
    prototype_density: float = 0.3,
    set_noise: float = 0.05,
    worker_mix: Mapping[str, float] | None = None,
    n_features: int = 0,
    feature_noise: float = 1.0,
    random_state: int | None = 0,
    return_info: bool = False,
) -> LabelSets | tuple[LabelSets, LabelSetSimulation]:
    """A simulated label-set crowd with its true sets (see the module docstring).

    Parameters
    ----------
    n_tasks, n_workers, n_classes : int
        Sizes (at least 1, 1 and 2).
    labels_per_task : int
        Annotations per task, from distinct workers (at most ``n_workers``).
    n_prototypes : int
        Number of prototype sets.
    prototype_density : float in [0, 1]
        Probability that a class is in a prototype.
    set_noise : float in [0, 1]
        Probability that a task's set differs from its prototype on a class.
    worker_mix : mapping of group -> share, optional
        Shares of ``"reliable"``, ``"careless"`` and ``"spammer"`` workers (summing to
        1; default :data:`WORKER_MIX`); the counts are rounded, any rest going to the
        reliable group.
    n_features : int
        Dimension of the Gaussian features tied to the true sets (0: none).
    feature_noise : float
        Standard deviation of the features' noise.
    random_state : int, optional
        Seed: same seed, same crowd.
    return_info : bool
        Also return the :class:`LabelSetSimulation`.

    Returns
    -------
    LabelSets
        With ``truth`` (0/1 for every task and class) and, with ``n_features``,
        ``features``; or ``(data, info)`` with ``return_info``.

    Examples
    --------
    >>> data = simulate_label_sets(n_tasks=50, n_workers=10, n_classes=4, random_state=1)
    >>> data
    LabelSets(n_tasks=50, n_workers=10, n_classes=4, n_annotations=250, truth=50 known)
    """
    n_tasks = check_int("n_tasks", n_tasks)
    n_workers = check_int("n_workers", n_workers)
    n_classes = check_int("n_classes", n_classes, 2)
    labels_per_task = check_labels_per_task(
        "labels_per_task", labels_per_task, n_workers, "n_workers"
    )
    n_prototypes = check_int("n_prototypes", n_prototypes)
    prototype_density = check_real("prototype_density", prototype_density, 0.0, 1.0)
    set_noise = check_real("set_noise", set_noise, 0.0, 1.0)
    n_features = check_int("n_features", n_features, 0)
    feature_noise = check_real("feature_noise", feature_noise, 0.0)
    mix = dict(WORKER_MIX if worker_mix is None else worker_mix)
    unknown = sorted(set(mix) - set(WORKER_MIX))
    if unknown:
        raise ValueError(
            f"worker_mix: unknown groups {unknown}; the groups are {list(WORKER_MIX)}"
        )
    shares = check_proportions("worker_mix", [mix.get(name, 0.0) for name in WORKER_MIX])
    rng = np.random.default_rng(random_state)

    prototypes, prototype, truth = _true_sets(
        rng, n_tasks, n_classes, n_prototypes, prototype_density, set_noise
    )
    group = _groups(shares, n_workers)
    sensitivity, specificity = _worker_rates(rng, group, n_classes)
    task, worker = assign_workers(np.full(n_tasks, labels_per_task), n_workers, rng)
    chance = np.where(truth[task], sensitivity[worker], 1 - specificity[worker])
    answers = rng.random(chance.shape) < chance
    features = None
    if n_features:
        centres = rng.normal(size=(n_classes, n_features))
        noise = rng.normal(scale=feature_noise, size=(n_tasks, n_features))
        features = truth.astype(np.float64) @ centres + noise
    data = LabelSets(
        task,
        worker,
        answers,
        n_tasks=n_tasks,
        worker_ids=np.arange(n_workers),
        classes=np.arange(n_classes),
        truth=truth.astype(np.int8),
        features=features,
    )
    if not return_info:
        return data
    return data, LabelSetSimulation(sensitivity, specificity, group, prototypes, prototype)


def _true_sets(
    rng: np.random.Generator,
    n_tasks: int,
    n_classes: int,
    n_prototypes: int,
    density: float,
    noise: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prototypes (each with at least one class), each task's prototype, true sets."""
    prototypes = rng.random((n_prototypes, n_classes)) < density
    empty = ~prototypes.any(axis=1)
    prototypes[np.flatnonzero(empty), rng.integers(n_classes, size=int(empty.sum()))] = True
    weights = rng.dirichlet(np.full(n_prototypes, 2.0))
    prototype = rng.choice(n_prototypes, size=n_tasks, p=weights)
    flips = rng.random((n_tasks, n_classes)) < noise
    return prototypes, prototype, prototypes[prototype] ^ flips


def _groups(shares: np.ndarray, n_workers: int) -> np.ndarray:
    """Each worker's group, groups in :data:`WORKER_MIX` order; the rounding rest is
    reliable."""
    counts = np.floor(shares * n_workers + 0.5).astype(int)
    counts[0] += n_workers - counts.sum()
    if counts[0] < 0:  # rounding up the others overshot: take it back from the largest
        counts[np.argmax(counts[1:]) + 1] += counts[0]
        counts[0] = 0
    return np.repeat(np.array(list(WORKER_MIX)), counts)


def _worker_rates(
    rng: np.random.Generator, group: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-worker, per-class sensitivity and specificity by group."""
    n = len(group)
    sensitivity = np.empty((n, n_classes))
    specificity = np.empty((n, n_classes))
    for name, ((s_low, s_high), (p_low, p_high)) in _RANGES.items():
        rows = group == name
        sensitivity[rows] = rng.uniform(s_low, s_high, size=(int(rows.sum()), n_classes))
        specificity[rows] = rng.uniform(p_low, p_high, size=(int(rows.sum()), n_classes))
    spam = group == "spammer"
    rate = rng.uniform(0.1, 0.5, size=(int(spam.sum()), 1))
    sensitivity[spam] = rate
    specificity[spam] = 1 - rate
    return sensitivity, specificity
