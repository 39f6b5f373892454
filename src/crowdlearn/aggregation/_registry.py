"""Strategy names for the CLI and the benchmarks: ``"ds"``, ``"DSWC[L=5]"``, ...

A strategy spec is a name, optionally followed by parameters in brackets, as in
peerannot (``DSWC[L=5]``, ``ds[smoothing=1,max_iter=50]``). Names are case-insensitive;
parameter values are converted to the type of the estimator's default.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crowdlearn.aggregation._base import BaseAggregator
from crowdlearn.data import CrowdDataError


@dataclass(frozen=True)
class Strategy:
    """A registered strategy: the estimator class, fixed parameters, a description."""

    name: str
    estimator: type[BaseAggregator]
    description: str
    params: Mapping[str, Any] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)


STRATEGIES: dict[str, Strategy] = {}

_SPEC = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*(?:\[(.*)\])?\s*$")


def register(
    name: str,
    estimator: type[BaseAggregator],
    description: str,
    aliases: Mapping[str, str] | None = None,
    **params: Any,
) -> None:
    """Add a strategy. ``params`` are fixed constructor arguments (e.g. ``hard=True``);
    ``aliases`` maps other parameter names to the estimator's (``{"L": "n_clusters"}``)."""
    lowered = {k.lower(): v for k, v in (aliases or {}).items()}
    STRATEGIES[name.lower()] = Strategy(name.lower(), estimator, description, params, lowered)


def make_aggregator(spec: str, **params: Any) -> BaseAggregator:
    """An estimator from a strategy spec like ``"glad"`` or ``"DSWC[L=5]"``.

    ``params`` (e.g. parsed from the command line as strings) override the spec's own
    bracketed parameters; string values are converted to the type of the parameter's
    default value.
    """
    match = _SPEC.match(spec)
    if not match:
        raise CrowdDataError(f"cannot read the strategy {spec!r}; expected NAME or NAME[k=v,...]")
    name, bracket = match.group(1).lower(), match.group(2)
    if name not in STRATEGIES:
        known = ", ".join(sorted(STRATEGIES))
        raise CrowdDataError(f"unknown strategy {match.group(1)!r}; the strategies are: {known}")
    strategy = STRATEGIES[name]
    given = {**_parse_bracket(bracket), **params}
    signature = inspect.signature(strategy.estimator.__init__)
    accepted = {p: v for p, v in signature.parameters.items() if p != "self"}
    lowered = {p.lower(): p for p in accepted}
    arguments = dict(strategy.params)
    for key, value in given.items():
        parameter = key if key in accepted else lowered.get(key.lower())
        parameter = parameter or strategy.aliases.get(key.lower())
        if parameter is None:
            raise CrowdDataError(
                f"strategy {name!r} has no parameter {key!r}; its parameters are "
                f"{', '.join(accepted)}"
            )
        arguments[parameter] = _convert(value, accepted[parameter].default, parameter)
    return strategy.estimator(**arguments)


def _parse_bracket(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    pairs = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise CrowdDataError(f"strategy parameters must be k=v pairs, got {part!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def _convert(value: Any, default: Any, name: str) -> Any:
    """A command-line string converted to the type of the parameter's default."""
    if not isinstance(value, str) or isinstance(default, str):
        return value
    if value.lower() in ("none", "null"):
        return None
    if default is None:  # no type to go by: a number if it reads as one
        for cast in (int, float):
            try:
                return cast(value)
            except ValueError:
                pass
        return value
    try:
        if isinstance(default, bool):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except ValueError:
        raise CrowdDataError(
            f"parameter {name!r} expects a {type(default).__name__}, got {value!r}"
        ) from None
    return value
