"""The valid range of every numeric parameter, in one place.

The Python API checks its estimators' numeric parameters against :data:`PARAMS`
(:func:`check_params`, called by ``fit``), and the command line's numeric options
convert and check through the same :class:`Bounds` (``crowdlearn.cli._numbers``), so
a value is refused with the same rule wherever it comes from, before any work. Every
bound refuses NaN and infinities: no parameter of crowdlearn means anything at
``inf`` (a learning rate of ``inf`` trains a network of NaN weights).

This module imports only the standard library (the CLI imports it for ``--help``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The largest seed: numpy's legacy generators and torch accept 0 .. 2**32 - 1.
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Bounds:
    """A range of numbers: ``[low, high]``, either end open or absent, maybe integers."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def __str__(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        if self.low is not None and self.high is not None:
            left = "(" if self.low_open else "["
            right = ")" if self.high_open else "]"
            return f"{kind} in {left}{_fmt(self.low)}, {_fmt(self.high)}{right}"
        if self.low is not None:
            return f"{kind} {'>' if self.low_open else '>='} {_fmt(self.low)}"
        if self.high is not None:
            return f"{kind} {'<' if self.high_open else '<='} {_fmt(self.high)}"
        return kind

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is out of bounds (None when it is fine)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return f"must be {self}, got {value!r} ({type(value).__name__})"
        if self.integer and not isinstance(value, numbers.Integral):
            if not (math.isfinite(value) and float(value).is_integer()):
                return f"must be {self}, got {value!r}"
        if not math.isfinite(value):
            return f"must be {self}, got {value!r}"
        too_low = self.low is not None and (
            value <= self.low if self.low_open else value < self.low
        )
        too_high = self.high is not None and (
            value >= self.high if self.high_open else value > self.high
        )
        if too_low or too_high:
            return f"must be {self}, got {value!r}"
        return None


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(number)


POSITIVE_INT = Bounds(1, integer=True)
SEED = Bounds(0, MAX_SEED, integer=True)

#: The numeric parameters of the estimators (learners' training parameters and the
#: aggregators' iteration controls), by their Python names.
PARAMS: dict[str, Bounds] = {
    # lr=0 freezes the network: the EM steps alone (what the frozen-network tests check)
    "lr": Bounds(0),
    "weight_decay": Bounds(0),
    "dropout": Bounds(0, 1, high_open=True),
    "max_epochs": Bounds(0, integer=True),
    "batch_size": POSITIVE_INT,
    "patience": POSITIVE_INT,
    "valid_share": Bounds(0, 1, low_open=True, high_open=True),
    "crowd_folds": POSITIVE_INT,
    "random_state": SEED,
    # max_iter=0: the initialisation alone (crowd-kit's n_iter=0)
    "max_iter": Bounds(0, integer=True),
    "tol": Bounds(0),
}


def check_params(owner: str, params: Mapping[str, Any]) -> None:
    """Refuse any of ``params`` named in :data:`PARAMS` that is out of its bounds.

    A value of the wrong type is a TypeError, a number out of range a ValueError;
    both name the owner and the parameter. ``None`` passes (it means "the default" or
    "none" for the parameters that accept it, e.g. ``patience`` and ``random_state``);
    ``hidden`` is a sequence of layer sizes, each at least 1.
    """
    for name, value in params.items():
        if value is None:
            continue
        if name == "hidden" and isinstance(value, (list, tuple)):
            for size in value:
                _check_one(owner, "hidden", size, POSITIVE_INT)
            continue
        bounds = PARAMS.get(name)
        if bounds is None:
            continue
        if name == "random_state" and not isinstance(value, numbers.Real):
            continue  # a numpy Generator or RandomState: its own seed
        _check_one(owner, name, value, bounds)


def check_own_bounds(owner: str, params: Mapping[str, Any], bounds: Mapping[str, Bounds]) -> None:
    """Refuse any of ``params`` out of an estimator's own table of ``bounds`` (the
    parameters :data:`PARAMS` does not know, e.g. a trimmed mean's ``proportion``): a
    TypeError for a value of the wrong type, a ValueError for a number out of range,
    both naming the owner and the parameter."""
    for name, limits in bounds.items():
        if name in params:
            _check_one(owner, name, params[name], limits)


def _check_one(owner: str, name: str, value: Any, bounds: Bounds) -> None:
    problem = bounds.problem(value)
    if problem is None:
        return
    wrong_type = isinstance(value, bool) or not isinstance(value, numbers.Real)
    error = TypeError if wrong_type else ValueError
    raise error(f"{owner}: {name} {problem}")
