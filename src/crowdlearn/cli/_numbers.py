"""Every numeric option of every command, with its valid range, in one table.

A command declares a numeric option with ``type=number("--dropout")``; the value is
converted and checked here, before the command runs, and a bad one is refused in one
line that names the option (``Invalid value for '--dropout': must be a finite number
in [0, 1), got -0.1``). Options that set an estimator parameter share its bounds with
the Python API (:data:`crowdlearn._bounds.PARAMS`). The test
``tests/cli/test_numbers.py`` fails when a command's numeric option is not in this
table, so a new option cannot skip the check.

This module imports only click and the standard library (``crowdlearn --help``).
"""

from __future__ import annotations

import os
from typing import Any

import click

from crowdlearn._bounds import PARAMS, POSITIVE_INT, SEED, Bounds

#: ``--local-workers``: at most this many worker processes per core of the machine
#: (more only queue for the same cores, and thousands hang while they start).
WORKERS_PER_CORE = 4
LOCAL_WORKERS = Bounds(1, WORKERS_PER_CORE * (os.cpu_count() or 1), integer=True)
SHARE = Bounds(0, 1)
POSITIVE = Bounds(0, low_open=True)

#: Option -> its bounds (the same option name means the same thing in every command).
NUMBERS: dict[str, Bounds] = {
    "--seed": SEED,
    "--seeds": POSITIVE_INT,
    "--local-workers": LOCAL_WORKERS,
    # learn (and identify's --max-epochs): the learners' training parameters
    "--hidden": POSITIVE_INT,
    "--epochs": POSITIVE_INT,
    "--max-epochs": POSITIVE_INT,
    "--batch-size": PARAMS["batch_size"],
    "--lr": PARAMS["lr"],
    "--weight-decay": PARAMS["weight_decay"],
    "--dropout": PARAMS["dropout"],
    "--valid-share": PARAMS["valid_share"],
    "--crowd-folds": PARAMS["crowd_folds"],
    # learn on raw items (texts, images)
    "--max-features": POSITIVE_INT,
    "--svd-components": POSITIVE_INT,
    "--image-size": Bounds(1, 4096, integer=True),
    # report
    "--max-worker-rows": Bounds(2, integer=True),
    "--max-task-rows": Bounds(2, integer=True),
    "--max-plot-points": Bounds(2, integer=True),
    # simulate
    "--n-worker": POSITIVE_INT,
    "--n-task": POSITIVE_INT,
    "--n-classes": Bounds(2, integer=True),
    "--feedback": POSITIVE_INT,
    "--workerload": POSITIVE_INT,
    "--ratio": SHARE,
    "--ratio-diff": POSITIVE,
    "--random": SHARE,
    "--n-per-class": POSITIVE_INT,
    "--mean-labels": POSITIVE,
    "--labels-per-task": POSITIVE,
    "--load-skew": Bounds(0),
    "--imbalance-ratio": Bounds(1),
    "--n-comparisons": POSITIVE_INT,
    "--miss": SHARE,
    "--boundary": SHARE,
    "--type-confusion": SHARE,
    "--false-spans": Bounds(0),
    # next, replay (the campaign loop)
    "--budget": POSITIVE_INT,
    "--target-confidence": Bounds(0, 1, low_open=True),
    "--route": Bounds(0, integer=True),
    "--min-labels": Bounds(0, integer=True),
    "--decision-margin": Bounds(0, 1, high_open=True),
    "--decision-level": Bounds(0, 1, low_open=True, high_open=True),
    "--per-task": POSITIVE_INT,
    # aggregate --state: partial_fit's full E-step passes after an update
    "--refresh": Bounds(0, integer=True),
}


class Number(click.ParamType):
    """A click type that converts to int or float and checks :class:`Bounds`."""

    def __init__(self, option: str, bounds: Bounds) -> None:
        self.option = option
        self.bounds = bounds
        self.name = "integer" if bounds.integer else "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number: Any = value
        else:
            text = str(value).strip()
            try:
                number = int(text) if self.bounds.integer else float(text)
            except ValueError:
                self.fail(f"must be {self.bounds}, got {text!r}", param, ctx)
        problem = self.bounds.problem(number)
        if problem is not None:
            self.fail(problem, param, ctx)
        return number

    def __repr__(self) -> str:
        return f"Number({self.option!r}, {self.bounds})"


def number(option: str) -> Number:
    """The click type of numeric option ``option`` (a key of :data:`NUMBERS`)."""
    return Number(option, NUMBERS[option])
