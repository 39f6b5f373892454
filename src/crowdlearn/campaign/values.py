"""The value of one more label: pure array code behind :func:`crowdlearn.campaign.rank_tasks`.

A task's current belief is its posterior ``T_i`` over the K classes (from an
aggregator such as Dawid-Skene). The next label comes from a worker described by a
confusion matrix ``C[k, l]`` (probability of answering ``l`` when the truth is ``k``):
the crowd's average worker, or one chosen worker. Before it arrives the label is
random with ``p(l) = sum_k T_ik C[k, l]``; after it arrives the posterior is
``T'_ik(l) proportional to T_ik C[k, l]``. Three one-step look-ahead scores:

``"decision"`` (the default of :func:`~crowdlearn.campaign.rank_tasks`)
    The mutual information between the next label and whether the task's current
    label (its most probable class ``m``) is right: with ``q = T_im``,
    ``h(q) - sum_l p(l) h(q C[m, l] / p(l))``, ``h`` the binary entropy (averaged
    over the classes tied for the most probable). With two classes it equals
    ``"entropy"``. With more it leaves out what the label would
    say about how the doubt is shared among the unlikely classes, which the
    accuracy of the label does not depend on: under ``"entropy"`` a task with one
    label among ten classes, its doubt spread over nine classes, outranks a task
    whose two labels disagree (on the campaign replay's 10-class crowd, MS, that
    cost accuracy early in the campaign; benchmarks/pages/campaign.md).
``"entropy"``
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

Score = Literal["decision", "entropy", "accuracy"]
SCORES: tuple[str, ...] = ("decision", "entropy", "accuracy")
_TINY = 1e-300
#: Largest (labels x classes) temporary of :func:`cavity_posteriors`.
_CHUNK_CELLS = 4_000_000


def _entropy(probas: np.ndarray) -> np.ndarray:
    safe = np.where(probas > 0, probas, 1.0)
    return -(probas * np.log(safe)).sum(axis=-1)


def _binary_entropy(q: np.ndarray) -> np.ndarray:
    q = np.clip(q, 0.0, 1.0)
    return _entropy(q[..., None]) + _entropy(1.0 - q[..., None])


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
    score : {"entropy", "decision", "accuracy"}
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
    if score == "decision":  # the (task, class) pairs of each task's most probable classes
        pair_task, pair_class = np.nonzero(probas >= probas.max(axis=1, keepdims=True) - 1e-12)
        expected_after = np.zeros(len(pair_task))
    # one answer l at a time keeps the temporaries (n, K)
    for answer in range(k):
        column = confusion[..., answer] if confusion.ndim == 2 else confusion[:, :, answer]
        joint = probas * column  # (n, K): T_ik C[k, l]
        if score == "accuracy":
            expected_after += joint.max(axis=1)
            continue
        p_answer = joint.sum(axis=1)
        if score == "decision":  # T_im C[m, l] / p(l): the top class m right after l
            chance = p_answer[pair_task]
            right = joint[pair_task, pair_class] / np.maximum(chance, _TINY)
            expected_after += chance * _binary_entropy(right)
            continue
        after = joint / np.maximum(p_answer, _TINY)[:, None]
        expected_after += p_answer * _entropy(after)
    if score == "accuracy":
        return np.maximum(expected_after - probas.max(axis=1), 0.0)
    if score == "decision":  # classes tied for the most probable: their mean
        per_pair = _binary_entropy(probas[pair_task, pair_class]) - expected_after
        total = np.bincount(pair_task, weights=per_pair, minlength=n)
        return np.maximum(total / np.bincount(pair_task, minlength=n), 0.0)
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


def cavity_posteriors(
    probas: np.ndarray,
    task: np.ndarray,
    worker: np.ndarray,
    label: np.ndarray,
    n_workers: int,
    smoothing: float = 1.0,
    one_coin: bool = False,
) -> np.ndarray:
    """Each task's posterior under a worker model fitted without that task.

    A Dawid-Skene fit estimates a worker's confusion from the posteriors of the tasks
    it answered, including the task being scored, so each label counts twice: as
    evidence about its task, and (through that task's posterior) as evidence that its
    worker is reliable. With few labels a task this makes the posteriors
    overconfident. Here task ``i``'s posterior is recomputed from one M-step on the
    soft counts of all the other tasks (its own contribution ``T_i`` removed from its
    workers' counts and from the class prior) and one E-step on its own labels:

        ``C_j^(-i)[k, l] = (N_j[k, l] - T_ik [l = l_ij] + s A[k, l]) / (N_j[k] - T_ik + s)``

    with ``N_j[k, l] = sum over j's labels l on tasks t of T_tk``, smoothed by
    ``smoothing`` pseudo-labels per row toward the crowd's one-coin matrix ``A`` (its
    share of labels equal to the posterior's class on the diagonal). With
    ``one_coin`` a worker has one accuracy instead of a matrix, smoothed the same
    way. Tasks without labels get the (cavity) class prior. The most probable class
    rarely changes; the confidence does (on the campaign replay's real crowds, the
    mean confidence's excess over the accuracy falls, see benchmarks/pages/campaign.md).

    Parameters
    ----------
    probas : ndarray (n_tasks, K)
        The fitted model's posteriors ``T``.
    task, worker, label : int arrays (n_annotations,)
        The labels, as codes.
    n_workers : int
    smoothing : float, default 1.0
        Pseudo-labels per confusion row (per worker with ``one_coin``) toward the
        crowd's average; must be positive (a worker's only task would leave 0/0).
    one_coin : bool, default False
        One accuracy per worker (one-coin Dawid-Skene) instead of a confusion matrix.

    Returns
    -------
    ndarray (n_tasks, K), rows summing to one.

    Examples
    --------
    >>> import numpy as np
    >>> probas = np.array([[0.99, 0.01], [0.99, 0.01], [0.01, 0.99]])
    >>> task, worker, label = np.array([0, 1, 2]), np.array([0, 0, 1]), np.array([0, 0, 1])
    >>> cavity = cavity_posteriors(probas, task, worker, label, n_workers=2)
    >>> bool(cavity[2, 1] < probas[2, 1])  # without task 2, worker 1 is the crowd's average
    True
    """
    probas = np.asarray(probas, dtype=np.float64)
    task, worker, label = (np.asarray(a, dtype=np.int64) for a in (task, worker, label))
    if smoothing <= 0:
        raise CrowdDataError(f"smoothing must be positive, got {smoothing}")
    n, k = probas.shape
    class_totals = probas.sum(axis=0)
    log_post = np.log(
        np.maximum((class_totals - probas + 1.0) / max(n - 1 + k, 1), _TINY)
    )  # cavity prior, one pseudo-task per class
    if len(task) == 0:
        return _normalize_log(log_post)
    if one_coin:
        right = probas[task, label]
        sums = np.bincount(worker, weights=right, minlength=n_workers)
        counts = np.bincount(worker, minlength=n_workers).astype(np.float64)
        crowd_skill = float(sums.sum() / counts.sum())
    else:
        cell = worker * k + label  # counts[c, m] = N_j[m, l] for c = j * K + l
        counts = np.stack(
            [
                np.bincount(cell, weights=probas[task, m], minlength=n_workers * k)
                for m in range(k)
            ],
            axis=1,
        )
        rows = counts.reshape(n_workers, k, k).sum(axis=1)  # (W, K): N_j[m] over l
        accuracy = float(np.trace(counts.reshape(n_workers, k, k).sum(axis=0)) / len(task))
        crowd = np.full((k, k), (1 - accuracy) / max(k - 1, 1))
        np.fill_diagonal(crowd, accuracy)
    step = max(1, _CHUNK_CELLS // k)  # (labels x K) temporaries stay bounded
    for start in range(0, len(task), step):
        part = slice(start, start + step)
        t, w, lab = task[part], worker[part], label[part]
        mine = probas[t]  # (a, K): T_ik of each label's task
        if one_coin:
            right = mine[np.arange(len(t)), lab]
            skill = (sums[w] - right + smoothing * crowd_skill) / (counts[w] - 1 + smoothing)
            wrong = np.log(np.maximum((1 - skill) / max(k - 1, 1), _TINY))
            log_like = np.repeat(wrong[:, None], k, axis=1)
            log_like[np.arange(len(t)), lab] = np.log(np.maximum(skill, _TINY))
        else:
            numerator = counts[cell[part]] - mine + smoothing * crowd[:, lab].T
            log_like = np.log(np.maximum(numerator, _TINY) / (rows[w] - mine + smoothing))
        for m in range(k):
            log_post[:, m] += np.bincount(t, weights=log_like[:, m], minlength=n)
    return _normalize_log(log_post)


def _normalize_log(log_probas: np.ndarray) -> np.ndarray:
    shifted = np.exp(log_probas - log_probas.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)
