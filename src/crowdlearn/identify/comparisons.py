"""Worker and item scores for pairwise comparisons (``crowdlearn identify`` on a
:class:`~crowdlearn.data.Comparisons`).

:func:`worker_scores` returns arrays aligned with the worker codes:

- ``agreement``: the share of the worker's comparisons whose winner the default model
  (:data:`crowdlearn.aggregation.comparisons.DEFAULT_STRATEGY`, fitted on all the data)
  scores higher (a declared tie, or two equal scores, counts 1/2). Near 1 for a
  careful worker, near 1/2 for one who answers at random, near 0 for one who reads the
  question backwards;
- ``reliability``: Crowd-BT's ``eta`` (Chen et al., WSDM 2013): the probability that
  the worker reports the model's preference rather than its reverse, with the
  default Beta(4, 1) pseudo-counts (see :class:`~crowdlearn.aggregation.comparisons.CrowdBT`);
- ``n_comparisons``: how many comparisons the worker made (ties included).

:func:`item_scores` returns arrays aligned with the item codes: ``score`` (the default
model's), ``n_comparisons`` and ``win_rate`` (wins over comparisons, a tie 1/2; NaN for
an item never compared).
"""

from __future__ import annotations

import numpy as np

from crowdlearn.aggregation.comparisons import DEFAULT_STRATEGY, CrowdBT, make_aggregator
from crowdlearn.aggregation.comparisons._base import agreement_counts, comparison_rows
from crowdlearn.data import Comparisons


def _check(data: Comparisons, what: str) -> None:
    if not isinstance(data, Comparisons):
        raise TypeError(
            f"{what} expects a crowdlearn.data.Comparisons, got {type(data).__name__}; build "
            "one with Comparisons.from_frame(df) from a (worker, left, right, label) DataFrame"
        )


def worker_scores(data: Comparisons) -> dict[str, np.ndarray]:
    """Per-worker ``agreement``, ``reliability`` and ``n_comparisons`` (see the module
    docstring), each aligned with ``data.worker_ids``.

    Examples
    --------
    >>> from crowdlearn.simulate import simulate_comparisons
    >>> data, types = simulate_comparisons(
    ...     range(30), 3000, 4, worker_mix=(2, 0, 1, 1), return_info=True
    ... )
    >>> scores = worker_scores(data)
    >>> [str(t) for t in types[np.argsort(scores["agreement"])]]
    ['reversed', 'spammer', 'reliable', 'reliable']
    """
    _check(data, "worker_scores")
    model = make_aggregator(DEFAULT_STRATEGY).fit(data)
    crowd_bt = model if isinstance(model, CrowdBT) else CrowdBT().fit(data)
    rows = comparison_rows(data)
    total = np.bincount(rows.worker, rows.weight, data.n_workers)
    agreed = agreement_counts(rows, model.scores_)
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.where(total > 0, agreed / np.maximum(total, 1e-300), np.nan)
    return {
        "agreement": agreement,
        "reliability": crowd_bt.reliability_,
        "n_comparisons": np.bincount(data.worker, minlength=data.n_workers).astype(np.int64),
    }


def item_scores(data: Comparisons) -> dict[str, np.ndarray]:
    """Per-item ``score``, ``n_comparisons`` and ``win_rate``, aligned with
    ``data.item_ids``."""
    _check(data, "item_scores")
    rows = comparison_rows(data)
    seen = np.bincount(data.left, minlength=data.n_items)
    seen += np.bincount(data.right, minlength=data.n_items)
    wins = np.bincount(rows.winner, rows.weight, data.n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        win_rate = np.where(seen > 0, wins / np.maximum(seen, 1), np.nan)
    return {
        "score": make_aggregator(DEFAULT_STRATEGY).fit(data).scores_,
        "n_comparisons": seen.astype(np.int64),
        "win_rate": win_rate,
    }
