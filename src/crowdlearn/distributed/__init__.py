"""The aggregation methods on Dask (``dask.distributed``), for crowds beyond one machine.

Same class names and parameters as :mod:`crowdlearn.aggregation`;
``fit(data, client=None, npartitions=None)`` accepts a CrowdData, a pandas or Dask
DataFrame of (task, worker, label) (the results are then pandas objects keyed by id, as
in memory) or a Parquet path, and runs on any ``distributed.Client``
(a ``LocalCluster`` on one machine, the same code on a cluster). Each EM iteration
maps the in-memory engine's per-block functions over the partitions and reduces their
sufficient statistics; the per-task posteriors stay on the workers
(``write_parquet``). See docs/scale.md.

Methods: :class:`DawidSkene`, :class:`OneCoinDawidSkene`, :class:`MajorityVote`,
:class:`NaiveSoft`, :class:`GLAD`, :class:`Wawa`; for pairwise comparisons, Bradley-Terry
in :mod:`crowdlearn.distributed.comparisons`. Importing this module needs dask only
when a fit runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.distributed._estimators import (
        GLAD,
        DawidSkene,
        DistributedFitError,
        MajorityVote,
        NaiveSoft,
        OneCoinDawidSkene,
        Wawa,
    )
    from crowdlearn.distributed._partitions import DistributedCrowd, distribute

    #: Strategy names of the CLI that the Dask engine runs.
    STRATEGIES: dict[str, type]


def _strategies() -> dict[str, Any]:
    """Strategy names of the CLI that the Dask engine runs (``STRATEGIES``)."""
    from crowdlearn.distributed import _estimators as engine

    return {
        "ds": engine.DawidSkene,
        "onecoin-ds": engine.OneCoinDawidSkene,
        "mv": engine.MajorityVote,
        "naivesoft": engine.NaiveSoft,
        "glad": engine.GLAD,
        "wawa": engine.Wawa,
    }


__getattr__, __dir__ = attach(
    __name__,
    {
        "GLAD": "._estimators",
        "DawidSkene": "._estimators",
        "DistributedFitError": "._estimators",
        "MajorityVote": "._estimators",
        "NaiveSoft": "._estimators",
        "OneCoinDawidSkene": "._estimators",
        "Wawa": "._estimators",
        "DistributedCrowd": "._partitions",
        "distribute": "._partitions",
    },
    factories={"STRATEGIES": _strategies},
)

__all__ = [
    "GLAD",
    "STRATEGIES",
    "DawidSkene",
    "DistributedCrowd",
    "DistributedFitError",
    "MajorityVote",
    "NaiveSoft",
    "OneCoinDawidSkene",
    "Wawa",
    "distribute",
]
