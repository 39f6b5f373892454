"""Simulated transcription crowds with a known truth (free texts).

Each task's true text is a sentence of ``sentence_length`` words (uniform in the
given range) drawn from a vocabulary of ``vocabulary_size`` made-up words with Zipf
frequencies (exponent 1), so that some words are frequent, as in speech. Each task is
answered by ``per_task`` distinct workers drawn uniformly. The worker mix:

* honest workers (a share ``1 - spammers``) have a word error probability drawn
  uniformly in ``word_error``; each true word is, independently with that
  probability, substituted by another word of the vocabulary (70 % of the errors),
  deleted (15 %) or followed by an inserted word (15 %);
* spammers (a share ``spammers``) type a sentence of random words unrelated to the
  audio (length uniform in ``sentence_length``).

An answer left without any word keeps one random word (texts are never empty). The
result is a :class:`~crowdlearn.data.Texts` with ``truth``; ``return_info=True`` also
returns each worker's word error probability (1 for spammers) and spammer flag.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdlearn.data.texts import Texts

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "po", "an", "el")


def _vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(1, 4))
        words["".join(rng.choice(_SYLLABLES, size=n))] = None
    return list(words)


def simulate_texts(
    n_tasks: int = 200,
    n_workers: int = 30,
    per_task: int = 5,
    *,
    sentence_length: tuple[int, int] = (5, 15),
    vocabulary_size: int = 300,
    spammers: float = 0.1,
    word_error: tuple[float, float] = (0.02, 0.2),
    random_state: int | np.random.Generator | None = None,
    return_info: bool = False,
) -> Texts | tuple[Texts, dict[str, Any]]:
    """A simulated transcription crowd (see the module docstring).

    Parameters
    ----------
    n_tasks, n_workers, per_task : int
        ``per_task`` distinct workers (at most ``n_workers``) answer each task.
    sentence_length : (int, int)
        Smallest and largest number of words of a true sentence.
    vocabulary_size : int
    spammers : float
        Share of workers who type unrelated text, in [0, 1].
    word_error : (float, float)
        Range of the honest workers' word error probabilities, within [0, 1].
    random_state : int or Generator, optional
    return_info : bool
        Also return ``{"word_error": (n_workers,), "spammer": (n_workers,) bool}``.

    Returns
    -------
    Texts, or (Texts, dict)

    Examples
    --------
    >>> data = simulate_texts(n_tasks=20, n_workers=8, per_task=3, random_state=0)
    >>> data.n_tasks, data.n_annotations, data.truth is not None
    (20, 60, True)
    """
    if not 1 <= per_task <= n_workers:
        raise ValueError(f"per_task must be in [1, n_workers={n_workers}], got {per_task}")
    if n_tasks < 1 or vocabulary_size < 2:
        raise ValueError("n_tasks must be at least 1 and vocabulary_size at least 2")
    low, high = sentence_length
    if not 1 <= low <= high:
        raise ValueError(f"sentence_length must be 1 <= low <= high, got {sentence_length}")
    if not 0 <= spammers <= 1 or not 0 <= word_error[0] <= word_error[1] <= 1:
        raise ValueError("spammers and the word_error range must lie within [0, 1]")
    rng = np.random.default_rng(random_state)
    vocabulary = _vocabulary(vocabulary_size, rng)
    frequency = 1.0 / np.arange(1, vocabulary_size + 1)
    frequency /= frequency.sum()

    def sentence() -> list[str]:
        n = int(rng.integers(low, high + 1))
        return [vocabulary[i] for i in rng.choice(vocabulary_size, size=n, p=frequency)]

    truth = [sentence() for _ in range(n_tasks)]
    spammer = rng.random(n_workers) < spammers
    error = np.where(spammer, 1.0, rng.uniform(word_error[0], word_error[1], n_workers))
    chosen = np.argsort(rng.random((n_tasks, n_workers)), axis=1)[:, :per_task]
    task = np.repeat(np.arange(n_tasks), per_task)
    worker = chosen.ravel()
    texts = []
    for t, w in zip(task.tolist(), worker.tolist(), strict=True):
        if spammer[w]:
            words = sentence()
        else:
            words = []
            for word in truth[t]:
                if rng.random() >= error[w]:
                    words.append(word)
                    continue
                kind = rng.random()
                if kind < 0.7:
                    words.append(vocabulary[int(rng.integers(vocabulary_size))])
                elif kind >= 0.85:
                    words += [word, vocabulary[int(rng.integers(vocabulary_size))]]
            if not words:
                words = [vocabulary[int(rng.integers(vocabulary_size))]]
        texts.append(" ".join(words))
    data = Texts(
        task,
        worker,
        np.array(texts, dtype=object),
        n_tasks=n_tasks,
        worker_ids=np.arange(n_workers),
        truth=np.array([" ".join(s) for s in truth], dtype=object),
    )
    if return_info:
        return data, {"word_error": error, "spammer": spammer}
    return data
