"""Text metrics: the word error rate (WER) and the word edit distance it counts.

The WER of a corpus is the total number of word edits (substitutions, deletions,
insertions; each costs 1) needed to turn each hypothesis into its reference, divided
by the total number of reference words (Levenshtein distance over words; the measure
used by the CrowdSpeech paper, Pavlichenko et al., NeurIPS Datasets and Benchmarks
2021). The distance is the classic dynamic programme (Wagner and Fischer, JACM 1974),
written here in plain Python over word codes after cutting the common prefix and
suffix (crowd transcriptions mostly agree, so the table left is small); a larger table
is filled one row at a time with numpy, in memory proportional to the shorter text.

Normalisation (``normalise=True``, :func:`normalise_text`): the text is lower-cased
(``str.lower``); apostrophes (``'`` and the typographic ``’``) are deleted, so that
"I'm" and "im" are one word; every other character that is neither a letter, a digit
nor whitespace (punctuation, symbols: ``.,;:!?"-()`` ...) is replaced by a space; the
result is split on whitespace. "Air-tight." thus becomes the two words "air tight".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

_APOSTROPHES = re.compile("['\u2019]")
_NOT_WORD = re.compile(r"[^\w\s]|_")


def normalise_text(text: str) -> str:
    """Lower-cased, apostrophes deleted, other punctuation turned into spaces, single
    spaces between the words (see the module docstring).

    Examples
    --------
    >>> normalise_text("I'm here, Air-tight!")
    'im here air tight'
    """
    text = _APOSTROPHES.sub("", text.lower())
    return " ".join(_NOT_WORD.sub(" ", text).split())


def words(text: str, normalise: bool = True) -> list[str]:
    """The words of ``text`` (split on whitespace, normalised first if asked)."""
    return (normalise_text(text) if normalise else text).split()


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance between two sequences (of words, or of word codes): the
    fewest substitutions, deletions and insertions, each of cost 1.

    Examples
    --------
    >>> edit_distance("the cat sat".split(), "the cat sat down".split())
    1
    """
    start, end_a, end_b = 0, len(a), len(b)
    while start < end_a and start < end_b and a[start] == b[start]:
        start += 1
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    a, b = a[start:end_a], b[start:end_b]
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    if len(a) * len(b) > _LONG:
        return _long_edit_distance(a, b)
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        left = i
        for j, y in enumerate(b, start=1):
            left = min(previous[j] + 1, left + 1, previous[j - 1] + (x != y))
            current.append(left)
        previous = current
    return previous[-1]


#: Above this many cells, :func:`edit_distance` fills its table one row at a time with
#: numpy (same result; memory in proportion to the shorter sequence).
_LONG = 4096


def _long_edit_distance(a: Sequence, b: Sequence) -> int:
    """:func:`edit_distance` by rows of numpy: ``row[j] = min(up + 1, diagonal + (x !=
    b[j]), row[j - 1] + 1)``, the last term a running minimum of ``best[k] + (j - k)``."""
    codes: dict = {}
    a_codes = [codes.setdefault(x, len(codes)) for x in a]
    b_codes = np.fromiter((codes.setdefault(y, len(codes)) for y in b), np.int64, len(b))
    steps = np.arange(len(b) + 1, dtype=np.int64)
    previous = steps.copy()
    best = np.empty(len(b) + 1, dtype=np.int64)
    for i, x in enumerate(a_codes, start=1):
        best[0] = i
        np.minimum(previous[1:] + 1, previous[:-1] + (b_codes != x), out=best[1:])
        best -= steps
        previous = np.minimum.accumulate(best) + steps
    return int(previous[-1])


def word_edits(
    hypotheses: Iterable[str], references: Iterable[str | None], normalise: bool = True
) -> tuple[int, int]:
    """Total word edits and total reference words over the pairs whose reference is
    known (a ``None`` reference is left out)."""
    edits = total = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        if reference is None:
            continue
        ref = words(reference, normalise)
        hyp = words(hypothesis if hypothesis is not None else "", normalise)
        edits += edit_distance(hyp, ref)
        total += len(ref)
    return edits, total


def word_error_rate(
    hypotheses: Iterable[str], references: Iterable[str | None], normalise: bool = True
) -> float:
    """Corpus word error rate: total word edits / total reference words.

    Parameters
    ----------
    hypotheses : iterable of str
        The texts to score (e.g. an aggregator's ``texts_``); ``None`` counts as empty.
    references : iterable of str or None
        The true texts, aligned with ``hypotheses``; pairs with a ``None`` reference
        (unknown truth) are left out.
    normalise : bool, default True
        Compare the texts after :func:`normalise_text` (lower case, no punctuation);
        otherwise split them on whitespace as they are.

    Returns
    -------
    float
        Can exceed 1 (a hypothesis longer than its reference).

    Raises
    ------
    ValueError
        When the references hold no word at all (the rate is undefined), or the two
        sequences differ in length.

    Examples
    --------
    >>> word_error_rate(["the cat sat", "a dog"], ["The cat sat.", "a big"])
    0.2
    """
    try:
        edits, total = word_edits(hypotheses, references, normalise)
    except ValueError:
        raise ValueError("hypotheses and references differ in length") from None
    if total == 0:
        raise ValueError("the references hold no word: the word error rate is undefined")
    return edits / total
