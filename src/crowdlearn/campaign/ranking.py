"""Which tasks need another label, and who should give it.

:func:`rank_tasks` scores every task by the value of one more label under the current
model (:mod:`crowdlearn.campaign.values`); :func:`next_labels` keeps the ``budget``
most valuable open tasks. The current model is an aggregator (Dawid-Skene by default;
one-coin, GLAD or any other strategy), optionally mixed with a classifier's
predictions on the tasks' features (``learner_probas``, in the spirit of CROWDLAB).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.campaign.budget import labels_to_target
from crowdlearn.campaign.values import (
    SCORES,
    Score,
    cavity_posteriors,
    mix_learner,
    next_label_value,
    one_coin_confusion,
)
from crowdlearn.data import CrowdData, CrowdDataError

#: Largest (tasks x workers) table built at once by GLAD's and the routing's gathers.
_CHUNK_CELLS = 5_000_000
#: The most labels the ``to_target`` estimate lets a task need, and its draws per task
#: (the column's sum over many tasks is what matters; each task's value is rough) ...
TARGET_CAP = 30
TARGET_DRAWS = 16
#: ... fewer (down to 4) where the open tasks times 16 would pass this many walks.
TARGET_WALKS = 400_000


def fitted_model(data: CrowdData, strategy: Any = "ds", random_state: int = 0) -> Any:
    """``strategy`` fitted on ``data``: a name (``"ds"``, ``"glad"``, ``"onecoin"``...)
    is made and fitted quietly; an aggregator already fitted is returned as is."""
    if isinstance(strategy, str):
        from crowdlearn.aggregation import make_aggregator

        model = make_aggregator(strategy)
        params = model.get_params()
        if "progress" in params:
            model.set_params(progress=False)
        if "random_state" in params:
            model.set_params(random_state=random_state)
        return model.fit(data)
    if getattr(strategy, "probas_", None) is None:
        raise CrowdDataError(f"{type(strategy).__name__} is not a fitted aggregator")
    if np.shape(strategy.probas_)[0] != data.n_tasks:
        raise CrowdDataError(
            f"the aggregator was fitted on {np.shape(strategy.probas_)[0]} tasks, the data "
            f"have {data.n_tasks}"
        )
    return strategy


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def worker_correctness(model: Any, data: CrowdData, tasks: np.ndarray) -> np.ndarray:
    """Probability that each worker answers each of ``tasks`` right, (len(tasks), W).

    Dawid-Skene-like models (``confusions_``): ``sum_k T_ik pi_j[k, k]``; GLAD:
    ``sigmoid(alpha_j beta_i)``; other strategies: the worker's mean posterior
    probability of the labels it gave (its agreement with the model).
    """
    probas = model.probas_[tasks]
    if hasattr(model, "confusions_"):
        diagonal = np.diagonal(model.confusions_, axis1=1, axis2=2)  # (W, K)
        return probas @ diagonal.T
    if hasattr(model, "alphas_") and hasattr(model, "betas_"):
        return _sigmoid(np.outer(model.betas_[tasks], model.alphas_))
    right = model.probas_[data.task, data.label]
    counts = np.bincount(data.worker, minlength=data.n_workers)
    skill = np.bincount(data.worker, weights=right, minlength=data.n_workers)
    skill = np.divide(skill, counts, out=np.full(data.n_workers, np.nan), where=counts > 0)
    skill = np.where(np.isnan(skill), np.nanmean(skill) if counts.any() else 0.5, skill)
    return np.broadcast_to(skill, (len(tasks), data.n_workers)).copy()


def next_worker_confusion(model: Any, data: CrowdData) -> np.ndarray:
    """The confusion matrix of the crowd's next label: the workers' matrices averaged
    with their share of the labels, (K, K); for GLAD one matrix per task (n, K, K),
    whose accuracy is the label-weighted mean of ``sigmoid(alpha_j beta_i)``."""
    k = data.n_classes
    workload = np.bincount(data.worker, minlength=data.n_workers).astype(np.float64)
    if workload.sum() == 0:
        workload[:] = 1.0
    share = workload / workload.sum()
    if hasattr(model, "confusions_"):
        return np.einsum("j,jkl->kl", share, np.asarray(model.confusions_, dtype=np.float64))
    if hasattr(model, "alphas_") and hasattr(model, "betas_"):
        accuracy = np.empty(data.n_tasks)
        step = max(1, _CHUNK_CELLS // max(data.n_workers, 1))
        for start in range(0, data.n_tasks, step):
            stop = min(start + step, data.n_tasks)
            betas = np.asarray(model.betas_[start:stop], dtype=np.float64)
            accuracy[start:stop] = _sigmoid(np.outer(betas, model.alphas_)) @ share
        return one_coin_confusion(accuracy, k)
    right = model.probas_[data.task, data.label]
    accuracy = float(right.mean()) if len(right) else 1.0 / k
    return one_coin_confusion(accuracy, k)


def learner_weights(
    probas: np.ndarray, learner_probas: np.ndarray, data: CrowdData
) -> tuple[float, float]:
    """CROWDLAB-style weights of a classifier and of one annotator.

    Each is how much its agreement with the consensus (the most probable class of
    ``probas``) beats the share of the most common consensus class; the annotator's is
    the mean over labels. A classifier no better than that baseline gets weight 0.
    """
    annotated = np.bincount(data.task, minlength=data.n_tasks) > 0
    consensus = probas.argmax(axis=1)
    if not annotated.any():
        return 0.0, 1.0
    baseline = np.bincount(consensus[annotated], minlength=probas.shape[1]).max()
    baseline = baseline / annotated.sum()
    model_agreement = float(
        (np.asarray(learner_probas).argmax(axis=1)[annotated] == consensus[annotated]).mean()
    )
    annotator_agreement = float((data.label == consensus[data.task]).mean())
    floor = 1e-3
    return max(model_agreement - baseline, 0.0), max(annotator_agreement - baseline, floor)


def cavity_of(model: Any, data: CrowdData) -> np.ndarray | None:
    """The model's leave-one-task-out posteriors
    (:func:`~crowdlearn.campaign.values.cavity_posteriors`): one-coin for models with
    ``skills_``, a confusion matrix per worker for those with ``confusions_``; None for
    other models (GLAD, vote-based), which have no such worker counts."""
    if hasattr(model, "skills_"):
        one_coin = True
    elif hasattr(model, "confusions_"):
        one_coin = False
    else:
        return None
    return cavity_posteriors(
        np.asarray(model.probas_, dtype=np.float64),
        data.task,
        data.worker,
        data.label,
        data.n_workers,
        one_coin=one_coin,
    )


def rank_tasks(
    data: CrowdData,
    strategy: Any = "ds",
    *,
    score: Score = "decision",
    target_confidence: float | None = None,
    min_labels: int = 2,
    learner_probas: np.ndarray | None = None,
    route: int = 0,
    stopped_workers: Any = (),
    route_first: int | None = None,
    leave_one_out: bool = True,
    random_state: int = 0,
) -> pd.DataFrame:
    """Every task with the value of one more label, most valuable open task first.

    Parameters
    ----------
    data : CrowdData
        The labels so far.
    strategy : str or fitted aggregator, default "ds"
        The model of the crowd: a strategy name fitted on ``data`` or an aggregator
        already fitted on it. Dawid-Skene, one-coin and GLAD use their worker models;
        other strategies a single accuracy (their agreement with the crowd).
    score : {"decision", "entropy", "accuracy"}, default "decision"
        The value of one more label (:mod:`crowdlearn.campaign.values`): the
        information it brings about whether the task's current label is right, about
        the task's true class (the same with two classes), or its expected gain in
        the probability that the label is right.
    target_confidence : float, optional
        Tasks whose posterior probability of their label reaches it, with at least
        ``min_labels`` labels, are ``done``: they go last, with score 0. The table
        then has a ``to_target`` column: the labels each task is expected to still
        need to get there, from the crowd's average worker
        (:func:`~crowdlearn.campaign.budget.labels_to_target`, capped at
        ``TARGET_CAP``; 0 for done tasks). Their sum is what the campaign is expected
        to spend to finish.
    min_labels : int, default 2
        Labels a task needs before it can be done. A lone label is checked against
        nothing: with one label per task, Dawid-Skene cannot tell good workers from bad
        and its posteriors are only its prior's optimism.
    learner_probas : ndarray (n_tasks, n_classes), optional
        A classifier's out-of-sample class probabilities on the tasks' features; the
        posteriors are mixed with them (:func:`~crowdlearn.campaign.values.mix_learner`)
        with CROWDLAB-style weights (:func:`learner_weights`).
    route : int, default 0
        Suggest up to this many workers per open task: those most likely to be right
        on it, leaving out the workers who already answered it and ``stopped_workers``.
    stopped_workers : iterable of worker ids
        Workers never suggested (e.g. those ``crowdlearn identify`` says to stop).
    route_first : int, optional
        Route only the first this many open tasks (the others get no suggestion):
        routing costs a (tasks x workers) table, and a round asks for few tasks.
    leave_one_out : bool, default True
        Score each task on its posterior under a worker model fitted without it
        (:func:`~crowdlearn.campaign.values.cavity_posteriors`), so that a task's own
        labels do not vouch for the workers who gave them (fitted posteriors are
        overconfident early in a campaign). Used with Dawid-Skene-like models
        (``confusions_``) and one-coin (``skills_``); other models score on their
        posteriors. The ``label`` and ``confidence`` columns stay the model's.
    random_state : int, default 0
        Seed of the model and of the order among equal scores.

    Returns
    -------
    DataFrame, one row per task in priority order: ``task``, ``label`` (current most
    probable class), ``confidence`` (its probability), ``score``, ``n_labels``,
    ``done``, with ``target_confidence`` ``to_target``, and with ``route`` a ``workers``
    column (ids joined by ``;``).
    """
    if score not in SCORES:
        raise CrowdDataError(f"score must be one of {list(SCORES)}, got {score!r}")
    if target_confidence is not None and not 0 < target_confidence <= 1:
        raise CrowdDataError(f"target_confidence must be in (0, 1], got {target_confidence}")
    if min_labels < 0:
        raise CrowdDataError(f"min_labels must be 0 or more, got {min_labels}")
    if route < 0:
        raise CrowdDataError(f"route must be 0 or more, got {route}")
    model = fitted_model(data, strategy, random_state)
    probas = np.asarray(model.probas_, dtype=np.float64)
    n_labels = np.bincount(data.task, minlength=data.n_tasks)
    if n_labels.any() and np.isin(probas[n_labels > 0], (0.0, 1.0)).all():
        name = strategy if isinstance(strategy, str) else type(strategy).__name__
        raise CrowdDataError(
            f"{name} gives hard labels (probabilities 0 or 1), so every task looks certain; "
            "the value of a label needs probabilities: use ds, onecoin-ds, glad or naivesoft"
        )
    scoring = cavity_of(model, data) if leave_one_out else None
    if learner_probas is not None:
        learner_probas = np.asarray(learner_probas, dtype=np.float64)
        weights = learner_weights(probas, learner_probas, data)
        if scoring is not None:
            scoring = mix_learner(scoring, learner_probas, n_labels, *weights)
        probas = mix_learner(probas, learner_probas, n_labels, *weights)
    if scoring is None:
        scoring = probas
    confusion = next_worker_confusion(model, data)
    values = next_label_value(scoring, confusion, score)
    if score != "entropy":  # ties (accuracy: zero on many tasks) in the entropy order
        secondary = next_label_value(scoring, confusion, "entropy")
    else:
        secondary = np.zeros(data.n_tasks)
    confidence = probas.max(axis=1)
    done = np.zeros(data.n_tasks, bool)
    if target_confidence is not None:
        done = (confidence >= target_confidence) & (n_labels >= min_labels)
    values = np.where(done, 0.0, values)
    to_target = None
    if target_confidence is not None:
        to_target, _ = labels_to_target(
            probas,
            confusion,
            target_confidence,
            n_labels=n_labels,
            min_labels=min_labels,
            belief=scoring,
            cap=TARGET_CAP,
            draws=target_draws(int((~done).sum())),
            random_state=random_state,
        )
    noise = np.random.default_rng(random_state).random(data.n_tasks)
    # open tasks first, then by score, then fewer labels, then a seeded random order
    order = np.lexsort((noise, n_labels, -secondary, -values, done))
    table = pd.DataFrame(
        {
            "task": data.task_ids[order],
            "label": data.classes[probas.argmax(axis=1)[order]],
            "confidence": confidence[order],
            "score": values[order],
            "n_labels": n_labels[order],
            "done": done[order],
        }
    )
    if to_target is not None:
        table["to_target"] = to_target[order]
    if route:
        open_tasks = order[~done[order]][:route_first]
        table["workers"] = ""
        table.loc[: len(open_tasks) - 1, "workers"] = route_workers(
            model, data, open_tasks, route, stopped_workers
        )
    return table


def lone_label_disagreements(data: CrowdData, probas: np.ndarray) -> int:
    """How many tasks with exactly one label get another label from the model.

    Early in a campaign few tasks are shared between workers, and a worker model such
    as Dawid-Skene then rests a lone label's task on the class prior and on what the
    worker's other labels say, so it can relabel such tasks (with one label a task it
    relabelled a tenth of the Snow et al. WSD crowd's tasks, and most of the labels it
    replaced were right: ``python -m benchmarks campaign-cold-start``). ``crowdlearn next``
    says how many, so that the ``label`` column of those tasks is not mistaken for
    the crowd's answer.

    Examples
    --------
    >>> import numpy as np
    >>> data = CrowdData(np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([1, 0, 0]))
    >>> lone_label_disagreements(data, np.array([[0.9, 0.1], [0.8, 0.2]]))
    1
    """
    counts = np.bincount(data.task, minlength=data.n_tasks)
    single = counts[data.task] == 1
    model_labels = np.asarray(probas).argmax(axis=1)
    return int((model_labels[data.task[single]] != data.label[single]).sum())


def target_draws(n_open: int) -> int:
    """Walks per open task for ``to_target``: ``TARGET_DRAWS``, fewer (at least 4) when
    there are so many open tasks that ``TARGET_WALKS`` would be passed."""
    return int(np.clip(TARGET_WALKS // max(n_open, 1), 4, TARGET_DRAWS))


def route_workers(
    model: Any, data: CrowdData, tasks: np.ndarray, route: int, stopped_workers: Any = ()
) -> list[str]:
    """For each of ``tasks``, up to ``route`` worker ids (joined by ``;``) most likely
    to answer it right, leaving out those who answered it and ``stopped_workers``."""
    stopped = np.isin(data.worker_ids, np.asarray(list(stopped_workers), dtype=object))
    answered = pd.DataFrame({"task": data.task, "worker": data.worker})
    position = np.full(data.n_tasks, -1)
    position[tasks] = np.arange(len(tasks))
    answered = answered[position[answered["task"].to_numpy()] >= 0]
    suggestions: list[str] = []
    step = max(1, _CHUNK_CELLS // max(data.n_workers, 1))
    for start in range(0, len(tasks), step):
        chunk = tasks[start : start + step]
        right = worker_correctness(model, data, chunk).astype(np.float64)
        right[:, stopped] = -np.inf
        rows = position[answered["task"].to_numpy()] - start
        inside = (rows >= 0) & (rows < len(chunk))
        right[rows[inside], answered["worker"].to_numpy()[inside]] = -np.inf
        top = np.argsort(-right, axis=1, kind="stable")[:, :route]
        for row, picks in enumerate(top):
            keep = picks[np.isfinite(right[row, picks])]
            suggestions.append(";".join(str(w) for w in data.worker_ids[keep]))
    return suggestions


def next_labels(
    data: CrowdData, budget: int, strategy: Any = "ds", **options: Any
) -> pd.DataFrame:
    """The ``budget`` open tasks that most need one more label, most valuable first.

    One label per task per call: ask for them, add the answers, and call again (a
    task chosen now is re-scored with its new label next time). Fewer than ``budget``
    rows come back when fewer tasks are open. ``options`` are those of
    :func:`rank_tasks`.

    Examples
    --------
    >>> from crowdlearn.simulate import independent_confusion
    >>> data = independent_confusion(n_worker=10, n_task=100, n_classes=2, feedback=2, seed=0)
    >>> chosen = next_labels(data, budget=5)
    >>> len(chosen), list(chosen.columns)
    (5, ['task', 'label', 'confidence', 'score', 'n_labels', 'done'])
    """
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise CrowdDataError(f"budget must be a positive number of labels, got {budget!r}")
    options.setdefault("route_first", int(budget))
    table = rank_tasks(data, strategy, **options)
    return table[~table["done"]].head(int(budget)).reset_index(drop=True)
