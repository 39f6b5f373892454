"""Method names for ``crowdlearn learn`` and the benchmarks: ``"crowdlayer[variant=VW]"``...

See :mod:`crowdlearn._registry` for the spec syntax. ``twostage`` takes its aggregator
as a strategy spec (``twostage[aggregator=glad,soft=true]``).
"""

from __future__ import annotations

from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.learning._base import BaseLearner

_REGISTRY = Registry("method")
#: Every registered learning method, by name.
LEARNERS: dict[str, Entry] = _REGISTRY.entries
register_learner = _REGISTRY.register


def make_learner(spec: str, **params: Any) -> BaseLearner:
    """A learner from a method spec like ``"conal"`` or ``"crowdlayer[variant=VW+B]"``."""
    return _REGISTRY.make(spec, **params)
