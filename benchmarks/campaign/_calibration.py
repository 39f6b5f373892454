"""Control for ``campaign-replay``: how sure the policy's model is against how often it
is right, in sample and leave-one-task-out (:func:`crowdlearn.campaign.values.cavity_posteriors`).

The policy scores tasks on leave-one-task-out posteriors because a Dawid-Skene fit
counts each label twice (as evidence about its task and, through that task, about its
worker). This table measures what that changes part way through a campaign: the
policy is replayed up to a number of labels per task, then both posteriors of the
revealed labels are compared with the truth.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

#: Stop points, in labels per task.
STOPS = (1.3, 2.0)
#: Orders replayed to each stop point (0, 1, ...).
ORDERS = 3


def _excess(confidence: np.ndarray, right: np.ndarray) -> float:
    """Mean confidence minus accuracy (positive: overconfident); NaN when empty."""
    return float(confidence.mean() - right.mean()) if len(right) else float("nan")


def _auc(confidence: np.ndarray, wrong: np.ndarray) -> float:
    """How well low confidence finds the wrong labels (0.5: not at all)."""
    if 0 < wrong.sum() < len(wrong):
        return float(roc_auc_score(wrong, -confidence))
    return float("nan")


def _pair(a: float, b: float, form: str = "{:+.3f}") -> str:
    return " / ".join("-" if np.isnan(x) else form.format(x) for x in (a, b))


def calibration_row(
    name: str, data: Any, replay_to: Callable[[Any, int, int], tuple[Any, Any]]
) -> list[dict[str, Any]]:
    """One row per stop point: in-sample / leave-one-out excess confidence on tasks
    with one label and with more, and the AUC of low confidence for wrong labels
    (means over :data:`ORDERS` orders). ``replay_to(data, seed, labels)`` returns the
    revealed data and its fitted model once at least ``labels`` are revealed."""
    from crowdlearn.campaign.ranking import cavity_of

    rows = []
    for stop in STOPS:
        values = []
        for seed in range(ORDERS):
            sub, model = replay_to(data, seed, int(stop * data.n_tasks))
            fitted = np.asarray(model.probas_, dtype=np.float64)
            cavity = cavity_of(model, sub)
            known = sub.truth >= 0
            right = (fitted.argmax(axis=1) == sub.truth)[known]
            counts = np.bincount(sub.task, minlength=sub.n_tasks)[known]
            one, more = counts == 1, counts >= 2
            row = []
            for probas in (fitted, cavity):
                confidence = probas.max(axis=1)[known]
                row += [
                    _excess(confidence[one], right[one]),
                    _excess(confidence[more], right[more]),
                    _auc(confidence, ~right),
                ]
            values.append(row)
        with warnings.catch_warnings():  # a column with no task (no 1-label task) is NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(np.asarray(values, dtype=np.float64), axis=0)
        rows.append(
            {
                "dataset": name,
                "labels per task": f"{stop:g}",
                "excess confidence, 1 label (in sample / left out)": _pair(mean[0], mean[3]),
                "excess confidence, 2+ labels": _pair(mean[1], mean[4]),
                "AUC of low confidence for wrong labels": _pair(mean[2], mean[5], "{:.3f}"),
            }
        )
    return rows


def calibration_table(
    loaded: dict[str, Any], replay_to: Callable[[Any, int, int], tuple[Any, Any]]
) -> pd.DataFrame:
    return pd.DataFrame(
        [row for name, data in loaded.items() for row in calibration_row(name, data, replay_to)]
    )
