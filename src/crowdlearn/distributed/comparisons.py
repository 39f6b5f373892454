"""Bradley-Terry on the Dask engine: Hunter's MM with each step a map and a reduce.

The comparisons stay on the workers, one block per partition (item codes, which side
won, each row's weight). Per iteration the client broadcasts the log-strengths, every
partition returns its part of the MM denominators (two ``np.bincount`` over its rows,
:func:`partition_denominators`), and the client sums them and takes the update of
:class:`~crowdlearn.aggregation.comparisons.BradleyTerry` (the same virtual-item prior
and the same common-shift step), so both engines reach the same maximum: the in-memory
estimator accelerates the iterations (SQUAREM), this one takes plain MM steps, and
their scores agree to the tolerance (``tests/distributed/test_comparisons_dask.py``).

Item codes are the sorted item ids, as :meth:`~crowdlearn.data.Comparisons.from_arrays`
gives them without declared ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.aggregation.comparisons.bradley_terry import BradleyTerry, best_shift
from crowdlearn.data import Comparisons, CrowdDataError

#: crowd-kit's layout, read from Parquet.
COLUMNS = ("worker", "left", "right", "label")


def partition_items(frame: pd.DataFrame) -> np.ndarray:
    """The distinct items of one partition."""
    return pd.unique(pd.concat([frame["left"], frame["right"]], ignore_index=True))


def partition_rows(frame: pd.DataFrame, item_ids: np.ndarray, tie: Any) -> dict[str, Any]:
    """One partition's comparisons coded against ``item_ids``, ties split into two
    half-weight rows (as the in-memory estimator does)."""
    index = pd.Index(item_ids)
    left = index.get_indexer(frame["left"]).astype(np.intp)
    right = index.get_indexer(frame["right"]).astype(np.intp)
    label = frame["label"].to_numpy()
    ties = np.zeros(len(frame), bool) if tie is None else (label == tie)
    left_won = frame["label"].to_numpy() == frame["left"].to_numpy()
    right_won = frame["label"].to_numpy() == frame["right"].to_numpy()
    bad = np.flatnonzero(~(left_won | right_won | ties) | (left == right))
    if len(bad):
        raise CrowdDataError(
            f"{len(bad)} comparison(s) whose label is neither item, or that compare an item "
            f"with itself, e.g. {frame.iloc[bad[0]].to_dict()}"
        )
    weight = np.where(ties, 0.5, 1.0)
    # a tie is two rows, one won by each side, each of weight 1/2
    left = np.concatenate([left, left[ties]])
    right = np.concatenate([right, right[ties]])
    left_won = np.concatenate([left_won & ~ties | ties, np.zeros(int(ties.sum()), bool)])
    weight = np.concatenate([weight, weight[ties]])
    return {"left": left, "right": right, "left_won": left_won, "weight": weight}


def partition_wins(rows: dict[str, Any], n_items: int) -> np.ndarray:
    """Each item's (weighted) wins in one partition."""
    winner = np.where(rows["left_won"], rows["left"], rows["right"])
    return np.bincount(winner, rows["weight"], n_items)


def partition_denominators(rows: dict[str, Any], theta: np.ndarray) -> np.ndarray:
    """One partition's part of the MM denominators, ``sum w / (p_i + p_j)`` per item."""
    strengths = np.exp(theta)
    inverse = rows["weight"] / (strengths[rows["left"]] + strengths[rows["right"]])
    n_items = len(theta)
    return np.bincount(rows["left"], inverse, n_items) + np.bincount(
        rows["right"], inverse, n_items
    )


class DaskBradleyTerry(BradleyTerry):
    """:class:`~crowdlearn.aggregation.comparisons.BradleyTerry` fitted on a Dask cluster.

    ``fit(data, client)`` takes a Parquet file or folder with columns worker, left, right,
    label (crowd-kit's layout), a pandas DataFrame in that layout, or a
    :class:`~crowdlearn.data.Comparisons`; ``scores_`` and ``item_ids_`` end up on the
    client (one float per item).

    Parameters
    ----------
    prior, max_iter, tol
        As for :class:`~crowdlearn.aggregation.comparisons.BradleyTerry`; here
        ``max_iter`` counts plain MM steps (default 5000).
    tie : optional
        The label value that declares a tie.
    """

    def __init__(
        self, prior: float = 0.5, max_iter: int = 5000, tol: float = 1e-6, tie: Any = None
    ) -> None:
        super().__init__(prior=prior, max_iter=max_iter, tol=tol)
        self.tie = tie

    def fit(
        self, data: Any, client: Any = None, npartitions: int | None = None
    ) -> DaskBradleyTerry:  # type: ignore[override]
        from crowdlearn._bounds import check_params

        check_params(type(self).__name__, self.get_params())
        if client is None:
            from distributed import get_client

            client = get_client()
        parts = self._partitions(data, client, npartitions)
        found = client.gather([client.submit(partition_items, p) for p in parts])
        item_ids = np.asarray(pd.Index(np.concatenate(found)).unique().sort_values())
        n_items = len(item_ids)
        rows = [client.submit(partition_rows, p, item_ids, self.tie) for p in parts]
        wins = np.sum(client.gather([client.submit(partition_wins, r, n_items) for r in rows]), 0)
        theta = np.zeros(n_items)
        self.converged_ = False
        for n_iter in range(1, self.max_iter + 1):
            self.n_iter_ = n_iter
            broadcast = client.scatter(theta, broadcast=True)
            parts_sums = client.gather(
                [client.submit(partition_denominators, r, broadcast) for r in rows]
            )
            denominator = np.sum(parts_sums, axis=0) + 2.0 * self.prior / (np.exp(theta) + 1.0)
            updated = best_shift(np.log(wins + self.prior) - np.log(denominator), self.prior)
            moved = float(np.max(np.abs(updated - theta)))
            theta = updated
            if moved < self.tol:
                self.converged_ = True
                break
        self.scores_ = theta - theta.mean()
        self.item_ids_ = item_ids
        return self

    def _partitions(self, data: Any, client: Any, npartitions: int | None) -> list:
        """Futures of pandas frames in crowd-kit's layout, one per partition."""
        if isinstance(data, Comparisons):
            data = data.to_frame()
        if isinstance(data, pd.DataFrame):
            missing = [c for c in ("left", "right", "label") if c not in data]
            if missing:
                raise CrowdDataError(f"the comparisons need columns {missing}")
            n = max(1, min(npartitions or 2 * len(client.scheduler_info()["workers"]), len(data)))
            chunks = np.array_split(np.arange(len(data)), n)
            return [client.scatter(data.iloc[c]) for c in chunks if len(c)]
        path = Path(data)
        if not path.exists():
            raise CrowdDataError(f"{path}: no such file or directory")
        import dask.dataframe as dd

        frame = dd.read_parquet(str(path), columns=["left", "right", "label"])
        if npartitions is not None:
            frame = frame.repartition(npartitions=npartitions)
        return client.compute(frame.to_delayed())
