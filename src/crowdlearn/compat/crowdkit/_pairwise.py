"""crowd-kit's pairwise aggregators on crowdlearn's comparison engines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

# ---------------------------------------------------------------------- pairwise


def _comparisons(data: pd.DataFrame) -> Any:
    from crowdlearn.data import Comparisons

    frame = data[["worker", "left", "right", "label"]]  # a KeyError names a missing column
    return Comparisons.from_frame(frame)


class _Pairwise:
    scores_: pd.Series | None

    def _empty(self, data: pd.DataFrame) -> bool:
        if len(data[["worker", "left", "right", "label"]]) == 0:
            self.scores_ = pd.Series([], dtype=np.float64, name="agg_score")
            return True
        return False

    def _series(
        self, ids: np.ndarray, values: np.ndarray, name: str, index: str | None
    ) -> pd.Series:
        series = pd.Series(np.asarray(values, dtype=np.float64), index=pd.Index(ids, name=index))
        return series.rename(name).sort_index()

    def fit(self, data: pd.DataFrame) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        """Fit and return ``scores_`` (a Series indexed by item, named ``agg_score``)."""
        self.fit(data)
        return self.scores_


class BradleyTerry(_Pairwise):
    """crowd-kit's ``BradleyTerry`` on :class:`crowdlearn.aggregation.comparisons.BradleyTerry`.

    ``data`` has crowd-kit's columns ``worker``, ``left``, ``right`` and ``label`` (the
    preferred item). ``scores_`` are the items' strengths normalised to sum 1, as
    crowd-kit gives them. The engine is Hunter's MM algorithm with a virtual-item prior
    (0.5 virtual wins and losses per item): scores stay finite for an item that never
    loses, and iterations run until ``tol`` or ``n_iter`` (crowd-kit stops its
    unregularised iteration early: docs/migration-from-crowd-kit.md).
    """

    def __init__(self, n_iter: int, tol: float = 1e-5) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.scores_ = None
        self.loss_history_: list[float] = []

    def fit(self, data: pd.DataFrame) -> BradleyTerry:
        """Fit the strengths."""
        from crowdlearn.aggregation.comparisons import BradleyTerry as Native

        if self._empty(data):
            return self
        comparisons = _comparisons(data)
        model = Native(max_iter=self.n_iter, tol=self.tol).fit(comparisons)
        strengths = np.exp(model.scores_ - model.scores_.max())
        scores = self._series(model.item_ids_, strengths / strengths.sum(), "agg_score", "label")
        self.scores_ = scores.rename_axis(None)  # crowd-kit's BT index has no name
        return self


class NoisyBradleyTerry(_Pairwise):
    """crowd-kit's ``NoisyBradleyTerry`` on
    :class:`crowdlearn.aggregation.comparisons.NoisyBT`: item scores (``expit`` of the
    centred log-strengths, crowd-kit's scale), a skill and a left-position bias per
    worker (``skills_``, ``biases_``). ``regularization_ratio`` and ``random_state`` are
    accepted; the engine's own priors regularise (docs/migration-from-crowd-kit.md).
    """

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-5,
        regularization_ratio: float = 1e-5,
        random_state: int = 0,
    ) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.regularization_ratio = regularization_ratio
        self.random_state = random_state
        self.scores_ = None
        self.skills_: pd.Series | None = None
        self.biases_: pd.Series | None = None

    def fit(self, data: pd.DataFrame) -> NoisyBradleyTerry:
        """Fit scores, skills and biases."""
        from scipy.special import expit

        from crowdlearn.aggregation.comparisons import NoisyBT as Native

        if self._empty(data):
            self.skills_ = pd.Series([], dtype=np.float64, name="skill")
            self.biases_ = pd.Series([], dtype=np.float64, name="bias")
            return self
        comparisons = _comparisons(data)
        model = Native(max_iter=self.n_iter, tol=self.tol).fit(comparisons)
        self.scores_ = self._series(model.item_ids_, expit(model.scores_), "agg_score", "label")
        self.skills_ = self._series(model.worker_ids_, model.skills_, "skill", "worker")
        self.biases_ = self._series(model.worker_ids_, model.biases_, "bias", "worker")
        return self
