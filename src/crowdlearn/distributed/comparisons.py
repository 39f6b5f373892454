"""Bradley-Terry scores of pairwise comparisons on Dask (``dask.distributed``).

The same model, prior and algorithm as the in-memory
:class:`crowdlearn.aggregation.comparisons.BradleyTerry` (Hunter's MM algorithm, Annals
of Statistics 2004, eq. 3, with the virtual-item prior, accelerated by SQUAREM): the
comparisons stay on the cluster in partitions of rows (any split works, since no step
needs all the comparisons of an item in one place), and each MM step maps the two sums
over comparisons (:func:`~crowdlearn.aggregation.comparisons.bradley_terry.pair_sums`,
and ``pair_logsum`` for SQUAREM's check) over the partitions and adds their
``n_items``-long results on the client. Items are coded globally in the order
:meth:`Comparisons.from_arrays` gives them, so the scores equal the in-memory engine's
up to rounding.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn._bounds import check_params
from crowdlearn.aggregation._frames import require_columns, restore_arrays
from crowdlearn.aggregation.comparisons import bradley_terry
from crowdlearn.aggregation.comparisons._base import centred, check_own_params, comparison_rows
from crowdlearn.aggregation.comparisons.bradley_terry import MMStep, pair_logsum, pair_sums
from crowdlearn.data import Comparisons, CrowdDataError
from crowdlearn.data._ids import factorize
from crowdlearn.distributed._partitions import get_client, is_dask_frame

#: The columns of a Dask DataFrame of comparisons (crowd-kit's layout).
COLUMNS = ("worker", "left", "right", "label")


@dataclass(frozen=True)
class ComparisonPart:
    """One partition of comparison rows in item codes, ties split in two half rows."""

    left: np.ndarray
    right: np.ndarray
    winner: np.ndarray
    weights: np.ndarray | None


def _part_from_rows(left: Any, right: Any, left_won: Any, weight: Any) -> ComparisonPart:
    left, right = np.asarray(left, np.intp), np.asarray(right, np.intp)
    left_won, weight = np.asarray(left_won, bool), np.asarray(weight, np.float64)
    winner = np.where(left_won, left, right)
    weights = None if bool(np.all(weight == 1.0)) else weight
    return ComparisonPart(left, right, winner, weights)


def _part_from_frame(frame: pd.DataFrame, items: pd.Index, tie: Any) -> ComparisonPart:
    """A partition of a (worker, left, right, label) frame, coded by ``items``."""
    left = items.get_indexer(frame["left"])
    right = items.get_indexer(frame["right"])
    label = frame["label"]
    ties = (label == tie).to_numpy() if tie is not None else np.zeros(len(frame), bool)
    left_won = (label == frame["left"]).to_numpy() & ~ties
    right_won = (label == frame["right"]).to_numpy() & ~ties
    bad = np.flatnonzero(~(left_won | right_won | ties))
    if len(bad):
        raise CrowdDataError(
            f"{len(bad)} rows of a partition: the label is neither the left nor the right "
            "item" + ("" if tie is not None else " (declare the value that means a tie)")
        )
    if np.any(left == right):
        raise CrowdDataError("a partition has rows that compare an item with itself")
    n_ties = int(ties.sum())
    weight = np.where(ties, 0.5, 1.0)
    return _part_from_rows(
        np.concatenate([left, left[ties]]),
        np.concatenate([right, right[ties]]),
        np.concatenate([left_won | ties, np.zeros(n_ties, bool)]),
        np.concatenate([weight, np.full(n_ties, 0.5)]),
    )


def _wins(part: ComparisonPart, n_items: int) -> np.ndarray:
    weights = np.ones(len(part.winner)) if part.weights is None else part.weights
    return np.bincount(part.winner, weights, n_items)


def _sums(part: ComparisonPart, strengths: np.ndarray) -> np.ndarray:
    return pair_sums(part.left, part.right, part.weights, strengths)


def _logsum(part: ComparisonPart, theta: np.ndarray) -> float:
    return pair_logsum(part.left, part.right, part.weights, theta)


def _add(*values: Any) -> Any:
    return sum(values[1:], values[0])


class _DaskMMStep(MMStep):
    """:class:`MMStep` whose sums over comparisons are mapped over the partitions."""

    def __init__(self, client: Any, parts: list, wins: np.ndarray, prior: float) -> None:
        super().__init__(wins, prior)
        self.client = client
        self.parts = parts

    def _mapped(self, function: Any, vector: np.ndarray) -> Any:
        shared = self.client.scatter(vector, broadcast=True, hash=False)
        futures = [self.client.submit(function, part, shared, pure=False) for part in self.parts]
        return self.client.submit(_add, *futures, pure=False).result()

    def pair_sums(self, strengths: np.ndarray) -> np.ndarray:
        return self._mapped(_sums, strengths)

    def pair_logsum(self, theta: np.ndarray) -> float:
        return float(self._mapped(_logsum, theta))


class BradleyTerry(bradley_terry.BradleyTerry):
    """Bradley-Terry scores on a Dask cluster (same parameters and results as the
    in-memory :class:`crowdlearn.aggregation.comparisons.BradleyTerry`).

    ``fit(data, client=None, npartitions=None, tie=None)`` takes a
    :class:`~crowdlearn.data.Comparisons` (split into ``npartitions`` row ranges,
    default one per worker thread, and scattered), a pandas DataFrame with the columns
    ``worker, left, right, label`` (read as the in-memory estimator reads it, then
    scattered like a Comparisons), a Dask DataFrame of that layout or a Parquet path
    of such a table (``tie``: the label value that declares a tie). Sets ``scores_``,
    ``item_ids_``, ``worker_ids_``, ``n_iter_`` and ``converged_``. Results follow
    the input as in memory: after a fit on a pandas or Dask DataFrame ``scores_`` is
    a Series indexed by item id (index ``item``, name ``score``); otherwise an array
    in item-code order.

    Examples
    --------
    >>> import distributed
    >>> from crowdlearn.simulate import simulate_comparisons
    >>> data = simulate_comparisons(range(20), 500, 5, random_state=0)
    >>> with distributed.Client(processes=False, n_workers=1, dashboard_address=None) as c:
    ...     scores = BradleyTerry().fit(data, client=c, npartitions=3).scores_
    >>> from crowdlearn.aggregation.comparisons import BradleyTerry as InMemory
    >>> bool(np.allclose(scores, InMemory().fit(data).scores_))
    True
    """

    def fit(  # type: ignore[override]
        self,
        data: Any,
        client: Any = None,
        npartitions: int | None = None,
        tie: Any = None,
    ) -> BradleyTerry:
        """Infer one score per item on a cluster; returns ``self`` (see the class)."""
        params = self.get_params(deep=False)
        check_params(type(self).__name__, params)
        check_own_params(type(self).__name__, params)
        as_frames = isinstance(data, pd.DataFrame) or is_dask_frame(data)
        if isinstance(data, pd.DataFrame):
            from crowdlearn.io.kinds import read_kind

            data = read_kind(data, "comparison", tie=tie)  # the in-memory reading
        restore_arrays(self)
        client = get_client(client)
        if isinstance(data, Comparisons):
            parts, item_ids, worker_ids = _scatter(data, client, npartitions)
        else:
            parts, item_ids, worker_ids = _from_dask(data, client, tie)
        n_items = len(item_ids)
        wins = client.submit(
            _add, *[client.submit(_wins, part, n_items, pure=False) for part in parts]
        ).result()
        step = _DaskMMStep(client, parts, wins, self.prior)
        theta, self.n_iter_, self.converged_ = bradley_terry.squarem(
            step, np.zeros(n_items), self.max_iter, self.tol
        )
        if not np.all(np.isfinite(theta)):
            raise FloatingPointError(f"{type(self).__name__} produced non-finite scores")
        self.scores_ = centred(theta)
        self.item_ids_ = item_ids
        self.worker_ids_ = worker_ids
        self._present(as_frames)
        return self

    def fit_predict(  # type: ignore[override]
        self, data: Any, client: Any = None, npartitions: int | None = None, tie: Any = None
    ) -> Any:
        """Fit and return ``scores_`` (a Series indexed by item id for a DataFrame)."""
        return self.fit(data, client=client, npartitions=npartitions, tie=tie).scores_


def _scatter(
    data: Comparisons, client: Any, npartitions: int | None
) -> tuple[list, np.ndarray, np.ndarray]:
    rows = comparison_rows(data)
    if npartitions is None:
        npartitions = max(1, sum(client.nthreads().values()))
    bounds = np.linspace(0, len(rows.left), npartitions + 1).astype(int)
    parts = [
        _part_from_rows(rows.left[a:b], rows.right[a:b], rows.left_won[a:b], rows.weight[a:b])
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    return client.scatter(parts, hash=False), data.item_ids, data.worker_ids


def _from_dask(source: Any, client: Any, tie: Any) -> tuple[list, np.ndarray, np.ndarray]:
    if isinstance(source, (str, os.PathLike)):
        import dask.dataframe as dd

        source = dd.read_parquet(str(source), columns=list(COLUMNS))
    if not hasattr(source, "map_partitions"):
        raise TypeError(
            "BradleyTerry.fit expects a crowdlearn.data.Comparisons, a Dask DataFrame of "
            f"(worker, left, right, label) or a Parquet path, got {type(source).__name__}"
        )
    require_columns(source, COLUMNS, "BradleyTerry (Dask)")
    import dask.dataframe as dd

    items_seen = dd.concat([source["left"], source["right"]]).unique()
    seen, workers = client.compute([items_seen, source["worker"].unique()], sync=True)
    _, item_ids = factorize(np.asarray(seen), "item")
    _, worker_ids = factorize(np.asarray(workers), "worker")
    items = client.scatter(pd.Index(item_ids), broadcast=True, hash=False)
    frames = source.to_delayed()
    futures = client.compute(frames)
    parts = [client.submit(_part_from_frame, f, items, tie, pure=False) for f in futures]
    return parts, item_ids, worker_ids
