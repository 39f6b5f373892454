"""E-step shared by the methods whose workers are right with some probability and
otherwise answer a wrong class uniformly (one-coin Dawid-Skene, GLAD).

If annotation ``a`` (task ``i``, label ``l_a``) is correct with probability ``c_a``,
the log-score of class ``k`` for task ``i`` is

    log rho_k + sum_a [ log((1 - c_a) / (K - 1)) ]
              + sum_{a: l_a = k} [ log c_a - log((1 - c_a) / (K - 1)) ]

computed with two ``np.bincount`` over the annotations.
"""

from __future__ import annotations

import numpy as np

from crowdlearn.data import CrowdData


def correctness_log_scores(
    data: CrowdData, log_correct: np.ndarray, log_wrong: np.ndarray, log_prior: np.ndarray
) -> np.ndarray:
    """(n_tasks, K) log-scores from each annotation's log-probability of being right
    (``log_correct``) and of being one given wrong class (``log_wrong``)."""
    return correctness_scores(
        data.task, data.label, data.n_tasks, data.n_classes, log_correct, log_wrong, log_prior
    )


def correctness_scores(
    task: np.ndarray,
    label: np.ndarray,
    n_tasks: int,
    k: int,
    log_correct: np.ndarray,
    log_wrong: np.ndarray,
    log_prior: np.ndarray,
) -> np.ndarray:
    """:func:`correctness_log_scores` on bare code arrays (a block of tasks: ``task``
    holds codes ``0..n_tasks-1``)."""
    base = np.bincount(task, weights=log_wrong, minlength=n_tasks)
    cell = task.astype(np.int64) * k + label
    bonus = np.bincount(cell, weights=log_correct - log_wrong, minlength=n_tasks * k)
    scores = bonus.reshape(n_tasks, k) + base[:, None] + log_prior
    return scores.astype(log_correct.dtype, copy=False)


def posterior_of_given_label(data: CrowdData, probas: np.ndarray) -> np.ndarray:
    """For each annotation, the posterior probability that its label is the true class."""
    return probas[data.task, data.label]
