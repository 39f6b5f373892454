"""What every aggregator shares: the estimator contract, tie-breaking, pandas adapters."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from crowdlearn.data import CrowdData

TieBreak = Literal["random", "lowest"]


class BaseAggregator(BaseEstimator):
    """Base class of feature-blind aggregators (scikit-learn estimator contract).

    Subclasses implement ``_fit(data)``, which sets ``probas_`` (n_tasks, K) and may
    set more learned attributes; this class derives ``labels_`` from ``probas_``
    with the tie policy, and provides ``predict``/``predict_proba`` and the pandas
    adapters ``fit_predict``/``fit_predict_proba``.

    Aggregation is transductive: ``predict`` and ``predict_proba`` return results for
    the tasks of the data given to ``fit`` and take no argument.
    """

    tie_break: TieBreak
    random_state: int | None

    def fit(self, data: CrowdData) -> BaseAggregator:
        """Infer the labels of the tasks in ``data``; returns ``self``."""
        if not isinstance(data, CrowdData):
            raise TypeError(
                f"{type(self).__name__}.fit expects a CrowdData, got {type(data).__name__}; "
                "use fit_predict(df) for a (task, worker, label) DataFrame"
            )
        self._fit(data)
        self.labels_ = break_ties(self.probas_, self.tie_break, self.random_state)
        self.classes_ = data.classes
        self.task_ids_ = data.task_ids
        return self

    def _fit(self, data: CrowdData) -> None:
        raise NotImplementedError

    def predict_proba(self) -> np.ndarray:
        """Probability of each class for each task, shape (n_tasks, n_classes)."""
        self._check_fitted()
        return self.probas_

    def predict(self) -> np.ndarray:
        """Inferred class code of each task, shape (n_tasks,)."""
        self._check_fitted()
        return self.labels_

    def fit_predict(self, data: CrowdData | pd.DataFrame, **frame_options: Any) -> Any:
        """Fit and return hard labels.

        A CrowdData gives an array of class codes; a (task, worker, label) DataFrame
        gives a Series of class ids indexed by task id (``frame_options`` go to
        :meth:`CrowdData.from_frame`), the crowd-kit convention.
        """
        crowd = _as_crowd_data(data, frame_options)
        labels = self.fit(crowd).labels_
        if crowd is data:
            return labels
        return pd.Series(
            crowd.classes[labels], index=pd.Index(crowd.task_ids, name="task"), name="label"
        )

    def fit_predict_proba(self, data: CrowdData | pd.DataFrame, **frame_options: Any) -> Any:
        """Fit and return class probabilities: an array for a CrowdData, a DataFrame
        indexed by task id with one column per class for a DataFrame."""
        crowd = _as_crowd_data(data, frame_options)
        probas = self.fit(crowd).probas_
        if crowd is data:
            return probas
        return pd.DataFrame(
            probas,
            index=pd.Index(crowd.task_ids, name="task"),
            columns=pd.Index(crowd.classes, name="label"),
        )

    def _check_fitted(self) -> None:
        if not hasattr(self, "probas_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")


def _as_crowd_data(data: CrowdData | pd.DataFrame, frame_options: dict[str, Any]) -> CrowdData:
    if isinstance(data, pd.DataFrame):
        return CrowdData.from_frame(data, **frame_options)
    return data


def break_ties(scores: np.ndarray, tie_break: TieBreak, random_state: int | None) -> np.ndarray:
    """Class code of the highest score in each row, with an explicit tie policy.

    ``"lowest"`` takes the lowest class code among the maximal ones; ``"random"``
    takes one of them uniformly at random with a seeded generator (an unseeded
    random tie-break would make results irreproducible, so ``random_state=None`` is
    refused).
    """
    if tie_break == "lowest":
        return scores.argmax(axis=1)
    if tie_break != "random":
        raise ValueError(f"tie_break must be 'random' or 'lowest', got {tie_break!r}")
    if random_state is None:
        raise ValueError(
            "tie_break='random' needs an integer random_state (results must be "
            "reproducible); pass random_state=0 or tie_break='lowest'"
        )
    is_max = np.isclose(scores, scores.max(axis=1, keepdims=True), rtol=0, atol=1e-12)
    # A random key per cell, kept only on the maximal cells: its argmax is a uniform
    # draw among the tied classes, vectorised over all tasks.
    keys = np.random.default_rng(random_state).random(scores.shape)
    return np.where(is_max, keys, -1.0).argmax(axis=1)
