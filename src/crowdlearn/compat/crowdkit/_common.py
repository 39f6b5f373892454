"""The coding of crowd-kit frames and the pandas layouts of crowd-kit's results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.data import CrowdData

# ----------------------------------------------------------------------- coding


@dataclass(frozen=True)
class _Coded:
    """A crowd-kit frame coded for crowdlearn: the data and the id of each code."""

    crowd: CrowdData
    tasks: pd.Index
    workers: pd.Index
    classes: pd.Index


def _factorize(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    codes, uniques = pd.factorize(column, sort=True)
    if (codes < 0).any():
        raise ValueError(f"column {column.name!r} has missing values")
    return codes, pd.Index(uniques)


def _code(data: pd.DataFrame, classes: pd.Index | None = None) -> _Coded:
    """Code a (task, worker, label) frame; ``classes`` fixes the label codes."""
    data = data[["task", "worker", "label"]]  # a KeyError names a missing column
    task, tasks = _factorize(data["task"])
    worker, workers = _factorize(data["worker"])
    if classes is None:
        label, classes = _factorize(data["label"])
    else:
        label = classes.get_indexer(data["label"])
        if (label < 0).any():
            raise ValueError("data has labels outside the given classes")
    crowd = CrowdData(
        task,
        worker,
        label,
        task_ids=tasks.to_numpy(),
        worker_ids=workers.to_numpy(),
        classes=classes.to_numpy(),
        duplicates="keep",
    )
    return _Coded(crowd, tasks.rename("task"), workers.rename("worker"), classes.rename("label"))


def _is_empty(data: pd.DataFrame) -> bool:
    """crowd-kit's early exit: a frame with the columns and no rows."""
    return len(data[["task", "worker", "label"]]) == 0


def _labels(coded: _Coded, codes: np.ndarray) -> pd.Series:
    return pd.Series(coded.classes.take(codes), index=coded.tasks, name="agg_label")


def _probas(coded: _Coded, probas: np.ndarray, columns: str | None = "label") -> pd.DataFrame:
    return pd.DataFrame(
        np.asarray(probas, dtype=np.float64),
        index=coded.tasks,
        columns=coded.classes.rename(columns),
    )


def _per_worker(coded: _Coded, values: np.ndarray, name: str) -> pd.Series:
    return pd.Series(np.asarray(values, dtype=np.float64), index=coded.workers, name=name)


def _errors(coded: _Coded, confusions: np.ndarray) -> pd.DataFrame:
    """crowd-kit's ``errors_``: rows (worker, observed label) for the pairs present in
    the data, one column per true label; ``confusions[j, k, l]`` = P(l | k)."""
    crowd = coded.crowd
    k = crowd.n_classes
    table = np.asarray(confusions, dtype=np.float64).transpose(0, 2, 1).reshape(-1, k)
    cells = crowd.worker.astype(np.int64) * k + crowd.label
    present = np.flatnonzero(np.bincount(cells, minlength=crowd.n_workers * k))
    index = pd.MultiIndex.from_arrays(
        [coded.workers.take(present // k), coded.classes.take(present % k)],
        names=["worker", "label"],
    )
    return pd.DataFrame(table[present], index=index, columns=coded.classes.rename(None))


def _m_step_confusions(
    crowd: CrowdData, probas: np.ndarray, extra: np.ndarray | None = None
) -> np.ndarray:
    """Unsmoothed maximum-likelihood confusions (n_workers, K, K) of posteriors
    ``probas``: ``[j, k, l]`` = expected share of worker j's labels l among its tasks
    of true class k (K weighted bincounts over the annotations)."""
    k = crowd.n_classes
    cells = crowd.worker.astype(np.int64) * k + crowd.label
    counts = np.stack(
        [
            np.bincount(cells, weights=probas[crowd.task, c], minlength=crowd.n_workers * k)
            for c in range(k)
        ],
        axis=1,
    ).reshape(crowd.n_workers, k, k)  # [j, l, k]
    counts = counts.transpose(0, 2, 1)  # [j, k, l]
    if extra is not None:
        counts = counts + extra  # crowd-kit's "addition" of initial counts
    totals = counts.sum(axis=2, keepdims=True)
    return np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)


def _confusions_from_errors(coded: _Coded, errors: pd.DataFrame, strategy: str) -> np.ndarray:
    """(n_workers, K, K) confusions ``[j, k, l]`` from crowd-kit's ``initial_error``
    layout (rows (worker, observed label), one column per true label), checked as
    crowd-kit checks it: "assign" needs every (worker, label) pair of the data and,
    for probabilities, each worker's columns summing to 1; "addition" takes missing
    rows as zero counts."""
    if list(errors.index.names) != ["worker", "label"]:
        raise ValueError(
            f"The index of initial_error must be: ['worker', 'label'],but got: "
            f"{list(errors.index.names)}"
        )
    k = len(coded.classes)
    full = pd.MultiIndex.from_product([coded.workers, coded.classes], names=["worker", "label"])
    table = errors.reindex(index=full, columns=coded.classes).to_numpy(dtype=np.float64)
    if strategy == "assign":
        crowd = coded.crowd
        used = np.zeros(len(full), dtype=bool)
        used[crowd.worker.astype(np.int64) * k + crowd.label] = True
        missing = used & np.isnan(table).any(axis=1)
        if missing.any():
            n_workers = len(np.unique(np.flatnonzero(missing) // k))
            raise ValueError(
                "All the workers in data should be in initial_error: "
                f"Can not find {n_workers} workers' error matrix in initial_error"
            )
        values = errors.to_numpy(dtype=np.float64)
        if (values <= 1.0).all() and not np.allclose(
            errors.groupby(level="worker", sort=False).sum().to_numpy(dtype=np.float64), 1.0
        ):
            raise ValueError(
                "The sum of each worker's error matrix in initial_error should be 1.0"
            )
    table = np.nan_to_num(table, nan=0.0)
    return table.reshape(len(coded.workers), k, k).transpose(0, 2, 1)


def _skill_weights(
    coded: _Coded,
    skills: pd.Series | None,
    on_missing_skill: str,
    default_skill: float | None,
) -> np.ndarray | None:
    """Per-worker-code vote weights from crowd-kit's ``skills`` and missing-skill rule."""
    if skills is None:
        return None
    if on_missing_skill != "value" and default_skill is not None:
        raise ValueError('default_skill is used but on_missing_skill is not "value"')
    weights = np.array(skills.reindex(coded.workers), dtype=np.float64)  # a writable copy
    missing = np.isnan(weights)
    if missing.any():
        if on_missing_skill == "error":
            n_rows = int(missing[coded.crowd.worker].sum())
            raise ValueError(
                f"Skill value is missing in {n_rows} assignments. Specify skills for every "
                "used worker or use different 'on_unknown_skill' value."
            )
        if on_missing_skill == "ignore":
            weights[missing] = 0.0
        elif on_missing_skill == "value":
            if default_skill is None:
                raise ValueError('on_missing_skill="value" needs a default_skill')
            weights[missing] = float(default_skill)
        else:
            raise ValueError(
                f"Unknown option {on_missing_skill!r} of 'on_missing_skill' argument."
            )
    return weights


def _vote(coded: _Coded, weights: np.ndarray | None) -> np.ndarray:
    """Weighted vote shares (n_tasks, K); plain vote shares without weights."""
    from crowdlearn.aggregation.weighted_vote import vote_shares, weighted_scores

    crowd = coded.crowd
    w = np.ones(crowd.n_workers) if weights is None else weights
    return vote_shares(weighted_scores(crowd, w))


def _accuracy(coded: _Coded, labels: np.ndarray) -> pd.Series:
    from crowdlearn.aggregation.weighted_vote import worker_accuracy

    return _per_worker(coded, worker_accuracy(coded.crowd, labels), "skill")


# ------------------------------------------------------------------ base classes


class _Classification:
    """Shared behaviour of crowd-kit's classification aggregators."""

    labels_: pd.Series | None
    probas_: pd.DataFrame | None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def _params(self) -> dict[str, Any]:
        import inspect

        names = inspect.signature(type(self).__init__).parameters
        return {n: getattr(self, n) for n in names if n != "self" and hasattr(self, n)}

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        """Fit and return ``labels_`` (a Series indexed by task, named ``agg_label``)."""
        self.fit(data)  # type: ignore[attr-defined]
        return self.labels_

    def fit_predict_proba(self, data: pd.DataFrame) -> pd.DataFrame:
        """Fit and return ``probas_`` (tasks x labels)."""
        self.fit(data)  # type: ignore[attr-defined]
        return self.probas_
