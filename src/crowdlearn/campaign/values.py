"""The value of one more label: pure array code behind :func:`crowdlearn.campaign.rank_tasks`.

A task's current belief is its posterior ``T_i`` over the K classes (from an
aggregator such as Dawid-Skene). The next label comes from a worker described by a
confusion matrix ``C[k, l]`` (probability of answering ``l`` when the truth is ``k``):
the crowd's average worker, or one chosen worker. Before it arrives the label is
random with ``p(l) = sum_k T_ik C[k, l]``; after it arrives the posterior is
``T'_ik(l) proportional to T_ik C[k, l]``. Two one-step look-ahead scores:

``"entropy"`` (the default)
    Expected reduction of the posterior's entropy, ``H(T_i) - sum_l p(l) H(T'_i(l))``:
    the mutual information between the next label and the true class. It is positive
    on every task that is not certain, so it ranks all tasks.
``"accuracy"``
    Expected gain in the probability that the task's label is right,
    ``sum_l max_k T_ik C[k, l] - max_k T_ik``. It is zero on tasks where no single
    answer can change the most probable class; ties are broken by the entropy score.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from crowdlearn.data import CrowdDataError

Score = Literal["entropy", "accuracy"]
SCORES: tuple[str, ...] = ("entropy", "accuracy")
_TINY = 1e-300


def _entropy(probas: np.ndarray) -> np.ndarray:
    safe = np.where(probas > 0, probas, 1.0)
    return -(probas * np.log(safe)).sum(axis=-1)


def next_label_value(
    probas: np.ndarray, confusion: np.ndarray, score: Score = "entropy"
) -> np.ndarray:
    """Value of one more label on each task, shape (n_tasks,).

    Parameters
    ----------
    probas : ndarray (n_tasks, K)
        Current posterior of each task (rows sum to one).
    confusion : ndarray (K, K) or (n_tasks, K, K)
        The next worker's confusion matrix (row = true class), shared by every task or
        one per task (e.g. GLAD, whose accuracy depends on the task's difficulty).
    score : {"entropy", "accuracy"}
        See the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> confusion = np.array([[0.8, 0.2], [0.2, 0.8]])
    >>> values = next_label_value(np.array([[0.5, 0.5], [0.99, 0.01]]), confusion)
    >>> bool(values[0] > values[1] > 0)
    True
    """
    probas = np.asarray(probas, dtype=np.float64)
    confusion = np.asarray(confusion, dtype=np.float64)
    if probas.ndim != 2:
        raise CrowdDataError(f"probas must be (n_tasks, K), got shape {probas.shape}")
    n, k = probas.shape
    if confusion.shape not in ((k, k), (n, k, k)):
        raise CrowdDataError(
            f"confusion must be ({k}, {k}) or ({n}, {k}, {k}), got shape {confusion.shape}"
        )
    if score not in SCORES:
        raise CrowdDataError(f"score must be one of {list(SCORES)}, got {score!r}")
    expected_after = np.zeros(n)
    # one answer l at a time keeps the temporaries (n, K)
    for answer in range(k):
        column = confusion[..., answer] if confusion.ndim == 2 else confusion[:, :, answer]
        joint = probas * column  # (n, K): T_ik C[k, l]
        if score == "accuracy":
            expected_after += joint.max(axis=1)
            continue
        p_answer = joint.sum(axis=1)
        after = joint / np.maximum(p_answer, _TINY)[:, None]
        expected_after += p_answer * _entropy(after)
    if score == "accuracy":
        return np.maximum(expected_after - probas.max(axis=1), 0.0)
    return np.maximum(_entropy(probas) - expected_after, 0.0)


def one_coin_confusion(accuracy: np.ndarray | float, n_classes: int) -> np.ndarray:
    """Confusion matrices of workers right with probability ``accuracy`` and wrong
    evenly otherwise: (K, K) for a number, (n, K, K) for an array of n accuracies."""
    accuracy = np.asarray(accuracy, dtype=np.float64)
    off = (1.0 - accuracy) / max(n_classes - 1, 1)
    eye = np.eye(n_classes)
    return off[..., None, None] * (1 - eye) + accuracy[..., None, None] * eye


def mix_learner(
    probas: np.ndarray,
    learner_probas: np.ndarray,
    n_labels: np.ndarray,
    learner_weight: float,
    annotator_weight: float,
) -> np.ndarray:
    """Posteriors mixed with a classifier's predictions, CROWDLAB-style.

    Goh, Tkachenko & Mueller (2022) estimate a task's consensus as a weighted average
    of the annotators' labels and a classifier's predicted probabilities, the weights
    being how much each beats a constant baseline. Here the crowd side is the
    aggregator's posterior, which already weighs the ``n_i`` labels of task ``i``:

        ``T'_i = (w_m p_i + n_i w_a T_i) / (w_m + n_i w_a)``

    so the classifier counts as ``w_m / w_a`` annotators: it decides tasks with few
    labels and fades as labels accumulate.
    """
    learner_probas = np.asarray(learner_probas, dtype=np.float64)
    if learner_probas.shape != probas.shape:
        raise CrowdDataError(
            f"learner_probas must have shape {probas.shape} (tasks x classes), "
            f"got {learner_probas.shape}"
        )
    crowd = np.asarray(n_labels, dtype=np.float64)[:, None] * max(annotator_weight, 1e-12)
    model = max(learner_weight, 0.0)
    return (model * learner_probas + crowd * probas) / (model + crowd)
