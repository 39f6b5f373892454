"""Worker and task scores of a label-set (multi-label) crowd.

Scores for ``crowdlearn identify`` on a :class:`~crowdlearn.data.LabelSets`; each array
is aligned with the worker codes (:func:`worker_scores`) or the task codes
(:func:`task_scores`). The model-based scores come from a fit of a label-set strategy
(:data:`~crowdlearn.aggregation.label_sets.DEFAULT_STRATEGY` unless another is given).

Worker scores:

* ``"sensitivity"``: probability of selecting a class that applies, pooled over the
  classes (hits over positives summed over all classes, i.e. the mean over classes
  weighted by each class's positive mass), against the fitted probabilities, with a
  Laplace pseudo-count (0.5 for a worker who met no positive);
* ``"specificity"``: the same for leaving out a class that does not apply;
* ``"agreement"``: the probability that another worker of the same task, drawn at
  random, gives the same answer on a class (select or not), averaged over the classes
  and over the worker's annotations of tasks with at least two annotations; NaN for a
  worker who shares no task;
* ``"n_answers"``: number of annotations.

Task scores:

* ``"uncertainty"``: mean over the classes of the binary entropy (bits) of the fitted
  probability that the class applies (0: sure of every class, 1: no idea);
* ``"disagreement"``: mean over the classes of ``4 v (1 - v)`` with ``v`` the share of
  the task's annotations selecting the class (0: unanimous, 1: split in half);
* ``"n_answers"``: number of annotations.
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation.label_sets import DEFAULT_STRATEGY, make_aggregator
from crowdlearn.aggregation.label_sets._base import SetDesign, vote_shares
from crowdlearn.data import LabelSets


def _fitted_probas(data: LabelSets, strategy: str | None) -> np.ndarray:
    estimator = make_aggregator(strategy or DEFAULT_STRATEGY)
    if "progress" in estimator.get_params():
        estimator.set_params(progress=False)
    return estimator.fit(data).probas_


def _check(data: LabelSets) -> None:
    if not isinstance(data, LabelSets):
        raise TypeError(
            f"label-set scores expect a LabelSets, got {type(data).__name__}; build one "
            "with LabelSets.from_frame(df) or LabelSets.from_arrays(task, worker, labels)"
        )


def worker_scores(data: LabelSets, strategy: str | None = None) -> dict[str, np.ndarray]:
    """Per-worker scores (see the module docstring), aligned with the worker codes.

    Parameters
    ----------
    data : LabelSets
    strategy : str, optional
        The label-set strategy whose probabilities the rates are measured against
        (default :data:`~crowdlearn.aggregation.label_sets.DEFAULT_STRATEGY`).

    Returns
    -------
    dict of str -> ndarray (n_workers,)
        ``"sensitivity"``, ``"specificity"``, ``"agreement"``, ``"n_answers"``.

    Examples
    --------
    >>> sets = LabelSets.from_arrays(
    ...     task=[0, 0, 0, 1, 1, 1], worker=["a", "b", "c"] * 2,
    ...     labels=[["x"], ["x"], ["y"], ["y"], ["y"], ["x"]],
    ... )
    >>> worker_scores(sets)["agreement"].round(2)
    array([0.5, 0.5, 0. ])
    """
    _check(data)
    hits, positives, rejections, negatives = SetDesign.of(data).rate_counts(
        _fitted_probas(data, strategy)
    )
    return {
        "sensitivity": (hits.sum(axis=1) + 1) / (positives.sum(axis=1) + 2),
        "specificity": (rejections.sum(axis=1) + 1) / (negatives.sum(axis=1) + 2),
        "agreement": _agreement(data),
        "n_answers": np.bincount(data.worker, minlength=data.n_workers),
    }


def _agreement(data: LabelSets) -> np.ndarray:
    """Chance that a random other worker of the task agrees, per worker (NaN: no
    shared task)."""
    answers = data.answers.astype(np.float64)
    sizes = np.bincount(data.task, minlength=data.n_tasks)[data.task].astype(np.float64)
    shared = sizes >= 2
    others = np.maximum(sizes - 1, 1)[:, None]
    counts = vote_shares(data)[data.task] * sizes[:, None]
    selecting = (counts - answers) / others  # share of the other workers selecting
    agree = np.where(answers == 1, selecting, 1 - selecting).mean(axis=1)
    total = np.bincount(data.worker, weights=agree * shared, minlength=data.n_workers)
    n = np.bincount(data.worker, weights=shared.astype(np.float64), minlength=data.n_workers)
    return np.divide(total, n, out=np.full(data.n_workers, np.nan), where=n > 0)


def task_scores(data: LabelSets, strategy: str | None = None) -> dict[str, np.ndarray]:
    """Per-task scores (see the module docstring), aligned with the task codes.

    Parameters
    ----------
    data : LabelSets
    strategy : str, optional
        The label-set strategy whose probabilities give ``"uncertainty"``.

    Returns
    -------
    dict of str -> ndarray (n_tasks,)
        ``"uncertainty"``, ``"disagreement"``, ``"n_answers"``.

    Examples
    --------
    >>> sets = LabelSets.from_arrays(
    ...     task=[0, 0, 1, 1], worker=["a", "b"] * 2, labels=[["x"], ["x"], ["x"], ["y"]],
    ... )
    >>> task_scores(sets, strategy="binary-mv")["disagreement"]
    array([0., 1.])
    """
    _check(data)
    probas = np.clip(_fitted_probas(data, strategy), 0.0, 1.0)
    shares = vote_shares(data)
    return {
        "uncertainty": _binary_entropy(probas).mean(axis=1),
        "disagreement": (4 * shares * (1 - shares)).mean(axis=1),
        "n_answers": np.bincount(data.task, minlength=data.n_tasks),
    }


def _binary_entropy(p: np.ndarray) -> np.ndarray:
    """Entropy in bits of Bernoulli(p), 0 at p = 0 or 1."""
    q = 1 - p
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = -(np.where(p > 0, p * np.log2(p), 0.0) + np.where(q > 0, q * np.log2(q), 0.0))
    return bits
