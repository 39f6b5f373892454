"""Worker and task scores for free texts (transcriptions).

Texts are compared as word sequences after :func:`crowdlearn.metrics.normalise_text`
(lower case, no punctuation; ``normalise=False`` splits them as they are). The word
error rate of a text ``a`` against a text ``b`` is ``edit_distance(a, b) / len(b)``
(words; a pair whose ``b`` has no word is left out). Distances between the answers of
a task are computed once per unordered pair (Python, the tasks are small); everything
else is ``np.bincount`` over the pairs.

:func:`worker_scores` returns, aligned with the worker codes:

- ``n_texts``: number of texts;
- ``wer_to_consensus``: the worker's corpus WER against the tasks' ROVER texts
  (:class:`~crowdlearn.aggregation.texts.ROVER` over every answer, the worker's own
  included): total word edits over the worker's tasks / total consensus words (NaN
  when those consensus texts hold no word);
- ``wer_to_others``: mean, over the worker's answers and the other answers of the same
  tasks, of the WER of the worker's text against the other one (leave-one-out; NaN for
  a worker alone on all its tasks).

:func:`task_scores` returns, aligned with the task codes:

- ``n_texts``: number of texts;
- ``disagreement``: mean pairwise WER of the task's answers (over ordered pairs
  ``a != b``, WER of ``a`` against ``b``); NaN for a task with one answer.

Example
-------
>>> from crowdlearn.data import Texts
>>> data = Texts.from_arrays(["t", "t", "t"], ["a", "b", "c"],
...                          ["the cat sat", "the cat sat", "a dog"])
>>> task_scores(data)["disagreement"].round(3)
array([0.833])
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation.texts import ROVER
from crowdlearn.aggregation.texts._base import task_pairs
from crowdlearn.data.texts import Texts
from crowdlearn.metrics._text import edit_distance, words


def _pair_wer(data: Texts, normalise: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ordered pairs of answers of a task and the WER of the first against the second
    (NaN where the second has no word)."""
    first, second = task_pairs(data)
    split = [words(t, normalise) for t in data.text.tolist()]
    cache: dict[tuple[int, int], int] = {}
    edits = np.empty(len(first))
    for k, (a, b) in enumerate(zip(first.tolist(), second.tolist(), strict=True)):
        key = (a, b) if a < b else (b, a)
        value = cache.get(key)
        if value is None:
            value = cache[key] = edit_distance(split[a], split[b])
        edits[k] = value
    lengths = np.array([len(w) for w in split], dtype=np.float64)[second]
    wer = np.full(len(first), np.nan)
    np.divide(edits, lengths, out=wer, where=lengths > 0)
    return first, second, wer


def _mean_by(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    keep = ~np.isnan(values)
    counts = np.bincount(group[keep], minlength=n)
    sums = np.bincount(group[keep], weights=values[keep], minlength=n)
    out = np.full(n, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def worker_scores(data: Texts, normalise: bool = True) -> dict[str, np.ndarray]:
    """Per-worker scores (see the module docstring), each of shape (n_workers,)."""
    if not isinstance(data, Texts):
        raise TypeError(
            f"worker_scores expects a crowdlearn.data.Texts, got {type(data).__name__}"
        )
    first, _, wer = _pair_wer(data, normalise)
    consensus = ROVER().fit(data).texts_
    split = [words(t, normalise) for t in data.text.tolist()]
    reference = [words(t, normalise) for t in consensus.tolist()]
    task = data.task.tolist()
    edits = np.array(
        [edit_distance(w, reference[t]) for w, t in zip(split, task, strict=True)], dtype=float
    )
    lengths = np.array([len(reference[t]) for t in task], dtype=np.float64)
    total_edits = np.bincount(data.worker, weights=edits, minlength=data.n_workers)
    total_words = np.bincount(data.worker, weights=lengths, minlength=data.n_workers)
    to_consensus = np.full(data.n_workers, np.nan)
    np.divide(total_edits, total_words, out=to_consensus, where=total_words > 0)
    return {
        "n_texts": np.bincount(data.worker, minlength=data.n_workers),
        "wer_to_consensus": to_consensus,
        "wer_to_others": _mean_by(data.worker[first], wer, data.n_workers),
    }


def task_scores(data: Texts, normalise: bool = True) -> dict[str, np.ndarray]:
    """Per-task scores (see the module docstring), each of shape (n_tasks,)."""
    if not isinstance(data, Texts):
        raise TypeError(f"task_scores expects a crowdlearn.data.Texts, got {type(data).__name__}")
    first, _, wer = _pair_wer(data, normalise)
    return {
        "n_texts": np.bincount(data.task, minlength=data.n_tasks),
        "disagreement": _mean_by(data.task[first], wer, data.n_tasks),
    }
