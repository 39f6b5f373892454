"""What every text aggregator shares: the estimator contract, the answers grouped by
task, word codes, and a vectorised "best answer of each task" selection.

Grouping is one stable ``argsort`` of the task codes: each task's answers keep the
order of the rows in the data (the order in which ROVER aligns them and the order that
breaks ties between answers).
"""

from __future__ import annotations

import numpy as np

from crowdlearn._bounds import Bounds
from crowdlearn.aggregation._kind_base import KindAggregator
from crowdlearn.data.texts import Texts

PROBABILITY = Bounds(0, 1, low_open=True, high_open=True)
UNIT = Bounds(0, 1)
POSITIVE_INT = Bounds(1, integer=True)


class BaseTextAggregator(KindAggregator):
    """Base class of text aggregators (scikit-learn estimator contract).

    Subclasses implement ``_fit(data)``, which sets ``texts_`` (object array, one text
    per task) and, where the method has one, ``confidence_`` (n_tasks,) in [0, 1].
    ``fit`` checks the input type and the numeric parameters, then records
    ``task_ids_`` and ``worker_ids_``. Every task of a :class:`~crowdlearn.data.Texts`
    has at least one answer, so every task gets a text (possibly empty for ROVER when
    most answers of a task hold no common word: see :class:`ROVER`).

    ``worker_attributes`` names the learned per-worker arrays (first axis = worker code).
    """

    data_type = Texts
    build_hint = (
        "build one with Texts.from_arrays(task, worker, text) or "
        "Texts.from_frame(df, label='text')"
    )
    result = "texts_"
    frame_kind = "text"
    label_spellings = ("text", "output")
    #: After a DataFrame fit: Series indexed by task id.
    task_results = ("texts_", "confidence_")


# --------------------------------------------------------------------------- helpers


def task_groups(data: Texts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows sorted by task (stable: each task's answers in row order), each task's
    first position in that order, and its number of answers."""
    order = np.argsort(data.task, kind="stable")
    counts = np.bincount(data.task, minlength=data.n_tasks)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    return order, starts, counts


def task_pairs(data: Texts) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair ``(a, b)``, ``a != b``, of rows answering the same task."""
    return code_pairs(data.task, data.n_tasks)


def code_pairs(task: np.ndarray, n_tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`task_pairs` on an array of task codes (``0 <= task < n_tasks``)."""
    order = np.argsort(task, kind="stable")
    counts = np.bincount(task, minlength=n_tasks)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    sorted_task = task[order]
    size = counts[sorted_task]
    first = np.repeat(np.arange(len(order)), size)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(size) - size, size)
    second = starts[sorted_task][first] + offset
    keep = first != second
    return order[first[keep]], order[second[keep]]


def word_codes(texts: np.ndarray) -> tuple[list[list[int]], list[str]]:
    """Each text as a list of word codes (split on whitespace) and the vocabulary."""
    vocabulary: dict[str, int] = {}
    coded = [[vocabulary.setdefault(w, len(vocabulary)) for w in t.split()] for t in texts]
    return coded, list(vocabulary)


def best_per_task(
    task: np.ndarray, score: np.ndarray, n_tasks: int, lower: bool = True
) -> np.ndarray:
    """The row of each task with the lowest (``lower``) or highest score; ties go to the
    earliest row. ``task`` and ``score`` are aligned with the rows; a task without rows
    gets -1."""
    rows = np.arange(len(task))
    key = score if lower else -score
    order = np.lexsort((rows, key, task))
    first = np.ones(len(order), dtype=bool)
    first[1:] = task[order][1:] != task[order][:-1]
    out = np.full(n_tasks, -1, dtype=np.int64)
    out[task[order][first]] = order[first]
    return out
