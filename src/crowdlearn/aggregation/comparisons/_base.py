"""What every comparison aggregator shares: the estimator contract, the rows a fit
works on (ties split in two half comparisons), parameter checks and L-BFGS.

A comparison aggregator turns :class:`~crowdlearn.data.Comparisons` into one score per
item (``scores_``, higher = preferred, centred to mean 0 over the items). Every model
here reads a declared tie as half a win for each side: the tie row becomes two rows of
weight 1/2, one won by each item (:func:`comparison_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from crowdlearn._bounds import Bounds, check_own_bounds, check_params
from crowdlearn.aggregation._frames import id_index, keyed_forms, present, restore_arrays
from crowdlearn.data import Comparisons

#: Bounds of the comparison models' own numeric parameters (``check_params`` covers
#: ``max_iter``, ``tol`` and ``random_state``).
OWN_BOUNDS: dict[str, Bounds] = {
    "prior": Bounds(0, low_open=True),
    "l2": Bounds(0, low_open=True),
    "worker_l2": Bounds(0, low_open=True),
    "prior_agree": Bounds(0, low_open=True),
    "prior_reverse": Bounds(0, low_open=True),
}


@dataclass(frozen=True)
class Rows:
    """The comparisons a fit works on, ties split into two rows of weight 1/2.

    ``left_won`` says which of ``left`` and ``right`` won the row; ``winner`` and
    ``loser`` are the same rows oriented by outcome.
    """

    worker: np.ndarray
    left: np.ndarray
    right: np.ndarray
    left_won: np.ndarray
    weight: np.ndarray
    n_items: int
    n_workers: int

    @property
    def winner(self) -> np.ndarray:
        return np.where(self.left_won, self.left, self.right)

    @property
    def loser(self) -> np.ndarray:
        return np.where(self.left_won, self.right, self.left)

    @property
    def sign(self) -> np.ndarray:
        """+1 where the left item won the row, -1 where the right one did."""
        return np.where(self.left_won, 1.0, -1.0)


def comparison_rows(data: Comparisons) -> Rows:
    """The rows of ``data`` with each declared tie split into two half-weight rows.

    Parameters
    ----------
    data : Comparisons

    Returns
    -------
    Rows
    """
    worker = np.asarray(data.worker, dtype=np.intp)
    left = np.asarray(data.left, dtype=np.intp)
    right = np.asarray(data.right, dtype=np.intp)
    winner = np.asarray(data.winner)
    ties = winner < 0
    left_won = winner == left
    weight = np.ones(len(left))
    if ties.any():
        weight[ties] = 0.5
        worker = np.concatenate([worker, worker[ties]])
        left = np.concatenate([left, left[ties]])
        right = np.concatenate([right, right[ties]])
        left_won[ties] = True
        left_won = np.concatenate([left_won, np.zeros(int(ties.sum()), dtype=bool)])
        weight = np.concatenate([weight, np.full(int(ties.sum()), 0.5)])
    return Rows(worker, left, right, left_won, weight, data.n_items, data.n_workers)


def check_own_params(owner: str, params: Mapping[str, Any]) -> None:
    """Refuse the comparison models' own numeric parameters out of :data:`OWN_BOUNDS`."""
    check_own_bounds(owner, params, OWN_BOUNDS)


def centred(scores: np.ndarray) -> np.ndarray:
    """``scores`` minus their mean (the models are shift-invariant)."""
    return scores - scores.mean()


def lbfgs(
    objective: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    max_iter: int,
    tol: float,
) -> tuple[np.ndarray, int, bool]:
    """Minimise ``objective`` (value and gradient) by L-BFGS-B from ``x0``.

    Stops when the relative decrease of the objective falls under ``tol`` or the
    projected gradient under ``tol``; returns the point, the iterations and whether it
    converged before ``max_iter``.
    """
    result = minimize(
        objective,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "ftol": tol, "gtol": tol},
    )
    if not np.all(np.isfinite(result.x)):
        raise FloatingPointError("L-BFGS produced non-finite parameters")
    return result.x, int(result.nit), bool(result.success)


class BaseComparisonAggregator(BaseEstimator):
    """Base class of the pairwise-comparison aggregators.

    Subclasses implement ``_fit(rows)``, which returns the centred item scores and may
    set other learned attributes; this class checks the input and the parameters,
    records ``item_ids_`` and ``worker_ids_`` and provides ``predict`` and the pandas
    adapter ``fit_predict``.

    ``worker_attributes`` names the learned per-worker arrays (aligned with the worker
    codes); the CLI writes them keyed by worker id.
    """

    worker_attributes: ClassVar[tuple[str, ...]] = ()

    def fit(self, data: Comparisons | pd.DataFrame) -> BaseComparisonAggregator:
        """Infer one score per item of ``data``; returns ``self``.

        ``data`` is a :class:`~crowdlearn.data.Comparisons` (``scores_`` and the worker
        attributes are then arrays in code order) or a (worker, left, right, label)
        DataFrame, read as :func:`crowdlearn.io.read_kind` reads comparisons (its errors
        name the missing columns): ``scores_`` is then a Series indexed by item id
        (index ``item``, name ``score``) and each worker attribute a Series indexed by
        worker id (the arrays stay in ``_fitted_arrays``).
        """
        as_frames = isinstance(data, pd.DataFrame)
        if as_frames:
            from crowdlearn.io.kinds import read_kind

            data = read_kind(data, "comparison")
        if not isinstance(data, Comparisons):
            raise TypeError(
                f"{type(self).__name__}.fit expects a crowdlearn.data.Comparisons or a "
                f"(worker, left, right, label) DataFrame, got {type(data).__name__}; build "
                "one with Comparisons.from_frame(df)"
            )
        restore_arrays(self)
        params = self.get_params(deep=False)
        check_params(type(self).__name__, params)
        check_own_params(type(self).__name__, params)
        scores = self._fit(comparison_rows(data))
        if not np.all(np.isfinite(scores)):
            raise FloatingPointError(f"{type(self).__name__} produced non-finite scores")
        self.scores_ = centred(np.asarray(scores, dtype=np.float64))
        self.item_ids_ = data.item_ids
        self.worker_ids_ = data.worker_ids
        self._present(as_frames)
        return self

    def _present(self, as_frames: bool) -> None:
        """After a DataFrame fit (``as_frames``), ``scores_`` as a Series indexed by item
        id (name ``score``) and the worker attributes by worker id; otherwise arrays."""
        if not as_frames:
            present(self, {}, False)
            return
        forms = keyed_forms(self, ("scores_",), id_index(self.item_ids_, "item"))
        workers = id_index(self.worker_ids_, "worker")
        forms.update(keyed_forms(self, self.worker_attributes, workers))
        forms["scores_"].name = "score"
        present(self, forms, True)

    def _fit(self, rows: Rows) -> np.ndarray:
        raise NotImplementedError

    def predict(self) -> np.ndarray:
        """The score of each item (by item code), higher = preferred."""
        if not hasattr(self, "scores_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit")
        return self.scores_

    def fit_predict(self, data: Comparisons | pd.DataFrame) -> Any:
        """Fit and return the scores (``fit(data).scores_``): an array for a
        Comparisons, a Series indexed by item id (index ``item``, name ``score``) for a
        (worker, left, right, label) DataFrame (crowd-kit's layout)."""
        return self.fit(data).scores_


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """``log(1 / (1 + exp(-x)))``, stable for large ``|x|``."""
    return -np.logaddexp(0.0, -x)


def virtual_item_penalty(scores: np.ndarray, prior: float) -> tuple[float, np.ndarray]:
    """Minus the log-likelihood of ``prior`` virtual wins and losses of every item
    against a virtual item of score 0 (Chen et al., WSDM 2013, eq. 7), and its gradient.
    """
    value = -prior * float(np.sum(log_sigmoid(scores) + log_sigmoid(-scores)))
    gradient = prior * (2.0 * expit(scores) - 1.0)
    return value, gradient


def agreement_counts(rows: Rows, scores: np.ndarray) -> np.ndarray:
    """Per worker, the weight of their rows whose winner has the higher score
    (half for equal scores)."""
    difference = scores[rows.winner] - scores[rows.loser]
    agree = np.where(difference > 0, 1.0, np.where(difference == 0, 0.5, 0.0))
    return np.bincount(rows.worker, agree * rows.weight, rows.n_workers)
