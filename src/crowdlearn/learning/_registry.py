"""Method names for ``crowdlearn learn`` and the benchmarks: ``"crowdlayer[variant=VW]"``...

See :mod:`crowdlearn._registry` for the spec syntax. ``twostage`` takes its aggregator
as a strategy spec (``twostage[aggregator=glad,soft=true]``).
"""

from __future__ import annotations

from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.learning._base import BaseLearner
from crowdlearn.learning._model_file import METHOD_NAMES

_REGISTRY = Registry("method")
#: Every registered learning method, by name.
LEARNERS: dict[str, Entry] = _REGISTRY.entries


def register_learner(name: str, estimator: type, description: str, **options: Any) -> None:
    """Register a learning method under ``name`` (see
    :meth:`crowdlearn._registry.Registry.register` for ``options``); the first name of
    a class is the method its saved models name when it was made without a spec."""
    _REGISTRY.register(name, estimator, description, **options)
    METHOD_NAMES.setdefault(estimator, name.lower())


def make_learner(spec: str, **params: Any) -> BaseLearner:
    """A learner from a method spec like ``"conal"`` or ``"crowdlayer[variant=VW+B]"``."""
    learner = _REGISTRY.make(spec, **params)
    learner._method_spec = " ".join(spec.split())  # the model file's metadata names it
    return learner
