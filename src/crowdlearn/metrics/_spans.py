"""Strict span scores: a predicted span counts only with its exact bounds and type."""

from __future__ import annotations

import pandas as pd

from crowdlearn.data.errors import CrowdDataError

_COLUMNS = ("task", "start", "end", "label")


def _span_set(frame: pd.DataFrame, what: str) -> set[tuple]:
    missing = [c for c in _COLUMNS if c not in frame.columns]
    if missing:
        raise CrowdDataError(f"{what} spans need columns {list(_COLUMNS)}; missing {missing}")
    return set(frame.loc[:, list(_COLUMNS)].itertuples(index=False, name=None))


def span_scores(predicted: pd.DataFrame, truth: pd.DataFrame) -> dict[str, float]:
    """Strict (exact span and type) precision, recall and F1, micro-averaged over spans,
    as conlleval and seqeval's default mode count them.

    Parameters
    ----------
    predicted, truth : DataFrame
        One row per span, columns ``task``, ``start``, ``end``, ``label`` (the same
        coding on both sides: ids or codes).

    Returns
    -------
    dict
        ``precision``, ``recall``, ``f1`` (0 where undefined) and the counts
        ``n_predicted``, ``n_true``, ``n_correct``.

    Examples
    --------
    >>> p = pd.DataFrame({"task": [0, 0], "start": [0, 3], "end": [2, 4], "label": ["P", "L"]})
    >>> t = pd.DataFrame({"task": [0, 0], "start": [0, 3], "end": [2, 5], "label": ["P", "L"]})
    >>> span_scores(p, t)["f1"]
    0.5
    """
    pred, true = _span_set(predicted, "predicted"), _span_set(truth, "true")
    correct = len(pred & true)
    precision = correct / len(pred) if pred else 0.0
    recall = correct / len(true) if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n_predicted": len(pred),
        "n_true": len(true),
        "n_correct": correct,
    }


def span_f1(predicted: pd.DataFrame, truth: pd.DataFrame) -> float:
    """Strict span F1 (see :func:`span_scores`)."""
    return span_scores(predicted, truth)["f1"]
