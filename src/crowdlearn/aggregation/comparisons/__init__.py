"""Aggregators of pairwise comparisons: one score per item from "which is better" votes.

Every estimator takes a :class:`~crowdlearn.data.Comparisons` and sets ``scores_`` (one
float per item code, higher = preferred, centred to mean 0); declared ties count as
half a win for each side.

- ``bt``: :class:`BradleyTerry` (Hunter's MM algorithm, virtual-item prior);
- ``noisy-bt``: :class:`NoisyBT` (BT plus a skill and a position bias per worker);
- ``crowd-bt``: :class:`CrowdBT` (Chen et al., WSDM 2013: BT plus a reliability per
  worker, who may reverse the preference);
- ``thurstone``: :class:`Thurstone` (Case V, probit link).

:data:`DEFAULT_STRATEGY` is ``crowd-bt``. In the ``comparisons`` benchmark
(benchmarks/pages/answer-kinds.md: crowds simulated on the 9150 IMDB-WIKI-SbS ages, 2
seeds) it had the highest Spearman correlation with the true ages when the crowd holds
noisy, random (spamming) and reversed workers (mixed crowd: 0.869 against 0.840 for
noisy-bt and 0.729 for bt; adversarial crowd: 0.835 against 0.730 and 0.455), and the
highest held-out pair accuracy there; it is the one model whose per-worker parameter
turns a reversed worker's votes around. With reliable workers only, Thurstone was
ahead (0.949 against 0.913 for crowd-bt and 0.915 for bt): the price of crowd-bt's
worker parameters when no worker needs them is small, the gain when some do is large.
Plain BT is the fast choice (a fraction of a second per 100k comparisons) for a crowd
known to be clean.
"""

from __future__ import annotations

from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.aggregation.comparisons._base import BaseComparisonAggregator
from crowdlearn.aggregation.comparisons.bradley_terry import BradleyTerry
from crowdlearn.aggregation.comparisons.crowd_bt import CrowdBT
from crowdlearn.aggregation.comparisons.noisy_bt import NoisyBT
from crowdlearn.aggregation.comparisons.thurstone import Thurstone

_REGISTRY = Registry("comparison strategy")
#: Every registered comparison strategy, by name.
STRATEGIES: dict[str, Entry] = _REGISTRY.entries
register = _REGISTRY.register

#: The strategy used when none is given (see the module docstring for why).
DEFAULT_STRATEGY = "crowd-bt"

register("bt", BradleyTerry, "Bradley-Terry by Hunter's MM algorithm (virtual-item prior)")
register("noisy-bt", NoisyBT, "Bradley-Terry with a skill and a left-position bias per worker")
register("crowd-bt", CrowdBT, "Crowd-BT: Bradley-Terry with a reliability per worker")
register("thurstone", Thurstone, "Thurstone Case V (probit link), L2-penalised")


def make_aggregator(spec: str, **params: Any) -> BaseComparisonAggregator:
    """An estimator from a strategy spec like ``"bt"`` or ``"crowd-bt[prior=1]"``.

    ``params`` (e.g. parsed from the command line as strings) override the spec's own
    bracketed parameters; string values are converted to the type of the parameter's
    default value.
    """
    return _REGISTRY.make(spec, **params)


__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "BaseComparisonAggregator",
    "BradleyTerry",
    "CrowdBT",
    "NoisyBT",
    "Thurstone",
    "make_aggregator",
    "register",
]
