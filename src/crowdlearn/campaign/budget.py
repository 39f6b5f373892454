"""How many more labels the open tasks need to reach a target confidence.

A campaign with a target confidence (``crowdlearn next --target-confidence 0.95``)
asks what is left to spend. Under the crowd model, task ``i``'s posterior ``T_i``
moves with each label ``l``: ``T'_ik`` is proportional to ``T_ik C[k, l]``, ``C`` the
confusion matrix of the next worker (the crowd's average one). :func:`labels_to_target`
simulates that walk: the task's true class drawn from a belief about it, each label
from ``C``'s row for that class, until the most probable class reaches the target
(with at least ``min_labels`` labels on the task) or a cap is hit. The mean number of
labels over the draws is the task's expected need, capped; the share of draws that got
there is how likely the cap suffices.

What it leaves out: the model is refitted as labels arrive (worker estimates move),
and real workers differ from the average one. The campaign page
(``benchmarks/pages/campaign.md``, ``campaign-target``) compares the estimate with
the labels a replayed campaign actually needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.data import CrowdDataError

_TINY = 1e-300
#: Largest (tasks x draws x classes) block simulated at once.
_CHUNK_CELLS = 2_000_000


def labels_to_target(
    probas: np.ndarray,
    confusion: np.ndarray,
    target: float,
    *,
    n_labels: Any = None,
    min_labels: int = 0,
    belief: np.ndarray | None = None,
    cap: Any = 30,
    draws: int = 32,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Expected labels each task still needs to reach ``target``, and how likely the
    cap suffices.

    Parameters
    ----------
    probas : ndarray (n_tasks, K)
        The posteriors whose top class must reach ``target`` (the model's, as
        :func:`~crowdlearn.campaign.rank_tasks` judges a task done).
    confusion : ndarray (K, K) or (n_tasks, K, K)
        The next worker's confusion matrix (row = true class), shared or per task.
    target : float in (0, 1]
    n_labels : int array (n_tasks,), optional
        Labels each task has now (default 0), counted toward ``min_labels``.
    min_labels : int, default 0
        Labels a task needs before it can be done.
    belief : ndarray (n_tasks, K), optional
        Where the true classes are drawn from (default ``probas``); e.g. the
        leave-one-task-out posteriors, which are less overconfident.
    cap : int or int array (n_tasks,), default 30
        The most labels a task can get (e.g. what is left of its pool).
    draws : int, default 32
        Simulated label sequences per task.
    random_state : int, default 0

    Returns
    -------
    expected : ndarray (n_tasks,)
        Mean over the draws of the labels until the task is done, or the cap; 0 for a
        task done already.
    reached : ndarray (n_tasks,)
        Share of the draws done within the cap (1 for a task done already).

    Examples
    --------
    >>> import numpy as np
    >>> confusion = np.array([[0.8, 0.2], [0.2, 0.8]])
    >>> expected, reached = labels_to_target(
    ...     np.array([[0.5, 0.5], [0.99, 0.01]]), confusion, 0.95, n_labels=[2, 3])
    >>> bool(expected[0] > 1), float(expected[1]), float(reached[1])
    (True, 0.0, 1.0)
    """
    probas = np.asarray(probas, dtype=np.float64)
    if probas.ndim != 2:
        raise CrowdDataError(f"probas must be (n_tasks, K), got shape {probas.shape}")
    n, k = probas.shape
    confusion = np.asarray(confusion, dtype=np.float64)
    if confusion.shape not in ((k, k), (n, k, k)):
        raise CrowdDataError(
            f"confusion must be ({k}, {k}) or ({n}, {k}, {k}), got shape {confusion.shape}"
        )
    if not 0 < target <= 1:
        raise CrowdDataError(f"target must be in (0, 1], got {target}")
    if draws < 1:
        raise CrowdDataError(f"draws must be 1 or more, got {draws}")
    belief = probas if belief is None else np.asarray(belief, dtype=np.float64)
    if belief.shape != probas.shape:
        raise CrowdDataError(f"belief must have shape {probas.shape}, got {belief.shape}")
    have = np.zeros(n, np.int64) if n_labels is None else np.asarray(n_labels, np.int64)
    caps = np.broadcast_to(np.asarray(cap, dtype=np.int64), (n,))
    expected, reached = np.zeros(n), np.ones(n)
    done = (probas.max(axis=1) >= target) & (have >= min_labels)
    reached[~done & (caps <= 0)] = 0.0
    todo = np.flatnonzero(~done & (caps > 0))
    rng = np.random.default_rng(random_state)
    log_confusion = np.log(np.maximum(confusion, _TINY))
    cumulative = np.cumsum(confusion, axis=-1)
    step = max(1, _CHUNK_CELLS // (draws * k))
    for start in range(0, len(todo), step):
        rows = todo[start : start + step]
        count, hit = _walk(
            probas[rows],
            belief[rows],
            log_confusion if confusion.ndim == 2 else log_confusion[rows],
            cumulative if confusion.ndim == 2 else cumulative[rows],
            target,
            min_labels - have[rows],
            caps[rows],
            draws,
            rng,
        )
        expected[rows], reached[rows] = count.mean(axis=1), hit.mean(axis=1)
    return expected, reached


def _draw(cumulative: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One class per row of ``cumulative`` (..., K), cumulative probabilities."""
    u = rng.random(cumulative.shape[:-1]) * cumulative[..., -1]
    return np.minimum((u[..., None] >= cumulative).sum(axis=-1), cumulative.shape[-1] - 1)


def _walk(
    probas: np.ndarray,
    belief: np.ndarray,
    log_confusion: np.ndarray,
    cumulative: np.ndarray,
    target: float,
    still_needed: np.ndarray,
    caps: np.ndarray,
    draws: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Labels until done (or the cap) and whether done, (m, draws) each, for m tasks.

    The walks run side by side as rows of one (m * draws, K) table; each step touches
    only those still going (most stop after a label or two)."""
    m = len(probas)
    task = np.repeat(np.arange(m), draws)
    log_post = np.log(np.maximum(probas, _TINY))[task]
    truth = _draw(np.cumsum(belief, axis=1)[task], rng)
    shared = log_confusion.ndim == 2
    count = np.zeros(m * draws, np.int64)
    hit = np.zeros(m * draws, bool)
    going = np.arange(m * draws)
    while len(going):
        owner, true = task[going], truth[going]
        rows = cumulative[true] if shared else cumulative[owner, true]
        label = _draw(rows, rng)
        if shared:
            update = log_confusion[:, label].T
        else:
            update = log_confusion[owner, :, label]
        log_post[going] += update
        count[going] += 1
        now = log_post[going]
        top = 1.0 / np.exp(now - now.max(axis=1, keepdims=True)).sum(axis=1)
        finished = (top >= target) & (count[going] >= still_needed[owner])
        hit[going[finished]] = True
        going = going[~finished & (count[going] < caps[owner])]
    return count.reshape(m, draws), hit.reshape(m, draws)
