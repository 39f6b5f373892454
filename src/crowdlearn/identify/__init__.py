"""Identify hard tasks and unreliable workers, and measure agreement.

One function per score, each returning an array aligned with the codes of a
:class:`~crowdlearn.CrowdData` (tasks: ``data.task_ids``, workers: ``data.worker_ids``):

- task difficulty: :func:`vote_entropy`, :func:`glad_difficulty`, :func:`aum`,
  :func:`waum`, :func:`feedback_effort`;
- worker reliability: :func:`confusion_trace`, :func:`spammer_score`,
  :func:`glad_ability`, :func:`cmm_group` / :func:`cmm_membership`,
  :func:`gold_accuracy`, :func:`agreement_with_labels`, :func:`workload`;
- agreement: :func:`krippendorff_alpha`, :func:`class_agreement`, :func:`coincidences`.

:func:`scores_frame` turns arrays into a DataFrame keyed by the user's ids, and
:func:`compute` computes scores by their registry names (:data:`SCORES`), the names the
``crowdlearn identify`` command takes.

Examples
--------
>>> from crowdlearn.simulate import hammer_spammer
>>> data = hammer_spammer(n_worker=10, n_task=50, n_classes=3, feedback=4, seed=0)
>>> frame = compute(data, ["spammer", "trace"])
>>> list(frame["worker"].columns)
['spammer', 'trace']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from crowdlearn._lazy import attach
from crowdlearn.data import CrowdData
from crowdlearn.identify._margins import margins
from crowdlearn.identify.agreement import (
    agreement_with_labels,
    class_agreement,
    coincidences,
    feedback_effort,
    krippendorff_alpha,
    workload,
)
from crowdlearn.identify.decisions import DECISIONS, decision_counts, worker_decisions
from crowdlearn.identify.difficulty import (
    aum,
    glad_difficulty,
    vote_entropy,
    waum,
    waum_trust,
)
from crowdlearn.identify.reliability import (
    CONFUSION_MODELS,
    cmm_group,
    cmm_membership,
    confusion_trace,
    fit_confusion_model,
    glad_ability,
    gold_accuracy,
    spammer_score,
    spammer_scores_of,
)

Axis = Literal["task", "worker"]


@dataclass(frozen=True)
class Score:
    """A named score: its axis, how to compute it, and which end is the worst.

    ``compute(data, context)`` returns the array; ``context`` caches fitted models shared
    by several scores (one Dawid-Skene fit for trace and spammer score).
    ``worst`` is ``"low"`` when low values flag bad tasks/workers (pruned first).
    """

    axis: Axis
    compute: Callable[[CrowdData, dict[str, Any]], np.ndarray]
    worst: Literal["low", "high"]
    description: str


def _cached(context: dict[str, Any], key: str, make: Callable[[], Any]) -> Any:
    if key not in context:
        context[key] = make()
    return context[key]


def _confusion_model(data: CrowdData, context: dict[str, Any]) -> Any:
    name = context.get("confusion_model", "ds")
    params = {} if name == "ds" else _training(context)
    return _cached(context, f"model:{name}", lambda: fit_confusion_model(data, name, **params))


def _glad(data: CrowdData, context: dict[str, Any]) -> Any:
    from crowdlearn.aggregation import GLAD

    return _cached(context, "model:glad", lambda: GLAD().fit(data))


def _majority_labels(data: CrowdData, context: dict[str, Any]) -> np.ndarray:
    from crowdlearn.aggregation import MajorityVote

    return _cached(
        context,
        "labels:mv",
        lambda: MajorityVote(tie_break="random", random_state=0).fit(data).predict(),
    )


def _training(context: dict[str, Any]) -> dict[str, Any]:
    return dict(context.get("training", {}))


#: Scores by the names the CLI takes.
SCORES: dict[str, Score] = {
    "entropy": Score(
        "task", lambda d, c: vote_entropy(d), "high", "entropy of the vote frequencies"
    ),
    "glad-difficulty": Score(
        "task", lambda d, c: glad_difficulty(d, _glad(d, c)), "high", "GLAD's 1 / beta"
    ),
    "aum": Score(
        "task",
        lambda d, c: aum(d, **_training(c)),
        "low",
        "area under the margin of the majority-vote label (Pleiss et al. 2020)",
    ),
    "waum": Score(
        "task",
        lambda d, c: waum(d, _confusion_model(d, c), **_training(c)),
        "low",
        "trust-weighted AUM of the annotations (Lefort et al. 2022)",
    ),
    "feedback-effort": Score(
        "task", lambda d, c: feedback_effort(d), "low", "number of labels of the task"
    ),
    "trace": Score(
        "worker",
        lambda d, c: confusion_trace(d, _confusion_model(d, c)),
        "low",
        "trace of the worker's confusion matrix",
    ),
    "spammer": Score(
        "worker",
        lambda d, c: spammer_score(d, _confusion_model(d, c)),
        "low",
        "Raykar & Yu spammer score (0: spammer, 1: perfect)",
    ),
    "glad-ability": Score(
        "worker", lambda d, c: glad_ability(d, _glad(d, c)), "low", "GLAD's alpha"
    ),
    "cmm-group": Score(
        "worker",
        lambda d, c: cmm_group(
            d, _cached(c, "model:cmm", lambda: fit_confusion_model(d, "cmm", **_training(c)))
        ),
        "low",
        "most probable CMM group",
    ),
    "gold-accuracy": Score(
        "worker", lambda d, c: gold_accuracy(d), "low", "accuracy against the known truth"
    ),
    "mv-agreement": Score(
        "worker",
        lambda d, c: agreement_with_labels(d, _majority_labels(d, c)),
        "low",
        "share of labels equal to the majority vote",
    ),
    "workload": Score("worker", lambda d, c: workload(d), "low", "number of labels given"),
}


def scores_frame(data: CrowdData, axis: Axis, scores: dict[str, Any]) -> pd.DataFrame:
    """A DataFrame of per-task or per-worker score arrays, indexed by the user's ids.

    Parameters
    ----------
    data : CrowdData
    axis : {"task", "worker"}
    scores : dict of name to array
        Each array aligned with the task (or worker) codes.

    Examples
    --------
    >>> data = CrowdData.from_arrays(["t1", "t2"], ["w", "w"], ["a", "b"])
    >>> scores_frame(data, "task", {"entropy": vote_entropy(data)})["entropy"].to_dict()
    {'t1': 0.0, 't2': 0.0}
    """
    if axis not in ("task", "worker"):
        raise ValueError(f"axis must be 'task' or 'worker', got {axis!r}")
    ids = data.task_ids if axis == "task" else data.worker_ids
    columns = {}
    for name, values in scores.items():
        values = np.asarray(values)
        if len(values) != len(ids):
            raise ValueError(f"score {name!r} has {len(values)} values for {len(ids)} {axis}s")
        columns[name] = values
    return pd.DataFrame(columns, index=pd.Index(ids, name=axis))


def compute(
    data: CrowdData,
    names: Iterable[str],
    confusion_model: str = "ds",
    training: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
) -> dict[Axis, pd.DataFrame]:
    """Compute scores by name; one DataFrame per axis, keyed by the user's ids.

    Parameters
    ----------
    data : CrowdData
    names : iterable of str
        Keys of :data:`SCORES`.
    confusion_model : {"ds", "crowdlayer", "conal", "cmm"}
        The worker confusion matrices behind ``trace``, ``spammer`` and ``waum``.
    training : dict, optional
        Training parameters of the classifiers (AUM, WAUM, learned confusion models).
    context : dict, optional
        A cache of fitted models to share between calls.

    Returns
    -------
    dict with keys among ``"task"`` and ``"worker"``
    """
    names = list(dict.fromkeys(names))
    unknown = [name for name in names if name not in SCORES]
    if unknown:
        raise ValueError(f"unknown score(s) {unknown}; known: {sorted(SCORES)}")
    if confusion_model not in CONFUSION_MODELS:
        raise ValueError(f"confusion model must be one of {CONFUSION_MODELS}")
    if data.is_anonymous and any(SCORES[n].axis == "worker" for n in names):
        raise ValueError("worker scores need worker ids; the data are anonymous")
    context = {} if context is None else context
    context.setdefault("confusion_model", confusion_model)
    context.setdefault("training", training or {})
    columns: dict[str, dict[str, np.ndarray]] = {"task": {}, "worker": {}}
    for name in names:
        score = SCORES[name]
        columns[score.axis][name] = score.compute(data, context)
    return {axis: scores_frame(data, axis, values) for axis, values in columns.items() if values}


def worst_codes(values: np.ndarray, worst: Literal["low", "high"], fraction: float) -> np.ndarray:
    """Codes of the ``fraction`` worst entries (NaN last to be chosen; ties by code).

    Examples
    --------
    >>> worst_codes(np.array([0.5, -0.2, 0.9, 0.1]), "low", 0.5)
    array([1, 3])
    """
    if not 0 <= fraction < 1:
        raise ValueError(f"the pruned fraction must be in [0, 1), got {fraction}")
    values = np.asarray(values, dtype=np.float64)
    keys = -values if worst == "high" else values
    keys = np.where(np.isnan(keys), np.inf, keys)
    n_pruned = int(np.floor(fraction * len(values)))
    return np.sort(np.argsort(keys, kind="stable")[:n_pruned])


__all__ = [
    "CONFUSION_MODELS",
    "DECISIONS",
    "SCORES",
    "MarginRecorder",
    "Score",
    "agreement_with_labels",
    "aum",
    "class_agreement",
    "cmm_group",
    "cmm_membership",
    "coincidences",
    "compute",
    "confusion_trace",
    "decision_counts",
    "feedback_effort",
    "fit_confusion_model",
    "glad_ability",
    "glad_difficulty",
    "gold_accuracy",
    "krippendorff_alpha",
    "margins",
    "scores_frame",
    "spammer_score",
    "spammer_scores_of",
    "vote_entropy",
    "waum",
    "waum_trust",
    "worker_decisions",
    "workload",
    "worst_codes",
]

# MarginRecorder subclasses a torch learner: it loads on first use, so that importing this
# package (``crowdlearn next``, ``crowdlearn identify``) does not import torch.
__getattr__, __dir__ = attach(__name__, {"MarginRecorder": "crowdlearn.identify.recorder"})
