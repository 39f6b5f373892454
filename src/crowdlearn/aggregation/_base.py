"""What every aggregator shares: the estimator contract, tie-breaking, pandas adapters,
and the iteration loop of the iterative methods."""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

import crowdlearn.aggregation._incremental_kernels as _ik
import crowdlearn.aggregation._kernels as _kernels
from crowdlearn._bounds import check_params
from crowdlearn._progress import progress_bar
from crowdlearn.aggregation._frames import (
    ARRAYS,
    id_index,
    keyed,
    keyed_forms,
    present,
    restore_arrays,
)
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data._memory import array_bytes, check_allocation

TieBreak = Literal["random", "lowest"]
#: How many (n_tasks, K) (and (n_workers, K, K)) float64 arrays a fit is assumed to hold.
_DENSE_COPIES = 3


class BaseAggregator(BaseEstimator):
    """Base class of feature-blind aggregators (scikit-learn estimator contract).

    Subclasses implement ``_fit(data, **fit_params)``, which sets ``probas_``
    (n_tasks, K) and any other learned attribute; this class derives ``labels_`` from
    ``probas_`` with the tie policy, records ``classes_``, ``task_ids_`` and
    ``worker_ids_``, and provides ``predict``/``predict_proba`` and the pandas adapters
    ``fit_predict``/``fit_predict_proba``.

    Aggregation is transductive: ``predict`` and ``predict_proba`` return results for
    the tasks of the data given to ``fit`` and take no argument.

    ``worker_attributes`` names the learned per-worker arrays (first axis = worker
    code), ``task_attributes`` the per-task ones; the CLI writes them keyed by id.
    """

    tie_break: TieBreak
    random_state: int | None
    worker_attributes: ClassVar[tuple[str, ...]] = ()
    task_attributes: ClassVar[tuple[str, ...]] = ()
    #: False for methods that need worker identities (they refuse anonymous data).
    accepts_anonymous: ClassVar[bool] = True
    #: True for methods that hold an (n_workers, K, K) array (for the memory check).
    per_worker_confusions: ClassVar[bool] = False

    def fit(self, data: CrowdData | pd.DataFrame, **fit_params: Any) -> BaseAggregator:
        """Infer the labels of the tasks in ``data``; returns ``self``.

        ``data`` is a CrowdData (the fitted attributes are then numpy arrays in code
        order) or a DataFrame with columns ``task``, ``worker`` and ``label`` (read as
        :meth:`CrowdData.from_frame` reads it; the public fitted attributes are then
        pandas objects keyed by the frame's ids: see :meth:`_present`).
        """
        crowd = _as_crowd_data(data, type(self).__name__)
        restore_arrays(self)  # a refit starts from arrays, whatever the last fit had
        self._fit_arrays(crowd, **fit_params)
        self._present(isinstance(data, pd.DataFrame))
        return self

    def _fit_arrays(self, data: CrowdData, **fit_params: Any) -> None:
        """The fit proper, on a CrowdData: sets the fitted arrays."""
        if data.is_anonymous and not self.accepts_anonymous:
            raise CrowdDataError(
                f"{type(self).__name__} models each worker and needs worker ids; the data "
                "are anonymous (use MajorityVote or NaiveSoft, or the CMM learner)"
            )
        check_params(type(self).__name__, self.get_params(deep=False))
        check_allocation(self._dense_bytes(data), self._dense_what(data))
        self._fit(data, **fit_params)
        # labels the fit already chose (MajorityVote's fused pass), else the argmax
        labels = self.__dict__.pop("_fit_labels", None)
        if labels is None:
            labels = break_ties(self.probas_, self.tie_break, self.random_state)
        self.labels_ = labels
        self.classes_ = data.classes
        self.task_ids_ = data.task_ids
        self.worker_ids_ = data.worker_ids

    def _present(self, as_frames: bool) -> None:
        """After a fit on a DataFrame (``as_frames``), the public results as pandas
        objects keyed by ids, built once (the arrays stay in ``_fitted_arrays``):

        - ``labels_``: Series of class ids indexed by task id (index ``task``, name
          ``label``); ``probas_``: DataFrame indexed by task id, one column per class id
          (columns named ``label``);
        - ``priors_``: Series indexed by class id;
        - each of ``worker_attributes``: a Series indexed by worker id (index
          ``worker``), a DataFrame with one column per class id for a (n_workers, K)
          array, and for an (n_workers, K, K) confusion array a DataFrame indexed by
          (``worker``, ``true_label``) with one column per observed class;
        - each of ``task_attributes``: likewise indexed by task id.

        ``classes_``, ``task_ids_`` and ``worker_ids_`` stay arrays. After a fit on a
        CrowdData the arrays stay public (``as_frames`` False).
        """
        if not as_frames:
            present(self, {}, False)
            return
        classes = id_index(self.classes_, "label")
        tasks = id_index(self.task_ids_, "task")
        tasks_axis = ("probas_", "vote_counts_", "scores_", *self.task_attributes)
        forms = keyed_forms(self, tasks_axis, tasks, classes)
        forms["labels_"] = self._keyed_labels(self.labels_, tasks)
        forms.update(self._parameter_forms())
        present(self, forms, True)

    def _keyed_labels(self, codes: np.ndarray, tasks: pd.Index) -> pd.Series:
        """Class codes as the Series of class ids indexed by ``tasks`` (name ``label``)."""
        return pd.Series(np.asarray(self.classes_)[codes], index=tasks, name="label")

    def _parameter_forms(self) -> dict[str, Any]:
        """The pandas forms of the per-worker attributes and ``priors_`` (see
        :meth:`_present`; the Dask engine presents these at the end of its fit and the
        per-task results when it collects them)."""
        classes = id_index(self.classes_, "label")
        workers = id_index(self.worker_ids_, "worker")
        forms = keyed_forms(self, self.worker_attributes, workers, classes)
        forms.update(keyed_forms(self, ("priors_",), classes, classes))
        return forms

    def _derived(self, name: str, value: np.ndarray, axis: str) -> Any:
        """A fitted attribute computed on access (a property) from the arrays:
        ``value`` itself after a fit on a CrowdData, keyed by the ids of ``axis``
        (``"task"`` or ``"worker"``) after a fit on a DataFrame."""
        if ARRAYS not in self.__dict__:
            return value
        ids = self.task_ids_ if axis == "task" else self.worker_ids_
        form = keyed(value, id_index(ids, axis), name, id_index(self.classes_, "label"))
        return value if form is None else form

    def _fit(self, data: CrowdData, **fit_params: Any) -> None:
        raise NotImplementedError

    def _dense_bytes(self, data: CrowdData) -> int:
        """Rough peak of the dense arrays a fit builds, checked before it starts.

        Every aggregator holds a few (n_tasks, K) float64 tables (probabilities,
        votes, their update); those with per-worker confusion matrices also hold a
        few (n_workers, K, K) ones. The factors are deliberately modest: the check
        is there to refuse data that cannot fit at all, not to predict the peak.
        """
        total = _DENSE_COPIES * array_bytes([data.n_tasks, data.n_classes])
        if self.per_worker_confusions:
            total += _DENSE_COPIES * array_bytes([data.n_workers, data.n_classes, data.n_classes])
        return total

    def _dense_what(self, data: CrowdData) -> str:
        tables = f"{data.n_tasks} tasks x {data.n_classes} classes"
        if self.per_worker_confusions:
            tables += f" and {data.n_workers} workers x {data.n_classes}^2 confusions"
        return f"{type(self).__name__} on {tables}"

    def predict_proba(self) -> np.ndarray:
        """Probability of each class for each task, shape (n_tasks, n_classes)."""
        self._check_fitted()
        return self.probas_

    def predict(self) -> np.ndarray:
        """Inferred class code of each task, shape (n_tasks,)."""
        self._check_fitted()
        return self.labels_

    def fit_predict(self, data: CrowdData | pd.DataFrame, **fit_params: Any) -> Any:
        """Fit and return hard labels (``fit(data).labels_``).

        A CrowdData gives an array of class codes; a DataFrame with columns ``task``,
        ``worker`` and ``label`` gives a Series of class ids indexed by task id (index
        ``task``, name ``label``). ``fit_params`` go to :meth:`fit` (e.g. ``gold=``).
        """
        return self.fit(data, **fit_params).labels_

    def fit_predict_proba(self, data: CrowdData | pd.DataFrame, **fit_params: Any) -> Any:
        """Fit and return class probabilities (``fit(data).probas_``): an array for a
        CrowdData, a DataFrame indexed by task id with one column per class for a
        DataFrame."""
        return self.fit(data, **fit_params).probas_

    def _check_fitted(self) -> None:
        if not hasattr(self, "probas_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")


class IterativeAggregator(BaseAggregator):
    """Base class of iterative aggregators: it owns the loop, subclasses own the steps.

    ``fit`` calls ``_initialize(data, **fit_params)`` (which must set an initial
    ``probas_``), then alternates ``_m_step(data)`` (parameters from the current
    posteriors) and ``_e_step(data)`` (posteriors from the parameters; it returns the
    objective the method maximises, usually the log-likelihood of the annotations)
    until the objective per annotation changes by less than ``tol`` or ``max_iter``
    iterations have run. Because the E-step comes last, ``probas_`` are always the
    posteriors under the final parameters.

    Subclasses define ``max_iter``, ``tol`` and ``progress`` in ``__init__``.

    Attributes
    ----------
    history_ : DataFrame
        One row per iteration: ``iteration``, ``objective`` (per annotation),
        ``change`` and ``seconds`` since the start of the fit.
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the tolerance was reached before ``max_iter``.
    """

    max_iter: int
    tol: float
    progress: bool | Literal["auto"]

    def _initialize(self, data: CrowdData, **fit_params: Any) -> None:
        raise NotImplementedError

    def _m_step(self, data: CrowdData) -> None:
        raise NotImplementedError

    def _e_step(self, data: CrowdData) -> float:
        raise NotImplementedError

    def _fit(self, data: CrowdData, **fit_params: Any) -> None:
        if self.max_iter < 0:
            raise ValueError(f"max_iter must be at least 0, got {self.max_iter}")
        start = time.perf_counter()
        self._initialize(data, **fit_params)
        if self.max_iter == 0:
            # The initialisation alone: its posteriors, and the parameters they give
            # (one M-step), so that every fitted attribute exists.
            self._m_step(data)
        rows = []
        previous = -np.inf
        self.converged_ = False
        bar = progress_bar(
            range(1, self.max_iter + 1),
            progress=self.progress,
            desc=type(self).__name__,
            unit="it",
            leave=False,
        )
        for iteration in bar:
            self._m_step(data)
            objective = float(self._e_step(data)) / data.n_annotations
            change = objective - previous
            rows.append(
                {
                    "iteration": iteration,
                    "objective": objective,
                    "change": change,
                    "seconds": time.perf_counter() - start,
                }
            )
            bar.set_postfix(objective=f"{objective:.6f}")
            if abs(change) < self.tol:
                self.converged_ = True
                break
            previous = objective
        bar.close()
        self.n_iter_ = len(rows)
        self.history_ = pd.DataFrame(rows, columns=["iteration", "objective", "change", "seconds"])


def _as_crowd_data(data: CrowdData | pd.DataFrame, who: str = "fit") -> CrowdData:
    """``data`` as a CrowdData: a (task, worker, label) DataFrame is read by
    :meth:`CrowdData.from_frame` (its errors name the missing columns); anything else
    but a CrowdData is a TypeError."""
    if isinstance(data, pd.DataFrame):
        return CrowdData.from_frame(data)
    if not isinstance(data, CrowdData):
        raise TypeError(
            f"{who}.fit expects a CrowdData or a (task, worker, label) DataFrame, got "
            f"{type(data).__name__}"
        )
    return data


def break_ties(scores: np.ndarray, tie_break: TieBreak, random_state: int | None) -> np.ndarray:
    """Class code of the highest score in each row, with an explicit tie policy.

    ``"lowest"`` takes the lowest class code among the maximal ones; ``"random"``
    takes one of them uniformly at random with a seeded generator (an unseeded
    random tie-break would make results irreproducible, so ``random_state=None`` is
    refused).
    """
    if tie_break == "lowest":
        if _kernels.ready(scores.size):
            fused = _kernels.break_ties(scores, None)
            if fused is not None:
                return fused
        return scores.argmax(axis=1)
    if tie_break != "random":
        raise ValueError(f"tie_break must be 'random' or 'lowest', got {tie_break!r}")
    if random_state is None:
        raise ValueError(
            "tie_break='random' needs an integer random_state (results must be "
            "reproducible); pass random_state=0 or tie_break='lowest'"
        )
    if _kernels.ready(scores.size):
        fused = _kernels.break_ties(scores, random_state)  # one pass, the same draws
        if fused is not None:
            return fused
    best = scores.max(axis=1, keepdims=True)
    # isclose(scores, best, rtol=0, atol=1e-12) without its temporaries: no score
    # exceeds its row's best, so |score - best| <= 1e-12 is score >= best - 1e-12
    # (infinities and NaN compare the same way).
    is_max = scores >= best - 1e-12
    labels = scores.argmax(axis=1)
    tied = np.flatnonzero(is_max.sum(axis=1) > 1)
    if len(tied) == 0:
        return labels  # one maximal cell per row: the draw below would pick it
    # A random key per cell, kept only on the maximal cells: its argmax is a uniform
    # draw among the tied classes (the keys of the whole table are drawn, so that a
    # row's draw does not depend on which other rows are tied).
    keys = np.random.default_rng(random_state).random(scores.shape)
    labels[tied] = np.where(is_max[tied], keys[tied], -1.0).argmax(axis=1)
    return labels


def break_ties_rows(
    scores: np.ndarray, rows: np.ndarray, tie_break: TieBreak, random_state: int | None
) -> np.ndarray:
    """:func:`break_ties` of some rows of a table: ``scores`` holds rows ``rows`` of it.

    Equal to ``break_ties(table, ...)[rows]`` whatever the other rows are: a tied row
    draws the keys that :func:`break_ties` draws for it (the generator's stream, row
    after row), reached by advancing the generator instead of drawing the whole table.
    """
    if tie_break != "random":
        return break_ties(scores, tie_break, random_state)
    if random_state is None:
        return break_ties(scores, tie_break, random_state)  # its error
    labels, n_top = _top_and_ties(scores)
    tied = np.flatnonzero(n_top > 1)
    if len(tied) == 0:
        return labels
    best = scores[tied].max(axis=1, keepdims=True)
    k = scores.shape[1]
    tied_rows = np.asarray(rows)[tied]
    if len(tied) <= 1000:
        keys = np.empty((len(tied), k))
        for slot, row in enumerate(tied_rows.tolist()):
            generator = np.random.default_rng(random_state)
            generator.bit_generator.advance(row * k)  # one 64-bit draw per double
            keys[slot] = generator.random(k)
    else:
        keys = None
        if _ik.wanted((int(tied_rows.max()) + 1) * k):  # by jump-ahead: no other rows
            keys = _ik.row_keys(random_state, tied_rows, k)
        if keys is None:
            keys = np.random.default_rng(random_state).random((int(tied_rows.max()) + 1, k))
            keys = keys[tied_rows]
    is_max = scores[tied] >= best - 1e-12  # as in break_ties
    labels[tied] = np.where(is_max, keys, -1.0).argmax(axis=1)
    return labels


def _top_and_ties(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first column of the largest score (``argmax``) and how many
    scores are within 1e-12 of it (as in :func:`break_ties`). A few columns are
    walked one at a time on a transposed copy: numpy's reductions along a short last
    axis cost several times more."""
    n, k = scores.shape
    if k > 16 or n == 0 or np.isnan(scores).any():
        best = scores.max(axis=1, keepdims=True)
        return scores.argmax(axis=1), (scores >= best - 1e-12).sum(axis=1)
    columns = scores.T.copy()
    best = columns[0].copy()
    labels = np.zeros(n, dtype=np.int64)
    for column in range(1, k):
        labels[columns[column] > best] = column
        np.maximum(best, columns[column], out=best)
    best -= 1e-12
    count = np.zeros(n, dtype=np.int64)
    for values in columns:
        count += values >= best
    return labels, count


def float_dtype(dtype: Any) -> np.dtype:
    """The computation dtype of an estimator: float64 (default) or float32."""
    resolved = np.dtype(dtype)
    if resolved not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    return resolved


def gold_codes(data: CrowdData, gold: Any) -> np.ndarray | None:
    """Known true classes (codes, -1 unknown) from gold labels in the user's ids.

    ``gold`` is a Mapping or Series keyed by task id, or an array aligned with the
    task codes (None/NaN, or -1 when -1 is not a class, marks unknown); None gives
    None.
    """
    if gold is None:
        return None
    codes = data.with_truth(gold).truth
    return None if codes is None else codes.astype(np.int64)
