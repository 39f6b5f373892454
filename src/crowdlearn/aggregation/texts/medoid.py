"""Medoid: the answer closest, in word edit distance, to the task's other answers.

The medoid of a set (Kaufman and Rousseeuw, "Finding Groups in Data", 1990) under the
word-level Levenshtein distance (:func:`crowdlearn.metrics.edit_distance` over the
words of the answers split on whitespace): for each answer ``a`` of a task, the sum
``sum_b d(a, b)`` over the task's answers; the answer with the smallest sum is the
task's text (ties: the earliest row). A task's pairwise distances are computed in
Python (tasks hold a few short answers); the selection is vectorised.
``confidence_`` is one minus the chosen answer's mean distance to the others divided
by the mean number of words of the task's answers, clipped to [0, 1] (1 when alone).
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation.texts._base import (
    BaseTextAggregator,
    best_per_task,
    task_pairs,
    word_codes,
)
from crowdlearn.data.texts import Texts
from crowdlearn.metrics._text import edit_distance


def pair_distances(data: Texts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ordered pair of rows of a task and their word edit distance."""
    first, second = task_pairs(data)
    coded, _ = word_codes(data.text)
    cache: dict[tuple[int, int], int] = {}
    distance = np.empty(len(first), dtype=np.float64)
    for k, (a, b) in enumerate(zip(first.tolist(), second.tolist(), strict=True)):
        key = (a, b) if a < b else (b, a)
        value = cache.get(key)
        if value is None:
            value = cache[key] = edit_distance(coded[a], coded[b])
        distance[k] = value
    return first, second, distance


class Medoid(BaseTextAggregator):
    """The answer with the smallest total word edit distance to the task's other
    answers (see the module docstring).

    Attributes
    ----------
    texts_ : ndarray of object, shape (n_tasks,)
    confidence_ : ndarray of shape (n_tasks,)
    chosen_ : ndarray of shape (n_tasks,)
        The row of the answer chosen for each task.

    Examples
    --------
    >>> from crowdlearn.data import Texts
    >>> data = Texts.from_arrays(
    ...     ["t"] * 3, ["a", "b", "c"], ["the cat sat", "the cat sat down", "a cat sat"])
    >>> Medoid().fit(data).texts_.tolist()
    ['the cat sat']
    """

    def _fit(self, data: Texts) -> None:
        first, _, distance = pair_distances(data)
        n = data.n_annotations
        total = np.bincount(first, weights=distance, minlength=n)
        others = np.bincount(first, minlength=n)
        self.chosen_ = best_per_task(data.task, total, data.n_tasks)
        self.texts_ = data.text[self.chosen_].copy()
        lengths = np.array([len(t.split()) for t in data.text.tolist()], dtype=np.float64)
        mean_length = np.bincount(
            data.task, weights=lengths, minlength=data.n_tasks
        ) / np.bincount(data.task, minlength=data.n_tasks)
        chosen_others = others[self.chosen_]
        mean_distance = np.zeros(data.n_tasks)
        np.divide(total[self.chosen_], chosen_others, out=mean_distance, where=chosen_others > 0)
        self.confidence_ = np.clip(1.0 - mean_distance / mean_length, 0.0, 1.0)
