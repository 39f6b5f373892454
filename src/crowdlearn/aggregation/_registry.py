"""Strategy names for the CLI and the benchmarks: ``"ds"``, ``"DSWC[L=5]"``, ...

See :mod:`crowdlearn._registry` for the spec syntax.
"""

from __future__ import annotations

from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.aggregation._base import BaseAggregator

#: A registered aggregation strategy (estimator class, fixed parameters, description).
Strategy = Entry

_REGISTRY = Registry("strategy")
#: Every registered strategy, by name.
STRATEGIES: dict[str, Strategy] = _REGISTRY.entries
register = _REGISTRY.register


def make_aggregator(spec: str, **params: Any) -> BaseAggregator:
    """An estimator from a strategy spec like ``"glad"`` or ``"DSWC[L=5]"``.

    ``params`` (e.g. parsed from the command line as strings) override the spec's own
    bracketed parameters; string values are converted to the type of the parameter's
    default value.
    """
    return _REGISTRY.make(spec, **params)
