"""Named estimators built from specs: ``"ds"``, ``"DSWC[L=5]"``, ``"crowdlayer[variant=VW]"``.

A spec is a name, optionally followed by parameters in brackets, as in peerannot.
Names are case-insensitive; parameter values given as text (from a command line) are
converted to the type of the parameter's default: bool, int, float, a tuple of ints
(``128/64`` in brackets, or ``128,64``), or, for parameters with a converter, whatever
the converter makes of the text (e.g. an aggregator spec).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from crowdlearn.data import CrowdDataError

_SPEC = re.compile(r"^\s*([A-Za-z0-9_+\-]+)\s*(?:\[(.*)\])?\s*$")


@dataclass(frozen=True)
class Entry:
    """A registered estimator: its class, fixed parameters, a description, aliases of
    parameter names and converters of parameter values."""

    name: str
    estimator: type
    description: str
    params: Mapping[str, Any] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    converters: Mapping[str, Callable[[str], Any]] = field(default_factory=dict)


class Registry:
    """Estimators registered under names, built from specs (see the module docstring)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.entries: dict[str, Entry] = {}

    def register(
        self,
        name: str,
        estimator: type,
        description: str,
        aliases: Mapping[str, str] | None = None,
        converters: Mapping[str, Callable[[str], Any]] | None = None,
        **params: Any,
    ) -> None:
        """Add an estimator. ``params`` are fixed constructor arguments (``hard=True``);
        ``aliases`` maps other parameter names to the estimator's (``{"L": "n_clusters"}``);
        ``converters`` turn text values of some parameters into objects."""
        lowered = {k.lower(): v for k, v in (aliases or {}).items()}
        self.entries[name.lower()] = Entry(
            name.lower(), estimator, description, params, lowered, dict(converters or {})
        )

    def make(self, spec: str, **params: Any) -> Any:
        """An estimator from ``spec``; ``params`` override the bracketed parameters."""
        match = _SPEC.match(spec)
        if not match:
            raise CrowdDataError(
                f"cannot read the {self.kind} {spec!r}; expected NAME or NAME[k=v,...]"
            )
        name, bracket = match.group(1).lower(), match.group(2)
        if name not in self.entries:
            known = ", ".join(sorted(self.entries))
            raise CrowdDataError(
                f"unknown {self.kind} {match.group(1)!r}; the {self.kind}s are: {known}"
            )
        entry = self.entries[name]
        defaults = _defaults(entry.estimator)
        by_lower = {p.lower(): p for p in defaults}
        arguments = dict(entry.params)
        for key, value in {**_parse_bracket(bracket, self.kind), **params}.items():
            parameter = key if key in defaults else by_lower.get(key.lower())
            parameter = parameter or entry.aliases.get(key.lower())
            if parameter is None:
                raise CrowdDataError(
                    f"{self.kind} {name!r} has no parameter {key!r}; its parameters are "
                    f"{', '.join(sorted(defaults))}"
                )
            if parameter in entry.converters and isinstance(value, str):
                arguments[parameter] = entry.converters[parameter](value)
            else:
                arguments[parameter] = convert(value, defaults[parameter], parameter)
        return entry.estimator(**arguments)


def _defaults(estimator: type) -> dict[str, Any]:
    """Every parameter of a scikit-learn style estimator with its default value."""
    instance = estimator()
    return {name: getattr(instance, name) for name in estimator._get_param_names()}


def _parse_bracket(text: str | None, kind: str) -> dict[str, str]:
    if not text:
        return {}
    pairs = {}
    for part in _top_level_split(text, ","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise CrowdDataError(f"{kind} parameters must be k=v pairs, got {part!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def _top_level_split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets (a nested spec such as
    ``members=crowdlayer[variant=MW,init=dawid-skene]/dl-em`` stays one value)."""
    parts, depth, current = [], 0, []
    for char in text:
        depth += (char == "[") - (char == "]")
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


#: Boolean parameters that also take one of these words (``calibrate=likelihood``).
BOOL_OR_WORD = {"calibrate": ("agreement", "likelihood", "joint")}


def convert(value: Any, default: Any, name: str) -> Any:
    """A command-line string converted to the type of the parameter's default."""
    if not isinstance(value, str) or isinstance(default, str):
        return value
    if value in BOOL_OR_WORD.get(name, ()):
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
        if isinstance(default, tuple):
            return tuple(int(part) for part in re.split(r"[,/x]", value) if part.strip())
    except ValueError:
        raise CrowdDataError(
            f"parameter {name!r} expects a {type(default).__name__}, got {value!r}"
        ) from None
    return value
