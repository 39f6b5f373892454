"""Span aggregators built from specs: ``"mv"``, ``"NAME[k=v,...]"``.

The names are those of :data:`crowdlearn.aggregation.spans.SPAN_STRATEGIES` (name ->
class), looked up when called, so an aggregator registered there is reachable from
``crowdlearn aggregate --kind spans -s NAME`` without another edit. Parameter values
given as text (the command line) are converted to the type of the constructor
parameter's default, as for the other kinds (:func:`crowdlearn._registry.convert`).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from crowdlearn.data import CrowdDataError


def strategies() -> dict[str, type]:
    """The span aggregators by name (``SPAN_STRATEGIES``)."""
    from crowdlearn.aggregation.spans import SPAN_STRATEGIES

    return SPAN_STRATEGIES


def default_strategy() -> str:
    """The name of the default span aggregator (``DEFAULT_SPAN_STRATEGY``)."""
    from crowdlearn.aggregation import spans

    return getattr(spans, "DEFAULT_SPAN_STRATEGY", "mv")


def description(estimator: type) -> str:
    """The first sentence of an aggregator's docstring, on one line and without reST
    literals (what ``--list`` shows).

    >>> from crowdlearn.aggregation.spans import TokenMajorityVote
    >>> description(TokenMajorityVote)
    'Per token, the tag most workers of the task gave; ties go to O'
    """
    doc = inspect.getdoc(estimator) or estimator.__name__
    paragraph = " ".join(doc.split("\n\n")[0].split())
    sentence = re.split(r"(?<=[^.]\.)\s", paragraph + " ")[0].strip()
    return sentence.rstrip(".").replace("``", "")


def constructor_defaults(estimator: type) -> dict[str, Any]:
    """Each constructor parameter of ``estimator`` with its default
    (``inspect.Parameter.empty`` where it has none)."""
    signature = inspect.signature(estimator.__init__)
    skipped = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return {
        name: parameter.default
        for name, parameter in signature.parameters.items()
        if name != "self" and parameter.kind not in skipped
    }


def make_span_aggregator(spec: str, **params: Any) -> tuple[str, Any]:
    """``(name, estimator)`` for a spec ``NAME`` or ``NAME[k=v,...]``; ``params``
    override the bracket's. An unknown name or parameter is a
    :class:`~crowdlearn.data.CrowdDataError` that lists the known ones.

    >>> make_span_aggregator("MV")[0]
    'mv'
    """
    from crowdlearn._registry import _SPEC, _parse_bracket, convert

    match = _SPEC.match(spec)
    if not match:
        raise CrowdDataError(
            f"cannot read the span strategy {spec!r}; expected NAME or NAME[k=v,...]"
        )
    name = match.group(1).lower()
    registry = strategies()
    if name not in registry:
        raise CrowdDataError(
            f"unknown span strategy {match.group(1)!r}; choose one of "
            f"{', '.join(sorted(registry))}"
        )
    estimator = registry[name]
    defaults = constructor_defaults(estimator)
    arguments = {}
    for key, value in {**_parse_bracket(match.group(2), "span strategy"), **params}.items():
        if key not in defaults:
            known = ", ".join(sorted(defaults)) or "none"
            raise CrowdDataError(
                f"span strategy {name!r} has no parameter {key!r}; its parameters: {known}"
            )
        default = defaults[key]
        arguments[key] = convert(
            value, None if default is inspect.Parameter.empty else default, key
        )
    return name, estimator(**arguments)


def aggregator_params(model: Any) -> dict[str, Any]:
    """An aggregator's parameters: ``get_params()`` where it has it, else its
    constructor's parameters read back from the attributes of the same name."""
    if hasattr(model, "get_params"):
        return dict(model.get_params())
    return {
        name: getattr(model, name)
        for name in constructor_defaults(type(model))
        if hasattr(model, name)
    }
