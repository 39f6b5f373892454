"""Keep, review or stop: a decision per worker, with the counts behind it.

Each worker's accuracy is estimated from the aggregated posteriors ``T`` (Dawid-Skene
by default): ``expected_correct_j = sum over j's labels of T[task, label]``, the
expected number of j's labels that are right, out of ``n_labels_j``. A Jeffreys
interval (``Beta(c + 1/2, n - c + 1/2)`` quantiles) at ``level`` says how sure that
estimate is. The baseline is ``chance``: the accuracy of a worker who always gives the
crowd's most common class (its posterior share). With ``margin`` m:

* **stop** when the interval's upper end is below ``chance + m``: the worker is, with
  confidence ``level``, no better than a constant answer plus m;
* **keep** when the interval's lower end is at least ``chance + m``: confidently better;
* **review** otherwise: too few labels to tell, or borderline.

The posteriors include the worker's own labels, which makes the estimate optimistic
on tasks with few other labels: a decision errs towards keep, never towards stop.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from crowdlearn.data import CrowdData, CrowdDataError

DECISIONS: tuple[str, ...] = ("keep", "review", "stop")
#: The documented defaults (``crowdlearn identify --decision-margin/--decision-level``).
DEFAULT_MARGIN = 0.1
DEFAULT_LEVEL = 0.95


def worker_decisions(
    data: CrowdData,
    probas: np.ndarray | None = None,
    *,
    strategy: Any = "ds",
    margin: float = DEFAULT_MARGIN,
    level: float = DEFAULT_LEVEL,
) -> pd.DataFrame:
    """One row per worker (indexed by worker id): ``decision`` and the counts behind it.

    Parameters
    ----------
    data : CrowdData
    probas : ndarray (n_tasks, n_classes), optional
        Posteriors to judge the workers against; by default those of ``strategy``.
    strategy : str or fitted aggregator, default "ds"
        Strategy name (see ``crowdlearn aggregate --list``) fitted on ``data`` when
        ``probas`` is not given, or an aggregator already fitted on ``data``.
    margin : float, default 0.1
        How much better than ``chance`` a worker must be (0 <= margin < 1).
    level : float, default 0.95
        Confidence level of the accuracy interval (0 < level < 1).

    Returns
    -------
    DataFrame with columns ``decision`` (keep/review/stop), ``n_labels``,
    ``expected_correct``, ``accuracy``, ``accuracy_low``, ``accuracy_high``, ``chance``.

    Examples
    --------
    >>> from crowdlearn.simulate import hammer_spammer
    >>> data = hammer_spammer(n_worker=10, n_task=300, n_classes=2, ratio=0.3, feedback=6)
    >>> table = worker_decisions(data)
    >>> table["decision"].tolist()[:7].count("keep") >= 6
    True
    """
    if data.is_anonymous:
        raise CrowdDataError("worker decisions need worker ids; the data are anonymous")
    if not 0 <= margin < 1:
        raise CrowdDataError(f"margin must be in [0, 1), got {margin}")
    if not 0 < level < 1:
        raise CrowdDataError(f"level must be in (0, 1), got {level}")
    if probas is None:
        probas = posteriors_of(data, strategy)
    probas = np.asarray(probas, dtype=np.float64)
    if probas.shape != (data.n_tasks, data.n_classes):
        raise CrowdDataError(
            f"probas must have shape {(data.n_tasks, data.n_classes)}, got {probas.shape}"
        )
    n_labels = np.bincount(data.worker, minlength=data.n_workers).astype(np.float64)
    right = probas[data.task, data.label]
    correct = np.bincount(data.worker, weights=right, minlength=data.n_workers)
    annotated = np.bincount(data.task, minlength=data.n_tasks) > 0
    chance = float(probas[annotated].mean(axis=0).max()) if annotated.any() else 1.0
    tail = (1 - level) / 2
    a, b = correct + 0.5, n_labels - correct + 0.5
    low = stats.beta.ppf(tail, a, b)
    high = stats.beta.ppf(1 - tail, a, b)
    bar = min(chance + margin, 1.0)
    decision = np.where(high < bar, "stop", np.where(low >= bar, "keep", "review"))
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(n_labels > 0, correct / np.maximum(n_labels, 1), np.nan)
    return pd.DataFrame(
        {
            "decision": decision,
            "n_labels": n_labels.astype(np.int64),
            "expected_correct": correct,
            "accuracy": accuracy,
            "accuracy_low": low,
            "accuracy_high": high,
            "chance": chance,
        },
        index=pd.Index(data.worker_ids, name="worker"),
    )


def posteriors_of(data: CrowdData, strategy: Any) -> np.ndarray:
    """``probas_`` of ``strategy`` (a name fitted on ``data``, or a fitted aggregator)."""
    if isinstance(strategy, str):
        from crowdlearn.aggregation import make_aggregator

        model = make_aggregator(strategy)
        if "progress" in model.get_params():
            model.set_params(progress=False)
        return model.fit(data).probas_
    probas = getattr(strategy, "probas_", None)
    if probas is None:
        raise CrowdDataError(f"{type(strategy).__name__} is not a fitted aggregator")
    return probas


def decision_counts(table: pd.DataFrame) -> dict[str, int]:
    """How many workers got each decision, in the order keep, review, stop."""
    counts = table["decision"].value_counts()
    return {name: int(counts.get(name, 0)) for name in DECISIONS}
